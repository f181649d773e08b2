Stream clones through the extension: http, ssh, bundles, v1/v2/v3.

  $ . "$TESTDIR/../helpers/common.sh"
  $ mkrepo src
  $ hg -R src log -T '{rev} {desc}\n'
  1 two
  0 one

Serve it over http

  $ hgserve -R src -p $HGPORT

Stream v2 clone over http, with the report

  $ hg clone -q --stream --config fastio.report=yes http://localhost:$HGPORT clone-http 2>&1 | grep -E '^fastio: (files|closes)'
  fastio: files written: 30
  fastio: closes: 30, in background: 30, threads: * (glob)
  fastio: files written: 24
  fastio: closes: 24, in background: 0, threads: 0
  $ hg -R clone-http verify -q
  $ storecompare src clone-http
  stores identical: 29 files

Stream v2 clone over ssh

  $ hg clone --stream ssh://user@dummy/src clone-ssh
  streaming all changes
  * files to transfer, * of data (glob)
  (stream-cloned [0-9]+ files / |transferred )[^ ]+ [^ ]+ in [0-9.]+ seconds \(.*/sec\) (re)
  updating to branch default
  24 files updated, 0 files merged, 0 files removed, 0 files unresolved
  $ hg -R clone-ssh verify -q
  $ storecompare src clone-ssh
  stores identical: 29 files

Stream v3 over ssh

  $ printf '[experimental]\nstream-v3 = yes\n' > src/.hg/hgrc
  $ hg clone -q --stream --config experimental.stream-v3=yes ssh://user@dummy/src clone-v3
  $ hg -R clone-v3 verify -q
  $ storecompare src clone-v3
  stores identical: 29 files

Legacy (v1) stream clone over ssh and http

  $ printf '[server]\nbundle2.stream = no\n' > src/.hg/hgrc
  $ hg clone --stream ssh://user@dummy/src clone-v1-ssh
  streaming all changes
  * files to transfer, * of data (glob)
  (stream-cloned [0-9]+ files / |transferred )[^ ]+ [^ ]+ in [0-9.]+ seconds \(.*/sec\) (re)
  searching for changes
  no changes found
  updating to branch default
  24 files updated, 0 files merged, 0 files removed, 0 files unresolved
  $ hg -R clone-v1-ssh verify -q
  $ storecompare src clone-v1-ssh
  stores identical: 29 files
  $ killdaemons
  $ hgserve -R src -p $HGPORT
  $ hg clone -q --stream http://localhost:$HGPORT clone-v1-http
  $ hg -R clone-v1-http verify -q
  $ storecompare src clone-v1-http
  stores identical: 29 files
  $ rm src/.hg/hgrc

Stream bundles: v1 (packed1), v2 and v3 applied to empty repositories

  $ hg -R src debugcreatestreamclonebundle packed1.hg
  writing * bytes for * files (glob)
  bundle requirements: * (glob)
  $ hg init applied-v1
  $ hg -R applied-v1 debugapplystreamclonebundle packed1.hg
  * files to transfer, * of data (glob)
  (stream-cloned [0-9]+ files / |transferred )[^ ]+ [^ ]+ in [0-9.]+ seconds \(.*/sec\) (re)
  $ hg -R applied-v1 verify -q
  $ storecompare src applied-v1
  stores identical: 29 files

  $ hg -R src bundle -q -a -t 'none-v2;stream=v2' v2.hg
  $ hg init applied-v2
  $ hg -R applied-v2 unbundle -q v2.hg
  $ hg -R applied-v2 verify -q
  $ storecompare src applied-v2
  stores identical: 29 files

  $ hg -R src bundle -q -a -t 'none-v2;stream=v3-exp' --config experimental.stream-v3=yes v3.hg
  $ hg init applied-v3
  $ hg -R applied-v3 unbundle -q v3.hg --config experimental.stream-v3=yes
  $ hg -R applied-v3 verify -q
  $ storecompare src applied-v3
  stores identical: 29 files

Stock's threaded stream consumer option still works

  $ hg init applied-threaded
  $ hg -R applied-threaded unbundle -q v2.hg --config worker.parallel-stream-bundle-processing=yes --config worker.parallel-stream-bundle-processing.num-writer=2
  $ hg -R applied-threaded verify -q
  $ storecompare src applied-threaded
  stores identical: 29 files

The closer forced on and off gives the same store

  $ hg init forced-on
  $ hg -R forced-on unbundle -q v2.hg --config fastio.background-write=always --config fastio.report=yes 2>&1 | grep -E '^fastio: closes'
  fastio: closes: 30, in background: 30, threads: * (glob)
  $ storecompare src forced-on
  stores identical: 29 files
  $ hg init forced-off
  $ hg -R forced-off unbundle -q v2.hg --config fastio.background-write=never
  $ storecompare src forced-off
  stores identical: 29 files

The extension can be switched off for stream clones: stock code runs (no report
of the stream; the bundle file is still read in large calls)

  $ hg init stock
  $ hg -R stock unbundle -q v2.hg --config fastio.stream-writer=no --config fastio.report=yes
  fastio: bundle reads: 1, mean size: * bytes (glob)
  $ storecompare --content-only src stock
  stores identical: 29 files

(the extension creates the streamed revlogs with the store's file mode, as
the source has; stock 7.0 and later with mode 0777 minus umask, earlier
releases with the store's mode too)

  $ stat -c %a forced-off/.hg/store/data/dir/file1.i src/.hg/store/data/dir/file1.i
  644
  644
  $ "$PYTHON" - <<'EOF'
  > import os
  > from mercurial import util
  > umask = os.umask(0)
  > def mode(path):
  >     return os.stat(path + "/.hg/store/data/dir/file1.i").st_mode & 0o777
  > release = util.versiontuple(n=2)
  > expected = 0o777 & ~umask if release >= (7, 0) else mode("src")
  > print("stock's mode, as its release makes it:", mode("stock") == expected)
  > EOF
  stock's mode, as its release makes it: True

  $ killdaemons

A checkout uses the extension's closer for Mercurial's backgroundclosing
(forced to the background here by a zero threshold)

  $ hg clone -q --debug --config fastio.slow-file-threshold=0ns --config worker.enabled=no applied-v2 checkout 2>&1 | grep '^fastio:'
  fastio: median close * us over * files, writing in background with * threads (glob)
  $ hg -R checkout status
  $ hg -R checkout diff -r tip --stat

Other store layouts, whose names are encoded differently: no fncache
(directory encoding only), no store at all (.hg/data), the file index of
7.2 (a plain fncache store before); the same revlogs as stock's

  $ cat >> $HGRCPATH <<EOF
  > [storage]
  > fileindex.slow-path=allow
  > EOF
  $ for layout in format.usefncache=no format.usestore=no format.use-fileindex-v1=yes; do
  >   rm -rf l-src l-with l-stock l.hg
  >   hg init --config $layout l-src
  >   mkdir -p l-src/dir.i/sub.d l-src/Upper
  >   echo a > l-src/dir.i/sub.d/A; echo b > l-src/Upper/B.txt; echo c > l-src/c
  >   hg -R l-src commit -qAm layout
  >   hg -R l-src bundle -q -a -t 'none-v2;stream=v2' l.hg
  >   hg init --config $layout l-with; hg -R l-with unbundle -q l.hg
  >   hg init --config $layout l-stock; hg --config extensions.fastio=! -R l-stock unbundle -q l.hg
  >   hg -R l-with verify -q && hg -R l-with update -q tip && cat l-with/dir.i/sub.d/A
  >   (cd l-with/.hg && find . -name '*.i' | sort) > with.list
  >   (cd l-stock/.hg && find . -name '*.i' | sort) > stock.list
  >   cmp with.list stock.list && echo "$layout: $(wc -l < with.list) revlogs, as stock"
  > done
  a
  format.usefncache=no: 6 revlogs, as stock
  a
  format.usestore=no: 5 revlogs, as stock
  a
  format.use-fileindex-v1=yes: 6 revlogs, as stock

Stock's own background closing switch is honoured (as stock announces it)

  $ hg init stock-switch
  $ hg -R stock-switch unbundle v2.hg --debug --config worker.backgroundclose=yes --config fastio.report=yes 2>&1 | grep -E 'starting|fastio: closes'
  starting 4 threads for background file closing
  starting 4 threads for background file closing
  fastio: closes: 30, in background: 30, threads: * (glob)
  $ storecompare src stock-switch
  stores identical: 29 files
