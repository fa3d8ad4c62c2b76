//! Manual pages (design §3.8): `git-delegate.1` and one `git-delegate-<command>.1`
//! per visible subcommand, generated from the clap definitions with
//! clap_mangen, plus the hand-written sections clap cannot produce
//! (workflow, configuration, files, exit status, examples, see also), whose
//! prose is kept in text files under `manpage/` (read by `Sections::from_text`).
//!
//! Owns: the text and layout of every page, byte for byte (no dates, nothing
//! but Cargo's version varies), and the page file names.
//! Never: writes files or prints (the `man` command does), or reads anything
//! but the clap definitions.

use clap::CommandFactory;
use clap_mangen::roff::{bold, italic, roman, Inline, Roff};
use clap_mangen::Man;

/// The manual every page belongs to (the fifth `.TH` argument).
const MANUAL: &str = "git-delegate manual";

/// The preamble `roff` writes before every rendered chunk; a page carries it once.
const PREAMBLE: &str = ".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n";

/// Every page: (file name, roff text). The main page comes first.
pub fn pages() -> Vec<(String, String)> {
    let root = command();
    let mut out = vec![("git-delegate.1".to_string(), main_page(&root))];
    for sub in visible(&root) {
        out.push((
            format!("git-delegate-{}.1", sub.get_name()),
            sub_page(&root, sub),
        ));
    }
    out
}

/// The main page, `git-delegate.1`.
pub fn main() -> String {
    main_page(&command())
}

/// The clap command as the pages show it: built (global options propagated,
/// display names such as `git-delegate-prepare` set), no `help` subcommand.
fn command() -> clap::Command {
    let mut cmd = crate::cli::Cli::command().disable_help_subcommand(true);
    cmd.build();
    cmd
}

fn visible(cmd: &clap::Command) -> impl Iterator<Item = &clap::Command> {
    cmd.get_subcommands().filter(|s| !s.is_hide_set())
}

/// Render one chunk without its preamble. In text lines, `backticked`
/// spans of clap's help texts become bold.
fn chunk(render: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> String {
    let mut buf = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = render(&mut buf);
    let text = String::from_utf8_lossy(&buf).into_owned();
    let text = text.strip_prefix(PREAMBLE).unwrap_or(&text);
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        if !line.starts_with('.') && line.matches('`').count() % 2 == 0 {
            for (i, part) in line.split('`').enumerate() {
                if i > 0 {
                    out.push_str(if i % 2 == 1 { "\\fB" } else { "\\fR" });
                }
                out.push_str(part);
            }
        } else {
            out.push_str(line);
        }
    }
    out
}

/// A chunk whose first line (a `.SH` heading) is replaced by `heading`.
fn rehead(text: String, heading: &str) -> String {
    match text.split_once('\n') {
        Some((_, rest)) => format!("{heading}\n{rest}"),
        None => text,
    }
}

/// Text with `backticked` spans in bold, everything else roman.
fn inlines(text: &str) -> Vec<Inline> {
    text.split('`')
        .enumerate()
        .filter(|(_, s)| !s.is_empty())
        .map(|(i, s)| if i % 2 == 1 { bold(s) } else { roman(s) })
        .collect()
}

/// Hand-written sections, built with `roff` so that escaping is right.
struct Sections(Roff);

impl Sections {
    fn new() -> Self {
        Sections(Roff::new())
    }
    fn sh(&mut self, name: &str) -> &mut Self {
        self.0.control("SH", [name]);
        self
    }
    fn ss(&mut self, name: &str) -> &mut Self {
        self.0.control("SS", [name]);
        self
    }
    fn para(&mut self, text: &str) -> &mut Self {
        self.0.control("PP", []);
        self.0.text(inlines(text));
        self
    }
    /// A tagged paragraph: `tag` in bold (with `backticks` honoured inside `text`).
    fn item(&mut self, tag: &str, text: &str) -> &mut Self {
        self.tagged(bold(tag), text)
    }
    /// A tagged paragraph whose tag is set in italics (a placeholder path).
    fn item_i(&mut self, tag: &str, text: &str) -> &mut Self {
        self.tagged(italic(tag), text)
    }
    fn tagged(&mut self, tag: Inline, text: &str) -> &mut Self {
        self.0.control("TP", []);
        self.0.text(vec![tag]);
        self.0.text(inlines(text));
        self
    }
    /// A tagged paragraph of several paragraphs.
    fn item_paras(&mut self, tag: &str, paras: &[&str]) -> &mut Self {
        self.0.control("TP", []);
        self.0.text(vec![bold(tag)]);
        for (i, p) in paras.iter().enumerate() {
            if i > 0 {
                self.0.control("IP", []);
            }
            self.0.text(inlines(&p.replace('\n', " ")));
        }
        self
    }
    /// Lines shown as they are (examples, file excerpts).
    fn code(&mut self, lines: &str) -> &mut Self {
        self.0.control("PP", []);
        self.0.control("RS", ["4"]);
        self.0.control("nf", []);
        for line in lines.lines() {
            self.0.text(vec![roman(line)]);
        }
        self.0.control("fi", []);
        self.0.control("RE", []);
        self
    }
    /// Page references `name(N), name(N)`: each name bold, the rest roman.
    fn see_also(&mut self, pages: &str) -> &mut Self {
        let mut line = Vec::new();
        let all: Vec<&str> = pages.split(", ").collect();
        for (i, page) in all.iter().enumerate() {
            let (name, section) = page.split_at(page.find('(').unwrap_or(page.len()));
            line.push(bold(name));
            let sep = if i + 1 < all.len() { ", " } else { "" };
            line.push(roman(format!("{section}{sep}")));
        }
        self.0.text(line);
        self
    }
    /// Sections written as text (the files under manpage/): a line `@sh NAME`,
    /// `@ss NAME`, `@item TAG`, `@item_i TAG`, `@para`, `@code` or
    /// `@see PAGES` starts a block; the lines up to the next `@` line are its
    /// text (one line for prose, `backticks` in bold; lines as they are for
    /// `@code`).
    fn from_text(text: &str) -> Sections {
        let mut s = Sections::new();
        s.add_text(text);
        s
    }
    /// Append sections written as text (see [`Sections::from_text`]).
    fn add_text(&mut self, text: &str) -> &mut Self {
        let s = self;
        let mut blocks: Vec<(&str, String)> = Vec::new();
        for line in text.split_inclusive('\n') {
            match line.strip_prefix('@') {
                Some(head) => blocks.push((head.trim_end_matches('\n'), String::new())),
                None => {
                    if let Some((_, body)) = blocks.last_mut() {
                        body.push_str(line);
                    }
                }
            }
        }
        for (head, body) in &blocks {
            let body = body.strip_suffix('\n').unwrap_or(body);
            let (what, arg) = head.split_once(' ').unwrap_or((head, ""));
            match what {
                "sh" => s.sh(arg),
                "ss" => s.ss(arg),
                "para" => s.para(body),
                "item" => s.item(arg, body),
                "item_i" => s.item_i(arg, body),
                "code" => s.code(body),
                "see" => s.see_also(arg),
                _ => s,
            };
        }
        s
    }
    fn render(&self) -> String {
        chunk(|w| self.0.to_writer(w))
    }
}

fn title(man: Man, name: &str, cmd: &clap::Command) -> Man {
    man.title(name.to_ascii_uppercase())
        .section("1")
        .date("")
        .source(format!(
            "git-delegate {}",
            cmd.get_version().unwrap_or_default()
        ))
        .manual(MANUAL)
}

/// `.SH SYNOPSIS`: one line per form of `cmd` (per visible subcommand, or
/// nested subcommand), options with their values, in git's style. The global
/// `--color`, `-h` and `-V` are left to OPTIONS.
fn synopsis(cmd: &clap::Command) -> String {
    let mut roff = Roff::new();
    roff.control("SH", ["SYNOPSIS"]);
    // Left-adjusted, no hyphenation: option lists must not be stretched or split.
    roff.control("ad", ["l"]);
    roff.control("nh", []);
    let mut first = true;
    let mut forms = Vec::new();
    collect_forms(cmd, &mut forms);
    for form in forms {
        if !first {
            roff.control("br", []);
        }
        first = false;
        roff.text(form);
    }
    roff.control("ad", ["b"]);
    roff.control("hy", []);
    chunk(|w| roff.to_writer(w))
}

/// The synopsis lines of `cmd`: itself when it has no visible subcommands,
/// else each of them (recursively).
fn collect_forms(cmd: &clap::Command, out: &mut Vec<Vec<Inline>>) {
    let subs: Vec<&clap::Command> = visible(cmd).collect();
    if !subs.is_empty() {
        for sub in subs {
            collect_forms(sub, out);
        }
        return;
    }
    let name = cmd.get_bin_name().unwrap_or_else(|| cmd.get_name());
    let mut line = vec![bold(name)];
    for arg in cmd.get_arguments().filter(|a| {
        !a.is_hide_set()
            && !a.is_global_set()
            && !a.is_positional()
            && !matches!(a.get_id().as_str(), "help" | "version")
    }) {
        line.push(roman(" ["));
        match (arg.get_short(), arg.get_long()) {
            (Some(s), Some(l)) => {
                line.push(bold(format!("-{s}")));
                line.push(roman("|"));
                line.push(bold(format!("--{l}")));
            }
            (Some(s), None) => line.push(bold(format!("-{s}"))),
            (None, Some(l)) => line.push(bold(format!("--{l}"))),
            (None, None) => {}
        }
        if arg.get_num_args().is_some_and(|n| n.takes_values()) {
            let value = value_name(arg);
            if arg.get_num_args().is_some_and(|n| n.min_values() == 0) {
                line.push(roman(" ["));
                line.push(italic(value));
                line.push(roman("]"));
            } else {
                line.push(roman(" "));
                line.push(italic(value));
            }
        }
        line.push(roman("]"));
        if matches!(arg.get_action(), clap::ArgAction::Append) {
            line.push(roman("..."));
        }
    }
    for arg in cmd.get_positionals().filter(|a| !a.is_hide_set()) {
        let value = value_name(arg);
        let many = arg.get_num_args().is_some_and(|n| n.max_values() > 1);
        let dots = if many { "..." } else { "" };
        if arg.is_required_set() {
            line.push(roman(" "));
            line.push(italic(format!("{value}{dots}")));
        } else {
            line.push(roman(" ["));
            line.push(italic(format!("{value}{dots}")));
            line.push(roman("]"));
        }
    }
    out.push(line);
}

fn value_name(arg: &clap::Arg) -> String {
    arg.get_value_names()
        .and_then(|v| v.first())
        .map(|v| v.to_string())
        .unwrap_or_else(|| arg.get_id().as_str().to_ascii_uppercase())
}

fn main_page(root: &clap::Command) -> String {
    let man = title(Man::new(root.clone()), "git-delegate", root);
    let mut page = String::from(PREAMBLE);
    page.push_str(&chunk(|w| man.render_title(w)));
    page.push_str(&chunk(|w| man.render_name_section(w)));
    page.push_str(&synopsis(root));
    page.push_str(&chunk(|w| man.render_description_section(w)));
    page.push_str(&description().render());
    page.push_str(&rehead(
        chunk(|w| man.render_subcommands_section(w)),
        ".SH COMMANDS",
    ));
    page.push_str(&chunk(|w| man.render_options_section(w)));
    page.push_str(&main_sections().render());
    page.push_str(&chunk(|w| man.render_version_section(w)));
    page
}

/// The DESCRIPTION subsections of the main page.
fn description() -> Sections {
    Sections::from_text(include_str!("manpage/description.txt"))
}

/// The main page's sections after OPTIONS: configuration, files,
/// environment, exit status, output, remote workers, examples, see also.
fn main_sections() -> Sections {
    Sections::from_text(include_str!("manpage/main.txt"))
}

/// The apply page's account of `--verify` (design §3.10).
fn verify_section() -> Sections {
    Sections::from_text(include_str!("manpage/verify.txt"))
}

/// Exit statuses of one command, beyond "0 success, 2 usage, 3 state": the
/// `@item`s under its `@command NAME` in manpage/exit-status.txt, else
/// those under `@command _`.
fn exit_status(name: &str) -> &'static str {
    let text = include_str!("manpage/exit-status.txt");
    let block = |name: &str| {
        let head = format!("@command {name}\n");
        let start = if text.starts_with(&head) {
            Some(head.len())
        } else {
            text.find(&format!("\n{head}")).map(|i| i + 1 + head.len())
        }?;
        let rest = &text[start..];
        let end = rest.find("\n@command ").map_or(rest.len(), |i| i + 1);
        Some(&rest[..end])
    };
    block(name).or_else(|| block("_")).unwrap_or("")
}

fn sub_page(root: &clap::Command, sub: &clap::Command) -> String {
    let name = format!("git-delegate-{}", sub.get_name());
    let man = title(Man::new(sub.clone()), &name, root);
    let mut page = String::from(PREAMBLE);
    page.push_str(&chunk(|w| man.render_title(w)));
    page.push_str(&chunk(|w| man.render_name_section(w)));
    let nested: Vec<&clap::Command> = visible(sub).collect();
    page.push_str(&synopsis(sub));
    page.push_str(&chunk(|w| man.render_description_section(w)));
    if !nested.is_empty() {
        let mut s = Sections::new();
        s.sh("COMMANDS");
        for n in &nested {
            let about = n
                .get_long_about()
                .or_else(|| n.get_about())
                .map(|a| a.to_string())
                .unwrap_or_default();
            let paras: Vec<&str> = about.split("\n\n").collect();
            s.item_paras(n.get_name(), &paras);
        }
        page.push_str(&s.render());
    }
    page.push_str(&own_options(sub, ".SH OPTIONS"));
    if sub.get_name() == "apply" {
        page.push_str(&verify_section().render());
    }
    for n in &nested {
        let heading = format!(".SH \"{} OPTIONS\"", n.get_name().to_ascii_uppercase());
        page.push_str(&own_options(n, &heading));
    }
    let mut s = Sections::new();
    s.sh("COMMON OPTIONS")
        .item(
            "--color=WHEN",
            "`auto` (default), `always` or `never`: when to colour output. See git-delegate(1).",
        )
        .item(
            "-h, --help",
            "Print a summary (`-h`) or the full help with examples (`--help`).",
        )
        .item("-V, --version", "Print the version.");
    page.push_str(&s.render());
    let mut s = Sections::new();
    if let Some(after) = sub.get_after_long_help() {
        let after = after.to_string();
        let body = after
            .strip_prefix("Examples:\n")
            .unwrap_or(&after)
            .lines()
            .map(|l| l.strip_prefix("  ").unwrap_or(l))
            .collect::<Vec<_>>()
            .join("\n");
        s.sh("EXAMPLES").code(&body);
    }
    s.sh("EXIT STATUS");
    s.add_text(exit_status(sub.get_name()));
    s.item(
        "2",
        "Bad usage or bad input; nothing changed. See git-delegate(1).",
    )
    .item(
        "3",
        "The repository is in a state the command cannot work in; nothing changed. See \
         git-delegate(1).",
    );
    if sub_takes_json(sub) {
        s.sh("OUTPUT").para(
            "With `--json`, stdout carries exactly one JSON document (schema git-delegate/v1), \
             also on failure (an error document); human text and progress go to stderr. The \
             fields are documented in docs/json.md of the source distribution.",
        );
    }
    s.sh("SEE ALSO")
        .see_also("git-delegate(1), git-worktree(1)");
    page.push_str(&s.render());
    page.push_str(&chunk(|w| man.render_version_section(w)));
    page
}

/// The OPTIONS section of `cmd`'s own options (not the global `--color`,
/// `--help` and `--version`), under `heading`; empty when it has none.
fn own_options(cmd: &clap::Command, heading: &str) -> String {
    let own: Vec<clap::Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !a.is_global_set())
        .filter(|a| !matches!(a.get_id().as_str(), "help" | "version" | "color"))
        .cloned()
        .collect();
    if own.is_empty() {
        return String::new();
    }
    let only = clap::Command::new("options")
        .disable_help_flag(true)
        .disable_version_flag(true)
        .args(own);
    rehead(chunk(|w| Man::new(only).render_options_section(w)), heading)
}

fn sub_takes_json(cmd: &clap::Command) -> bool {
    cmd.get_arguments().any(|a| a.get_id().as_str() == "json") || visible(cmd).any(sub_takes_json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_deterministic_and_complete() {
        let a = pages();
        let b = pages();
        assert_eq!(a, b);
        let names: Vec<&str> = a.iter().map(|(n, _)| n.as_str()).collect();
        for sub in [
            "prepare",
            "apply",
            "status",
            "diff",
            "path",
            "gc",
            "drop",
            "renew",
            "refresh",
            "run",
            "join",
            "submit",
            "undo",
            "hook",
            "hooks",
            "man",
            "completions",
        ] {
            assert!(
                names.contains(&format!("git-delegate-{sub}.1").as_str()),
                "{names:?}"
            );
        }
        assert!(!names.iter().any(|n| n.contains("snapshot")));
        for (name, text) in &a {
            assert_eq!(text.matches(PREAMBLE).count(), 1, "{name}");
            assert!(text.contains(".TH GIT-DELEGATE"), "{name}");
        }
        assert_eq!(main(), a[0].1);
    }
}
