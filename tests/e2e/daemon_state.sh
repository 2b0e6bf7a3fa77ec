#!/bin/sh
# The state folder and the socket path as carmad finds them at start: what it refuses,
# what it repairs, and who may read what under it (docs/daemon.md, "Security").
. "$(dirname "$0")/helpers/daemon_lib.sh"

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

if [ "$ROOT" = 1 ] && id nobody >/dev/null 2>&1; then
    step "socket_group: a group the configuration names must exist; the default need not"
    cp "$T/carmad.ini" "$T/carmad.ini.base"
    G=$(id -gn nobody)
    printf 'socket_group = %s\n' "$G" >>"$T/carmad.ini"
    start_daemon --gpus sim:1xa100-40gb --state "$T/sg"
    [ "$(stat -c %G:%a "$CARMA_SOCKET")" = "$G:660" ] ||
        fail "socket_group = $G: the socket is $(stat -c %G:%a "$CARMA_SOCKET")"
    nobody_client
    as_nobody "$NB/carma" gpus >"$T/out" 2>&1 || fail "a member of $G refused: $(cat "$T/out")"
    stop_daemon || fail "carmad did not stop cleanly"
    # a user outside the group is told which group admits them, not a bare EACCES
    cp "$T/carmad.ini.base" "$T/carmad.ini"
    printf 'socket_group = root\n' >>"$T/carmad.ini"
    start_daemon --gpus sim:1xa100-40gb --state "$T/sg"
    as_nobody "$NB/carma" gpus >"$T/out" 2>&1 && fail "nobody, outside group root, got in"
    grep -q "cannot reach carmad: Permission denied (its socket admits its owner and the members of group root, mode 0660: ask the administrator to add you" "$T/out" ||
        fail "no word of the socket's group: $(cat "$T/out")"
    # the group's name through a lookup that needs more than 1 KiB (a group of many
    # members), and its number with the reason when the lookup fails (a directory server
    # that does not answer: EIO), not as if the group had no name (tests/fake/grfail)
    cp "$CARMA_FAKE/grfail/libgrfail.so" "$NB/" && chmod 644 "$NB/libgrfail.so" ||
        fail "nobody's copy of the group shim"
    GRF="LD_PRELOAD=$NB/libgrfail.so ASAN_OPTIONS=$PRELOAD_ASAN_OPTIONS"
    as_nobody env $GRF CARMA_FAKE_GR_MIN_BUF=8192 "$NB/carma" gpus >"$T/out" 2>&1 &&
        fail "nobody got in"
    grep -q "the members of group root, mode 0660" "$T/out" ||
        fail "a big group's name not found: $(cat "$T/out")"
    as_nobody env $GRF CARMA_FAKE_GR_ERRNO=5 "$NB/carma" gpus >"$T/out" 2>&1 &&
        fail "nobody got in"
    grep -q "the members of group 0 (its name: cannot look it up: Input/output error), mode 0660" "$T/out" ||
        fail "a failed group lookup not told: $(cat "$T/out")"
    stop_daemon || fail "carmad did not stop cleanly"
    cp "$T/carmad.ini.base" "$T/carmad.ini"
    printf 'socket_group = carma-no-such-group\n' >>"$T/carmad.ini"
    line=$(wc -l <"$T/carmad.ini")
    carmad_fails 2 "carmad.ini:$line: socket_group: no group 'carma-no-such-group'" \
        --state "$T/sg" --socket "$CARMA_SOCKET"
    [ ! -e "$CARMA_SOCKET" ] || fail "a socket made for a group that does not exist"
    # a group named whose lookup fails (EIO, tests/fake/grfail): refused with the reason
    # (status 1, no fault of the file), not as missing; the default group's: a warning (the
    # assignments before a function may outlive it in some shells: unset after)
    LD_PRELOAD="$CARMA_FAKE/grfail/libgrfail.so" CARMA_FAKE_GR_ERRNO=5 ASAN_OPTIONS="$PRELOAD_ASAN_OPTIONS" \
        carmad_fails 1 "carmad.ini:$line: socket_group carma-no-such-group: cannot look the group up: Input/output error" \
        --state "$T/sg" --socket "$CARMA_SOCKET"
    unset LD_PRELOAD CARMA_FAKE_GR_ERRNO
    cp "$T/carmad.ini.base" "$T/carmad.ini"
    LD_PRELOAD="$CARMA_FAKE/grfail/libgrfail.so" CARMA_FAKE_GR_ERRNO=5 ASAN_OPTIONS="$PRELOAD_ASAN_OPTIONS" \
        start_daemon --gpus sim:1xa100-40gb --state "$T/sg"
    unset LD_PRELOAD CARMA_FAKE_GR_ERRNO
    grep -q "group carma: cannot look it up (Input/output error): $CARMA_SOCKET is root's" "$T/carmad.log" ||
        fail "no warning of the default group's failed lookup: $(cat "$T/carmad.log")"
    stop_daemon || fail "carmad did not stop cleanly"
    if ! getent group carma >/dev/null; then # the default, carma, missing: a warning
        start_daemon --gpus sim:1xa100-40gb --state "$T/sg"
        grep -q "group carma does not exist: $CARMA_SOCKET is root's" "$T/carmad.log" ||
            fail "no warning of the default group missing"
        stop_daemon || fail "carmad did not stop cleanly"
    fi
fi

if [ "$ROOT" = 1 ] && id nobody >/dev/null 2>&1; then
    step "a root carmad refuses a configuration another user may change"
    chmod 666 "$T/carmad.ini"
    carmad_fails 2 "carmad.ini: writable by others (mode 0666)" --state "$T/sg" \
        --socket "$CARMA_SOCKET"
    chmod 644 "$T/carmad.ini"
    chown nobody "$T/carmad.ini"
    carmad_fails 2 "carmad.ini: owned by uid $(id -u nobody), not root" --state "$T/sg" \
        --socket "$CARMA_SOCKET"
    chown root "$T/carmad.ini"
    chmod 664 "$T/carmad.ini" # the group's write, an administrators' group's: allowed
    start_daemon --gpus sim:1xa100-40gb --state "$T/sg"
    stop_daemon || fail "carmad did not stop cleanly"
    chmod 644 "$T/carmad.ini"
fi

step "a socket bound at the path after the check is left to whoever bound it"
CARMA_TEST_SOCKET_TAKEN=1 carmad_fails 1 "Address already in use" --state "$T/s2" \
    --socket "$T/taken.sock"
[ -S "$T/taken.sock" ] || fail "carmad removed a socket that it did not bind"

mode() { stat -c %a "$1"; }
S="$T/state"
if [ "$ROOT" = 1 ]; then DM=711; else DM=700; fi

step "the state folder and the store are closed to other users"
start_daemon --gpus sim:1xa100-40gb
j=$(submit -- /bin/sh -c 'echo secret-output')
"$CARMA" wait --timeout 20 "$j" >/dev/null || fail "job $j failed"
last=$j
[ "$(mode "$S")" = $DM ] || fail "STATE is $(mode "$S"), not $DM"
[ "$(mode "$S/jobs")" = $DM ] || fail "STATE/jobs is $(mode "$S/jobs")"
[ "$(mode "$S/jobs/$j")" = $DM ] && [ "$(mode "$S/jobs/$j/1")" = $DM ] ||
    fail "job folders are $(mode "$S/jobs/$j") $(mode "$S/jobs/$j/1")"
for f in carma.db carma.db-wal carma.db-shm carmad.lock jobs/$j/1/stdout jobs/$j/1/stderr \
         jobs/$j/1/status jobs/$j/1/shepherd; do
    [ "$(mode "$S/$f")" = 600 ] || fail "$f is $(mode "$S/$f"), not 600"
done
if [ "$ROOT" = 1 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
    chmod 666 "$CARMA_SOCKET"
    nobody_client
    as_nobody ls "$S" >/dev/null 2>&1 && fail "nobody lists the state folder"
    as_nobody cat "$S/carma.db" >/dev/null 2>&1 && fail "nobody reads the store"
    as_nobody cat "$S/jobs/$j/1/stdout" >/dev/null 2>&1 && fail "nobody reads root's job output"
    as_nobody ls "$S/jobs" >/dev/null 2>&1 && fail "nobody lists the job folders"
    nj=$(as_nobody "$NB/carma" submit -- /bin/sh -c 'echo nobody-output') ||
        fail "nobody cannot submit"
    "$CARMA" wait --timeout 20 "$nj" >/dev/null || fail "nobody's job failed"
    last=$nj
    [ "$(as_nobody "$NB/carma" logs "$nj")" = nobody-output ] ||
        fail "nobody cannot read its own job's log with carma logs"
    [ "$(stat -c %U "$S/jobs/$nj/1/stdout")" = nobody ] || fail "nobody's log is not nobody's"

    step "paths are checked with the submitting user's rights (no existence oracle)"
    P="$T/private"; mkdir -p "$P/sub"; chmod 700 "$P"
    printf '#!/bin/sh\ntrue\n' > "$P/tool.sh"; chmod 755 "$P/tool.sh"
    # nobody cannot read the tree: the helper goes beside the probe
    cp "$(dirname "$0")/helpers/carmad_ask.py" "$NB/"
    cat > "$NB/probe.py" <<'PY'
import sys
sys.dont_write_bytecode = True
from carmad_ask import submit
def ask(job):
    return submit(sys.argv[1], job)
P = sys.argv[2]
for kind, there, missing in (("argv", P + "/tool.sh", P + "/nothere.sh"), ("cwd", P + "/sub", P + "/nope")):
    a = ask({"argv": [there] if kind == "argv" else ["/bin/true"], "cwd": there if kind == "cwd" else "/tmp"})
    b = ask({"argv": [missing] if kind == "argv" else ["/bin/true"], "cwd": missing if kind == "cwd" else "/tmp"})
    assert not a["ok"] and not b["ok"], (kind, a, b)
    assert a["error"] == b["error"] == "invalid", (kind, a, b)
    assert a["message"].replace(there, "X") == b["message"].replace(missing, "X"), (kind, a, b)
print("same")
PY
    out=$(as_nobody python3 "$NB/probe.py" "$CARMA_SOCKET" "$P" 2>&1) ||
        fail "carmad tells nobody what exists in root's private folder: $out"
    # root, who may enter it, is not refused
    r=$(submit --name private -- "$P/tool.sh")
    "$CARMA" wait --timeout 20 "$r" >/dev/null || fail "root's job in its private folder failed"
    last=$r
fi
stop_daemon || fail "carmad did not stop cleanly"

step "modes an earlier carmad left (0755 folders, 0644 store, 0640 logs) are repaired"
chmod 755 "$S" "$S/jobs" "$S/jobs/$j" "$S/jobs/$j/1"
chmod 644 "$S/carma.db" "$S/carmad.lock" "$S/jobs/$j/1/status" "$S/jobs/$j/1/shepherd"
chmod 640 "$S/jobs/$j/1/stdout" "$S/jobs/$j/1/stderr"
printf '' > "$S/carma.db-wal"; chmod 644 "$S/carma.db-wal"
start_daemon --gpus sim:1xa100-40gb
for f in . jobs jobs/$j jobs/$j/1; do
    [ "$(mode "$S/$f")" = $DM ] || fail "$f still $(mode "$S/$f")"
done
for f in carma.db carma.db-wal carmad.lock jobs/$j/1/stdout jobs/$j/1/stderr jobs/$j/1/status \
         jobs/$j/1/shepherd; do
    [ "$(mode "$S/$f")" = 600 ] || fail "$f still $(mode "$S/$f")"
done
grep -q "was readable by other users" "$T/carmad.log" || fail "no warning about the store's mode"
[ "$("$CARMA" logs "$j")" = secret-output ] || fail "the old job's log is lost"

step "a symlink planted as a job folder is not followed"
mkdir "$T/target"
next=$((last + 1))
ln -s "$T/target" "$S/jobs/$next"
k=$(submit -- /bin/sh -c 'echo redirected')
[ "$k" = "$next" ] || fail "expected job id $next, got $k"
"$CARMA" wait --timeout 20 "$k" >/dev/null && fail "job $k ran through a symlinked folder"
[ -z "$(ls -A "$T/target")" ] || fail "job $k wrote into the symlink's target: $(ls -A "$T/target")"
grep -q "jobs/$k: a symbolic link" "$T/carmad.log" || fail "no message naming the symlink"
stop_daemon || fail "carmad did not stop cleanly"
rm "$S/jobs/$k"

step "a state folder others may write, or another user's, is refused"
chmod 777 "$S"
carmad_fails 1 "writable by group and others (mode 0777)" --state "$S" --socket "$CARMA_SOCKET"
chmod 1777 "$S"
carmad_fails 1 "writable by group and others" --state "$S" --socket "$CARMA_SOCKET"
chmod 711 "$S"; chmod 775 "$S/jobs"
carmad_fails 1 "$S/jobs: writable by group" --state "$S" --socket "$CARMA_SOCKET"
chmod 711 "$S/jobs"
mv "$S/jobs" "$S/jobs.real"; ln -s "$S/jobs.real" "$S/jobs"
carmad_fails 1 "$S/jobs: a symbolic link" --state "$S" --socket "$CARMA_SOCKET"
rm "$S/jobs"; mv "$S/jobs.real" "$S/jobs"
if [ "$ROOT" = 1 ] && id nobody >/dev/null 2>&1; then
    mkdir "$T/theirs"; chown nobody "$T/theirs"; chmod 700 "$T/theirs"
    carmad_fails 1 "owned by uid $(id -u nobody), not by carmad's uid 0" --state "$T/theirs" \
        --socket "$CARMA_SOCKET"
fi

step "a store emptied or behind its job folders is refused"
cp "$S/carma.db" "$T/carma.db.good"
rm -f "$S/carma.db-wal" "$S/carma.db-shm"; : > "$S/carma.db"
carmad_fails 1 "the store was lost or replaced" --state "$S" --socket "$CARMA_SOCKET"
grep -q "holds job folders up to $((k - 1))" "$T/err" || fail "the message names no folder: $(cat "$T/err")"
[ "$(cat "$S/jobs/$j/1/stdout")" = secret-output ] || fail "an old job's log was touched"

step "a damaged store is refused at start"
cp "$T/carma.db.good" "$S/carma.db"
dd if=/dev/zero of="$S/carma.db" bs=4096 seek=1 count=1 conv=notrunc 2>/dev/null
carmad_fails 1 "is damaged" --state "$S" --socket "$CARMA_SOCKET"

echo "daemon_state: ok"
