/* History beats any model (DESIGN.md §5): once a job signature (command + arguments +
 * batch) has run, its observed peak GPU memory (NVML per-process) is the estimate for
 * its next run.
 *
 * Pure maths over a table the caller owns (storage passed in, no allocation, no I/O):
 * the daemon keeps one, records each finished run's peak, and asks for the estimate
 * before placing the next run. Open addressing on a 64-bit FNV-1a signature. */
#ifndef CARMA_ESTIMATE_HISTORY_H
#define CARMA_ESTIMATE_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#include "estimate/estimate.h"

struct est_history_entry {
    uint64_t sig;        /* 0: empty slot */
    double max_mib;      /* largest observed peak */
    double min_mib;      /* smallest observed peak */
    uint32_t runs;
};

struct est_history {
    struct est_history_entry *slots; /* caller-owned, cap entries, zeroed by init */
    size_t cap, n;
};

/* Signature of a command: FNV-1a over each argument (with its length, so that
 * {"ab","c"} and {"a","bc"} differ) and the batch size. Never 0. carmad keys solo SM
 * profiles by it; memory history needs est_job_signature. */
uint64_t est_signature(const char *const *argv, size_t argc, uint32_t batch);

/* Everything a job's memory depends on that carma is told: the command, the folder it
 * runs in, every estimator input the job was submitted with, and the allocator set-up of
 * its environment. */
struct est_job_key {
    const char *const *argv;
    size_t argc;
    uint32_t batch, gpus;       /* 0: none */
    const char *summary;        /* the model summary's text; NULL: none */
    size_t summary_len;
    uint32_t seq, image_h, image_w, heads; /* 0: not given */
    uint32_t experts_per_token; /* --experts-per-token; 0: not given */
    uint32_t shared_layer_runs; /* --shared-layer-runs; 0: not given (hashed only when
                                   given: signatures of jobs without it stay as they were) */
    int tied_head;              /* --tied-head (hashed only when given, as above) */
    enum est_optimizer optimizer;
    enum est_precision precision;
    enum est_attention attention;
    int grad_checkpoint, grad_accum;
    const char *cwd;            /* the folder the command runs in; NULL: none */
    int preallocates;           /* the framework maps the GPU's memory at its start */
    /* nenv variables of the job's environment that change its peak (the caller's
     * fixed list, in a fixed order): env_val[i] NULL where env_key[i] is unset. */
    const char *const *env_key;
    const char *const *env_val;
    size_t nenv;
};

/* Signature of a job's memory history: FNV-1a, under a version tag of its own (5;
 * signatures of an older version match none of it), over the arguments (as
 * est_signature), the batch, the GPU count, whether there is a summary and its text
 * byte for byte, the sequence length, image height and width, heads, experts per token,
 * optimizer, precision, attention, gradient checkpointing and accumulation, the cwd,
 * whether the framework preallocates, and each of the nenv variables' name and value (unset and
 * empty differ). Two jobs share it only when none of these tells their memory apart.
 * Never 0. */
uint64_t est_job_signature(const struct est_job_key *k);

/* Zeroes storage and sets the table up; cap must be a power of two >= 2. Returns 0
 * or -EINVAL. */
int est_history_init(struct est_history *h, struct est_history_entry *storage, size_t cap);

/* Records one finished run's observed peak (MiB, > 0 and finite). Returns 0, -EINVAL
 * for a bad peak, or -ENOSPC when the table is 3/4 full and the signature is new. */
int est_history_record(struct est_history *h, uint64_t sig, double peak_mib);

/* The entry for sig, or NULL. */
const struct est_history_entry *est_history_find(const struct est_history *h, uint64_t sig);

/* The estimate and bound to use for the next run of sig: with history, the largest
 * observed peak, and as bound that peak plus the observed run-to-run spread plus one
 * 2 MiB allocator segment; without it, the model's (model_est, model_bound). Returns
 * 1 when history was used, 0 when the model was. */
int est_history_next(const struct est_history *h, uint64_t sig, double model_est,
                     double model_bound, double *est_mib, double *bound_mib);

#endif
