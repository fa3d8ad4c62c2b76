//! Progress on stderr for long steps: a one-line spinner with the step's
//! label and the elapsed time, drawn by a thread once the step has taken
//! longer than a delay (500 ms; `GIT_DELEGATE_PROGRESS_DELAY` in
//! milliseconds overrides it), and erased when the guard is dropped.
//! Hand-written rather than `indicatif` (not in the dependency tree: it
//! would add `console` and its dependencies to every build), because what
//! it does is ours, not a bar's: nothing for steps shorter than the delay,
//! and the line erased under the stderr lock before any other text
//! (`erase_for_text`); one spinner and one label need no templates.
//!
//! Owns: the progress line and its thread.
//! Never: decides whether progress may be shown (`Ui::progress` does: only
//! when stderr is a terminal and no JSON document is being produced), or
//! writes to stdout.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const DEFAULT_DELAY: Duration = Duration::from_millis(500);
const TICK: Duration = Duration::from_millis(100);
const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// A running progress line; dropping it stops the thread and erases the line.
/// A disabled guard does nothing.
#[must_use = "progress is erased when the guard is dropped"]
pub struct Progress {
    inner: Option<Inner>,
}

struct Inner {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

struct State {
    label: String,
    done: bool,
}

/// Whether a progress line is on the terminal now (other stderr text erases it first).
static DRAWN: AtomicBool = AtomicBool::new(false);

/// Erase a progress line before other text goes to stderr (the caller holds
/// the stderr lock); the line comes back at the next tick.
pub fn erase_for_text(err: &mut impl Write) {
    if DRAWN.swap(false, Ordering::SeqCst) {
        let _ = err.write_all(b"\r\x1b[2K");
    }
}

/// The delay before progress appears.
fn delay() -> Duration {
    std::env::var("GIT_DELEGATE_PROGRESS_DELAY")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_millis)
        .unwrap_or(DEFAULT_DELAY)
}

impl Progress {
    /// A guard that shows nothing.
    pub fn disabled() -> Progress {
        Progress { inner: None }
    }

    /// Start the progress thread for `label`.
    pub fn start(label: &str) -> Progress {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                label: label.to_string(),
                done: false,
            }),
            wake: Condvar::new(),
        });
        let started = Instant::now();
        let delay = delay();
        let for_thread = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || draw_loop(&for_thread, started, delay))
            .ok();
        Progress {
            inner: Some(Inner { shared, thread }),
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(inner) = &mut self.inner {
            if let Ok(mut s) = inner.shared.state.lock() {
                s.done = true;
            }
            inner.shared.wake.notify_all();
            if let Some(t) = inner.thread.take() {
                let _ = t.join();
            }
        }
    }
}

fn draw_loop(shared: &Shared, started: Instant, delay: Duration) {
    let Ok(mut state) = shared.state.lock() else {
        return;
    };
    // Wait out the delay: a step that ends before it shows nothing.
    while !state.done {
        let left = delay.saturating_sub(started.elapsed());
        if left.is_zero() {
            break;
        }
        state = match shared.wake.wait_timeout(state, left) {
            Ok((s, _)) => s,
            Err(_) => return,
        };
    }
    if state.done && !delay.is_zero() {
        return;
    }
    // From here on the line is drawn at least once, and erased at the end.
    let mut frame = 0usize;
    loop {
        let line = format!(
            "\r\x1b[2K{} {} {:.1}s",
            FRAMES[frame % FRAMES.len()],
            state.label,
            started.elapsed().as_secs_f64()
        );
        write_stderr(&line, true);
        frame += 1;
        if state.done {
            break;
        }
        state = match shared.wake.wait_timeout(state, TICK) {
            Ok((s, _)) => s,
            Err(_) => break,
        };
        if state.done {
            break;
        }
    }
    write_stderr("\r\x1b[2K", false);
}

/// Write the line (or its erasure) and record whether it is on screen, both
/// under the stderr lock so that other text sees a consistent state.
fn write_stderr(text: &str, drawn: bool) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    let _ = err.flush();
    DRAWN.store(drawn, Ordering::SeqCst);
}
