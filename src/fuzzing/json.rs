//! `json.decode` (a port of Go's scanner and go.starlark.net's decoder),
//! `json.encode` and `json.indent`.
//!
//! For each UTF-8 input that decodes: the value encodes; its encoding
//! decodes and encodes again to the same text (unless it holds DEL in an
//! all-ASCII string, which go.starlark.net writes as `\x7f`, and which no
//! JSON decoder reads); and that text indented decodes to the same value.

use starlark::environment::Module;

use crate::builtins::json::{decode_value, encode_value, indent_json};

/// The target's body.
pub fn json(data: &[u8]) {
    let Some(text) = super::text(data) else {
        return;
    };
    // Any text indents or fails cleanly.
    let _ = indent_json(text, "", "\t");
    Module::with_temp_heap(|module| {
        let heap = module.heap();
        let Ok(value) = decode_value(text, heap) else {
            return;
        };
        let encoded = encode_value(value, heap)
            .unwrap_or_else(|e| panic!("json.decode of {text:?} does not encode: {e}"));
        let again = match decode_value(&encoded, heap) {
            Ok(again) => again,
            // go.starlark.net quotes an all-ASCII string with strconv.Quote,
            // which writes DEL as `\x7f`: not JSON, in Go as here.
            Err(_) if encoded.contains("\\x7f") => return,
            Err(e) => panic!("{encoded:?}, encoded from {text:?}, does not decode: {e}"),
        };
        assert_eq!(
            encode_value(again, heap).as_ref(),
            Ok(&encoded),
            "{encoded:?} does not encode to itself"
        );
        let indented = indent_json(&encoded, " ", "\t")
            .unwrap_or_else(|e| panic!("{encoded:?} does not indent: {e}"));
        let reread = decode_value(&indented, heap)
            .and_then(|v| encode_value(v, heap))
            .unwrap_or_else(|e| panic!("{indented:?}, indented, does not decode: {e}"));
        assert_eq!(reread, encoded, "{indented:?} decodes to another value");
    });
}
