//! Paths as git stores them (bytes) and as documents show them (UTF-8).
//!
//! Owns: the conversions between byte paths, OS paths and document strings,
//! and remembering whether a document had to write a path lossily
//! (design §6.2 `lossy_paths`), and which characters a terminal would act on
//! instead of showing; quoting for a shell (`shell_quote`, for the commands
//! hints print); the byte-string types (`BString`, `ByteSlice`) the
//! command layer renders paths from, so it never names the git library.
//! Never: touches the filesystem.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// The byte-string types git paths come in, for the layers above the engine
/// (the commands render them without naming the git library).
pub use gix::bstr::{BStr, BString, ByteSlice};

static LOSSY: AtomicBool = AtomicBool::new(false);

/// Characters a terminal acts on instead of showing: control characters
/// (C0, DEL, C1: ESC starts escape sequences, newline breaks a line) and the
/// Unicode format characters that reorder or hide text (bidi overrides and
/// isolates, zero-width marks).
pub fn is_unprintable(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

/// A document string for raw path bytes: UTF-8 as is, otherwise lossy (and noted).
pub fn doc_bytes(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        Err(_) => {
            LOSSY.store(true, Ordering::Relaxed);
            String::from_utf8_lossy(bytes).into_owned()
        }
    }
}

/// A document string for an OS path.
pub fn doc_path(p: &Path) -> String {
    doc_bytes(p.as_os_str().as_bytes())
}

/// Whether any document string so far was written lossily.
pub fn lossy_seen() -> bool {
    LOSSY.load(Ordering::Relaxed)
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
