//! A batch between prepare and apply: `status` (design §3.3), `drop`
//! (§3.5), `renew` and leases (§3.6), and `gc` (§3.4).

mod branch;
mod gc;
mod leases;
mod status_drop_renew;
