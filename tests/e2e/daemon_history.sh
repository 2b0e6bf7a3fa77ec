#!/bin/sh
# The job's memory bound (issue 4): max(estimator bound, --mem) for a job submitted
# with a model summary; once the same command + batch has run, the bound comes from
# the observed peak of that run (history beats the model). A bad summary is refused.
. "$(dirname "$0")/helpers/daemon_lib.sh"

SUM=$(cd "$(dirname "$0")/../.." && pwd)/data/estimator/cifar-summaries/resnet18cifar100_32.model
[ -f "$SUM" ] || fail "missing $SUM"
json_int() { sed -n "s/^ *\"$2\": \\([0-9]*\\).*/\\1/p" "$1" | head -n 1; }

start_daemon --gpus sim:4xa100-40gb

step "first run: the estimator's bound"
"$CARMA" estimate --summary "$SUM" --batch 32 --json > "$T/est.json" || fail "carma estimate"
want=$(awk -F: '/"bound_mib"/ {gsub(/[ ,]/, "", $2); v = $2 + 0; i = int(v); if (v > i) i++; print i}' "$T/est.json")
[ -n "$want" ] || fail "no bound_mib from carma estimate"
a=$(submit --summary "$SUM" --batch 32 --mem 100 -- sh "$HELP/run_for.sh" 0.3)
"$CARMA" show --json "$a" > "$T/a.json"
got=$(json_int "$T/a.json" bound_mib)
[ "$got" = "$want" ] || fail "bound $got, the estimator's $want expected"
echo "   bound $got MiB (carma estimate: $want)"
"$CARMA" wait --timeout 20 "$a" >/dev/null || fail "first run did not succeed: $(state_of "$a")"
"$CARMA" show --json "$a" > "$T/a.json"
peak=$(sed -n 's/^ *"peak_mib": \([0-9]*\).*/\1/p' "$T/a.json" | tail -n 1)
[ -n "$peak" ] && [ "$peak" -gt 0 ] || fail "no peak recorded for the first run"

step "--mem above the estimate wins"
m=$(submit --summary "$SUM" --batch 64 --mem 30000 -- true)
"$CARMA" show --json "$m" > "$T/m.json"
[ "$(json_int "$T/m.json" bound_mib)" = 30000 ] || fail "declared --mem above the estimator's bound not kept"
"$CARMA" wait --timeout 20 "$m" >/dev/null || fail "the --mem job did not succeed"

step "second run of the same command and batch: the bound is the first run's peak"
b=$(submit --summary "$SUM" --batch 32 -- sh "$HELP/run_for.sh" 0.3)
"$CARMA" show --json "$b" > "$T/b.json"
got=$(json_int "$T/b.json" bound_mib)
# est_history_next: largest peak + spread (0 after one run) + one 2 MiB segment.
[ "$got" = $((peak + 2)) ] || fail "second bound $got, $((peak + 2)) (first peak + 2) expected"
echo "   first run's peak $peak MiB, second run's bound $got MiB"
"$CARMA" wait --timeout 20 "$b" >/dev/null || fail "second run did not succeed"

step "another batch size is another signature"
c=$(submit --summary "$SUM" --batch 128 -- true)
"$CARMA" show --json "$c" > "$T/c.json"
[ "$(json_int "$T/c.json" bound_mib)" != $((peak + 2)) ] || fail "batch 128 took batch 32's history"
"$CARMA" wait --timeout 20 "$c" >/dev/null

step "a summary that is not one is refused"
printf 'hello\nworld\n' > "$T/bad.txt"
"$CARMA" submit --summary "$T/bad.txt" --batch 8 -- true 2>"$T/err"; [ $? = 2 ] ||
    fail "bad summary: exit status"
grep -q "summary" "$T/err" || fail "bad summary: message: $(cat "$T/err")"

stop_daemon TERM
echo "daemon_history: ok"
