Clone bundles fetched over http: with the extension the client reads the
bundle's socket in calls of 128 KiB or more on average, stock in smaller
ones (strace -f -yy: the reads that returned data on the sockets to the
bundles' server)

  $ which strace > /dev/null 2>&1 || exit 80
  $ . "$TESTDIR/../helpers/common.sh"
  $ hg init src
  $ "$PYTHON" -c "
  > import random
  > for i in range(8):
  >     open('src/f%d' % i, 'wb').write(random.Random(i).randbytes(1000000))"
  $ hg -R src commit -qAm big
  $ hg -R src phase --public -r .
  $ mkdir static
  $ hg -R src bundle -q -a -t 'none-v2;stream=v2' static/v2.hg
  $ hg -R src debugcreatestreamclonebundle static/packed1.hg > /dev/null
  $ hg -R src bundle -q -a -t zstd-v2 static/zstd.hg
  $ staticserve static
  $ hgserve -R src -p $HGPORT --config extensions.clonebundles=

  $ socketreads() {
  >   strace -f -yy -qq -e trace=read,recvfrom,recvmsg,readv -o "$TESTTMP/trace" "$@" > /dev/null
  >   "$PYTHON" - "$TESTTMP/trace" <<'PY'
  > import os, re, sys
  > call = re.compile(r"(\d+)\s+(\w+)\(\d+<TCP:\[[^\]]*:(\d+)\]>(.*)")
  > resumed = re.compile(r"(\d+)\s+<\.\.\. (\w+) resumed>(.*)")
  > result = re.compile(r"\)\s+=\s+(\d+)")
  > port, unfinished, sizes = os.environ["HGPORT1"], {}, []
  > for line in open(sys.argv[1]):
  >     m = call.match(line)
  >     if m:
  >         if m.group(3) != port:
  >             continue
  >         if "<unfinished ...>" in m.group(4):
  >             unfinished[m.group(1)] = m.group(2)
  >             continue
  >         rest = m.group(4)
  >     else:
  >         m = resumed.match(line)
  >         if not m or unfinished.pop(m.group(1), None) != m.group(2):
  >             continue
  >         rest = m.group(3)
  >     r = result.search(rest)
  >     if r and int(r.group(1)):
  >         sizes.append(int(r.group(1)))
  > if not sizes:
  >     print("no read on the bundle's socket")
  > else:
  >     mean = sum(sizes) / len(sizes)
  >     print("reads: mean %s 128 KiB" % (">=" if mean >= 131072 else "<"))
  > PY
  > }

  $ for b in v2 packed1 zstd; do
  >   spec=`hg debugbundle --spec static/$b.hg`
  >   echo "http://localhost:$HGPORT1/$b.hg BUNDLESPEC=$spec" > src/.hg/clonebundles.manifest
  >   echo "$b, fastio"
  >   socketreads hg clone -U http://localhost:$HGPORT clone-$b
  >   hg -R clone-$b verify -q
  >   echo "$b, stock"
  >   socketreads hg clone -U --config extensions.fastio=! http://localhost:$HGPORT stock-$b
  >   storecompare --content-only stock-$b clone-$b | tail -n 1
  > done
  v2, fastio
  reads: mean >= 128 KiB
  v2, stock
  reads: mean < 128 KiB
  stores identical: 21 files
  packed1, fastio
  reads: mean >= 128 KiB
  packed1, stock
  reads: mean < 128 KiB
  stores identical: 21 files
  zstd, fastio
  reads: mean >= 128 KiB
  zstd, stock
  reads: mean < 128 KiB
  stores identical: 21 files

fastio.read-buffer=0 reads it as stock does

  $ socketreads hg clone -U --config fastio.read-buffer=0 http://localhost:$HGPORT clone-off
  reads: mean < 128 KiB

  $ killdaemons
