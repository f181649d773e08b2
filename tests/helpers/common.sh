# sourced by the .t tests: helpers in the style of Mercurial's test suite

# start "hg serve" in the background, recording its pid for the cleanup
hgserve() {
  hg serve -d --pid-file="$TESTTMP/hg-$HGPORT.pid" "$@" && cat "$TESTTMP/hg-$HGPORT.pid" >> "$TESTTMP/daemons.pid"
}

killdaemons() {
  if [ -f "$TESTTMP/daemons.pid" ]; then
    for pid in `cat "$TESTTMP/daemons.pid"`; do kill $pid 2>/dev/null; done
    rm -f "$TESTTMP/daemons.pid"
  fi
}

storecompare() {
  "$PYTHON" "$ROOTDIR/fixtures/storecompare.py" "$@"
}

# a small repository with names that exercise the store encoding
mkrepo() {
  hg init "$1"
  (
    cd "$1"
    mkdir -p dir/sub "Upper Case" foo.hg/nested "$(printf 'x%.0s' $(seq 1 90))/long"
    for i in 1 2 3 4 5 6 7 8 9 10; do
      echo "content $i" > dir/file$i
      echo "sub $i" > dir/sub/f$i.txt
    done
    echo a > "Upper Case/File.TXT"
    echo b > foo.hg/nested/data.i
    echo c > "$(printf 'x%.0s' $(seq 1 90))/long/$(printf 'y%.0s' $(seq 1 150)).txt"
    echo d > .hgtags-not
    hg commit -qAm one
    echo more >> dir/file1
    hg commit -qm two
    hg phase --public -r .
  )
}

# a plain static http server for clone bundles, on $HGPORT1
staticserve() {
  "$PYTHON" -m http.server "$HGPORT1" --bind 127.0.0.1 --directory "$1" > "$TESTTMP/static.log" 2>&1 &
  echo $! >> "$TESTTMP/daemons.pid"
  "$PYTHON" -c "
import socket, sys, time
for i in range(100):
    try:
        socket.create_connection(('127.0.0.1', $HGPORT1), 1).close(); sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit('static server did not start')"
}

# stock's closing line of a stream clone, in a form common to all releases:
# "stream-cloned N files / SIZE in T seconds (R/sec)" (7.0 and later) or
# "transferred SIZE in T seconds (R/sec)" become "transferred SIZE in X"
normtransfer() {
  sed -E 's#^(stream-cloned [0-9]+ files / |transferred )([^ ]+ [^ ]+) in [0-9.]+ seconds \([^)]*\)#transferred \2 in X#' "$@"
}
