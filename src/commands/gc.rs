//! `git delegate gc`.

use crate::cli::GcArgs;
use crate::error::{Error, Result};
use crate::ui::Ui;

pub fn run(_ui: &Ui, _args: GcArgs) -> Result<i32> {
    Err(Error::usage(
        "delegate::not_implemented",
        "`git delegate gc` is not implemented yet",
        "see the README for what is available",
    ))
}
