//! `<common-dir>/delegate.toml` (design §9): every key optional with a default;
//! unknown keys, wrong types and bad values are errors that point at the line,
//! and so are bytes that are not UTF-8 and NULs (design §5).
//!
//! Owns: the effective configuration (`Config`, its defaults and value
//! types), and its typed error (`ConfigError`: the file, the span in its
//! text and why, the I/O or TOML error as its cause); reading and
//! validating the file is `read`'s.
//! Never: writes the config, or reads git's own config; decides no error
//! code or help line (`ops::explain` does).

use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

mod file;
mod read;

/// Why `delegate.toml` was refused. The message is the `Display`; each
/// variant but `Unreadable` carries the text shown and the span pointed at
/// (`ConfigError::located`). Its code, exit status and help: `ops::explain`.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file is there but cannot be read.
    #[error("cannot read {}", path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A byte that is not UTF-8, or a NUL (TOML allows neither). `shown`
    /// is the text as a terminal may show it (U+FFFD, U+2400).
    #[error(
        "invalid configuration in {}: {what} at line {line}, column {column} (a config file is UTF-8 text)",
        path.display()
    )]
    NotText {
        path: PathBuf,
        what: String,
        line: usize,
        column: usize,
        shown: String,
        span: Range<usize>,
    },
    /// TOML that does not parse, or does not fit the keys and types of
    /// design §9 (an unknown key, a wrong type, an unknown value, a key
    /// or table given twice).
    #[error(
        "invalid configuration in {}{}: {}",
        path.display(),
        place(text, source.span().map(|s| s.start)),
        source.message().trim()
    )]
    Toml {
        path: PathBuf,
        text: String,
        /// Boxed: the parser's error is large, and every config result carries it.
        #[source]
        source: Box<toml::de::Error>,
    },
    /// A value of the right type that is refused (out of range, a
    /// relative path, a malformed duration): `reason` says which and why.
    #[error("invalid configuration in {}{}: {reason}", path.display(), place(text, Some(span.start)))]
    Value {
        path: PathBuf,
        text: String,
        span: Range<usize>,
        label: &'static str,
        reason: String,
    },
}

impl ConfigError {
    /// The file's name, its text as shown, the span pointed at and the
    /// span's label, for every error that points into the file.
    pub fn located(&self) -> Option<(&Path, &str, Range<usize>, &'static str)> {
        match self {
            ConfigError::Unreadable { .. } => None,
            ConfigError::NotText {
                path, shown, span, ..
            } => Some((path, shown, span.clone(), "here")),
            ConfigError::Toml {
                path, text, source, ..
            } => Some((path, text, source.span().unwrap_or(0..0), "here")),
            ConfigError::Value {
                path,
                text,
                span,
                label,
                ..
            } => Some((path, text, span.clone(), label)),
        }
    }

    /// The line and column (from 1) the error points at.
    pub fn line_column(&self) -> Option<(usize, usize)> {
        self.located()
            .map(|(_, text, span, _)| line_column(text, span.start))
    }
}

type Result<T, E = ConfigError> = std::result::Result<T, E>;

/// The workspace kind: a config value (`workspace.mode`) and, in the
/// batch record, the kind its workspaces were made as (`mode = "worktree"`
/// or `"scratch"`, the same spelling in both).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    #[default]
    Worktree,
    Scratch,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Worktree => "worktree",
            Mode::Scratch => "scratch",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum StopProcesses {
    /// Stop processes without a controlling terminal; a process with one
    /// (a person's shell, an editor) fails the task instead.
    #[default]
    Background,
    /// Stop every process inside (the default before `background`).
    Terminate,
    /// Stop none: any process inside fails the task.
    Refuse,
}

/// `hooks.private-baselines` (design §3.19): what the pre-push hook does
/// with a push that would publish a git-delegate baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum PrivateBaselines {
    #[default]
    Block,
    Warn,
    Ignore,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum StaleLeases {
    #[default]
    Warn,
    Block,
    Ignore,
}

/// `hooks.on-remove` (design §3.21): what Claude Code's WorktreeRemove hook
/// does with the batch behind the worktree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum OnRemove {
    /// Apply the batch into the source (conflicts keep the work).
    #[default]
    Apply,
    /// Leave the batch open for the user.
    Keep,
}

/// `workspace.snapshots` (design §3.17): `"auto"` makes a batch's
/// workspaces btrfs subvolume snapshots where the workspace root is on
/// btrfs; `"never"` checks each one out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Snapshots {
    #[default]
    Auto,
    Never,
}

/// `run.sandbox` (design §3.22): whether `run` and `exec` contain their
/// workers with Landlock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Sandbox {
    /// Contained where the kernel allows, else unconfined (said once).
    #[default]
    Auto,
    /// Refuse to start a worker without containment.
    On,
    /// Never contained.
    Off,
}

/// The effective configuration, defaults filled in.
#[derive(Debug, Clone)]
pub struct Config {
    pub mode: Mode,
    /// `None`: the default root of design §2.
    pub root: Option<PathBuf>,
    pub copy_ignored: Vec<String>,
    /// `workspace.snapshots` (design §3.17).
    pub snapshots: Snapshots,
    /// `workspace.setup`: empty = none (design §3.20).
    pub setup: String,
    /// `workspace.setup-jobs`: 0 = the number of CPUs.
    pub setup_jobs: usize,
    /// `workspace.pool`: idle workspaces kept for reuse (design §3.20).
    pub pool: usize,
    /// `workspace.pool-ttl`: gc removes idle workspaces older than this.
    pub pool_ttl_secs: i64,
    pub ttl_secs: i64,
    pub stop_processes: StopProcesses,
    pub strict: bool,
    pub keep_failed_secs: i64,
    pub stale_leases: StaleLeases,
    /// `hooks.private-baselines` (design §3.19).
    pub private_baselines: PrivateBaselines,
    pub forbid_commit: bool,
    /// `hooks.on-remove` (design §3.21).
    pub on_remove: OnRemove,
    pub lock_timeout_secs: i64,
    /// `undo.keep`: gc keeps at least this many undo entries (design §3.11).
    pub undo_keep: usize,
    /// `apply.verify`: empty = no verification (design §3.10).
    pub verify: String,
    pub verify_timeout_secs: i64,
    pub verify_jobs: usize,
    /// `run.port-base`, `run.ports-per-task` (design §3.13).
    pub port_base: u16,
    pub ports_per_task: u16,
    /// `run.sandbox`, `run.network`, `run.writable` (design §3.22).
    pub sandbox: Sandbox,
    pub network: bool,
    pub writable: Vec<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            mode: Mode::Worktree,
            root: None,
            copy_ignored: Vec::new(),
            snapshots: Snapshots::Auto,
            setup: String::new(),
            setup_jobs: 0,
            pool: 0,
            pool_ttl_secs: 7 * 86_400,
            ttl_secs: 24 * 3600,
            stop_processes: StopProcesses::Background,
            strict: false,
            keep_failed_secs: 14 * 86_400,
            stale_leases: StaleLeases::Warn,
            private_baselines: PrivateBaselines::Block,
            forbid_commit: false,
            on_remove: OnRemove::Apply,
            lock_timeout_secs: 30,
            undo_keep: 20,
            verify: String::new(),
            verify_timeout_secs: 30 * 60,
            verify_jobs: 1,
            port_base: 41000,
            ports_per_task: 10,
            sandbox: Sandbox::Auto,
            network: true,
            writable: Vec::new(),
        }
    }
}

/// Expand a leading `~/` with `$HOME`.
pub fn expand_home(s: &str) -> PathBuf {
    match (s.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ if s == "~" => std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(s)),
        _ => PathBuf::from(s),
    }
}

/// The line and column (both from 1, the column in characters) of byte
/// `at` of `text`.
fn line_column(text: &str, at: usize) -> (usize, usize) {
    let at = (0..=at.min(text.len()))
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = text[..at].matches('\n').count() + 1;
    (line, text[line_start..at].chars().count() + 1)
}

/// ` at line L, column C` for byte `at` of `text`, so the message itself
/// names the place (a JSON reader sees no label); empty without one.
fn place(text: &str, at: Option<usize>) -> String {
    match at {
        Some(at) => {
            let (line, column) = line_column(text, at);
            format!(" at line {line}, column {column}")
        }
        None => String::new(),
    }
}

/// The keys that run a command as the user (design §3.18 "Commands from
/// the shared git dir"): a worker can write `delegate.toml`, so none of
/// them runs from a file the user has not confirmed. A new key that runs
/// a command belongs here.
pub const COMMAND_KEYS: [&str; 2] = ["apply.verify", "workspace.setup"];

impl Config {
    /// The value of one of [`COMMAND_KEYS`] (empty: no command).
    pub fn command(&self, key: &str) -> &str {
        match key {
            "apply.verify" => &self.verify,
            "workspace.setup" => &self.setup,
            _ => "",
        }
    }

    /// Set one of [`COMMAND_KEYS`] (what runs in its place).
    pub fn set_command(&mut self, key: &str, value: &str) {
        match key {
            "apply.verify" => self.verify = value.to_string(),
            "workspace.setup" => self.setup = value.to_string(),
            _ => {}
        }
    }
}

/// Every key `text` sets, as `section.name` (nested tables joined with
/// dots), with its value as shown to a person (a string as it is, any
/// other value as TOML writes it); `None` when `text` is not TOML.
pub fn keys(text: &str) -> Option<std::collections::BTreeMap<String, String>> {
    fn walk(
        prefix: &str,
        table: &toml::Table,
        out: &mut std::collections::BTreeMap<String, String>,
    ) {
        for (name, value) in table {
            let key = match prefix {
                "" => name.clone(),
                p => format!("{p}.{name}"),
            };
            match value {
                toml::Value::Table(t) => walk(&key, t, out),
                toml::Value::String(s) => {
                    out.insert(key, s.clone());
                }
                other => {
                    out.insert(key, other.to_string());
                }
            }
        }
    }
    let table: toml::Table = toml::from_str(text).ok()?;
    let mut out = std::collections::BTreeMap::new();
    walk("", &table, &mut out);
    Some(out)
}

/// Where git-delegate keeps the copy of the `delegate.toml` the user
/// confirmed (`record::trust` writes it): `<common-dir>/delegate/confirmed/delegate.toml`
/// for the file `<common-dir>/delegate.toml`.
pub fn confirmed_copy(file: &Path) -> PathBuf {
    let common = file.parent().unwrap_or(Path::new("."));
    common
        .join("delegate")
        .join("confirmed")
        .join("delegate.toml")
}

/// [`confirmed_copy`] when it is there and differs from `file` now: what a
/// help line offers to compare with, and to put back.
pub fn differing_copy(file: &Path) -> Option<PathBuf> {
    let copy = confirmed_copy(file);
    let kept = std::fs::read(&copy).ok()?;
    (std::fs::read(file).ok()? != kept).then_some(copy)
}
