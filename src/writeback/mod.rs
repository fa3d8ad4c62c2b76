//! Write-back of a merge result into the source working tree through a
//! crash-safe journal (SPEC §3.2 step 4, §7).
//!
//! Owns: the journal file in a batch's state folder, writing and removing
//! working-tree paths (temp file + fsync + rename, symlink-safe parents,
//! exec bits, symlinks, smudge filters), rollback, and recovery of journals
//! left by dead processes.
//! Never: writes a path whose current content is not the expected `S`
//! state, follows a symlink out of the source root, or touches the index,
//! HEAD or refs.
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
//!    `O_EXCL` with mode 0o666/0o777 (the umask applies, as for git),
//!    symlinks from the blob bytes; a blob over 8 MiB that no filter
//!    changes is copied from the object store as it is inflated, never held
//!    whole. All written first, then fsync'd with their folders, several
//!    at once (concurrent fsyncs share journal commits); above 64 files one
//!    `syncfs` instead (per-file fsyncs of a handful of files are cheaper
//!    than a `syncfs` of a busy disk, many are not).
//! 4. Marker `renaming` appended to the journal and fsync'd.
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
//! 7. Asides removed, folders emptied by deletions removed, folders
//!    fsync'd, journal removed, batch folder fsync'd.
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
//! it). If it cannot finish (something new stands where an original must
//! return), the journal stays and `delegate::rollback_failed` is returned.
//!
//! # Journal format
//!
//! JSON lines, each object tagged by `"t"`: one `header` (`version`, `pid`,
//! `start` (ticks since boot, `/proc/PID/stat` field 22), `host`, `root`,
//! `token`, `created_at`), one `item` per path (`path`, `s` and `f` as
//! `"<octal mode> <hex id>"` or null, `temp`, `aside`, `aside_folder`,
//! `covered` (inside a folder moved aside whole), `early` (its folders are
//! created before its temp)), one `mkdirs` (folders the write may create,
//! shallow first), then appended `phase` markers: `planned` (end of the
//! durable plan), `renaming`, `committed`; the last one counts. Paths are
//! relative to `root` with `%XX` escapes for `%`, control bytes and
//! non-ASCII bytes. A torn last line is ignored (its marker did not become
//! durable; a failed append is also cut back).
//!
//! # Recovery (`recover_all`)
//!
//! Scans `<state>/batches/*/writeback.journal` (a batch folder without
//! `batch.toml` included). A journal without `planned` is removed (nothing
//! was written). One whose writer (pid + start time, same host) still runs
//! is left alone. `committed`: rolled forward (asides and emptied folders
//! removed). Otherwise rolled back as above, using the journal's `root`.
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

use std::collections::{BTreeSet, HashMap, HashSet};
use std::io::Write;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use gix::bstr::{BStr, BString, ByteSlice};
use gix::objs::tree::EntryKind;
use gix::ObjectId;
use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags};
use rustix::io::Errno;
use serde::{Deserialize, Serialize};

use crate::batch;
use crate::error::{Error, Result};
use crate::repo::Source;

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
}

/// Check every write against the disk without changing anything.
pub fn check(source: &Source, writes: &[PathWrite]) -> Result<Vec<Blocked>> {
    if writes.is_empty() {
        return Ok(Vec::new());
    }
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
    for w in writes {
        let reason = check_one(&mut dirs, &mut hasher, w, &deleted).map_err(|f| {
            Error::state(
                "delegate::write_check_failed",
                format!("cannot check the working tree before writing: {}", f.0),
                "check the permissions of that path, then run the command again",
            )
        })?;
        if let Some(reason) = reason {
            blocked.push(Blocked {
                path: w.path.clone(),
                reason,
            });
        }
    }
    Ok(blocked)
}

fn check_one(
    dirs: &mut Dirs,
    hasher: &mut Hasher<'_>,
    w: &PathWrite,
    deleted: &HashSet<&BStr>,
) -> Result<Option<BlockReason>, Fail> {
    use BlockReason::*;
    for parent in parents(w.path.as_bstr()) {
        match dirs
            .lstat(parent)
            .map_err(|e| Fail::io("stat", parent, e))?
        {
            Disk::Dir => continue,
            Disk::Absent => {
                return Ok(w.old.is_some().then_some(ChangedSinceSnapshot));
            }
            _ => {
                if w.old.is_none() && deleted.contains(parent) {
                    // The S file on the way goes first; below it all is new.
                    return Ok(None);
                }
                return Ok(Some(if w.old.is_some() {
                    ChangedSinceSnapshot
                } else {
                    UntrackedInTheWay
                }));
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
    })
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

/// Write every path through the journal in `batch_dir`; any failure rolls
/// every written path back to `S` and returns the error.
pub fn write(source: &Source, batch_dir: &Path, writes: &[PathWrite]) -> Result<()> {
    write_with(source, batch_dir, writes, &Faults::from_env())
}

fn write_with(
    source: &Source,
    batch_dir: &Path,
    writes: &[PathWrite],
    faults: &Faults,
) -> Result<()> {
    if writes.is_empty() {
        return Ok(());
    }
    let journal_path = batch_dir.join(batch::JOURNAL_FILE);
    let mut dirs = Dirs::open(&source.root).map_err(|e| {
        failed(format!(
            "cannot open the working tree {}: {e}",
            source.root.display()
        ))
    })?;
    let token = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
    let mut plan = make_plan(&mut dirs, writes, &source.root, &token)
        .map_err(|f| failed(format!("write-back stopped before any change: {}", f.0)))?;
    write_journal(&journal_path, &plan).map_err(|e| {
        let _ = std::fs::remove_file(&journal_path);
        failed(format!(
            "cannot record the write-back journal {}: {e}; nothing was changed",
            journal_path.display()
        ))
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
    let outcome = w.run(&mut plan);
    if let Err(fail) = outcome {
        return Err(
            match rollback(&mut w.dirs, &mut plan, &journal_path, faults) {
                Ok(()) => failed(format!(
                    "write-back failed: {}; every path was rolled back to what it was before",
                    fail.0
                )),
                Err(problems) => rollback_failed(&journal_path, &fail.0, &problems),
            },
        );
    }
    // Committed: the result stands. Clean-up failures leave the journal for
    // the next command, which finishes the job (`roll_forward`).
    faults.hit("after-commit");
    let _ = roll_forward(&mut w.dirs, &plan, &journal_path, faults);
    Ok(())
}

/// Roll back every journal left by a dead process in this repository's
/// batches (and finish the clean-up of those whose result had committed).
/// Call with the repository lock held.
pub fn recover_all_detailed(source: &Source) -> Result<Recovery> {
    recover_with(source, &Faults::from_env())
}

fn recover_with(source: &Source, faults: &Faults) -> Result<Recovery> {
    let dir = batch::batches_dir(&source.state_dir());
    let mut out = Recovery::default();
    let rd = match std::fs::read_dir(&dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(Error::io(format!("cannot read {}", dir.display()), e)),
    };
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| Error::io(format!("cannot read {}", dir.display()), e))?;
        let batch_dir = entry.path();
        let id = entry.file_name().to_string_lossy().into_owned();
        // A journal that never got its final name: nothing was written yet.
        let _ = std::fs::remove_file(tmp_journal(&batch_dir.join(batch::JOURNAL_FILE)));
        let journal = batch_dir.join(batch::JOURNAL_FILE);
        if journal.is_file() {
            found.push((id, journal));
        }
    }
    found.sort();
    for (id, journal) in found {
        match recover_one(&journal, faults)? {
            Recovered::RolledBack => out.rolled_back.push(id),
            Recovered::Completed => out.completed.push(id),
            Recovered::LiveWriter => {}
        }
    }
    Ok(out)
}

enum Recovered {
    RolledBack,
    Completed,
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
        roll_forward(&mut dirs, &plan, journal, faults).map_err(|problems| {
            rollback_failed(journal, "finishing an interrupted write-back", &problems)
        })?;
        return Ok(Recovered::Completed);
    }
    rollback(&mut dirs, &mut plan, journal, faults)
        .map_err(|problems| rollback_failed(journal, "an interrupted write-back", &problems))?;
    Ok(Recovered::RolledBack)
}

fn failed(message: String) -> Error {
    Error::state(
        "delegate::write_failed",
        message,
        "the working tree is as it was before; fix the cause (disk space, permissions, a file changed meanwhile) and run `git delegate apply` again",
    )
}

fn rollback_failed(journal: &Path, what: &str, problems: &[String]) -> Error {
    Error::state(
        "delegate::rollback_failed",
        format!(
            "{what}: could not put every path back ({}); the journal {} is kept",
            problems.join("; "),
            journal.display()
        ),
        "resolve the paths named above (move the file that is in the way), then run any mutating git delegate command (e.g. `git delegate gc`) to finish the rollback",
    )
}

// ---------------------------------------------------------------------------
// The plan and its journal

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Phase {
    Planned,
    Renaming,
    Committed,
}

impl Phase {
    fn name(self) -> &'static str {
        match self {
            Phase::Planned => "planned",
            Phase::Renaming => "renaming",
            Phase::Committed => "committed",
        }
    }

    fn parse(s: &str) -> Option<Phase> {
        Some(match s {
            "planned" => Phase::Planned,
            "renaming" => Phase::Renaming,
            "committed" => Phase::Committed,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone)]
struct Item {
    path: BString,
    old: Option<(EntryKind, ObjectId)>,
    new: Option<(EntryKind, ObjectId)>,
    /// Where the new content waits (repo-relative).
    temp: Option<BString>,
    /// Where the original (file, or folder in the way) is moved (repo-relative).
    aside: Option<BString>,
    /// The aside is a folder standing where `F` puts a file.
    aside_folder: bool,
    /// A deletion inside a folder that is moved aside whole.
    covered: bool,
    /// Folders on the way that must be created before the temp (none stands in the way).
    early: bool,
}

#[derive(Debug, Clone)]
struct Plan {
    pid: u32,
    start: Option<u64>,
    host: String,
    root: PathBuf,
    token: String,
    created_at: String,
    items: Vec<Item>,
    /// Folders the write may create, shallow first.
    mkdirs: Vec<BString>,
    phase: Phase,
}

impl Plan {
    fn writer_alive(&self) -> bool {
        self.pid != std::process::id()
            && self.host == crate::lease::hostname()
            && self.start.is_some()
            && crate::lease::process_start(self.pid) == self.start
    }
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
enum Line {
    Header {
        version: u32,
        pid: u32,
        start: Option<u64>,
        host: String,
        root: String,
        token: String,
        created_at: String,
    },
    Item {
        path: String,
        s: Option<String>,
        f: Option<String>,
        temp: Option<String>,
        aside: Option<String>,
        aside_folder: bool,
        covered: bool,
        early: bool,
    },
    Mkdirs {
        paths: Vec<String>,
    },
    Phase {
        phase: String,
    },
}

fn tmp_journal(journal: &Path) -> PathBuf {
    let mut name = journal.as_os_str().to_owned();
    name.push(".tmp");
    PathBuf::from(name)
}

fn journal_text(plan: &Plan) -> String {
    let mut lines = vec![Line::Header {
        version: 1,
        pid: plan.pid,
        start: plan.start,
        host: plan.host.clone(),
        root: enc(plan.root.as_os_str().as_bytes()),
        token: plan.token.clone(),
        created_at: plan.created_at.clone(),
    }];
    for it in &plan.items {
        lines.push(Line::Item {
            path: enc(&it.path),
            s: it.old.map(entry_str),
            f: it.new.map(entry_str),
            temp: it.temp.as_ref().map(|t| enc(t)),
            aside: it.aside.as_ref().map(|a| enc(a)),
            aside_folder: it.aside_folder,
            covered: it.covered,
            early: it.early,
        });
    }
    lines.push(Line::Mkdirs {
        paths: plan.mkdirs.iter().map(|m| enc(m)).collect(),
    });
    lines.push(Line::Phase {
        phase: Phase::Planned.name().into(),
    });
    let mut text = String::new();
    for l in lines {
        // Serialising plain strings, numbers and bools cannot fail.
        text.push_str(&serde_json::to_string(&l).unwrap_or_default());
        text.push('\n');
    }
    text
}

fn write_journal(path: &Path, plan: &Plan) -> std::io::Result<()> {
    let tmp = tmp_journal(path);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)?;
    f.write_all(journal_text(plan).as_bytes())?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)?;
    let dir = std::fs::File::open(path.parent().unwrap_or(Path::new(".")))?;
    dir.sync_all()
}

/// Append a marker durably. On failure the journal is cut back to what it
/// was (a marker that may not be durable must not be read later).
fn append_phase(path: &Path, phase: Phase) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new().append(true).open(path)?;
    let len = f.metadata()?.len();
    let line = serde_json::to_string(&Line::Phase {
        phase: phase.name().into(),
    })
    .unwrap_or_default();
    let res = f
        .write_all(format!("{line}\n").as_bytes())
        .and_then(|()| f.sync_all());
    if res.is_err() {
        let _ = f.set_len(len);
        let _ = f.sync_all();
    }
    res
}

fn remove_journal(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    if let Ok(dir) = std::fs::File::open(path.parent().unwrap_or(Path::new("."))) {
        dir.sync_all()?;
    }
    Ok(())
}

/// The plan of a journal, `None` when it never became durable (no
/// `planned` marker: nothing was written).
fn parse_journal(text: &[u8]) -> Option<Plan> {
    let mut plan: Option<Plan> = None;
    let mut planned = false;
    for raw in text.split(|&b| b == b'\n') {
        if raw.is_empty() {
            continue;
        }
        // A torn last line did not become durable: stop there.
        let Ok(line) = serde_json::from_slice::<Line>(raw) else {
            break;
        };
        match line {
            Line::Header {
                pid,
                start,
                host,
                root,
                token,
                created_at,
                ..
            } => {
                plan = Some(Plan {
                    pid,
                    start,
                    host,
                    root: PathBuf::from(std::ffi::OsStr::from_bytes(&dec(&root))),
                    token,
                    created_at,
                    items: Vec::new(),
                    mkdirs: Vec::new(),
                    phase: Phase::Planned,
                })
            }
            Line::Item {
                path,
                s,
                f,
                temp,
                aside,
                aside_folder,
                covered,
                early,
            } => {
                let p = plan.as_mut()?;
                p.items.push(Item {
                    path: dec(&path).into(),
                    old: match s {
                        Some(s) => Some(parse_entry(&s)?),
                        None => None,
                    },
                    new: match f {
                        Some(f) => Some(parse_entry(&f)?),
                        None => None,
                    },
                    temp: temp.map(|t| dec(&t).into()),
                    aside: aside.map(|a| dec(&a).into()),
                    aside_folder,
                    covered,
                    early,
                });
            }
            Line::Mkdirs { paths } => {
                plan.as_mut()?.mkdirs = paths.iter().map(|p| dec(p).into()).collect();
            }
            Line::Phase { phase } => {
                let phase = Phase::parse(&phase)?;
                let p = plan.as_mut()?;
                // The last marker wins.
                planned = true;
                p.phase = phase;
            }
        }
    }
    plan.filter(|_| planned)
}

fn entry_str((kind, id): (EntryKind, ObjectId)) -> String {
    let mode = match kind {
        EntryKind::Blob => "100644",
        EntryKind::BlobExecutable => "100755",
        EntryKind::Link => "120000",
        EntryKind::Tree => "40000",
        EntryKind::Commit => "160000",
    };
    format!("{mode} {id}")
}

fn parse_entry(s: &str) -> Option<(EntryKind, ObjectId)> {
    let (mode, id) = s.split_once(' ')?;
    let kind = match mode {
        "100644" => EntryKind::Blob,
        "100755" => EntryKind::BlobExecutable,
        "120000" => EntryKind::Link,
        "40000" => EntryKind::Tree,
        "160000" => EntryKind::Commit,
        _ => return None,
    };
    Some((kind, ObjectId::from_hex(id.as_bytes()).ok()?))
}

/// `%XX` for `%`, control bytes and non-ASCII bytes; the rest as is.
fn enc(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    for &b in bytes {
        if b == b'%' || !(0x20..0x7f).contains(&b) {
            s.push_str(&format!("%{b:02X}"));
        } else {
            s.push(b as char);
        }
    }
    s
}

fn dec(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push(h << 4 | l);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

fn make_plan(
    dirs: &mut Dirs,
    writes: &[PathWrite],
    root: &Path,
    token: &str,
) -> Result<Plan, Fail> {
    let mut sorted: Vec<&PathWrite> = writes
        .iter()
        .filter(|w| w.old.is_some() || w.new.is_some())
        .collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    for w in &sorted {
        for (kind, _) in w.old.iter().chain(w.new.iter()) {
            if matches!(kind, EntryKind::Tree | EntryKind::Commit) {
                return Err(Fail(format!(
                    "{} is a folder or submodule entry, which write-back does not handle",
                    crate::paths::quote(w.path.as_bstr())
                )));
            }
        }
        if w.path.is_empty()
            || w.path
                .split_str("/")
                .any(|c| c.is_empty() || c == b"." || c == b"..")
        {
            return Err(Fail(format!(
                "{} is not a valid path",
                crate::paths::quote(w.path.as_bstr())
            )));
        }
    }
    let name = |n: usize, ext: &str| format!(".gd-{token}-{n}.{ext}");
    let mut items: Vec<Item> = Vec::with_capacity(sorted.len());
    let mut folder_asides: HashSet<BString> = HashSet::new();
    for (n, w) in sorted.iter().enumerate() {
        let mut it = Item {
            path: w.path.clone(),
            old: w.old,
            new: w.new,
            temp: None,
            aside: None,
            aside_folder: false,
            covered: false,
            early: false,
        };
        let (parent, _) = split(w.path.as_bstr());
        if w.old.is_none() && w.new.is_some() && dirs.lstat_lenient(w.path.as_bstr()) == Disk::Dir {
            it.aside = Some(join(parent, name(n, "orig").as_bytes().as_bstr()));
            it.aside_folder = true;
            folder_asides.insert(w.path.clone());
        }
        items.push(it);
    }
    let mut mkdirs: BTreeSet<BString> = BTreeSet::new();
    for (n, it) in items.iter_mut().enumerate() {
        let (parent, _) = split(it.path.as_bstr());
        if it.old.is_some() {
            it.covered = parents(it.path.as_bstr()).any(|p| folder_asides.contains(p));
            if !it.covered {
                it.aside = Some(join(parent, name(n, "orig").as_bytes().as_bstr()));
            }
        }
        if it.new.is_some() {
            let mut temp_dir: BString = BString::default();
            let mut blocked = false;
            let mut missing = false;
            for p in parents(it.path.as_bstr()) {
                if blocked || missing {
                    mkdirs.insert(p.into());
                    continue;
                }
                match dirs.lstat_lenient(p) {
                    Disk::Dir => temp_dir = p.into(),
                    Disk::Absent => {
                        missing = true;
                        mkdirs.insert(p.into());
                    }
                    _ => {
                        blocked = true;
                        mkdirs.insert(p.into());
                    }
                }
            }
            it.early = !blocked;
            let dir = if blocked { temp_dir.as_bstr() } else { parent };
            it.temp = Some(join(dir, name(n, "tmp").as_bytes().as_bstr()));
        }
    }
    let mut mkdirs: Vec<BString> = mkdirs.into_iter().collect();
    mkdirs.sort_by_key(|p| (depth(p.as_bstr()), p.clone()));
    Ok(Plan {
        pid: std::process::id(),
        start: crate::lease::process_start(std::process::id()),
        host: crate::lease::hostname(),
        root: root.to_path_buf(),
        token: token.to_string(),
        created_at: crate::time::rfc3339(crate::time::now()),
        items,
        mkdirs,
        phase: Phase::Planned,
    })
}

// ---------------------------------------------------------------------------
// Writing

struct Writer<'a> {
    repo: &'a gix::Repository,
    dirs: Dirs,
    journal: &'a Path,
    faults: &'a Faults,
    renames: usize,
    /// Folders to fsync (repo-relative).
    synced: BTreeSet<BString>,
}

/// Above this many files, one `syncfs` replaces per-file fsyncs.
const SYNCFS_ABOVE: usize = 64;

impl Writer<'_> {
    fn run(&mut self, plan: &mut Plan) -> Result<(), Fail> {
        self.temp_files(plan)?;
        self.faults.hit("after-temp-files");
        append_phase(self.journal, Phase::Renaming)
            .map_err(|e| Fail(format!("cannot update the journal: {e}")))?;
        plan.phase = Phase::Renaming;
        self.renames(plan)?;
        append_phase(self.journal, Phase::Committed)
            .map_err(|e| Fail(format!("cannot update the journal: {e}")))?;
        plan.phase = Phase::Committed;
        Ok(())
    }

    fn temp_files(&mut self, plan: &Plan) -> Result<(), Fail> {
        let mut hasher = Hasher::for_checkout(self.repo, &plan.items)?;
        let mkdirs: HashSet<&BStr> = plan.mkdirs.iter().map(|m| m.as_bstr()).collect();
        let count = plan.items.iter().filter(|i| i.temp.is_some()).count();
        let per_file = count <= SYNCFS_ABOVE;
        // Written first, fsync'd together afterwards: concurrent fsyncs
        // share the filesystem's journal commits.
        let mut to_sync: Vec<(std::fs::File, &BStr)> = Vec::new();
        for it in &plan.items {
            let (Some(temp), Some((kind, id))) = (&it.temp, it.new) else {
                continue;
            };
            if it.early {
                let (parent, _) = split(it.path.as_bstr());
                self.ensure_dir(parent, &mkdirs)?;
            }
            let (tdir, tname) = split(temp.as_bstr());
            let dfd = self
                .dirs
                .get(tdir)
                .map_err(|e| Fail::io("open the folder", tdir, e))?;
            let unreadable = |e: &dyn std::fmt::Display| {
                Fail(format!(
                    "cannot read the new content of {} ({id}): {e}",
                    crate::paths::quote(it.path.as_bstr())
                ))
            };
            match kind {
                EntryKind::Link => {
                    let blob = self.repo.find_blob(id).map_err(|e| unreadable(&e))?;
                    rustix::fs::symlinkat(&blob.data[..], &*dfd, tname.as_bytes())
                        .map_err(|e| Fail::io("create", temp.as_bstr(), e))?;
                }
                _ => {
                    let mode = if kind == EntryKind::BlobExecutable {
                        0o777
                    } else {
                        0o666
                    };
                    let fd = rustix::fs::openat(
                        &*dfd,
                        tname.as_bytes(),
                        OFlags::WRONLY
                            | OFlags::CREATE
                            | OFlags::EXCL
                            | OFlags::NOFOLLOW
                            | OFlags::CLOEXEC,
                        Mode::from_raw_mode(mode),
                    )
                    .map_err(|e| Fail::io("create", temp.as_bstr(), e))?;
                    let mut file = std::fs::File::from(fd);
                    let big = crate::blob::size(self.repo, id).map_err(|e| unreadable(&e))?
                        > crate::blob::STREAM_ABOVE;
                    if big
                        && crate::blob::smudge_is_identity(&mut hasher.pipeline, it.path.as_bstr())
                    {
                        // Copied from the object store as it is inflated.
                        let mut from =
                            crate::blob::open(self.repo, id).map_err(|e| unreadable(&e))?;
                        crate::blob::copy(&mut from, &mut file)
                            .map_err(|e| Fail::io("write", temp.as_bstr(), e))?;
                    } else {
                        let blob = self.repo.find_blob(id).map_err(|e| unreadable(&e))?;
                        hasher.smudge_into(&blob.data, it.path.as_bstr(), &mut file)?;
                    }
                    if per_file {
                        to_sync.push((file, temp.as_bstr()));
                    }
                }
            }
            self.synced.insert(tdir.into());
        }
        let fds: Vec<(&std::fs::File, &BStr)> = to_sync.iter().map(|(f, p)| (f, *p)).collect();
        fsync_all(&fds)?;
        drop(to_sync);
        self.sync_folders(!per_file)
    }

    /// Create the missing folders of `dir` (only those the journal lists).
    fn ensure_dir(&mut self, dir: &BStr, mkdirs: &HashSet<&BStr>) -> Result<(), Fail> {
        for p in parents_and_self(dir) {
            match self.dirs.lstat(p).map_err(|e| Fail::io("stat", p, e))? {
                Disk::Dir => {}
                Disk::Absent if mkdirs.contains(p) => {
                    let (pdir, name) = split(p);
                    let pfd = self
                        .dirs
                        .get(pdir)
                        .map_err(|e| Fail::io("open the folder", pdir, e))?;
                    match rustix::fs::mkdirat(&*pfd, name.as_bytes(), Mode::from_raw_mode(0o777)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(e) => return Err(Fail::io("create the folder", p, e)),
                    }
                    self.synced.insert(pdir.into());
                }
                Disk::Absent => {
                    return Err(Fail(format!(
                        "the folder {} disappeared during the write-back",
                        crate::paths::quote(p)
                    )))
                }
                _ => {
                    return Err(Fail(format!(
                        "{} is in the way of a folder the result needs",
                        crate::paths::quote(p)
                    )))
                }
            }
        }
        Ok(())
    }

    fn rename(&mut self, from: &BStr, to: &BStr, what: &str, about: &BStr) -> Result<(), Fail> {
        self.renames += 1;
        self.faults
            .fail_rename(self.renames)
            .map_err(|e| Fail::io(what, about, e))?;
        let (fdir, fname) = split(from);
        let (tdir, tname) = split(to);
        let ffd = self
            .dirs
            .get(fdir)
            .map_err(|e| Fail::io("open the folder", fdir, e))?;
        let tfd = self
            .dirs
            .get(tdir)
            .map_err(|e| Fail::io("open the folder", tdir, e))?;
        rename_noreplace(&ffd, fname.as_bytes(), &tfd, tname.as_bytes())
            .map_err(|e| Fail::io(what, about, e))?;
        self.dirs.forget(from);
        self.dirs.forget(to);
        self.synced.insert(fdir.into());
        self.synced.insert(tdir.into());
        self.faults.after_rename(self.renames);
        Ok(())
    }

    fn renames(&mut self, plan: &Plan) -> Result<(), Fail> {
        let mut hasher = Hasher::new(self.repo).map_err(|e| Fail(e.message))?;
        let mkdirs: HashSet<&BStr> = plan.mkdirs.iter().map(|m| m.as_bstr()).collect();
        let covered: HashMap<&BStr, (EntryKind, ObjectId)> = plan
            .items
            .iter()
            .filter(|i| i.covered)
            .filter_map(|i| i.old.map(|o| (i.path.as_bstr(), o)))
            .collect();
        // Folders standing where the result puts a file: aside whole, then verified.
        for it in plan.items.iter().filter(|i| i.aside_folder) {
            let Some(aside) = &it.aside else { continue };
            let path = it.path.as_bstr();
            if self
                .dirs
                .lstat(path)
                .map_err(|e| Fail::io("stat", path, e))?
                != Disk::Dir
            {
                return Err(changed(path));
            }
            self.rename(path, aside.as_bstr(), "move aside", path)?;
            self.verify_folder(&mut hasher, aside.as_bstr(), path, &covered)?;
        }
        let (attrs, rest): (Vec<&Item>, Vec<&Item>) = plan
            .items
            .iter()
            .filter(|i| !i.covered || i.new.is_some())
            .partition(|i| split(i.path.as_bstr()).1 == ".gitattributes");
        for it in rest.into_iter().chain(attrs) {
            let path = it.path.as_bstr();
            if let (Some(s), false, false) = (it.old, it.covered, it.aside_folder) {
                let Some(aside) = &it.aside else { continue };
                // Stat check, move aside, then the content check on the aside.
                let disk = self
                    .dirs
                    .lstat(path)
                    .map_err(|e| Fail::io("stat", path, e))?;
                if !disk.is_kind(s.0) {
                    return Err(changed(path));
                }
                self.rename(path, aside.as_bstr(), "move aside", path)?;
                let (adir, aname) = split(aside.as_bstr());
                let afd = self
                    .dirs
                    .get(adir)
                    .map_err(|e| Fail::io("open the folder", adir, e))?;
                if !hasher.matches(&afd, aname, path, s)? {
                    return Err(changed(path));
                }
            }
            if let (Some(temp), Some(_)) = (&it.temp, it.new) {
                let (parent, _) = split(path);
                self.ensure_dir(parent, &mkdirs)?;
                self.rename(temp.as_bstr(), path, "write", path)?;
            }
        }
        let all = self.renames > SYNCFS_ABOVE;
        self.sync_folders(all)
    }

    /// The content of a folder moved aside: only `S` paths the result
    /// deletes, unchanged, and empty folders.
    fn verify_folder(
        &mut self,
        hasher: &mut Hasher<'_>,
        aside: &BStr,
        path: &BStr,
        covered: &HashMap<&BStr, (EntryKind, ObjectId)>,
    ) -> Result<(), Fail> {
        let mut stack: Vec<BString> = vec![BString::default()];
        while let Some(rel) = stack.pop() {
            let here = if rel.is_empty() {
                BString::from(aside)
            } else {
                join(aside, rel.as_bstr())
            };
            let entries = self
                .dirs
                .list(here.as_bstr())
                .map_err(|e| Fail::io("read", here.as_bstr(), e))?;
            let dfd = self
                .dirs
                .get(here.as_bstr())
                .map_err(|e| Fail::io("open the folder", here.as_bstr(), e))?;
            for (name, kind) in entries {
                let sub = if rel.is_empty() {
                    name.clone()
                } else {
                    join(rel.as_bstr(), name.as_bstr())
                };
                let original = join(path, sub.as_bstr());
                if kind == Disk::Dir {
                    stack.push(sub);
                    continue;
                }
                match covered.get(original.as_bstr()) {
                    Some(&s) if hasher.matches(&dfd, name.as_bstr(), original.as_bstr(), s)? => {}
                    Some(_) => return Err(changed(original.as_bstr())),
                    None => {
                        return Err(Fail(format!(
                            "{} appeared in a folder the result replaces by a file",
                            crate::paths::quote(original.as_bstr())
                        )))
                    }
                }
            }
        }
        Ok(())
    }

    /// fsync the recorded folders, or the whole filesystem when there are many.
    fn sync_folders(&mut self, whole_fs: bool) -> Result<(), Fail> {
        let folders = std::mem::take(&mut self.synced);
        if whole_fs || folders.len() > SYNCFS_ABOVE {
            let root = self.dirs.root.clone();
            return rustix::fs::syncfs(&*root).map_err(|e| Fail::io("sync", b"".as_bstr(), e));
        }
        let mut fds: Vec<(Rc<OwnedFd>, &BStr)> = Vec::with_capacity(folders.len());
        for f in &folders {
            let fd = self
                .dirs
                .get(f.as_bstr())
                .map_err(|e| Fail::io("open the folder", f.as_bstr(), e))?;
            fds.push((fd, f.as_bstr()));
        }
        let refs: Vec<(&OwnedFd, &BStr)> = fds.iter().map(|(fd, p)| (&**fd, *p)).collect();
        fsync_all(&refs)
    }
}

/// fsync every descriptor, several at once: concurrent fsyncs are served by
/// shared journal commits, where one after the other each waits for its own.
fn fsync_all<F: std::os::fd::AsFd + Sync>(fds: &[(F, &BStr)]) -> Result<(), Fail> {
    const THREADS: usize = 8;
    let one = |(fd, path): &(F, &BStr)| {
        rustix::fs::fsync(fd.as_fd()).map_err(|e| Fail::io("fsync", path, e))
    };
    if fds.len() <= 1 {
        return fds.iter().try_for_each(one);
    }
    let chunk = fds.len().div_ceil(THREADS);
    std::thread::scope(|s| {
        let handles: Vec<_> = fds
            .chunks(chunk)
            .map(|c| s.spawn(move || c.iter().try_for_each(one)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Fail("an fsync thread stopped unexpectedly".into())))
            })
            .collect::<Result<Vec<()>, Fail>>()
    })?;
    Ok(())
}

/// fsync the folders a rollback or roll-forward touched (one `syncfs` when many).
fn sync_touched(dirs: &mut Dirs, touched: BTreeSet<BString>) {
    if touched.len() > SYNCFS_ABOVE {
        let _ = rustix::fs::syncfs(&*dirs.root);
        return;
    }
    let fds: Vec<(Rc<OwnedFd>, &BStr)> = touched
        .iter()
        .filter_map(|t| Some((dirs.get(t.as_bstr()).ok()?, t.as_bstr())))
        .collect();
    let refs: Vec<(&OwnedFd, &BStr)> = fds.iter().map(|(fd, p)| (&**fd, *p)).collect();
    let _ = fsync_all(&refs);
}

fn changed(path: &BStr) -> Fail {
    Fail(format!(
        "{} changed on disk since the snapshot",
        crate::paths::quote(path)
    ))
}

fn rename_noreplace(
    from_dir: &OwnedFd,
    from: &[u8],
    to_dir: &OwnedFd,
    to: &[u8],
) -> std::io::Result<()> {
    match rustix::fs::renameat_with(from_dir, from, to_dir, to, RenameFlags::NOREPLACE) {
        Ok(()) => Ok(()),
        Err(Errno::INVAL) | Err(Errno::NOSYS) => {
            // A filesystem without RENAME_NOREPLACE: check, then rename.
            match rustix::fs::statat(to_dir, to, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(_) => Err(Errno::EXIST.into()),
                Err(Errno::NOENT) => Ok(rustix::fs::renameat(from_dir, from, to_dir, to)?),
                Err(e) => Err(e.into()),
            }
        }
        Err(e) => Err(e.into()),
    }
}

// ---------------------------------------------------------------------------
// Rollback and roll-forward (both idempotent)

/// Put every path back to `S`, remove what the write created, remove the
/// journal. Returns the paths that could not be restored (the journal then
/// stays). Every step is decided by what is on disk, so a rollback
/// interrupted at any point is finished by the next one; it appends
/// nothing to the journal (a full disk cannot stop it).
fn rollback(
    dirs: &mut Dirs,
    plan: &mut Plan,
    journal: &Path,
    faults: &Faults,
) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    let mut touched: BTreeSet<BString> = BTreeSet::new();
    // 1. Files renamed into place go back to their temp names, which puts
    //    the tree where it was before the first rename. A temp is durable
    //    before `renaming` is recorded, so a missing temp means it was
    //    renamed; and its original was moved aside before that (asides stay
    //    until the commit): no aside, no rename.
    if plan.phase == Phase::Renaming {
        for it in plan.items.iter().rev() {
            let (Some(temp), Some(_)) = (&it.temp, it.new) else {
                continue;
            };
            if dirs.lstat_lenient(temp.as_bstr()) != Disk::Absent {
                continue;
            }
            let renamed = match (&it.aside, it.old.is_some() || it.aside_folder) {
                (Some(a), true) => dirs.lstat_lenient(a.as_bstr()) != Disk::Absent,
                (None, true) => false,
                (_, false) => true,
            };
            let path = it.path.as_bstr();
            if !renamed || matches!(dirs.lstat_lenient(path), Disk::Absent | Disk::Dir) {
                continue;
            }
            match move_entry(dirs, path, temp.as_bstr()) {
                Ok(()) => {
                    touched.insert(split(path).0.into());
                    faults.recovery_step();
                }
                Err(e) => problems.push(format!("cannot take back {}: {e}", enc(path))),
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
    }
    // 2. Folders the write created and that are empty again, deepest first
    //    (a file that stood where one was created comes back next).
    rmdir_created(dirs, plan, &mut touched, faults);
    // 3. Originals back in place (folders in the way first: a file aside
    //    never lives inside one).
    let order = plan
        .items
        .iter()
        .filter(|i| i.aside_folder)
        .chain(plan.items.iter().filter(|i| !i.aside_folder && !i.covered));
    for it in order {
        let Some(aside) = &it.aside else { continue };
        if dirs.lstat_lenient(aside.as_bstr()) == Disk::Absent {
            continue;
        }
        match move_entry(dirs, aside.as_bstr(), it.path.as_bstr()) {
            Ok(()) => {
                touched.insert(split(it.path.as_bstr()).0.into());
                faults.recovery_step();
            }
            Err(e) => problems.push(format!(
                "cannot put {} back from {}: {e}",
                enc(&it.path),
                enc(aside)
            )),
        }
    }
    // 4. Temps, then the folders that held only temps.
    for it in &plan.items {
        if let Some(temp) = &it.temp {
            if !matches!(dirs.lstat_lenient(temp.as_bstr()), Disk::Absent | Disk::Dir) {
                match dirs.unlink(temp.as_bstr()) {
                    Ok(()) => {
                        touched.insert(split(temp.as_bstr()).0.into());
                        faults.recovery_step();
                    }
                    Err(e) => problems.push(format!("cannot remove {}: {e}", enc(temp))),
                }
            }
        }
    }
    rmdir_created(dirs, plan, &mut touched, faults);
    if !problems.is_empty() {
        return Err(problems);
    }
    sync_touched(dirs, touched);
    remove_journal(journal).map_err(|e| vec![format!("cannot remove the journal: {e}")])
}

/// Rename `from` to `to` (both repo-relative), never over something.
fn move_entry(dirs: &mut Dirs, from: &BStr, to: &BStr) -> std::io::Result<()> {
    let (fdir, fname) = split(from);
    let (tdir, tname) = split(to);
    let res = dirs.get(fdir).and_then(|f| {
        let t = dirs.get(tdir)?;
        rename_noreplace(&f, fname.as_bytes(), &t, tname.as_bytes())
    });
    dirs.forget(from);
    dirs.forget(to);
    res
}

/// Remove the folders the write created, deepest first, where empty.
fn rmdir_created(dirs: &mut Dirs, plan: &Plan, touched: &mut BTreeSet<BString>, faults: &Faults) {
    for d in plan.mkdirs.iter().rev() {
        if dirs.lstat_lenient(d.as_bstr()) == Disk::Dir && dirs.rmdir(d.as_bstr()).is_ok() {
            touched.insert(split(d.as_bstr()).0.into());
            faults.recovery_step();
        }
    }
}

/// After `committed`: remove the originals kept aside and the folders the
/// deletions emptied, then the journal.
fn roll_forward(
    dirs: &mut Dirs,
    plan: &Plan,
    journal: &Path,
    faults: &Faults,
) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    let mut touched: BTreeSet<BString> = BTreeSet::new();
    for it in &plan.items {
        let Some(aside) = &it.aside else { continue };
        let res = match dirs.lstat_lenient(aside.as_bstr()) {
            Disk::Absent => continue,
            Disk::Dir => dirs.remove_tree(aside.as_bstr()),
            _ => dirs.unlink(aside.as_bstr()),
        };
        match res {
            Ok(()) => {
                touched.insert(split(aside.as_bstr()).0.into());
                faults.recovery_step();
            }
            Err(e) => problems.push(format!("cannot remove {}: {e}", enc(aside))),
        }
    }
    // Folders left empty by deletions, deepest first; never the root.
    let mut emptied: BTreeSet<BString> = BTreeSet::new();
    for it in plan.items.iter().filter(|i| i.new.is_none()) {
        for p in parents(it.path.as_bstr()) {
            emptied.insert(p.into());
        }
    }
    let mut emptied: Vec<BString> = emptied.into_iter().collect();
    emptied.sort_by_key(|p| std::cmp::Reverse((depth(p.as_bstr()), p.clone())));
    for d in emptied {
        if dirs.lstat_lenient(d.as_bstr()) == Disk::Dir && dirs.rmdir(d.as_bstr()).is_ok() {
            touched.insert(split(d.as_bstr()).0.into());
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    sync_touched(dirs, touched);
    faults.hit("before-journal-remove");
    remove_journal(journal).map_err(|e| vec![format!("cannot remove the journal: {e}")])
}

// ---------------------------------------------------------------------------
// Symlink-safe access below the root

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Disk {
    Absent,
    File { exec: bool },
    Link,
    Dir,
    Other,
}

impl Disk {
    fn from_mode(mode: u32) -> Disk {
        match FileType::from_raw_mode(mode) {
            FileType::RegularFile => Disk::File {
                exec: mode & 0o111 != 0,
            },
            FileType::Symlink => Disk::Link,
            FileType::Directory => Disk::Dir,
            _ => Disk::Other,
        }
    }

    /// Same kind as an `S` entry (exec bit included).
    fn is_kind(self, kind: EntryKind) -> bool {
        matches!(
            (self, kind),
            (Disk::File { exec: false }, EntryKind::Blob)
                | (Disk::File { exec: true }, EntryKind::BlobExecutable)
                | (Disk::Link, EntryKind::Link)
        )
    }
}

/// Folder descriptors below the root, each opened `O_NOFOLLOW | O_DIRECTORY`
/// from its parent: a symlink on the way is an error, never followed.
struct Dirs {
    root: Rc<OwnedFd>,
    cache: HashMap<BString, Rc<OwnedFd>>,
}

const DIR_CACHE_MAX: usize = 256;

impl Dirs {
    fn open(root: &Path) -> std::io::Result<Dirs> {
        let fd = rustix::fs::openat(
            rustix::fs::CWD,
            root,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Dirs {
            root: Rc::new(fd),
            cache: HashMap::new(),
        })
    }

    fn get(&mut self, rel: &BStr) -> std::io::Result<Rc<OwnedFd>> {
        if rel.is_empty() {
            return Ok(self.root.clone());
        }
        if let Some(fd) = self.cache.get(rel) {
            return Ok(fd.clone());
        }
        let (parent, name) = split(rel);
        let pfd = self.get(parent)?;
        let fd = rustix::fs::openat(
            &*pfd,
            name.as_bytes(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        if self.cache.len() >= DIR_CACHE_MAX {
            self.cache.clear();
        }
        let fd = Rc::new(fd);
        self.cache.insert(rel.into(), fd.clone());
        Ok(fd)
    }

    /// Drop cached descriptors of `rel` and below (it was moved or removed).
    fn forget(&mut self, rel: &BStr) {
        if self.cache.is_empty() {
            return;
        }
        let mut prefix = BString::from(rel);
        prefix.push(b'/');
        self.cache
            .retain(|k, _| k.as_bstr() != rel && !k.starts_with(prefix.as_slice()));
    }

    fn parent_of<'p>(&mut self, rel: &'p BStr) -> std::io::Result<(Rc<OwnedFd>, &'p BStr)> {
        let (parent, name) = split(rel);
        Ok((self.get(parent)?, name))
    }

    /// What is at `rel`, not following a final symlink. Where a parent is
    /// missing, or is a file or a symlink (never followed), nothing is at
    /// `rel` inside the tree: absent.
    fn lstat(&mut self, rel: &BStr) -> std::io::Result<Disk> {
        if rel.is_empty() {
            return Ok(Disk::Dir);
        }
        let (parent, name) = split(rel);
        let pfd = match self.get(parent) {
            Ok(fd) => fd,
            Err(e)
                if [Errno::NOENT, Errno::NOTDIR, Errno::LOOP]
                    .iter()
                    .any(|n| e.raw_os_error() == Some(n.raw_os_error())) =>
            {
                return Ok(Disk::Absent)
            }
            Err(e) => return Err(e),
        };
        match rustix::fs::statat(&*pfd, name.as_bytes(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Disk::from_mode(st.st_mode)),
            Err(Errno::NOENT) => Ok(Disk::Absent),
            Err(e) => Err(e.into()),
        }
    }

    /// `lstat`, with anything unreachable counted as not a folder/absent
    /// (`Other`), for decisions that a later checked step confirms.
    fn lstat_lenient(&mut self, rel: &BStr) -> Disk {
        self.lstat(rel).unwrap_or(Disk::Other)
    }

    fn list(&mut self, rel: &BStr) -> std::io::Result<Vec<(BString, Disk)>> {
        let fd = self.get(rel)?;
        let mut dir = rustix::fs::Dir::read_from(&*fd)?;
        let mut out = Vec::new();
        while let Some(entry) = dir.read() {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            let kind = match entry.file_type() {
                FileType::Directory => Disk::Dir,
                FileType::Symlink => Disk::Link,
                FileType::RegularFile => Disk::File { exec: false },
                FileType::Unknown => {
                    let st = rustix::fs::statat(&*fd, name, AtFlags::SYMLINK_NOFOLLOW)?;
                    Disk::from_mode(st.st_mode)
                }
                _ => Disk::Other,
            };
            out.push((BString::from(name), kind));
        }
        Ok(out)
    }

    fn unlink(&mut self, rel: &BStr) -> std::io::Result<()> {
        let (pfd, name) = self.parent_of(rel)?;
        match rustix::fs::unlinkat(&*pfd, name.as_bytes(), AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    fn rmdir(&mut self, rel: &BStr) -> std::io::Result<()> {
        if rel.is_empty() {
            return Err(Errno::BUSY.into());
        }
        let (pfd, name) = self.parent_of(rel)?;
        self.forget(rel);
        rustix::fs::unlinkat(&*pfd, name.as_bytes(), AtFlags::REMOVEDIR)?;
        Ok(())
    }

    /// Remove a folder and everything in it, never following a symlink.
    fn remove_tree(&mut self, rel: &BStr) -> std::io::Result<()> {
        for (name, kind) in self.list(rel)? {
            let child = join(rel, name.as_bstr());
            if kind == Disk::Dir {
                self.remove_tree(child.as_bstr())?;
            } else {
                self.unlink(child.as_bstr())?;
            }
        }
        match self.rmdir(rel) {
            Ok(()) => Ok(()),
            Err(e) if e.raw_os_error() == Some(Errno::NOENT.raw_os_error()) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

// ---------------------------------------------------------------------------
// Content through the filters

struct Hasher<'r> {
    pipeline: gix::filter::Pipeline<'r>,
    index: gix::worktree::IndexPersistedOrInMemory,
    hash_kind: gix::hash::Kind,
    file_mode: bool,
}

impl<'r> Hasher<'r> {
    fn new(repo: &'r gix::Repository) -> Result<Hasher<'r>> {
        let (pipeline, index) = repo
            .filter_pipeline(None)
            .map_err(|e| Error::git("cannot set up the content filters", e))?;
        Ok(Hasher {
            pipeline,
            index,
            hash_kind: repo.object_hash(),
            file_mode: repo
                .config_snapshot()
                .boolean("core.fileMode")
                .unwrap_or(true),
        })
    }

    /// For writing `F`: as a checkout does, `.gitattributes` files take
    /// their `F` content (a deleted one counts as empty), the others are
    /// read from the disk (where they are the same in `S` and `F`).
    fn for_checkout(repo: &'r gix::Repository, items: &[Item]) -> Result<Hasher<'r>, Fail> {
        let mut hasher = Hasher::new(repo).map_err(|e| Fail(e.message))?;
        let changed: Vec<&Item> = items
            .iter()
            .filter(|i| split(i.path.as_bstr()).1 == ".gitattributes")
            .collect();
        if changed.is_empty() {
            return Ok(hasher);
        }
        let mut state = gix::index::State::new(repo.object_hash());
        for it in changed {
            let id = match it.new {
                Some((_, id)) => id,
                None => repo
                    .write_blob(b"")
                    .map_err(|e| Fail(format!("cannot write the empty blob: {e}")))?
                    .detach(),
            };
            state.dangerously_push_entry(
                Default::default(),
                id,
                gix::index::entry::Flags::empty(),
                gix::index::entry::Mode::FILE,
                it.path.as_bstr(),
            );
        }
        state.sort_entries();
        let stack = repo
            .attributes_only(
                &state,
                gix::worktree::stack::state::attributes::Source::IdMappingThenWorktree,
            )
            .map_err(|e| Fail(format!("cannot read the result's attributes: {e}")))?
            .detach();
        hasher.pipeline = gix::filter::Pipeline::new(repo, stack)
            .map_err(|e| Fail(format!("cannot set up the content filters: {e}")))?;
        Ok(hasher)
    }

    /// Whether `name` in `dir` (read for the path `rela`) is the `S` entry:
    /// same kind, same blob after the clean filters. Nothing is stored.
    fn matches(
        &mut self,
        dir: &OwnedFd,
        name: &BStr,
        rela: &BStr,
        (kind, id): (EntryKind, ObjectId),
    ) -> Result<bool, Fail> {
        let st = match rustix::fs::statat(dir, name.as_bytes(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(Errno::NOENT) => return Ok(false),
            Err(e) => return Err(Fail::io("stat", rela, e)),
        };
        let disk = Disk::from_mode(st.st_mode);
        let kind_ok = match (disk, kind) {
            (Disk::File { .. }, EntryKind::Blob | EntryKind::BlobExecutable) if !self.file_mode => {
                true
            }
            (d, k) => d.is_kind(k),
        };
        if !kind_ok {
            return Ok(false);
        }
        let hash_err = |e: &dyn std::fmt::Display| {
            Fail(format!("cannot hash {}: {e}", crate::paths::quote(rela)))
        };
        if disk == Disk::Link {
            let data = rustix::fs::readlinkat(dir, name.as_bytes(), Vec::new())
                .map_err(|e| Fail::io("read", rela, e))?
                .into_bytes();
            let got = gix::objs::compute_hash(self.hash_kind, gix::objs::Kind::Blob, &data)
                .map_err(|e| hash_err(&e))?;
            return Ok(got == id);
        }
        let fd = rustix::fs::openat(
            dir,
            name.as_bytes(),
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| Fail::io("open", rela, e))?;
        let mut file = std::io::BufReader::with_capacity(1 << 16, std::fs::File::from(fd));
        let size = file
            .get_ref()
            .metadata()
            .map_err(|e| Fail::io("stat", rela, e))?
            .len();
        let path = crate::paths::to_os(rela);
        // Content no clean filter changes is hashed as it is read (a big
        // file never sits in memory whole); filtered content is what gix
        // converted in memory.
        let got = match self
            .pipeline
            .convert_to_git(&mut file, &path, &self.index)
            .map_err(|e| Fail(format!("cannot filter {}: {e}", crate::paths::quote(rela))))?
        {
            gix::filter::plumbing::pipeline::convert::ToGitOutcome::Unchanged(_) => None,
            gix::filter::plumbing::pipeline::convert::ToGitOutcome::Buffer(buf) => Some(
                gix::objs::compute_hash(self.hash_kind, gix::objs::Kind::Blob, buf)
                    .map_err(|e| hash_err(&e))?,
            ),
            gix::filter::plumbing::pipeline::convert::ToGitOutcome::Process(mut read) => {
                let mut buf = Vec::new();
                std::io::Read::read_to_end(&mut read, &mut buf)
                    .map_err(|e| Fail::io("read", rela, e))?;
                Some(
                    gix::objs::compute_hash(self.hash_kind, gix::objs::Kind::Blob, &buf)
                        .map_err(|e| hash_err(&e))?,
                )
            }
        };
        let got = match got {
            Some(got) => got,
            None => match crate::blob::hash_reader(self.hash_kind, size, &mut file) {
                // More than `size` bytes: it grew while it was read.
                Ok(_)
                    if std::io::Read::read(&mut file, &mut [0u8; 1])
                        .map_err(|e| Fail::io("read", rela, e))?
                        > 0 =>
                {
                    return Ok(false)
                }
                Ok(got) => got,
                // The file changed size while it was read: not `S`.
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(false),
                Err(e) => return Err(Fail::io("read", rela, e)),
            },
        };
        Ok(got == id)
    }

    /// Write a blob's worktree form (smudge filters, `eol`) into `out`.
    fn smudge_into(
        &mut self,
        data: &[u8],
        rela: &BStr,
        out: &mut std::fs::File,
    ) -> Result<(), Fail> {
        let opts = gix::filter::plumbing::pipeline::convert::to_worktree::Options {
            can_delay: gix::filter::plumbing::driver::apply::Delay::Forbid,
            ..Default::default()
        };
        let mut converted = self
            .pipeline
            .convert_to_worktree(data, rela, opts)
            .map_err(|e| Fail(format!("cannot filter {}: {e}", crate::paths::quote(rela))))?;
        std::io::copy(&mut converted, out).map_err(|e| Fail::io("write", rela, e))?;
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Paths

/// `(parent, name)` of a `/`-separated relative path (`parent` empty at the root).
fn split(path: &BStr) -> (&BStr, &BStr) {
    match path.rfind_byte(b'/') {
        Some(i) => (path[..i].as_bstr(), path[i + 1..].as_bstr()),
        None => (b"".as_bstr(), path),
    }
}

fn join(dir: &BStr, name: &BStr) -> BString {
    let mut out = BString::from(dir);
    if !out.is_empty() {
        out.push(b'/');
    }
    out.extend_from_slice(name);
    out
}

/// The folders above `path`, shallowest first (`a`, `a/b` for `a/b/c`).
fn parents(path: &BStr) -> impl Iterator<Item = &BStr> {
    path.iter()
        .enumerate()
        .filter(|(_, &b)| b == b'/')
        .map(move |(i, _)| path[..i].as_bstr())
}

/// The folders above `dir` and `dir` itself (nothing for the root).
fn parents_and_self(dir: &BStr) -> impl Iterator<Item = &BStr> {
    parents(dir).chain((!dir.is_empty()).then_some(dir))
}

fn depth(path: &BStr) -> usize {
    path.iter().filter(|&&b| b == b'/').count()
}

/// An internal failure with its message; turned into an `Error` at the edge.
#[derive(Debug)]
struct Fail(String);

impl Fail {
    fn io(op: &str, path: &BStr, e: impl Into<std::io::Error>) -> Fail {
        let e: std::io::Error = e.into();
        let path = if path.is_empty() {
            "the working tree".to_string()
        } else {
            crate::paths::quote(path)
        };
        Fail(format!("cannot {op} {path}: {e}"))
    }
}

// ---------------------------------------------------------------------------
// Test-only fault injection (see the module header)

struct Faults {
    point: Option<String>,
    recovery_steps: std::cell::Cell<usize>,
}

impl Faults {
    fn from_env() -> Faults {
        Faults {
            point: std::env::var("GIT_DELEGATE_FAULT")
                .ok()
                .filter(|p| !p.is_empty()),
            recovery_steps: std::cell::Cell::new(0),
        }
    }

    #[cfg(test)]
    fn die() -> ! {
        std::panic::panic_any(tests::Crash)
    }

    #[cfg(not(test))]
    fn die() -> ! {
        let _ =
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
        std::process::abort()
    }

    fn numbered(&self, name: &str) -> Option<usize> {
        self.point
            .as_deref()?
            .strip_prefix(name)?
            .strip_prefix(':')?
            .parse()
            .ok()
    }

    fn hit(&self, name: &str) {
        if self.point.as_deref() == Some(name) {
            Self::die();
        }
    }

    fn after_rename(&self, n: usize) {
        if self.numbered("after-rename") == Some(n) {
            Self::die();
        }
    }

    fn fail_rename(&self, n: usize) -> std::io::Result<()> {
        if self.numbered("fail-rename") == Some(n) {
            return Err(std::io::Error::other(
                "injected failure (GIT_DELEGATE_FAULT)",
            ));
        }
        Ok(())
    }

    fn recovery_step(&self) {
        let n = self.recovery_steps.get() + 1;
        self.recovery_steps.set(n);
        if self.numbered("recover-abort") == Some(n) {
            Self::die();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::os::unix::fs::PermissionsExt;
    use std::panic::{catch_unwind, AssertUnwindSafe};

    /// The payload of a simulated `kill -9` (fault injection in unit tests).
    pub struct Crash;

    struct Fx {
        _tmp: tempfile::TempDir,
        root: PathBuf,
    }

    fn git(dir: &Path, args: &[&str]) -> Vec<u8> {
        git_in(dir, args, None)
    }

    fn git_in(dir: &Path, args: &[&str], input: Option<&[u8]>) -> Vec<u8> {
        use std::process::{Command, Stdio};
        let mut cmd = Command::new("git");
        cmd.current_dir(dir)
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@e")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@e")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("git runs");
        {
            let mut stdin = child.stdin.take().expect("stdin");
            if let Some(i) = input {
                stdin.write_all(i).expect("write stdin");
            }
        }
        let out = child.wait_with_output().expect("git output");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }

    fn fixture() -> Fx {
        let tmp = tempfile::Builder::new()
            .prefix("gd-wb-")
            .tempdir()
            .expect("tempdir");
        let root = tmp.path().join("repo");
        std::fs::create_dir_all(&root).unwrap();
        git(&root, &["init", "-q", "-b", "main"]);
        std::fs::write(root.join("README"), "hello\n").unwrap();
        git(&root, &["add", "README"]);
        git(&root, &["commit", "-q", "-m", "init"]);
        let root = std::fs::canonicalize(root).unwrap();
        Fx { _tmp: tmp, root }
    }

    impl Fx {
        fn source(&self) -> Source {
            Source::discover(&self.root).expect("source")
        }

        fn batch_dir(&self) -> PathBuf {
            let d = self.source().state_dir().join("batches/b1");
            std::fs::create_dir_all(&d).unwrap();
            d
        }

        fn blob(&self, bytes: &[u8]) -> ObjectId {
            let out = git_in(
                &self.root,
                &["hash-object", "-w", "--no-filters", "--stdin"],
                Some(bytes),
            );
            ObjectId::from_hex(out.trim_ascii()).unwrap()
        }

        fn file(&self, rel: &str, bytes: &[u8]) {
            let p = self.root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, bytes).unwrap();
        }

        fn chmod_x(&self, rel: &str) {
            let p = self.root.join(rel);
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }

        fn link(&self, rel: &str, target: &str) {
            let p = self.root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(target, p).unwrap();
        }

        fn state(&self) -> BTreeMap<Vec<u8>, (String, Vec<u8>)> {
            let mut out = BTreeMap::new();
            walk(&self.root, b"", &mut out);
            out
        }
    }

    fn walk(dir: &Path, rel: &[u8], out: &mut BTreeMap<Vec<u8>, (String, Vec<u8>)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let name = e.file_name();
            if rel.is_empty() && name == ".git" {
                continue;
            }
            let mut r = rel.to_vec();
            if !r.is_empty() {
                r.push(b'/');
            }
            r.extend_from_slice(name.as_bytes());
            let md = std::fs::symlink_metadata(e.path()).unwrap();
            if md.file_type().is_symlink() {
                let t = std::fs::read_link(e.path()).unwrap();
                out.insert(r, ("link".into(), t.as_os_str().as_bytes().to_vec()));
            } else if md.is_dir() {
                out.insert(r.clone(), ("dir".into(), Vec::new()));
                walk(&e.path(), &r, out);
            } else {
                let x = md.permissions().mode() & 0o111 != 0;
                out.insert(r, (format!("file x={x}"), std::fs::read(e.path()).unwrap()));
            }
        }
    }

    fn faults(point: &str) -> Faults {
        Faults {
            point: Some(point.to_string()),
            recovery_steps: std::cell::Cell::new(0),
        }
    }

    fn no_faults() -> Faults {
        Faults {
            point: None,
            recovery_steps: std::cell::Cell::new(0),
        }
    }

    fn pw(
        path: &[u8],
        old: Option<(EntryKind, ObjectId)>,
        new: Option<(EntryKind, ObjectId)>,
    ) -> PathWrite {
        PathWrite {
            path: path.into(),
            old,
            new,
        }
    }

    /// A source with every kind of change, the writes, and the expected result.
    fn scenario() -> (Fx, Vec<PathWrite>) {
        let fx = fixture();
        let b = |bytes: &[u8]| fx.blob(bytes);
        fx.file("m.txt", b"old\n");
        fx.file("d.txt", b"gone\n");
        fx.file("sub/deep/x", b"x\n");
        fx.file("f2d", b"file becomes folder\n");
        fx.file("d2f/a", b"a\n");
        fx.file("d2f/b/c", b"c\n");
        fx.link("link", "m.txt");
        fx.file("exe", b"#!/bin/sh\n");
        fx.file("keep/y", b"y\n");
        fx.file("odd", b"o\n");
        fx.file("was_x", b"x bit goes\n");
        fx.chmod_x("was_x");
        let odd_name: &[u8] = b"sp ace/caf\xe9\nname";
        let writes = vec![
            pw(
                b"m.txt",
                Some((EntryKind::Blob, b(b"old\n"))),
                Some((EntryKind::Blob, b(b"new\n"))),
            ),
            pw(b"d.txt", Some((EntryKind::Blob, b(b"gone\n"))), None),
            pw(b"sub/deep/x", Some((EntryKind::Blob, b(b"x\n"))), None),
            pw(
                b"f2d",
                Some((EntryKind::Blob, b(b"file becomes folder\n"))),
                None,
            ),
            pw(b"f2d/inner/z", None, Some((EntryKind::Blob, b(b"z\n")))),
            pw(
                b"d2f",
                None,
                Some((EntryKind::BlobExecutable, b(b"now a file\n"))),
            ),
            pw(b"d2f/a", Some((EntryKind::Blob, b(b"a\n"))), None),
            pw(b"d2f/b/c", Some((EntryKind::Blob, b(b"c\n"))), None),
            pw(
                b"link",
                Some((EntryKind::Link, b(b"m.txt"))),
                Some((EntryKind::Link, b(b"keep/y"))),
            ),
            pw(
                b"exe",
                Some((EntryKind::Blob, b(b"#!/bin/sh\n"))),
                Some((EntryKind::BlobExecutable, b(b"#!/bin/sh\n"))),
            ),
            pw(
                b"new/dir/n",
                None,
                Some((EntryKind::Blob, b(b"n\x00bin\xff"))),
            ),
            pw(odd_name, None, Some((EntryKind::Blob, b(b"odd name\n")))),
            pw(
                b"odd",
                Some((EntryKind::Blob, b(b"o\n"))),
                Some((EntryKind::Link, b(b"sp ace"))),
            ),
            pw(
                b"was_x",
                Some((EntryKind::BlobExecutable, b(b"x bit goes\n"))),
                Some((EntryKind::Blob, b(b"x bit goes\n"))),
            ),
        ];
        (fx, writes)
    }

    fn expected_after(
        before: &BTreeMap<Vec<u8>, (String, Vec<u8>)>,
    ) -> BTreeMap<Vec<u8>, (String, Vec<u8>)> {
        let mut e = before.clone();
        let file = |b: &[u8]| ("file x=false".to_string(), b.to_vec());
        e.insert(b"m.txt".to_vec(), file(b"new\n"));
        e.remove(&b"d.txt"[..]);
        e.remove(&b"sub/deep/x"[..]);
        e.remove(&b"sub/deep"[..]);
        e.remove(&b"sub"[..]);
        e.insert(b"f2d".to_vec(), ("dir".into(), vec![]));
        e.insert(b"f2d/inner".to_vec(), ("dir".into(), vec![]));
        e.insert(b"f2d/inner/z".to_vec(), file(b"z\n"));
        for k in ["d2f/a", "d2f/b/c", "d2f/b"] {
            e.remove(k.as_bytes());
        }
        e.insert(
            b"d2f".to_vec(),
            ("file x=true".into(), b"now a file\n".to_vec()),
        );
        e.insert(b"link".to_vec(), ("link".into(), b"keep/y".to_vec()));
        e.insert(
            b"exe".to_vec(),
            ("file x=true".into(), b"#!/bin/sh\n".to_vec()),
        );
        e.insert(b"new".to_vec(), ("dir".into(), vec![]));
        e.insert(b"new/dir".to_vec(), ("dir".into(), vec![]));
        e.insert(b"new/dir/n".to_vec(), file(b"n\x00bin\xff"));
        e.insert(b"sp ace".to_vec(), ("dir".into(), vec![]));
        e.insert(b"sp ace/caf\xe9\nname".to_vec(), file(b"odd name\n"));
        e.insert(b"odd".to_vec(), ("link".into(), b"sp ace".to_vec()));
        e.insert(b"was_x".to_vec(), file(b"x bit goes\n"));
        e
    }

    fn no_leftovers(fx: &Fx, batch_dir: &Path) {
        for k in fx.state().keys() {
            assert!(!k.contains_str(".gd-"), "left over: {}", k.as_bstr());
        }
        assert!(
            !batch_dir.join(batch::JOURNAL_FILE).exists(),
            "journal left"
        );
    }

    #[test]
    fn writes_every_kind_of_change() {
        let (fx, writes) = scenario();
        let source = fx.source();
        let before = fx.state();
        assert_eq!(check(&source, &writes).unwrap(), vec![]);
        let bd = fx.batch_dir();
        write_with(&source, &bd, &writes, &no_faults()).unwrap();
        assert_eq!(fx.state(), expected_after(&before));
        no_leftovers(&fx, &bd);
        // The index and HEAD are untouched.
        assert_eq!(git(&fx.root, &["diff", "--cached", "--name-only"]), b"");
    }

    #[test]
    fn injected_failure_at_every_rename_rolls_back() {
        let (fx, writes) = scenario();
        let source = fx.source();
        let bd = fx.batch_dir();
        let before = fx.state();
        let mut n = 1;
        loop {
            match write_with(&source, &bd, &writes, &faults(&format!("fail-rename:{n}"))) {
                Err(e) => {
                    assert_eq!(e.code, "delegate::write_failed", "{}", e.message);
                    assert_eq!(fx.state(), before, "after failing rename {n}");
                    no_leftovers(&fx, &bd);
                }
                Ok(()) => {
                    assert!(n > 10, "only {n} renames?");
                    assert_eq!(fx.state(), expected_after(&before));
                    break;
                }
            }
            n += 1;
        }
    }

    /// Simulated crashes print nothing; real panics still do.
    fn quiet_crashes() {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            let default = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                if !info.payload().is::<Crash>() {
                    default(info);
                }
            }));
        });
    }

    fn crash(source: &Source, bd: &Path, writes: &[PathWrite], point: &str) -> bool {
        let f = faults(point);
        quiet_crashes();
        let r = catch_unwind(AssertUnwindSafe(|| write_with(source, bd, writes, &f)));
        match r {
            Ok(res) => {
                res.unwrap();
                false
            }
            Err(payload) => {
                assert!(payload.is::<Crash>(), "a real panic at {point}");
                true
            }
        }
    }

    fn recover_crashing(source: &Source, point: &str) -> bool {
        let f = faults(point);
        quiet_crashes();
        let r = catch_unwind(AssertUnwindSafe(|| recover_with(source, &f)));
        match r {
            Ok(res) => {
                res.unwrap();
                false
            }
            Err(payload) => {
                assert!(payload.is::<Crash>(), "a real panic at {point}");
                true
            }
        }
    }

    #[test]
    fn crash_at_every_point_recovers_to_s_or_f() {
        let mut points: Vec<String> = vec!["after-journal".into(), "after-temp-files".into()];
        points.extend((1..=40).map(|n| format!("after-rename:{n}")));
        points.push("after-commit".into());
        points.push("before-journal-remove".into());
        let mut renames_seen = 0;
        for point in points {
            let (fx, writes) = scenario();
            let source = fx.source();
            let bd = fx.batch_dir();
            let before = fx.state();
            let after = expected_after(&before);
            if !crash(&source, &bd, &writes, &point) {
                // Fewer renames than that: the write completed.
                assert!(point.starts_with("after-rename"), "{point} never hit");
                assert_eq!(fx.state(), after);
                continue;
            }
            if point.starts_with("after-rename") {
                renames_seen += 1;
            }
            assert!(
                bd.join(batch::JOURNAL_FILE).exists(),
                "{point}: journal missing"
            );
            // A crash during recovery is recovered by the next run.
            let mut k = 1;
            while recover_crashing(&source, &format!("recover-abort:{k}")) {
                k += 1;
                assert!(k < 200);
            }
            let expect = if point == "after-commit" || point == "before-journal-remove" {
                &after
            } else {
                &before
            };
            assert_eq!(&fx.state(), expect, "after a crash at {point}");
            no_leftovers(&fx, &bd);
            // Once more: nothing left to do.
            assert_eq!(
                recover_with(&source, &no_faults()).unwrap(),
                Recovery::default()
            );
        }
        assert!(renames_seen > 10);
    }

    #[test]
    fn recovery_reports_and_skips_a_live_writer() {
        let (fx, writes) = scenario();
        let source = fx.source();
        let bd = fx.batch_dir();
        let before = fx.state();
        assert!(crash(&source, &bd, &writes, "after-rename:5"));
        // Pretend a live process (our parent) wrote it: left alone.
        let journal = bd.join(batch::JOURNAL_FILE);
        let text = std::fs::read_to_string(&journal).unwrap();
        let ppid = rustix::process::getppid().map(|p| p.as_raw_nonzero().get() as u32);
        if let Some(ppid) = ppid {
            let start = crate::lease::process_start(ppid).unwrap();
            let me = std::process::id();
            let mine = crate::lease::process_start(me).unwrap();
            let live = text.replacen(
                &format!("\"pid\":{me},\"start\":{mine}"),
                &format!("\"pid\":{ppid},\"start\":{start}"),
                1,
            );
            assert_ne!(live, text);
            std::fs::write(&journal, live).unwrap();
            assert_eq!(
                recover_all_detailed(&source).unwrap().rolled_back,
                Vec::<String>::new()
            );
            assert!(journal.exists());
            std::fs::write(&journal, &text).unwrap();
        }
        // Our own pid counts as gone (we hold the lock and did not write it now).
        assert_eq!(
            recover_all_detailed(&source).unwrap().rolled_back,
            vec!["b1".to_string()]
        );
        assert_eq!(fx.state(), before);
        no_leftovers(&fx, &bd);
    }

    #[test]
    fn journal_without_batch_toml_and_torn_tail_are_recovered() {
        let (fx, writes) = scenario();
        let source = fx.source();
        let bd = fx.batch_dir();
        let before = fx.state();
        assert!(crash(&source, &bd, &writes, "after-rename:7"));
        let journal = bd.join(batch::JOURNAL_FILE);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&journal)
            .unwrap();
        f.write_all(b"{\"t\":\"phase\",\"pha").unwrap();
        drop(f);
        assert!(!bd.join("batch.toml").exists());
        assert_eq!(
            recover_all_detailed(&source).unwrap().rolled_back,
            vec!["b1".to_string()]
        );
        assert_eq!(fx.state(), before);
        no_leftovers(&fx, &bd);
        // A journal without its `planned` marker: nothing was written, it just goes.
        std::fs::write(&journal, b"{\"t\":\"header\"").unwrap();
        assert_eq!(
            recover_all_detailed(&source).unwrap().rolled_back,
            vec!["b1".to_string()]
        );
        assert!(!journal.exists());
    }

    #[test]
    fn check_finds_what_would_be_lost() {
        let fx = fixture();
        let b = |bytes: &[u8]| fx.blob(bytes);
        std::fs::write(fx.root.join(".gitignore"), "*.log\n").unwrap();
        fx.file("build.log", b"ignored\n");
        fx.file("busy/untracked", b"u\n");
        std::fs::create_dir_all(fx.root.join("empty")).unwrap();
        fx.file("edited", b"user edit\n");
        fx.file("gone/old", b"o\n");
        fx.file("plain", b"p\n");
        let outside = fx._tmp.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        fx.link("escape", outside.to_str().unwrap());
        let n = Some((EntryKind::Blob, b(b"new\n")));
        let writes = vec![
            pw(b"build.log", None, n),
            pw(b"busy", None, n),
            pw(b"empty", None, n),
            pw(b"edited", Some((EntryKind::Blob, b(b"snapshot\n"))), n),
            pw(b"escape/evil", None, n),
            pw(b"plain/under", None, n),
            pw(b"plain", Some((EntryKind::BlobExecutable, b(b"p\n"))), n),
            pw(b"gone", None, n),
            pw(b"gone/old", Some((EntryKind::Blob, b(b"o\n"))), None),
            pw(b"fresh/file", None, n),
        ];
        let source = fx.source();
        let got: Vec<(String, BlockReason)> = check(&source, &writes)
            .unwrap()
            .into_iter()
            .map(|b| (b.path.to_string(), b.reason))
            .collect();
        use BlockReason::*;
        assert_eq!(
            got,
            vec![
                ("build.log".into(), UntrackedInTheWay),
                ("busy".into(), FolderInTheWay),
                ("edited".into(), ChangedSinceSnapshot),
                ("escape/evil".into(), UntrackedInTheWay),
                ("plain/under".into(), UntrackedInTheWay),
                ("plain".into(), ChangedSinceSnapshot),
            ]
        );
    }

    #[test]
    fn never_writes_through_a_symlinked_parent() {
        let fx = fixture();
        let outside = fx._tmp.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        fx.link("escape", outside.to_str().unwrap());
        fx.file("a", b"a\n");
        let source = fx.source();
        let bd = fx.batch_dir();
        let before = fx.state();
        let writes = vec![
            pw(
                b"a",
                Some((EntryKind::Blob, fx.blob(b"a\n"))),
                Some((EntryKind::Blob, fx.blob(b"b\n"))),
            ),
            pw(
                b"escape/evil",
                None,
                Some((EntryKind::Blob, fx.blob(b"evil\n"))),
            ),
            pw(
                b"escape/deeper/evil",
                None,
                Some((EntryKind::Blob, fx.blob(b"evil\n"))),
            ),
        ];
        let e = write_with(&source, &bd, &writes, &no_faults()).unwrap_err();
        assert_eq!(e.code, "delegate::write_failed");
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
        assert_eq!(fx.state(), before);
        no_leftovers(&fx, &bd);
    }

    #[test]
    fn content_changed_after_check_is_never_lost() {
        let fx = fixture();
        fx.file("a", b"snapshot\n");
        let source = fx.source();
        let bd = fx.batch_dir();
        let writes = vec![
            pw(b"b", None, Some((EntryKind::Blob, fx.blob(b"b\n")))),
            pw(
                b"a",
                Some((EntryKind::Blob, fx.blob(b"snapshot\n"))),
                Some((EntryKind::Blob, fx.blob(b"ours\n"))),
            ),
        ];
        assert_eq!(check(&source, &writes).unwrap(), vec![]);
        fx.file("a", b"the user typed this\n");
        let before = fx.state();
        let e = write_with(&source, &bd, &writes, &no_faults()).unwrap_err();
        assert!(e.message.contains("changed on disk"), "{}", e.message);
        assert_eq!(fx.state(), before);
        no_leftovers(&fx, &bd);
    }

    #[test]
    fn filters_and_crlf_round_trip() {
        let fx = fixture();
        std::fs::write(
            fx.root.join(".gitattributes"),
            "*.txt text eol=crlf\n*.rot filter=rot\n",
        )
        .unwrap();
        git(&fx.root, &["config", "filter.rot.clean", "tr a-z n-za-m"]);
        git(&fx.root, &["config", "filter.rot.smudge", "tr a-z n-za-m"]);
        fx.file("a.txt", b"one\r\ntwo\r\n");
        fx.file("s.rot", b"uryyb\n");
        let source = fx.source();
        let bd = fx.batch_dir();
        let writes = vec![
            pw(
                b"a.txt",
                Some((EntryKind::Blob, fx.blob(b"one\ntwo\n"))),
                Some((EntryKind::Blob, fx.blob(b"one\ntwo\nthree\n"))),
            ),
            pw(
                b"s.rot",
                Some((EntryKind::Blob, fx.blob(b"hello\n"))),
                Some((EntryKind::Blob, fx.blob(b"world\n"))),
            ),
        ];
        assert_eq!(check(&source, &writes).unwrap(), vec![]);
        write_with(&source, &bd, &writes, &no_faults()).unwrap();
        assert_eq!(
            std::fs::read(fx.root.join("a.txt")).unwrap(),
            b"one\r\ntwo\r\nthree\r\n"
        );
        assert_eq!(std::fs::read(fx.root.join("s.rot")).unwrap(), b"jbeyq\n");
        no_leftovers(&fx, &bd);
    }

    #[test]
    fn new_content_follows_the_results_gitattributes() {
        let fx = fixture();
        fx.file("sub/.gitattributes", b"*.txt text eol=crlf\n");
        fx.file("sub/old.txt", b"o\r\n");
        let source = fx.source();
        let bd = fx.batch_dir();
        let b = |bytes: &[u8]| fx.blob(bytes);
        let writes = vec![
            // A new rule at the root, a new file it applies to.
            pw(
                b".gitattributes",
                None,
                Some((EntryKind::Blob, b(b"*.md text eol=crlf\n"))),
            ),
            pw(b"doc.md", None, Some((EntryKind::Blob, b(b"a\nb\n")))),
            // The rule in sub/ goes; the file it governed is rewritten plainly.
            pw(
                b"sub/.gitattributes",
                Some((EntryKind::Blob, b(b"*.txt text eol=crlf\n"))),
                None,
            ),
            pw(
                b"sub/old.txt",
                Some((EntryKind::Blob, b(b"o\n"))),
                Some((EntryKind::Blob, b(b"o\np\n"))),
            ),
        ];
        assert_eq!(check(&source, &writes).unwrap(), vec![]);
        write_with(&source, &bd, &writes, &no_faults()).unwrap();
        assert_eq!(
            std::fs::read(fx.root.join("doc.md")).unwrap(),
            b"a\r\nb\r\n"
        );
        assert_eq!(
            std::fs::read(fx.root.join("sub/old.txt")).unwrap(),
            b"o\np\n"
        );
        assert!(!fx.root.join("sub/.gitattributes").exists());
        no_leftovers(&fx, &bd);
    }

    #[test]
    fn path_encoding_round_trips() {
        let raw: &[u8] = b"a%b/c\xe9\n\x01 d";
        assert_eq!(dec(&enc(raw)), raw);
        assert_eq!(enc(b"plain/path.txt"), "plain/path.txt");
        assert_eq!(dec("%zz%4"), b"%zz%4");
    }
}
