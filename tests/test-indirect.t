The accelerated paths reached without a command of their own: a server
receiving a push over ssh (over http: applied as stock applies it, in a
request thread), the command server running one apply
after another, another extension calling exchange.pull, and hg update
through vfs.backgroundclosing.  The extension wires each part in when
Mercurial loads the module it wraps (see test_load_cost.py): each apply
here reports the extension's work, and its store is the one stock writes.

  $ . "$TESTDIR/common.sh"
  $ STOCK="--config extensions.fastio=!"
  $ ON="--config fastio.report=yes"
  $ mkrepo src
  $ hg clone -q -r 0 $STOCK src base
  $ hg clone -q $STOCK src stock-full

A push over ssh: the server (fastio.report in its hgrc, as hg serve --stdio
takes no --config) applies the changegroup, and its report comes back

  $ hg clone -q -U $STOCK base push-ssh
  $ printf '[fastio]\nreport = yes\n' >> push-ssh/.hg/hgrc
  $ hg -R src push ssh://user@dummy/push-ssh 2>&1 | grep -E 'fastio: (changegroup|files)'
  remote: fastio: changegroup
  remote: fastio: files written: 4
  $ hg -R push-ssh verify -q
  $ storecompare stock-full push-ssh
  stores identical: 29 files

A push over http to hg serve: applied in the server's request thread,
where the extension leaves changegroups to stock (its apply machinery runs
on the main thread only); the store is stock's all the same.  A server
copies its stderr lines to a file here (over http Mercurial sends back only
what is printed inside bundle2's parts; the report comes at the
transaction's close)

  $ cat > tee_err.py <<EOF
  > import os
  > from mercurial import extensions, ui as uimod
  > def write_err(orig, self, *args, **opts):
  >     with open(os.path.join(os.environ["TESTTMP"], "server-err"), "ab") as f:
  >         f.write(b"".join(args))
  >     return orig(self, *args, **opts)
  > def uisetup(ui):
  >     extensions.wrapfunction(uimod.ui, "write_err", write_err)
  > EOF
  $ hg clone -q -U $STOCK base push-http
  $ printf '[fastio]\nreport = yes\n' >> push-http/.hg/hgrc
  $ hgserve -R push-http -p $HGPORT --config extensions.tee_err=tee_err.py \
  >   --config web.allow-push='*' --config web.push_ssl=False
  $ hg -R src push -q http://localhost:$HGPORT
  $ killdaemons
  $ cat server-err
  cat: server-err: No such file or directory
  [1]
  $ hg -R push-http verify -q
  $ storecompare stock-full push-http
  stores identical: 29 files

The same server's tee, on its main thread (hg serve --stdio over ssh)

  $ hg clone -q -U $STOCK base push-ssh-tee
  $ printf '[fastio]\nreport = yes\n[extensions]\ntee_err = %s\n' "$TESTTMP/tee_err.py" \
  >   >> push-ssh-tee/.hg/hgrc
  $ hg -R src push -q ssh://user@dummy/push-ssh-tee
  $ grep -E '^fastio: (changegroup|files)' server-err
  fastio: changegroup
  fastio: files written: 4

The command server: two applies in one process, an unbundle then a pull,
each through the extension (its wiring outlives the first command)

  $ hg -R src bundle -q -r 1 --base 0 one.hg
  $ hg clone -q -U $STOCK base cmdserver
  $ hg clone -q -U $STOCK base stock-unbundled
  $ hg -R stock-unbundled unbundle -q $STOCK one.hg
  $ hg init cmdserver-pulled
  $ "$PYTHON" "$TESTDIR/cmdserver.py" \
  >   "-R cmdserver unbundle -q --config fastio.report=yes one.hg" \
  >   "-R cmdserver-pulled pull -q --config fastio.report=yes src" 2>&1 \
  >   | grep -E '^(fastio: (changegroup|files)|exit|server exit)'
  fastio: changegroup
  fastio: files written: 4
  exit 0
  fastio: changegroup generation: large reads of 0 revlogs: 0 calls, 0 bytes
  fastio: changegroup
  fastio: files written: 27
  exit 0
  server exit 0
  $ storecompare stock-unbundled cmdserver
  stores identical: 30 files
  $ storecompare stock-full cmdserver-pulled
  stores identical: 29 files

Another extension's command calling exchange.pull

  $ cat > pullvia.py <<EOF
  > from mercurial import exchange, hg, registrar
  > cmdtable = {}
  > command = registrar.command(cmdtable)
  > @command(b"pullvia", [], b"SOURCE")
  > def pullvia(ui, repo, source):
  >     peer = hg.peer(repo, {}, source)
  >     try:
  >         exchange.pull(repo, peer)
  >     finally:
  >         peer.close()
  > EOF
  $ hg clone -q -U $STOCK base via
  $ hg -R via --config extensions.pullvia=pullvia.py pullvia $ON ssh://user@dummy/src 2>&1 \
  >   | grep -E '^fastio: (changegroup|files)'
  fastio: changegroup
  fastio: files written: 4
  $ storecompare stock-full via
  stores identical: 29 files

hg update writes the working copy through vfs.backgroundclosing: the
extension's file writer, closing in the background when asked to

  $ hg -R via update -q $ON --config fastio.background-close=always 2>&1 \
  >   | grep -E '^fastio: (working|files|closes)'
  fastio: working copy files
  fastio: files written: 24
  fastio: closes: 24, in background: 24, threads: * (glob)
  $ hg -R via status
  $ hg -R via update -q null
  $ hg -R via update -q $STOCK
  $ hg -R via status
