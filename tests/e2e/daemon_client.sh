#!/bin/sh
# The carma client against a real carmad and against carmads that answer wrongly
# (audit 6): `logs -f` on a queued job prints its output once, and follows a log that
# the job truncates; `wait --timeout` keeps its deadline while carmad is stuck.
. "$(dirname "$0")/helpers/daemon_lib.sh"
start_daemon --gpus sim:4xa100-40gb

step "logs -f on a queued job prints its output once"
hog=$(submit --gpus 4 -- sleep 2)
id=$(submit -- sh -c 'for i in 1 2 3 4 5 6 7 8 9 10; do echo line$i; sleep 0.1; done')
timeout 30 "$CARMA" logs -f "$id" > "$T/f.out" 2> "$T/f.err" || fail "logs -f: $(cat "$T/f.err")"
[ "$(cat "$T/f.out")" = "$(seq 1 10 | sed 's/^/line/')" ] ||
    fail "logs -f of a queued job printed: $(cat "$T/f.out") / $(cat "$T/f.err")"
! grep -q "attempt" "$T/f.err" || fail "logs -f announced an attempt: $(cat "$T/f.err")"
"$CARMA" wait "$hog" >/dev/null || fail "the hog did not succeed"

step "logs -f goes on after the job truncates its log"
id=$(submit -- sh -c 'echo first-line-long-enough; sleep 1.5; truncate -s0 /proc/$$/fd/1; echo after; sleep 1.5; echo end')
timeout 30 "$CARMA" logs -f "$id" > "$T/t.out" 2> "$T/t.err" || fail "logs -f: $(cat "$T/t.err")"
[ "$(cat "$T/t.out")" = "$(printf 'first-line-long-enough\nafter\nend')" ] ||
    fail "logs -f across a truncation printed: $(cat "$T/t.out") / $(cat "$T/t.err")"
grep -qx "carma logs: stdout truncated" "$T/t.err" || fail "no word of the truncation: $(cat "$T/t.err")"

step "wait --timeout is a deadline while carmad is stuck"
id=$(submit -- sleep 30)
wait_until 10 is_state "$id" running || fail "the job did not start"
kill -STOP "$DPID"
t0=$(date +%s)
rc=0; "$CARMA" wait "$id" --timeout 2 2>"$T/w.err" || rc=$?
rc2=0; "$CARMA" wait "$id" --timeout 1 --json >"$T/w.json" 2>>"$T/w.err" || rc2=$?
t1=$(date +%s)
kill -CONT "$DPID"
[ "$rc" = 1 ] && [ "$rc2" = 1 ] || fail "wait --timeout on a stuck carmad: exit $rc, $rc2: $(cat "$T/w.err")"
[ $((t1 - t0)) -le 8 ] || fail "wait --timeout 2, then 1, took $((t1 - t0)) s on a stuck carmad"
grep -q "carmad did not answer in time" "$T/w.err" || fail "message: $(cat "$T/w.err")"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1])) == []' "$T/w.json" ||
    fail "wait --json on a stuck carmad: $(cat "$T/w.json")"
"$CARMA" cancel "$id" >/dev/null || fail "cancel"

stop_daemon
echo "daemon_client: ok"
