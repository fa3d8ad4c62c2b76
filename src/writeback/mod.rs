//! Write-back of a merge result into the source working tree through a
//! crash-safe journal (design §3.2 step 4, §7).
//!
//! Owns: the journal file in a batch's state folder, writing and removing
//! working-tree paths (temp file + fsync + rename, symlink-safe parents,
//! exec bits, symlinks, smudge filters), rollback, and recovery of journals
//! left by dead processes; what a signal during a write-back does (see
//! "Signals"); putting in place, at the commit point, the state files a
//! caller staged with the write (`StagedState`: the record of what was written).
//! Its entry points return `WritebackError`: the failures it meets before
//! writing or while scanning for journals (the folder, file or step and
//! its cause: a path's as a `sys::fs::PathError`, passed on as `Lower`),
//! the trees it cannot compare (`DiffError`, passed on as `Lower` too),
//! and, passed on as they are, a failed write, its rollback and a failed
//! check (`WriteError`, `failure`); `ops::explain` words both.
//! Never: writes a path whose current content is not the expected `S`
//! state; moves back or deletes a path that does not hold exactly what the
//! write put there (a user's edit made after the write is left, and the
//! original it replaced is kept); follows a symlink out of the source
//! root; touches the index, HEAD or refs; recovers from a read-only command.
//!
//! # `check`
//!
//! Changes nothing. Per path: every parent must be a folder (a file or
//! symlink on the way blocks, unless it is an `S` file this write deletes);
//! an `S` entry must still be on disk with the same kind and the same blob
//! after the clean filters (hashed as it is read, not stored); where `S` has nothing,
//! nothing may stand where `F` puts a file, except an empty folder or one
//! holding only paths this write deletes.
//!
//! # Order of operations (`write`)
//!
//! 1. Plan (reads the disk only): per path its `S` and `F` entries, a temp
//!    name (`.gd-<token>-<n>.tmp`) in the target folder (or, where a file
//!    still stands on the way to it, in the deepest existing folder), an
//!    aside name (`.gd-<token>-<n>.orig`, same folder as the original) for
//!    every original that goes away, the folders that will be created, and
//!    folders standing where `F` puts a file (moved aside whole).
//! 2. Journal `<batch_dir>/writeback.journal`: written to a temp name,
//!    fsync'd, renamed, folder fsync'd. Nothing in the working tree has
//!    changed before it is durable.
//! 3. Temp files: missing folders created (only those the journal lists),
//!    content from `F`'s blobs through the smudge filters and `eol`
//!    conversion with the attributes of the result (as a checkout: changed
//!    `.gitattributes` files count with their `F` content), created
//!    `O_EXCL` with mode 0o666/0o777 (the umask applies, as for git), or,
//!    where a file is replaced, 0o600 and then that file's permission bits
//!    (only the exec bits follow `F`: design §7 "Modes"), symlinks from the
//!    blob bytes; a blob over 8 MiB that no filter
//!    changes is copied from the object store as it is inflated, never held
//!    whole. All written first, then fsync'd with their folders, several
//!    at once (concurrent fsyncs share journal commits); above 64 files one
//!    `syncfs` instead (per-file fsyncs of a handful of files are cheaper
//!    than a `syncfs` of a busy disk, many are not). Each file's bytes are
//!    hashed (SHA-1, raw) as they are written, then its permission bits,
//!    size, inode and mtime read from the descriptor (a rename keeps all
//!    of them); a symlink's target is hashed.
//! 4. What each path will hold (`wrote` records: that file, that symlink,
//!    or absent for a deletion) and the marker `renaming`, appended to the
//!    journal in one write and fsync'd: no rename happens before what it
//!    puts in place is on record.
//! 5. Renames: folders in the way are moved aside whole and their content
//!    verified against `S`; then per path (sorted, so a file is moved away
//!    before a folder of the same name is created; `.gitattributes` last):
//!    stat check, original renamed aside (`RENAME_NOREPLACE`), the aside
//!    hashed through the clean filters and compared with `S` (so nothing the
//!    user writes between check and rename can be lost), missing folders
//!    created, temp renamed into place (`RENAME_NOREPLACE`: never over
//!    anything). Touched folders fsync'd.
//! 6. Marker `committed` appended and fsync'd: from here on the result
//!    stands, and recovery rolls forward instead of back.
//! 7. The staged state files (`then`) renamed over their final names, each
//!    folder fsync'd; asides removed, folders emptied by deletions removed,
//!    folders fsync'd, journal removed, batch folder fsync'd. A rollback
//!    removes the staged files instead (design §7 "What recovery finishes").
//!
//! # Signals (design §7 "Signals")
//!
//! `write_then` takes the termination-signal handler (`interrupt`) at its
//! start and keeps it for the rest of the process. A signal arrived before
//! a temp file or a rename (steps 3 and 5) stops the write there and rolls
//! it back as any failure is (`delegate::interrupted`, `interrupted:
//! "rolled_back"`); one arrived later is past the last check: the write
//! commits and finishes, and the caller, which asks
//! `interrupt::interrupted()`, says so. Test-only pause points sit at the
//! fault points below (`writeback-after-journal`, `writeback-after-temp-files`,
//! `writeback-after-rename:N`, `writeback-after-commit`).
//!
//! Every working-tree access goes through folder descriptors opened one
//! component at a time from the root with `O_NOFOLLOW | O_DIRECTORY`, and
//! `*at` calls on them: a symlink on the way is an error, never followed.
//!
//! Any error in steps 3-6 rolls back and returns `delegate::write_failed`
//! (exit 3): files renamed into place go back to their temp names, created
//! folders that are empty go, originals come back from their aside names,
//! temps and the remaining created folders go, the journal goes. Each step
//! is decided by what is on disk, so an interrupted rollback is finished by
//! the next one, and it needs no journal write (a full disk cannot stop
//! it).
//!
//! # Paths the user changed (design §7, last paragraph)
//!
//! A path goes back to its temp name only if it holds exactly what its
//! `wrote` record says (kind, permission bits and size first, then the
//! hash of its bytes or target; inode and mtime are not required, so an
//! edit undone byte for byte counts as untouched); it is proven again once
//! it is under the temp name, and moved back where the user had it if it
//! changed in between. A temp is deleted only if it is proven too (once
//! renaming has begun). An original comes back only where nothing stands
//! (`RENAME_NOREPLACE`: a path the write deleted must still be absent). A
//! path that fails these checks is left as it is found and its original
//! stays under its aside name (or, rarely, the user's version under the
//! temp name); the rest of the rollback goes on. The error is
//! `delegate::rollback_failed` (exit 3) naming each path, why
//! (`changed_since_written`, `in_the_way`, `error`) and the kept file, also
//! in the JSON error object (`batch`, `journal`, `paths`). Those paths are
//! appended to the journal (`left` records, best effort) for `status`.
//!
//! Resolving: the journal stays while any kept file is there, and every
//! mutating command re-runs the rollback (which changes nothing more and
//! reports the same) until the user, for each path, deletes the kept file
//! (keeping their version) or moves it over the path (taking the original
//! back); then no aside is left for that item, the rollback finishes and
//! the journal goes. A path that again holds exactly what was written is
//! rolled back normally. A path left with nothing kept (an addition the
//! user edited: nothing was there before) is reported once and needs no
//! journal. A journal without `wrote` records (version 1) proves nothing:
//! every path it renamed into place is left to the user.
//!
//! # Journal format
//!
//! JSON lines, each object tagged by `"t"`: one `header` (`version`, `pid`,
//! `start` (ticks since boot, `/proc/PID/stat` field 22), `host`, `root`,
//! `token`, `created_at`, and `then`: `[staged, final]` absolute paths of
//! the staged state files, left out when none), one `item` per path (`path`, `s` and `f` as
//! `"<octal mode> <hex id>"` or null, `temp`, `aside`, `aside_folder`,
//! `covered` (inside a folder moved aside whole), `early` (its folders are
//! created before its temp)), one `mkdirs` (folders the write may create,
//! shallow first), then appended `phase` markers: `planned` (end of the
//! durable plan), `renaming`, `committed`; the last one counts. Before
//! `renaming`, one `wrote` per item (`i`, its index; `w`: `{"kind":
//! "file", mode, size, ino, mtime, mtime_ns, sha1}`, `{"kind": "link",
//! ino, sha1}` or `{"kind": "absent"}`); after a rollback that left paths,
//! `left` records (`i`, `kept`, `yours`). Header `version` 2. Paths are
//! relative to `root` with `%XX` escapes for `%`, control bytes and
//! non-ASCII bytes. A torn last line is ignored (its marker did not become
//! durable; a failed append is also cut back).
//!
//! # Recovery (`recover_all`)
//!
//! Scans `<state>/batches/*/writeback.journal` (a batch folder without
//! `batch.toml` included) and `<state>/undo/*/writeback.journal` (an
//! undo's or `apply --from-undo`'s, reported by apply id). A journal without `planned` is removed (nothing
//! was written). One whose writer (pid + start time, same host) still runs
//! is left alone. `committed`: rolled forward (staged state files put in
//! place, asides and emptied folders removed; reported in `recorded` when
//! there were staged files). Otherwise rolled back as above, using the journal's `root`.
//! Only mutating commands recover (`lock::lock_and_recover`);
//! `apply --dry-run` calls `pending` and reports instead, and `status`
//! reads `left_paths`.
//!
//! # Fault injection (test-only)
//!
//! `GIT_DELEGATE_FAULT` names a point at which the process kills itself
//! with SIGKILL, exactly like `kill -9`: `after-journal`,
//! `after-temp-files`, `after-rename:N` (after the Nth rename, 1-based),
//! `after-commit`, `before-journal-remove`, `recover-abort:N` (during a
//! recovery or rollback, after its Nth change). `fail-rename:N` makes the
//! Nth rename fail with an I/O error instead (exercises the in-process
//! rollback). It exists for the crash tests only; nothing else sets it.

mod check;
mod dirs;
mod failure;
mod faults;
mod forward;
mod hash;
mod journal;
mod paths;
mod plan;
mod recover;
mod rollback;
mod temp;
#[cfg(test)]
mod tests;
mod writer;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use gix::bstr::{BString, ByteSlice};
use gix::objs::tree::EntryKind;
use gix::ObjectId;

use crate::error::{lower_from, FsCause, Lower};
use crate::git::diff::DiffError;
use crate::git::repo::Source;
use crate::record::batch;
use crate::sys::fs::PathError;

pub use self::check::check;
use self::dirs::Dirs;
pub use self::failure::{Cause, Left, LeftReason, RollbackFailed, Undoing, WriteError};
use self::faults::Faults;
use self::forward::{drop_staged, roll_forward};
use self::journal::write_journal;
use self::plan::make_plan;
pub use self::recover::{committed, left_paths, pending, recover_all_detailed};
use self::rollback::rollback;
use self::writer::Writer;

/// What the write-back's entry points return: a write-back that could not
/// start, a recovery that could not scan or read a journal, and (`Write`)
/// a write that failed, its rollback, a check that could not read the disk.
#[derive(Debug, thiserror::Error)]
pub enum WritebackError {
    /// The content filters (`what` failed).
    #[error("{what}")]
    Filters {
        what: &'static str,
        #[source]
        source: gix::Error,
    },
    /// A path git refuses (`why`), which no caller should have planned.
    #[error("refusing to write {}: git refuses that path ({why})", crate::sys::paths::quote(path.as_bstr()))]
    Invalid { path: BString, why: &'static str },
    /// What is passed on as it is, in its own words: a write that failed
    /// and its rollback, an interrupt, a check that could not read the
    /// disk, a rollback that left paths (`WriteError`, `failure`); a path's I/O
    /// error (`sys::fs::PathError`: the working tree to check, `open the
    /// working tree`; a folder recovery scans for journals or a journal it
    /// reads, `read`; a journal with nothing left to do that cannot be
    /// removed, `remove`), or the trees whose difference is to be written
    /// (`writes_between`, a `DiffError`).
    #[error(transparent)]
    Lower(#[from] Lower),
    /// The working tree a journal's write-back went into.
    #[error("cannot open {} to recover a write-back", root.display())]
    OpenToRecover {
        root: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

lower_from!(WritebackError: WriteError, PathError, DiffError);

impl WritebackError {
    /// A rollback (or roll-forward) that left paths to the user
    /// (`WriteError::RollbackFailed`), passed on.
    pub fn is_rollback_failed(&self) -> bool {
        matches!(self, WritebackError::Lower(l)
            if matches!(l.downcast_ref::<WriteError>(), Some(WriteError::RollbackFailed(_))))
    }
}

type Result<T, E = WritebackError> = std::result::Result<T, E>;

/// One path to change: its entry in the source snapshot `S` and in the result `F`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathWrite {
    pub path: BString,
    pub old: Option<(EntryKind, ObjectId)>,
    pub new: Option<(EntryKind, ObjectId)>,
}

/// The writes that turn a working tree holding tree `from` into one holding
/// `to`: every leaf path that differs between the two (`git::diff::trees`).
pub fn writes_between(
    repo: &gix::Repository,
    from: ObjectId,
    to: ObjectId,
) -> Result<Vec<PathWrite>> {
    Ok(crate::git::diff::trees(repo, from, to)?
        .into_iter()
        .map(|c| PathWrite {
            path: c.path,
            old: c.old,
            new: c.new,
        })
        .collect())
}

/// Why a path cannot be written without losing something.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockReason {
    /// An untracked or ignored file (not in `S`) stands where the result puts a file.
    UntrackedInTheWay,
    /// A folder with content not in `S` stands where the result puts a file.
    FolderInTheWay,
    /// The path's content no longer matches `S` (the user changed it just now).
    ChangedSinceSnapshot,
    /// A symlink not in `S` (an ignored one) stands where the result needs
    /// a folder; the blocked path is the symlink's.
    SymlinkInTheWay,
    /// The folder to write in (the blocked path; the root is "") refuses
    /// writing: the OS error number (EACCES, EPERM for an immutable
    /// folder, EROFS).
    NotWritable(i32),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    pub path: BString,
    pub reason: BlockReason,
}

/// What recovery did with the journals it found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Recovery {
    /// Batches whose interrupted write-back was rolled back to `S`.
    pub rolled_back: Vec<String>,
    /// Batches whose write-back had committed (the result was complete on
    /// disk) and whose clean-up was finished.
    pub completed: Vec<String>,
    /// Which of those ids are undo entries' (an undo's or `apply
    /// --from-undo`'s write-back, design §3.11), not batches.
    pub undo: Vec<String>,
    /// Which of the completed ones had their record put in place with
    /// them (the state files their command staged: an apply's undo entry
    /// and its tasks recorded applied; design §7 "What recovery finishes").
    pub recorded: Vec<String>,
    /// Which of those ids wrote into a workspace, not the source: a
    /// refresh (design §3.12), whose rollback or finish concerns the
    /// task's workspace.
    pub workspaces: Vec<String>,
}

/// A state file the caller wrote under a staged name, to take effect
/// exactly when the write-back does: renamed over `to` at the commit point
/// (by this process, or by the recovery that finishes the write-back after
/// a crash), removed by a rollback (design §7 "What recovery finishes").
/// Both paths absolute, outside the working tree (in the state folder).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagedState {
    pub staged: PathBuf,
    pub to: PathBuf,
}

/// Write every path through the journal in `batch_dir`; any failure rolls
/// every written path back to `S` and returns the error.
pub fn write(source: &Source, batch_dir: &Path, writes: &[PathWrite]) -> Result<()> {
    write_then(source, batch_dir, writes, &[])
}

/// [`write`], with state files `then` put in place at its commit point.
///
/// From its start a termination signal (SIGINT, SIGTERM, SIGHUP) is a
/// request, never a kill (design §7 "Signals"): before the commit point
/// the write-back stops at its next step and is rolled back
/// (`delegate::interrupted`, with `interrupted: "rolled_back"`); past it
/// the write-back is finished and this returns `Ok`: the caller asks
/// `interrupt::interrupted()` and says so. The handler stays until the
/// process ends, so what the caller records after the write-back is never
/// cut short either.
pub fn write_then(
    source: &Source,
    batch_dir: &Path,
    writes: &[PathWrite],
    then: &[StagedState],
) -> Result<()> {
    refuse_invalid(writes)?;
    write_with(source, batch_dir, writes, then, &Faults::from_env())
}

/// The last guard (design §3.18 "Paths"): a path git refuses to check out
/// (into `.git`, or out of the root through `..`) is never checked nor
/// written. Every caller refused such a task before; reaching this is a bug.
fn refuse_invalid(writes: &[PathWrite]) -> Result<()> {
    for w in writes {
        let kind = w.new.map_or(EntryKind::Blob, |(k, _)| k);
        if let Some(why) = crate::git::validate::path(w.path.as_bstr(), kind) {
            return Err(WritebackError::Invalid {
                path: w.path.clone(),
                why,
            });
        }
    }
    Ok(())
}

fn write_with(
    source: &Source,
    batch_dir: &Path,
    writes: &[PathWrite],
    then: &[StagedState],
    faults: &Faults,
) -> Result<()> {
    let drop_then = || {
        for t in then {
            let _ = std::fs::remove_file(&t.staged);
        }
    };
    if writes.is_empty() {
        drop_then();
        return Ok(());
    }
    // Kept for the rest of the process (design §7 "Signals").
    let _ = crate::sys::interrupt::catch_signals();
    if crate::sys::interrupt::interrupted() {
        drop_then();
        return Err(WriteError::Interrupted {
            root: source.root.clone(),
        }
        .into());
    }
    let journal_path = batch_dir.join(batch::JOURNAL_FILE);
    let mut dirs = Dirs::open(&source.root).map_err(|e| {
        drop_then();
        WriteError::OpenRoot {
            root: source.root.clone(),
            source: e,
        }
    })?;
    let token = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
    let mut plan = make_plan(&mut dirs, writes, &source.root, &token).map_err(|f| {
        drop_then();
        WriteError::Plan {
            root: source.root.clone(),
            what: f.to_string(),
            cause: f.cause(),
        }
    })?;
    plan.then = then
        .iter()
        .map(|t| (t.staged.clone(), t.to.clone()))
        .collect();
    write_journal(&journal_path, &plan).map_err(|e| {
        let _ = std::fs::remove_file(&journal_path);
        drop_then();
        WriteError::Journal {
            path: journal_path.clone(),
            cause: FsCause::of_at(&e, Some(batch_dir)),
            source: e,
        }
    })?;
    faults.hit("after-journal");

    let mut w = Writer {
        repo: &source.repo,
        dirs,
        journal: &journal_path,
        faults,
        renames: 0,
        synced: BTreeSet::new(),
    };
    let outcome = w.run(&mut plan).map_err(|f| f.at(&source.root));
    if let Err(fail) = outcome {
        let (what, cause) = (fail.to_string(), fail.cause());
        let signal = cause == Some(Cause::Interrupted);
        return Err(
            match rollback(&mut w.dirs, &mut plan, &journal_path, faults) {
                Ok(()) if signal => WriteError::Interrupted {
                    root: plan.root.clone(),
                },
                Ok(()) => WriteError::Write {
                    root: plan.root.clone(),
                    what,
                    cause,
                },
                Err(left) => WriteError::rollback_failed(
                    &plan.root,
                    &journal_path,
                    Undoing::Write { what },
                    left,
                ),
            }
            .into(),
        );
    }
    // Committed: the result stands. Clean-up failures leave the journal for
    // the next command, which finishes the job (`roll_forward`); what was
    // staged and not put in place by then goes, so that nothing the caller
    // records from here on is replaced later by what it staged.
    faults.hit("after-commit");
    if roll_forward(&mut w.dirs, &plan, &journal_path, faults).is_err() {
        drop_staged(&plan);
    }
    Ok(())
}

/// A path a rollback left to the user, with the file kept for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftPath {
    /// Relative to the working tree's root.
    pub path: BString,
    /// The kept file (absolute): the original, or (`yours`) the user's version.
    pub kept: PathBuf,
    pub yours: bool,
}
