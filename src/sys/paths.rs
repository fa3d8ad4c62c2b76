//! Paths as git stores them (bytes) and as documents show them (UTF-8).
//!
//! Owns: the conversions between byte paths, OS paths and document strings,
//! and telling whether one is written lossily (design §6.2 `lossy_paths`:
//! the command layer decides the field, from what it is told), and which characters a terminal would act on
//! instead of showing; quoting for a shell (`shell_quote`, for the commands
//! hints print); the byte-string types (`BString`, `ByteSlice`) the
//! command layer renders paths from, so it never names the git library.
//! Never: touches the filesystem.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The byte-string types git paths come in, for the layers above the engine
/// (the commands render them without naming the git library).
pub use gix::bstr::{BStr, BString, ByteSlice};

/// Characters a terminal acts on instead of showing: control characters
/// (C0, DEL, C1: ESC starts escape sequences, newline breaks a line) and the
/// Unicode format characters that reorder or hide text (bidi overrides and
/// isolates, zero-width marks).
pub fn is_unprintable(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

/// A document string for raw path bytes: UTF-8 as is, otherwise lossy
/// (see [`is_lossy`]).
pub fn doc_bytes(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A document string for an OS path.
pub fn doc_path(p: &Path) -> String {
    doc_bytes(p.as_os_str().as_bytes())
}

/// Whether [`doc_bytes`] writes `bytes` lossily (they are not UTF-8).
pub fn is_lossy(bytes: &[u8]) -> bool {
    std::str::from_utf8(bytes).is_err()
}

/// Whether [`doc_path`] writes `p` lossily.
pub fn path_is_lossy(p: &Path) -> bool {
    is_lossy(p.as_os_str().as_bytes())
}

/// The key of an error's details (`Error::with_details`) saying that a
/// path in them was written lossily; the command layer turns it into the
/// document's `lossy_paths`, never into a field of the error.
pub const LOSSY_DETAIL: &str = "lossy_paths";

/// Say in `details` that a path in them was written lossily, when `lossy`.
pub fn note_lossy(details: &mut serde_json::Map<String, serde_json::Value>, lossy: bool) {
    if lossy {
        details.insert(LOSSY_DETAIL.into(), serde_json::Value::Bool(true));
    }
}

/// A repo-relative byte path as a filesystem path.
pub fn to_os(path: &BStr) -> PathBuf {
    PathBuf::from(OsStr::from_bytes(path))
}

/// `s` quoted for a POSIX shell when it needs it, for commands hints print
/// (design §3.16 "Hints").
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"/._-+:@%".contains(&c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// A path quoted for human text, like git quotes unusual names.
pub fn quote(path: &BStr) -> String {
    let plain = path
        .iter()
        .all(|&b| b.is_ascii_graphic() && b != b'"' && b != b'\\' || b == b' ');
    if plain && !path.is_empty() {
        return path.to_string();
    }
    let mut s = String::from("\"");
    for &b in path.iter() {
        match b {
            b'"' => s.push_str("\\\""),
            b'\\' => s.push_str("\\\\"),
            b'\n' => s.push_str("\\n"),
            b'\t' => s.push_str("\\t"),
            0x20..=0x7e => s.push(b as char),
            _ => s.push_str(&format!("\\{b:03o}")),
        }
    }
    s.push('"');
    s
}
