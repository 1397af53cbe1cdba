//! `install.sh`, the one-line install of the release binary: it installs only an archive whose
//! sha256 is the one `SHA256SUMS` lists, replaces the binary atomically, and refuses (installing
//! nothing) on a mismatch or a missing line. Run here against a directory laid out like a
//! release (`TOOLHOST_DOWNLOAD`), with a stand-in binary.

use std::path::Path;
use std::process::{Command, Output};

/// A release directory holding `toolhost-TARGET.tar.gz` (a script standing in for the binary)
/// and its `SHA256SUMS`.
fn release(dir: &Path, version: &str) -> String {
    let target = match std::env::consts::ARCH {
        "aarch64" => "aarch64-unknown-linux-musl",
        _ => "x86_64-unknown-linux-musl",
    };
    let stage = dir.join("stage").join(format!("toolhost-{target}"));
    std::fs::create_dir_all(&stage).unwrap();
    std::fs::write(stage.join("toolhost"), format!("#!/bin/sh\necho toolhost {version}\n")).unwrap();
    let archive = format!("toolhost-{target}.tar.gz");
    let ok = Command::new("tar")
        .arg("-C")
        .arg(dir.join("stage"))
        .args(["-czf", &dir.join(&archive).display().to_string(), &format!("toolhost-{target}")])
        .status()
        .unwrap();
    assert!(ok.success());
    let sum = Command::new("sha256sum").arg(&archive).current_dir(dir).output().unwrap();
    std::fs::write(dir.join("SHA256SUMS"), sum.stdout).unwrap();
    archive
}

fn install(download: &Path, home: &Path) -> Output {
    Command::new("sh")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../install.sh"))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", home)
        .env("TOOLHOST_DOWNLOAD", download)
        .output()
        .unwrap()
}

#[test]
fn install_sh_installs_only_what_the_checksums_name() {
    if std::env::consts::OS != "linux" {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let archive = release(dir.path(), "1.0");
    let o = install(dir.path(), home.path());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{o:?}");
    assert!(out.contains("installed toolhost 1.0 to"), "{out}");
    let bin = home.path().join(".local/bin/toolhost");
    assert_eq!(String::from_utf8_lossy(&Command::new(&bin).output().unwrap().stdout), "toolhost 1.0\n");

    // A tampered archive (or a wrong line): refused, and the installed binary is untouched.
    let _ = release(dir.path(), "2.0-tampered");
    let sums = std::fs::read_to_string(dir.path().join("SHA256SUMS")).unwrap();
    std::fs::write(dir.path().join("SHA256SUMS"), sums.replacen(&sums[..8], "00000000", 1)).unwrap();
    let o = install(dir.path(), home.path());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("but SHA256SUMS says") && err.contains("not installed"), "{o:?}");
    assert_eq!(String::from_utf8_lossy(&Command::new(&bin).output().unwrap().stdout), "toolhost 1.0\n");

    // No line for this archive at all.
    std::fs::write(dir.path().join("SHA256SUMS"), "").unwrap();
    let o = install(dir.path(), home.path());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains(&format!("SHA256SUMS lists no {archive}")), "{o:?}");
}
