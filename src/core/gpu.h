/* The GPU view the scheduler decides from: what the monitor last saw (memory and
 * window statistics) plus what the scheduler itself committed (jobs resident,
 * memory bounds, recent launches). Filled by the daemon's monitor or by the
 * simulator; the core never asks a backend. */
#ifndef CARMA_CORE_GPU_H
#define CARMA_CORE_GPU_H

#include <stdint.h>

#include "core/window.h"

enum carma_sharing {
    CARMA_SHARING_TIMESLICE, /* default CUDA time-slicing between contexts */
    CARMA_SHARING_MPS,       /* NVIDIA MPS: kernels of clients run concurrently */
};

const char *carma_sharing_name(enum carma_sharing s);
int carma_sharing_parse(const char *name); /* -1 when unknown */

struct carma_gpu {
    /* From the monitor. */
    uint64_t mem_total_mib;
    uint16_t island;         /* GPUs of one island are linked (NVLink, PCIe switches): a
                                job on several GPUs prefers one island (auto); the backend's
                                (carma_gpu_info.island), all 0 where it cannot tell */
    uint64_t mem_used_mib;   /* last sample: not free (every process, and what the
                                driver reserves: total - free) */
    uint64_t carma_used_mib; /* of which carma's jobs (per-process memory), if known */
    uint32_t nforeign;       /* processes on the GPU that carma did not start */
    uint64_t over_mib;       /* what carma's jobs use beyond their holds (a job past its
                                bound): memory neither committed nor foreign; 0 unknown */
    struct carma_window smact, smocc, drama; /* 1 sample per monitor tick */
    /* Kept by the scheduler. */
    uint32_t njobs;          /* carma jobs resident */
    uint64_t committed_mib;  /* sum over resident jobs of max(bound, peak) */
    double last_launch_s;    /* CARMA's grace starts here; < 0 none, or its job ended */
    uint32_t last_launch_job; /* the job launched then (CARMA_NONE: none) */
    uint8_t launch_seen;      /* its process was seen on the GPU: the grace runs from then */
    float prof_smact;        /* sum of resident jobs' solo SMACT (unknown counts 1) */
    float prof_busy;         /* sum of resident jobs' temporal busy fraction */
    uint32_t gpu_weight;     /* sum over resident jobs of the GPUs each holds */
    uint32_t nunprofiled;    /* resident jobs without a solo profile (smact < 0) */
    uint32_t nuncapped;      /* resident exclusive jobs running without the MPS memory cap
                                carmad gives the others (sched p.mps_cap): no job joins */
    uint8_t sharing;         /* enum carma_sharing */
    uint8_t drained;         /* lost or draining: no new jobs */
    uint16_t kind;           /* the caller's number for the GPU's kind (carmad: its NVML name
                                and memory), 0 where all are one: auto's correction learnt
                                from co-runs is one per kind (carma_sched_set_coloc) */
};

/* Initialises a GPU of `mem_total_mib` with monitor windows of `window` samples. */
void carma_gpu_init(struct carma_gpu *g, uint64_t mem_total_mib, uint32_t window,
                    enum carma_sharing sharing);

/* Idle as CARMA means it: no process at all on the GPU. */
static inline int carma_gpu_idle(const struct carma_gpu *g)
{
    return g->njobs == 0 && g->nforeign == 0;
}

#endif
