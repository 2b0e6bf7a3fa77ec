/* The job store: SQLite in WAL mode, synchronous=FULL, STRICT tables, a schema
 * version (PRAGMA user_version) brought forward by migrations on open.
 *
 * Every change of a job's state is written inside a transaction the caller opens
 * with carma_store_begin() and ends with carma_store_commit(); the daemon
 * acknowledges a request only after its commit returned 0. Functions return 0 or
 * a negative errno (-ENOSPC for a full disk, -EIO otherwise) with err saying why. */
#ifndef CARMA_DAEMON_STORE_H
#define CARMA_DAEMON_STORE_H

#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "core/coloc.h"
#include "proto/proto.h"
#include "util/err.h"

#define CARMA_STORE_SCHEMA_VERSION 21

struct carma_store;

/* The umask of a job stored without its submitter's. */
#define CARMA_JOB_UMASK_DEFAULT 022

/* One job row. Strings are owned by the record (carma_job_rec_clear frees them). */
struct carma_job_rec {
    uint64_t id;
    char *name;      /* never NULL once loaded ("" when none) */
    char *user;
    char *cwd;
    char *argv_json; /* JSON array of strings */
    char *env_json;  /* JSON object, already filtered */
    char *summary;   /* NULL: none */
    char *reason;    /* NULL: none; why it ended (error text, classification) */
    char *bound_basis; /* NULL: not recorded; what the bound at submission came from */
    uint64_t hist_sig; /* est_job_signature, written on insert only (read back); 0: none (NULL) */
    int umask;         /* the submitter's umask (0..0777), written on insert only; -1: none
                          (NULL: stored before schema 8 or not sent), the job runs with
                          CARMA_JOB_UMASK_DEFAULT */
    char *rlimits;     /* the submitter's resource limits (util/rlimits.h text), written on
                          insert only; NULL: none (stored before schema 12, or carmad is
                          not root, or root submitted it): the job has carmad's */
    char *after;       /* the jobs it runs after (carma submit --after), a JSON array of
                          their ids as submitted ("[12,13]"), written on insert only; NULL:
                          none (and every job stored before schema 20) */
    uint32_t uid, gid;
    uint32_t time_limit_s; /* wall seconds each attempt may run from its start (carma submit
                              --time-limit), written on insert only; 0: no limit (NULL) */
    uint32_t gpus, max_attempts, attempts, batch;
    uint64_t mem_mib, bound_mib, peak_mib;
    int state;       /* enum carma_job_state */
    int exclusive;
    int cancel_requested;
    double submit_s, start_s, end_s; /* < 0: not yet */
    int exit_code;   /* -1: none */
    int signal;      /* 0: none */
    /* Accounting over the attempts that ended (read only; the daemon adds the
     * running attempt): seconds run, GPU-seconds, joules. */
    double run_s, gpu_s, energy_j;
};

void carma_job_rec_clear(struct carma_job_rec *r);

/* Takes group and other access from the regular file name in dirfd (AT_FDCWD: a
 * path), when it exists; the last component is not followed. 1 when its mode was
 * changed, else 0. */
int carma_file_private_at(int dirfd, const char *name);

/* Longest PRAGMA quick_check at open, in seconds (then the store is used unchecked). */
#define CARMA_STORE_CHECK_S 10.0

/* Opens (creating) the store at path, checks it and migrates it. The database file
 * (created 0600, or made 0600 if group or others could open it) and its -wal and -shm
 * must be carmad's alone: they hold every job's environment. A store that
 * PRAGMA quick_check finds damaged is refused (-EIO, err says what is wrong) before
 * anything is written to it; one it cannot read for another reason (a full disk: -ENOSPC,
 * a read-only folder, a lock held) is refused without being called damaged. An existing
 * store at an older schema version is copied before it is migrated
 * (carma_store_pre_migration_copy). test hook: when the
 * environment has CARMA_TEST_STORE_MAX_PAGES=N the database may not grow by more
 * than N pages beyond its size after opening (a real SQLITE_FULL, for full-disk
 * tests). */
int carma_store_open(struct carma_store **out, const char *path, struct carma_err *err);
void carma_store_close(struct carma_store *st);

/* The schema version found on disk before migration (0 for a new file). */
int carma_store_version_found(const struct carma_store *st);

/* The copy carma_store_open keeps of a store it migrates, made before the first step
 * (docs/daemon.md, "Upgrading, and going back"): PATH.vN, N the version found, written
 * consistent (VACUUM INTO) with the store's owner and mode (at most 0600). A copy of
 * that name that exists is kept (the oldest); one that cannot be written refuses the
 * migration (err names the copy, why, and what to do; the store is left as it was). A new
 * store (no table) gets none. Returns the copy's path, *made CARMA_STORE_COPY_MADE or
 * _KEPT, or NULL (*made 0) when there was no migration or no copy. */
#define CARMA_STORE_COPY_MADE 1
#define CARMA_STORE_COPY_KEPT 2
const char *carma_store_pre_migration_copy(const struct carma_store *st, int *made);

/* Which files carma_store_open found open to group or others and made 0600. */
#define CARMA_STORE_FIXED_DB 1u
#define CARMA_STORE_FIXED_WAL 2u
#define CARMA_STORE_FIXED_SHM 4u
unsigned carma_store_modes_fixed(const struct carma_store *st);
/* 1 when the integrity check at open ran out of time (CARMA_STORE_CHECK_S). */
int carma_store_check_incomplete(const struct carma_store *st);

/* The highest job id ever stored (0: none). */
int carma_store_max_job_id(struct carma_store *st, uint64_t *id, struct carma_err *err);
/* The ids of the stored jobs below `below`, ascending, into *ids (malloc'd, the
 * caller's to free; NULL when *n is 0): what the sweep of job folders the retention
 * left behind compares STATE/jobs with. */
int carma_store_job_ids(struct carma_store *st, uint64_t below, uint64_t **ids, size_t *n,
                        struct carma_err *err);

int carma_store_begin(struct carma_store *st, struct carma_err *err);
int carma_store_commit(struct carma_store *st, struct carma_err *err);
/* Rolls back the open transaction, if any. */
void carma_store_rollback(struct carma_store *st);
int carma_store_in_tx(const struct carma_store *st);

/* A group of writes inside the open transaction, all or nothing: a statement that fails
 * may leave the transaction open with the group's earlier writes in it (SQLite rolls
 * back only that statement on a constraint, and on some SQLITE_FULL or IOERR), which
 * its commit would keep. carma_store_savepoint() marks the transaction as it is (one
 * savepoint at a time; a transaction must be open); then either
 * carma_store_release() keeps the writes since, which its commit or rollback then
 * takes with the rest, or carma_store_rollback_to() undoes them. After
 * carma_store_rollback_to() the transaction holds none of them: it is as at the
 * savepoint, or, where SQLite rolled it back whole or the undo failed, lost (every
 * statement and the commit answer its error; the commit rolls it back). A savepoint
 * is ended before the commit. A failed release leaves the savepoint open (to be
 * rolled back to). */
int carma_store_savepoint(struct carma_store *st, struct carma_err *err);
int carma_store_release(struct carma_store *st, struct carma_err *err);
void carma_store_rollback_to(struct carma_store *st);

/* The SQLite handle, for daemon modules that keep their own queries over the store's
 * tables (daemon/history.c). Valid while the store is open. */
struct sqlite3 *carma_store_sqlite(struct carma_store *st);

/* A statement of such a module's, prepared on its first use in slot (below
 * CARMA_STORE_CACHED) and kept with the store (SQLITE_PREPARE_PERSISTENT; SQLite prepares
 * it again itself when the schema changes): for a query of every submission, whose
 * prepare costs more than its run (carmad_store_peaks: 0.1-0.2 ms against tens of
 * microseconds). Returned reset, its bindings cleared, ready to bind and step; the caller
 * resets it once done (a SELECT not reset keeps its read snapshot open); NULL when it
 * cannot be prepared (sqlite3_errmsg of carma_store_sqlite says why). A slot is always
 * given the same sql. */
enum { CARMA_STORE_CACHED = 1 };
struct sqlite3_stmt *carma_store_cached(struct carma_store *st, unsigned slot, const char *sql);

/* Inserts a new job (r->id ignored) and sets r->id. */
int carma_store_job_insert(struct carma_store *st, struct carma_job_rec *r, struct carma_err *err);
/* Writes the mutable fields of job r->id: state, attempts, bounds, exclusive,
 * cancel_requested, times, exit, signal, reason. */
int carma_store_job_update(struct carma_store *st, const struct carma_job_rec *r,
                           struct carma_err *err);
/* Loads job id into r (cleared first). -ENOENT when there is none. */
int carma_store_job_get(struct carma_store *st, uint64_t id, struct carma_job_rec *r,
                        struct carma_err *err);
/* The uid of job id's owner, without reading the rest of its row (an argv may be 256 KiB:
 * a cancel naming it 4096 times read 1 GiB). -ENOENT when there is none. */
int carma_store_job_uid(struct carma_store *st, uint64_t id, uid_t *uid, struct carma_err *err);
/* The owner and state (enum carma_job_state) of job id, without reading the rest of its
 * row. -ENOENT when there is none. */
int carma_store_job_state(struct carma_store *st, uint64_t id, uid_t *uid, int *state,
                          struct carma_err *err);
/* A job's "after" as the record keeps it (JSON text, NULL: none) parsed into ids[0..*n),
 * at most CARMA_PROTO_MAX_AFTER: 0, or -EINVAL when the text is not such a list (a
 * damaged row; *n 0). */
int carma_store_after_parse(const char *text, uint64_t *ids, size_t *n);
/* Calls fn for every job queued or running, in id order; stops at fn's non-zero. */
int carma_store_jobs_active(struct carma_store *st,
                            int (*fn)(void *ctx, struct carma_job_rec *r), void *ctx,
                            struct carma_err *err);

/* An attempt begins: job, attempt number (1-based), GPU UUIDs as a JSON array, and the
 * GPUs' kind (carmad_gpu_kind; NULL when they are of several kinds). */
int carma_store_attempt_begin(struct carma_store *st, uint64_t job, uint32_t n,
                              const char *gpus_json, const char *gpu_kind, double start_s,
                              struct carma_err *err);
int carma_store_attempt_pid(struct carma_store *st, uint64_t job, uint32_t n, pid_t pid,
                            struct carma_err *err);
/* attempts.peak_partial holds the CARMA_PEAK_* bits (proto/proto.h): why an attempt's
 * peak is only a lower limit. Such a peak is no history (carmad_store_peaks); an OOM
 * retry's bound is still raised to it. */
/* Ticks at which a job's memory must be within 1% (at least 2 MiB) of its peak, counted
 * from when the peak last rose by more than that (peak_hold, daemon.c), for the peak to
 * be complete: a training job's memory climbs over its first iterations and then
 * holds (caching allocators keep what they took), so a peak seen once may be a sample of
 * the climb. */
#define CARMA_PEAK_HELD_TICKS 2u

/* Ends attempt n: its outcome, exit and its peak (0: none) with its peak_partial bits, and
 * why it ended in words (NULL: none). */
int carma_store_attempt_end(struct carma_store *st, uint64_t job, uint32_t n, double end_s,
                            const char *outcome, int exit_code, int sig, uint64_t peak_mib,
                            unsigned peak_partial, const char *reason, struct carma_err *err);
/* Writes the peak so far (0: none) and peak_partial of running attempt n (one that
 * ended is left as it is), with the running accounting: a restart resumes from it. */
int carma_store_attempt_peak_put(struct carma_store *st, uint64_t job, uint32_t n,
                                 uint64_t peak_mib, unsigned peak_partial, struct carma_err *err);
/* The peak stored for attempt n (0: none) and its peak_partial bits, or -ENOENT. */
int carma_store_attempt_peak_get(struct carma_store *st, uint64_t job, uint32_t n,
                                 uint64_t *peak_mib, unsigned *peak_partial, struct carma_err *err);
/* The gravest critical Xid the GPUs of a running attempt reported (carmad's mark on the
 * attempt): kept so that a restarted carmad judges the attempt's end by it. */
struct carma_store_xid {
    uint64_t xid;
    unsigned gpu; /* the GPU's index (carmad's) when it came */
    double t;     /* when it came, s since the epoch */
    int shared;   /* it came on a GPU shared by MPS with another client: whose fault it was
                     is unknown */
    uint64_t via; /* it came on another GPU, and reached the attempt's under MPS through
                     the GPUs of this job (xid_one); 0: it came on one of the attempt's */
};
/* Writes the mark of running attempt n (one that ended is left as it is). */
int carma_store_attempt_xid_put(struct carma_store *st, uint64_t job, uint32_t n,
                                const struct carma_store_xid *x, struct carma_err *err);
/* The mark of attempt n: 1 and *x filled when it has one, 0 when none (*x zeroed), or
 * -ENOENT when there is no such attempt. */
int carma_store_attempt_xid_get(struct carma_store *st, uint64_t job, uint32_t n,
                                struct carma_store_xid *x, struct carma_err *err);
/* Writes when a process of running attempt n was first listed on one of its GPUs (one
 * that ended is left as it is). */
int carma_store_attempt_seen_put(struct carma_store *st, uint64_t job, uint32_t n, double seen_s,
                                 struct carma_err *err);
/* That time of attempt n: 1 and *seen_s set when it has one, 0 when none (*seen_s -1:
 * not yet listed), or -ENOENT when there is no such attempt. */
int carma_store_attempt_seen_get(struct carma_store *st, uint64_t job, uint32_t n, double *seen_s,
                                 struct carma_err *err);
/* Clears the stored environment of a job that is final (it serves only to launch its
 * attempts): the store keeps no job's tokens past its end. */
int carma_store_job_forget_env(struct carma_store *st, uint64_t job, struct carma_err *err);
/* Removes attempt n and its accounting: an attempt recorded whose job never started. */
int carma_store_attempt_forget(struct carma_store *st, uint64_t job, uint32_t n,
                               struct carma_err *err);
/* The GPU UUIDs JSON of attempt n (malloc'd into *out) and its start time (either NULL:
 * not wanted), or -ENOENT. */
int carma_store_attempt_gpus(struct carma_store *st, uint64_t job, uint32_t n, char **out,
                             double *start_s, struct carma_err *err);

/* ---- accounting, profiles and monitoring records (schema v3) ---- */

/* Writes (replaces) the accounting of attempt n of job: GPU-seconds, joules, and the
 * solo SMACT measured while it ran alone (< 0: none). */
int carma_store_usage_put(struct carma_store *st, uint64_t job, uint32_t n, double gpu_s,
                          double energy_j, double solo_smact, struct carma_err *err);
/* The accounting of attempt n (*solo_smact < 0: none measured), -ENOENT when none was
 * written. */
int carma_store_usage_get(struct carma_store *st, uint64_t job, uint32_t n, double *gpu_s,
                          double *energy_j, double *solo_smact, struct carma_err *err);

/* A workload's solo profile, by the job's memory signature (hist_sig; argv + batch for a
 * job stored without one): SM
 * activity, occupancy and DRAM activity measured when it ran alone (< 0 unknown),
 * and how many runs the means are over. -ENOENT when none. */
struct carma_profile {
    double smact, smocc, drama;
    uint32_t runs;
};
int carma_store_profile_get(struct carma_store *st, uint64_t sig, struct carma_profile *p,
                            struct carma_err *err);
/* The co-location model's correction carmad learnt from observed co-runs on GPUs of kind
 * `kind` (carmad_gpu_kind; "": learnt before v18 on any): get reads it and returns the
 * knots read (0 and l all zero: none stored; -EINVAL, l zeroed, for a row or value no
 * carmad writes); put replaces what is stored for the kind with every knot of l that
 * holds an observation (rows a refused get found go with it; an empty l leaves none).
 * Other kinds' rows stay, so a GPU taken out keeps its kind's correction. */
int carma_store_coloc_get(struct carma_store *st, const char *kind, struct carma_coloc_learnt *l,
                          struct carma_err *err);
int carma_store_coloc_put(struct carma_store *st, const char *kind,
                          const struct carma_coloc_learnt *l, struct carma_err *err);

/* Every attempt that ended at or after `since`, or runs (end < 0): cb(uid and name of its
 * user, its job's GPUs, its start and end). Rows no carmad writes (an end before the
 * start, no GPUs) are skipped. A non-zero return of cb stops and is returned. */
int carma_store_user_gpu_time(struct carma_store *st, double since,
                              int (*cb)(void *ctx, uint32_t uid, const char *user, uint32_t gpus,
                                        double start, double end),
                              void *ctx, struct carma_err *err);

/* Folds one run's measurement into the profile of sig (running means). */
int carma_store_profile_add(struct carma_store *st, uint64_t sig, double smact, double smocc,
                            double drama, double now, struct carma_err *err);

/* The store's id of a GPU by UUID, creating it (name, memory, power limit < 0 absent). */
int carma_store_gpu_id(struct carma_store *st, const char *uuid, const char *name,
                       uint64_t mem_total_mib, double power_max_w, int64_t *id,
                       struct carma_err *err);

/* One downsampled monitor record. Negative values are stored as NULL (absent). */
struct carma_store_sample {
    int64_t gpu;       /* carma_store_gpu_id */
    double t;
    uint64_t mem_mib;
    double util, smact, smocc, drama, tensor, power_w, energy_j;
};
int carma_store_sample_insert(struct carma_store *st, const struct carma_store_sample *s,
                              struct carma_err *err);
/* Retention: deletes records older than `before` (< 0: none), then each GPU's oldest
 * until drop_rows in all are gone (shared evenly among the GPUs), at most `batch` rows
 * (0: no bound) in this call, on the primary key (no sort of the table). *deleted (may
 * be NULL) receives the count; *more is 1 when the batch ran out first (call again). */
int carma_store_samples_prune(struct carma_store *st, double before, uint64_t drop_rows,
                              uint64_t batch, uint64_t *deleted, int *more, struct carma_err *err);
/* Retention of jobs: deletes at most max_jobs (> 0) final jobs that ended before `before`,
 * oldest end first, with their attempts and accounting (history's peaks among them),
 * never the job of the highest id (ids are never given again). ids (NULL: not wanted;
 * else room for max_jobs) receives the deleted jobs' ids, *deleted of them, for their
 * log folders to go once the transaction commits. *more is 1 when more may be left
 * (call again). */
int carma_store_jobs_prune(struct carma_store *st, double before, uint32_t max_jobs, uint64_t *ids,
                           uint64_t *deleted, int *more, struct carma_err *err);
/* Number of records held. */
int carma_store_samples_count(struct carma_store *st, uint64_t *n, struct carma_err *err);

/* Usage totals per user over the jobs submitted in [since, until) (a negative bound
 * is open): jobs, attempts, OOM attempts, run seconds, GPU-seconds, joules, waiting
 * seconds (queued time; for a job still active, up to `now`), one entry per uid, named as
 * its newest job. Only uid `uid` when >= 0, only jobs submitted as `user` when not NULL.
 * *out: {"users":[{user,uid,jobs,attempts,oom,run_s,gpu_seconds,energy_j,wait_s}...],
 * "total":{...}}. */
int carma_store_usage_json(struct carma_store *st, int64_t uid, const char *user, double since,
                           double until, double now, json_t **out, struct carma_err *err);

/* The recorded history for a report over [since, until): per GPU at most max_points
 * points (bucket means; memory the bucket's highest), each as parallel integer arrays
 * (t seconds from since, mem MiB, smact and util per mille (-1 absent), power in
 * deciwatts (-1 absent)), and every attempt overlapping the range (job, n, user, uid,
 * name, gpus, start, end, outcome). *out: {"since","until","gpus":[...],
 * "attempts":[...]}. At most max_attempts attempts (newest kept), "truncated" says. */
int carma_store_history_json(struct carma_store *st, double since, double until,
                             uint32_t max_points, uint32_t max_attempts, json_t **out,
                             struct carma_err *err);

/* JSON views for the protocol. A job object has id, name, user, state, attempts,
 * gpus (count), mem_mib, submit_time, start_time, end_time (null when not yet),
 * exit_code, signal, reason, and the accounting run_s, gpu_seconds, energy_j,
 * wait_s (over ended attempts; wait_s null while the job is active); `detail` adds argv, cwd, and the attempts array. */
json_t *carma_store_rec_json(const struct carma_job_rec *r);
/* Appends jobs to arr: of user uid (or all when uid < 0), only queued/running
 * unless all, with ids above `after`, ascending, at most `limit` (a page). */
int carma_store_list_json(struct carma_store *st, int64_t uid, int all, uint64_t after,
                          uint32_t limit, json_t *arr, struct carma_err *err);
/* The attempts of a job as a JSON array. */
int carma_store_attempts_json(struct carma_store *st, uint64_t job, json_t **out,
                              struct carma_err *err);

#endif
