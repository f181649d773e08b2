"""Test extension: something goes wrong while one file's revisions are
added (``filelog.addgroup``), in whichever process adds them (a worker of
fastio's parallel apply, or the applying process).

  [workerfault]
  file = NAME          the file whose group it happens at
  action = raise       a storage error ("injected failure at NAME")
           kill        the process adding it is killed (SIGKILL)
           killparent  the applying process is killed (from a worker), then
                       the worker goes on slowly (its death is the test)
           interrupt   the applying process gets SIGINT (from a worker)
  $WORKERFAULT_LOG, if set, gets "pid name" of every group added
"""

import os
import signal
import time

from mercurial import error, extensions, filelog, registrar

configtable = {}
configitem = registrar.configitem(configtable)
configitem(b"workerfault", b"file", default=None)
configitem(b"workerfault", b"action", default=None)


def _addgroup(orig, self, *args, **kwargs):
    ui = _ui[0]
    name = self._revlog.radix[len(b"data/") :]
    action = ui.config(b"workerfault", b"action")
    log = os.environ.get("WORKERFAULT_LOG")
    if log:
        with open(log, "ab") as fp:
            fp.write(b"%d %s\n" % (os.getpid(), name))
    if name == ui.config(b"workerfault", b"file"):
        if action == b"raise":
            raise error.StorageError(b"injected failure at %s" % name)
        if action == b"kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if action == b"killparent":
            os.kill(os.getppid(), signal.SIGKILL)
            for _ in range(100):
                time.sleep(0.1)
        if action == b"interrupt":
            os.kill(os.getppid(), signal.SIGINT)
            time.sleep(2)
    return orig(self, *args, **kwargs)


_ui = [None]


def uisetup(ui):
    _ui[0] = ui
    extensions.wrapfunction(filelog.filelog, "addgroup", _addgroup)


def reposetup(ui, repo):
    _ui[0] = ui
