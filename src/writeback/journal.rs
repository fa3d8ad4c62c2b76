//! The write-back plan and its journal: what is written where, recorded
//! durably as JSON lines, and read back for recovery (`plan.rs` makes the
//! plan from the writes).

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use gix::bstr::BString;
use gix::objs::tree::EntryKind;
use gix::ObjectId;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Phase {
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
pub(super) struct Item {
    pub(super) path: BString,
    pub(super) old: Option<(EntryKind, ObjectId)>,
    pub(super) new: Option<(EntryKind, ObjectId)>,
    /// Where the new content waits (repo-relative).
    pub(super) temp: Option<BString>,
    /// Where the original (file, or folder in the way) is moved (repo-relative).
    pub(super) aside: Option<BString>,
    /// The aside is a folder standing where `F` puts a file.
    pub(super) aside_folder: bool,
    /// A deletion inside a folder that is moved aside whole.
    pub(super) covered: bool,
    /// Folders on the way that must be created before the temp (none stands in the way).
    pub(super) early: bool,
    /// What the write put at the path, recorded durably before the first
    /// rename (`None` in the plan, and in journals of version 1).
    pub(super) wrote: Option<Wrote>,
}

/// What write-back put at a path: enough to prove later that the path
/// still holds exactly that (design §7). For a file, the SHA-1 of its bytes
/// as they are on disk (after the smudge filters; not a blob id) with its
/// permission bits and size; for a symlink, the SHA-1 of its target; for a
/// deletion, nothing may stand there. The inode and mtime are recorded too
/// (the file keeps both when it is renamed into place): they tell "edited
/// in place" from "replaced" in reports, but only the content is proof.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(super) enum Wrote {
    Absent,
    File {
        mode: u32,
        size: u64,
        ino: u64,
        mtime: i64,
        mtime_ns: i64,
        sha1: String,
    },
    Link {
        ino: u64,
        sha1: String,
    },
}

#[derive(Debug, Clone)]
pub(super) struct Plan {
    pid: u32,
    start: Option<u64>,
    host: String,
    pub(super) root: PathBuf,
    token: String,
    created_at: String,
    pub(super) items: Vec<Item>,
    /// Folders the write may create, shallow first.
    pub(super) mkdirs: Vec<BString>,
    pub(super) phase: Phase,
    /// Paths a rollback left to the user: (path, kept file, kept is theirs).
    pub(super) left: Vec<(BString, Option<BString>, bool)>,
    /// State files the caller staged (absolute: staged name, final name),
    /// put in place at the commit point, removed by a rollback.
    pub(super) then: Vec<(PathBuf, PathBuf)>,
}

impl Plan {
    /// A new plan of writing `items` below `root`, by this process (its
    /// pid, start time and host, so recovery tells a live writer).
    pub(super) fn new(root: &Path, token: &str, items: Vec<Item>, mkdirs: Vec<BString>) -> Plan {
        Plan {
            pid: std::process::id(),
            start: crate::sys::process::process_start(std::process::id()),
            host: crate::sys::process::hostname(),
            root: root.to_path_buf(),
            token: token.to_string(),
            created_at: crate::sys::time::rfc3339(crate::sys::time::now()),
            items,
            mkdirs,
            phase: Phase::Planned,
            left: Vec::new(),
            then: Vec::new(),
        }
    }

    pub(super) fn writer_alive(&self) -> bool {
        self.pid != std::process::id()
            && self.host == crate::sys::process::hostname()
            && self.start.is_some()
            && crate::sys::process::process_start(self.pid) == self.start
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
        /// `[staged, final]` state files (absolute, `%XX`-escaped), absent
        /// when none (an older reader ignores the field).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        then: Vec<[String; 2]>,
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
    /// What item `i` put at its path (appended with the `renaming` marker).
    Wrote {
        i: usize,
        w: Wrote,
    },
    /// A rollback left item `i`'s path to the user, keeping the file
    /// `kept` (appended, best effort, for `status`; rollback re-derives it).
    Left {
        i: usize,
        kept: Option<String>,
        yours: bool,
    },
    Phase {
        phase: String,
    },
}

pub(super) fn tmp_journal(journal: &Path) -> PathBuf {
    let mut name = journal.as_os_str().to_owned();
    name.push(".tmp");
    PathBuf::from(name)
}

fn journal_text(plan: &Plan) -> String {
    let mut lines = vec![Line::Header {
        version: 2,
        pid: plan.pid,
        start: plan.start,
        host: plan.host.clone(),
        root: enc(plan.root.as_os_str().as_bytes()),
        token: plan.token.clone(),
        created_at: plan.created_at.clone(),
        then: plan
            .then
            .iter()
            .map(|(staged, to)| {
                [
                    enc(staged.as_os_str().as_bytes()),
                    enc(to.as_os_str().as_bytes()),
                ]
            })
            .collect(),
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

/// Write the journal of `plan` to `path` through a temp file, which no
/// failure leaves behind (design §3.18 "Leftovers").
pub(super) fn write_journal(path: &Path, plan: &Plan) -> std::io::Result<()> {
    let tmp = tmp_journal(path);
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        f.write_all(journal_text(plan).as_bytes())?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    let dir = std::fs::File::open(path.parent().unwrap_or(Path::new(".")))?;
    dir.sync_all()
}

/// Append a marker durably. On failure the journal is cut back to what it
/// was (a marker that may not be durable must not be read later).
pub(super) fn append_phase(path: &Path, phase: Phase) -> std::io::Result<()> {
    append(
        path,
        &[Line::Phase {
            phase: phase.name().into(),
        }],
    )
}

/// Append what every item wrote and then the `renaming` marker, durably,
/// in one write: a torn tail loses the marker, so no record is missing
/// once renaming has begun.
pub(super) fn append_wrote_and_renaming(path: &Path, plan: &Plan) -> std::io::Result<()> {
    let mut lines: Vec<Line> = plan
        .items
        .iter()
        .enumerate()
        .filter_map(|(i, it)| {
            Some(Line::Wrote {
                i,
                w: it.wrote.clone()?,
            })
        })
        .collect();
    lines.push(Line::Phase {
        phase: Phase::Renaming.name().into(),
    });
    append(path, &lines)
}

/// Record the paths a rollback left to the user (item index, kept file,
/// kept file is the user's version).
pub(super) fn append_left(
    path: &Path,
    left: &[(usize, Option<BString>, bool)],
) -> std::io::Result<()> {
    let lines: Vec<Line> = left
        .iter()
        .map(|(i, kept, yours)| Line::Left {
            i: *i,
            kept: kept.as_ref().map(|k| enc(k)),
            yours: *yours,
        })
        .collect();
    append(path, &lines)
}

fn append(path: &Path, lines: &[Line]) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new().append(true).open(path)?;
    let len = f.metadata()?.len();
    let mut text = String::new();
    for l in lines {
        // Serialising plain strings, numbers and bools cannot fail.
        text.push_str(&serde_json::to_string(l).unwrap_or_default());
        text.push('\n');
    }
    let res = f.write_all(text.as_bytes()).and_then(|()| f.sync_all());
    if res.is_err() {
        let _ = f.set_len(len);
        let _ = f.sync_all();
    }
    res
}

pub(super) fn remove_journal(path: &Path) -> std::io::Result<()> {
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
pub(super) fn parse_journal(text: &[u8]) -> Option<Plan> {
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
                then,
                ..
            } => {
                let abs = |s: &str| PathBuf::from(std::ffi::OsStr::from_bytes(&dec(s)));
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
                    left: Vec::new(),
                    then: then.iter().map(|[s, t]| (abs(s), abs(t))).collect(),
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
                    wrote: None,
                });
            }
            Line::Left { i, kept, yours } => {
                let p = plan.as_mut()?;
                if let Some(it) = p.items.get(i) {
                    let path = it.path.clone();
                    p.left.push((path, kept.map(|k| dec(&k).into()), yours));
                }
            }
            Line::Wrote { i, w } => {
                // An index out of range (never written so) is ignored:
                // that item is then treated as unproven, never as ours.
                if let Some(it) = plan.as_mut()?.items.get_mut(i) {
                    it.wrote = Some(w);
                }
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
pub(super) fn enc(bytes: &[u8]) -> String {
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

pub(super) fn dec(s: &str) -> Vec<u8> {
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
