"""The latency shim's model of the kernel (fixtures/latency.c): creates in
one directory go one at a time under FASTIO_DIRLOCK while closes overlap,
lookups are delayed, the counts file counts, a forked child does not inherit
a held directory lock.  Each case runs a small Python child under
LD_PRELOAD and times only its threads' work (not its start)."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import latencyshim

# times sleeps: alone, after the parallel phase
pytestmark = pytest.mark.serial


@pytest.fixture(scope="module")
def shim(tmp_path_factory):
    try:
        return latencyshim.build(str(tmp_path_factory.mktemp("latencyshim")))
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("no gcc")


def run(shim, code, env, *args, timeout=30):
    """CODE run (its arguments ARGS) under the shim, in an environment of
    no FASTIO_ variables but ENV; its output, JSON."""
    full = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("FASTIO_") and k != "LD_PRELOAD"
    }
    full.update(env, LD_PRELOAD=shim)
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", textwrap.dedent(code)] + list(args),
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


# (prefixed to a child's code) WORK(arg) run in a thread for each of ARGS,
# all started at once; the seconds they took, printed
IN_THREADS = """
    import json, os, sys, threading, time

    def in_threads(work, args):
        barrier = threading.Barrier(len(args) + 1)

        def run(arg):
            barrier.wait()
            work(arg)

        threads = [threading.Thread(target=run, args=(arg,)) for arg in args]
        for t in threads:
            t.start()
        barrier.wait()
        start = time.monotonic()
        for t in threads:
            t.join()
        print(json.dumps(time.monotonic() - start))
"""


def threaded(code):
    return textwrap.dedent(IN_THREADS) + textwrap.dedent(code)


# 8 threads create 40 files (thread k: those i with i % 8 == k), in one
# directory or in directory k
CREATES = """
    top, spread = sys.argv[1], sys.argv[2] == "1"
    dirs = [os.path.join(top, "d%d" % k) for k in range(8)]
    for d in dirs:
        os.mkdir(d)

    def work(k):
        for i in range(k, 40, 8):
            d = dirs[k] if spread else dirs[0]
            os.close(os.open(os.path.join(d, "f%d" % i), os.O_CREAT | os.O_WRONLY))

    in_threads(work, range(8))
"""


def creates(shim, tmp_path, spread, **env):
    top = tmp_path / ("spread" if spread else "one")
    n = 0
    while top.exists():
        n += 1
        top = tmp_path / ("%s%d" % ("spread" if spread else "one", n))
    top.mkdir()
    return run(shim, threaded(CREATES), env, str(top), str(spread))


def fastest(measure, below, tries=3):
    """The fastest of up to ``tries`` runs, stopping at one ``below``: an
    overlap shows in one run, a busy machine (CI beside other work) can
    hide it in another."""
    best = None
    for _ in range(tries):
        took = measure()
        best = took if best is None else min(best, took)
        if best < below:
            break
    return best


SERIAL = 40 * 0.002


def test_creates_in_one_directory_serialize(shim, tmp_path):
    took = creates(shim, tmp_path, 0, FASTIO_DELAY_CREATE_US="2000", FASTIO_DIRLOCK="1")
    assert took >= 0.8 * SERIAL


def test_creates_in_many_directories_overlap(shim, tmp_path):
    one = creates(shim, tmp_path, 0, FASTIO_DELAY_CREATE_US="2000", FASTIO_DIRLOCK="1")
    spread = fastest(
        lambda: creates(
            shim, tmp_path, 1, FASTIO_DELAY_CREATE_US="2000", FASTIO_DIRLOCK="1"
        ),
        0.5 * max(one, SERIAL),
    )
    assert spread < 0.5 * max(one, SERIAL)


def test_creates_overlap_without_dirlock(shim, tmp_path):
    took = fastest(
        lambda: creates(shim, tmp_path, 0, FASTIO_DELAY_CREATE_US="2000"),
        0.5 * SERIAL,
    )
    assert took < 0.5 * SERIAL


def test_closes_overlap_under_dirlock(shim, tmp_path):
    code = """
        top = sys.argv[1]
        fds = [os.open(os.path.join(top, "f%d" % k), os.O_CREAT | os.O_WRONLY)
               for k in range(8)]
        in_threads(os.close, fds)
    """
    env = dict(FASTIO_CLOSE_DELAY_US="20000", FASTIO_DIRLOCK="1")
    assert run(shim, threaded(code), env, str(tmp_path)) < 0.5 * 8 * 0.020


def test_lookups_delayed(shim, tmp_path):
    code = """
        import json, os, sys, time
        top = sys.argv[1]
        name = os.path.join(top, "f")
        with open(name, "wb"):
            pass
        fd = os.open(name, os.O_RDONLY)

        def timed(call):
            start = time.monotonic()
            for _ in range(10):
                call()
            return time.monotonic() - start

        def read():
            with open(name, "rb"):
                pass

        print(json.dumps({
            "stat": timed(lambda: os.stat(name)),
            "lstat": timed(lambda: os.lstat(name)),
            "exists": timed(lambda: os.path.exists(name + "-not")),
            "listdir": timed(lambda: os.listdir(top)),
            "open": timed(read),
            "fstat": timed(lambda: os.fstat(fd)),
        }))
    """
    took = run(shim, code, dict(FASTIO_DELAY_LOOKUP_US="2000"), str(tmp_path))
    for call in ("stat", "lstat", "exists", "listdir", "open"):
        assert took[call] >= 10 * 0.002 * 0.9, (call, took)
    assert took["fstat"] < 10 * 0.002 * 0.5, took


def test_counts(shim, tmp_path):
    code = """
        import os, sys, threading
        top = sys.argv[1]
        store = os.path.join(top, "store")
        os.mkdir(store)

        def create(name, n):
            for i in range(n):
                with open(os.path.join(store, "%s%d" % (name, i)), "wb") as f:
                    f.write(b"x")

        create("main", 10)
        t = threading.Thread(target=create, args=("other", 5))
        t.start()
        t.join()
        for name in ("main0", "main1", "main2"):
            os.stat(os.path.join(store, name))
        with open(os.path.join(store, "main0"), "rb") as f:
            f.read()
        os.rename(os.path.join(store, "main0"), os.path.join(store, "moved"))
        os.rename(os.path.join(store, "main1"), os.path.join(top, "out"))
        os.unlink(os.path.join(store, "main2"))
        # outside FASTIO_COUNT_PATH: none of these count
        with open(os.path.join(top, "elsewhere"), "wb") as f:
            f.write(b"x")
        os.stat(top)
        print("{}")
    """
    counts = tmp_path / "counts"
    env = dict(
        FASTIO_LATENCY_COUNTS=str(counts),
        FASTIO_COUNT_PATH=os.path.join(str(tmp_path), "store"),
    )
    run(shim, code, env, str(tmp_path))
    (line,) = counts.read_text().splitlines()
    got = dict(field.split("=", 1) for field in line.split())
    del got["pid"], got["comm"]
    # the read opens (a lookup) and reads until the end: two reads
    want = dict(
        create=15, mkdir=1, close=15, read=2, write=15, lookup=4, unlink=1, rename=2
    )
    want.update(("main." + k, v) for k, v in list(want.items()))
    want.update({"main.create": 10, "main.close": 10, "main.write": 10})
    assert {k: int(v) for k, v in got.items()} == want


def test_fork_while_stripes_held(shim, tmp_path):
    # threads keep the directory's stripe held (a 50 ms create each);
    # the forked child creates there too, and must not wait forever
    code = """
        import os, sys, threading, time
        top = sys.argv[1]
        stop = False

        def work(k):
            i = 0
            while not stop:
                os.close(os.open(os.path.join(top, "t%d-%d" % (k, i)),
                                 os.O_CREAT | os.O_WRONLY))
                i += 1

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        time.sleep(0.1)
        pid = os.fork()
        if not pid:
            os.close(os.open(os.path.join(top, "child"), os.O_CREAT | os.O_WRONLY))
            os._exit(0)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.05)
        else:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            status = "hung"
        stop = True
        for t in threads:
            t.join()
        print(repr(status).join('""'))
    """
    env = dict(FASTIO_DELAY_CREATE_US="50000", FASTIO_DIRLOCK="1")
    assert run(shim, code, env, str(tmp_path)) == "0"
    assert (tmp_path / "child").exists()
