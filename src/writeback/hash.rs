//! Content through the filters: hashing what is on disk as `git add` would,
//! and writing a blob's worktree form as a checkout would.

use std::os::fd::OwnedFd;

use gix::bstr::{BStr, ByteSlice};
use gix::objs::tree::EntryKind;
use gix::ObjectId;
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use super::WritebackError;

use super::dirs::Disk;
use super::failure::{Cause, Failure};
use super::journal::Item;
use super::paths::split;

/// The content filters that cannot be set up: `what` failed, with the gix
/// error. A `WritebackError::Filters` where the write-back has not begun
/// (`check`); a `Failure`, rolled back, where it has.
#[derive(Debug)]
pub(super) struct FilterSetup {
    what: &'static str,
    source: gix::Error,
}

impl From<FilterSetup> for WritebackError {
    fn from(FilterSetup { what, source }: FilterSetup) -> WritebackError {
        WritebackError::Filters { what, source }
    }
}

/// The words and cause `ops::explain` gives a `WritebackError::Filters`
/// (`Error::git`): an OS error of a full, read-only or forbidden
/// filesystem among the gix error's causes names it and decides the code;
/// anything else is told with the gix error.
impl From<FilterSetup> for Failure {
    fn from(FilterSetup { what, source }: FilterSetup) -> Failure {
        let fs = crate::error::io_cause(&source)
            .and_then(|io| crate::error::FsCause::of(io).map(|c| (io, c)));
        match fs {
            Some((io, cause)) => Failure::Because {
                what: format!("{what}: {}", crate::error::describe(io)),
                cause: Some(Cause::Fs(cause)),
            },
            None => Failure::Other(format!("{what}: {source}")),
        }
    }
}

pub(super) struct Hasher<'r> {
    pub(super) pipeline: gix::filter::Pipeline<'r>,
    repo: &'r gix::Repository,
    index: gix::worktree::IndexPersistedOrInMemory,
    hash_kind: gix::hash::Kind,
    file_mode: bool,
    /// `core.symlinks`: where it is false, a symlink is a plain file
    /// holding its target (design §3.15), written and compared as one.
    pub(super) symlinks: bool,
    /// The smudge for content `ident` may expand, made from `pipeline`
    /// when first needed (git's bytes, not gix's: design §3.15).
    ident: Option<crate::git::ident::Smudge<'r>>,
}

impl<'r> Hasher<'r> {
    pub(super) fn new(repo: &'r gix::Repository) -> Result<Hasher<'r>, FilterSetup> {
        let (pipeline, index) = repo.filter_pipeline(None).map_err(|source| FilterSetup {
            what: "cannot set up the content filters",
            source,
        })?;
        Ok(Hasher {
            pipeline,
            repo,
            index,
            hash_kind: repo.object_hash(),
            file_mode: repo
                .config_snapshot()
                .boolean("core.fileMode")
                .unwrap_or(true),
            symlinks: repo
                .filesystem_options()
                .map_err(|source| FilterSetup {
                    what: "cannot read core.symlinks",
                    source,
                })?
                .symlink,
            ident: None,
        })
    }

    /// For writing `F`: as a checkout does, `.gitattributes` files take
    /// their `F` content (a deleted one counts as empty), the others are
    /// read from the disk (where they are the same in `S` and `F`).
    pub(super) fn for_checkout(
        repo: &'r gix::Repository,
        items: &[Item],
    ) -> Result<Hasher<'r>, Failure> {
        let mut hasher = Hasher::new(repo)?;
        let changed: Vec<&Item> = items
            .iter()
            .filter(|i| split(i.path.as_bstr()).1 == ".gitattributes")
            .collect();
        if changed.is_empty() {
            return Ok(hasher);
        }
        let mut state = gix::index::State::new(repo.object_hash());
        for it in changed {
            let id = match it.new {
                Some((_, id)) => id,
                None => repo
                    .write_blob(b"")
                    .map_err(|e| Failure::because(format!("cannot write the empty blob: {e}"), &e))?
                    .detach(),
            };
            state.dangerously_push_entry(
                Default::default(),
                id,
                gix::index::entry::Flags::empty(),
                gix::index::entry::Mode::FILE,
                it.path.as_bstr(),
            );
        }
        state.sort_entries();
        let stack = repo
            .attributes_only(
                &state,
                gix::worktree::stack::state::attributes::Source::IdMappingThenWorktree,
            )
            .map_err(|e| Failure::because(format!("cannot read the result's attributes: {e}"), &e))?
            .detach();
        hasher.pipeline = gix::filter::Pipeline::new(repo, stack)
            .map_err(|e| Failure::because(format!("cannot set up the content filters: {e}"), &e))?;
        hasher.ident = None;
        Ok(hasher)
    }

    /// Whether what is on disk has the kind of the `S` entry `kind`: the
    /// exec bit counts only where git trusts it (`core.fileMode`), and a
    /// plain file stands for a symlink where git makes none
    /// (`core.symlinks = false`; its content is then compared as a file's).
    pub(super) fn kind_matches(&self, disk: Disk, kind: EntryKind) -> bool {
        match (disk, kind) {
            (Disk::File { .. }, EntryKind::Blob | EntryKind::BlobExecutable) if !self.file_mode => {
                true
            }
            (Disk::File { .. }, EntryKind::Link) if !self.symlinks => true,
            (d, k) => d.is_kind(k),
        }
    }

    /// Whether `name` in `dir` (read for the path `rela`) is the `S` entry:
    /// same kind, same blob after the clean filters. Nothing is stored.
    pub(super) fn matches(
        &mut self,
        dir: &OwnedFd,
        name: &BStr,
        rela: &BStr,
        (kind, id): (EntryKind, ObjectId),
    ) -> Result<bool, Failure> {
        let st = match rustix::fs::statat(dir, name.as_bytes(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(Errno::NOENT) => return Ok(false),
            Err(e) => return Err(Failure::io("stat", rela, e)),
        };
        let disk = Disk::from_mode(st.st_mode);
        if !self.kind_matches(disk, kind) {
            return Ok(false);
        }
        let hash_err = |e: &dyn std::fmt::Display| {
            Failure::msg(format!(
                "cannot hash {}: {e}",
                crate::sys::paths::quote(rela)
            ))
        };
        if disk == Disk::Link {
            let data = rustix::fs::readlinkat(dir, name.as_bytes(), Vec::new())
                .map_err(|e| Failure::io("read", rela, e))?
                .into_bytes();
            let got = gix::objs::compute_hash(self.hash_kind, gix::objs::Kind::Blob, &data)
                .map_err(|e| hash_err(&e))?;
            return Ok(got == id);
        }
        let fd = rustix::fs::openat(
            dir,
            name.as_bytes(),
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| Failure::io("open", rela, e))?;
        let mut file = std::io::BufReader::with_capacity(1 << 16, std::fs::File::from(fd));
        let size = file
            .get_ref()
            .metadata()
            .map_err(|e| Failure::io("stat", rela, e))?
            .len();
        let path = crate::sys::paths::to_os(rela);
        // Content no clean filter changes is hashed as it is read (a big
        // file never sits in memory whole); filtered content is what gix
        // converted in memory.
        let got = match self
            .pipeline
            .convert_to_git(&mut file, &path, &self.index)
            .map_err(|e| {
                driver_failed(self.repo, &e, "clean", rela).unwrap_or_else(|| {
                    Failure::because(
                        format!("cannot filter {}: {e}", crate::sys::paths::quote(rela)),
                        &e,
                    )
                })
            })? {
            gix::filter::plumbing::pipeline::convert::ToGitOutcome::Unchanged(_) => None,
            gix::filter::plumbing::pipeline::convert::ToGitOutcome::Buffer(buf) => Some(
                gix::objs::compute_hash(self.hash_kind, gix::objs::Kind::Blob, buf)
                    .map_err(|e| hash_err(&e))?,
            ),
            gix::filter::plumbing::pipeline::convert::ToGitOutcome::Process(mut read) => {
                let mut buf = Vec::new();
                std::io::Read::read_to_end(&mut read, &mut buf)
                    .map_err(|e| Failure::io("read", rela, e))?;
                Some(
                    gix::objs::compute_hash(self.hash_kind, gix::objs::Kind::Blob, &buf)
                        .map_err(|e| hash_err(&e))?,
                )
            }
        };
        let got = match got {
            Some(got) => got,
            None => match crate::git::blob::hash_reader(self.hash_kind, size, &mut file) {
                // More than `size` bytes: it grew while it was read.
                Ok(_)
                    if std::io::Read::read(&mut file, &mut [0u8; 1])
                        .map_err(|e| Failure::io("read", rela, e))?
                        > 0 =>
                {
                    return Ok(false)
                }
                Ok(got) => got,
                // The file changed size while it was read: not `S`.
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(false),
                Err(e) => return Err(Failure::io("read", rela, e)),
            },
        };
        Ok(got == id)
    }

    /// Write a blob's worktree form (smudge filters, `eol`) into `out`.
    pub(super) fn smudge_into(
        &mut self,
        data: &[u8],
        rela: &BStr,
        out: &mut dyn std::io::Write,
    ) -> Result<(), Failure> {
        let cannot_filter = |e: &gix::Error| {
            Failure::because(
                format!("cannot filter {}: {e}", crate::sys::paths::quote(rela)),
                e,
            )
        };
        let written = if crate::git::ident::may_expand(data) {
            let pipeline = &self.pipeline;
            let smudge = self
                .ident
                .get_or_insert_with(|| crate::git::ident::Smudge::new(pipeline));
            match smudge.write(data, rela, out) {
                Ok(()) => Ok(()),
                Err(crate::git::ident::Failed::Filter(e)) => return Err(cannot_filter(&e)),
                Err(crate::git::ident::Failed::Write(e)) => Err(e),
            }
        } else {
            let opts = gix::filter::plumbing::pipeline::convert::to_worktree::Options {
                can_delay: gix::filter::plumbing::driver::apply::Delay::Forbid,
                ..Default::default()
            };
            let mut converted = self
                .pipeline
                .convert_to_worktree(data, rela, opts)
                .map_err(|e| cannot_filter(&e))?;
            std::io::copy(&mut converted, out).map(|_| ())
        };
        written.map_err(|e| {
            driver_failed(self.repo, &e, "smudge", rela)
                .unwrap_or_else(|| Failure::io("write", rela, e))
        })?;
        Ok(())
    }
}

/// `err`, when a filter driver failed with it (`direction`: "clean" while
/// hashing what is on disk, "smudge" while writing), named on `rela` with
/// the driver's exit status and its name.
fn driver_failed(
    repo: &gix::Repository,
    err: &(dyn std::error::Error + 'static),
    direction: &str,
    rela: &BStr,
) -> Option<Failure> {
    let status = crate::git::blob::driver_failure(err)?;
    let said = if direction == "clean" {
        crate::git::blob::FILTER_FAILED_CLEAN
    } else {
        crate::git::blob::FILTER_FAILED
    };
    Some(Failure::filter(
        format!("{said} on {}: {status}", crate::sys::paths::quote(rela)),
        crate::git::blob::failed_driver(repo, err, direction),
    ))
}

/// The SHA-1 of raw bytes as they are on disk (no object header, no
/// filters), in hex: what the journal records of a file or symlink target
/// write-back put in place.
pub(super) fn raw_sha1(bytes: &[u8]) -> String {
    let mut h = gix::hash::hasher(gix::hash::Kind::Sha1);
    h.update(bytes);
    finish(h)
}

fn finish(h: gix::hash::Hasher) -> String {
    // SHA-1 detects a collision attack instead of hashing it; that content
    // then proves nothing, and an empty id matches no record.
    h.try_finalize()
        .map(|id| id.to_string())
        .unwrap_or_default()
}

/// `raw_sha1` of everything `read` yields, and how many bytes that was.
pub(super) fn raw_sha1_reader(read: &mut dyn std::io::Read) -> std::io::Result<(String, u64)> {
    let mut h = gix::hash::hasher(gix::hash::Kind::Sha1);
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0u64;
    loop {
        let n = match read.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        h.update(&buf[..n]);
        total += n as u64;
    }
    Ok((finish(h), total))
}

/// A writer that passes the bytes on and hashes them as `raw_sha1` does.
pub(super) struct Tee<'w> {
    inner: &'w mut dyn std::io::Write,
    hasher: gix::hash::Hasher,
}

impl<'w> Tee<'w> {
    pub(super) fn new(inner: &'w mut dyn std::io::Write) -> Tee<'w> {
        Tee {
            inner,
            hasher: gix::hash::hasher(gix::hash::Kind::Sha1),
        }
    }

    pub(super) fn sha1(self) -> String {
        finish(self.hasher)
    }
}

impl std::io::Write for Tee<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Code, Error, FsCause};

    /// A write-back that cannot set up its filters once it has begun fails
    /// with the words and the cause it had when the `WritebackError` was
    /// worded first and its code read back (`Failure::from_error`, gone).
    #[test]
    fn a_filter_setup_failure_has_the_words_of_its_error() {
        use rustix::io::Errno;
        let os = |n: Errno| {
            move || gix::Error::from_error(std::io::Error::from_raw_os_error(n.raw_os_error()))
        };
        let makers: Vec<Box<dyn Fn() -> gix::Error>> = vec![
            Box::new(os(Errno::NOSPC)),
            Box::new(os(Errno::ROFS)),
            Box::new(os(Errno::ACCESS)),
            Box::new(os(Errno::IO)),
            Box::new(|| gix::Error::from_error(std::fmt::Error)),
        ];
        let what = "cannot set up the content filters";
        for make in makers {
            let worded = Error::from(WritebackError::from(FilterSetup {
                what,
                source: make(),
            }));
            let cause = match worded.code {
                Code::FilterFailed => Some(Cause::Filter(None)),
                c => c.fs_cause().map(Cause::Fs),
            };
            let fail = Failure::from(FilterSetup {
                what,
                source: make(),
            });
            assert_eq!((fail.to_string(), fail.cause()), (worded.message, cause));
        }
        let fail = Failure::from(FilterSetup {
            what,
            source: os(Errno::NOSPC)(),
        });
        assert_eq!(
            (fail.to_string().as_str(), fail.cause()),
            (
                "cannot set up the content filters: no space left on device (ENOSPC, os error 28)",
                Some(Cause::Fs(FsCause::Full))
            )
        );
    }
}
