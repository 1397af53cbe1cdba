//! Per-tool resource limits. Every limit has a finite default: nothing is unlimited unless the
//! operator says so.

use serde::Serialize;

/// The limits one call runs under.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// Wall-clock time for one export call (epoch deadline plus a host timer). Default 30 s.
    pub timeout_ms: u64,
    /// Linear memory, summed over every memory of the instance. Default 256 MiB.
    pub memory_mib: u64,
    /// Optional instruction budget (wasmtime fuel). Default none.
    pub fuel: Option<u64>,
    /// Text of one tool_result beyond which the text is cut and the whole saved. Default 50,000.
    pub max_result_chars: usize,
    /// Bytes kept of a tool's stdout and of its stderr, each. Default 64 KiB.
    pub max_stdio_bytes: usize,
    /// Size of the input JSON. Default 1 MiB.
    pub max_input_bytes: usize,
    /// Bytes a tool may return in one result (all blocks). Default 16 MiB: beyond it the call is
    /// an `output_limit` error rather than a host that swallows whatever a tool emits.
    pub max_output_bytes: usize,
    /// Calls that may run at once in one concurrency-safe batch. Default 10.
    pub max_concurrency: usize,
    /// Bytes of HTTP response bodies one call may receive, over all its requests. Default
    /// 10 MiB: past it, the body read fails with `HTTP-response-body-size`.
    pub max_response_bytes: u64,
    /// Longest wait to connect (name lookup, TCP and TLS handshakes) for one HTTP request.
    /// Default 10 s. A guest may ask for less, never for more.
    pub connect_timeout_ms: u64,
    /// Longest wait for an HTTP response to start, and then for each later chunk of its body.
    /// Default 15 s. A guest may ask for less, never for more.
    pub first_byte_timeout_ms: u64,
    /// HTTP connections one call may have open at once, and raw TCP connects it may make in
    /// all (the sandbox cannot see a socket close). Default 8.
    pub max_connections: usize,
    /// Wall-clock time for each export run while loading a tool (`schema`). Default 5 s: a
    /// tool that loops at load costs every start this much at most, once (the outcome is
    /// cached by the component's digest).
    pub load_timeout_ms: u64,
    /// Bytes (keys plus values) the context map of one session may hold, over all tools.
    /// Default 16 MiB; only the `[limits]` value counts. A call whose updates would pass it
    /// gets an error result and its updates are not applied.
    pub max_context_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout_ms: 30_000,
            memory_mib: 256,
            fuel: None,
            max_result_chars: 50_000,
            max_stdio_bytes: 64 * 1024,
            max_input_bytes: 1024 * 1024,
            max_output_bytes: 16 * 1024 * 1024,
            max_concurrency: 10,
            max_response_bytes: 10 * 1024 * 1024,
            connect_timeout_ms: 10_000,
            first_byte_timeout_ms: 15_000,
            max_connections: 8,
            load_timeout_ms: 5_000,
            max_context_bytes: 16 * 1024 * 1024,
        }
    }
}
