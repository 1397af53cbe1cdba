//! Per-tool resource limits. Every limit has a finite default: nothing is unlimited unless the
//! operator says so.
//!
//! Every limit is declared once, in the table of `limits_table!`: its key, type, default,
//! doc, and whether a tool may set its own (`tool`) or only `[limits]` counts (`global`). The
//! [`Limits`] struct and its defaults, the `[limits]` and `[tools.NAME]` keys of the config
//! (see `config/limits.rs`), the positive-value check, the merge, and [`Limits::KEYS`] are all
//! generated from it, so that a new limit cannot be parsed in one place and forgotten in another.

use serde::Serialize;

/// Calls `$callback! { {$args} table }`, where the table is every limit, in the order of the
/// `[limits]` keys (which serde's "expected one of" messages list), one entry each:
///
/// ```text
/// /// doc (becomes the doc of the `Limits` field)
/// global|tool name: Type = default;
/// ```
///
/// `global` limits are read from `[limits]` only; `tool` limits from `[tools.NAME]` too. The
/// type is one that [`LimitValue`] converts from a checked config value. This is a callback
/// (rather than a macro that takes a table) so that the table is written in one place, and
/// each generator, in the module that owns what it generates, reads it from there.
macro_rules! limits_table {
    ($callback:ident) => {
        $crate::limits::limits_table!($callback {});
    };
    ($callback:ident $args:tt) => {
        $callback! {
            $args

            /// Calls that may run at once in one concurrency-safe batch. Default 10.
            global max_concurrency: usize = 10;
            /// Wall-clock time for one export call (epoch deadline plus a host timer). Default 30 s.
            tool timeout_ms: u64 = 30_000;
            /// Linear memory, summed over every memory of the instance. Default 256 MiB.
            tool memory_mib: u64 = 256;
            /// Optional instruction budget (wasmtime fuel). Default none.
            tool fuel: Option<u64> = None;
            /// Text of one tool_result beyond which the text is cut and the whole saved. Default 50,000.
            tool max_result_chars: usize = 50_000;
            /// Bytes kept of a tool's stdout and of its stderr, each. Default 64 KiB.
            tool max_stdio_bytes: usize = 64 * 1024;
            /// Size of the input JSON. Default 1 MiB.
            tool max_input_bytes: usize = 1024 * 1024;
            /// Bytes a tool may return in one result (all blocks). Default 16 MiB: beyond it the call is
            /// an `output_limit` error rather than a host that swallows whatever a tool emits.
            tool max_output_bytes: usize = 16 * 1024 * 1024;
            /// Bytes of HTTP response bodies one call may receive, over all its requests. Default
            /// 10 MiB: past it, the body read fails with `HTTP-response-body-size`.
            tool max_response_bytes: u64 = 10 * 1024 * 1024;
            /// Longest wait to connect (name lookup, TCP and TLS handshakes) for one HTTP request.
            /// Default 10 s. A guest may ask for less, never for more.
            tool connect_timeout_ms: u64 = 10_000;
            /// Longest wait for an HTTP response to start, and then for each later chunk of its body.
            /// Default 15 s. A guest may ask for less, never for more.
            tool first_byte_timeout_ms: u64 = 15_000;
            /// HTTP connections one call may have open at once, and raw TCP connects it may make in
            /// all (the sandbox cannot see a socket close). Default 8.
            tool max_connections: usize = 8;
            /// Wall-clock time for each export run while loading a tool (`schema`). Default 5 s: a
            /// tool that loops at load costs every start this much at most, once (the outcome is
            /// cached by the component's digest).
            tool load_timeout_ms: u64 = 5_000;
            /// Bytes (keys plus values) the context map of one session may hold, over all tools.
            /// Default 16 MiB; only the `[limits]` value counts. A call whose updates would pass it
            /// gets an error result and its updates are not applied.
            global max_context_bytes: usize = 16 * 1024 * 1024;
        }
    };
}
pub(crate) use limits_table;

/// Generates [`Limits`], its [`Default`] and [`Limits::KEYS`] from the table.
macro_rules! limits_struct {
    ({} $( $(#[doc = $doc:literal])+ $scope:ident $name:ident: $ty:ty = $default:expr; )+) => {
        /// The limits one call runs under.
        #[derive(Debug, Clone, PartialEq, Eq, Serialize)]
        pub struct Limits {
            $( $(#[doc = $doc])+ pub $name: $ty, )+
        }

        impl Default for Limits {
            fn default() -> Self {
                Limits { $( $name: $default, )+ }
            }
        }

        impl Limits {
            /// Every limit's config key, in the order `[limits]` lists them, with its doc and
            /// whether `[tools.NAME]` may set it: what `config check` and docs can show without
            /// a list of their own.
            pub const KEYS: &'static [LimitKey] = &[
                $( LimitKey {
                    name: stringify!($name),
                    per_tool: limit_scope!($scope),
                    doc_lines: &[$($doc),+],
                }, )+
            ];
        }
    };
}

/// Whether a scope of the table lets `[tools.NAME]` set the limit.
macro_rules! limit_scope {
    (global) => {
        false
    };
    (tool) => {
        true
    };
}

limits_table!(limits_struct);

/// One limit's config key (see [`Limits::KEYS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitKey {
    /// The key, the same in `[limits]` and `[tools.NAME]` (and the [`Limits`] field's name).
    pub name: &'static str,
    /// Whether `[tools.NAME]` may set it too; if not, only the `[limits]` value counts.
    pub per_tool: bool,
    /// The [`Limits`] field's doc, a line each.
    doc_lines: &'static [&'static str],
}

impl LimitKey {
    /// What the limit bounds and its default (the [`Limits`] field's doc, on one line).
    pub fn doc(&self) -> String {
        self.doc_lines.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ")
    }
}

/// A limit's type, as a config value becomes one. Values are checked to be at least 1 when the
/// config is read, so every one fits; a `usize` on a 32-bit host is cut as before.
pub(crate) trait LimitValue {
    /// The limit set to `value`.
    fn from_config(value: u64) -> Self;
}

impl LimitValue for u64 {
    fn from_config(value: u64) -> Self {
        value
    }
}

impl LimitValue for usize {
    fn from_config(value: u64) -> Self {
        value as usize
    }
}

/// An optional limit (fuel): setting it turns it on.
impl LimitValue for Option<u64> {
    fn from_config(value: u64) -> Self {
        Some(value)
    }
}
