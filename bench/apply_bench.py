#!/usr/bin/env python3
"""Benchmark of `git delegate apply` (issue 6's apply rows, SPEC §8).

Rows, measured side by side in one run:

  - `apply` of 4 tasks x 10 changed files against 4 x `git status
    --porcelain` (one in each workspace, sequential, warm), per repository
    size, and how both grow from the smallest to the largest size;
  - peak RSS of `apply` with one big changed file (default 1 GiB of random
    bytes): a task that adds it, and a task that rewrites 4 KiB in the middle
    of one that is already in the baseline. Target: <= 0.1x the file size.

Each round prepares a fresh batch of 4 tasks, has each task append a line to
10 files (40 distinct files), flushes the dirty data (`sync`, as the
minutes a worker takes would), times the 4 `git status` runs in the
workspaces (after one unmeasured warm-up pass), then times `apply`; the
source's 40 files are restored afterwards. Workspaces of applied tasks are
deleted in the background after apply returns: the round waits for that
(not timed, printed as "background removal") so rounds do not overlap.

Usage (build the release binary first):
    bench/apply_bench.py [--sizes 1000,10000,100000] [--reps 5] [--big-mib 1024]
                         [--bin PATH] [--keep DIR]

`--big-mib 0` skips the big-file rows. `--keep DIR` builds the repositories in
DIR and reuses them on the next run. Everything runs with a hermetic git
config and HOME inside the temp folder. Timing only: it asserts nothing.
"""

import argparse
import json
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


class Runner:
    def __init__(self, tmp, binary):
        self.tmp = tmp
        self.bin = binary
        home = os.path.join(tmp, "home")
        os.makedirs(home, exist_ok=True)
        cfg = os.path.join(tmp, "gitconfig")
        with open(cfg, "w") as f:
            f.write("[user]\n\tname = Bench\n\temail = bench@example.com\n")
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": home,
            "XDG_DATA_HOME": os.path.join(home, ".local/share"),
            "GIT_CONFIG_GLOBAL": cfg,
            "GIT_CONFIG_NOSYSTEM": "1",
            "LANG": "C",
        }
        self.trash_root = os.path.join(home, ".local/share/git-delegate/worktrees")

    def run(self, args, cwd, check=True):
        """Run a command; return (seconds, stdout)."""
        start = time.perf_counter()
        p = subprocess.Popen(args, cwd=cwd, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = p.communicate()
        elapsed = time.perf_counter() - start
        if check and p.returncode != 0:
            raise RuntimeError(f"{args} failed ({p.returncode}): {err.decode(errors='replace')}")
        return elapsed, out.decode(errors="replace")

    def timed_rss(self, args, cwd):
        """Run a command with stdout/stderr to /dev/null; (seconds, peak RSS KiB)."""
        start = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            try:
                os.chdir(cwd)
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                os.dup2(devnull, 2)
                os.execvpe(args[0], args, self.env)
            finally:
                os._exit(127)
        _, status, usage = os.wait4(pid, 0)
        elapsed = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            raise RuntimeError(f"{args} failed with {code}")
        return elapsed, usage.ru_maxrss

    def git(self, cwd, *args):
        return self.run(["git", *args], cwd)[1]

    def delegate(self, cwd, *args):
        return self.run([self.bin, *args], cwd)[1]

    def wait_trash(self, timeout=600):
        """Wait until no `.trash` folder under the workspace root holds anything."""
        start = time.perf_counter()
        while time.perf_counter() - start < timeout:
            busy = False
            if os.path.isdir(self.trash_root):
                for repo in os.listdir(self.trash_root):
                    t = os.path.join(self.trash_root, repo, ".trash")
                    if os.path.isdir(t) and os.listdir(t):
                        busy = True
            if not busy:
                return time.perf_counter() - start
            time.sleep(0.05)
        return float("nan")


def make_repo(r, path, n):
    """A deterministic repository of n files (as bench/bench.py makes them)."""
    marker = os.path.join(path, ".git", "apply-bench-built")
    if os.path.exists(marker):
        return sorted(r.git(path, "ls-files", "-z").split("\0")[:-1])
    if os.path.exists(path):
        shutil.rmtree(path)
    rng = random.Random(n)
    os.makedirs(path)
    r.git(path, "init", "-q", "-b", "main")
    files = []
    per_dir = 100
    for i in range(n):
        d = os.path.join(path, f"d{i // per_dir // 50:03d}", f"s{i // per_dir % 50:02d}")
        os.makedirs(d, exist_ok=True)
        name = os.path.join(d, f"f{i:06d}.txt")
        size = rng.choice([60, 200, 800, 2000, 6000])
        with open(name, "w") as f:
            line = f"file {i} line\n"
            f.write(line * (size // len(line) + 1))
        files.append(os.path.relpath(name, path))
    for j in range(3):
        with open(os.path.join(path, f"blob{j}.bin"), "wb") as f:
            f.write(random.Random(j).randbytes(2 * MIB))
    with open(os.path.join(path, ".gitignore"), "w") as f:
        f.write("node_modules/\n")
    r.git(path, "add", "-A")
    r.git(path, "commit", "-q", "-m", "init")
    nm = os.path.join(path, "node_modules")
    for i in range(max(n // 10, 10)):
        d = os.path.join(nm, f"pkg{i // 100}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"m{i}.js"), "w") as f:
            f.write("module.exports = 1;\n")
    for rel in random.Random(n + 1).sample(files, 10):
        with open(os.path.join(path, rel), "a") as f:
            f.write("dirty\n")
    for i in range(10):
        with open(os.path.join(path, f"untracked{i}.txt"), "w") as f:
            f.write("new\n")
    r.git(path, "status", "--porcelain")
    open(marker, "w").close()
    return sorted(files)


def prepare(r, repo, n_tasks=4):
    d = json.loads(r.delegate(repo, "prepare", "-n", str(n_tasks), "--label", "apply-bench", "--json"))
    return [t["root"] for t in d["tasks"]]


def bench_apply(r, repo, n, files, reps, rng):
    """Medians of apply and of 4x git status over reps rounds (plus one warm-up)."""
    apply_t, status_t, rss_max, bg = [], [], 0, []
    for k in range(reps + 1):
        roots = prepare(r, repo)
        picks = rng.sample([f for f in files if f.endswith(".txt")], 40)
        originals = {}
        for rel in picks:
            with open(os.path.join(repo, rel), "rb") as f:
                originals[rel] = f.read()
        for t, root in enumerate(roots):
            for rel in picks[t * 10:(t + 1) * 10]:
                with open(os.path.join(root, rel), "a") as f:
                    f.write(f"task {t} round {k}\n")
        # Workers take minutes, in which the kernel writes their files out:
        # flush prepare's and the edits' dirty data now (not timed), or
        # apply's first fsync would pay for writing out four checkouts.
        os.sync()
        for root in roots:  # warm-up pass, not timed
            r.run(["git", "status", "--porcelain"], root)
        start = time.perf_counter()
        for root in roots:
            r.run(["git", "status", "--porcelain"], root)
        ref = time.perf_counter() - start
        t_apply, rss = r.timed_rss([r.bin, "apply", "apply-bench"], repo)
        waited = r.wait_trash()
        for rel, data in originals.items():
            with open(os.path.join(repo, rel), "wb") as f:
                f.write(data)
        r.git(repo, "status", "--porcelain")
        if k == 0:
            continue
        apply_t.append(t_apply)
        status_t.append(ref)
        rss_max = max(rss_max, rss)
        bg.append(waited)
        print(f"#   {n} files round {k}: apply {t_apply * 1000:.0f} ms, 4x git status {ref * 1000:.0f} ms, "
              f"background removal {waited * 1000:.0f} ms after", file=sys.stderr)
    return statistics.median(apply_t), statistics.median(status_t), rss_max, statistics.median(bg)


def big_file(path, mib):
    subprocess.run(["head", "-c", f"{mib}M", "/dev/urandom"], stdout=open(path, "wb"), check=True)


def bench_big(r, tmp, mib):
    """Peak RSS of apply with one big changed file: added, then modified."""
    repo = os.path.join(tmp, "repo-big")
    files = make_repo(r, repo, 1000)
    rows = []
    # Added by the task.
    [root] = prepare(r, repo, 1)
    big_file(os.path.join(root, "big.bin"), mib)
    t, rss = r.timed_rss([r.bin, "apply", "apply-bench"], repo)
    r.wait_trash()
    rows.append((f"apply, task adds a {mib} MiB file", t, rss))
    # Modified by the task (4 KiB in the middle of a file of the baseline).
    [root] = prepare(r, repo, 1)
    target = os.path.join(root, "big.bin")
    with open(target, "r+b") as f:
        f.seek(mib * MIB // 2)
        f.write(os.urandom(4096))
    t, rss = r.timed_rss([r.bin, "apply", "apply-bench"], repo)
    r.wait_trash()
    rows.append((f"apply, task rewrites 4 KiB of a {mib} MiB file", t, rss))
    os.remove(os.path.join(repo, "big.bin"))
    del files
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--big-mib", type=int, default=1024)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/git-delegate"))
    ap.add_argument("--keep", help="build repositories in this folder and reuse them")
    args = ap.parse_args()
    if not os.path.exists(args.bin):
        sys.exit(f"{args.bin} not found: run `cargo build --release` first")
    tmp = os.path.abspath(args.keep) if args.keep else tempfile.mkdtemp(prefix="gd-apply-bench-")
    os.makedirs(tmp, exist_ok=True)
    r = Runner(tmp, os.path.abspath(args.bin))
    rows = {}
    big = []
    try:
        for n in [int(s) for s in args.sizes.split(",")]:
            repo = os.path.join(tmp, f"repo{n}")
            t0 = time.perf_counter()
            files = make_repo(r, repo, n)
            print(f"# {n} files: repository ready in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
            rows[n] = bench_apply(r, repo, n, files, args.reps, random.Random(7))
        if args.big_mib > 0:
            big = bench_big(r, tmp, args.big_mib)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print()
    print(f"{'operation':46} {'files':>7} {'git-delegate':>12} {'git':>12} {'ratio':>7} {'target':>7} {'peak RSS':>9}")
    for n, (ours, ref, rss, _) in rows.items():
        print(f"{'apply 4x10 files vs 4x git status':46} {n:>7} {ours * 1000:9.1f} ms {ref * 1000:9.1f} ms "
              f"{ours / ref:6.2f}x {'<=1.5x':>7} {rss // 1024:>5} MiB")
    if len(rows) >= 2:
        lo, hi = min(rows), max(rows)
        g_ours = rows[hi][0] / rows[lo][0]
        g_ref = rows[hi][1] / rows[lo][1]
        print(f"{f'apply growth {lo} -> {hi} files':46} {'':>7} {g_ours:11.1f}x {g_ref:11.1f}x "
              f"{g_ours / g_ref:6.2f}x {'<=1x':>7}")
    for n, (_, _, _, bg) in rows.items():
        print(f"{'  (background removal after apply returned)':46} {n:>7} {bg * 1000:9.1f} ms")
    for name, t, rss in big:
        size_kib = args.big_mib * 1024
        print(f"{name:46} {'':>7} {t * 1000:9.1f} ms {'':>12} {rss / size_kib:6.3f}x {'<=0.1x':>7} {rss // 1024:>5} MiB")


if __name__ == "__main__":
    main()
