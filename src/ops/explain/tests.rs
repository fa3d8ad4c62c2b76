//! The words of `ops::explain`'s impls for the floor, `git/` and `record/`
//! that the suite cannot easily provoke, pinned as the modules wrote them.
//!
//! Owns: those unit tests.
//! Never: words an error itself (the impls in `mod.rs` do).

use super::*;
use crate::git::blob::BlobError;
use crate::git::discovery::DiscoveryError;
use crate::git::repo::RepoError;
use crate::git::transport::TransportError;
use crate::record::batch::BatchError;
use crate::record::busy::BusyError;
use crate::record::pool::PoolError;
use std::path::Path;

#[test]
fn config_errors_are_usage_errors_pointing_at_the_line() {
    let p = Path::new("delegate.toml");
    for text in [
        "[lease]\nttl = 5\n",
        "[workspace]\nroot = \"relative/ws\"\n",
        "[run]\nport-base = 0\n",
    ] {
        let e = Error::from(crate::config::Config::parse(p, text).unwrap_err());
        assert_eq!((e.code, e.exit_code()), (Code::Config, 2), "{text}");
        assert!(miette::Diagnostic::labels(&e).is_some(), "{text}: {e}");
        assert!(
            e.help.starts_with("fix or remove that line; "),
            "{}",
            e.help
        );
    }
    let e = crate::config::Config::parse_bytes(p, b"a = \"\xff\"\n".to_vec()).unwrap_err();
    let e = Error::from(e);
    assert_eq!(
        e.message,
        "invalid configuration in delegate.toml: a byte that is not UTF-8 (0xff) at line 1, column 6 (a config file is UTF-8 text)"
    );
    assert!(e.help.ends_with(", or remove the file"), "{}", e.help);
    assert!(miette::Diagnostic::labels(&e).is_some());
}

/// Every config error names its place in the message and the JSON error
/// (design §9): a table given twice (two workers appending `[apply]`), a
/// key given twice, a value refused; and a table given twice says so.
#[test]
fn config_errors_name_the_line_and_column_in_the_message_and_details() {
    let p = Path::new("delegate.toml");
    for (text, line, column) in [
        ("[apply]\nverify = \"a\"\n[apply]\nverify = \"b\"\n", 3, 2),
        ("[apply]\nverify = \"a\"\nverify = \"b\"\n", 3, 1),
        ("[lease]\nttl = \"2h\"\n\n[run]\nport-base = 0\n", 5, 13),
    ] {
        let e = Error::from(crate::config::Config::parse(p, text).unwrap_err());
        let at = format!(" at line {line}, column {column}: ");
        assert!(e.message.contains(&at), "{text}: {}", e.message);
        let d = e.details.as_deref().unwrap();
        assert_eq!(
            (d["line"].as_u64(), d["column"].as_u64()),
            (Some(line), Some(column))
        );
        assert_eq!(d["path"], "delegate.toml");
    }
    let e = Error::from(crate::config::Config::parse(p, "[apply]\n[apply]\n").unwrap_err());
    assert!(
        e.help.starts_with("a table or key is given twice"),
        "{}",
        e.help
    );
}

/// `config::keys` names every key as `section.name`, a string as it is.
#[test]
fn delegate_toml_keys_are_named_with_their_section() {
    let k = crate::config::keys("[apply]\nverify = \"make test\"\nverify-jobs = 2\n[workspace]\ncopy-ignored = [\".env\"]\n").unwrap();
    let got: Vec<(&str, &str)> = k.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    assert_eq!(
        got,
        [
            ("apply.verify", "make test"),
            ("apply.verify-jobs", "2"),
            ("workspace.copy-ignored", "[\".env\"]")
        ]
    );
    assert_eq!(crate::config::keys("[apply]\n[apply]\n"), None);
}

/// The words each typed error had when it was built in place, before
/// the conversion (the suite checks most of them through the binary;
/// these are the ones it cannot easily provoke).
#[test]
fn the_words_are_those_the_modules_wrote() {
    let e = Error::from(LockError::Held {
        path: "/r/.git/delegate/lock".into(),
        holder: Some(42),
    });
    assert_eq!(
        (e.code, e.exit_code(), e.message.as_str(), e.help.as_str()),
        (
            Code::Locked,
            3,
            "another git-delegate command (pid 42) holds the repository lock /r/.git/delegate/lock",
            "wait for it to finish, or raise `lock.timeout` in .git/delegate.toml"
        )
    );
    assert_eq!(Error::from(LockError::Interrupted).code, Code::Interrupted);
    let e = Error::from(BusyError {
        batch: "0123abcd".into(),
        pid: 7,
    });
    assert_eq!(
        (e.code, e.exit_code(), e.message.as_str()),
        (
            Code::BatchBusy,
            3,
            "batch 0123abcd is being verified: `git delegate apply --verify` (pid 7) runs its verification command"
        )
    );
    let e = Error::from(TransportError::Failed {
        command: "git push r x".into(),
        remote: "r".into(),
        said: "denied".into(),
    });
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            Code::RemoteFailed,
            "`git push r x` failed for the remote r: denied"
        )
    );
    assert!(
        e.help.starts_with("check that the remote r is reachable"),
        "{}",
        e.help
    );
}

/// The same, for the files, the discovery, a batch's record and a filter.
#[test]
fn the_words_of_files_records_and_filters_are_those_the_modules_wrote() {
    let os = |e: rustix::io::Errno| std::io::Error::from_raw_os_error(e.raw_os_error());
    let e = Error::from(FsError::Write {
        dir: "/nonexistent".into(),
        io: PathError::on("write", "/nonexistent/x".as_ref())(os(rustix::io::Errno::NOENT)),
    });
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            Code::Io,
            "cannot write /nonexistent/x: No such file or directory (os error 2)"
        )
    );
    let e = Error::from(FsError::from(PathError::on("remove", "/x".as_ref())(os(
        rustix::io::Errno::ROFS,
    ))));
    assert_eq!(e.code, Code::ReadOnlyFilesystem);
    let e = Error::from(DiscoveryError::Unreadable {
        path: "/w/.git".into(),
        source: std::io::Error::from_raw_os_error(rustix::io::Errno::LOOP.raw_os_error()),
    });
    assert_eq!(e.code, Code::UnreadableGitDir);
    assert!(e.help.contains("leads back to itself"), "{}", e.help);
    assert!(
        e.message.starts_with("/w/.git cannot be read ("),
        "{}",
        e.message
    );
    let e = Error::from(BatchError::Corrupt {
        id: "0123456789abcdef".into(),
        problem: "bad".into(),
    });
    assert_eq!(
        (e.code, e.exit_code(), e.message.as_str(), e.help.as_str()),
        (
            Code::CorruptBatch,
            3,
            "the state of batch 01234567 is corrupt: bad",
            "remove the batch with `git delegate drop 0123456789abcdef --force` (the changes in its workspaces are saved as proposal refs first)"
        )
    );
    let e = Error::from(BatchError::UnknownTask {
        name: "x".into(),
        batch: "01234567".into(),
        tasks: vec!["a".into(), "b".into()],
    });
    assert_eq!(
        (e.code, e.exit_code(), e.message.as_str(), e.help.as_str()),
        (
            Code::UnknownTask,
            2,
            "batch 01234567 has no task named \"x\"",
            "its tasks are: a, b"
        )
    );
    let e = Error::from(BlobError::DriverFailed {
        direction: "smudge",
        driver: "lfs".into(),
        command: "git-lfs smudge %f".into(),
        place: "a in /w".into(),
        status: "exit status: 1".into(),
    });
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            Code::FilterFailed,
            "the smudge filter `lfs` (git-lfs smudge %f) failed on a in /w: exit status: 1"
        )
    );
}

/// What `git/repo`, `record/pool` and `workspace/` pass on typed now
/// (they returned the crate's `Error` before): the same words as the
/// cause's own, a full disk named by its cause; and the pool's own
/// refusals, which only a bug provokes.
#[test]
fn passed_on_errors_keep_their_causes_words() {
    use crate::workspace::WorkspaceError;
    let words = |e: Error| (e.code, e.exit_code(), e.message, e.help);
    let os = |e: rustix::io::Errno| std::io::Error::from_raw_os_error(e.raw_os_error());
    let full = || {
        FsError::from(PathError::on("resolve", "/w".as_ref())(os(
            rustix::io::Errno::NOSPC,
        )))
    };
    assert_eq!(words(RepoError::from(full()).into()), words(full().into()));
    assert_eq!(Error::from(RepoError::from(full())).code, Code::DiskFull);
    let config =
        || crate::config::Config::parse(Path::new("d.toml"), "[lease]\nttl = 5\n").unwrap_err();
    let e = Error::from(RepoError::from(config()));
    assert!(miette::Diagnostic::labels(&e).is_some());
    assert_eq!(words(e), words(config().into()));
    let lost = || DiscoveryError::NotFound("/w is not inside a git repository".into());
    assert_eq!(words(RepoError::from(lost()).into()), words(lost().into()));
    assert_eq!(
        words(WorkspaceError::from(RepoError::from(lost())).into()),
        words(lost().into())
    );
    assert_eq!(
        words(WorkspaceError::from(PoolError::from(full())).into()),
        words(full().into())
    );

    let e = Error::from(PoolError::BadId { id: "../x".into() });
    assert_eq!(
        (e.code, e.exit_code(), e.message.as_str(), e.help.as_str()),
        (
            Code::Internal,
            3,
            "\"../x\" is no idle workspace id",
            "report this bug"
        )
    );
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("f");
    std::fs::write(&file, "").unwrap();
    let idle = crate::record::pool::Idle {
        id: crate::record::pool::new_id(),
        root: "/ws".into(),
        folder: crate::record::batch::Folder {
            dev: 1,
            ino: 2,
            path: "/ws".into(),
            subvolume: None,
        },
        tree: String::new(),
        commit: String::new(),
        idle_since: String::new(),
    };
    let e = Error::from(crate::record::pool::save(&file, &idle).unwrap_err());
    assert_eq!(
        (e.code, e.message),
        (
            Code::Io,
            format!(
                "cannot create {}/pool: Not a directory (os error 20)",
                file.display()
            )
        )
    );
}
