/* Jobs as the scheduler sees them. The caller owns the array of jobs; the core
 * links queued jobs by index, so no allocation happens per job. */
#ifndef CARMA_CORE_JOB_H
#define CARMA_CORE_JOB_H

#include <stdint.h>

#define CARMA_JOB_MAX_GPUS 64
#define CARMA_NONE UINT32_MAX

/* One name for one thing: these strings are the CLI's, the JSON's and the store's. */
enum carma_job_state {
    CARMA_JOB_QUEUED,
    CARMA_JOB_RUNNING,
    CARMA_JOB_SUCCEEDED,
    CARMA_JOB_FAILED,
    CARMA_JOB_OOM,
    CARMA_JOB_CANCELLED,
    CARMA_JOB_LOST,
    CARMA_JOB_STATE_COUNT
};

/* How one attempt ended. FAULT: the attempt is undone (carmad could not record its
 * launch), re-queued as if never started. GPU_ERROR: it failed on a GPU the driver
 * reported a fault of (an Xid that is not the job's doing): re-queued while attempts
 * remain, else the job failed. */
enum carma_outcome {
    CARMA_OUTCOME_SUCCEEDED,
    CARMA_OUTCOME_FAILED,
    CARMA_OUTCOME_OOM,
    CARMA_OUTCOME_CANCELLED,
    CARMA_OUTCOME_LOST,
    CARMA_OUTCOME_FAULT,
    CARMA_OUTCOME_GPU_ERROR,
};

enum carma_queue_id { CARMA_QUEUE_NONE, CARMA_QUEUE_MAIN, CARMA_QUEUE_RECOVERY };

/* Why a job may only go to idle GPUs (struct carma_job's exclusive; stored as this number) */
enum carma_alone {
    CARMA_ALONE_NO,
    CARMA_ALONE_OOM,       /* it ran out of memory and its need is unknown */
    CARMA_ALONE_MPS_FAULT, /* a fault ended every client of its MPS GPU, whose the driver
                              does not say: alone, a failure is its own */
    CARMA_ALONE_COUNT
};

struct carma_job {
    uint64_t id;
    double submit_s;      /* entered the queue (first time) */
    double queued_s;      /* entered its current queue */
    double start_s;       /* last launch; < 0 never launched */
    uint64_t mem_mib;     /* requirement per GPU the reference policies use (oracle or an
                             estimator's answer, chosen by the caller); 0 = none given */
    uint64_t bound_mib;   /* safe bound per GPU (auto): max(estimator bound, declared,
                             peak seen before an OOM); 0 = unknown -> exclusive */
    uint64_t peak_mib;    /* highest per-GPU memory observed over all attempts; at least
                             the GPU's memory after it crashed alone there (OOM) */
    uint64_t held_mib;    /* memory committed on each of its GPUs while running */
    float smact, smocc, drama; /* solo activity estimate 0..1; < 0 unknown; set before
                                  submit */
    float busy;           /* time-slicing busy fraction from smact, set at submit */
    uint16_t gpus;        /* GPUs needed, 1..CARMA_JOB_MAX_GPUS */
    uint16_t nplaced;     /* GPUs held now (0 unless running) */
    uint16_t gpu[CARMA_JOB_MAX_GPUS]; /* running: its GPUs (indices into the GPU view);
                                         queued (auto): the scan_fit GPUs it could use at
                                         its last scan */
    uint16_t attempts;    /* launches so far */
    uint16_t max_attempts;/* 0 = no limit */
    uint8_t state;        /* enum carma_job_state */
    uint8_t queue;        /* enum carma_queue_id */
    uint8_t exclusive;    /* enum carma_alone: may only go to idle GPUs, and why */
    uint32_t prev, next;  /* queue links, CARMA_NONE at the ends */
    uint64_t scan_epoch;  /* auto: it did not fit as of this epoch (0 = never scanned) */
    uint16_t scan_fit;    /* auto: GPUs it could use at that scan (< gpus, listed in gpu[]);
                             bit 15: that scan honoured reservations */
    uint64_t backfill_gen; /* auto, running: the reservation it was backfilled under
                              (struct carma_sched's reserve_gen), 0 = none */
    uint32_t backfill_smact, backfill_busy; /* what its GPUs' backfill books hold of it
                                               (millionths of its SMACT and busy
                                               fraction), which release() takes back */
};

const char *carma_job_state_name(enum carma_job_state s);
/* Returns the state or -1. */
int carma_job_state_parse(const char *name);
const char *carma_outcome_name(enum carma_outcome o);

/* Zeroes a job and sets the fields that must not start at 0 (links, start). */
void carma_job_init(struct carma_job *j, uint64_t id, uint16_t gpus, double submit_s);

#endif
