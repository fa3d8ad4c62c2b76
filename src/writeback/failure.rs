//! The errors a write-back returns: `delegate::write_failed` (and the code
//! the cause decides: disk full, a filter), `delegate::interrupted` rolled
//! back on a signal, and `delegate::rollback_failed` naming the paths left
//! to the user with their kept files (message and JSON details).
//! Never: reads the disk (but whether a journal is still there) or decides a
//! code from an error's message text.

use std::path::Path;

use gix::bstr::ByteSlice;

use super::rollback::Left;
use super::util::Cause;
use crate::error::{Code, Error};

/// The error of a write-back that changed nothing; `cause` (carried as
/// data from where it happened, never read out of `message`) decides the
/// code.
pub(super) fn failed(message: String, cause: Option<Cause>) -> Error {
    if let Some(Cause::Fs(cause)) = cause {
        return Error::state(
            cause.code(),
            message,
            format!(
                "the working tree is as it was before; {}",
                cause
                    .help(None)
                    .replace("that holds it", "that holds the working tree")
            ),
        );
    }
    if let Some(Cause::Filter(driver)) = cause {
        // Named when it is known and prints as it is (design §3.16 "Hints").
        let help = match driver.filter(|d| {
            !d.is_empty() && d.bytes().all(|c| c.is_ascii_alphanumeric() || b"._-".contains(&c))
        }) {
            Some(d) => format!(
                "the working tree is as it was before; fix the filter driver {d}, or make it optional with `git config filter.{d}.required false`, and run `git delegate apply` again"
            ),
            None => "the working tree is as it was before; fix the filter driver (or make it optional with `git config filter.<driver>.required false`) and run `git delegate apply` again".to_string(),
        };
        return Error::state(Code::FilterFailed, message, help);
    }
    Error::state(
        Code::WriteFailed,
        message,
        "the working tree is as it was before; fix the cause (disk space, permissions, a file changed meanwhile) and run `git delegate apply` again",
    )
}

/// `delegate::rollback_failed`: the paths left as they were found, each
/// with the file kept for it, in the message and in the JSON error object
/// (`batch`, `journal`, `paths`).
pub(super) fn rollback_failed(root: &Path, journal: &Path, what: &str, left: &[Left]) -> Error {
    let kept_abs = |l: &Left| {
        l.kept
            .as_ref()
            .map(|k| root.join(crate::sys::paths::to_os(k.as_bstr())))
    };
    let journal_kept = journal.exists();
    let named: Vec<String> = left
        .iter()
        .map(|l| {
            let mut s = if l.path.is_empty() {
                l.detail.clone()
            } else {
                format!(
                    "{}: {}",
                    crate::sys::paths::quote(l.path.as_bstr()),
                    l.detail
                )
            };
            if let Some(k) = kept_abs(l) {
                s.push_str(&format!(
                    ", {} is kept at {}",
                    if l.yours {
                        "your version"
                    } else {
                        "the original"
                    },
                    k.display()
                ));
            }
            s
        })
        .collect();
    let message = format!(
        "{what}: {} left as found ({}); {}",
        if left.len() == 1 {
            "1 path was".to_string()
        } else {
            format!("{} paths were", left.len())
        },
        named.join("; "),
        if journal_kept {
            format!(
                "the journal {} is kept until that is resolved",
                journal.display()
            )
        } else {
            "every other path was put back".to_string()
        }
    );
    let help = if journal_kept {
        "for each path named, keep your version by deleting the kept file, or take the original back by moving the kept file over the path; then run `git delegate gc` (or any command that changes things), which re-checks and finishes the rollback"
    } else {
        "look at the paths named: they hold your version; the rest of the working tree is as it was before the write-back"
    };
    let paths: Vec<serde_json::Value> = left
        .iter()
        .filter(|l| !l.path.is_empty())
        .map(|l| {
            serde_json::json!({
                "path": crate::sys::paths::doc_bytes(&l.path),
                "reason": l.reason.as_str(),
                "kept": kept_abs(l).map(|k| crate::sys::paths::doc_path(&k)),
                "kept_is": l.kept.as_ref().map(|_| if l.yours { "yours" } else { "original" }),
                "message": l.detail,
            })
        })
        .collect();
    let mut details = serde_json::Map::new();
    let batch = journal
        .parent()
        .and_then(|d| d.file_name())
        .map(|n| n.to_string_lossy().into_owned());
    details.insert("batch".into(), serde_json::json!(batch));
    details.insert(
        "journal".into(),
        serde_json::json!(journal_kept.then(|| crate::sys::paths::doc_path(journal))),
    );
    details.insert("paths".into(), serde_json::Value::Array(paths));
    let lossy = |l: &Left| {
        crate::sys::paths::is_lossy(&l.path)
            || kept_abs(l).is_some_and(|k| crate::sys::paths::path_is_lossy(&k))
    };
    crate::sys::paths::note_lossy(
        &mut details,
        left.iter().any(lossy) || (journal_kept && crate::sys::paths::path_is_lossy(journal)),
    );
    Error::state(Code::RollbackFailed, message, help).with_details(details)
}

/// `delegate::interrupted` for a write-back rolled back on a signal.
pub(super) fn interrupted(root: &Path) -> Error {
    let mut details = serde_json::Map::new();
    details.insert("interrupted".into(), serde_json::json!("rolled_back"));
    Error::state(
        Code::Interrupted,
        format!(
            "interrupted by a signal during the write-back into {}: it was rolled back, so every path there is as it was before",
            root.display()
        ),
        "nothing of it was written; run the command again to write it",
    )
    .with_details(details)
}
