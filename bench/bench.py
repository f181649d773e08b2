#!/usr/bin/env python3
"""Stream and changegroup application: tar -x vs stock hg vs fastio, on
tmpfs and under filesystem latency models.

Everything runs on tmpfs (/dev/shm).  Each row of the plan applies the
same bundle to an empty repository with each variant, the variants taking
turns (a change of the machine's load hits them alike), ``runs`` times;
tables show medians.  Slow filesystems are modelled by ``latency.c``, an
LD_PRELOAD shim built here with gcc: a sleep before each create, mkdir or
close of a file (sleeps overlap across threads, as a server's round trips
do).  Models:

  none        tmpfs as it is
  net         create 500 us + mkdir 500 us + close 1 ms (NFS, SMB)
  create1ms   create 1 ms only
  mkdir1ms    mkdir 1 ms only
  close1ms    close 1 ms only (NTFS with a virus scanner)
  close5ms    close 5 ms only
  netdir      net + lookup 200 us, creates serialized per directory (the
              shim's model of the kernel's directory lock)
  fuse        the kernel's model: the repository applied into is on a FUSE
              passthrough filesystem (fixtures/fuselat.c) that sleeps before
              each request: lookup/getattr 200 us, create and mkdir 500 us,
              unlink/rename 500 us, open 200 us, flush of a written file
              (what close waits for) 1 ms; the kernel serializes creates
              per directory and looks up every new name (no LD_PRELOAD;
              the bundle stays on tmpfs)

Variants: ``tar`` (``tar -x`` of the same store), ``stock`` (Mercurial
alone), ``stock-par`` (Mercurial with its parallel stream writer,
``worker.parallel-stream-bundle-processing``, 7.0 and later) and
``fastio``.  Formats: ``v2`` (a stream v2 bundle), ``cg`` (an uncompressed
changegroup bundle), ``cgz`` (a zstd changegroup bundle, ``hg bundle``'s
default engine), both applied with ``hg unbundle``.

Times are of the command body (hg start-up excluded, measured by the
bench-only ``benchtimer`` extension loaded in every hg run) and of the
whole command (``wall``); peak RSS is the command's (``wait4``).  Every
applied store is checked once per variant: ``hg verify``, and byte for byte
against the source (stream) or stock's result (changegroup).  The summary
at the end gives the ratios the project's targets are about, from this
one run.

Changegroup paths as users take them (``cgpaths.py``, issues 21 and 42):
``hg clone`` over http and ssh (client CPU time next to wall time, the
server stock), ``hg unbundle`` of bzip2-v2, zstd-v2 and none-v2 bundles
and, on the history-rich repositories, ``hg pull`` of the last 1,000
changesets and of the last one; stock, serial (``fastio.apply-workers=0``)
and fastio alternating, on a makerepo.py repository or on the
history-rich one of ``makeproject.py``, ``hist-1core`` on one core
(``taskset -c 0``) (``CG_PLAN``; ``make bench`` runs the 10k-file row,
``make bench-cg`` the heavy ones).

The whole clone a user waits for (``e2e.py``, issue 24): ``hg clone
http://`` from a stream v2 clone bundle on a second, static http server,
checkout included (``e2e``), and ``hg update`` from null to tip
(``update``), stock and fastio alternating, locally and under the ``net``
model, and the 10k rows under ``fuse`` too (the client's repository on the
mount, a new name each run, as the fuse apply rows'; ``E2E_PLAN``; ``make
bench`` runs the 10k rows and the 100k clone, ``make bench-e2e`` all of
them).

A busy machine (``10k-busy``): the 10k rows' stream v2 apply (5 runs)
and zstd changegroup unbundle (3 runs) on tmpfs, stock and fastio
alternating, each command with two CPU-bound processes (``sh -c 'while
:; do :; done'``) started before it and killed after it; fastio's runs
set ``fastio.report`` and the table gives its writer's peak thread count
(median and max of the runs) beside the medians and fastio / stock.

``--quick`` leaves out the 100k rows, the fuse rows and the fuse cells
of e2e and update; ``--plan`` names rows of any of the plans (PLAN,
CG_PLAN, E2E_PLAN); ``--models`` keeps only the latency models named in
the apply and e2e rows it runs (e.g. ``--plan e2e,update,10k-busy
--models fuse``: the fuse cells and the busy row alone; 10k-busy and
overhead have no model).  Rows under ``fuse`` are skipped, with a line
that says why, where FUSE can't be mounted.  ``--workdir`` (default
/dev/shm/hg-fastio-bench) holds the repositories, bundles and mounts:
two benches at once want two.

usage: bench.py [--quick] [--plan NAME,...] [--models NAME,...]
                [--runs-scale X] [--demo] [--files N] [--workdir DIR]
"""

import argparse
import filecmp
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# what the benchmarks share with the tests (fixtures/: repository
# generators, shims, comparisons)
sys.path.insert(0, os.path.join(ROOT, "fixtures"))

import cgpaths  # noqa: E402
import e2e  # noqa: E402
import fusemount  # noqa: E402
import instructions  # noqa: E402
import latencyshim  # noqa: E402
from intervals import LEVEL, RESAMPLES, ratio_interval  # noqa: E402

EXT = os.path.join(ROOT, "hgext3rd", "fastio")
TIMER = os.path.join(HERE, "benchtimer.py")
HG = os.path.join(os.path.dirname(sys.executable), "hg")

MODELS = {
    "none": {},
    "net": {
        "FASTIO_DELAY_CREATE_US": "500",
        "FASTIO_DELAY_MKDIR_US": "500",
        "FASTIO_CLOSE_DELAY_US": "1000",
    },
    "create1ms": {"FASTIO_DELAY_CREATE_US": "1000"},
    "mkdir1ms": {"FASTIO_DELAY_MKDIR_US": "1000"},
    "close1ms": {"FASTIO_CLOSE_DELAY_US": "1000"},
    "close5ms": {"FASTIO_CLOSE_DELAY_US": "5000"},
    "netdir": {
        "FASTIO_DELAY_CREATE_US": "500",
        "FASTIO_DELAY_MKDIR_US": "500",
        "FASTIO_CLOSE_DELAY_US": "1000",
        "FASTIO_DELAY_LOOKUP_US": "200",
        "FASTIO_DIRLOCK": "1",
    },
    # not a shim: the destination on a FUSE mount (fusemount.py)
    "fuse": {},
}
# models whose destination is a mount, not a preloaded shim
MOUNTED = {"fuse"}

VARIANTS = {
    "stock": [],
    "stock-par": ["--config", "worker.parallel-stream-bundle-processing=yes"],
    "fastio": ["--config", "extensions.fastio=%s" % EXT],
}

# the cost of the extension on commands it does not accelerate, and on the
# everyday pull of one changeset: alternating pairs, whole commands
OVERHEAD_PAIRS = 41

# (name, size, format, models, variants, runs): the default plan
PLAN = [
    ("tiny", 10, "v2", ["none"], ["tar", "stock", "fastio"], 21),
    ("small", 100, "v2", ["none"], ["tar", "stock", "stock-par", "fastio"], 21),
    ("small-cg", 100, "cgz", ["none"], ["stock", "fastio"], 21),
    ("10k", 10000, "v2", ["none"], ["tar", "stock", "stock-par", "fastio"], 5),
    (
        "10k-latency",
        10000,
        "v2",
        ["net", "create1ms", "mkdir1ms", "close1ms", "close5ms"],
        ["stock-par", "fastio"],
        3,
    ),
    # stock's serial writer under the net model: ~20 s a run
    ("10k-stock-net", 10000, "v2", ["net"], ["stock"], 1),
    ("10k-cg", 10000, "cgz", ["none", "net"], ["stock", "fastio"], 3),
    ("100k", 100000, "v2", ["none"], ["tar", "stock", "stock-par", "fastio"], 3),
    ("100k-net", 100000, "v2", ["net"], ["stock-par", "fastio"], 3),
    # the shim's model of the kernel's directory lock (latency.c)
    ("10k-netdir", 10000, "v2", ["netdir"], ["stock", "stock-par", "fastio"], 3),
    ("100k-netdir", 100000, "v2", ["netdir"], ["stock-par", "fastio"], 3),
    # the kernel itself (FUSE, fuselat.c); fastio also applied locally
    # in these rows where no row before measured it (the ratio to it)
    ("10k-fuse", 10000, "v2", ["fuse"], ["stock", "stock-par", "fastio"], 3),
    ("10k-cg-fuse", 10000, "cgz", ["fuse"], ["stock", "fastio"], 3),
    ("100k-fuse", 100000, "v2", ["fuse"], ["stock-par", "fastio"], 1),
    # a busy machine: no model, BURNERS CPU-bound processes beside each
    # command; the stream v2 apply and the zstd changegroup unbundle, runs
    # of each (see measure_busy)
    ("10k-busy", 10000, None, [], ["stock", "fastio"], {"v2": 5, "cgz": 3}),
    # not an apply: the per-command cost (see measure_overhead)
    ("overhead", 0, None, [], [], OVERHEAD_PAIRS),
]
# rows of their own kind: no latency model
SPECIAL = {"10k-busy", "overhead"}
# (not the fuse rows, nor the fuse cells of e2e and update: stock's
# serial writer alone takes ~70 s of 10k-fuse)
QUICK = [
    "tiny",
    "small",
    "10k",
    "10k-latency",
    "10k-cg",
    "10k-busy",
    "overhead",
    "10k-paths",
    "e2e",
    "update",
]

# changegroup paths as users take them (cgpaths.py): (name, repository of
# cgpaths.REPOS, paths, runs, cores: None for all, or the commands pinned
# to that many with taskset), stock, serial and fastio alternating
CG_PLAN = [
    ("10k-paths", "10k", cgpaths.PATHS, 3, None),
    ("hist-paths", "hist", cgpaths.HIST_PATHS, 3, None),
    # issue 42's scaling: the zstd unbundle on one core (no workers)
    ("hist-1core", "hist", ["zstd"], 3, 1),
    ("100k-cg", "100k", ["zstd"], 3, None),
    # for development: 2k files, 3k changesets, built in seconds
    ("hist-small-paths", "hist-small", cgpaths.HIST_PATHS, 3, None),
    ("hist-small-1core", "hist-small", ["zstd"], 3, 1),
]
# what make bench runs of them (make bench-cg: the heavy rows)
CG_DEFAULT = ["10k-paths"]

# the whole clone and the checkout (e2e.py): (name, kind, size, runs of
# each model), stock and fastio alternating
E2E_PLAN = [
    # fuse: the client's repository on the mount (FuseDestinations)
    ("e2e", "e2e", 10000, {"none": 3, "net": 3, "fuse": 3}),
    ("update", "update", 10000, {"none": 3, "net": 3, "fuse": 3}),
    # stock under the net model: about 5 minutes a run; locally a run in
    # ten takes half as long again (system time doubled, either variant:
    # 20.5 s instead of 16.4 s for stock, 13.0 s instead of 10.3 s for
    # fastio), so one run is not a measurement
    ("e2e-100k", "e2e", 100000, {"none": 3, "net": 1}),
    ("update-100k", "update", 100000, {"none": 3, "net": 1}),
]
# what make bench runs of them (make bench-e2e: all)
E2E_DEFAULT = ["e2e", "update", "e2e-100k"]


def run(cmd, env, **kw):
    return subprocess.run(cmd, env=env, check=True, **kw)


def model_env(env, model, shim):
    """``env`` under a latency model: the shim preloaded, its delays set."""
    menv = dict(env)
    if MODELS[model]:
        menv.update(MODELS[model], LD_PRELOAD=shim)
    return menv


def base_env():
    env = dict(os.environ)
    env.update(HGRCPATH="", HGPLAIN="1", HGUSER="bench", LANG="C")
    env.pop("LD_PRELOAD", None)
    return env


def prepare(workdir, size, env, formats=("v2", "cg", "cgz", "tar")):
    """The source repository, its bundles and a tar of its store (those
    of ``formats``)."""
    repo = os.path.join(workdir, "repo-%d" % size)
    if not os.path.exists(os.path.join(repo, ".hg", "store", "00changelog.i")):
        shutil.rmtree(repo, ignore_errors=True)
        print("(building a %d-file repository)" % size, flush=True)
        run(
            [
                sys.executable,
                os.path.join(ROOT, "fixtures", "makerepo.py"),
                repo,
                str(size),
            ]
            + ["--hg", HG],
            env,
        )
    out = {"repo": repo}
    hg = [HG, "-R", repo]
    bundles = {
        "v2": ["bundle", "-q", "-a", "-t", "none-v2;stream=v2"],
        "cg": ["bundle", "-q", "-a", "-t", "none-v2"],
        "cgz": ["bundle", "-q", "-a", "-t", "zstd-v2"],
    }
    for fmt, cmd in bundles.items():
        if fmt not in formats:
            continue
        path = os.path.join(workdir, "repo-%d.%s" % (size, fmt))
        if not os.path.exists(path):
            run(hg + cmd + [path], env, stdout=subprocess.DEVNULL)
        out[fmt] = path
    tar = os.path.join(workdir, "repo-%d.tar" % size)
    if "tar" in formats and not os.path.exists(tar):
        run(["tar", "-C", os.path.join(repo, ".hg"), "-cf", tar, "store"], env)
    if "tar" in formats:
        out["tar"] = tar
    return out


def reference(workdir, size, fmt, bundle, env):
    """What stock writes from a changegroup: fastio's must be the same."""
    ref = os.path.join(workdir, "ref-%s-%d" % (fmt, size))
    if not os.path.exists(os.path.join(ref, ".hg", "store", "00changelog.i")):
        shutil.rmtree(ref, ignore_errors=True)
        run([HG, "init", ref], env)
        run([HG, "-R", ref, "unbundle", "-q", bundle], env)
    return ref


def timed(cmd, env, stderr=None):
    """``(seconds, peak RSS in MB)`` of a command."""
    wall, usage = cgpaths.run_usage(cmd, env, stderr=stderr)
    return wall, usage.ru_maxrss / 1024.0


def time_hg(workdir, variant, fmt, bundle, env, dest=None, extra=(), stderr=None):
    dest = dest or os.path.join(workdir, "dest")
    shutil.rmtree(dest, ignore_errors=True)
    clean = dict(env)
    clean.pop("LD_PRELOAD", None)
    run([HG, "init", dest], clean)
    times = os.path.join(workdir, "times")
    if os.path.exists(times):
        os.unlink(times)
    env = dict(env, FASTIO_BENCH_TIMES=times)
    cmd = [HG, "--config", "extensions.benchtimer=%s" % TIMER, "-R", dest]
    cmd += VARIANTS[variant] + list(extra) + ["unbundle", "-q", bundle]
    wall, rss = timed(cmd, env, stderr)
    with open(times) as f:
        body = float(f.read().split()[-1])
    return body, wall, rss, dest


def time_tar(workdir, tar, env):
    dest = os.path.join(workdir, "tardest")
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    # a store just built can carry mtimes a few ms ahead of tar's clock
    wall, rss = timed(["tar", "--warning=no-timestamp", "-C", dest, "-xf", tar], env)
    return wall, wall, rss, None


def check(dest, src, fmt, variant, env):
    clean = dict(env)
    clean.pop("LD_PRELOAD", None)
    run([HG, "-R", dest, "verify", "-q"], clean)
    cmp = [sys.executable, os.path.join(ROOT, "fixtures", "storecompare.py")]
    if variant.startswith("stock") and fmt == "v2":
        cmp.append("--content-only")  # stock v2 gives revlogs mode 0777-umask
    run(cmp + [src, dest], clean, stdout=subprocess.DEVNULL)


def has_parallel_writer(env):
    out = subprocess.run(
        [HG, "config", "--exp-all-known", "worker"],
        env=env,
        capture_output=True,
        text=True,
    ).stdout
    return "parallel-stream-bundle-processing" in out


class FuseDestinations:
    """Destinations on the FUSE model's mount: a new name each apply (the
    kernel keeps a name it has looked up for a second: a destination
    removed and made again under it would be found still there), the last
    one removed through the backing directory (on tmpfs, no latency)."""

    def __init__(self, workdir):
        self.mount = fusemount.Mount(
            os.path.join(workdir, "fuse-mnt"),
            backing=os.path.join(workdir, "fuse-backing"),
            workdir=workdir,
        )
        self.count = 0

    def __enter__(self):
        shutil.rmtree(self.mount.backing, ignore_errors=True)
        self.mount.__enter__()
        return self

    def __exit__(self, *exc):
        self.mount.__exit__(*exc)
        shutil.rmtree(self.mount.backing, ignore_errors=True)

    def next(self):
        """``(path on the mount, the same in the backing directory)``"""
        shutil.rmtree(
            os.path.join(self.mount.backing, "dest-%d" % self.count),
            ignore_errors=True,
        )
        self.count += 1
        name = "dest-%d" % self.count
        return (
            os.path.join(self.mount.mountpoint, name),
            os.path.join(self.mount.backing, name),
        )


class LocalDestinations:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    def next(self):
        return None, None


# the busy machine (10k-busy): CPU-bound processes beside each measured
# command, one a core of the machine the bench is sized for (2 cores), as
# a build or a test run beside the clone would keep it
BURNERS = 2
# fastio.report's line with the writer's peak thread count
THREADS = re.compile(rb"fastio: closes: \d+, in background: \d+, threads: (\d+)")


class Burners:
    """``n`` CPU-bound processes, from entering to leaving: started before
    a measured command and killed after it, the same for every variant."""

    def __init__(self, n=BURNERS):
        self.n = n
        self.procs = []

    def __enter__(self):
        self.procs = [
            subprocess.Popen(["sh", "-c", "while :; do :; done"])
            for __ in range(self.n)
        ]
        return self

    def __exit__(self, *exc):
        for proc in self.procs:
            proc.kill()
        for proc in self.procs:
            proc.wait()
        self.procs = []


def measure_busy(workdir, data, size, formats, env, checked, runs_scale):
    """The same applies as the rows' (``time_hg``, tmpfs, no model),
    stock and fastio taking turns, each beside ``Burners``, ``formats``
    ``{format: runs}``: ``{format: {variant: [(body, wall, RSS,
    threads)]}}``, threads being the writer's peak thread count from
    ``fastio.report`` (fastio only; None where no report line said it)."""
    out = {}
    report = os.path.join(workdir, "busy-report")
    for fmt, runs in formats.items():
        runs = max(1, int(round(runs * runs_scale)))
        samples = out[fmt] = {"stock": [], "fastio": []}
        for __ in range(runs):
            for variant in samples:
                extra = []
                if variant == "fastio":
                    # (a few lines to stderr at the end: stock's stderr
                    # goes to the same file)
                    extra = ["--config", "fastio.report=yes"]
                with open(report, "wb") as err, Burners():
                    body, wall, rss, dest = time_hg(
                        workdir, variant, fmt, data[fmt], env, extra=extra, stderr=err
                    )
                threads = None
                if extra:
                    with open(report, "rb") as f:
                        found = [int(n) for n in THREADS.findall(f.read())]
                    threads = max(found) if found else None
                samples[variant].append((body, wall, rss, threads))
                # checked once per variant, the burners stopped
                key = (size, fmt, variant, "busy")
                if key not in checked:
                    if fmt == "v2":
                        src = data["repo"]
                    else:
                        src = reference(workdir, size, fmt, data[fmt], env)
                    check(dest, src, fmt, variant, env)
                    checked.add(key)
    return out


def busy_medians(by):
    """``(stock body, stock wall, fastio body, fastio wall, threads
    median, threads max)``; the threads None where no run reported them."""
    med = [statistics.median(x[i] for x in by[v]) for v in by for i in (0, 1)]
    threads = [x[3] for x in by["fastio"] if x[3] is not None]
    if not threads:
        return tuple(med) + (None, None)
    return tuple(med) + (statistics.median(threads), max(threads))


def print_busy(size, busy):
    kind = {"v2": "stream v2", "cgz": "changegroup (zstd)"}
    print(
        "== %d files beside %d CPU-bound processes (tmpfs): body/wall "
        "seconds, medians ==" % (size, BURNERS)
    )
    print(
        "%-24s %17s %17s %17s %13s"
        % ("format (runs)", "stock", "fastio", "fastio/stock", "threads")
    )
    for fmt, by in busy.items():
        sb, sw, fb, fw, tmed, tmax = busy_medians(by)
        print(
            "%-24s %17s %17s %17s %13s"
            % (
                "%s (%d)" % (kind[fmt], len(by["stock"])),
                "%7.3f/%7.3f" % (sb, sw),
                "%7.3f/%7.3f" % (fb, fw),
                "%7.2f/%7.2f" % (fb / sb, fw / sw),
                "-" if tmed is None else "%g/%d" % (tmed, tmax),
            )
        )
    print(
        "(threads: fastio's writer's peak thread count (fastio.report), "
        "median/max of the runs)"
    )
    print()


def busy_lines(size, busy):
    out = []
    for fmt, by in busy.items():
        sb, sw, fb, fw, tmed, tmax = busy_medians(by)
        label = "%s %s busy: fastio" % (fmt, e2e.label(size))
        out.append("%-62s %6.2f" % (label + " / stock (body)", fb / sb))
        out.append("%-62s %6.2f" % (label + " / stock (wall)", fw / sw))
        if tmed is not None:
            threads = "%g/%d" % (tmed, tmax)
            out.append("%-62s %6s" % (label + "'s writer threads, median/max", threads))
    return out


def measure(workdir, data, row, shim, env, results, checked, runs_scale):
    name, size, fmt, models, variants, runs = row
    runs = max(1, int(round(runs * runs_scale)))
    for model in models:
        menv = model_env(env, model, shim)
        samples = {v: [] for v in variants}
        # under a mounted model, fastio on tmpfs too, in the same rounds,
        # for the ratio to it (unless a row before measured it)
        local = (size, fmt, "none", "fastio")
        if model in MOUNTED and local not in results:
            samples["local"] = []
        mounted = model in MOUNTED
        with FuseDestinations(workdir) if mounted else LocalDestinations() as dests:
            for __ in range(runs):
                for variant in list(samples):
                    dest, seen = dests.next()
                    if variant == "tar":
                        sample = time_tar(workdir, data["tar"], menv)
                    elif variant == "local":
                        sample = time_hg(workdir, "fastio", fmt, data[fmt], env)
                    else:
                        sample = time_hg(workdir, variant, fmt, data[fmt], menv, dest)
                    samples[variant].append(sample[:3])
                    # checked once per variant, and once more on a mount
                    key = (size, fmt, variant, mounted)
                    if variant not in ("tar", "local") and key not in checked:
                        if fmt == "v2":
                            src = data["repo"]
                        else:
                            src = reference(workdir, size, fmt, data[fmt], env)
                        # the same files, read without the model's latency
                        check(seen or sample[3], src, fmt, variant, env)
                        checked.add(key)
        for variant, got in samples.items():
            body, wall, rss = zip(*got)
            key = local if variant == "local" else (size, fmt, model, variant)
            results[key] = (
                statistics.median(body),
                statistics.median(wall),
                max(rss),
                runs,
            )
        if mounted and "fastio" in variants and local in results:
            under, there = results[(size, fmt, model, "fastio")], results[local]
            print(
                "(%s: fastio %s / fastio local: %.3f/%.3f s body/wall under "
                "%s, %.3f/%.3f s local: %.2f/%.2f)"
                % (
                    (name, model)
                    + under[:2]
                    + (model,)
                    + there[:2]
                    + (under[0] / there[0], under[1] / there[1])
                ),
                flush=True,
            )


def cpu_time(cmd, env, cwd=None):
    """``(wall seconds, CPU seconds)`` of a whole command."""
    wall, usage = cgpaths.run_usage(cmd, env, cwd)
    return wall, usage.ru_utime + usage.ru_stime


def installed_by_name(env):
    """Whether ``hgext3rd.fastio`` is this checkout's extension for the
    bench's interpreter (``pip install -e .``, as the Makefile installs it;
    or a copy of the same files)."""
    probe = (
        "import importlib.util as u; s = u.find_spec('hgext3rd.fastio'); "
        "print(s.submodule_search_locations[0] if s else '')"
    )
    got = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True
    ).stdout.strip()
    if not got:
        return False
    if os.path.realpath(got) == os.path.realpath(EXT):
        return True
    return all(
        filecmp.cmp(os.path.join(got, name), os.path.join(EXT, name), shallow=False)
        for name in os.listdir(EXT)
        if name.endswith(".py")
    )


def print_overhead(label, stock, fastio):
    out = []
    for which in (0, 1):
        a = [x[which] for x in stock]
        b = [x[which] for x in fastio]
        extra = statistics.median(y - x for x, y in zip(a, b)) * 1000
        out.append((statistics.median(a), statistics.median(b), extra))
    (sa, fa, ea), (sc, fc, ec) = out
    low, high = ratio_interval([x[0] for x in stock], [x[0] for x in fastio])
    print(
        "%-26s %9.3fs %9.3fs %7.3f %7.3f-%-7.3f %12.1f %10.3f %8.1fms"
        % (label, sa, fa, fa / sa, low, high, ea, fc / sc, ec)
    )


def measure_overhead(workdir, env, pairs):
    """Stock vs fastio on ``hg status``, ``hg log -r tip`` and the
    unbundle and pull of one changeset into a 100-file repository."""
    base = os.path.join(workdir, "overhead-base")
    ahead = os.path.join(workdir, "overhead-ahead")
    one = os.path.join(workdir, "overhead-one.hg")
    if not os.path.exists(one):
        for path in (base, ahead):
            shutil.rmtree(path, ignore_errors=True)
        run(
            [sys.executable, os.path.join(ROOT, "fixtures", "makerepo.py"), base, "100"]
            + ["--hg", HG],
            env,
        )
        run([HG, "-R", base, "update", "-q", "tip"], env)
        run([HG, "clone", "-q", base, ahead], env)
        with open(os.path.join(ahead, "overhead-file"), "w") as f:
            f.write("one more changeset\n")
        run([HG, "-R", ahead, "commit", "-qAm", "one"], env)
        run(
            [HG, "-R", ahead, "bundle", "-q", "-r", "tip", "--base", "tip^", one],
            env,
            stdout=subprocess.DEVNULL,
        )
    dest = os.path.join(workdir, "overhead-dest")
    commands = [
        ("hg status", [HG, "-R", base, "status"], False),
        ("hg log -r tip", [HG, "-R", base, "log", "-r", "tip"], False),
        ("hg unbundle, 1 changeset", [HG, "-R", dest, "unbundle", "-q", one], True),
        ("hg pull, 1 changeset", [HG, "-R", dest, "pull", "-q", ahead], True),
    ]
    # enabled as users enable it, in their hgrc: ``--config`` on the command
    # line would add Mercurial's own cost of a command-line setting
    # (ui.setconfig and fixconfig, ~0.25M instructions) to the extension's;
    # and stock reads an hgrc too, or the fastio runs would pay for
    # Mercurial's config parser (~2.5M).  By path (``fastio = PATH``), and
    # by name (``fastio =``, as installed with pip) when this interpreter
    # imports ``hgext3rd.fastio`` from this checkout: Mercurial then looks
    # for ``hgext.fastio`` first and imports its ``hgext`` and ``hgext3rd``
    # packages, a cost of loading any extension by name, not of this one's
    variants = [
        ("stock", "stock", ""),
        ("fastio", "fastio", EXT),
    ]
    if installed_by_name(env):
        variants.append(("fastio by name", "fastio-name", ""))
    envs = {}
    for variant, tag, path in variants:
        text = "[ui]\nusername = bench\n"
        if variant != "stock":
            text += "[extensions]\nfastio = %s\n" % path
        hgrc = os.path.join(workdir, "overhead-%s.hgrc" % tag)
        with open(hgrc, "w") as f:
            f.write(text.replace(" \n", "\n"))
        envs[variant] = dict(env, HGRCPATH=hgrc)
    names = [variant for variant, _, _ in variants]

    def fresh_dest(writes):
        if writes:
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(base, dest, symlinks=True)

    rows = []
    for label, cmd, writes in commands:
        samples = {name: [] for name in names}
        for pair in range(pairs):
            # each variant first in as many rounds as the others: whatever
            # the first run of a round pays or leaves behind falls on all
            first = pair % len(names)
            for variant in names[first:] + names[:first]:
                fresh_dest(writes)
                samples[variant].append(cpu_time(cmd, envs[variant]))
        rows.append((label, samples))
    counted = []
    if instructions.available():
        for label, cmd, writes in commands:
            got = []
            for variant in names:
                fresh_dest(writes)
                # (the interpreter itself: valgrind does not follow the
                # script's #! line)
                got.append(instructions.count([sys.executable] + cmd, envs[variant]))
            counted.append((label,) + tuple(got))
    print(
        "== the extension where it does little: %d alternating rounds, "
        "medians ==" % pairs
    )
    print(
        "%-26s %10s %10s %7s %15s %12s %10s %10s"
        % (
            "command",
            "stock",
            "fastio",
            "ratio",
            "ratio's %d%%" % LEVEL,
            "extra (ms)",
            "CPU ratio",
            "CPU extra",
        )
    )
    for label, samples in rows:
        for variant in names[1:]:
            print_overhead(
                label if variant == "fastio" else "  " + variant,
                samples["stock"],
                samples[variant],
            )
        if "fastio by name" in samples:
            lookup = statistics.median(
                y[0] - x[0]
                for x, y in zip(samples["fastio"], samples["fastio by name"])
            )
            print("%-26s %58.1f" % ("  by name - by path", lookup * 1000))
    print(
        "(ratio's %d%%: where the ratio of the medians falls in %d%% of "
        "%d resamplings of the rounds: how far this run's noise moves it; "
        "by name - by path: the median of the rounds' differences, "
        "Mercurial's lookup of an extension by name)" % (LEVEL, LEVEL, RESAMPLES)
    )
    print()
    if counted:
        instructions.print_table(counted)
    else:
        print("(no valgrind: no instruction counts)\n")


def print_table(size, fmt, results):
    kind = {"v2": "stream v2", "cg": "changegroup", "cgz": "changegroup (zstd)"}
    present = {v for (s, f, __, v) in results if (s, f) == (size, fmt)}
    variants = [v for v in ("tar", "stock", "stock-par", "fastio") if v in present]
    print("== %d files, %s: body/wall seconds (peak RSS MB) ==" % (size, kind[fmt]))
    print("%-10s" % "model" + "".join(" %26s" % v for v in variants))
    for model in MODELS:
        cells = []
        found = False
        for v in variants:
            r = results.get((size, fmt, model, v))
            if r is None:
                cells.append(" %26s" % "-")
                continue
            found = True
            cells.append(" %26s" % ("%7.3f/%7.3f (%5.0f)" % (r[0], r[1], r[2])))
        if found:
            print("%-10s" % model + "".join(cells))
    print()


def summary(results, extra=()):
    """The ratios the targets are about, from this run (``extra``: the
    changegroup paths' lines, last)."""
    r = results.get
    lines = []

    def ratio(label, a, b, which=0):
        if a is None or b is None:
            return
        lines.append("%-62s %6.2f" % (label, a[which] / b[which]))

    for size in (10000, 100000):
        base = r((size, "v2", "none", "fastio"))
        for model in (
            "net",
            "create1ms",
            "mkdir1ms",
            "close1ms",
            "close5ms",
            "netdir",
            "fuse",
        ):
            got = r((size, "v2", model, "fastio"))
            ratio(
                "v2 %dk: fastio %s / fastio none (body)" % (size // 1000, model),
                got,
                base,
            )
            ratio(
                "v2 %dk: fastio %s / fastio none (wall)" % (size // 1000, model),
                got,
                base,
                1,
            )
        for model in ("net", "netdir", "fuse"):
            ratio(
                "v2 %dk %s: fastio / stock parallel writer (wall)"
                % (size // 1000, model),
                r((size, "v2", model, "fastio")),
                r((size, "v2", model, "stock-par")),
                1,
            )
            ratio(
                "v2 %dk %s: fastio / stock (wall)" % (size // 1000, model),
                r((size, "v2", model, "fastio")),
                r((size, "v2", model, "stock")),
                1,
            )
        ratio(
            "v2 %dk: fastio / stock (body)" % (size // 1000),
            base,
            r((size, "v2", "none", "stock")),
        )
        ratio(
            "v2 %dk: fastio / tar -x (body)" % (size // 1000),
            base,
            r((size, "v2", "none", "tar")),
        )
    for fmt in ("cg", "cgz"):
        for model in ("net", "fuse"):
            ratio(
                "%s 10k: fastio %s / fastio none (body)" % (fmt, model),
                r((10000, fmt, model, "fastio")),
                r((10000, fmt, "none", "fastio")),
            )
            ratio(
                "%s 10k %s: fastio / stock (wall)" % (fmt, model),
                r((10000, fmt, model, "fastio")),
                r((10000, fmt, model, "stock")),
                1,
            )
        ratio(
            "%s 10k: fastio / stock (body)" % fmt,
            r((10000, fmt, "none", "fastio")),
            r((10000, fmt, "none", "stock")),
        )
    for fmt in ("v2", "cgz"):
        ratio(
            "%s 100 files: fastio / stock (body)" % fmt,
            r((100, fmt, "none", "fastio")),
            r((100, fmt, "none", "stock")),
        )
        ratio(
            "%s 100 files: fastio / stock (wall)" % fmt,
            r((100, fmt, "none", "fastio")),
            r((100, fmt, "none", "stock")),
            1,
        )
    # the cost of one more file: a 10k-file apply minus a 10-file apply,
    # whole commands (start-up included, it cancels out)
    marginal = {}
    for variant in ("tar", "stock", "fastio"):
        big, small = r((10000, "v2", "none", variant)), r((10, "v2", "none", variant))
        if big and small:
            marginal[variant] = (big[1] - small[1]) / (10000 - 10) * 1e6
            lines.append(
                "%-62s %6.1f"
                % ("v2 marginal cost per file, %s (us)" % variant, marginal[variant])
            )
    if "fastio" in marginal and "tar" in marginal:
        lines.append(
            "%-62s %6.2f"
            % (
                "v2 marginal cost per file: fastio / tar -x",
                marginal["fastio"] / marginal["tar"],
            )
        )
    big, small = r((100000, "v2", "none", "fastio")), r((10000, "v2", "none", "fastio"))
    if big and small:
        lines.append(
            "%-62s %6.0f"
            % (
                "v2 peak RSS, fastio: 100k files minus 10k files (MB)",
                big[2] - small[2],
            )
        )
    lines += extra
    print("summary (ratios of medians from this run)")
    for line in lines:
        print("  " + line)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plan", help="rows of the plan to run (names, commas)")
    ap.add_argument("--quick", action="store_true", help="no 100k rows")
    ap.add_argument("--runs-scale", type=float, default=1.0)
    ap.add_argument("--workdir", default="/dev/shm/hg-fastio-bench")
    ap.add_argument("--demo", action="store_true", help="a short run for a newcomer")
    ap.add_argument(
        "--files", type=int, help="files of the e2e and update rows (10k, 100k)"
    )
    ap.add_argument(
        "--models",
        help="only these latency models (names, commas) in the apply and the "
        "e2e rows (not in 10k-busy and overhead, which have none)",
    )
    args = ap.parse_args(argv)
    plan = PLAN
    cgplan = [row for row in CG_PLAN if row[0] in CG_DEFAULT]
    e2eplan = [row for row in E2E_PLAN if row[0] in E2E_DEFAULT]
    if args.demo:
        plan = [("demo", 5000, "v2", ["none"], ["stock", "fastio"], 1)]
        cgplan = e2eplan = []
    elif args.plan:
        wanted = args.plan.split(",")
        unknown = set(wanted) - {row[0] for row in PLAN + CG_PLAN + E2E_PLAN}
        if unknown:
            ap.error("no such row: %s" % ", ".join(sorted(unknown)))
        plan = [row for row in PLAN if row[0] in wanted]
        cgplan = [row for row in CG_PLAN if row[0] in wanted]
        e2eplan = [row for row in E2E_PLAN if row[0] in wanted]
    elif args.quick:
        plan = [row for row in PLAN if row[0] in QUICK]
        cgplan = [row for row in CG_PLAN if row[0] in QUICK]
        e2eplan = [row for row in E2E_PLAN if row[0] in QUICK]
    allowed = set(MODELS)
    if args.models:
        wanted = args.models.split(",")
        if set(wanted) - allowed:
            ap.error("no such model: %s" % ", ".join(sorted(set(wanted) - allowed)))
        allowed = set(wanted)
    if args.quick and not args.plan:
        allowed -= MOUNTED

    if not os.path.isdir(os.path.dirname(args.workdir)):
        args.workdir = os.path.join(tempfile.gettempdir(), "hg-fastio-bench")
        print("warning: no /dev/shm, running in %s (not tmpfs)" % args.workdir)
    os.makedirs(args.workdir, exist_ok=True)
    env = base_env()
    # the extension as installed: byte-compiled (PYTHONDONTWRITEBYTECODE in
    # the environment would make every hg run compile what changed)
    run([sys.executable, "-m", "compileall", "-q", EXT], env, stdout=subprocess.DEVNULL)
    shim = latencyshim.build(args.workdir)
    version = subprocess.run(
        [HG, "version", "-q"], env=env, capture_output=True, text=True
    ).stdout.strip()
    parallel = has_parallel_writer(env)
    print("%s; tmpfs %s; medians; %s" % (version, args.workdir, time.strftime("%F %T")))
    if not parallel:
        print("(no parallel stream writer in this release: no stock-par column)")
    print()
    used = {m for row in plan for m in row[3]}
    used |= {m for row in e2eplan for m in row[3]}
    if used & allowed & MOUNTED:
        ok, why = fusemount.available()
        if not ok:
            print("(skipping the fuse model's rows and cells: %s)" % why)
            allowed -= MOUNTED
    plan = [row[:3] + ([m for m in row[3] if m in allowed],) + row[4:] for row in plan]
    plan = [row for row in plan if row[3] or row[0] in SPECIAL]
    e2eplan = [
        row[:3] + ({m: n for m, n in row[3].items() if m in allowed},)
        for row in e2eplan
    ]
    e2eplan = [row for row in e2eplan if row[3]]
    results = {}
    checked = set()
    data = {}
    overhead = args.demo is False and (not args.plan or "overhead" in args.plan)
    busy = {}
    for row in plan:
        if row[0] == "overhead":
            continue
        name, size, fmt, models, variants, runs = row
        if not parallel:
            variants = [v for v in variants if v != "stock-par"]
        if size not in data:
            data[size] = prepare(args.workdir, size, env)
        start = time.time()
        if name == "10k-busy":
            busy[size] = measure_busy(
                args.workdir, data[size], size, runs, env, checked, args.runs_scale
            )
            print("(%s: %.0f s)" % (name, time.time() - start), flush=True)
            continue
        measure(
            args.workdir,
            data[size],
            (name, size, fmt, models, variants, runs),
            shim,
            env,
            results,
            checked,
            args.runs_scale,
        )
        print("(%s: %.0f s)" % (name, time.time() - start), flush=True)
    cgresults = []
    for name, spec, paths, runs, cpus in cgplan:
        start = time.time()
        if cgpaths.REPOS[spec][0] == "makerepo":
            size = cgpaths.REPOS[spec][1]
            if size not in data:
                data[size] = prepare(args.workdir, size, env)
            repo = data[size]["repo"]
            made = {"zstd": data[size]["cgz"], "none": data[size]["cg"]}
        else:
            files, commits = cgpaths.REPOS[spec][1:]
            repo = cgpaths.history_repo(args.workdir, files, commits, env)
            made = {}
        runs = max(1, int(round(runs * args.runs_scale)))
        samples, same = cgpaths.measure(
            args.workdir, name, repo, paths, runs, env, made, cpus
        )
        cgresults.append((name, spec, repo, samples, same, runs, cpus))
        print("(%s: %.0f s)" % (name, time.time() - start), flush=True)
    e2eresults = []
    for name, kind, size, runs in e2eplan:
        start = time.time()
        size = args.files or size
        # the repository and its stream bundle only
        made = data.get(size) or prepare(args.workdir, size, env, ("v2",))
        runs = {m: max(1, int(round(n * args.runs_scale))) for m, n in runs.items()}
        got = e2e.measure(
            kind,
            args.workdir,
            made,
            runs,
            env,
            lambda model: model_env(env, model, shim),
            lambda model: (
                FuseDestinations(args.workdir)
                if model in MOUNTED
                else LocalDestinations()
            ),
        )
        e2eresults.append((name, kind, size, runs) + got)
        print("(%s: %.0f s)" % (name, time.time() - start), flush=True)
    print()
    for size, fmt in sorted({(s, f) for (s, f, __, __) in results}):
        print_table(size, fmt, results)
    for size, got in busy.items():
        print_busy(size, got)
    for name, spec, repo, samples, same, runs, cpus in cgresults:
        cgpaths.print_table(
            name, repo, cgpaths.repo_stats(repo), samples, same, runs, cpus
        )
    for name, kind, size, runs, samples, ok, same in e2eresults:
        e2e.print_table(name, kind, size, samples, ok, same, runs)
    if overhead:
        start = time.time()
        measure_overhead(
            args.workdir, env, max(3, int(round(OVERHEAD_PAIRS * args.runs_scale)))
        )
        print("(overhead: %.0f s)" % (time.time() - start), flush=True)
    lines = []
    for size, got in busy.items():
        lines += busy_lines(size, got)
    for name, spec, repo, samples, same, runs, cpus in cgresults:
        lines += cgpaths.summary_lines(name, samples, spec)
    for name, kind, size, runs, samples, ok, same in e2eresults:
        lines += e2e.summary_lines(name, kind, size, samples)
    summary(results, lines)
    differ = [
        "%s %s" % (row[0], path)
        for row in cgresults
        for path, ok in row[4].items()
        if not ok
    ]
    for name, kind, size, runs, samples, ok, same in e2eresults:
        differ += ["%s %s" % (name, m) for m in samples if not ok[m]]
        differ += ["%s %s" % (name, m) for m, got in same.items() if not got]
    if differ:
        print(
            "NOT identical to stock, or not verified and clean: %s" % ", ".join(differ)
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
