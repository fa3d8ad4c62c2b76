//! Two machines in one test, for remote workers (design §3.14): a bare
//! repository reached over `file://` as the remote, the user's clone (the
//! source, with a dirty and an untracked file) and a worker with its own
//! HOME and folder (another `Env`). A test file adds the methods only it
//! needs in an `impl Two` of its own.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use super::Env;
use serde_json::Value;

pub struct Two {
    pub user: Env,
    pub worker: Env,
    pub bare: PathBuf,
    pub src: PathBuf,
    pub url: String,
}

impl Two {
    /// The remote, the user's clone (`lib.txt` committed and pushed,
    /// `README` dirty, `untracked.txt` untracked) and a worker's machine.
    pub fn new() -> Two {
        let two = Two::with(|user, src| {
            std::fs::write(src.join("lib.txt"), "one\ntwo\nthree\n").unwrap();
            user.git(src, ["add", "lib.txt"]);
            user.git(src, ["commit", "-q", "-m", "lib"]);
        });
        // Uncommitted and untracked work the workers must see exactly.
        std::fs::write(two.src.join("README"), "hello\ndirty\n").unwrap();
        std::fs::write(two.src.join("untracked.txt"), "not yet added\n").unwrap();
        two
    }

    /// The remote, the user's clone ([`Env::repo`], then what `commit`
    /// adds, pushed as `main` to `origin`) and a worker's machine.
    pub fn with(commit: impl FnOnce(&Env, &Path)) -> Two {
        let user = Env::new();
        let worker = Env::new();
        let bare = user.path().join("project.git");
        user.git(
            user.path(),
            ["init", "-q", "--bare", "-b", "main", "project.git"],
        );
        let src = user.repo("src");
        commit(&user, &src);
        let url = format!("file://{}", bare.display());
        user.git(&src, ["remote", "add", "origin", &url]);
        user.git(&src, ["push", "-q", "origin", "main"]);
        Two {
            user,
            worker,
            bare,
            src,
            url,
        }
    }

    /// `prepare --remote origin --json ARGS` in the source: its document.
    pub fn prepare(&self, args: &[&str]) -> Value {
        let mut all = vec!["prepare", "--remote", "origin", "--json"];
        all.extend_from_slice(args);
        self.user.delegate(&self.src, all).expect(0).json()
    }

    /// The batch id of [`Two::prepare`].
    pub fn prepare_id(&self, args: &[&str]) -> String {
        self.prepare(args)["batch"].as_str().unwrap().to_string()
    }

    /// Join `task` as the worker, in a folder of its own (a clone): its root.
    pub fn join(&self, id: &str, task: &str) -> PathBuf {
        let doc = self
            .worker
            .delegate(self.worker.path(), ["join", &self.url, id, task, "--json"])
            .expect(0)
            .json();
        assert_eq!(doc["task"], task);
        assert_eq!(doc["batch"], id);
        assert_eq!(doc["remote"], self.url.as_str());
        assert!(doc["proposal"].is_null());
        PathBuf::from(doc["root"].as_str().unwrap())
    }

    /// `submit --json` in the worker's folder `ws`: its document.
    pub fn submit(&self, ws: &Path) -> Value {
        self.worker
            .delegate(ws, ["submit", "--json"])
            .expect(0)
            .json()
    }
}
