Run by `make test-upstream` with Mercurial's own tests, in their harness:
the extension is on in every hg invocation, and accelerates.

  $ hg config extensions.fastio
  */hgext3rd/fastio (glob)
  $ hg help -e fastio | head -1
  fastio extension - write many files fast: stream clones, unbundles, background
  $ hg init src
  $ echo a > src/a
  $ hg -R src commit -qAm a
  $ hg -R src bundle -q -a -t 'none-v2;stream=v2' s.hg
  $ hg init dst
  $ hg -R dst unbundle -q s.hg --config fastio.report=yes 2>&1 | grep '^fastio: files'
  fastio: files written: * (glob)
  $ hg -R dst verify -q
