"""One revlog compressor per engine while a changegroup is applied.

Every revlog makes its own compressor object the first time it compresses or
decompresses; for zstd that allocates a compression and a decompression
context.  A 10k-file unbundle builds 10k of them: 10% of its time in a
profile.  The revlog compressors of Mercurial's own engines keep no state
between calls, so while :func:`shared` is active (on the thread that
applies), revlogs asking for the same engine and options get the same one.
"""

import contextlib
import threading

from mercurial import extensions, util

# engines whose revlog compressors are known to be stateless between calls
_SHAREABLE = (b"zstd", b"zlib", b"none")

_active = None
_MAIN = threading.main_thread()


def setup():
    """Wrap the shareable engines (at extsetup)."""
    for name in _SHAREABLE:
        try:
            engine = util.compengines[name]
        except KeyError:
            continue
        if engine.available():
            extensions.wrapfunction(engine, "revlogcompressor", _sharing(name))


def _sharing(name):
    def revlogcompressor(orig, opts=None):
        cache = _active
        if cache is None or threading.current_thread() is not _MAIN:
            return orig(opts)
        key = (name, tuple(sorted(opts.items())) if opts else ())
        compressor = cache.get(key)
        if compressor is None:
            compressor = cache[key] = orig(opts)
        return compressor

    return revlogcompressor


@contextlib.contextmanager
def shared():
    global _active
    if _active is not None:
        yield
        return
    _active = {}
    try:
        yield
    finally:
        _active = None
