//! The request shapes the load benchmark sends (and the stages benchmark
//! times in-process): the transport floor, composed resources, observed
//! resources read back, and a script over inline modules.

use std::fmt::Write as _;

use bytes::Bytes;
use serde_json::{Value, json};

use super::request;

/// One request shape.
pub struct Workload {
    pub name: &'static str,
    pub request: Bytes,
    /// A fragment every correct answer contains (checked once per server).
    pub expect: &'static str,
}

/// `count` resources with labels from `dict.merge`, a dependency on every
/// tenth, a condition and an XR status field.
fn resources_script(count: usize) -> String {
    format!(
        r#"
team = get(oxr, "spec.team", "platform")
base = {{"team": team, "env": get(oxr, "spec.env", "dev")}}

def compose():
    anchor = None
    for i in range({count}):
        labels = dict.merge(base, {{"example.org/index": str(i)}})
        deps = [anchor] if anchor != None and i % 10 == 0 else []
        r = Resource("bucket-%d" % i, {{
            "apiVersion": "s3.aws.upbound.io/v1beta1",
            "kind": "Bucket",
            "metadata": {{"annotations": {{"example.org/index": str(i)}}}},
            "spec": {{"forProvider": {{"region": oxr.spec.region, "tags": labels}}}},
        }}, labels=labels, depends_on=deps)
        if i % 10 == 0:
            anchor = r

compose()
set_condition("Rendered", "True", "Available", "{count} buckets")
set_xr_status("buckets", {count})
"#
    )
}

/// An observed resource of about 5 KB.
fn observed_body(i: usize) -> Value {
    let tags: serde_json::Map<String, Value> = (0..60)
        .map(|t| {
            (
                format!("tag-{t:02}"),
                json!(format!("value-{i}-{t:02}-abcdefghij")),
            )
        })
        .collect();
    json!({
        "apiVersion": "s3.aws.upbound.io/v1beta1",
        "kind": "Bucket",
        "metadata": {"name": format!("bucket-{i}"), "annotations": {"crossplane.io/composition-resource-name": format!("r{i}")}},
        "spec": {"forProvider": {"region": "eu-west-1", "tags": tags}},
        "status": {
            "atProvider": {"arn": format!("arn:aws:s3:::bucket-{i}"), "id": format!("bucket-{i}")},
            "conditions": [{"type": "Ready", "status": "True", "reason": "Available"}],
        },
    })
}

const OBSERVED_SCRIPT: &str = r#"
def survey():
    ready = 0
    arns = []
    for i in range(200):
        name = "r%d" % i
        if get_observed(name, "status.conditions", []) and get(observed[name], "resource.status.atProvider.id", ""):
            ready += 1
        arns.append(get_observed(name, "status.atProvider.arn", ""))
        tags = get_observed(name, "spec.forProvider.tags", {})
    set_xr_status("ready", ready)
    set_xr_status("arns", len(arns))

survey()
"#;

/// About 5 KB of script over three inline modules.
fn modules_workload() -> (String, Value) {
    let mut naming = String::from("def name(prefix, i):\n    return \"%s-%d\" % (prefix, i)\n\n");
    let mut labels = String::from(
        "def labels(team, i):\n    return {\"team\": team, \"example.org/index\": str(i)}\n\n",
    );
    let mut bodies = String::from(
        "def bucket(region, tags):\n    return {\"apiVersion\": \"s3.aws.upbound.io/v1beta1\", \"kind\": \"Bucket\", \"spec\": {\"forProvider\": {\"region\": region, \"tags\": tags}}}\n\n",
    );
    for k in 0..12 {
        let _ = writeln!(
            naming,
            "def helper_{k}(x):\n    \"\"\"Helper {k} of the naming module.\"\"\"\n    return x + \"-{k}\"\n"
        );
        let _ = writeln!(
            labels,
            "def extra_{k}(d):\n    \"\"\"Adds label {k}.\"\"\"\n    return dict(d, **{{\"l{k}\": \"v{k}\"}})\n"
        );
        let _ = writeln!(
            bodies,
            "def field_{k}(body):\n    \"\"\"Reads field {k}.\"\"\"\n    return get(body, \"spec.forProvider.f{k}\", \"\")\n"
        );
    }
    let mut main = String::from(
        "load(\"naming.star\", \"name\", \"helper_3\")\nload(\"labels.star\", \"labels\", \"extra_1\")\nload(\"bodies.star\", \"bucket\")\n\n",
    );
    for k in 0..20 {
        let _ = writeln!(
            main,
            "# Resource group {k}: a bucket with the team's labels and a derived name.\nb{k} = bucket(oxr.spec.region, extra_1(labels(oxr.spec.team, {k})))\nResource(helper_3(name(\"bucket\", {k})), b{k}, labels=labels(oxr.spec.team, {k}))\n"
        );
    }
    main.push_str("set_condition(\"Rendered\", \"True\", \"Available\", \"20 buckets\")\n");
    let modules = json!({"naming.star": naming, "labels.star": labels, "bodies.star": bodies});
    (main, modules)
}

pub fn workloads() -> Vec<Workload> {
    let observed: Vec<(String, Value)> = (0..200)
        .map(|i| (format!("r{i}"), observed_body(i)))
        .collect();
    let (modules_main, modules) = modules_workload();
    vec![
        Workload {
            name: "floor (x = 1)",
            request: request("x = 1\n", &Value::Null, Vec::new()),
            expect: "",
        },
        Workload {
            name: "10 resources",
            request: request(&resources_script(10), &Value::Null, Vec::new()),
            expect: "bucket-9",
        },
        Workload {
            name: "50 resources",
            request: request(&resources_script(50), &Value::Null, Vec::new()),
            expect: "bucket-49",
        },
        Workload {
            name: "500 resources",
            request: request(&resources_script(500), &Value::Null, Vec::new()),
            expect: "bucket-499",
        },
        Workload {
            name: "200 observed x 5 KB",
            request: request(OBSERVED_SCRIPT, &Value::Null, observed),
            expect: "arns",
        },
        Workload {
            name: "5 KB script, 3 modules",
            request: request(&modules_main, &modules, Vec::new()),
            expect: "bucket-19-3",
        },
    ]
}
