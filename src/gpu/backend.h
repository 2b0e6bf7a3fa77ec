/* GPU backends: a small table of function pointers (like nvtop's vendor backends).
 * A backend reports facts (names, memory, activity, processes); it makes no
 * decisions. Implementations: NVML (dlopen), DCGM profiling fields (dlopen), and a
 * simulated backend for machines without GPUs. All calls return 0 or a negative
 * errno; they never print. One backend object per open; not thread-safe unless
 * the implementation says so. */
#ifndef CARMA_GPU_BACKEND_H
#define CARMA_GPU_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/err.h"

#define CARMA_GPU_UUID_MAX 96
#define CARMA_GPU_NAME_MAX 96
#define CARMA_GPU_PCI_MAX 32
#define CARMA_GPU_MAX 256        /* GPUs one backend may report */
#define CARMA_GPU_MAX_PROCS 256  /* processes per GPU per sample */

/* Static facts about one GPU. Key GPUs by uuid, never by index. */
struct carma_gpu_info {
    char uuid[CARMA_GPU_UUID_MAX];
    char name[CARMA_GPU_NAME_MAX]; /* e.g. "NVIDIA A100-SXM4-40GB" */
    uint64_t mem_total_bytes;
    double power_limit_w;          /* < 0: absent */
    int mig_mode;                  /* 0 off, 1 on, -1 absent */
    char pci_bus_id[CARMA_GPU_PCI_MAX]; /* NVML's busId ("00000000:00:06.0"; old drivers
                                           "0000:00:06.0"), printable; "": unknown (sim,
                                           DCGM, a driver that does not say) */
    int island; /* GPUs linked by NVLink or behind PCIe switches share an island, numbered
                   0, 1, ... in the order of their lowest GPU index: a job on several GPUs
                   prefers GPUs of one island; -1: unknown (every GPU, or none, is) */
};

/* One sample. Any signal a GPU cannot give is marked absent by a negative value
 * (NOT_SUPPORTED is absence, not an error). */
struct carma_gpu_sample {
    uint64_t mem_used_bytes;
    uint64_t mem_free_bytes;
    double util_gpu;         /* NVML utilisation ratio 0..1, <0 absent */
    double util_mem;         /* 0..1, <0 absent */
    double power_w;          /* <0 absent */
    double energy_j;         /* cumulative counter since driver load, <0 absent */
    double smact, smocc, drama, tensor; /* DCGM 1002/1003/1005/1004 or GPM, <0 absent */
    int lost;                /* 1: GPU_IS_LOST or stopped answering: drain it */
    double gract;            /* DCGM 1001 (graphics engine active) or GPM, <0 absent */
};

struct carma_gpu_proc {
    pid_t pid;
    uint64_t mem_bytes;      /* used GPU memory; UINT64_MAX when the driver cannot tell */
};

/* One critical Xid error the driver reported on a GPU (NVML events). */
struct carma_gpu_xid {
    unsigned gpu;          /* index */
    uint64_t xid;          /* 999: one the driver does not know */
    uint32_t gpu_instance; /* MIG GPU instance, UINT32_MAX: the whole GPU or unknown */
    uint32_t count;        /* times it came while it waited (the same Xid is queued once) */
};

#define CARMA_GPU_XID_QUEUE 256 /* distinct Xids waiting to be taken; more are counted lost */

struct carma_gpu_backend;

struct carma_gpu_backend_ops {
    const char *name; /* "nvml", "dcgm", "sim" */
    /* Number of GPUs (fixed after open). */
    int (*count)(struct carma_gpu_backend *b, unsigned *n);
    int (*info)(struct carma_gpu_backend *b, unsigned i, struct carma_gpu_info *out);
    int (*sample)(struct carma_gpu_backend *b, unsigned i, struct carma_gpu_sample *out);
    /* Compute processes on GPU i; *n in: capacity, out: count. */
    int (*processes)(struct carma_gpu_backend *b, unsigned i, struct carma_gpu_proc *out,
                     size_t *n);
    /* Optional (NULL for real drivers): the simulated backend learns which process
     * runs on which GPU and how much memory it will take. */
    int (*attach)(struct carma_gpu_backend *b, unsigned i, pid_t pid, uint64_t mem_bytes);
    int (*detach)(struct carma_gpu_backend *b, pid_t pid);
    void (*close)(struct carma_gpu_backend *b);
    /* Optional: one line saying where the signals come from, for logs and
     * `carma gpus` (e.g. "nvml (processes v3, memory v2) + dcgm 127.0.0.1
     * [smact smocc drama tensor]"). Always NUL-terminates buf when cap > 0. */
    void (*describe)(struct carma_gpu_backend *b, char *buf, size_t cap);
    /* Optional (NULL: this backend reports no Xids): a descriptor, owned by the
     * backend, that polls readable while Xids wait to be taken, or -1 when none will
     * come (not asked for, or the driver cannot). The backend's own event thread fills
     * the queue; the caller's calls all come from one thread of its, as for every op. */
    int (*xid_fd)(struct carma_gpu_backend *b);
    /* Takes up to cap waiting Xids, oldest first, into out; returns how many. *lost
     * (may be NULL) is the count dropped since the last call because the queue was
     * full. Never blocks. */
    size_t (*xids)(struct carma_gpu_backend *b, struct carma_gpu_xid *out, size_t cap,
                   uint64_t *lost);
};

struct carma_gpu_backend {
    const struct carma_gpu_backend_ops *ops;
    void *impl; /* owned by the backend */
};

/* Openers. `spec` for the simulated backend is the --gpus syntax without "sim:"
 * ("4xa100-40gb", "2xa100-40gb,2xv100-32gb"). NVML's `lib` is the path or soname
 * to dlopen (NULL: "libnvidia-ml.so.1"). Each returns 0 or a negative errno with
 * err saying why (no driver, missing symbol, ...); -ENOENT only when a library
 * (NVML's, or DCGM's where it is required) cannot be loaded at all. */
int carma_gpu_open_sim(struct carma_gpu_backend *b, const char *spec, struct carma_err *err);
int carma_gpu_open_nvml(struct carma_gpu_backend *b, const char *lib, struct carma_err *err);
int carma_gpu_open_dcgm(struct carma_gpu_backend *b, const char *lib, struct carma_err *err);

/* Where an optional signal source is used: try it and carry on quietly without it
 * (the default), never, or fail the open when it is missing. */
enum carma_gpu_src_use { CARMA_GPU_SRC_TRY = 0, CARMA_GPU_SRC_OFF = 1, CARMA_GPU_SRC_REQUIRE = 2 };

/* Options for carma_gpu_open_nvml_opts; all zero = the defaults of
 * carma_gpu_open_nvml(b, NULL, err). */
struct carma_gpu_nvml_opts {
    const char *lib;           /* NULL: "libnvidia-ml.so.1" */
    const char *dcgm_lib;      /* NULL: "libdcgm.so.4" */
    const char *dcgm_addr;     /* NULL: "127.0.0.1"; starting with '/': a unix socket path */
    unsigned interval_ms;      /* monitor interval: DCGM's watch period; 0: 1000 */
    enum carma_gpu_src_use dcgm; /* DCGM profiling fields 1001-1005, merged by UUID */
    enum carma_gpu_src_use gpm;  /* NVML GPM metrics (Hopper+) when DCGM gives none */
    int xid_events;              /* 1: a thread waits for critical Xid events (xid_fd) */
};

/* NVML, plus, for SMACT/SMOCC/DRAMA/TENSOR, DCGM profiling fields (from a running
 * nv-hostengine) or else NVML GPM metrics on Hopper and newer. carma_gpu_open_nvml(b,
 * lib, err) is this with {.lib = lib} (DCGM and GPM tried, used when present). */
int carma_gpu_open_nvml_opts(struct carma_gpu_backend *b, const struct carma_gpu_nvml_opts *o,
                             struct carma_err *err);

/* Simulated backend only: from now on read time (seconds, any origin, never
 * decreasing) from now(ctx) instead of CLOCK_MONOTONIC, and restart the energy
 * counters at 0, so that tests get exact energies. Returns -EINVAL when b is not
 * the simulated backend. */
int carma_gpu_sim_set_clock(struct carma_gpu_backend *b, double (*now)(void *ctx), void *ctx);

#endif
