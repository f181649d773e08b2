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
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TESTS = os.path.join(ROOT, "tests")
EXTPATH = os.path.join(ROOT, "hgext3rd", "fastio")
sys.path.insert(0, TESTS)

from cmdserver import CommandServer  # noqa: E402

HG = os.path.join(os.path.dirname(sys.executable), "hg")
COLUMNS = ("rss_kib", "maps", "deleted", "stale", "stacks", "arenas", "threads", "fds")


def prepare(workdir, nfiles):
    """The source repository and a bundle of its whole history."""
    src = os.path.join(workdir, "src")
    if not os.path.isdir(src):
        subprocess.run(
            [sys.executable, os.path.join(HERE, "makerepo.py"), src, str(nfiles)]
            + ["--hg", HG],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    bundle = os.path.join(workdir, "full.hg")
    if not os.path.exists(bundle):
        subprocess.run(
            [HG, "-R", src, "bundle", "-q", "-a", "-t", "zstd-v2", bundle],
            env=dict(os.environ, HGRCPATH="", HGPLAIN="1"),
            check=True,
        )
    return src, bundle


def environment(workdir, mode, extra_config="", ext=EXTPATH):
    """The server's environment: an hgrc of its own (the extension by path
    for ``fastio``) and the dummy ssh, which runs the remote command in
    $TESTTMP."""
    hgrc = os.path.join(workdir, "hgrc-%s" % mode)
    with open(hgrc, "w") as f:
        f.write(
            "[ui]\nusername = bench\nssh = %s %s\nremotecmd = %s\n"
            % (sys.executable, os.path.join(TESTS, "dummyssh"), HG)
        )
        if mode == "fastio":
            f.write("[extensions]\nfastio = %s\n" % ext)
        f.write(extra_config)
    env = dict(os.environ, HGRCPATH=hgrc, HGPLAIN="1", TESTTMP=workdir)
    env.pop("HGUSER", None)
    return env


def snapshot(pid, removed):
    """The server's resources now; ``removed``: the directory whose
    repositories were deleted (a mapping of a file under it is stale)."""
    proc = "/proc/%d" % pid
    rss = 0
    with open(proc + "/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    with open(proc + "/maps") as f:
        maps = f.read().splitlines()
    deleted = [m for m in maps if m.endswith(" (deleted)")]
    stale = [m for m in maps if removed in m]
    # anonymous: thread stacks (read-write, right above a guard page: live
    # threads' and those glibc caches) and malloc arenas of other threads
    # (their unused reservation: a 64 MiB heap's inaccessible part)
    stacks = arenas = 0
    previous_end, previous_guard = None, False
    for m in maps:
        fields = m.split()
        start, end = (int(x, 16) for x in fields[0].split("-"))
        anonymous = len(fields) == 5
        guard = anonymous and fields[1] == "---p"
        if anonymous and fields[1] == "rw-p" and previous_guard:
            stacks += previous_end == start
        if guard and end - start >= 1 << 20:
            arenas += 1
        previous_end, previous_guard = end, guard and end - start <= 64 << 10
    return {
        "rss_kib": rss,
        "maps": len(maps),
        "deleted": len(deleted),
        "stale": len(stale),
        "stacks": stacks,
        "arenas": arenas,
        "threads": len(os.listdir(proc + "/task")),
        "fds": len(os.listdir(proc + "/fd")),
        "stale_lines": stale + [m for m in deleted if m not in stale],
    }


class Failed(Exception):
    pass


def run_round(server, workdir, index, src, bundle):
    rounds = os.path.join(workdir, "rounds")
    base = os.path.join(rounds, "r%03d" % index)
    os.makedirs(base)
    clone = os.path.join(base, "clone")
    stream = os.path.join(base, "stream")
    unbundled = os.path.join(base, "unbundled")
    commands = [
        ["clone", "-q", "--pull", src, clone],
        # (relative to $TESTTMP, where the dummy ssh runs the server)
        ["clone", "-q", "-U", "--stream", "ssh://user@dummy/src", stream],
        ["init", unbundled],
        ["-R", unbundled, "unbundle", "-q", bundle],
        ["-R", clone, "log", "-q", "-l", "200"],
        ["-R", stream, "log", "-q", "-r", "tip", "--stat"],
        ["-R", clone, "status"],
        ["-R", unbundled, "status", "--rev", "0", "--rev", "tip"],
    ]
    began = time.monotonic()
    for args in commands:
        output = Sink()
        code = server.runcommand(args, output)
        if code:
            raise Failed("hg %s: exit %d\n%s" % (" ".join(args), code, output.text()))
    took = time.monotonic() - began
    shutil.rmtree(base)
    row = snapshot(server.pid, rounds + "/")
    row["seconds"] = took
    return row


class Sink:
    """A command's output, its last 4 KiB kept for an error message."""

    def __init__(self):
        self.tail = b""

    def write(self, data):
        self.tail = (self.tail + data)[-4096:]

    def text(self):
        return self.tail.decode("utf-8", "replace")


def run(
    workdir, mode, rounds, src, bundle, extra_config="", ext=EXTPATH, progress=None
):
    """``rounds`` rounds in one server; a snapshot after each."""
    shutil.rmtree(os.path.join(workdir, "rounds"), ignore_errors=True)
    env = environment(workdir, mode, extra_config, ext)
    server = CommandServer([HG], env=env, cwd=workdir)
    rows = []
    try:
        for index in range(rounds):
            rows.append(run_round(server, workdir, index, src, bundle))
            if progress is not None:
                progress(mode, index, rows[-1])
    finally:
        code = server.close()
    if code:
        raise Failed("%s server exit %d" % (mode, code))
    return rows


def growth(rows):
    return {c: rows[-1][c] - rows[0][c] for c in COLUMNS}


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
