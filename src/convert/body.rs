//! Resource bodies straight from Starlark values to the encoding of a
//! `google.protobuf.Struct`: the bytes converting the body to a `Struct`
//! ([`super::value_to_struct`] with [`ToPb::RESOURCE_BODY`]), setting
//! labels and annotations on it, and encoding it would give, up to the
//! order of map entries (which protobuf leaves free). One pass measures
//! every struct and list, one writes; no map is built on the way, where
//! the `Struct` path built a hash map per object and measured each nested
//! one again for every level above it.
//!
//! What `Resource()` sets is applied as the `Struct` path applies it:
//! `metadata` and `metadata.labels` become objects when they are missing
//! or are not objects (`metadata.annotations` too when an annotation is
//! set), and a set entry replaces the body's entry of the same key. A
//! replaced value is still converted first, so it fails as it would have.

use bytes::{BufMut, Bytes};
use prost::encoding::encoded_len_varint;
use starlark::values::dict::DictRef;
use starlark::values::list::ListRef;
use starlark::values::{Value, ValueLike};

use super::{ConvertError, ToPb, check_depth, field, index, int_to_number};
use crate::values::attr_dict::Entries;

/// Entries `Resource()` sets on the body, each map's keys distinct.
#[derive(Debug, Default)]
pub struct Edits {
    /// Set on `metadata.labels` (always made an object).
    pub labels: Vec<(String, String)>,
    /// Set on `metadata.annotations` (made an object when not empty).
    pub annotations: Vec<(String, String)>,
}

/// Where in the body a struct is: the edits apply along one path.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    Root,
    Metadata,
    Labels,
    Annotations,
    Other,
}

impl Scope {
    /// The scope of the value under `key` in a struct of this scope.
    fn child(self, key: &str) -> Scope {
        match (self, key) {
            (Scope::Root, "metadata") => Scope::Metadata,
            (Scope::Metadata, "labels") => Scope::Labels,
            (Scope::Metadata, "annotations") => Scope::Annotations,
            _ => Scope::Other,
        }
    }
}

const OPTS: ToPb = ToPb::RESOURCE_BODY;

/// The encoding of `body` with `edits` applied. `body` is dict-like (the
/// caller checked).
pub fn encode_resource_body(body: Value, edits: &Edits) -> Result<Bytes, ConvertError> {
    let mut encoder = Encoder {
        edits,
        sizes: Vec::new(),
    };
    let length = encoder.measure_struct(Some(body), 0, Scope::Root, true)?;
    let mut out = Vec::with_capacity(length);
    let mut next = 0;
    encoder.write_struct(Some(body), Scope::Root, &mut out, &mut next);
    debug_assert_eq!(out.len(), length, "measured and written lengths agree");
    Ok(Bytes::from(out))
}

/// Calls `f` with each entry of a dict-like value, in order, after
/// checking every key is a string (as [`super::dict_entries`] does);
/// `None` when `v` is not dict-like.
fn entries<'v>(
    v: Value<'v>,
    mut f: impl FnMut(&str, Value<'v>) -> Result<(), ConvertError>,
) -> Option<Result<(), ConvertError>> {
    let v = crate::values::mutable_struct::composed_dict(v);
    if let Some(entries) = Entries::of(v) {
        return Some(entries.with(|m| m.iter().try_for_each(|(k, v)| f(k, *v))));
    }
    let dict = DictRef::from_value(v)?;
    if let Some((k, _)) = dict.iter().find(|(k, _)| k.unpack_str().is_none()) {
        return Some(Err(ConvertError::new(format!(
            "dict key {} ({}) is not a string",
            k.to_repr(),
            k.get_type()
        ))));
    }
    Some(
        dict.iter()
            .try_for_each(|(k, v)| f(k.unpack_str().expect("keys were checked to be strings"), v)),
    )
}

/// Whether `v` is a dict, an attribute-dict, a schema dict or a mutable
/// struct.
pub fn is_dict_like(v: Value) -> bool {
    let v = crate::values::mutable_struct::composed_dict(v);
    Entries::of(v).is_some() || DictRef::from_value(v).is_some()
}

/// The entry `key` of a dict-like value, unless it is `None` (which a
/// converted body drops); `None` when `v` is not dict-like.
pub fn dict_get<'v>(v: Value<'v>, key: &str) -> Option<Value<'v>> {
    let v = crate::values::mutable_struct::composed_dict(v);
    let found = match Entries::of(v) {
        Some(entries) => entries.with(|m| m.get(key).copied()),
        None => DictRef::from_value(v)?.get_str(key),
    };
    found.filter(|v| !v.is_none())
}

/// Bytes of a length-delimited field whose content takes `len`.
fn field_len(len: usize) -> usize {
    1 + encoded_len_varint(len as u64) + len
}

/// The content length of a map entry (prost leaves out an empty key).
fn entry_len(key: &str, value_len: usize) -> usize {
    let key = if key.is_empty() {
        0
    } else {
        field_len(key.len())
    };
    key + field_len(value_len)
}

struct Encoder<'e> {
    edits: &'e Edits,
    /// The content length of every struct and list, in the order they are
    /// written.
    sizes: Vec<usize>,
}

/// A value's kind, as the `Struct` conversion tells them apart.
enum Leaf<'v> {
    Null,
    Bool(bool),
    Str(&'v str),
    Number(f64),
    Struct,
    List(&'v ListRef<'v>),
}

/// A value's kind; the kinds bodies are mostly made of are tried first
/// (each value is looked at three times: measured, then written).
fn leaf(v: Value<'_>) -> Result<Leaf<'_>, ConvertError> {
    Ok(if let Some(s) = v.unpack_str() {
        Leaf::Str(s)
    } else if DictRef::from_value(v).is_some() {
        Leaf::Struct
    } else if v.is_none() {
        Leaf::Null
    } else if let Some(b) = v.unpack_bool() {
        Leaf::Bool(b)
    } else if let Some(i) = v.unpack_i32() {
        Leaf::Number(f64::from(i))
    } else if v.get_type() == "int" {
        Leaf::Number(int_to_number(v)?)
    } else if let Some(f) = v.downcast_ref::<starlark::values::float::StarlarkFloat>() {
        Leaf::Number(f.0)
    } else if is_dict_like(v) {
        Leaf::Struct
    } else if let Some(list) = ListRef::from_value(v) {
        Leaf::List(list)
    } else {
        return Err(ConvertError::new(format!(
            "unsupported starlark type for protobuf conversion: {}",
            v.get_type()
        )));
    })
}

impl Encoder<'_> {
    /// The entries this scope sets.
    fn set(&self, scope: Scope) -> &[(String, String)] {
        match scope {
            Scope::Labels => &self.edits.labels,
            Scope::Annotations => &self.edits.annotations,
            _ => &[],
        }
    }

    /// Whether the struct at `scope` must be an object in the result.
    fn made_object(&self, scope: Scope) -> bool {
        match scope {
            Scope::Metadata | Scope::Labels => true,
            Scope::Annotations => !self.edits.annotations.is_empty(),
            Scope::Root | Scope::Other => false,
        }
    }

    /// The children this scope must have as objects, made when missing.
    fn made_children(&self, scope: Scope) -> &'static [(&'static str, Scope)] {
        match scope {
            Scope::Root => &[("metadata", Scope::Metadata)],
            Scope::Metadata if self.edits.annotations.is_empty() => &[("labels", Scope::Labels)],
            Scope::Metadata => &[
                ("labels", Scope::Labels),
                ("annotations", Scope::Annotations),
            ],
            _ => &[],
        }
    }

    /// Whether an entry of the body at `scope` is kept in the result: a
    /// `None` is dropped, a set key replaced, and a value that must become
    /// an object but is not one replaced by one.
    fn kept(&self, scope: Scope, key: &str, value: Value) -> bool {
        if value.is_none() || self.set(scope).iter().any(|(k, _)| k == key) {
            return false;
        }
        let child = scope.child(key);
        !self.made_object(child) || is_dict_like(value)
    }

    /// Measures a struct (`None`: one made for the edits), recording the
    /// sizes when `record`; its content length.
    fn measure_struct(
        &mut self,
        v: Option<Value>,
        depth: usize,
        scope: Scope,
        record: bool,
    ) -> Result<usize, ConvertError> {
        check_depth(depth, OPTS)?;
        let slot = self.sizes.len();
        if record {
            self.sizes.push(0);
        }
        let mut length = 0;
        let mut seen = [false; 2];
        if let Some(v) = v {
            let made = self.made_children(scope);
            entries(v, |key, value| {
                if value.is_none() {
                    return Ok(());
                }
                let kept = self.kept(scope, key, value);
                let child = scope.child(key);
                let value_len = self
                    .measure_value(value, depth + 1, child, record && kept)
                    .map_err(|e| e.at(field(key)))?;
                if kept {
                    length += field_len(entry_len(key, value_len));
                    if let Some(i) = made.iter().position(|(k, _)| *k == key) {
                        seen[i] = true;
                    }
                }
                Ok(())
            })
            .unwrap_or_else(|| Err(ConvertError::new("expected a dict")))?;
        }
        for (i, (key, child)) in self.made_children(scope).iter().enumerate() {
            if !seen[i] {
                let content = self.measure_struct(None, depth + 1, *child, record)?;
                length += field_len(entry_len(key, field_len(content)));
            }
        }
        for (key, value) in self.set(scope) {
            length += field_len(entry_len(key, field_len(value.len())));
        }
        if record {
            self.sizes[slot] = length;
        }
        Ok(length)
    }

    /// Measures a `Value` message; its content length.
    fn measure_value(
        &mut self,
        v: Value,
        depth: usize,
        scope: Scope,
        record: bool,
    ) -> Result<usize, ConvertError> {
        Ok(match leaf(v)? {
            Leaf::Null | Leaf::Bool(_) => 2,
            Leaf::Number(_) => 9,
            Leaf::Str(s) => field_len(s.len()),
            Leaf::Struct => field_len(self.measure_struct(Some(v), depth, scope, record)?),
            Leaf::List(list) => {
                check_depth(depth, OPTS)?;
                let slot = self.sizes.len();
                if record {
                    self.sizes.push(0);
                }
                let mut length = 0;
                for (i, item) in list.iter().enumerate() {
                    let item_len = self
                        .measure_value(item, depth + 1, Scope::Other, record)
                        .map_err(|e| e.at(index(i)))?;
                    length += field_len(item_len);
                }
                if record {
                    self.sizes[slot] = length;
                }
                field_len(length)
            }
        })
    }

    fn write_struct(&self, v: Option<Value>, scope: Scope, out: &mut Vec<u8>, next: &mut usize) {
        *next += 1;
        let mut seen = [false; 2];
        if let Some(v) = v {
            let made = self.made_children(scope);
            let _ = entries(v, |key, value| {
                if !self.kept(scope, key, value) {
                    return Ok(());
                }
                if let Some(i) = made.iter().position(|(k, _)| *k == key) {
                    seen[i] = true;
                }
                let child = scope.child(key);
                let value_len = self.value_len(value, *next);
                entry_head(out, key, value_len);
                self.write_value(value, child, out, next);
                Ok(())
            });
        }
        for (i, (key, child)) in self.made_children(scope).iter().enumerate() {
            if !seen[i] {
                let content = self.sizes[*next];
                let value_len = field_len(content);
                entry_head(out, key, value_len);
                out.put_u8(5 << 3 | 2);
                length(out, content);
                self.write_struct(None, *child, out, next);
            }
        }
        for (key, value) in self.set(scope) {
            let value_len = field_len(value.len());
            entry_head(out, key, value_len);
            out.put_u8(3 << 3 | 2);
            length(out, value.len());
            out.put_slice(value.as_bytes());
        }
    }

    /// The content length of a `Value` message, from the sizes measured.
    fn value_len(&self, v: Value, next: usize) -> usize {
        match leaf(v).expect("the value was measured") {
            Leaf::Null | Leaf::Bool(_) => 2,
            Leaf::Number(_) => 9,
            Leaf::Str(s) => field_len(s.len()),
            Leaf::Struct | Leaf::List(_) => field_len(self.sizes[next]),
        }
    }

    fn write_value(&self, v: Value, scope: Scope, out: &mut Vec<u8>, next: &mut usize) {
        match leaf(v).expect("the value was measured") {
            Leaf::Null => {
                out.put_u8(1 << 3);
                out.put_u8(0);
            }
            Leaf::Bool(b) => {
                out.put_u8(4 << 3);
                out.put_u8(u8::from(b));
            }
            Leaf::Number(n) => {
                out.put_u8(2 << 3 | 1);
                out.put_f64_le(n);
            }
            Leaf::Str(s) => {
                out.put_u8(3 << 3 | 2);
                length(out, s.len());
                out.put_slice(s.as_bytes());
            }
            Leaf::Struct => {
                out.put_u8(5 << 3 | 2);
                length(out, self.sizes[*next]);
                self.write_struct(Some(v), scope, out, next);
            }
            Leaf::List(list) => {
                out.put_u8(6 << 3 | 2);
                length(out, self.sizes[*next]);
                *next += 1;
                for item in list.iter() {
                    let item_len = self.value_len(item, *next);
                    out.put_u8(1 << 3 | 2);
                    length(out, item_len);
                    self.write_value(item, Scope::Other, out, next);
                }
            }
        }
    }
}

fn length(out: &mut Vec<u8>, len: usize) {
    prost::encoding::encode_varint(len as u64, out);
}

/// A `Struct.fields` entry up to its value's content: the entry's tag and
/// length, its key (left out when empty, as prost does), the value's tag
/// and its length `value_len`.
fn entry_head(out: &mut Vec<u8>, key: &str, value_len: usize) {
    out.put_u8(1 << 3 | 2);
    length(out, entry_len(key, value_len));
    if !key.is_empty() {
        out.put_u8(1 << 3 | 2);
        length(out, key.len());
        out.put_slice(key.as_bytes());
    }
    out.put_u8(2 << 3 | 2);
    length(out, value_len);
}

#[cfg(test)]
mod tests {
    use pbjson_types::value::Kind;
    use pbjson_types::{Struct, Value as PbValue};
    use proptest::prelude::*;
    use prost::Message;
    use starlark::environment::Module;
    use starlark::values::dict::AllocDict;
    use starlark::values::list::AllocList;
    use starlark::values::{Heap, Value};

    use super::{Edits, encode_resource_body};
    use crate::convert::{ToPb, value_to_struct};

    /// A Starlark value to build.
    #[derive(Debug, Clone)]
    enum Tree {
        None,
        Bool(bool),
        Int(i64),
        Float(f64),
        Str(String),
        Tuple,
        List(Vec<Tree>),
        Dict(Vec<(Key, Tree)>),
    }

    #[derive(Debug, Clone)]
    enum Key {
        Str(String),
        Int(i64),
    }

    fn key() -> impl Strategy<Value = Key> {
        prop_oneof![
            6 => prop_oneof![
                Just("metadata".to_owned()),
                Just("labels".to_owned()),
                Just("annotations".to_owned()),
                Just("app".to_owned()),
                Just(String::new()),
                "[a-z]{1,6}",
            ]
            .prop_map(Key::Str),
            1 => any::<i64>().prop_map(Key::Int),
        ]
    }

    fn tree() -> impl Strategy<Value = Tree> {
        let leaf = prop_oneof![
            Just(Tree::None),
            any::<bool>().prop_map(Tree::Bool),
            prop_oneof![any::<i64>(), -1000i64..1000].prop_map(Tree::Int),
            any::<f64>()
                .prop_filter("NaN is not equal to itself", |f| !f.is_nan())
                .prop_map(Tree::Float),
            "[a-z ]{0,8}".prop_map(Tree::Str),
            Just(Tree::Tuple),
        ];
        leaf.prop_recursive(5, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Tree::List),
                prop::collection::vec((key(), inner), 0..6).prop_map(Tree::Dict),
            ]
        })
    }

    fn build<'v>(heap: Heap<'v>, t: &Tree) -> Value<'v> {
        match t {
            Tree::None => Value::new_none(),
            Tree::Bool(b) => Value::new_bool(*b),
            Tree::Int(i) => heap.alloc(*i),
            Tree::Float(f) => heap.alloc(*f),
            Tree::Str(s) => heap.alloc(s.as_str()),
            Tree::Tuple => heap.alloc((1, 2)),
            Tree::List(items) => heap.alloc(AllocList(items.iter().map(|i| build(heap, i)))),
            Tree::Dict(entries) => heap.alloc(AllocDict(entries.iter().map(|(k, v)| {
                let k = match k {
                    Key::Str(s) => heap.alloc(s.as_str()),
                    Key::Int(i) => heap.alloc(*i),
                };
                (k, build(heap, v))
            }))),
        }
    }

    /// The struct under `key`, made an object when missing or not one.
    fn child<'a>(s: &'a mut Struct, key: &str) -> &'a mut Struct {
        let entry = s.fields.entry(key.to_owned()).or_default();
        if !matches!(entry.kind, Some(Kind::StructValue(_))) {
            entry.kind = Some(Kind::StructValue(Struct::default()));
        }
        match &mut entry.kind {
            Some(Kind::StructValue(child)) => child,
            _ => unreachable!("the entry was just made a struct"),
        }
    }

    /// What the body was before: converted to a struct, then edited.
    fn by_struct(body: Value, edits: &Edits) -> Result<Struct, String> {
        let mut s = value_to_struct(body, ToPb::RESOURCE_BODY).map_err(|e| e.to_string())?;
        let metadata = child(&mut s, "metadata");
        if !edits.annotations.is_empty() {
            let annotations = child(metadata, "annotations");
            for (k, v) in &edits.annotations {
                annotations.fields.insert(
                    k.clone(),
                    PbValue {
                        kind: Some(Kind::StringValue(v.clone())),
                    },
                );
            }
        }
        let labels = child(metadata, "labels");
        for (k, v) in &edits.labels {
            labels.fields.insert(
                k.clone(),
                PbValue {
                    kind: Some(Kind::StringValue(v.clone())),
                },
            );
        }
        Ok(s)
    }

    fn edits() -> impl Strategy<Value = Edits> {
        let entries = prop::collection::btree_map(
            prop_oneof![Just("app".to_owned()), "[a-z]{1,4}"],
            "[a-z]{0,4}",
            0..4,
        );
        (entries.clone(), entries, "[a-z]{1,4}").prop_map(|(labels, annotations, name)| {
            let mut labels: Vec<(String, String)> = labels.into_iter().collect();
            labels.push(("resource-name".to_owned(), name));
            Edits {
                labels,
                annotations: annotations.into_iter().collect(),
            }
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn bodies_encode_as_the_edited_struct_would(
            entries in prop::collection::vec((key(), tree()), 0..8),
            edits in edits(),
        ) {
            Module::with_temp_heap(|module| {
                let body = build(module.heap(), &Tree::Dict(entries));
                let expected = by_struct(body, &edits);
                let encoded = encode_resource_body(body, &edits).map_err(|e| e.to_string());
                match (expected, encoded) {
                    (Ok(s), Ok(bytes)) => {
                        prop_assert_eq!(Struct::decode(bytes.clone()).unwrap(), s.clone());
                        prop_assert_eq!(bytes.len(), s.encoded_len());
                    }
                    (Err(a), Err(b)) => prop_assert_eq!(a, b),
                    (a, b) => prop_assert!(false, "struct path {a:?}, encoding {b:?}"),
                }
                Ok(())
            })?;
        }
    }

    #[test]
    fn bodies_nested_past_the_limit_fail_as_the_struct_path_does() {
        Module::with_temp_heap(|module| {
            let heap = module.heap();
            let mut v = heap.alloc(AllocDict([("leaf", heap.alloc(1))]));
            for _ in 0..40 {
                v = heap.alloc(AllocDict([("x", v)]));
            }
            let edits = Edits::default();
            assert_eq!(
                encode_resource_body(v, &edits).unwrap_err().to_string(),
                by_struct(v, &edits).unwrap_err()
            );
        });
    }
}
