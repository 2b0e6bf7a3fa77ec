#!/bin/sh
# carmad and the kernel's Xid lines (CARMA_TEST_KMSG: a FIFO in /dev/kmsg's format) with
# the fake libnvidia-ml.so.1. Under MPS one client's fault ends every client of its GPU,
# with the same error text, and the pid the kernel names is not always the culprit's (an
# H200 named its co-runner): every failing client of a shared MPS GPU is retried alone,
# not counted the first time, and the culprit fails alone. Under time-slicing the
# co-runner's reason does not name the culprit's Xid. Skipped without the fake library.
. "$(dirname "$0")/helpers/daemon_lib.sh"
fake_nvml || { echo "daemon_kmsg: skipped (no fake libnvidia-ml.so.1)"; exit 0; }
cat >"$T/nvml.state" <<'EOS'
driver 580.159.04
gpu uuid=GPU-aa000000-0000-4000-8000-000000000006 name="NVIDIA H200" mem_total=143771MiB mem_used=0 util=0 power_mw=90000 power_limit_mw=700000 energy_mj=1000 pci=00000000:00:06.0
EOS
export CARMA_FAKE_NVML_STATE="$T/nvml.state"
printf '[sharing]\ndefault = mps\n[sched]\ngrace = 0.2\n' >>"$T/carmad.ini"
mkfifo "$T/kmsg"
# mpsjob TAG CODE [submit options]: a job that records its pid in TAG.pid; attempt N waits
# for file TAG.goN; the first then ends as an MPS client does when a client of its server
# faults, the next ones exit CODE.
mpsjob() {
    _tag=$1 _code=$2
    shift 2
    submit "$@" -- sh -c "echo \$\$ >$_tag.pid; while [ ! -e $_tag.go\$CARMA_JOB_ATTEMPT ]; do sleep 0.05; done; if [ \"\$CARMA_JOB_ATTEMPT\" = 1 ]; then echo 'CUDA error: an illegal memory access was encountered' >&2; exit 1; fi; exit $_code"
}
# pid_file_not FILE PID: FILE holds a pid, not PID (one written anew by a later attempt)
pid_file_not() { [ -s "$1" ] && [ "$(cat "$1")" != "$2" ]; }
first_gpu_error() { [ "$(outcomes "$1" | cut -d' ' -f1)" = gpu_error ]; }
has_attempts() { [ "$(attempts_of "$1")" = "$2" ]; }
SUSPECT="GPU 0's Xid 31 (GPU memory page fault) under MPS ended every client there, whose fault unknown"
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
# alone_one A B: prints the one of jobs A, B that runs while the other waits
alone_one() {
    _sa=$(state_of "$1") _sb=$(state_of "$2")
    [ "$_sa" = running ] && [ "$_sb" = queued ] && { echo "$1"; return 0; }
    [ "$_sb" = running ] && [ "$_sa" = queued ] && { echo "$2"; return 0; }
    return 1
}
# xid_shared_stored JOB: the store marks JOB's first attempt's Xid 31 as one that came on
# a GPU shared by MPS
xid_shared_stored() {
    python3 - "$T/state/carma.db" "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
row = db.execute("SELECT xid, xid_shared FROM attempts WHERE job_id=? AND n=1",
                 (int(sys.argv[2]),)).fetchone()
sys.exit(0 if row and row[0] == 31 and row[1] == 1 else 1)
PY
}
# xids_on JOB N: carmad logged N Xid 31 events with JOB alone on GPU 0
xids_on() { [ "$(grep -c "Xid 31 (GPU memory page fault); jobs on it: $1\$" "$T/carmad.log")" = "$2" ]; }

CARMA_TEST_KMSG="$T/kmsg" start_daemon --gpus nvml --nvml-lib "$LIB" --policy or-rr
grep -q "$T/kmsg: the kernel's Xid lines read" "$T/carmad.log" || fail "the kernel's log not opened"
"$CARMA" gpus --json | python3 -c 'import json,sys; g = json.load(sys.stdin)["gpus"][0]; sys.exit(0 if g["pci_bus_id"] == "00000000:00:06.0" else 1)' ||
    fail "pci_bus_id: $("$CARMA" gpus --json | grep pci)"

step "MPS: every failing client of a shared GPU is retried alone, not counted; alone, the culprit fails"
a=$(mpsjob "$T/a" 1)
b=$(mpsjob "$T/b" 0 --max-attempts 1)
pair "$a" "$b" a b
# a user's write to /dev/kmsg naming a (facility 1) is not the kernel's: ignored; the
# kernel names b, the co-runner, as an H200 did
kmsg 12 "$P1"
kmsg 3 "$P2"
echo "xid 0 31" >>"$T/nvml.state"
wait_until 10 grep -q "GPU 0 (GPU-.*): the kernel puts Xid 31 (GPU memory page fault) on pid $P2 (job $b)" "$T/carmad.log" ||
    fail "the kernel's line not read"
grep -q "on pid $P1" "$T/carmad.log" && fail "a user's record taken for the kernel's"
wait_until 10 grep -q "Xid 31 (GPU memory page fault); jobs on it: $a, $b" "$T/carmad.log" || fail "NVML's Xid not taken"
touch "$T/a.go1" "$T/b.go1"
for j in "$a" "$b"; do
    wait_until 20 first_gpu_error "$j" || fail "job $j not retried: $("$CARMA" show "$j")"
    [ "$(reason "$j")" = "attempt 1: $SUSPECT (exit 1), retried alone (not counted against its attempts)" ] ||
        fail "job $j's reason: $(reason "$j")"
done
# alone: one runs, the other waits for it (or-rr would put them together)
i=0
while ! r=$(alone_one "$a" "$b"); do
    i=$((i + 1))
    [ $i -lt 200 ] || fail "not one alone: $(state_of "$a") $(state_of "$b")"
    sleep 0.05
done
[ "$r" = "$a" ] && q=$b || q=$a
sleep 1
[ "$(alone_one "$a" "$b")" = "$r" ] || fail "they ran together again"
"$CARMA" show "$q" | grep -q "must run alone (a job in the recovery queue goes on idle GPUs only)" ||
    fail "job $q's wait: $("$CARMA" show "$q")"
# second JOB: ends JOB's second attempt, alone (the culprit a faults again)
second() {
    if [ "$1" = "$a" ]; then
        echo "xid 0 31" >>"$T/nvml.state"
        wait_until 10 xids_on "$a" 1 || fail "NVML's second Xid not taken"
        touch "$T/a.go2"
        wait_until 20 is_state "$a" failed || fail "the culprit: $(state_of "$a")"
    else
        touch "$T/b.go2"
        "$CARMA" wait --timeout 20 "$b" >/dev/null || fail "the co-runner: $(state_of "$b") $(reason "$b" 2)"
    fi
}
second "$r"
wait_until 10 is_state "$q" running || fail "job $q after job $r: $(state_of "$q")"
second "$q"
[ "$(reason "$a" 2)" = "attempt 2: non-zero exit (exit 1); GPU 0 reported Xid 31 (GPU memory page fault) during it" ] ||
    fail "the culprit's second reason: $(reason "$a" 2)"
[ "$(outcomes "$a")" = "gpu_error failed" ] || fail "the culprit's attempts: $(outcomes "$a")"
[ "$(outcomes "$b")" = "gpu_error succeeded" ] || fail "the co-runner's attempts: $(outcomes "$b")"
"$CARMA" show "$b" | grep -q '^  attempts  2 of at most 2$' || fail "job b's attempts: $("$CARMA" show "$b")"

step "MPS: a teardown Xid after a co-runner's end does not make the fault the survivor's own"
# the driver tears a dead client's channels down (Xid 45) after the fault; by then carmad
# may have ended the other client, the GPU no longer shared
s=$(mpsjob "$T/s" 0)
u=$(mpsjob "$T/u" 0)
pair "$s" "$u" s u
touch "$T/s.go2" "$T/u.go2"
echo "xid 0 31" >>"$T/nvml.state"
wait_until 10 grep -q -e "Xid 31 (GPU memory page fault); jobs on it: $s, $u\$" -e "Xid 31 (GPU memory page fault); jobs on it: $u, $s\$" "$T/carmad.log" ||
    fail "NVML's Xid not taken"
touch "$T/s.go1"
wait_until 20 first_gpu_error "$s" || fail "job $s not retried: $("$CARMA" show "$s")"
echo "xid 0 45" >>"$T/nvml.state"
wait_until 10 grep -q "Xid 45 (preemptive cleanup); jobs on it: $u\$" "$T/carmad.log" || fail "Xid 45 not taken"
touch "$T/u.go1"
"$CARMA" wait --timeout 20 "$u" >/dev/null || fail "job $u: $(state_of "$u") $(reason "$u")"
[ "$(reason "$u")" = "attempt 1: $SUSPECT (exit 1), retried alone (not counted against its attempts)" ] ||
    fail "job $u's reason: $(reason "$u")"
"$CARMA" wait --timeout 20 "$s" >/dev/null || fail "job $s: $(state_of "$s") $(reason "$s" 2)"

step "MPS: a pid gone before its line is read is known from the monitor's list"
c=$(mpsjob "$T/c" 0)
wait_until 10 is_state "$c" running || fail "job $c: $(state_of "$c")"
wait_until 10 test -s "$T/c.pid" || fail "job $c did not start"
P1=$(cat "$T/c.pid")
printf 'proc 0 pid=%s mem=1GiB mps=1\n' "$P1" >>"$T/nvml.state"
wait_until 10 sh -c "\"$CARMA\" show --json $c | grep -q '\"mem_now_mib\": 1024'" ||
    fail "the process not listed: $("$CARMA" show --json "$c" | grep mem)"
touch "$T/c.go1"
wait_until 20 is_state "$c" failed || fail "job $c: $(state_of "$c")"
wait_until 10 pid_gone "$P1" || fail "the process still there"
kmsg 3 "$P1"
wait_until 10 grep -q "the kernel puts Xid 31 (GPU memory page fault) on pid $P1 (job $c)" "$T/carmad.log" ||
    fail "the gone process not named: $(grep "on pid $P1" "$T/carmad.log")"
sed -i "/^proc 0 pid=$P1 /d" "$T/nvml.state"
kmsg 3 4000000
wait_until 10 grep -q "on pid 4000000 (no carma job's)" "$T/carmad.log" || fail "no line for pid 4000000"

step "MPS: a line on the MPS server names no client"
if [ "$ROOT" = 1 ]; then
    mkdir -p "$T/bin"
    cp "$(command -v sleep)" "$T/bin/nvidia-cuda-mps-server" # root's, 0755: as installed
    "$T/bin/nvidia-cuda-mps-server" 300 &
    srv=$!
    ON_EXIT="kill $srv 2>/dev/null"
    m=$(mpsjob "$T/m" 0) # a server of root's is a client's while root has a job there
    wait_until 10 is_state "$m" running || fail "job $m: $(state_of "$m")"
    kmsg 3 "$srv"
    wait_until 10 grep -q "on pid $srv (the MPS server: no client named)" "$T/carmad.log" ||
        fail "the server's line: $(grep "on pid $srv" "$T/carmad.log")"
    touch "$T/m.go1"
    wait_until 20 is_state "$m" failed || fail "job $m: $(state_of "$m") $(reason "$m")"
    [ "$(reason "$m")" = "attempt 1: non-zero exit (exit 1)" ] || fail "job $m's reason: $(reason "$m")"
    kill "$srv" 2>/dev/null
else
    echo "   (skipped: root is needed for a root-owned server binary)"
fi
stop_daemon TERM || fail "stop"

step "time-slicing: the culprit alone is killed; the Xid named in its reason only"
sed -i '/^\[sharing\]/d; /^default = mps/d' "$T/carmad.ini"
CARMA_TEST_KMSG="$T/kmsg" start_daemon --gpus nvml --nvml-lib "$LIB" --policy or-rr
f=$(mpsjob "$T/f" 0)
g=$(mpsjob "$T/g" 0)
pair "$f" "$g" f g
kmsg 3 "$P1"
echo "xid 0 31" >>"$T/nvml.state"
wait_until 10 grep -q "on pid $P1 (job $f)" "$T/carmad.log" || fail "the kernel's line not read"
wait_until 10 grep -q "Xid 31 (GPU memory page fault); jobs on it: $f, $g" "$T/carmad.log" || fail "NVML's Xid not taken"
touch "$T/f.go1" "$T/g.go1"
wait_until 20 is_state "$f" failed || fail "job $f: $(state_of "$f")"
wait_until 20 is_state "$g" failed || fail "job $g: $(state_of "$g")"
reason "$f" | grep -q "; GPU 0 reported Xid 31 (GPU memory page fault) during it$" || fail "job $f's reason: $(reason "$f")"
[ "$(reason "$g")" = "attempt 1: non-zero exit (exit 1)" ] || fail "job $g's reason: $(reason "$g")"
stop_daemon TERM || fail "stop"

step "MPS without the kernel's lines: the same, and after carmad's crash"
printf '[sharing]\ndefault = mps\n' >>"$T/carmad.ini"
CARMA_TEST_KMSG="$T/none" start_daemon --gpus nvml --nvml-lib "$LIB" --policy or-rr
grep -q "$T/none: No such file or directory: the kernel's Xid lines not read" "$T/carmad.log" ||
    fail "no line for the missing log"
h=$(mpsjob "$T/h" 0)
k=$(mpsjob "$T/k" 0)
pair "$h" "$k" h k
echo "xid 0 31" >>"$T/nvml.state"
wait_until 10 grep -q "Xid 31 (GPU memory page fault); jobs on it: $h, $k" "$T/carmad.log" || fail "NVML's Xid not taken"
wait_until 10 xid_shared_stored "$h" || fail "job $h's mark not stored as shared"
wait_until 10 xid_shared_stored "$k" || fail "job $k's mark not stored as shared"
stop_daemon KILL
touch "$T/h.go1" "$T/k.go1" "$T/h.go2" "$T/k.go2"
wait_until 10 pid_gone "$P1" || fail "job $h's process still there"
wait_until 10 pid_gone "$P2" || fail "job $k's process still there"
sleep 0.3
CARMA_TEST_KMSG="$T/none" start_daemon --gpus nvml --nvml-lib "$LIB" --policy or-rr
for j in "$h" "$k"; do
    "$CARMA" wait --timeout 20 "$j" >/dev/null || fail "job $j: $(state_of "$j") $(reason "$j")"
    [ "$(reason "$j")" = "attempt 1: $SUSPECT (exit 1), retried alone (not counted against its attempts)" ] ||
        fail "job $j's reason: $(reason "$j")"
done
stop_daemon TERM || fail "stop"

step "MPS: a job beside a foreign client is retried alone; beside it again, that attempt counts"
# auto runs a job with a bound but no profile on a GPU without a carma job: beside a
# foreign process
sed -i '/^xid /d' "$T/nvml.state"
printf 'proc 0 pid=4000000 mem=1GiB mps=1\n' >>"$T/nvml.state"
CARMA_TEST_KMSG="$T/none" start_daemon --gpus nvml --nvml-lib "$LIB" --policy auto
e=$(mpsjob "$T/e" 0 --max-attempts 2 --mem 2G)
wait_until 10 is_state "$e" running || fail "job $e: $(state_of "$e")"
wait_until 10 test -s "$T/e.pid" || fail "job $e did not start"
E1=$(cat "$T/e.pid")
wait_until 10 sh -c "\"$CARMA\" gpus --json | grep -q '\"foreign_processes\": 1'" || fail "no foreign process"
echo "xid 0 31" >>"$T/nvml.state"
wait_until 10 xids_on "$e" 1 || fail "NVML's Xid not taken"
touch "$T/e.go1"
wait_until 20 has_attempts "$e" 2 || fail "job $e not retried: $("$CARMA" show "$e")"
[ "$(reason "$e")" = "attempt 1: $SUSPECT (exit 1), retried alone (not counted against its attempts)" ] ||
    fail "job $e's reason: $(reason "$e")"
wait_until 10 is_state "$e" running || fail "job $e, alone: $(state_of "$e")"
# (running from its placement: the pid its shell writes is attempt 1's until it starts)
wait_until 10 pid_file_not "$T/e.pid" "$E1" || fail "job $e's second attempt did not start"
echo "xid 0 31" >>"$T/nvml.state"
wait_until 10 xids_on "$e" 2 || fail "NVML's second Xid not taken"
# attempt 2 would exit 0 once e.go2 is there: its failure is made by hand
kill "$(cat "$T/e.pid")"
wait_until 20 has_attempts "$e" 3 || fail "job $e not retried again: $("$CARMA" show "$e")"
[ "$(reason "$e" 2)" = "attempt 2: $SUSPECT (signal 15), retried alone" ] ||
    fail "job $e's second reason: $(reason "$e" 2)"
"$CARMA" show "$e" | grep -q '^  attempts  3 of at most 3$' || fail "job $e's attempts: $("$CARMA" show "$e")"
touch "$T/e.go3"
"$CARMA" wait --timeout 20 "$e" >/dev/null || fail "job $e: $(state_of "$e") $(reason "$e" 3)"
stop_daemon TERM || fail "stop"
echo "daemon_kmsg: ok"
