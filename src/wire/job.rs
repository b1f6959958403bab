//! What an evaluation is given and what it gives back. Both cross the
//! boundary between the server and its worker processes as protobuf, so
//! they are plain data: the request as it arrived, the sources `load()` can
//! reach, the settings; the response as bytes, and the run's costs.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use bytes::Bytes;
use prost::Message;

use crate::input::{Checked, UsageApi};
use crate::limits::Limits;
use crate::loader::{Found, Origin, Sources};

/// What turns a job into its answer: the runner, as the transport sees it.
/// The transport moves jobs and answers between processes or threads and
/// knows nothing of what a run does.
pub trait Runs: Send + Sync + 'static {
    /// Runs `job` on the current thread until it ends or `cancel` is set,
    /// metering its memory (`hard`: going over the budget aborts the
    /// process, for worker processes).
    fn run(&self, job: Job, cancel: &AtomicBool, hard: bool) -> Answer;

    /// The limits every run has.
    fn limits(&self) -> &Limits;
}

/// One script run to do.
#[derive(Clone, PartialEq, Message)]
pub struct Job {
    /// The RunFunctionRequest, encoded, as it arrived, its depth already
    /// checked (`depth::check_request`): runs decode it without a
    /// recursion limit.
    #[prost(bytes = "bytes", tag = "1")]
    pub request: Bytes,
    /// The entry script's file name (positions, metrics).
    #[prost(string, tag = "2")]
    pub filename: String,
    /// The entry script's text.
    #[prost(string, tag = "3")]
    pub source: String,
    /// Every module `load()` can reach, gathered before the run.
    #[prost(message, repeated, tag = "4")]
    pub modules: Vec<ModuleSource>,
    /// The default registry OCI short forms expand with.
    #[prost(string, optional, tag = "5")]
    pub default_registry: Option<String>,
    /// `spec.usageAPIVersion`, resolved: true for Crossplane 1.x Usages.
    #[prost(bool, tag = "6")]
    pub usage_api_v1: bool,
    /// `spec.sequencingTTL` as given.
    #[prost(string, optional, tag = "7")]
    pub sequencing_ttl: Option<String>,
    /// Wall-clock milliseconds the run may take.
    #[prost(uint64, tag = "8")]
    pub timeout_ms: u64,
    /// `spec.validateSchemas`.
    #[prost(bool, tag = "9")]
    pub validate_schemas: bool,
    /// Set by the pool of worker processes when this is the only job in
    /// flight and none has had company for a while: the worker then polls
    /// for the next one after answering (see `transport::poll`). Under load
    /// the next job is either waiting already or late because the server
    /// is busy, and polling would only take CPU from it.
    #[prost(bool, tag = "10")]
    pub poll_after: bool,
}

/// A module's source, or why it could not be read.
#[derive(Clone, PartialEq, Message)]
pub struct ModuleSource {
    /// The key `load()` finds it by.
    #[prost(string, tag = "1")]
    pub key: String,
    /// Where it came from (see [`crate::loader::Origin`]).
    #[prost(int32, tag = "2")]
    pub origin: i32,
    /// The text, when it was read.
    #[prost(string, optional, tag = "3")]
    pub text: Option<String>,
    /// Why it was not, otherwise.
    #[prost(string, optional, tag = "4")]
    pub error: Option<String>,
}

/// What a run gave back.
#[derive(Clone, PartialEq, Message)]
pub struct Answer {
    /// The RunFunctionResponse, encoded; empty when `status` is set.
    #[prost(bytes = "bytes", tag = "1")]
    pub response: Bytes,
    /// Set when no response could be built at all (the request itself is
    /// unusable): answer the call with this gRPC status.
    #[prost(message, optional, tag = "2")]
    pub status: Option<Refusal>,
    /// How the run ended, for the outcome metric and the log line.
    #[prost(enumeration = "Outcome", tag = "3")]
    pub outcome: i32,
    /// The Fatal message, when the run failed.
    #[prost(string, optional, tag = "4")]
    pub failure: Option<String>,
    /// Interpreter ticks used (loop iterations and calls).
    #[prost(uint64, tag = "5")]
    pub ticks: u64,
    /// The most memory the run held at once, in bytes.
    #[prost(uint64, tag = "6")]
    pub peak_bytes: u64,
    /// Compilation plus evaluation time, in nanoseconds.
    #[prost(uint64, tag = "7")]
    pub run_nanos: u64,
    /// Each script compiled or found in the cache: `(file, cache hit)`.
    #[prost(message, repeated, tag = "8")]
    pub compilations: Vec<Compilation>,
    /// Composed resources written to desired state.
    #[prost(uint64, tag = "9")]
    pub emitted: u64,
    /// Resources held back by creation sequencing.
    #[prost(uint64, tag = "10")]
    pub deferred: u64,
    /// Resources skipped.
    #[prost(uint64, tag = "11")]
    pub skipped: u64,
    /// What the script printed, call by call.
    #[prost(message, repeated, tag = "12")]
    pub prints: Vec<Print>,
    /// The composite resource's kind, for the log line.
    #[prost(string, tag = "13")]
    pub xr_kind: String,
    /// The composite resource's name, for the log line.
    #[prost(string, tag = "14")]
    pub xr_name: String,
}

/// A gRPC status for a request no response can be built for.
#[derive(Clone, PartialEq, Message)]
pub struct Refusal {
    /// The gRPC code.
    #[prost(int32, tag = "1")]
    pub code: i32,
    /// The message.
    #[prost(string, tag = "2")]
    pub message: String,
}

/// One `print` call.
#[derive(Clone, PartialEq, Message)]
pub struct Print {
    /// The file that printed.
    #[prost(string, tag = "1")]
    pub script: String,
    /// What it printed.
    #[prost(string, tag = "2")]
    pub text: String,
}

/// One compilation.
#[derive(Clone, PartialEq, Message)]
pub struct Compilation {
    /// The file compiled.
    #[prost(string, tag = "1")]
    pub script: String,
    /// Whether the compiled form came from the cache.
    #[prost(bool, tag = "2")]
    pub hit: bool,
}

/// How a request ended: the fixed set of classes the outcome metric counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum Outcome {
    /// The script ran and its response was built.
    Ok = 0,
    /// The script failed: a syntax error, a runtime error, a rule of a builtin.
    ScriptError = 1,
    /// The script called `fatal()`.
    Fatal = 2,
    /// The step budget ran out.
    StepLimit = 3,
    /// The memory budget ran out.
    HeapLimit = 4,
    /// The wall-clock limit passed.
    TimeLimit = 5,
    /// The function input or the request could not be used.
    InputError = 6,
    /// A module could not be resolved or loaded.
    ModuleError = 7,
    /// The evaluation itself failed (an internal fault, a crashed worker).
    Internal = 8,
}

impl Outcome {
    /// The label value of the outcome metric.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::ScriptError => "script_error",
            Outcome::Fatal => "fatal",
            Outcome::StepLimit => "step_limit",
            Outcome::HeapLimit => "heap_limit",
            Outcome::TimeLimit => "time_limit",
            Outcome::InputError => "input_error",
            Outcome::ModuleError => "module_error",
            Outcome::Internal => "internal",
        }
    }

    /// Every class, in order.
    pub const ALL: [Outcome; 9] = [
        Outcome::Ok,
        Outcome::ScriptError,
        Outcome::Fatal,
        Outcome::StepLimit,
        Outcome::HeapLimit,
        Outcome::TimeLimit,
        Outcome::InputError,
        Outcome::ModuleError,
        Outcome::Internal,
    ];
}

impl ModuleSource {
    /// The job form of a module of the table.
    pub fn of(key: &str, found: &Found) -> ModuleSource {
        match found {
            Found::Source(origin, text) => ModuleSource {
                key: key.to_owned(),
                origin: *origin as i32,
                text: Some(text.to_string()),
                error: None,
            },
            Found::Error(e) => ModuleSource {
                key: key.to_owned(),
                origin: 0,
                text: None,
                error: Some(e.clone()),
            },
        }
    }

    /// Back to the table's form.
    pub fn into_found(self) -> (String, Found) {
        let origin = match self.origin {
            1 => Origin::File,
            2 => Origin::Stdlib,
            3 => Origin::Oci,
            _ => Origin::Inline,
        };
        let found = match (self.text, self.error) {
            (Some(text), _) => Found::Source(origin, Arc::from(text)),
            (None, error) => Found::Error(error.unwrap_or_default()),
        };
        (self.key, found)
    }
}

impl Job {
    /// The job of `request` (its depth checked), the input `checked` from
    /// it and the `sources` gathered for it, to run within `timeout`.
    pub fn of(request: Bytes, checked: Checked, sources: &Sources, timeout: Duration) -> Job {
        Job {
            request,
            filename: checked.script.filename,
            source: checked.script.source,
            modules: Job::modules_of(sources),
            default_registry: sources.default_registry().map(str::to_owned),
            usage_api_v1: checked.usage_api == UsageApi::V1,
            sequencing_ttl: checked.sequencing_ttl,
            validate_schemas: checked.validate_schemas,
            timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            poll_after: false,
        }
    }

    /// The sources the job carries, as a table `load()` reads.
    pub fn sources(&mut self) -> Sources {
        Sources::from_entries(
            std::mem::take(&mut self.modules)
                .into_iter()
                .map(ModuleSource::into_found),
            self.default_registry.take(),
        )
    }

    /// The job form of a source table.
    fn modules_of(sources: &Sources) -> Vec<ModuleSource> {
        let mut modules: Vec<ModuleSource> = sources
            .entries()
            .map(|(key, found)| ModuleSource::of(key, found))
            .collect();
        modules.sort_by(|a, b| a.key.cmp(&b.key));
        modules
    }
}

/// The parts of a RunFunctionRequest the server reads before a run (the
/// tag, the input, the credentials for OCI registries); protobuf skips the
/// rest without decoding it.
#[derive(Clone, PartialEq, Message)]
pub struct RequestHead {
    /// `meta`.
    #[prost(message, optional, tag = "1")]
    pub meta: Option<function_sdk_rust::proto::v1::RequestMeta>,
    /// `input`, still encoded (`input::cache` decodes it when it has not
    /// seen it), as many times as the request gives it.
    #[prost(bytes = "bytes", repeated, tag = "4")]
    pub input: Vec<bytes::Bytes>,
    /// `credentials`.
    #[prost(map = "string, message", tag = "7")]
    pub credentials: std::collections::HashMap<String, function_sdk_rust::proto::v1::Credentials>,
}

impl RequestHead {
    /// A request holding the head's tag and credentials.
    pub fn into_request(self) -> function_sdk_rust::proto::v1::RunFunctionRequest {
        function_sdk_rust::proto::v1::RunFunctionRequest {
            meta: self.meta,
            credentials: self.credentials,
            ..Default::default()
        }
    }
}
