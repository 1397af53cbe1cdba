//! The guard's per-call memory: what one call learned of the tree (real paths of directories,
//! directories listed to the end without a link, names found missing, the last read checked),
//! so that a walk pays one resolution per directory rather than one per entry.
//!
//! Only reads use it. Every operation that changes the tree forgets it ([`GuardedFs::tree_changes`],
//! [`GuardedFs::created`]), and no mutation is judged by it (`checks.rs` asks the kernel again).

use super::GuardedFs;
use super::resolve::{fd_path, follow_final, follows_last, resolve_at, split_plain};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use wasmtime::component::Resource;
use wasmtime_wasi::filesystem::Descriptor;
use wasmtime_wasi::p2::FsResult;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    DescriptorFlags, ErrorCode, HostDescriptor as _, OpenFlags, PathFlags,
};

/// Directories remembered per call at most (a walk over a huge tree cannot grow it without end).
pub(super) const MAX_RESOLVED: usize = 4096;

/// What a listing checks: the listed directory's path, and whether its entries (other than
/// links) can all be read, which spares a check per entry; what it learns: whether any entry
/// may be a link, and (with `generation`) whether what it learned is still whole at its end.
#[derive(Debug)]
pub(super) struct Listing {
    /// The listed directory's descriptor (`None` once the guest dropped it: its number may
    /// name another directory since) and real path.
    pub(super) fd: Option<u32>,
    pub(super) dir: Arc<Path>,
    pub(super) all_readable: bool,
    pub(super) links: bool,
    /// [`super::FsGuard::generation`] when the listing started.
    pub(super) generation: u64,
}

/// A directory as the guard knows it: its real path, and whether some read beneath it may be
/// refused.
#[derive(Debug, Clone)]
pub(super) struct Parent {
    pub(super) real: Arc<Path>,
    pub(super) refusable: bool,
}

/// The arguments of the guest's `open-at` after its descriptor, as it sent them: what
/// [`GuardedFs::open_checked`] passes on (without following the last name).
pub(super) struct OpenAt {
    pub(super) path_flags: PathFlags,
    pub(super) path: String,
    pub(super) oflags: OpenFlags,
    pub(super) flags: DescriptorFlags,
}

/// The last read check passed: descriptor, whether the last name was followed, and the path
/// (its buffer reused, so remembering costs no allocation).
#[derive(Debug, Default)]
pub(super) struct LastRead {
    pub(super) valid: bool,
    pub(super) fd: u32,
    pub(super) follow: bool,
    pub(super) path: String,
}

impl LastRead {
    pub(super) fn is(&self, fd: u32, path: &str, follow: bool) -> bool {
        self.valid && self.fd == fd && self.follow == follow && self.path == path
    }

    pub(super) fn set(&mut self, fd: u32, path: &str, follow: bool) {
        self.valid = true;
        self.fd = fd;
        self.follow = follow;
        self.path.clear();
        self.path.push_str(path);
    }
}

impl GuardedFs<'_> {
    /// The real path of the directory at `path`, remembered for the call (and so is its
    /// absence).
    ///
    /// From its parent's real path (remembered, or found the same way) and one `lstat` when
    /// the last name is a plain directory; `realpath` (a `readlink` per component) only for a
    /// link, or a path with `.` or `..` in it.
    pub(super) fn real_dir(&mut self, path: &Path) -> Option<Arc<Path>> {
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
    /// of its deepest existing ancestor, then the rest as written ([`super::resolve::resolve_unfollowed`] with
    /// what the call remembers).
    pub(super) fn resolve_missing(&mut self, parent: &Path, name: &std::ffi::OsStr) -> PathBuf {
        for ancestor in parent.ancestors().skip(1) {
            if let Some(real) = self.real_dir(ancestor) {
                let rest = parent.strip_prefix(ancestor).unwrap_or(Path::new(""));
                return real.join(rest).join(name);
            }
        }
        parent.join(name)
    }

    /// Something may have been created: forget what was missing.
    pub(super) fn created(&mut self) {
        self.guard.missing.clear();
        self.guard.parents.clear();
        self.guard.last_read.valid = false;
    }

    /// [`resolve_at`] with the parent directory's real path remembered for the call.
    pub(super) fn resolve(&mut self, dir: &Path, rel: &str, follow: bool) -> PathBuf {
        self.resolve_exact(dir, rel, follow).0
    }

    /// [`GuardedFs::resolve`], and whether the path reached is known to be the one an
    /// operation on `rel` that does not follow its last name reaches (that name is no link, or
    /// not followed): then the operation can be checked before and done without following.
    pub(super) fn resolve_exact(&mut self, dir: &Path, rel: &str, follow: bool) -> (PathBuf, bool) {
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
    pub(super) fn parent(&mut self, fd: &Resource<Descriptor>, rel_parent: &str) -> FsResult<Option<Parent>> {
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
    pub(super) fn known_target<'r>(
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
    pub(super) fn refusable_beneath(&mut self, dir: &Path) -> bool {
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

    /// Forget resolved directories: the guest is changing the tree.
    pub(super) fn tree_changes(&mut self) {
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
    pub(super) async fn open_checked(
        &mut self,
        fd: Resource<Descriptor>,
        open: OpenAt,
        real: PathBuf,
    ) -> FsResult<Resource<Descriptor>> {
        let OpenAt { path_flags, path, oflags, flags } = open;
        let path_flags = path_flags & !PathFlags::SYMLINK_FOLLOW;
        let opened = self.inner.open_at(fd, path_flags, path, oflags, flags).await?;
        self.remember_dir(&opened, real)?;
        Ok(opened)
    }

    /// Remember `real` as the real path of `opened` if it is a directory (paths beneath it are
    /// resolved from there); a file needs no entry. For every open that the guard let through,
    /// whether it checked before or after.
    pub(super) fn remember_dir(&mut self, opened: &Resource<Descriptor>, real: PathBuf) -> FsResult<()> {
        if matches!(self.inner.table.get(opened)?, Descriptor::Dir(_)) {
            self.guard.dirs.insert(opened.rep(), real.into());
        }
        Ok(())
    }

    /// Whether a directory descriptor may be written.
    pub(super) fn writable(&self, fd: &Resource<Descriptor>) -> FsResult<bool> {
        match self.inner.table.get(fd)? {
            Descriptor::Dir(d) => Ok(!d.perms.write_not_permitted()),
            Descriptor::File(_) => Err(ErrorCode::NotDirectory.into()),
        }
    }

    /// The real path of a directory descriptor and whether it may be written.
    pub(super) fn dir_of(&mut self, fd: &Resource<Descriptor>) -> FsResult<(Arc<Path>, bool)> {
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
}
