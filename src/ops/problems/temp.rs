//! Temporary files a killed command left in the state folder (design
//! §3.18 "Leftovers"): which names git-delegate's temporary files have,
//! which are old enough to count as left over, and whose folder holds each.
//!
//! Owns: finding them (for `status` and `gc`).
//! Never: removes one (gc does), or follows a symlink.

use super::*;

/// How old a temporary file must be to count as left over (design §3.18
/// "Leftovers"): a command still writing one wrote it more recently.
pub const TEMP_FILE_AGE_SECS: u64 = 3600;

/// Is `name` one of the temporary files git-delegate makes in its state
/// folder: `fs::write_atomic`'s `.<name>.tmp-<pid>`, the write-back
/// journal's `writeback.journal.tmp` (design §7), the stat cache's
/// `source-index.<pid>-<nanos>.tmp` (`snapshot`)?
fn is_temp_name(name: &[u8]) -> bool {
    let cache = format!("{}.", snapshot::CACHE_FILE);
    crate::sys::fs::is_temp_name(name)
        || name == format!("{}.tmp", batch::JOURNAL_FILE).as_bytes()
        || (name.starts_with(cache.as_bytes()) && name.ends_with(b".tmp"))
}

/// The temporary files of git-delegate below `state_dir` that were last
/// written more than [`TEMP_FILE_AGE_SECS`] ago, each with the id of the
/// batch or undo entry whose folder holds it (empty for other folders).
/// Only the killed command that made one could still want it; symlinks are
/// never followed (a symlink is never one of them).
pub fn old_temp_files(state_dir: &Path) -> Vec<(String, TempFile)> {
    use std::os::unix::ffi::OsStrExt;
    let mut out = Vec::new();
    let mut stack = vec![(state_dir.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let Ok(ft) = e.file_type() else { continue };
            let path = e.path();
            if ft.is_dir() {
                // batches/<id>/, undo/<id>/, kept/<batch>/ and a little below.
                if depth < 4 {
                    stack.push((path, depth + 1));
                }
                continue;
            }
            if !ft.is_file() || !is_temp_name(e.file_name().as_bytes()) {
                continue;
            }
            let Ok(md) = e.metadata() else { continue };
            let age_secs = md
                .modified()
                .ok()
                .and_then(|m| m.elapsed().ok())
                .map_or(0, |d| d.as_secs());
            if age_secs <= TEMP_FILE_AGE_SECS {
                continue;
            }
            out.push((
                temp_owner(state_dir, &path),
                TempFile {
                    path,
                    bytes: md.len(),
                    age_secs,
                },
            ));
        }
    }
    out.sort_by(|a, b| a.1.path.cmp(&b.1.path));
    out
}

/// The id of the batch or undo entry whose folder holds `path`: the folder
/// below `batches/`, `undo/` or `kept/` (a hidden `.<id>.new` or
/// `.<id>.removed-<pid>` named by its id); empty for any other place.
fn temp_owner(state_dir: &Path, path: &Path) -> String {
    let Ok(rel) = path.strip_prefix(state_dir) else {
        return String::new();
    };
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    match parts.as_slice() {
        [top, id, _, ..] if ["batches", "undo", "kept"].contains(&top.as_str()) => {
            let id = id.strip_prefix('.').unwrap_or(id);
            let id = id.strip_suffix(".new").unwrap_or(id);
            id.split(".removed-").next().unwrap_or(id).to_string()
        }
        _ => String::new(),
    }
}
