//! # Retries
//!
//! A request that fails with 429 (rate limited), a 5xx (including Anthropic's 529, overloaded)
//! or a connection error is sent again, after the server's `retry-after` when it gave one,
//! else after an exponential backoff with full jitter (so many agents throttled at once do not
//! come back in step). Anything else (400, 404, …) is final at once; 401 and 403 are an
//! authentication failure.

use crate::error::{Error, Result, RetryNotice};
use crate::provider::TurnSink;
use std::time::Duration;

/// How failed requests are retried. Defaults: 4 retries, base delay 500 ms, doubling, each
/// delay at most 30 s, a server's `retry-after` honoured up to 60 s.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// The first backoff's ceiling; each retry doubles it.
    pub base: Duration,
    /// The largest backoff.
    pub max_backoff: Duration,
    /// The largest `retry-after` waited for; a longer one is cut to this (the next attempt may
    /// then fail again, and count as a retry).
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 4,
            base: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `retry` (1-based): the server's `retry-after` when given
    /// (at most `max_retry_after`), else a uniformly random delay up to `base · 2^(retry-1)`
    /// (at most `max_backoff`). `unit` is a random number in [0, 1).
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>, unit: f64) -> Duration {
        if let Some(after) = retry_after {
            return after.min(self.max_retry_after);
        }
        let ceiling = self.base.saturating_mul(1u32 << retry.saturating_sub(1).min(20)).min(self.max_backoff);
        ceiling.mul_f64(unit.clamp(0.0, 1.0))
    }
}

/// Whether an HTTP status is worth another attempt.
pub fn retryable(status: u16) -> bool {
    status == 408 || status == 409 || status == 429 || status >= 500
}

/// A random number in [0, 1) for jitter (0.5 if the system has no randomness to give).
fn unit_random() -> f64 {
    getrandom::u64().map(|n| (n >> 11) as f64 / (1u64 << 53) as f64).unwrap_or(0.5)
}

/// `retry-after` in seconds (integer or decimal). An HTTP date is not honoured (no provider
/// sends one): the backoff applies instead.
fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    let value = response.headers().get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    parse_retry_after(value)
}

/// `retry-after`'s value in seconds, clamped to a day before it becomes a [`Duration`] (a
/// server may send `1e30`; the policy then cuts it to `max_retry_after`).
fn parse_retry_after(value: &str) -> Option<Duration> {
    let secs: f64 = value.trim().parse().ok()?;
    (secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0)))
}

/// What the provider needs to know to name a failure.
pub(crate) struct Endpoint<'a> {
    pub provider: &'static str,
    pub url: &'a str,
    pub key_env: &'static str,
}

/// Send the request `build` makes until it succeeds (2xx) or may not be retried. `made`:
/// attempts already made for this request (a stream that broke off and is sent again spends
/// the same budget of retries). Returns the response and the number of attempts, `made`
/// included.
pub(crate) async fn send(
    policy: &RetryPolicy,
    endpoint: &Endpoint<'_>,
    sink: &mut dyn TurnSink,
    made: u32,
    build: impl Fn() -> reqwest::RequestBuilder,
) -> Result<(reqwest::Response, u32)> {
    let mut attempt = made;
    loop {
        attempt += 1;
        let last = attempt > policy.max_retries;
        let (status, after) = match build().send().await {
            Ok(response) if response.status().is_success() => return Ok((response, attempt)),
            Ok(response) => {
                let status = response.status().as_u16();
                let after = retry_after(&response);
                if status == 401 || status == 403 {
                    let message = error_message(response).await;
                    return Err(Error::Auth { status, message, key_env: endpoint.key_env });
                }
                if last || !retryable(status) {
                    let message = error_message(response).await;
                    return Err(Error::Status { provider: endpoint.provider, status, message, attempts: attempt });
                }
                (Some(status), after)
            }
            Err(source) => {
                if last || !(source.is_connect() || source.is_timeout() || source.is_request()) {
                    return Err(Error::Connect {
                        provider: endpoint.provider,
                        url: endpoint.url.to_string(),
                        attempts: attempt,
                        source,
                    });
                }
                (None, None)
            }
        };
        tracing::info!("{}: attempt {attempt} failed ({status:?}); retrying", endpoint.provider);
        wait(policy, attempt, status, after, sink).await;
    }
}

/// Send a request and read its answer with `read`, retrying as [`send`] does for statuses and
/// connections, and also when the answer's stream fails in a way `stream_retryable` allows
/// (an overloaded error after the 200) before any call was handed on (nothing ran, so the
/// request can be sent again). One budget of retries for both: the one loop every provider
/// goes through. Returns what `read` made and the number of attempts.
pub(crate) async fn request<T>(
    policy: &RetryPolicy,
    endpoint: &Endpoint<'_>,
    sink: &mut dyn TurnSink,
    build: impl Fn() -> reqwest::RequestBuilder,
    read: impl for<'s> Fn(reqwest::Response, &'s mut dyn TurnSink) -> futures::future::BoxFuture<'s, Result<T>>,
    stream_retryable: impl Fn(&Error) -> bool,
) -> Result<(T, u32)> {
    let mut attempts = 0;
    loop {
        let (response, tries) = send(policy, endpoint, sink, attempts, &build).await?;
        attempts = tries;
        let mut counted = Counted { sink: &mut *sink, calls: 0 };
        match read(response, &mut counted).await {
            Ok(answer) => return Ok((answer, attempts)),
            Err(e) if counted.calls == 0 && attempts <= policy.max_retries && stream_retryable(&e) => {
                tracing::info!("{}: attempt {attempts} broke off ({e}); retrying", endpoint.provider);
                wait(policy, attempts, None, None, sink).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Counts the calls handed on, so a failed stream is retried only when none was.
struct Counted<'a> {
    sink: &'a mut dyn TurnSink,
    calls: usize,
}

impl TurnSink for Counted<'_> {
    fn tool_use(&mut self, call: toolhost::ToolUse) {
        self.calls += 1;
        self.sink.tool_use(call);
    }
    fn retry(&mut self, notice: &RetryNotice) {
        self.sink.retry(notice);
    }
}

/// Report retry number `attempt` to the sink and wait its delay.
pub(crate) async fn wait(
    policy: &RetryPolicy,
    attempt: u32,
    status: Option<u16>,
    retry_after: Option<Duration>,
    sink: &mut dyn TurnSink,
) {
    let delay = policy.delay(attempt, retry_after, unit_random());
    sink.retry(&RetryNotice { attempt, status, retry_after, delay });
    tokio::time::sleep(delay).await;
}

/// The message of an error body (`{"error":{"message":…}}` in both APIs), else its start.
async fn error_message(response: reqwest::Response) -> String {
    let text = response.text().await.unwrap_or_default();
    serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.pointer("/error/message").and_then(|m| m.as_str()).map(str::to_string))
        .unwrap_or_else(|| text.chars().take(300).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy as _;

    #[test]
    fn retry_after_wins_and_is_bounded() {
        let p = RetryPolicy::default();
        assert_eq!(p.delay(1, Some(Duration::from_secs(7)), 0.9), Duration::from_secs(7));
        assert_eq!(p.delay(1, Some(Duration::from_secs(0)), 0.9), Duration::ZERO);
        assert_eq!(p.delay(3, Some(Duration::from_secs(3600)), 0.1), p.max_retry_after);
    }

    #[test]
    fn any_retry_after_is_clamped_before_it_becomes_a_duration() {
        let p = RetryPolicy::default();
        for v in ["1e30", "1e308", "18446744073709551616", "inf", " 99999999999 "] {
            let after = parse_retry_after(v);
            assert!(after.is_some_and(|d| d <= Duration::from_secs(86_400)), "{v}: {after:?}");
            assert_eq!(p.delay(1, after, 0.5), p.max_retry_after, "{v}");
        }
        for v in ["-1", "NaN", "-inf", "soon", "Wed, 21 Oct 2015 07:28:00 GMT"] {
            assert_eq!(parse_retry_after(v), None, "{v}");
        }
        assert_eq!(parse_retry_after("1.5"), Some(Duration::from_millis(1500)));
    }

    proptest::proptest! {
        /// Whatever a server sends as `retry-after`, reading it never panics, and the wait is
        /// at most the policy's ceiling.
        #[test]
        fn any_retry_after_value_is_safe(
            text in proptest::prop_oneof![
                proptest::num::f64::ANY.prop_map(|f| f.to_string()),
                proptest::num::u128::ANY.prop_map(|n| n.to_string()),
                "[-+0-9.eE ]{0,40}",
                ".{0,40}",
            ]
        ) {
            let p = RetryPolicy::default();
            let after = parse_retry_after(&text);
            proptest::prop_assert!(after.is_none_or(|d| d <= Duration::from_secs(86_400)), "{:?}: {:?}", text, after);
            proptest::prop_assert!(p.delay(1, after, 0.5) <= p.max_retry_after.max(p.max_backoff));
        }
    }

    #[test]
    fn backoff_doubles_with_full_jitter_and_a_ceiling() {
        let p = RetryPolicy { base: Duration::from_millis(100), ..RetryPolicy::default() };
        assert_eq!(p.delay(1, None, 0.0), Duration::ZERO);
        assert_eq!(p.delay(1, None, 0.5), Duration::from_millis(50));
        assert_eq!(p.delay(2, None, 0.5), Duration::from_millis(100));
        assert_eq!(p.delay(3, None, 0.5), Duration::from_millis(200));
        assert_eq!(p.delay(30, None, 1.0), p.max_backoff);
        let r = unit_random();
        assert!((0.0..1.0).contains(&r), "{r}");
    }

    #[test]
    fn which_statuses_are_retried() {
        for s in [429, 500, 502, 503, 529, 408] {
            assert!(retryable(s), "{s}");
        }
        for s in [400, 401, 403, 404, 413, 422] {
            assert!(!retryable(s), "{s}");
        }
    }
}
