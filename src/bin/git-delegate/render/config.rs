//! The config document (design §3.18 "Commands from the shared git dir";
//! docs/json.md "Config"): `git delegate config [--trust]`.

use super::{document, Text};
use git_delegate::ops::trust::View;

document! {
    /// The document of `git delegate config`.
    pub struct ConfigDoc {
        path: String,
        confirmed: bool,
        recorded: bool,
        changes: Vec<Change>,
        left_out: Vec<super::apply::LeftOut>,
        help: Option<String>,
    }
}

document! {
    /// An entry of `changes`.
    pub struct Change {
        key: String,
        confirmed: Option<String>,
        now: Option<String>,
        command: bool,
    }
}

impl ConfigDoc {
    pub fn new(t: &Text, v: &View) -> ConfigDoc {
        let u = v.untrusted.as_ref();
        let left_out = u.map(|u| super::apply::UntrustedConfig::new(t, u).left_out);
        ConfigDoc {
            path: t.path(&v.file),
            confirmed: v.confirmed,
            recorded: v.recorded,
            changes: v
                .changes
                .iter()
                .map(|c| Change {
                    key: c.key.clone(),
                    confirmed: c.confirmed.clone(),
                    now: c.now.clone(),
                    command: c.command,
                })
                .collect(),
            left_out: left_out.unwrap_or_default(),
            help: u.map(|u| u.help()),
        }
    }
}
