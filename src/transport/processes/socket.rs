//! The server's end of a worker's socket, watched by tokio's reactor for
//! reading only.
//!
//! A Unix socket tells its writer every time its reader takes bytes: the
//! kernel wakes whoever waits to write, whether a write waited or not.
//! Registered for writing as well as reading (as tokio's `UnixStream` is),
//! the server's thread woke once more per job, some tens of microseconds
//! after writing it, when the worker read it, only to find nothing to do. A
//! write needs the reactor only when the socket is full (a job larger
//! than its buffer, or jobs written faster than the worker reads them):
//! then a second descriptor of the same socket is registered for writing,
//! and dropped once the writes are through.

use std::io::{self, IoSlice, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;

use bytes::BytesMut;
use rustix::io::Errno;
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

use crate::transport::worker::recv_waiting;

/// A non-blocking socket to a worker: reads through the reactor, writes
/// straight to the socket unless one would block.
pub struct WorkerSocket {
    reading: AsyncFd<UnixStream>,
    /// While writes wait for room: the socket again, watched for writing.
    writing: Option<AsyncFd<OwnedFd>>,
}

impl WorkerSocket {
    /// Watches `stream`, which must be non-blocking, for reading. Call
    /// within a tokio runtime.
    pub fn new(stream: UnixStream) -> io::Result<WorkerSocket> {
        Ok(WorkerSocket {
            reading: register(stream, Interest::READABLE)?,
            writing: None,
        })
    }

    /// Waits until the reactor has seen bytes (or the end of the stream)
    /// since the last read that would have blocked.
    pub async fn readable(&self) -> io::Result<()> {
        // The guard dropped keeps the readiness: only a read that would
        // block clears it.
        self.reading.readable().await.map(drop)
    }

    /// Reads what the socket holds, as far as the reactor knows, up to
    /// `room` bytes within `inbox`'s spare capacity (at least a byte).
    /// `WouldBlock` when there is nothing, or the reactor has not seen
    /// anything come.
    pub fn try_read(&self, inbox: &mut BytesMut, room: usize) -> io::Result<usize> {
        let room = room.min(inbox.capacity() - inbox.len()).max(1);
        self.reading.try_io(Interest::READABLE, |_| {
            self.read_now(inbox, room).map_err(io::Error::from)
        })
    }

    /// Reads what the socket holds now, up to `room` bytes, onto the end
    /// of `inbox`, whatever the reactor has seen: `AGAIN` when there is
    /// nothing. The reactor still takes the socket for readable until a
    /// read through it would block.
    pub fn read_now(&self, inbox: &mut BytesMut, room: usize) -> Result<usize, Errno> {
        let filled = inbox.len();
        inbox.resize(filled + room, 0);
        let read = recv_waiting(self, &mut inbox[filled..]);
        inbox.truncate(filled + read.unwrap_or(0));
        read
    }

    /// Writes what the socket takes of `slices`. `WouldBlock` when it is
    /// full: [`watch_writes`](Self::watch_writes) then lets
    /// [`writable`](Self::writable) say when there is room.
    pub fn try_write_vectored(&self, slices: &[IoSlice<'_>]) -> io::Result<usize> {
        let write = |mut stream: &UnixStream| stream.write_vectored(slices);
        match &self.writing {
            // Through the registration, so that a full socket clears its
            // readiness.
            Some(watched) => watched.try_io(Interest::WRITABLE, |_| write(self.reading.get_ref())),
            None => write(self.reading.get_ref()),
        }
    }

    /// Starts or stops watching for room to write: on while `waiting`
    /// (writes wait for room), off otherwise.
    pub fn watch_writes(&mut self, waiting: bool) -> io::Result<()> {
        match (waiting, self.writing.is_some()) {
            (true, false) => {
                let again = self.reading.get_ref().as_fd().try_clone_to_owned()?;
                self.writing = Some(register(again, Interest::WRITABLE)?);
            }
            (false, true) => self.writing = None,
            _ => {}
        }
        Ok(())
    }

    /// Waits until the reactor has seen room to write; forever unless
    /// writes are watched.
    pub async fn writable(&self) -> io::Result<()> {
        match &self.writing {
            Some(watched) => watched.writable().await.map(drop),
            None => std::future::pending().await,
        }
    }

    /// Ends the stream for the worker; reading goes on.
    pub fn shutdown_writes(&self) -> io::Result<()> {
        self.reading.get_ref().shutdown(std::net::Shutdown::Write)
    }
}

impl AsFd for WorkerSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.reading.get_ref().as_fd()
    }
}

/// `fd` registered with the reactor for `interest` alone.
fn register<T: std::os::fd::AsRawFd>(fd: T, interest: Interest) -> io::Result<AsyncFd<T>> {
    // SAFETY: the `AsyncFd` owns `fd` (a socket or its duplicate), which
    // stays open, the same descriptor, until the `AsyncFd` is dropped.
    #[allow(unsafe_code)]
    let registered = unsafe { AsyncFd::register_with_interest(fd, interest) };
    registered.map_err(io::Error::from)
}

#[cfg(test)]
pub(super) mod tests {
    use std::io::Read;
    use std::time::Duration;

    use super::*;

    /// A socket as the server holds it, and the worker's end.
    pub(in crate::transport::processes) fn pair() -> (WorkerSocket, UnixStream) {
        let (ours, theirs) = UnixStream::pair().expect("a pair");
        ours.set_nonblocking(true).expect("non-blocking");
        (WorkerSocket::new(ours).expect("registered"), theirs)
    }

    /// The times this thread went to sleep.
    fn sleeps() -> u64 {
        let status = std::fs::read_to_string("/proc/thread-self/status").expect("status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|n| n.trim().parse().ok())
            .expect("a count of switches")
    }

    /// With no timer on a runtime of one thread, its thread sleeps until
    /// an event it watches: the worker reading the job is not one.
    #[tokio::test(flavor = "current_thread")]
    async fn the_worker_reading_its_job_does_not_wake_the_server() {
        let (socket, mut theirs) = pair();
        let job = [7u8; 100];
        assert_eq!(
            socket
                .try_write_vectored(&[IoSlice::new(&job)])
                .expect("written"),
            100
        );
        let worker = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            let mut read = [0u8; 100];
            theirs.read_exact(&mut read).expect("the job");
            // Long after the job, so that the server is asleep again
            // before the answer comes, even on a busy machine.
            std::thread::sleep(Duration::from_millis(250));
            theirs.write_all(b"an answer").expect("answered");
            theirs
        });
        let before = sleeps();
        socket.readable().await.expect("readable");
        let slept = sleeps() - before;
        let _theirs = worker.join().expect("the worker");
        assert_eq!(slept, 1, "woken only by the answer");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_write_larger_than_the_socket_waits_for_room_and_goes_through() {
        let (mut socket, mut theirs) = pair();
        let big: Vec<u8> = (0..=250u8).cycle().take(4 << 20).collect();
        let reader = std::thread::spawn(move || {
            let mut all = Vec::new();
            theirs.read_to_end(&mut all).expect("read");
            all
        });
        let mut written = 0;
        let mut waits = 0;
        while written < big.len() {
            match socket.try_write_vectored(&[IoSlice::new(&big[written..])]) {
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    socket.watch_writes(true).expect("watched");
                    socket.writable().await.expect("writable");
                    waits += 1;
                }
                Err(e) => panic!("the write failed: {e}"),
            }
        }
        socket.watch_writes(false).expect("unwatched");
        socket.shutdown_writes().expect("shut down");
        assert!(waits > 0, "4 MiB fit in the socket at once");
        assert_eq!(reader.join().expect("the reader"), big);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn writable_waits_forever_unless_writes_are_watched() {
        let (socket, _theirs) = pair();
        let waited = tokio::time::timeout(Duration::from_millis(20), socket.writable()).await;
        assert!(waited.is_err());
    }
}
