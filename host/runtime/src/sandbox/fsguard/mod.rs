//! # The filesystem guard
//!
//! wasmtime-wasi keeps a tool inside its preopened directories (cap-std refuses `..` and
//! absolute-symlink escapes) and enforces read-only preopens. It knows nothing finer than a
//! directory, so this layer sits between the guest and wasmtime-wasi's `wasi:filesystem` host
//! implementation and checks every path operation against the call's [`PathPolicy`] list:
//!
//! - **protected paths** (the config file in use, hook scripts, tool files and directories,
//!   the compile cache, `.toolhost/`): no create, write, truncate, rename, delete, link or
//!   symlink, whatever the grant;
//! - **files other programs run** (`.git/hooks/`, `.envrc`, shell start-up files …): writes only
//!   when a person approved this very call for that path ([`FsGuard::approved`]);
//! - **path deny rules** (`Read(secrets/**)`, `Edit(.env)`): refused on open, stat and link, and
//!   absent from directory listings.
//!
//! Paths are checked **after resolving links**: a write is resolved before it happens (the
//! parent directory canonicalised, the last component followed when the guest asked to
//! follow), so `innocent.txt -> id.key` reads as `id.key`. A read whose last name is known to be
//! no link (an `lstat` said so, or this call listed its directory to the end without meeting
//! one: a walk lists a directory, then opens each entry) is checked before, by path, and opened
//! without following that name; any other read after it happened (the real path of the opened
//! descriptor, from `/proc/self/fd`). A trailing `/.` or `/` makes the kernel follow the name
//! before it whatever the flags say, and so does every resolution here. During a host call the guest
//! is suspended and calls that run beside it have read-only grants, so nothing the tool controls
//! can move a link between the check and the operation.
//!
//! Preopens come from directory handles opened once at load ([`Preopen`]), duplicated per
//! call: replacing a granted directory by a link after load changes nothing for later calls.
//!
//! A refusal reaches the guest as the WASI error `access`; the call's result then names the
//! path and why ([`FsGuard::note`]). Directory entries whose names are not UTF-8 (no WASI path
//! can name them) are skipped instead of ending the listing, and counted in the note.
//!
//! With no rule that can refuse a read (the default config), reads and listings cost nothing
//! extra; every write pays one path resolution.
//!
//! The module is split as wasmtime-wasi splits its own: [`resolve`] (pure path resolution),
//! [`memory`] (what a call learned, for reads only), [`checks`] (the judgements) and [`host`]
//! (the `wasi:filesystem` traits).

mod checks;
mod host;
mod memory;
mod resolve;

pub(crate) use resolve::resolve_at;

use memory::{LastRead, Listing, Parent};
use std::collections::{HashMap as StdHashMap, HashSet as StdHashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};
use toolhost_policy::{FsAccess, FsRefusal, PathPolicy};
use wasmtime::component::{HasData, Linker};
use wasmtime_wasi::filesystem::WasiFilesystemCtxView;
use wasmtime_wasi::p2::bindings::filesystem::{preopens, types};

/// The guard's per-call maps, keyed by paths the tool chose: hashed with foldhash (seeded per
/// process, so a tool cannot plan collisions) rather than SipHash, which cost a tenth of a
/// guarded walk.
type HashMap<K, V> = StdHashMap<K, V, foldhash::fast::RandomState>;
type HashSet<K> = StdHashSet<K, foldhash::fast::RandomState>;

/// Most refusals remembered per call: a guest looping on refused writes cannot grow it.
const MAX_REFUSALS: usize = 16;

/// Whether `/proc/self/fd` tells the real path of a descriptor (Linux with procfs). Without it,
/// the guard falls back to the paths it resolved when each directory was opened.
static PROC_FD_PRESENT: LazyLock<bool> = LazyLock::new(|| Path::new("/proc/self/fd").is_dir());

/// Set by tests to exercise the fallback on a machine that has procfs.
static PROC_FD_DISABLED: AtomicBool = AtomicBool::new(false);

fn proc_fd() -> bool {
    *PROC_FD_PRESENT && !PROC_FD_DISABLED.load(Ordering::Relaxed)
}

/// Use (or not) `/proc/self/fd` for the real paths of descriptors; without it the guard uses
/// the paths it resolved when directories were opened, as on a system without procfs. For
/// tests of that fallback; takes effect for calls started afterwards.
pub fn use_procfs_paths(enabled: bool) {
    PROC_FD_DISABLED.store(!enabled, Ordering::Relaxed);
}

/// One granted directory, opened at load.
#[derive(Debug, Clone)]
pub(crate) struct Preopen {
    /// The path the guest sees (the path the grant names, absolute).
    pub guest: String,
    /// Where it really is (canonical), for checks.
    pub host: PathBuf,
    /// The directory handle held since load; each call gets a duplicate.
    pub handle: Arc<std::fs::File>,
    /// Whether the grant allows writes.
    pub writable: bool,
}

/// The rules of one call: every policy must allow an operation.
#[derive(Debug, Clone, Default)]
pub(crate) struct FsRules {
    pub policies: Vec<Arc<PathPolicy>>,
    /// Whether any policy can refuse a read (a `Read` deny rule, a hidden path). Without one,
    /// reads and listings are not checked at all.
    pub check_reads: bool,
}

impl FsRules {
    fn check(&self, path: &Path, access: FsAccess, approved: &[PathBuf]) -> Result<(), FsRefusal> {
        self.policies.iter().try_for_each(|p| p.check(path, access, approved))
    }

    /// Whether some entry beneath `dir` might not be readable (see
    /// [`PathPolicy::may_refuse_reads_beneath`]).
    fn may_refuse_reads_beneath(&self, dir: &Path) -> bool {
        self.policies.iter().any(|p| p.may_refuse_reads_beneath(dir))
    }
}

/// The guard's per-call state (lives in the store).
#[derive(Debug, Default)]
pub(crate) struct FsGuard {
    preopens: Arc<[Preopen]>,
    /// Every preopen read-only (a call inside a parallel batch).
    read_only: bool,
    rules: FsRules,
    /// Paths a person approved for this call (asked-before-writing files).
    approved: Vec<PathBuf>,
    /// Directory descriptors → their real path (from `/proc/self/fd`, or, without it, resolved
    /// when each was opened).
    dirs: HashMap<u32, Arc<Path>>,
    /// Directory listings → the listed directory's path (only when reads are checked).
    streams: HashMap<u32, Listing>,
    refusals: Vec<String>,
    refused_total: usize,
    skipped_names: u64,
    /// Whether real paths come from `/proc/self/fd` (fixed for the call).
    procfs: bool,
    /// Real paths of directories resolved in this call (a walk stats many files in one
    /// directory: one resolution each). Emptied by every operation that changes directories.
    resolved: HashMap<PathBuf, Arc<Path>>,
    /// Real paths of directories that a listing in this call read to the end without meeting
    /// a link (or an entry of unknown type): opening or stat-ing an entry of one needs no
    /// resolution of its own (a walk lists a directory, then opens each entry). Emptied with
    /// `resolved`.
    linkless: HashSet<Arc<Path>>,
    /// Real paths of directories that a listing in this call showed as directories (not
    /// links): with `linkless`, a name in a directory listed to the end is known to be a
    /// directory or not without an `lstat` (a walk probes `.git` in every directory it
    /// enters). Emptied with `resolved`.
    subdirs: HashSet<PathBuf>,
    /// Counts the times learned facts were forgotten (the tree changed, or `subdirs` was full):
    /// a listing that spans one does not mark its directory `linkless`, since what it saw
    /// before may be stale or lost.
    generation: u64,
    /// Paths found not to exist (or not to resolve) in this call: a walk probes the same
    /// missing `.git/info` in every directory. Emptied by every operation that creates anything.
    missing: HashSet<PathBuf>,
    /// Real directories → whether a read of something beneath may be refused (a function of
    /// the rules alone, so never forgotten): entries of the others need no check.
    refusable: HashMap<PathBuf, bool>,
    /// Directory descriptors → parent parts of paths the guest used beneath them (as written)
    /// → what is known of that directory ([`GuardedFs::parent`]): a walk names every entry by
    /// its directory's path, so this spares resolving and hashing whole real paths per entry.
    /// Emptied with `resolved`; a descriptor's entry goes with it.
    parents: HashMap<u32, HashMap<Box<str>, Option<Parent>>>,
    /// The last read that passed [`GuardedFs::check_read`]: C libraries ask `stat-at` then
    /// `metadata-hash-at` of the same path for one `stat`, and the second needs no check.
    /// Forgotten whenever the tree or the descriptors change.
    last_read: LastRead,
}

impl FsGuard {
    /// The guard of a call with these preopens and rules.
    pub(crate) fn new(preopens: Arc<[Preopen]>, read_only: bool, rules: FsRules, approved: Vec<PathBuf>) -> Self {
        FsGuard { preopens, read_only, rules, approved, procfs: proc_fd(), ..FsGuard::default() }
    }

    /// What the call's result should say about refused operations and skipped names.
    pub(crate) fn note(&self) -> Option<String> {
        let mut parts = Vec::new();
        if !self.refusals.is_empty() {
            let more = self.refused_total.saturating_sub(self.refusals.len());
            let mut s = String::from("The sandbox refused file operations of this call:");
            for r in &self.refusals {
                s.push_str("\n- ");
                s.push_str(r);
            }
            if more > 0 {
                s.push_str(&format!("\n- … and {more} more"));
            }
            parts.push(s);
        }
        if self.skipped_names > 0 {
            parts.push(format!(
                "{} directory {} skipped: {} not valid UTF-8, which no tool can name.",
                self.skipped_names,
                if self.skipped_names == 1 { "entry was" } else { "entries were" },
                if self.skipped_names == 1 { "its name is" } else { "their names are" }
            ));
        }
        (!parts.is_empty()).then(|| parts.join("\n"))
    }
}

/// The guarded `wasi:filesystem` view of a store.
pub(crate) struct GuardedFs<'a> {
    pub inner: WasiFilesystemCtxView<'a>,
    pub guard: &'a mut FsGuard,
}

struct GuardedFsData;

impl HasData for GuardedFsData {
    type Data<'a> = GuardedFs<'a>;
}

/// Shadow wasmtime-wasi's `wasi:filesystem/types` and `wasi:filesystem/preopens` with the
/// guarded view (call after `wasmtime_wasi::p2::add_to_linker_async`).
pub(crate) fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    getter: fn(&mut T) -> GuardedFs<'_>,
) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let result = types::add_to_linker::<T, GuardedFsData>(linker, getter)
        .and_then(|()| preopens::add_to_linker::<T, GuardedFsData>(linker, getter));
    linker.allow_shadowing(false);
    result
}
