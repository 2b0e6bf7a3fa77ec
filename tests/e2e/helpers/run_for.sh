#!/bin/sh
# Runs for $1 seconds, then prints "done" (a long job when $1 is large).
echo "start $$"
sleep "$1"
echo done
