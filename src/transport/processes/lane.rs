//! One worker process's driver: takes jobs from the pool's queue, writes
//! them to the worker, reads its answers and hands each to its request;
//! withdraws jobs that wait too long behind a run, and demotes, kills and
//! retires the worker as the pool's rules say.

use std::collections::VecDeque;
use std::io::IoSlice;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use rustix::io::Errno;
use tokio::time::Instant;

use super::{DEPTH, Ended, GRACE, Queued, Shared, State, Worker, WorkerSocket};
use crate::transport::poll;
use crate::transport::worker::{
    FRAME_ANSWER, FRAME_EXPIRED, FRAME_OVER_BUDGET, FRAME_READY, monotonic_nanos_after,
};

/// The lowest CPU priority, which demoted workers get.
const NICEST: i32 = 19;

/// What one read of answers asks room for, through tokio or past it (see
/// [`Lane::read_now`]): small answers come several, or whole, per system
/// call.
const READ_SIZE: usize = 16 << 10;

/// The most one read through tokio gives room for: more than a Unix
/// socket holds by default (208 KiB), so that a long answer read in
/// pieces does not have the rest of its frame's room cleared before each.
const READ_AT_MOST: usize = 256 << 10;

/// How long a retired worker has to exit on its own.
const RETIRE_WAIT: Duration = Duration::from_secs(1);

/// A job written (or being written) to the worker.
struct Sent {
    /// The job, until it is answered or withdrawn. A withdrawn job stays
    /// here as a placeholder until the worker says it skipped it, so that
    /// the worker's answers still line up with the jobs it was sent.
    job: Option<Queued>,
    /// The frame as sent: the start-by time, then the job's frame.
    pieces: [Bytes; 4],
    /// Bytes of the frame written so far.
    written: usize,
    /// When it started running, as far as the server can tell: when the
    /// job before it was answered and its own frame was written.
    started: Option<Instant>,
    /// When it goes to another worker if it has not started by then (only
    /// a job sent behind another has one).
    withdraw_at: Option<Instant>,
}

impl Sent {
    fn len(&self) -> usize {
        self.pieces.iter().map(Bytes::len).sum()
    }

    fn written_all(&self) -> bool {
        self.written == self.len()
    }
}

/// Why a driver stops.
enum Exit {
    /// The worker stopped or its socket failed.
    Died(String),
    /// The worker reported going over its memory budget.
    OverBudget(usize),
    /// The running job passed its deadline and grace.
    TimedOut,
    /// The running job's caller went away.
    Abandoned,
    /// A demoted worker answered its slow job.
    Demoted,
    /// The worker was idle for the pool's retirement time.
    Idle,
}

/// Where a lane counts in the pool.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    /// In the fast lane, taking jobs.
    Fast,
    /// Demoted, but still holding its fast slot: the slow lane was full.
    Demoted,
    /// Demoted, and counted in the slow lane.
    Slow,
}

/// A driver's own view of its worker.
struct Lane {
    /// Jobs sent, in order; the first is running (once `started`).
    fifo: VecDeque<Sent>,
    /// Bytes read from the worker that do not make a whole frame yet.
    inbox: BytesMut,
    /// Where the lane counts.
    place: Place,
    /// Has not said it is ready yet.
    starting: bool,
    /// The worker said it has started: runs are timed from then on (a
    /// worker's start does not count against its first run).
    ready: bool,
    /// When the worker last had nothing to do.
    idle_since: Instant,
    /// The pool, for putting its counts right if the driver stops
    /// without settling (it never should; see [`Drop`]).
    shared: Arc<Shared>,
    /// Taken out of the pool's counts.
    left: bool,
}

/// What woke a driver.
enum Event {
    Readable,
    Writable,
    Job,
    Timer,
    Abandoned,
}

/// Drives `worker` until it stops; then settles its jobs and the pool's
/// counts.
pub(super) async fn drive(shared: Arc<Shared>, mut worker: Worker) {
    let mut lane = Lane::new(shared.clone());
    let exit = lane.run(&shared, &mut worker).await;
    lane.settle(&shared, &mut worker, exit).await;
}

impl Lane {
    /// The lane of a worker being started, counted in the pool.
    fn new(shared: Arc<Shared>) -> Lane {
        Lane {
            fifo: VecDeque::new(),
            inbox: BytesMut::with_capacity(READ_SIZE),
            place: Place::Fast,
            starting: true,
            ready: false,
            idle_since: Instant::now(),
            shared,
            left: false,
        }
    }

    /// Whether the lane's run went on past its demotion time.
    fn demoted(&self) -> bool {
        self.place != Place::Fast
    }

    async fn run(&mut self, shared: &Arc<Shared>, worker: &mut Worker) -> Exit {
        loop {
            if !self.demoted() {
                self.pull(shared);
            }
            if let Err(e) = self.write(&worker.socket) {
                return Exit::Died(format!("cannot send the job: {e}"));
            }
            self.mark_started();
            // Alone, a run is worth polling for: the thread has nothing
            // else to do, and waking it from sleep costs more than the run.
            let polled = self.fifo.len() == 1
                && self.fifo[0].written_all()
                && shared.flight.alone()
                && poll::until_readable(&worker.socket, shared.poll_budget);
            match self.read(&worker.socket, polled) {
                Ok(true) => {}
                Ok(false) => return Exit::Died("no answer: end of stream".to_owned()),
                Err(e) => return Exit::Died(format!("no answer: {e}")),
            }
            let before = self.fifo.len();
            let was_ready = self.ready;
            if let Some(exit) = self.answers(shared) {
                return exit;
            }
            if self.fifo.len() < before || self.ready != was_ready {
                // Answered, or ready for a job behind the first: take the
                // next jobs before waiting.
                continue;
            }
            let wake = self.next_wake(shared);
            let writing = self.writing();
            if let Err(e) = worker.socket.watch_writes(writing) {
                return Exit::Died(format!("cannot watch the socket: {e}"));
            }
            let idle = self.fifo.is_empty() && !self.demoted();
            let room = !self.fifo.is_empty() && self.fifo.len() < self.holds() && !self.demoted();
            let head_closed = async {
                match self.fifo.front_mut() {
                    Some(Sent {
                        job: Some(job),
                        started: Some(_),
                        ..
                    }) => job.answer.closed().await,
                    _ => std::future::pending().await,
                }
            };
            let event = tokio::select! {
                r = worker.socket.readable() => r.map(|()| Event::Readable),
                r = worker.socket.writable(), if writing => r.map(|()| Event::Writable),
                () = shared.jobs.notified(), if idle => Ok(Event::Job),
                () = shared.room.notified(), if room => Ok(Event::Job),
                () = sleep_until(wake) => Ok(Event::Timer),
                () = head_closed => Ok(Event::Abandoned),
            };
            match event {
                Err(e) => return Exit::Died(format!("the socket failed: {e}")),
                Ok(Event::Readable | Event::Writable | Event::Job) => {}
                Ok(Event::Abandoned) => return Exit::Abandoned,
                Ok(Event::Timer) => {
                    if let Some(exit) = self.on_timer(shared, worker) {
                        return exit;
                    }
                }
            }
        }
    }

    /// How many jobs the worker may hold: [`DEPTH`] once it is ready, one
    /// before. A job sent behind another waits at most `withdraw_after`
    /// from being sent, and that wait is meant for a run: behind a worker
    /// still starting it would run out before the first job began and send
    /// the job to yet another worker.
    fn holds(&self) -> usize {
        if self.ready { DEPTH } else { 1 }
    }

    /// Takes jobs from the queue: one when idle, then a second behind the
    /// first (up to [`Self::holds`]) only when no other worker is idle to
    /// take it sooner.
    fn pull(&mut self, shared: &Arc<Shared>) {
        if self.fifo.len() >= self.holds() {
            return;
        }
        let mut state = shared.lock();
        let was_idle = self.fifo.is_empty();
        while self.fifo.len() < self.holds() {
            let others_idle = state.idle.saturating_sub(usize::from(self.fifo.is_empty()));
            if !self.fifo.is_empty() && others_idle > 0 {
                break;
            }
            let Some(job) = state.queue.pop_front() else {
                break;
            };
            if job.answer.is_closed() {
                // Its caller went away before it was sent.
                continue;
            }
            let behind = !self.fifo.is_empty();
            self.fifo
                .push_back(sent(job, behind.then_some(shared.withdraw_after)));
            if !behind {
                state.idle -= 1;
            }
        }
        // Jobs left for idle workers: one of them may not have been woken
        // (a wake-up is kept for one waiter only).
        let left_for_others = !state.queue.is_empty() && state.idle > 0;
        drop(state);
        if left_for_others && !(was_idle && self.fifo.is_empty()) {
            shared.jobs.notify_last();
        }
    }

    /// Whether frames wait to be written.
    fn writing(&self) -> bool {
        self.fifo.iter().any(|s| !s.written_all())
    }

    /// Writes what the socket takes of the frames not yet written.
    fn write(&mut self, socket: &WorkerSocket) -> std::io::Result<()> {
        loop {
            let mut slices: Vec<IoSlice> = Vec::with_capacity(8);
            for sent in self.fifo.iter().filter(|s| !s.written_all()) {
                let mut skip = sent.written;
                for piece in &sent.pieces {
                    if skip >= piece.len() {
                        skip -= piece.len();
                        continue;
                    }
                    slices.push(IoSlice::new(&piece[skip..]));
                    skip = 0;
                }
            }
            if slices.is_empty() {
                return Ok(());
            }
            let mut n = match socket.try_write_vectored(&slices) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            drop(slices);
            for sent in self.fifo.iter_mut().filter(|s| !s.written_all()) {
                let step = n.min(sent.len() - sent.written);
                sent.written += step;
                n -= step;
                if n == 0 {
                    break;
                }
            }
        }
    }

    /// The first job starts running once the worker is ready, the job
    /// before it has answered and its own frame is out.
    fn mark_started(&mut self) {
        if !self.ready {
            return;
        }
        if let Some(head) = self.fifo.front_mut()
            && head.started.is_none()
            && head.written_all()
        {
            head.started = Some(Instant::now());
        }
    }

    /// Reads what the socket holds. `Ok(false)` at the end of the stream.
    ///
    /// `polled`: polling saw the answer arrive. Tokio does not know yet (it
    /// reads only once its reactor has seen the socket readable again since
    /// the last read that would have blocked), so the answer is read here
    /// with a system call of its own rather than after a turn of the
    /// reactor, which cost a wait for events and a second pass of the
    /// driver for every answer polling caught.
    fn read(&mut self, socket: &WorkerSocket, polled: bool) -> std::io::Result<bool> {
        if polled && !self.read_now(socket)? {
            return Ok(false);
        }
        loop {
            let wanted = self.wanted();
            if self.inbox.capacity() - self.inbox.len() < 4096 {
                self.inbox.reserve(wanted.max(READ_SIZE));
            }
            let room = wanted.clamp(READ_SIZE, READ_AT_MOST);
            match socket.try_read(&mut self.inbox, room) {
                Ok(0) => return Ok(false),
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(true),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Reads what the socket holds now, past tokio; `Ok(false)` at the end
    /// of the stream. What is left (an answer longer than one read) comes
    /// through tokio, once its reactor sees it.
    fn read_now(&mut self, socket: &WorkerSocket) -> std::io::Result<bool> {
        match socket.read_now(&mut self.inbox, READ_SIZE) {
            Ok(0) => Ok(false),
            Ok(_) | Err(Errno::AGAIN) => Ok(true),
            Err(e) => Err(e.into()),
        }
    }

    /// The length of the frame at the front of the inbox, once known.
    fn frame_length(&self) -> Option<usize> {
        let bytes = self.inbox.get(1..5)?;
        Some(u32::from_le_bytes(bytes.try_into().expect("four bytes of length")) as usize)
    }

    /// The bytes still missing from the frame at the front of the inbox.
    fn wanted(&self) -> usize {
        match self.frame_length() {
            None => 5 - self.inbox.len(),
            Some(length) => (5 + length).saturating_sub(self.inbox.len()),
        }
    }

    /// Hands every whole answer in the inbox to its job.
    fn answers(&mut self, shared: &Arc<Shared>) -> Option<Exit> {
        while let Some(length) = self.frame_length()
            && self.inbox.len() >= 5 + length
        {
            let kind = self.inbox[0];
            self.inbox.advance(5);
            let payload = self.inbox.split_to(length).freeze();
            if kind == FRAME_OVER_BUDGET && length == 8 {
                let mut limit = [0u8; 8];
                limit.copy_from_slice(&payload);
                let limit = usize::try_from(u64::from_le_bytes(limit)).unwrap_or(usize::MAX);
                return Some(Exit::OverBudget(limit));
            }
            if kind == FRAME_READY {
                self.ready = true;
                shared.first_ended(Ok(()));
                if self.starting {
                    self.starting = false;
                    shared.lock().starting -= 1;
                }
                self.mark_started();
                continue;
            }
            if kind != FRAME_ANSWER && kind != FRAME_EXPIRED {
                return Some(Exit::Died(format!("an unknown frame kind {kind}")));
            }
            let Some(sent) = self.fifo.pop_front() else {
                return Some(Exit::Died("an answer nobody asked for".to_owned()));
            };
            let answered = sent.job.is_some();
            match (kind, sent.job) {
                (FRAME_ANSWER, Some(job)) => {
                    let _ = job.answer.send(Ended::Answered(payload));
                }
                // Skipped before the server withdrew it: it goes elsewhere.
                (_, Some(job)) => shared.requeue(std::iter::once(job)),
                // A withdrawn job, skipped or (rarely) run anyway.
                (_, None) => {}
            }
            if self.demoted() && answered {
                return Some(Exit::Demoted);
            }
            if self.fifo.is_empty() && !self.demoted() {
                self.idle_since = Instant::now();
                shared.lock().idle += 1;
            }
            self.mark_started();
        }
        None
    }

    /// When the driver must look at its worker again without being woken:
    /// the running job's demotion or deadline, a waiting job's withdrawal,
    /// or the idle retirement.
    fn next_wake(&self, shared: &Shared) -> Option<Instant> {
        if self.fifo.is_empty() {
            return shared.idle_retirement.map(|after| self.idle_since + after);
        }
        let head = match self.fifo.front() {
            Some(Sent {
                job: Some(job),
                started: Some(started),
                ..
            }) => Some(if self.demoted() {
                *started + job.timeout + GRACE
            } else {
                (*started + shared.demote_after).min(*started + job.timeout + GRACE)
            }),
            _ => None,
        };
        let withdraw = self
            .fifo
            .iter()
            .filter(|s| s.job.is_some() && s.started.is_none())
            .filter_map(|s| s.withdraw_at)
            .min();
        match (head, withdraw) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn on_timer(&mut self, shared: &Arc<Shared>, worker: &Worker) -> Option<Exit> {
        let now = Instant::now();
        if self.fifo.is_empty() {
            return match shared.idle_retirement {
                Some(after) if now >= self.idle_since + after => {
                    tracing::debug!(workers = 1, "idle workers exit");
                    Some(Exit::Idle)
                }
                _ => None,
            };
        }
        if let Some(Sent {
            job: Some(job),
            started: Some(started),
            ..
        }) = self.fifo.front()
        {
            if now >= *started + job.timeout + GRACE {
                return Some(Exit::TimedOut);
            }
            if !self.demoted() && now >= *started + shared.demote_after {
                self.demote(shared, worker);
                return None;
            }
        }
        let due: Vec<usize> = (0..self.fifo.len())
            .filter(|&i| {
                let s = &self.fifo[i];
                s.job.is_some() && s.started.is_none() && s.withdraw_at.is_some_and(|at| at <= now)
            })
            .collect();
        let withdrawn = self.withdraw(&due);
        shared.requeue(withdrawn.into_iter());
        None
    }

    /// Takes the jobs at `indices` (in order) back from the worker: a job
    /// not written at all leaves the queue; one written (or partly) stays
    /// as a placeholder the worker will skip.
    fn withdraw(&mut self, indices: &[usize]) -> Vec<Queued> {
        let mut jobs = Vec::with_capacity(indices.len());
        for &i in indices {
            if let Some(job) = self.fifo[i].job.take() {
                jobs.push(job);
            }
        }
        // Frames not begun can go: the ones after them are not begun either.
        while self
            .fifo
            .back()
            .is_some_and(|s| s.job.is_none() && s.written == 0)
        {
            self.fifo.pop_back();
        }
        jobs
    }

    /// Gives the running job's worker the lowest priority and the slow
    /// lane, and its queue back to the pool.
    fn demote(&mut self, shared: &Arc<Shared>, worker: &Worker) {
        self.place = Place::Demoted;
        lower_priority(worker.child.id());
        let behind: Vec<usize> = (1..self.fifo.len()).collect();
        let withdrawn = self.withdraw(&behind);
        {
            let mut state = shared.lock();
            if state.slow < shared.slow_lanes {
                state.slow += 1;
                state.workers -= 1;
                if self.starting {
                    self.starting = false;
                    state.starting -= 1;
                }
                self.place = Place::Slow;
            }
        }
        // Requeued even when empty: a worker may start for the queue now
        // that this one left the fast lane.
        if withdrawn.is_empty() {
            let state = shared.lock();
            shared.start_workers(state);
        } else {
            shared.requeue(withdrawn.into_iter());
        }
    }

    /// After the driver stops: the running job's end, the others back to
    /// the queue, the worker killed and reaped, the counts put right.
    async fn settle(&mut self, shared: &Arc<Shared>, worker: &mut Worker, exit: Exit) {
        if !self.ready {
            shared.first_ended(Err(match &exit {
                Exit::Died(why) => why.clone(),
                Exit::OverBudget(limit) => format!(
                    "a trivial script went over the memory budget of {} MiB",
                    limit >> 20
                ),
                _ => "it was stopped".to_owned(),
            }));
        }
        if matches!(exit, Exit::Idle) {
            // Out of the counts first, so that a job coming now starts
            // another worker instead of waiting for this one to leave.
            {
                let mut state = shared.lock();
                self.leave(&mut state);
                shared.start_workers(state);
            }
            retire(worker).await;
        }
        // An abandoned job ends with its worker: nobody waits for it.
        let abandoned = matches!(exit, Exit::Abandoned);
        let head_end = match exit {
            Exit::Died(why) => {
                let _ = worker.child.start_kill();
                let status =
                    match tokio::time::timeout(Duration::from_secs(1), worker.child.wait()).await {
                        Ok(Ok(status)) => format!(", {status}"),
                        _ => String::new(),
                    };
                Some(Ended::Died(format!("{why}{status}")))
            }
            Exit::OverBudget(limit) => Some(Ended::OverBudget(limit)),
            Exit::TimedOut => Some(Ended::TimedOut),
            Exit::Abandoned | Exit::Demoted | Exit::Idle => None,
        };
        let _ = worker.child.kill().await;
        self.leave(&mut shared.lock());
        // The first job not answered was running (or being skipped, if it
        // was withdrawn): it ends here; the ones behind it never started.
        let mut sent = std::mem::take(&mut self.fifo).into_iter();
        if let Some(head) = sent.next()
            && let Some(job) = head.job
        {
            match head_end {
                Some(end) => {
                    let _ = job.answer.send(end);
                }
                None if abandoned => {}
                None => shared.requeue(std::iter::once(job)),
            }
        }
        let behind: Vec<Queued> = sent.filter_map(|s| s.job).collect();
        shared.requeue(behind.into_iter());
        let state = shared.lock();
        shared.start_workers(state);
    }

    /// Takes the lane out of the pool's counts, once.
    fn leave(&mut self, state: &mut State) {
        if self.left {
            return;
        }
        self.left = true;
        if self.place == Place::Slow {
            state.slow -= 1;
            return;
        }
        state.workers -= 1;
        // Only a lane with no job is counted idle (a demoted one never is).
        if self.fifo.is_empty() && !self.demoted() {
            state.idle -= 1;
        }
        if self.starting {
            state.starting -= 1;
        }
    }
}

impl Drop for Lane {
    /// A driver that stopped without settling (a bug, since a panic in a
    /// task only ends that task) still leaves the pool's counts right, so
    /// that another worker can take its place; its jobs' callers get an
    /// error when their answers are dropped.
    fn drop(&mut self) {
        if self.left {
            return;
        }
        let shared = self.shared.clone();
        if let Ok(mut state) = shared.state.lock() {
            self.leave(&mut state);
        }
    }
}

/// A job as sent; sent behind another, it may wait `withdraw_after` for
/// it, and carries its start-by time.
fn sent(job: Queued, withdraw_after: Option<Duration>) -> Sent {
    let (start_by, withdraw_at) = match withdraw_after {
        Some(wait) => (monotonic_nanos_after(wait), Some(Instant::now() + wait)),
        None => (0, None),
    };
    let [a, b, c] = job.frame.clone();
    Sent {
        pieces: [Bytes::copy_from_slice(&start_by.to_le_bytes()), a, b, c],
        job: Some(job),
        written: 0,
        started: None,
        withdraw_at,
    }
}

/// Sleeps until `at`, or forever.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Lowers a worker's CPU priority to the least; a failure only means the
/// run competes with the others as an equal.
fn lower_priority(pid: Option<u32>) {
    let pid = pid
        .and_then(|p| i32::try_from(p).ok())
        .and_then(rustix::process::Pid::from_raw);
    if let Some(pid) = pid
        && let Err(e) = rustix::process::setpriority_process(Some(pid), NICEST)
    {
        tracing::debug!(error = %e, "cannot lower the priority of a worker");
    }
}

/// Asks an idle worker to leave: it reads the end of its socket and exits
/// on its own, as a process that finished (what it must do at exit, such
/// as writing the counters of a profile-generating build, gets done); one
/// that has not gone within [`RETIRE_WAIT`] is killed by the caller.
async fn retire(worker: &mut Worker) {
    if worker.socket.shutdown_writes().is_err() {
        return;
    }
    if let Ok(Ok(status)) = tokio::time::timeout(RETIRE_WAIT, worker.child.wait()).await {
        tracing::debug!(%status, "a retired worker exited on its own");
    } else {
        tracing::debug!("a retired worker did not exit on its own");
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::limits::Limits;
    use crate::transport::processes::Pool;
    use crate::transport::processes::socket::tests::pair;
    use crate::transport::worker::Config;

    /// A lane the pool does not count: its drop leaves the counts alone.
    fn lane() -> Lane {
        let pool = Pool::new(Config::new(&Limits::default(), 4, false)).expect("a pool");
        let mut lane = Lane::new(pool.shared.clone());
        lane.left = true;
        lane
    }

    /// On a runtime of one thread, nothing turns the reactor while the
    /// test runs without awaiting: tokio has not seen the socket readable.
    #[tokio::test(flavor = "current_thread")]
    async fn an_answer_polling_caught_is_read_without_a_turn_of_the_reactor() {
        let (socket, mut theirs) = pair();
        theirs.write_all(b"an answer").expect("written");
        assert!(poll::until_readable(&socket, Duration::from_secs(5)));

        let mut waited = lane();
        assert!(waited.read(&socket, false).expect("read"));
        assert!(
            waited.inbox.is_empty(),
            "without polling, the bytes wait for the reactor"
        );

        let mut polled = lane();
        assert!(polled.read(&socket, true).expect("read"));
        assert_eq!(&polled.inbox[..], b"an answer");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn an_answer_longer_than_one_read_comes_whole() {
        let (socket, mut theirs) = pair();
        let long: Vec<u8> = (0..=250u8).cycle().take(READ_SIZE * 3).collect();
        // The writer keeps its end open: the end of the stream is not an answer.
        let writer = std::thread::spawn(move || theirs.write_all(&long).map(|()| (long, theirs)));
        let mut lane = lane();
        assert!(poll::until_readable(&socket, Duration::from_secs(5)));
        assert!(lane.read(&socket, true).expect("read"));
        while lane.inbox.len() < READ_SIZE * 3 {
            socket.readable().await.expect("readable");
            assert!(lane.read(&socket, false).expect("read"));
        }
        let (long, _theirs) = writer.join().expect("the writer").expect("written");
        assert_eq!(&lane.inbox[..], &long[..]);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_end_of_the_stream_is_seen_by_a_polled_read() {
        let (socket, theirs) = pair();
        drop(theirs);
        assert!(poll::until_readable(&socket, Duration::from_secs(5)));
        assert!(!lane().read(&socket, true).expect("read"));
    }
}
