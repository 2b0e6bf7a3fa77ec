#!/bin/sh
# Runs every benchmark of a release build and prints its figures.
set -eu
B=${1:-build/release}
for b in "$B"/bench/bench_*; do
    [ -x "$b" ] || continue
    echo "== $(basename "$b")"
    "$b"
done
