//! The crate's error type. Every variant becomes a Fatal result whose
//! message is the variant's text; several texts are the reference's wire
//! wording, which users' alerts and tests match on.

use thiserror::Error;

/// The step-limit message of the reference.
pub const STEP_LIMIT_MESSAGE: &str =
    "starlark script exceeded execution limit (1000000 steps): possible infinite loop";

/// Why a RunFunction call ended in a Fatal result.
#[derive(Debug, Error)]
pub enum Error {
    /// The StarlarkInput could not be decoded.
    #[error("cannot get Function input: {0}")]
    Input(String),

    /// Neither an inline script nor a mounted one was given.
    #[error("spec.source or spec.scriptConfigRef is required")]
    MissingSource,

    /// The mounted script could not be read.
    #[error("loading script from ConfigMap: {0}")]
    ScriptConfig(String),

    /// An observed composed resource could not become a Starlark value.
    #[error("building observed dict: observed resource {name:?}: {detail}")]
    Observed {
        /// The composition resource name.
        name: String,
        /// What could not be converted, with its path.
        detail: String,
    },

    /// Another request global could not become a Starlark value.
    #[error("building Starlark globals: building {global}: {detail}")]
    Globals {
        /// `oxr`, `dxr`, `context`, `environment` or `extra_resources`.
        global: &'static str,
        /// What could not be converted, with its path.
        detail: String,
    },

    /// The module phase failed before the script ran (the text carries the
    /// phase, e.g. `resolving star imports: `).
    #[error("{0}")]
    Modules(String),

    /// The script did not compile: `file:line:col: message`.
    #[error("starlark execution failed: starlark compilation error: {0}")]
    Compile(String),

    /// The script failed at run time: the traceback and the error.
    #[error(
        "starlark execution failed: starlark execution error: Traceback (most recent call last):\n{0}"
    )]
    Runtime(String),

    /// The step budget ran out (the reference's wording).
    #[error("starlark execution failed: {}", STEP_LIMIT_MESSAGE)]
    StepLimit,

    /// The wall-clock limit passed.
    #[error(
        "starlark execution failed: starlark script exceeded its wall-clock limit ({seconds}s){at}: possible infinite loop; raise --timeout-seconds (STARLARK_TIMEOUT_SECONDS) if it needs longer"
    )]
    TimeLimit {
        /// The limit, in seconds.
        seconds: u64,
        /// ` at file:line:col` where the run was stopped, when known.
        at: String,
    },

    /// The memory budget ran out.
    #[error(
        "starlark execution failed: starlark script exceeded its memory budget of {mib} MiB{at}; a run holds everything it allocates, garbage made inside a function included; raise --max-heap-mib (STARLARK_MAX_HEAP_MIB) if it needs more"
    )]
    MemoryLimit {
        /// The budget, in MiB.
        mib: usize,
        /// ` at file:line:col` where the run was stopped, when known.
        at: String,
    },

    /// The script called `fatal(message)`: the message is the whole text.
    #[error("{0}")]
    Fatal(String),

    /// `depends_on` named something impossible, or formed a cycle.
    #[error("dependency validation failed: {0}")]
    Dependency(String),

    /// `spec.sequencingTTL` is not a Go duration.
    #[error("invalid spec.sequencingTTL {value:?}: {detail}")]
    SequencingTtl {
        /// The value as given.
        value: String,
        /// The parser's complaint.
        detail: String,
    },

    /// `dxr` holds something that cannot be written to the response.
    #[error("applying dxr status: converting dxr: {0}")]
    Dxr(String),

    /// `context` holds something that cannot be written to the response.
    #[error("applying context: converting context: {0}")]
    Context(String),

    /// `output` holds something that cannot be written to the response.
    #[error("applying output: converting output: {0}")]
    Output(String),

    /// An Operation's script asked for what an Operation cannot do.
    #[error("{0}")]
    Operation(String),

    /// The evaluation thread could not be started or did not answer.
    #[error("cannot run the script: {0}")]
    Internal(String),
}
