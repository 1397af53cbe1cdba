//! Property tests of every parser and matcher in the policy crate that sees untrusted input: the
//! config document and its checker, policy files beside a component, permission rules, path patterns, hook matchers, network
//! patterns and the path policy. Each property says what must hold for *every* input, and
//! proptest looks for a counterexample (and shrinks it, so that a failure names the smallest
//! input that breaks the property). A property that checks only some inputs counts how many it
//! checked and fails when too few were (see [`counted`]); the others check every input.
//!
//! Case counts are bounded (see [`config`]) so that the whole file runs in a few seconds on a
//! 2-core machine; `PROPTEST_CASES=N` raises them for a longer hunt.

use proptest::prelude::*;
use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use toolhost_policy::{
    Config, ConfigError, DecidedBy, Decision, FsAccess, FsRefusal, Grant, HookMatcher, HostPattern, Mode, NetPattern,
    PathPattern, PathPolicy, PortPattern, Request, Rule, Rules, SubjectKind, WEB_PORTS, normalize, parse_policy_file,
};

/// The proptest configuration of every property here: `cases` unless `PROPTEST_CASES` says
/// otherwise, and no file of persisted failures (a failing case is printed, shrunk, and belongs
/// in a regression test of its own).
fn config(cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(cases);
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

/// Run `property` on `cases` inputs of `strategy` (as `config` says); `property` returns
/// whether the input reached the part that checks something. Fails on a counterexample (shrunk)
/// and when fewer than `min_percent` % of the cases reached the check (each minimum is about
/// half the share measured with 256 cases, so chance does not fail it).
///
/// Every property whose check applies to some inputs only (a string that parses, a call that a
/// rule matches, a path that is refused, a text with errors) runs through here: a property
/// whose check is never reached would pass against any build.
fn counted<S: Strategy>(
    name: &str,
    cases: u32,
    min_percent: u32,
    strategy: S,
    property: impl Fn(S::Value) -> Result<bool, TestCaseError>,
) {
    let mut runner = proptest::test_runner::TestRunner::new(config(cases));
    let (reached, total) = (std::cell::Cell::new(0u32), std::cell::Cell::new(0u32));
    let outcome = runner.run(&strategy, |value| {
        total.set(total.get() + 1);
        if property(value)? {
            reached.set(reached.get() + 1);
        }
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{name}: {e}");
    }
    let (reached, total) = (reached.get(), total.get());
    assert!(
        reached * 100 >= total * min_percent,
        "{name}: only {reached} of {total} cases reached the check (at least {min_percent} % must)"
    );
}

const WS: &str = "/w/s";

fn ws() -> &'static Path {
    Path::new(WS)
}

// ---------------------------------------------------------------------------------------------
// The config document and its checker.

/// Pieces of TOML and of things that are almost TOML, glued together at random.
fn toml_fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec![
            "[limits]", "[permissions]", "[tools.A]", "[tools.\"my tool\"]", "[[hooks.pre_tool_use]]",
            "[[hooks.post_tool_use]]", "[tls]", "[tools]", "[[tools.A]]", "[hooks]", "[a.b.c]", "[",
            "]", "[[", "]]", "{", "}", "=", " = ", ",", ".", "\n", "\n", "\n", "\r\n", "#", " ", "\t",
            "\"", "'", "\"\"\"", "'''", "\\", "\\u", "\\uD800", "\\U0010FFFF", "\\x", "fuel", "timeout_ms",
            "max_concurrency", "grant", "fs_read", "net", "mode", "allow", "deny", "ask", "protected",
            "matcher", "command", "path", "sha256", "ca_files", "0", "-1", "1", "99999999999999999999",
            "1e3", "nan", "inf", "true", "false", "1979-05-27T07:32:00Z", "0x10", "0o7", "0b1", "1_000",
            "\"Read(src/**)\"", "\"Bash(\"", "\"*.example.com\"", "\"a b\"", "\"[\"", "\u{feff}", "é",
            "\u{0}", "\u{7f}", "\u{2028}",
        ]).prop_map(str::to_string),
        1 => any::<char>().prop_map(String::from),
        1 => "[a-z_]{1,8}",
    ]
}

/// Almost-TOML text: a few dozen fragments.
fn tomlish() -> impl Strategy<Value = String> {
    prop::collection::vec(toml_fragment(), 0..60).prop_map(|v| v.concat())
}

/// Whether `e` points at a character of `text`, or just past the end of a line.
fn position_inside(text: &str, e: &ConfigError) -> bool {
    inside(text, e.line, e.column)
}

/// Whether 1-based `line` and `column` (in characters) point at a character of `text`, or just
/// past the end of a line.
fn inside(text: &str, line: usize, column: usize) -> bool {
    let lines: Vec<&str> = text.split('\n').collect();
    (1..=lines.len()).contains(&line) && (1..=lines[line - 1].chars().count() + 1).contains(&column)
}

/// Everything that must hold of the errors of any text: each has a position inside it and a
/// one-line message, they come sorted, and [`Config::parse`]'s error is one of them. Returns
/// whether the text had errors to check (a text without any checks nothing but that `parse`
/// agrees).
fn check_errors_are_well_formed(text: &str) -> Result<bool, TestCaseError> {
    let file = Path::new("/nonexistent/dir/toolhost.toml");
    let checked = Config::check(text, file);
    let parsed = Config::parse(text, file);
    let errors = checked.as_ref().err().cloned().unwrap_or_default();
    for e in &errors {
        prop_assert!(position_inside(text, e), "position outside the input: {e:?} in {text:?}");
        prop_assert!(!e.message.is_empty() && !e.message.contains('\n'), "message not on one line: {e:?}");
        prop_assert_eq!(&e.file, file);
    }
    let sorted = errors.windows(2).all(|w| (w[0].line, w[0].column) <= (w[1].line, w[1].column));
    prop_assert!(sorted, "errors not sorted: {errors:?}");
    match parsed {
        // `parse` skips only the file system, so when it finds an error, `check` has it too.
        Err(e) => prop_assert!(errors.contains(&e), "parse's {e:?} is not among check's {errors:?}"),
        Ok(_) => prop_assert!(
            errors.iter().all(|e| e.message.contains(": no such file: ") || e.message.starts_with("tls.ca_files[")),
            "parse accepted what check refuses for more than missing files: {errors:?}"
        ),
    }
    Ok(!errors.is_empty())
}

/// Any text, however broken: no panic, and every error points inside it.
#[test]
fn config_errors_point_inside_any_text() {
    counted("config_errors_point_inside_any_text", 256, 49, tomlish(), |text| check_errors_are_well_formed(&text));
}

/// Any Unicode at all (not only TOML-ish pieces).
#[test]
fn config_errors_point_inside_any_string() {
    counted("config_errors_point_inside_any_string", 256, 49, "\\PC{0,200}", |text| {
        check_errors_are_well_formed(&text)
    });
}

/// Any bytes, read from a file: an error that is not UTF-8 points at the first bad byte. The
/// bytes come between two pieces of TOML-ish text, so that the bad byte is often past the
/// first line and the line and column are counted for real.
#[test]
fn config_files_of_any_bytes() {
    let strategy =
        (tomlish(), prop::collection::vec(any::<u8>(), 0..300), tomlish()).prop_map(|(head, bytes, tail)| {
            let mut all = head.into_bytes();
            all.extend_from_slice(&bytes);
            all.extend_from_slice(tail.as_bytes());
            all
        });
    counted("config_files_of_any_bytes", 256, 49, strategy, |bytes| {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("toolhost.toml");
        std::fs::write(&file, &bytes).unwrap();
        let checked = Config::check_file(&file);
        let loaded = Config::load(&file);
        match std::str::from_utf8(&bytes) {
            Ok(text) => {
                check_errors_are_well_formed(text)?;
                prop_assert_eq!(checked.is_ok(), Config::check(text, &file).is_ok());
                Ok(false)
            }
            Err(utf8) => {
                let errors = checked.expect_err("not UTF-8");
                prop_assert_eq!(errors.len(), 1);
                let e = &errors[0];
                prop_assert_eq!(Some(e), loaded.as_ref().err());
                prop_assert!(e.message.contains("UTF-8"), "{e}");
                // Line and column of the first byte that is not UTF-8, counted in the valid text
                // before it.
                let before = std::str::from_utf8(&bytes[..utf8.valid_up_to()]).unwrap();
                let line = before.matches('\n').count() + 1;
                let column = before.rsplit('\n').next().unwrap().chars().count() + 1;
                prop_assert_eq!((e.line, e.column), (line, column), "{}", e);
                Ok(true)
            }
        }
    });
}

/// A TOML value, and whether (and how) the checker must refuse it where an integer >= 1 is
/// wanted.
#[derive(Debug, Clone)]
enum Value {
    Int(i64),
    Str(String),
    Bool(bool),
    Strs(Vec<String>),
}

impl Value {
    fn render(&self) -> String {
        match self {
            Value::Int(i) => i.to_string(),
            Value::Str(s) => toml_string(s),
            Value::Bool(b) => b.to_string(),
            Value::Strs(v) => format!("[{}]", v.iter().map(|s| toml_string(s)).collect::<Vec<_>>().join(", ")),
        }
    }
}

/// A TOML basic string holding exactly `s`.
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A key as TOML writes it: bare when it can be.
fn toml_key(k: &str) -> String {
    if !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
        k.to_string()
    } else {
        toml_string(k)
    }
}

/// A key in an error's key path: quoted (Rust debug style) unless bare.
fn path_key(k: &str) -> String {
    if !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
        k.to_string()
    } else {
        format!("{k:?}")
    }
}

/// One `key = value` line and the errors it must cause: each a message prefix (starting with
/// the key path), all on that line.
#[derive(Debug, Clone)]
struct Line {
    text: String,
    errors: Vec<String>,
}

/// A section: its header (none for the top level) and its lines.
#[derive(Debug, Clone)]
struct Section {
    header: Option<String>,
    /// Errors at the header itself.
    header_errors: Vec<String>,
    lines: Vec<Line>,
}

const LIMIT_KEYS: &[&str] = &[
    "max_concurrency",
    "timeout_ms",
    "memory_mib",
    "fuel",
    "max_result_chars",
    "max_stdio_bytes",
    "max_input_bytes",
    "max_output_bytes",
    "max_response_bytes",
    "connect_timeout_ms",
    "first_byte_timeout_ms",
    "max_connections",
];

/// A value for a key that wants an integer >= 1, of any type.
fn limit_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => (-3i64..=3).prop_map(Value::Int),
        2 => prop_oneof![Just(i64::MIN), Just(i64::MAX), Just(-1_000_000), any::<i64>()].prop_map(Value::Int),
        1 => "[a-z0-9 ]{0,6}".prop_map(Value::Str),
        1 => any::<bool>().prop_map(Value::Bool),
        1 => prop::collection::vec("[0-9]{1,2}", 0..3).prop_map(Value::Strs),
    ]
}

/// The error prefix `value` must cause at `path` (a key wanting an integer >= 1).
fn limit_errors(path: &str, value: &Value) -> Vec<String> {
    match value {
        Value::Int(i) if *i >= 1 => vec![],
        Value::Int(i) => vec![format!("{path}: must be at least 1, got {i}")],
        _ => vec![format!("{path}: invalid type: ")],
    }
}

/// A key that no section knows.
fn unknown_key() -> impl Strategy<Value = String> {
    "x_[a-z]{1,6}"
}

/// A top-level table that is not known (never the same name as an unknown key).
fn unknown_table() -> impl Strategy<Value = String> {
    "y_[a-z]{1,6}"
}

/// Text that may or may not be a good rule, pattern or matcher: the strategy mixes well-formed
/// ones with noise made of the characters that matter to their parsers.
fn rule_text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => (tool_name(), prop::option::of(pattern_text())).prop_map(|(t, p)| match p {
            None => t,
            Some(p) => format!("{t}({p})"),
        }),
        2 => "[A-Za-z(){}\\[\\]*/:. \\\\-]{0,14}",
        1 => "\\PC{0,10}",
    ]
}

fn tool_name() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec!["Read", "Edit", "Write", "Bash", "Grep", "WebFetch", "Hostile"])
            .prop_map(str::to_string),
        1 => "[A-Za-z0-9_-]{1,8}",
    ]
}

/// Path-glob-ish text, well-formed or not.
fn pattern_text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::collection::vec(
            prop::sample::select(vec![
                "src", "a", "b", ".git", "hooks", "*", "**", "?", "*.rs", "[ab]", "{x,y}", "..", ".", "",
                "secrets", "é", "[", "]", "{", "}", "\\", "domain:x.com", "npm run:*",
            ]),
            1..5,
        )
        .prop_map(|parts| parts.join("/")),
        1 => prop::sample::select(vec!["//etc/**", "//", "/build", "./src", "*", " * ", "domain:[x", "ls [:*"])
            .prop_map(str::to_string),
        1 => "\\PC{0,8}",
    ]
}

fn limits_section() -> impl Strategy<Value = Section> {
    let known = prop::sample::subsequence(LIMIT_KEYS.to_vec(), 0..=LIMIT_KEYS.len());
    let unknown = prop::collection::btree_set(unknown_key(), 0..2);
    (known, unknown, prop::collection::vec(limit_value(), LIMIT_KEYS.len() + 2)).prop_map(|(known, unknown, values)| {
        let mut lines = Vec::new();
        for (key, value) in known.iter().zip(&values) {
            let path = format!("limits.{key}");
            lines.push(Line { text: format!("{key} = {}", value.render()), errors: limit_errors(&path, value) });
        }
        for key in unknown {
            lines.push(Line { text: format!("{key} = 1"), errors: vec![format!("limits.{key}: unknown field")] });
        }
        Section { header: Some("[limits]".into()), header_errors: vec![], lines }
    })
}

/// Names of `[tools.NAME]` sections: bare ones, and ones TOML must quote.
fn tools_names() -> impl Strategy<Value = BTreeSet<String>> {
    prop::collection::btree_set(prop_oneof![3 => "[A-Za-z0-9_-]{1,8}", 1 => "[a-z]{1,4} [a-zé.]{1,4}"], 0..3)
}

fn tool_section(name: String) -> impl Strategy<Value = Section> {
    let tool_limit_keys: Vec<&str> = LIMIT_KEYS[1..].to_vec();
    let limits = prop::sample::subsequence(tool_limit_keys.clone(), 0..=3);
    let values = prop::collection::vec(limit_value(), tool_limit_keys.len());
    let sha = prop::option::of(prop_oneof!["[0-9a-f]{64}", "[0-9a-fA-F]{64}", "[0-9a-z]{0,70}"]);
    let net = prop::option::of(prop::collection::vec(
        prop_oneof![
            prop::sample::select(vec!["*", "example.com", "*.example.com:8080", "[::1]:80", "127.0.0.1:*"])
                .prop_map(str::to_string),
            "[a-z0-9.:*\\[\\] -]{0,10}",
        ],
        0..3,
    ));
    let grant_typo = any::<bool>();
    let concurrency = prop::option::of(1i64..4);
    (limits, values, sha, net, grant_typo, concurrency).prop_map(move |(keys, values, sha, net, typo, concurrency)| {
        let table = format!("tools.{}", path_key(&name));
        let mut lines = Vec::new();
        for (key, value) in keys.iter().zip(&values) {
            let path = format!("{table}.{key}");
            lines.push(Line { text: format!("{key} = {}", value.render()), errors: limit_errors(&path, value) });
        }
        if let Some(sha) = sha {
            let good = sha.len() == 64 && sha.bytes().all(|b| b.is_ascii_hexdigit());
            let errors = if good { vec![] } else { vec![format!("{table}.sha256: expected 64 hex digits")] };
            lines.push(Line { text: format!("sha256 = {}", toml_string(&sha)), errors });
        }
        if let Some(net) = net {
            let mut errors: Vec<String> = net
                .iter()
                .enumerate()
                .filter(|(_, p)| p.parse::<NetPattern>().is_err())
                .map(|(i, _)| format!("{table}.grant.net[{i}]: invalid network pattern"))
                .collect();
            let mut fields = vec![format!("net = {}", Value::Strs(net).render())];
            if typo {
                fields.push("fs_reed = []".into());
                errors.push(format!("{table}.grant.fs_reed: unknown field"));
            }
            lines.push(Line { text: format!("grant = {{ {} }}", fields.join(", ")), errors });
        }
        if let Some(c) = concurrency {
            // Only `[limits]` has it.
            lines.push(Line {
                text: format!("max_concurrency = {c}"),
                errors: vec![format!("{table}.max_concurrency: unknown field")],
            });
        }
        Section { header: Some(format!("[tools.{}]", toml_key(&name))), header_errors: vec![], lines }
    })
}

fn permissions_section() -> impl Strategy<Value = Section> {
    let mode = prop::option::of(prop_oneof![
        prop::sample::select(vec!["default", "accept-edits", "acceptEdits", "bypass", "dont-ask", "plan"])
            .prop_map(str::to_string),
        "[a-zA-Z-]{0,8}",
    ]);
    let rules = prop::collection::vec(prop::option::of(prop::collection::vec(rule_text(), 0..4)), 3);
    let protected = prop::option::of(prop::collection::vec(pattern_text(), 0..4));
    (mode, rules, protected).prop_map(|(mode, rules, protected)| {
        let mut lines = Vec::new();
        if let Some(mode) = mode {
            let errors = match mode.parse::<Mode>() {
                Ok(_) => vec![],
                Err(_) => vec!["permissions.mode: unknown permission mode".to_string()],
            };
            lines.push(Line { text: format!("mode = {}", toml_string(&mode)), errors });
        }
        for (key, list) in ["allow", "ask", "deny"].into_iter().zip(rules) {
            let Some(list) = list else { continue };
            let errors = list
                .iter()
                .enumerate()
                .filter(|(_, r)| r.parse::<Rule>().is_err())
                .map(|(i, r)| format!("permissions.{key}[{i}]: invalid permission rule {r:?}: "))
                .collect();
            lines.push(Line { text: format!("{key} = {}", Value::Strs(list).render()), errors });
        }
        if let Some(list) = protected {
            let errors = list
                .iter()
                .enumerate()
                .filter(|(_, p)| PathPattern::new(p).is_err())
                .map(|(i, _)| format!("permissions.protected[{i}]: "))
                .collect();
            lines.push(Line { text: format!("protected = {}", Value::Strs(list).render()), errors });
        }
        Section { header: Some("[permissions]".into()), header_errors: vec![], lines }
    })
}

fn hook_sections() -> impl Strategy<Value = Vec<Section>> {
    let kind = prop::sample::select(vec!["pre_tool_use", "post_tool_use", "post_tool_use_failure"]);
    let matcher = prop::option::of(prop_oneof![
        prop::sample::select(vec!["", "*", "Write|Edit", "Web.*", "mcp__.*", "^(Read|Grep)$"]).prop_map(str::to_string),
        "[A-Za-z|.*()\\[\\]^$+?{}\\\\]{0,8}",
    ]);
    let command = prop_oneof![3 => "[a-z./ ]{1,10}", 1 => "[ \t]{0,3}"];
    let timeout = prop::option::of(-2i64..100);
    let unknown = prop::option::of(unknown_key());
    let hook = (kind, matcher, command, timeout, unknown);
    prop::collection::vec(hook, 0..4).prop_map(|hooks| {
        let mut index = std::collections::HashMap::new();
        hooks
            .into_iter()
            .map(|(kind, matcher, command, timeout, unknown)| {
                let i = *index.entry(kind).and_modify(|i| *i += 1).or_insert(0usize);
                let at = format!("hooks.{kind}[{i}]");
                let mut lines = Vec::new();
                if let Some(m) = matcher {
                    let errors = match m.parse::<HookMatcher>() {
                        Ok(_) => vec![],
                        Err(_) => vec![format!("{at}.matcher: invalid matcher regex")],
                    };
                    lines.push(Line { text: format!("matcher = {}", toml_string(&m)), errors });
                }
                let errors =
                    if command.trim().is_empty() { vec![format!("{at}.command: empty command")] } else { vec![] };
                lines.push(Line { text: format!("command = {}", toml_string(&command)), errors });
                if let Some(t) = timeout {
                    let errors = if t < 1 { vec![format!("{at}.timeout_ms: must be at least 1")] } else { vec![] };
                    lines.push(Line { text: format!("timeout_ms = {t}"), errors });
                }
                if let Some(k) = unknown {
                    lines.push(Line { text: format!("{k} = true"), errors: vec![format!("{at}.{k}: unknown field")] });
                }
                Section { header: Some(format!("[[hooks.{kind}]]")), header_errors: vec![], lines }
            })
            .collect()
    })
}

/// A whole document: valid TOML with the known sections, random keys (known and not) and random
/// values (good and bad), and the errors it must cause, by line.
fn document() -> impl Strategy<Value = (String, Vec<(usize, String)>)> {
    let top = prop::option::of(unknown_key());
    let unknown_section = prop::option::of(unknown_table());
    let tools = tools_names().prop_flat_map(|names| names.into_iter().map(tool_section).collect::<Vec<_>>()).boxed();
    (
        top,
        prop::option::of(limits_section()),
        prop::option::of(permissions_section()),
        tools,
        hook_sections(),
        unknown_section,
    )
        .prop_flat_map(|(top, limits, permissions, tools, hooks, unknown_section)| {
            let mut sections = Vec::new();
            if let Some(k) = top {
                let line = Line { text: format!("{k} = 1"), errors: vec![format!("{k}: unknown field")] };
                sections.push(Section { header: None, header_errors: vec![], lines: vec![line] });
            }
            sections.extend(limits);
            sections.extend(permissions);
            sections.extend(tools);
            sections.extend(hooks);
            if let Some(k) = unknown_section {
                let line = Line { text: "a = 1".into(), errors: vec![] };
                let header_errors = vec![format!("{k}: unknown field")];
                sections.push(Section { header: Some(format!("[{k}]")), header_errors, lines: vec![line] });
            }
            // The lines of each section in any order (TOML does not care, the errors' order
            // follows the file).
            let shuffled: Vec<_> = sections
                .into_iter()
                .map(|s| Just(s.lines.clone()).prop_shuffle().prop_map(move |lines| Section { lines, ..s.clone() }))
                .collect();
            shuffled
        })
        .prop_map(|sections| {
            let mut text = String::new();
            let mut want = Vec::new();
            let mut line = 1;
            for s in sections {
                if let Some(h) = s.header {
                    text.push_str(&h);
                    text.push('\n');
                    want.extend(s.header_errors.into_iter().map(|e| (line, e)));
                    line += 1;
                }
                for l in s.lines {
                    text.push_str(&l.text);
                    text.push('\n');
                    want.extend(l.errors.into_iter().map(|e| (line, e)));
                    line += 1;
                }
                text.push('\n');
                line += 1;
            }
            (text, want)
        })
}

/// A well-formed document with random keys and values: exactly the errors it must cause, each
/// on the line of the key or value at fault, each naming its key path. (A document that must
/// cause none checks only that it causes none: the count is of documents with errors to find.)
#[test]
fn config_errors_are_precise() {
    counted("config_errors_are_precise", 256, 49, document(), |(text, want)| {
        let got = match Config::check(&text, Path::new("/nonexistent/dir/toolhost.toml")) {
            Ok(_) => Vec::new(),
            Err(errors) => errors,
        };
        let shown =
            || got.iter().map(|e| format!("{}:{}: {}", e.line, e.column, e.message)).collect::<Vec<_>>().join("\n");
        prop_assert_eq!(got.len(), want.len(), "want {:#?}\ngot:\n{}\nin:\n{}", want, shown(), text);
        // Errors come sorted by position; on one line, in the order their keys or elements
        // appear, which is the order `want` lists them in but for the grant's `net` errors
        // (at the grant) coming before its unknown key (at the key).
        let mut unmatched: Vec<&ConfigError> = got.iter().collect();
        for (line, prefix) in &want {
            let found = unmatched.iter().position(|e| e.line == *line && e.message.starts_with(prefix.as_str()));
            prop_assert!(found.is_some(), "no error {}: {}…\ngot:\n{}\nin:\n{}", line, prefix, shown(), text);
            unmatched.remove(found.unwrap());
        }
        // And `parse` stops at the first of them.
        match Config::parse(&text, Path::new("/nonexistent/dir/toolhost.toml")) {
            Ok(_) => prop_assert!(got.is_empty()),
            Err(e) => prop_assert_eq!(&e, &got[0]),
        }
        Ok(!want.is_empty())
    });
}

// ---------------------------------------------------------------------------------------------
// Permission rules.

/// A subject of each kind: paths with `.` and `..`, URLs, plain text.
fn subject() -> impl Strategy<Value = (String, SubjectKind)> {
    let component = prop::sample::select(vec![
        "src", "a", "b", ".git", "hooks", "..", ".", "secrets", "x.rs", "[ab]", "*", "{x,y}", "é", "w", "s", "", " a",
        "b ", "a\\b", "domain:x", "x:*", "(p)",
    ]);
    let path = (any::<bool>(), prop::collection::vec(component, 0..6))
        .prop_map(|(abs, parts)| format!("{}{}", if abs { "/" } else { "" }, parts.join("/")));
    let url = ("(https?|HTTP|ftp)://", "([a-z]+@)?", "[a-z0-9.\\[\\]:-]{0,16}", "(:[0-9]{1,5})?", "[/?#]?\\PC{0,6}")
        .prop_map(|(s, u, h, p, rest)| format!("{s}{u}{h}{p}{rest}"));
    prop_oneof![
        3 => path.prop_map(|p| (p, SubjectKind::Path)),
        1 => url.prop_map(|u| (u, SubjectKind::Url)),
        1 => "\\PC{0,12}".prop_map(|t| (t, SubjectKind::Text)),
    ]
}

fn mode() -> impl Strategy<Value = Mode> {
    prop::sample::select(vec![Mode::Default, Mode::AcceptEdits, Mode::Bypass, Mode::DontAsk, Mode::Plan])
}

fn hook_answer() -> impl Strategy<Value = Option<Decision>> {
    prop::option::of(prop::sample::select(vec![Decision::Allow, Decision::Ask, Decision::Deny]))
}

/// A rule that parses: mostly made so, sometimes found among random text.
fn good_rule() -> impl Strategy<Value = Rule> {
    let pattern = prop::sample::select(vec![
        "*",
        "src/**",
        "*.rs",
        ".git/",
        "secrets",
        "//etc/**",
        "a/[ab]/*",
        "domain:x.com",
        "*.com",
        "npm run:*",
        "é",
        "../a",
        "/build",
    ]);
    prop_oneof![
        4 => (tool_name(), prop::option::of(pattern)).prop_map(|(t, p)| match p {
            None => t.parse::<Rule>().unwrap(),
            Some(p) => format!("{t}({p})").parse().unwrap(),
        }),
        1 => rule_text().prop_filter_map("not a rule", |t| t.parse::<Rule>().ok()),
    ]
}

proptest! {
    #![proptest_config(config(256))]

    /// Matching never panics, whatever the subject (bad URLs, odd paths, any text).
    #[test]
    fn matching_any_subject_is_total(rule in good_rule(), subject in subject(), text in any::<String>()) {
        let _ = rule.matches(&rule.tool, Some((&subject.0, subject.1)), ws());
        for kind in [SubjectKind::Path, SubjectKind::Url, SubjectKind::Text] {
            let _ = rule.matches(&rule.tool, Some((&text, kind)), ws());
        }
        let _ = SubjectKind::infer(&text, &subject.0);
    }

    /// A path subject is judged as the path it names: a rule matches `p` exactly when it
    /// matches `p` normalised against the workspace.
    #[test]
    fn path_rules_see_through_dot_and_dot_dot(rule in good_rule(), (path, _) in subject()) {
        let absolute = normalize(&ws().join(&path));
        let a = rule.matches(&rule.tool, Some((&path, SubjectKind::Path)), ws());
        let b = rule.matches(&rule.tool, Some((absolute.to_str().unwrap(), SubjectKind::Path)), ws());
        prop_assert_eq!(a, b, "{} vs {} / {}", rule, path, absolute.display());
    }

    /// The rule a refusal suggests parses, and as an allow rule it allows that call.
    #[test]
    fn a_suggested_rule_allows_the_call(tool in tool_name(), (value, kind) in subject(), read_only in any::<bool>()) {
        // (Text subjects get the whole-tool rule.)
        let req = Request { tool: &tool, subject: Some((&value, kind)), read_only, grant_inside_workspace: false };
        let suggested = req.suggested_rule(ws());
        let rule: Rule = suggested.parse().map_err(|e| TestCaseError::fail(format!("{suggested:?} does not parse: {e}")))?;
        let rules = Rules { allow: vec![rule], ..Rules::default() };
        let (d, why) = rules.decide(Mode::Default, &req, ws());
        // A URL that does not parse is refused before any rule (none can judge it).
        let want = match kind {
            SubjectKind::Url if toolhost_policy::UrlSubject::parse(&value).is_err() => Decision::Deny,
            _ => Decision::Allow,
        };
        prop_assert_eq!(d, want, "{} for {:?}: {}", suggested, value, why);
    }
}

/// Any string: a rule or an error naming it; never a panic. The count is of strings that are
/// rules, whose printing is checked.
#[test]
fn any_string_parses_to_a_rule_or_an_error() {
    let strategy = prop_oneof![rule_text(), "\\PC{0,30}", any::<String>()];
    counted("any_string_parses_to_a_rule_or_an_error", 256, 7, strategy, |text| match text.parse::<Rule>() {
        Ok(rule) => {
            prop_assert!(!rule.tool.is_empty() && rule.tool.len() <= 64);
            // What it prints parses back to the same rule, and prints the same.
            let shown = rule.to_string();
            let again: Rule = shown.parse().map_err(|e| TestCaseError::fail(format!("{shown:?}: {e}")))?;
            prop_assert_eq!(&again, &rule);
            prop_assert_eq!(again.to_string(), shown);
            Ok(true)
        }
        Err(e) => {
            prop_assert_eq!(&e.rule, &text);
            prop_assert!(!e.reason.is_empty());
            Ok(false)
        }
    });
}

/// The same rule text in deny and allow: deny wins, whatever the mode, the request or the hook's
/// answer; the allow copy changes nothing at all. The count is of calls the rule matches.
#[test]
fn deny_wins_over_allow_for_the_same_rule() {
    let strategy = (
        good_rule(),
        tool_name(),
        prop::option::of(subject()),
        any::<bool>(),
        any::<bool>(),
        mode(),
        hook_answer(),
        any::<bool>(),
    );
    counted(
        "deny_wins_over_allow_for_the_same_rule",
        256,
        14,
        strategy,
        |(rule, other_tool, subject, read_only, inside, mode, hook, same_tool)| {
            let tool = if same_tool { rule.tool.clone() } else { other_tool };
            let req = Request {
                tool: &tool,
                subject: subject.as_ref().map(|(v, k)| (v.as_str(), *k)),
                read_only,
                grant_inside_workspace: inside,
            };
            let both = Rules { allow: vec![rule.clone()], deny: vec![rule.clone()], ..Rules::default() };
            let deny = Rules { deny: vec![rule.clone()], ..Rules::default() };
            let (d_both, why_both) = both.decide_with_hook(mode, &req, ws(), hook);
            let (d_deny, why_deny) = deny.decide_with_hook(mode, &req, ws(), hook);
            prop_assert_eq!((d_both, &why_both), (d_deny, &why_deny));
            // Neither an ask rule nor any number of allow rules gets past it.
            let all = Rules {
                allow: vec![rule.clone()],
                ask: vec![rule.clone()],
                deny: vec![rule.clone()],
                ..Rules::default()
            };
            prop_assert_eq!(all.decide_with_hook(mode, &req, ws(), hook).0 == Decision::Deny, d_deny == Decision::Deny);
            if !rule.matches(&tool, req.subject, ws()) {
                return Ok(false);
            }
            prop_assert_eq!(d_both, Decision::Deny, "{} matches but {}", rule, why_both);
            Ok(true)
        },
    );
}

/// A call refused by a deny rule stays refused whatever allow and ask rules are added and
/// whatever a hook answers.
#[test]
fn nothing_overrides_a_deny_rule() {
    let strategy = (
        prop::collection::vec(good_rule(), 1..4),
        prop::collection::vec(good_rule(), 0..4),
        (tool_name(), prop::option::of(subject())),
        any::<bool>(),
        any::<bool>(),
        mode(),
        hook_answer(),
    )
        // Half the calls are of the first deny rule's tool, so that the rule often applies.
        .prop_map(|(deny, extra, (tool, subject), ruled, read_only, mode, hook)| {
            let tool = if ruled { deny[0].tool.clone() } else { tool };
            (deny, extra, (tool, subject), read_only, mode, hook)
        });
    counted(
        "nothing_overrides_a_deny_rule",
        256,
        12,
        strategy,
        |(deny, extra, (tool, subject), read_only, mode, hook)| {
            let req = Request {
                tool: &tool,
                subject: subject.as_ref().map(|(v, k)| (v.as_str(), *k)),
                read_only,
                grant_inside_workspace: true,
            };
            let base = Rules { deny: deny.clone(), ..Rules::default() };
            let verdict = base.verdict(mode, &req, ws(), None);
            if verdict.decision != Decision::Deny || verdict.by != DecidedBy::Rule {
                return Ok(false);
            }
            let more = Rules { allow: extra.clone(), ask: extra, deny, ..Rules::default() };
            let (d2, why2) = more.decide_with_hook(mode, &req, ws(), hook);
            prop_assert_eq!(d2, Decision::Deny, "{} became {}", verdict.reason, why2);
            Ok(true)
        },
    );
}

// ---------------------------------------------------------------------------------------------
// Path patterns.

/// A normalised absolute path, mostly inside the workspace.
fn absolute_path() -> impl Strategy<Value = PathBuf> {
    let component =
        prop::sample::select(vec!["src", "a", "b", ".git", "hooks", "secrets", "x.rs", "[ab]", "*", "é", "w", "s"]);
    (prop::sample::select(vec!["/w/s", "/w/s", "/w", "/", "/etc"]), prop::collection::vec(component, 0..5))
        .prop_map(|(base, parts)| parts.iter().fold(PathBuf::from(base), |p, c| p.join(c)))
}

/// Glob metacharacters escaped with a backslash, so that the pattern means `s` itself.
fn escape_glob(s: &str) -> String {
    s.chars().fold(String::new(), |mut out, c| {
        if "*?[]{}\\".contains(c) {
            out.push('\\');
        }
        out.push(c);
        out
    })
}

proptest! {
    #![proptest_config(config(256))]

    /// A pattern without glob characters, escaped or not, names exactly its path and what is
    /// inside it.
    #[test]
    fn a_literal_pattern_names_its_path(parts in prop::collection::vec("[a-z.é*?\\[\\]{}]{1,4}", 1..4), other in absolute_path()) {
        // `.` and `..` are no names.
        let parts: Vec<String> = parts.into_iter().map(|p| if p.trim_matches('.').is_empty() { format!("{p}x") } else { p }).collect();
        let rel = parts.join("/");
        let text = format!("/{}", escape_glob(&rel));
        let p = PathPattern::new(&text).map_err(|e| TestCaseError::fail(format!("{text:?}: {e}")))?;
        let target = ws().join(&rel);
        prop_assert!(p.matches(&target, ws()), "{text:?} vs {}", target.display());
        prop_assert!(p.matches(&target.join("x"), ws()));
        prop_assert_eq!(p.matches(&other, ws()), other.starts_with(&target), "{:?} vs {}", text, other.display());
    }
}

/// Any string compiles or is refused, never a panic; a compiled pattern prints as written.
#[test]
fn any_string_is_a_path_pattern_or_an_error() {
    let strategy = (prop_oneof![pattern_text(), any::<String>()], absolute_path());
    counted("any_string_is_a_path_pattern_or_an_error", 256, 20, strategy, |(text, path)| {
        let Ok(p) = PathPattern::new(&text) else { return Ok(false) };
        prop_assert_eq!(p.as_str(), text.as_str());
        prop_assert_eq!(PathPattern::new(&p.to_string()).ok(), Some(p.clone()));
        let _ = p.matches(&path, ws());
        Ok(true)
    });
}

/// A relative pattern matches only strictly inside the workspace; no pattern matches its base
/// itself; whatever matches covers what is inside it. The count is of matches and of paths
/// that are the pattern's base.
#[test]
fn path_patterns_stay_in_their_base() {
    // A third of the paths are the pattern's own text with its glob characters made plain, so
    // that matches are common, and a third are a base (the workspace or `/`), which no pattern
    // may match; some patterns match anything, so that matching the base would show.
    let anything = prop::sample::select(vec!["**", "*", "**/*", "//**", "//*"]).prop_map(str::to_string);
    let text = prop_oneof![4 => pattern_text(), 1 => anything];
    let strategy =
        (text, absolute_path(), 0u8..3, any::<bool>(), "[a-z]{1,3}").prop_map(|(text, other, which, root, child)| {
            let plain: String = text.chars().map(|c| if "*?[]{}".contains(c) { 'a' } else { c }).collect();
            let path = match which {
                0 => normalize(&ws().join(plain.trim_start_matches("./"))),
                1 => other,
                _ if root => PathBuf::from("/"),
                _ => ws().to_path_buf(),
            };
            (text, path, child)
        });
    counted("path_patterns_stay_in_their_base", 256, 18, strategy, |(text, path, child)| {
        let Ok(p) = PathPattern::new(&text) else { return Ok(false) };
        let hit = p.matches(&path, ws());
        let base = if p.is_absolute() { Path::new("/") } else { ws() };
        prop_assert!(!hit || path != base, "{text} matched its base {}", path.display());
        if !p.is_absolute() {
            prop_assert!(!hit || path.starts_with(ws()), "{text} matched {}", path.display());
        }
        if hit {
            prop_assert!(p.matches(&path.join(&child), ws()), "{text} matches {} but not inside it", path.display());
        }
        Ok(hit || path == base)
    });
}

// ---------------------------------------------------------------------------------------------
// Hook matchers.

/// Any string: a matcher or an error naming it; never a panic, whatever it is matched against.
/// The count is of strings refused, whose error is checked.
#[test]
fn any_string_is_a_matcher_or_an_error() {
    let text = prop_oneof!["[A-Za-z|.*()\\[\\]^$+?{}\\\\ 0-9]{0,16}", any::<String>()];
    counted("any_string_is_a_matcher_or_an_error", 256, 25, (text, "\\PC{0,10}"), |(text, tool)| {
        match text.parse::<HookMatcher>() {
            Ok(m) => {
                let _ = m.matches(&tool);
                Ok(false)
            }
            Err(e) => {
                prop_assert!(e.to_string().contains(&format!("{:?}", text.trim())), "{e}");
                Ok(true)
            }
        }
    });
}

proptest! {
    #![proptest_config(config(256))]

    /// A list of names matches exactly those names.
    #[test]
    fn a_list_of_names_matches_exactly_them(names in prop::collection::vec("[A-Za-z0-9_]{1,6}", 1..4), tool in "[A-Za-z0-9_]{1,7}", pad in "[ \t]{0,2}") {
        let m: HookMatcher = format!("{pad}{}{pad}", names.join("|")).parse().unwrap();
        for n in &names {
            prop_assert!(m.matches(n));
            let longer = format!("{n}x");
            prop_assert_eq!(m.matches(&longer), names.contains(&longer), "a name is not a prefix");
        }
        prop_assert_eq!(m.matches(&tool), names.contains(&tool));
    }
}

// ---------------------------------------------------------------------------------------------
// Network patterns.

/// Host names from a tiny alphabet, so that patterns and hosts overlap often.
fn host_name() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(vec!["a", "b", "c", "x-1", "B", "com"]), 1..4)
        .prop_map(|labels| labels.join("."))
}

/// IP addresses, written every way a guest could write one.
fn ip_text() -> impl Strategy<Value = String> {
    let v4 = prop_oneof![
        prop::sample::select(vec!["127.0.0.1", "10.0.0.1", "0.0.0.0", "1.2.3.4", "255.255.255.255"])
            .prop_map(str::to_string),
        any::<[u8; 4]>().prop_map(|o| IpAddr::from(o).to_string()),
    ];
    let v6 = prop_oneof![
        prop::sample::select(vec!["::1", "::", "::ffff:127.0.0.1", "::ffff:7f00:1", "fe80::1", "2001:DB8::1"])
            .prop_map(str::to_string),
        any::<[u16; 8]>().prop_map(|s| IpAddr::from(s).to_string()),
    ];
    prop_oneof![
        v4.clone(),
        v4.prop_map(|h| format!("{h}.")),
        v6.clone(),
        v6.clone().prop_map(|h| format!("[{h}]")),
        v6.prop_map(|h| h.to_ascii_uppercase()),
    ]
}

fn host() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => host_name(),
        1 => host_name().prop_map(|h| format!("{h}.")),
        2 => ip_text(),
        1 => "\\PC{0,10}",
    ]
}

fn port() -> impl Strategy<Value = u16> {
    prop_oneof![prop::sample::select(vec![0u16, 22, 80, 443, 8080, 65535]), any::<u16>()]
}

/// Pattern text: well-formed over the same alphabet as [`host`], and noise.
fn net_text() -> impl Strategy<Value = String> {
    let port = prop::option::of(prop_oneof![Just("*".to_string()), port().prop_map(|p| p.to_string())]);
    let host = prop_oneof![
        3 => host_name(),
        2 => host_name().prop_map(|h| format!("*.{h}")),
        1 => Just("*".to_string()),
        2 => ip_text(),
    ];
    prop_oneof![
        5 => (host, port).prop_map(|(h, p)| {
            let h = if h.contains(':') && !h.starts_with('[') && p.is_some() { format!("[{h}]") } else { h };
            match p {
                Some(p) => format!("{h}:{p}"),
                None => h,
            }
        }),
        1 => (prop::sample::select(vec!["*", "a.com", "*.a.com", "::1", "1.2.3.4", ""]), prop::option::of(any::<u16>()))
            .prop_map(|(h, p)| format!("[{h}]{}", p.map(|p| format!(":{p}")).unwrap_or_default())),
        1 => "[a-z0-9.:*\\[\\] %-]{0,14}",
        1 => "\\PC{0,12}",
    ]
}

fn net_pattern() -> impl Strategy<Value = NetPattern> {
    net_text().prop_filter_map("not a pattern", |t| t.parse().ok())
}

proptest! {
    #![proptest_config(config(256))]

    /// Host names compare without case and without a trailing dot.
    #[test]
    fn names_compare_without_case_or_trailing_dot(pattern in net_pattern(), h in host_name(), p in port()) {
        let variant = format!("{}.", h.to_ascii_uppercase());
        prop_assert_eq!(pattern.matches(&h, p), pattern.matches(&variant, p));
    }
}

/// Any string: a pattern or an error naming it; what a pattern prints parses back to it. The
/// count is of strings that are patterns, whose printing is checked.
#[test]
fn any_string_is_a_net_pattern_or_an_error() {
    let strategy = (prop_oneof![net_text(), any::<String>()], host(), port());
    counted("any_string_is_a_net_pattern_or_an_error", 256, 16, strategy, |(text, h, p)| {
        match text.parse::<NetPattern>() {
            Ok(pattern) => {
                let shown = pattern.to_string();
                let again = shown.parse::<NetPattern>();
                prop_assert_eq!(again.as_ref(), Ok(&pattern), "{:?} printed as {:?}", text, shown);
                let _ = pattern.matches(&h, p);
                Ok(true)
            }
            Err(e) => {
                prop_assert_eq!(&e.pattern, &text);
                Ok(false)
            }
        }
    });
}

/// A pattern without a port admits the web ports and nothing else.
#[test]
fn a_pattern_without_a_port_admits_only_80_and_443() {
    // Half the hosts are the pattern's own, so that it admits them.
    let strategy = (net_pattern(), host(), any::<bool>(), port()).prop_map(|(pattern, other, own, p)| {
        let h = match (&pattern.host, own) {
            (HostPattern::Name(n), true) => n.clone(),
            (HostPattern::Subdomains(d), true) => format!("a.{d}"),
            (HostPattern::Ip(ip), true) => ip.to_string(),
            _ => other,
        };
        (pattern, h, p)
    });
    counted("a_pattern_without_a_port_admits_only_80_and_443", 256, 8, strategy, |(pattern, h, p)| {
        if pattern.port != PortPattern::Web || !pattern.matches_host(&h) {
            return Ok(false);
        }
        prop_assert!(pattern.matches(&h, 80) && pattern.matches(&h, 443));
        prop_assert_eq!(pattern.matches(&h, p), WEB_PORTS.contains(&p), "{} and port {}", pattern, p);
        Ok(true)
    });
}

/// An IP address, however written, never matches a name pattern, nor a name an address
/// pattern.
#[test]
fn addresses_and_names_never_mix() {
    let strategy = (ip_text(), host_name(), 1usize..4, port());
    counted("addresses_and_names_never_mix", 256, 50, strategy, |(ip, name, suffix_len, p)| {
        // A name pattern made from the address's own text, as close as a pattern can get.
        let plain = ip.trim_start_matches('[').trim_end_matches(']').trim_end_matches('.').to_string();
        let tail: Vec<&str> = plain.split('.').collect();
        let suffix = tail[tail.len().saturating_sub(suffix_len)..].join(".");
        for text in [format!("*.{suffix}:*"), format!("{name}:*"), format!("*.{name}:*")] {
            if let Ok(pattern) = text.parse::<NetPattern>()
                && matches!(pattern.host, HostPattern::Name(_) | HostPattern::Subdomains(_))
            {
                prop_assert!(!pattern.matches(&ip, p), "{} matched {}", pattern, ip);
            }
        }
        // The address as a pattern (an IPv6 address in brackets, as a pattern with a port
        // must write it).
        let text = if plain.contains(':') { format!("[{plain}]:*") } else { format!("{plain}:*") };
        let pattern = text.parse::<NetPattern>().map_err(|e| TestCaseError::fail(format!("{text:?}: {e}")))?;
        if !matches!(pattern.host, HostPattern::Ip(_)) {
            return Ok(false);
        }
        prop_assert!(!pattern.matches(&name, p), "{} matched {}", pattern, name);
        prop_assert!(pattern.matches(&ip, p), "{} did not match {}", pattern, ip);
        Ok(true)
    });
}

/// `covers` agrees with matching: when a ceiling covers a grant, every host and port the grant
/// admits, the ceiling admits; and every pattern covers itself. Half the grants are made from
/// the ceiling (its host, a port of its own), so that covering is common.
#[test]
fn covers_is_consistent_with_matching() {
    let grant_from = |ceiling: NetPattern, own: bool, other: NetPattern| {
        if !own {
            return other;
        }
        let text = match &ceiling.host {
            HostPattern::Any => format!("x.test:{}", if ceiling.port == PortPattern::Web { "443" } else { "*" }),
            HostPattern::Subdomains(s) => format!("a.{s}"),
            _ => ceiling.to_string(),
        };
        text.parse().unwrap_or(ceiling)
    };
    let strategy = (net_pattern(), any::<bool>(), net_pattern(), prop::collection::vec((host(), port()), 16))
        .prop_map(move |(ceiling, own, other, probes)| (ceiling.clone(), grant_from(ceiling, own, other), probes));
    counted("covers_is_consistent_with_matching", 256, 25, strategy, |(ceiling, grant, probes)| {
        prop_assert!(ceiling.covers(&ceiling), "{} does not cover itself", ceiling);
        if !ceiling.covers(&grant) {
            return Ok(false);
        }
        for (h, p) in &probes {
            if grant.matches(h, *p) {
                prop_assert!(ceiling.matches(h, *p), "{} covers {} but refuses {}:{}", ceiling, grant, h, p);
            }
        }
        // The grant's own hosts, at its own ports.
        let own = match &grant.host {
            HostPattern::Any => None,
            HostPattern::Name(n) => Some(n.clone()),
            HostPattern::Subdomains(s) => Some(format!("x.{s}")),
            HostPattern::Ip(ip) => Some(ip.to_string()),
        };
        if let Some(h) = own {
            for p in [0, 22, 80, 443, 8080, 65535] {
                if grant.matches(&h, p) {
                    prop_assert!(ceiling.matches(&h, p), "{} covers {} but refuses {}:{}", ceiling, grant, h, p);
                }
            }
        }
        Ok(true)
    });
}

/// Found by the `patterns` fuzz target: `[*]` parsed as "any host, web ports" and printed as
/// `*`, which is any port. Brackets hold an IPv6 address only.
#[test]
fn brackets_hold_only_an_ipv6_address() {
    for bad in ["[*]", "[*]:80", "[example.com]", "[1.2.3.4]:80", "[]"] {
        assert!(bad.parse::<NetPattern>().is_err(), "{bad:?} parsed");
    }
    for good in ["[::1]", "[::1]:8080", "[::ffff:1.2.3.4]:*"] {
        let p: NetPattern = good.parse().unwrap();
        assert_eq!(p.to_string().parse::<NetPattern>(), Ok(p), "{good:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// The path policy (the lexical part of the filesystem guard).

fn access() -> impl Strategy<Value = FsAccess> {
    prop::sample::select(vec![FsAccess::Read, FsAccess::Write, FsAccess::Replace])
}

/// A path with `.`, `..`, empty components, relative or absolute.
fn messy_path() -> impl Strategy<Value = String> {
    let component = prop::sample::select(vec![
        "w",
        "s",
        ".git",
        "hooks",
        "pre-commit",
        "secrets",
        "key",
        "toolhost.toml",
        ".toolhost",
        "src",
        "..",
        ".",
        "",
        ".envrc",
        "etc",
        "passwd",
    ]);
    let random = (prop::sample::select(vec!["/", "/w/s/", "", "./"]), prop::collection::vec(component, 0..7))
        .prop_map(|(start, parts)| format!("{start}{}", parts.join("/")));
    // A path [`path_policy`] has something to say about (a deny rule, a protected path, an
    // ask), spelled another way: relative or not, with `.`, `x/..` and `//` between its
    // components. Random components alone rarely spell one, so that refusals would be rare.
    let target = prop::sample::select(vec![
        "/w/s/secrets/key",
        "/w/s/secrets/a/b",
        "/w/s/.git/config",
        "/w/s/.git/hooks/pre-commit",
        "/w/s/sub/.git/hooks",
        "/w/s/.envrc",
        "/w/s/toolhost.toml",
        "/w/s/.toolhost/state",
        "/w/s/src/key",
        "/var/cache/toolhost/x",
        "/etc/passwd",
    ]);
    let noise = prop::collection::vec(prop::sample::select(vec!["", "", "./", "x/../", "/"]), 6);
    let spelled =
        (target, prop::sample::select(vec!["/", "", "./", "../s/"]), noise).prop_map(|(target, root, noise)| {
            // Only a path inside the workspace can be spelled relative to it.
            let (root, rest) = match target.strip_prefix("/w/s/") {
                Some(rest) if root != "/" => (root, rest),
                _ => ("/", &target[1..]),
            };
            let parts: Vec<String> =
                rest.split('/').zip(noise.iter().cycle()).map(|(c, n)| format!("{n}{c}")).collect();
            format!("{root}{}", parts.join("/"))
        });
    prop_oneof![random, spelled]
}

fn path_policy() -> PathPolicy {
    let mut p = PathPolicy::new(ws());
    p.protect("/w/s/toolhost.toml".into(), "the config file", false);
    p.protect(".toolhost".into(), "its state directory", false);
    p.protect("/var/cache/toolhost".into(), "the compile cache", true);
    p.ask_before_writing(toolhost_policy::DEFAULT_ASK_BEFORE_WRITING).unwrap();
    let rules: Vec<Rule> = ["Read(secrets/**)", "Edit(src/key)", "Write(//etc/**)", "Read(//w/s/.git/config)"]
        .iter()
        .map(|r| r.parse().unwrap())
        .collect();
    p.deny_rules(&rules, "Hostile", true);
    p
}

/// A refusal without its path (which is the path as given), for comparing two spellings.
fn kind(r: Result<(), FsRefusal>) -> String {
    match r {
        Ok(()) => "ok".into(),
        Err(FsRefusal::Protected { what, .. }) => format!("protected: {what}"),
        Err(FsRefusal::Denied { rule, .. }) => format!("denied: {rule}"),
        Err(FsRefusal::NeedsAsk { pattern, .. }) => format!("ask: {pattern}"),
        Err(other) => format!("{other:?}"),
    }
}

proptest! {
    #![proptest_config(config(256))]

    /// A path is judged as the path it names, however it is spelled (`.`, `..`, `//`,
    /// relative): the same outcome as its normalised absolute form.
    #[test]
    fn path_policy_judges_the_path_named(path in messy_path(), access in access()) {
        let policy = path_policy();
        let named = normalize(&ws().join(&path));
        let as_given = kind(policy.check(Path::new(&path), access, &[]));
        let normal = kind(policy.check(&named, access, &[]));
        prop_assert_eq!(&as_given, &normal, "{:?} (= {}) {:?}", path, named.display(), access);
        prop_assert_eq!(
            policy.needs_ask(Path::new(&path)),
            policy.needs_ask(&named),
            "{:?} (= {})", path, named.display()
        );
    }
}

/// Reads are refused only by protected-and-hidden paths and deny rules; a refused read is
/// refused for writes too; an approval passes only an ask. The count is of paths whose write
/// is refused.
#[test]
fn path_policy_orders_its_refusals() {
    counted("path_policy_orders_its_refusals", 256, 28, messy_path(), |path| {
        let policy = path_policy();
        let path = Path::new(&path);
        let read = policy.check(path, FsAccess::Read, &[]);
        let write = policy.check(path, FsAccess::Write, &[]);
        let replace = policy.check(path, FsAccess::Replace, &[]);
        if read.is_err() {
            prop_assert!(write.is_err() && replace.is_err(), "{}: read refused, write not", path.display());
        }
        if write.is_err() {
            prop_assert!(replace.is_err(), "{}: write refused, replace not", path.display());
        }
        let named = normalize(&ws().join(path));
        let approved = policy.check(path, FsAccess::Write, &[named]);
        let refused = write.is_err();
        match write {
            Err(FsRefusal::NeedsAsk { .. }) => prop_assert!(approved.is_ok()),
            other => prop_assert_eq!(kind(approved), kind(other)),
        }
        Ok(refused)
    });
}

// ---------------------------------------------------------------------------------------------
// URL subjects: the host a rule judges is the host the fetch reaches.

/// A host spelled as people and attackers spell it: case, a trailing dot, percent-encoded
/// letters, Unicode (IDNA) or punycode, IPv4 in other bases.
fn host_spelling() -> impl Strategy<Value = (String, String)> {
    // (the host as a rule names it, a spelling of it in a URL)
    let name = prop::sample::select(vec!["h.test", "api.example.com", "bücher.example", "xn--bcher-kva.example"]);
    prop_oneof![
        (name, prop::collection::vec(0u8..4, 1..20), any::<bool>()).prop_map(|(h, how, dot)| {
            let mut out = String::new();
            for (i, c) in h.chars().enumerate() {
                match how[i % how.len()] {
                    0 => out.push(c),
                    1 => out.extend(c.to_uppercase()),
                    2 if c.is_ascii_alphanumeric() => out.push_str(&format!("%{:02X}", c as u32)),
                    _ => out.push(c),
                }
            }
            if dot {
                out.push('.');
            }
            (h.to_string(), out)
        }),
        prop::sample::select(vec![
            ("127.0.0.1", "0x7f.1"),
            ("127.0.0.1", "2130706433"),
            ("127.0.0.1", "0177.0.0.1"),
            ("10.1.2.3", "10.0x102.3"),
            ("::1", "[0:0::1]"),
            ("::ffff:1.2.3.4", "[::ffff:102:304]"),
        ])
        .prop_map(|(h, s)| (h.to_string(), s.to_string())),
    ]
}

/// A URL around a host spelling, with what the WHATWG parser forgives or reads its own way:
/// spaces and controls around it, tabs inside, any scheme case, `\` for `/`, user info that
/// holds another host, a port.
fn url_around(host: String) -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec!["", " ", "\t", "\n ", "\u{1}", "\u{3000}", "\u{feff}"]),
        prop::sample::select(vec!["http", "HTTP", "https", "hTtPs", "ht\ttp"]),
        prop::sample::select(vec!["://", ":", ":/", ":\\\\", ":/\\", "://\\"]),
        prop::sample::select(vec!["", "user@", "decoy.test@", "a:b@", "decoy.test:80\\@"]),
        prop::sample::select(vec!["", ":80", ":8080", ":443"]),
        prop::sample::select(vec!["", "/", "/x?y#z", "\\@decoy.test/", "@decoy.test/", "#@decoy.test"]),
        prop::sample::select(vec!["", " ", "\t"]),
    )
        .prop_map(move |(pre, scheme, sep, user, port, path, post)| {
            format!("{pre}{scheme}{sep}{user}{host}{port}{path}{post}")
        })
}

/// What WebFetch reaches for a URL it is given: its own parse (`url::Url::parse` of the
/// trimmed input), the host normalised as network grants compare hosts.
fn fetched_host(value: &str) -> Option<String> {
    let url = url::Url::parse(value.trim()).ok()?;
    let host = match url.host()? {
        url::Host::Domain(d) => d.to_string(),
        url::Host::Ipv4(ip) => ip.to_string(),
        url::Host::Ipv6(ip) => ip.to_string(),
    };
    Some(host.trim_end_matches('.').to_ascii_lowercase())
}

fn ascii_host(h: &str) -> String {
    match url::Host::parse(h) {
        Ok(url::Host::Domain(d)) => d,
        _ => h.to_string(),
    }
}

/// With `deny = ["WebFetch(domain:H)"]`, no spelling of a URL is both allowed and fetched from
/// H: the subject is a URL whatever it looks like, the rule sees the host the fetch reaches
/// (the input is given to the tool as the runtime serialises it, and the tool's own parse of
/// that is checked too), and what does not parse is refused.
#[test]
fn a_denied_host_is_never_fetched_however_the_url_is_spelled() {
    let strategy = host_spelling().prop_flat_map(|(h, s)| (Just(h), url_around(s)));
    counted("a_denied_host_is_never_fetched_however_the_url_is_spelled", 2000, 20, strategy, |(host, url)| {
        let rules = Rules { deny: vec![format!("WebFetch(domain:{host})").parse().unwrap()], ..Rules::default() };
        let kind = SubjectKind::infer("/url", &url);
        prop_assert_eq!(kind, SubjectKind::Url);
        let req =
            Request { tool: "WebFetch", subject: Some((&url, kind)), read_only: true, grant_inside_workspace: false };
        let (decision, why) = rules.decide_with_hook(Mode::Bypass, &req, ws(), None);
        let target = ascii_host(&host);
        let canonical = toolhost_policy::UrlSubject::parse(&url).ok().map(|u| u.canonical);
        let mut reached = false;
        for given in [Some(url.clone()), canonical].into_iter().flatten() {
            if fetched_host(&given).as_deref() == Some(target.as_str()) {
                reached = true;
                prop_assert_eq!(decision, Decision::Deny, "{:?} is fetched from {} but {}", given, target, why);
            }
        }
        Ok(reached)
    });
}

/// The same rule never denies a URL of another host, however it is spelled (the rule does not
/// fail closed by matching everything).
#[test]
fn a_denied_host_does_not_deny_others() {
    counted("a_denied_host_does_not_deny_others", 2000, 20, url_around("other.test".to_string()), |url| {
        let rules = Rules { deny: vec!["WebFetch(domain:h.test)".parse().unwrap()], ..Rules::default() };
        let req = Request {
            tool: "WebFetch",
            subject: Some((&url, SubjectKind::Url)),
            read_only: true,
            grant_inside_workspace: false,
        };
        let (decision, why) = rules.decide_with_hook(Mode::Bypass, &req, ws(), None);
        if toolhost_policy::UrlSubject::parse(&url).is_err() {
            return Ok(false);
        }
        prop_assert_eq!(decision, Decision::Allow, "{:?}: {}", url, why);
        Ok(true)
    });
}

// ---------------------------------------------------------------------------------------------
// Policy files beside a component (Wassette's YAML format).

/// Pieces of a policy file and of things that are almost one, glued together at random.
fn yaml_fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec![
            "version: \"1.0\"\n", "version: 1.0\n", "permissions:\n", "  storage:\n", "  network:\n",
            "  environment:\n", "    allow:\n", "    deny:\n", "      - ", "uri: ", "access: ", "host: ", "key: ",
            "cidr: ", "\"fs://data/**\"", "fs:///srv", "\"file:///etc\"", "[read, write]", "[read]", "[write]",
            "api.example.com", "\"*\"", "HOME", "runtime: {}", "description: x", "\n", "\n", "\r\n", "  ", "    ",
            "\t", "- ", ": ", ":", ",", "[", "]", "{", "}", "&a ", "*a", "<<: ", "!tag ", "!!str ", "---\n",
            "...\n", "#", "\"", "'", "\\", "\\u", "~", "null", "yes", "1.0", "0x1F", "|\n", ">-\n", "? ",
            "\u{feff}", "é", "\u{0}", "\u{7f}", "\u{2028}", "\u{85}",
        ]).prop_map(str::to_string),
        1 => any::<char>().prop_map(String::from),
        1 => "[a-z_]{1,8}",
    ]
}

/// Almost-YAML text: a few dozen fragments.
fn yamlish() -> impl Strategy<Value = String> {
    prop::collection::vec(yaml_fragment(), 0..60).prop_map(|v| v.concat())
}

/// Everything that must hold when a policy file is refused: the error points inside the text,
/// its message is on one line, and it names the file. Returns whether the text was refused.
fn policy_error_is_well_formed(text: &str) -> Result<bool, TestCaseError> {
    let file = Path::new("/opt/tools/t.policy.yaml");
    let Err(e) = parse_policy_file(text, file) else { return Ok(false) };
    // YAML ends a line at a CR, an LF or a CRLF (as editors show them); positions count so.
    let lines = text.replace("\r\n", "\n").replace('\r', "\n");
    prop_assert!(inside(&lines, e.line, e.column), "position outside the input: {e} in {text:?}");
    let shown = e.to_string();
    prop_assert!(!shown.contains(['\n', '\r']), "message not on one line: {shown:?}");
    prop_assert!(shown.starts_with(&format!("{}:{}:{}: ", file.display(), e.line, e.column)), "{shown}");
    Ok(true)
}

/// Any text, however broken: no panic, and the error points inside it.
#[test]
fn policy_file_errors_point_inside_any_text() {
    counted("policy_file_errors_point_inside_any_text", 256, 49, yamlish(), |text| policy_error_is_well_formed(&text));
}

/// Any Unicode at all (not only YAML-ish pieces).
#[test]
fn policy_file_errors_point_inside_any_string() {
    counted("policy_file_errors_point_inside_any_string", 256, 49, "\\PC{0,200}", |text| {
        policy_error_is_well_formed(&text)
    });
}

/// One storage entry of a generated policy file: a directory, whether it is writable, and
/// whether its URI ends in `/**`.
fn storage_entry() -> impl Strategy<Value = (String, bool, bool)> {
    let dir = prop_oneof![Just(".".to_string()), "(/)?(\\.\\.|[a-z0-9_-]{1,6})(/[a-z0-9_.-]{1,6}){0,2}",];
    (dir, any::<bool>(), any::<bool>())
}

/// A network pattern that toolhost accepts (see [`net_text`]).
fn good_net_text() -> impl Strategy<Value = String> {
    net_text().prop_filter("a valid pattern", |t| t.parse::<NetPattern>().is_ok())
}

/// A policy file says what the equivalent `[tools.NAME] grant` table says: both produce the
/// same grant, with `fs://DIR/**` standing for `DIR` and entries kept in the file's order.
#[test]
fn a_policy_file_grants_what_its_toml_table_grants() {
    let strategy = (
        prop::collection::vec(storage_entry(), 0..5),
        prop::collection::vec(good_net_text(), 0..4),
        prop::collection::vec("[A-Z_][A-Z0-9_]{0,8}", 0..4),
    );
    counted("a_policy_file_grants_what_its_toml_table_grants", 256, 100, strategy, |(dirs, hosts, env)| {
        let list = |items: Vec<String>| format!("[{}]", items.join(", "));
        let quoted = |items: &[String]| items.iter().map(|i| format!("\"{i}\"")).collect::<Vec<_>>();

        let mut yaml = String::from("version: \"1.0\"\npermissions:\n  storage:\n    allow:\n");
        for (dir, write, star) in &dirs {
            let uri = if *star { format!("fs://{dir}/**") } else { format!("fs://{dir}") };
            let access = if *write { "[read, write]" } else { "[read]" };
            yaml.push_str(&format!("      - uri: \"{uri}\"\n        access: {access}\n"));
        }
        yaml.push_str("  network:\n    allow:\n");
        hosts.iter().for_each(|h| yaml.push_str(&format!("      - host: \"{h}\"\n")));
        yaml.push_str("  environment:\n    allow:\n");
        env.iter().for_each(|k| yaml.push_str(&format!("      - key: \"{k}\"\n")));

        let pick = |write: bool| dirs.iter().filter(|d| d.1 == write).map(|d| d.0.clone()).collect::<Vec<_>>();
        let toml = format!(
            "[tools.T]\ngrant = {{ fs_read = {}, fs_write = {}, net = {}, env = {} }}\n",
            list(quoted(&pick(false))),
            list(quoted(&pick(true))),
            list(quoted(&hosts)),
            list(quoted(&env)),
        );

        let from_yaml = parse_policy_file(&yaml, Path::new("t.policy.yaml"))
            .map_err(|e| TestCaseError::fail(format!("{e}\n{yaml}")))?;
        let config = Config::parse(&toml, Path::new("toolhost.toml"))
            .map_err(|e| TestCaseError::fail(format!("{e}\n{toml}")))?;
        let from_toml: &Grant = config.tools["T"].grant().expect("a grant");
        prop_assert_eq!(&from_yaml, from_toml, "{}\n{}", yaml, toml);
        Ok(true)
    });
}

// ---------------------------------------------------------------------------------------------
// Claude Code's settings files, merged.

/// One rule of a settings file: its list and its text, from a small alphabet so that files
/// often speak of the same calls.
fn settings_rule() -> impl Strategy<Value = (usize, String)> {
    let tools = prop::sample::select(vec!["Read", "Edit", "Write", "Grep", "mcp__srv", "mcp__srv__t", "Bash"]);
    let patterns = prop::sample::select(vec![
        "",
        "(*)",
        "(a.txt)",
        "(./a.txt)",
        "(/a.txt)",
        "(//w/s/a.txt)",
        "(~/a.txt)",
        "(sub/**)",
        "(*.TXT)",
        "(//etc/**)",
        "(npm test:*)",
    ]);
    (0..3usize, tools, patterns).prop_map(|(kind, tool, pattern)| (kind, format!("{tool}{pattern}")))
}

/// A settings file's text: rules, sometimes a mode.
fn settings_file() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(settings_rule(), 0..5),
        prop::option::of(prop::sample::select(vec!["plan", "acceptEdits", "bypassPermissions", "dontAsk", "default"])),
    )
        .prop_map(|(rules, mode)| {
            let mut lists = [Vec::new(), Vec::new(), Vec::new()];
            for (kind, text) in rules {
                lists[kind].push(text);
            }
            let mut perms = serde_json::json!({"allow": lists[0], "ask": lists[1], "deny": lists[2]});
            if let Some(mode) = mode {
                perms["defaultMode"] = serde_json::json!(mode);
            }
            serde_json::json!({ "permissions": perms }).to_string()
        })
}

/// A call a rule of the alphabet may cover.
fn settings_call() -> impl Strategy<Value = (&'static str, Option<&'static str>, bool)> {
    (
        prop::sample::select(vec!["Read", "Edit", "Write", "Grep", "mcp__srv__t", "mcp__srv__u", "Bash"]),
        prop::sample::select(vec![
            None,
            Some("/w/s/a.txt"),
            Some("/w/s/sub/A.txt"),
            Some("/etc/passwd"),
            Some("/home/u/a.txt"),
            Some("npm test --all"),
        ]),
        any::<bool>(),
    )
}

proptest! {
    #![proptest_config(config(256))]

    /// Whatever the four files say and whether the workspace is trusted: a deny rule of any
    /// file covering a call denies it (no allow, mode or file order undoes it); an allow rule
    /// of the workspace's own files (project, local) never allows anything until it is trusted;
    /// and the merge does not depend on anything but the rules (the decision with the files
    /// read in another order of equal precedence is the same).
    #[test]
    fn a_deny_in_any_file_holds_and_an_untrusted_workspace_cannot_allow_itself(
        files in prop::collection::vec(settings_file(), 4),
        trusted in any::<bool>(),
        (tool, subject, read_only) in settings_call(),
    ) {
        use toolhost_policy::claude::{ClaudeSettings, LoadOptions, SettingsSource};
        let opts = LoadOptions { workspace: ws(), home: Some(Path::new("/home/u")), trusted };
        let sources = [
            (SettingsSource::User, "/home/u/.claude/settings.json"),
            (SettingsSource::Project, "/w/s/.claude/settings.json"),
            (SettingsSource::Local, "/w/s/.claude/settings.local.json"),
            (SettingsSource::Flag, "/etc/team/settings.json"),
        ];
        let mut settings = ClaudeSettings::default();
        for ((source, path), text) in sources.iter().zip(&files) {
            settings.read(*source, Path::new(path), text, &opts).map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
        }
        // Every rule read went to exactly one place.
        for r in &settings.held {
            prop_assert!(matches!(r.origin.source, SettingsSource::Project | SettingsSource::Local) && !trusted);
        }
        let kind = if subject.is_some_and(|s| s.starts_with('/')) { SubjectKind::Path } else { SubjectKind::Text };
        let req = Request { tool, subject: subject.map(|s| (s, kind)), read_only, grant_inside_workspace: true };
        let mut config = Config::default();
        config.merge_claude(settings.clone());
        let rules = config.permissions.rules();
        let verdict = rules.verdict(config.permissions.mode(), &req, ws(), None);
        let denied_by_some_file = rules.deny.iter().any(|r| {
            r.matches(tool, req.subject, ws())
                || (req.subject.is_some_and(|(_, k)| k == SubjectKind::Path)
                    && r.pattern.is_some()
                    && match r.family() {
                        Some(toolhost_policy::FileFamily::Read) => read_only,
                        Some(toolhost_policy::FileFamily::Edit) => !read_only,
                        _ => false,
                    }
                    && r.matches(&r.tool, req.subject, ws()))
        });
        if denied_by_some_file {
            prop_assert_eq!(verdict.decision, Decision::Deny, "{:?}", verdict);
        }
        // An allow by a rule is only ever one of the files the workspace does not bring, or
        // of a trusted workspace.
        if verdict.decision == Decision::Allow && verdict.by == DecidedBy::Rule {
            let allowing: Vec<_> = settings.rules.iter().filter(|r| r.kind == toolhost_policy::claude::RuleKind::Allow).collect();
            prop_assert!(!allowing.is_empty());
            prop_assert!(trusted || allowing.iter().any(|r| matches!(r.origin.source, SettingsSource::User | SettingsSource::Flag)), "{:?}", verdict);
        }
        // Two files of the user's own (user, --settings) read the other way round: the same
        // rules, the same decision.
        let mut swapped = ClaudeSettings::default();
        for i in [3usize, 1, 2, 0] {
            let (source, path) = sources[i];
            swapped.read(source, Path::new(path), &files[i], &opts).map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
        }
        let mut config2 = Config::default();
        // The mode of the last file read wins, so compare rules alone.
        config2.merge_claude(swapped);
        let rules2 = config2.permissions.rules();
        prop_assert_eq!(
            rules.verdict(Mode::Default, &req, ws(), None).decision,
            rules2.verdict(Mode::Default, &req, ws(), None).decision
        );
    }
}
