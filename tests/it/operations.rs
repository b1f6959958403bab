//! Scripts run by Crossplane's Operations: a request with no observed
//! composite from a Crossplane that advertises its capabilities. The
//! watched resource is `watched`, the step's output is `output`, desired
//! resources are applied as they are, and what only a composite has is
//! reported by a Warning rather than dropped.

use serde_json::Value;

use crate::common;

/// What Crossplane 2 advertises on every request.
const META: &str = "meta:
  tag: t
  capabilities: [CAPABILITY_CAPABILITIES, CAPABILITY_REQUIRED_RESOURCES, CAPABILITY_CREDENTIALS, CAPABILITY_CONDITIONS, CAPABILITY_REQUIRED_SCHEMAS]
";

/// A WatchOperation's request: the Secret that changed.
fn watch_request() -> String {
    format!(
        "{META}requiredResources:
  ops.crossplane.io/watched-resource:
    items:
      - resource:
          apiVersion: v1
          kind: Secret
          metadata: {{name: db-password, namespace: shop}}
          type: Opaque
"
    )
}

fn run(source: &str, request: &str) -> Value {
    common::json(&common::run(source, request))
}

fn messages(rsp: &Value, severity: &str) -> Vec<String> {
    rsp["results"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["severity"] == severity)
        .filter_map(|r| r["message"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn a_watch_operation_reads_the_watched_resource_and_writes_output_and_resources() {
    let rsp = run(
        r#"
secret = watched
output["rotated"] = secret.metadata.name
output["namespace"] = secret.metadata.namespace
same = get_extra_resource("ops.crossplane.io/watched-resource")
output["same"] = same.metadata.name == secret.metadata.name
Resource("marker", {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "rotated-" + secret.metadata.name, "namespace": "shop"},
    "data": {"secret": secret.metadata.name},
})
"#,
        &watch_request(),
    );
    assert_eq!(common::fatal(&rsp), None, "{rsp:#}");
    assert_eq!(
        rsp["output"],
        serde_json::json!({"rotated": "db-password", "namespace": "shop", "same": true})
    );
    let marker = &rsp["desired"]["resources"]["marker"]["resource"];
    assert_eq!(marker["metadata"]["name"], "rotated-db-password");
    assert_eq!(marker["data"]["secret"], "db-password");
    assert!(
        rsp["desired"]["composite"].is_null(),
        "an Operation has no composite to desire: {rsp:#}"
    );
    assert!(messages(&rsp, "SEVERITY_WARNING").is_empty(), "{rsp:#}");
    assert_eq!(
        messages(&rsp, "SEVERITY_NORMAL"),
        ["function-starlark: executed successfully"]
    );
}

#[test]
fn without_a_watched_resource_watched_is_none_and_output_may_stay_empty() {
    let rsp = run(
        r#"
if watched != None:
    fail("watched should be None in a CronOperation")
"#,
        META,
    );
    assert_eq!(common::fatal(&rsp), None, "{rsp:#}");
    assert!(
        rsp["output"].is_null(),
        "no output when none was set: {rsp:#}"
    );
}

#[test]
fn a_resource_without_a_name_is_a_fatal_naming_it() {
    let rsp = run(
        r#"Resource("report", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "ops"}})"#,
        META,
    );
    let fatal = common::fatal(&rsp).expect("a Fatal result");
    assert!(
        fatal.contains(r#"Resource "report" has no metadata.name"#),
        "{fatal}"
    );
    assert!(fatal.contains("give it a name"), "{fatal}");
}

#[test]
fn a_failing_script_fails_the_operation_with_its_position() {
    let rsp = run("x = 1\ny = {}[\"missing\"]\n", META);
    let fatal = common::fatal(&rsp).expect("a Fatal result");
    assert!(fatal.contains(":2:"), "the line of the error: {fatal}");
    assert!(fatal.contains("missing"), "{fatal}");
    let rsp = run(r#"fatal("the backup bucket is gone")"#, META);
    assert_eq!(
        common::fatal(&rsp).as_deref(),
        Some("the backup bucket is gone")
    );
}

#[test]
fn what_only_a_composite_has_is_reported_not_dropped() {
    let rsp = run(
        r#"
set_xr_status("phase", "done")
set_condition("Backed", "True", "Done", "backed up")
set_connection_details({"password": "x"})
set_composite_ready(True)
set_response_ttl("30s")
a = Resource("a", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})
Resource("b", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}, depends_on=[a])
emit_event("Normal", "backed up")
"#,
        META,
    );
    assert_eq!(common::fatal(&rsp), None, "{rsp:#}");
    let warnings = messages(&rsp, "SEVERITY_WARNING");
    for what in [
        "dxr (and set_xr_status)",
        "set_condition",
        "set_connection_details",
        "depends_on",
        "set_composite_ready",
        "set_response_ttl",
    ] {
        assert!(
            warnings.iter().any(
                |w| w.starts_with(what) && w.contains("an Operation has no composite resource")
            ),
            "no Warning for {what}: {warnings:#?}"
        );
    }
    // Both resources are applied, at once, without Usages.
    let resources = rsp["desired"]["resources"].as_object().unwrap();
    let mut names: Vec<&String> = resources.keys().collect();
    names.sort();
    assert_eq!(names, ["a", "b"]);
    assert!(rsp["conditions"].is_null(), "{rsp:#}");
    assert!(messages(&rsp, "SEVERITY_NORMAL").contains(&"backed up".to_owned()));
}

#[test]
fn a_composition_ignores_output_and_a_request_without_capabilities_is_a_composition() {
    let composite = "observed:
  composite:
    resource: {apiVersion: example.org/v1, kind: XR, metadata: {name: x}}
";
    let source = r#"
output["ignored"] = True
Resource("cm", {"apiVersion": "v1", "kind": "ConfigMap"})
"#;
    // A composite's reconcile: output is Crossplane's to discard, and
    // unnamed resources get the names Crossplane generates.
    let rsp = run(source, &format!("{META}{composite}"));
    assert_eq!(common::fatal(&rsp), None, "{rsp:#}");
    assert!(rsp["output"].is_null(), "{rsp:#}");
    // A hand-written request with nothing observed runs as a composition.
    let rsp = run(source, "{}");
    assert_eq!(common::fatal(&rsp), None, "{rsp:#}");
    assert!(rsp["output"].is_null(), "{rsp:#}");
}

#[test]
fn loaded_modules_see_output_read_only() {
    let rsp = common::run_input(
        r#"
load("lib.star", "note")
note()
"#,
        serde_json::json!({"lib.star": "def note():\n    output[\"from\"] = \"module\"\n"}),
    );
    // The module's `output` is its own read-only view, as with `context`.
    let fatal = common::fatal(&common::json(&rsp)).expect("a Fatal result");
    assert!(
        fatal.contains("lib.star:2:") && fatal.contains("Immutable"),
        "{fatal}"
    );
}
