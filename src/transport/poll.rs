//! Waiting for the other end of a worker socket by polling, briefly,
//! before sleeping.
//!
//! A request crosses the worker socket twice (the job to the worker, the
//! answer back), and a crossing that finds the other end asleep wakes a
//! thread in the kernel. On the 2-core VMs the benchmark runs on, each such
//! wake-up costs 20-25 µs, more than evaluating `x = 1` (timed stage by
//! stage). Polling the socket for a short time first catches a frame as it
//! lands.
//!
//! The price is CPU: at most the budget per wait, and only where nothing
//! else could use it. The server polls only for the single run in flight,
//! only when no run has had company for a while (see
//! `processes::CALM_AFTER`): under load its threads have other requests
//! to serve, even at moments when one run is all the workers hold; and
//! only when that run came within the budget of the last one's answer: a
//! caller that calls now and then, as a controller does, would have every
//! worker poll out its whole budget after each answer (see
//! `processes::Flight`). A worker polls for its next job right after
//! answering, under the same condition (the server sets the job's
//! `poll_after`), when a busy caller sends the next one. Both yield the
//! CPU between polls, so a runnable thread on the same core goes first.
//! `--worker-poll-micros 0` turns polling off.

use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::net::RecvFlags;

/// How long a wait polls before sleeping, unless configured.
pub const DEFAULT_BUDGET: Duration = Duration::from_micros(500);

/// Polls `socket` until a read would not block (bytes, end of stream or an
/// error to report) or `budget` has passed; `true` when readable.
pub fn until_readable(socket: impl AsFd, budget: Duration) -> bool {
    if budget.is_zero() {
        return false;
    }
    let started = Instant::now();
    let mut byte = [0u8; 1];
    loop {
        match rustix::net::recv(&socket, &mut byte, RecvFlags::PEEK | RecvFlags::DONTWAIT) {
            Err(Errno::AGAIN | Errno::INTR) => {}
            // Bytes, the end of the stream, or an error the read reports.
            _ => return true,
        }
        if started.elapsed() >= budget {
            return false;
        }
        std::thread::yield_now();
    }
}

/// Waits up to `timeout`, asleep, for `socket` to be readable; `true` when
/// it is (or when the wait fails: the read then reports why).
pub fn readable_within(socket: impl AsFd, timeout: Duration) -> bool {
    let Ok(timeout) = rustix::event::Timespec::try_from(timeout) else {
        return true;
    };
    let mut fds = [rustix::event::PollFd::new(
        &socket,
        rustix::event::PollFlags::IN,
    )];
    loop {
        match rustix::event::poll(&mut fds, Some(&timeout)) {
            Ok(0) => return false,
            Err(Errno::INTR) => {}
            _ => return true,
        }
    }
}

/// Sleeps until the other end of `socket` has closed or shut down its
/// side; bytes waiting to be read do not end the wait.
pub fn until_hangup(socket: impl AsFd) {
    let mut fds = [rustix::event::PollFd::new(
        &socket,
        rustix::event::PollFlags::RDHUP,
    )];
    loop {
        match rustix::event::poll(&mut fds, None) {
            Err(Errno::INTR) => {}
            // A hang-up, or a socket the wait cannot watch: either way the
            // caller is on its own.
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::os::unix::net::UnixStream;

    use super::*;

    #[test]
    fn an_empty_socket_is_polled_for_the_budget_then_given_up() {
        let (ours, _theirs) = UnixStream::pair().unwrap();
        let started = Instant::now();
        assert!(!until_readable(&ours, Duration::from_millis(5)));
        assert!(started.elapsed() >= Duration::from_millis(5));
    }

    #[test]
    fn waiting_bytes_are_seen_at_once_and_left_for_the_read() {
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        theirs.write_all(b"ab").unwrap();
        assert!(until_readable(&ours, Duration::from_secs(5)));
        let mut read = [0u8; 2];
        std::io::Read::read_exact(&mut &ours, &mut read).unwrap();
        assert_eq!(&read, b"ab");
    }

    #[test]
    fn bytes_arriving_during_the_poll_end_it() {
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            theirs.write_all(b"x").unwrap();
            theirs
        });
        let started = Instant::now();
        assert!(until_readable(&ours, Duration::from_secs(5)));
        assert!(started.elapsed() < Duration::from_secs(5));
        drop(writer.join());
    }

    #[test]
    fn a_closed_peer_is_readable_so_the_read_reports_it() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        drop(theirs);
        assert!(until_readable(&ours, Duration::from_secs(5)));
    }

    #[test]
    fn a_sleeping_wait_ends_with_bytes_or_its_timeout() {
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        let started = Instant::now();
        assert!(!readable_within(&ours, Duration::from_millis(20)));
        assert!(started.elapsed() >= Duration::from_millis(20));
        theirs.write_all(b"x").unwrap();
        assert!(readable_within(&ours, Duration::from_secs(5)));
    }

    #[test]
    fn a_zero_budget_does_not_poll() {
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        theirs.write_all(b"x").unwrap();
        assert!(!until_readable(&ours, Duration::ZERO));
    }

    #[test]
    fn a_hangup_ends_the_wait_and_bytes_do_not() {
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        let (done, finished) = std::sync::mpsc::channel();
        let watcher = std::thread::spawn(move || {
            until_hangup(&ours);
            done.send(()).unwrap();
        });
        theirs.write_all(b"x").unwrap();
        assert!(finished.recv_timeout(Duration::from_millis(200)).is_err());
        drop(theirs);
        finished.recv_timeout(Duration::from_secs(5)).unwrap();
        watcher.join().unwrap();
    }

    #[test]
    fn a_peer_that_shuts_its_side_down_is_a_hangup() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        theirs.shutdown(std::net::Shutdown::Write).unwrap();
        until_hangup(&ours);
    }
}
