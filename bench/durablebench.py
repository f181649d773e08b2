#!/usr/bin/env python3
"""What ``fastio.durable`` costs: applies timed not durable, durable (the
extension's choice: one ``syncfs``) and durable by an ``fsync`` per file
(the naive way, ``devel.fastio.durable-method=fsync``).

Each run applies a bundle (stream v2, or a changegroup) to a new repository
on a real disk; the variants alternate, ``sync`` runs (untimed) before each
run so that no run pays for another's writeback, and each variant's median
is compared to the not-durable median.

usage: durablebench.py [--files N] [--runs N] [--dir DIR]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EXT = os.path.join(os.path.dirname(HERE), "hgext3rd", "fastio")
HG = os.path.join(os.path.dirname(sys.executable), "hg")

VARIANTS = (
    ("not durable", []),
    ("durable (syncfs)", ["fastio.durable=yes"]),
    (
        "durable, fsync per file",
        ["fastio.durable=yes", "devel.fastio.durable-method=fsync"],
    ),
)
BUNDLES = (("stream v2", "none-v2;stream=v2"), ("changegroup", "none-v2"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--dir", default="/tmp/fastio-durable-bench")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    hgrc = os.path.join(args.dir, "hgrc")
    with open(hgrc, "w") as f:
        f.write("[extensions]\nfastio = %s\n" % EXT)
    env = dict(os.environ, HGRCPATH=hgrc, HGPLAIN="1")
    src = os.path.join(args.dir, "src-%d" % args.files)
    if not os.path.isdir(src):
        subprocess.check_call(
            [
                sys.executable,
                os.path.join(HERE, "..", "fixtures", "makerepo.py"),
                src,
                str(args.files),
            ]
            + ["--hg", HG]
        )
    bundles = {}
    for name, spec in BUNDLES:
        path = os.path.join(args.dir, "%s-%d.hg" % (name.replace(" ", ""), args.files))
        if not os.path.exists(path):
            subprocess.check_call(
                [HG, "-R", src, "bundle", "-q", "-a", "-t", spec, path], env=env
            )
        bundles[name] = path
    dest = os.path.join(args.dir, "dest")
    times = {(b, v): [] for b, __ in BUNDLES for v, __ in VARIANTS}
    for run in range(args.runs):
        for bundle, __ in BUNDLES:
            # alternating variants, the first one rotating from run to run
            order = VARIANTS[run % 3 :] + VARIANTS[: run % 3]
            for variant, config in order:
                shutil.rmtree(dest, ignore_errors=True)
                subprocess.check_call([HG, "init", dest], env=env)
                subprocess.check_call(["sync"])
                command = [HG, "-R", dest, "unbundle", "-q", bundles[bundle]]
                for item in config:
                    command += ["--config", item]
                start = time.perf_counter()
                subprocess.check_call(command, env=env)
                times[bundle, variant].append(time.perf_counter() - start)
        print("run %d done" % (run + 1), file=sys.stderr)
    shutil.rmtree(dest, ignore_errors=True)
    print(
        "%d files, %d runs, medians (ratio to not durable); disk: %s"
        % (args.files, args.runs, args.dir)
    )
    for bundle, __ in BUNDLES:
        base = statistics.median(times[bundle, VARIANTS[0][0]])
        for variant, __ in VARIANTS:
            median = statistics.median(times[bundle, variant])
            print(
                "  %-12s %-24s %7.3f s  x%.2f   (runs: %s)"
                % (
                    bundle,
                    variant,
                    median,
                    median / base,
                    " ".join("%.3f" % t for t in times[bundle, variant]),
                )
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
