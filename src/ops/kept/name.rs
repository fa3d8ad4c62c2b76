//! Naming a kept proposal (design §3.16 "kept"): its full ref, or
//! `BATCH/TASK` with the batch's id, a unique id prefix or, while the
//! batch exists, its label; and the short name `status` shows.
//!
//! Owns: `resolve` and `short_name`; refusing a name that is an open
//! task's proposal (that is `apply`'s).
//! Never: reads the disk (the caller lists the kept proposals and batches).

use super::*;

/// The name `status` shows for the kept proposal `k` of `all`, which
/// `--kept` accepts: `BATCH/TASK` with the batch's first 8 characters, or
/// its full ref when another kept proposal shares that name.
pub fn short_name(all: &[Kept], k: &Kept) -> String {
    let short = batch::short(&k.batch);
    let shared = all
        .iter()
        .any(|o| o.ref_name != k.ref_name && o.task == k.task && o.batch.starts_with(short));
    if shared || short.len() < 4 {
        k.ref_name.clone()
    } else {
        format!("{short}/{}", k.task)
    }
}

/// The kept proposal `arg` names: its full ref, or `BATCH/TASK` where BATCH
/// is the batch's full id, then its label (while the batch exists), then a
/// unique id prefix of at least 4 characters, as `BATCH` everywhere.
pub fn resolve<'a>(kept: &'a [Kept], entries: &[Entry], arg: &str) -> Result<&'a Kept> {
    let label_of = |id: &str| {
        entries.iter().find_map(|e| match e {
            Entry::Batch(b) if b.id == id => b.label.clone(),
            _ => None,
        })
    };
    let found: Vec<&Kept> = if arg.starts_with(refs::PREFIX) {
        kept.iter().filter(|k| k.ref_name == arg).collect()
    } else if let Some((which, task)) = arg.rsplit_once('/') {
        let of_task = || kept.iter().filter(move |k| k.task == task);
        let by_id: Vec<&Kept> = of_task().filter(|k| k.batch == which).collect();
        let by_label: Vec<&Kept> = of_task()
            .filter(|k| label_of(&k.batch).as_deref() == Some(which))
            .collect();
        if !by_id.is_empty() {
            by_id
        } else if !by_label.is_empty() {
            by_label
        } else if which.len() >= 4 {
            of_task().filter(|k| k.batch.starts_with(which)).collect()
        } else {
            Vec::new()
        }
    } else {
        Vec::new()
    };
    match found.as_slice() {
        [one] => Ok(one),
        [] => {
            if let Some((b, t)) = open_task(entries, arg) {
                return Err(Error::usage(
                    Code::UnknownKept,
                    format!(
                        "{arg:?} is not kept: it is the proposal of task {t} of batch {}, which is still open",
                        b.short()
                    ),
                    format!(
                        "apply the task: `git delegate apply {} --only {t}` (or `git delegate apply {} --discard {t}` keeps its work for `--kept`)",
                        b.short(),
                        b.short()
                    ),
                ));
            }
            let names: Vec<String> = kept
                .iter()
                .take(5)
                .map(|k| format!("{} ({})", short_name(kept, k), k.ref_name))
                .collect();
            let help = if names.is_empty() {
                "there is no kept proposal; `git delegate status` lists them when there are"
                    .to_string()
            } else {
                format!(
                    "name one as `git delegate status` lists it, by its ref or as BATCH/TASK: {}{}",
                    names.join(", "),
                    if kept.len() > 5 { ", ..." } else { "" }
                )
            };
            Err(Error::usage(
                Code::UnknownKept,
                format!("no kept proposal matches {arg:?}"),
                help,
            ))
        }
        many => Err(Error::usage(
            Code::AmbiguousBatch,
            format!(
                "{arg:?} matches {} kept proposals: {}",
                many.len(),
                many.iter()
                    .map(|k| k.ref_name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "name it by its full ref (`git delegate status` lists them)",
        )),
    }
}

/// The open task of a readable batch whose proposal `arg` names (as
/// [`resolve`] reads it): such a proposal is the batch's, not kept.
fn open_task<'a>(entries: &'a [Entry], arg: &str) -> Option<(&'a Batch, &'a str)> {
    entries.iter().find_map(|e| {
        let Entry::Batch(b) = e else { return None };
        let t = b.tasks.iter().filter(|t| t.state.is_open()).find(|t| {
            if arg.starts_with(refs::PREFIX) {
                return arg == refs::proposal(&b.id, &t.name);
            }
            arg.rsplit_once('/').is_some_and(|(which, task)| {
                task == t.name
                    && (which == b.id
                        || b.label.as_deref() == Some(which)
                        || (which.len() >= 4 && b.id.starts_with(which)))
            })
        })?;
        Some((&**b, t.name.as_str()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(batch: &str, task: &str) -> Kept {
        Kept {
            ref_name: refs::proposal(batch, task),
            batch: batch.into(),
            task: task.into(),
            patch: None,
            kept_at: 0,
            expires_at: 0,
        }
    }

    #[test]
    fn resolves_full_refs_and_batch_slash_task() {
        let a = "0123abcd-0000-0000-0000-000000000000";
        let b = "0123ffff-0000-0000-0000-000000000000";
        let all = vec![kept(a, "1"), kept(a, "2"), kept(b, "1")];
        let r = |arg: &str| resolve(&all, &[], arg).map(|k| k.ref_name.clone());
        assert_eq!(r(&refs::proposal(a, "2")).unwrap(), refs::proposal(a, "2"));
        assert_eq!(r(&format!("{a}/1")).unwrap(), refs::proposal(a, "1"));
        assert_eq!(r("0123abcd/1").unwrap(), refs::proposal(a, "1"));
        assert_eq!(r("0123ff/1").unwrap(), refs::proposal(b, "1"));
        assert_eq!(r("0123/2").unwrap(), refs::proposal(a, "2"));
        assert_eq!(r("0123/1").unwrap_err().code, Code::AmbiguousBatch);
        assert_eq!(r("012/2").unwrap_err().code, Code::UnknownKept);
        assert_eq!(r("0123abcd/3").unwrap_err().code, Code::UnknownKept);
        assert_eq!(r("1").unwrap_err().code, Code::UnknownKept);
        assert_eq!(
            r("refs/pi-delegate/batches/x/tasks/1/proposal")
                .unwrap_err()
                .code,
            Code::UnknownKept
        );
    }
}
