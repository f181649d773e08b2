"""mkmany.py DIR COUNT [REV]: write COUNT small files in DIR (30 dirs),
contents depending on REV (for the cram tests' larger repositories)."""

import os
import sys

top, count = sys.argv[1], int(sys.argv[2])
rev = sys.argv[3] if len(sys.argv) > 3 else "0"
for i in range(count):
    d = os.path.join(top, "d%02d" % (i % 30))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%05d" % i), "w") as f:
        f.write("file %d rev %s\n" % (i, rev) * (1 + i % 7))
