#!/bin/sh
# carmad on the fake libnvidia-ml.so.1 (loaded through the real dlopen path, driven by
# the state file named by CARMA_FAKE_NVML_STATE): GPUs listed, a job run, an OOM
# retried. Skipped while the fake library or its example state file is missing.
. "$(dirname "$0")/helpers/daemon_lib.sh"
fake_nvml state || { echo "daemon_nvml: skipped (no fake libnvidia-ml.so.1 or example state file yet)"; exit 0; }
cp "$EX" "$T/nvml.state"
export CARMA_FAKE_NVML_STATE="$T/nvml.state"
start_daemon --gpus nvml --nvml-lib "$LIB"
step "GPUs from the fake driver"
"$CARMA" gpus | grep -q "backend nvml" || fail "backend is not nvml"
"$CARMA" gpus --json | grep -q '"uuid"' || fail "no GPU listed"
# the source line is whole (it was cut at 255 bytes: "...: utilisation on")
"$CARMA" gpus --json | python3 -c "import json,sys; s = json.load(sys.stdin)['source']; \
sys.exit(0 if s.endswith(('utilisation only', 'GPUs', 'on the others')) else 1)" ||
    fail "source line cut: $("$CARMA" gpus --json | grep '"source"')"
step "jobs"
id=$(submit -- echo on-nvml)
"$CARMA" wait --timeout 20 "$id" >/dev/null || fail "job on nvml: $(state_of "$id")"
oom=$(submit -- sh "$HELP/oom_once.sh" "$T/oom.marker")
"$CARMA" wait --timeout 30 "$oom" >/dev/null || fail "OOM job on nvml: $(state_of "$oom")"
[ "$(attempts_of "$oom")" = 2 ] || fail "OOM job not retried once"
step "a job's memory: its processes on a GPU add up; none listed, 0; none known, unknown"
mj=$(submit --gpus 2 -- sh -c 'sleep 300 & sleep 300 & wait')
wait_until 10 test -s "$T/state/jobs/$mj/1/shepherd" || fail "two-process job did not start"
sid=$(shepherd_of "$mj")
wait_until 10 sh -c "[ \$(pgrep -s $sid -x sleep | wc -l) = 2 ]" || fail "its two processes"
for p in $(pgrep -s "$sid" -x sleep); do echo "proc 0 pid=$p mem=10GiB" >>"$T/nvml.state"; done
wait_until 10 sh -c "\"$CARMA\" show $mj | grep -q 'peak 20480, now 20480)'" ||
    fail "two 10 GiB processes on one GPU: $("$CARMA" show "$mj" | grep memory)"
sed -i '/^proc 0 /d' "$T/nvml.state"
wait_until 10 sh -c "\"$CARMA\" show $mj | grep -q 'peak 20480, now 0)'" ||
    fail "processes gone from the GPU: $("$CARMA" show "$mj" | grep memory)"
echo "proc 0 pid=$(pgrep -s "$sid" -x sleep | head -n 1) mem=unknown" >>"$T/nvml.state"
wait_until 10 sh -c "\"$CARMA\" show $mj | grep -q 'peak 20480, now unknown)'" ||
    fail "a process NVML gives no memory: $("$CARMA" show "$mj" | grep memory)"
sed -i '/^proc 0 /d' "$T/nvml.state"
# two processes of one job said to hold 30 GiB each of a 40 GiB GPU: more than it has is no
# figure (its peak would become history, every later run's bound above the GPU)
for p in $(pgrep -s "$sid" -x sleep); do echo "proc 0 pid=$p mem=30GiB" >>"$T/nvml.state"; done
wait_until 10 sh -c "\"$CARMA\" show $mj | grep -q 'peak 30720, now 30720)'" ||
    fail "two 30 GiB processes on a 40 GiB GPU: $("$CARMA" show "$mj" | grep memory)"
sed -i '/^proc 0 /d' "$T/nvml.state"
# a process list that fails is said once, and the job's last memory stands meanwhile
for p in $(pgrep -s "$sid" -x sleep); do echo "proc 0 pid=$p mem=4GiB" >>"$T/nvml.state"; done
wait_until 10 sh -c "\"$CARMA\" show $mj | grep -q 'now 8192)'" || fail "two 4 GiB processes"
printf 'fail 0 nvmlDeviceGetComputeRunningProcesses_v3 TIMEOUT\nfail 0 nvmlDeviceGetComputeRunningProcesses_v2 TIMEOUT\n' >>"$T/nvml.state"
wait_until 10 grep -q "its process list failed" "$T/carmad.log" || fail "a failing process list not logged"
sleep 0.5
"$CARMA" show "$mj" | grep -q 'now 8192)' || fail "memory while the list fails: $("$CARMA" show "$mj" | grep memory)"
[ "$(grep -c "its process list failed" "$T/carmad.log")" = 1 ] || fail "the failing list logged more than once"
sed -i '/^proc 0 /d; /ComputeRunningProcesses/d' "$T/nvml.state"
wait_until 10 grep -q "its process list answers again" "$T/carmad.log" || fail "the list's return not logged"
# no energy counter: power x time; once its GPUs are lost the job is billed nothing more
echo 'fail * nvmlDeviceGetTotalEnergyConsumption NOT_SUPPORTED' >>"$T/nvml.state"
sleep 1
sed -i '/^gpu /s/$/ lost=1/' "$T/nvml.state"
wait_until 10 sh -c "[ \$(\"$CARMA\" gpus | grep -c 'DRAINED: is lost') = 2 ]" || fail "both GPUs lost"
e1=$("$CARMA" show --json "$mj" | python3 -c 'import json,sys; print(json.load(sys.stdin)["energy_j"])')
sleep 1.5
e2=$("$CARMA" show --json "$mj" | python3 -c 'import json,sys; print(json.load(sys.stdin)["energy_j"])')
[ -n "$e1" ] && [ "$e1" = "$e2" ] || fail "a job on lost GPUs is billed energy: $e1 J, then $e2 J"
"$CARMA" cancel "$mj" >/dev/null
stop_daemon TERM || fail "stop"
cp "$EX" "$T/nvml.state"
rm -rf "$T/state"
sed -i '/000000000001/s/$/ mig=1/' "$T/nvml.state"
start_daemon --gpus nvml --nvml-lib "$LIB"
step "a GPU with MIG enabled is drained at start, saying why"
"$CARMA" gpus | grep -q "DRAINED: has MIG enabled" || fail "a MIG GPU: $("$CARMA" gpus)"
# and the scheduler knows it: of two jobs that each need most of a GPU, one waits
m1=$(submit --mem 30G -- sleep 30)
m2=$(submit --mem 30G -- sleep 30)
wait_until 10 is_state "$m1" running || fail "the first 30G job: $(state_of "$m1")"
sleep 1
is_state "$m2" queued || fail "a job placed on the MIG GPU: $("$CARMA" gpus)"
"$CARMA" cancel "$m1" "$m2" >/dev/null
wait_until 10 is_state "$m1" cancelled || fail "cancel the first 30G job"
# a job that asks for both GPUs waits for the drained one, says so, and holds back no one
m3=$(submit --gpus 2 -- sleep 30)
m4=$(submit -- true)
"$CARMA" wait --timeout 10 "$m4" >/dev/null || fail "a job behind one that asks for a drained GPU"
is_state "$m3" queued || fail "a 2-GPU job with one GPU drained: $(state_of "$m3")"
"$CARMA" show "$m3" | grep -q "waiting   beyond_service: asks for 2 GPUs: 1 of the 2 GPUs are in service" ||
    fail "no reason given to a job that waits for a drained GPU: $("$CARMA" show "$m3")"
"$CARMA" cancel "$m3" >/dev/null

step "a GPU that falls off the bus is drained, and carma gpus says why"
sed -i '/000000000001/s/$/ lost=1/' "$T/nvml.state"
wait_until 10 sh -c "\"$CARMA\" gpus | grep -q 'DRAINED: is lost'" ||
    fail "lost GPU: $("$CARMA" gpus)"
# its last sample is not passed off as the present: no power, no utilisation
wait_until 10 sh -c "\"$CARMA\" gpus --json | python3 -c \"import json,sys; \
g = [x for x in json.load(sys.stdin)['gpus'] if x['uuid'].endswith('000000000001')][0]; \
sys.exit(0 if g['power_w'] is None and g['util'] is None and g['mem_used_mib'] is None and \
g['mem_free_mib'] is None else 1)\"" ||
    fail "a lost GPU still shows its last sample"
stop_daemon TERM || fail "stop"

step "a reference policy's grace runs from when the job's process is on the GPU"
cp "$EX" "$T/nvml.state"
rm -rf "$T/state"
sed -i '/000000000001/s/$/ mig=1/' "$T/nvml.state" # one GPU to place on
printf '[daemon]\npolicy = oracle-ff\n[sched]\ngrace = 3\n' >>"$T/carmad.ini"
start_daemon --gpus nvml --nvml-lib "$LIB"
ga=$(submit --mem 1G -- sleep 60)
wait_until 10 test -s "$T/state/jobs/$ga/1/shepherd" || fail "the first oracle-ff job did not start"
sleep 1 # CUDA starting: no process on the GPU yet (its grace runs from the launch)
# (its shepherd's record comes before its process: waited for, however loaded the host)
sg=$(shepherd_of "$ga") && wait_until 10 pgrep -s "$sg" -x sleep || fail "the first oracle-ff job's process"
gp=$(pgrep -s "$sg" -x sleep | head -n 1)
seen=$(date +%s.%N)
echo "proc 0 pid=$gp mem=1GiB" >>"$T/nvml.state"
gb=$(submit --mem 1G -- sleep 60)
wait_until 15 is_state "$gb" running || fail "the second oracle-ff job: $(state_of "$gb")"
"$CARMA" show --json "$gb" | python3 -c "import json,sys; \
t = json.load(sys.stdin)['start_time']; sys.exit(0 if t >= $seen + 3 else 1)" ||
    fail "collocated before 3 s of the first job's process on the GPU: $("$CARMA" show "$gb")"
"$CARMA" cancel "$ga" "$gb" >/dev/null
stop_daemon TERM || fail "stop"
step "a job's process on a GPU carma did not give it is foreign there: not idle, not free"
cp "$EX" "$T/nvml.state"
rm -rf "$T/state"
sed -i '/^policy = /d; /^\[sched\]/d; /^grace = /d' "$T/carmad.ini"
start_daemon --gpus nvml --nvml-lib "$LIB"
sa=$(submit --mem 2G -- sleep 300)
wait_until 10 test -s "$T/state/jobs/$sa/1/shepherd" || fail "the job did not start"
sg=$("$CARMA" show --json "$sa" | python3 -c 'import json,sys; print(json.load(sys.stdin)["gpu_uuids"][0][-1])')
so=$((1 - sg))
wait_until 10 pgrep -s "$(shepherd_of "$sa")" -x sleep ||
    fail "the job's process"
sp=$(pgrep -s "$(shepherd_of "$sa")" -x sleep)
# its script chose GPU $so itself (CUDA_VISIBLE_DEVICES set in the job): 30 of 40 GiB there
sed -i "/00000000000$so/s/mem_used=0/mem_used=30GiB/" "$T/nvml.state"
echo "proc $so pid=$sp mem=30GiB" >>"$T/nvml.state"
# the job's memory counts it (the tick that lists it has run)
wait_until 10 sh -c "\"$CARMA\" show $sa | grep -q 'now 30720)'" ||
    fail "the job's memory: $("$CARMA" show "$sa" | grep memory)"
"$CARMA" gpus --json | python3 -c "import json,sys; \
sys.exit(0 if json.load(sys.stdin)['gpus'][$so]['foreign_processes'] == 1 else 1)" ||
    fail "the job's process is not foreign on GPU $so: $("$CARMA" gpus)"
sb=$(submit --mem 20G -- sleep 300)
sleep 1
"$CARMA" show --json "$sb" | python3 -c "import json,sys; \
sys.exit(1 if any(u.endswith('$so') for u in json.load(sys.stdin).get('gpu_uuids') or []) else 0)" ||
    fail "a 20 GiB job placed on GPU $so, 10 GiB free: $("$CARMA" gpus)"
"$CARMA" cancel "$sa" "$sb" >/dev/null
stop_daemon TERM || fail "stop"

step "MPS servers of carma's jobs or of root's control daemon are neither jobs' processes nor foreign; look-alikes are"
if [ "$ROOT" = 1 ]; then
    cp "$EX" "$T/nvml.state"
    rm -rf "$T/state"
    printf '[sharing]\ndefault = mps\n' >>"$T/carmad.ini"
    mkdir -p "$T/bin" "$T/ubin"
    cp "$(command -v sleep)" "$T/bin/nvidia-cuda-mps-server" # root's, 0755: as installed
    cp "$(command -v sleep)" "$T/ubin/nvidia-cuda-mps-server"
    chmod 0777 "$T/ubin/nvidia-cuda-mps-server" # anyone may write it: not trusted
    "$T/bin/nvidia-cuda-mps-server" 300 &
    mps=$!
    "$T/bin/nvidia-cuda-mps-server" 300 &
    idle=$!
    "$T/ubin/nvidia-cuda-mps-server" 300 &
    fake=$!
    # servers started by an MPS control daemon: root's, and one from a file anyone may write
    cp "$(command -v sh)" "$T/bin/nvidia-cuda-mps-control"
    cp "$(command -v sh)" "$T/ubin/nvidia-cuda-mps-control"
    chmod 0777 "$T/ubin/nvidia-cuda-mps-control"
    "$T/bin/nvidia-cuda-mps-control" -c "\"$T/bin/nvidia-cuda-mps-server\" 300 & wait" &
    ctl=$!
    "$T/ubin/nvidia-cuda-mps-control" -c "\"$T/bin/nvidia-cuda-mps-server\" 300 & wait" &
    uctl=$!
    # and one root's control daemon started with a user's uid set before exec: dumpable,
    # so that user could trace it and run their work inside it
    chmod 0711 "$T"
    "$T/bin/nvidia-cuda-mps-control" -c "setpriv --reuid=65534 --regid=65534 --clear-groups \"$T/bin/nvidia-cuda-mps-server\" 300 & wait" &
    nctl=$!
    wait_until 10 pgrep -P "$ctl" || fail "no server under the control daemon"
    wait_until 10 pgrep -P "$uctl" || fail "no server under the other control daemon"
    wait_until 10 pgrep -u 65534 -P "$nctl" || fail "no user's server under the control daemon"
    ctld=$(pgrep -P "$ctl")
    uctld=$(pgrep -P "$uctl")
    nctld=$(pgrep -P "$nctl")
    ON_EXIT="kill $mps $idle $fake $ctld $uctld $nctld 2>/dev/null"
    start_daemon --gpus nvml --nvml-lib "$LIB"
    mj=$(submit --mem 1G -- sleep 300)
    wait_until 10 is_state "$mj" running || fail "the MPS job: $(state_of "$mj")"
    mg=$("$CARMA" show --json "$mj" | python3 -c 'import json,sys; print(json.load(sys.stdin)["gpu_uuids"][0][-1])')
    og=$((1 - mg))
    # the server of root's job beside it; on the other GPU, with no job of root there, a
    # real server, a look-alike run from a file anyone may write, the idle server of root's
    # control daemon (not foreign) and one of a control daemon anyone may write
    printf 'proc %s pid=%s mem=300MiB\n' "$mg" "$mps" "$og" "$idle" "$og" "$fake" "$og" "$ctld" \
        "$og" "$uctld" "$og" "$nctld" >>"$T/nvml.state"
    wait_until 10 sh -c "\"$CARMA\" gpus --json | python3 -c \"import json,sys; g = json.load(sys.stdin)['gpus']; \
sys.exit(0 if g[$mg]['foreign_processes'] == 0 and g[$og]['foreign_processes'] == 4 else 1)\"" ||
        fail "MPS servers: $("$CARMA" gpus --json | grep foreign)"
    "$CARMA" cancel "$mj" >/dev/null
    stop_daemon TERM || fail "stop"
    kill "$mps" "$idle" "$fake" "$ctld" "$uctld" "$nctld" 2>/dev/null
    sed -i '/^\[sharing\]/d; /^default = mps/d' "$T/carmad.ini"
else
    echo "   (skipped: root is needed for a root-owned server binary)"
fi
step "a job that fails as its GPU is lost is a GPU error, retried on another GPU"
cp "$EX" "$T/nvml.state"
rm -rf "$T/state"
start_daemon --gpus nvml --nvml-lib "$LIB"
# (no Xid comes: a lost GPU fails NVML's event waits, which may never report Xid 79, and the
# kernel's line names no process)
lj=$(submit -- sh -c 'if [ -f "$1/once" ]; then exit 0; fi; touch "$1/once"
while [ ! -f "$1/go" ]; do sleep 0.05; done; exit 1' sh "$T")
wait_until 10 test -f "$T/once" || fail "the job did not start: $(state_of "$lj")"
lg=$("$CARMA" show --json "$lj" | python3 -c 'import json,sys; print(json.load(sys.stdin)["gpu_uuids"][0][-1])')
sed -i "/00000000000$lg/s/\$/ lost=1/" "$T/nvml.state"
touch "$T/go" # it fails at once, maybe before a tick found its GPU lost
"$CARMA" wait --timeout 30 "$lj" >/dev/null
[ "$(outcomes "$lj")" = "gpu_error succeeded" ] && reason "$lj" | grep -q "GPU error: GPU $lg is lost" ||
    fail "a job failing on a lost GPU: $(outcomes "$lj"): $(reason "$lj")"
stop_daemon TERM || fail "stop"
step "carma undrain refuses a GPU still lost: it would take new jobs until the next sample"
cp "$EX" "$T/nvml.state"
rm -rf "$T/state"
start_daemon --gpus nvml --nvml-lib "$LIB"
sed -i '/000000000001/s/$/ lost=1/' "$T/nvml.state"
wait_until 10 sh -c "\"$CARMA\" gpus | grep -q 'DRAINED: is lost'" || fail "lost GPU: $("$CARMA" gpus)"
rc=0; "$CARMA" undrain 1 2>"$T/err" || rc=$?
[ "$rc" = 2 ] && grep -q "carma undrain: GPU 1 (GPU-fa4e0000-0000-4000-8000-000000000001) is lost: .* it stays drained" "$T/err" ||
    fail "undrain of a lost GPU: exit $rc, $(cat "$T/err")"
"$CARMA" gpus | grep -q "DRAINED: is lost" || fail "the lost GPU back in service: $("$CARMA" gpus)"
stop_daemon TERM || fail "stop"
step "carma drain all with a GPU lost: the admin's drain, not 'is lost', holds once it is back"
cp "$EX" "$T/nvml.state"
rm -rf "$T/state"
start_daemon --gpus nvml --nvml-lib "$LIB"
sed -i '/000000000001/s/$/ lost=1/' "$T/nvml.state"
wait_until 10 sh -c "\"$CARMA\" gpus | grep -q 'DRAINED: is lost'" || fail "lost GPU: $("$CARMA" gpus)"
"$CARMA" drain all --reason "psu swap" >"$T/out" 2>"$T/err" || fail "drain all: $(cat "$T/err")"
grep -q "^GPU 0 (GPU-fa4e0000-0000-4000-8000-000000000000) drained: drained by $(id -un) at .*: psu swap$" "$T/out" ||
    fail "drain all said: $(cat "$T/out")"
grep -q "^carma drain: GPU 1 (GPU-fa4e0000-0000-4000-8000-000000000001) was drained already: is lost (its reason kept; kept drained over restarts as: drained by $(id -un) at .*: psu swap)$" "$T/err" ||
    fail "drain all said of the lost GPU: $(cat "$T/err")"
"$CARMA" gpus | grep -q "DRAINED: is lost" || fail "the lost GPU's reason replaced now: $("$CARMA" gpus)"
[ "$(grep -c "	drained by $(id -un) at .*: psu swap$" "$T/state/drained")" = 2 ] ||
    fail "STATE/drained after drain all: $(cat "$T/state/drained")"
# a second drain changes nothing: its line is there
"$CARMA" drain 1 2>"$T/err" || fail "drain 1 again: $(cat "$T/err")"
grep -q "is lost (its reason kept)$" "$T/err" || fail "drain 1 again said: $(cat "$T/err")"
stop_daemon TERM || fail "stop"
sed -i 's/ lost=1//' "$T/nvml.state" # back, once carmad restarts
start_daemon --gpus nvml --nvml-lib "$LIB"
"$CARMA" gpus | grep "^1 " | grep -q "DRAINED: drained by $(id -un) at .*: psu swap before carmad restarted" ||
    fail "the GPU back after a restart: $("$CARMA" gpus)"
"$CARMA" undrain all >/dev/null || fail "undrain all"
stop_daemon TERM || fail "stop"
step "carma drain of a GPU drained already writes its line, or says it could not"
cp "$EX" "$T/nvml.state"
rm -rf "$T/state"
sed -i '/000000000001/s/$/ mig=1/' "$T/nvml.state"
start_daemon --gpus nvml --nvml-lib "$LIB"
"$CARMA" gpus | grep -q "DRAINED: has MIG enabled" || fail "a MIG GPU: $("$CARMA" gpus)"
mkdir "$T/state/drained" # STATE/drained cannot be written
rc=0; "$CARMA" drain 1 2>"$T/err" || rc=$?
[ "$rc" = 1 ] && grep -q "GPU 1 is drained (has MIG enabled.*), but not kept so over carmad's restarts" "$T/err" ||
    fail "a drain not kept over restarts said ok: exit $rc, $(cat "$T/err")"
rmdir "$T/state/drained"
# the failed drain left no line to be written by the next drain (GPU 0's)
"$CARMA" drain 0 >/dev/null 2>"$T/err" || fail "drain 0: $(cat "$T/err")"
! grep -q "^GPU-fa4e0000-0000-4000-8000-000000000001	" "$T/state/drained" ||
    fail "a drain that failed was written by the next one: $(cat "$T/state/drained")"
"$CARMA" undrain 0 >/dev/null 2>"$T/err" || fail "undrain 0: $(cat "$T/err")"
"$CARMA" drain 1 2>"$T/err" || fail "drain 1 once it can be written: $(cat "$T/err")"
# MIG is seen again at start: the line kept is the admin's drain, for once MIG is off
grep -q "^GPU-fa4e0000-0000-4000-8000-000000000001	drained by $(id -un) at " "$T/state/drained" ||
    fail "STATE/drained: $(cat "$T/state/drained" 2>&1)"
stop_daemon TERM || fail "stop"
step "islands: unknown without the driver's topology, then from it"
cp "$EX" "$T/nvml.state"
rm -rf "$T/state"
start_daemon --gpus nvml --nvml-lib "$LIB"
"$CARMA" gpus --json | python3 -c "import json,sys; g = json.load(sys.stdin)['gpus']; \
sys.exit(0 if [x['island'] for x in g] == [None, None] else 1)" ||
    fail "islands without topology answers: $("$CARMA" gpus --json | grep '"island"')"
stop_daemon TERM || fail "stop"
cp "$EX" "$T/nvml.state"
rm -rf "$T/state"
echo "topology 0 1 HOSTBRIDGE" >>"$T/nvml.state" # the GPUs are not linked
start_daemon --gpus nvml --nvml-lib "$LIB"
"$CARMA" gpus --json | python3 -c "import json,sys; o = json.load(sys.stdin); \
sys.exit(0 if [x['island'] for x in o['gpus']] == [0, 1] and '2 GPUs in 2 islands' in o['source'] \
else 1)" || fail "islands from the topology: $("$CARMA" gpus --json | grep '"island"\|source')"
stop_daemon TERM || fail "stop"
step "no --gpus: NVML's library loads but does not start: carmad stops, no simulated GPUs"
rm -rf "$T/state"
{ echo "init LIB_RM_VERSION_MISMATCH"; grep '^gpu' "$EX"; } >"$T/nvml.state"
rc=0
timeout 15 "$CARMAD" --foreground --state "$T/state" --socket "$CARMA_SOCKET" \
    --config "$T/carmad.ini" --nvml-lib "$LIB" 2>"$T/nogpus.err" 0<&- || rc=$?
{ [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q "nvmlInit_v2 failed: LIB_RM_VERSION_MISMATCH" "$T/nogpus.err" &&
    ! grep -q "simulated GPUs sim:4xa100-40gb" "$T/nogpus.err"; } ||
    fail "a driver that does not start: exit $rc, $(tail -n 5 "$T/nogpus.err")"
step "no --gpus: no NVML library at all: simulated GPUs, with a warning"
rm -rf "$T/state"
start_daemon --nvml-lib "$T/none/libnvidia-ml.so.1"
"$CARMA" gpus | grep -q "backend sim" || fail "no library: $("$CARMA" gpus)"
grep -q "no NVIDIA driver (cannot load .*): using simulated GPUs sim:4xa100-40gb" "$T/carmad.log" ||
    fail "no warning: $(tail -n 5 "$T/carmad.log")"
stop_daemon TERM || fail "stop"
step "a thread the vendor library starts takes none of carmad's signals"
# NVML and DCGM may start threads of their own while carmad opens them; a thread that does
# not block SIGTERM, SIGINT and SIGHUP takes them from carmad's signalfd, and their default
# action ends carmad there and then: SIGHUP, which carmad only logs, too
rm -rf "$T/state"
{ cat "$EX"; echo "init_thread 1"; } >"$T/nvml.state"
start_daemon --gpus nvml --nvml-lib "$LIB"
kill -HUP "$DPID"
wait_until 10 grep -q "SIGHUP: the configuration is read at start only" "$T/carmad.log" ||
    fail "SIGHUP not taken by carmad's loop (alive: $(kill -0 "$DPID" 2>/dev/null && echo yes || echo no))"
"$CARMA" gpus >/dev/null || fail "carmad gone after a SIGHUP"
rc=0
stop_daemon TERM || rc=$?
[ "$rc" = 0 ] && grep -q "signal 15: stopping" "$T/carmad.log" ||
    fail "SIGTERM did not stop carmad cleanly: exit $rc"
echo "daemon_nvml: all passed"
