//! Integration (SPEC §3.2 steps 2-3): 3-way merges of trees in memory, the
//! proposals in task order onto the baseline, then the result onto the
//! source as it is now.
//!
//! Owns: deciding which tasks merge cleanly and the final tree `F`.
//! Never: writes the working tree, refs or the index.
