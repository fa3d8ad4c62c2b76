//! The hooks-install documents (design §3.7, §3.21; docs/json.md "Hooks
//! install"), the join/submit document (design §3.14; docs/json.md "Join
//! and submit") and the branch document (design §3.19; docs/json.md
//! "Branch").

use super::{document, Text};

document! {
    /// The document of `hooks install`.
    pub struct HooksDoc {
        hook: String,
        chained: Option<String>,
        changed: bool,
        backup: Option<String>,
        pre_push: Option<PrePush>,
    }
}

document! {
    /// `pre_push` of the hooks-install document.
    pub struct PrePush {
        hook: String,
        chained: Option<String>,
        changed: bool,
    }
}

impl HooksDoc {
    pub fn new(t: &Text, done: &git_delegate::ops::pre_commit::Installed) -> HooksDoc {
        HooksDoc {
            hook: t.path(&done.hook),
            chained: done.chained.as_deref().map(|p| t.path(p)),
            changed: done.changed,
            backup: done.backup.as_deref().map(|p| t.path(p)),
            pre_push: (*done.pre_push).as_ref().map(|p| PrePush {
                hook: t.path(&p.hook),
                chained: p.chained.as_deref().map(|c| t.path(c)),
                changed: p.changed,
            }),
        }
    }
}

document! {
    /// The document of `hooks install --claude`.
    pub struct ClaudeDoc {
        settings: String,
        changed: bool,
        installed: bool,
    }
}

document! {
    /// The document of `join` and `submit`.
    pub struct JoinDoc {
        batch: String,
        task: String,
        root: String,
        remote: String,
        proposal: Option<String>,
    }
}

document! {
    /// The document of `branch`.
    pub struct BranchDoc {
        batch: String,
        task: String,
        branch: String,
        /// `null` when the merge conflicted (nothing was made).
        commit: Option<String>,
        parent: String,
        paths: Vec<String>,
        /// The commit the branch pointed to before `--force` moved it.
        previous: Option<String>,
        conflicts: Vec<super::apply::Conflict>,
    }
}
