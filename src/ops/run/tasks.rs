//! The `--tasks FILE` format of `git delegate run` (design §3.13):
//! `[[task]]` tables with a name, a command, an environment and a timeout,
//! errors pointing at the line and column; and the placeholders `{task}`
//! `{index}` `{workspace}` in a worker's arguments.
//! Never: runs anything, or reads anything but the file it is given.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use crate::error::{Code, Error, Result};

/// One `[[task]]` of a `--tasks` file.
#[derive(Debug, Clone, Default)]
pub struct TaskSpec {
    pub name: String,
    /// Its own command (default: the one after `--`).
    pub command: Option<Vec<String>>,
    pub env: Vec<(String, String)>,
    pub timeout_secs: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TasksFile {
    #[serde(default)]
    task: Vec<TaskEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskEntry {
    name: Spanned<String>,
    command: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    env: std::collections::BTreeMap<String, String>,
    timeout: Option<Spanned<String>>,
}

/// `line L, column C` (1-based) of byte `offset` in `text`.
fn position(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// Read a `--tasks` file (design §3.13): `[[task]]` tables with `name` and
/// optionally `command` (an array), `env` (a table of strings), `timeout`
/// (a duration). Unknown keys, wrong types, bad names and durations are
/// errors pointing at the line and column (exit 2).
pub fn load_tasks(path: &Path) -> Result<Vec<TaskSpec>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::usage(
            Code::TasksFile,
            format!("cannot read the tasks file {}: {e}", path.display()),
            "give --tasks a readable TOML file of [[task]] tables",
        )
    })?;
    parse_tasks(path, &text)
}

pub fn parse_tasks(path: &Path, text: &str) -> Result<Vec<TaskSpec>> {
    let bad = |message: String, span: std::ops::Range<usize>, label: &str| {
        let (line, col) = position(text, span.start);
        Error::usage(
            Code::TasksFile,
            format!(
                "invalid tasks file {} at line {line}, column {col}: {message}",
                path.display()
            ),
            "fix that line: each [[task]] has `name`, and optionally `command` (an array of strings), `env` (a table of strings) and `timeout` (such as \"10m\")",
        )
        .with_source(
            path.display().to_string(),
            text.to_string(),
            span,
            label.to_string(),
        )
    };
    let file: TasksFile = toml::from_str(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        bad(e.message().trim().to_string(), span, "here")
    })?;
    if file.task.is_empty() {
        return Err(bad("it has no [[task]] table".into(), 0..0, "no task"));
    }
    let mut out: Vec<TaskSpec> = Vec::new();
    for t in file.task {
        let name = t.name.get_ref().clone();
        if let Err(e) = crate::ops::prepare::check(std::slice::from_ref(&name), None) {
            return Err(bad(e.message, t.name.span(), "bad task name"));
        }
        if out.iter().any(|o| o.name == name) {
            return Err(bad(
                format!("the task name {name:?} is given twice"),
                t.name.span(),
                "duplicate",
            ));
        }
        if let Some(c) = &t.command {
            if c.get_ref().is_empty() {
                return Err(bad("`command` is empty".into(), c.span(), "empty command"));
            }
        }
        let timeout_secs = match &t.timeout {
            Some(v) => Some(crate::sys::time::duration(v.get_ref()).map_err(|e| {
                bad(
                    format!("`timeout`: {}", e.describe(v.get_ref())),
                    v.span(),
                    "not a duration",
                )
            })?),
            None => None,
        };
        out.push(TaskSpec {
            name,
            command: t.command.map(|c| c.into_inner()),
            env: t.env.into_iter().collect(),
            timeout_secs,
        });
    }
    Ok(out)
}

/// `arg` with `{task}`, `{index}` and `{workspace}` replaced, `{{` and `}}`
/// as literal braces; any other brace stays as it is.
pub fn substitute(arg: &OsStr, task: &str, index: usize, workspace: &Path) -> OsString {
    let b = arg.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut i = 0;
    let index = index.to_string();
    let keys: [(&[u8], &[u8]); 3] = [
        (b"{task}", task.as_bytes()),
        (b"{index}", index.as_bytes()),
        (b"{workspace}", workspace.as_os_str().as_bytes()),
    ];
    'outer: while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"{{") || rest.starts_with(b"}}") {
            out.push(rest[0]);
            i += 2;
            continue;
        }
        for (k, v) in keys {
            if rest.starts_with(k) {
                out.extend_from_slice(v);
                i += k.len();
                continue 'outer;
            }
        }
        out.push(rest[0]);
        i += 1;
    }
    OsString::from_vec(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders() {
        let ws = Path::new("/w/s 1");
        let s = |a: &str| {
            substitute(OsStr::new(a), "t1", 3, ws)
                .into_string()
                .unwrap()
        };
        assert_eq!(s("{task}-{index}"), "t1-3");
        assert_eq!(s("--root={workspace}"), "--root=/w/s 1");
        assert_eq!(s("{{task}}"), "{task}");
        assert_eq!(s("{{{task}}}"), "{t1}");
        assert_eq!(s("{other} {"), "{other} {");
    }

    #[test]
    fn tasks_file() {
        let p = Path::new("tasks.toml");
        let t = parse_tasks(
            p,
            "[[task]]\nname = \"a\"\ncommand = [\"echo\", \"{task}\"]\nenv = { X = \"1\" }\ntimeout = \"5s\"\n[[task]]\nname = \"b\"\n",
        )
        .unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].command.as_deref().unwrap(), ["echo", "{task}"]);
        assert_eq!(t[0].env, [("X".to_string(), "1".to_string())]);
        assert_eq!(t[0].timeout_secs, Some(5));
        assert!(t[1].command.is_none());
        for (text, line) in [
            ("[[task]]\nname = \"a\"\ncolour = 1\n", 3),
            ("[[task]]\nname = \"a\"\ncommand = \"echo\"\n", 3),
            ("[[task]]\nname = \"a\"\ntimeout = \"soon\"\n", 3),
            ("[[task]]\nname = \"-a\"\n", 2),
            ("[[task]]\nname = \"a\"\n[[task]]\nname = \"a\"\n", 4),
        ] {
            let e = parse_tasks(p, text).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{text}");
            assert!(
                e.message.contains(&format!("line {line},")),
                "{text}: {}",
                e.message
            );
        }
    }
}
