hg debugfastio: the effective settings, then a create and close latency probe of the
repository's filesystem whose files are removed afterwards

  $ hg init repo
  $ cd repo
  $ hg debugfastio --config fastio.write-threads=3 | tee probe.out
  fastio * (glob)
  settings:
    apply-memory: 256MB (default)
    apply-workers: auto (default)
    background-write: auto (default)
    buffer-size: 1MB (default)
    compress-ahead: no (default)
    durable: no (default)
    file-sample: 8 (default)
    max-pending-files: 256 (default)
    max-write-threads: 256 (default)
    memory-budget: 64MB (default)
    mmap-populate: auto (default)
    mmap-populate-threshold: 1MB (default)
    pending-timeout: 5s (default)
    probe-max-age: 7d (default)
    read-buffer: 1MB (default)
    report: no (default)
    slow-file-threshold: 50us (default)
    stream-writer: yes (default)
    write-buffer: 1MB (default)
    write-threads: 3
  C helpers:
    writer._writepool: built, in use: the writing pool (threads that never take Python's lock)
    apply._streamscan: built, in use: the stream pre-scan of a bundle's names
    mmap._populate: built, in use: mmap population without Python's lock
  wiring: 5 of 26 parts in force in this command
  mmap policy: * (glob)
  mmap populate: background (auto: the helper populates from a thread)
  mmap population: nothing mapped (changelog index)
  probing: 256 files in */repo/.hg (glob)
  create latency: [0-9]+\.[0-9] us \(median\), [0-9]+\.[0-9] us \(90th percentile\) (re)
  close latency: [0-9]+\.[0-9] us \(median\), [0-9]+\.[0-9] us \(90th percentile\) (re)
  probe time: [0-9]+\.[0-9]{3} s (re)
  auto mode would: close (inline|in background, starting with 3 threads) \(median [0-9]+ us (<|>=) threshold 50 us\) (re)
  cached for auto mode in */repo/.hg/fastio-probe (glob)

The decision is the one the printed medians (the slower of creates and
closes) and threshold imply

  $ "$PYTHON" - <<'EOF'
  > import re
  > out = open("probe.out").read()
  > latency = max(
  >     float(re.search(r"^%s latency: ([0-9.]+) us \(median\)" % what, out, re.M).group(1))
  >     for what in ("create", "close")
  > )
  > decision, median, sign, threshold = re.search(
  >     r"^auto mode would: close (inline|in background).* \(median ([0-9]+) us (<|>=) threshold ([0-9]+) us\)$",
  >     out,
  >     re.M,
  > ).groups()
  > median, threshold = int(median), int(threshold)
  > # the latency line rounds the median to 0.1 us, the decision truncates it
  > print("the median of the latency line:", median <= latency <= median + 1)
  > print("threshold:", threshold, "us")
  > below = median < threshold
  > print("inline exactly below the threshold:", (decision == "inline") == below == (sign == "<"))
  > EOF
  the median of the latency line: True
  threshold: 50 us
  inline exactly below the threshold: True
The measurement is kept in .hg itself, where no stream, bundle or pull
writes (they write the store and .hg/cache)

  $ ls .hg
  00changelog.i
  cache
  fastio-probe
  requires
  store
  wcache
  $ ls .hg/cache | grep fastio
  [1]
  $ head -1 .hg/fastio-probe
  fastio-probe 1
  $ sed 1d .hg/fastio-probe
  [0-9]+ [0-9]+ [0-9]+ [0-9]+ probe (re)

A file there that hg debugfastio did not write is at worst a debug line: an
entry out of range (a latency of hours, a 90th percentile below the
median, another source) is not used, and neither is the cache file of
earlier releases in .hg/cache (a stream may carry one)

  $ cp .hg/fastio-probe good
  $ dev=`sed -n '2s/ .*//p' good`
  $ now=`"$PYTHON" -c 'import time; print(int(time.time()))'`
  $ for line in "$dev $now 99999999999999 99999999999999 probe" "$dev $now 5000000 10 probe" \
  >     "$dev $now 5000000 6000000 crafted" "$dev $now 5000000 6000000"; do
  >   (echo 'fastio-probe 1'; echo "$line") > .hg/fastio-probe
  >   hg debugfastio --files 20 --debug | grep -e '^fastio: .hg' -e 'close latency of this'
  > done
  fastio: .hg/fastio-probe ignored: an entry out of range
  fastio: .hg/fastio-probe ignored: an entry out of range
  fastio: .hg/fastio-probe ignored: an entry out of range
  fastio: .hg/fastio-probe ignored: an entry out of range
  $ (echo 'fastio-probe 1'; echo "$dev $now 5000000 6000000 probe") > .hg/fastio-probe
  $ hg debugfastio --files 20 --debug | grep -e '^fastio: .hg' -e 'close latency of this'
  fastio: close latency of this filesystem: 5000 us (probe, *s ago) (glob)
  $ hg init fresh; cd fresh
  $ mkdir -p .hg/cache; (echo 'fastio-probe 1'; echo "$dev $now 5000000 6000000 probe") > .hg/cache/fastio-probe
  $ hg debugfastio --files 20 --debug | grep -e 'close latency of this filesystem'
  [1]
  $ cd ..
  $ cp good .hg/fastio-probe

The choice follows the threshold; forced modes are said; --no-cache and a
zero max age leave the cache alone

  $ hg debugfastio --files 20 --no-cache --config fastio.slow-file-threshold=0 --config fastio.background-write=never | grep -E '^(probing|auto|in effect|cache)'
  probing: 20 files in */repo/.hg (glob)
  auto mode would: close in background, starting with * threads (median * us >= threshold 0 us) (glob)
  in effect: never (fastio.background-write)
  $ hg debugfastio --files 20 --no-cache --config fastio.slow-file-threshold=10s | grep -E '^auto'
  auto mode would: close inline (median * us < threshold 10000000 us) (glob)

The old names of the options renamed when threads came to write files,
not only close them, still work, and name the option when they are the
ones set (both set: the one set last wins)

  $ hg debugfastio --files 20 --no-cache --config fastio.background-close=never --config fastio.close-threads=2 --config fastio.max-pending-closes=4 --config fastio.slow-close-threshold=10s | grep -E '^(  (background-write|write-threads|max-pending-files):|auto|in effect)'
    background-write: never
    max-pending-files: 4
    write-threads: 2
  auto mode would: close inline (median * us < threshold 10000000 us) (glob)
  in effect: never (fastio.background-close)
  $ hg debugfastio --files 20 --no-cache --config fastio.close-threads=2 --config fastio.write-threads=1 | grep -E '^  write-threads:'
    write-threads: 1
  $ hg debugfastio --files 20 --no-cache --config fastio.max-pending-closes=0
  abort: fastio.max-pending-closes must be 1 or more, not 0
  [255]
  $ hg debugfastio --files 20 --no-cache --config fastio.close-timeout=soon
  config error: fastio.close-timeout is not a duration: soon
  [255]
  $ hg debugfastio --files 20 --no-cache --config fastio.background-close=sometimes
  config error: fastio.background-close must be auto, always or never, not sometimes
  [255]
  $ hg debugfastio --files 20 --config fastio.probe-max-age=0 | grep -E '^(probing|cache)'
  probing: 20 files in */repo/.hg (glob)
  cache: disabled (fastio.probe-max-age=0)
  $ hg debugfastio --files 20 --config fastio.probe-max-age=soon
  config error: fastio.probe-max-age is not a duration: soon
  [255]

Under --debug the cached measurement is used and replaced

  $ hg debugfastio --files 20 --debug | grep '^fastio:'
  fastio: mmap: helper built, stock's population: * (glob)
  fastio: close latency of this filesystem: * us (probe, *s ago) (glob)
  fastio: cached close latency * us (probe) for this filesystem (glob)

With a 2 ms delay injected into close() (an LD_PRELOAD shim), the median is
at least 1500 us and auto mode goes to the background

  $ command -v gcc > /dev/null || exit 80
  $ gcc -O2 -shared -fPIC -o $TESTTMP/closedelay.so $ROOTDIR/fixtures/latency.c -ldl
  $ LD_PRELOAD=$TESTTMP/closedelay.so FASTIO_CLOSE_DELAY_US=2000 hg debugfastio --files 100 > slow.out
  $ grep -E '^(close latency|auto)' slow.out
  close latency: * us (median), * us (90th percentile) (glob)
  auto mode would: close in background, starting with * threads (median * us >= threshold 50 us) (glob)
  $ $PYTHON -c "
  > import re, sys
  > m = re.search(r'close latency: ([0-9.]+) us', open('slow.out').read())
  > print('at least 1500 us:', float(m.group(1)) >= 1500)"
  at least 1500 us: True
  $ ls .hg
  00changelog.i
  cache
  fastio-probe
  requires
  store
  wcache

With --verbose, every part of the wiring (wiring.py) and its state: the
parts of the modules this command loaded are in force, the apply's not yet

  $ hg debugfastio -v --files 4 | grep -E '^  (stream apply|mmap population|changegroup machinery) '
    mmap population (at load): in force
    stream apply (at load): not yet
    changegroup machinery (at first use): not yet
  $ hg debugfastio -v --files 4 | grep -c ' <- '
  49

Enabled by path from a copy of the package without its C helpers (a
checkout where they were not built), it says so and what is lost

  $ cp -R $ROOTDIR/hgext3rd/fastio $TESTTMP/unbuilt
  $ find $TESTTMP/unbuilt -name '*.so' -delete
  $ hg debugfastio --files 4 --config extensions.fastio=$TESTTMP/unbuilt | grep -A3 '^C helpers'
  C helpers:
    writer._writepool: not built (the writing pool (threads that never take Python's lock)): files written on Python threads
    apply._streamscan: not built (the stream pre-scan of a bundle's names): names scanned in Python (slower)
    mmap._populate: not built (mmap population without Python's lock): no background population; stock's population
