//! The source's private stat cache (`source-index` in a batch's state
//! folder): finding the newest one of a working tree's batches (`find_cache`),
//! the probe that dates it (`Probe`), merging it into the user's index
//! (`merge_cache`) and deciding whether a refreshed one is worth keeping
//! (`refreshed_cache`); the rules are the snapshot's module header's ("The
//! stat cache and racy entries").
//! Never: writes anywhere but a batch's state folder, and there only by temp
//! file and rename; lists batches itself (`batch::of_source` does); changes
//! the user's index on disk.

use std::path::{Path, PathBuf};

use gix::bstr::BString;
use gix::index::entry::{Flags, Mode, Stat};
use gix::objs::tree::EntryKind;
use gix::ObjectId;

use super::{tree_kind, Edit, CACHE_FILE};

/// Where a worktree's stat cache is read from and written to.
pub(super) struct Slot {
    /// The newest existing cache of a batch of this worktree.
    pub(super) read: Option<PathBuf>,
    /// Where a refreshed cache goes.
    pub(super) write: PathBuf,
    /// The folder of `write` (for the temp file).
    pub(super) dir: PathBuf,
}

/// The stat cache of the open batches whose source is `repo`'s working tree.
pub(super) fn find_cache(repo: &gix::Repository) -> Option<Slot> {
    let root = std::fs::canonicalize(repo.workdir()?).ok()?;
    let common = std::fs::canonicalize(repo.common_dir()).ok()?;
    let state_dir = crate::git::repo::state_dir(&common);
    // The batches of this working tree, oldest first (`batch` owns the listing).
    let mine = crate::record::batch::of_source(&state_dir, &root).ok()?;
    if mine.is_empty() {
        return None;
    }
    let newest_cache = mine
        .iter()
        .filter_map(|b| {
            let p = crate::record::batch::batch_dir(&state_dir, &b.id).join(CACHE_FILE);
            let mtime = p.metadata().and_then(|m| m.modified()).ok()?;
            Some((mtime, p))
        })
        .max_by_key(|(mtime, _)| *mtime)
        .map(|(_, p)| p);
    let write = match &newest_cache {
        Some(p) => p.clone(),
        None => crate::record::batch::batch_dir(&state_dir, &mine.last()?.id).join(CACHE_FILE),
    };
    let dir = write.parent()?.to_path_buf();
    Some(Slot {
        read: newest_cache,
        write,
        dir,
    })
}

/// The cache's temp file, created before a snapshot starts: its mtime is the
/// filesystem clock at that moment (see the module header).
pub(super) struct Probe {
    path: PathBuf,
    file: std::fs::File,
    secs: i64,
    nsecs: u32,
}

impl Probe {
    pub(super) fn new(dir: &Path) -> Option<Probe> {
        use std::os::unix::fs::MetadataExt;
        sweep_stale_temps(dir);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path = dir.join(format!("{CACHE_FILE}.{}-{nanos}.tmp", std::process::id()));
        let file = std::fs::File::options()
            .write(true)
            .create_new(true)
            .open(&path)
            .ok()?;
        match file.metadata() {
            Ok(md) => Some(Probe {
                path,
                file,
                secs: md.mtime(),
                nsecs: md.mtime_nsec() as u32,
            }),
            Err(_) => {
                let _ = std::fs::remove_file(&path);
                None
            }
        }
    }

    /// Were these stat data (content and inode change times) taken from a
    /// file last changed before the probe, so that any later change to it
    /// gives it different ones?
    pub(super) fn predates(&self, stat: &Stat) -> bool {
        let older = |t: gix::index::entry::stat::Time| {
            (i64::from(t.secs), t.nsecs) < (self.secs, self.nsecs)
        };
        older(stat.mtime) && older(stat.ctime)
    }

    /// Write `state` into the temp file and rename it to `dest`.
    pub(super) fn commit(self, state: gix::index::State, dest: &Path) -> std::io::Result<()> {
        use std::io::Write;
        let file = gix::index::File::from_state(state, dest);
        let mut out = std::io::BufWriter::with_capacity(1 << 16, &self.file);
        file.write_to(
            &mut out,
            gix::index::write::Options {
                extensions: gix::index::write::Extensions::None,
                skip_hash: false,
            },
        )
        .map_err(std::io::Error::other)?;
        out.flush()?;
        drop(out);
        std::fs::rename(&self.path, dest)
    }
}

/// Remove temp files of snapshots that died (killed) more than an hour ago.
fn sweep_stale_temps(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let hour = std::time::Duration::from_secs(3600);
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with(&format!("{CACHE_FILE}.")) && name.ends_with(".tmp")) {
            continue;
        }
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|m| m.elapsed().ok())
            .is_some_and(|age| age > hour);
        if old {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        // After a successful rename the temp name is gone already.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// What became of the stat cache in one snapshot.
pub(super) enum Refresh {
    /// Nothing worth writing.
    Keep,
    /// The cache gave nothing the user's index did not: remove it.
    Useless,
    /// Write this refreshed index as the cache.
    Write(Box<gix::index::State>),
}

/// Decide whether the refreshed index is worth keeping as the stat cache,
/// and make it: refreshed entries are trusted only when they predate the probe.
pub(super) fn refreshed_cache(
    mut index: gix::index::State,
    probe: &Probe,
    refreshed: &[(usize, Stat)],
    recorded: &[(usize, EntryKind, ObjectId, Stat)],
    had_cache: bool,
    used: usize,
) -> Refresh {
    let count = refreshed.len() + recorded.len();
    // Reading and merging a cache costs about as much as hashing a few
    // hundred small files: keep one only where it saves more than that.
    let worth = count >= (index.entries().len() / 64).max(100);
    if !worth {
        return if had_cache && used == 0 {
            Refresh::Useless
        } else {
            Refresh::Keep
        };
    }
    let entries = index.entries_mut();
    for (idx, stat) in refreshed {
        if let Some(e) = entries.get_mut(*idx) {
            e.stat = *stat;
            if !probe.predates(stat) {
                smudge(e);
            }
        }
    }
    for (idx, kind, id, stat) in recorded {
        let Some(e) = entries.get_mut(*idx) else {
            continue;
        };
        let mode = match kind {
            EntryKind::Blob => Mode::FILE,
            EntryKind::BlobExecutable => Mode::FILE_EXECUTABLE,
            EntryKind::Link => Mode::SYMLINK,
            _ => continue,
        };
        e.id = *id;
        e.mode = mode;
        e.stat = *stat;
        if !probe.predates(stat) {
            smudge(e);
        }
    }
    // The cache is read for its entries only: no extensions carried over.
    let _ = index.remove_tree();
    let _ = index.remove_resolve_undo();
    Refresh::Write(Box::new(index))
}

/// Entries whose stat data may stand in for reading the file.
fn plain(e: &gix::index::Entry) -> bool {
    e.stage_raw() == 0
        && !e.flags.intersects(
            Flags::INTENT_TO_ADD
                | Flags::SKIP_WORKTREE
                | Flags::ASSUME_VALID
                | Flags::REMOVE
                | Flags::UPTODATE
                | Flags::FSMONITOR_VALID,
        )
        && matches!(e.mode, Mode::FILE | Mode::FILE_EXECUTABLE | Mode::SYMLINK)
}

/// Can this entry's stat data be trusted relative to the index file it came
/// from (written at `ts`)? Smudged entries (mtime zero, or git's size zero
/// for a non-empty blob) and racily clean ones cannot.
fn trusted(
    e: &gix::index::Entry,
    ts_secs: i64,
    ts_nsecs: u32,
    opts: gix::index::entry::stat::Options,
) -> bool {
    let m = e.stat.mtime;
    if m.secs == 0 && m.nsecs == 0 {
        return false;
    }
    if e.stat.size == 0 && !e.id.is_empty_blob() {
        return false;
    }
    // gix's own racy rule (`Stat::is_racy`), against the index's timestamp.
    match ts_secs.cmp(&i64::from(m.secs)) {
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal if opts.use_nsec && opts.check_stat => ts_nsecs > m.nsecs,
        std::cmp::Ordering::Equal => false,
        std::cmp::Ordering::Greater => true,
    }
}

fn smudge(e: &mut gix::index::Entry) {
    e.stat.mtime = gix::index::entry::stat::Time { secs: 0, nsecs: 0 };
}

/// What merging the cache did.
#[derive(Default)]
pub(super) struct Merged {
    /// Entries that took the cache's data.
    pub(super) used: usize,
    /// Of those, the ones whose content or mode differ from the user's entry.
    pub(super) changed: Vec<(BString, Edit)>,
}

/// Merge the cache into the user's index (see the module header).
pub(super) fn merge_cache(
    index: &mut gix::index::State,
    cache: &gix::index::State,
    opts: gix::index::entry::stat::Options,
) -> Merged {
    let uts = index.timestamp();
    let (u_secs, u_nsecs) = (uts.unix_seconds(), uts.nanoseconds());
    let cts = cache.timestamp();
    let (c_secs, c_nsecs) = (cts.unix_seconds(), cts.nanoseconds());
    let newest = if cts > uts { cts } else { uts };
    let (centries, cpaths) = (cache.entries(), cache.path_backing());
    let mut merged = Merged::default();
    let mut ci = 0;
    {
        let (entries, paths) = index.entries_mut_and_pathbacking();
        for e in entries.iter_mut() {
            if !plain(e) {
                continue;
            }
            let path = e.path_in(paths);
            while ci < centries.len() && centries[ci].path_in(cpaths) < path {
                ci += 1;
            }
            let user_ok = trusted(e, u_secs, u_nsecs, opts);
            let cached = centries.get(ci).filter(|c| {
                c.path_in(cpaths) == path
                    && plain(c)
                    && trusted(c, c_secs, c_nsecs, opts)
                    && (c.stat.ctime, c.stat.mtime) > (e.stat.ctime, e.stat.mtime)
            });
            match cached {
                Some(c) => {
                    if (c.id, c.mode) != (e.id, e.mode) {
                        merged
                            .changed
                            .push((path.to_owned(), tree_kind(c.mode).map(|k| (k, c.id))));
                    }
                    e.id = c.id;
                    e.mode = c.mode;
                    e.stat = c.stat;
                    merged.used += 1;
                }
                None if !user_ok => smudge(e),
                None => {}
            }
        }
    }
    // Every entry kept is trusted against its own index file, hence against
    // the newer of the two timestamps; the rest are smudged.
    index.set_timestamp(newest);
    merged
}
