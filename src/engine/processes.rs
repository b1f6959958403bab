//! Worker processes: each run happens in a process of this same binary
//! (see [`super::worker`]), so that nothing a script does can take the
//! server down. Workers are started as needed and reused; one that went
//! over a budget, crashed or outlived its deadline is stopped and replaced
//! by a fresh one on demand.
//!
//! Two lanes keep long runs from holding up short ones. A run starts in
//! the fast lane ([`Limits::concurrency`] runs at once). One still going
//! after [`DEMOTE_AFTER`] gets its worker's CPU priority lowered to the
//! least (nice 19), and moves to the slow lane (twice as many runs at
//! once) when it has room, giving its fast slot to the next request. A
//! demoted worker is retired after its run: an unprivileged process cannot
//! raise its priority again.
//!
//! A worker left idle for [`Pool::retire_idle_after`] (60 s by default)
//! exits, so a function nobody calls holds only the server's memory; the
//! next request starts a worker again (a few milliseconds).

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::process::{Child, Command};
use tokio::sync::Semaphore;

use super::evaluate::failed;
use super::job::{Answer, Job};
use super::poll;
use super::worker::{self, Config, FRAME_ANSWER, FRAME_OVER_BUDGET};
use crate::engine::runtime::Limits;
use crate::error::Error;

/// How long past its deadline a run may take before its worker is killed.
pub const GRACE: Duration = Duration::from_millis(50);

/// How long a run may take before it moves to the slow lane.
pub const DEMOTE_AFTER: Duration = Duration::from_millis(100);

/// The lowest CPU priority, which demoted workers get.
const NICEST: i32 = 19;

/// One worker process and the socket to it.
struct Worker {
    child: Child,
    socket: UnixStream,
    /// When it last finished a run (or started).
    idle_since: Instant,
}

/// How long a worker may stay idle before it exits, unless set.
pub const DEFAULT_IDLE_RETIREMENT: Duration = Duration::from_mins(1);

/// The pool of worker processes.
pub struct Pool {
    exe: PathBuf,
    config: Config,
    config_json: String,
    limits: Limits,
    fast: Arc<Semaphore>,
    slow: Arc<Semaphore>,
    idle: Arc<Mutex<Vec<Worker>>>,
    /// Idle workers older than this exit; `None` keeps them.
    idle_retirement: Option<Duration>,
    /// `true` while the warm-up worker starts: a request that finds no
    /// idle worker meanwhile waits for it rather than starting a second.
    warming: tokio::sync::watch::Sender<bool>,
    /// Runs in flight: the only one polls for its answer (see [`poll`]).
    running: AtomicUsize,
}

/// How long a request waits for the warm-up worker before starting its own.
const WARM_UP_WAIT: Duration = Duration::from_secs(2);

/// How a job sent to a worker ended.
enum Ended {
    /// The worker answered.
    Answered(Box<Answer>),
    /// The worker reported going over its memory budget and stopped.
    OverBudget(usize),
    /// The worker stopped without an answer.
    Died(String),
    /// The deadline and grace passed.
    TimedOut,
}

impl Pool {
    /// A pool of workers started from the current executable.
    pub fn new(config: Config) -> std::io::Result<Pool> {
        let exe = std::env::current_exe()?;
        let config_json = serde_json::to_string(&config).map_err(std::io::Error::other)?;
        Ok(Pool {
            exe,
            limits: config.limits(),
            fast: Arc::new(Semaphore::new(config.concurrency.max(1))),
            slow: Arc::new(Semaphore::new(config.concurrency.max(1) * 2)),
            config,
            config_json,
            idle: Arc::default(),
            idle_retirement: Some(DEFAULT_IDLE_RETIREMENT),
            warming: tokio::sync::watch::Sender::new(false),
            running: AtomicUsize::new(0),
        })
    }

    /// Lets workers idle for `after` exit (`None`: never).
    #[must_use]
    pub fn retire_idle_after(mut self, after: Option<Duration>) -> Pool {
        self.idle_retirement = after.filter(|d| !d.is_zero());
        self
    }

    /// Retires, every so often, the workers idle for longer than the
    /// pool allows. Runs until the process ends.
    fn start_retiring(&self) {
        let Some(after) = self.idle_retirement else {
            return;
        };
        let idle = Arc::downgrade(&self.idle);
        let every = (after / 2).clamp(Duration::from_millis(100), Duration::from_secs(5));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let Some(idle) = idle.upgrade() else { return };
                let expired: Vec<Worker> = {
                    let mut workers = idle.lock().expect("idle lock poisoned");
                    let (old, fresh) = std::mem::take(&mut *workers)
                        .into_iter()
                        .partition(|w| w.idle_since.elapsed() >= after);
                    *workers = fresh;
                    old
                };
                drop(idle);
                if !expired.is_empty() {
                    tracing::debug!(workers = expired.len(), "idle workers exit");
                }
                for worker in expired {
                    retire(worker).await;
                }
            }
        });
    }

    /// The limits every run has.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Starts one worker and runs a trivial script on it, so that the
    /// first request finds a worker ready. Requests arriving meanwhile
    /// wait for this worker instead of starting their own.
    pub async fn warm_up(&self) -> std::io::Result<()> {
        self.start_retiring();
        self.warming.send_replace(true);
        let warmed = self.warm_one().await;
        self.warming.send_replace(false);
        warmed
    }

    async fn warm_one(&self) -> std::io::Result<()> {
        let mut worker = self.spawn()?;
        let job = Job {
            filename: "warm-up.star".to_owned(),
            source: "x = 1\n".to_owned(),
            timeout_ms: u64::try_from(self.limits.timeout.as_millis()).unwrap_or(u64::MAX),
            ..Job::default()
        };
        let answered = tokio::time::timeout(
            self.limits.timeout + GRACE,
            exchange(&mut worker.socket, &job, Duration::ZERO),
        )
        .await;
        match answered {
            Ok(Ended::Answered(answer)) => match answer.failure {
                None => {
                    self.release(worker, false).await;
                    Ok(())
                }
                Some(failure) => {
                    retire(worker).await;
                    Err(std::io::Error::other(failure))
                }
            },
            Ok(Ended::Died(why)) => {
                let status = stop(worker).await;
                Err(std::io::Error::other(format!(
                    "the first worker stopped before answering ({why}{status})"
                )))
            }
            Ok(Ended::OverBudget(_) | Ended::TimedOut) | Err(_) => {
                retire(worker).await;
                Err(std::io::Error::other(
                    "the first worker did not answer a trivial script",
                ))
            }
        }
    }

    /// An idle worker; while the warm-up runs, waits for its worker first.
    async fn idle_worker(&self) -> Option<Worker> {
        let reused = self.idle.lock().expect("idle lock poisoned").pop();
        if reused.is_some() || !*self.warming.borrow() {
            return reused;
        }
        let mut warming = self.warming.subscribe();
        let _ = tokio::time::timeout(WARM_UP_WAIT, warming.wait_for(|busy| !*busy)).await;
        self.idle.lock().expect("idle lock poisoned").pop()
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
            socket: UnixStream::from_std(ours)?,
            idle_since: Instant::now(),
        })
    }

    /// Runs `job` in a worker process.
    pub async fn run(&self, job: Job) -> Answer {
        // Counted from arrival: a run waiting for a slot means load.
        let running = Running::count(&self.running);
        let fast = self
            .fast
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        let request = job.request.clone();
        let filename = job.filename.clone();
        let timeout = Duration::from_millis(job.timeout_ms);
        let mut worker = match self.idle_worker().await {
            Some(worker) => worker,
            None => match self.spawn() {
                Ok(worker) => worker,
                Err(e) => {
                    return failed(
                        &request,
                        &Error::Internal(format!("cannot start a worker process: {e}")),
                    );
                }
            },
        };
        let pid = worker.child.id();
        let deadline = tokio::time::Instant::now() + timeout + GRACE;
        // The slot the run holds: fast, then slow once demoted.
        let mut _slot = fast;
        let mut demoted = false;
        let ended = {
            // Alone, the run is worth polling for: the thread has nothing
            // else to do. Under load, other requests need it.
            let poll_budget = if running.alone() {
                self.config.poll_budget()
            } else {
                Duration::ZERO
            };
            let exchange = exchange(&mut worker.socket, &job, poll_budget);
            tokio::pin!(exchange);
            let demote = tokio::time::sleep(DEMOTE_AFTER);
            tokio::pin!(demote);
            loop {
                tokio::select! {
                    ended = &mut exchange => break ended,
                    () = tokio::time::sleep_until(deadline) => break Ended::TimedOut,
                    () = &mut demote, if !demoted => {
                        demoted = true;
                        lower_priority(pid);
                        if let Ok(slow) = self.slow.clone().try_acquire_owned() {
                            _slot = slow;
                        }
                    }
                }
            }
        };
        match ended {
            Ended::Answered(answer) => {
                self.release(worker, demoted).await;
                *answer
            }
            Ended::OverBudget(limit) => {
                retire(worker).await;
                failed(
                    &request,
                    &Error::MemoryLimit {
                        mib: limit >> 20,
                        at: String::new(),
                    },
                )
            }
            Ended::TimedOut => {
                retire(worker).await;
                failed(
                    &request,
                    &Error::TimeLimit {
                        seconds: timeout.as_secs(),
                        at: String::new(),
                    },
                )
            }
            Ended::Died(why) => {
                let status = stop(worker).await;
                failed(
                    &request,
                    &Error::Internal(format!(
                        "the worker process running {filename} stopped before answering ({why}{status}); the script may have nested too deep for the native stack; the worker was replaced"
                    )),
                )
            }
        }
    }

    /// Keeps a worker for the next run, unless it was demoted or enough
    /// workers are already idle.
    async fn release(&self, mut worker: Worker, demoted: bool) {
        worker.idle_since = Instant::now();
        let kept = if demoted {
            Some(worker)
        } else {
            let mut idle = self.idle.lock().expect("idle lock poisoned");
            if idle.len() < self.limits.concurrency.max(1) {
                idle.push(worker);
                None
            } else {
                Some(worker)
            }
        };
        if let Some(worker) = kept {
            retire(worker).await;
        }
    }

    /// The configuration workers are started with.
    pub fn config(&self) -> &Config {
        &self.config
    }
}

/// A run counted in flight until dropped.
struct Running<'a>(&'a AtomicUsize, usize);

impl<'a> Running<'a> {
    fn count(running: &'a AtomicUsize) -> Running<'a> {
        let before = running.fetch_add(1, Ordering::AcqRel);
        Running(running, before + 1)
    }

    /// Whether no other run was in flight when this one started.
    fn alone(&self) -> bool {
        self.1 == 1
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Lowers a worker's CPU priority to the least; a failure only means the
/// run competes with the others as an equal.
fn lower_priority(pid: Option<u32>) {
    let pid = pid
        .and_then(|p| i32::try_from(p).ok())
        .and_then(rustix::process::Pid::from_raw);
    if let Some(pid) = pid
        && let Err(e) = rustix::process::setpriority_process(Some(pid), NICEST)
    {
        tracing::debug!(error = %e, "cannot lower the priority of a worker");
    }
}

/// Sends `job` and reads the worker's answer, polling for it for up to
/// `poll_budget` first.
async fn exchange(socket: &mut UnixStream, job: &Job, poll_budget: Duration) -> Ended {
    let frame = worker::frame(&[], job);
    if let Err(e) = socket.write_all(&frame).await {
        return Ended::Died(format!("cannot send the job: {e}"));
    }
    drop(frame);
    poll::until_readable(&*socket, poll_budget);
    let mut head = [0u8; 5];
    if let Err(e) = socket.read_exact(&mut head).await {
        return Ended::Died(format!("no answer: {e}"));
    }
    let length = u32::from_le_bytes([head[1], head[2], head[3], head[4]]) as usize;
    let mut payload = vec![0u8; length];
    if let Err(e) = socket.read_exact(&mut payload).await {
        return Ended::Died(format!("a cut answer: {e}"));
    }
    match head[0] {
        // From `Bytes`, the answer's response is a view of the payload.
        FRAME_ANSWER => match Answer::decode(Bytes::from(payload)) {
            Ok(answer) => Ended::Answered(Box::new(answer)),
            Err(e) => Ended::Died(format!("an unreadable answer: {e}")),
        },
        FRAME_OVER_BUDGET if length == 8 => {
            let mut limit = [0u8; 8];
            limit.copy_from_slice(&payload);
            Ended::OverBudget(usize::try_from(u64::from_le_bytes(limit)).unwrap_or(usize::MAX))
        }
        kind => Ended::Died(format!("an unknown frame kind {kind}")),
    }
}

/// Kills a worker that must not run again and reaps it.
async fn retire(mut worker: Worker) {
    let _ = worker.child.kill().await;
}

/// Reaps a worker that stopped on its own; `, exit status ...` when known.
async fn stop(mut worker: Worker) -> String {
    let _ = worker.child.start_kill();
    match tokio::time::timeout(Duration::from_secs(1), worker.child.wait()).await {
        Ok(Ok(status)) => format!(", {status}"),
        _ => String::new(),
    }
}
