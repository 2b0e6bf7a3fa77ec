#!/bin/sh
# Crash safety: SIGKILL carmad while 40 jobs are queued or running, restart it,
# and find every job accounted for, the running ones re-adopted, none run twice.
. "$(dirname "$0")/helpers/daemon_lib.sh"

start_daemon --gpus sim:4xa100-40gb
step "submit 40 jobs (one per GPU at a time: 4 run, the others wait)"
: > "$T/runs"
# Each job waits for $T/go before its sleep, so the first four hold their GPUs and the
# rest stay queued however slowly the submissions go (a loaded host, a sanitizer build).
cat > "$T/job.sh" <<'JOB'
#!/bin/sh
echo "$CARMA_JOB_ID" >> "$1"
n=0
while [ ! -e "$3" ] && [ $n -lt 600 ]; do sleep 0.05; n=$((n + 1)); done
sleep "$2"
JOB
ids=
i=0
while [ $i -lt 40 ]; do
    d=$(( (i % 4) * 3 + 3 ))   # 0.3 .. 1.2 s
    ids="$ids $(submit -- sh "$T/job.sh" "$T/runs" "$((d / 10)).$((d % 10))" "$T/go")"
    i=$((i + 1))
done
wait_until 20 sh -c "[ \$(wc -l < '$T/runs') -ge 4 ]" || fail "jobs did not start"
running=$("$CARMA" ls | grep -c ' running ')
queued=$("$CARMA" ls | grep -c ' queued ')
echo "before the crash: $running running, $queued queued"
[ "$queued" -gt 0 ] || fail "no job queued at the crash"

step "kill -9 carmad, let jobs end while it is down, restart"
stop_daemon KILL
touch "$T/go"
sleep 0.2
start_daemon --gpus sim:4xa100-40gb
line=$(grep "reconciled:" "$T/carmad.log" | tail -n 1)
echo "$line"
requeued=$(echo "$line" | sed -n 's/.*reconciled: \([0-9]*\) queued, .*/\1/p')
adopted=$(echo "$line" | sed -n 's/.* \([0-9]*\) running re-adopted.*/\1/p')
ended=$(echo "$line" | sed -n 's/.* \([0-9]*\) ended while down.*/\1/p')
# each job running at the crash (its script had begun: its shepherd was there) is
# re-adopted or ended while down (which, depends on the host's speed), each queued one
# found queued
[ "$requeued" = "$queued" ] && [ $((adopted + ended)) = "$running" ] ||
    fail "$running running and $queued queued at the crash, reconciled as: $line"
step "every job ends, once"
for id in $ids; do
    "$CARMA" wait --timeout 60 "$id" >/dev/null || fail "job $id: $(state_of "$id")"
done
n=$("$CARMA" ls --all | grep -c ' succeeded ')
[ "$n" = 40 ] || fail "$n of 40 succeeded"
runs=$(wc -l < "$T/runs")
uniq=$(sort -u "$T/runs" | wc -l)
[ "$runs" = 40 ] && [ "$uniq" = 40 ] || fail "$runs runs of $uniq distinct jobs: a job ran twice or never"
for id in $ids; do
    [ "$(attempts_of "$id")" = 1 ] || fail "job $id has $(attempts_of "$id") attempts"
done
echo "daemon_crash: all passed"
