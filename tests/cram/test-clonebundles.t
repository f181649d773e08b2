Stream clone bundles (packed1 and v2) served as clonebundles

  $ . "$TESTDIR/../helpers/common.sh"
  $ mkrepo src
  $ mkdir static
  $ hg -R src debugcreatestreamclonebundle static/packed1.hg > /dev/null
  $ hg -R src bundle -q -a -t 'none-v2;stream=v2' static/v2.hg
  $ staticserve static

packed1 (stream v1)

  $ echo "http://localhost:$HGPORT1/packed1.hg BUNDLESPEC=none-packed1;requirements%3Dgeneraldelta%2Crevlog-compression-zstd%2Crevlogv1%2Csparserevlog" > src/.hg/clonebundles.manifest
  $ hgserve -R src -p $HGPORT --config extensions.clonebundles=
  $ hg clone --config fastio.report=yes http://localhost:$HGPORT clone-packed1 2>&1 | grep -E '^(applying|fastio: files|no changes)'
  applying clone bundle from http://localhost:*/packed1.hg (glob)
  fastio: files written: 27
  no changes found
  fastio: files written: 24
  $ hg -R clone-packed1 verify -q
  $ storecompare src clone-packed1
  stores identical: 29 files

stream v2

  $ echo "http://localhost:$HGPORT1/v2.hg BUNDLESPEC=none-v2;stream=v2" > src/.hg/clonebundles.manifest
  $ hg clone --config fastio.report=yes http://localhost:$HGPORT clone-v2 2>&1 | grep -E '^(applying|fastio: files|no changes)'
  applying clone bundle from http://localhost:*/v2.hg (glob)
  fastio: files written: 30
  no changes found
  fastio: files written: 24
  $ hg -R clone-v2 verify -q
  $ storecompare src clone-v2
  stores identical: 29 files

  $ killdaemons
