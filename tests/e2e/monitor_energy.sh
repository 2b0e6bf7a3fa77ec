#!/bin/sh
# Energy as carmad shows it, on the fake libnvidia-ml.so.1 (docs/monitoring.md,
# Accounting): a GPU that gives neither an energy counter nor its power has no energy
# (no series in /metrics, null in /v1/gpus and carma gpus --json), not 0 J; carma ls's
# RUNTIME is the job's run time over its attempts (run_s), not the time since its last
# attempt began: a retry waiting in the queue does not run; carma show's running attempt
# has its usage as of now, as the job's, not as of the last accounting flush;
# carma_job_gpu_seconds_total never steps back (a counter), though an attempt's run ends
# at its job's exit, which the ticks until its shepherd ended counted past.
. "$(dirname "$0")/helpers/daemon_lib.sh"
fake_nvml state || { echo "monitor_energy: skipped (no fake libnvidia-ml.so.1)"; exit 0; }
command -v curl >/dev/null || { echo "monitor_energy: skipped (no curl)"; exit 0; }
command -v python3 >/dev/null || { echo "monitor_energy: skipped (no python3)"; exit 0; }
cp "$EX" "$T/nvml.state"
export CARMA_FAKE_NVML_STATE="$T/nvml.state"
PORT=$(free_port) || fail "no free TCP port"
URL="http://127.0.0.1:$PORT"
up() { start_daemon --gpus nvml --nvml-lib "$LIB" --http "127.0.0.1:$PORT"; }
# gpu_energy GPU: its carma_gpu_energy_joules_total, empty without a series
gpu_energy() { curl -sf "$URL/metrics" | awk -v g="gpu=\"$1\"" 'index($0, "carma_gpu_energy_joules_total{") == 1 && index($0, g) {print $NF}'; }
has_energy() { [ -n "$(gpu_energy "$1")" ]; }
ticks_past() { [ "$(curl -sf "$URL/metrics" | awk '$1 == "carma_monitor_ticks_total" {print $2}')" -ge "$1" ]; }

step "a GPU with neither energy counter nor power has no energy, not 0 J"
printf 'fail 0 nvmlDeviceGetTotalEnergyConsumption NOT_SUPPORTED\nfail 0 nvmlDeviceGetPowerUsage NOT_SUPPORTED\n' >>"$T/nvml.state"
up
wait_until 10 has_energy 1 || fail "GPU 1's energy: $(curl -sf "$URL/metrics" | grep energy)"
wait_until 10 ticks_past 3 || fail "no ticks"
[ -z "$(gpu_energy 0)" ] || fail "GPU 0 measures no energy, yet /metrics says $(gpu_energy 0) J"
for src in "curl -sf $URL/v1/gpus" "$CARMA gpus --json"; do
    $src | python3 -c 'import json,sys; g=json.load(sys.stdin)["gpus"]; \
sys.exit(0 if g[0]["energy_j"] is None and g[1]["energy_j"] is not None else 1)' ||
        fail "$src: energy_j $($src | grep energy_j)"
done

step "carma ls: RUNTIME is the run time of the job's attempts, not the time since the last began"
# runtime JOB: its RUNTIME cell in carma ls --all; run_cell JOB: run_s of ls --json, formatted
runtime() { "$CARMA" ls --all | awk -v id="$1" '$1 == id {print $9}'; }
run_cell() {
    "$CARMA" ls --all --json | python3 -c 'import json,sys
j=[x for x in json.load(sys.stdin) if x["id"] == int(sys.argv[1])][0]; s=int(j["run_s"])
print("%dh%02dm" % (s // 3600, s // 60 % 60) if s >= 3600 else "%dm%02ds" % (s // 60, s % 60) if s >= 60 else "%ds" % s)' "$1"
}
# 2 s on both GPUs, an OOM; the retry waits while GPU 1 is drained, then runs 1 s
a=$(submit --gpus 2 -- sh -c "if [ ! -e $T/m ]; then : > $T/m; sleep 2; echo 'torch.OutOfMemoryError: CUDA out of memory.' >&2; exit 1; fi; sleep 1")
wait_until 10 is_state "$a" running || fail "job $a: $(state_of "$a")"
"$CARMA" drain 1 >/dev/null || fail "drain"
wait_until 20 sh -c "[ \"\$(\"$CARMA\" show $a | awk '\$1 == \"attempts\" {print \$2}')\" = 1 ] && \"$CARMA\" show $a | grep -q 'state     queued'" ||
    fail "job $a not re-queued: $("$CARMA" show "$a")"
sleep 2.5
[ "$(runtime "$a")" = "$(run_cell "$a")" ] ||
    fail "a queued retry's RUNTIME $(runtime "$a"), its run time $(run_cell "$a")"
"$CARMA" undrain 1 >/dev/null || fail "undrain"
"$CARMA" wait --timeout 20 "$a" >/dev/null || fail "job $a: $(state_of "$a")"
[ "$(attempts_of "$a")" = 2 ] || fail "job $a: $(attempts_of "$a") attempts"
[ "$(runtime "$a")" = "$(run_cell "$a")" ] ||
    fail "a finished job's RUNTIME $(runtime "$a"), its run time $(run_cell "$a")"
stop_daemon TERM || fail "stop"

step "carma show: a running attempt's usage is as of now, not as of the last flush"
# record_interval = 0: the running attempts' usage is stored once a minute at most
printf '[monitor]\nrecord_interval = 0\n' >>"$T/carmad.ini"
up
b=$(submit -- sleep 30)
wait_until 10 is_state "$b" running || fail "job $b: $(state_of "$b")"
sleep 2.5
"$CARMA" show --json "$b" | python3 -c 'import json,sys
j=json.load(sys.stdin); a=j["attempt_list"][-1]
ok=a["gpu_seconds"] is not None and j["gpu_seconds"] > 2 and abs(a["gpu_seconds"] - j["gpu_seconds"]) < 0.5 \
    and a["energy_j"] is not None and abs(a["energy_j"] - j["energy_j"]) <= 1e-6 * max(1, j["energy_j"])
sys.exit(0 if ok else 1)' ||
    fail "job $b's only attempt and the job disagree: $("$CARMA" show --json "$b" | grep -E 'gpu_seconds|energy_j')"
"$CARMA" cancel "$b" >/dev/null || fail "cancel"
"$CARMA" wait --timeout 20 "$b" >/dev/null
stop_daemon TERM || fail "stop"

step "carma_job_gpu_seconds_total never steps back for a retry"
# The hook fails the shepherd's first two tries at its status (3 s): the job, out of
# memory after 1 s, is counted running until then; its retry starts from its 1 s.
rm -rf "$T/state"
CARMA_TEST_STATUS_FAILS=2 start_daemon --gpus sim:1xa100-40gb --http "127.0.0.1:$PORT"
r=$(submit -- sh -c "if [ ! -e $T/r1 ]; then : > $T/r1; sleep 1; echo 'torch.OutOfMemoryError: CUDA out of memory.' >&2; exit 1; fi; sleep 2")
: > "$T/series"
while ! is_state "$r" succeeded && [ "$(wc -l <"$T/series")" -lt 400 ]; do
    curl -sf "$URL/metrics" | awk -v j="job=\"$r\"" \
        'index($0, "carma_job_gpu_seconds_total{") == 1 && index($0, j) {print $NF}' >>"$T/series"
    sleep 0.05
done
[ "$(attempts_of "$r")" = 2 ] && is_state "$r" succeeded || fail "job $r: $("$CARMA" show "$r")"
python3 - "$T/series" <<'PY' || fail "carma_job_gpu_seconds_total of a retried job: $(tr '\n' ' ' <"$T/series")"
import sys
v = [float(x) for x in open(sys.argv[1]).read().split()]
assert len(v) > 20 and v[-1] > 3.5, v
assert all(b >= a for a, b in zip(v, v[1:])), [(a, b) for a, b in zip(v, v[1:]) if b < a]
PY
stop_daemon TERM || fail "stop"
echo "monitor_energy: ok"
