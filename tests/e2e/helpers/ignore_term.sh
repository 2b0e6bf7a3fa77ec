#!/bin/sh
# Ignores SIGTERM; writes its pid to $1 and runs until killed.
trap '' TERM
echo $$ > "$1"
while :; do sleep 1; done
