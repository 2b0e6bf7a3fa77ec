#!/bin/sh
# A submission's paths (its cwd, its command on PATH) are checked off carmad's loop
# (daemon/pathcheck.h), so that a file system that does not answer (a hung NFS server, a
# stuck FUSE mount) holds one thread, not carmad: while a check hangs carmad answers every
# other request; the submission is refused at path_check_timeout, with the reason; checks
# still hanging are counted, and past 4 of one user that user's next submission is refused
# at once; once the file system answers they end and submissions go through again; a
# user's checks in flight count too, so that no more than 4 of a user are ever left
# hanging: its next submissions wait for them (refused at their own timeout if they
# hang; eight parallel submissions all go through once they answer), and those waiting so
# never take the place of another user's check; a carmad that stops refuses a submission
# whose check still hangs; a check that waited its turn has its own timeout, and a
# submission waiting behind checks given up starts once their file system answers.
# CARMA_TEST_PATHCHECK_HOLD=F holds every check until F exists (F.held: one reached it),
# then for the ms F holds, if any.
. "$(dirname "$0")/helpers/daemon_lib.sh"

# (monitor ticks an hour apart: nothing but what a step does wakes carmad's loop)
sed -i 's/^monitor_interval = .*/monitor_interval = 3600/' "$T/carmad.ini"
printf '[daemon]\npath_check_timeout = 1\n' >>"$T/carmad.ini"
export CARMA_TEST_PATHCHECK_HOLD="$T/answer"
start_daemon --gpus sim:2xa100-40gb

step "a check that does not end holds no other request, and is refused at its timeout"
"$CARMA" submit -- true >"$T/s1.out" 2>"$T/s1.err" &
S1=$!
wait_until 10 test -e "$T/answer.held" || fail "the check did not start"
"$CARMA" gpus >/dev/null || fail "carma gpus not answered while a check hangs"
"$CARMA" ls >/dev/null || fail "carma ls not answered while a check hangs"
wait "$S1"
rc=$?
[ "$rc" = 2 ] || fail "the submission: exit $rc, $(cat "$T/s1.err")"
grep -q "job.cwd: $(pwd) or its command's folders did not answer within 1 s (path_check_timeout): a network or FUSE file system that hangs? The job was not submitted" "$T/s1.err" ||
    fail "the refusal: $(cat "$T/s1.err")"
[ ! -s "$T/s1.out" ] || fail "a job id printed: $(cat "$T/s1.out")"
grep -q "a submission of uid $(id -u) refused: its paths (cwd $(pwd)) did not answer within 1 s; 1 path checks wait on file systems (1 of that uid)" "$T/carmad.log" ||
    fail "no log line"
# (ls --json prints the array of jobs, [] none; --all: one that ended at once too)
[ "$("$CARMA" ls --all --json)" = "[]" ] || fail "a job was stored: $("$CARMA" ls --all)"

step "past 4 hanging checks of one user, the next submission is refused at once"
for k in 2 3 4; do
    "$CARMA" submit -- true >/dev/null 2>"$T/s$k.err" && fail "submission $k went through"
    grep -q "did not answer within 1 s" "$T/s$k.err" || fail "submission $k: $(cat "$T/s$k.err")"
done
CARMA_TIMEOUT=1 "$CARMA" submit -- true >/dev/null 2>"$T/s5.err" && fail "submission 5 went through"
grep -q "4 path checks (4 of uid $(id -u)) wait on file systems that did not answer within 1 s: submit again once they answer" "$T/s5.err" ||
    fail "submission 5: $(cat "$T/s5.err")"

step "once the file system answers, the hanging checks end and submissions go through"
touch "$T/answer"
id=$("$CARMA" submit -- true) || fail "refused after the file system answered"
"$CARMA" wait --timeout 20 "$id" >/dev/null || fail "job $id: $(state_of "$id")"
"$CARMA" submit -- /nonexistent/x >/dev/null 2>"$T/s6.err" && fail "a missing command went through"
grep -q "command not found or not executable: /nonexistent/x" "$T/s6.err" || fail "$(cat "$T/s6.err")"

step "requests pipelined behind a submission refused at its timeout are answered with it"
# Its refusal releases the connection's next request, a ping: answered at once, not at
# carmad's next wakeup (1 s while a connection is open: the test's event for "late").
rm -f "$T/answer" "$T/answer.held"
python3 - "$CARMA_SOCKET" "$(pwd)" <<'PY' || fail "the ping pipelined behind the refused submission"
import json, socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(json.dumps({"v": 1, "op": "submit", "job": {"argv": ["true"], "cwd": sys.argv[2]}})
          .encode() + b"\n" + b'{"v":1,"op":"ping"}\n')
s.settimeout(10)
buf, at = b"", []
while len(at) < 2:
    d = s.recv(65536)
    assert d, "carmad closed the connection: %r" % buf
    buf += d
    at += [time.monotonic()] * (buf.count(b"\n") - len(at))
got = [json.loads(l) for l in buf.split(b"\n") if l]
assert got[0].get("error") == "invalid" and "path_check_timeout" in got[0]["message"], got
assert got[1].get("ok") is True and "version" in got[1], got
assert at[1] - at[0] < 0.5, "the ping answered %.3f s after the refusal" % (at[1] - at[0])
PY
touch "$T/answer"

step "one user's checks in flight count against its 4: they could all hang"
# Eight at once from one folder that hangs: were each given a thread, all eight would be
# left hanging, and two such users would hold carmad's 64, everyone's submissions refused.
# (root and carmad's own uid are exempt: the user is nobody, which needs root)
if [ "$ROOT" = 1 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
    chmod 666 "$CARMA_SOCKET"
    nobody_client
    NUID=$(id -u nobody)
    rm -f "$T/answer" "$T/answer.held"
    pids=
    for k in 1 2 3 4 5 6 7 8; do
        as_nobody env CARMA_TIMEOUT=3 "$NB/carma" submit -- true >/dev/null 2>"$T/p$k.err" &
        pids="$pids $!"
    done
    for p in $pids; do wait "$p" && fail "a submission went through while its check hung"; done
    most=$(sed -n "s/.*submission of uid $NUID refused: .*path checks wait on file systems (\([0-9]*\) of that uid).*/\1/p" "$T/carmad.log" | sort -n | tail -1)
    [ "$most" = 4 ] || fail "${most:-no} checks of one uid left hanging, 4 at most: $(cat "$T"/p*.err)"
    n=$(grep -c "submission of uid $NUID refused: its paths (cwd .*) were not checked within 1 s, behind that uid's checks" "$T/carmad.log")
    [ "$n" = 4 ] || fail "$n submissions refused behind the hanging checks, 4 expected"
    grep -l "its paths were not checked within 1 s (path_check_timeout): uid $NUID's checks before it did not answer" "$T"/p*.err | wc -l | grep -qx 4 ||
        fail "the refusals behind them: $(cat "$T"/p*.err)"
    touch "$T/answer"
    as_nobody "$NB/carma" submit -- true >/dev/null || fail "refused after the file system answered"
    sleep 0.3 # the threads left hanging see the answer (they look every 10 ms) and end

    step "a user's parallel submissions past its 4 checks wait for them, none refused"
    rm -f "$T/answer" "$T/answer.held"
    pids=
    for k in 1 2 3 4 5 6 7 8; do
        as_nobody env CARMA_TIMEOUT=3 "$NB/carma" submit -- true >"$T/q$k.out" 2>"$T/q$k.err" &
        pids="$pids $!"
    done
    wait_until 10 test -e "$T/answer.held" || fail "no check started"
    sleep 0.3 # the eight are in: four checks held, four waiting for them
    touch "$T/answer"
    for p in $pids; do wait "$p" || fail "a parallel submission failed: $(cat "$T"/q*.err)"; done
    ! grep -q . "$T"/q*.err || fail "said on stderr (busy?): $(cat "$T"/q*.err)"
    [ "$(cat "$T"/q*.out | wc -l)" = 8 ] || fail "job ids: $(cat "$T"/q*.out)"

    step "one user's waiting submissions never take another user's place"
    # nobody's checks hang; 300 of its submissions, each from a connection closed at
    # once (the submission stays with carmad), then one whose answer is read: 4 checks are
    # made, 64 wait for them, the rest are answered busy. root's submission then gets its
    # check all the same: it is refused at its timeout, not answered busy (when nobody's
    # waiting ones counted against the 256 checks of everyone, nobody alone filled them).
    rm -f "$T/answer" "$T/answer.held"
    python3 - "$CARMA_SOCKET" "$(pwd)" <<'PY' || fail "a user's waiting submissions took another's place"
import fcntl, json, os, pwd, socket, struct, sys, time
sock, cwd = sys.argv[1], sys.argv[2]
def submit(tag, where):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    s.sendall(json.dumps({"v": 1, "op": "submit", "job": {"argv": ["true", tag],
              "cwd": where}}).encode() + b"\n")
    return s
def answer(s, t):
    s.settimeout(t)
    try:
        return json.loads(s.recv(65536).split(b"\n")[0])
    except socket.timeout:
        return None
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    nb = pwd.getpwnam("nobody")
    os.setgroups([])
    os.setgid(nb.pw_gid)
    os.setuid(nb.pw_uid)
    def read_by_carmad(s):  # nothing left unread in the socket (SIOCOUTQ)
        return struct.unpack("i", fcntl.ioctl(s, 0x5411, b"\0" * 4))[0] == 0
    try:  # (each closed once carmad has read it: it refuses a uid's 65th connection)
        held = []
        for k in range(300):
            held.append(submit("f%d" % k, "/tmp"))
            while len(held) >= 16 or (k == 299 and held):
                for s in [s for s in held if read_by_carmad(s)]:
                    held.remove(s)
                    s.close()
                time.sleep(0.0002)
        for _ in range(100):
            last = answer(submit("last", "/tmp"), 0.5)
            if not (last and "too many connections" in last.get("message", "")):
                break
            time.sleep(0.005)
        os.write(w, json.dumps(last).encode())
    finally:
        os._exit(0)
os.waitpid(pid, 0)
last = json.loads(os.read(r, 65536) or b"null")
mine = answer(submit("root", cwd), 5)
assert mine and mine.get("error") == "invalid" and "did not answer" in mine["message"], \
    "root's: %r" % mine
assert last and last.get("error") == "busy" and "wait for a path check of their user's" in \
    last["message"], "nobody's last: %r" % last
PY
    touch "$T/answer"
    sleep 0.3 # the threads left hanging see the answer (they look every 10 ms) and end
else
    echo "   (skipped: it needs root, setpriv and the user nobody)"
fi

step "carmad stopping refuses a submission whose check still hangs"
rm -f "$T/answer" "$T/answer.held"
# (its "busy" would be asked again for CARMA_TIMEOUT, 60 s, while no carmad comes back)
CARMA_TIMEOUT=2 "$CARMA" submit -- true >/dev/null 2>"$T/s7.err" &
S7=$!
wait_until 10 test -e "$T/answer.held" || fail "the check did not start"
stop_daemon TERM || fail "stop"
wait "$S7" && fail "submission 7 went through"
grep -q "carmad is stopping before this job's paths were checked: the job was not submitted" "$T/s7.err" ||
    fail "submission 7: $(cat "$T/s7.err")"
touch "$T/answer"

step "checks that waited their turn on a slow file system each get the whole timeout"
if [ "$ROOT" = 1 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
    sed -i 's/^path_check_timeout = .*/path_check_timeout = 4/' "$T/carmad.ini"
    start_daemon --gpus sim:2xa100-40gb
    chmod 666 "$CARMA_SOCKET"
    # Each check takes 2.5 s: nobody's first four from 0 to 2.5 s, the next four from 2.5
    # to 5 s, past 4 s from their submission (which was their deadline: refused at 4 s).
    echo 2500 >"$T/answer"
    pids=
    for k in 1 2 3 4 5 6 7 8; do
        as_nobody env CARMA_TIMEOUT=20 "$NB/carma" submit -- true >"$T/w$k.out" 2>"$T/w$k.err" &
        pids="$pids $!"
    done
    for p in $pids; do wait "$p" || fail "a check made after its turn came was refused: $(cat "$T"/w*.err)"; done
    [ "$(cat "$T"/w*.out | wc -l)" = 8 ] || fail "job ids: $(cat "$T"/w*.out)"

    step "a submission waiting behind checks given up starts once their file system answers"
    # Four checks hang; the fifth, sent 2 s later, waits for them. At 4 s they are given
    # up, their threads still waiting; once the file system answers those end, and the
    # fifth gets its check then, not refused at its own deadline (6 s) for want of a wakeup.
    rm -f "$T/answer" "$T/answer.held"
    pids=
    for k in 1 2 3 4; do
        as_nobody env CARMA_TIMEOUT=20 "$NB/carma" submit -- true >/dev/null 2>"$T/g$k.err" &
        pids="$pids $!"
    done
    wait_until 10 test -e "$T/answer.held" || fail "no check started"
    sleep 2
    as_nobody env CARMA_TIMEOUT=20 "$NB/carma" submit -- true >"$T/g5.out" 2>"$T/g5.err" &
    P5=$!
    for p in $pids; do wait "$p" && fail "a submission went through while its check hung"; done
    touch "$T/answer"
    wait "$P5" || fail "the submission behind the checks given up: $(cat "$T/g5.err")"
    grep -q '^[0-9]' "$T/g5.out" || fail "no job id: $(cat "$T/g5.out")"
    stop_daemon TERM || fail "stop"
else
    echo "   (skipped: it needs root, setpriv and the user nobody)"
fi
echo "daemon_paths: ok"
