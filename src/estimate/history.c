/* Observed-peak history per job signature (history.h). */
#include "estimate/history.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= FNV_PRIME;
    }
    return h;
}

static uint64_t fnv_argv(uint64_t h, const char *const *argv, size_t argc)
{
    uint64_t n = argc;
    h = fnv(h, &n, sizeof n);
    for (size_t i = 0; i < argc; i++) {
        uint64_t len = argv[i] ? strlen(argv[i]) : 0;
        h = fnv(h, &len, sizeof len);
        if (len)
            h = fnv(h, argv[i], len);
    }
    return h;
}

/* A string that may be absent: NULL and "" differ, and so do {"ab","c"} and {"a","bc"}. */
static uint64_t fnv_str(uint64_t h, const char *s)
{
    uint64_t len = s ? strlen(s) + 1 : 0; /* 0: NULL */
    h = fnv(h, &len, sizeof len);
    return len > 1 ? fnv(h, s, len - 1) : h;
}

uint64_t est_signature(const char *const *argv, size_t argc, uint32_t batch)
{
    uint64_t h = fnv_argv(FNV_OFFSET, argv, argc);
    h = fnv(h, &batch, sizeof batch);
    return h ? h : 1;
}

uint64_t est_job_signature(const struct est_job_key *k)
{
    static const char tag[] = "carma job memory signature 5";
    uint64_t h = fnv(FNV_OFFSET, tag, sizeof tag);
    h = fnv_argv(h, k->argv, k->argc);
    /* Fixed-width fields, each hashed on its own (no struct padding in the hash). */
    uint32_t v[] = {k->batch, k->gpus, k->summary != NULL, k->seq, k->image_h, k->image_w,
                    k->heads, (uint32_t)k->optimizer, (uint32_t)k->precision,
                    (uint32_t)k->attention, k->grad_checkpoint != 0, k->grad_accum != 0,
                    k->experts_per_token};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        h = fnv(h, &v[i], sizeof v[i]);
    if (k->shared_layer_runs)
        h = fnv(h, &k->shared_layer_runs, sizeof k->shared_layer_runs);
    if (k->tied_head) {
        static const char tied[] = "tied head";
        h = fnv(h, tied, sizeof tied);
    }
    if (k->summary) {
        uint64_t len = k->summary_len;
        h = fnv(h, &len, sizeof len);
        h = fnv(h, k->summary, k->summary_len);
    }
    /* Where the job runs and how its allocator is set up (versions 3 to 5; 5 added the
     * experts per token above). */
    h = fnv_str(h, k->cwd);
    uint32_t pre = k->preallocates != 0;
    h = fnv(h, &pre, sizeof pre);
    uint64_t nenv = k->nenv;
    h = fnv(h, &nenv, sizeof nenv);
    for (size_t i = 0; i < k->nenv; i++) {
        h = fnv_str(h, k->env_key[i]);
        h = fnv_str(h, k->env_val[i]);
    }
    return h ? h : 1;
}

int est_history_init(struct est_history *h, struct est_history_entry *storage, size_t cap)
{
    if (cap < 2 || (cap & (cap - 1)) != 0 || !storage)
        return -EINVAL;
    memset(storage, 0, cap * sizeof *storage);
    h->slots = storage;
    h->cap = cap;
    h->n = 0;
    return 0;
}

/* Slot holding sig, or the empty slot where it would go. */
static size_t probe(const struct est_history *h, uint64_t sig)
{
    size_t mask = h->cap - 1, i = (size_t)(sig ^ (sig >> 29)) & mask;
    while (h->slots[i].sig != 0 && h->slots[i].sig != sig)
        i = (i + 1) & mask;
    return i;
}

int est_history_record(struct est_history *h, uint64_t sig, double peak_mib)
{
    if (!isfinite(peak_mib) || peak_mib <= 0 || sig == 0)
        return -EINVAL;
    size_t i = probe(h, sig);
    struct est_history_entry *e = &h->slots[i];
    if (e->sig == 0) {
        if ((h->n + 1) * 4 > h->cap * 3)
            return -ENOSPC;
        e->sig = sig;
        e->max_mib = e->min_mib = peak_mib;
        e->runs = 1;
        h->n++;
        return 0;
    }
    if (peak_mib > e->max_mib)
        e->max_mib = peak_mib;
    if (peak_mib < e->min_mib)
        e->min_mib = peak_mib;
    if (e->runs < UINT32_MAX)
        e->runs++;
    return 0;
}

const struct est_history_entry *est_history_find(const struct est_history *h, uint64_t sig)
{
    if (!h->cap || sig == 0)
        return NULL;
    size_t i = probe(h, sig);
    return h->slots[i].sig == sig ? &h->slots[i] : NULL;
}

int est_history_next(const struct est_history *h, uint64_t sig, double model_est,
                     double model_bound, double *est_mib, double *bound_mib)
{
    const struct est_history_entry *e = est_history_find(h, sig);
    if (!e) {
        *est_mib = model_est;
        *bound_mib = model_bound;
        return 0;
    }
    assert(e->max_mib >= e->min_mib);
    *est_mib = e->max_mib;
    *bound_mib = e->max_mib + (e->max_mib - e->min_mib) + 2.0;
    return 1;
}
