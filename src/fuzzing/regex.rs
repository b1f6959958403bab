//! The `regex` namespace: the RE2-to-`regex` translator and Go's matching
//! rules, against Go's regexp.
//!
//! The input is a pattern, a text and a replacement template, split at
//! `0xFF` bytes (never UTF-8). A pattern the translator accepts compiles
//! (the crate never refuses its output as syntax); with Go
//! (`tools/goregex`), the error, or every member's result, is Go's.

use serde_json::json;

use super::oracle;
use crate::builtins::regex::{record, refused_translation};

/// The target's body.
pub fn regex(data: &[u8]) {
    let mut parts = data.splitn(3, |&b| b == 0xff).map(String::from_utf8_lossy);
    let pattern = parts.next().unwrap_or_default();
    let text = parts.next().unwrap_or_default();
    let template = parts.next().unwrap_or_default();
    if let Some(e) = refused_translation(&pattern) {
        panic!("the translation of {pattern:?} does not compile: {e}");
    }
    let ours = record(&pattern, &text, &template);
    let request = json!({"pattern": pattern, "s": text, "replacement": template});
    let Some(go) = oracle::ask("goregex", &request) else {
        return;
    };
    match (&ours, go["error"].as_str()) {
        (Err(ours), Some(theirs)) => assert_eq!(
            *ours,
            format!("regex.match: {theirs}"),
            "the error of {pattern:?} differs from Go's"
        ),
        (Ok(results), None) => {
            for (member, result) in results.as_object().expect("an object") {
                assert_eq!(
                    *result, go[member],
                    "regex.{member} differs from Go's for {request}"
                );
            }
        }
        _ => panic!("{request}: ours {ours:?}, Go's {go}"),
    }
}
