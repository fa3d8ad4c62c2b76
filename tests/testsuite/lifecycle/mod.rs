//! A batch between prepare and apply: `status` (design §3.3), `drop`
//! (§3.5), `renew` and leases (§3.6), `gc` (§3.4), and the workspace pool
//! (§3.20).

mod branch;
mod gc;
mod gc_crash_states;
mod leases;
mod pool;
mod status_drop_renew;
