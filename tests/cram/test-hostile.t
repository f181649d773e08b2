Stream bundles (v1, v2, v3) whose file names are not plain store paths are
refused: one abort line, exit 255, and the destination repository and its
parent directory exactly as before (caches aside, and .hg/journal.desc,
which every aborted transaction leaves, stock's included).  From a bundle
file, every name is checked before anything is written (prescan.py walks
the whole stream first); from a pipe there is no going back, and a name at
the end of a stream larger than the read buffer comes after files were
written, which the rollback removes with the directories made for them.

  $ . "$TESTDIR/../helpers/common.sh"
  $ mkrepo src
  $ "$PYTHON" -c "
  > import random; r = random.Random(4)
  > open('src/big', 'wb').write(bytes(r.randrange(256) for _ in range(200000)))"
  $ hg -R src commit -qAm big
  $ hg -R src bundle -q -a -t "none-v2;stream=v2" v2.hg
  $ hg -R src bundle -q -a -t "none-v2;stream=v3-exp" --config experimental.stream-v3=yes v3.hg
  $ hg -R src debugcreatestreamclonebundle v1.hg > /dev/null

  $ kit() { "$PYTHON" "$ROOTDIR/fixtures/bundlekit.py" "$@"; }
  $ kit files v2.hg | head -3
  s data/.hgtags-not.i
  s data/Upper Case/File.TXT.i
  s data/big.d
  $ kit files v1.hg | tail -1
  s 00changelog.i
  $ kit files v3.hg | tail -1
  c rbc-revs-v* (glob)

  $ listing() {
  >   find . | grep -v -e '^\./dest/\.hg/cache' -e '^\./dest/\.hg/journal\.desc$' | sort
  > }
  $ try() {
  >   # rename file $2 of bundle $1 to $3, apply it to a new repository
  >   kit rename $1.hg hostile.hg $2 "$3"
  >   rm -rf par; mkdir par; hg init par/dest
  >   (cd par && listing > ../before)
  >   if [ $1 = v1 ]; then cmd=debugapplystreamclonebundle; else cmd="unbundle -q"; fi
  >   if [ -n "$PIPE" ]; then input=/dev/stdin; else input=hostile.hg; fi
  >   cat hostile.hg | hg -R par/dest $cmd --config experimental.stream-v3=yes \
  >     --config fastio.buffer-size=64k $input > out 2>&1
  >   rc=$?
  >   (cd par && listing > ../after)
  >   printf '%s %s exit %s: %s x %s\n' $1 $2 $rc `grep -c '^abort:' out` "`grep '^abort:' out`"
  >   grep -e Traceback -e 'Unknown exception' out
  >   grep -q 'transaction abort' out && echo "  (written, then rolled back)"
  >   cmp -s before after || diff before after
  > }

Each name first in the bundle: refused before anything is written (v1's
NUL and newline cannot be told from a malformed header line)

  $ for v in v1 v2 v3; do
  >   for name in 'data/../../evil.i' '../evil.i' '/tmp/fastio-abs-evil.i' \
  >       'data/.hg/hgrc.i' '.hg/hgrc' 'data/a\0b.i' 'data/a\nb.i' 'data/./x.i' ''; do
  >     try $v 0 "$name"
  >   done
  > done
  v1 0 exit 255: 1 x abort: refusing to write 'data/../../evil.i' from stream: not a relative store path
  v1 0 exit 255: 1 x abort: refusing to write '../evil.i' from stream: not a relative store path
  v1 0 exit 255: 1 x abort: refusing to write '/tmp/fastio-abs-evil.i' from stream: not a relative store path
  v1 0 exit 255: 1 x abort: refusing to write 'data/.hg/hgrc.i' from stream: not a relative store path
  v1 0 exit 255: 1 x abort: refusing to write '.hg/hgrc' from stream: not a relative store path
  v1 0 exit 255: 1 x abort: unexpected response from remote server:
  v1 0 exit 255: 1 x abort: unexpected response from remote server:
  v1 0 exit 255: 1 x abort: refusing to write 'data/./x.i' from stream: not a relative store path
  v1 0 exit 255: 1 x abort: refusing to write '' from stream: empty name
  v2 0 exit 255: 1 x abort: refusing to write 'data/../../evil.i' from stream: not a relative store path
  v2 0 exit 255: 1 x abort: refusing to write '../evil.i' from stream: not a relative store path
  v2 0 exit 255: 1 x abort: refusing to write '/tmp/fastio-abs-evil.i' from stream: not a relative store path
  v2 0 exit 255: 1 x abort: refusing to write 'data/.hg/hgrc.i' from stream: not a relative store path
  v2 0 exit 255: 1 x abort: refusing to write '.hg/hgrc' from stream: not a relative store path
  v2 0 exit 255: 1 x abort: refusing to write 'data/a\0b.i' from stream: not a relative store path
  v2 0 exit 255: 1 x abort: refusing to write 'data/a\nb.i' from stream: not a relative store path
  v2 0 exit 255: 1 x abort: refusing to write 'data/./x.i' from stream: not a relative store path
  v2 0 exit 255: 1 x abort: refusing to write '' from stream: empty name
  v3 0 exit 255: 1 x abort: refusing to write 'data/../../evil.i' from stream: not a relative store path
  v3 0 exit 255: 1 x abort: refusing to write '../evil.i' from stream: not a relative store path
  v3 0 exit 255: 1 x abort: refusing to write '/tmp/fastio-abs-evil.i' from stream: not a relative store path
  v3 0 exit 255: 1 x abort: refusing to write 'data/.hg/hgrc.i' from stream: not a relative store path
  v3 0 exit 255: 1 x abort: refusing to write '.hg/hgrc' from stream: not a relative store path
  v3 0 exit 255: 1 x abort: refusing to write 'data/a\0b.i' from stream: not a relative store path
  v3 0 exit 255: 1 x abort: refusing to write 'data/a\nb.i' from stream: not a relative store path
  v3 0 exit 255: 1 x abort: refusing to write 'data/./x.i' from stream: not a relative store path
  v3 0 exit 255: 1 x abort: refusing to write '' from stream: empty name

A few last, after more than the read buffer of files: from the bundle file,
refused before anything is written (no transaction to roll back)

  $ for v in v1 v2 v3; do
  >   for name in 'data/../evil.i' 'data/.hg/hgrc.i' 'data/a\0b.i'; do
  >     try $v -1 "$name"
  >   done
  > done
  v1 -1 exit 255: 1 x abort: refusing to write 'data/../evil.i' from stream: not a relative store path
  v1 -1 exit 255: 1 x abort: refusing to write 'data/.hg/hgrc.i' from stream: not a relative store path
  v1 -1 exit 255: 1 x abort: unexpected response from remote server:
  v2 -1 exit 255: 1 x abort: refusing to write 'data/../evil.i' from stream: not a relative store path
  v2 -1 exit 255: 1 x abort: refusing to write 'data/.hg/hgrc.i' from stream: not a relative store path
  v2 -1 exit 255: 1 x abort: refusing to write 'data/a\0b.i' from stream: not a relative store path
  v3 -1 exit 255: 1 x abort: refusing to write 'data/../evil.i' from stream: not a relative store path
  v3 -1 exit 255: 1 x abort: refusing to write 'data/.hg/hgrc.i' from stream: not a relative store path
  v3 -1 exit 255: 1 x abort: refusing to write 'data/a\0b.i' from stream: not a relative store path

v1 names are partly encoded (".hg.hg/" stands for ".hg/"): checked decoded

  $ try v1 -1 'data/.hg.hg/x.i'
  v1 -1 exit 255: 1 x abort: refusing to write 'data/.hg/x.i' from stream: not a relative store path

The same from a pipe: written, then rolled back

  $ export PIPE=1
  $ for v in v1 v2 v3; do
  >   for name in 'data/../evil.i' 'data/.hg/hgrc.i' 'data/a\0b.i'; do
  >     try $v -1 "$name"
  >   done
  > done
  v1 -1 exit 255: 1 x abort: refusing to write 'data/../evil.i' from stream: not a relative store path
    (written, then rolled back)
  v1 -1 exit 255: 1 x abort: refusing to write 'data/.hg/hgrc.i' from stream: not a relative store path
    (written, then rolled back)
  v1 -1 exit 255: 1 x abort: unexpected response from remote server:
    (written, then rolled back)
  v2 -1 exit 255: 1 x abort: refusing to write 'data/../evil.i' from stream: not a relative store path
    (written, then rolled back)
  v2 -1 exit 255: 1 x abort: refusing to write 'data/.hg/hgrc.i' from stream: not a relative store path
    (written, then rolled back)
  v2 -1 exit 255: 1 x abort: refusing to write 'data/a\0b.i' from stream: not a relative store path
    (written, then rolled back)
  v3 -1 exit 255: 1 x abort: refusing to write 'data/../evil.i' from stream: not a relative store path
    (written, then rolled back)
  v3 -1 exit 255: 1 x abort: refusing to write 'data/.hg/hgrc.i' from stream: not a relative store path
    (written, then rolled back)
  v3 -1 exit 255: 1 x abort: refusing to write 'data/a\0b.i' from stream: not a relative store path
    (written, then rolled back)
  $ unset PIPE
  $ ls /tmp/fastio-abs-evil.i
  ls: cannot access '/tmp/fastio-abs-evil.i': No such file or directory
  [2]

A name given twice (stock writes both and ends with a repository that
fails verify): the second create of a name the stream already made is
refused (O_EXCL), and the rollback leaves the repository as before

  $ for v in v1 v2 v3; do
  >   name=`kit files $v.hg | sed -n '1s/^s //p'`
  >   try $v 1 "$name"
  > done
  v1 1 exit 255: 1 x abort: error writing 'data/.hgtags-not.i': File exists
    (written, then rolled back)
  v2 1 exit 255: 1 x abort: error writing 'data/.hgtags-not.i': File exists
    (written, then rolled back)
  v3 1 exit 255: 1 x abort: error writing 'data/.hgtags-not.i': File exists
    (written, then rolled back)
