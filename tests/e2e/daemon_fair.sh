#!/bin/sh
# [sched] order = fair (docs/daemon.md, Order): the queue serves first the user whose jobs
# have used the least GPU time, decayed with fair_halflife; a user's own jobs keep their
# order. On one simulated GPU under exclusive assignment, root has used the GPU and
# queues two jobs; nobody then queues one, which runs before root's. The users' GPU time
# is in /metrics and survives a restart (read back from the store's attempts, once an
# attempt that ended while carmad was down has its end: the downtime is not charged; each
# second of a run decayed from its own time, not from the run's end). A job is charged up
# to its end, not to the last monitor tick before it; its series is its uid's (two uids
# may have had one name). A bad
# order or half-life is refused with its line. Needs root, setpriv and the user nobody
# for the two users (the refusals run without them).
. "$(dirname "$0")/helpers/daemon_lib.sh"
command -v curl >/dev/null || { echo "daemon_fair: skipped (no curl)"; exit 0; }
PORT=$(free_port) || fail "no free TCP port"
URL="http://127.0.0.1:$PORT"
base() {
    printf '[daemon]\npolicy = exclusive\nallow_root_jobs = true\nkill_grace = 1\nmonitor_interval = 0.2\n[sched]\n' > "$T/carmad.ini"
}
refused() { # what the ini's last line must be refused with
    line=$(wc -l < "$T/carmad.ini")
    rc=0; "$CARMAD" --foreground --state "$T/state" --socket "$CARMA_SOCKET" \
        --config "$T/carmad.ini" --gpus sim:1xa100-40gb 2>"$T/err" 0<&- || rc=$?
    [ "$rc" = 2 ] && grep -q "carmad.ini:$line: $1" "$T/err" || fail "exit $rc, $(cat "$T/err")"
}

step "a bad order or half-life is refused with its line"
base; printf 'order = lifo\n' >> "$T/carmad.ini"; refused "order: fifo or fair expected"
base; printf 'fair_halflife = 10\n' >> "$T/carmad.ini"
refused "fair_halflife: a number of seconds in \[60, 315360000\] expected"

if [ "$ROOT" != 1 ] || ! command -v setpriv >/dev/null || ! id nobody >/dev/null 2>&1; then
    echo "(the rest skipped: it needs root, setpriv and the user nobody)"
    echo "daemon_fair: ok"
    exit 0
fi
nobody_client
base; printf 'order = fair\nfair_halflife = 3600\n' >> "$T/carmad.ini"
start_daemon --gpus sim:1xa100-40gb --http "127.0.0.1:$PORT"
chmod 666 "$CARMA_SOCKET"
used() { # the GPU time of user $1 (of uid 0 for root, 65534 for nobody)
    _uid=0; [ "$1" = root ] || _uid=$(id -u "$1")
    curl -sf "$URL/metrics" |
        awk -v u="carma_user_fair_gpu_seconds{user=\"$1\",uid=\"$_uid\"}" '$1 == u {print $2}'
}

step "root's GPU time is counted"
r1=$(submit --name r1 -- sh "$HELP/run_for.sh" 1)
"$CARMA" wait --timeout 30 "$r1" >/dev/null || fail "r1"
wait_until 10 sh -c "[ -n \"\$(curl -sf $URL/metrics | grep 'user_fair_gpu_seconds{user=\"root\",uid=\"0\"}')\" ]" ||
    fail "no usage for root: $(curl -sf "$URL/metrics" | grep fair)"
u=$(used root)
awk -v u="$u" 'BEGIN {exit !(u > 0.9 && u < 30)}' || fail "root's GPU time $u"

step "nobody's job, queued after two of root's, runs first; root's keep their order"
b=$(submit --name blocker -- sh -c "while [ ! -e $T/go ]; do sleep 0.05; done")
wait_until 20 is_state "$b" running || fail "the blocker does not run"
r2=$(submit --name r2 -- true)
r3=$(submit --name r3 -- true)
n1=$(as_nobody "$NB/carma" submit --name n1 -- true) || fail "nobody's job refused"
wait_until 10 sh -c "\"$CARMA\" show $r2 | grep -q 'job $n1 at the head of the queue goes first'" ||
    fail "r2 waits for: $("$CARMA" show "$r2" | grep waiting)"
"$CARMA" show "$r2" | grep -q "^  position  2 of 3 in the queue (order fair)$" ||
    fail "r2's place: $("$CARMA" show "$r2")"
[ "$("$CARMA" show --json "$n1" | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["queue_position"], j["queue_length"], j["queue_order"])')" = "1 3 fair" ] ||
    fail "n1's place: $("$CARMA" show --json "$n1" | grep queue)"
touch "$T/go"
"$CARMA" wait --timeout 30 "$b" "$r2" "$r3" "$n1" >/dev/null || fail "the jobs did not end"
start_of() { "$CARMA" show --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["start_time"])'; }
sn=$(start_of "$n1"); s2=$(start_of "$r2"); s3=$(start_of "$r3")
awk -v n="$sn" -v a="$s2" -v b="$s3" 'BEGIN {exit !(n < a && a < b)}' ||
    fail "started n1 $sn, r2 $s2, r3 $s3 (nobody's first, then root's in order)"
[ -n "$(used nobody)" ] || fail "no usage for nobody"

step "the users' GPU time is read back from the store at a restart"
before=$(used root)
stop_daemon || fail "carmad's stop"
start_daemon --gpus sim:1xa100-40gb --http "127.0.0.1:$PORT"
after=$(used root)
awk -v a="$before" -v b="$after" 'BEGIN {exit !(b > 0.9 * a && b <= a * 1.01 + 0.5)}' ||
    fail "root's GPU time $before before the restart, $after after"

step "an attempt that ended while carmad was down is charged up to its end, not the restart"
before=$(used root)
d=$(submit --name down -- sleep 1)
shepherd_of "$d" >/dev/null || fail "the job's shepherd did not start"
stop_daemon || fail "carmad's stop"
sleep 5
start_daemon --gpus sim:1xa100-40gb --http "127.0.0.1:$PORT"
wait_until 10 is_state "$d" succeeded || fail "the job ended $(state_of "$d")"
after=$(used root)
awk -v a="$before" -v b="$after" 'BEGIN {exit !(b - a > 0.5 && b - a < 3)}' ||
    fail "root's GPU time $before before, $after after a 1 s job (5 s of carmad's downtime)"
stop_daemon || fail "carmad's stop"

step "a job that runs between two monitor ticks is charged its run"
printf '[daemon]\npolicy = exclusive\nallow_root_jobs = true\nkill_grace = 1\nmonitor_interval = 30\n[sched]\norder = fair\nfair_halflife = 3600\n' > "$T/carmad.ini"
start_daemon --gpus sim:1xa100-40gb --http "127.0.0.1:$PORT"
before=$(used root)
s=$(submit --name short -- sleep 2)
"$CARMA" wait --timeout 30 "$s" >/dev/null || fail "the job did not end"
charged() { awk -v a="$before" -v b="$(used root)" 'BEGIN {exit !(b - a > 1.5 && b - a < 5)}'; }
wait_until 5 charged || fail "root's GPU time $before before a 2 s job, $(used root) after"
stop_daemon || fail "carmad's stop"
base; printf 'order = fair\nfair_halflife = 3600\n' >> "$T/carmad.ini"

step "a run read back counts each of its seconds as decayed from its own time"
# Every attempt made empty but one of root's, which ran from 2 half-lives ago to 1: its
# 3600 GPU-seconds weigh 3600 / ln 2 x (1/2 - 1/4) = 1298.4 now, as carmad counts them
# while they run (counted whole at its end: 1800).
python3 - "$T/state/carma.db" <<'EOF2'
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1])
now = time.time()
db.execute("UPDATE attempts SET end_time = start_time WHERE end_time IS NOT NULL")
rid = db.execute("SELECT a.rowid FROM attempts a JOIN jobs j ON j.id = a.job_id "
                 "WHERE j.user = 'root' ORDER BY a.job_id LIMIT 1").fetchone()[0]
db.execute("UPDATE attempts SET start_time = ?, end_time = ? WHERE rowid = ?",
           (now - 7200, now - 3600, rid))
db.commit()
EOF2
start_daemon --gpus sim:1xa100-40gb --http "127.0.0.1:$PORT"
u=$(used root)
awk -v u="$u" 'BEGIN {exit !(u > 1290 && u < 1305)}' || fail "root's GPU time $u, not 1298.4"
stop_daemon || fail "carmad's stop"

step "two uids that had one name are two series of /metrics"
python3 - "$T/state/carma.db" <<'EOF2'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("UPDATE jobs SET user = 'root' WHERE uid = 65534")  # nobody's, as if once root's name
db.commit()
EOF2
start_daemon --gpus sim:1xa100-40gb --http "127.0.0.1:$PORT"
curl -sf "$URL/metrics" > "$T/m" && python3 "$HELP/prom_check.py" < "$T/m" > /dev/null ||
    fail "/metrics does not parse back: $(python3 "$HELP/prom_check.py" < "$T/m" 2>&1 | tail -1)"
[ "$(grep -c '^carma_user_fair_gpu_seconds{user="root",uid="\(0\|65534\)"}' "$T/m")" = 2 ] ||
    fail "$(grep carma_user_fair "$T/m")"
stop_daemon || fail "carmad's stop"

step "order = fifo (the default): root's first job goes first"
base
start_daemon --gpus sim:1xa100-40gb --http "127.0.0.1:$PORT"
chmod 666 "$CARMA_SOCKET"
rm -f "$T/go"
b=$(submit --name blocker -- sh -c "while [ ! -e $T/go ]; do sleep 0.05; done")
wait_until 20 is_state "$b" running || fail "the blocker does not run"
r4=$(submit --name r4 -- true)
n2=$(as_nobody "$NB/carma" submit --name n2 -- true) || fail "nobody's job refused"
wait_until 10 sh -c "\"$CARMA\" show $n2 | grep -q '^  position  2 of 2 in the queue (order fifo)\$'" ||
    fail "n2's place: $("$CARMA" show "$n2")"
touch "$T/go"
"$CARMA" wait --timeout 30 "$b" "$r4" "$n2" >/dev/null || fail "the jobs did not end"
awk -v a="$(start_of "$r4")" -v n="$(start_of "$n2")" 'BEGIN {exit !(a < n)}' || fail "FIFO order"
curl -sf "$URL/metrics" | grep -q carma_user_fair && fail "fair usage shown under FIFO"
echo "daemon_fair: ok"
