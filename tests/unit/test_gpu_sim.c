/* The simulated GPU backend: facts from the kind table, memory from attached real
 * processes, dead pids dropped, activity and power by the documented rule, and an
 * energy counter that is the exact integral of power under a test clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu/backend.h"

#define MiB (1ull << 20)

static double clock_read(void *ctx)
{
    return *(double *)ctx;
}

/* A child that exists until we kill and reap it. */
static pid_t child_start(void)
{
    pid_t p = fork();
    if (p == 0) {
        pause();
        _exit(0);
    }
    assert_true(p > 0);
    return p;
}

static void child_end(pid_t p)
{
    kill(p, SIGKILL);
    waitpid(p, NULL, 0);
}

static void test_open_and_info(void **state)
{
    (void)state;
    struct carma_gpu_backend b;
    struct carma_err err = {{0}};
    assert_int_equal(carma_gpu_open_sim(&b, "2xa100-40gb,v100-32gb", &err), 0);
    assert_string_equal(b.ops->name, "sim");
    unsigned n = 0;
    assert_int_equal(b.ops->count(&b, &n), 0);
    assert_int_equal(n, 3);
    struct carma_gpu_info in;
    assert_int_equal(b.ops->info(&b, 0, &in), 0);
    assert_string_equal(in.name, "NVIDIA A100-SXM4-40GB");
    assert_string_equal(in.uuid, "GPU-SIM-0000-0000-0000-000000000000");
    assert_int_equal(in.mem_total_bytes, 40960 * MiB);
    assert_true(in.power_limit_w == 400);
    assert_int_equal(in.mig_mode, 0);
    assert_int_equal(b.ops->info(&b, 2, &in), 0);
    assert_string_equal(in.name, "Tesla V100-SXM2-32GB");
    assert_string_equal(in.uuid, "GPU-SIM-0000-0000-0000-000000000002");
    assert_int_equal(b.ops->info(&b, 3, &in), -EINVAL);
    char d[128];
    b.ops->describe(&b, d, sizeof d);
    assert_non_null(strstr(d, "3 simulated GPUs"));
    b.ops->close(&b);
    assert_int_equal(carma_gpu_open_sim(&b, "1xa100-40gb", &err), 0);
    b.ops->describe(&b, d, sizeof d);
    assert_non_null(strstr(d, "(1 simulated GPU;"));
    b.ops->close(&b);
}

static void test_bad_specs(void **state)
{
    (void)state;
    struct carma_gpu_backend b;
    struct carma_err err = {{0}};
    assert_int_equal(carma_gpu_open_sim(&b, "4xb200", &err), -EINVAL);
    assert_non_null(strstr(err.msg, "b200"));
    assert_int_equal(carma_gpu_open_sim(&b, "", &err), -EINVAL);
    assert_int_equal(carma_gpu_open_sim(&b, "300xa100-40gb", &err), -EINVAL);
}

static void test_idle_sample(void **state)
{
    (void)state;
    struct carma_gpu_backend b;
    struct carma_err err;
    assert_int_equal(carma_gpu_open_sim(&b, "1xa100-40gb", &err), 0);
    double t = 100;
    assert_int_equal(carma_gpu_sim_set_clock(&b, clock_read, &t), 0);
    struct carma_gpu_sample s;
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    assert_int_equal(s.mem_used_bytes, 0);
    assert_int_equal(s.mem_free_bytes, 40960 * MiB);
    assert_true(s.smact == 0 && s.smocc == 0 && s.drama == 0 && s.util_gpu == 0);
    assert_true(s.power_w == 55);
    assert_true(s.energy_j == 0);
    assert_int_equal(s.lost, 0);
    struct carma_gpu_proc p[4];
    size_t n = 4;
    assert_int_equal(b.ops->processes(&b, 0, p, &n), 0);
    assert_int_equal(n, 0);
    b.ops->close(&b);
}

/* Hand-computed: A100-40GB idle 55 W, static 45 W, max 400 W.
 * t 0..10 idle: 550 J. t 10..20 one process (smact 0.3): 55+45+300*0.3 = 190 W: 1900 J.
 * t 20..30 two (smact 0.6): 55+45+180 = 280 W: 2800 J. t 30..40 one again: 1900 J. */
static void test_energy_is_exact_integral(void **state)
{
    (void)state;
    struct carma_gpu_backend b;
    struct carma_err err;
    assert_int_equal(carma_gpu_open_sim(&b, "a100-40gb", &err), 0);
    double t = 0;
    assert_int_equal(carma_gpu_sim_set_clock(&b, clock_read, &t), 0);
    pid_t c1 = child_start(), c2 = child_start();
    struct carma_gpu_sample s;
    t = 10;
    assert_int_equal(b.ops->attach(&b, 0, c1, 1000 * MiB), 0);
    t = 15;
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    assert_true(s.energy_j == 550 + 190 * 5);
    assert_float_equal(s.smact, 0.3, 1e-12);
    assert_float_equal(s.smocc, 0.15, 1e-12);
    assert_float_equal(s.drama, 0.09, 1e-12);
    assert_float_equal(s.tensor, 0.075, 1e-12);
    assert_float_equal(s.util_gpu, 0.6, 1e-12);
    assert_float_equal(s.power_w, 190, 1e-9);
    assert_int_equal(s.mem_used_bytes, 1000 * MiB);
    t = 20;
    assert_int_equal(b.ops->attach(&b, 0, c2, 3000 * MiB), 0);
    t = 30;
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    assert_float_equal(s.energy_j, 550 + 1900 + 2800, 1e-9);
    assert_int_equal(s.mem_used_bytes, 4000 * MiB);
    assert_int_equal(s.mem_free_bytes, 36960 * MiB);
    assert_float_equal(s.power_w, 280, 1e-9);
    assert_int_equal(b.ops->detach(&b, c2), 0);
    t = 40;
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    assert_float_equal(s.energy_j, 550 + 1900 + 2800 + 1900, 1e-9);
    /* The counter never goes back when the clock stands still. */
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    assert_float_equal(s.energy_j, 7150, 1e-9);
    child_end(c1);
    child_end(c2);
    b.ops->close(&b);
}

static void test_dead_process_dropped(void **state)
{
    (void)state;
    struct carma_gpu_backend b;
    struct carma_err err;
    assert_int_equal(carma_gpu_open_sim(&b, "2xa100-40gb", &err), 0);
    double t = 0;
    carma_gpu_sim_set_clock(&b, clock_read, &t);
    pid_t c1 = child_start(), c2 = child_start();
    /* A two-GPU job: attached on both. */
    assert_int_equal(b.ops->attach(&b, 0, c1, 2048 * MiB), 0);
    assert_int_equal(b.ops->attach(&b, 1, c1, 2048 * MiB), 0);
    assert_int_equal(b.ops->attach(&b, 0, c2, 1024 * MiB), 0);
    /* Attaching again replaces the memory, it does not add. */
    assert_int_equal(b.ops->attach(&b, 0, c2, 512 * MiB), 0);
    struct carma_gpu_proc p[4];
    size_t n = 4;
    assert_int_equal(b.ops->processes(&b, 0, p, &n), 0);
    assert_int_equal(n, 2);
    uint64_t sum = p[0].mem_bytes + p[1].mem_bytes;
    assert_int_equal(sum, 2560 * MiB);
    n = 1;
    assert_int_equal(b.ops->processes(&b, 0, p, &n), -EOVERFLOW);
    child_end(c1); /* gone: ESRCH */
    struct carma_gpu_sample s;
    t = 1;
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    assert_int_equal(s.mem_used_bytes, 512 * MiB);
    n = 4;
    assert_int_equal(b.ops->processes(&b, 1, p, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(b.ops->sample(&b, 1, &s), 0);
    assert_int_equal(s.mem_used_bytes, 0);
    assert_true(s.power_w == 55);
    /* Energy on GPU 1: 1 s at 190 W (the death is dated at the listing that saw it). */
    assert_float_equal(s.energy_j, 190, 1e-9);
    child_end(c2);
    b.ops->close(&b);
}

static void test_memory_saturates_and_activity_caps(void **state)
{
    (void)state;
    struct carma_gpu_backend b;
    struct carma_err err;
    assert_int_equal(carma_gpu_open_sim(&b, "v100-32gb", &err), 0);
    pid_t c[4];
    for (int i = 0; i < 4; i++) {
        c[i] = child_start();
        assert_int_equal(b.ops->attach(&b, 0, c[i], 10000 * MiB), 0);
    }
    struct carma_gpu_sample s;
    assert_int_equal(b.ops->sample(&b, 0, &s), 0);
    assert_int_equal(s.mem_used_bytes, 32768 * MiB);
    assert_int_equal(s.mem_free_bytes, 0);
    /* Each process holds what it declared or what was left, in attach order: no
     * process, nor the sum, holds more than the GPU (a job that declared more than
     * the GPU has must not show a peak above it). */
    struct carma_gpu_proc p[4];
    size_t n = 4;
    assert_int_equal(b.ops->processes(&b, 0, p, &n), 0);
    assert_int_equal(n, 4);
    assert_int_equal(p[0].mem_bytes, 10000 * MiB);
    assert_int_equal(p[1].mem_bytes, 10000 * MiB);
    assert_int_equal(p[2].mem_bytes, 10000 * MiB);
    assert_int_equal(p[3].mem_bytes, 2768 * MiB);
    assert_int_equal(b.ops->attach(&b, 0, c[0], 50000 * MiB), 0); /* more than the GPU */
    n = 4;
    assert_int_equal(b.ops->processes(&b, 0, p, &n), 0);
    assert_int_equal(p[0].mem_bytes, 32768 * MiB);
    assert_int_equal(p[1].mem_bytes + p[2].mem_bytes + p[3].mem_bytes, 0);
    assert_true(s.smact == 1 && s.util_gpu == 1);
    assert_float_equal(s.power_w, 300, 1e-9);
    assert_int_equal(b.ops->attach(&b, 1, c[0], 1), -EINVAL);
    assert_int_equal(b.ops->attach(&b, 0, 0, 1), -EINVAL);
    assert_int_equal(b.ops->detach(&b, 999999), 0);
    for (int i = 0; i < 4; i++)
        child_end(c[i]);
    b.ops->close(&b);
}

static void test_set_clock_only_on_sim(void **state)
{
    (void)state;
    struct carma_gpu_backend b = {0};
    double t = 0;
    assert_int_equal(carma_gpu_sim_set_clock(&b, clock_read, &t), -EINVAL);
    assert_int_equal(carma_gpu_sim_set_clock(NULL, clock_read, &t), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_and_info),
        cmocka_unit_test(test_bad_specs),
        cmocka_unit_test(test_idle_sample),
        cmocka_unit_test(test_energy_is_exact_integral),
        cmocka_unit_test(test_dead_process_dropped),
        cmocka_unit_test(test_memory_saturates_and_activity_caps),
        cmocka_unit_test(test_set_clock_only_on_sim),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
