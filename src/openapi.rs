//! Validation of Kubernetes objects against the OpenAPI v3 schemas of CRDs
//! and XRDs: unknown fields, wrong types, missing required fields and enum
//! violations, each with the field path. `check --crds` reads the schemas
//! from files; the server, with `validateSchemas`, from what Crossplane
//! sends.

use serde_json::{Map, Value};

/// The schemas read from `--crds`: CRDs by `(apiVersion, kind)`, XRDs
/// likewise (their schema describes the XR).
#[derive(Debug, Default)]
pub struct Schemas {
    kinds: Vec<(String, String, Value)>,
}

impl Schemas {
    /// Every version's schema of every CRD and XRD of `objects`.
    pub fn from_objects(objects: &[Value]) -> Schemas {
        let mut kinds = Vec::new();
        for o in objects {
            let kind = o.get("kind").and_then(Value::as_str).unwrap_or_default();
            if kind != "CustomResourceDefinition" && kind != "CompositeResourceDefinition" {
                continue;
            }
            let spec = o.get("spec").cloned().unwrap_or_default();
            let group = spec
                .get("group")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let name = spec
                .pointer("/names/kind")
                .and_then(Value::as_str)
                .unwrap_or_default();
            for version in spec
                .get("versions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let v = version
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if let Some(schema) = version.pointer("/schema/openAPIV3Schema") {
                    kinds.push((format!("{group}/{v}"), name.to_owned(), schema.clone()));
                }
            }
        }
        Schemas { kinds }
    }

    /// The schema of `apiVersion`/`kind`.
    pub fn of(&self, api_version: &str, kind: &str) -> Option<&Value> {
        self.kinds
            .iter()
            .find(|(a, k, _)| a == api_version && k == kind)
            .map(|(_, _, s)| s)
    }
}

fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The problem [`validate`] gives a required field that is absent.
pub const MISSING: &str = "required field missing";

fn type_matches(want: &str, v: &Value) -> bool {
    let got = type_of(v);
    want == got || (want == "number" && got == "integer")
}

/// Every problem of `value` against `schema`, as `(path, message)`; the
/// object's `metadata`, `apiVersion`, `kind` and `status` are not judged at
/// the top (Kubernetes owns them).
pub fn validate(value: &Value, schema: &Value) -> Vec<(String, String)> {
    const KUBERNETES_OWNED: [&str; 4] = ["metadata", "apiVersion", "kind", "status"];
    let mut out = Vec::new();
    let mut top = value.clone();
    if let Some(map) = top.as_object_mut() {
        for key in KUBERNETES_OWNED {
            map.remove(key);
        }
    }
    let mut schema = schema.clone();
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        for key in KUBERNETES_OWNED {
            props.remove(key);
        }
    }
    walk(&top, &schema, "", &mut out);
    out
}

fn walk(value: &Value, schema: &Value, path: &str, out: &mut Vec<(String, String)>) {
    let at = |p: &str| {
        if p.is_empty() {
            "(top)".to_owned()
        } else {
            p.to_owned()
        }
    };
    if schema
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        == Some(true)
    {
        if !matches!(type_of(value), "integer" | "string") {
            out.push((
                at(path),
                format!("want an integer or a string, got {}", type_of(value)),
            ));
        }
        return;
    }
    if let Some(want) = schema.get("type").and_then(Value::as_str)
        && !type_matches(want, value)
        && !(value.is_null() && schema.get("nullable").and_then(Value::as_bool) == Some(true))
    {
        out.push((at(path), format!("want {want}, got {}", type_of(value))));
        return;
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
        out.push((
            at(path),
            format!("{value} is not one of {}", list.join(", ")),
        ));
    }
    match value {
        Value::Object(map) => object(map, schema, path, out),
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    walk(item, item_schema, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

fn object(map: &Map<String, Value>, schema: &Value, path: &str, out: &mut Vec<(String, String)>) {
    let join = |key: &str| {
        if path.is_empty() {
            key.to_owned()
        } else {
            format!("{path}.{key}")
        }
    };
    for required in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(key) = required.as_str()
            && !map.contains_key(key)
        {
            out.push((join(key), MISSING.to_owned()));
        }
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    let preserve = schema
        .get("x-kubernetes-preserve-unknown-fields")
        .and_then(Value::as_bool)
        == Some(true);
    let additional = schema.get("additionalProperties");
    for (key, v) in map {
        match properties.and_then(|p| p.get(key)) {
            Some(sub) => walk(v, sub, &join(key), out),
            None => match additional {
                Some(sub @ Value::Object(_)) => walk(v, sub, &join(key), out),
                Some(Value::Bool(true)) => {}
                _ if preserve || properties.is_none() => {}
                _ => out.push((join(key), "unknown field".to_owned())),
            },
        }
    }
}

/// An example object for `schema`: its required fields (with their
/// defaults, the first enum value, or a placeholder of their type) and its
/// fields that have defaults.
pub fn example(schema: &Value) -> Value {
    if let Some(default) = schema.get("default") {
        return default.clone();
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    match schema
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("object")
    {
        "string" => Value::String("example".to_owned()),
        "integer" => Value::from(1),
        "number" => Value::from(1.0),
        "boolean" => Value::Bool(false),
        "array" => Value::Array(Vec::new()),
        _ => {
            let mut out = Map::new();
            let properties = schema.get("properties").and_then(Value::as_object);
            for required in schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(key) = required.as_str() {
                    let sub = properties
                        .and_then(|p| p.get(key))
                        .cloned()
                        .unwrap_or_default();
                    out.insert(key.to_owned(), example(&sub));
                }
            }
            // Defaulted fields are there too, as the API server defaults them.
            for (key, sub) in properties.into_iter().flatten() {
                if let Some(default) = sub.get("default") {
                    out.entry(key.clone()).or_insert_with(|| default.clone());
                }
            }
            Value::Object(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{example, validate};
    use serde_json::json;

    fn schema() -> serde_json::Value {
        json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "required": ["forProvider"],
                    "properties": {
                        "forProvider": {
                            "type": "object",
                            "required": ["region"],
                            "properties": {
                                "region": {"type": "string"},
                                "size": {"type": "integer"},
                                "tier": {"type": "string", "enum": ["hot", "cold"]},
                                "tags": {"type": "object", "additionalProperties": {"type": "string"}},
                            },
                        },
                    },
                },
            },
        })
    }

    #[test]
    fn bodies_are_judged_field_by_field() {
        let body = json!({
            "apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n"},
            "spec": {"forProvider": {"size": "big", "tier": "warm", "tags": {"a": 1}, "colour": "red"}},
        });
        let found = validate(&body, &schema());
        let paths: Vec<(&str, &str)> = found
            .iter()
            .map(|(p, m)| (p.as_str(), m.as_str()))
            .collect();
        assert!(paths.contains(&("spec.forProvider.region", "required field missing")));
        assert!(paths.contains(&("spec.forProvider.size", "want integer, got string")));
        assert!(paths.contains(&(
            "spec.forProvider.tier",
            "\"warm\" is not one of \"hot\", \"cold\""
        )));
        assert!(paths.contains(&("spec.forProvider.tags.a", "want string, got integer")));
        assert!(paths.contains(&("spec.forProvider.colour", "unknown field")));
        assert_eq!(found.len(), 5, "{found:?}");
        let good = json!({"spec": {"forProvider": {"region": "eu", "size": 3}}});
        assert!(validate(&good, &schema()).is_empty());
    }

    #[test]
    fn an_example_fills_the_required_fields() {
        assert_eq!(example(&schema()), json!({}));
        assert_eq!(
            example(&schema()["properties"]["spec"]),
            json!({"forProvider": {"region": "example"}})
        );
    }
}
