//! The `encoding` namespace: base64 (standard and URL-safe), base32 and hex.
//!
//! Encoders use the `base64`, `data-encoding` and `hex` crates. Decoders
//! are ports of Go's `encoding/base64`, `encoding/base32` and
//! `encoding/hex`, because scripts see Go's error texts and their byte
//! offsets ("illegal base64 data at input byte N"), and Go's tolerances:
//! CR/LF anywhere, non-zero unused trailing bits.
//!
//! Decoded bytes that are valid UTF-8 come back as a `str`, as in the
//! reference. Go strings may hold any bytes; starlark-rust strings may not,
//! so other decoded bytes come back as `bytes` rather than being altered or
//! refused: hashing or re-encoding them still gives the reference's result.

use anyhow::anyhow;
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use starlark::environment::GlobalsBuilder;
use starlark::starlark_module;
use starlark::values::bytes::StarlarkBytes;
use starlark::values::{Heap, Value};

use super::crypto::str_or_bytes;

/// A decoder's `data`: `str` only.
fn text_arg<'v>(fn_name: &str, data: Value<'v>) -> anyhow::Result<&'v str> {
    data.unpack_str().ok_or_else(|| {
        anyhow!(
            "{fn_name}: for parameter data: got {}, want string",
            data.get_type()
        )
    })
}

/// Decoded bytes as a `str` when they are UTF-8, otherwise as `bytes`.
fn decoded(heap: Heap<'_>, bytes: Vec<u8>) -> Value<'_> {
    match String::from_utf8(bytes) {
        Ok(s) => heap.alloc(s),
        Err(e) => heap.alloc(StarlarkBytes::from_vec(e.into_bytes())),
    }
}

fn is_newline(c: u8) -> bool {
    c == b'\r' || c == b'\n'
}

/// The 6-bit value of a base64 character of the standard or URL alphabet.
fn base64_value(c: u8, url: bool) -> Option<u8> {
    match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' if !url => Some(62),
        b'/' if !url => Some(63),
        b'-' if url => Some(62),
        b'_' if url => Some(63),
        _ => None,
    }
}

/// Go's `base64.StdEncoding` (`padded`) or `RawURLEncoding` decoding. `Err`
/// is the offset Go reports.
fn base64_decode(src: &[u8], url: bool, padded: bool) -> Result<Vec<u8>, usize> {
    let mut out = Vec::with_capacity(src.len() / 4 * 3 + 3);
    let mut si = 0;
    // One quantum (up to four characters) per iteration, as Go's
    // `decodeQuantum`.
    while si < src.len() {
        let mut quantum = [0u8; 4];
        let mut len = 4;
        let mut trailing_garbage = None;
        let mut j = 0;
        while j < 4 {
            if si == src.len() {
                if j == 0 {
                    return Ok(out);
                }
                if j == 1 || padded {
                    return Err(si - j);
                }
                len = j;
                break;
            }
            let c = src[si];
            si += 1;
            if let Some(v) = base64_value(c, url) {
                quantum[j] = v;
                j += 1;
                continue;
            }
            if is_newline(c) {
                continue;
            }
            if !padded || c != b'=' {
                return Err(si - 1);
            }
            // Padding: only after two or three characters, `==` after two.
            match j {
                0 | 1 => return Err(si - 1),
                2 => {
                    while si < src.len() && is_newline(src[si]) {
                        si += 1;
                    }
                    if si == src.len() {
                        return Err(src.len());
                    }
                    if src[si] != b'=' {
                        return Err(si - 1);
                    }
                    si += 1;
                }
                _ => {}
            }
            while si < src.len() && is_newline(src[si]) {
                si += 1;
            }
            if si < src.len() {
                trailing_garbage = Some(si);
            }
            len = j;
            break;
        }
        let bits = (u32::from(quantum[0]) << 18)
            | (u32::from(quantum[1]) << 12)
            | (u32::from(quantum[2]) << 6)
            | u32::from(quantum[3]);
        let bytes = bits.to_be_bytes();
        out.extend_from_slice(&bytes[1..len]);
        if let Some(offset) = trailing_garbage {
            return Err(offset);
        }
    }
    Ok(out)
}

/// Go's `base32.StdEncoding.WithPadding(base32.NoPadding)` decoding. CR and
/// LF are removed first, so offsets count the remaining characters.
///
/// Go silently drops a final group of 1, 3 or 6 characters, which no
/// encoding produces; the spec makes that an error, reported at the end of
/// the input.
fn base32_decode(input: &[u8]) -> Result<Vec<u8>, usize> {
    let src: Vec<u8> = input.iter().copied().filter(|&c| !is_newline(c)).collect();
    let mut out = Vec::with_capacity(src.len() * 5 / 8);
    for (group, chunk) in src.chunks(8).enumerate() {
        let mut quantum = [0u8; 8];
        for (i, &c) in chunk.iter().enumerate() {
            quantum[i] = match c {
                b'A'..=b'Z' => c - b'A',
                b'2'..=b'7' => c - b'2' + 26,
                _ => return Err(group * 8 + i),
            };
        }
        let produced = match chunk.len() {
            2 => 1,
            4 => 2,
            5 => 3,
            7 => 4,
            8 => 5,
            _ => return Err(src.len()),
        };
        let bits = quantum
            .iter()
            .fold(0u64, |acc, &v| (acc << 5) | u64::from(v));
        out.extend_from_slice(&bits.to_be_bytes()[3..3 + produced]);
    }
    Ok(out)
}

/// Go's `%#U` of a byte taken as a rune: `U+0078 'x'`, without the quoted
/// character when Go does not consider it printable.
fn go_rune_text(b: u8) -> String {
    let printable = matches!(b, 0x20..=0x7e | 0xa1..=0xff) && b != 0xad;
    if printable {
        format!("U+{b:04X} '{}'", char::from(b))
    } else {
        format!("U+{b:04X}")
    }
}

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Go's `hex.DecodeString`: an invalid byte is reported before an odd
/// length.
fn hex_decode(src: &[u8]) -> Result<Vec<u8>, String> {
    let values = src
        .iter()
        .map(|&c| {
            hex_value(c).ok_or_else(|| format!("encoding/hex: invalid byte: {}", go_rune_text(c)))
        })
        .collect::<Result<Vec<u8>, String>>()?;
    if values.len() % 2 == 1 {
        return Err("encoding/hex: odd length hex string".to_owned());
    }
    Ok(values.chunks(2).map(|p| (p[0] << 4) | p[1]).collect())
}

/// The four decoders, by member name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decoder {
    B64,
    B64Url,
    B32,
    Hex,
}

impl Decoder {
    /// Every decoder.
    pub(crate) const ALL: [Decoder; 4] =
        [Decoder::B64, Decoder::B64Url, Decoder::B32, Decoder::Hex];

    /// The member's name (`b64dec`).
    pub(crate) fn member(self) -> &'static str {
        match self {
            Decoder::B64 => "b64dec",
            Decoder::B64Url => "b64url_dec",
            Decoder::B32 => "b32dec",
            Decoder::Hex => "hex_dec",
        }
    }

    /// The bytes `data` decodes to, or the member's error.
    pub(crate) fn decode(self, data: &str) -> Result<Vec<u8>, String> {
        let member = self.member();
        let illegal = |kind: &str, n: usize| {
            format!("encoding.{member}: illegal {kind} data at input byte {n}")
        };
        match self {
            Decoder::B64 => {
                base64_decode(data.as_bytes(), false, true).map_err(|n| illegal("base64", n))
            }
            Decoder::B64Url => {
                base64_decode(data.as_bytes(), true, false).map_err(|n| illegal("base64", n))
            }
            Decoder::B32 => base32_decode(data.as_bytes()).map_err(|n| illegal("base32", n)),
            Decoder::Hex => {
                hex_decode(data.as_bytes()).map_err(|e| format!("encoding.{member}: {e}"))
            }
        }
    }

    /// The text the matching encoder member gives for `bytes`.
    pub(crate) fn encode(self, bytes: &[u8]) -> String {
        match self {
            Decoder::B64 => STANDARD.encode(bytes),
            Decoder::B64Url => URL_SAFE_NO_PAD.encode(bytes),
            Decoder::B32 => data_encoding::BASE32_NOPAD.encode(bytes),
            Decoder::Hex => hex::encode(bytes),
        }
    }

    /// The member's call on a Starlark value.
    fn call<'v>(self, data: Value<'v>, heap: Heap<'v>) -> anyhow::Result<Value<'v>> {
        let data = text_arg(&format!("encoding.{}", self.member()), data)?;
        Ok(decoded(
            heap,
            self.decode(data).map_err(anyhow::Error::msg)?,
        ))
    }
}

/// Registers the `encoding` module.
pub(crate) fn register(builder: &mut GlobalsBuilder) {
    crate::values::module::register(builder, "encoding", encoding_members, None);
}

#[starlark_module]
fn encoding_members(builder: &mut GlobalsBuilder) {
    /// Encodes `data` (a string's UTF-8 bytes, or bytes) as standard base64
    /// with `=` padding (RFC 4648).
    ///
    /// # Example
    /// ```python
    /// encoding.b64enc("hello")  # "aGVsbG8="
    /// ```
    fn b64enc<'v>(data: Value<'v>) -> anyhow::Result<String> {
        Ok(Decoder::B64.encode(str_or_bytes("encoding.b64enc", data)?))
    }

    /// Decodes standard, padded base64. CR and LF are ignored; anything else
    /// outside the alphabet, missing padding or URL-safe characters are
    /// errors. Returns a string, or bytes when the result is not UTF-8.
    ///
    /// # Example
    /// ```python
    /// encoding.b64dec("aGVsbG8=")  # "hello"
    /// ```
    fn b64dec<'v>(data: Value<'v>, heap: Heap<'v>) -> anyhow::Result<Value<'v>> {
        Decoder::B64.call(data, heap)
    }

    /// Encodes `data` (a string's UTF-8 bytes, or bytes) as URL-safe base64
    /// (`-` and `_`) without padding.
    ///
    /// # Example
    /// ```python
    /// encoding.b64url_enc("hello?world&foo=bar")  # "aGVsbG8_d29ybGQmZm9vPWJhcg"
    /// ```
    fn b64url_enc<'v>(data: Value<'v>) -> anyhow::Result<String> {
        Ok(Decoder::B64Url.encode(str_or_bytes("encoding.b64url_enc", data)?))
    }

    /// Decodes URL-safe base64 without padding. CR and LF are ignored; `=`,
    /// `+`, `/` and impossible lengths are errors. Returns a string, or
    /// bytes when the result is not UTF-8.
    ///
    /// # Example
    /// ```python
    /// encoding.b64url_dec("aGVsbG8_d29ybGQmZm9vPWJhcg")  # "hello?world&foo=bar"
    /// ```
    fn b64url_dec<'v>(data: Value<'v>, heap: Heap<'v>) -> anyhow::Result<Value<'v>> {
        Decoder::B64Url.call(data, heap)
    }

    /// Encodes `data` (a string's UTF-8 bytes, or bytes) as base32 (RFC 4648
    /// alphabet `A-Z2-7`) without padding.
    ///
    /// # Example
    /// ```python
    /// encoding.b32enc("hello")  # "NBSWY3DP"
    /// ```
    fn b32enc<'v>(data: Value<'v>) -> anyhow::Result<String> {
        Ok(Decoder::B32.encode(str_or_bytes("encoding.b32enc", data)?))
    }

    /// Decodes upper-case base32 without padding. CR and LF are ignored;
    /// lower case, `=`, other characters and impossible lengths are errors.
    /// Returns a string, or bytes when the result is not UTF-8.
    ///
    /// # Example
    /// ```python
    /// encoding.b32dec("NBSWY3DP")  # "hello"
    /// ```
    fn b32dec<'v>(data: Value<'v>, heap: Heap<'v>) -> anyhow::Result<Value<'v>> {
        Decoder::B32.call(data, heap)
    }

    /// Encodes `data` (a string's UTF-8 bytes, or bytes) as lowercase
    /// hexadecimal, two characters per byte.
    ///
    /// # Example
    /// ```python
    /// encoding.hex_enc("hello")  # "68656c6c6f"
    /// ```
    fn hex_enc<'v>(data: Value<'v>) -> anyhow::Result<String> {
        Ok(Decoder::Hex.encode(str_or_bytes("encoding.hex_enc", data)?))
    }

    /// Decodes hexadecimal in either case. Returns a string, or bytes when
    /// the result is not UTF-8.
    ///
    /// # Example
    /// ```python
    /// encoding.hex_dec("68656C6C6F")  # "hello"
    /// ```
    fn hex_dec<'v>(data: Value<'v>, heap: Heap<'v>) -> anyhow::Result<Value<'v>> {
        Decoder::Hex.call(data, heap)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::{base32_decode, base64_decode, hex_decode};
    use crate::testing::{assert_eval, assert_fails, eval};

    #[test]
    fn encoding_is_a_module_listing_its_members() {
        assert_eval("type(encoding)", json!("module"));
        assert_eval("str(encoding)", json!("<module \"encoding\">"));
        assert_eval(
            "dir(encoding)",
            json!([
                "b32dec",
                "b32enc",
                "b64dec",
                "b64enc",
                "b64url_dec",
                "b64url_enc",
                "hex_dec",
                "hex_enc"
            ]),
        );
    }

    #[test]
    fn the_spec_examples_hold() {
        assert_eval("encoding.b64enc('hello')", json!("aGVsbG8="));
        assert_eval("encoding.b64enc('hello world')", json!("aGVsbG8gd29ybGQ="));
        assert_eval("encoding.b64dec('aGVsbG8=')", json!("hello"));
        assert_eval(
            "encoding.b64url_enc('hello?world&foo=bar')",
            json!("aGVsbG8_d29ybGQmZm9vPWJhcg"),
        );
        assert_eval(
            "encoding.b64url_dec('aGVsbG8_d29ybGQmZm9vPWJhcg')",
            json!("hello?world&foo=bar"),
        );
        assert_eval("encoding.b32enc('hello')", json!("NBSWY3DP"));
        assert_eval("encoding.b32dec('NBSWY3DP')", json!("hello"));
        assert_eval("encoding.hex_enc('hello')", json!("68656c6c6f"));
        assert_eval("encoding.hex_dec('68656C6C6F')", json!("hello"));
        assert_eval("encoding.hex_dec('68656c6c6f')", json!("hello"));
    }

    #[test]
    fn rfc_4648_vectors_encode() {
        let vectors = [
            ("", "", "", "", ""),
            ("f", "Zg==", "Zg", "MY", "66"),
            ("fo", "Zm8=", "Zm8", "MZXQ", "666f"),
            ("foo", "Zm9v", "Zm9v", "MZXW6", "666f6f"),
            ("foob", "Zm9vYg==", "Zm9vYg", "MZXW6YQ", "666f6f62"),
            ("fooba", "Zm9vYmE=", "Zm9vYmE", "MZXW6YTB", "666f6f6261"),
            (
                "foobar",
                "Zm9vYmFy",
                "Zm9vYmFy",
                "MZXW6YTBOI",
                "666f6f626172",
            ),
        ];
        for (plain, b64, b64url, b32, hex) in vectors {
            assert_eval(&format!("encoding.b64enc('{plain}')"), json!(b64));
            assert_eval(&format!("encoding.b64url_enc('{plain}')"), json!(b64url));
            assert_eval(&format!("encoding.b32enc('{plain}')"), json!(b32));
            assert_eval(&format!("encoding.hex_enc('{plain}')"), json!(hex));
            assert_eval(&format!("encoding.b64dec('{b64}')"), json!(plain));
            assert_eval(&format!("encoding.b64url_dec('{b64url}')"), json!(plain));
            assert_eval(&format!("encoding.b32dec('{b32}')"), json!(plain));
            assert_eval(&format!("encoding.hex_dec('{hex}')"), json!(plain));
        }
    }

    #[test]
    fn decoders_return_strings_and_empty_input_round_trips() {
        for f in ["b64dec", "b64url_dec", "b32dec", "hex_dec"] {
            assert_eval(&format!("type(encoding.{f}(''))"), json!("string"));
            assert_eval(&format!("encoding.{f}(data='')"), json!(""));
        }
        for f in ["b64enc", "b64url_enc", "b32enc", "hex_enc"] {
            assert_eval(&format!("encoding.{f}('')"), json!(""));
            assert_eval(&format!("encoding.{f}(b'')"), json!(""));
        }
    }

    #[test]
    fn encoders_take_bytes_like_the_same_text() {
        for f in ["b64enc", "b64url_enc", "b32enc", "hex_enc"] {
            assert_eval(
                &format!("encoding.{f}(b'h\\xc3\\xa9') == encoding.{f}('hé')"),
                json!(true),
            );
        }
        assert_eval("encoding.hex_enc(b'\\xff\\x00')", json!("ff00"));
        assert_eval("encoding.b64enc(b'\\xfb\\xff')", json!("+/8="));
        assert_eval("encoding.b64url_enc(b'\\xfb\\xff')", json!("-_8"));
    }

    #[test]
    fn decoded_bytes_that_are_not_utf8_come_back_as_bytes() {
        assert_eval("type(encoding.b64dec('//8='))", json!("bytes"));
        assert_eval("encoding.b64dec('//8=') == b'\\xff\\xff'", json!(true));
        assert_eval("encoding.hex_dec('ff00') == b'\\xff\\x00'", json!(true));
        assert_eval("type(encoding.b64url_dec('__8'))", json!("bytes"));
        assert_eval("type(encoding.b32dec('74'))", json!("bytes"));
        // They still hash and re-encode like the reference's byte strings.
        assert_eval("encoding.hex_enc(encoding.b64dec('//8='))", json!("ffff"));
        assert_eval(
            "crypto.sha256(encoding.hex_dec('ff')) == crypto.sha256(b'\\xff')",
            json!(true),
        );
    }

    #[test]
    fn b64dec_ignores_newlines_and_tolerates_unused_bits() {
        assert_eval("encoding.b64dec('aGVs\\nbG8=')", json!("hello"));
        assert_eval("encoding.b64dec('aGVs\\r\\nbG8=\\n')", json!("hello"));
        assert_eval("encoding.b64dec('aGVsbG8\\n=')", json!("hello"));
        assert_eval("encoding.b64dec('aGk=')", json!("hi"));
        assert_eval("encoding.b64dec('aGl=')", json!("hi"));
        assert_eval("encoding.b64url_dec('aG\\nk')", json!("hi"));
    }

    #[test]
    fn b64dec_reports_go_offsets() {
        for (input, offset) in [
            ("aGVsbG8", 4),  // missing padding
            ("aGVsbG8-", 7), // URL-safe character
            ("aGVs!G8=", 4), // bad character
            ("a===", 1),     // padding after one character
            ("aG=", 3),      // one `=` where two are needed
            ("aG=x", 2),     // `=` followed by something else
            ("aGk=aGk=", 4), // data after padding
            ("a", 0),
            ("====", 0),
        ] {
            assert_fails(
                &format!("encoding.b64dec('{input}')"),
                &format!("encoding.b64dec: illegal base64 data at input byte {offset}"),
            );
        }
    }

    #[test]
    fn b64url_dec_rejects_padding_standard_characters_and_impossible_lengths() {
        for (input, offset) in [("aGk=", 3), ("aGVsbG8+", 7), ("aGVsbG8/", 7), ("aGVsb", 4)] {
            assert_fails(
                &format!("encoding.b64url_dec('{input}')"),
                &format!("encoding.b64url_dec: illegal base64 data at input byte {offset}"),
            );
        }
    }

    #[test]
    fn b32dec_rejects_lower_case_padding_and_impossible_lengths() {
        assert_eval("encoding.b32dec('NBSW\\r\\nY3DP\\n')", json!("hello"));
        for (input, offset) in [
            ("nbswy3dp", 0),
            ("ME======", 2),
            ("NBSWY3D!", 7),
            ("NB\\nSWY3DPx", 8), // offsets count characters after CR/LF removal
            ("NBSWY3DPA", 9),
            ("ABC", 3),
            ("ABCDEF", 6),
            ("NBSWY3DP1", 8),
        ] {
            assert_fails(
                &format!("encoding.b32dec('{input}')"),
                &format!("encoding.b32dec: illegal base32 data at input byte {offset}"),
            );
        }
    }

    #[test]
    fn hex_dec_reports_an_invalid_byte_before_an_odd_length() {
        assert_fails(
            "encoding.hex_dec('6x')",
            "encoding.hex_dec: encoding/hex: invalid byte: U+0078 'x'",
        );
        assert_fails(
            "encoding.hex_dec('abc')",
            "encoding.hex_dec: encoding/hex: odd length hex string",
        );
        assert_fails(
            "encoding.hex_dec('ab g')",
            "encoding.hex_dec: encoding/hex: invalid byte: U+0020 ' '",
        );
        assert_fails(
            "encoding.hex_dec('abcdz')",
            "encoding.hex_dec: encoding/hex: invalid byte: U+007A 'z'",
        );
        assert_fails(
            "encoding.hex_dec('a\\n')",
            "encoding.hex_dec: encoding/hex: invalid byte: U+000A",
        );
        // Go reports the first byte of a multi-byte character, as a rune.
        assert_fails(
            "encoding.hex_dec('é0')",
            "encoding.hex_dec: encoding/hex: invalid byte: U+00C3 'Ã'",
        );
    }

    #[test]
    fn decoders_take_only_strings() {
        for f in ["b64dec", "b64url_dec", "b32dec", "hex_dec"] {
            assert_fails(
                &format!("encoding.{f}(b'aGk=')"),
                &format!("encoding.{f}: for parameter data: got bytes, want string"),
            );
            assert_fails(
                &format!("encoding.{f}(None)"),
                &format!("encoding.{f}: for parameter data: got NoneType, want string"),
            );
        }
    }

    #[test]
    fn encoders_reject_other_types() {
        for f in ["b64enc", "b64url_enc", "b32enc", "hex_enc"] {
            assert_fails(
                &format!("encoding.{f}(1)"),
                &format!("encoding.{f}: got int, want string or bytes"),
            );
            assert_fails(
                &format!("encoding.{f}([])"),
                &format!("encoding.{f}: got list, want string or bytes"),
            );
        }
        assert_fails("encoding.b64enc()", "data");
        assert_fails("encoding.b64enc('a', 'b')", "positional");
    }

    proptest! {
        #[test]
        fn decoding_inverts_encoding(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            use base64::Engine as _;
            let b64 = base64::engine::general_purpose::STANDARD.encode(&data);
            prop_assert_eq!(base64_decode(b64.as_bytes(), false, true), Ok(data.clone()));
            let url = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&data);
            prop_assert_eq!(base64_decode(url.as_bytes(), true, false), Ok(data.clone()));
            let b32 = data_encoding::BASE32_NOPAD.encode(&data);
            prop_assert_eq!(base32_decode(b32.as_bytes()), Ok(data.clone()));
            prop_assert_eq!(hex_decode(hex::encode(&data).as_bytes()), Ok(data.clone()));
        }

        #[test]
        fn newlines_anywhere_do_not_change_the_result(
            data in proptest::collection::vec(any::<u8>(), 0..32),
            at in any::<proptest::sample::Index>(),
        ) {
            use base64::Engine as _;
            let mut b64 = base64::engine::general_purpose::STANDARD.encode(&data).into_bytes();
            let mut b32 = data_encoding::BASE32_NOPAD.encode(&data).into_bytes();
            b64.insert(at.index(b64.len() + 1), b'\n');
            b32.insert(at.index(b32.len() + 1), b'\r');
            prop_assert_eq!(base64_decode(&b64, false, true), Ok(data.clone()));
            prop_assert_eq!(base32_decode(&b32), Ok(data));
        }

        #[test]
        fn text_round_trips_through_every_encoding(text in "\\PC{0,24}") {
            let literal = serde_json::to_string(&text).unwrap();
            for (enc, dec) in [
                ("b64enc", "b64dec"),
                ("b64url_enc", "b64url_dec"),
                ("b32enc", "b32dec"),
                ("hex_enc", "hex_dec"),
            ] {
                let back = eval(&format!("encoding.{dec}(encoding.{enc}({literal}))")).unwrap();
                prop_assert_eq!(back.as_str(), Some(text.as_str()));
            }
        }
    }

    /// Each decoder call of `tests/compat/encoding.jsonl` gives the bytes,
    /// or the error, that Go's encoding packages gave (recorded by
    /// `tools/goencoding`).
    #[test]
    fn decoders_match_the_recorded_go_results() {
        crate::testing::check_json_lines("tests/compat/encoding.jsonl", |vector| {
            let member = vector["member"].as_str().unwrap();
            let data = crate::testing::literal(vector["data"].as_str().unwrap());
            let got = eval(&format!("encoding.hex_enc(encoding.{member}({data}))"));
            let ok = match (vector["hex"].as_str(), &got) {
                (Some(hex), Ok(value)) => value.as_str() == Some(hex),
                (None, Err(e)) => e.contains(vector["error"].as_str().unwrap()),
                _ => false,
            };
            if ok {
                Ok(())
            } else {
                Err(format!("got {got:?}"))
            }
        });
    }
}
