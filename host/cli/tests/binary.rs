//! The binary as built by `cargo test --workspace`.
//!
//! Beyond checking that it starts, this test target is why `cargo test` builds the `toolhost`
//! binary at all, with the dependency features of the whole test build: the integration tests in
//! `tests/` then run that very binary instead of building a second one whose different feature
//! set would compile wasmtime again (`tests/src/cli.rs`).

use std::process::Command;

#[test]
fn the_binary_starts_and_says_its_version() {
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost")).arg("--version").output().expect("run toolhost");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.trim(), format!("toolhost {}", env!("CARGO_PKG_VERSION")));
}

#[test]
fn an_unknown_command_is_a_usage_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost")).arg("frobnicate").output().expect("run toolhost");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("frobnicate"), "{out:?}");
}
