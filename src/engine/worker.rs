//! A worker process: this same binary started with [`ARG`], reading jobs
//! from its standard input (one end of a socket pair the server holds)
//! and writing answers back, one at a time, until the server closes it.
//!
//! Frames from the server: a little-endian `u32` length, then a [`Job`].
//! Frames to the server: a kind byte, a little-endian `u32` length, then
//! the payload: [`FRAME_ANSWER`] with an [`Answer`](super::job::Answer), or
//! [`FRAME_OVER_BUDGET`] with the budget as a little-endian `u64`, sent
//! just before the worker aborts because a run went over its memory
//! budget (see [`crate::meter`]).

use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::OnceLock;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use bytes::Bytes;
use prost::Message;
use serde::{Deserialize, Serialize};

use super::evaluate::evaluate;
use super::job::Job;
use super::poll;
use crate::engine::runtime::{Limits, Runtime};
use crate::meter;

/// The first argument that makes the binary a worker.
pub const ARG: &str = "__starlark-worker";

/// An answer follows.
pub const FRAME_ANSWER: u8 = 1;
/// The run went over its memory budget; the worker is about to abort.
pub const FRAME_OVER_BUDGET: u8 = 2;

/// `head`, then `message`'s length as a little-endian `u32`, then
/// `message`, encoded straight into the frame.
pub fn frame(head: &[u8], message: &impl Message) -> Vec<u8> {
    let length = message.encoded_len();
    let mut frame = Vec::with_capacity(head.len() + 4 + length);
    frame.extend_from_slice(head);
    frame.extend_from_slice(&u32::try_from(length).unwrap_or(u32::MAX).to_le_bytes());
    message
        .encode(&mut frame)
        .expect("a Vec has room for what it reserved");
    frame
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

/// Runs the worker until the server closes the socket. `config` is the
/// JSON of a [`Config`].
pub fn main(config: &str) -> std::process::ExitCode {
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
    let _ = SERVER.set(writer);
    meter::on_hard_limit(over_budget);
    // Runs evaluate on a thread whose stack fits the deepest nesting the
    // parser and the request decoder accept.
    let evaluator = std::thread::Builder::new()
        .name("starlark-worker".to_owned())
        .stack_size(config.stack_bytes)
        .spawn(move || serve(&config, stream));
    match evaluator.map(std::thread::JoinHandle::join) {
        Ok(Ok(())) => std::process::ExitCode::SUCCESS,
        _ => std::process::ExitCode::FAILURE,
    }
}

fn serve(config: &Config, mut stream: UnixStream) {
    let runtime = Runtime::new(config.limits(), config.cache_entries);
    let cancel = AtomicBool::new(false);
    let mut buffer = Vec::new();
    let poll_budget = config.poll_budget();
    loop {
        // A busy caller's next job comes within microseconds of the answer.
        poll::until_readable(&stream, poll_budget);
        let mut length = [0u8; 4];
        if stream.read_exact(&mut length).is_err() {
            return;
        }
        buffer.resize(u32::from_le_bytes(length) as usize, 0);
        if stream.read_exact(&mut buffer).is_err() {
            return;
        }
        // Decoded from `Bytes`, the job's request is a view of the buffer,
        // not a copy of it.
        let Ok(job) = Job::decode(Bytes::from(std::mem::take(&mut buffer))) else {
            return;
        };
        let answer = evaluate(&runtime, job, &cancel, true);
        if stream.write_all(&frame(&[FRAME_ANSWER], &answer)).is_err() {
            return;
        }
    }
}
