The extension loads by path (as in $HGRCPATH here) and as an installed
package of the hgext3rd namespace.

  $ hg help -e fastio | head -3
  fastio extension - write many files fast: stream clones, unbundles, background
  closes
  
  $ hg --config extensions.fastio=! --config extensions.fastio= help -e fastio | head -1
  fastio extension - write many files fast: stream clones, unbundles, background
  $ $PYTHON -c "import hgext3rd.fastio, sys; sys.stdout.write(hgext3rd.fastio.minimumhgversion.decode() + '\n')"
  6.7

Every option is registered and documented

  $ $PYTHON - <<'PY'
  > import hgext3rd.fastio as f
  > names = sorted(k.decode() for k in f.configtable[b'fastio'])
  > missing = [n for n in names if '``fastio.%s``' % n not in f.__doc__]
  > print(len(names), 'options', 'missing from help:', missing)
  > PY
  10 options missing from help: []

Silent by default: a clone prints what stock prints

  $ hg init repo
  $ echo a > repo/a
  $ hg -R repo commit -qAm a
  $ hg -R repo bundle -q -a -t 'none-v2;stream=v2' s.hg
  $ hg init with; hg -R with unbundle s.hg > with.out 2>&1
  $ hg init without; hg --config extensions.fastio=! -R without unbundle s.hg > without.out 2>&1
  $ sed 's/in [0-9.]* seconds ([^)]*)/in X/' with.out > a; sed 's/in [0-9.]* seconds ([^)]*)/in X/' without.out > b; cmp a b && cat a
  7 files to transfer, 403 bytes of data
  stream-cloned 7 files / 403 bytes in X
  new changesets * (glob)
  (run 'hg update' to get a working copy)
