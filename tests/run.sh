#!/bin/sh
# Runs every test of one build: cmocka unit tests, end-to-end scripts and the fuzz
# targets over their corpora. Usage: BUILD=build/release sh tests/run.sh
# CARMA_TEST_JOBS tests run at once (default: the number of CPUs, at least 2: most
# end-to-end tests spend their time waiting on carmad; 1 runs them one by one), each
# killed after CARMA_TEST_TIMEOUT seconds (default 600). Each test's output goes to
# $BUILD/logs/NAME.log; a failed one's tail is printed after all have run.
# Prints "BUILD: N passed, N failed" last and exits non-zero when anything failed.
set -u
BUILD=${BUILD:-build/release}
export CARMA_BIN="$BUILD/bin" CARMA_BUILD="$BUILD" CARMA_FAKE="$BUILD/fake"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
LOGS="$BUILD/logs"
# A test's log: the one place that names it, for the test that writes it and the summary
# that prints its tail.
log_of() { printf '%s/%s.log' "$LOGS" "$(printf '%s' "$1" | tr '/' '_')"; }

# One test: --one KIND PATH (KIND unit, e2e or fuzz). Run by xargs below, it appends
# "ok NAME" or "FAIL NAME" to $CARMA_TEST_RESULTS, one short write, so that parallel
# runs do not interleave; run by hand, it prints a failure's log tail and exits 1.
if [ "${1:-}" = --one ]; then
    kind=$2; t=$3
    case $kind in
    unit) name="unit/$(basename "$t")"; set -- "$t" ;;
    e2e) name="e2e/$(basename "$t" .sh)"; set -- sh "$t" ;;
    fuzz) n=$(basename "$t"); name="fuzz/$n"; set -- "$t" -runs=2000 "tests/fuzz/corpus/${n#fuzz_}" ;;
    *) echo "tests/run.sh: unknown test kind $kind" >&2; exit 2 ;;
    esac
    mkdir -p "$LOGS"
    log=$(log_of "$name")
    # A test that hangs is killed (CARMA_TEST_TIMEOUT seconds, default 600), so that the
    # run still ends and reports it.
    tmo=${CARMA_TEST_TIMEOUT:-600}
    # --foreground: the test stays in the terminal's process group, so ^C reaches it.
    command -v timeout >/dev/null 2>&1 && set -- timeout --foreground -k 10 "$tmo" "$@"
    rc=0
    "$@" >"$log" 2>&1 || rc=$?
    [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && echo "tests/run.sh: killed after $tmo s" >>"$log"
    if [ "$rc" -eq 0 ]; then r="ok   $name"; else r="FAIL $name"; fi
    printf '%s\n' "$r"
    # Run by hand: the failure's tail now, and the exit status says it.
    [ -n "${CARMA_TEST_RESULTS:-}" ] || { [ "$r" = "ok   $name" ] || { tail -n 30 "$log"; exit 1; }; exit 0; }
    printf '%s\n' "$r" >>"$CARMA_TEST_RESULTS"
    exit 0
fi

# --line N: the test on line N of $LOGS/list ("KIND PATH"; xargs passes only N, so that
# a path with spaces or quotes reaches --one whole).
if [ "${1:-}" = --line ]; then
    line=$(sed -n "${2}p" "$LOGS/list")
    exec sh "$0" --one "${line%% *}" "${line#* }"
fi

if [ -n "${CARMA_TEST_JOBS:-}" ]; then
    jobs=$CARMA_TEST_JOBS
    [ "$jobs" -ge 1 ] 2>/dev/null || { echo "tests/run.sh: CARMA_TEST_JOBS=$jobs: a count of 1 or more expected" >&2; exit 2; }
else
    jobs=$(nproc 2>/dev/null || echo 2)
    [ "$jobs" -ge 2 ] 2>/dev/null || jobs=2
fi
mkdir -p "$LOGS"
: >"$LOGS/results"
# The end-to-end tests first: they are the longest, so the run ends with short ones.
{
    for t in tests/e2e/*.sh; do [ -f "$t" ] && printf 'e2e %s\n' "$t"; done
    for t in "$BUILD"/tests/test_*; do [ -x "$t" ] && printf 'unit %s\n' "$t"; done
    for f in "$BUILD"/fuzz/fuzz_*; do [ -x "$f" ] && printf 'fuzz %s\n' "$f"; done
} >"$LOGS/list"
total=$(wc -l <"$LOGS/list")
seq 1 "$total" | CARMA_TEST_RESULTS="$LOGS/results" xargs -n 1 -P "$jobs" sh "$0" --line
pass=$(grep -c '^ok ' "$LOGS/results")
fail=$(grep -c '^FAIL ' "$LOGS/results")
if [ $((pass + fail)) -ne "$total" ]; then
    echo "tests/run.sh: $total tests listed, $((pass + fail)) reported (see $LOGS/list)"
    fail=$((total - pass))
fi
sed -n 's/^FAIL //p' "$LOGS/results" | while IFS= read -r name; do
    log=$(log_of "$name")
    printf '%s\n' "--- $name (log: $log)"
    tail -n 30 "$log"
done
echo "$(basename "$BUILD"): $pass passed, $fail failed"
[ "$fail" -eq 0 ] || { printf 'failed: %s\n' "$(sed -n 's/^FAIL //p' "$LOGS/results" | tr '\n' ' ')"; exit 1; }
