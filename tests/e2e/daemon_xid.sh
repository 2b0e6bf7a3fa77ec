#!/bin/sh
# carmad and the driver's critical Xid events (fake libnvidia-ml.so.1, 'xid GPU N'
# lines): a GPU fault fails a job's attempt without judging the job (retried, first in
# line), an Xid that needs a reset drains the GPU, an application's own Xid leaves its
# failure its own and is named in its reason. Skipped without the fake library.
. "$(dirname "$0")/helpers/daemon_lib.sh"
fake_nvml state || { echo "daemon_xid: skipped (no fake libnvidia-ml.so.1 or example state file)"; exit 0; }
cp "$EX" "$T/nvml.state"
export CARMA_FAKE_NVML_STATE="$T/nvml.state"
start_daemon --gpus nvml --nvml-lib "$LIB" --policy exclusive
"$CARMA" gpus --json | grep -q "Xid events from 2 of 2 GPUs" ||
    fail "Xid events not followed: $("$CARMA" gpus --json | grep source)"
# the index of the GPU job $1's last attempt ran on
gpu_of() {
    _u=$("$CARMA" show --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["attempt_list"][-1]["gpu_uuids"][0])')
    "$CARMA" gpus --json | python3 -c "import json,sys; print([g['index'] for g in json.load(sys.stdin)['gpus'] if g['uuid'] == '$_u'][0])"
}
field() { "$CARMA" gpus --json | python3 -c "import json,sys; print(json.load(sys.stdin)['gpus'][$1]['$2'])"; }
# A job whose first attempt waits for file $1, then fails; its next ones succeed.
flaky() {
    submit -- sh -c "if [ \"\$CARMA_JOB_ATTEMPT\" = 1 ]; then while [ ! -e $1 ]; do sleep 0.05; done; echo boom >&2; exit 3; fi; echo fine"
}

step "an Xid that needs a reset: the job is retried elsewhere, the GPU drained"
a=$(flaky "$T/go.a")
wait_until 10 is_state "$a" running || fail "job a: $(state_of "$a")"
ga=$(gpu_of "$a")
echo "xid $ga 48" >>"$T/nvml.state"
wait_until 10 sh -c "\"$CARMA\" gpus | grep -q 'DRAINED: reported Xid 48 (double-bit ECC error)'" ||
    fail "GPU $ga not drained: $("$CARMA" gpus)"
grep -q "Xid 48 (double-bit ECC error); jobs on it: $a" "$T/carmad.log" || fail "the Xid not logged with its job"
touch "$T/go.a"
"$CARMA" wait --timeout 20 "$a" >/dev/null || fail "job a: $(state_of "$a")"
[ "$(attempts_of "$a")" = 2 ] || fail "job a not retried: $("$CARMA" show "$a")"
grep -q "job $a attempt 1: gpu_error, re-queued (attempt 1: GPU error: GPU $ga reported Xid 48 (double-bit ECC error) (exit 3), retried)" "$T/carmad.log" ||
    fail "job a's first end not logged as a GPU error"
"$CARMA" show "$a" | grep -q "#1 .* gpu_error " || fail "attempt 1's outcome: $("$CARMA" show "$a")"
# the retried attempt's end in words, under its line, where the job's reason is its last
"$CARMA" show "$a" | grep -A1 "#1 " | grep -q "^        GPU error: GPU $ga reported Xid 48 (double-bit ECC error) (exit 3), retried$" ||
    fail "attempt 1's reason in show: $("$CARMA" show "$a")"
"$CARMA" show --json "$a" | python3 -c 'import json,sys; a = json.load(sys.stdin)["attempt_list"]; sys.exit(0 if a[0]["reason"].startswith("attempt 1: GPU error") and a[1]["reason"] == "attempt 2: succeeded" else 1)' ||
    fail "attempt reasons in JSON"
[ "$(gpu_of "$a")" != "$ga" ] || fail "job a retried on its drained GPU"
[ "$(field "$ga" xid_errors)" = 1 ] && [ "$(field "$ga" last_xid)" = 48 ] || fail "GPU $ga's Xid count"

gb=$((1 - ga))
step "an application's Xid: its failure stays its own"
b=$(flaky "$T/go.b")
wait_until 10 is_state "$b" running || fail "job b: $(state_of "$b")"
[ "$(gpu_of "$b")" = "$gb" ] || fail "job b on the drained GPU"
echo "xid $gb 31" >>"$T/nvml.state"
wait_until 10 grep -q "Xid 31 (GPU memory page fault); jobs on it: $b" "$T/carmad.log" || fail "Xid 31 not logged"
touch "$T/go.b"
wait_until 20 is_state "$b" failed || fail "job b: $(state_of "$b")"
[ "$(attempts_of "$b")" = 1 ] || fail "job b retried"
"$CARMA" show "$b" | grep -q "attempt 1: non-zero exit (exit 3); GPU $gb reported Xid 31 (GPU memory page fault) during it" ||
    fail "job b's reason: $("$CARMA" show "$b")"
"$CARMA" gpus | grep -q DRAINED.*Xid.31 && fail "an application's Xid drained its GPU"

step "a contained fault: retried, the GPU kept; an unknown Xid changes nothing"
c=$(flaky "$T/go.c")
wait_until 10 is_state "$c" running || fail "job c: $(state_of "$c")"
printf 'xid %s 999\nxid %s 94\n' "$gb" "$gb" >>"$T/nvml.state"
wait_until 10 grep -q "Xid 94 (contained ECC error); jobs on it: $c" "$T/carmad.log" || fail "Xid 94 not logged"
grep -q "Xid 999 (unknown Xid); jobs on it: $c" "$T/carmad.log" || fail "Xid 999 not logged"
touch "$T/go.c"
"$CARMA" wait --timeout 20 "$c" >/dev/null || fail "job c: $(state_of "$c")"
grep -q "job $c attempt 1: gpu_error, re-queued (attempt 1: GPU error: GPU $gb reported Xid 94 (contained ECC error) (exit 3), retried)" "$T/carmad.log" ||
    fail "job c's first end not logged as a GPU error"
[ "$(field "$gb" drained)" = False ] || fail "GPU $gb drained by a contained error"
[ "$(field "$gb" xid_errors)" = 3 ] || fail "GPU $gb's Xid count: $(field "$gb" xid_errors)"

step "an Xid storm: every one counted, the log bounded, a grave Xid after it not lost"
# the whole storm at once (a new file renamed over the state: the fake never reads half)
cp "$T/nvml.state" "$T/nvml.next"
i=0
while [ $i -lt 600 ]; do echo "xid $gb 13"; i=$((i + 1)); done >>"$T/nvml.next"
for k in 1 2 3 4 5 6 7 8 9 10 11 12; do echo "xid $gb $((2000 + k))"; done >>"$T/nvml.next"
echo "xid $gb 94" >>"$T/nvml.next"
mv "$T/nvml.next" "$T/nvml.state"
wait_until 10 sh -c "[ \$(\"$CARMA\" gpus --json | python3 -c \"import json,sys; print(json.load(sys.stdin)['gpus'][$gb]['xid_errors'])\") = 616 ]" ||
    fail "613 more Xids not counted: $(field "$gb" xid_errors)"
# at most ten lines a minute are logged per GPU (how the 600 split between takes depends
# on the host's pace: a carmad quicker than the event thread takes them one by one; the
# last step shows a storm waiting taken once with its count)
n13=$(grep -c "Xid 13 (graphics engine exception)" "$T/carmad.log")
[ "$n13" -ge 1 ] && [ "$n13" -le 10 ] || fail "the storm in $n13 log lines"
[ "$(grep -c "): Xid 20[01][0-9] (unknown Xid)" "$T/carmad.log")" -lt 12 ] || fail "every unknown Xid logged"
[ "$(grep -c "): Xid 94 (contained ECC error)" "$T/carmad.log")" = 2 ] || fail "the grave Xid after the storm not logged"

step "a contained fault fails the job it hits at once, not one that fails later"
stop_daemon TERM || fail "stop"
CARMA_TEST_XID_FAULT_WINDOW=1 start_daemon --gpus nvml --nvml-lib "$LIB" --policy exclusive
# the GPU that needs a reset stays drained over the restart (STATE/drained)
"$CARMA" gpus | grep -q "DRAINED: reported Xid 48 (double-bit ECC error) before carmad restarted" ||
    fail "GPU $ga back in service after a restart: $("$CARMA" gpus)"
grep -q "	reported Xid 48 (double-bit ECC error)$" "$T/state/drained" || fail "STATE/drained: $(cat "$T/state/drained")"
e=$(flaky "$T/go.e")
wait_until 10 is_state "$e" running || fail "job e: $(state_of "$e")"
echo "xid $(gpu_of "$e") 94" >>"$T/nvml.state"
wait_until 10 grep -q "Xid 94 (contained ECC error); jobs on it: $e" "$T/carmad.log" || fail "Xid 94 for e"
sleep 2
touch "$T/go.e"
wait_until 20 is_state "$e" failed || fail "job e, failing 2 s after a contained fault: $(state_of "$e")"
[ "$(attempts_of "$e")" = 1 ] || fail "job e retried"

step "attempts run out: the job failed; a GPU whose line left STATE/drained is back"
stop_daemon TERM || fail "stop"
printf 'no tab here\n' >"$T/state/drained" # the GPU was reset: its line removed
start_daemon --gpus nvml --nvml-lib "$LIB" --policy exclusive --max-attempts 1
"$CARMA" gpus | grep -q DRAINED && fail "a GPU still drained: $("$CARMA" gpus)"
grep -q "state/drained:1: no tab between a GPU's UUID and the reason: ignored" "$T/carmad.log" ||
    fail "a malformed line of STATE/drained not said"
d=$(flaky "$T/go.d")
wait_until 10 is_state "$d" running || fail "job d: $(state_of "$d")"
echo "xid $(gpu_of "$d") 94" >>"$T/nvml.state"
wait_until 10 grep -q "Xid 94 (contained ECC error); jobs on it: $d" "$T/carmad.log" || fail "Xid 94 for d"
touch "$T/go.d"
wait_until 20 is_state "$d" failed || fail "job d: $(state_of "$d")"
"$CARMA" show "$d" | grep -q "reported Xid 94 (contained ECC error) (exit 3), no attempts left" ||
    fail "job d's reason: $("$CARMA" show "$d")"

step "grave Xids spread over a minute: ten logged, the rest counted"
since=$(wc -l <"$T/carmad.log")
i=0
while [ $i -lt 14 ]; do echo "xid 1 94" >>"$T/nvml.state"; sleep 0.5; i=$((i + 1)); done
wait_until 10 sh -c "[ \$(\"$CARMA\" gpus --json | python3 -c \"import json,sys; print(json.load(sys.stdin)['gpus'][1]['xid_errors'])\") -ge 14 ]" ||
    fail "14 Xids not counted: $(field 1 xid_errors)"
n94=$(tail -n +"$since" "$T/carmad.log" | grep -c "GPU 1 (.*): Xid 94 (contained ECC error)")
# ten a minute (fewer where a slow loop took two at once, counted in one line)
[ "$n94" -ge 1 ] && [ "$n94" -le 10 ] || fail "grave Xid log lines in a minute: $n94"

step "an Xid that needs a reset on a GPU drained by hand: its reason leads the drain"
"$CARMA" drain 0 --reason "fan swap" >/dev/null || fail "drain 0"
echo "xid 0 48" >>"$T/nvml.state"
wait_until 10 sh -c "\"$CARMA\" gpus | grep -q '^0 .*DRAINED: reported Xid 48 (double-bit ECC error); drained before: drained by .*: fan swap$'" ||
    fail "GPU 0's reason: $("$CARMA" gpus)"
grep -q "^GPU-fa4e0000-0000-4000-8000-000000000000	reported Xid 48 (double-bit ECC error); drained before: drained by .*: fan swap$" "$T/state/drained" ||
    fail "STATE/drained: $(cat "$T/state/drained")"
out=$("$CARMA" undrain 0) || fail "undrain 0"
echo "$out" | grep -q "(it was drained: reported Xid 48 (double-bit ECC error); drained before: " ||
    fail "undrain said: $out"
stop_daemon TERM || fail "stop"

step "a storm waiting when carmad takes it: taken with its count"
# xid_late: the driver reports them just after carmad registers, and the fake holds
# carmad's next NVML call (5 s at most) until its event thread has queued them, so that
# carmad finds many of one kind waiting (all 600 unless the hold ran out)
i=0
while [ $i -lt 600 ]; do echo "xid_late 1 13"; i=$((i + 1)); done >>"$T/nvml.state"
since=$(($(wc -l <"$T/carmad.log") + 1))
start_daemon --gpus nvml --nvml-lib "$LIB" --policy exclusive
storm_counted() {
    tail -n +"$since" "$T/carmad.log" |
        grep -q "GPU 1 (.*): Xid 13 (graphics engine exception) [0-9]* times; jobs on it: none"
}
wait_until 10 storm_counted ||
    fail "the storm not taken with its count: $(tail -n +"$since" "$T/carmad.log" | grep "Xid 13" | head -3)"
stop_daemon TERM || fail "stop"
echo "daemon_xid: ok"
