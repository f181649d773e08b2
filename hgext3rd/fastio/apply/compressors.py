"""One revlog compressor per engine while a changegroup is applied or a
checkout reads the files it writes, and the results of compressing ahead
(``precompress``) handed to them.

Every revlog makes its own compressor object the first time it compresses or
decompresses; for zstd that allocates a compression and a decompression
context.  A 10k-file unbundle builds 10k of them: 10% of its time in a
profile; a 10k-file checkout reads 10k filelogs, and building their
decompressors is the first line of its profile.  The revlog compressors of
Mercurial's own engines keep no state between calls, so while
:func:`shared` is active (on the thread that applies: each of a server's
request threads applying a push has its own), revlogs asking for the same
engine and options get the same one.
"""

import contextlib
import threading

from mercurial import util

from .. import wiring

# engines whose revlog compressors are known to be stateless between calls
_SHAREABLE = (b"zstd", b"zlib", b"none")


class _Sharing(threading.local):
    # {engine key: compressor} while this thread shares them, else None
    compressors = None
    # the precompress.CompressAhead of the changegroup this thread applies
    ahead = None


_sharing_here = _Sharing()
# compressor classes whose compress looks for results made ahead (the
# engines are wrapped, and classes claimed, through wiring, which does it
# once however many request threads of a server ask)
_claiming = set()


def setup():
    """Wrap the shareable engines (at the first apply or checkout that
    shares them)."""
    wiring.wire("shared compressors")


def engine_targets():
    """``(engine, "revlogcompressor", wrapper)`` of each shareable engine
    available (``wiring``)."""
    targets = []
    for name in _SHAREABLE:
        try:
            engine = util.compengines[name]
        except KeyError:
            continue
        if engine.available():
            targets.append((engine, "revlogcompressor", _sharing(name)))
    return targets


def _sharing(name):
    def revlogcompressor(orig, opts=None):
        key = engine_key(name, opts)
        cache = _sharing_here.compressors
        if cache is None:
            return _tagged(orig(opts), key)
        compressor = cache.get(key)
        if compressor is None:
            compressor = cache[key] = _tagged(orig(opts), key)
        return compressor

    return revlogcompressor


def engine_key(name, opts):
    """What tells one engine's compressors apart: its name and options."""
    return (name, tuple(sorted(opts.items())) if opts else ())


def _tagged(compressor, key):
    # (the key says whose results made ahead this compressor may take)
    compressor._fastio_key = key
    cls = type(compressor)
    if cls not in _claiming:
        # (wired once: wire_found does nothing for a class it wrapped)
        wiring.wire_found("shared compressors", cls, "compress", _compress)
        _claiming.add(cls)
    return compressor


def _compress(orig, self, data):
    ahead = _sharing_here.ahead
    if ahead is not None and getattr(self, "_fastio_key", None) == ahead.key:
        found = ahead.take(data)
        if found is not ahead.MISS:
            return found
    return orig(self, data)


def private(name, opts):
    """A compressor of engine ``name`` of its own (for another thread),
    never shared and never taking results made ahead."""
    here = _sharing_here
    shared, here.compressors = here.compressors, None
    try:
        compressor = util.compengines[name].revlogcompressor(opts)
    finally:
        here.compressors = shared
    compressor.__dict__.pop("_fastio_key", None)
    return compressor


@contextlib.contextmanager
def taking(ahead):
    """While active, the applying thread's compressors of ``ahead.key``
    take what ``ahead`` compressed before compressing."""
    here = _sharing_here
    here.ahead = ahead
    try:
        yield
    finally:
        here.ahead = None


def stop_taking():
    """This thread's compressors take nothing made ahead any more (a forked
    worker: the thread making them stayed in the parent)."""
    _sharing_here.ahead = None


@contextlib.contextmanager
def shared():
    here = _sharing_here
    if here.compressors is not None:
        yield
        return
    here.compressors = {}
    try:
        yield
    finally:
        here.compressors = None
