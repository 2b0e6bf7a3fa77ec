/* Lower bounds that no schedule of a trace can beat under the simulator's model
 * (docs/model.md, "What no schedule can beat"): how close a policy is to the best
 * possible, and whether a target is reachable at all. Pure arithmetic over the
 * trace, O(jobs). They hold for any run in which every job finishes (no job given
 * up), whatever the policy, crashes included. */
#ifndef CARMA_SIM_BOUND_H
#define CARMA_SIM_BOUND_H

#include "sim/sim.h"

/* How much the best shared yield e (bound.c) is raised above the simulator's float
 * rate, for the roundings of its float sums and quotients (2^-20, about 1e-6). */
#define SIM_BOUND_FLOAT_SLACK 0x1p-20

struct sim_bounds {
    double makespan_s;  /* last finish - first arrival */
    double busy_gpu_s;  /* GPU-seconds with at least one job resident */
    double energy_j;    /* all GPUs over [first arrival, last finish] */
};

/* Fills *b for trace `t` on cfg's GPUs and sharing (the policy is not used). */
void sim_bounds_compute(const struct sim_trace *t, const struct sim_config *cfg,
                        struct sim_bounds *b);

#endif
