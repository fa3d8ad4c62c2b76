//! The names a batch record holds: task names and labels (design §1, §3).
//!
//! Owns: what makes a task name valid (a folder and a ref component) and a
//! label that could be read as an id.
//! Never: touches disk.

use super::{BatchError, Result};

/// Could `label` ever be read as a batch id or id prefix (design §3: hex
/// digits and hyphens, 4 or more characters, any case)? Such labels are
/// refused: a label is tried before an id prefix, so it would shadow one.
pub fn label_reads_as_id(label: &str) -> bool {
    label.len() >= 4 && label.bytes().all(|c| c.is_ascii_hexdigit() || c == b'-')
}

/// Validate a task name (design §1).
pub fn valid_task_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}

/// Refuse a task name that cannot name a folder and a ref component.
pub fn check_task_name(name: &str) -> Result<()> {
    // Task names become folder names and ref components: refuse what git refs refuse too.
    if !valid_task_name(name)
        || name.contains("..")
        || name.ends_with('.')
        || name.ends_with(".lock")
    {
        return Err(BatchError::BadTaskName {
            name: name.to_string(),
        });
    }
    Ok(())
}
