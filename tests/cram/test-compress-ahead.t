Revisions compressed ahead on the reading thread while a changegroup is
applied (precompress.py): the revlogs take what was compressed for them,
and the store is the one stock writes, byte for byte.  The blocks are made
small (64 KiB) so that a changegroup of a few hundred KiB is read ahead.

  $ . "$TESTDIR/../helpers/common.sh"
  $ cat >> $HGRCPATH <<EOF
  > [fastio]
  > compress-ahead = yes
  > EOF
  $ STOCK="--config extensions.fastio=!"
  $ ON="--config fastio.buffer-size=64k --config fastio.report=yes"
  $ cat > mkhist.py <<'EOF'
  > import os, random, sys
  > r = random.Random(int(sys.argv[1]))
  > words = [b"%x" % r.getrandbits(40) for _ in range(300)]
  > for i in range(120):
  >     os.makedirs("d%d" % (i % 7), exist_ok=True)
  >     path = "d%d/f%03d" % (i % 7, i)
  >     if os.path.exists(path) and r.random() < 0.7:
  >         continue
  >     with open(path, "wb") as f:
  >         f.write(b" ".join(r.choice(words) for _ in range(r.randrange(20, 2000))))
  > EOF
  $ hg init src
  $ cd src
  $ for rev in 1 2 3 4; do "$PYTHON" ../mkhist.py $rev; hg commit -qAm "rev $rev"; done
  $ hg mv -q d1/f001 d1/renamed
  $ hg commit -qm rename
  $ cd ..
  $ aheadline() {
  >   grep -E '^fastio: compressed ahead' | sed -E 's/[0-9]+ revisions, [0-9]+ taken/N revisions, M taken/'
  > }

Each bundle compression: compressed ahead, most of it taken, identical
stores

  $ for type in none-v2 gzip-v2 bzip2-v2 zstd-v2; do
  >   hg -R src bundle -q -a -t $type $type.hg
  >   hg init ub-$type; hg init ubs-$type
  >   hg -R ub-$type unbundle -q $ON $type.hg 2> report-$type
  >   "$PYTHON" - report-$type <<'EOF'
  > import re, sys
  > line = [l for l in open(sys.argv[1]) if l.startswith("fastio: compressed ahead")]
  > made, taken, missed = map(int, re.findall(r"\d+", line[0]))
  > assert made >= 100 and taken >= 0.8 * made, line
  > print("taken: %s" % (taken >= 0.8 * (taken + missed)))
  > EOF
  >   hg -R ubs-$type unbundle -q $STOCK $type.hg
  >   hg -R ub-$type verify -q
  >   storecompare ubs-$type ub-$type
  > done
  taken: True
  stores identical: 127 files
  taken: True
  stores identical: 127 files
  taken: True
  stores identical: 127 files
  taken: True
  stores identical: 127 files

Pull-clones over http and ssh: the reading thread reads the network

  $ hgserve -R src -p $HGPORT
  $ hg clone -q -U $ON http://localhost:$HGPORT clone-http 2>&1 | aheadline
  fastio: compressed ahead: N revisions, M taken, * compressed on the applying thread (glob)
  $ hg clone -q -U $ON ssh://user@dummy/src clone-ssh 2>&1 | aheadline
  fastio: compressed ahead: N revisions, M taken, * compressed on the applying thread (glob)
  $ hg clone -q -U --pull $STOCK src stock-clone
  $ storecompare stock-clone clone-http
  stores identical: 126 files
  $ storecompare stock-clone clone-ssh
  stores identical: 126 files

A zlib store: the compressor of the store's engine and level

  $ hg clone -q -U --pull $STOCK --config format.revlog-compression=zlib src zlib-stock
  $ hg clone -q -U --pull $ON --config format.revlog-compression=zlib \
  >   --config storage.revlog.zlib.level=3 src zlib-fastio 2>&1 | aheadline
  fastio: compressed ahead: N revisions, M taken, * compressed on the applying thread (glob)
  $ hg clone -q -U --pull $STOCK --config format.revlog-compression=zlib \
  >   --config storage.revlog.zlib.level=3 src zlib3-stock
  $ storecompare zlib3-stock zlib-fastio
  stores identical: 126 files
  $ cmp -s zlib-stock/.hg/store/00changelog.d zlib3-stock/.hg/store/00changelog.d || echo levels differ
  levels differ

Switched off, or a changegroup of less than a block: nothing compressed
ahead

  $ hg init off
  $ hg -R off unbundle -q $ON --config fastio.compress-ahead=no zstd-v2.hg 2>&1 | aheadline
  $ hg -R src bundle -q -r . --base .^ one.hg
  $ hg clone -q -U --pull -r 3 $STOCK src partial
  $ hg -R partial unbundle -q --config fastio.report=yes one.hg 2>&1 | grep -E '^fastio: (changegroup|compressed)'
  fastio: changegroup
  $ storecompare ubs-zstd-v2 off
  stores identical: 127 files

A truncated bundle (its decompressor fails on the reading thread): the same
abort as stock, the repository as it was

  $ "$PYTHON" -c "d = open('bzip2-v2.hg', 'rb').read(); open('cut.hg', 'wb').write(d[:len(d) // 2])"
  $ hg init cut-stock; hg init cut
  $ hg -R cut-stock unbundle -q $STOCK cut.hg > stock.out 2>&1; echo $?
  255
  $ hg -R cut unbundle -q $ON cut.hg 2>&1 | grep -v '^fastio:' > fastio.out; echo $?
  0
  $ cat fastio.out
  transaction abort!
  rollback completed
  abort: stream ended unexpectedly* (got * bytes, expected *) (glob)
  $ diff stock.out fastio.out > /dev/null && echo same abort
  same abort
  $ tail -1 stock.out
  abort: stream ended unexpectedly* (got * bytes, expected *) (glob)
  $ hg -R cut log -q
  $ ls cut/.hg/store
  requires
  $ hg -R cut verify -q

A write that fails (ENOSPC) while the reading thread is ahead: one abort,
the repository as it was, for background and inline closes

  $ command -v gcc > /dev/null || exit 80
  $ gcc -O2 -shared -fPIC -o "$TESTTMP/fault.so" "$TESTDIR/../shims/faultshim.c" -ldl
  $ for mode in never always; do
  >   hg init full-$mode
  >   LD_PRELOAD="$TESTTMP/fault.so" FASTIO_FAIL_WRITE=data/d2/f100.i hg -R full-$mode unbundle -q $ON \
  >     --config fastio.background-write=$mode zstd-v2.hg > out 2>&1
  >   echo "exit $?"
  >   grep -E '^(abort|Traceback)' out
  >   ls full-$mode/.hg/store
  > done
  exit 255
  abort: *No space left on device* (glob)
  requires
  exit 255
  abort: * No space left on device* (glob)
  requires

  $ killdaemons
