//! `git delegate apply`.

use crate::cli::ApplyArgs;
use crate::error::{Error, Result};
use crate::ui::Ui;

pub fn run(_ui: &Ui, _args: ApplyArgs) -> Result<i32> {
    Err(Error::usage(
        "delegate::not_implemented",
        "`git delegate apply` is not implemented yet",
        "see the README for what is available",
    ))
}
