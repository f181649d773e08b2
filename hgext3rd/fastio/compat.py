"""Differences between the supported Mercurial releases (6.7 to 7.2), in one
place.

Everything else in the extension calls these helpers instead of testing
releases or reading Mercurial's private attributes itself.  The sections
go by release: each shim is tagged with the releases it serves and what
the next one changed (``# hg <= 6.8 (6.9 added ...)``).

Dropping the releases up to X.Y: ``grep -rn "hg <= X.Y" hgext3rd`` (and
the same for each older one still there) finds every shim that serves only
them (here, and the few that load cost keeps where every command runs
them: ``__init__.py``, ``wiring.py``, tagged the same way); keep the way of the newer releases, remove the rest and the
section's header, then the ``testedwith`` of ``metadata.py``.  The section
"every supported release" reads private attributes that 6.7 to 7.2 all
have (``tests/unit/test_compat.py`` fails on a release that moves one); the
last section keeps stock behaviour for a part whose internals differ on a
release the extension was not tested with.
"""

import inspect
import io
import mmap
import threading
import types

from mercurial import configitems, store, util

# == hg <= 6.8 ===============================================================
# 6.9 added util.mmapread's ``pre_populate`` (stock's own population of
# mappings: ``MAP_POPULATE``, or ``osutil.background_mmap_populate`` where
# Mercurial was built with it), and renamed experimental.mmapindexthreshold
# to storage.revlog.mmap.index.

_HAS_POPULATE_PARAM = {}


# hg <= 6.8 (6.9 added pre_populate)
def mmapread_has_populate(mmapread):
    """Whether stock's ``util.mmapread`` takes ``pre_populate`` (6.9 and
    later); 6.7 and 6.8 have none (and never populate)."""
    key = id(mmapread)
    if key not in _HAS_POPULATE_PARAM:
        try:
            params = inspect.signature(mmapread).parameters
        except (TypeError, ValueError):
            params = {}
        _HAS_POPULATE_PARAM[key] = "pre_populate" in params
    return _HAS_POPULATE_PARAM[key]


# hg <= 6.8 (6.9 added pre_populate)
def map_unpopulated(mmapread, fp, size):
    """Stock's mapping of ``fp``, not populated: ``pre_populate=False`` on
    6.9 and later; 6.7 and 6.8 do not populate."""
    if mmapread_has_populate(mmapread):
        return mmapread(fp, size, pre_populate=False)
    return mmapread(fp, size)


# hg <= 6.8 (6.9 added osutil.background_mmap_populate)
def stock_background_helper():
    """``osutil.background_mmap_populate`` (6.9 and later, when Mercurial
    was built with headers defining ``MADV_POPULATE_READ``), or None (6.7,
    6.8, and the 7.2.4 wheel from PyPI)."""
    from mercurial import policy

    return getattr(policy.importmod("osutil"), "background_mmap_populate", None)


# hg <= 6.8 (6.9 added pre_populate)
def stock_populates_synchronously():
    """Whether stock's ``mmapread(..., pre_populate=True)`` maps with
    ``MAP_POPULATE`` (6.9 and later on POSIX without the background
    helper)."""
    from mercurial import pycompat, util

    orig = getattr(util.mmapread, "_origfunc", util.mmapread)
    return (
        mmapread_has_populate(orig)
        and not pycompat.iswindows
        and hasattr(mmap, "MAP_POPULATE")
        and stock_background_helper() is None
    )


# hg <= 6.8 (6.9 added pre_populate)
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


# hg <= 6.8 (6.9 renamed experimental.mmapindexthreshold)
def mmap_index_option():
    """The option naming the revlog indexes Mercurial maps:
    ``storage.revlog.mmap.index`` (6.9 and later), else
    ``experimental.mmapindexthreshold``."""
    if b"revlog.mmap.index" in configitems.coreitems.get(b"storage", {}):
        return b"storage.revlog.mmap.index"
    return b"experimental.mmapindexthreshold"


# == hg <= 6.9 ===============================================================
# 7.0 added streamclone._report_transferred (the closing status line of a
# stream clone, said once the v2 consumer read the end of its part) and
# stock's threaded stream consumer (worker.parallel-stream-bundle-processing).


# hg <= 6.9 (7.0 added streamclone._report_transferred)
def report_transferred(repo, start, file_count, byte_count):
    """Stock's closing status line of a stream clone: its own function
    (7.0 and later: ``stream-cloned N files / ...``); 6.7 to 6.9 print
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


# hg <= 6.9 (7.0 added streamclone._report_transferred)
def v2_end_read_before_report():
    """Whether stock's v2 consumer reads the end of its bundle2 part before
    its status line (7.0 and later)."""
    from mercurial import streamclone

    return hasattr(streamclone, "_report_transferred")


# hg <= 6.9 (7.0 added worker.parallel-stream-bundle-processing)
def parallel_stream_processing(ui):
    """Whether stock's threaded stream consumer is asked for
    (``worker.parallel-stream-bundle-processing``, 7.0 and later)."""
    section, name = b"worker", b"parallel-stream-bundle-processing"
    if not _config_registered(ui, section, name):
        return False
    return ui.configbool(section, name)


def _config_registered(ui, section, name):
    knownconfig = getattr(ui, "_knownconfig", None) or {}
    return knownconfig.get(section, {}).get(name) is not None


# == hg <= 7.0 ===============================================================
# 7.1 added repo.file's ``writable`` (a filelog opened to be written).


# hg <= 7.0 (7.1 added repo.file's writable)
def writable_filelog(repo, name):
    """Filelog ``name`` opened to be written (inside a transaction)."""
    cls = type(repo)
    if cls not in _FILE_TAKES_WRITABLE:
        try:
            params = inspect.signature(repo.file).parameters
        except (TypeError, ValueError):
            params = ()
        _FILE_TAKES_WRITABLE[cls] = "writable" in params
    if _FILE_TAKES_WRITABLE[cls]:
        return repo.file(name, writable=True)
    return repo.file(name)


_FILE_TAKES_WRITABLE = {}


# == hg <= 7.1 ===============================================================
# 7.2 added the store's file index (with its radix rule), gave the store's
# vfs a ``base``, and moved clone to mercurial.cmd_impls.clone.


# hg <= 7.1 (7.2 added the file index)
def fileindex(repo):
    """The store's file index (newer store format), or None."""
    return getattr(repo.store, "fileindex", None)


# hg <= 7.1 (7.2 added the file index)
def fileindex_add(index, name, tr):
    radix = store.parse_filelog_radix(name)
    if radix is not None:
        index.add(radix, tr)


# hg <= 7.1 (7.2 gave the store's vfs a base)
def store_path(repo):
    """The store's directory: the ``base`` of the raw vfs beneath the
    store's (the store's own vfs has one from 7.2 on)."""
    svfs = repo.svfs
    return getattr(svfs, "vfs", svfs).base


# hg <= 7.1 (7.2 moved clone to mercurial.cmd_impls.clone)
def clone_function():
    """``(module, "clone")``: the clone the clone command calls (7.2:
    ``mercurial.cmd_impls.clone``, where ``hg.clone`` is a deprecated alias
    that calls it; 6.7 to 7.1: ``mercurial.hg``)."""
    try:
        from mercurial.cmd_impls import clone as clone_impl
    except ImportError:
        from mercurial import hg as clone_impl
    return clone_impl, "clone"


# == every supported release (6.7 to 7.2) ====================================
# Private attributes of Mercurial the extension reads, each through one
# helper below, all present in 6.7 to 7.2.  Methods are checked once per
# process (``changegroup_internals``, ``stream_internals``: a release where
# one moved keeps stock behaviour for that part); attributes set by
# constructors are read with a fallback to stock's way.
# ``tests/unit/test_compat.py`` fails on a release where any of them moved
# (``tests/unit/test_journal.py`` for the transaction's, read by txn/journal).
#
#   vfs._auditpath(path, mode)   vfs.__call__'s path checks
#   vfs._chmod                   whether the vfs gives files their mode
#   vfs._trustnlink              whether the vfs trusts link counts
#   filtervfs._filter            how a store without fncache names files
#   closewrapbase._origfh        the file a vfs wrapper wraps
#   cg1unpacker._stream          where a changegroup is read from
#   repo.svfs.options            see mmap_index_threshold
#   transaction._file, ...       see txn/journal.py
#   transaction._generatefiles   see transaction_commit_point
#   transaction._journal, ...    see transaction_files
#   worker._numworkers(ui)       see worker_count


def worker_count(ui):
    """The number of worker processes Mercurial starts (``worker.numcpus``,
    else the cores, at least 4 and at most 32)."""
    from mercurial import worker

    return worker._numworkers(ui)


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


def filtervfs_filter(vfs):
    """The function a ``vfs.filtervfs`` names files with, or None."""
    return getattr(vfs, "_filter", None)


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


def mmap_index_threshold(svfs):
    """``(threshold,)``: the size from which Mercurial maps the revlog
    indexes of a store (``threshold`` None: it maps none), or None when
    the store's vfs has no options."""
    options = getattr(svfs, "options", None)
    if options is None:
        return None
    data_config = options.get(b"data-config")
    if data_config is not None:
        return (getattr(data_config, "mmap_index_threshold", None),)
    # (a store whose options no supported release made)
    return (options.get(b"mmapindexthreshold"),)


def bind_args(func, *args, **kwargs):
    """``{parameter: value}`` of a call of ``func`` (its defaults filled
    in), or None if the arguments do not fit its signature."""
    try:
        bound = inspect.signature(func).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return None
    bound.apply_defaults()
    return dict(bound.arguments)


def changegroup_unpacker_classes():
    """The unpacker classes of the changegroup versions Mercurial knows
    (``changegroup._packermap``: ``{version: (packer, unpacker)}``)."""
    from mercurial import changegroup

    return {entry[1] for entry in changegroup._packermap.values()}


def split_index_files(fl):
    """``(index, split index)`` of a filelog's revlog: the split of an
    inline revlog writes the second and renames it over the first when the
    transaction closes (``revlog._enforceinlinesize``)."""
    rl = fl._revlog
    return rl._indexfile, rl._split_index_file


# == hg > 7.2: the internals the extension wraps or calls ===================
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
    # hg <= 7.1 (7.2 added the file index): stores with one need its
    # radix rule too
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
