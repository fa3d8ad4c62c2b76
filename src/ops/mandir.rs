//! Where manual pages go and writing them there (`git delegate man
//! --install`, design §3.8); the pages themselves are made by the binary from
//! its command-line definitions.
//!
//! Owns: the default folder (beside the executable), whether man searches a
//! folder (`MANPATH`, `PATH`), writing pages atomically.
//! Never: writes outside the folder it is given; leaves a temp file behind
//! when a write fails.

use std::path::{Path, PathBuf};

use crate::error::{Code, Error, Result};

/// `<directory of the executable>/../share/man/man1`: man-db maps every PATH
/// entry `X/bin` to `X/share/man`, so pages there are found without MANPATH.
pub fn default_dir() -> Result<PathBuf> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::io("cannot find the path of the git-delegate executable", e))?;
    let prefix = exe.parent().and_then(Path::parent).ok_or_else(|| {
        Error::usage(
            Code::NoManDir,
            format!("{} has no parent folder to put share/man in", exe.display()),
            "pass the folder: `git delegate man --install DIR`",
        )
    })?;
    Ok(prefix.join("share/man/man1"))
}

/// Write every page through a temp file and a rename, so that a reader never
/// sees half a page.
pub fn install(dir: &Path, pages: &[(String, String)]) -> Result<()> {
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
pub fn found_by_man(dir: &Path) -> bool {
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
