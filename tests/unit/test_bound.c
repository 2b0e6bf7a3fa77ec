/* Lower bounds on any schedule (src/sim/bound.c): exact where the schedule is forced
 * (a lone job that sharing could not speed up), the closed form on a hand-made trace,
 * and never beaten by any policy on the bundled traces, jittered replays and random
 * traces, in both sharing modes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/coloc.h"
#include "sim/bound.h"
#include "sim/profile.h"
#include "sim/sim.h"
#include "util/csv.h"

static struct sim_workload wl[1] = {{.name = "w"}};

static struct sim_job_spec job(double submit, double dur, float mem, float smact, uint16_t gpus)
{
    struct sim_job_spec j = {0};
    j.submit_s = submit;
    j.duration_s = dur;
    j.mem_mib = mem;
    j.smact = smact;
    j.smocc = sim_profile_smocc(smact);
    j.drama = sim_profile_drama(smact);
    j.ramp_s = 30;
    j.gpus = gpus;
    return j;
}

struct setup {
    const struct sim_gpu_kind *kinds[16];
    struct sim_config cfg;
};

static void setup_cfg(struct setup *s, const char *gpus, enum carma_sharing sh, const char *pol)
{
    size_t ng;
    struct carma_err err;
    assert_int_equal(sim_gpu_spec_parse(gpus, s->kinds, NULL, 16, &ng, &err), 0);
    sim_config_default(&s->cfg);
    s->cfg.kinds = s->kinds;
    s->cfg.ngpus = ng;
    s->cfg.sharing = sh;
    s->cfg.policy = carma_policy_find(pol);
    assert_non_null(s->cfg.policy);
}

static void test_lone_job_bound_is_exact(void **state)
{
    (void)state;
    /* SMACT 0.96 > 1 / (1 + alpha): sharing could not help it, so alone is the best. */
    struct sim_job_spec j = job(0, 1000, 1000, 0.96f, 1);
    struct sim_trace t = {.jobs = &j, .njobs = 1, .workloads = wl, .nworkloads = 1};
    struct setup s;
    setup_cfg(&s, "1xa100-40gb", CARMA_SHARING_MPS, "auto");
    struct sim_metrics m;
    struct carma_err err;
    assert_int_equal(sim_run(&t, &s.cfg, &m, NULL, &err), 0);
    struct sim_bounds b;
    sim_bounds_compute(&t, &s.cfg, &b);
    assert_float_equal(b.makespan_s, m.makespan_s, 1e-6);
    assert_float_equal(b.busy_gpu_s, m.busy_gpu_s, 1e-6);
    assert_float_equal(b.energy_j, m.energy_j, 1e-3);
    /* Makespans count from the first arrival, whenever the trace starts. */
    j.submit_s = 1000;
    assert_int_equal(sim_run(&t, &s.cfg, &m, NULL, &err), 0);
    sim_bounds_compute(&t, &s.cfg, &b);
    assert_float_equal(b.makespan_s, m.makespan_s, 1e-6);
    assert_float_equal(b.energy_j, m.energy_j, 1e-3);
}

static void test_closed_form(void **state)
{
    (void)state;
    /* Two GPUs. A: 1000 s at 0.9 (at least alone-equivalent: 0.9 (1 + alpha) < 1);
     * B: 2-GPU, 400 s at 0.2 arriving at 100 s; C: 3000 s at 0.1 arriving at 200 s. */
    struct sim_job_spec j[3] = {job(0, 1000, 1000, 0.9f, 1), job(100, 400, 1000, 0.2f, 2),
                                job(200, 3000, 1000, 0.1f, 1)};
    struct sim_trace t = {.jobs = j, .njobs = 3, .workloads = wl, .nworkloads = 1};
    struct setup s;
    setup_cfg(&s, "2xa100-40gb", CARMA_SHARING_MPS, "auto");
    struct sim_bounds b;
    sim_bounds_compute(&t, &s.cfg, &b);
    /* the best shared yield: two jobs' float rate under MPS, raised for float roundings */
    double a = 1 / ((double)carma_coloc_rate(CARMA_SHARING_MPS, 2, 1.0f, 0.0f) *
                    (1 + SIM_BOUND_FLOAT_SLACK));
    double wa = 1000 * fmin(1, 0.9f * a), wb = 2 * 400 * 0.2f * a, wc = 3000 * 0.1f * a;
    /* C holds its GPU 3000 s, more than the charged work of all three */
    assert_true(wa + wb + wc < 3000);
    assert_float_equal(b.busy_gpu_s, 3000, 1e-6);
    /* C alone cannot finish before 200 + 3000 s; the work bounds are all smaller. */
    assert_float_equal(b.makespan_s, 3200, 1e-9);
    const struct sim_gpu_kind *k = s.kinds[0];
    double dyn = k->max_w - k->idle_w - k->static_w;
    double smw = 1000 * 0.9f + 2 * 400 * 0.2f + 3000 * 0.1f;
    assert_float_equal(b.energy_j, 2 * k->idle_w * 3200 + k->static_w * 3000 + dyn * smw, 1e-6);
    /* Without C the charged work is the larger: A and B, Σ w above A's 1000 s. */
    t.njobs = 2;
    sim_bounds_compute(&t, &s.cfg, &b);
    assert_true(wa + wb > 1000);
    assert_float_equal(b.busy_gpu_s, wa + wb, 1e-6);
    t.njobs = 3;
    /* Time-slicing: the best shared rate is smax^(1-k) = 0.929, above A's 0.9 alone. */
    s.cfg.sharing = CARMA_SHARING_TIMESLICE;
    t.njobs = 2;
    sim_bounds_compute(&t, &s.cfg, &b);
    double e = pow(0.9f, 1 - (double)CARMA_COLOC_TS_EXPONENT) * (1 + SIM_BOUND_FLOAT_SLACK);
    assert_float_equal(b.busy_gpu_s, 1000 * 0.9f / e + 2 * 400 * 0.2f / e, 1e-6);
    t.njobs = 3;
    /* Jobs with no SM activity have no SM work: only their run times bound the makespan
     * (time-slicing's best shared rate is 0 then, not a division by it). */
    for (size_t i = 0; i < 3; i++)
        j[i].smact = 0;
    sim_bounds_compute(&t, &s.cfg, &b);
    assert_float_equal(b.busy_gpu_s, 3000, 1e-9); /* C still holds its GPU 3000 s */
    assert_float_equal(b.makespan_s, 3200, 1e-9);
}

/* A figure below its bound by more than 1e-9 relative (double rounding of the event
 * times): the bounds hold for what the simulator computes, its float rates included,
 * which beat them by up to 1e-7 when the bounds took exact rates. */
static int below(double fig, double bound)
{
    return fig < bound * (1 - 1e-9);
}

/* The audit's cases: two jobs that fill a GPU's SMs under MPS (tight: their float rate
 * was above 1 / (1 + alpha) and they finished 0.25 ms before the bound), and lone jobs
 * whose float power rounded below the bound's energy. */
static void test_float_rounding_does_not_beat_bound(void **state)
{
    (void)state;
    struct setup s;
    setup_cfg(&s, "1xa100-40gb", CARMA_SHARING_MPS, "auto");
    struct sim_metrics m;
    struct sim_bounds b;
    struct carma_err err;
    struct sim_job_spec pair[2] = {job(0, 3600, 1000, 0.5f, 1), job(0, 3600, 1000, 0.5f, 1)};
    struct sim_trace t = {.jobs = pair, .njobs = 2, .workloads = wl, .nworkloads = 1};
    assert_int_equal(sim_run(&t, &s.cfg, &m, NULL, &err), 0);
    sim_bounds_compute(&t, &s.cfg, &b);
    assert_false(below(m.makespan_s, b.makespan_s));
    assert_false(below(m.busy_gpu_s, b.busy_gpu_s));
    assert_false(below(m.energy_j, b.energy_j));
    assert_true(m.makespan_s < b.makespan_s * (1 + 1e-5)); /* still tight */
    const float sm[] = {0.37f, 0.73f, 0.1f, 0.33f, 0.61f, 0.99f};
    for (size_t i = 0; i < sizeof sm / sizeof sm[0]; i++) {
        struct sim_job_spec lone = job(0, 36000, 1000, sm[i], 1);
        t = (struct sim_trace){.jobs = &lone, .njobs = 1, .workloads = wl, .nworkloads = 1};
        assert_int_equal(sim_run(&t, &s.cfg, &m, NULL, &err), 0);
        sim_bounds_compute(&t, &s.cfg, &b);
        if (below(m.energy_j, b.energy_j))
            fail_msg("SMACT %.2f: energy %.6f < bound %.6f", (double)sm[i], m.energy_j, b.energy_j);
    }
}

/* Every policy that finishes every job stays at or above the bounds. */
static int check_all_policies(const struct sim_trace *t, const char *gpus, enum carma_sharing sh)
{
    size_t np;
    const struct carma_policy *p = carma_policy_all(&np);
    int checked = 0;
    for (size_t i = 0; i < np; i++) {
        struct setup s;
        setup_cfg(&s, gpus, sh, p[i].name);
        s.cfg.max_attempts = 0;
        struct sim_metrics m;
        struct carma_err err;
        if (sim_run(t, &s.cfg, &m, NULL, &err))
            fail_msg("%s on %s: %s", p[i].name, gpus, err.msg);
        if (m.gave_up)
            continue;
        struct sim_bounds b;
        sim_bounds_compute(t, &s.cfg, &b);
        if (below(m.makespan_s, b.makespan_s) || below(m.busy_gpu_s, b.busy_gpu_s) ||
            below(m.energy_j, b.energy_j))
            fail_msg("%s on %s (%s): makespan %.1f < %.1f, busy %.1f < %.1f or energy %.0f < %.0f",
                     p[i].name, gpus, carma_sharing_name(sh), m.makespan_s, b.makespan_s,
                     m.busy_gpu_s, b.busy_gpu_s, m.energy_j, b.energy_j);
        checked++;
    }
    return checked;
}

static struct sim_workload *load_catalog(const char *path, size_t *ncat)
{
    char *buf;
    size_t len;
    struct sim_workload *cat;
    struct carma_err err;
    if (carma_file_read(path, 1 << 20, &buf, &len, &err))
        fail_msg("%s (run from the repository root)", err.msg);
    assert_int_equal(sim_catalog_parse(path, buf, len, &cat, ncat, &err), 0);
    free(buf);
    return cat;
}

/* Both SMACT regimes of docs/model.md: the rule, and its rows times 0.8. */
static const char *const catalogs[] = {"data/workloads.csv", "data/workloads-smact-x0.8.csv"};

static void test_no_policy_beats_bound_on_bundled_traces(void **state)
{
    (void)state;
    static const char *const traces[] = {"data/trace-mix90.csv", "data/trace-t1.csv"};
    static const char *const specs[] = {"4xa100-40gb", "2xa100-40gb,2xv100-32gb"};
    int checked = 0;
    for (size_t ci = 0; ci < 2; ci++) {
        size_t ncat;
        struct sim_workload *cat = load_catalog(catalogs[ci], &ncat);
        for (size_t ti = 0; ti < 2; ti++)
            for (uint64_t seed = 0; seed < 3; seed++) {
                struct sim_trace_opts o = {.catalog = cat, .ncatalog = ncat};
                struct sim_trace t;
                struct carma_err err;
                if (sim_trace_load_opts(traces[ti], SIM_TRACE_AUTO, &o, &t, &err))
                    fail_msg("%s", err.msg);
                if (seed && sim_trace_jitter(&t, 0.2, seed, traces[ti], &err))
                    fail_msg("%s", err.msg);
                for (size_t si = 0; si < 2; si++) {
                    checked += check_all_policies(&t, specs[si], CARMA_SHARING_MPS);
                    checked += check_all_policies(&t, specs[si], CARMA_SHARING_TIMESLICE);
                }
                sim_trace_free(&t);
            }
        free(cat);
    }
    assert_true(checked >= 200);
}

/* carma's bound (est_carma_mib) is never below a workload's measured peak, so the est-*
 * policies on it crash no job on the bundled traces: both catalogs, both traces, A100s
 * alone and mixed with V100s, both sharing modes (the workloads without a bound fall back
 * to history, which is the peak itself). */
static void test_est_carma_crashes_nothing_on_bundled_traces(void **state)
{
    (void)state;
    static const char *const traces[] = {"data/trace-mix90.csv", "data/trace-t1.csv"};
    static const char *const specs[] = {"4xa100-40gb", "2xa100-40gb,2xv100-32gb"};
    static const char *const pols[] = {"est-magm", "est-lug"};
    int runs = 0;
    for (size_t ci = 0; ci < 2; ci++) {
        size_t ncat, given = 0;
        struct sim_workload *cat = load_catalog(catalogs[ci], &ncat);
        for (size_t i = 0; i < ncat; i++)
            given += cat[i].est_mib[SIM_EST_CARMA] > 0;
        assert_true(given > 0);
        for (size_t ti = 0; ti < 2; ti++) {
            struct sim_trace_opts o = {.catalog = cat, .ncatalog = ncat};
            struct sim_trace t;
            struct carma_err err;
            if (sim_trace_load_opts(traces[ti], SIM_TRACE_AUTO, &o, &t, &err))
                fail_msg("%s", err.msg);
            for (size_t si = 0; si < 2; si++)
                for (int sh = 0; sh < 2; sh++)
                    for (size_t pi = 0; pi < 2; pi++) {
                        struct setup s;
                        setup_cfg(&s, specs[si],
                                  sh ? CARMA_SHARING_TIMESLICE : CARMA_SHARING_MPS, pols[pi]);
                        s.cfg.estimator = SIM_EST_CARMA;
                        struct sim_metrics m;
                        if (sim_run(&t, &s.cfg, &m, NULL, &err))
                            fail_msg("%s: %s", pols[pi], err.msg);
                        if (m.oom_crashes)
                            fail_msg("%s on %s, %s, %s: %llu OOM crashes", pols[pi], specs[si],
                                     traces[ti], catalogs[ci],
                                     (unsigned long long)m.oom_crashes);
                        runs++;
                    }
            sim_trace_free(&t);
        }
        free(cat);
    }
    assert_int_equal(runs, 32);
}

/* The x 0.8 catalog is the shipped one with each rule-derived row's SMACT, SMOCC and
 * DRAMA times 0.8 to 3 decimals (data/README.md), the measured row as it is. */
static void test_scaled_catalog_follows_the_shipped_one(void **state)
{
    (void)state;
    size_t n, n8, scaled = 0;
    struct sim_workload *a = load_catalog(catalogs[0], &n), *b = load_catalog(catalogs[1], &n8);
    assert_int_equal(n, n8);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(a[i].name, b[i].name);
        assert_float_equal(a[i].mem_mib, b[i].mem_mib, 0);
        assert_float_equal(a[i].duration_s, b[i].duration_s, 0);
        for (int e = 0; e < SIM_EST_COUNT; e++)
            assert_float_equal(a[i].est_mib[e], b[i].est_mib[e], 0);
        if (a[i].smact == b[i].smact && a[i].smocc == b[i].smocc)
            continue; /* measured */
        assert_float_equal(b[i].smact, round(a[i].smact * 800) / 1000, 1e-6);
        assert_float_equal(b[i].smocc, round(a[i].smocc * 800) / 1000, 1e-6);
        assert_float_equal(b[i].drama, round(a[i].drama * 800) / 1000, 1e-6);
        scaled++;
    }
    assert_int_equal(scaled, n - 1);
    free(a);
    free(b);
}

static void test_no_policy_beats_bound_on_random_traces(void **state)
{
    (void)state;
    uint64_t x = 0x9e3779b97f4a7c15u;
    int checked = 0;
    for (int round = 0; round < 20; round++) {
        struct sim_job_spec j[40];
        double at = 700.0 * (round % 3); /* traces need not start at 0 */
        for (int i = 0; i < 40; i++) {
            x = x * 6364136223846793005u + 1442695040888963407u;
            double u1 = (double)(x >> 11) / 9007199254740992.0;
            x = x * 6364136223846793005u + 1442695040888963407u;
            double u2 = (double)(x >> 11) / 9007199254740992.0;
            x = x * 6364136223846793005u + 1442695040888963407u;
            double u3 = (double)(x >> 11) / 9007199254740992.0;
            at += u1 < 0.3 ? 0 : 600 * u2;
            j[i] = job(at, 60 + 3600 * u3, (float)(500 + 20000 * u2), (float)(0.05 + 0.85 * u1),
                       u3 > 0.9 ? 2 : 1);
        }
        struct sim_trace t = {.jobs = j, .njobs = 40, .workloads = wl, .nworkloads = 1};
        checked += check_all_policies(&t, "3xa100-40gb", round % 2 ? CARMA_SHARING_MPS
                                                                  : CARMA_SHARING_TIMESLICE);
    }
    assert_true(checked >= 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lone_job_bound_is_exact),
        cmocka_unit_test(test_closed_form),
        cmocka_unit_test(test_float_rounding_does_not_beat_bound),
        cmocka_unit_test(test_no_policy_beats_bound_on_bundled_traces),
        cmocka_unit_test(test_est_carma_crashes_nothing_on_bundled_traces),
        cmocka_unit_test(test_scaled_catalog_follows_the_shipped_one),
        cmocka_unit_test(test_no_policy_beats_bound_on_random_traces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
