//! git's diff colours, applied to plain patch text (see
//! `paint_change`): what `git diff --color` paints, with its
//! whitespace errors at the end of lines and blank lines at end of file.
//! Never: changes the text it paints but by adding colour sequences.

const META: &[u8] = b"\x1b[1m";
const FRAG: &[u8] = b"\x1b[36m";
const OLD: &[u8] = b"\x1b[31m";
const NEW: &[u8] = b"\x1b[32m";
const WS: &[u8] = b"\x1b[41m";
const RESET: &[u8] = b"\x1b[m";

/// git's `isspace`: space, tab, newline, carriage return.
fn space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

fn blank(line: &[u8]) -> bool {
    line.iter().all(|&b| space(b))
}

/// git's `count_lines`.
fn count_lines(data: &[u8]) -> u32 {
    if data.is_empty() {
        return 0;
    }
    let n = data.iter().filter(|&&b| b == b'\n').count() as u32;
    if data.ends_with(b"\n") {
        n
    } else {
        n + 1
    }
}

/// git's `count_trailing_blank` (which never counts the first line).
fn trailing_blank(data: &[u8]) -> u32 {
    if data.is_empty() {
        return 0;
    }
    let mut ptr = data.len() as isize - 1;
    if data[ptr as usize] == b'\n' {
        ptr -= 1;
    }
    let mut count = 0;
    while 0 < ptr {
        let mut prev = ptr;
        while prev >= 0 && data[prev as usize] != b'\n' {
            prev -= 1;
        }
        let line = &data[(prev + 1) as usize..=ptr as usize];
        if !blank(line) {
            break;
        }
        count += 1;
        ptr = prev - 1;
    }
    count
}

/// git's `check_blank_at_eof`: (preimage, postimage) thresholds.
pub(super) fn blank_at_eof(old: &[u8], new: &[u8]) -> Option<(u32, u32)> {
    let (l1, l2) = (trailing_blank(old), trailing_blank(new));
    if l2 <= l1 {
        return None;
    }
    Some((count_lines(old) - l1 + 1, count_lines(new) - l2 + 1))
}

/// The start line of `tag`'s range in a hunk header (git's `find_lno`).
fn lno(header: &[u8], tag: u8) -> u32 {
    let Some(at) = header.iter().position(|&b| b == tag) else {
        return 0;
    };
    header[at + 1..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .fold(0u32, |n, &d| {
            n.saturating_mul(10).saturating_add((d - b'0') as u32)
        })
}

/// One line's text without its newline (and whether it had one).
fn split_nl(line: &[u8]) -> (&[u8], &[u8]) {
    match line.strip_suffix(b"\n") {
        Some(l) => (l, b"\n"),
        None => (line, b""),
    }
}

/// git's `emit_line_0` with one colour for sign and text.
fn whole(out: &mut Vec<u8>, set: &[u8], line: &[u8]) {
    let (text, nl) = split_nl(line);
    let (text, cr) = match text.strip_suffix(b"\r") {
        Some(t) => (t, &b"\r"[..]),
        None => (text, &b""[..]),
    };
    out.extend_from_slice(set);
    out.extend_from_slice(text);
    out.extend_from_slice(RESET);
    out.extend_from_slice(cr);
    out.extend_from_slice(nl);
}

/// An added line (without its `+`), git's `ws_check_emit` with the
/// default rules: blank-at-eol, space-before-tab.
fn added(out: &mut Vec<u8>, line: &[u8]) {
    out.extend_from_slice(NEW);
    out.push(b'+');
    out.extend_from_slice(RESET);
    let (text, nl) = split_nl(line);
    let len = text.len();
    let mut trailing = len;
    while trailing > 0 && space(text[trailing - 1]) {
        trailing -= 1;
    }
    let mut written = 0;
    let mut i = 0;
    while i < trailing {
        match text[i] {
            b' ' => {}
            b'\t' => {
                if written < i {
                    out.extend_from_slice(WS);
                    out.extend_from_slice(&text[written..i]);
                    out.extend_from_slice(RESET);
                    out.push(b'\t');
                } else {
                    out.extend_from_slice(&text[written..=i]);
                }
                written = i + 1;
            }
            _ => break,
        }
        i += 1;
    }
    if trailing > written {
        out.extend_from_slice(NEW);
        out.extend_from_slice(&text[written..trailing]);
        out.extend_from_slice(RESET);
    }
    if trailing != len {
        out.extend_from_slice(WS);
        out.extend_from_slice(&text[trailing..]);
        out.extend_from_slice(RESET);
    }
    out.extend_from_slice(nl);
}

/// Paint the plain text of one change (its `diff --git` sections).
pub(super) fn section(plain: &[u8], eof: Option<(u32, u32)>, out: &mut Vec<u8>) {
    #[derive(PartialEq)]
    enum At {
        Header,
        Hunks,
        Binary,
    }
    let mut at = At::Header;
    let (mut pre, mut post) = (0u32, 0u32);
    for line in plain.split_inclusive(|&b| b == b'\n') {
        if line.starts_with(b"diff --git ") {
            at = At::Header;
        }
        match at {
            At::Header if line.starts_with(b"@@ ") => {
                at = At::Hunks;
                hunk_header(out, line, &mut pre, &mut post);
            }
            At::Header
                if line.starts_with(b"GIT binary patch") || line.starts_with(b"Binary files ") =>
            {
                at = At::Binary;
                out.extend_from_slice(line);
            }
            At::Header => {
                // `--- NAME\t`: git puts the tab after the reset.
                let (text, nl) = split_nl(line);
                let (text, tab) = match text.strip_suffix(b"\t") {
                    Some(t) if text.starts_with(b"--- ") || text.starts_with(b"+++ ") => {
                        (t, &b"\t"[..])
                    }
                    _ => (text, &b""[..]),
                };
                out.extend_from_slice(META);
                out.extend_from_slice(text);
                out.extend_from_slice(RESET);
                out.extend_from_slice(tab);
                out.extend_from_slice(nl);
            }
            At::Binary => out.extend_from_slice(line),
            At::Hunks => match line.first() {
                Some(b'@') => hunk_header(out, line, &mut pre, &mut post),
                Some(b'+') => {
                    post += 1;
                    let body = &line[1..];
                    let at_eof = eof.is_some_and(|(p1, p2)| p1 <= pre && p2 <= post)
                        && blank(split_nl(body).0);
                    if at_eof {
                        whole(out, WS, line);
                    } else {
                        added(out, body);
                    }
                }
                Some(b'-') => {
                    pre += 1;
                    whole(out, OLD, line);
                }
                Some(b' ') => {
                    pre += 1;
                    post += 1;
                    whole(out, b"", line);
                }
                _ => whole(out, b"", line),
            },
        }
    }
}

/// `@@ -a,b +c,d @@ FUNC`: the range cyan, the function name plain.
fn hunk_header(out: &mut Vec<u8>, line: &[u8], pre: &mut u32, post: &mut u32) {
    *pre = lno(line, b'-');
    *post = lno(line, b'+');
    let (text, nl) = split_nl(line);
    let end = text[2..]
        .windows(2)
        .position(|w| w == b"@@")
        .map_or(text.len(), |p| p + 4);
    out.extend_from_slice(FRAG);
    out.extend_from_slice(&text[..end]);
    out.extend_from_slice(RESET);
    let rest = &text[end..];
    let blanks = rest
        .iter()
        .take_while(|&&b| b == b' ' || b == b'\t')
        .count();
    if blanks > 0 {
        out.extend_from_slice(&rest[..blanks]);
        out.extend_from_slice(RESET);
    }
    if blanks < rest.len() {
        out.extend_from_slice(&rest[blanks..]);
        out.extend_from_slice(RESET);
    }
    out.extend_from_slice(nl);
}
