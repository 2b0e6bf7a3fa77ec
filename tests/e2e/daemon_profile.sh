#!/bin/sh
# A job's solo profile (docs/monitoring.md, "Solo profiles"), on the fake NVML (GPM SMACT):
# what an attempt stores and folds into its signature's profile is the mean of its windows
# alone, not its last one: a job that ran at SMACT 0.80 for several windows and then idled
# for its last ones (a checkpoint written, an upload, its teardown) stores about 0.5, not
# the 0.00 of its tail, which would have made the next run of its signature look free to
# collocate beside. A profile is its user's, as history's peaks are (sim GPUs, as root
# with nobody): another user's run of the same command in the same folder starts unprofiled.
# Ticks whose samples carry no SMACT make no profile of the samples before them (fake NVML).
. "$(dirname "$0")/helpers/daemon_lib.sh"
command -v python3 >/dev/null || { echo "daemon_profile: skipped (no python3)"; exit 0; }
fake_nvml || { echo "daemon_profile: skipped (no fake libnvidia-ml.so.1)"; exit 0; }
# solo_of JOB: the job's solo SMACT as the scheduler has it, to 2 places (None: none)
solo_of() { "$CARMA" show --json "$1" | python3 -c 'import json,sys; v = json.load(sys.stdin)["solo_smact"]; print(v if v is None else round(v, 2))'; }
sql() { python3 -c 'import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); print("\n".join("|".join(map(str, r)) for r in db.execute(sys.argv[2])))' "$T/state/carma.db" "$1"; }
printf '[monitor]\nwindow = 3\n[sched]\ngrace = 0.4\n' >> "$T/carmad.ini"
GPU='gpu uuid=GPU-fa4e0000-0000-4000-8000-000000000000 name="NVIDIA A100-SXM4-40GB" mem_total=40960MiB mem_used=0 util=0 mem_util=0 power_mw=55000 power_limit_mw=400000 energy_mj=1000000 gpm=1'
export CARMA_FAKE_NVML_STATE="$T/nvml.state"
printf 'driver 550.54.15\n%s sm=80\n' "$GPU" > "$T/nvml.state"
start_daemon --gpus nvml --nvml-lib "$LIB"
# runs until $T/go exists, at most 120 s
JOB="i=0; while [ ! -e $T/go ] && [ \$i -lt 1200 ]; do sleep 0.1; i=\$((i + 1)); done"

step "an attempt stores the mean of its windows alone, not its last"
a=$(submit --name busy-then-idle --mem 4G -- sh -c "$JOB")
sa=$(shepherd_of "$a") || fail "the job's shepherd"
wait_until 10 pgrep -s "$sa" -x sh >/dev/null || fail "the job's process"
# its process on the GPU from now: its ramp (grace) runs from here
printf 'driver 550.54.15\n%s sm=80\nproc 0 pid=%s mem=1GiB\n' "$GPU" "$(pgrep -s "$sa" -x sh | head -n 1)" \
    > "$T/nvml.state.new" && mv "$T/nvml.state.new" "$T/nvml.state"
wait_until 30 sh -c "\"$CARMA\" show --json $a | grep -q '\"solo_smact\": 0.8'" ||
    fail "solo SMACT not learned: $("$CARMA" show --json "$a" | grep solo)"
sleep 3.6 # 18 ticks: 6 more windows at 0.80
# its tail: idle on the GPU (its process still there) for two windows and more
sed 's/ sm=80/ sm=0/' "$T/nvml.state" > "$T/nvml.state.new" && mv "$T/nvml.state.new" "$T/nvml.state"
wait_until 30 sh -c "\"$CARMA\" show --json $a | grep -q '\"solo_smact\": 0.0'" ||
    fail "the idle tail not measured: $("$CARMA" show --json "$a" | grep solo)"
sleep 1.2 # two more windows at 0.00
touch "$T/go"
"$CARMA" wait --timeout 30 "$a" >/dev/null || fail "the job did not end: $(state_of "$a")"
rm -f "$T/go"
u=$(sql "SELECT solo_smact FROM usage WHERE job_id = $a")
p=$(sql "SELECT smact FROM profiles")
echo "   stored: attempt $u, signature $p"
awk -v u="$u" -v p="$p" 'BEGIN {exit !(u > 0.3 && u < 0.8 && u == p)}' ||
    fail "the attempt stored SMACT '$u' (its signature '$p'), the mean of its windows (about 0.5) expected"

step "ticks without a SMACT sample make no profile of the samples before them"
# the idle GPU's window fills with 0.90, then its samples carry no SMACT and no utilisation
# (GPM and the utilisation call fail; the sample itself answers): a job started then has no
# sample of its own, and the 0.90 are another time's
printf 'driver 550.54.15\n%s sm=90\n' "$GPU" > "$T/nvml.state"
sleep 1.2 # 6 ticks: the window is 0.90s
printf 'driver 550.54.15\n%s sm=90\nfail 0 nvmlGpmMetricsGet UNKNOWN\nfail 0 nvmlDeviceGetUtilizationRates UNKNOWN\n' \
    "$GPU" > "$T/nvml.state"
sleep 0.6
b=$(submit --name blind --mem 4G -- sh -c "$JOB" blind)
sb=$(shepherd_of "$b") || fail "the job's shepherd"
wait_until 10 pgrep -s "$sb" -x sh >/dev/null || fail "the job's process"
echo "proc 0 pid=$(pgrep -s "$sb" -x sh | head -n 1) mem=1GiB" >> "$T/nvml.state"
sleep 2.4 # past its grace, 12 ticks: 4 windows of ticks, none with a sample
[ "$(solo_of "$b")" = None ] || fail "profiled from the samples before it: $(solo_of "$b")"
# samples again: it is profiled from its own
sed '/^fail /d' "$T/nvml.state" | sed 's/ sm=90/ sm=40/' > "$T/nvml.state.new" &&
    mv "$T/nvml.state.new" "$T/nvml.state"
wait_until 20 sh -c "[ \"\$(\"$CARMA\" show --json $b | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"solo_smact\"])')\" != None ]" ||
    fail "not profiled once samples came"
[ "$(solo_of "$b")" = 0.4 ] || fail "profiled at $(solo_of "$b"), its own 0.40 expected"
touch "$T/go"
"$CARMA" wait --timeout 30 "$b" >/dev/null || fail "the job did not end: $(state_of "$b")"
rm -f "$T/go"
stop_daemon || fail "carmad's stop"

step "a profile is its user's: another user's run of the same command starts unprofiled"
if [ "$ROOT" != 1 ] || ! command -v setpriv >/dev/null || ! id nobody >/dev/null 2>&1; then
    echo "daemon_profile: ok (the per-user step skipped: not root, or no setpriv or nobody)"
    exit 0
fi
nobody_client
rm -rf "$T/state" "$T/go"
unset CARMA_FAKE_NVML_STATE
start_daemon --gpus sim:1xa100-40gb
# root's run from /tmp, as nobody's will be (same argv and cwd: one memory signature)
r=$(cd /tmp && submit --mem 4G -- sh -c "$JOB")
wait_until 30 sh -c "\"$CARMA\" show --json $r | grep -q '\"solo_smact\": 0.3'" ||
    fail "root's job not profiled: $("$CARMA" show --json "$r" | grep solo)"
touch "$T/go"
"$CARMA" wait --timeout 30 "$r" >/dev/null || fail "root's job did not end: $(state_of "$r")"
rm -f "$T/go"
stop_daemon || fail "carmad's stop"
# measured no more (grace 60 s): what a job starts with is its signature's stored profile
sed -i 's/^grace = .*/grace = 60/' "$T/carmad.ini"
start_daemon --gpus sim:1xa100-40gb
chmod 666 "$CARMA_SOCKET"
n=$(as_nobody "$NB/carma" submit --mem 4G -- sh -c "$JOB") || fail "nobody's job refused"
[ "$(solo_of "$n")" = None ] || fail "nobody's job took root's profile: $(solo_of "$n")"
r2=$(cd /tmp && submit --mem 4G -- sh -c "$JOB")
[ "$(solo_of "$r2")" = 0.3 ] || fail "root's own profile not taken: $(solo_of "$r2")"
touch "$T/go"
"$CARMA" wait --timeout 30 "$n" "$r2" >/dev/null || fail "the jobs did not end"
stop_daemon || fail "carmad's stop"
echo "daemon_profile: ok"
