//! What a recovery did, in words (design §7): the interrupted write-backs,
//! undos and refreshes rolled back or finished before a command ran.
//!
//! Owns: those lines.
//! Never: prints (`commands::shown` does), or decides what is recovered.

use git_delegate::writeback::Recovery;

/// What recovery did, a warning line each (design §7).
pub fn recovered(recovery: &Recovery) -> Vec<String> {
    let mut lines = Vec::new();
    for id in recovery.rolled_back.iter().chain(&recovery.completed) {
        if recovery.undo.contains(id) {
            let done = recovery.completed.contains(id);
            lines.push(format!(
                "git-delegate: {} an interrupted undo (or apply --from-undo) of apply {}; {}\n",
                if done { "finished" } else { "rolled back" },
                git_delegate::record::batch::short(id),
                if done {
                    "the working tree holds its whole result"
                } else {
                    "the working tree is as it was before it"
                }
            ));
        }
    }
    // A refresh wrote into a task's workspace, not the working tree
    // (design §3.12).
    for id in recovery
        .rolled_back
        .iter()
        .chain(&recovery.completed)
        .filter(|id| !recovery.undo.contains(id) && recovery.workspaces.contains(id))
    {
        lines.push(format!(
            "git-delegate: {} an interrupted refresh of batch {}; {}\n",
            if recovery.completed.contains(id) { "finished" } else { "rolled back" },
            git_delegate::record::batch::short(id),
            if recovery.completed.contains(id) {
                "the task's workspace holds its result"
            } else {
                "the task's workspace is as it was before that refresh (your working tree was not touched)"
            }
        ));
    }
    let here = |id: &&String| !recovery.undo.contains(id) && !recovery.workspaces.contains(id);
    for id in recovery.rolled_back.iter().filter(here) {
        lines.push(format!(
            "git-delegate: rolled back an interrupted write-back of batch {}; the working tree is as it was before that apply\n",
            git_delegate::record::batch::short(id)
        ));
    }
    for id in recovery.completed.iter().filter(here) {
        if recovery.recorded.contains(id) {
            lines.push(format!(
                "git-delegate: finished an interrupted write-back of batch {}: it had written its whole result, the working tree holds it, and its apply is recorded (`git delegate undo --list` shows it); `git delegate apply {}` finishes its clean-up\n",
                git_delegate::record::batch::short(id),
                git_delegate::record::batch::short(id)
            ));
        } else {
            lines.push(format!(
                "git-delegate: an interrupted apply of batch {} had written its whole result; the working tree holds it, and `git delegate apply {}` records it\n",
                git_delegate::record::batch::short(id),
                git_delegate::record::batch::short(id)
            ));
        }
    }
    lines
}
