//! Adversarial cases: env (see main.rs).

#[allow(unused_imports)]
use crate::common;
