//! Leftovers of this repository that no batch owns (design §3.4, §3.18
//! "Leftovers"): verification workspaces a killed apply left, registrations
//! whose folder is gone, empty folders under `<root>/<repo-name>-<fp>/`
//! (any other folder there is reported, never removed), refs
//! under `refs/pi-delegate`, kept patches past `gc.keep-failed`, hidden
//! folders and old temporary files in the state folder.
//! Never: removes a folder git has registered as a worktree, a folder that
//! holds anything, or anything a live batch owns; signals anyone.

use std::collections::HashSet;

use crate::error::Result;
use crate::git::refs;

use crate::record::batch::{self};
use crate::record::kept;

use super::{is_registered_worktree, Gc, Owners, Skipped};

impl Gc<'_> {
    /// Verification workspaces no apply runs in (design §3.10): what an
    /// apply killed while verifying left, of any batch (a batch that is
    /// gone too) but one being verified now or one whose record cannot be
    /// read. Removed while nothing runs inside; otherwise left in place and
    /// reported in `skipped` (gc never signals anyone).
    pub(super) fn leftover_verifications(&mut self, broken: &[String]) {
        let state = self.state_dir.clone();
        let of =
            |id: &str| !broken.iter().any(|b| b == id) && !crate::record::busy::is_busy(&state, id);
        let swept = crate::ops::verify::remove_leftovers(
            self.source,
            &of,
            crate::ops::verify::Processes::Leave,
            self.dry_run,
        );
        self.report.workspaces_removed += swept.removed.len();
        self.report.registrations_removed += swept.registrations;
        self.report.bytes_freed += swept.bytes;
        self.report.refs_removed += swept.refs.len();
        self.handled_refs.extend(swept.refs);
        self.handled_roots.extend(swept.removed);
        for (batch, root, pids) in swept.in_use {
            let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
            self.report.skipped.push(Skipped {
                message: format!(
                    "batch {}: processes still run inside its verification workspace {} (pid {}), left by an `apply --verify` that was killed; stop them, then run `git delegate gc` again",
                    batch::short(&batch),
                    root.display(),
                    pids.join(", ")
                ),
                batch,
            });
            self.handled_roots.insert(root);
        }
    }

    /// Registrations of ours (`delegate-*`) whose folder is gone and that no batch owns.
    pub(super) fn leftover_registrations(&mut self, owners: &Owners) -> Result<()> {
        let base = self.source.workspace_base().ok();
        for dead in
            crate::workspace::leftover::dead_registrations(&self.source.common_dir, base.as_deref())
        {
            if self.handled_regs.contains(&dead.id) || owners.owns_registration(&dead.id) {
                continue;
            }
            self.report.bytes_freed += crate::sys::fs::tree_size(&dead.path);
            if !self.dry_run {
                crate::sys::fs::remove_all(&dead.path)?;
            }
            self.report.registrations_removed += 1;
        }
        Ok(())
    }

    /// Folders `<base>/<batch-short>/<task>` that no batch owns and git
    /// has not registered: only an empty one is removed (a prepare that
    /// died before writing its `.git`); anything else there is not proven
    /// to be a workspace of ours whose work is applied, kept or rescued (a
    /// task folder renamed, a batch folder moved aside, the folder of a
    /// batch whose state was lost), so it is left and reported (design
    /// §3.18 "Never delete what is not proven ours and empty of work").
    /// Every folder is reached through the handle of the one above, never
    /// through a symlink and only when ours (design §3.18); what is
    /// refused is reported (`unsafe_folders`) and never entered, and a
    /// leftover goes through the handle that was checked. Workspaces a
    /// killed command left aside in the trash, which the next command puts
    /// back, are reported while they cannot go back.
    pub(super) fn leftover_folders(&mut self, owners: &Owners) -> Result<()> {
        use crate::workspace::shared_root::Opened;
        let Ok(base_path) = self.source.workspace_base() else {
            return Ok(());
        };
        let base = match crate::workspace::shared_root::open_base(&base_path) {
            Ok(Opened::Ours(b)) => b,
            Ok(Opened::Refused(r)) => {
                self.refused(r);
                return Ok(());
            }
            Ok(Opened::Missing) | Err(_) => return Ok(()),
        };
        for short in base.dir.names() {
            let short_dir = base_path.join(&short);
            if short == crate::workspace::trash::TRASH {
                // Workspaces apply removed, left by a killed background
                // deleter. A deleter still at work is waited for, so the
                // trash is gone when gc returns.
                if let Ok(Opened::Refused(r)) = base.dir.child(&short) {
                    self.refused(r);
                    continue;
                }
                if let Some(p) =
                    crate::workspace::trash::purge(&short_dir, true, self.dry_run, true)
                {
                    self.report.workspaces_removed += p.entries;
                    self.report.bytes_freed += p.bytes;
                }
                for left in crate::workspace::aside::left_aside(&base_path) {
                    // (The dry run's: put back first by the real run.)
                    if !self.restored.iter().any(|(_, a)| a == &left.path) {
                        self.left_alone(left.path);
                    }
                }
                continue;
            }
            if owners.owns_short(&short.to_string_lossy()) {
                continue;
            }
            let Some(batch) = self.folder(base.dir.child(&short)) else {
                continue;
            };
            for task in batch.names() {
                let root = short_dir.join(&task);
                if self.handled_roots.contains(&root) || owners.owns_root(&root) {
                    continue;
                }
                let Some(ws) = self.folder(batch.child(&task)) else {
                    continue;
                };
                if is_registered_worktree(&root) {
                    continue;
                }
                if !ws.is_empty() {
                    self.left_alone(root);
                    continue;
                }
                crate::sys::interrupt::pause("gc-leftover-checked");
                if !self.dry_run {
                    batch.remove_child(&task, ws.into_fd())?;
                }
                self.report.workspaces_removed += 1;
            }
            if !self.dry_run {
                base.dir.remove_child_if_empty(&short);
            }
        }
        if !self.dry_run {
            base.remove_if_empty();
        }
        Ok(())
    }

    /// Report a folder left alone (once).
    fn left_alone(&mut self, path: std::path::PathBuf) {
        if !self.report.left_alone.contains(&path) {
            self.report.left_alone.push(path);
        }
    }

    /// The child folder `opened`, when it is one of ours (held open). One
    /// refused is reported, but a file: it is no folder of ours, not looked at.
    fn folder<E>(
        &mut self,
        opened: std::result::Result<
            crate::workspace::shared_root::Opened<crate::workspace::shared_root::Dir>,
            E,
        >,
    ) -> Option<crate::workspace::shared_root::Dir> {
        use crate::workspace::shared_root::{Opened, Reason};
        match opened {
            Ok(Opened::Ours(d)) => Some(d),
            Ok(Opened::Refused(r)) if r.reason != Reason::NotAFolder => {
                self.refused(r);
                None
            }
            _ => None,
        }
    }

    /// Report a folder below the workspace root that was refused (once).
    pub(super) fn refused(&mut self, r: crate::workspace::shared_root::Refused) {
        crate::workspace::shared_root::note(&mut self.report.unsafe_folders, r);
    }

    /// Refs under refs/pi-delegate that no batch owns, once their commit is
    /// older than `gc.keep-failed`.
    pub(super) fn leftover_refs(&mut self, owners: &Owners) -> Result<()> {
        let now = crate::sys::time::now();
        let keep = self.source.config.keep_failed_secs;
        for (name, id) in refs::list(&self.source.repo)? {
            if self.handled_refs.contains(&name) || owners.owns_ref(&name) {
                continue;
            }
            // An undo entry's refs go with the entry (`undo::prune`).
            if crate::ops::undo::owns_ref(&self.state_dir, &name) {
                continue;
            }
            let Some(when) = kept::commit_time(&self.source.repo, id) else {
                continue; // not a commit: no clock, left alone
            };
            if now.saturating_sub(when) < keep {
                continue;
            }
            if self.dry_run || refs::delete(&self.source.repo, &name)? {
                self.report.refs_removed += 1;
            }
            self.handled_refs.insert(name);
        }
        Ok(())
    }

    /// Kept patches whose proposal ref is gone (or goes in this run).
    pub(super) fn leftover_patches(&mut self) -> Result<()> {
        let kept = kept::kept_dir(&self.state_dir);
        let Ok(batches) = std::fs::read_dir(&kept) else {
            return Ok(());
        };
        let existing: HashSet<String> = refs::list(&self.source.repo)?
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        let removed_now = |name: &String| {
            self.handled_refs.contains(name) && !self.report.refs_kept.contains(name)
        };
        let mut freed = 0;
        for b in batches.flatten() {
            let id = b.file_name().to_string_lossy().into_owned();
            let Ok(files) = std::fs::read_dir(b.path()) else {
                continue;
            };
            for f in files.flatten() {
                let file = f.file_name().to_string_lossy().into_owned();
                let Some(task) = file.strip_suffix(".patch") else {
                    continue;
                };
                let name = refs::proposal(&id, task);
                if existing.contains(&name) && !removed_now(&name) {
                    continue;
                }
                freed += crate::sys::fs::tree_size(&f.path());
                if !self.dry_run {
                    crate::sys::fs::remove_all(&f.path())?;
                }
            }
            if !self.dry_run {
                let _ = std::fs::remove_dir(b.path());
            }
        }
        if !self.dry_run {
            let _ = std::fs::remove_dir(&kept);
        }
        self.report.bytes_freed += freed;
        Ok(())
    }
}

impl Gc<'_> {
    /// Hidden folders in the state folder that killed commands leave: a
    /// prepare's `.<id>.new` (its batch recorded before the rename that
    /// makes it appear; nothing else was made yet, see `preparing::record`)
    /// and a removal's `.<id>.removed-<pid>` (see `batch::remove_state`).
    /// Both are made and removed under the repository lock, which gc holds.
    pub(super) fn leftover_hidden_state(&mut self) {
        let dir = batch::batches_dir(&self.state_dir);
        let Ok(rd) = std::fs::read_dir(&dir) else {
            return;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(rest) = name.strip_prefix('.') else {
                continue;
            };
            if !(rest.ends_with(".new") || rest.contains(".removed-")) {
                continue;
            }
            self.report.bytes_freed += crate::sys::fs::tree_size(&e.path());
            if !self.dry_run {
                // Best effort: what is left stays hidden and is tried again.
                let _ = crate::sys::fs::remove_all(&e.path());
            }
        }
    }
}

impl Gc<'_> {
    /// Temporary files a killed command left in the state folder, older
    /// than an hour (`problems::old_temp_files`, which `status` reports):
    /// made under the repository lock, which gc holds, or by a command
    /// whose last write is that old.
    pub(super) fn leftover_temp_files(&mut self) {
        for (_, t) in crate::ops::problems::old_temp_files(&self.state_dir) {
            // Best effort: one that cannot be removed is reported again.
            if self.dry_run || crate::sys::fs::remove_file(&t.path).is_ok() {
                self.report.bytes_freed += t.bytes;
                self.report.temp_files_removed.push(t.path);
            }
        }
    }
}
