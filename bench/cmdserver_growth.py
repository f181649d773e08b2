#!/usr/bin/env python3
"""What one long-running command server keeps from round to round
(issue 39): ``hg serve --cmdserver pipe`` (chg's workers, IDE
integrations) running rounds of clone, stream clone, unbundle, log and
status, stock and with the extension.

Each round, in the one server: a pull-clone of a source repository of
NFILES files with its checkout, a stream clone over ssh (a dummy ssh:
the server side runs as a child), an unbundle of the whole history into
a new repository, ``log`` and ``status``; then the round's repositories
are deleted and the server's /proc entries read: VmRSS, memory mappings,
mappings of deleted files, mappings of files of the removed repositories,
threads and descriptors.  A table per round, then the growth from the
first round to the last, stock against fastio.

usage: cmdserver_growth.py [--rounds N] [--files NFILES] [--dir DIR]
                           [--modes stock,fastio]
"""

import argparse
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# the rounds themselves are shared with the tests (fixtures/)
sys.path.insert(0, os.path.join(ROOT, "fixtures"))

from cmdserver_rounds import COLUMNS, EXTPATH, prepare, run  # noqa: E402


def print_row(mode, index, row):
    print(
        "%-6s %5d %9d %6d %8d %6d %7d %7d %8d %5d %6.1f"
        % ((mode, index + 1) + tuple(row[c] for c in COLUMNS) + (row["seconds"],)),
        flush=True,
    )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--dir", help="work directory (kept); a temporary one by default")
    ap.add_argument("--modes", default="stock,fastio")
    ap.add_argument(
        "--ext", default=EXTPATH, help="the extension's path (default: this checkout's)"
    )
    args = ap.parse_args(argv)

    workdir = args.dir or tempfile.mkdtemp(prefix="fastio-cmdserver-")
    os.makedirs(workdir, exist_ok=True)
    workdir = os.path.realpath(workdir)
    src, bundle = prepare(workdir, args.files)
    print(
        "%d rounds in one command server, %d files (%s)"
        % (args.rounds, args.files, workdir)
    )
    print(
        "%-6s %5s %9s %6s %8s %6s %7s %7s %8s %5s %6s"
        % (
            "mode",
            "round",
            "rss KiB",
            "maps",
            "deleted",
            "stale",
            "stacks",
            "arenas",
            "threads",
            "fds",
            "secs",
        )
    )
    results = {}
    for mode in args.modes.split(","):
        results[mode] = run(
            workdir, mode, args.rounds, src, bundle, ext=args.ext, progress=print_row
        )
    print()
    print("growth, round 1 -> round %d:" % args.rounds)
    for mode, rows in results.items():
        first, last = rows[0], rows[-1]
        print(
            "%-6s rss %d -> %d KiB (%+d), maps %d -> %d, deleted maps %d, "
            "stale maps %d, stacks %d -> %d, arenas %d -> %d, threads %d -> %d, "
            "fds %d -> %d"
            % (
                mode,
                first["rss_kib"],
                last["rss_kib"],
                last["rss_kib"] - first["rss_kib"],
                first["maps"],
                last["maps"],
                last["deleted"],
                last["stale"],
                first["stacks"],
                last["stacks"],
                first["arenas"],
                last["arenas"],
                first["threads"],
                last["threads"],
                first["fds"],
                last["fds"],
            )
        )
        for line in last["stale_lines"][:10]:
            print("   ", line)
    if not args.dir:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
