//! A prepare under way: the `[preparing]` table of a batch record (who
//! prepares it) and whether that prepare still runs (`progress`; the
//! `preparing` command gives it its meaning).
//!
//! Owns: the marker's fields and the liveness check of its process.
//! Never: removes what an interrupted prepare left (`ops::preparing` does).

use serde::{Deserialize, Serialize};

use super::Batch;

/// Who is preparing the batch: recorded before anything is made.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Marker {
    pub pid: u32,
    /// Start time of that process in clock ticks since boot (`/proc/PID/stat`
    /// field 22), so a recycled pid is not taken for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<u64>,
    pub host: String,
    pub started_at: String,
}

impl Marker {
    /// The marker of this process.
    pub fn mine() -> Marker {
        let pid = std::process::id();
        Marker {
            pid,
            start: crate::sys::process::process_start(pid),
            host: crate::sys::process::hostname(),
            started_at: crate::sys::time::rfc3339(crate::sys::time::now()),
        }
    }
}

/// Where an incomplete batch stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Its prepare still runs.
    Preparing,
    /// Its prepare was killed: the batch is not live, whatever its lease says.
    Interrupted,
}

impl Progress {
    pub fn as_str(self) -> &'static str {
        match self {
            Progress::Preparing => "preparing",
            Progress::Interrupted => "interrupted",
        }
    }
}

/// `None` for a complete batch; otherwise whether its prepare still runs.
/// On another host the process cannot be checked: there the batch counts
/// as being prepared until its lease expires.
pub fn progress(b: &Batch) -> Option<Progress> {
    let m = b.preparing.as_ref()?;
    let alive = if m.host == crate::sys::process::hostname() {
        m.start.is_some() && crate::sys::process::process_start(m.pid) == m.start
    } else {
        crate::sys::time::now() < b.lease.expires_at_secs()
    };
    Some(if alive {
        Progress::Preparing
    } else {
        Progress::Interrupted
    })
}
