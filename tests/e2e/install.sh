#!/bin/sh
# `make install` and what it installs: the files and their modes, the systemd unit
# (checked by systemd-analyze where there is one), the installed carmad telling a service
# manager READY=1, STOPPING=1 and WATCHDOG=1 through NOTIFY_SOCKET (docs/daemon.md, "Under
# systemd"),
# a job run through the installed carma-shepherd,
# `carma sim` finding the installed catalog outside the source tree, and `make uninstall`.
. "$(dirname "$0")/helpers/daemon_lib.sh"
REPO=$(cd "$(dirname "$0")/../.." && pwd)
: "${CARMA_BUILD:?CARMA_BUILD must name the build folder (tests/run.sh sets it)}"
# relative to the source tree where it is inside it, as make test names it: the objects'
# dependency files name it so
BUILD_DIR=$(cd "$CARMA_BUILD" && pwd)
BUILD_DIR=${BUILD_DIR#"$REPO"/}
P="$T/prefix"

step "make install"
# a make of its own: not the jobserver of a make test that runs this
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$REPO" MODE="${MODE:-release}" \
    BUILD="$BUILD_DIR" PREFIX="$P" install >"$T/install.log" 2>&1 ||
    { cat "$T/install.log" >&2; fail "make install failed"; }
for f in bin/carma sbin/carmad sbin/carma-shepherd; do
    [ -x "$P/$f" ] && [ "$(stat -c %a "$P/$f")" = 755 ] || fail "$P/$f: not installed 0755"
done
for f in share/carma/workloads.csv share/carma/trace-mix90.csv share/carma/trace-t1.csv \
    share/carma/README.md share/doc/carma/daemon.md share/doc/carma/LICENSE \
    lib/systemd/system/carmad.service; do
    [ -f "$P/$f" ] && [ "$(stat -c %a "$P/$f")" = 644 ] || fail "$P/$f: not installed 0644"
done
[ ! -e "$P/share/doc/carma/CONTRIBUTING-helpers.md" ] || fail "a contributors' note installed"
UNIT="$P/lib/systemd/system/carmad.service"
grep -qx "ExecStart=$P/sbin/carmad --foreground \$CARMAD_OPTS" "$UNIT" || fail "ExecStart not filled in"
grep -qx 'KillMode=process' "$UNIT" || fail "the unit would kill the jobs with carmad"
grep -qx 'Type=notify' "$UNIT" || fail "the unit does not wait for READY=1"
# a configuration error (exit 2) fails the unit rather than restart it for ever
grep -qx 'RestartPreventExitStatus=2' "$UNIT" || fail "the unit restarts carmad on a bad configuration"
! grep -q '@[A-Z]*@' "$UNIT" || fail "a placeholder left in the unit"
if command -v systemd-analyze >/dev/null 2>&1; then
    out=$(systemd-analyze verify "$UNIT" 2>&1) || fail "systemd-analyze verify: $out"
    [ -z "$out" ] || fail "systemd-analyze verify: $out"
else
    echo "(no systemd-analyze here: the unit's syntax not checked)"
fi

step "READY=1 from the installed carmad"
CARMA="$P/bin/carma"
CARMAD="$P/sbin/carmad"
# the exit status the unit's RestartPreventExitStatus= names: a typo'd key
printf '[daemon]\npolcy = auto\n' >"$T/typo.ini"
rc=0
timeout 20 "$CARMAD" --foreground --config "$T/typo.ini" --state "$T/typo" \
    --socket "$T/typo.sock" 2>"$T/typo.err" || rc=$?
[ "$rc" = 2 ] && grep -q "typo.ini:2: unknown key 'polcy'" "$T/typo.err" ||
    fail "a typo'd key: exit $rc, $(cat "$T/typo.err")"
python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
open(sys.argv[2], "w").close()
while True:
    m = s.recv(4096)
    with open(sys.argv[2], "a") as f:
        f.write(m.decode() + "\n")
' "$T/notify" "$T/notified" &
LPID=$!
ON_EXIT='kill $LPID 2>/dev/null'
wait_until 10 test -f "$T/notified" || fail "no listener"
# the state folder as systemd makes it (StateDirectoryMode=): carmad, root there, keeps it
# at its own mode, and a mode that differs is changed by carmad at the first start (with a
# warning) and warned of by systemd at every start after
if [ "$ROOT" = 1 ]; then
    smode=$(sed -n 's/^StateDirectoryMode=//p' "$UNIT")
    [ -n "$smode" ] || fail "no StateDirectoryMode= in the unit"
    mkdir -m "$smode" "$T/state" || fail "mkdir -m $smode"
fi
NOTIFY_SOCKET="$T/notify" start_daemon --gpus sim:2xa100-40gb
wait_until 10 grep -qx 'READY=1' "$T/notified" || fail "no READY=1: $(cat "$T/notified")"
if [ "$ROOT" = 1 ]; then
    ! grep -q 'open to other users' "$T/carmad.log" ||
        fail "StateDirectoryMode=$smode is not carmad's: $(grep 'open to other' "$T/carmad.log")"
    [ "$(stat -c %a "$T/state")" = "${smode#0}" ] ||
        fail "carmad keeps the state folder at $(stat -c %a "$T/state"), the unit says $smode"
fi
[ -S "$CARMA_SOCKET" ] || fail "READY=1 before the socket listens"

step "a job through the installed shepherd"
id=$(submit -- sleep 30)
wait_until 20 is_state "$id" running || fail "job $id not running: $("$CARMA" show "$id")"
spid=$(shepherd_of "$id")
[ -n "$spid" ] || fail "no shepherd pid for job $id"
[ "$(readlink /proc/"$spid"/exe)" = "$P/sbin/carma-shepherd" ] || fail "job $id not under the installed shepherd"
"$CARMA" cancel "$id" >/dev/null || fail "cancel $id"
wait_until 20 is_state "$id" cancelled || fail "job $id not cancelled"
id=$(submit -- true)
"$CARMA" wait "$id" >/dev/null || fail "job $id did not succeed: $("$CARMA" show "$id")"

step "STOPPING=1"
stop_daemon TERM || fail "carmad did not stop cleanly"
wait_until 10 grep -qx 'STOPPING=1' "$T/notified" || fail "no STOPPING=1: $(cat "$T/notified")"

step "WATCHDOG=1 while the loop turns, when asked of carmad"
: >"$T/notified"
NOTIFY_SOCKET="$T/notify" WATCHDOG_USEC=1000000 start_daemon --gpus sim:2xa100-40gb
pings() { [ "$(grep -cx 'WATCHDOG=1' "$T/notified")" -ge "$1" ]; }
wait_until 10 pings 3 ||
    fail "no watchdog pings: $(cat "$T/notified")"
stop_daemon TERM || fail "carmad did not stop cleanly"
: >"$T/notified"
# asked of another process (systemd names the main pid), and an interval carmad's ticks
# (0.2 s here) cannot keep within half of
NOTIFY_SOCKET="$T/notify" WATCHDOG_USEC=1000000 WATCHDOG_PID=1 start_daemon --gpus sim:2xa100-40gb
wait_until 10 grep -qx 'READY=1' "$T/notified" || fail "no READY=1"
sleep 1
! grep -q 'WATCHDOG' "$T/notified" || fail "pinged a watchdog asked of pid 1"
stop_daemon TERM || fail "carmad did not stop cleanly"
NOTIFY_SOCKET="$T/notify" WATCHDOG_USEC=300000 start_daemon --gpus sim:2xa100-40gb
grep -q 'WATCHDOG_USEC=300000: carmad pings once a monitor interval (0.2 s)' "$T/carmad.log" ||
    fail "no warning of a watchdog too short"
stop_daemon TERM || fail "carmad did not stop cleanly"

step "stderr the journal's stream (JOURNAL_STREAM): each line with its priority, no time"
: >"$T/carmad.log"
JOURNAL_STREAM=$(stat -c %d:%i "$T/carmad.log") start_daemon --gpus sim:2xa100-40gb
grep -q '^<6>reconciled: 0 queued' "$T/carmad.log" || fail "no <6> line: $(cat "$T/carmad.log")"
! grep -v '^<[0-7]>' "$T/carmad.log" | grep -q . ||
    fail "a line without its priority: $(grep -v '^<[0-7]>' "$T/carmad.log")"
stop_daemon TERM || fail "carmad did not stop cleanly"
grep -q '^<5>signal 15: stopping' "$T/carmad.log" || fail "no <5> line: $(cat "$T/carmad.log")"
# another stream's (stderr redirected since systemd set it): timed lines, as without
: >"$T/carmad.log"
JOURNAL_STREAM=1:2 start_daemon --gpus sim:2xa100-40gb
grep -Eq '^[0-9:.]{12} carmad info: reconciled: 0 queued' "$T/carmad.log" ||
    fail "not the timed lines: $(cat "$T/carmad.log")"
stop_daemon TERM || fail "carmad did not stop cleanly"

step "a NOTIFY_SOCKET that is no socket address: a warning, carmad runs"
NOTIFY_SOCKET="vsock:2:1" start_daemon --gpus sim:2xa100-40gb
grep -q 'NOTIFY_SOCKET=vsock:2:1: not an absolute path' "$T/carmad.log" || fail "no warning"
stop_daemon TERM || fail "carmad did not stop cleanly"

step "carma sim finds the installed catalog outside the source tree"
mkdir "$T/elsewhere"
(cd "$T/elsewhere" && "$CARMA" sim --trace - --policy auto,exclusive <"$REPO/data/trace-mix90.csv") \
    >"$T/sim.out" 2>&1 || fail "carma sim: $(cat "$T/sim.out")"
grep -q '^auto ' "$T/sim.out" || fail "no auto row: $(cat "$T/sim.out")"
(cd "$T/elsewhere" && "$CARMA" sim --trace "$P/share/carma/trace-t1.csv" --policy auto) \
    >"$T/sim.out" 2>&1 || fail "carma sim on the installed trace: $(cat "$T/sim.out")"

step "make uninstall"
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$REPO" MODE="${MODE:-release}" \
    BUILD="$BUILD_DIR" PREFIX="$P" uninstall >"$T/install.log" 2>&1 ||
    { cat "$T/install.log" >&2; fail "make uninstall failed"; }
left=$(find "$P" -type f)
[ -z "$left" ] || fail "left after uninstall: $left"
echo "install: ok"
