#!/bin/sh
# A full disk: the store cannot grow (SQLite answers SQLITE_FULL, through the
# test hook CARMA_TEST_STORE_MAX_PAGES that caps the database's pages). The
# submission is refused with a clear error; the running job is untouched; carmad
# keeps answering.
. "$(dirname "$0")/helpers/daemon_lib.sh"

CARMA_TEST_STORE_MAX_PAGES=12 start_daemon --gpus sim:4xa100-40gb
step "a long job runs"
long=$(submit --name long -- sh "$HELP/run_for.sh" 60)
wait_until 10 is_state "$long" running || fail "long job not running"
lpid=$(shepherd_of "$long")

step "submissions until the store is full"
big=$(head -c 6000 /dev/zero | tr '\0' x)
i=0
refused=0
while [ $i -lt 200 ]; do
    # (jobs that do not end while the store is full: an end that cannot be stored is
    # retried in every later transaction, which the full store then fails whole, the
    # cancel below included; whether one such end came before the cancel was a race)
    if ! "$CARMA" submit -- sh -c 'sleep 300' "$big" 2>"$T/err" >/dev/null; then refused=1; break; fi
    i=$((i + 1))
done
[ "$refused" = 1 ] || fail "200 submissions fitted in a full store"
grep -qi "full" "$T/err" || fail "refusal does not say the store is full: $(cat "$T/err")"
echo "refused after $i submissions: $(cat "$T/err")"

step "running job untouched, carmad still answers"
kill -0 "$lpid" || fail "the running job's shepherd died"
is_state "$long" running || fail "the running job changed state"
"$CARMA" ls >/dev/null || fail "ls after the full disk"
"$CARMA" cancel "$long" || fail "cancel after the full disk"
wait_until 10 pid_gone "$lpid" || fail "cancel did not end the job"
stop_daemon

step "a job's end in a commit that fails is written again (not left running)"
# the test hook fails the first two commits that hold a job's end, as a full disk would
kill_jobs # (the jobs that filled the store: their state folder goes)
rm -rf "$T/state"
CARMA_TEST_END_COMMIT_FAILS=2 start_daemon --gpus sim:1xa100-40gb
e1=$(submit --name ends -- true)
"$CARMA" wait --timeout 20 "$e1" >/dev/null || fail "a job whose end's commit failed: $("$CARMA" show "$e1")"
# the failure logged once, then its end
[ "$(grep -c "test: a commit holding a job's end fails" "$T/carmad.log")" = 1 ] &&
    grep -q "store: commits succeed again, after 2 that failed" "$T/carmad.log" ||
    fail "the hook did not fail two commits: $(tail -5 "$T/carmad.log")"
"$CARMA" show "$e1" | grep -q "^  #1 .* succeeded" || fail "its attempt: $("$CARMA" show "$e1")"
e2=$(submit --name after -- true)
"$CARMA" wait --timeout 20 "$e2" >/dev/null || fail "a job after: $("$CARMA" show "$e2")"
stop_daemon

step "an end that fails at its job's row leaves no attempt ended under a running job"
# The test hook fails every write of a job's end at the job's row, after its attempt's
# row, as a full disk failing that one statement would (SQLite keeps the transaction).
# The iteration's commit then holds none of the end: killed before the end is written
# again, carmad leaves the job running with its attempt not ended, never the attempt
# ended (succeeded) under a running job; restarted, it ends both.
rm -rf "$T/state"
: > "$T/carmad.log" # (its job 1 is not the earlier steps')
CARMA_TEST_END_UPDATE_FAILS=99999 start_daemon --gpus sim:1xa100-40gb
h=$(submit --name half -- true)
wait_until 20 grep -q "job $h attempt 1: succeeded" "$T/carmad.log" || fail "job $h did not end"
grep -q "job $h: cannot record its end (test: the write of a job's end fails at its job's row)" \
    "$T/carmad.log" || fail "the hook did not fail the end: $(grep "job $h" "$T/carmad.log")"
# a submission is answered after its iteration's commit: the end's iteration committed
submit --name after -- true >/dev/null
stop_daemon KILL
# half_end DB: the jobs whose row says running while their last attempt has ended
half_end() {
    python3 - "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
for r in db.execute("SELECT j.id, a.outcome FROM jobs j JOIN attempts a ON a.job_id = j.id"
                    " AND a.n = j.attempts WHERE j.state = 'running' AND a.end_time IS NOT NULL"):
    print("job %d running, its attempt %s" % r)
PY
}
bad=$(half_end "$T/state/carma.db") && [ -z "$bad" ] || fail "after the kill: ${bad:-the store not read}"
python3 - "$T/state/carma.db" "$h" <<'PY' || fail "job $h in the store after the kill"
import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
row = db.execute("SELECT j.state, a.end_time FROM jobs j JOIN attempts a ON a.job_id = j.id"
                 " AND a.n = 1 WHERE j.id = ?", (int(sys.argv[2]),)).fetchone()
sys.exit(0 if row == ("running", None) else 1)
PY
start_daemon --gpus sim:1xa100-40gb
"$CARMA" wait --timeout 20 "$h" >/dev/null || fail "job $h after the restart: $("$CARMA" show "$h")"
"$CARMA" show "$h" | grep -q "^  #1 .* succeeded" || fail "its attempt: $("$CARMA" show "$h")"
bad=$(half_end "$T/state/carma.db") && [ -z "$bad" ] || fail "after the restart: ${bad:-the store not read}"
stop_daemon

step "a status the shepherd cannot write is tried again, not given up (job not lost)"
# the test hook fails the shepherd's first two tries, as a full disk or an I/O error would
rm -rf "$T/state"
CARMA_TEST_STATUS_FAILS=2 start_daemon --gpus sim:1xa100-40gb
s1=$(submit --name status-retried -- true)
"$CARMA" wait --timeout 30 "$s1" >/dev/null || fail "a job whose status failed twice: $("$CARMA" show "$s1")"
[ -f "$T/state/jobs/$s1/1/status" ] || fail "no status file"
[ ! -e "$T/state/jobs/$s1/1/.status.tmp" ] || fail "the reserved file is left behind"

step "a cancel its shepherd did not hear before the job ran out of memory: not retried"
# The job ends (a GPU OOM, which would be retried) and its shepherd is still writing the
# status (the hook's two failed tries: 3 s) when the cancel comes: carmad records and
# answers the cancel, and the shepherd, its job gone, says "cancelled 0". The attempt
# stays an OOM; the job must not run again.
c1=$(submit --name cancel-at-oom --max-attempts 3 -- sh "$HELP/oom_once.sh" "$T/oom-marker")
wait_until 10 grep -q OutOfMemoryError "$T/state/jobs/$c1/1/stderr" 2>/dev/null ||
    fail "the job did not run: $("$CARMA" show "$c1")"
is_state "$c1" running || fail "the job is not running while its status is written: $(state_of "$c1")"
"$CARMA" cancel "$c1" >/dev/null || fail "the cancel was refused"
"$CARMA" wait --timeout 30 "$c1" >/dev/null && fail "carma wait exits 0 for a cancelled job"
is_state "$c1" cancelled || fail "a cancelled job was retried: $("$CARMA" show "$c1")"
[ "$(outcomes "$c1")" = "oom" ] || fail "its attempts: $(outcomes "$c1")"
reason "$c1" | grep -q "GPU out of memory (.*), not retried: cancelled" ||
    fail "its reason: $(reason "$c1")"
[ ! -e "$T/state/jobs/$c1/2" ] || fail "a second attempt began"
stop_daemon

step "shepherds that cannot start: the jobs wait, launches pause, then each runs once"
# The test hook fails the next 3 shepherd starts as a full STATE/jobs would (ENOSPC):
# not the jobs' fault, so no job fails; carmad pauses its launches (1 s, then 2 s) and
# says why, and every job then runs with one attempt.
rm -rf "$T/state"
: > "$T/carmad.log"
CARMA_TEST_START_FAILS=3 start_daemon --gpus sim:2xa100-40gb
l1=$(submit --name paused-1 -- true)
wait_until 10 grep -q "cannot start shepherds (test: .*: No space left on device): launches paused for 1 s" \
    "$T/carmad.log" || fail "no pause after a failed start: $(tail -5 "$T/carmad.log")"
l2=$(submit --name paused-2 -- true)
l3=$(submit --name paused-3 -- true)
wait_until 10 grep -q "launches paused for 2 s" "$T/carmad.log" ||
    fail "the pause did not double: $(grep paused "$T/carmad.log")"
for j in $l1 $l2 $l3; do
    is_state "$j" queued && [ "$(attempts_of "$j")" = 0 ] ||
        fail "job $j while launches pause: $("$CARMA" show "$j")"
done
"$CARMA" show "$l3" | grep -q "^  waiting   paused: launches paused for [0-9]* s more: cannot start shepherds (test: .*No space left on device); then, [a-z_]*: " ||
    fail "a queued job's reason while launches pause: $("$CARMA" show "$l3")"
"$CARMA" ls | awk -v j="$l3" '$1 == j {print $NF}' | grep -qx paused ||
    fail "carma ls's reason while launches pause: $("$CARMA" ls)"
grep -q "job $l1: cannot start its shepherd: test: .*: No space left on device; queued again$" \
    "$T/carmad.log" || fail "the failed starts not logged: $(grep "job $l1" "$T/carmad.log")"
"$CARMA" wait --timeout 30 "$l1" "$l2" "$l3" >/dev/null ||
    fail "after the pause: $("$CARMA" ls --all)"
for j in $l1 $l2 $l3; do
    [ "$(outcomes "$j")" = succeeded ] || fail "job $j's attempts: $(outcomes "$j")"
done
stop_daemon

step "a full disk is never held against a job: 5 failed starts in a row, then it runs"
# (a job's own failures, 5 in a row, fail it: daemon_basic.sh's helper that misses its
# deadline)
rm -rf "$T/state"
: > "$T/carmad.log"
CARMA_TEST_START_FAILS=5 start_daemon --gpus sim:1xa100-40gb
g1=$(submit --name waits-out -- true)
# pauses of 1, 2, 4, 8 and 16 s between its six tries
"$CARMA" wait --timeout 90 "$g1" >/dev/null || fail "job $g1: $("$CARMA" show "$g1")"
[ "$(outcomes "$g1")" = succeeded ] || fail "its attempts: $(outcomes "$g1")"
[ "$(grep -c "launches paused for" "$T/carmad.log")" = 5 ] ||
    fail "pauses: $(grep "launches paused" "$T/carmad.log")"
grep -q "launches paused for 16 s" "$T/carmad.log" || fail "pauses: $(grep "launches paused" "$T/carmad.log")"
grep -q "job $g1: cannot start its shepherd: test: .*: No space left on device; queued again$" \
    "$T/carmad.log" || fail "the failed starts: $(grep "job $g1" "$T/carmad.log")"
stop_daemon

# A state folder on a file system of its own, so small that one job's log fills it:
# every job that ends meanwhile, another user's included, still records how it ended
# (its shepherd reserved the status file's space before the job ran).
if [ "$ROOT" = 1 ] && mkdir -p "$T/small" && mount -t tmpfs -o size=3m,mode=0700 tmpfs "$T/small" 2>/dev/null; then
    step "a log that fills the state file system loses no job's outcome"
    # at exit, its jobs too, every process of each shepherd's session (the common
    # cleanup looks under $T/state only)
    ON_EXIT="for f in '$T'/small/state/jobs/*/*/shepherd; do [ -f \"\$f\" ] && pkill -KILL -s \"\$(cut -d' ' -f1 \"\$f\")\"; done; umount -l '$T/small'"
    "$CARMAD" --foreground --state "$T/small/state" --socket "$CARMA_SOCKET" \
        --config "$T/carmad.ini" --gpus sim:2xa100-40gb 2>>"$T/carmad.log" 0<&- &
    DPID=$!
    wait_until 20 "$CARMA" gpus || fail "carmad did not start on the small file system"
    quiet=$(submit --name quiet -- sh -c 'while [ ! -e "$0" ]; do sleep 0.05; done; exit 0' "$T/go")
    filler=$(submit --name filler -- sh -c 'head -c 8000000 /dev/zero >&2; exit 0')
    wait_until 10 test -e "$T/small/state/jobs/$filler/1/status" || fail "the filler did not end"
    avail=$(df -P "$T/small" | awk 'NR == 2 {print $4}')
    [ "$avail" -lt 64 ] || fail "the file system is not full: $avail KiB left"
    touch "$T/go"
    wait_until 10 test -e "$T/small/state/jobs/$quiet/1/status" ||
        fail "the quiet job's status was not written on the full file system"
    # the administrator frees the space: carmad's commits that failed meanwhile go through
    : > "$T/small/state/jobs/$filler/1/stderr"
    "$CARMA" wait --timeout 20 "$quiet" "$filler" >/dev/null ||
        fail "outcomes: $("$CARMA" show "$quiet" | grep -E 'state|reason'); $("$CARMA" show "$filler" | grep -E 'state|reason')"
    stop_daemon
    umount "$T/small" && ON_EXIT=
else
    echo "(the full state file system: not root, or no tmpfs mount here; skipped)"
fi
echo "daemon_disk: all passed"
