#include "core/coloc.h"

#include <math.h>

float carma_coloc_busy(float smact)
{
    if (smact < 0 || smact >= 1.0f)
        return 1.0f;
    return powf(smact, CARMA_COLOC_TS_EXPONENT);
}

float carma_coloc_rate(enum carma_sharing sharing, uint32_t n, float sum_smact, float sum_busy)
{
    if (n <= 1)
        return 1.0f;
    if (sharing == CARMA_SHARING_MPS) {
        float share = sum_smact > 1.0f ? 1.0f / sum_smact : 1.0f;
        return share / (1.0f + CARMA_COLOC_MPS_ALPHA * (float)(n - 1));
    }
    return sum_busy > 1.0f ? 1.0f / sum_busy : 1.0f;
}
