#!/bin/sh
# Builds each fuzz target with libFuzzer (clang) and fuzzes it for N seconds.
set -eu
B=$1; SECS=$2
PCL=$(pkg-config --cflags --libs sqlite3 jansson inih libmicrohttpd ncursesw)
for t in tests/fuzz/fuzz_*.c; do
    n=$(basename "$t" .c); c="tests/fuzz/corpus/${n#fuzz_}"
    mkdir -p "$B/lf" "$B/lf-corpus/$n"
    clang -std=c17 -D_GNU_SOURCE -Isrc -g -O1 -fsanitize=fuzzer,address,undefined \
        -o "$B/lf/$n" "$t" "$B/libcarmad.a" "$B/libcarma.a" $PCL -ldl -lm -lpthread
    "$B/lf/$n" -max_total_time="$SECS" "$B/lf-corpus/$n" "$c"
done
