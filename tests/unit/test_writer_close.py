"""Unit tests of the closes of the file writer (``FileWriter.close``),
inline, on the C pool or on Python threads: no failure is ever lost."""

import _thread
import errno
import os
import signal
import sys
import threading
import time

import pytest

from conftest import ROOT  # noqa: E402

sys.path.insert(0, ROOT)

from mercurial import error  # noqa: E402

from hgext3rd.fastio.writer import filewriter, signals, writepool, writethreads


class FakeFile:
    """A file object whose close can fail or be slow."""

    def __init__(self, name, fail=False, delay=0.0):
        self.name = name
        self.fail = fail
        self.delay = delay
        self.closed = False
        self.thread = None

    def close(self):
        if self.delay:
            time.sleep(self.delay)
        self.thread = threading.current_thread()
        self.closed = True
        if self.fail:
            raise OSError(28, "No space left on device")


MODES = {
    "inline": dict(mode=filewriter.MODE_NEVER),
    "background": dict(mode=filewriter.MODE_ALWAYS, threads=3),
    "auto-slow": dict(mode=filewriter.MODE_AUTO, threshold_ns=1000, window=4),
}


def make(kind, **extra):
    options = dict(MODES[kind])
    options.update(extra)
    return filewriter.FileWriter(**options)


@pytest.mark.parametrize("kind", sorted(MODES))
@pytest.mark.parametrize("position", ["first", "middle", "last"])
def test_failing_close_aborts(kind, position):
    count = 50
    failing = {"first": 0, "middle": count // 2, "last": count - 1}[position]
    delay = 0.002 if kind == "auto-slow" else 0.0
    files = [
        FakeFile(b"data/f%d.i" % i, fail=(i == failing), delay=delay)
        for i in range(count)
    ]
    c = make(kind)
    given = []
    with pytest.raises(error.Abort) as info:
        with c:
            for f in files:
                given.append(f)
                c.close(f, f.name)
    assert b"data/f%d.i" % failing in info.value.message
    assert b"No space left on device" in info.value.message
    if kind == "inline" or (kind == "auto-slow" and position == "first"):
        # closed inline (auto mode starts so): the failing close raised
        assert given == files[: failing + 1]
    # every handle given to the writer was closed all the same: no leak
    assert given and all(f.closed for f in given)


def test_last_file_failure_in_background_is_not_lost():
    # stock's closer drops this one (exit 0, corrupt repository)
    c = make("background")
    f = FakeFile(b"00changelog.i", fail=True, delay=0.01)
    c.close(f, f.name)
    with pytest.raises(error.Abort):
        c.finish()


def test_fast_closes_stay_inline():
    c = filewriter.FileWriter(threshold_ns=10**9, window=4)
    files = [FakeFile(b"f%d" % i) for i in range(40)]
    with c:
        for f in files:
            c.close(f, f.name)
    assert not c.background
    assert c.stats.threads == 0
    assert all(f.thread is threading.current_thread() for f in files)


def test_slow_closes_go_to_background():
    c = filewriter.FileWriter(threshold_ns=100_000, window=4)
    files = [FakeFile(b"f%d" % i, delay=0.002) for i in range(60)]
    with c:
        for f in files:
            c.close(f, f.name)
    assert c.background
    assert c.stats.threads >= 2
    assert c.stats.background > 40
    assert all(f.closed for f in files)
    assert any(f.thread is not threading.current_thread() for f in files)


def test_background_decided_once_most_of_the_window_was_slow():
    # 16-close window: the median is sure to be slow after 9 slow closes,
    # so the 10th close goes to the background, not the 17th
    c = filewriter.FileWriter(threshold_ns=100_000, window=16)
    files = [FakeFile(b"f%d" % i, delay=0.002) for i in range(30)]
    with c:
        for f in files:
            c.close(f, f.name)
    inline = [f for f in files if f.thread is threading.current_thread()]
    assert len(inline) == 9
    assert c.background and c.stats.windows == 1


def test_mixed_window_waits_for_all_samples():
    # 8 fast then slow closes: no early decision while the median is open
    c = filewriter.FileWriter(threshold_ns=100_000, window=16)
    files = [FakeFile(b"f%d" % i, delay=0.002 if i >= 8 else 0) for i in range(40)]
    with c:
        for f in files[:16]:
            c.close(f, f.name)
        assert c.background and c.stats.windows == 1
        for f in files[16:]:
            c.close(f, f.name)
    assert all(f.thread is threading.current_thread() for f in files[:16])


def test_fixed_threads_above_the_bound(tmp_path):
    # fastio.write-threads=8 with fastio.max-write-threads=2: 8 it is
    c = filewriter.FileWriter(mode=filewriter.MODE_ALWAYS, threads=8, max_threads=2)
    with c:
        for i in range(40):
            c.close(os.open(str(tmp_path / ("f%d" % i)), os.O_WRONLY | os.O_CREAT))
    assert c.stats.threads == 8


def test_pending_closes_are_bounded():
    c = filewriter.FileWriter(
        mode=filewriter.MODE_ALWAYS, threads=1, max_pending=8, max_threads=1
    )
    open_now = []
    lock = threading.Lock()
    peak = [0]

    class Counted(FakeFile):
        def close(self):
            super().close()
            with lock:
                open_now.remove(self)

    with c:
        for i in range(100):
            f = Counted(b"f%d" % i, delay=0.001)
            with lock:
                open_now.append(f)
                peak[0] = max(peak[0], len(open_now))
            c.close(f, f.name)
    # the bound is checked every 8 submissions
    assert peak[0] <= 8 + 8 + 1
    assert not open_now


def test_drain_waits_and_writer_stays_usable():
    c = make("background")
    first = [FakeFile(b"a%d" % i, delay=0.001) for i in range(20)]
    for f in first:
        c.close(f, f.name)
    c.drain()
    assert all(f.closed for f in first)
    second = [FakeFile(b"b%d" % i) for i in range(20)]
    for f in second:
        c.close(f, f.name)
    c.finish()
    assert all(f.closed for f in second)


def test_raw_descriptors(tmp_path):
    paths = [str(tmp_path / ("f%d" % i)) for i in range(20)]
    c = make("background")
    with c:
        for p in paths:
            fd = os.open(p, os.O_WRONLY | os.O_CREAT, 0o644)
            os.write(fd, b"x")
            c.close(fd, p.encode())
    for p in paths:
        with open(p, "rb") as f:
            assert f.read() == b"x"


def test_bad_descriptor_is_reported():
    fd = os.open(os.devnull, os.O_RDONLY)
    os.close(fd)
    c = make("background")
    c.close(fd, b"gone")
    with pytest.raises(error.Abort) as info:
        c.finish()
    assert b"gone" in info.value.message


def test_exception_in_body_is_not_masked():
    c = make("background")
    f = FakeFile(b"x", fail=True)
    with pytest.raises(KeyError):
        with c:
            c.close(f, f.name)
            raise KeyError("body")
    assert c.failure is not None


# a descriptor number no process has open: its close fails with EBADF
_BAD_FD = 1 << 20


@pytest.fixture(params=["pool", "batch-in-c", "os.close"])
def descriptor_closing(request, monkeypatch):
    """Each way descriptors can be closed in the background: the C pool's
    threads, Python threads closing batches in C, or one os.close each."""
    if request.param == "pool":
        if writepool.FdPool is None:
            pytest.skip("_writepool.Pool is not built")
        return request.param
    monkeypatch.setattr(writepool, "FdPool", None)
    if request.param == "batch-in-c":
        if writethreads.close_fds is None:
            pytest.skip("_writepool is not built")
    else:
        monkeypatch.setattr(writethreads, "close_fds", None)
    return request.param


def _descriptors(tmp_path, count, failing):
    """``count`` open descriptors, the one at ``failing`` a bad one."""
    return [
        (
            _BAD_FD
            if i == failing
            else os.open(str(tmp_path / ("f%d" % i)), os.O_CREAT | os.O_WRONLY)
        )
        for i in range(count)
    ]


def _check_closed(fds, given):
    """Every descriptor handed to close() was closed, even if the call
    raised an earlier failure; the others are closed here."""
    for fd in given:
        if fd != _BAD_FD:
            with pytest.raises(OSError):
                os.fstat(fd)
    for fd in fds[len(given) :]:
        os.close(fd)


def _settle(c, timeout=10.0):
    """Wait until the threads closed every handle handed to them (the ones
    batched in the writer are not yet)."""
    deadline = time.monotonic() + timeout
    while c.pending():
        assert time.monotonic() < deadline, "closes still pending"
        time.sleep(0.001)


POSITIONS = ["first", "middle", "last"]


def _failing_index(count, position):
    return {"first": 0, "middle": count // 2, "last": count - 1}[position]


def _close_until_abort(c, fds, failing, settle=False):
    """Hand ``fds`` to ``c`` until a close() (or the final finish()) raises
    the failure of the bad one; return the descriptors handed over.  With
    ``settle``, each is handed over once the threads are done with what
    they were handed: a failure among it is known to the writer then."""
    given = []
    with pytest.raises(error.Abort) as info:
        with c:
            for i, fd in enumerate(fds):
                if settle:
                    _settle(c)
                given.append(fd)
                c.close(fd, b"data/f%d.i" % i)
    assert info.value.message.startswith(b"error closing 'data/f%d.i'" % failing)
    return given


@pytest.mark.parametrize("position", POSITIONS)
def test_failing_descriptor_close_aborts_inline(tmp_path, position):
    # closes inline: the call that closes the bad descriptor raises
    count = 40
    failing = _failing_index(count, position)
    fds = _descriptors(tmp_path, count, failing)
    given = _close_until_abort(make("inline"), fds, failing)
    assert given == fds[: failing + 1]
    _check_closed(fds, given)


@pytest.mark.parametrize("settled", [False, True], ids=["racing", "settled"])
@pytest.mark.parametrize("position", POSITIONS)
def test_failing_descriptor_close_aborts(
    tmp_path, descriptor_closing, position, settled
):
    count = 40
    failing = _failing_index(count, position)
    fds = _descriptors(tmp_path, count, failing)
    given = _close_until_abort(make("background"), fds, failing, settle=settled)
    if settled:
        # the failure surfaces at the first close() after the threads
        # closed the bad descriptor: the pool takes each descriptor at once
        # (the next call raises), Python threads a batch once it is full (up
        # to _BATCH calls later); a bad last descriptor, at finish()
        if descriptor_closing == "pool":
            assert len(given) == min(failing + 2, count)
        else:
            assert failing < len(given) <= min(failing + writethreads._BATCH + 1, count)
        if position != "last":
            # before the last descriptor was given
            assert len(given) < count
    _check_closed(fds, given)


def test_descriptors_close_in_background_batches(tmp_path, descriptor_closing):
    fds = [
        os.open(str(tmp_path / ("f%d" % i)), os.O_CREAT | os.O_WRONLY)
        for i in range(100)
    ]
    c = make("background")
    with c:
        for fd in fds:
            c.close(fd, None)
        c.drain()
        assert c.pending() == 0
    assert c.stats.background == 100
    for fd in fds:
        with pytest.raises(OSError):
            os.fstat(fd)


@pytest.mark.skipif(writepool.FdPool is None, reason="_writepool.Pool is not built")
def test_pool_bounds_pending_and_threads():
    pool = writepool.FdPool(8, 1, 2)
    fds = [os.open(os.devnull, os.O_RDONLY) for __ in range(200)]
    for i, fd in enumerate(fds):
        assert not pool.submit(fd, b"f%d" % i) & 2
    assert pool.add_thread() == 2
    assert pool.add_thread() == 2  # max_threads
    assert pool.drain(5.0)
    assert pool.pending == 0 and pool.submitted == 200
    assert 1 <= pool.peak <= 8
    pool.submit(_BAD_FD, b"bad")
    pool.submit(_BAD_FD, b"bad too")
    pool.finish()
    # the first failure, with its name; the threads are gone
    assert pool.failure() == (b"bad", errno.EBADF, 0)  # step 0: the close
    assert pool.threads == 0
    with pytest.raises(ValueError):
        pool.submit(0, b"after finish")
    for fd in fds:
        with pytest.raises(OSError):
            os.fstat(fd)


# -- interrupts and hung closes ----------------------------------------------


class Hung(Exception):
    """The watchdog's: a wait that should have ended did not."""


@pytest.fixture
def watchdog():
    """``watchdog(seconds)``: raise Hung in the main thread if the test is
    still running then (instead of hanging the suite)."""

    def expire(signum, frame):
        raise Hung("still waiting after the watchdog's time")

    old = signal.signal(signal.SIGALRM, expire)

    def arm(seconds):
        signal.setitimer(signal.ITIMER_REAL, seconds)

    yield arm
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, old)


def interrupt_after(seconds):
    """A Ctrl-C for the main thread in ``seconds``, as Python sees one."""
    t = threading.Timer(seconds, _thread.interrupt_main)
    t.daemon = True
    t.start()
    return t


class HungFile(FakeFile):
    """A close that does not return until ``release`` is set (a hard-mounted
    NFS server that stopped answering), 30 s at most."""

    def __init__(self, name, release):
        super().__init__(name)
        self.release = release

    def close(self):
        self.release.wait(30)
        super().close()


@pytest.fixture
def python_threads(monkeypatch):
    """The Python-thread path (Windows, no compiler, file objects)."""
    monkeypatch.setattr(writepool, "FdPool", None)
    monkeypatch.setattr(writethreads, "close_fds", None)


def test_interrupted_drain_leaves_the_writer_usable(python_threads, watchdog):
    c = make("background")
    first = [FakeFile(b"a%d" % i, delay=0.03) for i in range(40)]
    for f in first:
        c.close(f, f.name)
    interrupt_after(0.1)
    with pytest.raises(KeyboardInterrupt):
        c.drain()
    assert not all(f.closed for f in first), "the drain was not interrupted"
    watchdog(10)
    second = [FakeFile(b"b%d" % i) for i in range(30)]
    for f in second:
        c.close(f, f.name)
    c.drain()
    assert all(f.closed for f in first + second)
    c.finish()
    assert c.pending() == 0


def test_hung_close_abandoned_when_interrupted(python_threads, watchdog):
    release = threading.Event()
    c = make("background", close_timeout=0.5)
    # (last: a Python thread closes a batch in order, the files after a
    # hung one in its batch would wait too)
    files = [FakeFile(b"f%d" % i) for i in range(6)]
    files.append(HungFile(b"data/hung.i", release))
    watchdog(10)
    start = time.monotonic()
    try:
        with pytest.raises(error.Abort) as info:
            with c:
                for f in files:
                    c.close(f, f.name)
                raise KeyboardInterrupt
    finally:
        release.set()
    assert time.monotonic() - start < 5
    assert info.value.message == (
        b"1 file not closed after 0.5 s (filesystem not responding),"
        b" e.g. 'data/hung.i'"
    )
    assert isinstance(info.value.__context__, KeyboardInterrupt)
    assert c.abandoned == 1 and c.failure is not None


def test_interrupted_finish_waits_the_grace_time_only(python_threads, watchdog):
    # no exception: finish waits as long as it takes, until a Ctrl-C
    release = threading.Event()
    c = make("background", close_timeout=0.5)
    for i in range(5):
        c.close(FakeFile(b"f%d" % i), b"f%d" % i)
    c.close(HungFile(b"data/hung.i", release), b"data/hung.i")
    interrupt_after(0.3)
    watchdog(10)
    try:
        with pytest.raises(error.Abort) as info:
            c.finish()
    finally:
        release.set()
    assert b"1 file not closed after 0.5 s" in info.value.message


def test_interrupted_finish_is_still_an_interrupt(python_threads, watchdog):
    # closes that end within the grace time (5 s): the interrupt goes on
    c = make("background")
    files = [FakeFile(b"f%d" % i, delay=0.05) for i in range(12)]
    for f in files:
        c.close(f, f.name)
    interrupt_after(0.05)
    watchdog(10)
    with pytest.raises(KeyboardInterrupt):
        c.finish()
    assert all(f.closed for f in files)
    # finished: a second call (the caller's except clause) returns at once
    c.finish(raise_errors=False)


def test_other_error_keeps_its_message(python_threads, watchdog):
    release = threading.Event()

    class UI:
        def __init__(self):
            self.warnings = []

        def warn(self, msg):
            self.warnings.append(msg)

        def debug(self, msg):
            pass

        def makeprogress(self, *args, **kwargs):
            return Progress()

    class Progress:
        def update(self, pos):
            pass

        def complete(self):
            pass

    ui = UI()
    c = make("background", ui=ui, close_timeout=0.3)
    watchdog(10)
    try:
        with pytest.raises(KeyError):
            with c:
                c.close(HungFile(b"data/hung.i", release), b"data/hung.i")
                raise KeyError("the first failure")
    finally:
        release.set()
    assert ui.warnings == [
        b"fastio: 1 file not closed after 0.3 s (filesystem not responding),"
        b" e.g. 'data/hung.i'\n"
    ]


def test_signal_while_a_descriptor_is_in_hand_waits_for_hand_over(tmp_path):
    # what the writers do around open ... FileWriter.close()
    c = make("background")
    hold = signals.hold
    fd = None
    with pytest.raises(KeyboardInterrupt):
        hold.depth += 1
        try:
            _thread.interrupt_main()
            # the handler ran here (a bytecode after the call) and kept it
            fd = os.open(str(tmp_path / "f"), os.O_CREAT | os.O_WRONLY)
            c.close(fd, b"f")
        finally:
            hold.depth -= 1
            if hold.pending:
                hold.deliver()
    assert fd is not None
    c.finish()
    with pytest.raises(OSError):
        os.fstat(fd)


def test_second_signal_in_hand_is_raised_at_once():
    c = make("inline")
    hold = signals.hold
    reached = []
    with pytest.raises(KeyboardInterrupt):
        hold.depth += 1
        try:
            _thread.interrupt_main()
            reached.append(1)
            _thread.interrupt_main()
            reached.append(2)
        finally:
            hold.depth -= 1
            if hold.pending:
                hold.deliver()
    assert reached == [1]
    c.finish()
