//! A worker process: this same binary started with [`ARG`], reading jobs
//! from its standard input (one end of a socket pair the server holds)
//! and writing answers back, in the order the jobs came, until the server
//! closes it.
//!
//! Frames from the server: the job's start-by time (a little-endian `u64`
//! of [`monotonic_nanos`], 0 for none), a little-endian `u32` length, then
//! a [`Job`]. Frames to the server: a kind byte, a little-endian `u32`
//! length, then the payload: [`FRAME_ANSWER`] with an
//! [`Answer`](super::job::Answer); [`FRAME_EXPIRED`], empty, for a job
//! reached after its start-by time and not run; or [`FRAME_OVER_BUDGET`]
//! with the budget as a little-endian `u64`, sent just before the worker
//! aborts because a run went over its memory budget (see [`crate::meter`]).
//! Every job gets exactly one of them, in the order the jobs came. Before
//! any of them, once it has started and run a trivial script (a first
//! run is slow), the worker sends [`FRAME_READY`]: a run's time on the
//! server's clock starts only then.
//!
//! The server may send a job while the previous one still runs (see
//! [`super::processes`]): it waits in the socket, and the worker reads it
//! as soon as it answers, without sleeping in between. Reads take whatever
//! the socket holds, so several small jobs cost one system call. Such a
//! job carries a start-by time: if the run before it takes too long, the
//! server gives the job to another worker, and this one skips it.

use std::io::{IoSlice, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use prost::Message;
use rustix::io::Errno;
use rustix::net::RecvFlags;
use serde::{Deserialize, Serialize};

use super::poll;
use crate::limits::Limits;
use crate::meter;
use crate::wire::{Answer, Job, Runs};

/// The first argument that makes the binary a worker.
pub const ARG: &str = "__starlark-worker";

/// An answer follows.
pub const FRAME_ANSWER: u8 = 1;
/// The run went over its memory budget; the worker is about to abort.
pub const FRAME_OVER_BUDGET: u8 = 2;
/// The job was reached after its start-by time and not run.
pub const FRAME_EXPIRED: u8 = 3;
/// The worker has started and takes jobs: sent once, first.
pub const FRAME_READY: u8 = 4;

/// Bytes before a job frame's length: its start-by time.
pub const JOB_HEAD: usize = 8;

/// Nanoseconds of the system's monotonic clock, which the server and its
/// workers share.
pub fn monotonic_nanos() -> u64 {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    u64::try_from(now.tv_sec)
        .unwrap_or(0)
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::try_from(now.tv_nsec).unwrap_or(0))
}

/// [`monotonic_nanos`] `wait` from now.
pub fn monotonic_nanos_after(wait: Duration) -> u64 {
    monotonic_nanos().saturating_add(u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX))
}

/// A frame in three pieces to be written one after the other: `head`,
/// the length and the start of the message; `bytes`, the content of the
/// message's field 1 (a request or a response, often the bulk of it),
/// not copied; and the message's other fields. `rest` is the message
/// with field 1 left empty. Field order does not matter to protobuf.
pub fn frame_around(head: &[u8], bytes: &Bytes, rest: &impl Message) -> [Bytes; 3] {
    let rest_length = rest.encoded_len();
    let field_head = 1 + prost::encoding::encoded_len_varint(bytes.len() as u64);
    let length = if bytes.is_empty() {
        rest_length
    } else {
        field_head + bytes.len() + rest_length
    };
    let mut start = Vec::with_capacity(head.len() + 4 + field_head);
    start.extend_from_slice(head);
    start.extend_from_slice(&u32::try_from(length).unwrap_or(u32::MAX).to_le_bytes());
    if !bytes.is_empty() {
        // Field 1, length-delimited.
        start.push(1 << 3 | 2);
        prost::encoding::encode_varint(bytes.len() as u64, &mut start);
    }
    [
        Bytes::from(start),
        bytes.clone(),
        Bytes::from(rest.encode_to_vec()),
    ]
}

/// The frame of `job`, its request not copied; `poll_after` asks the
/// worker to poll for the next job after answering this one.
pub fn job_frame(job: &Job, poll_after: bool) -> [Bytes; 3] {
    let rest = Job {
        request: Bytes::new(),
        poll_after,
        ..job.clone()
    };
    frame_around(&[], &job.request, &rest)
}

/// The frame of `answer`, its response not copied.
pub fn answer_frame(mut answer: Answer) -> [Bytes; 3] {
    let response = std::mem::take(&mut answer.response);
    frame_around(&[FRAME_ANSWER], &response, &answer)
}

/// Reads length-prefixed frames off a stream, taking whatever the stream
/// holds with each read.
pub struct FrameReader {
    buffer: bytes::BytesMut,
}

/// Reads what `stream` already holds into `space`, without waiting
/// (`AGAIN` when it holds nothing; retried when interrupted). The server's
/// side reads answers polling caught with it too.
pub(crate) fn recv_waiting(stream: impl AsFd, space: &mut [u8]) -> Result<usize, Errno> {
    loop {
        match rustix::net::recv(&stream, &mut *space, RecvFlags::DONTWAIT) {
            Err(Errno::INTR) => {}
            other => return other.map(|(n, _)| n),
        }
    }
}

/// What one read asks for at least: small frames come several at a time.
const READ_CHUNK: usize = 16 << 10;

impl Default for FrameReader {
    fn default() -> Self {
        FrameReader {
            buffer: bytes::BytesMut::with_capacity(READ_CHUNK),
        }
    }
}

impl FrameReader {
    /// The next frame's payload, once whole: `head` bytes of kind, then a
    /// `u32` length. `None` at the end of the stream. With no frame begun,
    /// the bytes already waiting are taken without waiting (under load the
    /// next job is there: one system call instead of a wait and a read);
    /// only when there are none is `before_sleep` called, then the read
    /// waits for them.
    pub fn next<S: Read + AsFd>(
        &mut self,
        stream: &mut S,
        head: usize,
        before_sleep: impl Fn(),
    ) -> Option<(Bytes, Bytes)> {
        loop {
            if let Some(frame) = self.take(head) {
                return Some(frame);
            }
            let idle = self.buffer.is_empty();
            let wanted = self.wanted(head).max(READ_CHUNK);
            let filled = self.buffer.len();
            self.buffer.resize(filled + wanted, 0);
            let space = &mut self.buffer[filled..];
            let read = if idle {
                match recv_waiting(&*stream, space) {
                    Err(Errno::AGAIN) => {
                        before_sleep();
                        stream.read(space)
                    }
                    other => other.map_err(Into::into),
                }
            } else {
                stream.read(space)
            };
            match read {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.buffer.truncate(filled + n),
            }
        }
    }

    /// The length of the frame at the front, once its length is there.
    fn length(&self, head: usize) -> Option<usize> {
        let bytes = self.buffer.get(head..head + 4)?;
        Some(u32::from_le_bytes(bytes.try_into().expect("four bytes of length")) as usize)
    }

    /// The bytes still missing from the frame at the front.
    fn wanted(&self, head: usize) -> usize {
        match self.length(head) {
            None => head + 4 - self.buffer.len(),
            Some(length) => (head + 4 + length).saturating_sub(self.buffer.len()),
        }
    }

    /// A whole frame off the front of the buffer: its kind bytes and its
    /// payload.
    fn take(&mut self, head: usize) -> Option<(Bytes, Bytes)> {
        let length = self.length(head)?;
        if self.buffer.len() < head + 4 + length {
            return None;
        }
        let kind = self.buffer.split_to(head + 4).freeze().slice(..head);
        let payload = self.buffer.split_to(length).freeze();
        Some((kind, payload))
    }
}

/// What a worker is started with: the limits of its runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Config {
    /// Interpreter ticks per run.
    pub max_ticks: u64,
    /// Deepest Starlark call stack.
    pub max_call_stack: usize,
    /// Whether functions may recurse.
    #[serde(default)]
    pub allow_recursion: bool,
    /// Memory budget of a run, in bytes.
    pub max_heap_bytes: usize,
    /// Wall-clock limit of a run, in milliseconds.
    pub timeout_ms: u64,
    /// Native stack of the evaluation thread, in bytes.
    pub stack_bytes: usize,
    /// Runs at once (the number of workers).
    pub concurrency: usize,
    /// Compiled scripts each worker keeps.
    pub cache_entries: usize,
    /// Debug logging.
    pub debug: bool,
    /// How long, in microseconds, a wait on the worker socket polls before
    /// sleeping (see [`super::poll`]); 0 never polls.
    #[serde(default = "default_poll_micros")]
    pub poll_micros: u64,
}

fn default_poll_micros() -> u64 {
    u64::try_from(poll::DEFAULT_BUDGET.as_micros()).unwrap_or(u64::MAX)
}

impl Config {
    /// The configuration for `limits` and a cache of `cache_entries`.
    pub fn new(limits: &Limits, cache_entries: usize, debug: bool) -> Config {
        Config {
            max_ticks: limits.max_ticks,
            max_call_stack: limits.max_call_stack,
            allow_recursion: limits.allow_recursion,
            max_heap_bytes: limits.max_heap_bytes,
            timeout_ms: u64::try_from(limits.timeout.as_millis()).unwrap_or(u64::MAX),
            stack_bytes: limits.stack_bytes,
            concurrency: limits.concurrency,
            cache_entries,
            debug,
            poll_micros: default_poll_micros(),
        }
    }

    /// Sets how long waits on the worker socket poll, in microseconds.
    #[must_use]
    pub fn polling(mut self, micros: u64) -> Config {
        self.poll_micros = micros;
        self
    }

    /// How long waits on the worker socket poll before sleeping.
    pub fn poll_budget(&self) -> Duration {
        Duration::from_micros(self.poll_micros)
    }

    /// The limits of the configuration.
    pub fn limits(&self) -> Limits {
        Limits {
            max_ticks: self.max_ticks,
            max_call_stack: self.max_call_stack,
            allow_recursion: self.allow_recursion,
            max_heap_bytes: self.max_heap_bytes,
            timeout: Duration::from_millis(self.timeout_ms),
            stack_bytes: self.stack_bytes,
            concurrency: self.concurrency,
        }
    }
}

/// The socket to the server, kept where the memory meter's abort can
/// reach it without allocating.
static SERVER: OnceLock<UnixStream> = OnceLock::new();

/// Reports the memory budget to the server and aborts. Runs inside the
/// allocator: it must not allocate.
fn over_budget(limit: usize) -> ! {
    if let Some(mut server) = SERVER.get() {
        let mut frame = [0u8; 13];
        frame[0] = FRAME_OVER_BUDGET;
        frame[1..5].copy_from_slice(&8u32.to_le_bytes());
        frame[5..].copy_from_slice(&(limit as u64).to_le_bytes());
        let _ = server.write_all(&frame);
    }
    std::process::abort()
}

/// Runs the worker until the server closes the socket, running each job
/// on the runner `runner` makes from the configuration's limits and cache
/// size. `config` is the JSON of a [`Config`].
pub fn main<R: Runs>(
    config: &str,
    runner: impl FnOnce(Limits, usize) -> R + Send + 'static,
) -> std::process::ExitCode {
    let config: Config = match serde_json::from_str(config) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("function-starlark worker: bad configuration: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    function_sdk_rust::logging::configure(config.debug);
    let stream = match std::io::stdin().as_fd().try_clone_to_owned() {
        Ok(fd) => UnixStream::from(fd),
        Err(e) => {
            eprintln!("function-starlark worker: no socket on standard input: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let Ok(writer) = stream.try_clone() else {
        return std::process::ExitCode::FAILURE;
    };
    let watch = stream.try_clone();
    let _ = SERVER.set(writer);
    meter::on_hard_limit(over_budget);
    // Jobs run on a thread whose stack fits the deepest nesting the parser
    // and the request decoder accept.
    let evaluator = std::thread::Builder::new()
        .name("starlark-worker".to_owned())
        .stack_size(config.stack_bytes)
        .spawn(move || {
            let runner = runner(config.limits(), config.cache_entries);
            serve(&config, stream, runner);
        });
    if let Ok(socket) = watch {
        watch_for_hangup(socket);
    }
    let code = match evaluator.map(std::thread::JoinHandle::join) {
        Ok(Ok(())) => std::process::ExitCode::SUCCESS,
        _ => std::process::ExitCode::FAILURE,
    };
    if LEAVING.swap(true, Ordering::SeqCst) {
        // The watch is taking the process down.
        loop {
            std::thread::park();
        }
    }
    code
}

/// Set by whichever of the main thread and the hang-up watch ends the
/// process, so only one of them calls `exit`.
static LEAVING: AtomicBool = AtomicBool::new(false);

/// How long a worker whose server has hung up waits for its run to end on
/// its own before it leaves anyway.
const HANGUP_GRACE: Duration = Duration::from_secs(2);

/// Ends the process once the server has hung up and [`HANGUP_GRACE`] has
/// passed. A worker between jobs reads the end of its socket and leaves at
/// once; one in the middle of a run only notices when the run ends, and a
/// run that resists its limits (a multiplication of two huge integers
/// counts as one step) would go on burning a core for no one after its
/// server died without killing it.
fn watch_for_hangup(socket: UnixStream) {
    let watch = std::thread::Builder::new()
        .name("hangup-watch".to_owned())
        .stack_size(64 << 10)
        .spawn(move || {
            poll::until_hangup(&socket);
            std::thread::sleep(HANGUP_GRACE);
            if !LEAVING.swap(true, Ordering::SeqCst) {
                std::process::exit(1);
            }
        });
    if let Err(e) = watch {
        tracing::debug!(error = %e, "cannot watch the server's socket");
    }
}

fn serve(config: &Config, mut stream: UnixStream, runner: impl Runs) {
    let cancel = AtomicBool::new(false);
    let mut frames = FrameReader::default();
    let poll_budget = config.poll_budget();
    // A worker's first run fills what the runs after it share, and takes
    // many times as long: done here, before the server's clock starts, it
    // holds up no request and no job sent behind it.
    if let Some(failure) = runner.run(warm_up_job(config), &cancel, true).failure {
        eprintln!("function-starlark worker: a trivial script failed: {failure}");
        return;
    }
    if write_all(
        &mut stream,
        &[Bytes::from_static(&[FRAME_READY, 0, 0, 0, 0])],
    )
    .is_err()
    {
        return;
    }
    let socket = stream.try_clone();
    let mut poll = false;
    loop {
        // A lone caller's next job comes within microseconds of the
        // answer; a job already waiting in the socket is read at once.
        let next = frames.next(&mut stream, JOB_HEAD, || {
            let Ok(socket) = &socket else { return };
            if poll && poll::until_readable(socket, poll_budget) {
                return;
            }
            if !poll::readable_within(socket, meter::QUIET_BEFORE_RELEASE) {
                meter::release_freed_memory();
            }
        });
        let Some((head, payload)) = next else { return };
        let start_by = u64::from_le_bytes(head[..].try_into().expect("eight bytes of start-by"));
        if start_by != 0 && monotonic_nanos() > start_by {
            // The server has given this job to another worker.
            if write_all(
                &mut stream,
                &[Bytes::from_static(&[FRAME_EXPIRED, 0, 0, 0, 0])],
            )
            .is_err()
            {
                return;
            }
            continue;
        }
        // Decoded from `Bytes`, the job's request is a view of the buffer,
        // not a copy of it.
        let Ok(job) = Job::decode(payload) else {
            return;
        };
        poll = job.poll_after;
        let answer = runner.run(job, &cancel, true);
        if write_all(&mut stream, &answer_frame(answer)).is_err() {
            return;
        }
    }
}

/// The trivial script a worker runs before it says it is ready.
fn warm_up_job(config: &Config) -> Job {
    Job {
        filename: "warm-up.star".to_owned(),
        source: "x = 1\n".to_owned(),
        timeout_ms: config.timeout_ms,
        ..Job::default()
    }
}

/// Writes every piece, in order.
pub fn write_all(stream: &mut impl Write, pieces: &[Bytes]) -> std::io::Result<()> {
    let mut slices: Vec<IoSlice> = pieces
        .iter()
        .filter(|p| !p.is_empty())
        .map(|p| IoSlice::new(p))
        .collect();
    let mut slices = slices.as_mut_slice();
    while !slices.is_empty() {
        match stream.write_vectored(slices) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut slices, n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
