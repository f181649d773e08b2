"""Test helper: makes Mercurial's internals look like those of an untested
release, before fastio's extsetup looks at them.

``breakinternals.stream``: ``signature`` (consumev2 takes one more
argument) or ``missing`` (no consumev1); ``breakinternals.closing``:
``signature`` (backgroundclosing takes one more argument).
"""

from mercurial import registrar, streamclone, vfs as vfsmod

configtable = {}
configitem = registrar.configitem(configtable)
configitem(b"breakinternals", b"stream", default=None)
configitem(b"breakinternals", b"closing", default=None)


def uisetup(ui):
    stream = ui.config(b"breakinternals", b"stream")
    if stream == b"signature":
        orig_v2 = streamclone.consumev2

        def consumev2(repo, fp, filecount, filesize, options=None):
            return orig_v2(repo, fp, filecount, filesize)

        streamclone.consumev2 = consumev2
    elif stream == b"missing":
        del streamclone.consumev1
    if ui.config(b"breakinternals", b"closing") == b"signature":
        orig_closing = vfsmod.abstractvfs.backgroundclosing

        def backgroundclosing(self, ui, expectedcount=-1, options=None):
            return orig_closing(self, ui, expectedcount)

        vfsmod.abstractvfs.backgroundclosing = backgroundclosing
