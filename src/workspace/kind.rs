//! The kinds of workspace (design §3.2 "Workspaces", `--mode`): a linked
//! worktree registered in the source repository, or a scratch copy of the
//! whole source holding its own repository. [`Kind`] is the one place
//! that tells them apart: every question the layers above ask about a
//! batch's or a task's workspace (does it carry ignored files, narrow to
//! sparse folders, serve the pool, share the source's git folder, have a
//! registration and a private object folder, send its edits back, which
//! repository it holds) and the
//! steps that differ by kind (the preflight, placing the planned roots,
//! removing what an unfinished prepare made, the folders a contained
//! worker may write) are answered here, by one `match` each. A new kind
//! is added here and in the modules that make it; `ops/` asks, never
//! matches.
//!
//! Owns: the mapping from `config::Mode` (the recorded word) to what a
//! kind of workspace can do, and the dispatch of the kind-dependent steps
//! to `scratch` or to the worktree steps of this folder.
//! Never: makes, proves or removes a workspace itself (the steps it
//! dispatches to do), or reads anything but the task or batch it is given.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use crate::config::Mode;
use crate::git::repo::Source;
use crate::record::batch::{Batch, Task};
use crate::workspace::{Plan, Removal, WorkspaceError};

/// A kind of workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind(Mode);

impl From<Mode> for Kind {
    fn from(mode: Mode) -> Kind {
        Kind(mode)
    }
}

impl Kind {
    /// The kind of a batch's workspaces (`--mode`, recorded).
    pub fn of_batch(b: &Batch) -> Kind {
        Kind(b.mode)
    }

    /// The kind of a task's workspace (from its worktree id).
    pub fn of_task(t: &Task) -> Kind {
        Kind(t.kind())
    }

    /// The kind of the workspace with the worktree id `id`.
    pub fn of_worktree_id(id: &str) -> Kind {
        Kind(crate::record::batch::kind_of(id))
    }

    /// The word recorded in `batch.toml` and shown.
    pub fn mode(self) -> Mode {
        self.0
    }

    /// Registered in the source repository (`<common-dir>/worktrees/<id>`),
    /// identified through its `.git` file pointing back there, with a
    /// private object folder in its registration; otherwise it holds its
    /// own repository and is identified by its marker.
    pub fn registered(self) -> bool {
        match self.0 {
            Mode::Worktree => true,
            Mode::Scratch => false,
        }
    }

    /// Its tasks' edits come back to the source (apply writes them back,
    /// refresh and diff measure them against it); a scratch copy's never do.
    pub fn writes_back(self) -> bool {
        match self.0 {
            Mode::Worktree => true,
            Mode::Scratch => false,
        }
    }

    /// Ignored files are carried into it (`--copy-ignored`, design §3.9);
    /// a scratch copy already holds every one.
    pub fn carries_ignored(self) -> bool {
        match self.0 {
            Mode::Worktree => true,
            Mode::Scratch => false,
        }
    }

    /// It may hold less than the source (`--sparse`, design §3.15); a
    /// scratch copy is the whole source.
    pub fn narrows(self) -> bool {
        match self.0 {
            Mode::Worktree => true,
            Mode::Scratch => false,
        }
    }

    /// It may be kept idle in the pool and given to a later task (design §3.20).
    pub fn pools(self) -> bool {
        match self.0 {
            Mode::Worktree => true,
            Mode::Scratch => false,
        }
    }

    /// It shares the source's branches, tags, stash, config and hooks,
    /// which are recorded before it exists (design §3.16); a scratch copy
    /// has its own.
    pub fn shares_git_dir(self) -> bool {
        match self.0 {
            Mode::Worktree => true,
            Mode::Scratch => false,
        }
    }

    /// The repository of a workspace of this kind at `real` (its real
    /// path, proven by `identify`): a worktree's only through a
    /// registration that leads back to `common_dir` (design §3.18: nothing
    /// is read or written through a redirected one); a scratch copy's is
    /// its own.
    pub fn open(
        self,
        real: &Path,
        common_dir: &Path,
    ) -> Result<gix::Repository, crate::git::repo::RepoError> {
        match self.0 {
            Mode::Worktree => crate::git::repo::open_worktree_of(real, common_dir),
            Mode::Scratch => crate::git::repo::open_worktree(real),
        }
    }

    /// Refuse what cannot become a workspace of this kind, before anything is made.
    pub fn preflight(self, source: &Source) -> Result<(), WorkspaceError> {
        match self.0 {
            Mode::Worktree => Ok(()),
            Mode::Scratch => crate::workspace::scratch::preflight(source),
        }
    }

    /// Put the planned workspaces where this kind lives: a scratch copy
    /// beside the source (its roots and worktree id replaced); a worktree
    /// below the workspace root `base`, refused when another user's folder
    /// is on the way (design §3.18).
    pub fn place(
        self,
        source_root: &Path,
        base: &Path,
        plans: &mut [Plan],
    ) -> Result<(), WorkspaceError> {
        match self.0 {
            Mode::Scratch => {
                let roots = crate::workspace::scratch::plan(source_root, plans.len())?;
                for (p, root) in plans.iter_mut().zip(roots) {
                    p.root = root;
                    p.worktree_id = crate::workspace::scratch::WORKTREE_ID.to_string();
                }
                Ok(())
            }
            Mode::Worktree if plans.is_empty() => Ok(()),
            Mode::Worktree => crate::workspace::shared_root::check(base),
        }
    }

    /// What removing the workspace an unfinished prepare made for `t`
    /// would do (for a dry run), and the bytes it holds then.
    pub fn unfinished_removal(self, common_dir: &Path, t: &Task) -> (Removal, u64) {
        let (will, size): (Removal, fn(&Path) -> u64) = match self.0 {
            Mode::Scratch if t.root.symlink_metadata().is_ok() => {
                (Removal::Removed, crate::sys::fs::tree_size)
            }
            Mode::Scratch => (Removal::Missing, crate::sys::fs::tree_size),
            Mode::Worktree => (
                crate::workspace::unfinished_removal(common_dir, &t.root, &t.worktree_id),
                // Below the workspace root through handles (design §3.18).
                crate::workspace::shared_root::tree_size,
            ),
        };
        let bytes = if will == Removal::Removed {
            size(&t.root)
        } else {
            0
        };
        (will, bytes)
    }

    /// Remove the workspace an unfinished prepare made for `t`: a scratch
    /// copy (and its container, when its marker was never written); a
    /// worktree's folder when ours or still empty, and its registration.
    pub fn remove_unfinished(self, common_dir: &Path, t: &Task) -> Result<Removal, WorkspaceError> {
        match self.0 {
            Mode::Scratch => {
                let r = crate::workspace::scratch::remove(common_dir, &t.root);
                // A container whose marker was never written holds nothing: rmdir only.
                if let Some(c) = t.root.parent() {
                    let _ = std::fs::remove_dir(&t.root);
                    let _ = std::fs::remove_file(
                        c.join(format!("{}.tmp", crate::workspace::scratch::MARKER)),
                    );
                    let _ = std::fs::remove_dir(c);
                }
                r
            }
            Mode::Worktree => {
                crate::workspace::remove_unfinished(common_dir, &t.root, &t.worktree_id)
            }
        }
    }

    /// The private object folder a contained worker's git writes to (in
    /// the task's registration), if this kind has one.
    pub fn private_objects(self, common_dir: &Path, t: &Task) -> Option<PathBuf> {
        self.registered()
            .then(|| crate::git::private_objects::dir(common_dir, &t.worktree_id))
    }

    /// The folders beside its workspace a contained worker of `t` may
    /// write (design §3.22): for a registered kind, its registration,
    /// reached without following a symlink, with the private object
    /// folder made in it (returned too, for the worker's git). A scratch
    /// copy holds its own repository: none.
    pub fn writable_beside(self, common_dir: &Path, t: &Task) -> Result<Option<Beside>, String> {
        if !self.registered() {
            return Ok(None);
        }
        use rustix::fs::{Mode as Perm, OFlags};
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let worktrees = crate::git::registration::dir(common_dir);
        let reg = rustix::fs::open(&worktrees, flags, Perm::empty())
            .and_then(|w| rustix::fs::openat(&w, t.worktree_id.as_str(), flags, Perm::empty()))
            .map_err(|e| {
                format!(
                    "its worktree registration {} cannot be opened ({e})",
                    worktrees.join(&t.worktree_id).display()
                )
            })?;
        match rustix::fs::mkdirat(&reg, "objects", Perm::from_raw_mode(0o700)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(format!("cannot make its private object folder: {e}")),
        }
        // Not a symlink a worker planted: the folder is below the registration.
        rustix::fs::openat(&reg, "objects", flags, Perm::empty())
            .map_err(|e| format!("cannot open its private object folder: {e}"))?;
        Ok(Some(Beside {
            registration: (worktrees.join(&t.worktree_id), reg),
            objects: crate::git::private_objects::dir(common_dir, &t.worktree_id),
        }))
    }
}

/// What [`Kind::writable_beside`] found.
#[derive(Debug)]
pub struct Beside {
    /// The registration folder and its handle.
    pub registration: (PathBuf, OwnedFd),
    /// The private object folder in it.
    pub objects: PathBuf,
}
