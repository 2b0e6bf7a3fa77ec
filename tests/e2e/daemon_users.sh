#!/bin/sh
# A root carmad serving an ordinary user (nobody): what that user's jobs may not take from
# the others or from the host. Needs root, setpriv and the user nobody; skipped otherwise.
. "$(dirname "$0")/helpers/daemon_lib.sh"

if [ "$ROOT" != 1 ] || ! command -v setpriv >/dev/null || ! id nobody >/dev/null 2>&1; then
    echo "(skipped: daemon_users needs root, setpriv and the user nobody)"
    exit 0
fi
nobody_client

step "one user's active jobs are capped (max_jobs_per_user); root is not"
printf '[daemon]\nallow_root_jobs = true\nkill_grace = 1\nmonitor_interval = 0.2\nmax_jobs_per_user = 3\n' > "$T/carmad.ini"
start_daemon --gpus sim:1xa100-40gb
chmod 666 "$CARMA_SOCKET"
j1=$(as_nobody "$NB/carma" submit -- sleep 60) || fail "nobody's 1st job refused"
j2=$(as_nobody "$NB/carma" submit -- sleep 60) || fail "nobody's 2nd job refused"
j3=$(as_nobody "$NB/carma" submit -- sleep 60) || fail "nobody's 3rd job refused"
rc=0; as_nobody "$NB/carma" submit -- sleep 60 >/dev/null 2>"$T/err" || rc=$?
[ "$rc" = 1 ] && grep -q "has 3 active jobs (queued or running), the most max_jobs_per_user" "$T/err" ||
    fail "nobody's 4th active job: exit $rc, $(cat "$T/err")"
"$CARMA" submit -- true >/dev/null || fail "root refused while nobody is at its cap"
"$CARMA" cancel "$j3" >/dev/null || fail "cancel"
wait_until 10 is_state "$j3" cancelled || fail "nobody's job not cancelled"
j4=$(as_nobody "$NB/carma" submit -- sleep 60) || fail "nobody refused once a job of its ended"
"$CARMA" cancel "$j1" "$j2" "$j4" >/dev/null || fail "cancel"
stop_daemon

step "a job runs with its submitter's resource limits, not root carmad's"
# (the limits pam_limits would give a login; nobody's are set lower here than carmad's)
printf '[daemon]\nallow_root_jobs = true\nkill_grace = 1\nmonitor_interval = 0.2\n' > "$T/carmad.ini"
start_daemon --gpus sim:1xa100-40gb
chmod 666 "$CARMA_SOCKET"
j=$(as_nobody prlimit --nofile=77:77 --core=0:0 --nproc=500:600 "$NB/carma" submit -- \
    cat /proc/self/limits) || fail "nobody's job refused"
wait_until 20 is_state "$j" succeeded || fail "nobody's limits job: $(state_of "$j")"
L="$T/state/jobs/$j/1/stdout"
grep -Eq '^Max open files +77 +77 ' "$L" && grep -Eq '^Max core file size +0 +0 ' "$L" &&
    grep -Eq '^Max processes +500 +600 ' "$L" || fail "nobody's job has limits not its own: $(cat "$L")"
# root's own jobs keep carmad's
j=$(submit -- cat /proc/self/limits)
wait_until 20 is_state "$j" succeeded || fail "root's limits job: $(state_of "$j")"
[ "$(grep '^Max open files' "$T/state/jobs/$j/1/stdout")" = "$(grep '^Max open files' /proc/"$DPID"/limits)" ] ||
    fail "root's job: $(grep '^Max open files' "$T/state/jobs/$j/1/stdout")"
stop_daemon

step "a submitter carmad cannot see (carmad in a pid namespace of its own): carmad's limits"
if unshare -p -f -m --mount-proc true 2>/dev/null; then
    printf '[daemon]\nkill_grace = 1\nmonitor_interval = 0.2\n' > "$T/carmad.ini"
    unshare -p -f -m --mount-proc --kill-child=TERM "$CARMAD" --foreground --state "$T/state" \
        --socket "$CARMA_SOCKET" --config "$T/carmad.ini" --gpus sim:1xa100-40gb \
        2>>"$T/carmad.log" 0<&- &
    DPID=$!
    ON_EXIT="rm -rf $NB; kill -TERM \$(pgrep -P $DPID) 2>/dev/null" # unshare ignores TERM
    wait_until 20 "$CARMA" gpus || fail "carmad in a pid namespace did not start"
    chmod 666 "$CARMA_SOCKET"
    j=$(as_nobody "$NB/carma" submit -- true) || fail "nobody refused by a carmad that cannot see it"
    wait_until 20 is_state "$j" succeeded || fail "nobody's job: $(state_of "$j")"
    kill -TERM "$(pgrep -P "$DPID")" # carmad (unshare itself ignores TERM while it waits)
    wait "$DPID"
    DPID=
    ON_EXIT="rm -rf $NB"
else
    echo "   (skipped: no pid namespace here)"
fi

step "another user's job's working directory is not on any command line"
# (carma show keeps it from other users; the root shepherd's argv is world-readable)
printf '[daemon]\nkill_grace = 1\nmonitor_interval = 0.2\n' > "$T/carmad.ini"
start_daemon --gpus sim:1xa100-40gb
chmod 666 "$CARMA_SOCKET"
W="$NB/private-cwd-$$"
mkdir "$W" && chown nobody "$W" && chmod 700 "$W"
j=$(cd "$W" && setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups \
    env CARMA_SOCKET="$CARMA_SOCKET" "$NB/carma" submit -- sleep 30) || fail "nobody's job refused"
wait_until 10 is_state "$j" running || fail "nobody's job: $(state_of "$j")"
sp=$(shepherd_of "$j")
grep -q carma-shepherd /proc/"$sp"/cmdline || fail "no shepherd at $sp"
for c in /proc/[0-9]*/cmdline; do
    { tr '\0' ' ' < "$c"; } 2>/dev/null | grep -q "private-cwd-$$" && fail "$c: $(tr '\0' ' ' < "$c")"
done
wait_until 10 pgrep -s "$sp" -x sleep || fail "the job's sleep did not start"
[ "$(readlink /proc/"$(pgrep -s "$sp" -x sleep | head -1)"/cwd)" = "$W" ] || fail "the job is not in $W"
"$CARMA" cancel "$j" >/dev/null
wait_until 10 is_state "$j" cancelled || fail "not cancelled"
stop_daemon

step "a PATH through slow symbolic links does not hold carmad's loop"
# 40 links, each 4 KiB of "./" on to the next: one lookup through them takes milliseconds,
# and a PATH of 8000 such entries took carmad a minute's loop, everyone's, per request
start_daemon --gpus sim:1xa100-40gb
chmod 666 "$CARMA_SOCKET"
S="$NB/slow"
mkdir "$S" && chmod 755 "$S" || fail "mkdir $S"
pad=$(printf './%.0s' $(seq 1950))
k=0
while [ $k -lt 40 ]; do
    ln -s "$S/$pad/l$((k + 1))" "$S/l$k" || fail "link l$k"
    k=$((k + 1))
done
P=$(printf 'l0:%.0s' $(seq 8000))/bin
t0=$(date +%s)
j=$(cd "$S" && setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups \
    env CARMA_SOCKET="$CARMA_SOCKET" PATH="$P" "$NB/carma" submit -- true) ||
    fail "nobody's job with a slow PATH refused"
t=$(($(date +%s) - t0))
[ "$t" -le 5 ] || fail "carmad took $t s to look the command up along the slow PATH"
"$CARMA" cancel "$j" >/dev/null
wait_until 20 is_state "$j" cancelled || fail "not cancelled: $(state_of "$j")"
stop_daemon

# take_pid PID: a process of root's (its own session) given PID, freed just before, through
# ns_last_pid; v is its pid, or empty when another process took PID first.
take_pid() {
    v=
    for try in 1 2 3 4 5 6 7 8 9 10; do
        echo $(($1 - 1)) > /proc/sys/kernel/ns_last_pid
        setsid sleep 30 &
        v=$!
        [ "$v" = "$1" ] && break
        kill "$v"
        v=
    done
}
# hold_kills PID WHAT: strace holds each kill(2) of PID (WHAT, named if it fails) 3 s, from
# when it has attached; its pid in ST.
hold_kills() {
    strace -p "$1" -o /dev/null -e trace=kill -e inject=kill:delay_enter=3000000 2>/dev/null &
    ST=$!
    wait_until 10 sh -c "! grep -q '^TracerPid:[[:space:]]*0\$' /proc/$1/status" ||
        fail "strace did not attach to $2"
}
# spared WHAT: the process take_pid made is alive (then ended), or the check is said skipped.
spared() {
    if [ -n "$v" ]; then
        kill -0 "$v" 2>/dev/null || fail "root's process $v, given $1, was killed"
        kill "$v"
    else
        echo "   (skipped: pid $J went to another process)"
    fi
}

step "a job's group is killed before its pid is freed, not after (anyone's group then)"
# strace holds each kill(2) of the shepherd 3 s, and the job's pid, once free, is handed to
# a process of root's that leads a group: a kill of the job's group made after the job was
# reaped ends that group
if command -v strace >/dev/null && [ -w /proc/sys/kernel/ns_last_pid ] &&
    strace -o /dev/null -e trace=kill -e inject=kill:delay_enter=1 true 2>/dev/null; then
    start_daemon --gpus sim:1xa100-40gb
    chmod 666 "$CARMA_SOCKET"
    G="$NB/go-$$"
    j=$(as_nobody "$NB/carma" submit -- sh -c "echo \$\$; while [ ! -e $G ]; do sleep 0.05; done") ||
        fail "nobody's job refused"
    sp=$(shepherd_of "$j") || fail "no shepherd for job $j"
    wait_until 10 test -s "$T/state/jobs/$j/1/stdout" || fail "the job did not start"
    J=$(cat "$T/state/jobs/$j/1/stdout")
    hold_kills "$sp" "the shepherd"
    touch "$G"
    wait_until 10 test ! -e /proc/"$J" || fail "the job's process $J was not reaped"
    take_pid "$J"
    wait_until 20 is_state "$j" succeeded || fail "the job: $(state_of "$j")"
    spared "the job's freed pid"
    wait "$ST" 2>/dev/null
    stop_daemon
else
    echo "   (skipped: needs strace with delay injection and a writable ns_last_pid)"
fi

step "what a dead shepherd left is killed through pidfds: a pid freed meanwhile may be anyone's"
# strace holds each kill(2) of carmad 3 s; meanwhile the leftover it looked at ends, is reaped
# and its pid goes to a process of root's, which a kill by pid after the checks would end.
# carmad runs as a child subreaper, so that the job's processes orphaned by the shepherd's
# death are its children, reaped by the kernel at once (carmad ignores SIGCHLD), whatever
# this host's init does with them.
case $(uname -m) in x86_64) NR_KILL=62 ;; aarch64) NR_KILL=129 ;; *) NR_KILL= ;; esac
if [ -n "$NR_KILL" ] && command -v strace >/dev/null && [ -w /proc/sys/kernel/ns_last_pid ] &&
    strace -o /dev/null -e trace=kill -e inject=kill:delay_enter=1 true 2>/dev/null; then
    python3 -c 'import ctypes, os, sys
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0) == 0 or sys.exit("PR_SET_CHILD_SUBREAPER failed")
os.execv(sys.argv[1], sys.argv[1:])' "$CARMAD" --foreground --state "$T/state" \
        --socket "$CARMA_SOCKET" --config "$T/carmad.ini" --gpus sim:1xa100-40gb \
        2>>"$T/carmad.log" 0<&- &
    DPID=$!
    wait_until 20 "$CARMA" gpus || fail "carmad did not start"
    chmod 666 "$CARMA_SOCKET"
    j=$(as_nobody "$NB/carma" submit -- sh -c 'echo $$; exec sleep 300') || fail "nobody's job refused"
    sp=$(shepherd_of "$j") || fail "no shepherd for job $j"
    wait_until 10 test -s "$T/state/jobs/$j/1/stdout" || fail "the job did not start"
    J=$(cat "$T/state/jobs/$j/1/stdout")
    hold_kills "$DPID" carmad
    kill -KILL "$sp"
    # carmad is in its kill of the leftover, or done with it
    wait_until 10 sh -c "[ ! -e /proc/$J ] || [ \"\$(cut -d' ' -f1 /proc/$DPID/syscall)\" = $NR_KILL ]" ||
        fail "carmad did not kill what the shepherd left"
    kill -KILL "$J" 2>/dev/null
    wait_until 10 test ! -e /proc/"$J" || fail "the job's process $J was not reaped"
    take_pid "$J"
    wait_until 20 is_state "$j" lost || fail "the job: $(state_of "$j")"
    spared "a leftover's freed pid"
    kill "$ST" 2>/dev/null
    wait "$ST" 2>/dev/null
    stop_daemon
else
    echo "   (skipped: needs x86_64 or aarch64, strace with delay injection and a writable ns_last_pid)"
fi

step "a re-adopted shepherd is watched through a pidfd checked after its open: its pid may be anyone's"
# strace holds the restarted carmad's pidfd_open 3 s, right after it found the shepherd alive;
# meanwhile the job ends, its shepherd writes its status and ends, and its pid goes to a
# process of root's: a pidfd opened then is that process's, and the job's cancel would
# signal it
if command -v strace >/dev/null && [ -w /proc/sys/kernel/ns_last_pid ] &&
    strace -o /dev/null -e trace=pidfd_open -e inject=pidfd_open:delay_enter=1 true 2>/dev/null; then
    printf '[daemon]\nkill_grace = 1\nmonitor_interval = 0.2\n' > "$T/carmad.ini"
    start_daemon --gpus sim:1xa100-40gb
    chmod 666 "$CARMA_SOCKET"
    G="$NB/go-readopt-$$"
    j=$(as_nobody "$NB/carma" submit -- sh -c "while [ ! -e $G ]; do sleep 0.05; done") ||
        fail "nobody's job refused"
    sp=$(shepherd_of "$j") || fail "no shepherd for job $j"
    stop_daemon
    wait "$DPID" 2>/dev/null
    strace -o /dev/null -e trace=pidfd_open -e inject=pidfd_open:delay_enter=3000000 \
        "$CARMAD" --foreground --state "$T/state" --socket "$CARMA_SOCKET" \
        --config "$T/carmad.ini" --gpus sim:1xa100-40gb 2>>"$T/carmad.log" 0<&- &
    STR=$!
    wait_until 10 sh -c "pgrep -P $STR >/dev/null" || fail "carmad did not start under strace"
    DPID=$(pgrep -P "$STR")
    # (434: pidfd_open on x86_64 and aarch64 alike)
    wait_until 10 sh -c "[ \"\$(cut -d' ' -f1 /proc/$DPID/syscall 2>/dev/null)\" = 434 ]" ||
        fail "carmad did not open a pidfd for the shepherd it found"
    touch "$G"
    wait_until 10 test ! -e /proc/"$sp" || fail "the shepherd $sp did not end"
    take_pid "$sp"
    wait_until 20 "$CARMA" gpus || fail "carmad did not start"
    chmod 666 "$CARMA_SOCKET"
    as_nobody "$NB/carma" cancel "$j" >/dev/null || fail "nobody's cancel refused"
    sleep 0.5
    # (spared's kill -0 passes on a zombie: this shell's child is reaped only later)
    if [ -n "$v" ]; then
        ! pid_gone "$v" || fail "root's process $v, given the shepherd's pid, was signalled"
        kill "$v"
    else
        echo "   (skipped: pid $sp went to another process)"
    fi
    wait_until 20 is_state "$j" succeeded || fail "the job: $(state_of "$j")"
    stop_daemon
    wait "$STR" 2>/dev/null
else
    echo "   (skipped: needs strace with delay injection and a writable ns_last_pid)"
fi

step "a user's job has a session keyring of its own, not carmad's (systemd gives carmad one)"
# carmad starts in a session keyring holding a key of root's, as KeyringMode=private (the
# default of a system service) gives it one: a user's job that kept it would read that key,
# and whatever one user's job adds there (a Kerberos KEYRING: cache) the next user's would
PY=$(as_nobody sh -c 'command -v python3') || PY=
cp "$HELP/keyring.py" "$NB/keyring.py" && chmod 644 "$NB/keyring.py"
if [ -n "$PY" ] && python3 "$HELP/keyring.py" join carma-probe x true 2>/dev/null; then
    printf '[daemon]\nallow_root_jobs = true\nkill_grace = 1\nmonitor_interval = 0.2\n' > "$T/carmad.ini"
    python3 "$HELP/keyring.py" join carmad-secret root-only "$CARMAD" --foreground \
        --state "$T/state" --socket "$CARMA_SOCKET" --config "$T/carmad.ini" \
        --gpus sim:1xa100-40gb 2>>"$T/carmad.log" 0<&- &
    DPID=$!
    wait_until 20 "$CARMA" gpus || fail "carmad did not start"
    chmod 666 "$CARMA_SOCKET"
    j=$(as_nobody "$NB/carma" submit -- "$PY" "$NB/keyring.py" read carmad-secret) ||
        fail "nobody's job refused"
    wait_until 20 is_state "$j" failed || fail "nobody read carmad's key: $(state_of "$j"), $(cat "$T/state/jobs/$j/1/stdout")"
    grep -q "no key carmad-secret" "$T/state/jobs/$j/1/stdout" ||
        fail "nobody's job: $(cat "$T/state/jobs/$j/1/stdout" "$T/state/jobs/$j/1/stderr")"
    j=$(as_nobody "$NB/carma" submit -- "$PY" "$NB/keyring.py" add nobody-secret token) ||
        fail "nobody's job refused"
    wait_until 20 is_state "$j" succeeded || fail "nobody's key job: $(state_of "$j"), $(cat "$T/state/jobs/$j/1/stderr")"
    j=$(submit -- "$PY" "$NB/keyring.py" read nobody-secret)
    wait_until 20 is_state "$j" failed || fail "root's next job read nobody's key: $(state_of "$j"), $(cat "$T/state/jobs/$j/1/stdout")"
    j=$(submit -- "$PY" "$NB/keyring.py" read carmad-secret) # root's own job: carmad's, as before
    wait_until 20 is_state "$j" succeeded || fail "root's job lost carmad's keyring: $(cat "$T/state/jobs/$j/1/stdout")"
    stop_daemon
else
    echo "   (skipped: needs python3 for nobody and session keyrings)"
fi

echo "PASS daemon_users"
