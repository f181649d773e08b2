Silent by default: with the extension enabled and no option set, Mercurial's
commands print exactly what they print without it

  $ . "$TESTDIR/common.sh"
  $ mkrepo src
  $ hg -R src bundle -q -a -t 'none-v2;stream=v2' stream.hg
  $ hg -R src bundle -q -a changegroup.hg
  $ hgserve -R src -p $HGPORT --config extensions.fastio=!

  $ scenario() {
  >   mkdir "$1"; cd "$1"; shift
  >   hg "$@" clone --stream http://localhost:$HGPORT stream
  >   hg "$@" clone --pull http://localhost:$HGPORT pulled
  >   hg "$@" -R stream update null
  >   hg "$@" -R stream update tip
  >   hg "$@" -R stream status
  >   hg "$@" -R pulled log -G
  >   hg init unbundled-stream; hg "$@" -R unbundled-stream unbundle ../stream.hg
  >   hg init unbundled-cg; hg "$@" -R unbundled-cg unbundle -u ../changegroup.hg
  >   hg init pulling; hg "$@" -R pulling pull -u http://localhost:$HGPORT
  >   hg "$@" -R stream verify
  >   hg "$@" -R pulling log -r tip -p
  >   cd ..
  > }
  $ normalize() {
  >   sed -e 's/in [0-9.]* seconds ([^)]*)/in X seconds/' -e "s/$HGPORT/PORT/g"
  > }

  $ scenario with > with.raw 2>&1
  $ scenario without --config extensions.fastio=! > without.raw 2>&1
  $ normalize < with.raw > with.out
  $ normalize < without.raw > without.out
  $ cmp with.out without.out && echo identical
  identical
  $ wc -l < with.out
  63
  $ grep -c fastio with.out
  0
  [1]
  $ head -4 with.raw | normtransfer
  streaming all changes
  30 files to transfer, 3.14 KB of data
  transferred 3.14 KB in X
  updating to branch default

New commits pulled into an existing clone, and an update across them

  $ echo new > src/dir/file2
  $ hg -R src commit -qm three
  $ for d in with without; do
  >   opt=; [ $d = without ] && opt="--config extensions.fastio=!"
  >   hg $opt -R $d/stream pull -u 2>&1 | normalize > $d.pull
  >   hg $opt -R $d/stream update -r 0 2>&1 >> $d.pull
  > done
  $ cmp with.pull without.pull && cat with.pull
  pulling from http://localhost:PORT/
  searching for changes
  adding changesets
  adding manifests
  adding file changes
  added 1 changesets with 1 changes to 1 files
  new changesets * (glob)
  1 files updated, 0 files merged, 0 files removed, 0 files unresolved
  2 files updated, 0 files merged, 0 files removed, 0 files unresolved

Stock's progress bar of a stream apply is still there with the extension's
writer (updated every 256 KB rather than every file), its total the bundle's
byte count (3213 on 6.7.4, 3214 on 7.2.4: the same commits make a changelog a
byte apart)

  $ hg init progress
  $ bytes=`hg debugbundle --all stream.hg | sed -n 's/.*bytecount: \([0-9]*\),.*/\1/p'`
  $ test "$bytes" -gt 3000 && echo ok
  ok
  $ hg -R progress unbundle -q stream.hg --debug --config progress.debug=yes 2>&1 | grep -E '^clone:' | sed "s#/$bytes bytes#/BYTES bytes#"
  clone: 0/BYTES bytes (0.00%)

  $ killdaemons
