A close that hangs (a hard-mounted NFS server that stopped answering;
modelled by tests/shims/faultshim.c, an LD_PRELOAD shim that makes the close of
one file sleep 20 s) while closes are in background: a Ctrl-C (or a
SIGTERM) ends the command within fastio.pending-timeout (1 s here) with an
abort naming the file, exit 255, and the rollback leaves the repository as
it was (on POSIX an open file can be removed).

  $ command -v gcc > /dev/null || exit 80
  $ gcc -O2 -shared -fPIC -o "$TESTTMP/fault.so" "$TESTDIR/../shims/faultshim.c" -ldl
  $ hg init src
  $ "$PYTHON" "$TESTDIR/../helpers/mkmany.py" src 200
  $ hg -R src commit -qAm one
  $ hg -R src bundle -q -a -t "none-v2;stream=v2" v2.hg
  $ hg -R src bundle -q -a -t none-v2 cg.hg

  $ listing() { (cd "$1" && find . ! -type d | grep -v -e '^\./\.hg/cache' -e '^\./\.hg/journal\.desc$' | sort); }
  $ now() { "$PYTHON" -c 'import time; print(time.monotonic())'; }
  $ within() { "$PYTHON" -c "import sys; print('ended within $3 s:', $2 - $1 < $3)"; }
  $ hanging() {
  >   # hanging SIGNAL BUNDLE: signal once the close of d05/f00035.i hangs
  >   rm -rf dest started; hg init dest; listing dest > before
  >   LD_PRELOAD="$TESTTMP/fault.so" FASTIO_HANG_CLOSE=data/d05/f00035.i \
  >   FASTIO_HANG_STARTED="$TESTTMP/started" FASTIO_HANG_S=20 \
  >     "$PYTHON" "$TESTDIR/../helpers/sigdefault.py" hg -R dest unbundle -q $2 \
  >     --config fastio.background-write=always --config fastio.pending-timeout=1s > out 2>&1 &
  >   pid=$!
  >   n=0; while [ ! -f started ] && [ $n -lt 1000 ]; do sleep 0.01; n=$((n+1)); done
  >   sleep 0.2
  >   start=$(now)
  >   kill -$1 $pid
  >   wait $pid
  >   echo "$1 $2: exit $?"
  >   within $start $(now) 5
  >   grep -v -e '^transaction abort!$' -e '^rollback completed$' out
  >   listing dest > after
  >   cmp -s before after && echo unchanged || diff before after | head -5
  >   hg -R dest verify -q
  > }
  $ hanging INT v2.hg
  INT v2.hg: exit 255
  ended within 5 s: True
  abort: 1 file not closed after 1.0 s (filesystem not responding), e.g. 'data/d05/f00035.i'
  unchanged
  $ hanging INT cg.hg
  INT cg.hg: exit 255
  ended within 5 s: True
  abort: 1 file not closed after 1.0 s (filesystem not responding), e.g. 'data/d05/f00035.i'
  unchanged
  $ hanging TERM v2.hg
  TERM v2.hg: exit 255
  ended within 5 s: True
  abort: 1 file not closed after 1.0 s (filesystem not responding), e.g. 'data/d05/f00035.i'
  unchanged

A failure (ENOSPC writing a later file) while the close hangs: the failure
is the abort, the abandoned close a warning, and the command does not wait
for the hung close longer than the timeout either

  $ rm -rf dest; hg init dest; listing dest > before
  $ start=$(now)
  $ LD_PRELOAD="$TESTTMP/fault.so" FASTIO_HANG_CLOSE=data/d05/f00035.i \
  >   FASTIO_HANG_S=20 FASTIO_FAIL_WRITE=data/d09/f00189.i \
  >   hg -R dest unbundle -q v2.hg --config fastio.background-write=always \
  >   --config fastio.pending-timeout=1s > out 2>&1; echo "exit $?"; within $start $(now) 5
  exit 255
  ended within 5 s: True
  $ grep -v -e '^transaction abort!$' -e '^rollback completed$' out
  fastio: 1 file not closed after 1.0 s (filesystem not responding), e.g. 'data/d05/f00035.i'
  abort: error writing 'data/d09/f00189.i': No space left on device
  $ listing dest > after; cmp -s before after && echo unchanged
  unchanged
