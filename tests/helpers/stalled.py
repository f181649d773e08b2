"""stalled.py BUNDLE SIGNAL HGARGS...: run ``hg HGARGS... /dev/stdin`` with
the first 60% of BUNDLE coming through a pipe that then stays open and
silent (a hung server), send one SIGNAL (INT or TERM) 2 s later, and say
whether hg ended within 5 s, with its exit code and output."""

import os
import signal
import subprocess
import sys
import threading
import time

bundle, signame = sys.argv[1:3]
with open(bundle, "rb") as f:
    data = f.read()
data = data[: len(data) * 6 // 10]
read_end, write_end = os.pipe()
hg = subprocess.Popen(
    ["hg"] + sys.argv[3:] + ["/dev/stdin"],
    stdin=read_end,
    stdout=subprocess.PIPE,
    stderr=subprocess.STDOUT,
    # (a shell starts background jobs with SIGINT ignored)
    preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
)
os.close(read_end)
threading.Thread(target=os.write, args=(write_end, data), daemon=True).start()
time.sleep(2)
hg.send_signal(getattr(signal, "SIG" + signame))
try:
    out = hg.communicate(timeout=5)[0]
except subprocess.TimeoutExpired:
    hg.kill()
    out = hg.communicate()[0]
    print("still running 5 s after one SIG%s" % signame)
else:
    print("exit %d within 5 s of one SIG%s" % (hg.returncode, signame))
os.close(write_end)
sys.stdout.write(out.decode())
