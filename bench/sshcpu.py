#!/usr/bin/env python3
"""ssh for the changegroup bench: ``fixtures/dummyssh`` (the remote command
run locally) in a process the client never reaps.

The client's CPU figure is ``wait4``'s, which counts the processes the
client reaped; Mercurial does not wait for its ssh process, but may reap
it, so the server's time would be in the figure or not.  Here the process
the client starts leaves at once, and a forked child (an orphan once its
parent has left, the client's pipes in hand) runs dummyssh and the server;
when they are done it writes their CPU time and ``done`` to the file
$FASTIO_BENCH_SSH_CPU, which the bench waits for before the next run.

usage: sshcpu.py user@dummy 'hg -R repo serve --stdio'
"""

import os
import subprocess
import sys

DUMMYSSH = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "dummyssh"
)

if os.fork():
    os._exit(0)
proc = subprocess.Popen([sys.executable, DUMMYSSH] + sys.argv[1:])
__, status, usage = os.wait4(proc.pid, 0)
path = os.environ.get("FASTIO_BENCH_SSH_CPU")
if path:
    with open(path + ".tmp", "w") as f:
        f.write("%.6f done\n" % (usage.ru_utime + usage.ru_stime))
    os.rename(path + ".tmp", path)
sys.exit(os.waitstatus_to_exitcode(status))
