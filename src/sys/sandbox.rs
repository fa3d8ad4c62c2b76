//! Kernel containment of a started command (design §3.22): a Landlock
//! ruleset that lets the command write only beneath the folders (and
//! files) its caller names, and optionally denies it new TCP connections
//! and listening sockets. Landlock is applied by the process to itself: the
//! ruleset is built here, in the parent, before the fork (its folders
//! opened, the ruleset file descriptor made), and the child only calls
//! `prctl(PR_SET_NO_NEW_PRIVS)` and `landlock_restrict_self` between fork
//! and exec ([`Prepared::install`]): two system calls, no allocation, no
//! lock, as a `pre_exec` hook must be.
//!
//! Owns: asking the kernel which Landlock ABI it has ([`support`], with the
//! test-only switch [`TEST_NO_LANDLOCK`] that plays a kernel without it);
//! which access rights are handled (writing, removing, renaming, making
//! and truncating files and folders, from ABI 1 to 3, best effort: an older
//! kernel enforces what it knows); the rules; the network rule (ABI 4).
//! Never: decides which folders a command may write (its callers do), nor
//! handles reading or executing (a contained command reads what it could
//! read before), nor prints.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Command;

use landlock::{
    AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, ABI,
};

/// Test-only: set to `1`, git-delegate behaves as on a kernel without
/// Landlock (design §3.22; docs/testing.md).
pub const TEST_NO_LANDLOCK: &str = "GIT_DELEGATE_TEST_NO_LANDLOCK";

/// The first Landlock ABI with network rules.
pub const NETWORK_ABI: u8 = 4;

/// What the kernel offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    /// Landlock, at this ABI version.
    Landlock(u8),
    /// No Landlock: the kernel lacks it, it is disabled at boot, or the
    /// test-only switch plays that.
    Absent,
}

impl Support {
    pub fn abi(self) -> Option<u8> {
        match self {
            Support::Landlock(abi) => Some(abi),
            Support::Absent => None,
        }
    }
}

/// The running kernel's Landlock ABI (`landlock_create_ruleset` with
/// `LANDLOCK_CREATE_RULESET_VERSION`), or [`Support::Absent`].
pub fn support() -> Support {
    if std::env::var_os(TEST_NO_LANDLOCK).is_some_and(|v| v == "1") {
        return Support::Absent;
    }
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: the version query reads no memory (a null attribute, size 0).
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    match u8::try_from(v) {
        Ok(abi) if abi >= 1 => Support::Landlock(abi),
        _ => Support::Absent,
    }
}

/// The access rights a contained command is refused outside what it may
/// write: every write-like right up to ABI 3 (ABI 2 adds renaming and
/// linking across folders, ABI 3 truncation). Reading, executing, device
/// ioctls (ABI 5) and connecting to unix sockets are not handled, so they
/// stay as they were.
fn handled() -> landlock::BitFlags<AccessFs> {
    AccessFs::from_write(ABI::V3)
}

/// What a command may write: folders (everything beneath them) and
/// single files, each held open so the rule is for the thing opened.
#[derive(Debug, Default)]
pub struct Plan {
    /// Contain writes at all (false: only the network rule, if any).
    pub files: bool,
    /// Folders and files it may write, with the path they were opened at
    /// (for messages).
    pub writable: Vec<(PathBuf, OwnedFd)>,
    /// Deny new TCP connections and listening sockets (ABI 4 and later).
    pub no_network: bool,
}

impl Plan {
    /// Open `path` (following symlinks: a system path or a folder the user
    /// named) for a rule; `None` when it is not there.
    pub fn open(path: &Path) -> Option<OwnedFd> {
        use rustix::fs::{Mode, OFlags};
        rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()).ok()
    }
}

/// A ruleset made, to be applied in a child ([`Prepared::install`]).
#[derive(Debug)]
pub struct Prepared {
    ruleset: Option<RulesetCreated>,
    /// The kernel's ABI (None: no Landlock).
    pub abi: Option<u8>,
    /// Writes are contained.
    pub files: bool,
    /// New TCP connections and listening sockets are denied.
    pub network_denied: bool,
}

/// Why a ruleset could not be made.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SandboxError(String);

/// Make the ruleset of `plan` for a kernel with `support` (nothing to
/// apply without Landlock, or when the plan contains nothing).
pub fn prepare(plan: &Plan, support: Support) -> Result<Prepared, SandboxError> {
    let Support::Landlock(abi) = support else {
        return Ok(Prepared {
            ruleset: None,
            abi: None,
            files: false,
            network_denied: false,
        });
    };
    let network = plan.no_network && abi >= NETWORK_ABI;
    if !plan.files && !network {
        return Ok(Prepared {
            ruleset: None,
            abi: Some(abi),
            files: false,
            network_denied: false,
        });
    }
    let err = |e: landlock::RulesetError| SandboxError(e.to_string());
    let mut ruleset = Ruleset::default().set_compatibility(CompatLevel::BestEffort);
    if plan.files {
        ruleset = ruleset.handle_access(handled()).map_err(err)?;
    }
    if network {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(err)?;
    }
    let mut created = ruleset.create().map_err(err)?;
    if plan.files {
        for (_, fd) in &plan.writable {
            created = created
                .add_rule(PathBeneath::new(fd, handled()))
                .map_err(err)?;
        }
    }
    // No network rule is added: with the rights handled, every TCP bind
    // and connect is refused.
    Ok(Prepared {
        ruleset: Some(created),
        abi: Some(abi),
        files: plan.files,
        network_denied: network,
    })
}

impl Prepared {
    /// Apply the ruleset in `cmd`'s child, between fork and exec. A child
    /// that cannot restrict itself fails to start (the error is `spawn`'s),
    /// never runs unconfined.
    pub fn install(self, cmd: &mut Command) {
        use std::os::unix::process::CommandExt;
        let Some(ruleset) = self.ruleset else {
            return;
        };
        let mut ruleset = Some(ruleset);
        // SAFETY: the hook runs in the forked child, which may only make
        // async-signal-safe calls. `restrict_self` makes two system calls
        // (prctl, landlock_restrict_self), builds a plain status value and
        // closes the ruleset's descriptor: no allocation, no lock (its
        // error holds the raw errno). `take` moves a value already in the
        // child's memory.
        unsafe {
            cmd.pre_exec(move || match ruleset.take() {
                Some(r) => match r.restrict_self() {
                    Ok(_) => Ok(()),
                    Err(_) => Err(std::io::Error::last_os_error()),
                },
                None => Ok(()),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handled_rights_are_writes_only() {
        let h = handled();
        assert!(h.contains(AccessFs::WriteFile | AccessFs::RemoveFile | AccessFs::Truncate));
        assert!(!h.contains(AccessFs::ReadFile));
        assert!(!h.contains(AccessFs::Execute));
        assert!(!h.intersects(AccessFs::from_read(ABI::V3)));
    }
}
