import os

from setuptools import Extension, setup

here = os.path.dirname(os.path.abspath(__file__))


def version():
    meta = {}
    with open(os.path.join(here, "hgext3rd", "fastio", "metadata.py")) as f:
        exec(f.read(), meta)
    return meta["__version__"]


with open(os.path.join(here, "README.rst")) as f:
    long_description = f.read()

setup(
    name="hg-fastio",
    version=version(),
    description="Mercurial extension: fast, safe writing of many files "
    "(stream clones, unbundles, background closes)",
    long_description=long_description,
    long_description_content_type="text/x-rst",
    license="GPL-2.0-or-later",
    packages=["hgext3rd", "hgext3rd.fastio"],
    python_requires=">=3.8",
    # optional: without a compiler the closer uses os.close, the name
    # pre-scan walks in Python and mmap population is stock's
    ext_modules=[
        Extension(
            "hgext3rd.fastio._fdclose",
            ["hgext3rd/fastio/_fdclose.c"],
            optional=True,
        ),
        Extension(
            "hgext3rd.fastio._streamscan",
            ["hgext3rd/fastio/_streamscan.c"],
            optional=True,
        ),
        Extension(
            "hgext3rd.fastio._populate",
            ["hgext3rd/fastio/_populate.c"],
            optional=True,
        ),
    ],
    classifiers=[
        "Programming Language :: Python :: 3",
        "Topic :: Software Development :: Version Control :: Mercurial",
        "License :: OSI Approved :: GNU General Public License v2 or later (GPLv2+)",
    ],
)
