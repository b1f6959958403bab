//! function-starlark: a Crossplane composition function that runs Starlark.
//!
//! How one RunFunction request flows, top to bottom through the layers
//! (each module uses only those below it):
//!
//! 1. [`server`] takes the call (mTLS, health, reflection, [`metrics`]) and
//!    hands [`function`] the request as bytes, checked for depth
//!    ([`wire::depth`]) before anything decodes it.
//! 2. [`function`] reads the head of the request; [`input`] decodes the
//!    `StarlarkInput` strictly and checks it once: which script, read from
//!    where, with which settings.
//! 3. [`loader`] gathers every module `load()` can reach (inline, files,
//!    the embedded stdlib, OCI artifacts) before the run, reading `load`
//!    targets off tokens ([`syntax`]).
//! 4. [`transport`] carries the job ([`wire`]) to a worker process (or
//!    thread), where [`runner`] runs it under its budgets ([`limits`]):
//!    ticks, call depth, memory ([`meter`]), time, nesting. The runner
//!    decodes the request, starts the response from the SDK's
//!    copy-forward constructor (nothing an earlier step desired is lost),
//!    compiles the script ([`syntax`] pre-pass, starlark-rust's parser,
//!    cached by content in a [`cache`]) and evaluates it with the request's
//!    globals ([`bindings`], converted by [`convert`]).
//! 5. Builtins ([`builtins`]) read the request and record into
//!    [`effects`]; they never touch the response. [`values`] are the value
//!    types they add; [`go`] is the Go fidelity they share.
//! 6. [`apply`] writes the effects into the response, stage by stage, and
//!    the worker encodes it.
//! 7. Any [`error::Error`] becomes a Fatal result with a clear message; a
//!    gRPC status is only for a request that cannot be read at all.
//!
//! [`cli`] holds the flags and subcommands; [`render`] runs a Composition's
//! pipeline in-process as `crossplane render` does and [`test_runner`]
//! runs `*_test.star` and `*_test.yaml` tests on it; [`check`] finds
//! mistakes in scripts before they run; [`lsp`] serves editors what
//! `check` and the builtins' registry know, both judging `schema()`
//! constructor calls through [`typed`]; [`generate`] (`gen`) writes typed
//! `schema()` modules from CRDs, XRDs and Kubernetes' OpenAPI, which
//! [`push`] publishes as an OCI module package; [`docs`] and [`crd`]
//! generate `docs/builtins.md` and the input CRD from the code;
//! [`fuzzing`] holds the fuzz targets' bodies (docs/fuzzing.md).

pub mod apply;
pub mod bindings;
pub mod builtins;
pub mod cache;
pub mod check;
pub mod cli;
pub mod convert;
pub mod crd;
pub mod debugger;
pub mod docs;
// `#[derive(ProvidesStaticType)]` on the run context expands to an `unsafe impl`.
#[allow(unsafe_code)]
pub mod effects;
pub mod error;
pub mod format;
pub mod function;
#[doc(hidden)]
pub mod fuzzing;
pub mod generate;
pub mod go;
pub mod input;
pub mod limits;
pub mod loader;
pub mod lsp;
pub mod meter;
pub mod metrics;
pub mod openapi;
pub mod panics;
pub mod push;
pub mod render;
pub mod request;
pub mod runner;
pub mod server;
pub mod syntax;
pub mod test_runner;
#[cfg(test)]
pub(crate) mod testing;
pub mod transport;
pub mod typed;
// starlark's derives (`Trace`, `ProvidesStaticType`) expand to `unsafe impl`s.
#[allow(unsafe_code)]
pub mod values;
pub mod wire;

/// The function's version: the release's git tag when `package/build.sh`
/// builds from one (it sets `FUNCTION_STARLARK_VERSION` from
/// `package/version.sh`), else Cargo.toml's. `--version`, the language
/// server and the package's labels all show it.
pub const VERSION: &str = match option_env!("FUNCTION_STARLARK_VERSION") {
    Some(version) => version,
    None => env!("CARGO_PKG_VERSION"),
};

/// Every allocation is counted against the run that makes it (see
/// [`meter`]).
#[global_allocator]
static ALLOCATOR: meter::Counting = meter::Counting;
