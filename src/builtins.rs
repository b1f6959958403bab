//! Everything a script can see beyond the Starlark universe, registered in
//! one ordered list ([`register`]).

use anyhow::anyhow;
use starlark::environment::{GlobalsBuilder, LibraryExtension};
use starlark::eval::Evaluator;

use crate::effects::Context;

pub mod compare;
pub mod conditions;
pub mod core;
pub mod crypto;
pub mod dict;
pub mod encoding;
pub mod json;
pub mod methods;
pub mod numbers;
pub mod observed;
pub mod operators;
pub mod pop;
pub mod range;
pub mod regex;
pub mod requirements;
pub mod resources;
pub mod schema;
pub mod signatures;
pub mod status;
pub mod yaml;

/// The names a script sees on top of starlark-rust's standard globals, in
/// registration order. A golden test pins this list.
pub fn register(builder: &mut GlobalsBuilder) {
    register_language(builder);
    resources::register(builder);
    observed::register(builder);
    conditions::register(builder);
    status::register(builder);
    requirements::register(builder);
    register_namespaces(builder);
}

/// What a Go-format Starlark test file (`*_test.star` loading
/// `assert.star`) sees, as the Go implementation's test runner gives it:
/// the namespaces, `schema`, `field`, `struct`, `mutable_struct` and
/// `get`, and none of the builtins that read or write a request.
pub fn register_for_tests(builder: &mut GlobalsBuilder) {
    register_language(builder);
    observed::register_get(builder);
    register_namespaces(builder);
}

/// What every script sees, whether it composes or tests: the language's
/// own builtins and the Go dialect's methods.
fn register_language(builder: &mut GlobalsBuilder) {
    core::register(builder);
    numbers::register(builder);
    range::register(builder);
    operators::register(builder);
    compare::register(builder);
    pop::register(builder);
    methods::register(builder);
}

/// `schema` and the namespaces that read or write no request.
fn register_namespaces(builder: &mut GlobalsBuilder) {
    schema::register(builder);
    dict::register(builder);
    json::register(builder);
    crypto::register(builder);
    encoding::register(builder);
    regex::register(builder);
    yaml::register(builder);
}

/// starlark-rust's optional extensions scripts get: `set` only. The crate's
/// own `json`, `print` and `struct` are replaced by this project's.
pub const EXTENSIONS: &[LibraryExtension] = &[LibraryExtension::SetType];

/// The run's context, which every builtin records into.
pub(crate) fn context<'a>(eval: &'a Evaluator) -> anyhow::Result<&'a Context> {
    let ctx = eval
        .extra
        .and_then(|extra| extra.downcast_ref::<Context>())
        .ok_or_else(|| {
            anyhow!("this builtin is only available while a RunFunction request runs")
        })?;
    ctx.touched.set(ctx.touched.get() + 1);
    Ok(ctx)
}

/// The builtins that read the request through the running module's
/// original request globals rather than through [`context`]: a module
/// that names none of them, nor a request global, cannot see the request
/// except through [`context`].
pub const MODULE_READERS: [&str; 7] = [
    "get_observed",
    "is_observed",
    "observed_body",
    "get_condition",
    "get_extra_resource",
    "get_extra_resources",
    "set_xr_status",
];
