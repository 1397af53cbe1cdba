//! A grant becomes a WASI context, per call. Every sandbox knob is set explicitly: no inherited
//! stdio, environment or network; preopens only for granted directories.
//!
//! Granted directories are preopened at the absolute paths their grants name and nowhere else
//! (by the filesystem guard, from handles opened at load: see fsguard.rs). The
//! workspace is deliberately *not* also preopened as `.`: wasi-libc resolves both relative
//! paths and absolute paths that match no preopen against a `.` preopen, so `/etc/passwd`
//! would silently become `WORKSPACE/etc/passwd` (and a write to `/x` would create
//! `WORKSPACE/x`). Relative paths instead resolve against the current directory: the WASI
//! `initial-cwd` is the workspace, and the Rust SDK changes to it before `call`.

use crate::kinds::command::CommandInput;
use crate::sandbox::capture::CapturePipe;
use crate::sandbox::net::{NetAccess, addr_check};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use toolhost_policy::EffectiveGrant;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder};

/// Build the WASI context of one call. `grant: None` is the capability-free context used for
/// `schema`, `is-concurrency-safe` and `validate`. `net` is the call's network access (built
/// from the same grant); without a `net` grant, sockets and name lookup stay off.
pub(crate) fn wasi_ctx(
    grant: Option<&EffectiveGrant>,
    net: &Arc<NetAccess>,
    workspace: &Path,
    env: &BTreeMap<String, String>,
    stdout: &CapturePipe,
    stderr: &CapturePipe,
    command: Option<&CommandInput>,
) -> Result<WasiCtx, String> {
    let mut b = WasiCtxBuilder::new();
    // A command program's arguments (after its name) and standard input; other tools read
    // an empty stdin and have no arguments.
    if let Some(command) = command {
        b.arg(&command.program).args(&command.args);
        b.stdin(wasmtime_wasi::p2::pipe::MemoryInputPipe::new(command.stdin.clone()));
    }
    // File operations are short; running them on the calling thread instead of a blocking
    // pool makes each one several times cheaper (set before the preopens, which capture it).
    b.allow_blocking_current_thread(true);
    b.stdout(stdout.clone())
        .stderr(stderr.clone())
        // Network: TCP, UDP and name lookup only with a net grant, and then only to what it
        // names (see net.rs; every datagram in or out is checked by address).
        .allow_tcp(net.is_granted())
        .allow_udp(net.is_granted())
        .allow_ip_name_lookup(net.is_granted())
        .socket_addr_check(addr_check(net.clone()))
        // Bounds one `get-random-bytes` call; the guest controls the size it asks for.
        .max_random_size(1 << 20);
    if let Some(grant) = grant {
        // The granted directories themselves are not preopened here: the filesystem guard
        // hands out duplicates of handles opened at load (fsguard.rs), so a directory replaced
        // by a link after load changes nothing.
        if grant.dirs.iter().any(|d| d.path == workspace)
            && let Some(ws) = workspace.to_str()
        {
            b.initial_cwd(ws);
        }
        for (k, v) in granted_env(Some(grant), env) {
            b.env(k, v);
        }
    }
    Ok(b.build())
}

/// The environment variables `grant` gives a call, out of the host's `env`: each name it
/// lists that is set, or all of them for `*`. `None` (the capability-free context) gives none.
pub(crate) fn granted_env(grant: Option<&EffectiveGrant>, env: &BTreeMap<String, String>) -> Vec<(String, String)> {
    let Some(grant) = grant else { return Vec::new() };
    let mut out = Vec::new();
    for name in &grant.env {
        if name == "*" {
            out.extend(env.iter().map(|(k, v)| (k.clone(), v.clone())));
        } else if let Some(v) = env.get(name) {
            out.push((name.clone(), v.clone()));
        }
    }
    out
}
