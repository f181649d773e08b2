Bundle files are read and written with large system calls (fastio.read-buffer,
fastio.write-buffer): every path that reads or writes one, counted by an
LD_PRELOAD shim (tests/shims/iocount.c) on the bundle file only.  Bundles written
with the extension are those stock writes (cmp); repositories applied from
them are those stock applies.

  $ . "$TESTDIR/../helpers/common.sh"
  $ STOCK="--config extensions.fastio=!"
  $ gcc -O2 -shared -fPIC -o "$TESTTMP/iocount.so" "$TESTDIR/../shims/iocount.c" -ldl

"iocount MATCH hg ..." runs hg and tells the read and write calls on the
files whose path contains MATCH: whether there were any, and whether their
mean size is 128 KiB or more

  $ iocount() {
  >   match="$1"; shift
  >   rm -f "$TESTTMP/iocount.txt"
  >   LD_PRELOAD="$TESTTMP/iocount.so" FASTIO_IOCOUNT="$TESTTMP/iocount.txt" \
  >     FASTIO_IOCOUNT_MATCH="$match" "$@"
  >   "$PYTHON" - "$TESTTMP/iocount.txt" <<'PY'
  > import sys
  > r = rb = w = wb = 0
  > for line in open(sys.argv[1]):
  >     f = line.split()
  >     r += int(f[1]); rb += int(f[3]); w += int(f[5]); wb += int(f[7])
  > for kind, n, b in (("reads", r, rb), ("writes", w, wb)):
  >     if n:
  >         print("%s: mean %s 128 KiB" % (kind, ">=" if b / n >= 131072 else "<"))
  > PY
  > }

A repository of a few MiB that does not compress (random contents) in many
revisions of a few KiB, as most repositories are (stock then reads and writes
a bundle in small calls)

  $ hg init src
  $ cd src
  $ "$PYTHON" - <<'PY'
  > import os, random
  > rnd = random.Random(20)
  > for d in range(6):
  >     os.makedirs("d%d" % d)
  >     for i in range(100):
  >         with open("d%d/f%d" % (d, i), "wb") as f:
  >             f.write(rnd.randbytes(6000))
  > PY
  $ hg commit -qAm base
  $ hg phase --public -r .
  $ cd ..

hg bundle, every kind, and debugcreatestreamclonebundle: large writes, and the
bytes stock writes

  $ for t in none-v2 gzip-v2 bzip2-v1 none-v1 "none-v2;stream=v2"; do
  >   n=$(echo "$t" | tr ';=' '--')
  >   hg -R src bundle -q -a --type "$t" $STOCK stock-$n.hg
  >   echo "$t"; iocount fastio-$n.hg hg -R src bundle -q -a --type "$t" fastio-$n.hg
  >   cmp stock-$n.hg fastio-$n.hg
  > done
  none-v2
  writes: mean >= 128 KiB
  gzip-v2
  writes: mean >= 128 KiB
  bzip2-v1
  writes: mean >= 128 KiB
  none-v1
  writes: mean >= 128 KiB
  none-v2;stream=v2
  writes: mean >= 128 KiB
  $ hg -R src debugcreatestreamclonebundle $STOCK stock-packed1.hg > /dev/null
  $ iocount fastio-packed1.hg hg -R src debugcreatestreamclonebundle fastio-packed1.hg
  writing * bytes for * files (glob)
  bundle requirements: * (glob)
  writes: mean >= 128 KiB
  $ cmp stock-packed1.hg fastio-packed1.hg

Stock's own calls are smaller (the shim and the test can tell)

  $ iocount stock-x.hg hg -R src bundle -q -a --type none-v2 $STOCK stock-x.hg
  writes: mean < 128 KiB
  $ iocount fastio-x.hg hg -R src bundle -q -a --type none-v2 --config fastio.write-buffer=0 fastio-x.hg
  writes: mean < 128 KiB

hg unbundle of each: large reads, the store stock applies

  $ for n in none-v2 gzip-v2 bzip2-v1 none-v1 none-v2-stream-v2; do
  >   hg init s-$n; hg init u-$n
  >   hg -R s-$n unbundle -q $STOCK stock-$n.hg
  >   echo "$n"; iocount stock-$n.hg hg -R u-$n unbundle -q stock-$n.hg
  >   hg -R u-$n verify -q
  >   diff -r -x 'undo*' -x fncache s-$n/.hg/store u-$n/.hg/store &&
  >   sort s-$n/.hg/store/fncache > s.fncache; sort u-$n/.hg/store/fncache > u.fncache
  >   cmp s.fncache u.fncache &&
  >   echo same store contents
  > done
  none-v2
  reads: mean >= 128 KiB
  same store contents
  gzip-v2
  reads: mean >= 128 KiB
  same store contents
  bzip2-v1
  reads: mean >= 128 KiB
  same store contents
  none-v1
  reads: mean >= 128 KiB
  same store contents
  none-v2-stream-v2
  reads: mean >= 128 KiB
  same store contents

From stdin (a file opened by its path, /dev/stdin), and the reads of stock

  $ hg init u-stdin
  $ iocount stock-gzip-v2.hg hg -R u-stdin unbundle -q /dev/stdin < stock-gzip-v2.hg
  reads: mean >= 128 KiB
  $ hg init u-stock
  $ iocount stock-gzip-v2.hg hg -R u-stock unbundle -q $STOCK stock-gzip-v2.hg
  reads: mean < 128 KiB

Through a pipe (cat | hg unbundle /dev/stdin): the pipe is made to hold a
buffer's worth (F_SETPIPE_SZ) and is read in calls of up to that; stock
reads it as it comes, 64 KiB at most

  $ hg init u-pipe
  $ cat stock-gzip-v2.hg | iocount pipe: hg -R u-pipe unbundle -q /dev/stdin
  reads: mean >= 128 KiB
  $ hg init u-pipe-stock
  $ cat stock-gzip-v2.hg | iocount pipe: hg -R u-pipe-stock unbundle -q $STOCK /dev/stdin
  reads: mean < 128 KiB
  $ hg -R u-pipe verify -q
  $ storecompare u-pipe-stock u-pipe | tail -1
  stores identical: * files (glob)
  $ hg init u-off
  $ iocount stock-gzip-v2.hg hg -R u-off unbundle -q --config fastio.read-buffer=0 stock-gzip-v2.hg
  reads: mean < 128 KiB

hg debugbundle --spec reads a packed1 bundle's header from its own file after
exchange.readbundle: that file is left where readbundle left it

  $ hg debugbundle --spec stock-packed1.hg
  none-packed1;requirements%3D* (glob)
  $ hg debugbundle --spec stock-gzip-v2.hg
  gzip-v2
  $ hg debugbundle --spec stock-none-v2-stream-v2.hg
  none-v2;stream=v2;requirements%3D* (glob)

debugapplystreamclonebundle

  $ hg init u-packed1
  $ iocount stock-packed1.hg hg -R u-packed1 debugapplystreamclonebundle stock-packed1.hg | grep -v '^transferred\|^stream-cloned'
  * files to transfer, * of data (glob)
  reads: mean >= 128 KiB
  $ hg -R u-packed1 verify -q

hg incoming and hg pull from a bundle file (a bundle repository, which seeks
in the bundle, or in an uncompressed copy of a compressed one: hg-bundle-*)

  $ hg init p
  $ for n in none-v2 none-v1; do
  >   echo "$n"; iocount stock-$n.hg hg -R p incoming -q stock-$n.hg
  > done
  none-v2
  0:* (glob)
  reads: mean >= 128 KiB
  none-v1
  0:* (glob)
  reads: mean >= 128 KiB
  $ iocount stock-gzip-v2.hg hg -R p pull -q stock-gzip-v2.hg
  reads: mean >= 128 KiB
  $ hg init p2
  $ iocount /hg-bundle- hg -R p2 pull -q stock-gzip-v2.hg
  reads: mean >= 128 KiB
  writes: mean >= 128 KiB
  $ storecompare s-gzip-v2 p2 | sed 's/: [0-9]* files//'
  stores identical

A pull from an uncompressed bundle reads each revision where it is in the
bundle file (seeking through the buffer)

  $ hg init p4
  $ iocount stock-none-v2.hg hg -R p4 pull -q stock-none-v2.hg
  reads: mean >= 128 KiB
  $ hg -R p4 verify -q
  $ storecompare s-none-v2 p4 | sed 's/: [0-9]* files//'
  stores identical

hg incoming --bundle writes what it got, as stock does

  $ hg init i1
  $ hg -R i1 incoming -q --bundle inc-stock.hg $STOCK src > /dev/null
  $ iocount inc-fastio.hg hg -R i1 incoming -q --bundle inc-fastio.hg src | grep mean
  writes: mean >= 128 KiB
  $ cmp inc-stock.hg inc-fastio.hg

fastio.report tells the calls on bundle files and their mean size

  $ hg init r
  $ hg -R r unbundle -q --config fastio.report=yes stock-none-v2.hg 2>&1 | grep 'fastio: bundle'
  fastio: bundle reads: *, mean size: * bytes (glob)
  $ hg -R src bundle -q -a --config fastio.report=yes report.hg 2>&1 | grep 'fastio: bundle'
  fastio: bundle writes: *, mean size: * bytes (glob)

Strip: the backup bundle written, and the revisions kept written to a
temporary bundle and read back

  $ hg clone -q src strip
  $ cd strip
  $ "$PYTHON" -c "import os; open('one', 'wb').write(os.urandom(600000))"
  $ hg commit -qAm one
  $ hg update -q 0
  $ "$PYTHON" -c "import os; open('two', 'wb').write(os.urandom(600000))"
  $ hg commit -qAm two
  $ iocount strip-backup/ hg --config extensions.strip= strip -q -r 1
  reads: mean >= 128 KiB
  writes: mean >= 128 KiB
  $ hg verify -q
  $ hg log -T '{rev} {desc}\n'
  1 two
  0 base
  $ cd ..
