#!/bin/sh
# Energy as carmad shows it, on the fake libnvidia-ml.so.1 (docs/monitoring.md,
# Accounting): a GPU that gives neither an energy counter nor its power has no energy
# (no series in /metrics, null in /v1/gpus and carma gpus --json), not 0 J.
LIB="${CARMA_FAKE:-}/nvidia-ml/libnvidia-ml.so.1"
EX=$(ls "$(dirname "$0")"/../fake/nvidia-ml/*.state 2>/dev/null | head -n 1)
if [ -z "${CARMA_FAKE:-}" ] || [ ! -f "$LIB" ] || [ -z "$EX" ]; then
    echo "monitor_energy: skipped (no fake libnvidia-ml.so.1)"
    exit 0
fi
. "$(dirname "$0")/helpers/daemon_lib.sh"
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
stop_daemon TERM || fail "stop"
echo "monitor_energy: ok"
