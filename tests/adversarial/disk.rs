//! Adversarial cases: disk (see main.rs).

#[allow(unused_imports)]
use crate::common;
