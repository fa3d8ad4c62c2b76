//! The test filesystems, each named by a variable that `.ci/run` exports
//! (the scripts mount them, as root): a real reflink filesystem
//! (`GIT_DELEGATE_REFLINK_DIR`, `scripts/reflink-fs`) and one without
//! reflink, btrfs (`GIT_DELEGATE_BTRFS_DIR`, `scripts/btrfs-fs`), and the
//! small tmpfs that tests fill up (`GIT_DELEGATE_SMALL_FS_DIR`,
//! `scripts/small-fs`; `GIT_DELEGATE_FEW_INODES_DIR`, `scripts/small-fs
//! --inodes`); plus checks on what is left beside a source. A test that
//! cannot run without its filesystem says SKIPPED loudly (`skip`), and fails
//! under `CI=true`.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard};

use crate::common::Env;

/// Say loudly that a test could not run; under CI (`CI=true`) that is a failure.
pub fn skip(test: &str, why: &str) {
    let line = format!("SKIPPED: {test}: {why}\n");
    // Straight to fd 2: the test harness does not capture it.
    let _ = std::io::stderr().write_all(line.as_bytes());
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{}", line.trim_end());
    }
}

/// An `Env` whose temp folder lies inside `dir`.
pub fn env_in(dir: &Path) -> Env {
    let tmp = tempfile::Builder::new()
        .prefix("gd-test-")
        .tempdir_in(dir)
        .expect("tempdir");
    std::fs::create_dir_all(tmp.path().join("home")).unwrap();
    std::fs::write(tmp.path().join("gitconfig"), "").unwrap();
    Env { tmp }
}

/// Can `dir` clone files (`cp --reflink=always` succeeds there)?
pub fn can_reflink(dir: &Path) -> bool {
    let probe = tempfile::Builder::new()
        .prefix("gd-reflink-probe-")
        .tempdir_in(dir);
    let Ok(probe) = probe else { return false };
    let a = probe.path().join("a");
    if std::fs::write(&a, vec![7u8; 8192]).is_err() {
        return false;
    }
    Command::new("cp")
        .arg("--reflink=always")
        .arg(&a)
        .arg(probe.path().join("b"))
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The folder the variable `var` names (a `what` filesystem that
/// `scripts/SCRIPT` mounts), or `None` after saying SKIPPED.
fn mounted_dir(test: &str, what: &str, var: &str, script: &str) -> Option<PathBuf> {
    let Some(dir) = std::env::var_os(var).filter(|d| !d.is_empty()) else {
        skip(
            test,
            &format!("no {what} filesystem ({var} is not set; run `export {var}=$(scripts/{script})` as root)"),
        );
        return None;
    };
    Some(PathBuf::from(dir))
}

/// An `Env` on the reflink filesystem, or `None` after saying SKIPPED.
pub fn reflink_env(test: &str) -> Option<Env> {
    let dir = mounted_dir(test, "reflink", "GIT_DELEGATE_REFLINK_DIR", "reflink-fs")?;
    if !can_reflink(&dir) {
        skip(
            test,
            &format!(
                "no reflink filesystem ({} cannot clone files)",
                dir.display()
            ),
        );
        return None;
    }
    Some(env_in(&dir))
}

/// An `Env` on a filesystem that cannot clone (the temp folder, else /dev/shm).
pub fn no_reflink_env(test: &str) -> Option<Env> {
    for dir in [std::env::temp_dir(), PathBuf::from("/dev/shm")] {
        if dir.is_dir() && !can_reflink(&dir) {
            return Some(env_in(&dir));
        }
    }
    skip(test, "no filesystem without reflink support found");
    None
}

/// An `Env` on the btrfs filesystem, or `None` after saying SKIPPED.
pub fn btrfs_env(test: &str) -> Option<Env> {
    let dir = mounted_dir(test, "btrfs", "GIT_DELEGATE_BTRFS_DIR", "btrfs-fs")?;
    let fstype = Command::new("stat")
        .args(["-f", "-c", "%T"])
        .arg(&dir)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    if fstype != "btrfs" {
        skip(
            test,
            &format!("{} is not on btrfs ({fstype:?})", dir.display()),
        );
        return None;
    }
    Some(env_in(&dir))
}

/// The small filesystems are shared by every test that fills one: one such
/// test runs at a time in this process (`Small` holds the lock from before
/// it makes its folder until its filling is gone).
static FULL: Mutex<()> = Mutex::new(());

/// A folder of this test's own on a small filesystem (named by a variable),
/// removed on drop with whatever filled the filesystem; while it lives, no
/// other test fills a small filesystem.
pub struct Small {
    dir: tempfile::TempDir,
    /// What `fill` writes (a file) or `use_inodes` makes (a folder).
    pub fill: PathBuf,
    // Last, so it is released after the folder is gone (fields drop in order).
    _one_at_a_time: MutexGuard<'static, ()>,
}

impl Small {
    /// On the small tmpfs (`GIT_DELEGATE_SMALL_FS_DIR`), to fill with data.
    pub fn full_disk(test: &str) -> Option<Small> {
        Small::new(test, "GIT_DELEGATE_SMALL_FS_DIR", "scripts/small-fs")
    }

    /// On the tmpfs with few inodes (`GIT_DELEGATE_FEW_INODES_DIR`).
    pub fn few_inodes(test: &str) -> Option<Small> {
        Small::new(
            test,
            "GIT_DELEGATE_FEW_INODES_DIR",
            "scripts/small-fs --inodes",
        )
    }

    /// On the filesystem named by `var`, which `script` mounts.
    pub fn new(test: &str, var: &str, script: &str) -> Option<Small> {
        let Some(base) = std::env::var_os(var).filter(|d| !d.is_empty()) else {
            skip(
                test,
                &format!("no small filesystem ({var} is not set; run `export {var}=$({script})` as root)"),
            );
            return None;
        };
        let base = PathBuf::from(base);
        let one_at_a_time = FULL.lock().unwrap_or_else(|e| e.into_inner());
        let Ok(dir) = tempfile::Builder::new()
            .prefix("gd-small-")
            .tempdir_in(&base)
        else {
            skip(test, &format!("cannot write in {}", base.display()));
            return None;
        };
        let fill = dir.path().join("fill");
        Some(Small {
            dir,
            fill,
            _one_at_a_time: one_at_a_time,
        })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fill the filesystem up, then give back `leave` bytes.
    pub fn fill(&self, leave: u64) {
        let mut f = std::fs::File::create(&self.fill).unwrap();
        let chunk = vec![0x5au8; 64 << 10];
        let mut written: u64 = 0;
        loop {
            match f.write(&chunk) {
                Ok(0) => break,
                Ok(n) => written += n as u64,
                Err(e) if e.raw_os_error() == Some(28) => break,
                Err(e) => panic!("filling {}: {e}", self.fill.display()),
            }
        }
        let _ = f.flush();
        f.set_len(written.saturating_sub(leave)).unwrap();
        f.sync_all().unwrap();
    }

    /// Use up every inode (empty files in `fill/`), then give back `leave`.
    pub fn use_inodes(&self, leave: usize) {
        std::fs::create_dir(&self.fill).unwrap();
        let mut made = Vec::new();
        for i in 0.. {
            let p = self.fill.join(i.to_string());
            match std::fs::File::create(&p) {
                Ok(_) => made.push(p),
                Err(e) if e.raw_os_error() == Some(28) => break,
                Err(e) => panic!("using up inodes in {}: {e}", self.fill.display()),
            }
        }
        for p in made.iter().rev().take(leave) {
            std::fs::remove_file(p).unwrap();
        }
    }

    /// Give back what `fill` or `use_inodes` took.
    pub fn unfill(&self) {
        let _ = std::fs::remove_file(&self.fill);
        let _ = std::fs::remove_dir_all(&self.fill);
    }
}

impl Drop for Small {
    fn drop(&mut self) {
        self.unfill();
    }
}

/// `.git-delegate-scratch-*` folders in `dir`.
pub fn scratch_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(".git-delegate-scratch-")
        })
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// A tmpfs mounted at the folder it holds, unmounted (lazily) when
/// dropped. The crash test is about process death, not power loss: on
/// tmpfs the fsyncs cost nothing, which keeps it fast on a loaded machine.
pub struct Tmpfs(pub PathBuf);

impl Tmpfs {
    /// Mount a tmpfs of `size` (`mount -o size=`) at `at`, made first;
    /// none where this machine cannot.
    pub fn try_new(at: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(at).unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Tmpfs(at.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

/// Everything under `dir`, as sorted relative paths (for "nothing left behind").
pub fn tree_listing(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = crate::common::fixtures::listing(dir)
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    out.sort();
    out
}

/// Does `filefrag -v` report a shared extent for `file`?
pub fn shares_extents(file: &Path) -> bool {
    let filefrag = ["/usr/sbin/filefrag", "/sbin/filefrag"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap_or("filefrag");
    let out = Command::new(filefrag)
        .arg("-v")
        .arg(file)
        .output()
        .expect("filefrag (e2fsprogs) is needed by this test");
    String::from_utf8_lossy(&out.stdout).contains("shared")
}

/// The mode bits of a file (no symlink following).
pub fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

/// A repository with a `.gitignore` for node_modules/, *.env, build/ and
/// some ignored content: node_modules/pkg/{index.js,big.bin,run.sh(+x)},
/// node_modules/.bin/tool -> ../pkg/run.sh, .env, sub/dev.env, prod.env,
/// build/out.o; plus an untracked file.
pub fn project_with_ignored(env: &Env, name: &str) -> PathBuf {
    let repo = env.repo(name);
    std::fs::write(repo.join(".gitignore"), "node_modules/\n*.env\nbuild/\n").unwrap();
    std::fs::create_dir_all(repo.join("sub")).unwrap();
    std::fs::write(repo.join("sub/code.txt"), "code\n").unwrap();
    env.git(&repo, ["add", ".gitignore", "sub/code.txt"]);
    env.git(&repo, ["commit", "-q", "-m", "ignore rules"]);
    std::fs::create_dir_all(repo.join("node_modules/pkg")).unwrap();
    std::fs::create_dir_all(repo.join("node_modules/.bin")).unwrap();
    std::fs::create_dir_all(repo.join("build")).unwrap();
    std::fs::write(
        repo.join("node_modules/pkg/index.js"),
        "module.exports = 1;\n",
    )
    .unwrap();
    let big: Vec<u8> = (0..262_144u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(repo.join("node_modules/pkg/big.bin"), &big).unwrap();
    std::fs::write(
        repo.join("node_modules/pkg/run.sh"),
        "#!/bin/sh\necho run\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            repo.join("node_modules/pkg/run.sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
    }
    std::os::unix::fs::symlink("../pkg/run.sh", repo.join("node_modules/.bin/tool")).unwrap();
    std::fs::write(repo.join(".env"), "TOKEN=dev\n").unwrap();
    std::fs::write(repo.join("prod.env"), "TOKEN=prod\n").unwrap();
    std::fs::write(repo.join("sub/dev.env"), "SUB=1\n").unwrap();
    std::fs::write(repo.join("build/out.o"), "object\n").unwrap();
    std::fs::write(repo.join("untracked.txt"), "untracked\n").unwrap();
    repo
}
