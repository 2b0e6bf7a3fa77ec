#!/bin/sh
# carma submit --time-limit (as Slurm's sbatch --time): a running attempt past its limit is
# ended as carma cancel ends a job (SIGTERM, SIGKILL after kill_grace, 1 s here) and the job
# ends cancelled, not retried, its reason "time limit D reached"; a job within its limit
# runs to its end, and the clock is per attempt (an OOM retry starts afresh); malformed or
# out-of-range lengths are refused (exit 2, naming the value) by carma submit, and by
# carmad from any client; a restarted carmad keeps a running job's deadline, ends one
# whose limit passed while it was down at once, and finishes ending one whose cancel for
# the limit was recorded before carmad stopped; a carma cancel before the limit says
# cancelled even when the job ends past it. On the fake libnvidia-ml.so.1 (simulated
# GPUs without it).
. "$(dirname "$0")/helpers/daemon_lib.sh"
if fake_nvml state; then
    cp "$EX" "$T/nvml.state"
    export CARMA_FAKE_NVML_STATE="$T/nvml.state"
    start() { start_daemon --gpus nvml --nvml-lib "$LIB"; }
else
    echo "(no fake libnvidia-ml.so.1: on simulated GPUs)"
    start() { start_daemon --gpus sim:2xa100-40gb; }
fi
start
refused() { # EXPECTED-MESSAGE ARGS...: carma ARGS exits 2 saying EXPECTED-MESSAGE
    _m=$1; shift
    _rc=0; "$CARMA" "$@" >"$T/p.out" 2>"$T/p.err" || _rc=$?
    [ "$_rc" = 2 ] && grep -qF -- "$_m" "$T/p.err" || fail "carma $*: exit $_rc, $(cat "$T/p.err")"
}
# field JOB KEY: show --json's KEY
field() { "$CARMA" show --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin).get(sys.argv[1]))' "$2"; }
# ran JOB: its last attempt's end less its start, in seconds
ran() { "$CARMA" show --json "$1" | python3 -c 'import json,sys; a=json.load(sys.stdin)["attempt_list"][-1]; print(a["end_time"]-a["start_time"])'; }
launched() { is_state "$1" running && test -s "$T/state/jobs/$1/1/shepherd"; }
# between X LO HI: LO <= X < HI
between() { python3 -c 'import sys; x,lo,hi=map(float,sys.argv[1:]); sys.exit(not lo <= x < hi)' "$@"; }

step "malformed or out-of-range lengths are refused, naming them, nothing queued"
refused "--time-limit '2x': unknown unit 'x'" submit --time-limit 2x -- true
refused "--time-limit '1.5h': unknown unit '.'" submit --time-limit 1.5h -- true
refused "--time-limit '30m2h': unit 'h' repeated or out of order" submit --time-limit 30m2h -- true
refused "--time-limit '2h3': a unit (d, h, m or s) missing" submit --time-limit 2h3 -- true
refused "--time-limit '0s': 0 s, out of range [1 s, 31536000 s]" submit --time-limit 0s -- true
refused "--time-limit '90': a unit is needed: 90s or 90m (Slurm's --time reads a bare number as minutes)" submit --time-limit 90 -- true
refused "--time-limit '366d': more than the most, 31536000 s" submit --time-limit 366d -- true
refused "--time-limit '-5': '-' where digits" submit --time-limit -5 -- true
refused "--time-limit an empty length of time" submit --time-limit "" -- true
[ -z "$("$CARMA" ls -q --all)" ] || fail "queued after refusals: $("$CARMA" ls --all)"
# another client's request, which the CLI's checks do not stand for
for bad in 0 -1 31536001 '"60"' 1.5 true; do
    python3 -c '
import json, sys
sys.path.insert(0, sys.argv[1])
import carmad_ask
r = carmad_ask.submit(sys.argv[2], {"argv": ["true"], "cwd": "/", "time_limit_s": json.loads(sys.argv[3])})
assert r["ok"] is False and r["error"] == "badrequest" and "job.time_limit_s" in r["message"], r
' "$HELP" "$CARMA_SOCKET" "$bad" || fail "a raw time_limit_s of $bad was not refused"
done

step "a job within its limit runs to its end; show gives the limit and the time left"
w=$(submit --time-limit 1m -- sleep 1.5)
wait_until 10 launched "$w" || fail "job $w: $(state_of "$w")"
"$CARMA" show "$w" >"$T/show" || fail "show $w"
grep -Eq '^  limit     1m per attempt, ([0-9]+s|1m) left$' "$T/show" ||
    fail "show $w: $(grep limit "$T/show")"
[ "$(field "$w" time_limit_s)" = 60 ] || fail "time_limit_s: $(field "$w" time_limit_s)"
between "$(field "$w" time_left_s)" 50 61 || fail "time_left_s: $(field "$w" time_left_s)"
"$CARMA" wait "$w" >/dev/null || fail "job $w: $(state_of "$w") $(reason "$w")"
[ "$(field "$w" time_left_s)" = None ] || fail "an ended job's time_left_s: $(field "$w" time_left_s)"
u=$(submit -- true)
"$CARMA" wait "$u" >/dev/null || fail "job $u"
[ "$(field "$u" time_limit_s)" = None ] || fail "no limit: time_limit_s $(field "$u" time_limit_s)"
"$CARMA" show "$u" | grep -q '^  limit' && fail "a job without a limit shows one"

step "a job past a 1 s limit is ended, cancelled, not retried, the reason saying so"
j=$(submit --time-limit 1s --max-attempts 3 -- sleep 60)
wait_until 10 launched "$j" || fail "job $j: $(state_of "$j")"
wait_until 8 is_state "$j" cancelled || fail "job $j: $(state_of "$j")"
[ "$(reason "$j")" = "attempt 1: time limit 1s reached (signal 15)" ] || fail "reason: $(reason "$j")"
[ "$(field "$j" reason)" = "attempt 1: time limit 1s reached (signal 15)" ] || fail "job reason: $(field "$j" reason)"
[ "$(attempts_of "$j")" = 1 ] || fail "attempts: $(attempts_of "$j")"
between "$(ran "$j")" 1 3 || fail "ran $(ran "$j") s"
rc=0; "$CARMA" wait "$j" >/dev/null 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "carma wait on a timed-out job exited 0"
grep -q "job $j: attempt 1: time limit 1s reached, ending it" "$T/carmad.log" || fail "not logged"

step "a job ignoring SIGTERM is SIGKILLed after kill_grace"
k=$(submit --time-limit 1s -- sh "$HELP/ignore_term.sh" "$T/k.pid")
wait_until 10 test -s "$T/k.pid" || fail "job $k did not start"
kp=$(cat "$T/k.pid")
wait_until 10 is_state "$k" cancelled || fail "job $k: $(state_of "$k")"
[ "$(reason "$k")" = "attempt 1: time limit 1s reached (signal 9)" ] || fail "reason: $(reason "$k")"
between "$(ran "$k")" 2 4.5 || fail "ran $(ran "$k") s (limit 1 s, kill_grace 1 s)"
pid_gone "$kp" || fail "job $k's process $kp still runs"

step "the limit is per attempt: an OOM retry starts a fresh clock"
o=$(submit --time-limit 3s -- sh -c 'sleep 2.2 && sh "$0" "$1"' "$HELP/oom_once.sh" "$T/oom.marker")
wait_until 20 sh -c "! '$CARMA' ls -q | grep -qx '$o'" || fail "job $o: $(state_of "$o")"
is_state "$o" succeeded || fail "job $o: $(state_of "$o"), $(outcomes "$o"): $(reason "$o" 2)"
[ "$(outcomes "$o")" = "oom succeeded" ] || fail "outcomes: $(outcomes "$o")"

step "a restarted carmad keeps a running job's deadline"
r=$(submit --time-limit 6s -- sleep 60)
wait_until 10 launched "$r" || fail "job $r: $(state_of "$r")"
sleep 1
stop_daemon TERM || fail "stop"
sleep 2
start
is_state "$r" running || fail "job $r after the restart: $(state_of "$r")"
between "$(field "$r" time_left_s)" 1 5 || fail "time_left_s after the restart: $(field "$r" time_left_s)"
wait_until 10 is_state "$r" cancelled || fail "job $r: $(state_of "$r")"
[ "$(reason "$r")" = "attempt 1: time limit 6s reached (signal 15)" ] || fail "reason: $(reason "$r")"
# a fresh clock at the restart (3 s in) would have ended it 9 s after its start
between "$(ran "$r")" 6 8 || fail "ran $(ran "$r") s"

step "a limit that passed while carmad was down ends the job at once"
p=$(submit --time-limit 2s -- sleep 60)
wait_until 10 launched "$p" || fail "job $p: $(state_of "$p")"
stop_daemon TERM || fail "stop"
sleep 3
before=$(wc -l <"$T/carmad.log")
start
wait_until 3 is_state "$p" cancelled || fail "job $p: $(state_of "$p")"
[ "$(reason "$p")" = "attempt 1: time limit 2s reached (signal 15)" ] || fail "reason: $(reason "$p")"
tail -n +$((before + 1)) "$T/carmad.log" | grep -q "job $p: attempt 1: time limit 2s reached, ending it" ||
    fail "the restart did not end it"
step "a carmad that stops after recording the limit's cancel, before signalling: its successor ends the job, the reason kept"
stop_daemon TERM || fail "stop"
export CARMA_TEST_DIE_AT_CANCEL=1
start
unset CARMA_TEST_DIE_AT_CANCEL
q=$(submit --time-limit 1s -- sleep 60)
rc=0; wait "$DPID" || rc=$?
DPID=
[ "$rc" = 1 ] || fail "carmad exited $rc, not at the cancel"
[ -s "$T/state/jobs/$q/1/shepherd" ] || fail "job $q never started"
start
wait_until 5 is_state "$q" cancelled || fail "job $q: $(state_of "$q")"
[ "$(reason "$q")" = "attempt 1: time limit 1s reached (signal 15)" ] || fail "reason: $(reason "$q")"
step "carma cancel before the limit, the job ending past it (kill_grace): the reason says cancelled"
stop_daemon TERM || fail "stop"
sed -i 's/^kill_grace = 1$/kill_grace = 3/' "$T/carmad.ini"
start
c=$(submit --time-limit 2s -- sh "$HELP/ignore_term.sh" "$T/c.pid")
wait_until 10 test -s "$T/c.pid" || fail "job $c did not start"
"$CARMA" cancel "$c" >/dev/null || fail "cancel $c"
wait_until 10 is_state "$c" cancelled || fail "job $c: $(state_of "$c")"
between "$(ran "$c")" 2 6 || fail "ran $(ran "$c") s (the test needs it past its 2 s limit)"
[ "$(reason "$c")" = "attempt 1: cancelled (signal 9)" ] || fail "reason: $(reason "$c")"
echo "PASS"
