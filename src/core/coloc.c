#include "core/coloc.h"

#include <errno.h>
#include <math.h>

float carma_coloc_busy(float smact)
{
    if (smact < 0 || smact >= 1.0f)
        return 1.0f;
    return powf(smact, CARMA_COLOC_TS_EXPONENT);
}

/* Knot below s and the share t of the one above (t = 0 at the last knot). */
static unsigned knot_of(float s, float *t)
{
    float f = s / CARMA_COLOC_KNOT_STEP;
    if (!(f < (float)(CARMA_COLOC_KNOTS - 1))) {
        *t = 0;
        return CARMA_COLOC_KNOTS - 1;
    }
    unsigned k = f > 0 ? (unsigned)f : 0;
    *t = f > 0 ? f - (float)k : 0;
    return k;
}

static void knot_add(struct carma_coloc_learnt *l, unsigned m, unsigned k, float w, float lq)
{
    if (w <= 0)
        return;
    l->weight[m][k] += w;
    l->logq[m][k] += w * lq;
    if (l->weight[m][k] > CARMA_COLOC_MEMORY) { /* fade the older ones */
        float keep = CARMA_COLOC_MEMORY / l->weight[m][k];
        l->weight[m][k] = CARMA_COLOC_MEMORY;
        l->logq[m][k] *= keep;
    }
}

int carma_coloc_observe(struct carma_coloc_learnt *l, enum carma_sharing sharing, uint32_t n,
                        float sum_smact, float sum_busy, float smact_seen)
{
    if (n < 2 || (unsigned)sharing > 1 || !(sum_smact >= 0 && sum_smact <= 16) ||
        !(sum_busy >= 0 && sum_busy <= 16) || !(smact_seen >= 0 && smact_seen <= 16))
        return -EINVAL;
    float predicted = carma_coloc_rate(sharing, n, sum_smact, sum_busy) * sum_smact;
    if (!(predicted >= 0.02f))
        return -EINVAL;
    float q = smact_seen / predicted;
    q = q < CARMA_COLOC_QMIN ? CARMA_COLOC_QMIN : q > CARMA_COLOC_QMAX ? CARMA_COLOC_QMAX : q;
    float t;
    unsigned k = knot_of(sum_smact, &t);
    knot_add(l, sharing, k, 1.0f - t, logf(q));
    if (k + 1 < CARMA_COLOC_KNOTS)
        knot_add(l, sharing, k + 1, t, logf(q));
    l->observed[sharing]++;
    return 0;
}

static float knot_logq(const struct carma_coloc_learnt *l, unsigned m, unsigned k)
{
    return l->logq[m][k] / (l->weight[m][k] + CARMA_COLOC_PRIOR);
}

float carma_coloc_factor(const struct carma_coloc_learnt *l, enum carma_sharing sharing,
                         float sum_smact)
{
    if ((unsigned)sharing > 1)
        return 1.0f;
    float t;
    unsigned k = knot_of(sum_smact, &t);
    float lq = knot_logq(l, sharing, k);
    if (t > 0)
        lq += t * (knot_logq(l, sharing, k + 1) - lq);
    float f = expf(lq);
    return f < CARMA_COLOC_QMIN ? CARMA_COLOC_QMIN : f > CARMA_COLOC_QMAX ? CARMA_COLOC_QMAX : f;
}

int carma_coloc_learnt_valid(const struct carma_coloc_learnt *l)
{
    float lim = logf(CARMA_COLOC_QMAX) > -logf(CARMA_COLOC_QMIN) ? logf(CARMA_COLOC_QMAX)
                                                                 : -logf(CARMA_COLOC_QMIN);
    for (unsigned m = 0; m < 2; m++)
        for (unsigned k = 0; k < CARMA_COLOC_KNOTS; k++) {
            float w = l->weight[m][k], lq = l->logq[m][k];
            if (!(w >= 0 && w <= CARMA_COLOC_MEMORY + 1) || !(fabsf(lq) <= w * lim * 1.001f))
                return 0;
        }
    return 1;
}
