/* The scheduler: a pure step shared by carmad and the simulator. Given the queues,
 * the GPU view and the policy it returns placements; time is passed in, nothing is
 * read from a clock, no I/O, no allocation after init.
 *
 * Usage: init with caller-owned job and GPU arrays; submit jobs; on every event
 * (submit, exit, monitor sample, timer) call step() and launch what it returns;
 * report each attempt's end with finish(). The view's monitor fields are the
 * caller's to refresh; the committed fields are the scheduler's. */
#ifndef CARMA_CORE_SCHED_H
#define CARMA_CORE_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "core/coloc.h"
#include "core/gpu.h"
#include "core/job.h"
#include "core/policy.h"

struct carma_sched_params {
    /* CARMA's constants (DESIGN.md §9). */
    uint64_t free_margin_mib;  /* free = last sample - 512 */
    uint64_t req_margin_mib;   /* free >= requirement + 2048 */
    uint64_t or_min_free_mib;  /* or-*: free >= 5120 */
    double grace_s;            /* 30 s after a launch: a GPU takes a job once more passed */
    float gate_smact, gate_smocc, gate_drama; /* 0.80, 0.45, 0.40 */
    /* auto. */
    uint64_t margin_mib;       /* kept free beyond the bounds, 512 */
    uint32_t backfill_depth;   /* queued jobs looked at behind a blocked one, 256 */
    uint32_t max_jobs_per_gpu; /* co-runners per GPU, 16 (MPS allows 48 clients) */
    float min_gain;            /* auto collocates only where the GPU's throughput rises by
                                  at least this share of what a GPU of its own would give
                                  the job (0.25; docs/model.md shows why: below it a pair
                                  mostly time-shares a saturated GPU and stretches both
                                  jobs, while 0.5 already refuses pairs that pay when jobs
                                  are less SM-bound) */
    int scan_all;              /* 1: auto scans for every job, and offers every GPU to a
                                  new job in index order: no answers from earlier scans of
                                  the same shape or of the job itself (a waiting job's
                                  GPUs changed since), no shortcut through the GPUs that
                                  can give it its whole weight (the same choices, slower:
                                  the tests' reference); 0 by default */
    int mps_cap;               /* 1: a job's clients on an MPS GPU are capped at its hold plus
                                  margin_mib (carmad sets CUDA_MPS_PINNED_DEVICE_MEM_LIMIT);
                                  0 by default: the simulator's GPUs run out as a whole */
};

void carma_sched_params_default(struct carma_sched_params *p);

/* An intrusive FIFO over job indices. */
struct carma_queue {
    uint32_t head, tail;
    uint32_t len;
};

/* The facts of one GPU that auto's scan reads, copied from struct carma_gpu by every
 * carma_sched_gpu_changed and packed into 32 bytes, so that a full scan of a thousand
 * GPUs reads 32 KiB in order instead of a cache line of each 1.5 KiB view. */
enum carma_slot_flag {
    CARMA_SLOT_DRAINED = 1,    /* lost or draining */
    CARMA_SLOT_IDLE = 2,       /* idle (no process) and not drained */
    CARMA_SLOT_RESERVED = 4,   /* held for a blocked job (auto) */
    CARMA_SLOT_UNPROFILED = 8, /* runs a job without a solo profile, or one without the
                                  MPS cap the others have (nuncapped): auto adds none */
    CARMA_SLOT_VACANT = 16,    /* no carma job and not drained: a GPU of its own for a job
                                  that runs alone, whatever foreign processes use (auto) */
};

struct carma_sched_slot {
    int64_t avail;               /* memory a new job may take (auto) */
    float tput;                  /* predicted aggregate throughput now (auto) */
    float prof_smact, prof_busy; /* struct carma_gpu's */
    uint32_t njobs, gpu_weight;  /* struct carma_gpu's */
    uint8_t sharing;             /* struct carma_gpu's */
    uint8_t flags;               /* enum carma_slot_flag */
    uint16_t kind;               /* struct carma_gpu's */
};

/* auto: a scan that found too few usable GPUs, by the shape of the job (all that a scan
 * reads of it). Another job of that shape looked at before any GPU changed (the same
 * epoch) finds the same GPUs usable, so in a long queue of a few kinds of job most scans
 * are answered from here. */
#define CARMA_SCHED_MISSES 64
struct carma_sched_miss {
    uint64_t epoch; /* when it was found; 0: an empty entry */
    uint64_t need;
    uint32_t sm_bits, busy_bits; /* the floats' bits: a NaN matches itself */
    uint16_t gpus, nfit;
    uint8_t flags;                    /* AUTO_* of sched.c */
    uint16_t fit[CARMA_JOB_MAX_GPUS]; /* the GPUs it could use, nfit < gpus */
};

/* auto: the best GPUs a scan of every GPU found for a job, by the shape of the job (as
 * carma_sched_miss), with their gains, in auto_offer's order (gain, memory fit, index).
 * A later job of that shape re-judges only the GPUs changed since (the change log) and
 * those reserved now (a reservation is made without logging its GPUs, and only the
 * reserved GPUs' gains depend on it): every other GPU has the gain it had, so it still ranks below
 * the last of the list not changed, and the best of the list's unchanged GPUs and the re-judged
 * ones are the best of all GPUs down to that one. In a long queue on many GPUs most run jobs and
 * may take one more, and a job that fits among them judged every GPU of the cluster again (kept on
 * 4096 GPUs or more: below, a scan of every GPU costs little more than keeping the list). */
#define CARMA_SCHED_TOPS 256
#define CARMA_SCHED_TOP_LEN 512
#define CARMA_SCHED_TOP_MIN_GPUS 4096 /* fewer GPUs: no lists (top is NULL) */
struct carma_sched_top {
    uint64_t epoch; /* of the scan; 0: an empty entry */
    uint64_t need;
    uint32_t sm_bits, busy_bits;
    uint16_t gpus, n; /* the shape's GPU count; entries of gpu[] */
    uint8_t flags;    /* AUTO_* of sched.c */
    uint8_t all;      /* every GPU usable then is in gpu[] */
    uint16_t gpu[CARMA_SCHED_TOP_LEN];
    float gain[CARMA_SCHED_TOP_LEN];
};

/* auto: idle GPUs grouped by the memory a new job may take on them (a cluster's idle
 * GPUs of one kind share it), so that a new job looks at the few best of each group
 * instead of at every idle GPU. An idle GPU that finds no group (every bucket holds
 * another amount) is scanned one by one, as the GPUs in `first` are. */
#define CARMA_SCHED_BUCKETS 8
#define CARMA_SCHED_NO_BUCKET 0xffu
struct carma_sched_bucket {
    int64_t avail;  /* of every GPU in it */
    uint32_t count; /* GPUs in it; 0: unused */
};

/* The GPU kinds auto keeps a learnt co-location correction for (carma_sched_set_coloc): a
 * server holds one to three. */
#define CARMA_SCHED_COLOC_KINDS 8

/* auto: what jobs backfilled behind a blocked job (the holder) take of one GPU reserved
 * for it. SM demands in millionths (integers, so that they subtract exactly). */
struct carma_sched_backfill {
    uint64_t mib;          /* their holds */
    uint32_t smact, busy;  /* their solo SMACT and time-slicing busy fractions */
    uint32_t njobs, weight; /* how many, and the GPUs each holds, summed */
};

/* auto: the holder as auto_backfill_fits needs it. */
struct carma_sched_holder {
    uint64_t mib;          /* its hold per GPU (capped at its GPUs' memory) */
    uint32_t smact, busy;  /* millionths */
    uint16_t weight;       /* its GPU count */
    uint8_t alone;         /* it runs alone: nothing may be backfilled beside it */
};

struct carma_sched {
    struct carma_job *jobs; /* not owned; the caller may move it (set s->jobs again) */
    struct carma_gpu *gpus; /* not owned */
    size_t ngpus;
    const struct carma_policy *policy;
    struct carma_sched_params p;
    struct carma_queue main, recovery;
    uint32_t rr_next;       /* or-rr's pointer */
    uint32_t *scratch;      /* ngpus entries, owned */
    struct carma_sched_slot *slot; /* ngpus: what auto's scan reads of each GPU, owned */
    uint32_t *changelog;    /* ring: GPU changed at each epoch (auto), owned */
    uint64_t epoch;         /* count of GPU changes */
    uint32_t vacant;        /* GPUs without a carma job, not drained (CARMA_SLOT_VACANT) */
    struct carma_sched_miss miss[CARMA_SCHED_MISSES]; /* direct-mapped by shape */
    struct carma_sched_top *top; /* CARMA_SCHED_TOPS, direct-mapped by shape, owned; NULL
                                    below CARMA_SCHED_TOP_MIN_GPUS GPUs */
    /* auto_reserve's order of the GPUs in service (memory not committed, less what other
     * processes use [0] or not [1], most first, then index), as tournament trees over
     * rsize leaves (a power of two >= ngpus; tree[k][1] the first, tree[k][rsize + gi]
     * GPU gi or CARMA_NONE when drained) kept by carma_sched_gpu_changed, so that a
     * reservation takes the first GPUs that can hold the job instead of looking at every
     * GPU; rkey[k][gi]: the memory it ranks by. Owned; NULL below
     * CARMA_SCHED_TOP_MIN_GPUS GPUs, as `top`. */
    uint32_t *rtree[2];
    int64_t *rkey[2];
    size_t rsize;
    uint64_t *first;        /* ngpus bits: GPUs in service that can give a new job its whole
                               weight (no carma job, or time-sliced), which auto scans
                               first, but for the idle ones in a bucket, owned */
    struct carma_sched_bucket bucket[CARMA_SCHED_BUCKETS];
    uint64_t *bucket_bits;  /* CARMA_SCHED_BUCKETS bit sets of ngpus bits: each bucket's
                               GPUs, owned */
    uint8_t *bucket_of;     /* ngpus: an idle GPU's bucket, or CARMA_SCHED_NO_BUCKET, owned */
    uint32_t *seen;         /* ngpus: stamp of the last scan that offered the GPU, owned */
    uint32_t stamp;
    uint32_t holder;        /* auto: the blocked job the reserved GPUs are held for */
    uint64_t reserve_gen;   /* auto: counts reservations made (0: none yet) */
    struct carma_sched_holder holder_of; /* auto: the holder's facts, as it was reserved */
    uint16_t reserved[CARMA_JOB_MAX_GPUS]; /* auto: the GPUs held for it, nreserved of them */
    uint16_t nreserved;
    struct carma_sched_backfill *backfill; /* ngpus: the jobs backfilled onto each reserved
                                              GPU under the current reservation, owned */
    uint64_t *live_total;   /* ngpus: each GPU's memory as last seen, 0 when drained, owned */
    uint64_t *by_size;      /* ngpus: those memories, largest first, owned */
    int sizes_stale;        /* by_size needs sorting again */
    /* Islands (carma_gpu.island, read at init): with more than one, auto places a job on
     * several GPUs within one where that costs it nothing (auto_choose_islands). */
    uint32_t nislands;      /* the largest island + 1 */
    uint32_t *by_island;    /* nislands > 1: the GPUs by island, then index; owned */
    uint32_t *island_at;    /* nislands > 1: island i's are by_island[island_at[i] ..
                               island_at[i + 1]); owned */
    /* auto: the co-location model's corrections learnt from observed co-runs (carmad;
     * carma_sched_set_coloc), coloc[k] for the GPUs of kind k < ncoloc. */
    struct carma_coloc_learnt coloc[CARMA_SCHED_COLOC_KINDS];
    uint32_t ncoloc;
    uint64_t placements;    /* counters */
    uint64_t judged;        /* GPUs auto's scans judged for a job (auto_gain): a step's cost */
};

/* A placement: job index; its GPUs are in jobs[job].gpu[0..gpus). */
struct carma_placement {
    uint32_t job;
};

int carma_sched_init(struct carma_sched *s, struct carma_job *jobs, struct carma_gpu *gpus,
                     size_t ngpus, const struct carma_policy *policy,
                     const struct carma_sched_params *params);
void carma_sched_free(struct carma_sched *s);

/* Queues job `j` (state QUEUED, main queue) at time now. */
void carma_sched_submit(struct carma_sched *s, uint32_t j, double now);

/* Queues job j at the back of the recovery queue (a job that crashed before the
 * caller restarted, say). */
void carma_sched_submit_recovery(struct carma_sched *s, uint32_t j, double now);

/* Marks job j, in no queue, as running since `start` on the n GPUs gpu[] without
 * counting an attempt: a job found still running when carmad restarts. n may be 0 (or
 * fewer than the job ran on) when its GPUs are no longer among this server's: it runs
 * on, holding only those it still has, until it ends. `seen`: when its process was first
 * seen on one of its GPUs (carma_sched_job_seen before the restart), < 0 not yet: the
 * grace of a GPU whose last launch it is runs from then, or, not yet seen, from its start
 * until carma_sched_job_seen moves it, as for the job launched (the time applies to all
 * its GPUs: when it appeared on each is not kept). */
void carma_sched_adopt(struct carma_sched *s, uint32_t j, const uint16_t *gpu, uint16_t n,
                       double start, double seen);

/* Job j, running, has a process on GPU gi at `now` (carmad's monitor; the simulator's
 * processes are there from the launch). CARMA's grace holds a GPU "until the job's
 * process has been on the GPU for 30 s": when j is the GPU's last launch and this is
 * the first time its process is seen there, the grace runs from `now`. O(1). */
void carma_sched_job_seen(struct carma_sched *s, uint32_t j, uint32_t gi, double now);

/* Sets job j's solo profile (smact < 0: unknown) while it runs alone on every GPU it
 * holds (carmad measures it there), keeping the GPUs' profile sums and auto's backfill
 * books in step with it. */
void carma_sched_set_profile(struct carma_sched *s, uint32_t j, float smact, float smocc,
                             float drama);

/* auto predicts co-runs with the model corrected by l[k] on the GPUs of kind k
 * (carma_gpu.kind; carmad learns one per kind from observed co-runs, carma_coloc_observe:
 * how far the model is off differs between GPUs, docs/model.md): the first
 * min(n, CARMA_SCHED_COLOC_KINDS) are copied; a GPU of a kind past them, and every GPU with
 * n = 0, is predicted by the model alone (the default). A correction raises no rate above
 * what jobs that fit in the SMs together get (under MPS 1 / (1 + alpha (n - 1)), under
 * time-slicing 1), nor the rate of a GPU's jobs when one more joins them above theirs now,
 * so a shared GPU never outbids one of the job's own. Every waiting job's next scan is a
 * full one. O(GPUs). */
void carma_sched_set_coloc(struct carma_sched *s, const struct carma_coloc_learnt *l, size_t n);

/* Orders the main queue by key[job index] ascending (the caller's array, one entry per
 * job slot; carmad: the submitting user's decayed GPU time, order = fair), stably: jobs
 * of equal keys keep their order, so a user's jobs stay in the order submitted. The
 * recovery queue, served first, keeps its own. Every policy reads the queue in its new
 * order from the next step. NaN keys go last. O(n log r), n the queue's length and r the
 * runs of it already in order (O(n) for a queue in order: nothing is written then); no
 * allocation. */
void carma_sched_order(struct carma_sched *s, const double *key);

/* Job j's place in the order the next step reads the queues (1: first; the recovery
 * queue before the main one), 0 when it is not queued. O(its place). */
uint32_t carma_sched_position(const struct carma_sched *s, uint32_t j);

/* Removes a queued job (cancel). Returns 0, or -ENOENT when it is not queued. */
int carma_sched_dequeue(struct carma_sched *s, uint32_t j);

/* Decides at time now. Writes at most cap placements to out and returns their number;
 * each placed job is RUNNING, holds its GPUs, and its attempt counter is raised. */
size_t carma_sched_step(struct carma_sched *s, double now, struct carma_placement *out,
                        size_t cap);

/* After a step at `now` that placed nothing: the earliest later time at which a step
 * could place a job with the queues and the GPU view as they are (a grace window
 * ending), or HUGE_VAL when there is none. A caller deciding on a clock (CARMA's 1 s
 * loop) may skip the ticks before it while nothing else changes. */
double carma_sched_next_timer(const struct carma_sched *s, double now);

/* Ends the running attempt of job j with `outcome`; `peak_mib` is the highest
 * per-GPU memory it reached (0 unknown). OOM: back to the recovery queue with its
 * bound raised to the peak (or exclusive when unknown) unless attempts are used up,
 * then state OOM. FAULT: back to the recovery queue, bound unchanged. GPU_ERROR: the
 * same while attempts remain, else state FAILED. Others: final.
 * Returns 1 when the job was re-queued, 0 when it reached a final state. */
int carma_sched_finish(struct carma_sched *s, uint32_t j, enum carma_outcome outcome,
                       uint64_t peak_mib, double now);

/* Has queued job j run alone from now on (exclusive, for why: not CARMA_ALONE_NO), as an
 * OOM whose need is unknown does. Returns 0, or -EINVAL when j is not queued or why is
 * out of range. */
int carma_sched_run_alone(struct carma_sched *s, uint32_t j, enum carma_alone why);

/* Whether jobs on MPS GPUs get limits (p.mps_cap: a memory cap, carma_sched_mps_cap_mib,
 * and a share of the SMs): never under CARMA's reference policies, which set neither (a
 * job there that outgrows its requirement runs on until the GPU itself is full, as in
 * CARMA and in the simulator). */
int carma_sched_mps_limits(const struct carma_sched *s);

/* The memory job j's clients are capped at on its MPS GPUs (p.mps_cap), 0 for none: its
 * hold plus the margin, none without a hold, and none once an OOM gave it GPUs of its own
 * (exclusive): the same cap would crash it again. */
uint64_t carma_sched_mps_cap_mib(const struct carma_sched *s, const struct carma_job *j);

/* Tells the scheduler that the caller changed GPU gi's monitor fields (memory in use,
 * foreign processes, drained). auto re-examines waiting jobs only against GPUs that
 * changed, so a monitor refresh must be reported. */
void carma_sched_gpu_changed(struct carma_sched *s, uint32_t gi);

/* Whether fewer GPUs are in service than job j asks for (some drained: lost, MIG): it
 * waits for them, holding back no one (every policy passes over it). */
int carma_sched_beyond_service(struct carma_sched *s, uint32_t j);

/* The memory that at least k GPUs in service have (the k-th largest), 0 when fewer
 * than k are in service. A job on k GPUs that needs more per GPU can only run alone on
 * the k largest (auto), or rerun where it crashed (the reference policies). */
uint64_t carma_sched_kth_largest(struct carma_sched *s, uint16_t k);

/* Why a queued job is not running: one code for the decisive reason (the names are the
 * CLI's and the JSON's) and a sentence with the figures. Reasons, as carma_sched_why
 * picks them: beyond_service first (every policy passes over such a job); then whether
 * the step looks at the job at all (behind; waiting when a job ahead can start now, which
 * changes what this one will find); then the job's own fit. There every GPU is judged by
 * the policy's rules, and a GPU that refuses the job ranks by its most lasting obstacle,
 * soonest cleared first: grace, gate, interference, reserved, resources (memory, a GPU
 * full of jobs, a job that must run alone there), exclusive (this job must run alone and
 * the GPU holds others), resources (a GPU too small for what the job needs of it alone).
 * The code is the rank at which enough GPUs would be usable: what must clear first. */
enum carma_why {
    CARMA_WHY_PLACING,        /* it fits now: the next step starts it */
    CARMA_WHY_BEYOND_SERVICE, /* asks for more GPUs than are in service (some drained) */
    CARMA_WHY_BEHIND,         /* the step does not look at it: the reference policies place
                                 the head of the queue only (the recovery queue's first);
                                 auto looks at backfill_depth jobs behind a blocked one */
    CARMA_WHY_WAITING,        /* a job ahead of it can start now (or gets GPUs held for it
                                 first): its turn comes after that */
    CARMA_WHY_GRACE,          /* reference: GPUs in the grace after a launch */
    CARMA_WHY_GATE,           /* reference: SMACT with SMOCC or DRAMA above the gate */
    CARMA_WHY_INTERFERENCE,   /* auto: collocating would not raise a GPU's throughput by
                                 min_gain */
    CARMA_WHY_RESERVED,       /* auto: GPUs held for the first job that cannot start */
    CARMA_WHY_RESOURCES,      /* too little memory, GPUs full or held by jobs that run
                                 alone */
    CARMA_WHY_EXCLUSIVE,      /* it must run alone (idle GPUs, or ones without a carma job)
                                 and too few are */
    CARMA_WHY_COUNT
};

const char *carma_why_name(enum carma_why w);

#define CARMA_WHY_TEXT 512
struct carma_sched_why {
    uint8_t code; /* enum carma_why */
    char text[CARMA_WHY_TEXT];
};

/* Explains at `now` why queued job j is not running, by the active policy's rules on the
 * queues and GPU view as they are (not as the last step saw them): O(GPUs) for the
 * reference policies, O(GPUs x jobs ahead, at most backfill_depth) for auto. Changes no
 * state the step reads; never called by a step. Returns 0, or -ENOENT when j is not
 * queued. */
int carma_sched_why(struct carma_sched *s, uint32_t j, double now, struct carma_sched_why *out);

/* Queued jobs in both queues. */
static inline uint32_t carma_sched_queued(const struct carma_sched *s)
{
    return s->main.len + s->recovery.len;
}

#endif
