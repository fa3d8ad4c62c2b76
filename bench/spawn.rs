//! The benchmark's process runner: runs one command with its output
//! discarded and prints `<seconds> <peak RSS in KiB> <exit code>`.
//!
//! Why not Python's own fork: Linux carries a process's peak RSS across
//! `exec` (the `maxrss` of its signal struct takes the old address space's
//! high-water mark), so a command forked from the benchmark's big Python
//! process reports at least Python's RSS. Forked from this small program,
//! it reports its own.
//!
//! Built by bench/bench.py with `rustc -O` (Linux, 64-bit); no crates.

use std::process::{Command, Stdio};
use std::time::Instant;

extern "C" {
    /// `struct rusage` is two `timeval`s and 14 `long`s on 64-bit Linux.
    fn wait4(pid: i32, status: *mut i32, options: i32, rusage: *mut [i64; 18]) -> i32;
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((program, rest)) = args.split_first() else {
        eprintln!("usage: spawn COMMAND [ARGS...]");
        std::process::exit(2);
    };
    let start = Instant::now();
    let child = match Command::new(program)
        .args(rest)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("spawn: cannot run {program}: {e}");
            std::process::exit(127);
        }
    };
    let mut status = 0i32;
    let mut usage = [0i64; 18];
    // SAFETY: a plain syscall wrapper with valid pointers to locals.
    let pid = unsafe { wait4(child.id() as i32, &mut status, 0, &mut usage) };
    let elapsed = start.elapsed().as_secs_f64();
    if pid < 0 {
        eprintln!("spawn: wait4 failed");
        std::process::exit(127);
    }
    // WIFEXITED / WEXITSTATUS, else 128 + signal.
    let code = if status & 0x7f == 0 {
        (status >> 8) & 0xff
    } else {
        128 + (status & 0x7f)
    };
    println!("{elapsed:.9} {} {code}", usage[4]);
}
