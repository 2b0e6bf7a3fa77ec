#!/bin/sh
# GPU islands (DESIGN.md 3): carmad reads which GPUs are linked from its backend (here the
# simulated one, "/" between islands), shows it in `carma gpus --json`, and a job on
# several GPUs takes GPUs of one island when they serve it as well as any.
. "$(dirname "$0")/helpers/daemon_lib.sh"

# the GPUs of job $1's first attempt, as their last UUID digits, one line
gpus_of() {
    "$CARMA" show --json "$1" | python3 -c '
import json, sys
print(" ".join(str(int(u.rsplit("-", 1)[1])) for u in json.load(sys.stdin)["attempt_list"][0]["gpus"]))'
}

start_daemon --gpus sim:2xa100-40gb/2xa100-40gb

step "carma gpus says each GPU's island"
"$CARMA" gpus --json >"$T/gpus.json" || fail "carma gpus --json"
[ "$(sed -n 's/^ *"island": \([0-9]*\),*$/\1/p' "$T/gpus.json" | tr '\n' ' ')" = "0 0 1 1 " ] ||
    fail "islands: $(grep island "$T/gpus.json")"
"$CARMA" gpus | grep -qx 'islands (GPUs linked by NVLink or PCIe switches): 0-1 | 2-3' ||
    fail "carma gpus: $("$CARMA" gpus)"

step "a 2-GPU job takes the island left idle, not the first idle GPUs"
a=$(submit --mem 1000 -- sleep 300)
wait_until 10 is_state "$a" running || fail "job $a: $(state_of "$a")"
[ "$(gpus_of "$a")" = "0" ] || fail "job $a on GPUs $(gpus_of "$a")"
b=$(submit --gpus 2 --mem 1000 -- sleep 300)
wait_until 10 is_state "$b" running || fail "job $b: $(state_of "$b")"
[ "$(gpus_of "$b")" = "2 3" ] || fail "the 2-GPU job on GPUs $(gpus_of "$b"), 2 and 3 expected"
"$CARMA" cancel "$a" "$b" >/dev/null || fail "cancel"
"$CARMA" wait --timeout 20 "$a" "$b" >/dev/null

step "without islands (no '/' in the spec): the first idle GPUs, as before"
stop_daemon
start_daemon --gpus sim:4xa100-40gb
c=$(submit --mem 1000 -- sleep 300)
wait_until 10 is_state "$c" running || fail "job $c: $(state_of "$c")"
d=$(submit --gpus 2 --mem 1000 -- sleep 300)
wait_until 10 is_state "$d" running || fail "job $d: $(state_of "$d")"
[ "$(gpus_of "$d")" = "1 2" ] || fail "without islands the 2-GPU job on GPUs $(gpus_of "$d")"
"$CARMA" gpus --json | grep -q '"island": 0' || fail "one island: every GPU's is 0"
"$CARMA" gpus | grep -q '^islands' && fail "one island listed: $("$CARMA" gpus)"
"$CARMA" cancel "$c" "$d" >/dev/null
"$CARMA" wait --timeout 20 "$c" "$d" >/dev/null
echo "ok"
