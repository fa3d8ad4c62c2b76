//! Index stat data (the `stat` fields git's index keeps for each entry, its
//! cache of what a file looked like when it was last read): a file's `stat`
//! result as git stores it, for the snapshot's stat cache, the index a
//! checkout writes and the files `ident` rewrites in one.
//!
//! Owns: that conversion (`index_stat`).
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
