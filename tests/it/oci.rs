//! `load()` from OCI registries, against a real registry (CNCF distribution)
//! on 127.0.0.1: the module behaviours that involve OCI (docs/modules.md).
//! Fixtures are pushed with oci-client; scripts run through the function
//! in-process.
//!
//! Every test uses its own repositories, and its own function (so its own
//! caches), so that the tests can share one registry and run in parallel.

use crate::common;
use crate::common::registry;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use function_sdk_rust::proto::v1::{CredentialData, Credentials, credentials};
use function_starlark::function::StarlarkFunction;
use function_starlark::input::Settings;
use function_starlark::limits::Limits;
use function_starlark::loader::oci::{OciConfig, OciResolver, PullPolicy, Stats};
use function_starlark::metrics::Metrics;
use function_starlark::runner::Runtime;
use prometheus_client::registry::Registry as MetricsRegistry;
use registry::{Artifact, Compression, Registry, TarEntry};
use serde_json::{Value, json};

/// The registry most tests share.
fn shared() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(Registry::start)
}

/// Builds functions with a given OCI configuration and environment.
struct Setup {
    config: OciConfig,
    env: Vec<(String, String)>,
    metrics: Metrics,
}

impl Setup {
    fn new() -> Setup {
        Setup {
            config: OciConfig {
                host_docker_config: None,
                ..OciConfig::default()
            },
            env: Vec::new(),
            metrics: Metrics::default(),
        }
    }

    fn policy(mut self, policy: PullPolicy, ttl: Duration) -> Setup {
        self.config.pull_policy = policy;
        self.config.cache_ttl = ttl;
        self
    }

    fn env(mut self, name: &str, value: &str) -> Setup {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    fn secrets_dir(mut self, dir: PathBuf) -> Setup {
        self.config.secrets_dir = dir;
        self
    }

    fn host_config(mut self, path: PathBuf) -> Setup {
        self.config.host_docker_config = Some(path);
        self
    }

    fn metrics(mut self, metrics: Metrics) -> Setup {
        self.metrics = metrics;
        self
    }

    fn build(self) -> StarlarkFunction {
        let env = self.env;
        let settings = Settings {
            scripts_dir: "/scripts".into(),
            env: Box::new(move |k| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())),
        };
        StarlarkFunction::new(
            Arc::new(Runtime::new(Limits::default(), 64)),
            settings,
            self.metrics,
        )
        .with_oci(Arc::new(OciResolver::new(self.config)))
    }
}

fn function() -> StarlarkFunction {
    Setup::new().build()
}

async fn run(function: &StarlarkFunction, spec: Value) -> Value {
    run_with(function, spec, HashMap::new()).await
}

async fn run_with(
    function: &StarlarkFunction,
    spec: Value,
    credentials: HashMap<String, Credentials>,
) -> Value {
    let mut req = common::request("meta: {tag: t}");
    req.input = Some(common::to_struct(&json!({"spec": spec})));
    req.credentials = credentials;
    common::json(&function.handle(req).await)
}

async fn run_source(function: &StarlarkFunction, source: &str) -> Value {
    run(function, json!({"source": source})).await
}

fn failure(rsp: &Value) -> String {
    common::fatal(rsp).unwrap_or_else(|| panic!("a failure was expected: {rsp}"))
}

fn status(rsp: &Value) -> &Value {
    assert!(
        common::fatal(rsp).is_none(),
        "unexpected failure: {:?}",
        common::fatal(rsp)
    );
    &rsp["desired"]["composite"]["resource"]["status"]
}

fn manifest_gets(registry: &Registry, repository: &str) -> usize {
    count(registry, repository, "GET", "/manifests/")
}

fn count(registry: &Registry, repository: &str, method: &str, part: &str) -> usize {
    registry
        .requests_for(repository)
        .iter()
        .filter(|(m, uri)| m == method && uri.contains(part))
        .count()
}

fn credential(key: &str, config: &str) -> Credentials {
    Credentials {
        source: Some(credentials::Source::CredentialData(CredentialData {
            data: [(key.to_owned(), config.as_bytes().to_vec())].into(),
        })),
    }
}

fn docker_config(entries: &[(&str, &str, &str)]) -> String {
    let auths: serde_json::Map<String, Value> = entries
        .iter()
        .map(|(host, user, password)| {
            (
                (*host).to_owned(),
                json!({"username": user, "password": password}),
            )
        })
        .collect();
    json!({"auths": auths}).to_string()
}

#[tokio::test]
async fn short_forms_need_a_default_registry_and_expand_with_it() {
    // Without a default registry a short form fails the scan; the environment's
    // registry, the spec's (which wins over it) and one written with `oci://` and a
    // trailing slash all expand it.
    let r = shared();
    r.push(
        "sf/lib",
        "v1",
        &Artifact::bundle(&[("x.star", "y = 'from the registry'\n")]),
    )
    .await;
    let source = "load('sf/lib:v1/x.star', 'y')\ndxr['status'] = {'y': y}\n";

    let msg = failure(&run_source(&function(), source).await);
    assert!(
        msg.starts_with("scanning for OCI load targets: load target \"sf/lib:v1/x.star\" requires a default OCI registry")
            && msg.contains("STARLARK_OCI_DEFAULT_REGISTRY")
            && msg.contains("spec.ociDefaultRegistry"),
        "{msg}"
    );
    // An inline module's short form fails the same way, even unloaded.
    let rsp = run(
        &function(),
        json!({"source": "x = 1", "modules": {"unused.star": "load('lib:v1/x.star', 'y')\n"}}),
    )
    .await;
    assert!(failure(&rsp).starts_with("scanning for OCI load targets: "));

    let f = Setup::new()
        .env("STARLARK_OCI_DEFAULT_REGISTRY", &r.host)
        .build();
    assert_eq!(
        status(&run_source(&f, source).await)["y"],
        "from the registry"
    );

    let f = Setup::new()
        .env("STARLARK_OCI_DEFAULT_REGISTRY", "127.0.0.1:1")
        .build();
    let rsp = run(&f, json!({"source": source, "ociDefaultRegistry": r.host})).await;
    assert_eq!(status(&rsp)["y"], "from the registry");

    let rsp = run(
        &function(),
        json!({"source": source, "ociDefaultRegistry": format!("oci://{}/", r.host)}),
    )
    .await;
    assert_eq!(status(&rsp)["y"], "from the registry");
}

#[tokio::test]
async fn an_invalid_default_registry_fails_every_request() {
    // An invalid default registry, from the spec or the environment, fails even a
    // script that loads nothing.
    for registry in ["!!!invalid!!!", "acme", "ghcr.io/Acme"] {
        let rsp = run(
            &function(),
            json!({"source": "x = 1", "ociDefaultRegistry": registry}),
        )
        .await;
        let msg = failure(&rsp);
        assert!(
            msg.starts_with("validating default OCI registry: invalid default OCI registry"),
            "{msg}"
        );
    }
    let f = Setup::new()
        .env("STARLARK_OCI_DEFAULT_REGISTRY", "not a registry!")
        .build();
    assert!(failure(&run_source(&f, "x = 1").await).contains("invalid default OCI registry"));
}

#[tokio::test]
async fn malformed_targets_are_never_fetched_and_fail_as_not_resolved() {
    // Malformed OCI targets are never fetched: the load fails when it runs, with `not
    // resolved` and the parse error.
    let r = shared();
    let rsp = run_source(
        &function(),
        &format!("load('oci://{}/mal/lib/x.star', 'y')\n", r.host),
    )
    .await;
    // With a port and no tag, the port is taken for the tag.
    let msg = failure(&rsp);
    assert!(
        msg.contains("not resolved") && msg.contains("parsing OCI tag reference"),
        "{msg}"
    );
    assert!(r.requests_for("mal/lib").is_empty());
    let rsp = run_source(&function(), "load('oci://ghcr.io/acme/lib/x.star', 'y')\n").await;
    let msg = failure(&rsp);
    assert!(
        msg.contains("OCI module \"oci://ghcr.io/acme/lib/x.star\" not resolved")
            && msg.contains("tag or digest required"),
        "{msg}"
    );
    let rsp = run(
        &function(),
        json!({"source": "load('a:b.star', 'y')\n", "ociDefaultRegistry": r.host}),
    )
    .await;
    let msg = failure(&rsp);
    assert!(
        msg.starts_with("starlark execution failed: ") && msg.contains("not resolved"),
        "{msg}"
    );
}

#[tokio::test]
async fn files_of_bundles_are_loaded_with_their_paths_and_one_fetch() {
    // Nested paths, several files of one bundle fetched once, and gzip and zstd
    // bundles.
    let r = shared();
    r.push(
        "paths/p",
        "v2",
        &Artifact::bundle(&[
            ("apps/v1.star", "api = 'apps/v1'\n"),
            ("helpers.star", "h = 'p'\n"),
        ]),
    )
    .await;
    r.push(
        "paths/q",
        "v1",
        &Artifact::bundle_compressed(&[("helpers.star", "h = 'q'\n")], Compression::Gzip),
    )
    .await;
    r.push(
        "paths/z",
        "v1",
        &Artifact::bundle_compressed(&[("helpers.star", "h = 'z'\n")], Compression::Zstd),
    )
    .await;
    let host = &r.host;
    let source = format!(
        "load('oci://{host}/paths/p:v2/apps/v1.star', 'api')\n\
         load('oci://{host}/paths/p:v2/helpers.star', ph = 'h')\n\
         load('oci://{host}/paths/q:v1/helpers.star', qh = 'h')\n\
         load('oci://{host}/paths/z:v1/helpers.star', zh = 'h')\n\
         dxr['status'] = {{'api': api, 'hs': [ph, qh, zh]}}\n"
    );
    let rsp = run_source(&function(), &source).await;
    assert_eq!(status(&rsp)["api"], "apps/v1");
    assert_eq!(status(&rsp)["hs"], json!(["p", "q", "z"]));
    assert_eq!(manifest_gets(r, "paths/p"), 1);
}

#[tokio::test]
async fn star_imports_work_for_oci_modules() {
    // `*` and namespace imports of an OCI module, which itself loads a package-local
    // sibling.
    let r = shared();
    r.push(
        "star/lib",
        "v1",
        &Artifact::bundle(&[
            (
                "main.star",
                "load('./sibling.star', 'base')\ndef name(x):\n    return base + x\n",
            ),
            ("sibling.star", "base = 'acme-'\n"),
        ]),
    )
    .await;
    let source = format!(
        "load('star/lib:v1/main.star', '*')\nload('oci://{}/star/lib:v1/main.star', ns = '*')\ndxr['status'] = {{'a': name('a'), 'b': ns.name('b')}}\n",
        r.host
    );
    let rsp = run(
        &function(),
        json!({"source": source, "ociDefaultRegistry": r.host}),
    )
    .await;
    assert_eq!(status(&rsp)["a"], "acme-a");
    assert_eq!(status(&rsp)["b"], "acme-b");
}

#[tokio::test]
async fn package_local_loads_stay_in_the_callers_artifact() {
    // `./` loads resolve in the caller's artifact, from nested files too and under a
    // digest; a missing sibling fails resolution.
    let r = shared();
    let files = [
        (
            "main.star",
            "load('./helper.star', 'h')\nload('./meta.star', 'm')\nvalue = h + m\n",
        ),
        ("helper.star", "h = 'helper+'\n"),
        ("meta.star", "m = 'meta'\n"),
        ("apps/v1.star", "load('./meta.star', 'm')\nv1 = m\n"),
    ];
    let digest = r.push("local/pkg", "v1", &Artifact::bundle(&files)).await;
    let host = &r.host;
    let rsp = run_source(
        &function(),
        &format!(
            "load('oci://{host}/local/pkg:v1/main.star', 'value')\nload('oci://{host}/local/pkg:v1/apps/v1.star', 'v1')\ndxr['status'] = {{'v': value, 'v1': v1}}\n"
        ),
    )
    .await;
    assert_eq!(status(&rsp)["v"], "helper+meta");
    assert_eq!(status(&rsp)["v1"], "meta");
    assert_eq!(manifest_gets(r, "local/pkg"), 1);
    // Pinned by digest: the siblings keep the digest.
    let rsp = run_source(
        &function(),
        &format!("load('oci://{host}/local/pkg@{digest}/main.star', 'value')\ndxr['status'] = {{'v': value}}\n"),
    )
    .await;
    assert_eq!(status(&rsp)["v"], "helper+meta");
    // An absent sibling fails resolution, even from a file nobody loads.
    r.push(
        "local/broken",
        "v1",
        &Artifact::bundle(&[
            ("main.star", "x = 1\n"),
            ("unused.star", "load('./absent.star', 'y')\n"),
        ]),
    )
    .await;
    let rsp = run_source(
        &function(),
        &format!("load('oci://{host}/local/broken:v1/main.star', 'x')\n"),
    )
    .await;
    let msg = failure(&rsp);
    assert!(
        msg.starts_with(
            "resolving OCI modules: package-local file \"absent.star\" not found in OCI artifact"
        ),
        "{msg}"
    );
    // A package-local load stays at the artifact's root level: no subdirectory.
    r.push(
        "local/nested",
        "v1",
        &Artifact::bundle(&[
            ("main.star", "load('./lib/x.star', 'x')\n"),
            ("lib/x.star", "x = 1\n"),
        ]),
    )
    .await;
    let rsp = run_source(
        &function(),
        &format!("load('oci://{host}/local/nested:v1/main.star', 'x')\n"),
    )
    .await;
    let msg = failure(&rsp);
    assert!(
        msg.contains(
            "OCI package-local load \"./lib/x.star\" must be a flat sibling (no subdirectories)"
        ),
        "{msg}"
    );
}

#[tokio::test]
async fn artifacts_load_artifacts_before_evaluation() {
    // The OCI loads of OCI modules (explicit and short forms) and of unused inline
    // modules are resolved before the run; one artifact reached along two paths is not
    // a cycle (docs/departures.md, "OCI resolution: real cycles only").
    let r = shared();
    let host = &r.host;
    r.push(
        "trans/b",
        "v1",
        &Artifact::bundle(&[("b.star", "b = 'B'\n")]),
    )
    .await;
    r.push(
        "trans/d",
        "v1",
        &Artifact::bundle(&[("d.star", "d = 'D'\n")]),
    )
    .await;
    r.push(
        "trans/a",
        "v1",
        &Artifact::bundle(&[(
            "a.star",
            &format!("load('oci://{host}/trans/b:v1/b.star', 'b')\nload('trans/d:v1/d.star', 'd')\na = 'A' + b + d\n"),
        )]),
    )
    .await;
    let rsp = run(
        &function(),
        json!({
            "source": format!("load('oci://{host}/trans/a:v1/a.star', 'a')\nload('oci://{host}/trans/b:v1/b.star', 'b')\ndxr['status'] = {{'a': a, 'b': b}}\n"),
            "ociDefaultRegistry": host,
        }),
    )
    .await;
    // The main script loads A and B, A loads B too: one artifact at two
    // levels is no cycle here.
    assert_eq!(status(&rsp)["a"], "ABD");
    assert_eq!(status(&rsp)["b"], "B");

    r.push(
        "trans/inl",
        "v1",
        &Artifact::bundle(&[("i.star", "i = 1\n")]),
    )
    .await;
    let rsp = run(
        &function(),
        json!({
            "source": "dxr['status'] = {'ok': True}\n",
            "modules": {"unused.star": format!("load('oci://{host}/trans/inl:v1/i.star', 'i')\n")},
        }),
    )
    .await;
    assert_eq!(status(&rsp)["ok"], true);
    assert_eq!(manifest_gets(r, "trans/inl"), 1);
}

#[tokio::test]
async fn artifact_cycles_and_deep_chains_are_refused() {
    // A cycle between artifacts is refused; a chain of 11 artifacts (10 levels below
    // the one the script names) resolves, one of 12 does not.
    let r = shared();
    let host = &r.host;
    r.push(
        "cyc/a",
        "v1",
        &Artifact::bundle(&[(
            "a.star",
            &format!("load('oci://{host}/cyc/b:v1/b.star', 'b')\na = b\n"),
        )]),
    )
    .await;
    r.push(
        "cyc/b",
        "v1",
        &Artifact::bundle(&[(
            "b.star",
            &format!("load('oci://{host}/cyc/a:v1/a.star', 'a')\nb = a\n"),
        )]),
    )
    .await;
    let msg = failure(
        &run_source(
            &function(),
            &format!("load('oci://{host}/cyc/a:v1/a.star', 'a')\n"),
        )
        .await,
    );
    assert!(
        msg.starts_with("resolving OCI modules: OCI dependency cycle detected: "),
        "{msg}"
    );
    // chain/l12-0 → ... → chain/l12-11: twelve artifacts, one too many.
    for length in [11usize, 12] {
        for i in 0..length {
            let text = if i + 1 == length {
                "v = 0\n".to_owned()
            } else {
                format!(
                    "load('oci://{host}/chain/l{length}-{}:v1/m.star', w = 'v')\nv = w + 1\n",
                    i + 1
                )
            };
            r.push(
                &format!("chain/l{length}-{i}"),
                "v1",
                &Artifact::bundle(&[("m.star", &text)]),
            )
            .await;
        }
    }
    let rsp = run_source(
        &function(),
        &format!("load('oci://{host}/chain/l11-0:v1/m.star', 'v')\ndxr['status'] = {{'v': v}}\n"),
    )
    .await;
    assert_eq!(status(&rsp)["v"], 10.0);
    let msg = failure(
        &run_source(
            &function(),
            &format!("load('oci://{host}/chain/l12-0:v1/m.star', 'v')\n"),
        )
        .await,
    );
    assert_eq!(
        msg,
        "resolving OCI modules: OCI dependency resolution exceeded maximum depth (10)"
    );
}

#[tokio::test]
async fn artifacts_must_be_module_artifacts() {
    // The module artifact type is required, as `artifactType` or as the config's media
    // type; per-file artifacts work; an artifact without layers, or without the
    // requested file, fails.
    let r = shared();
    let host = &r.host;
    let files = [("m.star", "m = 'ok'\n")];
    r.push(
        "kind/wrong",
        "v1",
        &Artifact::bundle(&files).with_type("application/vnd.oci.image.config.v1+json"),
    )
    .await;
    r.push(
        "kind/perfile",
        "v1",
        &Artifact::per_file(&[("m.star", "m = 'per-file'\n"), ("README.md", "# hi\n")]),
    )
    .await;
    r.push(
        "kind/old",
        "v1",
        &Artifact::bundle(&files).typed_by_config(),
    )
    .await;
    let load = |repo: &str| {
        format!("load('oci://{host}/{repo}:v1/m.star', 'm')\ndxr['status'] = {{'m': m}}\n")
    };

    let msg = failure(&run_source(&function(), &load("kind/wrong")).await);
    assert!(
        msg.starts_with("resolving OCI modules: unexpected artifact type \"application/vnd.oci.image.config.v1+json\""),
        "{msg}"
    );
    assert_eq!(
        status(&run_source(&function(), &load("kind/perfile")).await)["m"],
        "per-file"
    );
    assert_eq!(
        status(&run_source(&function(), &load("kind/old")).await)["m"],
        "ok"
    );

    r.push(
        "kind/empty",
        "v1",
        &Artifact::bundle(&files).without_layers(),
    )
    .await;
    let msg = failure(&run_source(&function(), &load("kind/empty")).await);
    assert_eq!(
        msg,
        format!("resolving OCI modules: OCI artifact {host}/kind/empty:v1 has no layers")
    );

    let msg = failure(
        &run_source(
            &function(),
            &format!("load('oci://{host}/kind/old:v1/nope.star', 'm')\n"),
        )
        .await,
    );
    assert_eq!(
        msg,
        format!(
            "resolving OCI modules: file \"nope.star\" not found in OCI artifact {host}/kind/old:v1; available files: m.star"
        )
    );
}

#[tokio::test]
async fn bundles_are_checked_for_paths_sizes_and_counts() {
    // `..` in a tar path or a layer title rejects the artifact; other tar entries are
    // ignored; the 1 MiB file size and the 1000-file count are enforced.
    let r = shared();
    let host = &r.host;
    let load = |repo: &str, file: &str| {
        format!("load('oci://{host}/{repo}:v1/{file}', 'x')\ndxr['status'] = {{'x': x}}\n")
    };
    for (repo, name) in [
        ("lim/trav1", "../../etc/passwd.star"),
        ("lim/trav2", "apps/../../x.star"),
    ] {
        r.push(
            repo,
            "v1",
            &Artifact::bundle(&[("x.star", "x = 1\n"), (name, "x = 2\n")]),
        )
        .await;
        let msg = failure(&run_source(&function(), &load(repo, "x.star")).await);
        assert!(
            msg.starts_with(&format!(
                "resolving OCI modules: path traversal detected in tar entry \"{name}\""
            )),
            "{msg}"
        );
    }
    r.push(
        "lim/trav3",
        "v1",
        &Artifact::per_file(&[("x.star", "x = 1\n"), ("a/../../y.star", "y = 1\n")]),
    )
    .await;
    let msg = failure(&run_source(&function(), &load("lim/trav3", "x.star")).await);
    assert!(
        msg.contains("path traversal detected in layer title"),
        "{msg}"
    );

    // Other entries are ignored; 150 nested files are fine.
    let mut entries = vec![
        TarEntry::dir("d0/"),
        TarEntry::file("README.md", b"not a module"),
        TarEntry::symlink("link.star", "d0/f0.star"),
    ];
    for i in 0..150 {
        entries.push(TarEntry::file(
            &format!("d{}/f{i}.star", i % 10),
            format!("x = {i}\n").as_bytes(),
        ));
    }
    r.push(
        "lim/many",
        "v1",
        &Artifact::bundle_entries(&entries, Compression::Gzip),
    )
    .await;
    assert_eq!(
        status(&run_source(&function(), &load("lim/many", "d9/f149.star")).await)["x"],
        149.0
    );
    let msg = failure(&run_source(&function(), &load("lim/many", "link.star")).await);
    assert!(
        msg.contains("file \"link.star\" not found in OCI artifact"),
        "{msg}"
    );

    let exact = format!("x = 1\n{}", "#".repeat((1 << 20) - 6));
    assert_eq!(exact.len(), 1 << 20);
    r.push("lim/exact", "v1", &Artifact::bundle(&[("x.star", &exact)]))
        .await;
    assert_eq!(
        status(&run_source(&function(), &load("lim/exact", "x.star")).await)["x"],
        1.0
    );
    let over = format!("{exact}#");
    r.push("lim/over", "v1", &Artifact::bundle(&[("x.star", &over)]))
        .await;
    let msg = failure(&run_source(&function(), &load("lim/over", "x.star")).await);
    assert_eq!(
        msg,
        format!(
            "resolving OCI modules: file x.star in {host}/lim/over:v1 exceeds maximum size (1048576 bytes)"
        )
    );
    r.push(
        "lim/overfile",
        "v1",
        &Artifact::per_file(&[("x.star", &over)]),
    )
    .await;
    let msg = failure(&run_source(&function(), &load("lim/overfile", "x.star")).await);
    assert!(
        msg.contains("exceeds maximum size (1048576 bytes)"),
        "{msg}"
    );

    let names: Vec<String> = (0..1001).map(|i| format!("f{i}.star")).collect();
    let files: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "x = 1\n")).collect();
    r.push("lim/count", "v1", &Artifact::bundle(&files)).await;
    let msg = failure(&run_source(&function(), &load("lim/count", "f0.star")).await);
    assert_eq!(
        msg,
        format!(
            "resolving OCI modules: OCI artifact {host}/lim/count:v1 exceeds maximum file count (1000)"
        )
    );
}

#[tokio::test]
async fn an_unreachable_registry_is_a_fetch_error() {
    // A registry that refuses connections fails the fetch.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap();
    let rsp = run_source(
        &function(),
        &format!("load('oci://127.0.0.1:{port}/x/y:v1/m.star', 'm')\n"),
    )
    .await;
    let msg = failure(&rsp);
    assert!(
        msg.starts_with(&format!(
            "resolving OCI modules: fetching OCI artifact 127.0.0.1:{port}/x/y:v1: "
        )) && msg.to_lowercase().contains("connection refused"),
        "{msg}"
    );
}

#[tokio::test]
async fn if_not_present_fetches_a_tag_once() {
    // Under `IfNotPresent` a tag is not asked for again, even after it was pushed anew.
    let r = shared();
    r.push(
        "cache/inp",
        "v1",
        &Artifact::bundle(&[("m.star", "m = 1\n")]),
    )
    .await;
    let f = function();
    let source = format!(
        "load('oci://{}/cache/inp:v1/m.star', 'm')\ndxr['status'] = {{'m': m}}\n",
        r.host
    );
    assert_eq!(status(&run_source(&f, &source).await)["m"], 1.0);
    let before = r.requests_for("cache/inp").len();
    r.push(
        "cache/inp",
        "v1",
        &Artifact::bundle(&[("m.star", "m = 2\n")]),
    )
    .await;
    let after_push = r.requests_for("cache/inp").len();
    assert!(after_push > before);
    assert_eq!(status(&run_source(&f, &source).await)["m"], 1.0);
    assert_eq!(
        r.requests_for("cache/inp").len(),
        after_push,
        "no registry call"
    );
    assert_eq!(f.oci().stats().fetches, 1);
}

#[tokio::test]
async fn always_revalidates_after_the_ttl() {
    // Under `Always`, with a TTL of 1 s: no call within the TTL; after it, a HEAD, and
    // a fetch only when the digest changed.
    let r = shared();
    let repo = "cache/always";
    r.push(repo, "v1", &Artifact::bundle(&[("m.star", "m = 1\n")]))
        .await;
    let f = Setup::new()
        .policy(PullPolicy::Always, Duration::from_secs(1))
        .build();
    let source = format!(
        "load('oci://{}/{repo}:v1/m.star', 'm')\ndxr['status'] = {{'m': m}}\n",
        r.host
    );
    assert_eq!(status(&run_source(&f, &source).await)["m"], 1.0);
    let calls = r.requests_for(repo).len();
    // Within the TTL: no call.
    assert_eq!(status(&run_source(&f, &source).await)["m"], 1.0);
    assert_eq!(r.requests_for(repo).len(), calls);
    // Past it: one HEAD; the digest is unchanged, so no GET.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(status(&run_source(&f, &source).await)["m"], 1.0);
    let new: Vec<_> = r.requests_for(repo).split_off(calls);
    assert_eq!(
        new,
        [("HEAD".to_owned(), format!("/v2/{repo}/manifests/v1"))]
    );
    // A new digest: HEAD, then the manifest and its layer.
    r.push(repo, "v1", &Artifact::bundle(&[("m.star", "m = 2\n")]))
        .await;
    let calls = r.requests_for(repo).len();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(status(&run_source(&f, &source).await)["m"], 2.0);
    let new: Vec<_> = r.requests_for(repo).split_off(calls);
    assert_eq!(
        new.iter().filter(|(m, _)| m == "HEAD").count(),
        1,
        "{new:?}"
    );
    assert_eq!(
        new.iter()
            .filter(|(m, u)| m == "GET" && u.contains("/manifests/"))
            .count(),
        1,
        "{new:?}"
    );
}

#[tokio::test]
async fn always_with_ttl_zero_revalidates_every_request() {
    // TTL 0 under `Always` revalidates on every request: the first request fetches,
    // each later one sends a HEAD (a departure: the reference never revalidates
    // then).
    let r = shared();
    let repo = "cache/zero";
    r.push(repo, "v1", &Artifact::bundle(&[("m.star", "m = 1\n")]))
        .await;
    let pushed = (
        count(r, repo, "HEAD", "/manifests/v1"),
        manifest_gets(r, repo),
    );
    let f = Setup::new()
        .policy(PullPolicy::Always, Duration::ZERO)
        .build();
    let source = format!("load('oci://{}/{repo}:v1/m.star', 'm')\n", r.host);
    for _ in 0..3 {
        assert!(common::fatal(&run_source(&f, &source).await).is_none());
    }
    assert_eq!(count(r, repo, "HEAD", "/manifests/v1"), pushed.0 + 2);
    assert_eq!(manifest_gets(r, repo), pushed.1 + 1);
}

#[tokio::test]
async fn stale_content_is_served_when_the_registry_is_down() {
    // When revalidation fails, the cached content is served.
    let r = Registry::start();
    r.push(
        "stale/m",
        "v1",
        &Artifact::bundle(&[("m.star", "m = 'cached'\n")]),
    )
    .await;
    let f = Setup::new()
        .policy(PullPolicy::Always, Duration::ZERO)
        .build();
    let source = format!(
        "load('oci://{}/stale/m:v1/m.star', 'm')\ndxr['status'] = {{'m': m}}\n",
        r.host
    );
    assert_eq!(status(&run_source(&f, &source).await)["m"], "cached");
    drop(r);
    assert_eq!(status(&run_source(&f, &source).await)["m"], "cached");
    let stats = f.oci().stats();
    assert_eq!((stats.heads, stats.fetches), (1, 2));
}

#[tokio::test]
async fn cached_digests_are_never_fetched_again() {
    // Content pinned by a cached digest is never fetched again, even under `Always`
    // with TTL 0.
    let r = shared();
    let digest = r
        .push(
            "cache/digest",
            "v1",
            &Artifact::bundle(&[("m.star", "m = 1\n")]),
        )
        .await;
    let f = Setup::new()
        .policy(PullPolicy::Always, Duration::ZERO)
        .build();
    let source = format!(
        "load('oci://{}/cache/digest@{digest}/m.star', 'm')\n",
        r.host
    );
    assert!(common::fatal(&run_source(&f, &source).await).is_none());
    let calls = r.requests_for("cache/digest").len();
    assert!(common::fatal(&run_source(&f, &source).await).is_none());
    assert_eq!(r.requests_for("cache/digest").len(), calls);
}

#[tokio::test]
async fn requests_without_oci_targets_never_build_credentials_or_call_a_registry() {
    // Without OCI targets, even broken credential settings are never read and the
    // resolve-duration metric is not recorded; with OCI targets it is, failures
    // included.
    let mut metrics_registry = MetricsRegistry::default();
    let metrics = Metrics::register(&mut metrics_registry);
    let f = Setup::new().metrics(metrics).build();
    let rsp = run_with(
        &f,
        json!({
            "source": "dxr['status'] = {'ok': True}\n",
            "dockerConfigSecret": "../broken",
            "dockerConfigCredential": "broken",
        }),
        [("broken".to_owned(), credential("config.json", "not json"))].into(),
    )
    .await;
    assert_eq!(status(&rsp)["ok"], true);
    assert_eq!(f.oci().stats(), Stats::default());
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &metrics_registry).unwrap();
    assert!(
        !text.contains("oci_resolve_duration_seconds_count"),
        "{text}"
    );
    // With OCI targets it is recorded, failures included.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap();
    let rsp = run_source(
        &f,
        &format!("load('oci://127.0.0.1:{port}/x/y:v1/m.star', 'm')\n"),
    )
    .await;
    assert!(common::fatal(&rsp).is_some());
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &metrics_registry).unwrap();
    assert!(
        text.contains(
            "function_starlark_oci_resolve_duration_seconds_count{script=\"composition.star\"} 1"
        ),
        "{text}"
    );
}

#[tokio::test]
async fn syntax_errors_affect_only_their_own_file() {
    // A main script that does not parse is a compile error; an inline module that does
    // not parse does not stop the main script's OCI loads (a departure: the reference
    // drops them all).
    let r = shared();
    r.push("syn/m", "v1", &Artifact::bundle(&[("m.star", "m = 1\n")]))
        .await;
    let load = format!("load('oci://{}/syn/m:v1/m.star', 'm')\n", r.host);
    let msg = failure(&run_source(&function(), &format!("{load}x = (\n")).await);
    assert!(
        msg.starts_with("starlark execution failed: starlark compilation error: "),
        "{msg}"
    );
    let rsp = run(
        &function(),
        json!({"source": format!("{load}dxr['status'] = {{'m': m}}\n"), "modules": {"bad.star": "x = ("}}),
    )
    .await;
    assert_eq!(status(&rsp)["m"], 1.0);
}

#[tokio::test]
async fn oci_modules_reach_the_compositions_local_modules_and_the_stdlib_short_form_uses_the_registry()
 {
    let r = shared();
    let host = &r.host;
    let dir = tempfile::tempdir().unwrap();
    r.push(
        "mix/leaf",
        "v1",
        &Artifact::bundle(&[("leaf.star", "leaf = 'leaf'\n")]),
    )
    .await;
    // An OCI module loading a local name gets the composition's module; a
    // directory module reached that way may load OCI modules itself.
    std::fs::write(
        dir.path().join("fromdir.star"),
        format!("load('oci://{host}/mix/leaf:v1/leaf.star', 'leaf')\nd = 'dir+' + leaf\n"),
    )
    .unwrap();
    r.push(
        "mix/top",
        "v1",
        &Artifact::bundle(&[(
            "top.star",
            "load('helpers.star', 'h')\nload('fromdir.star', 'd')\nt = h + d\n",
        )]),
    )
    .await;
    let rsp = run(
        &function(),
        json!({
            "source": format!("load('oci://{host}/mix/top:v1/top.star', 't')\ndxr['status'] = {{'t': t}}\n"),
            "modules": {"helpers.star": "h = 'inline+'\n"},
            "modulePaths": [dir.path()],
        }),
    )
    .await;
    assert_eq!(status(&rsp)["t"], "inline+dir+leaf");
    // With a default registry, stdlib short forms are fetched from it.
    r.push(
        "starlark-stdlib",
        "v1",
        &Artifact::bundle(&[("naming.star", "who = 'published'\n")]),
    )
    .await;
    let rsp = run(
        &function(),
        json!({
            "source": "load('starlark-stdlib:v1/naming.star', 'who')\ndxr['status'] = {'who': who}\n",
            "ociDefaultRegistry": host,
        }),
    )
    .await;
    assert_eq!(status(&rsp)["who"], "published");
}

#[tokio::test]
async fn credentials_come_from_the_request_the_secret_or_the_host() {
    // The request credential, the mounted secret and the host's Docker config are asked
    // in that order; insecure registries get no credentials.
    let r = Registry::start_private("alice", "wonderland");
    r.push(
        "priv/lib",
        "v1",
        &Artifact::bundle(&[("m.star", "m = 'private'\n")]),
    )
    .await;
    let host = r.host.clone();
    let alias = format!("localhost:{}", r.port);
    let source = |h: &str| {
        format!("load('oci://{h}/priv/lib:v1/m.star', 'm')\ndxr['status'] = {{'m': m}}\n")
    };
    let good = docker_config(&[
        (&host, "alice", "wonderland"),
        (&alias, "alice", "wonderland"),
    ]);
    let wrong = docker_config(&[(&host, "alice", "wrong")]);
    let secrets = tempfile::tempdir().unwrap();
    for (name, config) in [("good", &good), ("wrong", &wrong)] {
        std::fs::create_dir(secrets.path().join(name)).unwrap();
        std::fs::write(secrets.path().join(name).join("config.json"), config).unwrap();
    }
    let setup = || Setup::new().secrets_dir(secrets.path().to_path_buf());

    // Anonymous: refused.
    let msg = failure(&run_source(&setup().build(), &source(&host)).await);
    assert!(
        msg.starts_with(&format!(
            "resolving OCI modules: fetching OCI artifact {host}/priv/lib:v1: "
        )),
        "{msg}"
    );

    // The request credential, under either key.
    for key in ["config.json", ".dockerconfigjson"] {
        let rsp = run_with(
            &setup().build(),
            json!({"source": source(&host), "dockerConfigCredential": "regcred"}),
            [("regcred".to_owned(), credential(key, &good))].into(),
        )
        .await;
        assert_eq!(status(&rsp)["m"], "private", "{key}");
    }
    // A missing credential, or one with neither key: the chain goes on to the secret.
    for credentials in [
        HashMap::new(),
        [("regcred".to_owned(), credential("token", &good))].into(),
    ] {
        let rsp = run_with(
            &setup().build(),
            json!({"source": source(&host), "dockerConfigCredential": "regcred", "dockerConfigSecret": "good"}),
            credentials,
        )
        .await;
        assert_eq!(status(&rsp)["m"], "private");
    }
    // The secret's name comes from the environment as well.
    let f = setup().env("STARLARK_DOCKER_CONFIG_SECRET", "good").build();
    assert_eq!(
        status(&run_source(&f, &source(&host)).await)["m"],
        "private"
    );
    // Unusable secret names are ignored: anonymous, refused by the registry.
    for secret in ["../good", "missing"] {
        let rsp = run(
            &setup().build(),
            json!({"source": source(&host), "dockerConfigSecret": secret}),
        )
        .await;
        let msg = failure(&rsp);
        assert!(
            msg.starts_with("resolving OCI modules: fetching OCI artifact"),
            "{secret}: {msg}"
        );
    }
    // The request credential wins over the secret.
    let rsp = run_with(
        &setup().build(),
        json!({"source": source(&host), "dockerConfigCredential": "regcred", "dockerConfigSecret": "wrong"}),
        [("regcred".to_owned(), credential("config.json", &good))].into(),
    )
    .await;
    assert_eq!(status(&rsp)["m"], "private");
    let rsp = run_with(
        &setup().build(),
        json!({"source": source(&host), "dockerConfigCredential": "regcred", "dockerConfigSecret": "good"}),
        [("regcred".to_owned(), credential("config.json", &wrong))].into(),
    )
    .await;
    assert!(
        common::fatal(&rsp).is_some(),
        "the request credential is the one sent"
    );
    // The host's Docker config is the last source.
    let host_config = secrets.path().join("good").join("config.json");
    let f = setup().host_config(host_config.clone()).build();
    assert_eq!(
        status(&run_source(&f, &source(&host)).await)["m"],
        "private"
    );
    // Insecure registries never get credentials; the others in the same
    // request do.
    let f = setup().host_config(host_config).build();
    let insecure = json!([alias]);
    let rsp = run(
        &f,
        json!({"source": source(&host), "ociInsecureRegistries": insecure}),
    )
    .await;
    assert_eq!(status(&rsp)["m"], "private");
    let rsp = run(
        &f,
        json!({"source": source(&alias), "ociInsecureRegistries": insecure}),
    )
    .await;
    let msg = failure(&rsp);
    assert!(
        msg.starts_with(&format!(
            "resolving OCI modules: fetching OCI artifact {alias}/priv/lib:v1: "
        )),
        "{msg}"
    );
    let rsp = run(&f, json!({"source": source(&alias)})).await;
    assert_eq!(status(&rsp)["m"], "private");
}
