The accelerated paths reached without a command of their own: a server
receiving a push (ssh, http, two pushes at once to one hgweb server), the
command server running one apply
after another, another extension calling exchange.pull, and hg update
through vfs.backgroundclosing.  The extension wires each part in when
Mercurial loads the module it wraps (see test_load_cost.py): each apply
here reports the extension's work, and its store is the one stock writes.

  $ . "$TESTDIR/../helpers/common.sh"
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

A push over http to hg serve: applied in the server's request thread.
The server copies its stderr lines to a file here (over http Mercurial
sends back only what is printed inside bundle2's parts; the report comes
at the transaction's close)

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
  $ grep -E '^fastio: (changegroup|files)' server-err
  fastio: changegroup
  fastio: files written: 4
  $ hg -R push-http verify -q
  $ storecompare stock-full push-http
  stores identical: 29 files

Two pushes at once to two repositories of one hgweb server (hgwebdir),
each in its own request thread, each of the whole history (more files,
closed in the background)

  $ hg init push-a
  $ hg init push-b
  $ cat > web.conf <<EOF
  > [paths]
  > a = push-a
  > b = push-b
  > [web]
  > allow-push = *
  > push_ssl = False
  > EOF
  $ rm server-err
  $ hgserve -p $HGPORT1 --web-conf web.conf --config extensions.tee_err=tee_err.py \
  >   --config fastio.report=yes --config fastio.background-write=always
  $ hg -R src push -q http://localhost:$HGPORT1/a > push-a.out 2>&1 &
  $ hg -R src push -q http://localhost:$HGPORT1/b > push-b.out 2>&1 &
  $ wait
  $ killdaemons
  $ cat push-a.out push-b.out
(sorted: the two reports may come at the same time, their lines mixed)

  $ grep -E '^fastio: (changegroup|files written|closes)' server-err | sort
  fastio: changegroup
  fastio: changegroup
  fastio: closes: 25, in background: 25, threads: * (glob)
  fastio: closes: 25, in background: 25, threads: * (glob)
  fastio: files written: 27
  fastio: files written: 27
  $ hg -R push-a verify -q
  $ hg -R push-b verify -q
  $ storecompare stock-full push-a
  stores identical: 29 files
  $ storecompare stock-full push-b
  stores identical: 29 files

The command server: two applies in one process, an unbundle then a pull,
each through the extension (its wiring outlives the first command)

  $ hg -R src bundle -q -r 1 --base 0 one.hg
  $ hg clone -q -U $STOCK base cmdserver
  $ hg clone -q -U $STOCK base stock-unbundled
  $ hg -R stock-unbundled unbundle -q $STOCK one.hg
  $ hg init cmdserver-pulled
  $ "$PYTHON" "$ROOTDIR/fixtures/cmdserver.py" \
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

  $ hg -R via update -q $ON --config fastio.background-write=always 2>&1 \
  >   | grep -E '^fastio: (working|files|closes)'
  fastio: working copy files
  fastio: files written: 24
  fastio: closes: 24, in background: 24, threads: * (glob)
  $ hg -R via status
  $ hg -R via update -q null
  $ hg -R via update -q $STOCK
  $ hg -R via status

Three applies at once in one process, one thread each, into three
repositories (as an hgweb server applies pushes to its repositories): each
goes through the extension with its own opener, compressors and writer,
and each store is the one stock writes

  $ hg init many
  $ "$PYTHON" "$TESTDIR/../helpers/mkmany.py" many 600
  $ hg -R many commit -qAm one
  $ "$PYTHON" "$TESTDIR/../helpers/mkmany.py" many 600 1
  $ hg -R many commit -qm two
  $ hg -R many bundle -q -a -t zstd-v2 many.hg
  $ hg init many-stock
  $ hg -R many-stock unbundle -q $STOCK many.hg
  $ for r in t1 t2 t3; do
  >   hg init $r
  >   printf '[fastio]\nreport = yes\nbackground-write = always\n' >> $r/.hg/hgrc
  > done
  $ "$PYTHON" "$TESTDIR/../helpers/threadapply.py" many.hg t1 t2 t3 \
  >   | grep -E '^(t[123]|fastio: (changegroup|files written|closes)|at the same|.* failed)'
  t1:
  fastio: changegroup
  fastio: files written: 603
  fastio: closes: 601, in background: 601, threads: * (glob)
  t2:
  fastio: changegroup
  fastio: files written: 603
  fastio: closes: 601, in background: 601, threads: * (glob)
  t3:
  fastio: changegroup
  fastio: files written: 603
  fastio: closes: 601, in background: 601, threads: * (glob)
  at the same time: yes
  $ for r in t1 t2 t3; do hg -R $r verify -q; storecompare many-stock $r; done
  stores identical: 606 files
  stores identical: 606 files
  stores identical: 606 files
