A file store that is not a revlog (issue 39): remotefilelog's refuses
len() ("RuntimeError: len not supported").  A changegroup generated from a
shallow repository (a push, a local pull from it, a strip's backup bundle)
emits its files from that store: the extension leaves them to stock.

  $ . "$TESTDIR/../helpers/common.sh"
  $ cat >> $HGRCPATH <<EOF
  > [extensions]
  > remotefilelog=
  > strip=
  > [remotefilelog]
  > cachepath=$TESTTMP/hgcache
  > EOF

  $ hg init master
  $ cd master
  $ printf '[remotefilelog]\nserver=True\n' >> .hg/hgrc
  $ echo x > x
  $ hg commit -qAm x
  $ cd ..
  $ shallow() {
  >   hg clone -q --shallow --config remotefilelog.reponame=master ssh://user@dummy/master "$1"
  >   printf '[remotefilelog]\nreponame=master\n' >> "$1/.hg/hgrc"
  > }
  $ shallow shallow
  $ shallow shallow2
  $ cat shallow/.hg/requires shallow/.hg/store/requires | grep remotefilelog
  exp-remotefilelog-repo-req-1

A push from the shallow repository

  $ cd shallow
  $ echo y > y
  $ echo x >> x
  $ hg commit -qAm y
  $ hg push -q
  $ (cd ../master && hg cat -r tip x y)
  x
  x
  y

A local pull from it, into another shallow repository

  $ echo z > z
  $ hg commit -qAm z
  $ cd ../shallow2
  $ hg pull -q ../shallow
  $ hg update -q tip
  $ cat x y z
  x
  x
  y
  z

A strip (its backup bundle)

  $ hg strip -q -r tip
  $ hg log -T '{desc}\n'
  y
  x
  $ ls .hg/strip-backup | wc -l | tr -d ' '
  1
