//! Adversarial cases: swap (see main.rs).

#[allow(unused_imports)]
use crate::common;
