//! Work left to a background process: compiling what `add` and `update` installed, and
//! optimising what a short run compiled with the baseline tier.

use super::args::GlobalArgs;
use super::config::workspace;
use super::files::absolute;
use toolhost::Runtime;

/// Start `toolhost compile` for the same config, workspace and tool directories, detached (its
/// own process group, no terminal, lower priority), and return at once: the optimised code of
/// tools that answered with baseline code (or were just installed) then lands in the compile
/// cache for the next process, after this one has exited. Best effort: a failure is logged.
pub fn compile_in_background(args: &GlobalArgs) {
    use std::os::unix::process::CommandExt;
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            tracing::debug!("cannot compile in the background: {e}");
            return;
        }
    };
    let mut command = std::process::Command::new(exe);
    command.args(["compile", "--low-priority"]);
    if let Some(config) = &args.config {
        command.arg("--config").arg(absolute(config).unwrap_or_else(|_| config.clone()));
    }
    if let Ok(workspace) = workspace(args) {
        command.arg("--workspace").arg(workspace);
    }
    for dir in &args.tools {
        command.arg("--tools").arg(absolute(dir).unwrap_or_else(|_| dir.clone()));
    }
    if args.no_default_tools {
        command.arg("--no-default-tools");
    }
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0);
    match command.spawn() {
        Ok(child) => tracing::debug!("compiling optimised code in the background (process {})", child.id()),
        Err(e) => tracing::debug!("cannot compile in the background: {e}"),
    }
}

/// Lower the scheduling priority of this whole process (every thread of its process group,
/// which `compile_in_background` makes its own), so a background compile yields the CPU.
pub fn lower_priority() {
    let now = rustix::process::getpriority_pgrp(None).unwrap_or(0);
    if let Err(e) = rustix::process::setpriority_pgrp(None, (now + 10).min(19)) {
        tracing::debug!("cannot lower this process's priority: {e}");
    }
}

/// After a command that made calls: when some tool ran baseline code and its optimised code is
/// still being compiled (which this process's exit would stop), hand the work to a background
/// `toolhost compile`.
pub fn hand_off_optimizing(args: &GlobalArgs, runtime: &Runtime) {
    if !runtime.engine().optimizing().is_empty() {
        compile_in_background(args);
    }
}
