//! The one registry of predeclared names: exactly the reference's 37 names
//! (6 request globals, 25 functions, 6 namespaces) and each namespace's
//! members, no more and no fewer.

use std::collections::BTreeSet;

use function_starlark::bindings::REQUEST_GLOBALS;

const FUNCTIONS: [&str; 25] = [
    "Resource",
    "When",
    "skip_resource",
    "get",
    "get_label",
    "get_annotation",
    "set_condition",
    "emit_event",
    "fatal",
    "set_composite_ready",
    "set_connection_details",
    "set_xr_status",
    "get_observed",
    "require_extra_resource",
    "require_extra_resources",
    "get_extra_resource",
    "get_extra_resources",
    "is_observed",
    "observed_body",
    "get_condition",
    "schema",
    "field",
    "struct",
    "mutable_struct",
    "set_response_ttl",
];

const NAMESPACES: [(&str, &[&str]); 6] = [
    ("json", &["decode", "encode", "encode_indent", "indent"]),
    (
        "crypto",
        &[
            "blake3",
            "hmac_sha256",
            "md5",
            "sha1",
            "sha256",
            "sha512",
            "stable_id",
        ],
    ),
    (
        "encoding",
        &[
            "b32dec",
            "b32enc",
            "b64dec",
            "b64enc",
            "b64url_dec",
            "b64url_enc",
            "hex_dec",
            "hex_enc",
        ],
    ),
    (
        "dict",
        &[
            "compact",
            "deep_merge",
            "dig",
            "has_path",
            "merge",
            "omit",
            "pick",
        ],
    ),
    (
        "regex",
        &[
            "find",
            "find_all",
            "find_groups",
            "match",
            "replace",
            "replace_all",
            "split",
        ],
    ),
    ("yaml", &["decode", "decode_stream", "encode"]),
];

/// The Go dialect's `print`, `fail`, `str`, `repr`, `hash`, `int`,
/// `float`, `range` and `zip` replace the interpreter's own.
const UNIVERSE_REPLACEMENTS: [&str; 9] = [
    "print", "fail", "str", "repr", "hash", "int", "float", "range", "zip",
];

#[test]
fn scripts_see_exactly_the_reference_names() {
    let registered: BTreeSet<String> = function_starlark::docs::project_names()
        .into_iter()
        .filter(|n| !UNIVERSE_REPLACEMENTS.contains(&n.as_str()))
        .collect();
    let expected: BTreeSet<String> = FUNCTIONS
        .iter()
        .copied()
        .chain(NAMESPACES.iter().map(|(n, _)| *n))
        .map(str::to_owned)
        .collect();
    assert_eq!(registered, expected);
    // The reference's 37 names, and the two of Operations (`output`,
    // `watched`; docs/operations.md), which it does not have.
    assert_eq!(
        REQUEST_GLOBALS.len() + FUNCTIONS.len() + NAMESPACES.len(),
        39
    );
}

#[test]
fn each_namespace_has_exactly_its_members() {
    for (namespace, members) in NAMESPACES {
        let names = function_starlark::docs::module_members(namespace)
            .unwrap_or_else(|| panic!("{namespace} is not a module"));
        let expected: Vec<String> = members.iter().map(|m| (*m).to_owned()).collect();
        assert_eq!(names, expected, "{namespace}");
    }
}
