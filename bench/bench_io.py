#!/usr/bin/env python3
"""System calls on bundle files, stock vs fastio, per path (``make bench-io``).

For each path that reads or writes a bundle file, runs the command once
under ``strace -f -y`` with stock Mercurial and once with the extension,
and counts the read (or write) calls on the bundle file and their mean
size.  Then times each path under ``latency.c`` (an LD_PRELOAD shim that
sleeps before every read and write of the bundle file, as a network share's
round trip: ``--delay`` microseconds; the repository stays local),
``--runs`` times, median.  Bundles written by both are compared byte for byte, and every
repository applied is verified and compared with stock's (``hg log``
of every revision with its manifest).

usage: bench_io.py [--files N] [--delay US] [--runs N] [--workdir DIR]
"""

import argparse
import os
import re
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

import latencyshim  # noqa: E402

EXT = os.path.join(ROOT, "hgext3rd", "fastio")
HG = os.path.join(os.path.dirname(sys.executable), "hg")

READ_CALLS = ("read", "pread64", "readv", "preadv")
WRITE_CALLS = ("write", "pwrite64", "writev", "pwritev")
_STRACE = re.compile(
    r"(?:\[pid\s+\d+\]\s+|\d+\s+)?(\w+)\((\d+)<([^>]*)>.*\)\s+=\s+(\d+)"
)


def env_base():
    env = dict(os.environ)
    env.update(HGRCPATH="", HGPLAIN="1", HGUSER="bench", LANG="C")
    env.pop("LD_PRELOAD", None)
    return env


def variant_args(variant):
    if variant == "fastio":
        return ["--config", "extensions.fastio=%s" % EXT]
    return []


def count(trace, match, calls):
    n = total = 0
    with open(trace) as f:
        for line in f:
            m = _STRACE.match(line)
            if not m or m.group(1) not in calls or match not in m.group(3):
                continue
            size = int(m.group(4))
            if size:
                n += 1
                total += size
    return n, (total // n if n else 0)


def hg(args, env, **kw):
    return subprocess.run(
        [HG] + args, env=env, check=True, stdout=subprocess.DEVNULL, **kw
    )


def prepare(workdir, nfiles, env):
    src = os.path.join(workdir, "src")
    if not os.path.exists(os.path.join(src, ".hg")):
        subprocess.run(
            [
                sys.executable,
                os.path.join(ROOT, "fixtures", "makerepo.py"),
                src,
                str(nfiles),
            ]
            + ["--hg", HG],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
    bundles = {}
    for name, btype in (
        ("zstd-v2", "zstd-v2"),
        ("none-v2", "none-v2"),
        ("gzip-v1", "gzip-v1"),
        ("stream-v2", "none-v2;stream=v2"),
    ):
        path = os.path.join(workdir, "in-%s.hg" % name)
        if not os.path.exists(path):
            hg(["-R", src, "bundle", "-q", "-a", "--type", btype, path], env)
        bundles[name] = path
    path = os.path.join(workdir, "in-packed1.hg")
    if not os.path.exists(path):
        hg(["-R", src, "debugcreatestreamclonebundle", path], env)
    bundles["packed1"] = path
    return src, bundles


def plan(src, bundles, workdir):
    """(label, kind, match, command(variant, dest) -> args, output or None)"""
    rows = []
    for name in ("zstd-v2", "none-v2", "gzip-v1", "stream-v2"):
        b = bundles[name]
        rows.append(
            (
                "hg unbundle %s" % name,
                "read",
                b,
                lambda d, b=b: ["-R", d, "unbundle", "-q", b],
                None,
            )
        )
    b = bundles["packed1"]
    rows.append(
        (
            "debugapplystreamclonebundle",
            "read",
            b,
            lambda d, b=b: ["-R", d, "debugapplystreamclonebundle", b],
            None,
        )
    )
    for name in ("none-v2", "zstd-v2"):
        b = bundles[name]
        rows.append(
            (
                "hg pull %s bundle" % name,
                "read",
                b,
                lambda d, b=b: ["-R", d, "pull", "-q", b],
                None,
            )
        )
    rows.append(
        (
            "  its uncompressed copy",
            "read",
            "/hg-bundle-",
            lambda d, b=bundles["zstd-v2"]: ["-R", d, "pull", "-q", b],
            None,
        )
    )
    rows.append(
        (
            "hg incoming none-v2 bundle",
            "read",
            bundles["none-v2"],
            lambda d, b=bundles["none-v2"]: ["-R", d, "incoming", "-q", b],
            None,
        )
    )
    for name, btype in (
        ("none-v2", "none-v2"),
        ("zstd-v2", "zstd-v2"),
        ("gzip-v1", "gzip-v1"),
        ("stream-v2", "none-v2;stream=v2"),
    ):
        rows.append(
            (
                "hg bundle %s" % name,
                "write",
                "out-",
                lambda d, t=btype: [
                    "-R",
                    src,
                    "bundle",
                    "-q",
                    "-a",
                    "--type",
                    t,
                    d + ".out-bundle",
                ],
                ".out-bundle",
            )
        )
    rows.append(
        (
            "debugcreatestreamclonebundle",
            "write",
            "out-",
            lambda d: ["-R", src, "debugcreatestreamclonebundle", d + ".out-bundle"],
            ".out-bundle",
        )
    )
    return rows


def fresh(workdir, variant, env):
    dest = os.path.join(workdir, "dest-%s" % variant)
    shutil.rmtree(dest, ignore_errors=True)
    for leftover in (dest + ".out-bundle",):
        if os.path.exists(leftover):
            os.unlink(leftover)
    hg(["init", dest], env)
    return dest


def fingerprint(dest, env):
    out = subprocess.run(
        [HG, "-R", dest, "log", "--debug", "-T", "{node} {manifest}\n"],
        env=env,
        check=True,
        capture_output=True,
    ).stdout
    hg(["-R", dest, "verify", "-q"], env)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--delay", type=int, default=1000, help="us per read/write")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workdir", default="/dev/shm/hg-fastio-bench-io")
    opts = ap.parse_args(argv)
    if shutil.which("strace") is None:
        sys.exit("strace is needed (apt-get install strace)")
    os.makedirs(opts.workdir, exist_ok=True)
    env = env_base()
    shim = latencyshim.build(opts.workdir)
    src, bundles = prepare(opts.workdir, opts.files, env)
    trace = os.path.join(opts.workdir, "trace")
    print(
        "%d files; times under %d us per read and write of the bundle file, "
        "median of %d" % (opts.files, opts.delay, opts.runs)
    )
    head = "%-30s %-5s %16s %16s %9s %9s %6s" % (
        "path",
        "call",
        "stock calls/mean",
        "fastio calls/mean",
        "stock s",
        "fastio s",
        "same",
    )
    print(head)
    print("-" * len(head))
    for label, kind, match, command, output in plan(src, bundles, opts.workdir):
        calls = READ_CALLS if kind == "read" else WRITE_CALLS
        counts, times, results = {}, {}, {}
        for variant in ("stock", "fastio"):
            dest = fresh(opts.workdir, variant, env)
            m = match if match != "out-" else "dest-%s.out-bundle" % variant
            subprocess.run(
                [
                    "strace",
                    "-f",
                    "-y",
                    "-qq",
                    "-o",
                    trace,
                    "-e",
                    "trace=" + ",".join(calls),
                    HG,
                ]
                + variant_args(variant)
                + command(dest),
                env=env,
                check=True,
                stdout=subprocess.DEVNULL,
            )
            counts[variant] = count(trace, m, calls)
            if output:
                with open(dest + output, "rb") as f:
                    results[variant] = f.read()
            else:
                results[variant] = fingerprint(dest, env)
            lenv = dict(
                env,
                FASTIO_DELAY_PATH=m,
                LD_PRELOAD=shim,
                FASTIO_DELAY_READ_US=str(opts.delay),
                FASTIO_DELAY_WRITE_US=str(opts.delay),
            )
            samples = []
            for __ in range(opts.runs):
                dest = fresh(opts.workdir, variant, env)
                start = time.monotonic()
                subprocess.run(
                    [HG] + variant_args(variant) + command(dest),
                    env=lenv,
                    check=True,
                    stdout=subprocess.DEVNULL,
                )
                samples.append(time.monotonic() - start)
            times[variant] = statistics.median(samples)
        same = "yes" if results["stock"] == results["fastio"] else "NO"
        print(
            "%-30s %-5s %16s %16s %9.2f %9.2f %6s"
            % (
                label,
                kind,
                "%d / %dK" % (counts["stock"][0], counts["stock"][1] // 1024),
                "%d / %dK" % (counts["fastio"][0], counts["fastio"][1] // 1024),
                times["stock"],
                times["fastio"],
                same,
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
