//! Commands from the shared git dir (design §3.18): a worker in a linked
//! worktree can write `<common-dir>/delegate.toml`, so a command key
//! (`config::COMMAND_KEYS`: `apply.verify`, `workspace.setup`) runs only
//! with the value of the file the user confirmed (`record::trust`). The
//! file as it is when no batch is open is the user's (recorded the first
//! time a command looks: prepare, `git delegate config`), unless a batch's
//! end found it changed (`pending`) and a command in it still differs from
//! the confirmed one; a file changed while any batch is open is not, until
//! `git delegate config --trust`.
//!
//! Owns: which command keys are left out (`check`), prepare's refusal
//! (`refuse_unconfirmed`, `delegate::untrusted_config`), apply's gate
//! (`gate_apply`: the confirmed value runs in place of a changed one), and
//! `git delegate config` (`view`: `show`, `trust`).
//! Never: writes `delegate.toml`; runs a command; prints.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::config::{Config, COMMAND_KEYS};
use crate::error::{Code, Error, Result};
use crate::git::repo::Source;
use crate::record::batch::{self, Batch};
use crate::record::trust::{self, Confirmed};
use crate::sys::paths::shell_quote;

mod view;

pub use view::*;

/// A command key whose value in use is not the confirmed one: it does not
/// run (the confirmed `confirmed` runs in its place where one runs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    pub key: &'static str,
    /// The value left out (empty: the key was removed).
    pub value: String,
    /// The confirmed value (empty: none).
    pub confirmed: String,
}

/// The command keys left out, and how the user confirms the file.
#[derive(Debug, Clone)]
pub struct Untrusted {
    /// `<common-dir>/delegate.toml`.
    pub file: PathBuf,
    /// The working tree `git -C DIR delegate config --trust` is run in
    /// (never a task's workspace, which cannot confirm it).
    pub confirm_dir: PathBuf,
    pub left_out: Vec<LeftOut>,
    /// How to see and undo the change (a shell command), or `None`.
    pub restore: Option<String>,
}

impl Untrusted {
    /// The `apply.verify` left out when no confirmed one runs in its place.
    pub fn verify_left_out(&self) -> Option<String> {
        self.left_out
            .iter()
            .find(|l| l.key == "apply.verify" && l.confirmed.trim().is_empty())
            .map(|l| l.value.clone())
    }

    /// The command that confirms the file, as printed.
    pub fn confirm_command(&self) -> String {
        confirm_command(&self.confirm_dir)
    }

    /// The keys and values left out: "apply.verify = `touch x`" (an empty
    /// value: "apply.verify removed").
    pub fn named(&self) -> String {
        let one = |l: &LeftOut| match l.value.is_empty() {
            true => format!("{} removed", l.key),
            false => format!("{} = `{}`", l.key, l.value),
        };
        self.left_out.iter().map(one).collect::<Vec<_>>().join(", ")
    }

    /// The help line: confirm it, or put back the file confirmed.
    pub fn help(&self) -> String {
        self.help_then("")
    }

    /// [`Untrusted::help`] with `then` after the confirmation ("and
    /// prepare again").
    pub fn help_then(&self, then: &str) -> String {
        let mut help = format!(
            "if you wrote it, confirm the file with `{}`{then}",
            self.confirm_command()
        );
        if let Some(restore) = &self.restore {
            help.push_str(&format!("; if not, {restore}"));
        }
        help
    }

    /// The JSON fields of the refusal (and of apply's `untrusted_config`).
    pub fn details(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        m.insert("path".into(), self.file.display().to_string().into());
        let left: Vec<_> = self
            .left_out
            .iter()
            .map(|l| json!({"key": l.key, "value": l.value, "confirmed": l.confirmed}))
            .collect();
        m.insert("left_out".into(), left.into());
        m
    }
}

/// `git -C DIR delegate config --trust`.
pub fn confirm_command(dir: &Path) -> String {
    format!(
        "git -C {} delegate config --trust",
        shell_quote(&dir.to_string_lossy())
    )
}

/// The confirmed file to compare with (recording the file now as the
/// user's where no batch is open and `write`).
struct Settled {
    confirmed: Confirmed,
    /// `delegate.toml`'s bytes now.
    now: Option<Vec<u8>>,
    /// This call recorded the file now.
    recorded: bool,
    batches: Vec<Batch>,
}

fn settle(source: &Source, write: bool) -> Result<Settled> {
    let state = source.state_dir();
    let now = trust::read_file(&state);
    let id = trust::identity(now.as_deref());
    let entries = batch::list(&state)?;
    let open = !entries.is_empty();
    let batches: Vec<Batch> = entries
        .into_iter()
        .filter_map(|e| match e {
            batch::Entry::Batch(b) => Some(*b),
            batch::Entry::Broken { .. } => None,
        })
        .collect();
    let text_now = || {
        now.as_deref()
            .and_then(|b| String::from_utf8(b.to_vec()).ok())
    };
    let as_now = || Confirmed {
        identity: id.clone(),
        text: text_now(),
        pending: false,
    };
    let keep = |confirmed: Confirmed| Settled {
        confirmed,
        now: now.clone(),
        recorded: false,
        batches: batches.clone(),
    };
    let file = trust::file_of(&state);
    let adopt = match trust::read(&state) {
        // The file confirmed (its text read from the file itself, should
        // the copy have gone); no longer pending once no batch is open.
        Some(c) if c.identity == id => {
            if c.pending && !open && write {
                record_with(trust::clear_pending(&state, &c))?;
            }
            return Ok(keep(Confirmed {
                text: text_now(),
                pending: false,
                ..c
            }));
        }
        // Changed while a batch is open: not the user's until confirmed.
        Some(c) if open => return Ok(keep(c)),
        // Changed, no batch open: the user's, unless a batch's end found
        // it changed and a command in it still differs from the one
        // confirmed.
        Some(c) => {
            let confirmed = confirmed_config(&file, &c);
            let differs = !differing(&source.config, &confirmed, &GUARDED).is_empty();
            if c.pending && differs {
                return Ok(keep(c));
            }
            true
        }
        // No record (the first run here): the file as it is, unless an
        // open batch's prepare saw another.
        None => {
            let seen = batches
                .iter()
                .filter_map(|b| crate::ops::side_effects::delegate_at_prepare(source, b))
                .find(|(seen, _)| *seen != id);
            if let Some((identity, text)) = seen {
                return Ok(keep(Confirmed {
                    identity,
                    text,
                    pending: false,
                }));
            }
            true
        }
    };
    let recorded = adopt && write;
    if recorded {
        record(&state, now.as_deref())?;
    }
    Ok(Settled {
        confirmed: as_now(),
        now,
        recorded,
        batches,
    })
}

fn record(state: &Path, bytes: Option<&[u8]>) -> Result<()> {
    record_with(trust::confirm(state, bytes))
}

/// A write of the record, its failure worded.
fn record_with(done: std::result::Result<(), crate::record::TomlError>) -> Result<()> {
    done.map_err(|e| match e {
        crate::record::TomlError::Serialize(e) => Error::state(
            Code::Internal,
            format!("cannot record the confirmed delegate.toml: {e}"),
            "report this bug",
        ),
        crate::record::TomlError::Fs(e) => e.into(),
    })
}

/// The confirmed file's settings (no commands when its text is unknown).
fn confirmed_config(file: &Path, c: &Confirmed) -> Config {
    c.text
        .as_deref()
        .and_then(|t| Config::parse(file, t).ok())
        .unwrap_or_default()
}

/// The working tree a confirmation is run in: `root`, or, where `root` is
/// a task's workspace, the working tree its batch was prepared in.
fn confirm_dir(batches: &[Batch], root: &Path) -> PathBuf {
    let mut dir = root.to_path_buf();
    for _ in 0..batches.len() {
        let is_dir = |t: &batch::Task| {
            !t.remote && (t.root == dir || std::fs::canonicalize(&t.root).is_ok_and(|r| r == dir))
        };
        let Some(b) = batches.iter().find(|b| b.tasks.iter().any(is_dir)) else {
            break;
        };
        dir = b.source.clone();
    }
    dir
}

/// What to run to see and undo a change of `file`.
fn restore(file: &Path, c: &Confirmed) -> Option<String> {
    let q = |p: &Path| shell_quote(&p.to_string_lossy());
    if c.identity == trust::NONE {
        return Some(format!("`rm {}` puts back what you had (no file)", q(file)));
    }
    let copy = crate::config::differing_copy(file)?;
    Some(format!(
        "`git diff --no-index {} {}` shows what changed, and `cp {} {}` puts yours back",
        q(&copy),
        q(file),
        q(&copy),
        q(file)
    ))
}

/// The command keys of `keys` whose value in `source.config` is not the
/// confirmed one (`None`: every one is). `write`: record the file as the
/// user's where that is due (never in a dry run).
pub fn check(source: &Source, keys: &[&'static str], write: bool) -> Result<Option<Untrusted>> {
    Ok(check_with(source, keys, write)?.0)
}

/// [`check`], and the confirmed file's settings.
fn check_with(
    source: &Source,
    keys: &[&'static str],
    write: bool,
) -> Result<(Option<Untrusted>, Config)> {
    let s = settle(source, write)?;
    let file = trust::file_of(&source.state_dir());
    let confirmed = confirmed_config(&file, &s.confirmed);
    let left_out = differing(&source.config, &confirmed, keys);
    if left_out.is_empty() {
        return Ok((None, confirmed));
    }
    let u = Untrusted {
        confirm_dir: confirm_dir(&s.batches, &source.root),
        restore: restore(&file, &s.confirmed),
        file,
        left_out,
    };
    Ok((Some(u), confirmed))
}

/// prepare (design §3.18): a `workspace.setup` the user has not confirmed
/// is refused before anything is made (exit 3, `delegate::untrusted_config`).
pub fn refuse_unconfirmed(source: &Source) -> Result<()> {
    let Some(u) = check(source, &["workspace.setup"], true)? else {
        return Ok(());
    };
    Err(Error::state(
        Code::UntrustedConfig,
        format!(
            "{} in {} is not what you confirmed (the file changed while a batch was open, and a worker's workspace shares it): it was not run, and nothing was prepared",
            u.named(),
            u.file.display()
        ),
        u.help_then(" and prepare again"),
    )
    .with_details(u.details()))
}

/// apply (design §3.18): unless the command line names the verification
/// (`--verify CMD`, `--no-verify`), an `apply.verify` the user has not
/// confirmed is left out and the confirmed one (if any) runs in its place;
/// what was left out, for the report (apply then exits 1).
pub fn gate_apply(
    source: &mut Source,
    cli_decides: bool,
    dry_run: bool,
) -> Result<Option<Untrusted>> {
    if cli_decides {
        return Ok(None);
    }
    let u = check(source, &["apply.verify"], !dry_run)?;
    for l in u.iter().flat_map(|u| &u.left_out) {
        source.config.set_command(l.key, &l.confirmed);
    }
    Ok(u)
}

/// The command that confirms the file, to run from anywhere: for the
/// working tree of `source`, or, where `source` is a task's workspace, for
/// the working tree its batch was prepared in.
pub fn confirm_command_for(source: &Source) -> String {
    let batches: Vec<Batch> = batch::list(&source.state_dir())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|e| match e {
            batch::Entry::Batch(b) => Some(*b),
            batch::Entry::Broken { .. } => None,
        })
        .collect();
    confirm_command(&confirm_dir(&batches, &source.root))
}

/// The keys that loosen how the workers git-delegate starts are contained
/// (design §3.22): `run.sandbox = "off"`, `run.network = true`, a folder
/// in `run.writable`. An unconfined worker (or one of another batch) can
/// write them into `delegate.toml` for the next `run` or `exec`, so they
/// too hold only with the value of the file the user confirmed.
pub const CONTAINMENT_KEYS: [&str; 3] = ["run.sandbox", "run.network", "run.writable"];

/// The key that relaxes the pre-push guard (design §3.19):
/// `hooks.private-baselines = "warn"` or `"ignore"` would let a worker's
/// branch publish the user's private files.
pub const GUARD_KEYS: [&str; 1] = ["hooks.private-baselines"];

/// Every key that holds only as the user confirmed it.
const GUARDED: [&str; 6] = [
    COMMAND_KEYS[0],
    COMMAND_KEYS[1],
    CONTAINMENT_KEYS[0],
    CONTAINMENT_KEYS[1],
    CONTAINMENT_KEYS[2],
    GUARD_KEYS[0],
];

/// The pre-push hook (design §3.19): `hooks.private-baselines` as the
/// user confirmed it (a changed value is left out, the confirmed one
/// holds). Reads only: a hook records nothing.
pub fn gate_guard(source: &mut Source) -> Result<Option<Untrusted>> {
    let (u, confirmed) = check_with(source, &GUARD_KEYS, false)?;
    for l in u.iter().flat_map(|u| &u.left_out) {
        take(&mut source.config, &confirmed, l.key);
    }
    Ok(u)
}

/// `run` and `exec` (design §3.18, §3.22): a containment key the user has
/// not confirmed is left out and the confirmed value holds in its place;
/// what was left out, said once by the caller. The command line's
/// `--no-sandbox` is the user's and still holds.
pub fn gate_containment(source: &mut Source) -> Result<Option<Untrusted>> {
    let (u, confirmed) = check_with(source, &CONTAINMENT_KEYS, true)?;
    for l in u.iter().flat_map(|u| &u.left_out) {
        take(&mut source.config, &confirmed, l.key);
    }
    Ok(u)
}

impl Untrusted {
    /// What the pre-push hook says when `hooks.private-baselines` was
    /// left out (design §3.19).
    pub fn guard_warning(&self) -> String {
        format!(
            "{} in {} is not what you confirmed (the file changed while a batch was open, and a worker's workspace shares it): the guard holds as you confirmed it; if you wrote it, confirm the file with `{}`",
            self.named(),
            self.file.display(),
            self.confirm_command()
        )
    }

    /// The warning `run` and `exec` give once when a containment key was
    /// left out (design §3.22).
    pub fn containment_warning(&self) -> String {
        let kept: Vec<String> = self
            .left_out
            .iter()
            .map(|l| format!("{} = `{}`", l.key, l.confirmed))
            .collect();
        format!(
            "git-delegate: warning: {} in {} is not what you confirmed (the file changed while a batch was open, and a worker's workspace shares it): the workers are contained as you confirmed ({})\n  help: {}",
            self.named(),
            self.file.display(),
            kept.join(", "),
            self.help()
        )
    }
}

/// The keys of `keys` whose value in `now` is not the one in `confirmed`.
fn differing(now: &Config, confirmed: &Config, keys: &[&'static str]) -> Vec<LeftOut> {
    keys.iter()
        .filter(|k| value(now, k) != value(confirmed, k))
        .map(|&key| LeftOut {
            key,
            value: value(now, key),
            confirmed: value(confirmed, key),
        })
        .collect()
}

/// A guarded key's value as text, to compare and to show (empty: a
/// command key unset).
fn value(cfg: &Config, key: &str) -> String {
    use crate::config::Sandbox;
    match key {
        "run.sandbox" => match cfg.sandbox {
            Sandbox::Auto => "auto",
            Sandbox::On => "on",
            Sandbox::Off => "off",
        }
        .to_string(),
        "run.network" => cfg.network.to_string(),
        "hooks.private-baselines" => match cfg.private_baselines {
            crate::config::PrivateBaselines::Block => "block",
            crate::config::PrivateBaselines::Warn => "warn",
            crate::config::PrivateBaselines::Ignore => "ignore",
        }
        .to_string(),
        "run.writable" => cfg
            .writable
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        _ => cfg.command(key).to_string(),
    }
}

/// Put `from`'s value of the guarded `key` in `cfg`.
fn take(cfg: &mut Config, from: &Config, key: &str) {
    match key {
        "run.sandbox" => cfg.sandbox = from.sandbox,
        "run.network" => cfg.network = from.network,
        "run.writable" => cfg.writable = from.writable.clone(),
        "hooks.private-baselines" => cfg.private_baselines = from.private_baselines,
        _ => cfg.set_command(key, from.command(key)),
    }
}
