The user manual: "hg help -e fastio" documents every registered option with
its default, and "hg config" knows them

  $ hg help -e fastio > help.txt
  $ head -3 help.txt
  fastio extension - write many files fast: stream clones, unbundles, background
  closes
  
  $ $PYTHON - <<'PY'
  > import os, re, sys
  > sys.path.insert(0, os.environ['ROOTDIR'])  # this checkout's, not the venv's
  > import hgext3rd.fastio as f
  > text = open('help.txt').read()
  > # one paragraph per option, from its quoted name to the next blank line
  > paras = dict(re.findall(r'^"fastio\.([a-z-]+)"\n((?:  .*\n)+)', text, re.M))
  > for name, item in sorted(f.configtable[b'fastio'].items()):
  >     name = name.decode()
  >     default = item.default
  >     if isinstance(default, bool):
  >         default = 'yes' if default else 'no'
  >     elif isinstance(default, bytes):
  >         default = default.decode()
  >     para = ' '.join(paras.get(name, '').split())
  >     ok = para and ('Default: %s' % default in para.replace('"', '')
  >                    or 'default: %s' % default in para.replace('"', '')
  >                    or '%s (default)' % default in para.replace('"', ''))
  >     print(name, default, 'documented' if ok else 'MISSING')
  > print(len(paras), 'options in the help')
  > PY
  apply-memory 256MB documented
  apply-workers auto documented
  background-write auto documented
  buffer-size 1MB documented
  compress-ahead no documented
  durable no documented
  file-sample 8 documented
  max-pending-files 256 documented
  max-write-threads 256 documented
  memory-budget 64MB documented
  mmap-populate auto documented
  mmap-populate-threshold 1MB documented
  pending-timeout 5s documented
  probe-max-age 7d documented
  read-buffer 1MB documented
  report no documented
  slow-file-threshold 50us documented
  stream-writer yes documented
  write-buffer 1MB documented
  write-threads 0 documented
  20 options in the help

  $ grep -E '^(What|Bundle|Serving|Writing|Durable|Populating|Checking|Configuration)' help.txt
  What is accelerated
  Bundle files
  Serving clones
  Writing files
  Durable applies
  Populating memory mappings
  Checking a filesystem
  Configuration

The serving side: the servers it applies to, what it reads in large calls,
the option that turns it off, the report, and fresh servers' first requests

  $ sed -n '/^Serving clones/,/^Writing files/p' help.txt | tr '\n' ' ' > serving.txt
  $ grep -o -E '"hg serve( --stdio)?"|hgweb WSGI|"hg bundle"|larger than 64 KiB|single call|128 KiB|"fastio\.read-buffer(=0)?"|"fastio\.report"|HTTP 500|before any request runs' serving.txt | sort -u
  "fastio.read-buffer"
  "fastio.read-buffer=0"
  "fastio.report"
  "hg bundle"
  "hg serve --stdio"
  "hg serve"
  128 KiB
  HTTP 500
  before any request runs
  hgweb WSGI
  larger than 64 KiB
  single call

  $ hg config --exp-all-known fastio
  fastio.apply-memory=256MB
  fastio.apply-workers=auto
  fastio.background-write=auto
  fastio.buffer-size=1MB
  fastio.compress-ahead=False
  fastio.durable=False
  fastio.file-sample=8
  fastio.max-pending-files=256
  fastio.max-write-threads=256
  fastio.memory-budget=64MB
  fastio.mmap-populate=auto
  fastio.mmap-populate-threshold=1MB
  fastio.pending-timeout=5s
  fastio.probe-max-age=7d
  fastio.read-buffer=1MB
  fastio.report=False
  fastio.slow-file-threshold=50us
  fastio.stream-writer=True
  fastio.write-buffer=1MB
  fastio.write-threads=0
  $ hg config fastio
  [1]
  $ hg config fastio --config fastio.report=yes
  fastio.report=yes

The debug command.  Its description is shown one paragraph a line, without
indent: Mercurial before 6.9 indents a command's description by four columns
(stock's own commands too), later releases do not, and where lines wrap
follows the indent

  $ COLUMNS=1000 hg help debugfastio --config ui.textwidth=0 | sed 's/^    //'
  hg debugfastio [--files N] [--no-cache]
  
  show fastio's settings and measure this repository's file latencies
  
  Prints the effective "[fastio]" settings, then creates, writes and closes "--files" small files in a temporary directory under ".hg" (removed afterwards), times each create ("open()") and "close()", prints their medians and 90th percentiles, and what "auto" mode chooses from the slower.  Unless "--no-cache" is given, the measurement is stored for "auto" mode (see "fastio.probe-max-age").
  
  options:
  
    --files VALUE number of files to probe with (default: 256)
    --no-cache    do not store the measurement for auto mode
  
  (some details hidden, use --verbose to show complete help)
  $ hg debugfastio
  abort: no repository found in '*' (.hg not found) (glob)
  [255]
