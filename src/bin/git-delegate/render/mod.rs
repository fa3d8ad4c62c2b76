//! The JSON documents the binary prints (design §6, docs/json.md), as types
//! (the human text is `human`'s, its look `style`'s):
//! one `#[derive(Serialize)]` struct per document and per object inside one,
//! each built from an engine report by a `from_*`/`new` function here.
//!
//! Owns: the shape of every `--json` document, field by field, and the
//! field lists (`FIELDS`) the docs/json.md check compares with.
//! Never: prints (`ui::Ui::doc` does, adding `schema` and the recovery
//! fields), decides what happened (the engine does), or does git work.
//!
//! Key order: documents are printed through `serde_json::Value`, whose
//! objects are sorted by key (no `preserve_order`), so declaration order
//! here does not change a byte of output.
//!
//! `lossy_paths` (design §6.2) is decided here too: every path a document
//! holds is turned into text by the [`Text`] of that document, which notes
//! one that is not UTF-8; [`Text::doc`] adds the field. The engine's own
//! document strings (an error's details) say so in the error.

use std::cell::Cell;
use std::os::unix::ffi::OsStrExt;

use git_delegate::sys::paths::{self, BString};

pub mod apply;
pub mod batch;
pub mod config;
pub mod diff;
pub mod gc;
pub mod hooks;
pub mod human;
pub mod refresh;
pub mod run;
pub mod style;
pub mod undo;

/// The `schema` of every document.
pub const SCHEMA: &str = "git-delegate/v1";

/// A document type: a `Serialize` struct and `FIELDS`, the names of its
/// fields as the JSON has them (`r#ref` is `ref`).
///
/// A field written `name?: T`, as docs/json.md lists it (`name?`), is an
/// `Option<T>` left out of the document when `None` ([`absent`]); a plain
/// `name: Option<T>` is `null` then.
macro_rules! document {
    ($(#[$m:meta])* pub struct $name:ident { $($fields:tt)* }) => {
        $crate::render::document!(@field [$(#[$m])* $name] [] $($fields)*);
    };
    // One field at a time, into the list between the second brackets.
    (@field $head:tt [$($done:tt)*] $(#[$fm:meta])* $f:ident ?: $t:ty $(, $($rest:tt)*)?) => {
        $crate::render::document!(@field $head [$($done)* [
            $(#[$fm])* #[serde(skip_serializing_if = "crate::render::absent")] $f: Option<$t>
        ]] $($($rest)*)?);
    };
    (@field $head:tt [$($done:tt)*] $(#[$fm:meta])* $f:ident : $t:ty $(, $($rest:tt)*)?) => {
        $crate::render::document!(@field $head [$($done)* [$(#[$fm])* $f: $t]] $($($rest)*)?);
    };
    (@field [$(#[$m:meta])* $name:ident] [$([$(#[$fm:meta])* $f:ident : $t:ty])*]) => {
        $(#[$m])*
        #[derive(Debug, Clone, serde::Serialize)]
        pub struct $name { $( $(#[$fm])* pub $f : $t ),* }
        #[allow(dead_code)]
        impl $name {
            /// Every field's JSON name, in declaration order.
            pub const FIELDS: &'static [&'static str] = &[$(stringify!($f)),*];
        }
    };
}
pub(crate) use document;

/// Turns the paths of one document into text (UTF-8 as is, otherwise as
/// `String::from_utf8_lossy` writes it), noting whether any had to be
/// written lossily: one per document, passed to every builder of it.
#[derive(Debug, Default)]
pub struct Text {
    lossy: Cell<bool>,
}

impl Text {
    /// Raw path bytes as a document string.
    pub fn bytes(&self, bytes: &[u8]) -> String {
        if std::str::from_utf8(bytes).is_err() {
            self.lossy.set(true);
        }
        paths::doc_bytes(bytes)
    }

    /// An OS path as a document string.
    pub fn path(&self, p: &std::path::Path) -> String {
        self.bytes(p.as_os_str().as_bytes())
    }

    /// Raw paths as document strings.
    pub fn paths(&self, list: &[BString]) -> Vec<String> {
        list.iter().map(|p| self.bytes(p)).collect()
    }

    /// Note a lossy string made elsewhere (the engine's error details).
    pub fn note(&self, lossy: bool) {
        if lossy {
            self.lossy.set(true);
        }
    }

    /// The top-level document `body`, with `lossy_paths` when one of its
    /// paths was written lossily.
    pub fn doc<T: serde::Serialize>(self, body: T) -> Doc<T> {
        Doc {
            body,
            lossy_paths: self.lossy.get(),
        }
    }
}

/// A top-level document: its fields and `lossy_paths` (design §6.2).
/// `Ui::doc` adds `schema` and the recovery fields.
#[derive(Debug, serde::Serialize)]
pub struct Doc<T> {
    #[serde(flatten)]
    pub body: T,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub lossy_paths: bool,
}

/// A document inside another, whole: with its own `schema` (status's
/// batches, run's apply).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Embedded<T> {
    pub schema: &'static str,
    #[serde(flatten)]
    pub doc: T,
}

impl<T> Embedded<T> {
    pub fn new(doc: T) -> Embedded<T> {
        Embedded {
            schema: SCHEMA,
            doc,
        }
    }
}

/// `Option`s marked with this are left out of the document when `None`
/// (a field docs/json.md lists with `?`, written `name?: T` in `document!`).
pub fn absent<T>(v: &Option<T>) -> bool {
    v.is_none()
}

document! {
    /// `{"pid", "command"}`: a process found in a workspace.
    pub struct Proc {
        pid: u32,
        command: String,
    }
}

impl Proc {
    pub fn list(procs: &[git_delegate::sys::quiesce::Proc]) -> Vec<Proc> {
        procs
            .iter()
            .map(|p| Proc {
                pid: p.pid,
                command: p.command.clone(),
            })
            .collect()
    }
}

document! {
    /// An entry of `kept_workspaces` (apply, drop, gc) and
    /// `hosts_open_batches` (drop refused): a workspace kept because open
    /// batches were prepared in it.
    pub struct KeptWorkspace {
        task: String,
        workspace: String,
        batches: Vec<String>,
    }
}

impl KeptWorkspace {
    pub fn list(t: &Text, kept: &[git_delegate::ops::apply::Kept]) -> Vec<KeptWorkspace> {
        kept.iter()
            .map(|(task, root, batches)| KeptWorkspace {
                task: task.clone(),
                workspace: t.path(root),
                batches: batches.clone(),
            })
            .collect()
    }
}

document! {
    /// An entry of `unsafe_folders` (gc, drop): a folder below the
    /// workspace root refused and never entered (design §3.18).
    pub struct UnsafeFolder {
        path: String,
        owner: u32,
        reason: &'static str,
    }
}

impl UnsafeFolder {
    pub fn list(
        t: &Text,
        list: &[git_delegate::workspace::shared_root::Refused],
    ) -> Vec<UnsafeFolder> {
        list.iter()
            .map(|r| UnsafeFolder {
                path: t.path(&r.path),
                owner: r.owner,
                reason: r.reason.as_str(),
            })
            .collect()
    }
}

document! {
    /// `{"code", "message", "help"}`: the `error` of an error document, and
    /// `refresh_error` of apply. `details` are the error's own fields
    /// (flattened in, never replacing these three).
    pub struct ErrorBody {
        code: &'static str,
        message: String,
        help: String,
        #[serde(flatten)]
        details: serde_json::Map<String, serde_json::Value>,
    }
}

document! {
    /// The error document (docs/json.md "Error").
    pub struct ErrorDoc {
        error: ErrorBody,
    }
}

impl ErrorDoc {
    pub fn new(code: git_delegate::error::Code, message: &str, help: &str) -> ErrorDoc {
        ErrorDoc {
            error: ErrorBody::new(code, message, help),
        }
    }

    /// The error document of `err`, its details included (the engine's
    /// note that one of them holds a lossy path goes to `t`).
    pub fn of(t: &Text, err: &git_delegate::error::Error) -> ErrorDoc {
        let mut doc = ErrorDoc::new(err.code, &err.message, &err.help);
        if let Some(details) = &err.details {
            for (k, v) in details.iter() {
                if k == paths::LOSSY_DETAIL {
                    t.note(v == &serde_json::Value::Bool(true));
                } else if !matches!(k.as_str(), "code" | "message" | "help") {
                    doc.error.details.insert(k.clone(), v.clone());
                }
            }
        }
        doc
    }
}

impl ErrorBody {
    pub fn new(code: git_delegate::error::Code, message: &str, help: &str) -> ErrorBody {
        ErrorBody {
            code: code.as_str(),
            message: message.to_string(),
            help: help.to_string(),
            details: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::apply::*;
    use super::*;
    use std::collections::BTreeSet;

    /// The names docs/json.md lists directly under `prefix` in the block
    /// `block` (`tasks[]` for the fields of every task): `tasks[].name` ->
    /// `name`; `?` and `[]` left out.
    fn documented(block: &str, prefix: &str) -> BTreeSet<String> {
        let text = include_str!("../../../../docs/json.md");
        let head = format!("```fields {block}");
        let mut inside = false;
        let mut out = BTreeSet::new();
        for line in text.lines() {
            if line.trim_end() == head {
                inside = true;
                continue;
            }
            if inside && line.starts_with("```") {
                break;
            }
            let Some(path) = line.split_whitespace().next().filter(|_| inside) else {
                continue;
            };
            let path = path.trim_end_matches('?');
            let rest = if prefix.is_empty() {
                Some(path)
            } else {
                path.strip_prefix(prefix).and_then(|r| r.strip_prefix('.'))
            };
            if let Some(rest) = rest.filter(|r| !r.contains('.')) {
                let name = rest.trim_end_matches("[]");
                let common = prefix.is_empty() && COMMON.contains(&name);
                if !name.is_empty() && !common {
                    out.insert(name.to_string());
                }
            }
        }
        assert!(
            !out.is_empty(),
            "docs/json.md has no fields under {block} {prefix}"
        );
        out
    }

    /// The fields `Ui::doc_after` adds to every top-level document.
    const COMMON: &[&str] = &[
        "schema",
        "recovered_writebacks",
        "completed_writebacks",
        "lossy_paths",
    ];

    /// A type's field names as the JSON has them; at the top (`top`),
    /// without the fields `Ui::doc_after` adds.
    fn names(fields: &[&str], top: bool) -> BTreeSet<String> {
        fields
            .iter()
            .map(|f| f.trim_start_matches("r#").to_string())
            .filter(|f| !(top && COMMON.contains(&f.as_str())))
            .collect()
    }

    /// `lossy_paths` is the document's: set when one of its paths was
    /// written lossily, by the render layer or (in an error's details) by
    /// the engine, and never an `error` field.
    #[test]
    fn lossy_paths_comes_from_the_documents_own_paths() {
        let value = |doc: &dyn erased::Doc| doc.value();
        let t = Text::default();
        let ok = PathList {
            paths: vec![t.bytes(b"plain.txt")],
        };
        assert_eq!(
            value(&t.doc(ok)),
            serde_json::json!({"paths": ["plain.txt"]})
        );
        let t = Text::default();
        let bad = PathList {
            paths: vec![t.bytes(b"bad-\xff.txt")],
        };
        assert_eq!(
            value(&t.doc(bad)),
            serde_json::json!({"paths": ["bad-\u{fffd}.txt"], "lossy_paths": true})
        );
        let mut details = serde_json::Map::new();
        details.insert("paths".into(), serde_json::json!(["bad-\u{fffd}"]));
        git_delegate::sys::paths::note_lossy(&mut details, true);
        let err =
            git_delegate::error::Error::state(git_delegate::error::Code::InvalidPath, "m", "h")
                .with_details(details);
        let t = Text::default();
        let doc = ErrorDoc::of(&t, &err);
        let v = value(&t.doc(doc));
        assert_eq!(v["lossy_paths"], true);
        assert_eq!(v["error"]["paths"], serde_json::json!(["bad-\u{fffd}"]));
        assert!(v["error"].get("lossy_paths").is_none(), "{v}");
    }

    document! {
        /// `maybe?` is left out when `None`, `null_field` is `null` then.
        pub struct Marks {
            maybe?: u32,
            null_field: Option<u32>,
            /// Attributes before a `?` field stay its own.
            #[serde(rename = "renamed")]
            kept?: Option<bool>,
        }
    }

    /// `name?: T` in `document!` is an `Option<T>` left out when `None`;
    /// a plain `Option` field is written as `null`.
    #[test]
    fn a_question_mark_field_is_left_out_when_none() {
        let value = |doc: &dyn erased::Doc| doc.value();
        let none = Marks {
            maybe: None,
            null_field: None,
            kept: None,
        };
        assert_eq!(value(&none), serde_json::json!({"null_field": null}));
        let some = Marks {
            maybe: Some(3),
            null_field: Some(4),
            kept: Some(None),
        };
        assert_eq!(
            value(&some),
            serde_json::json!({"maybe": 3, "null_field": 4, "renamed": null})
        );
        assert_eq!(Marks::FIELDS, ["maybe", "null_field", "kept"]);
    }

    #[derive(serde::Serialize)]
    struct PathList {
        paths: Vec<String>,
    }

    mod erased {
        pub trait Doc {
            fn value(&self) -> serde_json::Value;
        }
        impl<T: serde::Serialize> Doc for T {
            fn value(&self) -> serde_json::Value {
                serde_json::to_value(self).unwrap()
            }
        }
    }

    /// Every typed document and object has exactly the fields docs/json.md
    /// lists for it, and the other way round.
    #[test]
    fn docs_json_md_matches_the_types() {
        let error_body: Vec<&str> = ErrorBody::FIELDS
            .iter()
            .copied()
            .filter(|f| *f != "details")
            .collect();
        let table: &[(&str, &str, &[&str])] = &[
            ("apply", "", ApplyDoc::FIELDS),
            ("apply", "tasks[]", ApplyTask::FIELDS),
            ("apply", "tasks[].conflicts[]", Conflict::FIELDS),
            ("apply", "tasks[].processes[]", Proc::FIELDS),
            ("apply", "stopped_processes[]", StoppedProc::FIELDS),
            ("apply", "kept_workspaces[]", KeptWorkspace::FIELDS),
            ("apply", "kept_proposal", KeptProposal::FIELDS),
            ("apply", "refreshed[]", refresh::RefreshTask::FIELDS),
            ("apply", "refresh_error", &error_body),
            ("apply", "side_effects[]", SideEffect::FIELDS),
            ("apply", "verify", Verify::FIELDS),
            ("apply", "verify.runs[]", VerifyRun::FIELDS),
            ("apply", "warnings[]", RemoteWarning::FIELDS),
            ("batch", "", batch::BatchDoc::FIELDS),
            ("batch", "baseline", batch::Baseline::FIELDS),
            ("batch", "lease", batch::Lease::FIELDS),
            ("batch", "tasks[]", batch::BatchTask::FIELDS),
            ("batch", "tasks[].processes[]", Proc::FIELDS),
            ("batch", "remote", batch::Remote::FIELDS),
            ("batch", "warnings[]", batch::HookWarning::FIELDS),
            ("status", "", batch::StatusDoc::FIELDS),
            ("status", "problems[]", batch::StatusProblem::FIELDS),
            ("status", "kept[]", batch::KeptProposal::FIELDS),
            ("gc", "", gc::GcDoc::FIELDS),
            ("gc", "rescued[]", gc::GcRescued::FIELDS),
            ("gc", "unsafe_folders[]", UnsafeFolder::FIELDS),
            ("gc", "kept_workspaces[]", gc::GcKeptWorkspace::FIELDS),
            ("gc", "skipped[]", gc::Skipped::FIELDS),
            ("gc", "stashed[]", gc::GcStashed::FIELDS),
            ("gc", "warnings[]", RemoteWarning::FIELDS),
            ("join", "", hooks::JoinDoc::FIELDS),
            ("undo", "", undo::UndoDoc::FIELDS),
            ("undo", "conflicts[]", Conflict::FIELDS),
            ("undo", "kept[]", undo::UndoKept::FIELDS),
            ("undo-list", "", undo::UndoList::FIELDS),
            ("undo-list", "entries[]", undo::UndoEntry::FIELDS),
            ("drop", "", gc::DropDoc::FIELDS),
            ("drop", "unsafe_folders[]", UnsafeFolder::FIELDS),
            ("drop", "rescued[]", gc::DropRescued::FIELDS),
            ("drop", "kept_workspaces[]", KeptWorkspace::FIELDS),
            ("drop", "warnings[]", RemoteWarning::FIELDS),
            ("drop-refused", "", gc::DropRefused::FIELDS),
            (
                "drop-refused",
                "hosts_open_batches[]",
                KeptWorkspace::FIELDS,
            ),
            ("drop-refused", "stashed[]", gc::DropStashed::FIELDS),
            ("diff", "", diff::DiffDoc::FIELDS),
            ("diff", "tasks[]", diff::DiffTask::FIELDS),
            ("diff", "tasks[].paths[]", diff::DiffPath::FIELDS),
            ("diff", "tasks[].conflicts[]", Conflict::FIELDS),
            ("diff", "paths[]", diff::DiffPath::FIELDS),
            ("path", "", diff::PathDoc::FIELDS),
            ("branch", "", hooks::BranchDoc::FIELDS),
            ("branch", "conflicts[]", Conflict::FIELDS),
            ("refresh", "", refresh::RefreshDoc::FIELDS),
            ("refresh", "tasks[]", refresh::RefreshTask::FIELDS),
            ("run", "", run::RunDoc::FIELDS),
            ("run", "workers[]", run::RunWorker::FIELDS),
            ("run", "workers[].sandbox", run::Sandbox::FIELDS),
            ("hooks-install", "", hooks::HooksDoc::FIELDS),
            ("hooks-install", "pre_push", hooks::PrePush::FIELDS),
            ("hooks-install-claude", "", hooks::ClaudeDoc::FIELDS),
            ("config", "", config::ConfigDoc::FIELDS),
            ("config", "changes[]", config::Change::FIELDS),
            ("config", "left_out[]", LeftOut::FIELDS),
            ("apply", "untrusted_config", UntrustedConfig::FIELDS),
            ("apply", "untrusted_config.left_out[]", LeftOut::FIELDS),
            ("error", "", ErrorDoc::FIELDS),
        ];
        let mut errors = Vec::new();
        for (block, prefix, fields) in table {
            let doc = documented(block, prefix);
            let ty = names(fields, prefix.is_empty());
            for f in doc.difference(&ty) {
                errors.push(format!(
                    "{block} {prefix}: `{f}` is documented but no field of the type"
                ));
            }
            for f in ty.difference(&doc) {
                errors.push(format!(
                    "{block} {prefix}: the type's field `{f}` is not documented"
                ));
            }
        }
        // The error body's fixed fields (its details vary by code).
        let doc = documented("error", "error");
        for f in names(&error_body, false) {
            if !doc.contains(&f) {
                errors.push(format!("error error: `{f}` is not documented"));
            }
        }
        assert!(errors.is_empty(), "{}", errors.join("\n"));
    }
}
