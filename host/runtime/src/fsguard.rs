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

use std::collections::{HashMap as StdHashMap, HashSet as StdHashSet};

/// The guard's per-call maps, keyed by paths the tool chose: hashed with foldhash (seeded per
/// process, so a tool cannot plan collisions) rather than SipHash, which cost a tenth of a
/// guarded walk.
type HashMap<K, V> = StdHashMap<K, V, foldhash::fast::RandomState>;
type HashSet<K> = StdHashSet<K, foldhash::fast::RandomState>;
use std::os::fd::AsRawFd;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};
use toolhost_policy::{FsAccess, FsRefusal, PathPolicy};
use wasmtime::component::{HasData, Linker, Resource};
use wasmtime_wasi::filesystem::{Descriptor, Dir, WasiFilesystemCtxView};
use wasmtime_wasi::p2::bindings::filesystem::preopens;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    self, DescriptorFlags, DescriptorType, ErrorCode, HostDescriptor, HostDirectoryEntryStream, OpenFlags, PathFlags,
};
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream, FsError, FsResult};
use wasmtime_wasi::{FsPerms, OpenMode};

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

/// What a listing checks: the listed directory's path, and whether its entries (other than
/// links) can all be read, which spares a check per entry; what it learns: whether any entry
/// may be a link, and (with `generation`) whether what it learned is still whole at its end.
#[derive(Debug)]
struct Listing {
    /// The listed directory's descriptor (`None` once the guest dropped it: its number may
    /// name another directory since) and real path.
    fd: Option<u32>,
    dir: Arc<Path>,
    all_readable: bool,
    links: bool,
    /// [`FsGuard::generation`] when the listing started.
    generation: u64,
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

/// A directory as the guard knows it: its real path, and whether some read beneath it may be
/// refused.
#[derive(Debug, Clone)]
struct Parent {
    real: Arc<Path>,
    refusable: bool,
}

/// The last read check passed: descriptor, whether the last name was followed, and the path
/// (its buffer reused, so remembering costs no allocation).
#[derive(Debug, Default)]
struct LastRead {
    valid: bool,
    fd: u32,
    follow: bool,
    path: String,
}

impl LastRead {
    fn is(&self, fd: u32, path: &str, follow: bool) -> bool {
        self.valid && self.fd == fd && self.follow == follow && self.path == path
    }

    fn set(&mut self, fd: u32, path: &str, follow: bool) {
        self.valid = true;
        self.fd = fd;
        self.follow = follow;
        self.path.clear();
        self.path.push_str(path);
    }
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

/// The real path of an open descriptor, from procfs (when `procfs`).
fn fd_path(file: &std::fs::File, procfs: bool) -> Option<PathBuf> {
    if !procfs {
        return None;
    }
    std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
}

fn descriptor_file(d: &Descriptor) -> &std::fs::File {
    match d {
        Descriptor::Dir(d) => &d.dir,
        Descriptor::File(f) => &f.file,
    }
}

/// `.` and `..` removed lexically (for paths that do not exist yet, where nothing can be
/// canonicalised).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The real path an operation on `rel` beneath the directory at `dir` reaches: intermediate
/// links always followed, the last one when `follow`. A path that does not exist (yet) keeps
/// its last components as written, under its deepest existing parent's real path.
pub(crate) fn resolve_at(dir: &Path, rel: &str, follow: bool) -> PathBuf {
    let joined = dir.join(rel);
    if follows_last(rel, follow) {
        return follow_final(&joined);
    }
    resolve_unfollowed(&joined)
}

/// Whether the kernel follows a link in the last name of `rel`: when asked to, and also when
/// `rel` ends in `/` or `/.` (or is `.`), whatever was asked, since then the named last
/// component is not the last one the kernel walks. `Path` drops that trailing `.`, so every
/// resolution asks this first.
fn follows_last(rel: &str, follow: bool) -> bool {
    follow || matches!(rel.rsplit('/').next(), Some("" | "."))
}

/// Whether `rel` names the directory it is relative to (`.`, `./.`): its real path is the
/// descriptor's, with nothing to resolve.
fn names_itself(rel: &str) -> bool {
    Path::new(rel).components().all(|c| c == Component::CurDir)
}

/// Where a link at the real path `link` whose text is `target` leads (followed to the end).
fn link_leads_to(link: &Path, target: &Path) -> PathBuf {
    let parent = link.parent().unwrap_or(Path::new("/"));
    resolve_at(parent, &target.to_string_lossy(), true)
}

/// Links followed at most when resolving one path, as the kernel's own limit (`ELOOP`).
const MAX_LINKS: usize = 40;

/// Where `path` leads with its last component followed through links, also when the final
/// target does not exist (yet): a create through a dangling link lands at the link's target,
/// so that is the path rules must judge, not the link.
fn follow_final(path: &Path) -> PathBuf {
    let mut current = resolve_unfollowed(path);
    for _ in 0..MAX_LINKS {
        if let Ok(real) = std::fs::canonicalize(&current) {
            return real;
        }
        let Ok(target) = std::fs::read_link(&current) else { return current };
        let base = current.parent().map(Path::to_path_buf).unwrap_or_default();
        current = resolve_unfollowed(&base.join(target));
    }
    current
}

/// [`resolve_at`] without following the last component.
fn resolve_unfollowed(joined: &Path) -> PathBuf {
    let mut parts: Vec<Component> = joined.components().collect();
    // The last component as written (not followed); before it, the deepest part that exists,
    // physically (`..` after a link goes where the kernel goes), then the rest as written.
    let last = match parts.pop() {
        Some(Component::Normal(name)) => Some(name),
        Some(other) => {
            parts.push(other);
            None
        }
        None => None,
    };
    let mut rest: Vec<Component> = Vec::new();
    while !parts.is_empty() {
        if let Ok(real) = std::fs::canonicalize(parts.iter().collect::<PathBuf>()) {
            let mut out = normalize(&rest.iter().rev().fold(real, |p, c| p.join(c)));
            if let Some(name) = last {
                out.push(name);
            }
            return out;
        }
        rest.extend(parts.pop());
    }
    normalize(joined)
}

/// Entries of a renamed directory checked for the links it moves, at most: a rename of a
/// bigger tree is refused rather than left unchecked.
const MAX_MOVED_ENTRIES: usize = 100_000;

/// Directories remembered per call at most (a walk over a huge tree cannot grow it without end).
const MAX_RESOLVED: usize = 4096;

/// `rel` split into its parent part and last name, as written, when it names an entry beneath
/// the directory by plain names only (`.` allowed, no `..`, not absolute, the last name a real
/// name): then the entry's real path is its parent's real path joined with the name, unless
/// the name is a link. Anything else (`a/..`, `x/`, `/abs`) is `None`: resolved the long way.
fn split_plain(rel: &str) -> Option<(&str, &str)> {
    if rel.starts_with('/') || rel.split('/').any(|c| c == "..") {
        return None;
    }
    let (parent, name) = rel.rsplit_once('/').unwrap_or(("", rel));
    (!name.is_empty() && name != ".").then_some((parent, name))
}

impl GuardedFs<'_> {
    /// The real path of the directory at `path`, remembered for the call (and so is its
    /// absence).
    ///
    /// From its parent's real path (remembered, or found the same way) and one `lstat` when
    /// the last name is a plain directory; `realpath` (a `readlink` per component) only for a
    /// link, or a path with `.` or `..` in it.
    fn real_dir(&mut self, path: &Path) -> Option<Arc<Path>> {
        if let Some(p) = self.guard.resolved.get(path) {
            return Some(p.clone());
        }
        if self.guard.missing.contains(path) {
            return None;
        }
        let plain =
            path.is_absolute() && path.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
        let by_parent = match (plain, path.parent(), path.file_name()) {
            (true, Some(parent), Some(name)) => match self.real_dir(parent) {
                // A missing parent: missing too.
                None => Err(()),
                Some(real_parent) => {
                    let candidate = real_parent.join(name);
                    if self.guard.linkless.contains(&*real_parent) {
                        // Listed to the end without a link: its directories are known. Anything
                        // else is missing or a file, where the path as written is the real one
                        // either way.
                        if self.guard.subdirs.contains(&candidate) { Ok(Some(candidate)) } else { Err(()) }
                    } else {
                        match std::fs::symlink_metadata(&candidate) {
                            Ok(m) if m.is_dir() => Ok(Some(candidate)),
                            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(()),
                            // A link (followed by `realpath`), or not a directory.
                            _ => Ok(None),
                        }
                    }
                }
            },
            _ => Ok(None),
        };
        let found = match by_parent {
            Ok(Some(real)) => Ok(real),
            Ok(None) => std::fs::canonicalize(path).map_err(|_| ()),
            Err(()) => Err(()),
        };
        let Ok(real) = found else {
            if self.guard.missing.len() >= MAX_RESOLVED {
                self.guard.missing.clear();
            }
            self.guard.missing.insert(path.to_path_buf());
            return None;
        };
        if self.guard.resolved.len() >= MAX_RESOLVED {
            self.guard.resolved.clear();
        }
        let real: Arc<Path> = real.into();
        self.guard.resolved.insert(path.to_path_buf(), real.clone());
        Some(real)
    }

    /// Where `name` in the missing directory `parent` (no `..` in it) would be: the real path
    /// of its deepest existing ancestor, then the rest as written ([`resolve_unfollowed`] with
    /// what the call remembers).
    fn resolve_missing(&mut self, parent: &Path, name: &std::ffi::OsStr) -> PathBuf {
        for ancestor in parent.ancestors().skip(1) {
            if let Some(real) = self.real_dir(ancestor) {
                let rest = parent.strip_prefix(ancestor).unwrap_or(Path::new(""));
                return real.join(rest).join(name);
            }
        }
        parent.join(name)
    }

    /// Something may have been created: forget what was missing.
    fn created(&mut self) {
        self.guard.missing.clear();
        self.guard.parents.clear();
        self.guard.last_read.valid = false;
    }

    /// [`resolve_at`] with the parent directory's real path remembered for the call.
    fn resolve(&mut self, dir: &Path, rel: &str, follow: bool) -> PathBuf {
        self.resolve_exact(dir, rel, follow).0
    }

    /// [`GuardedFs::resolve`], and whether the path reached is known to be the one an
    /// operation on `rel` that does not follow its last name reaches (that name is no link, or
    /// not followed): then the operation can be checked before and done without following.
    fn resolve_exact(&mut self, dir: &Path, rel: &str, follow: bool) -> (PathBuf, bool) {
        let follow = follows_last(rel, follow);
        let joined = dir.join(rel);
        let (Some(parent), Some(Component::Normal(name))) = (joined.parent(), joined.components().next_back()) else {
            return (resolve_at(dir, rel, follow), false);
        };
        let Some(real_parent) = self.real_dir(parent) else {
            // After a link, `..` goes where the kernel goes, not where the text says: the
            // uncached way.
            if parent.components().any(|c| c == Component::ParentDir) {
                return (resolve_at(dir, rel, follow), false);
            }
            return (self.resolve_missing(parent, name), false);
        };
        if !follow || self.guard.linkless.contains(&*real_parent) {
            return (real_parent.join(name), true);
        }
        let candidate = real_parent.join(name);
        match std::fs::symlink_metadata(&candidate) {
            Ok(m) if m.file_type().is_symlink() => (follow_final(&candidate), false),
            _ => (candidate, true),
        }
    }

    /// The directory `rel_parent` (a parent part from [`split_plain`]) beneath the directory
    /// descriptor `fd`, remembered per descriptor and path as written; `None` when it does not
    /// exist.
    ///
    /// Exact because nothing but this call's guest can change the tree during the call (calls
    /// beside it are read-only), and every change it makes through this guard forgets what was
    /// learned (`tree_changes`, `created`). A name directly in `fd` needs no resolution at all
    /// (a walk opens each directory it lists by its name, and a `realpath` of each cost one
    /// `readlink` per path component).
    fn parent(&mut self, fd: &Resource<Descriptor>, rel_parent: &str) -> FsResult<Option<Parent>> {
        if let Some(known) = self.guard.parents.get(&fd.rep()).and_then(|m| m.get(rel_parent)) {
            return Ok(known.clone());
        }
        let (dir, _) = self.dir_of(fd)?;
        let real = if Path::new(rel_parent).components().all(|c| c == Component::CurDir) {
            Some(dir)
        } else {
            self.real_dir(&dir.join(rel_parent))
        };
        let found = real.map(|real| Parent { refusable: self.refusable_beneath(&real), real });
        let known = self.guard.parents.entry(fd.rep()).or_default();
        if known.len() >= MAX_RESOLVED {
            known.clear();
        }
        known.insert(rel_parent.into(), found.clone());
        Ok(found)
    }

    /// The real path an operation on `rel` beneath `fd` reaches, as its parent directory and
    /// last name, when it is known without asking the kernel afterwards: `rel` is made of
    /// plain names ([`split_plain`]), and its last one is either not followed or in a
    /// directory this call listed without meeting a link.
    fn known_target<'r>(
        &mut self,
        fd: &Resource<Descriptor>,
        rel: &'r str,
        follow: bool,
    ) -> FsResult<Option<(Parent, &'r str)>> {
        let Some((rel_parent, name)) = split_plain(rel) else { return Ok(None) };
        let Some(parent) = self.parent(fd, rel_parent)? else { return Ok(None) };
        Ok((!follow || self.guard.linkless.contains(&*parent.real)).then_some((parent, name)))
    }

    /// Whether a read of something in the real directory `dir` may be refused: false, without
    /// matching any rule, when no rule reaches beneath it (remembered per directory).
    fn refusable_beneath(&mut self, dir: &Path) -> bool {
        if let Some(&r) = self.guard.refusable.get(dir) {
            return r;
        }
        let r = self.guard.rules.may_refuse_reads_beneath(dir);
        if self.guard.refusable.len() >= MAX_RESOLVED {
            self.guard.refusable.clear();
        }
        self.guard.refusable.insert(dir.to_path_buf(), r);
        r
    }

    /// [`GuardedFs::check`] of a read of the real path `path`, skipped where no rule reaches.
    fn check_read_of(&mut self, op: &str, path: &Path) -> FsResult<()> {
        match path.parent() {
            Some(parent) if !self.refusable_beneath(parent) => Ok(()),
            _ => self.check(op, path, FsAccess::Read),
        }
    }

    /// [`GuardedFs::check`] of a read of `name` in `parent`, skipped where no rule reaches.
    fn check_read_in(&mut self, op: &str, parent: &Parent, name: &str) -> FsResult<()> {
        if !parent.refusable {
            return Ok(());
        }
        self.check(op, &parent.real.join(name), FsAccess::Read)
    }

    /// Forget resolved directories: the guest is changing the tree.
    fn tree_changes(&mut self) {
        self.guard.resolved.clear();
        self.guard.linkless.clear();
        self.guard.subdirs.clear();
        self.guard.generation += 1;
        self.guard.missing.clear();
        self.guard.parents.clear();
        self.guard.last_read.valid = false;
        // With procfs, descriptor paths are asked again; without it they are all there is.
        if self.guard.procfs {
            self.guard.dirs.clear();
        }
    }

    /// Open a read already checked before, by its real path `real`, without following the last
    /// name: it was no link when checked, and should it have become one since (another
    /// process), the open fails instead of going elsewhere. Spares asking the kernel for the
    /// path after.
    async fn open_checked(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: PathFlags,
        path: String,
        oflags: OpenFlags,
        flags: DescriptorFlags,
        real: PathBuf,
    ) -> FsResult<Resource<Descriptor>> {
        let path_flags = path_flags & !PathFlags::SYMLINK_FOLLOW;
        let opened = self.inner.open_at(fd, path_flags, path, oflags, flags).await?;
        if matches!(self.inner.table.get(&opened)?, Descriptor::Dir(_)) {
            self.guard.dirs.insert(opened.rep(), real.into());
        }
        Ok(opened)
    }

    /// Whether a directory descriptor may be written.
    fn writable(&self, fd: &Resource<Descriptor>) -> FsResult<bool> {
        match self.inner.table.get(fd)? {
            Descriptor::Dir(d) => Ok(!d.perms.write_not_permitted()),
            Descriptor::File(_) => Err(ErrorCode::NotDirectory.into()),
        }
    }

    /// The real path of a directory descriptor and whether it may be written.
    fn dir_of(&mut self, fd: &Resource<Descriptor>) -> FsResult<(Arc<Path>, bool)> {
        let d = match self.inner.table.get(fd)? {
            Descriptor::Dir(d) => d,
            Descriptor::File(_) => return Err(ErrorCode::NotDirectory.into()),
        };
        let writable = !d.perms.write_not_permitted();
        if let Some(path) = self.guard.dirs.get(&fd.rep()) {
            return Ok((path.clone(), writable));
        }
        // Fail closed: a directory whose path is unknown is refused, not unchecked.
        let path: Arc<Path> = fd_path(&d.dir, self.guard.procfs).ok_or(ErrorCode::Access)?.into();
        // Remembered until the guest changes the tree (`tree_changes`). The kernel's path of
        // a descriptor has no links in it: resolving paths beneath it starts there, without
        // an `lstat` of each of its ancestors.
        self.guard.dirs.insert(fd.rep(), path.clone());
        self.guard.resolved.entry(path.to_path_buf()).or_insert_with(|| path.clone());
        Ok((path, writable))
    }

    fn refuse(&mut self, op: &str, refusal: FsRefusal) -> FsError {
        self.guard.refused_total += 1;
        let line = format!("{op}: {refusal}");
        if self.guard.refusals.len() < MAX_REFUSALS && !self.guard.refusals.contains(&line) {
            self.guard.refusals.push(line);
        }
        ErrorCode::Access.into()
    }

    fn check(&mut self, op: &str, path: &Path, access: FsAccess) -> FsResult<()> {
        match self.guard.rules.check(path, access, &self.guard.approved) {
            Ok(()) => Ok(()),
            Err(r) => Err(self.refuse(op, r)),
        }
    }

    /// Check a mutation of `rel` beneath `fd` (skipped on read-only directories, where
    /// wasmtime-wasi refuses every mutation itself).
    fn check_mutation(
        &mut self,
        op: &str,
        fd: &Resource<Descriptor>,
        rel: &str,
        follow: bool,
        access: FsAccess,
    ) -> FsResult<()> {
        if self.guard.rules.policies.is_empty() {
            return Ok(());
        }
        let Some(dir) = self.writable_dir_now(fd)? else { return Ok(()) };
        let target = resolve_at(&dir, rel, follow);
        self.check(op, &target, access)
    }

    /// The real path of a directory descriptor asked of the kernel now (without procfs, the
    /// path resolved when it was opened), or `None` when it is read-only (wasmtime-wasi refuses
    /// every mutation there itself). For mutations: nothing the call remembers vouches for one.
    fn writable_dir_now(&mut self, fd: &Resource<Descriptor>) -> FsResult<Option<PathBuf>> {
        let d = match self.inner.table.get(fd)? {
            Descriptor::Dir(d) => d,
            Descriptor::File(_) => return Err(ErrorCode::NotDirectory.into()),
        };
        if d.perms.write_not_permitted() {
            return Ok(None);
        }
        let path = if self.guard.procfs {
            fd_path(&d.dir, true)
        } else {
            self.guard.dirs.get(&fd.rep()).map(|p| p.to_path_buf())
        };
        // Fail closed: a directory whose path is unknown is refused, not unchecked.
        path.map(Some).ok_or_else(|| ErrorCode::Access.into())
    }

    /// Check a link whose real path is `link` and whose text is `target`, as a link made there
    /// now: where it leads is judged as written to, since whoever follows it later (a person,
    /// another program) would write there.
    fn check_link_target(&mut self, op: &str, link: &Path, target: &Path) -> FsResult<()> {
        let leads_to = link_leads_to(link, target);
        self.check(op, &leads_to, FsAccess::Write)
    }

    /// [`GuardedFs::check_link_target`] of a link moved from `from` to `to`, unless it leads
    /// to the same place from both (nothing new is reachable through it: a link made outside
    /// toolhost keeps being judged on each use).
    fn check_moved_link(&mut self, op: &str, from: &Path, to: &Path, target: &Path) -> FsResult<()> {
        let leads_to = link_leads_to(to, target);
        if leads_to == link_leads_to(from, target) {
            return Ok(());
        }
        self.check(op, &leads_to, FsAccess::Write)
    }

    /// Check the links a rename of `from` to `to` (real paths, neither followed) moves: a
    /// relative link keeps its text and starts from its new directory. A link itself is
    /// judged at `to`; inside a directory, the links whose text climbs out of it with `..`
    /// (the others move with what they lead to), at most [`MAX_MOVED_ENTRIES`] entries.
    fn check_moved_links(&mut self, from: &Path, to: &Path) -> FsResult<()> {
        let Ok(meta) = std::fs::symlink_metadata(from) else { return Ok(()) };
        if meta.file_type().is_symlink() {
            return match std::fs::read_link(from) {
                Ok(target) if target.is_relative() => self.check_moved_link("rename of a link to", from, to, &target),
                _ => Ok(()),
            };
        }
        if !meta.is_dir() {
            return Ok(());
        }
        let mut pending = vec![from.to_path_buf()];
        let mut seen = 0usize;
        while let Some(dir) = pending.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries.flatten() {
                seen += 1;
                if seen > MAX_MOVED_ENTRIES {
                    let refusal = FsRefusal::Unchecked {
                        path: from.to_path_buf(),
                        why: format!(
                            "it holds more than {MAX_MOVED_ENTRIES} entries, too many to check the links it moves"
                        ),
                    };
                    return Err(self.refuse("rename from", refusal));
                }
                let Ok(kind) = entry.file_type() else { continue };
                let path = entry.path();
                if kind.is_dir() {
                    pending.push(path);
                } else if kind.is_symlink()
                    && let Ok(target) = std::fs::read_link(&path)
                    && target.components().any(|c| c == Component::ParentDir)
                    && let Ok(inside) = path.strip_prefix(from)
                {
                    self.check_moved_link("move of a link to", &path, &to.join(inside), &target)?;
                }
            }
        }
        Ok(())
    }

    /// Check a read of `rel` beneath `fd`, when reads can be refused at all.
    fn check_read(&mut self, op: &str, fd: &Resource<Descriptor>, rel: &str, follow: bool) -> FsResult<()> {
        if !self.guard.rules.check_reads || self.guard.last_read.is(fd.rep(), rel, follow) {
            return Ok(());
        }
        if let Some((parent, name)) = self.known_target(fd, rel, follow)? {
            self.check_read_in(op, &parent, name)?;
        } else {
            let (dir, _) = self.dir_of(fd)?;
            let target = if names_itself(rel) { dir.to_path_buf() } else { self.resolve(&dir, rel, follow) };
            self.check_read_of(op, &target)?;
        }
        self.guard.last_read.set(fd.rep(), rel, follow);
        Ok(())
    }
}

impl preopens::Host for GuardedFs<'_> {
    fn get_directories(&mut self) -> wasmtime::Result<Vec<(Resource<Descriptor>, String)>> {
        let preopens = self.guard.preopens.clone();
        let mut out = Vec::with_capacity(preopens.len());
        for p in preopens.iter() {
            let handle = p.handle.try_clone()?;
            let (perms, mode) = if p.writable && !self.guard.read_only {
                (FsPerms::ReadWrite, OpenMode::READ | OpenMode::WRITE)
            } else {
                (FsPerms::ReadOnly, OpenMode::READ)
            };
            // File operations are short; running them on the calling thread is several times
            // cheaper than a blocking pool (as for every other WASI context here).
            let fd = self.inner.table.push(Descriptor::Dir(Dir::new(handle, perms, mode, true)))?;
            if !self.guard.procfs {
                self.guard.dirs.insert(fd.rep(), p.host.as_path().into());
            }
            out.push((fd, p.guest.clone()));
        }
        Ok(out)
    }
}

impl types::Host for GuardedFs<'_> {
    fn convert_error_code(&mut self, err: FsError) -> wasmtime::Result<ErrorCode> {
        types::Host::convert_error_code(&mut self.inner, err)
    }

    fn filesystem_error_code(&mut self, err: Resource<wasmtime::Error>) -> wasmtime::Result<Option<ErrorCode>> {
        types::Host::filesystem_error_code(&mut self.inner, err)
    }
}

impl HostDescriptor for GuardedFs<'_> {
    async fn advise(
        &mut self,
        fd: Resource<Descriptor>,
        offset: types::Filesize,
        len: types::Filesize,
        advice: types::Advice,
    ) -> FsResult<()> {
        self.inner.advise(fd, offset, len, advice).await
    }

    async fn sync_data(&mut self, fd: Resource<Descriptor>) -> FsResult<()> {
        self.inner.sync_data(fd).await
    }

    async fn get_flags(&mut self, fd: Resource<Descriptor>) -> FsResult<DescriptorFlags> {
        self.inner.get_flags(fd).await
    }

    async fn get_type(&mut self, fd: Resource<Descriptor>) -> FsResult<DescriptorType> {
        self.inner.get_type(fd).await
    }

    async fn set_size(&mut self, fd: Resource<Descriptor>, size: types::Filesize) -> FsResult<()> {
        self.inner.set_size(fd, size).await
    }

    async fn set_times(
        &mut self,
        fd: Resource<Descriptor>,
        atim: types::NewTimestamp,
        mtim: types::NewTimestamp,
    ) -> FsResult<()> {
        self.inner.set_times(fd, atim, mtim).await
    }

    async fn read(
        &mut self,
        fd: Resource<Descriptor>,
        len: types::Filesize,
        offset: types::Filesize,
    ) -> FsResult<(Vec<u8>, bool)> {
        self.inner.read(fd, len, offset).await
    }

    async fn write(
        &mut self,
        fd: Resource<Descriptor>,
        buf: Vec<u8>,
        offset: types::Filesize,
    ) -> FsResult<types::Filesize> {
        self.inner.write(fd, buf, offset).await
    }

    async fn read_directory(&mut self, fd: Resource<Descriptor>) -> FsResult<Resource<types::DirectoryEntryStream>> {
        let dir = if self.guard.rules.check_reads { Some(self.dir_of(&fd)?.0) } else { None };
        let listed = fd.rep();
        let stream = self.inner.read_directory(fd).await?;
        if let Some(dir) = dir {
            let all_readable = !self.refusable_beneath(&dir);
            let listing =
                Listing { fd: Some(listed), dir, all_readable, links: false, generation: self.guard.generation };
            self.guard.streams.insert(stream.rep(), listing);
        }
        Ok(stream)
    }

    async fn sync(&mut self, fd: Resource<Descriptor>) -> FsResult<()> {
        self.inner.sync(fd).await
    }

    async fn create_directory_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        self.check_mutation("create directory", &fd, &path, false, FsAccess::Write)?;
        self.tree_changes();
        self.inner.create_directory_at(fd, path).await
    }

    async fn stat(&mut self, fd: Resource<Descriptor>) -> FsResult<types::DescriptorStat> {
        self.inner.stat(fd).await
    }

    async fn stat_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: PathFlags,
        path: String,
    ) -> FsResult<types::DescriptorStat> {
        self.check_read("stat", &fd, &path, path_flags.contains(PathFlags::SYMLINK_FOLLOW))?;
        self.inner.stat_at(fd, path_flags, path).await
    }

    async fn set_times_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: PathFlags,
        path: String,
        atim: types::NewTimestamp,
        mtim: types::NewTimestamp,
    ) -> FsResult<()> {
        let follow = path_flags.contains(PathFlags::SYMLINK_FOLLOW);
        self.check_mutation("set times", &fd, &path, follow, FsAccess::Write)?;
        self.inner.set_times_at(fd, path_flags, path, atim, mtim).await
    }

    async fn link_at(
        &mut self,
        fd: Resource<Descriptor>,
        old_path_flags: PathFlags,
        old_path: String,
        new_descriptor: Resource<Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        if !self.guard.rules.policies.is_empty()
            && let Some(new_dir) = self.writable_dir_now(&new_descriptor)?
        {
            // A second name for a file is a way to write it: the source counts as written.
            let old_dir = self.writable_dir_now(&fd)?.ok_or(ErrorCode::NotPermitted)?;
            let follow = old_path_flags.contains(PathFlags::SYMLINK_FOLLOW);
            let source = resolve_at(&old_dir, &old_path, follow);
            self.check("hard link from", &source, FsAccess::Write)?;
            let dest = resolve_at(&new_dir, &new_path, false);
            self.check("hard link at", &dest, FsAccess::Write)?;
            // A hard link of a symlink is a new symlink: its target, if relative, now starts
            // from the new directory, and is judged from there as a symlink made there is.
            if let Ok(target) = std::fs::read_link(&source) {
                self.check_link_target("hard link to", &dest, &target)?;
            }
        }
        // A new name may be a link: everything learned of the tree is stale.
        self.tree_changes();
        self.inner.link_at(fd, old_path_flags, old_path, new_descriptor, new_path).await
    }

    async fn open_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: PathFlags,
        path: String,
        oflags: OpenFlags,
        flags: DescriptorFlags,
    ) -> FsResult<Resource<Descriptor>> {
        if self.guard.rules.policies.is_empty() {
            return self.inner.open_at(fd, path_flags, path, oflags, flags).await;
        }
        let follow = path_flags.contains(PathFlags::SYMLINK_FOLLOW);
        let mutates = flags.intersects(DescriptorFlags::WRITE | DescriptorFlags::MUTATE_DIRECTORY)
            || oflags.intersects(OpenFlags::CREATE | OpenFlags::TRUNCATE);
        let write_check = mutates && self.writable(&fd)?;
        if oflags.contains(OpenFlags::CREATE) {
            self.created();
        }
        if !write_check && !self.guard.rules.check_reads && self.guard.procfs {
            // A read no rule can refuse: nothing to check (the common case costs nothing).
            return self.inner.open_at(fd, path_flags, path, oflags, flags).await;
        }
        if !write_check && self.guard.procfs && self.guard.last_read.is(fd.rep(), &path, follow) {
            // Checked a moment ago (a stat before the open), and nothing in the tree changed
            // since (every change forgets it): the open reaches what was checked.
            return self.inner.open_at(fd, path_flags, path, oflags, flags).await;
        }
        if !write_check && let Some((parent, name)) = self.known_target(&fd, &path, follow)? {
            // A read of a path known exactly (its directory was listed without a link).
            self.check_read_in("read", &parent, name)?;
            let real = parent.real.join(name);
            return self.open_checked(fd, path_flags, path, oflags, flags, real).await;
        }
        let (dir, _) = self.dir_of(&fd)?;
        if !write_check && self.guard.rules.check_reads {
            let (target, exact) =
                if names_itself(&path) { (dir.to_path_buf(), true) } else { self.resolve_exact(&dir, &path, follow) };
            if exact {
                // The last name is no link (an `lstat` says so).
                self.check_read_of("read", &target)?;
                return self.open_checked(fd, path_flags, path, oflags, flags, target).await;
            }
        }
        if write_check && let Some(now) = self.writable_dir_now(&fd)? {
            // Before, by the path the kernel will use now (a create or truncate cannot be
            // undone).
            let target = resolve_at(&now, &path, follow);
            self.check("write", &target, FsAccess::Write)?;
        }
        let opened = self.inner.open_at(fd, path_flags, path.clone(), oflags, flags).await?;
        // After: what was really opened, whatever links led there.
        let real = fd_path(descriptor_file(self.inner.table.get(&opened)?), self.guard.procfs)
            .unwrap_or_else(|| resolve_at(&dir, &path, follow));
        let access = if write_check { FsAccess::Write } else { FsAccess::Read };
        if (write_check || self.guard.rules.check_reads)
            && let Err(r) = self.guard.rules.check(&real, access, &self.guard.approved)
        {
            self.inner.table.delete(opened)?;
            return Err(self.refuse(if write_check { "write" } else { "read" }, r));
        }
        if matches!(self.inner.table.get(&opened)?, Descriptor::Dir(_)) {
            self.guard.dirs.insert(opened.rep(), real.into());
        }
        Ok(opened)
    }

    fn drop(&mut self, fd: Resource<Descriptor>) -> wasmtime::Result<()> {
        self.guard.dirs.remove(&fd.rep());
        self.guard.parents.remove(&fd.rep());
        if self.guard.last_read.fd == fd.rep() {
            self.guard.last_read.valid = false;
        }
        for listing in self.guard.streams.values_mut() {
            if listing.fd == Some(fd.rep()) {
                listing.fd = None;
            }
        }
        HostDescriptor::drop(&mut self.inner, fd)
    }

    async fn readlink_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<String> {
        self.check_read("read link", &fd, &path, false)?;
        self.inner.readlink_at(fd, path).await
    }

    async fn remove_directory_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        self.check_mutation("remove directory", &fd, &path, false, FsAccess::Replace)?;
        self.tree_changes();
        self.inner.remove_directory_at(fd, path).await
    }

    async fn rename_at(
        &mut self,
        fd: Resource<Descriptor>,
        old_path: String,
        new_fd: Resource<Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        if !self.guard.rules.policies.is_empty()
            && let (Some(old_dir), Some(new_dir)) = (self.writable_dir_now(&fd)?, self.writable_dir_now(&new_fd)?)
        {
            let from = resolve_at(&old_dir, &old_path, false);
            self.check("rename from", &from, FsAccess::Replace)?;
            let to = resolve_at(&new_dir, &new_path, false);
            self.check("rename to", &to, FsAccess::Replace)?;
            // Relative links keep their text and change their meaning when moved.
            self.check_moved_links(&from, &to)?;
        }
        self.tree_changes();
        self.inner.rename_at(fd, old_path, new_fd, new_path).await
    }

    async fn symlink_at(&mut self, fd: Resource<Descriptor>, src_path: String, dest_path: String) -> FsResult<()> {
        if !self.guard.rules.policies.is_empty()
            && let Some(dir) = self.writable_dir_now(&fd)?
        {
            let link = resolve_at(&dir, &dest_path, false);
            self.check("symlink at", &link, FsAccess::Write)?;
            self.check_link_target("symlink to", &link, Path::new(&src_path))?;
        }
        self.tree_changes();
        self.inner.symlink_at(fd, src_path, dest_path).await
    }

    async fn unlink_file_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        self.check_mutation("delete", &fd, &path, false, FsAccess::Replace)?;
        self.tree_changes();
        self.inner.unlink_file_at(fd, path).await
    }

    fn read_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
        offset: types::Filesize,
    ) -> FsResult<Resource<DynInputStream>> {
        self.inner.read_via_stream(fd, offset)
    }

    fn write_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
        offset: types::Filesize,
    ) -> FsResult<Resource<DynOutputStream>> {
        self.inner.write_via_stream(fd, offset)
    }

    fn append_via_stream(&mut self, fd: Resource<Descriptor>) -> FsResult<Resource<DynOutputStream>> {
        self.inner.append_via_stream(fd)
    }

    async fn is_same_object(&mut self, a: Resource<Descriptor>, b: Resource<Descriptor>) -> wasmtime::Result<bool> {
        self.inner.is_same_object(a, b).await
    }

    async fn metadata_hash(&mut self, fd: Resource<Descriptor>) -> FsResult<types::MetadataHashValue> {
        self.inner.metadata_hash(fd).await
    }

    async fn metadata_hash_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: PathFlags,
        path: String,
    ) -> FsResult<types::MetadataHashValue> {
        self.check_read("stat", &fd, &path, path_flags.contains(PathFlags::SYMLINK_FOLLOW))?;
        self.inner.metadata_hash_at(fd, path_flags, path).await
    }
}

impl HostDirectoryEntryStream for GuardedFs<'_> {
    async fn read_directory_entry(
        &mut self,
        stream: Resource<types::DirectoryEntryStream>,
    ) -> FsResult<Option<types::DirectoryEntry>> {
        loop {
            let entry = match self.inner.read_directory_entry(Resource::new_borrow(stream.rep())).await {
                Ok(Some(entry)) => entry,
                Ok(None) => {
                    if let Some(listing) = self.guard.streams.get(&stream.rep())
                        && !listing.links
                        && listing.generation == self.guard.generation
                    {
                        if self.guard.linkless.len() >= MAX_RESOLVED {
                            self.guard.linkless.clear();
                        }
                        self.guard.linkless.insert(listing.dir.clone());
                    }
                    return Ok(None);
                }
                // One name no WASI path can express must not end the listing: skip and count it.
                Err(e) if e.downcast_ref() == Some(&ErrorCode::IllegalByteSequence) => {
                    self.guard.skipped_names += 1;
                    // Unseen, so not known to be no link.
                    if let Some(listing) = self.guard.streams.get_mut(&stream.rep()) {
                        listing.links = true;
                    }
                    continue;
                }
                Err(e) => return Err(e),
            };
            if let Some(Listing { fd, dir, all_readable, links, .. }) = self.guard.streams.get_mut(&stream.rep()) {
                let fd = *fd;
                match entry.type_ {
                    DescriptorType::RegularFile => {}
                    DescriptorType::Directory => {
                        if self.guard.subdirs.len() >= MAX_RESOLVED {
                            // What `linkless` says rests on `subdirs` being whole.
                            self.guard.subdirs.clear();
                            self.guard.linkless.clear();
                            self.guard.generation += 1;
                        }
                        self.guard.subdirs.insert(dir.join(&entry.name));
                    }
                    _ => *links = true,
                }
                let link = entry.type_ == DescriptorType::SymbolicLink;
                if !*all_readable || link {
                    let path = dir.join(&entry.name);
                    // A link is listed only if what it leads to may be read.
                    let real = if link { std::fs::canonicalize(&path).unwrap_or(path) } else { path };
                    if self.guard.rules.check(&real, FsAccess::Read, &self.guard.approved).is_err() {
                        continue;
                    }
                }
                if !link && let Some(fd) = fd {
                    // What a stat of this entry by name, not followed, would check: C libraries
                    // ask one right after (`metadata-hash-at`, for the inode number).
                    self.guard.last_read.set(fd, &entry.name, false);
                }
            }
            return Ok(Some(entry));
        }
    }

    fn drop(&mut self, stream: Resource<types::DirectoryEntryStream>) -> wasmtime::Result<()> {
        self.guard.streams.remove(&stream.rep());
        HostDirectoryEntryStream::drop(&mut self.inner, stream)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolution_follows_links_only_where_the_operation_would() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("real")).unwrap();
        std::fs::write(root.join("real/file"), "x").unwrap();
        std::os::unix::fs::symlink("real", root.join("link")).unwrap();
        std::os::unix::fs::symlink("real/file", root.join("flink")).unwrap();
        // Intermediate links are always followed.
        assert_eq!(resolve_at(&root, "link/file", false), root.join("real/file"));
        // The last one only when asked.
        assert_eq!(resolve_at(&root, "flink", true), root.join("real/file"));
        assert_eq!(resolve_at(&root, "flink", false), root.join("flink"));
        // Not there yet: the parent's real path and the name as written.
        assert_eq!(resolve_at(&root, "link/new", true), root.join("real/new"));
        assert_eq!(resolve_at(&root, "link/../real/./x", false), root.join("real/x"));
        // Deeper than what exists: the deepest existing part's real path, then the rest.
        assert_eq!(resolve_at(&root, "link/a/b/c", false), root.join("real/a/b/c"));
        assert_eq!(resolve_at(&root, "link/a/b/c", true), root.join("real/a/b/c"));
    }
}
