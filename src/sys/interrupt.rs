//! Interruption of a command by a signal (SIGINT, SIGTERM, SIGHUP): the
//! handler that counts them, the question "has one arrived?", the error a
//! command returns once it has undone its work, and the test-only pause
//! points (`GIT_DELEGATE_TEST_PAUSE`) where a test signals or kills a
//! prepare (or a write-back) at a known point. A leaf: every module that
//! can be interrupted (`prepare`, `workspace`, `carry`, `lock`,
//! `writeback`) asks here.
//!
//! Owns: the signal counter and handler, the pause points, the
//! `delegate::interrupted` error.
//! Never: undoes anything itself (the interrupted command does), or pauses
//! unless the test-only environment variable asks for it.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Termination signals received since the handler was installed.
static SIGNALS: AtomicUsize = AtomicUsize::new(0);

/// Catch SIGINT, SIGTERM, SIGHUP (and SIGQUIT) for the rest of a prepare
/// (or, taken by `writeback::write_then`, of a command that writes back):
/// each one only sets gix's interrupt flag, however many arrive, so the
/// undo that follows the first is never cut short by the second (a
/// terminal sends Ctrl-C to git and git-delegate together, and git passes
/// its own on to its child: two signals for one key press). Only SIGKILL
/// ends a prepare half-way, and then the marker says so.
pub fn catch_signals() -> Option<gix::interrupt::Deregister> {
    // SAFETY: the callback only increments an atomic: no allocation, no
    // lock, nothing that is not async-signal-safe.
    unsafe {
        gix::interrupt::init_handler(usize::MAX, || {
            SIGNALS.fetch_add(1, Ordering::SeqCst);
        })
    }
    .ok()
}

/// Has a termination signal arrived (or gix's interrupt been triggered)?
pub fn interrupted() -> bool {
    gix::interrupt::is_triggered()
}

/// Test-only: when `GIT_DELEGATE_TEST_PAUSE` (a comma-separated list) names
/// `point`, append `point` and a newline to the file `GIT_DELEGATE_TEST_PAUSED`
/// names and wait there until a signal arrives or that file is removed (at
/// most two minutes), so a test can signal or kill a prepare at a known
/// point, or change something there and let the command go on. Never for
/// users.
pub fn pause(point: &str) {
    let Ok(points) = std::env::var("GIT_DELEGATE_TEST_PAUSE") else {
        return;
    };
    if !points.split(',').any(|p| p == point) {
        return;
    }
    // Once per point and process: threads that arrive later go on.
    static PAUSED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    match PAUSED.lock() {
        Ok(mut seen) if !seen.iter().any(|p| p == point) => seen.push(point.to_string()),
        _ => return,
    }
    let seen = SIGNALS.load(Ordering::SeqCst);
    let was_interrupted = interrupted();
    let file = std::env::var_os("GIT_DELEGATE_TEST_PAUSED").map(std::path::PathBuf::from);
    if let Some(file) = &file {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(file)
        {
            let _ = f.write_all(format!("{point}\n").as_bytes());
        }
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while SIGNALS.load(Ordering::SeqCst) == seen
        && (was_interrupted || !interrupted())
        && file.as_ref().is_none_or(|f| f.symlink_metadata().is_ok())
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}
