"""Take uncompressed bundles apart and put them back together, changed.

Used by the hostile-name test (``test-hostile.t``) and the fuzzer
(``bench/stress.py``).  It knows, from their published layout:

- packed1 stream bundles (``debugcreatestreamclonebundle``): ``HGS1UN``, a
  file count and byte count (big-endian 64-bit), a 16-bit length and the
  NUL-terminated requirements, then per file a ``name NUL size LF`` line and
  ``size`` bytes;
- bundle2 containers (``HG20``, no compression): stream parameters, then
  parts (a header of type, id and parameters; a payload in length-prefixed
  chunks), ended by an empty part header;
- the ``stream2`` payload: per file a location byte, the name length and
  the data length as unsigned LEB128 varints, the name and the data;
- the ``stream3-exp`` payload: the number of entries, then per entry the
  number of its files and the files as in ``stream2``;
- packed changegroups (``HG10UN`` bundles, bundle2 ``changegroup`` parts):
  a flat series of chunks, each a big-endian 32-bit length (counting itself)
  and data, an empty chunk ending each group.

Command line (what the cram tests use)::

    bundlekit.py rename IN OUT INDEX NAME   # file INDEX (negative: from the
                                            # end) gets NAME (\\0, \\n, \\r
                                            # escapes allowed)
    bundlekit.py files IN                   # list the files (location, name)
    bundlekit.py add IN OUT SRC NAME DATA   # a file more, first: location SRC
                                            # (s: store, c: cache), content
                                            # read from file DATA
"""

import struct
import sys

# -- varints ------------------------------------------------------------------


def uvarint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def read_uvarint(data, pos):
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


# -- bundle2 ------------------------------------------------------------------


class Part:
    def __init__(self, ptype, pid, mandatory, advisory, payload):
        self.type = ptype
        self.id = pid
        self.mandatory = mandatory  # lists of (key, value)
        self.advisory = advisory
        self.payload = payload

    def header(self):
        out = [bytes([len(self.type)]), self.type, struct.pack(">I", self.id)]
        out.append(bytes([len(self.mandatory), len(self.advisory)]))
        params = self.mandatory + self.advisory
        for key, value in params:
            out.append(bytes([len(key), len(value)]))
        for key, value in params:
            out.append(key + value)
        return b"".join(out)

    def set_param(self, key, value):
        for group in (self.mandatory, self.advisory):
            for i, (k, __) in enumerate(group):
                if k == key:
                    group[i] = (key, value)


class Bundle2:
    def __init__(self, params, parts):
        self.params = params
        self.parts = parts

    @classmethod
    def parse(cls, data):
        if data[:4] != b"HG20":
            raise ValueError("not a bundle2")
        (size,) = struct.unpack(">i", data[4:8])
        params = data[8 : 8 + size]
        pos = 8 + size
        parts = []
        while True:
            (hsize,) = struct.unpack(">i", data[pos : pos + 4])
            pos += 4
            if not hsize:
                break
            header = data[pos : pos + hsize]
            pos += hsize
            tlen = header[0]
            ptype = header[1 : 1 + tlen]
            p = 1 + tlen
            (pid,) = struct.unpack(">I", header[p : p + 4])
            p += 4
            nman, nadv = header[p], header[p + 1]
            p += 2
            sizes = []
            for __ in range(nman + nadv):
                sizes.append((header[p], header[p + 1]))
                p += 2
            kv = []
            for ks, vs in sizes:
                kv.append((header[p : p + ks], header[p + ks : p + ks + vs]))
                p += ks + vs
            chunks = []
            while True:
                (csize,) = struct.unpack(">i", data[pos : pos + 4])
                pos += 4
                if csize == 0:
                    break
                if csize < 0:
                    raise ValueError("interrupt chunks are not handled")
                chunks.append(data[pos : pos + csize])
                pos += csize
            parts.append(Part(ptype, pid, kv[:nman], kv[nman:], b"".join(chunks)))
        return cls(params, parts)

    def build(self, chunk=4096):
        out = [b"HG20", struct.pack(">i", len(self.params)), self.params]
        for part in self.parts:
            header = part.header()
            out.append(struct.pack(">i", len(header)))
            out.append(header)
            payload = part.payload
            for i in range(0, len(payload), chunk):
                piece = payload[i : i + chunk]
                out.append(struct.pack(">i", len(piece)))
                out.append(piece)
            out.append(struct.pack(">i", 0))
        out.append(struct.pack(">i", 0))
        return b"".join(out)

    def part(self, *types):
        for part in self.parts:
            if part.type.lower() in types:
                return part
        raise ValueError("no %r part" % (types,))


# -- stream payloads ------------------------------------------------------------


class File:
    __slots__ = ("src", "name", "data")

    def __init__(self, src, name, data):
        self.src = src
        self.name = name
        self.data = data


def parse_v2_files(payload, pos, count):
    files = []
    for __ in range(count):
        src = payload[pos : pos + 1]
        namelen, pos = read_uvarint(payload, pos + 1)
        datalen, pos = read_uvarint(payload, pos)
        name = payload[pos : pos + namelen]
        pos += namelen
        files.append(File(src, name, payload[pos : pos + datalen]))
        pos += datalen
    return files, pos


def build_v2_file(f):
    return b"".join([f.src, uvarint(len(f.name)), uvarint(len(f.data)), f.name, f.data])


class StreamBundle:
    """A stream bundle of any version as a list of files (and, for v3, how
    they group into entries)."""

    def __init__(self, version, files, groups=None, bundle=None, requires=b""):
        self.version = version
        self.files = files
        self.groups = groups  # v3: number of files of each entry
        self.bundle = bundle  # v2, v3: the Bundle2 around the payload
        self.requires = requires  # v1

    @classmethod
    def parse(cls, data):
        if data[:6] == b"HGS1UN":
            count, __ = struct.unpack(">QQ", data[6:22])
            (rlen,) = struct.unpack(">H", data[22:24])
            requires = data[24 : 24 + rlen]
            pos = 24 + rlen
            files = []
            for __ in range(count):
                end = data.index(b"\n", pos)
                name, size = data[pos:end].split(b"\0")
                size = int(size)
                files.append(File(b"s", name, data[end + 1 : end + 1 + size]))
                pos = end + 1 + size
            return cls(1, files, requires=requires)
        bundle = Bundle2.parse(data)
        for part in bundle.parts:
            ptype = part.type.lower()
            if ptype == b"stream2":
                count = int(dict(part.mandatory + part.advisory)[b"filecount"])
                files, __ = parse_v2_files(part.payload, 0, count)
                return cls(2, files, bundle=bundle)
            if ptype == b"stream3-exp":
                payload = part.payload
                entries, pos = read_uvarint(payload, 0)
                files, groups = [], []
                for __ in range(entries):
                    nfiles, pos = read_uvarint(payload, pos)
                    more, pos = parse_v2_files(payload, pos, nfiles)
                    files.extend(more)
                    groups.append(nfiles)
                return cls(3, files, groups=groups, bundle=bundle)
        raise ValueError("not a stream bundle")

    def payload(self):
        """The stream itself (v1: after the header)."""
        if self.version == 1:
            return b"".join(
                b"%s\0%d\n%s" % (f.name, len(f.data), f.data) for f in self.files
            )
        if self.version == 2:
            return b"".join(build_v2_file(f) for f in self.files)
        out = [uvarint(len(self.groups))]
        files = list(self.files)
        for n in self.groups:
            out.append(uvarint(n))
            # a group count may lie (mutations): it then takes what is left
            out.extend(build_v2_file(f) for f in files[:n])
            del files[:n]
        return b"".join(out)

    def build(self, payload=None, filecount=None, bytecount=None):
        """The bundle, with its counts recomputed (or as given) around
        ``payload`` (default: the files')."""
        if payload is None:
            payload = self.payload()
        if filecount is None:
            filecount = len(self.files)
        if bytecount is None:
            bytecount = sum(len(f.data) for f in self.files)
        if self.version == 1:
            header = b"HGS1UN" + struct.pack(">QQ", filecount, bytecount)
            header += struct.pack(">H", len(self.requires)) + self.requires
            return header + payload
        part = self.bundle.part(b"stream2", b"stream3-exp")
        part.payload = payload
        if self.version == 2:
            part.set_param(b"filecount", b"%d" % filecount)
            part.set_param(b"bytecount", b"%d" % bytecount)
        return self.bundle.build()


# -- changegroups ----------------------------------------------------------------


class Changegroup:
    """A changegroup bundle: ``HG10UN`` + payload, or a bundle2 whose
    ``changegroup`` part is the payload."""

    def __init__(self, payload, bundle=None):
        self.payload = payload
        self.bundle = bundle

    @classmethod
    def parse(cls, data):
        if data[:6] == b"HG10UN":
            return cls(data[6:])
        bundle = Bundle2.parse(data)
        return cls(bundle.part(b"changegroup").payload, bundle)

    def build(self, payload=None):
        if payload is None:
            payload = self.payload
        if self.bundle is None:
            return b"HG10UN" + payload
        self.bundle.part(b"changegroup").payload = payload
        return self.bundle.build()

    def chunks(self):
        """``(offset, length)`` of every chunk header of the payload."""
        out = []
        pos = 0
        data = self.payload
        while pos + 4 <= len(data):
            (length,) = struct.unpack(">i", data[pos : pos + 4])
            out.append((pos, length))
            pos += max(length, 4)
        return out

    def name_chunks(self):
        """Offsets of the chunks holding file names (the first chunk of
        each group after the changelog and manifest groups)."""
        chunks = self.chunks()
        empties = 0
        names = []
        for i, (pos, length) in enumerate(chunks):
            if length in (0, 4):
                empties += 1
                if empties >= 2 and i + 1 < len(chunks) and chunks[i + 1][1] > 4:
                    names.append(chunks[i + 1])
        return names


def unescape(text):
    return (
        text.encode("utf-8", "surrogateescape")
        .replace(b"\\0", b"\0")
        .replace(b"\\n", b"\n")
        .replace(b"\\r", b"\r")
    )


def main(argv):
    cmd = argv[0]
    with open(argv[1], "rb") as f:
        data = f.read()
    sb = StreamBundle.parse(data)
    if cmd == "files":
        for f in sb.files:
            print("%s %s" % (f.src.decode(), f.name.decode("utf-8", "replace")))
        return 0
    if cmd == "rename":
        index = int(argv[3])
        sb.files[index].name = unescape(argv[4])
        with open(argv[2], "wb") as f:
            f.write(sb.build())
        return 0
    if cmd == "add":
        with open(argv[5], "rb") as f:
            content = f.read()
        sb.files.insert(0, File(argv[3].encode(), unescape(argv[4]), content))
        if sb.groups is not None:
            sb.groups.insert(0, 1)
        with open(argv[2], "wb") as f:
            f.write(sb.build())
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
