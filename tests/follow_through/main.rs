//! Issue 23's follow-through: what the user meets after an interruption, a
//! killed verification, a batch taken during `run` or a failed worker.
#[path = "../common/mod.rs"]
mod common;

mod verify_run;
