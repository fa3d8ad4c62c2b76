//! `git delegate renew` (design §3.6): extend a lease (`renew::renew`; an
//! orphaned lease needs a new owner) and show the batch.

use crate::cli::RenewArgs;
use crate::ui::Ui;
use git_delegate::error::Result;
use git_delegate::writeback::Recovery;

pub fn run(ui: &Ui, args: RenewArgs, recovered: &mut Recovery) -> Result<i32> {
    let owner = args.owner_pid.map(super::owner).transpose()?;
    let source = super::source()?;
    let ttl = match &args.ttl {
        Some(t) => super::parse_ttl(t)?,
        None => source.config.ttl_secs,
    };
    let _lock = super::lock_and_recover(ui, &source, recovered)?;
    let b = git_delegate::ops::renew::renew(
        &source.state_dir(),
        args.batch.batch.as_deref(),
        ttl,
        owner,
    )?;
    if ui.json {
        let t = crate::render::Text::default();
        let doc = crate::render::batch::BatchDoc::new(&t, &source, &b, Default::default());
        ui.doc_after(t.doc(doc), recovered);
    }
    ui.say(&format!(
        "Renewed batch {}: lease expires {}\n",
        b.short(),
        b.lease.expires_at
    ));
    Ok(0)
}
