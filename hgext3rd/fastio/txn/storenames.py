"""The store's vfs as the extension writes through it: the raw vfs
beneath, and how store names are encoded on the way."""


def encoder(vfs):
    """``(encode, rawvfs)`` such that ``vfs.join(name)`` is
    ``rawvfs.join(encode(name))``: the store's own encoding (identity for a
    plain vfs).

    Each kind of store wraps its raw vfs in its own way: the fncache store
    in a vfs with an ``encode`` attribute, the other stores (no fncache, the
    file index of 7.2, no store at all) in a ``filtervfs``; any other proxy
    is asked for each name through its ``join``.
    """
    from mercurial import error, vfs as vfsmod

    from .. import compat

    inner = getattr(vfs, "vfs", None)
    if inner is None:
        return (lambda name: name), vfs
    encode = getattr(vfs, "encode", None)
    if encode is None and isinstance(vfs, vfsmod.filtervfs):
        encode = compat.filtervfs_filter(vfs)
    if encode is not None:
        return encode, inner
    prefix = inner.join(b"x")[:-1]
    start = len(prefix)
    join = vfs.join

    def encode_by_join(name):
        path = join(name)
        if not path.startswith(prefix):
            raise error.ProgrammingError("fastio: %r is not inside its store" % path)
        return path[start:]

    return encode_by_join, inner
