//! Workers are untrusted (design §3.18): what a hostile or confused worker
//! produces reaches the user's repository only through the checks.
#[path = "../common/mod.rs"]
mod common;

mod paths;
