/* Why these are lower bounds (docs/model.md derives them at length):
 *
 * Charge each busy GPU-second to the jobs resident on it in proportion to their solo
 * SMACT (s_i / S). A job's SM work, s * D per GPU it uses, is the same under every
 * schedule (it runs D solo-seconds at activity s). Per charged second a job gains SM
 * work s * rate / (s / S) = S * rate: alone that is at most s; shared under MPS it is
 * min(S, 1) / (1 + alpha (n - 1)) <= 1 / (1 + alpha); shared under time-slicing it is
 * S / max(1, B) with B = sum s^k >= S, which is at most smax^(1-k). So each job is
 * charged at least w = D * min(1, s / e) GPU-seconds per GPU (0 when s = 0), e the best
 * shared rate:
 *   busy       >= sum w, and >= D * gpus of any one job (it holds its GPUs that long)
 *   makespan   >= max over arrivals a: a + (sum of w of jobs arriving at or after a) / G
 *   makespan   >= max a_j + D_j                          (no job runs faster than alone)
 *   energy     >= sum idle * makespan + min static * busy + min dynamic * sum s D
 * (arrival times a counted from the first arrival, as the makespan is).
 * The last holds because power is linear in SMACT and SMACT integrates to s * D per
 * job-GPU (more where a multi-GPU job waits for its slowest GPU).
 *
 * The simulator's rates are floats (core/coloc.h): under MPS two jobs run at
 * float(1 / float(1 + alpha)), above the exact 1 / (1 + alpha), and the float sums S and
 * B round either way, so e is the float rate (MPS) or smax^(1-k) (time-slicing) times
 * 1 + SIM_BOUND_FLOAT_SLACK. That covers the four roundings of a pair under MPS (about
 * 4 * 2^-24; three or more jobs have 5% to spare), and under time-slicing the sum of up
 * to about a dozen busy fractions; the simulator integrates SMACT and power in double. */
#include "sim/bound.h"

#include <math.h>

#include "core/coloc.h"

void sim_bounds_compute(const struct sim_trace *t, const struct sim_config *cfg,
                        struct sim_bounds *b)
{
    b->makespan_s = b->busy_gpu_s = b->energy_j = 0;
    if (t->njobs == 0 || cfg->ngpus == 0)
        return;
    double smax = 0;
    for (size_t i = 0; i < t->njobs; i++)
        smax = fmax(smax, fmin(1.0, (double)t->jobs[i].smact));
    /* e from the simulator's own float rate where it is one expression (two jobs under
     * MPS), raised by SIM_BOUND_FLOAT_SLACK for the roundings of its float sums and
     * quotients, so that no simulated run goes below the bounds by a float's rounding. */
    double e = cfg->sharing == CARMA_SHARING_MPS
                   ? (double)carma_coloc_rate(CARMA_SHARING_MPS, 2, 1.0f, 0.0f)
                   : pow(smax, 1.0 - (double)CARMA_COLOC_TS_EXPONENT);
    e *= 1.0 + SIM_BOUND_FLOAT_SLACK;
    double G = (double)cfg->ngpus;
    double suffix = 0, span = 0, smwork = 0, longest = 0;
    /* Submit times are non-decreasing: walk back accumulating later arrivals' work.
     * The makespan counts from the first arrival, as the simulator's does. */
    double t0 = t->jobs[0].submit_s;
    for (size_t i = t->njobs; i-- > 0;) {
        const struct sim_job_spec *j = &t->jobs[i];
        double s = fmin(1.0, fmax(0.0, (double)j->smact));
        /* A job with no SM activity has no SM work to charge (and e is 0 when no job has any). */
        double w = s > 0 ? j->duration_s * fmin(1.0, s / e) * j->gpus : 0;
        suffix += w;
        smwork += s * j->duration_s * j->gpus;
        longest = fmax(longest, j->duration_s * j->gpus);
        span = fmax(span, j->submit_s - t0 + suffix / G);
        span = fmax(span, j->submit_s - t0 + j->duration_s);
    }
    double idle = 0, stat = INFINITY, dyn = INFINITY;
    for (size_t g = 0; g < cfg->ngpus; g++) {
        const struct sim_gpu_kind *k = cfg->kinds[g];
        idle += k->idle_w;
        stat = fmin(stat, k->static_w);
        dyn = fmin(dyn, k->max_w - k->idle_w - k->static_w);
    }
    b->makespan_s = span;
    b->busy_gpu_s = fmax(suffix, longest);
    b->energy_j = idle * span + stat * b->busy_gpu_s + dyn * smwork;
}
