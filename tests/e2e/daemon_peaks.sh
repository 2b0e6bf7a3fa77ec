#!/bin/sh
# What carmad keeps of a job across its own restart and after the job's end, on the
# fake libnvidia-ml.so.1 (energy from power x time):
#  - a running attempt's peak and energy survive a clean restart (written at the stop,
#    even with record_interval = 0): carma_job_energy_joules_total never goes back;
#  - an attempt that lived through carmad's downtime, during which a process's memory
#    was unknown, or whose memory was seen at its peak at one tick only (it may have
#    ended on its way up), is no history for the next run of the same command;
#  - /metrics has no series for a queued job; /v1/jobs lists a bounded number of the
#    queued ones and counts the rest;
#  - a final job's environment is not kept in the store; final jobs past
#    job_retention_days are removed, the newest kept.
. "$(dirname "$0")/helpers/daemon_lib.sh"
fake_nvml state || { echo "daemon_peaks: skipped (no fake libnvidia-ml.so.1)"; exit 0; }
command -v curl >/dev/null || { echo "daemon_peaks: skipped (no curl)"; exit 0; }
command -v python3 >/dev/null || { echo "daemon_peaks: skipped (no python3)"; exit 0; }
cp "$EX" "$T/nvml.state"
echo "fail * nvmlDeviceGetTotalEnergyConsumption NOT_SUPPORTED" >>"$T/nvml.state"
export CARMA_FAKE_NVML_STATE="$T/nvml.state"
printf '[monitor]\nrecord_interval = 0\n' >>"$T/carmad.ini"
PORT=$(free_port) || fail "no free TCP port"
URL="http://127.0.0.1:$PORT"
export CARMA_TEST_HTTP_JOBS_QUEUED=1
up() { start_daemon --gpus nvml --nvml-lib "$LIB" --http "127.0.0.1:$PORT"; }
up
# energy JOB: its carma_job_energy_joules_total
energy() { curl -sf "$URL/metrics" | awk -v j="job=\"$1\"" 'index($0, "carma_job_energy_joules_total{") == 1 && index($0, j) {print $NF}'; }
# procs JOB: the pids of its sleep processes
procs() { pgrep -s "$(shepherd_of "$1")" -x sleep; }
# ticks_after N: the monitor has ticked N more times since this was called
ticks() { curl -sf "$URL/metrics" | awk '$1 == "carma_monitor_ticks_total" {print $2}'; }
ticks_after() {
    _t0=$(ticks)
    wait_until 10 sh -c "[ \"\$(curl -sf '$URL/metrics' | awk '\$1 == \"carma_monitor_ticks_total\" {print \$2}')\" -ge $((_t0 + $1)) ]"
}
# set_mem JOB MEM: the fake NVML lists JOB's sleep alone on GPU 0, holding MEM
set_mem() {
    sed -i '/^proc 0 /d' "$T/nvml.state"
    echo "proc 0 pid=$(procs "$1") mem=$2" >>"$T/nvml.state"
}
# mem_seen JOB TEXT: carma show JOB's memory line comes to read TEXT
mem_seen() {
    wait_until 10 sh -c "\"$CARMA\" show $1 | grep -q '$2'" ||
        fail "job $1's memory, '$2' expected: $("$CARMA" show "$1" | grep memory)"
}
started() { test -s "$T/state/jobs/$1/1/shepherd" && [ -n "$(procs "$1")" ]; }
two_procs() { started "$1" && [ "$(procs "$1" | wc -l)" = 2 ]; }
env_of() {
    python3 -c 'import sqlite3,sys; c=sqlite3.connect("file:"+sys.argv[1]+"?mode=ro", uri=True); print(c.execute("select env from jobs where id=?", (int(sys.argv[2]),)).fetchone()[0])' "$T/state/carma.db" "$1"
}

step "a running attempt's peak and energy survive a clean restart"
# running until the test ends its sleep (however loaded the host), then succeeding
a=$(submit -- sh -c 'sleep 120 & wait; exit 0')
wait_until 10 started "$a" || fail "job $a did not start"
set_mem "$a" 8GiB
mem_seen "$a" 'peak 8192, now 8192)'
set_mem "$a" 1GiB
mem_seen "$a" 'peak 8192, now 1024)'
case "$(env_of "$a")" in *PATH*) ;; *) fail "a running job's environment: $(env_of "$a")" ;; esac
sleep 1
e1=$(energy "$a")
awk -v e="$e1" 'BEGIN {exit !(e > 0)}' || fail "energy before the stop: '$e1'"
stop_daemon TERM
up
e2=$(energy "$a")
awk -v a="$e1" -v b="$e2" 'BEGIN {exit !(b >= a)}' || fail "energy went back: $e1 -> $e2"
"$CARMA" show "$a" | grep -q 'peak 8192, now' || fail "peak lost: $("$CARMA" show "$a" | grep memory)"
kill $(procs "$a")
"$CARMA" wait --timeout 20 "$a" >/dev/null || fail "job $a: $(state_of "$a")"
"$CARMA" show --json "$a" | grep -q '"peak_partial": 1' ||
    fail "not marked as having lived through a downtime: $("$CARMA" show --json "$a" | grep peak)"
"$CARMA" show "$a" | grep -q '#1 .*peak >=8192 MiB (not history: carmad was down)' || fail "attempt's peak: $("$CARMA" show "$a" | grep '#1')"
[ "$(env_of "$a")" = "{}" ] || fail "a final job's environment is kept: $(env_of "$a")"
step "... and is no history"
b=$(submit -- sleep 9)
"$CARMA" show "$b" | grep -q 'bound .*history' && fail "a peak across a downtime is history: $("$CARMA" show "$b" | grep bound)"
"$CARMA" cancel "$b" >/dev/null

step "an attempt that ends while carmad is down keeps the energy measured before"
c=$(submit -- sleep 4)
wait_until 10 started "$c" || fail "job $c did not start"
sleep 1.5
e1=$(energy "$c")
awk -v e="$e1" 'BEGIN {exit !(e > 0)}' || fail "energy before the stop: '$e1'"
stop_daemon TERM
wait_until 10 sh -c "! pgrep -s $(shepherd_of "$c") -x sleep" ||
    fail "job $c did not end while carmad was down"
up
"$CARMA" wait --timeout 20 "$c" >/dev/null || fail "job $c: $(state_of "$c")"
"$CARMA" show --json "$c" | python3 -c 'import json,sys; j=json.load(sys.stdin); \
sys.exit(0 if j["energy_j"] >= float(sys.argv[1]) - 1e-6 else 1)' "$e1" ||
    fail "energy lost at the restart: $e1 J before, $("$CARMA" show --json "$c" | grep '"energy_j"')"

step "an attempt with a process of unknown memory is no history; one all known is"
for mem in unknown 1GiB; do
    # (running until the test ends its sleeps, once carmad has seen both on the GPU)
    c=$(submit -- sh -c "sleep 300 & sleep 300 & wait; : $mem")
    wait_until 10 two_procs "$c" || fail "job $c did not start"
    set -- $(procs "$c")
    # (both lines in one write: a tick that sees the first sees the second, whose memory
    # an unknown one leaves out of the sum)
    printf 'proc 0 pid=%s mem=2GiB\nproc 0 pid=%s mem=%s\n' "$1" "$2" "$mem" >>"$T/nvml.state"
    if [ "$mem" = unknown ]; then seen='peak 2048, now 2048)'; else seen='peak 3072, now 3072)'; fi
    wait_until 10 sh -c "\"$CARMA\" show $c | grep -q '$seen'" ||
        fail "job $c's memory: $("$CARMA" show "$c" | grep memory)"
    ticks_after 2 || fail "the monitor stopped ticking" # (held at its peak)
    kill $(procs "$c")
    "$CARMA" wait --timeout 20 "$c" >/dev/null || fail "job $c: $(state_of "$c")"
    sed -i '/^proc 0 /d' "$T/nvml.state"
    n=$(submit -- sh -c "sleep 300 & sleep 300 & wait; : $mem") # (the same command)
    if [ "$mem" = unknown ]; then
        "$CARMA" show "$n" | grep -q 'bound .*history' &&
            fail "a peak with unknown memory is history: $("$CARMA" show "$n" | grep bound)"
    else
        "$CARMA" show "$n" | grep -q 'bound .*history (1 earlier run, peak 3072 MiB)' ||
            fail "a peak all known is history: $("$CARMA" show "$n" | grep bound)"
    fi
    "$CARMA" cancel "$n" >/dev/null
done

step "a peak seen at one tick only is no history"
# 1 GiB for ticks, then 3 GiB at one tick before its process leaves the lists: the
# job may have ended while its memory still climbed
c=$(submit -- sh -c 'sleep 300 & wait; : brief')
wait_until 10 started "$c" || fail "job $c did not start"
set_mem "$c" 1GiB
mem_seen "$c" 'peak 1024, now 1024)'
ticks_after 2 || fail "the monitor stopped ticking"
set_mem "$c" 3GiB
mem_seen "$c" 'peak 3072, now 3072)'
sed -i '/^proc 0 /d' "$T/nvml.state" # (listed no more: held at no further tick)
mem_seen "$c" 'peak 3072, now 0)'
kill $(procs "$c")
"$CARMA" wait --timeout 20 "$c" >/dev/null || fail "job $c: $(state_of "$c")"
"$CARMA" show --json "$c" | grep -q '"peak_partial": 4' ||
    fail "a peak seen once is not marked brief: $("$CARMA" show --json "$c" | grep peak)"
"$CARMA" show "$c" | grep -q '#1 .*peak >=3072 MiB (not history: seen at one tick)' ||
    fail "carma show does not say the peak is brief: $("$CARMA" show "$c" | grep '#1')"
n=$(submit -- sh -c 'sleep 300 & wait; : brief')
"$CARMA" show "$n" | grep -q 'bound .*history' &&
    fail "a peak seen once is history: $("$CARMA" show "$n" | grep bound)"
"$CARMA" cancel "$n" >/dev/null
"$CARMA" wait --timeout 20 "$n" >/dev/null

step "/metrics: no series for a queued job; /v1/jobs lists CARMA_TEST_HTTP_JOBS_QUEUED of them"
r=$(submit -- sleep 300)
wait_until 10 started "$r" || fail "job $r did not start"
q1=$(submit --gpus 2 -- true)
q2=$(submit --gpus 2 -- true)
q3=$(submit --gpus 2 -- true)
sleep 0.5
curl -sf "$URL/metrics" >"$T/m" || fail "/metrics"
grep -q "job=\"$r\"" "$T/m" || fail "no series for the running job"
grep -q "job=\"$q1\"\|job=\"$q2\"\|job=\"$q3\"" "$T/m" && fail "series for a queued job: $(grep "job=\"$q1\"" "$T/m")"
curl -sf "$URL/v1/jobs" | python3 -c 'import json,sys; d=json.load(sys.stdin); ids=[j["id"] for j in d["jobs"]]; \
assert ids == [int(sys.argv[1]), int(sys.argv[2])] and d["queued_omitted"] == 2, d' "$r" "$q1" ||
    fail "/v1/jobs: $(curl -sf "$URL/v1/jobs" | head -c 400)"
"$CARMA" cancel "$r" "$q1" "$q2" "$q3" >/dev/null
"$CARMA" wait --timeout 20 "$r" "$q1" "$q2" "$q3" >/dev/null

step "job_retention_days: final jobs that ended before are removed, the newest kept"
stop_daemon TERM
printf '[daemon]\njob_retention_days = 0.00001\n' >"$T/ret.ini"
sed -i 's/^\[daemon\]$/[daemon]\njob_retention_days = 0.00001/' "$T/carmad.ini"
sleep 1
up
wait_until 10 sh -c "! \"$CARMA\" show $a" || fail "job $a kept past the retention"
"$CARMA" show "$q3" >/dev/null || fail "the newest job $q3 is removed"
[ "$("$CARMA" ls --all | tail -n +2 | wc -l)" = 1 ] || fail "jobs left: $("$CARMA" ls --all)"
grep -q 'retention: .* final jobs removed' "$T/carmad.log" || fail "retention not logged"
stop_daemon TERM
echo "daemon_peaks: ok"
