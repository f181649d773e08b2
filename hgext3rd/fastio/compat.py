"""Differences between the supported Mercurial releases, in one place.

Everything else in the extension calls these helpers instead of testing
versions or attributes itself.
"""

from mercurial import store, util


def path_auditor(vfs):
    """``audit(path)``: Mercurial's own checks (``checkosfilename`` and the
    vfs' path auditor) for a path relative to ``vfs`` about to be written."""
    auditpath = vfs._auditpath

    def audit(path):
        auditpath(path, b"wb")

    return audit


def file_registrar(vfs):
    """``register(name)``: what the store does for a file written into it
    (its fncache entry; ``register_file`` exists in every supported
    release, and its rule changed in 7.2, so Mercurial's own is called)."""
    return vfs.register_file


def fileindex(repo):
    """The store's file index (newer store format), or None."""
    return getattr(repo.store, "fileindex", None)


def fileindex_add(index, name, tr):
    radix = store.parse_filelog_radix(name)
    if radix is not None:
        index.add(radix, tr)


def encoder(vfs):
    """``(encode, rawvfs)`` such that ``vfs.join(name)`` is
    ``rawvfs.join(encode(name))``: the store's own encoding (identity for a
    plain vfs)."""
    encode = getattr(vfs, "encode", None)
    inner = getattr(vfs, "vfs", None)
    if encode is None or inner is None:
        return (lambda name: name), vfs
    return encode, inner


def journal_new_files(tr, names):
    """Journal ``names`` as files created by ``tr`` (what ``tr.add(name, 0)``
    does for each), with one write of the journal instead of one per file.

    Falls back to ``tr.add`` when the transaction's internals are not the
    ones this was written for (checked by the test suite).
    """
    journal = getattr(tr, "_file", None)
    newfiles = getattr(tr, "_newfiles", None)
    known = [getattr(tr, a, None) for a in _TR_KNOWN]
    if (
        journal is None
        or newfiles is None
        or None in known
        or getattr(tr, "_queue", True)
        or not getattr(tr, "_count", 0)
    ):
        for name in names:
            tr.add(name, 0)
        return
    lines = []
    for name in names:
        if name in newfiles or any(name in k for k in known):
            continue
        newfiles.add(name)
        lines.append(b"%s\0%d\n" % (name, 0))
    if lines:
        journal.write(b"".join(lines))
        journal.flush()


_TR_KNOWN = ("_offsetmap", "_backupmap", "_tmp_files")


def report_transferred(repo, start, file_count, byte_count):
    """Stock's closing status line of a stream clone (its wording changed
    in 7.0: ``stream-cloned N files / ...``, before ``transferred ...``)."""
    from mercurial import streamclone

    report = getattr(streamclone, "_report_transferred", None)
    if report is not None:
        report(repo, start, file_count, byte_count)
        return
    from mercurial.i18n import _

    elapsed = max(util.timer() - start, 0.001)
    repo.ui.status(
        _(b"transferred %s in %.1f seconds (%s/sec)\n")
        % (
            util.bytecount(byte_count),
            elapsed,
            util.bytecount(byte_count / elapsed),
        )
    )
