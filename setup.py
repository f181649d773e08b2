"""The C helpers, optional: without a compiler (or where one fails) the
extension uses its pure Python fallbacks (pyproject.toml has the rest)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        # the file writer's pool of threads that never take the GIL
        Extension(
            "hgext3rd.fastio.writer._writepool",
            ["hgext3rd/fastio/writer/_writepool.c"],
            optional=True,
        ),
        # the stream name pre-scan's walk over plain records
        Extension(
            "hgext3rd.fastio.apply._streamscan",
            ["hgext3rd/fastio/apply/_streamscan.c"],
            optional=True,
        ),
        # mmap population off the GIL (fastio.mmap-populate)
        Extension(
            "hgext3rd.fastio.mmap._populate",
            ["hgext3rd/fastio/mmap/_populate.c"],
            optional=True,
        ),
    ],
)
