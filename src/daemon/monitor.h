/* The monitor inside carmad (DESIGN.md §7): one tick per monitor interval samples
 * every GPU through the backend, keeps a ring of recent samples per GPU, pushes the
 * scheduler's windows (SMACT, SMOCC, DRAMA), maps the GPU's processes to carma jobs
 * through a callback, integrates energy, and downsamples the samples into records
 * for the store.
 *
 * Signals a GPU lacks are absent (negative), never zero. The windows the policies
 * read fall back and say so once per GPU through the log callback:
 *   SMACT  <- DCGM 1002 / GPM, else NVML utilisation ("kernel running" ratio, an
 *             upper bound of SMACT: the gate errs on the safe side)
 *   DRAMA  <- DCGM 1005 / GPM, else NVML memory utilisation
 *   SMOCC  <- DCGM 1003 / GPM, else absent (the CARMA gate then reads DRAMA only)
 * A GPU whose sample says lost (GPU_IS_LOST) is drained at once; one that fails
 * CARMA_MON_FAIL_LIMIT samples in a row is drained as "stopped answering". A drained
 * GPU stays drained until carmad restarts or an administrator undrains it
 * (carma_mon_undrain). Neither is fatal.
 *
 * Single-threaded: called from the daemon's loop only. Never prints. */
#ifndef CARMA_DAEMON_MONITOR_H
#define CARMA_DAEMON_MONITOR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/gpu.h"
#include "core/sched.h"
#include "gpu/backend.h"

#define CARMA_MON_RING 600        /* raw samples kept per GPU (10 min at 1 s) */
#define CARMA_MON_FAIL_LIMIT 3    /* failed samples in a row before a GPU is drained */
#define CARMA_MON_PENDING_MAX 4096 /* records waiting for the store, all GPUs */

/* One raw sample, compact. Negative: absent. */
struct carma_mon_sample {
    double t;          /* wall clock, seconds since the epoch */
    double energy_j;   /* the GPU's counter (since driver load) */
    float mem_used_mib, mem_free_mib;
    float util, util_mem, smact, smocc, drama, tensor, power_w;
};

/* One downsampled record (what the store keeps): means over the bucket of the
 * signals present, the highest memory in use, the energy spent during it. */
struct carma_mon_record {
    uint32_t gpu;      /* index */
    double t;          /* end of the bucket */
    uint64_t mem_mib;  /* highest in use during the bucket */
    float util, smact, smocc, drama, tensor, power_w; /* means, < 0 absent */
    double energy_j;   /* spent during the bucket, < 0 unknown */
};

/* Signals, for the "which signal is absent" bookkeeping. */
enum carma_mon_sig {
    CARMA_MON_SMACT, CARMA_MON_SMOCC, CARMA_MON_DRAMA, CARMA_MON_TENSOR, CARMA_MON_UTIL,
    CARMA_MON_UTIL_MEM, CARMA_MON_POWER, CARMA_MON_ENERGY, CARMA_MON_NSIG
};

struct carma_mon_bucket {
    double t0;
    uint32_t n[CARMA_MON_NSIG];
    double sum[CARMA_MON_NSIG];
    uint64_t mem_max;
    double energy_j;
    int energy_known;
};

/* A signal's absence is logged from a GPU's CARMA_MON_NOTE_AFTER-th successful sample on:
 * the profiling metrics of NVML GPM and DCGM are means over the interval since the sample
 * before, and the first interval, opened moments before at startup, can lack one (seen on
 * an H100: DRAMA absent from the first GPM sample only). */
#define CARMA_MON_NOTE_AFTER 3
_Static_assert(CARMA_MON_NOTE_AFTER <= CARMA_MON_RING, "the ring counts the first samples");

struct carma_mon_gpu {
    struct carma_gpu_info info;
    struct carma_gpu_sample last; /* the last successful sample */
    int have;                 /* at least one successful sample */
    unsigned failures;        /* failed samples in a row */
    int drained;              /* drained: lost, stopped answering, an Xid, carma drain */
    char drain_reason[256];   /* "is lost", "stopped answering ...", "reported Xid ...",
                                 "drained by root at ...: ..." */
    uint32_t present;         /* bit per enum carma_mon_sig: in the last sample */
    uint32_t noted;           /* bits whose absence was already logged */
    struct carma_mon_sample ring[CARMA_MON_RING];
    uint32_t head, len;       /* ring: next write, samples held */
    double prev_t;            /* time of the previous successful sample, < 0 none */
    double prev_counter_j;    /* energy counter at prev_t, < 0 absent */
    double tick_energy_j;     /* energy over the last tick (counter delta, else power x
                                 dt); 0 when unknown */
    double tick_dt;           /* seconds the last tick covered */
    double energy_total_j;    /* since carmad started */
    int energy_known;         /* a sample had a counter or power: energy_total_j is a
                                 measure (else unknown, not 0 J) */
    int procs_failed;         /* its process list failed since it last answered (logged once) */
    int procs_absurd;         /* a process said to use more than the GPU has (logged once) */
    uint64_t procs_tick;      /* the tick (carma_monitor.ticks after it) of its last list */
    uint32_t nprocs;          /* processes seen at the last tick */
    struct carma_mon_bucket bucket;
    uint64_t xids;     /* critical Xids the driver reported since carmad started (but
                          those a full backend queue dropped) */
    uint64_t last_xid; /* the last of them (valid when xids > 0) */
    double last_xid_t; /* when it came (wall clock s) */
};

/* Callbacks into the daemon. */
struct carma_mon_hooks {
    void *ctx;
    /* A process on GPU gi using mem_bytes (UINT64_MAX unknown, also when the backend
     * said more than the GPU has): returns 1 when it belongs to a carma job on this GPU
     * (the daemon records the job's memory), 2 when it is the MPS server of carma's jobs
     * there (neither a job's nor foreign: its memory is in the GPU's use, it makes no job
     * share the GPU), 0 when foreign. */
    int (*proc)(void *ctx, unsigned gi, pid_t pid, uint64_t mem_bytes);
    /* A line for the log (syslog priority). */
    void (*log)(void *ctx, int prio, const char *msg);
};

struct carma_monitor {
    struct carma_gpu_backend *gb;  /* not owned */
    struct carma_gpu *view;        /* not owned: the scheduler's GPU view, n entries */
    struct carma_sched *sched;     /* not owned; NULL: no change reports */
    size_t n;
    struct carma_mon_gpu *g;       /* owned, n entries */
    struct carma_mon_hooks hooks;
    double record_s;               /* bucket length of the records; 0: no records */
    struct carma_mon_record *pending; /* owned: records not yet taken */
    size_t npending;
    uint64_t dropped;              /* records lost because nobody took them */
    uint64_t ticks;
    uint64_t tick_ns_total;        /* CPU-free wall time spent in ticks (for /metrics) */
};

/* Sets the monitor up over n GPUs already counted (infos read from the backend).
 * view[0..n) must be initialised by the caller (carma_gpu_init). record_s <= 0
 * disables records. Returns 0, or a negative errno with err set. */
int carma_mon_init(struct carma_monitor *m, struct carma_gpu_backend *gb, struct carma_gpu *view,
                   size_t n, struct carma_sched *sched, const struct carma_mon_hooks *hooks,
                   double record_s, struct carma_err *err);
void carma_mon_free(struct carma_monitor *m);

/* One tick at wall time `now`: samples every GPU that is not drained, refreshes the
 * view's monitor fields (memory in use, windows, processes) and reports each GPU whose
 * fields changed to the scheduler. Returns the number of GPUs drained by this tick. */
int carma_mon_tick(struct carma_monitor *m, double now);

/* Drains GPU gi (no new jobs go to it until it is undrained or carmad restarts) for the
 * reason why (e.g. "reported Xid 48 ..."), logs it and tells the scheduler. Returns 1
 * when it was not drained before, 0 when it was (its reason is kept). */
int carma_mon_drain(struct carma_monitor *m, size_t gi, const char *why);

/* Replaces the reason of drained GPU gi with why (a graver one: a reset it now needs),
 * logged as carma_mon_drain logs a drain. Returns 1, or 0 when it is not drained. */
int carma_mon_redrain(struct carma_monitor *m, size_t gi, const char *why);

/* Puts drained GPU gi back in service: no longer drained in the monitor or the
 * scheduler's view, sampled again from the next tick (a GPU still lost or silent is
 * drained again then), the scheduler told. Returns 1, or 0 when it was not drained. */
int carma_mon_undrain(struct carma_monitor *m, size_t gi);

/* Whether GPU gi is lost (GPU_IS_LOST): drained for that, never sampled again. */
int carma_mon_lost(const struct carma_monitor *m, size_t gi);

/* Whether GPU gi is lost, asking its backend now when the monitor does not know it yet
 * (one sample, its figures not kept: a job that failed as its GPU fell off the bus may
 * end before the next tick): a GPU found lost is drained as a tick drains it, the
 * scheduler told. 1 lost, 0 not (or gi out of range). */
int carma_mon_probe_lost(struct carma_monitor *m, size_t gi);

/* Why GPU gi may not be put back in service now, or NULL when it may: it is lost (a lost
 * GPU is never asked again, so nothing here can tell it is back), or its last
 * CARMA_MON_FAIL_LIMIT samples or more failed (it has not answered since it stopped).
 * Undrained, either would take new jobs until the next samples drained it again. */
const char *carma_mon_unready(const struct carma_monitor *m, size_t gi);

/* Counts critical Xid `xid`, reported count times, on GPU gi at wall time now. */
void carma_mon_xid(struct carma_monitor *m, size_t gi, uint64_t xid, uint32_t count, double now);

/* The i-th newest raw sample of GPU gi (0 = the last), or NULL. */
const struct carma_mon_sample *carma_mon_recent(const struct carma_monitor *m, size_t gi,
                                                uint32_t i);

/* Moves the pending records to the caller: *out points at them (valid until the next
 * tick), returns their count, and forgets them. */
size_t carma_mon_take_records(struct carma_monitor *m, const struct carma_mon_record **out);

/* Shares `energy_j` among n co-runners by activity: weight[k] >= 0 is a runner's
 * activity, a negative weight means unknown and counts as the mean of the known ones
 * (1 when none is known). out[k] receives its share; the shares sum to energy_j.
 * Foreign processes are passed as runners too; their shares are simply not booked. */
void carma_mon_share_energy(double energy_j, const float *weight, size_t n, double *out);

#endif
