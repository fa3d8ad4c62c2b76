//! git-delegate's own stat record in a task workspace's snapshot (design
//! §3.20, §3.18): the workspace's index says which paths are tracked, but
//! its stat data count only where git-delegate's record vouches for the
//! same content (`distrust`), so a worker that forges its index (new stat
//! data beside an old blob id) hides nothing; what a snapshot read is
//! turned into the record of exactly the tree it wrote (`vouch`); and an
//! idle workspace is proven against its record alone, its worker's index
//! never read (`prove`). The stat rules are fixed: the workspace's
//! repository handle compares ctime, inode, size and mtime to the
//! nanosecond whatever `core.trustctime` or `core.checkStat` say
//! (`git::repo::open_worktree`).
//!
//! A file's stat data are vouched for only when they were taken before the
//! filesystem clock read at the start of the read (`Clock`): any later
//! change to the file, even one that restores its mtime and size, gives it
//! a newer ctime. Others are kept as zero: that file is read next time.
//! Never: writes an index or a record (the callers do), or trusts stat data
//! of a worktree's own index.

use std::path::Path;

use gix::bstr::{BString, ByteSlice};
use gix::index::entry::{Flags, Mode, Stat};
use gix::objs::tree::EntryKind;

use super::status::{worktree_status, Collect};
use super::{Edit, Side, SnapshotError};

/// The filesystem clock when a read started.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    secs: i64,
    nsecs: u32,
}

impl Clock {
    /// The clock of the filesystem holding `dir`, now.
    pub(crate) fn at(dir: &Path) -> Option<Clock> {
        crate::sys::fs::clock_at(dir).map(|(secs, nsecs)| Clock { secs, nsecs })
    }

    pub(crate) fn from_parts(secs: i64, nsecs: u32) -> Clock {
        Clock { secs, nsecs }
    }

    /// Were these stat data (content and inode change times) taken from a
    /// file last changed before the clock, so that any later change to it
    /// gives it different ones?
    pub(crate) fn predates(&self, stat: &Stat) -> bool {
        let older = |t: gix::index::entry::stat::Time| {
            (i64::from(t.secs), t.nsecs) < (self.secs, self.nsecs)
        };
        older(stat.mtime) && older(stat.ctime)
    }

    /// `stat` where it predates the clock, else none (zero).
    fn vouch(&self, stat: &Stat) -> Stat {
        if self.predates(stat) {
            *stat
        } else {
            Stat::default()
        }
    }
}

/// Can the record's entry `r` stand in for reading its file: stat data
/// (not zero, not git's smudged size) of a file last changed before the
/// record was written (`at`, its timestamp)?
fn usable(r: &gix::index::Entry, at: Clock) -> bool {
    let m = r.stat.mtime;
    let smudged = (m.secs == 0 && m.nsecs == 0) || (r.stat.size == 0 && !r.id.is_empty_blob());
    !smudged && r.stage_raw() == 0 && at.predates(&r.stat)
}

/// Replace the stat data of every entry of the workspace's `index` by the
/// record's for the same path and content (mode and blob id), where the
/// record can vouch for them, and by none (zero: the file is read)
/// everywhere else. The index's timestamp becomes the record's, against
/// which racy entries are judged.
pub(super) fn distrust(index: &mut gix::index::State, record: &gix::index::State) {
    let ts = record.timestamp();
    let at = Clock::from_parts(ts.unix_seconds(), ts.nanoseconds());
    let (rentries, rpaths) = (record.entries(), record.path_backing());
    let mut ri = 0;
    let (entries, paths) = index.entries_mut_and_pathbacking();
    for e in entries.iter_mut() {
        let path = e.path_in(paths);
        while ri < rentries.len() && rentries[ri].path_in(rpaths) < path {
            ri += 1;
        }
        e.stat = rentries
            .get(ri)
            .filter(|r| {
                r.path_in(rpaths) == path
                    && (r.id, r.mode) == (e.id, e.mode)
                    && e.stage_raw() == 0
                    && usable(r, at)
            })
            .map(|r| r.stat)
            .unwrap_or_default();
    }
    index.set_timestamp(ts);
}

fn mode_of(kind: EntryKind) -> Option<Mode> {
    match kind {
        EntryKind::Blob => Some(Mode::FILE),
        EntryKind::BlobExecutable => Some(Mode::FILE_EXECUTABLE),
        EntryKind::Link => Some(Mode::SYMLINK),
        _ => None,
    }
}

/// The record of what a task workspace's snapshot read: `index` (the
/// workspace's, its stat data `distrust`ed) with the stat data the status
/// refreshed (`refreshed`: content unchanged) and the files hashed from
/// disk (`disk`: path, what it became, the stat data taken before it was
/// read) applied, so that it holds exactly the entries of the tree the
/// snapshot wrote. `None` where no such record can be made: an index
/// holding conflicts, intent-to-add, skip-worktree or submodule entries.
pub(super) fn vouch(
    mut index: gix::index::State,
    refreshed: &[(usize, Stat)],
    disk: &[(BString, Edit, Option<Stat>)],
    clock: Clock,
) -> Option<gix::index::State> {
    let odd = index.entries().iter().any(|e| {
        e.stage_raw() != 0
            || e.flags
                .intersects(Flags::INTENT_TO_ADD | Flags::SKIP_WORKTREE)
            || !matches!(e.mode, Mode::FILE | Mode::FILE_EXECUTABLE | Mode::SYMLINK)
    });
    if odd {
        return None;
    }
    {
        let entries = index.entries_mut();
        for (idx, stat) in refreshed {
            if let Some(e) = entries.get_mut(*idx) {
                e.stat = clock.vouch(stat);
            }
        }
    }
    let mut added = Vec::new();
    let mut gone = false;
    for (path, edit, stat) in disk {
        let stat = stat.as_ref().map(|s| clock.vouch(s)).unwrap_or_default();
        let new = edit.and_then(|(kind, id)| mode_of(kind).map(|m| (m, id)));
        match index.entry_index_by_path(path.as_bstr()) {
            Ok(i) => {
                let e = &mut index.entries_mut()[i];
                match new {
                    Some((mode, id)) => {
                        e.mode = mode;
                        e.id = id;
                        e.stat = stat;
                    }
                    None => {
                        e.flags.insert(Flags::REMOVE);
                        gone = true;
                    }
                }
            }
            Err(_) => {
                if let Some((mode, id)) = new {
                    added.push((path, mode, id, stat));
                }
            }
        }
    }
    if gone {
        index.remove_entries(|_, _, e| e.flags.contains(Flags::REMOVE));
    }
    let sort = !added.is_empty();
    for (path, mode, id, stat) in added {
        index.dangerously_push_entry(stat, id, Flags::empty(), mode, path.as_bstr());
    }
    if sort {
        index.sort_entries();
    }
    let _ = index.remove_tree();
    let _ = index.remove_resolve_undo();
    Some(index)
}

/// Prove an idle workspace against its `record` alone (its worker's index
/// is never read): every tracked file as the record has it (its stat data
/// the record's, else the same content read), nothing deleted, no
/// untracked file that is not ignored, no nested repository. The record
/// with the stat data of the files that had to be read (vouched for as
/// [`Clock`] says), or `None` when the workspace holds anything else.
pub(super) fn prove(
    repo: &gix::Repository,
    record: &gix::index::State,
    clock: Clock,
) -> Result<Option<gix::index::State>, SnapshotError> {
    let plain = record.entries().iter().all(|e| {
        e.stage_raw() == 0
            && e.flags.is_empty()
            && matches!(e.mode, Mode::FILE | Mode::FILE_EXECUTABLE | Mode::SYMLINK)
    });
    if !plain {
        return Ok(None);
    }
    let mut collect = Collect::default();
    worktree_status(repo, record, Side::Workspace, &mut collect)?;
    if !collect.on_disk.is_empty() || !collect.nested_repos.is_empty() || collect.rewrite {
        return Ok(None);
    }
    let mut index = record.clone();
    let entries = index.entries_mut();
    for (idx, stat) in &collect.refreshed {
        if let Some(e) = entries.get_mut(*idx) {
            e.stat = clock.vouch(stat);
        }
    }
    Ok(Some(index))
}
