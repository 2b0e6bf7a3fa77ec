#!/bin/sh
# carmad on simulated GPUs with real processes: short and long jobs, an OOM retried
# until it succeeds, a job declaring more than the GPU has, a failure not retried, cancels of a SIGTERM-ignoring and of a
# forking job, bad input, another user's job, a CARMA .rad file, SIGTERM of carmad
# keeping jobs running and their re-adoption, and on a mixed server a job that ran out
# of memory alone on the smaller GPU rerunning on the larger one.
. "$(dirname "$0")/helpers/daemon_lib.sh"

# (its shepherd a copy, which a later step replaces while carmad runs)
mkdir -p "$T/sh" && cp "$CARMA_BIN/carma-shepherd" "$T/sh/carma-shepherd"
start_daemon --gpus sim:4xa100-40gb --shepherd "$T/sh/carma-shepherd"

step "short job"
id=$(submit -- echo hello-carma)
"$CARMA" wait "$id" >/dev/null || fail "echo did not succeed: $(state_of "$id")"
"$CARMA" logs "$id" | grep -qx hello-carma || fail "logs lack the output"
"$CARMA" ls --all --json | grep -q '"state": "succeeded"' || fail "ls --json"

step "the environment: shell functions go quietly, what carmad would refuse is named"
id=$(env 'BASH_FUNC_module%%=() {  echo m
}' 'A.B=1' "LATIN=caf$(printf '\351')" MARK=1 "$CARMA" submit -- sh -c 'echo "MARK=$MARK"' 2>"$T/env.err") ||
    fail "submit with an exported function: $(cat "$T/env.err")"
grep -q "leaves out A.B (not a variable name)" "$T/env.err" && grep -q "leaves out LATIN (value not UTF-8)" "$T/env.err" ||
    fail "dropped entries not named: $(cat "$T/env.err")"
grep -q BASH_FUNC "$T/env.err" && fail "an exported function was named: $(cat "$T/env.err")"
"$CARMA" wait "$id" >/dev/null && "$CARMA" logs "$id" | grep -qx "MARK=1" || fail "env job: $(state_of "$id")"

step "the shepherd: a program of its own, the job's environment never its own"
id=$(MARK=shepherd-env "$CARMA" submit -- sh -c 'echo "$$" > "$0"; sleep 30' "$T/envjob.pid")
wait_until 10 test -s "$T/envjob.pid" || fail "env job did not start"
sf=$(ls "$T"/state/jobs/"$id"/1/shepherd) || fail "no shepherd file"
sp=$(cut -d' ' -f1 "$sf")
[ "$(cat /proc/"$sp"/comm)" = carma-shepherd ] || fail "shepherd $sp is $(cat /proc/"$sp"/comm)"
tr '\0' '\n' < /proc/"$sp"/environ | grep -q MARK && fail "the job's environment reached its shepherd"
tr '\0' '\n' < /proc/"$sp"/cmdline | grep -q MARK && fail "the job's environment is in its shepherd's command line"
jp=$(cat "$T/envjob.pid")
tr '\0' '\n' < /proc/"$jp"/environ | grep -qx MARK=shepherd-env ||
    fail "the job lacks its environment"
# glibc's internal signals (32, 33) are not left ignored, and neither the shepherd nor the
# job holds carmad's handle on the carma-shepherd program
grep -qx 'SigIgn:[[:space:]]*0*' /proc/"$jp"/status || fail "the job ignores: $(grep SigIgn /proc/"$jp"/status)"
ls -l /proc/"$sp"/fd/ /proc/"$jp"/fd/ | grep -q carma-shepherd && fail "a descriptor of carma-shepherd leaked"
"$CARMA" cancel "$id" || fail "cancel refused"
wait_until 10 is_state "$id" cancelled || fail "env job not cancelled: $(state_of "$id")"
_rc=0; "$CARMA_BIN/carma-shepherd" 2>"$T/sh.err" || _rc=$?
[ "$_rc" = 2 ] && grep -q "started by carmad" "$T/sh.err" || fail "carma-shepherd by hand: $_rc $(cat "$T/sh.err")"
_rc=0; "$CARMA_BIN/carma-shepherd" --carma-shepherd-v5 "$T" / x 0 root 0 0 0 true 2>"$T/sh.err" || _rc=$?
[ "$_rc" = 2 ] && grep -q "malformed" "$T/sh.err" || fail "malformed shepherd line: $_rc $(cat "$T/sh.err")"

step "carmad runs the carma-shepherd it started with, even once that file is replaced"
printf '#!/bin/sh\nexit 3\n' > "$T/sh/new" && chmod +x "$T/sh/new" && mv "$T/sh/new" "$T/sh/carma-shepherd"
id=$(submit -- echo pinned-shepherd)
"$CARMA" wait "$id" >/dev/null && "$CARMA" logs "$id" | grep -qx pinned-shepherd ||
    fail "a job after the shepherd's replacement: $(state_of "$id")"
rm "$T/sh/carma-shepherd"
id=$(submit -- echo removed-shepherd)
"$CARMA" wait "$id" >/dev/null || fail "a job after the shepherd's removal: $(state_of "$id")"

step "a large environment reaches the job whole (values past 8 KiB, more than a pipe holds)"
big=$(head -c 30000 /dev/zero | tr '\0' x)
id=$(env B1="$big" B2="$big" B3="$big" B4="$big" B5="$big" "$CARMA" submit -- \
    sh -c 'echo "${#B1} ${#B5}"') || fail "submit with a large environment refused"
"$CARMA" wait "$id" >/dev/null || fail "large-environment job: $(state_of "$id")"
"$CARMA" logs "$id" | grep -qx "30000 30000" || fail "large environment cut: $("$CARMA" logs "$id")"
# each entry within its 32 KiB, but 40 of them pass the request's 1 MiB: a request wrong in
# itself (exit 2), the environment and its largest entry named, nothing stored
_rc=0
env $(for i in $(seq 1 40); do printf 'BIG%d=%s ' "$i" "$big"; done) BIGGEST="x$big" \
    "$CARMA" submit -- true >"$T/toolarge.out" 2>"$T/toolarge.err" || _rc=$?
[ "$_rc" = 2 ] || fail "an environment past the request's limit: exit $_rc, 2 expected: $(cat "$T/toolarge.err")"
grep -q "the environment takes [0-9]* (.*the largest, BIGGEST, 30009 bytes)" "$T/toolarge.err" ||
    fail "the too-large environment not named: $(cat "$T/toolarge.err")"
[ -s "$T/toolarge.out" ] && fail "a job id for a refused submission: $(cat "$T/toolarge.out")"

step "TensorFlow and JAX are told to grow, unless the job says otherwise"
# carmad adds TF_FORCE_GPU_ALLOW_GROWTH=true and XLA_PYTHON_CLIENT_PREALLOCATE=false
# where the job's environment has neither; a job's own values stay
id=$(env -u TF_FORCE_GPU_ALLOW_GROWTH -u XLA_PYTHON_CLIENT_PREALLOCATE "$CARMA" submit --mem 1G -- env)
"$CARMA" wait "$id" >/dev/null || fail "env job: $(state_of "$id")"
"$CARMA" logs "$id" > "$T/env.out"
grep -qx "TF_FORCE_GPU_ALLOW_GROWTH=true" "$T/env.out" && grep -qx "XLA_PYTHON_CLIENT_PREALLOCATE=false" "$T/env.out" ||
    fail "no memory growth in the job's environment: $(grep -E 'TF_|XLA_' "$T/env.out")"
"$CARMA" show --json "$id" | grep -q '"bound_basis": "--mem (1024 MiB)"' || fail "growing job's basis"
# (env -u X: another command, so that the first one's history does not bound it)
id=$(env TF_FORCE_GPU_ALLOW_GROWTH=true XLA_PYTHON_CLIENT_PREALLOCATE=False "$CARMA" submit --mem 1G -- env -u X1)
"$CARMA" wait "$id" >/dev/null || fail "env job: $(state_of "$id")"
"$CARMA" logs "$id" > "$T/env.out"
grep -qx "TF_FORCE_GPU_ALLOW_GROWTH=true" "$T/env.out" && grep -qx "XLA_PYTHON_CLIENT_PREALLOCATE=False" "$T/env.out" ||
    fail "the job's own values were not kept: $(grep -E 'TF_|XLA_' "$T/env.out")"
"$CARMA" show --json "$id" | grep -q '"bound_basis": "--mem (1024 MiB)"' || fail "growing job's basis (own values)"
# a job that preallocates holds a whole GPU: its bound is the GPU's memory, so it runs alone;
# TensorFlow grows on exactly "true" (1, True, TRUE: "could not be parsed", it preallocates),
# and older JAX turns preallocation off on "false", "False" and "0" only
n=0
for v in TF_FORCE_GPU_ALLOW_GROWTH=false TF_FORCE_GPU_ALLOW_GROWTH=1 TF_FORCE_GPU_ALLOW_GROWTH=TRUE \
         XLA_PYTHON_CLIENT_PREALLOCATE=true XLA_PYTHON_CLIENT_PREALLOCATE=FALSE; do
    n=$((n + 1))
    id=$(env -u TF_FORCE_GPU_ALLOW_GROWTH -u XLA_PYTHON_CLIENT_PREALLOCATE "$v" "$CARMA" submit --mem 1G -- env -u "XP$n")
    "$CARMA" show --json "$id" > "$T/pre.json"
    grep -q '"bound_mib": 40960' "$T/pre.json" || fail "$v: bound $(grep bound_mib "$T/pre.json")"
    grep -q "\"bound_basis\": \"whole GPU (40960 MiB: $v in the job's environment maps the GPU's memory at the start; else --mem (1024 MiB))\"" "$T/pre.json" ||
        fail "$v: basis $(grep bound_basis "$T/pre.json")"
    "$CARMA" wait "$id" >/dev/null || fail "$v: $(state_of "$id")"
    "$CARMA" logs "$id" | grep -qx "$v" || fail "$v: not kept"
    grep -q "carmad notice: job $id: $v in its environment: TensorFlow or JAX would map the GPU's memory at its start; bound 40960 MiB, placed alone" "$T/carmad.log" ||
        fail "$v: carmad's log does not say"
done

step "long job runs, short ones pass it"
long=$(submit --mem 2G --name long -- sh "$HELP/run_for.sh" 600) # cancelled at the end
wait_until 10 is_state "$long" running || fail "long job not running"
s2=$(submit --mem 1G -- true)
"$CARMA" wait --timeout 20 "$s2" >/dev/null || fail "short job behind the long one"
is_state "$long" running || fail "long job stopped"
"$CARMA" gpus | grep -q "$long" || fail "carma gpus does not list the long job"
# a running job's peak is its running attempt's, not 0 until it ends
wait_until 10 sh -c "\"$CARMA\" show $long | grep -q 'bound 2048, peak 2048, now 2048)'" ||
    fail "show of a running job: $("$CARMA" show "$long" | grep memory)"
rc=0; "$CARMA" wait --timeout 0.2 "$long" >/dev/null 2>"$T/wait.err" || rc=$?
[ "$rc" = 1 ] || fail "carma wait --timeout on a running job: exit $rc"
grep -qx "carma wait: job $long still running after 0.2 s" "$T/wait.err" || \
    fail "carma wait timeout message: $(cat "$T/wait.err")"
# --json on a timeout: every job as it stands, the finished one and the running one
rc=0; "$CARMA" wait --timeout 0.2 --json "$s2" "$long" >"$T/wait.json" 2>/dev/null || rc=$?
[ "$rc" = 1 ] && python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); \
assert [x["state"] for x in j] == ["succeeded", "running"], j' "$T/wait.json" ||
    fail "carma wait --json on a timeout: exit $rc, $(cat "$T/wait.json")"
for c in show cancel logs wait gpus; do
    "$CARMA" $c --help | grep -q "^usage: carma $c" || fail "carma $c --help"
done
# drain and undrain are carmad's user's too (a per-user carmad's), not root's alone
[ "$("$CARMA" --help | grep -cE "^  (un)?drain .*\(root or carmad's user\)$")" = 2 ] ||
    fail "carma --help on drain and undrain: $("$CARMA" --help | grep drain)"
# a refused argument is named before the usage, exit 2
for a in "ls --bogus|unrecognized option '--bogus'" "show 3 4|unexpected argument '4'" \
    "wait 3 --timeout|--timeout needs a value" "submit --mem|--mem needs a value" \
    "submit --bogus x -- true|unrecognized option '--bogus'" "top --interval|--interval needs" \
    "submit-rad a.rad b.rad|unexpected argument 'b.rad'" "usage --user|--user needs a value" \
    "report --since 1d|--html FILE is needed"; do
    _rc=0
    "$CARMA" ${a%%|*} 2>"$T/arg.err" || _rc=$?
    [ "$_rc" = 2 ] && head -1 "$T/arg.err" | grep -q -- "${a#*|}" && grep -q "^usage: carma" "$T/arg.err" ||
        fail "carma ${a%%|*}: exit $_rc, $(cat "$T/arg.err")"
done

step "OOM on the first attempt, retried, succeeds"
oom=$(submit --mem 4G -- sh "$HELP/oom_once.sh" "$T/oom.marker")
"$CARMA" wait --timeout 30 "$oom" >/dev/null || fail "OOM job did not succeed: $(state_of "$oom")"
[ "$(attempts_of "$oom")" = 2 ] || fail "OOM job: $(attempts_of "$oom") attempts, 2 expected"
"$CARMA" show --json "$oom" | grep -q '"outcome": "oom"' || fail "attempt 1 not recorded as oom"

step "a job declaring more than a GPU has records no peak above the GPU"
big=$(submit --mem 50G -- true)
"$CARMA" wait --timeout 20 "$big" >/dev/null || fail "the 50G job did not succeed: $(state_of "$big")"
"$CARMA" show --json "$big" > "$T/big.json"
sed -n 's/^ *"peak_mib": \([0-9]*\).*/\1/p' "$T/big.json" | sort -u | tr '\n' ' ' > "$T/big.peaks"
[ "$(cat "$T/big.peaks")" = "40960 " ] || fail "peaks $(cat "$T/big.peaks"), 40960 (the A100's) expected"

step "a failure is not retried"
bad=$(submit -- sh "$HELP/fail.sh")
"$CARMA" wait --timeout 20 "$bad" >/dev/null && fail "carma wait returned 0 for a failed job"
[ "$(state_of "$bad")" = failed ] || fail "state $(state_of "$bad")"
[ "$(attempts_of "$bad")" = 1 ] || fail "failed job retried"
"$CARMA" wait "$id" "$bad" >/dev/null; [ $? = 1 ] || fail "carma wait exit status for a mix"

step "cancel a job that ignores SIGTERM"
ig=$(submit -- sh "$HELP/ignore_term.sh" "$T/ig.pid")
wait_until 10 test -s "$T/ig.pid" || fail "ignore_term did not start"
igpid=$(cat "$T/ig.pid")
"$CARMA" cancel "$ig" || fail "cancel refused"
wait_until 10 is_state "$ig" cancelled || fail "not cancelled: $(state_of "$ig")"
wait_until 5 pid_gone "$igpid" || fail "process $igpid survived the cancel"

step "cancel a job that saves and exits 0 on SIGTERM (cancelled, not succeeded)"
gr=$(submit -- sh -c 'trap "exit 0" TERM; echo up > "$0"; sleep 60 & wait' "$T/gr.up")
wait_until 10 test -s "$T/gr.up" || fail "the graceful job did not start"
"$CARMA" cancel "$gr" || fail "cancel refused"
wait_until 10 is_state "$gr" cancelled || fail "graceful job: $(state_of "$gr")"
"$CARMA" wait "$gr" >/dev/null; [ $? = 1 ] || fail "carma wait on a cancelled job exited 0"
# cancelling a job that has ended changes nothing, and says so (exit 0)
"$CARMA" cancel "$gr" 2>"$T/cancel.err" || fail "cancel of an ended job refused"
grep -qx "carma cancel: job $gr had ended already: nothing to cancel" "$T/cancel.err" ||
    fail "cancel of an ended job: '$(cat "$T/cancel.err")'"

step "cancel a job that forks (all its processes end)"
fk=$(submit -- sh "$HELP/forker.sh" "$T/fk.pids")
wait_until 10 test -s "$T/fk.pids" || fail "forker did not start"
"$CARMA" cancel "$fk" || fail "cancel refused"
wait_until 10 is_state "$fk" cancelled || fail "not cancelled: $(state_of "$fk")"
for p in $(cat "$T/fk.pids"); do
    wait_until 5 pid_gone "$p" || fail "process $p of the forking job survived"
done

step "a job that ends leaving processes behind (none outlives it)"
lv=$(submit -- sh "$HELP/leaver.sh" "$T/lv.pids")
wait_until 10 is_state "$lv" succeeded || fail "leaver did not succeed: $(state_of "$lv")"
test -s "$T/lv.pids" || fail "leaver recorded no pids"
for p in $(cat "$T/lv.pids"); do
    wait_until 5 pid_gone "$p" || fail "process $p left by the ended job survived"
done

step "one carmad per state folder; a detached start reports its failure"
# refused STATUS PATTERN CARMAD-ARGS...: carmad exits STATUS saying PATTERN on stderr.
refused() {
    _want=$1 _pat=$2; shift 2
    _rc=0
    "$CARMAD" "$@" 2>"$T/start.err" || _rc=$?
    [ "$_rc" = "$_want" ] && grep -q -- "$_pat" "$T/start.err" ||
        fail "carmad $*: exit $_rc (want $_want), $(cat "$T/start.err")"
}
mkdir -p "$T/lone" && cp "$CARMAD" "$T/lone/carmad"
_rc=0; "$T/lone/carmad" --foreground --state "$T/st4" --socket "$T/lone.sock" \
    --gpus sim:1xa100-40gb 2>"$T/start.err" || _rc=$?
[ "$_rc" = 1 ] && grep -q "no executable carma-shepherd there" "$T/start.err" ||
    fail "carmad without its shepherd: exit $_rc, $(cat "$T/start.err")"
refused 1 "$T/nowhere/carma-shepherd: No such file or directory: no executable carma-shepherd there" --foreground \
    --state "$T/st5" --socket "$T/lone.sock" --gpus sim:1xa100-40gb \
    --shepherd "$T/nowhere/carma-shepherd"
refused 1 "in use by another carmad (pid $DPID)" --foreground --state "$T/state" \
    --socket "$T/other.sock" --config "$T/carmad.ini" --gpus sim:1xa100-40gb
refused 1 "in use by another carmad" --state "$T/state" --socket "$T/other.sock" \
    --config "$T/carmad.ini" --gpus sim:1xa100-40gb
# a detached start under a service manager's readiness protocol is warned of
NOTIFY_SOCKET="$T/notify.sock" refused 1 "in use by another carmad" --state "$T/state" \
    --socket "$T/other.sock" --config "$T/carmad.ini" --gpus sim:1xa100-40gb
grep -q "NOTIFY_SOCKET is set but carmad detaches: .* run carmad --foreground" "$T/start.err" ||
    fail "no warning of a detached start with NOTIFY_SOCKET: $(cat "$T/start.err")"
# a carmad started with stdout and stderr closed logs nowhere, not into its lock file
"$CARMAD" --foreground --state "$T/st6" --socket "$T/st6.sock" --gpus sim:1xa100-40gb \
    1>&- 2>&- &
P6=$!
ON_EXIT="kill $P6 2>/dev/null"
wait_until 20 env CARMA_SOCKET="$T/st6.sock" "$CARMA" gpus || fail "carmad without stdio did not start"
refused 1 "in use by another carmad (pid $P6)" --foreground --state "$T/st6" \
    --socket "$T/st6b.sock" --gpus sim:1xa100-40gb
kill "$P6"; wait "$P6" 2>/dev/null; ON_EXIT=
# a helper that cannot start says why in carmad's log; its job, not at fault as far as
# carmad can tell, waits in the queue while launches pause (1 s, doubled at each pause)
printf '#!/bin/sh\nprintf "ethe disk is on fire" >&3\nexit 125\n' >"$T/why.sh" && chmod +x "$T/why.sh"
"$CARMAD" --foreground --state "$T/st7" --socket "$T/st7.sock" --config "$T/carmad.ini" \
    --gpus sim:2xa100-40gb --shepherd "$T/why.sh" 2>"$T/st7.log" 0<&- &
P7=$!
ON_EXIT="kill $P7 2>/dev/null"
c7() { CARMA_SOCKET="$T/st7.sock" "$CARMA" "$@"; }
wait_until 20 c7 gpus || fail "carmad with why.sh did not start"
wid=$(c7 submit --max-attempts 1 -- true) || fail "submit to st7"
wait_until 10 grep -q "job $wid: cannot start its shepherd: the shepherd could not start: the disk is on fire; queued again" "$T/st7.log" ||
    fail "the helper's reason is not in carmad's log: $(cat "$T/st7.log")"
grep -q "cannot start shepherds (the shepherd could not start: the disk is on fire): launches paused for 1 s" "$T/st7.log" ||
    fail "launches not paused: $(cat "$T/st7.log")"
# (also when it failed before reading a job larger than a pipe holds: the write fails first;
# tried beside the first job once the pause ends)
big=$(head -c 30000 /dev/zero | tr '\0' x)
wid2=$(env B1="$big" B2="$big" B3="$big" B4="$big" CARMA_SOCKET="$T/st7.sock" "$CARMA" submit \
    --max-attempts 1 -- true) || fail "submit a large job to st7"
wait_until 10 grep -q "job $wid2: cannot start its shepherd: the shepherd could not start: the disk is on fire" "$T/st7.log" ||
    fail "the helper's reason was lost behind a large job: $(tail -3 "$T/st7.log")"
for j in $wid $wid2; do
    c7 show "$j" | grep -q "^  state     queued" || fail "st7's job $j: $(c7 show "$j")"
done
kill "$P7"; wait "$P7" 2>/dev/null; ON_EXIT=
# A helper slow to start holds neither carmad nor the job's cancel: carmad follows its start
# from its loop. slow.sh runs the real helper only once the test opens a gate (a file in its
# attempt folder, or $T/gate-all); the one that takes $T/hide runs it at once but hides its
# record from carmad, so that it sits recorded, waiting for carmad's go.
cat >"$T/slow.sh" <<EOF
#!/bin/sh
# wrapper.pid written after the look for hide: a helper seen started has taken it or not
if mv "$T/hide" "\$2/hide" 2>/dev/null; then
    echo \$\$ > "\$2/wrapper.pid"
    exec 8>&3 3>/dev/null
    exec "$CARMA_BIN/carma-shepherd" "\$@"
fi
echo \$\$ > "\$2/wrapper.pid"
while [ ! -e "\$2/gate" ] && [ ! -e "$T/gate-all" ]; do sleep 0.05; done
exec "$CARMA_BIN/carma-shepherd" "\$@"
EOF
chmod +x "$T/slow.sh"
c9() { CARMA_SOCKET="$T/st9.sock" "$CARMA" "$@"; }
"$CARMAD" --foreground --state "$T/st9" --socket "$T/st9.sock" --config "$T/carmad.ini" \
    --gpus sim:2xa100-40gb --shepherd "$T/slow.sh" 2>"$T/st9.log" 0<&- &
P9=$!
ON_EXIT="kill $P9 2>/dev/null"
wait_until 20 c9 gpus || fail "carmad with slow.sh did not start"
sid=$(c9 submit -- sh -c 'echo ran > "$0"' "$T/slow.out") || fail "submit to st9"
wait_until 10 test -f "$T/st9/jobs/$sid/1/wrapper.pid" || fail "the slow helper did not run"
c9 ls >/dev/null || fail "carma ls while a helper starts"
[ -f "$T/st9/jobs/$sid/1/shepherd" ] && fail "the gated helper recorded itself"
touch "$T/st9/jobs/$sid/1/gate"
c9 wait --timeout 20 "$sid" >/dev/null && [ "$(cat "$T/slow.out")" = ran ] ||
    fail "a job behind a slow helper: $(c9 show "$sid")"
# cancelled while its helper starts: the helper is killed, the job never runs
cid=$(c9 submit -- touch "$T/slow.cancelled") || fail "submit to st9"
wait_until 10 test -f "$T/st9/jobs/$cid/1/wrapper.pid" || fail "the slow helper did not run"
c9 cancel "$cid" >/dev/null || fail "cancel while its helper starts"
c9 wait --timeout 20 "$cid" >/dev/null
c9 show "$cid" >"$T/slow.show"
grep -q "^  state     cancelled" "$T/slow.show" &&
    grep -q "reason    attempt 1: cancelled before its shepherd started the job" "$T/slow.show" ||
    fail "a job cancelled while its helper started: $(cat "$T/slow.show")"
wait_until 5 pid_gone "$(cat "$T/st9/jobs/$cid/1/wrapper.pid")" || fail "the cancelled job's helper lives on"
touch "$T/st9/jobs/$cid/1/gate"
[ -e "$T/slow.cancelled" ] && fail "a job cancelled while its helper started ran"
# carmad stopped while two helpers start, one stalled and one recorded and waiting for its
# go: each ends without its job, no record is left, and the restarted carmad queues both
# again (never started) and runs each once
q1=$(c9 submit -- sh -c 'echo x >> "$0"' "$T/slow.q1") || fail "submit to st9"
wait_until 10 test -f "$T/st9/jobs/$q1/1/wrapper.pid" || fail "the slow helper did not run"
touch "$T/hide"
q2=$(c9 submit -- sh -c 'echo x >> "$0"' "$T/slow.q2") || fail "submit to st9"
wait_until 10 test -f "$T/st9/jobs/$q2/1/shepherd" || fail "the hiding helper did not record itself"
kill "$P9"; wait "$P9" 2>/dev/null
for q in "$q1" "$q2"; do
    wait_until 5 pid_gone "$(cat "$T/st9/jobs/$q/1/wrapper.pid")" ||
        fail "job $q's starting helper outlived carmad"
    [ -e "$T/st9/jobs/$q/1/shepherd" ] && fail "job $q's starting helper left its record"
done
"$CARMAD" --foreground --state "$T/st9" --socket "$T/st9.sock" --config "$T/carmad.ini" \
    --gpus sim:2xa100-40gb 2>>"$T/st9.log" 0<&- &
P9=$!
ON_EXIT="kill $P9 2>/dev/null"
wait_until 20 c9 gpus || fail "carmad did not restart on st9"
grep -q "2 never started (re-queued)" "$T/st9.log" || fail "not re-queued: $(tail -5 "$T/st9.log")"
for q in "$q1" "$q2"; do
    c9 wait --timeout 20 "$q" >/dev/null || fail "job $q after the restart: $(c9 show "$q")"
done
[ "$(cat "$T/slow.q1")" = x ] && [ "$(cat "$T/slow.q2")" = x ] ||
    fail "the jobs re-queued did not run once each"
kill "$P9"; wait "$P9" 2>/dev/null; ON_EXIT=
# a never-started attempt leaves no row behind: re-queued on a carmad that cannot run it
# yet (restarted on one GPU, held by a job re-adopted there), the job shows no attempt
touch "$T/gate-all"
"$CARMAD" --foreground --state "$T/st12" --socket "$T/st12.sock" --config "$T/carmad.ini" \
    --gpus sim:2xa100-40gb --shepherd "$T/slow.sh" 2>"$T/st12.log" 0<&- &
P12=$!
ON_EXIT="kill $P12 2>/dev/null"
c12() { CARMA_SOCKET="$T/st12.sock" "$CARMA" "$@"; }
wait_until 20 c12 gpus || fail "carmad on st12 did not start"
hb=$(c12 submit -- sh "$HELP/run_for.sh" 120) || fail "submit to st12"
wait_until 10 test -f "$T/st12/jobs/$hb/1/shepherd" || fail "st12's holder: $(c12 show "$hb")"
rm "$T/gate-all"
ns=$(c12 submit -- true) || fail "submit to st12"
wait_until 10 test -f "$T/st12/jobs/$ns/1/wrapper.pid" || fail "st12's gated helper did not run"
kill "$P12"; wait "$P12" 2>/dev/null
"$CARMAD" --foreground --state "$T/st12" --socket "$T/st12.sock" --config "$T/carmad.ini" \
    --gpus sim:1xa100-40gb 2>>"$T/st12.log" 0<&- &
P12=$!
ON_EXIT="kill $P12 2>/dev/null"
wait_until 20 c12 gpus || fail "carmad did not restart on st12"
grep -q "1 running re-adopted, 0 ended while down, 1 never started" "$T/st12.log" ||
    fail "st12 after the restart: $(grep -a reconciled "$T/st12.log")"
c12 show "$ns" >"$T/ns.show"
grep -q "^  state     queued" "$T/ns.show" && grep -q "^  attempts  0 of" "$T/ns.show" &&
    ! grep -q "^  #1 " "$T/ns.show" || fail "a never-started attempt: $(cat "$T/ns.show")"
c12 cancel "$ns" "$hb" >/dev/null || fail "cancel on st12"
kill "$P12"; wait "$P12" 2>/dev/null; ON_EXIT=
# and one that takes longer than carmad gives it is killed as soon as its deadline passes
# (not at carmad's next monitor tick, 30 s here), its job queued again, and launches paused
# (1, 2, 4, 8 s: each pause's end wakes carmad, not the tick); the fifth such start in a row
# fails its attempt with why
printf '[daemon]\nallow_root_jobs = true\nmonitor_interval = 30\n' >"$T/st10.ini"
c10() { CARMA_SOCKET="$T/st10.sock" "$CARMA" "$@"; }
CARMA_TEST_START_WAIT_MS=500 "$CARMAD" --foreground --state "$T/st10" --socket "$T/st10.sock" \
    --config "$T/st10.ini" --gpus sim:1xa100-40gb --shepherd "$T/slow.sh" 2>"$T/st10.log" 0<&- &
P10=$!
ON_EXIT="kill $P10 2>/dev/null"
wait_until 20 c10 gpus || fail "carmad with slow.sh did not start"
tid=$(c10 submit --max-attempts 1 -- touch "$T/slow.late") || fail "submit to st10"
# (the log read, not carma wait: a connection would wake carmad every second)
wait_until 25 grep -q "job $tid attempt 1: failed" "$T/st10.log"
c10 show "$tid" | grep -q "^  state     failed" || fail "a late helper's job, 25 s on: $(c10 show "$tid")"
c10 show "$tid" | grep -q "^  reason    attempt 1: its shepherd could not start (5 times in a row): the shepherd did not record itself within 0.5 s (exit 125)" ||
    fail "a late helper's job: $(c10 show "$tid")"
grep -q "cannot start its shepherd: the shepherd did not record itself within 0.5 s; queued again (4 in a row)" "$T/st10.log" &&
    grep -q "launches paused for 8 s" "$T/st10.log" || fail "a late helper: $(cat "$T/st10.log")"
wait_until 5 pid_gone "$(cat "$T/st10/jobs/$tid/1/wrapper.pid")" || fail "a late helper lives on"
touch "$T/st10/jobs/$tid/1/gate"
sleep 0.3
[ -e "$T/slow.late" ] && fail "a job ran behind a helper carmad gave up on"
kill "$P10"; wait "$P10" 2>/dev/null; ON_EXIT=
# a shepherd carmad cannot watch (its epoll set full: the test hook CARMA_TEST_WATCH_FAIL)
# ends its job, as for a cancel, rather than run it on GPUs given back with the failed attempt
CARMA_TEST_WATCH_FAIL=1 "$CARMAD" --foreground --state "$T/st11" --socket "$T/st11.sock" \
    --config "$T/carmad.ini" --gpus sim:1xa100-40gb 2>"$T/st11.log" 0<&- &
P11=$!
ON_EXIT="kill $P11 2>/dev/null"
wait_until 20 env CARMA_SOCKET="$T/st11.sock" "$CARMA" gpus || fail "carmad with CARMA_TEST_WATCH_FAIL did not start"
wid=$(CARMA_SOCKET="$T/st11.sock" "$CARMA" submit --max-attempts 1 -- sh -c 'sleep 30; touch "$0"' "$T/unwatched") ||
    fail "submit to st11"
CARMA_SOCKET="$T/st11.sock" "$CARMA" wait --timeout 20 "$wid" >/dev/null && fail "an unwatched job succeeded"
grep -q "job $wid: cannot start its shepherd: No space left on device" "$T/st11.log" ||
    fail "an unwatched job: $(cat "$T/st11.log")"
wait_until 10 grep -q "cancelled 1" "$T/st11/jobs/$wid/1/status" ||
    fail "the unwatched job's shepherd did not end it: $(cat "$T/st11/jobs/$wid/1/status" 2>&1)"
# (its command sleeps 30 s before it would leave a mark: what runs on is its session)
sid11=$(cut -d' ' -f1 "$T/st11/jobs/$wid/1/shepherd")
wait_until 10 sh -c "! pgrep -s $sid11" || fail "an unwatched job ran on: $(pgrep -a -s "$sid11")"
kill "$P11"; wait "$P11" 2>/dev/null; ON_EXIT=
# a cancel carmad recorded and answered but died before passing on (the test hook
# CARMA_TEST_DIE_AT_CANCEL): the restarted carmad passes it on to the re-adopted shepherd
c13() { CARMA_SOCKET="$T/st13.sock" "$CARMA" "$@"; }
CARMA_TEST_DIE_AT_CANCEL=1 "$CARMAD" --foreground --state "$T/st13" --socket "$T/st13.sock" \
    --config "$T/carmad.ini" --gpus sim:2xa100-40gb 2>"$T/st13.log" 0<&- &
P13=$!
ON_EXIT="kill $P13 2>/dev/null"
wait_until 20 c13 gpus || fail "carmad with CARMA_TEST_DIE_AT_CANCEL did not start"
kid=$(c13 submit -- sh -c 'echo up > "$0"; sleep 30; touch "$1"' "$T/st13.up" "$T/st13.ran") ||
    fail "submit to st13"
# and one that finishes by itself before the cancel reaches it: succeeded, as its shepherd says
fin=$(c13 submit -- sh -c 'echo up > "$0"; sleep 1' "$T/st13.fin") || fail "submit to st13"
wait_until 10 test -s "$T/st13.up" || fail "st13's job did not start"
wait_until 10 test -s "$T/st13.fin" || fail "st13's second job did not start"
c13 cancel "$kid" "$fin" >/dev/null || fail "st13: cancel refused"
wait "$P13" 2>/dev/null
[ -e "$T/st13/jobs/$kid/1/status" ] && fail "st13's job ended with carmad"
wait_until 10 test -e "$T/st13/jobs/$fin/1/status" || fail "st13's second job did not end by itself"
"$CARMAD" --foreground --state "$T/st13" --socket "$T/st13.sock" --config "$T/carmad.ini" \
    --gpus sim:2xa100-40gb 2>>"$T/st13.log" 0<&- &
P13=$!
ON_EXIT="kill $P13 2>/dev/null"
wait_until 20 c13 gpus || fail "carmad did not restart on st13"
wait_until 10 eval 'c13 show "$kid" | grep -q "^  state     cancelled"' ||
    fail "a cancel recorded before carmad died: $(c13 show "$kid")"
grep -q "job $kid: its cancel sent to its shepherd" "$T/st13.log" || fail "st13: $(tail -3 "$T/st13.log")"
# (its command sleeps 30 s before it would leave a mark: what runs on is its session)
sid13=$(cut -d' ' -f1 "$T/st13/jobs/$kid/1/shepherd")
wait_until 10 sh -c "! pgrep -s $sid13" ||
    fail "a job cancelled before carmad died ran on: $(pgrep -a -s "$sid13")"
c13 show "$fin" | grep -q "^  state     succeeded" ||
    fail "a job that finished before its cancel reached it: $(c13 show "$fin")"
kill "$P13"; wait "$P13" 2>/dev/null; ON_EXIT=
# a carma-shepherd carmad may not run: refused at start
cp "$CARMA_BIN/carma-shepherd" "$T/noexec" && chmod a-x "$T/noexec"
refused 1 "$T/noexec: Permission denied: carmad cannot run it" --foreground --state "$T/st8" \
    --socket "$T/st8.sock" --gpus sim:1xa100-40gb --shepherd "$T/noexec"
# and carma-shepherd itself tells it over that pipe (by hand: to whatever pipe is at 3)
_why=$("$CARMA_BIN/carma-shepherd" --carma-shepherd-v5 "$T" / x 0 root 0 0 0 1 3>&1 >/dev/null 2>&1 </dev/null) || true
[ "$_why" = "emalformed command line or job from carmad" ] || fail "the helper's reason over fd 3: '$_why'"
# another carmad's socket: refused before this state folder's jobs are reconciled
refused 1 "another carmad is listening" --foreground --state "$T/st3" --socket "$CARMA_SOCKET" \
    --gpus sim:1xa100-40gb
grep -q reconciled "$T/start.err" && fail "carmad reconciled before finding the socket taken"
refused 2 "path of 125 bytes; a Unix socket's is at most 107" --foreground --state "$T/st2" \
    --socket "/tmp/$(head -c 120 /dev/zero | tr '\0' a)" --gpus sim:1xa100-40gb
refused 2 "a port in \[1, 65535\] expected" --state "$T/st2" --socket "$T/s2.sock" \
    --gpus sim:1xa100-40gb --http 127.0.0.1:99999
printf '[daemon]\npolicy = auto\ngpus = sim:2xfoo\n' >"$T/bad.ini"
refused 2 "bad.ini:3: gpus: unknown GPU kind 'foo'" --foreground --state "$T/st2" \
    --socket "$T/s2.sock" --config "$T/bad.ini"
# an unknown policy is refused with the names known, on the command line and in the file
refused 2 "--policy orcale-ff: unknown policy (known: auto, exclusive, oracle-ff, " --foreground \
    --state "$T/st2" --socket "$T/s2.sock" --gpus sim:1xa100-40gb --policy orcale-ff
printf '[daemon]\npolicy = orcale-ff\n' >"$T/bad.ini"
refused 2 "bad.ini:2: unknown policy 'orcale-ff' (known: auto, exclusive, oracle-ff, .*, est-lug)" \
    --foreground --state "$T/st2" --socket "$T/s2.sock" --config "$T/bad.ini" --gpus sim:1xa100-40gb
printf 'policy = auto\n' >"$T/bad.ini"
refused 2 "bad.ini:1: 'policy' is outside any section" --foreground --state "$T/st2" \
    --socket "$T/s2.sock" --config "$T/bad.ini"
# ini_refused CONTENT PATTERN [GPUS]: carmad exits 2 on the configuration CONTENT (a
# printf format), saying PATTERN.
ini_refused() {
    printf "$1" >"$T/bad.ini"
    refused 2 "$2" --foreground --state "$T/st2" --socket "$T/s2.sock" --config "$T/bad.ini" \
        --gpus "sim:${3:-1xa100-40gb}"
}
# a header without its ']' is named at its line: even after another section, where inih
# reads on with the keys below it in the section before; after a byte order mark; with a
# ']' only in its comment
ini_refused '[daemon]\npolicy = auto\n[sharing\n\n\ndefault = mps\n' "bad.ini:3: section header without its '\\]'"
ini_refused '\357\273\277[daemon\npolicy = auto\n' "bad.ini:1: section header without its '\\]'"
ini_refused '[daemon]\npolicy = auto\n[sched ; see ]\nmax_attempts = 5\n' "bad.ini:3: section header without its '\\]'"
ini_refused '[daemon]\npolicy = auto\npolicy = exclusive\n' "bad.ini:3: 'policy' given twice in \\[daemon\\]"
# an indented line after a key is inih's continuation of it: said so, at its line (an
# indented section header too)
ini_refused '[daemon]\npolicy = auto\n    max_attempts = 5\n' "bad.ini:3: an indented line is read as more of 'policy' above"
ini_refused '[daemon]\npolicy = auto\n  [sched]\nmax_attempts = 5\n' "bad.ini:3: an indented line is read as more of 'policy' above"
ini_refused '[daemon]\npolicy = auto\n\f max_attempts = 5\n' "bad.ini:3: an indented line is read as more of 'policy' above"
ini_refused '[sharing]\n0 = mps\n\n; the third GPU\n3 = mps\n' "bad.ini:5: \\[sharing\\] '3' names no GPU of this server" 2xa100-40gb
# a long comment is not read in pieces, its tail a setting: the line is refused
printf '[daemon]\n; %s allow_root_jobs = true\npolicy = auto\n' "$(head -c 190 /dev/zero | tr '\0' x)" >"$T/bad.ini"
refused 2 "bad.ini:2: line longer than 199 bytes" --foreground --state "$T/st2" \
    --socket "$T/s2.sock" --config "$T/bad.ini" --gpus sim:1xa100-40gb
refused 2 "$T: not a regular file" --foreground --state "$T/st2" \
    --socket "$T/s2.sock" --config "$T" --gpus sim:1xa100-40gb

step "carma ls keeps its columns with non-ASCII names"
u=$(submit --name "$(printf 'caf\303\251-\303\274ber-long-name-here')" -- true)
"$CARMA" wait --timeout 20 "$u" >/dev/null || fail "job $u"
"$CARMA" ls --all | python3 -c '
import sys
rows = [l for l in sys.stdin.read().splitlines()[1:] if l.strip()]
cols = {l.index(" succeeded") for l in rows if " succeeded" in l}
assert len(cols) == 1, rows' || fail "ls columns: $("$CARMA" ls --all)"

step "bad input"
"$CARMA" show 999999 2>"$T/err"; [ $? = 2 ] || fail "unknown id: exit status"
grep -q "no job 999999" "$T/err" || fail "unknown id: message"
"$CARMA" cancel 999999 2>/dev/null; [ $? = 2 ] || fail "cancel of an unknown id"
# an unknown id after a running job's is said at once, not once that job ends
lw=$(submit -- sleep 30)
rc=0; timeout 10 "$CARMA" wait "$lw" 999999 >/dev/null 2>"$T/err" || rc=$?
[ "$rc" = 2 ] && grep -q "no job 999999" "$T/err" || fail "wait RUNNING UNKNOWN: exit $rc, $(cat "$T/err")"
"$CARMA" cancel "$lw" >/dev/null || fail "cancel $lw"
"$CARMA" submit 2>"$T/err"; [ $? = 2 ] || fail "submit without a command"
grep -q "no command" "$T/err" || fail "missing command message"
"$CARMA" submit -- /nonexistent/train.py 2>"$T/err"; [ $? = 2 ] || fail "missing executable"
grep -q "command not found" "$T/err" || fail "missing executable message: $(cat "$T/err")"
"$CARMA" submit -- /tmp 2>"$T/err"; [ $? = 2 ] || fail "a folder as the command"
grep -q "command not found or not executable: /tmp" "$T/err" || fail "a folder: $(cat "$T/err")"
# a working directory removed under the shell: no job can run there, as for one carmad
# finds missing (2), not a failure of carma or the server (1)
mkdir "$T/gone" && rc=0 && (cd "$T/gone" && rmdir "$T/gone" && "$CARMA" submit -- true) 2>"$T/err" || rc=$?
[ "$rc" = 2 ] && grep -q "cannot read the working directory: No such file or directory" "$T/err" ||
    fail "a removed working directory: exit $rc, $(cat "$T/err")"
rc=0; CARMA_TIMEOUT=soon "$CARMA" gpus 2>"$T/err" >/dev/null || rc=$?
[ "$rc" = 0 ] && grep -q "CARMA_TIMEOUT 'soon' is not a number of seconds" "$T/err" ||
    fail "a bad CARMA_TIMEOUT: exit $rc, $(cat "$T/err")"
"$CARMA" submit --mem lots -- true 2>/dev/null; [ $? = 2 ] || fail "bad --mem"
"$CARMA" submit --gpus 9 -- true 2>"$T/err"; [ $? = 2 ] || fail "more GPUs than the server has"
"$CARMA" submit --max-attempts 0 -- true 2>"$T/err"; [ $? = 2 ] || fail "--max-attempts 0"
grep -q "max-attempts must be an integer from 1 to 100, not '0'" "$T/err" ||
    fail "max-attempts message: $(cat "$T/err")"
"$CARMA" submit --batch 8 -- true 2>"$T/err"; [ $? = 2 ] || fail "--batch without --summary"
grep -q "needs --summary" "$T/err" || fail "batch message: $(cat "$T/err")"
printf 'not a model\n' >"$T/notes.txt"
"$CARMA" submit --summary "$T/notes.txt" --batch 8 -- true 2>"$T/err"; [ $? = 2 ] || fail "bad summary"
grep -q "notes.txt:1: not a model summary" "$T/err" || fail "summary message: $(cat "$T/err")"
"$CARMA" submit --name "$(printf 'a\tb')" -- true 2>"$T/err"; [ $? = 2 ] || fail "control character"
# bytes the protocol cannot carry are refused, not dropped or cut short
"$CARMA" submit --name "$(printf 'a\377b')" -- true 2>"$T/err"; [ $? = 2 ] &&
    grep -q "\-\-name: not valid UTF-8" "$T/err" || fail "a non-UTF-8 name: $(cat "$T/err")"
printf 'Net(\n  (fc): Linear(in_features=4, out_features=2, bias=True)\n)\n\000junk\n' >"$T/nul.txt"
"$CARMA" submit --summary "$T/nul.txt" --batch 8 -- true 2>"$T/err"; [ $? = 2 ] &&
    grep -q "nul.txt: holds a NUL byte" "$T/err" || fail "a summary with a NUL: $(cat "$T/err")"
mkdir "$T/$(printf 'd\377')"
(cd "$T/$(printf 'd\377')" && "$CARMA" submit -- true) 2>"$T/err"; [ $? = 2 ] &&
    grep -q "working directory's path is not valid UTF-8" "$T/err" || fail "a non-UTF-8 cwd: $(cat "$T/err")"
python3 - "$CARMA_SOCKET" <<'PY' || fail "malformed requests were not refused cleanly"
import json, socket, sys
def ask(raw):
    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(raw)
    buf = b""
    while not buf.endswith(b"\n"):
        b = s.recv(65536)
        if not b: break
        buf += b
    s.close(); return json.loads(buf) if buf else None
cases = [b"not json\n", b"[1,2]\n", b'{"v":1}\n', b'{"v":2,"op":"ls"}\n', b'{"v":1,"op":"nope"}\n',
         b'{"v":1,"op":"ls","extra":1}\n', b'{"v":1,"op":"submit","job":{"argv":[],"cwd":"/"}}\n',
         b'{"v":1,"op":"submit","job":{"argv":["true"],"cwd":"rel"}}\n',
         b'{"v":1,"op":"submit","job":{"argv":["true",5],"cwd":"/"}}\n',
         b'{"v":1,"op":"show","id":-1}\n', b'{"v":1,"op":"show","id":"1"}\n',
         b'{"v":1,"op":"ls","op":"ls"}\n', b'{"v":1,"op":"cancel","ids":[]}\n',
         b'{"v":1,"op":"submit","job":{"argv":["a\\u0000b"],"cwd":"/"}}\n']
for c in cases:
    r = ask(c)
    assert r and r["ok"] is False and r["error"] == "badrequest" and r["message"], (c, r)
try:   # an oversize line: refused, and the connection closed
    r = ask(b"x" * (1100 * 1024) + b"\n")
    assert r is None or r["ok"] is False, r
except (BrokenPipeError, ConnectionResetError):
    pass
assert ask(b'{"v":1,"op":"ping"}\n')["ok"] is True   # still alive
PY

if [ "$ROOT" = 1 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
    step "another user's job (client as nobody)"
    chmod 666 "$CARMA_SOCKET"
    nobody_client
    rc=0; (cd /tmp && as_nobody "$NB/carma" show "$long") 2>"$T/err" || rc=$?
    [ "$rc" = 1 ] || fail "nobody saw root's job (exit $rc: $(cat "$T/err"))"
    grep -q "another user" "$T/err" || fail "message for another user's job: $(cat "$T/err")"
    (cd /tmp && as_nobody "$NB/carma" cancel "$long") 2>/dev/null && fail "nobody cancelled root's job"
    is_state "$long" running || fail "root's job hurt by nobody's cancel"
    nj=$(cd /tmp && as_nobody "$NB/carma" submit -- id -u) || fail "nobody cannot submit"
    "$CARMA" wait --timeout 20 "$nj" >/dev/null || fail "nobody's job failed: $(state_of "$nj")"
    [ "$("$CARMA" logs "$nj")" = "$(id -u nobody)" ] || fail "nobody's job did not run as nobody"
    (cd /tmp && as_nobody "$NB/carma" ls --all) | grep -q " long " && fail "nobody lists root's jobs"
    # a socket in a folder another user owns is not carmad's: root's client does not talk to it
    mkdir "$T/evil" && python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' \
        "$T/evil/carmad.sock" && chown nobody "$T/evil"
    rc=0; CARMA_SOCKET="$T/evil/carmad.sock" "$CARMA" gpus 2>"$T/err" || rc=$?
    [ "$rc" = 1 ] && grep -q "not trusted: its folder $T/evil belongs to uid" "$T/err" ||
        fail "a socket in nobody's folder: exit $rc, $(cat "$T/err")"
    # nor does carmad listen there
    refused 1 "$T/evil/own.sock: not trusted: its folder $T/evil belongs to uid" --foreground \
        --state "$T/st3" --socket "$T/evil/own.sock" --config "$T/carmad.ini" --gpus sim:1xa100-40gb
    rm -rf "$NB"
else
    echo "(skipped: another user's job needs root and setpriv; covered by test_proto)"
fi

step "a CARMA .rad task file"
cat > "$T/task.rad" <<RAD
# assumption is that model.txt file is in this directory
conda activate tf
sh $HELP/run_for.sh 0
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
rad=$("$CARMA" submit-rad "$T/task.rad" 2>/dev/null) || fail "submit-rad refused"
"$CARMA" wait --timeout 20 "$rad" >/dev/null || fail "rad job: $(state_of "$rad")"
"$CARMA" show "$rad" | grep -q "memory 3934 MiB" || fail "rad memory not taken"
"$CARMA" ls --all | grep -q " task " || fail "rad job name"
printf 'only\ntwo\n' > "$T/bad.rad"
"$CARMA" submit-rad "$T/bad.rad" 2>/dev/null; [ $? = 2 ] || fail "malformed .rad accepted"
# a fractional GPU count, and a command that is not UTF-8, are named with their line
sed '8s/.*/1.5/' "$T/task.rad" > "$T/half.rad"
rc=0; "$CARMA" submit-rad "$T/half.rad" 2>"$T/err" || rc=$?
[ "$rc" = 2 ] && grep -q "half.rad:8: GPUs '1.5': not a whole number from 1 to 64" "$T/err" ||
    fail "a GPU count of 1.5: exit $rc, $(cat "$T/err")"
sed "3s/.*/echo caf$(printf '\351')/" "$T/task.rad" > "$T/latin1.rad"
rc=0; "$CARMA" submit-rad "$T/latin1.rad" 2>"$T/err" || rc=$?
[ "$rc" = 2 ] && grep -q "latin1.rad:3: the command is not UTF-8 text" "$T/err" ||
    fail "a Latin-1 command: exit $rc, $(cat "$T/err")"

step "SIGTERM stops carmad, jobs keep running, a restart re-adopts them"
lpid=$(shepherd_of "$long")
# carma wait and logs -f wait out the restart: the job goes on
"$CARMA" wait "$long" >"$T/wait.out" 2>"$T/wait.err" &
wpid=$!
"$CARMA" logs -f "$long" >"$T/logs.out" 2>"$T/logs.err" &
fpid=$!
# both have reached carmad before it stops: one whose first ask finds no carmad gives up
# at once. Each asks anew on a fresh connection, so no connection shows it: logs -f has
# printed the job's first line, and carma wait sleeps between its asks (the kernel's
# wchan: a nanosleep), which it does once it has had an answer
napping() { grep -q nanosleep "/proc/$1/wchan" 2>/dev/null; }
wait_until 30 test -s "$T/logs.out" || fail "carma logs -f did not reach carmad: $(cat "$T/logs.err")"
# (a kernel that does not name wait channels, wchan "0": a sleep of 2 s, the old guess)
sleep 5 &
nap=$!
if wait_until 5 napping "$nap"; then
    wait_until 30 napping "$wpid" ||
        fail "carma wait did not reach carmad: $(cat "/proc/$wpid/wchan" "$T/wait.err" 2>&1)"
else
    sleep 2
fi
kill "$nap" 2>/dev/null
stop_daemon TERM || fail "carmad did not exit cleanly on SIGTERM"
kill -0 "$lpid" || fail "the long job's shepherd died with carmad"
# the stop says what it leaves behind
grep -q "signal 15: stopping; 1 running job keeps running (carmad re-adopts them at its next start), 0 queued jobs wait for it" "$T/carmad.log" ||
    fail "the stop's log line: $(grep 'signal 15' "$T/carmad.log")"
sleep 0.5
start_daemon --gpus sim:4xa100-40gb
grep -q "1 running re-adopted" "$T/carmad.log" || fail "not re-adopted"
is_state "$long" running || fail "long job not running after the restart"
kill -0 "$wpid" || fail "carma wait gave up when carmad stopped: $(cat "$T/wait.err")"
"$CARMA" cancel "$long"
wait_until 10 is_state "$long" cancelled || fail "re-adopted job not cancelled"
rc=0; wait "$wpid" || rc=$?
[ "$rc" = 1 ] && grep -q "^$long cancelled" "$T/wait.out" ||
    fail "carma wait across the restart: exit $rc, $(cat "$T/wait.out" "$T/wait.err")"
grep -q "waiting up to 300 s for carmad to come back" "$T/wait.err" || fail "$(cat "$T/wait.err")"
rc=0; wait "$fpid" || rc=$?
[ "$rc" = 0 ] || fail "carma logs -f across the restart: exit $rc, $(cat "$T/logs.err")"
stop_daemon TERM || fail "second stop"

step "a job that ran out of memory alone on the V100 reruns on the A100"
rm -rf "$T/state"
start_daemon --gpus sim:1xv100-32gb,1xa100-40gb
cat > "$T/big.sh" <<'JOB'
#!/bin/sh
echo "$CUDA_VISIBLE_DEVICES" >> "$1"
case "$CUDA_VISIBLE_DEVICES" in
*-000000000000) echo "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.00 GiB." >&2
                exit 1 ;;
esac
JOB
big=$(submit -- sh "$T/big.sh" "$T/big.runs")
"$CARMA" wait --timeout 20 "$big" >/dev/null || fail "big job: $(state_of "$big"), ran on $(cat "$T/big.runs")"
[ "$(grep -c -- '-000000000000$' "$T/big.runs")" -le 1 ] || fail "reran on the V100: $(cat "$T/big.runs")"
stop_daemon TERM || fail "third stop"

step "a restart on fewer GPUs follows the jobs of the missing ones to their end"
rm -rf "$T/state"
start_daemon --gpus sim:4xa100-40gb
ids=""
for k in 1 2 3 4; do ids="$ids $(submit -- sh "$HELP/run_for.sh" 4)"; done
for id in $ids; do wait_until 10 is_state "$id" running || fail "job $id: $(state_of "$id")"; done
wide=$(submit --gpus 4 -- true)   # queued behind them; after the restart it can never run
after=$(submit -- true)
stop_daemon TERM || fail "stop before fewer GPUs"
start_daemon --gpus sim:2xa100-40gb
grep -q "GPUs are not this server's any more" "$T/carmad.log" || fail "no word of the missing GPUs"
grep -q "job $wide asks for 4 GPUs; this server has 2: failed" "$T/carmad.log" ||
    fail "the 4-GPU job: $(state_of "$wide")"
is_state "$wide" failed || fail "the 4-GPU job is $(state_of "$wide")"
# shellcheck disable=SC2086
"$CARMA" wait --timeout 30 $ids "$after" >/dev/null || fail "jobs of missing GPUs: $("$CARMA" ls --all)"
stop_daemon TERM || fail "fourth stop"

step "a 2-GPU job followed on 1 GPU after a restart is counted on both, as usage counts it"
rm -rf "$T/state"
start_daemon --gpus sim:2xa100-40gb
two=$(submit --gpus 2 -- sh "$HELP/run_for.sh" 3)
wait_until 10 is_state "$two" running || fail "2-GPU job: $(state_of "$two")"
shepherd_of "$two" >/dev/null || fail "2-GPU job: no shepherd" # started, not only placed
stop_daemon TERM || fail "stop before 1 GPU"
start_daemon --gpus sim:1xa100-40gb
"$CARMA" wait --timeout 20 "$two" >/dev/null || fail "2-GPU job after the restart: $(state_of "$two")"
"$CARMA" ls --all --json > "$T/ls2.json" && "$CARMA" usage --json > "$T/u2.json" || fail "ls/usage"
python3 - "$T/ls2.json" "$T/u2.json" "$two" <<'PY' || fail "2-GPU job on 1 GPU: $(cat "$T/ls2.json" "$T/u2.json")"
import json, sys
j = {j["id"]: j for j in json.load(open(sys.argv[1]))}[int(sys.argv[3])]
u = json.load(open(sys.argv[2]))["total"]
assert 2.5 < j["run_s"] < 10 and abs(j["gpu_seconds"] - 2 * j["run_s"]) < 1e-3, j
assert abs(u["gpu_seconds"] - j["gpu_seconds"]) < 1e-3, (u, j)
PY
stop_daemon TERM || fail "stop after 1 GPU"

step "a 2-GPU job whose shepherd never started fails after a restart on 1 GPU, not waits for ever"
# (as a queued one does: its attempt undone at the restart queues it again, where it
# could never start, its reason blaming drained GPUs that are not there)
rm -rf "$T/state" "$T/slowsh" && mkdir "$T/slowsh"
printf '#!/bin/sh\nsleep 5\nexec "%s" "$@"\n' "$CARMA_BIN/carma-shepherd" >"$T/slowsh/carma-shepherd"
chmod 755 "$T/slowsh/carma-shepherd"
start_daemon --gpus sim:2xa100-40gb --shepherd "$T/slowsh/carma-shepherd"
wide=$(submit --gpus 2 -- true)
wait_until 10 is_state "$wide" running || fail "2-GPU job: $(state_of "$wide")"
stop_daemon TERM || fail "stop before its shepherd started"
start_daemon --gpus sim:1xa100-40gb
is_state "$wide" failed || fail "2-GPU job never started, on 1 GPU: $("$CARMA" show "$wide")"
"$CARMA" show "$wide" | grep -q "reason    asks for 2 GPUs; this server has 1" ||
    fail "its reason: $("$CARMA" show "$wide")"
grep -q "job $wide asks for 2 GPUs; this server has 1: failed" "$T/carmad.log" || fail "not logged"
stop_daemon TERM || fail "stop"

step "carma report draws an attempt's bar on each of its GPUs"
rm -rf "$T/state"
start_daemon --gpus sim:8xa100-40gb
w8=$(submit --gpus 8 --mem 1G -- sleep 2)
"$CARMA" wait --timeout 20 "$w8" >/dev/null || fail "an 8-GPU job: $(state_of "$w8")"
sleep 1.5 # (its GPUs' records cover its run)
"$CARMA" report --since 5m --html "$T/r8.html" || fail "report"
[ "$(grep -o '<rect class="ok"' "$T/r8.html" | wc -l)" = 8 ] ||
    fail "an 8-GPU attempt drew $(grep -o '<rect class="ok"' "$T/r8.html" | wc -l) bars"
# a write that fails half way (a file size limit, as a full disk) leaves the old page as it
# was, and nothing beside it
mkdir "$T/rep"
cp "$T/r8.html" "$T/rep/r.html"
rc=0
(
    ulimit -f 1
    trap '' XFSZ
    exec "$CARMA" report --since 5m --html "$T/rep/r.html"
) 2>"$T/rep.err" || rc=$?
[ "$rc" = 1 ] && grep -q "File too large" "$T/rep.err" || fail "a report cut short: exit $rc, $(cat "$T/rep.err")"
cmp -s "$T/r8.html" "$T/rep/r.html" || fail "a failed carma report replaced the old page"
[ "$(ls -A "$T/rep")" = r.html ] || fail "files left beside the report: $(ls -A "$T/rep")"
# Ctrl-C while the page is written (SIGINT raised once the new file is made, at its
# fchmod: tests/fake/raiseat): carma report dies of it, as a shell loop expects, the old
# page as it was and nothing left beside it
rc=0
LD_PRELOAD="$CARMA_FAKE/raiseat/libraiseat.so" CARMA_FAKE_RAISE_SIG=2 \
    ASAN_OPTIONS="$PRELOAD_ASAN_OPTIONS" \
    "$CARMA" report --since 5m --html "$T/rep/r.html" 2>"$T/rep.err" || rc=$?
[ "$rc" = 130 ] || fail "carma report not ended by SIGINT: exit $rc, $(cat "$T/rep.err")"
cmp -s "$T/r8.html" "$T/rep/r.html" || fail "SIGINT: carma report replaced the old page"
[ "$(ls -A "$T/rep")" = r.html ] || fail "SIGINT: files left beside the report: $(ls -A "$T/rep")"
stop_daemon TERM || fail "stop after the report"

step "a job that ends before carmad watches its shepherd ends through the spawn's pidfd"
# (SIGCHLD is ignored: the kernel reaps such a shepherd at once, and a pidfd opened by pid
# after that could name another process; the hook widens the gap, which the pidfd opened
# at the spawn closes)
n0=$(wc -l <"$T/carmad.log") # (job ids of an earlier state folder recur in the log)
CARMA_TEST_WATCH_DELAY_MS=300 start_daemon --gpus sim:1xa100-40gb
quick=$(submit -- true)
"$CARMA" wait --timeout 20 "$quick" >/dev/null || fail "a job ended before it was watched: $(state_of "$quick")"
tail -n +"$((n0 + 1))" "$T/carmad.log" >"$T/quick.log"
grep -q "job $quick attempt 1 started (shepherd [0-9]*)\$" "$T/quick.log" ||
    fail "the quick job was not watched through its spawn's pidfd: $(grep "job $quick " "$T/quick.log")"
stop_daemon TERM || fail "fifth stop"
echo "daemon_basic: all passed"
