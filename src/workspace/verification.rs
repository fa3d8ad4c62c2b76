//! Verification workspaces on btrfs (design §3.10, §3.17): a template
//! made once per verification (a new subvolume, checked out at one `F`
//! and given the carried ignored files; nothing ever runs in it), and each
//! verification workspace a writable snapshot of it moved to its own
//! commit by writing only the paths whose entry differs between the two
//! trees (those paths deleted first, then the target's entries checked out
//! through gix's checkout, with the target's attributes and filters), with
//! its own `.git` file, registration, lock and index: the template's stat
//! data for the unchanged paths with the snapshot's device number, fresh
//! stat data for the written ones, settled as a checkout's are.
//!
//! Also, on every filesystem, finding the verification workspaces (and
//! templates) that are registered and locked as such (`verifications`: an
//! apply's own while it verifies, or what an apply killed while verifying
//! left) and removing one (`remove_verification`), for whatever ends or
//! sweeps their batch (design §3.10).
//!
//! Owns: the template and the per-commit snapshots of it; recognising a
//! verification workspace by its registration's lock reason.
//! Never: runs anything in the template or changes it after it is made;
//! replaces a folder that is not the one it registered (the snapshot takes
//! the place of a registered folder only while it is ours and holds only
//! its `.git` file); follows a symlink (deletions remove the link, the
//! checkout refuses a symlinked folder on the way). Where a path cannot be
//! derived (a `.gitattributes` differs, so unchanged files might need
//! other bytes, or a carried ignored file is in the way), the workspace is
//! checked out as elsewhere.
//! Its failures are `WorkspaceError` (the folder and its cause, or what the
//! steps it runs failed with); `ops::explain` words them.

use std::collections::HashMap;

use gix::bstr::{BStr, ByteSlice};

use super::*;
use crate::workspace::error::IN_ROOT;

type Result<T, E = WorkspaceError> = std::result::Result<T, E>;

/// A checked-out subvolume that verification workspaces are snapshots of.
pub struct Template {
    pub plan: Plan,
    tree: ObjectId,
    index: gix::index::State,
}

/// Should a verification whose workspaces go under `dir` make them as
/// snapshots of a template (design §3.17: the same rule as task workspaces)?
pub fn can_derive(snapshots: crate::config::Snapshots, dir: &Path) -> bool {
    snapshots == crate::config::Snapshots::Auto && crate::sys::btrfs::can_snapshot_at(dir)
}

/// Make the template: `plan`'s folder a new subvolume, registered and
/// locked, checked out at `commit` (tree `tree`), settled, then `fill`ed
/// (the carried ignored files) and its index written. On failure, what was
/// made is removed.
pub fn create_template(
    common_dir: &Path,
    commit: ObjectId,
    tree: ObjectId,
    plan: &Plan,
    fill: impl FnOnce(&Path) -> Result<()>,
) -> Result<Template> {
    let made = (|| -> Result<gix::index::State> {
        register_as(common_dir, commit, plan, Make::Subvolume)?;
        let repo = crate::git::repo::open_worktree(&plan.root)?;
        let git = |source: gix::Error| WorkspaceError::Checkout {
            root: plan.root.clone(),
            source,
        };
        let cores = cores();
        let mut index: gix::index::State = repo.index_from_tree(&tree).map_err(git)?.into();
        checkout(&repo, &mut index, &plan.root, cores)?;
        settle(
            &[plan.root.as_path()],
            std::slice::from_mut(&mut index),
            cores,
        )?;
        fill(&plan.root)?;
        if gix::interrupt::is_triggered() {
            return Err(WorkspaceError::Interrupted);
        }
        write_index(common_dir, plan, index.clone())?;
        Ok(index)
    })();
    match made {
        Ok(index) => Ok(Template {
            plan: plan.clone(),
            tree,
            index,
        }),
        Err(e) => {
            let _ = remove_created(common_dir, plan);
            Err(e)
        }
    }
}

pub(super) fn write_index(
    common_dir: &Path,
    p: &Plan,
    state: gix::index::State,
) -> Result<(), WorkspaceError> {
    super::create::save_stat(p, &state)?;
    let path = Registration::new(common_dir, &p.worktree_id).index_file();
    gix::index::File::from_state(state, &path)
        .write(Default::default())
        .map_err(|e| checkout_failed(None, &p.root, e.into()))?;
    Ok(())
}

/// Make `plan`'s workspace at `commit` (tree `tree`) as a snapshot of the
/// template, or, where it cannot be derived from it, checked out as
/// [`create_all`] does: `true` when it is a snapshot (it holds the
/// template's carried ignored files). On failure, what was made is removed.
pub fn create_from(
    common_dir: &Path,
    t: &Template,
    commit: ObjectId,
    tree: ObjectId,
    plan: &Plan,
) -> Result<bool> {
    let checkout = || -> Result<bool> {
        create_all(common_dir, commit, tree, std::slice::from_ref(plan))?;
        Ok(false)
    };
    match derive(common_dir, t, (commit, tree), plan) {
        Ok(true) => Ok(true),
        Ok(false) => checkout(),
        Err(e) => {
            let _ = remove_created(common_dir, plan);
            if gix::interrupt::is_triggered() {
                return Err(e);
            }
            checkout()
        }
    }
}

/// The snapshot path of [`create_from`]: `false` (nothing made) when the
/// workspace cannot be derived from the template (at the commit and its
/// tree).
fn derive(
    common_dir: &Path,
    t: &Template,
    (commit, tree): (ObjectId, ObjectId),
    plan: &Plan,
) -> Result<bool> {
    let source = crate::git::repo::open_worktree(&t.plan.root)?;
    let git = |source: gix::Error| WorkspaceError::Checkout {
        root: plan.root.clone(),
        source,
    };
    let mut index: gix::index::State = if tree == t.tree {
        t.index.clone()
    } else {
        source.index_from_tree(&tree).map_err(git)?.into()
    };
    let Some((keep, deletions)) = differences(t, &index) else {
        return Ok(false);
    };
    snapshot_template(common_dir, t, commit, plan)?;
    delete(&plan.root, &deletions)?;

    // The target's other entries, checked out into the snapshot.
    let repo = crate::git::repo::open_worktree(&plan.root)?;
    let skip = gix::index::entry::Flags::SKIP_WORKTREE;
    for (e, k) in index.entries_mut().iter_mut().zip(&keep) {
        if *k {
            e.flags.insert(skip);
        }
    }
    let written = write_changed(&repo, &mut index, &plan.root);
    for e in index.entries_mut() {
        e.flags.remove(skip);
    }
    written?;

    keep_stat(t, &plan.root, &mut index, &keep)?;
    settle(
        &[plan.root.as_path()],
        std::slice::from_mut(&mut index),
        cores(),
    )?;
    if gix::interrupt::is_triggered() {
        return Err(WorkspaceError::Interrupted);
    }
    write_index(common_dir, plan, index)?;
    Ok(true)
}

/// The template's paths a snapshot deletes, each with whether it is a gitlink.
type Deletions = Vec<(PathBuf, bool)>;

/// For each entry of `index`, whether the template holds it on disk as it
/// is (`keep`), and the template's paths to delete (with whether each is a
/// gitlink); `None` when a `.gitattributes` is among the paths that differ
/// (unchanged files might need other bytes).
fn differences(t: &Template, index: &gix::index::State) -> Option<(Vec<bool>, Deletions)> {
    // Which of the target's entries the template already holds on disk.
    let old: HashMap<&BStr, &gix::index::Entry> = t
        .index
        .entries()
        .iter()
        .map(|e| (e.path(&t.index), e))
        .collect();
    let commit_mode = gix::index::entry::Mode::COMMIT;
    let keep: Vec<bool> = index
        .entries()
        .iter()
        .map(|e| {
            old.get(e.path(index))
                .is_some_and(|o| o.mode == e.mode && (o.id == e.id || e.mode == commit_mode))
        })
        .collect();
    let kept: std::collections::HashSet<&BStr> = index
        .entries()
        .iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|(e, _)| e.path(index))
        .collect();
    let deletions: Vec<(&BStr, gix::index::entry::Mode)> = t
        .index
        .entries()
        .iter()
        .map(|e| (e.path(&t.index), e.mode))
        .filter(|(p, _)| !kept.contains(p))
        .collect();
    let additions: Vec<&BStr> = index
        .entries()
        .iter()
        .zip(&keep)
        .filter(|(_, k)| !**k)
        .map(|(e, _)| e.path(index))
        .collect();
    let attributes = |p: &&BStr| p.rsplit_str("/").next() == Some(b".gitattributes".as_slice());
    if deletions.iter().map(|(p, _)| p).any(&attributes) || additions.iter().any(attributes) {
        return None;
    }
    let deletions: Deletions = deletions
        .into_iter()
        .map(|(p, m)| (crate::sys::paths::to_os(p), m == commit_mode))
        .collect();
    Some((keep, deletions))
}

/// Put a snapshot of the template in place of `plan`'s registered folder
/// (as in `create_snapshots`), with its own `.git` file.
fn snapshot_template(common_dir: &Path, t: &Template, commit: ObjectId, plan: &Plan) -> Result<()> {
    register(common_dir, commit, plan)?;
    let taken = || WorkspaceError::Changed {
        root: plan.root.clone(),
        verification: true,
    };
    if !is_ours(common_dir, &plan.root, &plan.worktree_id) {
        return Err(taken());
    }
    let _ = std::fs::remove_file(plan.root.join(".git"));
    std::fs::remove_dir(&plan.root).map_err(|_| taken())?;
    crate::sys::btrfs::snapshot(&t.plan.root, &plan.root).map_err(WorkspaceError::at(
        "snapshot",
        &t.plan.root,
        (&plan.root, IN_ROOT),
    ))?;
    // Killed here, the snapshot's `.git` still names the template's
    // registration: `remove_half_made` takes it.
    crate::sys::interrupt::pause("verify-snapshotted");
    crate::sys::fs::write_atomic(&plan.root.join(".git"), &dotgit_line(common_dir, plan))?;
    Ok(())
}

/// Deletions under `root`, deepest first: a file, a link (never followed)
/// or a gitlink's empty folder; then the folders they leave empty.
fn delete(root: &Path, deletions: &[(PathBuf, bool)]) -> Result<()> {
    for (rel, gitlink) in deletions.iter().rev() {
        let path = root.join(rel);
        let gone = if *gitlink {
            std::fs::remove_dir(&path)
        } else {
            std::fs::remove_file(&path)
        };
        match gone {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(WorkspaceError::io("remove", &path)(e)),
        }
        let mut dir = rel.parent();
        while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
            if std::fs::remove_dir(root.join(d)).is_err() {
                break;
            }
            dir = d.parent();
        }
    }
    Ok(())
}

/// The unchanged entries (`keep`) keep the template's stat data, with the
/// snapshot's (`root`'s) device number.
fn keep_stat(
    t: &Template,
    root: &Path,
    index: &mut gix::index::State,
    keep: &[bool],
) -> Result<()> {
    let dev = {
        use std::os::unix::fs::MetadataExt;
        std::fs::symlink_metadata(root)
            .map_err(WorkspaceError::at("read", root, (root, false)))?
            .dev() as u32
    };
    let stats: HashMap<&BStr, gix::index::entry::Stat> = t
        .index
        .entries()
        .iter()
        .map(|e| (e.path(&t.index), e.stat))
        .collect();
    let (entries, paths) = index.entries_mut_and_pathbacking();
    for (e, k) in entries.iter_mut().zip(keep) {
        if *k {
            if let Some(s) = stats.get(e.path_in(paths)) {
                e.stat = *s;
                e.stat.dev = dev;
            }
        }
    }
    Ok(())
}

/// Check out the entries of `index` not marked `SKIP_WORKTREE` into
/// `root`, where their paths are free (exclusive creation: anything in the
/// way, such as a carried ignored file, is an error, never overwritten).
fn write_changed(repo: &gix::Repository, index: &mut gix::index::State, root: &Path) -> Result<()> {
    super::checkout(repo, index, root, 1)?;
    Ok(())
}

/// Remove the folder `root` when it is a snapshot of the template
/// `template_id` that never got its own `.git` file (an apply killed right
/// after the snapshot): its `.git` still points at the template's
/// registration. Only the folder goes (the registration is the
/// template's). Returns whether it did.
pub fn remove_half_made(common_dir: &Path, root: &Path, template_id: &str) -> Result<bool> {
    match identify_at(common_dir, root, template_id, None, Reach::Beneath) {
        Identity::Ours {
            fd: Some(fd),
            parents,
            ..
        } => {
            remove_held(root, fd, parents.as_ref())?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// A verification workspace (or template) registered and locked as one.
#[derive(Debug, Clone)]
pub struct Verification {
    /// The batch its lock reason names.
    pub batch: String,
    pub worktree_id: String,
    /// Where its registration says it is.
    pub root: PathBuf,
    /// Its real path, when the folder there is the one it registered.
    pub real: Option<PathBuf>,
    pub template: bool,
}

/// Every verification workspace and template registered in `common_dir`
/// and still locked as one (`registration::verify_lock_reason`), templates
/// last. One `apply --keep` released (unlocked) is an ordinary worktree
/// now, and is not listed.
pub fn verifications(common_dir: &Path) -> Vec<Verification> {
    let Ok(rd) = std::fs::read_dir(crate::git::registration::dir(common_dir)) else {
        return Vec::new();
    };
    let mut out: Vec<Verification> = Vec::new();
    for e in rd.flatten() {
        let Some(id) = e.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if !(id.starts_with("delegate-") && id.contains("--verify-")) {
            continue;
        }
        let Some(batch) = Registration::at(e.path()).verification_of() else {
            continue;
        };
        let Some(root) = registered_location(common_dir, &id) else {
            continue;
        };
        let real = match identify_at(common_dir, &root, &id, None, Reach::Beneath) {
            Identity::Ours { real, .. } => Some(real),
            _ => None,
        };
        out.push(Verification {
            batch,
            template: id.ends_with("--verify-template"),
            worktree_id: id,
            root,
            real,
        });
    }
    out.sort_by(|a, b| (a.template, &a.worktree_id).cmp(&(b.template, &b.worktree_id)));
    out
}

/// Remove a verification workspace [`verifications`] listed, as a task's
/// workspace is removed: the folder only while it is the one registered
/// (its `.git` points back), its registration in any case. Before a
/// template goes, the snapshots of it beside it that never got their own
/// `.git` file (an apply killed right after taking them) go too.
pub fn remove_verification(common_dir: &Path, v: &Verification) -> Result<Removal> {
    if let Some(dir) = v.root.parent().filter(|_| v.template) {
        if let Ok(rd) = std::fs::read_dir(dir) {
            for e in rd.flatten() {
                let path = dir.join(e.file_name());
                let snapshot = e.file_name().to_string_lossy().starts_with(".verify-");
                if snapshot && path != v.root {
                    remove_half_made(common_dir, &path, &v.worktree_id)?;
                }
            }
        }
    }
    remove(common_dir, &v.root, &v.worktree_id)
}
