"""Changegroup paths as users take them (issue 21), for ``bench.py``.

Each path applies the whole history of a repository to an empty one:

  http    ``hg clone -U http://...`` against a stock ``hg serve`` of the
          source (no ``--stream``: a zstd changegroup)
  ssh     ``hg clone -U ssh://...`` (``fixtures/dummyssh`` through
          ``sshcpu.py``; a stock ``hg serve --stdio``, not counted in the
          client's CPU)
  bzip2   ``hg unbundle`` of a bzip2-v2 bundle (``hg bundle``'s default)
  zstd    ``hg unbundle`` of a zstd-v2 bundle
  none    ``hg unbundle`` of a none-v2 bundle

stock and fastio (the extension on the client only) take turns, ``runs``
times; the table shows medians and fastio / stock ratios.  ``CPU`` is the
client's user+sys time (``wait4``: the client hg process and the
processes it reaped; ``sshcpu.py`` runs the ssh server where the client
never reaps it): the server shares the 2-core machine, so a clone's wall
time also depends on how the two processes share it.  The
first run of each path is checked: fastio's store byte for byte against
stock's (``fixtures/storecompare.py``), and ``hg verify`` of fastio's result
once per row.

The history-rich repository is built by ``makeproject.py`` once and kept
in the work directory (its name carries its parameters and the
generator's version).
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# what the benchmarks share with the tests (fixtures/: repository
# generators, shims, comparisons)
sys.path.insert(0, os.path.join(ROOT, "fixtures"))

import makeproject  # noqa: E402
from bench_serve import Server, ext_args  # noqa: E402

HG = os.path.join(os.path.dirname(sys.executable), "hg")
TIMER = os.path.join(HERE, "benchtimer.py")
SSHCPU = os.path.join(HERE, "sshcpu.py")
STORECOMPARE = os.path.join(ROOT, "fixtures", "storecompare.py")

PATHS = ["http", "ssh", "bzip2", "zstd", "none"]
LABELS = {
    "http": "hg clone http:// (zstd)",
    "ssh": "hg clone ssh://",
    "bzip2": "hg unbundle bzip2-v2",
    "zstd": "hg unbundle zstd-v2",
    "none": "hg unbundle none-v2",
}
# what a path's ratio is judged on (issue 21): client CPU for clones
JUDGED = {"http": "cpu", "ssh": "cpu", "bzip2": "wall", "zstd": "wall", "none": "wall"}

# repositories: a makerepo.py size (bench.prepare builds it), or a
# makeproject.py history (FILES at the tip, COMMITS changesets)
REPOS = {
    "10k": ("makerepo", 10000),
    "100k": ("makerepo", 100000),
    "hist": ("makeproject", 20000, 30000),
    "hist-small": ("makeproject", 2000, 3000),
}


def run_usage(cmd, env, cwd=None, stderr=None):
    """``(wall seconds, rusage)`` of a command that must succeed; the
    rusage counts the processes it reaped (Linux ``wait4``)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=stderr
    )
    __, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code:
        raise subprocess.CalledProcessError(code, cmd)
    return wall, usage


def history_repo(workdir, files, commits, env, seed=21):
    """The makeproject.py repository, built once (into a temporary name,
    renamed when complete)."""
    repo = os.path.join(
        workdir,
        "project-%d-%d-s%d-v%d" % (files, commits, seed, makeproject.VERSION),
    )
    if not os.path.exists(repo):
        tmp = repo + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        print(
            "(building a history-rich repository: %d files, %d changesets)"
            % (files, commits),
            flush=True,
        )
        start = time.time()
        subprocess.run(
            [sys.executable, os.path.join(ROOT, "fixtures", "makeproject.py"), tmp]
            + ["--files", str(files), "--commits", str(commits), "--seed", str(seed)],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        os.rename(tmp, repo)
        print("(built in %.0f s)" % (time.time() - start), flush=True)
    return repo


def repo_stats(repo):
    """Store size, changesets, merges, files at the tip, filelogs and file
    revisions (cached in ``.hg/benchstats.json``, outside the store)."""
    cache = os.path.join(repo, ".hg", "benchstats.json")
    changelog = os.path.join(repo, ".hg", "store", "00changelog.i")
    if os.path.exists(cache) and os.path.getmtime(cache) >= os.path.getmtime(changelog):
        with open(cache) as f:
            return json.load(f)
    from mercurial import hg, ui as uimod

    r = hg.repository(uimod.ui.load(), os.fsencode(repo)).unfiltered()
    cl = r.changelog
    filelogs = set()
    with open(os.path.join(repo, ".hg", "store", "fncache"), "rb") as f:
        for line in f.read().splitlines():
            if line.startswith(b"data/") and line.endswith(b".i"):
                filelogs.add(line[5:-2])
    size = 0
    for root, __, names in os.walk(os.path.join(repo, ".hg", "store")):
        size += sum(os.path.getsize(os.path.join(root, n)) for n in names)
    stats = {
        "store_mb": size / 1e6,
        "changesets": len(cl),
        "merges": sum(1 for rev in cl if cl.parentrevs(rev)[1] != -1),
        "files_at_tip": len(r[b"tip"].manifest()),
        "filelogs": len(filelogs),
        "file_revisions": sum(len(r.file(f)) for f in sorted(filelogs)),
    }
    with open(cache, "w") as f:
        json.dump(stats, f, indent=1, sort_keys=True)
    return stats


def describe(repo, stats):
    extra = ""
    shape = os.path.join(repo, ".hg", "makeproject.json")
    if os.path.exists(shape):
        with open(shape) as f:
            s = json.load(f)
        extra = ", %d renames (%d of directories), %d copies, %d binary files" % (
            s["renames"],
            s["directory_renames"],
            s["copies"],
            s["binary_files"],
        )
    return (
        "store %.0f MB, %d changesets (%d merges), %d files at tip, %d filelogs, "
        "%d file revisions%s"
        % (
            stats["store_mb"],
            stats["changesets"],
            stats["merges"],
            stats["files_at_tip"],
            stats["filelogs"],
            stats["file_revisions"],
            extra,
        )
    )


def bundle(workdir, repo, compression, env):
    path = os.path.join(workdir, "%s.%s-v2.hg" % (os.path.basename(repo), compression))
    if not os.path.exists(path):
        subprocess.run(
            [HG, "-R", repo, "bundle", "-q", "-a", "-t", compression + "-v2"]
            + [path + ".tmp"],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        os.rename(path + ".tmp", path)
    return path


class Row:
    """One repository's paths: the sources they read and one run of each."""

    def __init__(self, workdir, repo, paths, env, bundles):
        self.workdir = workdir
        self.repo = repo
        self.env = dict(env, TESTTMP=workdir)
        self.ssh_cpu = os.path.join(workdir, "cg-ssh-cpu")
        self.times = os.path.join(workdir, "cg-times")
        self.bundles = {
            p: bundles.get(p) or bundle(workdir, repo, p, env)
            for p in paths
            if p not in ("http", "ssh")
        }
        self.server = None
        if "http" in paths:
            self.server = Server(repo, False, env, workdir)
            # stock hg serve loads lazy modules on its first requests: one
            # untimed clone first (bench_serve.run_load)
            self.run("http", "stock", os.path.join(workdir, "cg-warmup"))
            shutil.rmtree(os.path.join(workdir, "cg-warmup"))

    def stop(self):
        if self.server is not None:
            self.server.stop()

    def command(self, path, variant, dest):
        head = [HG, "--config", "extensions.benchtimer=%s" % TIMER]
        head += ext_args(variant == "fastio")
        if path == "http":
            return head + ["clone", "-q", "-U", self.server.url, dest]
        if path == "ssh":
            return head + [
                "clone",
                "-q",
                "-U",
                "--config",
                "ui.ssh=%s %s" % (sys.executable, SSHCPU),
                "--config",
                "ui.remotecmd=%s" % HG,
                "ssh://user@dummy/" + self.repo,
                dest,
            ]
        subprocess.run([HG, "init", dest], env=self.env, check=True)
        return head + ["-R", dest, "unbundle", "-q", self.bundles[path]]

    def run(self, path, variant, dest):
        """``(body, wall, client CPU, peak RSS MB)`` of one apply."""
        shutil.rmtree(dest, ignore_errors=True)
        for f in (self.ssh_cpu, self.times):
            if os.path.exists(f):
                os.unlink(f)
        cmd = self.command(path, variant, dest)
        env = dict(
            self.env,
            FASTIO_BENCH_TIMES=self.times,
            FASTIO_BENCH_SSH_CPU=self.ssh_cpu,
        )
        # no clone bundles, whatever a server offers
        cmd[1:1] = ["--config", "ui.clonebundles=false"]
        wall, usage = run_usage(cmd, env)
        if path == "ssh":
            # the server ends after the client: wait, so that it takes
            # no CPU from the next run
            for __ in range(600):
                if os.path.exists(self.ssh_cpu):
                    break
                time.sleep(0.05)
            else:
                sys.exit("ssh server: no end in sight (%s)" % self.ssh_cpu)
        with open(self.times) as f:
            body = float(f.read().split()[-1])
        cpu = usage.ru_utime + usage.ru_stime
        return body, wall, cpu, usage.ru_maxrss / 1024.0


def check(reference, dest, verify, env):
    """None when ``dest``'s store is ``reference``'s (and verifies), else
    what is wrong."""
    if verify:
        v = subprocess.run(
            [HG, "-R", dest, "verify", "-q"], env=env, capture_output=True
        )
        if v.returncode:
            return "verify failed: %s" % (v.stdout + v.stderr).decode(errors="replace")
    c = subprocess.run(
        [sys.executable, STORECOMPARE, reference, dest], env=env, capture_output=True
    )
    if c.returncode:
        return c.stdout.decode(errors="replace")
    return None


def alternate(runs, dest, run, compare, each=None):
    """``runs`` rounds of stock then fastio, ``run(variant, dest(variant))``
    giving a sample, ``each(variant, dest)`` called after every run; the
    first round's results compared, ``compare(stock's, fastio's)`` giving
    None or what differs: ``({variant: [samples]}, what differs)``."""
    samples = {"stock": [], "fastio": []}
    problem = None
    ref = dest("stock") + "-ref"
    try:
        for i in range(runs):
            for variant in ("stock", "fastio"):
                samples[variant].append(run(variant, dest(variant)))
                if each is not None:
                    each(variant, dest(variant))
                if i:
                    continue
                if variant == "stock":
                    shutil.rmtree(ref, ignore_errors=True)
                    os.rename(dest(variant), ref)
                else:
                    problem = compare(ref, dest(variant))
                    shutil.rmtree(ref)
    finally:
        for path in (ref, dest("stock"), dest("fastio")):
            shutil.rmtree(path, ignore_errors=True)
    return samples, problem


def measure(workdir, name, repo, paths, runs, env, bundles=None):
    """One row of the plan: ``{path: {variant: [samples]}, ...}`` and
    whether each path's results were identical.  ``bundles``: those of
    ``repo`` already made (compression -> file)."""
    row = Row(workdir, repo, paths, env, bundles or {})
    samples, same = {}, {}
    verify = [True]

    def compare(ref, dest):
        problem = check(ref, dest, verify[0], env)
        verify[0] = False
        return problem

    try:
        for path in paths:
            samples[path], problem = alternate(
                runs,
                lambda variant: os.path.join(workdir, "cg-dest-%s" % variant),
                lambda variant, dest: row.run(path, variant, dest),
                compare,
            )
            same[path] = problem is None
            if problem:
                print("%s %s: NOT identical to stock: %s" % (name, path, problem))
            print("(%s %s: %d runs)" % (name, path, runs), flush=True)
    finally:
        row.stop()
    return samples, same


def medians(samples):
    return [statistics.median(x) for x in zip(*samples)]


# the columns of a stock vs fastio row (``cells``), after its label
HEAD = "%9s %9s %6s %9s %9s %6s %6s %11s" % (
    "wall st.",
    "fastio",
    "ratio",
    "CPU st.",
    "fastio",
    "ratio",
    "body",
    "RSS MB",
)


def cells(by):
    """The ``HEAD`` columns of ``{"stock": [samples], "fastio": [...]}``
    (samples: body, wall, CPU, peak RSS MB): medians and ratios."""
    s, f = medians(by["stock"]), medians(by["fastio"])
    return "%8.2fs %8.2fs %6.2f %8.2fs %8.2fs %6.2f %6.2f %5.0f/%5.0f" % (
        s[1],
        f[1],
        f[1] / s[1],
        s[2],
        f[2],
        f[2] / s[2],
        f[0] / s[0],
        max(x[3] for x in by["stock"]),
        max(x[3] for x in by["fastio"]),
    )


def yes_no(value):
    return {True: "yes", False: "NO"}.get(value, "-")


def print_table(name, repo, stats, samples, same, runs):
    print(
        "== %s: changegroup paths, stock vs fastio (client side), medians of %d ==\n"
        "   %s\n   %s" % (name, runs, os.path.basename(repo), describe(repo, stats))
    )
    print("%-26s %s %4s" % ("path", HEAD, "same"))
    for path, by in samples.items():
        print("%-26s %s %4s" % (LABELS[path], cells(by), yes_no(same.get(path))))
    print(
        "(ratios are fastio / stock; CPU: the client's user+sys, server out; "
        "body: the command without hg's start-up)"
    )
    print()


def summary_lines(name, samples):
    """What issue 21 judges: client CPU for clones, wall for unbundles."""
    out = []
    for path, by in samples.items():
        which = {"cpu": 2, "wall": 1}[JUDGED[path]]
        s, f = medians(by["stock"]), medians(by["fastio"])
        out.append(
            "%-62s %6.2f"
            % (
                "%s, %s: fastio / stock (%s)" % (name, LABELS[path], JUDGED[path]),
                f[which] / s[which],
            )
        )
    return out
