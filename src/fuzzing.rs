//! The bodies of the fuzz targets: each takes the fuzzer's bytes, runs one
//! of the parsers that read untrusted input, and panics when a property
//! fails. `fuzz/fuzz_targets/<name>.rs` calls one under libFuzzer (nightly,
//! `cargo fuzz`); `tests/it/fuzz.rs` replays every committed corpus and
//! regression file through the same bodies on stable. How to run them and
//! what they found: docs/fuzzing.md.
//!
//! The differential targets also ask Go's own library for its answer to
//! each input ([`oracle`]) and fail on any difference but the departures
//! docs/departures.md lists.

#![doc(hidden)]

pub mod depth;
pub mod duration;
pub mod encoding;
pub mod float;
pub mod json;
pub mod oci;
pub mod oracle;
pub mod regex;
pub mod request;
pub mod syntax;
pub mod yaml;

/// A fuzz target's body.
pub type Body = fn(&[u8]);

/// Every target, by the name of its `fuzz/fuzz_targets/` file and of its
/// corpus folder.
pub const TARGETS: &[(&str, Body)] = &[
    ("yaml", yaml::yaml),
    ("json", json::json),
    ("regex", regex::regex),
    ("syntax", syntax::syntax),
    ("oci_reference", oci::oci_reference),
    ("duration", duration::duration),
    ("depth", depth::depth),
    ("request", request::request),
    ("float", float::float),
    ("encoding", encoding::encoding),
];

/// The Go tool each differential target asks (`tools/<tool>`).
pub const ORACLES: &[(&str, &str)] = &[
    ("yaml", "goyaml"),
    ("regex", "goregex"),
    ("float", "gofloat"),
    ("encoding", "goencoding"),
];

/// Runs `body` on `data` under libFuzzer, whose panic hook aborts the
/// process: the hook is wrapped, once, to let through the panics that
/// [`crate::panics::quietly`] expects and catches (libyaml-safer's).
pub fn run(body: Body, data: &[u8]) {
    static WRAPPED: std::sync::Once = std::sync::Once::new();
    WRAPPED.call_once(|| {
        let abort = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !crate::panics::is_quiet() {
                abort(info);
            }
        }));
    });
    body(data);
}

/// The fuzzer's bytes as text; targets whose parser reads Starlark strings
/// (always UTF-8) skip other inputs.
fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}
