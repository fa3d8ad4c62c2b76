//! The examples people copy, run as written (design §3.13, §3.16 "Hints"):
//! the README's `run` alias and the lines that use it, taken out of
//! README.md and `run --help` so the text cannot drift from what works;
//! and `{index}`, said to be 0-based wherever it is introduced (README,
//! guide, orchestrators, `run --help`, the man page), is 0 for the first task.
use std::path::{Path, PathBuf};

use crate::common::assert_has;
use crate::common::files::read;
use crate::common::fixtures::checkout;
use crate::common::Env;

/// The fenced `sh` block of README.md's section `heading`.
fn readme_block(heading: &str) -> String {
    let readme = read(&checkout().join("README.md"));
    let at = readme
        .find(heading)
        .unwrap_or_else(|| panic!("README.md has no {heading:?}"));
    let rest = &readme[at..];
    let open = rest.find("```sh\n").expect("an sh block") + "```sh\n".len();
    let close = rest[open..].find("```").expect("the block's end");
    rest[open..open + close].to_string()
}

/// An agent on PATH that writes the arguments it got, one a line, to
/// `args-<task>.txt` in its folder (the task's work, applied by run).
fn agent_dir(env: &Env) -> PathBuf {
    let bin = env.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let agent = bin.join("my-agent");
    std::fs::write(
        &agent,
        "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"args-$GIT_DELEGATE_TASK.txt\"\n",
    )
    .unwrap();
    crate::common::files::chmod(&agent, 0o755);
    bin
}

/// `line` run as a user types it in `repo`, with the agent on PATH.
fn type_line(env: &Env, repo: &Path, bin: &Path, line: &str) -> crate::common::Run {
    env.sh(repo, &format!("PATH={}:$PATH\n{line}", bin.display()))
}

/// The args files the four tasks' agents wrote, as applied to `repo`.
fn args_landed(repo: &Path) -> Vec<String> {
    (1..=4)
        .map(|t| read(&repo.join(format!("args-{t}.txt"))))
        .collect()
}

#[test]
fn the_readme_alias_passes_run_options_to_run_and_the_rest_to_the_agent() {
    let block = readme_block("## One command, and a git alias");
    let lines: Vec<&str> = block.lines().collect();
    let alias = lines
        .iter()
        .find(|l| l.starts_with("git config alias.fan "))
        .expect("the alias line");
    let uses: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("git fan "))
        .collect();
    assert!(uses.len() >= 2, "{block}");
    // One of them gives run an option: it must reach run, not the agent.
    assert!(uses.iter().any(|l| l.contains(" --timeout ")), "{block}");
    // `run --help` shows the same alias.
    let help = Env::new()
        .delegate(Path::new("/"), ["run", "--help"])
        .expect(0)
        .stdout;
    let help_alias = help
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("git config alias.fan "))
        .expect("run --help's alias");
    let help_alias = help_alias.split("  #").next().unwrap().trim();
    assert_eq!(help_alias, *alias, "README.md and run --help differ");
    let then = help
        .lines()
        .find_map(|l| l.split("# then: ").nth(1))
        .expect("run --help says how to use the alias")
        .trim()
        .to_string();

    for line in uses.iter().copied().chain([then.as_str()]) {
        let env = Env::new();
        let repo = env.repo("proj");
        let bin = agent_dir(&env);
        type_line(&env, &repo, &bin, alias).expect(0);
        let out = type_line(&env, &repo, &bin, line);
        assert_eq!(out.code, 0, "`{line}`:\n{}\n{}", out.stdout, out.stderr);
        // Each agent got exactly what follows `--`: no option of run's.
        let after = line
            .split(" -- ")
            .nth(1)
            .unwrap()
            .split(" #")
            .next()
            .unwrap();
        let want: Vec<String> = (1..=4)
            .map(|t| {
                after
                    .split_whitespace()
                    .skip(1)
                    .map(|a| a.replace("{task}", &t.to_string()) + "\n")
                    .collect()
            })
            .collect();
        assert_eq!(args_landed(&repo), want, "`{line}`");
        // Everything landed: no batch left open.
        let st = env.delegate(&repo, ["status", "--json"]).expect(0).json();
        assert_eq!(st["batches"].as_array().unwrap().len(), 0, "`{line}`");
    }
}

/// The first sentence-ish stretch after the first `{index}` of `text`.
fn after_index(text: &str, what: &str) -> String {
    let at = text
        .find("{index}")
        .unwrap_or_else(|| panic!("{what} does not introduce {{index}}"));
    text[at..]
        .chars()
        .take(60)
        .collect::<String>()
        .replace('\n', " ")
}

#[test]
fn index_is_said_to_be_0_based_where_it_is_introduced_and_is() {
    for doc in ["README.md", "docs/guide.md", "docs/orchestrators.md"] {
        let text = read(&checkout().join(doc));
        assert_has(&after_index(&text, doc), "0-based");
    }
    let help = Env::new()
        .delegate(Path::new("/"), ["run", "--help"])
        .expect(0)
        .stdout;
    assert_has(&after_index(&help, "run --help"), "0-based");
    let man = read(&checkout().join("man/git-delegate-run.1")).replace("\\-", "-");
    assert_has(&after_index(&man, "the run man page"), "0-based");

    // And it is: the first task's {index} and GIT_DELEGATE_TASK_INDEX are 0.
    let env = Env::new();
    let repo = env.repo("proj");
    env.delegate(
        &repo,
        [
            "run",
            "a",
            "b",
            "--",
            "sh",
            "-c",
            "echo {index} $GIT_DELEGATE_TASK_INDEX > index-{task}.txt",
        ],
    )
    .expect(0);
    assert_eq!(read(&repo.join("index-a.txt")), "0 0\n");
    assert_eq!(read(&repo.join("index-b.txt")), "1 1\n");
}
