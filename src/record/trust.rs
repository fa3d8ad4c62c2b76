//! The `delegate.toml` the user confirmed (design §3.18 "Commands from the
//! shared git dir"): a worker in a linked worktree can write
//! `<common-dir>/delegate.toml`, so the commands it names run only from the
//! file the user confirmed. Kept in `<common-dir>/delegate/confirmed/`: a
//! copy of the confirmed file's bytes (`delegate.toml`, absent when the
//! confirmed state is "no file") and `state.toml`, the confirmed file's
//! identity (the SHA-256 of its bytes, or `none`), and whether a batch's
//! end found the file changed (`pending`: changed while a batch was open;
//! then the file as it is once no batch is open is not the user's as long
//! as a command in it differs from the confirmed one).
//!
//! Owns: that record (its files and format), a file's identity, and noting
//! a file changed while a batch was open when a batch ends ([`batch_ended`],
//! which `batch::remove_state` calls).
//! Never: decides what runs (`ops::trust` does), or writes `delegate.toml`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::Digest;

use crate::record::TomlError;

/// The record's folder in the state folder.
pub const DIR: &str = "confirmed";
/// The record's state file in [`DIR`].
const STATE: &str = "state.toml";
/// The identity of "there is no file".
pub const NONE: &str = "none";

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct State {
    /// The confirmed file's identity: `sha256:<hex>` or [`NONE`].
    confirmed: String,
    /// A batch's end found the file changed (and not confirmed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pending: bool,
}

/// The record as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confirmed {
    /// The confirmed file's identity (`sha256:<hex>` or [`NONE`]).
    pub identity: String,
    /// Its text: `None` when there was no file, or when the copy is gone
    /// or no longer matches the identity (then no command of it is known).
    pub text: Option<String>,
    /// A batch's end found the file changed since it was confirmed.
    pub pending: bool,
}

/// `<common-dir>/delegate.toml` for the state folder `<common-dir>/delegate`.
pub fn file_of(state_dir: &Path) -> PathBuf {
    state_dir
        .parent()
        .unwrap_or(Path::new("."))
        .join("delegate.toml")
}

fn dir_of(state_dir: &Path) -> PathBuf {
    state_dir.join(DIR)
}

/// The copy of the confirmed file (`config::confirmed_copy`, which help
/// lines name).
fn copy_of(state_dir: &Path) -> PathBuf {
    crate::config::confirmed_copy(&file_of(state_dir))
}

/// A file's identity: `sha256:<hex of its bytes>`, or [`NONE`].
pub fn identity(bytes: Option<&[u8]>) -> String {
    match bytes {
        Some(b) => {
            let digest = sha2::Sha256::digest(b);
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            format!("sha256:{hex}")
        }
        None => NONE.to_string(),
    }
}

/// The bytes of `delegate.toml` now (`None`: there is none; unreadable
/// counts as none: loading the config names that failure).
pub fn read_file(state_dir: &Path) -> Option<Vec<u8>> {
    std::fs::read(file_of(state_dir)).ok()
}

/// The record, `None` when there is none (or it cannot be read: a record
/// nobody can read confirms nothing).
pub fn read(state_dir: &Path) -> Option<Confirmed> {
    let dir = dir_of(state_dir);
    let text = std::fs::read_to_string(dir.join(STATE)).ok()?;
    let state: State = toml::from_str(&text).ok()?;
    let copy = match state.confirmed.as_str() {
        NONE => None,
        id => std::fs::read(copy_of(state_dir))
            .ok()
            .filter(|b| identity(Some(b)) == id)
            .and_then(|b| String::from_utf8(b).ok()),
    };
    Some(Confirmed {
        identity: state.confirmed,
        text: copy,
        pending: state.pending,
    })
}

/// Record `bytes` (`None`: no file) as the file the user confirmed: the
/// copy first, then the state naming it, each temp-then-rename.
pub fn confirm(state_dir: &Path, bytes: Option<&[u8]>) -> Result<(), TomlError> {
    let dir = dir_of(state_dir);
    std::fs::create_dir_all(&dir).map_err(|e| {
        crate::sys::fs::FsError::from(crate::sys::fs::PathError::on("create", &dir)(e))
    })?;
    let copy = copy_of(state_dir);
    match bytes {
        Some(b) => crate::sys::fs::write_atomic(&copy, b)?,
        None => crate::sys::fs::remove_file(&copy)?,
    }
    let state = State {
        confirmed: identity(bytes),
        pending: false,
    };
    crate::record::write_toml(&dir.join(STATE), &state)
}

/// Clear [`Confirmed::pending`] (the file is the confirmed one again).
pub fn clear_pending(state_dir: &Path, record: &Confirmed) -> Result<(), TomlError> {
    let state = State {
        confirmed: record.identity.clone(),
        pending: false,
    };
    crate::record::write_toml(&dir_of(state_dir).join(STATE), &state)
}

/// A batch ends (its state is removed): a `delegate.toml` that differs
/// from the confirmed one now was changed while a batch was open (or
/// before, and prepare left its commands out), so it is marked `pending`.
/// Best effort: a record that cannot be written leaves the file as
/// unconfirmed as it was while batches were open.
pub fn batch_ended(state_dir: &Path) {
    let Some(record) = read(state_dir) else {
        return;
    };
    let now = identity(read_file(state_dir).as_deref());
    if now == record.identity || record.pending {
        return;
    }
    let state = State {
        confirmed: record.identity,
        pending: true,
    };
    let _ = crate::record::write_toml(&dir_of(state_dir).join(STATE), &state);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confirmed_files_round_trip_and_a_changed_file_is_noted_when_a_batch_ends() {
        let tmp = std::env::temp_dir().join(format!("gd-trust-{}", std::process::id()));
        let state = tmp.join("delegate");
        std::fs::create_dir_all(&state).unwrap();
        assert_eq!(read(&state), None);
        // No record: a batch's end notes nothing.
        batch_ended(&state);
        assert_eq!(read(&state), None);

        std::fs::write(tmp.join("delegate.toml"), "[lease]\nttl = \"2h\"\n").unwrap();
        confirm(&state, read_file(&state).as_deref()).unwrap();
        let r = read(&state).unwrap();
        assert_eq!(r.text.as_deref(), Some("[lease]\nttl = \"2h\"\n"));
        assert!(r.identity.starts_with("sha256:"));
        batch_ended(&state);
        assert!(!read(&state).unwrap().pending);

        std::fs::write(tmp.join("delegate.toml"), "[apply]\nverify = \"x\"\n").unwrap();
        batch_ended(&state);
        let r = read(&state).unwrap();
        assert!(r.pending);
        assert_eq!(r.text.as_deref(), Some("[lease]\nttl = \"2h\"\n"));
        clear_pending(&state, &r).unwrap();
        assert!(!read(&state).unwrap().pending);

        // A copy that no longer matches its identity gives no text.
        std::fs::write(state.join(DIR).join("delegate.toml"), "forged").unwrap();
        assert_eq!(read(&state).unwrap().text, None);

        // "No file" is a state of its own.
        confirm(&state, None).unwrap();
        let r = read(&state).unwrap();
        assert_eq!((r.identity.as_str(), r.text), (NONE, None));
        assert!(!state.join(DIR).join("delegate.toml").exists());
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
