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
    assert_eq!(
        first[0]["range"]["start"],
        json!({"line": 0, "character": 0})
    );
    client.change(&uri, 2, "x = 1\nResource(\"a\", {})\nundefined_thing\n");
    let second = client.diagnostics(&uri);
    assert_eq!(second.len(), 1, "{second:?}");
    assert_eq!(second[0]["code"], "undefined");
    assert_eq!(second[0]["range"]["start"]["line"], 2);
    let unknown = client.request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": uri}}),
    );
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    client.stop();
}
