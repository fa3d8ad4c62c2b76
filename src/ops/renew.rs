//! Renewing a batch's lease (design §3.6): a new expiry, and an owner kept,
//! replaced or dropped; `commands/renew.rs` renders the batch it returns.
//!
//! Owns: which batch may be renewed (an open one whose prepare completed;
//! an orphaned lease only with a new owner) and whose owner carries over.
//! Never: takes the repository lock (the caller holds it); changes anything
//! but the batch's lease in its `batch.toml`.

use std::path::Path;

use crate::error::{Code, Error, Result};
use crate::record::batch::{self, Batch};
use crate::record::lease::{Lease, State};

/// The command that renews batch `short`'s lease in `state`, as hints print
/// it: an orphaned lease is renewed only with a new owner, so it names the
/// shell the user types it in (`--owner-pid $$`), which then owns the batch.
pub fn command(short: &str, state: State) -> String {
    match state {
        State::Orphaned => format!("git delegate renew {short} --owner-pid $$"),
        _ => format!("git delegate renew {short}"),
    }
}

/// Renew the lease of the open batch `selector` names (or the only one) in
/// `state_dir` for `ttl` seconds; `owner` (pid, start time) is the new
/// owner, if one is given. Returns the batch as saved.
pub fn renew(
    state_dir: &Path,
    selector: Option<&str>,
    ttl: i64,
    owner: Option<(u32, u64)>,
) -> Result<Batch> {
    let mut b = batch::select_open(state_dir, selector)?;
    // A batch whose prepare never completed has no lease worth keeping (design §3.15).
    if let Some(p) = crate::ops::preparing::progress(&b) {
        return Err(crate::ops::preparing::refuse(&b, p));
    }
    if b.lease.state() == State::Orphaned && owner.is_none() {
        return Err(Error::usage(
            Code::OrphanedLease,
            format!(
                "the lease of batch {} is orphaned: its owner process is gone",
                b.short()
            ),
            format!(
                "renew it with a new owner, the shell you run it in: `{}`",
                command(b.short(), State::Orphaned)
            ),
        ));
    }
    // Keep the current owner unless a new one is given; an owner recorded on
    // another host cannot be checked from here, so it is not carried over.
    let same_host = b.lease.host == crate::sys::process::hostname();
    let owner = owner.or(match (b.lease.owner_pid, b.lease.owner_start, same_host) {
        (Some(p), Some(s), true) => Some((p, s)),
        _ => None,
    });
    b.lease = Lease::new(ttl, owner);
    batch::save(state_dir, &b)?;
    Ok(b)
}
