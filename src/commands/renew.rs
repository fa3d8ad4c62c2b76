//! `git delegate renew` (SPEC §3.6): extend a lease; an orphaned lease needs
//! a new owner.

use crate::batch;
use crate::cli::RenewArgs;
use crate::error::{Error, Result};
use crate::lease::{Lease, State};
use crate::ui::Ui;
use crate::writeback::Recovery;

pub fn run(ui: &Ui, args: RenewArgs, recovered: &mut Recovery) -> Result<i32> {
    let owner = args.owner_pid.map(super::owner).transpose()?;
    let source = super::source()?;
    let ttl = match &args.ttl {
        Some(t) => super::parse_ttl(t)?,
        None => source.config.ttl_secs,
    };
    let _lock = super::lock_and_recover(ui, &source, recovered)?;
    let mut b = batch::select_open(&source.state_dir(), args.batch.as_deref())?;
    // A batch whose prepare never completed has no lease worth keeping (SPEC §3.15).
    if let Some(p) = crate::preparing::progress(&b) {
        return Err(crate::preparing::refuse(&b, p));
    }
    if b.lease.state() == State::Orphaned && owner.is_none() {
        return Err(Error::usage(
            "delegate::orphaned_lease",
            format!(
                "the lease of batch {} is orphaned: its owner process is gone",
                b.short()
            ),
            "renew it with a new owner: `git delegate renew BATCH --owner-pid PID`",
        ));
    }
    // Keep the current owner unless a new one is given; an owner recorded on
    // another host cannot be checked from here, so it is not carried over.
    let same_host = b.lease.host == crate::lease::hostname();
    let owner = owner.or(match (b.lease.owner_pid, b.lease.owner_start, same_host) {
        (Some(p), Some(s), true) => Some((p, s)),
        _ => None,
    });
    b.lease = Lease::new(ttl, owner);
    batch::save(&source.state_dir(), &b)?;
    if ui.json {
        ui.doc_after(super::batch_doc(&source, &b, None), recovered);
    }
    ui.say(&format!(
        "Renewed batch {}: lease expires {}\n",
        b.short(),
        b.lease.expires_at
    ));
    Ok(0)
}
