/* The co-location model: how fast each job runs when n jobs share one GPU, from
 * their solo profiles. The simulator uses it as its ground truth and `auto` uses it
 * to predict; docs/model.md derives both constants from collocation-facts.csv.
 *
 *   MPS:        rate = min(1, 1/S) / (1 + alpha (n - 1)),  S = sum of solo SMACT
 *   time-slice: rate = min(1, 1/B),                        B = sum of busy = SMACT^k
 *
 * where busy is the fraction of wall time a job keeps the GPU occupied (time-slicing
 * cannot overlap kernels of two contexts, so only idle gaps are shared). */
#ifndef CARMA_CORE_COLOC_H
#define CARMA_CORE_COLOC_H

#include <stdint.h>

#include "core/gpu.h"

/* alpha: per co-runner MPS overhead, from ResNet26 x7 = 5.35x at SMACT 0.10. */
#define CARMA_COLOC_MPS_ALPHA 0.0514f
/* k: busy = SMACT^k, from ResNet26 x7 = 1.98x (streams) and ResNet152 x2 = 1.15x. */
#define CARMA_COLOC_TS_EXPONENT 0.30f

/* Temporal busy fraction of a job with solo SMACT s (unknown s < 0 counts as 1). */
float carma_coloc_busy(float smact);

/* Progress rate (1 = as fast as alone) of every job on a GPU holding n jobs whose
 * solo SMACT sum to sum_smact and busy fractions to sum_busy. Inline: the scheduler
 * evaluates it for every candidate GPU. */
static inline float carma_coloc_rate(enum carma_sharing sharing, uint32_t n, float sum_smact,
                                     float sum_busy)
{
    if (n <= 1)
        return 1.0f;
    if (sharing == CARMA_SHARING_MPS) {
        float share = sum_smact > 1.0f ? 1.0f / sum_smact : 1.0f;
        return share / (1.0f + CARMA_COLOC_MPS_ALPHA * (float)(n - 1));
    }
    return sum_busy > 1.0f ? 1.0f / sum_busy : 1.0f;
}

/* The model's correction learnt from observed co-runs (DESIGN.md 3: the slowdown predicted
 * from solo profiles, learnt online). A GPU's SMACT while its jobs share it is the sum of
 * each job's solo SMACT times its rate (measured on an H100 to 0.01, docs/model.md), so a
 * co-run observed for a window says how far the model's rate is off there:
 * q = seen SMACT / (rate * S). Per sharing mode, log q is kept at knots of S (0, 0.25, ..
 * 2: light sets and heavy ones are off in opposite directions) as a weighted sum, each
 * observation shared between the two knots around its S; a knot's factor shrinks toward
 * 1 by CARMA_COLOC_PRIOR observations' worth, and old observations fade once a knot holds
 * CARMA_COLOC_MEMORY. Pure maths: the caller measures, stores and applies. */
#define CARMA_COLOC_KNOTS 9
#define CARMA_COLOC_KNOT_STEP 0.25f
#define CARMA_COLOC_PRIOR 2.0f   /* observations the model's own q = 1 counts as */
#define CARMA_COLOC_MEMORY 50.0f /* a knot's weight past which older ones fade */
#define CARMA_COLOC_QMIN 0.5f    /* one observation's q, and a factor, clamped to */
#define CARMA_COLOC_QMAX 2.0f

struct carma_coloc_learnt {
    float weight[2][CARMA_COLOC_KNOTS]; /* by enum carma_sharing, knot: observations */
    float logq[2][CARMA_COLOC_KNOTS];   /* their weighted sum of log q */
    uint64_t observed[2];               /* observations taken, by sharing mode */
};

/* The rate the model predicts (carma_coloc_rate) of n >= 2 jobs whose solo SMACT sum to
 * sum_smact and busy fractions to sum_busy, and the GPU's SMACT measured over a window
 * while they ran: folds q into l. Returns 0, or -EINVAL (l unchanged) when the
 * observation says nothing: n < 2, a sum or the measure not finite, outside [0, 16] or
 * a predicted SMACT below 0.02. */
int carma_coloc_observe(struct carma_coloc_learnt *l, enum carma_sharing sharing, uint32_t n,
                        float sum_smact, float sum_busy, float smact_seen);

/* The learnt factor on the rate of jobs whose solo SMACT sum to sum_smact (1 with
 * nothing learnt), in [CARMA_COLOC_QMIN, CARMA_COLOC_QMAX]. */
float carma_coloc_factor(const struct carma_coloc_learnt *l, enum carma_sharing sharing,
                         float sum_smact);

/* Whether l is one carma_coloc_observe could have built: every weight finite and in
 * [0, CARMA_COLOC_MEMORY + 1], every logq within weight * log of the clamps (a stored
 * table read back is checked with it). */
int carma_coloc_learnt_valid(const struct carma_coloc_learnt *l);

#endif
