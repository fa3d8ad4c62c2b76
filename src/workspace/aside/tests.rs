//! Unit tests of `workspace::aside`: the names of entries left aside.
//!
//! Owns: those unit tests.
//! Never: reaches outside its own temporary folders.

use super::*;

#[test]
fn aside_names_are_parsed_and_never_taken_for_trash_entries() {
    assert_eq!(
        parse(OsStr::new("0123abcd-my-task-89abcdef.aside")),
        Some(("0123abcd".into(), "my-task".into()))
    );
    assert_eq!(parse(OsStr::new("0123abcd-1-89abcdef")), None);
    assert_eq!(parse(OsStr::new("0123abcd--89abcdef.aside")), None);
    assert_eq!(parse(OsStr::new("0123abcX-1-89abcdef.aside")), None);
    assert_eq!(parse(OsStr::new("x.aside")), None);
}
