//! The human text of `git delegate run` (design §3.13): a line per worker
//! (its status, time and log), how the workers were contained, and why
//! nothing was applied when the batch ended elsewhere.
//!
//! Owns: those words, laid out.
//! Never: prints (`commands::run` does), or does process work.

use super::show;
use crate::render::style::Ui;

/// The workers, a line each, and how they were contained.
pub fn workers_text(ui: &Ui, report: &git_delegate::ops::run::Report) -> String {
    let b = &report.prepared.batch;
    let mut text = format!(
        "Batch {}: {} worker{}\n",
        ui.bold(b.short()),
        report.workers.len(),
        if report.workers.len() == 1 { "" } else { "s" }
    );
    let width = report
        .workers
        .iter()
        .map(|w| w.name.len())
        .max()
        .unwrap_or(1);
    for w in &report.workers {
        let status = status_word(w);
        let painted = ui.status_column(&status, w.ok(), 14);
        text.push_str(&format!(
            "  task {:<width$}  {painted} {:>7}  log {}\n",
            w.name,
            seconds(w.duration_ms),
            show(&w.log)
        ));
    }
    if let Some(w) = report.workers.first() {
        text.push_str(&sandbox_line(&w.sandbox));
    }
    text
}

/// design §3.13: the batch ended while its workers ran, so nothing was
/// left for run to apply.
pub fn ended_text(
    b: &git_delegate::record::batch::Batch,
    ended: &git_delegate::ops::run::EndedElsewhere,
) -> String {
    match &ended.apply_id {
    Some(id) => format!(
        "Batch {} ended while its workers ran: another command applied it (apply {}, listed by `git delegate undo --list`), so run applied nothing.\n",
        b.short(),
        git_delegate::record::batch::short(id)
    ),
    None => format!(
        "Batch {} ended while its workers ran: another command applied or dropped it, so run applied nothing.\n",
        b.short()
    ),
}
}

pub fn status_word(w: &git_delegate::ops::run::Worker) -> String {
    use git_delegate::ops::run::Ended;
    match w.ended() {
        Ended::NotStarted(_) => "not started".into(),
        Ended::TimedOut => "timed out".into(),
        Ended::Stopped => "stopped".into(),
        Ended::Exited(c) => format!("exit {c}"),
        Ended::Killed(s) => format!("signal {s}"),
        Ended::Failed => "failed".into(),
    }
}

pub fn seconds(ms: u64) -> String {
    format!("{:.1}s", ms as f64 / 1000.0)
}

/// How the workers were contained (design §3.22), said once.
fn sandbox_line(s: &git_delegate::ops::contain::Summary) -> String {
    let network = if s.network {
        ""
    } else {
        ", and could open no TCP connection"
    };
    match s.abi {
        Some(abi) if s.landlock => format!(
            "Workers were contained (Landlock ABI {abi}): each could write only its own workspace, its git folder, its TMPDIR and run.writable{network}.\n"
        ),
        _ => format!("Workers ran unconfined{network}.\n"),
    }
}
