//! One API group and version as a Starlark module of `schema()`
//! constructors: one per kind or object type the group and version holds,
//! and one per nested object with declared properties (each defined before
//! it is used), `field()`s with their type, `required`, `default`, `enum`
//! and description, a constant per string enum value, `apiVersion`/`kind`
//! preset on a kind's own, and a `load()` of each type it uses from another
//! group's module.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;

use serde_json::Value;

use super::read::{Read, TypeDef};

/// How a module reaches the types of other groups.
pub struct Options<'a> {
    /// `gen --package REF`: loaded from `REF/<group>/<version>.star`; else
    /// copied into the module.
    pub package: Option<&'a str>,
    /// `crd`, `xrd` or `openapi`, named in the module's docstring.
    pub command: &'static str,
}

/// The generated text, built bottom-up.
#[derive(Default)]
struct Module<'a> {
    /// The module being written.
    file: String,
    /// `--package`: other groups' types are loaded from it; without one,
    /// each module holds a copy of every type it uses, so that it loads
    /// nothing (a module read from a file cannot load a sibling
    /// directory's).
    package: Option<String>,
    /// Every type read, for `$ref`s.
    read: Option<&'a Read>,
    /// `NAME = "value"` constants of enum values.
    constants: Vec<String>,
    /// Constructor definitions, each after the ones it uses.
    schemas: Vec<String>,
    /// Every top-level name given so far.
    taken: HashSet<String>,
    /// Types of this module already written, by key, and their names.
    written: HashMap<String, String>,
    /// Types of this module being written (a `$ref` back to one is a cycle).
    writing: HashSet<String>,
    /// Other modules' types used: module -> local name -> their name.
    loads: BTreeMap<String, BTreeMap<String, String>>,
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

/// The definition a `$ref` (or a lone `allOf` entry, as OpenAPI 3 writes a
/// documented reference) names: `#/definitions/X` or
/// `#/components/schemas/X` -> `X`.
fn reference(schema: &Value) -> Option<&str> {
    let direct = schema.get("$ref").and_then(Value::as_str);
    let all_of = || match schema.get("allOf").and_then(Value::as_array)?.as_slice() {
        [only] => only.get("$ref").and_then(Value::as_str),
        _ => None,
    };
    direct
        .or_else(all_of)
        .map(|r| r.rsplit('/').next().unwrap_or(r))
}

impl Module<'_> {
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
        if let Some(key) = reference(schema) {
            return match self.referenced(key) {
                Referenced::Constructor(name) => vec![format!("type = {name}")],
                Referenced::Plain(plain) => self.field_type(name, &plain),
                Referenced::Unknown => Vec::new(),
            };
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
                let items = schema.get("items");
                if let Some(key) = items.and_then(reference) {
                    if let Referenced::Constructor(item) = self.referenced(key) {
                        out.push(format!("items = {item}"));
                    }
                } else if let Some(items) = items.filter(|i| structured(i)) {
                    let item = self.constructor(&format!("{name}Item"), items, &[]);
                    out.push(format!("items = {item}"));
                }
                out
            }
            // `number` takes ints too, which `"float"` would reject.
            _ => Vec::new(),
        }
    }

    /// What the definition `key` is to a field: a constructor (written
    /// here first, or loaded from its own module), a plain type, or
    /// unknown. A reference back to a type being written is a cycle, left
    /// a plain dict.
    fn referenced(&mut self, key: &str) -> Referenced {
        let Some(read) = self.read else {
            return Referenced::Unknown;
        };
        if let Some(def) = read.types.get(key) {
            if def.file != self.file && self.package.is_some() {
                let local = self.load(&def.file, &def.name);
                return Referenced::Constructor(local);
            }
            if let Some(name) = self.written.get(key) {
                return Referenced::Constructor(name.clone());
            }
            if self.writing.contains(key) {
                return Referenced::Plain(serde_json::json!({"type": "object"}));
            }
            return Referenced::Constructor(self.type_def(key, def));
        }
        match read.plain.get(key) {
            Some(plain) => Referenced::Plain(plain.clone()),
            None => Referenced::Unknown,
        }
    }

    /// The local name of `name` loaded from `file`.
    fn load(&mut self, file: &str, name: &str) -> String {
        if let Some(local) = self.loads.get(file).and_then(|names| {
            names
                .iter()
                .find(|(_, theirs)| theirs.as_str() == name)
                .map(|(local, _)| local.clone())
        }) {
            return local;
        }
        let local = if self.taken.contains(name) {
            // Another group's type of the same name: loaded under its group's.
            let prefix = pascal(
                file.split('/')
                    .next()
                    .unwrap_or_default()
                    .split('.')
                    .next()
                    .unwrap_or_default(),
            );
            self.name(format!("{prefix}{name}"))
        } else {
            self.name(name.to_owned())
        };
        self.loads
            .entry(file.to_owned())
            .or_default()
            .insert(local.clone(), name.to_owned());
        local
    }

    /// Writes the constructor of one type read (after those it uses).
    fn type_def(&mut self, key: &str, def: &TypeDef) -> String {
        self.writing.insert(key.to_owned());
        let preset: Vec<(&str, &str)> = def
            .preset
            .as_ref()
            .map(|(api, kind)| vec![("apiVersion", api.as_str()), ("kind", kind.as_str())])
            .unwrap_or_default();
        let mut schema = def.schema.clone();
        if def.preset.is_some()
            && let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut)
        {
            for key in ["apiVersion", "kind"] {
                props
                    .entry(key)
                    .or_insert(serde_json::json!({"type": "string"}));
            }
            // Kubernetes fills metadata; a CRD does not describe it.
            props.entry("metadata").or_insert(serde_json::json!({
                "type": "object",
                "description": "The object's metadata: name, labels, annotations, ..."
            }));
        }
        // A type of this module had its own name reserved for it.
        if def.file == self.file {
            self.taken.remove(&def.name);
        }
        let name = self.constructor(&def.name, &schema, &preset);
        self.writing.remove(key);
        self.written.insert(key.to_owned(), name.clone());
        name
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

/// What a reference is to a field.
enum Referenced {
    Constructor(String),
    Plain(Value),
    Unknown,
}

/// The module `file`, holding the types of `read` placed in it.
pub fn generate(file: &str, read: &Read, options: &Options) -> String {
    let mut module = Module {
        file: file.to_owned(),
        package: options.package.map(str::to_owned),
        read: Some(read),
        ..Module::default()
    };
    let own: Vec<(&String, &TypeDef)> = read.types.iter().filter(|(_, d)| d.file == file).collect();
    // Each type keeps its own name: nested constructors give way.
    for (_, def) in &own {
        module.taken.insert(def.name.clone());
    }
    for (key, def) in &own {
        if !module.written.contains_key(key.as_str()) {
            module.type_def(key, def);
        }
    }
    let mut sources: Vec<&str> = own.iter().map(|(_, d)| d.source.as_str()).collect();
    sources.sort_unstable();
    sources.dedup();
    let kinds: Vec<&str> = own
        .iter()
        .filter(|(_, d)| d.preset.is_some())
        .map(|(_, d)| d.name.as_str())
        .collect();
    let (group_version, _) = file.rsplit_once(".star").unwrap_or((file, ""));
    let mut out = format!(
        "\"\"\"{group_version}: typed constructors generated by `function-starlark gen {}` from {}.\n",
        options.command,
        sources.join(", ")
    );
    if !kinds.is_empty() {
        let _ = write!(out, "\nKinds: {}.\n", kinds.join(", "));
    }
    out.push_str(
        "\nEach constructor validates its fields when called; nested objects have\n\
         their own (`<Kind>Spec`, ...), and a plain dict given for one is validated too.\n\"\"\"\n",
    );
    if !module.loads.is_empty() {
        out.push('\n');
        for (from, names) in &module.loads {
            let package = options.package.unwrap_or_default();
            let target = format!("{}/{from}", package.trim_end_matches('/'));
            let symbols: Vec<String> = names
                .iter()
                .map(|(local, theirs)| {
                    if local == theirs {
                        string(theirs)
                    } else {
                        format!("{local} = {}", string(theirs))
                    }
                })
                .collect();
            let _ = writeln!(out, "load({}, {})", string(&target), symbols.join(", "));
        }
    }
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
