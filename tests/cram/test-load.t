The extension loads by path (as in $HGRCPATH here) and as an installed
package of the hgext3rd namespace, with no error, and says it is tested
with the running release (else "hg debugextensions" marks it "untested!" or
with the last tested release)

  $ hg debugextensions
  fastio
  $ hg --config extensions.fastio=! --config extensions.fastio= debugextensions -v | grep -E '^fastio|location'
  fastio
    location: */hgext3rd/fastio/__init__.py (glob)

On a Mercurial older than 6.7 the extension asks for 6.7, and Mercurial
disables it with its own message (simulated by an extension loaded first:
util._re2_options, new in 6.7, removed, and the version said to be 6.6); on
a supported one it leaves minimumhgversion out, which spares every command
Mercurial's check of it

  $ cat > old.py <<EOF
  > from mercurial import util
  > del util._re2_options
  > util.version = lambda: b"6.6"
  > EOF
  $ HGRCPATH= hg --config extensions.old=old.py --config extensions.fastio= debugextensions
  (third party extension fastio requires version 6.7 or newer of Mercurial (current: 6.6); disabling)
  old (untested!)
  $ $PYTHON -c "import hgext3rd.fastio as f; print(hasattr(f, 'minimumhgversion'))"
  False

(its help, and every option's place in it, is the manual's test: test-help.t)

Silent by default: a clone prints what stock prints

  $ . "$TESTDIR/../helpers/common.sh"
  $ hg init repo
  $ echo a > repo/a
  $ hg -R repo commit -qAm a
  $ hg -R repo bundle -q -a -t 'none-v2;stream=v2' s.hg
  $ hg init with; hg -R with unbundle s.hg > with.out 2>&1
  $ hg init without; hg --config extensions.fastio=! -R without unbundle s.hg > without.out 2>&1
  $ normtransfer with.out > a; normtransfer without.out > b; cmp a b && cat a
  7 files to transfer, 403 bytes of data
  transferred 403 bytes in X
  new changesets * (glob)
  (run 'hg update' to get a working copy)

On a release whose internals are not the ones the extension was written for
(simulated here), the part concerned keeps stock behaviour and says why in
one debug line, at its first call (for file closes, at the first block of
them)

  $ B="--config extensions.breakinternals=$TESTDIR/../helpers/breakinternals.py"
  $ hg init broken1
  $ hg $B --config breakinternals.stream=signature --config breakinternals.closing=signature --debug -R broken1 unbundle s.hg --config fastio.report=yes > broken1.out 2>&1
(the bundle file is still read through a large buffer, which needs none of
those internals: its report line)

  $ grep '^fastio' broken1.out
  fastio: Mercurial * differs from the tested releases (streamclone.consumev2(repo, fp, filecount, filesize, options) is not (repo, fp, filecount, filesize)): stock behaviour for stream clones (glob)
  fastio: Mercurial * differs from the tested releases (abstractvfs.backgroundclosing(self, ui, expectedcount, options) is not (self, ui, expectedcount)): stock behaviour for file closes (glob)
  fastio: bundle reads: 1, mean size: * bytes (glob)
  $ hg -R broken1 verify -q
  $ hg init broken2
  $ hg $B --config breakinternals.stream=missing -R broken2 unbundle s.hg --config fastio.report=yes > broken2.out 2>&1
  $ grep -v '^fastio: bundle reads' broken2.out | normtransfer > c; cmp b c
  $ hg init broken3
  $ hg $B --config breakinternals.stream=missing --debug -R broken3 unbundle s.hg 2>&1 | grep '^fastio'
  fastio: Mercurial * differs from the tested releases (streamclone.consumev1 is missing): stock behaviour for stream clones (glob)

A command that applies no stream says nothing of them

  $ hg $B --config breakinternals.stream=missing --debug version 2>&1 | grep '^fastio'
  [1]

Without --debug nothing is said, and the same unbundle is accelerated where
the internals are as expected

  $ hg $B --config breakinternals.stream=missing version -q
  Mercurial Distributed SCM (version *) (glob)
  $ hg init fast
  $ hg -R fast unbundle -q s.hg --config fastio.report=yes 2>&1 | grep '^fastio: files'
  fastio: files written: 7
