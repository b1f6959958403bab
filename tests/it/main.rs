//! The integration tests, one binary: linking one test binary instead of
//! sixteen is most of what a test build costs on two cores.
//! `tests/compat_vectors.rs` stays a binary of its own: it installs the
//! process-wide tracing subscriber that captures what scripts print, which
//! would catch the prints of every other test running beside it.

mod common;
#[path = "../../benches/support/mod.rs"]
mod support;

mod architecture;
mod check_cli;
mod checklist;
mod dap;
mod docs;
mod editor;
mod engine;
mod examples;
mod format;
mod fuzz;
mod generate;
mod go_spec;
mod hostile;
mod lsp;
mod modules;
mod mutable_struct;
mod oci;
mod operability;
mod operations;
mod package;
mod recursion;
mod registry;
mod render;
mod render_cli;
mod schemas;
mod scripts;
mod sequencing;
mod serve;
mod stdlib;
mod test_cli;
mod tracebacks;
mod vscode;
mod xpkg;
