//! `yaml.decode` (libyaml's scanner and parser, YAML 1.1 resolution, the
//! JSON it builds) and `yaml.encode`'s emitter, against sigs.k8s.io/yaml.
//!
//! For each UTF-8 input: the decoded JSON parses; the value written as
//! YAML reads back as the same value (unless a key is `<<`, which YAML 1.1
//! reads back as a merge, or a string holds NEL, which it reads back as a
//! line break, in Go too); and, with Go (`tools/goyaml`), the
//! decoded JSON and the written YAML are Go's, byte for byte. Errors are
//! compared by whether there is one, not by text, and a shorthand tag
//! followed by `,`, `[` or `]`, a `?` in a flow collection, an empty flow
//! collection starting a line that a `:` follows on, a second byte order
//! mark at the start, a control
//! character past the first document, or the escape `\'`, is skipped: all
//! are departures (docs/departures.md, "Rare YAML inputs"). Keys that
//! become the same JSON key (`0` and `0e30`) leave Go's answer to its
//! map's iteration order: one of several must match. The writer is compared only on
//! values whose integers fit 64 bits signed (past that it reads numbers as
//! floats, as Kubernetes' JSON decoding does, where `JSONToYAML` keeps the
//! digits) and whose keys go-yaml's natural order ranks consistently
//! (where it does not, as `a05` < `a0b` < `a1` < `a05`, Go's order depends
//! on its map's random iteration order: docs/departures.md).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::oracle;
use crate::builtins::yaml::{
    documents_as_json, json_as_yaml, natural_less, sort_by_less, yaml_to_json,
};

/// The target's body.
pub fn yaml(data: &[u8]) {
    let Some(text) = super::text(data) else {
        return;
    };
    // The stream splitter and every document, for crashes only.
    let _ = documents_as_json(text);
    // A script's read stops at its deadline; flow collections nested
    // thousands deep take time with the square of their depth.
    let deadline = Instant::now() + Duration::from_secs(5);
    let decoded = yaml_to_json(text, Some(deadline));
    if decoded
        .as_ref()
        .is_err_and(|e| e.contains("time limit ran out"))
    {
        return;
    }
    let go = oracle::ask("goyaml", &json!({ "decode": text }));
    if let Some(go) = &go {
        compare_decoded(text, &decoded, go);
    }
    let Ok(json) = decoded else {
        return;
    };
    let value: Value = serde_json::from_str(&json)
        .unwrap_or_else(|e| panic!("yaml.decode of {text:?} gave {json:?}, not JSON: {e}"));
    let emitted = json_as_yaml(&value);
    if !has(&value, &|v| v.as_u64().is_some() && v.as_i64().is_none())
        && !has(&value, &|v| {
            v.as_object().is_some_and(|m| !ranked(m.keys()))
        })
        && let Some(go) = oracle::ask("goyaml", &json!({ "encode": json }))
    {
        // yaml.encode drops the final newlines.
        let ours = emitted.clone().map(|y| y.trim_end_matches('\n').to_owned());
        let theirs = result(&go, "yaml");
        assert_eq!(
            ours, theirs,
            "yaml.encode of {json} differs from Go's (decoded from {text:?})"
        );
    }
    let Ok(emitted) = emitted else {
        return;
    };
    // `<<` reads back as a merge; NEL (U+0085), which the writer reads back
    // through YAML 1.1 as Go does, as a line break folded to a space.
    if has(&value, &|v| {
        v.as_object()
            .is_some_and(|m| m.contains_key("<<") || m.keys().any(|k| k.contains('\u{85}')))
            || v.as_str().is_some_and(|s| s.contains('\u{85}'))
    }) {
        return;
    }
    let back = yaml_to_json(&emitted, None)
        .unwrap_or_else(|e| panic!("{emitted:?}, written for {json}, does not read back: {e}"));
    let back: Value = serde_json::from_str(&back).expect("yaml.decode gives JSON");
    assert!(
        same(&value, &back),
        "{json} written as {emitted:?} reads back as {back}"
    );
}

/// Compares our decoding of `text` with Go's vector.
fn compare_decoded(text: &str, ours: &Result<String, String>, go: &Value) {
    let theirs = result(go, "json");
    match (ours, &theirs) {
        (Ok(ours), Ok(theirs)) if is_gos(ours, theirs) => {}
        (Err(_), Err(_)) => {}
        _ if tag_takes_a_flow_indicator(text)
            || explicit_key_in_a_flow(text)
            || empty_flow_before_a_colon(text) => {}
        // go-yaml checks characters as it reads them and stops reading
        // after the first document; the whole input is checked here.
        (Err(e), Ok(_)) if e.contains("control characters are not allowed") => {}
        // Past a second byte order mark at the start, go-yaml's reader
        // loses three bytes further on; libyaml skips it as a character of
        // the first line, which then sits a column in.
        _ if text.starts_with("\u{feff}\u{feff}") => {}
        // go-yaml knows the escape `\'`, libyaml does not.
        (Err(e), Ok(_)) if e.contains("unknown escape character") && text.contains("\\'") => {}
        // Keys that differ in YAML but not as JSON strings (`0` and
        // `0e30`): which value Go keeps follows its map's random iteration
        // order, so one of its answers to the same text must be ours.
        (Ok(ours), Ok(_)) if go_gives_once(text, ours) => {}
        _ => panic!("yaml.decode of {text:?} gives {ours:?}, Go's gives {theirs:?}"),
    }
}

/// Whether Go decodes `text` as `ours` in one of 64 tries.
fn go_gives_once(text: &str, ours: &str) -> bool {
    (0..64).any(|_| {
        oracle::ask("goyaml", &json!({ "decode": text }))
            .is_some_and(|go| result(&go, "json").is_ok_and(|theirs| is_gos(ours, &theirs)))
    })
}

/// A vector's result: its `key` (the JSON or YAML text) or its error.
fn result(vector: &Value, key: &str) -> Result<String, String> {
    match (vector[key].as_str(), vector["error"].as_str()) {
        (Some(text), _) => Ok(text.to_owned()),
        (None, Some(error)) => Err(error.to_owned()),
        _ => panic!("a Go vector without a result: {vector}"),
    }
}

/// Whether our JSON text is Go's, but for the escapes Go writes.
fn is_gos(ours: &str, theirs: &str) -> bool {
    [true, false]
        .iter()
        .any(|&replaced| go_escaped(ours, replaced) == theirs)
}

/// JSON text with the escapes Go's encoding/json writes (`<`, `>`, `&`);
/// the values are the same either way. Go writes U+FFFD as `\ufffd` where
/// it stands for bytes that are not UTF-8 (which decode to U+FFFD here)
/// and as itself where the text holds it: `replaced` says which to expect.
fn go_escaped(json: &str, replaced: bool) -> String {
    let escaped = json
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026");
    if replaced {
        escaped.replace('\u{fffd}', "\\ufffd")
    } else {
        escaped
    }
}

/// Whether a `!` starts a run of non-blank characters holding `,`, `[` or
/// `]`: a shorthand tag go-yaml reads them into and libyaml does not.
fn tag_takes_a_flow_indicator(text: &str) -> bool {
    text.match_indices('!').any(|(at, _)| {
        text[at..]
            .split(char::is_whitespace)
            .next()
            .is_some_and(|run| run.contains([',', '[', ']']))
    })
}

/// Whether go-yaml's natural order ranks `keys` one way only: no key is
/// less than one it is greater than, directly or through a third.
fn ranked<'k>(keys: impl Iterator<Item = &'k String>) -> bool {
    // The emitter's sort; a cycle shows as a key less than one before it.
    let sorted = sort_by_less(keys.collect(), &|a: &&String, b: &&String| {
        natural_less(a, b)
    });
    sorted
        .iter()
        .enumerate()
        .all(|(i, a)| sorted[i + 1..].iter().all(|b| !natural_less(b, a)))
}

/// Whether `v` or a value inside it is one `test` holds for.
fn has(v: &Value, test: &impl Fn(&Value) -> bool) -> bool {
    test(v)
        || match v {
            Value::Array(items) => items.iter().any(|v| has(v, test)),
            Value::Object(map) => map.values().any(|v| has(v, test)),
            _ => false,
        }
}

/// Whether a `?` comes inside `[...]` or `{...}`: an explicit key in a flow
/// collection, after which go-yaml may end the document early.
fn explicit_key_in_a_flow(text: &str) -> bool {
    let mut depth = 0usize;
    text.chars().any(|c| {
        match c {
            '[' | '{' => depth += 1,
            ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        c == '?' && depth > 0
    })
}

/// Whether a line starts with an empty flow collection (`{}`, `[ ]`) and a
/// `:` follows on it: libyaml reads the collection as a mapping key, where
/// go-yaml forgets the key the collection began when it closes and ends the
/// document after it.
fn empty_flow_before_a_colon(text: &str) -> bool {
    text.lines().any(|line| {
        let line = line.trim_start_matches([' ', '\t']);
        [('{', '}'), ('[', ']')].iter().any(|&(open, close)| {
            line.strip_prefix(open)
                .map(|rest| rest.trim_start_matches([' ', '\t']))
                .and_then(|rest| rest.strip_prefix(close))
                .is_some_and(|rest| rest.contains(':'))
        })
    })
}

/// Equal JSON values, numbers compared by value (`-0` reads back as `0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x == y || x.as_f64().is_some_and(|x| y.as_f64() == Some(x))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((kx, vx), (ky, vy))| kx == ky && same(vx, vy))
        }
        _ => a == b,
    }
}
