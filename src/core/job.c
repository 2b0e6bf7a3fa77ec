#include "core/job.h"

#include <string.h>

static const char *const state_names[CARMA_JOB_STATE_COUNT] = {
    "queued", "running", "succeeded", "failed", "oom", "cancelled", "lost",
};

const char *carma_job_state_name(enum carma_job_state s)
{
    return (unsigned)s < CARMA_JOB_STATE_COUNT ? state_names[s] : "unknown";
}

int carma_job_state_parse(const char *name)
{
    for (int i = 0; i < CARMA_JOB_STATE_COUNT; i++)
        if (strcmp(state_names[i], name) == 0)
            return i;
    return -1;
}

const char *carma_outcome_name(enum carma_outcome o)
{
    switch (o) {
    case CARMA_OUTCOME_SUCCEEDED: return "succeeded";
    case CARMA_OUTCOME_FAILED: return "failed";
    case CARMA_OUTCOME_OOM: return "oom";
    case CARMA_OUTCOME_CANCELLED: return "cancelled";
    case CARMA_OUTCOME_LOST: return "lost";
    case CARMA_OUTCOME_FAULT: return "fault";
    case CARMA_OUTCOME_GPU_ERROR:
        return "gpu_error";
    }
    return "unknown";
}

void carma_job_init(struct carma_job *j, uint64_t id, uint16_t gpus, double submit_s)
{
    memset(j, 0, sizeof *j);
    j->id = id;
    j->gpus = gpus ? gpus : 1;
    j->submit_s = submit_s;
    j->queued_s = submit_s;
    j->start_s = -1.0;
    j->smact = j->smocc = j->drama = -1.0f;
    j->prev = j->next = CARMA_NONE;
}
