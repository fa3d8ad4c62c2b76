//! Index stat data (the `stat` fields git's index keeps for each entry, its
//! cache of what a file looked like when it was last read): a file's `stat`
//! result as git stores it, for the snapshot's stat cache, the index a
//! checkout writes and the files `ident` rewrites in one.
//!
//! Owns: that conversion (`index_stat`, and `of_metadata` for an `lstat`
//! result read through std).
//! Never: reads or writes a file or an index itself.

/// Index stat data from the fields of a `stat` result, truncated as git's
/// index stores them (times before 1970 as zero).
pub fn index_stat(
    mtime: (i64, i64),
    ctime: (i64, i64),
    dev: u64,
    ino: u64,
    (uid, gid): (u32, u32),
    size: u64,
) -> gix::index::entry::Stat {
    let time = |(secs, nsecs): (i64, i64)| {
        if secs < 0 {
            gix::index::entry::stat::Time::default()
        } else {
            gix::index::entry::stat::Time {
                secs: secs as u32,
                nsecs: nsecs as u32,
            }
        }
    };
    gix::index::entry::Stat {
        mtime: time(mtime),
        ctime: time(ctime),
        dev: dev as u32,
        ino: ino as u32,
        uid,
        gid,
        size: size as u32,
    }
}

/// Index stat data from an `lstat` result read through std, as
/// `gix::index::entry::Stat::from_fs` makes it (the snapshot's stat cache and
/// the files `ident` rewrites share this one conversion).
pub fn of_metadata(md: &std::fs::Metadata) -> gix::index::entry::Stat {
    use std::os::unix::fs::MetadataExt;
    index_stat(
        (md.mtime(), md.mtime_nsec()),
        (md.ctime(), md.ctime_nsec()),
        md.dev(),
        md.ino(),
        (md.uid(), md.gid()),
        md.len(),
    )
}
