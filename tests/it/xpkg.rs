//! The package a Crossplane user installs, as `package/build.sh` built it
//! (`scripts/test.sh` runs the script first): pushed to a registry on
//! loopback and pulled back with crane, its metadata and input CRD read,
//! its runtime image's settings checked, and the binary inside it taken
//! out and asked one RunFunction.
//!
//! Without a built package the test reports that it was skipped; under
//! `CI=true` (or `PACKAGE_REQUIRED=1`) that is a failure.

use crate::common;
use crate::common::registry;

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use function_sdk_rust::proto::v1::Severity;
use function_sdk_rust::proto::v1::function_runner_service_client::FunctionRunnerServiceClient;
use registry::Registry;

fn tool(name: &str) -> PathBuf {
    let gopath = Command::new("go")
        .args(["env", "GOPATH"])
        .output()
        .expect("go env GOPATH");
    PathBuf::from(String::from_utf8_lossy(&gopath.stdout).trim())
        .join("bin")
        .join(name)
}

fn crane(args: &[&str]) -> Vec<u8> {
    let out = Command::new(tool("crane"))
        .args(args)
        .output()
        .expect("crane runs");
    assert!(
        out.status.success(),
        "crane {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn the_package_installs_from_a_registry_and_its_binary_serves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let package = root.join("target/package/function-starlark.xpkg");
    if !package.exists() {
        let required = std::env::var("CI").as_deref() == Ok("true")
            || std::env::var_os("PACKAGE_REQUIRED").is_some();
        assert!(
            !required,
            "target/package/function-starlark.xpkg is missing: package/build.sh did not run"
        );
        eprintln!("SKIPPED: no package built (run package/build.sh)");
        return;
    }
    let registry = Registry::start();
    let reference = format!("{}/crossplane/function-starlark:v0.1.0", registry.host);
    crane(&["push", "--insecure", package.to_str().unwrap(), &reference]);

    // The runtime settings Crossplane starts the function with.
    let config: serde_json::Value =
        serde_json::from_slice(&crane(&["config", "--insecure", &reference])).expect("JSON");
    let c = &config["config"];
    assert_eq!(
        c["Entrypoint"],
        serde_json::json!(["/function-starlark"]),
        "{config}"
    );
    assert_eq!(c["User"], "65532:65532", "{config}");
    assert!(c["ExposedPorts"].get("9443/tcp").is_some(), "{config}");
    assert_eq!(config["os"], "linux");
    assert_eq!(config["architecture"], "amd64");

    // The image's files: the package metadata and the binary.
    let dir = tempfile::tempdir().expect("a directory");
    let export = dir.path().join("fs.tar");
    let tarball = crane(&["export", "--insecure", &reference, "-"]);
    std::fs::write(&export, tarball).expect("the export is written");
    let mut archive = tar::Archive::new(std::fs::File::open(&export).expect("the export"));
    let mut package_yaml = String::new();
    let rootfs = dir.path().join("rootfs");
    std::fs::create_dir(&rootfs).expect("a directory for the image's files");
    for entry in archive.entries().expect("a tar archive") {
        let mut entry = entry.expect("an entry");
        let path = entry.path().expect("a path").to_string_lossy().into_owned();
        if path.trim_start_matches("./").trim_start_matches('/') == "package.yaml" {
            entry
                .read_to_string(&mut package_yaml)
                .expect("package.yaml is text");
        } else {
            entry.unpack_in(&rootfs).expect("the image's files unpack");
        }
    }
    let binary = rootfs.join("function-starlark");
    let documents = common::documents(&package_yaml);
    let kinds: Vec<(&str, &str)> = documents
        .iter()
        .map(|d| {
            (
                d["kind"].as_str().unwrap_or_default(),
                d["metadata"]["name"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert!(
        kinds.contains(&("Function", "function-starlark")),
        "{kinds:?}"
    );
    // What Crossplane reads to let the function run Operation steps.
    let function = documents.iter().find(|d| d["kind"] == "Function").unwrap();
    assert_eq!(
        function["spec"]["capabilities"],
        serde_json::json!(["composition", "operation"]),
        "the package's capabilities"
    );
    assert!(
        kinds.contains(&(
            "CustomResourceDefinition",
            "starlarkinputs.starlark.fn.crossplane.io"
        )),
        "{kinds:?}"
    );

    // The binary out of the image answers a RunFunction, with its worker
    // processes, on this machine's libraries...
    let configmap = "Resource(\"cm\", {\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\"})\n";
    let answer = serve_once(Command::new(&binary), configmap);
    assert!(
        answer
            .desired
            .is_some_and(|d| d.resources.contains_key("cm"))
    );
    // ...and on the image's files alone, as the container runs it: in a
    // chroot of them (a user namespace makes that unprivileged). Threads,
    // as the chroot has no /proc for a worker process to start from.
    let mut alone = Command::new("unshare");
    alone
        .args(["--user", "--map-root-user", "chroot"])
        .arg(&rootfs)
        .args(["/function-starlark", "--isolation", "threads"]);
    let answer = serve_once(alone, configmap);
    assert!(
        answer
            .desired
            .is_some_and(|d| d.resources.contains_key("cm"))
    );

    // The binary resolves names and verifies TLS on its own: it loads a
    // module over HTTPS from a registry named by this machine's host name,
    // trusting the registry's CA through SSL_CERT_FILE (the image carries
    // the CA bundle at the path the binary reads by default).
    let Some(hostname) = loopback_hostname() else {
        eprintln!("SKIPPED the HTTPS pull: this machine's host name does not resolve to loopback");
        return;
    };
    let tls = Registry::start_tls(&hostname);
    rt().block_on(tls.push(
        "mods/lib",
        "v1",
        &registry::Artifact::bundle(&[("lib.star", "def greeting():\n    return \"over TLS\"\n")]),
    ));
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, tls.ca_pem.as_deref().expect("a CA")).expect("the CA is written");
    let mut trusting = Command::new(&binary);
    trusting.env("SSL_CERT_FILE", &ca);
    let answer = serve_once(
        trusting,
        &format!(
            "load(\"oci://{}/mods/lib:v1/lib.star\", \"greeting\")\nResource(\"cm\", {{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"data\": {{\"v\": greeting()}}}})\n",
            tls.host
        ),
    );
    let body = common::json(&answer)["desired"]["resources"]["cm"]["resource"].clone();
    assert_eq!(body["data"]["v"], "over TLS", "{answer:?}");
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

/// This machine's host name, when it resolves to a loopback address (it
/// does through /etc/hosts on the machines CI runs on).
fn loopback_hostname() -> Option<String> {
    use std::net::ToSocketAddrs;
    let name = std::fs::read_to_string("/etc/hostname")
        .ok()?
        .trim()
        .to_owned();
    let resolves = (name.as_str(), 443)
        .to_socket_addrs()
        .ok()?
        .all(|a| a.ip().is_loopback());
    (!name.is_empty() && name != "localhost" && resolves).then_some(name)
}

/// Starts the server `command` runs (given the listening flags here), runs
/// `source` once, stops it; the response must carry no Fatal result.
fn serve_once(
    mut command: Command,
    source: &str,
) -> function_sdk_rust::proto::v1::RunFunctionResponse {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let address = format!("127.0.0.1:{port}");
    let mut child = command
        .args(["--insecure", "--address", &address, "--metrics-address", ""])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the packaged binary starts");
    let answer = rt().block_on(async {
        let started = Instant::now();
        loop {
            if let Ok(mut client) =
                FunctionRunnerServiceClient::connect(format!("http://{address}")).await
            {
                let request = common::with_source(
                    common::request("observed: {composite: {resource: {metadata: {name: xr}}}}"),
                    source,
                );
                if let Ok(rsp) = client.run_function(request).await {
                    return rsp.into_inner();
                }
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("the packaged binary stopped ({status}) before it answered");
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the packaged binary did not answer"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        !answer
            .results
            .iter()
            .any(|r| r.severity == Severity::Fatal as i32),
        "{answer:?}"
    );
    answer
}
