#!/usr/bin/env python3
"""Small GPU jobs for tools/gpu_check.sh's checks of carmad on a real driver.

  gpu_jobs.py hold MIB SECONDS   allocate MIB MiB through PyTorch, hold them SECONDS, exit 0
                                 (where an MPS memory limit is below MIB: PyTorch's CUDA
                                 out-of-memory error, exit 1)
  gpu_jobs.py fault SECONDS      hold 1 GiB for SECONDS, then write through an unmapped GPU
                                 address (CuPy kernel): the driver reports an MMU fault
                                 (an application's Xid, 31 on current drivers) and the
                                 process ends with cudaErrorIllegalAddress (exit 1)
  gpu_jobs.py spin SECONDS       hold 1 GiB and run small kernels for SECONDS, exit 0; a
                                 CUDA error (another MPS client's fault) is printed, exit 1
  gpu_jobs.py lists SECONDS      every 2 s for SECONDS: GPU 0's compute and MPS clients'
                                 process lists as NVML answers them (pid, MiB, command name)

Nothing here changes a GPU setting."""
import sys
import time


def hold(mib, secs):
    import torch
    x = torch.empty(int(mib) << 20, dtype=torch.uint8, device="cuda")
    x.fill_(1)
    torch.cuda.synchronize()
    print(f"holding {mib} MiB", flush=True)
    time.sleep(float(secs))


def fault(secs):
    import cupy as cp
    x = cp.ones(1 << 28, dtype=cp.float32)  # 1 GiB: carmad sees the process first
    cp.cuda.runtime.deviceSynchronize()
    print(f"holding {x.nbytes >> 20} MiB, faulting in {secs} s", flush=True)
    time.sleep(float(secs))
    k = cp.RawKernel(r'''extern "C" __global__ void poke(unsigned long long a)
                         { *(volatile int *)a = 1; }''', "poke")
    k((1,), (1,), (cp.uint64(8),))
    cp.cuda.runtime.deviceSynchronize()  # raises cudaErrorIllegalAddress
    print("no fault happened", flush=True)
    sys.exit(3)


def spin(secs):
    import torch
    x = torch.ones(1 << 28, device="cuda")
    end = time.time() + float(secs)
    n = 0
    while time.time() < end:
        x.mul_(1.0000001)
        torch.cuda.synchronize()
        n += 1
    print(f"spun {n} kernels", flush=True)


def lists(secs):
    import pynvml as nv
    nv.nvmlInit()
    h = nv.nvmlDeviceGetHandleByIndex(0)

    def name(pid):
        try:
            with open(f"/proc/{pid}/comm") as f:
                return f.read().strip()
        except OSError:
            return "?"

    def show(fn):
        try:
            return " ".join(f"{p.pid}:{(p.usedGpuMemory or 0) >> 20}MiB:{name(p.pid)}"
                            for p in fn(h)) or "(empty)"
        except nv.NVMLError as e:
            return f"({e})"
    end = time.time() + float(secs)
    while time.time() < end:
        print(f"t={time.strftime('%T')} compute: {show(nv.nvmlDeviceGetComputeRunningProcesses)}"
              f" | mps: {show(nv.nvmlDeviceGetMPSComputeRunningProcesses)}", flush=True)
        time.sleep(2)


if __name__ == "__main__":
    a = sys.argv[1:]
    if len(a) == 3 and a[0] == "hold":
        hold(a[1], a[2])
    elif len(a) == 2 and a[0] == "fault":
        fault(a[1])
    elif len(a) == 2 and a[0] == "spin":
        spin(a[1])
    elif len(a) == 2 and a[0] == "lists":
        lists(a[1])
    else:
        raise SystemExit(__doc__)
