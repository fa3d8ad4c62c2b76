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
//! Owns: payload parsing, the name → task name and label rule ([`names`]),
//! which open batch a resumed worktree gets back ([`resume`], which renews
//! its lease), telling a batch that ended from one never found
//! ([`ended`]), the settings merge.
//! Never: prepares or applies itself (the binary calls `prepare::run` and
//! `apply::run`); hands back a workspace that is not the folder prepare
//! made for this working tree; writes a settings file other than by
//! temp-then-rename, or touches a setting that is not one of its two hook
//! entries.

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

/// The task name and label a worktree gets (design §3.21).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    /// A valid task name (`batch::check_task_name`).
    pub task: String,
    /// `claude-<task>`: the same characters, so `git delegate branch`'s
    /// default name `delegate/<label>/<task>` is a valid branch name.
    pub label: String,
    /// Whether the worktree's name had to be changed to make them.
    pub changed: bool,
}

/// The longest task name (`batch::valid_task_name`).
const TASK_NAME_MAX: usize = 64;

/// How many hex digits of the name's SHA-256 end a changed name.
const HASH_DIGITS: usize = 8;

/// The task name and label of the worktree named `name`. A name that is a
/// valid task name already is kept. Any other is made one: each run of
/// characters outside `A-Z a-z 0-9 . _ -` (spaces, `/`, control
/// characters, NUL, any other Unicode) becomes one `-`, a run of `.`
/// one `.`, leading characters that are not a letter or digit go, the
/// result is cut to 55 bytes and loses a trailing `.`, `-`, `_` or
/// `.lock`, and `-` and the first 8 hex digits of the SHA-256 of the
/// name as given are appended (only those, when nothing was left): two
/// names that differ in what was changed get different task names.
pub fn names(name: &str) -> Names {
    let (task, changed) = match batch::check_task_name(name) {
        Ok(()) => (name.to_string(), false),
        Err(_) => {
            let mut base = safe_part(name);
            base.truncate(TASK_NAME_MAX - HASH_DIGITS - 1);
            trim_end(&mut base);
            let hash = hash_of(name);
            let task = if base.is_empty() {
                hash
            } else {
                format!("{base}-{hash}")
            };
            (task, true)
        }
    };
    Names {
        label: format!("claude-{task}"),
        task,
        changed,
    }
}

/// `name` in the characters of a task name (see [`names`]); ASCII only, so
/// cutting it anywhere keeps it whole.
fn safe_part(name: &str) -> String {
    let mut out = String::new();
    let mut replaced = false;
    for c in name.chars() {
        let safe = c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
        let c = if safe { c } else { '-' };
        if (!safe && replaced) || (c == '.' && out.ends_with('.')) {
            continue;
        }
        replaced = !safe;
        if out.is_empty() && !c.is_ascii_alphanumeric() {
            continue;
        }
        out.push(c);
    }
    out
}

/// Drop what a task name may not end in (and the `-` and `_` a hash
/// suffix would follow).
fn trim_end(s: &mut String) {
    loop {
        if let Some(t) = s.strip_suffix(".lock") {
            *s = t.to_string();
        } else if s.ends_with(['.', '-', '_']) {
            s.pop();
        } else {
            break;
        }
    }
}

fn hash_of(name: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(name.as_bytes());
    digest
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()[..HASH_DIGITS]
        .to_string()
}

/// An open batch handed back to a resumed worktree.
#[derive(Debug)]
pub struct Resumed {
    /// The batch, its lease renewed.
    pub batch: Batch,
    /// The folder to hand back: the task's cwd (its root when that is gone).
    pub cwd: PathBuf,
}

/// The open batch of `source` labelled `names.label`, when a worktree of
/// that name is created again (Claude Code resuming `--worktree NAME`): it
/// is handed back, its lease renewed for `lease.ttl`, only when its
/// prepare completed, it was made from this working tree (`source.root`),
/// its task `names.task` is open and its workspace is the folder prepare
/// made. `None`: no such batch (prepare then refuses a label an open batch
/// has, as always). Takes the repository lock only when a batch has the
/// label.
pub fn resume(source: &Source, names: &Names) -> Result<Option<Resumed>> {
    let state_dir = source.state_dir();
    let labelled = |bs: Vec<Batch>| {
        bs.into_iter()
            .find(|b| b.label.as_deref() == Some(names.label.as_str()))
    };
    if labelled(batch::list_ok(&state_dir)?).is_none() {
        return Ok(None);
    }
    let _lock = crate::ops::lock::lock_and_recover(source)?;
    let Some(b) = labelled(batch::list_ok(&state_dir)?) else {
        return Ok(None);
    };
    if crate::ops::preparing::progress(&b).is_some() || b.source != source.root {
        return Ok(None);
    }
    let Some(t) = b.open_tasks().find(|t| t.name == names.task && !t.remote) else {
        return Ok(None);
    };
    let crate::workspace::Identity::Ours { .. } = crate::workspace::identify(&source.common_dir, t)
    else {
        return Ok(None);
    };
    let cwd = t.cwd(&b.prefix);
    let cwd = if cwd.is_dir() { cwd } else { t.root.clone() };
    // Only an orphaned lease refuses a renewal without a new owner: such a
    // batch (an owner was given to it) is not handed back.
    let Ok(batch) = crate::ops::renew::renew(&state_dir, Some(&b.id), source.config.ttl_secs, None)
    else {
        return Ok(None);
    };
    Ok(Some(Resumed { batch, cwd }))
}

/// How the batch `id` ended, when it has (it is no longer in the state
/// folder, readable or not): `Some(apply id)` when an apply of it
/// recorded an undo entry, `Some(None)` otherwise (an apply that wrote
/// nothing, or a drop). `None`: it has not ended.
pub fn ended(state_dir: &Path, id: &str) -> Option<Option<String>> {
    let entries = batch::list(state_dir).ok()?;
    let present = entries.iter().any(|e| match e {
        batch::Entry::Batch(b) => b.id == id,
        batch::Entry::Broken { id: other, .. } => other == id,
    });
    if present {
        return None;
    }
    Some(
        crate::ops::undo::list(state_dir)
            .into_iter()
            .find(|e| e.batch == id)
            .map(|e| e.apply_id),
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
        let n = names("agent-a1b2");
        assert_eq!(
            (n.task.as_str(), n.label.as_str(), n.changed),
            ("agent-a1b2", "claude-agent-a1b2", false)
        );
        let h = |s: &str| hash_of(s);
        assert_eq!(
            names("fix login/bug").task,
            format!("fix-login-bug-{}", h("fix login/bug"))
        );
        assert_eq!(
            names("..x..y.lock").task,
            format!("x.y-{}", h("..x..y.lock"))
        );
        assert_eq!(names("-_-").task, h("-_-"));
        assert_eq!(names("caf\u{e9}").task, format!("caf-{}", h("caf\u{e9}")));
        let long = names(&"a".repeat(100));
        assert_eq!(long.task.len(), 64);
        assert!(long.task.starts_with(&"a".repeat(55)));
        for raw in [
            "a b", "a\tb", "a\0b", "a\nb", "a\u{7f}b", "../../x", "x.lock", "日本",
        ] {
            let n = names(raw);
            assert!(batch::check_task_name(&n.task).is_ok(), "{raw:?}: {n:?}");
            assert!(n.changed && n.label == format!("claude-{}", n.task));
        }
        // Names that differ only in what was changed stay apart.
        let all: std::collections::HashSet<String> = ["a b", "a\tb", "a\0b", "a\nb", "a  b"]
            .iter()
            .map(|r| names(r).task)
            .collect();
        assert_eq!(all.len(), 5);
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
