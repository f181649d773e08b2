"""Unit tests of _writepool (close_all and the C Pool) and of what the
file writer does with them: nothing leaks, no failure is lost, a fork is safe,
a hung close does not hold the owner."""

import errno
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import FIXTURES, ROOT, SHIMS  # noqa: E402

sys.path.insert(0, ROOT)

from mercurial import error  # noqa: E402

from hgext3rd.fastio.writer import filewriter, writepool, writethreads

needs_c = pytest.mark.skipif(
    writethreads.close_fds is None, reason="_writepool not built"
)
needs_pool = pytest.mark.skipif(writepool.FdPool is None, reason="no C Pool")


def is_open(fd):
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def shim(tmp_path, src):
    """Build the LD_PRELOAD shim of the C file SRC; skip without gcc."""
    out = str(tmp_path / (os.path.splitext(os.path.basename(src))[0] + ".so"))
    command = ["gcc"] + "-O2 -shared -fPIC -o".split() + [out, src, "-ldl"]
    try:
        subprocess.run(command, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("no gcc")
    return out


def run_script(code, env=None, timeout=60):
    """Run CODE in a fresh interpreter (ROOT on its path); its output."""
    full = dict(os.environ, **(env or {}))
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), ROOT],
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def wait_child(pid, seconds):
    """The exit code of child ``pid``; killed (and None) if it takes longer
    than ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.05)


# -- close_all ----------------------------------------------------------------


@needs_c
def test_close_all_reports_per_descriptor(tmp_path):
    fds = [os.open(os.devnull, os.O_RDONLY) for __ in range(3)]
    assert writethreads.close_fds(fds) is None
    assert not any(is_open(fd) for fd in fds)
    good = os.open(os.devnull, os.O_RDONLY)
    errs = writethreads.close_fds([1 << 20, good])
    assert list(memoryview(errs).cast("i")) == [errno.EBADF, 0]
    assert not is_open(good)


@needs_c
def test_close_all_raises_only_before_closing():
    fds = [os.open(os.devnull, os.O_RDONLY) for __ in range(2)]
    with pytest.raises(TypeError):
        writethreads.close_fds([fds[0], "not a descriptor", fds[1]])
    assert all(is_open(fd) for fd in fds)
    for fd in fds:
        os.close(fd)


@needs_c
def test_batch_closed_one_by_one_when_close_all_raises(tmp_path, monkeypatch):
    # Python closing threads; close_all fails before closing anything (no
    # memory): the batch is closed one by one, not leaked
    monkeypatch.setattr(writepool, "FdPool", None)

    def no_memory(fds):
        raise MemoryError

    monkeypatch.setattr(writethreads, "close_fds", no_memory)
    fds = [
        os.open(str(tmp_path / ("f%d" % i)), os.O_CREAT | os.O_WRONLY)
        for i in range(40)
    ]
    c = filewriter.FileWriter(mode=filewriter.MODE_ALWAYS, threads=2)
    with c:
        for i, fd in enumerate(fds):
            c.close(fd, b"f%d" % i)
    leaked = [fd for fd in fds if is_open(fd)]
    for fd in leaked:
        os.close(fd)
    assert not leaked


# -- EINTR ----------------------------------------------------------------------

_EINTR = """
import os, sys
sys.path.insert(0, sys.argv[1])
from mercurial import error
from hgext3rd.fastio.writer import filewriter, writepool
if os.environ["KIND"] == "threads":
    writepool.FdPool = None
d = os.environ["DIR"]
c = filewriter.FileWriter(mode=filewriter.MODE_ALWAYS, threads=2)
try:
    with c:
        for i in range(20):
            name = "eintr.i" if i == 7 else "f%d" % i
            fd = os.open(os.path.join(d, name), os.O_CREAT | os.O_WRONLY)
            c.close(fd, name.encode())
except error.Abort as exc:
    print(exc.message.decode())
else:
    print("no error")
"""


@needs_c
@pytest.mark.parametrize("kind", ["pool", "threads"])
def test_eintr_from_close_is_a_failure(tmp_path, kind):
    """close() says EINTR: the descriptor is gone on Linux (no retry), but
    its flush may have been cut short: a failure, not a success."""
    if kind == "pool" and writepool.FdPool is None:
        pytest.skip("no C Pool")
    so = shim(tmp_path, os.path.join(SHIMS, "faultshim.c"))
    env = {
        "LD_PRELOAD": so,
        "FASTIO_FAIL_CLOSE": "eintr.i",
        "FASTIO_FAIL_CLOSE_ERRNO": str(errno.EINTR),
        "KIND": kind,
        "DIR": str(tmp_path),
    }
    out = run_script(_EINTR, env)
    assert out.stdout.strip() == ("error closing 'eintr.i': Interrupted system call"), (
        out.stdout + out.stderr
    )


# -- fork -----------------------------------------------------------------------

_FORK = """
import os, sys, time
sys.path.insert(0, sys.argv[1])
from hgext3rd.fastio.writer import filewriter
d = os.environ["DIR"]
def opened(prefix, n):
    return [os.open(os.path.join(d, "%s%d" % (prefix, i)), os.O_CREAT | os.O_WRONLY)
            for i in range(n)]
c = filewriter.FileWriter(mode=filewriter.MODE_ALWAYS, threads=2, max_pending=8)
parent = opened("p", 30)
for fd in parent:
    c.close(fd, b"p")
assert c.pending() > 0, "closes must be pending at the fork"
pid = os.fork()
if pid == 0:
    # the child: the writer made in the parent closes inline here
    mine = opened("c", 5)
    for fd in mine:
        c.close(fd, b"c")
    c.finish()
    os._exit(0 if all(not os.path.exists("/proc/self/fd/%d" % fd) for fd in mine) else 3)
deadline = time.monotonic() + 20
while True:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    if time.monotonic() > deadline:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        print("child hung")
        sys.exit(1)
    time.sleep(0.05)
print("child exit", os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1)
more = opened("q", 10)
for fd in more:
    c.close(fd, b"q")
c.finish()
left = [fd for fd in parent + more if os.path.exists("/proc/self/fd/%d" % fd)]
print("parent left open", len(left))
"""


@needs_pool
def test_fork_with_closes_pending(tmp_path):
    """A child forked while the pool has closes pending (Mercurial's
    workers, chg) finishes the parent's file writer promptly, closing its own
    files inline; the parent's writer goes on working."""
    so = shim(tmp_path, os.path.join(FIXTURES, "latency.c"))
    env = {"LD_PRELOAD": so, "FASTIO_CLOSE_DELAY_US": "20000", "DIR": str(tmp_path)}
    out = run_script(_FORK, env)
    assert out.stdout.split("\n")[:2] == ["child exit 0", "parent left open 0"], (
        out.stdout + out.stderr
    )


@needs_pool
def test_pool_refuses_use_in_forked_child():
    pool = writepool.FdPool(8, 1, 1)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            pool.submit(os.open(os.devnull, os.O_RDONLY), b"x")
        except RuntimeError:
            code = 0
        del pool  # leaks the parent's ring: never touches its lock
        os._exit(code)
    assert wait_child(pid, 20) == 0
    assert pool.finish(5.0)


def hang_env(tmp_path):
    """The environment of a script whose close of 'hung.i' hangs (20 s at
    most) until the file $FASTIO_HANG_RELEASE exists."""
    return {
        "LD_PRELOAD": shim(tmp_path, os.path.join(SHIMS, "faultshim.c")),
        "FASTIO_HANG_CLOSE": "hung.i",
        "FASTIO_HANG_S": "20",
        "FASTIO_HANG_RELEASE": str(tmp_path / "release"),
        "DIR": str(tmp_path),
    }


# -- a close that hangs ---------------------------------------------------------

_HANG = """
import os, sys, time
sys.path.insert(0, sys.argv[1])
from hgext3rd.fastio.writer import writepool
d = os.environ["DIR"]
pool = writepool.FdPool(8, 2, 2)
fds = [os.open(os.path.join(d, n), os.O_CREAT | os.O_WRONLY)
       for n in ["a", "b", "hung.i", "c", "d"]]
for fd in fds:
    pool.submit(fd, os.path.basename(os.readlink("/proc/self/fd/%d" % fd)).encode())
start = time.monotonic()
done = pool.finish(0.5)
print("finished", done, "after %.1f" % (time.monotonic() - start))
print("unfinished", pool.unfinished())
del pool  # the hung thread keeps the ring
open(os.environ["FASTIO_HANG_RELEASE"], "w").close()
time.sleep(0.3)
print("open after release", [fd for fd in fds if os.path.exists("/proc/self/fd/%d" % fd)])
"""


@needs_pool
def test_pool_gives_up_on_a_hung_close(tmp_path):
    env = hang_env(tmp_path)
    out = run_script(_HANG, env, timeout=30)
    assert out.stdout.splitlines() == [
        "finished False after 0.5",
        "unfinished (1, b'hung.i')",
        "open after release []",
    ], (
        out.stdout + out.stderr
    )


_FULL = """
import _thread, os, sys, threading
sys.path.insert(0, sys.argv[1])
from hgext3rd.fastio.writer import writepool
d = os.environ["DIR"]
def fd(name):
    return os.open(os.path.join(d, name), os.O_CREAT | os.O_WRONLY)
asked = []
def interrupted():
    asked.append(1)
    return len(asked) == 2
pool = writepool.FdPool(1, 1, 1, interrupted)
pool.submit(fd("hung.i"), b"hung.i")  # its close hangs: the ring is full
flags = pool.submit(fd("a"), b"a")
print("flags", flags, "submitted", pool.submitted, "asked", len(asked))
threading.Timer(0.3, _thread.interrupt_main).start()
try:
    pool.submit(fd("b"), b"b")
except KeyboardInterrupt:
    print("interrupted, submitted", pool.submitted)
print("finished", pool.finish(0.2), pool.unfinished()[0])
open(os.environ["FASTIO_HANG_RELEASE"], "w").close()
print("finished", pool.finish(10))
"""


@needs_pool
def test_submit_queues_when_interrupted_waiting_for_room(tmp_path):
    """A full ring (here: a hung close) and a signal: submit stops waiting
    and still takes the descriptor, beyond capacity."""
    env = hang_env(tmp_path)
    out = run_script(_FULL, env, timeout=30)
    assert out.stdout.splitlines() == [
        "flags 5 submitted 2 asked 2",
        "interrupted, submitted 3",
        "finished False 3",
        "finished True",
    ], (
        out.stdout + out.stderr
    )


_LANES = """
import os, sys, time
sys.path.insert(0, sys.argv[1])
from hgext3rd.fastio.writer import writepool
base = os.environ["DIR"]

def timed(dirs, per_dir):
    # per_dir new files in each of dirs (made first), on 8 threads
    pool = writepool.FdPool(256, 8, 8)
    tasks = []
    for d in range(dirs):
        path = os.path.join(base, "%s-%d" % (sys.argv[2], d)).encode()
        tasks.append((path, None, -1, path, -1))
    seq = 0
    for n in range(per_dir):
        for d in range(dirs):
            path = os.path.join(base, "%s-%d" % (sys.argv[2], d), "f%d" % n)
            tasks.append((path.encode(), b"x", -1, path.encode(), d))
    pool.submit_files(tasks[:dirs])
    assert pool.drain(10.0) and pool.failure() is None
    start = time.monotonic()
    pool.submit_files(tasks[dirs:])
    assert pool.finish(10.0), "unfinished"
    assert pool.failure() is None, pool.failure()
    return time.monotonic() - start

print("%.3f" % timed(int(sys.argv[3]), int(sys.argv[4])))
"""


def _lanes_time(tmp_path, env, name, dirs, per_dir):
    out = subprocess.run(
        [sys.executable, "-c", _LANES, ROOT, name, str(dirs), str(per_dir)],
        env=dict(os.environ, DIR=str(tmp_path), **env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return float(out.stdout)


@needs_pool
@pytest.mark.serial  # times sleeps: alone, after the parallel phase
def test_one_thread_creates_in_a_directory_at_a_time(tmp_path):
    """The kernel serializes a directory's creates (its parent's lock): the
    pool never has two threads creating in one directory (they would wait
    on each other), and spreads its threads over directories.  Under the
    latency shim, whose creates all overlap, 8 files in one directory on 8
    threads take 8 creates end to end, 8 files in 8 directories about one."""
    so = shim(tmp_path, os.path.join(FIXTURES, "latency.c"))
    env = {"LD_PRELOAD": so, "FASTIO_DELAY_CREATE_US": "25000"}
    one_dir = _lanes_time(tmp_path, env, "one", 1, 8)
    spread = _lanes_time(tmp_path, env, "spread", 8, 1)
    assert one_dir >= 8 * 0.025, one_dir
    assert spread < 4 * 0.025, spread


@needs_pool
@pytest.mark.serial  # times sleeps: alone, after the parallel phase
def test_closes_in_one_directory_overlap(tmp_path):
    """A lane is held across the create only: the closes of one directory's
    files (a network filesystem's flush) overlap."""
    so = shim(tmp_path, os.path.join(FIXTURES, "latency.c"))
    env = {"LD_PRELOAD": so, "FASTIO_CLOSE_DELAY_US": "25000"}
    one_dir = _lanes_time(tmp_path, env, "one", 1, 8)
    assert one_dir < 4 * 0.025, one_dir


_GROW = """
import os, sys, time
sys.path.insert(0, sys.argv[1])
from hgext3rd.fastio.writer import writepool
pool = writepool.FdPool(64, 1, 8)
# closes the filesystem does not keep waiting (a pipe): no thread added
for __ in range(20):
    r, w = os.pipe()
    pool.submit(r, b"r")
    pool.submit(w, b"w")
assert pool.drain(10.0)
print(pool.add_thread(only_if_blocked=True))
# a close that sleeps (the shim's delay on a written regular file): one
fd = os.open(os.path.join(os.environ["DIR"], "f"), os.O_WRONLY | os.O_CREAT)
pool.submit(fd, b"f")
assert pool.drain(10.0)
print(pool.add_thread(only_if_blocked=True))
# and not again until another task waits
print(pool.add_thread(only_if_blocked=True))
print(pool.add_thread())
assert pool.finish(10.0)
"""


@needs_pool
def test_pool_grows_for_filesystem_waits_only(tmp_path):
    """The owner's request for one more thread (it waited for room) is
    granted only when a task was kept waiting by the filesystem since the
    last: threads a busy CPU runs late are not helped by more of them."""
    so = shim(tmp_path, os.path.join(FIXTURES, "latency.c"))
    out = subprocess.run(
        [sys.executable, "-c", _GROW, ROOT],
        env=dict(
            os.environ,
            DIR=str(tmp_path),
            LD_PRELOAD=so,
            FASTIO_CLOSE_DELAY_US="5000",
        ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.stdout.split() == ["1", "2", "2", "3"], out.stdout + out.stderr
