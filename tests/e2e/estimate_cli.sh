#!/bin/sh
# carma estimate / eval-estimator from the command line: JSON fields, exit codes and
# error messages for bad input.
set -eu
CARMA="$CARMA_BIN/carma"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
C=tests/fuzz/corpus

# JSON with the figures and the breakdown; defaults adamw, fp32, a100-40gb.
"$CARMA" estimate --summary data/estimator/cifar-summaries/resnet18cifar100_32.model --batch 32 \
    --json >"$T/r18.json" || fail "resnet18 estimate"
python3 - "$T/r18.json" <<'PY' || fail "resnet18 json"
import json, sys
d = json.load(open(sys.argv[1]))
for k in ["estimate_mib", "bound_mib", "fits", "breakdown"]:
    assert k in d, k
b = d["breakdown"]
for k in ["floor_mib", "weights_mib", "gradients_mib", "optimizer_state_mib", "activations_mib", "transient_mib", "gradient_buckets_mib"]:
    assert k in b, k
assert b["gradient_buckets_mib"] == 0 and d["gpus"] == 1
assert abs(sum(b.values()) - d["estimate_mib"]) < 1e-3
assert d["bound_mib"] >= d["estimate_mib"] and d["fits"] is True
assert d["optimizer"] == "adamw" and d["precision"] == "fp32" and d["gpu"] == "a100-40gb"
assert d["bound_mib"] >= 788  # measured peak of this run (labels.csv)
assert d["params"] == 11227812
# The default floor is CARMA's environment, where this run peaked at 788 MiB.
assert d["floor_source"] == "default" and b["floor_mib"] == 550
assert d["model"] == {"kind": "per-kind"}  # a CNN: the conv family's terms
assert 788 <= d["estimate_mib"] <= 1.2 * 788, d["estimate_mib"]
PY
# --floor fitted: GPUMemNet's environment (a larger floor, the same terms above it);
# the default's bound covers it.
"$CARMA" estimate --summary data/estimator/cifar-summaries/resnet18cifar100_32.model --batch 32 \
    --floor fitted --json >"$T/r18f.json" || fail "resnet18 --floor fitted"
python3 - "$T/r18.json" "$T/r18f.json" <<'PY' || fail "floor fitted json"
import json, sys
d, f = (json.load(open(p)) for p in sys.argv[1:3])
assert f["floor_source"] == "fitted" and f["breakdown"]["floor_mib"] > 2000
dyn = lambda x: x["estimate_mib"] - x["breakdown"]["floor_mib"]
assert abs(dyn(d) - dyn(f)) < 1e-6
assert d["bound_mib"] >= f["bound_mib"] >= f["estimate_mib"]
PY

# A model without convolutions is replayed: where its peak fell is reported.
"$CARMA" estimate --summary $C/summary_csv/mlp_gpumemnet.csv --batch 512 --json >"$T/mlp.json" ||
    fail "mlp estimate"
python3 - "$T/mlp.json" <<'PY' || fail "mlp json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["family"] == "dense" and d["model"]["kind"] == "replay", d["model"]
assert d["model"]["peak_phase"] in ("setup", "forward", "backward", "optimizer step")
assert 0 <= d["model"]["peak_iteration"] <= 16  # EST_REPLAY_MAX_ITERS
assert abs(sum(d["breakdown"].values()) - d["estimate_mib"]) < 1e-3
PY
"$CARMA" estimate --summary $C/summary_csv/mlp_gpumemnet.csv --batch 512 | grep -q "replay: peak in iteration" ||
    fail "text output names the replay's peak"

# Each format, auto-detected; sequence models need --seq-len.
for f in $C/summary_torchinfo/resnet50_b32.txt $C/summary_keras/mnist_convnet.txt \
         $C/summary_keras/keras3_box.txt $C/summary_csv/mlp.csv $C/summary_modtree/mlp_params_suffix.txt; do
    "$CARMA" estimate --summary "$f" --batch 16 --json >/dev/null || fail "$f"
done
"$CARMA" estimate --summary $C/summary_modtree/gpt2.txt --batch 4 --seq-len 1024 --optimizer sgd \
    --precision amp --gpu h100-80gb --json >"$T/gpt2.json" || fail "gpt2"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['format']=='module-tree' and d['gpu']=='h100-80gb' and d['breakdown']['optimizer_state_mib']==0" "$T/gpt2.json" || fail "gpt2 json"

# A printed CNN needs --image-size; with it, the same answer as its layer table.
set +e
"$CARMA" estimate --summary data/estimator/cnn-trees/resnet50.txt --batch 64 2>"$T/img.err"
rc=$?
set -e
[ $rc -eq 2 ] && grep -q "give --image-size" "$T/img.err" || fail "cnn tree without --image-size"
for bad in 0 224x 9x99999 x224 abc; do
    set +e
    "$CARMA" estimate --summary data/estimator/cnn-trees/resnet50.txt --batch 64 --image-size "$bad" \
        2>"$T/img.err"
    rc=$?
    set -e
    [ $rc -eq 2 ] && grep -q "image-size must be" "$T/img.err" || fail "--image-size $bad"
done
"$CARMA" estimate --summary data/estimator/cnn-trees/resnet50.txt --batch 64 --optimizer adam \
    --image-size 224 --json >"$T/tree.json" || fail "cnn tree"
"$CARMA" estimate --summary data/estimator/imagenet-tables/resnet50.csv --batch 64 --optimizer adam \
    --json >"$T/table.json" || fail "cnn table"
python3 -c "
import json,sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert a['image_size'] == [224, 224] and a['family'] == 'conv', a
assert abs(a['estimate_mib'] - b['estimate_mib']) < 1e-6 and a['params'] == b['params'], (a, b)
" "$T/tree.json" "$T/table.json" || fail "cnn tree json"

# Bound over the GPU: fits false, exit 1.
set +e
"$CARMA" estimate --summary $C/summary_modtree/gpt2.txt --batch 512 --seq-len 1024 --gpu v100-32gb --json >"$T/big.json"
rc=$?
set -e
[ $rc -eq 1 ] || fail "does-not-fit exit $rc"
python3 -c "import json,sys; assert json.load(open(sys.argv[1]))['fits'] is False" "$T/big.json" || fail "fits false"

# --max-batch: the largest batch whose bound fits; that batch's estimate, the next's bound
# above the GPU; none fits: exit 1.
"$CARMA" estimate --summary $C/summary_modtree/gpt2.txt --seq-len 1024 --max-batch --gpu v100-32gb \
    --json >"$T/max.json" || fail "--max-batch"
b=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); \
assert d['fits'] and d['batch'] == d['max_batch'] > 1 and d['bound_mib'] <= 32768 < d['next_bound_mib'], d; \
print(d['max_batch'])" "$T/max.json") || fail "--max-batch json"
"$CARMA" estimate --summary $C/summary_modtree/gpt2.txt --seq-len 1024 --batch "$b" --gpu v100-32gb \
    >/dev/null || fail "batch $b does not fit"
set +e
"$CARMA" estimate --summary $C/summary_modtree/gpt2.txt --seq-len 1024 --batch $((b + 1)) \
    --gpu v100-32gb >/dev/null
rc=$?
set -e
[ $rc -eq 1 ] || fail "batch $((b + 1)) fits (exit $rc)"
"$CARMA" estimate --summary $C/summary_modtree/gpt2.txt --seq-len 1024 --max-batch --gpu v100-32gb \
    >"$T/max.txt" || fail "--max-batch text"
grep -q "^largest batch that fits: $b (batch $((b + 1)): safe bound [0-9.]* MiB, above v100-32gb's 32768 MiB)$" \
    "$T/max.txt" || fail "--max-batch text: $(tail -1 "$T/max.txt")"
set +e
"$CARMA" estimate --summary $C/summary_modtree/t5_small.txt --seq-len 65536 --max-batch >"$T/none.txt"
rc=$?
set -e
[ $rc -eq 1 ] && grep -q "^largest batch that fits: none (batch 1's safe bound is above a100-40gb's" \
    "$T/none.txt" || fail "--max-batch, none fits (exit $rc)"

# Bad input: exit 2 with a message naming the file (and line).
expect2() { # grep-pattern, args...
    pat=$1; shift
    set +e
    "$CARMA" estimate "$@" >"$T/out" 2>"$T/err"
    rc=$?
    set -e
    [ $rc -eq 2 ] || fail "exit $rc for $* (want 2)"
    grep -q -- "$pat" "$T/err" || fail "message for $*: $(cat "$T/err")"
}
printf 'hello\nworld\n' >"$T/notes.txt"
expect2 "$T/notes.txt:1: not a model summary" --summary "$T/notes.txt" --batch 8
expect2 "batch must be an integer from 1 to 1048576, not '0'" --summary $C/summary_csv/mlp.csv --batch 0
expect2 "give --batch or --max-batch, not both" --summary $C/summary_csv/mlp.csv --batch 8 --max-batch
expect2 "usage: carma estimate" --summary $C/summary_csv/mlp.csv
expect2 "bert_base.txt:4: a sequence model" --summary $C/summary_modtree/bert_base.txt --batch 8
expect2 "bad_params.txt:4: bad parameter count" --summary $C/summary_torchsummary/bad_params.txt --batch 8
expect2 "unknown GPU kind" --summary $C/summary_csv/mlp.csv --batch 8 --gpu tpu
expect2 "unknown optimizer" --summary $C/summary_csv/mlp.csv --batch 8 --optimizer lion
expect2 "--floor must be MiB" --summary $C/summary_csv/mlp.csv --batch 8 --floor eager
expect2 "--gpus must be an integer from 1 to 65536, not '0'" --summary $C/summary_csv/mlp.csv --batch 8 --gpus 0
expect2 "--gpus must be an integer" --summary $C/summary_csv/mlp.csv --batch 8 --gpus two
expect2 "No such file" --summary "$T/missing.txt" --batch 8
printf 'type,out_elems,params,params\nLinear,10,100,100\n' >"$T/dup.csv"
expect2 "dup.csv:1: column 'params' given twice" --summary "$T/dup.csv" --batch 8
expect2 "unknown attention 'flash' (eager, sdpa)" --summary $C/summary_modtree/bert_base.txt \
    --batch 8 --seq-len 128 --attention flash

# What a summary cannot bound is refused by line, never left out of the estimate.
printf 'type,out_elems,params,per_token\nEmbedding,300,6000000,1\nLSTM,512,5000000,1\nLinear,2,1026,0\n' \
    >"$T/lstm.csv"
expect2 "lstm.csv:3: LSTM: a recurrent layer" --summary "$T/lstm.csv" --batch 8 --seq-len 64
cat >"$T/lstm_tree.txt" <<'TREE'
Net(
  (emb): Embedding(20000, 300)
  (lstm): LSTM(300, 512, num_layers=2, batch_first=True, bidirectional=True)
  (fc): Linear(in_features=1024, out_features=2, bias=True)
)
TREE
expect2 "lstm_tree.txt:3: LSTM: a recurrent layer" --summary "$T/lstm_tree.txt" --batch 8 \
    --seq-len 64
cat >"$T/transfer.txt" <<'KERAS'
Model: "model"
_________________________________________________________________
 Layer (type)                Output Shape              Param #
=================================================================
 input_2 (InputLayer)        [(None, 224, 224, 3)]     0

 resnet50 (Functional)       (None, 7, 7, 2048)        23587712

 global_average_pooling2d (G  (None, 2048)             0
 lobalAveragePooling2D)

 dense (Dense)               (None, 10)                20490

=================================================================
Total params: 23,608,202
Trainable params: 23,555,082
Non-trainable params: 53,120
_________________________________________________________________
KERAS
expect2 "transfer.txt:7: a nested model (Functional)" --summary "$T/transfer.txt" --batch 64
# cut short before its totals, or two models in one file
head -12 "$T/transfer.txt" | sed 's/resnet50 (Functional)/conv (Conv2D)        /' >"$T/cut.txt"
expect2 "cut.txt:12: no 'Total params:' line" --summary "$T/cut.txt" --batch 64
ts=$C/summary_torchsummary/resnet18_imagenet.txt
cat "$ts" "$ts" >"$T/twice.txt"
expect2 "a second table starts here" --summary "$T/twice.txt" --batch 8

# A UTF-8 byte order mark is skipped; an empty file says so.
printf '\357\273\277' >"$T/bom.txt"
cat "$ts" >>"$T/bom.txt"
"$CARMA" estimate --summary "$T/bom.txt" --batch 16 >"$T/out" || fail "byte order mark"
grep -q "torchsummary, 68 layers" "$T/out" || fail "byte order mark: $(head -1 "$T/out")"
printf '\n  \n' >"$T/blank.txt"
expect2 "blank.txt: empty file" --summary "$T/blank.txt" --batch 8

# torchinfo's default depth=3 prints a transformer's blocks as single rows: refused, not
# read as blocks that keep nothing (GPT-2 medium came out at 0.6 of its module tree).
expect2 "gpt2m_depth3.txt:10: 'GPT2Block' holds 12596224 parameters but the table lists no layer" \
    --summary $C/summary_torchinfo/gpt2m_depth3.txt --batch 4 --seq-len 1024

# A custom one-layer class with more parameters than one linear layer of its widths (a
# noisy linear layer) is refused with a remedy that works: a deeper print where the table
# could go deeper, else (rows deeper elsewhere: it has none inside) a layer CSV.
expect2 "noisy_linear.txt:7: 'NoisyLinear' holds 132096 parameters but the table lists no layer inside it.*or, if it is one layer, give the model as a layer CSV" \
    --summary $C/summary_torchinfo/noisy_linear.txt --batch 32
expect2 "noisy_linear_leaf.txt:8: 'NoisyLinear' holds 132096 parameters in a layer carma does not know, with no layer inside it.*layer CSV" \
    --summary $C/summary_torchinfo/noisy_linear_leaf.txt --batch 32
# nn.PReLU's slopes are parameters: one per channel where its print says so.
"$CARMA" estimate --summary $C/summary_modtree/prelu_channels.txt --batch 8 >"$T/out" ||
    fail "PReLU tree refused"
grep -q "module-tree, 3 layers, 19466 parameters" "$T/out" || fail "PReLU slopes: $(head -1 "$T/out")"
# Keras core classes after tf.keras 2.5 are layers, whatever their output's shape.
"$CARMA" estimate --summary $C/summary_keras/einsum_dense_4d.txt --batch 8 >"$T/out" 2>&1 ||
    fail "a 4-d EinsumDense refused: $(cat "$T/out")"

# A sequence longer than a learned position table cannot run: refused, naming the table.
expect2 "sequence length 2048 is longer than the model's position table (1024 positions, line 4)" \
    --summary $C/summary_modtree/gpt2.txt --batch 4 --seq-len 2048

# --gradient-checkpointing says when it changes nothing, and how many units it wraps.
"$CARMA" estimate --summary $C/summary_torchinfo/resnet50_b32.txt --batch 32 \
    --gradient-checkpointing | grep -q "gradient checkpointing (no effect" || fail "checkpointing a CNN"
"$CARMA" estimate --summary $C/summary_modtree/bert_base.txt --batch 8 --seq-len 128 \
    --gradient-checkpointing --json | grep -q '"checkpointed_units": 12' || fail "BERT's 12 units"
# --gradient-accumulation: the replayed peak holds every gradient (GPT-2 small: 163M
# parameters, 622 MiB in fp32) and the JSON names the loop that gave it; the per-kind
# terms count the gradients already and say the option changes nothing.
"$CARMA" estimate --summary $C/summary_torchinfo/resnet50_b32.txt --batch 32 \
    --gradient-accumulation | grep -q "gradient accumulation (no effect" || fail "accumulating a CNN"
for f in "" --gradient-accumulation; do
    "$CARMA" estimate --summary $C/summary_modtree/gpt2.txt --batch 4 --seq-len 1024 \
        --attention sdpa $f --json >"$T/ga$f.json" || fail "gpt2 $f"
done
python3 - "$T/ga.json" "$T/ga--gradient-accumulation.json" <<'PY' || fail "gradient accumulation JSON"
import json, sys
a, g = (json.load(open(f)) for f in sys.argv[1:])
assert a["gradient_accumulation"] is False and g["gradient_accumulation"] is True
assert "micro_batches" not in a["model"] and a["breakdown"]["gradients_mib"] == 0, a
m = g["model"]
assert m["kind"] == "replay" and 1 <= m["micro_batches"] <= 8 and m["set_to_none"] in (True, False), m
assert g["breakdown"]["gradients_mib"] > 600, g["breakdown"]
assert g["estimate_mib"] > a["estimate_mib"] + 600, (a["estimate_mib"], g["estimate_mib"])
PY
"$CARMA" estimate --summary $C/summary_modtree/gpt2.txt --batch 4 --seq-len 1024 \
    --gradient-accumulation | grep -q "adamw, fp32, gradient accumulation, a100-40gb" ||
    fail "gradient accumulation: not in the text"
# bf16 on a GPU without it: a note on stderr, the JSON on stdout unchanged.
"$CARMA" estimate --summary $C/summary_modtree/bert_base.txt --batch 8 --seq-len 128 \
    --precision bf16 --gpu v100-32gb --json 2>"$T/bf16.err" | python3 -c 'import json,sys; json.load(sys.stdin)' ||
    fail "bf16 on a V100: JSON"
grep -q "v100-32gb (compute capability 7.0) has no native bfloat16" "$T/bf16.err" || fail "bf16 on a V100: no note"
"$CARMA" estimate --summary $C/summary_modtree/bert_base.txt --batch 8 --seq-len 128 \
    --precision bf16 --gpu a100-40gb 2>&1 >/dev/null | grep -q . && fail "bf16 on an A100: a note"
# --seq-len or --image-size where nothing reads them is refused, not ignored: the job would
# look sized for its input. A CSV row without per_token 1 is per sample, embed and attn rows
# too: --seq-len beside a CSV with no per-token row is refused.
expect2 "mlp.csv: --seq-len sizes nothing in this layer CSV: no row has per_token 1" \
    --summary $C/summary_csv/mlp.csv --batch 32 --seq-len 128
expect2 "mlp_params_suffix.txt: --seq-len sizes nothing here: not a sequence model" \
    --summary $C/summary_modtree/mlp_params_suffix.txt --batch 32 --seq-len 128
expect2 "gpt2.txt: --image-size sizes nothing here: no 2-D convolution or patch embedding" \
    --summary $C/summary_modtree/gpt2.txt --batch 8 --seq-len 512 --image-size 224
expect2 "transformer_block.csv: --image-size does not apply to a layer CSV" \
    --summary $C/summary_csv/transformer_block.csv --batch 8 --seq-len 512 --image-size 224
# Without the per_token column a transformer's embed row is ambiguous: with or without
# --seq-len, the user is asked (read per sample it was a 4 GB bound for a 38 GB job).
cut -d, -f1-4 $C/summary_csv/transformer_block.csv >"$T/tb_noper.csv"
expect2 "tb_noper.csv:2: an embed row in a CSV without a per_token column" \
    --summary "$T/tb_noper.csv" --batch 16 --seq-len 1024
expect2 "tb_noper.csv:2: an embed row in a CSV without a per_token column" \
    --summary "$T/tb_noper.csv" --batch 16
# A CSV with the column and no per-token row: --seq-len sizes nothing.
sed 's/,1$/,0/' $C/summary_csv/transformer_block.csv >"$T/tb_zero.csv"
expect2 "tb_zero.csv: --seq-len sizes nothing in this layer CSV: no row has per_token 1" \
    --summary "$T/tb_zero.csv" --batch 16 --seq-len 1024
# --summary - reads standard input; its errors name it stdin.
"$CARMA" estimate --summary - --batch 8 --seq-len 256 --json <$C/summary_modtree/gpt2.txt \
    >"$T/stdin.json" || fail "--summary -"
"$CARMA" estimate --summary $C/summary_modtree/gpt2.txt --batch 8 --seq-len 256 --json |
    cmp -s - "$T/stdin.json" || fail "--summary - differs from the file"
printf 'type,out_elems,params\nlinear,10,110\nfrobnicate,1,0\n' >"$T/fz.csv"
set +e
"$CARMA" estimate --summary - --batch 8 <"$T/fz.csv" 2>"$T/err"
rc=$?
set -e
[ $rc -eq 2 ] && grep -q "^carma estimate: <stdin>:3: unknown layer type 'frobnicate'" "$T/err" ||
    fail "--summary - error: $rc $(cat "$T/err")"
# --coefficients: a value the fit never gives is refused by line (a negative multiplier
# made a negative estimate "fit").
printf 'name,value\nkind_conv_conv,-3\n' >"$T/coef_neg.csv"
expect2 "coef_neg.csv:2: kind_conv_conv -3 is out of range: a multiplier is from 0 to 4" \
    --summary data/estimator/cifar-summaries/resnet18cifar100_32.model --batch 32 \
    --coefficients "$T/coef_neg.csv"
# A module tree's ", N params" suffix below what its printed arguments make is refused.
sed 's/(wte): Embedding(50257, 768)/(wte): Embedding(50257, 768), 385,973 params/' \
    $C/summary_modtree/gpt2.txt >"$T/gpt2_sfx.txt"
grep -q "385,973 params" "$T/gpt2_sfx.txt" || fail "gpt2 suffix edit"
expect2 "gpt2_sfx.txt:3: Embedding: its suffix says 385973 params, fewer than the 38597376 its printed arguments make" \
    --summary "$T/gpt2_sfx.txt" --batch 8 --seq-len 512
# A misspelt type is refused with the valid ones, not taken as a layer with no tensor.
printf 'type,out_elems,params\ninput,3072,0\nConv2d,65536,448\nnrom,65536,128\n' >"$T/typo.csv"
expect2 "typo.csv:4: unknown layer type 'nrom': a layer CSV's type is input, linear, conv" \
    --summary "$T/typo.csv" --batch 64
# An embed row with per_token 0 (DLRM's EmbeddingBag tables) is per sample.
printf 'type,out_elems,params,count,per_token\ninput,13,0,1,0\nEmbeddingBag,64,64000000,26,0\nLinear,1,1729,1,0\n' \
    >"$T/bag.csv"
"$CARMA" estimate --summary "$T/bag.csv" --batch 2048 >"$T/bag.out" || fail "per-sample embed row"
grep -q "1664001729 parameters" "$T/bag.out" || fail "per-sample embed row: $(cat "$T/bag.out")"
# A table's shapes are its input's: --seq-len or --image-size beside it is refused, not
# ignored (a BERT table printed at 128 would have been sized at 128 for a job at 512).
expect2 "bert_layer_b8.txt: --seq-len does not apply to a torchinfo table" \
    --summary $C/summary_torchinfo/bert_layer_b8.txt --batch 8 --seq-len 512
expect2 "resnet50_b32.txt: --image-size does not apply to a torchinfo table" \
    --summary $C/summary_torchinfo/resnet50_b32.txt --batch 32 --image-size 448
expect2 "does not apply to a torchsummary table" \
    --summary data/estimator/cifar-summaries/resnet18cifar100_32.model --batch 32 --seq-len 64
"$CARMA" estimate --summary $C/summary_modtree/bert_base.txt --batch 8 --seq-len 128 |
    grep -q "no effect" && fail "--seq-len on BERT said no effect"

# One --seq-len sizes both stacks of an encoder-decoder: the help says which length to give
# (the longer: the shorter one underestimates the other stack).
"$CARMA" estimate --help | grep -q "longer of the source and" ||
    fail "the help does not say which --seq-len an encoder-decoder takes"

# A layer kind carma has no node for still trains: its parameters get gradients and
# optimizer state, as a Linear layer's do.
printf 'type,out_elems,params\nother,4096,100000000\n' >"$T/custom.csv"
printf 'type,out_elems,params\nLinear,4096,100000000\n' >"$T/linear.csv"
"$CARMA" estimate --summary "$T/custom.csv" --batch 8 --json >"$T/custom.json" || fail "custom"
"$CARMA" estimate --summary "$T/linear.csv" --batch 8 --json >"$T/linear.json" || fail "linear"
python3 - "$T/custom.json" "$T/linear.json" <<'PY' || fail "custom layer's gradients"
import json, sys
c, l = (json.load(open(f))["breakdown"] for f in sys.argv[1:3])
assert abs(c["gradients_mib"] - l["gradients_mib"]) < 1, (c, l)
assert c["gradients_mib"] > 380, c
PY

# TF 2 cuts long type names mid-word; the whole name decides the kind: a separable
# convolution is a convolution.
cat >"$T/sep.txt" <<'KERAS'
Model: "sequential"
_________________________________________________________________
 Layer (type)                Output Shape              Param #
=================================================================
 separable_conv2d (Separable  (None, 222, 222, 64)     283
 Conv2D)

 separable_conv2d_1 (Separab  (None, 220, 220, 128)    8896
 leConv2D)

 global_average_pooling2d (G  (None, 128)              0
 lobalAveragePooling2D)

 dense (Dense)               (None, 10)                1290

=================================================================
Total params: 10,469
Trainable params: 10,469
Non-trainable params: 0
_________________________________________________________________
KERAS
"$CARMA" estimate --summary "$T/sep.txt" --batch 64 --json >"$T/sep.json" || fail "separable"
python3 -c "import json,sys; r = json.load(open(sys.argv[1])); \
assert r['family'] == 'conv' and r['estimate_mib'] > 5000, r" "$T/sep.json" || fail "separable conv"

# torchinfo's input size (10^6-byte MB of the printed batch) counts as the CSV's input row.
"$CARMA" estimate --summary $C/summary_torchinfo/resnet50_b32.txt --batch 32 --json >"$T/ti.json"
"$CARMA" estimate --summary data/estimator/imagenet-tables/resnet50.csv --batch 32 --json \
    >"$T/csv.json"
python3 -c "import json,sys; a, b = (json.load(open(f))['breakdown']['activations_mib'] \
for f in sys.argv[1:3]); assert abs(a - b) < 1, (a, b)" "$T/ti.json" "$T/csv.json" ||
    fail "torchinfo input size"

# Colour codes from a terminal and tabs from an editor are not part of a summary.
sed 's/^\(.*\)$/\x1b[32m\1\x1b[0m/' "$ts" >"$T/ansi.txt"
"$CARMA" estimate --summary "$T/ansi.txt" --batch 16 | grep -q "torchsummary, 68 layers" ||
    fail "colour codes"
sed 's/^\( *[A-Za-z0-9]*-[0-9]*\)  */\1\t/' "$ts" >"$T/tabs.txt"
grep -q "$(printf '\t')" "$T/tabs.txt" || fail "no tab made"
"$CARMA" estimate --summary "$T/tabs.txt" --batch 16 | grep -q "torchsummary, 68 layers" || fail "tabs"

# A repeat whose range and count disagree is an edited print.
sed 's/(0-11): 12 x BertLayer/(0-11): 10 x BertLayer/' data/estimator/hf-trees/bert_base_mlm.txt \
    >"$T/edited.txt"
grep -q "10 x BertLayer" "$T/edited.txt" || fail "no edit made"
expect2 "(0-11) names 12 modules but the count says 10" --summary "$T/edited.txt" --batch 8 \
    --seq-len 128
# layers count the repeats; rows are as printed
"$CARMA" estimate --summary data/estimator/hf-trees/bert_base_mlm.txt --batch 8 --seq-len 128 \
    --json >"$T/bert.json"
python3 -c "import json,sys; r = json.load(open(sys.argv[1])); \
assert r['layers'] > 100 and r['rows'] < 40, (r['layers'], r['rows'])" "$T/bert.json" ||
    fail "layers and rows"

# Keras 3 wraps long names and shapes over two lines of a row: the row is read whole.
K3=$C/summary_keras/keras3_functional_wrapped.txt
"$CARMA" estimate --summary $K3 --batch 64 --json >"$T/k3.json" || fail "Keras 3 wrapped rows"
python3 -c "import json,sys; r = json.load(open(sys.argv[1])); \
assert (r['layers'], r['params']) == (7, 10602), r" "$T/k3.json" ||
    fail "Keras 3 wrapped rows: $(head -c 300 "$T/k3.json")"

# torchsummary run with batch_size=64 prints the whole batch's input size: per sample it
# is N times less, and the estimate is the same as from the -1 table.
python3 - "$ts" "$T/b4.txt" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
t = t.replace("[-1,", "[64,")
def scale(m):
    return "Input size (MB): %.2f" % (float(m.group(1)) * 64)
t = re.sub(r"Input size \(MB\): ([0-9.]+)", scale, t)
open(sys.argv[2], "w").write(t)
PY
"$CARMA" estimate --summary "$ts" --batch 16 --json >"$T/m1.json" || fail "ts -1"
"$CARMA" estimate --summary "$T/b4.txt" --batch 16 --json >"$T/b4.json" || fail "ts batch 64"
python3 -c "import json,sys; a, b = (json.load(open(f))['estimate_mib'] for f in sys.argv[1:3]); \
assert abs(a - b) <= 2, (a, b)" "$T/m1.json" "$T/b4.json" || fail "torchsummary batch"

# The attention the estimate assumed: as printed (an Sdpa class: fused), or as given.
H=data/estimator/hf-trees/bert_base_mlm.txt
# (the breakdown is what is allocated at the peak: BERT's comes before any parameter's
# gradient, and the text says so rather than print a bare 0)
"$CARMA" estimate --summary $H --batch 8 --seq-len 512 >"$T/bert.txt" 2>/dev/null || fail "bert text"
grep -q '^  gradients  *0\.0 MiB  (none held yet at the peak)$' "$T/bert.txt" ||
    fail "bert's gradients at the peak: $(cat "$T/bert.txt")"
"$CARMA" estimate --summary $H --batch 1 --seq-len 32 --optimizer sgd >"$T/bert1.txt" 2>/dev/null ||
    fail "bert text, batch 1"
grep -q '^  gradients  *[1-9][0-9]*\.[0-9] MiB$' "$T/bert1.txt" ||
    fail "gradients held at an optimizer step's peak: $(cat "$T/bert1.txt")"
"$CARMA" estimate --summary $H --batch 32 --seq-len 512 --json >"$T/sdpa.json" || fail "sdpa"
# (read as eager, its bound passes 40 GB: an a100-80gb, whose workspaces are the same size)
"$CARMA" estimate --summary $H --batch 32 --seq-len 512 --attention eager --gpu a100-80gb --json \
    >"$T/eager.json" || fail "eager"
python3 - "$T/sdpa.json" "$T/eager.json" <<'PY' || fail "attention json"
import json, sys
s, e = (json.load(open(f)) for f in sys.argv[1:3])
assert s["attention"] == "sdpa" and e["attention"] == "eager", (s["attention"], e["attention"])
assert e["estimate_mib"] > 1.3 * s["estimate_mib"]
assert s["bound_mib"] >= 19828  # CARMA's measured peak of this run
PY

# Attention heads (--heads): nn.MultiheadAttention and Keras's MultiHeadAttention never
# show them, so eager attention is refused without it; other blocks assume 64-wide heads,
# and JSON `heads` says which.
M=$C/summary_modtree/mha_classifier.txt
expect2 "mha_classifier.txt:6: nn.MultiheadAttention: its number of heads is not in the print" \
    --summary $M --batch 8 --seq-len 128
expect2 "give --heads N" --summary $M --batch 8 --seq-len 128 --attention eager
expect2 "mha_classifier.txt:6: an attention block whose query is 128 wide: --heads 3 does not" \
    --summary $M --batch 8 --seq-len 128 --heads 3
expect2 "--heads must be an integer from 1 to 4096" --summary $M --batch 8 --seq-len 128 --heads 5000
expect2 "--heads must be an integer from 1 to 4096, not '0'" --summary $M --batch 8 --seq-len 128 --heads 0
expect2 "keras2_mha.txt:9: Keras MultiHeadAttention: its number of heads" \
    --summary $C/summary_keras/keras2_mha.txt --batch 8
expect2 "keras3_gqa_cross.txt:9: Keras GroupedQueryAttention: its number of heads" \
    --summary $C/summary_keras/keras3_gqa_cross.txt --batch 8
# Keras's Attention has one head: --heads sizes nothing there, and the text says why
"$CARMA" estimate --summary $C/summary_keras/keras2_attention.txt --batch 8 --heads 4 \
    >"$T/ka.txt" || fail "Keras Attention --heads 4"
grep -q "^--heads 4: no effect (no attention blocks with heads)" "$T/ka.txt" ||
    fail "--heads on Keras Attention: $(cat "$T/ka.txt")"
"$CARMA" estimate --summary $M --batch 8 --seq-len 128 --heads 8 --json >"$T/h8.json" ||
    fail "--heads 8"
"$CARMA" estimate --summary $M --batch 8 --seq-len 128 --attention sdpa --json >"$T/hs.json" ||
    fail "--attention sdpa without --heads"
"$CARMA" estimate --summary $M --batch 8 --seq-len 128 --attention sdpa --heads 8 >"$T/hs8.txt" ||
    fail "--attention sdpa --heads 8"
grep -q "^--heads 8: no effect (fused attention keeps no probabilities)" "$T/hs8.txt" ||
    fail "--heads under sdpa: $(cat "$T/hs8.txt")"
"$CARMA" estimate --summary $C/summary_modtree/bert_base.txt --batch 8 --seq-len 128 --json \
    >"$T/ha.json" || fail "bert heads assumed"
"$CARMA" estimate --summary $C/summary_modtree/bert_base.txt --batch 8 --seq-len 128 \
    >"$T/ha.txt" || fail "bert heads assumed (text)"
grep -q "heads assumed 64 wide: 12 in the first block; --heads N if narrower" "$T/ha.txt" ||
    fail "assumed heads not said: $(cat "$T/ha.txt")"
python3 - "$T/h8.json" "$T/hs.json" "$T/ha.json" <<'PY' || fail "heads json"
import json, sys
g, s, a = (json.load(open(f)) for f in sys.argv[1:4])
assert g["heads"] == {"source": "given", "count": 8, "counted": True}, g["heads"]
assert g["attention"] == "eager" and s["attention"] == "sdpa" and "heads" not in s
assert g["estimate_mib"] > s["estimate_mib"]
assert a["heads"] == {"source": "assumed", "count": 12, "head_size": 64, "counted": True}, a["heads"]
PY
# Swin's windowed attention and attention over a convolutional tensor's positions assume
# heads of 32 channels: the JSON says so, with the first block's count
"$CARMA" estimate --summary data/estimator/gpu-peaks-h100/swin_t_b32.txt --batch 8 \
    --image-size 224 --json >"$T/hw.json" || fail "swin heads"
"$CARMA" estimate --summary data/estimator/gpu-peaks-h200/caformer_s18_timm_b32.txt --batch 8 \
    --image-size 224 --json >"$T/hp.json" || fail "caformer heads"
python3 - "$T/hw.json" "$T/hp.json" <<'PY' || fail "32-wide heads json"
import json, sys
w, p = (json.load(open(f)) for f in sys.argv[1:3])
assert w["heads"] == {"source": "assumed", "count": 3, "head_size": 32, "counted": True}, w["heads"]
assert p["heads"] == {"source": "assumed", "count": 10, "head_size": 32, "counted": True}, p["heads"]
assert any("over the 196 positions" in n for n in p["notes"]), p["notes"]
PY

# eval-estimator prints the figures and every CIFAR bound at or above its peak.
"$CARMA" eval-estimator --data data/estimator >"$T/eval" || fail "eval-estimator"
grep -q "acc@1GB" "$T/eval" || fail "no accuracy"
grep -q "every bound >= peak: yes" "$T/eval" || fail "no real-model check"
! grep -q "every bound >= peak: NO" "$T/eval" || fail "a real model's bound below its peak"
# On the real ImageNet models, with the default floor, tighter than GPUMemNet's published
# 1.55x mean on real models.
awk '/^Real ImageNet.*floor default/ {on = 1} on && /mean estimate\/peak/ {
         sub(/,.*/, ""); print $NF; exit }' "$T/eval" >"$T/ratio"
python3 -c "import sys; r = float(open(sys.argv[1]).read()); assert 1.0 <= r < 1.55, r" \
    "$T/ratio" || fail "ImageNet mean estimate/peak $(cat "$T/ratio")"
# BERT-base and BERT-large as CARMA trained them: each estimate within 10% of the peak.
awk '/^Real Hugging Face.*floor default/ {on = 1} on && /^  bert_/ {print $8} on && /^$/ {exit}' \
    "$T/eval" >"$T/hf"
python3 -c "import sys; r = [float(x) for x in open(sys.argv[1])]; \
assert len(r) == 2 and all(0.9 <= x <= 1.1 for x in r), r" "$T/hf" \
    || fail "transformer estimate/peak $(cat "$T/hf")"
# The family follows the output elements, as README says: ConvNeXt has convolutions and is
# replayed (dense), ResNet-50 takes the per-kind terms (conv).
"$CARMA" estimate --summary data/estimator/torchvision-zoo/convnext_tiny.txt --image-size 224 \
    --batch 8 --json >"$T/cnx.json" || fail "convnext"
"$CARMA" estimate --summary data/estimator/cnn-trees/resnet50.txt --image-size 224 --batch 8 \
    --json >"$T/r50.json" || fail "resnet50 tree"
python3 - "$T/cnx.json" "$T/r50.json" <<'PY' || fail "families"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert a["family"] == "dense" and a["model"]["kind"] == "replay", a["family"]
assert b["family"] == "conv" and b["model"]["kind"] == "per-kind", b["family"]
PY
grep -q "Models without convolutions are estimated by replaying" README.md &&
    fail "README: the family rule is by output elements, not by convolutions"
grep -q "ConvNeXt with its per-pixel linear" README.md || fail "README: family rule not stated"
# The floor: the default on the kinds nothing was measured on, the H100's measured one
# there (762 MiB, data/estimator/gpu-peaks-h100); "fits" uses the nominal memory: both are
# stated among the known limits.
for g in a100-40gb v100-32gb h100-80gb; do
    "$CARMA" estimate --summary data/estimator/cnn-trees/resnet50.txt --image-size 224 \
        --batch 32 --optimizer adam --gpu $g --json >"$T/f-$g.json" || fail "floor on $g"
done
python3 - "$T"/f-*.json <<'PY' || fail "floor per kind"
import json, sys
d = {x["gpu"]: x for x in (json.load(open(f)) for f in sys.argv[1:])}
floor = {g: x["breakdown"]["floor_mib"] for g, x in d.items()}
assert floor == {"a100-40gb": 550, "v100-32gb": 550, "h100-80gb": 762}, floor
assert {x["gpu_mib"] for x in d.values()} == {40960, 32768, 81559}, [x["gpu_mib"] for x in d]
PY
# A given floor was measured in the job's environment: used as given on every kind, the
# H100's adjustment (212 MiB) left to the default and fitted floors.
for g in a100-40gb h100-80gb; do
    "$CARMA" estimate --summary $C/summary_csv/mlp.csv --batch 8 --floor 1000 --gpu $g \
        --json >"$T/fg-$g.json" || fail "given floor on $g"
done
python3 - "$T"/fg-*.json <<'PY' || fail "given floor per kind"
import json, sys
d = [json.load(open(f)) for f in sys.argv[1:]]
assert [(x["floor_source"], x["breakdown"]["floor_mib"]) for x in d] == [("given", 1000)] * 2, d
PY
# The H100's floor is shipped (src/sim/gpukind.c), and the docs say so everywhere.
grep -q "floors are shipped: none were measured" docs/estimator.md &&
    fail "docs/estimator.md: says no per-kind floor is shipped; the H100's is"
grep -q "^floor is shipped, the H100's" docs/estimator.md ||
    fail "docs/estimator.md: the shipped H100 floor not stated beside the floor table"
grep -q "^- The floor is measured on one GPU kind" docs/estimator.md ||
    fail "docs/estimator.md: the per-kind floor limit not stated"
# Grouped-query attention under SDPA in fp32 runs PyTorch's math kernel: its probabilities
# are counted, and a note says so; in bf16 on an H100 FlashAttention takes it.
L=data/estimator/gpu-peaks-h100/llama_small_b4_s512.txt
"$CARMA" estimate --summary $L --batch 4 --seq-len 512 --attention sdpa --gpu h100-80gb \
    --json >"$T/gqa32.json" || fail "gqa fp32"
"$CARMA" estimate --summary $L --batch 4 --seq-len 512 --attention sdpa --gpu h100-80gb \
    --precision bf16 --json >"$T/gqa16.json" || fail "gqa bf16"
"$CARMA" estimate --summary $L --batch 4 --seq-len 512 --attention sdpa --gpu h100-80gb \
    >"$T/gqa32.txt" || fail "gqa fp32 text"
grep -q "^note: grouped-query attention under SDPA, in fp32" "$T/gqa32.txt" ||
    fail "no math-kernel note: $(cat "$T/gqa32.txt")"
python3 - "$T/gqa32.json" "$T/gqa16.json" <<'PY' || fail "math kernel"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert any("math kernel" in n for n in a["notes"]), a.get("notes")
assert not any("math kernel" in n for n in b.get("notes", [])), b.get("notes")
assert a["estimate_mib"] >= 5734 * 0.99, a["estimate_mib"]  # its measured peak on an H100
PY
# T5's attention adds a position bias to its scores: counted under --attention sdpa too.
"$CARMA" estimate --summary data/estimator/gpu-peaks-h100/t5_small_b16_s512.txt --batch 16 \
    --seq-len 512 --attention sdpa --gpu h100-80gb >"$T/t5.txt" || fail "t5"
grep -q "^note: the attention adds a learned position bias" "$T/t5.txt" || fail "t5 note"
grep -q "^attention: eager" "$T/t5.txt" || fail "t5 read as fused: $(grep attention "$T/t5.txt")"
# The H100 runs: every bound at or above its measured peak.
awk '/^Training peaks measured on an NVIDIA H100/ {on = 1} on && /every bound >= peak/ {
         print $NF; exit }' "$T/eval" | grep -qx yes || fail "an H100 run's bound below its peak"
grep -q "compare the bound with each kind's nominal memory" docs/estimator.md ||
    fail "docs/estimator.md: the nominal capacity of fits not stated"

# The fit reproduces the shipped table byte for byte from the data and the fixed prior of
# src/estimate/fit.c alone (not from the shipped table), and names what the prior set.
"$CARMA" eval-estimator --fit --data data/estimator --out "$T/coef.csv" >"$T/fit.out" ||
    fail "--fit"
cmp -s "$T/coef.csv" data/estimator/coefficients.csv || fail "--fit does not reproduce coefficients.csv"
grep -qx "no signal in the data, so the fixed prior's value (src/estimate/fit.c): kind_embed_conv 1 kind_attn_conv 2.25" \
    "$T/fit.out" || fail "--fit: the prior's columns not named: $(tail -1 "$T/fit.out")"

# --catalog writes carma's bound into a workload catalog's est_carma_mib: from the catalog
# without the column it rebuilds data/workloads.csv byte for byte, and again in place (no
# change); tools/gen_profiles.c, which rewrites the profile columns, keeps it.
cut -d, -f1-18 data/workloads.csv >"$T/cat.csv"
"$CARMA" eval-estimator --data data/estimator --catalog "$T/cat.csv" >"$T/cat.out" ||
    fail "--catalog: $(cat "$T/cat.out")"
cmp -s "$T/cat.csv" data/workloads.csv || fail "--catalog does not rebuild data/workloads.csv"
grep -q "39 workloads with a summary, every bound >= peak: yes; 12 without one" "$T/cat.out" ||
    fail "--catalog summary: $(tail -2 "$T/cat.out")"
grep -q "^  vgg3  *vgg16.txt  *128  *45004  *21864" "$T/cat.out" || fail "--catalog row"
"$CARMA" eval-estimator --data data/estimator --catalog "$T/cat.csv" >/dev/null ||
    fail "--catalog again"
cmp -s "$T/cat.csv" data/workloads.csv || fail "--catalog not idempotent"
cc -std=c17 -D_GNU_SOURCE -Isrc -O2 -o "$T/gen_profiles" tools/gen_profiles.c \
    src/sim/profile.c src/util/csv.c src/util/err.c src/util/utf8.c -lm || fail "gen_profiles"
cp data/model-profiles.csv "$T/mp.csv"
"$T/gen_profiles" "$T/cat.csv" data/collocation-facts.csv "$T/mp.csv" || fail "gen_profiles run"
cmp -s "$T/cat.csv" data/workloads.csv || fail "gen_profiles changes data/workloads.csv"
cmp -s "$T/mp.csv" data/model-profiles.csv || fail "gen_profiles changes model-profiles.csv"
# A catalog that cannot be written (FILE.tmp on a full disk) is left as it was, and so is
# no FILE.tmp; a FILE whose FILE.tmp name passes PATH_MAX is refused, naming it.
if [ -w /dev/full ]; then
    cp "$T/cat.csv" "$T/full.csv"
    ln -s /dev/full "$T/full.csv.tmp"
    rc=0
    "$CARMA" eval-estimator --data data/estimator --catalog "$T/full.csv" >/dev/null 2>"$T/err" || rc=$?
    [ "$rc" = 1 ] && grep -q "cannot write $T/full.csv.tmp: No space left on device" "$T/err" ||
        fail "--catalog on a full disk: exit $rc, $(cat "$T/err")"
    [ -e "$T/full.csv.tmp" ] || [ -L "$T/full.csv.tmp" ] && fail "--catalog left FILE.tmp behind"
    cmp -s "$T/full.csv" data/workloads.csv || fail "--catalog on a full disk changed the catalog"
fi
long=$T/$(printf '%0200d' 0)
while [ ${#long} -lt 3880 ]; do long=$long/$(printf '%0200d' 0); done
mkdir -p "$long" || fail "mkdir of a long path"
long=$long/$(printf '%0*d' $((4088 - ${#long})) 0).csv # 4093 bytes: its .tmp name has 4097
[ ${#long} = 4093 ] || fail "long path of ${#long} bytes"
cp "$T/cat.csv" "$long" || fail "cp to a long path"
rc=0
"$CARMA" eval-estimator --data data/estimator --catalog "$long" >/dev/null 2>"$T/err" || rc=$?
[ "$rc" = 2 ] && grep -q "path too long for its temporary file .*\.csv\.tmp (at most 4095 bytes)" "$T/err" ||
    fail "--catalog with a long path: exit $rc, $(cut -c1-200 "$T/err")"
rm -rf "$T/$(printf '%0200d' 0)"
# A map row that names another run than the workload's is refused, naming its line, and
# the catalog is left as it was.
mkdir "$T/est"
ln -s "$PWD/data/estimator/cnn-trees" "$T/est/cnn-trees"
printf 'model,dataset,batch,set,summary\nresnet50,/raid/datasets/imagenet,32,cnn-trees,vgg16.txt\n' \
    >"$T/est/carma-workloads.csv"
rc=0
"$CARMA" eval-estimator --data "$T/est" --catalog "$T/cat.csv" >/dev/null 2>"$T/err" || rc=$?
[ "$rc" = 2 ] || fail "--catalog with a wrong map: exit $rc"
grep -q "carma-workloads.csv:2: the run this row names .*not the same run" "$T/err" || fail "wrong map: $(cat "$T/err")"
cmp -s "$T/cat.csv" data/workloads.csv || fail "--catalog wrote after an error"
printf 'model,dataset,batch,set,summary\nresnet50,/raid/datasets/imagenet,48,cnn-trees,vgg16.txt\n' \
    >"$T/est/carma-workloads.csv"
rc=0
"$CARMA" eval-estimator --data "$T/est" --catalog "$T/cat.csv" >/dev/null 2>"$T/err" || rc=$?
[ "$rc" = 2 ] && grep -q "carma-workloads.csv:2: .*no row for summary 'vgg16.txt' at batch 48" \
    "$T/err" || fail "map to no run: exit $rc, $(cat "$T/err")"
# A table's printed "Trainable params:" (torchsummary marks no row frozen): a frozen
# prefix that holds the difference is frozen; when none does, every row trains and the
# output says why, naming the printed count and its line.
cat >"$T/ts_frozen.txt" <<'EOF'
----------------------------------------------------------------
        Layer (type)               Output Shape         Param #
================================================================
            Conv2d-1           [-1, 16, 32, 32]             448
              ReLU-2           [-1, 16, 32, 32]               0
            Conv2d-3           [-1, 32, 32, 32]           4,640
              ReLU-4           [-1, 32, 32, 32]               0
           Flatten-5                [-1, 32768]               0
            Linear-6                   [-1, 10]         327,690
================================================================
Total params: 332,778
Trainable params: 327,690
Non-trainable params: 5,088
----------------------------------------------------------------
EOF
sed 's/^Trainable params: 327,690/Trainable params: 328,138/' "$T/ts_frozen.txt" >"$T/ts_middle.txt"
"$CARMA" estimate --summary "$T/ts_frozen.txt" --batch 64 --json >"$T/tsf.json" ||
    fail "frozen prefix estimate"
"$CARMA" estimate --summary "$T/ts_middle.txt" --batch 64 --json >"$T/tsm.json" ||
    fail "frozen middle estimate"
python3 - "$T/tsf.json" "$T/tsm.json" <<'PY' || fail "printed trainable json"
import json, sys
f, m = (json.load(open(p)) for p in sys.argv[1:3])
assert f["trainable_params"] == f["printed_trainable_params"] == 327690, f
assert "notes" not in f, f
assert m["trainable_params"] == 332778 and m["printed_trainable_params"] == 328138, m
assert len(m["notes"]) == 1 and "'Trainable params: 328138' (line 12)" in m["notes"][0], m
assert f["breakdown"]["gradients_mib"] < m["breakdown"]["gradients_mib"]
PY
# a PEFT base under autocast is counted in 16 bits, and said; in fp32 there is nothing to say
lq=tests/fuzz/corpus/summary_modtree/t5_small_lora_qv.txt
"$CARMA" estimate --summary "$lq" --batch 4 --seq-len 128 --precision amp --json >"$T/lq16.json" &&
    "$CARMA" estimate --summary "$lq" --batch 4 --seq-len 128 --json >"$T/lq32.json" ||
    fail "lora t5"
python3 - "$T/lq16.json" "$T/lq32.json" <<'PY' || fail "frozen base note"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
n = [x for x in a["notes"] if "frozen parameters are counted in 16 bits" in x]
assert len(n) == 1 and n[0].startswith("the 76956160 frozen parameters"), a["notes"]
assert not any("counted in 16 bits" in x for x in b.get("notes", [])), b.get("notes")
PY
# a table printed at another batch than --batch: scaled, and said
ti=tests/fuzz/corpus/summary_torchinfo/resnet50_b32.txt
"$CARMA" estimate --summary "$ti" --batch 32 --json >"$T/b32.json" &&
    "$CARMA" estimate --summary "$ti" --batch 8 --json >"$T/b8.json" || fail "table batch"
python3 - "$T/b32.json" "$T/b8.json" <<'PY' || fail "table batch note"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert not any("printed at batch" in n for n in a.get("notes", [])), a.get("notes")
assert any(n.startswith("the table was printed at batch 32; its activations are scaled to "
                        "batch 8, the job's batch per GPU") for n in b["notes"]), b.get("notes")
PY
"$CARMA" estimate --summary "$T/ts_frozen.txt" --batch 64 >"$T/out" || fail "frozen prefix text"
grep -q "332778 parameters (327690 trained, the rest frozen)" "$T/out" ||
    fail "trained count: $(cat "$T/out")"
! grep -q "^note:" "$T/out" || fail "a note for a placed count: $(cat "$T/out")"
"$CARMA" estimate --summary "$T/ts_middle.txt" --batch 64 >"$T/out" || fail "frozen middle text"
grep -q "^note: the table prints 'Trainable params: 328138' (line 12), which carma cannot place on its rows (no frozen prefix of its rows holds the other 4640): 332778 parameters are counted as trained" "$T/out" ||
    fail "no note: $(cat "$T/out")"

# peft before 0.7 prints an adapted layer as its base class, its arguments on the next
# line, then the LoRA parts: read as peft >= 0.7's lora.* block, the same estimate.
for f in peft_lora peft_lora_old; do
    "$CARMA" estimate --summary "$C/summary_modtree/$f.txt" --batch 4 --seq-len 256 \
        --precision bf16 --json >"$T/$f.json" || fail "$f"
done
python3 - "$T/peft_lora.json" "$T/peft_lora_old.json" <<'PY' || fail "peft < 0.7 layout"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a == b, (a, b)
assert 0 < b["trainable_params"] < b["params"]
PY
# DoRA (use_dora=True) is read as plain LoRA, with a note naming its line and what is not
# counted: peft >= 0.11's DoraLinearLayer in lora_magnitude_vector, peft 0.9-0.10's
# ParameterDict of magnitude vectors. Plain LoRA (an empty lora_magnitude_vector) has none.
python3 - "$C/summary_modtree/peft_lora.txt" "$T" <<'PY' || fail "dora prints"
import sys
s = open(sys.argv[1]).read()
e = "(lora_magnitude_vector): ModuleDict()"
assert e in s
open(sys.argv[2] + "/dora.txt", "w").write(s.replace(e, "(lora_magnitude_vector): ModuleDict(\n"
    "                  (default): lora.dora.DoraLinearLayer()\n                )", 1))
open(sys.argv[2] + "/dora_old.txt", "w").write(s.replace(e, "(lora_magnitude_vector): "
    "ParameterDict(  (default): Parameter containing: [torch.FloatTensor of size 64])", 1))
PY
for f in dora dora_old; do
    "$CARMA" estimate --summary "$T/$f.txt" --batch 4 --seq-len 256 --precision bf16 \
        --json >"$T/$f.json" || fail "$f"
done
python3 - "$T/peft_lora.json" "$T/dora.json" "$T/dora_old.json" <<'PY' || fail "dora note"
import json, sys
lora, new, old = (json.load(open(p)) for p in sys.argv[1:4])
assert not any("DoRA" in n for n in lora.get("notes", [])), lora
for d, line in ((new, 23), (old, 22)):
    dora = [n for n in d["notes"] if n.startswith("DoRA adapters")]
    assert len(dora) == 1, d["notes"]
    assert "at line %d) are read as plain LoRA, and the estimate is low" % line in dora[0], dora
    assert "magnitude vector" in dora[0] and "--mem SIZE" in dora[0], dora
PY
# Quantized layers (bitsandbytes, HQQ, AWQ) are frozen in any print, with a note; a print
# with nothing else to train is refused.
"$CARMA" estimate --summary "$C/summary_modtree/quantized_bare.txt" --batch 4 --seq-len 256 \
    --json >"$T/q.json" || fail "quantized print"
python3 - "$T/q.json" <<'PY' || fail "quantized json"
import json, sys
d = json.load(open(sys.argv[1]))
q = 2 * (64 * 192 + 64 * 64 + 64 + 64 * 256 + 256 * 64)
assert d["trainable_params"] == d["params"] - q, d
assert len(d["notes"]) == 2 and d["notes"][0].startswith("%d parameters in quantized layers" % q)
assert d["notes"][1].startswith("an output head maps to the 1000 rows of the token table at line 3")
assert d["output_head"] == {"table_line": 3, "rows": 1000, "width": 64, "tied": False}, d
PY
"$CARMA" estimate --summary "$C/summary_modtree/quantized_bare.txt" --batch 4 --seq-len 256 \
    >"$T/q.txt" || fail "quantized print, text"
grep -q "^note: 98432 parameters in quantized layers .*from line 8" "$T/q.txt" ||
    fail "quantized note: $(cat "$T/q.txt")"
printf 'M(\n  (fc1): Linear4bit(in_features=8, out_features=8, bias=False)\n)\n' >"$T/q4.txt"
rc=0
"$CARMA" estimate --summary "$T/q4.txt" --batch 1 >/dev/null 2>"$T/err" || rc=$?
[ "$rc" = 2 ] && grep -q "q4.txt:2: nothing to train: every parameter is in a quantized layer" \
    "$T/err" || fail "all quantized: exit $rc, $(cat "$T/err")"
# A sequence model with a token table, ending with a norm, nothing mapping to the
# vocabulary (OLMo's head is F.linear(x, wte.weight)): the tied head is counted, as if
# printed last, and a note says so.
sed 's/^)$/  (lm_head): Linear(in_features=64, out_features=1000, bias=False)\n)/' \
    "$C/summary_modtree/tied_head_functional.txt" >"$T/head.txt"
for f in "$C/summary_modtree/tied_head_functional.txt" "$T/head.txt"; do
    "$CARMA" estimate --summary "$f" --batch 8 --seq-len 128 --json >"$T/$(basename "$f").json" ||
        fail "$f"
done
# (--tied-head counts the head's weight once, in both, and each note says what it read)
for f in "$C/summary_modtree/tied_head_functional.txt" "$T/head.txt"; do
    "$CARMA" estimate --summary "$f" --batch 8 --seq-len 128 --tied-head --json \
        >"$T/$(basename "$f").tied.json" || fail "$f --tied-head"
done
python3 - "$T/tied_head_functional.txt.json" "$T/head.txt.json" \
    "$T/tied_head_functional.txt.tied.json" "$T/head.txt.tied.json" <<'PY' || fail "tied head json"
import json, sys
a, b, at, bt = (json.load(open(p)) for p in sys.argv[1:5])
assert "token table (line 3)" in a["notes"][0] and "--tied-head counts it once" in a["notes"][0], a["notes"]
assert b["notes"][0].startswith("an output head maps to the 1000 rows of the token table at line 3"), b["notes"]
assert "its weight is the table's (--tied-head)" in at["notes"][0], at["notes"]
assert bt["notes"][0].startswith("the output head shares the weight of the token table at line 3"), bt["notes"]
for d in (a, b, at, bt):
    del d["notes"]
assert a == b, (a, b)
assert at == bt, (at, bt)
assert at["output_head"]["tied"] and not a["output_head"]["tied"]
assert at["params"] == a["params"] - 64 * 1000, (a, at)
assert at["breakdown"]["weights_mib"] < a["breakdown"]["weights_mib"] and at["estimate_mib"] <= a["estimate_mib"], (a, at)
PY
"$CARMA" estimate --summary "$C/summary_modtree/tied_head_functional.txt" --batch 8 \
    --seq-len 128 | grep -q "^note: no layer maps to the 1000 rows of the token table" ||
    fail "tied head note"
# A U-Net decoder block upsamples in Python before joining its skip: the join is at the
# skip's size, the same estimate as the print with the Upsample modules written out. A
# convolution whose input channels nothing explains is read at the newest size, with a note.
cat >"$T/unet.txt" <<'EOF'
UNet(
  (stem): Conv2d(3, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
  (down1): Conv2d(16, 16, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))
  (down2): Conv2d(16, 24, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))
  (blocks): ModuleList(
    (0): DecoderBlock(
      (conv1): Conv2d(40, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
      (relu): ReLU(inplace=True)
    )
    (1): DecoderBlock(
      (conv1): Conv2d(32, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
      (relu): ReLU(inplace=True)
    )
  )
  (head): Conv2d(8, 2, kernel_size=(1, 1), stride=(1, 1))
)
EOF
awk '{print} /^    \([01]\): DecoderBlock\($/ {print "      (up): Upsample(scale_factor=2.0, mode=\x27nearest\x27)"}' \
    "$T/unet.txt" >"$T/unet_up.txt"
[ "$(grep -c Upsample "$T/unet_up.txt")" = 2 ] || fail "unet_up.txt: $(cat "$T/unet_up.txt")"
sed 's/Conv2d(32, 8,/Conv2d(36, 8,/' "$T/unet.txt" >"$T/unet_odd.txt"
for f in unet unet_up unet_odd; do
    "$CARMA" estimate --summary "$T/$f.txt" --batch 16 --image-size 256 --json >"$T/$f.json" ||
        fail "$f"
done
python3 - "$T/unet.json" "$T/unet_up.json" "$T/unet_odd.json" <<'PY' || fail "unet json"
import json, sys
a, b, c = (json.load(open(p)) for p in sys.argv[1:4])
assert "notes" not in a and "notes" not in b, (a.get("notes"), b.get("notes"))
assert a["estimate_mib"] == b["estimate_mib"] and a["bound_mib"] == b["bound_mib"], (a, b)
assert a["layers"] == b["layers"] == 10, (a["layers"], b["layers"])
assert len(c["notes"]) == 1 and c["notes"][0].startswith("line 11 reads 36 channels"), c
assert "at the newest tensor's size, 128x128;" in c["notes"][0], c["notes"]
assert c["estimate_mib"] < a["estimate_mib"]
PY
"$CARMA" estimate --summary "$T/unet_odd.txt" --batch 16 --image-size 256 |
    grep -q "^note: line 11 reads 36 channels, which neither the newest tensor nor" ||
    fail "no join note in the text"
# A detection model's print is refused at its first detection block, saying what to do;
# a pooling class that prints no window (torchvision's FPN extra block) keeps its size.
cat >"$T/frcnn.txt" <<'EOF'
FasterRCNN(
  (transform): GeneralizedRCNNTransform(
      Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
      Resize(min_size=(800,), max_size=1333, mode='bilinear')
  )
  (backbone): BackboneWithFPN(
    (body): Conv2d(3, 16, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))
    (fpn): FeaturePyramidNetwork(
      (extra_blocks): LastLevelMaxPool()
    )
  )
)
EOF
expect2 "frcnn.txt:2: GeneralizedRCNNTransform: a detection model .* submit with 'carma submit --mem SIZE'" \
    --summary "$T/frcnn.txt" --batch 2 --image-size 800
sed -n '1p;6,$p' "$T/frcnn.txt" >"$T/fpn.txt"
"$CARMA" estimate --summary "$T/fpn.txt" --batch 2 --image-size 800 >"$T/out" || fail "fpn"
grep -q "^note: the pooling at line 5 prints no window" "$T/out" || fail "fpn note: $(cat "$T/out")"
# ptflops' per-layer statistics (print_per_layer_stat=True) are read past: the same
# estimate as the plain print. DeepSpeed's whole report is refused, asking for its tree.
cat >"$T/pt.txt" <<'EOF'
Net(
  0.01 M, 100.000% Params, 0.001 GMac, 100.000% MACs, 
  (conv): Conv2d(0.0 M, 4.704% Params, 0.0 GMac, 90.000% MACs, 3, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
  (relu): ReLU(0.0 M, 0.000% Params, 0.0 GMac, 3.000% MACs, inplace=True)
  (pool): AdaptiveAvgPool2d(0.0 M, 0.000% Params, 0.0 GMac, 1.000% MACs, output_size=1)
  (fc): Linear(0.009 M, 95.296% Params, 0.0 GMac, 1.000% MACs, in_features=16, out_features=532, bias=True)
)
EOF
sed -e '2d' -e 's/(0\.0*[0-9]* M, [0-9.]*% Params, [0-9.]* GMac, [0-9.]*% MACs, /(/' "$T/pt.txt" >"$T/plain.txt"
! grep -q "Params" "$T/plain.txt" || fail "plain.txt: $(cat "$T/plain.txt")"
"$CARMA" estimate --summary "$T/pt.txt" --batch 8 --image-size 32 --json >"$T/pt.json" || fail "ptflops"
"$CARMA" estimate --summary "$T/plain.txt" --batch 8 --image-size 32 --json >"$T/plain.json" || fail "plain"
python3 - "$T/pt.json" "$T/plain.json" <<'PY' || fail "ptflops json"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a == b and a["params"] == 3 * 9 * 16 + 16 + 16 * 532 + 532, (a, b)
PY
printf '\n---------------- DeepSpeed Flops Profiler ----------------\nProfile Summary at step 1:\n' >"$T/ds.txt"
expect2 "ds.txt:2: a DeepSpeed flops profiler report: give its module tree alone" \
    --summary "$T/ds.txt" --batch 8
# A mixture-of-experts print (a ModuleList of 8 identical experts beside a router with 8
# scores): without --experts-per-token every token counts through every expert, with a
# note (text and JSON) naming the count and the option; --experts-per-token 2 counts each
# expert on 2/8 of the tokens; k = E is the default's replay; 0, above E, or a print
# without MoE blocks are refused (exit 2), by carma submit too, before carmad is asked.
M="$C/summary_modtree/moe_mixtral.txt"
"$CARMA" estimate --summary "$M" --batch 4 --seq-len 512 --json >"$T/moe.json" || fail "moe print"
"$CARMA" estimate --summary "$M" --batch 4 --seq-len 512 --experts-per-token 2 --json \
    >"$T/moe2.json" || fail "moe print, --experts-per-token 2"
"$CARMA" estimate --summary "$M" --batch 4 --seq-len 512 --experts-per-token 8 --json \
    >"$T/moe8.json" || fail "moe print, --experts-per-token 8"
python3 - "$T/moe.json" "$T/moe2.json" "$T/moe8.json" <<'PY' || fail "moe json"
import json, sys
a, b, e = (json.load(open(p)) for p in sys.argv[1:4])
# (and the note on its output head, which a print cannot show tied or not)
assert len(a["notes"]) == 2 and "output head maps to the 32000 rows" in a["notes"][0], a.get("notes")
n = a["notes"][1]
assert n.startswith("the print has 8 experts per mixture-of-experts block (2 blocks, from "
                    "line 13)") and "--experts-per-token K" in n, n
assert a["moe"] == {"blocks": 2, "experts_min": 8, "experts_max": 8, "line": 13,
                    "experts_per_token_given": False, "experts_per_token": 8}, a["moe"]
assert b["notes"] == a["notes"][:1] and b["moe"]["experts_per_token"] == 2
assert b["moe"]["experts_per_token_given"] is True
assert b["estimate_mib"] < a["estimate_mib"], (a["estimate_mib"], b["estimate_mib"])
for k in ["estimate_mib", "bound_mib", "breakdown", "model"]:
    assert e[k] == a[k], k
PY
"$CARMA" estimate --summary "$M" --batch 4 --seq-len 512 >"$T/moe.txt" || fail "moe print, text"
grep -q "^note: the print has 8 experts per mixture-of-experts block (2 blocks, from line 13); the router's top-k is not printed, so every token is counted through every expert" \
    "$T/moe.txt" || fail "moe note: $(cat "$T/moe.txt")"
"$CARMA" estimate --summary "$M" --batch 4 --seq-len 512 --experts-per-token 2 >"$T/moe2.txt" ||
    fail "moe print, text, k 2"
grep -q "^batch 4, seq-len 512, adamw, fp32, a100-40gb (40960 MiB), 2 experts per token$" \
    "$T/moe2.txt" && ! grep -q "^note: the print has 8 experts" "$T/moe2.txt" ||
    fail "moe k 2 text: $(cat "$T/moe2.txt")"
for k in 0 9 x; do
    rc=0
    "$CARMA" estimate --summary "$M" --batch 4 --seq-len 512 --experts-per-token $k \
        >/dev/null 2>"$T/err$k" || rc=$?
    [ "$rc" = 2 ] || fail "--experts-per-token $k: exit $rc"
done
grep -q "^carma estimate: --experts-per-token must be an integer from 1 to 65536, not '0'$" \
    "$T/err0" || fail "--experts-per-token 0: $(cat "$T/err0")"
grep -q "moe_mixtral.txt: --experts-per-token 9 is more than the 8 experts of each mixture-of-experts block (from line 13)" \
    "$T/err9" || fail "--experts-per-token 9: $(cat "$T/err9")"
rc=0
"$CARMA" estimate --summary "$C/summary_modtree/gpt2.txt" --batch 4 --seq-len 128 \
    --experts-per-token 2 >/dev/null 2>"$T/err" || rc=$?
[ "$rc" = 2 ] && grep -q "gpt2.txt: --experts-per-token 2 routes nothing here: the print has no mixture-of-experts block" \
    "$T/err" || fail "--experts-per-token on gpt2: exit $rc, $(cat "$T/err")"
# carma submit checks it as carma estimate does, before any carmad is asked
for k in 9 2; do
    s="$M"
    [ "$k" = 2 ] && s="$C/summary_modtree/gpt2.txt"
    rc=0
    CARMA_SOCKET="$T/none.sock" "$CARMA" submit --summary "$s" --batch 4 --seq-len 128 \
        --experts-per-token $k -- true >/dev/null 2>"$T/err" || rc=$?
    [ "$rc" = 2 ] || fail "submit --experts-per-token $k: exit $rc, $(cat "$T/err")"
done
grep -q "^carma submit: .*gpt2.txt: --experts-per-token 2 routes nothing here" "$T/err" ||
    fail "submit --experts-per-token on gpt2: $(cat "$T/err")"
rc=0
CARMA_SOCKET="$T/none.sock" "$CARMA" submit --experts-per-token 2 -- true 2>"$T/err" || rc=$?
[ "$rc" = 2 ] && grep -q "experts-per-token needs --summary" "$T/err" ||
    fail "submit --experts-per-token without --summary: exit $rc, $(cat "$T/err")"
# Fused experts print no weights: refused by line.
rc=0
"$CARMA" estimate --summary "$C/summary_modtree/moe_granite_fused.txt" --batch 4 --seq-len 128 \
    >/dev/null 2>"$T/err" || rc=$?
[ "$rc" = 2 ] && grep -q "moe_granite_fused.txt:14: GraniteMoeParallelExperts: fused experts that the print does not size" \
    "$T/err" || fail "fused experts: exit $rc, $(cat "$T/err")"
# A vision tower beside a language model (LLaVA) runs at two lengths: refused as such at
# a real language-model length (its vision table's 17 positions said "the job would
# fail") and at the tower's image size. A tower whose table has exactly the patches
# (SigLIP) has no class token.
tower() { # position-table rows
    cat <<EOF
  (vision_tower): VisionModel(
    (patch_embedding): Conv2d(3, 64, kernel_size=(16, 16), stride=(16, 16))
    (position_embedding): Embedding($1, 64)
    (layers): ModuleList(
      (0-1): 2 x EncoderLayer(
        (self_attn): Attention(
          (k_proj): Linear(in_features=64, out_features=64, bias=True)
          (v_proj): Linear(in_features=64, out_features=64, bias=True)
          (q_proj): Linear(in_features=64, out_features=64, bias=True)
          (out_proj): Linear(in_features=64, out_features=64, bias=True)
        )
      )
    )
  )
EOF
}
{ echo "Llava("; tower 17; cat <<'EOF'
  (projector): Linear(in_features=64, out_features=128, bias=True)
  (language_model): LM(
    (embed_tokens): Embedding(1000, 128)
    (norm): RMSNorm((128,), eps=1e-06)
    (lm_head): Linear(in_features=128, out_features=1000, bias=False)
  )
)
EOF
} >"$T/llava.txt"
expect2 "llava.txt:3: a multimodal model: a vision tower (patch embedding, this line) and a language model (token table, line 18)" \
    --summary "$T/llava.txt" --batch 2 --seq-len 1024
expect2 "carma submit --mem SIZE" --summary "$T/llava.txt" --batch 2 --image-size 64
{ echo "Siglip("; tower 16; echo ")"; } >"$T/siglip.txt"
"$CARMA" estimate --summary "$T/siglip.txt" --batch 2 --image-size 64 >"$T/out" || fail "siglip"
grep -q "seq-len 16 (64x64 in 16x16 patches)," "$T/out" || fail "siglip tokens: $(cat "$T/out")"
# An output head printed without its size (Baichuan's NormHead()) is no norm: the head
# assumed over the token table stands for it, and the note says so, not "tied in forward".
cat >"$T/normhead.txt" <<'EOF'
LM(
  (embed_tokens): Embedding(1000, 128, padding_idx=0)
  (layers): ModuleList(
    (0-1): 2 x DecoderLayer(
      (mlp): MLP(
        (gate_proj): Linear(in_features=128, out_features=344, bias=False)
        (down_proj): Linear(in_features=344, out_features=128, bias=False)
        (up_proj): Linear(in_features=128, out_features=344, bias=False)
        (act_fn): SiLU()
      )
      (input_layernorm): RMSNorm()
    )
  )
  (norm): RMSNorm()
  (lm_head): NormHead()
)
EOF
"$CARMA" estimate --summary "$T/normhead.txt" --batch 2 --seq-len 64 --json >"$T/nh.json" || fail "normhead"
python3 - "$T/nh.json" <<'PY' || fail "normhead json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["params"] == 1000 * 128 + 2 * (3 * 128 * 344 + 128) + 128 + 128 * 1000, d["params"]
assert d["notes"] == ["the output head at line 15 prints no size (a class of its own): read as a linear layer from 128 features to the 1000 rows of the token table (line 2), with its weight, its logits and their loss"], d["notes"]
PY
# A state-space mixer's selective scan is in no summary: measure and submit with --mem.
printf 'M(\n  (e): Embedding(100, 8)\n  (conv1d): Conv1d(16, 16, kernel_size=(4,), stride=(1,), padding=(3,), groups=16)\n)\n' >"$T/ssm.txt"
expect2 "ssm.txt:3: Conv1d: a causal depthwise convolution, part of a state-space or recurrent mixer .* 'carma submit --mem SIZE'" \
    --summary "$T/ssm.txt" --batch 2 --seq-len 64
echo "estimate_cli: ok"
