"""What a changegroup's revlog opener leaves once a failed apply is
detached: nothing that writes after the transaction's rollback; and no
signal lost in its finalizer.

A signal handler may raise as a handle's ``close`` starts (Python code,
between any two bytecodes), leaving the handle open in a frame of the
traceback until after the rollback.  These tests leave handles open the
same way, detach the opener as a failed apply does, then do what the
rollback does and drop the handles.
"""

import gc
import os
import signal
import sys
import threading
import types
import weakref

import pytest

from hgext3rd.fastio.writer import filewriter, signals
from hgext3rd.fastio.apply import revlogwriter
from mercurial import vfs as vfsmod


@pytest.fixture
def store(tmp_path):
    vfs = vfsmod.vfs(bytes(tmp_path))
    # (stock decides this at its first write of an existing file)
    vfs._trustnlink = True
    return vfs


def opener_for(vfs, mode):
    writer = filewriter.FileWriter(mode=mode)
    return revlogwriter.RevlogOpener(vfs, writer), writer


@pytest.mark.parametrize("mode", [filewriter.MODE_NEVER, filewriter.MODE_ALWAYS])
def test_an_append_left_open_is_flushed_before_the_rollback(store, mode):
    path = store.join(b"data/f.i")
    store.write(b"data/f.i", b"old")
    opener, writer = opener_for(store, mode)
    fh = opener.open(vfsmod.vfs.__call__, b"data/f.i", b"r+b", {})
    assert isinstance(fh, revlogwriter._HandOffFile)
    fh.seek(0, os.SEEK_END)
    fh.write(b"appended")
    # the signal: fh.close() never ran
    opener.detach(complete=False)
    writer.finish(raise_errors=False)
    assert fh.closed
    with open(path, "rb") as f:
        assert f.read() == b"oldappended"
    # the rollback truncates the file; then the traceback goes
    os.truncate(path, 3)
    del fh
    gc.collect()
    with open(path, "rb") as f:
        assert f.read() == b"old"


def test_a_new_file_closed_after_a_failed_apply_is_not_made(store):
    store.makedirs(b"data")
    opener, writer = opener_for(store, filewriter.MODE_ALWAYS)
    orig = vfsmod.vfs.__call__
    with pytest.raises(FileNotFoundError):
        opener.open(orig, b"data/new.i", b"rb", {})
    fh = opener.open(orig, b"data/new.i", b"w+b", {})
    assert isinstance(fh, revlogwriter._NewFile)
    fh.write(b"content")
    # the signal: fh.close() never ran
    opener.detach(complete=False)
    writer.finish(raise_errors=False)
    fh.close()
    del fh
    gc.collect()
    assert not store.exists(b"data/new.i")


def test_a_successful_apply_closes_what_is_left_open(store):
    store.write(b"data/f.i", b"old")
    opener, writer = opener_for(store, filewriter.MODE_ALWAYS)
    fh = opener.open(vfsmod.vfs.__call__, b"data/f.i", b"r+b", {})
    fh.seek(0, os.SEEK_END)
    fh.write(b"new")
    opener.detach(complete=True)
    writer.finish()
    assert fh.closed
    assert store.read(b"data/f.i") == b"oldnew"


def test_a_signal_as_a_finalizer_starts_waits():
    # a handler that raised in the finalizer of a dropped new file would
    # be ignored by Python, the signal lost: it is kept for the next
    # window's end instead
    hold = signals.hold
    assert hold.install()
    try:
        as_finalizer_starts = types.SimpleNamespace(
            f_code=revlogwriter._NewFile.__del__.__code__
        )
        try:
            hold._handler(signal.SIGINT, as_finalizer_starts)
        except KeyboardInterrupt:
            pytest.fail("raised where Python would ignore it")
        assert hold.is_pending()
        with pytest.raises(KeyboardInterrupt):
            hold.deliver()
        assert not hold.is_pending()
        # anywhere else, at once
        with pytest.raises(KeyboardInterrupt):
            hold._handler(signal.SIGINT, sys._getframe())
    finally:
        del hold.pending[:]
        hold.uninstall()


def test_a_new_file_whose_init_failed_is_released_silently(monkeypatch):
    # its finalizer finds no file: nothing printed as "Exception ignored"
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    half_made = object.__new__(revlogwriter._NewFile)
    del half_made
    gc.collect()
    assert unraisable == []
    assert signals.hold.depth == 0


def test_a_signal_as_a_dropped_handle_closes_waits(store, monkeypatch):
    # a revlog that splits drops a write handle unclosed: its finalizer
    # closes it (flushed, handed over), and a signal handled as that close
    # starts is kept, not raised where Python would ignore it
    hold = signals.hold
    assert hold.install()
    opener, writer = opener_for(store, filewriter.MODE_NEVER)
    close = revlogwriter._HandOffFile.close

    def signalled_close(fh):
        signal.raise_signal(signal.SIGINT)
        return close(fh)

    try:
        store.write(b"data/f.i", b"old")
        fh = opener.open(vfsmod.vfs.__call__, b"data/f.i", b"r+b", {})
        assert isinstance(fh, revlogwriter._HandOffFile)
        fh.seek(0, os.SEEK_END)
        fh.write(b"new")
        monkeypatch.setattr(revlogwriter._HandOffFile, "close", signalled_close)
        del fh
        gc.collect()
        monkeypatch.undo()
        assert hold.is_pending()
        with pytest.raises(KeyboardInterrupt):
            hold.deliver()
        opener.detach()
        writer.finish()
        assert store.read(b"data/f.i") == b"oldnew"
    finally:
        del hold.pending[:]
        hold.uninstall()


def test_a_signal_as_a_freed_thread_leaves_threading_waits():
    # threading keeps every thread in a WeakSet, whose weak reference
    # callback runs wherever a writer's thread is freed: a signal handled
    # as it starts is kept as in the extension's own finalizers
    hold = signals.hold
    assert hold.install()
    try:
        members = weakref.WeakSet()
        member = threading.Thread(target=None)
        members.add(member)
        (ref,) = members.data
        as_callback_starts = types.SimpleNamespace(f_code=ref.__callback__.__code__)
        try:
            hold._handler(signal.SIGTERM, as_callback_starts)
        except Exception:
            pytest.fail("raised where Python would ignore it")
        assert hold.is_pending()
    finally:
        del hold.pending[:]
        hold.uninstall()
