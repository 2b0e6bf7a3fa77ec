#!/bin/sh
# What a running job keeps when carmad restarts and re-adopts it:
#  - (fake libnvidia-ml.so.1; skipped without it) the critical Xids its GPUs reported
#    before the restart still judge its end (attempts.xid), whether it fails after the
#    restart or while carmad is down, after a clean stop or a crash; an Xid the restarted
#    carmad learns of first is not put on a job that ended while it was down (its real
#    exit judges it), only on the re-adopted running ones, also after a start that ran
#    out of memory as it reconciled (it ends nothing); a job whose shepherd ends as carmad
#    reconciles is ended once every running job holds its GPUs again; a reference
#    policy's grace for a job whose process was not yet on its GPU runs from when it is;
#  - (simulated GPUs) a job that ran out of memory beside a co-runner while carmad was
#    down is judged as one beside a co-runner, not as one alone on its GPU;
#  - the solo profile a running job showed alone before the restart is the scheduler's
#    after it: auto collocates beside it at once.
. "$(dirname "$0")/helpers/daemon_lib.sh"
printf '[sched]\ngrace = 0.4\n[monitor]\nwindow = 2\n' >>"$T/carmad.ini"
# launched JOB: JOB runs and its shepherd started its first attempt (a job placed, state
# running, whose shepherd had not started when carmad stopped is re-queued, not re-adopted)
launched() { is_state "$1" running && grep -q "job $1 attempt 1 started (shepherd" "$T/carmad.log"; }
if fake_nvml state; then
cp "$EX" "$T/nvml.state"
export CARMA_FAKE_NVML_STATE="$T/nvml.state"
start() { start_daemon --gpus nvml --nvml-lib "$LIB" --policy exclusive; }
start
# the index of the GPU job $1's last attempt ran on
gpu_of() {
    _u=$("$CARMA" show --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["attempt_list"][-1]["gpu_uuids"][0])')
    "$CARMA" gpus --json | python3 -c "import json,sys; print([g['index'] for g in json.load(sys.stdin)['gpus'] if g['uuid'] == '$_u'][0])"
}
# on_two_gpus A B: jobs A and B launched, on two GPUs (GA and GB: their indices)
on_two_gpus() {
    wait_until 10 launched "$1" || fail "job $1: $(state_of "$1")"
    wait_until 10 launched "$2" || fail "job $2: $(state_of "$2")"
    GA=$(gpu_of "$1")
    GB=$(gpu_of "$2")
    [ "$GA" != "$GB" ] || fail "jobs $1 and $2 on one GPU"
}
# xid_late_on GPU...: Xid 94 on each, reported just after the next carmad registers (the
# lines an earlier step left go first: else last in the file again, they come twice)
xid_late_on() {
    sed -i '/^xid_late /d' "$T/nvml.state"
    for _g; do echo "xid_late $_g 94" >>"$T/nvml.state"; done
}
# xid_named GPU JOBS: the restart's log ($T/restart.log) names JOBS ("none", or a job id)
# on the Xid 94 of GPU
xid_named() {
    grep -q "GPU $1 ([^)]*): Xid 94 (contained ECC error); jobs on it: $2\$" "$T/restart.log" ||
        fail "the Xid of GPU $1: $(grep "GPU $1 (" "$T/restart.log")"
}
# retried_for_xid JOB GPU: JOB's first attempt ended gpu_error for GPU's Xid 94, retried
retried_for_xid() {
    grep -q "job $1 attempt 1: gpu_error, re-queued (attempt 1: GPU error: GPU $2 reported Xid 94 (contained ECC error) (exit 3), retried)" "$T/carmad.log" ||
        fail "job $1's first end: $(grep "job $1 attempt 1" "$T/carmad.log")"
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
wait_until 10 launched "$a" || fail "job a: $(state_of "$a")"
ga=$(gpu_of "$a")
echo "xid $ga 94" >>"$T/nvml.state"
wait_until 10 grep -q "Xid 94 (contained ECC error); jobs on it: $a" "$T/carmad.log" || fail "Xid 94 not logged"
stop_daemon TERM || fail "stop"
start
grep -q "1 running re-adopted" "$T/carmad.log" || fail "job a not re-adopted"
touch "$T/go.a"
"$CARMA" wait --timeout 20 "$a" >/dev/null || fail "job a: $(state_of "$a")"
[ "$(attempts_of "$a")" = 2 ] || fail "job a not retried: $("$CARMA" show "$a")"
retried_for_xid "$a" "$ga"

step "an application's Xid before a restart is named in the reason of the failure after it"
b=$(flaky "$T/go.b")
wait_until 10 launched "$b" || fail "job b: $(state_of "$b")"
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
wait_until 10 launched "$c" || fail "job c: $(state_of "$c")"
gc=$(gpu_of "$c")
echo "xid $gc 94" >>"$T/nvml.state"
wait_until 10 xid_stored "$c" || fail "job c's Xid mark not stored"
stop_daemon KILL
touch "$T/go.c"
sleep 0.5
start
retried_for_xid "$c" "$gc"
"$CARMA" wait --timeout 20 "$c" >/dev/null || fail "job c: $(state_of "$c")"

step "an Xid the restarted carmad learns of first is not put on a job that ended while it was down"
# job d fails on one GPU while carmad is down; job e runs on the other, re-adopted; the
# driver reports Xid 94 on both GPUs just after the restarted carmad registers for events
# (xid_late: the fake hands it to the event set, and holds carmad's next NVML call until
# its event thread took it, so it waits in carmad's queue before the reconciliation)
d=$(submit -- sh -c "while [ ! -e $T/go.d ]; do sleep 0.05; done; echo bad >&2; exit 3")
e=$(flaky "$T/go.e")
on_two_gpus "$d" "$e"
gd=$GA ge=$GB
stop_daemon KILL
touch "$T/go.d"
wait_until 10 test -f "$T/state/jobs/$d/1/status" || fail "job d did not end while carmad was down"
xid_late_on "$gd" "$ge"
before=$(wc -l <"$T/carmad.log")
start
tail -n +$((before + 1)) "$T/carmad.log" >"$T/restart.log"
grep -q "1 running re-adopted, 1 ended while down" "$T/restart.log" ||
    fail "$(grep reconciled "$T/restart.log")"
xid_named "$gd" none
# (taken when job d's end was handled, in the reconciliation: else this step tests nothing)
awk '/Xid 94/ { x = NR } / reconciled: / { exit !(x && x < NR) }' "$T/restart.log" ||
    fail "the Xids came after the reconciliation: $(grep 'Xid 94\| reconciled: ' "$T/restart.log")"
xid_named "$ge" "$e"
grep -q "job $d attempt 1: failed (attempt 1: non-zero exit (exit 3))$" "$T/restart.log" ||
    fail "job d's end at the restart: $(grep "job $d attempt 1" "$T/restart.log")"
is_state "$d" failed || fail "job d: $(state_of "$d")"
[ "$(attempts_of "$d")" = 1 ] || fail "job d retried: $("$CARMA" show "$d")"
touch "$T/go.e"
"$CARMA" wait --timeout 20 "$e" >/dev/null || fail "job e: $(state_of "$e")"
retried_for_xid "$e" "$ge"

step "a job whose shepherd ends as carmad reconciles: its end waits until every running job holds its GPUs again"
# jobs x and y run on the two GPUs; after a crash, xid_late lines for both GPUs. Job x,
# re-adopted first (the lower id), cannot be watched (CARMA_TEST_WATCH_FAIL_JOB: its
# shepherd is told to end, as one that ends between carmad's look and its watch). Ended
# at once, its end would take both Xids before job y was back on its GPU; it ran after
# the restart, so its own GPU's Xid is put on it too
x=$(submit -- sleep 120)
y=$(flaky "$T/go.y")
on_two_gpus "$x" "$y"
gx=$GA gy=$GB
stop_daemon KILL
xid_late_on "$gx" "$gy"
before=$(wc -l <"$T/carmad.log")
CARMA_TEST_WATCH_FAIL_JOB=$x start
tail -n +$((before + 1)) "$T/carmad.log" >"$T/restart.log"
grep -q "reconciled: 0 queued, 1 running re-adopted" "$T/restart.log" ||
    fail "$(grep reconciled "$T/restart.log")"
xid_named "$gy" "$y"
xid_named "$gx" "$x"
# (job x's end and the Xids in the reconciliation: else this step tests nothing)
awk -v x="job $x attempt 1: " 'index($0, "): Xid 94 (") { n++ } index($0, x) { e = NR }
    / reconciled: / { exit !(n == 2 && e) }' "$T/restart.log" ||
    fail "job x's end or the Xids came after the reconciliation: $(grep "Xid 94\|job $x attempt 1: \| reconciled: " "$T/restart.log")"
touch "$T/go.y"
"$CARMA" wait --timeout 20 "$y" >/dev/null || fail "job y: $(state_of "$y")"
retried_for_xid "$y" "$gy"
"$CARMA" cancel "$x" >/dev/null 2>&1
x_over() { ! is_state "$x" queued && ! is_state "$x" running; }
wait_until 20 x_over || fail "job x: $(state_of "$x")"

step "out of memory as carmad reconciles: it does not start, and nothing has ended"
# job m fails while carmad is down, job n runs on; xid_late lines for both GPUs. With
# CARMA_TEST_RECON_NOMEM the list of the ends found cannot grow: carmad exits before it
# takes a job in (ended at once, job m's end would take both Xids before job n was back
# on its GPU); started again, it finds both as they were
m=$(submit -- sh -c "while [ ! -e $T/go.m ]; do sleep 0.05; done; echo bad >&2; exit 3")
n=$(flaky "$T/go.n")
on_two_gpus "$m" "$n"
gm=$GA gn=$GB
sn=$(shepherd_of "$n") || fail "job n's shepherd"
stop_daemon KILL
touch "$T/go.m"
wait_until 10 test -f "$T/state/jobs/$m/1/status" || fail "job m did not end while carmad was down"
xid_late_on "$gm" "$gn"
before=$(wc -l <"$T/carmad.log")
rc=0
CARMA_TEST_RECON_NOMEM=1 timeout 20 "$CARMAD" --foreground --state "$T/state" --socket "$CARMA_SOCKET" \
    --config "$T/carmad.ini" --gpus nvml --nvml-lib "$LIB" --policy exclusive 2>>"$T/carmad.log" 0<&- ||
    rc=$?
tail -n +$((before + 1)) "$T/carmad.log" >"$T/restart.log"
[ "$rc" = 1 ] || fail "carmad out of memory as it reconciled: exit $rc"
grep -q "^carmad: reconciling job $m: out of memory$" "$T/restart.log" ||
    fail "carmad's error: $(tail -n 3 "$T/restart.log")"
! grep -q "Xid 94\|job $m attempt 1: " "$T/restart.log" ||
    fail "carmad took in job m: $(grep "Xid 94\|job $m attempt 1: " "$T/restart.log")"
kill -0 "$sn" 2>/dev/null || fail "job n's shepherd ended"
before=$(wc -l <"$T/carmad.log")
start
tail -n +$((before + 1)) "$T/carmad.log" >"$T/restart.log"
grep -q "1 running re-adopted, 1 ended while down" "$T/restart.log" ||
    fail "$(grep reconciled "$T/restart.log")"
xid_named "$gm" none
xid_named "$gn" "$n"
grep -q "job $m attempt 1: failed (attempt 1: non-zero exit (exit 3))$" "$T/restart.log" ||
    fail "job m's end at the restart: $(grep "job $m attempt 1" "$T/restart.log")"
touch "$T/go.n"
"$CARMA" wait --timeout 20 "$n" >/dev/null || fail "job n: $(state_of "$n")"
retried_for_xid "$n" "$gn"
stop_daemon TERM || fail "stop"
rm -rf "$T/state"
: >"$T/carmad.log"

step "a reference policy's grace runs from a re-adopted job's first listing on its GPU"
# one GPU; CARMA's or-magm collocates on it once the grace of its last launch is over
grep -v '^gpu' "$EX" >"$T/nvml.state"
grep '^gpu' "$EX" | head -n 1 >>"$T/nvml.state"
cp "$T/carmad.ini" "$T/carmad.ini.base"
sed 's/^grace = 0.4$/grace = 3/' "$T/carmad.ini.base" >"$T/carmad.ini"
start_daemon --gpus nvml --nvml-lib "$LIB" --policy or-magm
g=$(submit -- sleep 60)
wait_until 10 launched "$g" || fail "job $g: $(state_of "$g")"
stop_daemon TERM || fail "stop"
sleep 3.5 # past its start's grace; its process not listed on the GPU yet (a long start-up)
start_daemon --gpus nvml --nvml-lib "$LIB" --policy or-magm
sid=$(shepherd_of "$g")
listed=$(date +%s.%N) # (its process listed from here: its grace ends 3 s after at the earliest)
echo "proc 0 pid=$(pgrep -s "$sid" -x sleep | head -n 1) mem=1GiB" >>"$T/nvml.state"
wait_until 10 sh -c "\"$CARMA\" show --json $g | grep -q '\"mem_now_mib\": 1024'" ||
    fail "job $g's process not listed: $("$CARMA" show "$g" | grep memory)"
h=$(submit -- sleep 60)
wait_until 20 is_state "$h" running || fail "job $h not placed after the grace: $(state_of "$h")"
# placed no sooner than the grace after the listing (however late this look comes on a
# loaded host); 0.2 s short of 3: a monitor tick begun just before $listed may list it
hs=$("$CARMA" show --json "$h" | python3 -c 'import json,sys; print(json.load(sys.stdin)["start_time"])')
awk -v s="$hs" -v l="$listed" 'BEGIN {exit !(s - l >= 2.8)}' ||
    fail "job $h placed beside job $g within its grace: $(awk -v s="$hs" -v l="$listed" 'BEGIN {print s - l}') s after its process was listed"
"$CARMA" cancel "$g" "$h" >/dev/null
wait_until 10 is_state "$h" cancelled || fail "job $h: $(state_of "$h")"
stop_daemon TERM || fail "stop"
mv "$T/carmad.ini.base" "$T/carmad.ini"
rm -rf "$T/state"
: >"$T/carmad.log"
unset CARMA_FAKE_NVML_STATE
else
    echo "daemon_readopt: the Xid steps skipped (no fake libnvidia-ml.so.1 or example state file)"
fi

step "an OOM beside a co-runner while carmad is down is not an OOM alone"
start_daemon --gpus sim:1xa100-40gb
# A job that sleeps 1.5 s; with FILE.long 30 s; with FILE.oom its first attempt waits for
# FILE.go, then runs out of memory.
cat >"$T/job.sh" <<'JOB'
if [ -e "$1.oom" ] && [ "$CARMA_JOB_ATTEMPT" = 1 ]; then
    while [ ! -e "$1.go" ]; do sleep 0.05; done
    echo "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB." >&2
    exit 1
fi
[ -e "$1.long" ] && exec sleep 30
sleep 1.5
JOB
# each workload alone once, for its solo profile: auto collocates profiled jobs only
p=$(submit --mem 2G -- sh "$T/job.sh" "$T/f")
"$CARMA" wait --timeout 20 "$p" >/dev/null || fail "job $p: $(state_of "$p")"
q=$(submit --mem 2G -- sh "$T/job.sh" "$T/g")
"$CARMA" wait --timeout 20 "$q" >/dev/null || fail "job $q: $(state_of "$q")"
: >"$T/f.oom"
: >"$T/g.long"
o=$(submit --mem 2G -- sh "$T/job.sh" "$T/f")
wait_until 10 launched "$o" || fail "job $o: $(state_of "$o")"
r=$(submit --mem 2G -- sh "$T/job.sh" "$T/g") # the co-runner, of a later id
wait_until 10 launched "$r" || fail "job $r not beside job $o: $(state_of "$r")"
stop_daemon TERM || fail "stop"
touch "$T/f.go"
wait_until 10 test -f "$T/state/jobs/$o/1/status" || fail "job $o did not end while carmad was down"
start_daemon --gpus sim:1xa100-40gb
grep -q "1 running re-adopted, 1 ended while down" "$T/carmad.log" || fail "$(grep reconciled "$T/carmad.log")"
grep -q "job $o attempt 1: oom, re-queued" "$T/carmad.log" || fail "job $o's end: $(grep "job $o" "$T/carmad.log")"
# beside job r it reached its bound: retried with it (alone, its bound would pass the
# GPU's 40960 MiB, and it would wait for a GPU of its own)
bound=$("$CARMA" show --json "$o" | python3 -c 'import json,sys; print(json.load(sys.stdin)["bound_mib"])')
[ "$bound" -lt 40960 ] || fail "job $o judged alone on its GPU: bound $bound MiB"
"$CARMA" cancel "$r" >/dev/null
"$CARMA" wait --timeout 20 "$o" >/dev/null || fail "job $o: $(state_of "$o")"

step "a job's solo profile measured before a restart is the scheduler's after it"
s=$(submit --mem 2G -- sleep 31) # a workload never profiled before
wait_until 10 grep -q "job $s: solo SMACT 0.30 measured" "$T/carmad.log" || fail "job $s not profiled"
stop_daemon TERM || fail "stop"
# a grace that outlasts the test: the restarted carmad cannot measure job s alone again
sed 's/^grace = 0.4$/grace = 600/' "$T/carmad.ini" >"$T/carmad.ini.new"
mv "$T/carmad.ini.new" "$T/carmad.ini"
start_daemon --gpus sim:1xa100-40gb
grep -q "1 running re-adopted" "$T/carmad.log" || fail "job $s not re-adopted"
u=$(submit --mem 2G -- sh "$T/job.sh" "$T/g") # profiled: auto puts it beside a profiled job
wait_until 10 is_state "$u" running ||
    fail "job $u not beside the re-adopted job $s: $(state_of "$u"); $("$CARMA" gpus)"
"$CARMA" cancel "$s" "$u" >/dev/null
stop_daemon TERM || fail "stop"
echo "daemon_readopt: ok"
