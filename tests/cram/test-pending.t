A hook sees every file the apply wrote: everything handed to the file writer
(files in memory, queued creates, pending closes) is on disk before any hook
runs and before and after the transaction writes its pending data for
others to read (HG_PENDING).  Here creates and closes are slow (an
LD_PRELOAD shim), so that the writer's threads are behind when stock's
apply reaches its hooks; each hook reads the whole pending repository
from another process.  (Auto mode: the changelog is closed before closes
move to the threads, so stock reading it back before the hook waits for
nothing; with every close on the threads, that read would wait for all.)

  $ command -v gcc > /dev/null || exit 80
  $ gcc -O2 -shared -fPIC -o "$TESTTMP/latency.so" "$ROOTDIR/fixtures/latency.c" -ldl
  $ hg init src
  $ "$PYTHON" "$TESTDIR/../helpers/mkmany.py" src 300
  $ hg -R src commit -qAm one
  $ hg -R src bundle -q -a -t zstd-v2 all.hg
  $ hg -R src archive -q -t tar --prefix x -r tip - | md5sum > expected

  $ cat > check.sh <<'EOF'
  > # in the hook: the pending repository's tip is the source's tip, file
  > # by file (hg verify would wait for the lock the apply holds)
  > env -u LD_PRELOAD hg archive -q -t tar --prefix x -r tip - | md5sum | cmp -s - "$TESTTMP/expected" || echo "$1: contents differ"
  > echo "$1: `env -u LD_PRELOAD hg files -r tip | wc -l | tr -d ' '` files"
  > EOF
  $ slow() {
  >   LD_PRELOAD="$TESTTMP/latency.so" FASTIO_DELAY_CREATE_US=20000 FASTIO_CLOSE_DELAY_US=20000 "$@" \
  >     --config fastio.max-write-threads=3
  > }

An unbundle into an empty repository (its changelog is written to
00changelog.i.a from the start: nothing of stock reads the store back before
the hook), and one that adds to existing revlogs

  $ hg init dest
  $ cd dest
  $ slow hg unbundle -q ../all.hg \
  >   --config hooks.pretxnchangegroup="sh $TESTTMP/check.sh pretxnchangegroup" \
  >   --config hooks.pretxnclose="sh $TESTTMP/check.sh pretxnclose"
  pretxnchangegroup: 300 files
  pretxnclose: 300 files
  $ hg verify -q
  $ cd ..

  $ "$PYTHON" "$TESTDIR/../helpers/mkmany.py" src 300 2
  $ hg -R src commit -qm two
  $ hg -R src bundle -q -r tip --base 0 -t zstd-v2 two.hg
  $ hg -R src archive -q -t tar --prefix x -r tip - | md5sum > expected
  $ cd dest
  $ slow hg unbundle -q ../two.hg \
  >   --config hooks.pretxnchangegroup="sh $TESTTMP/check.sh pretxnchangegroup"
  pretxnchangegroup: 300 files
  $ cd ..

A pull (an in-process Python hook that starts the reader itself, as a
server's hooks do: no pending data written for it) sees the same

  $ cat > pyhook.py <<'EOF'
  > import os, subprocess
  > def check(ui, repo, hooktype, **kwargs):
  >     repo.currenttransaction().writepending()
  >     env = dict(os.environ, HG_PENDING=repo.root.decode())
  >     script = os.path.join(os.environ["TESTTMP"], "check.sh")
  >     subprocess.check_call(["sh", script, hooktype], env=env, cwd=repo.root)
  > EOF
  $ hg init pulled
  $ slow hg -R pulled pull -q src \
  >   --config hooks.pretxnchangegroup.py="python:$TESTTMP/pyhook.py:check"
  pretxnchangegroup: 300 files
  $ hg -R pulled verify -q
