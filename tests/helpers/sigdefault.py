"""sigdefault.py CMD ARGS...: run CMD with SIGINT handled by default (a shell
starts background jobs with it ignored)."""

import os
import signal
import sys

signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])
