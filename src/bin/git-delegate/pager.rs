//! The pager for long output on a terminal (`diff`, design §3.16): the
//! command git would choose (`repo::diff_pager` reads it), run as git runs
//! it (directly, or through `sh -c` when it has shell syntax) with git's
//! `LESS=FRX` and `LV=-c` unless they are set, fed the whole output on its
//! stdin; signals meanwhile are the pager's, this process waits for it.
//!
//! Owns: deciding whether to page (stdout a terminal, no `--no-pager`, no
//! JSON) and the pager process.
//! Never: pages output that goes into a pipe or a file, or decides what is
//! said; a pager that cannot be started falls back to stdout.

use std::io::{IsTerminal, Write};
use std::process::{Command, Stdio};

/// Whether stdout is a terminal, or a pager git started for us
/// (`GIT_PAGER_IN_USE`, as git's `pager_in_use`): what git's colour
/// decision calls a terminal.
pub fn terminal_like() -> bool {
    std::io::stdout().is_terminal()
        || std::env::var("GIT_PAGER_IN_USE")
            .is_ok_and(|v| matches!(v.to_ascii_lowercase().as_str(), "true" | "yes" | "on" | "1"))
}

/// Write `bytes` to stdout, through the pager when stdout is a terminal
/// and `allowed` (not `--no-pager`).
pub fn show(bytes: &[u8], allowed: bool) {
    if !allowed || bytes.is_empty() || !std::io::stdout().is_terminal() {
        return crate::ui::stdout_bytes(bytes);
    }
    let Some(pager) = git_delegate::git::repo::diff_pager() else {
        return crate::ui::stdout_bytes(bytes);
    };
    // As git's `prepare_shell_cmd`: through `sh -c` only when the command
    // has characters a shell would act on, else run directly.
    let mut cmd = if pager.contains(|c: char| "|&;<>()$`\\\"' \t\n*?[#~=%".contains(c)) {
        let mut c = Command::new("sh");
        c.arg("-c").arg(&pager);
        c
    } else {
        Command::new(&pager)
    };
    cmd.stdin(Stdio::piped());
    if std::env::var_os("LESS").is_none() {
        cmd.env("LESS", "FRX");
    }
    if std::env::var_os("LV").is_none() {
        cmd.env("LV", "-c");
    }
    cmd.env("GIT_PAGER_IN_USE", "true");
    // As git: a Ctrl-C (or SIGQUIT, SIGTERM, SIGHUP) while the pager runs is
    // the pager's to act on; this process waits for it instead of leaving
    // it behind on the terminal with the shell's prompt. Caught before the
    // pager starts, so a signal at its very first moment is caught too (a
    // handler, unlike an ignored signal, does not pass on to the pager).
    let _signals = git_delegate::sys::interrupt::catch_signals();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(_) => return crate::ui::stdout_bytes(bytes),
    };
    if let Some(mut stdin) = child.stdin.take() {
        // The pager may quit before reading everything (`q` in less): a
        // closed pipe ends the writing, not the command.
        let _ = stdin.write_all(bytes);
    }
    let _ = child.wait();
}
