"""Instructions an ``hg`` command executes, stock vs fastio (callgrind).

On a shared machine, 41 alternating pairs of a 0.2 s command do not resolve
the 2 ms the load-cost targets are about: two runs minutes apart differ by
more than that.  The instruction count of the whole process (user space,
every thread) is stable to about 0.01% from run to run, so the overhead row
prints it next to the times when valgrind is installed.
"""

import os
import re
import shutil
import subprocess
import tempfile


def available():
    return shutil.which("valgrind") is not None


def count(cmd, env):
    """The instructions ``cmd`` executes (one run under callgrind; a fixed
    hash seed, so that dictionaries do the same work every run)."""
    fd, out = tempfile.mkstemp(prefix="fastio-callgrind.")
    os.close(fd)
    try:
        subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out] + cmd,
            env=dict(env, PYTHONHASHSEED="0"),
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        with open(out) as f:
            return int(re.search(r"^summary: (\d+)", f.read(), re.M).group(1))
    finally:
        os.unlink(out)


def print_table(rows):
    """``rows``: (label, stock instructions, fastio instructions[, fastio
    enabled by name])."""
    print("== instructions (callgrind, one run each) ==")
    print("%-26s %12s %12s %10s %8s" % ("command", "stock", "fastio", "extra", "ratio"))
    for label, stock, *variants in rows:
        for which, fastio in enumerate(variants):
            print(
                "%-26s %11.2fM %11.2fM %+9.2fM %8.4f"
                % (
                    label if which == 0 else "  by name",
                    stock / 1e6,
                    fastio / 1e6,
                    (fastio - stock) / 1e6,
                    fastio / stock,
                )
            )
    print()
