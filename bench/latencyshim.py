"""The latency shim (``latency.c``): built with gcc into ``workdir`` once,
again when its source is newer.  Preloaded (``LD_PRELOAD``), it sleeps
before each create, mkdir, close, read or write call its environment asks
it to delay (see ``latency.c``)."""

import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))


def build(workdir, name="latency.so"):
    so = os.path.join(workdir, name)
    src = os.path.join(HERE, "latency.c")
    if not os.path.exists(so) or os.path.getmtime(so) < os.path.getmtime(src):
        subprocess.run(
            ["gcc", "-O2", "-shared", "-fPIC", "-o", so, src, "-ldl"], check=True
        )
    return so
