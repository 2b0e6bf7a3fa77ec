#!/bin/sh
# An upgrade that migrates the store keeps a copy of it at the old schema version
# (docs/daemon.md, "Upgrading, and going back"): a copy that cannot be written (a folder
# at its name) refuses the start with the store left as it was, the copy then made is
# private and holds the old version and its jobs, the start log says so, a later
# migration keeps it, and the rollback (the copy moved over carma.db) runs.
. "$(dirname "$0")/helpers/daemon_lib.sh"
S="$T/state"
# ver FILE [SQL]: PRAGMA user_version of FILE (set to SQL's first)
ver() {
    python3 -c '
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
if len(sys.argv) > 2:
    c.execute(sys.argv[2]); c.commit()
print(c.execute("PRAGMA user_version").fetchone()[0])
c.close()' "$@"
}

step "a store of the carmad before (its version number lowered to 18)"
start_daemon --gpus sim:2xa100-40gb
a=$(submit -- echo before-the-upgrade)
"$CARMA" wait "$a" >/dev/null || fail "job $a did not succeed"
stop_daemon || fail "carmad did not stop cleanly"
[ ! -e "$S/carma.db.v0" ] || fail "a copy of the new store"
cur=$(ver "$S/carma.db") || fail "no version"
[ "$(ver "$S/carma.db" "PRAGMA user_version=18")" = 18 ] || fail "version not lowered"

step "a folder at the copy's name: the start refused, the store as it was"
mkdir "$S/carma.db.v18"
carmad_fails 1 "$S/carma.db stays at schema version 18, not migrated: the copy of it kept before a migration (for going back to the carmad before), $S/carma.db.v18, cannot be written (it exists and is not a regular file); move it aside" \
    --state "$S" --socket "$CARMA_SOCKET"
[ "$(ver "$S/carma.db")" = 18 ] || fail "the store migrated without its copy"
rmdir "$S/carma.db.v18"

step "the upgrade: the copy made, private, at version 18 with the jobs"
start_daemon --gpus sim:2xa100-40gb
grep -q "$S/carma.db: copied to $S/carma.db.v18 (schema v18) before its migration to v$cur" "$T/carmad.log" ||
    fail "no word of the copy: $(cat "$T/carmad.log")"
[ "$(stat -c %a "$S/carma.db.v18")" = 600 ] || fail "the copy's mode: $(stat -c %a "$S/carma.db.v18")"
[ "$(stat -c %u:%g "$S/carma.db.v18")" = "$(stat -c %u:%g "$S/carma.db")" ] || fail "the copy's owner"
[ "$(ver "$S/carma.db.v18")" = 18 ] || fail "the copy's version: $(ver "$S/carma.db.v18")"
b=$(submit -- echo after-the-upgrade)
"$CARMA" wait "$b" >/dev/null || fail "job $b did not succeed"
stop_daemon || fail "carmad did not stop cleanly"

step "a second migration keeps the first copy"
ver "$S/carma.db" "PRAGMA user_version=18" >/dev/null
start_daemon --gpus sim:2xa100-40gb
grep -q "$S/carma.db: migrated from schema v18 to v$cur with no new copy: $S/carma.db.v18, an older copy, is kept" "$T/carmad.log" ||
    fail "no word of the copy kept: $(tail -n 5 "$T/carmad.log")"
python3 -c '
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
n = c.execute("SELECT count(*) FROM jobs").fetchone()[0]
assert n == 1, n' "$S/carma.db.v18" || fail "the copy overwritten"
stop_daemon || fail "carmad did not stop cleanly"

step "going back: the copy moved over carma.db (no -wal or -shm beside it)"
[ ! -e "$S/carma.db-wal" ] && [ ! -e "$S/carma.db-shm" ] || fail "a -wal or -shm after a clean stop"
mv "$S/carma.db" "$T/carma.db.new" && mv "$S/carma.db.v18" "$S/carma.db" || fail "mv"
mv "$S/jobs/$b" "$T/" || fail "mv jobs/$b"
start_daemon --gpus sim:2xa100-40gb
is_state "$a" succeeded || fail "job $a: $(state_of "$a")"
"$CARMA" show "$b" >/dev/null 2>&1 && fail "job $b known to the copy"
stop_daemon || fail "carmad did not stop cleanly"
echo "daemon_upgrade: ok"
