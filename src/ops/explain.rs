//! The words at the engine's edge: every typed error of the engine's
//! modules (`config::ConfigError`, ...) turned into the one [`Error`] the
//! transactions return and the binary renders: its `Code`, exit status and
//! help line (the message is the typed error's `Display`), and for a config
//! error the file and span it points at. One `From<XError> for Error` per
//! enum, so `?` converts wherever an `Error` is returned (docs/architecture.md
//! "Errors").
//!
//! Owns: which code, exit status and help each typed error has.
//! Never: decides what failed (the module that raises the error does) or
//! prints anything; the list of codes and how an OS error is classified stay
//! in `error` (`Code`, `FsCause`, `Error::io_at`).

use crate::config::ConfigError;
use crate::error::{Code, Error};

/// `delegate::config`, exit 2, pointing at the line (an unreadable file is
/// an I/O error, named by its cause as every other).
impl From<ConfigError> for Error {
    fn from(e: ConfigError) -> Error {
        const FIX: &str =
            "fix or remove that line; `man git-delegate` lists every key and its values";
        let message = e.to_string();
        let (help, name, text, span, label) = match e {
            ConfigError::Unreadable { source, .. } => return Error::io(message, source),
            ConfigError::NotText {
                path, shown, span, ..
            } => (
                "fix or remove that line (`man git-delegate` lists every key and its values), or remove the file",
                path,
                shown,
                span,
                "here",
            ),
            ConfigError::Toml { path, text, source } => {
                let span = source.span().unwrap_or(0..0);
                (FIX, path, text, span, "here")
            }
            ConfigError::Value {
                path,
                text,
                span,
                label,
                ..
            } => (FIX, path, text, span, label),
        };
        Error::usage(Code::Config, message, help).with_source(
            name.display().to_string(),
            text,
            span,
            label.to_string(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn config_errors_are_usage_errors_pointing_at_the_line() {
        let p = Path::new("delegate.toml");
        for text in [
            "[lease]\nttl = 5\n",
            "[workspace]\nroot = \"relative/ws\"\n",
            "[run]\nport-base = 0\n",
        ] {
            let e = Error::from(crate::config::Config::parse(p, text).unwrap_err());
            assert_eq!((e.code, e.exit_code()), (Code::Config, 2), "{text}");
            assert!(miette::Diagnostic::labels(&e).is_some(), "{text}: {e}");
            assert!(
                e.help.starts_with("fix or remove that line; "),
                "{}",
                e.help
            );
        }
        let e = crate::config::Config::parse_bytes(p, b"a = \"\xff\"\n".to_vec()).unwrap_err();
        let e = Error::from(e);
        assert_eq!(
            e.message,
            "invalid configuration in delegate.toml: a byte that is not UTF-8 (0xff) at line 1, column 6 (a config file is UTF-8 text)"
        );
        assert!(e.help.ends_with(", or remove the file"), "{}", e.help);
        assert!(miette::Diagnostic::labels(&e).is_some());
    }
}
