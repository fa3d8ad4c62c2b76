//! Everything the user sees: human text, JSON documents (SPEC §6), error
//! reports, colour; broken pipes end the output quietly.
//!
//! Owns: stdout and stderr. With `--json`, stdout carries exactly one
//! document and human text goes to stderr.
//! Never: decides what to say (commands do), or touches a repository.

use std::io::{IsTerminal, Write};

use serde_json::{json, Value};

use crate::cli::ColorChoice;
use crate::error::Error;

pub const SCHEMA: &str = "git-delegate/v1";

pub struct Ui {
    pub json: bool,
    pub color: bool,
    /// Batches whose interrupted write-back this command rolled back.
    pub recovered: std::cell::RefCell<Vec<String>>,
}

/// Decide colour (SPEC §3): `--color` wins over `NO_COLOR`, which wins over
/// git's `color.ui`, which wins over detecting a terminal.
pub fn use_color(choice: ColorChoice, terminal: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
                return false;
            }
            if !terminal {
                return false;
            }
            match git_color_ui() {
                Some(v) => v,
                None => true,
            }
        }
    }
}

/// git's `color.ui` as a yes/no, when set to a boolean (or `never`/`always`).
fn git_color_ui() -> Option<bool> {
    let repo = gix::discover(".").ok()?;
    let value = repo.config_snapshot().string("color.ui")?;
    match value.to_string().to_ascii_lowercase().as_str() {
        "false" | "never" | "no" | "off" | "0" => Some(false),
        "always" | "true" | "yes" | "on" | "1" | "auto" => Some(true),
        _ => None,
    }
}

/// Write to stdout; a closed pipe ends the process quietly.
pub fn stdout(text: &str) {
    let mut out = std::io::stdout().lock();
    if out
        .write_all(text.as_bytes())
        .and_then(|_| out.flush())
        .is_err()
    {
        std::process::exit(0);
    }
}

fn stderr(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

impl Ui {
    pub fn new(json: bool, choice: ColorChoice) -> Ui {
        let terminal = if json {
            std::io::stderr().is_terminal()
        } else {
            std::io::stdout().is_terminal()
        };
        Ui {
            json,
            color: use_color(choice, terminal),
            recovered: Default::default(),
        }
    }

    /// Human text: stdout, or stderr when a JSON document owns stdout.
    pub fn say(&self, text: &str) {
        if self.json {
            stderr(text);
        } else {
            stdout(text);
        }
    }

    /// A warning or progress note: always stderr.
    pub fn warn(&self, text: &str) {
        stderr(text);
    }

    /// Emphasis for human text.
    pub fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }

    pub fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }

    /// Print a JSON document with the common fields added.
    pub fn doc(&self, mut value: Value) {
        if let Value::Object(map) = &mut value {
            let mut out = serde_json::Map::new();
            out.insert("schema".into(), json!(SCHEMA));
            for (k, v) in std::mem::take(map) {
                out.insert(k, v);
            }
            let recovered = self.recovered.borrow();
            if !recovered.is_empty() && !out.contains_key("recovered_writebacks") {
                out.insert("recovered_writebacks".into(), json!(*recovered));
            }
            if crate::paths::lossy_seen() {
                out.insert("lossy_paths".into(), json!(true));
            }
            *map = out;
        }
        let text = serde_json::to_string_pretty(&value).unwrap_or_else(|_| "{}".into());
        stdout(&format!("{text}\n"));
    }

    /// Report an error: a diagnostic on stderr, and with `--json` the error document.
    pub fn error(&self, err: &Error) {
        if self.json {
            self.doc(error_doc(err.code, &err.message, &err.help));
        }
        let handler = if self.color {
            miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode())
        } else {
            miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
        };
        let mut text = String::new();
        if handler.render_report(&mut text, err).is_err() {
            text = format!("error[{}]: {}\nhelp: {}\n", err.code, err.message, err.help);
        }
        stderr(&text);
    }
}

pub fn error_doc(code: &str, message: &str, help: &str) -> Value {
    json!({ "error": { "code": code, "message": message, "help": help } })
}
