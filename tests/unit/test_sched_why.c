/* carma_sched_why: why a queued job waits, under auto and CARMA's reference policies, on
 * hand-made states; and, on random states, that `placing` is said of the job the next step
 * starts and of no other. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
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
    struct carma_sched_why why;
};

static void fx_init_p(struct fx *f, const char *policy, size_t ngpus,
                      const struct carma_sched_params *p)
{
    memset(f, 0, sizeof *f);
    /* the monitor has run a window's worth: the reference policies that read the windows
     * wait for full ones (test_reference_window_filling) */
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
    const struct carma_policy *pol = carma_policy_find(policy);
    assert_non_null(pol);
    assert_int_equal(carma_sched_init(&f->s, f->jobs, f->gpus, ngpus, pol, p), 0);
}

static void fx_init(struct fx *f, const char *policy, size_t ngpus)
{
    fx_init_p(f, policy, ngpus, NULL);
}

/* GPU g runs a foreign process using `used` MiB with steady activity. */
static void fx_busy(struct fx *f, size_t g, uint64_t used, float smact, float smocc, float drama)
{
    f->gpus[g].nforeign = 1;
    f->gpus[g].mem_used_mib = used;
    for (int i = 0; i < 30; i++) {
        carma_window_push(&f->gpus[g].smact, smact);
        carma_window_push(&f->gpus[g].smocc, smocc);
        carma_window_push(&f->gpus[g].drama, drama);
    }
    carma_sched_gpu_changed(&f->s, (uint32_t)g);
}

static size_t fx_step(struct fx *f, double now)
{
    return carma_sched_step(&f->s, now, f->out, NJ);
}

/* Job j's reason at now: its code's name; fails when its text lacks `has`. */
static const char *fx_why(struct fx *f, uint32_t j, double now, const char *has)
{
    assert_int_equal(carma_sched_why(&f->s, j, now, &f->why), 0);
    if (has && !strstr(f->why.text, has)) {
        print_error("job %u: \"%s\" lacks \"%s\"\n", j, f->why.text, has);
        fail();
    }
    return carma_why_name((enum carma_why)f->why.code);
}

static void test_names(void **state)
{
    (void)state;
    const char *want[] = {"placing", "beyond_service", "behind",   "waiting",   "grace",
                          "gate",    "interference",   "reserved", "resources", "exclusive"};
    assert_int_equal(sizeof want / sizeof *want, CARMA_WHY_COUNT);
    for (int w = 0; w < CARMA_WHY_COUNT; w++)
        assert_string_equal(carma_why_name((enum carma_why)w), want[w]);
    assert_string_equal(carma_why_name(CARMA_WHY_COUNT), "waiting");
}

/* A job that is not queued has no reason. */
static void test_not_queued(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "auto", 1);
    assert_int_equal(carma_sched_why(&f.s, 0, 0, &f.why), -ENOENT);
    carma_sched_submit(&f.s, 0, 0);
    assert_int_equal(fx_step(&f, 0), 1);
    assert_int_equal(carma_sched_why(&f.s, 0, 0, &f.why), -ENOENT);
    carma_sched_free(&f.s);
}

static void test_placing_then_placed(void **state)
{
    (void)state;
    const char *pols[] = {"auto", "oracle-ff", "or-magm", "exclusive"};
    for (size_t p = 0; p < 4; p++) {
        struct fx f;
        fx_init(&f, pols[p], 2);
        f.jobs[0].mem_mib = f.jobs[0].bound_mib = 1000;
        carma_sched_submit(&f.s, 0, 0);
        assert_string_equal(fx_why(&f, 0, 0, "the next step starts it"), "placing");
        assert_int_equal(fx_step(&f, 0), 1);
        carma_sched_free(&f.s);
    }
}

static void test_beyond_service(void **state)
{
    (void)state;
    const char *pols[] = {"auto", "oracle-ff", "or-magm"};
    for (size_t p = 0; p < 3; p++) {
        struct fx f;
        fx_init(&f, pols[p], 2);
        f.gpus[1].drained = 1;
        carma_sched_gpu_changed(&f.s, 1);
        f.jobs[0].gpus = 2;
        carma_sched_submit(&f.s, 0, 0);
        assert_string_equal(fx_why(&f, 0, 0, "asks for 2 GPUs: 1 of the 2 GPUs are in service"),
                            "beyond_service");
        carma_sched_free(&f.s);
    }
}

/* CARMA places the head only: the job behind it names it, under two reference policies;
 * the recovery queue's head goes first. */
static void test_reference_behind_the_head(void **state)
{
    (void)state;
    const char *pols[] = {"oracle-ff", "or-magm"};
    for (size_t p = 0; p < 2; p++) {
        struct fx f;
        fx_init(&f, pols[p], 1);
        fx_busy(&f, 0, 39000, 0.1f, 0.1f, 0.1f);
        f.jobs[0].mem_mib = 20000;
        f.jobs[1].mem_mib = 100;
        carma_sched_submit(&f.s, 0, 0);
        carma_sched_submit(&f.s, 1, 0);
        assert_int_equal(fx_step(&f, 0), 0);
        assert_string_equal(fx_why(&f, 1, 0, "job 1 at the head of the queue goes first"),
                            "behind");
        assert_non_null(strstr(f.why.text, pols[p]));
        assert_string_equal(fx_why(&f, 0, 0, "1448 MiB free"), "resources");
        carma_sched_submit_recovery(&f.s, 2, 0);
        assert_string_equal(fx_why(&f, 0, 0, "job 3 in the recovery queue goes first"), "behind");
        carma_sched_free(&f.s);
    }
}

/* The memory gate: free (last sample less 512) against the requirement plus 2048, or
 * 5120 for or-*. */
static void test_reference_resources(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "oracle-ff", 2);
    fx_busy(&f, 0, 36000, 0.1f, 0.1f, 0.1f); /* 4448 free */
    fx_busy(&f, 1, 30000, 0.1f, 0.1f, 0.1f); /* 10448 free */
    f.jobs[0].mem_mib = 8400;                /* needs 10448 */
    carma_sched_submit(&f.s, 0, 0);
    assert_string_equal(fx_why(&f, 0, 0, NULL), "placing");
    f.jobs[0].mem_mib = 8401;
    assert_string_equal(
        fx_why(&f, 0, 0,
               "needs 1 GPU with 10449 MiB free (8401 + 2048), 0 usable now: GPU 0: 4448 MiB "
               "free; GPU 1: 10448 MiB free"),
        "resources");
    assert_int_equal(fx_step(&f, 0), 0);
    f.jobs[0].mem_mib = 8400;
    assert_int_equal(fx_step(&f, 0), 1);
    carma_sched_free(&f.s);

    fx_init(&f, "or-magm", 1);
    fx_busy(&f, 0, 35400, 0.1f, 0.1f, 0.1f); /* 5048 free: under 5120 */
    carma_sched_submit(&f.s, 0, 0);
    assert_string_equal(fx_why(&f, 0, 0, "with 5120 MiB free, 0 usable now: GPU 0: 5048 MiB free"),
                        "resources");
    carma_sched_free(&f.s);
}

/* A reference policy that reads the windows waits for a full one, and says how full:
 * CARMA's analyze_Gmetrics waits for a full window. */
static void test_reference_window_filling(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "oracle-lug", 1);
    carma_window_clear(&f.gpus[0].smact);
    f.jobs[0].mem_mib = f.jobs[1].mem_mib = 1000;
    carma_sched_submit(&f.s, 0, 0);
    carma_sched_submit(&f.s, 1, 0);
    assert_int_equal(fx_step(&f, 0), 1);
    for (int k = 0; k < 12; k++)
        carma_window_push(&f.gpus[0].smact, 0.2f);
    assert_string_equal(fx_why(&f, 1, 40, "GPU 0: its activity window holds 12 of 30 samples"),
                        "grace");
    assert_int_equal(fx_step(&f, 40), 0);
    for (int k = 0; k < 18; k++)
        carma_window_push(&f.gpus[0].smact, 0.2f);
    assert_string_equal(fx_why(&f, 1, 41, NULL), "placing");
    assert_int_equal(fx_step(&f, 41), 1);
    carma_sched_free(&f.s);
}

/* CARMA's grace: a GPU takes no new job for 30 s after a launch; the text counts down. */
static void test_reference_grace(void **state)
{
    (void)state;
    const char *pols[] = {"oracle-ff", "or-rr"};
    for (size_t p = 0; p < 2; p++) {
        struct fx f;
        fx_init(&f, pols[p], 1);
        f.jobs[0].mem_mib = f.jobs[1].mem_mib = 1000;
        carma_sched_submit(&f.s, 0, 0);
        carma_sched_submit(&f.s, 1, 0);
        assert_int_equal(fx_step(&f, 0), 1);
        f.gpus[0].mem_used_mib = 1000;
        carma_sched_gpu_changed(&f.s, 0);
        assert_string_equal(
            fx_why(&f, 1, 1, "GPU 0: in its 30 s grace after job 1 started (29 s left)"), "grace");
        assert_string_equal(fx_why(&f, 1, 29.5, "(1 s left)"), "grace");
        assert_int_equal(fx_step(&f, 29.5), 0);
        /* CARMA's `now - seen > 30`: at 30 s, its last instant */
        assert_string_equal(fx_why(&f, 1, 30, "(0 s left)"), "grace");
        assert_int_equal(fx_step(&f, 30), 0);
        assert_string_equal(fx_why(&f, 1, 30.5, NULL), "placing");
        assert_int_equal(fx_step(&f, 31), 1);
        carma_sched_free(&f.s);
    }
}

/* The decisive reason is the obstacle that must clear first for enough GPUs: a GPU in
 * its grace that otherwise fits decides a 1-GPU job; a 2-GPU job also needs the GPU short
 * of memory. A GPU both in grace and short of memory ranks as short of memory. */
static void test_reference_decisive_obstacle(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "oracle-ff", 3);
    f.jobs[0].mem_mib = 1000;
    carma_sched_submit(&f.s, 0, 0);
    assert_int_equal(fx_step(&f, 0), 1); /* GPU 0, in grace from 0 */
    f.gpus[0].mem_used_mib = 1000;
    carma_sched_gpu_changed(&f.s, 0);
    fx_busy(&f, 1, 39000, 0.1f, 0.1f, 0.1f); /* short of memory */
    fx_busy(&f, 2, 39000, 0.1f, 0.1f, 0.1f);
    f.jobs[1].mem_mib = 1000;
    carma_sched_submit(&f.s, 1, 1);
    assert_string_equal(fx_why(&f, 1, 1, ", 0 usable now: GPU 0: in its 30 s grace"), "grace");
    carma_sched_free(&f.s);

    fx_init(&f, "oracle-ff", 3);
    f.jobs[0].mem_mib = 1000;
    carma_sched_submit(&f.s, 0, 0);
    assert_int_equal(fx_step(&f, 0), 1);
    f.gpus[0].mem_used_mib = 1000;
    carma_sched_gpu_changed(&f.s, 0);
    fx_busy(&f, 1, 39000, 0.1f, 0.1f, 0.1f);
    f.jobs[1].mem_mib = 1000;
    f.jobs[1].gpus = 2; /* GPU 2 idle: it and GPU 0 once its grace ends */
    carma_sched_submit(&f.s, 1, 1);
    assert_string_equal(fx_why(&f, 1, 1,
                               "needs 2 GPUs with 3048 MiB free (1000 + 2048), 1 usable "
                               "now: GPU 0: in its 30 s grace"),
                        "grace");
    fx_busy(&f, 2, 39000, 0.1f, 0.1f, 0.1f); /* GPU 2 short too: grace is not enough */
    assert_string_equal(fx_why(&f, 1, 1,
                               "needs 2 GPUs with 3048 MiB free (1000 + 2048), 0 usable "
                               "now: GPU 1: 1448 MiB free; GPU 2: 1448 MiB free; GPU 0: "
                               "in its 30 s grace"),
                        "resources");
    /* GPU 0 short of memory too: it ranks by that */
    f.gpus[0].mem_used_mib = 39000;
    carma_sched_gpu_changed(&f.s, 0);
    f.jobs[1].gpus = 1;
    assert_string_equal(
        fx_why(&f, 1, 1, "GPU 0: in its 30 s grace after job 1 started (29 s left), 1448 MiB free"),
        "resources");
    carma_sched_free(&f.s);
}

/* CARMA's interference gate: SMACT >= 0.80 with SMOCC >= 0.45 or DRAMA >= 0.40. */
static void test_reference_gate(void **state)
{
    (void)state;
    const char *pols[] = {"oracle-ff", "or-magm"};
    for (size_t p = 0; p < 2; p++) {
        struct fx f;
        fx_init(&f, pols[p], 1);
        fx_busy(&f, 0, 1000, 0.9f, 0.5f, 0.1f);
        f.jobs[0].mem_mib = 1000;
        carma_sched_submit(&f.s, 0, 0);
        assert_string_equal(fx_why(&f, 0, 0, "GPU 0: SMACT 0.90 >= 0.80 with SMOCC 0.50 >= 0.45"),
                            "gate");
        assert_int_equal(fx_step(&f, 0), 0);
        carma_sched_free(&f.s);
        fx_init(&f, pols[p], 1);
        fx_busy(&f, 0, 1000, 0.9f, 0.1f, 0.1f); /* SMOCC and DRAMA low: passes */
        carma_sched_submit(&f.s, 0, 0);
        assert_string_equal(fx_why(&f, 0, 0, NULL), "placing");
        assert_int_equal(fx_step(&f, 0), 1);
        carma_sched_free(&f.s);
    }
}

/* Idle GPUs only: the exclusive policy, the recovery queue, and a job marked exclusive
 * after an OOM. */
static void test_reference_exclusive(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "exclusive", 2);
    f.jobs[0].mem_mib = f.jobs[1].mem_mib = f.jobs[2].mem_mib = 1000;
    carma_sched_submit(&f.s, 0, 0);
    carma_sched_submit(&f.s, 1, 0);
    carma_sched_submit(&f.s, 2, 0);
    assert_int_equal(fx_step(&f, 0), 1);
    assert_int_equal(fx_step(&f, 1), 1);
    assert_string_equal(fx_why(&f, 2, 2,
                               "must run alone (policy exclusive gives each job idle GPUs): "
                               "needs 1 idle GPU, 0 usable now: GPU 0: 1 job; GPU 1: 1 job"),
                        "exclusive");
    carma_sched_free(&f.s);

    fx_init(&f, "oracle-ff", 1);
    f.jobs[0].mem_mib = 1000;
    carma_sched_submit(&f.s, 0, 0);
    assert_int_equal(fx_step(&f, 0), 1);
    f.jobs[1].mem_mib = 1000;
    carma_sched_submit_recovery(&f.s, 1, 100); /* grace over, memory plenty: only idle */
    assert_string_equal(fx_why(&f, 1, 100, "a job in the recovery queue goes on idle GPUs only"),
                        "exclusive");
    assert_int_equal(fx_step(&f, 100), 0);
    f.jobs[2].mem_mib = 1000;
    f.jobs[2].exclusive = 1;
    carma_sched_submit(&f.s, 2, 100);
    assert_int_equal(carma_sched_dequeue(&f.s, 1), 0);
    assert_string_equal(fx_why(&f, 2, 100, "after an OOM it goes on idle GPUs only"), "exclusive");
    assert_int_equal(fx_step(&f, 100), 0);
    carma_sched_free(&f.s);
}

/* A job that crashed alone skips GPUs no larger than its peak while larger ones exist. */
static void test_reference_gpu_too_small_for_its_peak(void **state)
{
    (void)state;
    struct fx f;
    memset(&f, 0, sizeof f);
    carma_gpu_init(&f.gpus[0], 40960, 30, CARMA_SHARING_MPS);
    carma_gpu_init(&f.gpus[1], 81920, 30, CARMA_SHARING_MPS);
    for (uint32_t i = 0; i < NJ; i++)
        carma_job_init(&f.jobs[i], i + 1, 1, 0);
    assert_int_equal(
        carma_sched_init(&f.s, f.jobs, f.gpus, 2, carma_policy_find("oracle-ff"), NULL), 0);
    f.jobs[0].mem_mib = 1000;
    carma_sched_submit(&f.s, 0, 0);
    assert_int_equal(fx_step(&f, 0), 1);
    assert_int_equal(f.jobs[0].gpu[0], 0);
    f.jobs[1].mem_mib = 1000;
    carma_sched_submit(&f.s, 1, 0);
    assert_int_equal(fx_step(&f, 0), 1); /* GPU 1 now */
    f.jobs[2].peak_mib = 40960;          /* it crashed alone on a 40 GiB GPU */
    f.jobs[2].mem_mib = 40960;
    carma_sched_submit_recovery(&f.s, 2, 0);
    assert_int_equal(carma_sched_finish(&f.s, 0, CARMA_OUTCOME_SUCCEEDED, 0, 1), 0);
    /* GPU 0 is idle, but no larger than its peak; GPU 1 holds a job */
    assert_string_equal(
        fx_why(&f, 2, 1, "GPU 1: 1 job; GPU 0: 40960 MiB, no more than its peak 40960 MiB"),
        "exclusive");
    assert_int_equal(fx_step(&f, 1), 0);
    carma_sched_free(&f.s);
}

/* auto: a job without a solo profile runs alone and waits for a GPU without a carma job;
 * a profiled one waits for memory. */
static void test_auto_exclusive_and_resources(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "auto", 2);
    for (uint32_t j = 0; j < 2; j++) {
        f.jobs[j].bound_mib = 20000;
        f.jobs[j].smact = 0.3f;
        carma_sched_submit(&f.s, j, 0);
    }
    assert_int_equal(fx_step(&f, 0), 2);
    f.jobs[2].bound_mib = 1000; /* no profile */
    carma_sched_submit(&f.s, 2, 1);
    assert_string_equal(fx_why(&f, 2, 1,
                               "must run alone (no solo profile yet): needs 1 GPU without a carma "
                               "job, 1000 MiB to give, 0 usable now: GPU 0: 1 job; GPU 1: 1 job"),
                        "exclusive");
    assert_int_equal(fx_step(&f, 1), 0);
    assert_int_equal(carma_sched_dequeue(&f.s, 2), 0);
    f.jobs[3].bound_mib = 20449; /* 40960 - 20000 - 512 = 20448 to give */
    f.jobs[3].smact = 0.3f;
    carma_sched_submit(&f.s, 3, 1);
    assert_string_equal(fx_why(&f, 3, 1,
                               "needs 1 GPU with 20449 MiB to give, 0 usable now: GPU 0: 20448 "
                               "MiB to give; GPU 1: 20448 MiB to give"),
                        "resources");
    assert_int_equal(fx_step(&f, 1), 0);
    assert_int_equal(carma_sched_dequeue(&f.s, 3), 0);
    f.jobs[4].bound_mib = 20448;
    f.jobs[4].smact = 0.3f;
    carma_sched_submit(&f.s, 4, 1);
    assert_string_equal(fx_why(&f, 4, 1, NULL), "placing");
    assert_int_equal(fx_step(&f, 1), 1);
    carma_sched_free(&f.s);
}

/* auto: a GPU running a job without a profile takes no one; nor one at max_jobs_per_gpu. */
static void test_auto_gpu_taken(void **state)
{
    (void)state;
    struct fx f;
    struct carma_sched_params p;
    carma_sched_params_default(&p);
    p.max_jobs_per_gpu = 1;
    fx_init_p(&f, "auto", 2, &p);
    f.jobs[0].bound_mib = 1000; /* no profile: alone on GPU 0 */
    carma_sched_submit(&f.s, 0, 0);
    f.jobs[1].bound_mib = 1000;
    f.jobs[1].smact = 0.1f; /* GPU 1 */
    carma_sched_submit(&f.s, 1, 0);
    assert_int_equal(fx_step(&f, 0), 2);
    f.jobs[2].bound_mib = 1000;
    f.jobs[2].smact = 0.1f;
    carma_sched_submit(&f.s, 2, 0);
    assert_string_equal(fx_why(&f, 2, 0,
                               "GPU 1: 1 jobs, the most a GPU takes; GPU 0: runs a job that must "
                               "run alone (no solo profile yet)"),
                        "resources");
    assert_int_equal(fx_step(&f, 0), 0);
    carma_sched_free(&f.s);
}

/* auto: a GPU running a job uncapped takes no one, and the why says what made it so: an
 * OOM, or a fault under MPS (carma_sched_run_alone), not an OOM alone. */
static void test_auto_gpu_taken_by_an_mps_fault_rerun(void **state)
{
    (void)state;
    struct fx f;
    struct carma_sched_params p;
    carma_sched_params_default(&p);
    p.mps_cap = 1;
    fx_init_p(&f, "auto", 1, &p);
    f.jobs[0].bound_mib = 1000;
    f.jobs[0].smact = 0.1f;
    carma_sched_submit(&f.s, 0, 0);
    assert_int_equal(fx_step(&f, 0), 1);
    assert_int_equal(carma_sched_finish(&f.s, 0, CARMA_OUTCOME_GPU_ERROR, 0, 1), 1);
    assert_int_equal(carma_sched_run_alone(&f.s, 0, CARMA_ALONE_MPS_FAULT), 0);
    assert_int_equal(fx_step(&f, 1), 1); /* alone, uncapped */
    assert_int_equal(carma_sched_mps_cap_mib(&f.s, &f.jobs[0]), 0);
    f.jobs[1].bound_mib = 1000;
    f.jobs[1].smact = 0.1f;
    carma_sched_submit(&f.s, 1, 1);
    assert_string_equal(fx_why(&f, 1, 1,
                               "GPU 0: runs a job that must run alone (uncapped after an OOM or "
                               "an MPS fault)"),
                        "resources");
    assert_int_equal(fx_step(&f, 1), 0);
    carma_sched_free(&f.s);
}

/* auto: collocation that would not raise the GPU's throughput by min_gain. */
static void test_auto_interference(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, "auto", 1);
    f.gpus[0].sharing = CARMA_SHARING_TIMESLICE;
    carma_sched_gpu_changed(&f.s, 0);
    for (uint32_t j = 0; j < 2; j++) {
        f.jobs[j].bound_mib = 1000;
        f.jobs[j].smact = 1.0f; /* busy 1: time-slicing two gains nothing */
        carma_sched_submit(&f.s, j, 0);
    }
    assert_int_equal(fx_step(&f, 0), 1);
    assert_string_equal(fx_why(&f, 1, 1,
                               "GPU 0: its throughput would rise by 0.00 GPUs for this "
                               "job, under 0.25"),
                        "interference");
    assert_int_equal(fx_step(&f, 1), 0);
    carma_sched_free(&f.s);
}

/* ... the rise said with the GPU's kind's learnt correction (carma_sched_set_coloc), not
 * another kind's: two jobs of busy 1 on a time-sliced GPU of kind 1, where co-runs at a
 * SMACT sum of 2 measured 1.2 times the model's rate, and kind 0 has nothing learnt. */
static void test_auto_interference_by_kind(void **state)
{
    (void)state;
    struct fx f;
    struct carma_coloc_learnt l[2];
    memset(l, 0, sizeof l);
    l[1].weight[CARMA_SHARING_TIMESLICE][8] = CARMA_COLOC_MEMORY;
    l[1].logq[CARMA_SHARING_TIMESLICE][8] = CARMA_COLOC_MEMORY * logf(1.2f);
    float factor = carma_coloc_factor(&l[1], CARMA_SHARING_TIMESLICE, 2.0f);
    assert_true(factor > 1.15f && factor < 1.2f);
    fx_init(&f, "auto", 1);
    f.gpus[0].sharing = CARMA_SHARING_TIMESLICE;
    f.gpus[0].kind = 1;
    carma_sched_gpu_changed(&f.s, 0);
    carma_sched_set_coloc(&f.s, l, 2);
    for (uint32_t j = 0; j < 2; j++) {
        f.jobs[j].bound_mib = 1000;
        f.jobs[j].smact = 1.0f;
        carma_sched_submit(&f.s, j, 0);
    }
    assert_int_equal(fx_step(&f, 0), 1);
    char want[128]; /* the pair at 0.5 each by the model, times the factor; one job alone 1 */
    snprintf(want, sizeof want, "GPU 0: its throughput would rise by %.2f GPUs for this job",
             (double)(2.0f * 0.5f * factor - 1.0f));
    assert_string_equal(fx_why(&f, 1, 1, want), "interference");
    assert_int_equal(fx_step(&f, 1), 0);
    carma_sched_free(&f.s);
}

/* auto: the first job that cannot start holds GPUs; a job behind it names the holder; one
 * further back than backfill_depth is not looked at; a job ahead that can start now is
 * placed first. */
static void test_auto_reserved_behind_waiting(void **state)
{
    (void)state;
    struct fx f;
    struct carma_sched_params p;
    carma_sched_params_default(&p);
    p.backfill_depth = 2;
    fx_init_p(&f, "auto", 2, &p);
    f.jobs[10].bound_mib = 30000;
    f.jobs[10].smact = 0.1f;
    f.jobs[11].bound_mib = 20000;
    f.jobs[11].smact = 0.1f;
    carma_sched_submit(&f.s, 10, 0);
    carma_sched_submit(&f.s, 11, 0);
    assert_int_equal(fx_step(&f, 0), 2); /* GPU 0: 30000, GPU 1: 20000 */
    f.jobs[0].bound_mib = 25000;         /* the holder: GPU 1 held for it */
    f.jobs[0].smact = 0.1f;
    carma_sched_submit(&f.s, 0, 1);
    f.jobs[1].bound_mib = 16000; /* GPU 0 short; GPU 1 held (15448 left beside the holder) */
    f.jobs[1].smact = 0.1f;
    carma_sched_submit(&f.s, 1, 1);
    f.jobs[2].bound_mib = 16000;
    f.jobs[2].smact = 0.1f;
    carma_sched_submit(&f.s, 2, 1);
    f.jobs[3].bound_mib = 100;
    f.jobs[3].smact = 0.1f;
    carma_sched_submit(&f.s, 3, 1);
    assert_int_equal(fx_step(&f, 1), 0);
    assert_string_equal(fx_why(&f, 0, 1, "GPU 0: 10448 MiB to give; GPU 1: 20448 MiB to give"),
                        "resources");
    assert_string_equal(fx_why(&f, 1, 1, "GPU 1: held for job 1; GPU 0: 10448 MiB to give"),
                        "reserved");
    assert_string_equal(fx_why(&f, 2, 1, NULL), "reserved");
    /* job 4 would fit, but it is the third behind the holder */
    assert_string_equal(fx_why(&f, 3, 1, "job 1 cannot start, and auto looks at 2 jobs behind it"),
                        "behind");
    assert_int_equal(fx_step(&f, 1), 0);
    /* GPU 0 empties: job 1 fits, so the jobs behind it wait for the step that places it */
    assert_int_equal(carma_sched_finish(&f.s, 10, CARMA_OUTCOME_SUCCEEDED, 0, 2), 0);
    assert_string_equal(fx_why(&f, 0, 2, NULL), "placing");
    assert_string_equal(fx_why(&f, 1, 2, "job 1 ahead of it can start now"), "waiting");
    assert_int_equal(fx_step(&f, 2), 3);
    carma_sched_free(&f.s);
}

static uint32_t rnd(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*x >> 33);
}

/* On random states, under every policy: the next step places exactly the jobs said to be
 * `placing`, but for jobs `waiting` on a job ahead (which it may or may not place after);
 * a job said to be behind, beyond service or short of anything is not placed. */
static void test_random_states_agree_with_the_step(void **state)
{
    (void)state;
    size_t npol;
    const struct carma_policy *pol = carma_policy_all(&npol);
    uint64_t x = 42;
    unsigned placing = 0, refused = 0, checked = 0, seen[CARMA_WHY_COUNT] = {0};
    for (int round = 0; round < 3000; round++) {
        const struct carma_policy *p = &pol[rnd(&x) % npol];
        struct fx f;
        memset(&f, 0, sizeof f);
        size_t ng = 1 + rnd(&x) % NG;
        for (size_t g = 0; g < ng; g++) {
            carma_gpu_init(&f.gpus[g], rnd(&x) % 3 ? 40960 : 81920, 30,
                           rnd(&x) % 2 ? CARMA_SHARING_MPS : CARMA_SHARING_TIMESLICE);
            /* mostly full windows, some still filling, of any activity */
            unsigned nw = rnd(&x) % 4 ? 30 : (unsigned)(rnd(&x) % 30);
            for (unsigned k = 0; k < nw; k++) {
                carma_window_push(&f.gpus[g].smact, (float)(rnd(&x) % 101) / 100.0f);
                carma_window_push(&f.gpus[g].smocc, (float)(rnd(&x) % 101) / 100.0f);
                carma_window_push(&f.gpus[g].drama, (float)(rnd(&x) % 101) / 100.0f);
            }
        }
        for (uint32_t i = 0; i < NJ; i++) {
            struct carma_job *j = &f.jobs[i];
            carma_job_init(j, i + 1, (uint16_t)(rnd(&x) % 5 ? 1 : 2), 0);
            j->bound_mib = rnd(&x) % 6 ? 500 + rnd(&x) % 45000 : 0;
            j->mem_mib = rnd(&x) % 4 ? j->bound_mib : 0;
            j->smact = rnd(&x) % 3 ? (float)(rnd(&x) % 100) / 100.0f : -1.0f;
            j->exclusive = rnd(&x) % 10 == 0;
            j->peak_mib = rnd(&x) % 8 == 0 ? 40960 : 0;
        }
        struct carma_sched_params prm;
        carma_sched_params_default(&prm);
        prm.backfill_depth = 1 + rnd(&x) % 4;
        prm.max_jobs_per_gpu = 1 + rnd(&x) % 3;
        prm.mps_cap = rnd(&x) % 2;
        assert_int_equal(carma_sched_init(&f.s, f.jobs, f.gpus, ng, p, &prm), 0);
        /* some running jobs, launched at various times */
        uint32_t nj = 0;
        double now = 0;
        for (; nj < 6; nj++) {
            carma_sched_submit(&f.s, nj, now);
            fx_step(&f, now);
            now += rnd(&x) % 20;
        }
        for (size_t g = 0; g < ng; g++) {
            if (rnd(&x) % 3 == 0)
                fx_busy(&f, g, rnd(&x) % 40000, (float)(rnd(&x) % 100) / 100.0f,
                        (float)(rnd(&x) % 100) / 100.0f, (float)(rnd(&x) % 100) / 100.0f);
            else
                f.gpus[g].mem_used_mib = f.gpus[g].committed_mib / 2;
            f.gpus[g].drained = rnd(&x) % 8 == 0;
            carma_sched_gpu_changed(&f.s, (uint32_t)g);
        }
        /* some end (without a step: the state moved since) */
        for (uint32_t i = 0; i < nj; i++)
            if (f.jobs[i].state == CARMA_JOB_RUNNING && rnd(&x) % 3 == 0)
                carma_sched_finish(&f.s, i,
                                   rnd(&x) % 2 ? CARMA_OUTCOME_OOM : CARMA_OUTCOME_SUCCEEDED,
                                   rnd(&x) % 2 ? 30000 : 0, now);
        for (; nj < NJ; nj++) {
            if (rnd(&x) % 4 == 0)
                carma_sched_submit_recovery(&f.s, nj, now);
            else
                carma_sched_submit(&f.s, nj, now);
        }
        now += rnd(&x) % 40;
        if (rnd(&x) % 2)
            fx_step(&f, now); /* the state the last step left, or a moved one */
        uint8_t code[NJ];
        uint8_t queued[NJ];
        for (uint32_t i = 0; i < NJ; i++) {
            queued[i] = f.jobs[i].state == CARMA_JOB_QUEUED;
            code[i] = 0xff;
            if (!queued[i]) {
                assert_int_equal(carma_sched_why(&f.s, i, now, &f.why), -ENOENT);
                continue;
            }
            assert_int_equal(carma_sched_why(&f.s, i, now, &f.why), 0);
            assert_true(f.why.text[0] != '\0');
            assert_true(strlen(f.why.text) < CARMA_WHY_TEXT);
            code[i] = f.why.code;
            seen[code[i]]++;
        }
        size_t n = fx_step(&f, now);
        uint8_t placed[NJ] = {0};
        for (size_t k = 0; k < n; k++)
            placed[f.out[k].job] = 1;
        for (uint32_t i = 0; i < NJ; i++) {
            if (!queued[i] || code[i] == CARMA_WHY_WAITING)
                continue;
            checked++;
            if (placed[i] != (code[i] == CARMA_WHY_PLACING)) {
                print_error("round %d, policy %s, job %u: said %s, %s\n", round, p->name, i,
                            carma_why_name((enum carma_why)code[i]),
                            placed[i] ? "placed" : "not placed");
                carma_sched_why(&f.s, i, now, &f.why);
                fail();
            }
            placing += placed[i];
            refused += !placed[i];
        }
        carma_sched_free(&f.s);
    }
    printf("random states: %u verdicts checked, %u placing, %u refused\n", checked, placing,
           refused);
    for (int w = 0; w < CARMA_WHY_COUNT; w++)
        printf("  %-14s %u\n", carma_why_name((enum carma_why)w), seen[w]);
    /* the rounds saw both verdicts, many times */
    assert_true(placing > 300 && refused > 5000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_not_queued),
        cmocka_unit_test(test_placing_then_placed),
        cmocka_unit_test(test_beyond_service),
        cmocka_unit_test(test_reference_behind_the_head),
        cmocka_unit_test(test_reference_resources),
        cmocka_unit_test(test_reference_window_filling),
        cmocka_unit_test(test_reference_grace),
        cmocka_unit_test(test_reference_decisive_obstacle),
        cmocka_unit_test(test_reference_gate),
        cmocka_unit_test(test_reference_exclusive),
        cmocka_unit_test(test_reference_gpu_too_small_for_its_peak),
        cmocka_unit_test(test_auto_exclusive_and_resources),
        cmocka_unit_test(test_auto_gpu_taken),
        cmocka_unit_test(test_auto_gpu_taken_by_an_mps_fault_rerun),
        cmocka_unit_test(test_auto_interference),
        cmocka_unit_test(test_auto_interference_by_kind),
        cmocka_unit_test(test_auto_reserved_behind_waiting),
        cmocka_unit_test(test_random_states_agree_with_the_step),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
