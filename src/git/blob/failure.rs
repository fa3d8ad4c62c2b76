//! Why a file could not be stored as a blob or written out, named for its
//! real cause: a full or read-only object store, a filter driver that
//! failed (its name, command and exit status) or could not start.
//!
//! Owns: reading those causes off gix's errors and the repository's
//! `filter.<driver>` settings, as a `BlobError`.
//! Never: retries, or writes anything; words a help line (`ops::explain`).

use gix::bstr::BStr;

use super::BlobError;

/// The error for a working-tree file that could not be stored as a blob
/// (`root` is the working tree, `rela_path` the file), named for its real
/// cause: a full or read-only object store (written while hashing), a
/// filter driver that failed, or else the file itself.
pub fn store_failure(
    repo: &gix::Repository,
    root: &std::path::Path,
    rela_path: &BStr,
    err: gix::Error,
) -> BlobError {
    let shown = crate::sys::paths::quote(rela_path);
    if let Some(f) = driver_failure(&err) {
        return filter_failed(
            repo,
            "clean",
            filter_driver(repo, rela_path),
            &format!("{shown} in {}", root.display()),
            &f,
        );
    }
    if let Some(e) = process_start_failed(repo, &err, &format!("{shown} in {}", root.display())) {
        return e;
    }
    let store = repo.objects.store_ref().path();
    let objects = std::fs::canonicalize(store).unwrap_or_else(|_| store.to_path_buf());
    if let Some(cause) = crate::error::io_cause(&err).and_then(crate::error::FsCause::of) {
        // Reading the file itself was denied: say so, not the store.
        let written = !(cause == crate::error::FsCause::Denied
            && std::fs::File::open(root.join(crate::sys::paths::to_os(rela_path))).is_err());
        if written {
            return BlobError::Store {
                path: rela_path.to_owned(),
                root: root.to_path_buf(),
                objects,
                cause,
                source: err,
            };
        }
    }
    BlobError::Unreadable {
        path: rela_path.to_owned(),
        root: root.to_path_buf(),
        source: err,
    }
}

/// The words that start a write-back failure of a smudge filter driver.
pub const FILTER_FAILED: &str = "a smudge filter driver failed";
/// The same for a clean filter driver (hashing what is on disk).
pub const FILTER_FAILED_CLEAN: &str = "a clean filter driver failed";

/// The exit status text of a filter driver process that failed, when that
/// is what `err` reports.
pub fn driver_failure(err: &(dyn std::error::Error + 'static)) -> Option<String> {
    let look = |e: &(dyn std::error::Error + 'static)| -> Option<String> {
        let m = e.downcast_ref::<gix::error::Message>()?;
        m.message.starts_with("Driver process").then(|| {
            m.values
                .get("exit_status")
                .map(|v| v.to_string().trim_matches('"').to_string())
                .unwrap_or_else(|| "failed".into())
        })
    };
    let inner_of = |e: &'_ (dyn std::error::Error + 'static)| {
        e.downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|i| look(i))
    };
    let mut cur = Some(err);
    while let Some(e) = cur {
        if let Some(f) = look(e).or_else(|| inner_of(e)) {
            return Some(f);
        }
        if let Some(g) = e.downcast_ref::<gix::Error>() {
            if let Some(f) = g
                .iter_errors()
                .find_map(|e| look(e).or_else(|| inner_of(e)))
            {
                return Some(f);
            }
        }
        cur = e.source();
    }
    None
}

/// The error for a `required` filter driver (`None`: unknown) whose
/// `direction` (`clean` or `smudge`) process failed on `place` with `status`.
fn filter_failed(
    repo: &gix::Repository,
    direction: &'static str,
    driver: Option<String>,
    place: &str,
    status: &str,
) -> BlobError {
    let (place, status) = (place.to_string(), status.to_string());
    let Some(driver) = driver else {
        return BlobError::FilterFailed {
            direction,
            place,
            status,
        };
    };
    let command = repo
        .config_snapshot()
        .string(format!("filter.{driver}.{direction}").as_str())
        .map(|c| c.to_string())
        .unwrap_or_default();
    BlobError::DriverFailed {
        direction,
        driver,
        command,
        place,
        status,
    }
}

/// The error for a checkout into `root` that a filter driver failed, when
/// that is what `err` reports. gix does not say which file: the driver is
/// found by its command, and the first file of the index it applies to is
/// named as an example.
pub fn checkout_filter(
    repo: &gix::Repository,
    index: &gix::index::State,
    root: &std::path::Path,
    err: &(dyn std::error::Error + 'static),
) -> Option<BlobError> {
    if let Some(e) = process_start_failed(repo, err, &root.display().to_string()) {
        return Some(e);
    }
    let Some(status) = driver_failure(err) else {
        return process_filter_failed(repo, index, root, err);
    };
    let driver = failed_driver(repo, err, "smudge");
    let example = driver
        .as_deref()
        .and_then(|d| first_file_with_filter(repo, index, d));
    let place = match &example {
        Some(p) => format!(
            "{} in {}",
            crate::sys::paths::quote(p.as_ref()),
            root.display()
        ),
        None => format!("a file in {}", root.display()),
    };
    Some(filter_failed(repo, "smudge", driver, &place, &status))
}

/// The error for a long-running filter process (`filter.<driver>.process`)
/// that could not be started or did not answer the handshake, when that is
/// what `err` reports: most often its program is not installed (a
/// repository using Git LFS on a machine without git-lfs, where `git add`
/// and `git checkout` fail too). `place` is what was being filtered.
pub fn process_start_failed(
    repo: &gix::Repository,
    err: &(dyn std::error::Error + 'static),
    place: &str,
) -> Option<BlobError> {
    let (driver, command) = driver_in(repo, err, "Process handshake with command", "process")?;
    let program = command
        .split_whitespace()
        .next()
        .unwrap_or(&command)
        .to_string();
    Some(BlobError::ProcessStart {
        driver,
        command,
        program,
        place: place.to_string(),
    })
}

/// The first `gix::error::Message` in `err` (its causes, and what a
/// `gix::Error` or an `io::Error` carries) whose text starts with `start`.
fn message_starting(err: &(dyn std::error::Error + 'static), start: &str) -> Option<String> {
    let is = |e: &(dyn std::error::Error + 'static)| {
        e.downcast_ref::<gix::error::Message>()
            .filter(|m| m.message.starts_with(start))
            .map(|m| m.message.to_string())
    };
    let mut cur = Some(err);
    while let Some(e) = cur {
        if let Some(t) = is(e) {
            return Some(t);
        }
        if let Some(g) = e.downcast_ref::<gix::Error>() {
            if let Some(t) = g.iter_errors().find_map(is) {
                return Some(t);
            }
        }
        if let Some(inner) = e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            if let Some(t) = message_starting(inner, start) {
                return Some(t);
            }
        }
        cur = e.source();
    }
    None
}

/// A long-running filter process (`filter.<driver>.process`, such as Git
/// LFS's `git-lfs filter-process`) that gave up during a checkout: gix
/// reports only the protocol it broke off (its output ended early), so the
/// driver is the process driver that applies to a file of the index (the
/// first such file named as an example), and the driver's own messages on
/// stderr say why.
fn process_filter_failed(
    repo: &gix::Repository,
    index: &gix::index::State,
    root: &std::path::Path,
    err: &(dyn std::error::Error + 'static),
) -> Option<BlobError> {
    if !ended_early(err) {
        return None;
    }
    let (driver, command, example) =
        filter_drivers(repo, "process")
            .into_iter()
            .find_map(|(name, command)| {
                let example = first_file_with_filter(repo, index, &name)?;
                Some((name, command, example))
            })?;
    Some(BlobError::ProcessStopped {
        driver,
        command,
        root: root.to_path_buf(),
        example: crate::sys::paths::quote(example.as_ref()),
        said: err.to_string(),
    })
}

/// Whether `err` is (or holds) an I/O error of output that ended early or
/// a pipe that closed: how a filter process that gave up shows.
fn ended_early(err: &(dyn std::error::Error + 'static)) -> bool {
    use std::io::ErrorKind::{BrokenPipe, UnexpectedEof};
    let one = |e: &(dyn std::error::Error + 'static)| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| matches!(io.kind(), UnexpectedEof | BrokenPipe))
            // std's text for `read_exact` ending early, as gix passes it on.
            || e.to_string() == "failed to fill whole buffer"
    };
    let mut cur = Some(err);
    while let Some(e) = cur {
        if one(e) {
            return true;
        }
        if let Some(g) = e.downcast_ref::<gix::Error>() {
            if g.iter_errors().any(one) {
                return true;
            }
        }
        cur = e.source();
    }
    false
}

/// The name of the filter driver (`filter.<name>`) whose `direction`
/// (`clean` or `smudge`) command failed in `err`: gix names the command it
/// ran, not the driver, so it is found by its command.
pub fn failed_driver(
    repo: &gix::Repository,
    err: &(dyn std::error::Error + 'static),
    direction: &str,
) -> Option<String> {
    driver_in(repo, err, "Driver process", direction).map(|(name, _)| name)
}

/// The filter driver setting `key` whose command the message in `err` starting with `start` names.
fn driver_in(
    repo: &gix::Repository,
    err: &(dyn std::error::Error + 'static),
    start: &str,
    key: &str,
) -> Option<(String, String)> {
    let text = message_starting(err, start)?;
    filter_drivers(repo, key)
        .into_iter()
        .find(|(_, command)| text.contains(&format!("{command:?}")))
}

/// The filter drivers of `repo`'s config that set `key` (`clean`, `smudge`
/// or `process`), in config order: (`filter.<name>`'s name, the command).
fn filter_drivers(repo: &gix::Repository, key: &str) -> Vec<(String, String)> {
    let config = repo.config_snapshot();
    config
        .sections_by_name("filter")
        .into_iter()
        .flatten()
        .filter_map(|s| {
            let name = s.header().subsection_name()?.to_string();
            let command = s.value(key)?.to_string();
            Some((name, command))
        })
        .collect()
}

/// The first file of `index` whose `filter` attribute is `driver`
/// (attributes from the index's own `.gitattributes` files).
fn first_file_with_filter(
    repo: &gix::Repository,
    index: &gix::index::State,
    driver: &str,
) -> Option<gix::bstr::BString> {
    let mut stack = repo
        .attributes_only(
            index,
            gix::worktree::stack::state::attributes::Source::IdMapping,
        )
        .ok()?;
    let mut out = stack.selected_attribute_matches(["filter"]);
    for entry in index.entries() {
        let path = entry.path(index);
        let Ok(platform) = stack.at_entry(path, None) else {
            continue;
        };
        platform.matching_attributes(&mut out);
        let hit = out.iter_selected().any(|m| {
            m.assignment
                .state
                .as_bstr()
                .is_some_and(|v| v == driver.as_bytes())
        });
        if hit {
            return Some(path.to_owned());
        }
    }
    None
}

/// The `filter` attribute of `rela_path` in `repo`'s working tree.
fn filter_driver(repo: &gix::Repository, rela_path: &BStr) -> Option<String> {
    let index = repo.index_or_empty().ok()?;
    let mut stack = repo
        .attributes_only(
            &index,
            gix::worktree::stack::state::attributes::Source::WorktreeThenIdMapping,
        )
        .ok()?;
    let mut out = stack.selected_attribute_matches(["filter"]);
    let platform = stack.at_entry(rela_path, None).ok()?;
    platform.matching_attributes(&mut out);
    let name = out
        .iter_selected()
        .find_map(|m| m.assignment.state.as_bstr().map(|v| v.to_string()));
    name
}
