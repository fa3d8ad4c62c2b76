//! `<common-dir>/delegate.toml` (design §9): every key optional with a default;
//! unknown keys, wrong types and bad values are errors that point at the line,
//! and so are bytes that are not UTF-8 and NULs (design §5).
//!
//! Owns: reading and validating the config file, and its typed error
//! (`ConfigError`: the file, the span in its text and why, the I/O or TOML
//! error as its cause).
//! Never: writes the config, or reads git's own config; decides no error
//! code or help line (`ops::explain` does).

use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use toml::Spanned;

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

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct File {
    #[serde(default)]
    workspace: WorkspaceSection,
    #[serde(default)]
    lease: LeaseSection,
    #[serde(default)]
    apply: ApplySection,
    #[serde(default)]
    gc: GcSection,
    #[serde(default)]
    hooks: HooksSection,
    #[serde(default)]
    lock: LockSection,
    #[serde(default)]
    undo: UndoSection,
    #[serde(default)]
    run: RunSection,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct WorkspaceSection {
    mode: Option<Mode>,
    root: Option<Spanned<String>>,
    copy_ignored: Option<Vec<String>>,
    snapshots: Option<Snapshots>,
    setup: Option<String>,
    setup_jobs: Option<Spanned<i64>>,
    pool: Option<Spanned<i64>>,
    pool_ttl: Option<Spanned<String>>,
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

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct LeaseSection {
    ttl: Option<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct ApplySection {
    stop_processes: Option<StopProcesses>,
    strict: Option<bool>,
    verify: Option<String>,
    verify_timeout: Option<Spanned<String>>,
    verify_jobs: Option<Spanned<i64>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct GcSection {
    keep_failed: Option<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct HooksSection {
    stale_leases: Option<StaleLeases>,
    forbid_commit: Option<bool>,
    private_baselines: Option<PrivateBaselines>,
    on_remove: Option<OnRemove>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct UndoSection {
    keep: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RunSection {
    port_base: Option<Spanned<i64>>,
    ports_per_task: Option<Spanned<i64>>,
    sandbox: Option<Sandbox>,
    network: Option<bool>,
    writable: Option<Vec<Spanned<String>>>,
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

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct LockSection {
    timeout: Option<Spanned<String>>,
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

impl Config {
    /// Read `path`; a missing file is the default config.
    pub fn load(path: &Path) -> Result<Config> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
            Err(source) => {
                return Err(ConfigError::Unreadable {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        Self::parse_bytes(path, bytes)
    }

    /// [`Config::parse`] of a file's bytes: bytes that are not UTF-8, and a
    /// NUL (TOML allows neither), are pointed at by line and column like
    /// any other config error (design §5), never as an unreadable file.
    pub fn parse_bytes(path: &Path, bytes: Vec<u8>) -> Result<Config> {
        let (text, bad) = match String::from_utf8(bytes) {
            Ok(t) => {
                let nul = t.find('\0');
                (t, nul.map(|at| (at, "a NUL byte".to_string())))
            }
            Err(e) => {
                let at = e.utf8_error().valid_up_to();
                let byte = e.as_bytes()[at];
                // Shown with U+FFFD for what is not UTF-8: up to `at` the
                // text is the file's own bytes, so the span is there too.
                let lossy = String::from_utf8_lossy(e.as_bytes()).into_owned();
                (
                    lossy,
                    Some((at, format!("a byte that is not UTF-8 (0x{byte:02x})"))),
                )
            }
        };
        let Some((at, what)) = bad else {
            return Self::parse(path, &text);
        };
        // Shown on a terminal: a NUL as the symbol for it, never raw (the
        // first one is at `at`, so nothing before it moves).
        let shown = text.replace('\0', "\u{2400}");
        let len = shown[at..].chars().next().map_or(0, char::len_utf8);
        let (line, column) = line_column(&shown, at);
        Err(ConfigError::NotText {
            path: path.to_path_buf(),
            what,
            line,
            column,
            shown,
            span: at..at + len,
        })
    }

    pub fn parse(path: &Path, text: &str) -> Result<Config> {
        let bad = |reason: String, span: Range<usize>, label: &'static str| ConfigError::Value {
            path: path.to_path_buf(),
            text: text.to_string(),
            span,
            label,
            reason,
        };
        let file: File = toml::from_str(text).map_err(|source| ConfigError::Toml {
            path: path.to_path_buf(),
            text: text.to_string(),
            source: Box::new(source),
        })?;
        let mut cfg = Config::default();
        let duration = |v: &Spanned<String>, key: &str| {
            crate::sys::time::duration(v.get_ref()).map_err(|e| match e {
                crate::sys::time::DurationError::Malformed => bad(
                    format!(
                        "`{key}` must be a duration such as 90s, 30m, 2h or 7d, not {:?}",
                        v.get_ref()
                    ),
                    v.span(),
                    "not a duration",
                ),
                crate::sys::time::DurationError::TooLong => bad(
                    format!("`{key}`: {}", e.describe(v.get_ref())),
                    v.span(),
                    "too long",
                ),
            })
        };
        cfg.mode = file.workspace.mode.unwrap_or(cfg.mode);
        if let Some(r) = &file.workspace.root {
            if r.get_ref().trim().is_empty() {
                return Err(bad(
                    "`workspace.root` is empty".into(),
                    r.span(),
                    "empty path",
                ));
            }
            let root = expand_home(r.get_ref());
            if !root.is_absolute() {
                return Err(bad(
                    format!(
                        "`workspace.root` must be an absolute path (or start with `~/`), not {:?}",
                        r.get_ref()
                    ),
                    r.span(),
                    "relative path",
                ));
            }
            cfg.root = Some(root);
        }
        if let Some(c) = file.workspace.copy_ignored {
            cfg.copy_ignored = c;
        }
        cfg.snapshots = file.workspace.snapshots.unwrap_or(cfg.snapshots);
        cfg.setup = file.workspace.setup.clone().unwrap_or_default();
        // A number from `min` to `max` (`rule` names the key and `min`,
        // and says what 0 means where 0 is allowed), `label` under it.
        let within = |v: &Spanned<i64>, (min, max): (i64, i64), rule: &str, label| {
            if !(min..=max).contains(v.get_ref()) {
                return Err(bad(
                    format!("{rule} to {max}, not {}", v.get_ref()),
                    v.span(),
                    label,
                ));
            }
            Ok(*v.get_ref())
        };
        let count = |v, max, rule| Ok(within(v, (0, max), rule, "out of range")? as usize);
        if let Some(j) = &file.workspace.setup_jobs {
            let rule = "`workspace.setup-jobs` must be 0 (the number of CPUs)";
            cfg.setup_jobs = count(j, 256, rule)?;
        }
        if let Some(n) = &file.workspace.pool {
            cfg.pool = count(n, 1024, "`workspace.pool` must be 0 (no pool)")?;
        }
        if let Some(t) = &file.workspace.pool_ttl {
            cfg.pool_ttl_secs = duration(t, "workspace.pool-ttl")?;
        }
        if let Some(t) = &file.lease.ttl {
            cfg.ttl_secs = duration(t, "lease.ttl")?;
        }
        if let Some(s) = file.apply.stop_processes {
            cfg.stop_processes = s;
        }
        if let Some(s) = file.apply.strict {
            cfg.strict = s;
        }
        if let Some(v) = &file.apply.verify {
            cfg.verify = v.clone();
        }
        if let Some(t) = &file.apply.verify_timeout {
            cfg.verify_timeout_secs = duration(t, "apply.verify-timeout")?;
        }
        if let Some(j) = &file.apply.verify_jobs {
            let rule = "`apply.verify-jobs` must be 1";
            cfg.verify_jobs = within(j, (1, 64), rule, "out of range")? as usize;
        }
        if let Some(k) = &file.gc.keep_failed {
            cfg.keep_failed_secs = duration(k, "gc.keep-failed")?;
        }
        if let Some(s) = file.hooks.on_remove {
            cfg.on_remove = s;
        }
        if let Some(s) = file.hooks.stale_leases {
            cfg.stale_leases = s;
        }
        if let Some(f) = file.hooks.forbid_commit {
            cfg.forbid_commit = f;
        }
        if let Some(p) = file.hooks.private_baselines {
            cfg.private_baselines = p;
        }
        if let Some(t) = &file.lock.timeout {
            cfg.lock_timeout_secs = duration(t, "lock.timeout")?;
        }
        if let Some(k) = file.undo.keep {
            cfg.undo_keep = k;
        }
        if let Some(b) = &file.run.port_base {
            let rule = "`run.port-base` must be 1";
            cfg.port_base = within(b, (1, 65535), rule, "not a port")? as u16;
        }
        if let Some(n) = &file.run.ports_per_task {
            let rule = "`run.ports-per-task` must be 1";
            cfg.ports_per_task = within(n, (1, 1000), rule, "out of range")? as u16;
        }
        cfg.sandbox = file.run.sandbox.unwrap_or(cfg.sandbox);
        cfg.network = file.run.network.unwrap_or(cfg.network);
        for w in file.run.writable.iter().flatten() {
            let dir = expand_home(w.get_ref());
            if !dir.is_absolute() {
                return Err(bad(
                    format!(
                        "`run.writable` entries must be absolute paths (or start with `~/`), not {:?}",
                        w.get_ref()
                    ),
                    w.span(),
                    "relative path",
                ));
            }
            cfg.writable.push(dir);
        }
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each of `lines`, in `[section]`, is refused pointing at its line.
    fn refused_in(section: &str, lines: &[&str]) {
        refused(lines.iter().map(|l| format!("[{section}]\n{l}\n")));
    }

    /// Each of `texts` is refused with an error pointing at its line.
    fn refused(texts: impl IntoIterator<Item = impl AsRef<str>>) {
        for text in texts {
            let text = text.as_ref();
            let e = Config::parse(Path::new("delegate.toml"), text).unwrap_err();
            assert!(e.located().is_some(), "{text}: {e}");
        }
    }

    #[test]
    fn defaults_and_values() {
        let p = Path::new("delegate.toml");
        let c = Config::parse(p, "").unwrap();
        assert_eq!(c.ttl_secs, 86_400);
        let c = Config::parse(p, "[lease]\nttl = \"2h\"\n[apply]\nstrict = true\n").unwrap();
        assert_eq!(c.ttl_secs, 7200);
        assert!(c.strict);
    }

    #[test]
    fn snapshots_key() {
        let p = Path::new("delegate.toml");
        assert_eq!(Config::parse(p, "").unwrap().snapshots, Snapshots::Auto);
        let c = Config::parse(p, "[workspace]\nsnapshots = \"never\"\n").unwrap();
        assert_eq!(c.snapshots, Snapshots::Never);
        let c = Config::parse(p, "[workspace]\nsnapshots = \"auto\"\n").unwrap();
        assert_eq!(c.snapshots, Snapshots::Auto);
        refused_in(
            "workspace",
            &["snapshots = \"always\"", "snapshots = false"],
        );
    }

    #[test]
    fn sandbox_keys() {
        let p = Path::new("delegate.toml");
        let c = Config::parse(p, "").unwrap();
        assert_eq!((c.sandbox, c.network), (Sandbox::Auto, true));
        assert!(c.writable.is_empty());
        let text = "[run]\nsandbox = \"on\"\nnetwork = false\nwritable = [\"/var/cache/x\"]\n";
        let c = Config::parse(p, text).unwrap();
        assert_eq!((c.sandbox, c.network), (Sandbox::On, false));
        assert_eq!(c.writable, vec![PathBuf::from("/var/cache/x")]);
        refused_in(
            "run",
            &[
                "sandbox = \"yes\"",
                "sandbox = true",
                "network = \"no\"",
                "writable = \"/tmp\"",
                "writable = [\"relative/dir\"]",
            ],
        );
    }

    #[test]
    fn setup_keys() {
        let p = Path::new("delegate.toml");
        let c = Config::parse(p, "").unwrap();
        assert_eq!((c.setup.as_str(), c.setup_jobs), ("", 0));
        let c = Config::parse(p, "[workspace]\nsetup = \"npm ci\"\nsetup-jobs = 2\n").unwrap();
        assert_eq!((c.setup.as_str(), c.setup_jobs), ("npm ci", 2));
    }

    #[test]
    fn pool_keys() {
        let p = Path::new("delegate.toml");
        let c = Config::parse(p, "").unwrap();
        assert_eq!((c.pool, c.pool_ttl_secs), (0, 7 * 86_400));
        let c = Config::parse(p, "[workspace]\npool = 4\npool-ttl = \"2h\"\n").unwrap();
        assert_eq!((c.pool, c.pool_ttl_secs), (4, 7200));
        refused_in(
            "workspace",
            &[
                "pool = -1",
                "pool = \"4\"",
                "pool-ttl = \"soon\"",
                "pool-ttl = 3",
            ],
        );
    }

    #[test]
    fn verify_keys() {
        let p = Path::new("delegate.toml");
        let c = Config::parse(p, "").unwrap();
        assert_eq!(
            (c.verify.as_str(), c.verify_timeout_secs, c.verify_jobs),
            ("", 1800, 1)
        );
        let c = Config::parse(
            p,
            "[apply]\nverify = \"make check\"\nverify-timeout = \"5m\"\nverify-jobs = 3\n",
        )
        .unwrap();
        assert_eq!(
            (c.verify.as_str(), c.verify_timeout_secs, c.verify_jobs),
            ("make check", 300, 3)
        );
        refused_in(
            "apply",
            &[
                "verify-jobs = 0",
                "verify-jobs = 65",
                "verify-timeout = \"soon\"",
                "verify = 1",
            ],
        );
    }

    /// A number out of its range is refused saying the range, under the
    /// label of what it is.
    #[test]
    fn ranges_say_what_is_allowed() {
        for (text, said, label) in [
            (
                "[apply]\nverify-jobs = 0",
                "`apply.verify-jobs` must be 1 to 64, not 0",
                "out of range",
            ),
            (
                "[run]\nport-base = 0",
                "`run.port-base` must be 1 to 65535, not 0",
                "not a port",
            ),
            (
                "[run]\nports-per-task = 1001",
                "`run.ports-per-task` must be 1 to 1000, not 1001",
                "out of range",
            ),
            (
                "[workspace]\npool = 2000",
                "`workspace.pool` must be 0 (no pool) to 1024, not 2000",
                "out of range",
            ),
        ] {
            let e = Config::parse(Path::new("delegate.toml"), text).unwrap_err();
            assert!(e.to_string().ends_with(said), "{e}");
            assert!(
                matches!(e, ConfigError::Value { label: l, .. } if l == label),
                "{e}"
            );
        }
    }

    #[test]
    fn errors_point_at_lines() {
        refused([
            "[lease]\nttl = 5\n",
            "[lease]\nttl = \"5 parsecs\"\n",
            "[workspace]\nflavour = \"x\"\n",
            "[nope]\n",
            "[apply]\nstop-processes = \"maybe\"\n",
            "[workspace]\nroot = \"relative/ws\"\n",
            "[workspace]\nroot = \"\"\n",
            "[lock]\ntimeout = \"0s\"\n",
            "[hooks]\nforbid-commit = \"yes\"\n",
            "[run]\nport-base = 0\n",
            "[run]\nports-per-task = \"ten\"\n",
            "[run]\nports = 3\n",
            "[workspace]\nsetup-jobs = -1\n",
            "[workspace]\nsetup = 3\n",
            "workspace = 3\n",
        ]);
    }
}
