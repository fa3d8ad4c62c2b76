//! `git delegate __complete WORDS...` (hidden; design §3.8): the dynamic
//! part of the completion scripts. WORDS are the command line after the
//! program name, the last one the word being completed; it prints the
//! candidates for that word, one per line, and exits 0 where a value is
//! the open batches (labels and ids) or open task names, or a value that
//! is no file name (`--ttl`, `--label`, ...: nothing printed). Anywhere
//! else it prints nothing and exits 1: the script's static completion
//! (subcommands, options, their listed values, paths) applies.
//!
//! Owns: which argument completes with what ([`values_of`], also used by
//! `completions` to mark those arguments in the generated scripts), and
//! reading a partial command line with the clap definitions.
//! Never: fails loudly (a shell is waiting; outside a repository there is
//! simply nothing to offer), changes anything, or does git or filesystem
//! work itself (the batch listing is the engine's).

use clap::{Arg, CommandFactory};

use git_delegate::error::Result;
use git_delegate::record::batch::{self, Batch};

/// What the value of an argument completes with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Values {
    /// The repository's open batches: labels, then ids.
    Batch,
    /// The open tasks of the batch named on the command line (or of every
    /// open batch when none is named and there are several).
    Task,
    /// The kept proposals (`apply --kept`): their short names, as `status`
    /// prints them.
    Kept,
    /// Undo entries not undone yet (`undo APPLY`): their ids, newest first.
    Undoable,
    /// Undone entries (`apply --from-undo APPLY`): their ids, newest first.
    Undone,
    /// Nothing: a duration, a label, a pid, a count, a command; never file names.
    Nothing,
}

/// What the value of argument `arg` (its clap id) of subcommand `sub`
/// completes with; `None`: the static script's own completion.
pub fn values_of(sub: &str, arg: &str) -> Option<Values> {
    Some(match (sub, arg) {
        ("apply" | "status" | "drop" | "renew" | "diff" | "path" | "refresh" | "exec", "batch") => {
            Values::Batch
        }
        ("apply", "only" | "discard")
        | ("diff", "tasks")
        | ("path", "task")
        | ("exec", "task")
        | ("refresh", "tasks") => Values::Task,
        ("apply", "kept") => Values::Kept,
        ("undo", "apply") => Values::Undoable,
        ("apply", "from_undo") => Values::Undone,
        ("prepare", "ttl" | "label" | "owner_pid" | "count" | "remote" | "local")
        | ("renew", "ttl" | "owner_pid")
        | ("apply", "verify" | "verify_timeout" | "verify_jobs") => Values::Nothing,
        (
            "run",
            "ttl" | "label" | "owner_pid" | "count" | "jobs" | "timeout" | "verify"
            | "verify_timeout",
        ) => Values::Nothing,
        _ => return None,
    })
}

/// Where the word being completed stands.
struct Place {
    values: Values,
    /// The part of the word the candidates must start with.
    prefix: String,
    /// The batch the command line names (`apply BATCH`, `--batch BATCH`).
    batch: Option<String>,
}

pub fn run(words: &[String]) -> Result<i32> {
    let Some(place) = place(words) else {
        return Ok(1);
    };
    let mut out = String::new();
    for c in candidates(&place) {
        if c.starts_with(&place.prefix) && !c.contains('\n') {
            out.push_str(&c);
            out.push('\n');
        }
    }
    crate::ui::stdout_bytes(out.as_bytes());
    Ok(0)
}

/// The candidates for `place`, unfiltered; none outside a repository.
fn candidates(place: &Place) -> Vec<String> {
    if place.values == Values::Nothing {
        return Vec::new();
    }
    let Ok(source) = super::source() else {
        return Vec::new();
    };
    let batches = batch::list_ok(&source.state_dir()).unwrap_or_default();
    match place.values {
        Values::Batch => {
            let mut out: Vec<String> = batches.iter().filter_map(|b| b.label.clone()).collect();
            out.extend(batches.iter().map(|b| b.id.clone()));
            out
        }
        Values::Task => {
            let chosen: Vec<Batch> = match batch::select(batches.clone(), place.batch.as_deref()) {
                Ok(b) => vec![b],
                // Unknown or ambiguous (several open, none named): every
                // open batch's tasks.
                Err(_) if place.batch.is_none() => batches,
                Err(_) => Vec::new(),
            };
            let mut out: Vec<String> = Vec::new();
            for b in &chosen {
                for t in b.open_tasks() {
                    if !out.contains(&t.name) {
                        out.push(t.name.clone());
                    }
                }
            }
            out
        }
        Values::Kept => {
            let entries = batch::list(&source.state_dir()).unwrap_or_default();
            let all =
                git_delegate::record::kept::kept_proposals(&source, &entries).unwrap_or_default();
            all.iter()
                .map(|k| git_delegate::ops::kept::short_name(&all, k))
                .collect()
        }
        Values::Undoable | Values::Undone => {
            let want_undone = place.values == Values::Undone;
            let mut entries = git_delegate::ops::undo::list(&source.state_dir());
            entries.sort_by_key(|e| std::cmp::Reverse(e.applied_ns));
            entries
                .into_iter()
                .filter(|e| e.undone == want_undone)
                .map(|e| e.apply_id)
                .collect()
        }
        Values::Nothing => Vec::new(),
    }
}

/// Read the partial command line: `None` where the static completion applies.
fn place(words: &[String]) -> Option<Place> {
    let (cur, before) = match words.split_last() {
        Some((cur, before)) => (cur.as_str(), before),
        None => ("", &[][..]),
    };
    let mut root = crate::cli::Cli::command();
    root.build();
    // The subcommand: the first word that is not an option (or --color's value).
    let mut i = 0;
    let sub = loop {
        let w = before.get(i)?;
        i += 1;
        if w == "--color" {
            i += 1;
            if before.get(i - 1).is_some_and(|w| w == "=") {
                i += 1;
            }
        } else if !w.starts_with('-') {
            break root.find_subcommand(w)?;
        }
    };
    if sub.has_subcommands() {
        return None;
    }
    let positionals: Vec<&Arg> = sub.get_positionals().collect();
    let takes_value = |a: &Arg| a.get_num_args().is_some_and(|n| n.takes_values());
    let long = |name: &str| {
        sub.get_arguments()
            .find(|a| a.get_long() == Some(name) && takes_value(a))
    };
    let mut pending: Option<&Arg> = None;
    let mut seen = 0usize; // positional words before the current one
    let mut dashdash = false;
    let mut batch: Option<String> = None;
    for w in &before[i..] {
        if let Some(a) = pending.take() {
            if w == "=" {
                // bash splits `--opt=value` at the `=`.
                pending = Some(a);
            } else if a.get_id() == "batch" {
                batch = Some(w.clone());
            }
            continue;
        }
        if dashdash {
            seen += 1;
        } else if w == "--" {
            dashdash = true;
        } else if let Some(name) = w.strip_prefix("--") {
            match name.split_once('=') {
                Some(("batch", v)) => batch = Some(v.to_string()),
                Some(_) => {}
                None => pending = long(name),
            }
        } else if w.len() > 1 && w.starts_with('-') {
            // A short option, its value attached (`-n4`) or next.
            let c = w.chars().nth(1);
            if w.chars().count() == 2 {
                pending = sub
                    .get_arguments()
                    .find(|a| a.get_short() == c && takes_value(a));
            }
        } else {
            if positional_at(&positionals, seen).is_some_and(|a| a.get_id() == "batch") {
                batch = Some(w.clone());
            }
            seen += 1;
        }
    }
    let (arg, prefix) = if let Some(a) = pending {
        (a, if cur == "=" { "" } else { cur })
    } else if dashdash {
        return None;
    } else if let Some((name, value)) = cur.strip_prefix("--").and_then(|c| c.split_once('=')) {
        (long(name)?, value)
    } else if cur.starts_with('-') {
        return None;
    } else {
        (positional_at(&positionals, seen)?, cur)
    };
    Some(Place {
        values: values_of(sub.get_name(), arg.get_id().as_str())?,
        prefix: unquote(prefix),
        batch: batch.as_deref().map(unquote),
    })
}

/// A word as typed, without the shell's quoting (a leading quote,
/// backslashes): `my\ la` and `'my la` are `my la`.
fn unquote(word: &str) -> String {
    let word = word.strip_prefix(['\'', '"']).unwrap_or(word);
    let mut out = String::with_capacity(word.len());
    let mut chars = word.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            '\'' | '"' => {}
            c => out.push(c),
        }
    }
    out
}

/// The positional argument the `n`-th positional word (from 0) belongs to.
fn positional_at<'a>(positionals: &[&'a Arg], n: usize) -> Option<&'a Arg> {
    let mut left = n;
    for a in positionals {
        let many = a.get_num_args().is_some_and(|r| r.max_values() > 1);
        if many || left == 0 {
            return Some(a);
        }
        left -= 1;
    }
    None
}
