#!/bin/sh
# What a running job keeps when carmad restarts and re-adopts it (fake
# libnvidia-ml.so.1): the critical Xids its GPUs reported before the restart still judge
# its end (attempts.xid), whether it fails after the restart or while carmad is down,
# after a clean stop or a crash. Skipped without the fake library.
LIB="${CARMA_FAKE:-}/nvidia-ml/libnvidia-ml.so.1"
EX=$(ls "$(dirname "$0")"/../fake/nvidia-ml/*.state 2>/dev/null | head -n 1)
if [ -z "${CARMA_FAKE:-}" ] || [ ! -f "$LIB" ] || [ -z "$EX" ]; then
    echo "daemon_readopt: skipped (no fake libnvidia-ml.so.1 or example state file)"
    exit 0
fi
. "$(dirname "$0")/helpers/daemon_lib.sh"
cp "$EX" "$T/nvml.state"
export CARMA_FAKE_NVML_STATE="$T/nvml.state"
start() { start_daemon --gpus nvml --nvml-lib "$LIB" --policy exclusive; }
start
# the index of the GPU job $1's last attempt ran on
gpu_of() {
    _u=$("$CARMA" show --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["attempt_list"][-1]["gpu_uuids"][0])')
    "$CARMA" gpus --json | python3 -c "import json,sys; print([g['index'] for g in json.load(sys.stdin)['gpus'] if g['uuid'] == '$_u'][0])"
}
# A job whose first attempt waits for file $1, then fails; its next ones succeed.
flaky() {
    submit -- sh -c "if [ \"\$CARMA_JOB_ATTEMPT\" = 1 ]; then while [ ! -e $1 ]; do sleep 0.05; done; echo boom >&2; exit 3; fi; echo fine"
}
# xid_stored JOB: the store holds an Xid mark on the job's first attempt
xid_stored() {
    python3 - "$T/state/carma.db" "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
row = db.execute("SELECT xid FROM attempts WHERE job_id=? AND n=1", (int(sys.argv[2]),)).fetchone()
sys.exit(0 if row and row[0] is not None else 1)
PY
}

step "a contained fault before a restart: the job failing after it is a GPU error"
a=$(flaky "$T/go.a")
wait_until 10 is_state "$a" running || fail "job a: $(state_of "$a")"
ga=$(gpu_of "$a")
echo "xid $ga 94" >>"$T/nvml.state"
wait_until 10 grep -q "Xid 94 (contained ECC error); jobs on it: $a" "$T/carmad.log" || fail "Xid 94 not logged"
stop_daemon TERM || fail "stop"
start
grep -q "1 running re-adopted" "$T/carmad.log" || fail "job a not re-adopted"
touch "$T/go.a"
"$CARMA" wait --timeout 20 "$a" >/dev/null || fail "job a: $(state_of "$a")"
[ "$(attempts_of "$a")" = 2 ] || fail "job a not retried: $("$CARMA" show "$a")"
grep -q "job $a attempt 1: gpu_error, re-queued (attempt 1: GPU error: GPU $ga reported Xid 94 (contained ECC error) (exit 3), retried)" "$T/carmad.log" ||
    fail "job a's first end after the restart: $(grep "job $a attempt 1" "$T/carmad.log")"

step "an application's Xid before a restart is named in the reason of the failure after it"
b=$(flaky "$T/go.b")
wait_until 10 is_state "$b" running || fail "job b: $(state_of "$b")"
gb=$(gpu_of "$b")
echo "xid $gb 31" >>"$T/nvml.state"
wait_until 10 grep -q "Xid 31 (GPU memory page fault); jobs on it: $b" "$T/carmad.log" || fail "Xid 31 not logged"
stop_daemon TERM || fail "stop"
start
touch "$T/go.b"
wait_until 20 is_state "$b" failed || fail "job b: $(state_of "$b")"
"$CARMA" show "$b" | grep -q "attempt 1: non-zero exit (exit 3); GPU $gb reported Xid 31 (GPU memory page fault) during it" ||
    fail "job b's reason: $("$CARMA" show "$b")"

step "... and a job that fails while carmad is down, after a crash"
c=$(flaky "$T/go.c")
wait_until 10 is_state "$c" running || fail "job c: $(state_of "$c")"
gc=$(gpu_of "$c")
echo "xid $gc 94" >>"$T/nvml.state"
wait_until 10 xid_stored "$c" || fail "job c's Xid mark not stored"
stop_daemon KILL
touch "$T/go.c"
sleep 0.5
start
grep -q "job $c attempt 1: gpu_error, re-queued (attempt 1: GPU error: GPU $gc reported Xid 94 (contained ECC error) (exit 3), retried)" "$T/carmad.log" ||
    fail "job c's first end at the restart: $(grep "job $c attempt 1" "$T/carmad.log")"
"$CARMA" wait --timeout 20 "$c" >/dev/null || fail "job c: $(state_of "$c")"
stop_daemon TERM || fail "stop"
echo "daemon_readopt: ok"
