"""Applying what a peer or a bundle sends: a stream (``streamclone``, its
names checked ahead by ``prescan`` over ``_streamscan.c``, its files written
by ``storewriter``) or a changegroup (``changegroup``, its revlogs opened by
``revlogwriter``, compressors shared by ``compressors``, revisions
compressed ahead by ``precompress``); ``buffers`` and ``prefetch`` read
the incoming bytes in large blocks, ahead on a thread."""
