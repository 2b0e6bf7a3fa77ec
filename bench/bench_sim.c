/* Simulator speed: `auto` on a 100,000-job Philly-derived trace (Muri's four traces
 * laid end to end and repeated in time) over 1,024 simulated A100s. Prints simulated
 * jobs per second and peak memory per job (targets: >= 100,000 jobs/s, <= 1 KiB), and
 * what a report's recorder keeps of that run (bounded, not per job). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "sim/trace.h"
#include "util/clock.h"

#define BENCH_JOBS 100000
#define BENCH_GPUS 1024

static long vm_hwm_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0)
            v = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return v;
}

/* CARMA's loop on a long, overloaded trace: Gavel's 0e4a51 (Philly arrivals, jobs of
 * days) on 8 GPUs queues for months of simulated time. The simulator skips the ticks
 * at which no decision can differ (sim.c, next_decision); deciding at every second
 * took 24 s for this run. */
static int bench_long_queue(const char *path)
{
    struct sim_trace t;
    struct carma_err err = {{0}};
    if (sim_trace_load(path, SIM_TRACE_GAVEL, NULL, 0, NULL, &t, &err)) {
        fprintf(stderr, "bench_sim: %s\n", err.msg);
        return 1;
    }
    const struct sim_gpu_kind *kinds[8];
    for (int i = 0; i < 8; i++)
        kinds[i] = sim_gpu_kind_find("a100-40gb");
    struct sim_config cfg;
    sim_config_default(&cfg);
    cfg.kinds = kinds;
    cfg.ngpus = 8;
    cfg.policy = carma_policy_find("oracle-magm");
    struct sim_metrics m;
    double t0 = carma_mono_s();
    int rc = sim_run(&t, &cfg, &m, NULL, &err);
    double wall = carma_mono_s() - t0;
    if (rc) {
        fprintf(stderr, "bench_sim: %s\n", err.msg);
        sim_trace_free(&t);
        return 1;
    }
    printf("a long queue: Gavel's %s, %zu jobs on 8 x a100-40gb:\n", path, m.jobs);
    printf("%-10s %8.0f jobs/s  (%.3f s, %llu decisions over %.0f simulated days, "
           "mean wait %.1f days)\n",
           "oracle-magm", (double)m.jobs / wall, wall, (unsigned long long)m.decisions,
           m.makespan_s / 86400, m.mean_wait_s / 86400);
    sim_trace_free(&t);
    return 0;
}

/* What carma sim --report --policy all records for one policy: exclusive (first-fit
 * fills the drawn GPUs first, the most runs on them) on the 8 GPUs the page draws. The
 * recorder's bound (CARMA_REPORT_KEEP_POINTS per GPU, CARMA_REPORT_KEEP_BARS bars) holds
 * whatever the number of jobs: this trace stays under it, 1,000,000 jobs reach it. */
static int bench_recorder(const struct sim_trace *t, const struct sim_config *base)
{
    struct sim_config cfg = *base;
    cfg.record = 1;
    cfg.record_gpus = carma_report_gpus_drawn(11, cfg.ngpus);
    struct sim_metrics m;
    struct sim_timeline tl;
    struct carma_err err = {{0}};
    if (sim_run(t, &cfg, &m, &tl, &err)) {
        fprintf(stderr, "bench_sim: recorded run: %s\n", err.msg);
        return 1;
    }
    size_t bytes = tl.capbars * sizeof *tl.bars, points = 0;
    for (size_t g = 0; g < tl.ngpus; g++) {
        bytes += tl.gpu[g].cap * (sizeof *tl.gpu[g].t + 3 * sizeof *tl.gpu[g].mem);
        points += tl.gpu[g].n;
    }
    size_t bound = (size_t)CARMA_REPORT_KEEP_BARS * sizeof *tl.bars +
                   tl.ngpus * CARMA_REPORT_KEEP_POINTS * (sizeof(double) + 3 * sizeof(float));
    printf("%-10s %8.0f bytes per job recorded for --report (%s on the %zu GPUs drawn: %zu "
           "bars, %zu points; about %.1f MiB at most, at any length)\n",
           "report", (double)bytes / (double)t->njobs, cfg.policy->name, tl.ngpus, tl.nbars, points,
           (double)bound / (1 << 20));
    sim_timeline_free(&tl);
    return 0;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "data/traces/philly-muri";
    static const char *const files[] = {"trace1.csv", "trace2.csv", "trace3.csv", "trace4.csv"};
    struct sim_trace parts[4];
    struct carma_err err = {{0}};
    size_t total = 0;
    for (int i = 0; i < 4; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        if (sim_trace_load(path, SIM_TRACE_MURI, NULL, 0, NULL, &parts[i], &err)) {
            fprintf(stderr, "bench_sim: %s\n", err.msg);
            return 1;
        }
        total += parts[i].njobs;
    }
    long hwm0 = vm_hwm_kib();
    /* Lay the traces end to end, repeating until BENCH_JOBS jobs. */
    struct sim_trace t = {0};
    t.jobs = malloc(BENCH_JOBS * sizeof *t.jobs);
    if (!t.jobs)
        return 1;
    t.workloads = parts[0].workloads;
    t.nworkloads = parts[0].nworkloads;
    double offset = 0;
    while (t.njobs < BENCH_JOBS) {
        for (int i = 0; i < 4 && t.njobs < BENCH_JOBS; i++) {
            double last = 0;
            for (size_t k = 0; k < parts[i].njobs && t.njobs < BENCH_JOBS; k++) {
                struct sim_job_spec j = parts[i].jobs[k];
                last = j.submit_s;
                j.submit_s += offset;
                j.workload = 0; /* names are not needed for speed */
                t.jobs[t.njobs++] = j;
            }
            offset += last + 60;
        }
    }
    const struct sim_gpu_kind *kinds[BENCH_GPUS];
    for (int i = 0; i < BENCH_GPUS; i++)
        kinds[i] = sim_gpu_kind_find("a100-40gb");
    printf("trace: %zu jobs (Muri traces 1-4, %zu jobs, repeated in time) on %d x a100-40gb\n",
           t.njobs, total, BENCH_GPUS);
    /* CARMA's reference policies decide on a 1 s loop; oracle-magm also reads the
     * monitor's windows, the costliest of them to simulate. */
    static const char *const pols[] = {"auto", "exclusive", "auto", "oracle-magm"};
    for (int p = 0; p < 4; p++) {
        if (p == 2) {
            /* The same jobs arriving 16 times faster: a queue builds up, and every
             * decision looks at a backlog of waiting jobs. */
            for (size_t k = 0; k < t.njobs; k++)
                t.jobs[k].submit_s /= 16;
            printf("arrivals 16x faster (a loaded cluster):\n");
        }
        struct sim_config cfg;
        sim_config_default(&cfg);
        cfg.kinds = kinds;
        cfg.ngpus = BENCH_GPUS;
        cfg.policy = carma_policy_find(pols[p]);
        struct sim_metrics m;
        double t0 = carma_mono_s();
        int rc = sim_run(&t, &cfg, &m, NULL, &err);
        double wall = carma_mono_s() - t0;
        if (rc) {
            fprintf(stderr, "bench_sim: %s: %s\n", pols[p], err.msg);
            return 1;
        }
        long hwm = vm_hwm_kib();
        printf("%-10s %8.0f jobs/s  (%zu jobs in %.3f s, %llu events, makespan %.1f h, "
               "mean wait %.2f h, OOM %llu)\n",
               pols[p], (double)m.jobs / wall, m.jobs, wall, (unsigned long long)m.events,
               m.makespan_s / 3600, m.mean_wait_s / 3600, (unsigned long long)m.oom_crashes);
        if (p == 0)
            printf("%-10s %8.0f bytes of peak memory per job (trace + simulation state)\n",
                   "memory", (double)(hwm - hwm0) * 1024.0 / (double)t.njobs);
        if (p == 1 && bench_recorder(&t, &cfg))
            return 1;
    }
    printf("targets: auto >= 100000 jobs/s, <= 1024 bytes per job\n");
    free(t.jobs);
    for (int i = 0; i < 4; i++)
        sim_trace_free(&parts[i]);
    return bench_long_queue(argc > 2 ? argv[2] : "data/traces/philly-gavel/0e4a51.trace");
}
