/* order = fair (docs/daemon.md, Order): what carma_sched_order costs carmad before each
 * scheduling step, on a main queue of 100,000 and 1,000,000 jobs (carmad's most) of 20
 * users: a queue already in order (the common case: nothing changed since the last step),
 * one in order but for 64 jobs submitted since (at the tail, any users), and one in no
 * order at all. The median of 5 runs of each. */
#include <stdio.h>
#include <stdlib.h>

#include "core/sched.h"
#include "util/clock.h"

enum { USERS = 20, NEW = 64, RUNS = 5 };

static uint64_t rng = 777;

static double user_key(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)((rng >> 33) % USERS);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v)
{
    qsort(v, RUNS, sizeof *v, cmp_double);
    return v[RUNS / 2];
}

static int run(uint32_t n)
{
    struct carma_job *jobs = calloc(n, sizeof *jobs);
    double *key = calloc(n, sizeof *key);
    struct carma_gpu g;
    struct carma_sched s;
    if (!jobs || !key) {
        free(jobs);
        free(key);
        return -1;
    }
    carma_gpu_init(&g, 40960, 30, CARMA_SHARING_MPS);
    for (uint32_t j = 0; j < n; j++)
        carma_job_init(&jobs[j], j + 1, 1, 0);
    if (carma_sched_init(&s, jobs, &g, 1, carma_policy_find("auto"), NULL)) {
        free(jobs);
        free(key);
        return -1;
    }
    for (uint32_t j = 0; j < n; j++) {
        carma_sched_submit(&s, j, 0);
        key[j] = user_key();
    }
    double in_order[RUNS], appended[RUNS], random[RUNS];
    for (int r = 0; r < RUNS; r++) {
        for (uint32_t j = 0; j < n; j++) /* a queue in no order */
            key[j] = user_key();
        double t0 = carma_mono_s();
        carma_sched_order(&s, key);
        random[r] = carma_mono_s() - t0;
        t0 = carma_mono_s();
        carma_sched_order(&s, key);
        in_order[r] = carma_mono_s() - t0;
        for (uint32_t j = n - NEW; j < n; j++) /* resubmitted: at the tail */
            carma_sched_dequeue(&s, j);
        for (uint32_t j = n - NEW; j < n; j++) {
            carma_sched_submit(&s, j, 0);
            key[j] = user_key();
        }
        t0 = carma_mono_s();
        carma_sched_order(&s, key);
        appended[r] = carma_mono_s() - t0;
    }
    printf("  %7u queued jobs of %d users: in order %.2f ms, %d submitted since %.2f ms, "
           "in no order %.2f ms\n",
           n, USERS, median(in_order) * 1e3, NEW, median(appended) * 1e3, median(random) * 1e3);
    carma_sched_free(&s);
    free(jobs);
    free(key);
    return 0;
}

int main(void)
{
    printf("carma_sched_order before each step under order = fair (median of %d):\n", RUNS);
    if (run(100000) || run(1000000)) {
        fprintf(stderr, "bench_order: out of memory\n");
        return 1;
    }
    return 0;
}
