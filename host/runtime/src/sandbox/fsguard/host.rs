//! The guarded `wasi:filesystem` host traits: each operation checked (`checks.rs`), then
//! handed to wasmtime-wasi's own implementation; what it teaches the call's memory is noted.

use super::GuardedFs;
use super::memory::{Listing, MAX_RESOLVED, OpenAt};
use super::resolve::{fd_path, names_itself, resolve_at};
use std::path::Path;
use toolhost_policy::FsAccess;
use wasmtime::component::Resource;
use wasmtime_wasi::filesystem::{Descriptor, Dir};
use wasmtime_wasi::p2::bindings::filesystem::preopens;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    self, DescriptorFlags, DescriptorType, ErrorCode, HostDescriptor, HostDirectoryEntryStream, OpenFlags, PathFlags,
};
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream, FsError, FsResult};
use wasmtime_wasi::{FsPerms, OpenMode};

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
            return self.open_checked(fd, OpenAt { path_flags, path, oflags, flags }, real).await;
        }
        let (dir, _) = self.dir_of(&fd)?;
        if !write_check && self.guard.rules.check_reads {
            let (target, exact) =
                if names_itself(&path) { (dir.to_path_buf(), true) } else { self.resolve_exact(&dir, &path, follow) };
            if exact {
                // The last name is no link (an `lstat` says so).
                self.check_read_of("read", &target)?;
                return self.open_checked(fd, OpenAt { path_flags, path, oflags, flags }, target).await;
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
        self.remember_dir(&opened, real)?;
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

fn descriptor_file(d: &Descriptor) -> &std::fs::File {
    match d {
        Descriptor::Dir(d) => &d.dir,
        Descriptor::File(f) => &f.file,
    }
}
