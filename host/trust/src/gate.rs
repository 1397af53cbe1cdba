//! The one gate every host program passes: the pin check, and what it hands out.
//!
//! A program toolhost starts outside the sandbox (a stdio MCP server) is started only from a
//! [`Cleared`] value, and only [`Gate::check`] makes one: it compares the config in use (its
//! hooks, servers with their environment and headers, rules, grants, and the files they run)
//! with what was trusted for this workspace, asks a person about a widening change (through
//! the caller's `confirm`), and then hands out each server exactly as it was described for the
//! check ([`toolhost_policy::launch`]), and the hooks as they were judged. A command that
//! passes no gate (compile, add, update, inspect, test) holds no [`Clearance`], so the type
//! system keeps it from starting a server, and `toolhost` builds its runtime with no hooks.

use super::{Change, PinError, PinStore, Pins, changes, mode_rank};
use std::path::{Path, PathBuf};
use toolhost_policy::launch::{LaunchError, ServerLaunch};
use toolhost_policy::{Config, HooksConfig};

/// A host program the pin check cleared. No constructor outside this crate: holding one
/// means the check ran on exactly this description.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Cleared<T>(T);

impl<T> std::ops::Deref for Cleared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// What a start may run, once the pin check passed: every MCP server of the config, as it
/// was described and judged (or why it cannot start).
#[derive(Debug, Default)]
pub struct Clearance {
    servers: Vec<(String, Result<Cleared<ServerLaunch>, LaunchError>)>,
    hooks: Cleared<HooksConfig>,
}

impl Clearance {
    /// Each server by name, cleared or refused.
    pub fn servers(&self) -> impl Iterator<Item = (&str, Result<&Cleared<ServerLaunch>, &LaunchError>)> {
        self.servers.iter().map(|(n, s)| (n.as_str(), s.as_ref()))
    }

    /// The hooks the check judged, with the environment they get: what a runtime built for
    /// this start runs (`toolhost` puts exactly these in its runtime's config, and none when
    /// it holds no clearance).
    pub fn hooks(&self) -> &Cleared<HooksConfig> {
        &self.hooks
    }

    /// The servers and hooks of `config`, described now, in its order.
    fn of(config: &Config, workspace: &Path) -> Clearance {
        let servers =
            config.mcp_servers.iter().map(|(name, s)| (name.clone(), s.launch(workspace).map(Cleared))).collect();
        Clearance { servers, hooks: Cleared(config.hooks.clone()) }
    }
}

/// Whose pins are checked: the workspace (canonical), the config file (the one in use, or
/// where the next start looks), and the components of `--tools` directories (their policy
/// files are pinned too).
#[derive(Debug, Clone, Copy)]
pub struct Gate<'a> {
    /// The canonical workspace.
    pub workspace: &'a Path,
    /// The config file.
    pub config_path: &'a Path,
    /// Components loaded from directories, whose policy files are obeyed.
    pub tool_files: &'a [PathBuf],
}

/// Why the gate stays shut.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GateError {
    /// A change widens what runs on the host and nobody confirmed it.
    #[error("{}", list(.changes))]
    Widening {
        /// The widening changes.
        changes: Vec<Change>,
        /// Why pins could not be used, when the comparison was with a config-less baseline.
        unconfirmed: Option<String>,
    },
}

/// What the caller's `confirm` is asked about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Asking {
    /// Changes since the trusted state widen what runs on the host.
    Widening,
    /// Nothing is pinned yet, and the config brings programs to run on the host (hooks,
    /// servers) or a mode above the default: Claude Code's trust dialog at a first start.
    FirstStart,
}

/// What a person answered, or that nobody could be asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Confirmation {
    /// A person said yes.
    Yes,
    /// A person said no.
    No,
    /// Nobody is there to ask (no terminal, CI): a widening change is refused, a first start
    /// is recorded as it is (trust on first use).
    NobodyToAsk,
}

fn list(changes: &[Change]) -> String {
    changes.iter().map(|c| c.what.as_str()).collect::<Vec<_>>().join("; ")
}

impl Gate<'_> {
    /// The pins of `config` now.
    pub fn current(&self, config: &Config) -> Pins {
        let mut pins = Pins::current(config, Some(self.config_path), self.workspace);
        pins.summary.pin_policy_files(self.tool_files.iter().map(PathBuf::as_path));
        pins
    }

    /// Compare `config` (and the files its hooks and servers run) with the pins in `store`.
    /// Unchanged: cleared. No pins yet: they are recorded (trust on first use). Only narrowing
    /// changes: they apply and the pins follow. A widening change: cleared only if `confirm`
    /// (a person's yes) says so, and then recorded.
    ///
    /// When the store cannot be used (`store` is an error) or its pin file does not parse, the
    /// config is judged against a config-less baseline (fail closed), with a warning.
    ///
    /// # Errors
    ///
    /// [`GateError::Widening`] with the changes nobody confirmed.
    pub fn check(
        &self,
        config: &Config,
        store: Result<PinStore, PinError>,
        confirm: &mut dyn FnMut(Asking, &[&Change]) -> Confirmation,
    ) -> Result<Clearance, GateError> {
        let mut current = self.current(config);
        let baseline = || Pins::baseline(self.workspace, Some(self.config_path));
        let (trusted, store, unconfirmed) = match store {
            Err(e) => {
                let why = toolhost::error_text(&e);
                tracing::warn!("{why}; changes that widen what runs on the host cannot be confirmed");
                (baseline(), None, Some(why))
            }
            Ok(store) => match store.read(self.workspace, Some(self.config_path)) {
                Ok(Some(pins)) => {
                    current.carry_unloaded(&pins);
                    (pins, Some(store), None)
                }
                Ok(None) => {
                    // A first start that brings programs to run here, or a wider mode, is shown
                    // to a person when there is one; with nobody to ask it is recorded.
                    let brings =
                        !current.summary.hooks.is_empty() || mode_rank(&current.summary.mode) > mode_rank("default");
                    if brings {
                        let found = changes(&baseline(), &current);
                        let wider: Vec<&Change> = found.iter().filter(|c| c.widens).collect();
                        if !wider.is_empty() && confirm(Asking::FirstStart, &wider) == Confirmation::No {
                            let changes = wider.into_iter().cloned().collect();
                            return Err(GateError::Widening { changes, unconfirmed: None });
                        }
                    }
                    save(&store, &current);
                    return Ok(Clearance::of(config, self.workspace));
                }
                Err(e) => {
                    let why = toolhost::error_text(&e);
                    tracing::warn!("{why}; comparing with no config at all");
                    (baseline(), Some(store), Some(why))
                }
            },
        };
        if trusted != current {
            let found = changes(&trusted, &current);
            let wider: Vec<&Change> = found.iter().filter(|c| c.widens).collect();
            if !wider.is_empty() && confirm(Asking::Widening, &wider) != Confirmation::Yes {
                let changes = wider.into_iter().cloned().collect();
                return Err(GateError::Widening { changes, unconfirmed });
            }
            if let Some(store) = &store {
                save(store, &current);
            }
        }
        Ok(Clearance::of(config, self.workspace))
    }
}

/// Record `pins`; a failure is a warning (the start goes on with what was checked).
fn save(store: &PinStore, pins: &Pins) {
    if let Err(e) = store.write(pins) {
        tracing::warn!("cannot record the trusted config and hook files: {}", toolhost::error_text(&e));
    }
}
