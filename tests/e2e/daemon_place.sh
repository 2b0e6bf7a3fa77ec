#!/bin/sh
# carmad's placements against what its GPUs hold now, on the fake libnvidia-ml.so.1: a
# job past its hold keeps that memory from the next job; a process carma did not start on
# the GPU does not keep a job without a profile waiting for ever; memory a job uses on a
# GPU it was not given is that GPU's foreign memory only; CARMA's est-* policies
# read the job's bound as its requirement.
# Skipped while the fake library is missing.
. "$(dirname "$0")/helpers/daemon_lib.sh"
fake_nvml || { echo "daemon_place: skipped (no fake libnvidia-ml.so.1)"; exit 0; }
GPU='name="NVIDIA A100-SXM4-40GB" mem_total=40960MiB util=0 mem_util=0 power_mw=55000 power_limit_mw=400000 energy_mj=1000000'
printf 'driver 550.54.15\ngpu uuid=GPU-fa4e0000-0000-4000-8000-000000000000 %s mem_used=0\n' "$GPU" \
    >"$T/nvml.state"
export CARMA_FAKE_NVML_STATE="$T/nvml.state"
# a job's solo profile within a second of its start
printf '[sched]\ngrace = 0.5\n[monitor]\nwindow = 2\n' >>"$T/carmad.ini"
start_daemon --gpus nvml --nvml-lib "$LIB"

step "a job past its hold: its memory is not handed out again"
b=$(submit --mem 20000 -- sleep 1) # runs once alone: its solo profile is kept
"$CARMA" wait --timeout 20 "$b" >/dev/null || fail "job $b: $(state_of "$b")"
a=$(submit --mem 10000 -- sleep 300)
wait_until 10 test -s "$T/state/jobs/$a/1/shepherd" || fail "job $a did not start"
sid=$(shepherd_of "$a")
wait_until 10 sh -c "pgrep -s $sid -x sleep" || fail "job $a's process"
sed -i 's/mem_used=0/mem_used=30720MiB/' "$T/nvml.state"
echo "proc 0 pid=$(pgrep -s "$sid" -x sleep | head -n 1) mem=30720MiB" >>"$T/nvml.state"
wait_until 10 sh -c "\"$CARMA\" show $a | grep -q 'now 30720)'" || fail "job $a's memory"
wait_until 10 grep -q "job $a: solo SMACT" "$T/carmad.log" || fail "job $a's profile"
b2=$(submit --mem 20000 -- sleep 1) # 20000 MiB asked, 10240 free
sleep 1.5
[ "$(state_of "$b2")" = queued ] || fail "job $b2 placed beside a job using 30 GiB: $(state_of "$b2")"
"$CARMA" cancel "$a" >/dev/null || fail "cancel $a"
sed -i '/^proc 0 /d; s/mem_used=30720MiB/mem_used=0/' "$T/nvml.state"
"$CARMA" wait --timeout 20 "$b2" >/dev/null || fail "job $b2 once the GPU is free: $(state_of "$b2")"

step "a foreign process on the GPU: a job without a profile still runs"
sed -i 's/mem_used=0/mem_used=600MiB/' "$T/nvml.state"
echo "proc 0 pid=1 mem=600MiB" >>"$T/nvml.state" # init: no job's
wait_until 10 sh -c "\"$CARMA\" gpus --json | grep -q '\"foreign_processes\": *1'" || fail "the foreign process: $("$CARMA" gpus --json)"
n=$(submit --mem 1000 -- sh -c 'exit 0') # a command never run before: no profile
"$CARMA" wait --timeout 10 "$n" >/dev/null || fail "job $n beside a foreign process: $(state_of "$n")"
stop_daemon || fail "carmad did not stop cleanly"

step "a job's memory on a GPU it was not given is that GPU's foreign memory, not over its hold"
rm -rf "$T/state"
printf 'driver 550.54.15\ngpu uuid=GPU-fa4e0000-0000-4000-8000-000000000000 %s mem_used=0\ngpu uuid=GPU-fa4e0000-0000-4000-8000-000000000001 %s mem_used=0\n' "$GPU" "$GPU" >"$T/nvml.state"
start_daemon --gpus nvml --nvml-lib "$LIB"
b=$(submit --mem 20000 -- sleep 1) # its solo profile
"$CARMA" wait --timeout 20 "$b" >/dev/null || fail "job $b: $(state_of "$b")"
a=$(submit --mem 10000 -- sleep 300)
wait_until 10 test -s "$T/state/jobs/$a/1/shepherd" || fail "job $a did not start"
sid=$(shepherd_of "$a")
wait_until 10 sh -c "pgrep -s $sid -x sleep" || fail "job $a's process"
ga=$("$CARMA" show --json "$a" | python3 -c 'import json,sys; print(json.load(sys.stdin)["gpu_uuids"][0][-1])')
go=$((1 - ga))
# its script also uses the other GPU (30 GiB there), nothing on its own
sed -i "/00000000000$go/s/mem_used=0/mem_used=30720MiB/" "$T/nvml.state"
echo "proc $go pid=$(pgrep -s "$sid" -x sleep | head -n 1) mem=30720MiB" >>"$T/nvml.state"
wait_until 10 sh -c "\"$CARMA\" show $a | grep -q 'now 30720)'" || fail "job $a's memory"
wait_until 10 grep -q "job $a: solo SMACT" "$T/carmad.log" || fail "job $a's profile"
b2=$(submit --mem 20000 -- sleep 1) # its own GPU has 40960 - 10000 - 512 for it
"$CARMA" wait --timeout 10 "$b2" >/dev/null || fail "job $b2 not beside job $a: $(state_of "$b2")"
"$CARMA" cancel "$a" >/dev/null
stop_daemon || fail "carmad did not stop cleanly"
rm -rf "$T/state"
printf 'driver 550.54.15\ngpu uuid=GPU-fa4e0000-0000-4000-8000-000000000000 %s mem_used=0MiB\n' "$GPU" >"$T/nvml.state"

step "est-magm: the estimator's bound is the requirement"
SUM=$(cd "$(dirname "$0")/../.." && pwd)/data/estimator/cifar-summaries/resnet18cifar100_32.model
want=$("$CARMA" estimate --summary "$SUM" --batch 1024 --json |
    awk -F: '/"bound_mib"/ {gsub(/[ ,]/, "", $2); v = $2 + 0; i = int(v); if (v > i) i++; print i}')
[ -n "$want" ] || fail "no bound from carma estimate"
# free, less CARMA's 512 MiB: half the bound over the 2048 MiB margin; a foreign process
used=$((40960 - 512 - 2048 - want / 2))
sed -i "/^proc 0 /d; s/mem_used=[0-9]*MiB/mem_used=${used}MiB/" "$T/nvml.state"
echo "proc 0 pid=1 mem=${used}MiB" >>"$T/nvml.state"
start_daemon --gpus nvml --nvml-lib "$LIB" --policy est-magm
e=$(submit --summary "$SUM" --batch 1024 --mem 100 -- true est)
sleep 1.5
[ "$(state_of "$e")" = queued ] ||
    fail "job $e (bound $want MiB) placed with $((want / 2 + 2048)) MiB free: $(state_of "$e")"
sed -i "/^proc 0 /d; s/mem_used=[0-9]*MiB/mem_used=0MiB/" "$T/nvml.state"
"$CARMA" wait --timeout 10 "$e" >/dev/null || fail "job $e once the GPU is free: $(state_of "$e")"
# the requirement was the bound; what the user declared stays theirs
"$CARMA" show "$e" | grep -q "memory 100 MiB" || fail "job $e's --mem shown: $("$CARMA" show "$e" | grep memory)"
# ... and a job that declared none reads so, not as "memory 0 MiB"
e2=$(submit --summary "$SUM" --batch 8 -- true est)
"$CARMA" wait --timeout 10 "$e2" >/dev/null || fail "job $e2: $(state_of "$e2")"
"$CARMA" show "$e2" | grep -q "memory none declared (bound [1-9]" ||
    fail "job $e2's memory line: $("$CARMA" show "$e2" | grep memory)"
stop_daemon || fail "carmad did not stop cleanly"

step "a solo profile is of the job's work, not of its start-up before it reaches the GPU"
rm -rf "$T/state"
printf 'driver 550.54.15\ngpu uuid=GPU-fa4e0000-0000-4000-8000-000000000000 %s mem_used=0MiB\n' "$GPU" >"$T/nvml.state"
sed -i 's/^window = 2$/window = 30/' "$T/carmad.ini" # a window of 6 s
n0=$(wc -l <"$T/carmad.log") # job ids start again at 1: this carmad's lines only
since() { tail -n +$((n0 + 1)) "$T/carmad.log"; }
start_daemon --gpus nvml --nvml-lib "$LIB"
w=$(submit --mem 1000 -- sleep 301)
wait_until 10 test -s "$T/state/jobs/$w/1/shepherd" || fail "job $w did not start"
sid=$(shepherd_of "$w")
wait_until 10 sh -c "pgrep -s $sid -x sleep" || fail "job $w's process"
sleep 1 # its start-up: nothing on the GPU, which is idle
sed -i 's/ util=0 / util=80 /; s/mem_used=0MiB/mem_used=900MiB/' "$T/nvml.state"
echo "proc 0 pid=$(pgrep -s "$sid" -x sleep | head -n 1) mem=900MiB" >>"$T/nvml.state"
wait_until 20 sh -c "tail -n +$((n0 + 1)) \"$T/carmad.log\" | grep -q 'job $w: solo SMACT'" ||
    fail "job $w's profile"
since | grep -q "job $w: solo SMACT 0.80 " ||
    fail "job $w's profile took in its start-up: $(since | grep "job $w: solo")"
"$CARMA" cancel "$w" >/dev/null
stop_daemon || fail "carmad did not stop cleanly"

step "a profile of a start-up alone, never measured once the job reached the GPU, is not kept"
sed -i 's/ util=80 / util=0 /; s/mem_used=900MiB/mem_used=0MiB/; /^proc /d' "$T/nvml.state"
sed -i 's/^window = 30$/window = 10/' "$T/carmad.ini" # 2 s
n0=$(wc -l <"$T/carmad.log")
start_daemon --gpus nvml --nvml-lib "$LIB"
u=$(submit --mem 1000 -- sleep 302)
# 2.5 s without reaching the GPU: a profile of its start-up
wait_until 20 sh -c "tail -n +$((n0 + 1)) \"$T/carmad.log\" | grep -q 'job $u: solo SMACT 0.00 '" ||
    fail "job $u's start-up profile: $(since | grep "job $u: solo")"
sid=$(shepherd_of "$u")
sed -i 's/ util=0 / util=80 /; s/mem_used=0MiB/mem_used=900MiB/' "$T/nvml.state"
echo "proc 0 pid=$(pgrep -s "$sid" -x sleep | head -n 1) mem=900MiB" >>"$T/nvml.state"
wait_until 10 sh -c "\"$CARMA\" show $u | grep -q 'now 900)'" || fail "job $u's memory"
"$CARMA" cancel "$u" >/dev/null # before a window of its work: 2.5 s more
"$CARMA" wait --timeout 10 "$u" >/dev/null
sed -i 's/ util=80 / util=0 /; s/mem_used=900MiB/mem_used=0MiB/; /^proc /d' "$T/nvml.state"
u2=$(submit --mem 1000 -- sleep 302)
"$CARMA" show --json "$u2" | python3 -c 'import json,sys; j = json.load(sys.stdin); sys.exit(0 if "solo_smact" in j and j["solo_smact"] is None else 1)' ||
    fail "job $u2 starts with its start-up's profile: $("$CARMA" show --json "$u2" | grep solo)"
"$CARMA" show --json "$u" | python3 -c 'import json,sys; a = json.load(sys.stdin)["attempt_list"][0]; sys.exit(0 if "solo_smact" in a and a["solo_smact"] is None else 1)' ||
    fail "attempt 1 of job $u keeps the start-up profile"
"$CARMA" cancel "$u2" >/dev/null
echo "daemon_place: ok"
