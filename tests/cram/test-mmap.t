mmap population policies: log, unbundle and verify give the same output
under each (and with the helper forced off); --debug says which policy ran
and what it did.  Every revlog index is mapped here (thresholds of 1 byte,
each release's option), so that small repositories exercise it.

  $ . "$TESTDIR/../helpers/common.sh"
  $ cat >> $HGRCPATH <<EOF
  > [storage]
  > revlog.mmap.index:size-threshold = 1
  > [experimental]
  > mmapindexthreshold = 1
  > [fastio]
  > mmap-populate-threshold = 0
  > EOF
  $ mkrepo src
  $ hg -R src bundle -q -a all.hg

  $ run() {
  >   name=$1; shift
  >   hg -R src log -p "$@" > log-$name
  >   hg init u-$name
  >   hg -R u-$name unbundle -q all.hg "$@"
  >   hg -R u-$name log -p -v "$@" > ulog-$name
  >   hg -R u-$name verify -q "$@"
  >   hg -R u-$name log -r tip -q --debug "$@" 2>&1 | grep '^fastio: mmap:' | sed 's/([0-9]* bytes)/(N bytes)/g; s/in [0-9.]* ms/in T ms/'
  > }

  $ run never --config fastio.mmap-populate=never
  fastio: mmap: policy never (fastio.mmap-populate=never)
  fastio: mmap: never: * mappings (N bytes), 0 populated (N bytes) in T ms (glob)
  $ run always --config fastio.mmap-populate=always
  fastio: mmap: policy always (fastio.mmap-populate=always)
  fastio: mmap: always: * mappings (N bytes), * populated (N bytes) in T ms by * (glob)
  $ run background --config fastio.mmap-populate=background
  fastio: mmap: policy background (fastio.mmap-populate=background)
  fastio: mmap: background: * mappings (N bytes), * populated (N bytes) in T ms by madvise(*)* (glob)
  $ run auto
  fastio: mmap: policy background (auto: the helper populates from a thread)
  fastio: mmap: background: * mappings (N bytes), * populated (N bytes) in T ms by madvise(*)* (glob)
  $ run pure --config fastio.mmap-populate=background --config devel.fastio.mmap-helper=pure
  fastio: mmap: policy stock (background asked for, no helper: helper off (devel.fastio.mmap-helper=pure), stock's (*)) (glob)
  fastio: mmap: stock: * mappings (N bytes), * populated (N bytes) in T ms* (glob)
  $ run purealways --config fastio.mmap-populate=always --config devel.fastio.mmap-helper=pure
  fastio: mmap: policy always (fastio.mmap-populate=always)
  fastio: mmap: always: * mappings (N bytes), * populated (N bytes) in T ms by * (glob)
  $ run touch --config fastio.mmap-populate=background --config devel.fastio.mmap-helper=touch
  fastio: mmap: policy background (fastio.mmap-populate=background)
  fastio: mmap: background: * mappings (N bytes), * populated (N bytes) in T ms by a read per page* (glob)

  $ for name in always background auto pure purealways touch; do
  >   cmp log-never log-$name && cmp ulog-never ulog-$name && echo "$name: same output"
  > done
  always: same output
  background: same output
  auto: same output
  pure: same output
  purealways: same output
  touch: same output
  $ grep -c '^changeset:' ulog-never
  2

The mappings were made, and populated: a policy that did nothing would
show 0 populated

  $ hg -R src log -p -q --debug --config fastio.mmap-populate=background 2>&1 | grep -c ' 0 populated'
  0
  [1]

Mappings below the threshold (Mercurial maps its small branch cache
whatever the size) are not the policy's: nothing is said of them

  $ hg -R src log -r tip -q --debug --config fastio.mmap-populate-threshold=1MB 2>&1 | grep -c 'fastio: mmap'
  0
  [1]

Nothing is said without --debug or fastio.report, and a wrong value is an
error

  $ hg -R src log -r tip -q --config fastio.mmap-populate=always
  1:* (glob)
  $ hg -R src log -r tip -q --config fastio.mmap-populate=sometimes
  config error: fastio.mmap-populate must be auto, always, never or background, not sometimes
  [255]
