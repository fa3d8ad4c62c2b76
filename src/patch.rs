//! Patches: a binary, full-index diff between two trees that
//! `git apply --3way` accepts (the recovery form of a proposal).
//!
//! Owns: rendering a diff of two trees as git patch text.
//! Never: touches the working tree or refs.
