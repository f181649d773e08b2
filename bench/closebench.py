"""Micro-benchmark of FileWriter.close(): N descriptors (opened first, on
tmpfs when there is one), closed through a file writer in each mode; prints the
median over runs of the time spent in close() calls per descriptor (and
the fastest run's), and of the whole (close() calls and finish()).

    python bench/closebench.py [--count 10000] [--runs 7]
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from hgext3rd.fastio.writer import filewriter, writepool, writethreads


def run(kind, count, directory):
    fds = [
        os.open(os.path.join(directory, "f%d" % i), os.O_CREAT | os.O_WRONLY, 0o644)
        for i in range(count)
    ]
    saved = writepool.FdPool, writethreads.close_fds
    if kind == "python-threads":
        writepool.FdPool = None
    try:
        if kind == "inline":
            c = filewriter.FileWriter(mode=filewriter.MODE_NEVER)
        elif kind == "auto-inline":
            c = filewriter.FileWriter(mode=filewriter.MODE_AUTO, threshold_ns=10**9)
        else:
            c = filewriter.FileWriter(mode=filewriter.MODE_ALWAYS, threads=4)
        close = c.close
        start = time.perf_counter_ns()
        for fd in fds:
            close(fd, b"name")
        calls = time.perf_counter_ns() - start
        c.finish()
        whole = time.perf_counter_ns() - start
    finally:
        writepool.FdPool, writethreads.close_fds = saved
    return calls / count, whole / count


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    kinds = ["inline", "auto-inline", "pool", "python-threads"]
    if writepool.FdPool is None:
        kinds.remove("pool")
    results = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory(dir=base) as d:
        for __ in range(args.runs):
            for kind in kinds:
                results[kind].append(run(kind, args.count, d))
    print("%d closes, median of %d runs (ns per close)" % (args.count, args.runs))
    print(
        "%-16s %14s %14s %14s"
        % ("mode", "close() calls", "(fastest run)", "with finish")
    )
    for kind in kinds:
        calls = statistics.median(r[0] for r in results[kind])
        fastest = min(r[0] for r in results[kind])
        whole = statistics.median(r[1] for r in results[kind])
        print("%-16s %14.0f %14.0f %14.0f" % (kind, calls, fastest, whole))


if __name__ == "__main__":
    main()
