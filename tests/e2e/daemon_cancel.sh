#!/bin/sh
# Jobs in bulk, for scripts and administrators: `carma ls -q` prints the ids alone; `carma
# cancel --all` cancels every queued and running job of the caller in one request, narrowed
# by --queued / --running / --name, root naming whose (--user NAME or --all-users: a bare
# --all from root is refused), another user's jobs untouched by a user's --all; no match
# is said and exits 0; ids with --all and filters without it are refused.
. "$(dirname "$0")/helpers/daemon_lib.sh"
# a summary's estimate waits until $T/go exists (a submission carmad has not recorded yet)
export CARMA_TEST_ESTIMATE_HOLD="$T/go"
SUM=$(cd "$(dirname "$0")/../.." && pwd)/data/estimator/cifar-summaries/resnet18cifar100_32.model
[ -f "$SUM" ] || fail "missing $SUM"
# one GPU, one job at a time: the first runs, the others wait
start_daemon --gpus sim:1xa100-40gb --policy exclusive
refused() { # EXPECTED-MESSAGE ARGS...: carma ARGS exits 2 saying EXPECTED-MESSAGE
    _m=$1; shift
    _rc=0; "$CARMA" "$@" >"$T/p.out" 2>"$T/p.err" || _rc=$?
    [ "$_rc" = 2 ] && grep -q -- "$_m" "$T/p.err" || fail "carma $*: exit $_rc, $(cat "$T/p.err")"
}
# the states of jobs $@, space-separated
states() { for _j in "$@"; do printf '%s ' "$(state_of "$_j")"; done; }
lines() { printf '%s\n' "$@"; }

step "ls -q: the ids alone, one a line, no header; --all adds the ended ones"
d=$(submit -- true)
"$CARMA" wait "$d" >/dev/null || fail "job $d"
a=$(submit -- sleep 60); b=$(submit -- sleep 60); c=$(submit -- sleep 60)
[ "$("$CARMA" ls -q)" = "$(lines "$a" "$b" "$c")" ] || fail "ls -q: $("$CARMA" ls -q)"
[ "$("$CARMA" ls --quiet --all)" = "$(lines "$d" "$a" "$b" "$c")" ] ||
    fail "ls --quiet --all: $("$CARMA" ls --quiet --all)"
refused "-q (ids alone) and --json (every field) exclude each other" ls -q --json
# for scripts: what it prints, carma cancel takes
"$CARMA" ls -q | xargs "$CARMA" cancel || fail "ls -q | xargs cancel"
wait_until 10 sh -c "[ -z \"\$('$CARMA' ls -q)\" ]" || fail "left after ls -q | xargs cancel: $("$CARMA" ls)"

step "cancel --all: refusals before anything is sent"
refused "job ids and --all exclude each other" cancel 3 --all
refused "they need --all" cancel --queued
refused "they need --all" cancel 3 --name x
refused "--queued and --running: give one" cancel --all --queued --running
refused "--user and --all-users exclude each other" cancel --all --user root --all-users
refused "--name '': 1 to 128 bytes expected" cancel --all --name ""
refused "--user '': 1 to 64 bytes expected" cancel --all --user=

step "root's bare --all is refused: it names whose jobs"
r1=$(submit --name sweep -- sleep 60)
wait_until 10 is_state "$r1" running || fail "job $r1: $(state_of "$r1")"
r2=$(submit --name sweep -- sleep 60); r3=$(submit --name other -- sleep 60); r4=$(submit --name sweep -- sleep 60)
if [ "$ROOT" = 1 ]; then
    rc=0; "$CARMA" cancel --all >"$T/out" 2>"$T/err" || rc=$?
    [ "$rc" = 2 ] && grep -q "root cancels all the jobs of one user (\"user\": carma cancel --all --user NAME; root's own: --user root) or of every user (\"all_users\": --all-users), said explicitly" "$T/err" ||
        fail "root's bare --all: exit $rc, $(cat "$T/out" "$T/err")"
    [ "$(states "$r1" "$r2" "$r3" "$r4")" = "running queued queued queued " ] ||
        fail "root's bare --all cancelled: $(states "$r1" "$r2" "$r3" "$r4")"
    ME="--user root"
else
    ME=
fi

step "cancel --all --queued --name: the queued jobs of that name only"
out=$("$CARMA" cancel --all $ME --queued --name sweep) || fail "cancel --all --queued --name"
[ "$out" = "cancelled 2 jobs: $r2 $r4" ] || fail "cancel --all --queued --name said: $out"
[ "$(states "$r1" "$r2" "$r3" "$r4")" = "running cancelled queued cancelled " ] ||
    fail "after --queued --name sweep: $(states "$r1" "$r2" "$r3" "$r4")"
grep -q "carma cancel --all by $(id -un): 2 jobs of $(id -un), queued, named 'sweep' cancelled" "$T/carmad.log" ||
    fail "the cancel --all not logged"

step "cancel --all --running --json: the running one, as JSON"
"$CARMA" cancel --all $ME --running --json >"$T/out" || fail "cancel --all --running --json"
python3 - "$T/out" "$r1" <<'PY' || fail "cancel --all --running --json: $(cat "$T/out")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r == {"ok": True, "cancelled": [int(sys.argv[2])], "count": 1}, r
PY
wait_until 10 is_state "$r1" cancelled || fail "job $r1: $(state_of "$r1")"
is_state "$r3" queued || wait_until 10 is_state "$r3" running || fail "job $r3: $(state_of "$r3")"

step "no match: said, exit 0, nothing cancelled"
rc=0; out=$("$CARMA" cancel --all $ME --name sweep 2>"$T/err") || rc=$?
[ "$rc" = 0 ] && [ -z "$out" ] &&
    grep -q "^carma cancel: no queued or running job of .* named 'sweep': nothing cancelled$" "$T/err" ||
    fail "no match: exit $rc, $out, $(cat "$T/err")"
"$CARMA" cancel --all $ME --name nomatch --json | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r == {"ok": True, "cancelled": [], "count": 0}, r' || fail "no match --json"
is_state "$r3" cancelled && fail "job $r3 cancelled by a cancel that matched nothing"
out=$("$CARMA" cancel --all $ME) || fail "cancel --all"
[ "$out" = "cancelled 1 job: $r3" ] || fail "cancel --all said: $out"
wait_until 10 is_state "$r3" cancelled || fail "job $r3: $(state_of "$r3")"

step "--all cancels the jobs carmad has recorded: a submission waiting for its estimate is not one"
"$CARMA" cancel --help | grep -q "^estimate is recorded after, and not cancelled)" ||
    fail "carma cancel --help: $("$CARMA" cancel --help)"
"$CARMA" submit --summary "$SUM" --batch 32 -- sleep 60 >"$T/late.id" 2>"$T/late.err" &
LATE=$!
wait_until 10 test -e "$T/go.held" || fail "the submission did not reach the estimate queue"
rc=0; out=$("$CARMA" cancel --all $ME 2>"$T/err") || rc=$?
[ "$rc" = 0 ] && [ -z "$out" ] && grep -q "nothing cancelled$" "$T/err" ||
    fail "cancel --all while a submission waits for its estimate: exit $rc, $out, $(cat "$T/err")"
touch "$T/go"
wait "$LATE" || fail "the submission held: $(cat "$T/late.err")"
late=$(cat "$T/late.id")
is_state "$late" queued || is_state "$late" running || fail "job $late, recorded after the cancel: $(state_of "$late")"
out=$("$CARMA" cancel --all $ME) || fail "cancel --all once recorded"
[ "$out" = "cancelled 1 job: $late" ] || fail "cancel --all once recorded said: $out"

step "carmad's own check of a cancel request"
PYTHONPATH="$HELP" python3 - "$CARMA_SOCKET" <<'PY' || fail "carmad took a bad cancel request"
import sys
from carmad_ask import ask
sock = sys.argv[1]
for req, why in [
    ({"all": True, "ids": [1]}, "request.ids: not with request.all"),
    ({"ids": [1], "state": "queued"}, "request.state: only with request.all"),
    ({"all": False, "name": "x"}, "request.name: only with request.all"),
    ({"all": True, "state": "done"}, "request.state: 'done': \"queued\" or \"running\" expected"),
    ({"all": True, "name": ""}, "request.name: empty"),
    ({"all": True, "name": "x" * 129}, "request.name: longer than 128 bytes"),
    ({"all": True, "user": "u" * 65}, "request.user: longer than 64 bytes"),
    ({"all": True, "user": "root", "all_users": True}, "request.all_users: not with request.user"),
    ({"all": True, "all_users": 1}, "request.all_users: not a boolean"),
    ({"all": "yes"}, "request.all: not a boolean"),
    ({}, "request.ids: a non-empty array of job ids needed (or \"all\": true)"),
]:
    r = ask(sock, dict({"v": 1, "op": "cancel"}, **req))
    assert r["ok"] is False and r["error"] == "badrequest" and r["message"].startswith(why), (req, r)
PY

if [ "$ROOT" = 1 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
    step "a user's --all leaves other users' jobs alone; only root names another user"
    chmod 666 "$CARMA_SOCKET"
    nobody_client
    n1=$(as_nobody "$NB/carma" submit --name sweep -- sleep 60) || fail "nobody's job"
    wait_until 10 is_state "$n1" running || fail "job $n1: $(state_of "$n1")"
    n2=$(as_nobody "$NB/carma" submit --name sweep -- sleep 60) || fail "nobody's job"
    o1=$(submit --name sweep -- sleep 60); o2=$(submit --name sweep -- sleep 60)
    for a in "--user root" --all-users; do
        rc=0; as_nobody "$NB/carma" cancel --all $a 2>"$T/err" || rc=$?
        [ "$rc" = 1 ] && grep -q "carma cancel: permission denied: only root cancels the jobs of other users" "$T/err" ||
            fail "nobody's cancel --all $a: exit $rc, $(cat "$T/err")"
    done
    # naming oneself is one's own --all
    as_nobody "$NB/carma" cancel --all --user nobody --queued >"$T/out" || fail "nobody's --user nobody"
    [ "$(cat "$T/out")" = "cancelled 1 job: $n2" ] || fail "nobody's --all --user nobody --queued: $(cat "$T/out")"
    n3=$(as_nobody "$NB/carma" submit -- sleep 60) || fail "nobody's job"
    out=$(as_nobody "$NB/carma" cancel --all) || fail "nobody's cancel --all"
    [ "$out" = "cancelled 2 jobs: $n1 $n3" ] || fail "nobody's cancel --all said: $out"
    wait_until 10 is_state "$n1" cancelled || fail "nobody's running job: $(state_of "$n1")"
    for j in "$o1" "$o2"; do is_state "$j" cancelled && fail "root's job $j cancelled by nobody's --all"; done
    n4=$(as_nobody "$NB/carma" submit -- sleep 60) || fail "nobody's job"
    # root: one user's (by name), then every user's
    out=$("$CARMA" cancel --all --user nobody) || fail "root's --user nobody"
    [ "$out" = "cancelled 1 job: $n4" ] || fail "root's cancel --all --user nobody said: $out"
    for j in "$o1" "$o2"; do is_state "$j" cancelled && fail "root's job $j cancelled by --user nobody"; done
    n5=$(as_nobody "$NB/carma" submit -- sleep 60) || fail "nobody's job"
    out=$("$CARMA" cancel --all --all-users) || fail "root's --all-users"
    [ "$out" = "cancelled 3 jobs: $o1 $o2 $n5" ] || fail "root's cancel --all --all-users said: $out"
    rc=0; "$CARMA" cancel --all --user no-such-user-here 2>"$T/err" || rc=$?
    [ "$rc" = 0 ] && grep -q "no queued or running job of user no-such-user-here: nothing cancelled" "$T/err" ||
        fail "--user of no account: exit $rc, $(cat "$T/err")"
else
    echo "(two-user step skipped: needs root, setpriv and the user nobody)"
fi
stop_daemon TERM || fail "stop"
echo "daemon_cancel: ok"
