//! `git delegate config [--trust]` (design §3.18 "Commands from the shared
//! git dir"): what the file now and the confirmed file differ in, key by
//! key, and confirming the file as it is.
//!
//! Owns: `View` (the document `config` shows) and `show`, `trust`.
//! Never: writes `delegate.toml`; prints.

use super::*;

/// A key that differs between the confirmed file and the file now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyChange {
    pub key: String,
    /// Its value in the confirmed file (`None`: not set there).
    pub confirmed: Option<String>,
    /// Its value now (`None`: not set).
    pub now: Option<String>,
    /// One of `config::COMMAND_KEYS`.
    pub command: bool,
}

/// What `git delegate config` shows (design §3.18).
#[derive(Debug, Clone)]
pub struct View {
    pub file: PathBuf,
    /// The file now is the one confirmed (after this command).
    pub confirmed: bool,
    /// This command recorded it as the user's (`--trust`, or no batch open).
    pub recorded: bool,
    /// The keys that differ from the confirmed file, by name.
    pub changes: Vec<KeyChange>,
    /// The command keys that do not run now, and how to confirm.
    pub untrusted: Option<Untrusted>,
    /// The working tree the file is confirmed from (`confirm_command`).
    pub home: PathBuf,
}

fn view(source: &Source, s: &Settled) -> View {
    let file = trust::file_of(&source.state_dir());
    let keys = |t: Option<&str>| crate::config::keys(t.unwrap_or("")).unwrap_or_default();
    let was: BTreeMap<String, String> = keys(s.confirmed.text.as_deref());
    let text_now = s.now.as_deref().map(String::from_utf8_lossy);
    let now = keys(text_now.as_deref());
    let mut names: Vec<&String> = was.keys().chain(now.keys()).collect();
    names.sort();
    names.dedup();
    let changes = names
        .into_iter()
        .filter(|k| was.get(*k) != now.get(*k))
        .map(|k| KeyChange {
            key: k.clone(),
            confirmed: was.get(k).cloned(),
            now: now.get(k).cloned(),
            command: COMMAND_KEYS.contains(&k.as_str()),
        })
        .collect();
    let confirmed = confirmed_config(&file, &s.confirmed);
    let left_out = differing(&source.config, &confirmed, &GUARDED);
    let home = confirm_dir(&s.batches, &source.root);
    let untrusted = (!left_out.is_empty()).then(|| Untrusted {
        confirm_dir: home.clone(),
        restore: restore(&file, &s.confirmed),
        file: file.clone(),
        left_out,
    });
    View {
        confirmed: s.confirmed.identity == trust::identity(s.now.as_deref()),
        recorded: s.recorded,
        file,
        changes,
        untrusted,
        home,
    }
}

/// `git delegate config`: the file against the one confirmed (recording
/// it as the user's when no batch is open).
pub fn show(source: &Source) -> Result<View> {
    let _lock = crate::ops::lock::acquire(&source.state_dir(), source.config.lock_timeout_secs)?;
    let s = settle(source, true)?;
    Ok(view(source, &s))
}

/// `git delegate config --trust`: record the file now as the user's. Not
/// from a task's workspace (its worker could run it there): exit 2 with
/// the command to run in the user's working tree.
pub fn trust(source: &Source) -> Result<View> {
    let state = source.state_dir();
    let _lock = crate::ops::lock::acquire(&state, source.config.lock_timeout_secs)?;
    let batches = batch::list_ok(&state)?;
    let home = confirm_dir(&batches, &source.root);
    if home != source.root {
        return Err(Error::usage(
            Code::Usage,
            format!(
                "{} is a task's workspace: delegate.toml is confirmed from your own working tree, never from a workspace its worker could run this in (nothing was recorded)",
                source.root.display()
            ),
            format!("run `{}`", confirm_command(&home)),
        ));
    }
    let file = trust::file_of(&state);
    // What is recorded is what was read, and what loads.
    let s = settle(source, false)?;
    if let Some(b) = &s.now {
        Config::parse_bytes(&file, b.clone())?;
    }
    record(&state, s.now.as_deref())?;
    let mut v = view(source, &s);
    v.confirmed = true;
    v.recorded = true;
    v.untrusted = None;
    Ok(v)
}
