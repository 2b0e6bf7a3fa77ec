/* Fuzz target for the simulator's loop, on any small trace, sharing mode, window and
 * GPU mix. Differential: CARMA's 1 s loop with the skipped ticks must give the same run
 * as deciding at every second (sim.c, next_decision). Invariants, for that reference
 * policy and for `auto`: the run ends with every job finished or given up, no run that
 * finishes every job beats the lower bounds (bound.c), and `auto`, whose bound is the
 * true peak, never crashes. Inputs are decoded, not parsed: byte 0 picks the policy,
 * byte 1 the GPUs, then 6 bytes per job. Sizes are kept small so that the every-second
 * run stays cheap. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "sim/bound.h"
#include "sim/sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_MAX_JOBS 16

static int same(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fmax(1.0, fabs(b));
}

/* Every job ended; a run that finished them all is no better than the bounds (to 1e-9,
 * the double rounding of event times, as test_bound allows: the bounds cover the
 * simulator's float rates). */
static int sound(const struct sim_metrics *m, const struct sim_bounds *lb, size_t n)
{
    if (m->succeeded + m->gave_up != n)
        return 0;
    return m->gave_up || (m->makespan_s >= lb->makespan_s * (1 - 1e-9) &&
                          m->busy_gpu_s >= lb->busy_gpu_s * (1 - 1e-9) &&
                          m->energy_j >= lb->energy_j * (1 - 1e-9));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t np, nref = 0;
    const struct carma_policy *all = carma_policy_all(&np), *ref[16];
    for (size_t k = 0; k < np && nref < 16; k++)
        if (all[k].flags & CARMA_POLICY_TICK_1S)
            ref[nref++] = &all[k];
    const struct carma_policy *pol = ref[data[0] % nref];
    unsigned g = data[1];
    size_t ngpus = 1 + (g & 3) % 3;
    static struct sim_workload wl[1] = {{.name = "w"}};
    struct sim_job_spec jobs[FZ_MAX_JOBS];
    size_t n = 0;
    double t = 0;
    for (size_t off = 2; off + 6 <= size && n < FZ_MAX_JOBS; off += 6) {
        const uint8_t *p = data + off;
        struct sim_job_spec *j = &jobs[n++];
        memset(j, 0, sizeof *j);
        t += p[0] / 3.0;
        j->submit_s = t;
        j->duration_s = 1 + p[1] * 2.5;
        j->mem_mib = 100 + p[2] * 160.0f;
        j->smact = p[3] / 255.0f;
        j->smocc = j->smact * (p[5] >> 4) / 15.0f;
        j->drama = j->smact * (p[5] & 15) / 15.0f;
        j->ramp_s = p[4] % 64;
        j->gpus = (p[4] & 64) && ngpus >= 2 ? 2 : 1;
        if (p[4] & 128)
            j->est_mib[SIM_EST_GPUMEMNET] = j->mem_mib * (0.5f + (p[5] & 7) / 4.0f);
    }
    if (n == 0)
        return 0;
    const struct sim_gpu_kind *kinds[3] = {sim_gpu_kind_find("a100-40gb"),
                                           sim_gpu_kind_find("a100-40gb"),
                                           sim_gpu_kind_find(g & 4 ? "v100-32gb" : "a100-80gb")};
    struct sim_trace tr = {.jobs = jobs, .njobs = n, .workloads = wl, .nworkloads = 1};
    struct sim_config cfg;
    sim_config_default(&cfg);
    cfg.kinds = kinds;
    cfg.ngpus = ngpus;
    cfg.policy = pol;
    cfg.sharing = g & 8 ? CARMA_SHARING_TIMESLICE : CARMA_SHARING_MPS;
    cfg.window = 1 + (g >> 4) % 8;
    cfg.max_attempts = g & 128 ? 0 : 3;
    struct sim_metrics a, b;
    struct carma_err err;
    cfg.every_tick = 1;
    int ra = sim_run(&tr, &cfg, &a, NULL, &err);
    cfg.every_tick = 0;
    int rb = sim_run(&tr, &cfg, &b, NULL, &err);
    if (ra != rb)
        __builtin_trap();
    if (ra)
        return 0;
    if (a.succeeded != b.succeeded || a.gave_up != b.gave_up || a.oom_crashes != b.oom_crashes ||
        a.placements != b.placements || b.decisions > a.decisions ||
        b.succeeded + b.gave_up != n)
        __builtin_trap();
    if (!same(b.makespan_s, a.makespan_s) || !same(b.mean_jct_s, a.mean_jct_s) ||
        !same(b.p99_jct_s, a.p99_jct_s) || !same(b.mean_wait_s, a.mean_wait_s) ||
        !same(b.lost_gpu_s, a.lost_gpu_s) || !same(b.energy_j, a.energy_j) ||
        !same(b.mean_smact, a.mean_smact) || !same(b.mean_mem_used_frac, a.mean_mem_used_frac))
        __builtin_trap();
    struct sim_bounds lb;
    sim_bounds_compute(&tr, &cfg, &lb);
    if (!sound(&b, &lb, n))
        __builtin_trap();
    cfg.policy = carma_policy_find("auto");
    if (sim_run(&tr, &cfg, &a, NULL, &err) || !sound(&a, &lb, n) || a.oom_crashes)
        __builtin_trap();
    return 0;
}
