//! Permission rules, path patterns, hook matchers and network patterns from any text: no panic,
//! and what parses prints back to something that parses to the same value.
//!
//! The input's first line is the pattern; the rest is a subject to match it against (a path, a
//! URL, a host), so that matching is fuzzed too.

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use toolhost_policy::{HookMatcher, NetPattern, PathPattern, Rule, SubjectKind};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (pattern, subject) = text.split_once('\n').unwrap_or((text, ""));
    let ws = Path::new("/w/s");

    if let Ok(rule) = pattern.parse::<Rule>() {
        let shown = rule.to_string();
        assert_eq!(shown.parse::<Rule>().as_ref(), Ok(&rule), "{pattern:?} printed as {shown:?}");
        for kind in [SubjectKind::Path, SubjectKind::Url, SubjectKind::Text] {
            let _ = rule.matches(&rule.tool, Some((subject, kind)), ws);
        }
    }
    if let Ok(p) = PathPattern::new(pattern) {
        let _ = p.matches(&toolhost_policy::resolve(subject, ws), ws);
    }
    if let Ok(m) = pattern.parse::<HookMatcher>() {
        let _ = m.matches(subject);
    }
    if let Ok(net) = pattern.parse::<NetPattern>() {
        let shown = net.to_string();
        assert_eq!(shown.parse::<NetPattern>().as_ref(), Ok(&net), "{pattern:?} printed as {shown:?}");
        assert!(net.covers(&net), "{net} does not cover itself");
        let _ = net.matches(subject, 443);
    }
});
