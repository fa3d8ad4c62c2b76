//! Path helpers for `/`-separated relative paths, the internal failure
//! type, and the test-only fault injection (see the module header).

use gix::bstr::{BStr, BString, ByteSlice};

pub(super) use super::failure::Cause;
#[cfg(test)]
use super::tests;

/// `(parent, name)` of a `/`-separated relative path (`parent` empty at the root).
pub(super) fn split(path: &BStr) -> (&BStr, &BStr) {
    match path.rfind_byte(b'/') {
        Some(i) => (path[..i].as_bstr(), path[i + 1..].as_bstr()),
        None => (b"".as_bstr(), path),
    }
}

pub(super) fn join(dir: &BStr, name: &BStr) -> BString {
    let mut out = BString::from(dir);
    if !out.is_empty() {
        out.push(b'/');
    }
    out.extend_from_slice(name);
    out
}

/// The folders above `path`, shallowest first (`a`, `a/b` for `a/b/c`).
pub(super) fn parents(path: &BStr) -> impl Iterator<Item = &BStr> {
    path.iter()
        .enumerate()
        .filter(|(_, &b)| b == b'/')
        .map(move |(i, _)| path[..i].as_bstr())
}

/// The folders above `dir` and `dir` itself (nothing for the root).
pub(super) fn parents_and_self(dir: &BStr) -> impl Iterator<Item = &BStr> {
    parents(dir).chain((!dir.is_empty()).then_some(dir))
}

pub(super) fn depth(path: &BStr) -> usize {
    path.iter().filter(|&&b| b == b'/').count()
}

/// An internal failure with its message and its cause; turned into a
/// `WriteError` where the write-back gives up. The cause is carried as data, never read back out
/// of the message (a path's name may hold any text).
#[derive(Debug)]
pub(super) struct Fail(pub(super) String, pub(super) Option<Cause>);

impl Fail {
    /// A failure of no particular cause (`write_failed`).
    pub(super) fn msg(message: impl Into<String>) -> Fail {
        Fail(message.into(), None)
    }

    /// A failure because of `err`: an OS error of a known cause anywhere
    /// in its chain of causes decides the code.
    pub(super) fn because(
        message: impl Into<String>,
        err: &(dyn std::error::Error + 'static),
    ) -> Fail {
        let cause = crate::error::io_cause(err)
            .and_then(crate::error::FsCause::of)
            .map(Cause::Fs);
        Fail(message.into(), cause)
    }

    /// This failure, met writing below `root`: a full disk whose inodes
    /// ran out is named so (design §3.18 "Leftovers"), decided now, before
    /// a rollback gives inodes back.
    pub(super) fn at(self, root: &std::path::Path) -> Fail {
        use crate::error::FsCause;
        match self.1 {
            Some(Cause::Fs(FsCause::Full)) if FsCause::Full.at(root) == FsCause::NoInodes => Fail(
                format!("{}: {}", self.0, FsCause::inodes_text(root)),
                Some(Cause::Fs(FsCause::NoInodes)),
            ),
            _ => self,
        }
    }

    /// Stop here if a signal arrived (design §7 "Signals"): the write-back
    /// is rolled back before the command exits.
    pub(super) fn if_interrupted() -> Result<(), Fail> {
        if crate::sys::interrupt::interrupted() {
            return Err(Fail(
                "interrupted by a signal".into(),
                Some(Cause::Interrupted),
            ));
        }
        Ok(())
    }

    /// A failing filter driver (`driver`: its name, when known).
    pub(super) fn filter(message: impl Into<String>, driver: Option<String>) -> Fail {
        Fail(message.into(), Some(Cause::Filter(driver)))
    }

    pub(super) fn io(op: &str, path: &BStr, e: impl Into<std::io::Error>) -> Fail {
        let e: std::io::Error = e.into();
        let path = if path.is_empty() {
            "the working tree".to_string()
        } else {
            crate::sys::paths::quote(path)
        };
        Fail(
            format!("cannot {op} {path}: {}", crate::error::describe(&e)),
            crate::error::FsCause::of(&e).map(Cause::Fs),
        )
    }
}

// ---------------------------------------------------------------------------
// Test-only fault injection (see the module header)

pub(super) struct Faults {
    pub(super) point: Option<String>,
    /// Test-only pause points (`GIT_DELEGATE_TEST_PAUSE`) at the same
    /// moments, named `writeback-<point>` (`writeback-after-rename:N`):
    /// there the process waits for a signal (`interrupt::pause`). Read once.
    pub(super) pauses: bool,
    pub(super) recovery_steps: std::cell::Cell<usize>,
    /// Unit tests only: called after every rename (a user acting between them).
    #[cfg(test)]
    pub(super) after_each_rename: Option<Box<dyn Fn(usize)>>,
}

impl Faults {
    pub(super) fn from_env() -> Faults {
        Faults {
            point: std::env::var("GIT_DELEGATE_FAULT")
                .ok()
                .filter(|p| !p.is_empty()),
            pauses: std::env::var("GIT_DELEGATE_TEST_PAUSE")
                .is_ok_and(|p| p.contains("writeback-")),
            recovery_steps: std::cell::Cell::new(0),
            #[cfg(test)]
            after_each_rename: None,
        }
    }

    #[cfg(test)]
    fn die() -> ! {
        std::panic::panic_any(tests::Crash)
    }

    #[cfg(not(test))]
    fn die() -> ! {
        let _ =
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
        std::process::abort()
    }

    fn numbered(&self, name: &str) -> Option<usize> {
        self.point
            .as_deref()?
            .strip_prefix(name)?
            .strip_prefix(':')?
            .parse()
            .ok()
    }

    pub(super) fn hit(&self, name: &str) {
        if self.point.as_deref() == Some(name) {
            Self::die();
        }
        if self.pauses {
            crate::sys::interrupt::pause(&format!("writeback-{name}"));
        }
    }

    pub(super) fn after_rename(&self, n: usize) {
        #[cfg(test)]
        if let Some(hook) = &self.after_each_rename {
            hook(n);
        }
        if self.numbered("after-rename") == Some(n) {
            Self::die();
        }
        if self.pauses {
            crate::sys::interrupt::pause(&format!("writeback-after-rename:{n}"));
        }
    }

    pub(super) fn fail_rename(&self, n: usize) -> std::io::Result<()> {
        if self.numbered("fail-rename") == Some(n) {
            return Err(std::io::Error::other(
                "injected failure (GIT_DELEGATE_FAULT)",
            ));
        }
        Ok(())
    }

    pub(super) fn recovery_step(&self) {
        let n = self.recovery_steps.get() + 1;
        self.recovery_steps.set(n);
        if self.numbered("recover-abort") == Some(n) {
            Self::die();
        }
    }
}
