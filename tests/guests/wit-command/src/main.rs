//! A command program (`wasi:cli/command`, exporting `wasi:cli/run`): an ordinary WASI CLI
//! program, for toolhost's command tools. It does what its first argument says:
//!
//! ```text
//! echo ARGS...     the arguments joined by spaces, and a newline, to stdout; exit 0
//! cat              stdin copied to stdout; exit 0
//! cat FILE...      each file's bytes to stdout; a file that cannot be read: "cat: FILE: REASON"
//!                  on stderr, the other files still printed, exit 1
//! env KEY          the variable's value and a newline to stdout, exit 0; unset: exit 3, no output
//! exit N           "bye" and a newline to stderr, then exit N (0-255; another N: the usage)
//! write FILE TEXT  TEXT (no newline added) written to FILE, "wrote N bytes" on stdout, exit 0;
//!                  on failure "write: FILE: REASON" on stderr, exit 1
//! spin             loops forever (a timeout test)
//! alloc            allocates (and touches) 1 MiB blocks until memory runs out (a memory-limit test)
//! panic            panics with "wit-command: asked to panic" (the run traps)
//! flood            writes 10 MiB of 'x' to stdout, then "flooded" to stderr, exit 0
//! (no arguments or an unknown command)
//!                  the usage on stderr, exit 2
//! ```
//!
//! Argument 0 is the program name, as in any CLI program; the commands start at argument 1.
//!
//! # Exit codes
//!
//! Rust's std knows only ok and err: a non-zero `ExitCode` returned from `main` makes
//! `wasi:cli/run` return err, and `std::process::exit(n)` calls `exit(err)` of
//! `wasi:cli/exit@0.2.6`; hosts report both as exit code 1. So the codes other than 0 and 1
//! (`exit N`, `env KEY` unset, usage) go through `exit-with-code` of `wasi:cli/exit@0.2.12`
//! instead (stable since WASI 0.2.12, which wasmtime-wasi 48 provides), and end the call with
//! `I32Exit(N)`, even for N = 0. `cat` and `write` failures return `ExitCode::FAILURE` from
//! `main` (`run` returns err), so a host sees both ways a program can end with a code.

mod bindings {
    // Only `exit-with-code`: everything else comes from std. wasm-component-ld merges this import
    // with std's `wasi:cli/exit@0.2.6` into one `wasi:cli/exit@0.2.12` import.
    wit_bindgen::generate!({
        inline: r#"
            package test:command;

            world command {
                import wasi:cli/exit@0.2.12;
            }

            package wasi:cli@0.2.12 {
                interface exit {
                    @since(version = 0.2.0)
                    exit: func(status: result);

                    @since(version = 0.2.12)
                    exit-with-code: func(status-code: u8);
                }
            }
        "#,
        world: "command",
        generate_all,
    });
}

use std::hint::black_box;
use std::io::{Read, Write};
use std::process::ExitCode;

const USAGE: &str = "usage: wit-command echo ARGS... | cat [FILE...] | env KEY | exit N | write FILE TEXT | spin | alloc | panic | flood";

/// What `flood` writes to stdout: more than any sane output cap.
const FLOOD_BYTES: usize = 10 << 20;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["echo", words @ ..] => {
            println!("{}", words.join(" "));
            ExitCode::SUCCESS
        }
        ["cat"] => cat_stdin(),
        ["cat", files @ ..] => cat_files(files),
        ["env", key] => match std::env::var(key) {
            Ok(value) => {
                println!("{value}");
                ExitCode::SUCCESS
            }
            Err(_) => exit_with_code(3),
        },
        ["exit", code] => match code.parse::<u8>() {
            Ok(code) => {
                eprintln!("bye");
                exit_with_code(code)
            }
            Err(_) => usage(),
        },
        ["write", file, text] => match std::fs::write(file, text.as_bytes()) {
            Ok(()) => {
                println!("wrote {} bytes", text.len());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("write: {file}: {e}");
                ExitCode::FAILURE
            }
        },
        ["spin"] => spin(),
        ["alloc"] => alloc(),
        ["panic"] => panic!("wit-command: asked to panic"),
        ["flood"] => flood(),
        _ => usage(),
    }
}

fn usage() -> ExitCode {
    eprintln!("{USAGE}");
    exit_with_code(2)
}

/// Ends the program with `code` (any of 0-255, unlike a `main` returning an `ExitCode`; see the
/// module docs), after flushing what std still buffers.
fn exit_with_code(code: u8) -> ! {
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    bindings::wasi::cli::exit::exit_with_code(code);
    unreachable!("wasi:cli/exit.exit-with-code returned")
}

fn cat_stdin() -> ExitCode {
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut input) {
        eprintln!("cat: stdin: {e}");
        return ExitCode::FAILURE;
    }
    write_stdout(&input)
}

fn cat_files(files: &[&str]) -> ExitCode {
    let mut status = ExitCode::SUCCESS;
    for file in files {
        match std::fs::read(file) {
            Ok(bytes) => {
                if write_stdout(&bytes) != ExitCode::SUCCESS {
                    return ExitCode::FAILURE;
                }
            }
            Err(e) => {
                eprintln!("cat: {file}: {e}");
                status = ExitCode::FAILURE;
            }
        }
    }
    status
}

fn write_stdout(bytes: &[u8]) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cat: stdout: {e}");
            ExitCode::FAILURE
        }
    }
}

fn spin() -> ExitCode {
    let mut n: u64 = 0;
    // black_box makes every iteration observable, so the loop cannot be optimised away.
    loop {
        n = black_box(n.wrapping_add(1));
    }
}

fn alloc() -> ExitCode {
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    loop {
        // Touch every block so that the memory is really used, not just reserved.
        blocks.push(black_box(vec![1u8; 1 << 20]));
    }
}

fn flood() -> ExitCode {
    let chunk = vec![b'x'; 64 << 10];
    let mut out = std::io::stdout().lock();
    for _ in 0..FLOOD_BYTES / chunk.len() {
        if out.write_all(&chunk).is_err() {
            // The host closed or capped stdout: stop quietly, as `yes | head` does.
            return ExitCode::FAILURE;
        }
    }
    let _ = out.flush();
    eprintln!("flooded");
    ExitCode::SUCCESS
}
