#!/usr/bin/env python3
"""Every numeric ``[fastio]`` option at the edges of its range, on the
stream path (``hg unbundle`` of a ``stream=v2`` bundle) and the changegroup
path (``hg unbundle`` of a zstd bundle), in each closing mode.

Each cell is ``applied`` (the store equals the one stock Mercurial makes
from the same bundle) or the one line the command printed (an ``abort:`` or
``config error:`` naming the option, the repository left as it was);
anything else (a traceback, more lines, a store that differs) is marked
``BAD``.  The commands run in one command server (``hg serve --cmdserver
pipe``, restarted if it dies): a process per cell would take minutes.

usage: optionsweep.py [HG]   (prints the table; exits 1 if a cell is BAD)
"""

import os
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# the store comparison shared with the benchmarks
sys.path.insert(0, os.path.join(ROOT, "fixtures"))

import storecompare  # noqa: E402

HUGE = str(10**12)
# (option, lowest allowed value, smallest useful value, huge value): the
# ranges the extension's help documents
OPTIONS = (
    ("fastio.write-threads", 0, "1", HUGE),
    ("fastio.max-write-threads", 1, "1", HUGE),
    ("fastio.max-pending-files", 1, "1", HUGE),
    ("fastio.file-sample", 1, "1", HUGE),
    ("fastio.buffer-size", 64 * 1024, "64KB", "1000GB"),
    ("fastio.read-buffer", 0, "4KB", "1000GB"),
    ("fastio.write-buffer", 0, "4KB", "1000GB"),
    ("fastio.memory-budget", 1, "64KB", "1000GB"),
    ("fastio.slow-file-threshold", 0, "1ns", HUGE),
    ("fastio.pending-timeout", 0, "1ms", HUGE),
    ("fastio.probe-max-age", 0, "1s", HUGE),
    ("fastio.mmap-populate-threshold", 0, "4KB", "1000GB"),
    ("devel.fastio.mmap-thread-nice", 0, "1", HUGE),
)
PATHS = ("stream", "changegroup")
# (name, --config values, paths): "slow" is auto mode on a filesystem it
# finds slow (every close above the threshold): the threads a changegroup
# starts are sized from the latency (a stream's new files go to threads in
# auto mode at once on a machine of two cores)
MODES = (
    ("auto", ("fastio.background-write=auto",), PATHS),
    ("always", ("fastio.background-write=always",), PATHS),
    ("never", ("fastio.background-write=never",), PATHS),
    (
        "slow",
        ("fastio.background-write=auto", "fastio.slow-file-threshold=0"),
        ("changegroup",),
    ),
)
BUNDLES = {"stream": "none-v2;stream=v2", "changegroup": "zstd-v2"}
# every cell: the machinery even for one changeset, mappings of every size
# (the mmap options are read)
BASE_CONFIG = (
    "devel.fastio.small-applies=false",
    "storage.revlog.mmap.index:size-threshold=0",
    "experimental.mmapindexthreshold=0",
    "fastio.mmap-populate-threshold=0",
)


def values(smallest, huge):
    seen = []
    for value in ("0", "1", smallest, huge, "-1", "abc"):
        if value not in seen:
            seen.append(value)
    return seen


def allowed(value, lowest):
    """Whether the documented range takes ``value`` (None: not a number)."""
    if value == "abc":
        return None
    return not value.startswith("-") and _amount(value) >= lowest


def _amount(value):
    # a size in bytes; a duration's number (its range starts at 0)
    for unit, scale in (("KB", 1 << 10), ("MB", 1 << 20), ("GB", 1 << 30)):
        if value.endswith(unit):
            return int(value[: -len(unit)]) * scale
    return int(value.rstrip("nums"))


class CommandServer:
    """``hg serve --cmdserver pipe``; ``run(args)`` -> (exit code or None if
    the server died, stdout and stderr channels, the server's own stderr)."""

    def __init__(self, hg, env, cwd):
        self._argv = [hg, "serve", "--cmdserver", "pipe"]
        self._env = env
        self._cwd = cwd
        self._server = None

    def _start(self):
        self._errfile = tempfile.TemporaryFile()
        self._server = subprocess.Popen(
            self._argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._errfile,
            env=self._env,
            cwd=self._cwd,
        )
        self._channel()  # the hello message

    def _channel(self):
        out = self._server.stdout
        header = out.read(5)
        if len(header) < 5:
            return None, b""
        channel, length = struct.unpack(">cI", header)
        if channel == b"r":
            return channel, out.read(length)
        if channel.isupper():
            raise RuntimeError("channel %r not handled" % channel)
        return channel, out.read(length)

    def run(self, args):
        if self._server is None:
            self._start()
        data = b"\0".join(a.encode() for a in args)
        output = b""
        try:
            self._server.stdin.write(
                b"runcommand\n" + struct.pack(">I", len(data)) + data
            )
            self._server.stdin.flush()
            while True:
                channel, data = self._channel()
                if channel is None:
                    break
                if channel == b"r":
                    return struct.unpack(">i", data)[0], output, b""
                if channel in (b"o", b"e"):
                    output += data
        except BrokenPipeError:
            pass
        # the server died: what it printed is the cell's
        self._server.wait()
        self._errfile.seek(0)
        died = self._errfile.read()
        self._server = None
        return None, output, died

    def close(self):
        if self._server is not None:
            self._server.stdin.close()
            self._server.wait()
            self._server = None


class Sweep:
    """The source (40 files, two changesets), its bundles, an empty
    repository, stock's apply of each bundle, and the command server the
    cells run in."""

    def __init__(self, hg, env, work):
        self.work = work
        src = os.path.join(work, "src")
        subprocess.run([hg, "init", src], env=env, check=True)
        for i in range(40):
            d = os.path.join(src, "dir%d" % (i % 5), "sub%d" % (i % 3))
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "file%d.txt" % i), "w") as f:
                f.write("content %d\n" % i * (i + 1))
        subprocess.run([hg, "-R", src, "commit", "-qAm", "one"], env=env, check=True)
        with open(os.path.join(src, "dir1", "sub1", "file1.txt"), "a") as f:
            f.write("more\n")
        subprocess.run([hg, "-R", src, "commit", "-qm", "two"], env=env, check=True)
        subprocess.run([hg, "-R", src, "phase", "-qp", "."], env=env, check=True)
        self.empty = os.path.join(work, "empty")
        subprocess.run([hg, "init", self.empty], env=env, check=True)
        self.bundles, self.stock = {}, {}
        for path, spec in BUNDLES.items():
            bundle = self.bundles[path] = os.path.join(work, path + ".hg")
            subprocess.run(
                [hg, "-R", src, "bundle", "-q", "-a", "-t", spec, bundle],
                env=env,
                check=True,
            )
            ref = os.path.join(work, "stock-" + path)
            shutil.copytree(self.empty, ref)
            subprocess.run(
                [hg, "--config", "extensions.fastio=!", "-R", ref]
                + ["unbundle", "-q", bundle],
                env=env,
                check=True,
            )
            self.stock[path] = store(ref, path)
        self.server = CommandServer(hg, env, work)

    def cell(self, path, config, option):
        """What one apply of ``path``'s bundle with ``config`` (``--config``
        values) did: ``applied``, the error line naming ``option``, or
        ``BAD: ...``."""
        dst = os.path.join(self.work, "dst")
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(self.empty, dst)
        args = ["-R", dst, "unbundle", "-q", self.bundles[path]]
        for item in BASE_CONFIG + tuple(config):
            args += ["--config", item]
        code, output, died = self.server.run(args)
        text = (output + died).decode("utf-8", "replace")
        lines = text.splitlines()
        if code is None or "Traceback" in text:
            last = lines[-1] if lines else "(no output)"
            return "BAD: %s" % ("server died: " if code is None else "") + last
        if code == 0:
            if lines:
                return "BAD: applied, printed %r" % lines[0]
            if store(dst, path) != self.stock[path]:
                return "BAD: store differs from stock's"
            return "applied"
        if (
            len(lines) == 1
            and lines[0].startswith(("abort: ", "config error: "))
            and option in lines[0]
        ):
            if store(dst, path) != store(self.empty, path):
                return "BAD: store changed by %s" % lines[0]
            return lines[0]
        return "BAD: exit %d: %s" % (code, " | ".join(lines))

    def run(self, report=None):
        """Rows ``(option, value, mode, path, result, expected)``;
        ``report(row)`` as each comes."""
        rows = []
        try:
            for option, lowest, smallest, huge in OPTIONS:
                for value in values(smallest, huge):
                    expected = allowed(value, lowest)
                    for mode, mode_config, paths in MODES:
                        # (the option's value last: it wins)
                        config = mode_config + ("%s=%s" % (option, value),)
                        for path in paths:
                            result = self.cell(path, config, option)
                            row = (option, value, mode, path, result, expected)
                            rows.append(row)
                            if report is not None:
                                report(row)
        finally:
            self.server.close()
        return rows


def scratch(fallback=None):
    """A new directory for a sweep: on tmpfs where there is one (removing
    a repository from ext4 takes 30 ms, a third of a cell), else in
    ``fallback``."""
    base = "/dev/shm" if os.path.isdir("/dev/shm") else fallback
    return tempfile.mkdtemp(prefix="fastio-options-", dir=base)


def store(repo, path):
    # stock 7.x makes streamed files 0777 minus umask, the extension with
    # the store's mode (test-stream-clone.t): contents only there
    return storecompare.store_files(repo, set(), modes=path != "stream")


def wrong(row):
    """Why a row is not what the documented range says, or None."""
    option, value, mode, path, result, expected = row
    if result.startswith("BAD"):
        return result
    if expected and result != "applied":
        return "refused a value in range"
    if expected is False and not result.startswith("abort: %s must be" % option):
        return "took a value below the range"
    if expected is None and not result.startswith("config error: "):
        return "not a number taken"
    return None


def format_row(row):
    option, value, mode, path, result, expected = row
    problem = wrong(row)
    mark = "" if problem is None else "   <-- WRONG: %s" % problem
    return "%-30s %-7s %-6s %-11s %s%s" % (option, value, mode, path, result, mark)


def main(argv):
    hg = argv[1] if len(argv) > 1 else shutil.which("hg")
    work = scratch()
    try:
        env = dict(os.environ, HGPLAIN="1")
        if not os.environ.get("HGRCPATH"):
            hgrc = os.path.join(work, "hgrc")
            ext = os.path.join(ROOT, "hgext3rd", "fastio")
            with open(hgrc, "w") as f:
                f.write("[ui]\nusername = test\n[extensions]\nfastio = %s\n" % ext)
            env["HGRCPATH"] = hgrc
        sweep = Sweep(hg, env, work)
        rows = sweep.run(lambda row: print(format_row(row), flush=True))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if any(wrong(row) for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
