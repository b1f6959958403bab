//! The `regex` namespace: Go's RE2 syntax and matching rules on top of the
//! `regex` crate.
//!
//! Both engines are leftmost-first and linear-time, but their syntax
//! differs in ways scripts would notice: in Go `\d`, `\w`, `\s` and `\b` are
//! ASCII-only, `[a[]` and `a{` are literals, `\Q...\E` quotes, `(?ii)` and
//! duplicate group names are fine, repeat counts stop at 1000, and errors
//! read "missing closing ]: `[a`". So a pattern is first parsed the way Go's
//! `regexp/syntax` parses it (same acceptance, same error texts) and
//! rewritten into an equivalent pattern for the crate; capture groups are
//! emitted unnamed and their Go names kept beside the compiled regex.
//! Match enumeration, replacement templates and `split` follow Go's
//! `regexp` package.

use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use crate::cache::Bounded;
use ::regex::{CaptureLocations, Regex, RegexBuilder};
use anyhow::anyhow;
use starlark::environment::GlobalsBuilder;
use starlark::starlark_module;
use starlark::values::Value;
use starlark::values::none::NoneOr;

mod record;
mod syntax;

pub(crate) use record::{record, refused_translation};

use syntax::{SyntaxError, Translation, translate};

/// How many compiled patterns are kept, shared by all requests; the least
/// recently used one is evicted first.
const CACHE_CAPACITY: usize = 64;

/// The crate's limit on a compiled program. Go accepts `\pL{1000}`, which
/// takes about 41 MiB here, beyond the crate's 10 MiB default; larger
/// programs fail as Go's "expression too large".
const SIZE_LIMIT: usize = 64 << 20;

/// Only patterns whose program fits this are kept in the cache, each with a
/// lazy DFA cache of the same size: the cache holds at most
/// [`CACHE_CAPACITY`] × 2 × this (32 MiB). A larger program is compiled
/// for its call alone (and counts against that run's memory budget).
const CACHED_SIZE_LIMIT: usize = 256 << 10;

/// A pattern compiled for the crate, with Go's capture group names.
struct Compiled {
    regex: Regex,
    /// The name of each group by number; `""` for group 0 and unnamed groups.
    names: Vec<String>,
}

static CACHE: LazyLock<Mutex<Bounded<Arc<Compiled>>>> =
    LazyLock::new(|| Mutex::new(Bounded::new(CACHE_CAPACITY, usize::MAX)));

impl crate::cache::Weight for Arc<Compiled> {
    fn weight(&self) -> usize {
        2 * CACHED_SIZE_LIMIT
    }
}

/// `pattern` compiled, from the cache when it was compiled before, or the
/// reference's "FN: error parsing regexp: ..." error.
fn compiled(fn_name: &str, pattern: &str) -> anyhow::Result<Arc<Compiled>> {
    let cache = || CACHE.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(hit) = cache().get(pattern) {
        return Ok(hit);
    }
    // Compiled outside the lock: other requests need not wait for it.
    if let Ok(small) = compile(pattern, CACHED_SIZE_LIMIT) {
        let small = Arc::new(small);
        cache().insert(pattern.to_owned(), Arc::clone(&small));
        return Ok(small);
    }
    Ok(Arc::new(
        compile(pattern, SIZE_LIMIT).map_err(|e| anyhow!("{fn_name}: {e}"))?,
    ))
}

/// Whether the Go (RE2) regular expression `pattern` matches anywhere in
/// `text`; `fn_name` names who asks in the error of a bad pattern.
pub(crate) fn is_match(fn_name: &str, pattern: &str, text: &str) -> anyhow::Result<bool> {
    Ok(compiled(fn_name, pattern)?.regex.is_match(text))
}

fn compile(pattern: &str, size_limit: usize) -> Result<Compiled, SyntaxError> {
    let Translation { rust, names } = translate(pattern)?;
    let regex = RegexBuilder::new(&rust)
        .size_limit(size_limit)
        .dfa_size_limit(size_limit.min(2 << 20))
        .build()
        .map_err(|e| {
            let code = match e {
                ::regex::Error::CompiledTooBig(_) => "expression too large",
                // The crate's nesting limit (250, below Go's) keeps its
                // recursive compiler within the thread's stack.
                _ if e.to_string().contains("maximum number of nested") => {
                    "expression nests too deeply"
                }
                // Translation accepts only what the crate supports; this
                // is a backstop.
                _ => "invalid or unsupported Perl syntax",
            };
            SyntaxError::new(code, pattern)
        })?;
    Ok(Compiled { regex, names })
}

// ---------------------------------------------------------------------------
// Go's `regexp` matching rules.

/// The span of every match, as Go's `allMatches` enumerates them: after an
/// empty match move one character on, and drop an empty match that starts
/// where the previous match ended.
fn match_spans(re: &Regex, s: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut pos = 0;
    let mut prev_end = None;
    while pos <= s.len() {
        let Some(m) = re.find_at(s, pos) else {
            break;
        };
        let accept = if m.end() == pos {
            pos += s[pos..].chars().next().map_or(1, char::len_utf8);
            prev_end != Some(m.start())
        } else {
            pos = m.end();
            true
        };
        prev_end = Some(m.end());
        if accept {
            spans.push((m.start(), m.end()));
        }
    }
    spans
}

/// The text of group `i`, if it took part in the match.
fn group<'s>(locs: &CaptureLocations, s: &'s str, i: usize) -> Option<&'s str> {
    locs.get(i).map(|(a, b)| &s[a..b])
}

/// Go's `extract`: the name after a `$` (`name` or `{name}`), its number if
/// it is one, and the rest of the template.
fn template_name(t: &str) -> Option<(&str, Option<usize>, &str)> {
    static NAME: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^[\p{L}\p{Nd}_]+").expect("a valid pattern"));
    let (braced, body) = match t.strip_prefix('{') {
        Some(rest) => (true, rest),
        None => (false, t),
    };
    let name = NAME.find(body)?.as_str();
    let mut rest = &body[name.len()..];
    if braced {
        rest = rest.strip_prefix('}')?;
    }
    let mut number: Option<usize> = Some(0);
    for d in name.bytes() {
        number = number.filter(|n| d.is_ascii_digit() && *n < 100_000_000);
        number = number.map(|n| n * 10 + usize::from(d.wrapping_sub(b'0')));
    }
    if name.len() > 1 && name.starts_with('0') {
        number = None;
    }
    Some((name, number, rest))
}

/// Go's `Expand`: `$name`, `${name}` and `$$` in `template`, for a match
/// in `s`.
fn expand(out: &mut String, template: &str, s: &str, locs: &CaptureLocations, names: &[String]) {
    let mut t = template;
    while let Some(dollar) = t.find('$') {
        out.push_str(&t[..dollar]);
        t = &t[dollar + 1..];
        if let Some(rest) = t.strip_prefix('$') {
            out.push('$');
            t = rest;
            continue;
        }
        let Some((name, number, rest)) = template_name(t) else {
            out.push('$');
            continue;
        };
        t = rest;
        let text = match number {
            Some(n) => group(locs, s, n),
            None => names
                .iter()
                .enumerate()
                .filter(|(_, n)| n.as_str() == name)
                .find_map(|(i, _)| group(locs, s, i)),
        };
        out.push_str(text.unwrap_or(""));
    }
    out.push_str(t);
}

/// Replaces the matches at `spans` (starts of matches of `compiled`) with
/// the expanded `template`.
fn replace_spans(compiled: &Compiled, s: &str, template: &str, spans: &[(usize, usize)]) -> String {
    let mut out = String::with_capacity(s.len());
    let mut locs = compiled.regex.capture_locations();
    let mut copied = 0;
    for &(start, end) in spans {
        out.push_str(&s[copied..start]);
        // The leftmost-first match from its own start is the same match.
        compiled.regex.captures_read_at(&mut locs, s, start);
        expand(&mut out, template, s, &locs, &compiled.names);
        copied = end;
    }
    out.push_str(&s[copied..]);
    out
}

/// The capture groups of the first match (without group 0), or `None`.
fn groups(compiled: &Compiled, s: &str) -> Option<Vec<String>> {
    let mut locs = compiled.regex.capture_locations();
    compiled.regex.captures_read(&mut locs, s)?;
    // Go's group count: the crate drops trailing groups that cannot match
    // (`(a){0}`).
    Some(
        (1..compiled.names.len())
            .map(|i| group(&locs, s, i).unwrap_or("").to_owned())
            .collect(),
    )
}

/// Go's `Split(s, -1)`; `pattern` is the pattern's text.
fn split_parts(re: &Regex, pattern: &str, s: &str) -> Vec<String> {
    if s.is_empty() && !pattern.is_empty() {
        return vec![String::new()];
    }
    let mut parts = Vec::new();
    let (mut begin, mut last_start) = (0, 0);
    for (start, end) in match_spans(re, s) {
        last_start = start;
        // An empty match at the very start separates nothing.
        if end != 0 {
            parts.push(s[begin..start].to_owned());
        }
        begin = end;
    }
    if last_start != s.len() {
        parts.push(s[begin..].to_owned());
    }
    parts
}

/// A `str` parameter, or the reference's binding error.
fn str_param<'v>(fn_name: &str, param: &str, v: Value<'v>) -> anyhow::Result<&'v str> {
    v.unpack_str().ok_or_else(|| {
        anyhow!(
            "{fn_name}: for parameter {param}: got {}, want string",
            v.get_type()
        )
    })
}

/// `pattern` and `s` of a member, checked in order, and the compiled pattern.
fn pattern_and_text<'v>(
    fn_name: &str,
    pattern: Value<'v>,
    s: Value<'v>,
) -> anyhow::Result<(Arc<Compiled>, &'v str)> {
    let pattern = str_param(fn_name, "pattern", pattern)?;
    let s = str_param(fn_name, "s", s)?;
    Ok((compiled(fn_name, pattern)?, s))
}

/// Registers the `regex` module.
pub(crate) fn register(builder: &mut GlobalsBuilder) {
    crate::values::module::register(builder, "regex", regex_members, None);
}

#[starlark_module]
fn regex_members(builder: &mut GlobalsBuilder) {
    /// Whether `pattern` matches anywhere in `s` (use `^...$` to anchor).
    ///
    /// Patterns use Go's RE2 syntax: `\d`, `\w`, `\s` and `\b` are ASCII-only,
    /// `.` excludes newline unless `(?s)`, flags `i`, `m`, `s`, `U`, named
    /// groups `(?P<name>...)`, no backreferences or look-around.
    ///
    /// # Example
    /// ```python
    /// regex.match("^[a-z]+-[0-9]+$", "web-01")  # True
    /// ```
    fn r#match<'v>(pattern: Value<'v>, s: Value<'v>) -> anyhow::Result<bool> {
        let (compiled, s) = pattern_and_text("regex.match", pattern, s)?;
        Ok(compiled.regex.is_match(s))
    }

    /// The text of the first match of `pattern` in `s`, or `None`. An empty
    /// match gives `""`.
    ///
    /// # Example
    /// ```python
    /// regex.find("[0-9]+", "v1.25.3")  # "1"
    /// ```
    fn find<'v>(pattern: Value<'v>, s: Value<'v>) -> anyhow::Result<NoneOr<String>> {
        let (compiled, s) = pattern_and_text("regex.find", pattern, s)?;
        Ok(match compiled.regex.find(s) {
            Some(m) => NoneOr::Other(m.as_str().to_owned()),
            None => NoneOr::None,
        })
    }

    /// The texts of all non-overlapping matches of `pattern` in `s`, left to
    /// right; `[]` when there are none.
    ///
    /// # Example
    /// ```python
    /// regex.find_all("[0-9]+", "v1.25.3")  # ["1", "25", "3"]
    /// ```
    fn find_all<'v>(pattern: Value<'v>, s: Value<'v>) -> anyhow::Result<Vec<String>> {
        let (compiled, s) = pattern_and_text("regex.find_all", pattern, s)?;
        Ok(match_spans(&compiled.regex, s)
            .into_iter()
            .map(|(a, b)| s[a..b].to_owned())
            .collect())
    }

    /// The capture groups of the first match of `pattern` in `s`, in order
    /// and without the whole match, or `None` when nothing matches. A group
    /// that took no part in the match gives `""`.
    ///
    /// # Example
    /// ```python
    /// regex.find_groups("^([a-z]+)-([0-9]+)$", "web-01")  # ["web", "01"]
    /// ```
    fn find_groups<'v>(pattern: Value<'v>, s: Value<'v>) -> anyhow::Result<NoneOr<Vec<String>>> {
        let (compiled, s) = pattern_and_text("regex.find_groups", pattern, s)?;
        Ok(match groups(&compiled, s) {
            Some(groups) => NoneOr::Other(groups),
            None => NoneOr::None,
        })
    }

    /// `s` with the first match of `pattern` replaced by `replacement`, or
    /// `s` unchanged when nothing matches.
    ///
    /// In `replacement`, `$1` or `${1}` is a group by number and `$name` or
    /// `${name}` a group by name (the longest run of letters, digits and
    /// `_`, so write `${1}x`, not `$1x`); unknown or unmatched groups give
    /// `""`, and `$$` is a `$`.
    ///
    /// # Example
    /// ```python
    /// regex.replace("(\\w+)@(\\w+)", "me@host x", "$2:$1")  # "host:me x"
    /// ```
    fn replace<'v>(
        pattern: Value<'v>,
        s: Value<'v>,
        replacement: Value<'v>,
    ) -> anyhow::Result<String> {
        const FN: &str = "regex.replace";
        let (compiled, s) = pattern_and_text(FN, pattern, s)?;
        let replacement = str_param(FN, "replacement", replacement)?;
        let first = compiled.regex.find(s).map(|m| (m.start(), m.end()));
        Ok(replace_spans(&compiled, s, replacement, first.as_slice()))
    }

    /// `s` with every non-overlapping match of `pattern` replaced by
    /// `replacement`, expanded as in `regex.replace`.
    ///
    /// # Example
    /// ```python
    /// regex.replace_all("[^a-z0-9]+", "My XR_name", "-")  # "-y-name"
    /// ```
    fn replace_all<'v>(
        pattern: Value<'v>,
        s: Value<'v>,
        replacement: Value<'v>,
    ) -> anyhow::Result<String> {
        const FN: &str = "regex.replace_all";
        let (compiled, s) = pattern_and_text(FN, pattern, s)?;
        let replacement = str_param(FN, "replacement", replacement)?;
        let spans = match_spans(&compiled.regex, s);
        Ok(replace_spans(&compiled, s, replacement, &spans))
    }

    /// `s` split around the matches of `pattern`. An empty `s` gives `[""]`;
    /// a leading or trailing separator gives an empty first or last part.
    ///
    /// # Example
    /// ```python
    /// regex.split("[,;]\\s*", "a, b;c")  # ["a", "b", "c"]
    /// ```
    fn split<'v>(pattern: Value<'v>, s: Value<'v>) -> anyhow::Result<Vec<String>> {
        const FN: &str = "regex.split";
        let pattern_text = str_param(FN, "pattern", pattern)?;
        let (compiled, s) = pattern_and_text(FN, pattern, s)?;
        Ok(split_parts(&compiled.regex, pattern_text, s))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::syntax::{GO_CATEGORIES, GO_CATEGORY_ALIASES, GO_SCRIPTS};
    use super::{CACHE, CACHE_CAPACITY, compile};
    use crate::testing::{assert_eval, assert_fails, eval, literal};

    #[test]
    fn regex_is_a_module_listing_its_members() {
        assert_eval("type(regex)", json!("module"));
        assert_eval("str(regex)", json!("<module \"regex\">"));
        assert_eval(
            "dir(regex)",
            json!([
                "find",
                "find_all",
                "find_groups",
                "match",
                "replace",
                "replace_all",
                "split"
            ]),
        );
    }

    #[test]
    fn the_spec_examples_hold() {
        assert_eval("regex.match('a*', '')", json!(true));
        assert_eval("regex.match('^b$', 'abc')", json!(false));
        assert_eval("regex.match('b', 'abc')", json!(true));
        assert_eval("regex.find('a*', 'bbb')", json!(""));
        assert_eval("regex.find('x', 'bbb')", json!(null));
        assert_eval("regex.find_all('a*', '')", json!([""]));
        assert_eval("regex.find_all('a*', 'baaab')", json!(["", "aaa", ""]));
        assert_eval("regex.find_all('x', 'abc')", json!([]));
        assert_eval("regex.find_groups('(a)?(b)', 'b')", json!(["", "b"]));
        assert_eval("regex.find_groups('b', 'abc')", json!([]));
        assert_eval("regex.find_groups('(x)', 'abc')", json!(null));
        assert_eval("regex.replace('a', 'aaa', '')", json!("aa"));
        assert_eval(
            r"regex.replace('(\\w+)@(\\w+)', 'me@host x', '$2:$1')",
            json!("host:me x"),
        );
        assert_eval("regex.replace('x', 'aaa', 'y')", json!("aaa"));
        assert_eval("regex.replace_all('a', 'aaa', '')", json!(""));
        assert_eval("regex.replace_all('[0-9]+', 'a1b22', '#')", json!("a#b#"));
        assert_eval("regex.split(',', 'a,b,')", json!(["a", "b", ""]));
        assert_eval("regex.split(',', '')", json!([""]));
        assert_eval(r"regex.split('[,;]\\s*', 'a, b;c')", json!(["a", "b", "c"]));
        assert_eval("regex.split(',', ',a')", json!(["", "a"]));
    }

    #[test]
    fn matches_are_enumerated_like_go() {
        assert_eval("regex.find_all('x*', 'axxb')", json!(["", "xx", ""]));
        assert_eval("regex.replace_all('x*', 'axxb', '-')", json!("-a-b-"));
        assert_eval("regex.split('x*', 'axxb')", json!(["a", "b"]));
        assert_eval("regex.find_all('', 'abc')", json!(["", "", "", ""]));
        assert_eval("regex.split('', 'abc')", json!(["a", "b", "c"]));
        assert_eval("regex.split('', '')", json!([]));
        assert_eval("regex.split('a*', 'baaac')", json!(["b", "c"]));
        assert_eval("regex.find_all('', 'é')", json!(["", ""]));
        assert_eval("regex.replace_all('$', 'ab\\n', '#')", json!("ab\n#"));
        assert_eval(
            "regex.replace_all('(?m)$', 'ab\\ncd', '#')",
            json!("ab#\ncd#"),
        );
        assert_eval("regex.find('a{2,3}', 'aaaa')", json!("aaa"));
    }

    #[test]
    fn perl_classes_and_word_boundaries_are_ascii_only() {
        assert_eval(r"regex.match('^\\d+$', '١٢')", json!(false));
        assert_eval(r"regex.match('^\\d+$', '12')", json!(true));
        assert_eval(r"regex.match('\\w', 'é')", json!(false));
        assert_eval(r"regex.match('\\s', 'a\u00a0b')", json!(false));
        assert_eval(r"regex.match('[\\d]', '٣')", json!(false));
        assert_eval(r"regex.match('^\\D$', '٣')", json!(true));
        assert_eval(
            r"regex.find_all('\\b\\w+\\b', 'café au lait')",
            json!(["caf", "au", "lait"]),
        );
        assert_eval(
            r"regex.split('\\b\\w+\\b', 'café au lait')",
            json!(["", "é ", " ", ""]),
        );
        assert_eval("regex.find_all('[[:alpha:]]+', 'ab1é')", json!(["ab"]));
    }

    #[test]
    fn dot_flags_and_anchors_follow_re2() {
        assert_eval("regex.match('a.c', 'a\\nc')", json!(false));
        assert_eval("regex.match('(?s)a.c', 'a\\nc')", json!(true));
        assert_eval("regex.match('[^a]', '\\n')", json!(true));
        assert_eval("regex.match('(?i)k', 'K')", json!(true));
        assert_eval(
            "regex.find('(?i)straße', 'STRASSE Straße')",
            json!("Straße"),
        );
        assert_eval(
            r"regex.find_all('(?m)^\\w+$', 'ab\ncd')",
            json!(["ab", "cd"]),
        );
        assert_eval(r"regex.match('^\\w+$', 'ab\ncd')", json!(false));
        assert_eval("regex.match('^ab$', 'ab\\n')", json!(false));
        assert_eval("regex.find_all('(?U)a+', 'aaa')", json!(["a", "a", "a"]));
        assert_eval("regex.find('(?U)a+?', 'aaa')", json!("aaa"));
        // The operator's own flags decide its greediness.
        assert_eval("regex.find('a(?U)+', 'aaa')", json!("a"));
        assert_eval("regex.find('(?U:a+)a+', 'aaaa')", json!("aaaa"));
        assert_eval(r"regex.find('\\Aa\\z', 'a')", json!("a"));
    }

    #[test]
    fn re2_syntax_is_accepted() {
        assert_eval(r"regex.find('\\Qa.b\\E+', 'a.bbb axb')", json!("a.bbb"));
        assert_eval(r"regex.find('\\Q[x', 'a[x')", json!("[x"));
        assert_eval(
            r"regex.find_all('\\pL+', 'héllo wörld 42')",
            json!(["héllo", "wörld"]),
        );
        assert_eval(r"regex.find('\\p{Greek}+', 'abc αβγ')", json!("αβγ"));
        assert_eval(r"regex.find('\\p{greek}+', 'αβγ')", json!("αβγ"));
        assert_eval(r"regex.find('\\PL+', 'ab12')", json!("12"));
        assert_eval(r"regex.find('\\p{^L}+', 'ab12')", json!("12"));
        assert_eval("regex.find('[a[]+', 'x[a[')", json!("[a["));
        assert_eval("regex.find('a{', 'a{')", json!("a{"));
        assert_eval("regex.find('a{,2}', 'a{,2}')", json!("a{,2}"));
        assert_eval("regex.find('[a&&b]+', 'x&ab')", json!("&ab"));
        assert_eval("regex.find('(?ii)A', 'a')", json!("a"));
        assert_eval("regex.find('(?i-i)A', 'aA')", json!("A"));
        assert_eval(r"regex.find('\\x41\\x{e9}\\101', 'AéA')", json!("AéA"));
        assert_eval(r"regex.match('^\\_$', '_')", json!(true));
        assert_eval(
            "regex.find('x{1000}', 'x' * 1000) == 'x' * 1000",
            json!(true),
        );
        assert_eval("regex.find('^*a', 'a')", json!("a"));
        assert_eval(r"regex.find('\\x{D800}|b', 'ab')", json!("b"));
    }

    #[test]
    fn named_and_duplicate_groups_work() {
        assert_eval(
            r"regex.replace_all('(?P<user>\\w+)@(?<host>\\w+)', 'me@host', '${host}/$user')",
            json!("host/me"),
        );
        assert_eval(
            "regex.find_groups('(?P<x>a)(?P<x>b)', 'ab')",
            json!(["a", "b"]),
        );
        assert_eval("regex.replace('(?P<x>a)(?P<x>b)', 'ab', '$x')", json!("a"));
        assert_eval("regex.find_groups('(?P<1a>x)', 'x')", json!(["x"]));
        // A group the crate drops (`{0}`) still counts, as in Go.
        assert_eval("regex.find_groups('((a){0})', 'b')", json!(["", ""]));
    }

    #[test]
    fn templates_expand_like_go() {
        let replace = |template: &str| {
            format!(r"regex.replace_all('(\\w+)@(\\w+)', 'me@host x', '{template}')")
        };
        assert_eval(&replace("$1x"), json!(" x"));
        assert_eval(&replace("${1}x"), json!("mex x"));
        assert_eval(&replace("$$"), json!("$ x"));
        assert_eval(&replace("$"), json!("$ x"));
        assert_eval(&replace("a$-"), json!("a$- x"));
        assert_eval(&replace("$3"), json!(" x"));
        assert_eval(&replace("$01"), json!(" x"));
        assert_eval(&replace("$0"), json!("me@host x"));
        assert_eval(&replace("${2"), json!("${2 x"));
        assert_eval(&replace("$nope"), json!(" x"));
        // Names run over Unicode letters, as Go's template parser does.
        assert_eval(&replace("$1é"), json!(" x"));
        assert_eval(
            "regex.replace_all('(a)|(b)', 'b', '[$1][$2]')",
            json!("[][b]"),
        );
    }

    #[test]
    fn invalid_patterns_give_go_errors() {
        for (pattern, detail) in [
            ("[unclosed", "missing closing ]: `[unclosed`"),
            ("a**", "invalid nested repetition operator: `**`"),
            ("x{2}{3}", "invalid nested repetition operator: `{2}{3}`"),
            ("(a", "missing closing ): `(a`"),
            ("a)", "unexpected ): `a)`"),
            ("x{1001}", "invalid repeat count: `{1001}`"),
            ("(x{500}){3}", "invalid repeat count: `{3}`"),
            ("a{2,1}", "invalid repeat count: `{2,1}`"),
            (r"\\8", r"invalid escape sequence: `\8`"),
            (r"\\C", r"invalid escape sequence: `\C`"),
            (r"\\p{Zz}", r"invalid character class range: `\p{Zz}`"),
            ("[z-a]", "invalid character class range: `z-a`"),
            ("[[:foo:]]", "invalid character class range: `[:foo:]`"),
            ("(?x)a", "invalid or unsupported Perl syntax: `(?x`"),
            ("*", "missing argument to repetition operator: `*`"),
            ("a|*", "missing argument to repetition operator: `*`"),
            ("(?P<n", "invalid named capture: `(?P<n`"),
            ("(?<>a)", "invalid named capture: `(?<>`"),
            ("\\\\", "trailing backslash at end of expression: ``"),
        ] {
            for f in ["match", "find", "find_all", "find_groups", "split"] {
                assert_fails(
                    &format!("regex.{f}('{pattern}', 'abc')"),
                    &format!("regex.{f}: error parsing regexp: {detail}"),
                );
            }
            for f in ["replace", "replace_all"] {
                assert_fails(
                    &format!("regex.{f}('{pattern}', 'abc', '')"),
                    &format!("regex.{f}: error parsing regexp: {detail}"),
                );
            }
        }
    }

    #[test]
    fn parameters_must_be_strings() {
        assert_fails(
            "regex.match(1, 'a')",
            "regex.match: for parameter pattern: got int, want string",
        );
        assert_fails(
            "regex.find('a', b'a')",
            "regex.find: for parameter s: got bytes, want string",
        );
        assert_fails(
            "regex.replace('a', 'a', None)",
            "regex.replace: for parameter replacement: got NoneType, want string",
        );
        assert_fails(
            "regex.split(None, 1)",
            "regex.split: for parameter pattern: got NoneType, want string",
        );
        assert_fails("regex.find_all('a')", "s");
        assert_eval(
            "regex.replace_all(pattern='a', s='aa', replacement='b')",
            json!("bb"),
        );
    }

    #[test]
    fn every_go_unicode_class_name_compiles() {
        let names = GO_CATEGORIES
            .iter()
            .copied()
            .chain(GO_SCRIPTS.split_whitespace())
            .chain(GO_CATEGORY_ALIASES.iter().map(|(alias, _)| *alias))
            .chain(["Any", "Assigned", "ASCII", "ascii", "lu", "Cased Letter"]);
        for name in names {
            for pattern in [format!(r"\p{{{name}}}"), format!(r"[^\P{{{name}}}]")] {
                assert!(compile(&pattern, super::SIZE_LIMIT).is_ok(), "{pattern}");
            }
        }
    }

    #[test]
    fn patterns_nested_beyond_the_crates_limit_are_rejected_cleanly() {
        let deep = format!("{}a{}", "(".repeat(200), ")*".repeat(200));
        assert_fails(
            &format!("regex.match('{deep}', 'a')"),
            "regex.match: error parsing regexp: expression nests too deeply: `((((",
        );
        let shallow = format!("{}a{}", "(".repeat(100), ")*".repeat(100));
        assert_eval(&format!("regex.match('{shallow}', 'a')"), json!(true));
    }

    #[test]
    fn compiled_patterns_are_cached_and_bounded() {
        let first = super::compiled("regex.match", "cache-probe-[0-9]+").unwrap();
        let again = super::compiled("regex.match", "cache-probe-[0-9]+").unwrap();
        assert!(std::sync::Arc::ptr_eq(&first, &again));
        for i in 0..CACHE_CAPACITY + 10 {
            super::compiled("regex.match", &format!("cache-fill-{i}")).unwrap();
        }
        assert!(CACHE.lock().unwrap().len() <= CACHE_CAPACITY);
    }

    /// Go's `regexp.QuoteMeta`.
    fn quote_meta(s: &str) -> String {
        s.chars()
            .flat_map(|c| {
                let special = r"\.+*?()|[]{}^$".contains(c);
                special.then_some('\\').into_iter().chain([c])
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn a_quoted_string_matches_itself(s in "\\PC{0,16}") {
            let pattern = format!("^{}$", quote_meta(&s));
            let compiled = compile(&pattern, super::SIZE_LIMIT).unwrap();
            prop_assert!(compiled.regex.is_match(&s));
        }

        #[test]
        fn replacing_with_the_whole_match_keeps_the_text(s in "[a-c ,;é]{0,12}") {
            for pattern in ["a*", "[,;] *", r"\b", "", "(b)|(c)"] {
                let compiled = compile(pattern, super::SIZE_LIMIT).unwrap();
                let spans = super::match_spans(&compiled.regex, &s);
                prop_assert_eq!(super::replace_spans(&compiled, &s, "$0", &spans), s.clone());
            }
        }

        #[test]
        fn splitting_on_a_separator_inverts_joining(parts in proptest::collection::vec("[a-z]{0,4}", 1..5)) {
            let joined = parts.join(",");
            let literal = serde_json::to_string(&joined).unwrap();
            let got = eval(&format!("regex.split(',', {literal})")).unwrap();
            prop_assert_eq!(got, json!(parts));
        }
    }

    /// Every member gives, for each generated pattern, text and template of
    /// `tests/compat/regex.jsonl`, what Go's regexp gave (recorded by
    /// `tools/goregex`), or fails with its error.
    #[test]
    fn members_match_the_recorded_go_results() {
        crate::testing::check_json_lines("tests/compat/regex.jsonl", |vector| {
            let [pattern, text, template] =
                ["pattern", "s", "replacement"].map(|k| literal(vector[k].as_str().unwrap()));
            let calls = format!(
                "{{\"match\": regex.match({pattern}, {text}), \"find\": regex.find({pattern}, {text}), \
                 \"find_all\": regex.find_all({pattern}, {text}), \"find_groups\": regex.find_groups({pattern}, {text}), \
                 \"replace\": regex.replace({pattern}, {text}, {template}), \
                 \"replace_all\": regex.replace_all({pattern}, {text}, {template}), \"split\": regex.split({pattern}, {text})}}"
            );
            let got = eval(&calls);
            let ok = match (vector["error"].as_str(), &got) {
                (Some(error), Err(e)) => e.contains(&format!("regex.match: {error}")),
                (None, Ok(results)) => results
                    .as_object()
                    .unwrap()
                    .iter()
                    .all(|(k, value)| *value == vector[k]),
                _ => false,
            };
            if ok {
                Ok(())
            } else {
                Err(format!("got {got:?}"))
            }
        });
    }
}
