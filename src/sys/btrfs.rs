//! btrfs subvolumes for snapshot workspaces (design §3.17): whether a
//! folder is on btrfs (the `statfs` magic, detected, never configured),
//! making a subvolume and a writable snapshot of one (the
//! `BTRFS_IOC_SUBVOL_CREATE` and `BTRFS_IOC_SNAP_CREATE_V2` ioctls, which
//! any user may call in a folder they can write), a subvolume's stable
//! identity (its per-subvolume `f_fsid`: the device number `stat` reports
//! for a subvolume is an anonymous one the kernel may hand out differently
//! after a remount), and removing an emptied subvolume the way a user
//! without privileges can (`rmdir`, which Linux allows on an empty
//! subvolume since 4.18, else `BTRFS_IOC_SNAP_DESTROY` where the mount or
//! the user's privileges permit it).
//!
//! Owns: the btrfs ioctls and the filesystem probe.
//! Never: deletes a subvolume that holds anything (removal empties it
//! first, through a held handle, in `workspace`, `trash`), follows a
//! symlink, or decides when to snapshot (`workspace` does). A leaf: it
//! imports no other module of the crate.

// `stat` field widths differ between targets: the casts are deliberate.
#![allow(clippy::unnecessary_cast)]

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

use rustix::fs::{self as rfs, AtFlags, Mode, OFlags};
use rustix::io::Errno;
use rustix::ioctl::{opcode, Setter};

/// `BTRFS_SUPER_MAGIC`, the `f_type` of a btrfs `statfs`.
const SUPER_MAGIC: u64 = 0x9123_683E;
/// The inode number of every subvolume's root folder (`BTRFS_FIRST_FREE_OBJECTID`).
const SUBVOL_ROOT_INO: u64 = 256;
const IOCTL_MAGIC: u8 = 0x94;

/// `struct btrfs_ioctl_vol_args` (4096 bytes).
#[repr(C)]
struct VolArgs {
    fd: i64,
    name: [u8; 4088],
}

/// `struct btrfs_ioctl_vol_args_v2` (4096 bytes; the unions as their
/// plain-bytes members).
#[repr(C)]
struct VolArgsV2 {
    fd: i64,
    transid: u64,
    flags: u64,
    unused: [u64; 4],
    name: [u8; 4040],
}

const SUBVOL_CREATE: rustix::ioctl::Opcode = opcode::write::<VolArgs>(IOCTL_MAGIC, 14);
const SNAP_DESTROY: rustix::ioctl::Opcode = opcode::write::<VolArgs>(IOCTL_MAGIC, 15);
const SNAP_CREATE_V2: rustix::ioctl::Opcode = opcode::write::<VolArgsV2>(IOCTL_MAGIC, 23);

fn vol_args(name: &[u8]) -> rustix::io::Result<VolArgs> {
    let mut args = VolArgs {
        fd: 0,
        name: [0; 4088],
    };
    if name.is_empty() || name.len() >= args.name.len() || name.contains(&0) {
        return Err(Errno::NAMETOOLONG);
    }
    args.name[..name.len()].copy_from_slice(name);
    Ok(args)
}

/// Is the folder `fd` holds open on btrfs?
pub fn is_btrfs(fd: BorrowedFd<'_>) -> bool {
    rfs::fstatfs(fd).is_ok_and(|s| s.f_type as u64 == SUPER_MAGIC)
}

/// Would a workspace made at `dir` (which may not exist yet: its nearest
/// existing ancestor is asked) be on btrfs, where this user can remove a
/// subvolume again (Linux 4.18 or later lets the owner `rmdir` an empty
/// subvolume; before that only a privileged user can)?
pub fn can_snapshot_at(dir: &Path) -> bool {
    let mut at = Some(dir);
    while let Some(d) = at {
        match rfs::statfs(d) {
            Ok(s) => return s.f_type as u64 == SUPER_MAGIC && can_remove_subvolumes(),
            Err(Errno::NOENT) | Err(Errno::NOTDIR) => at = d.parent(),
            Err(_) => return false,
        }
    }
    false
}

/// Can this process remove a subvolume it made (an empty one, by `rmdir`)?
fn can_remove_subvolumes() -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    let uname = rustix::system::uname();
    let release = uname.release().to_string_lossy();
    let mut parts = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (4, 18)
}

/// The folder at `path` opened without following a symlink at its end.
fn open_dir(path: &Path) -> rustix::io::Result<OwnedFd> {
    rfs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// The parent folder of `path`, opened, and `path`'s last name.
fn parent_and_name(path: &Path) -> rustix::io::Result<(OwnedFd, &[u8])> {
    use std::os::unix::ffi::OsStrExt;
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(Errno::INVAL);
    };
    Ok((open_dir(parent)?, name.as_bytes()))
}

/// Make the new, empty subvolume `path` (its parent must exist).
pub fn create_subvolume(path: &Path) -> std::io::Result<()> {
    let (parent, name) = parent_and_name(path)?;
    let args = vol_args(name)?;
    // SAFETY: SUBVOL_CREATE takes a `struct btrfs_ioctl_vol_args`, which
    // `VolArgs` is (same layout and size), and only reads it.
    unsafe { rustix::ioctl::ioctl(&parent, Setter::<SUBVOL_CREATE, VolArgs>::new(args)) }?;
    Ok(())
}

/// Make `dst` (which must not exist; its parent must) a writable snapshot
/// of the subvolume `src`.
pub fn snapshot(src: &Path, dst: &Path) -> std::io::Result<()> {
    let source = open_dir(src)?;
    let (parent, name) = parent_and_name(dst)?;
    let mut args = VolArgsV2 {
        fd: i64::from(std::os::fd::AsRawFd::as_raw_fd(&source)),
        transid: 0,
        // Not BTRFS_SUBVOL_RDONLY: a workspace is written in.
        flags: 0,
        unused: [0; 4],
        name: [0; 4040],
    };
    if name.is_empty() || name.len() >= args.name.len() {
        return Err(Errno::NAMETOOLONG.into());
    }
    args.name[..name.len()].copy_from_slice(name);
    // SAFETY: SNAP_CREATE_V2 takes a `struct btrfs_ioctl_vol_args_v2`,
    // which `VolArgsV2` is (same layout and size), and only reads it;
    // `source` stays open for the call.
    unsafe { rustix::ioctl::ioctl(&parent, Setter::<SNAP_CREATE_V2, VolArgsV2>::new(args)) }?;
    drop(source);
    Ok(())
}

/// The stable identity of the subvolume whose root folder `fd` holds open
/// (`None` when it is not the root of a btrfs subvolume): the filesystem
/// id `statfs` reports, which btrfs derives from the filesystem's UUID and
/// the subvolume's id, so it survives a remount, unlike the device number.
pub fn subvolume_id(fd: BorrowedFd<'_>) -> Option<u64> {
    let st = rfs::fstat(fd).ok()?;
    if st.st_ino as u64 != SUBVOL_ROOT_INO || !is_btrfs(fd) {
        return None;
    }
    rfs::fstatvfs(fd).ok().map(|s| s.f_fsid)
}

/// Remove the empty folder `name` in `dir`, which may be a subvolume's
/// root: `rmdir` (enough for an empty subvolume on Linux 4.18 and later),
/// and where that is refused for a subvolume, `BTRFS_IOC_SNAP_DESTROY`
/// (permitted to privileged users, or with the `user_subvol_rm_allowed`
/// mount option) after checking once more that it is empty.
pub fn remove_empty_dir_at(dir: BorrowedFd<'_>, name: &[u8]) -> rustix::io::Result<()> {
    let err = match rfs::unlinkat(dir, name, AtFlags::REMOVEDIR) {
        Ok(()) => return Ok(()),
        Err(e @ (Errno::PERM | Errno::ACCESS)) => e,
        Err(e) => return Err(e),
    };
    let Ok(sub) = rfs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return Err(err);
    };
    if subvolume_id(sub.as_fd()).is_none() || !is_empty(sub.as_fd())? {
        return Err(err);
    }
    drop(sub);
    let args = vol_args(name)?;
    // SAFETY: SNAP_DESTROY takes a `struct btrfs_ioctl_vol_args`, which
    // `VolArgs` is, and only reads it.
    unsafe { rustix::ioctl::ioctl(dir, Setter::<SNAP_DESTROY, VolArgs>::new(args)) }
        .map_err(|_| err)
}

/// Does the opened folder hold nothing but `.` and `..`?
fn is_empty(dir: BorrowedFd<'_>) -> rustix::io::Result<bool> {
    let mut d = rfs::Dir::read_from(dir)?;
    while let Some(entry) = d.read() {
        let name = entry?.file_name().to_bytes().to_vec();
        if name != b"." && name != b".." {
            return Ok(false);
        }
    }
    Ok(true)
}

/// [`remove_empty_dir_at`] by path.
pub fn remove_empty_dir(path: &Path) -> std::io::Result<()> {
    let (parent, name) = parent_and_name(path)?;
    Ok(remove_empty_dir_at(parent.as_fd(), name)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_layouts_match_the_kernel() {
        assert_eq!(std::mem::size_of::<VolArgs>(), 4096);
        assert_eq!(std::mem::size_of::<VolArgsV2>(), 4096);
        // _IOW(0x94, 14, struct btrfs_ioctl_vol_args), as <linux/btrfs.h> has it.
        assert_eq!(SUBVOL_CREATE as u64, 0x5000_940E);
        assert_eq!(SNAP_DESTROY as u64, 0x5000_940F);
        assert_eq!(SNAP_CREATE_V2 as u64, 0x5000_9417);
    }

    #[test]
    fn a_missing_folder_is_asked_through_its_ancestors() {
        // Whatever the temp folder is, asking below it never fails.
        let _ = can_snapshot_at(&std::env::temp_dir().join("no/such/folder"));
        assert!(!can_snapshot_at(Path::new("/proc/self")));
    }
}
