//! The `git-delegate` engine: snapshots of a working tree, task workspaces,
//! proposals, the 3-way integration and the crash-safe write-back, as a
//! library. Its only user is the `git-delegate` binary (`src/main.rs` and
//! `src/commands/`), which parses the command line, calls in here and renders
//! what comes back.
//!
//! Data flows one way: a command calls the engine, the engine works on the
//! repository and returns values (reports or [`error::Error`]s), the command
//! renders them. The engine never prints, never reads the command line, and
//! never exits the process. Each module's first lines say what it owns and
//! what it must never do; the contract they keep (vocabulary, where state
//! lives, each command's steps, the crash-safety protocol) is
//! `docs/design.md`, and the module map is `docs/architecture.md`.

pub mod config;
pub mod error;
pub mod git;
pub mod merge;
pub mod ops;
pub mod record;
pub mod snapshot;
pub mod sys;
pub mod workspace;
pub mod writeback;
