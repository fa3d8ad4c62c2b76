#!/usr/bin/env python3
"""git-delegate's benchmark: the CLI against the plain git commands doing the
same file work, side by side in one run (design §8).

It builds synthetic repositories deterministically (1k, 10k and 100k files of
mixed sizes, three 2 MiB binaries, 10 modified and 10 untracked files, an
ignored `node_modules/` with a tenth as many files), runs each operation and
its git reference alternately, and prints for every row the medians, the
ratio, the target, whether it is met, and the peak RSS of both sides:

  snapshot, few changes            git status --porcelain            <= 1.5x
  snapshot after `touch` of every file, 2nd and later snapshots of a batch
                                   git status on an index git refreshed <= 2x
  (first snapshot after the touch: what prepare pays; git's refreshing status)
  prepare -n 4 (this filesystem)   4 sequential git worktree add --detach <= 0.6x
     warm: no workspace deleted between the runs (each run's trees are kept
           until the row is done);
     cold: the previous run's trees deleted right before each run
           (on an ext4 without journal every new inode then scans the inodes
           deleted in the last minutes: ext4 `recently_deleted`);
     floor: writing the same files (same paths, same bytes) with a plain
           native loop (bench/floor.rs), in the same condition: with one
           thread (git's parallelism) and with one per core (git-delegate's);
  prepare -n 4 on XFS with reflink  same                               <= 0.3x
     (only where an XFS reflink mount is available; said otherwise)
  prepare -n 4 on a journaled ext4 loop mount (--make-ext4, as root): the
     ext4 most machines have, without the scan of recently deleted inodes
  prepare -n 4 with workspace.setup = "true"
                                   the same prepare without it       information
  prepare -n 4 from a warm pool (workspace.pool = 4, after an apply)
                                   4 sequential git worktree add --detach <= 0.1x at 10k,
                                                                       <= 0.2x at 100k
     (--only pool; with --disk-dir DIR also with the workspaces in DIR,
     say an ext4 disk while the temp folder is a tmpfs)
     floor: git status --porcelain in the 4 idle workspaces and in the
           source, the indexes as they are (what proving them unchanged
           costs git)                                                  information
  apply, 4 tasks x 10 files, workspace.pool = 4 (the workspaces go idle)
                                   the same apply with no pool        information
     and the background removal after apply returned, each        (--only pool)
  prepare -n 1 + setup `cargo build -q --offline` from a warm pool
     (workspace.pool = 1, the previous task applied with a one-line change)
                                   prepare -n 1 + setup into a fresh workspace
     a 40-module crate, the change in a module                         <= 0.3x
     then a cargo workspace of it and a 1-file crate
     using it, the change in the latter (--only pool-cargo)          information
  prepare -n 1 + setup making a Python virtual environment (python3 -m venv,
     the project installed in it with a console script) from a warm pool,
     then `.venv/bin/pip --version` and the console script run in it
                                   prepare -n 1 + setup into a fresh workspace
                                   (--only pool-venv)                  <= 0.3x
  apply, 4 tasks x 10 files        4 x git status in the workspaces   <= 1.5x
  apply growth 1k -> 100k          growth of git status               no faster
  status / hook pre-commit, no batch                                   < 20 ms
  run -n 4 -- true, workers contained by Landlock (design §3.22)
                                   the same with --no-sandbox         <= 1.05x
  hook pre-push, 10,000 new commits, no baseline
                                   git rev-list --count of the range  <= 3x
  hook pre-push, the same with 100 private blobs recorded (every commit
     diffed against its parent)    git log --raw of the range          <= 3x
                                   git rev-list --count               information
  sparse checkout of a 5% cone (--sparse-size, default 100k files):
    prepare -n 4                   4 x (git worktree add --no-checkout,
                                   sparse-checkout set, checkout)      <= 1.5x
    prepare -n 4                   prepare -n 4 of the full tree       <= 0.1x
    snapshot                       git status --porcelain              <= 1.5x
  apply peak RSS, one 1 GiB changed file (--big), added and rewritten
                                   size of the file                   <= 0.1x
  remote workers over file:// (design §3.14; a bare clone as the remote,
  a worker's clone of it):
    join inside an existing clone  git fetch of the baseline ref
                                   + git worktree add --detach        <= 1x
    submit of 10 changed files     git push of an equivalent commit   <= 1.5x
    apply of 4 remote tasks        local apply of 4 tasks
                                   + one git fetch of 4 refs          <= 1x

A/B (`--against OLD`): every git-delegate row is run against another
git-delegate binary (say, a build of the previous commit) instead of git,
alternately in the same run, without targets or floor rows: the before/after
figures of a change.

Usage:
    bench/bench.py [--sizes 1000,10000,100000] [--reps 5] [--bin PATH]
                   [--against OLD_BIN] [--xfs DIR | --make-xfs SIZE] [--make-ext4 SIZE] [--no-cold]
                   [--btrfs DIR | --make-btrfs SIZE] [--only-btrfs]
                   [--big] [--keep DIR] [--markdown] [--only-remote]
                   [--sparse-size N] [--sparse-reps N] [--disk-dir DIR]
                   [--prepare-cargo-reps N] [--only ROW,...]

Build the release binary first (`cargo build --release`); `--bin` defaults to
target/release/git-delegate. Timed commands run through bench/spawn.rs (built
with `rustc` into the temp folder at start), so that each reports its own peak
RSS: forked from this Python process, a command would report at least
Python's. Everything runs in a temp folder with a hermetic
git config; nothing outside it is touched (apart from the XFS mount, which
`--make-xfs` creates with scripts/reflink-fs as root and removes at the end).
Without `--xfs`/`--make-xfs`, /tmp/git-delegate-xfs is used when it is an XFS
mount with reflink; a size whose workspaces do not fit on it is skipped, and
said so. Timing only: it asserts nothing. A full run of the three sizes takes
about 15-20 minutes on the 2-core machine (one repetition of the slow prepare
rows at 100k).
"""

import argparse
import glob
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from scratch_bench import hermetic_env

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
GIB = 1 << 30


def say(msg):
    print(f"# {msg}", file=sys.stderr, flush=True)


class Bench:
    def __init__(self, tmp, binary, against=None):
        self.tmp = tmp
        self.bin = binary
        # --against: the binary the reference column runs instead of git.
        self.against = against
        # The runner of timed commands (see `timed`), built here.
        self.spawn = os.path.join(tmp, "spawn")
        # The floor's file writer (see PrepareRows.floor), built here too.
        self.floor = os.path.join(tmp, "floor")
        for name, out in [("spawn.rs", self.spawn), ("floor.rs", self.floor)]:
            subprocess.run(["rustc", "-O", "--edition", "2021", os.path.join(HERE, name), "-o", out], check=True)
        self.env = hermetic_env(tmp)

    def run(self, args, cwd, check=True, env=None):
        """Run a command; return (seconds, peak RSS in KiB, stdout)."""
        start = time.perf_counter()
        p = subprocess.Popen(
            args, cwd=cwd, env=env or self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        out, err = p.communicate()
        elapsed = time.perf_counter() - start
        if check and p.returncode != 0:
            raise RuntimeError(f"{args} failed ({p.returncode}): {err.decode(errors='replace')}")
        return elapsed, out.decode(errors="replace")

    def timed(self, args, cwd, check=True, env=None):
        """Run a command with its output discarded; return (seconds, peak RSS KiB).
        Through bench/spawn.rs: forked from this Python process, the command
        would report at least this process's RSS (Linux keeps the peak RSS
        across exec)."""
        p = subprocess.run([self.spawn, *args], cwd=cwd, env=env or self.env, capture_output=True, text=True)
        try:
            secs, rss, code = p.stdout.split()
            secs, rss, code = float(secs), int(rss), int(code)
        except ValueError:
            raise RuntimeError(f"{args}: {p.stderr.strip() or 'bench/spawn.rs printed nothing'}")
        if check and code != 0:
            raise RuntimeError(f"{args} failed with {code}")
        return secs, rss

    def git(self, cwd, *args):
        return self.run(["git", *args], cwd)[1]

    def delegate(self, cwd, *args, check=True):
        return self.run([self.bin, *args], cwd, check=check)[1]

    def wait_trash(self, ws_root, timeout=600):
        """Wait until the background deleter has emptied the `.trash` folders
        under the workspace root `ws_root`; returns the seconds waited."""
        start = time.perf_counter()
        while time.perf_counter() - start < timeout:
            busy = False
            if os.path.isdir(ws_root):
                for d in os.listdir(ws_root):
                    t = os.path.join(ws_root, d, ".trash")
                    if os.path.isdir(t) and os.listdir(t):
                        busy = True
            if not busy:
                return time.perf_counter() - start
            time.sleep(0.05)
        return float("nan")


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


def alternate(reps, a, b, warmup=True):
    """Run a() and b() alternately reps times (after one warm-up each);
    each returns (seconds, rss). Returns medians and max RSS of both."""
    if warmup:
        a()
        b()
    ra, rb = [], []
    for _ in range(reps):
        ra.append(a())
        rb.append(b())
    med = lambda rs: statistics.median(r[0] for r in rs)  # noqa: E731
    rss = lambda rs: max(r[1] for r in rs)  # noqa: E731
    return med(ra), med(rb), rss(ra), rss(rb)


def at(n, sizes, target):
    """The issue sets a target only at some sizes; elsewhere the row is information."""
    return target if n in sizes else ("info", None)


class Rows:
    def __init__(self, against=None):
        self.rows = []
        # With --against, the reference column is that binary and no row has a target.
        self.against = against

    def add(self, name, n, ours, ref, target, rss=0, ref_rss=0, note="", unit="s"):
        """target: ("ratio", x) for ours/ref <= x, ("ms", x) for ours < x ms,
        ("growth", None) for ours <= ref, ("info", None) for rows without a
        target. unit: "s" (seconds) or "x" (plain factors)."""
        if self.against:
            target = ("info", None)
        self.rows.append(
            dict(name=name, files=n, ours=ours, ref=ref, target=target, rss=rss, ref_rss=ref_rss, note=note,
                 unit=unit)
        )
        r = self.rows[-1]
        say(f"{name} ({n} files): {fmt(ours, unit)} vs {fmt(ref, unit) if ref else '-'} {verdict(r)} {note}")

    def print(self, markdown=False):
        other = "against" if self.against else "git"
        head = ["operation", "files", "git-delegate", other, "ratio", "target", "met", "RSS ours", f"RSS {other}"]
        lines = []
        for r in self.rows:
            ratio = f"{r['ours'] / r['ref']:.2f}x" if r["ref"] else "-"
            lines.append(
                [
                    r["name"] + (f" ({r['note']})" if r["note"] else ""),
                    str(r["files"]),
                    fmt(r["ours"], r["unit"]).strip(),
                    fmt(r["ref"], r["unit"]).strip() if r["ref"] else "-",
                    ratio,
                    target_text(r["target"]),
                    verdict(r),
                    f"{r['rss'] // 1024} MiB" if r["rss"] else "-",
                    f"{r['ref_rss'] // 1024} MiB" if r["ref_rss"] else "-",
                ]
            )
        if markdown:
            print("| " + " | ".join(head) + " |")
            print("|" + "---|" * len(head))
            for line in lines:
                print("| " + " | ".join(line) + " |")
            return
        widths = [max(len(x) for x in col) for col in zip(head, *lines)]
        for line in [head] + lines:
            print("  ".join(x.ljust(w) if i == 0 else x.rjust(w) for i, (x, w) in enumerate(zip(line, widths))))


def fmt(s, unit="s"):
    if unit == "x":
        return f"{s:7.2f}x"
    if unit == "MiB":
        return f"{s / (1 << 20):7.1f} MiB"
    if s >= 10:
        return f"{s:7.1f} s"
    return f"{s * 1000:7.1f} ms"


def target_text(t):
    kind, x = t
    if kind == "ratio":
        return f"<= {x}x"
    if kind == "ms":
        return f"< {x} ms"
    if kind == "growth":
        return "<= git's"
    return "-"


def verdict(r):
    kind, x = r["target"]
    if kind == "ratio":
        return "yes" if r["ref"] and r["ours"] / r["ref"] <= x else "NO"
    if kind == "ms":
        return "yes" if r["ours"] * 1000 < x else "NO"
    if kind == "growth":
        return "yes" if r["ours"] <= r["ref"] * 1.15 else "NO"
    return "-"


def tree_dirs(repo):
    """The folders of the tracked files of `repo`, and the file count."""
    out = subprocess.run(["git", "ls-files", "-z"], cwd=repo, capture_output=True, check=True).stdout
    paths = [p for p in out.decode(errors="surrogateescape").split("\0") if p]
    return paths


def rmtree(path):
    shutil.rmtree(path, ignore_errors=True)


def free_bytes(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def is_reflink_xfs(path):
    if not os.path.isdir(path):
        return False
    try:
        if fs_type(path) != "xfs":
            return False
        info = subprocess.run(["xfs_info", path], capture_output=True, text=True)
        return "reflink=1" in info.stdout
    except FileNotFoundError:
        return False


class PrepareRows:
    """prepare -n 4 against 4 sequential `git worktree add --detach`, with
    the workspace root (and the worktrees) under `base`."""

    labels = 0

    def __init__(self, b, repo, n, base, label):
        self.b, self.repo, self.n, self.base, self.label = b, repo, n, base, label
        self.head = b.git(repo, "rev-parse", "HEAD").strip()
        self.count = 0
        self.batches = []  # labels still open
        self.wts = []  # git worktrees still registered
        os.makedirs(base, exist_ok=True)
        with open(os.path.join(repo, ".git/delegate.toml"), "w") as f:
            f.write(f'[workspace]\nroot = "{os.path.join(base, "ws")}"\n')

    def prepare(self, binary=None):
        # Dirty data of earlier runs is written out first, so that neither
        # side pays the other's writeback.
        os.sync()
        self.count += 1
        PrepareRows.labels += 1
        label = f"bench-{PrepareRows.labels}"
        t, rss = self.b.timed([binary or self.b.bin, "prepare", "-n", "4", "--label", label], self.repo)
        self.batches.append(label)
        return t, rss

    def reference(self):
        """4 sequential `git worktree add`, or the --against binary's prepare."""
        if self.b.against:
            return self.prepare(self.b.against)
        return self.worktrees()

    def worktrees(self):
        """4 sequential worktrees of `head`, each made by `add_commands`, timed."""
        os.sync()
        self.count += 1
        start = time.perf_counter()
        rss = 0
        for i in range(4):
            path = os.path.join(self.base, "wt", f"{self.count}-{i}")
            for args, cwd in self.add_commands(path):
                _, r = self.b.timed(args, cwd)
                rss = max(rss, r)
            self.wts.append(path)
        return time.perf_counter() - start, rss

    def add_commands(self, path):
        """The git commands (argv, folder) that make the worktree `path`."""
        return [(["git", "worktree", "add", "-q", "--detach", path, self.head], self.repo)]

    def clean(self):
        for label in self.batches:
            self.b.delegate(self.repo, "drop", label, "--force", check=False)
        for path in self.wts:
            self.b.run(["git", "worktree", "remove", "--force", path], self.repo, check=False)
        self.b.run(["git", "worktree", "prune"], self.repo, check=False)
        self.batches, self.wts = [], []

    def floor(self, paths, trees=4, threads=1):
        """Writing the tracked files `paths` (their bytes in the working
        tree) `trees` times in this folder, `threads` trees at once, with
        bench/floor.rs: what the kernel costs for the files alone. The time
        is scaled to 4 trees."""
        dest = os.path.join(self.base, f"floor-{self.count}")
        self.count += 1
        os.sync()
        p = subprocess.run([self.b.floor, self.repo, dest, str(trees), str(threads)],
                           input=b"\0".join(os.fsencode(x) for x in paths), capture_output=True, check=True)
        return float(p.stdout) * 4 / trees, dest

    def done(self):
        self.clean()
        try:
            os.remove(os.path.join(self.repo, ".git/delegate.toml"))
        except FileNotFoundError:
            pass


def floor_rows(rows, pr, paths, n, where):
    """The floor rows of a prepare row: one thread, then as many as there
    are cores (git-delegate writes with that many threads; git with one).
    Trees are left in place (the caller removes or keeps them)."""
    if pr.b.against:
        return []
    cores = os.cpu_count() or 1
    made = []
    for threads in sorted({1, cores}):
        trees = (4 if n < 100000 else 1) if threads == 1 else (4 if n < 100000 else min(4, cores))
        t, dest = pr.floor(paths, trees, threads)
        made.append(dest)
        note = "" if trees == 4 else f"{trees}x measured, times {4 // trees}"
        rows.add(f"  floor: write the 4x{n} files, {threads} thread{'s' if threads > 1 else ''}, {where}", n,
                 t, 0, ("info", None), note=note)
    return made


def bench_prepare_warm(b, rows, repo, n, base, where, target, reps, keep):
    """prepare -n 4 and its reference with nothing deleted between the runs:
    every tree is kept (until the end of the run when `keep`, so that no
    later row creates files where these were just deleted), then the floor."""
    pr = PrepareRows(b, repo, n, base, where)
    paths = tree_dirs(repo)
    try:
        ours, ref, rss, ref_rss = alternate(reps, pr.prepare, pr.reference, warmup=reps > 1)
        rows.add(f"prepare -n 4, {where}, warm", n, ours, ref, target, rss, ref_rss)
        made = floor_rows(rows, pr, paths, n, where + ", warm")
        if not keep:
            for dest in made:
                rmtree(dest)
    finally:
        if keep:
            # The trees stay; only the config pointing at them goes.
            pr.batches, pr.wts = [], []
        pr.done()


def bench_setup(b, rows, repo, n, base, reps):
    """prepare -n 4 with a trivial `workspace.setup` command (`true`,
    design §3.20) against the same prepare without one, alternately, the
    workspaces kept until the row is done: what running the setup commands
    (a shell per workspace, its log) adds to a prepare. With --against, both
    binaries run with the setup command."""
    pr = PrepareRows(b, repo, n, base, "setup")
    cfg = os.path.join(repo, ".git/delegate.toml")
    plain = open(cfg).read()

    def prepare(setup, binary=None):
        with open(cfg, "w") as f:
            f.write(plain + ('setup = "true"\n' if setup else ""))
        return pr.prepare(binary)

    try:
        with_setup = lambda: prepare(True)  # noqa: E731
        other = (lambda: prepare(True, b.against)) if b.against else (lambda: prepare(False))
        ours, ref, rss, ref_rss = alternate(reps, with_setup, other, warmup=reps > 1)
        name = "prepare -n 4, workspace.setup = \"true\"" + ("" if b.against else " vs without")
        rows.add(name, n, ours, ref, ("info", None), rss, ref_rss)
    finally:
        pr.done()
        rmtree(base)


def idle_workspaces(base):
    """The idle workspaces of the pool under the workspace root `base/ws`
    (`<root>/<repo>-<fp>/pool/<id>`, design §3.20)."""
    return sorted(p for p in glob.glob(os.path.join(base, "ws", "*", "pool", "*")) if os.path.isdir(p))


def pool_floor(b, repo, idle, reps):
    """What the proof that the idle workspaces are unchanged costs git: `git
    status --porcelain` in each idle workspace, then one in the source, with
    the indexes as they are (`--no-optional-locks`: git does not refresh and
    write them, so every repetition finds the same state, as the pool's proof
    does). One unmeasured pass, then the median of `reps` passes."""
    def one_pass():
        total, rss = 0.0, 0
        for cwd in [*idle, repo]:
            t, r = b.timed(["git", "--no-optional-locks", "status", "--porcelain"], cwd)
            total, rss = total + t, max(rss, r)
        return total, rss

    one_pass()
    runs = [one_pass() for _ in range(max(reps, 3))]
    return statistics.median(r[0] for r in runs), max(r[1] for r in runs)


def bench_pool(b, rows, repo, n, base, where, reps, target=("info", None)):
    """prepare -n 4 from a warm pool (`workspace.pool = 4`, design §3.20),
    the workspace root under `base` (on the filesystem `where`): each timed
    prepare follows an apply that put its 4 workspaces back idle, with one
    source file changed in between, against 4 sequential `git worktree add
    --detach` (or, with --against, the other binary's pooled prepare). The
    workspaces go back idle by an untimed apply after each run. Then, with
    the pool full, the floor: git status in the 4 idle workspaces and in the
    source (`pool_floor`). The pool is emptied when the row is done."""
    pr = PrepareRows(b, repo, n, base, "pool")
    cfg = os.path.join(repo, ".git/delegate.toml")
    with open(cfg, "a") as f:
        f.write("pool = 4\n")
    touched = os.path.join(repo, "pool-bench.txt")
    rounds = [0]

    def pooled(binary=None):
        rounds[0] += 1
        with open(touched, "w") as f:
            f.write(f"round {rounds[0]}\n")
        t, rss = pr.prepare(binary)
        # Back into the pool, untimed.
        b.run([binary or b.bin, "apply", pr.batches.pop()], repo)
        return t, rss

    try:
        pooled()  # fills the pool
        other = (lambda: pooled(b.against)) if b.against else pr.worktrees
        ours, ref, rss, ref_rss = alternate(reps, pooled, other, warmup=reps > 1)
        name = f"prepare -n 4 from a warm pool, {where}" + ("" if b.against else " vs 4 x git worktree add")
        rows.add(name, n, ours, ref, target, rss, ref_rss)
        idle = idle_workspaces(base)
        if not b.against and len(idle) == 4:
            # The state the next pooled prepare would find: one source file changed.
            rounds[0] += 1
            with open(touched, "w") as f:
                f.write(f"round {rounds[0]}\n")
            t, frss = pool_floor(b, repo, idle, reps)
            rows.add(f"  floor: git status in the 4 idle workspaces + the source, {where}", n, t, 0,
                     ("info", None), frss)
        elif not b.against:
            say(f"pool floor skipped: {len(idle)} idle workspaces under {base}, 4 expected")
    finally:
        b.delegate(repo, "drop", "--pool", check=False)
        pr.done()
        try:
            os.remove(touched)
        except FileNotFoundError:
            pass
        rmtree(base)


def bench_prepare_cold(b, rows, repo, n, base, where, target, reps):
    """prepare -n 4 and its reference, each right after the previous run's
    trees were deleted (on an ext4 without journal, every new inode then
    scans the inodes deleted in the last minutes), then the floor in the
    same condition."""
    pr = PrepareRows(b, repo, n, base, where)
    paths = tree_dirs(repo)
    try:
        def cold_prepare():
            pr.clean()
            return pr.prepare()

        def cold_reference():
            pr.clean()
            return pr.reference()

        ours, ref, rss, ref_rss = alternate(reps, cold_prepare, cold_reference, warmup=False)
        pr.clean()
        rows.add(f"prepare -n 4, {where}, cold", n, ours, ref, target, rss, ref_rss)
        if not b.against:
            # Each floor right after the previous tree was deleted.
            cores = os.cpu_count() or 1
            _, dest = pr.floor(paths)
            for threads in sorted({1, cores}):
                rmtree(dest)
                t, dest = pr.floor(paths, 4, threads)
                rows.add(f"  floor: write the 4x{n} files, {threads} thread{'s' if threads > 1 else ''}, "
                         f"{where}, cold", n, t, 0, ("info", None))
            rmtree(dest)
    finally:
        pr.done()


def bench_snapshot(b, rows, repo, n, reps):
    def snap():
        return b.timed([b.bin, "snapshot"], repo)

    def status():
        if b.against:
            return b.timed([b.against, "snapshot"], repo)
        return b.timed(["git", "status", "--porcelain"], repo)

    ours, ref, rss, ref_rss = alternate(reps, snap, status)
    rows.add("snapshot, few changes", n, ours, ref, at(n, [100000], ("ratio", 1.5)), rss, ref_rss)


def sparse_cone(n):
    """The leaf folders of make_repo's tree that hold 5% of its n files."""
    leaves = max(1, n * 5 // 100 // 100)
    return [f"d{j // 50:03d}/s{j % 50:02d}" for j in range(leaves)]


class SparseWorktrees(PrepareRows):
    """PrepareRows whose reference is 4 sequential git worktrees with the
    source's sparse configuration: `git worktree add --no-checkout`, then
    `git sparse-checkout set --cone` and `git checkout` in it."""

    def __init__(self, b, repo, n, base, label, cone):
        super().__init__(b, repo, n, base, label)
        self.cone = cone

    def add_commands(self, path):
        return [
            (["git", "worktree", "add", "-q", "--no-checkout", "--detach", path, self.head], self.repo),
            (["git", "sparse-checkout", "set", "--cone", *self.cone], path),
            (["git", "checkout", "-q", "--detach", self.head], path),
        ]


def bench_sparse(b, rows, tmp, n, reps):
    """A repository of n files whose source has a sparse checkout of a 5%
    cone (design §3.15): prepare -n 4 there against 4 git worktrees with
    the same sparse configuration and against prepare -n 4 of the full
    tree; snapshot against git status there.

    Warm, as the main prepare rows: no row runs right after mass deletions
    (on these VMs every new inode then pays a scan of the recently deleted
    ones, ext4 `recently_deleted`). So the sparse source is a clone checked
    out sparse from the start (`git sparse-checkout set` in a full tree
    would delete 95% of it just before the rows), and every tree stays
    until all rows are done."""
    full_repo = os.path.join(tmp, f"sparse{n}-full")
    repo = os.path.join(tmp, f"sparse{n}")
    for d in (full_repo, repo):
        rmtree(d)
    t0 = time.perf_counter()
    make_repo(b, full_repo, n)
    b.git(full_repo, "add", "-A")
    b.git(full_repo, "commit", "-q", "-m", "clean")
    cone = sparse_cone(n)
    b.run(["git", "clone", "-q", "--no-checkout", full_repo, repo], tmp)
    b.git(repo, "sparse-checkout", "set", "--cone", *cone)
    b.git(repo, "checkout", "-q", "main")
    # A few changes inside the cone.
    for rel in [os.path.join(cone[0], f) for f in sorted(os.listdir(os.path.join(repo, cone[0])))[:5]]:
        with open(os.path.join(repo, rel), "a") as f:
            f.write("dirty\n")
    b.git(repo, "status", "--porcelain")
    say(f"sparse {n} files: repositories built in {time.perf_counter() - t0:.1f} s, cone {len(cone)} folders")
    base = os.path.join(tmp, f"sparse-fs{n}")
    where = fs_type(tmp)
    full = PrepareRows(b, full_repo, n, base + "-full", where)
    pr = SparseWorktrees(b, repo, n, base, where, cone)
    try:
        ours, ref, rss, ref_rss = alternate(reps, pr.prepare, pr.reference, warmup=reps > 1)
        rows.add(f"prepare -n 4, sparse 5% cone, {where}", n, ours, ref, ("ratio", 1.5), rss, ref_rss,
                 note="vs 4 sparse git worktrees")
        # The full tree: once at 100k files (4 x 100k files per run).
        full_t = statistics.median(full.prepare()[0] for _ in range(1 if n >= 100000 else reps))
        rows.add(f"prepare -n 4, sparse 5% cone vs the full tree, {where}", n, ours, full_t, ("ratio", 0.1),
                 note="vs prepare -n 4 of the whole tree")

        def snap():
            return b.timed([b.bin, "snapshot"], repo)

        def status():
            return b.timed(["git", "status", "--porcelain"], repo)

        ours, ref, rss, ref_rss = alternate(max(reps, 3), snap, status)
        rows.add("snapshot, sparse 5% cone", n, ours, ref, ("ratio", 1.5), rss, ref_rss)
    finally:
        pr.done()
        full.done()
        for d in (base, base + "-full", repo, full_repo):
            rmtree(d)


def bench_touch(b, rows, repo, n, reps):
    """Every tracked file's mtime changes; the user's index stays stat-dirty.
    The batch's stat cache serves the second and later snapshots."""
    label = "bench-touch"
    # The batch's one workspace is not what is measured: on tmpfs when there is one.
    toml = os.path.join(repo, ".git/delegate.toml")
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        shm = tempfile.mkdtemp(prefix="gd-bench-", dir="/dev/shm")
        with open(toml, "w") as f:
            f.write(f'[workspace]\nroot = "{shm}"\n')
    else:
        shm = None
    b.delegate(repo, "prepare", "-n", "1", "--label", label)
    try:
        now = time.time() - 5
        for p in tree_dirs(repo):
            os.utime(os.path.join(repo, p), (now, now))
        time.sleep(0.1)
        ref_index = os.path.join(b.tmp, "ref-index")
        shutil.copyfile(os.path.join(repo, ".git/index"), ref_index)
        ref_env = dict(b.env, GIT_INDEX_FILE=ref_index)
        # First snapshot after the touch (it reads every file and keeps the
        # stat cache) against git's first status (it refreshes its index).
        # With --against, the other binary's first snapshot would find the
        # cache already made: no reference then.
        first, first_rss = b.timed([b.bin, "snapshot"], repo)
        git_first, git_first_rss = (0, 0) if b.against else b.timed(["git", "status", "--porcelain"], repo,
                                                                     env=ref_env)
        rows.add("  first snapshot after touching every file", n, first, git_first, ("info", None),
                 first_rss, git_first_rss, note="reads every file")

        def snap():
            return b.timed([b.bin, "snapshot"], repo)

        def status():
            if b.against:
                return b.timed([b.against, "snapshot"], repo)
            return b.timed(["git", "status", "--porcelain"], repo, env=ref_env)

        ours, ref, rss, ref_rss = alternate(reps, snap, status)
        rows.add("snapshot after touching every file (2nd+)", n, ours, ref, at(n, [100000], ("ratio", 2.0)), rss,
                 ref_rss)
    finally:
        b.delegate(repo, "drop", label, "--force", check=False)
        if shm:
            os.remove(toml)
            rmtree(shm)
        # The user's index catches up again, as after any `git status`.
        b.git(repo, "status", "--porcelain")


def read_originals(repo, picks):
    """The bytes of the source's files `picks`, to be put back (`restore`)."""
    originals = {}
    for rel in picks:
        with open(os.path.join(repo, rel), "rb") as f:
            originals[rel] = f.read()
    return originals


def restore(repo, originals):
    """Writes the source's files back as `read_originals` read them."""
    for rel, data in originals.items():
        with open(os.path.join(repo, rel), "wb") as f:
            f.write(data)


def prepare_four_edited(b, repo, label, rng, txt, line):
    """prepare 4 tasks of `label`; each task appends `line(t)` to 10 files
    (40 distinct ones of `txt`, drawn by `rng`), then `sync`. Returns (the
    task roots, the workspace root, the 40 files' bytes in the source)."""
    doc = json.loads(b.delegate(repo, "prepare", "-n", "4", "--label", label, "--json"))
    roots = [t["root"] for t in doc["tasks"]]
    # <workspace root>/<repo>-<fingerprint>/<batch>/<task>
    ws_root = os.path.dirname(os.path.dirname(os.path.dirname(roots[0])))
    picks = rng.sample(txt, 40)
    originals = read_originals(repo, picks)
    for t, root in enumerate(roots):
        for rel in picks[t * 10:(t + 1) * 10]:
            with open(os.path.join(root, rel), "a") as f:
                f.write(line(t))
    os.sync()
    return roots, ws_root, originals


def apply_round(b, repo, label, rng, txt, binary, k, with_status):
    """One round of the apply rows: `prepare_four_edited`, optionally 4 x
    `git status` in the workspaces (one unmeasured pass, then timed), `apply`
    timed, the background removal waited for, the source's 40 files
    restored. Returns (apply s, apply RSS, status s, status RSS, background
    removal s)."""
    roots, ws_root, originals = prepare_four_edited(b, repo, label, rng, txt, lambda t: f"task {t} round {k}\n")
    ref, ref_rss = 0, 0
    if with_status:
        for root in roots:  # warm-up pass, not timed
            b.run(["git", "status", "--porcelain"], root)
        start = time.perf_counter()
        for root in roots:
            _, r = b.timed(["git", "status", "--porcelain"], root)
            ref_rss = max(ref_rss, r)
        ref = time.perf_counter() - start
    t, rss = b.timed([binary, "apply", label], repo)
    waited = b.wait_trash(ws_root)
    restore(repo, originals)
    b.git(repo, "status", "--porcelain")
    return t, rss, ref, ref_rss, waited


def bench_apply(b, rows, repo, n, files, reps):
    """Rounds of `apply_round`: prepare 4 tasks, each task appends a line to
    10 files (40 distinct ones), the dirty data are flushed (`sync`, as the
    minutes a worker takes would), 4 x `git status` run in the workspaces
    (one unmeasured warm-up pass, then timed), then `apply` is timed; the
    source's 40 files are restored afterwards. Applied workspaces are deleted
    in the background after apply returned: each round waits for that (shown
    as its own row, not part of apply's time) so rounds do not overlap. One
    unmeasured round first. With --against, the rounds alternate between the
    two binaries instead of timing git status."""
    rng = random.Random(7)
    txt = [f for f in files if f.endswith(".txt")]
    label = "bench-apply"

    def one_round(binary, k, with_status):
        return apply_round(b, repo, label, rng, txt, binary, k, with_status)

    ours_t, ref_t, bg, rss, ref_rss = [], [], [], 0, 0
    try:
        for k in range(reps + 1):
            if b.against:
                t, r, _, _, w = one_round(b.bin, k, False)
                t2, r2, _, _, _ = one_round(b.against, k, False)
            else:
                t, r, t2, r2, w = one_round(b.bin, k, True)
            if k == 0:
                continue
            ours_t.append(t)
            ref_t.append(t2)
            bg.append(w)
            rss, ref_rss = max(rss, r), max(ref_rss, r2)
    except RuntimeError as e:
        say(f"apply skipped: {e}")
        b.delegate(repo, "drop", label, "--force", check=False)
        return None
    ours, ref = statistics.median(ours_t), statistics.median(ref_t)
    name = "apply 4 tasks x 10 files" + ("" if b.against else " vs 4x git status")
    rows.add(name, n, ours, ref, at(n, [100000], ("ratio", 1.5)),
             rss, ref_rss)
    rows.add("  background removal of the 4 workspaces after apply returned", n, statistics.median(bg), 0,
             ("info", None))
    return ours, ref


def bench_apply_pool(b, rows, repo, n, files, base, reps):
    """apply of 4 tasks x 10 files (`apply_round`) with `workspace.pool = 4`
    (the workspaces go idle, design §3.20) against the same apply with no
    pool (they are removed), rounds alternating, the workspace root in
    `base`; then, for each, the background removal after apply returned.
    Before each round without the pool, the pool is emptied (`drop --pool`,
    untimed, its removal waited for), so each round's prepare makes fresh
    workspaces either way. One unmeasured round of each first."""
    rng = random.Random(11)
    txt = [f for f in files if f.endswith(".txt")]
    label = "bench-apply-pool"
    cfg = os.path.join(repo, ".git/delegate.toml")
    ws_root = os.path.join(base, "ws")
    os.makedirs(base, exist_ok=True)

    def one_round(pool, k):
        if not pool:
            b.delegate(repo, "drop", "--pool", check=False)
            b.wait_trash(ws_root)
        with open(cfg, "w") as f:
            f.write(f'[workspace]\nroot = "{ws_root}"\npool = {pool}\n')
        t, rss, _, _, waited = apply_round(b, repo, label, rng, txt, b.bin, k, False)
        return t, rss, waited

    pooled, plain = [], []
    try:
        for k in range(reps + 1):
            p, q = one_round(4, k), one_round(0, k)
            if k:
                pooled.append(p)
                plain.append(q)
    except RuntimeError as e:
        say(f"apply with a pool skipped: {e}")
        b.delegate(repo, "drop", label, "--force", check=False)
        return
    finally:
        b.delegate(repo, "drop", "--pool", check=False)
        b.wait_trash(ws_root)
        try:
            os.remove(cfg)
        except FileNotFoundError:
            pass
        rmtree(base)
    med = lambda rs, i: statistics.median(r[i] for r in rs)  # noqa: E731
    rows.add("apply 4 tasks x 10 files, workspace.pool = 4 vs no pool", n, med(pooled, 0), med(plain, 0),
             ("info", None), max(r[1] for r in pooled), max(r[1] for r in plain))
    rows.add("  background removal after apply returned, pool = 4", n, med(pooled, 2), 0, ("info", None))
    rows.add("  background removal after apply returned, no pool", n, med(plain, 2), 0, ("info", None))


CRATE_MODULES = 40


def crate_module(k):
    """The Rust source of module `k` of the warm-cache crate: ordinary code
    (a struct, an enum, a trait, generic helpers, loops and matches) for the
    compiler to chew on, no dependency."""
    out = [f"//! Module {k} of the bench crate.\n", "use std::collections::HashMap;\n", "use std::fmt;\n\n"]
    for j in range(6):
        out.append(f"""#[derive(Debug, Clone, PartialEq, Default)]
pub struct Item{j} {{
    pub id: u64,
    pub name: String,
    pub tags: Vec<String>,
    pub weight: f64,
}}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind{j} {{
    Small,
    Medium(u32),
    Large {{ width: u32, height: u32 }},
}}

pub trait Score{j} {{
    fn score(&self) -> f64;
    fn label(&self) -> String {{
        format!("{{:.2}}", self.score())
    }}
}}

impl Score{j} for Item{j} {{
    fn score(&self) -> f64 {{
        self.weight * (self.tags.len() as f64 + {k}.0) + self.id as f64 / {j + 1}.0
    }}
}}

impl fmt::Display for Item{j} {{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {{
        write!(f, "{{}}#{{}} [{{}}]", self.name, self.id, self.tags.join(","))
    }}
}}

impl Kind{j} {{
    pub fn area(self) -> u64 {{
        match self {{
            Kind{j}::Small => 1,
            Kind{j}::Medium(x) => u64::from(x) * {j + 2},
            Kind{j}::Large {{ width, height }} => u64::from(width) * u64::from(height),
        }}
    }}
}}

pub fn build{j}(n: u64) -> Vec<Item{j}> {{
    (0..n)
        .map(|i| Item{j} {{
            id: i * {k + 1},
            name: format!("item-{k}-{j}-{{i}}"),
            tags: (0..i % 5).map(|t| format!("t{{t}}")).collect(),
            weight: (i as f64).sqrt(),
        }})
        .collect()
}}

pub fn index{j}<T: Score{j} + Clone>(items: &[T]) -> HashMap<u64, Vec<T>> {{
    let mut map: HashMap<u64, Vec<T>> = HashMap::new();
    for it in items {{
        map.entry(it.score() as u64 % 17).or_default().push(it.clone());
    }}
    map
}}

pub fn summary{j}(items: &[Item{j}]) -> (f64, usize, String) {{
    let total: f64 = items.iter().map(Score{j}::score).sum();
    let longest = items.iter().map(|i| i.name.len()).max().unwrap_or(0);
    let names: Vec<String> = items.iter().filter(|i| i.id % 3 == 0).map(ToString::to_string).collect();
    (total, longest, names.join(";"))
}}

""")
    out.append("pub fn touched() -> u64 {\n    0\n}\n")
    return "".join(out)


def make_crate(b, path, env, split):
    """A repository holding a Rust library crate of CRATE_MODULES modules,
    no dependency, `target/` ignored, its Cargo.lock committed. With
    `split`, a cargo workspace instead: that crate as `core/`, and `app/`, a
    one-file crate using it. Returns the file a task changes: a module of
    the crate, or app's only file."""
    lib = os.path.join(path, "core" if split else "", "src")
    os.makedirs(lib)
    b.git(path, "init", "-q", "-b", "main")
    package = '[package]\nname = "{}"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n'
    if split:
        with open(os.path.join(path, "Cargo.toml"), "w") as f:
            f.write('[workspace]\nmembers = ["core", "app"]\nresolver = "2"\n')
        with open(os.path.join(path, "core", "Cargo.toml"), "w") as f:
            f.write(package.format("bench-core"))
        os.makedirs(os.path.join(path, "app", "src"))
        with open(os.path.join(path, "app", "Cargo.toml"), "w") as f:
            f.write(package.format("bench-app") + 'bench-core = { path = "../core" }\n')
        with open(os.path.join(path, "app", "src", "lib.rs"), "w") as f:
            f.write("pub fn touched() -> u64 {\n    0\n}\n\npub fn total(n: u64) -> f64 {\n"
                    "    bench_core::m00::summary0(&bench_core::m00::build0(n)).0 + touched() as f64\n}\n")
        changed = os.path.join("app", "src", "lib.rs")
    else:
        with open(os.path.join(path, "Cargo.toml"), "w") as f:
            f.write(package.format("bench-crate"))
        changed = os.path.join("src", "m00.rs")
    with open(os.path.join(path, ".gitignore"), "w") as f:
        f.write("/target/\n")
    with open(os.path.join(lib, "lib.rs"), "w") as f:
        f.write("".join(f"pub mod m{k:02};\n" for k in range(CRATE_MODULES)))
    for k in range(CRATE_MODULES):
        with open(os.path.join(lib, f"m{k:02}.rs"), "w") as f:
            f.write(crate_module(k))
    b.run(["cargo", "generate-lockfile", "--offline"], path, env=env)
    b.git(path, "add", "-A")
    b.git(path, "commit", "-q", "-m", "crate")
    return changed


def bench_pool_cargo(b, rows, tmp, reps):
    """The warm-cache effect of the pool (design §3.20): a repository holding
    Rust code (`make_crate`: one crate, then a cargo workspace of that crate
    and a small one using it), `workspace.setup = "cargo build -q
    --offline"` (the user's CARGO_HOME and RUSTUP_HOME, no dependency, so
    nothing is fetched). `prepare -n 1`, its setup included, into a fresh
    workspace (no pool; the previous task's workspace was removed) against
    `prepare -n 1` from a warm pool (`workspace.pool = 1`) after the
    previous task, built by its setup, was applied with a one-line change
    to one file (`make_crate`'s). The fresh rounds first (the pool emptied
    before each), then the pooled ones (one unmeasured round fills the
    pool). A reused workspace keeps its path (design §3.20), so what cargo
    and rustc keep by absolute path (rustc's incremental cache, keyed by the
    working directory) survives, as cargo's fingerprints of unchanged crates
    do. Target (issue 37): at most 0.3x for the change inside the one big
    crate."""
    real_home = os.path.expanduser("~")
    env = dict(b.env,
               CARGO_HOME=os.environ.get("CARGO_HOME") or os.path.join(real_home, ".cargo"),
               RUSTUP_HOME=os.environ.get("RUSTUP_HOME") or os.path.join(real_home, ".rustup"))
    for split in [False, True]:
        repo = os.path.join(tmp, "crate")
        base = os.path.join(tmp, "crate-ws")
        rmtree(repo)
        try:
            changed = make_crate(b, repo, env, split)
        except (RuntimeError, FileNotFoundError) as e:
            say(f"warm-cache row skipped: no offline cargo build: {e}")
            return
        try:
            fresh, warm = cargo_rounds(b, repo, base, env, changed, reps)
        except RuntimeError as e:
            say(f"warm-cache row skipped: {e}")
            continue
        finally:
            b.run([b.bin, "drop", "--pool"], repo, check=False, env=env)
            b.wait_trash(os.path.join(base, "ws"))
            rmtree(base)
            rmtree(repo)
        med = lambda rs: statistics.median(r[0] for r in rs)  # noqa: E731
        what = (f"a {CRATE_MODULES}-module crate + a 1-file crate using it, the change in the latter" if split
                else f"one {CRATE_MODULES}-module crate, the change in a module")
        rows.add(f"prepare -n 1 + setup `cargo build`, {what}: warm pool vs fresh workspace",
                 CRATE_MODULES, med(warm), med(fresh), ("info", None) if split else ("ratio", 0.3),
                 max(r[1] for r in warm), max(r[1] for r in fresh))


def cargo_rounds(b, repo, base, env, changed, reps):
    """bench_pool_cargo's rounds: `reps` fresh, then one unmeasured and
    `reps` pooled; each round's task changes one line of `changed` and is
    applied. Returns the (seconds, RSS) of the fresh and the pooled ones."""
    ws_root = os.path.join(base, "ws")
    cfg = os.path.join(repo, ".git/delegate.toml")
    rounds = [0]

    def one_round(pool):
        rounds[0] += 1
        if not pool:
            b.run([b.bin, "drop", "--pool"], repo, check=False, env=env)
            b.wait_trash(ws_root)
        with open(cfg, "w") as f:
            f.write(f'[workspace]\nroot = "{ws_root}"\npool = {pool}\nsetup = "cargo build -q --offline"\n')
        label = f"crate-{rounds[0]}"
        os.sync()
        t, rss = b.timed([b.bin, "prepare", "-n", "1", "--label", label], repo, env=env)
        doc = json.loads(b.run([b.bin, "status", label, "--json"], repo, env=env)[1])
        path = os.path.join(doc["batches"][0]["tasks"][0]["root"], changed)
        # The worker's edit at least a second after its build (as minutes
        # of work would be): edited in the same instant, cargo's mtime
        # check can take the file for built, and the next build skips it.
        time.sleep(1.1)
        with open(path) as f:
            src = f.read()
        with open(path, "w") as f:
            f.write(src.replace("pub fn touched() -> u64 {\n    ", "pub fn touched() -> u64 {\n    1 + ", 1))
        b.run([b.bin, "apply", label], repo, env=env)
        b.wait_trash(ws_root)
        return t, rss

    fresh = [one_round(0) for _ in range(reps)]
    one_round(1)  # fills the pool
    warm = [one_round(1) for _ in range(reps)]
    return fresh, warm


# A Python project with a console script, installed into a virtual
# environment by `workspace.setup` (offline: `setup.py develop` needs no
# `wheel`), made once per workspace and remade only when setup.py changes,
# as a setup meant for a pool is written (design §3.20).
VENV_SETUP = ('h=$(sha256sum setup.py | cut -c1-16); '
              'test "$(cat .venv/.setup-hash 2>/dev/null)" = "$h" || '
              '{ rm -rf .venv && python3 -m venv .venv && .venv/bin/python setup.py -q develop '
              '&& echo "$h" > .venv/.setup-hash; }')


def make_python_project(b, path):
    """A small package `benchtool` with a console script, committed."""
    os.makedirs(os.path.join(path, "benchtool"))
    b.git(path, "init", "-q")
    with open(os.path.join(path, "setup.py"), "w") as f:
        f.write('from setuptools import setup\n'
                'setup(name="benchtool", version="0.1.0", packages=["benchtool"],\n'
                '      entry_points={"console_scripts": ["benchtool = benchtool:main"]})\n')
    with open(os.path.join(path, "benchtool", "__init__.py"), "w") as f:
        f.write('ROUND = 0\n\n\ndef main():\n    print("benchtool", ROUND)\n')
    with open(os.path.join(path, ".gitignore"), "w") as f:
        f.write(".venv/\n*.egg-info/\n__pycache__/\n")
    b.git(path, "add", "-A")
    b.git(path, "commit", "-q", "-m", "python project")


def bench_pool_venv(b, rows, tmp, reps):
    """The warm-cache effect of the pool for Python (design §3.20): `prepare
    -n 1` whose setup makes a virtual environment and installs the project
    in it (`VENV_SETUP`), into a fresh workspace (no pool; the previous
    workspace removed) against from a warm pool (`workspace.pool = 1`),
    each round's task changing one line of the package and being applied.
    In every workspace, untimed, `.venv/bin/pip --version` and the project's
    console script must run (their `#!` names the interpreter by absolute
    path: a workspace that moved would break them). Target (issue 37): at
    most 0.3x."""
    repo = os.path.join(tmp, "py")
    base = os.path.join(tmp, "py-ws")
    ws_root = os.path.join(base, "ws")
    rmtree(repo)
    try:
        make_python_project(b, repo)
    except (RuntimeError, FileNotFoundError) as e:
        say(f"venv row skipped: {e}")
        return
    cfg = os.path.join(repo, ".git/delegate.toml")
    rounds = [0]

    def one_round(pool):
        rounds[0] += 1
        if not pool:
            b.run([b.bin, "drop", "--pool"], repo, check=False)
            b.wait_trash(ws_root)
        with open(cfg, "w") as f:
            f.write(f'[workspace]\nroot = "{ws_root}"\npool = {pool}\nsetup = {json.dumps(VENV_SETUP)}\n')
        label = f"py-{rounds[0]}"
        os.sync()
        t, rss = b.timed([b.bin, "prepare", "-n", "1", "--label", label], repo)
        doc = json.loads(b.run([b.bin, "status", label, "--json"], repo)[1])
        root = doc["batches"][0]["tasks"][0]["root"]
        b.run([os.path.join(root, ".venv/bin/pip"), "--version"], root)
        out = b.run([os.path.join(root, ".venv/bin/benchtool")], root)[1]
        if not out.startswith("benchtool"):
            raise RuntimeError(f"the console script printed {out!r}")
        init = os.path.join(root, "benchtool", "__init__.py")
        with open(init) as f:
            src = f.read()
        with open(init, "w") as f:
            f.write(src.replace(f"ROUND = {rounds[0] - 1}", f"ROUND = {rounds[0]}", 1))
        b.run([b.bin, "apply", label], repo)
        b.wait_trash(ws_root)
        return t, rss

    try:
        fresh = [one_round(0) for _ in range(reps)]
        one_round(1)  # fills the pool
        warm = [one_round(1) for _ in range(reps)]
    except RuntimeError as e:
        say(f"venv row skipped: {e}")
        return
    finally:
        b.run([b.bin, "drop", "--pool"], repo, check=False)
        b.wait_trash(ws_root)
        rmtree(base)
        rmtree(repo)
    med = lambda rs: statistics.median(r[0] for r in rs)  # noqa: E731
    rows.add("prepare -n 1 + setup making a Python venv (pip, a console script): warm pool vs fresh workspace",
             1, med(warm), med(fresh), ("ratio", 0.3), max(r[1] for r in warm), max(r[1] for r in fresh))


def bench_remote(b, rows, tmp, repo, n, files, reps):
    """Workers on other machines (design §3.14), over file://: a bare clone
    of the source as the remote, two clones of it on the "worker's machine"
    (one for git-delegate, one for the git references). Per round: `join`
    inside the clone vs `git fetch` of the baseline ref + `git worktree add
    --detach` of it; `submit` of 10 changed files vs `git push` of a commit
    of the same 10 files; `apply` of 4 remote tasks (10 files each,
    submitted) vs a local apply of 4 tasks with the same edits + one `git
    fetch` of the 4 proposal refs. One unmeasured round first."""
    rng = random.Random(11)
    txt = [f for f in files if f.endswith(".txt")]
    bare = os.path.join(tmp, f"remote{n}.git")
    url = "file://" + bare
    rmtree(bare)
    b.git(tmp, "clone", "-q", "--bare", repo, bare)
    remotes = b.git(repo, "remote").split()
    if "bench-remote" in remotes:
        b.git(repo, "remote", "set-url", "bench-remote", url)
    else:
        b.git(repo, "remote", "add", "bench-remote", url)
    wc, rc = os.path.join(tmp, f"worker{n}"), os.path.join(tmp, f"gitref{n}")
    for c in (wc, rc):
        rmtree(c)
        b.git(tmp, "clone", "-q", url, c)
    ws_root = os.path.join(b.env["XDG_DATA_HOME"], "git-delegate/worktrees")

    def edit(root, picks, k):
        for rel in picks:
            with open(os.path.join(root, rel), "a") as f:
                f.write(f"remote round {k}\n")

    def one_round(k):
        out = {}
        # join vs git fetch + git worktree add
        doc = json.loads(b.delegate(repo, "prepare", "--remote", "bench-remote", "a", "b", "c", "d",
                                    "--label", "bench-remote", "--json"))
        batch, baseline = doc["batch"], doc["baseline"]["commit"]
        base_ref = doc["baseline"]["ref"]
        dirs = {t: os.path.join(tmp, f"w{n}-{k}-{t}") for t in "abcd"}
        out["join"] = b.timed([b.bin, "join", url, batch, "a", dirs["a"]], wc)
        ref_dir = os.path.join(tmp, f"r{n}-{k}")
        t1 = b.timed(["git", "fetch", "-q", url, f"+{base_ref}:{base_ref}"], rc)
        t2 = b.timed(["git", "worktree", "add", "-q", "--detach", ref_dir, baseline], rc)
        out["join_ref"] = (t1[0] + t2[0], max(t1[1], t2[1]))
        for t in "bcd":
            b.delegate(wc, "join", url, batch, t, dirs[t])
        # submit vs git push
        picks = rng.sample(txt, 40)
        originals = read_originals(repo, picks)
        for i, t in enumerate("abcd"):
            edit(dirs[t], picks[i * 10:(i + 1) * 10], k)
        os.sync()
        out["submit"] = b.timed([b.bin, "submit"], dirs["a"])
        edit(ref_dir, picks[:10], k)
        b.git(ref_dir, "add", "-A")
        b.git(ref_dir, "commit", "-q", "-m", "bench")
        out["submit_ref"] = b.timed(["git", "push", "-q", "-f", url, "HEAD:refs/bench/push"], ref_dir)
        for t in "bcd":
            b.delegate(dirs[t], "submit")
        # apply of 4 remote tasks vs one git fetch of 4 refs + local apply
        specs = [f"+refs/pi-delegate/batches/{batch}/tasks/{t}/proposal:refs/bench/{t}" for t in "abcd"]
        fetch = b.timed(["git", "fetch", "-q", url, *specs], rc)
        out["apply"] = b.timed([b.bin, "apply", "bench-remote"], repo)
        b.wait_trash(ws_root)
        restore(repo, originals)
        local = json.loads(b.delegate(repo, "prepare", "-n", "4", "--label", "bench-local", "--json"))
        for i, t in enumerate(local["tasks"]):
            edit(t["root"], picks[i * 10:(i + 1) * 10], k)
        os.sync()
        la = b.timed([b.bin, "apply", "bench-local"], repo)
        out["apply_ref"] = (la[0] + fetch[0], max(la[1], fetch[1]))
        b.wait_trash(ws_root)
        restore(repo, originals)
        b.git(repo, "status", "--porcelain")
        # the worker's side goes
        for t in "abcd":
            b.git(wc, "worktree", "remove", "--force", "--force", dirs[t])
        b.git(rc, "worktree", "remove", "--force", ref_dir)
        for c in (wc, rc):
            for r in b.git(c, "for-each-ref", "--format=%(refname)", "refs/pi-delegate/", "refs/bench/").split():
                b.git(c, "update-ref", "-d", r)
        return out

    got = []
    try:
        for k in range(reps + 1):
            r = one_round(k)
            if k:
                got.append(r)
    except RuntimeError as e:
        say(f"remote rows skipped: {e}")
        b.delegate(repo, "drop", "bench-remote", "--force", check=False)
        b.delegate(repo, "drop", "bench-local", "--force", check=False)
        return
    med = lambda key: statistics.median(r[key][0] for r in got)  # noqa: E731
    rss = lambda key: max(r[key][1] for r in got)  # noqa: E731
    rows.add("join in a clone vs git fetch + worktree add", n, med("join"), med("join_ref"),
             at(n, [10000], ("ratio", 1.0)), rss("join"), rss("join_ref"))
    rows.add("submit 10 files vs git push", n, med("submit"), med("submit_ref"),
             at(n, [10000], ("ratio", 1.5)), rss("submit"), rss("submit_ref"))
    rows.add("apply 4 remote tasks vs local apply + git fetch", n, med("apply"), med("apply_ref"),
             at(n, [10000], ("ratio", 1.0)), rss("apply"), rss("apply_ref"))


def bench_undo(b, rows, repo, n, files, reps):
    """Rounds of: prepare 4 tasks, each appends a line to 10 files (40
    distinct ones), `apply` timed (the reference), then `undo` of that apply
    timed (ours); undo must give back the source's 40 files byte for byte
    (checked). One unmeasured round first. Design §3.11: undo costs no more
    than the apply it takes back."""
    rng = random.Random(11)
    txt = [f for f in files if f.endswith(".txt")]
    label = "bench-undo"

    def one_round(k):
        _, ws_root, originals = prepare_four_edited(b, repo, label, rng, txt,
                                                    lambda t: f"task {t} undo round {k}\n")
        applied, _ = b.timed([b.bin, "apply", label], repo)
        b.wait_trash(ws_root)
        os.sync()
        undone, rss = b.timed([b.bin, "undo"], repo)
        for rel, data in originals.items():
            with open(os.path.join(repo, rel), "rb") as f:
                if f.read() != data:
                    raise RuntimeError(f"undo did not restore {rel}")
        return undone, rss, applied

    ours_t, ref_t, rss = [], [], 0
    try:
        for k in range(reps + 1):
            t, r, a = one_round(k)
            if k == 0:
                continue
            ours_t.append(t)
            ref_t.append(a)
            rss = max(rss, r)
    except RuntimeError as e:
        say(f"undo skipped: {e}")
        b.delegate(repo, "drop", label, "--force", check=False)
        return None
    rows.add("undo of an apply of 4 tasks x 10 files vs that apply", n, statistics.median(ours_t),
             statistics.median(ref_t), at(n, [100000], ("ratio", 1.0)), rss)


def bench_diff(b, rows, repo, n, files, reps):
    """`git delegate diff` of a task that changed 10 files (design §3.16:
    "about one `git status`"): `prepare -n 1`, the task appends a line to 10
    files, then alternately `git delegate diff 1` (ours: the workspace read
    through its stat cache, the patch made in object memory) and `git
    status` in the workspace (the reference). One unmeasured round first."""
    rng = random.Random(13)
    txt = [f for f in files if f.endswith(".txt")]
    label = "bench-diff"
    doc = json.loads(b.delegate(repo, "prepare", "-n", "1", "--label", label, "--json"))
    root = doc["tasks"][0]["root"]
    for rel in rng.sample(txt, 10):
        with open(os.path.join(root, rel), "a") as f:
            f.write("diff bench\n")
    ours_t, ref_t, rss = [], [], 0
    for k in range(reps + 1):
        t, r = b.timed([b.bin, "diff", "1", "--batch", label, "--no-pager"], repo)
        g, _ = b.timed(["git", "status", "--porcelain"], root)
        if k == 0:
            continue
        ours_t.append(t)
        ref_t.append(g)
        rss = max(rss, r)
    b.delegate(repo, "drop", label, "--force", check=False)
    rows.add("diff of a task with 10 changed files vs git status there", n, statistics.median(ours_t),
             statistics.median(ref_t), at(n, [100000], ("ratio", 1.5)), rss)


def bench_contain(b, rows, repo, n, reps):
    """Containment (design §3.22): alternating rounds of `run -n 4 -- true`
    with its workers contained by Landlock (the default) and the same with
    `--no-sandbox`, each applying its 4 unchanged tasks and waiting for the
    background removal of the workspaces. Skipped where the kernel has no
    Landlock (the contained run would be the unconfined one)."""
    label = "bench-contain"
    ws_root = os.path.join(b.env["XDG_DATA_HOME"], "git-delegate", "worktrees")
    try:
        with open("/sys/kernel/security/lsm") as f:
            if "landlock" not in f.read():
                say("contain skipped: no Landlock in /sys/kernel/security/lsm")
                return
    except OSError:
        pass

    def run(*extra):
        def go():
            t, rss = b.timed([b.bin, "run", "-n", "4", *extra, "--label", label, "--", "true"], repo)
            b.wait_trash(ws_root)
            return t, rss
        return go

    try:
        o, r, o_rss, r_rss = alternate(reps, run(), run("--no-sandbox"))
        rows.add("run -n 4 -- true contained vs --no-sandbox", n, o, r, at(n, [10000], ("ratio", 1.05)),
                 o_rss, r_rss)
    except RuntimeError as e:
        say(f"contain skipped: {e}")
        b.delegate(repo, "drop", label, "--force", check=False)


def bench_run(b, rows, repo, n, reps, output_mib):
    """`git delegate run` (design §3.13). Alternating rounds of `run -n 8 --
    true` (ours) and `prepare -n 8` + `apply` of the 8 unchanged tasks (the
    reference: the same two transactions run by hand), each round waiting
    for the background removal of the workspaces. Then run's own peak RSS
    while 8 workers each write `output_mib` MiB to stdout (`--no-apply`, the
    batch dropped after), against the same run with workers writing
    nothing: the output goes straight into the log files, so the RSS must
    not grow with it."""
    label = "bench-run"
    ws_root = os.path.join(b.env["XDG_DATA_HOME"], "git-delegate", "worktrees")

    def ours():
        t, rss = b.timed([b.bin, "run", "-n", "8", "--label", label, "--", "true"], repo)
        b.wait_trash(ws_root)
        return t, rss

    def by_hand():
        t1, r1 = b.timed([b.bin, "prepare", "-n", "8", "--label", label], repo)
        t2, r2 = b.timed([b.bin, "apply", label], repo)
        b.wait_trash(ws_root)
        return t1 + t2, max(r1, r2)

    try:
        o, r, o_rss, r_rss = alternate(reps, ours, by_hand)
        rows.add("run -n 8 -- true vs prepare -n 8 + apply", n, o, r, at(n, [10000], ("ratio", 1.05)),
                 o_rss, r_rss)

        def output(mib):
            cmd = ["sh", "-c", f"head -c {mib << 20} /dev/zero"] if mib else ["true"]
            t, rss = b.timed([b.bin, "run", "-n", "8", "--no-apply", "--label", label, "--", *cmd], repo)
            b.delegate(repo, "drop", label, "--force")
            b.wait_trash(ws_root)
            return t, rss

        t_big, rss_big = output(output_mib)
        t_none, rss_none = output(0)
        rows.add(f"  run's peak RSS, 8 workers x {output_mib} MiB output vs x 0", n, t_big, t_none,
                 ("info", None), rss_big, rss_none,
                 note=f"RSS {rss_big // 1024} vs {rss_none // 1024} MiB")
    except RuntimeError as e:
        say(f"run skipped: {e}")
        b.delegate(repo, "drop", label, "--force", check=False)


def bench_verify(b, rows, repo, n, files, reps):
    """`apply --verify true` (design §3.10). Rounds of: `prepare -n 1`
    (timed: one task workspace), the task appends a line to one file, then
    `apply`, alternately with and without `--verify true`. The verification
    overhead (median apply with, minus median apply without: one whole
    snapshot, one verification workspace made and removed, one run of
    `true`) is set against one task workspace of prepare. Then 8 tasks, one
    of them a culprit: the runs the search made (bound 2 + 1*(3 + 1) = 6)."""
    rng = random.Random(11)
    txt = [f for f in files if f.endswith(".txt")]
    label = "bench-verify"

    def one_round(verify):
        os.sync()
        t_prep, _ = b.timed([b.bin, "prepare", "-n", "1", "--label", label], repo)
        doc = json.loads(b.delegate(repo, "status", label, "--json"))
        root = doc["batches"][0]["tasks"][0]["root"]
        rel = rng.choice(txt)
        with open(os.path.join(repo, rel), "rb") as f:
            original = f.read()
        with open(os.path.join(root, rel), "a") as f:
            f.write("verify bench\n")
        os.sync()
        args = [b.bin, "apply", label] + (["--verify", "true"] if verify else [])
        t, rss = b.timed(args, repo)
        b.wait_trash(os.path.dirname(os.path.dirname(os.path.dirname(root))))
        with open(os.path.join(repo, rel), "wb") as f:
            f.write(original)
        return t_prep, t, rss

    prep_t, with_t, without_t, rss = [], [], [], 0
    try:
        for k in range(reps + 1):
            p1, t1, r1 = one_round(True)
            p2, t2, _ = one_round(False)
            if k == 0:
                continue
            prep_t += [p1, p2]
            with_t.append(t1)
            without_t.append(t2)
            rss = max(rss, r1)
    except RuntimeError as e:
        say(f"verify skipped: {e}")
        b.delegate(repo, "drop", label, "--force", check=False)
        return
    overhead = statistics.median(with_t) - statistics.median(without_t)
    prep1 = statistics.median(prep_t)
    rows.add("apply --verify true: overhead vs prepare -n 1", n, overhead, prep1,
             at(n, [10000, 100000], ("ratio", 1.0)), rss,
             note=f"apply {statistics.median(without_t) * 1000:.0f} ms without")

    # 8 tasks, task 5 a culprit.
    doc = json.loads(b.delegate(repo, "prepare", "-n", "8", "--label", label, "--json"))
    for t in doc["tasks"]:
        with open(os.path.join(t["root"], f"verify-bench-{t['name']}.txt"), "w") as f:
            f.write("BAD\n" if t["name"] == "5" else "ok\n")
    out = b.delegate(repo, "apply", label, "--json", "--verify", "! grep -qs BAD verify-bench-*.txt", check=False)
    runs = len(json.loads(out)["verify"]["runs"])
    rows.add("apply --verify, 8 tasks, 1 culprit: runs vs bound 6", n, runs, 6, ("ratio", 1.0), unit="x",
             note=f"{runs} runs")
    b.delegate(repo, "drop", label, "--force", check=False)
    for name in os.listdir(repo):
        if name.startswith("verify-bench-"):
            os.remove(os.path.join(repo, name))


def bench_no_batch(b, rows, repo, n, reps):
    for name, cmd in [("status, no batch", ["status"]), ("hook pre-commit, no batch", ["hook", "pre-commit"])]:
        if b.against:
            ours, ref, rss, ref_rss = alternate(
                reps * 4, lambda: b.timed([b.bin, *cmd], repo, check=False),
                lambda: b.timed([b.against, *cmd], repo, check=False))
            rows.add(name, n, ours, ref, ("ms", 20), rss, ref_rss)
            continue
        runs = [b.timed([b.bin, *cmd], repo, check=False) for _ in range(reps * 4)]
        rows.add(name, n, statistics.median(r[0] for r in runs), 0, ("ms", 20), max(r[1] for r in runs))


def bench_pre_push(b, rows, tmp, reps, commits=10000):
    """The pre-push hook's check (design §3.19) on a push of `commits` new
    commits, each changing one file of a 1000-file tree in 10 folders,
    against `git rev-list` of the same range: the hook walks only the
    commits the remote does not have (stopping at its remote-tracking refs
    and the old tip) and reads each one. Two rows: with no private blob
    recorded (identity only; target <= 3x the plain walk), and with 100
    recorded (none in the push), where each commit's tree is diffed against
    its parent's, the cost `git log --raw` pays for the same range
    (rev-list plus a diff per commit): target <= 3x that, and reported
    against rev-list."""
    repo = os.path.join(tmp, "prepush")
    rmtree(repo)
    os.makedirs(repo)
    b.git(repo, "init", "-q", "-b", "main")
    now = int(time.time())
    # The base: 1000 files in 10 folders; then `commits` commits on top,
    # each changing one of them, through fast-import, dated now.
    lines = ["commit refs/heads/main", "mark :1", f"author A <a@example.com> {now} +0000",
             f"committer A <a@example.com> {now} +0000", "data 4", "base"]
    for i in range(1000):
        lines += [f"M 100644 inline d{i % 10}/f{i}", f"data {len(str(i)) + 1}", f"{i}"]
    lines.append("")
    for i in range(commits):
        body = f"c{i}"
        lines += ["commit refs/heads/big", f"mark :{i + 2}",
                  f"author A <a@example.com> {now} +0000", f"committer A <a@example.com> {now} +0000",
                  f"data {len(body)}", body, f"from :{i + 1}",
                  f"M 100644 inline d{i % 10}/f{(i * 7) % 1000}", f"data {len(body) + 1}", body + "x", ""]
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, input="\n".join(lines) + "\n", text=True,
                   check=True, env=b.env)
    # Packed as git packs a repository (newest objects whole, older ones
    # deltas of them): fast-import's own pack deltas each tree on the one
    # before, 50 deep, which gix's delta cache resolves again for each tree
    # read newest first (about 2.5x the time of this row).
    b.git(repo, "repack", "-adfq")
    base = b.git(repo, "rev-parse", "main").strip()
    b.git(repo, "update-ref", "refs/remotes/origin/main", base)
    tip = b.git(repo, "rev-parse", "refs/heads/big").strip()
    stdin = os.path.join(tmp, "prepush.in")
    with open(stdin, "w") as f:
        f.write(f"refs/heads/big {tip} refs/heads/big {'0' * 40}\n")
    hook = ["sh", "-c", 'exec "$0" hook pre-push origin file:///nowhere < "$1"', b.bin, stdin]
    revlist = ["git", "rev-list", "--count", tip, "^refs/remotes/origin/main"]
    ours, theirs, rss, ref_rss = alternate(reps, lambda: b.timed(hook, repo), lambda: b.timed(revlist, repo))
    rows.add(f"hook pre-push, {commits} new commits", 1, ours, theirs, ("ratio", 3), rss, ref_rss,
             note="vs git rev-list")
    # 100 recorded blobs, none of them pushed: every commit is diffed.
    record = os.path.join(repo, ".git", "delegate", "private-blobs")
    os.makedirs(os.path.dirname(record), exist_ok=True)
    with open(record, "w") as f:
        f.write("# git-delegate private blobs (design 3.19): <blob id> <unix time> <batch id>\n")
        for i in range(100):
            f.write(f"{hashlib.sha1(str(i).encode()).hexdigest()} {now} 00000000-0000-4000-8000-000000000000\n")
    raw = ["git", "log", "--raw", "--no-abbrev", "--format=%H", tip, "^refs/remotes/origin/main"]
    ours, theirs, rss, ref_rss = alternate(reps, lambda: b.timed(hook, repo), lambda: b.timed(raw, repo))
    rows.add(f"hook pre-push, {commits} new commits, 100 blobs recorded", 1, ours, theirs, ("ratio", 3), rss,
             ref_rss, note="vs git log --raw")
    ours2, theirs2, rss2, ref_rss2 = alternate(reps, lambda: b.timed(hook, repo), lambda: b.timed(revlist, repo))
    rows.add(f"  the same, vs git rev-list", 1, ours2, theirs2, ("info", None), rss2, ref_rss2,
             note="vs git rev-list")


def bench_big(b, rows, tmp, mib=1024):
    """Peak RSS of apply with one big changed file of random bytes (only
    with --big): a task that adds it, and a task that rewrites 4 KiB in the
    middle of one the baseline has. Target: <= 0.1x the file's size."""
    repo = os.path.join(tmp, "repo-big")
    make_repo(b, repo, 1000)
    size = mib << 20

    def big_file(path):
        with open(path, "wb") as f:
            for i in range(mib):
                f.write(random.Random(i).randbytes(1 << 20))

    def apply_one(binary, edit):
        doc = json.loads(b.delegate(repo, "prepare", "-n", "1", "--label", "big", "--json"))
        root = doc["tasks"][0]["root"]
        edit(root)
        os.sync()
        t, rss = b.timed([binary, "apply", "big"], repo)
        b.wait_trash(os.path.dirname(os.path.dirname(os.path.dirname(root))))
        return t, rss

    def add(root):
        big_file(os.path.join(root, "big.bin"))

    def rewrite(root):
        with open(os.path.join(root, "big.bin"), "r+b") as f:
            f.seek(size // 2)
            f.write(os.urandom(4096))

    for what, edit in [(f"adds a {mib} MiB file", add), (f"rewrites 4 KiB of a {mib} MiB file", rewrite)]:
        t, rss = apply_one(b.bin, edit)
        ref, note = 1.0, f"apply took {t:.1f} s"
        if b.against:
            if what.startswith("adds"):
                os.remove(os.path.join(repo, "big.bin"))
            t2, rss2 = apply_one(b.against, edit)
            ref, note = rss2 * 1024 / size, note + f", the other binary's {t2:.1f} s"
        rows.add(f"apply peak RSS / file size, task {what}", 1000, rss * 1024 / size, ref, ("ratio", 0.1), rss,
                 0, note=note, unit="x")
        if what.startswith("adds"):
            # The added file is the baseline of the next row.
            b.git(repo, "add", "big.bin")
            b.git(repo, "commit", "-q", "-m", "big")
    rmtree(repo)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--reps", type=int, default=5, help="repetitions of the fast rows")
    ap.add_argument("--prepare-reps", default="3,3,1",
                    help="repetitions of the prepare rows, per size (comma list); apply takes --reps rounds below 100k, 3 at 100k")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/git-delegate"))
    ap.add_argument("--against", metavar="BIN",
                    help="A/B: the reference column runs this other git-delegate binary instead of git")
    ap.add_argument("--xfs", help="an XFS reflink folder for the XFS rows (default /tmp/git-delegate-xfs)")
    ap.add_argument("--make-xfs", metavar="SIZE",
                    help="as root: make a dedicated XFS reflink loop mount of SIZE (e.g. 8G) with scripts/reflink-fs")
    ap.add_argument("--make-ext4", metavar="SIZE",
                    help="as root: also measure prepare on a journaled ext4 loop mount of SIZE (e.g. 8G)")
    ap.add_argument("--btrfs", metavar="DIR",
                    help="a folder on btrfs for the snapshot-workspace rows (prepare -n 1, 4, 8; design 3.17)")
    ap.add_argument("--make-btrfs", metavar="SIZE",
                    help="as root: make a dedicated btrfs loop mount of SIZE (e.g. 8G) with scripts/btrfs-fs")
    ap.add_argument("--only-btrfs", action="store_true", help="run the btrfs rows alone")
    ap.add_argument("--disk-dir", metavar="DIR",
                    help="also run the pool row with the workspaces in DIR (say, /var/tmp/gd-bench-disk on an ext4 "
                    "disk; made, and removed at the end); default off")
    ap.add_argument("--prepare-cargo-reps", type=int, default=3,
                    help="repetitions of each side of the pool-cargo row (warm-cache effect of the pool)")
    ap.add_argument("--no-cold", action="store_true", help="skip the cold prepare rows")
    ap.add_argument("--run-output-mib", type=int, default=100,
                    help="MiB each of run's 8 workers writes in the RSS row (default 100, as the issue asks)")
    ap.add_argument("--big", action="store_true", help="add the 1 GiB apply row (needs ~3 GiB of disk)")
    ap.add_argument("--keep", help="build repositories in this folder and keep them")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ap.add_argument("--only", help="comma-separated rows to run (default all): snapshot, no-batch, "
                    "touch, prepare, setup, pool (with its floor and apply with a pool), pool-cargo, pool-venv, apply, undo, "
                    "verify, diff, run, contain, remote, sparse, cold, pre-push")
    ap.add_argument("--only-remote", action="store_true",
                    help="build the repositories and run only the remote-worker rows (design §3.14)")
    ap.add_argument("--sparse-size", type=int, default=100000,
                    help="files of the sparse-checkout repository (5%% cone, design §3.15); 0: no sparse rows")
    ap.add_argument("--sparse-reps", type=int, default=3, help="repetitions of the sparse prepare rows")
    args = ap.parse_args()
    only = set(args.only.split(",")) if args.only else None
    if args.only_remote:
        only = {"remote"}

    def want(name):
        return only is None or name in only
    if not os.path.exists(args.bin):
        sys.exit(f"{args.bin} not found: run `cargo build --release` first")
    tmp = args.keep or tempfile.mkdtemp(prefix="gd-bench-")
    os.makedirs(tmp, exist_ok=True)
    against = None
    if args.against:
        if not os.path.exists(args.against):
            sys.exit(f"{args.against} not found")
        against = os.path.abspath(args.against)
    b = Bench(tmp, os.path.abspath(args.bin), against)
    rows = Rows(against)
    started = time.perf_counter()

    made_xfs = None
    xfs = args.xfs
    if args.make_xfs:
        made_xfs = image_fs("XFS", "/tmp/git-delegate-bench-xfs", args.make_xfs)
        xfs = made_xfs or xfs
    elif not xfs and is_reflink_xfs("/tmp/git-delegate-xfs"):
        xfs = "/tmp/git-delegate-xfs"
    if xfs and not is_reflink_xfs(xfs):
        say(f"no XFS rows: {xfs} is not an XFS mount with reflink=1")
        xfs = None
    if not xfs:
        say("no XFS rows: no XFS reflink mount (run as root with --make-xfs 8G, or scripts/reflink-fs)")
    xfs_base = None
    if xfs:
        xfs_base = tempfile.mkdtemp(prefix="gd-bench-", dir=xfs)
    ext4 = make_ext4(args.make_ext4) if args.make_ext4 else None
    made_btrfs = None
    btrfs = args.btrfs
    if args.make_btrfs:
        made_btrfs = image_fs("btrfs", "/tmp/git-delegate-bench-btrfs", args.make_btrfs)
        btrfs = made_btrfs or btrfs
    if btrfs and fs_type(btrfs) != "btrfs":
        say(f"no btrfs rows: {btrfs} is not on btrfs")
        btrfs = None

    disk_base = None
    if args.disk_dir:
        os.makedirs(args.disk_dir, exist_ok=True)
        disk_base = tempfile.mkdtemp(prefix="gd-bench-", dir=args.disk_dir)

    # `--sizes ''`: no rows of the synthetic sizes (the sparse rows alone).
    sizes = [int(s) for s in args.sizes.split(",") if s]
    preps = [int(x) for x in args.prepare_reps.split(",")]
    reps_of = {n: (preps[min(k, len(preps) - 1)] if n < 100000 else preps[-1]) for k, n in enumerate(sizes)}
    repos, files_of = {}, {}
    apply_by_size = {}
    try:
        # Phase 1, per size: the snapshot rows and the warm prepare rows. No
        # tree on the temp folder's filesystem is deleted before phase 2.
        others = [] if args.only_btrfs else sizes
        for n in others:
            reps_n = args.reps if n < 100000 else max(3, args.reps // 2)
            repo = repos[n] = os.path.join(tmp, f"repo{n}")
            rmtree(repo)
            t0 = time.perf_counter()
            files_of[n] = make_repo(b, repo, n)
            say(f"{n} files: repository built in {time.perf_counter() - t0:.1f} s")
            if want("snapshot"):
                bench_snapshot(b, rows, repo, n, reps_n)
            if want("no-batch"):
                bench_no_batch(b, rows, repo, n, reps_n)
            if want("touch"):
                bench_touch(b, rows, repo, n, reps_n)
            if want("prepare"):
                bench_prepare_warm(b, rows, repo, n, os.path.join(tmp, f"fs{n}"), fs_type(tmp),
                                   at(n, [10000, 100000], ("ratio", 0.6)), reps_of[n], keep=True)
            if xfs_base and want("prepare"):
                need = 9 * n * 4096 + (64 << 20)
                if free_bytes(xfs_base) > need:
                    bench_prepare_warm(b, rows, repo, n, os.path.join(xfs_base, f"fs{n}"), "XFS reflink",
                                       at(n, [10000, 100000], ("ratio", 0.3)), reps_of[n], keep=False)
                    rmtree(os.path.join(xfs_base, f"fs{n}"))
                else:
                    say(f"XFS rows at {n} files skipped: {xfs} has {free_bytes(xfs_base) >> 20} MiB free, "
                        f"about {need >> 20} MiB needed (use --make-xfs 8G as root)")
            if ext4 and want("prepare"):
                bench_prepare_warm(b, rows, repo, n, os.path.join(ext4, f"fs{n}"), "ext4 with journal (loop)",
                                   at(n, [10000, 100000], ("ratio", 0.6)), reps_of[n], keep=False)
                rmtree(os.path.join(ext4, f"fs{n}"))
            if want("setup"):
                bench_setup(b, rows, repo, n, os.path.join(tmp, f"setup{n}"), reps_of[n])
            # Issue 37's goals for a pooled prepare.
            pool_target = {10000: ("ratio", 0.1), 100000: ("ratio", 0.2)}.get(n, ("info", None))
            if want("pool"):
                bench_pool(b, rows, repo, n, os.path.join(tmp, f"pool{n}"), fs_type(tmp), reps_of[n],
                           pool_target)
            if disk_base and want("pool"):
                bench_pool(b, rows, repo, n, os.path.join(disk_base, f"pool{n}"), fs_type(disk_base) + " disk",
                           reps_of[n], pool_target)
        if btrfs:
            for n in sizes:
                bench_btrfs(b, rows, btrfs, n, reps_of[n])
        if want("pre-push"):
            bench_pre_push(b, rows, tmp, args.reps)
        # Phase 2: apply (it removes its workspaces), then the cold rows.
        os.sync()
        for n in others:
            # More rounds where they are cheap: 4 x git status of 1k files
            # takes tens of milliseconds, where one hiccup shows.
            res = None
            if want("apply"):
                res = bench_apply(b, rows, repos[n], n, files_of[n], args.reps if n < 100000 else 3)
            if res:
                apply_by_size[n] = res
            if want("pool") and not b.against:
                bench_apply_pool(b, rows, repos[n], n, files_of[n], os.path.join(tmp, f"apply-pool{n}"),
                                 args.reps if n < 100000 else 3)
            if not b.against:
                if want("remote"):
                    bench_remote(b, rows, tmp, repos[n], n, files_of[n], args.reps if n < 100000 else 3)
                if want("undo"):
                    bench_undo(b, rows, repos[n], n, files_of[n], args.reps if n < 100000 else 3)
                if want("verify"):
                    bench_verify(b, rows, repos[n], n, files_of[n], args.reps if n < 100000 else 3)
                if want("diff"):
                    bench_diff(b, rows, repos[n], n, files_of[n], args.reps if n < 100000 else 3)
                if want("run"):
                    bench_run(b, rows, repos[n], n, args.reps if n < 100000 else 3, args.run_output_mib)
                if want("contain"):
                    bench_contain(b, rows, repos[n], n, args.reps if n < 100000 else 3)
        if not args.no_cold and want("cold"):
            for n in [n for n in others if n < 100000]:
                bench_prepare_cold(b, rows, repos[n], n, os.path.join(tmp, f"cold{n}"), fs_type(tmp),
                                   at(n, [10000, 100000], ("ratio", 0.6)), reps_of[n])
        if len(apply_by_size) >= 2:
            lo, hi = min(apply_by_size), max(apply_by_size)
            ours = apply_by_size[hi][0] / apply_by_size[lo][0]
            ref = apply_by_size[hi][1] / apply_by_size[lo][1]
            rows.add(f"apply growth {lo} -> {hi} files", hi, ours, ref, ("growth", None), unit="x")
        if want("pool-cargo") and not b.against:
            bench_pool_cargo(b, rows, tmp, args.prepare_cargo_reps)
        if want("pool-venv") and not b.against:
            bench_pool_venv(b, rows, tmp, args.prepare_cargo_reps)
        if args.sparse_size and not b.against and want("sparse"):
            bench_sparse(b, rows, tmp, args.sparse_size, args.sparse_reps)
        if args.big:
            bench_big(b, rows, tmp)
    finally:
        if not args.keep:
            rmtree(tmp)
        if xfs_base:
            rmtree(xfs_base)
        if disk_base:
            rmtree(disk_base)
        if ext4:
            subprocess.run(["umount", ext4])
            os.rmdir(ext4)
            os.remove(EXT4_IMAGE)
        if made_btrfs:
            image_fs("btrfs", made_btrfs)
        if made_xfs:
            image_fs("XFS", made_xfs)
    print()
    print(f"git-delegate benchmark, {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}, {time.perf_counter() - started:.0f} s")
    rows.print(markdown=args.markdown)


IMAGE_FS_SCRIPTS = {"XFS": "scripts/reflink-fs", "btrfs": "scripts/btrfs-fs"}


def image_fs(kind, mount, size=None):
    """A `kind` filesystem ("XFS" or "btrfs") in an image under /var/tmp,
    by the script of IMAGE_FS_SCRIPTS: mounted at `mount` with `size`,
    returning the mount (None, having said why, if the script failed), or
    with no `size` unmounted."""
    var = f"GIT_DELEGATE_{kind.upper()}"
    env = dict(os.environ, **{f"{var}_MOUNT": mount, f"{var}_IMAGE": f"/var/tmp/git-delegate-bench-{kind.lower()}.img"})
    script = IMAGE_FS_SCRIPTS[kind]
    if size is None:
        subprocess.run(["bash", os.path.join(ROOT, script), "--unmount"], env=env)
        return None
    env[f"{var}_SIZE"] = size
    p = subprocess.run(["bash", os.path.join(ROOT, script)], env=env, capture_output=True, text=True)
    if p.returncode == 0:
        return p.stdout.strip()
    say(f"no {kind} rows: {script} failed: {p.stderr.strip()}")
    return None


def btrfs_used(mount):
    """(data, metadata) bytes used on the btrfs at `mount`, after a sync."""
    subprocess.run(["btrfs", "filesystem", "sync", mount], capture_output=True)
    out = subprocess.run(["btrfs", "filesystem", "df", "-b", mount], capture_output=True, text=True).stdout
    used = {}
    for line in out.splitlines():
        kind = line.split(",")[0].strip()
        if "used=" in line:
            used[kind] = used.get(kind, 0) + int(line.split("used=")[1].split()[0])
    return used.get("Data", 0), used.get("Metadata", 0)


def btrfs_du(path):
    """(total, exclusive, shared) bytes of `btrfs filesystem du -s --raw`."""
    out = subprocess.run(["btrfs", "filesystem", "du", "-s", "--raw", path],
                         capture_output=True, text=True).stdout.splitlines()
    try:
        total, excl, shared = out[-1].split()[:3]
        return int(total), int(excl), int(shared)
    except (IndexError, ValueError):
        return 0, 0, 0


def bench_btrfs(b, rows, mount, n, reps):
    """Snapshot workspaces (design §3.17): the repository and the workspace
    root on btrfs; prepare -n 1, 4, 8 (the first workspace a subvolume, the
    others its snapshots), 8 sequential `git worktree add --detach` as the
    reference, and the disk 8 fresh workspaces take against one."""
    base = tempfile.mkdtemp(prefix="gd-bench-", dir=mount)
    try:
        repo = os.path.join(base, "repo")
        make_repo(b, repo, n)
        ws = os.path.join(base, "ws")
        with open(os.path.join(repo, ".git/delegate.toml"), "w") as f:
            f.write(f'[workspace]\nroot = "{ws}"\n')
        head = b.git(repo, "rev-parse", "HEAD").strip()
        label = [0]

        def prepare(k):
            os.sync()
            label[0] += 1
            name = f"btrfs-{label[0]}"
            t, _ = b.timed([b.bin, "prepare", "-n", str(k), "--label", name], repo)
            return t, name

        def drop(name):
            b.delegate(repo, "drop", name, "--force", check=False)
            b.wait_trash(ws)

        # Disk first, on a filesystem that holds only the repository.
        d0, m0 = btrfs_used(mount)
        _, one = prepare(1)
        d1, m1 = btrfs_used(mount)
        _, eight = prepare(8)
        d8, m8 = btrfs_used(mount)
        say(f"btrfs {n}: btrfs filesystem df: prepare -n 1 used data {d1 - d0} B, metadata {m1 - m0} B; "
            f"prepare -n 8 used data {d8 - d1} B, metadata {m8 - m1} B")
        for folder in sorted(glob.glob(os.path.join(ws, "*", "*")), key=os.path.getmtime):
            if os.path.basename(folder).startswith("."):
                continue
            tasks = len(os.listdir(folder))
            total, excl, shared = btrfs_du(folder)
            plain = subprocess.run(["du", "-s", "-B1", folder], capture_output=True, text=True).stdout.split()
            say(f"btrfs {n}: batch of {tasks}: `btrfs filesystem du -s`: total {total} B, exclusive {excl} B, "
                f"set shared {shared} B; `du -s` (shared extents counted per workspace): "
                f"{plain[0] if plain else '?'} B")
        rows.add("disk of 8 fresh workspaces vs 1 (data + metadata), btrfs", n,
                 (d8 - d1) + (m8 - m1), (d1 - d0) + (m1 - m0), at(n, [10000, 100000], ("ratio", 2.0)), unit="MiB")
        drop(one)
        drop(eight)
        times = {}
        for k in (1, 4, 8):
            if reps > 1:
                drop(prepare(k)[1])  # warm-up
            ts = []
            for _ in range(reps):
                t, name = prepare(k)
                ts.append(t)
                drop(name)
            times[k] = statistics.median(ts)
        ref = []
        for r in range(reps):
            os.sync()
            start = time.perf_counter()
            paths = []
            for i in range(8):
                path = os.path.join(base, "wt", f"{r}-{i}")
                b.timed(["git", "worktree", "add", "-q", "--detach", path, head], repo)
                paths.append(path)
            ref.append(time.perf_counter() - start)
            for path in paths:
                b.run(["git", "worktree", "remove", "--force", path], repo, check=False)
        ref = statistics.median(ref)
        rows.add("prepare -n 1, btrfs", n, times[1], 0, ("info", None))
        rows.add("prepare -n 4, btrfs", n, times[4], ref / 2, ("info", None), note="vs 4 worktree adds (half of 8)")
        rows.add("prepare -n 8 vs prepare -n 1, btrfs", n, times[8], times[1], at(n, [100000], ("ratio", 1.2)))
        rows.add("prepare -n 8 vs 8 git worktree add, btrfs", n, times[8], ref, at(n, [100000], ("ratio", 0.15)))
    finally:
        rmtree(base)


EXT4_IMAGE = "/var/tmp/git-delegate-bench-ext4.img"


def make_ext4(size):
    """A journaled ext4 (mkfs defaults) loop mount, as most machines have:
    without the journal-less root filesystem's scan of recently deleted
    inodes. Needs root; None (and said so) otherwise."""
    mount = "/tmp/git-delegate-bench-ext4"
    try:
        subprocess.run(["truncate", "-s", size, EXT4_IMAGE], check=True)
        # One inode per 4 KiB: the 100k rows keep 800k files at once.
        subprocess.run(["mkfs.ext4", "-q", "-F", "-i", "4096", EXT4_IMAGE], check=True, capture_output=True)
        os.makedirs(mount, exist_ok=True)
        subprocess.run(["mount", "-o", "loop", EXT4_IMAGE, mount], check=True, capture_output=True)
        os.chmod(mount, 0o1777)
        return mount
    except (subprocess.CalledProcessError, FileNotFoundError, PermissionError) as e:
        say(f"no journaled ext4 rows: {e}")
        if os.path.exists(EXT4_IMAGE):
            os.remove(EXT4_IMAGE)
        return None


def fs_type(path):
    try:
        # Mounts stacked on one folder (a tmpfs over /dev/shm) give a line
        # each, the one in force last.
        lines = subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "--target", path],
                               capture_output=True, text=True).stdout.split()
        return lines[-1] if lines else "?"
    except FileNotFoundError:
        return "?"


if __name__ == "__main__":
    main()
