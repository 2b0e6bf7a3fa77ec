/* /metrics: carmad's state in the Prometheus text exposition format (0.0.4).
 * Names carry the carma_ prefix and base units (bytes, seconds, joules, watts,
 * ratios 0-1); labels are dcgm-exporter's (gpu, UUID, modelName) plus job and user.
 * Absent signals are left out, never written as 0. Pure: the daemon fills a
 * struct carma_metrics from its state and this renders it. */
#ifndef CARMA_DAEMON_METRICS_H
#define CARMA_DAEMON_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "core/coloc.h"

/* A latency histogram with fixed bounds (seconds): 1, 2.5, 5, 10, 25, 50, 100, 250,
 * 500 µs, 1, 2.5, 10 ms, then +Inf. */
#define CARMA_HIST_NB 12
extern const double carma_hist_bounds[CARMA_HIST_NB];
struct carma_hist {
    uint64_t le[CARMA_HIST_NB]; /* non-cumulative counts per bucket */
    uint64_t inf;               /* above the last bound */
    uint64_t count;
    double sum;
};
void carma_hist_add(struct carma_hist *h, double seconds);

struct carma_metrics_gpu {
    unsigned index;
    const char *uuid, *name;
    uint64_t mem_total_bytes, mem_used_bytes, mem_free_bytes;    /* UINT64_MAX: absent */
    double util, smact, smocc, drama, tensor, power_w, energy_j; /* < 0 absent */
    double smact_risk;          /* CARMA's aggregate over the window, < 0 none */
    int drained;
    unsigned jobs, foreign;
    uint64_t xids; /* critical Xids reported since carmad started */
};

struct carma_metrics_job {
    uint64_t id;
    const char *user, *name;
    const char *state;          /* "queued", "running" */
    uint64_t mem_bytes;         /* memory now: its processes' on a GPU, the highest of its
                                   GPUs; UINT64_MAX unknown (no series) */
    double energy_j, gpu_s;     /* this job so far, all attempts */
};

/* order = fair: a user's GPU time as the queue's order counts it. */
struct carma_metrics_user {
    const char *user; /* the name its jobs were submitted under: two uids may share one */
    uint32_t uid;     /* what the queue's order counts by */
    double gpu_s;     /* decayed (docs/daemon.md, Order) */
};

struct carma_metrics {
    const struct carma_metrics_gpu *gpus;
    size_t ngpus;
    const struct carma_metrics_job *jobs;
    size_t njobs;
    uint64_t queued, running;               /* jobs by state now */
    uint64_t finished[8];                   /* by enum carma_job_state, since carmad began */
    uint64_t oom_total, placements_total, attempts_total;
    uint64_t gpu_error_total;               /* attempts that ended gpu_error */
    const struct carma_hist *decision;      /* scheduler step latency */
    uint64_t monitor_ticks;
    double monitor_seconds;                 /* time spent in ticks */
    uint64_t estimates_waiting;             /* submissions in or waiting for the estimate queue */
    uint64_t estimates_total;               /* summaries the queue's thread estimated */
    double estimate_seconds;                /* ... and its time on them */
    const struct carma_coloc_learnt *coloc; /* learnt from co-runs, [nkinds] by GPU kind;
                                               NULL: not learning */
    const char *const *kinds;               /* the GPU kinds (carmad_gpu_kind) */
    size_t nkinds;
    const struct carma_metrics_user *users; /* order = fair; NULL: FIFO */
    size_t nusers;
    const char *version; /* carmad's (util/version.h), carma_build_info; NULL: none */
};

/* Renders m into a malloc'd NUL-terminated buffer (*out, *len). Returns 0 or -ENOMEM. */
int carma_metrics_render(const struct carma_metrics *m, char **out, size_t *len);

#endif
