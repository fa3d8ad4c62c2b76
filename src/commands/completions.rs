//! `git delegate completions`.

use crate::cli::CompletionsArgs;
use crate::error::{Error, Result};
use crate::ui::Ui;

pub fn run(_ui: &Ui, _args: CompletionsArgs) -> Result<i32> {
    Err(Error::usage(
        "delegate::not_implemented",
        "`git delegate completions` is not implemented yet",
        "see the README for what is available",
    ))
}
