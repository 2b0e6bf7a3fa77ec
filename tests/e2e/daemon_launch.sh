#!/bin/sh
# The job launch path against its own user (audit 7): what the job's user controls
# (its log files, its processes) must not stall carmad or outlive the job.
. "$(dirname "$0")/helpers/daemon_lib.sh"

# carmad's own umask is not the one a job gets (the submitter's, else 022)
umask 027
start_daemon --gpus sim:2xa100-40gb
umask 022

step "a lease the job's user holds on its log stalls neither carmad nor carma logs"
# The job lets go of its logs, the lease is taken, then the job fails: carmad reads the
# tail of stderr at its end, which a blocking open does only after the lease break
# time (/proc/sys/fs/lease-break-time, 45 s), carmad's loop held all that time.
leased=$(submit --name leased -- sh -c 'exec >/dev/null 2>&1; while [ ! -e "$0" ]; do sleep 0.05; done; exit 3' "$T/go")
wait_until 10 is_state "$leased" running || fail "the job did not start"
python3 "$HELP/lease.py" "$T/state/jobs/$leased/1/stderr" "$T/leased" &
LEASE_PID=$!
ON_EXIT="kill $LEASE_PID 2>/dev/null"
wait_until 20 test -e "$T/leased" || fail "no lease taken on the job's stderr"
t0=$(date +%s)
touch "$T/go"
wait_until 10 is_state "$leased" failed || fail "the job did not end: $("$CARMA" show "$leased")"
CARMA_TIMEOUT=5 "$CARMA" gpus >/dev/null || fail "carmad did not answer within 5 s"
t1=$(date +%s)
[ $((t1 - t0)) -le 10 ] || fail "the job's end took $((t1 - t0)) s behind a lease on its log"
"$CARMA" show "$leased" | grep -q "stderr not read for an OOM message: another process holds a lease" ||
    fail "the reason does not say the log was not read: $("$CARMA" show "$leased" | grep reason)"
# root's carma logs reads another user's log the same way: at once, saying why not
t0=$(date +%s)
"$CARMA" logs "$leased" >/dev/null 2>"$T/logs.err" && fail "carma logs read a leased log"
t1=$(date +%s)
[ $((t1 - t0)) -le 5 ] || fail "carma logs took $((t1 - t0)) s behind a lease"
grep -q "holds a lease" "$T/logs.err" || fail "carma logs does not say why: $(cat "$T/logs.err")"
kill "$LEASE_PID"
wait "$LEASE_PID" 2>/dev/null
ON_EXIT=
"$CARMA" logs "$leased" >/dev/null || fail "carma logs once the lease is gone"

step "a shepherd keeps none of carmad's standard descriptors for its job's life"
# (in --foreground under a supervisor, a pipe: its reader would see no end while a job runs)
held=$(submit --name held -- sh -c 'echo up; exec sleep 30')
wait_until 10 grep -q up "$T/state/jobs/$held/1/stdout" || fail "the job did not start"
sp=$(shepherd_of "$held")
for fd in 0 1 2; do
    to=$(readlink "/proc/$sp/fd/$fd")
    [ "$to" = /dev/null ] || fail "the shepherd's descriptor $fd is $to, not /dev/null"
done
"$CARMA" cancel "$held" >/dev/null || fail "cancel"
wait_until 10 is_state "$held" cancelled || fail "the job was not cancelled"

step "a job runs with its submitter's umask, 022 when not sent; oom_score_adj 0"
# carmad's adjustment, which its shepherds inherit: a daemon's is often negative, which
# needs CAP_SYS_RESOURCE (not every test host gives it); a positive one is inherited the same
echo 500 > "/proc/$DPID/oom_score_adj" || fail "cannot set carmad's oom_score_adj"
um=$(umask 077 && submit --name umask -- sh -c 'umask; touch "$0"; stat -c %a "$0"; cat /proc/self/oom_score_adj' "$T/made")
"$CARMA" wait --timeout 10 "$um" >/dev/null || fail "the umask job: $("$CARMA" show "$um")"
out=$(tr '\n' ' ' < "$T/state/jobs/$um/1/stdout")
[ "$out" = "0077 600 0 " ] || fail "umask 077 and oom_score_adj 0 expected, the job said: $out"
raw=$(python3 - "$CARMA_SOCKET" "$HELP" <<'PY'
import sys
sys.dont_write_bytecode = True  # no __pycache__ in the tree
sys.path.insert(0, sys.argv[2])
from carmad_ask import submit
r = submit(sys.argv[1], {"argv": ["sh", "-c", "umask"], "cwd": "/", "env": {}})
assert r["ok"], r
print(r["id"])
PY
) || fail "a submission without umask"
"$CARMA" wait --timeout 10 "$raw" >/dev/null || fail "the job without umask: $("$CARMA" show "$raw")"
[ "$(cat "$T/state/jobs/$raw/1/stdout")" = 0022 ] ||
    fail "a job submitted without umask got $(cat "$T/state/jobs/$raw/1/stdout"), not 0022"

step "a shepherd killed without a status leaves nothing of its job running"
# (the job's processes would hold GPUs the scheduler hands to the next jobs)
orph=$(submit --name orphaned -- sh -c 'sleep 300 & echo $!; echo $$; wait')
wait_until 10 test -s "$T/state/jobs/$orph/1/stdout" || fail "the job did not start"
wait_until 10 sh -c '[ "$(wc -l < "$0")" -ge 2 ]' "$T/state/jobs/$orph/1/stdout" || fail "the job did not start"
jp=$(tr '\n' ' ' < "$T/state/jobs/$orph/1/stdout")
kill -KILL "$(shepherd_of "$orph")"
wait_until 10 is_state "$orph" lost || fail "the job is not lost: $(state_of "$orph")"
for p in $jp; do
    wait_until 5 pid_gone "$p" || fail "process $p of the job outlived its shepherd"
done
grep -q "job $orph: its shepherd .* ended without a status; killed 2 processes" "$T/carmad.log" ||
    fail "carmad did not log the processes it killed"

step "... and one that died while carmad was down: killed at the restart"
orph=$(submit --name orphaned2 -- sh -c 'echo $$; exec sleep 300')
wait_until 10 test -s "$T/state/jobs/$orph/1/stdout" || fail "the job did not start"
jp=$(cat "$T/state/jobs/$orph/1/stdout")
stop_daemon
kill -KILL "$(shepherd_of "$orph")"
sleep 0.2
kill -0 "$jp" || fail "the job ended with its shepherd (nothing to test)"
start_daemon --gpus sim:2xa100-40gb
wait_until 10 is_state "$orph" lost || fail "the job is not lost: $(state_of "$orph")"
wait_until 5 pid_gone "$jp" || fail "the job outlived its shepherd and carmad's restart"

stop_daemon

step "a helper that outlives its crashed carmad leaves the relaunched attempt alone"
# carmad is killed while the helper of a job's first attempt is held up before it records
# itself: the restarted carmad finds the attempt never started and launches it again, in
# the same folder. The first helper, let go afterwards, finds no carmad to hand over to;
# it must neither take the new helper's record nor remove its files (the new helper could
# then not write its status: the job would show running for ever, and be queued again,
# a second run, at the next restart).
cat >"$T/held.sh" <<EOF
#!/bin/sh
# the first helper waits for $T/let-go; the others run at once
if mkdir "$T/held" 2>/dev/null; then
    echo \$\$ > "$T/held/pid"
    while [ ! -e "$T/let-go" ]; do sleep 0.05; done
fi
exec "$CARMA_BIN/carma-shepherd" "\$@"
EOF
chmod +x "$T/held.sh"
start_daemon --gpus sim:1xa100-40gb --shepherd "$T/held.sh"
rl=$(submit --name relaunched -- sh -c 'while [ ! -e "$0" ]; do sleep 0.05; done; echo ran >> "$1"' "$T/rl.end" "$T/rl.out")
wait_until 10 test -s "$T/held/pid" || fail "the first helper did not start"
hp=$(cat "$T/held/pid")
sleep 0.3 # (the job's command handed over: carmad writes it at once)
stop_daemon KILL
start_daemon --gpus sim:1xa100-40gb --shepherd "$T/held.sh"
grep -q "1 never started (re-queued)" "$T/carmad.log" || fail "not re-queued: $(grep reconciled "$T/carmad.log")"
wait_until 10 test -s "$T/state/jobs/$rl/1/shepherd" || fail "the relaunched helper did not record itself"
sp=$(cut -d' ' -f1 "$T/state/jobs/$rl/1/shepherd")
[ "$sp" != "$hp" ] || fail "the held helper recorded itself"
touch "$T/let-go"
wait_until 10 pid_gone "$hp" || fail "the held helper did not end"
[ "$(cut -d' ' -f1 "$T/state/jobs/$rl/1/shepherd" 2>/dev/null)" = "$sp" ] ||
    fail "the relaunched helper's record is gone or replaced: $(cat "$T/state/jobs/$rl/1/shepherd" 2>&1)"
touch "$T/rl.end"
"$CARMA" wait --timeout 15 "$rl" >/dev/null || fail "the relaunched job: $("$CARMA" show "$rl")"
[ "$(cat "$T/rl.out")" = ran ] || fail "the job ran $(wc -l < "$T/rl.out") times"
stop_daemon
echo "PASS"
