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

use std::sync::Arc;

use prometheus_client::registry::Registry;

pub mod builtins;
pub mod cli;
pub mod convert;
pub mod crd;
pub mod docs;
pub mod duration;
pub mod error;
pub mod function;
pub mod gofmt;
pub mod input;
pub mod loader;
pub mod metrics;
pub mod runtime;
#[cfg(test)]
pub(crate) mod testing;
// starlark's derives (`Trace`, `ProvidesStaticType`) expand to `unsafe impl`s.
#[allow(unsafe_code)]
pub mod values;

/// Serves the function until SIGTERM or SIGINT.
pub async fn serve(cli: cli::Cli) -> Result<(), function_sdk_rust::Error> {
    let mut registry = Registry::default();
    let metrics = metrics::Metrics::register(&mut registry);
    let runtime = Arc::new(runtime::Runtime::new(cli.limits(), cli.cache_size));
    let settings = input::Settings::from_process(cli.scripts_dir.clone());
    let oci = Arc::new(loader::oci::OciResolver::new(cli.oci()));
    let function = function::StarlarkFunction::new(runtime, settings, metrics).with_oci(oci);
    function_sdk_rust::Server::new(function, &cli.sdk)
        .metrics_registry(registry)
        .serve()
        .await
}
