//! A contained worker's own object folder (design §3.22):
//! `<common-dir>/worktrees/<id>/objects`, inside its worktree's
//! registration, where its git writes the objects it makes
//! (`GIT_OBJECT_DIRECTORY`, with the repository's objects as an alternate),
//! since the shared object store is not writable for it. git itself never
//! looks there (`objects` of a linked worktree's git dir is the common
//! dir's); whatever reads the workspace's index or HEAD takes these
//! objects into the repository's store first ([`take_in`]).
//!
//! Owns: the folder's path, recognising one ([`is_private_dir`]: the
//! environment a contained worker's git commands run with), and taking
//! its objects in: loose objects and packs, each read through a handle
//! that follows no symlink and opens no FIFO or device, inflated and
//! written again by content (so an object file whose name lies lands under
//! its true id, and nothing in the folder is trusted).
//! Never: writes into the folder or removes it (it goes with its
//! registration); lets an unreadable or malformed entry fail the caller
//! (it is skipped: a snapshot that then misses an object says so).

use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};

/// The private object folder of worktree registration `worktree_id`.
pub fn dir(common_dir: &Path, worktree_id: &str) -> PathBuf {
    crate::git::registration::dir(common_dir)
        .join(worktree_id)
        .join("objects")
}

/// Is `dir` (as given, relative to `base`) the private object folder of a
/// registration of the repository at `common_dir`?
pub fn is_private_dir(common_dir: &Path, dir: &Path) -> bool {
    let (Ok(dir), Ok(worktrees)) = (
        std::fs::canonicalize(dir),
        std::fs::canonicalize(crate::git::registration::dir(common_dir)),
    ) else {
        return false;
    };
    dir.file_name().is_some_and(|n| n == "objects")
        && dir.parent().and_then(Path::parent) == Some(worktrees.as_path())
}

fn open_dir_at(at: impl AsFd, name: &Path) -> Option<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    rustix::fs::openat(at, name, flags, Mode::empty()).ok()
}

/// A regular file below `at`, opened without following a symlink and
/// without blocking on a FIFO.
fn open_file_at(at: impl AsFd, name: &std::ffi::OsStr) -> Option<std::fs::File> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(at, name, flags, Mode::empty()).ok()?;
    let st = rustix::fs::fstat(&fd).ok()?;
    (rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::RegularFile)
        .then(|| std::fs::File::from(fd))
}

fn names(dir: &OwnedFd) -> Vec<std::ffi::OsString> {
    use std::os::unix::ffi::OsStrExt;
    let Ok(fd) = rustix::io::dup(dir) else {
        return Vec::new();
    };
    let Ok(rd) = rustix::fs::Dir::new(fd) else {
        return Vec::new();
    };
    rd.flatten()
        .map(|e| std::ffi::OsStr::from_bytes(e.file_name().to_bytes()).to_os_string())
        .filter(|n| n != "." && n != "..")
        .collect()
}

/// Inflate a loose object's bytes (`None`: not a zlib stream).
fn inflate(input: &[u8]) -> Option<Vec<u8>> {
    use gix::zlib::{Decompress, FlushDecompress, Status};
    let mut d = Decompress::new();
    let mut out = Vec::with_capacity(input.len().saturating_mul(2));
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let (was_in, was_out) = (d.total_in(), d.total_out());
        let rest = input.get(was_in as usize..)?;
        let status = d.decompress(rest, &mut buf, FlushDecompress::None).ok()?;
        let made = (d.total_out() - was_out) as usize;
        out.extend_from_slice(&buf[..made]);
        match status {
            Status::StreamEnd => return Some(out),
            Status::BufError => return None,
            Status::Ok if made == 0 && d.total_in() == was_in => return None,
            Status::Ok => {}
        }
    }
}

/// What [`take_in`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Taken {
    /// Objects written into the repository's store.
    pub objects: usize,
    /// Entries skipped: unreadable, not an object, not a regular file.
    pub skipped: usize,
}

/// Take the objects of the private folder `dir` into `repo`'s store (its
/// object memory, when it has one): every loose object and every object of
/// every pack there that the store lacks. A missing folder takes nothing.
/// Fails only when the store cannot be written.
pub fn take_in(repo: &gix::Repository, dir: &Path) -> Result<Taken, gix::Error> {
    let mut taken = Taken::default();
    let Some(root) = open_dir_at(rustix::fs::CWD, dir) else {
        return Ok(taken);
    };
    let hex = repo.object_hash().len_in_hex();
    for fan in names(&root) {
        let fan_s = fan.to_string_lossy();
        if fan == "pack" {
            if let Some(packs) = open_dir_at(&root, Path::new("pack")) {
                take_packs(repo, &packs, &mut taken)?;
            }
            continue;
        }
        if fan_s.len() != 2 || !fan_s.bytes().all(|b| b.is_ascii_hexdigit()) {
            continue;
        }
        let Some(sub) = open_dir_at(&root, Path::new(&fan)) else {
            continue;
        };
        for name in names(&sub) {
            let full = format!("{fan_s}{}", name.to_string_lossy());
            let Ok(id) = gix::ObjectId::from_hex(full.as_bytes()) else {
                continue;
            };
            if full.len() != hex || repo.has_object(id) {
                continue;
            }
            let mut bytes = Vec::new();
            let read =
                open_file_at(&sub, &name).is_some_and(|mut f| f.read_to_end(&mut bytes).is_ok());
            let object = read.then(|| inflate(&bytes)).flatten().and_then(|data| {
                let (kind, size, at) = gix::objs::decode::loose_header(&data).ok()?;
                (data.len() - at == size as usize).then_some((kind, data, at))
            });
            match object {
                Some((kind, data, at)) => {
                    gix::objs::Write::write_buf(repo, kind, &data[at..])?;
                    taken.objects += 1;
                }
                None => taken.skipped += 1,
            }
        }
    }
    Ok(taken)
}

/// The objects of each `*.idx` / `*.pack` pair in `packs`, opened through
/// handles (`/proc/self/fd/N` names the file opened, not a path a worker
/// could swap).
fn take_packs(
    repo: &gix::Repository,
    packs: &OwnedFd,
    taken: &mut Taken,
) -> Result<(), gix::Error> {
    use gix::odb::pack;
    let hash = repo.object_hash();
    for name in names(packs) {
        let name_s = name.to_string_lossy().into_owned();
        let Some(stem) = name_s.strip_suffix(".idx") else {
            continue;
        };
        let (Some(idx), Some(data)) = (
            open_file_at(packs, &name),
            open_file_at(packs, std::ffi::OsStr::new(&format!("{stem}.pack"))),
        ) else {
            taken.skipped += 1;
            continue;
        };
        let at = |f: &std::fs::File| PathBuf::from(format!("/proc/self/fd/{}", f.as_raw_fd()));
        let (Ok(index), Ok(pack)) = (
            pack::index::File::at(at(&idx), hash),
            pack::data::File::at(at(&data), hash),
        ) else {
            taken.skipped += 1;
            continue;
        };
        let bundle = pack::Bundle { pack, index };
        let mut inflate = gix::zlib::Inflate::default();
        let mut buf = Vec::new();
        let ids: Vec<_> = bundle.index.iter().map(|e| e.oid).collect();
        for id in ids {
            if repo.has_object(id) {
                continue;
            }
            match bundle.find(&id, &mut buf, &mut inflate, &mut pack::cache::Never) {
                Ok(Some((obj, _))) => {
                    let kind = obj.kind;
                    let data = obj.data.to_vec();
                    gix::objs::Write::write_buf(repo, kind, &data)?;
                    taken.objects += 1;
                }
                _ => taken.skipped += 1,
            }
        }
    }
    Ok(())
}
