/* carmad's configuration: defaults, then the INI file (--config), then the
 * command line. INI layout:
 *
 *   [daemon]  policy, gpus, monitor_interval (s), max_attempts, kill_grace (s),
 *             http (ADDR:PORT of /metrics, /v1/gpus, /v1/jobs; off when empty),
 *             max_conns_per_user, max_jobs_per_user, conn_idle_timeout (s),
 *             conn_stall_timeout (s), path_check_timeout (s),
 *             job_retention_days (final jobs older are removed from the store, and their
 *             log folders STATE/jobs/ID from the disk; 0 never),
 *             allow_root_jobs (bool), socket_group, socket_mode (octal)
 *   [monitor] record_interval (s between stored records, 0 none), retention_days,
 *             record_max_mib (bound of the stored records), window (samples)
 *   [sched]   margin_mib, req_margin_mib, free_margin_mib, or_min_free_mib,
 *             grace (s), backfill_depth, max_jobs_per_gpu, learn_coloc (bool),
 *             order (fifo|fair), fair_halflife (s)
 *   [sharing] default = timeslice|mps, and GPU-UUID or index = timeslice|mps */
#ifndef CARMA_DAEMON_CONFIG_H
#define CARMA_DAEMON_CONFIG_H

#include <stdint.h>

#include "core/sched.h"
#include "util/err.h"

#define CARMAD_SHARING_MAX 256

struct carmad_config {
    char policy[64];
    char gpus[256];              /* "" : NVML when its library loads, else sim:4xa100-40gb */
    double monitor_interval_s;   /* > 0 */
    uint32_t max_attempts;       /* default for jobs that give none */
    double kill_grace_s;
    char http[128];              /* "" off */
    double record_interval_s;    /* 10; 0: no records */
    double retention_days;       /* 7 */
    uint64_t record_max_mib;     /* 256: records beyond are pruned, oldest first */
    double job_retention_days;   /* 365: final jobs that ended longer ago are removed from
                                    the store (attempts, accounting, history) and their log
                                    folders from the disk; 0: kept */
    uint32_t window;             /* monitor window in samples, 30 */
    int allow_root_jobs;
    char socket_group[64];       /* "" none; default "carma" when present */
    unsigned socket_group_line;  /* its line in the INI file, 0: the default (a group named
                                    there must exist; the default need not) */
    unsigned socket_mode;        /* 0660 */
    uint32_t max_conns_per_user; /* 64: open connections of one uid (root and carmad's own
                                    uid exempt, within the total) */
    uint32_t max_jobs_per_user;  /* 1000: active (queued or running) jobs of one uid (root
                                    and carmad's own uid exempt); each holds up to its
                                    request's size (1 MiB) of carmad's memory */
    double conn_idle_s;          /* 60: a connection with nothing pending, silent that long,
                                    is closed */
    double conn_stall_s;         /* 30: a connection whose answers went unread that long is
                                    closed */
    double path_check_s;         /* 5: a submission whose cwd or command's folders do not
                                    answer that long is refused (daemon/pathcheck.h) */
    struct carma_sched_params sched;
    int learn_coloc;             /* 1: auto's co-location model is corrected by what the
                                    co-runs carmad observes teach (core/coloc.h) */
    int order_fair;              /* order = fair: the main queue by the submitting users'
                                    GPU time, decayed (docs/daemon.md, Order); 0: FIFO */
    double fair_halflife_s;      /* that decay's half-life, 7 days */
    uint8_t sharing_default;     /* enum carma_sharing */
    struct {
        char gpu[96];            /* UUID or decimal index */
        uint8_t mode;
        uint8_t named;           /* a GPU asked carmad_config_sharing matched it */
        unsigned line;           /* in the INI file */
    } sharing[CARMAD_SHARING_MAX];
    unsigned nsharing;
    uint32_t file_uid;  /* the INI file's owner and mode, as read (carmad_config_load): */
    uint32_t file_mode; /* a root carmad refuses one others may change */
};

void carmad_config_default(struct carmad_config *c);

/* Reads an INI file over c. Errors name "FILE:LINE: problem". */
int carmad_config_load(struct carmad_config *c, const char *path, struct carma_err *err);

/* The sharing mode configured for a GPU given its index and UUID (the first entry that
 * names it); marks every entry that names it. */
uint8_t carmad_config_sharing(struct carmad_config *c, unsigned index, const char *uuid);

/* Once every GPU was asked: the first [sharing] entry that named none (its line in
 * *line), or NULL. */
const char *carmad_config_sharing_unnamed(const struct carmad_config *c, unsigned *line);

#endif
