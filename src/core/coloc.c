#include "core/coloc.h"

#include <math.h>

float carma_coloc_busy(float smact)
{
    if (smact < 0 || smact >= 1.0f)
        return 1.0f;
    return powf(smact, CARMA_COLOC_TS_EXPONENT);
}

