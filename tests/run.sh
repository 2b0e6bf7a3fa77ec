#!/bin/sh
# Runs every test of one build: cmocka unit tests, end-to-end scripts and the fuzz
# targets over their corpora. Usage: BUILD=build/release sh tests/run.sh
# Prints "BUILD: N passed, N failed" last and exits non-zero when anything failed.
set -u
BUILD=${BUILD:-build/release}
export CARMA_BIN="$BUILD/bin" CARMA_BUILD="$BUILD" CARMA_FAKE="$BUILD/fake"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
pass=0; fail=0; failed=""
run() { # name, command...
    name=$1; shift
    log="$BUILD/logs/$(echo "$name" | tr '/ ' '__').log"
    mkdir -p "$BUILD/logs"
    if "$@" >"$log" 2>&1; then pass=$((pass + 1)); echo "ok   $name"
    else fail=$((fail + 1)); failed="$failed $name"; echo "FAIL $name (log: $log)"; tail -n 30 "$log"; fi
}
for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    run "unit/$(basename "$t")" "$t"
done
for t in tests/e2e/*.sh; do
    [ -f "$t" ] || continue
    run "e2e/$(basename "$t" .sh)" sh "$t"
done
for f in "$BUILD"/fuzz/fuzz_*; do
    [ -x "$f" ] || continue
    n=$(basename "$f"); c="tests/fuzz/corpus/${n#fuzz_}"
    run "fuzz/$n" "$f" -runs=2000 "$c"
done
echo "$(basename "$BUILD"): $pass passed, $fail failed"
[ "$fail" -eq 0 ] || { echo "failed:$failed"; exit 1; }
