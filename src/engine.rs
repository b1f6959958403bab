//! The engine: where scripts run, and what bounds them.
//!
//! A [`Job`] (the request as it arrived, the gathered sources, the
//! settings) goes to a worker; an [`Answer`] (the response as bytes and
//! the run's costs) comes back. Workers are reused, never spawned per
//! request, and at most [`Limits::concurrency`] run at once; a run still
//! going after its answer keeps its slot until it stops.
//!
//! Two kinds of worker, chosen by `--isolation`:
//! - [`processes`] (the server's default): worker processes of this same
//!   binary. Whatever a script does, the worst it can do is end its own
//!   worker: memory past the budget, a stack overflow, or native work that
//!   ignores the deadline cost that one request a Fatal result, and the
//!   worker is replaced.
//! - [`threads`]: threads of this process, for tests, the CLI, and those
//!   who trade that guarantee for a little speed. Budgets are enforced by
//!   the same checks, but a run that outlives them cannot be killed.
//!
//! Both run [`evaluate::evaluate`]. Budgets: interpreter ticks and call
//! depth (starlark-rust's), memory ([`crate::meter`]), wall-clock time (the
//! interpreter's cancellation check and every long native loop), and the
//! nesting of requests ([`depth`]) and sources (checked when they parse).

use std::sync::Arc;

pub use runtime::{Limits, Runtime};

pub mod depth;
pub mod errors;
pub mod evaluate;
pub(crate) mod go_position;
pub mod job;
pub(crate) mod loading;
pub mod poll;
pub mod processes;
pub(crate) mod recursion;
pub mod runtime;
pub mod test_file;
pub mod threads;
pub mod wire;
pub mod worker;

pub use job::{Answer, Job, Outcome};

/// Where the engine runs scripts.
pub enum Engine {
    /// In worker processes.
    Processes(processes::Pool),
    /// On threads of this process.
    Threads(threads::Pool),
}

impl Engine {
    /// An engine of worker threads over `runtime`.
    pub fn threads(runtime: Arc<Runtime>) -> Engine {
        Engine::Threads(threads::Pool::new(runtime))
    }

    /// An engine of worker processes started from this executable; a
    /// worker idle for `retire_idle_after` exits (`None`: never).
    pub fn processes(
        config: worker::Config,
        retire_idle_after: Option<std::time::Duration>,
    ) -> std::io::Result<Engine> {
        Ok(Engine::Processes(
            processes::Pool::new(config)?.retire_idle_after(retire_idle_after),
        ))
    }

    /// The limits every run has.
    pub fn limits(&self) -> &Limits {
        match self {
            Engine::Processes(pool) => pool.limits(),
            Engine::Threads(pool) => pool.limits(),
        }
    }

    /// Runs `job` and waits for its answer, which comes by the job's
    /// deadline plus a short grace whatever the script does.
    pub async fn run(&self, job: Job) -> Answer {
        match self {
            Engine::Processes(pool) => pool.run(job).await,
            Engine::Threads(pool) => pool.run(job).await,
        }
    }

    /// Starts the workers the engine keeps ready, so the first request
    /// does not wait for one.
    pub async fn warm_up(&self) -> std::io::Result<()> {
        match self {
            Engine::Processes(pool) => pool.warm_up().await,
            Engine::Threads(_) => Ok(()),
        }
    }
}
