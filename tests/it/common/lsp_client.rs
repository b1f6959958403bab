//! A language-server client over stdio, as editors speak to
//! `function-starlark lsp`: for the LSP tests and the editor bench.

use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Long enough for a debug build on a loaded machine; answers come in
/// milliseconds.
const PATIENCE: Duration = Duration::from_secs(30);

pub struct Client {
    child: Child,
    stdin: ChildStdin,
    messages: Receiver<Value>,
    next_id: u64,
    /// Notifications seen while waiting for responses.
    pub notifications: Vec<Value>,
}

impl Client {
    /// Starts the server in `root` and initializes it.
    pub fn start(root: &std::path::Path, options: Value) -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_function-starlark"))
            .arg("lsp")
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the server starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let messages = super::framed::reader(stdout);
        let mut client = Client {
            child,
            stdin,
            messages,
            next_id: 0,
            notifications: Vec::new(),
        };
        let root_uri = format!("file://{}", root.display());
        let init = client.request(
            "initialize",
            json!({"processId": null, "rootUri": root_uri, "capabilities": {}, "initializationOptions": options}),
        );
        assert!(
            init["capabilities"]["signatureHelpProvider"].is_object(),
            "{init}"
        );
        client.notify("initialized", json!({}));
        client
    }

    fn send(&mut self, message: &Value) {
        super::framed::write(&mut self.stdin, message);
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and waits for its result.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = match self.messages.recv_timeout(left) {
                Ok(m) => m,
                Err(RecvTimeoutError::Timeout) => panic!("no answer to {method}"),
                Err(RecvTimeoutError::Disconnected) => panic!("the server left during {method}"),
            };
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                if let Some(error) = message.get("error") {
                    return json!({"error": error});
                }
                return message["result"].clone();
            }
            self.notifications.push(message);
        }
    }

    /// The next diagnostics published for `uri`.
    pub fn diagnostics(&mut self, uri: &str) -> Vec<Value> {
        let take = |n: &Value| {
            n["method"] == "textDocument/publishDiagnostics" && n["params"]["uri"] == uri
        };
        if let Some(i) = self.notifications.iter().position(take) {
            let n = self.notifications.remove(i);
            return n["params"]["diagnostics"]
                .as_array()
                .cloned()
                .unwrap_or_default();
        }
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self.messages.recv_timeout(left).expect("diagnostics come");
            if take(&message) {
                return message["params"]["diagnostics"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
            }
            self.notifications.push(message);
        }
    }

    pub fn open(&mut self, uri: &str, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "starlark", "version": 1, "text": text}}),
        );
    }

    pub fn change(&mut self, uri: &str, version: u64, text: &str) {
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}),
        );
    }

    pub fn at(uri: &str, line: u64, character: u64) -> Value {
        json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character}})
    }

    /// Shuts the server down and waits for it to exit.
    pub fn stop(mut self) {
        let _ = self.request("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        let deadline = Instant::now() + PATIENCE;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                assert!(status.success(), "the server exits cleanly: {status}");
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        panic!("the server did not exit");
    }
}
