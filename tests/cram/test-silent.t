Silent by default: with the extension enabled and no option set, Mercurial's
commands print exactly what they print without it

  $ . "$TESTDIR/../helpers/common.sh"
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
writer: from 0 to its total (the bundle's byte count), as stock's, but
updated after 256 KB or more rather than for every chunk of every file (a
bundle of four 300 KB files, random so that they stay that large)

  $ hg init big
  $ "$PYTHON" -c "
  > import random
  > r = random.Random(3)
  > for i in range(4):
  >     open('big/f%d' % i, 'wb').write(r.randbytes(300000))"
  $ hg -R big commit -qAm big
  $ hg -R big bundle -q -a -t 'none-v2;stream=v2' big.hg
  $ bytes=`hg debugbundle --all big.hg | sed -n 's/.*bytecount: \([0-9]*\),.*/\1/p'`
  $ test "$bytes" -gt 1200000 && echo ok
  ok
  $ progress() {
  >   rm -rf progress; hg init progress
  >   hg -R progress unbundle -q big.hg --debug --config progress.debug=yes "$@" 2>&1 | sed -n "s#^clone: \([0-9]*\)/$bytes bytes .*#\1#p"
  > }
  $ progress > fastio.progress
  $ progress --config extensions.fastio=! > stock.progress
  $ "$PYTHON" - $bytes <<'EOF'
  > import sys
  > total, step = int(sys.argv[1]), 256 * 1024
  > updates = {}
  > for name in ("stock", "fastio"):
  >     pos = updates[name] = [int(line) for line in open(name + ".progress")]
  >     print(
  >         "%s: from 0: %s, to the total: %s, increasing: %s"
  >         % (name, pos[:1] == [0], pos[-1:] == [total], pos == sorted(set(pos)))
  >     )
  > between = updates["fastio"][1:-1]
  > print("fastio: updates in between:", len(between))
  > gaps = [b - a for a, b in zip(updates["fastio"], between)]
  > print("fastio: each after 256 KB or more:", all(gap >= step for gap in gaps))
  > print("fastio: fewer updates than stock:", len(updates["fastio"]) < len(updates["stock"]))
  > EOF
  stock: from 0: True, to the total: True, increasing: True
  fastio: from 0: True, to the total: True, increasing: True
  fastio: updates in between: 4
  fastio: each after 256 KB or more: True
  fastio: fewer updates than stock: True

  $ killdaemons
