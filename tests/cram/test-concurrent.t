Readers in other processes while a changegroup is applied (closes made
slow, so the apply lasts): "hg log -r tip" sees the old tip or the new one,
never a revision in between or an error, and "hg verify" waits for the lock
and passes (locks as stock).

  $ command -v gcc > /dev/null || exit 80
  $ gcc -O2 -shared -fPIC -o "$TESTTMP/delay.so" "$ROOTDIR/fixtures/latency.c" -ldl
  $ hg init src
  $ "$PYTHON" "$TESTDIR/../helpers/mkmany.py" src 600
  $ hg -R src commit -qAm one
  $ "$PYTHON" "$TESTDIR/../helpers/mkmany.py" src 600 1
  $ hg -R src commit -qAm two
  $ "$PYTHON" "$TESTDIR/../helpers/mkmany.py" src 600 2
  $ hg -R src commit -qAm three
  $ hg -R src bundle -q --base 0 -t none-v2 cg.hg
  $ hg clone -q -U -r 0 src dest

  $ LD_PRELOAD="$TESTTMP/delay.so" FASTIO_CLOSE_DELAY_US=3000 \
  >   hg -R dest unbundle -q cg.hg --config fastio.background-write=never > apply.out 2>&1 &
  $ pid=$!
  $ while [ ! -L dest/.hg/store/lock ]; do sleep 0.01; done
  $ hg -R dest verify -q --config ui.timeout.warn=60 > verify.out 2>&1 &
  $ vpid=$!
  $ n=0
  $ while kill -0 $pid 2> /dev/null; do
  >   hg -R dest log -r tip -T '{rev}\n' >> seen 2>&1
  >   n=$((n+1))
  > done
  $ wait $pid; echo "apply exit $?"
  apply exit 0
  $ wait $vpid; echo "verify exit $?"; cat verify.out
  verify exit 0
  $ [ $n -ge 3 ] && echo "read $n times during the apply"
  read * times during the apply (glob)
  $ grep -v -x -e 0 -e 2 seen
  [1]
  $ grep -q -x 0 seen && echo "old tip seen"
  old tip seen
  $ hg -R dest log -r tip -T '{rev}\n'
  2
