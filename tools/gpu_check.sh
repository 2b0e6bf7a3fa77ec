#!/bin/sh
# The checks that need a real GPU, in one run (DESIGN.md §8): carma's NVML backend
# against the driver, the estimator against measured training peaks, carmad
# scheduling real PyTorch jobs, and collocation slowdowns with time-slicing and MPS.
# Changes no GPU setting; stops the MPS daemon it starts.
#
#   tools/gpu_check.sh OUTDIR [BIN]
#
# BIN holds carma, carmad, carma-shepherd and gpu_probe (tests/manual/gpu_probe.c) (default
# build/gpu/bin); BIN/../lib may hold the shared libraries they were linked with:
# those the machine lacks are used from there. Needs python3 with torch, torchvision, timm,
# transformers, peft and nvidia-ml-py. Writes OUTDIR/check.log and one archive per phase:
# peaks.tar.gz (tools/gpu_peaks.py: prints and index.csv), carmad.tar.gz (the
# daemon's log and store), coloc.tar.gz (tools/gpu_coloc.py: coloc.csv and the
# probe's samples). Phase time limits in seconds: PEAKS_S (240), CARMAD_S (90),
# COLOC_S (240).
set -u
OUT=${1:?usage: gpu_check.sh OUTDIR [BIN]}
BIN=$(cd "${2:-build/gpu/bin}" && pwd)
W=$(mktemp -d /tmp/gpu-check.XXXXXX)
LIB=$W/lib
mkdir -p "$LIB"
for f in "$BIN"/../lib/*.so*; do
    [ -e "$f" ] || continue
    n=$(basename "$f")
    ldconfig -p | grep -q "^[[:space:]]*$n " || ln -s "$f" "$LIB/$n"
done
PY=$(command -v python3)
MPS_PIPE=$W/coloc/mps-pipe
mkdir -p "$OUT" "$W/peaks" "$W/coloc" "$W/carmad"
exec >"$OUT/check.log" 2>&1
run() { LD_LIBRARY_PATH=$LIB "$@"; }
carma() { LD_LIBRARY_PATH=$LIB "$BIN/carma" "$@"; }
phase() { echo; echo "== $* ($(date +%T))"; }
stop_mps() {
    [ -S "$MPS_PIPE/control" ] &&
        echo quit | CUDA_MPS_PIPE_DIRECTORY=$MPS_PIPE nvidia-cuda-mps-control
}
trap 'stop_mps; [ -n "${DP:-}" ] && kill "$DP" 2>/dev/null' EXIT

phase environment
uname -a
nvidia-smi
nvidia-smi --query-gpu=name,uuid,driver_version,memory.used,memory.total,power.draw,\
utilization.gpu,compute_mode,mig.mode.current --format=csv
"$PY" -c 'import torch, torchvision, timm, transformers, peft
print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn",
      torch.backends.cudnn.version(), "torchvision", torchvision.__version__,
      "timm", timm.__version__,
      "transformers", transformers.__version__, "peft", peft.__version__)'
command -v nvidia-cuda-mps-control || echo "no nvidia-cuda-mps-control"
echo "libraries taken from $BIN/../lib: $(ls "$LIB")"
LD_LIBRARY_PATH=$LIB ldd "$BIN/carmad" | grep "not found"
phase "gpu_probe nvml, idle"
run timeout 20 "$BIN/gpu_probe" nvml --watch 2

phase "memory peaks (tools/gpu_peaks.py)"
( sleep 25; echo "-- gpu_probe while runs are on the GPU"
  run timeout 10 "$BIN/gpu_probe" nvml
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv ) &
timeout "${PEAKS_S:-240}" "$PY" tools/gpu_peaks.py "$W/peaks"
wait
cat "$W/peaks/index.csv"
tar -czf "$OUT/peaks.tar.gz" -C "$W" peaks

phase "collocation (tools/gpu_coloc.py)"
timeout "${COLOC_S:-240}" "$PY" tools/gpu_coloc.py "$W/coloc" --probe "$BIN/gpu_probe"
stop_mps
tar -czf "$OUT/coloc.tar.gz" --exclude coloc/mps-pipe -C "$W" coloc
phase "carmad on NVML with real jobs"
S=$W/carmad
printf '[daemon]\nallow_root_jobs = true\nmonitor_interval = 1\n' >"$S/carmad.ini"
export CARMA_SOCKET=$S/sock
LD_LIBRARY_PATH=$LIB "$BIN/carmad" --foreground --state "$S/state" --socket "$S/sock" --config "$S/carmad.ini" \
    --gpus nvml --http 127.0.0.1:9400 2>"$S/carmad.log" &
DP=$!
i=0
while ! carma gpus >/dev/null 2>&1 && [ $i -lt 50 ]; do sleep 0.2; i=$((i + 1)); done
carma gpus
carma gpus --json
P=$W/peaks
timeout "${CARMAD_S:-90}" sh -c '
  set -u
  c() { LD_LIBRARY_PATH='"'$LIB'"' '"'$BIN/carma'"' "$@"; }
  a=$(c submit --name r50 --summary '"$P"'/resnet50_b64.txt --batch 64 --image-size 224 \
      -- '"$PY"' tools/gpu_coloc.py --train r50 12 ||
      c submit --name r50 --mem 16G -- '"$PY"' tools/gpu_coloc.py --train r50 12)
  b=$(c submit --name bert --summary '"$P"'/bert_base_mlm_b16_s128.txt --batch 32 \
      --seq-len 128 --attention sdpa -- '"$PY"' tools/gpu_coloc.py --train bert 12 ||
      c submit --name bert --mem 16G -- '"$PY"' tools/gpu_coloc.py --train bert 12)
  d=$(c submit --name r18c --mem 3G -- '"$PY"' tools/gpu_coloc.py --train r18c 12)
  echo "jobs $a $b $d"
  sleep 14
  c ls; c gpus
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv
  '"$PY"' -c "import urllib.request as u
print(u.urlopen(\"http://127.0.0.1:9400/metrics\").read().decode())" | grep -v "^#" | head -60
  c wait --timeout 60 $a $b $d
  for j in $a $b $d; do c show $j; done
  e=$(c submit --name r50-again --summary '"$P"'/resnet50_b64.txt --batch 64 \
      --image-size 224 -- '"$PY"' tools/gpu_coloc.py --train r50 12 ||
      c submit --name r50-again --mem 16G -- '"$PY"' tools/gpu_coloc.py --train r50 12)
  c wait --timeout 40 $e; c show $e; c ls
'
kill "$DP"; wait "$DP"; DP=
tail -n 60 "$S/carmad.log"
tar -czf "$OUT/carmad.tar.gz" --exclude carmad/sock -C "$W" carmad

phase done
