//! The hot script helpers, in-process: `cargo bench --bench helpers`.
//! Each iteration runs a script that calls the helper 100 times on a
//! resource of about 5 KB, so the per-call cost is the time / 100 minus the
//! `baseline` (the same loop without the call). The decoders read the
//! resource's JSON and YAML text.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use criterion::{Criterion, criterion_group, criterion_main};
use function_starlark::input::Script;
use function_starlark::limits::Limits;
use function_starlark::loader::Sources;
use function_starlark::runner::{Outcome, Runtime};

/// A resource of about 5 KB: a Deployment-like body with 40 env entries.
const RESOURCE: &str = r#"
def make():
    env = [{"name": "VAR_%d" % i, "value": "value-number-%d-with-some-padding" % i} for i in range(40)]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web", "tier": "frontend"},
                     "annotations": {"example.org/owner": "team-shop", "example.org/cost-center": "1234"}},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "registry.example.org/web:1.2.3",
                                                       "env": env, "ports": [{"containerPort": 8080}],
                                                       "resources": {"limits": {"cpu": "1", "memory": "512Mi"}}}]}}},
    }
"#;

fn script(body: &str) -> Script {
    Script {
        filename: "bench.star".to_owned(),
        source: format!(
            "{RESOURCE}\ndef run():\n    r = make()\n    jt = json.encode(r)\n    yt = yaml.encode(r)\n    override = {{\"spec\": {{\"replicas\": 5, \"template\": {{\"metadata\": {{\"labels\": {{\"v\": \"2\"}}}}}}}}}}\n    for i in range(100):\n        {body}\nrun()\n"
        ),
    }
}

fn helpers(c: &mut Criterion) {
    let runtime = Runtime::new(Limits::default(), 16);
    let sources = Sources::default();
    let cases = [
        ("baseline", "x = r"),
        ("get", "x = get(r, \"spec.template.spec.containers\")"),
        ("deep_merge", "x = dict.deep_merge(r, override)"),
        ("json_encode_5kb", "x = json.encode(r)"),
        ("yaml_encode_5kb", "x = yaml.encode(r)"),
        ("json_decode_5kb", "x = json.decode(jt)"),
        ("yaml_decode_5kb", "x = yaml.decode(yt)"),
    ];
    let mut group = c.benchmark_group("helpers_x100");
    for (name, body) in cases {
        let script = script(body);
        let check =
            runtime.run_blocking(&script, &sources, Arc::default(), &AtomicBool::new(false));
        assert!(
            matches!(check.outcome, Outcome::Completed { .. }),
            "{name} must run"
        );
        group.bench_function(name, |b| {
            b.iter(|| {
                runtime.run_blocking(&script, &sources, Arc::default(), &AtomicBool::new(false))
            });
        });
    }
    group.finish();
}

criterion_group!(benches, helpers);
criterion_main!(benches);
