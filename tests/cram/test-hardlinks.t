A local clone shares its store files with its source (hardlinks).  Nothing
written through the extension changes the source's files: every path that
appends to an existing revlog (pull and unbundle of changegroups, closes
inline or in background, an inline revlog that splits) and a stream that
replaces files left in a store, hardlinked to another repository's (with
other content).

  $ . "$TESTDIR/../helpers/common.sh"
  $ mkrepo src
  $ hg clone -q src up
  $ cd up
  $ for i in 1 2 3 4 5 6 7 8 9 10; do echo "upstream $i" >> dir/file$i; done
  $ $PYTHON -c "open('big', 'wb').write(b''.join(b'%d\n' % i for i in range(40000)))"
  $ hg commit -qAm upstream
  $ echo again >> dir/file1
  $ hg commit -qm again
  $ cd ..
  $ hg -R up bundle -q --base 1 -t zstd-v2 new.hg
  $ hg -R up bundle -q --base 1 -t none-v1 new1.hg

  $ snapshot() {
  >   (cd "$1/.hg/store" && find . -type f ! -name 'undo*' ! -name 'journal*' -print0 | sort -z | xargs -0 md5sum)
  > }
  $ snapshot src > src.before
  $ linked() {
  >   $PYTHON -c "import os, sys; print(sum(os.stat(os.path.join(r, f)).st_nlink > 1 for r, _, fs in os.walk(sys.argv[1]) for f in fs), 'files hardlinked')" $1/.hg/store/data
  > }

  $ hg clone -q -U src pulled; linked pulled
  23 files hardlinked
  $ hg -R pulled pull -q up
  $ hg clone -q -U src pulled-bg
  $ hg -R pulled-bg pull -q up --config fastio.background-write=always
  $ hg clone -q -U src unbundled; hg -R unbundled unbundle -q new.hg
  $ hg clone -q -U src unbundled1; hg -R unbundled1 unbundle -q new1.hg --config fastio.background-write=always
  $ for r in pulled pulled-bg unbundled unbundled1; do hg -R $r verify -q; hg -R $r log -r tip -T '{desc}\n'; done
  again
  again
  again
  again

  $ hg init leftover; mkdir -p leftover/.hg/store/data
  $ cp -al src/.hg/store/data/dir leftover/.hg/store/data/; linked leftover
  20 files hardlinked
  $ hg -R up bundle -q -a -t "none-v2;stream=v2" v2.hg
  $ hg -R leftover unbundle -q v2.hg
  $ hg -R leftover verify -q

The source is untouched

  $ snapshot src > src.after
  $ cmp src.before src.after && echo unchanged
  unchanged
  $ hg -R src verify -q
