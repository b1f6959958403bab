//! One kind's OpenAPI schema as a Starlark module of `schema()`
//! constructors: a constructor per object with declared properties (nested
//! ones first, so each is defined before it is used), `field()`s with their
//! type, `required`, `default`, `enum` and description, a constant per
//! string enum value, and `apiVersion`/`kind` preset on the kind's own.

use std::collections::HashSet;
use std::fmt::Write as _;

use serde_json::Value;

/// A kind to generate: its API version, kind and `openAPIV3Schema`.
pub struct Definition<'a> {
    pub api_version: String,
    pub kind: String,
    pub schema: &'a Value,
    /// Where it was read from, named in the module's docstring.
    pub source: String,
    /// `crd` or `xrd`, named in the module's docstring.
    pub command: &'static str,
}

/// The generated text, built bottom-up.
#[derive(Default)]
struct Module {
    /// `NAME = "value"` constants of enum values.
    constants: Vec<String>,
    /// Constructor definitions, each after the ones it uses.
    schemas: Vec<String>,
    /// Every top-level name given so far.
    taken: HashSet<String>,
}

/// The Starlark literal of a JSON value.
fn literal(value: &Value) -> String {
    match value {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => string(s),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(literal).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(map) => {
            let pairs: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", string(k), literal(v)))
                .collect();
            format!("{{{}}}", pairs.join(", "))
        }
    }
}

/// A double-quoted Starlark string.
fn string(s: &str) -> String {
    crate::syntax::string_literal(s)
}

/// `forProvider` -> `ForProvider`.
fn pascal(name: &str) -> String {
    let mut out = String::new();
    let mut upper = true;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            if upper {
                out.push(c.to_ascii_uppercase());
            } else {
                out.push(c);
            }
            upper = false;
        } else {
            upper = true;
        }
    }
    out
}

/// `BucketSpec`, `acl`, `public-read` -> `BUCKET_SPEC_ACL_PUBLIC_READ`.
fn constant(parts: &[&str]) -> String {
    let mut out = String::new();
    for part in parts {
        let mut prev_lower = false;
        for c in part.chars() {
            if c.is_ascii_uppercase() && prev_lower {
                out.push('_');
            }
            if c.is_ascii_alphanumeric() {
                out.push(c.to_ascii_uppercase());
                prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
            } else {
                if !out.ends_with('_') {
                    out.push('_');
                }
                prev_lower = false;
            }
        }
        if !out.ends_with('_') {
            out.push('_');
        }
    }
    let out = out.trim_matches('_').to_owned();
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        format!("_{out}")
    } else {
        out
    }
}

const KEYWORDS: [&str; 33] = [
    "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del", "elif",
    "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda",
    "load", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield",
];

/// Whether `name` can be a keyword argument.
fn identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !KEYWORDS.contains(&name)
}

fn is_true(schema: &Value, key: &str) -> bool {
    schema.get(key).and_then(Value::as_bool) == Some(true)
}

/// Whether `schema` gets a constructor of its own: an object whose
/// properties are all there is to it.
fn structured(schema: &Value) -> bool {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty())
        && !is_true(schema, "x-kubernetes-preserve-unknown-fields")
        && !matches!(
            schema.get("additionalProperties"),
            Some(Value::Object(_) | Value::Bool(true))
        )
}

impl Module {
    fn name(&mut self, wanted: String) -> String {
        let mut name = wanted.clone();
        let mut n = 2;
        while !self.taken.insert(name.clone()) {
            name = format!("{wanted}{n}");
            n += 1;
        }
        name
    }

    /// The `type = ...` (and `items = ...`) arguments of a field, defining
    /// the constructors it needs under `name`.
    fn field_type(&mut self, name: &str, schema: &Value) -> Vec<String> {
        if is_true(schema, "x-kubernetes-int-or-string") {
            return Vec::new();
        }
        if structured(schema) {
            let constructor = self.constructor(name, schema, &[]);
            return vec![format!("type = {constructor}")];
        }
        match schema.get("type").and_then(Value::as_str) {
            Some("string") => vec!["type = \"string\"".to_owned()],
            Some("integer") => vec!["type = \"int\"".to_owned()],
            Some("boolean") => vec!["type = \"bool\"".to_owned()],
            Some("object") => vec!["type = \"dict\"".to_owned()],
            Some("array") => {
                let mut out = vec!["type = \"list\"".to_owned()];
                if let Some(items) = schema.get("items").filter(|i| structured(i)) {
                    let item = self.constructor(&format!("{name}Item"), items, &[]);
                    out.push(format!("items = {item}"));
                }
                out
            }
            // `number` takes ints too, which `"float"` would reject.
            _ => Vec::new(),
        }
    }

    /// Defines the constructor of an object schema (and every one it
    /// uses) and returns its name; `preset` gives fields a fixed value.
    fn constructor(&mut self, wanted: &str, schema: &Value, preset: &[(&str, &str)]) -> String {
        let name = self.name(wanted.to_owned());
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let mut fields = Vec::new();
        let mut odd = Vec::new();
        let properties = schema.get("properties").and_then(Value::as_object);
        for (key, sub) in properties.into_iter().flatten() {
            let fixed = preset.iter().find(|(k, _)| k == key).map(|(_, v)| *v);
            let mut args = match fixed {
                Some(value) => vec![
                    "type = \"string\"".to_owned(),
                    format!("default = {}", string(value)),
                    format!("enum = [{}]", string(value)),
                ],
                None => self.field_type(&format!("{name}{}", pascal(key)), sub),
            };
            let default = sub.get("default").filter(|_| fixed.is_none());
            if required.contains(&key.as_str()) && default.is_none() && fixed.is_none() {
                args.push("required = True".to_owned());
            }
            if let Some(default) = default {
                args.push(format!("default = {}", literal(default)));
            }
            if let Some(values) = sub.get("enum").and_then(Value::as_array) {
                args.push(format!("enum = {}", literal(&Value::Array(values.clone()))));
                for value in values.iter().filter_map(Value::as_str) {
                    let constant = constant(&[&name, key, value]);
                    if !constant.is_empty() && self.taken.insert(constant.clone()) {
                        self.constants
                            .push(format!("{constant} = {}", string(value)));
                    }
                }
            }
            if let Some(doc) = sub.get("description").and_then(Value::as_str) {
                args.push(format!("doc = {}", string(doc.trim())));
            }
            let call = format!("field({})", args.join(", "));
            if identifier(key) {
                fields.push(format!("    {key} = {call},\n"));
            } else {
                odd.push(format!("        {}: {call},\n", string(key)));
            }
        }
        let mut text = format!("{name} = schema(\n    {},\n", string(&name));
        if let Some(doc) = schema.get("description").and_then(Value::as_str) {
            let _ = writeln!(text, "    doc = {},", string(doc.trim()));
        }
        for f in fields {
            text.push_str(&f);
        }
        if !odd.is_empty() {
            // Names that are not identifiers are given as a dict.
            text.push_str("    **{\n");
            for f in odd {
                text.push_str(&f);
            }
            text.push_str("    }\n");
        }
        text.push_str(")\n");
        self.schemas.push(text);
        name
    }
}

/// The module of `kind`.
pub fn generate(kind: &Definition) -> String {
    let mut module = Module::default();
    let mut top = kind.schema.clone();
    if let Some(props) = top.get_mut("properties").and_then(Value::as_object_mut) {
        // Crossplane and the provider write status; compositions do not.
        props.remove("status");
        for key in ["apiVersion", "kind"] {
            props
                .entry(key)
                .or_insert(serde_json::json!({"type": "string"}));
        }
        // Kubernetes fills metadata; the CRD does not describe it.
        props.insert(
            "metadata".to_owned(),
            serde_json::json!({"type": "object", "description": "The object's metadata: name, labels, annotations, ..."}),
        );
    }
    let name = module.constructor(
        &pascal(&kind.kind),
        &top,
        &[("apiVersion", &kind.api_version), ("kind", &kind.kind)],
    );
    let mut out = format!(
        "\"\"\"{} ({}): typed constructors generated by `function-starlark gen {}` from {}.\n\n\
         Each constructor validates its fields when called; nested objects have\n\
         their own (`{name}Spec`, ...), and a plain dict given for one is validated too.\n\"\"\"\n",
        kind.kind, kind.api_version, kind.command, kind.source
    );
    if !module.constants.is_empty() {
        out.push('\n');
        for c in &module.constants {
            out.push_str(c);
            out.push('\n');
        }
    }
    for s in &module.schemas {
        out.push('\n');
        out.push_str(s);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{constant, identifier, literal, pascal};

    #[test]
    fn names_are_made_from_fields() {
        assert_eq!(pascal("forProvider"), "ForProvider");
        assert_eq!(pascal("x-kubernetes-thing"), "XKubernetesThing");
        assert_eq!(
            constant(&["BucketSpec", "acl", "public-read"]),
            "BUCKET_SPEC_ACL_PUBLIC_READ"
        );
        assert_eq!(constant(&["X", "mode", "3rd"]), "X_MODE_3RD");
        assert!(identifier("forProvider") && !identifier("x-y") && !identifier("for"));
    }

    #[test]
    fn json_becomes_starlark() {
        let v = serde_json::json!({"a": [true, null, 1.5, "q\"\n"]});
        assert_eq!(literal(&v), "{\"a\": [True, None, 1.5, \"q\\\"\\n\"]}");
    }
}
