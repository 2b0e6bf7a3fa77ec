#!/bin/sh
# Jobs in bulk, for scripts and administrators: `carma ls -q` prints the ids alone.
. "$(dirname "$0")/helpers/daemon_lib.sh"
# one GPU, one job at a time: the first runs, the others wait
start_daemon --gpus sim:1xa100-40gb --policy exclusive
refused() { # EXPECTED-MESSAGE ARGS...: carma ARGS exits 2 saying EXPECTED-MESSAGE
    _m=$1; shift
    _rc=0; "$CARMA" "$@" >"$T/p.out" 2>"$T/p.err" || _rc=$?
    [ "$_rc" = 2 ] && grep -q -- "$_m" "$T/p.err" || fail "carma $*: exit $_rc, $(cat "$T/p.err")"
}
lines() { printf '%s\n' "$@"; }

step "ls -q: the ids alone, one a line, no header; --all adds the ended ones"
d=$(submit -- true)
"$CARMA" wait "$d" >/dev/null || fail "job $d"
a=$(submit -- sleep 60); b=$(submit -- sleep 60); c=$(submit -- sleep 60)
[ "$("$CARMA" ls -q)" = "$(lines "$a" "$b" "$c")" ] || fail "ls -q: $("$CARMA" ls -q)"
[ "$("$CARMA" ls --quiet --all)" = "$(lines "$d" "$a" "$b" "$c")" ] ||
    fail "ls --quiet --all: $("$CARMA" ls --quiet --all)"
refused "-q (ids alone) and --json (every field) exclude each other" ls -q --json
# for scripts: what it prints, carma cancel takes
"$CARMA" ls -q | xargs "$CARMA" cancel || fail "ls -q | xargs cancel"
wait_until 10 sh -c "[ -z \"\$('$CARMA' ls -q)\" ]" || fail "left after ls -q | xargs cancel: $("$CARMA" ls)"

stop_daemon TERM || fail "stop"
echo "daemon_cancel: ok"
