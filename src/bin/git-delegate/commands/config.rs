//! `git delegate config [--trust]` (design §3.18 "Commands from the shared
//! git dir"): show `delegate.toml` against the file the user confirmed, or
//! confirm it (`git_delegate::ops::trust`).
//!
//! Owns: the config document and human text.
//! Never: reads or writes the record itself (the engine's `trust` does).

use crate::cli::ConfigArgs;
use crate::ui::Ui;
use git_delegate::error::Result;
use git_delegate::ops::trust::View;

pub fn run(ui: &Ui, args: ConfigArgs) -> Result<i32> {
    let source = super::source()?;
    let view = match args.trust {
        true => git_delegate::ops::trust::trust(&source)?,
        false => git_delegate::ops::trust::show(&source)?,
    };
    if ui.json {
        let t = crate::render::Text::default();
        let doc = crate::render::config::ConfigDoc::new(&t, &view);
        ui.doc(t.doc(doc));
    }
    ui.say(&human(&view, args.trust));
    // Exit 1: the file is not the one confirmed (nothing of it runs that
    // changed).
    Ok(if view.confirmed { 0 } else { 1 })
}

/// A value as shown: quoted, or "(not set)".
fn shown(v: Option<&str>) -> String {
    match v {
        Some(v) => format!("`{}`", crate::ui::escape_text(v)),
        None => "(not set)".to_string(),
    }
}

fn human(v: &View, trusting: bool) -> String {
    let file = crate::ui::escape_text(&super::show(&v.file));
    let mut text = match (trusting, v.confirmed, v.recorded) {
        (true, _, _) => format!("Confirmed {file} as yours: the commands it names run from now on.\n"),
        (false, true, true) => format!(
            "{file} is yours (no batch is open), recorded as the file you confirmed.\n"
        ),
        (false, true, false) => format!("{file} is the file you confirmed.\n"),
        (false, false, _) => format!(
            "{file} is not the file you confirmed: it changed while a batch was open (a worker's workspace shares it).\n"
        ),
    };
    for c in &v.changes {
        text.push_str(&format!(
            "  {}: {} -> {}{}\n",
            crate::ui::escape_text(&c.key),
            shown(c.confirmed.as_deref()),
            shown(c.now.as_deref()),
            match (c.command, trusting) {
                (false, _) => "",
                (true, true) => "  (a command: it runs from now on)",
                (true, false) => "  (a command: it does not run until you confirm the file)",
            }
        ));
    }
    if let Some(u) = &v.untrusted {
        text.push_str(&format!(
            "Left out until you confirm it: {}.\n  help: {}\n",
            crate::ui::escape_text(&u.named()),
            crate::ui::escape_text(&u.help())
        ));
    } else if !v.confirmed {
        text.push_str(&format!(
            "No command of it changed; `{}` confirms it.\n",
            git_delegate::ops::trust::confirm_command(&v.home)
        ));
    }
    text
}
