//! Panics: the one process-wide hook, installed by the binary when it
//! starts, and [`quietly`] for code that expects a dependency to panic.
//!
//! A run that panics is answered as a Fatal result (the engine catches
//! it); the hook writes the panic to the log as one error line. Inside
//! [`quietly`] the hook stays silent: there the panic is an answer (for
//! example libyaml-safer's on some malformed YAML), not a fault.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};

thread_local! {
    /// Whether this thread is inside [`quietly`].
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Installs the process's panic hook: a panic outside [`quietly`] is logged
/// as an error with its location; inside it nothing is written.
pub fn install() {
    panic::set_hook(Box::new(|info| {
        if QUIET.with(Cell::get) {
            return;
        }
        let location = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        tracing::error!(panic = %message(info.payload()), %location, "panicked");
    }));
}

/// Whether this thread is inside [`quietly`], where a panic is expected
/// and caught (for the fuzz targets' panic hook, which aborts on others).
pub fn is_quiet() -> bool {
    QUIET.with(Cell::get)
}

/// Runs `f`, turning a panic into its message, without logging it.
pub fn quietly<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    let was = QUIET.with(|q| q.replace(true));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    QUIET.with(|q| q.set(was));
    result.map_err(|payload| message(&*payload))
}

/// The text of a panic's payload.
pub fn message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quiet_panic_is_its_message() {
        assert_eq!(
            quietly(|| panic!("no {}", "way")),
            Err::<(), _>("no way".to_owned())
        );
        assert_eq!(quietly(|| 7), Ok(7));
        assert!(!QUIET.with(Cell::get), "quietly restores the flag");
    }
}
