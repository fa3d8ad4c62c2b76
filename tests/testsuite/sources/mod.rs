//! Repositories as they are (design §3.15): discovery and object formats,
//! Git LFS, sparse checkouts, submodules.

mod discovery;
mod lfs;
mod sparse;
mod submodules;
mod system_config;
