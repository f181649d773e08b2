"""Differences between the supported Mercurial releases, in one place.

Everything else in the extension calls these helpers instead of testing
versions or attributes itself.
"""

import inspect
import io
import mmap
import threading
import types

from mercurial import store, util

# Private attributes of Mercurial the extension reads, each through one
# helper below, all present in 6.7 to 7.2.  Methods are checked once per
# process (``changegroup_internals``, ``stream_internals``: a release where
# one moved keeps stock behaviour for that part); attributes set by
# constructors are read with a fallback to stock's way.
# ``tests/unit/test_compat.py`` fails on a release where any of them moved.
#
#   vfs._auditpath(path, mode)   vfs.__call__'s path checks
#   vfs._chmod                   whether the vfs gives files their mode
#   vfs._trustnlink              whether the vfs trusts link counts
#   closewrapbase._origfh        the file a vfs wrapper wraps
#   cg1unpacker._stream          where a changegroup is read from
#   transaction._file, ...       see journal_new_files
#   transaction._generatefiles   see transaction_commit_point
#   transaction._journal, ...    see transaction_files


def path_auditor(vfs):
    """``audit(path)``: Mercurial's own checks (``checkosfilename`` and the
    vfs' path auditor) for a path relative to ``vfs`` about to be written."""
    auditpath = vfs._auditpath

    def audit(path):
        auditpath(path, b"wb")

    return audit


def path_checker(vfs):
    """``check(path, mode)``: the checks ``vfs.__call__`` makes first."""
    return vfs._auditpath


def trusts_link_count(vfs):
    """True once the vfs has found that link counts can be trusted here
    (it decides at its first write of an existing file); False while it
    has not, or on a release where the attribute moved (stock's path)."""
    return getattr(vfs, "_trustnlink", None) is True


def wrapped_file(wrapper):
    """The file object a ``vfs.closewrapbase`` wraps."""
    return wrapper._origfh


def changegroup_source(unpacker):
    """What a changegroup unpacker reads from (None on a release where the
    attribute moved: then it is not read ahead)."""
    return getattr(unpacker, "_stream", None)


def set_changegroup_source(unpacker, stream):
    unpacker._stream = stream


def revlog_compression(rl):
    """``(engine name, options)`` a revlog compresses with (its
    ``feature_config``, 6.7 to 7.2), or None where it is not there (or
    ``rl`` is not a revlog: see ``revlog_of``)."""
    if revlog_of(rl) is None:
        return None
    features = getattr(rl, "feature_config", None)
    if features is None:
        return None
    return features.compression_engine, features.compression_engine_options


def file_registrar(vfs):
    """``register(name)``: what the store does for a file written into it
    (its fncache entry; ``register_file`` exists in every supported
    release, and its rule changed in 7.2, so Mercurial's own is called)."""
    return vfs.register_file


def forced_file_mode(rawvfs):
    """The mode Mercurial's vfs gives a file it creates (``_fixfilemode``:
    a group-shared store's ``createmode``), or None where files keep the
    mode they are created with (the common case)."""
    if rawvfs.createmode is None or not rawvfs._chmod:
        return None
    return rawvfs.createmode & 0o666


def encoding_store_vfs_classes():
    """The store vfs classes that encode a store name and then call their
    raw vfs: the fncache store's, and ``filtervfs`` (the other stores)."""
    from mercurial import vfs as vfsmod

    classes = [vfsmod.filtervfs]
    fncachevfs = getattr(store, "_fncachevfs", None)
    if fncachevfs is not None:
        classes.append(fncachevfs)
    return [cls for cls in classes if "__call__" in vars(cls)]


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
    plain vfs).

    Each kind of store wraps its raw vfs in its own way: the fncache store
    in a vfs with an ``encode`` attribute, the other stores (no fncache, the
    file index of 7.2, no store at all) in a ``filtervfs``; any other proxy
    is asked for each name through its ``join``.
    """
    from mercurial import error, vfs as vfsmod

    inner = getattr(vfs, "vfs", None)
    if inner is None:
        return (lambda name: name), vfs
    encode = getattr(vfs, "encode", None)
    if encode is None and isinstance(vfs, vfsmod.filtervfs):
        encode = getattr(vfs, "_filter", None)
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


def journal_new_files(tr, names):
    """Journal ``names`` as files created by ``tr``: what ``tr.add(name, 0)``
    does for each, with one write of the journal instead of one per file
    (10k files: 8 ms instead of 32 to 47 ms, a tenth of a stream apply).

    Only for Mercurial's own transaction, untouched: any other class, an
    ``add`` or ``_addentry`` wrapped or replaced (by another extension), a
    group being collected (``startgroup``), or internals that are not the
    ones below get ``tr.add`` for each name.  ``tests/unit/test_journal.py``
    proves, on the release under test, that the journal and the whole
    in-memory state of the transaction are then exactly what ``tr.add``
    gives.
    """
    if not _journal_batchable(tr):
        for name in names:
            tr.add(name, 0)
        return
    newfiles = tr._newfiles
    known = [getattr(tr, a) for a in _TR_KNOWN]
    lines = []
    for name in names:
        if name in newfiles or any(name in k for k in known):
            continue
        newfiles.add(name)
        lines.append(b"%s\0%d\n" % (name, 0))
    if lines:
        journal = tr._file
        journal.write(b"".join(lines))
        journal.flush()


# the state transaction.add reads before it journals a file (as in 6.7-7.2)
_TR_KNOWN = ("_offsetmap", "_backupmap", "_tmp_files")
_TR_STATE = ("_file", "_newfiles", "_queue", "_count") + _TR_KNOWN


def _journal_batchable(tr):
    from mercurial import transaction

    cls = transaction.transaction
    if type(tr) is not cls or "add" in vars(tr) or "_addentry" in vars(tr):
        return False
    # extensions.wrapfunction leaves the original on the wrapper
    for method in ("add", "_addentry"):
        if hasattr(getattr(cls, method, None), "_origfunc"):
            return False
    if any(not hasattr(tr, a) for a in _TR_STATE):
        return False
    return not tr._queue and tr._count > 0


def report_transferred(repo, start, file_count, byte_count):
    """Stock's closing status line of a stream clone: its own function
    (7.0+, which says ``stream-cloned N files / ...``); 6.7 to 6.9 print
    the line inside their consumers, so it is said here in their words
    (the same translatable message)."""
    from mercurial import streamclone

    report = getattr(streamclone, "_report_transferred", None)
    if report is not None:
        report(repo, start, file_count, byte_count)
        return
    from mercurial.i18n import _

    seconds = max(util.timer() - start, 0.001)
    size, rate = util.bytecount(byte_count), util.bytecount(byte_count / seconds)
    message = _(b"transferred %s in %.1f seconds (%s/sec)\n")
    repo.ui.status(message % (size, seconds, rate))


def v2_end_read_before_report():
    """Whether stock's v2 consumer reads the end of its bundle2 part before
    its status line (7.0+, which also brought ``_report_transferred``)."""
    from mercurial import streamclone

    return hasattr(streamclone, "_report_transferred")


def _config_registered(ui, section, name):
    knownconfig = getattr(ui, "_knownconfig", None) or {}
    return knownconfig.get(section, {}).get(name) is not None


def parallel_stream_processing(ui):
    """Whether stock's threaded stream consumer is asked for
    (``worker.parallel-stream-bundle-processing``, 7.0+; never before)."""
    section, name = b"worker", b"parallel-stream-bundle-processing"
    if not _config_registered(ui, section, name):
        return False
    return ui.configbool(section, name)


def unread_part_file(part):
    """The file a bundle2 part is read from, when its payload is read
    straight from it (an uncompressed bundle) and not started yet; else
    None.  Same attributes on 6.7 to 7.2 (``bundle2.unbundlepart``)."""
    from mercurial import bundle2

    if type(part) is not bundle2.unbundlepart or getattr(part, "_pos", None) != 0:
        return None
    fh = getattr(part, "_fp", None)
    # a file, not a decompressing or network reader
    if not isinstance(fh, io.BufferedIOBase) and not isinstance(fh, io.RawIOBase):
        return None
    return fh


# -- the internals the extension wraps or calls ------------------------------
#
# Checked once, at the first call of the part concerned (``supported``).  A
# release whose internals are not the ones below (an untested newer
# Mercurial) keeps stock behaviour for that part, and says so in one
# ``ui.debug`` line: a wrapper called with arguments it does not expect
# would break the command instead.  The functions a part wrapped are
# checked as they were before (``gates.wrapped``): what the part's module
# holds now is the extension's wrapper.

_verdicts = {}
_verdicts_lock = threading.Lock()


def supported(ui, part, problems):
    """Whether the extension serves ``part`` (bytes, as the debug line
    names it): ``problems()`` lists what differs (empty: nothing), and is
    called at the part's first call only; what it finds is said once."""
    verdict = _verdicts.get(part)
    if verdict is None:
        with _verdicts_lock:
            verdict = _verdicts.get(part)
            if verdict is None:
                found = problems()
                if found:
                    report_unsupported(ui, part, found)
                verdict = _verdicts[part] = not found
    return verdict


def _as_wrapped(module, wrapped):
    """``module`` as far as the functions ``wrapped`` (name -> function
    before the extension wrapped it) go; ``module`` itself for None."""
    if wrapped is None:
        return module
    return types.SimpleNamespace(__name__=module.__name__, **wrapped)


# leading positional parameters of each wrapped stream consumer
STREAM_CONSUMERS = {
    "consumev1": ("repo", "fp", "filecount", "bytecount"),
    "consumev2": ("repo", "fp", "filecount", "filesize"),
    # experimental, optional
    "consumev3": ("repo", "fp"),
}
_OPTIONAL_CONSUMERS = ("consumev3",)


def _positional_names(func):
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return None
    kinds = (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
    )
    return tuple(p.name for p in params if p.kind in kinds)


def _signature_problem(container, name, expected):
    """None, or why ``container.name`` is not what a wrapper expects."""
    func = getattr(container, name, None)
    label = "%s.%s" % (getattr(container, "__name__", "?").split(".")[-1], name)
    if func is None or not callable(func):
        return "%s is missing" % label
    names = _positional_names(func)
    if names is None:
        return "%s has no signature" % label
    if names != expected:
        return "%s(%s) is not (%s)" % (label, ", ".join(names), ", ".join(expected))
    return None


def _missing(container, names):
    label = getattr(container, "__name__", "?").split(".")[-1]
    return ["%s.%s is missing" % (label, n) for n in names if not hasattr(container, n)]


def stream_internals(wrapped=None):
    """``(consumers, problems)``: the stream consumer names to wrap, and why
    none can be (empty when all is as expected); ``wrapped``: the consumers
    as they were before the extension wrapped them (see ``_as_wrapped``)."""
    from mercurial import streamclone, vfs as vfsmod

    consumer_module = _as_wrapped(streamclone, wrapped)
    problems = []
    consumers = []
    for name, expected in STREAM_CONSUMERS.items():
        if name in _OPTIONAL_CONSUMERS and not hasattr(consumer_module, name):
            continue
        problem = _signature_problem(consumer_module, name, expected)
        if problem:
            problems.append(problem)
        consumers.append(name)
    problems += _missing(streamclone, ("_makemap",))
    problems += _missing(store, ("decodedir",))
    problems += _missing(vfsmod.abstractvfs, ("register_file", "_auditpath"))
    # stores with a file index (7.2+) need its radix rule too
    if hasattr(store.basicstore, "fileindex"):
        problems += _missing(store, ("parse_filelog_radix",))
    if problems:
        consumers = []
    return consumers, problems


def closing_internals(stock_backgroundclosing):
    """Problems (empty: none) with serving ``vfs.backgroundclosing`` with the
    extension's closer: stock's context manager (as it was before being
    wrapped) and the ``close(fh)`` contract of the delayed-close files
    ``vfs(..., backgroundclose=True)`` returns."""
    from mercurial import vfs as vfsmod

    problems = []
    holder = types.SimpleNamespace(
        __name__="abstractvfs", backgroundclosing=stock_backgroundclosing
    )
    problem = _signature_problem(
        holder, "backgroundclosing", ("self", "ui", "expectedcount")
    )
    if problem:
        problems.append(problem)
    problems += _missing(vfsmod, ("delayclosedfile", "backgroundfilecloser"))
    return problems


def changegroup_internals():
    """Problems (empty: none) with serving changegroup application: what
    the revlog opener and its wiring rely on."""
    from mercurial import changegroup, vfs as vfsmod

    problems = _missing(changegroup, ("cg1unpacker",))
    if not problems:
        problems += _missing(changegroup.cg1unpacker, ("apply",))
    problems += _missing(vfsmod, ("vfs", "closewrapbase"))
    problems += _missing(vfsmod.vfs, ("__call__", "_auditpath", "_fixfilemode"))
    return problems


def revlog_index_read():
    """``(class, method name)`` of where a revlog reads its index when it
    is loaded, or None when the method is not the one the extension's
    shortcut for new files expects (the shortcut is then not taken:
    nothing else depends on it)."""
    from mercurial import revlog

    expected = ("self", "filepath", "mmap_threshold", "size")
    if _signature_problem(revlog.revlog, "_get_data", expected) is None:
        return revlog.revlog, "_get_data"
    return None


def serving_stream_internals(wrapped=None):
    """Problems (empty: none) with reading store files in large calls while
    a stream is generated: the generators wrapped (``wrapped``: as they
    were, see ``_as_wrapped``) and how they read."""
    from mercurial import streamclone

    generators = _as_wrapped(streamclone, wrapped)
    problems = []
    for name, expected in (("_emit2", ("repo", "entries")), ("generatev1", ("repo",))):
        problem = _signature_problem(generators, name, expected)
        if problem:
            problems.append(problem)
    # experimental, optional
    if hasattr(generators, "_emit3"):
        problem = _signature_problem(generators, "_emit3", ("repo", "entries"))
        if problem:
            problems.append(problem)
    problem = _signature_problem(util, "filechunkiter", ("f", "size", "limit"))
    if problem:
        problems.append(problem)
    return problems


def serving_changegroup_internals(wrapped=None):
    """Problems (empty: none) with reading revlogs through a large buffer
    while a changegroup is generated: ``deltagroup(repo, store, nodes,
    ...)``, ``makestream(repo, ...)`` (``wrapped``: as they were, see
    ``_as_wrapped``) and each revlog's data file (``_inner._segmentfile``,
    6.7-7.2, with the ``reading_handle`` that ``reading()`` sets)."""
    from mercurial import changegroup as cgmod, revlog
    from mercurial.revlogutils import randomaccessfile

    changegroup = _as_wrapped(cgmod, wrapped)
    problems = []
    func = getattr(changegroup, "deltagroup", None)
    names = _positional_names(func) if callable(func) else None
    if names is None or names[:3] != ("repo", "store", "nodes"):
        problems.append("changegroup.deltagroup(repo, store, nodes, ...) is missing")
    # a changegroup's whole generation (fastio.report)
    func = getattr(changegroup, "makestream", None)
    names = _positional_names(func) if callable(func) else None
    if names is None or names[:1] != ("repo",):
        problems.append("changegroup.makestream(repo, ...) is missing")
    problems += _missing(revlog.revlog, ("reading", "end"))
    problems += _missing(randomaccessfile.randomaccessfile, ("reading", "is_open"))
    return problems


def revlog_segment_file(rl):
    """The ``randomaccessfile`` a revlog reads its data through (its
    ``_inner._segmentfile``, 6.7-7.2), or None."""
    inner = getattr(rl, "_inner", None)
    segments = getattr(inner, "_segmentfile", None)
    if segments is None or not hasattr(segments, "reading_handle"):
        return None
    return segments


def revlog_of(store):
    """The revlog behind ``store`` (a filelog's or a manifest's
    ``_revlog``, the changelog or any revlog itself), or None when it is
    not a revlog: remotefilelog's file store, sqlitestore's, or another
    extension's, whose ``len()`` or revlog methods may raise (remotefilelog:
    ``RuntimeError: len not supported``); the caller then leaves the call
    to stock.  Nothing of ``store`` runs to answer (no ``__getattr__``, no
    property): every check on a store Mercurial hands the extension starts
    here."""
    from mercurial import revlog

    if isinstance(store, revlog.revlog):
        return store
    # filelog and manifestrevlog set it in __init__ (6.7 to 7.2)
    inner = inspect.getattr_static(store, "_revlog", None)
    return inner if isinstance(inner, revlog.revlog) else None


def transaction_commit_point():
    """``(class, method name)`` of the call that ends the writes of a
    transaction's close, or None where it is not there.  6.7-7.2:
    ``close`` generates its post-finalize files (``_generatefiles(group=
    GEN_GROUP_POST_FINALIZE)``), the last thing it writes to the
    repository; only then does it remove its temporary files (among them
    the list of ``newpaths``, which ``hg recover`` needs) and turn the
    journal into ``undo`` (``_writeundo``).  :func:`ends_writes` tells that
    call from the others (``writepending``, the pre-finalize group)."""
    from mercurial import transaction

    cls = transaction.transaction
    expected = ("self", "suffix", "group")
    if (
        _signature_problem(cls, "_generatefiles", expected) is None
        and hasattr(transaction, "GEN_GROUP_POST_FINALIZE")
        and hasattr(cls, "_writeundo")
    ):
        return cls, "_generatefiles"
    return None


def ends_writes(args, kwargs):
    """Whether ``_generatefiles(*args, **kwargs)`` is the commit point."""
    from mercurial import transaction

    suffix = kwargs.get("suffix", args[0] if args else b"")
    group = kwargs.get("group", args[1] if len(args) > 1 else None)
    return not suffix and group == transaction.GEN_GROUP_POST_FINALIZE


def clone_function():
    """``(module, "clone")``: the clone the clone command calls (7.2:
    ``mercurial.cmd_impls.clone``, where ``hg.clone`` is a deprecated alias
    that calls it; 6.7: ``mercurial.hg``)."""
    try:
        from mercurial.cmd_impls import clone as clone_impl
    except ImportError:
        from mercurial import hg as clone_impl
    return clone_impl, "clone"


def transaction_files(tr):
    """Absolute paths of the files ``tr`` journaled or backed up (6.7-7.2:
    the journal file in ``tr._opener``, ``tr._backupentries`` of
    ``(location, file, backup, cache)`` in ``tr._vfsmap``).  Read at its
    commit point: every entry is written to the journal file."""
    opener = tr._opener
    paths = []
    journal = opener.tryread(tr._journal) if tr._journal else b""
    for line in journal.splitlines():
        name = line.partition(b"\0")[0]
        if name:
            paths.append(opener.join(name))
    for location, name, __, ___ in tr._backupentries:
        vfs = tr._vfsmap.get(location)
        if vfs is not None and name:
            paths.append(vfs.join(name))
    return paths


def report_unsupported(ui, part, problems):
    """The debug line of a part whose internals are not the ones the
    extension was written for (that part keeps stock behaviour)."""
    ui.debug(
        b"fastio: Mercurial %s differs from the tested releases (%s): "
        b"stock behaviour for %s\n"
        % (
            util.version(),
            "; ".join(problems).encode("utf-8", "replace"),
            part,
        )
    )


def store_path(repo):
    """The store's directory (the store vfs has no ``base`` before 6.9)."""
    return encoder(repo.svfs)[1].base


# -- mmap population ---------------------------------------------------------

PAGE_SIZE = mmap.PAGESIZE

_HAS_POPULATE_PARAM = {}


def mmapread_has_populate(mmapread):
    """Whether stock's ``util.mmapread`` takes ``pre_populate``: 7.2 (the
    parameter came after 6.7); 6.7 has none (and never populates)."""
    key = id(mmapread)
    if key not in _HAS_POPULATE_PARAM:
        try:
            params = inspect.signature(mmapread).parameters
        except (TypeError, ValueError):
            params = {}
        _HAS_POPULATE_PARAM[key] = "pre_populate" in params
    return _HAS_POPULATE_PARAM[key]


def map_unpopulated(mmapread, fp, size):
    """Stock's mapping of ``fp``, not populated: ``pre_populate=False`` on
    7.2; 6.7 does not populate."""
    if mmapread_has_populate(mmapread):
        return mmapread(fp, size, pre_populate=False)
    return mmapread(fp, size)


def stock_background_helper():
    """``osutil.background_mmap_populate`` (7.2, when Mercurial was built
    with headers defining ``MADV_POPULATE_READ``), or None (6.7, and the
    7.2.4 wheel from PyPI)."""
    from mercurial import policy

    return getattr(policy.importmod("osutil"), "background_mmap_populate", None)


def stock_populates_synchronously():
    """Whether stock's ``mmapread(..., pre_populate=True)`` maps with
    ``MAP_POPULATE`` (7.2 on POSIX without the background helper)."""
    from mercurial import pycompat, util

    orig = getattr(util.mmapread, "_origfunc", util.mmapread)
    return (
        mmapread_has_populate(orig)
        and not pycompat.iswindows
        and hasattr(mmap, "MAP_POPULATE")
        and stock_background_helper() is None
    )


def stock_population():
    """What stock does with a mapping, in words (``auto`` without helper)."""
    from mercurial import pycompat, util

    orig = getattr(util.mmapread, "_origfunc", util.mmapread)
    if not mmapread_has_populate(orig):
        return b"none: Mercurial %s does not populate" % util.version()
    if pycompat.iswindows:
        return b"none on Windows"
    if stock_background_helper() is not None:
        return b"osutil.background_mmap_populate"
    if hasattr(mmap, "MAP_POPULATE"):
        return b"MAP_POPULATE"
    return b"none"
