The extension obeys on disk only what it wrote itself.  Its list of new
paths, which "hg recover" acts on, is in .hg (no stream, bundle or pull
writes there), created afresh, and read back only when the journal being
rolled back names it.  A stream carrying a file under a name the extension
keeps (its list of earlier releases at the top of the store, the probe
cache of earlier releases in .hg/cache) is refused.

  $ command -v gcc > /dev/null || exit 80
  $ gcc -O2 -shared -fPIC -o "$TESTTMP/fault.so" "$TESTDIR/../shims/faultshim.c" -ldl
  $ . "$TESTDIR/../helpers/common.sh"
  $ kit() { "$PYTHON" "$ROOTDIR/fixtures/bundlekit.py" "$@"; }
  $ hg init src
  $ cd src
  $ for d in a b c; do mkdir $d; for f in 1 2 3; do echo "$d$f" > $d/f$f; done; done
  $ hg commit -qAm one
  $ cd ..
  $ hg -R src bundle -q -a -t "none-v2;stream=v2" v2.hg
  $ hg -R src bundle -q -a -t "none-v2;stream=v3-exp" --config experimental.stream-v3=yes v3.hg
  $ hg -R src debugcreatestreamclonebundle v1.hg > /dev/null

A crafted stream bundle: a store file named as the list of new paths was
(.hg/store/fastio-newpaths), naming the whole data/ directory and .hg/hgrc,
as an earlier release of the extension would have obeyed it

  $ printf 'store\0data/\nplain\0hgrc\n' > list
  $ kit add v2.hg crafted-v2.hg s fastio-newpaths list
  $ kit add v3.hg crafted-v3.hg s fastio-newpaths list
  $ kit add v1.hg crafted-v1.hg s fastio-newpaths list
  $ kit add v2.hg crafted-cache.hg c fastio-probe list

The extension refuses each: one abort line, the repository as it was

  $ for b in v1 v2 v3 cache; do
  >   rm -rf r; hg init r; ls -R r/.hg > before
  >   if [ $b = v1 ]; then cmd=debugapplystreamclonebundle; else cmd="unbundle -q"; fi
  >   hg -R r $cmd --config experimental.stream-v3=yes crafted-$b.hg 2>&1 | grep -e '^abort' -e Traceback
  >   ls -R r/.hg | grep -v journal.desc > after; grep -v journal.desc before | diff - after
  > done
  abort: refusing to write 'fastio-newpaths' from stream: a name the fastio extension keeps
  abort: refusing to write 'fastio-newpaths' from stream: a name the fastio extension keeps
  abort: refusing to write 'fastio-newpaths' from stream: a name the fastio extension keeps
  abort: refusing to write 'fastio-probe' from stream: a name the fastio extension keeps

Stock applies it without a word (the list is planted), and the repository
is whole

  $ hg init victim
  $ hg -R victim unbundle -q crafted-v2.hg --config extensions.fastio=!
  $ cat victim/.hg/store/fastio-newpaths | tr '\0' ' '
  store data/
  plain hgrc
  $ printf '[ui]\nusername = victim\n' > victim/.hg/hgrc
  $ hg -R victim update -q tip

Then a pull with the extension is killed in its transaction, right after
it creates a file in a directory it made, and "hg recover" with the
extension rolls back the pull only: data/ and .hg/hgrc are still there and
the repository verifies, exactly as before the pull

  $ cd src; mkdir d; echo d1 > d/f1; echo d2 > d/f2; hg commit -qAm two; cd ..
  $ (cd victim/.hg && find . | grep -v -e journal -e '^./cache' -e '^./wcache' -e dirstate -e undo -e lock | sort) > before
  $ LD_PRELOAD="$TESTTMP/fault.so" FASTIO_KILL_AFTER_CREATE=data/d/f2.i hg -R victim pull -q src > /dev/null 2>&1
  [137]
  $ ls victim/.hg | grep fastio-newpaths | sed 's/-[0-9a-f]\{32\}$/-TOKEN/'
  fastio-newpaths-TOKEN
  $ hg -R victim recover -q 2>&1 | grep -v -e '^rolling back interrupted transaction$' -e '^(verify step skipped'
  [1]
  $ (cd victim/.hg && find . | grep -v -e journal -e '^./cache' -e '^./wcache' -e dirstate -e undo -e lock | sort) > after
  $ diff before after
  $ cat victim/.hg/hgrc
  [ui]
  username = victim
  $ hg -R victim verify -q
  $ hg -R victim log -T '{rev} {desc}\n'
  0 one

The planted file is not the extension's: it is left as stock left it

  $ ls victim/.hg/store | grep fastio
  fastio-newpaths

The same pull, now whole, leaves no list behind

  $ hg -R victim pull -q src
  $ ls victim/.hg | grep fastio
  [1]
  $ hg -R victim verify -q
