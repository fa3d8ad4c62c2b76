//! `git delegate hooks`.

use crate::cli::HooksArgs;
use crate::error::{Error, Result};
use crate::ui::Ui;

pub fn run(_ui: &Ui, _args: HooksArgs) -> Result<i32> {
    Err(Error::usage(
        "delegate::not_implemented",
        "`git delegate hooks` is not implemented yet",
        "see the README for what is available",
    ))
}
