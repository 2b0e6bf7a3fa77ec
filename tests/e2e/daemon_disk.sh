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
lpid=$(cut -d' ' -f1 "$T/state/jobs/$long/1/shepherd")

step "submissions until the store is full"
big=$(head -c 6000 /dev/zero | tr '\0' x)
i=0
refused=0
while [ $i -lt 200 ]; do
    if ! "$CARMA" submit -- true "$big" 2>"$T/err" >/dev/null; then refused=1; break; fi
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
echo "daemon_disk: all passed"
