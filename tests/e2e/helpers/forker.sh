#!/bin/sh
# Starts children (one in a session of its own) and records every pid in $1.
sleep 1000 & a=$!
sh -c 'sleep 1000' & b=$!
setsid sleep 1000 & c=$!
echo "$$ $a $b $c" > "$1.tmp" && mv "$1.tmp" "$1"
wait
