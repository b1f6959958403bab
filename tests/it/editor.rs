//! The editor, as an author uses it: Neovim (headless, its built-in LSP
//! client, set up with the shipped `editors/neovim` snippet) against
//! `function-starlark lsp` on a workspace with a script, a sibling module
//! and a Composition (`tests/editor/session.lua` drives the session).
//! Without `nvim` the test skips on a laptop and fails under `CI=true`.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

const MAIN: &str = r#"load("lib.star", "helper")
load("starlark-stdlib:v1/naming.star", "resource_name")
x = get_observed("db", "status.endpoint", "")
helper(1)
resource_name
Reso
set_condition("Ready", "True", "Ok", "fine")
Resource("bucket", {"apiVersion": "s3.aws.upbound.io/v1beta1", "kind": "Bucket",
    "spec": {"forProvider": {"region": "eu-west-1", "versionning": True}}})
"#;

const LIB: &str = "def helper(n):\n    return n + 1\n";

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
          region = get(oxr, "spec.region", "eu-west-1")
          Resource("bucket", {"apiVersion": "s3.aws.upbound.io/v1beta1", "kind": "Bucket",
              "spec": {"forProvider": {"region": region}}}, depnds_on = [])
"#;

fn nvim() -> Option<&'static str> {
    let found = Command::new("nvim")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI needs Neovim (nvim) for the editor test"
        );
        eprintln!("skipped: no nvim");
        return None;
    }
    Some("nvim")
}

fn diagnostic<'a>(list: &'a Value, code: &str) -> &'a Value {
    list.as_array()
        .into_iter()
        .flatten()
        .find(|d| d["code"] == code)
        .unwrap_or_else(|| panic!("a {code} diagnostic in {list}"))
}

#[test]
fn neovim_completes_explains_navigates_diagnoses_and_fixes() {
    let Some(nvim) = nvim() else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let ws = dir.path();
    std::fs::write(ws.join("main.star"), MAIN).expect("write");
    std::fs::write(ws.join("lib.star"), LIB).expect("write");
    std::fs::write(ws.join("composition.yaml"), COMPOSITION).expect("write");
    let out = ws.join("session.json");
    let status = Command::new(nvim)
        .args(["--headless", "--clean", "-n", "-i", "NONE", "-c"])
        .arg(format!(
            "luafile {}",
            root.join("tests/editor/session.lua").display()
        ))
        .env("FS_BIN", env!("CARGO_BIN_EXE_function-starlark"))
        .env("FS_WORKSPACE", ws)
        .env("FS_OUT", &out)
        .env(
            "FS_SNIPPET",
            root.join("editors/neovim/function-starlark.lua"),
        )
        .env("FS_CRDS", root.join("examples/bucket-topic/crds"))
        .env("HOME", ws)
        .current_dir(ws)
        .status()
        .expect("nvim runs");
    assert!(status.success(), "nvim exits cleanly");
    let text = std::fs::read_to_string(&out).expect("the session wrote its findings");
    let seen: Value = serde_json::from_str(&text).expect("JSON");
    assert!(
        seen.get("error").is_none(),
        "the session failed: {}\n{text}",
        seen["error"]
    );

    // Completion: `Reso` -> `Resource`, with its signature from the registry.
    let items = seen["completion"]
        .get("items")
        .unwrap_or(&seen["completion"]);
    let resource = items
        .as_array()
        .into_iter()
        .flatten()
        .find(|i| i["label"] == "Resource")
        .unwrap_or_else(|| panic!("Resource in {items}"));
    let detail = resource["detail"].as_str().expect("a detail");
    assert!(detail.starts_with("Resource(name, body, "), "{detail}");

    // Hover on get_observed: its doc.
    let hover = seen["hover"].to_string();
    assert!(
        hover.contains("get_observed") && hover.contains("observed composed resource"),
        "{hover}"
    );

    // Signature help inside set_condition(: the second parameter.
    let signature = &seen["signature"];
    let label = signature["signatures"][0]["label"]
        .as_str()
        .expect("a label");
    assert!(
        label.starts_with("set_condition(type, status, reason, message"),
        "{label}"
    );
    assert_eq!(signature["activeParameter"], 1, "{signature}");

    // Go to definition: a sibling module, and the embedded stdlib.
    let sibling = &seen["definition_sibling"][0];
    assert!(
        sibling["targetUri"]
            .as_str()
            .is_some_and(|u| u.ends_with("/lib.star")),
        "{sibling}"
    );
    assert_eq!(sibling["targetRange"]["start"]["line"], 0);
    let stdlib = &seen["definition_stdlib"][0];
    let target = stdlib["targetUri"].as_str().expect("a target");
    assert!(target.ends_with("/stdlib/v1/naming.star"), "{target}");
    let path = target.strip_prefix("file://").expect("a file");
    let line = usize::try_from(
        stdlib["targetRange"]["start"]["line"]
            .as_u64()
            .expect("a line"),
    )
    .expect("small");
    let opened = std::fs::read_to_string(path).expect("the stdlib file opens");
    assert!(
        opened
            .lines()
            .nth(line)
            .is_some_and(|l| l.starts_with("def resource_name(")),
        "{target}:{line}"
    );

    // Diagnostics: the CRD's unknown field at its own line, the undefined name.
    let schema = diagnostic(&seen["star_diagnostics"], "schema");
    assert_eq!(
        (schema["line"].as_u64(), schema["col"].as_u64()),
        (Some(8), Some(52)),
        "{schema}"
    );
    assert!(
        schema["message"]
            .as_str()
            .is_some_and(|m| m.contains("versionning: unknown field"))
    );
    assert_eq!(
        diagnostic(&seen["star_diagnostics"], "undefined")["line"],
        5
    );

    // The Composition: the unknown keyword at its YAML line, and the fix.
    let keyword = diagnostic(&seen["yaml_diagnostics"], "unknown-keyword");
    assert_eq!(keyword["line"], 17, "{keyword}");
    let at = usize::try_from(keyword["col"].as_u64().expect("a column")).expect("small");
    let line = COMPOSITION.lines().nth(17).expect("the line");
    assert!(
        line[at..].starts_with("depnds_on ="),
        "under the keyword: {keyword}"
    );
    let title = seen["actions"][0]["title"].as_str().expect("a quick fix");
    assert_eq!(title, "Change depnds_on to depends_on");
    let fixed = seen["fixed_text"].as_str().expect("the text");
    assert_eq!(
        fixed,
        COMPOSITION.trim_end().replace("depnds_on", "depends_on")
    );
    let after = seen["yaml_diagnostics_after_fix"]
        .as_array()
        .expect("a list");
    assert!(
        after.iter().all(|d| d["code"] != "unknown-keyword"),
        "{after:?}"
    );
}

/// A script using constructors generated from a real provider's CRDs
/// (provider-kubernetes v1.4.1, through the module proxy; scripts/tools.sh
/// downloads it), with no CRD folder configured.
const TYPED: &str = r#"load("./schemas/kubernetes.crossplane.io/v1alpha2.star", "Object", "ObjectSpec", "ObjectSpecForProvider")
spec = ObjectSpec(forProvider = ObjectSpecForProvider(manifest = {}), deletionPolicy = "Delet", readines = {})
Resource("cm", Object(spec = spec))
ObjectSpec(deletionPolicy = "Delete")
ObjectSpec(forProvider = {"manifest": {}}, watch = "yes")
ObjectSpec(forProvider = ObjectSpecForProvider(manifest = {}), )
x = ProviderConfig
"#;

#[test]
fn neovim_knows_generated_constructors_without_a_crd_folder() {
    let Some(nvim) = nvim() else {
        return;
    };
    let module = "github.com/crossplane-contrib/provider-kubernetes@v1.4.1";
    let downloaded = Command::new("go")
        .args(["mod", "download", "-json", module])
        .env("GOTOOLCHAIN", "go1.27.3")
        .output()
        .ok()
        .and_then(|o| serde_json::from_slice::<Value>(&o.stdout).ok())
        .and_then(|j| j["Dir"].as_str().map(std::path::PathBuf::from));
    let Some(provider) = downloaded else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{module} cannot be downloaded (scripts/tools.sh downloads it)"
        );
        eprintln!("SKIPPED: {module} cannot be downloaded");
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let ws = dir.path();
    let generated = Command::new(env!("CARGO_BIN_EXE_function-starlark"))
        .args(["gen", "crd"])
        .arg(provider.join("package/crds"))
        .args(["-o"])
        .arg(ws.join("schemas"))
        .output()
        .expect("gen runs");
    assert!(
        generated.status.success(),
        "{}",
        String::from_utf8_lossy(&generated.stderr)
    );
    std::fs::write(ws.join("main.star"), TYPED).expect("write");
    let out = ws.join("session.json");
    let status = Command::new(nvim)
        .args(["--headless", "--clean", "-n", "-i", "NONE", "-c"])
        .arg(format!(
            "luafile {}",
            root.join("tests/editor/schemas.lua").display()
        ))
        .env("FS_BIN", env!("CARGO_BIN_EXE_function-starlark"))
        .env("FS_WORKSPACE", ws)
        .env("FS_OUT", &out)
        .env(
            "FS_SNIPPET",
            root.join("editors/neovim/function-starlark.lua"),
        )
        .env("HOME", ws)
        .current_dir(ws)
        .status()
        .expect("nvim runs");
    assert!(status.success(), "nvim exits cleanly");
    let text = std::fs::read_to_string(&out).expect("the session wrote its findings");
    let seen: Value = serde_json::from_str(&text).expect("JSON");
    assert!(
        seen.get("error").is_none(),
        "the session failed: {}\n{text}",
        seen["error"]
    );

    // Completion inside the call: the fields not given yet, each with its
    // type; a field's allowed values inside its quotes.
    let labels = |v: &Value| -> Vec<String> {
        v.get("items")
            .unwrap_or(v)
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|i| i["label"].as_str().map(str::to_owned))
            .collect()
    };
    let fields = labels(&seen["completion"]);
    assert!(
        fields.contains(&"deletionPolicy".to_owned())
            && fields.contains(&"readiness".to_owned())
            && !fields.contains(&"forProvider".to_owned()),
        "{fields:?}"
    );
    assert_eq!(labels(&seen["values"]), ["\"Orphan\"", "\"Delete\""]);
    let signature = &seen["signature"]["signatures"][0];
    assert!(
        signature["label"]
            .as_str()
            .is_some_and(|l| l.starts_with("ObjectSpec(forProvider: ObjectSpecForProvider, ")),
        "{signature}"
    );
    // Hover on a keyword: type, default, allowed values, what it means.
    let hover = seen["hover"]["contents"]["value"]
        .as_str()
        .unwrap_or_default();
    assert!(
        hover.starts_with("`ObjectSpec.deletionPolicy`: **string**, default `\"Delete\"`")
            && hover.contains("One of: `\"Orphan\"`, `\"Delete\"`")
            && hover.contains("What happens to the external resource"),
        "{hover}"
    );
    // The outline.
    let outline: Vec<&str> = seen["outline"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(outline, ["spec", "x", "Resource \"cm\""], "{outline:?}");

    // Each kind of diagnostic, at its token.
    let at = |code: &str| {
        let d = diagnostic(&seen["diagnostics"], code);
        let line = usize::try_from(d["line"].as_u64().expect("a line")).expect("small");
        let (col, end) = (
            d["col"].as_u64().expect("a column"),
            d["end_col"].as_u64().expect("an end"),
        );
        let text = TYPED.lines().nth(line).expect("the line");
        (
            line,
            text[usize::try_from(col).unwrap()..usize::try_from(end).unwrap()].to_owned(),
            d["message"].as_str().unwrap_or_default().to_owned(),
        )
    };
    let (line, token, message) = at("unknown-field");
    assert_eq!((line, token.as_str()), (1, "readines"), "{message}");
    assert!(message.contains("did you mean \"readiness\""), "{message}");
    let (line, token, _) = at("field-enum");
    assert_eq!((line, token.as_str()), (1, "\"Delet\""));
    let (line, token, message) = at("missing-field");
    assert_eq!((line, token.as_str()), (3, "ObjectSpec"));
    assert_eq!(message, "ObjectSpec: forProvider: required field missing");
    let (line, token, message) = at("field-type");
    assert_eq!((line, token.as_str()), (4, "\"yes\""));
    assert_eq!(
        message,
        "ObjectSpec: watch: expected bool, got string (\"yes\")"
    );

    // Each quick fix applied.
    assert_eq!(
        seen["applied"],
        serde_json::json!([
            "Change to readiness",
            "Change to \"Delete\"",
            "Add the required forProvider",
            "Load ProviderConfig from ./schemas/kubernetes.crossplane.io/v1alpha1.star",
        ])
    );
    let expected = format!(
        "load(\"./schemas/kubernetes.crossplane.io/v1alpha1.star\", \"ProviderConfig\")\n{}",
        TYPED
            .replace("\"Delet\", readines", "\"Delete\", readiness")
            .replace(
                "ObjectSpec(deletionPolicy = \"Delete\")",
                "ObjectSpec(deletionPolicy = \"Delete\", forProvider = {\"manifest\": {}})"
            )
            .trim_end()
    );
    assert_eq!(seen["fixed_text"].as_str(), Some(expected.as_str()));
    let left: Vec<&str> = seen["diagnostics_after"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| d["code"].as_str())
        .collect();
    assert_eq!(left, ["field-type"], "only the wrong type is left");
}
