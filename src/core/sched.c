#include "core/sched.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/coloc.h"

/* Epochs of GPU changes remembered; a job scanned longer ago is scanned in full. */
#define SCHED_CHANGELOG 4096u

static void gpu_refresh(struct carma_sched *s, uint32_t gi);
static inline uint64_t kth_largest(struct carma_sched *s, uint16_t k);

void carma_sched_params_default(struct carma_sched_params *p)
{
    memset(p, 0, sizeof *p);
    p->free_margin_mib = 512;
    p->req_margin_mib = 2048;
    p->or_min_free_mib = 5120;
    p->grace_s = 30.0;
    p->gate_smact = 0.80f;
    p->gate_smocc = 0.45f;
    p->gate_drama = 0.40f;
    p->margin_mib = 512;
    p->backfill_depth = 256;
    p->max_jobs_per_gpu = 16;
    p->min_gain = 0.25f;
}

/* ---- queues: intrusive doubly linked lists over job indices ---- */

static void queue_init(struct carma_queue *q)
{
    q->head = q->tail = CARMA_NONE;
    q->len = 0;
}

static struct carma_queue *queue_of(struct carma_sched *s, const struct carma_job *j)
{
    return j->queue == CARMA_QUEUE_RECOVERY ? &s->recovery : &s->main;
}

static void queue_push(struct carma_sched *s, enum carma_queue_id id, uint32_t ji, double now)
{
    struct carma_job *j = &s->jobs[ji];
    assert(j->queue == CARMA_QUEUE_NONE);
    j->queue = (uint8_t)id;
    /* no scan of it stands: one from before it ran left its GPUs in gpu[], not those it
     * could use then (auto_choose) */
    j->scan_epoch = 0;
    struct carma_queue *q = queue_of(s, j);
    j->prev = q->tail;
    j->next = CARMA_NONE;
    if (q->tail != CARMA_NONE)
        s->jobs[q->tail].next = ji;
    else
        q->head = ji;
    q->tail = ji;
    q->len++;
    j->queued_s = now;
    j->state = CARMA_JOB_QUEUED;
}

static void queue_remove(struct carma_sched *s, uint32_t ji)
{
    struct carma_job *j = &s->jobs[ji];
    assert(j->queue != CARMA_QUEUE_NONE);
    struct carma_queue *q = queue_of(s, j);
    if (j->prev != CARMA_NONE)
        s->jobs[j->prev].next = j->next;
    else
        q->head = j->next;
    if (j->next != CARMA_NONE)
        s->jobs[j->next].prev = j->prev;
    else
        q->tail = j->prev;
    q->len--;
    j->prev = j->next = CARMA_NONE;
    j->queue = CARMA_QUEUE_NONE;
}

/* ---- life cycle ---- */

int carma_sched_init(struct carma_sched *s, struct carma_job *jobs, struct carma_gpu *gpus,
                     size_t ngpus, const struct carma_policy *policy,
                     const struct carma_sched_params *params)
{
    memset(s, 0, sizeof *s);
    if (!policy || ngpus == 0 || ngpus > UINT16_MAX)
        return -EINVAL;
    s->jobs = jobs;
    s->gpus = gpus;
    s->ngpus = ngpus;
    s->policy = policy;
    if (params)
        s->p = *params;
    else
        carma_sched_params_default(&s->p);
    queue_init(&s->main);
    queue_init(&s->recovery);
    s->epoch = SCHED_CHANGELOG; /* jobs start at scan_epoch 0: a full scan first */
    s->holder = CARMA_NONE;
    s->scratch = calloc(ngpus, sizeof *s->scratch);
    s->slot = calloc(ngpus, sizeof *s->slot);
    s->first = calloc((ngpus + 63) / 64, sizeof *s->first);
    s->bucket_bits = calloc(CARMA_SCHED_BUCKETS * ((ngpus + 63) / 64), sizeof *s->bucket_bits);
    s->bucket_of = malloc(ngpus);
    s->changelog = calloc(SCHED_CHANGELOG, sizeof *s->changelog);
    s->seen = calloc(ngpus, sizeof *s->seen);
    s->live_total = calloc(ngpus, sizeof *s->live_total);
    s->by_size = calloc(ngpus, sizeof *s->by_size);
    s->backfill = calloc(ngpus, sizeof *s->backfill);
    /* the best GPUs by shape pay where a list is a small part of the GPUs: below, a scan
     * of every GPU costs little more than keeping one */
    int big = ngpus >= CARMA_SCHED_TOP_MIN_GPUS;
    if (big) {
        s->top = calloc(CARMA_SCHED_TOPS, sizeof *s->top);
        for (s->rsize = 1; s->rsize < ngpus; s->rsize *= 2)
            ;
        for (int k = 0; k < 2; k++) {
            s->rtree[k] = malloc(2 * s->rsize * sizeof *s->rtree[k]);
            s->rkey[k] = calloc(ngpus, sizeof *s->rkey[k]);
            if (s->rtree[k])
                memset(s->rtree[k], 0xff, 2 * s->rsize * sizeof *s->rtree[k]); /* CARMA_NONE */
        }
    }
    if ((big && (!s->top || !s->rtree[0] || !s->rtree[1] || !s->rkey[0] || !s->rkey[1])) ||
        !s->scratch || !s->slot || !s->first || !s->bucket_bits || !s->bucket_of || !s->changelog ||
        !s->seen || !s->live_total || !s->by_size || !s->backfill) {
        carma_sched_free(s);
        return -ENOMEM;
    }
    memset(s->bucket_of, CARMA_SCHED_NO_BUCKET, ngpus);
    for (size_t gi = 0; gi < ngpus; gi++)
        gpu_refresh(s, (uint32_t)gi);
    for (size_t gi = 0; gi < ngpus; gi++)
        if ((uint32_t)gpus[gi].island + 1 > s->nislands)
            s->nislands = (uint32_t)gpus[gi].island + 1;
    if (s->nislands > 1) { /* a counting sort: island, then index */
        s->by_island = malloc(ngpus * sizeof *s->by_island);
        s->island_at = calloc((size_t)s->nislands + 1, sizeof *s->island_at);
        uint32_t *next = malloc(s->nislands * sizeof *next); /* each island's next place */
        if (!s->by_island || !s->island_at || !next) {
            free(next);
            carma_sched_free(s);
            return -ENOMEM;
        }
        for (size_t gi = 0; gi < ngpus; gi++)
            s->island_at[gpus[gi].island + 1]++;
        for (uint32_t i = 0; i < s->nislands; i++)
            s->island_at[i + 1] += s->island_at[i];
        memcpy(next, s->island_at, s->nislands * sizeof *next);
        for (size_t gi = 0; gi < ngpus; gi++)
            s->by_island[next[gpus[gi].island]++] = (uint32_t)gi;
        free(next);
    }
    return 0;
}

void carma_sched_free(struct carma_sched *s)
{
    free(s->scratch);
    free(s->top);
    s->top = NULL;
    for (int k = 0; k < 2; k++) {
        free(s->rtree[k]);
        free(s->rkey[k]);
        s->rtree[k] = NULL;
        s->rkey[k] = NULL;
    }
    free(s->slot);
    free(s->first);
    free(s->bucket_bits);
    free(s->bucket_of);
    free(s->changelog);
    free(s->seen);
    free(s->live_total);
    free(s->by_size);
    free(s->backfill);
    free(s->by_island);
    free(s->island_at);
    s->by_island = s->island_at = NULL;
    s->backfill = NULL;
    s->seen = NULL;
    s->live_total = s->by_size = NULL;
    s->scratch = NULL;
    s->slot = NULL;
    s->first = NULL;
    s->bucket_bits = NULL;
    s->bucket_of = NULL;
    s->changelog = NULL;
}

void carma_sched_submit(struct carma_sched *s, uint32_t j, double now)
{
    s->jobs[j].busy = carma_coloc_busy(s->jobs[j].smact);
    queue_push(s, CARMA_QUEUE_MAIN, j, now);
}

static uint32_t millionths(float x);

void carma_sched_set_profile(struct carma_sched *s, uint32_t ji, float smact, float smocc,
                             float drama)
{
    struct carma_job *j = &s->jobs[ji];
    j->smact = smact;
    j->smocc = smocc;
    j->drama = drama;
    j->busy = carma_coloc_busy(smact);
    int backfilled = j->backfill_gen && j->backfill_gen == s->reserve_gen;
    float sm = smact < 0 ? 1.0f : smact;
    uint32_t bs = millionths(sm), bb = millionths(j->busy);
    for (uint16_t k = 0; k < j->nplaced; k++) {
        uint32_t gi = j->gpu[k];
        struct carma_gpu *g = &s->gpus[gi];
        assert(g->njobs == 1);
        g->prof_smact = sm;
        g->prof_busy = j->busy;
        g->nunprofiled = smact < 0;
        /* a job alone on a reserved GPU may have been backfilled there: the books follow
         * its profile, so that the holder's admission reads what its own test will */
        if (backfilled && (s->slot[gi].flags & CARMA_SLOT_RESERVED)) {
            struct carma_sched_backfill *b = &s->backfill[gi];
            b->smact = b->smact - j->backfill_smact + bs;
            b->busy = b->busy - j->backfill_busy + bb;
        }
        carma_sched_gpu_changed(s, gi);
    }
    if (backfilled) {
        j->backfill_smact = bs;
        j->backfill_busy = bb;
    }
}

static void auto_unreserve(struct carma_sched *s);

int carma_sched_dequeue(struct carma_sched *s, uint32_t j)
{
    if (s->jobs[j].queue == CARMA_QUEUE_NONE)
        return -ENOENT;
    queue_remove(s, j);
    /* A cancelled holder's reservation goes with it: carmad reuses the job's index for
     * the next submission, which must not inherit what was held for another job. */
    if (s->holder == j)
        auto_unreserve(s);
    return 0;
}

/* Whether key x goes before key y: ascending, NaN after every number (a total order, so
 * that what carma_sched_order merges stays in order and its passes end). */
static inline int order_before(double x, double y)
{
    return x < y || (isnan(y) && !isnan(x));
}

/* A run of the queue in key order, cut off the list: its first and last jobs, length. */
struct order_run {
    uint32_t head, last, len;
};

/* Cuts the run (keys not decreasing) that starts at a off the list into *r; returns the
 * job after it (CARMA_NONE at the end). */
static uint32_t order_cut_run(struct carma_job *jobs, const double *key, uint32_t a,
                              struct order_run *r)
{
    uint32_t x = a, n = 1;
    while (jobs[x].next != CARMA_NONE && !order_before(key[jobs[x].next], key[x])) {
        x = jobs[x].next;
        n++;
    }
    uint32_t rest = jobs[x].next;
    jobs[x].next = CARMA_NONE;
    *r = (struct order_run){.head = a, .last = x, .len = n};
    return rest;
}

/* Merges run b, which came after run a in the queue, into a: by key, a's first on ties
 * (the merge of a stable sort), the back links too (a run's own are whole: it was a
 * stretch of the queue, or a merge). Stops once either is used up: the rest of the other
 * is linked whole. */
static void order_merge(struct carma_job *jobs, const double *key, struct order_run *a,
                        const struct order_run *b)
{
    uint32_t x = a->head, y = b->head, head = CARMA_NONE, *tail = &head, prev = CARMA_NONE;
    while (x != CARMA_NONE && y != CARMA_NONE) {
        uint32_t *take = order_before(key[y], key[x]) ? &y : &x;
        *tail = *take;
        jobs[*take].prev = prev;
        prev = *take;
        tail = &jobs[*take].next;
        *take = jobs[*take].next;
    }
    *tail = x != CARMA_NONE ? x : y;
    jobs[*tail].prev = prev;
    a->last = x != CARMA_NONE ? a->last : b->last;
    a->head = head;
    a->len += b->len;
}

void carma_sched_order(struct carma_sched *s, const double *key)
{
    struct carma_queue *q = &s->main;
    if (q->len < 2)
        return;
    /* A natural merge sort of the list, without memory (the core allocates nothing here):
     * the runs already in key order are taken from the head, and merged on a stack whose
     * runs at least double in length downwards (at most 33 for 2^32 jobs), then all of
     * them from the top. Before each of carmad's steps the queue is mostly in order (but
     * for the jobs submitted since, or a user whose use passed another's): a queue in order
     * costs one walk and is left as it is; one run and k short ones cost a few walks and
     * O(k log k). (A bottom-up sort by widths 1, 2, 4... walked the whole list about
     * 4 log2 n times, whatever its order: a third of a second for 100 000 queued jobs, at
     * every step.) */
    struct order_run st[40];
    size_t n = 0;
    uint32_t rest = q->head;
    while (rest != CARMA_NONE) {
        struct order_run r;
        rest = order_cut_run(s->jobs, key, rest, &r);
        if (n == 0 && rest == CARMA_NONE)
            return; /* in order already: nothing was changed */
        assert(n < sizeof st / sizeof *st);
        st[n++] = r;
        while (n >= 2 && st[n - 2].len <= 2 * (uint64_t)st[n - 1].len) {
            order_merge(s->jobs, key, &st[n - 2], &st[n - 1]);
            n--;
        }
    }
    for (; n >= 2; n--)
        order_merge(s->jobs, key, &st[n - 2], &st[n - 1]);
    assert(st[0].len == q->len && s->jobs[st[0].head].prev == CARMA_NONE);
    q->head = st[0].head;
    q->tail = st[0].last;
}

uint32_t carma_sched_position(const struct carma_sched *s, uint32_t j)
{
    if (s->jobs[j].queue == CARMA_QUEUE_NONE)
        return 0;
    uint32_t pos = s->jobs[j].queue == CARMA_QUEUE_MAIN ? s->recovery.len : 0;
    for (uint32_t k = j; k != CARMA_NONE; k = s->jobs[k].prev)
        pos++;
    return pos;
}

int carma_sched_mps_limits(const struct carma_sched *s)
{
    return s->p.mps_cap && s->policy->kind != CARMA_POLICY_REFERENCE;
}

/* Whether job j, running on GPU g, runs there without the MPS memory cap that every
 * other client of g has (carma_sched_mps_cap_mib): an exclusive job, whose need is not
 * known (it ran out under its cap, or its peak taught nothing). It was given a GPU of its
 * own for that, and it keeps it: a co-runner placed beside its bound would be at the
 * mercy of what it takes. */
static int runs_uncapped(const struct carma_sched *s, const struct carma_job *j,
                         const struct carma_gpu *g)
{
    return carma_sched_mps_limits(s) && j->exclusive && g->sharing == CARMA_SHARING_MPS;
}

/* Memory a job holds on each of its GPUs while it runs. */
static uint64_t job_hold_mib(const struct carma_job *j)
{
    uint64_t m = j->bound_mib;
    if (j->peak_mib > m)
        m = j->peak_mib;
    if (j->mem_mib > m)
        m = j->mem_mib;
    return m;
}

/* Puts running job ji on its n GPUs: the view's committed memory, counts and profile
 * sums. Shared by placement and re-adoption. */
static void hold(struct carma_sched *s, uint32_t ji, const uint16_t *gpu, uint16_t n,
                 double start)
{
    struct carma_job *j = &s->jobs[ji];
    j->held_mib = job_hold_mib(j);
    float sm = j->smact < 0 ? 1.0f : j->smact;
    for (uint16_t k = 0; k < n; k++) {
        struct carma_gpu *g = &s->gpus[gpu[k]];
        g->njobs++;
        g->committed_mib += j->held_mib;
        if (start > g->last_launch_s) {
            g->last_launch_s = start;
            g->last_launch_job = ji;
            g->launch_seen = 0;
        }
        g->prof_smact += sm;
        g->prof_busy += j->busy;
        g->gpu_weight += n;
        g->nunprofiled += j->smact < 0;
        g->nuncapped += runs_uncapped(s, j, g);
        j->gpu[k] = gpu[k];
        carma_sched_gpu_changed(s, gpu[k]);
    }
    j->nplaced = n;
    j->start_s = start;
    j->state = CARMA_JOB_RUNNING;
}

static void place(struct carma_sched *s, uint32_t ji, const uint32_t *gpu, uint16_t n, double now)
{
    uint16_t g16[CARMA_JOB_MAX_GPUS];
    for (uint16_t k = 0; k < n; k++)
        g16[k] = (uint16_t)gpu[k];
    queue_remove(s, ji);
    hold(s, ji, g16, n, now);
    s->jobs[ji].attempts++;
    s->placements++;
}

void carma_sched_adopt(struct carma_sched *s, uint32_t j, const uint16_t *gpu, uint16_t n,
                       double start, double seen)
{
    assert(s->jobs[j].queue == CARMA_QUEUE_NONE && n <= CARMA_JOB_MAX_GPUS);
    s->jobs[j].busy = carma_coloc_busy(s->jobs[j].smact);
    hold(s, j, gpu, n, start);
    /* seen before: the grace runs from then (hold left launch_seen 0: the next sighting
     * moves it, as for a launch) */
    for (uint16_t k = 0; seen >= 0 && k < n; k++) {
        struct carma_gpu *g = &s->gpus[gpu[k]];
        if (g->last_launch_job != j)
            continue;
        g->launch_seen = 1;
        if (seen > g->last_launch_s)
            g->last_launch_s = seen;
    }
}

void carma_sched_job_seen(struct carma_sched *s, uint32_t j, uint32_t gi, double now)
{
    assert(gi < s->ngpus);
    struct carma_gpu *g = &s->gpus[gi];
    if (g->last_launch_job != j || g->launch_seen)
        return;
    g->launch_seen = 1;
    if (now > g->last_launch_s)
        g->last_launch_s = now;
}

void carma_sched_submit_recovery(struct carma_sched *s, uint32_t j, double now)
{
    s->jobs[j].busy = carma_coloc_busy(s->jobs[j].smact);
    queue_push(s, CARMA_QUEUE_RECOVERY, j, now);
}

static void release(struct carma_sched *s, struct carma_job *j)
{
    float busy = j->busy;
    float sm = j->smact < 0 ? 1.0f : j->smact;
    int backfilled = j->backfill_gen && j->backfill_gen == s->reserve_gen;
    j->backfill_gen = 0;
    for (uint16_t k = 0; k < j->nplaced; k++) {
        struct carma_gpu *g = &s->gpus[j->gpu[k]];
        if (backfilled && (s->slot[j->gpu[k]].flags & CARMA_SLOT_RESERVED)) {
            /* what auto_backfilled added, whatever the job's profile is now */
            struct carma_sched_backfill *b = &s->backfill[j->gpu[k]];
            uint32_t bs = j->backfill_smact, bb = j->backfill_busy;
            assert(b->mib >= j->held_mib && b->smact >= bs && b->busy >= bb && b->njobs > 0 &&
                   b->weight >= j->nplaced);
            b->mib -= j->held_mib;
            b->smact -= bs;
            b->busy -= bb;
            b->njobs--;
            b->weight -= j->nplaced;
        }
        assert(g->njobs > 0 && g->committed_mib >= j->held_mib);
        g->njobs--;
        g->committed_mib -= j->held_mib;
        g->gpu_weight -= j->nplaced;
        g->nunprofiled -= j->smact < 0;
        assert(g->nuncapped >= (uint32_t)runs_uncapped(s, j, g));
        g->nuncapped -= runs_uncapped(s, j, g);
        /* CARMA's grace lasts 30 s "or until the job died": a job gone early opens the
         * GPU (a GPU in grace took no other job since, so none is left in its grace). */
        if (g->last_launch_job == (uint32_t)(j - s->jobs)) {
            g->last_launch_s = -1.0;
            g->last_launch_job = CARMA_NONE;
            g->launch_seen = 0;
        }
        if (g->njobs == 0) {
            g->prof_smact = g->prof_busy = 0; /* no drift once empty */
        } else {
            g->prof_smact -= sm;
            g->prof_busy -= busy;
        }
        carma_sched_gpu_changed(s, j->gpu[k]);
    }
    j->nplaced = 0;
    j->held_mib = 0;
}

uint64_t carma_sched_mps_cap_mib(const struct carma_sched *s, const struct carma_job *j)
{
    return carma_sched_mps_limits(s) && j->held_mib && !j->exclusive ? j->held_mib + s->p.margin_mib
                                                                     : 0;
}

/* Whether running job j is capped below the memory of one of its GPUs (MPS). */
static int mps_capped(const struct carma_sched *s, const struct carma_job *j)
{
    uint64_t cap = carma_sched_mps_cap_mib(s, j);
    for (uint16_t k = 0; cap && k < j->nplaced; k++) {
        const struct carma_gpu *g = &s->gpus[j->gpu[k]];
        if (g->sharing == CARMA_SHARING_MPS && cap < g->mem_total_mib)
            return 1;
    }
    return 0;
}

/* The smallest memory among job j's GPUs when it is alone on all of them (no other
 * carma job, no foreign process) and could use all of it, else 0: a crash under an MPS
 * cap below the GPU's memory says nothing about the GPU. */
static uint64_t alone_min_total(const struct carma_sched *s, const struct carma_job *j)
{
    uint64_t m = UINT64_MAX;
    if (mps_capped(s, j))
        return 0;
    for (uint16_t k = 0; k < j->nplaced; k++) {
        const struct carma_gpu *g = &s->gpus[j->gpu[k]];
        if (g->njobs != 1 || g->nforeign)
            return 0;
        if (g->mem_total_mib < m)
            m = g->mem_total_mib;
    }
    return j->nplaced ? m : 0;
}

int carma_sched_finish(struct carma_sched *s, uint32_t ji, enum carma_outcome outcome,
                       uint64_t peak_mib, double now)
{
    struct carma_job *j = &s->jobs[ji];
    assert(j->state == CARMA_JOB_RUNNING);
    uint64_t alone_mib = outcome == CARMA_OUTCOME_OOM ? alone_min_total(s, j) : 0;
    int capped = outcome == CARMA_OUTCOME_OOM && mps_capped(s, j);
    release(s, j);
    uint64_t old_bound = j->bound_mib;
    if (peak_mib > j->peak_mib)
        j->peak_mib = peak_mib;
    switch (outcome) {
    case CARMA_OUTCOME_SUCCEEDED: j->state = CARMA_JOB_SUCCEEDED; return 0;
    case CARMA_OUTCOME_FAILED: j->state = CARMA_JOB_FAILED; return 0;
    case CARMA_OUTCOME_CANCELLED: j->state = CARMA_JOB_CANCELLED; return 0;
    case CARMA_OUTCOME_LOST: j->state = CARMA_JOB_LOST; return 0;
    case CARMA_OUTCOME_FAULT:
        queue_push(s, CARMA_QUEUE_RECOVERY, ji, now);
        return 1;
    case CARMA_OUTCOME_GPU_ERROR:
        /* not its own doing: its bound stands, it goes first again */
        if (j->max_attempts && j->attempts >= j->max_attempts) {
            j->state = CARMA_JOB_FAILED;
            return 0;
        }
        queue_push(s, CARMA_QUEUE_RECOVERY, ji, now);
        return 1;
    case CARMA_OUTCOME_OOM:
        if (j->max_attempts && j->attempts >= j->max_attempts) {
            j->state = CARMA_JOB_OOM;
            return 0;
        }
        /* It needed more than it reached: the peak is a lower bound of the need. Alone on
         * its GPUs it reached their whole memory (the sampled peak misses the allocation
         * that failed): it needs a larger GPU, or, where none is, a GPU of its own. When
         * that teaches nothing new, only a GPU of its own is safe. Under its MPS cap it
         * could not pass the cap, whatever it needs (the sampled peak stops below it): a
         * GPU of its own, uncapped, shows what it needs. */
        uint64_t need = j->peak_mib;
        if (alone_mib) {
            if (alone_mib > j->peak_mib)
                j->peak_mib = alone_mib;
            need = alone_mib + 1;
        }
        if (need > old_bound)
            j->bound_mib = need;
        if (need <= old_bound || capped)
            j->exclusive = CARMA_ALONE_OOM;
        if (j->mem_mib && j->bound_mib > j->mem_mib)
            j->mem_mib = j->bound_mib;
        queue_push(s, CARMA_QUEUE_RECOVERY, ji, now);
        return 1;
    }
    return 0;
}

int carma_sched_run_alone(struct carma_sched *s, uint32_t ji, enum carma_alone why)
{
    if (s->jobs[ji].state != CARMA_JOB_QUEUED || why == CARMA_ALONE_NO || why >= CARMA_ALONE_COUNT)
        return -EINVAL;
    s->jobs[ji].exclusive = (uint8_t)why;
    s->jobs[ji].scan_epoch = 0; /* a scan as a shared job stands no more */
    return 0;
}

/* ---- CARMA's reference step (DESIGN.md §9) ---- */

/* Whether GPU g is in the grace of its last launch at `now`: CARMA frees a GPU once
 * `now - seen > 30` (server.py's update(), seen: its process first on the GPU; the
 * simulator's launch), so at exactly 30 s it is still in it. */
static int in_grace(const struct carma_sched *s, const struct carma_gpu *g, double now)
{
    return g->last_launch_s >= 0 && now - g->last_launch_s <= s->p.grace_s;
}

/* Whether GPU g's activity window is not full yet, under a policy that reads it (its gate
 * or LUG): CARMA's analyze_Gmetrics waits for a full window, so such a policy collocates
 * on no GPU before (carmad's first window after its start, or after a GPU's samples were cleared;
 * in the simulator every window is full by the end of the first grace). An empty window (a backend
 * that gives no activity at all) never fills: no collocation there, as in CARMA. */
static int window_filling(const struct carma_sched *s, const struct carma_gpu *g)
{
    return (s->policy->flags & CARMA_POLICY_NEEDS_WINDOW) && g->smact.len < g->smact.cap;
}

static int64_t ref_free_mib(const struct carma_sched *s, const struct carma_gpu *g)
{
    return (int64_t)g->mem_total_mib - (int64_t)g->mem_used_mib - (int64_t)s->p.free_margin_mib;
}

/* Inlined into the step as when it had no other caller (carma_sched_why reads it too). */
__attribute__((always_inline)) static inline int ref_risky(const struct carma_sched *s,
                                                           const struct carma_gpu *g)
{
    float sm = carma_window_risk(&g->smact);
    if (sm < 0 || sm < s->p.gate_smact)
        return 0;
    float oc = carma_window_risk(&g->smocc);
    float dr = carma_window_risk(&g->drama);
    return oc >= s->p.gate_smocc || dr >= s->p.gate_drama;
}

static int ref_passes_gate(const struct carma_sched *s, const struct carma_job *j,
                           const struct carma_gpu *g)
{
    const struct carma_policy *p = s->policy;
    if (!p->gated)
        return 1;
    int64_t free_mib = ref_free_mib(s, g);
    if (p->req == CARMA_REQ_NONE) {
        if (free_mib < (int64_t)s->p.or_min_free_mib)
            return 0;
    } else if (free_mib < (int64_t)(j->mem_mib + s->p.req_margin_mib)) {
        return 0;
    }
    return !ref_risky(s, g);
}

/* Sort key for the reference orders: smaller first. */
static double ref_key(const struct carma_sched *s, uint32_t gi)
{
    const struct carma_gpu *g = &s->gpus[gi];
    switch ((enum carma_order)s->policy->order) {
    case CARMA_ORDER_BF: return (double)ref_free_mib(s, g);
    case CARMA_ORDER_MAGM: return -(double)ref_free_mib(s, g);
    case CARMA_ORDER_LUG:
        return carma_window_risk(&g->smact); /* full: window_filling */
    case CARMA_ORDER_RR:
        return (double)((gi + s->ngpus - s->rr_next % s->ngpus) % s->ngpus);
    default: return (double)gi;
    }
}

/* Stable insertion sort of candidate GPU indices by key (ties keep index order). */
static void ref_sort(const struct carma_sched *s, uint32_t *c, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        uint32_t x = c[i];
        double kx = ref_key(s, x);
        size_t k = i;
        while (k > 0 && ref_key(s, c[k - 1]) > kx) {
            c[k] = c[k - 1];
            k--;
        }
        c[k] = x;
    }
}

/* Such a job waits for its GPUs without holding back the jobs behind it: on a server
 * that lost a GPU, a job asking for all of them would otherwise stop every queue for
 * good. */
static inline int beyond_service(struct carma_sched *s, const struct carma_job *j)
{
    return kth_largest(s, j->gpus) == 0;
}

int carma_sched_beyond_service(struct carma_sched *s, uint32_t j)
{
    return beyond_service(s, &s->jobs[j]);
}

/* The head of q, past jobs beyond the GPUs in service. */
static uint32_t ref_head(struct carma_sched *s, const struct carma_queue *q)
{
    uint32_t ji = q->head;
    while (ji != CARMA_NONE && beyond_service(s, &s->jobs[ji]))
        ji = s->jobs[ji].next;
    return ji;
}

static size_t step_reference(struct carma_sched *s, double now, struct carma_placement *out,
                             size_t cap)
{
    if (cap == 0)
        return 0;
    uint32_t ji = ref_head(s, &s->recovery);
    int recovery = ji != CARMA_NONE;
    if (!recovery)
        ji = ref_head(s, &s->main);
    if (ji == CARMA_NONE)
        return 0;
    struct carma_job *j = &s->jobs[ji];
    uint32_t *c = s->scratch;
    size_t n = 0;
    /* Every policy first uses idle GPUs (no process at all), in index order. A job whose
     * observed peak reached a GPU's memory (it crashed alone there, or its peak sampled
     * at a crash passed it) skips GPUs no larger while enough larger ones are in service,
     * or else GPUs smaller than its peak while enough GPUs are that large (a peak equal
     * to the memory of the only GPUs that hold it, seen on a GPU too small): a mixed
     * server would otherwise rerun it on the small one until it is given up, or forever
     * with no attempt limit. */
    uint64_t reached = 0;
    if (j->peak_mib) {
        uint64_t kth = kth_largest(s, j->gpus);
        reached = kth > j->peak_mib ? j->peak_mib : kth == j->peak_mib ? j->peak_mib - 1 : 0;
    }
    for (size_t gi = 0; gi < s->ngpus && n < j->gpus; gi++)
        if (!s->gpus[gi].drained && carma_gpu_idle(&s->gpus[gi]) &&
            s->gpus[gi].mem_total_mib > reached)
            c[n++] = (uint32_t)gi;
    if (n < j->gpus) {
        /* Collocate only from the main queue, with the recovery queue empty. */
        if (recovery || j->exclusive || s->policy->order == CARMA_ORDER_NONE)
            return 0;
        n = 0;
        for (size_t gi = 0; gi < s->ngpus; gi++) {
            const struct carma_gpu *g = &s->gpus[gi];
            if (g->drained || g->nuncapped)
                continue;
            if (in_grace(s, g, now) || window_filling(s, g))
                continue;
            if (ref_passes_gate(s, j, g))
                c[n++] = (uint32_t)gi;
        }
        if (n < j->gpus)
            return 0;
        ref_sort(s, c, n);
        if (s->policy->order == CARMA_ORDER_RR)
            s->rr_next = (c[j->gpus - 1] + 1) % (uint32_t)s->ngpus;
    }
    place(s, ji, c, j->gpus, now);
    out[0].job = ji;
    return 1;
}

/* ---- auto ---- */

/* Memory that processes carma did not start use on g now. */
static int64_t foreign_mib(const struct carma_gpu *g)
{
    int64_t foreign = (int64_t)g->mem_used_mib - (int64_t)g->carma_used_mib;
    return foreign > 0 ? foreign : 0;
}

/* Memory a new job may take on g: capacity less every resident job's hold, less what
 * resident jobs use beyond their holds (a job past its bound: DESIGN.md 3 asks free now
 * less what ramping jobs will still take), less what processes carma did not start use
 * now, less the margin. Jobs still ramping are covered by their hold (the bound), not by
 * what they have allocated so far. */
static int64_t auto_avail_mib(const struct carma_sched *s, const struct carma_gpu *g)
{
    return (int64_t)g->mem_total_mib - (int64_t)g->committed_mib - (int64_t)g->over_mib -
           foreign_mib(g) - (int64_t)s->p.margin_mib;
}

/* The rate of n jobs on a GPU (carma_coloc_rate), corrected by what carmad learnt from
 * observed co-runs and capped at the model's rate of jobs that fit in the SMs together
 * (carma_sched_set_coloc). */
static inline float sched_rate(const struct carma_sched *s, unsigned sharing, unsigned kind,
                               uint32_t n, float sum_smact, float sum_busy)
{
    float r = carma_coloc_rate(sharing, n, sum_smact, sum_busy);
    if (kind >= s->ncoloc || n < 2)
        return r;
    float cap = carma_coloc_rate(sharing, n, 0.0f, 0.0f);
    float c = r * carma_coloc_factor(&s->coloc[kind], sharing, sum_smact);
    return c < cap ? c : cap;
}

/* Whether the rate of n jobs on a GPU may rise once one more joins them, and must be held
 * to theirs now: the model's rate never rises with a job more; a correction learnt at
 * another sum of SMACT may, and a GPU whose jobs are predicted slower now would gain more
 * than a whole GPU by taking one more (outbidding an idle GPU, which auto's scan shortcut
 * does not look past). */
static inline int join_may_speed(const struct carma_sched *s, unsigned kind, uint32_t n)
{
    return kind < s->ncoloc && n >= 2;
}

/* The rate of n + 1 jobs on a GPU once one (sm, busy) joins the n there (sched_rate), no
 * more than theirs now where join_may_speed. */
static inline float sched_join_rate(const struct carma_sched *s, unsigned sharing, unsigned kind,
                                    uint32_t n, float sum_smact, float sum_busy, float sm,
                                    float busy)
{
    float r = sched_rate(s, sharing, kind, n + 1, sum_smact + sm, sum_busy + busy);
    if (join_may_speed(s, kind, n)) {
        float now = sched_rate(s, sharing, kind, n, sum_smact, sum_busy);
        r = r < now ? r : now;
    }
    return r;
}

/* Whether GPU a (or CARMA_NONE) goes before GPU b in s->rtree[k]'s order. */
static inline int rtree_before(const struct carma_sched *s, int k, uint32_t a, uint32_t b)
{
    if (a == CARMA_NONE || b == CARMA_NONE)
        return a != CARMA_NONE;
    int64_t x = s->rkey[k][a], y = s->rkey[k][b];
    return x > y || (x == y && a < b);
}

/* Recomputes the winners above GPU gi's leaf in s->rtree[k]. */
static void rtree_fix(struct carma_sched *s, int k, uint32_t gi)
{
    uint32_t *t = s->rtree[k];
    for (size_t i = (s->rsize + gi) / 2; i >= 1; i /= 2)
        t[i] = rtree_before(s, k, t[2 * i], t[2 * i + 1]) ? t[2 * i] : t[2 * i + 1];
}

static int64_t foreign_mib(const struct carma_gpu *g);

/* Recomputes the cached facts of GPU gi after a change. */
static void gpu_refresh(struct carma_sched *s, uint32_t gi)
{
    const struct carma_gpu *g = &s->gpus[gi];
    uint64_t live = g->drained ? 0 : g->mem_total_mib;
    if (live != s->live_total[gi]) { /* rare: a GPU seen first, or lost */
        s->live_total[gi] = live;
        s->sizes_stale = 1;
        /* what a bound past the GPUs is capped to may move: every waiting job's next
         * scan is a full one (auto_choose) */
        s->epoch += SCHED_CHANGELOG;
    }
    if (s->rtree[0])
        for (int k = 0; k < 2; k++) {
            s->rkey[k][gi] = (int64_t)g->mem_total_mib - (int64_t)g->committed_mib -
                             (k == 0 ? foreign_mib(g) : 0);
            s->rtree[k][s->rsize + gi] = g->drained ? CARMA_NONE : gi;
            rtree_fix(s, k, gi);
        }
    struct carma_sched_slot *sl = &s->slot[gi];
    sl->avail = auto_avail_mib(s, g);
    sl->tput = g->njobs ? (float)g->gpu_weight * sched_rate(s, g->sharing, g->kind, g->njobs,
                                                            g->prof_smact, g->prof_busy)
                        : 0.0f;
    sl->prof_smact = g->prof_smact;
    sl->prof_busy = g->prof_busy;
    sl->njobs = g->njobs;
    sl->gpu_weight = g->gpu_weight;
    sl->sharing = g->sharing;
    sl->kind = g->kind;
    unsigned idle = !g->drained && carma_gpu_idle(g);
    unsigned vacant = !g->drained && g->njobs == 0;
    s->vacant += vacant;
    s->vacant -= (sl->flags & CARMA_SLOT_VACANT) != 0;
    sl->flags = (uint8_t)((sl->flags & CARMA_SLOT_RESERVED) |
                          (g->drained ? CARMA_SLOT_DRAINED : 0) | (idle ? CARMA_SLOT_IDLE : 0) |
                          (g->nunprofiled || g->nuncapped ? CARMA_SLOT_UNPROFILED : 0) |
                          (vacant ? CARMA_SLOT_VACANT : 0));
    size_t nw = (s->ngpus + 63) / 64;
    uint64_t bit = 1ull << (gi % 64);
    unsigned b = s->bucket_of[gi];
    if (b != CARMA_SCHED_NO_BUCKET) {
        s->bucket_bits[b * nw + gi / 64] &= ~bit;
        s->bucket[b].count--;
        s->bucket_of[gi] = CARMA_SCHED_NO_BUCKET;
    }
    if (idle) {
        unsigned free_b = CARMA_SCHED_NO_BUCKET;
        for (b = 0; b < CARMA_SCHED_BUCKETS; b++) {
            if (s->bucket[b].count && s->bucket[b].avail == sl->avail)
                break;
            if (!s->bucket[b].count && free_b == CARMA_SCHED_NO_BUCKET)
                free_b = b;
        }
        if (b == CARMA_SCHED_BUCKETS)
            b = free_b;
        if (b != CARMA_SCHED_NO_BUCKET) {
            s->bucket[b].avail = sl->avail;
            s->bucket[b].count++;
            s->bucket_bits[b * nw + gi / 64] |= bit;
            s->bucket_of[gi] = (uint8_t)b;
        }
    }
    if (!g->drained && (g->njobs == 0 || g->sharing != CARMA_SHARING_MPS) &&
        s->bucket_of[gi] == CARMA_SCHED_NO_BUCKET)
        s->first[gi / 64] |= bit;
    else
        s->first[gi / 64] &= ~bit;
}

/* Min-heap sift of a[i] within a[0..n). */
static void sift_down(uint64_t *a, size_t i, size_t n)
{
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            return;
        if (c + 1 < n && a[c + 1] < a[c])
            c++;
        if (a[i] <= a[c])
            return;
        uint64_t t = a[i];
        a[i] = a[c];
        a[c] = t;
        i = c;
    }
}

/* Sorts largest first, in place: heapsort, as the core allocates nothing after init
 * (qsort may). */
static void sort_desc(uint64_t *a, size_t n)
{
    for (size_t i = n / 2; i-- > 0;)
        sift_down(a, i, n);
    for (size_t end = n; end-- > 1;) {
        uint64_t t = a[0];
        a[0] = a[end];
        a[end] = t;
        sift_down(a, 0, end);
    }
}

static __attribute__((noinline)) void sizes_sort(struct carma_sched *s)
{
    memcpy(s->by_size, s->live_total, s->ngpus * sizeof *s->by_size);
    sort_desc(s->by_size, s->ngpus);
    s->sizes_stale = 0;
}

/* Inlined into every scan (GNU attribute): the sort is rare, the lookup is not. */
__attribute__((always_inline)) static inline uint64_t kth_largest(struct carma_sched *s,
                                                                  uint16_t k)
{
    if (s->sizes_stale)
        sizes_sort(s);
    return k >= 1 && k <= s->ngpus ? s->by_size[k - 1] : 0;
}

uint64_t carma_sched_kth_largest(struct carma_sched *s, uint16_t k)
{
    return kth_largest(s, k);
}

void carma_sched_set_coloc(struct carma_sched *s, const struct carma_coloc_learnt *l, size_t n)
{
    s->ncoloc = (uint32_t)(n < CARMA_SCHED_COLOC_KINDS ? n : CARMA_SCHED_COLOC_KINDS);
    if (s->ncoloc)
        memcpy(s->coloc, l, s->ncoloc * sizeof *l);
    for (size_t gi = 0; gi < s->ngpus; gi++)
        gpu_refresh(s, (uint32_t)gi);
    s->epoch += SCHED_CHANGELOG; /* what every waiting job's scan found may change */
}

void carma_sched_gpu_changed(struct carma_sched *s, uint32_t gi)
{
    gpu_refresh(s, gi);
    s->epoch++;
    s->changelog[s->epoch % SCHED_CHANGELOG] = gi;
}

/* An SM demand (solo SMACT or busy fraction, 0..1, an unknown one counting 1) in
 * millionths: integers, so that the sums kept for reserved GPUs add and subtract exactly.
 * NaN counts 0. */
static uint32_t millionths(float x)
{
    return !(x > 0) ? 0 : x >= 16.0f ? 16000000u : (uint32_t)lrintf(x * 1e6f);
}

/* Whether a job behind the blocked holder may take reserved GPU gi. Once the jobs that
 * were there before the reservation have gone, the holder must still be able to join
 * the jobs backfilled there as auto_gain would let it join any GPU: its hold, theirs and
 * this job's fit with the margin, one more job is allowed, and the holder's gain passes
 * min_gain; and their SM demand (solo SMACT under MPS, busy fraction under time-slicing)
 * must leave the holder the GPU's SMs, so that it runs as fast as alone but for MPS's
 * per-client cost. Jobs that run alone (only_idle) are never backfilled, and a holder
 * that runs alone takes no one beside it. Without this a reservation on a server no
 * larger than the holder is plain FIFO. */
static int auto_backfill_fits(const struct carma_sched *s, uint32_t gi, uint64_t need, float sm,
                              float busy, uint16_t weight, int only_idle)
{
    const struct carma_sched_holder *h = &s->holder_of;
    if (only_idle || h->alone)
        return 0;
    const struct carma_gpu *g = &s->gpus[gi];
    const struct carma_sched_backfill *b = &s->backfill[gi];
    int64_t room = (int64_t)g->mem_total_mib - foreign_mib(g) - (int64_t)s->p.margin_mib -
                   (int64_t)h->mib - (int64_t)b->mib;
    if (room < (int64_t)need || b->njobs + 2 > s->p.max_jobs_per_gpu)
        return 0;
    uint64_t S = (uint64_t)b->smact + millionths(sm), B = (uint64_t)b->busy + millionths(busy);
    if ((g->sharing == CARMA_SHARING_MPS ? S + h->smact : B + h->busy) > 1000000u)
        return 0;
    uint32_t w = b->weight + weight;
    float now =
        sched_rate(s, g->sharing, g->kind, b->njobs + 1, (float)S * 1e-6f, (float)B * 1e-6f);
    float rate = sched_rate(s, g->sharing, g->kind, b->njobs + 2, (float)(S + h->smact) * 1e-6f,
                            (float)(B + h->busy) * 1e-6f);
    if (join_may_speed(s, g->kind, b->njobs + 1) &&
        rate > now) /* (the book's sums, in millionths) */
        rate = now;
    float before = (float)w * now;
    float after = (float)(w + h->weight) * rate;
    return after - before >= s->p.min_gain * (float)h->weight;
}

/* How auto_gain treats the GPUs held for the blocked job (AUTO_SCAN_*): a job ahead of
 * it takes them as any other, one behind it only as auto_backfill_fits allows, and the
 * holder itself joins what was backfilled there for it. */
enum { AUTO_SCAN_FREE, AUTO_SCAN_HONOUR, AUTO_SCAN_HOLDER };

/* The rule job ji is scanned under in a step: behind the blocked job (blocked), as the
 * holder of the reservation, or free. */
static int auto_scan_rule(const struct carma_sched *s, int blocked, uint32_t ji)
{
    return blocked ? AUTO_SCAN_HONOUR : s->holder == ji ? AUTO_SCAN_HOLDER : AUTO_SCAN_FREE;
}

/* Predicted gain of the GPU's throughput if a job (sm, busy, holding `weight` GPUs)
 * joins it, or a negative value when it may not join at all. Throughput counts each
 * job's rate times the GPUs it holds: slowing a job that spans k GPUs wastes k GPUs.
 * An idle GPU gains the job's whole weight. The holder (honour AUTO_SCAN_HOLDER) joins a
 * GPU held for it where every job there was backfilled under its reservation whatever
 * its gain: each was let in on that promise, judged beside all those there then, and a
 * learnt correction need not fall with the load, so beside fewer of them the gain can be
 * lower (the memory, the job count and the SM demand were checked for the holder). */
static float auto_gain(const struct carma_sched *s, uint32_t gi, uint64_t need, int only_idle,
                       float sm, float busy, uint16_t weight, int honour)
{
    const struct carma_sched_slot *g = &s->slot[gi];
    if (g->flags & CARMA_SLOT_DRAINED)
        return -1.0f;
    if (honour == AUTO_SCAN_HONOUR && (g->flags & CARMA_SLOT_RESERVED) &&
        !auto_backfill_fits(s, gi, need, sm, busy, weight, only_idle))
        return -1.0f;
    /* The margin guards co-runners against each other's estimates: a job alone on a
     * GPU may use all of it. */
    if (g->flags & CARMA_SLOT_IDLE) {
        /* A job that asks the whole GPU (no bound, or one past its GPUs: its need is the
         * largest GPUs' memory less the margin) takes an idle one as large, whatever its
         * driver reserves or holds without a process (in use since memory v2's reserve
         * counts so): otherwise a GPU reserving more than the margin would never take it. */
        if (only_idle > 1)
            return s->gpus[gi].mem_total_mib >= need + s->p.margin_mib || need == 0
                       ? (float)weight
                       : -1.0f;
        return g->avail + (int64_t)s->p.margin_mib >= (int64_t)need ? (float)weight : -1.0f;
    }
    if (g->avail < (int64_t)need)
        return -1.0f;
    /* A job that runs alone takes a GPU without a carma job: one that only processes carma
     * did not start use is its own as much as an idle one (their memory is out of avail,
     * and the model slows no job for them); asked for no process at all, it would wait
     * as long as a notebook holds a context on every GPU. A bound past its GPUs (only_idle
     * 2) asks the whole GPU: an idle one only. */
    if ((only_idle && !(g->flags & CARMA_SLOT_VACANT)) || only_idle > 1 ||
        (g->flags & CARMA_SLOT_UNPROFILED) || g->njobs >= s->p.max_jobs_per_gpu)
        return -1.0f;
    uint32_t n = g->njobs + 1;
    float after =
        (float)(g->gpu_weight + weight) *
        sched_join_rate(s, g->sharing, g->kind, n - 1, g->prof_smact, g->prof_busy, sm, busy);
    float gain = after - g->tput;
    if (gain >= s->p.min_gain * (float)weight)
        return gain;
    if (honour == AUTO_SCAN_HOLDER && (g->flags & CARMA_SLOT_RESERVED) &&
        s->backfill[gi].njobs == g->njobs)
        return gain > 0 ? gain : 0.0f;
    return -1.0f;
}

/* Offers GPU gi to the top-k list c/cg (k = want), ordered by gain descending, then the
 * tightest memory fit (keeps large holes for large jobs), or the loosest for a job whose
 * bound passes its GPUs' memory, then index. */
static void auto_offer(const struct carma_sched *s, uint32_t gi, float gain, uint32_t *c,
                       float *cg, size_t *n, size_t want, int loosest)
{
    size_t pos = *n;
    while (pos > 0) {
        uint32_t o = c[pos - 1];
        int64_t x = s->slot[gi].avail, y = s->slot[o].avail;
        int better = gain > cg[pos - 1] ||
                     (gain == cg[pos - 1] &&
                      ((loosest ? x > y : x < y) || (x == y && gi < o)));
        if (!better)
            break;
        pos--;
    }
    if (pos >= want)
        return;
    size_t last = *n < want ? *n : want - 1;
    memmove(&c[pos + 1], &c[pos], (last - pos) * sizeof *c);
    memmove(&cg[pos + 1], &cg[pos], (last - pos) * sizeof *cg);
    c[pos] = gi;
    cg[pos] = gain;
    if (*n < want)
        (*n)++;
}

/* One job's scan: what it needs, and the best GPUs found so far. */
struct auto_scan {
    uint64_t need;
    int only_idle, honour, loosest;
    float sm, busy;
    uint16_t weight;
    size_t want, n, nfit;
    float cg[CARMA_JOB_MAX_GPUS];
    uint16_t fit[CARMA_JOB_MAX_GPUS];
    /* with keep: the best CARMA_SCHED_TOP_LEN usable GPUs offered (kc, kg: nk of them, a
     * heap, auto_keep) and how many were usable, for struct carma_sched_top; nan: a gain
     * was NaN (auto_offer's order is then no order: nothing is kept) */
    int keep, nan;
    size_t nk, usable;
    uint32_t kc[CARMA_SCHED_TOP_LEN];
    float kg[CARMA_SCHED_TOP_LEN];
};

/* Whether GPU gi of gain `gain` goes before GPU o of gain og in auto_offer's order
 * (gains not NaN). */
static inline int auto_before(const struct carma_sched *s, uint32_t gi, float gain, uint32_t o,
                              float og, int loosest)
{
    int64_t x = s->slot[gi].avail, y = s->slot[o].avail;
    return gain > og || (gain == og && ((loosest ? x > y : x < y) || (x == y && gi < o)));
}

/* Puts GPU gi of gain `gain` in place of the root of the heap c/g of m GPUs (the last in
 * auto_offer's order at the root), sifting it down: the child that goes last moves up. */
static void keep_sift_down(const struct carma_sched *s, uint32_t *c, float *g, size_t m,
                           uint32_t gi, float gain, int loosest)
{
    size_t i = 0;
    for (;;) {
        size_t k = 2 * i + 1;
        if (k >= m)
            break;
        if (k + 1 < m && auto_before(s, c[k], g[k], c[k + 1], g[k + 1], loosest))
            k++;
        if (!auto_before(s, gi, gain, c[k], g[k], loosest))
            break;
        c[i] = c[k];
        g[i] = g[k];
        i = k;
    }
    c[i] = gi;
    g[i] = gain;
}

/* Offers GPU gi to a->kc/kg, a heap of the best CARMA_SCHED_TOP_LEN offered in
 * auto_offer's order, the last of them at the root: as auto_offer with that many wanted,
 * in O(log n) (auto_keep_sort puts them in auto_offer's order). */
static void auto_keep(const struct carma_sched *s, struct auto_scan *a, uint32_t gi, float gain)
{
    if (gain != gain) {
        a->nan = 1;
        return;
    }
    uint32_t *c = a->kc;
    float *g = a->kg;
    size_t i;
    if (a->nk < CARMA_SCHED_TOP_LEN) {
        for (i = a->nk++; i > 0; i = (i - 1) / 2) {
            size_t p = (i - 1) / 2;
            if (!auto_before(s, c[p], g[p], gi, gain, a->loosest))
                break;
            c[i] = c[p];
            g[i] = g[p];
        }
    } else {
        if (auto_before(s, gi, gain, c[0], g[0], a->loosest))
            keep_sift_down(s, c, g, a->nk, gi, gain, a->loosest);
        return;
    }
    c[i] = gi;
    g[i] = gain;
}

/* Sorts the heap of auto_keep into auto_offer's order (the best first). */
static void auto_keep_sort(const struct carma_sched *s, struct auto_scan *a)
{
    uint32_t *c = a->kc;
    float *g = a->kg;
    for (size_t n = a->nk; n > 1; n--) {
        uint32_t gi = c[n - 1]; /* the root (the last) goes to the end, gi sifts down */
        float gain = g[n - 1];
        c[n - 1] = c[0];
        g[n - 1] = g[0];
        keep_sift_down(s, c, g, n - 1, gi, gain, a->loosest);
    }
}

/* Offers GPU gi to job j's scan; remembers it in `fit` when usable. Returns whether it
 * is. */
static inline int auto_offer_gpu(struct carma_sched *s, uint32_t gi, struct auto_scan *a,
                                 uint32_t *c)
{
    s->judged++;
    float gain = auto_gain(s, gi, a->need, a->only_idle, a->sm, a->busy, a->weight, a->honour);
    if (gain < 0)
        return 0;
    if (a->nfit < CARMA_JOB_MAX_GPUS)
        a->fit[a->nfit++] = (uint16_t)gi;
    auto_offer(s, gi, gain, c, a->cg, &a->n, a->want, a->loosest);
    if (a->keep) {
        a->usable++;
        auto_keep(s, a, gi, gain);
    }
    return 1;
}

/* The same, once per scan: a GPU both remembered and changed is offered once. */
static void auto_consider(struct carma_sched *s, uint32_t gi, struct auto_scan *a, uint32_t *c)
{
    if (s->seen[gi] == s->stamp)
        return;
    s->seen[gi] = s->stamp;
    auto_offer_gpu(s, gi, a, c);
}

/* Offers every GPU once, with the choice and the fit list of an offer in index order
 * (an offer keeps a strict order: gain, memory fit, index). The GPUs that can give the
 * job its whole weight go first: those without a carma job (idle ones through their
 * buckets, and those with foreign processes only, which the model does not slow it
 * for), and time-sliced ones whose jobs' busy fractions leave it full speed (`first`).
 * When `want` of them do, no other GPU can
 * tie, as an MPS GPU running a carma job runs a newcomer at 1 / (1 + alpha) < 1 at best
 * (coloc.h), and the rest is not looked at; in a large, lightly loaded cluster that
 * skips most GPUs. Returns 1 when that settled the choice. */
static int auto_scan_full(struct carma_sched *s, struct auto_scan *a, uint32_t *c)
{
    size_t nw = (s->ngpus + 63) / 64;
    /* Idle GPUs of one bucket all offer the whole weight or none, and rank by index
     * among themselves: the first `want` usable ones of each bucket are all that can
     * be chosen. A bucket with fewer has had them all offered. */
    for (unsigned b = 0; b < CARMA_SCHED_BUCKETS; b++) {        if (!s->bucket[b].count ||
            (a->only_idle < 2 && /* a whole-GPU job: auto_gain checks the GPU's size */
             s->bucket[b].avail + (int64_t)s->p.margin_mib < (int64_t)a->need))
            continue;
        size_t got = 0;
        for (size_t w = 0; w < nw && got < a->want; w++)
            for (uint64_t bits = s->bucket_bits[b * nw + w]; bits && got < a->want;
                 bits &= bits - 1)
                got += (size_t)auto_offer_gpu(
                    s, (uint32_t)(w * 64 + (unsigned)__builtin_ctzll(bits)), a, c);
    }
    for (size_t w = 0; w < nw; w++)
        for (uint64_t bits = s->first[w]; bits; bits &= bits - 1)
            auto_offer_gpu(s, (uint32_t)(w * 64 + (unsigned)__builtin_ctzll(bits)), a, c);
    if (a->n >= a->want && a->cg[a->want - 1] >= (float)a->weight)
        return 1;
    /* the rest: GPUs neither in `first` nor in a bucket */
    for (size_t w = 0; w < nw; w++) {
        uint64_t bits = ~s->first[w];
        for (unsigned b = 0; b < CARMA_SCHED_BUCKETS; b++)
            bits &= ~s->bucket_bits[b * nw + w];
        if (w == nw - 1 && s->ngpus % 64)
            bits &= (1ull << (s->ngpus % 64)) - 1;
        for (; bits; bits &= bits - 1)
            auto_offer_gpu(s, (uint32_t)(w * 64 + (unsigned)__builtin_ctzll(bits)), a, c);
    }
    /* a job that does not fit remembers every usable GPU, in index order */
    for (size_t i = 1; i < a->nfit; i++)
        for (size_t k = i; k > 0 && a->fit[k] < a->fit[k - 1]; k--) {
            uint16_t t = a->fit[k];
            a->fit[k] = a->fit[k - 1];
            a->fit[k - 1] = t;
        }
    return 0;
}

enum { AUTO_ONLY_IDLE = 1, AUTO_LOOSEST = 2, AUTO_HONOUR = 4, AUTO_HOLDER = 8 };

static uint32_t float_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* The hash of the shape of scan a: its top bits place it in s->miss and s->top. */
static uint64_t auto_shape_hash(const struct auto_scan *a, uint8_t flags)
{
    uint32_t sm = float_bits(a->sm), busy = float_bits(a->busy);
    uint64_t h = (a->need ^ ((uint64_t)sm << 32 | busy) * 0x9e3779b97f4a7c15ull) +
                 ((uint64_t)a->weight << 3 | flags);
    h ^= h >> 29;
    return h * 0xbf58476d1ce4e5b9ull;
}

_Static_assert(CARMA_SCHED_MISSES == 64 && CARMA_SCHED_TOPS == 256, "auto_shape_hash's bits");

static struct carma_sched_top *auto_top_of(struct carma_sched *s, const struct auto_scan *a,
                                           uint8_t flags)
{
    return &s->top[auto_shape_hash(a, flags) >> 56];
}

/* The entry of s->miss for the shape of scan a, and whether it answers for epoch now. */
static struct carma_sched_miss *auto_miss(struct carma_sched *s, const struct auto_scan *a,
                                          uint8_t flags, uint64_t now, int *hit)
{
    uint32_t sm = float_bits(a->sm), busy = float_bits(a->busy);
    struct carma_sched_miss *m = &s->miss[auto_shape_hash(a, flags) >> 58];
    *hit = m->epoch == now && m->need == a->need && m->sm_bits == sm && m->busy_bits == busy &&
           m->gpus == a->weight && m->flags == flags;
    return m;
}

/* A new stamp for s->seen: no GPU is marked with it. */
static void auto_new_stamp(struct carma_sched *s)
{
    if (++s->stamp == 0) { /* wrapped: forget every mark */
        memset(s->seen, 0, s->ngpus * sizeof *s->seen);
        s->stamp = 1;
    }
}

/* Remembers what scan a, which offered every GPU (a->keep), found at this epoch. */
static void auto_top_keep(struct carma_sched *s, struct auto_scan *a, uint8_t flags)
{
    struct carma_sched_top *t = auto_top_of(s, a, flags);
    if (a->nan) {
        t->epoch = 0;
        return;
    }
    t->epoch = s->epoch;
    t->need = a->need;
    t->sm_bits = float_bits(a->sm);
    t->busy_bits = float_bits(a->busy);
    t->gpus = a->weight;
    t->flags = flags;
    t->all = a->usable <= CARMA_SCHED_TOP_LEN; /* gpu[] holds them as auto_keep's heap */
    t->n = (uint16_t)a->nk;
    for (size_t k = 0; k < a->nk; k++) {
        t->gpu[k] = (uint16_t)a->kc[k];
        t->gain[k] = a->kg[k];
    }
}

/* Judges GPU gi again for a's list (once per stamp: a GPU both changed and reserved is
 * judged once) and keeps it when usable. Returns whether it was. */
static int top_rejudge(struct carma_sched *s, struct auto_scan *a, uint32_t gi)
{
    if (s->seen[gi] == s->stamp)
        return 0;
    s->seen[gi] = s->stamp;
    s->judged++;
    float gain = auto_gain(s, gi, a->need, a->only_idle, a->sm, a->busy, a->weight, a->honour);
    if (gain < 0)
        return 0;
    auto_keep(s, a, gi, gain);
    return 1;
}

/* Answers scan a from the GPUs a scan of every GPU for a job of its shape found best
 * (struct carma_sched_top): the GPUs changed since and those reserved now are judged
 * again, those of the list not changed keep their gains. Returns 1 when the job fits,
 * with c, a->cg and a->n as a scan of every GPU leaves them; -1 when it does not (the
 * list held every usable GPU), with a->fit and a->nfit too; the list is then brought up
 * to this epoch. 0 when the list cannot tell (of another shape, too old, too few of its
 * GPUs unchanged), for a scan of every GPU. */
static int auto_top_use(struct carma_sched *s, struct auto_scan *a, uint8_t flags, uint32_t *c)
{
    if (!s->top)
        return 0;
    struct carma_sched_top *t = auto_top_of(s, a, flags);
    if (!t->epoch || t->need != a->need || t->sm_bits != float_bits(a->sm) ||
        t->busy_bits != float_bits(a->busy) || t->gpus != a->weight || t->flags != flags)
        return 0;
    uint64_t since = s->epoch - t->epoch;
    /* too old for the log, or no cheaper than judging every GPU */
    if (since >= SCHED_CHANGELOG || since + t->n + s->nreserved >= s->ngpus ||
        (!t->all && t->n < a->want))
        return 0;
    auto_new_stamp(s);
    a->nk = 0;
    a->nan = 0;
    size_t offered = 0;
    for (uint64_t e = t->epoch + 1; e <= s->epoch; e++)
        offered += top_rejudge(s, a, s->changelog[e % SCHED_CHANGELOG]);
    for (uint16_t k = 0; k < s->nreserved; k++)
        offered += top_rejudge(s, a, s->reserved[k]);
    /* the list's GPUs not judged again: the last of them in auto_offer's order ranks
     * above every GPU neither listed nor judged again. A GPU reserved then and not now was
     * logged when its reservation went, and one reserved now was judged again: the rest
     * were reserved neither then nor now, and a reservation changes the gain of no other
     * GPU, whatever the rules the scan reads it by */
    size_t kept = 0;
    uint32_t last = CARMA_NONE;
    float last_gain = 0;
    for (uint16_t k = 0; k < t->n; k++) {
        uint32_t gi = t->gpu[k];
        if (s->seen[gi] == s->stamp)
            continue;
        if (!kept++ || auto_before(s, last, last_gain, gi, t->gain[k], a->loosest)) {
            last = gi;
            last_gain = t->gain[k];
        }
        auto_keep(s, a, gi, t->gain[k]);
    }
    if (a->nan)
        return 0;
    auto_keep_sort(s, a);
    offered += kept;
    size_t sure = a->nk; /* the first `sure` of kc are the best of every GPU */
    if (!t->all) {
        if (kept < a->want)
            return 0;
        for (size_t k = 0; k < a->nk; k++)
            if (a->kc[k] == last) {
                sure = k + 1;
                break;
            }
    }
    int fits = sure >= a->want;
    /* else (only with t->all) every usable GPU is in kc, fewer than it needs */
    a->n = fits ? a->want : sure;
    memcpy(c, a->kc, a->n * sizeof *c);
    memcpy(a->cg, a->kg, a->n * sizeof *a->cg);
    if (!fits) { /* what a scan of every GPU remembers: every usable GPU, in index order */
        assert(sure < CARMA_JOB_MAX_GPUS);
        a->nfit = 0;
        for (size_t k = 0; k < sure; k++) {
            size_t i = a->nfit++;
            for (; i > 0 && a->fit[i - 1] > a->kc[k]; i--)
                a->fit[i] = a->fit[i - 1];
            a->fit[i] = (uint16_t)a->kc[k];
        }
    }
    t->epoch = s->epoch;
    t->all = t->all && offered <= CARMA_SCHED_TOP_LEN;
    t->n = (uint16_t)sure;
    for (size_t k = 0; k < sure; k++) {
        t->gpu[k] = (uint16_t)a->kc[k];
        t->gain[k] = a->kg[k];
    }
    return fits ? 1 : -1;
}

/* Picks j->gpus GPUs for job j into c; returns 1 when it fits. A job that did not fit
 * at its last scan is re-examined only on the GPUs it could use then and the GPUs
 * changed since: nothing else can have become usable. */
/* What job j needs of each GPU, capped at what its GPUs can have (*loosest: the cap
 * applied), and whether it runs alone (*only_idle: 1 on a GPU without a carma job, 2 on
 * an idle one, 0 beside other jobs). */
static uint64_t auto_need(struct carma_sched *s, const struct carma_job *j, int *only_idle,
                          int *loosest)
{
    uint64_t need = job_hold_mib(j);
    /* Without a solo profile nothing predicts a co-run's slowdown: such a job runs
     * alone, and no job joins it (CARMA_SLOT_UNPROFILED). */
    *only_idle = need == 0 ? 2 : j->exclusive || j->smact < 0; /* no bound: the whole GPU */
    /* A bound past what its GPUs can have comes from a loose estimate, not from a job
     * known not to fit (a peak that large ends in OOM, then final): it runs alone on
     * GPUs of the largest memory rather than wait forever. Its hold keeps co-runners
     * off. */
    uint64_t cap = kth_largest(s, j->gpus);
    *loosest = need > cap;
    if (*loosest) {
        /* less the margin: an idle GPU whose driver or another process holds a little
         * (a real GPU reports some MiB in use idle) still takes it, where the whole of its
         * memory would fit none and the job would wait forever; the hold still leaves
         * co-runners nothing (its GPU's room: the margin less what is in use) */
        need = cap > s->p.margin_mib ? cap - s->p.margin_mib : cap;
        *only_idle = 2; /* the whole GPU: idle, not merely without a carma job */
    }
    return need;
}

/* A job on several GPUs of a server with islands (DESIGN.md 3), once auto_choose found
 * that it fits, c and a->cg holding the best `want` GPUs of the whole server and their
 * gains: the best `want` (auto_offer's order: gain, memory fit, index) of the island whose
 * best give the job the most, when that is as much as those give it, else c as it is. Of
 * islands that give as much, the one with the fewest GPUs without a carma job (then the
 * lowest), so that whole islands stay free for wider jobs. It never trades the job's speed
 * for a link: without a model of the job's communication nothing says a slower GPU pays
 * for a faster link. Every GPU is looked at, once per placement: a job that does not fit
 * is judged by auto_choose's remembered scans as any other. */
static void auto_choose_islands(struct carma_sched *s, const struct auto_scan *a, uint32_t *c)
{
    const size_t want = a->want;
    uint32_t ic[CARMA_JOB_MAX_GPUS], best[CARMA_JOB_MAX_GPUS];
    float icg[CARMA_JOB_MAX_GPUS];
    double best_sum = -1.0;
    uint32_t best_vacant = 0;
    for (uint32_t i = 0; i < s->nislands; i++) {
        size_t in = 0;
        uint32_t vacant = 0;
        for (uint32_t k = s->island_at[i]; k < s->island_at[i + 1]; k++) {
            uint32_t gi = s->by_island[k];
            vacant += (s->slot[gi].flags & CARMA_SLOT_VACANT) != 0;
            s->judged++;
            float gain =
                auto_gain(s, gi, a->need, a->only_idle, a->sm, a->busy, a->weight, a->honour);
            if (gain >= 0)
                auto_offer(s, gi, gain, ic, icg, &in, want, a->loosest);
        }
        if (in < want)
            continue;
        double sum = 0; /* gains in descending order: equal sets sum to equal bits */
        for (size_t k = 0; k < want; k++)
            sum += icg[k];
        if (sum > best_sum || (sum == best_sum && vacant < best_vacant)) {
            best_sum = sum;
            best_vacant = vacant;
            memcpy(best, ic, want * sizeof *best);
        }
    }
    double all = 0;
    for (size_t k = 0; k < want; k++)
        all += a->cg[k];
    if (best_sum >= all)
        memcpy(c, best, want * sizeof *c);
}

/* auto_choose found that the job fits (c holds the best of the server): with islands, a
 * job on several GPUs takes its GPUs by island. Returns 1. */
static int auto_fits(struct carma_sched *s, const struct auto_scan *a, uint32_t *c)
{
    if (a->want > 1 && s->nislands > 1)
        auto_choose_islands(s, a, c);
    return 1;
}

static int auto_choose(struct carma_sched *s, struct carma_job *j, uint32_t *c, int honour)
{
    struct auto_scan a;
    a.need = auto_need(s, j, &a.only_idle, &a.loosest);
    if (a.only_idle && s->vacant < j->gpus)
        return 0;
    /* Reservations only bind jobs behind the blocked one; a job scanned under other
     * rules than last time is scanned in full. The holder's own rule (AUTO_SCAN_HOLDER)
     * opens only GPUs that jobs were backfilled onto since its reservation was made,
     * each a change logged after any scan of it as a free job, so it shares their scans. */
    int recent = !s->p.scan_all && j->scan_epoch && s->epoch - j->scan_epoch < SCHED_CHANGELOG &&
                 (j->scan_fit & 0x8000u) == (honour == AUTO_SCAN_HONOUR ? 0x8000u : 0);
    uint16_t fit_before = j->scan_fit & 0x7fffu;
    if (recent && (uint64_t)fit_before + (s->epoch - j->scan_epoch) < j->gpus)
        return 0;
    a.honour = honour;
    a.sm = j->smact < 0 ? 1.0f : j->smact;
    a.busy = j->busy;
    a.weight = j->gpus;
    a.want = j->gpus;
    a.n = a.nfit = 0;
    uint8_t flags = (uint8_t)((a.only_idle ? AUTO_ONLY_IDLE : 0) | (a.loosest ? AUTO_LOOSEST : 0) |
                              (honour == AUTO_SCAN_HONOUR   ? AUTO_HONOUR
                               : honour == AUTO_SCAN_HOLDER ? AUTO_HOLDER
                                                            : 0));
    int hit = 0, top;
    struct carma_sched_miss *m = s->p.scan_all ? NULL : auto_miss(s, &a, flags, s->epoch, &hit);
    a.keep = a.nan = 0;
    a.nk = a.usable = 0;
    if (hit) {
        a.nfit = m->nfit;
        memcpy(a.fit, m->fit, m->nfit * sizeof *m->fit);
    } else if (recent) {
        auto_new_stamp(s);
        for (uint16_t k = 0; k < fit_before; k++)
            auto_consider(s, j->gpu[k], &a, c);
        for (uint64_t e = j->scan_epoch + 1; e <= s->epoch; e++)
            auto_consider(s, s->changelog[e % SCHED_CHANGELOG], &a, c);
    } else if (s->p.scan_all) {
        for (size_t gi = 0; gi < s->ngpus; gi++) /* each GPU once: no marks needed */
            auto_offer_gpu(s, (uint32_t)gi, &a, c);
    } else if ((top = auto_top_use(s, &a, flags, c)) > 0) {
        return auto_fits(s, &a, c);
    } else if (top == 0) {
        a.nk = a.usable = 0;
        a.keep = s->top != NULL;
        a.nan = 0;
        if (auto_scan_full(s, &a, c))
            return auto_fits(s, &a, c);
        if (a.keep)
            auto_top_keep(s, &a, flags); /* every GPU was offered */
    }
    if (a.n >= j->gpus)
        return auto_fits(s, &a, c);
    if (m && !hit) {
        *m = (struct carma_sched_miss){.epoch = s->epoch, .need = a.need,
                                       .sm_bits = float_bits(a.sm),
                                       .busy_bits = float_bits(a.busy), .gpus = a.weight,
                                       .nfit = (uint16_t)a.nfit, .flags = flags};
        memcpy(m->fit, a.fit, a.nfit * sizeof *a.fit);
    }
    j->scan_epoch = s->epoch;
    j->scan_fit = (uint16_t)(a.nfit | (honour == AUTO_SCAN_HONOUR ? 0x8000u : 0));
    memcpy(j->gpu, a.fit, a.nfit * sizeof *a.fit);
    return 0;
}

/* Offers GPU gi to the top-`want` list best/pot of auto_reserve (the most memory not
 * committed first, then index); drained GPUs, and GPUs too small ever to hold the job's
 * `need`, are not offered (held back for it, they would only keep jobs off while it
 * waits for the larger ones backfill takes). With `foreign`, what processes carma did
 * not start use counts as taken: a GPU a notebook fills is too small while it runs. */
static void reserve_offer(const struct carma_sched *s, uint32_t gi, uint64_t need, int foreign,
                          uint32_t *best, int64_t *pot, size_t *n, size_t want)
{
    const struct carma_gpu *g = &s->gpus[gi];
    int64_t others = foreign ? foreign_mib(g) : 0;
    if (g->drained || g->mem_total_mib < need || (int64_t)g->mem_total_mib - others < (int64_t)need)
        return;
    int64_t p = (int64_t)g->mem_total_mib - (int64_t)g->committed_mib - others;
    size_t pos = *n;
    while (pos > 0 && p > pot[pos - 1])
        pos--;
    if (pos >= want)
        return;
    size_t last = *n < want ? *n : want - 1;
    memmove(&best[pos + 1], &best[pos], (last - pos) * sizeof *best);
    memmove(&pot[pos + 1], &pot[pos], (last - pos) * sizeof *pot);
    best[pos] = gi;
    pot[pos] = p;
    if (*n < want)
        (*n)++;
}

/* reserve_offer's choice over every GPU, from s->rtree[foreign ? 0 : 1]: the GPUs in
 * its order, each taken out of the tree, until `want` can hold the job (then put back).
 * Returns their number, or -1 when that took more than RESERVE_LOOKS GPUs (too few hold
 * the job: reserve_offer looks at every GPU then). */
#define RESERVE_LOOKS 1024
static int reserve_by_tree(struct carma_sched *s, uint64_t need, int foreign, uint32_t *best,
                           int64_t *pot, size_t want)
{
    int k = foreign ? 0 : 1;
    uint32_t *t = s->rtree[k];
    uint32_t taken[RESERVE_LOOKS];
    size_t nt = 0, n = 0;
    int ok = 1;
    while (n < want && t[1] != CARMA_NONE) {
        if (nt == RESERVE_LOOKS) {
            ok = 0;
            break;
        }
        uint32_t gi = t[1];
        taken[nt++] = gi;
        t[s->rsize + gi] = CARMA_NONE;
        rtree_fix(s, k, gi);
        const struct carma_gpu *g = &s->gpus[gi];
        int64_t others = foreign ? foreign_mib(g) : 0;
        if (g->mem_total_mib < need || (int64_t)g->mem_total_mib - others < (int64_t)need)
            continue;
        best[n] = gi;
        pot[n] = s->rkey[k][gi];
        n++;
    }
    while (nt > 0) {
        uint32_t gi = taken[--nt];
        t[s->rsize + gi] = gi;
        rtree_fix(s, k, gi);
    }
    return ok ? (int)n : -1;
}

/* Holds back, for the first job that cannot start, the GPUs closest to fitting it
 * (most memory neither committed to carma jobs nor used by other processes), so that
 * backfilled jobs cannot starve it: jobs behind it take them only as auto_backfill_fits
 * allows. Where too few GPUs could hold it beside what other processes use now, and for
 * a job that asks a whole GPU (whose driver may hold some of it idle), those processes
 * are not counted. A GPU held that others fill kept no job off the GPUs it can use, and
 * a steady stream of jobs behind it kept it out of those. */
static void auto_reserve(struct carma_sched *s, const struct carma_job *j)
{
    s->reserve_gen++;
    int alone, loosest;
    uint64_t need = auto_need(s, j, &alone, &loosest);
    s->holder_of = (struct carma_sched_holder){
        .mib = need,
        .smact = millionths(j->smact),
        .busy = millionths(j->busy),
        .weight = j->gpus,
        .alone = (uint8_t)alone,
    };
    uint32_t best[CARMA_JOB_MAX_GPUS];
    int64_t pot[CARMA_JOB_MAX_GPUS];
    size_t n = 0, want = j->gpus;
    int foreign = alone < 2;
    for (;; foreign = 0) {
        int by_tree =
            s->rtree[0] && !s->p.scan_all ? reserve_by_tree(s, need, foreign, best, pot, want) : -1;
        n = by_tree >= 0 ? (size_t)by_tree : 0;
        for (size_t gi = 0; by_tree < 0 && gi < s->ngpus; gi++)
            reserve_offer(s, (uint32_t)gi, need, foreign, best, pot, &n, want);
        if (n >= want || !foreign)
            break; /* else too few hold it beside other processes: not counted */
    }
    /* With islands, a job on several GPUs holds back those of one island (the island
     * whose best come closest to fitting it, summed), which it will take together
     * (auto_choose_islands), where an island has enough GPUs in service. */
    if (want > 1 && s->nislands > 1) {
        uint32_t ib[CARMA_JOB_MAX_GPUS];
        int64_t ip[CARMA_JOB_MAX_GPUS];
        int64_t best_sum = INT64_MIN;
        for (uint32_t i = 0; i < s->nislands; i++) {
            size_t in = 0;
            for (uint32_t k = s->island_at[i]; k < s->island_at[i + 1]; k++)
                reserve_offer(s, s->by_island[k], need, foreign, ib, ip, &in, want);
            int64_t sum = 0;
            for (size_t k = 0; k < in; k++)
                sum += ip[k];
            if (in == want && sum > best_sum) {
                best_sum = sum;
                memcpy(best, ib, want * sizeof *best);
                n = want;
            }
        }
    }
    for (size_t k = 0; k < n; k++) {
        s->slot[best[k]].flags |= CARMA_SLOT_RESERVED;
        s->backfill[best[k]] = (struct carma_sched_backfill){0};
        s->reserved[k] = (uint16_t)best[k];
    }
    s->nreserved = (uint16_t)n;
}

/* Whether the reservation still serves holder j as auto_reserve made it: the holder's
 * facts are those it was reserved with (its need moves with the GPUs in service, its
 * rules with carma_sched_run_alone), and every GPU held is in service and large enough
 * for it. A GPU drained (by hand for maintenance, or by an Xid until it is reset) would
 * otherwise stay held for a job that cannot use it, while the GPUs it can use take every
 * job behind it: a steady stream of them keeps it out for as long as the drain lasts. */
static int auto_reservation_serves(struct carma_sched *s, const struct carma_job *j)
{
    int alone, loosest;
    uint64_t need = auto_need(s, j, &alone, &loosest);
    const struct carma_sched_holder *h = &s->holder_of;
    if (h->mib != need || h->alone != (uint8_t)alone || h->weight != j->gpus ||
        h->smact != millionths(j->smact) || h->busy != millionths(j->busy) ||
        s->nreserved != j->gpus)
        return 0;
    for (uint16_t k = 0; k < s->nreserved; k++) {
        const struct carma_gpu *g = &s->gpus[s->reserved[k]];
        if (g->drained || g->mem_total_mib < need)
            return 0;
    }
    return 1;
}

/* Counts running job ji, placed behind the holder, on the reserved GPUs it took. */
static void auto_backfilled(struct carma_sched *s, uint32_t ji)
{
    struct carma_job *j = &s->jobs[ji];
    j->backfill_smact = millionths(j->smact < 0 ? 1.0f : j->smact);
    j->backfill_busy = millionths(j->busy);
    for (uint16_t k = 0; k < j->nplaced; k++) {
        uint32_t gi = j->gpu[k];
        if (!(s->slot[gi].flags & CARMA_SLOT_RESERVED))
            continue;
        struct carma_sched_backfill *b = &s->backfill[gi];
        b->mib += j->held_mib;
        b->smact += j->backfill_smact;
        b->busy += j->backfill_busy;
        b->njobs++;
        b->weight += j->nplaced;
        j->backfill_gen = s->reserve_gen;
    }
}

/* Releases the reserved GPUs; they count as changed for waiting jobs. */
static void auto_unreserve(struct carma_sched *s)
{
    /* the GPUs held are reserved[]: logged in index order, as a look at every GPU did */
    uint16_t held[CARMA_JOB_MAX_GPUS];
    uint16_t n = s->nreserved;
    memcpy(held, s->reserved, n * sizeof *held);
    for (uint16_t i = 1; i < n; i++)
        for (uint16_t k = i; k > 0 && held[k] < held[k - 1]; k--) {
            uint16_t t = held[k];
            held[k] = held[k - 1];
            held[k - 1] = t;
        }
    for (uint16_t k = 0; k < n; k++) {
        uint32_t gi = held[k];
        assert(s->slot[gi].flags & CARMA_SLOT_RESERVED);
        s->slot[gi].flags &= (uint8_t)~CARMA_SLOT_RESERVED;
        carma_sched_gpu_changed(s, gi);
    }
    s->holder = CARMA_NONE;
    s->nreserved = 0;
}

static size_t step_auto(struct carma_sched *s, double now, struct carma_placement *out,
                        size_t cap)
{
    size_t placed = 0;
    int blocked = 0;
    uint32_t looked_after_block = 0;
    struct carma_queue *queues[2] = {&s->recovery, &s->main};
    for (int qi = 0; qi < 2 && placed < cap; qi++) {
        uint32_t ji = queues[qi]->head;
        while (ji != CARMA_NONE && placed < cap) {
            struct carma_job *j = &s->jobs[ji];
            uint32_t next = j->next;
            if (beyond_service(s, j)) {
                ji = next;
                continue;
            }
            if (blocked && ++looked_after_block > s->p.backfill_depth)
                return placed;
            if (auto_choose(s, j, s->scratch, auto_scan_rule(s, blocked, ji))) {
                place(s, ji, s->scratch, j->gpus, now);
                if (blocked)
                    auto_backfilled(s, ji);
                out[placed++].job = ji;
            } else if (!blocked) {
                /* The first job that cannot start keeps (or gets) its reservation,
                 * made anew where it no longer serves it. */
                blocked = 1;
                if (s->holder != ji || !auto_reservation_serves(s, j)) {
                    auto_unreserve(s);
                    auto_reserve(s, j);
                    s->holder = ji;
                }
            }
            ji = next;
        }
    }
    /* No job blocked: the reservation goes, unless the caller's cap cut the step short
     * before the holder (still queued) was looked at. Made anew at the next call, it
     * would count the jobs backfilled under it as running before it, and let in more
     * beside them. */
    if (!blocked && s->holder != CARMA_NONE &&
        (placed < cap || s->jobs[s->holder].queue == CARMA_QUEUE_NONE))
        auto_unreserve(s);
    return placed;
}

double carma_sched_next_timer(const struct carma_sched *s, double now)
{
    double t = HUGE_VAL;
    /* Only the reference step reads the clock, and only for the grace of a GPU it may
     * collocate on (exclusive never does). */
    if (s->policy->kind != CARMA_POLICY_REFERENCE || s->policy->order == CARMA_ORDER_NONE)
        return t;
    for (size_t gi = 0; gi < s->ngpus; gi++) {
        const struct carma_gpu *g = &s->gpus[gi];
        if (g->drained || !in_grace(s, g, now))
            continue;
        /* the first time past its end: at the end itself it is still in it */
        double end = nextafter(g->last_launch_s + s->p.grace_s, HUGE_VAL);
        if (end < t)
            t = end;
    }
    return t;
}

size_t carma_sched_step(struct carma_sched *s, double now, struct carma_placement *out,
                        size_t cap)
{
    if (carma_sched_queued(s) == 0)
        return 0;
    if (s->policy->kind == CARMA_POLICY_AUTO)
        return step_auto(s, now, out, cap);
    return step_reference(s, now, out, cap);
}

/* ---- why a queued job waits (on demand, never from a step) ---- */

static const char *const why_names[CARMA_WHY_COUNT] = {
    [CARMA_WHY_PLACING] = "placing",
    [CARMA_WHY_BEYOND_SERVICE] = "beyond_service",
    [CARMA_WHY_BEHIND] = "behind",
    [CARMA_WHY_WAITING] = "waiting",
    [CARMA_WHY_GRACE] = "grace",
    [CARMA_WHY_GATE] = "gate",
    [CARMA_WHY_INTERFERENCE] = "interference",
    [CARMA_WHY_RESERVED] = "reserved",
    [CARMA_WHY_RESOURCES] = "resources",
    [CARMA_WHY_EXCLUSIVE] = "exclusive",
};

const char *carma_why_name(enum carma_why w)
{
    return (unsigned)w < CARMA_WHY_COUNT ? why_names[w] : "waiting";
}

/* What keeps one GPU from a job, from the obstacle that clears soonest to the one that
 * lasts longest: a GPU's rank is that of its most lasting obstacle. */
enum why_ob {
    OB_NONE,
    OB_GRACE,    /* reference: a launch's grace */
    OB_GATE,     /* reference: SMACT with SMOCC or DRAMA */
    OB_GAIN,     /* auto: the GPU's throughput would not rise enough */
    OB_RESERVED, /* auto: held for the blocked job */
    OB_MEM,      /* memory */
    OB_FULL,     /* auto: max_jobs_per_gpu */
    OB_ALONE,    /* a resident job runs alone (no profile, or uncapped after an OOM or an
                    MPS fault) */
    OB_BUSY,     /* the job must run alone, and the GPU is not free of others */
    OB_SMALL,    /* the GPU is smaller than the job needs of it alone */
    OB_DRAINED,
    OB_UNKNOWN, /* the rules refuse it for none of the reasons above (never expected) */
    OB_COUNT
};

static const uint8_t why_ob_code[OB_COUNT] = {
    [OB_NONE] = CARMA_WHY_PLACING,
    [OB_GRACE] = CARMA_WHY_GRACE,
    [OB_GATE] = CARMA_WHY_GATE,
    [OB_GAIN] = CARMA_WHY_INTERFERENCE,
    [OB_RESERVED] = CARMA_WHY_RESERVED,
    [OB_MEM] = CARMA_WHY_RESOURCES,
    [OB_FULL] = CARMA_WHY_RESOURCES,
    [OB_ALONE] = CARMA_WHY_RESOURCES,
    [OB_BUSY] = CARMA_WHY_EXCLUSIVE,
    [OB_SMALL] = CARMA_WHY_RESOURCES,
    [OB_DRAINED] = CARMA_WHY_BEYOND_SERVICE,
    [OB_UNKNOWN] = CARMA_WHY_WAITING,
};

/* A bounded text being written; what does not fit is cut with "...". */
struct why_buf {
    char *p;
    size_t cap, len;
};

__attribute__((format(printf, 2, 3))) static void why_put(struct why_buf *b, const char *fmt, ...)
{
    if (b->len + 1 >= b->cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= b->cap - b->len) {
        b->len = b->cap - 1;
        if (b->cap > 4)
            memcpy(b->p + b->cap - 4, "...", 4);
    } else {
        b->len += (size_t)n;
    }
}

/* The facts a GPU is judged by, for one job: what the policy's rule reads. */
struct why_job {
    const struct carma_job *j;
    double now;
    /* reference */
    int colloc;       /* may collocate: else idle GPUs only */
    uint64_t reached; /* idle GPUs no larger are skipped */
    int64_t min_free; /* the memory gate (0: none) */
    /* auto */
    uint64_t need;
    int only_idle, loosest, honour;
};

/* Adds ", " between a GPU's facts. */
static void why_sep(struct why_buf *b, int *nfacts)
{
    why_put(b, (*nfacts)++ ? ", " : "");
}

/* The obstacles of GPU gi to reference job w (step_reference's rules), its facts written
 * to b when b is not NULL. Returns the GPU's rank (OB_NONE: usable). */
static enum why_ob why_ref_gpu(const struct carma_sched *s, const struct why_job *w, uint32_t gi,
                               struct why_buf *b)
{
    const struct carma_gpu *g = &s->gpus[gi];
    enum why_ob worst = OB_NONE;
    int nf = 0;
#define OB(o, ...)                                                                                 \
    do {                                                                                           \
        if ((o) > worst)                                                                           \
            worst = (o);                                                                           \
        if (b) {                                                                                   \
            why_sep(b, &nf);                                                                       \
            why_put(b, __VA_ARGS__);                                                               \
        }                                                                                          \
    } while (0)
    if (g->drained) {
        OB(OB_DRAINED, "drained");
        return worst;
    }
    if (!w->colloc) { /* the idle GPUs, in index order */
        if (g->mem_total_mib <= w->reached)
            OB(OB_SMALL, "%llu MiB, no more than its peak %llu MiB",
               (unsigned long long)g->mem_total_mib, (unsigned long long)w->j->peak_mib);
        if (g->njobs)
            OB(OB_BUSY, "%u job%s", g->njobs, g->njobs == 1 ? "" : "s");
        if (g->nforeign)
            OB(OB_BUSY, "%u process%s carma did not start", g->nforeign,
               g->nforeign == 1 ? "" : "es");
        return worst;
    }
    if (g->nuncapped)
        OB(OB_ALONE, "runs a job that must run alone");
    if (in_grace(s, g, w->now)) {
        double left = g->last_launch_s + s->p.grace_s - w->now;
        if (g->last_launch_job != CARMA_NONE)
            OB(OB_GRACE, "in its %.0f s grace after job %llu started (%.0f s left)", s->p.grace_s,
               (unsigned long long)s->jobs[g->last_launch_job].id, ceil(left));
        else
            OB(OB_GRACE, "in its %.0f s grace (%.0f s left)", s->p.grace_s, ceil(left));
    }
    if (window_filling(s, g))
        OB(OB_GRACE, "its activity window holds %u of %u samples (read only when full)",
           g->smact.len, g->smact.cap);
    if (s->policy->gated) {
        int64_t free_mib = ref_free_mib(s, g);
        if (free_mib < w->min_free)
            OB(OB_MEM, "%lld MiB free", (long long)(free_mib > 0 ? free_mib : 0));
        if (ref_risky(s, g)) {
            float oc = carma_window_risk(&g->smocc), dr = carma_window_risk(&g->drama);
            if (oc >= s->p.gate_smocc)
                OB(OB_GATE, "SMACT %.2f >= %.2f with SMOCC %.2f >= %.2f",
                   (double)carma_window_risk(&g->smact), (double)s->p.gate_smact, (double)oc,
                   (double)s->p.gate_smocc);
            else
                OB(OB_GATE, "SMACT %.2f >= %.2f with DRAMA %.2f >= %.2f",
                   (double)carma_window_risk(&g->smact), (double)s->p.gate_smact, (double)dr,
                   (double)s->p.gate_drama);
        }
    }
    return worst;
}

/* The same for auto (auto_gain's rules). */
static enum why_ob why_auto_gpu(const struct carma_sched *s, const struct why_job *w, uint32_t gi,
                                struct why_buf *b)
{
    const struct carma_sched_slot *sl = &s->slot[gi];
    const struct carma_gpu *g = &s->gpus[gi];
    const struct carma_job *j = w->j;
    float sm = j->smact < 0 ? 1.0f : j->smact;
    if (auto_gain(s, gi, w->need, w->only_idle, sm, j->busy, j->gpus, w->honour) >= 0)
        return OB_NONE;
    enum why_ob worst = OB_NONE;
    int nf = 0;
    if (sl->flags & CARMA_SLOT_DRAINED) {
        OB(OB_DRAINED, "drained");
        return worst;
    }
    /* held for the blocked job: refused behind it, taken were it not held (what else
     * refuses it shows below; the reservation ranks below all of that) */
    if (w->honour == AUTO_SCAN_HONOUR && (sl->flags & CARMA_SLOT_RESERVED) &&
        auto_gain(s, gi, w->need, w->only_idle, sm, j->busy, j->gpus, 0) >= 0) {
        if (s->holder != CARMA_NONE)
            OB(OB_RESERVED, "held for job %llu", (unsigned long long)s->jobs[s->holder].id);
        else
            OB(OB_RESERVED, "held for a job ahead");
    }
    if (sl->flags & CARMA_SLOT_IDLE) {
        if (w->only_idle > 1) {
            if (!(g->mem_total_mib >= w->need + s->p.margin_mib || w->need == 0))
                OB(OB_SMALL, "%llu MiB in all", (unsigned long long)g->mem_total_mib);
        } else if (sl->avail + (int64_t)s->p.margin_mib < (int64_t)w->need) {
            int64_t a = sl->avail + (int64_t)s->p.margin_mib;
            OB(OB_MEM, "%lld MiB to give", (long long)(a > 0 ? a : 0));
        }
    } else {
        if (sl->avail < (int64_t)w->need)
            OB(OB_MEM, "%lld MiB to give", (long long)(sl->avail > 0 ? sl->avail : 0));
        if ((w->only_idle && !(sl->flags & CARMA_SLOT_VACANT)) || w->only_idle > 1) {
            if (g->njobs)
                OB(OB_BUSY, "%u job%s", g->njobs, g->njobs == 1 ? "" : "s");
            if (w->only_idle > 1 && g->nforeign)
                OB(OB_BUSY, "%u process%s carma did not start", g->nforeign,
                   g->nforeign == 1 ? "" : "es");
        } else if (sl->flags & CARMA_SLOT_UNPROFILED) {
            OB(OB_ALONE, "runs a job that must run alone (%s)",
               g->nuncapped ? "uncapped after an OOM or an MPS fault" : "no solo profile yet");
        } else if (g->njobs >= s->p.max_jobs_per_gpu) {
            OB(OB_FULL, "%u jobs, the most a GPU takes", g->njobs);
        } else if (worst == OB_NONE) {
            float after = (float)(g->gpu_weight + j->gpus) *
                          sched_join_rate(s, g->sharing, g->kind, g->njobs, g->prof_smact,
                                          g->prof_busy, sm, j->busy);
            OB(OB_GAIN, "its throughput would rise by %.2f GPUs for this job, under %.2f",
               (double)(after - sl->tput), (double)(s->p.min_gain * (float)j->gpus));
        }
    }
    if (worst == OB_NONE) /* a rule this explanation does not know */
        OB(OB_UNKNOWN, "refused");
#undef OB
    return worst;
}

static enum why_ob why_gpu(const struct carma_sched *s, const struct why_job *w, uint32_t gi,
                           struct why_buf *b)
{
    return s->policy->kind == CARMA_POLICY_AUTO ? why_auto_gpu(s, w, gi, b)
                                                : why_ref_gpu(s, w, gi, b);
}

/* Judges every GPU for w: how many are usable, and the obstacle that decides (the least
 * rank r such that the GPUs of rank <= r would be enough); writes the verdict. */
#define WHY_LIST 8 /* GPUs named in a text */
static void why_gpus(const struct carma_sched *s, const struct why_job *w, const char *pre,
                     const char *adj, const char *post, struct carma_sched_why *out)
{
    size_t count[OB_COUNT] = {0};
    for (size_t gi = 0; gi < s->ngpus; gi++)
        count[why_gpu(s, w, (uint32_t)gi, NULL)]++;
    struct why_buf b = {out->text, sizeof out->text, 0};
    uint16_t want = w->j->gpus;
    if (count[OB_NONE] >= want) {
        out->code = CARMA_WHY_PLACING;
        why_put(&b, "it fits now on %u GPU%s: the next step starts it", want, want == 1 ? "" : "s");
        return;
    }
    enum why_ob decide = OB_UNKNOWN;
    size_t got = 0;
    for (int r = OB_NONE; r < OB_COUNT; r++) {
        got += count[r];
        if (got >= want) {
            decide = (enum why_ob)r;
            break;
        }
    }
    out->code = why_ob_code[decide];
    why_put(&b, "%sneeds %u %sGPU%s%s, %zu usable now", pre, want, adj, want == 1 ? "" : "s", post,
            count[OB_NONE]);
    /* the GPUs of the deciding rank first, then the others */
    size_t listed = 0, unusable = s->ngpus - count[OB_NONE];
    for (int pass = 0; pass < 2; pass++)
        for (size_t gi = 0; gi < s->ngpus && listed < WHY_LIST; gi++) {
            enum why_ob r = why_gpu(s, w, (uint32_t)gi, NULL);
            if (r == OB_NONE || (pass == 0) != (r == decide))
                continue;
            why_put(&b, "%sGPU %zu: ", listed++ ? "; " : ": ", gi);
            why_gpu(s, w, (uint32_t)gi, &b);
        }
    if (unusable > listed)
        why_put(&b, "; %zu more", unusable - listed);
}

/* Why a job must run alone after a fault under MPS (carma_sched_run_alone) */
static const char why_alone_mps[] =
    "a fault ended every client of its MPS GPU: alone, one is its own";

/* Why must a reference job go on idle GPUs only. */
static const char *why_ref_idle_only(const struct carma_sched *s, int recovery,
                                     const struct carma_job *j)
{
    if (s->policy->order == CARMA_ORDER_NONE)
        return "policy exclusive gives each job idle GPUs";
    if (recovery)
        return "a job in the recovery queue goes on idle GPUs only";
    if (j->exclusive == CARMA_ALONE_MPS_FAULT)
        return why_alone_mps;
    return "after an OOM it goes on idle GPUs only";
}

static void why_reference(struct carma_sched *s, uint32_t ji, double now,
                          struct carma_sched_why *out)
{
    struct why_buf b = {out->text, sizeof out->text, 0};
    const struct carma_job *j = &s->jobs[ji];
    uint32_t head = ref_head(s, &s->recovery);
    int recovery = head != CARMA_NONE;
    if (!recovery)
        head = ref_head(s, &s->main);
    if (head != ji) {
        out->code = CARMA_WHY_BEHIND;
        why_put(&b, "job %llu %s goes first: policy %s places the head of the queue only",
                (unsigned long long)s->jobs[head].id,
                recovery && j->queue != CARMA_QUEUE_RECOVERY ? "in the recovery queue"
                                                             : "at the head of the queue",
                s->policy->name);
        return;
    }
    struct why_job w = {.j = j, .now = now};
    if (j->peak_mib) {
        uint64_t kth = kth_largest(s, j->gpus);
        w.reached = kth > j->peak_mib ? j->peak_mib : kth == j->peak_mib ? j->peak_mib - 1 : 0;
    }
    /* the idle GPUs first: enough of them place it whatever else holds */
    size_t idle = 0;
    for (size_t gi = 0; gi < s->ngpus; gi++)
        idle += why_ref_gpu(s, &w, (uint32_t)gi, NULL) == OB_NONE;
    if (idle >= j->gpus) {
        out->code = CARMA_WHY_PLACING;
        why_put(&b, "it fits now on %u idle GPU%s: the next step starts it", j->gpus,
                j->gpus == 1 ? "" : "s");
        return;
    }
    if (recovery || j->exclusive || s->policy->order == CARMA_ORDER_NONE) {
        char pre[160];
        snprintf(pre, sizeof pre, "must run alone (%s): ", why_ref_idle_only(s, recovery, j));
        why_gpus(s, &w, pre, "idle ", "", out);
        return;
    }
    w.colloc = 1;
    char post[160] = " out of their grace";
    if (s->policy->gated && s->policy->req == CARMA_REQ_NONE) {
        w.min_free = (int64_t)s->p.or_min_free_mib;
        snprintf(post, sizeof post, " with %llu MiB free", (unsigned long long)w.min_free);
    } else if (s->policy->gated) {
        w.min_free = (int64_t)(j->mem_mib + s->p.req_margin_mib);
        snprintf(post, sizeof post, " with %llu MiB free (%llu + %llu)",
                 (unsigned long long)w.min_free, (unsigned long long)j->mem_mib,
                 (unsigned long long)s->p.req_margin_mib);
    }
    why_gpus(s, &w, "", "", post, out);
}

/* The verdicts of one walk by the shape of the job judged (all that auto_gain reads of
 * it): a long queue of a few kinds of job is judged once per kind. */
#define WHY_SHAPES 8
struct why_shapes {
    size_t n;
    struct {
        uint64_t need;
        uint32_t sm, busy;
        uint16_t gpus;
        uint8_t only_idle, honour, fits;
    } e[WHY_SHAPES];
};

/* auto: whether job k, judged as the step would (honour: AUTO_SCAN_*, as step_auto passes), can
 * start on the GPUs as they are. */
static int why_auto_fits(struct carma_sched *s, const struct carma_job *k, int honour,
                         struct why_shapes *memo)
{
    int only_idle, loosest;
    uint64_t need = auto_need(s, k, &only_idle, &loosest);
    float sm = k->smact < 0 ? 1.0f : k->smact;
    uint32_t smb = float_bits(sm), bb = float_bits(k->busy);
    for (size_t e = 0; e < memo->n; e++)
        if (memo->e[e].need == need && memo->e[e].sm == smb && memo->e[e].busy == bb &&
            memo->e[e].gpus == k->gpus && memo->e[e].only_idle == only_idle &&
            memo->e[e].honour == honour)
            return memo->e[e].fits;
    size_t n = 0;
    for (size_t gi = 0; gi < s->ngpus && n < k->gpus; gi++)
        n += auto_gain(s, (uint32_t)gi, need, only_idle, sm, k->busy, k->gpus, honour) >= 0;
    int fits = n >= k->gpus;
    size_t e = memo->n < WHY_SHAPES ? memo->n++ : (size_t)(smb ^ bb ^ need) % WHY_SHAPES;
    memo->e[e].need = need;
    memo->e[e].sm = smb;
    memo->e[e].busy = bb;
    memo->e[e].gpus = k->gpus;
    memo->e[e].only_idle = (uint8_t)only_idle;
    memo->e[e].honour = (uint8_t)honour;
    memo->e[e].fits = (uint8_t)fits;
    return fits;
}

static void why_auto(struct carma_sched *s, uint32_t ji, struct carma_sched_why *out)
{
    struct why_buf b = {out->text, sizeof out->text, 0};
    const struct carma_job *j = &s->jobs[ji];
    /* step_auto's walk up to j: the first job that cannot start blocks (the GPUs held for
     * it bind the jobs behind), and at most backfill_depth jobs behind it are looked at */
    uint32_t first = CARMA_NONE, behind = 0;
    struct why_shapes memo = {0};
    const struct carma_queue *queues[2] = {&s->recovery, &s->main};
    for (int qi = 0; qi < 2; qi++)
        for (uint32_t k = queues[qi]->head; k != CARMA_NONE; k = s->jobs[k].next) {
            if (k == ji)
                goto found;
            const struct carma_job *kj = &s->jobs[k];
            if (beyond_service(s, kj))
                continue;
            if (first != CARMA_NONE && ++behind >= s->p.backfill_depth) {
                out->code = CARMA_WHY_BEHIND;
                why_put(&b,
                        "job %llu cannot start, and auto looks at %u jobs behind it at most: "
                        "this one is further back",
                        (unsigned long long)s->jobs[first].id, s->p.backfill_depth);
                return;
            }
            if (why_auto_fits(s, kj, auto_scan_rule(s, first != CARMA_NONE, k), &memo)) {
                out->code = CARMA_WHY_WAITING;
                why_put(&b,
                        "job %llu ahead of it can start now: the next step places it, then "
                        "judges this one",
                        (unsigned long long)kj->id);
                return;
            }
            if (first == CARMA_NONE) {
                first = k;
                if (s->holder != k || !auto_reservation_serves(s, kj)) {
                    out->code = CARMA_WHY_WAITING;
                    why_put(&b,
                            "job %llu ahead of it cannot start: the next step holds GPUs for "
                            "it, then judges this one",
                            (unsigned long long)kj->id);
                    return;
                }
            }
        }
found:;
    struct why_job w = {.j = j, .honour = auto_scan_rule(s, first != CARMA_NONE, ji)};
    w.need = auto_need(s, j, &w.only_idle, &w.loosest);
    char pre[160] = "", post[96] = "";
    const char *adj = "";
    if (w.only_idle) {
        const char *why = w.loosest     ? "its bound passes the memory of the GPUs it could have"
                          : w.need == 0 ? "no memory bound"
                          : j->exclusive == CARMA_ALONE_MPS_FAULT ? why_alone_mps
                          : j->exclusive ? "it ran out of memory before, its need unknown"
                                         : "no solo profile yet";
        snprintf(pre, sizeof pre, "must run alone (%s): ", why);
        if (w.only_idle > 1)
            adj = "idle ";
        else
            snprintf(post, sizeof post, " without a carma job, %llu MiB to give",
                     (unsigned long long)w.need);
        if (w.loosest)
            snprintf(post, sizeof post, " of %llu MiB or more",
                     (unsigned long long)(w.need + s->p.margin_mib));
    } else {
        snprintf(post, sizeof post, " with %llu MiB to give", (unsigned long long)w.need);
    }
    why_gpus(s, &w, pre, adj, post, out);
}

int carma_sched_why(struct carma_sched *s, uint32_t ji, double now, struct carma_sched_why *out)
{
    const struct carma_job *j = &s->jobs[ji];
    out->code = CARMA_WHY_WAITING;
    out->text[0] = '\0';
    if (j->queue == CARMA_QUEUE_NONE || j->state != CARMA_JOB_QUEUED)
        return -ENOENT;
    if (beyond_service(s, j)) {
        size_t up = 0;
        for (size_t g = 0; g < s->ngpus; g++)
            up += !s->gpus[g].drained;
        out->code = CARMA_WHY_BEYOND_SERVICE;
        snprintf(out->text, sizeof out->text,
                 "asks for %u GPUs: %zu of the %zu GPUs are in service, the others drained",
                 j->gpus, up, s->ngpus);
        return 0;
    }
    if (s->policy->kind == CARMA_POLICY_AUTO)
        why_auto(s, ji, out);
    else
        why_reference(s, ji, now, out);
    return 0;
}
