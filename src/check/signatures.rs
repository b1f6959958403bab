//! What each builtin accepts, from the registry the runtime uses: the
//! Rust signatures of `#[starlark_module]` builtins (their documentation)
//! and the lines of `builtins::signatures` for those that bind by hand.

use std::collections::HashMap;

use starlark::docs::{DocFunction, DocItem, DocMember, DocParam};
use starlark::environment::GlobalsBuilder;

/// The parameters of one builtin.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Params {
    /// Parameters a positional argument can fill, in order, with whether
    /// each is required.
    pub positional: Vec<(String, bool)>,
    /// How many of those cannot be named.
    pub positional_only: usize,
    /// Keyword-only parameters, with whether each is required.
    pub named_only: Vec<(String, bool)>,
    /// Takes `*args`.
    pub args: bool,
    /// Takes `**kwargs`.
    pub kwargs: bool,
}

impl Params {
    /// Parses a Python-style line (`d, path, default=None`, `/` and `*`).
    pub fn parse(line: &str) -> Params {
        let mut p = Params::default();
        let mut keyword_only = false;
        for part in split_top_level(line) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            if part == "/" {
                p.positional_only = p.positional.len();
            } else if part == "*" {
                keyword_only = true;
            } else if let Some(_name) = part.strip_prefix("**") {
                p.kwargs = true;
            } else if let Some(_name) = part.strip_prefix('*') {
                p.args = true;
                keyword_only = true;
            } else {
                let (name, required) = match part.split_once('=') {
                    Some((name, _)) => (name.trim(), false),
                    None => (part, true),
                };
                if keyword_only {
                    p.named_only.push((name.to_owned(), required));
                } else {
                    p.positional.push((name.to_owned(), required));
                }
            }
        }
        p
    }

    fn from_doc(f: &DocFunction) -> Params {
        let required = |d: &DocParam| (d.name.clone(), d.default_value.is_none());
        Params {
            positional: f
                .params
                .pos_only
                .iter()
                .chain(&f.params.pos_or_named)
                .map(required)
                .collect(),
            positional_only: f.params.pos_only.len(),
            named_only: f.params.named_only.iter().map(required).collect(),
            args: f.params.args.is_some(),
            kwargs: f.params.kwargs.is_some(),
        }
    }

    /// What is wrong with a call giving `positional` arguments and the
    /// keywords `named` (None when it could be right; calls with `*x` or
    /// `**x` are not checked by the caller).
    pub fn problem(
        &self,
        name: &str,
        positional: usize,
        named: &[&str],
    ) -> Option<(String, &'static str)> {
        if !self.args && positional > self.positional.len() {
            return Some((
                format!(
                    "{name}() takes at most {} positional argument{}, got {positional}",
                    self.positional.len(),
                    if self.positional.len() == 1 { "" } else { "s" }
                ),
                "arity",
            ));
        }
        for keyword in named {
            let known = self
                .positional
                .iter()
                .skip(self.positional_only)
                .chain(&self.named_only)
                .any(|(n, _)| n == keyword);
            if !known && !self.kwargs {
                return Some((
                    format!("{name}() has no parameter {keyword:?}"),
                    "unknown-keyword",
                ));
            }
        }
        let missing = self
            .positional
            .iter()
            .enumerate()
            .filter(|(i, (n, required))| {
                *required && *i >= positional && !named.contains(&n.as_str())
            })
            .map(|(_, (n, _))| n.clone())
            .chain(
                self.named_only
                    .iter()
                    .filter(|(n, required)| *required && !named.contains(&n.as_str()))
                    .map(|(n, _)| n.clone()),
            )
            .next();
        missing.map(|n| (format!("{name}() is missing its argument {n:?}"), "arity"))
    }
}

/// Splits at commas outside brackets and quotes.
pub fn split_top_level(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut quote, mut start) = (0i32, None, 0);
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (None, '"' | '\'') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') => depth -= 1,
            (None, ',') if depth == 0 => {
                out.push(&line[start..i]);
                start = i + 1;
            }
            // Inside quotes, or any other character.
            _ => {}
        }
    }
    out.push(&line[start..]);
    out
}

/// Every project builtin (`Resource`, `dict.merge`, ...) and its
/// parameters.
pub fn all() -> HashMap<String, Params> {
    let mut builder = GlobalsBuilder::new();
    crate::builtins::register(&mut builder);
    let docs = builder.build().documentation();
    let mut out = HashMap::new();
    let mut add = |name: String, f: &DocFunction| {
        let params = crate::builtins::signatures::of(&name)
            .map_or_else(|| Params::from_doc(f), Params::parse);
        out.insert(name, params);
    };
    for (name, item) in &docs.members {
        match item {
            DocItem::Member(DocMember::Function(f)) => add(name.clone(), f),
            DocItem::Module(module) => {
                for (member, item) in &module.members {
                    if let DocItem::Member(DocMember::Function(f)) = item {
                        add(format!("{name}.{member}"), f);
                    }
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{Params, all};

    #[test]
    fn hand_written_lines_parse() {
        let p = Params::parse("d1, d2, /, *more");
        assert_eq!(p.positional.len(), 2);
        assert_eq!(p.positional_only, 2);
        assert!(p.args && !p.kwargs);
        let p = Params::parse("x, /, *, prefix=\"\", indent=\"\\t\"");
        assert_eq!(
            p.named_only,
            vec![("prefix".to_owned(), false), ("indent".to_owned(), false)]
        );
    }

    #[test]
    fn calls_are_judged_against_the_registry() {
        let sigs = all();
        let resource = &sigs["Resource"];
        assert_eq!(resource.problem("Resource", 2, &[]), None);
        assert!(
            resource
                .problem("Resource", 1, &[])
                .is_some_and(|(_, rule)| rule == "arity")
        );
        assert_eq!(
            resource
                .problem("Resource", 2, &["depnds_on"])
                .map(|(_, r)| r),
            Some("unknown-keyword")
        );
        let dig = &sigs["dict.dig"];
        assert_eq!(dig.problem("dict.dig", 2, &["default"]), None);
        assert!(dig.problem("dict.dig", 4, &[]).is_some());
    }
}
