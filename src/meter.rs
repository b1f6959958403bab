//! The memory meter: a global allocator that counts, per thread, the bytes
//! a script run allocates, and the budget checks built on it.
//!
//! Each thread has a meter. [`Meter::start`] resets it for a run with a
//! budget; from then on every allocation and free on that thread moves it.
//! What counts against the budget depends on where the run is:
//! - in a worker process ([`Meter::start`] with `whole_process`), the
//!   process's resident memory above what it held when the run started:
//!   what the run really touched, and what the pod's memory limit sees
//!   (memory the allocator keeps resident after a free, for reuse,
//!   included). Reading it costs a system call, so until the run has
//!   counted its first mebibyte the counted bytes stand in for it, and the
//!   start is then taken as what is resident less what was counted (off
//!   by at most that mebibyte's worth: what the run touched and freed
//!   before, or counted without touching). Counted bytes run ahead of it (the
//!   interpreter's arena grows by doubling, and most of a new chunk stays
//!   untouched for a while), so they only serve as the hard stop: an
//!   allocation that takes them past twice the budget never happens. The
//!   worker reports the budget to its parent and aborts; the parent
//!   answers the request and starts a new worker. This is the backstop
//!   for allocations no check foresaw (one native call building a huge
//!   list, say).
//! - on a thread of the server, the counted bytes, against the budget.
//!
//! Going over is seen by the run's periodic checks and by every builtin
//! that is about to allocate by a size the script chose ([`Meter::reserve`]),
//! which stop the run with a clear error.
//!
//! Frees of memory allocated before the run (or on another thread) make
//! the count smaller than the truth, never larger, so the budget can only
//! be reached by what the run itself allocates.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::OnceLock;

/// The allocator the meter counts for: mimalloc, chosen by measurement
/// (docs/architecture.md, "Memory"): with glibc's allocator requests took
/// 15-35% longer. Under `cargo fuzz` (`cfg(fuzzing)`) it is the system
/// allocator, whose calls the sanitizer and libFuzzer's `-malloc_limit_mb`
/// see; mimalloc maps its own memory, which they would not.
#[cfg(not(fuzzing))]
use mimalloc::MiMalloc as Inner;
#[cfg(fuzzing)]
use std::alloc::System as Inner;

/// The allocator: [`Inner`], counted.
pub struct Counting;

/// What happens when a hard meter goes over its budget: set once by the
/// worker process, which reports and aborts. It must not allocate.
static ON_HARD_LIMIT: OnceLock<fn(usize) -> !> = OnceLock::new();

/// Installs the action of a hard meter going over budget (worker processes
/// only). It is given the budget in bytes.
pub fn on_hard_limit(action: fn(usize) -> !) {
    let _ = ON_HARD_LIMIT.set(action);
}

struct State {
    /// Bytes allocated minus bytes freed since the meter started.
    live: Cell<isize>,
    /// The largest `live` since the meter started.
    peak: Cell<isize>,
    /// The budget; `isize::MAX` when no run is metered.
    limit: Cell<isize>,
    /// Counted bytes past which the process aborts; `isize::MAX` for none.
    ceiling: Cell<isize>,
    /// For a run that owns its process: whether its resident memory counts.
    whole_process: Cell<bool>,
    /// The resident bytes at the run's start, once read (see [`Meter::used`]).
    resident_base: Cell<Option<usize>>,
    /// The resident bytes last read, and `live` when they were: reading
    /// them costs a system call, so they are read again only once `live`
    /// has moved by [`REREAD_BYTES`].
    resident_read: Cell<(usize, isize)>,
}

/// How far the counted bytes move before the resident bytes are read again.
const REREAD_BYTES: isize = 1 << 20;

thread_local! {
    // Constant-initialised and without a destructor: reading it never
    // allocates, which the allocator below relies on.
    static STATE: State = const {
        State {
            live: Cell::new(0),
            peak: Cell::new(0),
            limit: Cell::new(isize::MAX),
            ceiling: Cell::new(isize::MAX),
            whole_process: Cell::new(false),
            resident_base: Cell::new(None),
            resident_read: Cell::new((0, 0)),
        }
    };
    // `/proc/self/statm`, kept open: runs read it at every check.
    static STATM: Option<std::fs::File> = std::fs::File::open("/proc/self/statm").ok();
}

/// The process's resident memory, in bytes.
fn resident_bytes() -> Option<usize> {
    use std::os::unix::fs::FileExt;
    STATM.with(|file| {
        let mut buffer = [0u8; 128];
        let n = file.as_ref()?.read_at(&mut buffer, 0).ok()?;
        let text = std::str::from_utf8(&buffer[..n]).ok()?;
        let pages: usize = text.split_whitespace().nth(1)?.parse().ok()?;
        Some(pages * rustix::param::page_size())
    })
}

/// Moves the current thread's meter by `delta` bytes, before an allocation
/// (positive) or after a free (negative).
#[inline]
fn record(delta: isize) {
    let _ = STATE.try_with(|s| {
        let live = s.live.get().saturating_add(delta);
        s.live.set(live);
        if live > s.peak.get() {
            s.peak.set(live);
            if live > s.ceiling.get()
                && let Some(action) = ON_HARD_LIMIT.get()
            {
                action(usize::try_from(s.limit.get()).unwrap_or(usize::MAX));
            }
        }
    });
}

fn signed(n: usize) -> isize {
    isize::try_from(n).unwrap_or(isize::MAX)
}

// SAFETY: every method forwards to `Inner` with the caller's arguments
// unchanged; the bookkeeping around them never allocates.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        record(signed(layout.size()));
        // SAFETY: forwarded as given.
        unsafe { Inner.alloc(layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        record(signed(layout.size()));
        // SAFETY: forwarded as given.
        unsafe { Inner.alloc_zeroed(layout) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as given.
        unsafe { Inner.dealloc(ptr, layout) };
        record(-signed(layout.size()));
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            record(signed(new_size - layout.size()));
        }
        // SAFETY: forwarded as given.
        let moved = unsafe { Inner.realloc(ptr, layout, new_size) };
        if new_size < layout.size() && !moved.is_null() {
            record(-signed(layout.size() - new_size));
        }
        moved
    }
}

/// How long a process goes quiet (a worker or worker thread without a
/// job, the server without a call) before it calls
/// [`release_freed_memory`].
pub const QUIET_BEFORE_RELEASE: std::time::Duration = std::time::Duration::from_secs(1);

/// Returns the pages the allocator holds free to the system: it keeps
/// what is freed for reuse, so a process stays at its peak until then.
/// For a process that has gone quiet (a worker without jobs, a server
/// without calls); it costs a walk of the allocator's free lists.
pub fn release_freed_memory() {
    // SAFETY: `mi_collect` takes no pointers: it walks the allocator's own
    // free lists (this thread's, and the pages all threads gave back).
    #[allow(unsafe_code)]
    unsafe {
        libmimalloc_sys::mi_collect(true);
    }
}

/// The current thread's meter, started for one run; dropping it stops
/// metering.
pub struct Meter {
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Meter {
    /// Starts metering the current thread with a budget of `limit` bytes.
    /// `whole_process`: the run owns its process (a worker), so its
    /// resident memory is what counts, and counted bytes past twice the
    /// budget abort it (see the module docs).
    pub fn start(limit: usize, whole_process: bool) -> Meter {
        STATE.with(|s| {
            s.live.set(0);
            s.peak.set(0);
            s.limit.set(signed(limit));
            s.whole_process.set(whole_process);
            s.resident_base.set(None);
            s.resident_read.set((0, 0));
            s.ceiling.set(if whole_process {
                signed(limit).saturating_mul(2)
            } else {
                isize::MAX
            });
        });
        Meter {
            _not_send: std::marker::PhantomData,
        }
    }

    /// Bytes counted against the budget now.
    ///
    /// For a run that owns its process, the resident bytes are first read
    /// once the counted ones reach [`REREAD_BYTES`] (most runs never do, and
    /// the read is a system call): the base is then taken as what is
    /// resident less what was counted, so the run's first counted bytes
    /// count in full, as if it had touched them all.
    pub fn used() -> usize {
        STATE.with(|s| {
            let live = s.live.get();
            let base = match s.resident_base.get() {
                Some(base) => base,
                None if s.whole_process.get() && live >= REREAD_BYTES => {
                    let Some(resident) = resident_bytes() else {
                        return usize::try_from(live).unwrap_or(0);
                    };
                    let base = resident.saturating_sub(usize::try_from(live).unwrap_or(0));
                    s.resident_base.set(Some(base));
                    s.resident_read.set((resident, live));
                    base
                }
                None => return usize::try_from(live.max(0)).unwrap_or(0),
            };
            let (mut resident, mut at) = s.resident_read.get();
            if (live - at).abs() >= REREAD_BYTES {
                resident = resident_bytes().unwrap_or(resident);
                at = live;
                s.resident_read.set((resident, at));
            }
            // What was allocated since the last read counts in full until
            // the next one.
            let since = usize::try_from(live - at).unwrap_or(0);
            resident.saturating_sub(base).saturating_add(since)
        })
    }

    /// The most bytes the run's thread had allocated at once.
    pub fn peak() -> usize {
        STATE.with(|s| usize::try_from(s.peak.get()).unwrap_or(0))
    }

    /// Whether the run holds more than its budget now.
    pub fn over() -> bool {
        Meter::limit().is_some_and(|limit| Meter::used() > limit)
    }

    /// The budget of the current run, if one is metered.
    pub fn limit() -> Option<usize> {
        STATE.with(|s| {
            let limit = s.limit.get();
            (limit != isize::MAX).then(|| usize::try_from(limit).unwrap_or(0))
        })
    }

    /// The bytes the run may still allocate (`usize::MAX` when no run is
    /// metered).
    pub fn room() -> usize {
        let Some(limit) = Meter::limit() else {
            return usize::MAX;
        };
        let counted = STATE.with(|s| {
            usize::try_from(s.ceiling.get().saturating_sub(s.live.get().max(0))).unwrap_or(0)
        });
        limit.saturating_sub(Meter::used()).min(counted)
    }

    /// Checks, before allocating `bytes` more, that the run stays within
    /// its budget. Builtins call this with sizes the script chose, so that
    /// such a run fails with a clear message instead of being stopped
    /// half-way.
    pub fn reserve(bytes: usize) -> Result<(), OverBudget> {
        match Meter::limit() {
            Some(limit) if bytes > Meter::room() => Err(OverBudget { limit }),
            _ => Ok(()),
        }
    }
}

impl Drop for Meter {
    fn drop(&mut self) {
        let _ = STATE.try_with(|s| {
            s.limit.set(isize::MAX);
            s.ceiling.set(isize::MAX);
            s.whole_process.set(false);
            s.resident_base.set(None);
        });
    }
}

/// A run went, or would go, over its memory budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverBudget {
    /// The budget, in bytes.
    pub limit: usize,
}

impl std::fmt::Display for OverBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the script would hold more than its memory budget of {} MiB; raise --max-heap-mib (STARLARK_MAX_HEAP_MIB) if it really needs more",
            self.limit >> 20
        )
    }
}

impl std::error::Error for OverBudget {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_meter_counts_what_its_thread_allocates_and_frees() {
        std::thread::spawn(|| {
            let _meter = Meter::start(1 << 30, false);
            let held: Vec<u8> = Vec::with_capacity(1 << 20);
            assert!(Meter::used() >= 1 << 20);
            drop(held);
            assert!(Meter::used() < 1 << 20);
            assert!(Meter::peak() >= 1 << 20);
            assert!(!Meter::over());
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_soft_meter_notes_going_over_and_refuses_reservations() {
        std::thread::spawn(|| {
            let _meter = Meter::start(1 << 20, false);
            assert!(Meter::reserve(1 << 10).is_ok());
            assert_eq!(Meter::reserve(2 << 20), Err(OverBudget { limit: 1 << 20 }));
            let _meter = Meter::start(1 << 20, false);
            let held = vec![0u8; 2 << 20];
            assert!(Meter::over());
            assert!(Meter::reserve(1).is_err());
            drop(held);
            assert!(!Meter::over());
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_whole_process_meter_counts_touched_memory_past_its_first_mebibyte() {
        std::thread::spawn(|| {
            let _meter = Meter::start(64 << 20, true);
            let small = vec![1u8; 64 << 10];
            assert!(Meter::used() >= 64 << 10);
            let large = vec![1u8; 8 << 20];
            // Past the first mebibyte the resident bytes are read; they
            // grow with the touched vector, so it counts in full.
            assert!(Meter::used() >= 8 << 20, "used {}", Meter::used());
            drop((small, large));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn without_a_meter_nothing_is_refused() {
        std::thread::spawn(|| {
            assert_eq!(Meter::limit(), None);
            assert!(Meter::reserve(usize::MAX / 2).is_ok());
        })
        .join()
        .unwrap();
    }
}
