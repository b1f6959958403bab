//! Handing back the memory the allocator holds free once the server has
//! been quiet for a while: it keeps freed pages for reuse, so a server that
//! answered a burst of large requests would otherwise stay at its peak.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Calls started since the process began.
static CALLS: AtomicU64 = AtomicU64::new(0);

/// Notes that a call started.
pub fn call_started() {
    CALLS.fetch_add(1, Ordering::Relaxed);
}

/// How long the server goes without a new call before it tidies.
pub const QUIET_FOR: Duration = Duration::from_secs(1);

/// Runs for ever: after each stretch of calls followed by `quiet` without
/// one, releases the freed memory once.
pub async fn when_quiet(quiet: Duration) {
    let mut seen = CALLS.load(Ordering::Relaxed);
    let mut tidy = false;
    let mut tick = tokio::time::interval(quiet);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let now = CALLS.load(Ordering::Relaxed);
        if now != seen {
            seen = now;
            tidy = true;
        } else if tidy {
            tidy = false;
            crate::meter::release_freed_memory();
        }
    }
}
