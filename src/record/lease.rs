//! Leases (design §1): a batch's claim on its workspaces, with an expiry, an
//! optional owner process (pid + start time, so a recycled pid is not taken
//! for the owner) and the host it was made on.
//!
//! Owns: the one function that decides a lease's state, used by every command.
//! Never: signals or changes any process.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Lease {
    pub expires_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_pid: Option<u32>,
    /// Start time of the owner in clock ticks since boot (`/proc/PID/stat` field 22).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_start: Option<u64>,
    pub host: String,
    #[serde(default)]
    pub released: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Live,
    Expired,
    Orphaned,
    Released,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Live => "live",
            State::Expired => "expired",
            State::Orphaned => "orphaned",
            State::Released => "released",
        }
    }

    /// Expired or orphaned (design §1 "stale").
    pub fn is_stale(self) -> bool {
        matches!(self, State::Expired | State::Orphaned)
    }
}

impl Lease {
    pub fn new(ttl_secs: i64, owner: Option<(u32, u64)>) -> Lease {
        Lease {
            // Durations are checked when parsed (`time::duration`); should
            // one still not fit, the lease ends at the last second the
            // calendar holds rather than wrapping into the past.
            expires_at: crate::sys::time::rfc3339(
                crate::sys::time::deadline(crate::sys::time::now(), ttl_secs)
                    .unwrap_or(crate::sys::time::MAX_SECS),
            ),
            owner_pid: owner.map(|o| o.0),
            owner_start: owner.map(|o| o.1),
            host: crate::sys::process::hostname(),
            released: false,
        }
    }

    pub fn expires_at_secs(&self) -> i64 {
        crate::sys::time::parse_rfc3339(&self.expires_at).unwrap_or(0)
    }

    /// The lease's state now. On another host the owner cannot be checked,
    /// so only the expiry counts there.
    pub fn state(&self) -> State {
        if self.released {
            return State::Released;
        }
        if let (Some(pid), true) = (self.owner_pid, self.host == crate::sys::process::hostname()) {
            if crate::sys::process::process_start(pid) != self.owner_start
                || self.owner_start.is_none()
            {
                return State::Orphaned;
            }
        }
        if crate::sys::time::now() >= self.expires_at_secs() {
            State::Expired
        } else {
            State::Live
        }
    }
}
