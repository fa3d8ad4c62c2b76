//! The `git-delegate` engine: snapshots of a working tree, task workspaces,
//! proposals, the 3-way integration and the crash-safe write-back, as a
//! library. Its only user is the `git-delegate` binary
//! (`src/bin/git-delegate/`: `main.rs`, `cli/`, `commands/`, ...), which
//! parses the command line, calls in here by the crate's name
//! (`git_delegate::ops::apply::run`) and renders what comes back.
//!
//! Data flows one way: a command calls the engine, the engine works on the
//! repository and returns values (reports or [`error::Error`]s), the command
//! renders them. The engine never prints, never reads the command line, and
//! never exits the process. Each module's first lines say what it owns and
//! what it must never do; the contract they keep (vocabulary, where state
//! lives, each command's steps, the crash-safety protocol) is
//! `docs/design.md`, and the map of the layers below is
//! `docs/architecture.md`.
//!
//! One folder per layer, declared here lowest first; a module imports its
//! own layer and those below, never one above (`scripts/import-cycles`
//! checks it).

// The floor: the operating system (`sys/`), the error type every layer
// returns, and the source's settings (`delegate.toml`).
pub mod config;
pub mod error;
pub mod sys;

// git's concepts over gix.
pub mod git;

// What the tool keeps under `<common-dir>/delegate`.
pub mod record;

// A working tree as a tree.
pub mod snapshot;

// The crash-safe journal that writes into a working tree.
pub mod writeback;

// Task workspaces of either kind, and what they are made of.
pub mod workspace;

// Proposals and their integration, in memory.
pub mod merge;

// One transaction per command, and the steps they share.
pub mod ops;
