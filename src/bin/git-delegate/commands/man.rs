//! `git delegate man [--install [DIR]]` (design §3.8): print the main manual
//! page, or install every page where man finds it.

use crate::cli::ManArgs;
use crate::ui::Ui;
use git_delegate::error::Result;
use git_delegate::ops::mandir;

pub fn run(ui: &Ui, args: ManArgs) -> Result<i32> {
    let Some(dir) = args.install else {
        crate::ui::stdout(&crate::manpage::main());
        return Ok(0);
    };
    let dir = match dir {
        Some(d) => d,
        None => mandir::default_dir()?,
    };
    let pages = crate::manpage::pages();
    mandir::install(&dir, &pages)?;
    ui.say(&format!(
        "Installed {} manual pages into {}\nRead them with `git help delegate` or `man git-delegate-prepare`{}.\n",
        pages.len(),
        dir.display(),
        if mandir::found_by_man(&dir) {
            String::new()
        } else {
            format!(
                " once man searches {} (add it to MANPATH)",
                dir.parent().unwrap_or(&dir).display()
            )
        }
    ));
    Ok(0)
}
