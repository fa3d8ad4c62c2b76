//! Big blobs without holding them in memory: hashing and storing a working
//! tree file, hashing a reader, and reading a blob back from the object
//! store, all streamed in fixed-size chunks.
//!
//! gix 0.90 reads whole objects: `write_blob_stream` collects its input in a
//! buffer, `find_object` inflates the whole object, and its filter pipeline
//! converts in memory. Files up to [`STREAM_ABOVE`] bytes keep using those
//! (they are fast and small); above it:
//! - a working-tree file that no clean filter changes is hashed while it is
//!   read, and only if the object store lacks that blob is it read again and
//!   written as a loose object, streamed through zlib. Such a blob goes
//!   straight to the object store even when the repository keeps new
//!   objects in memory (an unreferenced object costs nothing; keeping it in
//!   memory would cost its size);
//! - a loose blob is read back through an inflating reader; a packed one is
//!   read whole (gix has no streaming pack reader; apply's new blobs are loose);
//! - content that a filter does change (`text`/`eol` conversion, `ident`,
//!   `working-tree-encoding`) or that a filter driver produces is converted
//!   in memory by gix, as before;
//! - a file written out keeps holes where its content has whole blocks of
//!   zeros ([`Sparse`]), as `cp --sparse=auto` does: a 1 GiB sparse file
//!   lands as sparse as the worker left it.
//!
//! Owns: the streaming paths for big blobs, and the error of a file that
//! could not be stored or written out (`BlobError`: a full or read-only
//! object store, a failing filter driver: its name, command and exit
//! status; found out in `failure`, holes written by `holes`);
//! `ops::explain` words them.
//! Never: changes the working tree or refs; a blob it writes always has
//! the id of the bytes written (gix hashes them while writing); words a
//! help line or decides an error code (`ops::explain` does).

use std::io::{BufReader, Read, Seek};
use std::path::PathBuf;

use gix::bstr::{BStr, BString};
use gix::filter::plumbing::pipeline::convert::ToGitOutcome;
use gix::objs::tree::EntryKind;
use gix::ObjectId;

mod failure;
mod holes;

pub use failure::*;
pub use holes::*;

/// Why a file could not be stored as a blob or checked out: its real cause.
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    /// The clean filters of a working tree (its attributes).
    #[error("cannot set up filters")]
    Filters {
        #[source]
        source: gix::Error,
    },
    /// A `required` filter driver, not known by name, whose `direction`
    /// (`clean` or `smudge`) process failed on `place` with `status`.
    #[error("a {direction} filter driver failed on {place}: {status}")]
    FilterFailed {
        direction: &'static str,
        place: String,
        status: String,
    },
    /// The same, for the driver `filter.<driver>` running `command`.
    #[error("the {direction} filter `{driver}` ({command}) failed on {place}: {status}")]
    DriverFailed {
        direction: &'static str,
        driver: String,
        command: String,
        place: String,
        status: String,
    },
    /// A long-running filter process that could not be started for `place`.
    #[error("the filter `{driver}` ({command}) could not be started for {place}: is `{program}` installed and on PATH?")]
    ProcessStart {
        driver: String,
        command: String,
        program: String,
        place: String,
    },
    /// A filter process that stopped answering in a checkout into `root`.
    #[error("the smudge filter `{driver}` ({command}) failed while checking out {} (such as {example}): it stopped answering ({said})", root.display())]
    ProcessStopped {
        driver: String,
        command: String,
        root: PathBuf,
        example: String,
        said: String,
    },
    /// The object store could not take the file `path` of the working tree
    /// `root`: full, read-only or denied (`cause`, of the OS error in it).
    #[error("cannot store {} of {} in {}", crate::sys::paths::quote(path.as_ref()), root.display(), objects.display())]
    Store {
        path: BString,
        root: PathBuf,
        objects: PathBuf,
        cause: crate::error::FsCause,
        #[source]
        source: gix::Error,
    },
    /// The file `path` of the working tree `root` could not be read.
    #[error("cannot read {} in {}: {source}", crate::sys::paths::quote(path.as_ref()), root.display())]
    Unreadable {
        path: BString,
        root: PathBuf,
        #[source]
        source: gix::Error,
    },
}

/// Files and blobs larger than this are streamed.
pub const STREAM_ABOVE: u64 = 8 << 20;

const CHUNK: usize = 1 << 20;

/// The blob id of `size` bytes read from `reader` (exactly that many; fewer is an error).
pub fn hash_reader(
    kind: gix::hash::Kind,
    size: u64,
    reader: &mut dyn Read,
) -> std::io::Result<ObjectId> {
    let mut hasher = gix::hash::hasher(kind);
    hasher.update(&gix::objs::encode::loose_header(
        gix::objs::Kind::Blob,
        size,
    ));
    let mut buf = vec![0u8; CHUNK.min(size as usize).max(1)];
    let mut left = size;
    while left > 0 {
        let want = buf.len().min(left as usize);
        let n = reader.read(&mut buf[..want])?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the file became shorter while it was read",
            ));
        }
        hasher.update(&buf[..n]);
        left -= n as u64;
    }
    hasher.try_finalize().map_err(std::io::Error::other)
}

/// The clean filters `git add` would apply in `repo`'s working tree:
/// attributes from the working tree's files, then from `index`.
pub fn add_pipeline<'r>(
    repo: &'r gix::Repository,
    index: &gix::index::State,
) -> Result<gix::filter::Pipeline<'r>, BlobError> {
    let git = |source: gix::Error| BlobError::Filters { source };
    let attributes = repo
        .attributes_only(
            index,
            gix::worktree::stack::state::attributes::Source::WorktreeThenIdMapping,
        )
        .map_err(git)?;
    gix::filter::Pipeline::new(repo, attributes.detach()).map_err(git)
}

/// Like gix's `Pipeline::worktree_file_to_object` (clean filters, exec bit,
/// symlinks, `None` for what cannot be tracked), but a big file that no
/// clean filter changes is streamed: hashed first, written only when the
/// object store lacks it. Smaller files, symlinks and filtered content take
/// gix's own path.
pub fn worktree_file_to_object(
    repo: &gix::Repository,
    pipeline: &mut gix::filter::Pipeline<'_>,
    rela_path: &BStr,
    index: &gix::index::State,
) -> Result<Option<(ObjectId, EntryKind, std::fs::Metadata)>, gix::Error> {
    let other = |e: std::io::Error| gix::Error::from_error(e);
    let Some(workdir) = repo.workdir() else {
        return pipeline.worktree_file_to_object(rela_path, index);
    };
    let rela = crate::sys::paths::to_os(rela_path);
    let path = workdir.join(&rela);
    let md = match std::fs::symlink_metadata(&path) {
        Ok(md) => md,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(other(e)),
    };
    if !md.is_file() || md.len() <= STREAM_ABOVE {
        return pipeline.worktree_file_to_object(rela_path, index);
    }
    use std::os::unix::fs::PermissionsExt;
    let kind = if md.permissions().mode() & 0o111 != 0 {
        EntryKind::BlobExecutable
    } else {
        EntryKind::Blob
    };
    let file = std::fs::File::open(&path).map_err(other)?;
    let size = file.metadata().map_err(other)?.len();
    let mut reader = BufReader::with_capacity(CHUNK, file);
    let filtered = match pipeline.convert_to_git(&mut reader, &rela, index)? {
        ToGitOutcome::Unchanged(_) => None,
        ToGitOutcome::Buffer(buf) => Some(repo.write_blob(buf)?.detach()),
        ToGitOutcome::Process(mut read) => Some(repo.write_blob_stream(&mut read)?.detach()),
    };
    let id = match filtered {
        Some(id) => id,
        None => {
            let id = hash_reader(repo.object_hash(), size, &mut reader).map_err(other)?;
            if repo.has_object(id) {
                id
            } else {
                let mut file = reader.into_inner();
                file.rewind().map_err(other)?;
                let mut limited = BufReader::with_capacity(CHUNK, file).take(size);
                // The inner store, not the object memory: written as it is read.
                gix::objs::Write::write_stream(
                    &*repo.objects,
                    gix::objs::Kind::Blob,
                    size,
                    &mut limited,
                )?
            }
        }
    };
    Ok(Some((id, kind, md)))
}

/// A reader of a blob's content: streamed (inflated chunk by chunk) when it
/// is a big loose object, else read whole.
pub fn open(repo: &gix::Repository, id: ObjectId) -> Result<Box<dyn Read>, gix::Error> {
    let header = repo.find_header(id)?;
    if header.size() > STREAM_ABOVE {
        if let gix::odb::find::Header::Loose { .. } = header {
            if let Some(r) = Loose::open(repo, id) {
                return Ok(Box::new(r));
            }
        }
    }
    let blob = repo.find_blob(id)?;
    Ok(Box::new(std::io::Cursor::new(blob.detach().data)))
}

/// Copy `from` into `to` in chunks of a megabyte.
pub fn copy(from: &mut dyn Read, to: &mut dyn std::io::Write) -> std::io::Result<u64> {
    let mut buf = vec![0u8; CHUNK];
    let mut total = 0;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        to.write_all(&buf[..n])?;
        total += n as u64;
    }
}

/// The size of a blob's content, from its header.
pub fn size(repo: &gix::Repository, id: ObjectId) -> Result<u64, gix::Error> {
    Ok(repo.find_header(id)?.size())
}

/// A loose object's content, inflated as it is read.
struct Loose {
    file: BufReader<std::fs::File>,
    state: gix::zlib::Decompress,
    /// Content bytes still to come.
    left: u64,
}

impl Loose {
    /// `None` when the object is not a readable loose blob of this
    /// repository's own object folder (the caller then reads it whole).
    fn open(repo: &gix::Repository, id: ObjectId) -> Option<Loose> {
        let hex = id.to_hex().to_string();
        let path = repo
            .common_dir()
            .join("objects")
            .join(&hex[..2])
            .join(&hex[2..]);
        let file = std::fs::File::open(path).ok()?;
        let mut r = Loose {
            file: BufReader::with_capacity(CHUNK, file),
            state: gix::zlib::Decompress::new(),
            left: u64::MAX,
        };
        // The header: `blob <size>\0`, at most 28 bytes.
        let mut head = [0u8; 32];
        let mut got = 0;
        while got < head.len() {
            let n = gix::zlib::stream::inflate::read(
                &mut r.file,
                &mut r.state,
                &mut head[got..got + 1],
            )
            .ok()?;
            if n == 0 {
                return None;
            }
            got += 1;
            if head[got - 1] == 0 {
                break;
            }
        }
        let (kind, size, used) = gix::objs::decode::loose_header(&head[..got]).ok()?;
        (kind == gix::objs::Kind::Blob && used == got).then_some(())?;
        r.left = size;
        Some(r)
    }
}

impl Read for Loose {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 || buf.is_empty() {
            return Ok(0);
        }
        let want = buf.len().min(self.left.min(usize::MAX as u64) as usize);
        let n =
            gix::zlib::stream::inflate::read(&mut self.file, &mut self.state, &mut buf[..want])?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "a loose object ended early",
            ));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

/// Whether writing `rela_path` out for the working tree changes nothing
/// about its content (no `eol`, `ident`, encoding or filter driver applies
/// to it), so its blob can be copied as it is. Probed with a small text
/// that every such conversion would change.
pub fn smudge_is_identity(pipeline: &mut gix::filter::Pipeline<'_>, rela_path: &BStr) -> bool {
    let opts = gix::filter::plumbing::pipeline::convert::to_worktree::Options {
        can_delay: gix::filter::plumbing::driver::apply::Delay::Forbid,
        ..Default::default()
    };
    let probe: &[u8] = b"$Id$\nx\n";
    match pipeline.convert_to_worktree(probe, rela_path, opts) {
        Ok(out) => !out.is_changed(),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn hash_reader_matches_git() {
        // `printf hello | git hash-object --stdin`
        let id = hash_reader(gix::hash::Kind::Sha1, 5, &mut &b"hello"[..]).unwrap();
        assert_eq!(id.to_string(), "b6fc4c620b67d95f953a5c1c1230aaab5db5a1b0");
        assert!(hash_reader(gix::hash::Kind::Sha1, 6, &mut &b"hello"[..]).is_err());
    }

    #[test]
    fn zero_blocks_become_holes_and_the_bytes_are_the_same() {
        let dir = std::env::temp_dir().join(format!("gd-sparse-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // Data, 16 MiB of zeros, data that straddles a block, zeros at the end.
        let mut want = b"head".to_vec();
        want.resize(want.len() + (16 << 20), 0);
        want.extend_from_slice(&[7u8; 5000]);
        want.resize(want.len() + (4 << 20), 0);
        for chunk in [4095usize, 4096, 65536, 1 << 20] {
            let path = dir.join(format!("f{chunk}"));
            let file = std::fs::File::create(&path).unwrap();
            let mut w = Sparse::new(&file);
            for piece in want.chunks(chunk) {
                w.write_all(piece).unwrap();
            }
            w.finish().unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), want, "chunk {chunk}");
            if chunk >= 4096 {
                use std::os::unix::fs::MetadataExt;
                let allocated = std::fs::metadata(&path).unwrap().blocks() * 512;
                // Holes where the filesystem keeps them (tmpfs, ext4, xfs, btrfs).
                assert!(
                    allocated < 4 << 20,
                    "chunk {chunk}: {allocated} bytes allocated"
                );
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
