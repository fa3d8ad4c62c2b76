//! The documented JSON contract (docs/json.md): every `--json` document the
//! test suite can produce is checked against the machine-readable field
//! lists there (no undocumented field, no required field missing, types as
//! documented), every error code in the source is documented, and with
//! `--json` every failure, parse errors included, is one error document.
//!
//! Here: the field lists, the validator, the fixture and the checks of the
//! contract itself; the documents the commands print are in `documents`.
use crate::common::files::read;
use crate::common::fixtures::id;
use crate::common::fixtures::task_root;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::fixtures::{checkout, field_strs, prepare};
use serde_json::Value;

mod documents;

fn json_md() -> String {
    std::fs::read_to_string(checkout().join("docs/json.md")).expect("docs/json.md")
}

/// One documented field.
#[derive(Debug, Clone)]
struct Field {
    types: Vec<String>,
    optional: bool,
}

/// The field lists of docs/json.md: block name -> path -> field.
type Specs = BTreeMap<String, BTreeMap<String, Field>>;

fn specs() -> Specs {
    let text = json_md();
    let mut out = Specs::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("```fields ") {
            current = Some(name.trim().to_string());
            out.entry(name.trim().to_string()).or_default();
            continue;
        }
        if line.starts_with("```") {
            current = None;
            continue;
        }
        let Some(name) = &current else { continue };
        let mut words = line.split_whitespace();
        let (Some(path), Some(ty)) = (words.next(), words.next()) else {
            continue;
        };
        assert!(
            words.next().is_some(),
            "docs/json.md: the field {path} of `{name}` has no description"
        );
        let (path, optional) = match path.strip_suffix('?') {
            Some(p) => (p, true),
            None => (path, false),
        };
        let field = Field {
            types: ty.split('|').map(str::to_string).collect(),
            optional,
        };
        for t in &field.types {
            assert!(
                matches!(
                    t.as_str(),
                    "string" | "number" | "bool" | "null" | "object" | "array"
                ) || t.starts_with('@'),
                "docs/json.md: unknown type {t} of {path} in `{name}`"
            );
        }
        let prev = out.get_mut(name).unwrap().insert(path.to_string(), field);
        assert!(prev.is_none(), "docs/json.md: {path} twice in `{name}`");
    }
    out
}

fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

/// The parent path of a documented path: `tasks[].name` -> `tasks[]`,
/// `lease.state` -> `lease`, `schema` -> ``.
fn parent(path: &str) -> &str {
    match path.rfind('.') {
        Some(i) => &path[..i],
        None => "",
    }
}

/// Check `value` (found at `path` of a document described by `spec`).
fn check(
    specs: &Specs,
    spec: &BTreeMap<String, Field>,
    path: &str,
    value: &Value,
    where_: &str,
    errors: &mut Vec<String>,
) {
    let is_object_element = path.ends_with("[]")
        && !spec.contains_key(path)
        && spec.keys().any(|k| k.starts_with(&format!("{path}.")));
    if is_object_element && !value.is_object() {
        errors.push(format!(
            "{where_}: `{path}` is {}, documented as object",
            type_of(value)
        ));
        return;
    }
    if !path.is_empty() && !is_object_element {
        let Some(field) = spec.get(path) else {
            errors.push(format!("{where_}: undocumented field `{path}`"));
            return;
        };
        let actual = type_of(value);
        if let Some(reference) = field.types.iter().find_map(|t| t.strip_prefix('@')) {
            if actual == "object" {
                let Some(inner) = specs.get(reference) else {
                    errors.push(format!(
                        "{where_}: `{path}` refers to unknown block {reference}"
                    ));
                    return;
                };
                check(specs, inner, "", value, &format!("{where_} {path}"), errors);
                return;
            }
        }
        if !field.types.iter().any(|t| t == actual) {
            errors.push(format!(
                "{where_}: `{path}` is {actual}, documented as {}",
                field.types.join("|")
            ));
            return;
        }
    }
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                check(specs, spec, &join(path, k), v, where_, errors);
            }
            for (p, f) in spec {
                if parent(p) == path && !f.optional && !p.ends_with("[]") {
                    let key = &p[if path.is_empty() { 0 } else { path.len() + 1 }..];
                    if !map.contains_key(key) {
                        errors.push(format!("{where_}: documented field `{p}` is missing"));
                    }
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                check(specs, spec, &format!("{path}[]"), item, where_, errors);
            }
        }
        _ => {}
    }
}

/// Validate a top-level document against block `name` plus `common`.
fn validate(specs: &Specs, name: &str, doc: &Value, where_: &str) -> Vec<String> {
    let mut spec = specs
        .get(name)
        .unwrap_or_else(|| panic!("docs/json.md has no `fields {name}` block"))
        .clone();
    for (p, f) in specs.get("common").expect("a `fields common` block") {
        spec.entry(p.clone()).or_insert_with(|| f.clone());
    }
    let mut errors = Vec::new();
    if doc["schema"] != "git-delegate/v1" {
        errors.push(format!("{where_}: schema is {}", doc["schema"]));
    }
    check(specs, &spec, "", doc, where_, &mut errors);
    errors
}

/// One `--json` run of the suite: which documented block its stdout must
/// follow and which exit status it must have.
struct Case {
    what: &'static str,
    args: Vec<String>,
    block: &'static str,
    exit: i32,
}

fn case(what: &'static str, args: &[&str], block: &'static str, exit: i32) -> Case {
    Case {
        what,
        args: args.iter().map(|s| s.to_string()).collect(),
        block,
        exit,
    }
}

/// A repository with: an open batch `a` (2 tasks, task 1 with a change), an
/// orphaned batch `b` (its owner is gone), and a batch whose state cannot
/// be read.
struct Fixture {
    env: crate::common::Env,
    repo: PathBuf,
    batch_a: String,
    batch_b: String,
}

fn fixture() -> Fixture {
    let env = crate::common::Env::new();
    let repo = env.repo("proj");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::write(repo.join("src/lib.txt"), "lib\n").unwrap();
    let a = env
        .delegate(
            &repo.join("src"),
            ["prepare", "-n", "2", "--label", "a", "--json"],
        )
        .expect(0)
        .json();
    let batch_a = id(&a);
    let task1 = task_root(&a, 0);
    std::fs::write(task1.join("README"), "changed by task 1\n").unwrap();

    // An owner that is gone: a child that has exited and been reaped.
    let mut owner = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = owner.id().to_string();
    let b = env
        .delegate(
            &repo,
            ["prepare", "--label", "b", "--owner-pid", &pid, "--json"],
        )
        .expect(0)
        .json();
    owner.kill().unwrap();
    owner.wait().unwrap();
    let batch_b = id(&b);

    Fixture {
        env,
        repo,
        batch_a,
        batch_b,
    }
}

fn run_case(f: &Fixture, c: &Case, dir: &Path) -> (Value, i32, String) {
    let run = f.env.delegate(dir, &c.args);
    let stdout = run.stdout.clone();
    let doc: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "{}: stdout is not one JSON document ({e}):\n{stdout}\nstderr:\n{}",
            c.what, run.stderr
        )
    });
    (doc, run.code, run.stderr)
}

/// Commands that are not built yet answer with this code; their cases are
/// skipped (loudly) until they are.
const NOT_IMPLEMENTED: &str = "delegate::not_implemented";

/// The field lists every document group below is checked against.
#[test]
fn docs_json_has_the_field_list_of_every_document() {
    let specs = specs();
    for block in [
        "common",
        "batch",
        "status",
        "apply",
        "gc",
        "drop",
        "drop-refused",
        "drop-pool",
        "hooks-install",
        "hooks-install-claude",
        "diff",
        "path",
        "branch",
        "refresh",
        "run",
        "error",
    ] {
        assert!(
            specs.contains_key(block),
            "docs/json.md lacks `fields {block}`"
        );
    }
}

/// The validator itself must be able to fail.
#[test]
fn the_validator_finds_undocumented_missing_and_mistyped_fields() {
    let specs = specs();
    let good = serde_json::json!({
        "schema": "git-delegate/v1", "batch": "x", "dropped": true,
        "workspaces_removed": 1, "refs_removed": 2
    });
    assert!(validate(&specs, "drop", &good, "good").is_empty());
    let mut extra = good.clone();
    extra["surprise"] = Value::from(1);
    assert!(validate(&specs, "drop", &extra, "extra")[0].contains("undocumented field `surprise`"));
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("refs_removed");
    assert!(validate(&specs, "drop", &missing, "missing")[0].contains("`refs_removed` is missing"));
    let mut wrong = good.clone();
    wrong["dropped"] = Value::from("yes");
    assert!(validate(&specs, "drop", &wrong, "wrong")[0].contains("documented as bool"));
    let nested = serde_json::json!({
        "schema": "git-delegate/v1", "problems": [],
        "batches": [ { "schema": "git-delegate/v1", "nope": 1 } ]
    });
    let errs = validate(&specs, "status", &nested, "nested");
    assert!(
        errs.iter().any(|e| e.contains("undocumented field `nope`")),
        "{errs:?}"
    );
    assert!(
        errs.iter().any(|e| e.contains("`batch` is missing")),
        "{errs:?}"
    );
}

/// Every `delegate::` code in the source has a row in the error table.
#[test]
fn every_error_code_in_the_source_is_documented() {
    let text = json_md();
    let mut undocumented = Vec::new();
    let mut found = 0;
    let mut stack = vec![checkout().join("src")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let source = read(&path);
            for (i, _) in source.match_indices("\"delegate::") {
                let rest = &source[i + 1..];
                let end = rest.find('"').unwrap();
                let code = &rest[..end];
                if code.len() <= "delegate::".len() {
                    continue;
                }
                found += 1;
                if !text.contains(&format!("| `{code}` |")) {
                    undocumented.push(format!("{code} ({})", path.display()));
                }
            }
        }
    }
    assert!(found > 10, "found only {found} codes");
    undocumented.sort();
    undocumented.dedup();
    assert!(
        undocumented.is_empty(),
        "error codes missing from the table in docs/json.md: {}",
        undocumented.join(", ")
    );
}

#[test]
fn parse_errors_with_json_are_one_error_document_and_exit_2() {
    let env = crate::common::Env::new();
    let repo = env.repo("proj");
    for args in [
        &["status", "--json", "--bogus"][..],
        &["prepare", "--json", "--mode", "sideways"],
        &["--json"],
        &["nonsense", "--json"],
        &["apply", "--json", "--color=purple"],
    ] {
        let run = env.delegate(&repo, args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        let doc = run.json();
        let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["error", "schema"], "{args:?}: {doc:#}");
        assert_eq!(doc["error"]["code"], "delegate::usage");
        let message = doc["error"]["message"].as_str().unwrap();
        assert!(
            !message.is_empty() && !message.starts_with("error:") && !message.contains('\n'),
            "{args:?}: {message:?}"
        );
        assert!(!doc["error"]["help"].as_str().unwrap().is_empty());
        // People still get clap's explanation on stderr.
        assert!(run.stderr.contains("error:"), "{args:?}: {}", run.stderr);
    }
    // `drop` without its batch is not a parse error any more but the
    // tool's own usage error (it lists the open batches): one document too.
    let run = env.delegate(&repo, ["drop", "--json"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let doc = run.json();
    assert_eq!(doc["error"]["code"], "delegate::usage");
    // Without --json a parse error prints no document.
    let run = env.delegate(&repo, ["status", "--bogus"]);
    assert_eq!(run.code, 2);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    // `--json` after `--` is an argument, not the flag.
    let run = env.delegate(&repo, ["status", "--bogus", "--", "--json"]);
    assert_eq!(run.code, 2);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    // Help is not a failure.
    let run = env.delegate(&repo, ["status", "--json", "--help"]);
    assert_eq!(run.code, 0);
    assert!(run.stdout.contains("Usage:"));
}
