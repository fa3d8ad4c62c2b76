//! Which system config file the user's git reads (design §3.15 "Git's
//! config files"). git decides it when it is built (`$(sysconfdir)/gitconfig`:
//! `/etc/gitconfig` for a git installed in `/usr`, `/usr/local/etc/gitconfig`
//! for one in `/usr/local`), while the git library reads `/etc/gitconfig`
//! wherever git is: a package's `[filter "lfs"]` there would be seen by
//! git-delegate and not by git. So the path comes from git itself (`git var
//! GIT_CONFIG_SYSTEM`, git 2.42 and later), asked once per git binary and
//! kept in `$XDG_CACHE_HOME/git-delegate/system-config` (or
//! `~/.cache/...`), keyed by the binary's identity (device, inode, size,
//! mtime, ctime), so no command starts git on its way: `status` reads one
//! small file. `GIT_CONFIG_NOSYSTEM` and `GIT_CONFIG_SYSTEM` need no question
//! (the library honours both as git does); a git too old to say, or none on
//! PATH, leaves the library's default.
//!
//! Owns: finding the git on PATH, asking it, the cache file.
//! Never: fails a command (every failure here leaves the library's
//! default); writes anything but the cache file; runs git with a
//! repository (it runs in `/`).

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The cache file, below the user's cache folder.
const CACHE: &str = "git-delegate/system-config";

/// At most this many git binaries are remembered (a line each).
const KEEP: usize = 16;

/// The system config file to give the library instead of its default, for
/// this process: `None` when the environment decides (`GIT_CONFIG_NOSYSTEM`
/// or `GIT_CONFIG_SYSTEM` set) or git could not say.
pub fn config_path() -> Option<&'static Path> {
    static PATH: OnceLock<Option<PathBuf>> = OnceLock::new();
    PATH.get_or_init(|| {
        let set = |k: &str| std::env::var_os(k).is_some();
        if set("GIT_CONFIG_NOSYSTEM") || set("GIT_CONFIG_SYSTEM") {
            return None;
        }
        let git = on_path("git")?;
        let meta = std::fs::metadata(&git).ok()?;
        let key = format!(
            "{}:{}:{}:{}.{}:{}.{}",
            meta.dev(),
            meta.ino(),
            meta.size(),
            meta.mtime(),
            meta.mtime_nsec(),
            meta.ctime(),
            meta.ctime_nsec()
        );
        let file = cache_file();
        let text = file
            .as_ref()
            .and_then(|f| std::fs::read(f).ok())
            .unwrap_or_default();
        let answer = match cached(&text, &key) {
            Some(a) => a,
            None => {
                let a = ask(&git)?;
                if let Some(f) = &file {
                    remember(f, &text, &key, &a);
                }
                a
            }
        };
        // An empty answer: git could not say (too old).
        Some(PathBuf::from(OsString::from_vec(answer))).filter(|p| p.is_absolute())
    })
    .as_deref()
}

/// The first executable `name` in PATH, as the shell would start it.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(name))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.mode() & 0o111 != 0))
}

/// `$XDG_CACHE_HOME/git-delegate/system-config`, or `~/.cache/...`.
fn cache_file() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .map(|h| h.join(".cache"))
        })?;
    Some(base.join(CACHE))
}

/// The answer recorded for the git binary `key` in the cache's `text`
/// (lines `KEY\tPATH`).
fn cached(text: &[u8], key: &str) -> Option<Vec<u8>> {
    text.split(|&b| b == b'\n').find_map(|line| {
        let tab = line.iter().position(|&b| b == b'\t')?;
        (&line[..tab] == key.as_bytes()).then(|| line[tab + 1..].to_vec())
    })
}

/// What `git var GIT_CONFIG_SYSTEM` prints, without the environment's
/// say (the path git was built with); empty when git exits non-zero (too
/// old to know the variable). `None` when git could not be started.
fn ask(git: &Path) -> Option<Vec<u8>> {
    let mut cmd = std::process::Command::new(git);
    cmd.args(["var", "GIT_CONFIG_SYSTEM"])
        .current_dir("/")
        .env_remove("GIT_CONFIG_SYSTEM")
        .env_remove("GIT_CONFIG_NOSYSTEM")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let out = cmd.output().ok()?;
    if !out.status.success() {
        return Some(Vec::new());
    }
    let mut answer = out.stdout;
    while answer.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        answer.pop();
    }
    // One line, or nothing we can keep.
    if answer.contains(&b'\n') || answer.contains(&b'\t') {
        return Some(Vec::new());
    }
    Some(answer)
}

/// Record `answer` for `key` in the cache (temp-then-rename), keeping the
/// newest [`KEEP`] lines; a failure only means asking again next time.
fn remember(file: &Path, text: &[u8], key: &str, answer: &[u8]) {
    let mut lines: Vec<&[u8]> = text
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty() && l.split(|&b| b == b'\t').next() != Some(key.as_bytes()))
        .collect();
    let mut mine = key.as_bytes().to_vec();
    mine.push(b'\t');
    mine.extend_from_slice(answer);
    lines.insert(0, &mine);
    lines.truncate(KEEP);
    let mut out = lines.join(&b'\n');
    out.push(b'\n');
    if let Some(dir) = file.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = crate::sys::fs::write_atomic(file, &out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_finds_its_key_and_keeps_the_newest_lines() {
        let text = b"1:2:3:4.5:6.7\t/usr/local/etc/gitconfig\n9:9:9:9.9:9.9\t\n";
        assert_eq!(
            cached(text, "1:2:3:4.5:6.7").as_deref(),
            Some(&b"/usr/local/etc/gitconfig"[..])
        );
        assert_eq!(cached(text, "9:9:9:9.9:9.9").as_deref(), Some(&b""[..]));
        assert_eq!(cached(text, "1:2:3:4.5:6.8"), None);
        assert_eq!(cached(b"", "1"), None);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sub/system-config");
        remember(&file, text, "1:2:3:4.5:6.7", b"/etc/gitconfig");
        let now = std::fs::read(&file).unwrap();
        assert_eq!(
            now,
            b"1:2:3:4.5:6.7\t/etc/gitconfig\n9:9:9:9.9:9.9\t\n".to_vec()
        );
        let many: Vec<u8> = (0..40)
            .flat_map(|i| format!("k{i}\tp\n").into_bytes())
            .collect();
        remember(&file, &many, "new", b"/x");
        let kept = std::fs::read(&file).unwrap();
        assert_eq!(
            kept.split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .count(),
            KEEP
        );
        assert!(kept.starts_with(b"new\t/x\n"));
    }
}
