/* The simulator: replays a trace through the core scheduler on simulated GPUs in
 * virtual time (DESIGN.md §4). Discrete events: arrival, finish, OOM, CARMA's 1 s
 * loop. Job progress under collocation, memory ramps, OOM crashes and power follow
 * docs/model.md. Deterministic: the same trace and config give the same result. */
#ifndef CARMA_SIM_SIM_H
#define CARMA_SIM_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "core/gpu.h"
#include "core/policy.h"
#include "core/sched.h"
#include "report/report.h"
#include "sim/gpukind.h"
#include "sim/trace.h"
#include "util/err.h"

#define SIM_PROGRESS_EVENTS 1024

struct sim_config {
    const struct sim_gpu_kind *const *kinds; /* one per GPU */
    const uint16_t *islands; /* one per GPU (sim_gpu_spec_parse); NULL: all island 0 */
    size_t ngpus;
    enum carma_sharing sharing;
    const struct carma_policy *policy;
    enum sim_est estimator;        /* requirement source of est-* policies */
    struct carma_sched_params params;
    uint32_t window;               /* monitor window, samples (CARMA: 30) */
    uint32_t max_attempts;         /* per job, 0 = unlimited (default 3) */
    int record;                    /* keep per-GPU series and job bars for a report */
    size_t record_gpus;            /* with a timeline: record the series and bars of the
                                      first this many GPUs only (what the report draws,
                                      carma_report_gpus_drawn), counting the runs on the
                                      others; 0 = every GPU */
    size_t record_points;          /* per recorded GPU, the points kept before the series
                                      is compacted to half as many or fewer (time buckets'
                                      minima and maxima); 0 = CARMA_REPORT_KEEP_POINTS,
                                      else at least 64 */
    size_t record_bars;            /* bars kept before the recorder keeps only the runs
                                      that started before then; 0 = CARMA_REPORT_KEEP_BARS */
    int every_tick;                /* decide at every second of CARMA's loop, even where
                                      nothing can have changed (the skip's check) */
    const struct carma_coloc_learnt *coloc; /* auto predicts with this correction of the
                                      model on every GPU (carma_sched_set_coloc); the jobs
                                      run by the model alone. NULL: none (the default) */
    /* Called every SIM_PROGRESS_EVENTS events with (done jobs, total), and during a
     * decision that places many jobs, every SIM_STEP_CAP of them; may be NULL. */
    void (*progress)(void *ctx, size_t done, size_t total);
    void *progress_ctx;
};

void sim_config_default(struct sim_config *c);

struct sim_metrics {
    size_t jobs;          /* in the trace */
    size_t succeeded;     /* finished their work */
    size_t gave_up;       /* ended in OOM after max_attempts */
    /* Over the jobs that finished (succeeded); all 0 when none did: */
    double makespan_s;    /* last finish - first arrival */
    /* Percentiles interpolate linearly between order statistics (rank p/100 * (n - 1),
     * as numpy's default), so a p99 may lie between two jobs' values. */
    double mean_jct_s, p50_jct_s, p99_jct_s;    /* finish - submit */
    double mean_wait_s, p50_wait_s, p99_wait_s; /* time queued (all attempts) */
    /* Over every job, given-up ones included: */
    uint64_t oom_crashes;
    double lost_gpu_s;    /* GPU time of attempts that crashed */
    double energy_j;      /* all GPUs over [first arrival, last job's end], where a job
                             ends when it finishes or is given up */
    double mean_smact;    /* time and GPU average over that span */
    double mean_smocc;    /* likewise, SM occupancy */
    double mean_mem_used_frac;
    double busy_gpu_s;    /* GPU-seconds with at least one job resident */
    uint64_t events, decisions, placements;
    uint64_t monitor_catchups; /* GPUs whose monitor a decision caught up (policies that
                                  read the windows): only those not quiet, not every GPU */
};

/* Recorded run for a report (cfg.record). Owned arrays; free with sim_timeline_free. */
struct sim_series {
    size_t n, cap;
    double *t;
    float *mem, *smact, *power;
};

struct sim_timeline {
    size_t ngpus;                    /* GPUs recorded: the run's first ngpus */
    struct sim_series *gpu;          /* ngpus */
    struct carma_report_bar *bars;   /* runs on those GPUs; labels point into the trace's
                                        workload names */
    size_t nbars, capbars;
    size_t nruns_other; /* job runs none of whose GPUs is recorded (bars
                           not kept) */
    /* Once record_bars bars were kept, at bars_until (seconds from the first arrival):
     * only the runs that started before it are, the others counted in nruns_late. */
    size_t nruns_late;
    double bars_until;  /* INFINITY while every run is kept */
    double series_step; /* > 0: the widest bucket (s) a series was compacted to */
    double t_end;
};

void sim_timeline_free(struct sim_timeline *tl);

/* Whether every job of t can run on cfg's GPUs: enough GPUs, and enough of them large
 * enough for its peak; arrivals in order. Else -EINVAL with err naming the job, by
 * file:line where `file` is given and the job has a line. sim_run checks it too. */
int sim_trace_check(const struct sim_trace *t, const struct sim_config *cfg, const char *file,
                    struct carma_err *err);

/* Runs the whole trace. `tl` may be NULL (no recording). Returns 0 with *m filled, or
 * a negative code with err set (a job that can never run on these GPUs, no memory). */
int sim_run(const struct sim_trace *t, const struct sim_config *cfg, struct sim_metrics *m,
            struct sim_timeline *tl, struct carma_err *err);

#endif
