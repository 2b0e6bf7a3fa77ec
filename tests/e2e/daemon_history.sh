#!/bin/sh
# The job's memory bound (issue 4): max(estimator bound, --mem) for a job submitted
# with a model summary; once the same command, summary and options have run and
# succeeded on that kind of GPU, the bound comes from the observed peak of those runs
# (history beats the model); failed and cancelled runs are not history, nor are runs from
# another folder or with another allocator environment, nor a simulated GPU's for a real one of
# its name. The optimizer,
# precision, attention, heads, experts per token, shared-layer runs, a tied output head,
# gradient checkpointing and accumulation
# given to submit reach the estimator. A bad summary is refused, naming the file as carma estimate does.
. "$(dirname "$0")/helpers/daemon_lib.sh"

SUM=$(cd "$(dirname "$0")/../.." && pwd)/data/estimator/cifar-summaries/resnet18cifar100_32.model
[ -f "$SUM" ] || fail "missing $SUM"
json_int() { sed -n "s/^ *\"$2\": \\([0-9]*\\).*/\\1/p" "$1" | head -n 1; }
# bound_of FILE: the bound_mib of a carma estimate --json in FILE, in whole MiB up, as
# carmad stores a job's bound
bound_of() { awk -F: '/"bound_mib"/ {gsub(/[ ,]/, "", $2); v = $2 + 0; i = int(v); if (v > i) i++; print i}' "$1"; }
# estimator_job TAG BASIS ARGS...: `carma estimate ARGS --json` and a job submitted with ARGS
# (the command `true TAG`, so that no job takes another's history) get the same bound, and
# the job's bound_basis starts with BASIS; sets WANT to that bound and waits for the job
estimator_job() {
    _tag=$1 _basis=$2
    shift 2
    "$CARMA" estimate "$@" --json >"$T/est_$_tag.json" || fail "carma estimate $*"
    WANT=$(bound_of "$T/est_$_tag.json")
    _id=$(submit "$@" -- true "$_tag")
    "$CARMA" show --json "$_id" >"$T/$_tag.json"
    [ "$(json_int "$T/$_tag.json" bound_mib)" = "$WANT" ] ||
        fail "$_tag: bound $(json_int "$T/$_tag.json" bound_mib), the estimator's $WANT expected"
    grep -qF "\"bound_basis\": \"$_basis" "$T/$_tag.json" ||
        fail "bound_basis of the $_tag job: $(grep bound_basis "$T/$_tag.json")"
    "$CARMA" wait --timeout 20 "$_id" >/dev/null
}
# carmad_refuses SUMMARY FIELDS MESSAGE: a submission of SUMMARY with the job fields FIELDS
# (a JSON object) from a client that does not check is refused as invalid, saying MESSAGE
carmad_refuses() {
    python3 - "$CARMA_SOCKET" "$1" "$HELP" "$2" "$3" <<'PY'
import json, sys
sys.dont_write_bytecode = True  # no __pycache__ in the tree
sys.path.insert(0, sys.argv[3])
from carmad_ask import submit
job = {"argv": ["true"], "cwd": "/", "summary": open(sys.argv[2]).read()}
job.update(json.loads(sys.argv[4]))
r = submit(sys.argv[1], job)
assert r["ok"] is False and r["error"] == "invalid", r
assert sys.argv[5] in r["message"], r
PY
}

start_daemon --gpus sim:4xa100-40gb

step "first run: the estimator's bound"
"$CARMA" estimate --summary "$SUM" --batch 32 --json > "$T/est.json" || fail "carma estimate"
want=$(bound_of "$T/est.json")
[ -n "$want" ] || fail "no bound_mib from carma estimate"
a=$(submit --summary "$SUM" --batch 32 --mem 100 -- sh "$HELP/run_for.sh" 0.3)
"$CARMA" show --json "$a" > "$T/a.json"
got=$(json_int "$T/a.json" bound_mib)
[ "$got" = "$want" ] || fail "bound $got, the estimator's $want expected"
echo "   bound $got MiB (carma estimate: $want)"
"$CARMA" show "$a" > "$T/a.txt"
grep -q "bound     at submission: estimator (batch 32, adamw, fp32; estimate [0-9]* MiB)" "$T/a.txt" ||
    fail "carma show does not say where the bound came from: $(cat "$T/a.txt")"
"$CARMA" wait --timeout 20 "$a" >/dev/null || fail "first run did not succeed: $(state_of "$a")"
"$CARMA" show --json "$a" > "$T/a.json"
peak=$(sed -n 's/^ *"peak_mib": \([0-9]*\).*/\1/p' "$T/a.json" | tail -n 1)
[ -n "$peak" ] && [ "$peak" -gt 0 ] || fail "no peak recorded for the first run"

step "--mem above the estimate wins"
m=$(submit --summary "$SUM" --batch 64 --mem 30000 -- true)
"$CARMA" show --json "$m" > "$T/m.json"
[ "$(json_int "$T/m.json" bound_mib)" = 30000 ] || fail "declared --mem above the estimator's bound not kept"
grep -q '"bound_basis": "--mem (30000 MiB, not below the estimator.s [0-9]*)"' "$T/m.json" ||
    fail "bound_basis of a --mem job: $(grep bound_basis "$T/m.json")"
"$CARMA" wait --timeout 20 "$m" >/dev/null || fail "the --mem job did not succeed"

step "second run of the same command and batch: the bound is the first run's peak"
b=$(submit --summary "$SUM" --batch 32 -- sh "$HELP/run_for.sh" 0.3)
"$CARMA" show --json "$b" > "$T/b.json"
got=$(json_int "$T/b.json" bound_mib)
# est_history_next: largest peak + spread (0 after one run) + one 2 MiB segment.
[ "$got" = $((peak + 2)) ] || fail "second bound $got, $((peak + 2)) (first peak + 2) expected"
echo "   first run's peak $peak MiB, second run's bound $got MiB"
"$CARMA" show "$b" | grep -q "at submission: history (1 earlier run, peak $peak MiB)" ||
    fail "carma show: no history basis: $("$CARMA" show "$b")"
"$CARMA" wait --timeout 20 "$b" >/dev/null || fail "second run did not succeed"
# a simulated job uses its estimate, not its bound: history settles (it had doubled the
# spread at every run, the peak of each being the bound it was given)
[ "$peak" -lt "$want" ] || fail "a simulated job shown holding its bound: peak $peak, bound $want"
b3=$(submit --summary "$SUM" --batch 32 -- sh "$HELP/run_for.sh" 0.3)
"$CARMA" wait --timeout 20 "$b3" >/dev/null || fail "third run did not succeed"
b4=$(submit --summary "$SUM" --batch 32 -- sh "$HELP/run_for.sh" 0.3)
[ "$("$CARMA" show --json "$b4" | json_int /dev/stdin bound_mib)" = "$got" ] ||
    fail "history's bound grows with runs on simulated GPUs: $(for x in "$a" "$b" "$b3" "$b4"; do "$CARMA" show "$x" | grep -E "bound"; done)"
"$CARMA" wait --timeout 20 "$b4" >/dev/null || fail "fourth run did not succeed"

step "the same command from another folder or allocator set-up is another signature"
# (python train.py of two projects is two jobs; PYTORCH_CUDA_ALLOC_CONF changes the peak)
mkdir -p "$T/project2"
d=$(cd "$T/project2" && submit --summary "$SUM" --batch 32 -- sh "$HELP/run_for.sh" 0.3)
e=$(PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True submit --summary "$SUM" --batch 32 -- sh "$HELP/run_for.sh" 0.3)
for x in "$d" "$e"; do
    "$CARMA" show --json "$x" > "$T/x.json"
    grep -q '"bound_basis": "estimator (batch 32' "$T/x.json" ||
        fail "job $x took the first folder's history: $(grep bound_basis "$T/x.json")"
    [ "$(json_int "$T/x.json" bound_mib)" = "$want" ] || fail "job $x: bound $(json_int "$T/x.json" bound_mib), $want expected"
    "$CARMA" wait --timeout 20 "$x" >/dev/null || fail "job $x did not succeed"
done

step "another batch size is another signature"
c=$(submit --summary "$SUM" --batch 128 -- true)
"$CARMA" show --json "$c" > "$T/c.json"
[ "$(json_int "$T/c.json" bound_mib)" != $((peak + 2)) ] || fail "batch 128 took batch 32's history"
"$CARMA" wait --timeout 20 "$c" >/dev/null

step "submit says what carma estimate would note, on stderr; the id alone on stdout"
MOE=$(cd "$(dirname "$0")/../.." && pwd)/tests/fuzz/corpus/summary_modtree/moe_mixtral.txt
n=$("$CARMA" submit --summary "$MOE" --batch 2 --seq-len 64 -- true 2>"$T/notes.err") ||
    fail "submit with an MoE summary refused: $(cat "$T/notes.err")"
echo "$n" | grep -qx '[0-9][0-9]*' || fail "submit printed more than the id: $n"
grep -q "^carma submit: note: the print has .* experts per mixture-of-experts block" \
    "$T/notes.err" || fail "no MoE note on submit: $(cat "$T/notes.err")"
n2=$("$CARMA" submit --summary "$MOE" --batch 2 --seq-len 64 --experts-per-token 2 -- true \
    2>"$T/notes2.err") || fail "submit with --experts-per-token refused"
! grep -q "mixture-of-experts block" "$T/notes2.err" || fail "MoE note with --experts-per-token"
"$CARMA" wait --timeout 20 "$n" "$n2" >/dev/null

step "another model or set-up of the same command and batch is another signature"
# history keys on the summary text and every estimator option too (est_job_signature)
BERT=$(cd "$(dirname "$0")/../.." && pwd)/tests/fuzz/corpus/summary_modtree/bert_base.txt
s1=$(submit --summary "$BERT" --batch 8 --seq-len 128 -- true setup)
"$CARMA" wait --timeout 20 "$s1" >/dev/null || fail "the seq 128 run did not succeed"
"$CARMA" show --json "$s1" > "$T/s1.json"
p1=$(sed -n 's/^ *"peak_mib": \([0-9]*\).*/\1/p' "$T/s1.json" | tail -n 1)
for v in "--seq-len 256" "--seq-len 128 --precision bf16" "--seq-len 128 --gradient-checkpointing"; do
    # shellcheck disable=SC2086
    "$CARMA" estimate --summary "$BERT" --batch 8 $v --json > "$T/sv.json" || fail "carma estimate $v"
    wv=$(bound_of "$T/sv.json")
    # shellcheck disable=SC2086
    sv=$(submit --summary "$BERT" --batch 8 $v -- true setup)
    "$CARMA" show --json "$sv" > "$T/sv.json"
    grep -q '"bound_basis": "estimator (batch 8, seq' "$T/sv.json" ||
        fail "$v took the seq 128 run's history: $(grep bound_basis "$T/sv.json")"
    [ "$(json_int "$T/sv.json" bound_mib)" = "$wv" ] ||
        fail "$v: bound $(json_int "$T/sv.json" bound_mib), the estimator's $wv expected"
    "$CARMA" wait --timeout 20 "$sv" >/dev/null
done
cp "$SUM" "$T/other.model"
echo "# another model" >> "$T/other.model"
so=$(submit --summary "$T/other.model" --batch 32 -- sh "$HELP/run_for.sh" 0.3)
"$CARMA" show --json "$so" > "$T/so.json"
grep -q '"bound_basis": "estimator' "$T/so.json" ||
    fail "another summary took the first run's history: $(grep bound_basis "$T/so.json")"
"$CARMA" wait --timeout 20 "$so" >/dev/null
s2=$(submit --summary "$BERT" --batch 8 --seq-len 128 -- true setup)
"$CARMA" show "$s2" | grep -q "at submission: history (1 earlier run, peak $p1 MiB)" ||
    fail "the same set-up again: no history: $("$CARMA" show "$s2")"
"$CARMA" wait --timeout 20 "$s2" >/dev/null

step "only an attempt that succeeded is history"
x=$(submit --summary "$SUM" --batch 16 -- sh -c 'exit 3')
"$CARMA" wait --timeout 20 "$x" >/dev/null; is_state "$x" failed || fail "exit 3: $(state_of "$x")"
x2=$(submit --summary "$SUM" --batch 16 -- sh -c 'exit 3')
"$CARMA" show --json "$x2" > "$T/x2.json"
grep -q '"bound_basis": "estimator' "$T/x2.json" ||
    fail "a failed attempt became history: $(grep bound_basis "$T/x2.json")"
"$CARMA" wait --timeout 20 "$x2" >/dev/null
y=$(submit --summary "$SUM" --batch 24 -- sh "$HELP/run_for.sh" 30)
wait_until 20 is_state "$y" running || fail "the long job did not start"
"$CARMA" cancel "$y" >/dev/null
"$CARMA" wait --timeout 20 "$y" >/dev/null; is_state "$y" cancelled || fail "cancel: $(state_of "$y")"
y2=$(submit --summary "$SUM" --batch 24 -- sh "$HELP/run_for.sh" 30)
"$CARMA" show --json "$y2" > "$T/y2.json"
grep -q '"bound_basis": "estimator' "$T/y2.json" ||
    fail "a cancelled attempt became history: $(grep bound_basis "$T/y2.json")"
"$CARMA" cancel "$y2" >/dev/null
"$CARMA" wait --timeout 20 "$y2" >/dev/null

step "the training set-up reaches the estimator"
"$CARMA" estimate --summary "$SUM" --batch 48 --optimizer sgd --precision amp --json \
    > "$T/est2.json" || fail "carma estimate --optimizer sgd --precision amp"
want2=$(bound_of "$T/est2.json")
# two commands (true ignores its argument), so that neither takes the other's history
p=$(submit --summary "$SUM" --batch 48 --optimizer sgd --precision amp -- true sgd)
"$CARMA" show --json "$p" > "$T/p.json"
got=$(json_int "$T/p.json" bound_mib)
[ "$got" = "$want2" ] || fail "sgd/amp bound $got, the estimator's $want2 expected"
f=$(submit --summary "$SUM" --batch 48 -- true adamw)
"$CARMA" show --json "$f" > "$T/f.json"
[ "$(json_int "$T/f.json" bound_mib)" -gt "$got" ] || fail "adamw/fp32 bound not above sgd/amp's"
echo "   sgd + amp: $got MiB; adamw + fp32: $(json_int "$T/f.json" bound_mib) MiB"
"$CARMA" wait --timeout 20 "$p" "$f" >/dev/null
BERT=$(cd "$(dirname "$0")/../.." && pwd)/tests/fuzz/corpus/summary_modtree/bert_base.txt
estimator_job gc "estimator (batch 16, seq 256, adamw, bf16, sdpa attention, gradient checkpointing; estimate" \
    --summary "$BERT" --batch 16 --seq-len 256 --precision bf16 --attention sdpa \
    --gradient-checkpointing
want3=$WANT
echo "   BERT-base, bf16, sdpa, checkpointed: $want3 MiB"
# gradient accumulation (a flag, as checkpointing): the estimator's bound and the basis
estimator_job ga "estimator (batch 16, seq 256, adamw, bf16, sdpa attention, gradient checkpointing, gradient accumulation; estimate" \
    --summary "$BERT" --batch 16 --seq-len 256 --precision bf16 --attention sdpa \
    --gradient-checkpointing --gradient-accumulation
[ "$WANT" -gt "$want3" ] || fail "accumulating bound $WANT not above $want3 without it"
echo "   the same, accumulating gradients: $WANT MiB"
"$CARMA" submit --gradient-accumulation -- true 2>"$T/err"; [ $? = 2 ] ||
    fail "--gradient-accumulation without --summary: exit status"
grep -q "gradient-accumulation needs --summary" "$T/err" ||
    fail "--gradient-accumulation without --summary: message: $(cat "$T/err")"
# attention heads the print does not show (nn.MultiheadAttention): --heads reaches the
# estimator and the basis; without it eager attention is refused, naming the line
MHA=$(cd "$(dirname "$0")/../.." && pwd)/tests/fuzz/corpus/summary_modtree/mha_classifier.txt
estimator_job heads "estimator (batch 16, seq 128, 8 heads, adamw, fp32; estimate" \
    --summary "$MHA" --batch 16 --seq-len 128 --heads 8
echo "   nn.MultiheadAttention, --heads 8: $WANT MiB"
"$CARMA" submit --summary "$MHA" --batch 16 --seq-len 128 -- true 2>"$T/err"; [ $? = 2 ] ||
    fail "nn.MultiheadAttention without --heads: exit status"
grep -q "mha_classifier.txt:6: nn.MultiheadAttention: its number of heads is not in the print" \
    "$T/err" || fail "nn.MultiheadAttention without --heads: message: $(cat "$T/err")"
# carmad refuses it too, from a client that does not check (the protocol's "heads")
python3 - "$CARMA_SOCKET" "$MHA" "$HELP" <<'PY' || fail "carmad took nn.MultiheadAttention without heads"
import sys
sys.dont_write_bytecode = True  # no __pycache__ in the tree
sys.path.insert(0, sys.argv[3])
from carmad_ask import submit
def ask(job):
    return submit(sys.argv[1], job)
job = {"argv": ["true"], "cwd": "/", "summary": open(sys.argv[2]).read(), "batch": 16,
       "seq_len": 128}
r = ask(job)
assert r["ok"] is False and r["error"] == "invalid", r
assert "summary:6: nn.MultiheadAttention: its number of heads" in r["message"], r
job["heads"] = 3
r = ask(job)
assert r["ok"] is False and "summary:6: an attention block whose query is 128 wide" in r["message"], r
PY
# --heads under fused attention sizes nothing: carma estimate says "no effect", and the
# basis does not name the heads
sd=$(submit --summary "$MHA" --batch 16 --seq-len 128 --attention sdpa --heads 8 -- true heads sdpa)
"$CARMA" show --json "$sd" > "$T/sd.json"
grep -q '"bound_basis": "estimator (batch 16, seq 128, adamw, fp32, sdpa attention; estimate' \
    "$T/sd.json" || fail "bound_basis of --heads under sdpa: $(grep bound_basis "$T/sd.json")"
"$CARMA" wait --timeout 20 "$sd" >/dev/null
# a count is spelled and checked as carma estimate does (digits only, 1 to the most)
for h in 0 5000 " 8"; do
    "$CARMA" submit --summary "$MHA" --batch 16 --seq-len 128 --heads "$h" -- true 2>"$T/err"
    [ $? = 2 ] || fail "--heads '$h': exit status"
    grep -q "^carma submit: --heads must be an integer from 1 to 4096, not '$h'$" "$T/err" ||
        fail "--heads '$h': message: $(cat "$T/err")"
done
"$CARMA" submit --heads 8 -- true 2>"$T/err"; [ $? = 2 ] || fail "--heads without --summary: exit status"
grep -q "needs --summary" "$T/err" || fail "--heads without --summary: message: $(cat "$T/err")"
# mixture-of-experts routing (--experts-per-token): it reaches the estimator, the basis
# and the signature; carmad refuses a k above the experts from a client that does not check
MOE=$(cd "$(dirname "$0")/../.." && pwd)/tests/fuzz/corpus/summary_modtree/moe_mixtral.txt
estimator_job moe "estimator (batch 4, seq 256, 2 experts per token, adamw, fp32; estimate" \
    --summary "$MOE" --batch 4 --seq-len 256 --experts-per-token 2
echo "   Mixtral-shaped print, 2 of 8 experts per token: $WANT MiB"
carmad_refuses "$MOE" '{"batch": 4, "seq_len": 256, "experts_per_token": 9}' \
    "--experts-per-token 9 is more than the 8 experts" ||
    fail "carmad took experts_per_token above the experts"
# ALBERT's shared layer run as many times as --shared-layer-runs says: carmad's bound and
# basis follow it; a print without such a group is refused at the client and by carmad
ALB=$(cd "$(dirname "$0")/../.." && pwd)/tests/fuzz/corpus/summary_modtree/albert_shared_group.txt
estimator_job albert "estimator (batch 4, seq 128, shared layer run 12 times, adamw" \
    --summary "$ALB" --batch 4 --seq-len 128 --shared-layer-runs 12
_rc=0; "$CARMA" submit --summary "$BERT" --batch 4 --seq-len 128 --shared-layer-runs 12 -- true \
    2>"$T/err" || _rc=$?
[ "$_rc" = 2 ] && grep -q "shared-layer-runs 12: the print has no layer that runs several times" "$T/err" ||
    fail "--shared-layer-runs beside BERT: $_rc $(cat "$T/err")"
carmad_refuses "$BERT" '{"batch": 4, "seq_len": 128, "shared_layer_runs": 12}' \
    "--shared-layer-runs 12: the print has no layer that runs several times" ||
    fail "carmad took shared_layer_runs beside BERT"
# an output head tied to its token table (--tied-head): carmad's bound and basis follow it,
# below the bound without it; a print without such a head is refused at the client and by
# carmad
GPT=$(cd "$(dirname "$0")/../.." && pwd)/tests/fuzz/corpus/summary_modtree/gpt2.txt
estimator_job untied "estimator (batch 4, seq 128, adamw, fp32; estimate" \
    --summary "$GPT" --batch 4 --seq-len 128
untied=$WANT
estimator_job tied "estimator (batch 4, seq 128, output head tied, adamw, fp32; estimate" \
    --summary "$GPT" --batch 4 --seq-len 128 --tied-head
[ "$WANT" -lt "$untied" ] || fail "a tied head's bound $WANT is not below the untied $untied"
echo "   GPT-2's head tied to its table: $WANT MiB, $untied apart"
_rc=0; "$CARMA" submit --summary "$BERT" --batch 4 --seq-len 128 --tied-head -- true \
    2>"$T/err" || _rc=$?
[ "$_rc" = 2 ] && grep -q "tied-head: the print has no output head of its token table's shape" "$T/err" ||
    fail "--tied-head beside a BERT classifier: $_rc $(cat "$T/err")"
carmad_refuses "$BERT" '{"batch": 4, "seq_len": 128, "tied_head": true}' \
    "--tied-head: the print has no output head" || fail "carmad took tied_head beside BERT"
echo "   ALBERT-shaped print, its layer run 12 times: $WANT MiB"
# two GPUs: DistributedDataParallel's gradient buckets on each
"$CARMA" estimate --summary "$BERT" --batch 16 --seq-len 256 --gpus 2 --json > "$T/est4.json" ||
    fail "carma estimate --gpus 2"
want4=$(bound_of "$T/est4.json")
grep -q '"gradient_buckets_mib": [1-9]' "$T/est4.json" || fail "carma estimate --gpus 2: no buckets"
d=$(submit --gpus 2 --summary "$BERT" --batch 16 --seq-len 256 -- true ddp)
"$CARMA" show --json "$d" > "$T/d.json"
[ "$(json_int "$T/d.json" bound_mib)" = "$want4" ] ||
    fail "DDP bound $(json_int "$T/d.json" bound_mib), the estimator's $want4 expected"
grep -q '"bound_basis": "estimator (batch 16, seq 256, adamw, fp32, DDP on 2 GPUs; estimate' "$T/d.json" ||
    fail "bound_basis of the DDP job: $(grep bound_basis "$T/d.json")"
"$CARMA" estimate --summary "$BERT" --batch 16 --seq-len 256 --json > "$T/est5.json"
one=$(awk -F: '/"bound_mib"/ {gsub(/[ ,]/, "", $2); print int($2)}' "$T/est5.json")
[ "$want4" -gt "$one" ] || fail "DDP bound $want4 not above one GPU's $one"
echo "   BERT-base on 2 GPUs (DDP): $want4 MiB per GPU, against $one on one"
"$CARMA" wait --timeout 20 "$d" >/dev/null || fail "the DDP job did not succeed"
# the same command on one GPU is another signature: the estimator's one-GPU bound
e=$(submit --summary "$BERT" --batch 16 --seq-len 256 -- true ddp)
"$CARMA" show --json "$e" > "$T/e.json"
grep -q '"bound_basis": "estimator (batch 16, seq 256, adamw, fp32; estimate' "$T/e.json" ||
    fail "one GPU took the two-GPU run's history: $(grep bound_basis "$T/e.json")"
"$CARMA" wait --timeout 20 "$e" >/dev/null
"$CARMA" submit --summary "$SUM" -- true 2>"$T/err"; [ $? = 2 ] || fail "--summary without --batch: exit status"
grep -q "needs --batch" "$T/err" || fail "--summary without --batch: message: $(cat "$T/err")"
"$CARMA" submit --precision bf16 -- true 2>"$T/err"; [ $? = 2 ] || fail "--precision without --summary: exit status"
grep -q "needs --summary" "$T/err" || fail "--precision without --summary: message: $(cat "$T/err")"
"$CARMA" submit --summary "$SUM" --batch 8 --precision fp8 -- true 2>"$T/err"; [ $? = 2 ] ||
    fail "--precision fp8: exit status"
grep -q "unknown precision 'fp8' (fp32, amp, bf16)" "$T/err" || fail "--precision fp8: message: $(cat "$T/err")"

step "carma submit names the summary file as carma estimate does"
C=$(cd "$(dirname "$0")/../.." && pwd)/tests/fuzz/corpus
for v in "summary_modtree/gpt2.txt --batch 8" "summary_modtree/gpt2.txt --batch 8 --seq-len 4096" \
         "summary_torchsummary/resnet18_cifar.txt --batch 8 --image-size 224" \
         "summary_modtree/vit_hf.txt --batch 8 --image-size 224 --seq-len 100" \
         "summary_modtree/vit_hf.txt --batch 8"; do
    # shellcheck disable=SC2086
    set -- $v
    f=$C/$1; shift
    "$CARMA" estimate --summary "$f" "$@" 2>"$T/e1"; [ $? = 2 ] || fail "carma estimate $v: exit status"
    "$CARMA" submit --summary "$f" "$@" -- true 2>"$T/e2"; [ $? = 2 ] || fail "carma submit $v: exit status"
    sed 's/^carma estimate: /carma submit: /' "$T/e1" | cmp -s - "$T/e2" ||
        fail "carma submit $v: '$(cat "$T/e2")', carma estimate: '$(cat "$T/e1")'"
    grep -q "^carma submit: $f[:]" "$T/e2" || fail "carma submit $v does not name the file: $(cat "$T/e2")"
done
grep -q "give --image-size H\[xW\]" "$T/e2" || fail "a ViT without its image size: $(cat "$T/e2")"
head -n 1 "$T/e2"
# a vision transformer's sequence is its image's patches: carmad sizes it as carma estimate
"$CARMA" estimate --summary "$C/summary_modtree/vit_hf.txt" --batch 8 --image-size 224 --json \
    > "$T/est8.json" || fail "carma estimate vit"
want8=$(bound_of "$T/est8.json")
vt=$(submit --summary "$C/summary_modtree/vit_hf.txt" --batch 8 --image-size 224 -- true vit)
"$CARMA" show --json "$vt" > "$T/vt.json"
[ "$(json_int "$T/vt.json" bound_mib)" = "$want8" ] ||
    fail "ViT bound $(json_int "$T/vt.json" bound_mib), the estimator's $want8 expected"
"$CARMA" wait --timeout 20 "$vt" >/dev/null

step "carma submit --summary - reads standard input, as carma estimate does"
"$CARMA" estimate --summary - --batch 8 --image-size 224 --json <"$C/summary_modtree/vit_hf.txt" \
    > "$T/estin.json" || fail "carma estimate from stdin"
si=$(submit --summary - --batch 8 --image-size 224 -- true vit-stdin <"$C/summary_modtree/vit_hf.txt")
"$CARMA" show --json "$si" > "$T/si.json"
[ "$(json_int "$T/si.json" bound_mib)" = "$(bound_of "$T/estin.json")" ] ||
    fail "bound from stdin $(json_int "$T/si.json" bound_mib), the estimator's $(bound_of "$T/estin.json")"
"$CARMA" wait --timeout 20 "$si" >/dev/null
"$CARMA" submit --summary - --batch 8 -- true <"$C/summary_modtree/vit_hf.txt" 2>"$T/e3"; [ $? = 2 ] ||
    fail "a ViT from stdin without its image size: exit status"
grep -q "^carma submit: <stdin>:" "$T/e3" || fail "stdin not named <stdin>: $(cat "$T/e3")"

step "a summary that is not one is refused"
printf 'hello\nworld\n' > "$T/bad.txt"
"$CARMA" submit --summary "$T/bad.txt" --batch 8 -- true 2>"$T/err"; [ $? = 2 ] ||
    fail "bad summary: exit status"
grep -q "summary" "$T/err" || fail "bad summary: message: $(cat "$T/err")"

step "a peak is history on its own GPU kind only"
stop_daemon TERM
start_daemon --gpus sim:2xh100-80gb
h=$(submit --summary "$SUM" --batch 32 -- sh "$HELP/run_for.sh" 0.3)
"$CARMA" show --json "$h" > "$T/h.json"
grep -q '"bound_basis": "estimator' "$T/h.json" ||
    fail "an A100 peak became the bound on an H100: $(grep bound_basis "$T/h.json")"
"$CARMA" wait --timeout 20 "$h" >/dev/null
stop_daemon TERM
start_daemon --gpus sim:4xa100-40gb
h2=$(submit --summary "$SUM" --batch 32 -- sh "$HELP/run_for.sh" 0.3)
"$CARMA" show "$h2" | grep -q "at submission: history (4 earlier runs" ||
    fail "back on the A100s: no history: $("$CARMA" show "$h2")"
"$CARMA" wait --timeout 20 "$h2" >/dev/null

step "a simulated GPU's peaks are no history for a real GPU of its name and memory"
# (a simulated job holds its estimate: as history, the estimate + 2 MiB, below the safe
# bound; carmad falls back to sim:4xa100-40gb in the state folder it would use on NVML)
if fake_nvml; then
    stop_daemon TERM
    printf 'driver 550.54.15\ngpu uuid=GPU-fa4e0000-0000-4000-8000-000000000000 name="NVIDIA A100-SXM4-40GB" mem_total=40960MiB mem_used=0\n' \
        > "$T/nvml.state"
    export CARMA_FAKE_NVML_STATE="$T/nvml.state"
    start_daemon --gpus nvml --nvml-lib "$LIB"
    r=$(submit --summary "$SUM" --batch 32 -- sh "$HELP/run_for.sh" 0.3)
    "$CARMA" show --json "$r" > "$T/r.json"
    [ "$(json_int "$T/r.json" bound_mib)" = "$want" ] && grep -q '"bound_basis": "estimator' "$T/r.json" ||
        fail "a simulated A100's peak bounds a real one: bound $(json_int "$T/r.json" bound_mib), the estimator's $want expected: $(grep bound_basis "$T/r.json")"
    "$CARMA" cancel "$r" >/dev/null
else
    echo "   (skipped: no fake libnvidia-ml.so.1)"
fi

stop_daemon TERM
echo "daemon_history: ok"
