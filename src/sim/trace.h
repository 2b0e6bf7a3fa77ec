/* Traces for the simulator: what arrives when, and each job's solo profile.
 * Loaders read a file's bytes (no other I/O), validate every field, and either
 * return a whole trace or an error naming file, line and problem (never a partial
 * trace). Supported formats: carma CSV (submit_s,workload + workload catalog),
 * CARMA's .sh + .rad files, Muri's Philly CSV, Gavel's .trace, Alibaba v2023 pods. */
#ifndef CARMA_SIM_TRACE_H
#define CARMA_SIM_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

/* Estimators whose answers a catalog may carry (CARMA's est-* inputs). */
enum sim_est {
    SIM_EST_HORUS,
    SIM_EST_FAKETENSOR,
    SIM_EST_GPUMEMNET,
    SIM_EST_CARMA, /* carma's own estimator (issue 4), when the catalog has it */
    SIM_EST_COUNT
};

#define SIM_NAME_MAX 64
#define SIM_TRACE_MAX_JOBS (4u << 20)   /* bound on jobs in one trace */
#define SIM_TRACE_MAX_BYTES (512u << 20) /* bound on one trace file */
#define SIM_JOB_MAX_GPUS 64

/* A workload of the catalog: a named solo profile. */
struct sim_workload {
    char name[SIM_NAME_MAX];
    char model[SIM_NAME_MAX];
    uint32_t batch;
    uint16_t gpus;        /* GPUs it needs */
    float mem_mib;        /* measured peak per GPU when alone (the truth in the simulator) */
    float est_mib[SIM_EST_COUNT]; /* estimator answers per GPU; 0 = not given */
    double duration_s;    /* run time alone */
    float smact, smocc, drama; /* solo activity ratios 0..1 */
    float ramp_s;         /* seconds from launch to peak memory */
};

/* One job of a trace. Self-contained: loaders copy the profile in, so that traces
 * with per-job durations (Muri, Gavel, Alibaba) need no catalog entry per job. */
struct sim_job_spec {
    double submit_s;      /* seconds after the trace's first arrival, >= 0, non-decreasing */
    double duration_s;    /* solo run time, > 0 */
    float mem_mib;        /* true peak per GPU */
    float est_mib[SIM_EST_COUNT];
    float smact, smocc, drama;
    float ramp_s;
    uint16_t gpus;        /* 1..SIM_JOB_MAX_GPUS */
    uint16_t workload;    /* index into sim_trace.workloads (name for reports) */
    uint32_t line;        /* its line in the trace file, for messages; 0: none */
    uint32_t name;        /* its own name in messages (an Alibaba pod's `name`): offset + 1
                             into sim_trace.names; 0: none, its workload's name names it */
};

struct sim_trace {
    struct sim_job_spec *jobs; /* owned */
    size_t njobs;
    struct sim_workload *workloads; /* owned; names of the jobs' workloads */
    size_t nworkloads;
    /* Alibaba pod lists: records left out (asking for no GPU; never scheduled, so
     * without a run time). Zero for the other formats. */
    size_t skipped_nogpu, skipped_unscheduled;
    /* What the trace asks for that carma reads and checks but no policy honours, for
     * the caller to note: Alibaba jobs whose pod names a GPU model (gpu_spec, not
     * empty); Gavel jobs with a priority weight other than 1, and with an SLO (>= 0;
     * a negative SLO is none, as in Gavel). Zero for the other formats. */
    size_t gpu_spec_jobs, weighted_jobs, slo_jobs;
    char *names; /* owned; the jobs' own names (NUL-terminated, at most SIM_NAME_MAX - 1
                    bytes each, raw: quote them in messages), or NULL */
    size_t names_len;
};

/* What names job i of t in a message: its own name (sim_job_spec.name) where it has
 * one, else its workload's name, else "?". Raw bytes: quote it (carma_quote). */
const char *sim_trace_job_name(const struct sim_trace *t, size_t i);

enum sim_trace_format {
    SIM_TRACE_AUTO,
    SIM_TRACE_CARMA_CSV,  /* submit_s,workload (+ --workloads catalog) */
    SIM_TRACE_CARMA_SH,   /* CARMA's submit.py/sleep shell trace + folder of .rad files */
    SIM_TRACE_MURI,       /* job_id,num_gpu,submit_time,iterations,model_name,batch_size,duration,... */
    SIM_TRACE_GAVEL,      /* tab-separated Gavel .trace (7, 9 or 10 fields) */
    SIM_TRACE_ALIBABA,    /* openb_pod_list_*.csv */
};

/* Name <-> format, for --trace-format. Returns -1 / NULL when unknown. */
int sim_trace_format_parse(const char *name);
const char *sim_trace_format_name(enum sim_trace_format f);

/* Detects the format from the file name and its first bytes (after one byte order
 * mark): a CSV header by the set of its column names, in any order (or the documented
 * first columns), a CARMA .sh by its first word, a Gavel line by its number of
 * tab-separated fields, else the name's suffix. SIM_TRACE_AUTO when it cannot tell,
 * or when the header fits more than one format. */
enum sim_trace_format sim_trace_detect(const char *path, const char *buf, size_t len);

/* Loads a workload catalog CSV (data/workloads.csv columns; see data/README.md).
 * On success the caller owns *out (free with free()). */
int sim_catalog_parse(const char *file, const char *buf, size_t len, struct sim_workload **out,
                      size_t *n, struct carma_err *err);

/* Loads a trace of any format. `catalog` is used by carma CSV and CARMA .sh traces
 * (may be NULL for the others); `aux_dir` is the folder of .rad files for .sh traces
 * (NULL: the trace's own folder). Returns 0 and fills *out, or a negative code with
 * err set and *out untouched. */
int sim_trace_load(const char *path, enum sim_trace_format fmt, const struct sim_workload *catalog,
                   size_t ncatalog, const char *aux_dir, struct sim_trace *out,
                   struct carma_err *err);

void sim_trace_free(struct sim_trace *t);

/* Default memory of one GPU for Alibaba's fractional gpu_milli (an A100-40GB). */
#define SIM_TRACE_DEFAULT_GPU_MIB 40960.0

/* Everything a loader may need besides the trace's bytes. Zero-initialised = defaults. */
struct sim_trace_opts {
    const struct sim_workload *catalog; /* carma CSV, CARMA .sh: run times and profiles */
    size_t ncatalog;
    const char *aux_dir;  /* CARMA .sh: folder of the .rad files (NULL: the trace's folder) */
    double gpu_mem_mib;   /* Alibaba: memory of the GPU a fraction refers to (0: default) */
};

/* Parses a trace already in memory (`file` names it in errors). Same contract as
 * sim_trace_load; fmt may be SIM_TRACE_AUTO (detected from file name and bytes).
 * Whatever fmt, a NUL byte or a second byte order mark is refused before parsing.
 * No I/O, except that CARMA .sh traces read the .rad files they name. */
int sim_trace_parse(const char *file, const char *buf, size_t len, enum sim_trace_format fmt,
                    const struct sim_trace_opts *opts, struct sim_trace *out,
                    struct carma_err *err);

/* sim_trace_load with all options (reads at most SIM_TRACE_MAX_BYTES). */
int sim_trace_load_opts(const char *path, enum sim_trace_format fmt,
                        const struct sim_trace_opts *opts, struct sim_trace *out,
                        struct carma_err *err);

/* Parses one CARMA task description (.rad, 12 lines: comment, environment, command,
 * model file, dataset, batch, placement hint, GPUs, measured peak MiB, Horus,
 * FakeTensor and GPUMemNet estimates; the last three may be absent). Fills name
 * (from `name`), batch, gpus, mem_mib and est_mib of *w; leaves the rest zero. */
int sim_rad_parse(const char *file, const char *name, const char *buf, size_t len,
                  struct sim_workload *w, struct carma_err *err);

/* A memory model for a model name found in Muri and Gavel traces
 * (data/model-profiles.csv; docs/traces.md gives the sources and assumptions):
 * peak MiB per GPU = base_mib + per_sample_mib * batch. steps_per_s is the solo
 * throughput used to turn Gavel's step counts into seconds (0 where unused). */
struct sim_model_profile {
    const char *name;
    double base_mib, per_sample_mib;
    double steps_per_s;
    const char *source;
};

/* The built-in table (the same rows as data/model-profiles.csv) and a lookup by
 * exact name; NULL when unknown. */
const struct sim_model_profile *sim_model_profiles(size_t *n);
const struct sim_model_profile *sim_model_profile_find(const char *name);

/* Multiplies every job's run time by exp(N(0, frac)), drawn from a generator seeded by
 * `seed`: the same seed gives the same trace. Used to check that a comparison of
 * policies holds beyond one exact replay. Returns 0, or -EINVAL with err naming the
 * job ("FILE:LINE: job NAME: ..." where file is given and the job has a line) when a
 * jittered run time would not be positive or pass the loaders' limit (1e10 s); the
 * trace is then unchanged. */
int sim_trace_jitter(struct sim_trace *t, double frac, uint64_t seed, const char *file,
                     struct carma_err *err);

#endif
