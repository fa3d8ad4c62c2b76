//! `git delegate path [TASK] [--batch BATCH]` (design §3.16): print a task's
//! working folder, raw, one line (for `cd "$(git delegate path 2)"`).

use std::os::unix::ffi::OsStrExt;

use crate::cli::PathArgs;
use crate::ui::Ui;
use git_delegate::error::{Error, Result};

pub fn run(ui: &Ui, args: PathArgs) -> Result<i32> {
    let source = super::source()?;
    let cwd =
        std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))?;
    let path = git_delegate::ops::look::path(
        &source,
        args.batch.batch.as_deref(),
        args.task.as_deref(),
        &cwd,
    )
    .map_err(|e| {
        let mut words = vec!["path"];
        words.extend(args.task.as_deref());
        super::batch_flag_help(e, &source, &words)
    })?;
    if ui.json {
        ui.doc(crate::render::diff::PathDoc::new(&path));
        return Ok(0);
    }
    let mut out = path.as_os_str().as_bytes().to_vec();
    out.push(b'\n');
    crate::ui::stdout_bytes(&out);
    Ok(0)
}
