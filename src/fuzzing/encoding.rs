//! The `encoding` decoders (ports of Go's base64, base32 and hex), against
//! Go's encoding packages.
//!
//! The first byte picks the decoder, the rest (as text) is its input.
//! Decoded bytes encode to text that decodes back to them, as do the input
//! bytes themselves; with Go (`tools/goencoding`), the bytes or the error
//! are Go's, but for unpadded base32 of 1, 3 or 6 characters too many,
//! which Go drops and the reference refuses (src/builtins/encoding.rs).

use serde_json::json;

use super::oracle;
use crate::builtins::encoding::Decoder;

/// The target's body.
pub fn encoding(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let decoder = Decoder::ALL[usize::from(pick) % Decoder::ALL.len()];
    let text = String::from_utf8_lossy(rest);
    let ours = decoder.decode(&text);
    if let Ok(bytes) = &ours {
        round_trips(decoder, bytes);
    }
    round_trips(decoder, rest);
    if decoder == Decoder::B32 && matches!(text.replace(['\r', '\n'], "").len() % 8, 1 | 3 | 6) {
        return;
    }
    let request = json!({"member": decoder.member(), "data": text});
    let Some(go) = oracle::ask("goencoding", &request) else {
        return;
    };
    match (&ours, go["hex"].as_str(), go["error"].as_str()) {
        (Ok(bytes), Some(theirs), _) => assert_eq!(hex::encode(bytes), theirs, "{request}"),
        (Err(ours), None, Some(theirs)) => assert_eq!(ours, theirs, "{request}"),
        _ => panic!("{request}: ours {ours:?}, Go's {go}"),
    }
}

fn round_trips(decoder: Decoder, bytes: &[u8]) {
    let encoded = decoder.encode(bytes);
    assert_eq!(
        decoder.decode(&encoded).as_deref(),
        Ok(bytes),
        "{} of its own encoding {encoded:?}",
        decoder.member()
    );
}
