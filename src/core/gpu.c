#include "core/gpu.h"
#include "core/job.h"

#include <string.h>

const char *carma_sharing_name(enum carma_sharing s)
{
    return s == CARMA_SHARING_MPS ? "mps" : "timeslice";
}

int carma_sharing_parse(const char *name)
{
    if (strcmp(name, "mps") == 0)
        return CARMA_SHARING_MPS;
    if (strcmp(name, "timeslice") == 0)
        return CARMA_SHARING_TIMESLICE;
    return -1;
}

void carma_gpu_init(struct carma_gpu *g, uint64_t mem_total_mib, uint32_t window,
                    enum carma_sharing sharing)
{
    memset(g, 0, sizeof *g);
    g->mem_total_mib = mem_total_mib;
    carma_window_init(&g->smact, window);
    carma_window_init(&g->smocc, window);
    carma_window_init(&g->drama, window);
    g->last_launch_s = -1.0;
    g->last_launch_job = CARMA_NONE;
    g->sharing = (uint8_t)sharing;
}
