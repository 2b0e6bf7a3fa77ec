#!/bin/sh
# job_retention_days removes a final job's log folder (STATE/jobs/ID) with the job, on
# simulated GPUs:
#  - the folders of the jobs the store deleted go; a running job's and the newest job's
#    (kept: no id is given again) stay;
#  - a symbolic link planted in a removed job's folder, to a file or a folder outside
#    STATE, is removed as a link: what it names is untouched;
#  - a folder that cannot be removed whole (content deeper than an attempt folder's) is
#    logged and left, and neither the job's deletion nor the other folders' removal
#    stops for it;
#  - a folder of a job the store no longer holds (carmad stopped between the deletion
#    and the removal) goes at the next start.
. "$(dirname "$0")/helpers/daemon_lib.sh"
up() { start_daemon --gpus sim:4xa100-40gb; }
J="$T/state/jobs"
started() { test -s "$J/$1/1/shepherd"; }
up

step "jobs that end, one that keeps running, and the newest"
a=$(submit -- sh -c 'echo out-a; echo err-a >&2')
b=$(submit -- true)
c=$(submit -- true)
"$CARMA" wait --timeout 20 "$a" "$b" "$c" >/dev/null || fail "jobs $a $b $c did not end"
r=$(submit -- sleep 300)
wait_until 10 started "$r" || fail "job $r did not start"
k=$(submit -- true)
"$CARMA" wait --timeout 20 "$k" >/dev/null || fail "job $k did not end"
for j in "$a" "$b" "$c" "$k"; do
    [ -d "$J/$j/1" ] || fail "no folder for job $j"
done

step "links planted in a job's folders, to a file and a folder outside STATE"
echo precious >"$T/outside"
mkdir "$T/outdir" && echo precious >"$T/outdir/f"
ln -s "$T/outside" "$J/$a/1/planted"
ln -s "$T/outdir" "$J/$a/1/planted-dir"
ln -s "$T/outdir" "$J/$b/2"
# content deeper than carmad goes: the folder is left, said once
mkdir -p "$J/$c/1/x/y/z" && echo deep >"$J/$c/1/x/y/z/f"

step "job_retention_days: the removed jobs' folders go, the kept ones stay"
stop_daemon TERM
sed -i 's/^\[daemon\]$/[daemon]\njob_retention_days = 0.00001/' "$T/carmad.ini"
sleep 1
up
wait_until 10 sh -c "! \"$CARMA\" show $a" || fail "job $a kept past the retention"
wait_until 10 sh -c "! test -e \"$J/$a\" && ! test -e \"$J/$b\"" ||
    fail "the folders of removed jobs are left: $(ls -la "$J/$a" "$J/$b" 2>&1)"
"$CARMA" show "$c" >/dev/null 2>&1 && fail "job $c kept: its folder's content stopped the prune"
[ "$(cat "$T/outside")" = precious ] || fail "a planted link's target file was touched"
[ "$(cat "$T/outdir/f" 2>/dev/null)" = precious ] || fail "a planted link's target folder was touched"
[ -d "$J/$r/1" ] && [ -s "$J/$r/1/shepherd" ] || fail "the running job $r lost its folder"
is_state "$r" running || fail "job $r: $(state_of "$r"), not running"
[ -f "$J/$k/1/status" ] || fail "the newest job $k (kept) lost its folder"
"$CARMA" show "$k" >/dev/null || fail "the newest job $k is removed"
wait_until 10 grep -q "log folders of removed jobs removed, 1 left" "$T/carmad.log" ||
    fail "the removal not logged"
grep -q "the log folder of removed job $c is left: .*jobs/$c/1/x/y: a folder deeper" \
    "$T/carmad.log" || fail "the folder left not logged"
[ -f "$J/$c/1/x/y/z/f" ] || fail "content below the depth was entered"
[ -e "$J/$c/1/stdout" ] && fail "job $c's logs kept"

step "a folder of a job no longer in the store goes at the next start"
stop_daemon TERM
mkdir -p "$J/$a/1" && echo out-a >"$J/$a/1/stdout" # as if carmad died before removing it
rm -rf "$J/$c/1/x"
up
wait_until 10 sh -c "! test -e \"$J/$a\" && ! test -e \"$J/$c\"" ||
    fail "folders of jobs the store does not hold are left: $(ls -la "$J" 2>&1)"
grep -q "retention: 2 log folders of jobs no longer in the store" "$T/carmad.log" ||
    fail "the sweep not logged"
[ -d "$J/$r/1" ] && [ -d "$J/$k/1" ] || fail "a kept job's folder was swept"
is_state "$r" running || fail "job $r: $(state_of "$r"), not running"

step "the folder of a running job the store lost (a store rebuilt by .recover) stays"
stop_daemon TERM
python3 -c 'import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for t in ("usage", "attempts"):
    db.execute("DELETE FROM %s WHERE job_id = ?" % t, (int(sys.argv[2]),))
db.execute("DELETE FROM jobs WHERE id = ?", (int(sys.argv[2]),))
db.commit()' "$T/state/carma.db" "$r" || fail "cannot remove job $r's rows"
up
wait_until 10 grep -q "jobs/$r: the store does not know this job, but its shepherd .* still runs" \
    "$T/carmad.log" || fail "the live shepherd of job $r not said: $(grep retention "$T/carmad.log")"
sleep 1 # the removal runs in the iterations after the start
[ -d "$J/$r/1" ] && [ -s "$J/$r/1/shepherd" ] || fail "the folder of running job $r was swept"
pkill -KILL -s "$(cut -d' ' -f1 "$J/$r/1/shepherd")"
stop_daemon TERM
echo "daemon_retention: ok"
