//! `git delegate run` (design §3.13): parse the arguments (prepare's,
//! `--tasks`, `--jobs`, `--timeout`, `--verify`, `--no-apply`, the command
//! after `--`), call the engine (`git_delegate::ops::run::run`: prepare, workers, apply),
//! and render: on a terminal the workers' lines prefixed with their task and
//! a status line per worker, then the workers and the apply as text, or
//! the run document.
//!
//! Owns: the run command's arguments, human text and JSON document.
//! Never: does git, filesystem or process work (the engine's `run` does).

use crate::cli::RunArgs;
use crate::render::human::run::{seconds, status_word};
use crate::ui::Ui;
use git_delegate::error::Result;
use git_delegate::ops::run::{Event, Watcher};
use git_delegate::sys::paths::{BStr, ByteSlice};
use git_delegate::writeback::Recovery;

pub fn run(ui: &Ui, args: RunArgs, recovered: &mut Recovery) -> Result<i32> {
    let opts = options(&args)?;
    let source = super::source()?;
    let shown = super::CommandObserver::new(ui);
    let live = Live::new(ui, &opts.prepare.names);
    let report = git_delegate::ops::run::run(source, &opts, &shown, &live);
    shown.recovered_into(recovered);
    let report = report?;
    let b = &report.prepared.batch;

    if ui.json {
        let t = crate::render::Text::default();
        // The embedded apply document is whole, `schema` included.
        let doc = crate::render::run::RunDoc {
            batch: b.id.clone(),
            workers: crate::render::run::RunWorker::list(&t, &report.workers),
            apply: report
                .apply
                .as_ref()
                .map(|a| crate::render::Embedded::new(super::apply::report_doc(&t, a))),
            interrupted: report.interrupted,
            ended_elsewhere: report.ended_elsewhere.is_some(),
            ended_by_apply: report
                .ended_elsewhere
                .as_ref()
                .and_then(|e| e.apply_id.clone()),
        };
        ui.doc_after(t.doc(doc), recovered);
    }
    ui.say(&crate::render::human::run::workers_text(ui, &report));
    if let Some(ended) = &report.ended_elsewhere {
        // design §3.13: nothing was left for run to apply (exit 1).
        ui.say(&crate::render::human::run::ended_text(b, ended));
        return Ok(1);
    }
    if report.interrupted {
        ui.warn(&format!(
            "git-delegate: interrupted: every worker was stopped and nothing was applied.\n  \
             The batch stays open: apply it with `git delegate apply {id}`, or drop it with `git delegate drop {id} --force`\n",
            id = b.id
        ));
        return Ok(1);
    }
    match &report.apply {
        Some(a) if a.interrupted => {
            super::apply::say(ui, a, false, false);
            super::tell_finished(
                ui,
                &format!("the write-back into {}", super::show(&a.batch.source)),
            );
            return Ok(1);
        }
        Some(a) => {
            super::apply::say(ui, a, false, false);
            // A write-back the filesystem refused: exit 3, as apply's.
            if let Some(e) = a.refused_by_filesystem() {
                return Ok(e.exit_code());
            }
        }
        None => ui.say(&format!(
            "Nothing was applied (--no-apply). When you are ready: git delegate apply {id}\n\
             (or give the batch up: git delegate drop {id} --force)\n",
            id = b.id
        )),
    }
    Ok(if report.ok() { 0 } else { 1 })
}

/// The run transaction's options from the command line: everything about
/// the arguments is checked before anything is made.
fn options(args: &RunArgs) -> Result<git_delegate::ops::run::Options> {
    // Everything about the arguments is checked before anything is made.
    let specs = match &args.tasks_file {
        Some(f) => git_delegate::ops::run::load_tasks(f)?,
        None => Vec::new(),
    };
    let p = &args.prepare;
    let names: Vec<String> = if !specs.is_empty() {
        specs.iter().map(|s| s.name.clone()).collect()
    } else {
        match (p.count, p.tasks.is_empty()) {
            (Some(n), _) => (1..=n).map(|i| i.to_string()).collect(),
            (None, true) => vec!["1".to_string()],
            (None, false) => p.tasks.clone(),
        }
    };
    // run's workers run here, in the batch's workspaces (design §3.13).
    if let Some(remote) = &p.remote {
        return Err(git_delegate::error::Error::usage(
            git_delegate::error::Code::Usage,
            format!("run starts its workers on this machine, so its tasks cannot be remote (--remote {remote})"),
            "for workers on other machines, `git delegate prepare --remote REMOTE`, then `join` and `submit` there and `git delegate apply` here",
        ));
    }
    let prepare = super::prepare::options(p, names)?;
    let timeout_secs = super::parse_ttl_opt(args.timeout.as_deref())?;
    let apply = if args.no_apply {
        None
    } else {
        Some(git_delegate::ops::apply::Options {
            verify: args.verify.clone(),
            no_verify: args.no_verify,
            verify_timeout_secs: super::parse_ttl_opt(args.verify_timeout.as_deref())?,
            ..Default::default()
        })
    };
    Ok(git_delegate::ops::run::Options {
        prepare,
        specs,
        command: args.command.clone(),
        jobs: args.jobs.map(usize::from),
        timeout_secs,
        apply,
        no_sandbox: args.contain.no_sandbox,
        no_network: args.contain.no_network,
    })
}

/// The live view on a terminal: each worker line prefixed with its task
/// (aligned, coloured by task where colour is on), a status line when a
/// worker starts and when it ends. Nothing when piped or with `--json`.
struct Live<'a> {
    ui: &'a Ui,
    names: Vec<String>,
    width: usize,
    on: bool,
}

impl<'a> Live<'a> {
    fn new(ui: &'a Ui, names: &[String]) -> Live<'a> {
        use std::io::IsTerminal;
        Live {
            ui,
            names: names.to_vec(),
            width: names.iter().map(String::len).max().unwrap_or(1),
            on: !ui.json && std::io::stderr().is_terminal(),
        }
    }

    fn prefix(&self, idx: usize) -> String {
        const COLOURS: [&str; 6] = ["36", "33", "35", "32", "34", "31"];
        let name = self.names.get(idx).map_or("?", String::as_str);
        self.ui.paint(
            COLOURS[idx % COLOURS.len()],
            &format!("{name:<width$}", width = self.width),
        )
    }
}

impl Watcher for Live<'_> {
    fn wants_lines(&self) -> bool {
        self.on
    }

    fn event(&self, event: Event<'_>) {
        if !self.on {
            return;
        }
        let text = match event {
            Event::Started { idx } => format!("{} | -- running\n", self.prefix(idx)),
            Event::Line { idx, line } => format!("{} | {}\n", self.prefix(idx), shown(line)),
            Event::Ended { idx, worker } => format!(
                "{} | -- {} after {}\n",
                self.prefix(idx),
                status_word(worker),
                seconds(worker.duration_ms)
            ),
        };
        self.ui.warn(&text);
    }
}

fn shown(line: &BStr) -> String {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    crate::ui::escape_text(&line.to_str_lossy())
}
