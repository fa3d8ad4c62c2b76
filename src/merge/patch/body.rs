//! The content part of a patch, as `git diff` writes it: text hunks (with
//! their function lines) or a binary patch (`literal`, deflated and
//! base85-encoded).
//!
//! Owns: the hunks and the binary encoding.
//! Never: reads an object (the caller gives the bytes).

use super::*;

pub(super) fn is_binary(data: &[u8]) -> bool {
    data[..data.len().min(FIRST_FEW_BYTES)].contains(&0)
}

/// The content part: text hunks or a binary patch (with `binary`, as
/// `--binary` writes it; else git's `Binary files` line). `None` is
/// /dev/null.
pub(super) fn body(
    out: &mut Vec<u8>,
    path: &[u8],
    old: Option<&[u8]>,
    new: Option<&[u8]>,
    binary: bool,
) {
    let o = old.unwrap_or(b"");
    let n = new.unwrap_or(b"");
    if (is_binary(o) || is_binary(n)) && !binary {
        by_id(out, path, old.is_some(), new.is_some());
        return;
    }
    if is_binary(o) || is_binary(n) {
        out.extend_from_slice(b"GIT binary patch\n");
        literal(out, n);
        literal(out, o);
        return;
    }
    let label = |prefix: &[u8], present: bool| -> Vec<u8> {
        let mut l = if present {
            quote_prefixed(prefix, path)
        } else {
            b"/dev/null".to_vec()
        };
        if l.contains(&b' ') {
            l.push(b'\t');
        }
        l
    };
    out.extend_from_slice(b"--- ");
    out.extend_from_slice(&label(b"a/", old.is_some()));
    out.extend_from_slice(b"\n+++ ");
    out.extend_from_slice(&label(b"b/", new.is_some()));
    out.push(b'\n');
    hunks(out, o, n);
}

/// Unified hunks with `CONTEXT` lines of context, as git prints them
/// (including the default function-name heuristic in the `@@` line).
pub(super) fn hunks(out: &mut Vec<u8>, old: &[u8], new: &[u8]) {
    use gix::diff::blob::{Algorithm, Diff, InternedInput};
    let input = InternedInput::new(old, new);
    let mut d = Diff::compute(Algorithm::Myers, &input);
    d.postprocess_lines(&input);
    let before: Vec<&[u8]> = input.before.iter().map(|&t| input.interner[t]).collect();
    let after: Vec<&[u8]> = input.after.iter().map(|&t| input.interner[t]).collect();
    let changes: Vec<gix::diff::blob::Hunk> = d.hunks().collect();

    let mut i = 0;
    while i < changes.len() {
        let mut j = i;
        while j + 1 < changes.len()
            && changes[j + 1].before.start - changes[j].before.end <= 2 * CONTEXT
        {
            j += 1;
        }
        let lead = CONTEXT.min(changes[i].before.start);
        let b_start = changes[i].before.start - lead;
        let a_start = changes[i].after.start - lead;
        let b_end = (changes[j].before.end + CONTEXT).min(before.len() as u32);
        let trail = b_end - changes[j].before.end;
        let a_end = changes[j].after.end + trail;

        let range = |start: u32, len: u32| -> String {
            match len {
                0 => format!("{start},0"),
                1 => format!("{}", start + 1),
                n => format!("{},{n}", start + 1),
            }
        };
        let _ = write!(
            out,
            "@@ -{} +{} @@",
            range(b_start, b_end - b_start),
            range(a_start, a_end - a_start)
        );
        if let Some(func) = function_line(&before[..b_start as usize]) {
            out.push(b' ');
            out.extend_from_slice(func);
        }
        out.push(b'\n');

        let mut cursor = b_start;
        for h in &changes[i..=j] {
            for line in &before[cursor as usize..h.before.start as usize] {
                emit_line(out, b' ', line);
            }
            for line in &before[h.before.start as usize..h.before.end as usize] {
                emit_line(out, b'-', line);
            }
            for line in &after[h.after.start as usize..h.after.end as usize] {
                emit_line(out, b'+', line);
            }
            cursor = h.before.end;
        }
        for line in &before[cursor as usize..b_end as usize] {
            emit_line(out, b' ', line);
        }
        i = j + 1;
    }
}

pub(super) fn emit_line(out: &mut Vec<u8>, prefix: u8, line: &[u8]) {
    out.push(prefix);
    out.extend_from_slice(line);
    if !line.ends_with(b"\n") {
        out.extend_from_slice(b"\n\\ No newline at end of file\n");
    }
}

/// git's default function-name line: the last line above the hunk that
/// starts with a letter, `_` or `$`, cut to 80 bytes, trailing space trimmed.
pub(super) fn function_line<'a>(above: &[&'a [u8]]) -> Option<&'a [u8]> {
    let line = above.iter().rev().find(|l| {
        l.first()
            .is_some_and(|&c| c.is_ascii_alphabetic() || c == b'_' || c == b'$')
    })?;
    let mut l = &line[..line.len().min(80)];
    while let Some((&last, rest)) = l.split_last() {
        if last.is_ascii_whitespace() {
            l = rest;
        } else {
            break;
        }
    }
    Some(l)
}

/// One `literal` block of a binary patch: zlib-deflated, base85 lines.
pub(super) fn literal(out: &mut Vec<u8>, data: &[u8]) {
    let _ = writeln!(out, "literal {}", data.len());
    let compressed = deflate(data);
    for chunk in compressed.chunks(52) {
        let n = chunk.len() as u8;
        out.push(if n <= 26 { b'A' + n - 1 } else { b'a' + n - 27 });
        encode_85(out, chunk);
        out.push(b'\n');
    }
    out.push(b'\n');
}

/// Level 1, as git deflates binary patches (its `zlib_compression_level`
/// defaults to `Z_BEST_SPEED`): the literal blocks are then byte-equal to
/// git's, so `diff` prints what `git diff --binary` prints.
pub(super) fn deflate(data: &[u8]) -> Vec<u8> {
    let mut w =
        gix::zlib::stream::deflate::Write::new(Vec::new(), gix::zlib::Compression::BEST_SPEED);
    // Writing into a Vec cannot fail.
    let _ = w.write_all(data);
    let _ = w.flush();
    w.into_inner()
}

pub(super) const EN85: &[u8; 85] =
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";

/// git's base85: each group of 4 bytes (zero-padded) as 5 characters.
pub(super) fn encode_85(out: &mut Vec<u8>, data: &[u8]) {
    for group in data.chunks(4) {
        let mut acc: u32 = 0;
        for (i, &b) in group.iter().enumerate() {
            acc |= (b as u32) << (24 - 8 * i);
        }
        let mut buf = [0u8; 5];
        for slot in buf.iter_mut().rev() {
            *slot = EN85[(acc % 85) as usize];
            acc /= 85;
        }
        out.extend_from_slice(&buf);
    }
}
