//! Writing data to stdout, and the exit codes that go with it. A closed pipe (`toolhost list |
//! head`) ends the program quietly, as for any Unix filter, instead of a panic from
//! `println!`.

use std::io::Write;

/// Exit code for a call whose tool_result is an error.
pub const EXIT_TOOL_ERROR: u8 = 1;
/// Exit code for bad usage or a host-side failure.
pub const EXIT_USAGE: u8 = 2;
/// Exit code after Ctrl-C or SIGTERM (128 + SIGINT), once every result has been printed.
pub const EXIT_INTERRUPTED: u8 = 130;

/// Print `text` and a newline to stdout.
pub fn line(text: impl std::fmt::Display) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{text}").and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write to stdout: {e}");
        std::process::exit(i32::from(EXIT_USAGE));
    }
}

/// Print formatted text and a newline to stdout (see [`line()`]).
macro_rules! outln {
    ($($arg:tt)*) => { $crate::output::line(format_args!($($arg)*)) };
}
pub(crate) use outln;
