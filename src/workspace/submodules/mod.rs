//! Submodules, read-only (design §3.15): a source's submodules found and
//! checked (a dirty one is refused), each workspace given every initialized
//! submodule as a linked worktree of the submodule's own repository
//! (`<module-git-dir>/worktrees/<workspace id>`: detached at the commit the
//! baseline records, locked with the workspace's lock reason, objects shared,
//! no network), nested submodules included; a workspace's submodules checked
//! for a task's changes (`changed`, apply's `submodule_changed`); and those
//! registrations found and removed (or unlocked) with their workspace.
//!
//! Owns: what a submodule is here (a gitlink entry of an index, its folder,
//! its `.git` file and the repository that names), what makes one dirty,
//! the registrations made in submodule repositories.
//! Its failures are `WorkspaceError` (the submodule, the file or
//! repository, and the cause); `ops::explain` words them.
//! Never: writes into the source's submodules (their working trees, indexes,
//! refs or config), fetches, or removes a registration it cannot prove it
//! made (locked with a git-delegate lock reason, under the workspace id, its
//! `gitdir` file pointing inside the workspace being removed).

use std::path::{Path, PathBuf};

use gix::bstr::{BString, ByteSlice};
use gix::ObjectId;

use crate::git::registration::Registration;
pub use crate::workspace::error::Moved;
use crate::workspace::Cause;
use crate::workspace::WorkspaceError;

type Result<T, E = WorkspaceError> = std::result::Result<T, E>;

mod registrations;
pub use registrations::{changed, release, unregister};

/// One submodule of a source, found through the index of its superproject.
#[derive(Debug, Clone)]
pub struct Module {
    /// `/`-separated, relative to the source root (nested ones included).
    pub path: BString,
    /// The commit its superproject records (its gitlink), which is its HEAD.
    pub commit: ObjectId,
    /// The submodule's own repository (its common dir, canonical); `None`
    /// for a submodule that is not initialized (checked out) in the source.
    pub git_dir: Option<PathBuf>,
}

/// Is `path` strictly below the folder `dir`?
fn is_below(path: &[u8], dir: &[u8]) -> bool {
    path.len() > dir.len() && path.starts_with(dir) && path[dir.len()] == b'/'
}

fn rel(root: &Path, path: &[u8]) -> PathBuf {
    root.join(crate::sys::paths::to_os(path.as_bstr()))
}

/// A gitlink entry (stage 0) of a superproject's index, as [`walk`] meets it.
struct Gitlink {
    /// Its path in that index.
    path: BString,
    /// Its path from the outermost superproject.
    full: BString,
    /// Its folder.
    dir: PathBuf,
    /// The superproject's working tree.
    root: PathBuf,
    /// The commit the superproject records.
    commit: ObjectId,
    /// Below another submodule.
    nested: bool,
}

/// Every gitlink of `repo`'s index (its working tree at `root`, the
/// gitlinks' paths below `prefix`), parents before the gitlinks nested in
/// them, which are walked through the repository `visit` returns for their
/// parent (none: not looked into); none past 32 levels.
fn walk(
    repo: &gix::Repository,
    root: &Path,
    prefix: &[u8],
    depth: usize,
    visit: &mut dyn FnMut(Gitlink) -> Result<Option<gix::Repository>>,
) -> Result<()> {
    if depth > 32 {
        return Ok(());
    }
    let index = repo
        .index_or_empty()
        .map_err(|e| WorkspaceError::Index { source: e.into() })?;
    let links: Vec<Gitlink> = index
        .entries()
        .iter()
        .filter(|e| e.mode == gix::index::entry::Mode::COMMIT && e.stage_raw() == 0)
        .map(|e| {
            let path = e.path(&index);
            Gitlink {
                path: path.to_owned(),
                full: [prefix, path].concat().into(),
                dir: rel(root, path),
                root: root.to_path_buf(),
                commit: e.id,
                nested: !prefix.is_empty(),
            }
        })
        .collect();
    for link in links {
        let (dir, mut nested) = (link.dir.clone(), link.full.clone());
        if let Some(sub) = visit(link)? {
            nested.push(b'/');
            walk(&sub, &dir, &nested, depth + 1, visit)?;
        }
    }
    Ok(())
}

/// Every submodule of the source (parents before their nested ones), each
/// initialized one checked: its HEAD must be the commit its superproject's
/// index records and its tracked files unmodified (untracked files inside
/// it are ignored, design §3.15). A dirty one is refused
/// (`delegate::dirty_submodule`), naming it; one whose repository lives
/// inside its folder (the old layout) is refused with `delegate::submodules`.
pub fn discover(source: &crate::git::repo::Source) -> Result<Vec<Module>> {
    source_modules(&source.repo, &source.root, true)
}

/// The source's submodules as they are, dirty or not (for verification
/// workspaces, made while the user may be working in a submodule): one
/// whose repository is inside its folder counts as not initialized.
pub fn find(source: &crate::git::repo::Source) -> Result<Vec<Module>> {
    source_modules(&source.repo, &source.root, false)
}

/// The submodules of the source `repo` (its working tree at `root`), each
/// initialized one checked when `check` (see [`discover`]).
fn source_modules(repo: &gix::Repository, root: &Path, check: bool) -> Result<Vec<Module>> {
    let mut out = Vec::new();
    walk(repo, root, b"", 0, &mut |link| {
        let shown = crate::sys::paths::quote(link.full.as_bstr());
        let dotgit = link.dir.join(".git");
        let initialized = match dotgit.symlink_metadata() {
            Err(_) => false,
            Ok(md) if md.is_dir() && !check => false,
            Ok(md) if md.is_dir() => return Err(WorkspaceError::Inside { shown, dotgit }),
            Ok(_) => true,
        };
        if !initialized {
            out.push(Module {
                path: link.full,
                commit: link.commit,
                git_dir: None,
            });
            return Ok(None);
        }
        let sub = crate::git::repo::open_worktree(&link.dir)?;
        let head = sub.head_id().ok().map(|h| h.detach());
        if check && head != Some(link.commit) {
            // Not a change of files: another commit is checked out in it.
            return Err(WorkspaceError::HeadMoved(Box::new(Moved {
                shown,
                head,
                dir: link.dir,
                root: link.root,
                path: link.path,
                commit: link.commit,
                nested: link.nested,
            })));
        }
        if let Some(changed) = check
            .then(|| first_change(&sub, false))
            .transpose()?
            .flatten()
        {
            return Err(WorkspaceError::Modified {
                shown,
                dir: link.dir,
                changed,
            });
        }
        out.push(Module {
            path: link.full,
            commit: link.commit,
            git_dir: Some(crate::sys::fs::canonical(sub.common_dir())?),
        });
        Ok(Some(sub))
    })?;
    Ok(out)
}

/// The first path of `repo`'s working tree that differs from its HEAD:
/// staged or modified tracked files, and with `untracked`, untracked files
/// that are not ignored. Nested submodules are not looked into (their own
/// walk does that).
fn first_change(repo: &gix::Repository, untracked: bool) -> Result<Option<BString>> {
    let dir = repo.workdir().unwrap_or(repo.git_dir());
    let err = |e: Cause| WorkspaceError::Status {
        dir: dir.to_path_buf(),
        source: e,
    };
    let head_tree = repo
        .head_tree_id_or_empty()
        .map_err(|e| err(e.into()))?
        .detach();
    let index = repo.index_or_empty().map_err(|e| err(e.into()))?;
    let mut everything = repo
        .pathspec(
            false,
            None::<&str>,
            false,
            &gix::index::State::new(repo.object_hash()),
            gix::worktree::stack::state::attributes::Source::IdMapping,
        )
        .map_err(|e| err(e.into()))?;
    let mut staged = None;
    repo.tree_index_status(
        &head_tree,
        &index,
        Some(&mut everything),
        gix::status::tree_index::TrackRenames::Disabled,
        |change, _, _| {
            staged = Some(change.location().to_owned());
            Ok(std::ops::ControlFlow::Break(()))
        },
    )
    .map_err(|e| err(e.into()))?;
    if staged.is_some() {
        return Ok(staged);
    }
    let iter = repo
        .status(gix::progress::Discard)
        .map_err(|e| err(e.into()))?
        .index_worktree_rewrites(None)
        .index_worktree_submodules(gix::status::Submodule::Given {
            ignore: gix::submodule::config::Ignore::All,
            check_dirty: false,
        })
        .untracked_files(if untracked {
            gix::status::UntrackedFiles::Files
        } else {
            gix::status::UntrackedFiles::None
        })
        .index_worktree_options_mut(|o| {
            if !untracked {
                o.dirwalk_options = None;
            }
        })
        .into_index_worktree_iter(Vec::<BString>::new())
        .map_err(|e| err(e.into()))?;
    use gix::status::index_worktree::Item;
    use gix::status::plumbing::index_as_worktree::EntryStatus;
    for item in iter {
        let item = item.map_err(|e| err(e.into()))?;
        match &item {
            Item::Modification {
                status: EntryStatus::NeedsUpdate(_),
                ..
            } => continue,
            Item::DirectoryContents { entry, .. } => {
                if untracked && entry.status == gix::dir::entry::Status::Untracked {
                    return Ok(Some(entry.rela_path.clone()));
                }
            }
            other => return Ok(Some(other.rela_path().to_owned())),
        }
    }
    Ok(None)
}

/// Give the workspace at `root` (checked out at `tree`) every submodule
/// of `modules` whose gitlink `tree` holds (a nested one: whose gitlink the
/// commit given to its parent holds), at the commit that gitlink records:
/// an initialized one as a linked worktree of its repository registered as
/// `worktree_id` and locked with `lock_reason`; an uninitialized one as an
/// empty folder, as git leaves it.
pub fn create(
    source_repo: &gix::Repository,
    tree: ObjectId,
    modules: &[Module],
    root: &Path,
    worktree_id: &str,
    lock_reason: &str,
) -> Result<()> {
    // The submodules given a worktree, with the commit each got.
    let mut given: Vec<(&BString, ObjectId)> = Vec::new();
    for m in modules {
        let parent = modules
            .iter()
            .filter(|p| is_below(&m.path, &p.path))
            .max_by_key(|p| p.path.len());
        let commit = match parent {
            None => recorded(source_repo, tree, m.path.as_slice())?,
            Some(p) => match given.iter().find(|(path, _)| *path == &p.path) {
                // Nested: the gitlink in the commit its parent got.
                Some((_, parent_commit)) => {
                    let repo = crate::git::repo::open_worktree(&rel(root, &p.path))?;
                    let what = |e: Cause| WorkspaceError::ParentCommit { source: e };
                    let tree = repo
                        .find_commit(*parent_commit)
                        .map_err(|e| what(e.into()))?
                        .tree_id()
                        .map_err(|e| what(e.into()))?
                        .detach();
                    recorded(&repo, tree, &m.path[p.path.len() + 1..])?
                }
                None => None,
            },
        };
        let Some(commit) = commit else {
            continue;
        };
        let dest = rel(root, &m.path);
        std::fs::create_dir_all(&dest).map_err(WorkspaceError::at(
            "create",
            &dest,
            (&dest, false),
        ))?;
        let Some(git_dir) = &m.git_dir else {
            continue;
        };
        if !crate::sys::fs::is_empty_dir(&dest) {
            return Err(WorkspaceError::NotEmpty {
                shown: crate::sys::paths::quote(m.path.as_bstr()),
                root: root.to_path_buf(),
            });
        }
        register(git_dir, &dest, commit, worktree_id, lock_reason)?;
        checkout(&dest, commit)?;
        given.push((&m.path, commit));
    }
    Ok(())
}

/// The gitlink at `path` in `tree`, if it is one.
fn recorded(repo: &gix::Repository, tree: ObjectId, path: &[u8]) -> Result<Option<ObjectId>> {
    let what = |e: Cause| WorkspaceError::Tree { source: e };
    let tree = repo.find_tree(tree).map_err(|e| what(e.into()))?;
    let entry = tree
        .lookup_entry_by_path(crate::sys::paths::to_os(path.as_bstr()))
        .map_err(|e| what(e.into()))?;
    Ok(entry
        .filter(|e| e.mode().is_commit())
        .map(|e| e.object_id()))
}

/// Make the registration `<git_dir>/worktrees/<id>` (locked first, as
/// `workspace` does) and the `.git` file of `dest` pointing at it.
fn register(git_dir: &Path, dest: &Path, commit: ObjectId, id: &str, lock: &str) -> Result<()> {
    let reg = Registration::new(git_dir, id);
    let io = |what: &Path| {
        let path = what.to_path_buf();
        move |source| WorkspaceError::at("create", &path, (&path, false))(source)
    };
    let dir = reg.path();
    if dir.symlink_metadata().is_ok() {
        return Err(WorkspaceError::SubmoduleRegistered {
            id: id.to_string(),
            dir: dir.to_path_buf(),
            git_dir: git_dir.to_path_buf(),
        });
    }
    std::fs::create_dir_all(crate::git::registration::dir(git_dir)).map_err(io(dir))?;
    std::fs::create_dir(dir).map_err(io(dir))?;
    let line = |prefix: &str, path: &Path| {
        use std::os::unix::ffi::OsStrExt;
        [prefix.as_bytes(), path.as_os_str().as_bytes(), b"\n"].concat()
    };
    let write = |file: &Path, bytes: Vec<u8>| std::fs::write(file, bytes).map_err(io(file));
    write(&reg.locked_file(), lock.as_bytes().to_vec())?;
    write(&reg.gitdir_file(), line("", &dest.join(".git")))?;
    write(&dir.join("commondir"), b"../..\n".to_vec())?;
    write(&dir.join("HEAD"), format!("{commit}\n").into_bytes())?;
    write(&dest.join(".git"), line("gitdir: ", dir))?;
    Ok(())
}

/// Check `commit` out into the empty (but for `.git`) folder `dest`, and
/// write the worktree's index with the stat data of the files written.
fn checkout(dest: &Path, commit: ObjectId) -> Result<()> {
    let err = |e: Cause| WorkspaceError::SubmoduleCheckout {
        dest: dest.to_path_buf(),
        source: e,
    };
    let repo = crate::git::repo::open_worktree(dest)?;
    let tree = repo
        .find_commit(commit)
        .map_err(|e| err(e.into()))?
        .tree_id()
        .map_err(|e| err(e.into()))?
        .detach();
    let mut index: gix::index::State = repo
        .index_from_tree(&tree)
        .map_err(|e| err(e.into()))?
        .into();
    let mut opts = repo
        .checkout_options(gix::worktree::stack::state::attributes::Source::IdMapping)
        .map_err(|e| err(e.into()))?;
    opts.destination_is_initially_empty = true;
    let objects = repo.objects.clone().into_arc().map_err(|e| err(e.into()))?;
    let outcome = super::fill::run_checkout(&mut index, dest, objects, opts).map_err(|e| {
        WorkspaceError::SubmoduleFiles {
            dest: dest.to_path_buf(),
            source: e.into(),
        }
    })?;
    if let Some(first) = outcome.errors.first() {
        return Err(WorkspaceError::SubmoduleFile {
            dest: dest.to_path_buf(),
            file: crate::sys::paths::quote(first.path.as_ref()),
            error: first.error.to_string(),
        });
    }
    if gix::interrupt::is_triggered() {
        return Err(WorkspaceError::Interrupted);
    }
    // gix writes `ident` its own way; git's bytes (design §3.15).
    crate::git::ident::fix_checkout(&repo, &mut index, dest)?;
    gix::index::File::from_state(index, repo.index_path())
        .write(Default::default())
        .map_err(|e| err(e.into()))?;
    Ok(())
}
