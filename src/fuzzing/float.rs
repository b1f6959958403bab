//! Go's float text (`strconv.FormatFloat(f, 'g', -1, 64)`), which `str`,
//! `json.encode` and `yaml.encode` write floats with, against Go's strconv.
//!
//! The first 8 bytes (little-endian, zero-padded) are a float's bits. Its
//! text reads back as the same float, and with Go (`tools/gofloat`) is
//! Go's text.

use serde_json::json;

use super::oracle;
use crate::go::float::format_g;

/// The target's body.
pub fn float(data: &[u8]) {
    let mut bits = [0; 8];
    let n = data.len().min(8);
    bits[..n].copy_from_slice(&data[..n]);
    let f = f64::from_le_bytes(bits);
    let text = format_g(f);
    if f.is_finite() {
        let back: f64 = text
            .parse()
            .unwrap_or_else(|e| panic!("{text:?} does not read back: {e}"));
        assert_eq!(back.to_bits(), f.to_bits(), "{f:e} printed as {text:?}");
    }
    let hex = format!("{:016x}", f.to_bits());
    if let Some(go) = oracle::ask("gofloat", &json!({ "bits": hex })) {
        assert_eq!(Some(text.as_str()), go["g"].as_str(), "the text of {hex}");
    }
}
