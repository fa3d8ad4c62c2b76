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
//! their own commit (`derived`).
//!
//! It is also the one way in for a task's workspace of either kind: the
//! task-level calls (`identify`, `health`, `remove_task`, `discard`)
//! dispatch on `Task::kind` and call `scratch` for a scratch copy
//! (`scratch` never calls back here).
//!
//! The folder holds what a workspace is made of: scratch copies (`scratch`),
//! the ignored files carried into one and the copy engine (`carry`), its
//! submodules (`submodules`), the walk below a workspace root other users
//! may share (`shared_root`), removed workspaces deleted in the background
//! (`trash`), the words for what is at a workspace's path (`presence`) and
//! verification workspaces (`derived`). Above `snapshot/` and `record/`;
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

use crate::config::Mode;
use crate::error::{Code, Error, Result};
use crate::git::registration::Registration;
pub use crate::workspace::presence::{Health, Removal};

pub mod carry;
mod derived;
pub mod presence;
pub mod scratch;
pub mod shared_root;
pub mod submodules;
pub mod trash;
pub use derived::{
    can_derive, create_from, create_template, remove_half_made, remove_verification, verifications,
    Template, Verification,
};

/// One workspace to create.
#[derive(Debug, Clone)]
pub struct Plan {
    pub root: PathBuf,
    pub worktree_id: String,
    /// The text of the `locked` file.
    pub lock_reason: String,
}

pub fn worktree_id(batch_short: &str, task: &str) -> String {
    format!("delegate-{batch_short}-{task}")
}

fn registration(common_dir: &Path, id: &str) -> PathBuf {
    Registration::new(common_dir, id).path().to_path_buf()
}

/// Refuse plans whose folders or registrations already exist (before anything is made).
pub fn check_free(common_dir: &Path, plans: &[Plan]) -> Result<()> {
    for p in plans {
        let reg = registration(common_dir, &p.worktree_id);
        if p.root.symlink_metadata().is_ok() {
            // gc removes a leftover folder git delegate made, never a
            // registered worktree (it may hold work): say what works for
            // each (design §3.16 "Hints").
            let help = if reg.symlink_metadata().is_ok() {
                format!(
                    "it is the linked worktree {} that no batch owns (`git worktree list` shows it): look at what it holds, then `git worktree remove --force --force {}` removes it; then prepare again",
                    p.worktree_id,
                    crate::sys::paths::shell_quote(&p.root.to_string_lossy())
                )
            } else {
                "move or remove that folder (or, if git delegate left it, run `git delegate gc`), then prepare again".to_string()
            };
            return Err(Error::usage(
                Code::WorkspaceExists,
                format!("the workspace folder {} already exists", p.root.display()),
                help,
            ));
        }
        if reg.symlink_metadata().is_ok() {
            return Err(Error::usage(
                Code::WorkspaceExists,
                format!(
                    "a worktree named {} is already registered at {}",
                    p.worktree_id,
                    reg.display()
                ),
                "run `git worktree list` and remove the stale worktree, or `git delegate gc`",
            ));
        }
    }
    Ok(())
}

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
    let mut result = create_all_inner(common_dir, baseline, baseline_tree, plans, sparse);
    if result.is_ok() && gix::interrupt::is_triggered() {
        result = Err(Error::interrupted());
    }
    if result.is_err() {
        for p in plans {
            let _ = remove_created(common_dir, p);
        }
    }
    result
}

/// Like [`create_all`], then `fill` (carrying ignored files) on the
/// workspace roots; the values it returns, one per root. Where the
/// workspace root is on btrfs and `snapshots` allows it (design §3.17),
/// the first workspace is made as a subvolume, checked out and filled,
/// and every other one is a snapshot of it (so it holds the carried files
/// too: `fill`'s value for the first is given for all).
pub fn create_all_filled<T: Clone>(
    common_dir: &Path,
    baseline: ObjectId,
    baseline_tree: ObjectId,
    plans: &[Plan],
    snapshots: crate::config::Snapshots,
    sparse: Option<&crate::git::sparse::Workspaces>,
    fill: impl FnOnce(&[PathBuf]) -> Result<Vec<T>>,
) -> Result<Vec<T>> {
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
    let mut result = create_snapshots(common_dir, baseline, baseline_tree, plans, sparse, fill);
    if result.is_ok() && gix::interrupt::is_triggered() {
        result = Err(Error::interrupted());
    }
    if result.is_err() {
        for p in plans {
            let _ = remove_created(common_dir, p);
        }
    }
    result
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
fn create_snapshots<T: Clone>(
    common_dir: &Path,
    baseline: ObjectId,
    baseline_tree: ObjectId,
    plans: &[Plan],
    sparse: Option<&crate::git::sparse::Workspaces>,
    fill: impl FnOnce(&[PathBuf]) -> Result<Vec<T>>,
) -> Result<Vec<T>> {
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
            s.write(common_dir, &registration(common_dir, &p.worktree_id))?;
        }
    }
    crate::sys::interrupt::pause("registered");
    let repo = crate::git::repo::open_worktree(&first.root)?;
    let git = |e: gix::Error| Error::git(format!("cannot check out {}", first.root.display()), e);
    let cores = cores();
    let mut index: gix::index::State = repo.index_from_tree(&baseline_tree).map_err(git)?.into();
    if let Some(s) = sparse {
        s.mark(&mut index);
    }
    checkout(&repo, &mut index, &first.root, cores)?;
    crate::sys::interrupt::pause("checked-out");
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
                return Err(Error::state(
                    Code::CheckoutFailed,
                    format!(
                        "cannot write {} in {}: file name too long",
                        crate::sys::paths::quote(rel),
                        p.root.display()
                    ),
                    "check free disk space, permissions and path lengths under the workspace root",
                ));
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
            return Err(Error::interrupted());
        }
        // The registered folder makes way for the snapshot: only while it
        // is still ours and holds nothing but its `.git` file.
        let taken = || {
            Error::usage(
                Code::WorkspaceExists,
                format!(
                    "the workspace folder {} was changed while it was made",
                    p.root.display()
                ),
                "move or remove that folder, then prepare again",
            )
        };
        if !is_ours(common_dir, &p.root, &p.worktree_id) {
            return Err(taken());
        }
        let _ = std::fs::remove_file(p.root.join(".git"));
        std::fs::remove_dir(&p.root).map_err(|_| taken())?;
        crate::sys::btrfs::snapshot(&first.root, &p.root).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                Error::usage(
                    Code::WorkspaceExists,
                    format!("the workspace folder {} already exists", p.root.display()),
                    "move or remove that folder, then prepare again",
                )
            } else {
                Error::io_at(
                    format!("cannot snapshot {}", first.root.display()),
                    &p.root,
                    e,
                )
                .in_workspace_root()
            }
        })?;
        crate::sys::fs::write_atomic(&p.root.join(".git"), &dotgit_line(common_dir, p))?;
        let dev = std::fs::symlink_metadata(&p.root)
            .map_err(|e| Error::io_at(format!("cannot read {}", p.root.display()), &p.root, e))?;
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
    // Index files last (see `create_all_inner`).
    crate::sys::parallel::try_map(
        plans.iter().zip(indexes),
        plans.len(),
        checkout_panicked,
        |(p, state)| {
            let path = Registration::new(common_dir, &p.worktree_id).index_file();
            gix::index::File::from_state(state, &path)
                .write(Default::default())
                .map_err(|e| checkout_failed(None, &p.root, &e))
        },
    )?;
    Ok(match value {
        Some(v) => vec![v; plans.len()],
        None => Vec::new(),
    })
}

fn cores() -> usize {
    crate::sys::parallel::threads(usize::MAX)
}

fn create_all_inner(
    common_dir: &Path,
    baseline: ObjectId,
    baseline_tree: ObjectId,
    plans: &[Plan],
    sparse: Option<&crate::git::sparse::Workspaces>,
) -> Result<()> {
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
    let repo = crate::git::repo::open_worktree(&first.root)?;
    let git = |e: gix::Error| Error::git(format!("cannot check out {}", first.root.display()), e);
    let cores = cores();
    let mut index: gix::index::State = repo.index_from_tree(&baseline_tree).map_err(git)?.into();
    if let Some(s) = sparse {
        s.mark(&mut index);
    }
    checkout(&repo, &mut index, &first.root, cores)?;
    crate::sys::interrupt::pause("checked-out");

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
        return Err(Error::interrupted());
    }
    let roots: Vec<&Path> = plans.iter().map(|p| p.root.as_path()).collect();
    settle(&roots, &mut indexes, cores)?;
    // Index files last: written after every file is settled, so no entry is racy.
    // One thread per workspace.
    crate::sys::parallel::try_map(
        plans.iter().zip(indexes),
        plans.len(),
        checkout_panicked,
        |(p, state)| {
            let path = Registration::new(common_dir, &p.worktree_id).index_file();
            gix::index::File::from_state(state, &path)
                .write(Default::default())
                .map_err(|e| checkout_failed(None, &p.root, &e))
        },
    )?;
    Ok(())
}

/// What a checkout thread's panic is reported as.
fn checkout_panicked() -> Error {
    Error::state(
        Code::Internal,
        "a checkout thread panicked",
        "report this bug",
    )
}

fn checkout_failed(
    repo: Option<(&gix::Repository, &gix::index::State)>,
    root: &Path,
    e: &(dyn std::error::Error + 'static),
) -> Error {
    let what = format!("cannot check out {}", root.display());
    if let Some(err) = Error::fs_cause(&what, Some(root), e) {
        return err.in_workspace_root();
    }
    if let Some(err) =
        repo.and_then(|(r, i)| crate::git::blob::checkout_filter_failed(r, i, root, e))
    {
        return err;
    }
    Error::state(
        Code::CheckoutFailed,
        format!("cannot check out {}: {e}", root.display()),
        "check free disk space, permissions and path lengths under the workspace root",
    )
}

/// Undo `register` and the files of a plan: only what this prepare made
/// (our `.git` pointer, our registration).
fn remove_created(common_dir: &Path, p: &Plan) -> Result<()> {
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
                        return Err(Error::io(
                            format!("cannot remove {}", root.display()),
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
        Err(e) => return Err(Error::io(format!("cannot remove {}", reg.display()), e)),
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

/// How [`register_as`] makes a workspace's folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Make {
    /// A plain folder.
    Folder,
    /// A new btrfs subvolume (the first workspace of a snapshot batch).
    Subvolume,
}

/// The `.git` file of a plan's folder: `gitdir: <registration>`.
fn dotgit_line(common_dir: &Path, p: &Plan) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let reg = registration(common_dir, &p.worktree_id);
    [b"gitdir: ", reg.as_os_str().as_bytes(), b"\n"].concat()
}

/// Make the workspace folder and its registration (locked first, so `git
/// worktree prune` can never take a half-made workspace).
fn register(common_dir: &Path, baseline: ObjectId, p: &Plan) -> Result<()> {
    register_as(common_dir, baseline, p, Make::Folder)
}

fn register_as(common_dir: &Path, baseline: ObjectId, p: &Plan, make: Make) -> Result<()> {
    let io = |what: &Path| {
        let what = what.to_path_buf();
        move |e| {
            Error::io_at(format!("cannot create {}", what.display()), &what, e).in_workspace_root()
        }
    };
    if let Some(parent) = p.root.parent() {
        std::fs::create_dir_all(parent).map_err(io(parent))?;
    }
    let made = match make {
        Make::Folder => std::fs::create_dir(&p.root),
        Make::Subvolume => crate::sys::btrfs::create_subvolume(&p.root),
    };
    made.map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            Error::usage(
                Code::WorkspaceExists,
                format!("the workspace folder {} already exists", p.root.display()),
                "move or remove that folder, then prepare again",
            )
        } else {
            Error::io_at(format!("cannot create {}", p.root.display()), &p.root, e)
                .in_workspace_root()
        }
    })?;
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

/// Check out `index` into the empty folder `root` with `threads` workers
/// (entries marked `SKIP_WORKTREE` are left out); the entries receive the
/// stat data of the files written. Anything already at a path is never
/// overwritten: a collision is an error.
fn checkout(
    repo: &gix::Repository,
    index: &mut gix::index::State,
    root: &Path,
    threads: usize,
) -> Result<()> {
    let git = |e: gix::Error| Error::git(format!("cannot check out {}", root.display()), e);
    let mut opts = repo
        .checkout_options(gix::worktree::stack::state::attributes::Source::IdMapping)
        .map_err(git)?;
    opts.destination_is_initially_empty = true;
    // Never over anything in the way (a carried ignored file, in a
    // verification snapshot): that is a collision, reported below.
    opts.overwrite_existing = false;
    opts.thread_limit = Some(threads);
    let objects = repo
        .objects
        .clone()
        .into_arc()
        .map_err(|e| Error::git("cannot open objects", e))?;
    let outcome = gix::worktree::state::checkout(
        index,
        root.to_path_buf(),
        objects,
        &gix::progress::Discard,
        &gix::progress::Discard,
        &gix::interrupt::IS_INTERRUPTED,
        opts,
    )
    .map_err(|e| checkout_failed(Some((repo, &*index)), root, &e))?;
    if gix::interrupt::is_triggered() {
        return Err(Error::interrupted());
    }
    if let Some(first) = outcome.errors.first() {
        let what = format!(
            "cannot write {} in {}",
            crate::sys::paths::quote(first.path.as_ref()),
            root.display()
        );
        if let Some(err) = Error::fs_cause(&what, Some(root), &first.error) {
            return Err(err.in_workspace_root());
        }
        if let Some(err) = crate::git::blob::checkout_filter_failed(repo, index, root, &first.error)
        {
            return Err(err);
        }
        return Err(Error::state(
            Code::CheckoutFailed,
            format!(
                "cannot write {} in {}: {}",
                crate::sys::paths::quote(first.path.as_ref()),
                root.display(),
                first.error
            ),
            "check free disk space, permissions and path lengths under the workspace root",
        ));
    }
    if let Some(first) = outcome.collisions.first() {
        return Err(Error::state(
            Code::CheckoutFailed,
            format!(
                "cannot write {} in {}: something is in the way",
                crate::sys::paths::quote(first.path.as_ref()),
                root.display()
            ),
            "check free disk space, permissions and path lengths under the workspace root",
        ));
    }
    // gix writes `ident` its own way; git's bytes (design §3.15).
    crate::git::ident::fix_checkout(repo, index, root)
}

/// The filesystem clock under `dir` as (seconds, nanoseconds), probed with a
/// file, since that clock can lag the system clock by a tick.
fn fs_clock(dir: &Path) -> Result<(i64, u32)> {
    use std::os::unix::fs::MetadataExt;
    let probe = dir.join(".git-delegate-clock");
    let now = std::fs::write(&probe, b"")
        .and_then(|_| std::fs::symlink_metadata(&probe))
        .map_err(|e| Error::io(format!("cannot write in {}", dir.display()), e));
    let _ = std::fs::remove_file(&probe);
    let md = now?;
    Ok((md.mtime(), md.mtime_nsec() as u32))
}

/// Rough cost of dating one file (utimensat + lstat), to weigh against a wait.
const DATE_COST: std::time::Duration = std::time::Duration::from_micros(12);

/// Make fresh indexes stat caches that neither git nor gix must second-guess.
///
/// git compares whole seconds and treats an entry whose mtime is not older
/// than the index file as "racily clean" (re-hashed on every status), and a
/// same-size edit within the second a file was written would look clean to
/// it. Files written in an earlier second than the filesystem clock's
/// current one are neither, once the index is written (nobody edits a
/// workspace before prepare hands it out). For the files of the current
/// second there are two ways out, whichever is cheaper: wait until the clock
/// enters the next second, or date those files one whole second back and
/// take their stat data again.
fn settle(roots: &[&Path], indexes: &mut [gix::index::State], cores: usize) -> Result<()> {
    let Some(first) = roots.first() else {
        return Ok(());
    };
    let (now, nsecs) = fs_clock(first)?;
    let racy = |e: &gix::index::Entry| {
        i64::from(e.stat.mtime.secs) >= now && e.mode != gix::index::entry::Mode::COMMIT
    };
    let in_future = |e: &gix::index::Entry| i64::from(e.stat.mtime.secs) > now;
    let count: usize = indexes
        .iter()
        .map(|i| i.entries().iter().filter(|e| racy(e)).count())
        .sum();
    let future = indexes.iter().any(|i| i.entries().iter().any(&in_future));
    let wait = std::time::Duration::from_nanos(u64::from(1_000_000_000u32.saturating_sub(nsecs)));
    let dating = DATE_COST * u32::try_from(count / cores.max(1)).unwrap_or(u32::MAX);
    if count == 0 {
        return Ok(());
    }
    if !future && wait < dating {
        // Sleep into the next second of the filesystem clock.
        std::thread::sleep(wait);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while fs_clock(first)?.0 <= now && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        if fs_clock(first)?.0 > now {
            return Ok(());
        }
    }
    let stamp = rustix::fs::Timespec {
        tv_sec: now - 1,
        tv_nsec: 0,
    };
    for (root, index) in roots.iter().zip(indexes.iter_mut()) {
        date(root, index, &racy, stamp, cores)?;
    }
    Ok(())
}

/// Date the entries `which` picks to `stamp` and take their stat data again.
fn date(
    root: &Path,
    index: &mut gix::index::State,
    which: &(dyn Fn(&gix::index::Entry) -> bool + Sync),
    stamp: rustix::fs::Timespec,
    threads: usize,
) -> Result<()> {
    let times = rustix::fs::Timestamps {
        last_access: stamp,
        last_modification: stamp,
    };
    let (entries, paths) = index.entries_mut_and_pathbacking();
    let chunk = entries.len().div_ceil(threads.max(1)).max(1);
    let date = |entries: &mut [gix::index::Entry]| -> Result<()> {
        for e in entries {
            if !which(e) {
                continue;
            }
            let path = root.join(crate::sys::paths::to_os(e.path_in(paths)));
            let io =
                |err: std::io::Error| Error::io(format!("cannot date {}", path.display()), err);
            rustix::fs::utimensat(
                rustix::fs::CWD,
                &path,
                &times,
                rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
            )
            .map_err(|err| io(err.into()))?;
            let st = rustix::fs::lstat(&path).map_err(|err| io(err.into()))?;
            e.stat = stat_of(&st);
        }
        Ok(())
    };
    let chunks: Vec<_> = entries.chunks_mut(chunk).collect();
    let threads = chunks.len();
    crate::sys::parallel::try_map(chunks, threads, checkout_panicked, date)?;
    Ok(())
}

/// Can files under `a` be cloned into `b` (FICLONE)? Probed with a
/// one-byte file; any failure means no.
fn can_clone(a: &Path, b: &Path) -> bool {
    use rustix::fs::{self as rfs, Mode, OFlags};
    let src = a.join(".git-delegate-clone-probe");
    let dst = b.join(".git-delegate-clone-probe");
    let flags = OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC;
    let ok = (|| -> rustix::io::Result<()> {
        let s = rfs::open(&src, flags, Mode::from_raw_mode(0o600))?;
        rustix::io::write(&s, b"x")?;
        let d = rfs::open(&dst, flags, Mode::from_raw_mode(0o600))?;
        rfs::ioctl_ficlone(&d, &s)
    })()
    .is_ok();
    let _ = std::fs::remove_file(&src);
    let _ = std::fs::remove_file(&dst);
    ok
}

/// Index stat data from a `stat` result, as `gix::index::entry::Stat::from_fs` makes them.
#[allow(clippy::unnecessary_cast)]
fn stat_of(st: &rustix::fs::Stat) -> gix::index::entry::Stat {
    crate::git::stat::index_stat(
        (st.st_mtime as i64, st.st_mtime_nsec as i64),
        (st.st_ctime as i64, st.st_ctime_nsec as i64),
        st.st_dev as u64,
        st.st_ino as u64,
        (st.st_uid as u32, st.st_gid as u32),
        st.st_size as u64,
    )
}

/// The longest path the kernel takes (Linux `PATH_MAX`, terminator included).
const PATH_MAX: usize = 4096;

/// How the files of later workspaces are made from the first one's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    /// FICLONE for files of at least [`CLONE_MIN`] bytes, copies below.
    Clone,
    /// Copies only (the filesystem cannot share extents).
    Copy,
}

/// Below this size a file is copied even where it could be cloned: a
/// small file costs a data block either way, and creating it with its data
/// is cheaper than a clone (measured on XFS: FICLONE of a small file costs
/// about three times a write of its data).
const CLONE_MIN: u64 = 64 * 1024;

/// Files up to this size are read once and written from memory into every
/// destination; bigger ones are copied in the kernel (`copy_file_range`).
const BUFFER_MAX: u64 = 1 << 20;

/// Make the files of `first` (checked out at `src_root`, its entries
/// carrying their stat data) in every plan's folder, and return each of
/// those workspaces' index (the same entries with their own stat data).
fn replicate(
    src_root: &Path,
    first: &gix::index::State,
    plans: &[Plan],
    method: Method,
    threads: usize,
) -> Result<Vec<gix::index::State>> {
    let roots: Vec<&Path> = plans.iter().map(|p| p.root.as_path()).collect();
    let mut indexes: Vec<gix::index::State> = plans.iter().map(|_| first.clone()).collect();
    let n = first.entries().len();
    let chunk = n.div_ceil(threads.max(1)).max(1);
    let paths = first.path_backing();
    // Per thread: the same entry range of every destination index.
    let mut work: Vec<(usize, Vec<&mut [gix::index::Entry]>)> = Vec::new();
    {
        let mut per_dest: Vec<std::slice::ChunksMut<'_, gix::index::Entry>> = indexes
            .iter_mut()
            .map(|i| i.entries_mut().chunks_mut(chunk))
            .collect();
        let mut start = 0;
        while start < n {
            let slices: Vec<&mut [gix::index::Entry]> =
                per_dest.iter_mut().filter_map(|c| c.next()).collect();
            let len = slices.first().map_or(0, |s| s.len());
            if len == 0 {
                break;
            }
            work.push((start, slices));
            start += len;
        }
    }
    let src_entries = first.entries();
    let threads = work.len();
    crate::sys::parallel::try_map(work, threads, checkout_panicked, |(start, mut slices)| {
        let len = slices.first().map_or(0, |x| x.len());
        let mut walk = Replicator::new(src_root, &roots, method)?;
        for i in 0..len {
            if start == 0 && i == len / 2 {
                crate::sys::interrupt::pause("replicating");
            }
            if gix::interrupt::is_triggered() {
                return Err(Error::interrupted());
            }
            let e = &src_entries[start + i];
            if e.flags.contains(gix::index::entry::Flags::SKIP_WORKTREE) {
                continue; // not checked out (design §3.15)
            }
            let stats = walk.entry(e.path_in(paths), e.mode)?;
            for (slice, stat) in slices.iter_mut().zip(stats) {
                if let Some(stat) = stat {
                    slice[i].stat = stat;
                }
            }
        }
        Ok(())
    })?;
    Ok(indexes)
}

/// An fd-relative walk over sorted index paths: the folders of the current
/// path are kept open in the source and in every destination, and nothing
/// is ever followed through a symlink.
struct Replicator<'a> {
    src_root: &'a Path,
    dst_roots: &'a [&'a Path],
    method: Method,
    /// Open folders below the roots: (name, source fd, destination fds).
    stack: Vec<(Vec<u8>, OwnedFd, Vec<OwnedFd>)>,
    src_base: OwnedFd,
    dst_base: Vec<OwnedFd>,
    buf: Vec<u8>,
}

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

impl<'a> Replicator<'a> {
    fn new(
        src_root: &'a Path,
        dst_roots: &'a [&'a Path],
        method: Method,
    ) -> Result<Replicator<'a>> {
        Ok(Replicator {
            src_root,
            dst_roots,
            method,
            stack: Vec::new(),
            src_base: crate::workspace::carry::open_root(src_root)?,
            dst_base: dst_roots
                .iter()
                .map(|r| crate::workspace::carry::open_root(r))
                .collect::<Result<_>>()?,
            buf: Vec::new(),
        })
    }

    fn err(root: &Path, rel: &[u8], what: &str, e: rustix::io::Errno) -> Error {
        let path = root.join(crate::sys::paths::to_os(rel.into()));
        Error::io_at(
            format!("cannot {what} {}", path.display()),
            root,
            std::io::Error::from_raw_os_error(e.raw_os_error()),
        )
        .in_workspace_root()
    }

    /// Open (and create in the destinations) the folders `dirs`.
    fn enter(&mut self, dirs: &[&[u8]], rel: &[u8]) -> Result<()> {
        let keep = self
            .stack
            .iter()
            .zip(dirs)
            .take_while(|((name, _, _), d)| name.as_slice() == **d)
            .count();
        self.stack.truncate(keep);
        for d in &dirs[keep..] {
            let (src_parent, dst_parents) = self.current();
            let sfd = crate::workspace::carry::open_dir_at(src_parent, *d)
                .map_err(|e| Self::err(self.src_root, rel, "open", e))?;
            let mut dfds = Vec::with_capacity(dst_parents.len());
            for (i, parent) in dst_parents.iter().enumerate() {
                match rustix::fs::mkdirat(*parent, *d, rustix::fs::Mode::from_raw_mode(0o777)) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(Self::err(self.dst_roots[i], rel, "create", e)),
                }
                dfds.push(
                    crate::workspace::carry::open_dir_at(*parent, *d)
                        .map_err(|e| Self::err(self.dst_roots[i], rel, "open", e))?,
                );
            }
            self.stack.push((d.to_vec(), sfd, dfds));
        }
        Ok(())
    }

    /// The innermost open folder, in the source and in every destination.
    fn current(&self) -> (BorrowedFd<'_>, Vec<BorrowedFd<'_>>) {
        match self.stack.last() {
            Some((_, s, ds)) => (s.as_fd(), ds.iter().map(|f| f.as_fd()).collect()),
            None => (
                self.src_base.as_fd(),
                self.dst_base.iter().map(|f| f.as_fd()).collect(),
            ),
        }
    }

    /// Make the entry `rel` in every destination; its stat data per destination.
    fn entry(
        &mut self,
        rel: &gix::bstr::BStr,
        mode: gix::index::entry::Mode,
    ) -> Result<Vec<Option<gix::index::entry::Stat>>> {
        use rustix::fs::{self as rfs, AtFlags, Mode, OFlags};
        let rel: &[u8] = rel.as_ref();
        // The walk is fd-relative and could go deeper than a path can name;
        // such a workspace would be unusable (git itself stops at PATH_MAX),
        // so it fails like a checkout of the same file does.
        for root in self.dst_roots {
            if root.as_os_str().len() + 1 + rel.len() >= PATH_MAX {
                return Err(Error::state(
                    Code::CheckoutFailed,
                    format!(
                        "cannot write {} in {}: file name too long",
                        crate::sys::paths::quote(rel.into()),
                        root.display()
                    ),
                    "check free disk space, permissions and path lengths under the workspace root",
                ));
            }
        }
        let mut parts: Vec<&[u8]> = rel.split(|b| *b == b'/').collect();
        let name = parts.pop().unwrap_or_default();
        self.enter(&parts, rel)?;
        let mut buf = std::mem::take(&mut self.buf);
        let (src_dir, dst_dirs) = self.current();
        let (src_root, dst_roots, method) = (self.src_root, self.dst_roots, self.method);
        let mut out = Vec::with_capacity(dst_dirs.len());
        // A symlink entry is a plain file holding its target where the
        // checkout made one (`core.symlinks = false`, design §3.15): copied
        // as the file it is.
        let link = mode == gix::index::entry::Mode::SYMLINK
            && rfs::FileType::from_raw_mode(
                rfs::statat(src_dir, name, AtFlags::SYMLINK_NOFOLLOW)
                    .map_err(|e| Self::err(src_root, rel, "read", e))?
                    .st_mode,
            ) == rfs::FileType::Symlink;
        match mode {
            gix::index::entry::Mode::SYMLINK if link => {
                let target = rfs::readlinkat(src_dir, name, Vec::new())
                    .map_err(|e| Self::err(src_root, rel, "read the link", e))?;
                for (i, d) in dst_dirs.iter().enumerate() {
                    let fail = |what, e| Self::err(dst_roots[i], rel, what, e);
                    rfs::symlinkat(target.as_c_str(), *d, name)
                        .map_err(|e| fail("create the link", e))?;
                    let st = rfs::statat(*d, name, AtFlags::SYMLINK_NOFOLLOW)
                        .map_err(|e| fail("read", e))?;
                    out.push(Some(stat_of(&st)));
                }
            }
            gix::index::entry::Mode::FILE
            | gix::index::entry::Mode::FILE_EXECUTABLE
            | gix::index::entry::Mode::SYMLINK => {
                let sfd = rfs::openat(
                    src_dir,
                    name,
                    OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .map_err(|e| Self::err(src_root, rel, "open", e))?;
                let st = rfs::fstat(&sfd).map_err(|e| Self::err(src_root, rel, "read", e))?;
                let size = st.st_size as u64;
                let perm = Mode::from_raw_mode(st.st_mode as u32 & 0o777);
                let clone = method == Method::Clone && size >= CLONE_MIN;
                let buffered = !clone && size <= BUFFER_MAX;
                if buffered {
                    buf.clear();
                    buf.resize(size as usize, 0);
                    let mut at = 0;
                    while at < buf.len() {
                        match rustix::io::pread(&sfd, &mut buf[at..], at as u64) {
                            Ok(0) => break,
                            Ok(n) => at += n,
                            Err(e) => return Err(Self::err(src_root, rel, "read", e)),
                        }
                    }
                    buf.truncate(at);
                }
                for (i, d) in dst_dirs.iter().enumerate() {
                    let fail = |what, e| Self::err(dst_roots[i], rel, what, e);
                    let dfd = crate::sys::fs::create_new_at(*d, name, perm)
                        .map_err(|e| fail("create", e))?;
                    if buffered {
                        let mut at = 0;
                        while at < buf.len() {
                            at += rustix::io::write(&dfd, &buf[at..])
                                .map_err(|e| fail("write", e))?;
                        }
                    } else {
                        let cloned = clone
                            && match rfs::ioctl_ficlone(&dfd, &sfd) {
                                Ok(()) => true,
                                Err(e) if crate::workspace::carry::is_no_reflink(e) => false,
                                Err(e) => return Err(fail("clone into", e)),
                            };
                        if !cloned {
                            crate::workspace::carry::copy_data(sfd.as_fd(), dfd.as_fd(), size)
                                .map_err(|e| fail("write", e))?;
                        }
                    }
                    let st = rfs::fstat(&dfd).map_err(|e| fail("read", e))?;
                    out.push(Some(stat_of(&st)));
                }
            }
            // Gitlinks: an empty folder, as a checkout leaves it.
            _ => {
                for (i, d) in dst_dirs.iter().enumerate() {
                    match rfs::mkdirat(*d, name, Mode::from_raw_mode(0o777)) {
                        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                        Err(e) => return Err(Self::err(dst_roots[i], rel, "create", e)),
                    }
                    out.push(None);
                }
            }
        }
        drop(dst_dirs);
        self.buf = buf;
        Ok(out)
    }
}

/// What a task's workspace path leads to now, compared with the folder
/// prepare made (design §3.2: anything else is `workspace_missing`).
#[derive(Debug)]
pub enum Identity {
    /// The folder prepare made, held open (worktree mode; a scratch copy
    /// is recognised by its own marker and not held), at its real path;
    /// for a workspace below the workspace root, with the folders above it
    /// held open too (design §3.18: it is removed through them).
    Ours {
        fd: Option<OwnedFd>,
        real: PathBuf,
        parents: Option<crate::workspace::shared_root::Parents>,
    },
    /// Nothing is there.
    Missing,
    /// Something else is there (why, for people): never read, quiesced,
    /// rescued nor removed.
    Replaced(&'static str),
}

impl Identity {
    pub fn health(&self) -> Health {
        match self {
            Identity::Ours { .. } => Health::Ours,
            Identity::Missing => Health::Missing,
            Identity::Replaced(_) => Health::Foreign,
        }
    }
}

/// The identity of the workspace folder at `root`, just made, for the
/// batch record (`None` when it cannot be read: the batch then falls back
/// to the checks of a batch recorded without one).
pub fn folder_of(root: &Path) -> Option<crate::record::batch::Folder> {
    let fd = open_nofollow(root).ok()?;
    let st = rustix::fs::fstat(&fd).ok()?;
    Some(crate::record::batch::Folder {
        dev: st.st_dev as u64,
        ino: st.st_ino as u64,
        path: real_path(&fd, root)?,
        subvolume: crate::sys::btrfs::subvolume_id(fd.as_fd()).map(|id| format!("{id:016x}")),
    })
}

fn open_nofollow(root: &Path) -> rustix::io::Result<OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// Where the opened folder really is (the kernel's name for it), or the
/// canonical form of `root` where `/proc` cannot tell.
fn real_path(fd: &OwnedFd, root: &Path) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    match std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())) {
        Ok(p) if p.is_absolute() => Some(p),
        _ => std::fs::canonicalize(root).ok(),
    }
}

/// Is the task's workspace the folder prepare made? Checked before a
/// workspace is read, quiesced, rescued or removed: the path must lead,
/// without a symlink at its end, to a real folder whose device and inode
/// and real path are the ones recorded at prepare time, whose `.git` file
/// (read through the opened folder) points at the task's registration. A
/// batch recorded before identities were kept has no device, inode nor
/// real path to compare: there, the folder must not be a symlink and its
/// `.git` file must point back.
pub fn identify(common_dir: &Path, task: &crate::record::batch::Task) -> Identity {
    // A remote task has no workspace here (design §3.14).
    if task.remote {
        return Identity::Missing;
    }
    if task.kind() == Mode::Scratch {
        return match crate::workspace::scratch::health(common_dir, &task.root) {
            Health::Ours => Identity::Ours {
                fd: None,
                real: task.root.clone(),
                parents: None,
            },
            Health::Missing => Identity::Missing,
            Health::Foreign => Identity::Replaced("is no longer the copy prepare made"),
        };
    }
    identify_at(
        common_dir,
        &task.root,
        &task.worktree_id,
        task.folder.as_ref(),
        Reach::Beneath,
    )
}

/// How a workspace folder is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// A batch's workspace, `<root>/<repo-name>-<fp>/<batch-short>/<name>`:
    /// the repository folder, the batch folder and the workspace each
    /// through the handle of the one above, never through a symlink, and
    /// only when ours (design §3.18).
    Beneath,
    /// Any other folder (a joined workspace, a worktree the user moved):
    /// by its path, without a symlink at its end.
    Path,
}

/// Why the workspace of `task` is refused below the workspace root (design
/// §3.18: another user's folder, or a symlink where a folder of ours is
/// expected), if it is: for the reports of gc and drop, which leave it alone.
pub fn refusal(
    task: &crate::record::batch::Task,
) -> Option<crate::workspace::shared_root::Refused> {
    if task.remote
        || task.kind() == Mode::Scratch
        || !crate::workspace::shared_root::is_beneath_shape(&task.root)
    {
        return None;
    }
    crate::workspace::shared_root::refusal(&task.root)
}

fn identify_at(
    common_dir: &Path,
    root: &Path,
    worktree_id: &str,
    made: Option<&crate::record::batch::Folder>,
    reach: Reach,
) -> Identity {
    use crate::workspace::shared_root::{Opened, Reason};
    use rustix::io::Errno;
    let (fd, parents) =
        if reach == Reach::Beneath && crate::workspace::shared_root::is_beneath_shape(root) {
            match crate::workspace::shared_root::open_workspace(root) {
                Ok(Opened::Ours(ws)) => (ws.dir.into_fd(), Some(ws.parents)),
                Ok(Opened::Missing) => return Identity::Missing,
                Ok(Opened::Refused(r)) if r.path == root => {
                    return Identity::Replaced(match r.reason {
                        Reason::Symlink => "is a symbolic link now",
                        Reason::NotAFolder => "is not a folder any more",
                        _ => "is owned by another user",
                    })
                }
                Ok(Opened::Refused(r)) => {
                    return Identity::Replaced(match r.reason {
                        Reason::OtherOwner => "is in a folder another user owns",
                        _ => "is reached through a symbolic link now",
                    })
                }
                Err(_) => return Identity::Replaced("cannot be opened"),
            }
        } else {
            match open_nofollow(root) {
                Ok(fd) => (fd, None),
                Err(Errno::NOENT) if root.symlink_metadata().is_err() => return Identity::Missing,
                Err(_) => {
                    return Identity::Replaced(match root.symlink_metadata() {
                        Ok(m) if m.file_type().is_symlink() => "is a symbolic link now",
                        Ok(m) if !m.is_dir() => "is not a folder any more",
                        _ => "cannot be opened",
                    })
                }
            }
        };
    let Ok(st) = rustix::fs::fstat(&fd) else {
        return Identity::Replaced("cannot be opened");
    };
    if let Some(m) = made {
        // A subvolume's device number is handed out anew after a remount:
        // its own id stands in for it (design §3.17).
        let same_dev = match &m.subvolume {
            Some(id) => {
                crate::sys::btrfs::subvolume_id(fd.as_fd()).map(|now| format!("{now:016x}"))
                    == Some(id.clone())
            }
            None => st.st_dev as u64 == m.dev,
        };
        if !same_dev || st.st_ino as u64 != m.ino {
            return Identity::Replaced("is another folder than the one prepare made");
        }
    }
    let Some(real) = real_path(&fd, root) else {
        return Identity::Replaced("cannot be opened");
    };
    let expected = match made {
        Some(m) => Some(m.path.clone()),
        None => root
            .parent()
            .and_then(|p| std::fs::canonicalize(p).ok())
            .zip(root.file_name())
            .map(|(p, n)| p.join(n)),
    };
    if expected.as_ref() != Some(&real) {
        return Identity::Replaced("is reached through a symbolic link now");
    }
    if !dotgit_points_at(&fd, &registration(common_dir, worktree_id)) {
        return Identity::Replaced("has a .git file that no longer points at its registration");
    }
    Identity::Ours {
        fd: Some(fd),
        real,
        parents,
    }
}

/// Does the `.git` file inside the opened folder point at `reg`? Never
/// through a symlink.
fn dotgit_points_at(dir: &OwnedFd, reg: &Path) -> bool {
    use rustix::fs::{Mode, OFlags};
    use std::io::Read;
    use std::os::unix::ffi::OsStrExt;
    let Ok(f) = rustix::fs::openat(
        dir,
        ".git",
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
        Mode::empty(),
    ) else {
        return false;
    };
    let mut text = Vec::new();
    if std::fs::File::from(f)
        .take(64 * 1024)
        .read_to_end(&mut text)
        .is_err()
    {
        return false;
    }
    let text = text.strip_suffix(b"\n").unwrap_or(&text);
    let Some(target) = text.strip_prefix(b"gitdir: ") else {
        return false;
    };
    Path::new(std::ffi::OsStr::from_bytes(target)) == reg
}

/// Is `root` the workspace we made: its `.git` file points at our
/// registration? (Prepare's own undo, and `git worktree move` detection;
/// tasks go through [`identify`].)
pub fn is_ours(common_dir: &Path, root: &Path, worktree_id: &str) -> bool {
    matches!(
        identify_at(common_dir, root, worktree_id, None, Reach::Path),
        Identity::Ours { .. }
    )
}

/// Whether a task's workspace folder is there and is ours.
pub fn health(common_dir: &Path, task: &crate::record::batch::Task) -> Health {
    identify(common_dir, task).health()
}

/// Where the registration's `gitdir` file says its worktree is, if readable.
fn registered_location(common_dir: &Path, worktree_id: &str) -> Option<PathBuf> {
    let text = std::fs::read(Registration::new(common_dir, worktree_id).gitdir_file()).ok()?;
    let text = text.strip_suffix(b"\n").unwrap_or(&text);
    use std::os::unix::ffi::OsStrExt;
    let dotgit = PathBuf::from(std::ffi::OsStr::from_bytes(text));
    dotgit.parent().map(Path::to_path_buf)
}

/// Has the registration been moved (`git worktree move`) to a folder other
/// than `root` that still points back at it? Then it is the user's now.
fn moved_elsewhere(common_dir: &Path, root: &Path, worktree_id: &str) -> bool {
    match registered_location(common_dir, worktree_id) {
        Some(at) => at != root && is_ours(common_dir, &at, worktree_id),
        None => false,
    }
}

/// Remove a workspace folder of a batch, below the workspace root, that no
/// identity was recorded for (a verification workspace, a corrupt batch's)
/// and its registration; tasks of a batch go through [`remove_task`].
pub fn remove(common_dir: &Path, root: &Path, worktree_id: &str) -> Result<Removal> {
    remove_at(common_dir, root, worktree_id, None, Reach::Beneath)
}

/// Remove a workspace `join` has just made at a folder of the user's
/// choosing (design §3.14), and its registration.
pub fn remove_joined(common_dir: &Path, root: &Path, worktree_id: &str) -> Result<Removal> {
    remove_at(common_dir, root, worktree_id, None, Reach::Path)
}

/// Remove a task's workspace folder and its registration, never a folder
/// that is not the one prepare made ([`identify`]). A folder the user
/// replaced is left alone (its stale registration goes); a workspace the
/// user moved with `git worktree move` is left alone with its registration,
/// unlocked, as an ordinary worktree. Both report [`Removal::Foreign`].
pub fn remove_task(common_dir: &Path, task: &crate::record::batch::Task) -> Result<Removal> {
    if task.remote {
        return Ok(Removal::Missing);
    }
    if task.kind() == Mode::Scratch {
        return crate::workspace::scratch::remove(common_dir, &task.root);
    }
    remove_at(
        common_dir,
        &task.root,
        &task.worktree_id,
        task.folder.as_ref(),
        Reach::Beneath,
    )
}

fn remove_at(
    common_dir: &Path,
    root: &Path,
    worktree_id: &str,
    made: Option<&crate::record::batch::Folder>,
    reach: Reach,
) -> Result<Removal> {
    if crate::record::batch::kind_of(worktree_id) == Mode::Scratch {
        return crate::workspace::scratch::remove(common_dir, root);
    }
    if moved_elsewhere(common_dir, root, worktree_id) {
        release(common_dir, worktree_id)?;
        return Ok(Removal::Foreign);
    }
    let identity = identify_at(common_dir, root, worktree_id, made, reach);
    let state = match identity.health() {
        Health::Ours => Removal::Removed,
        Health::Missing => Removal::Missing,
        Health::Foreign => Removal::Foreign,
    };
    if let Identity::Ours {
        fd: Some(fd),
        parents,
        ..
    } = identity
    {
        remove_held(root, fd, parents.as_ref())?;
    }
    crate::workspace::submodules::unregister(common_dir, root, worktree_id)?;
    let reg = registration(common_dir, worktree_id);
    match std::fs::remove_dir_all(&reg) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io(format!("cannot remove {}", reg.display()), e)),
    }
    if state != Removal::Foreign {
        remove_empty_parents(root, reach);
    }
    Ok(state)
}

/// Remove the folders above the task's workspace when they are empty (the
/// batch folder and the repository folder, through their handles, design
/// §3.18; a scratch copy's container). Best effort.
pub fn remove_empty_parents_of(task: &crate::record::batch::Task) {
    if task.remote {
        return;
    }
    match task.kind() {
        Mode::Worktree => remove_empty_parents(&task.root, Reach::Beneath),
        Mode::Scratch => crate::sys::fs::remove_empty_parents(&task.root, 2),
    }
}

/// Remove the batch folder and the repository folder above a workspace
/// when they are empty: through their handles below the workspace root
/// (design §3.18), by path elsewhere.
fn remove_empty_parents(root: &Path, reach: Reach) {
    match reach {
        Reach::Beneath => crate::workspace::shared_root::remove_empty_parents(root),
        Reach::Path => crate::sys::fs::remove_empty_parents(root, 2),
    }
}

/// Remove the folder `root` that `fd` holds open: its content through the
/// handle (never following a symlink nor crossing into another
/// filesystem), then the empty folder, only while `root`'s name still
/// leads to that folder: in the batch folder `parents` holds open (design
/// §3.18), or, without it, in the folder `root`'s parent path leads to.
fn remove_held(
    root: &Path,
    fd: OwnedFd,
    parents: Option<&crate::workspace::shared_root::Parents>,
) -> Result<()> {
    let (Some(parent), Some(name)) = (root.parent(), root.file_name()) else {
        return Ok(());
    };
    match parents {
        Some(p) => p.batch.remove_child(name, fd),
        None => {
            let pfd = crate::workspace::carry::open_root(parent)?;
            crate::workspace::shared_root::remove_held_at(pfd.as_fd(), root, name, fd)
        }
    }
}

/// Workspaces whose index lists at most this many entries are removed in
/// place: deleting that few files costs less than starting a deleter.
const REMOVE_IN_PLACE_MAX: u32 = 128;

/// Like [`remove_task`], but a large workspace that is ours is moved into
/// the trash (one rename) instead of being deleted here; the trash folder
/// is returned so the caller can start the background deleter
/// ([`crate::workspace::trash::spawn_purger`]) once it is done. Falls back to
/// [`remove_task`] wherever the move cannot be made.
pub fn discard(
    common_dir: &Path,
    task: &crate::record::batch::Task,
) -> Result<(Removal, Option<PathBuf>)> {
    if task.remote {
        return Ok((Removal::Missing, None));
    }
    let (root, worktree_id) = (task.root.as_path(), task.worktree_id.as_str());
    let small = index_entries(common_dir, worktree_id).is_some_and(|n| n <= REMOVE_IN_PLACE_MAX);
    if small || task.kind() == Mode::Scratch || moved_elsewhere(common_dir, root, worktree_id) {
        return remove_task(common_dir, task).map(|r| (r, None));
    }
    let Identity::Ours {
        fd: Some(fd),
        parents: Some(parents),
        ..
    } = identify(common_dir, task)
    else {
        return remove_task(common_dir, task).map(|r| (r, None));
    };
    let Ok(held) = rustix::fs::fstat(&fd) else {
        return remove_task(common_dir, task).map(|r| (r, None));
    };
    let Some(trash) =
        crate::workspace::trash::put(&parents, root, (held.st_dev as u64, held.st_ino as u64))
    else {
        return remove_task(common_dir, task).map(|r| (r, None));
    };
    crate::workspace::submodules::unregister(common_dir, root, worktree_id)?;
    let reg = registration(common_dir, worktree_id);
    match std::fs::remove_dir_all(&reg) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io(format!("cannot remove {}", reg.display()), e)),
    }
    drop(parents);
    remove_empty_parents(root, Reach::Beneath);
    Ok((Removal::Removed, Some(trash)))
}

/// The number of entries the workspace's index lists (its header), if readable.
fn index_entries(common_dir: &Path, worktree_id: &str) -> Option<u32> {
    use std::io::Read;
    let mut head = [0u8; 12];
    std::fs::File::open(Registration::new(common_dir, worktree_id).index_file())
        .and_then(|mut f| f.read_exact(&mut head))
        .ok()?;
    (&head[..4] == b"DIRC").then(|| u32::from_be_bytes([head[8], head[9], head[10], head[11]]))
}

/// Unregister-free hand-over for `apply --keep`: the workspace stays as an
/// ordinary registered worktree, unlocked, no longer owned by a batch.
pub fn release(common_dir: &Path, worktree_id: &str) -> Result<()> {
    if let Some(root) = registered_location(common_dir, worktree_id) {
        crate::workspace::submodules::release(common_dir, &root, worktree_id)?;
    }
    let locked = Registration::new(common_dir, worktree_id).locked_file();
    match std::fs::remove_file(&locked) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(format!("cannot unlock {}", locked.display()), e)),
    }
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
