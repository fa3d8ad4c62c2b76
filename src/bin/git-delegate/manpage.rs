//! Manual pages (design §3.8): `git-delegate.1` and one `git-delegate-<command>.1`
//! per visible subcommand, generated from the clap definitions with
//! clap_mangen, plus the hand-written sections clap cannot produce
//! (workflow, configuration, files, exit status, examples, see also).
//!
//! Owns: the text and layout of every page, byte for byte (no dates, nothing
//! but Cargo's version varies), and the page file names.
//! Never: writes files or prints (the `man` command does), or reads anything
//! but the clap definitions.

use clap::CommandFactory;
use clap_mangen::roff::{bold, italic, roman, Inline, Roff};
use clap_mangen::Man;

/// The manual every page belongs to (the fifth `.TH` argument).
const MANUAL: &str = "git-delegate manual";

/// The preamble `roff` writes before every rendered chunk; a page carries it once.
const PREAMBLE: &str = ".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n";

/// Every page: (file name, roff text). The main page comes first.
pub fn pages() -> Vec<(String, String)> {
    let root = command();
    let mut out = vec![("git-delegate.1".to_string(), main_page(&root))];
    for sub in visible(&root) {
        out.push((
            format!("git-delegate-{}.1", sub.get_name()),
            sub_page(&root, sub),
        ));
    }
    out
}

/// The main page, `git-delegate.1`.
pub fn main() -> String {
    main_page(&command())
}

/// The clap command as the pages show it: built (global options propagated,
/// display names such as `git-delegate-prepare` set), no `help` subcommand.
fn command() -> clap::Command {
    let mut cmd = crate::cli::Cli::command().disable_help_subcommand(true);
    cmd.build();
    cmd
}

fn visible(cmd: &clap::Command) -> impl Iterator<Item = &clap::Command> {
    cmd.get_subcommands().filter(|s| !s.is_hide_set())
}

/// Render one chunk without its preamble. In text lines, `backticked`
/// spans of clap's help texts become bold.
fn chunk(render: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> String {
    let mut buf = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = render(&mut buf);
    let text = String::from_utf8_lossy(&buf).into_owned();
    let text = text.strip_prefix(PREAMBLE).unwrap_or(&text);
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        if !line.starts_with('.') && line.matches('`').count() % 2 == 0 {
            for (i, part) in line.split('`').enumerate() {
                if i > 0 {
                    out.push_str(if i % 2 == 1 { "\\fB" } else { "\\fR" });
                }
                out.push_str(part);
            }
        } else {
            out.push_str(line);
        }
    }
    out
}

/// A chunk whose first line (a `.SH` heading) is replaced by `heading`.
fn rehead(text: String, heading: &str) -> String {
    match text.split_once('\n') {
        Some((_, rest)) => format!("{heading}\n{rest}"),
        None => text,
    }
}

/// Text with `backticked` spans in bold, everything else roman.
fn inlines(text: &str) -> Vec<Inline> {
    text.split('`')
        .enumerate()
        .filter(|(_, s)| !s.is_empty())
        .map(|(i, s)| if i % 2 == 1 { bold(s) } else { roman(s) })
        .collect()
}

/// Hand-written sections, built with `roff` so that escaping is right.
struct Sections(Roff);

impl Sections {
    fn new() -> Self {
        Sections(Roff::new())
    }
    fn sh(&mut self, name: &str) -> &mut Self {
        self.0.control("SH", [name]);
        self
    }
    fn ss(&mut self, name: &str) -> &mut Self {
        self.0.control("SS", [name]);
        self
    }
    fn para(&mut self, text: &str) -> &mut Self {
        self.0.control("PP", []);
        self.0.text(inlines(text));
        self
    }
    /// A tagged paragraph: `tag` in bold (with `backticks` honoured inside `text`).
    fn item(&mut self, tag: &str, text: &str) -> &mut Self {
        self.0.control("TP", []);
        self.0.text(vec![bold(tag)]);
        self.0.text(inlines(text));
        self
    }
    /// A tagged paragraph of several paragraphs.
    fn item_paras(&mut self, tag: &str, paras: &[&str]) -> &mut Self {
        self.0.control("TP", []);
        self.0.text(vec![bold(tag)]);
        for (i, p) in paras.iter().enumerate() {
            if i > 0 {
                self.0.control("IP", []);
            }
            self.0.text(inlines(&p.replace('\n', " ")));
        }
        self
    }
    /// A tagged paragraph whose tag is set in italics (a placeholder path).
    fn item_i(&mut self, tag: &str, text: &str) -> &mut Self {
        self.0.control("TP", []);
        self.0.text(vec![italic(tag)]);
        self.0.text(inlines(text));
        self
    }
    /// Lines shown as they are (examples, file excerpts).
    fn code(&mut self, lines: &str) -> &mut Self {
        self.0.control("PP", []);
        self.0.control("RS", ["4"]);
        self.0.control("nf", []);
        for line in lines.lines() {
            self.0.text(vec![roman(line)]);
        }
        self.0.control("fi", []);
        self.0.control("RE", []);
        self
    }
    fn render(&self) -> String {
        chunk(|w| self.0.to_writer(w))
    }
}

fn title(man: Man, name: &str, cmd: &clap::Command) -> Man {
    man.title(name.to_ascii_uppercase())
        .section("1")
        .date("")
        .source(format!(
            "git-delegate {}",
            cmd.get_version().unwrap_or_default()
        ))
        .manual(MANUAL)
}

/// `.SH SYNOPSIS`: one line per form of `cmd` (per visible subcommand, or
/// nested subcommand), options with their values, in git's style. The global
/// `--color`, `-h` and `-V` are left to OPTIONS.
fn synopsis(cmd: &clap::Command) -> String {
    let mut roff = Roff::new();
    roff.control("SH", ["SYNOPSIS"]);
    // Left-adjusted, no hyphenation: option lists must not be stretched or split.
    roff.control("ad", ["l"]);
    roff.control("nh", []);
    let mut first = true;
    let mut forms = Vec::new();
    collect_forms(cmd, &mut forms);
    for form in forms {
        if !first {
            roff.control("br", []);
        }
        first = false;
        roff.text(form);
    }
    roff.control("ad", ["b"]);
    roff.control("hy", []);
    chunk(|w| roff.to_writer(w))
}

/// The synopsis lines of `cmd`: itself when it has no visible subcommands,
/// else each of them (recursively).
fn collect_forms(cmd: &clap::Command, out: &mut Vec<Vec<Inline>>) {
    let subs: Vec<&clap::Command> = visible(cmd).collect();
    if !subs.is_empty() {
        for sub in subs {
            collect_forms(sub, out);
        }
        return;
    }
    let name = cmd.get_bin_name().unwrap_or_else(|| cmd.get_name());
    let mut line = vec![bold(name)];
    for arg in cmd.get_arguments().filter(|a| {
        !a.is_hide_set()
            && !a.is_global_set()
            && !a.is_positional()
            && !matches!(a.get_id().as_str(), "help" | "version")
    }) {
        line.push(roman(" ["));
        match (arg.get_short(), arg.get_long()) {
            (Some(s), Some(l)) => {
                line.push(bold(format!("-{s}")));
                line.push(roman("|"));
                line.push(bold(format!("--{l}")));
            }
            (Some(s), None) => line.push(bold(format!("-{s}"))),
            (None, Some(l)) => line.push(bold(format!("--{l}"))),
            (None, None) => {}
        }
        if arg.get_num_args().is_some_and(|n| n.takes_values()) {
            let value = value_name(arg);
            if arg.get_num_args().is_some_and(|n| n.min_values() == 0) {
                line.push(roman(" ["));
                line.push(italic(value));
                line.push(roman("]"));
            } else {
                line.push(roman(" "));
                line.push(italic(value));
            }
        }
        line.push(roman("]"));
        if matches!(arg.get_action(), clap::ArgAction::Append) {
            line.push(roman("..."));
        }
    }
    for arg in cmd.get_positionals().filter(|a| !a.is_hide_set()) {
        let value = value_name(arg);
        let many = arg.get_num_args().is_some_and(|n| n.max_values() > 1);
        let dots = if many { "..." } else { "" };
        if arg.is_required_set() {
            line.push(roman(" "));
            line.push(italic(format!("{value}{dots}")));
        } else {
            line.push(roman(" ["));
            line.push(italic(format!("{value}{dots}")));
            line.push(roman("]"));
        }
    }
    out.push(line);
}

fn value_name(arg: &clap::Arg) -> String {
    arg.get_value_names()
        .and_then(|v| v.first())
        .map(|v| v.to_string())
        .unwrap_or_else(|| arg.get_id().as_str().to_ascii_uppercase())
}

fn main_page(root: &clap::Command) -> String {
    let man = title(Man::new(root.clone()), "git-delegate", root);
    let mut page = String::from(PREAMBLE);
    page.push_str(&chunk(|w| man.render_title(w)));
    page.push_str(&chunk(|w| man.render_name_section(w)));
    page.push_str(&synopsis(root));
    page.push_str(&chunk(|w| man.render_description_section(w)));
    page.push_str(&description().render());
    page.push_str(&rehead(
        chunk(|w| man.render_subcommands_section(w)),
        ".SH COMMANDS",
    ));
    page.push_str(&chunk(|w| man.render_options_section(w)));
    page.push_str(&main_sections().render());
    page.push_str(&chunk(|w| man.render_version_section(w)));
    page
}

fn description() -> Sections {
    let mut s = Sections::new();
    s.ss("Workflow")
        .para(
            "`git delegate prepare` snapshots the working tree into a baseline commit and creates \
             one workspace per task. Each worker (a coding agent, a script, a person) works in its \
             own workspace only; the batch document of `prepare --json` gives each task's folder \
             (`tasks[].cwd`).",
        )
        .para(
            "`git delegate apply` then snapshots every workspace into a proposal commit, merges the \
             proposals 3-way in task order onto the baseline, merges that with what changed in the \
             working tree meanwhile, and writes only the paths that differ, through a crash-safe \
             journal. Tasks whose changes conflict keep their proposal ref, a patch and their \
             workspace; the batch stays open for them. `git delegate drop` gives a batch up, \
             `git delegate gc` reclaims stale ones.",
        )
        .para(
            "A batch is named by its UUID, its label, or any unique prefix of at least 4 \
             characters of the UUID, tried in that order; omitted, it means the only open batch. \
             A label that could be read as an id (4 or more characters, all hex digits and \
             hyphens) is refused, so no label shadows a batch.",
        )
        .ss("Guarantees")
        .para(
            "The index, HEAD, branches, stash and git config are never changed by git-delegate. \
             Workers can still change branches, tags and the stash: a workspace is a linked \
             worktree, which shares them with the repository. Apply reports every branch and tag \
             made or moved onto the batch's work or deleted since prepare, and every stash entry \
             a workspace pushed (with the task that made it where that can be told), and leaves \
             them as they are; a task whose work is in the stash stays open (reason stashed) and \
             apply prints the `git -C WORKSPACE stash pop stash@{N}` that brings it back. They \
             share the repository's config and hooks too: apply reports every config key and \
             hook created, changed or deleted since prepare (but the pre-commit hook `git \
             delegate hooks install` writes), with a warning, and leaves them as they are. Uncommitted, \
             untracked and ignored files are never overwritten or lost: a write that would replace \
             content git-delegate has not seen is a conflict. After a crash at any point the next \
             command that changes things rolls an interrupted write-back back, or finishes one \
             that had written its whole result and records its apply as if nothing had happened \
             (`git delegate status` says which first; `apply --dry-run` only reports it, exit \
             3), so the working tree is never left half applied. Ctrl-C, SIGTERM or SIGHUP \
             during a write-back (apply, undo, refresh) never leaves it half done either: before \
             its commit point it is rolled back (exit 3, delegate::interrupted), past it it is \
             finished and recorded (exit 1), and the command says which on stderr. A path \
             changed since the write-back put it there is never rolled back over: it is left as \
             you left it, the original it replaced is kept next to it under a `.gd-` name, and \
             every command that changes things names both (exit 3, `rollback_failed`) until you \
             delete the kept file (keeping yours) or move it over the path (taking the original \
             back). A prepare interrupted by Ctrl-C (SIGINT, once or more, to git and \
             git-delegate together), SIGTERM or SIGHUP undoes everything it made; one killed \
             outright leaves a batch marked incomplete, which apply refuses (exit 3), status \
             --check reports, and gc or drop removes whole without rescuing anything. Live \
             batches are never reclaimed.",
        )
        .ss("Leases")
        .para(
            "Every batch holds a lease with an expiry (`--ttl`, default 24h) and optionally an \
             owner process (`--owner-pid`). A lease is live, expired, orphaned (its owner is gone) or \
             released; an expired or orphaned batch is stale. `git delegate renew` extends a lease, \
             `git delegate status --check` and the pre-commit hook report stale batches, and \
             `git delegate gc` reclaims them after saving unapplied work.",
        );
    s
}

fn main_sections() -> Sections {
    let mut s = Sections::new();
    s.sh("CONFIGURATION")
        .para(
            "`<common-dir>/delegate.toml` (`.git/delegate.toml` in an ordinary repository) is \
             optional; every key has a default. Unknown keys and wrong types are errors that point \
             at the line. Command-line options win over the file.",
        )
        .item(
            "workspace.mode",
            "`\"worktree\"` (default) or `\"scratch\"`: the default of `prepare --mode`.",
        )
        .item(
            "workspace.root",
            "Where workspaces are created. Default: `$XDG_DATA_HOME/git-delegate/worktrees`, else \
             `~/.local/share/git-delegate/worktrees`. A leading `~/` means the home folder; a \
             relative path is taken from the source root. A root inside the source working tree is \
             refused. The root may be shared with other users (a sticky folder such as /tmp): the \
             folders git delegate makes there are its user's own and 0700, and a folder another \
             user made in their place, or a symlink there, is refused by prepare \
             (delegate::unsafe_workspace_root) and left alone by gc and drop; a root everyone may \
             write in without the sticky bit is refused.",
        )
        .item(
            "workspace.copy-ignored",
            "Default `[]`. gitignore-style patterns of ignored files that are carried into every \
             worktree task (for example `[\".env\", \"node_modules/\"]`), cloned where the \
             filesystem allows.",
        )
        .item(
            "workspace.setup",
            "Default `\"\"` (none). A shell command (`sh -c`) run in each new workspace's folder \
             once its files and carried ignored files are in place (for example `\"npm ci\"`), \
             with the environment of run's workers (GIT_DELEGATE_TASK, GIT_DELEGATE_TASK_INDEX, \
             GIT_DELEGATE_PORT, ...), its output in \
             `<common-dir>/delegate/logs/<uuid>/setup-<task>.log`. If it fails for any task, \
             prepare (or run) fails with delegate::setup_failed, naming the task, its exit \
             status and its log, and undoes everything; Ctrl-C stops every setup command. Files \
             it makes that are not ignored are the worker's work: setup should write ignored \
             files.",
        )
        .item(
            "workspace.setup-jobs",
            "Default `0`: the number of CPUs. How many setup commands run at once (0 to 256).",
        )
        .item(
            "workspace.snapshots",
            "`\"auto\"` (default) or `\"never\"`. Where the workspace root is on btrfs, the \
             first workspace of a batch is made as a subvolume and every other one as a snapshot \
             of it (carried ignored files included): making N workspaces costs about one, and \
             they take no disk until written. They are ordinary workspaces in every other way, \
             and every command removes them as a user without privileges can (Linux 4.18 or \
             later). `apply --verify` makes its verification workspaces the same way, as \
             snapshots of one checked-out template with only the paths that differ written. \
             `\"never\"` checks each one out.",
        )
        .item(
            "lease.ttl",
            "Default `\"24h\"`. The lease duration of `prepare` and `renew`: a number and a unit \
             (s, m, h, d, w). A duration that, counted from now, would end after 9999-12-31 is \
             refused, here and in every other duration.",
        )
        .item(
            "apply.stop-processes",
            "`\"background\"` (default): processes still running inside a workspace without a \
             controlling terminal are stopped before it is snapshot (SIGTERM, a short grace, \
             SIGKILL) and reported; a process attached to a terminal (a shell, an editor) is \
             never stopped: its task fails with reason processes_running, naming it, and keeps \
             its work. `\"terminate\"`: every process inside is stopped and reported (the \
             default before). `\"refuse\"`: none is stopped; any makes the task fail with \
             reason processes_running.",
        )
        .item(
            "apply.strict",
            "Default `false`. `true` makes every apply behave as `apply --strict`.",
        )
        .item(
            "apply.verify",
            "Default `\"\"` (none). A shell command every apply runs on the integrated result \
             before writing, as `apply --verify CMD` does; `apply --no-verify` skips it.",
        )
        .item(
            "apply.verify-timeout",
            "Default `\"30m\"`. How long one verification run may take before its process \
             group is killed (the run counts as failed).",
        )
        .item(
            "apply.verify-jobs",
            "Default `1` (at most 64). How many candidate sets a verification may run at once.",
        )
        .item(
            "run.port-base",
            "Default `41000` (1 to 65535). The first port `git delegate run` reserves: task i \
             (0-based) gets GIT_DELEGATE_PORT = run.port-base + i x run.ports-per-task.",
        )
        .item(
            "run.ports-per-task",
            "Default `10` (1 to 1000). How many ports each task of `run` has, from its \
             GIT_DELEGATE_PORT on, so parallel dev servers never collide.",
        )
        .item(
            "gc.keep-failed",
            "Default `\"14d\"`. How long rescued and failed proposal refs are kept after their \
             batch went stale, how long the proposal of a task `apply --discard` dropped is kept, \
             and how old an unowned ref under refs/pi-delegate/ must be before gc removes it.",
        )
        .item(
            "undo.keep",
            "Default `20`. gc keeps at least the newest this many undo entries (see \
             git-delegate-undo(1)); an older one goes once it is also older than gc.keep-failed.",
        )
        .item(
            "hooks.stale-leases",
            "`\"warn\"` (default), `\"block\"` or `\"ignore\"`: what the pre-commit hook does \
             where the repository has stale batches.",
        )
        .item(
            "hooks.forbid-commit",
            "Default `false`. `true` makes every batch behave as `prepare --forbid-commit`.",
        )
        .item(
            "lock.timeout",
            "Default `\"30s\"`. How long a command waits for the repository lock held by another \
             git-delegate command before it gives up (exit 3).",
        )
        .para("The file with every key at its default:")
        .code(
            "[workspace]
mode = \"worktree\"            # \"worktree\" | \"scratch\"
root = \"~/.local/share/git-delegate/worktrees\"
copy-ignored = []            # gitignore-style patterns of ignored files to carry
snapshots = \"auto\"           # \"auto\" | \"never\": btrfs subvolume snapshots
setup = \"\"                   # shell command run in each new workspace
setup-jobs = 0               # 0 = number of CPUs

[lease]
ttl = \"24h\"

[apply]
stop-processes = \"background\" # \"background\" | \"terminate\" | \"refuse\"
strict = false
verify = \"\"                  # a shell command; empty = no verification
verify-timeout = \"30m\"
verify-jobs = 1

[run]
port-base = 41000
ports-per-task = 10

[gc]
keep-failed = \"14d\"

[undo]
keep = 20

[hooks]
stale-leases = \"warn\"        # \"warn\" | \"block\" | \"ignore\"
forbid-commit = false

[lock]
timeout = \"30s\"",
        );

    s.sh("FILES")
        .item_i(
            "<common-dir>/delegate.toml",
            "The configuration (see CONFIGURATION). `<common-dir>` is what `git rev-parse \
             --git-common-dir` prints: `.git` of the main working tree, shared by all its linked \
             worktrees.",
        )
        .item_i(
            "<common-dir>/delegate/",
            "State: `batches/<uuid>/batch.toml` per batch (tasks, lease, workspaces), its patches \
             and logs, the write-back journal of an apply in progress, and the lock file that \
             serialises commands that change things.",
        )
        .item(
            "refs/pi-delegate/batches/<uuid>/baseline",
            "The baseline commit of a batch: the working tree at prepare time, parent the HEAD of \
             then. Author and committer are `git-delegate <git-delegate@localhost>`.",
        )
        .item(
            "refs/pi-delegate/undo/<apply-id>/entry",
            "An apply's undo entry: a commit holding every path the apply wrote as it wrote them \
             (an absent path was deleted), whose parent holds the same paths as they were before \
             it; `refs/pi-delegate/undo/<apply-id>/tasks/<task>` keep the proposals it applied, \
             and `<common-dir>/delegate/undo/<apply-id>/entry.json` its batch, time, number of \
             paths and whether it was undone (and an undo's journal while it writes). See \
             git-delegate-undo(1).",
        )
        .item(
            "refs/pi-delegate/batches/<uuid>/tasks/<task>/proposal",
            "A task's proposal commit (parent the baseline), kept while the task is open, \
             conflicting or failed, and for gc.keep-failed after the task was discarded or its \
             batch was reclaimed (`status` lists those, with their patches under \
             `<common-dir>/delegate/kept/`, and `git delegate apply --kept REF` lands one). These refs keep every object reachable for recovery; they are \
             never under refs/heads or refs/tags, so branches, `git log --branches` and pushes do \
             not see them.",
        )
        .item_i(
            "<root>/<repo-name>-<fp>/<batch-short>/<task>",
            "A task's workspace. `<root>` is workspace.root; `<repo-name>` the folder name of the \
             main working tree; `<fp>` the first 12 hex digits of the SHA-256 of the canonical \
             common-dir path; `<batch-short>` the first 8 hex digits of the batch id. A worktree \
             workspace is registered under `<common-dir>/worktrees/delegate-<batch-short>-<task>` \
             and locked while the batch lives.",
        )
        .item_i(
            "<source-parent>/.git-delegate-scratch-<random>/project",
            "A scratch workspace (`--mode scratch`): a reflink copy beside the source root.",
        );

    s.sh("ENVIRONMENT")
        .item(
            "NO_COLOR",
            "When set and not empty, no colour unless `--color` says otherwise.",
        )
        .item(
            "XDG_DATA_HOME, HOME",
            "Locate the default workspace root (see workspace.root).",
        )
        .item(
            "GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE, GIT_CEILING_DIRECTORIES, \
             GIT_DISCOVERY_ACROSS_FILESYSTEM",
            "Find the source as git finds it (`git --git-dir=X --work-tree=Y delegate ...` \
             exports the first two; a relative GIT_INDEX_FILE is relative to the top of the work \
             tree, as for git). They describe the source only: workspaces are opened by their \
             own path, with their own git dir and index, and nothing started for a workspace \
             (a clean filter, say) inherits them.",
        )
        .item(
            "GIT_COMMON_DIR, GIT_OBJECT_DIRECTORY, GIT_ALTERNATE_OBJECT_DIRECTORIES",
            "Accepted when they name the repository's own folders (or, for alternates, folders \
             listed in objects/info/alternates); others are refused \
             (delegate::unsupported_environment, exit 3), since the workspaces could not see \
             objects kept there.",
        );

    s.sh("EXIT STATUS")
        .item("0", "Success.")
        .item(
            "1",
            "The command ran but reports a problem: apply left a task `conflict` or `failed` \
             (its work is kept); `status --check` found a stale batch, a batch whose prepare was \
             killed, a left-over write-back journal, a batch whose state file cannot be read or \
             a temporary file a killed command left in the state folder over an hour ago; \
             `hook pre-commit` refuses the commit; `drop` without `--force` found unapplied \
             changes, a corrupt state, or a workspace that is the source of another open batch; \
             `gc` left a stale or corrupt batch alone.",
        )
        .item(
            "2",
            "Bad usage or bad input, with nothing changed: an unknown option, an invalid task \
             name, an unknown or ambiguous batch, a bad config file, a workspace root inside the \
             source, an `--owner-pid` that is not running.",
        )
        .item(
            "3",
            "The repository is in a state the command cannot work in, with nothing changed: not a \
             repository (named for its cause: a `.git` file or symlink pointing nowhere, a `.git` \
             that cannot be read, delegate::unreadable_git_dir, or a repository of another user \
             that safe.directory does not list, delegate::dubious_ownership, as git refuses it), \
             a bare repository, a dirty submodule (or one whose repository is inside its folder: \
             git submodule absorbgitdirs), an object format the git library cannot read (neither \
             SHA-1 nor SHA-256) or refs it cannot read (reftable), repository variables it \
             cannot honour, a source that moved after \
             prepare, the lock held past lock.timeout, a baseline ref deleted by someone else, a \
             batch whose prepare never completed (apply, renew), a prepare interrupted by a \
             signal (undone), a write-back interrupted by a signal before its commit point \
             (rolled back), an interrupted write-back that could not be rolled back, a \
             filesystem error (a full disk, a denied permission) after which everything was \
             rolled back. Such errors are named for their cause, in every command: \
             delegate::disk_full (no space left on device, or no quota), \
             delegate::read_only_filesystem, delegate::permission_denied, and \
             delegate::filter_failed for a `required` clean or smudge filter that failed (the \
             message names the driver, its command, the file and the exit status).",
        );

    s.sh("OUTPUT").para(
        "Without `--json`, results go to stdout as short human text, and warnings and \
             progress to stderr (progress only when stderr is a terminal). With `--json`, stdout \
             carries exactly one JSON document of schema git-delegate/v1 and nothing else; a \
             failure prints an error document `{\"schema\", \"error\": {\"code\", \"message\", \
             \"help\"}}`. Every field is documented in docs/json.md of the source distribution.",
    );

    s.sh("WORKERS ON OTHER MACHINES")
        .para(
            "Any git remote the source can push to carries a batch to workers elsewhere (a forge, \
             an ssh host, a shared bare repository); no other server exists. `prepare --remote \
             REMOTE` pushes the baseline to REMOTE under its own ref and makes no local workspace \
             for the remote tasks (`--local TASK` keeps some here); it prints, per task, the \
             `git delegate join URL BATCH TASK` its worker runs. `join` fetches only the baseline \
             into a clone of the project it is run in (or `--repo DIR`) and adds a locked linked \
             worktree, or elsewhere clones; `submit` inside it pushes the workspace's files as the \
             task's proposal (again: replaced). `apply` fetches what was submitted and lands it \
             like local work; a remote task with nothing submitted stays open (`not_submitted`), \
             and `status --fetch` asks which have. When the batch ends (apply, drop, gc) its refs \
             on the remote are deleted, each only while it holds what was fetched (`git push \
             --force-with-lease`): a newer submission stays there and is reported; a remote that \
             cannot be reached then is a warning that lists them. `submit` to a batch that ended \
             is refused (`delegate::batch_ended`) and pushes nothing. Every transfer runs the git command with your own configuration and \
             credentials, never prompting (`GIT_TERMINAL_PROMPT=0`); a failure names the remote \
             and the git command (`delegate::remote_failed`).",
        )
        .code(
            "git delegate prepare --remote origin lint docs --json
# on each worker's machine, the line printed for its task:
git delegate join https://git.example.com/project.git BATCH lint
cd project-*-lint && ... && git delegate submit
# back on yours:
git delegate status --fetch
git delegate apply",
        );

    s.sh("EXAMPLES")
        .para("Hand four workers the working tree as it is, then bring their work back:")
        .code(
            "git delegate prepare -n 4
git delegate status
git delegate apply",
        )
        .para(
            "Named tasks with a label, a two-hour lease tied to this shell, as JSON for a script:",
        )
        .code(
            "git delegate prepare lint docs tests --label refactor --ttl 2h --owner-pid $$ --json",
        )
        .para("Look at a task's work, or go to its folder:")
        .code(
            "git delegate diff 2
git delegate diff --source
cd \"$(git delegate path 2)\"",
        )
        .para("Apply one task and keep its worktree; look first without changing anything:")
        .code(
            "git delegate apply refactor --dry-run
git delegate apply refactor --only docs --keep",
        )
        .para("Give a batch up, or reclaim whatever stale batches hold:")
        .code(
            "git delegate drop refactor --force
git delegate gc --dry-run",
        )
        .para("Git aliases make the round trip shorter:")
        .code(
            "git config alias.fan 'delegate prepare -n 4'
git config alias.land 'delegate apply'
git fan && git land",
        )
        .para("Install the manual pages next to the executable, and bash completion:")
        .code(
            "git delegate man --install
git delegate completions bash > ~/.local/share/bash-completion/completions/git-delegate",
        );

    s.sh("SEE ALSO").0.text(vec![
        bold("git-delegate-prepare"),
        roman("(1), "),
        bold("git-delegate-apply"),
        roman("(1), "),
        bold("git-delegate-status"),
        roman("(1), "),
        bold("git-delegate-diff"),
        roman("(1), "),
        bold("git-delegate-path"),
        roman("(1), "),
        bold("git-delegate-gc"),
        roman("(1), "),
        bold("git-delegate-drop"),
        roman("(1), "),
        bold("git-delegate-renew"),
        roman("(1), "),
        bold("git-delegate-refresh"),
        roman("(1), "),
        bold("git-delegate-join"),
        roman("(1), "),
        bold("git-delegate-submit"),
        roman("(1), "),
        bold("git-delegate-undo"),
        roman("(1), "),
        bold("git-delegate-hooks"),
        roman("(1), "),
        bold("git-worktree"),
        roman("(1), "),
        bold("git-stash"),
        roman("(1), "),
        bold("githooks"),
        roman("(5)"),
    ]);
    s
}

/// The apply page's account of `--verify` (design §3.10).
fn verify_section() -> Sections {
    let mut s = Sections::new();
    s.sh("VERIFIED INTEGRATION")
        .para(
            "With `--verify CMD` (or `apply.verify`), the integrated result (the working tree as it \
             is now plus the tasks that merge) is recorded as a commit under \
             refs/pi-delegate/batches/<batch>/verify/<n> and checked out in a verification \
             workspace beside the task workspaces, with the ignored files of \
             workspace.copy-ignored and .worktreeinclude (so builds find target/ or \
             node_modules/). CMD runs there through `sh -c`, at the folder that mirrors the one \
             apply was run from, with stdin from /dev/null, in its own process group, with \
             GIT_DELEGATE_BATCH (the batch id), GIT_DELEGATE_VERIFY=1 and GIT_DELEGATE_TASKS (the \
             task names in the tree under test, space-separated; empty for the working tree \
             alone) set, and without GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE and the other \
             variables that locate a repository, so git inside CMD sees the verification \
             workspace. Its output goes to <common-dir>/delegate/logs/<batch>/verify-<n>.log and, \
             on a terminal, to stderr as it comes. A run longer than --verify-timeout is killed \
             with its process group and counts as failed; what a finished run left running in \
             its group is killed too.",
        )
        .para(
            "Exit 0: the result is written. Otherwise the working tree alone is verified: if that \
             fails too, nothing is written and every task ends `unverified` (reason \
             verify_fails_without_tasks). Otherwise a binary search in task order finds the first \
             task whose addition makes CMD fail; it ends `rejected` (reason verify_failed, with \
             the failing run's log), the tasks before it are kept, and the kept tasks plus all \
             the remaining ones are verified once more; on failure the search repeats. With m \
             culprits among n tasks this takes at most 2 + m*(ceil(log2 n) + 1) runs. \
             --verify-jobs J runs up to J of the sets the search would reach at once, each in its \
             own workspace, with the same outcome.",
        )
        .para(
            "While CMD runs, apply holds no repository lock: other commands proceed, but apply and \
             drop of the same batch refuse (delegate::batch_busy, exit 3). The paths written \
             hold exactly what was verified: a task whose paths you changed in the working tree \
             while CMD ran ends `conflict` (source_changed), and the rest is integrated and \
             verified again. Rejected and unverified tasks keep their proposal ref, patch and \
             workspace. `--dry-run --verify CMD` verifies and reports, writing nothing. \
             Verification workspaces, refs and passing logs are removed at the end (--keep keeps \
             them); failing logs are kept.",
        );
    s
}

/// Exit statuses of one command, beyond "0 success, 2 usage, 3 state".
fn exit_status(name: &str) -> &'static [(&'static str, &'static str)] {
    match name {
        "prepare" => &[
            ("0", "The batch was created."),
            (
                "3",
                "Also: with --remote, pushing the baseline failed (`delegate::remote_failed`, \
                 naming the remote and the git command); the prepare was undone.",
            ),
        ],
        "join" => &[
            ("0", "The workspace was made."),
            (
                "2",
                "The task is already joined there (`delegate::already_joined`), or BATCH or \
                 TASK is malformed.",
            ),
            (
                "3",
                "Fetching or cloning failed, or the remote has no baseline of that batch \
                 (`delegate::remote_failed`); nothing was left behind.",
            ),
        ],
        "submit" => &[
            ("0", "The proposal was pushed."),
            (
                "2",
                "Not inside a workspace `git delegate join` made (`delegate::not_joined`).",
            ),
            (
                "3",
                "The push failed (`delegate::remote_failed`); the workspace is as it was, \
                 submit again. Or the batch has ended (`delegate::batch_ended`): nothing was \
                 pushed.",
            ),
        ],
        "apply" => &[
            (
                "0",
                "Every selected task ended `applied`, `no_changes` or `discarded`.",
            ),
            (
                "1",
                "A task ended `conflict`, `failed`, `rejected` or `unverified`, or stays `open` \
                 because its work is in the stash (reason `stashed`); its proposal ref, patch and \
                 workspace are kept and the batch stays open for it. A task whose worker failed in \
                 `git delegate run` and that --only does not name ends `worker_failed`, its \
                 workspace untouched. A folder of the source that refuses \
                 writing (permissions, an immutable folder, a read-only mount) fails only the \
                 tasks that write in it (`failed`, reason `write_failed`, naming the folder); the \
                 others are applied. Also when a signal arrived during the write-back past its \
                 commit point: it was finished and recorded (`\"interrupted\": \"finished\"`).",
            ),
        ],
        "status" => &[
            ("0", "Success (also when there are no batches)."),
            (
                "1",
                "With `--check`: a batch is stale, a batch's prepare was killed, or a write-back \
                 journal is left over (also one whose rollback left paths you changed: it names \
                 them).",
            ),
        ],
        "diff" => &[(
            "0",
            "The diffs were printed (also when no task has changes). A task whose workspace is \
             missing or is no longer the folder prepare made fails the command (exit 3, \
             `delegate::workspace_missing`); name the other tasks to see theirs. With \
             --source, such a task (and any task apply would leave out) is left out and named \
             on stderr instead, and the exit status is 0.",
        )],
        "path" => &[(
            "0",
            "The folder was printed. Exit 2 (`delegate::unknown_task`) when the batch has no \
             such task, or, without TASK, when the current folder is in no task's workspace.",
        )],
        "gc" => &[(
            "0",
            "Everything stale was reclaimed (or, with --dry-run, reported).",
        )],
        "drop" => &[
            ("0", "The batch was dropped."),
            (
                "1",
                "Refused without `--force`: tasks have changes that were never applied (in their \
                 workspace, or in the stash a worker pushed them to), or a \
                 task's workspace is the source of another open batch.",
            ),
        ],
        "renew" => &[("0", "The lease was renewed.")],
        "run" => &[
            (
                "0",
                "Every worker exited 0 and every task applied or had no changes (with \
                 --no-apply: every worker exited 0).",
            ),
            (
                "1",
                "A worker failed, timed out or could not start (its task is worker_failed and \
                 stays in the open batch), a task did not apply (conflict, failed, rejected, \
                 ...), another command applied or dropped the batch while the workers ran, or \
                 run was interrupted (Ctrl-C or SIGTERM: every worker was stopped and \
                 nothing was applied; the batch stays open for `git delegate apply` or \
                 `git delegate drop --force`).",
            ),
            (
                "2",
                "Bad usage or bad input, nothing prepared: no command after --, a bad --tasks \
                 file (`delegate::tasks_file`, naming the line and column), a bad task name or \
                 duration.",
            ),
        ],
        "refresh" => &[
            (
                "0",
                "Every selected task was refreshed (some may now be `conflicted`: their files \
                 hold conflict markers for their workers), or left as it was because its earlier \
                 conflicts are unresolved.",
            ),
            (
                "3",
                "A task's workspace is missing, or a file in it changed while it was read or \
                 stands where the source's version goes (`delegate::refresh_blocked`): nothing \
                 was changed in that workspace; tasks refreshed before it stay refreshed.",
            ),
        ],
        "undo" => &[
            (
                "0",
                "The apply was undone (or, with --dry-run, could be); with --list, the entries \
                 were listed.",
            ),
            (
                "1",
                "A path conflicts (changed since the apply where the apply wrote): nothing was \
                 written; the paths are listed.",
            ),
            (
                "2",
                "Nothing to undo (`delegate::nothing_to_undo`), or APPLY names no entry \
                 (`delegate::unknown_apply`, `delegate::ambiguous_apply`).",
            ),
            (
                "3",
                "HEAD moved since the apply (`delegate::head_moved`, naming both commits): the \
                 applied changes may be committed now; nothing was changed. --force undoes \
                 anyway.",
            ),
        ],
        "hook" => &[
            (
                "0",
                "The commit may proceed (a warning may have been printed).",
            ),
            (
                "1",
                "The commit is refused: a forbid-commit workspace, or stale batches with \
                 hooks.stale-leases = \"block\".",
            ),
        ],
        "hooks" => &[("0", "The hook is installed (or already was).")],
        _ => &[("0", "Success.")],
    }
}

fn sub_page(root: &clap::Command, sub: &clap::Command) -> String {
    let name = format!("git-delegate-{}", sub.get_name());
    let man = title(Man::new(sub.clone()), &name, root);
    let mut page = String::from(PREAMBLE);
    page.push_str(&chunk(|w| man.render_title(w)));
    page.push_str(&chunk(|w| man.render_name_section(w)));
    let nested: Vec<&clap::Command> = visible(sub).collect();
    page.push_str(&synopsis(sub));
    page.push_str(&chunk(|w| man.render_description_section(w)));
    if !nested.is_empty() {
        let mut s = Sections::new();
        s.sh("COMMANDS");
        for n in &nested {
            let about = n
                .get_long_about()
                .or_else(|| n.get_about())
                .map(|a| a.to_string())
                .unwrap_or_default();
            let paras: Vec<&str> = about.split("\n\n").collect();
            s.item_paras(n.get_name(), &paras);
        }
        page.push_str(&s.render());
    }
    page.push_str(&own_options(sub, ".SH OPTIONS"));
    if sub.get_name() == "apply" {
        page.push_str(&verify_section().render());
    }
    for n in &nested {
        let heading = format!(".SH \"{} OPTIONS\"", n.get_name().to_ascii_uppercase());
        page.push_str(&own_options(n, &heading));
    }
    let mut s = Sections::new();
    s.sh("COMMON OPTIONS")
        .item(
            "--color=WHEN",
            "`auto` (default), `always` or `never`: when to colour output. See git-delegate(1).",
        )
        .item(
            "-h, --help",
            "Print a summary (`-h`) or the full help with examples (`--help`).",
        )
        .item("-V, --version", "Print the version.");
    page.push_str(&s.render());
    let mut s = Sections::new();
    if let Some(after) = sub.get_after_long_help() {
        let after = after.to_string();
        let body = after
            .strip_prefix("Examples:\n")
            .unwrap_or(&after)
            .lines()
            .map(|l| l.strip_prefix("  ").unwrap_or(l))
            .collect::<Vec<_>>()
            .join("\n");
        s.sh("EXAMPLES").code(&body);
    }
    s.sh("EXIT STATUS");
    for (code, text) in exit_status(sub.get_name()) {
        s.item(code, text);
    }
    s.item(
        "2",
        "Bad usage or bad input; nothing changed. See git-delegate(1).",
    )
    .item(
        "3",
        "The repository is in a state the command cannot work in; nothing changed. See \
         git-delegate(1).",
    );
    if sub_takes_json(sub) {
        s.sh("OUTPUT").para(
            "With `--json`, stdout carries exactly one JSON document (schema git-delegate/v1), \
             also on failure (an error document); human text and progress go to stderr. The \
             fields are documented in docs/json.md of the source distribution.",
        );
    }
    s.sh("SEE ALSO").0.text(vec![
        bold("git-delegate"),
        roman("(1), "),
        bold("git-worktree"),
        roman("(1)"),
    ]);
    page.push_str(&s.render());
    page.push_str(&chunk(|w| man.render_version_section(w)));
    page
}

/// The OPTIONS section of `cmd`'s own options (not the global `--color`,
/// `--help` and `--version`), under `heading`; empty when it has none.
fn own_options(cmd: &clap::Command, heading: &str) -> String {
    let own: Vec<clap::Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !a.is_global_set())
        .filter(|a| !matches!(a.get_id().as_str(), "help" | "version" | "color"))
        .cloned()
        .collect();
    if own.is_empty() {
        return String::new();
    }
    let only = clap::Command::new("options")
        .disable_help_flag(true)
        .disable_version_flag(true)
        .args(own);
    rehead(chunk(|w| Man::new(only).render_options_section(w)), heading)
}

fn sub_takes_json(cmd: &clap::Command) -> bool {
    cmd.get_arguments().any(|a| a.get_id().as_str() == "json") || visible(cmd).any(sub_takes_json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_deterministic_and_complete() {
        let a = pages();
        let b = pages();
        assert_eq!(a, b);
        let names: Vec<&str> = a.iter().map(|(n, _)| n.as_str()).collect();
        for sub in [
            "prepare",
            "apply",
            "status",
            "diff",
            "path",
            "gc",
            "drop",
            "renew",
            "refresh",
            "run",
            "join",
            "submit",
            "undo",
            "hook",
            "hooks",
            "man",
            "completions",
        ] {
            assert!(
                names.contains(&format!("git-delegate-{sub}.1").as_str()),
                "{names:?}"
            );
        }
        assert!(!names.iter().any(|n| n.contains("snapshot")));
        for (name, text) in &a {
            assert_eq!(text.matches(PREAMBLE).count(), 1, "{name}");
            assert!(text.contains(".TH GIT-DELEGATE"), "{name}");
        }
        assert_eq!(main(), a[0].1);
    }
}
