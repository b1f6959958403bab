//! The standard library, compiled into the binary: `stdlib/*.star`. The
//! reference can only load it from an OCI registry; here a short form that
//! names it (`starlark-stdlib:v1/naming.star`) is answered from memory when
//! no default registry is configured, so it works out of the box.

/// The package name short forms use for the standard library.
pub const PACKAGE: &str = "starlark-stdlib";

/// The version tags the embedded copy answers.
pub const TAGS: &[&str] = &["v1", "v2"];

/// The embedded files, by file name.
pub const FILES: &[(&str, &str)] = &[
    (
        "conditions.star",
        include_str!("../../stdlib/conditions.star"),
    ),
    ("labels.star", include_str!("../../stdlib/labels.star")),
    ("naming.star", include_str!("../../stdlib/naming.star")),
    (
        "networking.star",
        include_str!("../../stdlib/networking.star"),
    ),
];

/// The module key of a short-form target that names an embedded file.
pub fn resolve(raw: &str) -> Option<&str> {
    let (package, rest) = raw.split_once(':')?;
    let (tag, file) = rest.split_once('/')?;
    (package == PACKAGE && TAGS.contains(&tag) && source_of(file).is_some()).then_some(raw)
}

/// The source of an embedded module, by module key.
pub fn source(key: &str) -> Option<&'static str> {
    let (_, file) = key.split_once('/')?;
    source_of(file)
}

fn source_of(file: &str) -> Option<&'static str> {
    FILES
        .iter()
        .find(|(name, _)| *name == file)
        .map(|(_, text)| *text)
}
