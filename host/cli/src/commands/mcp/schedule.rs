//! Arrival-order scheduling of `tools/call` requests, as Claude Code runs a turn's calls:
//! concurrency-safe calls run side by side, at most the runtime's `max_concurrency` of them at
//! once, any other call runs alone, and no call overtakes one that arrived before it (a safe
//! call waits for an earlier unsafe one, and the other way round). Like a fair read-write lock
//! whose mode is known only once the call is classified, with a bounded number of readers.
//!
//! A call takes a [`Ticket`] when it arrives (on stdio, when its line is read, so the order is
//! the wire order), is classified (`is-concurrency-safe`), then waits for its turn with
//! [`Ticket::admit`]. A ticket dropped before admission (a cancelled or refused request) is
//! skipped, so nothing waits on it forever.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// The queue of calls of one server (shared by every connection: they share the workspace).
pub struct Scheduler {
    state: Mutex<State>,
}

struct State {
    next: u64,
    queue: VecDeque<Entry>,
    running_safe: usize,
    running_unsafe: bool,
    /// The most calls running at once (at least 1).
    limit: usize,
}

struct Entry {
    id: u64,
    kind: Kind,
    admit: Option<oneshot::Sender<Running>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Not classified yet: everything behind it waits.
    Pending,
    Safe,
    Unsafe,
}

/// A call's place in the queue. Cheap to clone; the place is given up when the last clone is
/// dropped without having been admitted.
#[derive(Clone)]
pub struct Ticket(Arc<TicketInner>);

struct TicketInner {
    id: u64,
    scheduler: Arc<Scheduler>,
}

/// A call that is running; dropping it lets the next ones in.
pub struct Running {
    scheduler: Arc<Scheduler>,
    safe: bool,
}

impl Scheduler {
    /// A queue that runs at most `max_concurrency` calls at once (0 counts as 1).
    pub fn new(max_concurrency: usize) -> Arc<Self> {
        let state = State {
            next: 0,
            queue: VecDeque::new(),
            running_safe: 0,
            running_unsafe: false,
            limit: max_concurrency.max(1),
        };
        Arc::new(Scheduler { state: Mutex::new(state) })
    }

    /// Change the limit (a reload may change `max_concurrency`). Calls already running go on;
    /// new ones are admitted under the new limit.
    pub fn set_limit(self: &Arc<Self>, max_concurrency: usize) {
        self.lock().limit = max_concurrency.max(1);
        self.pump();
    }

    /// A place at the end of the queue.
    pub fn ticket(self: &Arc<Self>) -> Ticket {
        let mut state = self.lock();
        let id = state.next;
        state.next += 1;
        state.queue.push_back(Entry { id, kind: Kind::Pending, admit: None });
        Ticket(Arc::new(TicketInner { id, scheduler: self.clone() }))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Admit what may run now, in order; the admissions are delivered after the lock is
    /// released (a waiter that went away drops its `Running`, which locks again).
    fn pump(self: &Arc<Self>) {
        let mut admitted = Vec::new();
        {
            let mut state = self.lock();
            while let Some(front) = state.queue.front() {
                let safe = match front.kind {
                    Kind::Pending => break,
                    Kind::Safe if !state.running_unsafe && state.running_safe < state.limit => true,
                    Kind::Unsafe if !state.running_unsafe && state.running_safe == 0 => false,
                    _ => break,
                };
                let entry = state.queue.pop_front().expect("front exists");
                if safe {
                    state.running_safe += 1;
                } else {
                    state.running_unsafe = true;
                }
                let running = Running { scheduler: self.clone(), safe };
                admitted.push((entry.admit.expect("a classified entry has a waiter"), running));
            }
        }
        for (tx, running) in admitted {
            // The waiter is gone (cancelled): `running` is dropped here and frees its slot.
            let _ = tx.send(running);
        }
    }

    fn finish(self: &Arc<Self>, safe: bool) {
        {
            let mut state = self.lock();
            if safe {
                state.running_safe -= 1;
            } else {
                state.running_unsafe = false;
            }
        }
        self.pump();
    }
}

impl Ticket {
    /// Wait until the call may run: `safe` calls beside other safe calls (up to the limit),
    /// others alone, and never before a call that arrived earlier. Dropping the future gives the
    /// place up.
    pub async fn admit(self, safe: bool) -> Running {
        let (tx, rx) = oneshot::channel();
        let scheduler = self.0.scheduler.clone();
        {
            let mut state = scheduler.lock();
            let entry = state.queue.iter_mut().find(|e| e.id == self.0.id).expect("a ticket is admitted once");
            entry.kind = if safe { Kind::Safe } else { Kind::Unsafe };
            entry.admit = Some(tx);
        }
        scheduler.pump();
        // The sender lives in the queue until it is used; the queue outlives this wait.
        let running = rx.await.expect("an admitted entry always gets its guard");
        drop(self);
        running
    }
}

impl Drop for TicketInner {
    fn drop(&mut self) {
        let removed = {
            let mut state = self.scheduler.lock();
            let before = state.queue.len();
            state.queue.retain(|e| e.id != self.id);
            state.queue.len() != before
        };
        if removed {
            self.scheduler.pump();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.scheduler.finish(self.safe);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    async fn admitted_soon(f: impl Future<Output = Running>) -> Option<Running> {
        tokio::time::timeout(Duration::from_millis(50), f).await.ok()
    }

    #[tokio::test]
    async fn safe_calls_run_together_and_an_unsafe_one_alone_in_arrival_order() {
        let s = Scheduler::new(10);
        let (a, b, c, d) = (s.ticket(), s.ticket(), s.ticket(), s.ticket());
        let ra = admitted_soon(a.admit(true)).await.expect("first safe call runs");
        let rb = admitted_soon(b.admit(true)).await.expect("second safe call runs beside it");
        let c = tokio::spawn(c.admit(false));
        // d is safe but arrived after the unsafe c: it must wait too.
        let d = tokio::spawn(d.admit(true));
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(!c.is_finished() && !d.is_finished());
        drop(ra);
        drop(rb);
        let rc = c.await.unwrap();
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(!d.is_finished(), "a safe call does not overtake a running unsafe one");
        drop(rc);
        d.await.unwrap();
    }

    #[tokio::test]
    async fn no_more_safe_calls_run_than_the_limit_and_the_next_waits_in_order() {
        let s = Scheduler::new(2);
        let (a, b, c, d) = (s.ticket(), s.ticket(), s.ticket(), s.ticket());
        let ra = admitted_soon(a.admit(true)).await.expect("first safe call runs");
        let _rb = admitted_soon(b.admit(true)).await.expect("second safe call runs beside it");
        let c = tokio::spawn(c.admit(true));
        let d = tokio::spawn(d.admit(true));
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(!c.is_finished() && !d.is_finished(), "a third safe call waits for a free slot");
        drop(ra);
        let _rc = c.await.unwrap();
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(!d.is_finished(), "one slot freed, one call admitted");
        // Raising the limit lets the next one in at once.
        s.set_limit(3);
        tokio::time::timeout(Duration::from_secs(1), d).await.expect("d runs").unwrap();
    }

    #[tokio::test]
    async fn a_ticket_dropped_before_classification_does_not_block_the_queue() {
        let s = Scheduler::new(10);
        let (a, b) = (s.ticket(), s.ticket());
        // b is classified while a is still pending: it waits for a.
        let b = tokio::spawn(b.admit(false));
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(!b.is_finished());
        drop(a);
        b.await.unwrap();
    }

    #[tokio::test]
    async fn a_cancelled_wait_gives_its_place_up() {
        let s = Scheduler::new(10);
        let (a, b, c) = (s.ticket(), s.ticket(), s.ticket());
        let ra = a.admit(false).await;
        // b waits behind a, then is cancelled; c must run once a is done.
        assert!(admitted_soon(b.admit(false)).await.is_none());
        let c = tokio::spawn(c.admit(false));
        drop(ra);
        tokio::time::timeout(Duration::from_secs(1), c).await.expect("c runs").unwrap();
    }
}
