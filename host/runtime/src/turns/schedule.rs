//! The one scheduler of calls: as Claude Code runs a turn's calls, concurrency-safe calls run
//! side by side, at most `max_concurrency` of them at once, any other call runs alone, and no
//! call overtakes one that arrived before it (a safe call waits for an earlier unsafe one, and
//! the other way round). Like a fair read-write lock whose mode is known only once the call is
//! classified, with a bounded number of readers. A turn ([`crate::Runtime::run_turn`]), a JSONL
//! stream and MCP requests from several clients all queue here, so they share one order.
//!
//! A call takes a [`Ticket`] when it arrives (on MCP's stdio, when its line is read, so the
//! order is the wire order), is classified ([`crate::Runtime::check`]), then waits for its turn
//! with [`Ticket::admit`]. A ticket dropped before admission (a cancelled or refused request) is
//! skipped, so nothing waits on it forever.
//!
//! **Periods.** Safe calls admitted while other safe calls run form one *period*. A turn applies
//! its context updates when the period is over, in call order, before any later call starts (so
//! an unsafe call sees every update of the parallel calls before it, and parallel calls never see
//! each other's). For that, a finished safe call may turn its [`Running`] into a [`Hold`]: it no
//! longer counts against `max_concurrency`, and keeps the period open: no unsafe call is
//! admitted until every hold is dropped. The period is over when no safe call runs and the next
//! call in the queue is unsafe (or there is none); [`Scheduler::period_over`] says when, and a
//! holder then applies its updates and drops its holds. A safe call still being classified, or
//! admitted, continues the period.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use tokio::sync::{Notify, oneshot};

/// The queue of calls: one per runtime by default, or one shared by several runtimes (an MCP
/// server keeps its scheduler across reloads, so calls on the old and the new runtime still
/// take turns).
pub struct Scheduler {
    state: Mutex<State>,
    /// Woken when the last running safe call of a period finishes while holds remain.
    period_end: Notify,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("Scheduler")
            .field("queued", &state.queue.len())
            .field("running_safe", &state.running_safe)
            .field("running_unsafe", &state.running_unsafe)
            .field("holds", &state.holds)
            .field("limit", &state.limit)
            .finish()
    }
}

struct State {
    next: u64,
    queue: VecDeque<Entry>,
    running_safe: usize,
    running_unsafe: bool,
    /// Finished safe calls whose updates are not applied yet ([`Hold`]).
    holds: usize,
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

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Ticket").field(&self.0.id).finish()
    }
}

struct TicketInner {
    id: u64,
    scheduler: Arc<Scheduler>,
    /// Admitted: its entry already left the queue.
    admitted: std::sync::atomic::AtomicBool,
}

/// A call that is running; dropping it lets the next ones in.
#[derive(Debug)]
pub struct Running {
    scheduler: Arc<Scheduler>,
    safe: bool,
    /// Already finished by [`Running::hold`].
    finished: bool,
}

/// A finished safe call whose context updates wait for the end of its period: while any hold
/// is alive, no unsafe call is admitted. Dropping it lets the next ones in.
#[derive(Debug)]
pub struct Hold {
    scheduler: Arc<Scheduler>,
    /// Never counted (the hold of an unsafe call).
    released: bool,
}

impl Scheduler {
    /// A queue that runs at most `max_concurrency` calls at once (0 counts as 1).
    pub fn new(max_concurrency: usize) -> Arc<Self> {
        let state = State {
            next: 0,
            queue: VecDeque::new(),
            running_safe: 0,
            running_unsafe: false,
            holds: 0,
            limit: max_concurrency.max(1),
        };
        Arc::new(Scheduler { state: Mutex::new(state), period_end: Notify::new() })
    }

    /// Change the limit (a reload may change `max_concurrency`). Calls already running go on;
    /// new ones are admitted under the new limit.
    pub fn set_limit(self: &Arc<Self>, max_concurrency: usize) {
        self.change(|state| state.limit = max_concurrency.max(1));
    }

    /// The most calls admitted at once.
    pub fn limit(&self) -> usize {
        self.lock().limit
    }

    /// Whether nothing is queued, running or held: a call that arrives now runs at once,
    /// whatever its class.
    pub fn is_idle(&self) -> bool {
        let state = self.lock();
        state.queue.is_empty() && state.running_safe == 0 && !state.running_unsafe && state.holds == 0
    }

    /// A place at the end of the queue.
    pub fn ticket(self: &Arc<Self>) -> Ticket {
        let mut state = self.lock();
        let id = state.next;
        state.next += 1;
        state.queue.push_back(Entry { id, kind: Kind::Pending, admit: None });
        Ticket(Arc::new(TicketInner { id, scheduler: self.clone(), admitted: Default::default() }))
    }

    /// Wait until the period of the holds alive now is over: no safe call runs and none is
    /// about to join (the next call in the queue is unsafe, or there is none), so their owners
    /// should apply what they held and drop them.
    pub async fn period_over(&self) {
        loop {
            let notified = self.period_end.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.lock().period_over() {
                return;
            }
            notified.await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Admit what may run now, in order; the admissions are delivered after the lock is
    /// released (a waiter that went away drops its `Running`, which locks again). Tells the
    /// holders when their period is over.
    /// Change the state with `f`, then admit what may run now, in order, under the same lock
    /// (one lock per event: calls arrive, start and finish from several threads at once). The
    /// admissions are delivered after the lock is released (a waiter that went away drops its
    /// `Running`, which locks again), and the holders are told when their period is over.
    fn change(self: &Arc<Self>, f: impl FnOnce(&mut State)) {
        let mut admitted = Vec::new();
        let over = {
            let mut state = self.lock();
            f(&mut state);
            while let Some(front) = state.queue.front() {
                let safe = match front.kind {
                    Kind::Pending => break,
                    _ if state.running_unsafe => break,
                    // Beside running safe calls, or continuing a period whose holds are alive.
                    Kind::Safe if state.running_safe < state.limit => true,
                    // Alone, once every hold's updates are applied.
                    Kind::Unsafe if state.running_safe == 0 && state.holds == 0 => false,
                    _ => break,
                };
                let entry = state.queue.pop_front().expect("front exists");
                if safe {
                    state.running_safe += 1;
                } else {
                    state.running_unsafe = true;
                }
                let running = Running { scheduler: self.clone(), safe, finished: false };
                admitted.push((entry.admit.expect("a classified entry has a waiter"), running));
            }
            state.period_over()
        };
        if over {
            self.period_end.notify_waiters();
        }
        for (tx, running) in admitted {
            // The waiter is gone (cancelled): `running` is dropped here and frees its slot.
            let _ = tx.send(running);
        }
    }

    /// A running call is over; `hold`: it becomes a [`Hold`] (safe calls only).
    fn finish(self: &Arc<Self>, safe: bool, hold: bool) {
        self.change(|state| {
            if safe {
                state.running_safe -= 1;
            } else {
                state.running_unsafe = false;
            }
            if hold {
                state.holds += 1;
            }
        });
    }

    fn release(self: &Arc<Self>) {
        self.change(|state| state.holds -= 1);
    }
}

impl State {
    /// Where the entry of ticket `id` is in the queue. Tickets are queued in id order and leave
    /// it without reordering it, so a binary search finds it (a turn of 1,000 calls queues them
    /// all at once; a scan from the front would cost each admission the length of the queue).
    fn position(&self, id: u64) -> Option<usize> {
        self.queue.binary_search_by_key(&id, |e| e.id).ok()
    }

    /// Whether the holds alive belong to a period that is over: no safe call runs, and the
    /// next call in the queue (if any) is unsafe. While the next one is not classified yet, or
    /// is safe, the period may still grow (a turn's consecutive safe calls form one period,
    /// even when one of them finishes before the next is classified).
    fn period_over(&self) -> bool {
        self.holds > 0
            && self.running_safe == 0
            && !matches!(self.queue.front().map(|e| e.kind), Some(Kind::Pending | Kind::Safe))
    }
}

impl Ticket {
    /// The call is classified (`safe`) now, and the returned future waits until it may run:
    /// `safe` calls beside other safe calls (up to the limit), others alone, and never before a
    /// call that arrived earlier. Classified at once, not when first polled, so calls behind it
    /// do not wait for whichever task happens to poll it. Dropping the future gives the place up.
    pub fn admit(self, safe: bool) -> impl Future<Output = Running> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        let id = self.0.id;
        self.0.scheduler.change(|state| {
            let at = state.position(id).expect("a ticket is admitted once");
            let entry = &mut state.queue[at];
            entry.kind = if safe { Kind::Safe } else { Kind::Unsafe };
            entry.admit = Some(tx);
        });
        async move {
            // The sender lives in the queue until it is used; the queue outlives this wait.
            // Once it is used the entry has left the queue: dropping the ticket removes nothing.
            let running = rx.await.expect("an admitted entry always gets its guard");
            self.0.admitted.store(true, std::sync::atomic::Ordering::Release);
            drop(self);
            running
        }
    }
}

impl Running {
    /// Whether the call was admitted as concurrency-safe.
    pub fn is_safe(&self) -> bool {
        self.safe
    }

    /// The call is over but its updates wait for the end of its period (see [`Hold`]). For an
    /// unsafe call, which has no period, the hold is released at once.
    pub fn hold(mut self) -> Hold {
        self.finished = true;
        self.scheduler.finish(self.safe, self.safe);
        Hold { scheduler: self.scheduler.clone(), released: !self.safe }
    }
}

impl Drop for TicketInner {
    fn drop(&mut self) {
        if self.admitted.load(std::sync::atomic::Ordering::Acquire) {
            return;
        }
        let id = self.id;
        // Given up before admission (cancelled, refused): its place goes, the rest may move.
        self.scheduler.change(|state| {
            if let Some(at) = state.position(id) {
                state.queue.remove(at);
            }
        });
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.finished {
            self.scheduler.finish(self.safe, false);
        }
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        if !self.released {
            self.scheduler.release();
        }
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
    async fn tickets_classified_out_of_order_or_given_up_still_run_in_arrival_order() {
        let s = Scheduler::new(1);
        let tickets: Vec<Ticket> = (0..60).map(|_| s.ticket()).collect();
        // The last ticket is classified first; every third one is given up unclassified.
        let mut waits = Vec::new();
        for (i, ticket) in tickets.into_iter().enumerate().rev() {
            if i % 3 == 0 {
                drop(ticket);
            } else {
                waits.push(tokio::spawn(ticket.admit(i % 2 == 0)));
            }
        }
        waits.reverse();
        // One at a time, in arrival order: a call admitted out of turn would keep its slot
        // inside its finished task, and the one awaited here would never be admitted.
        for wait in waits {
            let running = tokio::time::timeout(Duration::from_secs(1), wait).await.expect("admitted in turn").unwrap();
            drop(running);
        }
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

    #[tokio::test]
    async fn a_hold_keeps_later_calls_out_until_its_period_is_applied() {
        let s = Scheduler::new(10);
        let (a, b, c, d) = (s.ticket(), s.ticket(), s.ticket(), s.ticket());
        let ra = admitted_soon(a.admit(true)).await.expect("a runs");
        let rb = admitted_soon(b.admit(true)).await.expect("b runs beside it");
        let c = tokio::spawn(c.admit(false));
        // a is done but its updates wait: the period goes on while b runs.
        let hold_a = ra.hold();
        let over = s.clone();
        let over = tokio::spawn(async move { over.period_over().await });
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(!over.is_finished(), "b still runs: the period is not over");
        // d is safe but behind the unsafe c: it waits, holds or not.
        let d = tokio::spawn(d.admit(true));
        let hold_b = rb.hold();
        tokio::time::timeout(Duration::from_secs(1), over).await.expect("the period is over").unwrap();
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(!c.is_finished(), "nothing starts while the period's updates are held");
        drop(hold_a);
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(!c.is_finished(), "one hold is still alive");
        drop(hold_b);
        let rc = tokio::time::timeout(Duration::from_secs(1), c).await.expect("c runs").unwrap();
        assert!(!rc.is_safe());
        let _unsafe_hold = rc.hold();
        tokio::time::timeout(Duration::from_secs(1), d)
            .await
            .expect("an unsafe call has no period to wait for")
            .unwrap();
    }

    #[tokio::test]
    async fn a_safe_call_joins_a_period_that_still_runs_despite_holds() {
        let s = Scheduler::new(10);
        let (a, b, c) = (s.ticket(), s.ticket(), s.ticket());
        let ra = admitted_soon(a.admit(true)).await.expect("a runs");
        let _rb = admitted_soon(b.admit(true)).await.expect("b runs");
        let _hold = ra.hold();
        assert!(admitted_soon(c.admit(true)).await.is_some(), "b still runs: c joins the period");
    }

    #[tokio::test]
    async fn a_period_stays_open_while_the_next_call_is_classified() {
        let s = Scheduler::new(10);
        let (a, b, c) = (s.ticket(), s.ticket(), s.ticket());
        let _hold = admitted_soon(a.admit(true)).await.expect("a runs").hold();
        // b is not classified yet: it may still join the period.
        let over = s.clone();
        let over = tokio::spawn(async move { over.period_over().await });
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(!over.is_finished(), "the next call is not classified yet");
        // b is safe: it continues the period despite the hold.
        let rb = admitted_soon(b.admit(true)).await.expect("a safe call continues the period");
        let c = tokio::spawn(c.admit(false));
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(!over.is_finished() && !c.is_finished(), "b runs");
        let _hold_b = rb.hold();
        // No safe call runs and the next one is unsafe: the period is over, c waits for the holds.
        tokio::time::timeout(Duration::from_secs(1), over).await.expect("the period is over").unwrap();
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(!c.is_finished());
    }
}
