//! `function-starlark lsp` spoken to over stdio, as an editor speaks to
//! it: every builtin of the registry is completed with its real signature
//! and doc, diagnostics follow the text as it changes, and every request
//! gets an answer. (`tests/editor.rs` drives it from Neovim.)

use serde_json::{Value, json};

use crate::common::lsp_client::Client;

fn labels(items: &Value) -> Vec<String> {
    let list = items.get("items").unwrap_or(items);
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["label"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn every_builtin_is_completed_with_its_signature_and_doc() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut client = Client::start(dir.path(), Value::Null);
    let uri = format!("file://{}/main.star", dir.path().display());
    client.open(&uri, "x\n");
    client.diagnostics(&uri);
    let globals = client.request("textDocument/completion", Client::at(&uri, 0, 1));
    let list = globals
        .get("items")
        .unwrap_or(&globals)
        .as_array()
        .cloned()
        .unwrap_or_default();
    let functions = function_starlark::docs::functions();
    assert!(functions.len() > 60, "the registry has its builtins");
    for f in functions.iter().filter(|f| !f.name.contains('.')) {
        let item = list
            .iter()
            .find(|i| i["label"] == f.name.as_str())
            .unwrap_or_else(|| panic!("{} is completed", f.name));
        assert_eq!(
            item["detail"],
            format!("{}({})", f.name, f.params),
            "{item}"
        );
        assert!(!f.summary.is_empty(), "{} has a doc comment", f.name);
        let doc = item["documentation"]["value"].as_str().unwrap_or_default();
        assert!(doc.contains(&f.summary), "{}: {doc}", f.name);
    }
    for name in ["oxr", "dxr", "observed", "context", "len", "struct"] {
        assert!(
            list.iter().any(|i| i["label"] == name),
            "{name} is completed"
        );
    }
    // Namespace members are completed on text that does not parse yet.
    let mut text = String::from("x\n");
    let mut namespaces = Vec::new();
    for name in function_starlark::docs::project_names() {
        if function_starlark::docs::module_members(&name).is_some() {
            text.push_str(&name);
            text.push_str(".\n");
            namespaces.push(name);
        }
    }
    client.change(&uri, 2, &text);
    client.diagnostics(&uri);
    for (row, namespace) in namespaces.iter().enumerate() {
        let line = u64::try_from(row + 1).expect("small");
        let col = u64::try_from(namespace.len() + 1).expect("small");
        let members = client.request("textDocument/completion", Client::at(&uri, line, col));
        let got = labels(&members);
        let want = function_starlark::docs::module_members(namespace).expect("members");
        assert_eq!(got, want, "{namespace}. completes its members");
        for item in members.as_array().expect("a list") {
            let qualified = format!("{namespace}.{}", item["label"].as_str().expect("a label"));
            let f = functions
                .iter()
                .find(|f| f.name == qualified)
                .unwrap_or_else(|| panic!("{qualified} is documented"));
            assert!(!f.summary.is_empty(), "{qualified} has a doc comment");
            assert_eq!(item["detail"], format!("{qualified}({})", f.params));
        }
    }
    client.stop();
}

#[test]
fn diagnostics_follow_the_text_and_unknown_requests_are_answered() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut client = Client::start(dir.path(), Value::Null);
    let uri = format!("file://{}/main.star", dir.path().display());
    client.open(&uri, "Resource(\"a\", {}, depnds_on = [])\n");
    let first = client.diagnostics(&uri);
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(first[0]["code"], "unknown-keyword");
    assert_eq!(first[0]["severity"], 1);
    // Under the keyword itself, not the call.
    assert_eq!(
        first[0]["range"],
        json!({"start": {"line": 0, "character": 18}, "end": {"line": 0, "character": 27}})
    );
    client.change(&uri, 2, "x = 1\nResource(\"a\", {})\nundefined_thing\n");
    let second = client.diagnostics(&uri);
    assert_eq!(second.len(), 1, "{second:?}");
    assert_eq!(second[0]["code"], "undefined");
    assert_eq!(second[0]["range"]["start"]["line"], 2);
    // Hover on a builtin, a namespace member, and a name the script binds.
    client.change(
        &uri,
        3,
        "def helper(n):\n    return n\nx = dict.merge({}, {})\nResource(\"a\", helper(x))\n",
    );
    client.diagnostics(&uri);
    let merge = client.request("textDocument/hover", Client::at(&uri, 2, 7));
    let text = merge["contents"]["value"].as_str().unwrap_or_default();
    assert!(text.starts_with("### `dict.merge("), "{merge}");
    assert_eq!(merge["range"]["start"]["character"], 4);
    let resource = client.request("textDocument/hover", Client::at(&uri, 3, 2));
    let text = resource["contents"]["value"].as_str().unwrap_or_default();
    assert!(text.starts_with("### `Resource(name, body, "), "{resource}");
    let helper = client.request("textDocument/hover", Client::at(&uri, 3, 16));
    assert!(!helper.to_string().contains("###"), "{helper}");
    // The outline: the function, the binding, the Resource by its name.
    let outline = client.request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": uri}}),
    );
    let names: Vec<&str> = outline
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(names, ["helper", "x", "Resource \"a\""], "{outline}");
    let unknown = client.request(
        "textDocument/codeLens",
        json!({"textDocument": {"uri": uri}}),
    );
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    client.stop();
}

#[test]
fn hostile_documents_and_requests_leave_the_server_answering() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut client = Client::start(dir.path(), Value::Null);
    let uri = format!("file://{}/main.star", dir.path().display());
    // Nesting past the parser's limit, then just under it.
    client.open(
        &uri,
        &format!("x = {}1{}\n", "(".repeat(20_000), ")".repeat(20_000)),
    );
    let deep = client.diagnostics(&uri);
    assert!(
        deep.iter().any(|d| d["message"]
            .as_str()
            .is_some_and(|m| m.contains("nests more than"))),
        "{deep:?}"
    );
    client.change(
        &uri,
        2,
        &format!("x = {}1{}\n", "[".repeat(9_000), "]".repeat(9_000)),
    );
    client.diagnostics(&uri);
    // Requests it cannot read are answered with an error, not dropped.
    for (method, params) in [
        (
            "textDocument/completion",
            json!({"textDocument": {"uri": uri}}),
        ),
        ("textDocument/hover", json!({"position": "nowhere"})),
        ("textDocument/definition", json!(42)),
        (
            "textDocument/signatureHelp",
            json!({"textDocument": {"uri": 7}}),
        ),
        (
            "textDocument/codeAction",
            json!({"context": {"diagnostics": [{"code": []}]}}),
        ),
    ] {
        let answer = client.request(method, params);
        assert!(
            answer.is_null() || answer.get("error").is_some() || answer.is_array(),
            "{method}: {answer}"
        );
    }
    // A change with no content, a document never opened, binary-ish text.
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 3}, "contentChanges": []}),
    );
    client.diagnostics(&uri);
    client.open(
        &format!("file://{}/odd.yaml", dir.path().display()),
        "kind: [\u{0}\u{7}: {",
    );
    let fine = "Resource(\"a\", {})\nReso\n";
    client.change(&uri, 4, fine);
    client.diagnostics(&uri);
    let items = client.request("textDocument/completion", Client::at(&uri, 1, 4));
    let list = items.get("items").unwrap_or(&items);
    assert!(
        list.as_array()
            .is_some_and(|l| l.iter().any(|i| i["label"] == "Resource")),
        "still serving: {items}"
    );
    client.stop();
}

const WITH_MODULES: &str = r#"apiVersion: apiextensions.crossplane.io/v1
kind: Composition
metadata:
  name: c
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
          load("helpers.star", "bucket")
          bucket("a")
          Resource("b", {"apiVersion": "s3.aws.upbound.io/v1beta1", "kind": "Bucket",
              "spec": {"forProvider": {"regoin": "x"}}})
        modules:
          helpers.star: |
            # Helpers.
            def bucket(name):
                return Resource(name, {})
"#;

#[test]
fn a_compositions_script_reaches_its_inline_modules_and_the_workspace_crds() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let crds = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/bucket-topic/crds");
    std::fs::write(
        dir.path().join("function-starlark.toml"),
        format!("crds = {:?}\n", crds.display().to_string()),
    )
    .expect("write");
    std::fs::write(dir.path().join("sibling.star"), "X = 1\n").expect("write");
    let mut client = Client::start(dir.path(), Value::Null);
    let uri = format!("file://{}/composition.yaml", dir.path().display());
    client.open(&uri, WITH_MODULES);
    // The workspace file names the CRDs: the body's unknown field, at its line.
    let found = client.diagnostics(&uri);
    let schema = found
        .iter()
        .find(|d| d["code"] == "schema")
        .unwrap_or_else(|| panic!("a schema finding in {found:?}"));
    assert_eq!(
        schema["range"]["start"],
        json!({"line": 18, "character": 39}),
        "{schema}"
    );
    // Go to definition of a name loaded from an inline module: its YAML line.
    let at = client.request("textDocument/definition", Client::at(&uri, 16, 11));
    let target = &at[0];
    assert_eq!(target["targetUri"], uri.as_str(), "{at}");
    assert_eq!(
        target["targetRange"]["start"],
        json!({"line": 22, "character": 16}),
        "{at}"
    );
    // Keyword arguments of a builtin, and load() targets.
    let text = WITH_MODULES.replace("bucket(\"a\")", "Resource(\"a\", {}, dep)");
    client.change(&uri, 2, &text);
    client.diagnostics(&uri);
    let items = client.request("textDocument/completion", Client::at(&uri, 16, 31));
    assert!(
        labels(&items).iter().any(|l| l.starts_with("depends_on")),
        "{items}"
    );
    let text = WITH_MODULES.replace("load(\"helpers.star\"", "load(\"\"");
    client.change(&uri, 3, &text);
    client.diagnostics(&uri);
    let targets = labels(&client.request("textDocument/completion", Client::at(&uri, 15, 16)));
    for want in [
        "helpers.star",
        "sibling.star",
        "starlark-stdlib:v1/naming.star",
    ] {
        assert!(targets.iter().any(|t| t == want), "{want} in {targets:?}");
    }
    client.stop();
}

/// Constructors from an OCI module: the server pulls what a document loads
/// (once, with the loader's client), knows its constructors for completion
/// and diagnostics, and says on the load line when a module cannot be had.
#[test]
fn constructors_of_oci_modules_are_pulled_and_known() {
    use crate::common::registry::{Artifact, Registry};
    let registry = Registry::start();
    crate::common::runtime().block_on(registry.push(
        "mods/schemas",
        "v1",
        &Artifact::bundle(&[(
            "apps/v1.star",
            "Spec = schema(\"Spec\", region = field(type = \"string\", required = True), tier = field(enum = [\"gold\"]))\n",
        )]),
    ));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut client = Client::start(dir.path(), Value::Null);
    let uri = format!("file://{}/main.star", dir.path().display());
    let text = format!(
        "load(\"oci://{0}/mods/schemas:v1/apps/v1.star\", \"Spec\")\nload(\"oci://{0}/mods/missing:v1/x.star\", \"X\")\nSpec(regoin = \"eu\")\nSpec(region = \"eu\", )\n",
        registry.host
    );
    client.open(&uri, &text);
    let found = client.diagnostics(&uri);
    let codes: Vec<(u64, &str)> = found
        .iter()
        .map(|d| {
            (
                d["range"]["start"]["line"].as_u64().unwrap_or(99),
                d["code"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert!(codes.contains(&(2, "unknown-field")), "{found:#?}");
    assert!(codes.contains(&(2, "missing-field")), "{found:#?}");
    let missing = found
        .iter()
        .find(|d| d["range"]["start"]["line"] == 1 && d["code"] == "load")
        .unwrap_or_else(|| panic!("the failed pull on its load line: {found:#?}"));
    assert!(
        missing["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("cannot fetch OCI module")),
        "{missing}"
    );
    let inside = "Spec(region = \"eu\", ".len() as u64;
    let items = client.request("textDocument/completion", Client::at(&uri, 3, inside));
    assert_eq!(labels(&items), ["tier"], "{items}");
    client.stop();
}

#[test]
fn formatting_gives_fmts_output_for_scripts_and_compositions() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut client = Client::start(dir.path(), Value::Null);
    let script = format!("file://{}/main.star", dir.path().display());
    client.open(&script, "x=1\ny = [1,\n  2]\n");
    let edits = client.request(
        "textDocument/formatting",
        json!({"textDocument": {"uri": script}, "options": {"tabSize": 4, "insertSpaces": true}}),
    );
    assert_eq!(
        edits[0]["newText"], "x = 1\ny = [\n    1,\n    2,\n]\n",
        "{edits}"
    );
    let composition = format!("file://{}/composition.yaml", dir.path().display());
    let yaml = "apiVersion: apiextensions.crossplane.io/v1\nkind: Composition\nmetadata: {name: c}\nspec:\n  pipeline:\n  - step: s\n    input:\n      kind: StarlarkInput\n      spec:\n        source: |\n          Resource('a',{})\n";
    client.open(&composition, yaml);
    let edits = client.request(
        "textDocument/formatting",
        json!({"textDocument": {"uri": composition}, "options": {"tabSize": 2, "insertSpaces": true}}),
    );
    assert_eq!(
        edits[0]["newText"],
        yaml.replace("Resource('a',{})", "Resource(\"a\", {})"),
        "{edits}"
    );
    // A document that does not parse gets no edits.
    client.open(&script, "x = (\n");
    let edits = client.request(
        "textDocument/formatting",
        json!({"textDocument": {"uri": script}, "options": {"tabSize": 4, "insertSpaces": true}}),
    );
    assert_eq!(edits, json!([]));
}
