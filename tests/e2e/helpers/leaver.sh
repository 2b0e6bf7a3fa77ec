#!/bin/sh
# Starts children (one in a session of its own, a grandchild, and a grandchild under a
# process in a session of its own, which only a walk of the parent chain finds) and
# exits without waiting for them, recording every pid in $1.
sleep 1000 & a=$!
sh -c 'sleep 1000 & echo $! > "$0.gc"; wait' "$1" & b=$!
setsid sleep 1000 & c=$!
setsid sh -c 'sleep 1000 & echo "$$ $!" > "$0.sgc"; wait' "$1" &
while [ ! -s "$1.gc" ] || [ ! -s "$1.sgc" ]; do sleep 0.05; done
echo "$a $b $(cat "$1.gc") $c $(cat "$1.sgc")" > "$1.tmp" && mv "$1.tmp" "$1"
exit 0
