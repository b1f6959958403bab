//! The `StarlarkInput` CRD shipped in `package/input/`, generated from the
//! Rust input type ([`crate::input::StarlarkInput`]) so the two cannot
//! drift. A test compares it with the checked-in file.

use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use crate::input::StarlarkInput;

/// The CRD as a JSON value.
pub fn starlark_input_crd() -> Value {
    let settings = SchemaSettings::openapi3().with(|s| {
        s.inline_subschemas = true;
    });
    let schema = settings
        .into_generator()
        .into_root_schema_for::<StarlarkInput>();
    let mut schema = structural(schema.to_value());
    // The API server owns these; the CRD describes them as usual.
    if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        properties.insert("metadata".to_owned(), json!({"type": "object"}));
        properties.insert(
            "apiVersion".to_owned(),
            json!({"type": "string", "description": "starlark.fn.crossplane.io/v1alpha1"}),
        );
        properties.insert(
            "kind".to_owned(),
            json!({"type": "string", "description": "StarlarkInput"}),
        );
    }
    schema["description"] = json!(
        "StarlarkInput is the input of function-starlark: the Starlark script to run and how to load its modules."
    );
    // Documentation and tooling only: the function itself accepts a spec
    // with just scriptConfigRef.
    schema["required"] = json!(["spec"]);
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "starlarkinputs.starlark.fn.crossplane.io"},
        "spec": {
            "group": "starlark.fn.crossplane.io",
            "names": {
                "categories": ["crossplane"],
                "kind": "StarlarkInput",
                "listKind": "StarlarkInputList",
                "plural": "starlarkinputs",
                "singular": "starlarkinput",
            },
            "scope": "Namespaced",
            "versions": [{
                "name": "v1alpha1",
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": schema},
            }],
        },
    })
}

/// Rewrites a generated schema into a Kubernetes structural schema:
/// nullable options become plain optional fields, and keywords the API
/// server rejects (`$schema`, `title`, `format` of numbers, `nullable`
/// unions) are dropped.
fn structural(v: Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                match k.as_str() {
                    "$schema" | "title" | "nullable" | "format" | "default" => {}
                    "type" => {
                        // ["string", "null"] → "string"
                        let t = match v {
                            Value::Array(types) => types
                                .into_iter()
                                .find(|t| t != "null")
                                .unwrap_or(Value::Null),
                            other => other,
                        };
                        out.insert(k, t);
                    }
                    "additionalProperties" if v == Value::Bool(false) => {}
                    "additionalProperties" if v == Value::Bool(true) => {
                        out.insert(
                            "x-kubernetes-preserve-unknown-fields".to_owned(),
                            Value::Bool(true),
                        );
                    }
                    _ => {
                        out.insert(k, structural(v));
                    }
                }
            }
            // `serde_json::Value` (metadata) generates an empty schema.
            if out.is_empty() {
                out.insert(
                    "x-kubernetes-preserve-unknown-fields".to_owned(),
                    Value::Bool(true),
                );
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.into_iter().map(structural).collect()),
        other => other,
    }
}
