//! Write-back of a merge result into the source working tree through a
//! crash-safe journal (design §3.2 step 4, §7).
//!
//! Owns: the journal file in a batch's state folder, writing and removing
//! working-tree paths (temp file + fsync + rename, symlink-safe parents,
//! exec bits, symlinks, smudge filters), rollback, and recovery of journals
//! left by dead processes; what a signal during a write-back does (see
//! "Signals"); putting in place, at the commit point, the state files a
//! caller staged with the write (`Then`: the record of what was written).
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

mod dirs;
mod hash;
mod journal;
mod rollback;
#[cfg(test)]
mod tests;
mod util;
mod writer;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use gix::bstr::{BStr, BString, ByteSlice};
use gix::objs::tree::EntryKind;
use gix::ObjectId;

use crate::error::{Code, Error, FsCause, Result};
use crate::git::repo::Source;
use crate::record::batch;

use self::dirs::{Dirs, Disk};
use self::hash::Hasher;
use self::journal::{make_plan, parse_journal, tmp_journal, write_journal, Phase};
use self::rollback::{drop_staged, roll_forward, rollback, Left};
use self::util::{join, parents, split, Cause, Fail, Faults};
use self::writer::Writer;

/// One path to change: its entry in the source snapshot `S` and in the result `F`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathWrite {
    pub path: BString,
    pub old: Option<(EntryKind, ObjectId)>,
    pub new: Option<(EntryKind, ObjectId)>,
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

/// Check every write against the disk without changing anything.
pub fn check(source: &Source, writes: &[PathWrite]) -> Result<Vec<Blocked>> {
    if writes.is_empty() {
        return Ok(Vec::new());
    }
    refuse_invalid(writes)?;
    let mut dirs = Dirs::open(&source.root).map_err(|e| {
        Error::io(
            format!("cannot open the working tree {}", source.root.display()),
            e,
        )
    })?;
    let mut hasher = Hasher::new(&source.repo)?;
    let deleted: HashSet<&BStr> = writes
        .iter()
        .filter(|w| w.old.is_some() && w.new.is_none())
        .map(|w| w.path.as_bstr())
        .collect();
    let mut blocked = Vec::new();
    let mut writable: HashMap<BString, Option<i32>> = HashMap::new();
    for w in writes {
        let reason = check_one(&mut dirs, &mut hasher, w, &deleted).map_err(|f| {
            let message = format!("cannot check the working tree before writing: {}", f.0);
            match failed(message.clone(), f.1) {
                e if e.code != Code::WriteFailed => e,
                _ => Error::state(
                    Code::WriteCheckFailed,
                    message,
                    "check the permissions of that path, then run the command again",
                ),
            }
        })?;
        match reason {
            Some((reason, at)) => blocked.push(Blocked {
                path: at.unwrap_or_else(|| w.path.clone()),
                reason,
            }),
            None => {
                if let Some((folder, errno)) = not_writable(&mut dirs, &mut writable, w) {
                    blocked.push(Blocked {
                        path: folder,
                        reason: BlockReason::NotWritable(errno),
                    });
                }
            }
        }
    }
    blocked.dedup();
    Ok(blocked)
}

/// The folder a write has to change (the path's folder, or the deepest
/// one that exists when folders must be made) when it refuses writing, and
/// the OS error (`access(2)` with `W_OK`: EACCES, EPERM for an immutable
/// folder, which binds root too, EROFS). Cached per folder.
fn not_writable(
    dirs: &mut Dirs,
    cache: &mut HashMap<BString, Option<i32>>,
    w: &PathWrite,
) -> Option<(BString, i32)> {
    // The path's folder, or the deepest one that exists: opened from the
    // root without following symlinks (the cache makes repeats free).
    let mut folder: &BStr = split(w.path.as_bstr()).0;
    loop {
        if let Some(errno) = cache.get(folder) {
            return errno.map(|e| (folder.to_owned(), e));
        }
        match dirs.get(folder) {
            Ok(fd) => {
                let errno = rustix::fs::accessat(
                    &*fd,
                    ".",
                    rustix::fs::Access::WRITE_OK,
                    rustix::fs::AtFlags::EACCESS,
                )
                .err()
                .map(|e| e.raw_os_error());
                cache.insert(folder.to_owned(), errno);
                return errno.map(|e| (folder.to_owned(), e));
            }
            Err(_) if folder.is_empty() => return None,
            Err(_) => folder = split(folder).0,
        }
    }
}

fn check_one(
    dirs: &mut Dirs,
    hasher: &mut Hasher<'_>,
    w: &PathWrite,
    deleted: &HashSet<&BStr>,
) -> Result<Option<(BlockReason, Option<BString>)>, Fail> {
    use BlockReason::*;
    for parent in parents(w.path.as_bstr()) {
        match dirs
            .lstat(parent)
            .map_err(|e| Fail::io("stat", parent, e))?
        {
            Disk::Dir => continue,
            Disk::Absent => {
                return Ok(w.old.is_some().then_some((ChangedSinceSnapshot, None)));
            }
            disk => {
                if w.old.is_none() && deleted.contains(parent) {
                    // The S file on the way goes first; below it all is new.
                    return Ok(None);
                }
                if w.old.is_none() && disk == Disk::Link {
                    // Name the symlink, not a path behind it that does not exist.
                    return Ok(Some((SymlinkInTheWay, Some(parent.to_owned()))));
                }
                return Ok(Some((
                    if w.old.is_some() {
                        ChangedSinceSnapshot
                    } else {
                        UntrackedInTheWay
                    },
                    None,
                )));
            }
        }
    }
    let path = w.path.as_bstr();
    let disk = dirs.lstat(path).map_err(|e| Fail::io("stat", path, e))?;
    Ok(match (w.old, disk) {
        (Some(s), _) => {
            let (pfd, name) = dirs
                .parent_of(path)
                .map_err(|e| Fail::io("open", path, e))?;
            (!hasher.matches(&pfd, name, path, s)?).then_some(ChangedSinceSnapshot)
        }
        (None, Disk::Absent) => None,
        (None, _) if w.new.is_none() => None,
        (None, Disk::Dir) => {
            (!folder_only_deletions(dirs, path, deleted)?).then_some(FolderInTheWay)
        }
        (None, _) => Some(UntrackedInTheWay),
    }
    .map(|r| (r, None)))
}

/// A folder holds nothing but paths the write deletes (and empty folders).
fn folder_only_deletions(
    dirs: &mut Dirs,
    dir: &BStr,
    deleted: &HashSet<&BStr>,
) -> Result<bool, Fail> {
    let mut stack = vec![BString::from(dir)];
    while let Some(d) = stack.pop() {
        for (name, kind) in dirs
            .list(d.as_bstr())
            .map_err(|e| Fail::io("read", d.as_bstr(), e))?
        {
            let child = join(d.as_bstr(), name.as_bstr());
            if kind == Disk::Dir {
                stack.push(child);
            } else if !deleted.contains(child.as_bstr()) {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// A state file the caller wrote under a staged name, to take effect
/// exactly when the write-back does: renamed over `to` at the commit point
/// (by this process, or by the recovery that finishes the write-back after
/// a crash), removed by a rollback (design §7 "What recovery finishes").
/// Both paths absolute, outside the working tree (in the state folder).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Then {
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
    then: &[Then],
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
            return Err(Error::state(
                Code::Internal,
                format!(
                    "refusing to write {}: git refuses that path ({why})",
                    crate::sys::paths::quote(w.path.as_bstr())
                ),
                "report this bug; nothing was changed",
            ));
        }
    }
    Ok(())
}

fn write_with(
    source: &Source,
    batch_dir: &Path,
    writes: &[PathWrite],
    then: &[Then],
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
        return Err(interrupted(&source.root));
    }
    let journal_path = batch_dir.join(batch::JOURNAL_FILE);
    let mut dirs = Dirs::open(&source.root).map_err(|e| {
        drop_then();
        failed(
            format!(
                "cannot open the working tree {}: {e}",
                source.root.display()
            ),
            FsCause::of(&e).map(Cause::Fs),
        )
    })?;
    let token = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
    let mut plan = make_plan(&mut dirs, writes, &source.root, &token).map_err(|f| {
        drop_then();
        failed(
            format!("write-back stopped before any change: {}", f.0),
            f.1,
        )
    })?;
    plan.then = then
        .iter()
        .map(|t| (t.staged.clone(), t.to.clone()))
        .collect();
    write_journal(&journal_path, &plan).map_err(|e| {
        let _ = std::fs::remove_file(&journal_path);
        drop_then();
        failed(
            format!(
                "cannot record the write-back journal {}: {e}; nothing was changed",
                journal_path.display()
            ),
            FsCause::of_at(&e, Some(batch_dir)).map(Cause::Fs),
        )
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
        let signal = fail.1 == Some(Cause::Interrupted);
        return Err(
            match rollback(&mut w.dirs, &mut plan, &journal_path, faults) {
                Ok(()) if signal => interrupted(&plan.root),
                Ok(()) => failed(
                    format!(
                        "write-back failed: {}; every path was rolled back to what it was before",
                        fail.0
                    ),
                    fail.1,
                ),
                Err(left) => rollback_failed(
                    &plan.root,
                    &journal_path,
                    &format!("write-back failed ({})", fail.0),
                    &left,
                ),
            },
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

/// `delegate::interrupted` for a write-back rolled back on a signal.
fn interrupted(root: &Path) -> Error {
    let mut details = serde_json::Map::new();
    details.insert("interrupted".into(), serde_json::json!("rolled_back"));
    Error::state(
        Code::Interrupted,
        format!(
            "interrupted by a signal during the write-back into {}: it was rolled back, so every path there is as it was before",
            root.display()
        ),
        "nothing of it was written; run the command again to write it",
    )
    .with_details(details)
}

/// Roll back every journal left by a dead process in this repository's
/// batches (and finish the clean-up of those whose result had committed).
/// Call with the repository lock held.
pub fn recover_all_detailed(source: &Source) -> Result<Recovery> {
    recover_with(source, &Faults::from_env())
}

/// The folders whose write-back journals recovery scans: every batch's
/// state folder, and every undo entry's (an undo, or an `apply
/// --from-undo`, writes through a journal there: design §3.11), each with
/// its id (batch id, apply id).
fn journal_dirs(source: &Source) -> Result<Vec<(String, PathBuf)>> {
    let state = source.state_dir();
    let mut out = Vec::new();
    for dir in [batch::batches_dir(&state), batch::undo_dir(&state)] {
        let rd = match std::fs::read_dir(&dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io(format!("cannot read {}", dir.display()), e)),
        };
        for entry in rd {
            let entry =
                entry.map_err(|e| Error::io(format!("cannot read {}", dir.display()), e))?;
            let id = entry.file_name().to_string_lossy().into_owned();
            // Hidden folders are never batches (`batch::list`): a batch's state
            // on its way out (`batch::remove_state`) or in (`preparing::record`).
            if id.starts_with('.') {
                continue;
            }
            out.push((id, entry.path()));
        }
    }
    Ok(out)
}

fn recover_with(source: &Source, faults: &Faults) -> Result<Recovery> {
    let mut out = Recovery::default();
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    let undo_dir = batch::undo_dir(&source.state_dir());
    for (id, batch_dir) in journal_dirs(source)? {
        if batch_dir.parent() == Some(undo_dir.as_path()) {
            out.undo.push(id.clone());
        }
        // A journal that never got its final name: nothing was written yet.
        let _ = std::fs::remove_file(tmp_journal(&batch_dir.join(batch::JOURNAL_FILE)));
        let journal = batch_dir.join(batch::JOURNAL_FILE);
        if journal.is_file() {
            found.push((id, journal));
        }
    }
    found.sort();
    for (id, journal) in found {
        // A journal whose write-back went into another tree than the
        // source's (a refresh into a workspace) is told as such.
        let elsewhere = std::fs::read(&journal)
            .ok()
            .and_then(|text| parse_journal(&text))
            .is_some_and(|plan| {
                let same = |a: &Path, b: &Path| {
                    a == b || std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok()
                };
                !same(&plan.root, &source.root)
            });
        if elsewhere && !out.workspaces.contains(&id) {
            out.workspaces.push(id.clone());
        }
        match recover_one(&journal, faults)? {
            Recovered::RolledBack => out.rolled_back.push(id),
            Recovered::Completed { recorded } => {
                if recorded {
                    out.recorded.push(id.clone());
                }
                out.completed.push(id)
            }
            Recovered::LiveWriter => {}
        }
    }
    Ok(out)
}

enum Recovered {
    RolledBack,
    /// `recorded`: it had staged state files, put in place now.
    Completed {
        recorded: bool,
    },
    LiveWriter,
}

fn recover_one(journal: &Path, faults: &Faults) -> Result<Recovered> {
    let text = std::fs::read(journal)
        .map_err(|e| Error::io(format!("cannot read {}", journal.display()), e))?;
    let Some(mut plan) = parse_journal(&text) else {
        // No durable plan: nothing in the working tree was changed.
        std::fs::remove_file(journal)
            .map_err(|e| Error::io(format!("cannot remove {}", journal.display()), e))?;
        return Ok(Recovered::RolledBack);
    };
    if plan.writer_alive() {
        return Ok(Recovered::LiveWriter);
    }
    let mut dirs = match Dirs::open(&plan.root) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // The working tree is gone, and with it everything to restore.
            std::fs::remove_file(journal)
                .map_err(|e| Error::io(format!("cannot remove {}", journal.display()), e))?;
            return Ok(Recovered::RolledBack);
        }
        Err(e) => {
            return Err(Error::io(
                format!(
                    "cannot open {} to recover a write-back",
                    plan.root.display()
                ),
                e,
            ))
        }
    };
    if plan.phase == Phase::Committed {
        let recorded = plan.then.iter().any(|(staged, _)| staged.exists());
        roll_forward(&mut dirs, &plan, journal, faults).map_err(|left| {
            rollback_failed(
                &plan.root,
                journal,
                "finishing an interrupted write-back",
                &left,
            )
        })?;
        return Ok(Recovered::Completed { recorded });
    }
    rollback(&mut dirs, &mut plan, journal, faults).map_err(|left| {
        rollback_failed(
            &plan.root,
            journal,
            "rolling back an interrupted write-back",
            &left,
        )
    })?;
    Ok(Recovered::RolledBack)
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

/// The paths the last rollback of `batch_dir`'s journal left to the user
/// whose kept file is still there (what resolving means: see the module
/// header). Reads only; empty when there is no such journal.
pub fn left_paths(batch_dir: &Path) -> Vec<LeftPath> {
    let Ok(text) = std::fs::read(batch_dir.join(batch::JOURNAL_FILE)) else {
        return Vec::new();
    };
    let Some(plan) = parse_journal(&text) else {
        return Vec::new();
    };
    let mut out: Vec<LeftPath> = Vec::new();
    for (path, kept, yours) in plan.left {
        let Some(kept) = kept else { continue };
        let kept = plan.root.join(crate::sys::paths::to_os(kept.as_bstr()));
        if std::fs::symlink_metadata(&kept).is_ok() && !out.iter().any(|l| l.kept == kept) {
            out.push(LeftPath { path, kept, yours });
        }
    }
    out
}

/// Whether the write-back journal in `batch_dir` is past its commit point:
/// every result file is in place, and recovery finishes it (clean-up, and
/// the record its command staged) instead of rolling it back (design §7).
/// Reads only; false without a journal.
pub fn committed(batch_dir: &Path) -> bool {
    std::fs::read(batch_dir.join(batch::JOURNAL_FILE))
        .ok()
        .and_then(|text| parse_journal(&text))
        .is_some_and(|plan| plan.phase == Phase::Committed)
}

/// Batches of this repository whose state folder holds a write-back
/// journal (an interrupted write-back, or one whose rollback left paths
/// to the user). Reads only; `apply --dry-run` reports them instead of
/// recovering (design §7).
pub fn pending(source: &Source) -> Result<Vec<String>> {
    let mut out: Vec<String> = journal_dirs(source)?
        .into_iter()
        .filter(|(_, dir)| dir.join(batch::JOURNAL_FILE).is_file())
        .map(|(id, _)| id)
        .collect();
    out.sort();
    Ok(out)
}

/// The error of a write-back that changed nothing; `cause` (carried as
/// data from where it happened, never read out of `message`) decides the
/// code.
fn failed(message: String, cause: Option<Cause>) -> Error {
    if let Some(Cause::Fs(cause)) = cause {
        return Error::state(
            cause.code(),
            message,
            format!(
                "the working tree is as it was before; {}",
                cause
                    .help(None)
                    .replace("that holds it", "that holds the working tree")
            ),
        );
    }
    if let Some(Cause::Filter(driver)) = cause {
        // Named when it is known and prints as it is (design §3.16 "Hints").
        let help = match driver.filter(|d| {
            !d.is_empty() && d.bytes().all(|c| c.is_ascii_alphanumeric() || b"._-".contains(&c))
        }) {
            Some(d) => format!(
                "the working tree is as it was before; fix the filter driver {d}, or make it optional with `git config filter.{d}.required false`, and run `git delegate apply` again"
            ),
            None => "the working tree is as it was before; fix the filter driver (or make it optional with `git config filter.<driver>.required false`) and run `git delegate apply` again".to_string(),
        };
        return Error::state(Code::FilterFailed, message, help);
    }
    Error::state(
        Code::WriteFailed,
        message,
        "the working tree is as it was before; fix the cause (disk space, permissions, a file changed meanwhile) and run `git delegate apply` again",
    )
}

/// `delegate::rollback_failed`: the paths left as they were found, each
/// with the file kept for it, in the message and in the JSON error object
/// (`batch`, `journal`, `paths`).
fn rollback_failed(root: &Path, journal: &Path, what: &str, left: &[Left]) -> Error {
    let kept_abs = |l: &Left| {
        l.kept
            .as_ref()
            .map(|k| root.join(crate::sys::paths::to_os(k.as_bstr())))
    };
    let journal_kept = journal.exists();
    let named: Vec<String> = left
        .iter()
        .map(|l| {
            let mut s = if l.path.is_empty() {
                l.detail.clone()
            } else {
                format!(
                    "{}: {}",
                    crate::sys::paths::quote(l.path.as_bstr()),
                    l.detail
                )
            };
            if let Some(k) = kept_abs(l) {
                s.push_str(&format!(
                    ", {} is kept at {}",
                    if l.yours {
                        "your version"
                    } else {
                        "the original"
                    },
                    k.display()
                ));
            }
            s
        })
        .collect();
    let message = format!(
        "{what}: {} left as found ({}); {}",
        if left.len() == 1 {
            "1 path was".to_string()
        } else {
            format!("{} paths were", left.len())
        },
        named.join("; "),
        if journal_kept {
            format!(
                "the journal {} is kept until that is resolved",
                journal.display()
            )
        } else {
            "every other path was put back".to_string()
        }
    );
    let help = if journal_kept {
        "for each path named, keep your version by deleting the kept file, or take the original back by moving the kept file over the path; then run `git delegate gc` (or any command that changes things), which re-checks and finishes the rollback"
    } else {
        "look at the paths named: they hold your version; the rest of the working tree is as it was before the write-back"
    };
    let paths: Vec<serde_json::Value> = left
        .iter()
        .filter(|l| !l.path.is_empty())
        .map(|l| {
            serde_json::json!({
                "path": crate::sys::paths::doc_bytes(&l.path),
                "reason": l.reason.as_str(),
                "kept": kept_abs(l).map(|k| crate::sys::paths::doc_path(&k)),
                "kept_is": l.kept.as_ref().map(|_| if l.yours { "yours" } else { "original" }),
                "message": l.detail,
            })
        })
        .collect();
    let mut details = serde_json::Map::new();
    let batch = journal
        .parent()
        .and_then(|d| d.file_name())
        .map(|n| n.to_string_lossy().into_owned());
    details.insert("batch".into(), serde_json::json!(batch));
    details.insert(
        "journal".into(),
        serde_json::json!(journal_kept.then(|| crate::sys::paths::doc_path(journal))),
    );
    details.insert("paths".into(), serde_json::Value::Array(paths));
    let lossy = |l: &Left| {
        crate::sys::paths::is_lossy(&l.path)
            || kept_abs(l).is_some_and(|k| crate::sys::paths::path_is_lossy(&k))
    };
    crate::sys::paths::note_lossy(
        &mut details,
        left.iter().any(lossy) || (journal_kept && crate::sys::paths::path_is_lossy(journal)),
    );
    Error::state(Code::RollbackFailed, message, help).with_details(details)
}
