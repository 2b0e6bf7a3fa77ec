#!/usr/bin/env python3
"""Collocates real PyTorch training jobs on one GPU, with time-slicing (the default)
and with MPS, and measures each job's training speed against its speed alone, to
compare with the simulator's collocation model (docs/model.md, src/core/coloc.c).

Jobs (random inputs, AdamW, fp32):
  r18c  torchvision ResNet-18, 10 classes, 32x32 images, batch 128 (a light job)
  r50   torchvision ResNet-50, 224x224 images, batch 64 (a heavy job)
  bert  Hugging Face BertForMaskedLM (bert-base configuration), sequence 128, batch 32

Every job of an experiment warms up (5 steps), then all start together and train for
SECONDS; a job's rate is its steps per second over that window. While they run,
gpu_probe (tests/manual/gpu_probe.c, carma's own NVML backend) samples the GPU once a
second: the mean SM activity (SMACT from NVML GPM on Hopper), occupancy, DRAM
activity and power of the experiment. MPS experiments start the MPS control daemon
(nvidia-cuda-mps-control -d, its pipe and log folders under OUTDIR) and stop it
after them (echo quit); nothing else about the GPU is changed.

Writes OUTDIR/coloc.csv (experiment, sharing, jobs, job, rate, solo_rate, slowdown,
smact, smocc, drama, power_w) and prints it.

Usage: gpu_coloc.py OUTDIR [--probe PATH] [--seconds N] [--only EXP,...]
       gpu_coloc.py --job W DIR TAG      (one job, started by the above)
       gpu_coloc.py --train W SECONDS    (one job on its own: warm up, train, exit)"""
import csv
import json
import os
import shutil
import subprocess
import sys
import time

EXPERIMENTS = [  # name, sharing, jobs
    ("solo-r18c", "timeslice", ["r18c"]),
    ("solo-r50", "timeslice", ["r50"]),
    ("solo-bert", "timeslice", ["bert"]),
    ("r18c-x4", "timeslice", ["r18c"] * 4),
    ("r50-x2", "timeslice", ["r50"] * 2),
    ("r18c+r50", "timeslice", ["r18c", "r50"]),
    ("bert+r50", "timeslice", ["bert", "r50"]),
    ("mps-solo-r50", "mps", ["r50"]),
    ("mps-r18c-x4", "mps", ["r18c"] * 4),
    ("mps-r50-x2", "mps", ["r50"] * 2),
    ("mps-r18c+r50", "mps", ["r18c", "r50"]),
    ("mps-bert+r50", "mps", ["bert", "r50"]),
]
FIELDS = ["experiment", "sharing", "jobs", "job", "rate", "solo_rate", "slowdown", "smact",
          "smocc", "drama", "power_w"]


def job(w, d, tag, train_secs=None):
    import torch
    if w == "bert":
        import transformers as tf
        try:
            cfg = tf.BertConfig(attn_implementation="sdpa")
        except (TypeError, ValueError):  # older configs take no attn_implementation
            cfg = tf.BertConfig()
        model = tf.BertForMaskedLM(cfg).cuda()
        ids = torch.randint(0, 30522, (32, 128), device="cuda")

        def loss_fn():
            return model(input_ids=ids, labels=ids).loss
    else:
        import torchvision
        if w == "r18c":
            model = torchvision.models.resnet18(weights=None, num_classes=10).cuda()
            x = torch.randn(128, 3, 32, 32, device="cuda")
            y = torch.randint(0, 10, (128,), device="cuda")
        else:
            model = torchvision.models.resnet50(weights=None).cuda()
            x = torch.randn(64, 3, 224, 224, device="cuda")
            y = torch.randint(0, 1000, (64,), device="cuda")

        def loss_fn():
            return torch.nn.functional.cross_entropy(model(x), y)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step():
        loss_fn().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    if train_secs is not None:  # a job of its own (carmad's check): no start signal
        t0, secs = time.time(), train_secs
    else:
        open(os.path.join(d, tag + ".ready"), "w").close()
        go = os.path.join(d, "go")
        while not os.path.exists(go):
            time.sleep(0.005)
        with open(go) as f:
            t0, secs = (float(v) for v in f.read().split())
        while time.time() < t0:
            time.sleep(0.001)
    n, last = 0, t0
    while True:
        step()
        torch.cuda.synchronize()
        now = time.time()
        if now > t0 + secs:
            break
        n, last = n + 1, now
    with open(os.path.join(d, tag + ".json"), "w") as f:
        json.dump({"job": w, "steps": n, "seconds": last - t0,
                   "rate": n / (last - t0) if n else 0}, f)


def run_experiment(out, name, jobs, secs, probe, env):
    d = os.path.join(out, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    procs = [subprocess.Popen([sys.executable, __file__, "--job", w, d, f"{i}-{w}"], env=env)
             for i, w in enumerate(jobs)]
    deadline = time.time() + 120
    while not all(os.path.exists(os.path.join(d, f"{i}-{w}.ready"))
                  for i, w in enumerate(jobs)):
        if time.time() > deadline or any(p.poll() not in (None, 0) for p in procs):
            for p in procs:
                p.kill()
            return None, f"jobs did not get ready: {[p.poll() for p in procs]}"
        time.sleep(0.05)
    t0 = time.time() + 0.3
    with open(os.path.join(d, "go.tmp"), "w") as f:
        f.write(f"{t0} {secs}")
    os.rename(os.path.join(d, "go.tmp"), os.path.join(d, "go"))
    sig = {}
    if probe:
        time.sleep(0.3)
        pr = subprocess.run([probe, "nvml", "--watch", str(max(1, int(secs) - 1))],
                            capture_output=True, text=True)
        with open(os.path.join(d, "probe.txt"), "w") as f:
            f.write(pr.stdout + pr.stderr)
        for line in pr.stdout.splitlines():
            if line.startswith("mean gpu=0"):
                for tok in line.split()[2:]:
                    k, _, v = tok.partition("=")
                    try:
                        sig[k] = float(v)
                    except ValueError:
                        pass
    for p in procs:
        p.wait()
    res = []
    for i, w in enumerate(jobs):
        try:
            with open(os.path.join(d, f"{i}-{w}.json")) as f:
                res.append(json.load(f))
        except OSError:
            res.append({"job": w, "rate": 0, "steps": 0})
    return (res, sig), None


def main(argv):
    if argv and argv[0] == "--job":
        return job(*argv[1:4])
    if argv and argv[0] == "--train":
        d = os.environ.get("TMPDIR", "/tmp")
        return job(argv[1], d, f"train-{os.getpid()}", float(argv[2]))
    if not argv:
        raise SystemExit(__doc__)
    out, probe, secs, only = argv[0], None, 6.0, None
    i = 1
    while i < len(argv):
        if argv[i] == "--probe":
            probe, i = argv[i + 1], i + 2
        elif argv[i] == "--seconds":
            secs, i = float(argv[i + 1]), i + 2
        elif argv[i] == "--only":
            only, i = argv[i + 1].split(","), i + 2
        else:
            raise SystemExit(f"gpu_coloc: unknown argument {argv[i]}")
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ)
    mps_env = dict(env, CUDA_MPS_PIPE_DIRECTORY=os.path.join(out, "mps-pipe"),
                   CUDA_MPS_LOG_DIRECTORY=os.path.join(out, "mps-log"))
    mps_on = False
    solo = {}
    rows = []
    try:
        for name, sharing, jobs in EXPERIMENTS:
            if only and name not in only:
                continue
            if sharing == "mps" and not mps_on:
                ctl = shutil.which("nvidia-cuda-mps-control")
                if not ctl:
                    print("gpu_coloc: no nvidia-cuda-mps-control: MPS experiments skipped")
                    break
                os.makedirs(mps_env["CUDA_MPS_PIPE_DIRECTORY"], exist_ok=True)
                os.makedirs(mps_env["CUDA_MPS_LOG_DIRECTORY"], exist_ok=True)
                r = subprocess.run([ctl, "-d"], env=mps_env)
                if r.returncode:
                    print(f"gpu_coloc: nvidia-cuda-mps-control -d failed ({r.returncode})")
                    break
                mps_on = True
            t = time.time()
            got, err = run_experiment(out, name, jobs, secs, probe,
                                      mps_env if sharing == "mps" else env)
            if err:
                print(f"{name}: {err}", flush=True)
                continue
            res, sig = got
            if len(jobs) == 1 and sharing == "timeslice":
                solo[jobs[0]] = res[0]["rate"]
            for r in res:
                s = solo.get(r["job"])
                rows.append(dict(experiment=name, sharing=sharing, jobs="+".join(jobs),
                                 job=r["job"], rate=round(r["rate"], 3),
                                 solo_rate=round(s, 3) if s else "",
                                 slowdown=round(s / r["rate"], 3) if s and r["rate"] else "",
                                 smact=sig.get("smact", ""), smocc=sig.get("smocc", ""),
                                 drama=sig.get("drama", ""), power_w=sig.get("power", "")))
            print(f"{name}: {time.time() - t:.0f} s, rates "
                  f"{[round(r['rate'], 2) for r in res]}, smact {sig.get('smact')}",
                  flush=True)
    finally:
        if mps_on:
            subprocess.run(["nvidia-cuda-mps-control"], input="quit\n", text=True,
                           env=mps_env)
    with open(os.path.join(out, "coloc.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, FIELDS)
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(out, "coloc.csv")) as f:
        sys.stdout.write(f.read())


if __name__ == "__main__":
    main(sys.argv[1:])
