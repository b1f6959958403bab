//! `spec.validateSchemas` through the real handler: the function requires
//! the schema of each composed kind; given the schemas, it warns of every
//! field that does not fit; without the capability it says so once; off
//! (the default) it does nothing the Go implementation would not.

use crate::common;

const SCRIPT: &str = r#"
Resource("bucket", {
    "apiVersion": "s3.aws.upbound.io/v1beta1",
    "kind": "Bucket",
    "spec": {"forProvider": {"region": "eu-west-1", "colour": "red", "tags": {"retention": 30}}},
})
Resource("config", {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}})
"#;

fn bucket_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"forProvider": {
            "type": "object",
            "required": ["region"],
            "properties": {
                "region": {"type": "string"},
                "tags": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        }}}},
    })
}

fn run(validate: Option<bool>, capabilities: &[i32], schemas: bool) -> serde_json::Value {
    // A composite's reconcile, as Crossplane sends it: with the observed XR
    // (without it, a request advertising capabilities is an Operation's).
    let observed = "observed: {composite: {resource: {apiVersion: example.org/v1, kind: XR, metadata: {name: x}}}}";
    let mut request = common::with_source(common::request(observed), SCRIPT);
    let mut spec = serde_json::json!({"source": SCRIPT});
    if let Some(v) = validate {
        spec["validateSchemas"] = serde_json::Value::Bool(v);
    }
    request.input = Some(common::to_struct(&serde_json::json!({
        "apiVersion": "starlark.fn.crossplane.io/v1alpha1",
        "kind": "StarlarkInput",
        "spec": spec,
    })));
    request.meta = Some(function_sdk_rust::proto::v1::RequestMeta {
        tag: String::new(),
        capabilities: capabilities.to_vec(),
    });
    if schemas {
        request.required_schemas.insert(
            "schema/s3.aws.upbound.io/v1beta1/Bucket".to_owned(),
            function_sdk_rust::proto::v1::Schema {
                openapi_v3: Some(common::to_struct(&bucket_schema())),
            },
        );
    }
    common::json(&common::handle(&common::function(), request))
}

fn warnings(rsp: &serde_json::Value) -> Vec<String> {
    rsp["results"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["severity"] == "SEVERITY_WARNING")
        .map(|r| r["message"].as_str().unwrap_or_default().to_owned())
        .collect()
}

const REQUIRED_SCHEMAS: i32 = 5;

#[test]
fn the_composed_kinds_schemas_are_required_and_what_does_not_fit_is_a_warning() {
    let first = run(Some(true), &[REQUIRED_SCHEMAS], false);
    let required = &first["requirements"]["schemas"];
    assert_eq!(
        required["schema/s3.aws.upbound.io/v1beta1/Bucket"]["kind"], "Bucket",
        "{first}"
    );
    assert_eq!(required["schema/v1/ConfigMap"]["apiVersion"], "v1");
    assert!(
        warnings(&first).is_empty(),
        "nothing to validate against yet"
    );

    let second = run(Some(true), &[REQUIRED_SCHEMAS], true);
    let got = warnings(&second);
    assert!(
        got.contains(&"validateSchemas: Resource \"bucket\" (Bucket): spec.forProvider.colour: unknown field".to_owned()),
        "{got:?}"
    );
    assert!(
        got.contains(&"validateSchemas: Resource \"bucket\" (Bucket): spec.forProvider.tags.retention: want string, got integer".to_owned()),
        "{got:?}"
    );
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(
        second["requirements"], first["requirements"],
        "the requirements are stable"
    );
}

#[test]
fn without_the_capability_one_warning_says_so_and_off_changes_nothing() {
    let without = run(Some(true), &[], true);
    let got = warnings(&without);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].contains("does not advertise the required-schemas capability"));
    for off in [None, Some(false)] {
        let rsp = run(off, &[REQUIRED_SCHEMAS], true);
        assert!(warnings(&rsp).is_empty(), "{rsp}");
        assert!(
            rsp.get("requirements")
                .is_none_or(|r| r.get("schemas").is_none()),
            "{rsp}"
        );
    }
}
