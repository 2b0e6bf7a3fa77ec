#!/bin/sh
# carmad against misbehaving clients (docs/daemon.md "Limits"): one that pipelines
# requests and never reads (bounded memory, closed, others stay fast), an error that
# quotes a long non-ASCII text (answered), an idle
# connection (closed), thousands of jobs in `ls` (paged), pipelined history requests (a
# share of the loop, the rest "busy"), an argv too large to show
# (refused at submit), a daemon that never answers (the client gives up), one user
# holding many connections (capped with "busy", root still gets in) or pipelining on
# all of them (a slice of the loop: root's ping stays fast), and a low
# open-files limit (no busy loop, one log line).
. "$(dirname "$0")/helpers/daemon_lib.sh"
PY="python3 $HELP/conn_abuse.py"
S=$CARMA_SOCKET
INI0=$(cat "$T/carmad.ini")
printf '%s\nconn_idle_timeout = 1\nconn_stall_timeout = 2\n' "$INI0" > "$T/carmad.ini"
start_daemon --gpus sim:4xa100-40gb

step "clients that never read: bounded, closed, others still answered"
NR=
for k in 1 2 3; do $PY noread "$S" "$DPID" 20 > "$T/noread.$k" & NR="$NR $!"; done
sleep 1
for k in 1 2 3; do
    p=$($PY ping "$S")
    python3 -c 'import sys; sys.exit(not float(sys.argv[1]) < 3)' "$p" 2>/dev/null ||
        fail "ping took $p s while clients did not read"
done
wait $NR
for k in 1 2 3; do
    python3 - "$T/noread.$k" <<'PYEOF' || fail "client $k: $(cat "$T/noread.$k")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["closed_after"] is not None, "never closed"
assert r["rss_peak_kb"] - r["rss_base_kb"] < 150 * 1024, "carmad grew"
PYEOF
done
grep -q "answers unread for" "$T/carmad.log" || fail "no log of the closed connections"

step "an idle connection is closed"
r=$($PY idle "$S" 15)
[ "$r" != open ] || fail "an idle connection stayed open 15 s"

step "the client gives up on a daemon that does not answer"
$PY mute "$T/mute.sock" & MUTE=$!
ON_EXIT="kill $MUTE 2>/dev/null"
wait_until 5 test -S "$T/mute.sock" || fail "mute server"
rc=0; CARMA_TIMEOUT=1 timeout 30 "$CARMA" gpus --socket "$T/mute.sock" 2>"$T/err" || rc=$?
kill "$MUTE"; ON_EXIT=
[ "$rc" = 1 ] || fail "exit $rc against a mute daemon"
grep -q "did not answer within 1 s" "$T/err" || fail "message: $(cat "$T/err")"

step "requests written with the client's half-close are all answered"
for k in 1 2 3 4 5; do
    $PY halfclose "$S" 3 > "$T/hc.$k"
    [ "$(grep -c '"ok":true' "$T/hc.$k")" = 3 ] || fail "3 pipelined pings, half-close: $(cat "$T/hc.$k")"
done
$PY halfclose "$S" 1 '{"v":1,"op":"ping"}' > "$T/hc.tail"
[ "$(grep -c '"ok":true' "$T/hc.tail")" = 1 ] &&
    grep -q '"error":"badrequest".*request without a newline at the end of the connection' "$T/hc.tail" ||
    fail "a last request without a newline: $(cat "$T/hc.tail")"

step "an argv too large to show is refused at submit"
python3 -c 'import json; print(json.dumps({"v":1,"op":"submit","job":{"argv":["/bin/true"]+["A"*8000]*40,"cwd":"/tmp"}}))' > "$T/big.json"
$PY raw "$S" "@$T/big.json" > "$T/ans"
grep -q '"error":"badrequest".*job.argv: .* bytes as JSON, more than 262144' "$T/ans" ||
    fail "answer: $(head -c 300 "$T/ans")"
python3 -c 'import json; print(json.dumps({"v":1,"op":"submit","job":{"argv":["/bin/true"]+["A"*8000]*30,"cwd":"/tmp"}}))' > "$T/ok.json"
id=$($PY raw "$S" "@$T/ok.json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])') ||
    fail "a 240 KB argv refused"
"$CARMA" show "$id" >/dev/null || fail "show of a job with a 240 KB argv"

step "a cancel naming an ended job costs no more for its large argv"
# (it read the job's whole row for each id: 4096 times 240 KB, 4 times a small job's time)
small=$(submit -- true)
wait_until 20 is_state "$id" succeeded && wait_until 20 is_state "$small" succeeded ||
    fail "the jobs did not end"
took() { # JOB: the least time of 3 cancels naming it 4096 times
    _r=$(python3 -c 'import json,sys; print(json.dumps({"v":1,"op":"cancel","ids":[int(sys.argv[1])]*4096}))' "$1")
    for _k in 1 2 3; do $PY flood "$S" 0 0 "$_r" "$T/mark"; done |
        python3 -c 'import json,sys; print(min(json.loads(l)["single"] for l in sys.stdin))'
}
tb=$(took "$id") && ts=$(took "$small") || fail "cancels"
python3 -c 'import sys; sys.exit(not float(sys.argv[1]) < 2 * float(sys.argv[2]) + 0.02)' "$tb" "$ts" ||
    fail "a cancel naming a job of 240 KB argv 4096 times took $tb s, a small job's $ts s"

step "an error quoting a long non-ASCII text is answered, cut at a whole character"
A="x$(python3 -c "print('\u00e9' * 600, end='')")"
rc=0; CARMA_TIMEOUT=8 "$CARMA" submit -- "$A" 2>"$T/err" >/dev/null || rc=$?
[ "$rc" = 2 ] && grep -q "command not found or not executable: x" "$T/err" ||
    fail "a long non-ASCII argv[0]: exit $rc, $(head -c 300 "$T/err")"
python3 -c "import json; print('{\"v\":1,\"op\":\"ls\",\"x' + '\u00e9' * 40 + '\":1}')" > "$T/key.json"
$PY raw "$S" "@$T/key.json" > "$T/ans"
grep -q '"error":"badrequest".*unknown field' "$T/ans" || fail "a long non-ASCII key: $(head -c 300 "$T/ans")"

step "ls pages through thousands of jobs"
# (long enough for 3000 submissions under a sanitizer on a loaded host; cancelled below)
blk=$(submit --gpus 4 --name blocker -- sh "$HELP/run_for.sh" 900)
n=$($PY submit "$S" 3000)
[ "$n" = 3000 ] || fail "$n of 3000 submissions accepted"
rows=$("$CARMA" ls | wc -l)
[ "$rows" = 3002 ] || fail "carma ls: $rows lines, 3002 expected (header, blocker, 3000)"
"$CARMA" ls --all --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
ids = [x["id"] for x in j]
assert len(j) == 3003 and ids == sorted(set(ids)), len(j)' || fail "carma ls --all --json" # (+ 2 ended above)
$PY raw "$S" '{"v":1,"op":"ls","all":true}' | python3 -c '
import json, sys
a = json.load(sys.stdin)
assert a["ok"] and 0 < len(a["jobs"]) < 3002 and a["next"] == a["jobs"][-1]["id"], len(a["jobs"])' ||
    fail "an ls page"
$PY raw "$S" '{"v":1,"op":"ls","limit":2,"after":'"$blk"'}' | python3 -c '
import json, sys
a = json.load(sys.stdin)
assert [x["id"] for x in a["jobs"]] == [int(sys.argv[1]) + 1, int(sys.argv[1]) + 2], a' "$blk" ||
    fail "ls after/limit"
# the queued jobs first, so that none is running when carmad stops
"$CARMA" cancel $(seq $((blk + 1)) $((blk + 3000))) "$blk" >/dev/null || fail "cancel"
wait_until 20 is_state "$blk" cancelled || fail "the blocker did not end"
stop_daemon

step "pipelined history requests take at most a share of the loop: a ping stays fast"
# a week of 4 GPUs' records at 10 s: each history request reads them on carmad's loop
python3 - "$T/state/carma.db" <<'PYEOF' || fail "records for the history requests"
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1])
t0 = time.time() - 7 * 86400 + 600
db.executemany("INSERT INTO samples(gpu,t,mem_mib,util,smact,power_w) VALUES (?,?,1000,0.5,0.5,200)",
               ((g, t0 + 10 * k) for (g,) in db.execute("SELECT id FROM gpus").fetchall()
                for k in range(7 * 8640 - 120)))
db.commit()
PYEOF
printf '%s\n' "$INI0" > "$T/carmad.ini"
start_daemon --gpus sim:4xa100-40gb
$PY history "$S" 16 > "$T/history" || fail "history requests: $(cat "$T/history")"
python3 - "$T/history" <<'PYEOF' || fail "16 history requests on each of 2 connections: $(cat "$T/history")"
import json, sys
r = json.load(open(sys.argv[1]))
assert sum(r["answers"].values()) == 32 and set(r["answers"]) <= {"ok", "busy"}, r
assert r["answers"].get("busy", 0) > 0, "none answered busy"
assert r["ping"] is not None and r["ping"] < 8 * r["single"] + 1, "the ping waited"
PYEOF
rc=0; CARMA_TIMEOUT=30 "$CARMA" report --html "$T/report.html" 2>"$T/err" || rc=$?
[ "$rc" = 0 ] || fail "carma report after them: exit $rc, $(cat "$T/err")"
stop_daemon

if [ "$ROOT" = 1 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1 &&
    [ -x /usr/bin/python3 ]; then
    step "one user's connections are capped; root still gets in"
    printf '%s\nmax_conns_per_user = 8\n' "$INI0" > "$T/carmad.ini"
    start_daemon --gpus sim:1xa100-40gb
    chmod 666 "$S"
    NB=$(mktemp -d /tmp/carma-nobody.XXXXXX)
    chmod 755 "$NB"
    cp "$CARMA" "$NB/carma"
    cp "$HELP/conn_abuse.py" "$NB/"
    ON_EXIT="rm -rf $NB"
    as_nobody() { setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups "$@"; }
    # held until killed below (exec: $! is the holder itself)
    (cd /tmp && exec setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups \
        /usr/bin/python3 "$NB/conn_abuse.py" hold "$S" 20 60) > "$T/hold" &
    HOLD=$!
    wait_until 10 test -s "$T/hold" || fail "holder"
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["open"] == 8 and r["busy"] == 12, r' \
        "$T/hold" || fail "nobody's 20 connections: $(cat "$T/hold")"
    p=$($PY ping "$S")
    python3 -c 'import sys; sys.exit(not float(sys.argv[1]) < 3)' "$p" 2>/dev/null || fail "root's ping: $p"
    # "busy" is passing: the client asks again, as long as it waits for an answer
    rc=0; (cd /tmp && as_nobody env CARMA_SOCKET="$S" CARMA_TIMEOUT=1 "$NB/carma" gpus) 2>"$T/err" >/dev/null || rc=$?
    [ "$rc" = 1 ] && grep -q "too many connections of uid.*trying again for up to 1 s" "$T/err" ||
        fail "nobody's 9th connection: exit $rc, $(cat "$T/err")"
    (cd /tmp && as_nobody env CARMA_SOCKET="$S" "$NB/carma" gpus) >/dev/null 2>"$T/err2" &
    LATE=$!
    sleep 0.5
    kill "$HOLD" # (as its user, root may) its connections close: the late one gets in
    wait "$HOLD"
    wait "$LATE" || fail "nobody's gpus while its connections were at the cap: $(cat "$T/err2")"

    step "one user's pipelined requests on all its connections take a slice of the loop"
    stop_daemon
    printf '%s\n' "$INI0" > "$T/carmad.ini" # max_conns_per_user: 64
    start_daemon --gpus sim:1xa100-40gb
    chmod 666 "$S"
    python3 -c 'import json; print(json.dumps({"v":1,"op":"submit","job":{"argv":["/bin/true"]+["A"*8000]*30,"cwd":"/tmp"}}))' > "$NB/big.json"
    nj=$(cd /tmp && as_nobody /usr/bin/python3 "$NB/conn_abuse.py" raw "$S" "@$NB/big.json" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])') || fail "nobody's job"
    wait_until 20 is_state "$nj" succeeded || fail "nobody's job did not end"
    # each cancel reads the job's row (its 240 KB argv) 128 times: 16 on each of 60
    # connections held the loop for seconds at a time, root's ping behind them
    REQ=$(python3 -c 'import json,sys; print(json.dumps({"v":1,"op":"cancel","ids":[int(sys.argv[1])]*128}))' "$nj")
    mkdir -m 777 "$NB/m" # (the mark is nobody's to make)
    (cd /tmp && exec setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups \
        /usr/bin/python3 "$NB/conn_abuse.py" flood "$S" 60 16 "$REQ" "$NB/m/mark") > "$T/flood" 2>&1 &
    FLOOD=$!
    wait_until 20 test -e "$NB/m/mark" || fail "flood: $(cat "$T/flood")"
    p=$($PY ping "$S")
    wait "$FLOOD" || fail "flood: $(cat "$T/flood")"
    python3 - "$T/flood" "$p" <<'PYEOF' || fail "root's ping beside nobody's 60 x 16 cancels: $p s, $(cat "$T/flood")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["answers"] == {"ok": 960}, r
assert float(sys.argv[2]) < 1.5, "the ping waited"
PYEOF
    rm -rf "$NB"; ON_EXIT=
    stop_daemon
else
    echo "(skipped: the per-user cap needs root, setpriv and /usr/bin/python3 for a second user)"
fi

step "a low open-files limit: refusals, no busy loop"
printf '%s\n' "$INI0" > "$T/carmad.ini"
(ulimit -n 24 && exec "$CARMAD" --foreground --state "$T/state" --socket "$S" \
    --config "$T/carmad.ini" --gpus sim:1xa100-40gb 2>>"$T/carmad.log") &
DPID=$!
wait_until 20 "$CARMA" gpus || fail "carmad under ulimit -n 24 did not start"
$PY hold "$S" 40 4 > "$T/hold-nofile" &
HOLD=$!
wait_until 10 test -s "$T/hold-nofile" || fail "holder"
cpu=$($PY cpu "$DPID" 2)
python3 -c 'import sys; sys.exit(not float(sys.argv[1]) < 0.5)' "$cpu" || fail "carmad used $cpu s of CPU in 2 s"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["busy"] > 0 and r["open"] + r["busy"] == 40, r' \
    "$T/hold-nofile" || fail "40 connections under ulimit -n 24: $(cat "$T/hold-nofile")"
wait "$HOLD"
wait_until 10 "$CARMA" gpus || fail "carmad does not answer after the holder left"
stop_daemon
echo "daemon_abuse: ok"
