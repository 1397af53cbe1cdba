//! `toolhost.toml` from any bytes: [`Config::check`] and [`Config::parse`] never panic, every
//! error points inside the text (1-based line, column at most one past the line's end) and is
//! one line, and `parse`'s error is one of `check`'s.

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use toolhost_policy::{Config, ConfigError};

fn inside(text: &str, e: &ConfigError) -> bool {
    let lines: Vec<&str> = text.split('\n').collect();
    (1..=lines.len()).contains(&e.line) && (1..=lines[e.line - 1].chars().count() + 1).contains(&e.column)
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // A directory that does not exist: tool paths are reported missing, nothing is read.
    let file = Path::new("/nonexistent/toolhost-fuzz/toolhost.toml");
    let errors = Config::check(&text, file).err().unwrap_or_default();
    for e in &errors {
        assert!(inside(&text, e), "{e:?} points outside the text");
        assert!(!e.message.contains('\n'), "{e:?} is not one line");
    }
    if let Err(e) = Config::parse(&text, file) {
        assert!(errors.contains(&e), "parse's {e:?} is not among check's errors");
    }
});
