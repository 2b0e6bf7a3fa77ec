/* carmad's memory bound of a submitted job (DESIGN.md §5, issue 4): history beats the
 * model, the model beats nothing, and the user's declared --mem is a floor.
 *
 *   history   the job's signature (uid and carmad_job_signature: argv, batch, GPU count,
 *             summary text, every estimator option, cwd and the allocator environment; a
 *             peak is per GPU, and DDP on more GPUs holds more on each) has succeeded attempts with an observed
 *             peak in the store, on the server's GPU kinds: est_history_next's bound
 *             (largest peak + run-to-run spread + 2 MiB) of each kind's own peaks, the
 *             largest over the kinds (carmad_job_bound);
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
#include "gpu/backend.h"
#include "proto/proto.h"
#include "util/err.h"

enum carmad_bound_source { CARMAD_BOUND_DECLARED = 0, CARMAD_BOUND_ESTIMATOR,
                           CARMAD_BOUND_HISTORY };

struct carmad_bound {
    uint64_t bound_mib;
    double estimate_mib; /* 0 when declared only */
    enum carmad_bound_source source;
    uint32_t runs;       /* history: attempts behind it */
    uint64_t hist_sig;   /* carmad_job_signature of the request (the jobs row's hist_sig) */
    /* One line for `carma show`: the source and what it assumed, e.g. "estimator (batch
     * 4, seq 512, adamw, bf16, gradient checkpointing; estimate 3120 MiB)", "history (2
     * earlier runs, peaks 2780 to 2790 MiB)", "--mem (4096 MiB)" */
    char basis[320];
};

/* A GPU's kind as history tells kinds apart: "NAME, MEM MiB" (the backend's name and
 * total memory), and ", simulated" after it for a simulated GPU, cut to cap. A simulated
 * GPU bears a real one's name and memory, but what a job holds there is what it was
 * expected to hold (its estimate): a state folder that carmad ran on simulated GPUs (by
 * --gpus sim:, or as its fallback when NVML did not load) must not lend those figures to
 * the real GPUs of that name as history. */
#define CARMAD_GPU_KIND_MAX (CARMA_GPU_NAME_MAX + 48)
void carmad_gpu_kind(const char *name, uint64_t mem_mib, int simulated, char *buf, size_t cap);

/* The memory history signature of a submission (est_job_signature over its argv,
 * batch, GPU count, summary text, seq_len, image_size, heads, training set-up, cwd,
 * whether its environment makes the framework preallocate (carmad_env_preallocates), and
 * the values of PYTORCH_CUDA_ALLOC_CONF, PYTORCH_ALLOC_CONF,
 * PYTORCH_NO_CUDA_MEMORY_CACHING, XLA_PYTHON_CLIENT_MEM_FRACTION, XLA_CLIENT_MEM_FRACTION,
 * XLA_PYTHON_CLIENT_ALLOCATOR and TF_GPU_ALLOCATOR in it, unset or not). */
uint64_t carmad_job_signature(const struct carma_req_job *rj);

/* Observed peaks of the earlier attempts of a job signature on one GPU kind: attempts
 * of `uid`'s jobs with exactly this argv JSON (as stored), batch, GPU count and history
 * signature `sig`, run on GPUs of kind `kind` (carmad_gpu_kind), that succeeded (exit
 * 0) with a peak > 0. An attempt that failed, was cancelled, was lost or ran out of
 * memory may have stopped before the job's peak (a bad data path after loading the
 * model, a cancel during warm-up): its peak is below the need. Of the last
 * CARMAD_HISTORY_RUNS such jobs that succeeded, whatever their kinds: each lookup reads
 * at most that many. *runs is 0 when there are none. Returns 0 or a negative errno with
 * err. */
#define CARMAD_HISTORY_RUNS 1000
/* Its SQL (tests read its query plan: the jobs_history index). */
extern const char carmad_peaks_sql[];
int carmad_store_peaks(struct carma_store *st, uint32_t uid, const char *argv_json,
                       uint32_t batch, uint32_t gpus, uint64_t sig, const char *kind,
                       double *max_mib, double *min_mib, uint32_t *runs,
                       struct carma_err *err);

/* The bound of a new job (see above) that may run on GPUs of the nkinds kinds kinds[]
 * (carmad_gpu_kind, each once): where every kind has peaks, the largest of the kinds'
 * history bounds; where some has none, the larger of the model's bound and the others'
 * history bounds; without a model, a kind without peaks leaves history out. The model's
 * bound is the largest over the kinds of the estimator's on each (dev[k], the kind's
 * estimator facts, sim_gpu_kind_of_device; NULL, or dev NULL: the defaults). A summary
 * that does not parse, a sequence model without seq_len, or eager attention whose heads
 * it needs (est_heads_check), is an error (-EINVAL, err names the line), and so is a bound
 * above CARMAD_BOUND_MAX_MIB or not a number (err says so); a store error falls back to
 * the model (history is an optimisation, never a reason to refuse). */
#define CARMAD_BOUND_MAX_MIB 1099511627776.0 /* 2^40 MiB: no GPU comes near */
struct sim_gpu_kind;
int carmad_job_bound(struct carma_store *st, const struct carma_req_job *rj,
                     const char *argv_json, uint32_t uid, const char *const *kinds,
                     const struct sim_gpu_kind *const *dev, size_t nkinds,
                     struct carmad_bound *out, struct carma_err *err);

/* carmad_job_bound in two steps. The model's (carmad_model_bound: parsing the summary and
 * replaying its training, up to a few tenths of a second for the largest summaries) reads
 * only rj, dev and the shipped coefficients, so any thread may run it (carmad's estimate
 * queue, daemon/estq.h); carmad_job_bound_with then adds history and the declared --mem
 * on carmad's loop, from m (carmad_model_bound's answer for the same rj and kinds). */
struct carmad_model {
    double estimate_mib, bound_mib; /* 0: no summary, or no batch */
    int heads_used;                 /* the request's heads sized some attention (est_heads_used) */
    int unknown_math; /* a kind of unknown compute capability ran 16-bit attention through
                         SDPA's math kernel, which a known kind of 8.0 or newer would not */
};
int carmad_model_bound(const struct carma_req_job *rj, const struct sim_gpu_kind *const *dev,
                       size_t nkinds, struct carmad_model *out, struct carma_err *err);
int carmad_job_bound_with(struct carma_store *st, const struct carma_req_job *rj,
                          const char *argv_json, uint32_t uid, const char *const *kinds,
                          size_t nkinds, const struct carmad_model *m, struct carmad_bound *out,
                          struct carma_err *err);

/* TensorFlow and JAX map most of a GPU's memory when they start, unless told to grow:
 * carmad gives every job TF_FORCE_GPU_ALLOW_GROWTH=true and
 * XLA_PYTHON_CLIENT_PREALLOCATE=false unless its environment sets them. */
#define CARMAD_ENV_TF_GROWTH "TF_FORCE_GPU_ALLOW_GROWTH"
#define CARMAD_ENV_XLA_PREALLOCATE "XLA_PYTHON_CLIENT_PREALLOCATE"

/* Index into rj->env_key of the first variable that makes a framework map the GPU's
 * memory at its start: TF_FORCE_GPU_ALLOW_GROWTH other than exactly "true" (TensorFlow
 * compares with strcmp, and any other value, "1", "True" and "" included, leaves it
 * preallocating), or XLA_PYTHON_CLIENT_PREALLOCATE other than exactly "false", "False"
 * or "0" (what every JAX version takes as off; most preallocate on "FALSE", and on
 * "" as unset); -1 when none does. */
long carmad_env_preallocates(const struct carma_req_job *rj);

/* The whole-GPU rule: a job whose environment makes its framework preallocate
 * (carmad_env_preallocates) holds a whole GPU whatever its model, so *bound_mib is raised
 * to `whole` (the largest GPU's memory) where below it, whatever *basis holds. *basis
 * (malloc'd, may be NULL) is then replaced by a new one naming the variable and the
 * former basis ("whole GPU (40960 MiB: TF_FORCE_GPU_ALLOW_GROWTH=false in the job's
 * environment maps the GPU's memory at the start; else --mem (1024 MiB))"), NULL when
 * out of memory. Returns the variable's index into rj->env_key, or -1 (nothing changed)
 * when the job does not preallocate. */
long carmad_bound_preallocating(const struct carma_req_job *rj, uint64_t whole,
                                uint64_t *bound_mib, char **basis);

#endif
