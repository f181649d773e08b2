# Appended by `make test-upstream` to Mercurial's tests/common-pattern.py,
# the output substitutions its harness applies to every test (it reads no
# other file).  The harness enables the extension in every hg it runs
# (--extra-config-opt writes it into $HGRCPATH): listings of enabled
# extensions show it where stock shows nothing.  These take it out of
# those listings, and nothing else.
substitutions += [
    # `hg config extensions` listing the extension alone: stock lists
    # nothing and exits 1 (the harness echoes each command's exit code on
    # the SALT line after its output)
    (
        rb"(?m)^(SALT\d+ \d+ \d+\n)extensions\.fastio=[^\n]*\n(SALT\d+ \d+) 0$",
        rb"\1\2 1",
    ),
    # ... or with others
    (rb"(?m)^extensions\.fastio=[^\n]*\n", b""),
    # `hg debugextensions` (no test of Mercurial's prints the word: the
    # line can only be the extension's name in a listing)
    (rb"(?m)^fastio\n", b""),
]
