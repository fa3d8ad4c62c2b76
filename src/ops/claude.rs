//! Claude Code's worktree hooks (design §3.21): the payloads its
//! `WorktreeCreate` and `WorktreeRemove` hooks send on stdin, the task name
//! and label a worktree gets, finding the batch behind a worktree path, and
//! merging the two hooks into `.claude/settings.local.json`.
//!
//! Payload fields accepted (Claude Code renamed some between versions):
//! create: `name` or `worktree_name` (the worktree's name), `cwd` or
//! `base_path` (the folder the agent works in); remove: `worktree_path`
//! (what create printed), with `cwd` as a second place to look for the
//! repository. Every other field is ignored.
//!
//! Owns: payload parsing, the name → task name rule, the settings merge.
//! Never: prepares or applies itself (the binary calls `prepare::run` and
//! `apply::run`); writes a settings file other than by temp-then-rename, or
//! touches a setting that is not one of its two hook entries.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use crate::error::{Code, Error, Result};
use crate::git::repo::Source;
use crate::record::batch::{self, Batch};

/// The command Claude Code runs for each hook.
pub const CREATE_COMMAND: &str = "git delegate hook worktree-create";
pub const REMOVE_COMMAND: &str = "git delegate hook worktree-remove";

/// What `WorktreeCreate` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Create {
    /// The worktree's name as Claude Code gave it.
    pub name: String,
    /// The folder the agent works in (the batch's prefix comes from it).
    pub cwd: PathBuf,
}

/// What `WorktreeRemove` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remove {
    pub worktree_path: PathBuf,
    /// The session's folder, when the payload names one.
    pub cwd: Option<PathBuf>,
}

fn bad(message: String) -> Error {
    Error::usage(
        Code::BadHookPayload,
        message,
        "run the hook as Claude Code does, with its JSON payload on stdin (see docs/orchestrators.md)",
    )
}

fn object(payload: &[u8]) -> Result<Map<String, Value>> {
    match serde_json::from_slice::<Value>(payload) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(bad(
            "the hook's payload on stdin is not a JSON object".into()
        )),
        Err(e) => Err(bad(format!("the hook's payload on stdin is not JSON: {e}"))),
    }
}

/// The first of `keys` that is a non-empty string.
fn field<'a>(m: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a str> {
    keys.iter()
        .find_map(|k| m.get(*k).and_then(Value::as_str))
        .filter(|s| !s.is_empty())
}

/// Parse a `WorktreeCreate` payload. A relative `cwd` is taken relative to
/// `here` (the hook's own folder).
pub fn parse_create(payload: &[u8], here: &Path) -> Result<Create> {
    let m = object(payload)?;
    let name = field(&m, &["name", "worktree_name"]).ok_or_else(|| {
        bad("the hook's payload names no worktree (`name` or `worktree_name`)".into())
    })?;
    let cwd = field(&m, &["cwd", "base_path"])
        .ok_or_else(|| bad("the hook's payload names no folder (`cwd` or `base_path`)".into()))?;
    Ok(Create {
        name: name.to_string(),
        cwd: here.join(cwd),
    })
}

/// Parse a `WorktreeRemove` payload.
pub fn parse_remove(payload: &[u8], here: &Path) -> Result<Remove> {
    let m = object(payload)?;
    let path = field(&m, &["worktree_path"])
        .ok_or_else(|| bad("the hook's payload names no `worktree_path`".into()))?;
    Ok(Remove {
        worktree_path: here.join(path),
        cwd: field(&m, &["cwd"]).map(|c| here.join(c)),
    })
}

/// A worktree name made a valid task name (`batch::check_task_name`): every
/// character outside `A-Z a-z 0-9 . _ -` becomes `-`, runs of `.` become
/// one, leading characters that are not a letter or digit go, the result
/// is cut to 64 characters, and a trailing `.` or `.lock` goes. `None`
/// when nothing valid is left.
pub fn task_name(name: &str) -> Option<String> {
    let mut out = String::new();
    for c in name.chars() {
        let c = if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
            c
        } else {
            '-'
        };
        if c == '.' && out.ends_with('.') {
            continue;
        }
        if out.is_empty() && !c.is_ascii_alphanumeric() {
            continue;
        }
        out.push(c);
    }
    out.truncate(64);
    loop {
        if let Some(s) = out.strip_suffix(".lock") {
            out = s.to_string();
        } else if out.ends_with('.') {
            out.pop();
        } else {
            break;
        }
    }
    batch::check_task_name(&out).is_ok().then_some(out)
}

/// The label a worktree's batch gets: `claude-<name>` (control characters
/// dropped; a label must have none).
pub fn label(name: &str) -> String {
    format!(
        "claude-{}",
        name.chars().filter(|c| !c.is_control()).collect::<String>()
    )
}

/// The open batch one of whose tasks has `path` as its root or cwd, and
/// that task's name, looked for in the repository around `path` and then
/// around each of `also`. `None`: `path` is no git-delegate workspace.
pub fn find_workspace(path: &Path, also: &[&Path]) -> Option<(Batch, String)> {
    let wanted = canonical(path);
    let mut seen = Vec::new();
    for dir in std::iter::once(path).chain(also.iter().copied()) {
        let Ok(source) = Source::discover(dir) else {
            continue;
        };
        if seen.contains(&source.common_dir) {
            continue;
        }
        let state = crate::git::repo::state_dir(&source.common_dir);
        seen.push(source.common_dir);
        let Ok(batches) = batch::list_ok(&state) else {
            continue;
        };
        for b in batches {
            let found = b.open_tasks().find(|t| {
                let cwd = t.cwd(&b.prefix);
                [t.root.as_path(), cwd.as_path()]
                    .iter()
                    .any(|p| *p == path || canonical(p) == wanted)
            });
            if let Some(t) = found {
                let name = t.name.clone();
                return Some((b, name));
            }
        }
    }
    None
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// What [`install_settings`] did.
pub struct Settings {
    pub file: PathBuf,
    /// Whether the file was written.
    pub changed: bool,
}

/// The settings file the hooks go in: `<root>/.claude/settings.local.json`.
pub fn settings_file(root: &Path) -> PathBuf {
    root.join(".claude").join("settings.local.json")
}

/// Merge both hooks into (`uninstall`: remove them from) the settings file
/// of the working tree `root`, keeping every other setting; the file (and
/// `.claude`) is made when missing. Adding what is there, or removing what
/// is not, writes nothing.
pub fn install_settings(root: &Path, uninstall: bool) -> Result<Settings> {
    let file = settings_file(root);
    let unusable = |why: String| {
        Error::usage(
            Code::BadSettings,
            format!("{} {why}", file.display()),
            "fix or move the file, then run `git delegate hooks install --claude` again",
        )
    };
    let mut doc = match std::fs::read(&file) {
        Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => Value::Object(Map::new()),
        Ok(bytes) => serde_json::from_slice::<Value>(&bytes)
            .map_err(|e| unusable(format!("is not valid JSON: {e}")))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if uninstall {
                return Ok(Settings {
                    file,
                    changed: false,
                });
            }
            Value::Object(Map::new())
        }
        Err(e) => return Err(Error::io(format!("cannot read {}", file.display()), e)),
    };
    let Value::Object(top) = &mut doc else {
        return Err(unusable("is not a JSON object".into()));
    };
    let hooks = top
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(hooks) = hooks else {
        return Err(unusable(
            "has a `hooks` setting that is not an object".into(),
        ));
    };
    let mut changed = false;
    for (event, command) in [
        ("WorktreeCreate", CREATE_COMMAND),
        ("WorktreeRemove", REMOVE_COMMAND),
    ] {
        changed |= if uninstall {
            remove_entry(hooks, event, command)
        } else {
            add_entry(hooks, event, command).map_err(&unusable)?
        };
    }
    if uninstall && hooks.is_empty() && changed {
        top.remove("hooks");
    }
    if changed {
        let mut text = serde_json::to_string_pretty(&doc)
            .map_err(|e| unusable(format!("cannot be written: {e}")))?;
        text.push('\n');
        let dir = root.join(".claude");
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::io(format!("cannot make {}", dir.display()), e))?;
        crate::sys::fs::write_atomic(&file, text.as_bytes())?;
    }
    Ok(Settings { file, changed })
}

/// Whether a matcher group runs `command`.
fn runs(group: &Value, command: &str) -> bool {
    group["hooks"]
        .as_array()
        .is_some_and(|hs| hs.iter().any(|h| h["command"].as_str() == Some(command)))
}

fn add_entry(
    hooks: &mut Map<String, Value>,
    event: &str,
    command: &str,
) -> std::result::Result<bool, String> {
    let list = hooks
        .entry(event)
        .or_insert_with(|| Value::Array(Vec::new()));
    let Value::Array(list) = list else {
        return Err(format!("has a `hooks.{event}` setting that is not a list"));
    };
    if list.iter().any(|g| runs(g, command)) {
        return Ok(false);
    }
    list.push(json!({"hooks": [{"type": "command", "command": command}]}));
    Ok(true)
}

fn remove_entry(hooks: &mut Map<String, Value>, event: &str, command: &str) -> bool {
    let Some(Value::Array(list)) = hooks.get_mut(event) else {
        return false;
    };
    let mut changed = false;
    for group in list.iter_mut() {
        if let Some(Value::Array(hs)) = group.get_mut("hooks") {
            let before = hs.len();
            hs.retain(|h| h["command"].as_str() != Some(command));
            changed |= hs.len() != before;
        }
    }
    // A group left without hooks was ours alone.
    list.retain(|g| !g["hooks"].as_array().is_some_and(Vec::is_empty));
    if list.is_empty() && changed {
        hooks.remove(event);
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_names_are_made_valid() {
        assert_eq!(task_name("agent-a1b2").as_deref(), Some("agent-a1b2"));
        assert_eq!(task_name("fix login/bug").as_deref(), Some("fix-login-bug"));
        assert_eq!(task_name("..x..y.lock").as_deref(), Some("x.y"));
        assert_eq!(task_name("-_-"), None);
        assert_eq!(task_name(&"a".repeat(100)).map(|s| s.len()), Some(64));
    }

    #[test]
    fn both_spellings_parse() {
        let here = Path::new("/h");
        let a = parse_create(br#"{"name":"a","cwd":"/r","x":1}"#, here).unwrap();
        let b = parse_create(br#"{"worktree_name":"a","base_path":"/r"}"#, here).unwrap();
        assert_eq!(a, b);
        assert!(parse_create(b"[]", here).is_err());
        assert!(parse_create(br#"{"cwd":"/r"}"#, here).is_err());
        assert!(parse_remove(br#"{"cwd":"/r"}"#, here).is_err());
    }
}
