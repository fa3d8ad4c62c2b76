//! The test suite: one test binary (so gix and the crate link once, not once
//! per file), its modules named by area. Every test drives the real
//! `git-delegate` binary (or, in `apply::integrate`, the library) against
//! real repositories made with the git CLI in temporary folders.
//!
//! Where a new test goes, and how the suite is laid out: tests/README.md.
//! Shared support (the hermetic `Env`, fixtures, files, processes, the test
//! filesystems) is in `common`; a helper two files need goes there, not
//! into a copy.

mod common;

mod adversarial;
mod apply;
mod cli;
mod follow_through;
mod lifecycle;
mod prepare;
mod snapshot;
mod sources;
mod untrusted;
mod workers;

/// Every `.rs` file below `tests/` is a module of this binary (reached
/// through `mod NAME;` lines from this file), so none is forgotten: cargo
/// builds a file nobody declares as nothing at all (below a folder) or as a
/// binary of its own (`tests/NAME.rs`), and either way its tests would not
/// run here. Test binaries of their own are listed in `SEPARATE`, each with
/// the reason it cannot share this process (none today).
#[test]
fn every_test_file_is_a_module_of_the_suite() {
    use std::collections::BTreeSet;
    use std::path::{Path, PathBuf};

    /// Files that are test binaries of their own, with why (tests/README.md).
    const SEPARATE: &[(&str, &str)] = &[];

    fn rs_files(dir: &Path, out: &mut BTreeSet<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                rs_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.insert(path);
            }
        }
    }

    /// The files of `file` and of the modules it declares, depth first.
    fn reach(file: &Path, out: &mut BTreeSet<PathBuf>) {
        let text = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("read {}: {e}", file.display()));
        out.insert(file.to_path_buf());
        let name = file.file_name().unwrap();
        // main.rs and mod.rs own their folder; a.rs owns the folder a/.
        let dir = if name == "main.rs" || name == "mod.rs" {
            file.parent().unwrap().to_path_buf()
        } else {
            file.with_extension("")
        };
        for line in text.lines() {
            let line = line.trim_start();
            let line = line
                .strip_prefix("pub(crate) ")
                .or_else(|| line.strip_prefix("pub "))
                .unwrap_or(line);
            let Some(module) = line.strip_prefix("mod ").and_then(|l| l.strip_suffix(';')) else {
                continue;
            };
            let flat = dir.join(format!("{module}.rs"));
            let folder = dir.join(module).join("mod.rs");
            match (flat.is_file(), folder.is_file()) {
                (true, false) => reach(&flat, out),
                (false, true) => reach(&folder, out),
                _ => panic!(
                    "`mod {module};` in {}: want exactly one of {} and {} (no #[path])",
                    file.display(),
                    flat.display(),
                    folder.display()
                ),
            }
        }
    }

    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut all = BTreeSet::new();
    rs_files(&tests, &mut all);
    let mut reached = BTreeSet::new();
    reach(&tests.join("testsuite/main.rs"), &mut reached);
    let mut separate = BTreeSet::new();
    for (file, why) in SEPARATE {
        assert!(!why.is_empty(), "{file}: say why it is a binary of its own");
        let file = tests.join(file);
        assert!(
            file.is_file(),
            "SEPARATE names {}, which is gone",
            file.display()
        );
        separate.insert(file);
    }
    let forgotten: Vec<_> = all
        .iter()
        .filter(|f| !reached.contains(*f) && !separate.contains(*f))
        .map(|f| f.strip_prefix(&tests).unwrap().display().to_string())
        .collect();
    assert!(
        forgotten.is_empty(),
        "test files that are no module of tests/testsuite: {forgotten:?}; add a \
         `mod NAME;` line to the mod.rs of their area (tests/README.md), or, for a \
         test that needs a process of its own, list it in SEPARATE with the reason"
    );
}
