//! `git delegate apply [BATCH]` (design §3.2): parse the arguments, run the
//! transaction (`git_delegate::ops::apply::run`: recording, integration,
//! write-back, clean-up, and with `--refresh-conflicts` the refresh after
//! it), and render its report (`render::apply`, `render::human::apply`).
//! `apply --kept` and `apply --from-undo` are other transactions,
//! dispatched by `commands::run`.
//!
//! Owns: what an apply prints, and in which order.
//! Never: does git, filesystem or process work (the engine's `apply` does);
//! words the task table or hints (`render::human` does).

use crate::cli::ApplyArgs;
use crate::render::apply::ApplyDoc;
use crate::ui::Ui;
use git_delegate::error::Result;
use git_delegate::ops::apply::Report;
use git_delegate::writeback::Recovery;

pub fn run(ui: &Ui, args: ApplyArgs, recovered: &mut Recovery) -> Result<i32> {
    let here = super::source()?;
    let opts = git_delegate::ops::apply::Options {
        batch: args.batch.batch,
        only: args.only,
        discard: args.discard,
        keep: args.keep,
        strict: args.strict,
        dry_run: args.dry_run,
        verify: args.verify,
        no_verify: args.no_verify,
        verify_timeout_secs: super::parse_ttl_opt(args.verify_timeout.as_deref())?,
        verify_jobs: args.verify_jobs.map(usize::from),
        refresh_conflicts: args.refresh_conflicts,
    };
    let shown = super::CommandObserver::new(ui);
    let report = git_delegate::ops::apply::run(here, &opts, &shown);
    shown.recovered_into(recovered);
    let report = report?;
    let refreshed = &report.refreshed;

    // Report.
    if ui.json {
        let t = crate::render::Text::default();
        let mut doc = report_doc(&t, &report);
        match refreshed {
            Some(Ok(r)) => doc.refreshed = Some(crate::render::refresh::RefreshTask::list(&t, r)),
            Some(Err(e)) => {
                doc.refresh_error = Some(crate::render::ErrorBody::new(e.code, &e.message, &e.help))
            }
            None => {}
        }
        ui.doc_after(t.doc(doc), recovered);
    }
    say(ui, &report, args.keep, args.verbose);
    match refreshed {
        Some(Ok(r)) => ui.say(&super::refresh::human(ui, r)),
        Some(Err(e)) => ui.warn(&format!(
            "git-delegate: the conflicting tasks were not refreshed: {} ({})\n  help: {}\n",
            crate::ui::escape_text(&e.message),
            e.code.as_str(),
            crate::ui::escape_text(&e.help)
        )),
        None => {}
    }
    if report.interrupted {
        super::tell_finished(
            ui,
            &format!("the write-back into {}", super::show(&report.batch.source)),
        );
    }
    // A write-back the filesystem refused: exit 3; a command left out of
    // an unconfirmed delegate.toml: exit 1 (design §3.18).
    let code = if let Some(e) = report.refused_by_filesystem() {
        e.exit_code()
    } else if report.all_ok() && !report.interrupted && report.untrusted.is_none() {
        0
    } else {
        1
    };
    Ok(match refreshed {
        Some(Err(e)) => code.max(e.exit_code()),
        _ => code,
    })
}

/// The whole apply document of `report` (design §6.2, §6.4); `run` embeds it too.
pub(super) fn report_doc(t: &crate::render::Text, report: &Report) -> ApplyDoc {
    let mut doc = ApplyDoc::of_report(t, report);
    doc.warnings = report.remote_left.as_ref().map(super::remote::left_docs);
    doc
}

/// The human text of `report` (stdout) and its clean-up warning (stderr).
pub(super) fn say(ui: &Ui, report: &Report, keep: bool, verbose: bool) {
    let Report {
        batch: b,
        outcomes,
        dry_run,
        kept,
        artifacts_error,
        side_effects,
        apply_id,
        verify,
        remote_left,
        ..
    } = report;
    if let Some(left) = remote_left {
        super::remote::warn_left(ui, left);
    }
    ui.warn(&super::side_effects::git_dir_warning(
        b,
        side_effects,
        *dry_run,
    ));
    if let Some(u) = &report.untrusted {
        ui.warn(&super::side_effects::untrusted_warning(u, *dry_run));
    }
    ui.say(&crate::render::human::apply::human(
        ui, report, keep, verbose,
    ));
    ui.say(&super::side_effects::text(
        b,
        side_effects,
        outcomes,
        *dry_run,
    ));
    if let Some(v) = verify {
        ui.say(&crate::render::human::verify::verify_text(v));
    }
    if !kept.is_empty() {
        ui.say(&crate::render::human::kept_text(kept));
    }
    if let Some(id) = apply_id {
        ui.say(&super::undo::undo_hint(id));
    }
    if let Some(e) = artifacts_error {
        ui.warn(&format!(
            "git-delegate: warning: clean-up was incomplete: {}\n",
            crate::ui::escape_text(&e.message)
        ));
    }
}
