//! The Debug Adapter Protocol's framing on stdin and stdout: each message
//! a `Content-Length` header, a blank line and that many bytes of JSON.

use std::io::{BufRead, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};

use serde_json::{Value, json};

/// The next message, `None` at the end of the input; a message that is not
/// JSON is an error naming what was wrong.
pub fn read(input: &mut impl BufRead) -> std::io::Result<Option<Value>> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if input.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let line = line.trim_end();
        if line.is_empty() {
            if length.is_some() {
                break;
            }
            continue;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length.unwrap_or(0)];
    input.read_exact(&mut body)?;
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// Where messages go: one writer, whole messages at a time, numbered.
pub struct Out {
    writer: Mutex<Box<dyn Write + Send>>,
    seq: AtomicI64,
}

impl Out {
    pub fn new(writer: Box<dyn Write + Send>) -> Self {
        Out {
            writer: Mutex::new(writer),
            seq: AtomicI64::new(1),
        }
    }

    /// Sends `message` with the next sequence number.
    fn send(&self, mut message: Value) {
        message["seq"] = json!(self.seq.fetch_add(1, Ordering::Relaxed));
        let body = message.to_string();
        let mut writer = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // A client that went away cannot be told anything more.
        let _ = write!(writer, "Content-Length: {}\r\n\r\n{body}", body.len());
        let _ = writer.flush();
    }

    /// Answers `request` with `body`, or with the error `message`.
    pub fn respond(&self, request: &Value, answer: Result<Value, String>) {
        let mut message = json!({
            "type": "response",
            "request_seq": request["seq"],
            "command": request["command"],
            "success": answer.is_ok(),
        });
        match answer {
            Ok(body) => message["body"] = body,
            Err(text) => message["message"] = json!(text),
        }
        self.send(message);
    }

    /// Sends the event `name` with `body`.
    pub fn event(&self, name: &str, body: Value) {
        self.send(json!({"type": "event", "event": name, "body": body}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_read_by_their_length_whatever_the_header_case() {
        let text = "Content-Length: 13\r\n\r\n{\"seq\": 1}   content-length: 2\r\n\r\n{}";
        let mut input = std::io::Cursor::new(text.as_bytes());
        assert_eq!(read(&mut input).unwrap(), Some(json!({"seq": 1})));
        assert_eq!(read(&mut input).unwrap(), Some(json!({})));
        assert_eq!(read(&mut input).unwrap(), None);
    }

    #[test]
    fn a_body_that_is_not_json_is_an_error() {
        let mut input = std::io::Cursor::new(b"Content-Length: 3\r\n\r\nabc".as_slice());
        assert!(read(&mut input).is_err());
    }
}
