"""One command server (``hg serve --cmdserver pipe``: chg's workers, IDE
integrations) running rounds of clone with checkout, stream clone,
unbundle, log and status, then deleting the round's repositories
(``fixtures/cmdserver_rounds.py``, the rounds of
``bench/cmdserver_growth.py``, fewer): with the extension its resident
memory grows no more than stock's (issue 39), and no file of a deleted
repository stays mapped beyond what stock leaves."""

import os
import tempfile

import pytest

import cmdserver_rounds

ROUNDS = 12
FILES = 300
# the collector's sawtooth: a full collection comes at a different round in
# each process, and a round leaves about 3 MiB of garbage in these rounds
MARGIN_KIB = 3 * 1024
# every apply through the writer's threads, as on a slow filesystem (on
# tmpfs auto mode writes most files inline)
THREADED = "[fastio]\nbackground-write = always\nwrite-threads = 8\n"


def late_growth(rows):
    """The mean resident size over the second half of the rounds, less the
    first round's: the collections' sawtooth averaged out."""
    late = rows[len(rows) // 2 :]
    return sum(r["rss_kib"] for r in late) / len(late) - rows[0]["rss_kib"]


@pytest.fixture
def workdir():
    # (tmpfs when there is one: the rounds are faster there)
    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    path = tempfile.mkdtemp(prefix="fastio-cmdserver-", dir=base)
    yield os.path.realpath(path)
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def test_cmdserver_memory_as_stock(workdir):
    src, bundle = cmdserver_rounds.prepare(workdir, FILES)
    stock = cmdserver_rounds.run(workdir, "stock", ROUNDS, src, bundle)
    fastio = cmdserver_rounds.run(
        workdir, "fastio", ROUNDS, src, bundle, extra_config=THREADED
    )
    table = "\n".join(
        "%s %2d rss %6d maps %4d stale %d stacks %3d threads %d fds %d"
        % (
            mode,
            i + 1,
            r["rss_kib"],
            r["maps"],
            r["stale"],
            r["stacks"],
            r["threads"],
            r["fds"],
        )
        for mode, rows in (("stock ", stock), ("fastio", fastio))
        for i, r in enumerate(rows)
    )
    print(table)
    stock_growth, fastio_growth = late_growth(stock), late_growth(fastio)
    assert fastio_growth <= 1.1 * stock_growth + MARGIN_KIB, (
        fastio_growth,
        stock_growth,
        table,
    )
    # the last round's repositories may still be garbage (stock's too)
    assert fastio[-1]["stale"] <= max(1, max(r["stale"] for r in stock)), (
        fastio[-1]["stale_lines"],
        table,
    )
    # the writer's threads have ended and their stacks are not kept
    assert fastio[-1]["threads"] == 1, table
    assert fastio[-1]["stacks"] <= max(r["stacks"] for r in stock), table
    assert fastio[-1]["fds"] <= max(r["fds"] for r in stock), table
