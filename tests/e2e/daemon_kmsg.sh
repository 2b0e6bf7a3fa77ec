#!/bin/sh
# carmad and the kernel's Xid lines (CARMA_TEST_KMSG: a FIFO in /dev/kmsg's format) with
# the fake libnvidia-ml.so.1: under MPS one client's fault ends every client of its GPU,
# with the same error text; the kernel names the culprit's pid, so the culprit's failure
# stays its own (failed, the Xid in its reason) and its co-runner's is a GPU error,
# retried. Without the kernel's lines both are failed; under time-slicing the co-runner's
# reason does not name the culprit's Xid. Skipped without the fake library.
LIB="${CARMA_FAKE:-}/nvidia-ml/libnvidia-ml.so.1"
if [ -z "${CARMA_FAKE:-}" ] || [ ! -f "$LIB" ]; then
    echo "daemon_kmsg: skipped (no fake libnvidia-ml.so.1)"
    exit 0
fi
. "$(dirname "$0")/helpers/daemon_lib.sh"
cat >"$T/nvml.state" <<'EOF'
driver 580.159.04
gpu uuid=GPU-aa000000-0000-4000-8000-000000000006 name="NVIDIA H200" mem_total=143771MiB mem_used=0 util=0 power_mw=90000 power_limit_mw=700000 energy_mj=1000 pci=00000000:00:06.0
EOF
export CARMA_FAKE_NVML_STATE="$T/nvml.state"
printf '[sharing]\ndefault = mps\n[sched]\ngrace = 0.2\n' >>"$T/carmad.ini"
mkfifo "$T/kmsg"
# job TAG [submit options]: a job that records its pid in TAG.pid; its first attempt waits
# for file TAG.go, then ends as an MPS client does when a client of its server faults; its
# next ones succeed.
job() {
    _tag=$1
    shift
    submit "$@" -- sh -c "echo \$\$ >$_tag.pid; if [ \"\$CARMA_JOB_ATTEMPT\" = 1 ]; then while [ ! -e $_tag.go ]; do sleep 0.05; done; echo 'CUDA error: an illegal memory access was encountered' >&2; exit 1; fi; echo fine"
}
reason() { "$CARMA" show --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["attempt_list"][0]["reason"])'; }
# kmsg PRIO PID: one NVRM Xid 31 record of that priority naming that pid
kmsg() {
    printf '%s,%s,8123456789,-;NVRM: Xid (PCI:0000:00:06): 31, pid=%s, name=python3, channel 0x0000000e, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC6 GPCCLIENT_T1_15 faulted @ 0x0_00000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE\n SUBSYSTEM=pci\n' \
        "$1" "$(date +%s%N)" "$2" >"$T/kmsg"
}
# wait until jobs $1 and $2 (tags $3, $4) run together, their pids in P1 and P2
pair() {
    wait_until 10 is_state "$1" running || fail "job $1: $(state_of "$1")"
    wait_until 10 is_state "$2" running || fail "job $2: $(state_of "$2")"
    wait_until 10 test -s "$T/$3.pid" || fail "job $1 did not start"
    wait_until 10 test -s "$T/$4.pid" || fail "job $2 did not start"
    P1=$(cat "$T/$3.pid")
    P2=$(cat "$T/$4.pid")
}

CARMA_TEST_KMSG="$T/kmsg" start_daemon --gpus nvml --nvml-lib "$LIB" --policy or-rr
grep -q "$T/kmsg: the kernel's Xid lines read" "$T/carmad.log" || fail "the kernel's log not opened"
"$CARMA" gpus --json | python3 -c 'import json,sys; g = json.load(sys.stdin)["gpus"][0]; sys.exit(0 if g["pci_bus_id"] == "00000000:00:06.0" else 1)' ||
    fail "pci_bus_id: $("$CARMA" gpus --json | grep pci)"

step "MPS: the kernel names the culprit; its co-runner's failure is retried, not counted"
a=$(job "$T/a")
b=$(job "$T/b" --max-attempts 1)
pair "$a" "$b" a b
# a user's write to /dev/kmsg naming b (facility 1) is not the kernel's: ignored
kmsg 12 "$P2"
kmsg 3 "$P1"
echo "xid 0 31" >>"$T/nvml.state"
wait_until 10 grep -q "GPU 0 (GPU-.*): the kernel puts Xid 31 (GPU memory page fault) on pid $P1 (job $a)" "$T/carmad.log" ||
    fail "the kernel's line not read"
grep -q "on pid $P2" "$T/carmad.log" && fail "a user's record taken for the kernel's"
wait_until 10 grep -q "Xid 31 (GPU memory page fault); jobs on it: " "$T/carmad.log" || fail "NVML's Xid not taken"
touch "$T/a.go" "$T/b.go"
wait_until 20 is_state "$a" failed || fail "the culprit: $(state_of "$a")"
[ "$(attempts_of "$a")" = 1 ] || fail "the culprit retried"
reason "$a" | grep -q "^attempt 1: non-zero exit (exit 1); GPU 0 reported Xid 31 (GPU memory page fault) during it$" ||
    fail "the culprit's reason: $(reason "$a")"
"$CARMA" wait --timeout 20 "$b" >/dev/null || fail "the co-runner: $(state_of "$b") $(reason "$b")"
[ "$(attempts_of "$b")" = 2 ] || fail "the co-runner: $(attempts_of "$b") attempts"
"$CARMA" show --json "$b" | python3 -c 'import json,sys; a = json.load(sys.stdin)["attempt_list"]; sys.exit(0 if a[0]["outcome"] == "gpu_error" and a[1]["outcome"] == "succeeded" else 1)' ||
    fail "the co-runner's attempts: $("$CARMA" show "$b")"
reason "$b" | grep -q "^attempt 1: another MPS client's fault (Xid 31, job $a) ended it (exit 1), retried (not counted against its attempts)$" ||
    fail "the co-runner's reason: $(reason "$b")"
"$CARMA" show "$b" | grep -q '^  attempts  2 of at most 2$' || fail "the co-runner's attempts: $("$CARMA" show "$b")"

step "MPS: a culprit gone before its line is read is known from the monitor's list"
c=$(job "$T/c")
d=$(job "$T/d")
pair "$c" "$d" c d
printf 'proc 0 pid=%s mem=1GiB mps=1\n' "$P1" >>"$T/nvml.state"
wait_until 10 sh -c "\"$CARMA\" show --json $c | grep -q '\"mem_now_mib\": 1024'" ||
    fail "the culprit's process not listed: $("$CARMA" show --json "$c" | grep mem)"
touch "$T/c.go"
wait_until 20 is_state "$c" failed || fail "the culprit: $(state_of "$c")"
wait_until 10 pid_gone "$P1" || fail "the culprit's process still there"
kmsg 3 "$P1"
wait_until 10 grep -q "the kernel puts Xid 31 (GPU memory page fault) on pid $P1 (job $c)" "$T/carmad.log" ||
    fail "the gone culprit not named: $(grep "on pid $P1" "$T/carmad.log")"
sed -i "/^proc 0 pid=$P1 /d" "$T/nvml.state"
touch "$T/d.go"
"$CARMA" wait --timeout 20 "$d" >/dev/null || fail "the co-runner: $(state_of "$d") $(reason "$d")"
reason "$d" | grep -q "^attempt 1: another MPS client's fault (Xid 31, job $c) ended it (exit 1), retried (not counted against its attempts)$" ||
    fail "the co-runner's reason: $(reason "$d")"

step "MPS: a fault of a process of no carma job: retried, counted (it may be the job's own)"
e=$(job "$T/e")
e1=$(job "$T/e1" --max-attempts 1)
pair "$e" "$e1" e e1
kmsg 3 4000000
wait_until 10 grep -q "on pid 4000000 (no carma job's)" "$T/carmad.log" || fail "no line for pid 4000000"
touch "$T/e.go" "$T/e1.go"
"$CARMA" wait --timeout 20 "$e" >/dev/null || fail "job $e: $(state_of "$e") $(reason "$e")"
reason "$e" | grep -q "^attempt 1: another MPS client's fault (Xid 31, pid 4000000, no carma job's) ended it (exit 1), retried$" ||
    fail "job $e's reason: $(reason "$e")"
wait_until 20 is_state "$e1" failed || fail "job $e1: $(state_of "$e1")"
reason "$e1" | grep -q "^attempt 1: another MPS client's fault (Xid 31, pid 4000000, no carma job's) ended it (exit 1), no attempts left$" ||
    fail "job $e1's reason: $(reason "$e1")"

step "MPS: a line on the MPS server names no client: the failures stay the jobs' own"
if [ "$ROOT" = 1 ]; then
    mkdir -p "$T/bin"
    cp "$(command -v sleep)" "$T/bin/nvidia-cuda-mps-server" # root's, 0755: as installed
    "$T/bin/nvidia-cuda-mps-server" 300 &
    srv=$!
    ON_EXIT="kill $srv 2>/dev/null"
    m=$(job "$T/m")
    n=$(job "$T/n")
    pair "$m" "$n" m n
    kmsg 3 "$srv"
    echo "xid 0 31" >>"$T/nvml.state"
    wait_until 10 grep -q "on pid $srv (the MPS server: no client named)" "$T/carmad.log" ||
        fail "the server's line: $(grep "on pid $srv" "$T/carmad.log")"
    touch "$T/m.go" "$T/n.go"
    wait_until 20 is_state "$m" failed || fail "job $m: $(state_of "$m") $(reason "$m")"
    wait_until 20 is_state "$n" failed || fail "job $n: $(state_of "$n") $(reason "$n")"
    kill "$srv" 2>/dev/null
else
    echo "   (skipped: root is needed for a root-owned server binary)"
fi
stop_daemon TERM || fail "stop"

step "time-slicing: the culprit alone is killed; the Xid named in its reason only"
sed -i '/^\[sharing\]/d; /^default = mps/d' "$T/carmad.ini"
CARMA_TEST_KMSG="$T/kmsg" start_daemon --gpus nvml --nvml-lib "$LIB" --policy or-rr
f=$(job "$T/f")
g=$(job "$T/g")
pair "$f" "$g" f g
kmsg 3 "$P1"
echo "xid 0 31" >>"$T/nvml.state"
wait_until 10 grep -q "on pid $P1 (job $f)" "$T/carmad.log" || fail "the kernel's line not read"
wait_until 10 grep -q "Xid 31 (GPU memory page fault); jobs on it: $f, $g" "$T/carmad.log" || fail "NVML's Xid not taken"
touch "$T/f.go" "$T/g.go"
wait_until 20 is_state "$f" failed || fail "job $f: $(state_of "$f")"
wait_until 20 is_state "$g" failed || fail "job $g: $(state_of "$g")"
reason "$f" | grep -q "; GPU 0 reported Xid 31 (GPU memory page fault) during it$" || fail "job $f's reason: $(reason "$f")"
[ "$(reason "$g")" = "attempt 1: non-zero exit (exit 1)" ] || fail "job $g's reason: $(reason "$g")"
stop_daemon TERM || fail "stop"

step "MPS without the kernel's lines: both failed, as their own"
printf '[sharing]\ndefault = mps\n' >>"$T/carmad.ini"
CARMA_TEST_KMSG="$T/none" start_daemon --gpus nvml --nvml-lib "$LIB" --policy or-rr
grep -q "$T/none: No such file or directory: the kernel's Xid lines not read" "$T/carmad.log" ||
    fail "no line for the missing log"
h=$(job "$T/h")
k=$(job "$T/k")
pair "$h" "$k" h k
echo "xid 0 31" >>"$T/nvml.state"
wait_until 10 grep -q "Xid 31 (GPU memory page fault); jobs on it: $h, $k" "$T/carmad.log" || fail "NVML's Xid not taken"
touch "$T/h.go" "$T/k.go"
wait_until 20 is_state "$h" failed || fail "job $h: $(state_of "$h")"
wait_until 20 is_state "$k" failed || fail "job $k: $(state_of "$k")"
for j in "$h" "$k"; do
    reason "$j" | grep -q "^attempt 1: non-zero exit (exit 1); GPU 0 reported Xid 31 (GPU memory page fault) during it$" ||
        fail "job $j's reason: $(reason "$j")"
done
stop_daemon TERM || fail "stop"
echo "daemon_kmsg: ok"
