#!/bin/sh
# The co-location model's correction learnt from co-runs (core/coloc.h, docs/monitoring.md),
# on the simulated backend (SMACT 0.3 per process: two jobs measure 0.6 where the
# time-slicing model, fed their solo 0.3 each, says 0.43):
#  - a job runs alone and is profiled; two more of its signature start together with
#    that profile, and after a window the observation is logged and /metrics shows the
#    factor above 1 at their sum of SMACT (0.5 and 0.75 knots), as does carma gpus;
#  - the correction is stored at the stop and read back by the next carmad; a stored table
#    no carmad writes is said and learnt anew, and gone after the next stop;
#  - one per GPU kind: a table stored before kinds were kept is taken by each kind of a
#    mixed server (an A100 and a V100), and stored per kind at the next stop;
#  - learn_coloc = false: nothing learnt or shown; a bad value is refused with its line;
#  - on the fake NVML (GPM SMACT): a pair of which one job has no process on the GPU is
#    not observed; once both have, it is; not while the GPU's process list fails;
#  - nine GPU kinds: the first eight take the table stored before kinds were kept, the
#    ninth (which auto does not correct) shows none and keeps its own stored rows.
. "$(dirname "$0")/helpers/daemon_lib.sh"
command -v curl >/dev/null || { echo "daemon_coloc: skipped (no curl)"; exit 0; }
command -v python3 >/dev/null || { echo "daemon_coloc: skipped (no python3)"; exit 0; }
PORT=$(free_port) || fail "no free TCP port"
printf '[monitor]\nwindow = 3\n[sched]\ngrace = 0.4\n' >> "$T/carmad.ini"
start_daemon --gpus sim:1xa100-40gb --http "127.0.0.1:$PORT"
URL="http://127.0.0.1:$PORT"
# the same argv every time (one signature): runs until $T/go exists, at most 120 s
JOB="i=0; while [ ! -e $T/go ] && [ \$i -lt 1200 ]; do sleep 0.1; i=\$((i + 1)); done"
KIND='kind="NVIDIA A100-SXM4-40GB, 40960 MiB, simulated"'
metric() { curl -sf "$URL/metrics" | awk -v k="$1" 'index($0, k) == 1 {print $NF; exit}'; }
observed() { metric "carma_coloc_observations_total{$KIND,sharing=\"${1:-timeslice}\"}"; }
observed_over() { [ "$(observed)" -gt "$1" ] 2>/dev/null; }

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
wait_until 30 grep -q "GPU 0: 2 jobs whose solo SMACT sum to 0.60 ran at SMACT 0.60 over 3 samples, where the model says 0.43: its rates there are now taken x1.[0-9]* (timeslice, NVIDIA A100-SXM4-40GB, 40960 MiB, simulated)" "$T/carmad.log" ||
    fail "no co-run observed: $(grep -i smact "$T/carmad.log" | tail -3)"
wait_until 10 observed_over 1 ||
    fail "observations: $(curl -sf "$URL/metrics" | grep coloc)"
f=$(metric "carma_coloc_factor{$KIND,sharing=\"timeslice\",smact_sum=\"0.50\"}")
awk -v f="$f" 'BEGIN {exit !(f > 1.05 && f <= 1.4)}' || fail "factor at 0.5: '$f'"
[ -n "$(metric "carma_coloc_factor{$KIND,sharing=\"timeslice\",smact_sum=\"0.75\"}")" ] || fail "knot 0.75"
curl -sf "$URL/metrics" > "$T/m" && python3 "$HELP/prom_check.py" < "$T/m" > /dev/null ||
    fail "/metrics does not parse back: $(python3 "$HELP/prom_check.py" < "$T/m" 2>&1 | tail -1)"
[ "$(observed mps)" = 0 ] || fail "mps observed"
[ -z "$(metric "carma_coloc_factor{$KIND,sharing=\"mps\"")" ] || fail "an mps factor"
"$CARMA" gpus | grep -q "^co-location model, learnt from co-runs (timeslice, NVIDIA A100-SXM4-40GB, 40960 MiB, simulated): x1\.[0-9][0-9] at SMACT sum 0\.50, x1\.[0-9][0-9] at SMACT sum 0\.75$" ||
    fail "carma gpus: $("$CARMA" gpus)"
"$CARMA" gpus --json | python3 -c 'import json,sys; c=json.load(sys.stdin)["coloc"]; assert len(c) == 1 and c[0]["kind"] == "NVIDIA A100-SXM4-40GB, 40960 MiB, simulated"; c = c[0]; assert c["mps"] == [] and [k["smact_sum"] for k in c["timeslice"]] == [0.5, 0.75] and all(1 < k["factor"] <= 1.4 and k["weight"] > 0 for k in c["timeslice"]), c' ||
    fail "carma gpus --json: $("$CARMA" gpus --json | grep -A12 coloc)"
touch "$T/go"
"$CARMA" wait --timeout 30 "$b" "$c" >/dev/null || fail "the pair did not end"
before=$(curl -sf "$URL/metrics" | grep '^carma_coloc_factor{')

step "the correction is stored at the stop and read back"
stop_daemon || fail "carmad's stop"
start_daemon --gpus sim:1xa100-40gb --http "127.0.0.1:$PORT"
after=$(curl -sf "$URL/metrics" | grep '^carma_coloc_factor{')
[ -n "$after" ] && [ "$before" = "$after" ] || fail "read back: '$before' then '$after'"
[ "$(observed)" = 0 ] || fail "count not anew"
stop_daemon || fail "carmad's stop"

step "a table stored before kinds were kept is each kind's, then stored per kind"
sql() { python3 -c 'import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); print("\n".join("|".join(map(str, r)) for r in db.execute(sys.argv[2]))); db.commit()' "$T/state/carma.db" "$1"; }
sql "UPDATE coloc SET kind=''" > /dev/null || fail "the table made kind ''"
start_daemon --gpus sim:1xa100-40gb,1xv100-32gb --http "127.0.0.1:$PORT"
v100=$(curl -sf "$URL/metrics" | grep '^carma_coloc_factor{kind="Tesla V100-SXM2-32GB, 32768 MiB, simulated"' | sed 's/kind="[^"]*",//')
a100=$(curl -sf "$URL/metrics" | grep "^carma_coloc_factor{$KIND" | sed 's/kind="[^"]*",//')
[ -n "$a100" ] && [ "$a100" = "$v100" ] && [ "$(echo "$before" | sed 's/kind="[^"]*",//')" = "$a100" ] ||
    fail "taken by each kind: '$before' then A100 '$a100', V100 '$v100'"
stop_daemon || fail "carmad's stop"
[ "$(sql "SELECT count(*) FROM coloc WHERE kind=''")" = 0 ] &&
    [ "$(sql "SELECT count(DISTINCT kind) FROM coloc")" = 2 ] ||
    fail "not stored per kind: $(sql 'SELECT * FROM coloc')"

step "a stored table no carmad writes is said, learnt anew, and gone after the next stop"
sql "INSERT INTO coloc VALUES('NVIDIA A100-SXM4-40GB, 40960 MiB, simulated', 'mig', 3, 1.0, 0.0)" > /dev/null ||
    fail "a row added by hand"
: > "$T/carmad.log"
start_daemon --gpus sim:1xa100-40gb --http "127.0.0.1:$PORT"
grep -q "the co-location correction of NVIDIA A100-SXM4-40GB, 40960 MiB, simulated: a row for 'mig', knot 3, that no carmad writes; it is learnt anew" "$T/carmad.log" ||
    fail "the refusal is not said"
[ -z "$(metric "carma_coloc_factor{$KIND")" ] || fail "a factor kept from a refused table"
stop_daemon || fail "carmad's stop"
: > "$T/carmad.log"
start_daemon --gpus sim:1xa100-40gb --http "127.0.0.1:$PORT"
grep -q "co-location correction" "$T/carmad.log" && fail "the refused table outlived a stop"
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
step "a job whose process is not on the GPU teaches nothing (fake NVML, GPM SMACT)"
fake_nvml || { echo "daemon_coloc: ok (the fake NVML step skipped: no fake libnvidia-ml.so.1)"; exit 0; }
rm -rf "$T/state" "$T/go"
cp "$T/on.ini" "$T/carmad.ini"
GPU='gpu uuid=GPU-fa4e0000-0000-4000-8000-000000000000 name="NVIDIA A100-SXM4-40GB" mem_total=40960MiB mem_used=0 util=0 mem_util=0 power_mw=55000 power_limit_mw=400000 energy_mj=1000000 gpm=1'
printf 'driver 550.54.15\n%s sm=30\n' "$GPU" > "$T/nvml.state"
KIND='kind="NVIDIA A100-SXM4-40GB, 40960 MiB"' # a GPU of NVML's: no ", simulated"
export CARMA_FAKE_NVML_STATE="$T/nvml.state"
start_daemon --gpus nvml --nvml-lib "$LIB" --http "127.0.0.1:$PORT"
L=$(($(wc -l < "$T/carmad.log") + 1)) # this carmad's log from line L
a=$(submit --name alone --mem 4G -- sh -c "$JOB")
wait_until 30 sh -c "\"$CARMA\" show --json $a | grep -q '\"solo_smact\": 0.3'" ||
    fail "solo SMACT not learned: $("$CARMA" show --json "$a" | grep solo)"
touch "$T/go"
"$CARMA" wait --timeout 30 "$a" >/dev/null || fail "the lone job did not end"
rm -f "$T/go"
b=$(submit --name pair1 --mem 4G -- sh -c "$JOB")
c=$(submit --name pair2 --mem 4G -- sh -c "$JOB")
wait_until 20 is_state "$b" running && wait_until 20 is_state "$c" running ||
    fail "the pair does not run together: $("$CARMA" show "$c" | head -5)"
sb=$(shepherd_of "$b") && sc=$(shepherd_of "$c") || fail "the pair's shepherds"
wait_until 10 sh -c "pgrep -s $sb -x sh && pgrep -s $sc -x sh" || fail "the pair's processes"
# job b on the GPU, job c not yet (its data still loading, say): the GPU's SMACT is b's
echo "proc 0 pid=$(pgrep -s "$sb" -x sh | head -n 1) mem=1GiB" >> "$T/nvml.state"
sleep 3 # 15 ticks, 5 windows
tail -n "+$L" "$T/carmad.log" | grep "jobs whose solo SMACT sum" > "$T/seen"
[ -s "$T/seen" ] && fail "an observation with job $c off the GPU: $(cat "$T/seen")"
# both on it: their co-run is observed
printf 'driver 550.54.15\n%s sm=60\n' "$GPU" > "$T/nvml.state.new"
for s in $sb $sc; do
    echo "proc 0 pid=$(pgrep -s "$s" -x sh | head -n 1) mem=1GiB" >> "$T/nvml.state.new"
done
mv "$T/nvml.state.new" "$T/nvml.state"
wait_until 20 sh -c "tail -n +$L '$T/carmad.log' | grep -q 'GPU 0: 2 jobs whose solo SMACT sum to 0.60 ran at SMACT 0.60'" ||
    fail "no co-run observed once both are on the GPU: $(grep -i smact "$T/carmad.log" | tail -3)"
# the process list fails: its foreign processes are as last listed, nothing is learnt
cp "$T/nvml.state" "$T/nvml.state.ok"
printf 'fail 0 nvmlDeviceGetComputeRunningProcesses_v3 UNKNOWN\n' >> "$T/nvml.state"
wait_until 10 grep -q "GPU 0 (.*): its process list failed" "$T/carmad.log" ||
    fail "the failed list is not said: $(tail -3 "$T/carmad.log")"
n1=$(observed)
sleep 3 # 15 ticks, 5 windows
[ "$(observed)" = "$n1" ] || fail "observed while the process list failed: $n1, then $(observed)"
cp "$T/nvml.state.ok" "$T/nvml.state"
wait_until 10 observed_over "$n1" ||
    fail "not observed again once the list answers: $(observed)"
touch "$T/go"
"$CARMA" wait --timeout 30 "$b" "$c" >/dev/null || fail "the pair did not end"
stop_daemon || fail "carmad's stop"

step "nine GPU kinds: the ninth is neither corrected nor shown, and its rows stay"
# kinds by their first GPU: K0 .. K8; K1's name holds a backslash (a label escaped)
rm -f "$T/nvml.state.new"
for i in 0 1 2 3 4 5 6 7 8; do
    n="NVIDIA K$i"; [ "$i" = 1 ] && n='NVIDIA K\1'
    printf 'gpu uuid=GPU-fa4e000%s-0000-4000-8000-000000000000 name="%s" mem_total=40960MiB gpm=1 sm=0\n' \
        "$i" "$n" >> "$T/nvml.state.new"
done
{ echo 'driver 550.54.15'; cat "$T/nvml.state.new"; } > "$T/nvml.state"
{ sql "DELETE FROM coloc" && sql "INSERT INTO coloc VALUES('', 'timeslice', 2, 5.0, 1.0)" &&
    sql "INSERT INTO coloc VALUES('NVIDIA K8, 40960 MiB', 'mps', 3, 5.0, 1.0)"; } > /dev/null ||
    fail "the rows added by hand"
start_daemon --gpus nvml --nvml-lib "$LIB" --http "127.0.0.1:$PORT"
curl -sf "$URL/metrics" > "$T/m" && python3 "$HELP/prom_check.py" < "$T/m" > /dev/null ||
    fail "/metrics does not parse back: $(python3 "$HELP/prom_check.py" < "$T/m" 2>&1 | tail -1)"
[ "$(grep -c '^carma_coloc_factor{kind=' "$T/m")" = 8 ] &&
    grep -q '^carma_coloc_factor{kind="NVIDIA K\\\\1, 40960 MiB",sharing="timeslice",smact_sum="0.50"}' "$T/m" ||
    fail "the kinds corrected: $(grep '^carma_coloc_factor' "$T/m")"
grep 'coloc' "$T/m" | grep -q 'K8' && fail "the ninth kind shown: $(grep K8 "$T/m")"
"$CARMA" gpus --json | python3 -c 'import json,sys; c=json.load(sys.stdin)["coloc"]; assert [k["kind"] for k in c] == ["NVIDIA K%s, 40960 MiB" % ("\\1" if i == 1 else i) for i in range(8)] and all(len(k["timeslice"]) == 1 and k["mps"] == [] for k in c), c' ||
    fail "carma gpus --json: $("$CARMA" gpus --json | grep -A12 coloc)"
stop_daemon || fail "carmad's stop"
[ "$(sql "SELECT count(*) FROM coloc WHERE kind=''")" = 0 ] &&
    [ "$(sql "SELECT count(DISTINCT kind) FROM coloc")" = 9 ] &&
    [ "$(sql "SELECT sharing, knot, weight, logq FROM coloc WHERE kind='NVIDIA K8, 40960 MiB'")" = "mps|3|5.0|1.0" ] ||
    fail "stored: $(sql 'SELECT * FROM coloc')"
echo "daemon_coloc: ok"
