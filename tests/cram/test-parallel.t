A changegroup's file revlogs applied by worker processes (apply/parallel.py):
the store byte for byte stock's, the same output, hooks seeing every
revision; a failure in a worker (an error, a full disk, its death), the
death of the applying process and an interrupt leave the repository as it
was (or what hg recover restores) and no process behind.  Workers are forced
here on changegroups of any size (devel.fastio.parallel-min-files).

  $ . "$TESTDIR/../helpers/common.sh"
  $ cat >> $HGRCPATH <<EOF
  > [devel]
  > fastio.parallel-min-files = 1
  > [fastio]
  > apply-workers = 2
  > EOF
  $ stock() { hg --config extensions.fastio=! "$@"; }
  $ workers_alive() {
  >   # the processes in $TESTTMP/pids still running (a zombie waits for a
  >   # reaper: it is dead)
  >   "$PYTHON" -c '
  > import sys
  > alive = []
  > for pid in {int(l.split()[0]) for l in open(sys.argv[1])}:
  >     try:
  >         state = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0]
  >     except OSError:
  >         continue
  >     if state != "Z":
  >         alive.append(pid)
  > print("workers alive:", alive)' "$TESTTMP/pids"
  > }

A history of 5 changesets, 40 files in 4 directories; "grow" is inline in the
first changeset and outgrows an inline revlog later (its split is finalized
in the parent's transaction), "big" is split from its first revision.

  $ hg init src
  $ cd src
  $ "$PYTHON" - <<EOF
  > import os, random
  > r = random.Random(7)
  > for d in range(4):
  >     os.makedirs("d%d" % d)
  >     for f in range(10):
  >         open("d%d/f%d" % (d, f), "w").write("line %d\n" % f * r.randrange(1, 200))
  > open("grow", "wb").write(bytes(r.randrange(256) for _ in range(2000)))
  > open("big", "wb").write(bytes(r.randrange(256) for _ in range(300000)))
  > EOF
  $ hg commit -qAm 1
  $ for i in 2 3 4 5; do
  >   "$PYTHON" -c "
  > import random; r = random.Random($i)
  > for d in range(0, 4, 2):
  >     open('d%d/f$i' % d, 'a').write('more\n' * r.randrange(1, 50))
  > open('grow', 'ab').write(bytes(r.randrange(256) for _ in range(50000)))"
  >   hg commit -qm $i
  > done
  $ cd ..
  $ hg -R src bundle -q -a -t zstd-v2 all.hg
  $ hg -R src bundle -q --base null -r 0 -t zstd-v2 first.hg
  $ hg -R src bundle -q --base 0 -r tip -t zstd-v2 rest.hg

Into an empty repository: stock's store, stock's output.

  $ stock init ref
  $ stock -R ref unbundle all.hg > ref.out
  $ hg init dest
  $ hg -R dest unbundle all.hg > dest.out
  $ cmp ref.out dest.out && cat dest.out
  adding changesets
  adding manifests
  adding file changes
  added 5 changesets with 54 changes to 42 files
  new changesets bd9b0f54d41f:2132046a3d9f (5 drafts)
  (run 'hg update' to get a working copy)
  $ storecompare ref dest
  stores identical: 50 files
  $ hg -R dest verify -q
  $ ls dest/.hg/store/data/big.* dest/.hg/store/data/grow.*
  dest/.hg/store/data/big.d
  dest/.hg/store/data/big.i
  dest/.hg/store/data/grow.d
  dest/.hg/store/data/grow.i

--debug says so; a worker applied the files (not the applying process: 42
files make one task).

  $ rm -rf dest; hg init dest
  $ WORKERFAULT_LOG=$TESTTMP/pids hg -R dest unbundle --debug all.hg \
  >   --config extensions.wf="$TESTDIR/../helpers/workerfault.py" > out 2>&1
  $ grep '^fastio: .* worker' out
  fastio: 42 files applied by 2 worker processes (the manifests meanwhile)
  $ "$PYTHON" - "$TESTTMP/pids" <<EOF
  > import os, sys
  > pids = {l.split()[0] for l in open(sys.argv[1])}
  > print(len(pids), str(os.getpid()) in pids)
  > EOF
  1 False
  $ storecompare ref dest
  stores identical: 50 files

fastio.report counts what the workers wrote, as the serial apply's does:

  $ for workers in 2 0; do
  >   rm -rf dest; hg init dest
  >   hg -R dest unbundle -q all.hg --config fastio.report=yes --config fastio.apply-workers=$workers 2>&1 | grep -E 'files written|bytes written' > report-$workers
  > done
  $ cmp report-2 report-0 && grep files report-2
  fastio: files written: 49

A pull into a repository that has the files: existing revlogs appended to,
"grow" split from an inline revlog the transaction had touched (a backup
and a finalization in the parent's transaction).

  $ stock init firstonly; stock -R firstonly unbundle -q first.hg
  $ cp -a firstonly refpull; cp -a firstonly pull; cp -a firstonly base
  $ stock -R refpull unbundle rest.hg > ref.out
  $ hg -R pull unbundle rest.hg > pull.out
  $ cmp ref.out pull.out && grep added pull.out
  added 4 changesets with 12 changes to 9 files
  $ storecompare refpull pull
  stores identical: 51 files
  $ hg -R pull verify -q

Only with enough files (the default threshold), and never with one core's
worth of workers switched off:

  $ rm -rf dest; hg init dest
  $ hg -R dest unbundle --debug all.hg --config devel.fastio.parallel-min-files=256 | grep 'worker processes'
  [1]
  $ rm -rf dest; hg init dest
  $ hg -R dest unbundle --debug all.hg --config fastio.apply-workers=0 | grep 'worker processes'
  [1]
  $ hg -R dest unbundle -q all.hg --config fastio.apply-workers=many
  transaction abort!
  rollback completed
  config error: fastio.apply-workers must be auto or a number of workers, not many
  [255]

A pretxnchangegroup hook sees every revision of every file (HG_PENDING).

  $ rm -rf dest; hg init dest
  $ hg -R dest unbundle -q all.hg --config hooks.pretxnchangegroup="hg -R $TESTTMP/dest log -r tip -T '{rev}\n'; hg -R $TESTTMP/dest cat -r tip grow d2/f5 | wc -c"
  4
  202491
  $ cd ref && stock cat -r tip grow d2/f5 | wc -c && cd ..
  202491

Failures.  The store after each is compared with what it was: an empty
repository's (requires only), or the pull's base.

  $ for target in big d1/f3 grow; do
  >   rm -rf dest; hg init dest
  >   hg -R dest unbundle -q all.hg --config extensions.wf="$TESTDIR/../helpers/workerfault.py" \
  >     --config workerfault.file=$target --config workerfault.action=raise
  >   echo "exit $?"
  >   (cd dest/.hg/store && find . -mindepth 1 | sort | tr '\n' ' '; echo)
  > done
  transaction abort!
  rollback completed
  abort: injected failure at big
  exit 255
  ./requires 
  transaction abort!
  rollback completed
  abort: injected failure at d1/f3
  exit 255
  ./requires 
  transaction abort!
  rollback completed
  abort: injected failure at grow
  exit 255
  ./requires 

  $ hg -R base unbundle -q rest.hg --config extensions.wf="$TESTDIR/../helpers/workerfault.py" \
  >   --config workerfault.file=grow --config workerfault.action=raise
  transaction abort!
  rollback completed
  abort: injected failure at grow
  [255]
  $ storecompare firstonly base
  stores identical: 49 files

A full disk in a worker (an LD_PRELOAD shim fails its writes; the file named
when the worker's file writer wrote it, as in one process):

  $ command -v gcc > /dev/null || exit 80
  $ gcc -O2 -shared -fPIC -o "$TESTTMP/fault.so" "$TESTDIR/../shims/faultshim.c" -ldl
  $ rm -rf dest; hg init dest
  $ LD_PRELOAD="$TESTTMP/fault.so" FASTIO_FAIL_WRITE=data/d2/f7 hg -R dest unbundle -q all.hg
  transaction abort!
  rollback completed
  abort: (error writing 'data/d2/f7.i': )?No space left on device (re)
  [255]
  $ (cd dest/.hg/store && find . -mindepth 1 | sort | tr '\n' ' '; echo)
  ./requires 

A worker killed:

  $ rm -rf dest; hg init dest
  $ hg -R dest unbundle -q all.hg --config extensions.wf="$TESTDIR/../helpers/workerfault.py" \
  >   --config workerfault.file=d3/f2 --config workerfault.action=kill
  transaction abort!
  rollback completed
  abort: a worker applying file revlogs died (killed by signal 9)
  [255]
  $ (cd dest/.hg/store && find . -mindepth 1 | sort | tr '\n' ' '; echo)
  ./requires 

The applying process killed (from a worker): its workers end with it, and
hg recover restores the repository.

  $ rm -rf dest; hg init dest
  $ rm -f pids
  $ WORKERFAULT_LOG=$TESTTMP/pids hg -R dest unbundle -q all.hg \
  >   --config extensions.wf="$TESTDIR/../helpers/workerfault.py" \
  >   --config workerfault.file=d2/f0 --config workerfault.action=killparent
  Killed
  [137]
  $ sleep 0.5
  $ workers_alive
  workers alive: []
  $ hg -R dest recover -q --verify
  $ (cd dest/.hg/store && find . -mindepth 1 | grep -v undo | sort | tr '\n' ' '; echo)
  ./requires 

An interrupt (SIGINT to the applying process, from a worker):

  $ rm -rf dest; hg init dest
  $ rm -f pids
  $ WORKERFAULT_LOG=$TESTTMP/pids hg -R dest unbundle -q all.hg \
  >   --config extensions.wf="$TESTDIR/../helpers/workerfault.py" \
  >   --config workerfault.file=d2/f0 --config workerfault.action=interrupt
  transaction abort!
  rollback completed
  interrupted!
  [255]
  $ (cd dest/.hg/store && find . -mindepth 1 | sort | tr '\n' ' '; echo)
  ./requires 
  $ workers_alive
  workers alive: []
