//! Issue 23's follow-through: what the user is left with after interruptions (signals during a write-back, kills past its commit point).
#[path = "../common/mod.rs"]
mod common;

mod signals;
