//! Test-only fault injection and pause points of the write-back (see
//! `writeback`'s header, "Fault injection"): `GIT_DELEGATE_FAULT` names the
//! point where the process kills itself (or the rename that fails),
//! `GIT_DELEGATE_TEST_PAUSE` the points where it waits for a signal.
//!
//! Owns: reading those variables once per write-back, and acting on them.
//! Never: set by anything but the crash tests; changes what a write-back
//! does when neither variable is set.

#[cfg(test)]
use super::tests;

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
