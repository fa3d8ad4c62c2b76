//! Filter and merge drivers (design §3.18 "Drivers"): the commands git's
//! configuration names for `filter=NAME` (`filter.NAME.clean`, `.smudge`,
//! `.process`, `.required`) and `merge=NAME` (`merge.NAME.driver`,
//! `.recursive`) attributes, which gix runs while it hashes, writes or
//! merges a file. A worker shares the source's config, so it can define a
//! driver (and commit a `.gitattributes` naming it) that the user's apply
//! would run. Prepare records the drivers it sees (`read`, kept in the batch
//! record); every command that may run one for the batch sets that record as
//! the policy (`enforce`), and every repository it opens afterwards
//! (`open_worktree`, the source through `enforce`) has each driver that is
//! absent from the record, or whose configuration changed, taken out of its
//! in-memory configuration: as in git for an undefined driver, the content
//! then passes through unfiltered and an undefined merge driver falls back to
//! the built-in text merge. The drivers so left out are collected for the
//! report (`disabled`).
//!
//! Owns: what a driver's configuration is, comparing it, and the
//! process-wide policy; its error `DriversError` (worded in `ops::explain`).
//! Never: writes a config file (only the opened repository's in-memory
//! copy changes); reads the batch record (the caller hands the drivers in).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

/// Why the drivers the policy leaves out could not be taken out of a
/// repository's configuration.
#[derive(Debug, thiserror::Error)]
pub enum DriversError {
    /// Committing the edited in-memory configuration.
    #[error("cannot leave unrecorded drivers out of the configuration")]
    Restrict {
        #[source]
        source: gix::Error,
    },
}

type Result<T, E = DriversError> = std::result::Result<T, E>;

/// A filter driver's configuration, each key's last value (as gix reads
/// it); a value that is not UTF-8 is never equal to a recorded one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Filter {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clean: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smudge: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<String>,
}

/// A merge driver's configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Merge {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recursive: Option<String>,
}

/// The drivers of a repository's configuration at one moment, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Drivers {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub filter: BTreeMap<String, Filter>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub merge: BTreeMap<String, Merge>,
}

/// A value as recorded: `"\0"` stands for one that is not UTF-8, which no
/// recorded value (a config value holds no NUL) can equal.
fn text(v: &[u8]) -> String {
    match std::str::from_utf8(v) {
        Ok(s) => s.to_string(),
        Err(_) => "\0".to_string(),
    }
}

/// The drivers `repo`'s configuration defines now (every section, whatever
/// its origin: a superset of those gix uses).
pub fn read(repo: &gix::Repository) -> Drivers {
    let config = repo.config_snapshot();
    let file = config.plumbing();
    let mut out = Drivers::default();
    for section in file.sections_by_name("filter").into_iter().flatten() {
        let Some(name) = section.header().subsection_name() else {
            continue;
        };
        let d = out.filter.entry(text(name)).or_default();
        for (key, slot) in [
            ("clean", &mut d.clean),
            ("smudge", &mut d.smudge),
            ("process", &mut d.process),
            ("required", &mut d.required),
        ] {
            if let Some(v) = section.value(key) {
                *slot = Some(text(&v));
            }
        }
    }
    for section in file.sections_by_name("merge").into_iter().flatten() {
        let Some(name) = section.header().subsection_name() else {
            continue;
        };
        let d = out.merge.entry(text(name)).or_default();
        for (key, slot) in [("driver", &mut d.driver), ("recursive", &mut d.recursive)] {
            if let Some(v) = section.value(key) {
                *slot = Some(text(&v));
            }
        }
    }
    out
}

/// The drivers of `now` that `recorded` does not hold with the same
/// commands (`filter.NAME`, `merge.NAME`): absent, or a `clean`, `smudge`,
/// `process` or merge `driver` command that differs. `required` and
/// `recursive` run nothing themselves (the second names a driver that is
/// checked in its own right), so a change there alone is no new command.
pub fn unrecorded(now: &Drivers, recorded: &Drivers) -> Vec<String> {
    let mut out = Vec::new();
    for (name, d) in &now.filter {
        let same = recorded.filter.get(name).is_some_and(|r| {
            (&r.clean, &r.smudge, &r.process) == (&d.clean, &d.smudge, &d.process)
        });
        if !same {
            out.push(format!("filter.{name}"));
        }
    }
    for (name, d) in &now.merge {
        if recorded.merge.get(name).map(|r| &r.driver) != Some(&d.driver) {
            out.push(format!("merge.{name}"));
        }
    }
    out
}

/// The policy of this process: the drivers recorded for the batch the
/// command works on, and the drivers left out so far.
struct Policy {
    recorded: Drivers,
    disabled: BTreeSet<String>,
}

static POLICY: Mutex<Option<Policy>> = Mutex::new(None);

/// From now on, let only the drivers of `recorded` run in the repositories
/// this process opens (`None`: a batch recorded before drivers were, whose
/// config drivers then all stay out), starting with `source`.
pub fn enforce(recorded: Option<&Drivers>, source: &mut gix::Repository) -> Result<()> {
    allow(recorded);
    restrict(source)
}

/// [`enforce`] for the repositories opened from now on only (a command
/// that reads workspaces and never writes into the source). What was
/// left out so far stays counted.
pub fn allow(recorded: Option<&Drivers>) {
    if let Ok(mut p) = POLICY.lock() {
        let disabled = p.take().map(|p| p.disabled).unwrap_or_default();
        *p = Some(Policy {
            recorded: recorded.cloned().unwrap_or_default(),
            disabled,
        });
    }
}

/// Take out of `repo`'s in-memory configuration every driver the policy
/// (if one is set) does not hold as it is.
pub fn restrict(repo: &mut gix::Repository) -> Result<()> {
    let recorded = match POLICY.lock() {
        Ok(p) => match p.as_ref() {
            Some(p) => p.recorded.clone(),
            None => return Ok(()),
        },
        Err(_) => Drivers::default(),
    };
    let now = read(repo);
    let out = unrecorded(&now, &recorded);
    if out.is_empty() {
        return Ok(());
    }
    let mut snap = repo.config_snapshot_mut();
    for full in &out {
        let (section, name) = full.split_once('.').unwrap_or((full, ""));
        let ids: Vec<_> = snap
            .sections_and_ids_by_name(section)
            .into_iter()
            .flatten()
            .filter(|(s, _)| {
                s.header().subsection_name().map(|n| text(n)) == Some(name.to_string())
            })
            .map(|(_, id)| id)
            .collect();
        for id in ids {
            snap.remove_section_by_id(id);
        }
    }
    snap.commit()
        .map_err(|source| DriversError::Restrict { source })?;
    if let Ok(mut p) = POLICY.lock() {
        if let Some(p) = p.as_mut() {
            p.disabled.extend(out);
        }
    }
    Ok(())
}

/// The drivers the policy lets run (`None`: no policy is set).
pub fn recorded() -> Option<Drivers> {
    POLICY.lock().ok()?.as_ref().map(|p| p.recorded.clone())
}

/// The drivers left out so far (`filter.NAME`, `merge.NAME`), sorted.
pub fn disabled() -> Vec<String> {
    match POLICY.lock() {
        Ok(p) => p
            .as_ref()
            .map(|p| p.disabled.iter().cloned().collect())
            .unwrap_or_default(),
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_or_new_driver_is_unrecorded() {
        let mut rec = Drivers::default();
        rec.filter.insert(
            "lfs".into(),
            Filter {
                smudge: Some("git-lfs smudge -- %f".into()),
                ..Default::default()
            },
        );
        let mut now = rec.clone();
        assert!(unrecorded(&now, &rec).is_empty());
        now.filter.get_mut("lfs").unwrap().required = Some("false".into());
        assert!(unrecorded(&now, &rec).is_empty());
        now.filter.get_mut("lfs").unwrap().smudge = Some("evil".into());
        now.merge.insert("m".into(), Merge::default());
        assert_eq!(unrecorded(&now, &rec), vec!["filter.lfs", "merge.m"]);
    }
}
