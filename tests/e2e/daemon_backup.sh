#!/bin/sh
# Backing up the state folder while carmad runs, and putting the copy back
# (docs/daemon.md, "Backing up and restoring the state folder"): the online copy of the
# store, the start refused while jobs/ holds folders the copy does not know, the
# message's way out (those folders moved away), and the copy's jobs as they were:
# the finished ones kept, the running one re-adopted.
. "$(dirname "$0")/helpers/daemon_lib.sh"
S="$T/state"

step "an online copy of the store while a job runs"
start_daemon --gpus sim:2xa100-40gb
a=$(submit -- sleep 60)
b=$(submit -- echo before-the-copy)
"$CARMA" wait "$b" >/dev/null || fail "job $b did not succeed"
wait_until 20 is_state "$a" running || fail "job $a not running"
spid=$(shepherd_of "$a") || fail "no shepherd for job $a"
python3 -c '
import sqlite3, sys
src = sqlite3.connect(sys.argv[1])
dst = sqlite3.connect(sys.argv[2])
src.backup(dst)
dst.close(); src.close()' "$S/carma.db" "$T/carma.db.copy" || fail "the online copy failed"
c=$(submit -- echo after-the-copy)
"$CARMA" wait "$c" >/dev/null || fail "job $c did not succeed"
stop_daemon || fail "carmad did not stop cleanly"

step "the copy put back: refused while jobs/ holds the folders of jobs it does not know"
cp "$T/carma.db.copy" "$S/carma.db"
rm -f "$S/carma.db-wal" "$S/carma.db-shm"
carmad_fails 1 "knows jobs up to $b but $S/jobs holds job folders up to $c" \
    --state "$S" --socket "$CARMA_SOCKET"
grep -q "to keep this copy, move the folders of the jobs it does not know, jobs/$c to jobs/$c, out of jobs/" "$T/err" ||
    fail "no way to keep the copy: $(cat "$T/err")"

step "those folders moved away: the copy's jobs as they were"
mkdir "$T/aside" && mv "$S/jobs/$c" "$T/aside/" || fail "mv"
start_daemon --gpus sim:2xa100-40gb
is_state "$b" succeeded || fail "job $b: $(state_of "$b")"
is_state "$a" running || fail "job $a not re-adopted: $(state_of "$a")"
grep -q "job $a: re-adopted its running shepherd $spid" "$T/carmad.log" || fail "job $a not re-adopted"
"$CARMA" show "$c" >/dev/null 2>&1 && fail "job $c known to the copy"
d=$(submit -- echo after-the-restore)
[ "$d" = "$c" ] || fail "the next job is $d, not $c"
"$CARMA" wait "$d" >/dev/null || fail "job $d did not succeed"
[ "$("$CARMA" logs "$d")" = after-the-restore ] || fail "job $d's log: $("$CARMA" logs "$d")"
"$CARMA" cancel "$a" >/dev/null || fail "cancel $a"
wait_until 20 is_state "$a" cancelled || fail "job $a not cancelled"
stop_daemon || fail "carmad did not stop cleanly"
echo "daemon_backup: ok"
