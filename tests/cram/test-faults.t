A write or a close that fails (ENOSPC, injected by an LD_PRELOAD shim) while
a bundle is applied ends with one abort line, a non-zero exit, and a
repository with no file or directory it did not have before: changegroups and stream
bundles v1, v2 and v3, closes inline and in background.

  $ command -v gcc > /dev/null || exit 80
  $ gcc -O2 -shared -fPIC -o "$TESTTMP/fault.so" "$TESTDIR/../shims/faultshim.c" -ldl
  $ . "$TESTDIR/../helpers/common.sh"
  $ mkrepo src
  $ hg -R src bundle -q -a -t zstd-v2 cg.hg
  $ hg -R src bundle -q -a -t none-v1 cg1.hg
  $ hg -R src bundle -q -a -t "none-v2;stream=v2" v2.hg
  $ hg -R src bundle -q -a -t "none-v2;stream=v3-exp" --config experimental.stream-v3=yes v3.hg
  $ hg -R src debugcreatestreamclonebundle v1.hg > /dev/null

  $ apply() {
  >   # apply BUNDLE with FAULT=PATTERN in a new repository, show the store
  >   bundle=$1; fault=$2; pattern=$3; shift 3
  >   rm -rf dest; hg init dest
  >   if [ $bundle = v1.hg ]; then cmd="debugapplystreamclonebundle"; else cmd="unbundle -q"; fi
  >   LD_PRELOAD="$TESTTMP/fault.so" env FASTIO_FAIL_$fault=$pattern hg -R dest $cmd "$@" --config experimental.stream-v3=yes $bundle > out 2>&1
  >   echo "exit $?"
  >   grep -E '^(abort|Traceback)' out
  >   (cd dest/.hg/store && find . -mindepth 1 | sort | tr '\n' ' '; echo)
  > }

  $ for bundle in cg.hg cg1.hg v2.hg v3.hg v1.hg; do
  >   for mode in never always; do
  >     for target in data/dir/file1.i 00changelog.i; do
  >       echo "== $bundle close $target $mode"
  >       apply $bundle CLOSE $target --config fastio.background-write=$mode
  >     done
  >   done
  >   for mode in never always; do
  >     echo "== $bundle write $mode"
  >     apply $bundle WRITE data/dir/sub/f5.txt.i --config fastio.background-write=$mode
  >   done
  > done
  == cg.hg close data/dir/file1.i never
  exit 255
  abort: error closing 'data/dir/file1.i': No space left on device
  ./requires 
  == cg.hg close 00changelog.i never
  exit 255
  abort: No space left on device
  ./requires 
  == cg.hg close data/dir/file1.i always
  exit 255
  abort: error closing 'data/dir/file1.i': No space left on device
  ./requires 
  == cg.hg close 00changelog.i always
  exit 255
  abort: No space left on device
  ./requires 
  == cg.hg write never
  exit 255
  abort: No space left on device
  ./requires 
  == cg.hg write always
  exit 255
  abort: error writing 'data/dir/sub/f5.txt.i': No space left on device
  ./requires 
  == cg1.hg close data/dir/file1.i never
  exit 255
  abort: error closing 'data/dir/file1.i': No space left on device
  ./requires 
  == cg1.hg close 00changelog.i never
  exit 255
  abort: No space left on device
  ./requires 
  == cg1.hg close data/dir/file1.i always
  exit 255
  abort: error closing 'data/dir/file1.i': No space left on device
  ./requires 
  == cg1.hg close 00changelog.i always
  exit 255
  abort: No space left on device
  ./requires 
  == cg1.hg write never
  exit 255
  abort: No space left on device
  ./requires 
  == cg1.hg write always
  exit 255
  abort: error writing 'data/dir/sub/f5.txt.i': No space left on device
  ./requires 
  == v2.hg close data/dir/file1.i never
  exit 255
  abort: error closing 'data/dir/file1.i': No space left on device
  ./requires 
  == v2.hg close 00changelog.i never
  exit 255
  abort: error closing '00changelog.i': No space left on device
  ./requires 
  == v2.hg close data/dir/file1.i always
  exit 255
  abort: error closing 'data/dir/file1.i': No space left on device
  ./requires 
  == v2.hg close 00changelog.i always
  exit 255
  abort: error closing '00changelog.i': No space left on device
  ./requires 
  == v2.hg write never
  exit 255
  abort: error writing 'data/dir/sub/f5.txt.i': No space left on device
  ./requires 
  == v2.hg write always
  exit 255
  abort: error writing 'data/dir/sub/f5.txt.i': No space left on device
  ./requires 
  == v3.hg close data/dir/file1.i never
  exit 255
  abort: error closing 'data/dir/file1.i': No space left on device
  ./requires 
  == v3.hg close 00changelog.i never
  exit 255
  abort: error closing '00changelog.i': No space left on device
  ./requires 
  == v3.hg close data/dir/file1.i always
  exit 255
  abort: error closing 'data/dir/file1.i': No space left on device
  ./requires 
  == v3.hg close 00changelog.i always
  exit 255
  abort: error closing '00changelog.i': No space left on device
  ./requires 
  == v3.hg write never
  exit 255
  abort: error writing 'data/dir/sub/f5.txt.i': No space left on device
  ./requires 
  == v3.hg write always
  exit 255
  abort: error writing 'data/dir/sub/f5.txt.i': No space left on device
  ./requires 
  == v1.hg close data/dir/file1.i never
  exit 255
  abort: error closing 'data/dir/file1.i': No space left on device
  ./requires 
  == v1.hg close 00changelog.i never
  exit 255
  abort: error closing '00changelog.i': No space left on device
  ./requires 
  == v1.hg close data/dir/file1.i always
  exit 255
  abort: error closing 'data/dir/file1.i': No space left on device
  ./requires 
  == v1.hg close 00changelog.i always
  exit 255
  abort: error closing '00changelog.i': No space left on device
  ./requires 
  == v1.hg write never
  exit 255
  abort: error writing 'data/dir/sub/f5.txt.i': No space left on device
  ./requires 
  == v1.hg write always
  exit 255
  abort: error writing 'data/dir/sub/f5.txt.i': No space left on device
  ./requires 

A checkout whose close or write of a working copy file fails (closes inline
and in background) aborts with that error.  The working copy is left as
stock leaves it (the files written so far, untracked): ``hg update --clean``
repairs it, with a clean status and the files of the revision.

  $ hg clone -q -U src co
  $ for what in CLOSE WRITE; do
  >   for mode in never always; do
  >     echo "== checkout $what $mode"
  >     rm -rf co-now; cp -a co co-now
  >     LD_PRELOAD="$TESTTMP/fault.so" env FASTIO_FAIL_$what=sub/f5.txt hg -R co-now update -q tip --config fastio.background-write=$mode > out 2>&1
  >     echo "exit $?"
  >     grep -E '^(abort|Traceback)' out | sed "s#$TESTTMP#TESTTMP#"
  >     hg -R co-now update -q --clean tip
  >     hg -R co-now status
  >     cat co-now/dir/sub/f5.txt
  >   done
  > done
  == checkout CLOSE never
  exit 255
  abort: error closing 'TESTTMP/co-now/dir/sub/f5.txt': No space left on device
  sub 5
  == checkout CLOSE always
  exit 255
  abort: error closing 'TESTTMP/co-now/dir/sub/f5.txt': No space left on device
  sub 5
  == checkout WRITE never
  exit 255
  abort: error closing 'TESTTMP/co-now/dir/sub/f5.txt': No space left on device
  sub 5
  == checkout WRITE always
  exit 255
  abort: error closing 'TESTTMP/co-now/dir/sub/f5.txt': No space left on device
  sub 5
