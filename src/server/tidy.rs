//! Handing back the memory the allocator holds free once the server has
//! been quiet for a while: it keeps freed pages for reuse, so a server that
//! answered a burst of large requests would otherwise stay at its peak.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// Calls started or ended since the process began.
static ACTIVITY: AtomicU64 = AtomicU64::new(0);
/// Calls started and not ended.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// A call in flight: it ends when this is dropped (answered, failed or
/// abandoned by its caller).
pub struct Call(());

/// Notes that a call started.
pub fn call_started() -> Call {
    IN_FLIGHT.fetch_add(1, Ordering::Relaxed);
    ACTIVITY.fetch_add(1, Ordering::Relaxed);
    Call(())
}

impl Drop for Call {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::Relaxed);
        ACTIVITY.fetch_add(1, Ordering::Relaxed);
    }
}

/// Runs for ever: once calls have come and gone and `quiet` passes with
/// none in flight and none starting or ending, releases the freed memory
/// (once per such stretch).
pub async fn when_quiet(quiet: Duration) {
    let mut seen = ACTIVITY.load(Ordering::Relaxed);
    let mut tidy = false;
    let mut tick = tokio::time::interval(quiet);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let now = ACTIVITY.load(Ordering::Relaxed);
        if now != seen {
            seen = now;
            tidy = true;
        } else if tidy && IN_FLIGHT.load(Ordering::Relaxed) == 0 {
            tidy = false;
            // A walk of the allocator's free lists: off the async threads.
            let _ = tokio::task::spawn_blocking(crate::meter::release_freed_memory).await;
        }
    }
}
