#!/bin/sh
# Starts children (one in a session of its own, one a grandchild) and exits without
# waiting for them, recording every pid in $1.
sleep 1000 & a=$!
sh -c 'sleep 1000 & echo $! > "$0.gc"; wait' "$1" & b=$!
setsid sleep 1000 & c=$!
while [ ! -s "$1.gc" ]; do sleep 0.05; done
echo "$a $b $(cat "$1.gc") $c" > "$1.tmp" && mv "$1.tmp" "$1"
exit 0
