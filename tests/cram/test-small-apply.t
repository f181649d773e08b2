A small changegroup (fewer than 16 changesets announced by its bundle2
part) is applied as stock applies it, without loading the extension's apply
machinery; its files still go through the extension's writer when there are
32 or more of them.  The other tests switch this off
(devel.fastio.small-applies=false in their hgrc); here it is on, as for
users.

  $ . "$TESTDIR/../helpers/common.sh"
  $ cat >> $HGRCPATH <<EOF
  > [devel]
  > fastio.small-applies = true
  > EOF
  $ hg init src
  $ cd src
  $ for i in 1 2 3; do echo $i > f$i; done
  $ hg commit -qAm base
  $ echo more >> f1
  $ hg commit -qm one
  $ mkdir tree
  $ for i in `seq 1 40`; do echo $i > tree/g$i; done
  $ hg commit -qAm tree
  $ for i in `seq 1 20`; do echo $i >> f2; hg commit -qm "c$i"; done
  $ hg bundle -q -r 1 --base 0 $TESTTMP/one.hg
  $ hg bundle -q -r 2 --base 1 $TESTTMP/tree.hg
  $ hg bundle -q -r tip --base 2 $TESTTMP/twenty.hg
  $ cd ..
  $ hg clone -q -U -r 0 src dst 2>/dev/null

One changeset of one file: stock's apply, and a report line saying so

  $ hg -R dst unbundle --config fastio.report=yes $TESTTMP/one.hg
  adding changesets
  adding manifests
  adding file changes
  fastio: small changegroup: applied as stock applies it
  added 1 changesets with 1 changes to 1 files
  new changesets 9fdf35dfe39a (1 drafts)
  (run 'hg update' to get a working copy)
  fastio: bundle reads: 1, mean size: 519 bytes

One changeset adding 40 files: its files are written by the extension

  $ hg -R dst unbundle --config fastio.report=yes $TESTTMP/tree.hg 2>&1 | grep -e '^added' -e '^fastio: \(small\|changegroup\|files written\)'
  fastio: changegroup files
  fastio: files written: 40
  fastio: small changegroup: applied as stock applies it
  added 1 changesets with 40 changes to 40 files

Twenty changesets: the whole apply is the extension's

  $ hg -R dst unbundle --config fastio.report=yes $TESTTMP/twenty.hg 2>&1 | grep -e '^added' -e '^fastio: \(small\|changegroup\|files written\)'
  fastio: changegroup
  fastio: files written: 4
  added 20 changesets with 20 changes to 1 files

A pull of one changeset over ssh is small too

  $ hg clone -q -U -r 1 src pulled 2>/dev/null
  $ hg -R pulled pull -q --config fastio.report=yes -r 2 ssh://user@dummy/$TESTTMP/src 2>&1 | grep '^fastio: \(small\|changegroup\|files written\)'
  fastio: changegroup files
  fastio: files written: 40
  fastio: small changegroup: applied as stock applies it
  $ hg -R pulled pull -q --config fastio.report=yes ssh://user@dummy/$TESTTMP/src 2>&1 | grep '^fastio: \(small\|changegroup\)'
  fastio: changegroup

Every store is stock's

  $ hg -R dst verify -q
  $ storecompare src dst --ignore phaseroots
  stores identical: 48 files
  $ hg -R pulled verify -q
  $ storecompare src pulled --ignore phaseroots
  stores identical: 48 files
