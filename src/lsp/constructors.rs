//! What the editor offers inside a `schema()` constructor's call, from the
//! script's typed scope (`crate::typed`): its fields to complete (with
//! type, required, default and doc), a field's allowed values, the
//! constructor's signature with the field being written, and a field's
//! description on hover. A dict literal given for a nested object, or for
//! an item of a list of them, is completed as its constructor's fields.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::typed::{Constructor, FieldType, Module};

/// Where the cursor is, as far as constructors go.
pub struct Place {
    /// The constructor whose fields are being written.
    pub constructor: Arc<Constructor>,
    /// Written as a dict literal (`"field": value`) rather than keywords.
    pub dict: bool,
    /// The fields already given.
    pub given: Vec<String>,
    /// The field whose value the cursor is in, if any.
    pub value_of: Option<String>,
}

/// Each bracket still open at the end of `text`, by position, outside
/// strings and comments.
fn open_brackets(text: &str) -> Vec<(usize, char)> {
    let mut stack = Vec::new();
    let mut quote: Option<char> = None;
    let mut comment = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
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
    stack
}

/// The key an entry's text starts with: `name =` or `"name":`, and what
/// follows it.
fn entry_key(entry: &str) -> Option<(String, &str)> {
    let entry = entry.trim_start();
    if let Some(rest) = entry.strip_prefix(['"', '\'']) {
        let end = rest.find(['"', '\''])?;
        let after = rest[end + 1..].trim_start().strip_prefix(':')?;
        return Some((rest[..end].to_owned(), after));
    }
    let (name, after) = entry.split_once('=')?;
    let name = name.trim();
    (!name.is_empty()
        && !after.starts_with('=')
        && name.chars().all(|c| c.is_alphanumeric() || c == '_'))
    .then(|| (name.to_owned(), after))
}

/// The entries written so far inside the bracket opened at `at`.
fn entries_after(text: &str, at: usize) -> Vec<String> {
    crate::check::split_top_level(&text[at + 1..])
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// The constructor-related place at the end of `before` (the script up to
/// the cursor), in `scope`.
pub fn place(before: &str, scope: &Module) -> Option<Place> {
    let stack = open_brackets(before);
    let mut current: Option<(Arc<Constructor>, bool)> = None;
    // A list whose items are this constructor's objects.
    let mut items: Option<Arc<Constructor>> = None;
    for (i, &(at, bracket)) in stack.iter().enumerate() {
        let head = &before[..at];
        // The field the bracket is the value of, in the enclosing bracket.
        let key = stack.get(i.wrapping_sub(1)).and_then(|&(outer, _)| {
            let last = entries_after(head, outer).pop()?;
            entry_key(&last).map(|(k, _)| k)
        });
        let field_of = |c: &Option<(Arc<Constructor>, bool)>| {
            let (ctor, _) = c.as_ref()?;
            ctor.field(key.as_deref()?).map(|f| f.ty.clone())
        };
        let next = match bracket {
            '(' => {
                let start = head
                    .rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
                    .map_or(0, |i| i + 1);
                items = None;
                scope.constructor_named(&head[start..]).map(|c| (c, false))
            }
            '{' => {
                let from_list = items
                    .take()
                    .filter(|_| stack.get(i.wrapping_sub(1)).is_some_and(|&(_, b)| b == '['));
                match (from_list, field_of(&current)) {
                    (Some(c), _) | (None, Some(FieldType::Nested(c))) => Some((c, true)),
                    _ => None,
                }
            }
            '[' => {
                items = match field_of(&current) {
                    Some(FieldType::ListOf(c)) => Some(c),
                    _ => None,
                };
                None
            }
            _ => None,
        };
        current = next;
    }
    let (constructor, dict) = current?;
    let &(at, _) = stack.last()?;
    let entries = entries_after(before, at);
    let mut given: Vec<String> = entries
        .iter()
        .filter_map(|e| entry_key(e).map(|(k, _)| k))
        .collect();
    let value_of = entries.last().and_then(|last| {
        let (key, value) = entry_key(last)?;
        (!value.contains(['(', '[', '{'])).then_some(key)
    });
    if let Some(v) = &value_of {
        given.retain(|g| g != v);
    }
    Some(Place {
        constructor,
        dict,
        given,
        value_of,
    })
}

/// Completion items at `place`: a field's allowed values where its value
/// is written, else the fields not given yet (required first).
pub fn completion(place: &Place) -> Vec<Value> {
    let ctor = &place.constructor;
    if let Some(name) = &place.value_of {
        let Some(field) = ctor.field(name) else {
            return Vec::new();
        };
        return field
            .values
            .iter()
            .map(|v| {
                json!({
                    "label": v.repr(),
                    "kind": 20,
                    "detail": format!("{}.{}", ctor.name, field.name),
                    "insertText": v.repr(),
                })
            })
            .collect();
    }
    ctor.fields
        .iter()
        .filter(|f| !place.given.contains(&f.name))
        .enumerate()
        .map(|(i, f)| {
            let insert = if place.dict {
                format!("{}: ", crate::syntax::string_literal(&f.name))
            } else {
                format!("{} = ", f.name)
            };
            let required = if f.required { ", required" } else { "" };
            json!({
                "label": f.name,
                "kind": 5,
                "detail": format!("{}{required}", f.ty.describe()),
                "documentation": {"kind": "markdown", "value": f.markdown(&ctor.name)},
                "insertText": insert,
                // Required fields first, then in declaration order.
                "sortText": format!("{}{i:04}", u8::from(!f.required)),
            })
        })
        .collect()
}

/// The signature help inside a constructor's call: its fields as
/// keywords, the one being written active.
pub fn signature(place: &Place) -> Value {
    let ctor = &place.constructor;
    let label = ctor.signature();
    let mut parameters = Vec::new();
    let mut names = Vec::new();
    let mut from = ctor.name.len() + 1;
    for field in {
        let mut fields: Vec<_> = ctor.fields.iter().collect();
        fields.sort_by_key(|f| !f.required);
        fields
    } {
        let text = format!("{}: {}", field.name, field.ty.describe());
        let at = label[from..].find(&text).map_or(from, |i| from + i);
        parameters.push(json!({
            "label": [at, at + text.len()],
            "documentation": {"kind": "markdown", "value": field.markdown(&ctor.name)},
        }));
        names.push(field.name.clone());
        from = at + text.len();
    }
    let active = place
        .value_of
        .as_ref()
        .and_then(|v| names.iter().position(|n| n == v))
        .or_else(|| names.iter().position(|n| !place.given.contains(n)));
    json!({
        "signatures": [{
            "label": label,
            "documentation": {"kind": "markdown", "value": ctor.doc},
            "parameters": parameters,
            "activeParameter": active,
        }],
        "activeSignature": 0,
        "activeParameter": active,
    })
}

/// The hover of the field named `word`, written as a keyword or dict key
/// where `before` (the script up to the word) leaves the cursor.
pub fn hover(before: &str, word: &str, scope: &Module) -> Option<String> {
    let place = place(before, scope)?;
    let field = place.constructor.field(word)?;
    Some(field.markdown(&place.constructor.name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope() -> Module {
        let text = "\
Rule = schema(\"Rule\", port = field(type = \"int\", required = True, doc = \"The port.\"))
Spec = schema(\"Spec\",
    region = field(type = \"string\", required = True),
    tier = field(type = \"string\", enum = [\"gold\", \"silver\"]),
    rule = field(type = Rule),
    rules = field(type = \"list\", items = Rule),
)
";
        let (ast, map) = crate::syntax::parse_quietly("m.star", text).unwrap();
        crate::typed::read(&ast, &map, None, &|_| None)
    }

    #[test]
    fn fields_are_offered_where_they_are_written() {
        let scope = scope();
        let p = place("x = Spec(region = \"a\", ", &scope).expect("inside Spec");
        assert_eq!(p.constructor.name, "Spec");
        assert!(!p.dict && p.value_of.is_none());
        let labels: Vec<String> = completion(&p)
            .iter()
            .map(|i| i["label"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(labels, ["tier", "rule", "rules"]);
        let p = place("Spec(rule = {\"po", &scope).expect("inside the rule dict");
        assert_eq!((p.constructor.name.as_str(), p.dict), ("Rule", true));
        let p = place("Spec(rules = [{\"port\": 1}, {", &scope).expect("inside a rules item");
        assert_eq!(p.constructor.name, "Rule");
        let p = place("Spec(tier = \"go", &scope).expect("a value");
        assert_eq!(p.value_of.as_deref(), Some("tier"));
        let values: Vec<Value> = completion(&p).iter().map(|i| i["label"].clone()).collect();
        assert_eq!(values, [json!("\"gold\""), json!("\"silver\"")]);
        assert!(place("len(", &scope).is_none());
        assert!(place("Spec(region = f(", &scope).is_none());
    }

    #[test]
    fn the_signature_marks_the_field_being_written() {
        let scope = scope();
        let p = place("Spec(tier = ", &scope).unwrap();
        let help = signature(&p);
        assert_eq!(
            help["signatures"][0]["label"],
            "Spec(region: string, tier: string, rule: Rule, rules: list of Rule)"
        );
        assert_eq!(help["activeParameter"], 1);
        let hover = hover("Spec(rule = Rule(", "port", &scope).expect("a hover");
        assert!(
            hover.starts_with("`Rule.port`: **int**, required"),
            "{hover}"
        );
        assert!(hover.ends_with("The port."), "{hover}");
    }
}
