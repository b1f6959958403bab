//! Signature help (starlark_lsp has none): inside the parentheses of a
//! call to a builtin, its signature from the registry, with the parameter
//! the cursor is on.

use std::collections::HashMap;

use lsp_types::{
    Documentation, MarkupContent, MarkupKind, ParameterInformation, ParameterLabel, SignatureHelp,
    SignatureInformation,
};

use crate::docs::FunctionDoc;

/// The innermost call still open at the end of `before` (the text up to
/// the cursor): its callee (`Resource`, `dict.merge`) and the arguments
/// written so far, separated at top-level commas.
fn open_call(before: &str) -> Option<(String, Vec<String>)> {
    // Positions of the open brackets, outside strings and comments.
    let mut stack: Vec<(usize, char)> = Vec::new();
    let mut quote: Option<char> = None;
    let mut comment = false;
    let mut escaped = false;
    for (i, c) in before.char_indices() {
        if comment {
            comment = c != '\n';
            continue;
        }
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '#' => comment = true,
            '"' | '\'' => quote = Some(c),
            '(' | '[' | '{' => stack.push((i, c)),
            ')' | ']' | '}' => {
                stack.pop();
            }
            _ => {}
        }
    }
    let &(at, _) = stack.iter().rev().find(|(_, c)| *c == '(')?;
    let head = &before[..at];
    let start = head
        .rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
        .map_or(0, |i| i + 1);
    let callee = head[start..].to_owned();
    if callee.is_empty() {
        return None;
    }
    Some((callee, top_level_args(&before[at + 1..])))
}

/// The arguments of an open call, split at top-level commas.
fn top_level_args(text: &str) -> Vec<String> {
    crate::check::split_top_level(text)
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// The parameters of a signature line, split at top-level commas.
pub fn parameters(params: &str) -> Vec<String> {
    top_level_args(params)
        .into_iter()
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect()
}

/// A parameter's name: `name=default` -> `name`, `*args` -> `args`.
fn name_of(param: &str) -> &str {
    param
        .trim_start_matches('*')
        .split('=')
        .next()
        .unwrap_or_default()
        .trim()
}

/// The signature help at the end of `before`, for the builtins `functions`.
pub fn help(before: &str, functions: &HashMap<String, FunctionDoc>) -> Option<SignatureHelp> {
    let (callee, args) = open_call(before)?;
    let f = functions.get(&callee)?;
    let params = parameters(&f.params);
    let label = format!("{}({})", f.name, f.params);
    let mut offsets = Vec::new();
    let mut from = f.name.len() + 1;
    for p in &params {
        let at = label[from..].find(p.as_str()).map_or(from, |i| from + i);
        let start = u32::try_from(at).unwrap_or(0);
        let end = u32::try_from(at + p.len()).unwrap_or(0);
        offsets.push(ParameterInformation {
            label: ParameterLabel::LabelOffsets([start, end]),
            documentation: None,
        });
        from = at + p.len();
    }
    // The parameter being written: a keyword's own, else by position
    // (never past a `*` separator or into keyword-only ones).
    let current = args.last().map(|a| a.trim()).unwrap_or_default();
    let active = match current.split_once('=') {
        Some((kw, _)) if !kw.contains(['(', '[', '{', '"', '\'']) => {
            params.iter().position(|p| name_of(p) == kw.trim())
        }
        _ => {
            let i = args.len().saturating_sub(1);
            let positional = params
                .iter()
                .position(|p| p.starts_with('*') || p == "/")
                .unwrap_or(params.len());
            let slash = usize::from(params.iter().take(positional).any(|p| p == "/"));
            (i < positional - slash).then_some(i).or_else(|| {
                params
                    .iter()
                    .position(|p| p.starts_with('*') && p.len() > 1 && !p.starts_with("**"))
            })
        }
    };
    Some(SignatureHelp {
        signatures: vec![SignatureInformation {
            label,
            documentation: Some(Documentation::MarkupContent(MarkupContent {
                kind: MarkupKind::Markdown,
                value: f.markdown.clone(),
            })),
            parameters: Some(offsets),
            active_parameter: active.and_then(|a| u32::try_from(a).ok()),
        }],
        active_signature: Some(0),
        active_parameter: active.and_then(|a| u32::try_from(a).ok()),
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::{help, open_call};
    use crate::docs::functions;

    #[test]
    fn the_open_call_is_found_past_nested_brackets_and_strings() {
        let (callee, args) = open_call("x = set_condition(\"Ready\", f(\"(\"), ").expect("a call");
        assert_eq!(callee, "set_condition");
        assert_eq!(args.len(), 3);
        assert!(open_call("f(1)\n").is_none());
        let (callee, _) = open_call("dict.merge({\"a\": [1, 2]}, ").expect("a call");
        assert_eq!(callee, "dict.merge");
    }

    #[test]
    fn the_active_parameter_follows_position_and_keyword() {
        let by_name: HashMap<_, _> = functions()
            .into_iter()
            .map(|f| (f.name.clone(), f))
            .collect();
        let h = help("set_condition(\"Ready\", ", &by_name).expect("help");
        let sig = &h.signatures[0];
        assert!(
            sig.label
                .starts_with("set_condition(type, status, reason, message"),
            "{}",
            sig.label
        );
        assert_eq!(h.active_parameter, Some(1));
        let h = help("set_condition(target=", &by_name).expect("help");
        assert_eq!(h.active_parameter, Some(4));
        assert!(help("nope(", &by_name).is_none());
    }
}
