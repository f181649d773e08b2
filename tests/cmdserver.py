"""Run hg commands one after the other in one command server
(``hg serve --cmdserver pipe``, the protocol IDEs and other tools speak),
started outside any repository: each command's output and its exit code,
then the server's.

usage: cmdserver.py 'ARG ARG ...' ['ARG ARG ...' ...]
(arguments split at spaces; -R REPO in each)

:class:`CommandServer` is the client for scripts that keep one server
(bench/cmdserver_growth.py, tests/test_cmdserver_growth.py).
"""

import struct
import subprocess
import sys


class ServerGone(Exception):
    pass


def read_channel(stream):
    header = stream.read(5)
    if len(header) < 5:
        raise ServerGone("cmdserver.py: the server closed its output")
    return struct.unpack(">cI", header)


class CommandServer:
    """One ``hg serve --cmdserver pipe`` process (``hg`` is the command
    that starts it, ``env`` and ``cwd`` its environment)."""

    def __init__(self, hg=("hg",), env=None, cwd=None):
        self.process = subprocess.Popen(
            list(hg) + ["serve", "--cmdserver", "pipe"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            cwd=cwd,
        )
        channel, length = read_channel(self.process.stdout)
        self.process.stdout.read(length)  # the hello message

    @property
    def pid(self):
        return self.process.pid

    def runcommand(self, args, out=None):
        """Run one command (a list of str or bytes arguments); its output
        (channels o and e) goes to ``out.write`` as it comes.  Returns its
        exit code."""
        args = [a.encode() if isinstance(a, str) else a for a in args]
        data = b"\0".join(args)
        stdin, stdout = self.process.stdin, self.process.stdout
        stdin.write(b"runcommand\n" + struct.pack(">I", len(data)) + data)
        stdin.flush()
        while True:
            channel, length = read_channel(stdout)
            if channel == b"r":
                return struct.unpack(">i", stdout.read(length))[0]
            if channel.isupper():
                # input asked for (I, L) or an unknown required channel
                raise ServerGone("cmdserver.py: channel %r not handled" % channel)
            data = stdout.read(length)
            if channel in (b"o", b"e") and out is not None:
                out.write(data)

    def close(self):
        """End the server (its input closed); its exit code."""
        self.process.stdin.close()
        code = self.process.wait()
        self.process.stdout.close()
        return code


def main(commands):
    out = sys.stdout.buffer
    try:
        server = CommandServer()
        for command in commands:
            code = server.runcommand(command.encode().split(b" "), out)
            out.write(b"exit %d\n" % code)
            out.flush()
    except ServerGone as exc:
        sys.exit(str(exc))
    out.write(b"server exit %d\n" % server.close())


if __name__ == "__main__":
    main(sys.argv[1:])
