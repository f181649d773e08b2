"""Unit tests of the file writer (``FileWriter.write_new``): directories
and whole new files made on the C pool's threads, on Python threads (the
fallback, forced here) or here; every failure of a mkdir, a create, a write
or a close kept with its file name; content and descriptors bounded."""

import os
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, SHIMS, build_preload  # noqa: E402

sys.path.insert(0, ROOT)

from mercurial import error  # noqa: E402

from hgext3rd.fastio.writer import filewriter, writepool

# how files can be written: the C pool's threads, Python threads, inline
KINDS = ["pool", "python-threads", "inline"]


def make_writer(kind, monkeypatch=None, **options):
    if kind == "pool":
        if writepool.FdPool is None:
            pytest.skip("_writepool.Pool is not built")
        return filewriter.FileWriter(mode=filewriter.MODE_ALWAYS, **options)
    if kind == "python-threads":
        if monkeypatch is not None:
            monkeypatch.setattr(writepool, "FdPool", None)
        return filewriter.FileWriter(mode=filewriter.MODE_ALWAYS, **options)
    return filewriter.FileWriter(mode=filewriter.MODE_NEVER, **options)


def tree(tmp_path, count, dirs=5):
    """``(dirs, files)`` for write_new: ``count`` files spread over
    ``dirs`` new directories (two levels)."""
    base = str(tmp_path).encode()
    top = os.path.join(base, b"top")
    new_dirs = [(top, -1)]
    new_dirs += [(os.path.join(top, b"d%d" % d), -1) for d in range(dirs)]
    files = []
    for i in range(count):
        directory = os.path.join(top, b"d%d" % (i % dirs))
        path = os.path.join(directory, b"f%04d" % i)
        files.append((path, b"content %d\n" % i * (1 + i % 5), -1, path, directory))
    return new_dirs, files


@pytest.mark.parametrize("kind", KINDS)
def test_dirs_and_files_written(tmp_path, monkeypatch, kind):
    dirs, files = tree(tmp_path, 300)
    writer = make_writer(kind, monkeypatch)
    with writer:
        # in batches, as a stream comes
        writer.write_new(dirs, files[:100])
        writer.write_new([], files[100:])
    for path, data, __, __, __ in files:
        with open(path, "rb") as fh:
            assert fh.read() == data
    assert writer.stats.closes == 300
    if kind == "pool":
        assert writer.stats.background == 300
    elif kind == "python-threads":
        # (the applying thread writes some itself when the threads lag)
        assert writer.stats.background > 0


# the thread bounds a setting may give (issue 39): always mode starts 4
# threads, auto mode 2 for new files (C pool only), a fixed count its own;
# the pool refused to start above its bound ("bad pool size")
ALWAYS, AUTO = filewriter.MODE_ALWAYS, filewriter.MODE_AUTO
BOUNDS = {
    "always, max-write-threads=1": (ALWAYS, dict(max_threads=1)),
    "always, max-pending-files=1": (ALWAYS, dict(max_pending=1)),
    "always, max-write-threads=3": (ALWAYS, dict(max_threads=3)),
    "always, write-threads=9, max-pending-files=2": (
        ALWAYS,
        dict(threads=9, max_pending=2),
    ),
    "auto, write-threads=1": (AUTO, dict(threads=1)),
    "auto, max-write-threads=1": (AUTO, dict(max_threads=1)),
    "auto, max-pending-files=1": (AUTO, dict(max_pending=1)),
}


@pytest.mark.parametrize("bounds", sorted(BOUNDS))
@pytest.mark.parametrize("kind", ["pool", "python-threads"])
def test_threads_start_within_their_bound(tmp_path, monkeypatch, kind, bounds):
    mode, options = BOUNDS[bounds]
    if mode == AUTO and kind != "pool":
        pytest.skip("auto mode makes new files on threads with the C pool only")
    if kind == "pool" and writepool.FdPool is None:
        pytest.skip("_writepool.Pool is not built")
    if kind == "python-threads":
        monkeypatch.setattr(writepool, "FdPool", None)
    # (and on a second core)
    monkeypatch.setattr(filewriter, "_SECOND_CORE", True)
    writer = filewriter.FileWriter(mode=mode, **options)
    dirs, files = tree(tmp_path, 40)
    with writer:
        writer.write_new(dirs, files)
    for path, data, __, __, __ in files:
        with open(path, "rb") as fh:
            assert fh.read() == data
    bound = min(
        options.get("threads") or options.get("max_threads", 128),
        options.get("max_pending", 256),
    )
    assert 1 <= writer.stats.threads <= bound


@pytest.mark.parametrize("kind", KINDS)
def test_modes_given(tmp_path, monkeypatch, kind):
    old = os.umask(0o022)
    try:
        dirs, files = tree(tmp_path, 20, dirs=2)
        dirs = [(path, 0o2775) for path, __ in dirs]
        files = [(p, d, 0o664, n, dd) for p, d, __, n, dd in files]
        with make_writer(kind, monkeypatch) as writer:
            writer.write_new(dirs, files)
    finally:
        os.umask(old)
    for path, __ in dirs:
        assert os.stat(path).st_mode & 0o7777 == 0o2775
    for path, *__ in files:
        assert os.stat(path).st_mode & 0o777 == 0o664


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("position", ["first", "middle", "last"])
def test_failing_create_aborts_with_its_name(tmp_path, monkeypatch, kind, position):
    dirs, files = tree(tmp_path, 60)
    failing = {"first": 0, "middle": 30, "last": 59}[position]
    writer = make_writer(kind, monkeypatch)
    writer.write_new(dirs, [])
    writer.drain()
    # already there: O_EXCL refuses it
    open(files[failing][0], "wb").close()
    with pytest.raises(error.Abort) as info:
        with writer:
            writer.write_new([], files)
    assert info.value.message == b"error writing '%s': File exists" % files[failing][0]
    assert writer.pending() == 0


@pytest.mark.parametrize("kind", KINDS)
def test_failing_mkdir_aborts_with_its_name(tmp_path, monkeypatch, kind):
    dirs, files = tree(tmp_path, 30)
    # a file where a directory is to be made
    os.makedirs(dirs[0][0])
    open(dirs[2][0], "wb").close()
    with pytest.raises(error.Abort) as info:
        with make_writer(kind, monkeypatch) as writer:
            writer.write_new(dirs[1:], files)
    assert info.value.message.startswith(b"error creating directory '%s'" % dirs[2][0])


@pytest.fixture(scope="module")
def faultshim(tmp_path_factory):
    so = tmp_path_factory.mktemp("shim") / "fault.so"
    return build_preload(os.path.join(SHIMS, "faultshim.c"), so)


_UNDER_SHIM = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, %(root)r)
    from mercurial import error
    from hgext3rd.fastio.writer import filewriter, writepool
    kind, base = sys.argv[1], os.fsencode(sys.argv[2])
    if kind == "python-threads":
        writepool.FdPool = None
    mode = filewriter.MODE_NEVER if kind == "inline" else filewriter.MODE_ALWAYS
    writer = filewriter.FileWriter(mode=mode)
    dirs = [(os.path.join(base, b"d"), -1)]
    files = [
        (os.path.join(base, b"d", b"f%%02d" %% i), b"x" * 100, -1, b"f%%02d" %% i,
         dirs[0][0])
        for i in range(40)
    ]
    try:
        with writer:
            writer.write_new(dirs, files)
    except error.Abort as exc:
        print(exc.message.decode())
    fds = len(os.listdir("/proc/self/fd"))
    print("descriptors left:", fds <= 5)
    """)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("step", ["WRITE", "CLOSE"])
@pytest.mark.parametrize("position", ["first", "middle", "last"])
def test_failing_write_or_close_aborts(tmp_path, faultshim, kind, step, position):
    if kind == "pool" and writepool.FdPool is None:
        pytest.skip("_writepool.Pool is not built")
    name = {"first": "f00", "middle": "f20", "last": "f39"}[position]
    env = dict(os.environ, LD_PRELOAD=faultshim)
    env["FASTIO_FAIL_" + step] = "/d/" + name
    script = _UNDER_SHIM % {"root": ROOT}
    out = subprocess.run(
        [sys.executable, "-c", script, kind, str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    verb = "writing" if step == "WRITE" else "closing"
    assert out.stdout.splitlines() == [
        "error %s '%s': No space left on device" % (verb, name),
        "descriptors left: True",
    ]


@pytest.mark.skipif(writepool.FdPool is None, reason="_writepool.Pool is not built")
def test_content_in_flight_is_bounded(tmp_path):
    # one thread, files of 100 KB, a budget of 1 MB: the producer waits
    pool = writepool.FdPool(64, 1, 1, budget=1 << 20, ring=4096)
    data = b"x" * (100 << 10)
    tasks = [
        (os.path.join(str(tmp_path).encode(), b"f%d" % i), data, -1, b"f%d" % i, -1)
        for i in range(200)
    ]
    flags = pool.submit_files(tasks)
    assert pool.finish(30)
    assert flags & 1  # it had to wait for room
    assert (1 << 20) - len(data) < pool.peak_bytes <= 1 << 20
    assert pool.failure() is None
    assert len(os.listdir(str(tmp_path))) == 200


@pytest.mark.skipif(writepool.FdPool is None, reason="_writepool.Pool is not built")
def test_threads_never_outnumber_the_descriptor_bound():
    writer = filewriter.FileWriter(
        mode=filewriter.MODE_ALWAYS, max_threads=64, max_pending=4, threads=0
    )
    assert writer._max_threads == 4


@pytest.mark.skipif(writepool.FdPool is None, reason="_writepool.Pool is not built")
@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no tmpfs at /dev/shm")
def test_pool_grows_only_while_its_threads_wait(faultshim):
    # closes that sleep 20 ms (a slow filesystem) make the pool grow from
    # 2 threads; fast ones (tmpfs) leave it at 2, or a step above when the
    # machine is busy (a thread descheduled mid-task looks like a wait)
    import pathlib
    import shutil
    import tempfile

    tmp_path = pathlib.Path(tempfile.mkdtemp(prefix="fastio-grow-", dir="/dev/shm"))
    script = textwrap.dedent("""
        import os, sys
        sys.path.insert(0, %r)
        from hgext3rd.fastio.writer import _writepool
        base = os.fsencode(sys.argv[1])
        pool = _writepool.Pool(64, 2, 64, ring=4096)
        pool.submit_files([
            (os.path.join(base, b"f%%d" %% i), b"x", -1, b"f", -1)
            for i in range(300)
        ])
        pool.finish()
        print(pool.peak_threads)
        """ % ROOT)
    os.makedirs(tmp_path / "a", exist_ok=True)
    os.makedirs(tmp_path / "b", exist_ok=True)
    fast = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "a")],
        capture_output=True,
        text=True,
        check=True,
    )
    env = dict(
        os.environ,
        LD_PRELOAD=faultshim,
        FASTIO_HANG_CLOSE="/b/f",
        FASTIO_HANG_S="0.02",
    )
    slow = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "b")],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    shutil.rmtree(tmp_path)
    assert int(fast.stdout) <= 4
    assert int(slow.stdout) > 8


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="no /proc/self/fd")
def test_a_signal_as_the_applying_thread_writes_is_an_interrupt(tmp_path, monkeypatch):
    # the Python threads are behind (one thread, two files pending at most,
    # each thread's write slow): the applying thread writes new files
    # itself; a Ctrl-C then is raised as the interrupt it is, once the file
    # in hand is written and closed, not turned into a write error
    import _thread
    import threading
    import time

    writer = make_writer(
        "python-threads", monkeypatch, threads=1, max_threads=1, max_pending=2
    )
    main = threading.main_thread()
    real_write = os.write
    in_hand = []

    def write(fd, data):
        if threading.current_thread() is not main:
            time.sleep(0.02)
        elif not in_hand:
            in_hand.append((fd, os.readlink("/proc/self/fd/%d" % fd)))
            _thread.interrupt_main()
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write)
    dirs, files = tree(tmp_path, 40)
    with pytest.raises(KeyboardInterrupt):
        with writer:
            writer.write_new(dirs, files)
    [(fd, path)] = in_hand
    with pytest.raises(OSError):
        os.fstat(fd)
    content = {os.fsdecode(p): data for p, data, __, __, __ in files}
    with open(path, "rb") as f:
        assert f.read() == content[path]


class _SignalAsTaken(list):
    """A batch whose first task taken off it brings a Ctrl-C with it."""

    def pop(self, *args):
        import _thread

        task = super().pop(*args)
        _thread.interrupt_main()
        return task


def test_a_signal_as_a_task_is_taken_off_the_batch_loses_none(tmp_path, monkeypatch):
    # at the bound (one task pending), the applying thread takes the task
    # off the batch to do it itself: a Ctrl-C then waits until it is done,
    # so that no task is counted that no one does (finish would wait for it
    # until the close timeout and abort: "1 file not closed")
    writer = make_writer(
        "python-threads",
        monkeypatch,
        threads=1,
        max_threads=1,
        max_pending=1,
        close_timeout=1.0,
    )
    writer._threads._batch = _SignalAsTaken()
    dirs, files = tree(tmp_path, 1)
    with pytest.raises(KeyboardInterrupt):
        with writer:
            writer.write_new(dirs, files)
    assert writer.abandoned == 0
    [(path, data, __, __, __)] = files
    with open(path, "rb") as f:
        assert f.read() == data
