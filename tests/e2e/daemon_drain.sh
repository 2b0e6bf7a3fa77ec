#!/bin/sh
# carma drain / undrain on simulated GPUs (docs/daemon.md, "Draining a GPU by hand"): a
# drained GPU takes no new job while the one on it runs to its end, a job needing every
# GPU waits, the drain and its reason (who, when) survive carmad's restart, undrain puts
# the GPU back (one in service already: said, exit 0), bad requests are refused, and only root or carmad's user may do either.
. "$(dirname "$0")/helpers/daemon_lib.sh"
PORT=$(free_port) || fail "no free TCP port"
start_daemon --gpus sim:4xa100-40gb --policy exclusive --http "127.0.0.1:$PORT"
UUID1=GPU-SIM-0000-0000-0000-000000000001

# the index of the GPU job $1's last attempt ran on
gpu_of() {
    "$CARMA" show --json "$1" | python3 -c '
import json, sys
u = json.load(sys.stdin)["attempt_list"][-1]["gpu_uuids"][0]
print(int(u.rsplit("-", 1)[1]))'
}
field() { "$CARMA" gpus --json | python3 -c "import json,sys; print(json.load(sys.stdin)['gpus'][$1]['$2'])"; }
# a job that runs until file $1 exists
hold() { submit "$@" -- sh -c "while [ ! -e $T/go.\$CARMA_JOB_ID ]; do sleep 0.05; done"; }
go() { touch "$T/go.$1"; }

step "a drain holds no new job but lets the job on the GPU run to its end"
j0=$(hold); j1=$(hold); j2=$(hold); j3=$(hold)
for j in $j0 $j1 $j2 $j3; do wait_until 10 is_state "$j" running || fail "job $j: $(state_of "$j")"; done
on1=
for j in $j0 $j1 $j2 $j3; do [ "$(gpu_of "$j")" = 1 ] && on1=$j; done
[ -n "$on1" ] || fail "no job on GPU 1: $("$CARMA" gpus)"
out=$("$CARMA" drain 1 --reason "fan swap, back by noon") || fail "drain refused"
echo "$out" | grep -Eq "^GPU 1 \($UUID1\) drained: drained by $(id -un) at [0-9-]{10}T[0-9:]{8}Z: fan swap, back by noon$" ||
    fail "drain said: $out"
"$CARMA" gpus | grep -q "^1 .* DRAINED: drained by $(id -un) at .*Z: fan swap, back by noon$" ||
    fail "carma gpus: $("$CARMA" gpus)"
[ "$(field 1 drained)" = True ] || fail "gpus --json: not drained"
field 1 drain_reason | grep -q "^drained by $(id -un) at .*: fan swap, back by noon$" ||
    fail "gpus --json reason: $(field 1 drain_reason)"
grep -q "^$UUID1	drained by $(id -un) at .*Z: fan swap, back by noon$" "$T/state/drained" ||
    fail "STATE/drained: $(cat "$T/state/drained" 2>&1)"
grep -q "GPU 1 ($UUID1) drained by $(id -un) at .*: drained, no new jobs go to it" "$T/carmad.log" ||
    fail "the drain not logged"
if command -v curl >/dev/null; then
    wait_until 5 sh -c "curl -sf http://127.0.0.1:$PORT/metrics | grep -q '^carma_gpu_drained{gpu=\"1\",.*} 1$'" ||
        fail "/metrics: $(curl -sf "http://127.0.0.1:$PORT/metrics" | grep carma_gpu_drained)"
fi
# a second drain says so and keeps the first reason
err=$("$CARMA" drain "$UUID1" --reason other 2>&1 >/dev/null) || fail "drain again refused: $err"
echo "$err" | grep -q "GPU 1 ($UUID1) was drained already: drained by .*: fan swap, back by noon (its reason kept)" ||
    fail "drain again said: $err"
field 1 drain_reason | grep -q "fan swap" || fail "the first reason replaced: $(field 1 drain_reason)"
# the job on GPU 1 runs on, and ends as it would have
is_state "$on1" running || fail "the job on the drained GPU: $(state_of "$on1")"
go "$on1"
"$CARMA" wait --timeout 20 "$on1" >/dev/null || fail "the job on the drained GPU: $(state_of "$on1")"
[ "$(attempts_of "$on1")" = 1 ] || fail "the job on the drained GPU retried"

step "single-GPU jobs never land on GPU 1; a job needing all four waits"
for j in $j0 $j1 $j2 $j3; do [ "$j" = "$on1" ] || go "$j"; done
for j in $j0 $j1 $j2 $j3; do "$CARMA" wait --timeout 20 "$j" >/dev/null || fail "job $j: $(state_of "$j")"; done
k1=$(hold); k2=$(hold); k3=$(hold); k4=$(hold)
for j in $k1 $k2 $k3; do wait_until 10 is_state "$j" running || fail "job $j: $(state_of "$j")"; done
for j in $k1 $k2 $k3; do [ "$(gpu_of "$j")" != 1 ] || fail "job $j placed on the drained GPU"; done
all=$(hold --gpus 4)
sleep 1 # monitor ticks and scheduler steps: still nothing on GPU 1
is_state "$k4" queued || fail "a 4th single-GPU job: $(state_of "$k4") on GPU $(gpu_of "$k4")"
is_state "$all" queued || fail "the 4-GPU job: $(state_of "$all")"
"$CARMA" show "$all" | grep -q "asks for 4 GPUs: 3 of the 4 GPUs are in service" ||
    fail "the 4-GPU job's waiting reason: $("$CARMA" show "$all")"

step "carmad restarts: GPU 1 still drained, with its reason"
stop_daemon TERM || fail "stop"
start_daemon --gpus sim:4xa100-40gb --policy exclusive --http "127.0.0.1:$PORT"
"$CARMA" gpus | grep -q "^1 .* DRAINED: drained by $(id -un) at .*: fan swap, back by noon before carmad restarted$" ||
    fail "GPU 1 back in service after a restart: $("$CARMA" gpus)"
sleep 1
is_state "$k4" queued || fail "a 4th single-GPU job after the restart: $(state_of "$k4")"

step "undrain of a GPU in service says so and exits 0, as a second drain does"
rc=0; out=$("$CARMA" undrain 2 2>"$T/err") || rc=$?
[ "$rc" = 0 ] && [ -z "$out" ] &&
    grep -q "^carma undrain: GPU 2 (GPU-SIM-0000-0000-0000-000000000002) was in service already (not drained)$" "$T/err" ||
    fail "undrain of a GPU in service: exit $rc, $out, $(cat "$T/err")"
grep -q "GPU 2 (GPU-SIM-0000-0000-0000-000000000002): carma undrain by $(id -un): in service already" "$T/carmad.log" ||
    fail "the undrain of a GPU in service not logged"
"$CARMA" undrain --json 2 | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["ok"] is True and r["gpu"] == 2 and r["already"] is True and r["was"] == "", r' ||
    fail "undrain --json of a GPU in service"
[ "$(field 2 drained)" = False ] || fail "GPU 2 drained by an undrain"
grep -q "GPU-SIM-0000-0000-0000-000000000002" "$T/state/drained" && fail "GPU 2 written to STATE/drained"

step "errors: an unknown GPU, a bad reason"
rc=0; "$CARMA" drain 4 2>"$T/err" || rc=$?
[ "$rc" = 2 ] && grep -q "carma drain: no GPU 4: this server's GPUs are 0 to 3" "$T/err" ||
    fail "drain 4: exit $rc, $(cat "$T/err")"
rc=0; "$CARMA" undrain GPU-nowhere 2>"$T/err" || rc=$?
[ "$rc" = 2 ] && grep -q "carma undrain: no GPU GPU-nowhere on this server" "$T/err" ||
    fail "undrain of an unknown UUID: exit $rc, $(cat "$T/err")"
rc=0; "$CARMA" drain 2 --reason "$(printf 'bad\033[2Jreason')" 2>"$T/err" || rc=$?
[ "$rc" = 2 ] && grep -q "printable ASCII" "$T/err" || fail "a reason with a control: exit $rc, $(cat "$T/err")"
# carmad's own check, past the client's
PYTHONPATH="$HELP" python3 - "$CARMA_SOCKET" <<'PY' || fail "carmad took a bad drain request"
import sys
from carmad_ask import ask
sock = sys.argv[1]
for req, why in [
    ({"gpu": 2, "reason": "a\tb"}, "request.reason: printable ASCII only"),
    ({"gpu": 2, "reason": "x" * 101}, "request.reason: longer than 100 bytes"),
    ({"gpu": 2, "reason": "   "}, "request.reason: printable ASCII only"),
    ({"gpu": 2, "reason": "caf\u00e9"}, "request.reason: printable ASCII only"),
    ({"gpu": 70000}, "request.gpu: 70000 out of range"),
    ({"gpu": -1}, "request.gpu: -1 out of range"),
    ({"gpu": True}, "request.gpu: neither a GPU index nor a UUID"),
    ({}, "request: missing field 'gpu'"),
    ({"gpu": 2, "force": True}, "request: unknown field 'force'"),
    ({"gpus": []}, "request.gpus: an array of 1 to 256 GPUs expected"),
    ({"gpus": list(range(257))}, "request.gpus: an array of 1 to 256 GPUs expected"),
    ({"gpus": 2}, "request.gpus: an array of 1 to 256 GPUs expected"),
    ({"gpus": [0, 70000]}, "request.gpus[1]: 70000 out of range [0, 65535]"),
    ({"gpus": [0, True]}, "request.gpus[1]: neither a GPU index nor a UUID"),
    ({"gpus": [0, "caf\u00e9"]}, "request.gpus[1]: neither a GPU index nor a UUID"),
    ({"gpu": 1, "gpus": [2]}, "request: one of 'gpu', 'gpus' and 'all', not 'gpu' and 'gpus'"),
    ({"all": True, "gpus": [2]}, "request: one of 'gpu', 'gpus' and 'all', not 'gpus' and 'all'"),
    ({"all": False}, "request.all: true or absent"),
]:
    r = ask(sock, dict({"v": 1, "op": "drain"}, **req))
    assert r["ok"] is False and r["error"] == "badrequest" and r["message"].startswith(why), (req, r)
r = ask(sock, {"v": 1, "op": "undrain", "gpu": 1, "reason": "x"})
assert r["ok"] is False and r["message"] == "request: unknown field 'reason'", r
r = ask(sock, {"v": 1, "op": "drain", "gpu": 2, "reason": "x" * 100})
assert r["ok"] is True and r["reason"].endswith(": " + "x" * 100), r
r = ask(sock, {"v": 1, "op": "undrain", "gpu": "GPU-SIM-0000-0000-0000-000000000002"})
assert r["ok"] is True and r["gpu"] == 2, r
PY
[ "$(field 2 drained)" = False ] || fail "GPU 2 left drained"
grep -q "GPU-SIM-0000-0000-0000-000000000002" "$T/state/drained" && fail "GPU 2's line left: $(cat "$T/state/drained")"

if [ "$ROOT" = 1 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
    step "only root or carmad's user may drain or undrain (client as nobody)"
    chmod 666 "$CARMA_SOCKET"
    nobody_client
    rc=0; as_nobody "$NB/carma" drain 0 2>"$T/err" || rc=$?
    [ "$rc" = 1 ] && grep -q "carma drain: permission denied: only root or carmad's own user (uid 0) may drain a GPU" "$T/err" ||
        fail "nobody's drain: exit $rc, $(cat "$T/err")"
    rc=0; as_nobody "$NB/carma" undrain 1 2>"$T/err" || rc=$?
    [ "$rc" = 1 ] && grep -q "permission denied: only root or carmad's own user (uid 0) may undrain a GPU" "$T/err" ||
        fail "nobody's undrain: exit $rc, $(cat "$T/err")"
    for a in all 0,2; do
        rc=0; as_nobody "$NB/carma" drain $a 2>"$T/err" || rc=$?
        [ "$rc" = 1 ] && grep -q "permission denied: only root or carmad's own user (uid 0) may drain a GPU" "$T/err" ||
            fail "nobody's drain $a: exit $rc, $(cat "$T/err")"
        rc=0; as_nobody "$NB/carma" undrain $a 2>"$T/err" || rc=$?
        [ "$rc" = 1 ] && grep -q "may undrain a GPU" "$T/err" || fail "nobody's undrain $a: exit $rc, $(cat "$T/err")"
    done
    [ "$(field 0 drained)" = False ] && [ "$(field 1 drained)" = True ] || fail "nobody changed a drain"
    as_nobody "$NB/carma" gpus | grep -q "^1 .* DRAINED: drained by" || fail "nobody does not see the drain"
else
    echo "(permission step skipped: needs root, setpriv and the user nobody)"
fi

step "undrain: GPU 1 takes jobs again; the 4-GPU job runs once all are free"
out=$("$CARMA" undrain 1) || fail "undrain refused"
echo "$out" | grep -q "^GPU 1 ($UUID1) back in service (it was drained: drained by .*: fan swap, back by noon before carmad restarted)$" ||
    fail "undrain said: $out"
grep -q "GPU 1 ($UUID1) undrained by $(id -un): back in service" "$T/carmad.log" || fail "the undrain not logged"
[ -s "$T/state/drained" ] && fail "STATE/drained keeps a line: $(cat "$T/state/drained")"
wait_until 10 is_state "$k4" running || fail "the 4th single-GPU job after undrain: $(state_of "$k4")"
[ "$(gpu_of "$k4")" = 1 ] || fail "the 4th job not on GPU 1: $(gpu_of "$k4")"
"$CARMA" gpus | grep -q DRAINED && fail "a GPU still drained: $("$CARMA" gpus)"
for j in $k1 $k2 $k3 $k4; do go "$j"; done
wait_until 20 is_state "$all" running || fail "the 4-GPU job: $(state_of "$all")"
go "$all"
"$CARMA" wait --timeout 20 "$all" >/dev/null || fail "the 4-GPU job: $(state_of "$all")"

step "carmad restarts: the undrain holds"
stop_daemon TERM || fail "stop"
start_daemon --gpus sim:4xa100-40gb --policy exclusive
"$CARMA" gpus | grep -q DRAINED && fail "a GPU drained again after a restart: $("$CARMA" gpus)"
stop_daemon TERM || fail "stop"

step "a line of a GPU this server does not have is kept, and said so at the start"
gone="GPU-5ca1ab1e-0000-4000-8000-00000000abcd"
printf '%s\treported Xid 79 (GPU has fallen off the bus)\n' "$gone" >"$T/state/drained"
start_daemon --gpus sim:4xa100-40gb --policy exclusive
grep -q "/drained: GPU $gone is not this server's: its line is kept, and it is drained if it comes back (reported Xid 79 (GPU has fallen off the bus))" "$T/carmad.log" ||
    fail "no word of the absent GPU's line: $(grep drained "$T/carmad.log")"
"$CARMA" gpus | grep -q DRAINED && fail "a GPU drained by another's line: $("$CARMA" gpus)"
"$CARMA" drain 3 --reason "fan" >/dev/null 2>&1 || fail "drain 3"
grep -q "^$gone	reported Xid 79" "$T/state/drained" || fail "the absent GPU's line lost: $(cat "$T/state/drained")"
"$CARMA" undrain 3 >/dev/null 2>&1 || fail "undrain 3"
[ "$(cat "$T/state/drained")" = "$gone	reported Xid 79 (GPU has fallen off the bus)" ] ||
    fail "STATE/drained after the undrain: $(cat "$T/state/drained")"
stop_daemon TERM || fail "stop"

step "several GPUs at once: a GPU not this server's, or named twice, refuses the whole list"
start_daemon --gpus sim:4xa100-40gb --policy exclusive
uuid() { echo "GPU-SIM-0000-0000-0000-00000000000$1"; }
nothing_drained() { # what carma gpus and STATE/drained say: no GPU drained, the absent GPU's line kept
    ! "$CARMA" gpus | grep -q DRAINED &&
        [ "$(cat "$T/state/drained")" = "$gone	reported Xid 79 (GPU has fallen off the bus)" ] ||
        fail "$1: $("$CARMA" gpus) $(cat "$T/state/drained")"
}
rc=0; "$CARMA" drain 0,2 GPU-nowhere --reason maint >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" = 2 ] && [ ! -s "$T/out" ] &&
    grep -q "^carma drain: no GPU GPU-nowhere on this server (carma gpus lists them); none of the 3 GPUs listed was drained$" "$T/err" ||
    fail "drain with an unknown UUID listed: exit $rc, $(cat "$T/out" "$T/err")"
nothing_drained "a list with an unknown UUID"
rc=0; "$CARMA" drain 3,0,7 2>"$T/err" || rc=$?
[ "$rc" = 2 ] && grep -q "^carma drain: no GPU 7: this server's GPUs are 0 to 3 (carma gpus lists them); none of the 3 GPUs listed was drained$" "$T/err" ||
    fail "drain with an unknown index listed: exit $rc, $(cat "$T/err")"
nothing_drained "a list with an unknown index"
rc=0; "$CARMA" drain 1 "$UUID1" 2>"$T/err" || rc=$?
[ "$rc" = 2 ] && grep -q "^carma drain: GPU 1 ($UUID1) is named twice; none of the 2 GPUs listed was drained$" "$T/err" ||
    fail "drain of a GPU named twice: exit $rc, $(cat "$T/err")"
nothing_drained "a list naming a GPU twice"
for a in 0,,2 0, ,1 "all 2" all,1; do
    rc=0; "$CARMA" drain $a 2>"$T/err" || rc=$?
    [ "$rc" = 2 ] && grep -Eq "an empty GPU in the list|'all' stands alone" "$T/err" ||
        fail "drain $a: exit $rc, $(cat "$T/err")"
done
nothing_drained "the client's refusals"

step "drain 0,2 3: each GPU's outcome, one write of STATE/drained"
out=$("$CARMA" drain 0,2 3 --reason maint) || fail "drain 0,2 3 refused"
[ "$(echo "$out" | wc -l)" = 3 ] || fail "drain 0,2 3 said: $out"
for g in 0 2 3; do
    echo "$out" | grep -q "^GPU $g ($(uuid $g)) drained: drained by $(id -un) at .*Z: maint$" || fail "drain 0,2 3 said: $out"
    [ "$(field $g drained)" = True ] || fail "GPU $g not drained"
    grep -q "^$(uuid $g)	drained by $(id -un) at .*: maint$" "$T/state/drained" || fail "STATE/drained: $(cat "$T/state/drained")"
done
[ "$(field 1 drained)" = False ] || fail "GPU 1 drained by drain 0,2 3"

step "drain all: the GPU in service drained, those drained already said so"
out=$("$CARMA" drain all --reason "driver upgrade" 2>"$T/err") || fail "drain all refused: $(cat "$T/err")"
echo "$out" | grep -q "^GPU 1 ($UUID1) drained: drained by $(id -un) at .*: driver upgrade$" && [ "$(echo "$out" | wc -l)" = 1 ] ||
    fail "drain all said: $out"
[ "$(grep -c "was drained already: drained by .*: maint (its reason kept)$" "$T/err")" = 3 ] || fail "drain all said: $(cat "$T/err")"
[ "$(wc -l <"$T/state/drained")" = 5 ] || fail "STATE/drained after drain all: $(cat "$T/state/drained")"

step "undrain with a bad entry refuses the whole list; undrain all puts every GPU back"
rc=0; "$CARMA" undrain 0,1,9 2>"$T/err" || rc=$?
[ "$rc" = 2 ] && grep -q "^carma undrain: no GPU 9: this server's GPUs are 0 to 3 (carma gpus lists them); none of the 3 GPUs listed was undrained$" "$T/err" ||
    fail "undrain with an unknown index listed: exit $rc, $(cat "$T/err")"
rc=0; "$CARMA" undrain all 9 2>"$T/err" || rc=$?
[ "$rc" = 2 ] && grep -q "'all' stands alone" "$T/err" || fail "undrain all 9: exit $rc, $(cat "$T/err")"
for g in 0 1 2 3; do [ "$(field $g drained)" = True ] || fail "GPU $g undrained by a refused undrain"; done
[ "$(wc -l <"$T/state/drained")" = 5 ] || fail "STATE/drained after a refused undrain: $(cat "$T/state/drained")"
"$CARMA" undrain --json 0,1 >"$T/out" || fail "undrain --json 0,1"
python3 - "$T/out" <<'PY' || fail "undrain --json 0,1: $(cat "$T/out")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ok"] is True and [g["gpu"] for g in r["gpus"]] == [0, 1], r
assert all(g["already"] is False and "stays_drained" not in g for g in r["gpus"]), r
assert r["gpus"][0]["was"].endswith(": maint") and r["gpus"][1]["was"].endswith(": driver upgrade"), r
PY
out=$("$CARMA" undrain all 2>"$T/err") || fail "undrain all refused: $(cat "$T/err")"
for g in 2 3; do
    echo "$out" | grep -q "^GPU $g ($(uuid $g)) back in service (it was drained: drained by .*: maint)$" || fail "undrain all said: $out"
done
for g in 0 1; do
    grep -q "^carma undrain: GPU $g ($(uuid $g)) was in service already (not drained)$" "$T/err" || fail "undrain all said: $(cat "$T/err")"
done
nothing_drained "after undrain all"

step "a write of STATE/drained that fails changes none of the GPUs listed, nor the next write"
# the write's temporary file cannot be made: the write fails as on a full or read-only disk
mkdir "$T/state/.drained.tmp"
rc=0; "$CARMA" drain 0,1 --reason maint >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" = 1 ] && [ ! -s "$T/out" ] && grep -q "^carma drain: $T/state/.drained.tmp: open: Is a directory: none of the 2 GPUs was drained$" "$T/err" ||
    fail "drain 0,1 whose write fails: exit $rc, $(cat "$T/out" "$T/err")"
nothing_drained "a drain whose write failed"
rmdir "$T/state/.drained.tmp"
"$CARMA" drain 2 --reason fan >/dev/null 2>&1 || fail "drain 2"
# the lines of the failed drain went with it: the next write has GPU 2's and the absent GPU's
[ "$(grep -c . "$T/state/drained")" = 2 ] && grep -q "^$(uuid 2)	drained by .*: fan$" "$T/state/drained" ||
    fail "STATE/drained after a failed drain and drain 2: $(cat "$T/state/drained")"
mkdir "$T/state/.drained.tmp"
rc=0; "$CARMA" undrain all >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" = 1 ] && [ ! -s "$T/out" ] && grep -q "^carma undrain: $T/state/.drained.tmp: open: Is a directory: none of the 4 GPUs was undrained$" "$T/err" ||
    fail "undrain all whose write fails: exit $rc, $(cat "$T/out" "$T/err")"
[ "$(field 2 drained)" = True ] || fail "GPU 2 undrained by an undrain whose write failed"
rmdir "$T/state/.drained.tmp"
"$CARMA" drain 3 --reason psu >/dev/null 2>&1 || fail "drain 3"
# GPU 2's line, which the failed undrain would have removed, is still written
[ "$(grep -c . "$T/state/drained")" = 3 ] && grep -q "^$(uuid 2)	drained by .*: fan$" "$T/state/drained" ||
    fail "STATE/drained after a failed undrain and drain 3: $(cat "$T/state/drained")"
"$CARMA" undrain 2,3 >/dev/null || fail "undrain 2,3"
nothing_drained "after undrain 2,3"

step "a write of STATE/drained whose rename fails names it and leaves no temporary file"
# a folder at STATE/drained: the temporary file is written, its rename over it fails
mv "$T/state/drained" "$T/drained.keep"
mkdir "$T/state/drained"
rc=0; "$CARMA" drain 0 >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" = 1 ] && [ ! -s "$T/out" ] && grep -q "^carma drain: $T/state/.drained.tmp: rename to $T/state/drained: Is a directory: GPU 0 not drained$" "$T/err" ||
    fail "drain 0 whose rename fails: exit $rc, $(cat "$T/out" "$T/err")"
[ ! -e "$T/state/.drained.tmp" ] || fail "drain 0 whose rename failed left $T/state/.drained.tmp behind"
rc=0; "$CARMA" drain 0,1 >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" = 1 ] && grep -q "^carma drain: $T/state/.drained.tmp: rename to $T/state/drained: Is a directory: none of the 2 GPUs was drained$" "$T/err" ||
    fail "drain 0,1 whose rename fails: exit $rc, $(cat "$T/out" "$T/err")"
[ ! -e "$T/state/.drained.tmp" ] || fail "drain 0,1 whose rename failed left $T/state/.drained.tmp behind"
rmdir "$T/state/drained"
mv "$T/drained.keep" "$T/state/drained"
nothing_drained "drains whose rename failed"
stop_daemon TERM || fail "stop"

if fake_nvml state; then
    step "undrain all leaves a GPU with MIG enabled drained, said; listed, it refuses the list"
    cp "$EX" "$T/nvml.state"
    sed -i '/000000000001/s/$/ mig=1/' "$T/nvml.state"
    M1=GPU-fa4e0000-0000-4000-8000-000000000001
    CARMA_FAKE_NVML_STATE="$T/nvml.state" start_daemon --gpus nvml --nvml-lib "$LIB"
    "$CARMA" gpus | grep -q "^1 .*DRAINED" || fail "the MIG GPU not drained: $("$CARMA" gpus)"
    "$CARMA" drain 0 >/dev/null || fail "drain 0"
    rc=0; "$CARMA" undrain 0,1 2>"$T/err" || rc=$?
    [ "$rc" = 2 ] && grep -q "^carma undrain: GPU 1 ($M1) has MIG enabled, which carma does not place jobs on yet: it stays drained; none of the 2 GPUs listed was undrained$" "$T/err" ||
        fail "undrain 0,1 with GPU 1 under MIG: exit $rc, $(cat "$T/err")"
    [ "$(field 0 drained)" = True ] || fail "GPU 0 undrained by a refused list"
    out=$("$CARMA" undrain all 2>"$T/err") || fail "undrain all refused: $(cat "$T/err")"
    echo "$out" | grep -q "^GPU 0 (.*) back in service" && [ "$(echo "$out" | wc -l)" = 1 ] || fail "undrain all said: $out"
    grep -q "^carma undrain: GPU 1 ($M1) has MIG enabled, which carma does not place jobs on yet: it stays drained (" "$T/err" ||
        fail "undrain all said: $(cat "$T/err")"
    [ "$(field 0 drained)" = False ] && [ "$(field 1 drained)" = True ] || fail "after undrain all: $("$CARMA" gpus)"
    stop_daemon TERM || fail "stop"
else
    echo "(MIG step skipped: no fake libnvidia-ml.so.1)"
fi
echo "daemon_drain: ok"
