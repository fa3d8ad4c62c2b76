//! Creating a batch's workspaces (`create_all` and its sparse and btrfs
//! forms, `create_all_filled`): checking their paths are free, registering
//! and locking each the way `git worktree add` + `git worktree lock` leave
//! one, the first checked out and the others made from it (`checkout`), and
//! undoing a creation that did not finish (`remove_unfinished`).
//! Its failures are `WorkspaceError` (the folder and its cause, or what the
//! steps it runs failed with); `create_all_filled` fails with its `fill`'s
//! error type, which takes a `WorkspaceError` in. `ops::explain` words them.
//! Never: writes `.git/config`, follows a symlink, or removes a folder it
//! did not make.

use std::path::{Path, PathBuf};

use gix::ObjectId;

use super::fill::{
    can_clone, checkout, checkout_failed, checkout_panicked, replicate, settle, Method, PATH_MAX,
};
use super::identity::{identify_at, is_ours, Identity, Reach};
use super::remove::{remove_empty_parents, remove_held};
use super::{registration, Plan, Removal, WorkspaceError};
use crate::git::registration::Registration;
use crate::workspace::error::IN_ROOT;

type Result<T, E = WorkspaceError> = std::result::Result<T, E>;
/// Create every planned workspace. The first is checked out from the
/// object database; the files of the others are made from it: cloned with
/// FICLONE where the filesystem shares extents (detected with a probe, never
/// configured) and the file is big enough for that to pay, otherwise copied
/// (small files are read once and written to every other workspace). On
/// failure, everything created here is removed again.
pub fn create_all(
    common_dir: &Path,
    baseline: ObjectId,
    baseline_tree: ObjectId,
    plans: &[Plan],
) -> Result<()> {
    create_all_sparse(common_dir, baseline, baseline_tree, plans, None)
}

/// [`create_all`] with a sparse checkout (design §3.15): only the paths
/// `sparse` takes in are written, the others are skip-worktree entries.
pub fn create_all_sparse(
    common_dir: &Path,
    baseline: ObjectId,
    baseline_tree: ObjectId,
    plans: &[Plan],
    sparse: Option<&crate::git::sparse::Workspaces>,
) -> Result<()> {
    let made = (|| -> Result<()> {
        let Some(first) = plans.first() else {
            return Ok(());
        };
        for p in plans {
            register(common_dir, baseline, p)?;
            if let Some(s) = sparse {
                s.write(common_dir, &registration(common_dir, &p.worktree_id))?;
            }
        }
        crate::sys::interrupt::pause("registered");
        let cores = cores();
        let index = check_out_first(first, baseline_tree, sparse, cores)?;

        let mut indexes = vec![index];
        if plans.len() > 1 {
            let method = if can_clone(&first.root, &plans[1].root) {
                Method::Clone
            } else {
                Method::Copy
            };
            let others = replicate(&first.root, &indexes[0], &plans[1..], method, cores)?;
            indexes.extend(others);
        }
        if gix::interrupt::is_triggered() {
            return Err(WorkspaceError::Interrupted);
        }
        let roots: Vec<&Path> = plans.iter().map(|p| p.root.as_path()).collect();
        settle(&roots, &mut indexes, cores)?;
        // Index files last: written after every file is settled, so no entry is racy.
        // One thread per workspace.
        write_indexes(common_dir, plans, indexes)?;
        Ok(())
    })();
    undone(common_dir, plans, made)
}

/// The outcome of making `plans`, Ctrl-C counting as a failure. On failure
/// everything made for them is removed again, the error worded first,
/// while what was made still stands: a full disk is named by what ran out
/// (`FsCause::NoInodes` looks at the filesystem now), before the removal
/// frees it again.
fn undone<T, E: From<WorkspaceError> + Into<crate::error::Error>>(
    common_dir: &Path,
    plans: &[Plan],
    made: Result<T, E>,
) -> Result<T, E> {
    let made = match made {
        Ok(_) if gix::interrupt::is_triggered() => Err(WorkspaceError::Interrupted.into()),
        made => made,
    };
    made.map_err(|e| {
        let e = E::from(WorkspaceError::from(e.into()));
        for p in plans {
            let _ = remove_created(common_dir, p);
        }
        e
    })
}

/// Like [`create_all`], then `fill` (carrying ignored files) on the
/// workspace roots; the values it returns, one per root. Where the
/// workspace root is on btrfs and `snapshots` allows it (design §3.17),
/// the first workspace is made as a subvolume, checked out and filled,
/// and every other one is a snapshot of it (so it holds the carried files
/// too: `fill`'s value for the first is given for all).
pub fn create_all_filled<T: Clone, E: From<WorkspaceError> + Into<crate::error::Error>>(
    common_dir: &Path,
    baseline: ObjectId,
    baseline_tree: ObjectId,
    plans: &[Plan],
    snapshots: crate::config::Snapshots,
    sparse: Option<&crate::git::sparse::Workspaces>,
    fill: impl FnOnce(&[PathBuf]) -> Result<Vec<T>, E>,
) -> Result<Vec<T>, E> {
    let snap = snapshots == crate::config::Snapshots::Auto
        && plans
            .first()
            .and_then(|p| p.root.parent())
            .is_some_and(crate::sys::btrfs::can_snapshot_at);
    if !snap {
        create_all_sparse(common_dir, baseline, baseline_tree, plans, sparse)?;
        let roots: Vec<PathBuf> = plans.iter().map(|p| p.root.clone()).collect();
        return fill(&roots);
    }
    let made = create_snapshots(common_dir, baseline, baseline_tree, plans, sparse, fill);
    undone(common_dir, plans, made)
}

/// The snapshot path of [`create_all_filled`]: register every plan (the
/// first one's folder a new subvolume, the others' plain folders that
/// their snapshot replaces), check out and settle the first, fill it,
/// snapshot it once per other plan, give each snapshot its own `.git`
/// file, and write the index files last. A snapshot keeps every inode
/// number, mtime, ctime, size and owner of the files it copies; only the
/// device number differs (each subvolume has its own), so each snapshot's
/// index is the first's with that device number: a valid stat cache, `git
/// status` reads no file. Between a snapshot and its own `.git` file, the
/// snapshot's `.git` names the first's registration: a prepare killed in
/// that moment leaves a folder gc recognises as one of ours (its leftovers).
fn create_snapshots<T: Clone, E: From<WorkspaceError>>(
    common_dir: &Path,
    baseline: ObjectId,
    baseline_tree: ObjectId,
    plans: &[Plan],
    sparse: Option<&crate::git::sparse::Workspaces>,
    fill: impl FnOnce(&[PathBuf]) -> Result<Vec<T>, E>,
) -> Result<Vec<T>, E> {
    let Some(first) = plans.first() else {
        return fill(&[]);
    };
    register_as(common_dir, baseline, first, Make::Subvolume)?;
    // The others are registered as plain folders first, as a checkout
    // makes them; each is replaced by its snapshot below.
    for p in &plans[1..] {
        register(common_dir, baseline, p)?;
    }
    // Each registration gets the sparse-checkout configuration (design
    // §3.15); the snapshots copy the first's sparse tree and index bits.
    if let Some(s) = sparse {
        for p in plans {
            s.write(common_dir, &registration(common_dir, &p.worktree_id))
                .map_err(WorkspaceError::from)?;
        }
    }
    crate::sys::interrupt::pause("registered");
    let cores = cores();
    let mut index = check_out_first(first, baseline_tree, sparse, cores)?;
    settle(
        &[first.root.as_path()],
        std::slice::from_mut(&mut index),
        cores,
    )?;
    // A snapshot takes any depth; a workspace whose paths the kernel cannot
    // name would be unusable (git stops at PATH_MAX), so it fails like a
    // checkout of the same file does.
    if let Some(longest) = index.entries().iter().max_by_key(|e| e.path(&index).len()) {
        let rel = longest.path(&index);
        for p in &plans[1..] {
            if p.root.as_os_str().len() + 1 + rel.len() >= PATH_MAX {
                return Err(WorkspaceError::TooLong {
                    file: crate::sys::paths::quote(rel),
                    root: p.root.clone(),
                }
                .into());
            }
        }
    }
    let filled = fill(std::slice::from_ref(&first.root))?;
    let value = filled.into_iter().next();
    let mut indexes = vec![index];
    for (n, p) in plans[1..].iter().enumerate() {
        if n == 1 {
            crate::sys::interrupt::pause("replicating");
        }
        if gix::interrupt::is_triggered() {
            return Err(WorkspaceError::Interrupted.into());
        }
        // The registered folder makes way for the snapshot: only while it
        // is still ours and holds nothing but its `.git` file.
        let taken = || WorkspaceError::Changed {
            root: p.root.clone(),
            verification: false,
        };
        if !is_ours(common_dir, &p.root, &p.worktree_id) {
            return Err(taken().into());
        }
        let _ = std::fs::remove_file(p.root.join(".git"));
        std::fs::remove_dir(&p.root).map_err(|_| taken())?;
        crate::sys::btrfs::snapshot(&first.root, &p.root).map_err(making(
            "snapshot",
            &first.root,
            &p.root,
        ))?;
        crate::sys::fs::write_atomic(&p.root.join(".git"), &dotgit_line(common_dir, p))
            .map_err(WorkspaceError::from)?;
        let dev = std::fs::symlink_metadata(&p.root).map_err(WorkspaceError::at(
            "read",
            &p.root,
            (&p.root, false),
        ))?;
        let mut state = indexes[0].clone();
        {
            use std::os::unix::fs::MetadataExt;
            for e in state.entries_mut() {
                e.stat.dev = dev.dev() as u32;
            }
        }
        indexes.push(state);
    }
    if plans.len() == 2 {
        crate::sys::interrupt::pause("replicating");
    }
    // Index files last (see `create_all_sparse`).
    write_indexes(common_dir, plans, indexes)?;
    Ok(match value {
        Some(v) => vec![v; plans.len()],
        None => Vec::new(),
    })
}

/// Write each plan's index into its registration, one thread per
/// workspace: last, after every file is settled, so no entry is racy.
fn write_indexes(common_dir: &Path, plans: &[Plan], indexes: Vec<gix::index::State>) -> Result<()> {
    crate::sys::parallel::try_map(
        plans.iter().zip(indexes),
        plans.len(),
        checkout_panicked,
        |(p, state)| {
            save_stat(p, &state)?;
            let path = Registration::new(common_dir, &p.worktree_id).index_file();
            gix::index::File::from_state(state, &path)
                .write(Default::default())
                .map_err(|e| checkout_failed(None, &p.root, e.into()))
        },
    )?;
    Ok(())
}

/// Keep git-delegate's own stat record of `p`'s workspace, where it has
/// one, from the entries its index is written with (design §3.20).
pub(super) fn save_stat(p: &Plan, state: &gix::index::State) -> Result<()> {
    match &p.stat {
        Some(path) => crate::record::stat::save(path, state).map_err(WorkspaceError::from),
        None => Ok(()),
    }
}

pub(super) fn cores() -> usize {
    crate::sys::parallel::threads(usize::MAX)
}

/// Undo `register` and the files of a plan: only what this prepare made
/// (our `.git` pointer, our registration).
pub(super) fn remove_created(common_dir: &Path, p: &Plan) -> Result<()> {
    // An emptied subvolume that `rmdir` may not remove goes through the
    // ioctl (design §3.17).
    if (is_ours(common_dir, &p.root, &p.worktree_id) || crate::sys::fs::is_empty_dir(&p.root))
        && std::fs::remove_dir_all(&p.root).is_err()
    {
        let _ = crate::sys::btrfs::remove_empty_dir(&p.root);
    }
    let _ = crate::workspace::submodules::unregister(common_dir, &p.root, &p.worktree_id);
    let _ = std::fs::remove_dir_all(registration(common_dir, &p.worktree_id));
    crate::sys::fs::remove_empty_parents(&p.root, 2);
    Ok(())
}

/// Remove a workspace of a batch whose prepare never completed (see
/// `preparing`): its folder when it is ours or still empty (a prepare
/// killed between making the folder and writing its `.git`), and its
/// registration. A folder that is neither is left alone (`Foreign`).
pub fn remove_unfinished(common_dir: &Path, root: &Path, worktree_id: &str) -> Result<Removal> {
    // Through `identify` (no identity is recorded before a batch is
    // complete): a symlink put in the folder's place is never followed,
    // and an empty folder only counts when it is a real folder, not a
    // symlink to one.
    let state = match identify_at(common_dir, root, worktree_id, None, Reach::Beneath) {
        Identity::Missing => Removal::Missing,
        Identity::Ours {
            fd: Some(fd),
            parents,
            ..
        } => {
            remove_held(root, fd, parents.as_ref())?;
            Removal::Removed
        }
        // Still empty, a real folder of ours reached through folders of
        // ours (design §3.18): only an empty folder can go.
        _ => match empty_beneath(root) {
            Some((batch, name)) => {
                use std::os::unix::ffi::OsStrExt;
                match crate::sys::btrfs::remove_empty_dir_at(batch.fd(), name.as_bytes()) {
                    Ok(()) => Removal::Removed,
                    Err(rustix::io::Errno::NOENT) => Removal::Missing,
                    // Not empty any more, or not a folder: someone else's now.
                    Err(rustix::io::Errno::NOTEMPTY | rustix::io::Errno::NOTDIR) => {
                        Removal::Foreign
                    }
                    Err(e) => {
                        return Err(WorkspaceError::io("remove", root)(
                            std::io::Error::from_raw_os_error(e.raw_os_error()),
                        ))
                    }
                }
            }
            None => Removal::Foreign,
        },
    };
    crate::workspace::submodules::unregister(common_dir, root, worktree_id)?;
    let reg = registration(common_dir, worktree_id);
    match std::fs::remove_dir_all(&reg) {
        Ok(()) => {}
        // Never made (`worktrees` may even be a file in the way).
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound
                || e.kind() == std::io::ErrorKind::NotADirectory => {}
        Err(source) => return Err(WorkspaceError::io("remove", &reg)(source)),
    }
    if state != Removal::Foreign {
        remove_empty_parents(root, Reach::Beneath);
    }
    Ok(state)
}

/// The batch folder holding `root` and `root`'s name, when `root` is an
/// empty real folder of ours reached through folders of ours below the
/// workspace root (design §3.18).
fn empty_beneath(root: &Path) -> Option<(crate::workspace::shared_root::Dir, std::ffi::OsString)> {
    use crate::workspace::shared_root::Opened;
    let name = root.file_name()?.to_os_string();
    match crate::workspace::shared_root::open_workspace(root) {
        Ok(Opened::Ours(ws)) if ws.dir.is_empty() => Some((ws.parents.batch, name)),
        _ => None,
    }
}

/// What [`remove_unfinished`] would do with the folder at `root` (for a
/// dry run): `Removed` when it is ours or a real, still empty folder.
pub fn unfinished_removal(common_dir: &Path, root: &Path, worktree_id: &str) -> Removal {
    match identify_at(common_dir, root, worktree_id, None, Reach::Beneath) {
        Identity::Missing => Removal::Missing,
        Identity::Ours { .. } => Removal::Removed,
        _ if empty_beneath(root).is_some() => Removal::Removed,
        _ => Removal::Foreign,
    }
}

/// `op` on `path` making the workspace folder `root` failed: something
/// already there is [`WorkspaceError::Exists`], anything else an I/O error
/// under the workspace root.
fn making<'a>(
    op: &'static str,
    path: &'a Path,
    root: &'a Path,
) -> impl Fn(std::io::Error) -> WorkspaceError + 'a {
    move |source| match source.kind() {
        std::io::ErrorKind::AlreadyExists => WorkspaceError::Exists {
            root: root.to_path_buf(),
        },
        _ => WorkspaceError::at(op, path, (root, IN_ROOT))(source),
    }
}

/// How [`register_as`] makes a workspace's folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Make {
    /// A plain folder.
    Folder,
    /// A new btrfs subvolume (the first workspace of a snapshot batch).
    Subvolume,
}

/// The `.git` file of a plan's folder: `gitdir: <registration>`.
pub(super) fn dotgit_line(common_dir: &Path, p: &Plan) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let reg = registration(common_dir, &p.worktree_id);
    [b"gitdir: ", reg.as_os_str().as_bytes(), b"\n"].concat()
}

/// Make the workspace folder and its registration (locked first, so `git
/// worktree prune` can never take a half-made workspace).
pub(super) fn register(common_dir: &Path, baseline: ObjectId, p: &Plan) -> Result<()> {
    register_as(common_dir, baseline, p, Make::Folder)
}

pub(super) fn register_as(
    common_dir: &Path,
    baseline: ObjectId,
    p: &Plan,
    make: Make,
) -> Result<()> {
    let io = |what: &Path| {
        let path = what.to_path_buf();
        move |source| WorkspaceError::at("create", &path, (&path, IN_ROOT))(source)
    };
    if let Some(parent) = p.root.parent() {
        std::fs::create_dir_all(parent).map_err(io(parent))?;
    }
    let made = match make {
        Make::Folder => std::fs::create_dir(&p.root),
        Make::Subvolume => crate::sys::btrfs::create_subvolume(&p.root),
    };
    made.map_err(making("create", &p.root, &p.root))?;
    let reg = registration(common_dir, &p.worktree_id);
    std::fs::create_dir_all(reg.parent().unwrap_or(common_dir)).map_err(io(&reg))?;
    std::fs::create_dir(&reg).map_err(io(&reg))?;
    let write = |file: &Path, bytes: Vec<u8>| std::fs::write(file, bytes).map_err(io(file));
    let line = |prefix: &str, path: &Path| {
        use std::os::unix::ffi::OsStrExt;
        [prefix.as_bytes(), path.as_os_str().as_bytes(), b"\n"].concat()
    };
    let files = Registration::at(reg.clone());
    write(&files.locked_file(), p.lock_reason.clone().into_bytes())?;
    write(&files.gitdir_file(), line("", &p.root.join(".git")))?;
    write(&reg.join("commondir"), b"../..\n".to_vec())?;
    write(&reg.join("HEAD"), format!("{baseline}\n").into_bytes())?;
    std::fs::write(p.root.join(".git"), line("gitdir: ", &reg)).map_err(io(&p.root))?;
    Ok(())
}

/// Checks the baseline out into the first (registered) workspace, the one
/// the others are cloned, copied or snapshotted from: its index.
fn check_out_first(
    first: &Plan,
    baseline_tree: ObjectId,
    sparse: Option<&crate::git::sparse::Workspaces>,
    cores: usize,
) -> Result<gix::index::State> {
    let repo = crate::git::repo::open_worktree(&first.root)?;
    let git = |source: gix::Error| WorkspaceError::Checkout {
        root: first.root.clone(),
        source,
    };
    let mut index: gix::index::State = repo.index_from_tree(&baseline_tree).map_err(git)?.into();
    if let Some(s) = sparse {
        s.mark(&mut index);
    }
    checkout(&repo, &mut index, &first.root, cores)?;
    crate::sys::interrupt::pause("checked-out");
    Ok(index)
}
