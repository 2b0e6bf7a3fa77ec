/* The monitor (src/daemon/monitor.c) against hand-computed values: first on a scripted
 * backend (windows, CARMA's risk, fallbacks, drain, energy, records, the energy share),
 * then through the real NVML dlopen path on the fake libnvidia-ml.so.1 (skipped when
 * $CARMA_FAKE does not hold it): samples equal the state file, a GPU that goes lost or
 * stops answering is drained and the others carry on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "core/gpu.h"
#include "daemon/monitor.h"
#include "gpu/backend.h"

/* ---- a scripted backend: each sample() returns the next row of the script ---- */

struct script {
    struct carma_gpu_sample rows[64];
    int rc[64];
    size_t n, next;
    struct carma_gpu_proc procs[4];
    size_t nprocs;
};

static int sc_count(struct carma_gpu_backend *b, unsigned *n)
{
    (void)b;
    *n = 1;
    return 0;
}

static int sc_info(struct carma_gpu_backend *b, unsigned i, struct carma_gpu_info *out)
{
    (void)b;
    memset(out, 0, sizeof *out);
    snprintf(out->uuid, sizeof out->uuid, "GPU-TEST-%u", i);
    snprintf(out->name, sizeof out->name, "Test GPU");
    out->mem_total_bytes = 40ull << 30;
    out->power_limit_w = 400;
    return 0;
}

static int sc_sample(struct carma_gpu_backend *b, unsigned i, struct carma_gpu_sample *out)
{
    (void)i;
    struct script *s = b->impl;
    assert_true(s->next < s->n);
    size_t k = s->next++;
    if (s->rc[k])
        return s->rc[k];
    *out = s->rows[k];
    return 0;
}

static int sc_procs(struct carma_gpu_backend *b, unsigned i, struct carma_gpu_proc *out, size_t *n)
{
    (void)i;
    struct script *s = b->impl;
    memcpy(out, s->procs, s->nprocs * sizeof *out);
    *n = s->nprocs;
    return 0;
}

static void sc_close(struct carma_gpu_backend *b)
{
    (void)b;
}

static const struct carma_gpu_backend_ops sc_ops = {
    .name = "script", .count = sc_count, .info = sc_info, .sample = sc_sample,
    .processes = sc_procs, .close = sc_close};

static struct carma_gpu_sample row(double smact, double util, double power, double energy)
{
    struct carma_gpu_sample s;
    memset(&s, 0, sizeof s);
    s.mem_used_bytes = 1ull << 30;
    s.mem_free_bytes = 39ull << 30;
    s.util_gpu = util;
    s.util_mem = 0.2;
    s.power_w = power;
    s.energy_j = energy;
    s.smact = smact;
    s.smocc = smact >= 0 ? smact / 2 : -1;
    s.drama = smact >= 0 ? 0.3 : -1;
    s.tensor = -1;
    s.gract = -1;
    return s;
}

struct logbuf {
    char text[4096];
    int nlines;
};

static void cap_log(void *ctx, int prio, const char *msg)
{
    (void)prio;
    struct logbuf *l = ctx;
    size_t n = strlen(l->text);
    snprintf(l->text + n, sizeof l->text - n, "%s\n", msg);
    l->nlines++;
}

static int cap_proc(void *ctx, unsigned gi, pid_t pid, uint64_t mem)
{
    (void)ctx;
    (void)gi;
    (void)mem;
    return pid == 100; /* pid 100 is "ours" */
}

static void setup_mon(struct carma_monitor *m, struct carma_gpu_backend *b, struct carma_gpu *v,
                      struct script *s, struct logbuf *l, uint32_t window, double record_s)
{
    b->ops = &sc_ops;
    b->impl = s;
    carma_gpu_init(v, 40960, window, CARMA_SHARING_TIMESLICE);
    struct carma_mon_hooks h = {.ctx = l, .proc = cap_proc, .log = cap_log};
    struct carma_err err = {{0}};
    assert_int_equal(carma_mon_init(m, b, v, 1, NULL, &h, record_s, &err), 0);
}

static void test_windows_and_risk(void **state)
{
    (void)state;
    struct script s = {0};
    const double xs[] = {0.1, 0.5, 0.3, 0.9, 0.7, 0.8};
    for (int i = 0; i < 6; i++)
        s.rows[s.n++] = row(xs[i], 0.99, 100, 1000 + 100.0 * i);
    s.procs[0] = (struct carma_gpu_proc){100, 2ull << 30};
    s.procs[1] = (struct carma_gpu_proc){200, UINT64_MAX};
    s.nprocs = 2;
    struct carma_gpu_backend b;
    struct carma_gpu v;
    struct carma_monitor m;
    struct logbuf l = {{0}, 0};
    setup_mon(&m, &b, &v, &s, &l, 5, 0);
    for (int i = 0; i < 6; i++)
        assert_int_equal(carma_mon_tick(&m, 1000.0 + i), 0);
    /* Window of 5: 0.5 0.3 0.9 0.7 0.8 (the oldest fell out). sorted 0.3 0.5 0.7 0.8
     * 0.9: mean 0.64, median 0.7, p95 at rank 3.8 = 0.8 + 0.8 * 0.1 = 0.88; EMA with
     * alpha 1/3 seeded with 0.5: 0.5 -> 0.4333 -> 0.5889 -> 0.6259 -> 0.6840. */
    struct carma_window_stats st;
    carma_window_stats(&v.smact, &st);
    assert_int_equal(st.n, 5);
    assert_float_equal(st.mean, 0.64f, 1e-6);
    assert_float_equal(st.median, 0.7f, 1e-6);
    assert_float_equal(st.p95, 0.88f, 1e-6);
    double e = 0.5, a = 1.0 / 3.0;
    const double w[] = {0.5, 0.3, 0.9, 0.7, 0.8};
    for (int i = 1; i < 5; i++)
        e = a * w[i] + (1 - a) * e;
    assert_float_equal(st.ema, (float)e, 1e-6);
    /* risk = 0.2 mean + 0.3 median + 0.3 p95 + 0.2 EMA */
    float risk = 0.2f * 0.64f + 0.3f * 0.7f + 0.3f * 0.88f + 0.2f * (float)e;
    assert_float_equal(carma_window_risk(&v.smact), risk, 1e-5);
    /* SMOCC is half of SMACT: its window mean is 0.32. */
    carma_window_stats(&v.smocc, &st);
    assert_float_equal(st.mean, 0.32f, 1e-6);
    /* Memory and processes: one of ours (2 GiB), one foreign. */
    assert_int_equal(v.mem_used_mib, 1024);
    assert_int_equal(v.carma_used_mib, 2048);
    assert_int_equal(v.nforeign, 1);
    /* Energy: the counter's differences, 100 J per tick, 500 J over 5 ticks. */
    assert_float_equal(m.g[0].tick_energy_j, 100.0, 1e-9);
    assert_float_equal(m.g[0].energy_total_j, 500.0, 1e-9);
    /* Ring: the newest sample first. */
    assert_float_equal(carma_mon_recent(&m, 0, 0)->smact, 0.8f, 1e-6);
    assert_float_equal(carma_mon_recent(&m, 0, 5)->smact, 0.1f, 1e-6);
    assert_null(carma_mon_recent(&m, 0, 6));
    /* Every signal was present but tensor: one line about it, once. */
    assert_non_null(strstr(l.text, "no tensor activity"));
    assert_null(strstr(l.text, "no SMACT"));
    assert_int_equal(l.nlines, 1);
    carma_mon_free(&m);
}

/* GPM's and DCGM's first interval can lack a metric (an H100's first GPM sample had no
 * DRAMA): an absence is said from the third sample on, and only if it lasts until then. */
static void test_fallbacks_not_said_for_first_samples(void **state)
{
    (void)state;
    struct script s = {0};
    for (int i = 0; i < 4; i++) {
        s.rows[s.n] = row(0.5, 0.5, 100, -1);
        if (i == 0)
            s.rows[s.n].drama = -1; /* the first interval only */
        s.rows[s.n].tensor = 0.1;
        s.rows[s.n++].energy_j = 1000 + 100 * i;
    }
    for (int i = 0; i < 4; i++) { /* a GPU whose SMOCC never comes */
        s.rows[s.n] = row(0.5, 0.5, 100, 1000 + 100 * i);
        s.rows[s.n].tensor = 0.1;
        s.rows[s.n++].smocc = -1;
    }
    struct carma_gpu_backend b;
    struct carma_gpu v;
    struct carma_monitor m;
    struct logbuf l = {{0}, 0};
    setup_mon(&m, &b, &v, &s, &l, 30, 0);
    for (int i = 0; i < 4; i++)
        carma_mon_tick(&m, 10.0 + i);
    assert_int_equal(l.nlines, 0);
    assert_null(strstr(l.text, "no DRAMA"));
    carma_mon_free(&m);
    struct logbuf l2 = {{0}, 0};
    s.next = 4;
    setup_mon(&m, &b, &v, &s, &l2, 30, 0);
    carma_mon_tick(&m, 20.0);
    carma_mon_tick(&m, 21.0);
    assert_int_equal(l2.nlines, 0); /* not yet */
    carma_mon_tick(&m, 22.0);
    assert_non_null(strstr(l2.text, "no SMOCC on GPU-TEST-0"));
    carma_mon_tick(&m, 23.0);
    assert_int_equal(l2.nlines, 1); /* once */
    carma_mon_free(&m);
}

static void test_fallbacks_said_once(void **state)
{
    (void)state;
    struct script s = {0};
    for (int i = 0; i < 4; i++)
        s.rows[s.n++] = row(-1, 0.25 * (i + 1), i == 3 ? -1 : 200, -1);
    struct carma_gpu_backend b;
    struct carma_gpu v;
    struct carma_monitor m;
    struct logbuf l = {{0}, 0};
    setup_mon(&m, &b, &v, &s, &l, 30, 0);
    for (int i = 0; i < 4; i++)
        carma_mon_tick(&m, 10.0 + 0.5 * i);
    /* SMACT's window holds NVML utilisation; DRAMA's holds memory utilisation. */
    struct carma_window_stats st;
    carma_window_stats(&v.smact, &st);
    assert_int_equal(st.n, 4);
    assert_float_equal(st.mean, 0.625f, 1e-6);
    carma_window_stats(&v.drama, &st);
    assert_float_equal(st.mean, 0.2f, 1e-6);
    carma_window_stats(&v.smocc, &st);
    assert_int_equal(st.n, 0); /* absent, not zero */
    const char *p = strstr(l.text, "no SMACT on GPU-TEST-0");
    assert_non_null(p);
    assert_non_null(strstr(p, "NVML utilisation"));
    assert_null(strstr(p + 1, "no SMACT")); /* said once */
    assert_non_null(strstr(l.text, "no SMOCC"));
    assert_non_null(strstr(l.text, "no energy counter"));
    /* No counter: energy from power x time, 200 W x 0.5 s per tick for two ticks; the
     * last sample has no power either, so that tick adds nothing. */
    assert_float_equal(m.g[0].energy_total_j, 200.0, 1e-9);
    assert_non_null(strstr(l.text, "no power"));
    carma_mon_free(&m);
}

/* A counter that jumps by more than the GPU can draw is a glitch: power x time stands
 * in for that tick, and it is said. */
static void test_energy_counter_glitch(void **state)
{
    (void)state;
    struct script s = {0};
    const double counter[] = {1000, 1100, 501100, 501200};
    for (int i = 0; i < 4; i++)
        s.rows[s.n++] = row(0.5, 0.5, 100, counter[i]);
    struct carma_gpu_backend b;
    struct carma_gpu v;
    struct carma_monitor m;
    struct logbuf l = {{0}, 0};
    setup_mon(&m, &b, &v, &s, &l, 5, 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(carma_mon_tick(&m, 1000.0 + i), 0);
    assert_float_equal(m.g[0].energy_total_j, 300.0, 1e-9); /* 100 + 100 W x 1 s + 100 */
    assert_non_null(strstr(l.text, "energy counter jumped"));
    carma_mon_free(&m);
}

static void test_lost_and_silent_gpus_drained(void **state)
{
    (void)state;
    struct script s = {0};
    s.rows[s.n++] = row(0.5, 0.5, 100, 10);
    s.rc[s.n] = -EIO;
    s.n++;
    s.rc[s.n] = -EIO;
    s.n++;
    s.rc[s.n] = -ETIMEDOUT;
    s.n++;
    s.rows[s.n++] = row(0.5, 0.5, 100, 20);
    struct carma_gpu_backend b;
    struct carma_gpu v;
    struct carma_monitor m;
    struct logbuf l = {{0}, 0};
    setup_mon(&m, &b, &v, &s, &l, 30, 0);
    assert_int_equal(carma_mon_tick(&m, 1), 0);
    assert_int_equal(carma_mon_tick(&m, 2), 0);
    assert_int_equal(carma_mon_tick(&m, 3), 0);
    assert_false(v.drained); /* two failures are tolerated */
    assert_int_equal(carma_mon_tick(&m, 4), 1);
    assert_true(v.drained);
    assert_true(m.g[0].drained);
    assert_non_null(strstr(m.g[0].drain_reason, "stopped answering"));
    assert_non_null(strstr(l.text, "stopped answering"));
    assert_int_equal(carma_mon_tick(&m, 5), 0); /* answers again: still drained, said */
    assert_true(v.drained);
    assert_non_null(strstr(l.text, "answers again"));
    carma_mon_free(&m);

    /* A lost GPU is drained at once and never asked again. */
    struct script s2 = {0};
    s2.rows[s2.n] = row(0.5, 0.5, 100, 10);
    s2.rows[s2.n++].lost = 1;
    struct logbuf l2 = {{0}, 0};
    setup_mon(&m, &b, &v, &s2, &l2, 30, 0);
    assert_int_equal(carma_mon_tick(&m, 1), 1);
    assert_true(v.drained);
    assert_non_null(strstr(l2.text, "is lost"));
    assert_int_equal(carma_mon_tick(&m, 2), 0); /* the script has no row 2: not asked */
    carma_mon_free(&m);
}

/* carma drain and undrain: a GPU drained by hand comes back at carma_mon_undrain; one
 * that stopped answering comes back too, and is drained again only after the limit of
 * failures counted anew; a lost one is asked again and drained again while lost. */
static void test_undrain(void **state)
{
    (void)state;
    struct script s = {0};
    s.rows[s.n++] = row(0.5, 0.5, 100, 10);
    s.rows[s.n++] = row(0.5, 0.5, 100, 20);
    for (int k = 0; k < 5; k++)
        s.rc[s.n++] = -EIO;
    s.rows[s.n] = row(0.5, 0.5, 100, 30);
    s.rows[s.n++].lost = 1;
    struct carma_gpu_backend b;
    struct carma_gpu v;
    struct carma_monitor m;
    struct logbuf l = {{0}, 0};
    setup_mon(&m, &b, &v, &s, &l, 30, 0);
    assert_int_equal(carma_mon_undrain(&m, 0), 0); /* not drained */
    assert_int_equal(carma_mon_undrain(&m, 1), 0); /* no such GPU */
    assert_int_equal(carma_mon_drain(&m, 0, "drained by root at 2025-05-01T10:00:00Z: fan"), 1);
    assert_true(v.drained);
    assert_int_equal(carma_mon_tick(&m, 1), 0); /* sampled, still drained */
    assert_true(v.drained);
    assert_int_equal(carma_mon_undrain(&m, 0), 1);
    assert_false(v.drained);
    assert_false(m.g[0].drained);
    assert_string_equal(m.g[0].drain_reason, "");
    assert_int_equal(carma_mon_undrain(&m, 0), 0);
    assert_int_equal(carma_mon_tick(&m, 2), 0);
    assert_false(v.drained); /* nothing drains it again */
    /* stops answering: drained at the third failure, undrained at the fourth */
    assert_int_equal(carma_mon_tick(&m, 3), 0);
    assert_int_equal(carma_mon_tick(&m, 4), 0);
    assert_int_equal(carma_mon_tick(&m, 5), 1);
    assert_true(v.drained);
    assert_int_equal(carma_mon_tick(&m, 6), 0);
    assert_int_equal(carma_mon_undrain(&m, 0), 1);
    assert_false(v.drained);
    assert_int_equal(carma_mon_tick(&m, 7), 0); /* one failure counted anew: not yet */
    assert_false(v.drained);
    /* lost: drained again at once */
    assert_int_equal(carma_mon_tick(&m, 8), 1);
    assert_true(v.drained);
    assert_string_equal(m.g[0].drain_reason, "is lost");
    assert_int_equal(s.next, s.n);
    carma_mon_free(&m);
}

/* What keeps carma undrain from putting a GPU back: lost (never asked again), or silent
 * since it stopped answering; none once it answers again, or when drained by hand. */
static void test_unready(void **state)
{
    (void)state;
    struct script s = {0};
    s.rows[s.n++] = row(0.5, 0.5, 100, 10);
    for (int k = 0; k < 4; k++)
        s.rc[s.n++] = -EIO;
    s.rows[s.n++] = row(0.5, 0.5, 100, 20);
    s.rows[s.n] = row(0.5, 0.5, 100, 30);
    s.rows[s.n++].lost = 1;
    struct carma_gpu_backend b;
    struct carma_gpu v;
    struct carma_monitor m;
    struct logbuf l = {{0}, 0};
    setup_mon(&m, &b, &v, &s, &l, 30, 0);
    assert_null(carma_mon_unready(&m, 1)); /* no such GPU */
    assert_int_equal(carma_mon_drain(&m, 0, "drained by root at 2025-05-01T10:00:00Z: fan"), 1);
    assert_int_equal(carma_mon_tick(&m, 1), 0);
    assert_null(carma_mon_unready(&m, 0)); /* drained by hand, answering */
    assert_int_equal(carma_mon_tick(&m, 2), 0);
    assert_int_equal(carma_mon_tick(&m, 3), 0);
    assert_null(carma_mon_unready(&m, 0)); /* two failures: not silent yet */
    assert_int_equal(carma_mon_tick(&m, 4), 0);
    assert_non_null(strstr(carma_mon_unready(&m, 0), "has not answered"));
    assert_int_equal(carma_mon_tick(&m, 5), 0);
    assert_non_null(carma_mon_unready(&m, 0));
    assert_int_equal(carma_mon_tick(&m, 6), 0); /* answers again */
    assert_null(carma_mon_unready(&m, 0));
    assert_int_equal(carma_mon_undrain(&m, 0), 1);
    assert_int_equal(carma_mon_tick(&m, 7), 1); /* lost */
    assert_non_null(strstr(carma_mon_unready(&m, 0), "is lost"));
    assert_int_equal(s.next, s.n);
    carma_mon_free(&m);
}

static void test_records(void **state)
{
    (void)state;
    struct script s = {0};
    for (int i = 0; i < 5; i++) {
        s.rows[s.n] = row(0.1 * (i + 1), 0.5, 100 + 10 * i, 1000 + 50.0 * i);
        s.rows[s.n++].mem_used_bytes = (uint64_t)(i == 1 ? 3 : 1) << 30;
    }
    struct carma_gpu_backend b;
    struct carma_gpu v;
    struct carma_monitor m;
    struct logbuf l = {{0}, 0};
    setup_mon(&m, &b, &v, &s, &l, 30, 2.0);
    for (int i = 0; i < 5; i++)
        carma_mon_tick(&m, 100.0 + i);
    const struct carma_mon_record *r;
    size_t n = carma_mon_take_records(&m, &r);
    /* Buckets [100, 102] and [102, 104]: each closes on the sample that reaches 2 s. */
    assert_int_equal(n, 2);
    assert_float_equal(r[0].t, 102.0, 1e-9);
    assert_float_equal(r[0].smact, (0.1f + 0.2f + 0.3f) / 3, 1e-6);
    assert_int_equal(r[0].mem_mib, 3072);           /* the highest in the bucket */
    assert_float_equal(r[0].power_w, 110.0f, 1e-4); /* mean of 100 110 120 */
    assert_float_equal(r[0].energy_j, 100.0, 1e-9); /* counter 1000 -> 1100 */
    assert_float_equal(r[1].smact, (0.4f + 0.5f) / 2, 1e-6);
    assert_float_equal(r[1].energy_j, 100.0, 1e-9);
    assert_true(r[1].tensor < 0);
    assert_int_equal(carma_mon_take_records(&m, &r), 0);
    carma_mon_free(&m);
}

/* A 1 s record interval on a 1 s timer that fires a hair early still records every tick. */
static void test_records_on_a_jittery_timer(void **state)
{
    (void)state;
    struct script s = {0};
    for (int i = 0; i < 6; i++)
        s.rows[s.n++] = row(0.5, 0.5, 100, 1000 + 100.0 * i);
    struct carma_gpu_backend b;
    struct carma_gpu v;
    struct carma_monitor m;
    struct logbuf l = {{0}, 0};
    setup_mon(&m, &b, &v, &s, &l, 30, 1.0);
    for (int i = 0; i < 6; i++)
        carma_mon_tick(&m, 100.0 + i - (i % 2) * 0.0005);
    const struct carma_mon_record *r;
    assert_int_equal(carma_mon_take_records(&m, &r), 5);
    carma_mon_free(&m);
}

static void test_energy_share(void **state)
{
    (void)state;
    double out[4];
    /* 0.2 and 0.6 known; unknown counts as their mean 0.4: total 1.2. */
    const float w[] = {0.2f, 0.6f, -1.0f};
    carma_mon_share_energy(120.0, w, 3, out);
    assert_float_equal(out[0], 20.0, 1e-9);
    assert_float_equal(out[1], 60.0, 1e-9);
    assert_float_equal(out[2], 40.0, 1e-9);
    const float u[] = {-1.0f, -1.0f};
    carma_mon_share_energy(50.0, u, 2, out);
    assert_float_equal(out[0], 25.0, 1e-9);
    assert_float_equal(out[1], 25.0, 1e-9);
    const float z[] = {0.0f, 0.0f};
    carma_mon_share_energy(10.0, z, 2, out);
    assert_float_equal(out[0] + out[1], 10.0, 1e-9);
}

struct seen_mem {
    uint64_t mem[4];
    size_t n;
};

static int seen_proc(void *ctx, unsigned gi, pid_t pid, uint64_t mem)
{
    (void)gi;
    struct seen_mem *sm = ctx;
    if (sm->n < 4)
        sm->mem[sm->n++] = mem;
    return pid == 100;
}

static void seen_log(void *ctx, int prio, const char *msg)
{
    (void)ctx;
    (void)prio;
    (void)msg;
}

/* A process said to hold more than the GPU has (40 GiB here) is of unknown memory: the
 * daemon is told UINT64_MAX, and it adds nothing to the GPU's carma memory. */
static void test_absurd_process_memory_unknown(void **state)
{
    (void)state;
    struct script s = {0};
    s.rows[s.n++] = row(0.5, 0.5, 100, 10);
    s.rows[s.n++] = row(0.5, 0.5, 100, 20);
    s.procs[0] = (struct carma_gpu_proc){.pid = 100, .mem_bytes = 1ull << 50};
    s.procs[1] = (struct carma_gpu_proc){.pid = 200, .mem_bytes = (40ull << 30) + 1};
    s.procs[2] = (struct carma_gpu_proc){.pid = 100, .mem_bytes = 40ull << 30};
    s.nprocs = 3;
    struct carma_gpu_backend b = {.ops = &sc_ops, .impl = &s};
    struct carma_gpu v;
    carma_gpu_init(&v, 40960, 30, CARMA_SHARING_TIMESLICE);
    struct seen_mem sm = {{0}, 0};
    struct carma_mon_hooks h = {.ctx = &sm, .proc = seen_proc, .log = seen_log};
    struct carma_monitor m;
    struct carma_err err = {{0}};
    assert_int_equal(carma_mon_init(&m, &b, &v, 1, NULL, &h, 0, &err), 0);
    assert_int_equal(carma_mon_tick(&m, 1), 0);
    assert_int_equal(sm.n, 3);
    assert_int_equal(sm.mem[0], UINT64_MAX);
    assert_int_equal(sm.mem[1], UINT64_MAX);
    assert_int_equal(sm.mem[2], 40ull << 30); /* the whole GPU is a figure */
    assert_int_equal(v.carma_used_mib, 40960);
    assert_int_equal(v.nforeign, 1);
    carma_mon_free(&m);
}

/* Memory the driver reserves (memory v2: in the total, neither used nor free) is no room
 * for a job: the scheduler's view counts it taken; what is shown stays the driver's used. */
static void test_reserved_memory_is_not_free(void **state)
{
    (void)state;
    struct script s = {0};
    s.rows[s.n] = row(0.5, 0.5, 100, 10);
    s.rows[s.n].mem_used_bytes = 1ull << 30;
    s.rows[s.n++].mem_free_bytes = 35ull << 30; /* 40 GiB: 4 GiB reserved */
    s.rows[s.n++] = row(0.5, 0.5, 100, 20);     /* 1 used, 39 free: none reserved */
    struct carma_gpu_backend b;
    struct carma_gpu v;
    struct carma_monitor m;
    struct logbuf l = {{0}, 0};
    setup_mon(&m, &b, &v, &s, &l, 30, 0);
    assert_int_equal(carma_mon_tick(&m, 1), 0);
    assert_int_equal(v.mem_used_mib, 5120);
    assert_float_equal(carma_mon_recent(&m, 0, 0)->mem_used_mib, 1024, 0);
    assert_float_equal(carma_mon_recent(&m, 0, 0)->mem_free_mib, 35840, 0);
    assert_int_equal(carma_mon_tick(&m, 2), 0);
    assert_int_equal(v.mem_used_mib, 1024);
    carma_mon_free(&m);
}

/* ---- the real NVML path on the fake libnvidia-ml.so.1 ---- */

static char fake_lib[4096], state_path[256];

static void write_state(const char *text)
{
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp", state_path);
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(rename(tmp, state_path), 0); /* a new inode: the fake re-reads it */
}

static const char state1[] =
    "driver 550.54.15\n"
    "gpu uuid=GPU-aaaa name=\"NVIDIA H100 80GB HBM3\" mem_total=80GiB mem_used=10GiB "
    "util=37 mem_util=12 power_mw=250000 power_limit_mw=700000 energy_mj=5000000 gpm=1 sm=40 "
    "smocc=20 dram=30 tensor=5\n"
    "gpu uuid=GPU-bbbb name=\"NVIDIA H100 80GB HBM3\" mem_total=80GiB mem_used=0 util=0 "
    "power_mw=70000 power_limit_mw=700000 energy_mj=1000000\n"
    "proc 0 pid=100 mem=6GiB\n"
    "proc 0 pid=4242 mem=4GiB\n";

static void test_fake_nvml(void **state)
{
    (void)state;
    const char *fk = getenv("CARMA_FAKE");
    snprintf(fake_lib, sizeof fake_lib, "%s/nvidia-ml/libnvidia-ml.so.1", fk ? fk : "");
    if (!fk || access(fake_lib, R_OK) != 0) {
        print_message("fake NVML absent ($CARMA_FAKE): skipped\n");
        skip();
    }
    snprintf(state_path, sizeof state_path, "/tmp/carma-test-monitor-%d.state", (int)getpid());
    write_state(state1);
    setenv("CARMA_FAKE_NVML_STATE", state_path, 1);
    struct carma_gpu_backend b;
    struct carma_err err = {{0}};
    struct carma_gpu_nvml_opts o = {.lib = fake_lib, .dcgm = CARMA_GPU_SRC_OFF};
    int rc = carma_gpu_open_nvml_opts(&b, &o, &err);
    if (rc) {
        print_message("NVML backend: %s\n", err.msg);
        unlink(state_path);
        fail();
    }
    struct carma_gpu v[2];
    carma_gpu_init(&v[0], 81920, 30, CARMA_SHARING_TIMESLICE);
    carma_gpu_init(&v[1], 81920, 30, CARMA_SHARING_TIMESLICE);
    struct carma_monitor m;
    struct logbuf l = {{0}, 0};
    struct carma_mon_hooks h = {.ctx = &l, .proc = cap_proc, .log = cap_log};
    assert_int_equal(carma_mon_init(&m, &b, v, 2, NULL, &h, 0, &err), 0);
    assert_string_equal(m.g[0].info.uuid, "GPU-aaaa");
    assert_int_equal(carma_mon_tick(&m, 1.0), 0);
    assert_int_equal(carma_mon_tick(&m, 2.0), 0);
    assert_int_equal(carma_mon_tick(&m, 2.5), 0); /* absences are said from the third on */
    const struct carma_gpu_sample *s = &m.g[0].last;
    assert_int_equal(v[0].mem_used_mib, 10240);
    assert_float_equal(s->util_gpu, 0.37, 1e-9);
    assert_float_equal(s->power_w, 250.0, 1e-9);
    assert_int_equal(v[0].carma_used_mib, 6144); /* pid 100 is ours, 4242 foreign */
    assert_int_equal(v[0].nforeign, 1);
    if (s->smact >= 0) /* GPM on the fake Hopper: sm=40 -> 0.40 */
        assert_float_equal(s->smact, 0.40, 1e-6);
    else
        assert_non_null(strstr(l.text, "no SMACT on GPU-aaaa"));
    /* GPU 1 has no GPM: the gate falls back to utilisation, and says so once. */
    assert_non_null(strstr(l.text, "no SMACT on GPU-bbbb"));
    /* The energy counter advances by 1.5 kJ: the tick sees exactly that. */
    char next[sizeof state1 + 64];
    snprintf(next, sizeof next, "%s", state1);
    char *p = strstr(next, "energy_mj=5000000");
    memcpy(p, "energy_mj=6500000", 17);
    write_state(next);
    assert_int_equal(carma_mon_tick(&m, 3.0), 0);
    assert_float_equal(m.g[0].tick_energy_j, 1500.0, 1e-6);
    /* GPU 1 is lost: drained, GPU 0 carries on. */
    char lost[sizeof state1 + 64];
    snprintf(lost, sizeof lost, "%s", next);
    p = strstr(lost, "uuid=GPU-bbbb");
    char buf[sizeof state1 + 64];
    size_t off = (size_t)(p - lost);
    snprintf(buf, sizeof buf, "%.*slost=1 %s", (int)off, lost, p);
    write_state(buf);
    assert_int_equal(carma_mon_tick(&m, 4.0), 1);
    assert_true(v[1].drained);
    assert_false(v[0].drained);
    assert_non_null(strstr(l.text, "GPU 1 (GPU-bbbb) is lost"));
    /* GPU 0 stops answering its memory call: drained after the limit, not fatal. */
    char fails[sizeof buf + 160];
    snprintf(fails, sizeof fails, "%sfail 0 nvmlDeviceGetMemoryInfo_v2 UNKNOWN\n"
                                  "fail 0 nvmlDeviceGetMemoryInfo UNKNOWN\n", buf);
    write_state(fails);
    int drained = 0;
    for (int i = 0; i < CARMA_MON_FAIL_LIMIT + 1; i++)
        drained += carma_mon_tick(&m, 5.0 + i);
    if (v[0].drained) {
        assert_int_equal(drained, 1);
        assert_non_null(strstr(l.text, "stopped answering"));
    } else {
        /* The backend may treat a failed memory call as absence; then the GPU lives. */
        print_message("NVML backend samples GPU 0 without memory info: not drained\n");
    }
    carma_mon_free(&m);
    b.ops->close(&b);
    unlink(state_path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_windows_and_risk),
        cmocka_unit_test(test_fallbacks_not_said_for_first_samples),
        cmocka_unit_test(test_fallbacks_said_once),
        cmocka_unit_test(test_energy_counter_glitch),
        cmocka_unit_test(test_records_on_a_jittery_timer),
        cmocka_unit_test(test_lost_and_silent_gpus_drained),
        cmocka_unit_test(test_undrain),
        cmocka_unit_test(test_unready),
        cmocka_unit_test(test_records),
        cmocka_unit_test(test_energy_share),
        cmocka_unit_test(test_absurd_process_memory_unknown),
        cmocka_unit_test(test_reserved_memory_is_not_free),
        cmocka_unit_test(test_fake_nvml),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
