//! Process quiescing: stopping processes whose cwd is inside a workspace
//! before it is snapshotted (SIGTERM, a short grace, SIGKILL).
//!
//! Owns: finding and signalling such processes through /proc and rustix.
//! Never: signals a process outside the workspace, this process or its parents.
