/* Seeded property test of issue 2's ground rule: carma's own policy `auto`, whose bound
 * is the catalog's memory (the simulator's truth), never causes an OOM crash.
 *
 * Each scenario is drawn from its own splitmix64 seed (PROPS_SEED + its index) and goes
 * through the same path as `carma sim --workloads CAT --trace TRACE --policy auto`:
 *  - a GPU spec string (homogeneous or mixed kinds, 1 to 16 GPUs) for sim_gpu_spec_parse;
 *  - a workload catalog as CSV text for sim_catalog_parse: memory from under 1 MiB to
 *    exactly a GPU's capacity, just under it (by 0.001 MiB to 2049 MiB, the margin's
 *    edges), halves and thirds of a GPU, pairs of rows whose bounds plus the margin fill
 *    a GPU exactly or by 1 MiB too much, sizes that fit only the larger kinds of a mixed
 *    run; 1 to 8 GPUs per job; run times from under a second to 10 hours; SMACT 0, 1,
 *    random or the rule; SMOCC, DRAMA; ramps of 0 s to longer than the job; estimator
 *    columns (empty, 0, 40000, random) that `auto` must not read;
 *  - a carma CSV trace for sim_trace_parse: bursts at one second, fractional arrivals,
 *    gaps of days, up to 400 jobs;
 *  - sharing mps or timeslice, --max-attempts 0/1/3, --jitter with a seed, and in some
 *    scenarios other scheduler parameters (margin, min_gain, co-runners, backfill depth).
 * About one scenario in eight also holds a job that can never run on its GPUs (a peak
 * above the largest GPU, more GPUs than the run has, or a multi-GPU peak fewer GPUs
 * hold): docs/model.md says `carma sim` refuses such a trace naming the job, which is
 * checked, and the property is then checked on the trace without it.
 *
 * Checked for `auto` (check_run): no OOM crash and no lost GPU time; every job
 * succeeds on its first and only attempt; no GPU's recorded memory passes its
 * capacity; co-resident jobs' peaks fit the GPU whatever their ramps, and their bounds
 * plus the margin do when they share it (DESIGN.md §3); a multi-GPU job holds all its
 * GPUs for the same interval; no job runs faster than alone or starts before it
 * arrives; makespan, busy GPU time and energy are no better than sim_bounds_compute's;
 * energy lies between every GPU at idle and every GPU at its board limit; the ratios
 * lie in [0, 1]; scanning every GPU (scan_all) gives the same run as auto's shortcuts
 * (every 4th scenario).
 *
 * test_checker_catches_or_rr_ooms runs the same scenarios through the same checks with
 * `or-rr`, which is known to crash jobs, and requires the OOM check to trip: the
 * property test can fail.
 *
 * A failing scenario is printed as a `carma sim` command with its catalog and trace,
 * ready to be cut down by hand. CARMA_PROPS_SCENARIOS and CARMA_PROPS_SEED (environment)
 * run more scenarios or other seeds, for a longer soak. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/bound.h"
#include "sim/profile.h"
#include "sim/sim.h"

#define PROPS_SCENARIOS 4000     /* about 1.2 s in release, 4.2 s under ASan on 2 cores */
#define PROPS_OR_RR_SCENARIOS 60 /* for the check that the checks can fail */
#define PROPS_SEED 0x5eed0002ull
#define PROPS_MAX_GPUS 16
#define PROPS_MAX_ROWS 12
#define PROPS_MAX_JOBS 400

/* ---- generator ---- */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint32_t rnd(uint64_t *x, uint32_t n) /* uniform in [0, n), n > 0 */
{
    return (uint32_t)((splitmix64(x) >> 32) * n >> 32);
}

static double unif(uint64_t *x) /* [0, 1) */
{
    return (double)(splitmix64(x) >> 11) * 0x1.0p-53;
}

static double unif_in(uint64_t *x, double lo, double hi)
{
    return lo + (hi - lo) * unif(x);
}

static double log_unif(uint64_t *x, double lo, double hi)
{
    return exp(unif_in(x, log(lo), log(hi)));
}

enum bad_kind { BAD_NONE, BAD_TOO_BIG, BAD_TOO_MANY_GPUS, BAD_TOO_FEW_LARGE };

struct arrival {
    double at;
    uint16_t row;
};

struct scen {
    uint32_t index;
    uint64_t seed;
    char gpus[256];
    const struct sim_gpu_kind *kinds[PROPS_MAX_GPUS];
    size_t ngpus;
    enum carma_sharing sharing;
    uint32_t max_attempts, window;
    double jitter;
    uint64_t jitter_seed;
    int tweaked; /* params differ from the defaults */
    struct carma_sched_params params;
    char *catalog; /* CSV text, owned */
    size_t catalog_len;
    struct arrival arr[PROPS_MAX_JOBS];
    size_t njobs;
    size_t bad; /* index in arr of the impossible job, when bad_kind != BAD_NONE */
    enum bad_kind bad_kind;
    uint16_t bad_gpus;
};

/* The k-th largest GPU memory of the run (k >= 1), independent of sim.c's. */
static double kth_mem(const struct scen *sc, size_t k)
{
    double m[PROPS_MAX_GPUS];
    for (size_t i = 0; i < sc->ngpus; i++)
        m[i] = sc->kinds[i]->mem_mib;
    for (size_t i = 1; i < sc->ngpus; i++)
        for (size_t j = i; j > 0 && m[j] > m[j - 1]; j--) {
            double t = m[j];
            m[j] = m[j - 1];
            m[j - 1] = t;
        }
    return k >= 1 && k <= sc->ngpus ? m[k - 1] : 0;
}

static double min_mem(const struct scen *sc)
{
    return kth_mem(sc, sc->ngpus);
}

static void gen_gpus(struct scen *sc, uint64_t *x)
{
    size_t nk;
    const struct sim_gpu_kind *all = sim_gpu_kind_all(&nk);
    static const uint8_t sizes[] = {1, 2, 3, 4, 4, 8, 8, 16};
    size_t n = rnd(x, 3) ? sizes[rnd(x, sizeof sizes)] : 1 + rnd(x, PROPS_MAX_GPUS);
    size_t groups = rnd(x, 5) < 2 || n == 1 ? 1 : 2 + rnd(x, (uint32_t)(n < 4 ? n - 1 : 3));
    size_t left = n, len = 0;
    for (size_t g = 0; g < groups; g++) {
        size_t cnt = g + 1 == groups ? left : 1 + rnd(x, (uint32_t)(left - (groups - g - 1)));
        left -= cnt;
        const struct sim_gpu_kind *k = &all[rnd(x, (uint32_t)nk)];
        if (cnt == 1 && rnd(x, 2))
            len += (size_t)snprintf(sc->gpus + len, sizeof sc->gpus - len, "%s%s", g ? "," : "",
                                    k->name);
        else
            len += (size_t)snprintf(sc->gpus + len, sizeof sc->gpus - len, "%s%zux%s", g ? "," : "",
                                    cnt, k->name);
    }
    struct carma_err err;
    assert_int_equal(
        sim_gpu_spec_parse(sc->gpus, sc->kinds, NULL, PROPS_MAX_GPUS, &sc->ngpus, &err), 0);
    assert_int_equal(sc->ngpus, n);
}

/* A peak memory for a row of `gpus` GPUs that fits the run; `prev` is the previous
 * row's (0: none), which some rows complement to fill a GPU with the margin. */
static double gen_mem(const struct scen *sc, uint64_t *x, uint16_t gpus, double prev)
{
    double top = kth_mem(sc, gpus), low = min_mem(sc);
    /* a capacity among the run's kinds that this job can have */
    double cap = top;
    for (int tries = 0; tries < 4; tries++) {
        double c = sc->kinds[rnd(x, (uint32_t)sc->ngpus)]->mem_mib;
        if (c <= top) {
            cap = c;
            break;
        }
    }
    static const double under[] = {0.001, 0.25, 0.5, 1, 2, 511, 512, 513, 1024, 2047, 2048, 2049};
    double m;
    if (prev > 0 && rnd(x, 4) == 0) { /* with the previous row: the GPU exactly full, or 1 over */
        static const double adj[] = {0, 0, -1, 1, -0.5};
        m = cap - (double)sc->params.margin_mib - ceil(prev) + adj[rnd(x, 5)];
        if (m >= 0.01)
            return m > top ? top : m;
    }
    switch (rnd(x, 10)) {
    case 0: /* under 1 MiB */
        m = unif_in(x, 0.01, 1.0);
        break;
    case 1: /* small, quarter MiB */
        m = round(log_unif(x, 1, 2000) * 4) / 4;
        break;
    case 2: /* exactly a capacity */
        m = cap;
        break;
    case 3: /* just under a capacity, around the margin */
        m = cap - under[rnd(x, sizeof under / sizeof under[0])];
        break;
    case 4: /* above the smallest kind: only the larger kinds of a mixed run hold it */
        m = top > low ? unif_in(x, low + 1, top) : unif_in(x, 1, top);
        break;
    case 5: { /* halves, thirds */
        static const double part[] = {2, 3, 4};
        double p = part[rnd(x, 3)];
        static const double adj[] = {0, -256, 256, -1, 1};
        double base = rnd(x, 2) ? cap / p : (cap - 512) / p;
        m = floor(base) + adj[rnd(x, 5)];
        break;
    }
    default: /* anywhere up to what `gpus` GPUs hold */
        m = round(unif_in(x, 1, top));
        break;
    }
    if (m > top)
        m = top;
    if (m < 0.01)
        m = 0.01;
    return m;
}

/* Appends one catalog row; `mem` and `gpus` given. */
static void gen_row(FILE *f, uint64_t *x, unsigned row, uint16_t gpus, double mem, int est)
{
    double total_min = rnd(x, 16) ? log_unif(x, 1.0 / 60, 600) : unif_in(x, 0.001, 0.02);
    float sm;
    switch (rnd(x, 5)) {
    case 0:
        sm = 0;
        break;
    case 1:
        sm = 1;
        break;
    case 2:
        sm = sim_profile_smact(mem, SIM_PROFILE_CARMA_FLOOR_MIB);
        break;
    default:
        sm = (float)unif(x);
        break;
    }
    float oc = rnd(x, 2) ? sim_profile_smocc(sm) : (float)unif(x);
    float dr = rnd(x, 2) ? sim_profile_drama(sm) : (float)unif(x);
    double ramp;
    switch (rnd(x, 5)) {
    case 0:
        ramp = 0;
        break;
    case 1:
        ramp = 30;
        break;
    case 2:
        ramp = unif_in(x, 0, 600);
        break;
    case 3: /* may outlast the run */
        ramp = unif_in(x, 0, 2 * total_min * 60);
        break;
    default:
        ramp = log_unif(x, 0.1, 1e5);
        break;
    }
    fprintf(f, "w%02u,model%u,%u,%u,%.4f,%.9g,%.4f,%.4f,%.4f,%.3f", row, rnd(x, 5), rnd(x, 1025),
            (unsigned)gpus, mem, total_min, (double)sm, (double)oc, (double)dr, ramp);
    for (int e = 0; e < est; e++) {
        switch (rnd(x, 5)) {
        case 0:
            fputs(",", f);
            break;
        case 1:
            fputs(",0", f);
            break;
        case 2:
            fputs(",40000", f);
            break;
        default:
            fprintf(f, ",%.4f", mem * unif_in(x, 0.1, 2.5));
            break;
        }
    }
    fputs(",note\n", f);
}

static void gen_scen(struct scen *sc, uint32_t index, uint64_t base)
{
    memset(sc, 0, sizeof *sc);
    sc->index = index;
    sc->seed = base + index;
    uint64_t x = sc->seed, *r = &x;
    splitmix64(r);
    gen_gpus(sc, r);
    sc->sharing = rnd(r, 2) ? CARMA_SHARING_MPS : CARMA_SHARING_TIMESLICE;
    static const uint32_t attempts[] = {3, 3, 0, 1};
    sc->max_attempts = attempts[rnd(r, 4)];
    sc->window = rnd(r, 2) ? 30 : 1 + rnd(r, 60);
    if (rnd(r, 3) == 0) {
        static const double fr[] = {0.05, 0.2, 0.5, 1.0};
        sc->jitter = fr[rnd(r, 4)];
        sc->jitter_seed = splitmix64(r) >> 1;
    }
    carma_sched_params_default(&sc->params);
    if (rnd(r, 4) == 0) {
        static const uint64_t margins[] = {0, 1, 512, 2048, 4096};
        static const float gains[] = {0, 0.1f, 0.25f, 0.5f, 1.0f};
        static const uint32_t per_gpu[] = {1, 2, 3, 16, 48};
        static const uint32_t depth[] = {0, 1, 4, 256};
        sc->params.margin_mib = margins[rnd(r, 5)];
        sc->params.min_gain = gains[rnd(r, 5)];
        sc->params.max_jobs_per_gpu = per_gpu[rnd(r, 5)];
        sc->params.backfill_depth = depth[rnd(r, 4)];
        sc->tweaked = 1;
    }
    /* catalog */
    unsigned rows = 1 + rnd(r, PROPS_MAX_ROWS - 1);
    int est = (int)rnd(r, 5); /* how many of the estimator columns the catalog has */
    FILE *f = open_memstream(&sc->catalog, &sc->catalog_len);
    assert_non_null(f);
    static const char *const est_cols[] = {",est_horus_mib", ",est_faketensor_mib",
                                           ",est_gpumemnet_mib", ",est_carma_mib"};
    fputs("name,model,batch,gpus,mem_mib,total_min,smact,smocc,drama,ramp_s", f);
    for (int e = 0; e < est; e++)
        fputs(est_cols[e], f);
    fputs(",size_class\n", f);
    size_t maxg = sc->ngpus < 8 ? sc->ngpus : 8;
    double prev = 0;
    for (unsigned w = 0; w < rows; w++) {
        uint16_t g = 1;
        if (maxg > 1 && rnd(r, 10) < 3)
            g = (uint16_t)(rnd(r, 3) ? 2 + rnd(r, (uint32_t)maxg - 1) : maxg);
        prev = gen_mem(sc, r, g, prev);
        gen_row(f, r, w, g, prev, est);
    }
    /* a job that can never run, in one scenario of eight */
    unsigned bad_row = rows;
    if (rnd(r, 8) == 0) {
        double top = kth_mem(sc, 1);
        int kinds = 1 + (kth_mem(sc, sc->ngpus) < top) + (sc->ngpus < SIM_JOB_MAX_GPUS);
        int pick = (int)rnd(r, (uint32_t)kinds);
        if (pick == 0) {
            sc->bad_kind = BAD_TOO_BIG;
            sc->bad_gpus = 1;
            gen_row(f, r, bad_row, 1, top + unif_in(r, 1, 5000), est);
        } else if (pick == 1 && kth_mem(sc, sc->ngpus) < top) {
            /* k GPUs where fewer than k are as large as the peak */
            size_t k = 2;
            while (k <= sc->ngpus && kth_mem(sc, k) == top)
                k++;
            if (k > sc->ngpus) /* cannot happen: the smallest is below top */
                k = sc->ngpus;
            sc->bad_kind = BAD_TOO_FEW_LARGE;
            sc->bad_gpus = (uint16_t)(k + rnd(r, (uint32_t)(sc->ngpus - k + 1)));
            double lo = kth_mem(sc, sc->bad_gpus);
            gen_row(f, r, bad_row, sc->bad_gpus, floor(unif_in(r, lo + 1, top)), est);
        } else {
            sc->bad_kind = BAD_TOO_MANY_GPUS;
            sc->bad_gpus =
                (uint16_t)(sc->ngpus + 1 + rnd(r, (uint32_t)(SIM_JOB_MAX_GPUS - sc->ngpus)));
            gen_row(f, r, bad_row, sc->bad_gpus, 1000, est);
        }
    }
    assert_int_equal(fclose(f), 0);
    /* trace */
    uint32_t kind = rnd(r, 10);
    size_t n = kind < 6 ? 1 + rnd(r, 30) : kind < 9 ? 30 + rnd(r, 100) : 150 + rnd(r, 250);
    double t = rnd(r, 4) ? 0 : round(unif_in(r, 1, 1e5));
    uint32_t pattern = rnd(r, 4);
    double mean_gap = log_unif(r, 1, 3600);
    for (size_t i = 0; i < n; i++) {
        if (i) {
            switch (pattern) {
            case 0: /* one burst */
                break;
            case 1: /* bursts */
                t += rnd(r, 4) ? 0 : floor(log_unif(r, 1, 7200));
                break;
            case 2: /* Poisson-like */
                t += -mean_gap * log(1 - unif(r));
                break;
            default: /* ties and fractional seconds */
                t += rnd(r, 2) ? 0 : unif_in(r, 0, 60);
                break;
            }
            if (rnd(r, 50) == 0)
                t += unif_in(r, 1e5, 1e6); /* a long gap: the cluster drains */
        }
        t = round(t * 1000) / 1000;
        sc->arr[i].at = t;
        sc->arr[i].row = (uint16_t)(rnd(r, 3) ? rnd(r, rows) : rnd(r, rows < 3 ? rows : 3));
    }
    sc->njobs = n;
    if (sc->bad_kind != BAD_NONE) {
        sc->bad = rnd(r, (uint32_t)n);
        sc->arr[sc->bad].row = (uint16_t)bad_row;
    }
}

/* The trace CSV, without job `skip` (SIZE_MAX: all). Owned by the caller. */
static char *render_trace(const struct scen *sc, size_t skip, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    assert_non_null(f);
    fputs("submit_s,workload\n", f);
    for (size_t i = 0; i < sc->njobs; i++)
        if (i != skip)
            fprintf(f, "%.3f,w%02u\n", sc->arr[i].at, (unsigned)sc->arr[i].row);
    assert_int_equal(fclose(f), 0);
    return buf;
}

static void scen_dump(const struct scen *sc, const char *policy, const char *trace)
{
    char extra[160] = "";
    if (sc->jitter > 0)
        snprintf(extra, sizeof extra, " --jitter %g --seed %llu", sc->jitter,
                 (unsigned long long)sc->jitter_seed);
    fprintf(stderr,
            "scenario %u (seed %#llx): carma sim --workloads cat.csv --trace trace.csv "
            "--gpus %s --sharing %s --policy %s --max-attempts %u%s\n",
            sc->index, (unsigned long long)sc->seed, sc->gpus, carma_sharing_name(sc->sharing),
            policy, sc->max_attempts, extra);
    if (sc->tweaked)
        fprintf(stderr,
                "  params: margin_mib %llu min_gain %g max_jobs_per_gpu %u "
                "backfill_depth %u\n",
                (unsigned long long)sc->params.margin_mib, (double)sc->params.min_gain,
                sc->params.max_jobs_per_gpu, sc->params.backfill_depth);
    fprintf(stderr, "--- cat.csv\n%s--- trace.csv\n%s---\n", sc->catalog, trace);
}

/* ---- running and checking ---- */

struct loaded {
    struct sim_trace tr;
    struct sim_config cfg;
};

static int load(const struct scen *sc, const char *trace, size_t tlen, const char *policy,
                struct loaded *ld, struct carma_err *err)
{
    struct sim_workload *cat;
    size_t ncat;
    int rc = sim_catalog_parse("cat.csv", sc->catalog, sc->catalog_len, &cat, &ncat, err);
    if (rc)
        return rc;
    struct sim_trace_opts o = {.catalog = cat, .ncatalog = ncat};
    rc = sim_trace_parse("trace.csv", trace, tlen, SIM_TRACE_CARMA_CSV, &o, &ld->tr, err);
    free(cat);
    if (rc)
        return rc;
    if (sc->jitter > 0 &&
        (rc = sim_trace_jitter(&ld->tr, sc->jitter, sc->jitter_seed, "trace.csv", err))) {
        sim_trace_free(&ld->tr);
        return rc;
    }
    sim_config_default(&ld->cfg);
    ld->cfg.kinds = sc->kinds;
    ld->cfg.ngpus = sc->ngpus;
    ld->cfg.sharing = sc->sharing;
    ld->cfg.policy = carma_policy_find(policy);
    ld->cfg.max_attempts = sc->max_attempts;
    ld->cfg.window = sc->window;
    ld->cfg.params = sc->params;
    return 0;
}

/* What the scenarios exercised, so that a generator that stops reaching the edges shows. */
struct cover {
    size_t shared;     /* runs where some GPU held two or more jobs at once */
    size_t tight;      /* co-runners whose bounds + margin filled the GPU to 1 MiB */
    size_t full_alone; /* a job alone on a GPU its peak fills to 1 MiB */
    size_t multi;      /* runs with a multi-GPU job */
    size_t max_co;     /* most jobs on one GPU at once */
};

/* What a check found; the first failed property wins. */
enum verdict {
    OK,
    V_RUN,      /* sim_run failed on a trace that fits */
    V_OOM,      /* an OOM crash or lost GPU time */
    V_MEM,      /* a GPU's memory past its capacity, or co-runners past bound + margin */
    V_END,      /* a job did not succeed at its first attempt */
    V_TIME,     /* a job faster than alone, before its arrival, or a GPU set not in step */
    V_BOUND,    /* better than a lower bound, or a ratio out of [0, 1] */
    V_SCAN_ALL, /* scanning every GPU gave another run */
};

static const char *const verdict_name[] = {"ok",   "sim_run", "OOM",   "memory",
                                           "ends", "timing",  "bound", "scan_all"};

struct bar_mem {
    uint32_t gpu;
    double start, end;
    double mem;
    uint64_t bound;
};

static int cmp_bar(const void *a, const void *b)
{
    const struct bar_mem *x = a, *y = b;
    if (x->gpu != y->gpu)
        return x->gpu < y->gpu ? -1 : 1;
    return (x->start > y->start) - (x->start < y->start);
}

#define REL(a, tol) ((tol)*fmax(1.0, fabs(a)))

static enum verdict fail_with(char *why, size_t n, enum verdict v, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static enum verdict fail_with(char *why, size_t n, enum verdict v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
    return v;
}

/* Checks one recorded run of ld's trace. `strict`: the checks that only `auto`
 * promises (co-runners within bound + margin, one attempt per job). */
static enum verdict check_run(const struct loaded *ld, const struct sim_metrics *m,
                              const struct sim_timeline *tl, int strict, struct cover *cv,
                              char *why, size_t wn)
{
    const struct sim_trace *tr = &ld->tr;
    const struct sim_config *cfg = &ld->cfg;
    size_t n = tr->njobs;
    if (m->oom_crashes || m->lost_gpu_s != 0)
        return fail_with(why, wn, V_OOM, "%llu OOM crashes, %.1f GPU-s lost",
                         (unsigned long long)m->oom_crashes, m->lost_gpu_s);
    /* memory: the recorded series, sampled at every change and ramp end, so its maximum */
    for (size_t g = 0; g < tl->ngpus; g++)
        for (size_t k = 0; k < tl->gpu[g].n; k++)
            if (tl->gpu[g].mem[k] > cfg->kinds[g]->mem_mib * (1 + 1e-6))
                return fail_with(why, wn, V_MEM, "GPU %zu holds %.1f MiB of %.0f at %.3f s", g,
                                 (double)tl->gpu[g].mem[k], cfg->kinds[g]->mem_mib,
                                 tl->gpu[g].t[k]);
    if (m->jobs != n || m->succeeded != n || m->gave_up != 0)
        return fail_with(why, wn, V_END, "%zu jobs: %zu succeeded, %zu given up", n, m->succeeded,
                         m->gave_up);
    size_t want_bars = 0;
    for (size_t i = 0; i < n; i++)
        want_bars += tr->jobs[i].gpus;
    if (strict && (tl->nbars != want_bars || m->placements != n))
        return fail_with(why, wn, V_END, "%zu bars for %zu job-GPUs, %llu placements of %zu",
                         tl->nbars, want_bars, (unsigned long long)m->placements, n);
    /* per job: one attempt whose GPUs run in step, no faster than alone, not early */
    double t0 = tr->jobs[0].submit_s, latest = 0;
    struct bar_mem *bm = malloc((tl->nbars ? tl->nbars : 1) * sizeof *bm);
    assert_non_null(bm);
    for (size_t k = 0; k < tl->nbars; k++) {
        const struct carma_report_bar *b = &tl->bars[k];
        assert_true(b->job >= 1 && b->job <= n);
        const struct sim_job_spec *sp = &tr->jobs[b->job - 1];
        const struct carma_report_bar *first = b;
        for (size_t q = k; q-- > 0 && tl->bars[q].job == b->job;)
            first = &tl->bars[q];
        enum verdict v = OK;
        if (b->outcome != CARMA_REPORT_OK)
            v = fail_with(why, wn, V_OOM, "job %llu has a crashed attempt",
                          (unsigned long long)b->job);
        else if (b->start_s != first->start_s || b->end_s != first->end_s)
            v = fail_with(why, wn, V_TIME, "job %llu's GPUs hold it over different times",
                          (unsigned long long)b->job);
        else if (b->start_s < sp->submit_s - t0 - REL(sp->submit_s, 1e-12))
            v = fail_with(why, wn, V_TIME, "job %llu starts at %.3f s, arrives at %.3f s",
                          (unsigned long long)b->job, b->start_s, sp->submit_s - t0);
        else if (b->end_s - b->start_s < sp->duration_s - REL(b->end_s, 1e-9))
            v = fail_with(why, wn, V_TIME, "job %llu ran %.6f s, %.6f s alone",
                          (unsigned long long)b->job, b->end_s - b->start_s, sp->duration_s);
        if (v != OK) {
            free(bm);
            return v;
        }
        latest = fmax(latest, sp->submit_s - t0 + sp->duration_s);
        bm[k] = (struct bar_mem){b->gpu, b->start_s, b->end_s, (double)sp->mem_mib,
                                 (uint64_t)ceil(sp->mem_mib)};
    }
    /* auto's placements: co-residents' peaks within the GPU whatever their ramps (other
     * policies may overcommit a GPU with jobs that end before they ramp up), and their
     * bounds plus the margin when shared (DESIGN.md §3) */
    qsort(bm, tl->nbars, sizeof *bm, cmp_bar);
    int shared = 0, tight = 0, full = 0;
    for (size_t k = 0; k < tl->nbars; k++) {
        double sum = bm[k].mem;
        uint64_t bounds = bm[k].bound, co = 1;
        for (size_t q = k; q-- > 0 && bm[q].gpu == bm[k].gpu;)
            if (bm[q].end > bm[k].start) {
                sum += bm[q].mem;
                bounds += bm[q].bound;
                co++;
            }
        double cap = cfg->kinds[bm[k].gpu]->mem_mib;
        uint64_t total = (uint64_t)cap;
        enum verdict v = OK;
        if (strict && sum > cap)
            v = fail_with(why, wn, V_MEM, "GPU %u: %llu jobs of %.1f MiB of peaks at %.3f s",
                          bm[k].gpu, (unsigned long long)co, sum, bm[k].start);
        else if (strict && co > 1 && bounds + cfg->params.margin_mib > total)
            v = fail_with(why, wn, V_MEM,
                          "GPU %u: %llu co-runners' bounds %llu MiB + margin %llu > %llu at "
                          "%.3f s",
                          bm[k].gpu, (unsigned long long)co, (unsigned long long)bounds,
                          (unsigned long long)cfg->params.margin_mib, (unsigned long long)total,
                          bm[k].start);
        if (v != OK) {
            free(bm);
            return v;
        }
        shared |= co > 1;
        tight |= co > 1 && bounds + cfg->params.margin_mib + 1 >= total;
        full |= co == 1 && bm[k].bound + 1 >= total;
        if (co > cv->max_co)
            cv->max_co = co;
    }
    free(bm);
    cv->shared += shared;
    cv->tight += tight;
    cv->full_alone += full;
    for (size_t i = 0; i < n; i++)
        if (tr->jobs[i].gpus > 1) {
            cv->multi++;
            break;
        }
    /* run-wide figures */
    struct sim_bounds lb;
    sim_bounds_compute(tr, cfg, &lb);
    double idle = 0, maxw = 0;
    for (size_t g = 0; g < cfg->ngpus; g++) {
        idle += cfg->kinds[g]->idle_w;
        maxw += cfg->kinds[g]->max_w;
    }
    double ms = m->makespan_s;
    if (ms < latest - REL(latest, 1e-9) || ms < lb.makespan_s * (1 - 1e-9))
        return fail_with(why, wn, V_BOUND, "makespan %.3f s < longest %.3f s or bound %.3f s", ms,
                         latest, lb.makespan_s);
    if (m->busy_gpu_s < lb.busy_gpu_s * (1 - 1e-9) ||
        m->busy_gpu_s > (double)cfg->ngpus * ms * (1 + 1e-9) + 1e-6)
        return fail_with(why, wn, V_BOUND, "busy %.3f GPU-s outside [%.3f, %.3f]", m->busy_gpu_s,
                         lb.busy_gpu_s, (double)cfg->ngpus * ms);
    if (!(m->energy_j > 0) || m->energy_j < lb.energy_j * (1 - 1e-9) ||
        m->energy_j < idle * ms * (1 - 1e-6) || m->energy_j > maxw * ms * (1 + 1e-6))
        return fail_with(why, wn, V_BOUND, "energy %.1f J: bound %.1f, idle %.1f, max %.1f",
                         m->energy_j, lb.energy_j, idle * ms, maxw * ms);
    if (m->mean_smact < 0 || m->mean_smact > 1 + 1e-6 || m->mean_mem_used_frac < 0 ||
        m->mean_mem_used_frac > 1 + 1e-6)
        return fail_with(why, wn, V_BOUND, "mean SMACT %.6f, memory %.6f", m->mean_smact,
                         m->mean_mem_used_frac);
    if (m->mean_wait_s < -REL(m->mean_wait_s, 1e-9) || m->p50_jct_s > m->p99_jct_s + 1e-9 ||
        m->p99_jct_s > ms + REL(ms, 1e-9) || m->mean_jct_s > ms + REL(ms, 1e-9))
        return fail_with(why, wn, V_BOUND, "JCT mean %.3f p50 %.3f p99 %.3f, wait %.3f, span %.3f",
                         m->mean_jct_s, m->p50_jct_s, m->p99_jct_s, m->mean_wait_s, ms);
    if (fabs(tl->t_end - ms) > REL(ms, 1e-9))
        return fail_with(why, wn, V_BOUND, "timeline ends at %.3f s, makespan %.3f s", tl->t_end,
                         ms);
    return OK;
}

/* Runs scenario sc with `policy`; returns the verdict (why filled). `trace` is what ran. */
static enum verdict run_scen(struct scen *sc, const char *policy, int strict, struct cover *cv,
                             char **trace_out, char *why, size_t wn)
{
    struct carma_err err;
    struct sim_metrics m;
    size_t tlen;
    char *trace = render_trace(sc, SIZE_MAX, &tlen);
    struct loaded ld;
    if (sc->bad_kind != BAD_NONE) {
        /* docs/model.md: `carma sim` refuses the trace, naming the job */
        int rc = load(sc, trace, tlen, policy, &ld, &err);
        if (rc)
            fail_msg("scenario %u: load: %s", sc->index, err.msg);
        memset(&m, 0xa5, sizeof m);
        rc = sim_run(&ld.tr, &ld.cfg, &m, NULL, &err);
        char name[48];
        snprintf(name, sizeof name, "job %zu (w%02u) ", sc->bad + 1,
                 (unsigned)sc->arr[sc->bad].row);
        static const char *const what[] = {NULL, "per GPU; the largest GPU has",
                                           "GPUs but the run has", "GPUs; the run has"};
        if (rc != -EINVAL || strncmp(err.msg, name, strlen(name)) != 0 ||
            !strstr(err.msg, what[sc->bad_kind]) || m.jobs != 0 || m.succeeded != 0) {
            scen_dump(sc, policy, trace);
            fail_msg("scenario %u: an impossible job (kind %d) gave rc %d, '%s'", sc->index,
                     (int)sc->bad_kind, rc, rc ? err.msg : "");
        }
        assert_int_equal(sim_trace_check(&ld.tr, &ld.cfg, NULL, &err), -EINVAL);
        sim_trace_free(&ld.tr);
        free(trace);
        trace = render_trace(sc, sc->bad, &tlen);
        if (sc->njobs == 1) { /* nothing left to run */
            *trace_out = trace;
            return OK;
        }
    }
    *trace_out = trace;
    if (load(sc, trace, tlen, policy, &ld, &err))
        return fail_with(why, wn, V_RUN, "load: %s", err.msg);
    struct sim_timeline tl;
    enum verdict v = OK;
    ld.cfg.record = 1;
    if (sim_run(&ld.tr, &ld.cfg, &m, &tl, &err)) {
        v = fail_with(why, wn, V_RUN, "sim_run: %s", err.msg);
    } else {
        v = check_run(&ld, &m, &tl, strict, cv, why, wn);
        sim_timeline_free(&tl);
    }
    if (v == OK && strict && sc->index % 4 == 0) {
        struct sim_metrics all;
        ld.cfg.record = 0;
        ld.cfg.params.scan_all = 1;
        if (sim_run(&ld.tr, &ld.cfg, &all, NULL, &err))
            v = fail_with(why, wn, V_RUN, "sim_run with scan_all: %s", err.msg);
        else if (memcmp(&all, &m, sizeof m) != 0)
            v = fail_with(why, wn, V_SCAN_ALL,
                          "scan_all: makespan %.6f vs %.6f, energy %.3f vs %.3f, "
                          "mean JCT %.6f vs %.6f",
                          all.makespan_s, m.makespan_s, all.energy_j, m.energy_j, all.mean_jct_s,
                          m.mean_jct_s);
    }
    sim_trace_free(&ld.tr);
    return v;
}

static size_t env_size(const char *name, size_t def)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return def;
    char *e;
    unsigned long long v = strtoull(s, &e, 0);
    return *e ? def : (size_t)v;
}

static void test_auto_never_ooms_random_scenarios(void **state)
{
    (void)state;
    size_t count = env_size("CARMA_PROPS_SCENARIOS", PROPS_SCENARIOS);
    uint64_t base = env_size("CARMA_PROPS_SEED", PROPS_SEED);
    struct scen *sc = malloc(sizeof *sc);
    assert_non_null(sc);
    size_t jobs = 0, bad = 0, mixed = 0;
    struct cover cv = {0};
    for (uint32_t i = 0; i < count; i++) {
        gen_scen(sc, i, base);
        char why[512], *trace = NULL;
        enum verdict v = run_scen(sc, "auto", 1, &cv, &trace, why, sizeof why);
        if (v != OK) {
            scen_dump(sc, "auto", trace);
            fail_msg("scenario %u: %s: %s", i, verdict_name[v], why);
        }
        jobs += sc->njobs;
        bad += sc->bad_kind != BAD_NONE;
        mixed += kth_mem(sc, 1) != kth_mem(sc, sc->ngpus);
        free(trace);
        free(sc->catalog);
    }
    print_message("    %zu scenarios, %zu jobs, %zu with mixed memory, %zu with an impossible "
                  "job; %zu with multi-GPU jobs, %zu shared a GPU (at most %zu jobs), %zu filled "
                  "one with bounds + margin, %zu with its peak alone\n",
                  count, jobs, mixed, bad, cv.multi, cv.shared, cv.max_co, cv.tight, cv.full_alone);
    assert_true(cv.shared > count / 4 && cv.tight > 0 && cv.full_alone > 0 && cv.multi > 0);
    free(sc);
}

/* The same scenarios and checks with or-rr, which places without a gate: the OOM check
 * must trip, or the property test above could not fail. */
static void test_checker_catches_or_rr_ooms(void **state)
{
    (void)state;
    struct scen *sc = malloc(sizeof *sc);
    assert_non_null(sc);
    size_t caught = 0, other = 0;
    struct cover cv = {0};
    for (uint32_t i = 0; i < PROPS_OR_RR_SCENARIOS; i++) {
        gen_scen(sc, i, PROPS_SEED);
        if (sc->max_attempts == 0) /* or-rr may crash a job many times: keep it short */
            sc->max_attempts = 3;
        char why[512], *trace = NULL;
        enum verdict v = run_scen(sc, "or-rr", 0, &cv, &trace, why, sizeof why);
        caught += v == V_OOM;
        if (v != OK && v != V_OOM && v != V_END) {
            other++;
            print_error("scenario %u: or-rr: %s: %s\n", i, verdict_name[v], why);
        }
        free(trace);
        free(sc->catalog);
    }
    print_message("    or-rr: %zu of %d scenarios crash a job\n", caught, PROPS_OR_RR_SCENARIOS);
    assert_true(caught >= 5);
    assert_int_equal(other, 0);
    free(sc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_auto_never_ooms_random_scenarios),
        cmocka_unit_test(test_checker_catches_or_rr_ooms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
