//! What the workers meet: `run` (design §3.13), `diff` and `path` (§3.16),
//! the pre-commit hook (§3.7), workers on other machines (§3.14), and
//! contained workers (`run` and `exec` under Landlock, §3.22).

mod claude_hooks;
mod diff;
mod hook;
mod remote;
mod run;
mod sandbox;
