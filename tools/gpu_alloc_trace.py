"""Where a CNN's reserved GPU memory goes beyond what its tensors take (docs/estimator.md,
"ConvNeXt-T's reserve"): three AdamW steps of torchvision's convnext_tiny (fp32, 224,
batch BATCH) under the caching allocator's history, with cuDNN on and then off. Prints
the peaks of reserved and allocated memory of each, and every allocation or new segment
of at least 256 MiB with the frames that asked for it; saves each snapshot. If segments
from a convolution's backward (cuDNN frames) make the difference, and the run without
cuDNN reserves about what carma's replay does, the workspace is the cause and its size
per convolution can be read off the snapshot.

Usage: python3 tools/gpu_alloc_trace.py OUTDIR [BATCH]   (needs torch, torchvision, a GPU)
"""
import os
import pickle
import sys

import torch
import torch.nn.functional as F
import torchvision


def run(out, batch, cudnn):
    torch.backends.cudnn.enabled = cudnn
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.memory._record_memory_history(max_entries=200000)
    model = torchvision.models.convnext_tiny(weights=None).cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for _ in range(3):
        x = torch.randn(batch, 3, 224, 224, device="cuda")
        y = torch.randint(0, 1000, (batch,), device="cuda")
        F.cross_entropy(model(x), y).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    tag = "cudnn" if cudnn else "nocudnn"
    with open(os.path.join(out, f"snapshot_{tag}.pickle"), "wb") as f:
        pickle.dump(snap, f)
    print(f"{tag}: batch {batch}, reserved {torch.cuda.max_memory_reserved() / 2**20:.0f} MiB, "
          f"allocated {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB")
    big = [e for t in snap["device_traces"] for e in t
           if e["action"] in ("segment_alloc", "alloc") and e["size"] >= 256 << 20]
    for e in big[:60]:
        frames = [f"{f['filename'].split('/')[-1]}:{f['line']}:{f['name']}"
                  for f in e.get("frames", [])[:6]]
        print(f"  {e['action']} {e['size'] / 2**20:.0f} MiB | " + " | ".join(frames))
    del model, opt


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    out = sys.argv[1]
    batch = int(sys.argv[2]) if len(sys.argv) == 3 else 64
    os.makedirs(out, exist_ok=True)
    for cudnn in (True, False):
        run(out, batch, cudnn)


if __name__ == "__main__":
    main()
