//! The real client: `crossplane render` (the `crank` binary) renders every
//! `examples/<case>/` against the function binary started on loopback, and
//! the output must equal the case's `expected.yaml` document for document.
//!
//! The CLI is found as `$CRANK`, `crank` on PATH, or `$(go env GOPATH)/bin/crank`;
//! `scripts/test.sh` installs it. Without it the test reports that it was
//! skipped, and fails instead when `RENDER_REQUIRED=1` or `CI=true`.
//! `UPDATE_GOLDEN=1` writes `expected.yaml` from the real output. The same
//! files given to `function-starlark render` must print exactly what crank
//! printed.

use crate::common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn crank() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CRANK") {
        return Some(PathBuf::from(path));
    }
    // `crank version` fails without a kubeconfig; the help of render needs
    // nothing.
    let on_path = Command::new("crank")
        .args(["render", "--help"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if on_path.is_ok_and(|s| s.success()) {
        return Some(PathBuf::from("crank"));
    }
    let gopath = Command::new("go").args(["env", "GOPATH"]).output().ok()?;
    let candidate = PathBuf::from(String::from_utf8_lossy(&gopath.stdout).trim()).join("bin/crank");
    candidate.exists().then_some(candidate)
}

struct Function(Child);

impl Drop for Function {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_function() -> (Function, String) {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port");
    let address = format!("127.0.0.1:{port}");
    let child = Command::new(env!("CARGO_BIN_EXE_function-starlark"))
        .args(["--insecure", "--address", &address, "--metrics-address", ""])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the function binary starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(&address).is_err() {
        assert!(
            Instant::now() < deadline,
            "the function did not listen in time"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (Function(child), address)
}

fn render(crank: &Path, dir: &Path, address: &str) -> String {
    let mut cmd = Command::new(crank);
    cmd.current_dir(dir)
        .args(["render", "xr.yaml", "composition.yaml", "functions.yaml"])
        .args(["-a", "render.crossplane.io/runtime=Development"])
        .arg("-a")
        .arg(format!(
            "render.crossplane.io/runtime-development-target={address}"
        ))
        .arg("-r");
    if dir.join("observed.yaml").exists() {
        cmd.args(["-o", "observed.yaml"]);
    }
    if dir.join("required-resources.yaml").exists() {
        cmd.args(["-e", "required-resources.yaml"]);
    }
    let out = cmd.output().expect("crank runs");
    assert!(
        out.status.success(),
        "crank render failed for {}:\n{}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("crank prints UTF-8")
}

#[test]
fn crossplane_render_produces_every_examples_expected_output() {
    let Some(crank) = crank() else {
        assert!(
            std::env::var_os("RENDER_REQUIRED").is_none()
                && std::env::var("CI").as_deref() != Ok("true"),
            "the crossplane CLI (crank) is not installed, and RENDER_REQUIRED or CI=true requires it"
        );
        eprintln!(
            "SKIPPED: the crossplane CLI (crank) is not installed; examples were not rendered"
        );
        return;
    };
    let (_function, address) = start_function();
    let cases = common::example_dirs();
    for dir in cases {
        let output = render(&crank, &dir, &address);
        // `function-starlark render` prints the very same text.
        let ours = crate::render_cli::render(&dir, &[]);
        assert_eq!(
            String::from_utf8_lossy(&ours.stdout),
            output,
            "{}: function-starlark render differs from crossplane render ({})",
            dir.display(),
            String::from_utf8_lossy(&ours.stderr)
        );
        let expected_path = dir.join("expected.yaml");
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            std::fs::write(&expected_path, &output).expect("expected.yaml is writable");
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_else(|e| {
            panic!(
                "{}: {e}; run with UPDATE_GOLDEN=1 to record it",
                expected_path.display()
            )
        });
        let mut want: Vec<String> = common::documents(&expected)
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
        let mut got: Vec<String> = common::documents(&output)
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
        want.sort();
        got.sort();
        assert_eq!(
            want,
            got,
            "{}: rendered documents differ from expected.yaml",
            dir.display()
        );
    }
}
