//! Workers are untrusted (design §3.18): hostile proposals, shared roots,
//! private files, remote refs, the shared git dir, and the smaller holes
//! found the same way, each with the test that closes it.
#[path = "../common/mod.rs"]
mod common;

mod holes;
