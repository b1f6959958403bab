//! The memory meter: a global allocator that counts, per thread, the bytes
//! a script run holds, so that a run's memory is bounded by what it really
//! allocates (Starlark values, native buffers, converted request data,
//! the response) rather than by what the interpreter's own heap reports.
//!
//! Each thread has a meter. [`Meter::start`] resets it for a run with a
//! budget; from then on every allocation and free on that thread moves it.
//! Going over the budget does one of two things:
//! - *soft* (in-process runs): the run's periodic
//!   checks and every builtin that is about to allocate by a size the
//!   script chose see it and stop the run with a clear error;
//! - *hard* (worker processes): the allocation that would pass the budget
//!   never happens. The worker reports the budget to its parent and
//!   aborts; the parent answers the request and starts a new worker. This
//!   is the backstop for allocations no check foresaw (one native call
//!   that builds a huge list, say).
//!
//! Frees of memory allocated before the run (or on another thread) make
//! the count smaller than the truth, never larger, so the budget can only
//! be reached by what the run itself allocates.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::OnceLock;

/// The allocator: the system allocator, counted.
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
    /// Whether going over aborts the process.
    hard: Cell<bool>,
}

thread_local! {
    // Constant-initialised and without a destructor: reading it never
    // allocates, which the allocator below relies on.
    static STATE: State = const {
        State {
            live: Cell::new(0),
            peak: Cell::new(0),
            limit: Cell::new(isize::MAX),
            hard: Cell::new(false),
        }
    };
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
            if live > s.limit.get()
                && s.hard.get()
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

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged; the bookkeeping around them never allocates.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        record(signed(layout.size()));
        // SAFETY: forwarded as given.
        unsafe { System.alloc(layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        record(signed(layout.size()));
        // SAFETY: forwarded as given.
        unsafe { System.alloc_zeroed(layout) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as given.
        unsafe { System.dealloc(ptr, layout) };
        record(-signed(layout.size()));
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            record(signed(new_size - layout.size()));
        }
        // SAFETY: forwarded as given.
        let moved = unsafe { System.realloc(ptr, layout, new_size) };
        if new_size < layout.size() && !moved.is_null() {
            record(-signed(layout.size() - new_size));
        }
        moved
    }
}

/// The current thread's meter, started for one run; dropping it stops
/// metering.
pub struct Meter {
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Meter {
    /// Starts metering the current thread with a budget of `limit` bytes.
    /// `hard` makes going over abort the process (see the module docs).
    pub fn start(limit: usize, hard: bool) -> Meter {
        STATE.with(|s| {
            s.live.set(0);
            s.peak.set(0);
            s.limit.set(signed(limit));
            s.hard.set(hard);
        });
        Meter {
            _not_send: std::marker::PhantomData,
        }
    }

    /// Bytes held by the run now.
    pub fn live() -> usize {
        STATE.with(|s| usize::try_from(s.live.get()).unwrap_or(0))
    }

    /// The most bytes the run held at once.
    pub fn peak() -> usize {
        STATE.with(|s| usize::try_from(s.peak.get()).unwrap_or(0))
    }

    /// Whether the run holds more than its budget now.
    pub fn over() -> bool {
        STATE.with(|s| s.live.get() > s.limit.get())
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
        STATE.with(|s| {
            let limit = s.limit.get();
            if limit == isize::MAX {
                return usize::MAX;
            }
            usize::try_from(limit.saturating_sub(s.live.get().max(0))).unwrap_or(0)
        })
    }

    /// Checks, before allocating `bytes` more, that the run stays within
    /// its budget. Builtins call this with sizes the script chose, so that
    /// such a run fails with a clear message instead of being stopped
    /// half-way.
    pub fn reserve(bytes: usize) -> Result<(), OverBudget> {
        STATE.with(|s| {
            let limit = s.limit.get();
            if limit == isize::MAX {
                return Ok(());
            }
            let wanted = s.live.get().saturating_add(signed(bytes));
            if wanted > limit {
                Err(OverBudget {
                    limit: usize::try_from(limit).unwrap_or(0),
                })
            } else {
                Ok(())
            }
        })
    }
}

impl Drop for Meter {
    fn drop(&mut self) {
        let _ = STATE.try_with(|s| {
            s.limit.set(isize::MAX);
            s.hard.set(false);
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
            assert!(Meter::live() >= 1 << 20);
            drop(held);
            assert!(Meter::live() < 1 << 20);
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
    fn without_a_meter_nothing_is_refused() {
        std::thread::spawn(|| {
            assert_eq!(Meter::limit(), None);
            assert!(Meter::reserve(usize::MAX / 2).is_ok());
        })
        .join()
        .unwrap();
    }
}
