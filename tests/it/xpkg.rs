//! The packages a Crossplane user installs, as `package/build.sh` built
//! them (`scripts/test.sh` runs the script first, around debug binaries):
//! pushed by `package/push.sh` to a registry on loopback as one
//! multi-platform package, whose index must list linux/amd64 and
//! linux/arm64; each platform's image pulled back with crane, its settings,
//! labels, metadata and input CRD read; the amd64 binary taken out and
//! asked a RunFunction on this machine and in a chroot of the image's
//! files; the arm64 image's files run under qemu in a chroot of their own
//! (its loader and libraries, nothing of this machine's), answering the
//! bucket-topic example with the amd64 binary's very bytes.
//!
//! Without built packages the tests report that they were skipped; under
//! `CI=true` (or `PACKAGE_REQUIRED=1`) that is a failure.

use crate::common;
use crate::common::registry;
use crate::support;

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use function_sdk_rust::proto::v1::Severity;
use function_sdk_rust::proto::v1::function_runner_service_client::FunctionRunnerServiceClient;
use prost::Message;
use registry::Registry;

/// The platforms package/build.sh builds, as OCI names them.
const ARCHES: [&str; 2] = ["amd64", "arm64"];

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

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The version package/version.sh gives, which the package carries.
fn version() -> String {
    let out = Command::new(root().join("package/version.sh"))
        .output()
        .expect("package/version.sh runs");
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// Both packages pushed as one multi-platform package to a registry of
/// their own, or `None` (the test skipped) when they were not built.
struct Pushed {
    _registry: Registry,
    reference: String,
    dir: tempfile::TempDir,
}

impl Pushed {
    fn new() -> Option<Pushed> {
        let missing: Vec<String> = ARCHES
            .iter()
            .map(|arch| format!("target/package/{arch}/function-starlark.xpkg"))
            .filter(|file| !root().join(file).exists())
            .collect();
        if !missing.is_empty() {
            let required = std::env::var("CI").as_deref() == Ok("true")
                || std::env::var_os("PACKAGE_REQUIRED").is_some();
            assert!(
                !required,
                "{missing:?} missing: package/build.sh did not run"
            );
            eprintln!("SKIPPED: no packages built (run PACKAGE_PROFILE=dev package/build.sh)");
            return None;
        }
        let registry = Registry::start();
        let reference = format!(
            "{}/crossplane/function-starlark:v{}",
            registry.host,
            version()
        );
        let out = Command::new(root().join("package/push.sh"))
            .arg(&reference)
            .output()
            .expect("package/push.sh runs");
        assert!(
            out.status.success(),
            "package/push.sh: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Some(Pushed {
            _registry: registry,
            reference,
            dir: tempfile::tempdir().expect("a directory"),
        })
    }

    /// The image config of one platform.
    fn config(&self, arch: &str) -> serde_json::Value {
        let platform = format!("linux/{arch}");
        serde_json::from_slice(&crane(&[
            "config",
            "--insecure",
            "--platform",
            &platform,
            &self.reference,
        ]))
        .expect("JSON")
    }

    /// One platform's image files, unpacked, and its package.yaml.
    fn export(&self, arch: &str) -> (PathBuf, String) {
        let platform = format!("linux/{arch}");
        let export = self.dir.path().join(format!("{arch}.tar"));
        let tarball = crane(&[
            "export",
            "--insecure",
            "--platform",
            &platform,
            &self.reference,
            "-",
        ]);
        std::fs::write(&export, tarball).expect("the export is written");
        let mut archive = tar::Archive::new(std::fs::File::open(&export).expect("the export"));
        let mut package_yaml = String::new();
        let rootfs = self.dir.path().join(arch);
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
        (rootfs, package_yaml)
    }
}

/// `command` run in a chroot of `rootfs` (a user namespace makes that
/// unprivileged): only the image's files are there.
fn in_chroot(rootfs: &Path, program: &str) -> Command {
    let mut command = Command::new("unshare");
    command
        .args(["--user", "--map-root-user", "chroot"])
        .arg(rootfs)
        .arg(program);
    command
}

/// The arm64 image's files with qemu's static arm64 emulator at
/// /qemu-aarch64-static, and a command running the binary under it in a
/// chroot of them: the loader and the libraries the binary gets are the
/// image's own, so one the image lacks fails the run.
fn under_qemu(rootfs: &Path) -> Option<Command> {
    let qemu = [
        "/usr/bin/qemu-aarch64-static",
        "/usr/libexec/qemu-binfmt/aarch64-binfmt-P",
    ]
    .into_iter()
    .map(Path::new)
    .find(|p| p.exists())?;
    std::fs::copy(qemu, rootfs.join("qemu-aarch64-static")).expect("qemu is copied in");
    let mut command = in_chroot(rootfs, "/qemu-aarch64-static");
    command.arg("/function-starlark");
    Some(command)
}

#[test]
fn the_package_is_one_index_of_both_platforms_at_the_function_version() {
    let Some(pushed) = Pushed::new() else { return };
    let index: serde_json::Value =
        serde_json::from_slice(&crane(&["manifest", "--insecure", &pushed.reference]))
            .expect("JSON");
    let mut platforms: Vec<String> = index["manifests"]
        .as_array()
        .unwrap_or_else(|| panic!("an image index: {index}"))
        .iter()
        .map(|m| {
            format!(
                "{}/{}",
                m["platform"]["os"].as_str().unwrap_or_default(),
                m["platform"]["architecture"].as_str().unwrap_or_default()
            )
        })
        .collect();
    platforms.sort();
    assert_eq!(platforms, ["linux/amd64", "linux/arm64"], "{index}");

    let version = version();
    for arch in ARCHES {
        // The runtime settings Crossplane starts the function with.
        let config = pushed.config(arch);
        let c = &config["config"];
        assert_eq!(
            c["Entrypoint"],
            serde_json::json!(["/function-starlark"]),
            "{config}"
        );
        assert_eq!(c["User"], "65532:65532", "{config}");
        assert!(c["ExposedPorts"].get("9443/tcp").is_some(), "{config}");
        assert_eq!(config["os"], "linux");
        assert_eq!(config["architecture"], arch);
        assert_eq!(
            c["Labels"]["org.opencontainers.image.version"],
            version.as_str(),
            "{config}"
        );

        // What Crossplane reads: the function, its capabilities, the input CRD.
        let (rootfs, package_yaml) = pushed.export(arch);
        let documents = common::documents(&package_yaml);
        let function = documents
            .iter()
            .find(|d| d["kind"] == "Function")
            .unwrap_or_else(|| panic!("{arch}: no Function in package.yaml"));
        assert_eq!(function["metadata"]["name"], "function-starlark");
        // Crossplane refuses to run an Operation step whose function does
        // not declare `operation`.
        assert_eq!(
            function["spec"]["capabilities"],
            serde_json::json!(["composition", "operation"]),
            "{arch}: the package's capabilities"
        );
        assert!(
            documents
                .iter()
                .any(|d| d["kind"] == "CustomResourceDefinition"
                    && d["metadata"]["name"] == "starlarkinputs.starlark.fn.crossplane.io"),
            "{arch}: the input CRD"
        );

        // The binary inside says the same version.
        let mut command = if arch == "amd64" {
            in_chroot(&rootfs, "/function-starlark")
        } else {
            let Some(command) = under_qemu(&rootfs) else {
                assert!(
                    std::env::var("CI").as_deref() != Ok("true"),
                    "qemu-aarch64-static is missing (scripts/tools.sh installs it)"
                );
                eprintln!("SKIPPED the arm64 binary: no qemu-aarch64-static");
                continue;
            };
            command
        };
        let out = command.arg("--version").output().expect("the binary runs");
        assert!(
            out.status.success(),
            "{arch}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            format!("function-starlark {version}"),
            "{arch}"
        );
    }
}

#[test]
fn the_arm64_binary_answers_with_the_amd64_binarys_bytes() {
    let Some(pushed) = Pushed::new() else { return };
    let (arm64, _) = pushed.export("arm64");
    let Some(mut emulated) = under_qemu(&arm64) else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "qemu-aarch64-static is missing (scripts/tools.sh installs it)"
        );
        eprintln!("SKIPPED: no qemu-aarch64-static");
        return;
    };
    let (amd64, _) = pushed.export("amd64");
    let request = Bytes::from(
        crate::examples::request(&root().join("examples/bucket-topic")).encode_to_vec(),
    );
    // Threads, for both: qemu-user runs one process (a worker process would
    // be another arm64 program for the kernel, which cannot run it here),
    // and a chroot has no /proc for a worker to start from.
    emulated.args(["--isolation", "threads"]);
    let theirs = answer_bytes(emulated, &request, Duration::from_mins(2));
    let mut native = in_chroot(&amd64, "/function-starlark");
    native.args(["--isolation", "threads"]);
    let ours = answer_bytes(native, &request, Duration::from_secs(30));
    let decoded = function_sdk_rust::proto::v1::RunFunctionResponse::decode(ours.clone())
        .expect("a response");
    let desired = decoded.desired.expect("desired state");
    assert!(
        desired.resources.contains_key("bucket") && desired.resources.contains_key("topic"),
        "bucket-topic composes its bucket and topic: {:?}",
        desired.resources.keys()
    );
    assert!(
        ours == theirs,
        "the arm64 binary's response differs from the amd64 one's"
    );
}

/// Starts the server `command` runs (given the listening flags here), sends
/// `request` once, stops it, and returns the response's bytes.
fn answer_bytes(mut command: Command, request: &Bytes, patience: Duration) -> Bytes {
    let address = format!("127.0.0.1:{}", support::free_port());
    let mut child = command
        .args(["--insecure", "--address", &address, "--metrics-address", ""])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the packaged binary starts");
    let answer = support::runtime().block_on(async {
        let started = Instant::now();
        loop {
            if let Ok(channel) = support::connect(&address).await
                && let Ok(bytes) = support::call(channel, request.clone()).await
            {
                return bytes;
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("the packaged binary stopped ({status}) before it answered");
            }
            assert!(
                started.elapsed() < patience,
                "the packaged binary did not answer"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let _ = child.kill();
    let _ = child.wait();
    answer
}

#[test]
fn the_amd64_binary_serves_from_the_image_alone_and_over_tls() {
    let Some(pushed) = Pushed::new() else { return };
    let (rootfs, _) = pushed.export("amd64");
    let binary = rootfs.join("function-starlark");
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
    let mut alone = in_chroot(&rootfs, "/function-starlark");
    alone.args(["--isolation", "threads"]);
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
    let ca = pushed.dir.path().join("ca.pem");
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
