//! The benchmark's floor: what the kernel costs to write the files of a
//! checkout, with nothing else done. Reads the NUL-separated relative paths
//! on stdin and the bytes of each from SOURCE (all before the clock starts),
//! then writes `TREES` copies under DEST (`DEST/0`, `DEST/1`, ...), one tree
//! per thread, `THREADS` at once: folders as needed, every file created
//! (`O_EXCL`), written and closed, as a checkout does. Prints the seconds.
//!
//! Built by bench/bench.py with `rustc -O`; no crates.
//!
//! Usage: floor SOURCE DEST TREES THREADS < paths

use std::collections::HashSet;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [source, dest, trees, threads] = &args[..] else {
        eprintln!("usage: floor SOURCE DEST TREES THREADS < paths");
        std::process::exit(2);
    };
    let (trees, threads): (usize, usize) = match (trees.parse(), threads.parse()) {
        (Ok(t), Ok(n)) if t > 0 && n > 0 => (t, n),
        _ => {
            eprintln!("floor: TREES and THREADS are positive numbers");
            std::process::exit(2);
        }
    };
    let mut list = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut list) {
        eprintln!("floor: cannot read the paths: {e}");
        std::process::exit(2);
    }
    let files: Vec<(PathBuf, Vec<u8>)> = list
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| {
            let rel = PathBuf::from(std::ffi::OsStr::from_bytes(p));
            let data = std::fs::read(Path::new(source).join(&rel)).unwrap_or_default();
            (rel, data)
        })
        .collect();
    let next = AtomicUsize::new(0);
    let start = Instant::now();
    let failed = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads.min(trees))
            .map(|_| {
                s.spawn(|| -> std::io::Result<()> {
                    loop {
                        let tree = next.fetch_add(1, Ordering::Relaxed);
                        if tree >= trees {
                            return Ok(());
                        }
                        write_tree(&Path::new(dest).join(tree.to_string()), &files)?;
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|h| h.join().ok().and_then(|r| r.err()))
            .next()
    });
    let secs = start.elapsed().as_secs_f64();
    if let Some(e) = failed {
        eprintln!("floor: {e}");
        std::process::exit(1);
    }
    println!("{secs:.9}");
}

fn write_tree(root: &Path, files: &[(PathBuf, Vec<u8>)]) -> std::io::Result<()> {
    let mut made: HashSet<&Path> = HashSet::new();
    for (rel, data) in files {
        if let Some(dir) = rel.parent() {
            if !made.contains(dir) {
                std::fs::create_dir_all(root.join(dir))?;
                made.insert(dir);
            }
        }
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(root.join(rel))?;
        f.write_all(data)?;
    }
    Ok(())
}
