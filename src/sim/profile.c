#include "sim/profile.h"

#include <math.h>

/* s = 0.90 * (1 - exp(-(m - floor - 89) / 925)): least squares over the 712 successful
 * GPUMemNet CNN runs with a valid SMACT (floor there 1451 MiB, fitted knee 1540 MiB). */
float sim_profile_smact(double mem_mib, double floor_mib)
{
    double x = mem_mib - floor_mib - 89.0;
    double s = x > 0 ? 0.90 * (1.0 - exp(-x / 925.0)) : 0.0;
    if (s < 0.05)
        s = 0.05;
    if (s > 0.90)
        s = 0.90;
    return (float)s;
}

float sim_profile_smocc(float smact)
{
    return 0.40f * smact;
}

/* The median of KACE's three training workloads (collocation-facts.csv, V100 under MPS):
 * memory busy / SM busy = 45.2/97.0, 37/97.2, 45.1/97.2 = 0.466, 0.381, 0.464. */
float sim_profile_drama(float smact)
{
    return 0.464f * smact;
}
