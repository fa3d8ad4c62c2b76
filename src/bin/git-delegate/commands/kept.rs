//! `git delegate apply --kept REF` (design §3.16 "kept"): land a kept
//! proposal through the engine (`git_delegate::ops::kept::run`) and render it as apply
//! renders a batch (design §6.2), with the proposal it landed.
//!
//! Owns: the human text of landing a kept proposal, and what its apply
//! document adds (`kept_proposal`).
//! Never: does git, filesystem or process work (the engine's `kept` does).

use crate::ui::Ui;
use git_delegate::error::Result;
use git_delegate::ops::apply::Outcome;
use git_delegate::record::batch::TaskState;
use git_delegate::sys::paths::{self, ByteSlice};
use git_delegate::writeback::Recovery;

pub fn run(
    ui: &Ui,
    reference: String,
    strict: bool,
    dry_run: bool,
    recovered: &mut Recovery,
) -> Result<i32> {
    let here = super::source()?;
    let opts = git_delegate::ops::kept::Options {
        reference,
        strict,
        dry_run,
    };
    let shown = super::CommandObserver::new(ui);
    let landed = git_delegate::ops::kept::run(here, &opts, &shown);
    shown.recovered_into(recovered);
    let landed = landed?;
    let r = &landed.report;
    let k = &landed.kept;
    if ui.json {
        let t = crate::render::Text::default();
        let mut doc = crate::render::apply::ApplyDoc::new(
            &t,
            &r.batch,
            &r.outcomes,
            &r.written,
            r.batch_open,
            r.dry_run,
        );
        // A kept proposal has no workspace.
        for t in &mut doc.tasks {
            if t.workspace.is_some() {
                t.workspace = Some(None);
            }
        }
        doc.apply_id = Some(r.apply_id.clone());
        doc.side_effects = Some(crate::render::apply::SideEffect::list(
            &t,
            &r.batch,
            &r.side_effects,
        ));
        doc.kept_proposal = Some(crate::render::apply::KeptProposal {
            r#ref: k.ref_name.clone(),
            batch: k.batch.clone(),
            task: k.task.clone(),
            patch: k.patch.as_deref().map(|p| t.path(p)),
            expires_at: git_delegate::sys::time::rfc3339(k.expires_at),
            removed: landed.removed,
        });
        if r.interrupted {
            doc.interrupted = Some("finished");
        }
        if let Some(e) = r.refused_by_filesystem() {
            doc.error = Some(crate::render::ErrorBody::new(e.code, &e.message, &e.help));
        }
        ui.doc_after(t.doc(doc), recovered);
    }
    ui.say(&human(ui, &landed));
    if let Some(e) = &r.artifacts_error {
        ui.warn(&format!(
            "git-delegate: warning: clean-up was incomplete: {}\n",
            crate::ui::escape_text(&e.message)
        ));
    }
    if r.interrupted {
        super::tell_finished(ui, "the write-back of the kept proposal");
        return Ok(1);
    }
    // A write-back the filesystem refused: exit 3, as apply's.
    if let Some(e) = r.refused_by_filesystem() {
        return Ok(e.exit_code());
    }
    Ok(if r.all_ok() { 0 } else { 1 })
}

/// The sentence that shows the first path in conflict with `git show`
/// (design §3.16 "Hints"): the proposal's version (`REF:PATH`), or, for a
/// path the task deleted (`REF` has none), what the task started from
/// (`REF^:PATH`, the baseline it was made from). `PATH` only when no path
/// can be printed as it is (none named, not UTF-8, or a control character).
fn show_hint(landed: &git_delegate::ops::kept::Landed, o: &Outcome) -> String {
    let ref_name = &landed.kept.ref_name;
    let first = o.conflicts.iter().map(|c| &c.path).find(|p| !p.is_empty());
    let path = first
        .and_then(|p| std::str::from_utf8(p.as_ref()).ok())
        .filter(|p| !p.chars().any(char::is_control));
    let quoted = |rev: &str, p: &str| paths::shell_quote(&format!("{rev}:{p}"));
    match path {
        Some(p) if first.is_some_and(|f| landed.deleted.contains(f)) => format!(
            "The task deleted {p}: see what was there when it started with `git show {}`",
            quoted(&format!("{ref_name}^"), p)
        ),
        _ => format!(
            "See its version of a path with `git show {}`",
            quoted(ref_name, path.unwrap_or("PATH"))
        ),
    }
}

fn human(ui: &Ui, landed: &git_delegate::ops::kept::Landed) -> String {
    let r = &landed.report;
    let k = &landed.kept;
    let short = git_delegate::ops::kept::short_name(std::slice::from_ref(k), k);
    let mut text = format!(
        "{} of kept proposal {} ({}):\n",
        if r.dry_run {
            "Dry run of apply"
        } else {
            "Apply"
        },
        ui.bold(&short),
        k.ref_name
    );
    let Some(o) = r.outcomes.first() else {
        return text;
    };
    text.push_str(&outcome_line(ui, o));
    if let Some(e) = &r.write_error {
        text.push_str(&format!(
            "Writing back failed, and nothing was changed: {}\n",
            crate::ui::escape_text(&e.message)
        ));
        // The filesystem's help names it and says "run the command again".
        if r.refused_by_filesystem().is_some() {
            text.push_str(&format!("  {}\n", crate::ui::escape_text(&e.help)));
        }
    }
    let n = r.written.len();
    text.push_str(&format!(
        "{} {n} path{} in {}.\n",
        if r.dry_run { "Would write" } else { "Wrote" },
        if n == 1 { "" } else { "s" },
        super::show(&landed.root)
    ));
    let until = git_delegate::sys::time::rfc3339(k.expires_at);
    if r.dry_run {
        if o.ok() {
            text.push_str("Its ref and patch would be removed.\n");
        }
    } else if landed.removed {
        text.push_str(&format!("Removed {} and its patch.\n", k.ref_name));
    } else if !o.ok() {
        text.push_str(&format!(
            "It stays kept until {until} (gc.keep-failed); nothing of it was written.\n\
             {}; once the working tree no longer conflicts with it, run `git delegate apply --kept {}` again.\n",
            show_hint(landed, o),
            k.ref_name
        ));
    }
    text
}

fn outcome_line(ui: &Ui, o: &Outcome) -> String {
    let status = o.status.as_str();
    let painted = ui.status_column(status, o.ok(), 10);
    let detail = match o.status {
        TaskState::Applied => {
            let n = o.applied.len();
            format!("{n} path{}", if n == 1 { "" } else { "s" })
        }
        TaskState::Conflict | TaskState::Failed => {
            let mut d = o.reason.unwrap_or("").to_string();
            if !o.conflicts.is_empty() {
                let list: Vec<String> = o
                    .conflicts
                    .iter()
                    .take(5)
                    .map(|c| format!("{} ({})", paths::quote(c.path.as_bstr()), c.reason))
                    .collect();
                d.push_str(&format!(": {}", list.join(", ")));
                if o.conflicts.len() > 5 {
                    d.push_str(&format!(", and {} more", o.conflicts.len() - 5));
                }
            } else if let Some(m) = &o.message {
                d.push_str(&format!(": {}", crate::ui::escape_text(m)));
            }
            d
        }
        _ => String::new(),
    };
    let line = format!("  {painted} {detail}");
    format!("{}\n", line.trim_end())
}
