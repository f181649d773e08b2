"""write many files fast: stream clones, unbundles, background closes

Cloning or unbundling a large repository writes hundreds of thousands of
revlog files.  With this extension enabled, Mercurial writes them with
little per-file work, closes them on background threads when closing files
is slow on this filesystem (NTFS with a virus scanner, NFS, network
shares), and turns any failure into an ``abort:`` that leaves the
repository as it was.  Nothing changes in what ends up on disk::

  [extensions]
  fastio =

What is accelerated
===================

Stream clone application (``hg clone --stream`` over ssh and http,
stream clonebundles, ``hg unbundle`` of ``stream=v2`` and ``stream=v3-exp``
bundles, ``hg debugapplystreamclonebundle`` of ``packed1`` bundles) goes
through a store writer that reads the stream in large blocks, creates each
file once, in directories it remembers, and journals every file in the
transaction before creating it: an aborted or interrupted clone leaves no
stray file, and ``hg recover`` cleans up after a crash.  A file already in
the store (every revision stripped, or left by an interrupted operation) is
backed up by the transaction and replaced by a new file, never written
through: the backup, or another repository sharing it by a hardlink, keeps
its content.  Files and directories get the modes Mercurial's own vfs gives
them (a group-shared store stays group-writable).

Directories an apply makes, and the cache files a stream carries, are
recorded (in ``.hg/fastio-newpaths-<random token>``, a temporary file of
the transaction, in ``.hg`` where no stream, bundle or pull writes) before
they are created, and removed when the transaction rolls back, in the
process or by ``hg recover`` after a crash, so that the repository ends
exactly as it was.  ``hg recover`` obeys only the list that the journal it
rolls back names, and removes no file older than that list.  It also
removes what a crash left of that transaction's atomic writes in
``.hg/store`` (a ``.fncache-XXXXXXXX~`` or ``.phaseroots-XXXXXXXX~`` of its
close), which stock leaves.  A stream carrying a file under a name the
extension keeps (``fastio-...`` at the top of the store or the cache) is
refused.

A name that is not a plain store path (``..``, ``.hg``, absolute, NUL or
newline) is refused.  When the stream is read from a bundle file, every
name of the whole stream is checked before anything is written (contents
are skipped over); a stream from a peer is checked file by file, and what
came before a refused name is rolled back.

Changegroup application (``hg pull``, ``hg clone`` without ``--stream``
from any peer, ``hg unbundle`` of v1 and v2 bundles, narrow clones and
``hg tracked --addinclude``) opens revlog files with fewer system calls
(one exclusive create for a new file, one open for an existing one; a
hardlinked file is still copied first), hands their closes to the closer,
shares compressors between revlogs and reads bundle2 parts in large
blocks.  Every deferred close is done before the transaction closes or
rolls back, and a file is never reopened, renamed or removed while its close
is pending.

A small changegroup (fewer than 16 changesets, as a bundle2 part announces
them: the everyday pull, push or unbundle) is applied as Mercurial applies
it, and the extension's apply machinery is not even loaded: it would cost
more than it saves.  Its files still get the extension's writer when there
are 32 or more of them (one changeset may add a whole tree).

A changegroup of more than one block (``fastio.buffer-size``) whose
reading costs CPU time (a bzip2 or gzip bundle, ``hg bundle``'s default
being bzip2) is read by a second thread a few blocks ahead, which
decompresses it on the other core, without Python's lock.  A read that
only waits (a network) gets no thread: the lock's hand-overs would cost
more CPU time than they save.

The files of a changegroup of 1024 files or more (a clone, a large pull
or unbundle), two thirds of a history-rich apply's time, are applied by
worker processes, one per core (none with one core): forked when the files
begin, each applies whole filelogs with Mercurial's own code, while the
applying process reads the changegroup once, hands each file's group to
the next free worker and applies the manifests meanwhile.  The store is
byte for byte the one Mercurial writes.  The transaction stays the
applying process's: a worker asks it to journal every file (and to record
every directory) before writing there, so a failure in a worker, its
death, the death of the applying process (its workers die with it) or an
interrupt leaves what the rollback or ``hg recover`` restores.  Not on
Windows (no ``fork``), with ``server.validate``, sidedata, a file index,
revlog v2 or another extension wrapping Mercurial's function; ``--debug``
says why.

With ``fastio.compress-ahead`` (off by default), a changegroup of more
than one block is read by a second thread a few blocks ahead whenever
reading is slow or there is much to compress, which also decompresses
the bundle and compresses the revisions the revlogs will most likely
store (a new file's full text, a delta as it came) with a compressor of
the store's engine and level.
Mercurial's compressors then take those results instead of compressing:
they are looked up by the very bytes to compress, so the store is byte for
byte the one Mercurial writes, and a guess no revlog asks for costs time on
the other core and hand-overs on the applying one.

Every ``vfs.backgroundclosing`` block of Mercurial (working copy updates,
among others) uses the extension's closer instead of stock's, so that a
failing close always aborts the command.

A checkout (``hg update``, the one ending ``hg clone``, each of its worker
processes) checks and makes each directory once, not once per file: the
working copy's path auditor caches what it checked for the block, with
Mercurial's own ``pathauditor.cached()`` (every path and directory is
still checked once, for nested repositories and symbolic links, as stock
checks them), and a directory the block made or found is not asked for
again.  A stock checkout of 10k files calls ``mkdir`` once per file (it
fails for all but the first of each directory) and ``lstat`` on every
directory above each file twice: on a network filesystem each is a round
trip.  Into a working directory that held only ``.hg`` when the update
began (a clone's, or after ``hg clone -U``), three calls per file whose
answer is known are skipped (a directory in the file's way, the unlink of
a file not there yet, the flags of a plain file just made); the path is
still audited.  Each worker process gets a run of whole directories (the
kernel lets one create at a time into a directory; Mercurial deals files
to its workers in turn), and on a filesystem known slow (found so by an
apply of the same command, as in ``hg clone``, or measured by ``hg
debugfastio``) twice Mercurial's number of workers start, unless
``worker.numcpus`` is set.  While an update
applies its actions the command's objects are frozen out of Python's
garbage collector (``gc.freeze``): its worker processes neither scan them
nor copy them.

With no option set, the output of every command is that of Mercurial.

Bundle files
============

Every bundle file Mercurial reads (``hg unbundle``, also of
``/dev/stdin``, ``hg debugapplystreamclonebundle``, ``hg pull`` and
``hg incoming`` from a bundle file, with the uncompressed copy they make of
a compressed one, the bundles strip and rebase read back) is read through a
buffer of ``fastio.read-buffer`` bytes: one system call per buffer instead
of one per 4 to 64 KiB, where each call is a round trip on a network share.
Clone bundles fetched over http are read the same way, from the
response (stock reads its socket in calls of 15 to 30 KiB on average).  A
bundle piped in (``cat b.hg | hg unbundle /dev/stdin``) gets a pipe that
holds a buffer's worth where the system allows it (Linux), so that each
read takes what the writer put in (a pipe holds 64 KiB by default).  Only
files this process opened by their path, and those responses, are read
ahead; a protocol stream is read as stock reads it.  Every bundle file
Mercurial writes
(``hg bundle`` of every type, ``hg debugcreatestreamclonebundle``, strip
and rebase backups, temporary bundles of ``hg incoming --bundle``) is
written in blocks of ``fastio.write-buffer`` bytes, with the bytes stock
writes.

Serving clones
==============

With the extension enabled on a server (``hg serve``, an hgweb WSGI
application, ``hg serve --stdio`` run by ssh), and in every command that
generates a stream or a changegroup (``hg bundle``, ``hg clone --pull``
from a local path), store files are read in large system calls.  Clients
get the bytes a stock server sends, whether they have the extension or
not.

A stream clone reads every store file larger than 64 KiB in calls of
``fastio.read-buffer`` bytes (stock: 128 KiB), and every smaller one in a
single call (stock: two or three, of the file's block size, for a file
larger than that block).  A changegroup that sends most revisions of a
revlog whose data is larger than 128 KiB (a clone, a first pull) reads its
data file once, through a buffer of ``fastio.read-buffer`` bytes (stock
reads it in windows of 64 KiB, opened for each window, most bytes twice); a
pull of a few revisions reads as stock does.  ``fastio.read-buffer=0``
reads as stock does.  ``fastio.report`` set on the server ends each
generation with a line on the server's stderr (over ssh the client prints
it after ``remote:``).

Mercurial loads its modules lazily, and before Python 3.13 (CPython issue
gh-114763) two threads using a module that has not loaded yet can fail
(``module ... has no attribute ...``): the first requests reaching a
freshly started hgweb server, each in its own thread, could then fail
with HTTP 500, with or without the extension.  With the extension, an
hgweb server loads the modules its requests may use, and wires in the
extension's parts, before any request runs: ``hg serve`` once it listens,
before it serves; a WSGI application at its first request, the others
waiting for it.  ``hg serve --stdio`` serves in a single thread and loads
as stock does.

A push a server receives is applied by the extension too: by ``hg serve
--stdio`` (over ssh) on its main thread, by an hgweb server in the request
thread that received it, each thread with its own state (pushes to
different repositories of one server apply side by side).

Writing files
=============

A new file's whole life (its directory made, the file created, written and
closed) can happen off the applying thread, on threads that never take
Python's lock (built from C where a compiler was there; Python threads
elsewhere).  The applying thread keeps what makes the store correct: name
checks, store encoding, path auditing, the fncache, and the journal entry
of every file and the record of every directory, on disk before they are
created.  On a filesystem where creating, writing or closing a file is a
round trip (NFS, SMB, NTFS with a virus scanner), the threads overlap the
round trips; their number grows while the filesystem keeps them waiting
(a thread that slept in a system call, not one a busy processor ran late)
and files queue up (up to ``fastio.max-write-threads``); contents waiting
for them are bounded by ``fastio.memory-budget``.  The kernel lets one
create (or mkdir, unlink, rename) at a time into a directory, so the
threads of the C pool take turns by directory: one creates in a directory
while the others create in other directories, and the writes and closes,
which the kernel does not serialize, overlap as before.  Nothing is looked
up below a directory the apply made (nothing else can be there): the
applying thread of a stream or changegroup apply into an empty repository
makes no round trip per new directory or file.

In ``auto`` mode (the default) the files of a stream clone go to two such
threads whenever the machine has a second core (a 10k-file stream apply
takes about a fifth less on tmpfs), and the threads grow as above.  The
revlogs a changegroup creates (and the handles it closes) are written and
closed here while creating and closing files is fast; once the median
create or close of a sample of files is slower than
``fastio.slow-file-threshold``, new revlogs are kept in memory while the
changegroup writes them and handed whole to the threads, and closes go
there too.  Fast local filesystems never pay for threads they cannot use.

``hg debugfastio`` stores the median close it measures, per filesystem, in
``.hg/fastio-probe``; nothing else writes that file (no operation writes it
unasked, and no stream, bundle or pull can: they write the store and
``.hg/cache``), and an entry out of range is ignored.  The next operations on the same
filesystem (the checkout after a clone, a pull, an update) then start
closing in the background at once when closes there are slow, without
sampling first; where they are fast they close inline and keep timing, so
that a change is noticed.  A measurement older than
``fastio.probe-max-age`` is not used.  Without a measurement, every
operation decides from its own first files.

When waiting for files still being written at the end of an operation
takes more than a second, a ``closing files`` progress bar shows it.  ``--debug`` tells
every decision (lines starting with ``fastio:``).

Durable applies
===============

Mercurial never asks the operating system to write what it wrote to
stable storage: when ``hg clone``, ``hg pull`` or ``hg unbundle`` returns,
the new revlogs can still be only in memory, and a power cut or a kernel
crash can then leave a repository whose journal is gone but whose files are
empty or short.  With ``fastio.durable=yes``, every apply the extension
accelerates (stream clones v1, v2 and v3 and stream bundles; changegroups:
``hg clone`` without ``--stream``, ``hg pull``, ``hg unbundle``, narrow
clones and ``hg tracked --addinclude``) has everything its transaction
wrote (file contents, new directories and names, the fncache, phase roots,
bookmarks and the other store files) on stable storage *before* the
transaction commits, that is before its journal is turned into the undo
files.  A crash before that point leaves the journal: ``hg recover`` rolls
the apply back.  A crash after it leaves the complete repository.

On Linux this is one ``syncfs`` of the filesystem of the store (and of
``.hg`` if it is another one): the filesystem writes out every dirty page
and commits its journal once, which costs a fraction of an ``fsync`` per
file.  It also writes out what other programs left unwritten on that
filesystem.  Elsewhere every file the transaction journaled or backed up,
every file and directory the apply made, and the directory of each, gets
its own ``fsync`` (on Windows ``FlushFileBuffers``, directories aside:
Windows cannot open them; written for Windows, not run by the tests).  A
stream clone also flushes the requirements Mercurial writes after its
transaction, when the repository is unlocked.  A flush that fails aborts
the command and leaves the journal, for ``hg recover``.  ``fastio.report``
and ``--debug`` say how long flushing took (``fastio: durable:``).

The checkout that ends ``hg clone`` is flushed too, once it is done (one
more ``syncfs``; elsewhere an ``fsync`` of every tracked file, of the
dirstate and of the directories): when ``hg clone`` returns, the working
copy is on stable storage; a crash during the checkout leaves a working
copy that ``hg update --clean`` repairs, as without this option.

Not covered: ``hg update`` and ``hg pull --update`` (the working copy
outside a clone); the undo files (``hg rollback``) are written after the flush;
a local clone that copies or hardlinks the store, and applies with
``fastio.stream-writer=no``, are Mercurial's own.  The order of the
journal and the data *during* an apply is Mercurial's: a power cut in the
middle of a pull into an existing repository can lose journal entries that
were not yet written out, which ``hg recover`` then cannot use (with or
without this option).

Populating memory mappings
==========================

Mercurial maps some store files into memory instead of reading them: revlog
indexes of ``storage.revlog.mmap.index:size-threshold`` (1 MB) or more
(Mercurial 7.x; 6.7 maps them only when ``experimental.mmapindexthreshold``
is set), persistent nodemaps, the file index and the branch cache.  A
mapping is *populated* when its pages are made present before they are
read: this costs time up front and saves a page fault at each first read.
Stock Mercurial 7.2 populates every mapping with ``MAP_POPULATE`` before
the command can use it (from a thread only when it was built with headers
that know ``MADV_POPULATE_READ``; the wheels on PyPI are not), 6.7 never
does, and Windows never does.  Populating makes an unbundle on a large
repository about a tenth faster, and makes a small ``hg log`` slower.

``fastio.mmap-populate`` decides how every such mapping is populated
(never whether a file is mapped: that stays Mercurial's decision, made
only where it considers mmap safe):

``background``
  mapped without population, then populated by a thread that never holds
  Python's lock, a megabyte at a time: the command goes on at once and
  finds its pages present.  The thread uses ``madvise(MADV_POPULATE_READ)``
  where the running kernel has it (Linux 5.14), else ``MADV_WILLNEED``
  (read-ahead), else reads a byte per page; on Windows,
  ``PrefetchVirtualMemory`` (Windows 8 and later; written for Windows, not
  run by the extension's tests, which run on Linux).  It stops within a
  megabyte when the mapping is closed or the command ends: no thread
  outlives the command that started it (chg and the command server run
  many commands in one process).  A failure of the thread only shows
  under ``--debug``.

``always``
  populated before Mercurial gets the mapping (``MAP_POPULATE`` where
  Mercurial has it, else the same work in the calling thread).

``never``
  not populated: pages fault in as they are read.

``auto``
  ``background`` where the extension's C helper is built; otherwise what
  Mercurial itself does.

Mappings smaller than ``fastio.mmap-populate-threshold`` are not populated
(under ``auto`` without the helper, Mercurial's own rule applies).  The
helper is compiled with the extension's other C parts; without a compiler
``auto`` is Mercurial's behaviour, and ``background`` too (said under
``--debug``).

``hg debugfastio`` says which policy is in effect and times the population
of the changelog index; ``fastio.report`` adds the same for each
operation, and ``--debug`` says why the policy was chosen and sums up the
population of each command (lines starting with ``fastio: mmap:``).

Checking a filesystem
=====================

``hg debugfastio`` prints the effective settings and probes the
repository's filesystem: it creates, writes and closes a few hundred small
files in a temporary directory under ``.hg`` (removed afterwards), prints
the median close latency and what auto mode chooses from it, and stores the
measurement for auto mode.  ``--files N`` sets the number of files (default
256); ``--no-cache`` leaves the cache untouched.

Configuration
=============

Each number below has a range.  A value under it is refused: the command
aborts (``abort: fastio.OPTION must be N or more, not VALUE``) and leaves
the repository as it was.  A value over it is taken as its largest.  What
is not a number, a size or a duration gives Mercurial's ``config error:``
naming the option.  Sizes take a unit (``KB``, ``MB``, ``GB``; a bare
number is bytes).

``fastio.background-write``
  ``auto`` (default), ``always`` or ``never``: whether files are written
  and closed on threads (see "Writing files").  Formerly
  ``fastio.background-close``, still read.

``fastio.slow-file-threshold``
  Median create or close time above which ``auto`` goes to the
  background, with a
  unit (``ns``, ``us``, ``ms``, ``s``; a bare number is microseconds);
  0 or more (``0``: every filesystem is slow). Default: ``50us``.
  Formerly ``fastio.slow-close-threshold``, still read.

``fastio.file-sample``
  Number of files whose create and close are timed for each decision
  (their median decides; writing moves to the background as soon as more
  than half of them were slow); 1 to 1024. Default: 8.  Formerly
  ``fastio.close-sample``, still read.

``fastio.write-threads``
  Fixed number of threads that write and close files, even above
  ``fastio.max-write-threads`` but never more than
  ``fastio.max-pending-files``; 0 derives it from the measured close
  latency. Default: 0.  Formerly ``fastio.close-threads``, still read.

``fastio.max-write-threads``
  Upper bound on the threads that write and close files (more start
  while the filesystem keeps them waiting and files queue up: a 1 ms
  create and close need about 60 to keep up with a stream clone, 5 ms
  about 200); 1 or more, never more than ``fastio.max-pending-files``.
  Default: 256.  Formerly ``fastio.max-close-threads``, still read.

``fastio.max-pending-files``
  Upper bound on the files handed to the threads that hold a descriptor
  (opened, not yet closed); keeps well below the 512 descriptors Windows
  allows by default; 1 to 65536. Default: 256.  New files queued for the
  C pool hold none until a thread makes them: up to 4096 of them (or
  this bound, if larger) wait, within ``fastio.memory-budget``; the
  report's "peak pending files" counts both.  Formerly
  ``fastio.max-pending-closes``, still read.

``fastio.memory-budget``
  Upper bound on the contents of new files handed to the writing threads
  and not written yet (they are made off the applying thread: see
  "Writing files"); the applying thread waits above it (a file larger
  than the budget waits until nothing else is pending); 1 byte to 1TB.
  Default: ``64MB``.

``fastio.pending-timeout``
  How long pending files may take once a command is interrupted (Ctrl-C,
  SIGTERM) or fails, with a unit (``ms``, ``s``; a bare number is
  seconds).  A close still not done then (a hard-mounted NFS server that
  stopped answering) is abandoned: the command aborts with ``N files not
  closed after T s (filesystem not responding)`` and the name of one of
  them, and the transaction is rolled back all the same.  An abandoned
  file stays open in the process until its close returns or the process
  exits.  Without an interruption or a failure, closes are waited for as
  long as they take (a Ctrl-C then ends the wait as above).  0 or more
  (``0``: no wait once interrupted). Default: ``5s``.  Formerly
  ``fastio.close-timeout``, still read.

``fastio.buffer-size``
  Size of the blocks bundles are read in (a changegroup's reading thread
  keeps up to 32 ahead); ``64KB`` to ``64MB``. Default: ``1MB``.

``fastio.read-buffer``
  Size of the system calls bundle files are read with, and store files
  while a stream or a changegroup is generated (see "Serving clones");
  ``0`` reads them as Mercurial does; at most ``64MB`` (a buffer is
  allocated whole). Default: ``1MB``.

``fastio.write-buffer``
  Size of the system calls bundle files are written with; ``0`` writes
  them as Mercurial does; at most ``64MB``. Default: ``1MB``.

``fastio.stream-writer``
  Use the fast store writer for stream clones (default: yes); ``no``
  falls back to Mercurial's own code (the closer is still used).

``fastio.compress-ahead``
  Compress a changegroup's revisions ahead on a second thread (see
  "What is accelerated"). Default: ``no``.  Measured before bzip2 and
  gzip bundles got a reading thread without it: a 10k-file bzip2 bundle
  unbundled in 0.76 of stock's time with it, 0.81 without (now 0.66
  without).  Elsewhere the hand-overs cost more than they
  save: a 10k-file zstd bundle takes 0.85 of stock's time with it and 0.80
  without, and on a 30k-changeset history, where most revisions are small
  deltas it does not guess, 26.5 s with it against 23.2 s without.

``fastio.apply-workers``
  Worker processes applying a changegroup's files (see "What is
  accelerated"): ``auto`` (the cores this process may run on, at most 8;
  none with one core) or a number; ``0`` applies them in this process.
  Default: ``auto``.

``fastio.apply-memory``
  Upper bound on the changegroup data read and not applied yet while
  workers apply files (a share of it per worker, one for the file being
  read, one for the manifests); a file's or the manifests' group larger
  than its share is applied by the applying process, read on as
  Mercurial reads it. Default: ``256MB``.

``fastio.durable``
  ``yes`` flushes what an apply wrote to stable storage before its
  transaction commits (see "Durable applies"). Default: ``no`` (nothing
  is flushed, as in Mercurial).

``fastio.mmap-populate``
  ``auto`` (default), ``always``, ``never`` or ``background``: how the
  memory mappings of store data are populated (see "Populating memory
  mappings").

``fastio.mmap-populate-threshold``
  Mappings smaller than this are not populated; 0 or more (``0``: all
  are). Default: ``1MB``.

``fastio.report``
  Print, at the end of each accelerated operation, what it did: files and
  bytes written, closes done in background and threads, time spent waiting
  for them, the peak of pending closes, how closing was decided, which
  revlog indexes Mercurial maps, and the mmap population policy with what
  it did so far, the time flushing took under ``fastio.durable``, and how
  many revisions a changegroup had compressed ahead; a small changegroup
  says it was applied as Mercurial applies it.  A stream clone reports the files of the stream; a
  checkout (or any other ``backgroundclosing`` block) gets its own
  section.  A command that read or wrote bundle files ends with their
  system calls and mean size.  Each stream or changegroup generated (a
  server's, ``hg bundle``'s) ends with the files or revlogs read in large
  calls, their system calls and bytes, and for a stream the small files
  read in one call.  Lines start with ``fastio:`` and go to
  stderr. Default: no.

``fastio.probe-max-age``
  Age after which a close latency measured by ``hg debugfastio`` is no
  longer used (operations then decide from their own first files), with a
  unit (``s``,
  ``m``, ``h``, ``d``; a bare number is days); 0 or more, ``0`` disables
  the cache.  Only read in ``auto`` mode. Default: ``7d``.
"""

import atexit

from mercurial.i18n import _
from mercurial import registrar, util

# Everything a command the extension does not accelerate runs is in this
# module, and nothing else: the configuration and command tables Mercurial
# reads at load, the setups, the wiring of each part when Mercurial loads
# the module it wraps (below: wiring into a module once its code has run),
# and the wrappers of the modules every command loads (at the end).  A
# module more costs every command its import (finding, reading and
# unmarshalling it: 0.2 to 0.3M instructions), the first one the package
# directory's finder too: as three modules, these cost ``hg status`` 0.7M
# instructions more (of the extension's 4.4M).  This module's code is
# unmarshalled by every command, so what only an accelerated path runs is
# in the others.

# (registrar, not exthelper: importing that and merging its tables cost
# every command about 0.9M instructions, measured)
configtable = {}
configitem = registrar.configitem(configtable)

# (the old names of the renamed options: config.OLD_NAMES)
configitem(
    b"fastio",
    b"background-write",
    default=b"auto",
    alias=[(b"fastio", b"background-close")],
)
configitem(
    b"fastio",
    b"slow-file-threshold",
    default=b"50us",
    alias=[(b"fastio", b"slow-close-threshold")],
)
configitem(
    b"fastio", b"write-threads", default=0, alias=[(b"fastio", b"close-threads")]
)
configitem(
    b"fastio",
    b"max-write-threads",
    default=256,
    alias=[(b"fastio", b"max-close-threads")],
)
configitem(
    b"fastio",
    b"max-pending-files",
    default=256,
    alias=[(b"fastio", b"max-pending-closes")],
)
configitem(b"fastio", b"file-sample", default=8, alias=[(b"fastio", b"close-sample")])
configitem(b"fastio", b"buffer-size", default=b"1MB")
configitem(b"fastio", b"stream-writer", default=True)
configitem(b"fastio", b"report", default=False)
configitem(b"fastio", b"probe-max-age", default=b"7d")
configitem(
    b"fastio", b"pending-timeout", default=b"5s", alias=[(b"fastio", b"close-timeout")]
)
configitem(b"fastio", b"memory-budget", default=b"64MB")
configitem(b"fastio", b"read-buffer", default=b"1MB")
configitem(b"fastio", b"write-buffer", default=b"1MB")
configitem(b"fastio", b"mmap-populate", default=b"auto")
configitem(b"fastio", b"mmap-populate-threshold", default=b"1MB")
configitem(b"fastio", b"durable", default=False)
configitem(b"fastio", b"compress-ahead", default=False)
configitem(b"fastio", b"apply-workers", default=b"auto")
configitem(b"fastio", b"apply-memory", default=b"256MB")
# tests and the bench: syncfs, or an fsync per file (config.DURABLE_*)
configitem(b"devel", b"fastio.durable-method", default=b"auto")
# tests: the helper forced off (pure) or to start with a fallback method
configitem(b"devel", b"fastio.mmap-helper", default=b"auto")
# tests: small changegroups applied with the machinery too (changegroup)
configitem(b"devel", b"fastio.small-applies", default=True)
# tests: the files of smaller changegroups applied by workers too (parallel;
# the default measured: 1-revision files of one changeset, serial / workers
# 0.94 at 256 files, 0.93 at 512, 1.05 at 1024, 1.12 at 2048)
configitem(b"devel", b"fastio.parallel-min-files", default=1024)
# the bench: the population thread's priority (added to its nice value: 0
# to 19, above taken as 19, nice values stopping there)
configitem(b"devel", b"fastio.mmap-thread-nice", default=10)

cmdtable = {}
command = registrar.command(cmdtable)

# files hg debugfastio creates to time creates and closes
PROBE_FILES = 256


@command(
    b"debugfastio",
    [
        (b"", b"files", PROBE_FILES, _(b"number of files to probe with")),
        (b"", b"no-cache", None, _(b"do not store the measurement for auto mode")),
    ],
    b"[--files N] [--no-cache]",
    helpcategory=b"maintenance",
)
def debugfastio_command(ui, repo, **opts):
    """show fastio's settings and measure this repository's file latencies

    Prints the effective ``[fastio]`` settings, then creates, writes and
    closes ``--files`` small files in a temporary directory under ``.hg``
    (removed afterwards), times each create (``open()``) and ``close()``,
    prints their medians and 90th percentiles, and what ``auto`` mode
    chooses from the slower.  Unless ``--no-cache`` is given, the
    measurement is stored for ``auto`` mode (see ``fastio.probe-max-age``).
    """
    from .diag import debugfastio as implementation

    return implementation.run(ui, repo, **opts)


# hg < 6.7 (6.7 added util._re2_options): kept here, not in compat, which
# every command would then load.  util._re2_options appeared in 6.7.  On an older Mercurial the extension asks
# for 6.7, and Mercurial disables it with its own message; on a supported
# one the attribute is left out, which spares every command Mercurial's
# check of it (it imports mercurial.__version__ and compiles a regular
# expression: 0.77M instructions, measured)
if not hasattr(util, "_re2_options"):
    from . import metadata

    minimumhgversion = metadata.minimumhgversion


def __getattr__(name):
    # the rest of the metadata (metadata.py), read only where Mercurial asks
    # for it: hg version -v, hg debugextensions, a traceback's report
    if name in ("__version__", "testedwith", "buglink"):
        from . import metadata

        return getattr(metadata, name)
    # (Mercurial asks for a dozen optional names at load)
    raise AttributeError(name)


def extsetup(ui):
    # what the extension wraps, and when: wiring.py
    from . import wiring

    atexit.register(wiring.unwire)
    wiring.setup(ui)


def clone_command(orig, ui, *args, **opts):
    # fastio.durable flushes the checkout a clone ends with
    if not ui.configbool(b"fastio", b"durable"):
        return orig(ui, *args, **opts)
    from . import wiring

    with wiring.during("durable clone"):
        return orig(ui, *args, **opts)


def reposetup(ui, repo):
    # auto mode looks up the close latency of the filesystem a
    # backgroundclosing block writes to in the repository's .hg
    repovfs = getattr(repo, "vfs", None)
    if repovfs is None or not repo.local():
        return
    svfs = getattr(repo, "svfs", None)
    for vfs, role in (
        (getattr(repo, "wvfs", None), b"working copy files"),
        (svfs, b"store files"),
    ):
        if vfs is not None:
            vfs._fastio_repo = (repovfs, svfs, role)


# -- the wrappers of the modules every command loads -------------------------
#
# ``util`` (``mmapread``), ``dispatch`` (``runcommand``), ``vfs``
# (``backgroundclosing``), ``merge`` (the apply of an update's actions) and
# ``hgweb`` (``httpservice.run``, and the application classes once their
# modules load, for ``preload``) are loaded by every command, so their
# wiring runs in every ``hg status``: it must cost nothing more than the
# wrapping.  Each function imports the module doing the work when it is
# called and there is work.
#
# A function keeps its module's globals alive, and what they hold: this
# module's globals hold no module of the extension's machinery (a wrapper
# defined in ``sessions`` or ``vfsclose`` cost every ``hg status`` 1.5 ms
# at exit), and these wrappers are taken out at exit (``wiring.unwire``).
#
# A mapping the population policy leaves alone (below
# ``fastio.mmap-populate-threshold``: a small repository's) is mapped here
# as ``mmappolicy.map_file`` would map it, without beginning the command's
# session.


def apply_updates(orig, *args, **kwargs):
    from . import checkout

    return checkout.apply_updates(orig, *args, **kwargs)


def hgweb_applications():
    """The application classes of hgweb (hgweb_mod, hgwebdir_mod, or from
    7.2 the _inner modules they come from: hg <= 7.1 and 7.2 alike, by the
    names hgweb gives them): their first request is
    preceded by a preload once their module loads (``first_request`` must
    not run a lazy module's code in a request thread)."""
    from mercurial import hgweb

    from . import wiring

    for attr, cls in (("hgweb_mod", "hgweb"), ("hgwebdir_mod", "hgwebdir")):
        module = vars(hgweb).get(attr)
        if module is None:
            continue

        def wire_app(loaded, cls=cls):
            from .serve import preload

            preload.done()
            wiring.wire_found(
                "hgweb applications", getattr(loaded, cls), "__call__", first_request
            )

        wiring.when_loaded(wiring.name_of(module), wire_app)
    return []


def run_service(orig, self, *args, **kwargs):
    # hg serve: its application and listening socket are made, no request
    # thread runs yet
    from .serve import preload

    preload.once(self.ui)
    return orig(self, *args, **kwargs)


def first_request(orig, self, env, respond):
    from .serve import preload

    if not preload.done():
        preload.once(getattr(self, "ui", None))
    return orig(self, env, respond)


def mmapread(orig, fp, size=None, pre_populate=True):
    command = running_command()
    if command is not None and command.session is None:
        # before the command's first mapping that is the policy's: one that
        # is not is mapped here, as mmappolicy.map_file maps it
        rule = command.small_mappings
        if rule is None:
            rule = command.small_mappings = _small_mapping_rule(command.ui)
        if rule:
            data = map_outside_policy(orig, fp, size, pre_populate, *rule)
            if data is not None:
                return data
    from .mmap import sessions

    return sessions.mmapread(orig, fp, size, pre_populate)


# The mappings of store data the population policy leaves alone, defined
# here for the commands that map nothing else (a small repository's): the
# policy (``mmap.mmappolicy``) uses them too.

# the fastio.mmap-populate values; under the first two a mapping is stock's
# when the helper cannot populate (policy ``stock``)
MMAP_POLICIES = (b"auto", b"background", b"always", b"never")
_STOCK_WITHOUT_HELPER = MMAP_POLICIES[:2]


def map_outside_policy(orig, fp, size, pre_populate, threshold, stock):
    """The mapping of ``fp`` when it is not the policy's (asked not to be
    populated, or smaller than ``threshold``): stock's own mapping when
    the policy is ``stock``, else an unpopulated one; None when it is the
    policy's."""
    if pre_populate:
        import os

        try:
            length = size
            if length is None:
                length = os.fstat(fp if isinstance(fp, int) else fp.fileno()).st_size
        except (OSError, AttributeError, ValueError):
            length = 0
        if length >= threshold:
            return None
        if stock:
            return orig(fp, size)
    return map_unpopulated(orig, fp, size)


def _small_mapping_rule(ui):
    """``(threshold, stock)`` of the policy ``ui`` asks for (read as
    ``config.mmap_policy`` reads it: a wrong value is left to it, to say),
    or False."""
    requested = ui.config(b"fastio", b"mmap-populate").strip().lower()
    if requested not in MMAP_POLICIES:
        return False
    helper = ui.config(b"devel", b"fastio.mmap-helper").strip().lower()
    threshold = max(0, ui.configbytes(b"fastio", b"mmap-populate-threshold"))
    ui.configint(b"devel", b"fastio.mmap-thread-nice")
    stock = requested in _STOCK_WITHOUT_HELPER and (
        helper == b"pure" or not _helper_built()
    )
    return threshold, stock


def _helper_built():
    # whether mmappolicy finds _populate, without loading it (one that is
    # there but fails to load counts as built here); looked for on the
    # package's path only (where the import finds it): the finders of
    # sys.meta_path, Mercurial's lazy ones first, take 5 times as long
    import importlib.machinery
    import sys

    package = __package__ + ".mmap"
    path = [sys.modules[__package__].__path__[0] + "/mmap"]
    spec = importlib.machinery.PathFinder.find_spec(package + "._populate", path)
    return spec is not None


# hg <= 6.8 (6.9 added pre_populate): here, not in compat, which every
# command mapping a file would then load
def map_unpopulated(orig, fp, size):
    """Stock's mapping of ``fp``, not populated: 7.2's ``pre_populate=False``,
    nothing on 6.7 (no such parameter), told from stock's function's code
    where it is a plain function (loading compat costs more than the
    mapping), else by ``compat.map_unpopulated``."""
    code = getattr(orig, "__code__", None)
    if code is None:
        from . import compat

        return compat.map_unpopulated(orig, fp, size)
    if "pre_populate" in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]:
        return orig(fp, size, pre_populate=False)
    return orig(fp, size)


class RunningCommand:
    """A command ``dispatch.runcommand`` is running: its ui, and the mmap
    population session it began at its first mapping (``sessions``)."""

    __slots__ = ("ui", "session", "small_mappings")

    def __init__(self, ui):
        self.ui = ui
        self.session = None
        # (threshold, stock): how mappings not the policy's are mapped
        # before the session begins (False: by the session)
        self.small_mappings = None


# the commands running, innermost last (chg and the command server run one
# at a time, but a command may run another through dispatch); empty when
# no command runs
_running = []


def running_command():
    return _running[-1] if _running else None


def runcommand(orig, lui, repo, *args, **kwargs):
    command = RunningCommand(repo.ui if repo is not None else lui)
    _running.append(command)
    try:
        return orig(lui, repo, *args, **kwargs)
    finally:
        _running.remove(command)
        if command.session is not None:
            # no population job outlives its command
            from .mmap import sessions

            sessions.end_command(command.session)


def backgroundclosing(orig, self, ui, *args, **kwargs):
    from .writer import vfsclose

    return vfsclose.backgroundclosing(orig, self, ui, *args, **kwargs)
