//! What a transaction (`prepare::run`, `apply::run`) tells its caller while
//! it works: the long steps it is in (a command shows them as a spinner)
//! and notices the user should see at once, even if the transaction then
//! fails (write-backs recovered under the lock, a nested repository left
//! out of a snapshot, an undo that could not remove everything).
//!
//! Owns: the `Observer` trait and the `Notice` values.
//! Never: prints or words anything; the command's observer does that.

use gix::bstr::BString;

use crate::error::Error;
use crate::writeback::Recovery;

/// Something the user is told while a transaction works.
#[derive(Debug)]
pub enum Notice {
    /// The lock was taken and interrupted write-backs were recovered
    /// (design §7); may be empty.
    Recovered(Recovery),
    /// A folder in the source is a git repository of its own (not a
    /// submodule): it is not part of the baseline.
    NestedRepository(BString),
    /// A failed prepare could not remove all of its unfinished batch
    /// (`short` id); `gc` removes the rest. The prepare's own error follows.
    UndoIncomplete { short: String, error: Error },
    /// Workers are less contained than asked for (design §3.22: no
    /// Landlock, or no network rules): said once per command, as worded.
    Sandbox(String),
    /// A key of `delegate.toml` the user has not confirmed was left out,
    /// the confirmed value holding in its place (design §3.18): said once
    /// per command, as worded.
    LeftOut(String),
}

/// The caller's side of a transaction.
pub trait Observer {
    /// A step that may take a while begins; it ends when the returned
    /// guard is dropped.
    fn step(&self, label: &str) -> Box<dyn std::any::Any>;
    /// Tell the user something now.
    fn notice(&self, notice: Notice);
    /// A line the verification command of run `n` wrote (design §3.10:
    /// shown live on a terminal); by default not shown.
    fn output(&self, _n: usize, _line: &gix::bstr::BStr) {}
}

/// An observer that shows nothing.
pub struct Silent;

impl Observer for Silent {
    fn step(&self, _label: &str) -> Box<dyn std::any::Any> {
        Box::new(())
    }
    fn notice(&self, _notice: Notice) {}
}
