//! The examples of `shared/spec/go-0.11.1.md` (what the Go function gained
//! after 0.11.0), each run the two ways a user runs a script: over gRPC
//! against the server on loopback, and through `function-starlark
//! render`. Both must give the spec's result: the composed resources, the
//! results (events), the `ComposedResourcesReady` condition and the
//! fields each example names.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::common;
use crate::support;

/// One example of the spec.
struct Example {
    name: &'static str,
    source: &'static str,
    modules: Value,
    /// Observed composed resources by name.
    observed: Vec<(&'static str, Value)>,
    /// The composed resources written, sorted.
    resources: Vec<&'static str>,
    /// The results besides the closing Normal one, in order.
    results: Vec<(&'static str, &'static str)>,
    /// The `ComposedResourcesReady` condition: status, reason, message.
    readiness: Option<(&'static str, &'static str, &'static str)>,
    /// Fields of composed resources: (resource, dotted path, value).
    fields: Vec<(&'static str, &'static str, Value)>,
}

impl Example {
    fn new(name: &'static str, source: &'static str) -> Example {
        Example {
            name,
            source,
            modules: json!({}),
            observed: Vec::new(),
            resources: Vec::new(),
            results: Vec::new(),
            readiness: None,
            fields: Vec::new(),
        }
    }
}

/// The observed XR: a cluster-scoped composite.
fn xr() -> Value {
    json!({
        "apiVersion": "example.org/v1",
        "kind": "XSpec",
        "metadata": {"name": "spec"},
        "spec": {"users": 0},
    })
}

fn ready_synced(api_version: &str, kind: &str) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": kind,
        "status": {"conditions": [
            {"type": "Ready", "status": "True"},
            {"type": "Synced", "status": "True"},
        ]},
    })
}

fn examples() -> Vec<Example> {
    let mut out = Vec::new();

    let mut e = Example::new(
        "1.5 a skip propagates to its dependents, one condition names both",
        r#"
cluster_ready = False
body = {"apiVersion": "v1", "kind": "ConfigMap"}
db = Resource("db", body, when=When(cluster_ready, "cluster pending", keep_if_exists=False))
Resource("app", body, depends_on=[db])
"#,
    );
    e.results = vec![
        (
            "SEVERITY_WARNING",
            r#"Skipping resource "db": cluster pending"#,
        ),
        (
            "SEVERITY_WARNING",
            r#"Skipping resource "app": depends on skipped "db""#,
        ),
    ];
    e.readiness = Some((
        "False",
        "PendingConditionalResources",
        r#"Pending resources: "db" (cluster pending); "app" (depends on skipped "db")"#,
    ));
    out.push(e);

    let mut e = Example::new(
        "1.5 an optional skip is absent by design and holds nothing back",
        r#"
backups_enabled = False
Resource("backup-schedule", {"apiVersion": "v1", "kind": "ConfigMap"},
    when=When(backups_enabled, "backups disabled by spec", keep_if_exists=False, optional=True))
"#,
    );
    e.results = vec![(
        "SEVERITY_NORMAL",
        r#"Skipping optional resource "backup-schedule": backups disabled by spec"#,
    )];
    out.push(e);

    let mut e = Example::new(
        "1.5 the cliff guard keeps what exists",
        r#"
body = None
Resource("external-dep", body, when=When(body != None, "config unavailable", keep_if_exists=True))
"#,
    );
    e.observed = vec![(
        "external-dep",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dep-1", "resourceVersion": "7"}, "data": {"k": "v"}}),
    )];
    e.resources = vec!["external-dep"];
    e.results = vec![(
        "SEVERITY_WARNING",
        r#"Preserving resource "external-dep": observed body emitted, gated by when=False"#,
    )];
    e.fields = vec![("external-dep", "data.k", json!("v"))];
    out.push(e);

    let mut e = Example::new(
        "2 converged sequencing says so",
        r#"
db = Resource("db", {"apiVersion": "v1", "kind": "Database"})
Resource("app", {"apiVersion": "v1", "kind": "App"}, depends_on=[db])
"#,
    );
    e.observed = vec![("db", ready_synced("v1", "Database"))];
    e.resources = vec!["app", "db", "usage-c2727553"];
    e.readiness = Some(("True", "AllReady", "All sequenced dependencies are ready"));
    // 8: a cluster-scoped composite's Usage is a ClusterUsage.
    e.fields = vec![
        ("usage-c2727553", "kind", json!("ClusterUsage")),
        (
            "usage-c2727553",
            "apiVersion",
            json!("protection.crossplane.io/v1beta1"),
        ),
    ];
    out.push(e);

    let mut e = Example::new(
        "3 labels= merges; no crossplane.io label is injected",
        r#"Resource("cm", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"labels": {"team": "old"}}}, labels={"team": "platform"})"#,
    );
    e.resources = vec!["cm"];
    e.fields = vec![
        ("cm", "metadata.labels.team", json!("platform")),
        (
            "cm",
            "metadata.labels.function-starlark\\.crossplane\\.io/resource-name",
            json!("cm"),
        ),
    ];
    out.push(e);

    let mut e = Example::new(
        "4.6 mutable_struct, as the Go function's end-to-end case uses it",
        r#"
def check(ok, what):
    if not ok:
        fatal("mismatch: " + what)

spec = mutable_struct(region="eastus", sku="Standard"); spec.region = "eu-west-1"; spec.tags = {"env": "prod"}
merged = mutable_struct(apiVersion="nop.crossplane.io/v1alpha1", kind="NopResource") + mutable_struct(metadata={"name": "merged"})
check(str(mutable_struct(b=2, a=1)) == "mutable_struct(a = 1, b = 2)", "str")
check(dir(mutable_struct(z=1, a=2, m=3)) == ["a", "m", "z"], "dir")
Spec = schema("Spec", region=field(type="string", required=True),
              sku=field(type="string", default="Standard", enum=["Standard", "Premium"]), tags=field(type="dict"))
typed = mutable_struct(schema=Spec, region="eastus")
check(typed.sku == "Standard", "default")
typed.sku = "Premium"; typed.sku = None
check(typed.sku == "Standard", "reset")
DefSpec = schema("DefSpec", name=field(type="string"), tier=field(type="string", default="free"))
d3 = mutable_struct(schema=DefSpec, name="test", tier="premium") + mutable_struct(tier=None)
check(d3.tier == "free", "merge default")
Resource("ms-basic", mutable_struct(apiVersion="nop.crossplane.io/v1alpha1", kind="NopResource", spec={"forProvider": {"region": spec.region}}))
Resource("ms-compact", dict.compact(mutable_struct(apiVersion="nop.crossplane.io/v1alpha1", kind="NopResource", extra=None)))
"#,
    );
    e.resources = vec!["ms-basic", "ms-compact"];
    e.fields = vec![("ms-basic", "spec.forProvider.region", json!("eu-west-1"))];
    out.push(e);

    let mut e = Example::new(
        "5.1 inline modules keyed by paths load each other by key",
        r#"
load("lib/naming.star", "resource_name")
load("lib/config.star", "vpc_cidr")
load("lib/tags.star", "standard_tags")
tags = standard_tags("api")
Resource("names", {"apiVersion": "v1", "kind": "ConfigMap", "data": {
    "prod": resource_name("database", "prod"), "bundled": resource_name("database"),
    "cidr": vpc_cidr(), "name": tags["Name"], "count": str(len(tags)),
}})
"#,
    );
    e.modules = json!({
        "lib/config.star": "PREFIX = 'acme'\nENV = 'production'\ndef vpc_cidr():\n    return '10.0.0.0/16'\n",
        "lib/naming.star": "load('lib/config.star', 'PREFIX', 'ENV')\ndef resource_name(name, env = ENV):\n    return '%s-%s-%s' % (PREFIX, name, env)\n",
        "lib/tags.star": "load('lib/config.star', 'ENV')\nload('lib/naming.star', 'resource_name')\ndef standard_tags(name):\n    return {'Name': resource_name(name), 'env': ENV, 'team': 'platform', 'managed-by': 'crossplane'}\n",
    });
    e.resources = vec!["names"];
    e.fields = vec![
        ("names", "data.prod", json!("acme-database-prod")),
        ("names", "data.bundled", json!("acme-database-production")),
        ("names", "data.cidr", json!("10.0.0.0/16")),
        ("names", "data.name", json!("acme-api-production")),
        ("names", "data.count", json!("4")),
    ];
    out.push(e);

    let mut e = Example::new(
        "9 set_xr_status skips None and says whether it wrote",
        r#"
wrote = [set_xr_status("x", None), set_xr_status("a.b", 0)]
Resource("status", {"apiVersion": "v1", "kind": "ConfigMap", "data": {"wrote": str(wrote), "b": str(dxr["status"]["a"]["b"]), "x": str("x" in dxr["status"])}})
"#,
    );
    e.resources = vec!["status"];
    e.fields = vec![
        ("status", "data.wrote", json!("[False, True]")),
        ("status", "data.b", json!("0")),
        ("status", "data.x", json!("False")),
    ];
    out.push(e);

    let mut e = Example::new(
        "10 a provider-kubernetes Object waits for its manifest's conditions",
        r#"
cfg = Resource("cfg", {"apiVersion": "kubernetes.crossplane.io/v1alpha2", "kind": "Object"})
Resource("app", {"apiVersion": "v1", "kind": "App"}, depends_on=[cfg])
"#,
    );
    e.observed = vec![(
        "cfg",
        json!({
            "apiVersion": "kubernetes.crossplane.io/v1alpha2",
            "kind": "Object",
            "status": {
                "conditions": [{"type": "Ready", "status": "True"}, {"type": "Synced", "status": "True"}],
                "atProvider": {"manifest": {"status": {"conditions": [{"type": "Available", "status": "False"}]}}},
            },
        }),
    )];
    e.resources = vec!["cfg", "usage-f7246fdf"];
    e.results = vec![(
        "SEVERITY_WARNING",
        "Creation sequencing: 1 resource(s) deferred: app",
    )];
    e.readiness = Some((
        "False",
        "WaitingForDependencies",
        r#"Waiting on dependencies: "app" ("cfg" nested resource conditions not all True)"#,
    ));
    out.push(e);

    let mut e = Example::new(
        "11 an observed body that cannot be converted fails only where it is read",
        r#"Resource("cm", {"apiVersion": "v1", "kind": "ConfigMap", "data": {"observed": str(len(observed))}})"#,
    );
    e.observed = vec![(
        "big",
        json!({"apiVersion": "v1", "kind": "Thing", "spec": {"n": 1e19}}),
    )];
    e.resources = vec!["cm"];
    e.fields = vec![("cm", "data.observed", json!("1"))];
    out.push(e);

    let mut e = Example::new(
        "12 a top-level name may be bound again",
        r#"
x = 1
x = 2
Resource("cm", {"apiVersion": "v1", "kind": "ConfigMap", "data": {"x": str(x)}})
"#,
    );
    e.resources = vec!["cm"];
    e.fields = vec![("cm", "data.x", json!("2"))];
    out.push(e);

    let mut e = Example::new(
        "1.2 the 0.11.0 keywords keep their result, with one Warning",
        r#"Resource("db-replica", None, when=False, skip_reason="cluster not ready")"#,
    );
    e.results = vec![
        (
            "SEVERITY_WARNING",
            r#"Skipping resource "db-replica": cluster not ready"#,
        ),
        (
            "SEVERITY_WARNING",
            r#"Resource("db-replica") gates with the keywords of function-starlark 0.11.0 (when=False, skip_reason=): write when=When(False, "cluster not ready", keep_if_exists=False) instead"#,
        ),
    ];
    e.readiness = Some((
        "False",
        "PendingConditionalResources",
        r#"Pending resources: "db-replica" (cluster not ready)"#,
    ));
    out.push(e);

    out
}

/// What either way of running an example showed, in one shape.
#[derive(Debug, PartialEq)]
struct Seen {
    resources: Vec<String>,
    results: Vec<(String, String)>,
    readiness: Option<(String, String, String)>,
}

const SUCCESS: &str = "function-starlark: executed successfully";

/// `v` at a dotted path (`\.` is a dot inside a key).
fn at<'a>(v: &'a Value, path: &str) -> &'a Value {
    let mut current = v;
    let escaped = path.replace("\\.", "\u{0}");
    for key in escaped.split('.') {
        current = &current[key.replace('\u{0}', ".")];
    }
    current
}

fn over_grpc(
    rt: &tokio::runtime::Runtime,
    channel: &tonic::transport::Channel,
    e: &Example,
) -> (Seen, Value) {
    let mut request = function_sdk_rust::proto::v1::RunFunctionRequest::default();
    let input = json!({
        "apiVersion": "starlark.fn.crossplane.io/v1alpha1",
        "kind": "StarlarkInput",
        "spec": {"source": e.source, "modules": e.modules},
    });
    request.input = Some(common::to_struct(&input));
    let observed = json!({
        "composite": {"resource": xr()},
        "resources": e.observed.iter().map(|(n, b)| ((*n).to_owned(), json!({"resource": b}))).collect::<serde_json::Map<String, Value>>(),
    });
    request.observed = Some(serde_json::from_value(observed).expect("a State"));
    let bytes = bytes::Bytes::from(prost::Message::encode_to_vec(&request));
    let answer = rt
        .block_on(support::call(channel.clone(), bytes))
        .expect("the server answers");
    let rsp: function_sdk_rust::proto::v1::RunFunctionResponse =
        prost::Message::decode(answer).expect("a response");
    let rsp = common::json(&rsp);
    let resources = rsp["desired"]["resources"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    let results = rsp["results"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            (
                r["severity"].as_str().unwrap_or_default().to_owned(),
                r["message"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .filter(|(_, m)| m != SUCCESS)
        .collect();
    let readiness = rsp["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "ComposedResourcesReady")
        .map(|c| {
            let status = c["status"]
                .as_str()
                .unwrap_or_default()
                .trim_start_matches("STATUS_CONDITION_");
            let status = if status == "TRUE" { "True" } else { "False" };
            (
                status.to_owned(),
                c["reason"].as_str().unwrap_or_default().to_owned(),
                c["message"].as_str().unwrap_or_default().to_owned(),
            )
        });
    let bodies = rsp["desired"]["resources"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v["resource"].clone()))
                .collect::<serde_json::Map<String, Value>>()
        })
        .unwrap_or_default();
    (
        Seen {
            resources,
            results,
            readiness,
        },
        Value::Object(bodies),
    )
}

fn through_render(dir: &Path, e: &Example) -> (Seen, Value) {
    let composition = json!({
        "apiVersion": "apiextensions.crossplane.io/v1",
        "kind": "Composition",
        "metadata": {"name": "spec"},
        "spec": {
            "compositeTypeRef": {"apiVersion": "example.org/v1", "kind": "XSpec"},
            "mode": "Pipeline",
            "pipeline": [{
                "step": "spec",
                "functionRef": {"name": "function-starlark"},
                "input": {
                    "apiVersion": "starlark.fn.crossplane.io/v1alpha1",
                    "kind": "StarlarkInput",
                    "spec": {"source": e.source, "modules": e.modules},
                },
            }],
        },
    });
    let functions = json!({
        "apiVersion": "pkg.crossplane.io/v1beta1",
        "kind": "Function",
        "metadata": {"name": "function-starlark"},
        "spec": {"package": "xpkg.example.org/function-starlark:v0.1.0"},
    });
    let write = |name: &str, docs: &[Value]| {
        let mut text = String::new();
        for d in docs {
            text.push_str("---\n");
            text.push_str(&serde_yaml::to_string(d).expect("YAML"));
        }
        std::fs::write(dir.join(name), text).expect("write");
    };
    write("xr.yaml", &[xr()]);
    write("composition.yaml", &[composition]);
    write("functions.yaml", &[functions]);
    let mut args = vec![
        "render",
        "xr.yaml",
        "composition.yaml",
        "functions.yaml",
        "-r",
    ];
    if !e.observed.is_empty() {
        let observed: Vec<Value> = e
            .observed
            .iter()
            .map(|(name, body)| {
                let mut body = body.clone();
                body["metadata"]["annotations"]["crossplane.io/composition-resource-name"] =
                    json!(name);
                body
            })
            .collect();
        write("observed.yaml", &observed);
        args.extend(["-o", "observed.yaml"]);
    }
    let out = Command::new(env!("CARGO_BIN_EXE_function-starlark"))
        .current_dir(dir)
        .env_remove("FUNCTION_ADDRESS")
        .args(&args)
        .output()
        .expect("function-starlark runs");
    assert!(
        out.status.success(),
        "{}: render failed: {}",
        e.name,
        String::from_utf8_lossy(&out.stderr)
    );
    let docs = common::documents(&String::from_utf8_lossy(&out.stdout));
    let name_of = |d: &Value| {
        d["metadata"]["annotations"]["crossplane.io/composition-resource-name"]
            .as_str()
            .map(str::to_owned)
    };
    let mut resources: Vec<String> = docs.iter().skip(1).filter_map(name_of).collect();
    resources.sort();
    // The step's results, among the reconcile's events: Crossplane names
    // the step in their messages and records them as Normal or Warning.
    let results = docs
        .iter()
        .filter(|d| d["kind"] == "Result")
        .filter_map(|r| {
            let message = r["message"]
                .as_str()
                .unwrap_or_default()
                .strip_prefix("Pipeline step \"spec\": ")?;
            let severity = format!(
                "SEVERITY_{}",
                r["severity"].as_str().unwrap_or_default().to_uppercase()
            );
            Some((severity, message.to_owned()))
        })
        .filter(|(_, m)| m != SUCCESS)
        .collect();
    let readiness = docs[0]["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "ComposedResourcesReady")
        .map(|c| {
            (
                c["status"].as_str().unwrap_or_default().to_owned(),
                c["reason"].as_str().unwrap_or_default().to_owned(),
                c["message"].as_str().unwrap_or_default().to_owned(),
            )
        });
    let bodies = docs
        .iter()
        .skip(1)
        .filter_map(|d| name_of(d).map(|n| (n, d.clone())))
        .collect::<serde_json::Map<String, Value>>();
    (
        Seen {
            resources,
            results,
            readiness,
        },
        Value::Object(bodies),
    )
}

#[test]
fn the_specs_examples_give_the_specs_results_over_grpc_and_through_render() {
    let server = support::start(
        &support::this_binary(),
        &["--metrics-address".to_owned(), String::new()],
    );
    let rt = support::runtime();
    let channel = rt
        .block_on(support::connect(&server.address))
        .expect("the server accepts connections");
    for e in examples() {
        let want = Seen {
            resources: e.resources.iter().map(|s| (*s).to_owned()).collect(),
            results: e
                .results
                .iter()
                .map(|(s, m)| ((*s).to_owned(), (*m).to_owned()))
                .collect(),
            readiness: e
                .readiness
                .map(|(s, r, m)| (s.to_owned(), r.to_owned(), m.to_owned())),
        };
        let dir = tempfile::tempdir().expect("a temporary directory");
        for (way, (seen, bodies)) in [
            ("gRPC", over_grpc(&rt, &channel, &e)),
            ("render", through_render(dir.path(), &e)),
        ] {
            assert_eq!(seen, want, "{} ({way})", e.name);
            for (resource, path, value) in &e.fields {
                assert_eq!(
                    at(&bodies[*resource], path),
                    value,
                    "{} ({way}): {resource} {path}",
                    e.name
                );
            }
        }
    }
    // Over gRPC nothing but the resource-name label is set on a body;
    // `render` adds Crossplane's own, as a control plane would.
    let (_, bodies) = over_grpc(
        &rt,
        &channel,
        &Example::new(
            "labels",
            r#"Resource("cm", {"apiVersion": "v1", "kind": "ConfigMap"})"#,
        ),
    );
    assert_eq!(
        bodies["cm"]["metadata"]["labels"],
        json!({"function-starlark.crossplane.io/resource-name": "cm"})
    );
}
