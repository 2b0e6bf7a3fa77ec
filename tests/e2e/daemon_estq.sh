#!/bin/sh
# A submission's summary is estimated off carmad's loop (the estimate queue, daemon/estq.h):
# while one waits, carmad answers every other request; a connection's later requests are
# answered after it, in order; one user has at most 4 in the queue, its others wait their
# turn outside it (none answered "busy") and never take another user's place; once the
# estimate is done the job is submitted with the estimator's bound; a client gone while
# its submission waits has its connection closed (its hangup would otherwise wake carmad's
# loop without end) and its job stored all the same; requests pipelined behind a waiting
# submission past carmad's input buffer do not keep its loop busy either; and a carmad that
# stops refuses the submissions still waiting instead of dropping them unanswered.
# CARMA_TEST_ESTIMATE_HOLD=F holds every estimate until F exists (F.held: one reached it).
. "$(dirname "$0")/helpers/daemon_lib.sh"

SUM=$(cd "$(dirname "$0")/../.." && pwd)/data/estimator/cifar-summaries/resnet18cifar100_32.model
[ -f "$SUM" ] || fail "missing $SUM"
export CARMA_TEST_ESTIMATE_HOLD="$T/go"
# (monitor ticks an hour apart: /metrics must be current without one)
sed -i 's/^monitor_interval = .*/monitor_interval = 3600/' "$T/carmad.ini"
PORT=$(free_port) || fail "no free TCP port"
start_daemon --gpus sim:2xa100-40gb --http "127.0.0.1:$PORT"
# metric NAME: its value in /metrics
metric() {
    python3 -c 'import sys, urllib.request
for l in urllib.request.urlopen(sys.argv[1]).read().decode().splitlines():
    if l.split(" ")[0] == sys.argv[2]: print(l.split(" ")[1])' "http://127.0.0.1:$PORT/metrics" "$1"
}
waiting_is() { [ "$(metric carma_estimates_waiting)" = "$1" ]; }

step "a summary waiting for its estimate holds no other request"
"$CARMA" submit --summary "$SUM" --batch 32 -- true first >"$T/first.id" 2>"$T/first.err" &
FIRST=$!
wait_until 10 test -e "$T/go.held" || fail "the submission did not reach the estimate queue"
"$CARMA" gpus >/dev/null || fail "carma gpus not answered while an estimate waits"
"$CARMA" ls --json >"$T/ls0.json" || fail "carma ls not answered while an estimate waits"
grep -q '"id"' "$T/ls0.json" && fail "a job exists before its estimate: $(cat "$T/ls0.json")"
kill -0 "$FIRST" 2>/dev/null || fail "carma submit answered before its estimate: $(cat "$T/first.err")"
wait_until 10 waiting_is 1 ||
    fail "/metrics: carma_estimates_waiting $(metric carma_estimates_waiting), 1 expected"
[ "$(metric carma_estimates_total)" = 0 ] || fail "carma_estimates_total before any"

step "one user's submissions past its 4 in the queue wait their turn; answers keep their order"
# Five more from this user (one of them pipelining a ping behind its submit): with the
# first, 4 are in the queue and two wait outside it; none is answered while the hold
# lasts, nor "busy", and all six get their ids once it ends.
python3 - "$CARMA_SOCKET" "$SUM" "$T/go" <<'PY'
import json, select, socket, sys, time
sock, summary, go = sys.argv[1], open(sys.argv[2]).read(), sys.argv[3]
def submit(tag):
    return json.dumps({"v": 1, "op": "submit", "job": {
        "argv": ["true", tag], "cwd": "/", "summary": summary, "batch": 32}}).encode() + b"\n"
conns, bufs = [], {}
for k in range(5):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    line = submit("q%d" % k)
    if k == 2:  # pipelined: its ping is answered only after its submit
        line += b'{"v":1,"op":"ping"}\n'
    s.sendall(line)
    conns.append(s)
    bufs[s] = b""
def lines(s):
    return [json.loads(l) for l in bufs[s].split(b"\n") if l]
def read_until(pred, timeout):
    end = time.monotonic() + timeout
    while not pred() and time.monotonic() < end:
        r, _, _ = select.select(conns, [], [], 0.05)
        for s in r:
            bufs[s] += s.recv(65536)
    return pred()
read_until(lambda: False, 1.0)  # nothing comes while the hold lasts
assert all(not lines(s) for s in conns), [lines(s) for s in conns]
open(go, "w").close()  # the estimates go on
want = lambda s: 2 if s is conns[2] else 1
assert read_until(lambda: all(len(lines(s)) == want(s) for s in conns), 20), \
    [lines(s) for s in conns]
for s in conns:
    assert lines(s)[0]["ok"] is True and lines(s)[0]["id"] > 0, lines(s)
got = lines(conns[2])
assert got[1].get("ok") is True and "version" in got[1], got  # the ping, after
PY
[ $? = 0 ] || fail "the queue's bounds or order"
wait "$FIRST" || fail "the first submission: $(cat "$T/first.err")"
id=$(cat "$T/first.id")
"$CARMA" show "$id" >"$T/first.txt" || fail "no job $id"
grep -q "bound     at submission: estimator (batch 32, adamw, fp32; estimate [0-9]* MiB)" \
    "$T/first.txt" || fail "the first job's bound is not the estimator's: $(cat "$T/first.txt")"
[ "$("$CARMA" ls --all --json | grep -c '"id"')" = 6 ] || fail "6 jobs expected: $("$CARMA" ls --all)"
wait_until 10 waiting_is 0 || fail "estimates still waiting in /metrics"
[ "$(metric carma_estimates_total)" = 6 ] ||
    fail "/metrics: carma_estimates_total $(metric carma_estimates_total), 6 expected"
awk -v s="$(metric carma_estimate_seconds_total)" 'BEGIN {exit !(s > 0)}' ||
    fail "carma_estimate_seconds_total $(metric carma_estimate_seconds_total)"

step "a client gone while its submission waits: closed, no busy loop, the job still stored"
rm -f "$T/go" "$T/go.held"
socks() { ls -l "/proc/$DPID/fd" 2>/dev/null | grep -c 'socket:'; }
socks_are() { [ "$(socks)" = "$1" ]; } # (counted anew at each look of wait_until)
# the connections of the clients above may take a moment to close on carmad's side
settled() { _a=$(socks); sleep 0.3; [ "$(socks)" = "$_a" ]; }
wait_until 10 settled || fail "carmad's connections do not settle"
n0=$(socks)
python3 - "$CARMA_SOCKET" "$SUM" <<'PY' || fail "could not submit"
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(json.dumps({"v": 1, "op": "submit", "job": {"argv": ["true", "gone"], "cwd": "/",
          "summary": open(sys.argv[2]).read(), "batch": 32}}).encode() + b"\n")
PY
wait_until 10 test -e "$T/go.held" || fail "the submission did not reach the estimate queue"
# the peer's hangup is reported however its fd is armed: carmad closes it, not spins on it
wait_until 10 socks_are "$n0" || fail "the connection of a client gone stays open"
t0=$(awk '{print $14 + $15}' "/proc/$DPID/stat")
sleep 2
t1=$(awk '{print $14 + $15}' "/proc/$DPID/stat")
[ $((t1 - t0)) -lt 100 ] || fail "carmad used $((t1 - t0)) ticks of CPU in 2 s while idle"
touch "$T/go"
wait_until 10 sh -c "[ \$(\"$CARMA\" ls --all --json | grep -c '\"id\"') = 7 ]" ||
    fail "the gone client's job was not stored: $("$CARMA" ls --all)"

step "requests pipelined behind a waiting submission: no busy loop while they wait"
# Two clients each send a submission and then pings until their socket takes no more:
# carmad's input buffer fills and stops reading. One keeps its connection (its answers all
# come, in order, once released), the other hangs up (its connection is closed).
rm -f "$T/go" "$T/go.held"
wait_until 10 settled || fail "carmad's connections do not settle"
python3 - "$CARMA_SOCKET" "$SUM" "$T/go" "$DPID" "$(socks)" <<'PY' || fail "pipelined requests"
import json, os, select, socket, sys, time
sock, summary, go, pid, n0 = sys.argv[1], open(sys.argv[2]).read(), sys.argv[3], sys.argv[4], \
    int(sys.argv[5])
PING = b'{"v":1,"op":"ping"}\n'
def flood(tag):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    s.sendall(json.dumps({"v": 1, "op": "submit", "job": {"argv": ["true", tag], "cwd": "/",
              "summary": summary, "batch": 32}}).encode() + b"\n")
    s.setblocking(False)
    pings, sent = PING * 20000, 0
    while select.select([], [s], [], 1)[1]:  # until carmad has read all it takes
        try:
            sent += s.send(pings[sent:sent + 4000])
        except BlockingIOError:
            pass
    assert sent > (64 << 10), sent  # past carmad's CONN_IN_SOFT
    return s, sent // len(PING)
def socks():
    n = 0
    for f in os.listdir("/proc/%s/fd" % pid):
        try:  # a descriptor closed since the listing is gone
            n += os.readlink("/proc/%s/fd/%s" % (pid, f)).startswith("socket:")
        except FileNotFoundError:
            pass
    return n
def ticks():
    f = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])
def wait(pred, t):
    end = time.monotonic() + t
    while not pred() and time.monotonic() < end:
        time.sleep(0.05)
    return pred()
a, na = flood("kept")
b, _ = flood("hung up")
b.close()
assert wait(lambda: os.path.exists(go + ".held"), 10), "no estimate reached the queue"
assert wait(lambda: socks() == n0 + 1, 5), "the connection hung up stays open: %d" % socks()
t0 = ticks()
time.sleep(2)
busy = ticks() - t0
assert busy < 100, "carmad used %d ticks of CPU in 2 s while its clients wait" % busy
open(go, "w").close()
a.setblocking(True)
a.settimeout(30)
buf = b""
while buf.count(b"\n") < 1 + na:
    d = a.recv(1 << 20)
    assert d, "carmad closed the kept connection: %r" % buf[-200:]
    buf += d
got = [json.loads(l) for l in buf.split(b"\n") if l]
assert len(got) == 1 + na, len(got)
assert got[0]["ok"] is True and got[0]["id"] > 0, got[0]
assert all(r.get("ok") is True and "version" in r for r in got[1:]), got[1:3]
PY
wait_until 10 sh -c "[ \$(\"$CARMA\" ls --all --json | grep -c '\"id\"') = 9 ]" ||
    fail "7 jobs expected: $("$CARMA" ls --all)"

step "a carmad that stops answers the submissions still waiting"
rm -f "$T/go" "$T/go.held"
CARMA_TIMEOUT=2 "$CARMA" submit --summary "$SUM" --batch 32 -- true last >"$T/last.id" \
    2>"$T/last.err" &
LAST=$!
wait_until 10 test -e "$T/go.held" || fail "the last submission did not reach the queue"
stop_daemon || fail "carmad did not stop cleanly"
wait "$LAST" && fail "a submission refused at the stop succeeded: $(cat "$T/last.id")"
grep -q "carmad is stopping before this job's summary was estimated: the job was not submitted" \
    "$T/last.err" || fail "the refused submission's client was not told: $(cat "$T/last.err")"
grep -q "cannot reach carmad" "$T/last.err" ||
    fail "the refused client's last word: $(cat "$T/last.err")"
touch "$T/go"
start_daemon --gpus sim:2xa100-40gb
[ "$("$CARMA" ls --all --json | grep -c '"id"')" = 9 ] || fail "a refused job was kept: $("$CARMA" ls --all)"

step "... and its client gets in when carmad is back within CARMA_TIMEOUT"
rm -f "$T/go" "$T/go.held"
stop_daemon || fail "carmad did not stop cleanly"
start_daemon --gpus sim:2xa100-40gb
CARMA_TIMEOUT=30 "$CARMA" submit --summary "$SUM" --batch 32 -- true again >"$T/again.id" \
    2>"$T/again.err" &
AGAIN=$!
wait_until 10 test -e "$T/go.held" || fail "the submission did not reach the queue"
stop_daemon || fail "carmad did not stop cleanly"
wait_until 10 grep -q "waiting up to 30 s for carmad to come back" "$T/again.err" ||
    fail "the client did not wait for carmad: $(cat "$T/again.err")"
touch "$T/go"
start_daemon --gpus sim:2xa100-40gb --http "127.0.0.1:$PORT" # (for /metrics, below)
wait "$AGAIN" || fail "the submission after the restart: $(cat "$T/again.err")"
grep -q "carmad is back" "$T/again.err" || fail "the client's words: $(cat "$T/again.err")"
"$CARMA" show "$(cat "$T/again.id")" | grep -q 'true again' || fail "the job after the restart"
[ "$("$CARMA" ls --all --json | grep -c '"id"')" = 10 ] || fail "jobs: $("$CARMA" ls --all)"

step "one user's summaries past its 4 in the queue do not hold up another user's"
# Six of root's wait (4 in the queue, 2 outside it), then one of nobody's: it is
# estimated fifth, before root's last two, so its job id is below theirs.
if [ "$ROOT" = 1 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
    chmod 666 "$CARMA_SOCKET"
    nobody_client
    cp "$SUM" "$NB/summary" && chmod 644 "$NB/summary"
    rm -f "$T/go" "$T/go.held"
    pids=
    for k in 1 2 3 4 5 6; do
        "$CARMA" submit --summary "$SUM" --batch 32 -- true "r$k" >"$T/r$k.id" 2>"$T/r$k.err" &
        pids="$pids $!"
        [ "$k" = 1 ] && { wait_until 10 test -e "$T/go.held" || fail "no estimate started"; }
    done
    # root's six are in, as carmad counts them (not a fixed pause: on a loaded host a client
    # may take longer to reach carmad)
    wait_until 30 waiting_is 6 || fail "root's six not all waiting: $(metric carma_estimates_waiting)"
    as_nobody "$NB/carma" submit --summary "$NB/summary" --batch 32 -- true nb >"$T/nb.id" \
        2>"$T/nb.err" &
    pids="$pids $!"
    # nobody's is in, behind root's four in the queue (a client slower than a fixed pause
    # found root's last two estimated before it)
    wait_until 30 waiting_is 7 || fail "nobody's not waiting: $(metric carma_estimates_waiting)"
    touch "$T/go"
    for p in $pids; do wait "$p" || fail "a submission failed: $(cat "$T"/r*.err "$T/nb.err")"; done
    ! grep -q . "$T"/r*.err "$T/nb.err" || fail "said on stderr: $(cat "$T"/r*.err "$T/nb.err")"
    nb=$(cat "$T/nb.id")
    later=$(cat "$T"/r*.id | awk -v nb="$nb" '$1 > nb' | wc -l)
    [ "$later" = 2 ] || fail "nobody's job $nb estimated before $later of root's, 2 expected: $(cat "$T"/r*.id)"

    step "one user's summaries waiting outside the queue never take another user's place"
    # 64 of root's wait (4 in the queue, 60 outside it): nobody's still goes in, and is
    # estimated fifth; 4 more of root's wait too, and its 69th is busy: 64 wait outside.
    # (When those outside counted against the queue's 64, root alone filled it: nobody's
    # was answered busy.)
    rm -f "$T/go" "$T/go.held"
    stop_daemon || fail "carmad did not stop cleanly"
    start_daemon --gpus sim:2xa100-40gb --http "127.0.0.1:$PORT" # (for /metrics)
    chmod 666 "$CARMA_SOCKET"
    python3 - "$CARMA_SOCKET" "$SUM" "$T/go" "http://127.0.0.1:$PORT/metrics" "$NB" <<'PY' ||
import json, pwd, select, socket, subprocess, sys, time, urllib.request
sock, summary, go, url, nb = sys.argv[1], open(sys.argv[2]).read(), sys.argv[3], \
    sys.argv[4], sys.argv[5]
def waiting():
    for l in urllib.request.urlopen(url).read().decode().splitlines():
        if l.split(" ")[0] == "carma_estimates_waiting":
            return int(l.split(" ")[1])
def wait_waiting(n):
    end = time.monotonic() + 20
    while waiting() != n and time.monotonic() < end:
        time.sleep(0.02)
    assert waiting() == n, "%d waiting, %d expected" % (waiting(), n)
def submit(tag):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    s.sendall(json.dumps({"v": 1, "op": "submit", "job": {"argv": ["true", tag], "cwd": "/",
              "summary": summary, "batch": 32}}).encode() + b"\n")
    return s
roots = [submit("w%d" % k) for k in range(64)]
wait_waiting(64)
n = pwd.getpwnam("nobody")
them = subprocess.Popen(["setpriv", "--reuid=nobody", "--regid=%d" % n.pw_gid, "--clear-groups",
                         "env", "CARMA_SOCKET=" + sock, "CARMA_TIMEOUT=5", nb + "/carma", "submit",
                         "--summary", nb + "/summary", "--batch", "32", "--", "true", "nb2"],
                        cwd="/tmp", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
end = time.monotonic() + 10
while waiting() != 65 and them.poll() is None and time.monotonic() < end:
    time.sleep(0.02)
assert waiting() == 65, "nobody's: %r" % (them.communicate(),)
roots += [submit("w%d" % k) for k in range(64, 68)]
wait_waiting(69)
s = submit("w68")
s.settimeout(5)
a = json.loads(s.recv(65536).split(b"\n")[0])
assert a.get("error") == "busy" and "wait outside the estimate queue" in a["message"], a
open(go, "w").close()
out, err = them.communicate(timeout=60)
assert them.returncode == 0 and not err, (them.returncode, err)
mine = int(out)
ids = []
for s in roots:
    s.settimeout(60)
    ids.append(json.loads(s.recv(65536).split(b"\n")[0])["id"])
later = sum(i > mine for i in ids)
assert later == 64, "nobody's job %d estimated before %d of root's 68, 64 expected" % (mine, later)
PY
        fail "one user's summaries waiting outside the queue"
else
    echo "   (skipped: it needs root, setpriv and the user nobody)"
fi
echo "ok"
