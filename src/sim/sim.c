/* Discrete-event simulation around the core scheduler. Invariants:
 *  - a job's `remaining` solo-seconds are brought up to date (job_advance) before its
 *    rate changes, so progress is exact between events;
 *  - each GPU's energy, SMACT and memory integrals are advanced (gpu_advance) before
 *    its resident set changes, so they are exact for piecewise-constant activity;
 *  - every running job has exactly one finish entry in the heap, every GPU at most one
 *    OOM entry (an indexed heap with decrease/increase-key, no stale events). */
#include "sim/sim.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/coloc.h"

#define SIM_INF 1e300
#define SIM_STEP_CAP 256

void sim_config_default(struct sim_config *c)
{
    memset(c, 0, sizeof *c);
    c->sharing = CARMA_SHARING_MPS;
    c->policy = carma_policy_find("auto");
    c->estimator = SIM_EST_GPUMEMNET;
    carma_sched_params_default(&c->params);
    c->window = 30;
    c->max_attempts = 3;
}

/* ---- indexed min-heap over entities: jobs [0, njobs), GPUs [njobs, njobs+ngpus) ---- */

struct heap {
    uint32_t *item;  /* entity ids */
    uint32_t *pos;   /* entity -> index in item, UINT32_MAX when absent */
    double *key;     /* entity -> time */
    uint32_t n;
};

static int heap_less(const struct heap *h, uint32_t a, uint32_t b)
{
    if (h->key[a] != h->key[b])
        return h->key[a] < h->key[b];
    return a < b; /* deterministic ties: jobs before GPUs, lower ids first */
}

static void heap_swap(struct heap *h, uint32_t i, uint32_t k)
{
    uint32_t a = h->item[i], b = h->item[k];
    h->item[i] = b;
    h->item[k] = a;
    h->pos[b] = i;
    h->pos[a] = k;
}

static void heap_up(struct heap *h, uint32_t i)
{
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (!heap_less(h, h->item[i], h->item[p]))
            break;
        heap_swap(h, i, p);
        i = p;
    }
}

static void heap_down(struct heap *h, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && heap_less(h, h->item[l], h->item[m]))
            m = l;
        if (r < h->n && heap_less(h, h->item[r], h->item[m]))
            m = r;
        if (m == i)
            return;
        heap_swap(h, i, m);
        i = m;
    }
}

static void heap_set(struct heap *h, uint32_t e, double t)
{
    if (h->pos[e] == UINT32_MAX) {
        h->key[e] = t;
        h->item[h->n] = e;
        h->pos[e] = h->n;
        heap_up(h, h->n++);
        return;
    }
    double old = h->key[e];
    h->key[e] = t;
    if (t < old)
        heap_up(h, h->pos[e]);
    else
        heap_down(h, h->pos[e]);
}

static void heap_del(struct heap *h, uint32_t e)
{
    uint32_t i = h->pos[e];
    if (i == UINT32_MAX)
        return;
    h->n--;
    if (i != h->n) {
        heap_swap(h, i, h->n);
        h->pos[e] = UINT32_MAX;
        heap_up(h, i);
        heap_down(h, i);
    } else {
        h->pos[e] = UINT32_MAX;
    }
}

/* ---- state ---- */

struct sjob {
    double remaining;   /* solo-seconds of work left in this attempt */
    double last_t;      /* remaining is exact at this time */
    double end_t;       /* final end; < 0 while not ended */
    double run_s;       /* time spent running, all attempts */
    float rate;
};

struct sgpu {
    uint32_t *res;      /* resident job indices */
    uint32_t n, cap;
    /* Rates and the monitor's activity are floats (the co-location model's precision);
     * the activity and power that energy and mean SMACT integrate are doubles, exact to
     * the SM work the rates do (sum of s * rate), so that no run goes below the energy
     * bound of src/sim/bound.c by the rounding of a float. */
    float rate;         /* every resident job's rate on this GPU */
    float smact, smocc, drama;         /* what the monitor samples */
    double activity, occupancy, power; /* SMACT, SMOCC and watts integrated */
    double last_t;      /* integrals exact up to here */
    double mon_next;    /* next monitor sample time (reference policies) */
    double quiet_from;  /* from this tick on, the monitor's samples (windows, memory) are
                           the same until the resident set changes */
    int loud;           /* in sim.loud */
    double energy_j, smact_s, smocc_s, mem_mib_s, busy_s;
};

struct sim {
    const struct sim_trace *tr;
    const struct sim_config *cfg;
    struct sim_metrics *m;
    struct sim_timeline *tl;
    size_t series_limit; /* points a recorded series holds before it is compacted */
    struct carma_job *jobs;
    struct sjob *sj;
    struct carma_gpu *view;
    struct sgpu *g;
    size_t njobs, ngpus;
    struct heap heap;
    struct carma_sched sched;
    double t0;          /* first arrival */
    size_t ended;
    double max_gpu_mib;  /* the largest GPU's memory */
    /* The GPUs whose monitor may still have samples to take (mon_next <= quiet_from):
     * every one of them is here, so that a decision catches up only these, not every
     * GPU (a quiet GPU's catch-up only moves its clock, which its next one does too). */
    uint32_t *loud;
    size_t nloud;
    int hist_on;         /* est-* under --estimator carma: history is kept */
    float *hist_peak;    /* per workload: the peak a run reached once ramped up */
    double *hist_known;  /* per workload: when that peak is known, < 0 not yet: the earliest
                            ramp end of its runs not killed while ramping */
    double *hist_sure;   /* per workload: the earliest ramp end of its runs that ended after
                            it, < 0 none (the candidates no longer resident) */
    float *hist_sure_peak;
};

static double job_mem_at(const struct sim *s, uint32_t ji, double t)
{
    const struct sim_job_spec *sp = &s->tr->jobs[ji];
    double ramp = sp->ramp_s;
    double age = t - s->jobs[ji].start_s;
    if (ramp <= 0 || age >= ramp)
        return sp->mem_mib;
    return age <= 0 ? 0 : sp->mem_mib * age / ramp;
}

static double gpu_mem_at(const struct sim *s, const struct sgpu *g, double t)
{
    double m = 0;
    for (uint32_t k = 0; k < g->n; k++)
        m += job_mem_at(s, g->res[k], t);
    return m;
}

/* Sets a GPU's quiet_from and keeps sim.loud complete. */
static void gpu_set_quiet_from(struct sim *s, uint32_t gi, double q)
{
    struct sgpu *g = &s->g[gi];
    g->quiet_from = q;
    if (!g->loud && g->mon_next <= q) {
        g->loud = 1;
        s->loud[s->nloud++] = gi;
    }
}

/* Integral of a job's memory over [start, t] (linear ramp, then flat). */
static double job_mem_integral(const struct sim *s, uint32_t ji, double t)
{
    const struct sim_job_spec *sp = &s->tr->jobs[ji];
    double d = t - s->jobs[ji].start_s, r = sp->ramp_s, M = sp->mem_mib;
    if (d <= 0)
        return 0;
    if (r <= 0)
        return M * d;
    if (d <= r)
        return M * d * d / (2 * r);
    return M * (d - r / 2);
}

/* Keeps, of the points in each bucket [k w, (k + 1) w) of time from t0, the first
 * minimum and the first maximum of every metric, in time order, and the series' last
 * point (record_gpu starts from it; compaction comes before a point at a later time, or
 * at the same time as a lone last point, so series_push's rule for a third point at
 * one instant sees the same points as without it). w is a power of two: a compaction at
 * 2w after one at w keeps what one at 2w alone would. Returns the points kept. */
static size_t series_compact_at(struct sim_series *se, double t0, double w)
{
    size_t o = 0, n = se->n;
    for (size_t i = 0; i < n;) {
        double b = floor((se->t[i] - t0) / w);
        size_t j = i + 1;
        while (j < n && floor((se->t[j] - t0) / w) == b)
            j++;
        enum { NKEEP = 7 };
        size_t keep[NKEEP];
        size_t nk = 0;
        const float *v[3] = {se->mem, se->smact, se->power};
        for (int m = 0; m < 3; m++) {
            size_t lo = i, hi = i;
            for (size_t k = i + 1; k < j; k++) {
                if (v[m][k] < v[m][lo])
                    lo = k;
                if (v[m][k] > v[m][hi])
                    hi = k;
            }
            keep[nk++] = lo;
            keep[nk++] = hi;
        }
        if (j == n)
            keep[nk++] = n - 1;
        /* in index order, once each (insertion sort of at most NKEEP) */
        for (size_t a = 1; a < nk; a++)
            for (size_t c = a; c > 0 && keep[c - 1] > keep[c]; c--) {
                size_t x = keep[c];
                keep[c] = keep[c - 1];
                keep[c - 1] = x;
            }
        /* in place: the k-th point written goes to o + k <= keep[k], not yet read */
        for (size_t a = 0; a < nk; a++) {
            if (a && keep[a] == keep[a - 1])
                continue;
            size_t k = keep[a];
            se->t[o] = se->t[k];
            se->mem[o] = se->mem[k];
            se->smact[o] = se->smact[k];
            se->power[o] = se->power[k];
            o++;
        }
        i = j;
    }
    se->n = o;
    return o;
}

/* Halves a full series or better: compaction at the narrowest power-of-two bucket
 * width that leaves at most limit / 2 points, trying widths from the one that gives
 * about limit / 4 buckets over the series' span (each keeps 6 points at most, often
 * 2 to 4: the metrics move together). Returns that width. */
static double series_compact(struct sim_series *se, double t0, size_t limit)
{
    assert(se->n >= 2);
    double span = se->t[se->n - 1] - t0;
    int e;
    frexp(span > 0 ? span / (double)(limit / 4) : 1, &e);
    double w = ldexp(1, e); /* >= span / (limit / 4) */
    while (series_compact_at(se, t0, w) > limit / 2)
        w *= 2;
    return w;
}

static int series_push(struct sim *s, struct sim_series *se, double t, float mem, float sm,
                       float pw)
{
    /* At one instant keep the state before and the state after a change (a vertical
     * step in the chart); a third point at that instant replaces the second. */
    if (se->n >= 2 && se->t[se->n - 1] == t && se->t[se->n - 2] == t)
        se->n--;
    size_t limit = s->series_limit;
    if (se->n == limit)
        s->tl->series_step = fmax(s->tl->series_step, series_compact(se, s->t0, limit));
    if (se->n == se->cap) {
        size_t nc = se->cap ? se->cap * 2 : 256;
        nc = nc > limit ? limit : nc;
        double *nt = realloc(se->t, nc * sizeof *nt);
        if (!nt)
            return -ENOMEM;
        se->t = nt;
        float *a = realloc(se->mem, nc * sizeof *a);
        if (!a)
            return -ENOMEM;
        se->mem = a;
        a = realloc(se->smact, nc * sizeof *a);
        if (!a)
            return -ENOMEM;
        se->smact = a;
        a = realloc(se->power, nc * sizeof *a);
        if (!a)
            return -ENOMEM;
        se->power = a;
        se->cap = nc;
    }
    se->t[se->n] = t;
    se->mem[se->n] = mem;
    se->smact[se->n] = sm;
    se->power[se->n] = pw;
    se->n++;
    return 0;
}

/* Records the GPU's state at t, preceded by the ramp ends since its last point so
 * that the memory line bends where it really does. Every ramp end appended lies after
 * the last point, so appending them in time order keeps the series ordered. */
static int record_gpu(struct sim *s, uint32_t gi, double t)
{
    if (!s->tl || gi >= s->tl->ngpus)
        return 0;
    struct sgpu *g = &s->g[gi];
    struct sim_series *se = &s->tl->gpu[gi];
    double from = se->n ? se->t[se->n - 1] : s->t0;
    for (;;) {
        double next = t;
        for (uint32_t k = 0; k < g->n; k++) {
            uint32_t ji = g->res[k];
            double e = s->jobs[ji].start_s + s->tr->jobs[ji].ramp_s;
            if (e > from && e < next)
                next = e;
        }
        if (next >= t)
            break;
        if (series_push(s, se, next, (float)gpu_mem_at(s, g, next), g->smact, (float)g->power))
            return -ENOMEM;
        from = next;
    }
    return series_push(s, se, t, (float)gpu_mem_at(s, g, t), g->smact, (float)g->power);
}

static int record_bar(struct sim *s, uint32_t ji, double end, enum carma_report_outcome o)
{
    if (!s->tl)
        return 0;
    struct sim_timeline *tl = s->tl;
    const struct carma_job *j = &s->jobs[ji];
    uint16_t recorded = 0;
    for (uint16_t k = 0; k < j->nplaced; k++)
        recorded += j->gpu[k] < tl->ngpus;
    if (recorded == 0) {
        tl->nruns_other++;
        return 0;
    }
    /* Past record_bars bars, the runs that started before now (this one included) and
     * no others: the chart stays complete up to then, and the ones still running now
     * are what it keeps past the limit. */
    size_t limit = s->cfg->record_bars ? s->cfg->record_bars : CARMA_REPORT_KEEP_BARS;
    if (tl->bars_until == INFINITY && tl->nbars + recorded > limit)
        tl->bars_until = end - s->t0;
    if (j->start_s - s->t0 >= tl->bars_until) {
        tl->nruns_late++;
        return 0;
    }
    for (uint16_t k = 0; k < j->nplaced; k++) {
        if (j->gpu[k] >= tl->ngpus)
            continue;
        if (tl->nbars == tl->capbars) {
            size_t nc = tl->capbars ? tl->capbars * 2 : 256;
            if (tl->capbars < limit && nc > limit)
                nc = limit; /* then a little at a time for the runs still going */
            else if (tl->capbars >= limit)
                nc = tl->capbars + tl->capbars / 16 + 16;
            struct carma_report_bar *nb = realloc(tl->bars, nc * sizeof *nb);
            if (!nb)
                return -ENOMEM;
            tl->bars = nb;
            tl->capbars = nc;
        }
        const struct sim_job_spec *sp = &s->tr->jobs[ji];
        tl->bars[tl->nbars++] = (struct carma_report_bar){
            .gpu = j->gpu[k],
            .start_s = j->start_s - s->t0,
            .end_s = end - s->t0,
            .job = j->id,
            .label = sp->workload < s->tr->nworkloads ? s->tr->workloads[sp->workload].name
                                                      : NULL,
            .outcome = o,
        };
    }
    return 0;
}

/* Monitor samples at whole seconds up to and including t, from the state that held
 * since the last change; only the last `window` of them can matter. */
static void monitor_catchup(struct sim *s, uint32_t gi, double t)
{
    struct sgpu *g = &s->g[gi];
    struct carma_gpu *v = &s->view[gi];
    if (g->mon_next > t)
        return;
    double last = floor(t);
    /* Past quiet_from every sample is the one already taken: the windows hold nothing
     * but the current activity, memory is flat. Only the clock moves. */
    if (g->mon_next > g->quiet_from) {
        g->mon_next = last + 1.0;
        return;
    }
    double count = last - g->mon_next + 1;
    double first = count > v->smact.cap ? last - v->smact.cap + 1 : g->mon_next;
    for (double tau = first; tau <= last; tau += 1.0) {
        carma_window_push(&v->smact, g->smact);
        carma_window_push(&v->smocc, g->smocc);
        carma_window_push(&v->drama, g->drama);
    }
    double mem = gpu_mem_at(s, g, last);
    v->mem_used_mib = (uint64_t)llround(mem);
    v->carma_used_mib = v->mem_used_mib;
    g->mon_next = last + 1.0;
}

/* Brings a job's remaining work up to t. */
static void job_advance(struct sim *s, uint32_t ji, double t)
{
    struct sjob *j = &s->sj[ji];
    if (t > j->last_t) {
        j->remaining -= (double)j->rate * (t - j->last_t);
        if (j->remaining < 0)
            j->remaining = 0;
        j->last_t = t;
    }
}

/* Brings a GPU's integrals and its jobs' progress up to t (before a change). */
static void gpu_advance(struct sim *s, uint32_t gi, double t)
{
    struct sgpu *g = &s->g[gi];
    if (s->cfg->policy->flags & CARMA_POLICY_NEEDS_WINDOW)
        monitor_catchup(s, gi, t);
    double dt = t - g->last_t;
    if (dt > 0) {
        g->energy_j += g->power * dt;
        g->smact_s += g->activity * dt;
        g->smocc_s += g->occupancy * dt;
        if (g->n)
            g->busy_s += dt;
        g->last_t = t;
    }
    for (uint32_t k = 0; k < g->n; k++)
        job_advance(s, g->res[k], t);
}

/* The earliest time after t at which the GPU's memory passes its capacity, or INF. */
static double oom_time(const struct sim *s, uint32_t gi, double t)
{
    const struct sgpu *g = &s->g[gi];
    double cap = s->cfg->kinds[gi]->mem_mib, full = 0;
    for (uint32_t k = 0; k < g->n; k++)
        full += s->tr->jobs[g->res[k]].mem_mib;
    if (full <= cap)
        return SIM_INF;
    double m = gpu_mem_at(s, g, t);
    if (m > cap)
        return t;
    /* Walk the ramp ends in time order; memory is linear between them. */
    double cur = t;
    for (;;) {
        double next = SIM_INF, slope = 0;
        for (uint32_t k = 0; k < g->n; k++) {
            uint32_t ji = g->res[k];
            const struct sim_job_spec *sp = &s->tr->jobs[ji];
            double e = s->jobs[ji].start_s + sp->ramp_s;
            if (sp->ramp_s > 0 && e > cur) {
                slope += sp->mem_mib / sp->ramp_s;
                if (e < next)
                    next = e;
            }
        }
        if (slope <= 0)
            return SIM_INF; /* cannot happen when full > cap, kept for safety */
        double tc = cur + (cap - m) / slope;
        if (tc <= next)
            return tc > cur ? tc : cur;
        m = gpu_mem_at(s, g, next);
        cur = next;
    }
}

/* After a change of the resident set: new rates, activity, power, finish and OOM times. */
static void gpu_settle(struct sim *s, uint32_t gi, double t)
{
    struct sgpu *g = &s->g[gi];
    const struct sim_gpu_kind *kind = s->cfg->kinds[gi];
    float S = 0, B = 0, oc = 0, dr = 0;
    double Sd = 0, Od = 0;
    for (uint32_t k = 0; k < g->n; k++) {
        const struct sim_job_spec *sp = &s->tr->jobs[g->res[k]];
        S += sp->smact;
        Sd += sp->smact;
        Od += sp->smocc;
        B += carma_coloc_busy(sp->smact);
        oc += sp->smocc;
        dr += sp->drama;
    }
    g->rate = carma_coloc_rate(s->cfg->sharing, g->n, S, B);
    g->smact = fminf(1.0f, S * g->rate);
    g->smocc = fminf(1.0f, oc * g->rate);
    g->drama = fminf(1.0f, dr * g->rate);
    g->activity = fmin(1.0, Sd * (double)g->rate);
    g->occupancy = fmin(1.0, Od * (double)g->rate);
    g->power =
        kind->idle_w +
        (g->n ? kind->static_w + (kind->max_w - kind->idle_w - kind->static_w) * g->activity : 0);
    /* The window fills with the new activity W ticks on, memory flattens when the last
     * ramp ends (one tick spare on each). */
    double quiet = floor(t) + s->view[gi].smact.cap + 1;
    for (uint32_t k = 0; k < g->n; k++) {
        uint32_t ji = g->res[k];
        const struct carma_job *cj = &s->jobs[ji];
        float r = g->rate;
        for (uint16_t q = 0; q < cj->nplaced; q++)
            if (s->g[cj->gpu[q]].rate < r)
                r = s->g[cj->gpu[q]].rate;
        job_advance(s, ji, t);
        double ramp_end = cj->start_s + s->tr->jobs[ji].ramp_s;
        if (ramp_end > t && ceil(ramp_end) + 1 > quiet)
            quiet = ceil(ramp_end) + 1;
        s->sj[ji].rate = r;
        heap_set(&s->heap, ji, t + s->sj[ji].remaining / r);
    }
    gpu_set_quiet_from(s, (uint32_t)gi, quiet);
    double to = oom_time(s, gi, t);
    if (to < SIM_INF)
        heap_set(&s->heap, (uint32_t)(s->njobs + gi), to);
    else
        heap_del(&s->heap, (uint32_t)(s->njobs + gi));
}

static int gpu_add(struct sgpu *g, uint32_t ji)
{
    if (g->n == g->cap) {
        uint32_t nc = g->cap ? g->cap * 2 : 4;
        uint32_t *nr = realloc(g->res, nc * sizeof *nr);
        if (!nr)
            return -ENOMEM;
        g->res = nr;
        g->cap = nc;
    }
    g->res[g->n++] = ji;
    return 0;
}

static void gpu_remove(struct sgpu *g, uint32_t ji)
{
    for (uint32_t k = 0; k < g->n; k++)
        if (g->res[k] == ji) {
            memmove(&g->res[k], &g->res[k + 1], (g->n - k - 1) * sizeof *g->res);
            g->n--;
            return;
        }
    assert(!"job not resident");
}

static int launch(struct sim *s, uint32_t ji, double t)
{
    struct carma_job *j = &s->jobs[ji];
    struct sjob *sj = &s->sj[ji];
    sj->remaining = s->tr->jobs[ji].duration_s; /* a retry starts over */
    sj->last_t = t;
    sj->rate = 1.0f;
    for (uint16_t k = 0; k < j->nplaced; k++) {
        gpu_advance(s, j->gpu[k], t);
        if (record_gpu(s, j->gpu[k], t) || gpu_add(&s->g[j->gpu[k]], ji))
            return -ENOMEM;
    }
    for (uint16_t k = 0; k < j->nplaced; k++) {
        gpu_settle(s, j->gpu[k], t);
        if (record_gpu(s, j->gpu[k], t))
            return -ENOMEM;
    }
    return 0;
}

/* History (--estimator carma): a run of a workload tells its peak once its memory has
 * ramped up to it, as carmad's monitor sees it; a run killed while ramping never reached
 * its peak and tells nothing (carmad keeps no history from an attempt that ran out of
 * memory: its peak is below the need). Each launch is a candidate, known at its ramp's
 * end unless it dies before; ends come before arrivals at one instant, so an arrival
 * never reads a candidate that dies at that instant. */
static void remember(struct sim *s, uint32_t ji)
{
    const struct sim_job_spec *sp = &s->tr->jobs[ji];
    uint16_t w = sp->workload;
    double at = s->jobs[ji].start_s + sp->ramp_s;
    if (s->hist_on && w < s->tr->nworkloads && (s->hist_known[w] < 0 || at < s->hist_known[w])) {
        s->hist_known[w] = at;
        s->hist_peak[w] = sp->mem_mib;
    }
}

/* Run ji of a workload ends at t, off its GPUs already: if it reached its ramp's end it
 * stays a candidate (hist_sure); if it died ramping and was the earliest candidate, the
 * next earliest takes its place, among those ended and those still running. */
static void remember_end(struct sim *s, uint32_t ji, double t, enum carma_outcome o)
{
    const struct sim_job_spec *sp = &s->tr->jobs[ji];
    uint16_t w = sp->workload;
    if (!s->hist_on || w >= s->tr->nworkloads)
        return;
    double at = s->jobs[ji].start_s + sp->ramp_s;
    if (o != CARMA_OUTCOME_OOM || t > at) {
        if (s->hist_sure[w] < 0 || at < s->hist_sure[w]) {
            s->hist_sure[w] = at;
            s->hist_sure_peak[w] = sp->mem_mib;
        }
        return;
    }
    if (s->hist_known[w] != at)
        return;
    s->hist_known[w] = s->hist_sure[w];
    s->hist_peak[w] = s->hist_sure_peak[w];
    for (size_t gi = 0; gi < s->ngpus; gi++)
        for (uint32_t k = 0; k < s->g[gi].n; k++) {
            uint32_t r = s->g[gi].res[k];
            const struct sim_job_spec *rp = &s->tr->jobs[r];
            double rat = s->jobs[r].start_s + rp->ramp_s;
            if (rp->workload == w && (s->hist_known[w] < 0 || rat < s->hist_known[w])) {
                s->hist_known[w] = rat;
                s->hist_peak[w] = rp->mem_mib;
            }
        }
}

/* Takes job ji off its GPUs at t (finish or crash) and tells the scheduler. */
static int end_attempt(struct sim *s, uint32_t ji, double t, enum carma_outcome o)
{
    struct carma_job *j = &s->jobs[ji];
    uint16_t n = j->nplaced;
    uint16_t gpus[CARMA_JOB_MAX_GPUS];
    memcpy(gpus, j->gpu, n * sizeof *gpus);
    double peak = 0;
    for (uint16_t k = 0; k < n; k++) {
        gpu_advance(s, gpus[k], t);
        if (record_gpu(s, gpus[k], t))
            return -ENOMEM;
    }
    peak = job_mem_at(s, ji, t);
    for (uint16_t k = 0; k < n; k++) {
        s->g[gpus[k]].mem_mib_s += job_mem_integral(s, ji, t);
        gpu_remove(&s->g[gpus[k]], ji);
    }
    heap_del(&s->heap, ji);
    s->sj[ji].run_s += t - j->start_s;
    if (o == CARMA_OUTCOME_OOM) {
        s->m->oom_crashes++;
        s->m->lost_gpu_s += (t - j->start_s) * n;
    }
    if (record_bar(s, ji, t, o == CARMA_OUTCOME_OOM ? CARMA_REPORT_OOM : CARMA_REPORT_OK))
        return -ENOMEM;
    remember_end(s, ji, t, o);
    int requeued = carma_sched_finish(&s->sched, ji, o, (uint64_t)ceil(peak), t);
    for (uint16_t k = 0; k < n; k++) {
        gpu_settle(s, gpus[k], t);
        if (record_gpu(s, gpus[k], t))
            return -ENOMEM;
    }
    if (!requeued) {
        s->sj[ji].end_t = t;
        s->ended++;
        if (j->state == CARMA_JOB_SUCCEEDED)
            s->m->succeeded++;
        else
            s->m->gave_up++;
    }
    return 0;
}

/* The job whose allocation overflows: the latest launched of the jobs still ramping at
 * t, where a job launched at t counts as ramping (with no ramp its whole peak arrives at
 * once); if none is, the latest launched. Resident jobs are in launch order, so ties go
 * to the later one. */
static uint32_t oom_victim(const struct sim *s, uint32_t gi, double t)
{
    const struct sgpu *g = &s->g[gi];
    uint32_t v = CARMA_NONE;
    int v_ramping = 0;
    for (uint32_t k = 0; k < g->n; k++) {
        uint32_t ji = g->res[k];
        int ramping = t <= s->jobs[ji].start_s + s->tr->jobs[ji].ramp_s;
        if (ramping || !v_ramping) {
            v = ji;
            v_ramping = ramping;
        }
    }
    return v;
}

static void fill_job(struct sim *s, uint32_t ji)
{
    const struct sim_job_spec *sp = &s->tr->jobs[ji];
    struct carma_job *j = &s->jobs[ji];
    carma_job_init(j, ji + 1, sp->gpus, sp->submit_s);
    uint64_t truth = (uint64_t)ceil(sp->mem_mib);
    switch ((enum carma_requirement)s->cfg->policy->req) {
    case CARMA_REQ_ORACLE: j->mem_mib = truth; break;
    case CARMA_REQ_EST: {
        /* No answer counts as CARMA's 40000 did: more than a shared GPU can give, so
         * the job waits for an idle one. carma's own answer, when the catalog has
         * none, comes from history at arrival (see arrive()). A fractional answer
         * is truncated, as CARMA's int(float(x)) does. */
        float e = sp->est_mib[s->cfg->estimator];
        j->mem_mib = e > 0 ? (uint64_t)e : (uint64_t)s->max_gpu_mib;
        break;
    }
    case CARMA_REQ_NONE: j->mem_mib = 0; break;
    }
    /* auto: the bound is the catalog's measured peak (the ground rule); the
     * solo profile is what a history of earlier runs would give. */
    if (s->cfg->policy->kind == CARMA_POLICY_AUTO) {
        j->mem_mib = 0;
        j->bound_mib = truth;
        j->smact = sp->smact;
        j->smocc = sp->smocc;
        j->drama = sp->drama;
    }
    j->max_attempts = (uint16_t)(s->cfg->max_attempts > UINT16_MAX ? UINT16_MAX
                                                                   : s->cfg->max_attempts);
    s->sj[ji].end_t = -1;
}

/* A job enters the queue. Under `--estimator carma` without a catalog answer, the
 * requirement is what history knows at that moment: the peak an earlier run of the
 * same workload reached once its memory ramped up (as carmad's monitor records it; a
 * run killed while ramping tells nothing, see remember), else nothing, and the job
 * waits for an idle GPU. */
static void arrive(struct sim *s, uint32_t ji, double now)
{
    const struct sim_job_spec *sp = &s->tr->jobs[ji];
    uint16_t w = sp->workload;
    if (s->cfg->policy->req == CARMA_REQ_EST && s->cfg->estimator == SIM_EST_CARMA &&
        !(sp->est_mib[SIM_EST_CARMA] > 0) && w < s->tr->nworkloads && s->hist_known[w] >= 0 &&
        now >= s->hist_known[w])
        s->jobs[ji].mem_mib = (uint64_t)ceil(s->hist_peak[w]);
    carma_sched_submit(&s->sched, ji, now);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The p-th percentile of a[0..n) sorted: linear interpolation between the order
 * statistics at rank p/100 * (n - 1) (numpy's default), so it may lie between two
 * values (of 1 h and 10 h, p99 is 9.91 h). docs/model.md says so. */
static double pct_sorted(const double *a, size_t n, double p)
{
    if (n == 0)
        return 0;
    double rank = p / 100.0 * (double)(n - 1);
    size_t lo = (size_t)rank, hi = lo + 1 < n ? lo + 1 : lo;
    return a[lo] + (a[hi] - a[lo]) * (rank - (double)lo);
}

static int finish_metrics(struct sim *s, double t_end)
{
    struct sim_metrics *m = s->m;
    double *jct = malloc((s->njobs ? s->njobs : 1) * 2 * sizeof *jct);
    if (!jct)
        return -ENOMEM;
    double *wt = jct + (s->njobs ? s->njobs : 1);
    /* Makespan, JCT and wait: the jobs that finished only (a job given up has no
     * completion time). Energy, activity and memory: every GPU up to t_end, the last
     * job's end, crashed runs of given-up jobs included (that energy was spent), the
     * work they never did not (so it can fall below the bound). */
    size_t n = 0;
    double sum = 0, wait = 0, last_finish = s->t0;
    for (size_t i = 0; i < s->njobs; i++) {
        if (s->sj[i].end_t < 0 || s->jobs[i].state != CARMA_JOB_SUCCEEDED)
            continue;
        double d = s->sj[i].end_t - s->tr->jobs[i].submit_s;
        jct[n] = d;
        wt[n++] = d - s->sj[i].run_s;
        sum += d;
        wait += d - s->sj[i].run_s;
        if (s->sj[i].end_t > last_finish)
            last_finish = s->sj[i].end_t;
    }
    qsort(jct, n, sizeof *jct, cmp_double);
    qsort(wt, n, sizeof *wt, cmp_double);
    m->mean_jct_s = n ? sum / (double)n : 0;
    m->mean_wait_s = n ? wait / (double)n : 0;
    m->p50_jct_s = pct_sorted(jct, n, 50);
    m->p99_jct_s = pct_sorted(jct, n, 99);
    m->p50_wait_s = pct_sorted(wt, n, 50);
    m->p99_wait_s = pct_sorted(wt, n, 99);
    free(jct);
    m->makespan_s = n ? last_finish - s->t0 : 0;
    double e = 0, sm = 0, oc = 0, mem = 0, busy = 0, cap_s = 0;
    for (size_t gi = 0; gi < s->ngpus; gi++) {
        gpu_advance(s, (uint32_t)gi, t_end);
        e += s->g[gi].energy_j;
        sm += s->g[gi].smact_s;
        oc += s->g[gi].smocc_s;
        mem += s->g[gi].mem_mib_s / s->cfg->kinds[gi]->mem_mib;
        busy += s->g[gi].busy_s;
        cap_s += t_end - s->t0;
    }
    m->energy_j = e;
    m->busy_gpu_s = busy;
    m->mean_smact = cap_s > 0 ? sm / cap_s : 0;
    m->mean_smocc = cap_s > 0 ? oc / cap_s : 0;
    m->mean_mem_used_frac = cap_s > 0 ? mem / cap_s : 0;
    m->placements = s->sched.placements;
    return 0;
}

static void sim_free(struct sim *s)
{
    carma_sched_free(&s->sched);
    if (s->g)
        for (size_t i = 0; i < s->ngpus; i++)
            free(s->g[i].res);
    free(s->g);
    free(s->view);
    free(s->jobs);
    free(s->sj);
    free(s->heap.item);
    free(s->heap.pos);
    free(s->heap.key);
    free(s->hist_peak);
    free(s->hist_known);
    free(s->hist_sure);
    free(s->hist_sure_peak);
    free(s->loud);
}

void sim_timeline_free(struct sim_timeline *tl)
{
    if (!tl)
        return;
    for (size_t i = 0; tl->gpu && i < tl->ngpus; i++) {
        free(tl->gpu[i].t);
        free(tl->gpu[i].mem);
        free(tl->gpu[i].smact);
        free(tl->gpu[i].power);
    }
    free(tl->gpu);
    free(tl->bars);
    memset(tl, 0, sizeof *tl);
}

/* Rejects what could never finish: too many GPUs, or a peak no GPU can hold alone. */
/* The memory of the k-th largest GPU of the run (k >= 1, at most ngpus). GPU kinds are
 * few: count per distinct memory size. */
static double kth_largest_mem(const struct sim_config *cfg, size_t k)
{
    double best = 0, above = INFINITY;
    size_t seen = 0;
    while (seen < k) {
        best = 0;
        size_t n = 0;
        for (size_t g = 0; g < cfg->ngpus; g++) {
            double m = cfg->kinds[g]->mem_mib;
            if (m < above && m > best) {
                best = m;
                n = 0;
            }
            n += m == best;
        }
        if (n == 0)
            return 0;
        seen += n;
        above = best;
    }
    return best;
}

/* Names job i in a message: "FILE:LINE: job NAME" or "job I (NAME)". */
static int job_err(struct carma_err *err, const char *file, const struct sim_trace *t, size_t i,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int job_err(struct carma_err *err, const char *file, const struct sim_trace *t, size_t i,
                   const char *fmt, ...)
{
    const struct sim_job_spec *sp = &t->jobs[i];
    struct carma_quoted name = carma_quote(sim_trace_job_name(t, i), SIM_NAME_MAX);
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (file && sp->line)
        return carma_err_at(err, file, sp->line, "job %s %s", name.s, what);
    return carma_err_set(err, -EINVAL, "job %zu (%s) %s", i + 1, name.s, what);
}

int sim_trace_check(const struct sim_trace *t, const struct sim_config *cfg, const char *file,
                    struct carma_err *err)
{
    double maxmem = 0;
    for (size_t i = 0; i < cfg->ngpus; i++)
        if (cfg->kinds[i]->mem_mib > maxmem)
            maxmem = cfg->kinds[i]->mem_mib;
    /* a multi-GPU job holds its peak on each of its GPUs: it needs that many that large
     * (the k-th largest memory, computed once per k) */
    double kth[CARMA_JOB_MAX_GPUS + 1] = {0};
    for (size_t i = 0; i < t->njobs; i++) {
        const struct sim_job_spec *sp = &t->jobs[i];
        if (sp->gpus == 0 || sp->gpus > cfg->ngpus || sp->gpus > CARMA_JOB_MAX_GPUS)
            return job_err(err, file, t, i, "needs %u GPU%s but the run has %zu",
                           (unsigned)sp->gpus, sp->gpus == 1 ? "" : "s", cfg->ngpus);
        if (sp->mem_mib > maxmem)
            return job_err(err, file, t, i,
                           "peaks at %.0f MiB per GPU; the largest GPU has %.0f MiB",
                           (double)sp->mem_mib, maxmem);
        if (sp->gpus > 1 && kth[sp->gpus] == 0)
            kth[sp->gpus] = kth_largest_mem(cfg, sp->gpus);
        if (sp->gpus > 1 && sp->mem_mib > kth[sp->gpus]) {
            size_t large = 0;
            for (size_t g = 0; g < cfg->ngpus; g++)
                large += cfg->kinds[g]->mem_mib >= sp->mem_mib;
            return job_err(err, file, t, i,
                           "peaks at %.0f MiB on each of its %u GPUs; the run has %zu GPU%s "
                           "that large",
                           (double)sp->mem_mib, (unsigned)sp->gpus, large, large == 1 ? "" : "s");
        }
        if (!(sp->duration_s > 0) || !(sp->submit_s >= 0) ||
            (i && sp->submit_s < t->jobs[i - 1].submit_s))
            return job_err(err, file, t, i, "has a bad time or duration");
    }
    return 0;
}

/* The next tick of CARMA's loop after a decision at `now`. A decision that placed nothing
 * is repeated unchanged at every tick until an event, a GPU's monitor view moving (a
 * window filling, memory ramping) or a grace window ending; the ticks in between are
 * skipped, which gives the same schedule in far fewer steps on a long, busy trace. */
static double next_decision(struct sim *s, double now, size_t placed)
{
    double tick = floor(now) + 1.0;
    if (placed || s->cfg->every_tick)
        return tick;
    if (s->cfg->policy->flags & CARMA_POLICY_NEEDS_WINDOW)
        for (size_t k = 0; k < s->nloud; k++) /* a GPU not there is quiet by now */
            if (s->g[s->loud[k]].quiet_from > now)
                return tick;
    /* One tick early where the grace's end rounds onto a whole second. */
    double wake = floor(carma_sched_next_timer(&s->sched, now));
    return wake > tick ? wake : tick;
}

int sim_run(const struct sim_trace *t, const struct sim_config *cfg, struct sim_metrics *m,
            struct sim_timeline *tl, struct carma_err *err)
{
    memset(m, 0, sizeof *m);
    if (!cfg->policy || cfg->ngpus == 0)
        return carma_err_set(err, -EINVAL, "no policy or no GPUs");
    if (t->njobs >= UINT32_MAX - cfg->ngpus)
        return carma_err_set(err, -EINVAL, "trace too large");
    int rc = sim_trace_check(t, cfg, NULL, err);
    if (rc)
        return rc;
    struct sim s = {.tr = t, .cfg = cfg, .m = m, .njobs = t->njobs, .ngpus = cfg->ngpus};
    m->jobs = t->njobs;
    size_t ne = t->njobs + cfg->ngpus;
    s.jobs = calloc(t->njobs ? t->njobs : 1, sizeof *s.jobs);
    s.sj = calloc(t->njobs ? t->njobs : 1, sizeof *s.sj);
    s.view = calloc(cfg->ngpus, sizeof *s.view);
    s.g = calloc(cfg->ngpus, sizeof *s.g);
    s.heap.item = malloc(ne * sizeof *s.heap.item);
    s.heap.pos = malloc(ne * sizeof *s.heap.pos);
    s.heap.key = malloc(ne * sizeof *s.heap.key);
    s.hist_peak = calloc(t->nworkloads ? t->nworkloads : 1, sizeof *s.hist_peak);
    s.hist_known = malloc((t->nworkloads ? t->nworkloads : 1) * sizeof *s.hist_known);
    s.hist_sure = malloc((t->nworkloads ? t->nworkloads : 1) * sizeof *s.hist_sure);
    s.hist_sure_peak = calloc(t->nworkloads ? t->nworkloads : 1, sizeof *s.hist_sure_peak);
    s.hist_on = cfg->policy->req == CARMA_REQ_EST && cfg->estimator == SIM_EST_CARMA;
    s.loud = malloc(cfg->ngpus * sizeof *s.loud);
    if (!s.jobs || !s.sj || !s.view || !s.g || !s.heap.item || !s.heap.pos || !s.heap.key ||
        !s.hist_peak || !s.hist_known || !s.hist_sure || !s.hist_sure_peak || !s.loud) {
        sim_free(&s);
        return carma_err_set(err, -ENOMEM, "out of memory for %zu jobs", t->njobs);
    }
    memset(s.heap.pos, 0xff, ne * sizeof *s.heap.pos);
    s.t0 = t->njobs ? t->jobs[0].submit_s : 0;
    for (size_t gi = 0; gi < cfg->ngpus; gi++) {
        carma_gpu_init(&s.view[gi], (uint64_t)cfg->kinds[gi]->mem_mib, cfg->window,
                       cfg->sharing);
        s.view[gi].island = cfg->islands ? cfg->islands[gi] : 0;
        s.g[gi].last_t = s.t0;
        s.g[gi].mon_next = ceil(s.t0);
        gpu_set_quiet_from(&s, (uint32_t)gi, floor(s.t0) + s.view[gi].smact.cap + 1);
        s.g[gi].power = cfg->kinds[gi]->idle_w;
    }
    for (size_t w = 0; w < t->nworkloads; w++)
        s.hist_known[w] = s.hist_sure[w] = -1;
    for (size_t gi = 0; gi < cfg->ngpus; gi++)
        if (cfg->kinds[gi]->mem_mib > s.max_gpu_mib)
            s.max_gpu_mib = cfg->kinds[gi]->mem_mib;
    for (size_t i = 0; i < t->njobs; i++)
        fill_job(&s, (uint32_t)i);
    rc = carma_sched_init(&s.sched, s.jobs, s.view, cfg->ngpus, cfg->policy, &cfg->params);
    if (rc) {
        sim_free(&s);
        return carma_err_set(err, rc, "scheduler: out of memory");
    }
    if (cfg->coloc)
        carma_sched_set_coloc(&s.sched, cfg->coloc, 1); /* every GPU kind 0 */
    if (tl) {
        memset(tl, 0, sizeof *tl);
        tl->bars_until = INFINITY;
        tl->ngpus = cfg->record_gpus && cfg->record_gpus < cfg->ngpus ? cfg->record_gpus
                                                                      : cfg->ngpus;
        tl->gpu = calloc(tl->ngpus, sizeof *tl->gpu);
        if (!tl->gpu) {
            sim_free(&s);
            return carma_err_set(err, -ENOMEM, "out of memory");
        }
        s.tl = tl;
        s.series_limit = cfg->record_points ? cfg->record_points : CARMA_REPORT_KEEP_POINTS;
        s.series_limit = s.series_limit < 64 ? 64 : s.series_limit;
        for (size_t gi = 0; gi < tl->ngpus; gi++)
            if (record_gpu(&s, (uint32_t)gi, s.t0))
                rc = -ENOMEM;
    }
    const int ticking = (cfg->policy->flags & CARMA_POLICY_TICK_1S) != 0;
    struct carma_placement out[SIM_STEP_CAP];
    size_t next_arrival = 0;
    double next_tick = SIM_INF, t_last = s.t0;
    uint64_t progress_every = SIM_PROGRESS_EVENTS;
    while (rc == 0 && s.ended < s.njobs) {
        double ta = next_arrival < t->njobs ? t->jobs[next_arrival].submit_s : SIM_INF;
        double te = s.heap.n ? s.heap.key[s.heap.item[0]] : SIM_INF;
        double now = ta < te ? ta : te;
        if (ticking && next_tick < now)
            now = next_tick;
        if (now >= SIM_INF) {
            size_t first = 0;
            while (first < s.njobs && s.jobs[first].state != CARMA_JOB_QUEUED)
                first++;
            const struct sim_job_spec *sp = &t->jobs[first < s.njobs ? first : 0];
            rc = carma_err_set(err, -EDEADLK,
                               "%zu job%s can never be placed; the first is job %zu (%s: %u "
                               "GPU%s of %.0f MiB)",
                               s.njobs - s.ended, s.njobs - s.ended == 1 ? "" : "s", first + 1,
                               carma_quote(sim_trace_job_name(t, first < s.njobs ? first : 0),
                                           SIM_NAME_MAX)
                                   .s,
                               (unsigned)sp->gpus, sp->gpus == 1 ? "" : "s", (double)sp->mem_mib);
            break;
        }
        t_last = now;
        int changed = 0;
        /* Ends first (they free room), then arrivals, then the decision. */
        while (rc == 0 && s.heap.n && s.heap.key[s.heap.item[0]] <= now) {
            uint32_t e = s.heap.item[0];
            m->events++;
            if (e < s.njobs) {
                rc = end_attempt(&s, e, now, CARMA_OUTCOME_SUCCEEDED);
            } else {
                uint32_t gi = e - (uint32_t)s.njobs;
                uint32_t v = oom_victim(&s, gi, now);
                heap_del(&s.heap, e);
                if (v != CARMA_NONE)
                    rc = end_attempt(&s, v, now, CARMA_OUTCOME_OOM);
            }
            changed = 1;
        }
        while (next_arrival < t->njobs && t->jobs[next_arrival].submit_s <= now) {
            arrive(&s, (uint32_t)next_arrival, now);
            next_arrival++;
            m->events++;
            changed = 1;
        }
        if (rc)
            break;
        int decide = changed;
        if (ticking) {
            /* CARMA's loop: a decision at every whole second while jobs wait. An event
             * brings a skipped tick back (see below). */
            if (carma_sched_queued(&s.sched) && (changed || next_tick >= SIM_INF))
                next_tick = fmin(next_tick, ceil(now));
            decide = now >= next_tick;
        }
        size_t placed = 0;
        if (decide && carma_sched_queued(&s.sched)) {
            /* The policy reads the monitor's views; integrals and progress wait for
             * the next change of each GPU (gpu_advance). */
            if (cfg->policy->flags & CARMA_POLICY_NEEDS_WINDOW) {
                size_t keep = 0;
                m->monitor_catchups += s.nloud;
                for (size_t k = 0; k < s.nloud; k++) {
                    uint32_t gi = s.loud[k];
                    monitor_catchup(&s, gi, now);
                    if (s.g[gi].mon_next <= s.g[gi].quiet_from)
                        s.loud[keep++] = gi;
                    else
                        s.g[gi].loud = 0;
                }
                s.nloud = keep;
            }
            size_t np;
            do {
                np = carma_sched_step(&s.sched, now, out, SIM_STEP_CAP);
                m->decisions++;
                placed += np;
                for (size_t k = 0; k < np && rc == 0; k++) {
                    remember(&s, out[k].job);
                    rc = launch(&s, out[k].job, now);
                }
                /* One decision may place a whole queue (every job arriving at once on
                 * many GPUs: minutes under auto); the bar shows it alive meanwhile. */
                if (cfg->progress && np == SIM_STEP_CAP)
                    cfg->progress(cfg->progress_ctx, s.ended, s.njobs);
            } while (rc == 0 && np == SIM_STEP_CAP);
        }
        if (ticking && now >= next_tick)
            next_tick = carma_sched_queued(&s.sched) ? next_decision(&s, now, placed) : SIM_INF;
        if (cfg->progress && m->events >= progress_every) {
            cfg->progress(cfg->progress_ctx, s.ended, s.njobs);
            progress_every = m->events + SIM_PROGRESS_EVENTS;
        }
    }
    if (rc == 0) {
        rc = finish_metrics(&s, t_last);
        if (rc)
            carma_err_set(err, rc, "out of memory");
    }
    if (rc == 0 && tl) {
        tl->t_end = t_last - s.t0;
        for (size_t gi = 0; gi < tl->ngpus && rc == 0; gi++)
            rc = record_gpu(&s, (uint32_t)gi, t_last);
        for (size_t gi = 0; gi < tl->ngpus; gi++)
            for (size_t k = 0; k < tl->gpu[gi].n; k++)
                tl->gpu[gi].t[k] -= s.t0;
    }
    if (rc && tl)
        sim_timeline_free(tl);
    if (rc == -ENOMEM)
        carma_err_set(err, rc, "out of memory");
    sim_free(&s);
    return rc;
}
