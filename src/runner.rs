//! The runner: one job in, one answer out, on the current thread. It knows
//! nothing of processes; the transport brings it jobs through
//! [`crate::wire::Runs`].
//!
//! A [`Runtime`] holds what every run shares: the globals, built once, the
//! compiled-script cache and the request-independent modules ([`runtime`]).
//! A run ([`run`]) compiles the script, evaluates it on a thread of its own
//! with its budgets (ticks, call depth, memory, wall-clock time), loading
//! modules as it goes ([`loading`]); [`evaluate`] turns a job into a run
//! and the run's effects into the answer. [`errors`] words what stopped
//! a run as go.starlark.net does, with positions ([`go_position`]) mapped
//! to the user's lines; [`recursion`] refuses what Go refuses.
//! [`test_file`] runs Go-format Starlark test files on the same runtime;
//! [`debugging`] is what a debugger sees of runs.

pub mod compiled;
pub mod debugging;
pub mod errors;
pub mod evaluate;
pub(crate) mod go_position;
pub(crate) mod loading;
pub(crate) mod recursion;
pub mod run;
pub mod runtime;
pub mod test_file;

pub use run::{Outcome, Run};
pub use runtime::Runtime;
