//! Reading `delegate.toml` into a [`Config`] (design §9): the file's TOML
//! shape (its sections, unknown keys refused) and the check of each value,
//! a refusal pointing at the value's span.
//!
//! Owns: the file's sections as serde reads them, and the rules of each
//! value (ranges, durations, absolute paths).
//! Never: decides a default (`Config::default` does) or an error code
//! (`ops::explain` does).

use std::ops::Range;
use std::path::Path;

use toml::Spanned;

use super::file::{File, RunSection, WorkspaceSection};
use super::{expand_home, line_column, Config, ConfigError, Result};

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
        let file: File = toml::from_str(text).map_err(|source| ConfigError::Toml {
            path: path.to_path_buf(),
            text: text.to_string(),
            source: Box::new(source),
        })?;
        let values = Values { path, text };
        let mut cfg = Config::default();
        values.workspace(&file.workspace, &mut cfg)?;
        values.the_rest(&file, &mut cfg)?;
        values.run(&file.run, &mut cfg)?;
        Ok(cfg)
    }
}

/// The text a value was read from, to point at it when it is refused.
struct Values<'t> {
    path: &'t Path,
    text: &'t str,
}

impl Values<'_> {
    fn bad(&self, reason: String, span: Range<usize>, label: &'static str) -> ConfigError {
        ConfigError::Value {
            path: self.path.to_path_buf(),
            text: self.text.to_string(),
            span,
            label,
            reason,
        }
    }

    fn duration(&self, v: &Spanned<String>, key: &str) -> Result<i64> {
        crate::sys::time::duration(v.get_ref()).map_err(|e| match e {
            crate::sys::time::DurationError::Malformed => self.bad(
                format!(
                    "`{key}` must be a duration such as 90s, 30m, 2h or 7d, not {:?}",
                    v.get_ref()
                ),
                v.span(),
                "not a duration",
            ),
            crate::sys::time::DurationError::TooLong => self.bad(
                format!("`{key}`: {}", e.describe(v.get_ref())),
                v.span(),
                "too long",
            ),
        })
    }

    /// A number from `min` to `max` (`rule` names the key and `min`, and
    /// says what 0 means where 0 is allowed), `label` under it.
    fn within(
        &self,
        v: &Spanned<i64>,
        (min, max): (i64, i64),
        rule: &str,
        label: &'static str,
    ) -> Result<i64> {
        if !(min..=max).contains(v.get_ref()) {
            return Err(self.bad(
                format!("{rule} to {max}, not {}", v.get_ref()),
                v.span(),
                label,
            ));
        }
        Ok(*v.get_ref())
    }

    fn count(&self, v: &Spanned<i64>, max: i64, rule: &str) -> Result<usize> {
        Ok(self.within(v, (0, max), rule, "out of range")? as usize)
    }

    /// The `[workspace]` section.
    fn workspace(&self, w: &WorkspaceSection, cfg: &mut Config) -> Result<()> {
        cfg.mode = w.mode.unwrap_or(cfg.mode);
        if let Some(r) = &w.root {
            if r.get_ref().trim().is_empty() {
                return Err(self.bad("`workspace.root` is empty".into(), r.span(), "empty path"));
            }
            let root = expand_home(r.get_ref());
            if !root.is_absolute() {
                return Err(self.bad(
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
        if let Some(c) = &w.copy_ignored {
            cfg.copy_ignored = c.clone();
        }
        cfg.snapshots = w.snapshots.unwrap_or(cfg.snapshots);
        cfg.setup = w.setup.clone().unwrap_or_default();
        if let Some(j) = &w.setup_jobs {
            let rule = "`workspace.setup-jobs` must be 0 (the number of CPUs)";
            cfg.setup_jobs = self.count(j, 256, rule)?;
        }
        if let Some(n) = &w.pool {
            cfg.pool = self.count(n, 1024, "`workspace.pool` must be 0 (no pool)")?;
        }
        if let Some(t) = &w.pool_ttl {
            cfg.pool_ttl_secs = self.duration(t, "workspace.pool-ttl")?;
        }
        Ok(())
    }

    /// `[lease]`, `[apply]`, `[gc]`, `[hooks]`, `[lock]` and `[undo]`, in
    /// that order.
    fn the_rest(&self, file: &File, cfg: &mut Config) -> Result<()> {
        if let Some(t) = &file.lease.ttl {
            cfg.ttl_secs = self.duration(t, "lease.ttl")?;
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
            cfg.verify_timeout_secs = self.duration(t, "apply.verify-timeout")?;
        }
        if let Some(j) = &file.apply.verify_jobs {
            let rule = "`apply.verify-jobs` must be 1";
            cfg.verify_jobs = self.within(j, (1, 64), rule, "out of range")? as usize;
        }
        if let Some(k) = &file.gc.keep_failed {
            cfg.keep_failed_secs = self.duration(k, "gc.keep-failed")?;
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
            cfg.lock_timeout_secs = self.duration(t, "lock.timeout")?;
        }
        if let Some(k) = file.undo.keep {
            cfg.undo_keep = k;
        }
        Ok(())
    }

    /// The `[run]` section.
    fn run(&self, r: &RunSection, cfg: &mut Config) -> Result<()> {
        if let Some(b) = &r.port_base {
            let rule = "`run.port-base` must be 1";
            cfg.port_base = self.within(b, (1, 65535), rule, "not a port")? as u16;
        }
        if let Some(n) = &r.ports_per_task {
            let rule = "`run.ports-per-task` must be 1";
            cfg.ports_per_task = self.within(n, (1, 1000), rule, "out of range")? as u16;
        }
        cfg.sandbox = r.sandbox.unwrap_or(cfg.sandbox);
        cfg.network = r.network.unwrap_or(cfg.network);
        for w in r.writable.iter().flatten() {
            let dir = expand_home(w.get_ref());
            if !dir.is_absolute() {
                return Err(self.bad(
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
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::config::{Sandbox, Snapshots};

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
