//! Workers are untrusted (design §3.18): what a worker's proposal can and cannot reach in the source.
#[path = "../common/mod.rs"]
mod common;

mod modes;
