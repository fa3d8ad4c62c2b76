//! Materialization of workspaces: linked worktrees detached at a baseline,
//! registered and locked the way `git worktree add` + `git worktree lock`
//! leave them, with an index whose stat data make the first snapshot of an
//! untouched workspace hash nothing. The first workspace of a batch is
//! checked out (parallel checkout); the files of the others are made from it
//! by an fd-relative walk: cloned with FICLONE where the filesystem shares
//! extents and the file is big, otherwise read once and written to each.
//! Where the workspace root is on btrfs (design §3.17), the first is a
//! subvolume and the others are snapshots of it (`create_all_filled`; the
//! ioctls are `btrfs`'s), each with its own `.git` file and index; the
//! verification workspaces there are snapshots of a template moved to
//! their own commit (`verification`).
//!
//! It is also the one way in for a task's workspace of either kind: what
//! differs by kind is asked of `kind::Kind` (the one place that matches
//! on `config::Mode`); the task-level calls (`identify`, `health`,
//! `remove_task`, `discard`) ask it and call `scratch` for a copy that
//! holds its own repository (`scratch` never calls back here).
//!
//! The folder holds the steps (`create`: making a batch's workspaces;
//! `fill`: checkout, index stat data and the copy walk; `identity`: what a
//! task's workspace path leads to; `remove`: removal and release;
//! `kind`: what differs by kind of workspace; `cwd`: a task's working
//! folder inside its workspace) and what
//! a workspace is made of: scratch copies (`scratch`),
//! the ignored files carried into one and the copy engine (`carry`), its
//! submodules (`submodules`), the walk below a workspace root other users
//! may share (`shared_root`), removed workspaces deleted in the background
//! (`trash`), the proof before a workspace is removed (`aside`), the
//! registrations of ours whose folder is gone (`leftover`), where a
//! task's work may be when its workspace is not at its place
//! (`elsewhere`), the words for what is at a workspace's path (`presence`) and
//! verification workspaces (`verification`). Above `snapshot/` and `record/`;
//! below `merge/` and `ops/`.
//!
//! Owns: creating, recognising and removing workspace folders and their
//! registrations (paths and files through `registration::Registration`); a
//! task workspace's identity (`identify`: the device, inode and real path
//! recorded at prepare time, checked through an `O_NOFOLLOW` handle reached
//! from the workspace root through folders of the user's own, design §3.18,
//! `shared_root`, and its `.git` pointing back at the registration) and its
//! `presence::Health`;
//! finding the open batches prepared inside a workspace (`hosted_batches`).
//! Never: writes `.git/config`, touches the source working tree, follows a
//! symlink while making or removing a workspace, or removes a folder that
//! is not the workspace it made (its `.git` must point back at the
//! registration; for a batch whose prepare never completed, a still-empty
//! folder counts too).

// `stat` field widths differ between targets: the casts are deliberate.
#![allow(clippy::unnecessary_cast)]

use std::path::{Path, PathBuf};

use gix::ObjectId;

use crate::git::registration::Registration;
pub use crate::workspace::presence::{Health, Removal};

/// The cause of a failure inside gix, as the typed errors of this layer
/// hold it: boxed, so that one variant takes whichever of gix's error types
/// a step returns, and `ops::explain` finds a `gix::Error` in it (to name a
/// full disk) exactly where `Error::git` looked before.
pub type Cause = Box<dyn std::error::Error + Send + Sync>;

pub mod aside;
pub mod carry;
mod create;
mod cwd;
pub mod elsewhere;
pub(crate) mod error;
mod fill;
mod identity;
pub mod kind;
pub mod leftover;
pub mod pool;
pub mod presence;
mod refused;
mod remove;
pub mod scratch;
pub mod shared_root;
pub mod submodules;
pub mod trash;
mod verification;
pub use verification::{
    can_derive, create_from, create_template, remove_half_made, remove_verification, verifications,
    Template, Verification,
};

// The steps `verification` makes its workspaces with.
use create::{cores, dotgit_line, register, register_as, remove_created, Make};
pub use create::{
    create_all, create_all_filled, create_all_sparse, remove_unfinished, unfinished_removal,
};
pub use cwd::make_cwd;
pub use error::WorkspaceError;
use fill::{checkout, checkout_failed, settle};
pub use identity::{folder_of, health, held, identify, is_ours, refusal, Identity};
use identity::{identify_at, registered_location, Reach};
pub use kind::Kind;
use remove::remove_held;
pub use remove::{
    discard, finish_in_place, finish_removal, release, remove, remove_empty_parents_of,
    remove_joined, remove_proven, remove_task, set_aside, Proof,
};

/// One workspace to create.
#[derive(Debug, Clone)]
pub struct Plan {
    pub root: PathBuf,
    pub worktree_id: String,
    /// The text of the `locked` file.
    pub lock_reason: String,
    /// Where git-delegate keeps its own stat record of a task's workspace
    /// (`record::stat`, design §3.20): written beside its index, from the
    /// same entries. `None`: no record (a verification or joined one).
    pub stat: Option<PathBuf>,
}

pub fn worktree_id(batch_short: &str, task: &str) -> String {
    format!("delegate-{batch_short}-{task}")
}

fn registration(common_dir: &Path, id: &str) -> PathBuf {
    Registration::new(common_dir, id).path().to_path_buf()
}

/// A planned workspace whose place is taken.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// A folder at the workspace's path; `registered` when a worktree
    /// registration of the planned name is there too (a linked worktree no
    /// batch owns).
    #[error("the workspace folder {} already exists", root.display())]
    FolderExists {
        root: PathBuf,
        worktree_id: String,
        registered: bool,
    },
    /// A registration of the planned name without its folder.
    #[error("a worktree named {worktree_id} is already registered at {}", registration.display())]
    Registered {
        worktree_id: String,
        registration: PathBuf,
    },
}

/// Refuse plans whose folders or registrations already exist (before anything is made).
pub fn check_free(common_dir: &Path, plans: &[Plan]) -> std::result::Result<(), PlanError> {
    for p in plans {
        let reg = registration(common_dir, &p.worktree_id);
        if p.root.symlink_metadata().is_ok() {
            return Err(PlanError::FolderExists {
                root: p.root.clone(),
                worktree_id: p.worktree_id.clone(),
                registered: reg.symlink_metadata().is_ok(),
            });
        }
        if reg.symlink_metadata().is_ok() {
            return Err(PlanError::Registered {
                worktree_id: p.worktree_id.clone(),
                registration: reg,
            });
        }
    }
    Ok(())
}

/// The batches among `batches` (other than `except`) whose source is the
/// task's workspace or lies inside it: an agent ran `git delegate prepare`
/// in its workspace. Removing that folder would take the other batch's
/// source away, so it is kept (design §3.2 step 5, §3.4, §3.5 as documented
/// in docs/architecture.md). A batch whose prepare was killed does not
/// count: it holds no work, never writes back, and is removed whole
/// (by gc or `drop`) without its source (design §3.15); one whose prepare
/// still runs does.
pub fn hosted_batches(
    batches: &[crate::record::batch::Batch],
    task: &crate::record::batch::Task,
    except: &str,
) -> Vec<String> {
    // A remote task has no folder here (its empty root would lead everywhere).
    if task.remote {
        return Vec::new();
    }
    let mut roots = vec![task.root.clone()];
    if let Some(f) = &task.folder {
        roots.push(f.path.clone());
    }
    if let Ok(c) = std::fs::canonicalize(&task.root) {
        roots.push(c);
    }
    batches
        .iter()
        .filter(|b| b.id != except)
        .filter(|b| {
            crate::record::batch::progress(b) != Some(crate::record::batch::Progress::Interrupted)
        })
        .filter(|b| {
            let canon = std::fs::canonicalize(&b.source).ok();
            roots.iter().any(|r| {
                b.source.starts_with(r) || canon.as_deref().is_some_and(|c| c.starts_with(r))
            })
        })
        .map(|b| b.id.clone())
        .collect()
}
