//! The two status walks of a snapshot: HEAD -> index (the staged changes,
//! `record_staged`) and index -> working tree with the walk for untracked
//! files (`Collect`: what changed on disk, the refreshed stat data, the
//! nested repositories), run side by side (`walk`).
//! Never: hashes a file's content into the object store (that is the
//! snapshot's `take`), writes the index, or computes a submodule's status.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;

use gix::bstr::{BStr, BString, ByteSlice};
use gix::index::entry::Stat;
use gix::status::plumbing::index_as_worktree::{Change, EntryStatus};
use gix::status::plumbing::index_as_worktree_with_renames::{
    Entry as WtEntry, Outcome, VisitEntry,
};
use gix::ObjectId;

use super::indexes::{head_entries, holds_exactly};
use super::SnapshotError;
use super::{display_root, git_error, tree_kind, Edit, Side};

type Result<T, E = SnapshotError> = std::result::Result<T, E>;

/// What a worktree file became, as the index-worktree status saw it.
pub(super) enum OnDisk {
    Gone,
    /// A tracked stage-0 file whose content may differ: its index entry.
    Tracked(usize),
    /// Untracked, conflicted, intent-to-add, or changed type.
    Other,
}

#[derive(Default)]
pub(super) struct Collect {
    pub(super) on_disk: BTreeMap<BString, OnDisk>,
    /// Entries whose content is unchanged but whose stat data were refreshed.
    pub(super) refreshed: Vec<(usize, Stat)>,
    pub(super) nested_repos: Vec<BString>,
    pub(super) rewrite: bool,
}

/// A submodule counts at its gitlink in the index: a source's dirty
/// submodules are refused before a snapshot (design §3.15), and a task's
/// changes in a workspace's submodules are found by `submodules::changed`.
/// No submodule status is computed here (gix's builtin one would read
/// `.gitmodules`, or the whole index again when that file is missing).
#[derive(Clone, Copy)]
struct NoSubmodules;

impl gix::status::plumbing::index_as_worktree::traits::SubmoduleStatus for NoSubmodules {
    type Output = ();

    fn status(&mut self, _entry: &gix::index::Entry, _rela_path: &BStr) -> gix::Result<Option<()>> {
        Ok(None)
    }
}

impl<'index> VisitEntry<'index> for Collect {
    type ContentChange = ();
    type SubmoduleStatus = ();

    fn visit_entry(&mut self, entry: WtEntry<'index, (), ()>) {
        match entry {
            WtEntry::Modification {
                entry_index,
                rela_path,
                status,
                ..
            } => match status {
                EntryStatus::NeedsUpdate(stat) => self.refreshed.push((entry_index, stat)),
                EntryStatus::Change(Change::Removed) => {
                    self.on_disk.insert(rela_path.to_owned(), OnDisk::Gone);
                }
                EntryStatus::Change(Change::SubmoduleModification(_)) => {}
                EntryStatus::Change(Change::Modification { .. }) => {
                    self.on_disk
                        .insert(rela_path.to_owned(), OnDisk::Tracked(entry_index));
                }
                EntryStatus::Change(Change::Type { .. })
                | EntryStatus::IntentToAdd
                | EntryStatus::Conflict { .. } => {
                    self.on_disk.insert(rela_path.to_owned(), OnDisk::Other);
                }
            },
            WtEntry::DirectoryContents { entry, .. } => {
                // A `.git` below the root that the walk met inside a tracked
                // folder (only emitted for workspaces): a repository made in a
                // folder git tracks, whose history git would leave out.
                if entry.property == Some(gix::dir::entry::Property::DotGit) {
                    if let Some(slash) = entry.rela_path.rfind_byte(b'/') {
                        let folder = BString::from(&entry.rela_path[..slash]);
                        if !self.nested_repos.contains(&folder) {
                            self.nested_repos.push(folder);
                        }
                    }
                    return;
                }
                if entry.status != gix::dir::entry::Status::Untracked {
                    return;
                }
                match entry.disk_kind {
                    Some(gix::dir::entry::Kind::Repository) => {
                        self.nested_repos.push(entry.rela_path)
                    }
                    Some(gix::dir::entry::Kind::File) | Some(gix::dir::entry::Kind::Symlink) => {
                        self.on_disk.insert(entry.rela_path, OnDisk::Other);
                    }
                    _ => {}
                }
            }
            WtEntry::Rewrite { .. } => self.rewrite = true,
        }
    }
}

fn record_staged(
    staged: &mut BTreeMap<BString, Edit>,
    change: gix::diff::index::ChangeRef<'_, '_>,
) {
    use gix::diff::index::ChangeRef;
    match change {
        ChangeRef::Addition {
            location,
            entry_mode,
            id,
            ..
        }
        | ChangeRef::Modification {
            location,
            entry_mode,
            id,
            ..
        } => {
            staged.insert(
                location.into_owned(),
                tree_kind(entry_mode).map(|k| (k, id.into_owned())),
            );
        }
        ChangeRef::Deletion { location, .. } => {
            staged.insert(location.into_owned(), None);
        }
        ChangeRef::Rewrite {
            source_location,
            location,
            entry_mode,
            id,
            copy,
            ..
        } => {
            if !copy {
                staged.insert(source_location.into_owned(), None);
            }
            staged.insert(
                location.into_owned(),
                tree_kind(entry_mode).map(|k| (k, id.into_owned())),
            );
        }
    }
}

/// Step 3 of a snapshot: HEAD -> index (staged changes) in one thread,
/// index -> worktree and the walk for untracked files in others. `staged`:
/// the staged changes when the stat cache already tells them.
pub(super) fn walk(
    repo: &gix::Repository,
    index: &gix::index::State,
    head_tree: ObjectId,
    from_cache: Option<BTreeMap<BString, Edit>>,
    side: Side,
) -> Result<(BTreeMap<BString, Edit>, Outcome, Collect)> {
    let sync = repo.clone().into_sync();
    let mut collect = Collect::default();
    let (staged, outcome) = std::thread::scope(|s| {
        let staged = s.spawn(move || -> Result<BTreeMap<BString, Edit>> {
            if let Some(staged) = from_cache {
                return Ok(staged);
            }
            let repo = sync.to_thread_local();
            staged_changes(&repo, index, head_tree, side)
        });
        let outcome = worktree_status(repo, index, side, &mut collect);
        let staged = staged.join().unwrap_or(Err(SnapshotError::Panicked));
        (staged, outcome)
    });
    let staged = staged?;
    let outcome = outcome?;
    if collect.rewrite {
        return Err(SnapshotError::Unexpected {
            root: display_root(repo),
            what: "unexpected rename record from status",
        });
    }
    Ok((staged, outcome, collect))
}

/// HEAD -> index: what the index stages.
fn staged_changes(
    repo: &gix::Repository,
    index: &gix::index::State,
    head_tree: ObjectId,
    side: Side,
) -> Result<BTreeMap<BString, Edit>> {
    // A workspace's index holds no cache tree (prepare writes none):
    // one whose entries are exactly its HEAD's stages nothing, and
    // the parallel snapshots of one apply share that HEAD
    // (`head_entries`; where it cannot be read, the diff below says
    // why). Here, beside the walk, as the diff was.
    if side == Side::Workspace
        && head_entries(repo, head_tree).is_some_and(|h| holds_exactly(index, &h))
    {
        return Ok(BTreeMap::new());
    }
    let mut staged = BTreeMap::new();
    let mut everything = crate::git::diff::whole_tree(repo).map_err(read(repo))?;
    repo.tree_index_status(
        &head_tree,
        index,
        Some(&mut everything),
        gix::status::tree_index::TrackRenames::Disabled,
        |change, _, _| {
            record_staged(&mut staged, change);
            Ok(std::ops::ControlFlow::Continue(()))
        },
    )
    .map_err(read(repo))?;
    Ok(staged)
}

/// The error for a failure reading the index or the status of `repo`.
fn read(repo: &gix::Repository) -> impl Fn(gix::Error) -> SnapshotError + '_ {
    move |source| SnapshotError::Read {
        root: display_root(repo),
        source,
    }
}

/// index -> worktree, and the walk for untracked files, into `collect`.
pub(super) fn worktree_status(
    repo: &gix::Repository,
    index: &gix::index::State,
    side: Side,
    collect: &mut Collect,
) -> Result<Outcome> {
    let git = |what: &'static str| git_error(repo, what);
    let never = AtomicBool::new(false);
    let dirwalk = repo
        .dirwalk_options()
        .map_err(git("cannot set up the directory walk"))?
        .emit_untracked(gix::dir::walk::EmissionMode::Matching)
        // Workspaces: also what the walk prunes, for the `.git` of a
        // repository made inside a tracked folder (design §3.2).
        .emit_pruned(side == Side::Workspace);
    repo.index_worktree_status(
        index,
        Vec::<BString>::new(),
        collect,
        gix::status::plumbing::index_as_worktree::traits::FastEq,
        NoSubmodules,
        &mut gix::progress::Discard,
        &never,
        gix::status::index_worktree::Options {
            sorting: None,
            dirwalk_options: Some(dirwalk),
            rewrites: None,
            thread_limit: None,
        },
    )
    .map_err(git("status failed"))
}
