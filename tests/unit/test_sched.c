/* The scheduler step: CARMA's reference semantics (DESIGN.md §9) on hand-made states,
 * and auto's memory reservations and backfill. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <errno.h>
#include <string.h>

#include "core/coloc.h"
#include "core/sched.h"

#define NG 4
#define NJ 16

struct fx {
    struct carma_job jobs[NJ];
    struct carma_gpu gpus[NG];
    struct carma_sched s;
    struct carma_placement out[NJ];
};

static void fx_init(struct fx *f, const char *policy, size_t ngpus)
{
    memset(f, 0, sizeof *f);
    /* the monitor has run a window's worth: the reference policies read only full
     * windows (test_reference_reads_only_full_windows) */
    for (size_t i = 0; i < ngpus; i++) {
        carma_gpu_init(&f->gpus[i], 40960, 30, CARMA_SHARING_MPS);
        for (int k = 0; k < 30; k++) {
            carma_window_push(&f->gpus[i].smact, 0);
            carma_window_push(&f->gpus[i].smocc, 0);
            carma_window_push(&f->gpus[i].drama, 0);
        }
    }
    for (uint32_t i = 0; i < NJ; i++)
        carma_job_init(&f->jobs[i], i + 1, 1, 0);
    const struct carma_policy *p = carma_policy_find(policy);
    assert_non_null(p);
    assert_int_equal(carma_sched_init(&f->s, f->jobs, f->gpus, ngpus, p, NULL), 0);
}

/* Marks GPU g as running a foreign process using `used` MiB with steady activity. */
static void fx_busy(struct fx *f, size_t g, uint64_t used, float smact, float smocc, float drama)
{
    f->gpus[g].nforeign = 1;
    f->gpus[g].mem_used_mib = used;
    for (int i = 0; i < 30; i++) {
        carma_window_push(&f->gpus[g].smact, smact);
        carma_window_push(&f->gpus[g].smocc, smocc);
        carma_window_push(&f->gpus[g].drama, drama);
    }
}

static size_t fx_step(struct fx *f, double now)
{
    return carma_sched_step(&f->s, now, f->out, NJ);
}

static void test_idle_preamble_index_order(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "oracle-magm", 3);
    fx_busy(&f, 0, 1000, 0.1f, 0.1f, 0.1f); /* most free memory, but not idle */
    f.jobs[0].mem_mib = 1000;
    carma_sched_submit(&f.s, 0, 0);
    assert_int_equal(fx_step(&f, 0), 1);
    assert_int_equal(f.jobs[0].gpu[0], 1); /* first idle GPU, not the MAGM choice */
    assert_int_equal(f.jobs[0].state, CARMA_JOB_RUNNING);
    assert_int_equal(f.jobs[0].attempts, 1);
    carma_sched_free(&f.s);
}

/* A job re-adopted after a restart on GPUs the server no longer has holds none, runs,
 * and ends without touching any GPU's books. */
static void test_adopt_without_its_gpus(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "auto", NG);
    f.jobs[0].mem_mib = 4096;
    uint16_t g1 = 1;
    carma_sched_adopt(&f.s, 0, NULL, 0, 10, 10);
    carma_sched_adopt(&f.s, 1, &g1, 1, 10, 10);
    assert_int_equal(f.jobs[0].state, CARMA_JOB_RUNNING);
    assert_int_equal(f.jobs[0].nplaced, 0);
    for (size_t g = 0; g < NG; g++)
        assert_int_equal(f.gpus[g].njobs, g == 1);
    assert_int_equal(carma_sched_finish(&f.s, 0, CARMA_OUTCOME_SUCCEEDED, 0, 20), 0);
    assert_int_equal(f.jobs[0].state, CARMA_JOB_SUCCEEDED);
    assert_int_equal(f.gpus[1].njobs, 1);
    assert_int_equal(f.gpus[0].committed_mib, 0);
    carma_sched_free(&f.s);
}

/* CARMA's analyze_Gmetrics waits for a full window: a policy that reads the windows (its
 * gate, LUG) collocates on no GPU whose window is still filling (carmad's first window
 * after its start), and says so; one that reads none (or-rr) does not wait. */
static void test_reference_reads_only_full_windows(void **state)
{
    (void)state;
    static const char *const pol[] = {"oracle-lug", "or-rr"};
    for (size_t p = 0; p < 2; p++) {
        struct fx f;
        fx_init(&f, pol[p], 2);
        for (size_t g = 0; g < 2; g++) {
            carma_window_clear(&f.gpus[g].smact);
            carma_window_clear(&f.gpus[g].smocc);
            carma_window_clear(&f.gpus[g].drama);
        }
        for (uint32_t k = 0; k < 3; k++) {
            f.jobs[k].mem_mib = 1000;
            carma_sched_submit(&f.s, k, 0);
        }
        assert_int_equal(fx_step(&f, 0), 1); /* idle GPUs wait for no window */
        assert_int_equal(fx_step(&f, 0), 1);
        if (p == 1) {
            assert_int_equal(fx_step(&f, 40), 1);
            carma_sched_free(&f.s);
            continue;
        }
        assert_int_equal(fx_step(&f, 40), 0);
        struct carma_sched_why w;
        assert_int_equal(carma_sched_why(&f.s, 2, 40, &w), 0);
        assert_int_equal(w.code, CARMA_WHY_GRACE);
        assert_non_null(strstr(w.text, "activity window holds 0 of 30 samples"));
        /* GPU 1 quieter, but one sample short: LUG takes GPU 0 once its window is full */
        for (int k = 0; k < 29; k++) {
            carma_window_push(&f.gpus[0].smact, 0.3f);
            carma_window_push(&f.gpus[1].smact, 0.1f);
        }
        assert_int_equal(fx_step(&f, 41), 0);
        carma_window_push(&f.gpus[0].smact, 0.3f);
        assert_int_equal(carma_sched_why(&f.s, 2, 42, &w), 0);
        assert_int_equal(w.code, CARMA_WHY_PLACING);
        assert_int_equal(fx_step(&f, 42), 1);
        assert_int_equal(f.jobs[2].gpu[0], 0);
        carma_sched_free(&f.s);
    }
}

static void test_grace_window(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "oracle-ff", 1);
    f.jobs[0].mem_mib = 1000;
    f.jobs[1].mem_mib = 1000;
    carma_sched_submit(&f.s, 0, 0);
    carma_sched_submit(&f.s, 1, 0);
    assert_int_equal(fx_step(&f, 0), 1);  /* head only: one decision per loop */
    f.gpus[0].mem_used_mib = 1000;
    assert_int_equal(fx_step(&f, 1), 0);  /* in grace */
    assert_int_equal(fx_step(&f, 29.5), 0);
    assert_int_equal(fx_step(&f, 30), 0); /* CARMA's `now - seen > 30`: at 30, still in it */
    assert_int_equal(fx_step(&f, 31), 1); /* grace over */
    assert_int_equal(f.jobs[1].gpu[0], 0);
    carma_sched_free(&f.s);
}

/* The grace ends at 30 s or when the job launched dies, whichever is first; a job
 * that ends after another launch leaves that launch's grace alone. */
static void test_grace_ends_when_the_job_dies(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "oracle-ff", 1);
    for (int k = 0; k < 4; k++) {
        f.jobs[k].mem_mib = 1000;
        carma_sched_submit(&f.s, (uint32_t)k, 0);
    }
    f.gpus[0].mem_used_mib = 1000;
    assert_int_equal(fx_step(&f, 0), 1);
    assert_int_equal(fx_step(&f, 31), 1); /* job 1 collocated, its grace begins */
    assert_int_equal(fx_step(&f, 32), 0);
    assert_int_equal(carma_sched_finish(&f.s, 1, CARMA_OUTCOME_SUCCEEDED, 900, 36), 0);
    assert_float_equal(carma_sched_next_timer(&f.s, 36), INFINITY, 0);
    assert_int_equal(fx_step(&f, 37), 1); /* not 60 */
    assert_int_equal(f.jobs[2].start_s, 37);
    /* job 0 (launched long before) ending leaves job 2's grace in place */
    assert_int_equal(carma_sched_finish(&f.s, 0, CARMA_OUTCOME_SUCCEEDED, 900, 40), 0);
    assert_int_equal(fx_step(&f, 41), 0);
    assert_float_equal(carma_sched_next_timer(&f.s, 41), 67, 1e-9);
    carma_sched_free(&f.s);
}

/* CARMA's grace lasts "until the job's process has been on the GPU for 30 s": carmad
 * sees the process some seconds after the launch, and the grace runs from then, once;
 * a job re-adopted after a restart keeps the grace of when it was seen before, or, not
 * seen yet, gets it from when it is. */
static void test_grace_runs_from_the_process_seen(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "oracle-ff", 2);
    for (int k = 0; k < 3; k++) {
        f.jobs[k].mem_mib = 1000;
        carma_sched_submit(&f.s, (uint32_t)k, 0);
    }
    f.gpus[0].mem_used_mib = 1000;
    f.gpus[1].mem_used_mib = 1000;
    assert_int_equal(fx_step(&f, 0), 1);
    assert_int_equal(fx_step(&f, 0), 1);  /* job 1 on the other idle GPU */
    carma_sched_job_seen(&f.s, 0, 0, 8);  /* job 0's process appears after 8 s */
    carma_sched_job_seen(&f.s, 0, 0, 9);  /* seen again: no later start */
    carma_sched_job_seen(&f.s, 2, 1, 10); /* not GPU 1's launch: no effect */
    carma_sched_job_seen(&f.s, 1, 1, 0);  /* seen at once */
    assert_float_equal(carma_sched_next_timer(&f.s, 1), 30, 1e-9);
    assert_true(carma_sched_next_timer(&f.s, 1) > 30); /* the first time past it */
    assert_int_equal(fx_step(&f, 30), 0);
    assert_int_equal(fx_step(&f, 31), 1); /* GPU 1's grace is over, GPU 0's is not */
    assert_int_equal(f.jobs[2].gpu[0], 1);
    assert_float_equal(carma_sched_next_timer(&f.s, 31), 38, 1e-9);
    carma_sched_free(&f.s);

    /* re-adopted: seen at 120, before the restart (launched at 100): the grace ends at
     * 150, and a sighting after the restart does not move it */
    fx_init(&f, "oracle-ff", 1);
    uint16_t g0 = 0;
    carma_sched_adopt(&f.s, 0, &g0, 1, 100, 120);
    carma_sched_job_seen(&f.s, 0, 0, 140);
    f.jobs[1].mem_mib = 1000;
    f.gpus[0].mem_used_mib = 1000;
    carma_sched_submit(&f.s, 1, 140);
    assert_int_equal(fx_step(&f, 150), 0);
    assert_float_equal(carma_sched_next_timer(&f.s, 150), 150, 1e-9);
    assert_int_equal(fx_step(&f, 151), 1);
    carma_sched_free(&f.s);
    /* re-adopted before its process was ever seen: the grace runs from its first
     * sighting, as for the launch */
    fx_init(&f, "oracle-ff", 1);
    carma_sched_adopt(&f.s, 0, &g0, 1, 100, -1);
    f.jobs[1].mem_mib = 1000;
    f.gpus[0].mem_used_mib = 1000;
    carma_sched_submit(&f.s, 1, 140);
    carma_sched_job_seen(&f.s, 0, 0, 140);
    assert_int_equal(fx_step(&f, 170), 0);
    assert_int_equal(fx_step(&f, 171), 1);
    carma_sched_free(&f.s);
}

/* A job asking for more GPUs than are in service (one drained: lost, MIG) waits for
 * them without stopping the queues behind it, under every policy; it runs once the
 * GPUs are back. */
static void test_job_beyond_the_gpus_in_service_blocks_no_one(void **state)
{
    (void)state;
    const char *pol[] = {"auto", "exclusive", "oracle-ff", "or-rr"};
    for (int p = 0; p < 4; p++) {
        for (int rec = 0; rec < 2; rec++) {
            struct fx f;
            fx_init(&f, pol[p], 2);
            f.gpus[1].drained = 1;
            carma_sched_gpu_changed(&f.s, 1);
            for (int k = 0; k < 3; k++) {
                f.jobs[k].mem_mib = 1000;
                f.jobs[k].smact = 0.3f;
            }
            f.jobs[0].gpus = 2;
            if (rec) /* a recovery head beyond them leaves the main queue its turn */
                carma_sched_submit_recovery(&f.s, 0, 0);
            else
                carma_sched_submit(&f.s, 0, 0);
            carma_sched_submit(&f.s, 1, 0);
            assert_int_equal(fx_step(&f, 0), 1);
            assert_int_equal(f.jobs[1].state, CARMA_JOB_RUNNING);
            assert_int_equal(f.jobs[0].state, CARMA_JOB_QUEUED);
            assert_int_equal(carma_sched_finish(&f.s, 1, CARMA_OUTCOME_SUCCEEDED, 900, 50), 0);
            f.gpus[1].drained = 0;
            carma_sched_gpu_changed(&f.s, 1);
            carma_sched_submit(&f.s, 2, 50);
            assert_true(fx_step(&f, 51) >= 1);
            assert_int_equal(f.jobs[0].state, CARMA_JOB_RUNNING); /* first again */
            assert_int_equal(f.out[0].job, 0);
            carma_sched_free(&f.s);
        }
    }
}

static void test_next_timer_is_the_grace_end(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "oracle-ff", 2);
    f.jobs[0].mem_mib = 1000;
    carma_sched_submit(&f.s, 0, 0);
    assert_true(isinf(carma_sched_next_timer(&f.s, 0))); /* no launch yet */
    assert_int_equal(fx_step(&f, 3.25), 1);
    assert_float_equal(carma_sched_next_timer(&f.s, 4), 33.25, 1e-9);
    assert_true(carma_sched_next_timer(&f.s, 33.25) > 33.25); /* its last instant */
    assert_true(isinf(carma_sched_next_timer(&f.s, 33.26)));  /* over */
    f.gpus[0].drained = 1; /* no job can go there: no timer */
    assert_true(isinf(carma_sched_next_timer(&f.s, 4)));
    carma_sched_free(&f.s);
    /* exclusive never looks at a grace; auto reads no clock. */
    const char *none[] = {"exclusive", "auto"};
    for (int k = 0; k < 2; k++) {
        fx_init(&f, none[k], 1);
        carma_sched_submit(&f.s, 0, 0);
        assert_int_equal(fx_step(&f, 0), 1);
        assert_true(isinf(carma_sched_next_timer(&f.s, 1)));
        carma_sched_free(&f.s);
    }
}

static void test_rerun_skips_gpus_it_filled_alone(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "exclusive", 2);
    f.gpus[0].mem_total_mib = 32768; /* a V100 first, then an A100-40GB */
    carma_sched_submit(&f.s, 0, 0);
    assert_int_equal(fx_step(&f, 0), 1);
    assert_int_equal(f.jobs[0].gpu[0], 0);
    /* It crashed alone, so it reached the V100's whole memory (more than the sampled
     * peak): never there again while the larger GPU is in service. */
    assert_int_equal(carma_sched_finish(&f.s, 0, CARMA_OUTCOME_OOM, 31000, 50), 1);
    assert_true(f.jobs[0].peak_mib >= 32768);
    assert_int_equal(fx_step(&f, 51), 1);
    assert_int_equal(f.jobs[0].gpu[0], 1);
    /* With the larger GPU drained, or on identical GPUs, it reruns as in CARMA. */
    assert_int_equal(carma_sched_finish(&f.s, 0, CARMA_OUTCOME_OOM, 39000, 90), 1);
    f.gpus[0].mem_total_mib = 40960;
    assert_int_equal(fx_step(&f, 91), 1);
    assert_int_equal(f.jobs[0].gpu[0], 0);
    carma_sched_free(&f.s);
}

/* A job that ran out of memory under its MPS cap reruns uncapped: nothing may join its
 * GPU while it runs, since its need is not known (its sampled peak stopped below the
 * cap) and it is not held to its bound. (CARMA's reference policies cap no one:
 * test_reference_policies_set_no_mps_limits.) */
static void test_uncapped_rerun_gets_no_co_runner(void **state)
{
    (void)state;
    const char *pol[] = {"auto"};
    for (size_t pi = 0; pi < 1; pi++) {
        struct fx f;
        fx_init(&f, pol[pi], 1);
        carma_sched_free(&f.s);
        struct carma_sched_params p;
        carma_sched_params_default(&p);
        p.mps_cap = 1;
        assert_int_equal(carma_sched_init(&f.s, f.jobs, f.gpus, 1, carma_policy_find(pol[pi]), &p),
                         0);
        f.jobs[0].bound_mib = f.jobs[0].mem_mib = 2048;
        f.jobs[0].smact = 0.3f;
        carma_sched_submit(&f.s, 0, 0);
        assert_int_equal(fx_step(&f, 0), 1);
        assert_int_equal(carma_sched_finish(&f.s, 0, CARMA_OUTCOME_OOM, 516, 50), 1);
        assert_int_equal(fx_step(&f, 51), 1);
        assert_int_equal(carma_sched_mps_cap_mib(&f.s, &f.jobs[0]), 0);
        /* a small, profiled job: it would fit beside the other's bound */
        f.jobs[1].bound_mib = f.jobs[1].mem_mib = 4096;
        f.jobs[1].smact = 0.1f;
        carma_sched_submit(&f.s, 1, 52);
        assert_int_equal(fx_step(&f, 200), 0);
        assert_int_equal(f.jobs[1].state, CARMA_JOB_QUEUED);
        /* once the uncapped job is gone, it runs */
        assert_int_equal(carma_sched_finish(&f.s, 0, CARMA_OUTCOME_SUCCEEDED, 4200, 210), 0);
        assert_int_equal(fx_step(&f, 211), 1);
        assert_int_equal(f.jobs[1].state, CARMA_JOB_RUNNING);
        carma_sched_free(&f.s);
    }
}

/* CARMA sets no MPS limit: under its policies carmad (mps_cap 1) caps no client's
 * memory or SMs, as the simulator does not, and a job that ran out of memory reruns on
 * an idle GPU with the same requirement, which others join after the grace. */
static void test_reference_policies_set_no_mps_limits(void **state)
{
    (void)state;
    const char *pol[] = {"oracle-ff", "or-rr", "est-magm", "exclusive"};
    for (size_t pi = 0; pi < 4; pi++) {
        struct fx f;
        fx_init(&f, pol[pi], 1);
        carma_sched_free(&f.s);
        struct carma_sched_params p;
        carma_sched_params_default(&p);
        p.mps_cap = 1;
        assert_int_equal(carma_sched_init(&f.s, f.jobs, f.gpus, 1, carma_policy_find(pol[pi]), &p),
                         0);
        assert_int_equal(carma_sched_mps_limits(&f.s), 0);
        f.jobs[0].bound_mib = f.jobs[0].mem_mib = 2048;
        carma_sched_submit(&f.s, 0, 0);
        assert_int_equal(fx_step(&f, 0), 1);
        assert_int_equal(carma_sched_mps_cap_mib(&f.s, &f.jobs[0]), 0);
        assert_int_equal(carma_sched_finish(&f.s, 0, CARMA_OUTCOME_OOM, 516, 50), 1);
        assert_int_equal(fx_step(&f, 51), 1);
        assert_int_equal(f.jobs[0].exclusive, 0);
        if (!strcmp(pol[pi], "exclusive")) {
            carma_sched_free(&f.s);
            continue;
        }
        f.gpus[0].mem_used_mib = 2048;
        carma_sched_gpu_changed(&f.s, 0);
        f.jobs[1].bound_mib = f.jobs[1].mem_mib = 4096;
        carma_sched_submit(&f.s, 1, 52);
        assert_int_equal(fx_step(&f, 81), 0); /* its grace */
        assert_int_equal(fx_step(&f, 82), 1); /* then a co-runner, as CARMA */
        carma_sched_free(&f.s);
    }
    struct fx f;
    fx_init(&f, "auto", 1);
    carma_sched_free(&f.s);
    struct carma_sched_params p;
    carma_sched_params_default(&p);
    p.mps_cap = 1;
    assert_int_equal(carma_sched_init(&f.s, f.jobs, f.gpus, 1, carma_policy_find("auto"), &p), 0);
    assert_int_equal(carma_sched_mps_limits(&f.s), 1);
    carma_sched_free(&f.s);
}

static void test_auto_moves_a_job_that_crashed_alone_to_a_larger_gpu(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "auto", 2);
    f.gpus[0].mem_total_mib = 32768; /* a V100 first, then an A100-40GB, time-sliced */
    for (size_t g = 0; g < 2; g++) {
        f.gpus[g].sharing = CARMA_SHARING_TIMESLICE;
        carma_sched_gpu_changed(&f.s, (uint32_t)g);
    }
    carma_sched_submit(&f.s, 0, 0); /* no bound: a GPU of its own, the first idle one */
    assert_int_equal(fx_step(&f, 0), 1);
    assert_int_equal(f.jobs[0].gpu[0], 0);
    /* Alone on the V100 it needed more than the V100: the bound says so. */
    assert_int_equal(carma_sched_finish(&f.s, 0, CARMA_OUTCOME_OOM, 31000, 50), 1);
    assert_int_equal(f.jobs[0].bound_mib, 32769);
    assert_int_equal(fx_step(&f, 51), 1);
    assert_int_equal(f.jobs[0].gpu[0], 1);
    /* Alone on the largest GPU too: it may only run alone, on a GPU of the largest. */
    assert_int_equal(carma_sched_finish(&f.s, 0, CARMA_OUTCOME_OOM, 39000, 90), 1);
    assert_int_equal(f.jobs[0].bound_mib, 40961);
    carma_sched_submit(&f.s, 1, 91);
    f.jobs[1].bound_mib = 1000;
    assert_int_equal(fx_step(&f, 91), 2);
    assert_int_equal(f.jobs[0].gpu[0], 1);
    assert_int_equal(f.jobs[1].gpu[0], 0);
    carma_sched_free(&f.s);
    /* carmad caps an MPS client at its hold plus the margin: a crash alone under that cap
     * is the cap's, not the GPU's. The bound rises to the peak, and the rerun gets a GPU
     * of its own without a cap, since the same cap would crash it again (an H200 showed
     * it: a 4 GiB allocation under a 2 GiB --mem, three OOMs at the same cap). */
    fx_init(&f, "auto", 2);
    carma_sched_free(&f.s);
    struct carma_sched_params p;
    carma_sched_params_default(&p);
    p.mps_cap = 1;
    assert_int_equal(carma_sched_init(&f.s, f.jobs, f.gpus, 2, carma_policy_find("auto"), &p), 0);
    f.jobs[0].bound_mib = 10000;
    f.jobs[0].smact = 0.3f;
    carma_sched_submit(&f.s, 0, 0);
    assert_int_equal(fx_step(&f, 0), 1);
    assert_int_equal(carma_sched_mps_cap_mib(&f.s, &f.jobs[0]), 10000 + p.margin_mib);
    assert_int_equal(carma_sched_finish(&f.s, 0, CARMA_OUTCOME_OOM, 10400, 50), 1);
    assert_int_equal(f.jobs[0].bound_mib, 10400);
    assert_int_equal(f.jobs[0].peak_mib, 10400);
    assert_int_equal(f.jobs[0].exclusive, 1);
    assert_int_equal(fx_step(&f, 51), 1);
    assert_int_equal(carma_sched_mps_cap_mib(&f.s, &f.jobs[0]), 0);
    /* Uncapped and alone, it needed more than the GPU: that is the GPU's. */
    assert_int_equal(carma_sched_finish(&f.s, 0, CARMA_OUTCOME_OOM, 12000, 90), 1);
    assert_int_equal(f.jobs[0].bound_mib, 40961);
    carma_sched_free(&f.s);
    /* A sampled peak below the bound under the cap: still a GPU of its own, uncapped. */
    fx_init(&f, "auto", 1);
    carma_sched_free(&f.s);
    assert_int_equal(carma_sched_init(&f.s, f.jobs, f.gpus, 1, carma_policy_find("auto"), &p), 0);
    f.jobs[0].bound_mib = 2048;
    carma_sched_submit(&f.s, 0, 0);
    assert_int_equal(fx_step(&f, 0), 1);
    assert_int_equal(carma_sched_finish(&f.s, 0, CARMA_OUTCOME_OOM, 516, 50), 1);
    assert_int_equal(f.jobs[0].bound_mib, 2048);
    assert_int_equal(f.jobs[0].exclusive, 1);
    assert_int_equal(fx_step(&f, 51), 1);
    assert_int_equal(carma_sched_mps_cap_mib(&f.s, &f.jobs[0]), 0);
    carma_sched_free(&f.s);
    /* The simulator's MPS GPUs cap no one (mps_cap 0): alone, a crash is the GPU's. */
    fx_init(&f, "auto", 1);
    f.jobs[0].bound_mib = 10000;
    carma_sched_submit(&f.s, 0, 0);
    assert_int_equal(fx_step(&f, 0), 1);
    assert_int_equal(carma_sched_mps_cap_mib(&f.s, &f.jobs[0]), 0);
    assert_int_equal(carma_sched_finish(&f.s, 0, CARMA_OUTCOME_OOM, 10400, 50), 1);
    assert_int_equal(f.jobs[0].bound_mib, 40961);
    assert_int_equal(f.jobs[0].exclusive, 0);
    carma_sched_free(&f.s);
}

static void test_kth_largest_gpu_in_service(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "auto", 4);
    static const uint64_t mib[4] = {16384, 81920, 40960, 81920};
    for (uint32_t g = 0; g < 4; g++) {
        f.gpus[g].mem_total_mib = mib[g];
        carma_sched_gpu_changed(&f.s, g);
    }
    static const uint64_t want[6] = {0, 81920, 81920, 40960, 16384, 0};
    for (uint16_t k = 0; k < 6; k++)
        assert_int_equal(carma_sched_kth_largest(&f.s, k), want[k]);
    f.gpus[3].drained = 1;
    carma_sched_gpu_changed(&f.s, 3);
    assert_int_equal(carma_sched_kth_largest(&f.s, 2), 40960);
    assert_int_equal(carma_sched_kth_largest(&f.s, 4), 0);
    carma_sched_free(&f.s);
}

static void test_auto_runs_a_loose_bound_alone_on_the_largest_gpus_in_service(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "auto", 3);
    f.gpus[0].mem_total_mib = 32768; /* V100, A100-40GB, V100 */
    f.gpus[2].mem_total_mib = 32768;
    for (uint32_t g = 0; g < 3; g++)
        carma_sched_gpu_changed(&f.s, g);
    assert_int_equal(carma_sched_kth_largest(&f.s, 1), 40960);
    assert_int_equal(carma_sched_kth_largest(&f.s, 2), 32768);
    assert_int_equal(carma_sched_kth_largest(&f.s, 4), 0);
    /* Two GPUs of 36000 MiB each: only one GPU is that large, so it runs alone on the two
     * largest rather than wait forever. */
    carma_job_init(&f.jobs[0], 1, 2, 0);
    f.jobs[0].bound_mib = 36000;
    carma_sched_submit(&f.s, 0, 0);
    assert_int_equal(fx_step(&f, 0), 1);
    assert_true(f.jobs[0].gpu[0] == 1 || f.jobs[0].gpu[1] == 1);
    assert_int_equal(carma_sched_finish(&f.s, 0, CARMA_OUTCOME_SUCCEEDED, 30000, 10), 0);
    /* The largest GPU lost: a bound past the others runs alone on one of them. */
    f.gpus[1].drained = 1;
    carma_sched_gpu_changed(&f.s, 1);
    assert_int_equal(carma_sched_kth_largest(&f.s, 1), 32768);
    f.jobs[1].bound_mib = 36000;
    carma_sched_submit(&f.s, 1, 11);
    assert_int_equal(fx_step(&f, 11), 1);
    assert_int_not_equal(f.jobs[1].gpu[0], 1);
    carma_sched_free(&f.s);
    /* A job waiting for the one GPU its bound fits runs elsewhere once that GPU is lost,
     * though no GPU it skipped has changed since (its last scan is not trusted). */
    fx_init(&f, "auto", 2);
    f.gpus[1].mem_total_mib = 81920;
    carma_sched_gpu_changed(&f.s, 1);
    f.jobs[0].bound_mib = 70000;
    carma_sched_submit(&f.s, 0, 0);
    assert_int_equal(fx_step(&f, 0), 1);
    assert_int_equal(f.jobs[0].gpu[0], 1);
    f.jobs[1].bound_mib = 60000;
    carma_sched_submit(&f.s, 1, 1);
    assert_int_equal(fx_step(&f, 1), 0);
    f.gpus[1].drained = 1;
    carma_sched_gpu_changed(&f.s, 1);
    assert_int_equal(fx_step(&f, 2), 1);
    assert_int_equal(f.jobs[1].gpu[0], 0);
    carma_sched_free(&f.s);
}

static void test_memory_gate_margins(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "oracle-ff", 1);
    fx_busy(&f, 0, 30000, 0.1f, 0.1f, 0.1f);
    /* free = 40960 - 30000 - 512 = 10448; needs req + 2048 */
    f.jobs[0].mem_mib = 10448 - 2048 + 1;
    carma_sched_submit(&f.s, 0, 100);
    assert_int_equal(fx_step(&f, 100), 0);
    f.jobs[0].mem_mib = 10448 - 2048;
    assert_int_equal(fx_step(&f, 101), 1);
    carma_sched_free(&f.s);
}

static void test_or_policies_need_5120_free(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "or-magm", 1);
    fx_busy(&f, 0, 40960 - 512 - 5119, 0.1f, 0.1f, 0.1f);
    carma_sched_submit(&f.s, 0, 100);
    assert_int_equal(fx_step(&f, 100), 0);
    f.gpus[0].mem_used_mib -= 1;
    assert_int_equal(fx_step(&f, 101), 1);
    carma_sched_free(&f.s);
}

static void test_risk_gate(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "oracle-ff", 2);
    fx_busy(&f, 0, 1000, 0.85f, 0.50f, 0.10f); /* SMACT high and SMOCC high: excluded */
    fx_busy(&f, 1, 1000, 0.85f, 0.30f, 0.30f); /* SMACT high but SMOCC, DRAMA low: allowed */
    f.jobs[0].mem_mib = 1000;
    carma_sched_submit(&f.s, 0, 100);
    assert_int_equal(fx_step(&f, 100), 1);
    assert_int_equal(f.jobs[0].gpu[0], 1);
    carma_sched_free(&f.s);

    fx_init(&f, "oracle-ff", 1);
    fx_busy(&f, 0, 1000, 0.85f, 0.10f, 0.45f); /* DRAMA high: excluded */
    f.jobs[0].mem_mib = 1000;
    carma_sched_submit(&f.s, 0, 100);
    assert_int_equal(fx_step(&f, 100), 0);
    carma_sched_free(&f.s);
}

/* Places a 1000 MiB job under `policy` on four GPUs busy with used[g] MiB at SMACT
 * smact[g] (SMOCC and DRAMA low): it must go to GPU `expect`. */
static void check_first(const char *policy, const uint64_t used[4], const float smact[4],
                        int expect)
{
    struct fx f;
    fx_init(&f, policy, 4);
    for (size_t g = 0; g < 4; g++)
        fx_busy(&f, g, used[g], smact[g], 0.1f, 0.1f);
    f.jobs[0].mem_mib = 1000;
    carma_sched_submit(&f.s, 0, 100);
    assert_int_equal(fx_step(&f, 100), 1);
    assert_int_equal(f.jobs[0].gpu[0], expect);
    carma_sched_free(&f.s);
}

static void check_order(const char *policy, int expect)
{
    static const uint64_t used[4] = {20000, 10000, 30000, 25000};
    static const float smact[4] = {0.50f, 0.70f, 0.20f, 0.60f};
    check_first(policy, used, smact, expect);
}

static void test_orders(void **state)
{
    (void)state;
    check_order("oracle-ff", 0);
    check_order("oracle-bf", 2);   /* least free memory that passes */
    check_order("oracle-magm", 1); /* most free memory */
    check_order("oracle-lug", 2);  /* least SMACT */
}

static void test_rr_no_gate_round_robin(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "or-rr", 2);
    fx_busy(&f, 0, 40000, 0.95f, 0.9f, 0.9f); /* would fail every gate */
    fx_busy(&f, 1, 40000, 0.95f, 0.9f, 0.9f);
    for (uint32_t j = 0; j < 3; j++)
        carma_sched_submit(&f.s, j, 100);
    assert_int_equal(fx_step(&f, 100), 1);
    assert_int_equal(f.jobs[0].gpu[0], 0);
    assert_int_equal(fx_step(&f, 101), 1);
    assert_int_equal(f.jobs[1].gpu[0], 1);
    assert_int_equal(fx_step(&f, 140), 1);
    assert_int_equal(f.jobs[2].gpu[0], 0);
    carma_sched_free(&f.s);
}

/* Pushes a window of n - 1 samples of `most` and then one of `last` to GPU g's SMACT,
 * with SMOCC at `smocc` and DRAMA low throughout. */
static void fx_smact_then(struct fx *f, size_t g, float most, float last, float smocc)
{
    for (int i = 0; i < 30; i++) {
        carma_window_push(&f->gpus[g].smact, i < 29 ? most : last);
        carma_window_push(&f->gpus[g].smocc, smocc);
        carma_window_push(&f->gpus[g].drama, 0.1f);
    }
}

/* CARMA sorts its candidates with pandas' stable mergesort: GPUs of equal free memory
 * (BF, MAGM) or equal SMACT (LUG) keep their index order. */
static void check_tie(const char *policy, int expect)
{
    static const uint64_t used[4] = {10000, 20000, 20000, 10000};
    static const float smact[4] = {0.50f, 0.30f, 0.30f, 0.50f};
    check_first(policy, used, smact, expect);
}

static void test_order_ties_keep_index_order(void **state)
{
    (void)state;
    check_tie("oracle-bf", 1);   /* 1 and 2 have the least free memory */
    check_tie("oracle-magm", 0); /* 0 and 3 the most */
    check_tie("oracle-lug", 1);  /* 1 and 2 the least SMACT */
    check_tie("or-magm", 0);
    check_tie("est-lug", 1);
}

/* The gate's comparisons are CARMA's `>=`: a window at exactly SMOCC 0.45 or DRAMA 0.40
 * beside SMACT 0.80 excludes the GPU; SMACT just under 0.80 never does. */
static void test_risk_gate_at_its_thresholds(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "oracle-ff", 3);
    fx_busy(&f, 0, 1000, 0.80f, 0.45f, 0.10f);
    fx_busy(&f, 1, 1000, 0.80f, 0.10f, 0.40f);
    fx_busy(&f, 2, 1000, 0.79f, 0.90f, 0.90f);
    f.jobs[0].mem_mib = 1000;
    carma_sched_submit(&f.s, 0, 100);
    assert_int_equal(fx_step(&f, 100), 1);
    assert_int_equal(f.jobs[0].gpu[0], 2);
    carma_sched_free(&f.s);
}

/* The gate and LUG's order read the window's risk aggregate (0.2 mean + 0.2 median +
 * 0.3 p95 + 0.1 p50 + 0.2 EMA), never the last sample alone: a GPU busy for 29 s and
 * quiet for the last one is still excluded, and LUG ranks a GPU quiet for 29 s and busy
 * for the last one first. */
static void test_gate_and_lug_read_the_window_not_the_last_sample(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "oracle-ff", 2);
    fx_busy(&f, 0, 1000, 0.0f, 0.0f, 0.0f);
    fx_busy(&f, 1, 1000, 0.0f, 0.0f, 0.0f);
    fx_smact_then(&f, 0, 0.95f, 0.10f, 0.50f); /* last sample quiet, window busy */
    fx_smact_then(&f, 1, 0.10f, 0.95f, 0.50f); /* last sample busy, window quiet */
    f.jobs[0].mem_mib = 1000;
    carma_sched_submit(&f.s, 0, 100);
    assert_int_equal(fx_step(&f, 100), 1);
    assert_int_equal(f.jobs[0].gpu[0], 1);
    carma_sched_free(&f.s);

    fx_init(&f, "oracle-lug", 2);
    fx_busy(&f, 0, 1000, 0.50f, 0.1f, 0.1f);
    fx_busy(&f, 1, 1000, 0.0f, 0.0f, 0.0f);
    fx_smact_then(&f, 1, 0.20f, 0.90f, 0.10f); /* risk about 0.26 against 0.50 */
    f.jobs[0].mem_mib = 1000;
    carma_sched_submit(&f.s, 0, 100);
    assert_int_equal(fx_step(&f, 100), 1);
    assert_int_equal(f.jobs[0].gpu[0], 1);
    carma_sched_free(&f.s);
}

/* or-* ask for no memory: only the 5120 MiB floor, whatever requirement the job has. */
static void test_or_policies_ignore_the_requirement(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "or-lug", 1);
    fx_busy(&f, 0, 35000, 0.1f, 0.1f, 0.1f); /* 5448 MiB free */
    f.jobs[0].mem_mib = 39000;
    carma_sched_submit(&f.s, 0, 100);
    assert_int_equal(fx_step(&f, 100), 1);
    carma_sched_free(&f.s);
}

/* While the recovery queue's head waits for an idle GPU, nothing else starts: not even a
 * main-queue head that could collocate now (every CARMA policy's collocation branch
 * requires an empty recovery queue). */
static void test_recovery_head_blocks_a_collocatable_main_head(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "oracle-magm", 1);
    for (uint32_t j = 0; j < 3; j++)
        f.jobs[j].mem_mib = 1000;
    carma_sched_submit(&f.s, 0, 0);
    carma_sched_submit(&f.s, 1, 0);
    assert_int_equal(fx_step(&f, 0), 1);
    f.gpus[0].mem_used_mib = 1000;
    assert_int_equal(fx_step(&f, 31), 1); /* job 1 joins job 0 */
    f.gpus[0].mem_used_mib = 2000;
    carma_sched_submit(&f.s, 2, 31);
    assert_int_equal(carma_sched_finish(&f.s, 1, CARMA_OUTCOME_OOM, 900, 40), 1);
    f.gpus[0].mem_used_mib = 1000;
    /* job 1 died: its GPU is out of its grace and has room, but job 1 goes first */
    assert_int_equal(fx_step(&f, 41), 0);
    assert_int_equal(fx_step(&f, 45), 0);
    assert_int_equal(f.jobs[2].state, CARMA_JOB_QUEUED);
    assert_int_equal(carma_sched_finish(&f.s, 0, CARMA_OUTCOME_SUCCEEDED, 1000, 50), 0);
    f.gpus[0].mem_used_mib = 0;
    assert_int_equal(fx_step(&f, 51), 1);
    assert_int_equal(f.out[0].job, 1);
    f.gpus[0].mem_used_mib = 1000;
    assert_int_equal(fx_step(&f, 52), 0); /* job 1's grace */
    assert_int_equal(fx_step(&f, 81), 0); /* its last second */
    assert_int_equal(fx_step(&f, 82), 1);
    assert_int_equal(f.out[0].job, 2);
    carma_sched_free(&f.s);
}

/* CARMA's round robin is a generator that only its collocation branch draws from: jobs
 * placed on idle GPUs do not move it. */
static void test_rr_pointer_ignores_idle_placements(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "or-rr", 3);
    fx_busy(&f, 2, 1000, 0.1f, 0.1f, 0.1f); /* not idle: a foreign process */
    for (uint32_t j = 0; j < 4; j++)
        carma_sched_submit(&f.s, j, 0);
    assert_int_equal(fx_step(&f, 0), 1);
    assert_int_equal(f.jobs[0].gpu[0], 0); /* idle */
    assert_int_equal(fx_step(&f, 1), 1);
    assert_int_equal(f.jobs[1].gpu[0], 1); /* idle */
    assert_int_equal(fx_step(&f, 40), 1);
    assert_int_equal(f.jobs[2].gpu[0], 0); /* the ring's first, not the GPU after 1 */
    assert_int_equal(fx_step(&f, 41), 1);
    assert_int_equal(f.jobs[3].gpu[0], 1);
    carma_sched_free(&f.s);
}

/* A job of several GPUs with too few idle ones collocates on GPUs of the policy's order,
 * idle ones among them (CARMA's collocation branch ranks every GPU that passes). */
static void test_multi_gpu_job_collocates_in_policy_order(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "oracle-magm", 3);
    fx_busy(&f, 0, 30000, 0.1f, 0.1f, 0.1f); /* 10448 MiB free */
    fx_busy(&f, 2, 10000, 0.1f, 0.1f, 0.1f); /* 30448 MiB free */
    f.jobs[0].gpus = 2;
    f.jobs[0].mem_mib = 1000;
    carma_sched_submit(&f.s, 0, 100);
    assert_int_equal(fx_step(&f, 100), 1);
    assert_int_equal(f.jobs[0].gpu[0], 1); /* the idle GPU: most free */
    assert_int_equal(f.jobs[0].gpu[1], 2);
    carma_sched_free(&f.s);

    fx_init(&f, "oracle-ff", 3);
    fx_busy(&f, 0, 30000, 0.1f, 0.1f, 0.1f);
    fx_busy(&f, 2, 10000, 0.1f, 0.1f, 0.1f);
    f.jobs[0].gpus = 2;
    f.jobs[0].mem_mib = 1000;
    carma_sched_submit(&f.s, 0, 100);
    assert_int_equal(fx_step(&f, 100), 1);
    assert_int_equal(f.jobs[0].gpu[0], 0);
    assert_int_equal(f.jobs[0].gpu[1], 1);
    carma_sched_free(&f.s);
}

static void test_head_of_line_blocking_vs_auto_backfill(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "oracle-ff", 1);
    fx_busy(&f, 0, 30000, 0.1f, 0.1f, 0.1f);
    f.jobs[0].mem_mib = 20000; /* does not fit */
    f.jobs[1].mem_mib = 1000;  /* would fit */
    carma_sched_submit(&f.s, 0, 100);
    carma_sched_submit(&f.s, 1, 100);
    assert_int_equal(fx_step(&f, 100), 0); /* CARMA: only the head is considered */
    carma_sched_free(&f.s);

    fx_init(&f, "auto", 2);
    /* GPU 0 runs a carma job holding 30000; GPU 1 runs one holding 20000. */
    f.jobs[10].bound_mib = 30000;
    f.jobs[10].smact = 0.1f;
    f.jobs[11].bound_mib = 20000;
    f.jobs[11].smact = 0.1f;
    carma_sched_submit(&f.s, 10, 0);
    carma_sched_submit(&f.s, 11, 0);
    assert_int_equal(fx_step(&f, 0), 2);
    f.jobs[0].bound_mib = 25000; /* needs a GPU to drain */
    f.jobs[0].smact = 0.1f;
    f.jobs[1].bound_mib = 1000;  /* fits now */
    f.jobs[1].smact = 0.1f;
    carma_sched_submit(&f.s, 0, 1);
    carma_sched_submit(&f.s, 1, 1);
    assert_int_equal(fx_step(&f, 1), 1);
    assert_int_equal(f.out[0].job, 1);
    /* The blocked head holds the GPU closest to fitting it (GPU 1: 20000 committed),
     * so the backfilled job went to GPU 0. */
    assert_int_equal(f.jobs[1].gpu[0], 0);
    assert_int_equal(carma_sched_finish(&f.s, 11, CARMA_OUTCOME_SUCCEEDED, 20000, 50), 0);
    assert_int_equal(fx_step(&f, 50), 1);
    assert_int_equal(f.jobs[0].gpu[0], 1);
    carma_sched_free(&f.s);
}

/* On a server no larger than the blocked job, its reservation must not make auto a FIFO:
 * jobs behind it take the reserved GPU when, once the job running there has gone, the
 * holder's bound, theirs and the margin still fit and their SMs leave the holder its own.
 * Those that would not, wait; the holder then starts beside the backfilled ones. */
static void test_auto_backfills_a_reserved_gpu_without_delaying_its_holder(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "auto", 1);
    f.jobs[0].bound_mib = 20000; /* running */
    f.jobs[0].smact = 0.5f;
    carma_sched_submit(&f.s, 0, 0);
    assert_int_equal(fx_step(&f, 0), 1);
    f.jobs[1].bound_mib = 35000; /* blocked: the holder */
    f.jobs[1].smact = 0.5f;
    carma_sched_submit(&f.s, 1, 1);
    for (uint32_t j = 2; j < 6; j++) { /* 4 x 1000 MiB, 0.1 SMACT: fit beside the holder */
        f.jobs[j].bound_mib = 1000;
        f.jobs[j].smact = 0.1f;
        carma_sched_submit(&f.s, j, 1);
    }
    f.jobs[6].bound_mib = 15000; /* fits now (40960 - 512 - 20000 - 4000), not beside it */
    f.jobs[6].smact = 0.1f;
    carma_sched_submit(&f.s, 6, 1);
    f.jobs[7].bound_mib = 500; /* fits beside it, but its SMs would slow the holder */
    f.jobs[7].smact = 0.2f;
    carma_sched_submit(&f.s, 7, 1);
    assert_int_equal(fx_step(&f, 1), 4);
    for (uint32_t j = 2; j < 6; j++)
        assert_int_equal(f.jobs[j].state, CARMA_JOB_RUNNING);
    assert_int_equal(f.jobs[1].state, CARMA_JOB_QUEUED);
    assert_int_equal(f.jobs[6].state, CARMA_JOB_QUEUED);
    assert_int_equal(f.jobs[7].state, CARMA_JOB_QUEUED);
    /* A backfilled job that ends gives its share back: job 7 fits then. */
    assert_int_equal(carma_sched_finish(&f.s, 2, CARMA_OUTCOME_SUCCEEDED, 1000, 5), 0);
    assert_int_equal(carma_sched_finish(&f.s, 3, CARMA_OUTCOME_SUCCEEDED, 1000, 5), 0);
    assert_int_equal(fx_step(&f, 5), 1);
    assert_int_equal(f.jobs[7].state, CARMA_JOB_RUNNING);
    /* The first job ends: the holder starts at once, beside the backfilled ones. */
    assert_int_equal(carma_sched_finish(&f.s, 0, CARMA_OUTCOME_SUCCEEDED, 20000, 10), 0);
    assert_int_equal(fx_step(&f, 10), 1);
    assert_int_equal(f.out[0].job, 1);
    carma_sched_free(&f.s);
}

/* The books of the reserved GPUs must follow what carmad does meanwhile: it re-measures
 * a job's solo SMACT once it ran alone a full window (carma_sched_set_profile). The
 * books then read the new profile, as the holder's own test will, and release() takes
 * back what they hold (a stale load aborted carmad, or let in jobs that then kept the
 * holder out). */
static void test_auto_backfill_books_survive_a_new_profile(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "auto", 2);
    f.jobs[0].bound_mib = 40000; /* GPU 0 has no room left */
    f.jobs[0].smact = 0.3f;
    carma_sched_submit(&f.s, 0, 0);
    assert_int_equal(fx_step(&f, 0), 1);
    f.jobs[1].gpus = 2; /* the holder: both GPUs reserved */
    f.jobs[1].bound_mib = 20000;
    f.jobs[1].smact = 0.5f;
    carma_sched_submit(&f.s, 1, 1);
    f.jobs[2].bound_mib = 5000;
    f.jobs[2].smact = 0.2f;
    carma_sched_submit(&f.s, 2, 1);
    assert_int_equal(fx_step(&f, 1), 1);
    uint16_t g = f.jobs[2].gpu[0];
    assert_int_equal(g, 1); /* alone on the idle reserved GPU */
    assert_int_equal(f.s.backfill[g].njobs, 1);
    carma_sched_set_profile(&f.s, 2, 0.45f, 0.2f, 0.2f);
    assert_int_equal(f.s.backfill[g].smact, 450000);
    assert_float_equal(f.gpus[g].prof_smact, 0.45f, 1e-6);
    /* 0.45 + 0.1 + the holder's 0.5 pass the GPU's SMs: job 3 may not join it (with
     * the books at 0.2 it would have) */
    f.jobs[3].bound_mib = 1000;
    f.jobs[3].smact = 0.1f;
    carma_sched_submit(&f.s, 3, 2);
    assert_int_equal(fx_step(&f, 2), 0);
    assert_int_equal(carma_sched_finish(&f.s, 2, CARMA_OUTCOME_SUCCEEDED, 5000, 100), 0);
    assert_int_equal(f.s.backfill[g].njobs, 0);
    assert_int_equal(f.s.backfill[g].mib, 0);
    assert_int_equal(f.s.backfill[g].smact, 0);
    assert_int_equal(f.s.backfill[g].busy, 0);
    assert_int_equal(f.s.backfill[g].weight, 0);
    carma_sched_free(&f.s);
}

/* A job past its hold (its --mem understated) uses memory no hold counts: auto does not
 * hand that memory to another job (DESIGN.md 3: free now, less what ramping jobs will
 * take, must hold the bound). */
static void test_auto_counts_a_job_past_its_hold(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "auto", 1);
    f.jobs[0].bound_mib = 10000;
    f.jobs[0].smact = 0.2f;
    carma_sched_submit(&f.s, 0, 0);
    assert_int_equal(fx_step(&f, 0), 1);
    /* it uses 30 GiB: 10 GiB of 40 left */
    f.gpus[0].mem_used_mib = f.gpus[0].carma_used_mib = 30720;
    f.gpus[0].over_mib = 30720 - 10000;
    carma_sched_gpu_changed(&f.s, 0);
    f.jobs[1].bound_mib = 20000;
    f.jobs[1].smact = 0.2f;
    carma_sched_submit(&f.s, 1, 1);
    assert_int_equal(fx_step(&f, 1), 0);
    f.jobs[2].bound_mib = 9000; /* what is left fits this one */
    f.jobs[2].smact = 0.2f;
    carma_sched_submit(&f.s, 2, 2);
    assert_int_equal(fx_step(&f, 2), 1);
    assert_int_equal(f.out[0].job, 2);
    carma_sched_free(&f.s);
}

/* A process carma did not start on every GPU (a notebook's context) does not keep a
 * job that runs alone (no profile yet, or exclusive after an OOM) waiting for ever under
 * auto; the reference policies keep CARMA's idle GPUs (no process at all). */
static void test_auto_runs_alone_beside_foreign_processes(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "auto", 2);
    fx_busy(&f, 0, 600, 0.1f, 0.1f, 0.1f);
    fx_busy(&f, 1, 600, 0.1f, 0.1f, 0.1f);
    carma_sched_gpu_changed(&f.s, 0);
    carma_sched_gpu_changed(&f.s, 1);
    f.jobs[0].bound_mib = 1000; /* no profile: runs alone */
    carma_sched_submit(&f.s, 0, 0);
    f.jobs[1].bound_mib = 1000;
    f.jobs[1].smact = 0.2f;
    f.jobs[1].exclusive = 1;
    carma_sched_submit(&f.s, 1, 0);
    f.jobs[2].bound_mib = 1000; /* no GPU of its own is left */
    carma_sched_submit(&f.s, 2, 0);
    assert_int_equal(fx_step(&f, 0), 2);
    assert_int_not_equal(f.jobs[0].gpu[0], f.jobs[1].gpu[0]);
    assert_int_equal(f.jobs[2].state, CARMA_JOB_QUEUED);
    /* its memory still counts: a GPU of its own that a foreign process fills is not */
    carma_sched_finish(&f.s, 0, CARMA_OUTCOME_SUCCEEDED, 0, 1);
    f.gpus[f.jobs[0].gpu[0]].mem_used_mib = 40000;
    carma_sched_gpu_changed(&f.s, f.jobs[0].gpu[0]);
    assert_int_equal(fx_step(&f, 1), 0);
    carma_sched_free(&f.s);
}

/* A job that failed among the clients of an MPS GPU's fault runs alone next, so that a
 * failure there is its own (carma_sched_run_alone): it waits beside a job it would have
 * joined, and says why. Only a queued job is set so. */
static void test_run_alone_after_an_mps_fault(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "auto", 1);
    for (uint32_t k = 0; k < 2; k++) {
        f.jobs[k].bound_mib = 1000;
        f.jobs[k].smact = 0.1f;
        carma_sched_submit(&f.s, k, 0);
    }
    assert_int_equal(fx_step(&f, 0), 2); /* light jobs share the GPU */
    assert_int_equal(carma_sched_run_alone(&f.s, 1, CARMA_ALONE_MPS_FAULT), -EINVAL);
    assert_int_equal(carma_sched_finish(&f.s, 1, CARMA_OUTCOME_GPU_ERROR, 0, 1), 1);
    assert_int_equal(carma_sched_run_alone(&f.s, 1, CARMA_ALONE_NO), -EINVAL);
    assert_int_equal(carma_sched_run_alone(&f.s, 1, CARMA_ALONE_COUNT), -EINVAL);
    assert_int_equal(carma_sched_run_alone(&f.s, 1, CARMA_ALONE_MPS_FAULT), 0);
    assert_int_equal(f.jobs[1].exclusive, CARMA_ALONE_MPS_FAULT);
    assert_int_equal(fx_step(&f, 1), 0);
    struct carma_sched_why w;
    assert_int_equal(carma_sched_why(&f.s, 1, 1, &w), 0);
    assert_int_equal(w.code, CARMA_WHY_EXCLUSIVE);
    assert_non_null(strstr(w.text, "must run alone (a fault ended every client of its MPS GPU"));
    carma_sched_finish(&f.s, 0, CARMA_OUTCOME_SUCCEEDED, 0, 2);
    assert_int_equal(fx_step(&f, 2), 1);
    assert_int_equal(f.jobs[1].state, CARMA_JOB_RUNNING);
    carma_sched_free(&f.s);
}

/* An idle GPU whose driver reserves more than the margin (memory v2: reserved is not
 * free) still takes a job that asks the whole GPU: a bound past every GPU, or none. One
 * with a bound it cannot hold does not. */
static void test_auto_whole_gpu_beside_reserved_memory(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "auto", 1);
    f.gpus[0].mem_used_mib = 600; /* reserved by the driver, no process */
    carma_sched_gpu_changed(&f.s, 0);
    f.jobs[0].bound_mib = 40700; /* fits no GPU's free memory, is no whole-GPU request */
    carma_sched_submit(&f.s, 0, 0);
    assert_int_equal(fx_step(&f, 0), 0);
    assert_int_equal(carma_sched_dequeue(&f.s, 0), 0);
    f.jobs[1].bound_mib = 50000; /* a loose estimate past every GPU: the whole of one */
    carma_sched_submit(&f.s, 1, 1);
    assert_int_equal(fx_step(&f, 1), 1);
    assert_int_equal(f.jobs[1].state, CARMA_JOB_RUNNING);
    carma_sched_finish(&f.s, 1, CARMA_OUTCOME_SUCCEEDED, 0, 2);
    f.jobs[2].bound_mib = 0; /* no bound: the whole GPU */
    carma_sched_submit(&f.s, 2, 3);
    assert_int_equal(fx_step(&f, 3), 1);
    carma_sched_free(&f.s);
}

static void test_auto_backfill_leaves_the_holder_its_gain(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "auto", 4);
    for (uint32_t j = 0; j < 4; j++) {
        f.jobs[j].bound_mib = 30000;
        f.jobs[j].smact = 0.1f;
        carma_sched_submit(&f.s, j, 0);
    }
    assert_int_equal(fx_step(&f, 0), 4);
    f.jobs[4].bound_mib = 20000; /* the holder */
    f.jobs[4].smact = 0.1f;
    carma_sched_submit(&f.s, 4, 1);
    for (uint32_t j = 5; j < 9; j++) {
        f.jobs[j].gpus = 4;
        f.jobs[j].bound_mib = 100;
        f.jobs[j].smact = 0.05f;
        carma_sched_submit(&f.s, j, 1);
    }
    assert_int_equal(fx_step(&f, 1), 3);
    assert_int_equal(f.jobs[8].state, CARMA_JOB_QUEUED);
    for (uint32_t j = 0; j < 4; j++)
        assert_int_equal(carma_sched_finish(&f.s, j, CARMA_OUTCOME_SUCCEEDED, 30000, 10), 0);
    assert_true(fx_step(&f, 10) >= 1);
    assert_int_equal(f.jobs[4].state, CARMA_JOB_RUNNING);
    carma_sched_free(&f.s);
}

/* A job that must run alone (no profile, or a bound past its GPUs) is never backfilled
 * beside the holder: it would hold the GPU, or close it to the holder (an unprofiled job
 * takes no co-runner). A cancelled holder's reservation goes with it. */
static void test_auto_backfill_refuses_lone_jobs_and_forgets_a_cancelled_holder(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "auto", 2);
    f.jobs[0].bound_mib = 30000;
    f.jobs[0].smact = 0.1f;
    carma_sched_submit(&f.s, 0, 0);
    assert_int_equal(fx_step(&f, 0), 1);
    f.jobs[1].gpus = 2; /* the holder, SMACT 0: any SM demand fits beside it */
    f.jobs[1].bound_mib = 20000;
    f.jobs[1].smact = 0.0f;
    carma_sched_submit(&f.s, 1, 1);
    f.jobs[2].bound_mib = 1000;
    f.jobs[2].smact = -1.0f; /* unprofiled */
    carma_sched_submit(&f.s, 2, 1);
    assert_int_equal(fx_step(&f, 1), 0);
    assert_int_equal(f.jobs[2].state, CARMA_JOB_QUEUED);
    assert_int_equal(f.s.holder, 1);
    assert_int_equal(carma_sched_dequeue(&f.s, 1), 0);
    assert_int_equal(f.s.holder, CARMA_NONE);
    for (size_t g = 0; g < 2; g++)
        assert_false(f.s.slot[g].flags & CARMA_SLOT_RESERVED);
    carma_sched_free(&f.s);
}

/* A reservation on a GPU taken out of service (drained by hand for maintenance, or by a
 * RESET Xid until carma undrain) serves its holder no more: it moves to GPUs in service.
 * Left where it was, the GPUs the holder can use were open to every job behind it, and a
 * steady stream of small jobs kept the holder out for as long as the drain lasted. */
static void test_auto_reservation_leaves_a_drained_gpu(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "auto", 2);
    for (uint32_t j = 10; j < 12; j++) { /* one on each GPU */
        f.jobs[j].bound_mib = 20000;
        f.jobs[j].smact = 0.1f;
        carma_sched_submit(&f.s, j, 0);
    }
    assert_int_equal(fx_step(&f, 0), 2);
    assert_int_equal(f.jobs[10].gpu[0], 0);
    f.jobs[0].bound_mib = 30000; /* the holder: needs a GPU to drain */
    f.jobs[0].smact = 0.1f;
    carma_sched_submit(&f.s, 0, 1);
    assert_int_equal(fx_step(&f, 1), 0);
    assert_int_equal(f.s.holder, 0);
    assert_true(f.s.slot[0].flags & CARMA_SLOT_RESERVED); /* a tie: the lower index */
    /* GPU 0 is drained; its job is lost. */
    f.gpus[0].drained = 1;
    carma_sched_gpu_changed(&f.s, 0);
    assert_int_equal(carma_sched_finish(&f.s, 10, CARMA_OUTCOME_LOST, 20000, 2), 0);
    /* Small jobs keep coming (9000 MiB, SMACT 0.1), a new one each second: GPU 1 would
     * never hold fewer than two without the reservation. */
    uint32_t run[NJ], nrun = 0, next = 1;
    run[nrun++] = 11;
    for (double t = 3; t < 40 && f.jobs[0].state == CARMA_JOB_QUEUED; t += 1) {
        if (next < 10) {
            carma_job_init(&f.jobs[next], next + 1, 1, t);
            f.jobs[next].bound_mib = 9000;
            f.jobs[next].smact = 0.1f;
            carma_sched_submit(&f.s, next, t);
            next++;
        }
        size_t n = fx_step(&f, t);
        for (size_t k = 0; k < n; k++)
            if (f.out[k].job != 0)
                run[nrun++] = f.out[k].job;
        /* the oldest ends once three run, or when none started */
        if (f.jobs[0].state == CARMA_JOB_QUEUED && nrun > 0 && (nrun >= 3 || n == 0)) {
            uint32_t done = run[0];
            memmove(run, run + 1, --nrun * sizeof *run);
            assert_int_equal(carma_sched_finish(&f.s, done, CARMA_OUTCOME_SUCCEEDED, 0, t), 0);
            if (done != 11 && next >= 10)
                next = done; /* its slot takes the next small job */
        }
    }
    assert_int_equal(f.jobs[0].state, CARMA_JOB_RUNNING);
    assert_int_equal(f.jobs[0].gpu[0], 1);
    assert_false(f.s.slot[0].flags & CARMA_SLOT_RESERVED);
    carma_sched_free(&f.s);
}

/* A GPU whose other processes (a notebook holding 20000 MiB) leave too little for the
 * blocked job is no GPU to hold back for it: held, it kept no job off that GPU the holder
 * could use, and the GPU it can use took every job behind it. The reservation goes to the
 * GPUs closest to fitting it, what others use counted. */
static void test_auto_reserves_no_gpu_foreign_processes_fill(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "auto", 2);
    f.gpus[0].nforeign = 1;
    f.gpus[0].mem_used_mib = 20000;
    carma_sched_gpu_changed(&f.s, 0);
    f.jobs[11].bound_mib = 25000; /* more than GPU 0 has */
    f.jobs[11].smact = 0.1f;
    carma_sched_submit(&f.s, 11, 0);
    assert_int_equal(fx_step(&f, 0), 1);
    assert_int_equal(f.jobs[11].gpu[0], 1);
    f.jobs[0].bound_mib = 30000; /* the holder */
    f.jobs[0].smact = 0.1f;
    carma_sched_submit(&f.s, 0, 1);
    assert_int_equal(fx_step(&f, 1), 0);
    assert_int_equal(f.s.holder, 0);
    assert_true(f.s.slot[1].flags & CARMA_SLOT_RESERVED);
    assert_false(f.s.slot[0].flags & CARMA_SLOT_RESERVED);
    /* Small jobs keep coming (7000 MiB, SMACT 0.1), a new one each second: GPU 1 would
     * never hold fewer than two without its reservation. */
    uint32_t run[NJ], nrun = 0, next = 1;
    run[nrun++] = 11;
    for (double t = 2; t < 40 && f.jobs[0].state == CARMA_JOB_QUEUED; t += 1) {
        if (next < 10) {
            carma_job_init(&f.jobs[next], next + 1, 1, t);
            f.jobs[next].bound_mib = 7000;
            f.jobs[next].smact = 0.1f;
            carma_sched_submit(&f.s, next, t);
            next++;
        }
        size_t n = fx_step(&f, t);
        for (size_t k = 0; k < n; k++)
            if (f.out[k].job != 0 && f.jobs[f.out[k].job].gpu[0] == 1)
                run[nrun++] = f.out[k].job;
        /* the oldest on GPU 1 ends once three run there, or when none started */
        if (f.jobs[0].state == CARMA_JOB_QUEUED && nrun > 0 && (nrun >= 3 || n == 0)) {
            uint32_t done = run[0];
            memmove(run, run + 1, --nrun * sizeof *run);
            assert_int_equal(carma_sched_finish(&f.s, done, CARMA_OUTCOME_SUCCEEDED, 0, t), 0);
            if (done != 11 && next >= 10)
                next = done; /* its slot takes the next small job */
        }
    }
    assert_int_equal(f.jobs[0].state, CARMA_JOB_RUNNING);
    assert_int_equal(f.jobs[0].gpu[0], 1);
    carma_sched_free(&f.s);
}

/* A step cut short by its caller's cap (carmad takes 64 placements a call, the simulator
 * 256) before it reached the blocked job keeps the job's reservation: made anew, it
 * counted the jobs backfilled under the old one as running before it, and let in more
 * beside them, which the holder then waited out (in carmad, more than 64 jobs ahead of
 * it: a fair-share order, an MPS fault's clients re-queued; here two, one a call). */
static void test_auto_step_cut_short_keeps_the_reservation(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "auto", 2);
    f.jobs[10].bound_mib = 20000; /* on GPU 0 */
    f.jobs[10].smact = 0.1f;
    f.jobs[11].bound_mib = 35000; /* on GPU 1 */
    f.jobs[11].smact = 0.1f;
    carma_sched_submit(&f.s, 10, 0);
    carma_sched_submit(&f.s, 11, 0);
    assert_int_equal(fx_step(&f, 0), 2);
    assert_int_equal(f.jobs[10].gpu[0], 0);
    f.jobs[0].bound_mib = 30000; /* the holder: GPU 0 is held for it */
    f.jobs[0].smact = 0.1f;
    carma_sched_submit(&f.s, 0, 1);
    f.jobs[1].bound_mib = 10000; /* backfilled on GPU 0: 40960 - 512 - 30000 - 10000 */
    f.jobs[1].smact = 0.1f;
    carma_sched_submit(&f.s, 1, 1);
    assert_int_equal(fx_step(&f, 1), 1);
    assert_int_equal(f.jobs[1].gpu[0], 0);
    assert_int_equal(f.s.holder, 0);
    /* Two jobs go ahead of the holder (the recovery queue here) and are placed one a
     * call; one more backfill candidate waits behind it. */
    for (uint32_t j = 2; j < 4; j++) {
        f.jobs[j].bound_mib = 1000;
        f.jobs[j].smact = 0.1f;
        carma_sched_submit_recovery(&f.s, j, 2);
    }
    f.jobs[4].bound_mib = 10000; /* would leave the holder no room once job 10 ends */
    f.jobs[4].smact = 0.1f;
    carma_sched_submit(&f.s, 4, 2);
    size_t n;
    while ((n = carma_sched_step(&f.s, 2, f.out, 1)) == 1)
        assert_int_not_equal(f.out[0].job, 4);
    assert_int_equal(f.jobs[2].state, CARMA_JOB_RUNNING);
    assert_int_equal(f.jobs[3].state, CARMA_JOB_RUNNING);
    assert_int_equal(f.jobs[4].state, CARMA_JOB_QUEUED);
    /* The job that ran before the reservation ends: the holder starts. */
    assert_int_equal(carma_sched_finish(&f.s, 10, CARMA_OUTCOME_SUCCEEDED, 20000, 3), 0);
    assert_int_equal(carma_sched_step(&f.s, 3, f.out, 1), 1);
    assert_int_equal(f.out[0].job, 0);
    carma_sched_free(&f.s);
}

static void test_auto_reserves_bounds_during_ramp(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "auto", 1);
    for (uint32_t j = 0; j < 3; j++) {
        f.jobs[j].bound_mib = 15000;
        f.jobs[j].smact = 0.2f;
        carma_sched_submit(&f.s, j, 0);
    }
    /* Nothing allocated yet (mem_used 0): a grace-free placer would take all three;
     * the bounds say two fit in 40960 - 512. */
    assert_int_equal(fx_step(&f, 0), 2);
    assert_int_equal(f.gpus[0].committed_mib, 30000);
    assert_int_equal(fx_step(&f, 1), 0);
    carma_sched_free(&f.s);
}

/* A bound past every GPU's memory (a loose estimate: VGG16 at batch 128 is bounded at
 * 45 GB and peaks at 22) runs alone on the largest GPU instead of waiting forever and
 * holding GPUs reserved for itself; nothing joins it. */
static void test_auto_bound_past_every_gpu_runs_alone(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "auto", 2);
    f.gpus[1].mem_total_mib = 81920;
    carma_sched_gpu_changed(&f.s, 1);
    f.jobs[0].bound_mib = 90000;
    f.jobs[0].smact = 0.2f;
    f.jobs[1].bound_mib = 1000;
    f.jobs[1].smact = 0.1f;
    f.jobs[2].bound_mib = 60000; /* fits the 80 GB GPU only: waits for it */
    f.jobs[2].smact = 0.1f;
    carma_sched_submit(&f.s, 0, 0);
    carma_sched_submit(&f.s, 1, 0);
    carma_sched_submit(&f.s, 2, 0);
    assert_int_equal(fx_step(&f, 0), 2);
    assert_int_equal(f.jobs[0].state, CARMA_JOB_RUNNING);
    assert_int_equal(f.jobs[0].gpu[0], 1); /* the larger GPU */
    assert_int_equal(f.jobs[1].gpu[0], 0);
    assert_int_equal(f.gpus[1].njobs, 1);
    assert_int_equal(f.jobs[2].state, CARMA_JOB_QUEUED);
    assert_int_equal(fx_step(&f, 1), 0);
    assert_int_equal(carma_sched_finish(&f.s, 0, CARMA_OUTCOME_SUCCEEDED, 30000, 10), 0);
    assert_int_equal(fx_step(&f, 10), 1);
    assert_int_equal(f.jobs[2].gpu[0], 1);
    carma_sched_free(&f.s);
    /* on an idle GPU that reports a little memory in use outside carma (a real GPU's
     * driver: NVML says some MiB idle) too, and still nothing joins it (audit: the whole
     * memory asked of it, it had waited forever) */
    fx_init(&f, "auto", 1);
    f.gpus[0].mem_used_mib = 500;
    carma_sched_gpu_changed(&f.s, 0);
    f.jobs[0].bound_mib = 50000;
    f.jobs[0].smact = 0.5f;
    f.jobs[1].bound_mib = 1;
    f.jobs[1].smact = 0.01f;
    carma_sched_submit(&f.s, 0, 0);
    carma_sched_submit(&f.s, 1, 0);
    assert_int_equal(fx_step(&f, 0), 1);
    assert_int_equal(f.jobs[0].state, CARMA_JOB_RUNNING);
    assert_int_equal(f.jobs[1].state, CARMA_JOB_QUEUED);
    assert_int_equal(fx_step(&f, 40), 0);
    carma_sched_free(&f.s);
}

static void test_auto_refuses_collocation_that_lowers_throughput(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "auto", 1);
    f.gpus[0].sharing = CARMA_SHARING_TIMESLICE;
    for (uint32_t j = 0; j < 2; j++) {
        f.jobs[j].bound_mib = 1000;
        f.jobs[j].smact = 1.0f; /* busy 1: time-slicing two gains nothing */
        carma_sched_submit(&f.s, j, 0);
    }
    assert_int_equal(fx_step(&f, 0), 1);
    assert_int_equal(fx_step(&f, 1), 0);
    carma_sched_free(&f.s);
}

/* A job without a solo profile runs alone and none joins it, whatever its width: a
 * 2-GPU job's weight once made the gain of sharing two busy GPUs look positive. */
static void test_auto_never_collocates_an_unprofiled_job(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "auto", 2);
    for (size_t g = 0; g < 2; g++)
        f.gpus[g].sharing = CARMA_SHARING_TIMESLICE;
    for (uint32_t j = 0; j < 2; j++) { /* unprofiled (smact < 0), one per GPU */
        f.jobs[j].bound_mib = 8192;
        carma_sched_submit(&f.s, j, 0);
    }
    assert_int_equal(fx_step(&f, 0), 2);
    f.jobs[2].gpus = 2; /* unprofiled, 2 GPUs */
    f.jobs[2].bound_mib = 30720;
    carma_sched_submit(&f.s, 2, 1);
    f.jobs[3].bound_mib = 1024; /* profiled, light: would share a profiled GPU */
    f.jobs[3].smact = 0.1f;
    carma_sched_submit(&f.s, 3, 1);
    assert_int_equal(fx_step(&f, 1), 0);
    /* both GPUs freed: the 2-GPU job takes them, alone */
    assert_int_equal(carma_sched_finish(&f.s, 0, CARMA_OUTCOME_SUCCEEDED, 0, 2), 0);
    assert_int_equal(carma_sched_finish(&f.s, 1, CARMA_OUTCOME_SUCCEEDED, 0, 2), 0);
    assert_int_equal(fx_step(&f, 2), 1);
    assert_int_equal(f.out[0].job, 2);
    assert_int_equal(fx_step(&f, 3), 0); /* and the light job does not join it */
    carma_sched_free(&f.s);
}

/* fx_init with GPUs 0-1 in island 0 and 2-3 in island 1 when `islands` (else one). */
static void fx_islands(struct fx *f, int islands)
{
    memset(f, 0, sizeof *f);
    for (size_t i = 0; i < NG; i++) {
        carma_gpu_init(&f->gpus[i], 40960, 30, CARMA_SHARING_MPS);
        f->gpus[i].island = islands ? (uint16_t)(i / 2) : 0;
    }
    for (uint32_t i = 0; i < NJ; i++) {
        carma_job_init(&f->jobs[i], i + 1, 1, 0);
        f->jobs[i].bound_mib = 8192;
        f->jobs[i].smact = 0.5f;
    }
    assert_int_equal(carma_sched_init(&f->s, f->jobs, f->gpus, NG, carma_policy_find("auto"), NULL),
                     0);
    assert_int_equal(f->s.nislands, islands ? 2u : 1u);
}

/* DESIGN.md 3: a job on several GPUs takes GPUs of one island when they serve it as well
 * as the best of the server; GPU 0 busy leaves 1, 2 and 3 idle: 1 and 2 by index, 2 and
 * 3 with islands. */
static void test_auto_multi_gpu_job_prefers_one_island(void **state)
{
    (void)state;
    for (int islands = 0; islands < 2; islands++) {
        struct fx f;
        fx_islands(&f, islands);
        uint16_t g0 = 0;
        carma_sched_adopt(&f.s, 0, &g0, 1, 0, 0);
        f.jobs[1].gpus = 2;
        carma_sched_submit(&f.s, 1, 0);
        assert_int_equal(fx_step(&f, 1), 1);
        assert_int_equal(f.out[0].job, 1);
        assert_int_equal(f.jobs[1].gpu[0], islands ? 2 : 1);
        assert_int_equal(f.jobs[1].gpu[1], islands ? 3 : 2);
        /* a 1-GPU job is placed as ever: the first idle GPU left */
        carma_sched_submit(&f.s, 2, 1);
        assert_int_equal(fx_step(&f, 2), 1);
        assert_int_equal(f.jobs[2].gpu[0], islands ? 1 : 3);
        carma_sched_free(&f.s);
    }
}

/* ... but never at the cost of its speed: with GPUs 0 and 2 busy, each island has one idle
 * GPU, and the job takes the two idle ones across the islands rather than share. */
static void test_auto_island_never_costs_a_job_speed(void **state)
{
    (void)state;
    struct fx f;
    fx_islands(&f, 1);
    uint16_t g0 = 0, g2 = 2;
    carma_sched_adopt(&f.s, 0, &g0, 1, 0, 0);
    carma_sched_adopt(&f.s, 1, &g2, 1, 0, 0);
    f.jobs[2].gpus = 2;
    carma_sched_submit(&f.s, 2, 0);
    assert_int_equal(fx_step(&f, 1), 1);
    assert_int_equal(f.jobs[2].gpu[0], 1);
    assert_int_equal(f.jobs[2].gpu[1], 3);
    /* a 2-GPU job that fits nowhere waits, islands or not */
    f.jobs[3].gpus = 2;
    f.jobs[3].bound_mib = 40000;
    carma_sched_submit(&f.s, 3, 1);
    assert_int_equal(fx_step(&f, 2), 0);
    carma_sched_free(&f.s);
}

/* The main queue's jobs from head to tail, checking the back links and the tail. */
static size_t queue_list(const struct carma_sched *s, uint32_t *out, size_t cap)
{
    size_t n = 0;
    uint32_t prev = CARMA_NONE;
    for (uint32_t ji = s->main.head; ji != CARMA_NONE; ji = s->jobs[ji].next) {
        assert_true(n < cap);
        assert_int_equal(s->jobs[ji].prev, prev);
        out[n++] = ji;
        prev = ji;
    }
    assert_int_equal(s->main.tail, prev);
    assert_int_equal(s->main.len, n);
    return n;
}

/* A scheduler of one GPU g with jobs[0..n) queued in order, key[j] of each drawn from
 * seed among `users` values (many ties). Returns the generator's state, to draw on. */
static uint64_t long_queue(struct carma_sched *s, struct carma_gpu *g, struct carma_job *jobs,
                           uint32_t n, double *key, uint64_t seed, unsigned users)
{
    carma_gpu_init(g, 40960, 30, CARMA_SHARING_MPS);
    for (uint32_t j = 0; j < n; j++)
        carma_job_init(&jobs[j], j + 1, 1, 0);
    assert_int_equal(carma_sched_init(s, jobs, g, 1, carma_policy_find("auto"), NULL), 0);
    uint64_t x = seed;
    for (uint32_t j = 0; j < n; j++) {
        carma_sched_submit(s, j, 0);
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        key[j] = (double)((x >> 33) % users);
    }
    return x;
}

/* carma_sched_order: the main queue sorted by key, ties in their order (a user's jobs as
 * submitted), links whole; the recovery queue untouched and still first; the head-only
 * policies then serve the new head. A long queue against a reference sort. */
static void test_order_by_key(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "exclusive", 1);
    static const double key[NJ] = {3, 1, 2, 1, 3, 0, 2, 1, 9, 9, 9, 9, 9, 9, 9, 9};
    carma_sched_order(&f.s, key); /* empty: nothing to do */
    for (uint32_t j = 0; j < 8; j++)
        carma_sched_submit(&f.s, j, j);
    carma_sched_submit_recovery(&f.s, 8, 8);
    carma_sched_order(&f.s, key);
    uint32_t got[NJ];
    static const uint32_t want[8] = {5, 1, 3, 7, 2, 6, 0, 4};
    assert_int_equal(queue_list(&f.s, got, NJ), 8);
    assert_memory_equal(got, want, sizeof want);
    assert_int_equal(f.s.recovery.head, 8);
    /* places as the next step reads them: the recovery queue first */
    assert_int_equal(carma_sched_position(&f.s, 8), 1);
    assert_int_equal(carma_sched_position(&f.s, 5), 2);
    assert_int_equal(carma_sched_position(&f.s, 7), 5);
    assert_int_equal(carma_sched_position(&f.s, 4), 9);
    assert_int_equal(carma_sched_position(&f.s, 9), 0); /* not queued */
    assert_int_equal(fx_step(&f, 10), 1); /* the recovery queue first */
    assert_int_equal(f.out[0].job, 8);
    carma_sched_finish(&f.s, 8, CARMA_OUTCOME_SUCCEEDED, 0, 11);
    assert_int_equal(fx_step(&f, 12), 1);
    assert_int_equal(f.out[0].job, 5);
    carma_sched_free(&f.s);

    enum { N = 1000 };
    static struct carma_job jobs[N];
    static double k2[N];
    static uint32_t order[N], ref[N];
    struct carma_gpu g;
    struct carma_sched s;
    long_queue(&s, &g, jobs, N, k2, 12345, 32);
    for (int round = 0; round < 2; round++) { /* sorted twice: the second changes nothing */
        carma_sched_order(&s, k2);
        size_t n = 0;
        for (uint32_t key_v = 0; key_v < 32; key_v++) /* ties in submission order */
            for (uint32_t j = 0; j < N; j++)
                if (k2[j] == key_v)
                    ref[n++] = j;
        assert_int_equal(n, N);
        assert_int_equal(queue_list(&s, order, N), N);
        assert_memory_equal(order, ref, sizeof ref);
    }
    carma_sched_free(&s);
}

/* carma_sched_order takes the runs already in order (its cost, measured by
 * bench/bench_order.c, follows the queue's disorder): a queue in order is left as it is,
 * not a byte of it written; one with jobs of any users appended since is sorted, stably.
 * NaN keys go last, in their order. */
static void test_order_takes_the_runs_in_order(void **state)
{
    (void)state;
    enum { N = 5000, U = 20, NEW = 64 };
    static struct carma_job jobs[N], copy[N];
    static double key[N];
    static uint32_t got[N];
    struct carma_gpu g;
    struct carma_sched s;
    uint64_t x = long_queue(&s, &g, jobs, N, key, 777, U);
    carma_sched_order(&s, key); /* in order from here */
    for (int r = 0; r < 3; r++) {
        memcpy(copy, jobs, sizeof jobs);
        struct carma_queue q = s.main;
        carma_sched_order(&s, key);
        assert_memory_equal(copy, jobs, sizeof jobs);
        assert_memory_equal(&q, &s.main, sizeof q);
        /* NEW jobs of any users submitted since the last step, at the tail */
        for (uint32_t j = N - NEW; j < N; j++)
            assert_int_equal(carma_sched_dequeue(&s, j), 0);
        for (uint32_t j = N - NEW; j < N; j++) {
            carma_sched_submit(&s, j, 0);
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            key[j] = (double)((x >> 33) % U);
        }
        carma_sched_order(&s, key);
        assert_int_equal(queue_list(&s, got, N), N);
        for (uint32_t k = 1; k < N; k++) /* by key (test_order_by_key: stably) */
            assert_true(key[got[k - 1]] < key[got[k]] || key[got[k - 1]] == key[got[k]]);
    }
    carma_sched_free(&s);

    /* NaN keys: after every number, in their order; the numbers sorted, stably */
    struct fx f;
    fx_init(&f, "exclusive", 1);
    static const double nk[NJ] = {NAN, 2, NAN, 1, 2, NAN, 0, 1};
    for (uint32_t j = 0; j < 8; j++)
        carma_sched_submit(&f.s, j, j);
    carma_sched_order(&f.s, nk);
    static const uint32_t want[8] = {6, 3, 7, 1, 4, 0, 2, 5};
    assert_int_equal(queue_list(&f.s, got, NJ), 8);
    assert_memory_equal(got, want, sizeof want);
    carma_sched_free(&f.s);
}

/* Observations of q at a sum of solo SMACT, n = 2 jobs (carmad's, in few lines). */
static void learn(struct carma_coloc_learnt *l, enum carma_sharing sh, float S, float q, int times)
{
    float busy = 2 * carma_coloc_busy(S / 2);
    float predicted = carma_coloc_rate(sh, 2, S, busy) * S;
    for (int k = 0; k < times; k++)
        assert_int_equal(carma_coloc_observe(l, sh, 2, S, busy, q * predicted), 0);
}

/* Under both auto's scan shortcut and a full scan, with the correction l: jobs 0..n-2
 * (solo SMACT sm[k], 4 GiB bounds) run on GPU 0 of two MPS GPUs, job n-1 arrives at t,
 * and it takes the idle GPU 1. */
static void learnt_takes_the_idle_gpu(const struct carma_coloc_learnt *l, const float *sm,
                                      uint32_t n, double t)
{
    for (int all = 0; all < 2; all++) {
        struct fx f;
        fx_init(&f, "auto", 2);
        f.s.p.scan_all = all;
        carma_sched_set_coloc(&f.s, l, 1);
        for (uint32_t j = 0; j < n; j++) {
            f.jobs[j].smact = sm[j];
            f.jobs[j].bound_mib = 4096;
        }
        uint16_t g0 = 0;
        for (uint32_t j = 0; j + 1 < n; j++)
            carma_sched_adopt(&f.s, j, &g0, 1, 0, 0);
        carma_sched_submit(&f.s, n - 1, t);
        assert_int_equal(fx_step(&f, t), 1);
        assert_int_equal(f.jobs[n - 1].gpu[0], 1);
        carma_sched_free(&f.s);
    }
}

/* What carmad learns from co-runs moves auto's choices (carma_sched_set_coloc): a heavy
 * pair that the model says gains 0.06 of a GPU waits; once co-runs at that sum of SMACT
 * measured 1.5 times the model's rate, the waiting job joins at the next step (its earlier
 * scan is not reused). A correction never lets a shared GPU outbid an idle one: two light
 * jobs under MPS measured twice the model's rate, and a third still takes the idle GPU. */
static void test_auto_learnt_coloc(void **state)
{
    (void)state;
    struct fx f;
    struct carma_coloc_learnt l;
    fx_init(&f, "auto", 1);
    f.gpus[0].sharing = CARMA_SHARING_TIMESLICE;
    carma_sched_gpu_changed(&f.s, 0);
    uint16_t g0 = 0;
    f.jobs[0].smact = f.jobs[1].smact = 0.83f;
    f.jobs[0].bound_mib = f.jobs[1].bound_mib = 4096;
    carma_sched_adopt(&f.s, 0, &g0, 1, 0, 0);
    carma_sched_submit(&f.s, 1, 1);
    assert_int_equal(fx_step(&f, 1), 0);
    assert_int_equal(fx_step(&f, 2), 0);
    memset(&l, 0, sizeof l);
    learn(&l, CARMA_SHARING_TIMESLICE, 1.66f, 1.5f, 20);
    carma_sched_set_coloc(&f.s, &l, 1);
    assert_int_equal(fx_step(&f, 3), 1);
    assert_int_equal(f.jobs[1].gpu[0], 0);
    /* and back: the model alone */
    carma_sched_set_coloc(&f.s, NULL, 0);
    assert_int_equal(f.s.ncoloc, 0);
    carma_sched_free(&f.s);

    memset(&l, 0, sizeof l);
    learn(&l, CARMA_SHARING_MPS, 0.2f, 2.0f, 50);
    assert_true(carma_coloc_factor(&l, CARMA_SHARING_MPS, 0.2f) > 1.8f);
    static const float light[] = {0.1f, 0.1f}; /* the shortcut skips GPU 0; a full scan judges it */
    learnt_takes_the_idle_gpu(&l, light, 2, 1);
}

/* One correction per GPU kind (carma_gpu.kind): what kind 1 learnt moves no choice while
 * only kind 0's table is given, and once given it moves the choice on the kind-1 GPU
 * only. Two time-sliced GPUs, kinds 0 and 1, each with a heavy job: a third heavy job
 * (gain 0.06 by the model) waits, and joins GPU 1 once kind 1 has measured 1.5 times the
 * model's rate there. */
static void test_auto_learnt_coloc_by_kind(void **state)
{
    (void)state;
    struct fx f;
    struct carma_coloc_learnt l[2];
    memset(l, 0, sizeof l);
    learn(&l[1], CARMA_SHARING_TIMESLICE, 1.66f, 1.5f, 20);
    fx_init(&f, "auto", 2);
    for (uint16_t g = 0; g < 2; g++) {
        f.gpus[g].sharing = CARMA_SHARING_TIMESLICE;
        f.gpus[g].kind = g;
        carma_sched_gpu_changed(&f.s, g);
        f.jobs[g].smact = 0.83f;
        f.jobs[g].bound_mib = 4096;
        carma_sched_adopt(&f.s, g, &g, 1, 0, 0);
    }
    f.jobs[2].smact = 0.83f;
    f.jobs[2].bound_mib = 4096;
    carma_sched_submit(&f.s, 2, 1);
    assert_int_equal(fx_step(&f, 1), 0);
    carma_sched_set_coloc(&f.s, l, 1); /* kind 0's only, which has nothing learnt */
    assert_int_equal(fx_step(&f, 2), 0);
    carma_sched_set_coloc(&f.s, l, 2);
    assert_int_equal(fx_step(&f, 3), 1);
    assert_int_equal(f.jobs[2].gpu[0], 1);
    /* the pair's throughput now, against which the next job's gain is counted, is kind
     * 1's too (the model alone has it 1.06, kind 1's correction 1.48) */
    const struct carma_sched_slot *sl = &f.s.slot[1];
    assert_int_equal(sl->njobs, 2);
    float rate = carma_coloc_rate(CARMA_SHARING_TIMESLICE, 2, sl->prof_smact, sl->prof_busy) *
                 carma_coloc_factor(&l[1], CARMA_SHARING_TIMESLICE, sl->prof_smact);
    assert_true(rate > 0.7f && rate < 1.0f);
    assert_float_equal(sl->tput, 2.0f * rate, 1e-5);
    carma_sched_free(&f.s);
}

/* A correction never lets a job's arrival speed up the jobs already there: under MPS two
 * light jobs (S = 0.25) measured at 0.8 of the model's rate and sets of S = 0.75 at 1.3
 * would otherwise predict the two at full speed once a third joins, a gain over a GPU's
 * worth, and the full scan would put the third beside them rather than on the idle GPU
 * the shortcut takes (the two must agree). */
static void test_auto_learnt_coloc_never_speeds_residents(void **state)
{
    (void)state;
    struct carma_coloc_learnt l;
    memset(&l, 0, sizeof l);
    learn(&l, CARMA_SHARING_MPS, 0.25f, 0.8f, 50);
    learn(&l, CARMA_SHARING_MPS, 0.75f, 1.3f, 50);
    assert_true(carma_coloc_factor(&l, CARMA_SHARING_MPS, 0.25f) < 0.85f);
    assert_true(carma_coloc_factor(&l, CARMA_SHARING_MPS, 0.75f) > 1.2f);
    static const float sm[] = {0.125f, 0.125f, 0.5f};
    learnt_takes_the_idle_gpu(&l, sm, 3, 100);
}

/* The same holds for backfill on a reserved GPU: the holder must still gain as auto_gain
 * reckons it. Time-sliced, sets of S near 0 learnt at half the model's rate and nothing
 * learnt above: two light jobs backfilled together (S 0.002) are predicted at 0.52, and
 * the holder (SMACT 0.3) joining would have them at full speed. Counting that as its gain
 * let the second in, and once the running job ended the holder could not join them
 * (auto_gain gives it 0.52, under min_gain 0.6): a reservation that kept it out. */
static void backfill_keeps_the_holders_gain(uint16_t kind)
{
    struct fx f;
    struct carma_coloc_learnt l[2];
    memset(l, 0, sizeof l);
    l[kind].weight[CARMA_SHARING_TIMESLICE][0] = CARMA_COLOC_MEMORY;
    l[kind].logq[CARMA_SHARING_TIMESLICE][0] = CARMA_COLOC_MEMORY * logf(CARMA_COLOC_QMIN);
    assert_true(carma_coloc_learnt_valid(&l[kind]));
    fx_init(&f, "auto", 1);
    f.s.p.min_gain = 0.6f;
    f.gpus[0].sharing = CARMA_SHARING_TIMESLICE;
    f.gpus[0].kind = kind;
    carma_sched_gpu_changed(&f.s, 0);
    carma_sched_set_coloc(&f.s, l, 2);
    f.jobs[0].bound_mib = 20000; /* running */
    f.jobs[0].smact = 0.5f;
    carma_sched_submit(&f.s, 0, 0);
    assert_int_equal(fx_step(&f, 0), 1);
    f.jobs[1].bound_mib = 35000; /* blocked: the holder */
    f.jobs[1].smact = 0.3f;
    carma_sched_submit(&f.s, 1, 1);
    for (uint32_t j = 2; j < 4; j++) {
        f.jobs[j].bound_mib = 1000;
        f.jobs[j].smact = 0.001f;
        carma_sched_submit(&f.s, j, 1);
    }
    assert_int_equal(fx_step(&f, 1), 1);
    assert_int_equal(f.jobs[2].state, CARMA_JOB_RUNNING);
    assert_int_equal(f.jobs[3].state, CARMA_JOB_QUEUED);
    assert_int_equal(carma_sched_finish(&f.s, 0, CARMA_OUTCOME_SUCCEEDED, 20000, 10), 0);
    assert_true(fx_step(&f, 10) >= 1);
    assert_int_equal(f.jobs[1].state, CARMA_JOB_RUNNING);
    carma_sched_free(&f.s);
}

/* ... on a GPU of either kind, the other kind's table (nothing learnt) beside it: the
 * backfill reckons with the GPU's own kind's, as auto_gain does. */
static void test_auto_learnt_coloc_backfill_keeps_the_holders_gain(void **state)
{
    (void)state;
    backfill_keeps_the_holders_gain(0);
    backfill_keeps_the_holders_gain(1);
}

/* The holder joins whatever was backfilled under its reservation once the jobs that ran
 * before it have gone, whichever of those backfilled jobs are left: each was let in on
 * that promise, judged with all those there then. Learnt corrections need not fall with
 * the load, so the holder's gain beside fewer of them can be under min_gain where it
 * passed beside all (MPS; learnt: S 0.25 and 0.75 at half the model's rate, 1.25 a fifth
 * above it). The holder (SMACT 0.5) passes beside jobs of SMACT 0 and 0.25 (S 0.75, their
 * pair predicted slow already: gain 0.42), but not beside the second alone (S 0.75 again,
 * from one job at full speed: gain -0.02); the first ending before the running job did
 * kept it out of its own reservation, there for as long as the second ran. */
static void test_auto_holder_joins_what_was_backfilled_for_it(void **state)
{
    (void)state;
    struct fx f;
    struct carma_coloc_learnt l;
    memset(&l, 0, sizeof l);
    const unsigned m = CARMA_SHARING_MPS;
    const float lq[6] = {0, -0.666f, 0, -0.666f, 0, 0.2f}; /* log q at knots 0 .. 1.25 */
    for (unsigned k = 0; k < 6; k++) {
        l.weight[m][k] = CARMA_COLOC_MEMORY;
        l.logq[m][k] = lq[k] * (CARMA_COLOC_MEMORY + CARMA_COLOC_PRIOR);
    }
    assert_true(carma_coloc_learnt_valid(&l));
    fx_init(&f, "auto", 1);
    carma_sched_set_coloc(&f.s, &l, 1);
    f.jobs[0].bound_mib = 20000; /* running before the reservation */
    f.jobs[0].smact = 1.0f;
    carma_sched_submit(&f.s, 0, 0);
    assert_int_equal(fx_step(&f, 0), 1);
    f.jobs[1].bound_mib = 22000; /* the holder */
    f.jobs[1].smact = 0.5f;
    carma_sched_submit(&f.s, 1, 1);
    const float sm[2] = {0.0f, 0.25f};
    for (uint32_t j = 2; j < 4; j++) {
        f.jobs[j].bound_mib = 2000;
        f.jobs[j].smact = sm[j - 2];
        carma_sched_submit(&f.s, j, 1);
    }
    assert_int_equal(fx_step(&f, 1), 2); /* both backfilled */
    assert_int_equal(f.s.holder, 1);
    assert_int_equal(carma_sched_finish(&f.s, 2, CARMA_OUTCOME_SUCCEEDED, 2000, 5), 0);
    assert_int_equal(fx_step(&f, 5), 0);
    assert_int_equal(carma_sched_finish(&f.s, 0, CARMA_OUTCOME_SUCCEEDED, 20000, 10), 0);
    assert_int_equal(fx_step(&f, 10), 1);
    assert_int_equal(f.out[0].job, 1);
    carma_sched_free(&f.s);
}

/* Of islands that serve a job as well, the one with the fewest GPUs free of carma jobs: islands
 * {0,1,2} and {3,4,5} with GPU 3 busy, a 2-GPU job takes 4 and 5 and leaves the first
 * island whole for the 3-GPU job after it (the lowest island would have split both). */
static void test_auto_island_best_fit(void **state)
{
    (void)state;
    enum { G = 6 };
    struct carma_gpu gpus[G];
    struct carma_job jobs[3];
    struct carma_placement out[3];
    struct carma_sched s;
    for (size_t i = 0; i < G; i++) {
        carma_gpu_init(&gpus[i], 40960, 30, CARMA_SHARING_MPS);
        gpus[i].island = (uint16_t)(i / 3);
    }
    for (uint32_t i = 0; i < 3; i++) {
        carma_job_init(&jobs[i], i + 1, (uint16_t)(i + 1), 0);
        jobs[i].bound_mib = 8192;
        jobs[i].smact = 0.9f; /* heavy: no pair gains enough to share */
    }
    assert_int_equal(carma_sched_init(&s, jobs, gpus, G, carma_policy_find("auto"), NULL), 0);
    uint16_t g3 = 3;
    carma_sched_adopt(&s, 0, &g3, 1, 0, 0);
    carma_sched_submit(&s, 1, 0);
    assert_int_equal(carma_sched_step(&s, 1, out, 3), 1);
    assert_int_equal(jobs[1].gpu[0], 4);
    assert_int_equal(jobs[1].gpu[1], 5);
    carma_sched_submit(&s, 2, 1);
    assert_int_equal(carma_sched_step(&s, 2, out, 3), 1);
    for (uint16_t k = 0; k < 3; k++)
        assert_int_equal(jobs[2].gpu[k], k);
    carma_sched_free(&s);
}

/* A blocked job on several GPUs holds back one island's GPUs (the island whose GPUs have the
 * most memory not committed, summed), which it will take together, not the two with the
 * most across the islands: islands {0,1} and {2,3}, memory left 20000 / 30000 | 30000 /
 * 25000, a 2-GPU job of 35000 MiB each reserves 2 and 3, not 1 and 2. */
static void test_auto_reserves_one_island(void **state)
{
    (void)state;
    static const uint64_t used[NG] = {20960, 10960, 10960, 15960};
    for (int islands = 0; islands < 2; islands++) {
        struct fx f;
        fx_islands(&f, islands);
        for (uint16_t g = 0; g < NG; g++) {
            f.jobs[g].bound_mib = used[g];
            carma_sched_adopt(&f.s, g, &g, 1, 0, 0);
            assert_int_equal(f.gpus[g].committed_mib, used[g]);
        }
        f.jobs[4].gpus = 2;
        f.jobs[4].bound_mib = 35000;
        carma_sched_submit(&f.s, 4, 0);
        assert_int_equal(fx_step(&f, 1), 0);
        assert_int_equal(f.s.holder, 4);
        int want[NG] = {0, !islands, 1, islands};
        for (size_t g = 0; g < NG; g++)
            assert_int_equal((f.s.slot[g].flags & CARMA_SLOT_RESERVED) != 0, want[g]);
        carma_sched_free(&f.s);
    }
}

/* A job on several GPUs that does not fit is judged again, with islands as without, only
 * on what changed since its last scan: a step with nothing changed judges no GPU for it
 * (looking at every GPU for every waiting job at every step made a 24k-job trace on 1024
 * GPUs in islands of 8 take 41 s where it took under 1 s without islands). */
static void test_auto_waiting_job_with_islands_is_not_rescanned(void **state)
{
    (void)state;
    for (int islands = 0; islands < 2; islands++) {
        struct fx f;
        fx_islands(&f, islands);
        uint16_t g0 = 0, g2 = 2;
        carma_sched_adopt(&f.s, 0, &g0, 1, 0, 0);
        carma_sched_adopt(&f.s, 1, &g2, 1, 0, 0);
        f.jobs[2].gpus = 3;
        f.jobs[2].bound_mib = 35000; /* only GPUs 1 and 3 have room: it waits */
        carma_sched_submit(&f.s, 2, 0);
        assert_int_equal(fx_step(&f, 1), 0);
        uint64_t judged = f.s.judged;
        assert_true(judged > 0);
        assert_int_equal(fx_step(&f, 2), 0);
        assert_int_equal(fx_step(&f, 3), 0);
        assert_int_equal(f.s.judged, judged);
        /* a GPU freed is looked at, and the job takes the GPUs with room */
        assert_int_equal(carma_sched_finish(&f.s, 0, CARMA_OUTCOME_SUCCEEDED, 0, 4), 0);
        assert_int_equal(fx_step(&f, 5), 1);
        assert_true(f.s.judged > judged);
        assert_int_equal(f.jobs[2].nplaced, 3);
        assert_int_equal(f.jobs[2].gpu[0], 0);
        assert_int_equal(f.jobs[2].gpu[1], 1);
        assert_int_equal(f.jobs[2].gpu[2], 3);
        carma_sched_free(&f.s);
    }
}

/* A job re-queued after it ran is judged afresh: the GPUs it could use at a scan before it
 * ran are no longer listed in j->gpu[] (its placement wrote its GPUs there), so that scan
 * cannot stand for it. R (4 GPUs) blocks at the head of the recovery queue with GPU 3 full;
 * J (2 GPUs) behind it could use GPU 2 only, then takes GPUs 0 and 1 when they free, fails
 * on a GPU error at once and, re-queued behind R, finds GPU 1 filled by another process:
 * GPUs 0 and 2 hold it, as scanning every GPU finds. */
static void test_auto_requeued_job_forgets_its_old_scan(void **state)
{
    (void)state;
    for (int all = 0; all < 2; all++) {
        struct fx f;
        memset(&f, 0, sizeof f);
        for (size_t i = 0; i < NG; i++)
            carma_gpu_init(&f.gpus[i], 40960, 30, CARMA_SHARING_MPS);
        for (uint32_t i = 0; i < NJ; i++) {
            carma_job_init(&f.jobs[i], i + 1, 1, 0);
            f.jobs[i].bound_mib = 30000;
            f.jobs[i].smact = 0.2f;
        }
        struct carma_sched_params p;
        carma_sched_params_default(&p);
        p.scan_all = all;
        assert_int_equal(carma_sched_init(&f.s, f.jobs, f.gpus, NG, carma_policy_find("auto"), &p),
                         0);
        /* GPUs 0, 1, 3 hold 30000 MiB each, GPU 2 a light job of 8000 */
        for (uint16_t g = 0; g < NG; g++) {
            if (g == 2)
                f.jobs[g].bound_mib = 8000;
            carma_sched_adopt(&f.s, g, &g, 1, 0, 0);
        }
        const uint32_t R = 5, J = 4;
        f.jobs[R].gpus = 4;
        f.jobs[R].bound_mib = 12000;
        static const uint16_t all4[4] = {0, 1, 2, 3};
        carma_sched_adopt(&f.s, R, all4, 4, 0, 0);
        assert_int_equal(carma_sched_finish(&f.s, R, CARMA_OUTCOME_GPU_ERROR, 0, 0), 1);
        f.jobs[J].gpus = 2;
        f.jobs[J].bound_mib = 12000;
        carma_sched_submit(&f.s, J, 0);
        assert_int_equal(fx_step(&f, 1), 0); /* R holds every GPU; J has GPU 2 only */
        assert_int_equal(f.s.holder, R);
        assert_int_equal(carma_sched_finish(&f.s, 0, CARMA_OUTCOME_SUCCEEDED, 0, 2), 0);
        assert_int_equal(carma_sched_finish(&f.s, 1, CARMA_OUTCOME_SUCCEEDED, 0, 2), 0);
        assert_int_equal(fx_step(&f, 3), 1);
        assert_int_equal(f.out[0].job, J);
        assert_int_equal(f.jobs[J].gpu[0], 0);
        assert_int_equal(f.jobs[J].gpu[1], 1);
        assert_int_equal(carma_sched_finish(&f.s, J, CARMA_OUTCOME_GPU_ERROR, 0, 4), 1);
        f.gpus[1].nforeign = 1;
        f.gpus[1].mem_used_mib = 40000;
        carma_sched_gpu_changed(&f.s, 1);
        assert_int_equal(fx_step(&f, 5), 1);
        assert_int_equal(f.out[0].job, J);
        assert_int_equal(f.jobs[J].gpu[0], 0);
        assert_int_equal(f.jobs[J].gpu[1], 2);
        carma_sched_free(&f.s);
    }
}

/* A blocked job holds back only GPUs that could ever hold it: two 80 GB GPUs with 35920
 * MiB left and two idle 40 GB ones, a job of 60000 MiB reserves an 80 GB GPU, not a
 * 40 GB one with more memory left that it can never use. */
static void test_auto_reserves_only_gpus_large_enough(void **state)
{
    (void)state;
    struct carma_gpu gpus[NG];
    struct carma_job jobs[3];
    struct carma_placement out[3];
    struct carma_sched s;
    for (size_t i = 0; i < NG; i++)
        carma_gpu_init(&gpus[i], i < 2 ? 81920 : 40960, 30, CARMA_SHARING_MPS);
    for (uint32_t i = 0; i < 3; i++) {
        carma_job_init(&jobs[i], i + 1, 1, 0);
        jobs[i].bound_mib = i < 2 ? 46000 : 60000;
        jobs[i].smact = 0.5f;
    }
    assert_int_equal(carma_sched_init(&s, jobs, gpus, NG, carma_policy_find("auto"), NULL), 0);
    for (uint16_t g = 0; g < 2; g++)
        carma_sched_adopt(&s, g, &g, 1, 0, 0);
    carma_sched_submit(&s, 2, 0);
    assert_int_equal(carma_sched_step(&s, 1, out, 3), 0);
    assert_int_equal(s.holder, 2);
    for (size_t g = 0; g < NG; g++)
        assert_int_equal((s.slot[g].flags & CARMA_SLOT_RESERVED) != 0, g == 0);
    carma_sched_free(&s);
}

static void test_recovery_first_and_idle_only(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "or-magm", 2);
    carma_sched_submit(&f.s, 0, 0);
    assert_int_equal(fx_step(&f, 0), 1); /* job 0 on GPU 0 */
    carma_sched_submit(&f.s, 1, 1);
    assert_int_equal(fx_step(&f, 1), 1); /* job 1 on GPU 1 (idle) */
    carma_sched_submit(&f.s, 2, 2);
    /* Job 0 dies of OOM after reaching 30000 MiB: back with priority. */
    assert_int_equal(carma_sched_finish(&f.s, 0, CARMA_OUTCOME_OOM, 30000, 40), 1);
    assert_int_equal(f.jobs[0].state, CARMA_JOB_QUEUED);
    assert_int_equal(f.jobs[0].queue, CARMA_QUEUE_RECOVERY);
    /* Alone on its GPU, it needed more than the GPU (it may only run alone now). */
    assert_int_equal(f.jobs[0].bound_mib, 40961);
    /* GPU 1 is busy: the recovery head may not collocate, and job 2 must wait behind. */
    f.gpus[1].mem_used_mib = 1000;
    assert_int_equal(fx_step(&f, 41), 1);
    assert_int_equal(f.out[0].job, 0); /* GPU 0 is idle again: recovery job goes first */
    assert_int_equal(f.jobs[0].gpu[0], 0);
    assert_int_equal(f.jobs[0].attempts, 2);
    carma_sched_free(&f.s);
}

static void test_max_attempts_and_fault(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "auto", 1);
    f.jobs[0].bound_mib = 1000;
    f.jobs[0].max_attempts = 2;
    carma_sched_submit(&f.s, 0, 0);
    assert_int_equal(fx_step(&f, 0), 1);
    /* Beside another process, with a peak no higher than the bound: nothing learnt, so
     * only a GPU of its own. */
    f.gpus[0].nforeign = 1;
    assert_int_equal(carma_sched_finish(&f.s, 0, CARMA_OUTCOME_OOM, 900, 1), 1);
    assert_int_equal(f.jobs[0].exclusive, 1);
    assert_int_equal(f.jobs[0].bound_mib, 1000);
    f.gpus[0].nforeign = 0;
    carma_sched_gpu_changed(&f.s, 0);
    assert_int_equal(fx_step(&f, 1), 1);
    assert_int_equal(carma_sched_finish(&f.s, 0, CARMA_OUTCOME_OOM, 1200, 2), 0);
    assert_int_equal(f.jobs[0].state, CARMA_JOB_OOM);
    assert_int_equal(f.gpus[0].njobs, 0);
    assert_int_equal(f.gpus[0].committed_mib, 0);
    /* An MPS server fault re-queues without judging the job. */
    f.jobs[1].bound_mib = 1000;
    carma_sched_submit(&f.s, 1, 3);
    assert_int_equal(fx_step(&f, 3), 1);
    assert_int_equal(carma_sched_finish(&f.s, 1, CARMA_OUTCOME_FAULT, 0, 4), 1);
    assert_int_equal(f.jobs[1].bound_mib, 1000);
    assert_int_equal(f.jobs[1].exclusive, 0);
    assert_int_equal(carma_sched_dequeue(&f.s, 1), 0);
    assert_int_equal(carma_sched_dequeue(&f.s, 1), -2 /* -ENOENT */);
    /* A GPU error (an Xid not of the job's doing) re-queues it first, bound unchanged,
     * while attempts remain; then it failed. */
    f.jobs[2].bound_mib = 1000;
    f.jobs[2].max_attempts = 2;
    carma_sched_submit(&f.s, 2, 5);
    assert_int_equal(fx_step(&f, 5), 1);
    assert_int_equal(carma_sched_finish(&f.s, 2, CARMA_OUTCOME_GPU_ERROR, 800, 6), 1);
    assert_int_equal(f.jobs[2].queue, CARMA_QUEUE_RECOVERY);
    assert_int_equal(f.jobs[2].bound_mib, 1000);
    assert_int_equal(f.jobs[2].exclusive, 0);
    assert_int_equal(fx_step(&f, 6), 1);
    assert_int_equal(f.jobs[2].attempts, 2);
    assert_int_equal(carma_sched_finish(&f.s, 2, CARMA_OUTCOME_GPU_ERROR, 800, 7), 0);
    assert_int_equal(f.jobs[2].state, CARMA_JOB_FAILED);
    assert_int_equal(f.gpus[0].njobs, 0);
    carma_sched_free(&f.s);
}

static void test_exclusive_never_collocates(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "exclusive", 1);
    carma_sched_submit(&f.s, 0, 0);
    carma_sched_submit(&f.s, 1, 0);
    assert_int_equal(fx_step(&f, 0), 1);
    assert_int_equal(fx_step(&f, 100), 0);
    assert_int_equal(carma_sched_finish(&f.s, 0, CARMA_OUTCOME_SUCCEEDED, 0, 200), 0);
    assert_int_equal(fx_step(&f, 200), 1);
    carma_sched_free(&f.s);
}

static void test_multi_gpu_job(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "auto", 4);
    f.jobs[0].gpus = 3;
    f.jobs[0].bound_mib = 30000;
    f.jobs[0].smact = 0.9f;
    carma_sched_submit(&f.s, 0, 0);
    assert_int_equal(fx_step(&f, 0), 1);
    assert_int_equal(f.jobs[0].nplaced, 3);
    int seen[4] = {0};
    for (int k = 0; k < 3; k++)
        seen[f.jobs[0].gpu[k]]++;
    for (int g = 0; g < 4; g++)
        assert_true(seen[g] <= 1);
    assert_int_equal(carma_sched_finish(&f.s, 0, CARMA_OUTCOME_SUCCEEDED, 30000, 10), 0);
    for (int g = 0; g < 4; g++)
        assert_int_equal(f.gpus[g].njobs, 0);
    carma_sched_free(&f.s);
}

/* auto's shortcuts (GPUs without carma jobs and time-sliced ones first, the rest only
 * when those did not settle it; a scan of a shape that found no room answering for the
 * next job of that shape until a GPU changes) make the choices of scanning for every job
 * and offering every GPU in index order. Two schedulers, one with scan_all, driven alike
 * through random submissions of a few kinds of job, steps, ends and monitor changes on
 * 150 GPUs (three words of the bit set, the last one partial) of mixed sizes and
 * sharing, place the same jobs on the same GPUs at every step. */
#define DG 150
#define DJ 1500

struct diff_side {
    struct carma_job jobs[DJ];
    struct carma_gpu gpus[DG];
    struct carma_sched s;
    struct carma_placement out[DJ];
};

static uint64_t diff_rng(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Steps two schedulers run in lockstep at `now` and asserts they place the same jobs on the
 * same GPUs, in the same order; returns how many. */
static size_t step_both(struct carma_sched *s0, struct carma_sched *s1, double now,
                        struct carma_placement *o0, struct carma_placement *o1, size_t cap)
{
    size_t n0 = carma_sched_step(s0, now, o0, cap);
    size_t n1 = carma_sched_step(s1, now, o1, cap);
    assert_int_equal(n0, n1);
    for (size_t i = 0; i < n0; i++) {
        const struct carma_job *a = &s0->jobs[o0[i].job], *b = &s1->jobs[o1[i].job];
        assert_int_equal(o0[i].job, o1[i].job);
        assert_int_equal(a->nplaced, b->nplaced);
        for (uint16_t g = 0; g < a->nplaced; g++)
            assert_int_equal(a->gpu[g], b->gpu[g]);
    }
    return n0;
}

static void diff_run(int islands)
{
    static struct diff_side side[2];
    static const uint64_t sizes[3] = {40960, 81920, 32768};
    struct carma_sched_params p;
    carma_sched_params_default(&p);
    for (int k = 0; k < 2; k++) {
        struct diff_side *d = &side[k];
        memset(d, 0, sizeof *d);
        for (size_t g = 0; g < DG; g++) {
            carma_gpu_init(&d->gpus[g], sizes[g % 3], 30,
                           g % 7 < 2 ? CARMA_SHARING_TIMESLICE : CARMA_SHARING_MPS);
            d->gpus[g].island = (uint16_t)(islands ? g / 8 : 0);
        }
        p.scan_all = k;
        assert_int_equal(
            carma_sched_init(&d->s, d->jobs, d->gpus, DG, carma_policy_find("auto"), &p), 0);
    }
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    size_t njobs = 0, placed_total = 0, collocated = 0;
    for (int op = 0; op < 12000; op++) {
        uint64_t r = diff_rng(&rng);
        double now = op;
        switch (r % 5) {
        case 0:
        case 1: /* a job: 1-4 GPUs, a bound, a profile */
            if (njobs < DJ) {
                for (int k = 0; k < 2; k++) {
                    struct carma_job *j = &side[k].jobs[njobs];
                    uint16_t ng = (uint16_t)((r >> 8) % 4 ? 1 : 1 + (r >> 12) % 4);
                    carma_job_init(j, (uint32_t)njobs + 1, ng, now);
                    /* a few kinds of job, so that scans of one shape repeat; two
                     * fit an idle GPU only by the margin a job alone may use */
                    static const uint64_t bounds[8] = {12000, 17600, 23200, 28800,
                                                       34400, 40000, 40704, 32512};
                    j->bound_mib = bounds[(r >> 16) % 8];
                    j->smact = (float)((r >> 32) % 3) / 3.0f;
                    carma_sched_submit(&side[k].s, (uint32_t)njobs, now);
                }
                njobs++;
            }
            break;
        case 2: { /* a step: the same placements */
            size_t n0 = step_both(&side[0].s, &side[1].s, now, side[0].out, side[1].out, DJ);
            for (size_t i = 0; i < n0; i++) {
                const struct carma_job *a = &side[0].jobs[side[0].out[i].job];
                for (uint16_t g = 0; g < a->nplaced; g++)
                    collocated += side[0].gpus[a->gpu[g]].njobs > 1;
            }
            placed_total += n0;
            break;
        }
        case 3: { /* a running job ends */
            if (!njobs)
                break;
            uint32_t i = (uint32_t)((r >> 8) % njobs);
            if (side[0].jobs[i].state == CARMA_JOB_RUNNING)
                for (int k = 0; k < 2; k++) /* some fail on a GPU error: re-queued */
                    (void)carma_sched_finish(
                        &side[k].s, i,
                        (r >> 40) % 4 ? CARMA_OUTCOME_SUCCEEDED : CARMA_OUTCOME_GPU_ERROR, 0, now);
            break;
        }
        default: { /* the monitor: a foreign process comes or goes, the driver's own
                    * memory moves (idle GPUs then differ in what a job may take, more
                    * ways than auto has buckets), or a GPU is lost */
            size_t g = (r >> 8) % DG;
            for (int k = 0; k < 2; k++) {
                struct carma_gpu *gv = &side[k].gpus[g];
                if ((r >> 20) % 40 == 0)
                    gv->drained = 1;
                gv->nforeign = (r >> 24) % 3 == 0;
                gv->carma_used_mib = gv->committed_mib;
                gv->mem_used_mib = gv->carma_used_mib + gv->nforeign * ((r >> 28) % 8000) +
                                   (r >> 44) % 24 * 16;
                carma_sched_gpu_changed(&side[k].s, (uint32_t)g);
            }
            break;
        }
        }
    }
    /* the run went through the cases that matter: many placements, some collocated */
    assert_true(placed_total > 500);
    assert_true(collocated > 50);
    for (int k = 0; k < 2; k++)
        carma_sched_free(&side[k].s);
}

static void test_auto_shortcut_makes_the_full_scans_choices(void **state)
{
    (void)state;
    diff_run(0);
}

/* A job that fits among GPUs that run jobs (none idle) is judged, after a scan of every
 * GPU for the first job of its shape, only on the GPUs changed since, those reserved, and
 * the best ones that scan found (struct carma_sched_top): on 4096 GPUs that each run a
 * job, the next job of the shape judges a handful of GPUs where it judged all 4096 (a
 * backlog of 98 000 jobs on 65 535 GPUs took 92 s, mostly judging every GPU again for
 * each job). Two schedulers, one with scan_all (which also reserves by looking at every
 * GPU, not through rtree), driven alike through random submissions of a few shapes (1 to
 * 3 GPUs), steps, ends and monitor changes, place the same jobs on the same GPUs and
 * hold the same GPUs for the blocked job at every step. */
#define TG 4096
#define TJ (TG + 3000)

struct top_side {
    struct carma_job jobs[TJ];
    struct carma_gpu gpus[TG];
    struct carma_sched s;
    struct carma_placement out[TJ];
};

static void test_auto_top_list_answers_the_next_job_of_a_shape(void **state)
{
    (void)state;
    static struct top_side side[2];
    struct carma_sched_params p;
    carma_sched_params_default(&p);
    for (int k = 0; k < 2; k++) {
        struct top_side *d = &side[k];
        memset(d, 0, sizeof *d);
        for (size_t g = 0; g < TG; g++)
            carma_gpu_init(&d->gpus[g], 40960, 30, CARMA_SHARING_MPS);
        p.scan_all = k;
        assert_int_equal(
            carma_sched_init(&d->s, d->jobs, d->gpus, TG, carma_policy_find("auto"), &p), 0);
        for (uint32_t g = 0; g < TG; g++) { /* every GPU runs a job: gains differ */
            struct carma_job *j = &d->jobs[g];
            carma_job_init(j, g + 1, 1, 0);
            j->bound_mib = 6000 + (g * 7919u % 13) * 1000;
            j->smact = 0.05f + (float)(g * 104729u % 17) * 0.02f;
            uint16_t g16 = (uint16_t)g;
            carma_sched_adopt(&d->s, g, &g16, 1, 0, 0);
        }
    }
    size_t njobs = TG;
    uint64_t judged_second = 0;
    for (int n = 0; n < 2; n++) { /* two jobs of one shape, one after the other */
        uint64_t before = side[0].s.judged;
        for (int k = 0; k < 2; k++) {
            struct carma_job *j = &side[k].jobs[njobs];
            carma_job_init(j, njobs + 1, 1, 1);
            j->bound_mib = 9000;
            j->smact = 0.2f;
            carma_sched_submit(&side[k].s, (uint32_t)njobs, 1);
            assert_int_equal(carma_sched_step(&side[k].s, 1, side[k].out, TJ), 1);
        }
        assert_int_equal(side[0].jobs[njobs].gpu[0], side[1].jobs[njobs].gpu[0]);
        judged_second = side[0].s.judged - before;
        if (n == 0)
            assert_true(judged_second >= TG); /* the first: every GPU */
        njobs++;
    }
    assert_true(judged_second < 16);
    uint64_t rng = 0x2545f4914f6cdd1dull;
    size_t placed_total = 0;
    for (int op = 0; op < 6000; op++) {
        uint64_t r = diff_rng(&rng);
        double now = 2 + op;
        switch (r % 6) {
        case 0:
        case 1:
        case 2: /* a job of one of a few shapes */
            if (njobs < TJ) {
                static const uint64_t bounds[4] = {4000, 9000, 15000, 34000};
                for (int k = 0; k < 2; k++) {
                    struct carma_job *j = &side[k].jobs[njobs];
                    carma_job_init(j, njobs + 1, (uint16_t)((r >> 8) % 5 ? 1 : 1 + (r >> 12) % 3),
                                   now);
                    j->bound_mib = bounds[(r >> 16) % 4];
                    j->smact = (float)((r >> 32) % 3) * 0.15f + 0.1f;
                    carma_sched_submit(&side[k].s, (uint32_t)njobs, now);
                }
                njobs++;
            }
            break;
        case 3: { /* a step: the same placements */
            size_t n0 = step_both(&side[0].s, &side[1].s, now, side[0].out, side[1].out, TJ);
            /* and the same GPUs held for the blocked job */
            assert_int_equal(side[0].s.nreserved, side[1].s.nreserved);
            for (uint16_t k = 0; k < side[0].s.nreserved; k++)
                assert_int_equal(side[0].s.reserved[k], side[1].s.reserved[k]);
            placed_total += n0;
            break;
        }
        case 4: { /* a running job ends */
            uint32_t i = (uint32_t)((r >> 8) % njobs);
            if (side[0].jobs[i].state == CARMA_JOB_RUNNING)
                for (int k = 0; k < 2; k++)
                    (void)carma_sched_finish(&side[k].s, i, CARMA_OUTCOME_SUCCEEDED, 0, now);
            break;
        }
        default: { /* the monitor: a foreign process comes or goes */
            size_t g = (r >> 8) % TG;
            for (int k = 0; k < 2; k++) {
                struct carma_gpu *gv = &side[k].gpus[g];
                gv->nforeign = (r >> 24) % 3 == 0;
                gv->carma_used_mib = gv->committed_mib;
                gv->mem_used_mib = gv->carma_used_mib + gv->nforeign * ((r >> 28) % 8000);
                carma_sched_gpu_changed(&side[k].s, (uint32_t)g);
            }
            break;
        }
        }
    }
    assert_true(placed_total > 1000);
    /* the lists answered most scans */
    assert_true(side[0].s.judged * 4 < side[1].s.judged);
    for (int k = 0; k < 2; k++)
        carma_sched_free(&side[k].s);
}

/* A reservation is made without logging its GPUs: a list of the best GPUs for a shape
 * (struct carma_sched_top) made before it must not offer a GPU now held for the blocked
 * job as it was. GPUs 100, 200 and 300 run a small job each, the others a larger one. H1,
 * which fits nowhere, holds GPU 100 (the most memory, the lowest index); X1 behind it takes
 * GPU 200, and its scan of every GPU keeps a list with GPU 300 first. H1 is cancelled, GPU
 * 100 takes a job, and H2 holds GPU 300: X2, of X1's shape, must not take it (H2 would no
 * longer fit beside it) but the best GPU not held. */
static void test_auto_top_list_rejudges_reserved_gpus(void **state)
{
    (void)state;
    static struct top_side d;
    memset(&d, 0, sizeof d);
    for (size_t g = 0; g < TG; g++)
        carma_gpu_init(&d.gpus[g], 40960, 30, CARMA_SHARING_MPS);
    assert_int_equal(carma_sched_init(&d.s, d.jobs, d.gpus, TG, carma_policy_find("auto"), NULL),
                     0);
    for (uint32_t g = 0; g < TG; g++) {
        struct carma_job *j = &d.jobs[g];
        carma_job_init(j, g + 1, 1, 0);
        int small = g == 100 || g == 200 || g == 300;
        j->bound_mib = small ? 2000 : 10000;
        j->smact = small ? 0.05f : 0.95f;
        uint16_t g16 = (uint16_t)g;
        carma_sched_adopt(&d.s, g, &g16, 1, 0, 0);
    }
    uint32_t h1 = TG, x1 = TG + 1, extra = TG + 2, h2 = TG + 3, x2 = TG + 4;
    for (uint32_t i = TG; i <= x2; i++) {
        carma_job_init(&d.jobs[i], i + 1, 1, 1);
        d.jobs[i].bound_mib = i == h1 || i == h2 ? 39000 : i == extra ? 6000 : 3000;
        d.jobs[i].smact = i == h1 || i == h2 ? 0.3f : 0.1f;
    }
    carma_sched_submit(&d.s, h1, 1);
    carma_sched_submit(&d.s, x1, 1);
    assert_int_equal(carma_sched_step(&d.s, 1, d.out, TJ), 1);
    assert_int_equal(d.out[0].job, x1);
    assert_int_equal(d.s.holder, h1);
    assert_int_equal(d.s.reserved[0], 100);
    assert_int_equal(d.jobs[x1].gpu[0], 200);
    assert_int_equal(carma_sched_dequeue(&d.s, h1), 0);
    uint16_t g100 = 100;
    carma_sched_adopt(&d.s, extra, &g100, 1, 2, 0);
    carma_sched_submit(&d.s, h2, 3);
    carma_sched_submit(&d.s, x2, 3);
    uint64_t judged = d.s.judged;
    assert_int_equal(carma_sched_step(&d.s, 3, d.out, TJ), 1);
    assert_true(d.s.judged - judged < 64); /* answered from the list */
    assert_int_equal(d.s.holder, h2);
    assert_int_equal(d.s.reserved[0], 300);
    assert_int_equal(d.out[0].job, x2);
    assert_int_not_equal(d.jobs[x2].gpu[0], 300);
    carma_sched_free(&d.s);
}

/* The same with islands of 8 GPUs (the last one of 6): a job on several GPUs that fits
 * takes them by island either way, and one that does not is judged by the same shortcuts. */
static void test_auto_shortcut_makes_the_full_scans_choices_with_islands(void **state)
{
    (void)state;
    diff_run(1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idle_preamble_index_order),
        cmocka_unit_test(test_adopt_without_its_gpus),
        cmocka_unit_test(test_reference_reads_only_full_windows),
        cmocka_unit_test(test_grace_window),
        cmocka_unit_test(test_reference_policies_set_no_mps_limits),
        cmocka_unit_test(test_grace_ends_when_the_job_dies),
        cmocka_unit_test(test_grace_runs_from_the_process_seen),
        cmocka_unit_test(test_job_beyond_the_gpus_in_service_blocks_no_one),
        cmocka_unit_test(test_next_timer_is_the_grace_end),
        cmocka_unit_test(test_rerun_skips_gpus_it_filled_alone),
        cmocka_unit_test(test_auto_moves_a_job_that_crashed_alone_to_a_larger_gpu),
        cmocka_unit_test(test_uncapped_rerun_gets_no_co_runner),
        cmocka_unit_test(test_kth_largest_gpu_in_service),
        cmocka_unit_test(test_auto_runs_a_loose_bound_alone_on_the_largest_gpus_in_service),
        cmocka_unit_test(test_memory_gate_margins),
        cmocka_unit_test(test_or_policies_need_5120_free),
        cmocka_unit_test(test_risk_gate),
        cmocka_unit_test(test_orders),
        cmocka_unit_test(test_rr_no_gate_round_robin),
        cmocka_unit_test(test_order_ties_keep_index_order),
        cmocka_unit_test(test_risk_gate_at_its_thresholds),
        cmocka_unit_test(test_gate_and_lug_read_the_window_not_the_last_sample),
        cmocka_unit_test(test_or_policies_ignore_the_requirement),
        cmocka_unit_test(test_recovery_head_blocks_a_collocatable_main_head),
        cmocka_unit_test(test_rr_pointer_ignores_idle_placements),
        cmocka_unit_test(test_multi_gpu_job_collocates_in_policy_order),
        cmocka_unit_test(test_head_of_line_blocking_vs_auto_backfill),
        cmocka_unit_test(test_auto_backfills_a_reserved_gpu_without_delaying_its_holder),
        cmocka_unit_test(test_auto_backfill_books_survive_a_new_profile),
        cmocka_unit_test(test_auto_backfill_leaves_the_holder_its_gain),
        cmocka_unit_test(test_auto_counts_a_job_past_its_hold),
        cmocka_unit_test(test_auto_runs_alone_beside_foreign_processes),
        cmocka_unit_test(test_run_alone_after_an_mps_fault),
        cmocka_unit_test(test_auto_whole_gpu_beside_reserved_memory),
        cmocka_unit_test(test_auto_backfill_refuses_lone_jobs_and_forgets_a_cancelled_holder),
        cmocka_unit_test(test_auto_reservation_leaves_a_drained_gpu),
        cmocka_unit_test(test_auto_reserves_no_gpu_foreign_processes_fill),
        cmocka_unit_test(test_auto_step_cut_short_keeps_the_reservation),
        cmocka_unit_test(test_auto_reserves_bounds_during_ramp),
        cmocka_unit_test(test_auto_bound_past_every_gpu_runs_alone),
        cmocka_unit_test(test_auto_refuses_collocation_that_lowers_throughput),
        cmocka_unit_test(test_auto_never_collocates_an_unprofiled_job),
        cmocka_unit_test(test_auto_multi_gpu_job_prefers_one_island),
        cmocka_unit_test(test_auto_island_never_costs_a_job_speed),
        cmocka_unit_test(test_auto_island_best_fit),
        cmocka_unit_test(test_auto_learnt_coloc),
        cmocka_unit_test(test_auto_learnt_coloc_by_kind),
        cmocka_unit_test(test_order_by_key),
        cmocka_unit_test(test_order_takes_the_runs_in_order),
        cmocka_unit_test(test_auto_learnt_coloc_never_speeds_residents),
        cmocka_unit_test(test_auto_learnt_coloc_backfill_keeps_the_holders_gain),
        cmocka_unit_test(test_auto_holder_joins_what_was_backfilled_for_it),
        cmocka_unit_test(test_auto_reserves_one_island),
        cmocka_unit_test(test_auto_reserves_only_gpus_large_enough),
        cmocka_unit_test(test_auto_waiting_job_with_islands_is_not_rescanned),
        cmocka_unit_test(test_auto_requeued_job_forgets_its_old_scan),
        cmocka_unit_test(test_recovery_first_and_idle_only),
        cmocka_unit_test(test_max_attempts_and_fault),
        cmocka_unit_test(test_exclusive_never_collocates),
        cmocka_unit_test(test_multi_gpu_job),
        cmocka_unit_test(test_auto_shortcut_makes_the_full_scans_choices),
        cmocka_unit_test(test_auto_top_list_answers_the_next_job_of_a_shape),
        cmocka_unit_test(test_auto_top_list_rejudges_reserved_gpus),
        cmocka_unit_test(test_auto_shortcut_makes_the_full_scans_choices_with_islands),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
