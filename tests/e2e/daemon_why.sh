#!/bin/sh
# Why a queued job is not running: `carma show` (waiting: code and sentence, and
# waiting_code / waiting_reason in --json) and `carma ls` (REASON) on simulated GPUs,
# under auto and under CARMA's oracle-ff: a job that must run alone while others hold every
# GPU, a job too big for the memory left, a job behind the head of the queue, and no
# reason once the job runs.
. "$(dirname "$0")/helpers/daemon_lib.sh"

show_json() { "$CARMA" show --json "$1" | python3 -c "import json,sys; v = json.load(sys.stdin).get('$2'); print('null' if v is None else v)"; }
ls_reason() { "$CARMA" ls | awk -v id="$1" '$1 == id {print $NF}'; }

step "auto: a job without a solo profile waits for a GPU of its own"
start_daemon --gpus sim:2xa100-40gb
a=$(submit --mem 20000 -- sleep 300)
b=$(submit --mem 20000 -- sleep 301)
wait_until 10 is_state "$a" running || fail "job $a: $(state_of "$a")"
wait_until 10 is_state "$b" running || fail "job $b: $(state_of "$b")"
c=$(submit --mem 1000 -- sleep 302)
wait_until 10 sh -c "\"$CARMA\" show $c | grep -q '^  waiting '" || fail "no reason: $("$CARMA" show "$c")"
"$CARMA" show "$c" | grep -q "waiting   exclusive: must run alone (no solo profile yet): needs 1 GPU without a carma job, 1000 MiB to give, 0 usable now: GPU 0: 1 job; GPU 1: 1 job" ||
    fail "job $c's reason: $("$CARMA" show "$c" | grep waiting)"
[ "$(show_json "$c" waiting_code)" = exclusive ] || fail "waiting_code: $(show_json "$c" waiting_code)"
[ "$(ls_reason "$c")" = exclusive ] || fail "carma ls: $("$CARMA" ls)"
"$CARMA" ls | head -n 1 | grep -q "RUNTIME  REASON$" || fail "carma ls header: $("$CARMA" ls | head -n 1)"
"$CARMA" ls --json | python3 -c "
import json, sys
jobs = {j['id']: j for j in json.load(sys.stdin)}
assert jobs[$c]['waiting_code'] == 'exclusive', jobs[$c]
assert jobs[$a]['waiting_code'] is None and jobs[$a]['waiting_reason'] is None, jobs[$a]" ||
    fail "carma ls --json: $("$CARMA" ls --json)"
[ "$(show_json "$a" waiting_reason)" = null ] || fail "a running job has a reason"
"$CARMA" show "$a" | grep -q "^  waiting " && fail "a running job has a reason: $("$CARMA" show "$a")"
"$CARMA" cancel "$b" >/dev/null
wait_until 10 is_state "$c" running || fail "job $c once GPU 1 is free: $(state_of "$c")"
[ "$(show_json "$c" waiting_code)" = null ] || fail "job $c runs, yet: $(show_json "$c" waiting_code)"
"$CARMA" show "$c" | grep -q "^  waiting " && fail "job $c runs, yet: $("$CARMA" show "$c")"
"$CARMA" ls --json | python3 -c "
import json, sys
assert [j for j in json.load(sys.stdin) if j['id'] == $c][0]['waiting_code'] is None" ||
    fail "carma ls --json: $("$CARMA" ls --json)"
"$CARMA" cancel "$a" "$c" >/dev/null
wait_until 10 is_state "$c" cancelled || fail "cancel $c"
stop_daemon || fail "carmad did not stop cleanly"

step "oracle-ff: too big for the memory left, and behind the head of the queue"
rm -rf "$T/state"
start_daemon --gpus sim:2xa100-40gb --policy oracle-ff
a=$(submit --mem 20000 -- sleep 310)
b=$(submit --mem 20000 -- sleep 311)
wait_until 10 is_state "$a" running || fail "job $a: $(state_of "$a")"
wait_until 10 is_state "$b" running || fail "job $b: $(state_of "$b")"
c=$(submit --mem 30000 -- sleep 312)
d=$(submit --mem 100 -- sleep 313)
# free: 40960 - 20000 - 512 on each GPU, 30000 + 2048 needed
wait_until 10 sh -c "\"$CARMA\" show $c | grep -q 'waiting   resources: '" ||
    fail "job $c's reason: $("$CARMA" show "$c" | grep waiting)"
"$CARMA" show "$c" | grep -q "needs 1 GPU with 32048 MiB free (30000 + 2048), 0 usable now: GPU 0: .*20448 MiB free; GPU 1: .*20448 MiB free" ||
    fail "job $c's figures: $("$CARMA" show "$c" | grep waiting)"
"$CARMA" show "$d" | grep -q "waiting   behind: job $c at the head of the queue goes first: policy oracle-ff places the head of the queue only" ||
    fail "job $d's reason: $("$CARMA" show "$d" | grep waiting)"
[ "$(ls_reason "$c")" = resources ] || fail "carma ls: $("$CARMA" ls)"
[ "$(ls_reason "$d")" = behind ] || fail "carma ls: $("$CARMA" ls)"
"$CARMA" cancel "$a" >/dev/null
wait_until 10 is_state "$c" running || fail "job $c once GPU 0 is idle: $(state_of "$c")"
[ "$(show_json "$c" waiting_reason)" = null ] || fail "job $c runs, yet: $(show_json "$c" waiting_reason)"
"$CARMA" cancel "$b" "$c" "$d" >/dev/null
stop_daemon || fail "carmad did not stop cleanly"
echo "daemon_why: ok"
