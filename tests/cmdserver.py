"""Run hg commands one after the other in one command server
(``hg serve --cmdserver pipe``, the protocol IDEs and other tools speak),
started outside any repository: each command's output and its exit code,
then the server's.

usage: cmdserver.py 'ARG ARG ...' ['ARG ARG ...' ...]
(arguments split at spaces; -R REPO in each)
"""

import struct
import subprocess
import sys


def read_channel(stream):
    header = stream.read(5)
    if len(header) < 5:
        sys.exit("cmdserver.py: the server closed its output")
    return struct.unpack(">cI", header)


def main(commands):
    server = subprocess.Popen(
        ["hg", "serve", "--cmdserver", "pipe"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    channel, length = read_channel(server.stdout)
    server.stdout.read(length)  # the hello message
    out = sys.stdout.buffer
    for command in commands:
        data = b"\0".join(command.encode().split(b" "))
        server.stdin.write(b"runcommand\n" + struct.pack(">I", len(data)) + data)
        server.stdin.flush()
        while True:
            channel, length = read_channel(server.stdout)
            if channel == b"r":
                code = struct.unpack(">i", server.stdout.read(length))[0]
                out.write(b"exit %d\n" % code)
                break
            if channel.isupper():
                # input asked for (I, L) or an unknown required channel
                sys.exit("cmdserver.py: channel %r not handled" % channel)
            data = server.stdout.read(length)
            if channel in (b"o", b"e"):
                out.write(data)
        out.flush()
    server.stdin.close()
    out.write(b"server exit %d\n" % server.wait())


if __name__ == "__main__":
    main(sys.argv[1:])
