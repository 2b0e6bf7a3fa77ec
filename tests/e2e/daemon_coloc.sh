#!/bin/sh
# The co-location model's correction learnt from co-runs (core/coloc.h, docs/monitoring.md),
# on the simulated backend (SMACT 0.3 per process: two jobs measure 0.6 where the
# time-slicing model, fed their solo 0.3 each, says 0.43):
#  - a job runs alone and is profiled; two more of its signature start together with
#    that profile, and after a window the observation is logged and /metrics shows the
#    factor above 1 at their sum of SMACT (0.5 and 0.75 knots), as does carma gpus;
#  - the correction is stored at the stop and read back by the next carmad;
#  - learn_coloc = false: nothing learnt or shown; a bad value is refused with its line.
. "$(dirname "$0")/helpers/daemon_lib.sh"
command -v curl >/dev/null || { echo "daemon_coloc: skipped (no curl)"; exit 0; }
command -v python3 >/dev/null || { echo "daemon_coloc: skipped (no python3)"; exit 0; }
PORT=$((20000 + ($$ + 7) % 20000))
printf '[monitor]\nwindow = 3\n[sched]\ngrace = 0.4\n' >> "$T/carmad.ini"
start_daemon --gpus sim:1xa100-40gb --http "127.0.0.1:$PORT"
URL="http://127.0.0.1:$PORT"
# the same argv every time (one signature): runs until $T/go exists, at most 120 s
JOB="i=0; while [ ! -e $T/go ] && [ \$i -lt 1200 ]; do sleep 0.1; i=\$((i + 1)); done"
metric() { curl -sf "$URL/metrics" | awk -v k="$1" 'index($1, k) == 1 {print $2; exit}'; }

step "a job alone is profiled, and its signature keeps the profile"
a=$(submit --name alone --mem 4G -- sh -c "$JOB")
wait_until 30 sh -c "\"$CARMA\" show --json $a | grep -q '\"solo_smact\": 0.3'" ||
    fail "solo SMACT not learned: $("$CARMA" show --json "$a" | grep solo)"
[ -z "$(metric 'carma_coloc_factor{')" ] || fail "a factor before any co-run"
touch "$T/go"
"$CARMA" wait --timeout 30 "$a" >/dev/null || fail "the lone job did not end"
rm -f "$T/go"

step "two of its signature run together: one observation per window, a factor above 1"
b=$(submit --name pair1 --mem 4G -- sh -c "$JOB")
c=$(submit --name pair2 --mem 4G -- sh -c "$JOB")
wait_until 20 is_state "$b" running && wait_until 20 is_state "$c" running ||
    fail "the pair does not run together: $("$CARMA" show "$c" | head -5)"
wait_until 30 grep -q "GPU 0: 2 jobs whose solo SMACT sum to 0.60 ran at SMACT 0.60 over 3 samples, where the model says 0.43: its rates there are now taken x1.[0-9]* (timeslice)" "$T/carmad.log" ||
    fail "no co-run observed: $(grep -i smact "$T/carmad.log" | tail -3)"
wait_until 10 sh -c "[ \"\$(curl -sf $URL/metrics | awk '/^carma_coloc_observations_total\{sharing=\"timeslice\"\}/ {print \$2}')\" -ge 2 ]" ||
    fail "observations: $(curl -sf "$URL/metrics" | grep coloc)"
f=$(metric 'carma_coloc_factor{sharing="timeslice",smact_sum="0.50"}')
awk -v f="$f" 'BEGIN {exit !(f > 1.05 && f <= 1.4)}' || fail "factor at 0.5: '$f'"
[ -n "$(metric 'carma_coloc_factor{sharing="timeslice",smact_sum="0.75"}')" ] || fail "knot 0.75"
curl -sf "$URL/metrics" > "$T/m" && python3 "$HELP/prom_check.py" < "$T/m" > /dev/null ||
    fail "/metrics does not parse back: $(python3 "$HELP/prom_check.py" < "$T/m" 2>&1 | tail -1)"
[ "$(metric 'carma_coloc_observations_total{sharing="mps"}')" = 0 ] || fail "mps observed"
[ -z "$(metric 'carma_coloc_factor{sharing="mps"')" ] || fail "an mps factor"
"$CARMA" gpus | grep -q "^co-location model, learnt from co-runs (timeslice): x1\.[0-9][0-9] at SMACT sum 0\.50, x1\.[0-9][0-9] at SMACT sum 0\.75$" ||
    fail "carma gpus: $("$CARMA" gpus)"
"$CARMA" gpus --json | python3 -c 'import json,sys; c=json.load(sys.stdin)["coloc"]; assert c["mps"] == [] and [k["smact_sum"] for k in c["timeslice"]] == [0.5, 0.75] and all(1 < k["factor"] <= 1.4 and k["weight"] > 0 for k in c["timeslice"]), c' ||
    fail "carma gpus --json: $("$CARMA" gpus --json | grep -A12 coloc)"
touch "$T/go"
"$CARMA" wait --timeout 30 "$b" "$c" >/dev/null || fail "the pair did not end"
before=$(curl -sf "$URL/metrics" | grep '^carma_coloc_factor{')

step "the correction is stored at the stop and read back"
stop_daemon || fail "carmad's stop"
start_daemon --gpus sim:1xa100-40gb --http "127.0.0.1:$PORT"
after=$(curl -sf "$URL/metrics" | grep '^carma_coloc_factor{')
[ -n "$after" ] && [ "$before" = "$after" ] || fail "read back: '$before' then '$after'"
[ "$(metric 'carma_coloc_observations_total{sharing="timeslice"}')" = 0 ] || fail "count not anew"
stop_daemon || fail "carmad's stop"

step "learn_coloc = false: nothing learnt or shown; a bad value refused"
cp "$T/carmad.ini" "$T/on.ini"
printf 'learn_coloc = false\n' >> "$T/carmad.ini"
start_daemon --gpus sim:1xa100-40gb --http "127.0.0.1:$PORT"
curl -sf "$URL/metrics" | grep -q carma_coloc && fail "shown while off"
"$CARMA" gpus --json | grep -q coloc && fail "carma gpus --json shows it while off"
stop_daemon || fail "carmad's stop"
cp "$T/on.ini" "$T/carmad.ini"
printf 'learn_coloc = maybe\n' >> "$T/carmad.ini"
line=$(wc -l < "$T/carmad.ini")
rc=0; "$CARMAD" --foreground --state "$T/state" --socket "$CARMA_SOCKET" --config "$T/carmad.ini" \
    --gpus sim:1xa100-40gb 2>"$T/err" 0<&- || rc=$?
[ "$rc" = 2 ] && grep -q "carmad.ini:$line: learn_coloc: true or false expected" "$T/err" ||
    fail "a bad learn_coloc: exit $rc, $(cat "$T/err")"
echo "daemon_coloc: ok"
