//! The log (stderr), as `-v` asks.

use super::display::SafeStderr;

pub fn init_tracing(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    // A TOOLHOST_LOG that does not parse is said, not ignored: the operator asked for logs.
    let (filter, bad) = match std::env::var("TOOLHOST_LOG") {
        Ok(text) if !text.trim().is_empty() => match tracing_subscriber::EnvFilter::try_new(&text) {
            Ok(filter) => (filter, None),
            Err(e) => (level.into(), Some(format!("TOOLHOST_LOG={text:?} is not a log filter ({e}); using {level:?}"))),
        },
        _ => (level.into(), None),
    };
    // No colours: they are escape sequences, and `SafeStderr` lets none through.
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| SafeStderr)
        .with_ansi(false)
        .with_target(false)
        .init();
    if let Some(message) = bad {
        eprintln!("warning: {message}");
    }
}
