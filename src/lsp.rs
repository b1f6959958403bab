//! `function-starlark lsp`: a language server over stdio for `.star` files
//! and the inline scripts of Compositions. starlark_lsp serves completion,
//! hover and go-to-definition from the project's [`context`]; this front
//! sits between it and the editor to add what it lacks (signature help,
//! quick fixes, namespace members, signatures in completion, formatting),
//! to show it a Composition as its script, and to answer every request,
//! even ones neither knows.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use lsp_server::{Connection, ErrorCode, Message, RequestId, Response};
use serde_json::{Value, json};

mod actions;
mod constructors;
mod context;
mod documents;
mod formatting;
mod index;
mod inline;
mod outline;
mod signature;

use crate::docs::FunctionDoc;
use documents::Documents;

/// `lsp`'s flags.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct LspArgs {
    /// CRDs and XRDs to judge `Resource()` bodies against (else the
    /// `crds` initialization option, else `crds` in a
    /// `function-starlark.toml` at the workspace root).
    #[arg(long, value_name = "DIR")]
    pub crds: Option<PathBuf>,
}

/// The requests starlark_lsp answers; any other is answered here.
const SERVED_BEHIND: [&str; 4] = [
    "textDocument/definition",
    "textDocument/completion",
    "textDocument/hover",
    "starlark/fileContents",
];

/// Serves the editor on stdin and stdout until it exits.
pub fn main(args: &LspArgs) -> ExitCode {
    let (client, io) = Connection::stdio();
    // Deeply nested text (up to the parser's nesting limit) is walked
    // recursively here and behind, on a run's stack size.
    let stack = crate::limits::Limits::default().stack_bytes;
    let served = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("lsp-front".to_owned())
            .stack_size(stack)
            .spawn_scoped(scope, || serve(&client, args))
            .map_err(|e| format!("cannot start: {e}"))?
            .join()
            .unwrap_or_else(|_| Err("the server stopped on an internal error".to_owned()))
    });
    drop(client);
    let joined = io.join();
    match (served, joined) {
        (Ok(()), Ok(())) => ExitCode::SUCCESS,
        (Err(e), _) => {
            eprintln!("lsp: {e}");
            ExitCode::FAILURE
        }
        (_, Err(e)) => {
            eprintln!("lsp: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `function-starlark.toml`: the workspace's settings.
#[derive(serde::Deserialize, Default)]
struct Settings {
    crds: Option<PathBuf>,
}

/// The CRD directory: the flag, the initialization option, or the
/// workspace file (relative paths from the workspace root).
fn crds_dir(args: &LspArgs, params: &Value) -> Option<PathBuf> {
    if let Some(dir) = &args.crds {
        return Some(dir.clone());
    }
    let root = params
        .get("rootUri")
        .and_then(Value::as_str)
        .and_then(|u| u.strip_prefix("file://"))
        .map(PathBuf::from);
    let from_root = |p: PathBuf| match &root {
        Some(r) if p.is_relative() => r.join(p),
        _ => p,
    };
    if let Some(dir) = params
        .pointer("/initializationOptions/crds")
        .and_then(Value::as_str)
    {
        return Some(from_root(PathBuf::from(dir)));
    }
    let text = std::fs::read_to_string(root.as_ref()?.join("function-starlark.toml")).ok()?;
    let settings: Settings = toml::from_str(&text).unwrap_or_default();
    settings.crds.map(from_root)
}

/// What both directions of the front share.
struct Front {
    documents: Arc<Documents>,
    functions: HashMap<String, FunctionDoc>,
    /// Names of the namespaces (`dict`, `json`, ...) and their members.
    namespaces: HashMap<String, Vec<String>>,
    globals: Vec<String>,
    /// The workspace's `schema()` constructors, by name.
    constructors: std::collections::BTreeMap<String, Vec<PathBuf>>,
    /// Each open document's typed scope, as of the last version that
    /// parsed (the one being typed rarely does).
    scopes: Mutex<HashMap<String, Arc<crate::typed::Module>>>,
    /// Requests passed behind, by id: the method and the document.
    pending: Mutex<HashMap<RequestId, (String, Option<String>)>>,
}

impl Front {
    fn new(
        documents: Arc<Documents>,
        globals: Vec<String>,
        root: Option<&std::path::Path>,
    ) -> Front {
        let functions: HashMap<String, FunctionDoc> = crate::docs::functions()
            .into_iter()
            .map(|f| (f.name.clone(), f))
            .collect();
        let mut namespaces: HashMap<String, Vec<String>> = HashMap::new();
        for name in crate::docs::project_names() {
            if let Some(members) = crate::docs::module_members(&name) {
                namespaces.insert(name, members);
            }
        }
        Front {
            documents,
            functions,
            namespaces,
            globals,
            constructors: root.map(index::constructors).unwrap_or_default(),
            scopes: Mutex::new(HashMap::new()),
            pending: Mutex::new(HashMap::new()),
        }
    }

    /// Reads the typed scope of the document `uri` now holding `text`.
    fn rescope(&self, uri: &str, text: &str) {
        let Some(path) = uri.strip_prefix("file://") else {
            return;
        };
        // The OCI modules it loads, pulled once (their schemas, and their
        // failures as diagnostics on the load lines).
        crate::check::fetch_oci_modules(std::path::Path::new(path), text);
        if let Some(scope) = crate::check::typed_scope_of(std::path::Path::new(path), text) {
            self.scopes
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(uri.to_owned(), Arc::new(scope));
        }
    }

    fn scope(&self, uri: &str) -> Option<Arc<crate::typed::Module>> {
        self.scopes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(uri)
            .cloned()
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, (String, Option<String>)>> {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn uri_of(params: &Value) -> Option<String> {
    params
        .pointer("/textDocument/uri")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The text of `doc` before the position in `params`.
fn text_before(doc: &documents::Document, params: &Value) -> Option<String> {
    let line = usize::try_from(params.pointer("/position/line")?.as_u64()?).ok()?;
    let character = usize::try_from(params.pointer("/position/character")?.as_u64()?).ok()?;
    let mut out = String::new();
    for (i, text) in doc.text.lines().enumerate() {
        if i == line {
            let cut = text
                .char_indices()
                .nth(character)
                .map_or(text.len(), |(b, _)| b);
            out.push_str(&text[..cut]);
            return Some(out);
        }
        if doc.block.is_none_or(|b| b.holds(i)) {
            out.push_str(text);
        }
        out.push('\n');
    }
    Some(out)
}

/// Adds `by(line)` to the `character` of every position in `value`, except
/// inside locations of other documents.
fn shift_positions(value: &mut Value, uri: &str, by: &dyn Fn(usize) -> usize, sign: i64) {
    match value {
        Value::Object(map) => {
            let elsewhere = ["uri", "targetUri"].iter().any(|k| {
                map.get(*k)
                    .and_then(Value::as_str)
                    .is_some_and(|u| u != uri)
            });
            if elsewhere {
                return;
            }
            if let (Some(line), Some(Value::Number(c))) = (
                map.get("line").and_then(Value::as_u64),
                map.get("character"),
            ) && map.len() == 2
            {
                let shift = i64::try_from(by(usize::try_from(line).unwrap_or(0))).unwrap_or(0);
                let moved = c.as_i64().unwrap_or(0) + sign * shift;
                map.insert("character".to_owned(), json!(moved.max(0)));
                return;
            }
            for v in map.values_mut() {
                shift_positions(v, uri, by, sign);
            }
        }
        Value::Array(items) => {
            for v in items {
                shift_positions(v, uri, by, sign);
            }
        }
        _ => {}
    }
}

fn respond(client: &Connection, id: RequestId, result: Value) -> Result<(), String> {
    send(client, Message::Response(Response::new_ok(id, result)))
}

fn send(to: &Connection, message: Message) -> Result<(), String> {
    to.sender
        .send(message)
        .map_err(|e| format!("the connection closed: {e}"))
}

/// Serves one editor connection: starts starlark_lsp behind the front and
/// relays until the editor exits.
pub fn serve(client: &Connection, args: &LspArgs) -> Result<(), String> {
    let first = client
        .receiver
        .recv()
        .map_err(|_| "the editor closed the connection before initializing".to_owned())?;
    let init_params = match &first {
        Message::Request(r) if r.method == "initialize" => r.params.clone(),
        _ => return Err("the first message must be the initialize request".to_owned()),
    };
    let documents = Arc::new(Documents::default());
    let context = context::Context::new(documents.clone(), crds_dir(args, &init_params).as_deref());
    let root = init_params
        .get("rootUri")
        .and_then(Value::as_str)
        .and_then(|u| u.strip_prefix("file://"))
        .map(PathBuf::from);
    let front = Arc::new(Front::new(
        documents,
        context.global_names(),
        root.as_deref(),
    ));
    let (ours, theirs) = Connection::memory();
    let behind = std::thread::Builder::new()
        .name("starlark-lsp".to_owned())
        .stack_size(crate::limits::Limits::default().stack_bytes)
        .spawn(move || starlark_lsp::server::server_with_connection(theirs, context))
        .map_err(|e| format!("cannot start the language server: {e}"))?;
    if let Message::Request(r) = &first {
        front
            .pending()
            .insert(r.id.clone(), (r.method.clone(), None));
    }
    send(&ours, first)?;
    let replies = {
        let (front, client_out, from_behind) =
            (front.clone(), client.sender.clone(), ours.receiver.clone());
        std::thread::spawn(move || {
            for message in from_behind {
                let message = back_to_editor(&front, message);
                if client_out.send(message).is_err() {
                    break;
                }
            }
        })
    };
    for message in &client.receiver {
        let exit = matches!(&message, Message::Notification(n) if n.method == "exit");
        to_server(&front, client, &ours, message)?;
        if exit {
            break;
        }
    }
    drop(ours);
    let _ = behind.join();
    let _ = replies.join();
    Ok(())
}

/// A message from the editor: answered here, or passed behind.
fn to_server(
    front: &Front,
    client: &Connection,
    behind: &Connection,
    message: Message,
) -> Result<(), String> {
    match message {
        Message::Request(mut r) => {
            let uri = uri_of(&r.params);
            let doc = uri.as_deref().and_then(|u| front.documents.get(u));
            match r.method.as_str() {
                "textDocument/signatureHelp" => {
                    let before = doc.as_ref().and_then(|d| text_before(d, &r.params));
                    let constructor = before.as_deref().and_then(|b| {
                        let scope = front.scope(uri.as_deref()?)?;
                        constructors::place(b, &scope).map(|p| constructors::signature(&p))
                    });
                    let help = constructor.unwrap_or_else(|| {
                        let builtin = before
                            .as_deref()
                            .and_then(|b| signature::help(b, &front.functions));
                        serde_json::to_value(builtin).unwrap_or(Value::Null)
                    });
                    respond(client, r.id, help)
                }
                "textDocument/formatting" | "textDocument/rangeFormatting" => {
                    let range = (r.method == "textDocument/rangeFormatting")
                        .then(|| formatting::lines_of(&r.params))
                        .flatten();
                    let edits = match (&doc, &uri) {
                        (Some(d), Some(u)) => formatting::edits(u, &d.text, range),
                        _ => Value::Null,
                    };
                    respond(client, r.id, edits)
                }
                "textDocument/documentSymbol" => {
                    let symbols = doc.as_ref().map(outline::symbols).unwrap_or_default();
                    respond(client, r.id, Value::Array(symbols))
                }
                "textDocument/codeAction" => {
                    let diagnostics = given_diagnostics(&r.params);
                    let names = actions::Names {
                        functions: &front.functions,
                        globals: &front.globals,
                        constructors: &front.constructors,
                    };
                    let fixes = match (doc, uri.as_deref().map(str::parse::<lsp_types::Uri>)) {
                        (Some(d), Some(Ok(u))) => {
                            actions::quick_fixes(&u, &d, &diagnostics, &names)
                        }
                        _ => Vec::new(),
                    };
                    respond(
                        client,
                        r.id,
                        serde_json::to_value(fixes).unwrap_or(Value::Null),
                    )
                }
                "textDocument/hover"
                    if let Some(hover) = doc.as_ref().and_then(|d| {
                        field_hover(front, uri.as_deref()?, d, &r.params)
                            .or_else(|| builtin_hover(front, d, &r.params))
                    }) =>
                {
                    respond(client, r.id, hover)
                }
                "textDocument/completion"
                    if let Some(items) = doc
                        .as_ref()
                        .and_then(|d| text_before(d, &r.params))
                        .and_then(|before| {
                            constructor_completion(front, uri.as_deref()?, &before)
                                .or_else(|| member_completion(front, &before))
                        }) =>
                {
                    respond(client, r.id, items)
                }
                "initialize" | "shutdown" => {
                    front
                        .pending()
                        .insert(r.id.clone(), (r.method.clone(), None));
                    send(behind, Message::Request(r))
                }
                method if SERVED_BEHIND.contains(&method) && !well_formed(method, &r.params) => {
                    // starlark_lsp drops a request it cannot read, unanswered.
                    send(
                        client,
                        Message::Response(Response::new_err(
                            r.id,
                            ErrorCode::InvalidParams as i32,
                            format!("{method}: the parameters are not a text document position"),
                        )),
                    )
                }
                method if SERVED_BEHIND.contains(&method) => {
                    if let (Some(doc), Some(u)) = (&doc, &uri) {
                        shift_positions(&mut r.params, u, &|l| doc.shift(l), -1);
                    }
                    front
                        .pending()
                        .insert(r.id.clone(), (r.method.clone(), uri));
                    send(behind, Message::Request(r))
                }
                _ => send(
                    client,
                    Message::Response(Response::new_err(
                        r.id,
                        ErrorCode::MethodNotFound as i32,
                        format!("{} is not served", r.method),
                    )),
                ),
            }
        }
        Message::Notification(mut n) => {
            let uri = uri_of(&n.params);
            match (n.method.as_str(), &uri) {
                ("textDocument/didOpen", Some(u)) => {
                    let text = n
                        .params
                        .pointer("/textDocument/text")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    let starlark = front.documents.set(u, text.to_owned());
                    front.rescope(u, text);
                    n.params["textDocument"]["text"] = Value::String(starlark);
                }
                ("textDocument/didChange", Some(u)) => {
                    // Full sync: the last change is the whole text.
                    let text = n
                        .params
                        .pointer("/contentChanges")
                        .and_then(Value::as_array)
                        .and_then(|c| c.last())
                        .and_then(|c| c.get("text"))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    front.rescope(u, &text);
                    let starlark = front.documents.set(u, text);
                    n.params["contentChanges"] = json!([{"text": starlark}]);
                }
                ("textDocument/didClose", Some(u)) => front.documents.close(u),
                _ => {}
            }
            send(behind, Message::Notification(n))
        }
        Message::Response(r) => send(behind, Message::Response(r)),
    }
}

/// Whether a request starlark_lsp serves has parameters it can read.
fn well_formed(method: &str, params: &Value) -> bool {
    use lsp_types::{CompletionParams, GotoDefinitionParams, HoverParams};
    let p = params.clone();
    match method {
        "textDocument/completion" => serde_json::from_value::<CompletionParams>(p).is_ok(),
        "textDocument/hover" => serde_json::from_value::<HoverParams>(p).is_ok(),
        "textDocument/definition" => serde_json::from_value::<GotoDefinitionParams>(p).is_ok(),
        _ => params.pointer("/uri").is_some_and(Value::is_string),
    }
}

/// The diagnostics a code action request is about, read leniently: the
/// range, code and message are what the fixes need, and clients add
/// fields of their own.
fn given_diagnostics(params: &Value) -> Vec<lsp_types::Diagnostic> {
    let list = params
        .pointer("/context/diagnostics")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    list.iter()
        .filter_map(|d| {
            let range: lsp_types::Range = serde_json::from_value(d.get("range")?.clone()).ok()?;
            let code = match d.get("code")? {
                Value::String(s) => lsp_types::NumberOrString::String(s.clone()),
                Value::Number(n) => lsp_types::NumberOrString::Number(
                    n.as_i64().and_then(|n| i32::try_from(n).ok())?,
                ),
                _ => return None,
            };
            Some(lsp_types::Diagnostic {
                range,
                code: Some(code),
                message: d.get("message")?.as_str()?.to_owned(),
                source: d.get("source").and_then(Value::as_str).map(str::to_owned),
                data: d.get("data").cloned(),
                ..lsp_types::Diagnostic::default()
            })
        })
        .collect()
}

/// Hover on a builtin (`Resource`, `dict.merge`): its reference entry, as
/// completion and signature help show it. Other names are starlark_lsp's.
fn builtin_hover(front: &Front, doc: &documents::Document, params: &Value) -> Option<Value> {
    let row = params.pointer("/position/line")?.as_u64()?;
    let column = usize::try_from(params.pointer("/position/character")?.as_u64()?).ok()?;
    let line = doc.text.lines().nth(usize::try_from(row).ok()?)?;
    let word = |c: char| c.is_alphanumeric() || c == '_' || c == '.';
    let column = column.min(line.len());
    let start = line[..column].rfind(|c| !word(c)).map_or(0, |i| i + 1);
    let end = line[column..]
        .find(|c| !word(c))
        .map_or(line.len(), |i| column + i);
    let name = line.get(start..end)?;
    // A name the script binds itself is not the builtin.
    if doc.bound_names().contains(name) {
        return None;
    }
    let f = front.functions.get(name)?;
    Some(json!({
        "contents": {"kind": "markdown", "value": f.markdown},
        "range": {"start": {"line": row, "character": start}, "end": {"line": row, "character": end}},
    }))
}

/// Completion inside a constructor's call: its fields, or a field's
/// allowed values.
fn constructor_completion(front: &Front, uri: &str, before: &str) -> Option<Value> {
    let scope = front.scope(uri)?;
    let place = constructors::place(before, &scope)?;
    Some(json!({"isIncomplete": false, "items": constructors::completion(&place)}))
}

/// Hover on a field written as a keyword (`region = `) or dict key
/// (`"region": `) inside a constructor's call.
fn field_hover(
    front: &Front,
    uri: &str,
    doc: &documents::Document,
    params: &Value,
) -> Option<Value> {
    let scope = front.scope(uri)?;
    let row = params.pointer("/position/line")?.as_u64()?;
    let column = usize::try_from(params.pointer("/position/character")?.as_u64()?).ok()?;
    let line = doc.text.lines().nth(usize::try_from(row).ok()?)?;
    let word = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    let column = column.min(line.len());
    let start = line[..column].rfind(|c| !word(c)).map_or(0, |i| i + 1);
    let end = line[column..]
        .find(|c| !word(c))
        .map_or(line.len(), |i| column + i);
    let name = line.get(start..end)?;
    let after = line[end..].trim_start_matches(['"', '\'']).trim_start();
    if !(after.starts_with(':') || (after.starts_with('=') && !after.starts_with("=="))) {
        return None;
    }
    let mut at = params.clone();
    at["position"]["character"] =
        json!(line[..start].trim_end_matches(['"', '\'']).chars().count());
    let before = text_before(doc, &at)?;
    let markdown = constructors::hover(&before, name, &scope)?;
    Some(json!({
        "contents": {"kind": "markdown", "value": markdown},
        "range": {"start": {"line": row, "character": start}, "end": {"line": row, "character": end}},
    }))
}

/// Completion of a namespace's members after `ns.`.
fn member_completion(front: &Front, before: &str) -> Option<Value> {
    let line = before.lines().next_back().unwrap_or_default();
    let word_start = line
        .rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
        .map_or(0, |i| i + 1);
    let (namespace, _) = line[word_start..].rsplit_once('.')?;
    let members = front.namespaces.get(namespace)?;
    let items: Vec<Value> = members
        .iter()
        .map(|m| {
            let qualified = format!("{namespace}.{m}");
            let f = front.functions.get(&qualified);
            json!({
                "label": m,
                "kind": 3,
                "detail": f.map(|f| format!("{qualified}({})", f.params)),
                "documentation": f.map(|f| json!({"kind": "markdown", "value": f.markdown})),
            })
        })
        .collect();
    Some(Value::Array(items))
}

/// A message from starlark_lsp, made ready for the editor.
fn back_to_editor(front: &Front, message: Message) -> Message {
    match message {
        Message::Response(mut r) => {
            let Some((method, uri)) = front.pending().remove(&r.id) else {
                return Message::Response(r);
            };
            if let Some(result) = r.result.as_mut() {
                match method.as_str() {
                    "initialize" => add_capabilities(result),
                    "textDocument/completion" => add_signatures(front, result),
                    _ => {}
                }
                if let Some(doc) = uri.as_deref().and_then(|u| front.documents.get(u))
                    && let Some(u) = &uri
                {
                    shift_positions(result, u, &|l| doc.shift(l), 1);
                }
                inline::relocate(&front.documents, result);
            }
            Message::Response(r)
        }
        Message::Notification(n) => Message::Notification(n),
        Message::Request(r) => Message::Request(r),
    }
}

/// What the front adds to starlark_lsp's capabilities.
fn add_capabilities(result: &mut Value) {
    let caps = &mut result["capabilities"];
    caps["signatureHelpProvider"] = json!({"triggerCharacters": ["(", ","]});
    caps["codeActionProvider"] = json!({"codeActionKinds": ["quickfix"]});
    caps["completionProvider"] = json!({"triggerCharacters": [".", "(", ",", "{", "\""]});
    caps["documentSymbolProvider"] = json!(true);
    caps["documentFormattingProvider"] = json!(true);
    caps["documentRangeFormattingProvider"] = json!(true);
    result["serverInfo"] = json!({"name": "function-starlark", "version": crate::VERSION});
}

/// Each builtin's completion shows its signature.
fn add_signatures(front: &Front, result: &mut Value) {
    let items = match result {
        Value::Array(items) => items,
        Value::Object(list) => match list.get_mut("items") {
            Some(Value::Array(items)) => items,
            _ => return,
        },
        _ => return,
    };
    for item in items {
        let Some(label) = item.get("label").and_then(Value::as_str) else {
            continue;
        };
        if let Some(f) = front.functions.get(label) {
            item["detail"] = json!(format!("{}({})", f.name, f.params));
            item["documentation"] = json!({"kind": "markdown", "value": f.markdown});
        }
    }
}
