//! The prepare transaction (design §3.1): snapshot the source into a baseline
//! commit and ref, record the batch and its lease, create the workspaces
//! (and carry ignored files into them, or make scratch copies), mark the
//! batch complete. The batch is recorded as being prepared before anything
//! is made, and marked complete last (design §3.15, see `preparing`); any
//! failure, and Ctrl-C, SIGTERM or SIGHUP, undoes everything this prepare
//! made, through one guard that is disarmed on success.
//!
//! Owns: the steps of prepare and their order, the checks made before
//! anything is made (task names, label, mode, free workspace places), the
//! batch id (and the test-only `GIT_DELEGATE_TEST_BATCH_ID`). Making the
//! workspaces once the batch is marked is `make`'s.
//! Never: prints (long steps and notices go to the caller's `Observer`),
//! or leaves part of a batch behind on failure that `gc` could not remove.

use std::collections::HashSet;

use crate::config::Mode;
use crate::error::{Code, Error, Result};
use crate::git::repo::Source;
use crate::ops::observe::{Notice, Observer};
use crate::record::batch::{self, Batch, Task};
use crate::record::lease::Lease;
use crate::{git::refs, snapshot, workspace};

mod make;
use make::make;

/// Tests may fix the batch id (a UUID) to provoke collisions; never for users.
const TEST_BATCH_ID: &str = "GIT_DELEGATE_TEST_BATCH_ID";

/// What the caller asked for.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The task names, in order (`check` them before the source is opened).
    pub names: Vec<String>,
    pub label: Option<String>,
    /// The lease's length; `None`: the config's `lease.ttl`.
    pub ttl_secs: Option<i64>,
    /// The owner process and its start time.
    pub owner: Option<(u32, u64)>,
    /// `None`: the config's `workspace.mode`.
    pub mode: Option<Mode>,
    /// `--copy-ignored` patterns besides the config's.
    pub copy_ignored: Vec<String>,
    pub forbid_commit: bool,
    /// `--remote REMOTE` (design §3.14): the tasks are remote, but those in `local`.
    pub remote: Option<String>,
    pub local: Vec<String>,
    /// `--sparse` folders (cone patterns) narrowing every workspace (design §3.15).
    pub sparse: Vec<String>,
}

/// What prepare made.
#[derive(Debug)]
pub struct Report {
    /// The batch as recorded (complete).
    pub batch: Batch,
    /// The source's HEAD commit (`None`: an unborn branch).
    pub head: Option<gix::ObjectId>,
    /// Paths that differ from HEAD in the baseline.
    pub changes: usize,
    /// Per task: the ignored files carried (worktree mode) or the scratch copy.
    pub carried: Vec<crate::record::batch::CarryStats>,
}

/// Check what needs no repository: task names (valid, none twice) and the
/// label. Everything about the arguments is checked before anything is made.
pub fn check(names: &[String], label: Option<&str>) -> Result<()> {
    let mut seen = HashSet::new();
    for name in names {
        check_task_name(name)?;
        if !seen.insert(name.as_str()) {
            return Err(Error::usage(
                Code::DuplicateTask,
                format!("the task name {name:?} is given twice"),
                "give every task a different name",
            ));
        }
    }
    if let Some(label) = label {
        if label.trim().is_empty() || label.chars().any(char::is_control) {
            return Err(Error::usage(
                Code::BadLabel,
                format!("{label:?} is not a usable label"),
                "use a short name without control characters",
            ));
        }
        // A label is tried before an id prefix (design §3): one that could be
        // read as an id would shadow a batch.
        if batch::label_reads_as_id(label) {
            return Err(Error::usage(
                Code::BadLabel,
                format!(
                    "the label {label:?} could be read as a batch id or id prefix (hex digits and hyphens)"
                ),
                "use a label with a letter from g to z, a space, a dot or an underscore in it, such as `fix-login`",
            ));
        }
    }
    Ok(())
}

/// What the options and the source decide before the lock is taken.
struct Settings {
    mode: Mode,
    ttl: i64,
    /// Ignored files carried into worktrees (design §3.9).
    policy: Option<crate::workspace::carry::Policy>,
    /// The source's submodules (design §3.15).
    modules: Vec<crate::workspace::submodules::Module>,
    sparse: Option<crate::git::sparse::Workspaces>,
    /// The repository's folder below the workspace root.
    base: std::path::PathBuf,
    remote: Option<crate::record::batch::Remote>,
    /// The workspaces are the pool's (design §3.20): `workspace.pool` is
    /// on and they are plain worktrees (no submodules, no sparse checkout,
    /// whose registrations and skip-worktree bits are a batch's).
    pooled: bool,
}

impl Settings {
    /// Is task `name` remote (design §3.14)?
    fn is_remote(&self, opts: &Options, name: &String) -> bool {
        self.remote.is_some() && !opts.local.contains(name)
    }
}

/// The snapshot and the baseline commit made of it.
struct Baseline {
    snap: snapshot::Snapshot,
    stat_cache: Option<snapshot::PendingCache>,
    head: Option<gix::ObjectId>,
    commit: gix::ObjectId,
    changes: usize,
}

/// Prepare a batch in `source` (design §3.1). `opts.names` must have passed
/// `check`. Takes the repository lock (recovering interrupted write-backs,
/// told to `observer` at once).
pub fn run(source: &Source, opts: &Options, observer: &dyn Observer) -> Result<Report> {
    // Ctrl-C (or SIGTERM, SIGHUP) while prepare works: stop at the next
    // check, undo everything, and exit 3. Further signals (a terminal sends
    // Ctrl-C to git and git-delegate together, and git passes its own on)
    // never cut that undo short (design §3.15). The handler stays until the
    // process ends: a signal after the batch is complete changes nothing,
    // where the default action would kill the command before it said what
    // it made (a complete batch, reported nowhere).
    let _signals = crate::sys::interrupt::catch_signals();
    let settings = settings(source, opts)?;
    let locked = crate::ops::lock::lock_and_recover(source)?;
    let _lock = locked.lock;
    observer.notice(Notice::Recovered(locked.recovery));
    // design §3.18: no `workspace.setup` the user has not confirmed runs;
    // refused before anything is made.
    crate::ops::trust::refuse_unconfirmed(source)?;
    workspace::Kind::from(settings.mode).preflight(source)?;
    check_label_free(source, opts)?;
    let id = new_id()?;
    let mut plans = plan_workspaces(source, opts, &settings, &id)?;
    // design §3.20: the idle workspaces of the pool are proven on a thread
    // of their own while the source is snapshotted.
    let want = if settings.pooled { plans.len() } else { 0 };
    let proof = crate::ops::pool::Proof::of(source, &settings.base);
    let (base, proven) = std::thread::scope(|s| {
        let proving = (want > 0).then(|| s.spawn(|| proof.run(want)));
        let base = baseline(source, &id, observer);
        let proven = proving
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default();
        (base, proven)
    });
    let mut base = base?;
    let reuse = crate::ops::pool::assign(source, &mut plans, proven, base.snap.tree)?;
    let stat_cache = base.stat_cache.take();
    for nested in &base.snap.nested_repos {
        observer.notice(Notice::NestedRepository(nested.clone()));
    }
    let mut batch = new_batch(source, opts, &settings, &id, &plans, &base);

    let state_dir = source.state_dir();
    // design §3.15 "Killed commands": the marker first (fsync'd), before any
    // ref or folder, so a prepare killed at any later point leaves a batch
    // that is known to be incomplete; then everything else; the batch is
    // complete once `batch.toml` is rewritten without the marker.
    batch.preparing = Some(crate::record::batch::Marker::mine());
    let mut undo = Undo {
        source,
        batch: &mut batch,
        observer,
        armed: true,
    };
    crate::ops::preparing::record(&state_dir, undo.batch)?;
    crate::sys::interrupt::pause("marked");
    let carried = make(
        observer,
        source,
        &mut *undo.batch,
        (&plans, reuse),
        &opts.names,
        &settings,
        &base,
        stat_cache,
    )?;
    undo.armed = false;
    drop(undo);
    // The task's cwd mirrors the caller's folder, even one the baseline has
    // no files in (best effort: an empty folder changes nothing).
    if !batch.prefix.as_os_str().is_empty() {
        for t in batch.tasks.iter().filter(|t| !t.remote) {
            // Never through a symlink (design §3.18).
            let _ = crate::workspace::make_cwd(&t.root, &batch.prefix);
        }
    }
    Ok(Report {
        batch,
        head: base.head,
        changes: base.changes,
        carried,
    })
}

/// Everything about the options checked against the source, before the
/// lock: mode, carried patterns, submodules (a dirty one refused), sparse
/// folders, the workspace base, the remote and `--local`.
fn settings(source: &Source, opts: &Options) -> Result<Settings> {
    let mode = opts.mode.unwrap_or(source.config.mode);
    let kind = workspace::Kind::from(mode);
    if !kind.carries_ignored() && !opts.copy_ignored.is_empty() {
        return Err(Error::usage(
            Code::BadPattern,
            "--copy-ignored applies to worktree workspaces",
            "a scratch copy already holds every ignored file; drop --copy-ignored or use `--mode worktree`",
        ));
    }
    // Ignored files carried into worktrees (design §3.9): patterns are read first.
    let policy = match kind.carries_ignored() {
        true => Some(crate::workspace::carry::Policy::load(
            &source.root,
            &source.config.copy_ignored,
            &opts.copy_ignored,
        )?),
        false => None,
    };
    // Submodules found, a dirty one refused (design §3.15).
    let modules = crate::workspace::submodules::discover(source)?;
    // design §3.15: the workspaces hold what the source holds, or less.
    let narrow = crate::git::sparse::check_patterns(&opts.sparse)?;
    if !kind.narrows() && !narrow.is_empty() {
        return Err(Error::usage(
            Code::BadPattern,
            "--sparse applies to worktree workspaces",
            "a scratch copy is the whole source; drop --sparse or use `--mode worktree`",
        ));
    }
    let sparse = match kind.narrows() {
        true => crate::git::sparse::Workspaces::plan(&source.repo, &narrow)?,
        false => None,
    };
    let base = source.workspace_base()?;
    // design §3.14: the remote the remote tasks go through, and which tasks are.
    let remote = opts
        .remote
        .as_deref()
        .map(|r| crate::ops::remote_workers::resolve(source, r))
        .transpose()?;
    if let Some(l) = opts.local.iter().find(|l| !opts.names.contains(l)) {
        return Err(Error::usage(
            Code::UnknownTask,
            format!("--local {l} names no task of this prepare"),
            "give --local one of the task names given (or 1..N with -n)",
        ));
    }
    let pooled = kind.pools() && source.config.pool > 0 && modules.is_empty() && sparse.is_none();
    Ok(Settings {
        mode,
        ttl: opts.ttl_secs.unwrap_or(source.config.ttl_secs),
        policy,
        modules,
        sparse,
        base,
        remote,
        pooled,
    })
}

/// Refuse a label an open batch has.
fn check_label_free(source: &Source, opts: &Options) -> Result<()> {
    let existing = batch::list_ok(&source.state_dir())?;
    let Some(label) = &opts.label else {
        return Ok(());
    };
    let Some(b) = existing.iter().find(|b| b.label.as_deref() == Some(label)) else {
        return Ok(());
    };
    Err(Error::usage(
        Code::DuplicateLabel,
        format!(
            "the open batch {} already has the label {label:?}",
            b.short()
        ),
        match crate::ops::preparing::progress(b) {
            // A killed prepare of the same label, re-run: say how it goes.
            Some(crate::ops::preparing::Progress::Interrupted) => format!(
                "that batch's prepare was killed and it holds no work: remove it with `git delegate drop {} --force` or `git delegate gc`, then prepare again",
                b.short()
            ),
            _ => "choose another label, or apply or drop that batch first".to_string(),
        },
    ))
}

/// The workspaces of the local tasks, their places checked free, and no
/// batch of this id yet.
fn plan_workspaces(
    source: &Source,
    opts: &Options,
    settings: &Settings,
    id: &str,
) -> Result<Vec<workspace::Plan>> {
    let short = batch::short(id).to_string();
    let batch_dir = batch::batch_dir(&source.state_dir(), id);
    let mut plans: Vec<workspace::Plan> = opts
        .names
        .iter()
        .filter(|n| !settings.is_remote(opts, n))
        .map(|name| {
            let lock_reason = crate::git::registration::lock_reason(id, name);
            // git-delegate's own stat record of it (design §3.20).
            let stat = crate::record::stat::of_task(&batch_dir, name);
            match settings.pooled {
                // A slot of the pool: its path for life (design §3.20).
                true => crate::workspace::pool::new_plan(&settings.base, lock_reason, stat),
                false => workspace::Plan {
                    root: settings.base.join(&short).join(name),
                    worktree_id: workspace::worktree_id(&short, name),
                    lock_reason,
                    stat: Some(stat),
                },
            }
        })
        .collect();
    // design §3.18: a repository folder another user made (or a symlink
    // in its place) is refused before anything is made.
    let kind = workspace::Kind::from(settings.mode);
    kind.place(&source.root, &settings.base, &mut plans)?;
    if kind.registered() {
        workspace::check_free(&source.common_dir, &plans)?;
    }
    if batch::batch_dir(&source.state_dir(), id)
        .symlink_metadata()
        .is_ok()
        || refs::get(&source.repo, &refs::baseline(id))?.is_some()
    {
        return Err(Error::usage(
            Code::BatchExists,
            format!("a batch with the id {id} exists already"),
            "run the command again (ids are random)",
        ));
    }
    Ok(plans)
}

/// The snapshot of the source and the baseline commit written of it.
fn baseline(source: &Source, id: &str, observer: &dyn Observer) -> Result<Baseline> {
    let (snap, stat_cache) = {
        let _progress = observer.step("Snapshotting the working tree");
        snapshot::snapshot_for_prepare(&source.repo, &source.state_dir())?
    };
    let head = source.repo.head_id().ok().map(|id| id.detach());
    let commit = crate::git::commit::write(
        &source.repo,
        snap.tree,
        head,
        crate::git::commit::baseline_message(id),
    )?;
    // Paths that differ from HEAD (a staged change undone on disk is none).
    let changed = if snap.changes == 0 {
        Vec::new()
    } else {
        crate::git::diff::trees(&source.repo, snap.head_tree, snap.tree)?
    };
    // Their blobs are the private snapshot the pre-push guard knows (design §3.19).
    crate::record::private::record(&source.state_dir(), id, &changed)?;
    let changes = changed.len();
    if crate::sys::interrupt::interrupted() {
        return Err(Error::interrupted());
    }
    Ok(Baseline {
        snap,
        stat_cache,
        head,
        commit,
        changes,
    })
}

/// The batch record, before anything is made.
fn new_batch(
    source: &Source,
    opts: &Options,
    settings: &Settings,
    id: &str,
    plans: &[workspace::Plan],
    base: &Baseline,
) -> Batch {
    let mut plan = plans.iter();
    Batch {
        id: id.to_string(),
        label: opts.label.clone(),
        created_at: crate::sys::time::rfc3339(crate::sys::time::now()),
        source: source.root.clone(),
        prefix: source.prefix.clone(),
        source_head: base.head.map(|h| h.to_string()),
        baseline: base.commit.to_string(),
        mode: settings.mode,
        forbid_commit: opts.forbid_commit || source.config.forbid_commit,
        sparse: settings.sparse.as_ref().map(|s| s.list.clone()),
        drivers: Some(crate::git::drivers::read(&source.repo)),
        lease: Lease::new(settings.ttl, opts.owner),
        preparing: None,
        tasks: opts
            .names
            .iter()
            .filter_map(|name| match settings.is_remote(opts, name) {
                true => Some(Task::open_remote(name.clone())),
                false => plan.next().map(|p| Task {
                    // A workspace of the pool is the task's while it holds its lock.
                    lock: settings.pooled.then(|| p.lock_reason.clone()),
                    ..Task::open(name.clone(), p.root.clone(), p.worktree_id.clone())
                }),
            })
            .collect(),
        remote: settings.remote.clone(),
    }
}

/// Undoes a prepare whose marker is recorded unless disarmed: removes
/// everything it made (only folders it made), its refs and state, the
/// marker last. Signals that arrive meanwhile change nothing (see
/// `preparing`); what cannot be removed is told to the observer and left
/// for `gc`.
struct Undo<'a> {
    source: &'a Source,
    batch: &'a mut Batch,
    observer: &'a dyn Observer,
    armed: bool,
}

impl Drop for Undo<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        crate::sys::interrupt::pause("undo");
        if let Err(error) = crate::ops::preparing::remove_whole(self.source, self.batch, false) {
            self.observer.notice(Notice::UndoIncomplete {
                short: batch::short(&self.batch.id).to_string(),
                error,
            });
        }
    }
}

/// A new batch id: a random UUID (tests may fix it).
fn new_id() -> Result<String> {
    Ok(match std::env::var(TEST_BATCH_ID) {
        Ok(fixed) => uuid::Uuid::parse_str(&fixed)
            .map_err(|_| {
                Error::usage(
                    Code::BadBatchId,
                    format!("{TEST_BATCH_ID}={fixed:?} is not a UUID"),
                    format!("unset {TEST_BATCH_ID}"),
                )
            })?
            .hyphenated()
            .to_string(),
        Err(_) => uuid::Uuid::new_v4().to_string(),
    })
}
/// `delegate::interrupted` once a signal came.
fn stop() -> Result<()> {
    if crate::sys::interrupt::interrupted() {
        return Err(Error::interrupted());
    }
    Ok(())
}

fn check_task_name(name: &str) -> Result<()> {
    Ok(batch::check_task_name(name)?)
}
