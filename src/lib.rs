//! function-starlark: a Crossplane composition function that runs Starlark.
//!
//! How one RunFunction request flows:
//!
//! 1. [`function`] starts the response from the SDK's copy-forward
//!    constructor, so nothing an earlier pipeline step desired is lost.
//! 2. [`input`] decodes the `StarlarkInput` strictly and checks it once:
//!    which script, read from where, with which settings.
//! 3. [`runtime`] compiles the script (pre-pass for the Go dialect, then
//!    starlark-rust's parser; cached by content hash) and evaluates it on a
//!    dedicated thread, with the request's globals ([`runtime::bindings`])
//!    and step, stack, heap and time limits.
//! 4. Builtins ([`builtins`]) read the request through [`convert`] and
//!    record into [`runtime::effects`]; they never touch the response.
//! 5. [`runtime::apply`] writes the effects into the response in the
//!    reference's stage order.
//! 6. Any [`error::Error`] becomes a Fatal result with a clear message.

pub mod apply;
pub mod bindings;
pub mod builtins;
pub mod cache;
pub mod cli;
pub mod convert;
pub mod crd;
pub mod docs;
// `#[derive(ProvidesStaticType)]` on the run context expands to an `unsafe impl`.
#[allow(unsafe_code)]
pub mod effects;
pub mod engine;
pub mod error;
pub mod function;
pub mod go;
pub mod input;
pub mod loader;
pub mod meter;
pub mod metrics;
pub mod server;
pub mod syntax;
#[cfg(test)]
pub(crate) mod testing;
// starlark's derives (`Trace`, `ProvidesStaticType`) expand to `unsafe impl`s.
#[allow(unsafe_code)]
pub mod values;

/// Every allocation is counted against the run that makes it (see
/// [`meter`]).
#[global_allocator]
static ALLOCATOR: meter::Counting = meter::Counting;
