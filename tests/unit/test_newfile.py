"""writer.newfile: the one Python creator of files.  A signal that comes
between the open and the hand-over waits for the hand-over, and no
descriptor is left open whatever fails."""

import _thread
import os
import stat

import pytest

from hgext3rd.fastio.writer import newfile, signals

pytestmark = pytest.mark.skipif(
    not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc"
)


def open_fds():
    return set(os.listdir("/proc/self/fd"))


@pytest.fixture
def hold():
    """The signal wrappers in place, as a file writer installs them."""
    hold = signals.hold
    assert hold.install()
    try:
        yield hold
    finally:
        del hold.pending[:]
        hold.uninstall()
    assert hold.depth == 0


@pytest.fixture
def interrupt_after_open(monkeypatch):
    """os.open sends SIGINT as it returns (the handler runs at the next
    bytecode): the worst moment, a descriptor no one else knows of."""
    real_open = os.open

    def open_then_interrupt(path, flags, mode=0o777):
        fd = real_open(path, flags, mode)
        _thread.interrupt_main()
        return fd

    monkeypatch.setattr(os, "open", open_then_interrupt)


def closing(events):
    def hand_over(fd, arg):
        # a few bytecodes: an unheld handler would have raised by now
        events.append(("hand_over", arg))
        events.append(("written", os.write(fd, b"data")))
        os.close(fd)
        return "result"

    return hand_over


def test_a_signal_during_the_create_waits_for_the_hand_over(
    tmp_path, hold, interrupt_after_open
):
    before = open_fds()
    events = []
    with pytest.raises(KeyboardInterrupt):
        newfile.create(
            str(tmp_path / "f"), newfile.FLAGS, -1, closing(events), None, (1, 2)
        )
    assert events == [("hand_over", (1, 2)), ("written", 4)]
    assert (tmp_path / "f").read_bytes() == b"data"
    assert open_fds() == before
    assert not hold.is_pending()


def test_a_hand_over_that_raises_owns_the_descriptor(tmp_path, hold):
    before = open_fds()
    given = []

    def failing(fd, arg):
        given.append(fd)
        os.close(fd)
        raise ValueError("hand-over failed")

    with pytest.raises(ValueError):
        newfile.create(str(tmp_path / "f"), newfile.FLAGS, -1, failing, None, None)
    assert len(given) == 1
    assert open_fds() == before


def test_a_failed_open_goes_to_failed(tmp_path, hold):
    (tmp_path / "f").write_bytes(b"there")
    seen = []

    def failed(exc, arg):
        seen.append((exc.__class__, arg))
        return RuntimeError("named")

    def never(fd, arg):
        pytest.fail("handed over a file that was there")

    with pytest.raises(RuntimeError, match="named"):
        newfile.create(str(tmp_path / "f"), newfile.FLAGS, -1, never, failed, "x")
    assert seen == [(FileExistsError, "x")]
    # without failed: as it is (the revlog opener lets stock do it then)
    with pytest.raises(FileExistsError):
        newfile.create(str(tmp_path / "f"), newfile.FLAGS, -1, never, None, None)
    assert (tmp_path / "f").read_bytes() == b"there"


def test_a_failed_chmod_closes_the_descriptor(tmp_path, hold, monkeypatch):
    before = open_fds()

    def fchmod(fd, mode):
        raise PermissionError(1, "refused")

    monkeypatch.setattr(os, "fchmod", fchmod)
    with pytest.raises(PermissionError):
        newfile.create(
            str(tmp_path / "f"), newfile.FLAGS, 0o640, closing([]), None, None
        )
    assert open_fds() == before


def close(fd, arg):
    os.close(fd)


def test_the_vfs_mode_is_given(tmp_path):
    old = os.umask(0o077)
    try:
        newfile.create(str(tmp_path / "f"), newfile.FLAGS, 0o664, close, None, None)
        newfile.create(str(tmp_path / "g"), newfile.FLAGS, -1, close, None, None)
        os.close(newfile.create_on_thread(str(tmp_path / "h"), 0o640))
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "f").st_mode) == 0o664
    assert stat.S_IMODE(os.stat(tmp_path / "g").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "h").st_mode) == 0o640


def test_the_flags():
    for flags in (newfile.FLAGS, newfile.FLAGS_READ_WRITE):
        assert flags & os.O_CREAT and flags & os.O_EXCL
        assert flags & getattr(os, "O_CLOEXEC", 0) == getattr(os, "O_CLOEXEC", 0)
    assert newfile.FLAGS & os.O_ACCMODE == os.O_WRONLY
    assert newfile.FLAGS_READ_WRITE & os.O_ACCMODE == os.O_RDWR


def test_unheld_raises_a_signal_kept_and_holds_again(
    tmp_path, hold, interrupt_after_open
):
    # a large file's copy waits for the source unheld: the signal kept
    # since the open is raised there, and its hand-over closes the file
    before = open_fds()
    events = []

    def copy_large(fd, arg):
        try:
            newfile.unheld(events.append, "copied")
        except BaseException:
            events.append("closed")
            os.close(fd)
            raise
        # (what a signal left waiting would be raised after)
        events.append("handed over")
        os.close(fd)

    with pytest.raises(KeyboardInterrupt):
        newfile.create(str(tmp_path / "f"), newfile.FLAGS, -1, copy_large, None, None)
    assert events == ["closed"]
    assert open_fds() == before


def test_create_on_thread_refuses_an_existing_file(tmp_path):
    (tmp_path / "f").write_bytes(b"there")
    before = open_fds()
    with pytest.raises(FileExistsError):
        newfile.create_on_thread(str(tmp_path / "f"), 0o640)
    assert open_fds() == before
