//! Every member's result for one pattern, text and template at once, in
//! the shape `tools/goregex` records Go's: what the regex fuzz target
//! compares with Go's regexp.

use serde_json::{Value, json};

use super::syntax::translate;
use super::{SIZE_LIMIT, compiled, groups, match_spans, replace_spans, split_parts};

/// What `regex.match`, `find`, `find_all`, `find_groups`, `replace`,
/// `replace_all` and `split` give for `pattern`, `s` and `template`, as
/// JSON under those names; or the error `regex.match` reports.
pub(crate) fn record(pattern: &str, s: &str, template: &str) -> Result<Value, String> {
    let compiled = compiled("regex.match", pattern).map_err(|e| e.to_string())?;
    let spans = match_spans(&compiled.regex, s);
    let first = compiled.regex.find(s).map(|m| (m.start(), m.end()));
    Ok(json!({
        "match": compiled.regex.is_match(s),
        "find": first.map(|(a, b)| &s[a..b]),
        "find_all": spans.iter().map(|&(a, b)| &s[a..b]).collect::<Vec<_>>(),
        "find_groups": groups(&compiled, s),
        "replace": replace_spans(&compiled, s, template, first.as_slice()),
        "replace_all": replace_spans(&compiled, s, template, &spans),
        "split": split_parts(&compiled.regex, pattern, s),
    }))
}

/// The crate's error for the translation of `pattern`, when the translator
/// accepts the pattern and the crate refuses what it wrote for a reason
/// other than size or nesting: a translator fault.
pub(crate) fn refused_translation(pattern: &str) -> Option<String> {
    let translation = translate(pattern).ok()?;
    match ::regex::RegexBuilder::new(&translation.rust)
        .size_limit(SIZE_LIMIT)
        .build()
    {
        Err(::regex::Error::CompiledTooBig(_)) | Ok(_) => None,
        Err(e) if e.to_string().contains("maximum number of nested") => None,
        Err(e) => Some(format!("{e}")),
    }
}
