//! What `toolhost mcp --http` tells a load balancer and a monitoring system: whether it lives
//! (`/healthz`), whether it should get traffic (`/readyz`: tools loaded, the config's last
//! reload good, not draining), and what it has done (`/metrics`, Prometheus text format through
//! the Prometheus project's `prometheus-client`).
//!
//! Counted from the runtime's events (calls by tool and outcome, their latency, permission
//! decisions) and from the server itself (calls waiting for their turn, sessions, loaded tools,
//! failed reloads, open connections and those closed by the bounds of `bounds.rs`). A tool
//! label is a loaded tool's name, or `_other` for a name no loaded tool has: a client asking
//! for made-up tools cannot grow the metrics without bound.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::collections::HashSet;
use std::sync::RwLock;
use toolhost::{Event, Runtime};

/// The `Content-Type` of `/metrics`.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// The tool label of a name no loaded tool has.
const OTHER_TOOL: &str = "_other";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    tool: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DecisionLabels {
    decision: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LimitLabels {
    limit: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WaitLabels {
    wait: &'static str,
}

/// Latency buckets: 100 µs to about 26 s, ×4 each (a call ranges from a noop's tens of
/// microseconds to a timeout's seconds).
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 4.0, 10))
}

/// Every metric of one server.
pub struct Metrics {
    registry: Registry,
    calls: Family<CallLabels, Counter>,
    decisions: Family<DecisionLabels, Counter>,
    latency: Family<ToolLabels, Histogram, fn() -> Histogram>,
    /// `tools/call` requests waiting for their turn, over every session.
    pub queued: Gauge,
    /// Open MCP sessions.
    pub sessions: Gauge,
    tools: Gauge,
    /// Reloads that failed (the loaded tools stayed in service).
    pub reload_failures: Counter,
    /// Open HTTP connections.
    pub connections: Gauge,
    refused: Family<LimitLabels, Counter>,
    timed_out: Family<WaitLabels, Counter>,
    /// `accept` calls that failed (e.g. out of file descriptors).
    pub accept_errors: Counter,
    /// The names of the loaded tools (the only tool labels besides [`OTHER_TOOL`]).
    known: RwLock<HashSet<String>>,
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("toolhost");
        let calls = Family::<CallLabels, Counter>::default();
        let decisions = Family::<DecisionLabels, Counter>::default();
        let latency = Family::<ToolLabels, Histogram, fn() -> Histogram>::new_with_constructor(latency_histogram);
        let (queued, sessions, tools) = (Gauge::default(), Gauge::default(), Gauge::default());
        let reload_failures = Counter::default();
        let (connections, accept_errors) = (Gauge::default(), Counter::default());
        let refused = Family::<LimitLabels, Counter>::default();
        let timed_out = Family::<WaitLabels, Counter>::default();
        registry.register("calls", "Tool calls answered, by tool and outcome", calls.clone());
        registry.register("decisions", "Permission decisions, by decision", decisions.clone());
        registry.register("call_duration_seconds", "Time from a call's arrival to its result", latency.clone());
        registry.register("queued_calls", "tools/call requests waiting for their turn", queued.clone());
        registry.register("sessions", "Open MCP sessions", sessions.clone());
        registry.register("tools_loaded", "Tools offered", tools.clone());
        registry.register("reload_failures", "Reloads that failed, keeping the loaded tools", reload_failures.clone());
        registry.register("connections", "Open HTTP connections", connections.clone());
        registry.register(
            "connections_refused",
            "HTTP connections closed at once, by the limit reached",
            refused.clone(),
        );
        registry.register(
            "connections_timed_out",
            "HTTP connections closed for waiting too long with no request in flight, by wait",
            timed_out.clone(),
        );
        registry.register("accept_errors", "Failed accepts of HTTP connections", accept_errors.clone());
        Metrics {
            registry,
            calls,
            decisions,
            latency,
            queued,
            sessions,
            tools,
            reload_failures,
            connections,
            refused,
            timed_out,
            accept_errors,
            known: RwLock::default(),
        }
    }

    /// The tools of `runtime` are the ones now offered (at start and after each reload).
    pub fn loaded(&self, runtime: &Runtime) {
        let names: HashSet<String> = runtime.tools().map(|t| t.info.name.clone()).collect();
        self.tools.set(i64::try_from(names.len()).unwrap_or(i64::MAX));
        *self.known.write().unwrap_or_else(|e| e.into_inner()) = names;
    }

    /// Count what an event says.
    pub fn observe(&self, event: &Event) {
        match event {
            Event::Decided { decision, .. } => {
                self.decisions.get_or_create(&DecisionLabels { decision: decision.clone() }).inc();
            }
            Event::Finish { tool, outcome, duration_ms, .. } => {
                let tool = self.label(tool);
                let outcome = outcome.as_str().to_string();
                self.calls.get_or_create(&CallLabels { tool: tool.clone(), outcome }).inc();
                self.latency.get_or_create(&ToolLabels { tool }).observe(duration_ms.as_secs_f64());
            }
            _ => {}
        }
    }

    /// A connection was closed at once: `limit` (`total` or `peer`) was reached.
    pub fn refused(&self, limit: &'static str) {
        self.refused.get_or_create(&LimitLabels { limit }).inc();
    }

    /// A connection was closed after waiting too long for a request: `wait` is `head` or `idle`.
    pub fn timed_out(&self, wait: &'static str) {
        self.timed_out.get_or_create(&WaitLabels { wait }).inc();
    }

    fn label(&self, tool: &str) -> String {
        let known = self.known.read().unwrap_or_else(|e| e.into_inner());
        if known.contains(tool) { tool.to_string() } else { OTHER_TOOL.to_string() }
    }

    /// The exposition: every metric in Prometheus text format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    fn finish(tool: &str, outcome: toolhost::OutcomeKind, ms: u64) -> Event {
        Event::Finish {
            id: "t1".into(),
            tool: tool.into(),
            outcome,
            duration_ms: Duration::from_millis(ms),
            session: "s".into(),
            digest: None,
            input: Arc::new(serde_json::json!({})),
            bytes_out: 0,
            hosts: Vec::new(),
            tier: None,
            trace: Arc::default(),
        }
    }

    #[test]
    fn calls_are_counted_by_tool_and_outcome_and_unknown_names_share_one_label() {
        let m = Metrics::new();
        *m.known.write().unwrap() = ["Read".to_string()].into_iter().collect();
        m.observe(&finish("Read", toolhost::OutcomeKind::Success, 2));
        m.observe(&finish("Read", toolhost::OutcomeKind::Success, 3));
        m.observe(&finish("Read", toolhost::OutcomeKind::Timeout, 3000));
        for i in 0..100 {
            m.observe(&finish(&format!("made-up-{i}"), toolhost::OutcomeKind::UnknownTool, 0));
        }
        let text = m.render();
        assert!(text.contains("toolhost_calls_total{tool=\"Read\",outcome=\"success\"} 2\n"), "{text}");
        assert!(text.contains("toolhost_calls_total{tool=\"Read\",outcome=\"timeout\"} 1\n"), "{text}");
        assert!(text.contains("toolhost_calls_total{tool=\"_other\",outcome=\"unknown_tool\"} 100\n"), "{text}");
        assert!(!text.contains("made-up"), "{text}");
        assert!(text.contains("toolhost_call_duration_seconds_count{tool=\"Read\"} 3\n"), "{text}");
        assert!(text.contains("# TYPE toolhost_call_duration_seconds histogram"), "{text}");
    }
}
