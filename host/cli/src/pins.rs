//! Pinned host-run files at every start (DESIGN §5a): the config in use and the files its hooks
//! run are compared with what was trusted for this workspace. A narrowing change applies at
//! once (the pins follow it silently); a widening one waits for a person: a yes on the terminal,
//! or `toolhost trust`. The first start records what it finds (trust on first use).

use crate::setup::{self, GlobalArgs, printable};
use anyhow::{Context, Result};
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use toolhost_policy::Config;
use toolhost_trust::{
    self as pins, Asking, Change, Clearance, Confirmation, Gate, GateError, PinError, PinStore, Pins,
};

/// What to do with a widening change when there are no pins to confirm it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnWidening {
    /// Ask on the terminal if a person is there (stdin and stderr are terminals, `CI` is not
    /// set), else refuse.
    AskOnTerminal,
    /// Refuse (a server reloading in the background: nobody to ask).
    Refuse,
}

/// toolhost's private state: `$TOOLHOST_STATE_DIR`, else `$XDG_STATE_HOME/toolhost`, else
/// `~/.local/state/toolhost`.
pub fn state_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os(pins::STATE_DIR_ENV).filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d).join("toolhost"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local").join("state").join("toolhost"))
}

/// Whose pins: the workspace (canonical) and the config file (the one in use, or where the next
/// start looks for one), plus the name people know the config by.
pub struct Subject {
    pub workspace: PathBuf,
    pub config: PathBuf,
    pub shown: String,
    /// The components of the `--tools` directories: their policy files are pinned too.
    tool_files: Vec<PathBuf>,
}

impl Subject {
    pub fn of(args: &GlobalArgs) -> Result<Subject> {
        let workspace = setup::workspace(args)?;
        let workspace = workspace
            .canonicalize()
            .with_context(|| format!("cannot resolve the workspace {}", workspace.display()))?;
        let given = setup::config_path(args).unwrap_or_else(|| PathBuf::from("toolhost.toml"));
        let absolute = std::path::absolute(&given).with_context(|| format!("cannot resolve {}", given.display()))?;
        // Its directory resolved, its name kept: a config reached through a link that is
        // swapped on every update (a Kubernetes ConfigMap's `..data/`) keeps its pins, and
        // every change of it is judged, not trusted anew as a first start.
        let config = match (absolute.parent().map(Path::canonicalize), absolute.file_name()) {
            (Some(Ok(dir)), Some(name)) => dir.join(name),
            _ => absolute,
        };
        // A directory that cannot be read fails the start later, with its own message.
        let tool_files = args.tools.iter().filter_map(|d| setup::wasm_files(d).ok()).flatten().collect();
        Ok(Subject { workspace, config, shown: given.display().to_string(), tool_files })
    }

    /// The pin check of this subject.
    pub fn gate(&self) -> Gate<'_> {
        Gate { workspace: &self.workspace, config_path: &self.config, tool_files: &self.tool_files }
    }

    /// The pins of the state now, for `config` (as loaded from this subject's file).
    pub fn current(&self, config: &Config) -> Pins {
        self.gate().current(config)
    }

    /// The pin file's path, for a watcher (it may not exist).
    pub fn pin_file(&self) -> Option<PathBuf> {
        state_dir().map(|d| d.join("pins").join(pins::file_name(&self.workspace, Some(&self.config))))
    }
}

/// Whether a person trusted this workspace and config (`toolhost trust`): false when nothing
/// is pinned yet, or the pins cannot be read.
pub fn workspace_trusted(args: &GlobalArgs) -> bool {
    let Ok(subject) = Subject::of(args) else { return false };
    let Ok(store) = store() else { return false };
    matches!(store.read(&subject.workspace, Some(&subject.config)), Ok(Some(p)) if p.workspace_trusted)
}

/// The pin store, or why there is none.
pub fn store() -> Result<PinStore, PinError> {
    let dir = state_dir()
        .ok_or_else(|| PinError::StateDir("no HOME, XDG_STATE_HOME or TOOLHOST_STATE_DIR to keep it in".to_string()))?;
    PinStore::open(&dir)
}

/// Compare the config in use and the files its hooks and servers run with the pins of this
/// workspace, before anything is built from them ([`toolhost_trust::Gate`]). Unchanged:
/// nothing happens. No pins yet: they are recorded. Only narrowing changes: they apply and the
/// pins follow. A widening change: a person's yes on the terminal (with `AskOnTerminal`), else
/// an error naming each change and `toolhost trust`. What it returns is the only way to start
/// a server.
///
/// When the state directory cannot be used the start is judged against a config-less baseline
/// (fail closed): what widens on that is held as above, the rest runs.
pub fn check(args: &GlobalArgs, config: &Config, on_widening: OnWidening) -> Result<Clearance> {
    // A hook that runs toolhost, whose hook runs toolhost, …: the chain is cut here (a server
    // chain stops one level earlier, as a toolhost under another starts no server).
    let depth = toolhost_policy::launch::depth();
    if depth >= 2 {
        anyhow::bail!(
            "toolhost runs {depth} levels deep under toolhost ({}={depth}): a chain of toolhost processes started \
             by hooks stops here",
            toolhost_policy::launch::DEPTH_ENV
        );
    }
    let mut subject = Subject::of(args)?;
    // A hook or server whose files cannot be kept from tools is reported as that, at its
    // position, before any comparison with pins (what it runs cannot be told, so its pin
    // would say nothing, and the difference would read as a change).
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(std::path::PathBuf::from);
    let errors = config.hook_errors(&subject.workspace, home.as_deref());
    if !errors.is_empty() {
        let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
        anyhow::bail!("{}", shown.join("\n"));
    }
    // The settings files read with the config are judged with it: name them too.
    if let Some(claude) = &config.claude
        && !claude.files.is_empty()
    {
        let files: Vec<String> = claude.files.iter().map(|(_, f)| shown(f, &subject)).collect();
        subject.shown = format!("{} (with {})", subject.shown, files.join(", "));
    }
    let gate = subject.gate();
    let mut first_start_refused = false;
    let mut confirm = |asking: Asking, wider: &[&Change]| {
        if on_widening != OnWidening::AskOnTerminal || !someone_to_ask() {
            return Confirmation::NobodyToAsk;
        }
        let yes = confirm(&subject, asking, wider);
        first_start_refused = asking == Asking::FirstStart && !yes;
        if yes { Confirmation::Yes } else { Confirmation::No }
    };
    match gate.check(config, store(), &mut confirm) {
        Ok(clearance) => Ok(clearance),
        Err(GateError::Widening { .. }) if first_start_refused => anyhow::bail!(
            "not started: {} was not trusted (run again to be asked, or review it and run `toolhost trust`)",
            subject.shown
        ),
        Err(GateError::Widening { changes, unconfirmed }) => {
            let list = changes.iter().map(|c| c.what.as_str()).collect::<Vec<_>>().join("; ");
            match unconfirmed {
                Some(why) => anyhow::bail!(
                    "cannot confirm {} ({why}): {list}. Review it, fix the state directory, then run `toolhost \
                     trust` to accept.",
                    subject.shown
                ),
                None => anyhow::bail!(
                    "{} changed since it was trusted: {list}. Review it, then run `toolhost trust` to accept.",
                    subject.shown
                ),
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// A person can answer: stdin and stderr are terminals and `CI` is not set.
fn someone_to_ask() -> bool {
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false"));
    !ci && std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Show the widening changes (or, at a first start, what the workspace brings) on the
/// terminal and ask (y/N); no terminal, no answer or a terminal that fails is a no.
fn confirm(subject: &Subject, asking: Asking, wider: &[&Change]) -> bool {
    ask(subject, asking, wider).unwrap_or(false)
}

fn ask(subject: &Subject, asking: Asking, wider: &[&Change]) -> Result<bool> {
    let Ok(tty) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/tty") else { return Ok(false) };
    let mut out = &tty;
    // What changed comes from files a cloned repository wrote: shown escaped, so that it
    // cannot redraw this question.
    let shown = printable(&subject.shown);
    match asking {
        Asking::FirstStart => writeln!(
            out,
            "toolhost: first start in {} with {shown}, which runs programs on this machine, outside the sandbox:",
            printable(&subject.workspace.display().to_string())
        )?,
        _ => writeln!(out, "toolhost: {shown} changed since it was trusted, widening what runs on this machine:")?,
    }
    for c in wider {
        writeln!(out, "  - {}", printable(&c.what))?;
    }
    match asking {
        Asking::FirstStart => write!(out, "Trust them and start? [y/N] ")?,
        _ => write!(out, "Trust these changes and start? [y/N] ")?,
    }
    out.flush()?;
    let mut answer = String::new();
    std::io::BufReader::new(&tty).read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

/// `path` relative to the workspace when inside it.
pub fn shown(path: &Path, subject: &Subject) -> String {
    pins::show_path(path, &subject.workspace)
}
