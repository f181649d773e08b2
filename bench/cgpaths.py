"""Changegroup paths as users take them (issues 21 and 42), for ``bench.py``.

Each of these paths applies the whole history of a repository to an empty
one:

  http    ``hg clone -U http://...`` against a stock ``hg serve`` of the
          source (no ``--stream``: a zstd changegroup)
  ssh     ``hg clone -U ssh://...`` (``fixtures/dummyssh`` through
          ``sshcpu.py``; a stock ``hg serve --stdio``, not counted in the
          client's CPU)
  bzip2   ``hg unbundle`` of a bzip2-v2 bundle (``hg bundle``'s default)
  zstd    ``hg unbundle`` of a zstd-v2 bundle
  none    ``hg unbundle`` of a none-v2 bundle

and these apply the end of a history to a repository that has the rest:

  pull1000  ``hg -R DEST pull SRC`` (a local path: hg generates a bundle2
            changegroup and applies it, in one process) into a copy of a
            base repository, the source's store with its last 1,000
            changesets stripped (revisions ``N-1000:``, which takes away
            the topic branches' heads too: rev numbers are topological).
            The base is built once per source (``hg debugstrip`` of a
            copy of the store) and kept in the work directory; each run
            copies it to the destination (``cp -a``, not timed)
  pull1     the same, the last changeset alone missing

Three variants take turns in each of ``runs`` rounds (issue 42):
``stock`` (no extension), ``serial`` (the extension with
``fastio.apply-workers=0``: one process) and ``fastio`` (the extension as
configured by default: changegroups of ``devel.fastio.parallel-min-files``
files or more applied by forked workers, one per core).  The extension is
loaded on the client only.  The table shows medians of wall time, client
CPU and the peak RSS of each variant, and serial / stock and fastio / stock
ratios.  A row may run pinned to one core (``cpus=1``: the command under
``taskset -c 0``, where ``taskset`` exists): ``auto`` then finds one core
and makes no workers, so fastio is serial there and the row shows what the
workers give on two cores by comparison.  ``CPU`` is the
client's user+sys time (``wait4``: the client hg process and the
processes it reaped; ``sshcpu.py`` runs the ssh server where the client
never reaps it): the server shares the 2-core machine, so a clone's wall
time also depends on how the two processes share it.  The
first run of each path is checked: serial's and fastio's stores byte for
byte against stock's (``fixtures/storecompare.py``), and ``hg verify`` of
fastio's result once per row.

Issue 42 judges wall time on every path (``TARGETS``: fastio / stock on the
2-core machine); the summary lines give fastio / stock and serial / stock
wall time, with the target where there is one.

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
# the history rows' paths: the whole history, then its end pulled
HIST_PATHS = PATHS + ["pull1000", "pull1"]
LABELS = {
    "http": "hg clone http:// (zstd)",
    "ssh": "hg clone ssh://",
    "bzip2": "hg unbundle bzip2-v2",
    "zstd": "hg unbundle zstd-v2",
    "none": "hg unbundle none-v2",
    "pull1000": "hg pull, last 1000 csets",
    "pull1": "hg pull, last changeset",
}
# the changesets a pull path leaves out of its base repository
PULLS = {"pull1000": 1000, "pull1": 1}
VARIANTS = ("stock", "serial", "fastio")
# issue 42's targets, fastio / stock wall time on 2 cores: (repository of
# REPOS, path) -> ratio (the 10k-file unbundle: the zstd bundle)
TARGETS = {
    ("hist", "zstd"): 0.6,
    ("hist", "bzip2"): 0.55,
    ("hist", "ssh"): 0.65,
    ("hist", "pull1000"): 0.75,
    ("hist", "pull1"): 1.01,
    ("10k", "zstd"): 0.5,
}

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


def pull_base(workdir, repo, missing, env):
    """A copy of ``repo``'s store without its last ``missing`` changesets
    (revisions ``N-missing:`` and so all their descendants), built once
    (into a temporary name, renamed when complete).  The source is only
    read: its store is copied (no hard links), then stripped."""
    base = os.path.join(
        workdir, "%s-base-%d" % (os.path.basename(os.path.realpath(repo)), missing)
    )
    changelog = os.path.join(repo, ".hg", "store", "00changelog.i")
    if os.path.exists(base) and os.path.getmtime(base) >= os.path.getmtime(changelog):
        return base
    shutil.rmtree(base, ignore_errors=True)
    tmp = base + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, ".hg"))
    shutil.copy2(os.path.join(repo, ".hg", "requires"), os.path.join(tmp, ".hg"))
    shutil.copytree(
        os.path.join(repo, ".hg", "store"), os.path.join(tmp, ".hg", "store")
    )
    tip = subprocess.run(
        [HG, "-R", tmp, "log", "-r", "tip", "-T", "{rev}"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    subprocess.run(
        [HG, "-R", tmp, "debugstrip", "-q", "--no-backup", "-r"]
        + ["%d:" % (int(tip) + 1 - missing)],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    os.rename(tmp, base)
    return base


def pinned(cpus):
    """The command prefix that runs a command on ``cpus`` cores (None:
    all; ``[]`` where ``taskset`` is missing)."""
    if not cpus:
        return []
    if shutil.which("taskset") is None:
        return []
    return ["taskset", "-c", "0-%d" % (cpus - 1) if cpus > 1 else "0"]


class Row:
    """One repository's paths: the sources they read and one run of each."""

    def __init__(self, workdir, repo, paths, env, bundles, cpus=None):
        self.workdir = workdir
        self.repo = repo
        self.env = dict(env, TESTTMP=workdir)
        self.ssh_cpu = os.path.join(workdir, "cg-ssh-cpu")
        self.times = os.path.join(workdir, "cg-times")
        self.prefix = pinned(cpus)
        self.bundles = {
            p: bundles.get(p) or bundle(workdir, repo, p, env)
            for p in paths
            if p not in ("http", "ssh") and p not in PULLS
        }
        self.bases = {
            p: pull_base(workdir, repo, PULLS[p], env) for p in paths if p in PULLS
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
        head += ext_args(variant != "stock")
        if variant == "serial":
            head += ["--config", "fastio.apply-workers=0"]
        if path in PULLS:
            subprocess.run(["cp", "-a", self.bases[path], dest], check=True)
            return head + ["-R", dest, "pull", "-q", self.repo]
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
        wall, usage = run_usage(self.prefix + cmd, env)
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


def alternate(runs, dest, run, compare, each=None, variants=("stock", "fastio")):
    """``runs`` rounds of ``variants`` (stock first),
    ``run(variant, dest(variant))`` giving a sample, ``each(variant, dest)``
    called after every run; the first round's results compared,
    ``compare(stock's, the other's)`` giving None or what differs:
    ``({variant: [samples]}, what differs)`` (the first difference, with
    the variant's name when there are more than two)."""
    samples = {variant: [] for variant in variants}
    problem = None
    ref = dest("stock") + "-ref"
    try:
        for i in range(runs):
            for variant in variants:
                samples[variant].append(run(variant, dest(variant)))
                if each is not None:
                    each(variant, dest(variant))
                if i:
                    continue
                if variant == "stock":
                    shutil.rmtree(ref, ignore_errors=True)
                    os.rename(dest(variant), ref)
                    continue
                got = compare(ref, dest(variant))
                if got and problem is None:
                    problem = got if len(variants) == 2 else "%s: %s" % (variant, got)
                if variant == variants[-1]:
                    shutil.rmtree(ref)
    finally:
        for path in (ref,) + tuple(dest(v) for v in variants):
            shutil.rmtree(path, ignore_errors=True)
    return samples, problem


def measure(workdir, name, repo, paths, runs, env, bundles=None, cpus=None):
    """One row of the plan: ``{path: {variant: [samples]}, ...}`` (the
    ``VARIANTS``) and whether each path's results were identical.
    ``bundles``: those of ``repo`` already made (compression -> file);
    ``cpus``: the commands pinned to that many cores (``pinned``)."""
    if cpus and not pinned(cpus):
        print("(%s: no taskset here, the row runs on all cores)" % name)
    row = Row(workdir, repo, paths, env, bundles or {}, cpus)
    samples, same = {}, {}
    verify = [True]

    def compare(ref, dest):
        # hg verify once per row: fastio's first result
        problem = check(ref, dest, verify[0] and dest.endswith("fastio"), env)
        if dest.endswith("fastio"):
            verify[0] = False
        return problem

    try:
        for path in paths:
            samples[path], problem = alternate(
                runs,
                lambda variant: os.path.join(workdir, "cg-dest-%s" % variant),
                lambda variant, dest: row.run(path, variant, dest),
                compare,
                variants=VARIANTS,
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


# the columns of a stock / serial / fastio row (``cells3``), after its
# label
HEAD3 = "%9s %8s %8s %5s %5s %9s %8s %8s %5s %5s %5s %14s" % (
    "wall st.",
    "serial",
    "fastio",
    "se/st",
    "fa/st",
    "CPU st.",
    "serial",
    "fastio",
    "se/st",
    "fa/st",
    "body",
    "RSS MB st/se/fa",
)


def cells3(by):
    """The ``HEAD3`` columns of ``{"stock": [samples], "serial": [...],
    "fastio": [...]}`` (samples: body, wall, CPU, peak RSS MB): medians,
    ratios to stock (body: fastio / stock) and the peak RSS of each."""
    s, r, f = (medians(by[v]) for v in VARIANTS)
    rss = [max(x[3] for x in by[v]) for v in VARIANTS]
    return (
        "%8.2fs %7.2fs %7.2fs %5.2f %5.2f %8.2fs %7.2fs %7.2fs %5.2f %5.2f %5.2f "
        "%4.0f/%4.0f/%4.0f"
        % (
            s[1],
            r[1],
            f[1],
            r[1] / s[1],
            f[1] / s[1],
            s[2],
            r[2],
            f[2],
            r[2] / s[2],
            f[2] / s[2],
            f[0] / s[0],
            *rss,
        )
    )


def print_table(name, repo, stats, samples, same, runs, cpus=None):
    print(
        "== %s: changegroup paths, stock vs serial vs fastio (client side), "
        "medians of %d%s ==\n"
        "   %s\n   %s"
        % (
            name,
            runs,
            ", on %d core%s" % (cpus, "s" if cpus > 1 else "") if cpus else "",
            os.path.basename(repo),
            describe(repo, stats),
        )
    )
    print("%-26s %s %4s" % ("path", HEAD3, "same"))
    for path, by in samples.items():
        print("%-26s %s %4s" % (LABELS[path], cells3(by), yes_no(same.get(path))))
    print(
        "(serial: fastio.apply-workers=0; se/st, fa/st: serial / stock, fastio / "
        "stock; CPU: the client's user+sys, server out; body: fastio / stock of "
        "the command without hg's start-up)"
    )
    print()


def summary_lines(name, samples, spec=None):
    """What issue 42 judges: wall time, fastio / stock (and serial /
    stock), against the target of ``(spec, path)`` where there is one."""
    out = []
    for path, by in samples.items():
        s, r, f = (medians(by[v])[1] for v in VARIANTS)
        target = TARGETS.get((spec, path))
        for variant, got in (("fastio", f), ("serial", r)):
            line = "%-70s %6.2f" % (
                "%s, %s: %s / stock (wall)" % (name, LABELS[path], variant),
                got / s,
            )
            if target is not None and variant == "fastio":
                line += "  (target <= %.2f: %s)" % (
                    target,
                    "met" if got / s <= target else "NOT met",
                )
            out.append(line)
    return out
