//! The `Content-Length` framing the language server and the debug adapter
//! both speak on stdio, for the tests' clients.

use std::io::{BufRead, BufReader, Read, Write};
use std::sync::mpsc::{Receiver, channel};

use serde_json::Value;

/// Reads framed JSON messages from `output` on a thread of its own; they
/// arrive on the returned channel until the output ends.
pub fn reader(output: impl Read + Send + 'static) -> Receiver<Value> {
    let (tx, messages) = channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(output);
        loop {
            let mut length = 0usize;
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap_or(0) == 0 {
                    return;
                }
                let header = header.trim();
                if header.is_empty() {
                    break;
                }
                if let Some(n) = header.strip_prefix("Content-Length:") {
                    length = n.trim().parse().expect("a length");
                }
            }
            let mut body = vec![0; length];
            if reader.read_exact(&mut body).is_err() {
                return;
            }
            let value: Value = serde_json::from_slice(&body).expect("JSON");
            if tx.send(value).is_err() {
                return;
            }
        }
    });
    messages
}

/// Writes `message` framed to `input`.
pub fn write(input: &mut impl Write, message: &Value) {
    let body = message.to_string();
    write!(input, "Content-Length: {}\r\n\r\n{body}", body.len()).expect("write");
    input.flush().expect("flush");
}
