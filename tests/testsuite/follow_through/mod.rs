//! Interruptions and follow-through (design §3.18 "Follow-through", §7):
//! what the user is left with after a signal, a kill, a lying cache, a
//! commit, a killed verification, a batch taken during `run`, a failed
//! worker, and the messages a newcomer meets next.

mod cache_undo;
mod messages;
mod signals;
mod verify_run;
