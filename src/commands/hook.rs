//! `git delegate hook`.

use crate::cli::HookArgs;
use crate::error::{Error, Result};
use crate::ui::Ui;

pub fn run(_ui: &Ui, _args: HookArgs) -> Result<i32> {
    Err(Error::usage(
        "delegate::not_implemented",
        "`git delegate hook` is not implemented yet",
        "see the README for what is available",
    ))
}
