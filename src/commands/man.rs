//! `git delegate man [--install [DIR]]` (SPEC §3.8): print the main manual
//! page, or install every page where man finds it.

use std::path::{Path, PathBuf};

use crate::cli::ManArgs;
use crate::error::{Error, Result};
use crate::ui::Ui;

pub fn run(ui: &Ui, args: ManArgs) -> Result<i32> {
    let Some(dir) = args.install else {
        crate::ui::stdout(&crate::manpage::main());
        return Ok(0);
    };
    let dir = match dir {
        Some(d) => d,
        None => default_dir()?,
    };
    let pages = crate::manpage::pages();
    install(&dir, &pages)?;
    ui.say(&format!(
        "Installed {} manual pages into {}\nRead them with `git help delegate` or `man git-delegate-prepare`{}.\n",
        pages.len(),
        dir.display(),
        if found_by_man(&dir) {
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

/// `<directory of the executable>/../share/man/man1`: man-db maps every PATH
/// entry `X/bin` to `X/share/man`, so pages there are found without MANPATH.
fn default_dir() -> Result<PathBuf> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::io("cannot find the path of the git-delegate executable", e))?;
    let prefix = exe.parent().and_then(Path::parent).ok_or_else(|| {
        Error::usage(
            "delegate::no_man_dir",
            format!("{} has no parent folder to put share/man in", exe.display()),
            "pass the folder: `git delegate man --install DIR`",
        )
    })?;
    Ok(prefix.join("share/man/man1"))
}

/// Write every page through a temp file and a rename, so that a reader never
/// sees half a page.
fn install(dir: &Path, pages: &[(String, String)]) -> Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
    for (name, text) in pages {
        let path = dir.join(name);
        let tmp = dir.join(format!(".{name}.tmp{}", std::process::id()));
        let written = std::fs::write(&tmp, text).and_then(|_| std::fs::rename(&tmp, &path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(Error::io(format!("cannot write {}", path.display()), e));
        }
    }
    Ok(())
}

/// Whether `dir` (a `.../man1`) is where man looks: under a MANPATH entry, or
/// the `share/man` beside a PATH entry's `bin`.
fn found_by_man(dir: &Path) -> bool {
    let Some(man_root) = dir.parent() else {
        return false;
    };
    let same = |p: &Path| {
        std::fs::canonicalize(p).ok() == std::fs::canonicalize(man_root).ok() && man_root.exists()
    };
    if let Some(mp) = std::env::var_os("MANPATH") {
        if std::env::split_paths(&mp).any(|p| same(&p)) {
            return true;
        }
    }
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|bin| {
            bin.parent()
                .is_some_and(|prefix| same(&prefix.join("share/man")) || same(&prefix.join("man")))
        })
    })
}
