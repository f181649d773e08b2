#!/usr/bin/env python3
"""Stream and changegroup application: tar -x vs stock hg vs fastio.

Everything runs on tmpfs (/dev/shm).  For each repository size and stream
format, each variant applies the same stream bundle to an empty repository
``--runs`` times (``--small-runs`` times under 1000 files, where a run takes
tens of milliseconds); the table shows medians.  Each variant also runs with a
slow ``close()`` (an LD_PRELOAD shim built here with gcc, sleeping
``--delay-us`` in every close of a regular file opened for writing).

Times are of the command body (hg start-up excluded, measured by the
bench-only ``benchtimer`` extension loaded in every hg run); ``wall`` columns
include start-up.  ``tar`` is ``tar -x`` of the same store.

Formats: ``v1``, ``v2``, ``v3`` (stream bundles) and ``cg`` (an
uncompressed bundle2 changegroup, applied with ``hg unbundle``: the path of
pulls and pull-clones).  Stream results are compared with the source store,
changegroup results with what stock's ``hg unbundle`` wrote.

usage: bench.py [--sizes 100,10000,20000] [--formats v2,cg] [--runs 5]
                [--small-runs 21]
                [--delay-us 1000] [--demo]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
EXT = os.path.join(ROOT, "hgext3rd", "fastio")
TIMER = os.path.join(HERE, "benchtimer.py")
HG = os.path.join(os.path.dirname(sys.executable), "hg")

VARIANTS = {
    "stock": [],
    "stock+bgclose": ["--config", "worker.backgroundclose=true"],
    "fastio": ["--config", "extensions.fastio=%s" % EXT],
}
# fastio with its closer forced on or off instead of auto mode's choice
# (--variants stock,fastio,fastio-always,fastio-never)
EXTRA_VARIANTS = {
    "fastio-always": VARIANTS["fastio"]
    + ["--config", "fastio.background-close=always"],
    "fastio-never": VARIANTS["fastio"] + ["--config", "fastio.background-close=never"],
}


def run(cmd, env, **kw):
    return subprocess.run(cmd, env=env, check=True, **kw)


def build_shim(workdir):
    so = os.path.join(workdir, "closedelay.so")
    src = os.path.join(HERE, "closedelay.c")
    if not os.path.exists(so) or os.path.getmtime(so) < os.path.getmtime(src):
        subprocess.run(
            ["gcc", "-O2", "-shared", "-fPIC", "-o", so, src, "-ldl"], check=True
        )
    return so


def base_env():
    env = dict(os.environ)
    env.update(HGRCPATH="", HGPLAIN="1", HGUSER="bench", LANG="C")
    env.pop("LD_PRELOAD", None)
    return env


def prepare(workdir, size, env):
    """The source repository, its stream bundles and a tar of its store."""
    repo = os.path.join(workdir, "repo-%d" % size)
    if not os.path.exists(os.path.join(repo, ".hg", "store", "00changelog.i")):
        shutil.rmtree(repo, ignore_errors=True)
        run(
            [
                sys.executable,
                os.path.join(HERE, "makerepo.py"),
                repo,
                str(size),
                "--hg",
                HG,
            ],
            env,
        )
    out = {}
    hg = [HG, "-R", repo]
    bundles = {
        "v1": (["debugcreatestreamclonebundle"], []),
        "v2": (["bundle", "-q", "-a", "-t", "none-v2;stream=v2"], []),
        "v3": (
            ["bundle", "-q", "-a", "-t", "none-v2;stream=v3-exp"],
            ["--config", "experimental.stream-v3=yes"],
        ),
        "cg": (["bundle", "-q", "-a", "-t", "none-v2"], []),
    }
    for fmt, (cmd, extra) in bundles.items():
        path = os.path.join(workdir, "repo-%d.%s" % (size, fmt))
        if not os.path.exists(path):
            run(hg + extra + cmd + [path], env, stdout=subprocess.DEVNULL)
        out[fmt] = path
    tar = os.path.join(workdir, "repo-%d.tar" % size)
    if not os.path.exists(tar):
        run(["tar", "-C", os.path.join(repo, ".hg"), "-cf", tar, "store"], env)
    out["tar"] = tar
    out["repo"] = repo
    # what stock writes from the changegroup: the reference for fastio's
    ref = os.path.join(workdir, "ref-cg-%d" % size)
    if not os.path.exists(os.path.join(ref, ".hg", "store", "00changelog.i")):
        shutil.rmtree(ref, ignore_errors=True)
        run([HG, "init", ref], env)
        run([HG, "-R", ref] + apply_cmd("cg", out["cg"]), env)
    out["ref-cg"] = ref
    return out


def apply_cmd(fmt, bundle):
    if fmt == "v1":
        return ["debugapplystreamclonebundle", bundle]
    if fmt == "cg":
        return ["unbundle", "-q", bundle]
    return ["unbundle", "-q", bundle, "--config", "experimental.stream-v3=yes"]


def time_hg(workdir, variant, fmt, bundle, env):
    dest = os.path.join(workdir, "dest")
    shutil.rmtree(dest, ignore_errors=True)
    clean = dict(env)
    clean.pop("LD_PRELOAD", None)
    run([HG, "init", dest], clean)
    times = os.path.join(workdir, "times")
    if os.path.exists(times):
        os.unlink(times)
    env = dict(env, FASTIO_BENCH_TIMES=times)
    cmd = [HG, "--config", "extensions.benchtimer=%s" % TIMER, "-R", dest]
    cmd += dict(VARIANTS, **EXTRA_VARIANTS)[variant] + apply_cmd(fmt, bundle)
    start = time.perf_counter()
    run(cmd, env, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    with open(times) as f:
        body = float(f.read().split()[-1])
    return body, wall, dest


def time_tar(workdir, tar, env):
    dest = os.path.join(workdir, "tardest")
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    start = time.perf_counter()
    # a store just built can carry mtimes a few ms ahead of tar's clock
    run(["tar", "--warning=no-timestamp", "-C", dest, "-xf", tar], env)
    return time.perf_counter() - start


def check(dest, src, fmt, variant, env):
    clean = dict(env)
    clean.pop("LD_PRELOAD", None)
    run([HG, "-R", dest, "verify", "-q"], clean)
    cmp = [sys.executable, os.path.join(ROOT, "tests", "storecompare.py")]
    if variant.startswith("stock") and fmt != "cg":
        cmp.append("--content-only")  # stock v2 gives revlogs mode 0777-umask
    run(cmp + [src, dest], clean, stdout=subprocess.DEVNULL)


def median(values):
    return statistics.median(values)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,10000,20000")
    ap.add_argument("--formats", default="v2,cg")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument(
        "--small-runs",
        type=int,
        default=21,
        help="runs for repositories under 1000 files (tens of milliseconds: "
        "5 runs cannot tell 3%% apart)",
    )
    ap.add_argument("--delay-us", type=int, default=1000)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--workdir", default="/dev/shm/hg-fastio-bench")
    ap.add_argument("--demo", action="store_true", help="a short run for a newcomer")
    args = ap.parse_args(argv)
    if args.demo:
        args.sizes, args.formats, args.runs = "5000", "v2", 1
        args.variants = "stock,fastio"

    if not os.path.isdir(os.path.dirname(args.workdir)):
        args.workdir = os.path.join(tempfile.gettempdir(), "hg-fastio-bench")
        print("warning: no /dev/shm, running in %s (not tmpfs)" % args.workdir)
    os.makedirs(args.workdir, exist_ok=True)
    env = base_env()
    shim = build_shim(args.workdir)
    sizes = [int(s) for s in args.sizes.split(",")]
    formats = args.formats.split(",")
    variants = args.variants.split(",")
    unknown = set(variants) - set(VARIANTS) - set(EXTRA_VARIANTS)
    if unknown:
        ap.error("unknown variants: %s" % ", ".join(sorted(unknown)))
    delays = [0, args.delay_us] if args.delay_us else [0]

    version = subprocess.run(
        [HG, "version", "-q"], env=env, capture_output=True, text=True
    ).stdout.strip()
    print(
        "%s; tmpfs %s; %d runs (%d under 1000 files), medians; times in seconds"
        % (version, args.workdir, args.runs, max(args.runs, args.small_runs))
    )
    print("body = command body (hg start-up excluded); wall = whole command")
    print()
    for size in sizes:
        data = prepare(args.workdir, size, env)
        runs = args.runs if size >= 1000 else max(args.runs, args.small_runs)
        for fmt in formats:
            results = {}
            for delay in delays:
                denv = dict(env)
                if delay:
                    denv.update(LD_PRELOAD=shim, FASTIO_CLOSE_DELAY_US=str(delay))
                results[(delay, "tar")] = median(
                    [time_tar(args.workdir, data["tar"], denv) for __ in range(runs)]
                )
                # runs interleaved: a load change hits every variant alike
                bodies = {v: [] for v in variants}
                walls = {v: [] for v in variants}
                for i in range(runs):
                    for variant in variants:
                        body, wall, dest = time_hg(
                            args.workdir, variant, fmt, data[fmt], denv
                        )
                        bodies[variant].append(body)
                        walls[variant].append(wall)
                        if i == 0:
                            src = data["ref-cg" if fmt == "cg" else "repo"]
                            check(dest, src, fmt, variant, env)
                for variant in variants:
                    results[(delay, variant)] = (
                        median(bodies[variant]),
                        median(walls[variant]),
                    )
            print_table(size, fmt, delays, variants, results)
    return 0


def print_table(size, fmt, delays, variants, results):
    kind = "changegroup unbundle" if fmt == "cg" else "stream %s" % fmt
    print("== %d files, %s ==" % (size, kind))
    header = "%-10s %8s" % ("close()", "tar -x")
    widths = {v: max(15, len(v) + 10) for v in variants}
    for v in variants:
        header += " %*s" % (widths[v], v + " body/wall")
    print(header)
    for delay in delays:
        label = "%d us" % delay if delay else "tmpfs"
        line = "%-10s %8.3f" % (label, results[(delay, "tar")])
        for v in variants:
            body, wall = results[(delay, v)]
            line += " %*s" % (widths[v], "%7.3f/%7.3f" % (body, wall))
        print(line)
    if "fastio" in variants:
        f0 = results[(0, "fastio")][0]
        ratios = ["fastio/tar %.2f" % (f0 / results[(0, "tar")])]
        for v in variants:
            if v != "fastio":
                ratios.append("fastio/%s %.2f" % (v, f0 / results[(0, v)][0]))
        if len(delays) > 1:
            d = delays[1]
            ratios.append(
                "fastio %dus/fastio %.2f" % (d, results[(d, "fastio")][0] / f0)
            )
            for v in variants:
                if v != "fastio":
                    ratios.append(
                        "%s %dus/%s %.2f"
                        % (v, d, v, results[(d, v)][0] / results[(0, v)][0])
                    )
        print("ratios (body): " + "; ".join(ratios))
    print()
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
