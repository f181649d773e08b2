Narrow clones through the extension (after Mercurial's
test-narrow-clone-no-ellipsis.t): each stores and tracks exactly what was
asked, over ssh and over http, with background closes forced on; widening
and the narrow stream clone too.  Stores are compared with stock's.

  $ . "$TESTDIR/../helpers/common.sh"
  $ cat >> $HGRCPATH <<EOF
  > [extensions]
  > narrow=
  > [fastio]
  > background-write = always
  > EOF
  $ STOCK="--config extensions.fastio=!"

  $ hg init master
  $ cd master
  $ mkdir -p dir/src dir/tests
  $ for x in `seq 20`; do echo $x > "dir/src/f$x"; hg add -q "dir/src/f$x"; hg commit -qm "src $x"; done
  $ for x in `seq 20`; do echo $x > "dir/tests/t$x"; hg add -q "dir/tests/t$x"; hg commit -qm "test $x"; done
  $ cd ..
  $ hgserve -R master -p $HGPORT

What a narrow clone holds: its narrowspec, and the filelogs in its store

  $ show() {
  >   hg -R "$1" tracked
  >   (cd "$1/.hg/store/data" && find . -type f | sort | tr '\n' ' '; echo)
  >   hg -R "$1" verify -q
  > }
  $ both() {
  >   # the same narrow clone over ssh and http, and by stock over ssh
  >   name=$1; shift
  >   hg clone -q -U --narrow --config fastio.report=yes ssh://user@dummy/master $name-ssh "$@" 2>&1 | grep -E '^fastio: closes' | sed -E 's/: ([1-9][0-9]*), in background: \1,/: N, all in background,/'
  >   hg clone -q -U --narrow http://localhost:$HGPORT $name-http "$@"
  >   hg clone -q -U --narrow $STOCK ssh://user@dummy/master $name-stock "$@"
  >   show $name-ssh
  >   storecompare $name-stock $name-ssh
  >   storecompare $name-stock $name-http
  >   hg -R $name-http tracked > http.tracked
  >   hg -R $name-ssh tracked | diff - http.tracked
  > }

One file

  $ both f10 --include dir/src/f10
  fastio: closes: N, all in background, threads: * (glob)
  I path:dir/src/f10
  ./dir/src/f10.i 
  stores identical: 7 files
  stores identical: 7 files

A directory except one of its files

  $ both dirtests --include dir/tests/ --exclude dir/tests/t19
  fastio: closes: N, all in background, threads: * (glob)
  I path:dir/tests
  X path:dir/tests/t19
  ./dir/tests/t1.i ./dir/tests/t10.i ./dir/tests/t11.i ./dir/tests/t12.i ./dir/tests/t13.i ./dir/tests/t14.i ./dir/tests/t15.i ./dir/tests/t16.i ./dir/tests/t17.i ./dir/tests/t18.i ./dir/tests/t2.i ./dir/tests/t20.i ./dir/tests/t3.i ./dir/tests/t4.i ./dir/tests/t5.i ./dir/tests/t6.i ./dir/tests/t7.i ./dir/tests/t8.i ./dir/tests/t9.i 
  stores identical: 25 files
  stores identical: 25 files

Everything but a directory

  $ both root --exclude dir/tests
  fastio: closes: N, all in background, threads: * (glob)
  I path:.
  X path:dir/tests
  ./dir/src/f1.i ./dir/src/f10.i ./dir/src/f11.i ./dir/src/f12.i ./dir/src/f13.i ./dir/src/f14.i ./dir/src/f15.i ./dir/src/f16.i ./dir/src/f17.i ./dir/src/f18.i ./dir/src/f19.i ./dir/src/f2.i ./dir/src/f20.i ./dir/src/f3.i ./dir/src/f4.i ./dir/src/f5.i ./dir/src/f6.i ./dir/src/f7.i ./dir/src/f8.i ./dir/src/f9.i 
  stores identical: 26 files
  stores identical: 26 files

--narrowspec from a file: %include is refused before anything is written

  $ cat >> narrowspecs <<EOF
  > %include foo
  > [include]
  > path:dir/tests/
  > path:dir/src/f12
  > EOF
  $ hg clone ssh://user@dummy/master specfile --narrowspec narrowspecs
  reading narrowspec from '*/narrowspecs' (glob)
  config error: cannot specify other files using '%include' in narrowspec
  [255]
  $ test -d specfile
  [1]

  $ cat > narrowspecs <<EOF
  > [include]
  > path:dir/tests/
  > path:dir/src/f12
  > EOF
  $ both spec --narrowspec narrowspecs
  fastio: closes: N, all in background, threads: * (glob)
  I path:dir/src/f12
  I path:dir/tests
  ./dir/src/f12.i ./dir/tests/t1.i ./dir/tests/t10.i ./dir/tests/t11.i ./dir/tests/t12.i ./dir/tests/t13.i ./dir/tests/t14.i ./dir/tests/t15.i ./dir/tests/t16.i ./dir/tests/t17.i ./dir/tests/t18.i ./dir/tests/t19.i ./dir/tests/t2.i ./dir/tests/t20.i ./dir/tests/t3.i ./dir/tests/t4.i ./dir/tests/t5.i ./dir/tests/t6.i ./dir/tests/t7.i ./dir/tests/t8.i ./dir/tests/t9.i 
  stores identical: 27 files
  stores identical: 27 files

Widening a narrow clone applies a changegroup into the existing store

  $ hg -R f10-ssh tracked -q --addinclude dir/src/f11 --config fastio.report=yes 2>&1 | grep -E '^fastio: (changegroup|files)'
  fastio: changegroup
  fastio: files written: 4
  $ hg -R f10-stock tracked -q --addinclude dir/src/f11 $STOCK
  $ show f10-ssh
  I path:dir/src/f10
  I path:dir/src/f11
  ./dir/src/f10.i ./dir/src/f11.i 
  $ storecompare f10-stock f10-ssh
  stores identical: 8 files

Narrow stream clone

  $ killdaemons
  $ hgserve -R master -p $HGPORT --config experimental.server.stream-narrow-clones=yes
  $ hg clone -q -U --narrow --stream --include dir/src/f3 --config fastio.report=yes http://localhost:$HGPORT narrowstream 2>&1 | grep -E '^fastio: (stream|files)'
  fastio: stream clone
  fastio: files written: 7
  $ show narrowstream
  I path:dir/src/f3
  ./dir/src/f3.i 

  $ killdaemons
