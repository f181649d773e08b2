A group-shared store (setgid, group-writable .hg/store, as set up for a
team) keeps its modes: every file and directory an apply creates gets the
permissions Mercurial's own vfs gives it (files 664, directories 2775 here),
whatever the umask (022 here, which alone would drop group write), on every
apply path.

  $ . "$TESTDIR/../helpers/common.sh"
  $ umask 022
  $ mkrepo src
  $ hg -R src bundle -q -a -t "none-v2;stream=v2" v2.hg
  $ hg -R src bundle -q -a -t "none-v2;stream=v3-exp" --config experimental.stream-v3=yes v3.hg
  $ hg -R src debugcreatestreamclonebundle v1.hg > /dev/null
  $ hg -R src bundle -q -a -t zstd-v2 cg.hg
  $ hg -R src bundle -q -a -t none-v1 cg1.hg
  $ hgserve -R src -p $HGPORT

  $ shared() {
  >   hg init $1
  >   chmod 2775 $1/.hg $1/.hg/store
  >   mkdir -p $1/.hg/cache; chmod 2775 $1/.hg/cache
  > }
  $ wrongmodes() {
  >   # what the apply created without the store's modes (the repository's
  >   # requires predates the chmod; the lock is a symlink)
  >   find $1/.hg/store $1/.hg/cache ! -type l ! -name requires \
  >     \( -type f ! -perm 664 -o -type d ! -perm 2775 \) -exec stat -c '%a %n' {} +
  >   echo "$1: `find $1/.hg/store -type f | wc -l` files, `find $1/.hg/store -type d | wc -l` directories"
  > }

  $ shared v1; hg -R v1 debugapplystreamclonebundle v1.hg > /dev/null
  $ shared v2; hg -R v2 unbundle -q v2.hg
  $ shared v3; hg -R v3 unbundle -q v3.hg --config experimental.stream-v3=yes
  $ shared cg; hg -R cg unbundle -q cg.hg
  $ shared cg1; hg -R cg1 unbundle -q cg1.hg --config fastio.background-write=always
  $ shared http; hg -R http pull -q http://localhost:$HGPORT
  $ shared ssh; hg -R ssh pull -q ssh://user@dummy/src
  $ for r in v1 v2 v3 cg cg1 http ssh; do wrongmodes $r; hg -R $r verify -q; done
  v1: 31 files, 10 directories
  v2: 31 files, 10 directories
  v3: 31 files, 10 directories
  cg: 32 files, 10 directories
  cg1: 32 files, 10 directories
  http: 32 files, 10 directories
  ssh: 32 files, 10 directories

  $ killdaemons
