//! The arguments several subcommands share: `--json`, and the batch a
//! command works on, as its first argument or as `--batch`.
//!
//! Owns: their names, help texts and parsing.
//! Never: does any work beyond parsing.

use clap::Args;

#[derive(Debug, Args, Clone, Default)]
pub struct JsonArg {
    /// Print exactly one JSON document (schema git-delegate/v1) on stdout
    ///
    /// Human text, warnings and progress go to stderr; on failure the document is an error
    /// document ({"error": {"code", "message", "help"}}) and the exit status says what happened.
    #[arg(long)]
    pub json: bool,
}

/// The batch a command works on, as its first argument (`apply BATCH`).
/// Commands whose default differs say so with `mut_arg("batch", ..)`.
#[derive(Debug, Args)]
pub struct BatchArg {
    /// The batch: label, id or unique id prefix (default: the only open batch)
    pub batch: Option<String>,
}

/// The batch a command works on, as an option (`diff --batch BATCH`).
/// Commands whose default differs say so with `mut_arg("batch", ..)`.
#[derive(Debug, Args)]
pub struct BatchOpt {
    /// The batch: label, id or unique id prefix (default: the only open batch)
    #[arg(long, value_name = "BATCH")]
    pub batch: Option<String>,
}

/// The long help of a BATCH argument: how a name is looked up.
pub(super) const BATCH_LOOKUP_HELP: &str =
    "The batch: label, id or unique id prefix (default: the only open batch)\n\n\
The full id is tried first, then a label, then any unique prefix of at least 4 characters.";
