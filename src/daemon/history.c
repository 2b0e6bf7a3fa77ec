/* carmad's memory bound of a submitted job: history, estimator, declared (history.h). */
#include "daemon/history.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimate/estimate.h"
#include "estimate/history.h"
#include "estimate/parse.h"
#include "estimate/replay.h"
#include "sim/gpukind.h"

void carmad_gpu_kind(const char *name, uint64_t mem_mib, int simulated, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s, %llu MiB%s", name, (unsigned long long)mem_mib,
             simulated ? ", simulated" : "");
}

/* Environment variables that change a job's peak without changing what it computes:
 * PyTorch's caching allocator (expandable segments, max split size, garbage collection
 * threshold; no caching at all), JAX's memory fraction and allocator, TensorFlow's
 * allocator, CUDA's module loading (lazy or eager: hundreds of MiB of context, the
 * floor of docs/estimator.md), cuBLAS's workspace size and NCCL's buffers. The
 * preallocation switches are in the signature as carmad_env_preallocates' answer. */
static const char *const alloc_env[] = {
    "PYTORCH_CUDA_ALLOC_CONF",        "PYTORCH_ALLOC_CONF",
    "PYTORCH_NO_CUDA_MEMORY_CACHING", "XLA_PYTHON_CLIENT_MEM_FRACTION",
    "XLA_CLIENT_MEM_FRACTION",        "XLA_PYTHON_CLIENT_ALLOCATOR",
    "TF_GPU_ALLOCATOR",               "CUDA_MODULE_LOADING",
    "CUBLAS_WORKSPACE_CONFIG",        "NCCL_BUFFSIZE"};
#define NALLOC_ENV (sizeof alloc_env / sizeof alloc_env[0])

uint64_t carmad_job_signature(const struct carma_req_job *rj)
{
    const char *val[NALLOC_ENV] = {0};
    for (size_t i = 0; i < NALLOC_ENV; i++)
        for (size_t k = 0; k < rj->nenv; k++)
            if (!strcmp(rj->env_key[k], alloc_env[i]))
                val[i] = rj->env_val[k];
    const struct est_job_key k = {.argv = rj->argv,
                                  .argc = rj->argc,
                                  .batch = rj->batch,
                                  .gpus = rj->gpus,
                                  .summary = rj->summary,
                                  .summary_len = rj->summary ? strlen(rj->summary) : 0,
                                  .seq = rj->seq_len,
                                  .image_h = rj->image_h,
                                  .image_w = rj->image_w,
                                  .heads = rj->heads,
                                  .experts_per_token = rj->train.experts_per_token,
                                  .shared_layer_runs = rj->shared_layer_runs,
                                  .tied_head = rj->tied_head,
                                  .optimizer = rj->train.optimizer,
                                  .precision = rj->train.precision,
                                  .attention = rj->train.attention,
                                  .grad_checkpoint = rj->train.grad_checkpoint,
                                  .grad_accum = rj->train.grad_accum,
                                  .cwd = rj->cwd,
                                  .preallocates = carmad_env_preallocates(rj) >= 0,
                                  .env_key = alloc_env,
                                  .env_val = val,
                                  .nenv = NALLOC_ENV};
    return est_job_signature(&k);
}

/* Only a job's last attempt can succeed, and the job then has succeeded: the lookup reads
 * the jobs_history index (user, signature, succeeded jobs only), the runs that count and
 * none of the others. SQLite's planner took jobs_signature, every job of the user with
 * that argv and batch, for its more columns: the unary + keeps argv and batch out of any
 * index, so that jobs_history is the best left. Not INDEXED BY, which fails the prepare
 * where the index is missing (dropped by hand) and left every submission without its
 * history, unsaid; without it the lookup is only slower. argv, batch and GPU count are in
 * the signature too; matched as well, a hash collision is harmless. The lookup runs on
 * carmad's loop before each submission's commit, and read every earlier run: 0.67 ms at
 * 1,000 runs of a command, 41 ms at 50,000 (a sweep resubmitted for months), so it reads
 * the last CARMAD_HISTORY_RUNS of them (the index gives them newest first, and a kind
 * without peaks among them does not make it read the rest). */
const char carmad_peaks_sql[] =
    "SELECT MAX(a.peak_mib), MIN(a.peak_mib), COUNT(*) FROM "
    "(SELECT j.id FROM jobs j WHERE j.uid = ?1 AND j.hist_sig = ?5 AND j.state = 'succeeded' "
    "AND +j.argv = ?2 AND +j.batch = ?3 AND j.gpus = ?4 ORDER BY j.id DESC LIMIT ?7) r "
    "JOIN attempts a ON a.job_id = r.id "
    "WHERE a.gpu_kind = ?6 AND a.peak_mib > 0 AND a.outcome = 'succeeded' AND a.peak_partial = 0";

int carmad_store_peaks(struct carma_store *st, uint32_t uid, const char *argv_json,
                       uint32_t batch, uint32_t gpus, uint64_t sig, const char *kind,
                       double *max_mib, double *min_mib, uint32_t *runs,
                       struct carma_err *err)
{
    const char *sql = carmad_peaks_sql;
    *max_mib = *min_mib = 0;
    *runs = 0;
    sqlite3 *db = carma_store_sqlite(st);
    /* prepared once per store: its prepare took longer than its run, on every submission */
    enum { PEAKS_SLOT = 0 }; /* the one carma_store_cached slot, this lookup's */
    sqlite3_stmt *q = carma_store_cached(st, PEAKS_SLOT, sql);
    int rc = q ? SQLITE_OK : SQLITE_ERROR;
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(q, 1, uid);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_text(q, 2, argv_json, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(q, 3, batch);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(q, 4, gpus);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(q, 5, (sqlite3_int64)sig);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_text(q, 6, kind, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(q, 7, CARMAD_HISTORY_RUNS);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        int64_t n = sqlite3_column_int64(q, 2);
        if (n > 0) {
            *max_mib = sqlite3_column_double(q, 0);
            *min_mib = sqlite3_column_double(q, 1);
            *runs = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
        }
        rc = SQLITE_OK;
    }
    int ret = 0;
    if (rc != SQLITE_OK)
        ret = carma_err_set(err, -EIO, "reading the peaks of earlier runs: %s",
                            sqlite3_errmsg(db));
    if (q)
        sqlite3_reset(q); /* its read snapshot ends here */
    return ret;
}

/* The estimator's bound for the request's summary, the largest over the GPU kinds dev[0..n)
 * (each one's estimator facts; NULL ones and n 0: the defaults, whose unknown compute
 * capability counts as below 8.0), and its estimate; 0 when it has none. heads_used: the
 * request's heads sized some attention probabilities (est_heads_used: EST_HEADS_GIVEN).
 * unknown_math: a kind of unknown compute capability ran 16-bit attention through SDPA's
 * math kernel (est_opts.cc), which a known kind of 8.0 or newer would not. */
int carmad_model_bound(const struct carma_req_job *rj, const struct sim_gpu_kind *const *dev,
                       size_t n, struct carmad_model *out, struct carma_err *err)
{
    memset(out, 0, sizeof *out);
    double *est = &out->estimate_mib, *bound = &out->bound_mib;
    int *heads_used = &out->heads_used, *unknown_math = &out->unknown_math;
    if (!rj->summary || !rj->batch)
        return 0;
    struct est_layer *layers = calloc(EST_MAX_LAYERS, sizeof *layers);
    if (!layers)
        return carma_err_set(err, -ENOMEM, "out of memory");
    struct est_model m;
    est_model_init(&m, layers, EST_MAX_LAYERS);
    m.image_h = rj->image_h;
    m.image_w = rj->image_w;
    m.heads = rj->heads;
    m.shared_layer_runs = rj->shared_layer_runs;
    m.tie_head = (uint8_t)(rj->tied_head != 0);
    struct est_opts o = rj->train;
    o.batch = rj->batch;
    o.seq = rj->seq_len;
    o.gpus = rj->gpus; /* more than one: DistributedDataParallel, one process per GPU */
    struct est_result r;
    struct est_replay_work *work = malloc(sizeof *work);
    int rc = work ? est_model_prepare(&m, rj->summary, strlen(rj->summary), "summary", &o, err)
                  : carma_err_set(err, -ENOMEM, "out of memory");
    for (size_t k = 0; rc == 0 && k < (n ? n : 1); k++) {
        const struct sim_gpu_kind *kind = dev && n ? dev[k] : NULL;
        size_t seen = 0; /* two server kinds (names) of one estimator kind: sized once */
        while (seen < k && (dev ? dev[seen] : NULL) != kind)
            seen++;
        if (seen < k)
            continue;
        struct est_opts ok = o;
        sim_gpu_kind_est_opts(kind, &ok);
        ok.gpu_mib = 0; /* fitting is the scheduler's question, on each GPU */
        rc = est_compute(&m, est_coef_default(), &ok, work, &r, err);
        if (rc == 0 && !kind && r.math_attention && ok.precision != EST_PREC_FP32)
            *unknown_math = 1;
        if (rc == 0 && r.bound_mib > *bound) {
            *est = r.estimate_mib;
            *bound = r.bound_mib;
        }
    }
    if (rc == 0)
        *heads_used = est_heads_used(&m, o.attention) == EST_HEADS_GIVEN;
    free(work);
    free(layers);
    if (rc < 0) {
        *est = *bound = 0;
        return -EINVAL;
    }
    return 0;
}

/* out->basis: where out's bound came from (b: the model's or history's bound, before
 * the declared floor; lo, hi: history's peaks; heads_used: the job's heads sized the
 * estimate, and are named; unknown_math: carmad_model_bound's, named). */
static void describe(const struct carma_req_job *rj, struct carmad_bound *out, double lo, double hi,
                     uint64_t b, int heads_used, int unknown_math)
{
    char *p = out->basis;
    const size_t cap = sizeof out->basis;
    const struct est_opts *t = &rj->train;
    switch (out->source) {
    case CARMAD_BOUND_HISTORY:
        if (lo == hi)
            snprintf(p, cap, "history (%u earlier run%s, peak %.0f MiB)", out->runs,
                     out->runs == 1 ? "" : "s", hi);
        else
            snprintf(p, cap, "history (%u earlier runs, peaks %.0f to %.0f MiB)",
                     out->runs, lo, hi);
        return;
    case CARMAD_BOUND_ESTIMATOR: {
        char seq[24] = "", img[32] = "", ddp[32] = "", heads[24] = "", moe[40] = "", runs[64] = "";
        if (rj->seq_len)
            snprintf(seq, sizeof seq, ", seq %u", rj->seq_len);
        if (rj->image_h)
            snprintf(img, sizeof img, ", image %ux%u", rj->image_h, rj->image_w);
        if (rj->heads && heads_used)
            snprintf(heads, sizeof heads, ", %u heads", rj->heads);
        if (t->experts_per_token)
            snprintf(moe, sizeof moe, ", %u expert%s per token", t->experts_per_token,
                     t->experts_per_token == 1 ? "" : "s");
        if (rj->shared_layer_runs)
            snprintf(runs, sizeof runs, ", shared layer run %u times", rj->shared_layer_runs);
        if (rj->tied_head) {
            size_t l = strlen(runs);
            snprintf(runs + l, sizeof runs - l, ", output head tied");
        }
        if (rj->gpus > 1)
            snprintf(ddp, sizeof ddp, ", DDP on %u GPUs", rj->gpus);
        /* every option at its longest could pass cap: then cut, still closed */
        if (snprintf(p, cap, "estimator (batch %u%s%s%s%s%s, %s, %s%s%s%s%s%s; estimate %.0f MiB)",
                     rj->batch, seq, img, heads, moe, runs, est_optimizer_name(t->optimizer),
                     est_precision_name(t->precision),
                     t->attention == EST_ATTN_SHOWN  ? ""
                     : t->attention == EST_ATTN_SDPA ? ", sdpa attention"
                                                     : ", eager attention",
                     unknown_math ? " (math kernel: GPU kind unknown)" : "",
                     t->grad_checkpoint ? ", gradient checkpointing" : "",
                     t->grad_accum ? ", gradient accumulation" : "", ddp,
                     out->estimate_mib) >= (int)cap)
            memcpy(p + cap - 5, "...)", 5);
        return;
    }
    case CARMAD_BOUND_DECLARED:
        if (!rj->mem_mib)
            snprintf(p, cap, "none (no --mem, no --summary)");
        else if (b)
            snprintf(p, cap, "--mem (%llu MiB, not below the %s's %llu)",
                     (unsigned long long)rj->mem_mib, out->runs ? "history" : "estimator",
                     (unsigned long long)b);
        else
            snprintf(p, cap, "--mem (%llu MiB)",
                     (unsigned long long)rj->mem_mib);
        return;
    }
}

int carmad_job_bound(struct carma_store *st, const struct carma_req_job *rj,
                     const char *argv_json, uint32_t uid, const char *const *kinds,
                     const struct sim_gpu_kind *const *dev, size_t nkinds,
                     struct carmad_bound *out, struct carma_err *err)
{
    struct carmad_model m;
    int rc = carmad_model_bound(rj, dev, nkinds, &m, err);
    if (rc < 0) {
        memset(out, 0, sizeof *out);
        return rc;
    }
    return carmad_job_bound_with(st, rj, argv_json, uid, kinds, nkinds, &m, out, err);
}

int carmad_job_bound_with(struct carma_store *st, const struct carma_req_job *rj,
                          const char *argv_json, uint32_t uid, const char *const *kinds,
                          size_t nkinds, const struct carmad_model *m, struct carmad_bound *out,
                          struct carma_err *err)
{
    memset(out, 0, sizeof *out);
    const double mest = m->estimate_mib, mbound = m->bound_mib;
    const int heads_used = m->heads_used, unknown_math = m->unknown_math;
    out->source = mbound > 0 ? CARMAD_BOUND_ESTIMATOR : CARMAD_BOUND_DECLARED;
    out->hist_sig = carmad_job_signature(rj);
    double est = mest, bound = mbound;
    double hi = 0, lo = 0;
    /* The job may be placed on a GPU of any kind of the server, and one kind's peak says
     * nothing of another's (its CUDA context, cuBLAS workspaces): history's bound is the
     * largest over the kinds of est_history's answer over that kind's own peaks, where
     * each kind has some, else the model's bound where that kind has none. Without a
     * model, a kind without peaks leaves history out. */
    double hbound = 0, hest = 0;
    uint32_t hruns = 0;
    int missing = 0;
    for (size_t k = 0; k < nkinds; k++) {
        double khi = 0, klo = 0, kest, kbound;
        uint32_t runs = 0;
        struct carma_err herr;
        struct est_history_entry slots[4];
        struct est_history h;
        if (carmad_store_peaks(st, uid, argv_json, rj->batch, rj->gpus, out->hist_sig,
                               kinds[k], &khi, &klo, &runs, &herr) < 0 ||
            runs == 0 || est_history_init(&h, slots, 4) < 0 ||
            est_history_record(&h, out->hist_sig, khi) < 0 ||
            est_history_record(&h, out->hist_sig, klo) < 0 ||
            est_history_next(&h, out->hist_sig, mest, mbound, &kest, &kbound) != 1) {
            missing = 1;
            continue;
        }
        if (kbound > hbound) {
            hbound = kbound;
            hest = kest;
            hruns = runs;
            hi = khi;
            lo = klo;
        }
    }
    if (hbound > 0 && (!missing || (mbound > 0 && hbound > mbound))) {
        est = hest;
        bound = hbound;
        out->source = CARMAD_BOUND_HISTORY;
        out->runs = hruns;
    }
    out->estimate_mib = est;
    double b = ceil(bound);
    /* A bound beyond any GPU by far (a mistyped --seq-len or --batch) or not a number is
     * refused: read as no bound (0), it let the job be collocated with nothing held. A
     * bound merely above every GPU stays, and means a GPU to itself. */
    if (!(b >= 0) || b > CARMAD_BOUND_MAX_MIB)
        return carma_err_set(err, -EINVAL,
                             "the %s's bound for this job, %.4g MiB, is beyond any GPU (above "
                             "2^40 MiB): check its --batch, --seq-len and --image-size",
                             out->source == CARMAD_BOUND_HISTORY ? "history" : "estimator", bound);
    out->bound_mib = (uint64_t)b > rj->mem_mib ? (uint64_t)b : rj->mem_mib;
    if (rj->mem_mib && rj->mem_mib >= (uint64_t)b)
        out->source = CARMAD_BOUND_DECLARED;
    describe(rj, out, lo, hi, (uint64_t)b, heads_used, unknown_math);
    return 0;
}

long carmad_env_preallocates(const struct carma_req_job *rj)
{
    for (size_t k = 0; k < rj->nenv; k++) {
        const char *v = rj->env_val[k];
        /* TensorFlow (GetAllowGrowthValue) compares with strcmp: exactly "true" grows,
         * exactly "false" does not, anything else "could not be parsed" and falls back
         * to the session's default, no growth. */
        if (!strcmp(rj->env_key[k], CARMAD_ENV_TF_GROWTH) && strcmp(v, "true"))
            return (long)k;
        /* JAX (xla_client): preallocate unless the value is one of "false", "False",
         * "0" (an empty value is unset); some versions lower-case it first, so these
         * three are what every version takes as off. */
        if (!strcmp(rj->env_key[k], CARMAD_ENV_XLA_PREALLOCATE) && strcmp(v, "false") &&
            strcmp(v, "False") && strcmp(v, "0"))
            return (long)k;
    }
    return -1;
}

long carmad_bound_preallocating(const struct carma_req_job *rj, uint64_t whole,
                                uint64_t *bound_mib, char **basis)
{
    long pre = carmad_env_preallocates(rj);
    if (pre < 0 || *bound_mib >= whole)
        return pre;
    *bound_mib = whole; /* first: the basis is only its description */
    char *b = NULL;
    if (asprintf(&b, "whole GPU (%llu MiB: %s=%s in the job's environment maps the GPU's "
                     "memory at the start%s%s)",
                 (unsigned long long)whole, rj->env_key[pre],
                 carma_quote(rj->env_val[pre], 16).s, *basis ? "; else " : "",
                 *basis ? *basis : "") < 0)
        b = NULL;
    free(*basis);
    *basis = b;
    return pre;
}
