#!/bin/sh
# The checks that need a real GPU, in one run (DESIGN.md §8): carma's NVML backend
# against the driver, the estimator against measured training peaks, carmad
# scheduling real PyTorch jobs, and collocation slowdowns with time-slicing and MPS.
# Changes no GPU setting; stops the MPS daemon and the carmad it starts.
#
#   [PHASES="probe peaks coloc carmad learn xid mps"] tools/gpu_check.sh OUTDIR [BIN]
#
# BIN holds carma, carmad, carma-shepherd and gpu_probe (tests/manual/gpu_probe.c) (default
# build/gpu/bin); BIN/../lib may hold the shared libraries they were linked with:
# those the machine lacks are used from there. Needs python3 with torch, torchvision, timm,
# transformers, peft, cupy and nvidia-ml-py. Writes OUTDIR/check.log and one archive per
# phase run. PHASES picks them (default "probe peaks coloc carmad"), in this order:
#   probe   gpu_probe nvml idle: what the backend reads, whether Xid events register, the
#           islands it finds beside nvidia-smi topo -m
#   peaks   tools/gpu_peaks.py (the runs named in PEAKS_RUNS, default all): peaks.tar.gz
#   coloc   tools/gpu_coloc.py, collocation slowdowns: coloc.tar.gz
#   carmad  carmad on NVML with real training jobs, then again from history: carmad.tar.gz
#   learn   carmad learning the co-location correction (docs/monitoring.md, Co-runs) from
#           real co-runs under time-slicing: a light job (r18c) profiled alone, then four
#           of its signature submitted together; the observations carmad logged and
#           carma gpus's learnt line: learn.tar.gz
#   xid     a job faulting on the GPU (tools/gpu_jobs.py fault): the application's Xid
#           as carmad and gpu_probe see it, then a job on the same GPU: xid.tar.gz
#   mps     the MPS control daemon (default pipe folder) and carmad with [sharing]
#           default = mps: the raw NVML process lists, the MPS server neither a job nor
#           foreign, jobs' memory under MPS, a job over its MPS memory limit, then a
#           whole-GPU job beside the idle server: mps.tar.gz
#   mpsfault  two processes under MPS, one faulting: what its co-runner sees (its error,
#           the Xid, the pid the kernel names, the server afterwards), the culprit started
#           second, then first; then the same pair as carmad's jobs (both gpu_error, each
#           rerun alone: the culprit failed, the co-runner succeeded): mpsfault.tar.gz,
#           mpsfault-carmad.tar.gz
#   alloc   tools/gpu_alloc_trace.py: ConvNeXt-T's allocations over three steps, cuDNN
#           on and off, the large segments with their frames: alloc.tar.gz
# Phase time limits in seconds: PEAKS_S (240), CARMAD_S (90), COLOC_S (240), XID_S (60),
# MPS_S (100), ALLOC_S (120), LEARN_S (200); GPU_PEAKS_BUDGET_GIB for tools/gpu_peaks.py.
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
PHASES=${PHASES:-probe peaks coloc carmad}
MPS_PIPE=$W/coloc/mps-pipe
mkdir -p "$OUT" "$W/peaks" "$W/coloc"
exec >"$OUT/check.log" 2>&1
run() { LD_LIBRARY_PATH=$LIB "$@"; }
carma() { LD_LIBRARY_PATH=$LIB "$BIN/carma" "$@"; }
phase() { echo; echo "== $* ($(date +%T))"; }
want() { case " $PHASES " in *" $1 "*) return 0 ;; esac; return 1; }
MPS_DEFAULT=
stop_mps() {
    [ -S "$MPS_PIPE/control" ] &&
        echo quit | CUDA_MPS_PIPE_DIRECTORY=$MPS_PIPE nvidia-cuda-mps-control
    [ -n "$MPS_DEFAULT" ] && echo quit | nvidia-cuda-mps-control
    MPS_DEFAULT=
}
# start_carmad NAME [INI LINES...]: a carmad of its own in $W/NAME (as root, jobs allowed to
# root), its socket in CARMA_SOCKET; end_carmad stops it and archives the folder.
start_carmad() {
    S=$W/$1
    shift
    mkdir -p "$S"
    printf '[daemon]\nallow_root_jobs = true\nmonitor_interval = 1\n' >"$S/carmad.ini"
    for l in "$@"; do printf '%s\n' "$l" >>"$S/carmad.ini"; done
    export CARMA_SOCKET=$S/sock
    LD_LIBRARY_PATH=$LIB "$BIN/carmad" --foreground --state "$S/state" --socket "$S/sock" \
        --config "$S/carmad.ini" --gpus nvml --http 127.0.0.1:9400 2>"$S/carmad.log" &
    DP=$!
    i=0
    while ! carma gpus >/dev/null 2>&1 && [ $i -lt 50 ]; do sleep 0.2; i=$((i + 1)); done
}
end_carmad() {
    kill "$DP"
    wait "$DP"
    DP=
    tail -n 60 "$S/carmad.log"
    tar -czf "$OUT/$(basename "$S").tar.gz" --exclude sock -C "$W" "$(basename "$S")"
}
gpu_fields() {
    carma gpus --json | "$PY" -c 'import json, sys
for g in json.load(sys.stdin)["gpus"]:
    print("gpu", g["index"], {k: g.get(k) for k in ("sharing", "mem_used_mib", "committed_mib",
          "foreign_processes", "jobs", "drained", "drain_reason", "xid_errors", "last_xid")})'
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
echo "phases: $PHASES"

if want probe; then
    phase "gpu_probe nvml, idle"
    run timeout 20 "$BIN/gpu_probe" nvml --watch 2
    # the islands carma reads (island=N per GPU, "in K islands") against the driver's matrix
    echo "-- nvidia-smi topo -m (NV#: NVLink; PIX/PXB: PCIe switches, one island; PHB/NODE/SYS: not)"
    nvidia-smi topo -m || echo "nvidia-smi topo -m failed"
fi

if want peaks; then
    phase "memory peaks (tools/gpu_peaks.py)"
    ( sleep 25; echo "-- gpu_probe while runs are on the GPU"
      run timeout 10 "$BIN/gpu_probe" nvml
      nvidia-smi --query-compute-apps=pid,used_memory --format=csv ) &
    # shellcheck disable=SC2086 # PEAKS_RUNS is a list of names
    timeout "${PEAKS_S:-240}" "$PY" tools/gpu_peaks.py "$W/peaks" ${PEAKS_RUNS:-}
    wait
    cat "$W/peaks/index.csv"
    tar -czf "$OUT/peaks.tar.gz" -C "$W" peaks
fi

if want coloc; then
    phase "collocation (tools/gpu_coloc.py)"
    timeout "${COLOC_S:-240}" "$PY" tools/gpu_coloc.py "$W/coloc" --probe "$BIN/gpu_probe"
    stop_mps
    tar -czf "$OUT/coloc.tar.gz" --exclude coloc/mps-pipe -C "$W" coloc
fi

if want carmad; then
    phase "carmad on NVML with real jobs"
    start_carmad carmad
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
    end_carmad
fi

if want learn; then
    phase "carmad learning the co-location correction from real co-runs (time-slicing)"
    start_carmad learn '[sched]' 'grace = 5' '[monitor]' 'window = 8'
    # one argv for all five: one signature, whose profile the first run leaves
    timeout "${LEARN_S:-200}" sh -c '
      set -u
      c() { LD_LIBRARY_PATH='"'$LIB'"' '"'$BIN/carma'"' "$@"; }
      r18c() { c submit --name r18c --mem 3G -- '"'$PY'"' tools/gpu_coloc.py --train r18c 40; }
      a=$(r18c); c wait --timeout 90 $a; c show $a
      js="$(r18c) $(r18c) $(r18c) $(r18c)"
      echo "jobs $js"
      for t in 1 2 3 4 5; do sleep 15; echo "-- t=$t"; c ls; c gpus; done
      c wait --timeout 120 $js
    '
    grep "ran at SMACT" "$S/carmad.log"
    carma gpus
    end_carmad
fi

if want xid; then
    phase "an application's Xid: a job faulting on the GPU, as carmad sees it"
    start_carmad xid
    gpu_fields
    run timeout 40 "$BIN/gpu_probe" nvml --watch 20 >"$S/probe.txt" 2>&1 &
    PP=$!
    a=$(carma submit --name fault --mem 2G -- "$PY" tools/gpu_jobs.py fault 5)
    sleep 3
    carma ls
    carma wait --timeout "${XID_S:-60}" "$a"
    carma show "$a"
    gpu_fields
    b=$(carma submit --name after --mem 2G -- "$PY" tools/gpu_jobs.py hold 1024 2)
    carma wait --timeout 30 "$b"
    carma show "$b"
    wait "$PP"
    grep -E "^(backend|xid)" "$S/probe.txt"
    dmesg 2>/dev/null | grep -i xid | tail -n 5
    end_carmad
fi

if want mps; then
    phase "MPS: carmad sharing the GPU by MPS"
    if nvidia-cuda-mps-control -d; then
        MPS_DEFAULT=1
        start_carmad mps '[sched]' 'grace = 5' '[monitor]' 'window = 8' '[sharing]' 'default = mps'
        gpu_fields
        timeout 60 "$PY" tools/gpu_jobs.py lists 40 >"$S/lists.txt" 2>&1 &
        LP=$!
        a=$(carma submit --name r50 --mem 10G -- "$PY" tools/gpu_coloc.py --train r50 25)
        b=$(carma submit --name hold --mem 2G -- "$PY" tools/gpu_jobs.py hold 1024 20)
        d=$(carma submit --name over --mem 2G -- "$PY" tools/gpu_jobs.py hold 4096 5)
        echo "jobs $a $b $d"
        for t in 1 2 3 4; do
            sleep 8
            echo "-- t=$t: carma ls, nvidia-smi, the MPS servers, carmad's GPU view"
            carma ls
            nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv
            echo get_server_list | nvidia-cuda-mps-control
            ps -o pid,ppid,uid,euid,comm -C nvidia-cuda-mps-server,nvidia-cuda-mps-control
            gpu_fields
            [ $t = 2 ] && run timeout 10 "$BIN/gpu_probe" nvml | grep -v "^watch"
        done
        carma wait --timeout "${MPS_S:-100}" "$a" "$b" "$d"
        for j in "$a" "$b" "$d"; do carma show "$j"; done
        echo "-- the last client gone: the server stays, idle"
        ps -o pid,ppid,uid,euid,comm -C nvidia-cuda-mps-server,nvidia-cuda-mps-control
        gpu_fields
        e=$(carma submit --name whole -- "$PY" tools/gpu_jobs.py hold 1024 2)
        carma wait --timeout 40 "$e"
        carma show "$e"
        wait "$LP"
        cat "$S/lists.txt"
        end_carmad
        stop_mps
    else
        echo "nvidia-cuda-mps-control -d failed: MPS phase skipped"
    fi
fi

if want mpsfault; then
    phase "MPS: one client's fault, as its co-runner sees it"
    if nvidia-cuda-mps-control -d; then
        MPS_DEFAULT=1
        S=$W/mpsfault
        mkdir -p "$S"
        run timeout 60 "$BIN/gpu_probe" nvml --watch 40 >"$S/probe.txt" 2>&1 &
        PP=$!
        # pair FIRST SECOND: FIRST, then SECOND 2 s later, as two clients of the server (the
        # fault comes 6 s after the faulting one started, 12 s when it starts first, the
        # spinner's imports done by then; the spinner spins 25 s)
        pair() {
            for w in "$1" "$2"; do
                [ $w = spin ] && a=25 || a=6
                [ $w = fault ] && [ $w = "$1" ] && a=12
                "$PY" tools/gpu_jobs.py $w $a >"$S/$w.out" 2>"$S/$w.err" &
                eval "${w}_pid=$!"
                [ $w = "$1" ] && sleep 2
            done
            echo "$1 started first; spin pid $spin_pid, fault pid $fault_pid"
            wait "$fault_pid"
            echo "fault: exit $?"
            wait "$spin_pid"
            echo "spin: exit $?"
            for f in spin.out spin.err fault.out fault.err; do echo "-- $f"; tail -n 6 "$S/$f"; done
            sleep 1
            dmesg 2>/dev/null | grep -i -E "xid|mps" | tail -n 4
        }
        pair spin fault
        pair fault spin
        wait "$PP"
        grep -E "^(backend|xid)" "$S/probe.txt"
        echo get_server_list | nvidia-cuda-mps-control
        ps -o pid,ppid,uid,comm -C nvidia-cuda-mps-server,nvidia-cuda-mps-control
        echo "-- the same under carmad (or-rr collocates at once): both end gpu_error and run"
        echo "   again alone, where the culprit fails and its co-runner succeeds"
        tar -czf "$OUT/mpsfault.tar.gz" -C "$W" mpsfault
        start_carmad mpsfault-carmad '[daemon]' 'policy = or-rr' '[sched]' 'grace = 0' \
            '[sharing]' 'default = mps'
        a=$(carma submit --name spin --mem 4G -- "$PY" tools/gpu_jobs.py spin 25)
        sleep 2
        b=$(carma submit --name fault --mem 4G -- "$PY" tools/gpu_jobs.py fault 8)
        sleep 14
        carma ls
        carma show "$a" | grep waiting
        carma show "$b" | grep waiting
        carma wait --timeout 90 "$a" "$b"
        carma show "$b"
        carma show "$a"
        grep -E "kernel|Xid" "$S/carmad.log"
        end_carmad
        stop_mps
    else
        echo "nvidia-cuda-mps-control -d failed: MPS fault phase skipped"
    fi
fi

if want alloc; then
    phase "allocations of a CNN's training steps (tools/gpu_alloc_trace.py)"
    timeout "${ALLOC_S:-120}" "$PY" tools/gpu_alloc_trace.py "$W/alloc" 64
    tar -czf "$OUT/alloc.tar.gz" -C "$W" alloc
fi

phase done
