//! The writer: temp files, the renames into place, and the fsyncs that make
//! each step durable before the next.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::os::fd::OwnedFd;
use std::path::Path;
use std::rc::Rc;

use gix::bstr::{BStr, BString, ByteSlice};
use gix::objs::tree::EntryKind;
use gix::ObjectId;
use rustix::fs::{AtFlags, Mode, RenameFlags};
use rustix::io::Errno;

use super::dirs::{Dirs, Disk};
use super::failure::{Failure, PathProblem};
use super::faults::Faults;
use super::hash::Hasher;
use super::journal::{append_phase, append_wrote_and_renaming, Item, Phase, Plan, Wrote};
use super::paths::{join, parents_and_self, split};

pub(super) struct Writer<'a> {
    pub(super) repo: &'a gix::Repository,
    pub(super) dirs: Dirs,
    pub(super) journal: &'a Path,
    pub(super) faults: &'a Faults,
    pub(super) renames: usize,
    /// Folders to fsync (repo-relative).
    pub(super) synced: BTreeSet<BString>,
}

/// Above this many files, one `syncfs` replaces per-file fsyncs.
const SYNCFS_ABOVE: usize = 64;

impl Writer<'_> {
    pub(super) fn run(&mut self, plan: &mut Plan) -> Result<(), Failure> {
        let wrote = self.temp_files(plan)?;
        for (i, w) in wrote {
            if let Some(it) = plan.items.get_mut(i) {
                it.wrote = Some(w);
            }
        }
        self.faults.hit("after-temp-files");
        // What each path will hold, durable before the first rename: what
        // rollback and recovery check before they move anything back.
        append_wrote_and_renaming(self.journal, plan)
            .map_err(|e| Failure::because(format!("cannot update the journal: {e}"), &e))?;
        plan.phase = Phase::Renaming;
        self.renames(plan)?;
        append_phase(self.journal, Phase::Committed)
            .map_err(|e| Failure::because(format!("cannot update the journal: {e}"), &e))?;
        plan.phase = Phase::Committed;
        Ok(())
    }

    /// Write every temp file; returns what each item puts at its path.
    fn temp_files(&mut self, plan: &Plan) -> Result<Vec<(usize, Wrote)>, Failure> {
        let mut hasher = Hasher::for_checkout(self.repo, &plan.items)?;
        let mkdirs: HashSet<&BStr> = plan.mkdirs.iter().map(|m| m.as_bstr()).collect();
        let count = plan.items.iter().filter(|i| i.temp.is_some()).count();
        let per_file = count <= SYNCFS_ABOVE;
        // Written first, fsync'd together afterwards: concurrent fsyncs
        // share the filesystem's journal commits.
        let mut to_sync: Vec<(std::fs::File, &BStr)> = Vec::new();
        let mut wrote: Vec<(usize, Wrote)> = Vec::with_capacity(plan.items.len());
        for (i, it) in plan.items.iter().enumerate() {
            Failure::if_interrupted()?;
            if it.new.is_none() {
                wrote.push((i, Wrote::Absent));
                continue;
            }
            let (Some(temp), Some((kind, id))) = (&it.temp, it.new) else {
                continue;
            };
            if it.early {
                let (parent, _) = split(it.path.as_bstr());
                self.ensure_dir(parent, &mkdirs)?;
            }
            let (tdir, _) = split(temp.as_bstr());
            let dfd = self
                .dirs
                .get(tdir)
                .map_err(|e| Failure::io("open the folder", tdir, e))?;
            if kind == EntryKind::Link && hasher.symlinks {
                wrote.push((i, self.temp_link(it, &dfd, temp, id)?));
            } else {
                let (file, w) = self.temp_file(&mut hasher, it, &dfd, temp, (kind, id))?;
                wrote.push((i, w));
                if per_file {
                    to_sync.push((file, temp.as_bstr()));
                }
            }
            self.synced.insert(tdir.into());
        }
        let fds: Vec<(&std::fs::File, &BStr)> = to_sync.iter().map(|(f, p)| (f, *p)).collect();
        fsync_all(&fds)?;
        drop(to_sync);
        self.sync_folders(!per_file)?;
        Ok(wrote)
    }

    /// Create the missing folders of `dir` (only those the journal lists).
    fn ensure_dir(&mut self, dir: &BStr, mkdirs: &HashSet<&BStr>) -> Result<(), Failure> {
        for p in parents_and_self(dir) {
            match self.dirs.lstat(p).map_err(|e| Failure::io("stat", p, e))? {
                Disk::Dir => {}
                Disk::Absent if mkdirs.contains(p) => {
                    let (pdir, name) = split(p);
                    let pfd = self
                        .dirs
                        .get(pdir)
                        .map_err(|e| Failure::io("open the folder", pdir, e))?;
                    match rustix::fs::mkdirat(&*pfd, name.as_bytes(), Mode::from_raw_mode(0o777)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(e) => return Err(Failure::io("create the folder", p, e)),
                    }
                    self.synced.insert(pdir.into());
                }
                Disk::Absent => return Err(Failure::path(p, PathProblem::Vanished)),
                _ => return Err(Failure::path(p, PathProblem::InTheWay)),
            }
        }
        Ok(())
    }

    fn rename(
        &mut self,
        from: &BStr,
        to: &BStr,
        what: &'static str,
        about: &BStr,
    ) -> Result<(), Failure> {
        // design §7 "Signals": before the commit point, a signal rolls back.
        Failure::if_interrupted()?;
        self.renames += 1;
        self.faults
            .fail_rename(self.renames)
            .map_err(|e| Failure::io(what, about, e))?;
        let (fdir, fname) = split(from);
        let (tdir, tname) = split(to);
        let ffd = self
            .dirs
            .get(fdir)
            .map_err(|e| Failure::io("open the folder", fdir, e))?;
        let tfd = self
            .dirs
            .get(tdir)
            .map_err(|e| Failure::io("open the folder", tdir, e))?;
        rename_noreplace(&ffd, fname.as_bytes(), &tfd, tname.as_bytes())
            .map_err(|e| Failure::io(what, about, e))?;
        self.dirs.forget(from);
        self.dirs.forget(to);
        self.synced.insert(fdir.into());
        self.synced.insert(tdir.into());
        self.faults.after_rename(self.renames);
        Ok(())
    }

    fn renames(&mut self, plan: &Plan) -> Result<(), Failure> {
        let mut hasher = Hasher::new(self.repo)?;
        let mkdirs: HashSet<&BStr> = plan.mkdirs.iter().map(|m| m.as_bstr()).collect();
        let covered: HashMap<&BStr, (EntryKind, ObjectId)> = plan
            .items
            .iter()
            .filter(|i| i.covered)
            .filter_map(|i| i.old.map(|o| (i.path.as_bstr(), o)))
            .collect();
        // Folders standing where the result puts a file: aside whole, then verified.
        for it in plan.items.iter().filter(|i| i.aside_folder) {
            let Some(aside) = &it.aside else { continue };
            let path = it.path.as_bstr();
            if self
                .dirs
                .lstat(path)
                .map_err(|e| Failure::io("stat", path, e))?
                != Disk::Dir
            {
                return Err(changed(path));
            }
            self.rename(path, aside.as_bstr(), "move aside", path)?;
            self.verify_folder(&mut hasher, aside.as_bstr(), path, &covered)?;
        }
        let (attrs, rest): (Vec<&Item>, Vec<&Item>) = plan
            .items
            .iter()
            .filter(|i| !i.covered || i.new.is_some())
            .partition(|i| split(i.path.as_bstr()).1 == ".gitattributes");
        for it in rest.into_iter().chain(attrs) {
            let path = it.path.as_bstr();
            if let (Some(s), false, false) = (it.old, it.covered, it.aside_folder) {
                let Some(aside) = &it.aside else { continue };
                // Stat check, move aside, then the content check on the aside.
                let disk = self
                    .dirs
                    .lstat(path)
                    .map_err(|e| Failure::io("stat", path, e))?;
                if !hasher.kind_matches(disk, s.0) {
                    return Err(changed(path));
                }
                self.rename(path, aside.as_bstr(), "move aside", path)?;
                let (adir, aname) = split(aside.as_bstr());
                let afd = self
                    .dirs
                    .get(adir)
                    .map_err(|e| Failure::io("open the folder", adir, e))?;
                if !hasher.matches(&afd, aname, path, s)? {
                    return Err(changed(path));
                }
            }
            if let (Some(temp), Some(_)) = (&it.temp, it.new) {
                let (parent, _) = split(path);
                self.ensure_dir(parent, &mkdirs)?;
                self.rename(temp.as_bstr(), path, "write", path)?;
            }
        }
        let all = self.renames > SYNCFS_ABOVE;
        self.sync_folders(all)
    }

    /// The content of a folder moved aside: only `S` paths the result
    /// deletes, unchanged, and empty folders.
    fn verify_folder(
        &mut self,
        hasher: &mut Hasher<'_>,
        aside: &BStr,
        path: &BStr,
        covered: &HashMap<&BStr, (EntryKind, ObjectId)>,
    ) -> Result<(), Failure> {
        let mut stack: Vec<BString> = vec![BString::default()];
        while let Some(rel) = stack.pop() {
            let here = if rel.is_empty() {
                BString::from(aside)
            } else {
                join(aside, rel.as_bstr())
            };
            let entries = self
                .dirs
                .list(here.as_bstr())
                .map_err(|e| Failure::io("read", here.as_bstr(), e))?;
            let dfd = self
                .dirs
                .get(here.as_bstr())
                .map_err(|e| Failure::io("open the folder", here.as_bstr(), e))?;
            for (name, kind) in entries {
                let sub = if rel.is_empty() {
                    name.clone()
                } else {
                    join(rel.as_bstr(), name.as_bstr())
                };
                let original = join(path, sub.as_bstr());
                if kind == Disk::Dir {
                    stack.push(sub);
                    continue;
                }
                match covered.get(original.as_bstr()) {
                    Some(&s) if hasher.matches(&dfd, name.as_bstr(), original.as_bstr(), s)? => {}
                    Some(_) => return Err(changed(original.as_bstr())),
                    None => return Err(Failure::path(original.as_bstr(), PathProblem::Appeared)),
                }
            }
        }
        Ok(())
    }

    /// fsync the recorded folders, or the whole filesystem when there are many.
    fn sync_folders(&mut self, whole_fs: bool) -> Result<(), Failure> {
        let folders = std::mem::take(&mut self.synced);
        if whole_fs || folders.len() > SYNCFS_ABOVE {
            let root = self.dirs.root.clone();
            return rustix::fs::syncfs(&*root).map_err(|e| Failure::io("sync", b"".as_bstr(), e));
        }
        let mut fds: Vec<(Rc<OwnedFd>, &BStr)> = Vec::with_capacity(folders.len());
        for f in &folders {
            let fd = self
                .dirs
                .get(f.as_bstr())
                .map_err(|e| Failure::io("open the folder", f.as_bstr(), e))?;
            fds.push((fd, f.as_bstr()));
        }
        let refs: Vec<(&OwnedFd, &BStr)> = fds.iter().map(|(fd, p)| (&**fd, *p)).collect();
        fsync_all(&refs)
    }
}

/// fsync every descriptor, several at once: concurrent fsyncs are served by
/// shared journal commits, where one after the other each waits for its own.
fn fsync_all<F: std::os::fd::AsFd + Sync>(fds: &[(F, &BStr)]) -> Result<(), Failure> {
    const THREADS: usize = 8;
    let one = |(fd, path): &(F, &BStr)| {
        rustix::fs::fsync(fd.as_fd()).map_err(|e| Failure::io("fsync", path, e))
    };
    if fds.len() <= 1 {
        return fds.iter().try_for_each(one);
    }
    let chunk = fds.len().div_ceil(THREADS);
    std::thread::scope(|s| {
        let handles: Vec<_> = fds
            .chunks(chunk)
            .map(|c| s.spawn(move || c.iter().try_for_each(one)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Failure::msg("an fsync thread stopped unexpectedly")))
            })
            .collect::<Result<Vec<()>, Failure>>()
    })?;
    Ok(())
}

/// fsync the folders a rollback or roll-forward touched (one `syncfs` when many).
pub(super) fn sync_touched(dirs: &mut Dirs, touched: BTreeSet<BString>) {
    if touched.len() > SYNCFS_ABOVE {
        let _ = rustix::fs::syncfs(&*dirs.root);
        return;
    }
    let fds: Vec<(Rc<OwnedFd>, &BStr)> = touched
        .iter()
        .filter_map(|t| Some((dirs.get(t.as_bstr()).ok()?, t.as_bstr())))
        .collect();
    let refs: Vec<(&OwnedFd, &BStr)> = fds.iter().map(|(fd, p)| (&**fd, *p)).collect();
    let _ = fsync_all(&refs);
}

/// The permission bits a file replacing one with `perm` gets (design §7
/// "Modes"): the same bits, unless the result's exec bit differs from the
/// `S` entry's; then the exec bits are set for `u` and wherever `r` is set
/// (as git does), or cleared. Set-id and sticky bits never carry over.
pub(super) fn result_perm(perm: u32, old: Option<(EntryKind, ObjectId)>, exec: bool) -> u32 {
    let perm = perm & 0o777;
    let was_exec = matches!(old, Some((EntryKind::BlobExecutable, _)));
    match (was_exec, exec) {
        (a, b) if a == b => perm,
        (_, true) => perm | 0o100 | ((perm & 0o444) >> 2),
        (_, false) => perm & !0o111,
    }
}

fn changed(path: &BStr) -> Failure {
    Failure::path(path, PathProblem::Changed)
}

pub(super) fn rename_noreplace(
    from_dir: &OwnedFd,
    from: &[u8],
    to_dir: &OwnedFd,
    to: &[u8],
) -> std::io::Result<()> {
    match rustix::fs::renameat_with(from_dir, from, to_dir, to, RenameFlags::NOREPLACE) {
        Ok(()) => Ok(()),
        Err(Errno::INVAL) | Err(Errno::NOSYS) => {
            // A filesystem without RENAME_NOREPLACE: check, then rename.
            match rustix::fs::statat(to_dir, to, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(_) => Err(Errno::EXIST.into()),
                Err(Errno::NOENT) => Ok(rustix::fs::renameat(from_dir, from, to_dir, to)?),
                Err(e) => Err(e.into()),
            }
        }
        Err(e) => Err(e.into()),
    }
}
