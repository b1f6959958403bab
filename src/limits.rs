//! What bounds every run: the budgets a runtime enforces and the transport
//! schedules by. The runner and the transport both read them; neither owns
//! them.

use std::num::NonZeroUsize;
use std::time::Duration;

/// Limits of one script run. The defaults are documented in the README
/// ("Limits") and docs/limits.md.
#[derive(Debug, Clone)]
pub struct Limits {
    /// starlark-rust ticks: loop iterations and calls, native calls
    /// included, so each redirected operator (`+`, `*`, `%`, `<<`, `/`, `//`,
    /// `>>` and the ordered comparisons) costs one.
    /// 500,000 ticks stop no script within the reference's 1,000,000 steps:
    /// every Go instruction sequence behind a tick is at least two steps (a
    /// chain of additions is the tightest measured case, 2.55 steps per
    /// tick).
    pub max_ticks: u64,
    /// Deepest Starlark call stack. starlark-rust's default of 50 is far
    /// below what the reference allows.
    pub max_call_stack: usize,
    /// Whether a function may call itself (go.starlark.net forbids it).
    pub allow_recursion: bool,
    /// Best-effort Starlark heap limit, in bytes.
    pub max_heap_bytes: usize,
    /// Wall-clock time one run may take.
    pub timeout: Duration,
    /// Native stack of an evaluation thread, in bytes: reserved address
    /// space, of which only the pages a run touches take memory. It holds
    /// the deepest nesting sources and requests may have (see
    /// `prepass::MAX_NESTING` and `wire::depth`), debug builds included.
    pub stack_bytes: usize,
    /// Runs started at once; more requests wait their turn. Worker
    /// processes add a slow lane of twice as many for runs past 100 ms.
    pub concurrency: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_ticks: 500_000,
            max_call_stack: 1000,
            allow_recursion: false,
            max_heap_bytes: 256 << 20,
            timeout: Duration::from_secs(10),
            stack_bytes: 256 << 20,
            concurrency: std::thread::available_parallelism()
                .map_or(2, NonZeroUsize::get)
                .max(2),
        }
    }
}
