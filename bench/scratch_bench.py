#!/usr/bin/env python3
"""Benchmark of carrying ignored dependencies and of scratch copies (design §3.9).

Builds a repository with a 1 GiB `node_modules`-like ignored folder (about
20,000 files: many small ones, some large), then times `git delegate prepare
-n 4 --copy-ignored node_modules/` and measures the disk it used:

  - cloned: on an XFS filesystem with reflink (made by scripts/reflink-fs);
  - copied: on the temp folder's filesystem (ext4 here), where FICLONE fails;

next to `prepare -n 4` without carrying, `prepare -n 4 --mode scratch`
(XFS only) and the plain-tool references `cp -a --reflink=always` x4 and
`cp -a` x4 of the same folder (GNU cp uses copy_file_range, which XFS
itself turns into shared extents, so `cp -a` on XFS is a clone too). Disk used is the filesystem's used-block
delta (statvfs, after sync) right after the command, with the batch still
alive. Timing only: it asserts nothing.

Usage (as root for the XFS mount; build the release binary first):
    bench/scratch_bench.py [--reps 3] [--size-mib 1024] [--bin PATH] [--xfs DIR]

Without --xfs it runs scripts/reflink-fs with a 4 GiB image mounted at
/tmp/git-delegate-xfs-bench (and unmounts it at the end). The lead can call
`run(binary, xfs_dir, tmp_dir, reps, size_mib)` from bench/bench.py; it
returns the rows it prints.
"""

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MIB = 1 << 20


def hermetic_env(tmp):
    """The environment of every benchmarked command: a home and a git
    config of their own under `tmp` (an identity, no system config), C
    locale. bench/bench.py's runs share it."""
    home = os.path.join(tmp, "home")
    os.makedirs(home, exist_ok=True)
    cfg = os.path.join(tmp, "gitconfig")
    with open(cfg, "w") as f:
        f.write("[user]\n\tname = Bench\n\temail = bench@example.com\n")
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "XDG_DATA_HOME": os.path.join(home, ".local/share"),
        "GIT_CONFIG_GLOBAL": cfg,
        "GIT_CONFIG_NOSYSTEM": "1",
        "LANG": "C",
    }


def sh(args, cwd, env, check=True):
    start = time.perf_counter()
    p = subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if check and p.returncode != 0:
        raise RuntimeError(f"{args} failed ({p.returncode}): {p.stderr.decode(errors='replace')}")
    return elapsed, p.stdout.decode(errors="replace")


def used_bytes(path):
    os.sync()
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def make_project(parent, env, size_mib, seed=7):
    """A small tracked project plus an ignored node_modules of `size_mib` MiB."""
    repo = os.path.join(parent, "proj")
    os.makedirs(repo)
    sh(["git", "init", "-q", "-b", "main"], repo, env)
    os.makedirs(os.path.join(repo, "src"))
    for i in range(200):
        with open(os.path.join(repo, "src", f"m{i}.js"), "w") as f:
            f.write(f"export const v{i} = {i};\n" * 20)
    with open(os.path.join(repo, ".gitignore"), "w") as f:
        f.write("node_modules/\n")
    sh(["git", "add", "-A"], repo, env)
    sh(["git", "commit", "-q", "-m", "init"], repo, env)
    rng = random.Random(seed)
    blob = os.urandom(4 * MIB)
    target = size_mib * MIB
    written = 0
    n = 0
    nm = os.path.join(repo, "node_modules")
    while written < target:
        pkg = os.path.join(nm, f"pkg{n // 40:04d}", "lib" if n % 3 else "dist")
        os.makedirs(pkg, exist_ok=True)
        # Mostly small files, one in ten large, as in real dependency trees.
        size = rng.randint(200, 16 * 1024) if n % 10 else rng.randint(64 * 1024, 900 * 1024)
        size = min(size, target - written)
        off = rng.randint(0, len(blob) - size)
        with open(os.path.join(pkg, f"f{n}.js"), "wb") as f:
            f.write(n.to_bytes(8, "little"))
            f.write(blob[off : off + size - 8] if size > 8 else b"")
        written += max(size, 8)
        n += 1
        if n % 40 == 0:
            os.makedirs(os.path.join(nm, f"pkg{n // 40:04d}", ".bin"), exist_ok=True)
    os.sync()
    return repo, n, written


def measure(reps, fs_path, cmd, cleanup):
    """Run `cmd` reps times; return (median seconds, median bytes used)."""
    times, used = [], []
    for _ in range(reps):
        before = used_bytes(fs_path)
        t = cmd()
        used.append(used_bytes(fs_path) - before)
        times.append(t)
        cleanup()
    return statistics.median(times), statistics.median(used)


def bench_fs(label, base, binary, reps, size_mib, with_scratch):
    """All measurements on one filesystem (the folder `base` lives on)."""
    tmp = tempfile.mkdtemp(prefix="gd-scratch-bench-", dir=base)
    rows = []
    try:
        env = hermetic_env(tmp)
        env["XDG_DATA_HOME"] = os.path.join(tmp, "ws")  # workspaces on the same filesystem
        repo, files, total = make_project(tmp, env, size_mib)

        def drop_all():
            _, out = sh([binary, "status", "--json"], repo, env)
            import json

            for b in json.loads(out)["batches"]:
                sh([binary, "drop", b["batch"], "--force"], repo, env)

        def prepare(*extra):
            def go():
                t, _ = sh([binary, "prepare", "-n", "4", *extra, "--json"], repo, env)
                return t

            return go

        rows.append((f"prepare -n 4, no carrying ({label})",)
                    + measure(reps, tmp, prepare(), drop_all))
        how = "cloned" if with_scratch else "copied"
        rows.append((f"prepare -n 4 --copy-ignored node_modules/ ({how}, {label})",)
                    + measure(reps, tmp, prepare("--copy-ignored", "node_modules/"), drop_all))
        if with_scratch:
            rows.append((f"prepare -n 4 --mode scratch ({label})",)
                        + measure(reps, tmp, prepare("--mode", "scratch"), drop_all))
        cp_dir = os.path.join(tmp, "cp")

        def cp(*flags):
            def go():
                os.makedirs(cp_dir, exist_ok=True)
                start = time.perf_counter()
                for i in range(4):
                    sh(["cp", "-a", *flags, os.path.join(repo, "node_modules"), os.path.join(cp_dir, str(i))], tmp, env)
                return time.perf_counter() - start

            return go

        def rm_cp():
            shutil.rmtree(cp_dir, ignore_errors=True)

        if with_scratch:
            rows.append((f"cp -a --reflink=always node_modules x4 ({label})",)
                        + measure(reps, tmp, cp("--reflink=always"), rm_cp))
        rows.append((f"cp -a node_modules x4 ({label})",) + measure(reps, tmp, cp(), rm_cp))
        return rows, files, total
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def fstype(path):
    p = subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "--target", path], stdout=subprocess.PIPE)
    return p.stdout.decode().strip() or "unknown fs"


def fmt_bytes(b):
    for unit in ["B", "KiB", "MiB", "GiB"]:
        if abs(b) < 1024 or unit == "GiB":
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.1f} {unit}"
        b /= 1024


def run(binary, xfs_dir, tmp_dir, reps=3, size_mib=1024):
    rows = []
    info = None
    if xfs_dir:
        r, files, total = bench_fs(f"{fstype(xfs_dir)}, reflink", xfs_dir, binary, reps, size_mib, True)
        rows += r
        info = (files, total)
    r, files, total = bench_fs(fstype(tmp_dir), tmp_dir, binary, reps, size_mib, False)
    rows += r
    info = info or (files, total)
    print(f"\nprepare -n 4 with a node_modules of {fmt_bytes(info[1])} in {info[0]} files "
          f"(median of {reps}; disk = used-block delta with the batch alive)")
    width = max(len(r[0]) for r in rows)
    print(f"{'':<{width}}  {'time':>9}  {'disk used':>10}")
    for name, t, used in rows:
        print(f"{name:<{width}}  {t:>8.2f}s  {fmt_bytes(used):>10}")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/git-delegate"))
    ap.add_argument("--xfs", help="a folder on an XFS (reflink=1) filesystem; default: mount one with scripts/reflink-fs")
    ap.add_argument("--tmp", default=tempfile.gettempdir(), help="a folder on a filesystem without reflink (default: the temp folder)")
    args = ap.parse_args()
    if not os.path.exists(args.bin):
        sys.exit(f"{args.bin} not found: run `cargo build --release` first")
    xfs = args.xfs
    mounted = False
    if not xfs:
        env = dict(os.environ,
                   GIT_DELEGATE_XFS_MOUNT="/tmp/git-delegate-xfs-bench",
                   GIT_DELEGATE_XFS_IMAGE="/var/tmp/git-delegate-xfs-bench.img",
                   GIT_DELEGATE_XFS_SIZE=f"{max(4096, args.size_mib * 3)}M")
        p = subprocess.run([os.path.join(ROOT, "scripts/reflink-fs")], env=env, stdout=subprocess.PIPE)
        if p.returncode == 0:
            xfs = p.stdout.decode().strip()
            mounted = True
        else:
            print("SKIPPED: no reflink filesystem for the cloned figures (scripts/reflink-fs failed; run as root)",
                  file=sys.stderr)
    try:
        run(args.bin, xfs, args.tmp, args.reps, args.size_mib)
    finally:
        if mounted:
            subprocess.run([os.path.join(ROOT, "scripts/reflink-fs"), "--unmount"], env=env)


if __name__ == "__main__":
    main()
