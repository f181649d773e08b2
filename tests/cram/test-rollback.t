What an apply leaves when it fails or is killed: the repository as it was,
byte for byte, directories included.

  $ command -v gcc > /dev/null || exit 80
  $ gcc -O2 -shared -fPIC -o "$TESTTMP/fault.so" "$TESTDIR/../shims/faultshim.c" -ldl
  $ . "$TESTDIR/../helpers/common.sh"
  $ cat >> $HGRCPATH <<EOF
  > [extensions]
  > strip =
  > [experimental]
  > stream-v3 = yes
  > EOF
  $ hg init src
  $ cd src
  $ for d in a b c d e f; do mkdir $d; for f in 1 2 3; do echo "$d$f" > $d/f$f; done; done
  $ hg commit -qAm one
  $ for d in a c e; do echo more >> $d/f1; done
  $ hg commit -qm two
  $ cd ..
  $ hg -R src bundle -q -a -t "none-v2;stream=v2" v2.hg
  $ hg -R src bundle -q -a -t "none-v2;stream=v3-exp" v3.hg
  $ hg -R src debugcreatestreamclonebundle v1.hg > /dev/null

  $ snapshot() {
  >   # every path under .hg but stock's journal.desc: directories, and
  >   # files with their content
  >   (cd "$1/.hg" && find . ! -name journal.desc | sort | while read p; do
  >     if [ -d "$p" ]; then echo "dir $p"; else echo "`md5sum < "$p" | cut -c1-12` $p"; fi
  >   done)
  > }
  $ apply() {
  >   v=$1; repo=$2; shift 2
  >   if [ $v = v1 ]; then hg -R $repo debugapplystreamclonebundle $v.hg "$@"; else hg -R $repo unbundle -q $v.hg "$@"; fi
  > }

The order each stream sends its files in (its first, middle and last file
fail below)

  $ for v in v1 v2 v3; do
  >   hg init order-$v
  >   apply $v order-$v --debug 2>&1 | sed -n 's/^adding \(\[.\] \)\{0,1\}\([^ ]*\) .*/\2/p' > $v.order
  >   n=`wc -l < $v.order`
  >   echo "$v: $n files, first `sed -n 1p $v.order`, last `sed -n '$p' $v.order`"
  > done
  v1: 21 files, first data/a/f1.i, last 00changelog.i
  v2: 24 files, first data/a/f1.i, last rbc-revs-v[12] (re)
  v3: 24 files, first data/a/f1.i, last rbc-revs-v[12] (re)

A stream applied over a store that already holds files (every revision
stripped: the revlogs are there, empty; or files left by an interrupted
operation, with content) backs each replaced file up and writes the new one
to a new file: Mercurial's backup is a hardlink, so writing through the old
file would change the backup too, and the rollback would "restore" the new
content (stock 7.2.4 ends with a corrupt store there)

  $ hg clone -q --pull src stripped
  $ hg -R stripped strip -q --no-backup -r 0
  $ hg -R stripped log -r tip -T '{rev}\n'
  -1
  $ ls -s stripped/.hg/store/data/a
  total 0
  0 f1.i
  0 f2.i
  0 f3.i
  $ hg init leftover
  $ mkdir -p leftover/.hg/store/data
  $ cp -R stripped/.hg/store/data/a stripped/.hg/store/data/c leftover/.hg/store/data/
  $ for f in leftover/.hg/store/data/*/*; do echo "left by an earlier operation" > $f; done

  $ for repo in stripped leftover; do
  >   snapshot $repo > $repo.before
  >   for v in v1 v2 v3; do
  >     n=`wc -l < $v.order`
  >     for at in 1 $((n / 2)) $n; do
  >       name=`sed -n ${at}p $v.order`
  >       LD_PRELOAD="$TESTTMP/fault.so" FASTIO_FAIL_WRITE=$name apply $v $repo > out 2>&1
  >       echo "$repo $v file $at: exit $? `grep abort: out`"
  >       snapshot $repo > after
  >       cmp -s $repo.before after && echo "  unchanged" || diff $repo.before after
  >       hg -R $repo verify -q
  >     done
  >   done
  > done
  stripped v1 file 1: exit 255 abort: error writing 'data/a/f1.i': No space left on device
    unchanged
  stripped v1 file 10: exit 255 abort: error writing 'data/d/f1.i': No space left on device
    unchanged
  stripped v1 file 21: exit 255 abort: error writing '00changelog.i': No space left on device
    unchanged
  stripped v2 file 1: exit 255 abort: error writing 'data/a/f1.i': No space left on device
    unchanged
  stripped v2 file 12: exit 255 abort: error writing 'data/d/f3.i': No space left on device
    unchanged
  stripped v2 file 24: exit 255 abort: error writing 'rbc-revs-v[12]': No space left on device (re)
    unchanged
  stripped v3 file 1: exit 255 abort: error writing 'data/a/f1.i': No space left on device
    unchanged
  stripped v3 file 12: exit 255 abort: error writing 'data/d/f3.i': No space left on device
    unchanged
  stripped v3 file 24: exit 255 abort: error writing 'rbc-revs-v[12]': No space left on device (re)
    unchanged
  leftover v1 file 1: exit 255 abort: error writing 'data/a/f1.i': No space left on device
    unchanged
  leftover v1 file 10: exit 255 abort: error writing 'data/d/f1.i': No space left on device
    unchanged
  leftover v1 file 21: exit 255 abort: error writing '00changelog.i': No space left on device
    unchanged
  leftover v2 file 1: exit 255 abort: error writing 'data/a/f1.i': No space left on device
    unchanged
  leftover v2 file 12: exit 255 abort: error writing 'data/d/f3.i': No space left on device
    unchanged
  leftover v2 file 24: exit 255 abort: error writing 'rbc-revs-v[12]': No space left on device (re)
    unchanged
  leftover v3 file 1: exit 255 abort: error writing 'data/a/f1.i': No space left on device
    unchanged
  leftover v3 file 12: exit 255 abort: error writing 'data/d/f3.i': No space left on device
    unchanged
  leftover v3 file 24: exit 255 abort: error writing 'rbc-revs-v[12]': No space left on device (re)
    unchanged

And applied for real, each store is the source's

  $ for v in v1 v2 v3; do
  >   rm -rf r; cp -a stripped r
  >   apply $v r > /dev/null
  >   hg -R r verify -q
  >   storecompare src r --content-only
  > done
  extra in destination: data/a/undo.backup.f1.i.bck
  extra in destination: data/a/undo.backup.f2.i.bck
  extra in destination: data/a/undo.backup.f3.i.bck
  extra in destination: data/b/undo.backup.f1.i.bck
  extra in destination: data/b/undo.backup.f2.i.bck
  extra in destination: data/b/undo.backup.f3.i.bck
  extra in destination: data/c/undo.backup.f1.i.bck
  extra in destination: data/c/undo.backup.f2.i.bck
  extra in destination: data/c/undo.backup.f3.i.bck
  extra in destination: data/d/undo.backup.f1.i.bck
  extra in destination: data/d/undo.backup.f2.i.bck
  extra in destination: data/d/undo.backup.f3.i.bck
  extra in destination: data/e/undo.backup.f1.i.bck
  extra in destination: data/e/undo.backup.f2.i.bck
  extra in destination: data/e/undo.backup.f3.i.bck
  extra in destination: data/f/undo.backup.f1.i.bck
  extra in destination: data/f/undo.backup.f2.i.bck
  extra in destination: data/f/undo.backup.f3.i.bck
  missing in destination: phaseroots
  stores differ: 19 of 42 files
  extra in destination: data/a/undo.backup.f1.i.bck
  extra in destination: data/a/undo.backup.f2.i.bck
  extra in destination: data/a/undo.backup.f3.i.bck
  extra in destination: data/b/undo.backup.f1.i.bck
  extra in destination: data/b/undo.backup.f2.i.bck
  extra in destination: data/b/undo.backup.f3.i.bck
  extra in destination: data/c/undo.backup.f1.i.bck
  extra in destination: data/c/undo.backup.f2.i.bck
  extra in destination: data/c/undo.backup.f3.i.bck
  extra in destination: data/d/undo.backup.f1.i.bck
  extra in destination: data/d/undo.backup.f2.i.bck
  extra in destination: data/d/undo.backup.f3.i.bck
  extra in destination: data/e/undo.backup.f1.i.bck
  extra in destination: data/e/undo.backup.f2.i.bck
  extra in destination: data/e/undo.backup.f3.i.bck
  extra in destination: data/f/undo.backup.f1.i.bck
  extra in destination: data/f/undo.backup.f2.i.bck
  extra in destination: data/f/undo.backup.f3.i.bck
  missing in destination: phaseroots
  stores differ: 19 of 42 files
  extra in destination: data/a/undo.backup.f1.i.bck
  extra in destination: data/a/undo.backup.f2.i.bck
  extra in destination: data/a/undo.backup.f3.i.bck
  extra in destination: data/b/undo.backup.f1.i.bck
  extra in destination: data/b/undo.backup.f2.i.bck
  extra in destination: data/b/undo.backup.f3.i.bck
  extra in destination: data/c/undo.backup.f1.i.bck
  extra in destination: data/c/undo.backup.f2.i.bck
  extra in destination: data/c/undo.backup.f3.i.bck
  extra in destination: data/d/undo.backup.f1.i.bck
  extra in destination: data/d/undo.backup.f2.i.bck
  extra in destination: data/d/undo.backup.f3.i.bck
  extra in destination: data/e/undo.backup.f1.i.bck
  extra in destination: data/e/undo.backup.f2.i.bck
  extra in destination: data/e/undo.backup.f3.i.bck
  extra in destination: data/f/undo.backup.f1.i.bck
  extra in destination: data/f/undo.backup.f2.i.bck
  extra in destination: data/f/undo.backup.f3.i.bck
  missing in destination: phaseroots
  stores differ: 19 of 42 files
  [1]

Killed while it creates files in directories it made (SIGKILL right after a
file is created), then "hg recover": the directories go too, not only the
files (stock and fastio before leave them, empty)

  $ hg -R src bundle -q -a -t none-v2 cg.hg
  $ hg -R src bundle -q -a -t none-v1 cg1.hg
  $ for b in v1 v2 v3 cg cg1; do
  >   rm -rf k; hg init k
  >   snapshot k > k.before
  >   if [ $b = v1 ]; then cmd=debugapplystreamclonebundle; else cmd="unbundle -q"; fi
  >   LD_PRELOAD="$TESTTMP/fault.so" FASTIO_KILL_AFTER_CREATE=data/d/f2.i hg -R k $cmd $b.hg > /dev/null 2>&1
  >   echo "$b: exit $?, directories made: `find k/.hg/store/data -mindepth 1 -type d | wc -l | sed 's/^[1-9][0-9]*$/yes/'`"
  >   hg -R k recover -q 2>&1 | grep -v -e '^rolling back interrupted transaction$' -e '^(verify step skipped'
  >   snapshot k > after
  >   cmp -s k.before after && echo "  unchanged" || diff k.before after
  > done
  v1: exit 137, directories made: yes
    unchanged
  v2: exit 137, directories made: yes
    unchanged
  v3: exit 137, directories made: yes
    unchanged
  cg: exit 137, directories made: yes
    unchanged
  cg1: exit 137, directories made: yes
    unchanged

The list of new paths is a temporary file of the transaction: gone after a
successful apply, and after a recovery even without the extension

  $ hg init ok; hg -R ok unbundle -q v2.hg; ls ok/.hg/store | grep fastio
  [1]
  $ rm -rf k; hg init k
  $ LD_PRELOAD="$TESTTMP/fault.so" FASTIO_KILL_AFTER_CREATE=data/d/f2.i hg -R k unbundle -q v2.hg > /dev/null 2>&1
  [137]
  $ ls k/.hg | grep fastio | sed 's/-[0-9a-f]\{32\}$/-TOKEN/'
  fastio-newpaths-TOKEN
  $ ls k/.hg/store | grep fastio
  [1]
  $ hg -R k recover -q --config extensions.fastio=! 2>&1 | grep -v -e '^rolling back' -e '^(verify step skipped'
  [1]
  $ ls k/.hg k/.hg/store | grep fastio
  [1]
