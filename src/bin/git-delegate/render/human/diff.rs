//! The human text of `git delegate diff --stat` (design §3.4): git's own
//! `--stat` layout, bars scaled as git scales them.
//!
//! Owns: that layout.
//! Never: prints (`commands::diff` does), or reads a tree.

use git_delegate::ops::look::TaskDiff;

/// `git diff --stat` as git prints it into a pipe (80 columns; coloured
/// as git colours it with `colour`): ` PATH |
/// N +++---` (binary: `Bin OLD -> NEW bytes`), then the summary line. Bars
/// longer than the room left are scaled as git scales them; names are not
/// shortened (git cuts long names to `...tail`).
pub fn stat(t: &TaskDiff, colour: bool) -> String {
    // git's colours for the graph and a binary file's sizes.
    let (new, old, reset) = if colour {
        ("\x1b[32m", "\x1b[31m", "\x1b[m")
    } else {
        ("", "", "")
    };
    let graph = |c: char, n: usize, set: &str| -> String {
        if n == 0 {
            String::new()
        } else {
            format!("{set}{}{reset}", c.to_string().repeat(n))
        }
    };
    if t.paths.is_empty() {
        return String::new();
    }
    let names: Vec<String> = t
        .paths
        .iter()
        .map(|p| {
            String::from_utf8_lossy(&git_delegate::merge::patch::quote_prefixed(b"", &p.path))
                .into_owned()
        })
        .collect();
    let name_width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    let max_change = t
        .paths
        .iter()
        .filter_map(|p| p.lines.map(|(a, r)| a + r))
        .max()
        .unwrap_or(0);
    let binary = t.paths.iter().any(|p| p.lines.is_none());
    let mut number_width = max_change.to_string().len();
    if binary && number_width < 3 {
        number_width = 3;
    }
    let graph_width = graph_width(max_change, name_width, number_width);
    // git's scale_linear: at least one character for a non-zero count.
    let scale = |n: usize| -> usize {
        if max_change <= graph_width || n == 0 {
            n
        } else {
            1 + (n * (graph_width - 1)) / max_change
        }
    };
    let (mut ins, mut del) = (0, 0);
    let mut s = String::new();
    for (p, name) in t.paths.iter().zip(&names) {
        let pad = name_width - name.chars().count();
        s.push_str(&format!(" {name}{} |", " ".repeat(pad)));
        match p.lines {
            Some((a, r)) => {
                ins += a;
                del += r;
                s.push_str(&format!(" {:>number_width$}", a + r));
                if a + r > 0 {
                    let total = scale(a + r);
                    let plus = scale(a).min(total);
                    let minus = total - plus;
                    let minus = if r > 0 { minus.max(1) } else { 0 };
                    s.push(' ');
                    s.push_str(&graph('+', plus, new));
                    s.push_str(&graph('-', minus, old));
                }
                s.push('\n');
            }
            None => s.push_str(&format!(
                " {:>number_width$} {old}{}{reset} -> {new}{}{reset} bytes\n",
                "Bin", p.sizes.0, p.sizes.1
            )),
        }
    }
    s.push_str(&summary(t.paths.len(), ins, del));
    s.push('\n');
    s
}

/// The room a stat's bars get: what the largest change needs, or as git
/// cuts it to fit 80 columns.
fn graph_width(max_change: usize, name_width: usize, number_width: usize) -> usize {
    const WIDTH: usize = 80;
    let mut graph_width = max_change;
    if name_width + number_width + 6 + graph_width > WIDTH {
        let most = (WIDTH * 3 / 8).saturating_sub(number_width + 6).max(6);
        if graph_width > most {
            graph_width = most;
        }
        if name_width <= WIDTH.saturating_sub(number_width + 6 + graph_width) {
            graph_width = WIDTH.saturating_sub(number_width + 6 + name_width);
        }
    }
    graph_width
}

/// git's summary line: ` N files changed, I insertions(+), D deletions(-)`
/// (without its newline).
fn summary(n: usize, ins: usize, del: usize) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        " {n} file{} changed",
        if n == 1 { "" } else { "s" }
    ));
    if ins > 0 || del == 0 {
        s.push_str(&format!(
            ", {ins} insertion{}(+)",
            if ins == 1 { "" } else { "s" }
        ));
    }
    if del > 0 || ins == 0 {
        s.push_str(&format!(
            ", {del} deletion{}(-)",
            if del == 1 { "" } else { "s" }
        ));
    }
    s
}
