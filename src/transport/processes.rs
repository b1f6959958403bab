//! Worker processes: each run happens in a process of this same binary
//! (see [`super::worker`]), so that nothing a script does can take the
//! server down. Workers are started as needed and reused; one that went
//! over a budget, crashed or outlived its deadline is stopped and replaced
//! by a fresh one on demand.
//!
//! Jobs wait in one queue, and each worker process has a driver task
//! ([`lane`]) that takes jobs from it, writes them to the worker's socket
//! and hands each answer back to its request. A worker holds up to
//! [`DEPTH`] jobs: the one it runs and the next, already in its socket,
//! so that a busy worker goes from one job to the next without sleeping
//! and without waiting for the server. Every crossing of the socket that
//! wakes a sleeping process costs tens of microseconds of CPU on a
//! virtual machine (docs/architecture.md, "Lanes and the queue"); under
//! load, jobs and answers cross without waking anyone, several per system
//! call.
//! An idle worker takes one job; a second waits behind a running one only
//! when no worker is idle, and for at most [`WITHDRAW_AFTER`]: then it
//! goes back to the front of the queue, and the worker skips it if it
//! gets to it after all.
//!
//! Two lanes keep long runs from holding up short ones. At most
//! [`Limits::concurrency`] workers take jobs (the fast lane). A run still
//! going after [`DEMOTE_AFTER`] gets its worker's CPU priority lowered to
//! the least (nice 19); the job waiting behind it goes back to the front
//! of the queue, and the worker moves to the slow lane (twice as many runs
//! at once) when it has room, so that a fresh worker takes its place. A
//! demoted worker is killed as soon as it answers: an unprivileged process
//! cannot raise its priority again, and the job it might have started
//! next has gone elsewhere.
//!
//! A worker runs jobs in the order they came, so when one dies the job it
//! was running is the first one not answered: that job gets the Fatal
//! result, and the jobs behind it go back to the queue.
//!
//! A worker left idle for [`Pool::retire_idle_after`] (60 s by default)
//! exits, so a function nobody calls holds only the server's memory; the
//! next request starts a worker again (a few milliseconds).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use prost::Message;
use tokio::process::{Child, Command};
use tokio::sync::{Notify, oneshot, watch};

use super::worker::{self, Config};
use crate::error::Error;
use crate::limits::Limits;
use crate::wire::codec::failed;
use crate::wire::{Answer, Job};

mod lane;
mod socket;

use socket::WorkerSocket;

/// How long past its deadline a run may take before its worker is killed.
pub const GRACE: Duration = Duration::from_millis(50);

/// How long a run may take before it moves to the slow lane.
pub const DEMOTE_AFTER: Duration = Duration::from_millis(100);

/// Jobs a worker holds at once: the one it runs and the one after it.
/// Two already saves most of the wake-ups; more would hold more jobs
/// behind a long run.
pub const DEPTH: usize = 2;

/// How long a job sent behind another may wait for it before it goes back
/// to the queue for any worker to take (the worker it was sent to skips
/// it): longer than most runs, short against a slow one.
pub const WITHDRAW_AFTER: Duration = Duration::from_millis(10);

/// How long a worker may stay idle before it exits, unless set.
pub const DEFAULT_IDLE_RETIREMENT: Duration = Duration::from_mins(1);

/// One worker process and the socket to it.
struct Worker {
    child: Child,
    socket: WorkerSocket,
}

/// A job waiting for a worker, or in one.
struct Queued {
    /// The job's frame, in pieces (see [`worker::job_frame`]).
    frame: [Bytes; 3],
    /// The run's time limit.
    timeout: Duration,
    /// Where its end goes.
    answer: oneshot::Sender<Ended>,
}

/// How a job sent to a worker ended.
enum Ended {
    /// The worker answered: the answer's encoding.
    Answered(Bytes),
    /// The worker reported going over its memory budget and stopped.
    OverBudget(usize),
    /// The worker stopped without an answer.
    Died(String),
    /// The deadline and grace passed.
    TimedOut,
    /// No worker could be started.
    NoWorker(String),
}

/// The pool of worker processes.
pub struct Pool {
    limits: Limits,
    config: Config,
    shared: Arc<Shared>,
}

/// What the pool and its lanes share.
struct Shared {
    exe: PathBuf,
    config_json: String,
    /// Workers that take jobs at once (the fast lane).
    lanes: usize,
    /// Demoted workers that may run at once (the slow lane).
    slow_lanes: usize,
    poll_budget: Duration,
    /// Idle workers older than this exit; `None` keeps them.
    idle_retirement: Option<Duration>,
    /// [`WITHDRAW_AFTER`] and [`DEMOTE_AFTER`], unless a test moves them.
    withdraw_after: Duration,
    demote_after: Duration,
    state: Mutex<State>,
    /// Wakes an idle lane when a job is queued: the one that became idle
    /// last ([`Notify::notify_last`]), whose worker may still be polling
    /// for a next job and whose caches are warm.
    jobs: Notify,
    /// Wakes a busy lane with room for a job behind its run, when a job
    /// is queued and no lane is idle.
    room: Notify,
    /// Jobs queued or in workers, and whether there has been only one of
    /// late: that one polls for its answer.
    flight: Flight,
    /// How the first worker to say it is ready or to stop before it did
    /// ended: ready, or why it stopped. Unset until then.
    first: watch::Sender<Option<Result<(), String>>>,
}

/// The queue and the count of workers, under one lock.
#[derive(Default)]
struct State {
    /// Jobs no worker has taken yet, oldest first.
    queue: VecDeque<Queued>,
    /// Workers of the fast lane, starting ones included.
    workers: usize,
    /// Of those, the ones with no job (a starting one is idle: it takes
    /// the first job queued).
    idle: usize,
    /// Of those, the ones whose worker has not said it is ready.
    starting: usize,
    /// Demoted workers still running.
    slow: usize,
}

impl Pool {
    /// A pool of workers started from the current executable.
    pub fn new(config: Config) -> std::io::Result<Pool> {
        let exe = std::env::current_exe()?;
        let config_json = serde_json::to_string(&config).map_err(std::io::Error::other)?;
        let lanes = config.concurrency.max(1);
        Ok(Pool {
            limits: config.limits(),
            shared: Arc::new(Shared {
                exe,
                config_json,
                lanes,
                slow_lanes: lanes * 2,
                poll_budget: config.poll_budget(),
                idle_retirement: Some(DEFAULT_IDLE_RETIREMENT),
                withdraw_after: WITHDRAW_AFTER,
                demote_after: DEMOTE_AFTER,
                state: Mutex::default(),
                jobs: Notify::new(),
                room: Notify::new(),
                flight: Flight::new(config.poll_budget(), CALM_AFTER),
                first: watch::Sender::new(None),
            }),
            config,
        })
    }

    /// Lets workers idle for `after` exit (`None`: never).
    #[must_use]
    pub fn retire_idle_after(mut self, after: Option<Duration>) -> Pool {
        Arc::get_mut(&mut self.shared)
            .expect("no worker runs before the pool is configured")
            .idle_retirement = after.filter(|d| !d.is_zero());
        self
    }

    /// The limits every run has.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The configuration workers are started with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Starts a worker unless one runs, and waits until a worker is ready
    /// (it has run a trivial script, so its caches are warm). Requests
    /// arriving meanwhile wait for this worker instead of starting their
    /// own, and the first of them is its first job: nothing runs ahead of
    /// it.
    pub async fn warm_up(&self) -> std::io::Result<()> {
        {
            let mut state = self.shared.lock();
            if state.workers == 0 {
                self.shared.launch(&mut state)?;
            }
        }
        let mut first = self.shared.first.subscribe();
        let outcome = first
            .wait_for(Option::is_some)
            .await
            .map_err(std::io::Error::other)?;
        match outcome.as_ref() {
            Some(Err(why)) => Err(std::io::Error::other(format!(
                "the first worker stopped before it was ready ({why})"
            ))),
            _ => Ok(()),
        }
    }

    /// Starts workers from `exe` rather than the current executable (tests
    /// run the pool from a test binary).
    #[must_use]
    pub fn spawning(mut self, exe: PathBuf) -> Pool {
        Arc::get_mut(&mut self.shared)
            .expect("no worker runs before the pool is configured")
            .exe = exe;
        self
    }

    /// Moves [`WITHDRAW_AFTER`] and [`DEMOTE_AFTER`] (tests take one
    /// rule at a time out of play).
    #[must_use]
    pub fn timing(mut self, withdraw_after: Duration, demote_after: Duration) -> Pool {
        let shared =
            Arc::get_mut(&mut self.shared).expect("no worker runs before the pool is configured");
        shared.withdraw_after = withdraw_after;
        shared.demote_after = demote_after;
        self
    }

    /// Runs `job` in a worker process.
    pub async fn run(&self, job: Job) -> Answer {
        let timeout = Duration::from_millis(job.timeout_ms);
        let error = match self.submit(&job).await {
            Ended::Answered(bytes) => match Answer::decode(bytes) {
                Ok(answer) => return answer,
                Err(e) => Error::Internal(format!(
                    "the worker process running {} gave an unreadable answer: {e}",
                    job.filename
                )),
            },
            Ended::OverBudget(limit) => Error::MemoryLimit {
                mib: limit >> 20,
                at: String::new(),
            },
            Ended::TimedOut => Error::TimeLimit {
                seconds: timeout.as_secs(),
                at: String::new(),
            },
            Ended::Died(why) => Error::Internal(format!(
                "the worker process running {} stopped before answering ({why}); the script may have nested too deep for the native stack; the worker was replaced",
                job.filename
            )),
            Ended::NoWorker(why) => {
                Error::Internal(format!("cannot start a worker process: {why}"))
            }
        };
        failed(&job.request, &error)
    }

    /// Queues `job` and waits for how it ended.
    async fn submit(&self, job: &Job) -> Ended {
        let (answer, ended) = oneshot::channel();
        let _counted = self.shared.flight.enter();
        self.shared.enqueue(Queued {
            frame: worker::job_frame(job, self.shared.flight.alone()),
            timeout: Duration::from_millis(job.timeout_ms),
            answer,
        });
        ended
            .await
            .unwrap_or_else(|_| Ended::Died("its worker's driver stopped".to_owned()))
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().expect("pool lock poisoned")
    }

    /// Queues a job, starting a worker for it when none is idle or
    /// starting and the fast lane has room.
    fn enqueue(self: &Arc<Self>, queued: Queued) {
        let mut state = self.lock();
        state.queue.push_back(queued);
        self.offer(state);
    }

    /// Puts jobs a worker could not run back at the front of the queue,
    /// in their order.
    fn requeue(self: &Arc<Self>, jobs: impl DoubleEndedIterator<Item = Queued>) {
        let mut state = self.lock();
        let mut any = false;
        for job in jobs.rev() {
            state.queue.push_front(job);
            any = true;
        }
        if any {
            self.offer(state);
        }
    }

    /// Tells the lanes jobs wait: an idle one (or a new one, started
    /// here when none is idle), else a busy one with room behind its run.
    /// Consumes the lock.
    fn offer(self: &Arc<Self>, state: MutexGuard<'_, State>) {
        let idle = state.idle > 0;
        if self.start_workers(state) || idle {
            self.jobs.notify_last();
        } else {
            self.room.notify_last();
        }
    }

    /// Starts a worker when jobs wait, no worker is idle or starting, and
    /// the fast lane has room. Consumes the lock; whether it started one.
    fn start_workers(self: &Arc<Self>, mut state: MutexGuard<'_, State>) -> bool {
        if state.queue.is_empty()
            || state.idle > 0
            || state.starting > 0
            || state.workers >= self.lanes
        {
            return false;
        }
        match self.launch(&mut state) {
            Ok(()) => true,
            Err(e) => {
                tracing::error!(error = %e, "cannot start a worker process");
                if state.workers == 0 {
                    // Nobody will take the queued jobs: they fail now.
                    let waiting = std::mem::take(&mut state.queue);
                    drop(state);
                    for job in waiting {
                        let _ = job.answer.send(Ended::NoWorker(e.to_string()));
                    }
                }
                false
            }
        }
    }

    /// Starts a worker and its lane, counted idle and starting.
    fn launch(self: &Arc<Self>, state: &mut State) -> std::io::Result<()> {
        let worker = self.spawn()?;
        state.workers += 1;
        state.idle += 1;
        state.starting += 1;
        tokio::spawn(lane::drive(self.clone(), worker));
        Ok(())
    }

    /// Records how the first worker to be ready, or to stop before it
    /// was, ended; later ones change nothing.
    fn first_ended(&self, outcome: Result<(), String>) {
        self.first.send_if_modified(|first| {
            let unset = first.is_none();
            if unset {
                *first = Some(outcome);
            }
            unset
        });
    }

    fn spawn(&self) -> std::io::Result<Worker> {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair()?;
        ours.set_nonblocking(true)?;
        let child = Command::new(&self.exe)
            .arg(worker::ARG)
            .arg(&self.config_json)
            .stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()?;
        Ok(Worker {
            child,
            socket: WorkerSocket::new(ours)?,
        })
    }
}

/// How long only one job at a time must have been in flight before
/// waits poll again. Under load a second job is in flight every few
/// microseconds, and a thread polling for one answer then holds a core
/// that the server's other requests and the workers need (measured: up
/// to 29% fewer requests per second at 16 at once with polling on); a
/// caller sending one request after another never has two in flight.
pub const CALM_AFTER: Duration = Duration::from_millis(20);

/// The jobs in flight, and when waits may poll.
///
/// Polling pays for a caller that sends its next request as soon as it
/// has the answer (a test suite, a render loop, a benchmark): the next job
/// and each answer come within the poll budget. A controller reconciling
/// now and then sends a job milliseconds after the last one left; the
/// worker's poll for its next job then always runs out, and that CPU is
/// most of what such a call costs. So a lone job polls only when it
/// entered within the poll budget of the last one leaving.
struct Flight {
    count: AtomicUsize,
    /// [`worker::monotonic_nanos`] from which a lone job polls:
    /// `calm_after` past the last time a job entered with another in
    /// flight (0 until then).
    calm_from: AtomicU64,
    /// [`CALM_AFTER`], unless a test moves it.
    calm_after: Duration,
    /// [`worker::monotonic_nanos`] when a job last left (0 until one has).
    left_at: AtomicU64,
    /// Whether the last job that entered alone followed the one before it
    /// within `within`.
    following: AtomicBool,
    /// The poll budget.
    within: Duration,
}

impl Flight {
    fn new(poll_budget: Duration, calm_after: Duration) -> Flight {
        Flight {
            count: AtomicUsize::new(0),
            calm_from: AtomicU64::new(0),
            calm_after,
            left_at: AtomicU64::new(0),
            following: AtomicBool::new(false),
            within: poll_budget,
        }
    }

    /// Counts a job in flight until the guard is dropped.
    fn enter(&self) -> InFlight<'_> {
        if self.count.fetch_add(1, Ordering::AcqRel) > 0 {
            self.calm_from.store(
                worker::monotonic_nanos_after(self.calm_after),
                Ordering::Release,
            );
        } else {
            let left_at = self.left_at.load(Ordering::Acquire);
            let since = Duration::from_nanos(worker::monotonic_nanos().saturating_sub(left_at));
            self.following
                .store(left_at != 0 && since <= self.within, Ordering::Release);
        }
        InFlight(self)
    }

    /// Whether a single job is in flight, none has had company for
    /// `calm_after`, and it followed the last one closely: only then is
    /// a wait worth polling for.
    fn alone(&self) -> bool {
        self.count.load(Ordering::Acquire) == 1
            && self.following.load(Ordering::Acquire)
            && worker::monotonic_nanos() >= self.calm_from.load(Ordering::Acquire)
    }
}

/// A job counted in flight until dropped.
struct InFlight<'a>(&'a Flight);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0
            .left_at
            .store(worker::monotonic_nanos(), Ordering::Release);
        self.0.count.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The poll budget and the calm the tests give a flight: long enough
    /// that no scheduling delay between two statements reaches it, even
    /// on a busy machine.
    const BUDGET: Duration = Duration::from_secs(1);

    #[test]
    fn a_lone_job_that_follows_the_last_closely_polls() {
        let flight = Flight::new(BUDGET, BUDGET);
        let first = flight.enter();
        assert!(!flight.alone(), "the first job follows nothing");
        drop(first);
        let only = flight.enter();
        assert!(flight.alone());
        drop(only);
        let _next = flight.enter();
        assert!(flight.alone(), "one job after another stays alone");
    }

    #[test]
    fn a_job_long_after_the_last_does_not_poll() {
        let flight = Flight::new(BUDGET, BUDGET);
        drop(flight.enter());
        std::thread::sleep(BUDGET + Duration::from_millis(100));
        let late = flight.enter();
        assert!(!flight.alone(), "a paced caller's next job is far off");
        drop(late);
        let _soon = flight.enter();
        assert!(flight.alone());
    }

    #[test]
    fn company_stops_polling_until_it_has_been_calm_for_a_while() {
        // Calm after BUDGET; a next job within three times that follows.
        let flight = Flight::new(BUDGET * 3, BUDGET);
        drop(flight.enter());
        let first = flight.enter();
        let second = flight.enter();
        assert!(!flight.alone());
        drop(first);
        // One in flight again, but there was company a moment ago: under
        // load the next one is on its way.
        assert!(!flight.alone());
        drop(second);
        let third = flight.enter();
        assert!(!flight.alone());
        drop(third);
        std::thread::sleep(BUDGET + Duration::from_millis(100));
        let _fourth = flight.enter();
        assert!(flight.alone());
    }
}
