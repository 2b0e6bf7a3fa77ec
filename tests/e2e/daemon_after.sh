#!/bin/sh
# Jobs that run after others (carma submit --after; docs/daemon.md, "Jobs that run after
# others"), on the fake libnvidia-ml.so.1's two GPUs (two simulated ones without it):
#  - B --after A waits, queued (REASON `after A`, show and --json list what it waits for)
#    while GPUs are free, and starts once A succeeded; a job after one that succeeded
#    already runs at once; once eligible, B goes ahead of a job submitted after it (the
#    head of the queue: policy exclusive places it only);
#  - C --after a job that fails is cancelled with a reason naming that job and how it
#    ended, and D --after C is cancelled in turn (naming C); so is a job after a waiting
#    job cancelled by hand (carma cancel ID, carma cancel --all);
#  - carma submit-rad --after: the same list, checks, messages and waiting;
#  - refused, exit 2, nothing queued: an unknown id, a job that ended failed, a malformed
#    or repeated list, more than 64 ids, another user's job (as root, with nobody);
#  - a restart of carmad while B waits keeps the wait, and a listed job that fails while
#    carmad is down cancels its waiting job once carmad is back;
#  - commits that fail holding a listed job's end and the cancel it brings (the test hook
#    CARMA_TEST_END_COMMIT_FAILS) undo the cancel, and both are written again.
. "$(dirname "$0")/helpers/daemon_lib.sh"
if fake_nvml state; then
    cp "$EX" "$T/nvml.state"
    export CARMA_FAKE_NVML_STATE="$T/nvml.state"
    start() { start_daemon --gpus nvml --nvml-lib "$LIB" --policy exclusive; }
else
    echo "daemon_after: no fake libnvidia-ml.so.1: on simulated GPUs"
    start() { start_daemon --gpus sim:2xa100-40gb --policy exclusive; }
fi
start
# a job that runs until file go.ID exists, then exits $1 (default 0); options before --
hold() {
    _rc=${RC:-0}
    submit "$@" -- sh -c "while [ ! -e $T/go.\$CARMA_JOB_ID ]; do sleep 0.05; done; exit $_rc"
}
go() { touch "$T/go.$1"; }
# field JOB KEY: carma show --json's KEY of JOB, as JSON
field() { "$CARMA" show --json "$1" | python3 -c "import json,sys; print(json.dumps(json.load(sys.stdin)['$2']))"; }
njobs() { "$CARMA" ls --all --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
ls_reason() { "$CARMA" ls | awk -v id="$1" '$1 == id {print $(NF-1), $NF}'; }
reason_of() { "$CARMA" show --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["reason"])'; }

step "B --after A waits while GPUs are free, and starts once A succeeded"
a=$(hold)
wait_until 10 is_state "$a" running || fail "job $a: $(state_of "$a")"
b=$(submit --after "$a" -- sh -c 'echo after')
other=$(hold) # a GPU is free: a job without --after runs at once
wait_until 10 is_state "$other" running || fail "the free GPU: job $other $(state_of "$other")"
sleep 1 # scheduler steps (the monitor ticks every 0.2 s)
is_state "$b" queued || fail "job $b, after $a, is $(state_of "$b") while $a runs"
[ "$(ls_reason "$b")" = "after $a" ] || fail "carma ls REASON: $("$CARMA" ls | grep "^$b ")"
"$CARMA" show "$b" | grep -q "^  waiting   after: waits until job $a has succeeded (--after $a)$" ||
    fail "carma show: $("$CARMA" show "$b")"
"$CARMA" show "$b" | grep -q "^  after     $a (waits for $a)$" || fail "carma show: $("$CARMA" show "$b")"
[ "$(field "$b" after)" = "[$a]" ] || fail "after: $(field "$b" after)"
[ "$(field "$b" after_pending)" = "[$a]" ] || fail "after_pending: $(field "$b" after_pending)"
[ "$(field "$b" waiting_code)" = '"after"' ] || fail "waiting_code: $(field "$b" waiting_code)"
[ "$(field "$other" after)" = "[]" ] || fail "after of a job without: $(field "$other" after)"
go "$other"
go "$a"
"$CARMA" wait --timeout 20 "$b" >/dev/null || fail "job $b: $(state_of "$b")"
is_state "$a" succeeded || fail "job $a: $(state_of "$a")"
python3 - "$("$CARMA" show --json "$a")" "$("$CARMA" show --json "$b")" <<'EOF' || fail "B started before A ended"
import json, sys
a, b = (json.loads(x) for x in sys.argv[1:3])
assert b["start_time"] >= a["end_time"], (a["end_time"], b["start_time"])
EOF
[ "$(field "$b" after)" = "[$a]" ] || fail "after once ended: $(field "$b" after)"
grep -q "job $b: the jobs it runs after succeeded: queued" "$T/carmad.log" || fail "not logged"
# after a job that succeeded already: met at once
c0=$(submit --after "$a,$b" -- true)
"$CARMA" wait --timeout 20 "$c0" >/dev/null || fail "job $c0 after succeeded jobs: $(state_of "$c0")"

step "once A succeeded, B takes its place by submission order, ahead of a job submitted after it"
h=$(hold)
a3=$(hold)
wait_until 10 is_state "$h" running || fail "job $h: $(state_of "$h")"
wait_until 10 is_state "$a3" running || fail "job $a3: $(state_of "$a3")"
b3=$(hold --after "$a3")
x3=$(hold) # no GPU free: waits in the queue, where B is not yet
sleep 0.5
is_state "$x3" queued || fail "job $x3: $(state_of "$x3")"
go "$a3" # its GPU frees as B becomes eligible: the head of the queue (exclusive) takes it
wait_until 10 is_state "$b3" running || fail "job $b3: $(state_of "$b3")"
is_state "$x3" queued || fail "job $x3, submitted after $b3, is $(state_of "$x3")"
go "$h"
wait_until 10 is_state "$x3" running || fail "job $x3: $(state_of "$x3")"
go "$b3"
go "$x3"
"$CARMA" wait --timeout 20 "$b3" "$x3" >/dev/null || fail "jobs $b3 $x3: $(state_of "$b3") $(state_of "$x3")"

step "C --after a failing job is cancelled with the reason, and D --after C too"
f=$(RC=3 hold)
c=$(submit --after "$f" -- true)
d=$(submit --after "$c,$a" -- true)
sleep 0.5
is_state "$c" queued || fail "job $c: $(state_of "$c")"
is_state "$d" queued || fail "job $d: $(state_of "$d")"
[ "$(field "$d" after_pending)" = "[$c]" ] || fail "after_pending of $d: $(field "$d" after_pending)"
go "$f"
wait_until 20 is_state "$d" cancelled || fail "job $d: $(state_of "$d")"
is_state "$f" failed || fail "job $f: $(state_of "$f")"
is_state "$c" cancelled || fail "job $c: $(state_of "$c")"
[ "$(reason_of "$c")" = "not run: job $f, which it was to run after, ended failed" ] ||
    fail "reason of $c: $(reason_of "$c")"
[ "$(reason_of "$d")" = "not run: job $c, which it was to run after, ended cancelled" ] ||
    fail "reason of $d: $(reason_of "$d")"
[ "$(attempts_of "$c")" = 0 ] && [ "$(attempts_of "$d")" = 0 ] || fail "a cancelled job ran"
rc=0; "$CARMA" wait --timeout 5 "$c" >/dev/null 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "carma wait on a cancelled job exited $rc"
grep -q "job $d cancelled: not run: job $c, which it was to run after, ended cancelled" "$T/carmad.log" ||
    fail "the cascade not logged"

step "cancelling a waiting job (carma cancel, carma cancel --all) ends those after it"
h=$(hold)
wait_until 10 is_state "$h" running || fail "job $h: $(state_of "$h")"
q1=$(submit --after "$h" -- true)
r1=$(submit --after "$q1" -- true)
q2=$(submit --name after-all --after "$h" -- true)
r2=$(submit --after "$q2" -- true)
"$CARMA" cancel "$q1" >/dev/null || fail "carma cancel $q1"
wait_until 10 is_state "$r1" cancelled || fail "job $r1 after cancelled $q1: $(state_of "$r1")"
[ "$(reason_of "$r1")" = "not run: job $q1, which it was to run after, ended cancelled" ] ||
    fail "reason of $r1: $(reason_of "$r1")"
"$CARMA" cancel --all --user "$(id -un)" --queued --name after-all >/dev/null ||
    fail "carma cancel --all --name"
wait_until 10 is_state "$r2" cancelled || fail "job $r2 after cancelled $q2: $(state_of "$r2")"
is_state "$q2" cancelled || fail "job $q2: $(state_of "$q2")"
go "$h"
"$CARMA" wait --timeout 20 "$h" >/dev/null || fail "job $h: $(state_of "$h")"

step "submit-rad --after: the list, checks and waiting of submit --after"
cat >"$T/chain.rad" <<RAD
# the second task of a chain
conda activate tf
sh -c 'echo chained'
resnet50_32.model
/raid/datasets/imagenet
32
exclusive
1
3934
7903.9316
2672.516029
16000
RAD
t1=$(hold)
wait_until 10 is_state "$t1" running || fail "job $t1: $(state_of "$t1")"
t2=$("$CARMA" submit-rad --no-conda --after "$t1" "$T/chain.rad" 2>"$T/err") ||
    fail "submit-rad --after $t1: $(cat "$T/err")"
sleep 1 # scheduler steps (a GPU is free)
is_state "$t2" queued || fail "task $t2, after $t1, is $(state_of "$t2") while $t1 runs"
[ "$(ls_reason "$t2")" = "after $t1" ] || fail "carma ls REASON: $("$CARMA" ls | grep "^$t2 ")"
[ "$(field "$t2" after)" = "[$t1]" ] || fail "after: $(field "$t2" after)"
[ "$(field "$t2" after_pending)" = "[$t1]" ] || fail "after_pending: $(field "$t2" after_pending)"
go "$t1"
"$CARMA" wait --timeout 20 "$t2" >/dev/null || fail "task $t2: $(state_of "$t2")"
# refused as submit refuses (the same words), nothing queued
n0=$(njobs)
for l in "$t1,,$t2" "$t1,$t1" 999999; do
    _rc=0; "$CARMA" submit --after "$l" -- true 2>"$T/err.submit" || _rc=$?
    [ "$_rc" = 2 ] || fail "submit --after $l exited $_rc"
    _rc=0; "$CARMA" submit-rad --no-conda --after "$l" "$T/chain.rad" >"$T/out" 2>"$T/err" || _rc=$?
    [ "$_rc" = 2 ] && [ ! -s "$T/out" ] && [ -s "$T/err" ] &&
        [ "$(sed 's/^carma submit-rad: /carma submit: /' "$T/err")" = "$(cat "$T/err.submit")" ] ||
        fail "submit-rad --after $l: exit $_rc, $(cat "$T/out" "$T/err"); submit said $(cat "$T/err.submit")"
done
_rc=0; "$CARMA" submit-rad --no-conda "$T/chain.rad" --after 2>"$T/err" || _rc=$?
[ "$_rc" = 2 ] && grep -q "^carma submit-rad: --after needs a value" "$T/err" ||
    fail "submit-rad --after without a value: exit $_rc, $(cat "$T/err")"
[ "$(njobs)" = "$n0" ] || fail "a refused submit-rad --after was queued: $(njobs) jobs, $n0 before"

step "refusals: exit 2, a message naming the id and why, nothing queued"
n0=$(njobs)
# refused ARGS -- WHAT: carma submit --after ARGS exits 2 saying WHAT
refused() {
    _what=$2
    _rc=0
    "$CARMA" submit --after "$1" -- true >"$T/out" 2>"$T/err" || _rc=$?
    [ "$_rc" = 2 ] || fail "--after $1 exited $_rc: $(cat "$T/out" "$T/err")"
    grep -qF -- "$_what" "$T/err" || fail "--after $1 said: $(cat "$T/err")"
}
refused 999999 "job.after: no job 999999"
refused "$a,999999" "job.after: no job 999999"
refused "$f" "job.after: job $f ended failed, not succeeded: this job would never run"
refused "$c" "job.after: job $c ended cancelled, not succeeded"
refused "$a,,$b" "--after '$a,,$b': item 2: not a job id"
refused "x" "--after 'x': item 1: not a job id"
refused "0" "--after '0': item 1: job ids start at 1"
refused " $a" "not a job id"
refused "$a,$b,$a" "job $a listed twice"
refused "$(seq -s, 1 65)" "more than 64 job ids"
# a request from another client, which the CLI's checks do not stand for
for bad in "[$a,$a]" "[]" "[0]" "[\"$a\"]" "$a"; do
    python3 -c '
import json, sys
sys.path.insert(0, sys.argv[1])
import carmad_ask
r = carmad_ask.submit(sys.argv[2], {"argv": ["true"], "cwd": "/", "after": json.loads(sys.argv[3])})
assert r["ok"] is False and r["error"] == "badrequest" and "job.after" in r["message"], r
' "$HELP" "$CARMA_SOCKET" "$bad" || fail "a raw after of $bad was not refused"
done
if [ "$ROOT" = 1 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
    nobody_client
    chmod 666 "$CARMA_SOCKET"
    _rc=0
    as_nobody "$NB/carma" submit --after "$a" -- true >"$T/out" 2>"$T/err" || _rc=$?
    [ "$_rc" = 2 ] || fail "nobody after root's job exited $_rc: $(cat "$T/err")"
    grep -q "job.after: job $a belongs to another user" "$T/err" || fail "nobody: $(cat "$T/err")"
fi
[ "$(njobs)" = "$n0" ] || fail "a refused submission was queued: $(njobs) jobs, $n0 before"

step "a restart while B waits keeps the wait; a job that fails while carmad is down cancels its own"
a2=$(hold)
f2=$(RC=1 hold)
wait_until 10 is_state "$a2" running || fail "job $a2: $(state_of "$a2")"
wait_until 10 is_state "$f2" running || fail "job $f2: $(state_of "$f2")"
b2=$(submit --after "$a2" -- true)
c2=$(submit --after "$f2" -- true)
stop_daemon || fail "carmad's stop"
go "$f2" # fails while carmad is down
sleep 0.5
start
sleep 1
is_state "$b2" queued || fail "job $b2 after the restart: $(state_of "$b2")"
[ "$(ls_reason "$b2")" = "after $a2" ] || fail "REASON after the restart: $("$CARMA" ls | grep "^$b2 ")"
[ "$(field "$b2" after_pending)" = "[$a2]" ] || fail "after_pending: $(field "$b2" after_pending)"
wait_until 10 is_state "$c2" cancelled || fail "job $c2: $(state_of "$c2")"
[ "$(reason_of "$c2")" = "not run: job $f2, which it was to run after, ended failed" ] ||
    fail "reason of $c2: $(reason_of "$c2")"
is_state "$a2" running || fail "job $a2 after the restart: $(state_of "$a2")"
go "$a2"
"$CARMA" wait --timeout 20 "$b2" >/dev/null || fail "job $b2: $(state_of "$b2")"
# A list the store holds damaged: the job neither runs (its jobs may not have succeeded)
# nor waits for ever; it ends, saying why.
a4=$(hold)
b4=$(submit --after "$a4" -- true)
stop_daemon || fail "carmad's stop"
python3 -c 'import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); db.execute(sys.argv[2]); db.commit()' \
    "$T/state/carma.db" "UPDATE jobs SET after = '[$a4,' WHERE id = $b4" || fail "damaging job $b4's row"
start
wait_until 10 is_state "$b4" cancelled || fail "job $b4 with a damaged list: $(state_of "$b4")"
[ "$(reason_of "$b4")" = "not run: its list of the jobs to run after, [$a4,, cannot be read (a damaged store row)" ] ||
    fail "reason of $b4: $(reason_of "$b4")"
[ "$(attempts_of "$b4")" = 0 ] || fail "job $b4 with a damaged list ran"
go "$a4"

step "a commit that fails holding a job's end and the cancel it brings: both written again"
stop_daemon || fail "carmad's stop"
export CARMA_TEST_END_COMMIT_FAILS=2
start
unset CARMA_TEST_END_COMMIT_FAILS
f3=$(RC=1 hold)
wait_until 10 is_state "$f3" running || fail "job $f3: $(state_of "$f3")"
c3=$(submit --after "$f3" -- true)
go "$f3"
wait_until 20 is_state "$c3" cancelled || fail "job $c3 (the store's row): $(state_of "$c3")"
grep -q "store: commits succeed again, after 2 that failed" "$T/carmad.log" ||
    fail "the hook did not fail two commits: $(tail -5 "$T/carmad.log")"
[ "$(reason_of "$c3")" = "not run: job $f3, which it was to run after, ended failed" ] ||
    fail "reason of $c3: $(reason_of "$c3")"
[ "$(grep -c "job $c3 cancelled: not run" "$T/carmad.log")" = 1 ] || fail "job $c3's cancel logged $(grep -c "job $c3 cancelled" "$T/carmad.log") times"

echo "daemon_after: ok"
