//! Worker threads: runs on threads of this process, each with a stack deep
//! enough for the nesting the parser and the request decoder accept.
//! Threads are started as needed, up to the concurrency limit, and reused.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

use crate::error::Error;
use crate::limits::Limits;
use crate::meter::QUIET_BEFORE_RELEASE;
use crate::wire::codec::failed;
use crate::wire::{Answer, Job, Runs};

/// How long past its deadline a run may take to stop on its own.
pub const GRACE: Duration = Duration::from_millis(500);

struct Task {
    job: Job,
    cancel: Arc<AtomicBool>,
    answer: oneshot::Sender<Answer>,
    // Held until the run ends, even when nobody waits for its answer any
    // more: a run that ignores its deadline still takes a slot.
    _permit: OwnedSemaphorePermit,
}

/// The tasks waiting for a thread. Idle threads wait on it together, each
/// with its own timeout (see [`QUIET_BEFORE_RELEASE`]).
#[derive(Default)]
struct Queue {
    waiting: Mutex<Waiting>,
    ready: Condvar,
}

#[derive(Default)]
struct Waiting {
    tasks: VecDeque<Task>,
    /// Set when the pool is dropped: the threads end.
    closed: bool,
}

/// What a thread waiting on the queue gets.
enum Next {
    Task(Task),
    /// Nothing came within the timeout.
    Quiet,
    Closed,
}

impl Queue {
    fn waiting(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting.lock().expect("queue lock poisoned")
    }

    /// Queues `task`; `false` when the pool is closed.
    fn push(&self, task: Task) -> bool {
        let mut waiting = self.waiting();
        if waiting.closed {
            return false;
        }
        waiting.tasks.push_back(task);
        drop(waiting);
        self.ready.notify_one();
        true
    }

    /// The next task, waiting up to `timeout` for one (for ever without).
    fn next(&self, timeout: Option<Duration>) -> Next {
        let mut waiting = self.waiting();
        loop {
            if let Some(task) = waiting.tasks.pop_front() {
                return Next::Task(task);
            }
            if waiting.closed {
                return Next::Closed;
            }
            let Some(timeout) = timeout else {
                waiting = self.ready.wait(waiting).expect("queue lock poisoned");
                continue;
            };
            let (guard, wait) = self
                .ready
                .wait_timeout(waiting, timeout)
                .expect("queue lock poisoned");
            waiting = guard;
            if wait.timed_out() && waiting.tasks.is_empty() && !waiting.closed {
                return Next::Quiet;
            }
        }
    }

    fn close(&self) {
        self.waiting().closed = true;
        self.ready.notify_all();
    }
}

/// The pool of worker threads.
pub struct Pool {
    runner: Arc<dyn Runs>,
    permits: Arc<Semaphore>,
    queue: Arc<Queue>,
    started: AtomicUsize,
    idle: Arc<AtomicUsize>,
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.queue.close();
    }
}

impl Pool {
    /// A pool running jobs on `runner`, no thread started yet.
    pub fn new(runner: Arc<dyn Runs>) -> Pool {
        Pool {
            permits: Arc::new(Semaphore::new(runner.limits().concurrency.max(1))),
            runner,
            queue: Arc::default(),
            started: AtomicUsize::new(0),
            idle: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// The limits every run has.
    pub fn limits(&self) -> &Limits {
        self.runner.limits()
    }

    /// Runs `job` on a worker thread.
    pub async fn run(&self, job: Job) -> Answer {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        let request = job.request.clone();
        let timeout = Duration::from_millis(job.timeout_ms);
        let cancel = Arc::new(AtomicBool::new(false));
        let (tx, rx) = oneshot::channel();
        if let Err(e) = self.ensure_thread() {
            return failed(
                &request,
                &Error::Internal(format!("cannot start a worker thread: {e}")),
            );
        }
        let task = Task {
            job,
            cancel: cancel.clone(),
            answer: tx,
            _permit: permit,
        };
        if !self.queue.push(task) {
            return failed(
                &request,
                &Error::Internal("the worker threads are gone".to_owned()),
            );
        }
        // A caller that goes away (the future is dropped) stops the run.
        let _stop_on_drop = StopOnDrop(cancel.clone());
        match tokio::time::timeout(timeout + GRACE, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => failed(
                &request,
                &Error::Internal("the worker thread ended without an answer".to_owned()),
            ),
            Err(_) => {
                cancel.store(true, Ordering::Relaxed);
                failed(
                    &request,
                    &Error::TimeLimit {
                        seconds: timeout.as_secs(),
                        at: String::new(),
                    },
                )
            }
        }
    }

    /// Starts a thread when none is idle and the limit allows one more.
    fn ensure_thread(&self) -> std::io::Result<()> {
        if self.idle.load(Ordering::Acquire) > 0 {
            return Ok(());
        }
        let limit = self.limits().concurrency.max(1);
        let started = self.started.fetch_add(1, Ordering::AcqRel);
        if started >= limit {
            self.started.fetch_sub(1, Ordering::AcqRel);
            return Ok(());
        }
        let runner = self.runner.clone();
        let tasks = self.queue.clone();
        let idle = self.idle.clone();
        let spawned = std::thread::Builder::new()
            .name("starlark-worker".to_owned())
            .stack_size(self.limits().stack_bytes)
            .spawn(move || serve(&*runner, &tasks, &idle));
        if let Err(e) = spawned {
            self.started.fetch_sub(1, Ordering::AcqRel);
            return Err(e);
        }
        Ok(())
    }
}

/// Sets a run's cancel flag when dropped: once the run's answer is in, the
/// flag no longer matters; if the caller went away first, the run stops.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// A worker thread's life: take a task, run it, answer, until the pool is
/// dropped.
fn serve(runner: &dyn Runs, tasks: &Queue, idle: &AtomicUsize) {
    let mut tidy = false;
    loop {
        idle.fetch_add(1, Ordering::AcqRel);
        // Once it has tidied, a thread sleeps until the next task.
        let next = tasks.next(tidy.then_some(QUIET_BEFORE_RELEASE));
        idle.fetch_sub(1, Ordering::AcqRel);
        let task = match next {
            Next::Task(task) => task,
            Next::Quiet => {
                if std::mem::take(&mut tidy) {
                    crate::meter::release_freed_memory();
                }
                continue;
            }
            Next::Closed => return,
        };
        let answer = runner.run(task.job, &task.cancel, false);
        let _ = task.answer.send(answer);
        tidy = true;
    }
}
