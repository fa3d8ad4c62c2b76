//! Writing `git delegate branch`'s result (design §3.19): the merged
//! objects memory holds, the branch commit with the user's identity, and
//! the `refs/heads/` ref, created or moved only from the value it had.
//!
//! Owns: the commit's author and committer (git's configuration) and the
//! ref transaction.
//! Never: touches the working tree, the index, HEAD or any other branch.

use super::*;

/// Writes the merged objects memory holds, the branch commit of `tree` on
/// `parent_id`, and the branch ref (created, or moved only from `existing`):
/// the commit.
#[allow(clippy::too_many_arguments)]
pub(super) fn write_branch(
    repo: &gix::Repository,
    mem: &mut gix::Repository,
    opts: &Options,
    b: &batch::Batch,
    task: &Task,
    tree: ObjectId,
    parent_id: ObjectId,
    existing: Option<ObjectId>,
    full_name: gix::refs::FullName,
) -> Result<ObjectId> {
    let full = full_name.as_bstr().to_str_lossy();
    let name = full
        .strip_prefix("refs/heads/")
        .unwrap_or(&full)
        .to_string();
    // The merged objects only memory holds go to the object store.
    if let Some(objects) = mem.objects.take_object_memory() {
        for (id, (kind, data)) in objects.iter() {
            if repo.has_object(id) {
                continue;
            }
            gix::objs::Write::write_buf(repo, *kind, data)
                .map_err(|e| Error::git(format!("cannot write object {id}"), e))?;
        }
    }
    let message = opts.message.clone().unwrap_or_else(|| {
        format!(
            "{}: work from git delegate batch {}",
            task.name,
            b.label.as_deref().unwrap_or(b.short())
        )
    });
    let message = if message.ends_with('\n') {
        message
    } else {
        format!("{message}\n")
    };
    let author = signature(repo, true)?;
    let committer = signature(repo, false)?;
    let obj = gix::objs::Commit {
        tree,
        parents: vec![parent_id].into(),
        author,
        committer,
        encoding: None,
        message: message.into(),
        extra_headers: Vec::new(),
    };
    let id = repo
        .write_object(&obj)
        .map_err(|e| Error::git("cannot write the branch commit", e))?
        .detach();
    let edit = RefEdit {
        change: Change::Update {
            log: LogChange {
                mode: RefLog::AndReference,
                force_create_reflog: false,
                message: format!(
                    "git delegate branch: task {} of batch {}",
                    task.name,
                    b.short()
                )
                .into(),
            },
            expected: match existing {
                Some(old) => PreviousValue::MustExistAndMatch(Target::Object(old)),
                None => PreviousValue::MustNotExist,
            },
            new: Target::Object(id),
        },
        name: full_name,
        deref: false,
    };
    repo.edit_references([edit])
        .map_err(|e| Error::git(format!("cannot write branch {name}"), e))?;
    Ok(id)
}

/// Author or committer from git's configuration (`user.name`,
/// `user.email`, `GIT_AUTHOR_*`/`GIT_COMMITTER_*` as gix reads them).
fn signature(repo: &gix::Repository, author: bool) -> Result<gix::actor::Signature> {
    let sig = if author {
        repo.author()
    } else {
        repo.committer()
    };
    let who = if author { "author" } else { "committer" };
    match sig {
        Some(Ok(s)) => s.to_owned().map_err(|e| {
            Error::usage(
                Code::Config,
                format!("the {who} identity cannot be read: {e}"),
                "set it with `git config user.name NAME` and `git config user.email EMAIL`",
            )
        }),
        Some(Err(e)) => Err(Error::usage(
            Code::Config,
            format!("the {who} identity cannot be read: {e}"),
            "set it with `git config user.name NAME` and `git config user.email EMAIL`",
        )),
        None => Err(Error::usage(
            Code::Config,
            format!("no {who} identity is configured"),
            "set it with `git config user.name NAME` and `git config user.email EMAIL`",
        )),
    }
}
