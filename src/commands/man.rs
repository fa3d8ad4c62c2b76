//! `git delegate man`.

use crate::cli::ManArgs;
use crate::error::{Error, Result};
use crate::ui::Ui;

pub fn run(_ui: &Ui, _args: ManArgs) -> Result<i32> {
    Err(Error::usage(
        "delegate::not_implemented",
        "`git delegate man` is not implemented yet",
        "see the README for what is available",
    ))
}
