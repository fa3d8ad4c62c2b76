//! Everything the user sees: human text, JSON documents (design §6), error
//! reports, colour; broken pipes end the output quietly.
//!
//! Owns: stdout and stderr. With `--json`, stdout carries exactly one
//! document and human text goes to stderr.
//! Never: decides what to say (commands do), or touches a repository (git's
//! `color.ui` is read by the repository layer, `repo::color_ui`).

use std::io::{IsTerminal, Write};

use serde_json::Value;

use crate::cli::ColorChoice;
use git_delegate::error::{Code, Error};
use git_delegate::git::repo::ColorUi;
use git_delegate::writeback::Recovery;

pub use crate::render::style::{escape_text, Ui};
pub use crate::render::SCHEMA;

/// Decide colour (design §3): `--color` wins over `NO_COLOR`, which wins over
/// git's `color.ui`, which wins over detecting a terminal. `terminal` says
/// whether the text goes to a terminal.
pub fn use_color(choice: ColorChoice, terminal: bool) -> bool {
    decide_color(
        choice,
        std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()),
        git_delegate::git::repo::color_ui,
        terminal,
    )
}

/// Colour for text git paints under its own setting `key` (`color.diff`):
/// as [`use_color`], with `key`, when set, taking the place of `color.ui`
/// (as in git).
pub fn use_color_for(key: &str, terminal: bool) -> bool {
    decide_color(
        choice(),
        std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()),
        || git_delegate::git::repo::color_setting(key).or_else(git_delegate::git::repo::color_ui),
        terminal,
    )
}

/// The precedence itself; `color_ui` (git's setting, read by the repository
/// layer: [`git_delegate::git::repo::color_ui`]) is only asked when it matters.
fn decide_color(
    choice: ColorChoice,
    no_color: bool,
    color_ui: impl FnOnce() -> Option<ColorUi>,
    terminal: bool,
) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto if no_color => false,
        ColorChoice::Auto => match color_ui() {
            Some(ColorUi::Never) => false,
            Some(ColorUi::Always) => true,
            Some(ColorUi::Auto) | None => terminal,
        },
    }
}

/// The `--color` choice of this process, for text that goes elsewhere than
/// `Ui::color` was decided for (diagnostics and clap's messages on stderr).
static CHOICE: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

fn set_choice(choice: ColorChoice) {
    let n = match choice {
        ColorChoice::Auto => 0,
        ColorChoice::Always => 1,
        ColorChoice::Never => 2,
    };
    CHOICE.store(n, std::sync::atomic::Ordering::Relaxed);
}

fn choice() -> ColorChoice {
    match CHOICE.load(std::sync::atomic::Ordering::Relaxed) {
        1 => ColorChoice::Always,
        2 => ColorChoice::Never,
        _ => ColorChoice::Auto,
    }
}

/// The `--color` value of a command line clap could not parse (the last
/// `--color WHEN` / `--color=WHEN` with a valid value), else `auto`.
pub fn color_choice_from_args(args: &[std::ffi::OsString]) -> ColorChoice {
    let mut choice = ColorChoice::Auto;
    let mut iter = args.iter().skip(1).map(|a| a.to_string_lossy());
    while let Some(arg) = iter.next() {
        if arg == "--" {
            break;
        }
        let value = if arg == "--color" {
            iter.next().map(|v| v.into_owned())
        } else {
            arg.strip_prefix("--color=").map(str::to_string)
        };
        match value.as_deref() {
            Some("auto") => choice = ColorChoice::Auto,
            Some("always") => choice = ColorChoice::Always,
            Some("never") => choice = ColorChoice::Never,
            _ => {}
        }
    }
    choice
}

/// Print a clap error or help text: help and version on stdout, errors on
/// stderr, coloured by the same rules as everything else.
pub fn print_clap(e: &clap::Error, choice: ColorChoice) {
    set_choice(choice);
    let styled = e.render();
    if e.use_stderr() {
        let text = if use_color(choice, std::io::stderr().is_terminal()) {
            styled.ansi().to_string()
        } else {
            styled.to_string()
        };
        stderr(&text);
    } else {
        let text = if use_color(choice, std::io::stdout().is_terminal()) {
            styled.ansi().to_string()
        } else {
            styled.to_string()
        };
        stdout(&text);
    }
}

/// Write to stdout; a closed pipe ends the process quietly.
pub fn stdout(text: &str) {
    stdout_bytes(text.as_bytes())
}

/// Write bytes to stdout; a closed pipe ends the process quietly.
pub fn stdout_bytes(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    if out.write_all(bytes).and_then(|_| out.flush()).is_err() {
        std::process::exit(0);
    }
}

fn stderr(text: &str) {
    let mut err = std::io::stderr().lock();
    crate::progress::erase_for_text(&mut err);
    let _ = err.write_all(text.as_bytes());
}

impl Ui {
    pub fn new(json: bool, choice: ColorChoice) -> Ui {
        set_choice(choice);
        let terminal = if json {
            std::io::stderr().is_terminal()
        } else {
            std::io::stdout().is_terminal()
        };
        Ui {
            json,
            color: use_color(choice, terminal),
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

    /// Progress for a step that may take a while: a line on stderr with the
    /// label and the elapsed time, shown only when stderr is a terminal, no
    /// JSON document is being produced, and the step takes longer than half
    /// a second; erased when the guard is dropped.
    pub fn progress(&self, label: &str) -> crate::progress::Progress {
        let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
        if self.json || dumb || !std::io::stderr().is_terminal() {
            return crate::progress::Progress::disabled();
        }
        crate::progress::Progress::start(label)
    }

    /// Print a JSON document with the common fields added (of a command
    /// that recovered nothing).
    pub fn doc(&self, doc: impl serde::Serialize) {
        self.doc_after(doc, &Recovery::default());
    }

    /// Print a JSON document with the common fields added, among them what
    /// the command's lock-and-recover step did (`recovered_writebacks`,
    /// `completed_writebacks`, design §6), when it did anything.
    pub fn doc_after(&self, doc: impl serde::Serialize, recovery: &Recovery) {
        // Through `Value`: its objects are sorted by key, so the output
        // does not depend on the order of a type's fields.
        // `lossy_paths` is the document's own (`render::Text::doc`).
        let mut value = serde_json::to_value(doc).unwrap_or(Value::Null);
        if let Value::Object(map) = &mut value {
            map.insert("schema".into(), Value::from(SCHEMA));
            if !recovery.rolled_back.is_empty() && !map.contains_key("recovered_writebacks") {
                map.insert("recovered_writebacks".into(), ids(&recovery.rolled_back));
            }
            if !recovery.completed.is_empty() {
                map.insert("completed_writebacks".into(), ids(&recovery.completed));
            }
        }
        let text = serde_json::to_string_pretty(&value).unwrap_or_else(|_| "{}".into());
        stdout(&format!("{text}\n"));
    }

    /// Report an error: a diagnostic on stderr, and with `--json` the error
    /// document (with what the command recovered before it failed).
    pub fn error(&self, err: &Error, recovery: &Recovery) {
        if self.json {
            let t = crate::render::Text::default();
            let doc = crate::render::ErrorDoc::of(&t, err);
            self.doc_after(t.doc(doc), recovery);
        }
        // Diagnostics go to stderr: decide for that stream.
        let color = if self.json {
            self.color
        } else {
            use_color(choice(), std::io::stderr().is_terminal())
        };
        let handler = if color {
            miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode())
        } else {
            miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
        };
        // One line per message and help, never wrapped: a command in a help
        // line must copy and paste whole (design §3.16 "Hints").
        let handler = handler.with_wrap_lines(false);
        // Paths inside the message are shown, never acted on by the terminal.
        let escaped;
        let err = match err.escaped(escape_text) {
            Some(e) => {
                escaped = e;
                &escaped
            }
            None => err,
        };
        let mut text = String::new();
        if handler.render_report(&mut text, err).is_err() {
            text = format!("error[{}]: {}\nhelp: {}\n", err.code, err.message, err.help);
        }
        stderr(&text);
    }
}

/// Batch ids as a JSON array.
fn ids(list: &[String]) -> Value {
    Value::Array(list.iter().map(|s| Value::from(s.as_str())).collect())
}

pub fn error_doc(code: Code, message: &str, help: &str) -> crate::render::ErrorDoc {
    crate::render::ErrorDoc::new(code, message, help)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unprintable_characters_are_escaped_for_people() {
        assert_eq!(escape_text("/home/josé/src"), "/home/josé/src");
        assert_eq!(escape_text("a\x1b[31mb\nc\td"), "a\\e[31mb\\nc\\td");
        assert_eq!(escape_text("a\x07b\u{9b}c"), "a\\x07b\\x9bc");
        assert_eq!(escape_text("x\u{202e}y"), "x\\u{202e}y");
        assert_eq!(
            git_delegate::git::repo::safe_name("bad\x1b[31mname\nx"),
            "bad_[31mname_x"
        );
        assert_eq!(git_delegate::git::repo::safe_name("proj é"), "proj é");
    }

    #[test]
    fn colour_precedence() {
        use ColorChoice::*;
        use ColorUi as G;
        let never_asked = || -> Option<ColorUi> { panic!("color.ui must not be read") };
        // --color wins over everything.
        assert!(decide_color(Always, true, never_asked, false));
        assert!(!decide_color(Never, false, never_asked, true));
        // NO_COLOR wins over color.ui and the terminal.
        assert!(!decide_color(Auto, true, never_asked, true));
        // color.ui wins over the terminal.
        assert!(!decide_color(Auto, false, || Some(G::Never), true));
        assert!(decide_color(Auto, false, || Some(G::Always), false));
        // color.ui = auto/true, or unset: the terminal decides.
        assert!(decide_color(Auto, false, || Some(G::Auto), true));
        assert!(!decide_color(Auto, false, || Some(G::Auto), false));
        assert!(decide_color(Auto, false, || None, true));
        assert!(!decide_color(Auto, false, || None, false));
    }

    #[test]
    fn colour_from_unparsed_args() {
        let args = |v: &[&str]| -> Vec<std::ffi::OsString> { v.iter().map(Into::into).collect() };
        assert_eq!(
            color_choice_from_args(&args(&["gd", "status", "--color", "always", "--bogus"])),
            ColorChoice::Always
        );
        assert_eq!(
            color_choice_from_args(&args(&["gd", "--color=never", "x"])),
            ColorChoice::Never
        );
        assert_eq!(
            color_choice_from_args(&args(&["gd", "--", "--color=never"])),
            ColorChoice::Auto
        );
    }
}
