//! Writing data to stdout. A closed pipe (`toolhost list | head`) ends the program quietly,
//! as for any Unix filter, instead of a panic from `println!`.

use std::io::Write;

/// Print `text` and a newline to stdout.
pub fn line(text: impl std::fmt::Display) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{text}").and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write to stdout: {e}");
        std::process::exit(i32::from(crate::EXIT_USAGE));
    }
}

/// Print formatted text and a newline to stdout (see [`line()`]).
macro_rules! outln {
    ($($arg:tt)*) => { $crate::output::line(format_args!($($arg)*)) };
}
pub(crate) use outln;
