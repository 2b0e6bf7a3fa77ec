#!/bin/sh
# carmad on GPUs shared by MPS ([sharing] default = mps), simulated GPUs and real
# processes: a job's clients are capped at its hold plus the margin
# (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT) with a share of the SMs; a job that ran out of memory
# under its cap reruns on a GPU of its own without the cap (under the same cap it would
# crash again: an H200 showed three OOMs in a row).
. "$(dirname "$0")/helpers/daemon_lib.sh"
printf '[sharing]\ndefault = mps\n[sched]\ngrace = 0.4\n[monitor]\nwindow = 2\n' >>"$T/carmad.ini"
start_daemon --gpus sim:1xa100-40gb

# A job that records its MPS settings per attempt, and runs out of memory on its first.
cat >"$T/job.sh" <<'JOB'
env | grep '^CUDA_MPS_' | sort >"$1.$CARMA_JOB_ATTEMPT"
[ "$CARMA_JOB_ATTEMPT" = 1 ] || exit 0
echo "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB." >&2
exit 1
JOB

step "an MPS client is capped at its hold plus the margin"
a=$(submit --mem 2G -- sh "$T/job.sh" "$T/a")
"$CARMA" wait --timeout 30 "$a" >/dev/null || fail "job $a: $(state_of "$a")"
grep -qx 'CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=2560M' "$T/a.1" ||
    fail "attempt 1's limit: $(cat "$T/a.1")"
grep -qx 'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100' "$T/a.1" ||
    fail "attempt 1's SM share: $(cat "$T/a.1")"
"$CARMA" show --json "$a" | grep -q '"outcome": "oom"' || fail "attempt 1 not an oom"

step "after an OOM under its cap the job reruns without one"
[ "$(attempts_of "$a")" = 2 ] || fail "job $a: $(attempts_of "$a") attempts, 2 expected"
[ -f "$T/a.2" ] || fail "no second attempt recorded"
grep -q PINNED_DEVICE_MEM_LIMIT "$T/a.2" && fail "attempt 2 capped again: $(cat "$T/a.2")"
grep -q '^CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=' "$T/a.2" || fail "attempt 2's SM share: $(cat "$T/a.2")"

step "a user's own CUDA_MPS_ settings are not the job's"
b=$(CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=100G CUDA_MPS_PIPE_DIRECTORY=/tmp/x \
    submit --mem 1G -- sh -c 'env | grep "^CUDA_MPS_" | sort >"$0"' "$T/b")
"$CARMA" wait --timeout 30 "$b" >/dev/null || fail "job $b: $(state_of "$b")"
grep -qx 'CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=1536M' "$T/b" || fail "job $b's limit: $(cat "$T/b")"
grep -q PIPE_DIRECTORY "$T/b" && fail "the submitter's pipe folder reached the job"
step "a job with a profile gets a share of the SMs; its exclusive rerun all of them"
cat >"$T/job2.sh" <<'JOB'
env | grep '^CUDA_MPS_' | sort >"$1.$CARMA_JOB_ID.$CARMA_JOB_ATTEMPT"
if [ -e "$1.oom" ] && [ "$CARMA_JOB_ATTEMPT" = 1 ]; then
    echo "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB." >&2
    exit 1
fi
sleep 1.5
JOB
c=$(submit --mem 1G -- sh "$T/job2.sh" "$T/c") # alone: its profile, 0.3 on sim
"$CARMA" wait --timeout 30 "$c" >/dev/null || fail "job $c: $(state_of "$c")"
"$CARMA" show "$c" | grep -q "solo SMACT 0.30" || fail "job $c's profile: $("$CARMA" show "$c" | grep -i smact)"
: >"$T/c.oom"
c2=$(submit --mem 1G -- sh "$T/job2.sh" "$T/c")
"$CARMA" wait --timeout 30 "$c2" >/dev/null || fail "job $c2: $(state_of "$c2")"
grep -qx 'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=45' "$T/c.$c2.1" ||
    fail "attempt 1's SM share (profile 0.3): $(cat "$T/c.$c2.1")"
grep -qx 'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100' "$T/c.$c2.2" ||
    fail "the exclusive attempt's SM share: $(cat "$T/c.$c2.2")"
step "CARMA's policies set no MPS limit, as CARMA does not"
stop_daemon TERM || fail "stop"
start_daemon --gpus sim:1xa100-40gb --policy oracle-ff
r=$(submit --mem 1G -- sh -c 'env | grep "^CUDA_MPS_" | sort >"$0"; :' "$T/r")
"$CARMA" wait --timeout 30 "$r" >/dev/null || fail "job $r: $(state_of "$r")"
[ -f "$T/r" ] && [ ! -s "$T/r" ] || fail "MPS limits under oracle-ff: $(cat "$T/r")"
echo "daemon_mps: ok"
