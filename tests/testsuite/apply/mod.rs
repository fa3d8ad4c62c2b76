//! `git delegate apply` (design §3.2) and what lands with it: the
//! integration rules, the write-back and its crash safety (§7), verified
//! integration (§3.10), kept proposals, undo (§3.11), refresh (§3.12),
//! work hidden in shared refs (§3.16), output and performance (§8).

mod crash;
mod end_to_end;
mod integrate;
mod kept;
mod output;
mod patch;
mod perf;
mod refresh;
mod side_effects;
mod touched;
mod undo;
mod verify;
mod writeback;
