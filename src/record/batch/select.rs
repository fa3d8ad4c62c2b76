//! Listing the batches of a state folder and how a `BATCH` argument names
//! one (design §3): a full id, a label, a unique prefix, or none.
//!
//! Owns: the one rule for listing batches (`list`, `list_ok`, `of_source`)
//! every reader asks, and resolving a `BATCH` argument (`choose`,
//! `select_entry`, `select_open`).
//! Never: writes or removes a batch (see `layout`); words a help line.

use std::path::{Path, PathBuf};

use super::{batches_dir, short, Batch, BatchError, Result};

/// One entry of the state folder: a batch, or a folder whose record is unreadable.
#[derive(Debug)]
pub enum Entry {
    Batch(Box<Batch>),
    Broken { id: String, problem: String },
}

/// The entries of a state folder (`batches/`, `undo/`), but hidden ones (a
/// batch's state on its way out, `remove_state`, or in); none if no folder.
pub fn visible_entries(dir: &Path) -> std::io::Result<Vec<(String, PathBuf)>> {
    let rd = match std::fs::read_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        rd => rd?,
    };
    rd.map(|e| e.map(|e| (e.file_name().to_string_lossy().into_owned(), e.path())))
        .filter(|e| !e.as_ref().is_ok_and(|(id, _)| id.starts_with('.')))
        .collect()
}

/// Every batch of the repository, oldest first.
pub fn list(state_dir: &Path) -> Result<Vec<Entry>> {
    let dir = batches_dir(state_dir);
    let found = visible_entries(&dir).map_err(|source| BatchError::List { dir, source })?;
    let mut out = Vec::new();
    for (id, folder) in found.into_iter().filter(|(_, f)| f.is_dir()) {
        let path = folder.join("batch.toml");
        match std::fs::read_to_string(&path) {
            Ok(text) => match toml::from_str::<Batch>(&text) {
                Ok(b) => out.push(Entry::Batch(Box::new(b))),
                Err(e) => out.push(Entry::Broken {
                    id,
                    problem: format!("{} is not valid: {}", path.display(), e.message()),
                }),
            },
            Err(e) => out.push(Entry::Broken {
                id,
                problem: format!("cannot read {}: {e}", path.display()),
            }),
        }
    }
    out.sort_by(|a, b| match (a, b) {
        (Entry::Batch(a), Entry::Batch(b)) => a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)),
        (Entry::Batch(_), _) => std::cmp::Ordering::Less,
        (_, Entry::Batch(_)) => std::cmp::Ordering::Greater,
        _ => std::cmp::Ordering::Equal,
    });
    Ok(out)
}

pub fn list_ok(state_dir: &Path) -> Result<Vec<Batch>> {
    Ok(list(state_dir)?
        .into_iter()
        .filter_map(|e| match e {
            Entry::Batch(b) => Some(*b),
            Entry::Broken { .. } => None,
        })
        .collect())
}

/// The readable batches whose recorded source is the working tree `root`
/// (canonical), oldest first.
pub fn of_source(state_dir: &Path, root: &Path) -> Result<Vec<Batch>> {
    Ok(list_ok(state_dir)?
        .into_iter()
        .filter(|b| b.source == root)
        .collect())
}

/// Resolve a `BATCH` argument (design §3) among open batches: see [`choose`].
/// (Kept for callers that hold a list of readable batches only.)
/// A batch whose state is unreadable is never returned: naming one is
/// `delegate::corrupt_batch` (exit 3, with the command that removes it).
#[allow(dead_code)]
pub fn select(batches: Vec<Batch>, arg: Option<&str>) -> Result<Batch> {
    select_entry(
        batches
            .into_iter()
            .map(|b| Entry::Batch(Box::new(b)))
            .collect(),
        arg,
    )
}

/// [`select`] among every entry of the state folder, so that naming a
/// batch whose `batch.toml` cannot be read says so.
pub fn select_entry(entries: Vec<Entry>, arg: Option<&str>) -> Result<Batch> {
    match choose(entries, arg)? {
        Entry::Batch(b) => Ok(*b),
        Entry::Broken { id, problem } => Err(corrupt(&id, &problem)),
    }
}

/// [`select_entry`] of the batches of `state_dir`.
pub fn select_open(state_dir: &Path, arg: Option<&str>) -> Result<Batch> {
    select_entry(list(state_dir)?, arg)
}

/// The error for a batch whose state cannot be read (exit 3).
pub fn corrupt(id: &str, problem: &str) -> BatchError {
    BatchError::Corrupt {
        id: id.to_string(),
        problem: problem.to_string(),
    }
}

/// Does `arg` name the batch `id`: its full id, or a prefix of at least 4
/// characters of it (any case)?
fn names_id(id: &str, arg: &str, prefix: bool) -> bool {
    let lower = arg.to_ascii_lowercase();
    if prefix {
        lower.len() >= 4 && id.starts_with(&lower)
    } else {
        id == lower
    }
}

/// Resolve a `BATCH` argument (design §3) among the entries of the state
/// folder: a full id first (so that no label can shadow an id), then a
/// label, then a unique prefix of at least 4 characters of an id; omitted
/// means the only readable batch whose prepare completed (or, when there is
/// none, the only readable one, or the only unreadable one).
pub fn choose(entries: Vec<Entry>, arg: Option<&str>) -> Result<Entry> {
    let name = |e: &Entry| match e {
        Entry::Batch(b) => match &b.label {
            Some(l) => format!("{} ({l})", b.short()),
            None => b.short().to_string(),
        },
        Entry::Broken { id, .. } => format!("{} (corrupt)", short(id)),
    };
    let id_of = |e: &Entry| match e {
        Entry::Batch(b) => b.id.clone(),
        Entry::Broken { id, .. } => id.clone(),
    };
    let Some(arg) = arg else {
        // Omitted, BATCH means the only batch there is work in: a readable
        // batch whose prepare completed; failing that, a readable one (its
        // prepare never completed, design §3.15); failing that, the only one.
        let complete = |e: &Entry| matches!(e, Entry::Batch(b) if b.preparing.is_none());
        let readable = |e: &Entry| matches!(e, Entry::Batch(_));
        let pool: Vec<Entry> = if entries.iter().any(complete) {
            entries.into_iter().filter(complete).collect()
        } else if entries.iter().any(readable) {
            entries.into_iter().filter(readable).collect()
        } else {
            entries
        };
        return match pool.len() {
            0 => Err(BatchError::NoBatch),
            1 => Ok(pool.into_iter().next().expect("one batch")),
            _ => Err(BatchError::SeveralBatches {
                names: pool.iter().map(name).collect(),
            }),
        };
    };
    if let Some(i) = entries.iter().position(|e| names_id(&id_of(e), arg, false)) {
        return Ok(entries.into_iter().nth(i).expect("found"));
    }
    if let Some(i) = entries
        .iter()
        .position(|e| matches!(e, Entry::Batch(b) if b.label.as_deref() == Some(arg)))
    {
        return Ok(entries.into_iter().nth(i).expect("found"));
    }
    if arg.len() < 4 {
        return Err(BatchError::ShortPrefix {
            arg: arg.to_string(),
        });
    }
    let matching: Vec<usize> = (0..entries.len())
        .filter(|&i| names_id(&id_of(&entries[i]), arg, true))
        .collect();
    match matching.len() {
        1 => Ok(entries.into_iter().nth(matching[0]).expect("found")),
        0 => Err(BatchError::NoMatch {
            arg: arg.to_string(),
        }),
        _ => Err(BatchError::AmbiguousPrefix {
            arg: arg.to_string(),
            names: matching.iter().map(|&i| name(&entries[i])).collect(),
        }),
    }
}
