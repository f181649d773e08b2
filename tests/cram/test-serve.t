Clones from a server with the extension on the server only, on the client
only, and on both, over http (hg serve) and ssh, stream and pull clones:
every clone verifies and its store is a stock clone's.  A server with the
extension reads a large revlog in large calls (counted by tests/shims/iocount.c),
stock in calls under 128 KiB.

  $ . "$TESTDIR/../helpers/common.sh"
  $ STOCK="--config extensions.fastio=!"
  $ gcc -O2 -shared -fPIC -o "$TESTTMP/iocount.so" "$TESTDIR/../shims/iocount.c" -ldl

A served repository: the names of mkrepo, and a file of 40 revisions that
do not compress (its filelog's data file is about a megabyte)

  $ mkrepo src
  $ cd src
  $ for i in $(seq 1 40); do
  >   "$PYTHON" -c "
  > import random, sys
  > with open('big', 'ab') as f:
  >     f.write(random.Random($i).randbytes(25000))"
  >   hg commit -qAm "big $i"
  > done
  $ hg phase --public -r .
  $ cd ..
  $ ls src/.hg/store/data/big.*
  src/.hg/store/data/big.d
  src/.hg/store/data/big.i

The clones of a stock server to a stock client

  $ hgserve -R src -p $HGPORT $STOCK
  $ hg clone -q -U --stream $STOCK http://localhost:$HGPORT stock-stream
  $ hg clone -q -U $STOCK http://localhost:$HGPORT stock-pull

A server with the extension ($HGPORT1); "remotehg NAME CONFIG" makes an hg for
ssh's --remotecmd with more configuration (hg serve --stdio takes none on its
command line)

  $ hgserve -R src -p $HGPORT1
  $ remotehg() {
  >   cp "$HGRCPATH" "$TESTTMP/$1.hgrc"
  >   printf "$2" >> "$TESTTMP/$1.hgrc"
  >   printf '#!/bin/sh\nHGRCPATH="%s" exec hg "$@"\n' "$TESTTMP/$1.hgrc" > "$TESTTMP/$1"
  >   chmod +x "$TESTTMP/$1"
  > }
  $ remotehg hg-stock '[extensions]\nfastio = !\n'

"serverclone SIDE KIND PROTO" clones with the extension on SIDE (server,
client or both), verifies, and compares the store with the stock clone

  $ serverclone() {
  >   side=$1 kind=$2 proto=$3
  >   client=""; server=on
  >   [ $side = server ] && client="$STOCK"
  >   [ $side = client ] && server=off
  >   flags=""; [ $kind = stream ] && flags=--stream
  >   if [ $proto = http ]; then
  >     port=$HGPORT1; [ $server = off ] && port=$HGPORT
  >     url=http://localhost:$port
  >   else
  >     url=ssh://user@dummy/src
  >     [ $server = off ] && flags="$flags --remotecmd $TESTTMP/hg-stock"
  >   fi
  >   dest=clone-$side-$kind-$proto
  >   hg clone -q -U $flags $client $url $dest
  >   hg -R $dest verify -q
  >   echo "$side $kind $proto: $(storecompare --content-only stock-$kind $dest | tail -n 1)"
  > }
  $ for proto in http ssh; do
  >   for kind in stream pull; do
  >     for side in server client both; do
  >       serverclone $side $kind $proto
  >     done
  >   done
  > done
  server stream http: stores identical: 31 files
  client stream http: stores identical: 31 files
  both stream http: stores identical: 31 files
  server pull http: stores identical: 31 files
  client pull http: stores identical: 31 files
  both pull http: stores identical: 31 files
  server stream ssh: stores identical: 31 files
  client stream ssh: stores identical: 31 files
  both stream ssh: stores identical: 31 files
  server pull ssh: stores identical: 31 files
  client pull ssh: stores identical: 31 files
  both pull ssh: stores identical: 31 files

  $ killdaemons

The server's reads of the large data file (the ssh server runs with the
client's environment, and only it reads the served store): large with the
extension, stock's under 128 KiB

  $ iocount() {
  >   rm -f "$TESTTMP/iocount.txt"
  >   LD_PRELOAD="$TESTTMP/iocount.so" FASTIO_IOCOUNT="$TESTTMP/iocount.txt" \
  >     FASTIO_IOCOUNT_MATCH="/src/.hg/store/data/big.d" "$@"
  >   "$PYTHON" - "$TESTTMP/iocount.txt" <<'PY'
  > import sys
  > r = rb = 0
  > for line in open(sys.argv[1]):
  >     f = line.split()
  >     r += int(f[1]); rb += int(f[3])
  > print("reads: mean %s 128 KiB" % (">=" if r and rb / r >= 131072 else "<"))
  > PY
  > }
  $ for kind in stream pull; do
  >   flags=""; [ $kind = stream ] && flags=--stream
  >   echo "$kind, server with fastio"
  >   iocount hg clone -q -U $flags ssh://user@dummy/src reads-$kind
  >   echo "$kind, stock server"
  >   iocount hg clone -q -U $flags --remotecmd "$TESTTMP/hg-stock" ssh://user@dummy/src reads-stock-$kind
  > done
  stream, server with fastio
  reads: mean >= 128 KiB
  stream, stock server
  reads: mean < 128 KiB
  pull, server with fastio
  reads: mean >= 128 KiB
  pull, stock server
  reads: mean < 128 KiB

fastio.read-buffer=0 on the server reads served revlogs as stock does

  $ remotehg hg-nobuffer '[fastio]\nread-buffer = 0\n'
  $ iocount hg clone -q -U --remotecmd "$TESTTMP/hg-nobuffer" ssh://user@dummy/src reads-off
  reads: mean < 128 KiB

A stream's small files (larger than a block of 4 KiB, at most 64 KiB: stock
reads them with read(size) after the first bytes of the revlog) are read in
one call by a server with the extension, in two or more by a stock server

  $ hg init small
  $ "$PYTHON" -c "
  > import random
  > open('small/medium', 'wb').write(random.Random(1).randbytes(20000))
  > open('small/tiny', 'wb').write(b'tiny\n')"
  $ hg -R small commit -qAm small
  $ hg -R small phase --public -r .
  $ smallreads() {
  >   rm -f "$TESTTMP/iocount.txt"
  >   LD_PRELOAD="$TESTTMP/iocount.so" FASTIO_IOCOUNT="$TESTTMP/iocount.txt" \
  >     FASTIO_IOCOUNT_MATCH="/small/.hg/store/data/medium.i" "$@"
  >   cat "$TESTTMP/iocount.txt" | "$PYTHON" -c "
  > import sys
  > print('reads:', sum(int(l.split()[1]) for l in sys.stdin))"
  > }
  $ smallreads hg clone -q -U --stream ssh://user@dummy/small small-fastio
  reads: 1
  $ smallreads hg clone -q -U --stream --remotecmd "$TESTTMP/hg-stock" ssh://user@dummy/small small-stock
  reads: 3
  $ storecompare small-stock small-fastio | tail -n 1
  stores identical: 7 files

fastio.report on the server: each generation ends with the files (a
stream's) or revlogs (a changegroup's) it read in large calls, the calls
and their bytes (the ssh client shows the server's stderr as "remote:"):
the whole of the large data file, in one call of 1 MB

  $ remotehg hg-report '[fastio]\nreport = yes\n'
  $ size=`"$PYTHON" -c "import os; print(os.path.getsize('src/.hg/store/data/big.d'))"`
  $ hg clone -U --stream --remotecmd "$TESTTMP/hg-report" ssh://user@dummy/src report-stream 2>&1 | grep 'remote: fastio' | sed "s/ $size bytes/ (big.d) bytes/"
  remote: fastio: stream generation: large reads of 1 files: 1 calls, (big.d) bytes; 1 small files read in one call
  $ hg clone -U --remotecmd "$TESTTMP/hg-report" ssh://user@dummy/src report-pull 2>&1 | grep 'remote: fastio' | sed "s/ $size bytes/ (big.d) bytes/"
  remote: fastio: changegroup generation: large reads of 1 revlogs: 1 calls, (big.d) bytes
  $ hg clone -U --stream --remotecmd "$TESTTMP/hg-report" ssh://user@dummy/small report-small 2>&1 | grep 'remote: fastio'
  remote: fastio: stream generation: large reads of 0 files: 0 calls, 0 bytes; 1 small files read in one call

Without fastio.report the server says nothing

  $ hg clone -U --stream ssh://user@dummy/src quiet-stream 2>&1 | grep -c 'remote: fastio'
  0
  [1]
