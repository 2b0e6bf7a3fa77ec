#!/bin/sh
# The state folder and the socket path as carmad finds them at start: what it refuses,
# what it repairs, and who may read what under it (docs/daemon.md, "Security").
. "$(dirname "$0")/helpers/daemon_lib.sh"

# carmad_fails RC WHAT OPTIONS...: carmad must refuse to start with exit RC, saying WHAT.
carmad_fails() {
    _rc=$1 _what=$2; shift 2
    _got=0
    timeout 20 "$CARMAD" --foreground --config "$T/carmad.ini" --gpus sim:1xa100-40gb "$@" \
        2>"$T/err" || _got=$?
    [ "$_got" = "$_rc" ] || fail "carmad $* exited $_got, not $_rc: $(cat "$T/err")"
    grep -q -- "$_what" "$T/err" || fail "carmad $*: no '$_what' in: $(cat "$T/err")"
}

step "--socket naming something that is not a socket"
echo "important data" > "$T/precious.txt"
carmad_fails 2 "not a socket" --state "$T/s1" --socket "$T/precious.txt"
[ "$(cat "$T/precious.txt")" = "important data" ] || fail "the file at --socket was changed"
mkdir "$T/adir"
carmad_fails 2 "not a socket" --state "$T/s1" --socket "$T/adir"
[ -d "$T/adir" ] || fail "the folder at --socket was removed"
ln -s "$T/precious.txt" "$T/alink"
carmad_fails 2 "not a socket" --state "$T/s1" --socket "$T/alink"
[ -L "$T/alink" ] && [ -f "$T/precious.txt" ] || fail "the symlink at --socket or its target went"

step "a stale socket is replaced"
python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])" "$CARMA_SOCKET"
[ -S "$CARMA_SOCKET" ] || fail "no stale socket made"
start_daemon --gpus sim:1xa100-40gb
stop_daemon || fail "carmad did not stop cleanly"

echo "daemon_state: ok"
