//! The shared git dir (design §3.16 "The shared git dir"): a linked
//! worktree shares the source's `<common-dir>/config` and hooks folder, so
//! a worker's `git config core.fsmonitor ...` or a hook it writes there runs
//! on the user's next git command. Prepare records the config's keys (each
//! with a hash of its values, never the values) and the hooks folders'
//! entries (`<common-dir>/hooks`, and the `core.hooksPath` folder when one is
//! set: names, kinds and content hashes), and `<common-dir>/delegate.toml`
//! (its identity and text: design §3.18 "Commands from the shared git
//! dir"), in `shared-git-dir` beside `batch.toml`; apply and its dry run
//! compare them with what is there now and name each key and hook created,
//! changed or deleted since.
//!
//! Owns: the `shared-git-dir` record (its format and file), what counts as
//! a change there, and which changes are git-delegate's own (the pre-commit
//! hook `hooks::install` writes, and the hooks it moves aside for it).
//! Never: changes the config or a hook (they are reported, never touched);
//! opens a hook that is not a regular file (a FIFO never blocks it) or
//! follows a symlink in a hooks folder; prints.

use std::collections::BTreeMap;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, FileType, Mode, OFlags};
use serde::{Deserialize, Serialize};
use sha2::Digest;

use super::{Change, Kind, SideEffect};
use crate::error::Result;
use crate::git::repo::Source;
use crate::record::batch::{self, Batch};
use crate::sys::fs::read_at_most;

/// The record's file name in the batch's state folder.
pub const FILE: &str = "shared-git-dir";

/// At most this many entries of a hooks folder are recorded (a hooks folder
/// is small; a huge one is not read whole at every prepare).
const MAX_HOOKS: usize = 1000;

/// The shared git dir at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Record {
    /// The hash of `<common-dir>/config`'s bytes (`None`: no such file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    config: Option<String>,
    /// `<common-dir>/delegate.toml` at prepare (design §3.18 "Commands
    /// from the shared git dir"): its identity (`record::trust::identity`)
    /// and text; `None` in a batch recorded before it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    delegate: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    delegate_text: Option<String>,
    /// Each key of the config (`section.subsection.name`, section and name
    /// in lower case as git compares them) with a hash of its values.
    #[serde(default)]
    keys: BTreeMap<String, String>,
    /// The hooks folders, each with its entries (name -> what it is).
    #[serde(default)]
    hooks: Vec<Hooks>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Hooks {
    path: String,
    /// Name -> `f<exec bit>:<hash>` (a regular file), `l:<hash of its
    /// target>` (a symlink), `d` (a folder) or `o` (anything else).
    #[serde(default)]
    entries: BTreeMap<String, String>,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn hash(bytes: &[u8]) -> String {
    hex(&sha2::Sha256::digest(bytes))
}

/// The config's keys, each with a hash of its values in order (a key
/// given without `=` counts as a value of its own). `None` when the file
/// cannot be parsed.
fn keys(bytes: &[u8]) -> Option<BTreeMap<String, String>> {
    let file = gix::config::File::from_bytes_no_includes(
        bytes,
        gix::config::file::Metadata::from(gix::config::Source::Local),
        Default::default(),
    )
    .ok()?;
    // Per key: how often it is given, and its values in order.
    let mut values: BTreeMap<String, (usize, Vec<u8>)> = BTreeMap::new();
    for section in file.sections() {
        let header = section.header();
        let mut prefix = header.name().to_string().to_ascii_lowercase();
        if let Some(sub) = header.subsection_name() {
            prefix.push('.');
            prefix.push_str(&sub.to_string());
        }
        let mut names: Vec<String> = Vec::new();
        for name in section.value_names() {
            let lower = name.to_ascii_lowercase();
            if !names.contains(&lower) {
                names.push(lower);
            }
        }
        for name in names {
            let all = section.values(&name);
            let count = section
                .value_names()
                .filter(|n| n.eq_ignore_ascii_case(&name))
                .count();
            let (n, acc) = values.entry(format!("{prefix}.{name}")).or_default();
            *n += count;
            for v in all {
                acc.extend_from_slice(&v);
                acc.push(0);
            }
        }
    }
    Some(
        values
            .into_iter()
            .map(|(k, (n, mut v))| {
                v.extend_from_slice(format!("\n{n}").as_bytes());
                (k, hash(&v))
            })
            .collect(),
    )
}

/// The config's current value of `key` (its last, as git reads it).
fn value_of(bytes: &[u8], key: &str) -> Option<String> {
    let file = gix::config::File::from_bytes_no_includes(
        bytes,
        gix::config::file::Metadata::from(gix::config::Source::Local),
        Default::default(),
    )
    .ok()?;
    file.string(key).map(|v| v.to_string())
}

/// What is in the hooks folder `dir` now: never following a symlink, never
/// opening anything but a regular file.
fn hooks_entries(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Ok(fd) = rfs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return out;
    };
    let Ok(names) = crate::sys::fs::read_names(fd.as_fd()) else {
        return out;
    };
    for (name, _) in names.into_iter().take(MAX_HOOKS) {
        let Ok(st) = rfs::statat(&fd, name.as_slice(), rfs::AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        let what = match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => match read_at_most(fd.as_fd(), name.as_slice(), u64::MAX) {
                Ok(bytes) => format!("f{}:{}", u8::from(st.st_mode & 0o111 != 0), hash(&bytes)),
                Err(_) => "o".into(),
            },
            FileType::Symlink => match rfs::readlinkat(&fd, name.as_slice(), Vec::new()) {
                Ok(target) => format!("l:{}", hash(target.as_bytes())),
                Err(_) => "o".into(),
            },
            FileType::Directory => "d".into(),
            _ => "o".into(),
        };
        out.insert(String::from_utf8_lossy(&name).into_owned(), what);
    }
    out
}

/// The hooks folders git runs this source's hooks from, the common dir's
/// first: `<common-dir>/hooks`, and the `core.hooksPath` folder when set.
fn hooks_dirs(source: &Source) -> Vec<PathBuf> {
    let mut dirs = vec![source.common_dir.join("hooks")];
    if let Ok(dir) = crate::ops::pre_commit::hooks_dir(source) {
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

fn read_now(source: &Source, hooks: &[PathBuf]) -> (Record, Option<Vec<u8>>) {
    let bytes = std::fs::read(source.common_dir.join("config")).ok();
    let delegate = crate::record::trust::read_file(&source.state_dir());
    let record = Record {
        config: bytes.as_deref().map(hash),
        delegate: Some(crate::record::trust::identity(delegate.as_deref())),
        delegate_text: delegate.and_then(|b| String::from_utf8(b).ok()),
        keys: bytes.as_deref().and_then(keys).unwrap_or_default(),
        hooks: hooks
            .iter()
            .filter_map(|p| {
                Some(Hooks {
                    path: p.to_str()?.to_string(),
                    entries: hooks_entries(p),
                })
            })
            .collect(),
    };
    (record, bytes)
}

/// Record the shared git dir of `source` in `batch_dir` (prepare):
/// written temp-then-rename.
pub fn record(source: &Source, batch_dir: &Path) -> Result<()> {
    let (record, _) = read_now(source, &hooks_dirs(source));
    crate::ops::write_toml(&batch_dir.join(FILE), &record, "the shared git dir")
}

/// Is this the hook `git delegate hooks install` writes, or one it moved
/// aside for it (`pre-commit.local`: the pre-commit of prepare's time;
/// `pre-commit.local.bak...`: the pre-commit.local of prepare's time)?
fn installed_by_us(name: &str, now: &str, before: &BTreeMap<String, String>) -> bool {
    // A regular file's content hash (its exec bit aside).
    let content = |what: &str| {
        what.strip_prefix('f')
            .and_then(|w| w.split_once(':'))
            .map(|(_, h)| h.to_string())
    };
    let Some(now) = content(now) else {
        return false;
    };
    let was = |n: &str| before.get(n).and_then(|w| content(w));
    if name == "pre-commit" {
        return now == hash(crate::ops::pre_commit::PRE_COMMIT.as_bytes());
    }
    if name == "pre-commit.local" {
        return was("pre-commit").is_some_and(|h| h == now);
    }
    if name.starts_with("pre-commit.local.bak") {
        return was("pre-commit.local").is_some_and(|h| h == now);
    }
    false
}

fn effect(
    kind: Kind,
    change: Change,
    path: PathBuf,
    detail: Option<String>,
    value: Option<String>,
) -> SideEffect {
    SideEffect {
        task: None,
        kind,
        change,
        name: String::new(),
        old: None,
        new: None,
        stash_index: None,
        message: None,
        path: Some(path),
        detail,
        value,
    }
}

/// The names created or changed in `now` since `before` (in `now`'s order,
/// with their value now), then those deleted (in `before`'s order).
fn changes<'a>(
    before: &'a BTreeMap<String, String>,
    now: &'a BTreeMap<String, String>,
) -> impl Iterator<Item = (&'a String, Option<&'a String>, Change)> {
    let made = now.iter().filter_map(|(name, value)| {
        let change = match before.get(name) {
            None => Change::Created,
            Some(was) if was != value => Change::Changed,
            Some(_) => return None,
        };
        Some((name, Some(value), change))
    });
    let gone = before
        .keys()
        .filter(|name| !now.contains_key(*name))
        .map(|name| (name, None, Change::Deleted));
    made.chain(gone)
}

/// What prepare recorded of batch `b`'s shared git dir.
fn recorded(source: &Source, b: &Batch) -> Option<Record> {
    let path = batch::batch_dir(&source.state_dir(), &b.id).join(FILE);
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| toml::from_str::<Record>(&t).ok())
}

/// `delegate.toml` as batch `b`'s prepare found it: its identity
/// (`record::trust::identity`) and text (`None`: no file, or not text);
/// `None` for a batch recorded before this was (or in scratch mode).
pub fn delegate_at_prepare(source: &Source, b: &Batch) -> Option<(String, Option<String>)> {
    let r = recorded(source, b)?;
    Some((r.delegate?, r.delegate_text))
}

/// The keys of `delegate.toml` created, changed or deleted since prepare
/// (design §3.18 "Commands from the shared git dir"), by name; one change
/// without a key when the file no longer parses.
fn delegate_changes(source: &Source, before: &Record) -> Vec<SideEffect> {
    let Some(was) = &before.delegate else {
        return Vec::new();
    };
    let bytes = crate::record::trust::read_file(&source.state_dir());
    if crate::record::trust::identity(bytes.as_deref()) == *was {
        return Vec::new();
    }
    let path = crate::record::trust::file_of(&source.state_dir());
    let keys = |text: Option<&str>| crate::config::keys(text.unwrap_or(""));
    let old = keys(before.delegate_text.as_deref()).unwrap_or_default();
    let text = bytes.map(|b| String::from_utf8_lossy(&b).into_owned());
    let Some(new) = keys(text.as_deref()) else {
        return vec![effect(Kind::Config, Change::Changed, path, None, None)];
    };
    changes(&old, &new)
        .map(|(key, value, change)| {
            let detail = Some(key.clone());
            effect(Kind::Config, change, path.clone(), detail, value.cloned())
        })
        .collect()
}

/// The config keys and hooks created, changed or deleted in the shared
/// git dir since `b` was prepared: config keys first (by name), then hooks
/// (by folder, then name), then the keys of `delegate.toml` (by name). Empty for a batch prepare recorded nothing for
/// (scratch mode, older batches). Who made them cannot be told: `task` is
/// always `None`.
pub fn find(source: &Source, b: &Batch) -> Vec<SideEffect> {
    let Some(before) = recorded(source, b) else {
        return Vec::new();
    };
    let dirs: Vec<PathBuf> = before
        .hooks
        .iter()
        .map(|h| PathBuf::from(&h.path))
        .collect();
    let (now, bytes) = read_now(source, &dirs);
    let mut out = Vec::new();
    let config = source.common_dir.join("config");
    if now.config != before.config {
        if bytes.is_some() && now.keys.is_empty() && bytes.as_deref().and_then(keys).is_none() {
            // It no longer parses: the file is named, no key can be.
            out.push(effect(
                Kind::Config,
                Change::Changed,
                config.clone(),
                None,
                None,
            ));
        }
        for (key, _, change) in changes(&before.keys, &now.keys) {
            let value = match change {
                Change::Deleted => None,
                _ => bytes.as_deref().and_then(|b| value_of(b, key)),
            };
            out.push(effect(
                Kind::Config,
                change,
                config.clone(),
                Some(key.clone()),
                value,
            ));
        }
    }
    for (old, new) in before.hooks.iter().zip(&now.hooks) {
        let dir = PathBuf::from(&old.path);
        for (name, what, change) in changes(&old.entries, &new.entries) {
            if what.is_some_and(|what| installed_by_us(name, what, &old.entries)) {
                continue;
            }
            out.push(effect(
                Kind::Hook,
                change,
                dir.join(name),
                Some(name.clone()),
                None,
            ));
        }
    }
    out.extend(delegate_changes(source, &before));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_named_as_git_compares_them_and_every_value_counts() {
        let k = keys(
            b"[Core]\n\tBare = false\n\tfsmonitor\n[remote \"Origin\"]\n\tfetch = a\n\tfetch = b\n",
        )
        .unwrap();
        let names: Vec<&str> = k.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            ["core.bare", "core.fsmonitor", "remote.Origin.fetch"]
        );
        // One more value, another order, an implicit value given one: all differ.
        let more = keys(b"[remote \"Origin\"]\n\tfetch = a\n\tfetch = b\n\tfetch = c\n").unwrap();
        let swapped = keys(b"[remote \"Origin\"]\n\tfetch = b\n\tfetch = a\n").unwrap();
        let set = keys(b"[core]\n\tfsmonitor = true\n").unwrap();
        assert_ne!(more["remote.Origin.fetch"], k["remote.Origin.fetch"]);
        assert_ne!(swapped["remote.Origin.fetch"], k["remote.Origin.fetch"]);
        assert_ne!(set["core.fsmonitor"], k["core.fsmonitor"]);
        // Split over two sections, the same key.
        let split =
            keys(b"[remote \"Origin\"]\n\tfetch = a\n[remote \"Origin\"]\n\tfetch = b\n").unwrap();
        assert_eq!(split["remote.Origin.fetch"], k["remote.Origin.fetch"]);
        assert_eq!(
            value_of(
                b"[core]\n\tfsmonitor = one\n\tfsmonitor = two\n",
                "core.fsmonitor"
            )
            .as_deref(),
            Some("two")
        );
    }

    #[test]
    fn only_git_delegates_own_hook_and_what_it_moved_aside_are_ours() {
        let ours = format!("f1:{}", hash(crate::ops::pre_commit::PRE_COMMIT.as_bytes()));
        let theirs = format!("f1:{}", hash(b"#!/bin/sh\nexit 0\n"));
        let mut before = BTreeMap::new();
        before.insert("pre-commit".to_string(), theirs.clone());
        assert!(installed_by_us("pre-commit", &ours, &before));
        assert!(installed_by_us("pre-commit.local", &theirs, &before));
        assert!(!installed_by_us("pre-commit.local", &ours, &before));
        assert!(!installed_by_us("pre-push", &ours, &before));
        assert!(!installed_by_us("pre-commit", &theirs, &before));
    }
}
