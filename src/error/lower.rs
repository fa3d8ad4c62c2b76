//! How a typed error of a module becomes the edge's [`Error`], and how a
//! room passes on what a lower layer failed with (docs/architecture.md
//! "Errors"): the trait [`Explain`] (one impl per typed error, in
//! `ops::explain`, giving its code, exit status and help), the one
//! conversion `impl<E: Explain> From<E> for Error` that `?` uses, and
//! [`Lower`], the one variant every room's error wraps a lower layer's
//! error in (`Lower(#[from] Lower)`, transparent, with
//! [`lower_from!`] for the `From` impls `?` needs).
//!
//! Owns: the trait, the conversion, `Lower` and its downcast.
//! Never: words an error (`ops::explain` does) or decides what failed (the
//! module that raises the error does).

use std::any::Any;
use std::fmt;

use super::Error;

/// A typed error that knows its words at the edge: the code, exit status,
/// help (and JSON details) of the [`Error`] it becomes; its message is
/// its `Display`. Implemented in `ops::explain`, one impl per enum.
pub trait Explain: std::error::Error + Send + Sync + 'static {
    /// The error as the edge shows it.
    fn explain(self) -> Error;
}

/// Every typed error that knows its words becomes an [`Error`] with `?`.
impl<E: Explain> From<E> for Error {
    fn from(e: E) -> Error {
        e.explain()
    }
}

/// What [`Lower`] holds: a typed error, boxed, or an error already worded.
trait Boxed: std::error::Error + Send + Sync + 'static {
    fn explain_boxed(self: Box<Self>) -> Error;
    fn as_any(&self) -> &dyn Any;
}

impl<E: Explain> Boxed for E {
    fn explain_boxed(self: Box<Self>) -> Error {
        (*self).explain()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// An error worded where it happened (a failed creation, worded while
/// what it made still stands: `FsCause::NoInodes` looks at the disk).
impl Boxed for Error {
    fn explain_boxed(self: Box<Self>) -> Error {
        *self
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// What a lower layer failed with, passed on as it is: its message, its
/// causes and its words (code, help) are its own. Every room's error holds
/// it in one variant.
pub struct Lower(Box<dyn Boxed>);

impl Lower {
    /// The error as the edge shows it: the words of the error it holds.
    pub fn explain(self) -> Error {
        self.0.explain_boxed()
    }

    /// The typed error it holds, if it is an `E`.
    pub fn downcast_ref<E: std::error::Error + 'static>(&self) -> Option<&E> {
        self.0.as_any().downcast_ref::<E>()
    }
}

impl<E: Explain> From<E> for Lower {
    fn from(e: E) -> Lower {
        Lower(Box::new(e))
    }
}

/// An error already worded (see the `Boxed` impl for [`Error`]).
impl From<Error> for Lower {
    fn from(e: Error) -> Lower {
        Lower(Box::new(e))
    }
}

impl From<Lower> for Error {
    fn from(e: Lower) -> Error {
        e.explain()
    }
}

impl fmt::Debug for Lower {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

/// Transparent: the message and the causes of the error it holds.
impl fmt::Display for Lower {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl std::error::Error for Lower {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// `From<X> for Room` for each lower layer's error `X` a room passes on,
/// through its one `Lower` variant: `lower_from!(MergeError: RefError,
/// CommitError);`.
macro_rules! lower_from {
    ($room:ident: $($e:ty),+ $(,)?) => {
        $(
            impl From<$e> for $room {
                fn from(e: $e) -> Self {
                    $room::Lower(e.into())
                }
            }
        )+
    };
}
pub(crate) use lower_from;
