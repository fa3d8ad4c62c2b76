//! How human text looks: the `Ui`'s colour and emphasis, and the escaping
//! of what a person is shown (unprintable characters, paths); `ui` prints
//! with it, `render::human` words with it.
//!
//! Owns: the escapes and colour codes of human text.
//! Never: prints, or decides whether colour is on (`ui::Ui::new` does).

use git_delegate::sys::paths::is_unprintable;

/// How a command speaks: a JSON document or human text, with colour or not.
pub struct Ui {
    pub json: bool,
    pub color: bool,
}

impl Ui {
    /// Emphasis for human text.
    pub fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }

    /// A task's status word in a column of `width`: green when `ok`, else
    /// red, padded with spaces after the colour ends.
    pub fn status_column(&self, word: &str, ok: bool, width: usize) -> String {
        let painted = self.paint(if ok { "32" } else { "31" }, word);
        format!("{painted}{}", " ".repeat(width.saturating_sub(word.len())))
    }

    pub fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
}

/// `s` with every unprintable character written as an escape (`\e`, `\n`,
/// `\t`, `\r`, else `\xNN` or `\u{NNNN}`); unchanged when it has none.
/// For human text only: JSON keeps exact strings (design §6.2).
pub fn escape_text(s: &str) -> String {
    if !s.chars().any(is_unprintable) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\x1b' => out.push_str("\\e"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if is_unprintable(c) && (c as u32) < 0x100 => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if is_unprintable(c) => out.push_str(&format!("\\u{{{:04x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// A path as shown to a person: the one function every human path goes
/// through (`commands::show`). Unprintable characters are escaped (see
/// [`escape_text`]); a path that is not UTF-8 is shown lossily.
pub fn show_path(p: &std::path::Path) -> String {
    escape_text(&p.to_string_lossy())
}
