"""Version and compatibility metadata of the extension (one place for both)."""

__version__ = "0.1.0"
# Releases the whole test suite ran on. Update together with compat.py.
testedwith = b"6.7.4 6.8.2 6.9.5 7.0.3 7.1.2 7.2.4"
minimumhgversion = b"6.7"
buglink = b"https://foss.heptapod.net/mercurial/hg-fastio/issues"
