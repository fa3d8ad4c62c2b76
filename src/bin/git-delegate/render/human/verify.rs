//! The human text of `apply --verify` (design §3.10): the outcome and each
//! run, by its name (`verify-N`).
//!
//! Owns: those lines.
//! Never: prints, or runs anything.

use super::show;

/// The human lines for `--verify`: the outcome and each run, by its name
/// (`verify-N`, as its log and its live output name it). The numbers go
/// on from the batch's earlier verifications, so the first need not be 1:
/// the count line says which they are.
pub fn verify_text(v: &git_delegate::ops::verify::Report) -> String {
    if v.reason == Some("untrusted_config") {
        return format!(
            "Verification ({}): not run (apply.verify is not in the delegate.toml you confirmed)\n",
            crate::render::style::escape_text(&v.command)
        );
    }
    let numbers = v.runs.iter().map(|r| r.n);
    let span = match (numbers.clone().min(), numbers.max()) {
        (Some(1), _) | (None, _) => String::new(),
        (Some(a), Some(b)) if a == b => {
            format!(" (verify-{a}: numbered on from this batch's earlier verifications)")
        }
        (Some(a), Some(b)) => format!(
            " (verify-{a} to verify-{b}: numbered on from this batch's earlier verifications)"
        ),
        (Some(_), None) => String::new(),
    };
    let mut text = format!(
        "Verification ({}): {}, {} run{}{span}\n",
        crate::render::style::escape_text(&v.command),
        v.outcome.as_str().replace('_', " "),
        v.runs.len(),
        if v.runs.len() == 1 { "" } else { "s" }
    );
    for r in &v.runs {
        let tasks = if r.tasks.is_empty() {
            "(the working tree alone)".to_string()
        } else {
            r.tasks.join(" ")
        };
        let result = match (r.timed_out, r.exit) {
            (true, _) => "timed out".to_string(),
            (false, Some(0)) => "passed".to_string(),
            (false, Some(n)) => format!("failed (exit {n}, log {})", show(&r.log)),
            (false, None) => format!("killed by a signal (log {})", show(&r.log)),
        };
        text.push_str(&format!("  verify-{}  {tasks}: {result}\n", r.n));
    }
    text
}
