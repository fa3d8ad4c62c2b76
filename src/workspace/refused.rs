//! A folder below (or on the way to) the workspace root that
//! `shared_root` refused, and why (design §3.18 "Shared workspace roots"):
//! the facts its error (`WorkspaceError::Unsafe`) and `gc`'s
//! `unsafe_folders` carry, and how they read for people.
//!
//! Owns: `Reason` (as written in JSON, docs/json.md) and `Refused`, with
//! the owner named from `/etc/passwd`.
//! Never: opens, enters or removes the folder (`shared_root` does the
//! walk); imports another module of `workspace/` (its error names it).

use std::path::PathBuf;

/// Why a folder below (or on the way to) the workspace root was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// A symbolic link where a folder is expected (or another user's
    /// symlink on the way to the root).
    Symlink,
    /// Something that is not a folder where one is expected.
    NotAFolder,
    /// A folder the current user does not own.
    OtherOwner,
    /// A folder on the way to the root that every user may write in, without
    /// the sticky bit: anyone could rename what is in it.
    WritableByOthers,
    /// A task's folder that is not where prepare puts workspaces
    /// (`<workspace root>/<repo>-<fp>/<batch>/<task>`): its batch record,
    /// which a worker can edit, names it (design §3.18).
    NotInLayout,
}

impl Reason {
    /// As written in JSON (`unsafe_folders[].reason`, docs/json.md).
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Symlink => "symlink",
            Reason::NotAFolder => "not_a_folder",
            Reason::OtherOwner => "other_owner",
            Reason::WritableByOthers => "writable_by_others",
            Reason::NotInLayout => "not_in_layout",
        }
    }
}

/// A folder refused: never entered, read or removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub path: PathBuf,
    /// The uid owning what is there.
    pub owner: u32,
    pub reason: Reason,
}

impl Refused {
    /// What is wrong with it, for people: "is a symbolic link owned by
    /// bob (uid 12345), not a folder".
    pub fn describe(&self) -> String {
        let owner = owner_name(self.owner);
        match self.reason {
            Reason::Symlink => format!("is a symbolic link owned by {owner}, not a folder"),
            Reason::NotAFolder => format!("is not a folder (owned by {owner})"),
            Reason::OtherOwner => format!("is owned by another user, {owner}"),
            Reason::WritableByOthers => format!(
                "can be changed by every user (writable by all, without the sticky bit; owned by {owner})"
            ),
            Reason::NotInLayout => "is not where prepare puts a workspace (<workspace root>/<repo>-<fingerprint>/<batch>/<task>): the batch record, which its workers can edit, names it".to_string(),
        }
    }
}

/// `name (uid N)` from `/etc/passwd`, or `uid N`.
fn owner_name(uid: u32) -> String {
    let name = std::fs::read("/etc/passwd").ok().and_then(|text| {
        text.split(|&b| b == b'\n').find_map(|line| {
            let mut fields = line.split(|&b| b == b':');
            let name = fields.next()?;
            let _password = fields.next()?;
            let id = std::str::from_utf8(fields.next()?)
                .ok()?
                .parse::<u32>()
                .ok()?;
            (id == uid && !name.is_empty()).then(|| String::from_utf8_lossy(name).into_owned())
        })
    });
    match name {
        Some(n) => format!("{n} (uid {uid})"),
        None => format!("uid {uid}"),
    }
}
