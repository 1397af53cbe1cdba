//! # How long a connection of `toolhost mcp --http` may wait
//!
//! A connection with no request in flight gives the server nothing and holds a descriptor and
//! a slot of [`Caps`](super::bounds::Caps). Each connection has a [`Clock`] that says when it
//! has waited too long:
//!
//! - **head**: from its opening, or from the first byte of a request after a pause, the
//!   request's head must be complete within [`Timeouts::head`];
//! - **idle**: after an answer has been sent whole, the next request must start within
//!   [`Timeouts::idle`];
//! - **busy**: while a request is in flight (read, handled, its answer being sent: a long
//!   `tools/call`, a session's standalone `GET` event stream) nothing is cut.
//!
//! The clock is looked at, not listened to: a change of state is a store under an uncontended
//! lock, and the connection's watcher ([`Clock::expired`]) checks the deadline every
//! [`Clock::tick`] (a quarter of the shorter wait, between 10 ms and 1 s). So a request costs
//! no wake-up of another task, and a wait is cut at most one tick late.
//!
//! hyper's own `header_read_timeout` is not used: its timer starts as soon as a connection is
//! ready for the next request, so it would also close kept-alive connections the same few
//! seconds after their last answer, sooner than clients retire them (reqwest after 90 s), and a
//! request a client sends as the server closes is lost.
//!
//! ## Example
//!
//! ```ignore
//! let clock = Clock::new(timeouts);
//! let io = TokioIo::new(Watched::new(stream, clock.clone()));
//! // In the service: `let busy = clock.busy();`, held by the answer's body until it is sent.
//! tokio::select! {
//!     _ = connection => {}
//!     why = clock.expired() => { /* drop the connection: nothing is in flight */ }
//! }
//! ```

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

/// The two waits a connection is allowed (see the module's doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    pub head: Duration,
    pub idle: Duration,
}

/// Which wait ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expired {
    /// A request's head did not arrive whole in time.
    Head,
    /// No request came after the last answer.
    Idle,
}

impl Expired {
    /// The metric label.
    pub fn label(self) -> &'static str {
        match self {
            Expired::Head => "head",
            Expired::Idle => "idle",
        }
    }
}

/// Where a connection is between requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Waiting for a request's head, since then.
    Head(Instant),
    /// Nothing in flight and nothing read, since then.
    Idle(Instant),
    /// This many requests in flight.
    Busy(usize),
}

impl State {
    /// When the wait runs out, and which; `None` while busy.
    fn deadline(self, timeouts: Timeouts) -> Option<(Instant, Expired)> {
        match self {
            State::Head(since) => Some((since + timeouts.head, Expired::Head)),
            State::Idle(since) => Some((since + timeouts.idle, Expired::Idle)),
            State::Busy(_) => None,
        }
    }

    /// Bytes arrived at `now`: after a pause, a request's head has started.
    fn read(self, now: Instant) -> State {
        match self {
            State::Idle(_) => State::Head(now),
            other => other,
        }
    }

    /// A request's head was read whole and handed to the service.
    fn enter(self) -> State {
        match self {
            State::Busy(n) => State::Busy(n + 1),
            State::Head(_) | State::Idle(_) => State::Busy(1),
        }
    }

    /// A request's answer was sent whole (or dropped) at `now`.
    fn leave(self, now: Instant) -> State {
        match self {
            State::Busy(n) if n > 1 => State::Busy(n - 1),
            _ => State::Idle(now),
        }
    }
}

/// One connection's clock: see the module's doc.
pub struct Clock {
    timeouts: Timeouts,
    state: Mutex<State>,
}

impl Clock {
    /// A clock for a connection opened now: its first request's head is awaited.
    pub fn new(timeouts: Timeouts) -> Arc<Clock> {
        Arc::new(Clock { timeouts, state: Mutex::new(State::Head(Instant::now())) })
    }

    /// How often [`Clock::expired`] looks: a quarter of the shorter wait, from 10 ms to 1 s.
    pub fn tick(&self) -> Duration {
        (self.timeouts.head.min(self.timeouts.idle) / 4).clamp(Duration::from_millis(10), Duration::from_secs(1))
    }

    fn update(&self, change: impl FnOnce(State) -> State) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        *state = change(*state);
    }

    /// A request is in flight until the returned value is dropped (hold it in the answer's body).
    pub fn busy(self: &Arc<Self>) -> Busy {
        self.update(State::enter);
        Busy(self.clone())
    }

    /// Resolves when the connection has waited too long with nothing in flight (looked at
    /// every [`Clock::tick`]).
    pub async fn expired(&self) -> Expired {
        let mut ticks = tokio::time::interval(self.tick());
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let state = *self.state.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((at, why)) = state.deadline(self.timeouts)
                && Instant::now() >= at
            {
                return why;
            }
        }
    }
}

/// A request in flight on a [`Clock`]'s connection.
pub struct Busy(Arc<Clock>);

impl Drop for Busy {
    fn drop(&mut self) {
        let now = Instant::now();
        self.0.update(|s| s.leave(now));
    }
}

/// A connection's stream, telling its [`Clock`] when bytes arrive.
pub struct Watched<T> {
    inner: T,
    clock: Arc<Clock>,
}

impl<T> Watched<T> {
    pub fn new(inner: T, clock: Arc<Clock>) -> Watched<T> {
        Watched { inner, clock }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Watched<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            let now = Instant::now();
            self.clock.update(|s| s.read(now));
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Watched<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Timeouts = Timeouts { head: Duration::from_secs(10), idle: Duration::from_secs(120) };

    #[test]
    fn a_new_connection_waits_for_a_head_and_a_request_in_flight_has_no_deadline() {
        let t0 = Instant::now();
        let opened = State::Head(t0);
        assert_eq!(opened.deadline(T), Some((t0 + T.head, Expired::Head)));
        // Bytes of the head do not restart its wait.
        assert_eq!(opened.read(t0 + Duration::from_secs(9)), opened);
        let busy = opened.enter();
        assert_eq!(busy.deadline(T), None);
        // Reading the body, or the next request early, changes nothing while busy.
        assert_eq!(busy.read(t0 + Duration::from_secs(500)), busy);
    }

    #[test]
    fn after_an_answer_the_connection_is_idle_until_a_byte_starts_the_next_head() {
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_secs(1);
        let idle = State::Head(t0).enter().leave(t1);
        assert_eq!(idle.deadline(T), Some((t1 + T.idle, Expired::Idle)));
        let t2 = t1 + Duration::from_secs(100);
        let head = idle.read(t2);
        // The head's wait is counted from its first byte, and is the shorter one.
        assert_eq!(head.deadline(T), Some((t2 + T.head, Expired::Head)));
    }

    #[test]
    fn the_clock_looks_four_times_per_shorter_wait_within_bounds() {
        let tick = |head, idle| Clock::new(Timeouts { head, idle }).tick();
        assert_eq!(tick(Duration::from_secs(10), Duration::from_secs(120)), Duration::from_secs(1));
        assert_eq!(tick(Duration::from_secs(2), Duration::from_secs(120)), Duration::from_millis(500));
        assert_eq!(tick(Duration::from_millis(5), Duration::from_secs(1)), Duration::from_millis(10));
    }

    /// A connection that sends nothing is cut once its head's wait has run out, and not
    /// before; one with a request in flight is not cut; once it has left, the idle wait runs.
    #[tokio::test]
    async fn expired_resolves_once_the_deadline_has_passed_and_never_while_busy() {
        let t = Timeouts { head: Duration::from_millis(40), idle: Duration::from_millis(80) };
        let clock = Clock::new(t);
        let opened = Instant::now();
        assert_eq!(clock.expired().await, Expired::Head);
        assert!(opened.elapsed() >= t.head, "{:?}", opened.elapsed());
        let busy = clock.busy();
        let cut = tokio::time::timeout(Duration::from_millis(300), clock.expired()).await;
        assert!(cut.is_err(), "cut while busy");
        let left = Instant::now();
        drop(busy);
        assert_eq!(clock.expired().await, Expired::Idle);
        assert!(left.elapsed() >= t.idle, "{:?}", left.elapsed());
    }

    #[test]
    fn the_connection_is_idle_only_when_every_request_has_left() {
        let t0 = Instant::now();
        let two = State::Head(t0).enter().enter();
        assert_eq!(two.leave(t0), State::Busy(1));
        assert_eq!(two.leave(t0).leave(t0), State::Idle(t0));
    }
}
