/* carmad's memory bound of a submitted job (DESIGN.md §5, issue 4): history beats the
 * model, the model beats nothing, and the user's declared --mem is a floor.
 *
 *   history   the job's signature (uid, argv, batch, GPU count: a peak is per GPU, and
 *             DDP on more GPUs holds more on each) has attempts with an observed peak
 *             in the store: est_history_next's bound (largest peak + run-to-run spread
 *             + 2 MiB);
 *   estimator else, when the request carries a model summary and a batch: the
 *             estimator's conformal bound (shipped coefficients; the request's
 *             optimizer, precision, attention, checkpointing, gradient accumulation
 *             and attention heads:
 *             adamw, fp32 unless said);
 *   declared  else the declared mem_mib (0: unknown).
 *
 * bound_mib = max(that, declared mem_mib), the source the larger one's. The peaks
 * themselves are the attempts table's peak_mib, recorded by carmad at each attempt's
 * end. */
#ifndef CARMA_DAEMON_HISTORY_H
#define CARMA_DAEMON_HISTORY_H

#include <stdint.h>

#include "daemon/store.h"
#include "proto/proto.h"
#include "util/err.h"

enum carmad_bound_source { CARMAD_BOUND_DECLARED = 0, CARMAD_BOUND_ESTIMATOR,
                           CARMAD_BOUND_HISTORY };

struct carmad_bound {
    uint64_t bound_mib;
    double estimate_mib; /* 0 when declared only */
    enum carmad_bound_source source;
    uint32_t runs;       /* history: attempts behind it */
    /* One line for `carma show`: the source and what it assumed, e.g. "estimator (batch
     * 4, seq 512, adamw, bf16, gradient checkpointing; estimate 3120 MiB)", "history (2
     * earlier runs, peaks 2780 to 2790 MiB)", "--mem (4096 MiB)" */
    char basis[256];
};

/* Observed peaks of the earlier attempts of a job signature: attempts of `uid`'s jobs
 * with exactly this argv JSON (as stored), batch and GPU count that ended with a peak
 * > 0, OOM attempts excluded (their peak is below the need). *runs is 0 when there are
 * none.
 * Returns 0 or a negative errno with err. */
int carmad_store_peaks(struct carma_store *st, uint32_t uid, const char *argv_json,
                       uint32_t batch, uint32_t gpus, double *max_mib, double *min_mib,
                       uint32_t *runs, struct carma_err *err);

/* The bound of a new job (see above). A summary that does not parse, a sequence
 * model without seq_len, or eager attention whose heads it needs (est_heads_check), is
 * an error (-EINVAL, err names the line); a store error
 * falls back to the model (history is an optimisation, never a reason to refuse). */
int carmad_job_bound(struct carma_store *st, const struct carma_req_job *rj,
                     const char *argv_json, uint32_t uid, struct carmad_bound *out,
                     struct carma_err *err);

#endif
