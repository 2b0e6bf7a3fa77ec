#!/bin/sh
# carmad and an MPS fault that spreads across GPUs, with the fake libnvidia-ml.so.1 (four
# GPUs: 0, 1 and 2 shared by MPS, 3 time-sliced). Under MPS a client's fatal fault is
# raised in every client of each GPU the faulting client used, and nothing says which
# client faulted: an application's Xid on an MPS GPU reaches the GPUs of every carma job
# there, and theirs in turn (docs/daemon.md, "Which process an Xid was"). Every failing
# job reached is retried alone, not counted; a job on an MPS GPU not reached, and one on
# a time-sliced GPU (where a fault ends its own context only), fail as their own. The
# lent machines have one GPU: this is checked against the fake library only. Skipped
# without it.
. "$(dirname "$0")/helpers/daemon_lib.sh"
fake_nvml || { echo "daemon_mps_reach: skipped (no fake libnvidia-ml.so.1)"; exit 0; }
{
    echo "driver 580.159.04"
    for _g in 0 1 2 3; do
        echo "gpu uuid=GPU-bb00000$_g-0000-4000-8000-00000000000$_g name=\"NVIDIA H200\" mem_total=143771MiB mem_used=0 util=0 power_mw=90000 power_limit_mw=700000 energy_mj=1000"
    done
} >"$T/nvml.state"
export CARMA_FAKE_NVML_STATE="$T/nvml.state"
printf '[sharing]\ndefault = mps\n3 = timeslice\n[sched]\ngrace = 0.2\n' >>"$T/carmad.ini"
# mpsjob TAG CODE [submit options]: a job whose attempt N waits for file TAG.goN; the
# first then ends as an MPS client does when a client of its server faults, the next
# ones exit CODE.
mpsjob() {
    _tag=$1 _code=$2
    shift 2
    submit "$@" -- sh -c "while [ ! -e $_tag.go\$CARMA_JOB_ATTEMPT ]; do sleep 0.05; done; if [ \"\$CARMA_JOB_ATTEMPT\" = 1 ]; then echo 'CUDA error: an illegal memory access was encountered' >&2; exit 1; fi; exit $_code"
}
# gpus_of JOB: the indices of the GPUs of JOB's last attempt, ascending, space-separated
gpus_of() {
    "$CARMA" show --json "$1" | python3 -c '
import json, sys
print(" ".join(sorted(u[11] for u in json.load(sys.stdin)["attempt_list"][-1]["gpu_uuids"])))'
}
has_attempts() { [ "$(attempts_of "$1")" = "$2" ]; }
first_is() { [ "$(outcomes "$1" | cut -d' ' -f1)" = "$2" ]; }
# only GPUS...: drains every GPU but those (placement is steered so), undrains those
only() {
    for _g in 0 1 2 3; do
        case " $* " in
        *" $_g "*) "$CARMA" undrain "$_g" >/dev/null 2>&1 ;;
        *) "$CARMA" drain "$_g" --reason steer >/dev/null 2>&1 ;;
        esac
    done
}
# place JOB GPUS: JOB runs on exactly those GPUs
place() {
    _j=$1
    shift
    wait_until 10 is_state "$_j" running || fail "job $_j: $(state_of "$_j")"
    [ "$(gpus_of "$_j")" = "$*" ] || fail "job $_j on GPUs $(gpus_of "$_j"), not $*"
}
# reached GPU DIRECT REACHED: carmad's last line of an Xid 31 on GPU names the jobs DIRECT
# on it and REACHED (each "JOB through job J's GPUs"), comma-separated, in any order
reached() {
    python3 - "$T/carmad.log" "$@" <<'PY'
import re, sys
log, gpu, direct, reach = sys.argv[1:]
pat = re.compile(r"GPU %s \(.*\): Xid 31 \(GPU memory page fault\); jobs on it: (.*?)(?:; under MPS also (.*))?$" % gpu)
last = None
for line in open(log, errors="replace"):
    m = pat.search(line.rstrip("\n"))
    if m:
        last = m
split = lambda s: sorted(s.split(", ")) if s else []
sys.exit(0 if last and split(last.group(1)) == split(direct) and split(last.group(2)) == split(reach) else 1)
PY
}
XID="Xid 31 (GPU memory page fault)"
HERE="under MPS ended every client there, whose fault unknown"
NOTCOUNTED="(exit 1), retried alone (not counted against its attempts)"

start_daemon --gpus nvml --nvml-lib "$LIB" --policy or-rr
"$CARMA" gpus --json | python3 -c 'import json,sys; s = [g["sharing"] for g in json.load(sys.stdin)["gpus"]]; sys.exit(s != ["mps", "mps", "mps", "timeslice"])' ||
    fail "sharing: $("$CARMA" gpus --json | grep sharing)"

step "an Xid where a 2-GPU job runs alone reaches the clients of its other MPS GPU"
# a on 0+1 (alone on 0), c on 1, e on 1+3, f on 3 (time-sliced, beside e), d on 2
only 0 1
a=$(mpsjob "$T/a" 1 --gpus 2)
place "$a" 0 1
only 1
c=$(mpsjob "$T/c" 0 --max-attempts 1)
place "$c" 1
only 1 3
e=$(mpsjob "$T/e" 0 --gpus 2)
place "$e" 1 3
only 3
f=$(mpsjob "$T/f" 0)
place "$f" 3
only 2
d=$(mpsjob "$T/d" 0)
place "$d" 2
only 0 1 2 3
echo "xid 0 31" >>"$T/nvml.state"
wait_until 10 reached 0 "$a" "$c through job $a's GPUs, $e through job $a's GPUs" ||
    fail "NVML's Xid: $(grep "Xid 31" "$T/carmad.log")"
touch "$T/a.go1" "$T/e.go1" "$T/d.go1" "$T/f.go1"
for j in "$a" "$e"; do wait_until 20 first_is "$j" gpu_error || fail "job $j not retried: $("$CARMA" show "$j")"; done
[ "$(reason "$a")" = "attempt 1: GPU 0's $XID $HERE $NOTCOUNTED" ] || fail "job $a's reason: $(reason "$a")"
[ "$(reason "$e")" = "attempt 1: GPU 0's $XID under MPS ended every client of job $a's GPUs, whose fault unknown $NOTCOUNTED" ] ||
    fail "job $e's reason: $(reason "$e")"

step "an MPS GPU not reached, and a time-sliced GPU, are not: their jobs fail as their own"
for j in "$d" "$f"; do
    wait_until 20 is_state "$j" failed || fail "job $j: $(state_of "$j") $(reason "$j")"
    [ "$(reason "$j")" = "attempt 1: non-zero exit (exit 1)" ] || fail "job $j's reason: $(reason "$j")"
done

step "a teardown Xid on the reached GPU, once the others left it, does not undo the mark"
wait_until 10 sh -c "\"$CARMA\" gpus --json | python3 -c 'import json,sys; sys.exit(len(json.load(sys.stdin)[\"gpus\"][1][\"jobs\"]) != 1)'" ||
    fail "GPU 1 still shared: $("$CARMA" gpus)"
echo "xid 1 45" >>"$T/nvml.state"
wait_until 10 grep -q "Xid 45 (preemptive cleanup); jobs on it: $c\$" "$T/carmad.log" ||
    fail "Xid 45: $(grep "Xid 45" "$T/carmad.log")"
touch "$T/c.go1"
wait_until 20 first_is "$c" gpu_error || fail "job $c not retried: $("$CARMA" show "$c")"
[ "$(reason "$c")" = "attempt 1: GPU 0's $XID under MPS ended every client of job $a's GPUs, whose fault unknown $NOTCOUNTED" ] ||
    fail "job $c's reason: $(reason "$c")"
"$CARMA" show "$c" | grep -q '^  attempts  [12] of at most 2$' || fail "job $c's attempts: $("$CARMA" show "$c")"

step "alone, the culprit fails; the jobs it reached succeed"
touch "$T/c.go2" "$T/e.go2"
wait_until 30 has_attempts "$a" 2 || fail "job $a not run again: $("$CARMA" show "$a")"
wait_until 20 is_state "$a" running || fail "job $a: $(state_of "$a")"
ga=$(gpus_of "$a" | cut -d' ' -f1)
echo "xid $ga 31" >>"$T/nvml.state"
wait_until 10 reached "$ga" "$a" "" || fail "the culprit's Xid: $(grep "GPU $ga .*Xid 31" "$T/carmad.log")"
touch "$T/a.go2"
wait_until 20 is_state "$a" failed || fail "the culprit: $(state_of "$a")"
[ "$(reason "$a" 2)" = "attempt 2: non-zero exit (exit 1); GPU $ga reported $XID during it" ] ||
    fail "the culprit's second reason: $(reason "$a" 2)"
for j in "$c" "$e"; do
    "$CARMA" wait --timeout 30 "$j" >/dev/null || fail "job $j: $(state_of "$j") $(reason "$j" 2)"
    [ "$(outcomes "$j")" = "gpu_error succeeded" ] || fail "job $j's attempts: $(outcomes "$j")"
done
[ "$(outcomes "$a")" = "gpu_error failed" ] || fail "the culprit's attempts: $(outcomes "$a")"

step "the reach chains through multi-GPU jobs, both ways, and holds over a crash"
# p on 2, q on 1+2, r on 0+1, s on 0: the Xid on GPU 2 reaches 1 through q, 0 through r
only 2
p=$(mpsjob "$T/p" 0)
place "$p" 2
only 1 2
q=$(mpsjob "$T/q" 0 --gpus 2)
place "$q" 1 2
only 0 1
r=$(mpsjob "$T/r" 0 --gpus 2)
place "$r" 0 1
only 0
s=$(mpsjob "$T/s" 0)
place "$s" 0
only 0 1 2 3
echo "xid 2 31" >>"$T/nvml.state"
wait_until 10 reached 2 "$p, $q" "$r through job $q's GPUs, $s through job $r's GPUs" ||
    fail "NVML's Xid: $(grep "GPU 2 .*Xid 31" "$T/carmad.log")"
# stored: a restarted carmad judges their ends as the one that took the Xid would have
stored() {
    python3 - "$T/state/carma.db" "$1" "$2" <<'PY'
import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
row = db.execute("SELECT xid, xid_gpu, xid_shared, xid_via FROM attempts WHERE job_id=? AND n=1",
                 (int(sys.argv[2]),)).fetchone()
want = int(sys.argv[3]) if sys.argv[3] else None
sys.exit(0 if row == (31, 2, 1, want) else 1)
PY
}
wait_until 10 stored "$p" "" || fail "job $p's mark not stored"
wait_until 10 stored "$q" "" || fail "job $q's mark not stored"
wait_until 10 stored "$r" "$q" || fail "job $r's mark not stored"
wait_until 10 stored "$s" "$r" || fail "job $s's mark not stored"
stop_daemon KILL
touch "$T/p.go1" "$T/q.go1" "$T/r.go1" "$T/s.go1" "$T/p.go2" "$T/q.go2" "$T/r.go2" "$T/s.go2"
sleep 0.5
start_daemon --gpus nvml --nvml-lib "$LIB" --policy or-rr
for j in "$p" "$q" "$r" "$s"; do
    "$CARMA" wait --timeout 30 "$j" >/dev/null || fail "job $j: $(state_of "$j") $(reason "$j")"
    [ "$(outcomes "$j")" = "gpu_error succeeded" ] || fail "job $j's attempts: $(outcomes "$j") ($(reason "$j"))"
done
for j in "$p" "$q"; do
    [ "$(reason "$j")" = "attempt 1: GPU 2's $XID $HERE $NOTCOUNTED" ] || fail "job $j's reason: $(reason "$j")"
done
[ "$(reason "$r")" = "attempt 1: GPU 2's $XID under MPS ended every client of job $q's GPUs, whose fault unknown $NOTCOUNTED" ] ||
    fail "job $r's reason: $(reason "$r")"
[ "$(reason "$s")" = "attempt 1: GPU 2's $XID under MPS ended every client of job $r's GPUs, whose fault unknown $NOTCOUNTED" ] ||
    fail "job $s's reason: $(reason "$s")"
stop_daemon TERM || fail "stop"
echo "daemon_mps_reach: ok"
