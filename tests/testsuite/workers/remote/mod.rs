//! Workers on other machines through a git remote (design §3.14): two
//! machines simulated in one test: a bare repository reached over
//! `file://` as the remote, the user's clone (the source), and a worker with
//! its own HOME and folder (another `Env`, `common::remote::Two`).
//! Here: what the files add to `Two`; the tests are in `round_trip`,
//! `failures` and `ending`.

use std::path::{Path, PathBuf};

use crate::common::files::read;
use crate::common::remote::Two;
use crate::common::Env;
use serde_json::Value;

mod ending;
mod failures;
mod round_trip;

impl Two {
    fn remote_refs(&self) -> Vec<String> {
        self.user
            .git(
                &self.bare,
                ["for-each-ref", "--format=%(refname)", "refs/pi-delegate/"],
            )
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn apply(&self, id: &str, code: i32) -> Value {
        self.user
            .delegate(&self.src, ["apply", id, "--json"])
            .expect(code)
            .json()
    }
}

fn status_of<'a>(doc: &'a Value, task: &str) -> &'a str {
    crate::common::fixtures::task(doc, task)["status"]
        .as_str()
        .unwrap()
}
