SIGINT and SIGTERM while a stream bundle or a changegroup is applied (closes
made slow by an LD_PRELOAD shim, so that the signal comes mid-apply: it is
sent once the first files are in the store) roll the application back: an
"interrupted!" or "killed!" line, exit 255, the repository as before.  Then
the same under a shim that gives open files Windows' locks.

  $ command -v gcc > /dev/null || exit 80
  $ gcc -O2 -shared -fPIC -o "$TESTTMP/delay.so" "$ROOTDIR/fixtures/latency.c" -ldl
  $ gcc -O2 -shared -fPIC -o "$TESTTMP/fault.so" "$TESTDIR/../shims/faultshim.c" -ldl
  $ hg init src
  $ "$PYTHON" "$TESTDIR/../helpers/mkmany.py" src 1000
  $ hg -R src commit -qAm one
  $ "$PYTHON" "$TESTDIR/../helpers/mkmany.py" src 1000 1
  $ hg -R src commit -qAm two
  $ hg -R src bundle -q -a -t "none-v2;stream=v2" v2.hg
  $ hg -R src bundle -q -a -t none-v2 cg.hg
  $ hg -R src bundle -q --base 0 -t none-v2 cg-base0.hg
  $ hg clone -q -U -r 0 src base

(files and their sizes only: stock's changegroup rollback leaves the new
directories, empty)

  $ listing() { (cd "$1" && find . ! -type d -printf '%p %s\n' | grep -v -e '^\./\.hg/cache' -e '^\./\.hg/journal\.desc ' | sort); }
  $ interrupt() {
  >   # interrupt SIGNAL BUNDLE TEMPLATE: apply to a copy of TEMPLATE, signal
  >   # 0.5 s after the store is locked (SIGINT back to its default first:
  >   # the shell has background jobs ignore it)
  >   rm -rf dest; if [ $3 = empty ]; then hg init dest; else cp -a $3 dest; fi
  >   listing dest > before
  >   LD_PRELOAD="$TESTTMP/delay.so $PRELOAD" FASTIO_CLOSE_DELAY_US=2000 \
  >     "$PYTHON" "$TESTDIR/../helpers/sigdefault.py" hg -R dest unbundle -q $2 ${OPTS:---config fastio.background-write=never} > out 2>&1 &
  >   pid=$!
  >   n=0; while [ ! -L dest/.hg/store/lock ] && [ $n -lt 1000 ]; do sleep 0.01; n=$((n+1)); done
  >   sleep 0.5
  >   kill -$1 $pid
  >   wait $pid
  >   outcome $1 $2 $?
  > }
  $ outcome() {
  >   echo "$HOW$1 $2: exit $3"
  >   grep -v -e '^transaction abort!$' -e '^rollback completed$' out
  >   listing dest > after
  >   cmp -s before after && echo unchanged || diff before after | head -5
  >   hg -R dest verify -q
  > }

  $ for sig in INT TERM; do
  >   interrupt $sig v2.hg empty
  >   interrupt $sig cg.hg empty
  >   interrupt $sig cg-base0.hg base
  > done
  INT v2.hg: exit 255
  interrupted!
  unchanged
  INT cg.hg: exit 255
  interrupted!
  unchanged
  INT cg-base0.hg: exit 255
  interrupted!
  unchanged
  TERM v2.hg: exit 255
  killed!
  unchanged
  TERM cg.hg: exit 255
  killed!
  unchanged
  TERM cg-base0.hg: exit 255
  killed!
  unchanged

The signal as the close of a revlog's write handle starts, its buffer not
written yet (tests/helpers/signalat.py sends it then; Python runs a handler between
any two bytecodes, and the extension's close is Python code): the revision
appended to an existing filelog is flushed before the rollback truncates
the file, not after it (then the file would keep it)

  $ for sig in INT TERM; do
  >   for mode in never always; do
  >     rm -rf dest; cp -a base dest; listing dest > before
  >     FASTIO_SIGNAL=$sig FASTIO_SIGNAL_BEFORE_CLOSE=data/d05/f00875.i \
  >       hg -R dest unbundle -q cg-base0.hg --config fastio.background-write=$mode \
  >       --config extensions.sig="$TESTDIR/../helpers/signalat.py" > out 2>&1
  >     HOW="$mode: " outcome $sig cg-base0.hg $?
  >   done
  > done
  never: INT cg-base0.hg: exit 255
  interrupted!
  unchanged
  always: INT cg-base0.hg: exit 255
  interrupted!
  unchanged
  never: TERM cg-base0.hg: exit 255
  killed!
  unchanged
  always: TERM cg-base0.hg: exit 255
  killed!
  unchanged

A source that stops sending in the middle of a large file (a hung server;
here a pipe that stays open): one signal is enough.  A file larger than
1 MB is written as it comes, the descriptor in hand; signals are held only
from its open to the point where an interrupt closes it

  $ hg init big
  $ "$PYTHON" -c 'import os; open("big/large", "wb").write(os.urandom(3 << 20))'
  $ hg -R big commit -qAm large
  $ hg -R big bundle -q -a -t "none-v2;stream=v2" big-v2.hg
  $ for sig in INT TERM; do
  >   rm -rf dest; hg init dest; listing dest > before
  >   "$PYTHON" "$TESTDIR/../helpers/stalled.py" big-v2.hg $sig -R dest unbundle -q | grep -v -e '^transaction abort!$' -e '^rollback completed$'
  >   listing dest > after
  >   cmp -s before after && echo unchanged || diff before after | head -5
  > done
  exit 255 within 5 s of one SIGINT
  interrupted!
  unchanged
  exit 255 within 5 s of one SIGTERM
  killed!
  unchanged

The same with closes pending in background, on a filesystem that refuses
to remove or rename a file still open (Windows; modelled by
tests/shims/winlockshim.c, an LD_PRELOAD shim): the rollback removes every file,
so no descriptor may be open when it runs, neither a pending close nor one
in hand between its open and its hand-over to the closer

  $ gcc -O2 -shared -fPIC -o "$TESTTMP/winlock.so" "$TESTDIR/../shims/winlockshim.c" -ldl
  $ "$PYTHON" - <<'PY'
  > import subprocess, sys, os
  > code = """if 1:
  >     import os
  >     fd = os.open("f", os.O_CREAT | os.O_WRONLY)
  >     for call in (lambda: os.unlink("f"), lambda: os.rename("f", "g")):
  >         try:
  >             call()
  >         except PermissionError as exc:
  >             print(exc)
  >     os.close(fd)
  >     os.unlink("f")
  >     print("removed once closed")
  > """
  > env = dict(os.environ, LD_PRELOAD=os.environ["TESTTMP"] + "/winlock.so")
  > subprocess.run([sys.executable, "-c", code], env=env, check=True)
  > PY
  [Errno 13] Permission denied: 'f'
  [Errno 13] Permission denied: 'f' -> 'g'
  removed once closed

The signal right after a file is opened, before the writer hands its
descriptor over (tests/helpers/signalat.py sends it from os.open: Python
runs the handler as the open returns), then from outside as above.  New
files are opened on the applying thread when it writes them itself
(fastio.background-write=never); in the background the file writer's
threads make them

  $ inhand() {
  >   rm -rf dest; hg init dest; listing dest > before
  >   opts="--config fastio.background-write=never"
  >   LD_PRELOAD="$TESTTMP/delay.so $PRELOAD" FASTIO_CLOSE_DELAY_US=2000 \
  >   FASTIO_SIGNAL=$1 FASTIO_SIGNAL_AFTER_OPEN=data/d05/f00305.i \
  >     hg -R dest unbundle -q $2 $opts \
  >     --config extensions.sig="$TESTDIR/../helpers/signalat.py" > out 2>&1
  >   outcome $1 $2 $?
  > }
(two closing threads, not more: the apply must last past the signal)

  $ export PRELOAD="$TESTTMP/winlock.so"
  $ export OPTS="--config fastio.background-write=always --config fastio.write-threads=2"
  $ for how in inhand interrupt; do
  >   for sig in INT TERM; do
  >     HOW="$how: " $how $sig v2.hg empty
  >     HOW="$how: " $how $sig cg.hg empty
  >   done
  > done
  inhand: INT v2.hg: exit 255
  interrupted!
  unchanged
  inhand: INT cg.hg: exit 255
  interrupted!
  unchanged
  inhand: TERM v2.hg: exit 255
  killed!
  unchanged
  inhand: TERM cg.hg: exit 255
  killed!
  unchanged
  interrupt: INT v2.hg: exit 255
  interrupted!
  unchanged
  interrupt: INT cg.hg: exit 255
  interrupted!
  unchanged
  interrupt: TERM v2.hg: exit 255
  killed!
  unchanged
  interrupt: TERM cg.hg: exit 255
  killed!
  unchanged

A hook that fails after the changegroup is applied: rolled back as cleanly

  $ rm -rf dest; hg init dest; listing dest > before
  $ LD_PRELOAD="$TESTTMP/delay.so $PRELOAD" FASTIO_CLOSE_DELAY_US=2000 \
  >   hg -R dest unbundle -q cg.hg --config fastio.background-write=always \
  >   --config hooks.pretxnchangegroup=false > out 2>&1; outcome hook cg.hg $?
  hook cg.hg: exit 255
  abort: pretxnchangegroup hook exited with status 1
  unchanged
  $ unset PRELOAD OPTS

SIGKILL right after a new revlog file is created, before the revlog journals
it (stock's order): fastio journals it first, so hg recover leaves no stray
file (stock leaves it behind, empty)

  $ killed() {
  >   rm -rf dest; cp -a $2 dest 2>/dev/null || hg init dest
  >   listing dest > before
  >   LD_PRELOAD="$TESTTMP/fault.so" FASTIO_KILL_AFTER_CREATE=$3 hg -R dest unbundle -q $1 > /dev/null 2>&1
  >   echo "exit $?"
  >   hg -R dest recover -q 2>&1 | grep -v -e '^rolling back interrupted transaction$' -e '^(verify step skipped'
  >   listing dest > after
  >   cmp -s before after && echo unchanged || diff before after | head -5
  >   hg -R dest verify -q
  > }
  $ killed cg.hg empty 00manifest.i
  exit 137
  unchanged
  $ killed cg.hg empty data/d01/f00031.i
  exit 137
  unchanged
