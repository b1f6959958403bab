//! The transport: it carries a [`Job`] (the request as it arrived, the
//! gathered sources, the settings) to a worker and its [`Answer`] (the
//! response as bytes and the run's costs) back, and knows nothing of what
//! a run does: the worker hands each job to a runner ([`Runs`]). Workers
//! are reused, never spawned per request, and at most
//! [`Limits::concurrency`] run at once; a run still going after its answer
//! keeps its slot until it stops.
//!
//! Two kinds of worker, chosen by `--isolation`:
//! - [`processes`] (the server's default): worker processes of this same
//!   binary ([`worker`]). Whatever a script does, the worst it can do is
//!   end its own worker: memory past the budget, a stack overflow, or
//!   native work that ignores the deadline cost that one request a Fatal
//!   result, and the worker is replaced.
//! - [`threads`]: threads of this process, for tests, the CLI, and those
//!   who trade that guarantee for a little speed. Budgets are enforced by
//!   the same checks, but a run that outlives them cannot be killed.
//!
//! Budgets: the runner enforces ticks, call depth, memory and wall-clock
//! time; the transport adds the deadline's grace, after which it answers
//! for a run that has not, and replaces a worker that went over.

use std::sync::Arc;

use crate::limits::Limits;
use crate::wire::{Answer, Job, Runs};

pub mod poll;
pub mod processes;
pub mod threads;
pub mod worker;

/// Where the engine runs scripts.
pub enum Engine {
    /// In worker processes.
    Processes(processes::Pool),
    /// On threads of this process.
    Threads(threads::Pool),
}

impl Engine {
    /// An engine of worker threads, each running jobs on `runner`.
    pub fn threads(runner: Arc<dyn Runs>) -> Engine {
        Engine::Threads(threads::Pool::new(runner))
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
