//! The private snapshot's record (design §3.19): the blob ids of the user's
//! uncommitted and untracked files a baseline held, so the pre-push guard
//! knows that content however a worker re-authors, squashes or
//! cherry-picks it.
//!
//! The file is `<common-dir>/delegate/private-blobs`: a `#` header line,
//! then one line per blob, `<blob id> <unix seconds> <batch id>`. `prepare`
//! (and `refresh`, whose new base is a snapshot too) appends its lines under
//! the repository lock, in one fsync'd write; the blobs are those at the
//! paths where the snapshot differs from HEAD (a diff prepare makes anyway),
//! never the empty blob nor a blob HEAD holds at the same path (a mode
//! change). Entries outlive their batch (a worker's branch does): `gc`
//! keeps, of each blob, only its newest line, and that for [`KEEP_SECS`]
//! (90 days, git's default reflog expiry), but every line of an open batch,
//! rewriting the file atomically; prepare does the same once the file has
//! grown past [`COMPACT_AT`] (4 MiB), where gc is never run.
//!
//! A reader (the pre-push hook, which takes no lock) ignores a last line
//! without its newline (an append in progress, or one a killed command
//! left; the next append starts on a new line); any other line it cannot
//! read makes the whole record unreadable ([`PrivateError::Malformed`]),
//! so the guard fails closed rather than guessing.
//!
//! Owns: the file, its format and its retention.
//! Never: decides what a push may publish (`ops::pre_push` does); drops a
//! line it cannot read (gc leaves such a file alone); words a help line or
//! decides an error code (`ops::explain` does).

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use gix::objs::tree::EntryKind;
use gix::ObjectId;

use crate::error::{lower_from, Lower};
use crate::git::diff::PathChange;
use crate::sys::fs::{FsError, PathError};

/// The record's file name in the state folder.
pub const FILE: &str = "private-blobs";

/// How long an entry of a batch that is no longer open is kept: 90 days.
pub const KEEP_SECS: i64 = 90 * 24 * 3600;

const HEADER: &str =
    "# git-delegate private blobs (design 3.19): <blob id> <unix time> <batch id>\n";

/// The record could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum PrivateError {
    /// Reading it failed (not a missing file: that is an empty record,
    /// a `PathError`), or rewriting it (gc, an `FsError`).
    #[error(transparent)]
    Lower(#[from] Lower),
    /// A line that is not `<blob id> <unix time> <batch id>`.
    #[error("{} cannot be read: line {line} is not `<blob id> <unix time> <batch id>`", path.display())]
    Malformed { path: PathBuf, line: usize },
}

lower_from!(PrivateError: FsError);

type Result<T, E = PrivateError> = std::result::Result<T, E>;

/// Who recorded a blob, and when (the latest entry of the blob).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub batch: String,
    pub time: i64,
}

/// The recorded blobs.
#[derive(Debug, Default)]
pub struct Record {
    pub blobs: HashMap<ObjectId, Entry>,
}

/// The record's path in `state_dir`.
pub fn path(state_dir: &Path) -> PathBuf {
    state_dir.join(FILE)
}

/// The blobs a snapshot brings at the paths where it differs from HEAD
/// (`changes`: HEAD's tree against the snapshot's): files and symlinks
/// added or with new content, not the empty blob; sorted, each once.
pub fn blobs_of(changes: &[PathChange]) -> Vec<ObjectId> {
    let mut out: Vec<ObjectId> = changes
        .iter()
        .filter_map(|c| {
            let (kind, id) = c.new?;
            let file = matches!(
                kind,
                EntryKind::Blob | EntryKind::BlobExecutable | EntryKind::Link
            );
            let same = c.old.is_some_and(|(_, old)| old == id);
            (file && !same && !id.is_empty_blob()).then_some(id)
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Append the blobs of `changes` (see [`blobs_of`]) for batch `batch`, now.
/// The caller holds the repository lock.
pub fn record(state_dir: &Path, batch: &str, changes: &[PathChange]) -> Result<(), FsError> {
    let blobs = blobs_of(changes);
    if blobs.is_empty() {
        return Ok(());
    }
    let now = crate::sys::time::now();
    let mut text = String::with_capacity(blobs.len() * 90);
    for b in &blobs {
        text.push_str(&format!("{b} {now} {batch}\n"));
    }
    append(&path(state_dir), &text)?;
    compact_if_large(state_dir);
    Ok(())
}

/// Append `text` (whole lines) in one write: the header first into a new
/// file, a newline first after a torn last line; fsync'd.
fn append(file: &Path, text: &str) -> Result<(), FsError> {
    use std::os::unix::fs::FileExt;
    let dir = file.parent().unwrap_or(Path::new("."));
    let io = |source| FsError::Write {
        dir: dir.to_path_buf(),
        io: PathError::on("write", file)(source),
    };
    let f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(file)
        .map_err(io)?;
    let len = f.metadata().map_err(io)?.len();
    let mut buf = String::new();
    if len == 0 {
        buf.push_str(HEADER);
    } else {
        let mut last = [0u8; 1];
        f.read_exact_at(&mut last, len - 1).map_err(io)?;
        if last[0] != b'\n' {
            buf.push('\n');
        }
    }
    buf.push_str(text);
    (&f).write_all(buf.as_bytes()).map_err(io)?;
    f.sync_data().map_err(io)?;
    if len == 0 {
        crate::sys::fs::sync_dir(dir);
    }
    Ok(())
}

/// One parsed line.
struct Line<'a> {
    blob: ObjectId,
    time: i64,
    batch: &'a str,
}

/// The record's text, its complete lines parsed (a torn last line left
/// out): `None` for a line that cannot be read, with its number.
fn lines(text: &str) -> impl Iterator<Item = (usize, Option<Line<'_>>, &str)> {
    let complete = match text.rfind('\n') {
        Some(at) => &text[..=at],
        None => "",
    };
    complete
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .map(|(i, l)| (i + 1, parse(l), l))
}

fn parse(line: &str) -> Option<Line<'_>> {
    let mut w = line.split(' ');
    let blob = ObjectId::from_hex(w.next()?.as_bytes()).ok()?;
    let time = w.next()?.parse().ok()?;
    let batch = w.next()?;
    (!batch.is_empty() && w.next().is_none()).then_some(Line { blob, time, batch })
}

/// Read the file: `None` when there is none.
fn read(file: &Path) -> Result<Option<String>> {
    match std::fs::read(file) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(t) => Ok(Some(t)),
            Err(e) => {
                // The first line holding the bad byte.
                let at = e.utf8_error().valid_up_to();
                let line = e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1;
                Err(PrivateError::Malformed {
                    path: file.to_path_buf(),
                    line,
                })
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(PrivateError::Lower(PathError::on("read", file)(e).into())),
    }
}

/// The record as it is now (no file: empty). Any line that cannot be read
/// (but a torn last one) fails it.
pub fn load(state_dir: &Path) -> Result<Record> {
    let file = path(state_dir);
    let Some(text) = read(&file)? else {
        return Ok(Record::default());
    };
    let mut record = Record::default();
    for (n, line, _) in lines(&text) {
        let Some(l) = line else {
            return Err(PrivateError::Malformed {
                path: file,
                line: n,
            });
        };
        let newer = record.blobs.get(&l.blob).is_none_or(|e| e.time <= l.time);
        if newer {
            record.blobs.insert(
                l.blob,
                Entry {
                    batch: l.batch.to_string(),
                    time: l.time,
                },
            );
        }
    }
    Ok(record)
}

/// The retention (gc, and prepare once the file is past [`COMPACT_AT`]):
/// of each blob only its newest line is kept, and only for [`KEEP_SECS`],
/// but every line of a batch in `open`; the number of lines dropped
/// (nothing written with `dry_run`, or when nothing would go). A file with
/// a line that cannot be read is left as it is (the error says which
/// line). The caller holds the repository lock.
pub fn trim(state_dir: &Path, open: &HashSet<&str>, now: i64, dry_run: bool) -> Result<usize> {
    let file = path(state_dir);
    let Some(text) = read(&file)? else {
        return Ok(0);
    };
    let mut parsed = Vec::new();
    for (n, line, raw) in lines(&text) {
        let Some(l) = line else {
            return Err(PrivateError::Malformed {
                path: file,
                line: n,
            });
        };
        parsed.push((l, raw));
    }
    let mut newest: HashMap<ObjectId, i64> = HashMap::new();
    for (l, _) in &parsed {
        let t = newest.entry(l.blob).or_insert(l.time);
        *t = (*t).max(l.time);
    }
    let mut kept = String::from(HEADER);
    let (mut pairs, mut blobs) = (HashSet::new(), HashSet::new());
    let mut dropped = 0;
    for (l, raw) in parsed {
        let keep = if open.contains(l.batch) {
            pairs.insert((l.blob, l.batch))
        } else {
            let recent = l.time.saturating_add(KEEP_SECS) >= now;
            recent && newest.get(&l.blob) == Some(&l.time) && blobs.insert(l.blob)
        };
        if keep {
            kept.push_str(raw);
            kept.push('\n');
        } else {
            dropped += 1;
        }
    }
    if dropped > 0 && !dry_run {
        crate::sys::fs::write_atomic(&file, kept.as_bytes())?;
    }
    Ok(dropped)
}

/// Past this size prepare trims the record itself (as gc does), so it
/// stays small where gc is never run.
pub const COMPACT_AT: u64 = 4 << 20;

/// Trim the record when it has grown past [`COMPACT_AT`] (best effort: a
/// record that cannot be read or written is left as it is). The caller
/// holds the repository lock.
fn compact_if_large(state_dir: &Path) {
    let big = std::fs::metadata(path(state_dir)).is_ok_and(|m| m.len() > COMPACT_AT);
    if !big {
        return;
    }
    let Ok(batches) = crate::record::batch::list(state_dir) else {
        return;
    };
    let ids: Vec<&str> = batches
        .iter()
        .map(|e| match e {
            crate::record::batch::Entry::Batch(b) => b.id.as_str(),
            crate::record::batch::Entry::Broken { id, .. } => id.as_str(),
        })
        .collect();
    let open = ids.into_iter().collect();
    let _ = trim(state_dir, &open, crate::sys::time::now(), false);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(n: u8) -> ObjectId {
        ObjectId::from_bytes_or_panic(&[n; 20])
    }

    fn change(
        old: Option<(EntryKind, ObjectId)>,
        new: Option<(EntryKind, ObjectId)>,
    ) -> PathChange {
        PathChange {
            path: "p".into(),
            old,
            new,
        }
    }

    #[test]
    fn only_new_file_content_is_recorded() {
        let empty = ObjectId::empty_blob(gix::hash::Kind::Sha1);
        let changes = [
            change(None, Some((EntryKind::Blob, blob(1)))),
            change(
                Some((EntryKind::Blob, blob(2))),
                Some((EntryKind::BlobExecutable, blob(2))),
            ),
            change(Some((EntryKind::Blob, blob(3))), None),
            change(None, Some((EntryKind::Blob, empty))),
            change(None, Some((EntryKind::Commit, blob(4)))),
            change(None, Some((EntryKind::Link, blob(5)))),
            change(None, Some((EntryKind::Blob, blob(1)))),
        ];
        assert_eq!(blobs_of(&changes), vec![blob(1), blob(5)]);
    }

    #[test]
    fn appended_lines_load_and_a_torn_tail_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let changes = [change(None, Some((EntryKind::Blob, blob(1))))];
        record(dir.path(), "b1", &changes).unwrap();
        // A killed append: a line without its newline.
        let file = path(dir.path());
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap();
        f.write_all(format!("{} 12", blob(9)).as_bytes()).unwrap();
        let r = load(dir.path()).unwrap();
        assert_eq!(r.blobs.len(), 1);
        assert_eq!(r.blobs[&blob(1)].batch, "b1");
        // The next append starts on a new line; the torn one is then a bad line.
        record(
            dir.path(),
            "b2",
            &[change(None, Some((EntryKind::Blob, blob(2))))],
        )
        .unwrap();
        match load(dir.path()) {
            Err(PrivateError::Malformed { line: 3, .. }) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_record_past_its_size_is_trimmed_by_the_next_append() {
        let dir = tempfile::tempdir().unwrap();
        let file = path(dir.path());
        let old = crate::sys::time::now() - KEEP_SECS - 1;
        let mut text = String::from(HEADER);
        let mut n = 0u32;
        while text.len() as u64 <= COMPACT_AT {
            let id = ObjectId::from_bytes_or_panic(&[&n.to_be_bytes()[..], &[7; 16]].concat());
            text.push_str(&format!("{id} {old} gone\n"));
            n += 1;
        }
        std::fs::write(&file, &text).unwrap();
        let changes = [change(None, Some((EntryKind::Blob, blob(1))))];
        record(dir.path(), "new", &changes).unwrap();
        let r = load(dir.path()).unwrap();
        assert_eq!(r.blobs.len(), 1);
        assert!(std::fs::metadata(&file).unwrap().len() < 1000);
    }

    #[test]
    fn trim_keeps_open_and_recent_entries_and_leaves_a_bad_file_alone() {
        let dir = tempfile::tempdir().unwrap();
        let file = path(dir.path());
        let now = 1_000_000_000;
        let old = now - KEEP_SECS - 1;
        let text = format!(
            "{HEADER}{} {old} ended\n{} {old} open\n{} {now} ended\n{} {now} ended\n\
             {} {} ended\n{} {now} later\n",
            blob(1),
            blob(2),
            blob(3),
            blob(3),
            blob(4),
            now - 10,
            blob(4)
        );
        std::fs::write(&file, &text).unwrap();
        let open: HashSet<&str> = ["open"].into_iter().collect();
        // Expired (1), repeated (3), not the newest of its blob (4).
        assert_eq!(trim(dir.path(), &open, now, true).unwrap(), 3);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
        assert_eq!(trim(dir.path(), &open, now, false).unwrap(), 3);
        let r = load(dir.path()).unwrap();
        let mut ids: Vec<_> = r.blobs.keys().copied().collect();
        ids.sort();
        assert_eq!(ids, vec![blob(2), blob(3), blob(4)]);
        assert_eq!(r.blobs[&blob(4)].batch, "later");
        std::fs::write(&file, format!("{text}garbage\n")).unwrap();
        assert!(matches!(
            trim(dir.path(), &open, now, false),
            Err(PrivateError::Malformed { line: 8, .. })
        ));
        assert!(std::fs::read_to_string(&file)
            .unwrap()
            .ends_with("garbage\n"));
    }
}
