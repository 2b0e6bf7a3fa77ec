#!/bin/sh
# carma logs on the fake libnvidia-ml.so.1: --attempt N prints an earlier attempt's output
# (the one an OOM ended, before its retry), -n N the last N lines of each log (read back
# from the log's end; a last line without a newline is a line), -n N -f the last N lines
# and then what follows, --stdout and --stderr one log; an attempt that does not exist is
# exit 2, naming the job, N and how many it has, and one whose logs were removed exit 1;
# -n over logs of several 64 KiB chunks
# (a line longer than a chunk, a newline as a chunk's first byte) is tail -n's. Skipped
# while the fake library or its example state file is missing.
. "$(dirname "$0")/helpers/daemon_lib.sh"
fake_nvml state || { echo "daemon_logs: skipped (no fake libnvidia-ml.so.1 or example state file yet)"; exit 0; }
cp "$EX" "$T/nvml.state"
export CARMA_FAKE_NVML_STATE="$T/nvml.state"
start_daemon --gpus nvml --nvml-lib "$LIB"

step "--attempt 1: the output of the attempt an OOM ended, after its retry succeeded"
oom=$(submit -- sh -c 'echo "out-of-attempt-$CARMA_JOB_ATTEMPT"; exec sh "$0" "$1"' \
    "$HELP/oom_once.sh" "$T/oom.marker")
"$CARMA" wait --timeout 30 "$oom" >/dev/null || fail "OOM job: $(state_of "$oom")"
[ "$(attempts_of "$oom")" = 2 ] || fail "OOM job not retried once: $(attempts_of "$oom") attempts"
"$CARMA" logs --attempt 1 "$oom" >"$T/a1.out" 2>"$T/a1.err" || fail "logs --attempt 1: $(cat "$T/a1.err")"
[ "$(cat "$T/a1.out")" = out-of-attempt-1 ] || fail "attempt 1's stdout: $(cat "$T/a1.out")"
grep -q "CUDA out of memory" "$T/a1.err" || fail "attempt 1's stderr: $(cat "$T/a1.err")"
"$CARMA" logs "$oom" >"$T/a2.out" 2>"$T/a2.err" || fail "logs: $(cat "$T/a2.err")"
[ "$(cat "$T/a2.out")" = "$(printf 'out-of-attempt-2\ntrained fine')" ] && [ ! -s "$T/a2.err" ] ||
    fail "the latest attempt's logs: $(cat "$T/a2.out" "$T/a2.err")"
"$CARMA" logs --attempt 2 "$oom" | cmp -s - "$T/a2.out" || fail "--attempt 2 is not the latest's"
"$CARMA" logs --json --attempt 1 "$oom" | grep -q '"attempt": 1' || fail "--json --attempt 1"

step "an attempt that does not exist: exit 2, naming the job, N and how many it has"
for n in 3 4294967295; do
    rc=0; "$CARMA" logs --attempt "$n" "$oom" >"$T/m.out" 2>"$T/m.err" || rc=$?
    [ "$rc" = 2 ] && [ ! -s "$T/m.out" ] &&
        grep -qx "carma logs: job $oom has no attempt $n (it has 2 attempts; carma show $oom lists them)" "$T/m.err" ||
        fail "--attempt $n: exit $rc, $(cat "$T/m.out" "$T/m.err")"
done
for v in 0 -1 x 1x 4294967296 ""; do
    rc=0; "$CARMA" logs --attempt "$v" "$oom" >/dev/null 2>"$T/m.err" || rc=$?
    [ "$rc" = 2 ] && grep -q -- "--attempt must be an integer" "$T/m.err" || fail "--attempt '$v': exit $rc, $(cat "$T/m.err")"
done
for v in -1 x 3x 100000001 " 3" ""; do
    rc=0; "$CARMA" logs -n "$v" "$oom" >/dev/null 2>"$T/m.err" || rc=$?
    [ "$rc" = 2 ] && grep -q -- "-n must be a number of lines from 0 to 100000000" "$T/m.err" ||
        fail "-n '$v': exit $rc, $(cat "$T/m.err")"
done
rc=0; "$CARMA" logs "$oom" -n >/dev/null 2>"$T/m.err" || rc=$?
[ "$rc" = 2 ] || fail "-n without a value: exit $rc"

step "-n 3 of a 10,000-line log: exactly its last 3 lines"
big=$(submit -- sh -c 'seq 1 10000; seq 1 5 >&2')
"$CARMA" wait --timeout 30 "$big" >/dev/null || fail "the long log's job: $(state_of "$big")"
"$CARMA" logs -n 3 "$big" >"$T/n.out" 2>"$T/n.err" || fail "logs -n 3: $(cat "$T/n.err")"
[ "$(cat "$T/n.out")" = "$(printf '9998\n9999\n10000')" ] || fail "-n 3: $(head -c 200 "$T/n.out")"
[ "$(wc -l <"$T/n.out")" = 3 ] || fail "-n 3: $(wc -l <"$T/n.out") lines"
[ "$(cat "$T/n.err")" = "$(printf '3\n4\n5')" ] || fail "-n 3 of stderr: $(cat "$T/n.err")"
"$CARMA" logs --tail 0 "$big" >"$T/n.out" 2>"$T/n.err" && [ ! -s "$T/n.out" ] && [ ! -s "$T/n.err" ] ||
    fail "--tail 0: $(head -c 200 "$T/n.out" "$T/n.err")"
"$CARMA" logs -n 20000 "$big" 2>/dev/null | cmp -s - "$T/state/jobs/$big/1/stdout" || fail "-n 20000: not the whole log"
"$CARMA" logs -n 10000 "$big" 2>/dev/null | cmp -s - "$T/state/jobs/$big/1/stdout" || fail "-n 10000: not the whole log"
[ "$("$CARMA" logs -n 9999 "$big" 2>/dev/null | head -n 1)" = 2 ] || fail "-n 9999 does not start at 2"

step "-n of a log whose last line has no newline: that line counts"
nonl=$(submit -- sh -c 'printf "a\nb\nc\nd"')
"$CARMA" wait --timeout 30 "$nonl" >/dev/null || fail "the job: $(state_of "$nonl")"
"$CARMA" logs -n 2 "$nonl" >"$T/nl.out" && printf 'c\nd' | cmp -s - "$T/nl.out" ||
    fail "-n 2 without a last newline: $(od -c "$T/nl.out")"
[ "$("$CARMA" logs -n 1 "$nonl")" = d ] || fail "-n 1 without a last newline: $("$CARMA" logs -n 1 "$nonl")"
[ "$("$CARMA" logs -n 4 "$nonl" | wc -c)" = 7 ] || fail "-n 4: not the whole log"

step "-n 3 -f on a running job: the last 3 lines, then what follows"
run=$(submit -- sh -c 'seq 1 20; while [ ! -e "$0.go" ]; do sleep 0.05; done; echo after-the-gate' "$T/f")
wait_until 30 sh -c "[ \"\$(wc -l <\"$T/state/jobs/$run/1/stdout\" 2>/dev/null)\" = 20 ]" ||
    fail "the running job did not print its 20 lines"
timeout 60 "$CARMA" logs -n 3 -f "$run" >"$T/f.out" 2>"$T/f.err" &
lf=$!
wait_until 30 grep -qx 20 "$T/f.out" || fail "logs -n 3 -f printed: $(cat "$T/f.out" "$T/f.err")"
touch "$T/f.go"
wait "$lf" || fail "logs -n 3 -f: $(cat "$T/f.err")"
[ "$(cat "$T/f.out")" = "$(printf '18\n19\n20\nafter-the-gate')" ] ||
    fail "logs -n 3 -f printed: $(cat "$T/f.out") / $(cat "$T/f.err")"

step "--attempt N of an ended attempt whose logs were removed (to free space): said, exit 1"
mkdir "$T/kept"
mv "$T/state/jobs/$oom/1/stdout" "$T/state/jobs/$oom/1/stderr" "$T/kept/"
rc=0; "$CARMA" logs --attempt 1 "$oom" >"$T/g.out" 2>"$T/g.err" || rc=$?
[ "$rc" = 1 ] && grep -q "^carma logs: job $oom attempt 1's logs are gone: .*/jobs/$oom/1/stdout: No such file or directory$" "$T/g.err" ||
    fail "--attempt 1 of removed logs: exit $rc, $(cat "$T/g.out" "$T/g.err")"
mv "$T/kept/stdout" "$T/kept/stderr" "$T/state/jobs/$oom/1/"

step "--attempt 1 -f follows attempt 1 until it ends, not the retry after it"
pin=$(submit -- sh -c 'echo "pin-$CARMA_JOB_ATTEMPT"; [ "$CARMA_JOB_ATTEMPT" = 1 ] || exit 0
while [ ! -e "$0.go" ]; do sleep 0.05; done; exec sh "$1" "$0.marker"' "$T/p" "$HELP/oom_once.sh")
wait_until 30 test -s "$T/state/jobs/$pin/1/stdout" || fail "the pinned job did not start"
timeout 60 "$CARMA" logs --attempt 1 -f "$pin" >"$T/p.out" 2>"$T/p.err" &
lf=$!
wait_until 30 grep -qx pin-1 "$T/p.out" || fail "logs --attempt 1 -f printed: $(cat "$T/p.out" "$T/p.err")"
touch "$T/p.go"
wait "$lf" || fail "logs --attempt 1 -f: $(cat "$T/p.err")"
"$CARMA" wait --timeout 30 "$pin" >/dev/null || fail "the pinned job: $(state_of "$pin")"
[ "$(cat "$T/p.out")" = pin-1 ] && grep -q "CUDA out of memory" "$T/p.err" && ! grep -q "attempt 2" "$T/p.err" ||
    fail "logs --attempt 1 -f printed: $(cat "$T/p.out") / $(cat "$T/p.err")"

step "--stderr alone: the job's stderr only; --stdout alone: its stdout only"
"$CARMA" logs --stderr "$oom" --attempt 1 >"$T/s.out" 2>"$T/s.err" || fail "--stderr: $(cat "$T/s.err")"
[ ! -s "$T/s.out" ] && grep -q "CUDA out of memory" "$T/s.err" && ! grep -q out-of-attempt "$T/s.err" ||
    fail "--stderr printed: $(cat "$T/s.out") / $(cat "$T/s.err")"
"$CARMA" logs --stderr -n 1 "$big" >"$T/s.out" 2>"$T/s.err" && [ ! -s "$T/s.out" ] && [ "$(cat "$T/s.err")" = 5 ] ||
    fail "--stderr -n 1: $(head -c 200 "$T/s.out") / $(cat "$T/s.err")"
"$CARMA" logs --stdout --attempt 1 "$oom" >"$T/s.out" 2>"$T/s.err" && [ ! -s "$T/s.err" ] &&
    [ "$(cat "$T/s.out")" = out-of-attempt-1 ] || fail "--stdout printed: $(cat "$T/s.out") / $(cat "$T/s.err")"
"$CARMA" logs --stdout --stderr --attempt 1 "$oom" >"$T/s.out" 2>"$T/s.err" &&
    cmp -s "$T/s.out" "$T/a1.out" && cmp -s "$T/s.err" "$T/a1.err" || fail "--stdout --stderr: not both"
rc=0; "$CARMA" logs --json -n 1 "$oom" >/dev/null 2>"$T/s.err" || rc=$?
[ "$rc" = 2 ] && grep -q "not with it" "$T/s.err" || fail "--json -n: exit $rc, $(cat "$T/s.err")"
"$CARMA" logs --help | grep -q -- "--attempt N" || fail "--help does not list --attempt"
step "-n across 64 KiB chunks: as tail -n, a 70,000-byte line and a newline on a chunk's edge included"
wide=$(submit -- sh -c 'seq 1 100000; head -c 70000 /dev/zero | tr "\\0" a; echo; echo z
echo c >&2; head -c 65535 /dev/zero | tr "\\0" b >&2; echo >&2')
"$CARMA" wait --timeout 30 "$wide" >/dev/null || fail "the wide log's job: $(state_of "$wide")"
wo=$T/state/jobs/$wide/1/stdout we=$T/state/jobs/$wide/1/stderr
[ "$(wc -c <"$wo")" -gt 200000 ] && [ "$(wc -c <"$we")" = 65538 ] || fail "the wide job's logs: $(wc -c "$wo" "$we")"
for n in 1 2 3 50000 99999 100002 100003 200000; do
    "$CARMA" logs --stdout -n "$n" "$wide" >"$T/w.out" || fail "--stdout -n $n"
    tail -n "$n" "$wo" | cmp -s - "$T/w.out" || fail "--stdout -n $n: not tail -n $n ($(wc -c <"$T/w.out") bytes)"
done
# stderr: "c\n", 65,535 b, "\n": read back from its last newline, the first chunk's first
# byte is the newline after c
for n in 1 2 3; do
    "$CARMA" logs --stderr -n "$n" "$wide" 2>"$T/w.err" || fail "--stderr -n $n"
    tail -n "$n" "$we" | cmp -s - "$T/w.err" || fail "--stderr -n $n: not tail -n $n ($(wc -c <"$T/w.err") bytes)"
done
echo "daemon_logs: ok"
