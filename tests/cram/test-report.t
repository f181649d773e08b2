fastio.report: numbers of what the operation did, on stderr, each line
starting with "fastio:"

  $ . "$TESTDIR/../helpers/common.sh"
  $ mkrepo src
  $ hgserve -R src -p $HGPORT

A stream clone: "files written" is the stream's file count, and every file
of the stream is in the new repository (store and cache)

  $ hg clone -U --stream --config fastio.report=yes http://localhost:$HGPORT clone > out 2> err
  $ normtransfer out
  streaming all changes
  * files to transfer, * of data (glob)
  transferred * in X (glob)
  $ cat err
  fastio: stream clone
  fastio: files written: 30
  fastio: bytes written: * (glob)
  fastio: closes: 30, in background: 30, threads: * (glob)
  fastio: waiting for closes: * s (glob)
  fastio: peak pending files: * (to make or to close; at most 4096, holding a descriptor at most 256) (glob)
  fastio: closing: auto: new files on threads (* CPUs) (glob)
  fastio: mmap policy: * (glob)
  fastio: mmap populate: background (auto: the helper populates from a thread)
  fastio: elapsed: * s (glob)
  $ streamed=`sed -n 's/^\([0-9]*\) files to transfer.*/\1/p' out`
  $ written=`sed -n 's/^fastio: files written: //p' err`
  $ test "$streamed" = "$written" && echo "$written files"
  30 files
  $ normtransfer out | sed -n 's/^transferred \(.*\) in X$/(\1)/p' > a
  $ sed -n 's/^fastio: bytes written: [0-9]* //p' err > b
  $ cmp a b && cat a
  (3.14 KB)

The same clone under --debug lists the stream's files: as many as written,
and the store's ones are the files of the new store but the fncache, the
store's requires and the transaction's undo files

  $ hg clone -U --stream --debug --config fastio.report=yes http://localhost:$HGPORT clone-debug > debug.out 2>&1
  $ grep -c '^adding \[' debug.out
  30
  $ grep '^fastio: files written' debug.out
  fastio: files written: 30
  $ grep -c '^adding \[s\]' debug.out
  27
  $ cd clone-debug/.hg/store && find . -type f | grep -v -x -e ./fncache -e ./requires -e ./undo -e ./undo.backupfiles | wc -l
  27
  $ cd "$TESTTMP"

The checkout after a clone gets its own section: the files of the working
copy, with their bytes

  $ hg clone --config fastio.report=yes --config fastio.background-write=always --config fastio.write-threads=2 clone wc 2>&1 | grep -v -e '^updating' -e 'files updated'
  fastio: working copy files
  fastio: files written: 24
  fastio: bytes written: * (glob)
  fastio: closes: 24, in background: 24, threads: * (glob)
  fastio: waiting for closes: * s (glob)
  fastio: peak pending files: * (to make or to close; at most *, holding a descriptor at most 256) (glob)
  fastio: closing: always
  fastio: mmap policy: * (glob)
  fastio: mmap populate: background (auto: the helper populates from a thread)
  fastio: elapsed: * s (glob)
  $ hg -R wc files | wc -l
  24
  $ hg clone -q --config fastio.report=yes clone wc2 2>&1 | grep 'bytes written' | sed 's/.*: \([0-9]*\) .*/\1/' > reported
  $ (cd wc2 && hg files -0 | xargs -0 cat | wc -c) > actual
  $ cmp reported actual && echo same bytes
  same bytes

An operation that wrote nothing through the closer prints nothing

  $ hg -R wc update --config fastio.report=yes
  0 files updated, 0 files merged, 0 files removed, 0 files unresolved

Set in an hgrc, with a stream bundle applied by unbundle, forced to the
background

  $ hg -R src bundle -q -a -t 'none-v2;stream=v2' v2.hg
  $ hg init applied
  $ cat >> applied/.hg/hgrc <<EOF2
  > [fastio]
  > report = yes
  > background-write = always
  > EOF2
  $ hg -R applied unbundle -q v2.hg 2>&1 | grep -E '^fastio: (files|closes|closing)'
  fastio: files written: 30
  fastio: closes: 30, in background: 30, threads: * (glob)
  fastio: closing: always

v1 (packed1) streams report the same way

  $ hg -R src debugcreatestreamclonebundle -q packed1.hg
  bundle requirements: * (glob)
  $ hg init applied1
  $ hg -R applied1 debugapplystreamclonebundle --config fastio.report=yes packed1.hg 2>&1 | grep -E '^(fastio: files|[0-9]+ files)'
  27 files to transfer, * of data (glob)
  fastio: files written: 27

Auto mode: a slow measurement in the cache starts closes in the background
at once (the shim makes close() take 2 ms); draining for more than a second
shows a "closing files" progress bar

  $ command -v gcc > /dev/null || exit 80
  $ gcc -O2 -shared -fPIC -o $TESTTMP/closedelay.so $ROOTDIR/fixtures/latency.c -ldl
  $ hg init slow
  $ LD_PRELOAD=$TESTTMP/closedelay.so FASTIO_CLOSE_DELAY_US=2000 hg -R slow debugfastio --files 50 | grep '^auto'
  auto mode would: close in background, starting with * threads (median * us >= threshold 50 us) (glob)
  $ LD_PRELOAD=$TESTTMP/closedelay.so FASTIO_CLOSE_DELAY_US=2000 hg -R slow unbundle -q v2.hg --debug --config fastio.report=yes 2>&1 | grep -E '^fastio: (cached|closes|closing)'
  fastio: cached close latency * us, closing in background with * threads (glob)
  fastio: closes: 30, in background: 30, threads: * (glob)
  fastio: closing: auto: background, cached close latency * us (glob)

  $ hg init drain
  $ LD_PRELOAD=$TESTTMP/closedelay.so FASTIO_CLOSE_DELAY_US=60000 hg -R drain unbundle -q v2.hg --debug --config progress.debug=yes --config fastio.background-write=always --config fastio.write-threads=1 2>&1 | sed -n 's#^closing files: \([0-9]*\)/\([0-9]*\) files .*#\1 \2#p' > closing
  $ "$PYTHON" - <<'EOF'
  > updates = [tuple(map(int, line.split())) for line in open("closing")]
  > closed = [n for n, __ in updates]
  > totals = {total for __, total in updates}
  > print("updates:", len(updates) > 1)
  > print("one total, the tasks pending (30 files and their 9 directories at most):", len(totals) == 1 and 0 < min(totals) <= 39)
  > print("advancing:", closed == sorted(closed) and closed[0] < closed[-1] <= min(totals))
  > EOF
  updates: True
  one total, the tasks pending (30 files and their 9 directories at most): True
  advancing: True
  $ killdaemons
