"""Reading a stream ahead, on a thread of its own: network receive
overlaps with writing files (apart from ``buffers`` so that only the
threaded stream consumer loads ``queue``)."""

import queue
import threading

_EMPTY = b""


class PrefetchReader:
    """Read the source in a background thread, a bounded number of blocks
    ahead, so network receive overlaps with writing files.

    Used when ``worker.parallel-stream-bundle-processing`` asks for a
    threaded consumer.  Errors of the reading thread surface in ``read``.
    """

    def __init__(self, fp, block=1 << 20, max_blocks=32, on_block=None, first=_EMPTY):
        self._fp = fp
        self._block = block
        # called on the reading thread with each block before it is queued
        self._on_block = on_block
        self._queue = queue.Queue(maxsize=max(2, max_blocks))
        self._error = None
        self._stop = False
        # (``first``: what the caller read before the thread started)
        self._pending = first
        self._eof = False
        self._thread = threading.Thread(
            target=self._run, name="fastio-prefetch", daemon=True
        )
        self._thread.start()

    def _run(self):
        q = self._queue
        try:
            on_block = self._on_block
            while not self._stop:
                data = self._fp.read(self._block)
                if on_block is not None:
                    on_block(data)
                q.put(data)
                if not data:
                    return
        except BaseException as exc:
            self._error = exc
            q.put(_EMPTY)

    def read(self, n):
        chunks = []
        have = 0
        if self._pending:
            chunks.append(self._pending)
            have = len(self._pending)
            self._pending = _EMPTY
        while have < n and not self._eof:
            data = self._queue.get()
            if not data:
                self._eof = True
                if self._error is not None:
                    raise self._error
                break
            chunks.append(data)
            have += len(data)
        data = _EMPTY.join(chunks)
        if len(data) > n:
            self._pending = data[n:]
            data = data[:n]
        return data

    def close(self):
        """Stop the reading thread (it may be blocked on a full queue)."""
        self._stop = True
        while self._thread.is_alive():
            try:
                self._queue.get(timeout=0.05)
            except queue.Empty:
                pass
        self._thread.join()
