#!/usr/bin/env python3
"""git-delegate's benchmark: the CLI against the plain git commands doing the
same file work, side by side in one run (SPEC §8, issues 2, 3, 4 and 6).

It builds synthetic repositories deterministically (1k, 10k, 100k files of
mixed sizes, a few large binaries, dirty and untracked files, an ignored
folder with many files), runs each operation and its git reference
alternately several times, and prints medians, ratios and peak RSS.

Usage:
    bench/bench.py [--sizes 1000,10000,100000] [--reps 5] [--bin PATH] [--keep DIR]

Build the release binary first (`cargo build --release`); `--bin` defaults to
target/release/git-delegate. Everything runs in a temp folder with a hermetic
git config; nothing outside it is touched. Timing only: it asserts nothing.
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


class Bench:
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

    def run(self, args, cwd, check=True):
        """Run a command; return (seconds, peak RSS in KiB, stdout)."""
        start = time.perf_counter()
        p = subprocess.Popen(args, cwd=cwd, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = p.communicate()
        elapsed = time.perf_counter() - start
        if check and p.returncode != 0:
            raise RuntimeError(f"{args} failed ({p.returncode}): {err.decode(errors='replace')}")
        return elapsed, out.decode(errors="replace")

    def run_rss(self, args, cwd, check=True):
        """Run a command, returning (seconds, peak RSS KiB)."""
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
        if check and os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"{args} failed with {os.waitstatus_to_exitcode(status)}")
        return elapsed, usage.ru_maxrss

    def git(self, cwd, *args):
        return self.run(["git", *args], cwd)[1]

    def delegate(self, cwd, *args, check=True):
        return self.run([self.bin, *args], cwd, check=check)[1]


def make_repo(b, path, n):
    """A deterministic repository of n files: committed, then a few edits."""
    rng = random.Random(n)
    os.makedirs(path)
    b.git(path, "init", "-q", "-b", "main")
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
    # a few large binaries
    for j in range(3):
        with open(os.path.join(path, f"blob{j}.bin"), "wb") as f:
            f.write(random.Random(j).randbytes(2 * 1024 * 1024))
    with open(os.path.join(path, ".gitignore"), "w") as f:
        f.write("node_modules/\n")
    b.git(path, "add", "-A")
    b.git(path, "commit", "-q", "-m", "init")
    # ignored folder with many files
    nm = os.path.join(path, "node_modules")
    for i in range(max(n // 10, 10)):
        d = os.path.join(nm, f"pkg{i // 100}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"m{i}.js"), "w") as f:
            f.write("module.exports = 1;\n")
    # dirty: 10 modified, 10 untracked
    for rel in rng.sample(files, 10):
        with open(os.path.join(path, rel), "a") as f:
            f.write("dirty\n")
    for i in range(10):
        with open(os.path.join(path, f"untracked{i}.txt"), "w") as f:
            f.write("new\n")
    # let git refresh its index once, as a user's repository would have it
    b.git(path, "status", "--porcelain")
    return files


def alternate(reps, a, b):
    """Run a() and b() alternately reps times after one warm-up each; medians."""
    a()
    b()
    ta, tb = [], []
    for _ in range(reps):
        ta.append(a())
        tb.append(b())
    return statistics.median(ta), statistics.median(tb)


def fmt(s):
    return f"{s * 1000:8.1f} ms"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/git-delegate"))
    ap.add_argument("--keep", help="build repositories in this folder and keep them")
    args = ap.parse_args()
    if not os.path.exists(args.bin):
        sys.exit(f"{args.bin} not found: run `cargo build --release` first")
    tmp = args.keep or tempfile.mkdtemp(prefix="gd-bench-")
    os.makedirs(tmp, exist_ok=True)
    b = Bench(tmp, os.path.abspath(args.bin))
    rows = []
    try:
        for n in [int(s) for s in args.sizes.split(",")]:
            repo = os.path.join(tmp, f"repo{n}")
            if os.path.exists(repo):
                shutil.rmtree(repo)
            t0 = time.perf_counter()
            files = make_repo(b, repo, n)
            print(f"# {n} files: repository built in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
            rows += bench_size(b, repo, n, files, args.reps)
    finally:
        if not args.keep:
            # worktrees live under HOME in tmp: removing tmp removes them too
            shutil.rmtree(tmp, ignore_errors=True)
    print()
    print(f"{'operation':44} {'files':>7} {'git-delegate':>12} {'git':>12} {'ratio':>7} {'target':>8} {'peak RSS':>10}")
    for r in rows:
        name, n, ours, ref, target, rss = r
        ratio = f"{ours / ref:6.2f}x" if ref else "     -"
        print(f"{name:44} {n:>7} {fmt(ours)} {fmt(ref) if ref else '           -'} {ratio:>7} {target:>8} {rss // 1024:>7} MiB")


def bench_size(b, repo, n, files, reps):
    rows = []
    rng = random.Random(7)

    # 1. snapshot alone vs git status --porcelain
    def snap():
        return b.run([b.bin, "snapshot"], repo)[0]

    def status():
        return b.run(["git", "status", "--porcelain"], repo)[0]

    ours, ref = alternate(reps, snap, status)
    _, rss = b.run_rss([b.bin, "snapshot"], repo)
    rows.append(("snapshot, few changes", n, ours, ref, "<=1.5x", rss))

    # 2. prepare -n 4 vs 4 sequential git worktree add --detach
    head = b.git(repo, "rev-parse", "HEAD").strip()
    wt_base = os.path.join(b.tmp, f"wt{n}")

    def prepare():
        t, _ = b.run([b.bin, "prepare", "-n", "4", "--label", "bench"], repo)
        b.run([b.bin, "drop", "bench", "--force"], repo)
        return t

    def worktrees():
        start = time.perf_counter()
        for i in range(4):
            b.run(["git", "worktree", "add", "-q", "--detach", os.path.join(wt_base, str(i)), head], repo)
        t = time.perf_counter() - start
        for i in range(4):
            b.run(["git", "worktree", "remove", "--force", os.path.join(wt_base, str(i))], repo)
        return t

    ours, ref = alternate(max(2, reps // 2), prepare, worktrees)
    rows.append(("prepare -n 4 vs 4x git worktree add", n, ours, ref, "<=0.6x", 0))

    # 3. apply of 4 tasks x 10 changed files vs 4x git status in the workspaces
    def setup_apply():
        doc = b.delegate(repo, "prepare", "-n", "4", "--label", "bench-apply", "--json")
        import json

        d = json.loads(doc)
        roots = [t["root"] for t in d["tasks"]]
        picks = rng.sample(files, 40)
        for k, root in enumerate(roots):
            for rel in picks[k * 10:(k + 1) * 10]:
                with open(os.path.join(root, rel), "a") as f:
                    f.write(f"task {k}\n")
        return roots

    apply_times, status_times, apply_rss = [], [], 0
    try:
        for _ in range(max(2, reps // 2)):
            roots = setup_apply()
            start = time.perf_counter()
            for root in roots:
                b.run(["git", "status", "--porcelain"], root)
            status_times.append(time.perf_counter() - start)
            t, rss = b.run_rss([b.bin, "apply", "bench-apply"], repo)
            apply_times.append(t)
            apply_rss = max(apply_rss, rss)
            # undo the applied edits so the next round starts alike
            b.git(repo, "checkout", "-q", "--", ".")
            for i in range(10):
                with open(os.path.join(repo, f"untracked{i}.txt"), "w") as f:
                    f.write("new\n")
        rows.append(
            (
                "apply 4x10 files vs 4x git status",
                n,
                statistics.median(apply_times),
                statistics.median(status_times),
                "<=1.5x",
                apply_rss,
            )
        )
    except RuntimeError as e:
        print(f"# apply skipped: {e}", file=sys.stderr)
        b.delegate(repo, "drop", "bench-apply", "--force", check=False)

    # 4. status and the pre-commit hook with no batch (absolute)
    for name, cmd in [("status, no batch", ["status"]), ("hook pre-commit, no batch", ["hook", "pre-commit"])]:
        times = [b.run([b.bin, *cmd], repo, check=False)[0] for _ in range(reps * 2)]
        rows.append((name, n, statistics.median(times), 0, "<20ms", 0))
    return rows


if __name__ == "__main__":
    main()
