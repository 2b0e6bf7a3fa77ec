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

#endif
