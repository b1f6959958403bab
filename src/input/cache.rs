//! Inputs already checked, by their encoded bytes. A Composition sends the
//! same `StarlarkInput` on every reconcile; decoding it (protobuf `Struct`,
//! then JSON, then the input type) and checking it took about a twentieth
//! of the server's CPU per call at `x = 1`, and more the longer the script
//! and its inline modules. Only inputs whose check reads nothing but the
//! input and the process's settings (which do not change, see
//! [`super::Settings::env`]) are kept: an inline script. A mounted script
//! is read from disk on every request, since its ConfigMap may change under
//! the same input.

use std::hash::BuildHasher;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use pbjson_types::Struct;
use prost::Message;

use super::Checked;
use crate::cache::{Bounded, Weight};

/// Distinct inputs kept.
const MAX_INPUTS: usize = 256;

/// The bytes the kept inputs may take in all, roughly.
const MAX_INPUT_BYTES: usize = 32 << 20;

/// The checked inputs of recent requests.
pub struct CheckedCache {
    entries: Mutex<Bounded<Arc<Kept>>>,
    hasher: foldhash::fast::RandomState,
}

/// An input's bytes and what checking them gave.
pub struct Kept {
    encoded: Bytes,
    checked: Checked,
}

impl Kept {
    /// The checked input.
    pub fn checked(&self) -> &Checked {
        &self.checked
    }
}

/// A request's input, as far as the cache could take it.
pub enum Input {
    /// Checked before: the same bytes gave this.
    Known(Arc<Kept>),
    /// Decoded now; kept under `key` with `encoded` if it can be.
    Decoded {
        /// The input, `None` when the request has none.
        input: Option<Struct>,
        /// The cache key of its bytes.
        key: String,
        /// Its bytes.
        encoded: Bytes,
    },
}

impl Weight for Arc<Kept> {
    fn weight(&self) -> usize {
        let checked = &self.checked;
        let modules: usize = checked.modules.iter().map(|(k, v)| k.len() + v.len()).sum();
        self.encoded.len()
            + checked.script.source.len()
            + checked.script.filename.len()
            + modules
            + 256
    }
}

impl Default for CheckedCache {
    fn default() -> Self {
        CheckedCache {
            entries: Mutex::new(Bounded::new(MAX_INPUTS, MAX_INPUT_BYTES)),
            hasher: foldhash::fast::RandomState::default(),
        }
    }
}

impl CheckedCache {
    /// The input whose encoding came in `pieces` (protobuf merges a field
    /// given more than once, as concatenating its encodings does): the
    /// checked form when the same bytes were seen, else decoded.
    pub fn read(&self, pieces: &[Bytes]) -> Result<Input, prost::DecodeError> {
        let encoded = match pieces {
            [] => Bytes::new(),
            [one] => one.clone(),
            many => Bytes::from(many.concat()),
        };
        // A fast hash finds the entry, the bytes confirm it: a collision
        // is a miss, never another script.
        let key = format!(
            "{:016x}:{}",
            self.hasher.hash_one(encoded.as_ref()),
            encoded.len()
        );
        if let Some(kept) = self.lock().get(&key)
            && kept.encoded == encoded
        {
            return Ok(Input::Known(kept));
        }
        let input = if pieces.is_empty() {
            None
        } else {
            Some(Struct::decode(encoded.clone()).map_err(|mut e| {
                e.push("RequestHead", "input");
                e
            })?)
        };
        Ok(Input::Decoded {
            input,
            key,
            encoded,
        })
    }

    /// Keeps `checked`, the check of `encoded`, under `key` when the check
    /// read nothing but the input (an inline script).
    pub fn keep(&self, key: String, encoded: &Bytes, checked: &Checked) {
        if checked.script_dir.is_none() {
            let kept = Kept {
                // A copy: `encoded` is a view of the whole request.
                encoded: Bytes::copy_from_slice(encoded),
                checked: checked.clone(),
            };
            self.lock().insert(key, Arc::new(kept));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Bounded<Arc<Kept>>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{Plan, Settings, check, decode};
    use serde_json::json;

    fn encoded_json(v: serde_json::Value) -> Bytes {
        Bytes::from(crate::input::tests::pb(v).encode_to_vec())
    }

    /// What reading `bytes` gives when the cache has not seen them:
    /// the input, its key and its bytes.
    fn unseen(cache: &CheckedCache, bytes: &Bytes) -> (Option<Struct>, String, Bytes) {
        match cache.read(std::slice::from_ref(bytes)).unwrap() {
            Input::Decoded {
                input,
                key,
                encoded,
            } => (input, key, encoded),
            Input::Known(_) => panic!("not seen yet"),
        }
    }

    fn checked(input: Option<&Struct>, dir: &std::path::Path) -> Checked {
        let settings = Settings {
            scripts_dir: dir.to_path_buf(),
            env: Box::new(|_| None),
        };
        match check(decode(input).unwrap(), &settings).unwrap() {
            Plan::Run(checked) => *checked,
            Plan::Passthrough { .. } => panic!("a script to run"),
        }
    }

    #[test]
    fn an_inline_input_is_known_by_its_bytes_once_kept() {
        let cache = CheckedCache::default();
        let bytes = encoded_json(json!({"spec": {"source": "x = 1"}}));
        let (input, key, encoded) = unseen(&cache, &bytes);
        let first = checked(input.as_ref(), std::path::Path::new("/scripts"));
        cache.keep(key.clone(), &encoded, &first);
        let Input::Known(known) = cache.read(&[bytes]).unwrap() else {
            panic!("kept")
        };
        assert_eq!(known.checked().script, first.script);
        // Other bytes under the same key (a hash collision) are a miss.
        let other = encoded_json(json!({"spec": {"source": "x = 3"}}));
        cache.keep(key.clone(), &other, &first);
        // The kept bytes differ.
        assert!(unseen(&cache, &encoded).0.is_some());
        let other = encoded_json(json!({"spec": {"source": "x = 2"}}));
        assert!(matches!(
            cache.read(&[other]).unwrap(),
            Input::Decoded { .. }
        ));
    }

    #[test]
    fn a_mounted_script_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("cm")).unwrap();
        std::fs::write(dir.path().join("cm/main.star"), "x = 1\n").unwrap();
        let cache = CheckedCache::default();
        let bytes = encoded_json(json!({"spec": {"scriptConfigRef": {"name": "cm"}}}));
        let (input, key, encoded) = unseen(&cache, &bytes);
        cache.keep(key, &encoded, &checked(input.as_ref(), dir.path()));
        assert!(matches!(
            cache.read(&[bytes]).unwrap(),
            Input::Decoded { .. }
        ));
    }

    #[test]
    fn pieces_merge_and_bad_bytes_are_a_decode_error() {
        let cache = CheckedCache::default();
        let pieces = [
            encoded_json(json!({"apiVersion": "v"})),
            encoded_json(json!({"spec": {"source": "x = 1"}})),
        ];
        let Input::Decoded { input, .. } = cache.read(&pieces).unwrap() else {
            panic!("not seen yet")
        };
        let fields = input.unwrap().fields;
        assert!(fields.contains_key("apiVersion") && fields.contains_key("spec"));
        let Input::Decoded { input, .. } = cache.read(&[]).unwrap() else {
            panic!("nothing to know")
        };
        assert_eq!(input, None);
        let error = cache
            .read(&[Bytes::from_static(&[0x0a, 0x05, 0x01])])
            .err()
            .expect("a cut input");
        assert!(error.to_string().contains("RequestHead.input"), "{error}");
    }
}
