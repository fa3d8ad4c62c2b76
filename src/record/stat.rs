//! git-delegate's own stat record of a workspace (design §3.20, §3.18): an
//! index file of git-delegate's, never the worktree's own (which its worker
//! can write, and forge: new stat data beside an old blob id). It holds
//! the entries of the tree the workspace was last known to hold, each with
//! the stat data git-delegate took itself when it wrote or read that file
//! (zero where it cannot vouch for them: that file is read next time). A
//! task's is `<batch-dir>/<task>.index`, written by prepare beside the
//! index it gives the workspace; an idle workspace's is
//! `<state>/pool/<id>.index` (`record::pool::stat_of`), written when it
//! goes idle from what apply read.
//!
//! Owns: where the records lie, reading one ([`read`]: `None` when it is
//! missing or cannot be decoded) and writing one ([`save`]: no trailing
//! checksum, as git's `index.skipHash` writes it, so reading it costs no
//! hash pass; temp file and rename, not fsync'd: a cache that a crash may
//! leave missing or stale, never torn in place).
//! Never: decides what a record holds (`snapshot` vouches for what it
//! read, `workspace` for what it wrote) or trusts a worktree's index.

use std::path::{Path, PathBuf};

use crate::sys::fs::FsError;

/// The file name ending of a stat record.
pub const EXT: &str = "index";

/// The stat record of task `task`'s workspace in the batch folder `batch_dir`.
pub fn of_task(batch_dir: &Path, task: &str) -> PathBuf {
    batch_dir.join(format!("{task}.{EXT}"))
}

/// The record at `path`, when it is there and decodes. Its timestamp is
/// the file's modification time: an entry whose file was changed at or
/// after it is racy, as in any index.
pub fn read(path: &Path, hash: gix::hash::Kind) -> Option<gix::index::State> {
    gix::index::File::at(path, hash, true, Default::default())
        .ok()
        .map(gix::index::State::from)
}

/// Write `state` as the record at `path` (entries only: no extension).
pub fn save(path: &Path, state: &gix::index::State) -> Result<(), FsError> {
    let mut bytes = Vec::with_capacity(state.entries().len() * 96 + 64);
    let options = gix::index::write::Options {
        extensions: gix::index::write::Extensions::None,
        skip_hash: true,
    };
    state.write_to(&mut bytes, options).map_err(|e| {
        FsError::Path(crate::sys::fs::PathError::on("write", path)(
            std::io::Error::other(e),
        ))
    })?;
    // A null trailer: git's `index.skipHash` (readers skip the check).
    bytes.extend(std::iter::repeat_n(0u8, state.object_hash().len_in_bytes()));
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| FsError::from(crate::sys::fs::PathError::on("create", dir)(e)))?;
    }
    crate::sys::fs::write_replacing(path, &bytes, false)
}

/// Remove the record at `path` (gone already is fine).
pub fn remove(path: &Path) -> Result<(), FsError> {
    crate::sys::fs::remove_file(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips_without_a_checksum_and_junk_reads_as_none() {
        let tmp = tempfile::tempdir().unwrap();
        let path = of_task(tmp.path(), "1");
        assert!(read(&path, gix::hash::Kind::Sha1).is_none());
        let mut state = gix::index::State::new(gix::hash::Kind::Sha1);
        let stat = gix::index::entry::Stat {
            mtime: gix::index::entry::stat::Time { secs: 5, nsecs: 7 },
            ctime: gix::index::entry::stat::Time { secs: 6, nsecs: 8 },
            dev: 1,
            ino: 42,
            uid: 3,
            gid: 4,
            size: 9,
        };
        let id = gix::ObjectId::empty_blob(gix::hash::Kind::Sha1);
        state.dangerously_push_entry(
            stat,
            id,
            gix::index::entry::Flags::empty(),
            gix::index::entry::Mode::FILE,
            "a/b.txt".into(),
        );
        save(&path, &state).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[bytes.len() - 20..], &[0u8; 20]);
        let back = read(&path, gix::hash::Kind::Sha1).unwrap();
        assert_eq!(back.entries().len(), 1);
        assert_eq!(back.entries()[0].stat, stat);
        assert_eq!(back.entries()[0].id, id);
        assert_eq!(back.entries()[0].path(&back), "a/b.txt");
        std::fs::write(&path, b"DIRC junk").unwrap();
        assert!(read(&path, gix::hash::Kind::Sha1).is_none());
        remove(&path).unwrap();
        remove(&path).unwrap();
        assert_eq!(
            super::super::pool::stat_of(tmp.path(), "0123456789ab"),
            tmp.path().join("pool/0123456789ab.index")
        );
    }
}
