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
stray file, and ``hg recover`` cleans up after a crash.

Every ``vfs.backgroundclosing`` block of Mercurial (working copy updates,
among others) uses the extension's closer instead of stock's, so that a
failing close always aborts the command.

Background closing
==================

A close is timed as it happens.  In ``auto`` mode (the default) files are
closed inline until the median close of a sample is slower than
``fastio.slow-close-threshold``; then background threads take over, as many
as needed to keep up with the writer (they grow when the queue of pending
closes is full).  Fast local filesystems never pay for threads.

Configuration
=============

``fastio.background-close``
  ``auto`` (default), ``always`` or ``never``.

``fastio.slow-close-threshold``
  Median close time above which ``auto`` goes to the background, with a
  unit (``ns``, ``us``, ``ms``, ``s``; a bare number is microseconds).
  Default: ``50us``.

``fastio.close-sample``
  Number of closes timed for each decision. Default: 16.

``fastio.close-threads``
  Fixed number of closing threads; 0 derives it from the measured close
  latency. Default: 0.

``fastio.max-close-threads``
  Upper bound on closing threads. Default: 64.

``fastio.max-pending-closes``
  Upper bound on files written but not yet closed; keeps well below the
  512 descriptors Windows allows by default. Default: 256.

``fastio.buffer-size``
  Size of the blocks bundles are read in. Default: ``1MB``.

``fastio.stream-writer``
  Use the fast store writer for stream clones (default: yes); ``no``
  falls back to Mercurial's own code (the closer is still used).

``fastio.report``
  Print, at the end of each accelerated operation, what it did: files and
  bytes written, closes done in background, time spent waiting for them.
  Lines start with ``fastio:`` and go to stderr. Default: no.
"""

from mercurial import exthelper

from . import (
    compat,
    config,
    metadata,
    streamclone,
    vfsclose,
)

__version__ = metadata.__version__
testedwith = metadata.testedwith
minimumhgversion = metadata.minimumhgversion
buglink = metadata.buglink

eh = exthelper.exthelper()
for _module in (config, streamclone, vfsclose):
    eh.merge(_module.eh)


@eh.extsetup
def _report_unsupported(ui):
    # after the modules' own extsetup: one line for whatever they skipped
    compat.report_unsupported(ui)


cmdtable = eh.cmdtable
configtable = eh.configtable
uisetup = eh.finaluisetup
extsetup = eh.finalextsetup
reposetup = eh.finalreposetup
