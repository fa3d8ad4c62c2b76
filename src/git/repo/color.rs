//! git's colour and pager settings for the binary: `color.ui` and
//! `color.diff` as git reads them (`git -c`, the source's config, or outside
//! one the user's: [`color_ui`], [`color_setting`]), and the pager git would
//! choose for a diff ([`diff_pager`]).
//! Never: starts the pager or decides the colour itself (the binary does),
//! or changes any config.

use super::locate::open_source;

/// git's `color.ui`, as git reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorUi {
    Never,
    Auto,
    Always,
}

/// git's `color.ui` (`git -c`, repository, global and system config), when
/// set, for the binary's colour decision (design §3: `--color` and `NO_COLOR`
/// come first; the binary asks only when they leave it open).
pub fn color_ui() -> Option<ColorUi> {
    color_setting("color.ui")
}

/// A colour setting of git's (`color.ui`, `color.diff`, ...) read as
/// [`color_ui`] reads `color.ui`; `None` when unset or not understood.
pub fn color_setting(key: &str) -> Option<ColorUi> {
    let value = git_setting(key)?;
    match value.to_ascii_lowercase().as_str() {
        "false" | "never" | "no" | "off" | "0" => Some(ColorUi::Never),
        "always" => Some(ColorUi::Always),
        "true" | "yes" | "on" | "1" | "auto" | "" => Some(ColorUi::Auto),
        _ => None,
    }
}

/// The last value of `key` in git's `GIT_CONFIG_PARAMETERS` (how `git -c
/// key=value delegate` passes its settings on; gix does not read it): a
/// list of shell single-quoted words, `'key'='value'` or the older
/// `'key=value'`; a key without a value is `true` (returned as "").
fn from_config_parameters(params: &str, key: &str) -> Option<String> {
    // Split into single-quoted words, remembering whether `=` joins two.
    let mut words: Vec<(String, bool)> = Vec::new();
    let mut chars = params.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\'' {
            continue;
        }
        let mut word = String::new();
        loop {
            match chars.next() {
                Some('\'') => {
                    // `'\''` inside a word is a quote.
                    if chars.peek() == Some(&'\\') {
                        chars.next();
                        chars.next();
                        word.push('\'');
                        if chars.peek() == Some(&'\'') {
                            chars.next();
                            continue;
                        }
                    }
                    break;
                }
                Some(ch) => word.push(ch),
                None => return None,
            }
        }
        let joined = chars.peek() == Some(&'=');
        if joined {
            chars.next();
        }
        words.push((word, joined));
    }
    let mut found = None;
    let mut i = 0;
    while i < words.len() {
        let (word, joined) = &words[i];
        let (k, v) = if *joined {
            let v = words.get(i + 1).map(|w| w.0.clone()).unwrap_or_default();
            i += 2;
            (word.clone(), v)
        } else {
            i += 1;
            match word.split_once('=') {
                Some((k, v)) => (k.to_string(), v.to_string()),
                None => (word.clone(), String::new()),
            }
        };
        if k.eq_ignore_ascii_case(key) {
            found = Some(v);
        }
    }
    found
}

/// The value of git's setting `key`: `git -c` first, then the
/// repository's (or, outside one, the user's) config files.
fn git_setting(key: &str) -> Option<String> {
    match std::env::var("GIT_CONFIG_PARAMETERS")
        .ok()
        .and_then(|p| from_config_parameters(&p, key))
    {
        Some(v) => Some(v),
        None => config_value(key),
    }
}

/// The pager git would page `git diff` through (design §3.16), or `None`
/// for none, as git's `git_pager` chooses it: `pager.diff` false is none;
/// else `GIT_PAGER`, then `pager.diff` when it is a command, then
/// `core.pager`, `PAGER`, and `less`; an empty command or `cat` is none.
pub fn diff_pager() -> Option<String> {
    let per_command = match git_setting("pager.diff") {
        Some(v)
            if matches!(
                v.to_ascii_lowercase().as_str(),
                "false" | "no" | "off" | "0"
            ) =>
        {
            return None
        }
        Some(v)
            if !matches!(
                v.to_ascii_lowercase().as_str(),
                "true" | "yes" | "on" | "1" | ""
            ) =>
        {
            Some(v)
        }
        _ => None,
    };
    let chosen = std::env::var("GIT_PAGER")
        .ok()
        .or(per_command)
        .or_else(|| git_setting("core.pager"))
        .or_else(|| std::env::var("PAGER").ok())
        .unwrap_or_else(|| "less".to_string());
    let trimmed = chosen.trim();
    if trimmed.is_empty() || trimmed == "cat" {
        return None;
    }
    Some(chosen)
}

/// `key` from the repository's (or, outside one, the user's) config files.
fn config_value(key: &str) -> Option<String> {
    // The source as the commands find it (`GIT_DIR` and friends included).
    let repo = std::env::current_dir()
        .ok()
        .and_then(|cwd| open_source(&cwd).ok());
    let value = match &repo {
        Some(repo) => repo.config_snapshot().string(key)?.to_string(),
        None => {
            // Outside a repository only the user's and the system's config apply.
            let mut cmd = std::process::Command::new("git");
            cmd.args(["config", "--get", key])
                .stderr(std::process::Stdio::null());
            crate::sys::process::without_hooks(&mut cmd);
            let out = cmd.output().ok()?;
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        }
    };
    Some(value).filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_parameters_as_git_passes_them() {
        let p = "'core.editor'='vi' 'color.ui'='never'";
        assert_eq!(
            from_config_parameters(p, "color.ui").as_deref(),
            Some("never")
        );
        assert_eq!(
            from_config_parameters("'color.ui=always'", "color.ui").as_deref(),
            Some("always")
        );
        assert_eq!(
            from_config_parameters("'Color.UI'", "color.ui").as_deref(),
            Some("")
        );
        assert_eq!(
            from_config_parameters("'a.b'='it'\\''s' 'color.ui'='false'", "color.ui").as_deref(),
            Some("false")
        );
        assert_eq!(from_config_parameters("'a.b'='x'", "color.ui"), None);
        assert_eq!(from_config_parameters("'broken", "color.ui"), None);
    }
}
