/* Why queued jobs wait (carma_sched_why, docs/daemon.md): the cost of working out the
 * reasons of 1000 queued jobs under `auto`, as `carma ls` does for a page of them and
 * carmad's /v1/jobs does every HTTP_WHY_EVERY_S (5 s), on servers of 8 to 1000 GPUs.
 * Every GPU holds a job that must run alone; the queued jobs have solo profiles and
 * memory bounds that all differ, so none is placed and each reason walks the GPUs. */
#include <stdio.h>
#include <stdlib.h>

#include "core/sched.h"
#include "util/clock.h"

enum { QUEUED = 1000 };

/* Seconds to work out the reasons of QUEUED jobs on ngpus GPUs (the median of 3), and
 * the last reason in *last. */
static double run(size_t ngpus, struct carma_sched_why *last)
{
    size_t nj = ngpus + QUEUED;
    struct carma_job *jobs = calloc(nj, sizeof *jobs);
    struct carma_gpu *gpus = calloc(ngpus, sizeof *gpus);
    struct carma_placement *out = calloc(nj, sizeof *out);
    if (!jobs || !gpus || !out) {
        free(jobs);
        free(gpus);
        free(out);
        return -1;
    }
    for (size_t g = 0; g < ngpus; g++)
        carma_gpu_init(&gpus[g], 40960, 30, CARMA_SHARING_MPS);
    for (size_t j = 0; j < nj; j++)
        carma_job_init(&jobs[j], j + 1, 1, 0);
    struct carma_sched s;
    carma_sched_init(&s, jobs, gpus, ngpus, carma_policy_find("auto"), NULL);
    for (uint32_t j = 0; j < ngpus; j++) {
        jobs[j].mem_mib = 40000;
        jobs[j].exclusive = 1;
        carma_sched_submit(&s, j, 0);
    }
    carma_sched_step(&s, 1, out, nj);
    for (uint32_t j = (uint32_t)ngpus; j < nj; j++) {
        jobs[j].mem_mib = 1000 + j;
        jobs[j].smact = 0.1f + (float)(j % 50) * 0.01f;
        carma_sched_submit(&s, j, 2);
    }
    carma_sched_step(&s, 3, out, nj);
    double t[3];
    for (int r = 0; r < 3; r++) {
        double t0 = carma_mono_s();
        for (uint32_t j = (uint32_t)ngpus; j < nj; j++)
            carma_sched_why(&s, j, 4, last);
        t[r] = carma_mono_s() - t0;
    }
    carma_sched_free(&s);
    free(jobs);
    free(gpus);
    free(out);
    double a = t[0] < t[1] ? t[0] : t[1], b = t[0] < t[1] ? t[1] : t[0];
    return t[2] < a ? a : t[2] > b ? b : t[2];
}

int main(void)
{
    static const size_t sizes[] = {8, 64, 256, 1000};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        struct carma_sched_why w = {0};
        double s = run(sizes[k], &w);
        if (s < 0) {
            fprintf(stderr, "bench_why: out of memory\n");
            return 1;
        }
        printf("reasons of %d queued jobs (auto, %4zu GPUs, every one busy): %8.2f ms "
               "(median of 3; %.1f us a job)\n",
               QUEUED, sizes[k], s * 1e3, s * 1e6 / QUEUED);
        if (k == 0)
            printf("  e.g. %s: %.150s\n", carma_why_name(w.code), w.text);
    }
    printf("carmad's /v1/jobs works them out every 5 s; carma ls for each page it asks for\n");
    return 0;
}
