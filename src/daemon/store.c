#include "daemon/store.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "core/job.h"
#include "util/clock.h"
#include "util/utf8.h"

/* The columns every job read selects, in the order the row reader takes them: the
 * summary (NULL when listing) between the two halves, the accounting columns after. */
#define JOB_COLS_HEAD "id,name,uid,gid,user,cwd,argv,env,"
#define JOB_COLS_TAIL                                                                              \
    "batch,gpus,mem_mib,bound_mib,peak_mib,max_attempts,attempts,state,exclusive,"                 \
    "cancel_requested,submit_time,start_time,end_time,exit_code,signal,reason,bound_basis,"        \
    "hist_sig,umask,rlimits,after,time_limit_s" ACCT_COLS

/* Accounting columns appended to every job row: run seconds, GPU-seconds and
 * joules over the attempts that ended. */
#define ACCT_COLS \
    ",(SELECT total(a.end_time-a.start_time) FROM attempts a WHERE a.job_id=jobs.id AND " \
    "a.end_time IS NOT NULL),(SELECT total(u.gpu_s) FROM usage u JOIN attempts a ON " \
    "a.job_id=u.job_id AND a.n=u.n WHERE u.job_id=jobs.id AND a.end_time IS NOT NULL)," \
    "(SELECT total(u.energy_j) FROM usage u JOIN attempts a ON a.job_id=u.job_id AND " \
    "a.n=u.n WHERE u.job_id=jobs.id AND a.end_time IS NOT NULL)"

enum {
    ST_BEGIN,
    ST_COMMIT,
    ST_ROLLBACK,
    ST_SAVEPOINT,
    ST_RELEASE,
    ST_ROLLBACK_TO,
    ST_JOB_INSERT,
    ST_JOB_UPDATE,
    ST_JOB_GET,
    ST_JOB_UID,
    ST_JOB_STATE,
    ST_ACTIVE,
    ST_ATT_BEGIN,
    ST_ATT_PID,
    ST_ATT_END,
    ST_ATT_GPUS,
    ST_ATT_LIST,
    ST_ATT_DEL,
    ST_USAGE_DEL,
    ST_USAGE_PUT,
    ST_USAGE_GET,
    ST_PROF_GET,
    ST_PROF_ADD,
    ST_GPU_GET,
    ST_GPU_ADD,
    ST_SAMPLE_ADD,
    ST_ATT_PEAK_PUT,
    ST_ATT_PEAK_GET,
    ST_ATT_XID_PUT,
    ST_ATT_XID_GET,
    ST_ATT_SEEN_PUT,
    ST_ATT_SEEN_GET,
    ST_JOB_FORGET_ENV,
    ST_COLOC_GET,
    ST_COLOC_PUT,
    ST_COLOC_CLEAR,
    ST_USER_GPU_TIME,
    ST_COUNT
};

static const char *const sql_text[ST_COUNT] = {
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    [ST_SAVEPOINT] = "SAVEPOINT carma_part",
    [ST_RELEASE] = "RELEASE carma_part",
    [ST_ROLLBACK_TO] = "ROLLBACK TO carma_part",
    [ST_JOB_INSERT] =
        "INSERT INTO jobs(name,uid,gid,user,cwd,argv,env,summary,batch,gpus,mem_mib,bound_mib,"
        "peak_mib,max_attempts,attempts,state,exclusive,cancel_requested,submit_time,"
        "bound_basis,hist_sig,umask,rlimits,after,time_limit_s) "
        "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_JOB_UPDATE] =
        "UPDATE jobs SET state=?,attempts=?,max_attempts=?,bound_mib=?,peak_mib=?,mem_mib=?,"
        "exclusive=?,cancel_requested=?,start_time=?,end_time=?,exit_code=?,signal=?,reason=? "
        "WHERE id=?",
    [ST_JOB_GET] = "SELECT " JOB_COLS_HEAD "summary," JOB_COLS_TAIL " FROM jobs WHERE id=?",
    [ST_JOB_UID] = "SELECT uid FROM jobs WHERE id=?",
    [ST_JOB_STATE] = "SELECT uid,state FROM jobs WHERE id=?",
    [ST_ACTIVE] = "SELECT " JOB_COLS_HEAD "summary," JOB_COLS_TAIL
                  " FROM jobs WHERE state IN ('queued','running') ORDER BY id",
    [ST_ATT_BEGIN] = "INSERT OR REPLACE INTO attempts(job_id,n,gpus,start_time,gpu_kind) "
                     "VALUES(?,?,?,?,?)",
    [ST_ATT_PID] = "UPDATE attempts SET shepherd_pid=? WHERE job_id=? AND n=?",
    [ST_ATT_END] = "UPDATE attempts SET end_time=?,outcome=?,exit_code=?,signal=?,peak_mib=?,"
                   "peak_partial=?,reason=? WHERE job_id=? AND n=?",
    [ST_ATT_GPUS] = "SELECT gpus,start_time FROM attempts WHERE job_id=? AND n=?",
    [ST_ATT_LIST] =
        "SELECT n,gpus,start_time,end_time,outcome,exit_code,signal,peak_mib,"
        "shepherd_pid,(SELECT gpu_s FROM usage u WHERE u.job_id=attempts.job_id "
        "AND u.n=attempts.n),(SELECT energy_j FROM usage u WHERE "
        "u.job_id=attempts.job_id AND u.n=attempts.n),(SELECT solo_smact FROM usage "
        "u WHERE u.job_id=attempts.job_id AND u.n=attempts.n),peak_partial,reason FROM attempts "
        "WHERE job_id=? ORDER BY n",
    [ST_ATT_DEL] = "DELETE FROM attempts WHERE job_id=? AND n=?",
    [ST_USAGE_DEL] = "DELETE FROM usage WHERE job_id=? AND n=?",
    [ST_USAGE_PUT] = "INSERT OR REPLACE INTO usage(job_id,n,gpu_s,energy_j,solo_smact) "
                     "VALUES(?,?,?,?,?)",
    [ST_USAGE_GET] = "SELECT gpu_s,energy_j,solo_smact FROM usage WHERE job_id=? AND n=?",
    [ST_PROF_GET] = "SELECT smact,smocc,drama,runs FROM profiles WHERE sig=?",
    [ST_PROF_ADD] =
        "INSERT INTO profiles(sig,smact,smocc,drama,runs,updated) VALUES(?1,?2,?3,?4,1,?5) "
        "ON CONFLICT(sig) DO UPDATE SET smact=(smact*runs+?2)/(runs+1),"
        "smocc=CASE WHEN ?3 IS NULL THEN smocc WHEN smocc IS NULL THEN ?3 "
        "ELSE (smocc*runs+?3)/(runs+1) END,"
        "drama=CASE WHEN ?4 IS NULL THEN drama WHEN drama IS NULL THEN ?4 "
        "ELSE (drama*runs+?4)/(runs+1) END,runs=min(runs+1,1000),updated=?5",
    [ST_GPU_GET] = "SELECT id FROM gpus WHERE uuid=?",
    [ST_GPU_ADD] = "INSERT INTO gpus(uuid,name,mem_total_mib,power_max_w) VALUES(?,?,?,?) "
                   "ON CONFLICT(uuid) DO UPDATE SET name=excluded.name,"
                   "mem_total_mib=excluded.mem_total_mib,power_max_w=excluded.power_max_w",
    [ST_SAMPLE_ADD] = "INSERT OR REPLACE INTO samples(gpu,t,mem_mib,util,smact,smocc,drama,"
                      "tensor,power_w,energy_j) VALUES(?,?,?,?,?,?,?,?,?,?)",
    [ST_ATT_PEAK_PUT] = "UPDATE attempts SET peak_mib=?,peak_partial=? WHERE job_id=? AND n=? "
                        "AND end_time IS NULL",
    [ST_ATT_PEAK_GET] = "SELECT peak_mib,peak_partial FROM attempts WHERE job_id=? AND n=?",
    [ST_ATT_XID_PUT] = "UPDATE attempts SET xid=?,xid_gpu=?,xid_time=?,xid_shared=?,xid_via=? "
                       "WHERE job_id=? AND n=? AND end_time IS NULL",
    [ST_ATT_XID_GET] =
        "SELECT xid,xid_gpu,xid_time,xid_shared,xid_via FROM attempts WHERE job_id=? AND n=?",
    [ST_ATT_SEEN_PUT] =
        "UPDATE attempts SET seen_time=? WHERE job_id=? AND n=? AND end_time IS NULL",
    [ST_ATT_SEEN_GET] = "SELECT seen_time FROM attempts WHERE job_id=? AND n=?",
    [ST_JOB_FORGET_ENV] = "UPDATE jobs SET env='{}' WHERE id=? AND env!='{}'",
    [ST_COLOC_GET] =
        "SELECT sharing,knot,weight,logq FROM coloc WHERE kind=? ORDER BY sharing,knot",
    [ST_COLOC_PUT] =
        "INSERT OR REPLACE INTO coloc(kind,sharing,knot,weight,logq) VALUES(?,?,?,?,?)",
    [ST_COLOC_CLEAR] = "DELETE FROM coloc WHERE kind=?",
    [ST_USER_GPU_TIME] =
        "SELECT j.uid,j.user,j.gpus,a.start_time,a.end_time FROM attempts a JOIN jobs j "
        "ON j.id=a.job_id WHERE a.start_time IS NOT NULL AND "
        "(a.end_time IS NULL OR a.end_time>=?)",
};

/* Migrations: entry i brings the schema from version i to i + 1. */
static const char *const migrations[CARMA_STORE_SCHEMA_VERSION] = {
    /* 0 -> 1: jobs and their attempts. */
    "CREATE TABLE jobs("
    " id INTEGER PRIMARY KEY,"
    " name TEXT NOT NULL, uid INTEGER NOT NULL, gid INTEGER NOT NULL, user TEXT NOT NULL,"
    " cwd TEXT NOT NULL, argv TEXT NOT NULL, env TEXT NOT NULL, summary TEXT,"
    " batch INTEGER NOT NULL DEFAULT 0,"
    " gpus INTEGER NOT NULL CHECK(gpus BETWEEN 1 AND 64),"
    " mem_mib INTEGER NOT NULL, bound_mib INTEGER NOT NULL, peak_mib INTEGER NOT NULL,"
    " max_attempts INTEGER NOT NULL, attempts INTEGER NOT NULL,"
    " state TEXT NOT NULL CHECK(state IN ('queued','running','succeeded','failed','oom',"
    "   'cancelled','lost')),"
    " exclusive INTEGER NOT NULL DEFAULT 0, cancel_requested INTEGER NOT NULL DEFAULT 0,"
    " submit_time REAL NOT NULL, start_time REAL, end_time REAL,"
    " exit_code INTEGER, signal INTEGER, reason TEXT) STRICT;"
    "CREATE TABLE attempts("
    " job_id INTEGER NOT NULL REFERENCES jobs(id), n INTEGER NOT NULL,"
    " gpus TEXT NOT NULL, start_time REAL NOT NULL, end_time REAL, outcome TEXT,"
    " exit_code INTEGER, signal INTEGER, peak_mib INTEGER, shepherd_pid INTEGER,"
    " PRIMARY KEY(job_id, n)) STRICT;",
    /* 1 -> 2: indexes for the active set and per-user listings. */
    "CREATE INDEX jobs_state ON jobs(state);"
    "CREATE INDEX jobs_uid ON jobs(uid, id);",
    /* 2 -> 3: monitoring (issue 5): accounting per attempt, solo profiles per job
     * signature, GPUs by UUID and their downsampled samples. IF NOT EXISTS throughout
     * so that a file whose version number was lowered migrates again unharmed. */
    "CREATE TABLE IF NOT EXISTS usage("
    " job_id INTEGER NOT NULL, n INTEGER NOT NULL, gpu_s REAL NOT NULL,"
    " energy_j REAL NOT NULL, solo_smact REAL, PRIMARY KEY(job_id, n)) STRICT;"
    "CREATE TABLE IF NOT EXISTS profiles("
    " sig INTEGER PRIMARY KEY, smact REAL NOT NULL, smocc REAL, drama REAL,"
    " runs INTEGER NOT NULL, updated REAL NOT NULL) STRICT;"
    "CREATE TABLE IF NOT EXISTS gpus("
    " id INTEGER PRIMARY KEY, uuid TEXT NOT NULL UNIQUE, name TEXT NOT NULL,"
    " mem_total_mib INTEGER NOT NULL, power_max_w REAL) STRICT;"
    "CREATE TABLE IF NOT EXISTS samples("
    " gpu INTEGER NOT NULL, t REAL NOT NULL, mem_mib INTEGER NOT NULL, util REAL,"
    " smact REAL, smocc REAL, drama REAL, tensor REAL, power_w REAL, energy_j REAL,"
    " PRIMARY KEY(gpu, t)) STRICT, WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS by_submit_time ON jobs(submit_time);",
    /* 3 -> 4: the history lookup of every submission (user, command, batch) must not
     * scan the whole jobs table. */
    "CREATE INDEX IF NOT EXISTS jobs_signature ON jobs(uid, batch, argv);",
    /* 4 -> 5: what the bound at submission came from (carmad_bound's basis); NULL for
     * jobs submitted before. Skipped where the column exists (added_column). */
    "ALTER TABLE jobs ADD COLUMN bound_basis TEXT;",
    /* 5 -> 6: the job's memory history signature (est_job_signature: argv, batch, GPU
     * count, summary text and every estimator option). NULL for the jobs submitted
     * before, whose set-up was not stored: no later job matches their peaks (their
     * signature keyed on argv, batch and GPU count only, so a peak of another model or
     * sequence length became a bound). */
    "ALTER TABLE jobs ADD COLUMN hist_sig INTEGER;",
    /* 6 -> 7: the GPU kind an attempt ran on (carmad_gpu_kind; NULL for earlier
     * attempts and for one on GPUs of several kinds): history uses a kind's own peaks
     * only. */
    "ALTER TABLE attempts ADD COLUMN gpu_kind TEXT;",
    /* 7 -> 8: the submitter's umask, which the job runs with (0..0777); NULL for the jobs
     * submitted before and by a client that did not send it: they run with 022. */
    "ALTER TABLE jobs ADD COLUMN umask INTEGER CHECK(umask BETWEEN 0 AND 511);",
    /* 8 -> 9: why an attempt's peak is only a lower limit of what it used
     * (CARMA_PEAK_DOWNTIME, CARMA_PEAK_UNKNOWN; 0: complete, the earlier attempts' too).
     * Such a peak is no history; an OOM retry still raises its bound to it. */
    "ALTER TABLE attempts ADD COLUMN peak_partial INTEGER NOT NULL DEFAULT 0;",
    /* 9 -> 10: the retention of final jobs (carma_store_jobs_prune) finds the oldest
     * ended jobs without reading every row (a row holds its argv, env and summary). */
    "CREATE INDEX IF NOT EXISTS jobs_end_time ON jobs(end_time) WHERE end_time IS NOT NULL;",
    /* 10 -> 11: how each attempt ended, in words (the job's reason is its last attempt's:
     * a retried attempt's was lost); NULL for the attempts ended before. */
    "ALTER TABLE attempts ADD COLUMN reason TEXT;",
    /* 11 -> 12: the submitter's resource limits, which a root carmad's job runs with
     * (util/rlimits.h); NULL for the jobs submitted before: they keep carmad's. */
    "ALTER TABLE jobs ADD COLUMN rlimits TEXT;",
    /* 12 -> 13: the gravest critical Xid a running attempt's GPUs reported (its number,
     * the GPU's index then, when it came), so that a restarted carmad judges the attempt's
     * end as the carmad that saw the Xid would have (gpu_error, the Xid in its reason);
     * NULL: none, and for the attempts stored before. One transaction adds all three. */
    "ALTER TABLE attempts ADD COLUMN xid INTEGER;"
    "ALTER TABLE attempts ADD COLUMN xid_gpu INTEGER;"
    "ALTER TABLE attempts ADD COLUMN xid_time REAL;",
    /* 13 -> 14: when a process of a running attempt was first listed on one of its GPUs
     * (its ramp and a reference policy's grace run from then), so that a restarted carmad
     * keeps them; NULL: not yet. The attempts running across the upgrade count as listed
     * at their start (added_column's `then`). */
    "ALTER TABLE attempts ADD COLUMN seen_time REAL;",
    /* 14 -> 15: a submission's history lookup (carmad_store_peaks) reads the succeeded
     * jobs of its user and signature only: through jobs_signature it walked every job of
     * the user with that argv and batch, queued and failed ones too, on each submission
     * (a user's repeated command: its whole history, every time). */
    "CREATE INDEX IF NOT EXISTS jobs_history ON jobs(uid, hist_sig) WHERE state = 'succeeded';",
    /* 15 -> 16: the co-location model's correction learnt from observed co-runs
     * (core/coloc.h), by sharing mode and knot of the jobs' summed solo SMACT. */
    "CREATE TABLE IF NOT EXISTS coloc(sharing TEXT NOT NULL, knot INTEGER NOT NULL,"
    " weight REAL NOT NULL, logq REAL NOT NULL, PRIMARY KEY(sharing, knot));",
    /* 16 -> 17: whether that Xid came on a GPU shared by MPS with another client, where
     * one client's fault ends them all and neither NVML nor the kernel says whose it was
     * (a restarted carmad retries the failure after it alone, as the carmad that saw the
     * Xid would have). 0 for the marks stored before. */
    "ALTER TABLE attempts ADD COLUMN xid_shared INTEGER NOT NULL DEFAULT 0;",
    /* 17 -> 18: that correction by GPU kind (carmad_gpu_kind: how far the model is off
     * differs between GPUs, docs/model.md). The rows before were learnt on this server's
     * GPUs, whatever their kinds: kind '', which each kind without a table of its own
     * takes at carmad's start. An older carmad's rows get '' too (the default); run on
     * the file with its version number lowered, it reads every kind's rows as its one
     * table and its first store deletes them all (docs/daemon.md). */
    "ALTER TABLE coloc RENAME TO coloc_v17;"
    "CREATE TABLE coloc(kind TEXT NOT NULL DEFAULT '', sharing TEXT NOT NULL,"
    " knot INTEGER NOT NULL, weight REAL NOT NULL, logq REAL NOT NULL,"
    " PRIMARY KEY(kind, sharing, knot));"
    "INSERT INTO coloc(kind,sharing,knot,weight,logq)"
    " SELECT '',sharing,knot,weight,logq FROM coloc_v17;"
    "DROP TABLE coloc_v17;",
    /* 18 -> 19: the job through whose GPUs that Xid reached the attempt, when it came on
     * another GPU: under MPS a client's fault ends every client of each GPU the faulting
     * client used, and any client of the Xid's GPU may be it (xid_one). NULL: it came on
     * one of the attempt's GPUs, as every mark stored before. */
    "ALTER TABLE attempts ADD COLUMN xid_via INTEGER;",
    /* 19 -> 20: the jobs a job runs after (carma submit --after: it starts once they all
     * ended succeeded), a JSON array of their ids as submitted; NULL: none, as for every
     * job stored before. Which of them are still pending is not stored: a restarted carmad
     * reads it from their states. */
    "ALTER TABLE jobs ADD COLUMN after TEXT;",
    /* 20 -> 21: the wall seconds each attempt of the job may run, from the attempt's
     * start (carma submit --time-limit), 1 s to 365 days; NULL: no limit, as for every
     * job stored before. A restarted carmad reads a running attempt's deadline from it and
     * the attempt's start_time. */
    "ALTER TABLE jobs ADD COLUMN time_limit_s INTEGER"
    " CHECK(time_limit_s BETWEEN 1 AND 31536000);",
};

/* The column a migration adds with ALTER TABLE, which SQLite cannot make conditional:
 * a file whose version number was lowered has it already, and the migration is
 * skipped. Column NULL: the migration adds none. `then` runs after the migration,
 * skipped or not: the rows an older carmad wrote meanwhile lack the column's value too. */
static const struct {
    const char *table, *column, *then;
} added_column[CARMA_STORE_SCHEMA_VERSION] = {
    [4] = {"jobs", "bound_basis", NULL},
    [5] = {"jobs", "hist_sig", NULL},
    [6] = {"attempts", "gpu_kind", NULL},
    [7] = {"jobs", "umask", NULL},
    [8] = {"attempts", "peak_partial", NULL},
    [10] = {"attempts", "reason", NULL},
    [11] = {"jobs", "rlimits", NULL},
    [12] = {"attempts", "xid", NULL},
    /* the attempts running across the upgrade count as listed at their start, as the
     * carmad before held them */
    [13] =
        {"attempts", "seen_time",
         "UPDATE attempts SET seen_time=start_time WHERE end_time IS NULL AND seen_time IS NULL"},
    [16] = {"attempts", "xid_shared", NULL},
    [17] = {"coloc", "kind", NULL},
    [18] = {"attempts", "xid_via", NULL},
    [19] = {"jobs", "after", NULL},
    [20] = {"jobs", "time_limit_s", NULL},
};

struct carma_store {
    sqlite3 *db;
    sqlite3_stmt *st[ST_COUNT];
    sqlite3_stmt *cached[CARMA_STORE_CACHED]; /* carma_store_cached's, NULL until used */
    int in_tx;
    int in_savepoint; /* carma_store_savepoint's, not yet released or rolled back to */
    int version_found;
    /* SQLite rolls a whole transaction back on some errors (SQLITE_FULL, IOERR, NOMEM,
     * BUSY): then lost_code < 0 and `lost` holds that error, which every statement
     * answers until the caller's commit or rollback, so that nothing of the lost
     * transaction is redone in autocommit. */
    int lost_code;
    struct carma_err lost;
    unsigned modes_fixed;  /* CARMA_STORE_FIXED_*: files that were open to others */
    int copy_made;         /* carma_store_pre_migration_copy's answer */
    char copy_path[PATH_MAX];
    int check_incomplete;  /* quick_check ran out of time */
};

static int db_err(struct carma_store *s, int rc, const char *what, struct carma_err *err)
{
    int code = (rc == SQLITE_FULL || rc == SQLITE_IOERR_WRITE) ? -ENOSPC : -EIO;
    if ((rc & 0xff) == SQLITE_FULL)
        code = -ENOSPC;
    struct carma_err e;
    carma_err_set(&e, code, "store: %s: %s", what,
                  s && s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
    if (s && s->db && s->in_tx && !s->lost_code && sqlite3_get_autocommit(s->db)) {
        s->lost_code = code;
        s->lost = e;
    }
    if (err)
        *err = e;
    return code;
}

void carma_job_rec_clear(struct carma_job_rec *r)
{
    free(r->name);
    free(r->user);
    free(r->cwd);
    free(r->argv_json);
    free(r->env_json);
    free(r->summary);
    free(r->reason);
    free(r->bound_basis);
    free(r->rlimits);
    free(r->after);
    memset(r, 0, sizeof *r);
    r->start_s = r->end_s = -1;
    r->exit_code = -1;
    r->umask = -1;
}

static int exec_sql(struct carma_store *s, const char *sql, struct carma_err *err)
{
    char *msg = NULL;
    int rc = sqlite3_exec(s->db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        int code = (rc & 0xff) == SQLITE_FULL ? -ENOSPC : -EIO;
        carma_err_set(err, code, "store: %s", msg ? msg : sqlite3_errstr(rc));
        sqlite3_free(msg);
        return code;
    }
    return 0;
}

/* Whether table has a column of that name. */
static int has_column(struct carma_store *s, const char *table, const char *column)
{
    sqlite3_stmt *q;
    int found = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2", -1, &q,
                           NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(q, 1, table, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, column, -1, SQLITE_STATIC);
    found = sqlite3_step(q) == SQLITE_ROW;
    sqlite3_finalize(q);
    return found;
}

/* Whether the store holds anything: a new file (no table) is migrated with no copy. */
static int store_has_tables(struct carma_store *s, int *has, struct carma_err *err)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(s->db, "SELECT count(*) FROM sqlite_master", -1, &q, NULL) != SQLITE_OK)
        return db_err(s, SQLITE_ERROR, "reading the schema", err);
    int rc = sqlite3_step(q);
    *has = rc == SQLITE_ROW && sqlite3_column_int(q, 0) > 0;
    sqlite3_finalize(q);
    return rc == SQLITE_ROW ? 0 : db_err(s, rc, "reading the schema", err);
}

/* The error of a copy of the store at version v that could not be made, what is in
 * `why`: the migration is refused, the store left as it was. */
static int copy_refused(int code, const char *path, const char *copy, int v, const char *why,
                        const char *todo, struct carma_err *err)
{
    return carma_err_set(err, code,
                         "store: %s stays at schema version %d, not migrated: the copy of it "
                         "kept before a migration (for going back to the carmad before), %s, "
                         "cannot be written (%s); %s, then start carmad again",
                         path, v, copy, why, todo);
}

/* Before the first migration of a store at version v (docs/daemon.md, "Upgrading and
 * going back"): a consistent copy of it, PATH.vV (VACUUM INTO a new file, synced, then
 * linked to its name, so that a copy under that name is always whole), owned and
 * private as the store (never wider than 0600). One that exists is kept: the oldest. */
static int copy_before_migration(struct carma_store *s, const char *path, int v,
                                 struct carma_err *err)
{
    if (!strcmp(path, ":memory:") || !strncmp(path, "file:", 5) || !path[0])
        return 0;
    char tmp[PATH_MAX + 8];
    int n = snprintf(s->copy_path, sizeof s->copy_path, "%s.v%d", path, v);
    if (n < 0 || (size_t)n >= sizeof s->copy_path)
        return carma_err_set(err, -ENAMETOOLONG, "store: %s.v%d: path too long", path, v);
    snprintf(tmp, sizeof tmp, "%s.tmp", s->copy_path);
    struct stat st, db;
    if (lstat(s->copy_path, &st) == 0) {
        if (!S_ISREG(st.st_mode))
            return copy_refused(-EEXIST, path, s->copy_path, v,
                                "it exists and is not a regular file",
                                "move it aside (keep it if it is an older copy of the store)", err);
        s->copy_made = CARMA_STORE_COPY_KEPT;
        return 0;
    }
    if (errno != ENOENT)
        return copy_refused(-errno, path, s->copy_path, v, strerror(errno),
                            "make its folder readable", err);
    if (stat(path, &db) < 0)
        return carma_err_set(err, -errno, "store: %s: %s", path, strerror(errno));
    /* a copy an interrupted carmad left half-written */
    if (lstat(tmp, &st) == 0 && S_ISREG(st.st_mode))
        unlink(tmp);
    char why[PATH_MAX + 256] = "";
    int rc = 0;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 ||
        ((db.st_uid != geteuid() || db.st_gid != getegid()) &&
         fchown(fd, db.st_uid, db.st_gid) < 0) ||
        fchmod(fd, db.st_mode & 0600) < 0) {
        rc = -errno;
        snprintf(why, sizeof why, "%s: %s", tmp, strerror(errno));
    }
    if (!rc) {
        sqlite3_stmt *q;
        int src = sqlite3_prepare_v2(s->db, "VACUUM INTO ?1", -1, &q, NULL);
        if (src == SQLITE_OK) {
            sqlite3_bind_text(q, 1, tmp, -1, SQLITE_STATIC);
            src = sqlite3_step(q);
        }
        if (src != SQLITE_DONE) {
            int full = (src & 0xff) == SQLITE_FULL || sqlite3_system_errno(s->db) == ENOSPC;
            rc = full ? -ENOSPC : -EIO;
            snprintf(why, sizeof why, "%s",
                     full ? "no space left on device" : sqlite3_errmsg(s->db));
        }
        sqlite3_finalize(q);
    }
    if (!rc && fsync(fd) < 0) {
        rc = -errno;
        snprintf(why, sizeof why, "%s", strerror(errno));
    }
    if (!rc && link(tmp, s->copy_path) < 0) {
        rc = -errno;
        snprintf(why, sizeof why, "%s", strerror(errno));
    }
    if (fd >= 0) {
        close(fd);
        unlink(tmp);
    }
    if (rc)
        return copy_refused(rc, path, s->copy_path, v, why,
                            "free space on its file system, or make its folder writable", err);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[slash == dir] = '\0'; /* "/carma.db": "/" */
    int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    s->copy_made = CARMA_STORE_COPY_MADE;
    return 0;
}

static int migrate(struct carma_store *s, const char *path, struct carma_err *err)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &q, NULL) != SQLITE_OK)
        return db_err(s, SQLITE_ERROR, "reading the schema version", err);
    int v = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int(q, 0) : 0;
    sqlite3_finalize(q);
    s->version_found = v;
    if (v > CARMA_STORE_SCHEMA_VERSION)
        return carma_err_set(err, -EPROTO,
                             "store: %s: schema version %d is newer than this carmad's (%d): "
                             "a newer carmad wrote it; run that one on it (this one would "
                             "misread it)",
                             path, v, CARMA_STORE_SCHEMA_VERSION);
    if (v < CARMA_STORE_SCHEMA_VERSION) {
        int has, rc = store_has_tables(s, &has, err);
        if (!rc && has)
            rc = copy_before_migration(s, path, v, err);
        if (rc)
            return rc;
    }
    for (; v < CARMA_STORE_SCHEMA_VERSION; v++) {
        char bump[64];
        snprintf(bump, sizeof bump, "PRAGMA user_version=%d", v + 1);
        int rc = exec_sql(s, "BEGIN IMMEDIATE", err);
        if (!rc && !(added_column[v].column &&
                     has_column(s, added_column[v].table, added_column[v].column)))
            rc = exec_sql(s, migrations[v], err);
        if (!rc && added_column[v].then)
            rc = exec_sql(s, added_column[v].then, err);
        if (!rc)
            rc = exec_sql(s, bump, err);
        if (!rc)
            rc = exec_sql(s, "COMMIT", err);
        if (rc) {
            sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
            struct carma_err e = *err;
            return carma_err_set(err, rc, "store: %s: migrating schema version %d to %d: %s", path,
                                 v, v + 1, strncmp(e.msg, "store: ", 7) ? e.msg : e.msg + 7);
        }
    }
    return 0;
}

int carma_file_private_at(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat st;
    int fixed = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 077) &&
                fchmod(fd, st.st_mode & 0700) == 0;
    close(fd);
    return fixed;
}

/* The store holds every job's environment (tokens), argv and cwd: its file and the
 * WAL and SHM files are for carmad alone. The database file is made here 0600 (an
 * existing one loses group and other access); SQLite creates -wal and -shm with the
 * database file's mode, and existing ones are fixed before SQLite opens them. Done
 * before sqlite3_open: closing a descriptor of the file later would drop SQLite's
 * POSIX locks on it. A symlink at path is followed only to an existing file. */
static int prepare_files(struct carma_store *s, const char *path, struct carma_err *err)
{
    if (!strcmp(path, ":memory:") || !strncmp(path, "file:", 5) || !path[0])
        return 0;
    int fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno == EEXIST) /* O_EXCL met a symlink that leads nowhere */
            return carma_err_set(err, -ENOENT,
                                 "store: %s: a symbolic link to a file that does not exist", path);
    }
    if (fd < 0)
        return carma_err_set(err, -errno, "store: %s: %s", path, strerror(errno));
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) < 0)
        rc = carma_err_set(err, -errno, "store: %s: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = carma_err_set(err, -EINVAL, "store: %s: not a regular file", path);
    else if ((st.st_mode & 077) && fchmod(fd, st.st_mode & 0700) == 0)
        s->modes_fixed |= CARMA_STORE_FIXED_DB;
    close(fd);
    char side[PATH_MAX];
    snprintf(side, sizeof side, "%s-wal", path);
    if (!rc && carma_file_private_at(AT_FDCWD, side))
        s->modes_fixed |= CARMA_STORE_FIXED_WAL;
    snprintf(side, sizeof side, "%s-shm", path);
    if (!rc && carma_file_private_at(AT_FDCWD, side))
        s->modes_fixed |= CARMA_STORE_FIXED_SHM;
    return rc;
}

static int check_deadline(void *ctx)
{
    return carma_mono_s() > *(const double *)ctx;
}

/* The store could not be read for a reason that is not damage (a full
 * disk, a folder where its -wal or -shm cannot be made, a lock another program holds): the
 * file may be sound, and restoring an older copy would lose jobs. */
static int check_unreadable(struct carma_store *s, const char *path, struct carma_err *err)
{
    int full = sqlite3_system_errno(s->db) == ENOSPC; /* the one errno SQLite keeps reliably */
    return carma_err_set(err, full ? -ENOSPC : -EIO,
                         "store: %s cannot be read (%s%s); this is no damage of the file: "
                         "check its file system (free space, read-only, permissions, locks "
                         "held by another program)",
                         path, sqlite3_errmsg(s->db), full ? ": no space left on device" : "");
}

/* Whether extended result code rc says the file's content is damaged. */
static int is_damage(int rc)
{
    return (rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB;
}

/* PRAGMA quick_check, bounded by CARMA_STORE_CHECK_S seconds (a store of years of
 * monitor records must not hold the start for long): damage is -EIO naming what is
 * wrong; running out of time only sets check_incomplete. Run before any write, so
 * that carmad does not add to a damaged file. */
static int check_store(struct carma_store *s, const char *path, struct carma_err *err)
{
    double deadline = carma_mono_s() + CARMA_STORE_CHECK_S;
    sqlite3_stmt *q;
    int rc = sqlite3_prepare_v2(s->db, "PRAGMA quick_check(3)", -1, &q, NULL);
    if (rc != SQLITE_OK && !is_damage(rc))
        return check_unreadable(s, path, err);
    if (rc != SQLITE_OK)
        return carma_err_set(err, -EIO, "store: %s is damaged (%s); restore it from a backup",
                             path, sqlite3_errmsg(s->db));
    sqlite3_progress_handler(s->db, 10000, check_deadline, &deadline);
    char what[512] = "";
    size_t len = 0;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(q, 0);
        if (!t || !strcmp(t, "ok"))
            continue;
        int n = snprintf(what + len, sizeof what - len, "%s%s", len ? "; " : "", t);
        if (n > 0)
            len = len + (size_t)n < sizeof what ? len + (size_t)n : sizeof what - 1;
    }
    sqlite3_progress_handler(s->db, 0, NULL, NULL);
    if (rc == SQLITE_INTERRUPT) {
        s->check_incomplete = 1;
        rc = SQLITE_DONE;
    } else if (rc != SQLITE_DONE && !is_damage(rc)) {
        int ret = check_unreadable(s, path, err);
        sqlite3_finalize(q);
        return ret;
    } else if (rc != SQLITE_DONE) {
        snprintf(what, sizeof what, "%s", sqlite3_errmsg(s->db));
    }
    sqlite3_finalize(q);
    if (rc == SQLITE_DONE && !what[0])
        return 0;
    return carma_err_set(err, -EIO,
                         "store: %s is damaged (quick_check: %s); carmad will not run on it: "
                         "restore it from a backup, or rebuild it with sqlite3's .recover",
                         path, what);
}

int carma_store_open(struct carma_store **out, const char *path, struct carma_err *err)
{
    *out = NULL;
    struct carma_store *s = calloc(1, sizeof *s);
    if (!s)
        return carma_err_set(err, -ENOMEM, "out of memory");
    int rc = prepare_files(s, path, err);
    if (rc) {
        free(s);
        return rc;
    }
    rc = sqlite3_open_v2(path, &s->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        rc = carma_err_set(err, -EIO, "store: %s: %s", path,
                           s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
        sqlite3_close(s->db);
        free(s);
        return rc;
    }
    sqlite3_busy_timeout(s->db, 5000);
    sqlite3_extended_result_codes(s->db, 1);
    if ((rc = check_store(s, path, err)) ||
        (rc = exec_sql(s,
                       "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                       "PRAGMA foreign_keys=ON;",
                       err)) ||
        (rc = migrate(s, path, err)))
        goto fail;
    const char *mp = getenv("CARMA_TEST_STORE_MAX_PAGES");
    if (mp && *mp) {
        char sql[64];
        long pages = 0;
        sqlite3_stmt *pc;
        if (sqlite3_prepare_v2(s->db, "PRAGMA page_count", -1, &pc, NULL) == SQLITE_OK) {
            if (sqlite3_step(pc) == SQLITE_ROW)
                pages = (long)sqlite3_column_int64(pc, 0);
            sqlite3_finalize(pc);
        }
        snprintf(sql, sizeof sql, "PRAGMA max_page_count=%ld", pages + strtol(mp, NULL, 10));
        if ((rc = exec_sql(s, sql, err)))
            goto fail;
    }
    for (int i = 0; i < ST_COUNT; i++)
        if (sqlite3_prepare_v3(s->db, sql_text[i], -1, SQLITE_PREPARE_PERSISTENT, &s->st[i],
                               NULL) != SQLITE_OK) {
            rc = db_err(s, SQLITE_ERROR, "preparing statements", err);
            goto fail;
        }
    *out = s;
    return 0;
fail:
    carma_store_close(s);
    return rc;
}

void carma_store_close(struct carma_store *s)
{
    if (!s)
        return;
    if (s->in_tx)
        carma_store_rollback(s);
    for (int i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(s->st[i]);
    for (int i = 0; i < CARMA_STORE_CACHED; i++)
        sqlite3_finalize(s->cached[i]);
    sqlite3_close(s->db);
    free(s);
}

int carma_store_version_found(const struct carma_store *s)
{
    return s->version_found;
}

const char *carma_store_pre_migration_copy(const struct carma_store *s, int *made)
{
    *made = s->copy_made;
    return s->copy_made ? s->copy_path : NULL;
}

unsigned carma_store_modes_fixed(const struct carma_store *s)
{
    return s->modes_fixed;
}

int carma_store_check_incomplete(const struct carma_store *s)
{
    return s->check_incomplete;
}

int carma_store_max_job_id(struct carma_store *s, uint64_t *id, struct carma_err *err)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(s->db, "SELECT max(id) FROM jobs", -1, &q, NULL) != SQLITE_OK)
        return db_err(s, SQLITE_ERROR, "reading the highest job id", err);
    int rc = sqlite3_step(q);
    *id = rc == SQLITE_ROW ? (uint64_t)sqlite3_column_int64(q, 0) : 0;
    sqlite3_finalize(q);
    return rc == SQLITE_ROW ? 0 : db_err(s, rc, "reading the highest job id", err);
}

int carma_store_job_ids(struct carma_store *s, uint64_t below, uint64_t **ids, size_t *n,
                        struct carma_err *err)
{
    *ids = NULL;
    *n = 0;
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(s->db, "SELECT id FROM jobs WHERE id < ?1 ORDER BY id", -1, &q, NULL) !=
        SQLITE_OK)
        return db_err(s, SQLITE_ERROR, "reading the job ids", err);
    sqlite3_bind_int64(q, 1, below > INT64_MAX ? INT64_MAX : (sqlite3_int64)below);
    uint64_t *v = NULL;
    size_t len = 0, cap = 0;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (len == cap) {
            size_t nc = cap ? cap * 2 : 1024;
            uint64_t *nv = realloc(v, nc * sizeof *nv);
            if (!nv) {
                sqlite3_finalize(q);
                free(v);
                return carma_err_set(err, -ENOMEM, "store: reading the job ids: out of memory");
            }
            v = nv;
            cap = nc;
        }
        v[len++] = (uint64_t)sqlite3_column_int64(q, 0);
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) {
        free(v);
        return db_err(s, rc, "reading the job ids", err);
    }
    *ids = v;
    *n = len;
    return 0;
}

/* A statement read to its end or as far as needed: ready for its next run. */
static void row_done(sqlite3_stmt *q)
{
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
}

/* Runs a prepared statement that returns no rows, then resets it. */
static int run(struct carma_store *s, int which, const char *what, struct carma_err *err)
{
    sqlite3_stmt *q = s->st[which];
    int ret = 0;
    if (s->lost_code) { /* the transaction is gone: answer its error, run nothing */
        if (err)
            *err = s->lost;
        ret = s->lost_code;
    } else {
        int rc = sqlite3_step(q);
        if (rc != SQLITE_DONE && rc != SQLITE_ROW)
            ret = db_err(s, rc, what, err);
    }
    row_done(q);
    return ret;
}

int carma_store_begin(struct carma_store *s, struct carma_err *err)
{
    assert(!s->in_tx);
    int rc = run(s, ST_BEGIN, "begin", err);
    if (!rc)
        s->in_tx = 1;
    return rc;
}

int carma_store_commit(struct carma_store *s, struct carma_err *err)
{
    assert(s->in_tx && !s->in_savepoint);
    int rc = run(s, ST_COMMIT, "commit", err);
    if (rc) {
        carma_store_rollback(s);
        return rc;
    }
    s->in_tx = 0;
    return 0;
}

void carma_store_rollback(struct carma_store *s)
{
    s->lost_code = 0;
    if (!sqlite3_get_autocommit(s->db))
        run(s, ST_ROLLBACK, "rollback", NULL); /* (its savepoint goes with it) */
    s->in_tx = 0;
    s->in_savepoint = 0;
}

int carma_store_savepoint(struct carma_store *s, struct carma_err *err)
{
    assert(s->in_tx && !s->in_savepoint);
    int rc = run(s, ST_SAVEPOINT, "savepoint", err);
    if (!rc)
        s->in_savepoint = 1;
    return rc;
}

int carma_store_release(struct carma_store *s, struct carma_err *err)
{
    assert(s->in_tx && s->in_savepoint);
    int rc = run(s, ST_RELEASE, "releasing a savepoint", err);
    if (!rc)
        s->in_savepoint = 0;
    return rc;
}

void carma_store_rollback_to(struct carma_store *s)
{
    assert(s->in_tx && s->in_savepoint);
    s->in_savepoint = 0;
    if (s->lost_code) /* SQLite rolled the whole transaction back: nothing to undo */
        return;
    struct carma_err e = {{0}};
    int rc = sqlite3_get_autocommit(s->db)
                 ? carma_err_set(&e, -EIO, "store: the transaction was rolled back")
                 : run(s, ST_ROLLBACK_TO, "rolling back to a savepoint", &e);
    if (!rc)
        rc = run(s, ST_RELEASE, "releasing a savepoint", &e);
    if (rc && !s->lost_code) {
        /* what was written since the savepoint may still be in the transaction: it is
         * lost, its commit fails and rolls it back */
        s->lost_code = rc;
        s->lost = e;
    }
}

struct sqlite3 *carma_store_sqlite(struct carma_store *s)
{
    return s->db;
}

sqlite3_stmt *carma_store_cached(struct carma_store *s, unsigned slot, const char *sql)
{
    assert(slot < CARMA_STORE_CACHED);
    sqlite3_stmt **q = &s->cached[slot];
    if (*q) {
        row_done(*q);
        return *q;
    }
    if (sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, q, NULL) != SQLITE_OK) {
        sqlite3_finalize(*q);
        *q = NULL;
    }
    return *q;
}

int carma_store_in_tx(const struct carma_store *s)
{
    return s->in_tx;
}

/* A peak, NULL when 0 (not known: no history, no bound from it). */
static void bind_peak(sqlite3_stmt *q, int i, uint64_t peak_mib)
{
    if (peak_mib)
        sqlite3_bind_int64(q, i, (sqlite3_int64)peak_mib);
    else
        sqlite3_bind_null(q, i);
}

static void bind_text_or_null(sqlite3_stmt *q, int i, const char *t)
{
    if (t)
        sqlite3_bind_text(q, i, t, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(q, i);
}

static void bind_time(sqlite3_stmt *q, int i, double t)
{
    if (t >= 0)
        sqlite3_bind_double(q, i, t);
    else
        sqlite3_bind_null(q, i);
}

int carma_store_job_insert(struct carma_store *s, struct carma_job_rec *r, struct carma_err *err)
{
    sqlite3_stmt *q = s->st[ST_JOB_INSERT];
    int i = 1;
    sqlite3_bind_text(q, i++, r->name ? r->name : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, i++, r->uid);
    sqlite3_bind_int64(q, i++, r->gid);
    sqlite3_bind_text(q, i++, r->user ? r->user : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(q, i++, r->cwd, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, i++, r->argv_json, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, i++, r->env_json ? r->env_json : "{}", -1, SQLITE_STATIC);
    bind_text_or_null(q, i++, r->summary);
    sqlite3_bind_int64(q, i++, r->batch);
    sqlite3_bind_int64(q, i++, r->gpus);
    sqlite3_bind_int64(q, i++, (sqlite3_int64)r->mem_mib);
    sqlite3_bind_int64(q, i++, (sqlite3_int64)r->bound_mib);
    sqlite3_bind_int64(q, i++, (sqlite3_int64)r->peak_mib);
    sqlite3_bind_int64(q, i++, r->max_attempts);
    sqlite3_bind_int64(q, i++, r->attempts);
    sqlite3_bind_text(q, i++, carma_job_state_name(r->state), -1, SQLITE_STATIC);
    sqlite3_bind_int(q, i++, r->exclusive);
    sqlite3_bind_int(q, i++, r->cancel_requested);
    sqlite3_bind_double(q, i++, r->submit_s);
    bind_text_or_null(q, i++, r->bound_basis);
    if (r->hist_sig)
        sqlite3_bind_int64(q, i++, (sqlite3_int64)r->hist_sig);
    else
        sqlite3_bind_null(q, i++);
    if (r->umask >= 0 && r->umask <= 0777)
        sqlite3_bind_int(q, i++, r->umask);
    else
        sqlite3_bind_null(q, i++);
    bind_text_or_null(q, i++, r->rlimits);
    bind_text_or_null(q, i++, r->after);
    if (r->time_limit_s)
        sqlite3_bind_int64(q, i++, r->time_limit_s);
    else
        sqlite3_bind_null(q, i++);
    int rc = run(s, ST_JOB_INSERT, "saving the job", err);
    if (!rc)
        r->id = (uint64_t)sqlite3_last_insert_rowid(s->db);
    return rc;
}

int carma_store_job_update(struct carma_store *s, const struct carma_job_rec *r,
                           struct carma_err *err)
{
    sqlite3_stmt *q = s->st[ST_JOB_UPDATE];
    int i = 1;
    sqlite3_bind_text(q, i++, carma_job_state_name(r->state), -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, i++, r->attempts);
    sqlite3_bind_int64(q, i++, r->max_attempts);
    sqlite3_bind_int64(q, i++, (sqlite3_int64)r->bound_mib);
    sqlite3_bind_int64(q, i++, (sqlite3_int64)r->peak_mib);
    sqlite3_bind_int64(q, i++, (sqlite3_int64)r->mem_mib);
    sqlite3_bind_int(q, i++, r->exclusive);
    sqlite3_bind_int(q, i++, r->cancel_requested);
    bind_time(q, i++, r->start_s);
    bind_time(q, i++, r->end_s);
    if (r->exit_code >= 0)
        sqlite3_bind_int(q, i++, r->exit_code);
    else
        sqlite3_bind_null(q, i++);
    if (r->signal > 0)
        sqlite3_bind_int(q, i++, r->signal);
    else
        sqlite3_bind_null(q, i++);
    bind_text_or_null(q, i++, r->reason);
    sqlite3_bind_int64(q, i++, (sqlite3_int64)r->id);
    int rc = run(s, ST_JOB_UPDATE, "updating the job", err);
    if (!rc && sqlite3_changes(s->db) != 1)
        return carma_err_set(err, -ENOENT, "store: no job %llu", (unsigned long long)r->id);
    return rc;
}

static char *col_dup(sqlite3_stmt *q, int c)
{
    const unsigned char *t = sqlite3_column_text(q, c);
    return t ? strdup((const char *)t) : NULL;
}

/* A user name as shown (JSON, /metrics): the password database's names need not be UTF-8
 * (LDAP, useradd --badname), and jansson refuses a string that is not: a byte that starts
 * no well-formed sequence reads as U+FFFD. NULL for NULL or out of memory. */
static char *col_user(sqlite3_stmt *q, int c)
{
    const unsigned char *t = sqlite3_column_text(q, c);
    return t ? carma_utf8_lossy((const char *)t) : NULL;
}

static double col_time(sqlite3_stmt *q, int c)
{
    return sqlite3_column_type(q, c) == SQLITE_NULL ? -1.0 : sqlite3_column_double(q, c);
}

static int row_to_rec(sqlite3_stmt *q, struct carma_job_rec *r)
{
    carma_job_rec_clear(r);
    int c = 0;
    r->id = (uint64_t)sqlite3_column_int64(q, c++);
    r->name = col_dup(q, c++);
    r->uid = (uint32_t)sqlite3_column_int64(q, c++);
    r->gid = (uint32_t)sqlite3_column_int64(q, c++);
    r->user = col_user(q, c++);
    r->cwd = col_dup(q, c++);
    r->argv_json = col_dup(q, c++);
    r->env_json = col_dup(q, c++);
    r->summary = col_dup(q, c++);
    r->batch = (uint32_t)sqlite3_column_int64(q, c++);
    r->gpus = (uint32_t)sqlite3_column_int64(q, c++);
    r->mem_mib = (uint64_t)sqlite3_column_int64(q, c++);
    r->bound_mib = (uint64_t)sqlite3_column_int64(q, c++);
    r->peak_mib = (uint64_t)sqlite3_column_int64(q, c++);
    r->max_attempts = (uint32_t)sqlite3_column_int64(q, c++);
    r->attempts = (uint32_t)sqlite3_column_int64(q, c++);
    const unsigned char *st = sqlite3_column_text(q, c++);
    r->state = st ? carma_job_state_parse((const char *)st) : -1;
    r->exclusive = sqlite3_column_int(q, c++);
    r->cancel_requested = sqlite3_column_int(q, c++);
    r->submit_s = sqlite3_column_double(q, c++);
    r->start_s = col_time(q, c++);
    r->end_s = col_time(q, c++);
    r->exit_code = sqlite3_column_type(q, c) == SQLITE_NULL ? -1 : sqlite3_column_int(q, c);
    c++;
    r->signal = sqlite3_column_type(q, c) == SQLITE_NULL ? 0 : sqlite3_column_int(q, c);
    c++;
    r->reason = col_dup(q, c++);
    r->bound_basis = col_dup(q, c++);
    r->hist_sig = sqlite3_column_type(q, c) == SQLITE_NULL ? 0
                                                          : (uint64_t)sqlite3_column_int64(q, c);
    c++;
    r->umask = sqlite3_column_type(q, c) == SQLITE_NULL ? -1 : sqlite3_column_int(q, c);
    c++;
    r->rlimits = col_dup(q, c++); /* NULL: none */
    int after_null = sqlite3_column_type(q, c) == SQLITE_NULL;
    r->after = col_dup(q, c++); /* NULL: none */
    /* NULL: none; a value out of the CHECK's range, which no carmad wrote, reads as none */
    sqlite3_int64 tl = sqlite3_column_int64(q, c++);
    r->time_limit_s = tl >= 1 && tl <= 31536000 ? (uint32_t)tl : 0;
    if (sqlite3_column_count(q) > c + 2) {
        r->run_s = sqlite3_column_double(q, c++);
        r->gpu_s = sqlite3_column_double(q, c++);
        r->energy_j = sqlite3_column_double(q, c++);
    }
    if (!r->name || !r->user || !r->cwd || !r->argv_json || !r->env_json || r->state < 0 ||
        (!after_null && !r->after))
        return -ENOMEM;
    return 0;
}

int carma_store_job_get(struct carma_store *s, uint64_t id, struct carma_job_rec *r,
                        struct carma_err *err)
{
    sqlite3_stmt *q = s->st[ST_JOB_GET];
    sqlite3_bind_int64(q, 1, (sqlite3_int64)id);
    int rc = sqlite3_step(q);
    int ret;
    if (rc == SQLITE_ROW)
        ret = row_to_rec(q, r) ? carma_err_set(err, -ENOMEM, "store: bad row for job %llu",
                                                (unsigned long long)id)
                                : 0;
    else if (rc == SQLITE_DONE)
        ret = carma_err_set(err, -ENOENT, "no job %llu", (unsigned long long)id);
    else
        ret = db_err(s, rc, "reading a job", err);
    row_done(q);
    return ret;
}

int carma_store_job_uid(struct carma_store *s, uint64_t id, uid_t *uid, struct carma_err *err)
{
    sqlite3_stmt *q = s->st[ST_JOB_UID];
    sqlite3_bind_int64(q, 1, (sqlite3_int64)id);
    int rc = sqlite3_step(q);
    int ret = 0;
    if (rc == SQLITE_ROW)
        *uid = (uid_t)sqlite3_column_int64(q, 0);
    else if (rc == SQLITE_DONE)
        ret = carma_err_set(err, -ENOENT, "no job %llu", (unsigned long long)id);
    else
        ret = db_err(s, rc, "reading a job", err);
    row_done(q);
    return ret;
}

int carma_store_job_state(struct carma_store *s, uint64_t id, uid_t *uid, int *state,
                          struct carma_err *err)
{
    sqlite3_stmt *q = s->st[ST_JOB_STATE];
    sqlite3_bind_int64(q, 1, (sqlite3_int64)id);
    int rc = sqlite3_step(q);
    int ret = 0;
    if (rc == SQLITE_ROW) {
        *uid = (uid_t)sqlite3_column_int64(q, 0);
        const unsigned char *t = sqlite3_column_text(q, 1);
        *state = t ? carma_job_state_parse((const char *)t) : -1;
        if (*state < 0)
            ret =
                carma_err_set(err, -EIO, "store: job %llu: unknown state", (unsigned long long)id);
    } else if (rc == SQLITE_DONE) {
        ret = carma_err_set(err, -ENOENT, "no job %llu", (unsigned long long)id);
    } else {
        ret = db_err(s, rc, "reading a job", err);
    }
    row_done(q);
    return ret;
}

int carma_store_after_parse(const char *text, uint64_t *ids, size_t *n)
{
    *n = 0;
    if (!text)
        return 0;
    json_error_t je;
    json_t *a = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    int ok =
        json_is_array(a) && json_array_size(a) >= 1 && json_array_size(a) <= CARMA_PROTO_MAX_AFTER;
    for (size_t k = 0; ok && k < json_array_size(a); k++) {
        const json_t *x = json_array_get(a, k);
        ok = json_is_integer(x) && json_integer_value(x) >= 1;
        if (ok)
            ids[k] = (uint64_t)json_integer_value(x);
    }
    if (ok)
        *n = json_array_size(a);
    json_decref(a);
    return ok ? 0 : -EINVAL;
}

int carma_store_jobs_active(struct carma_store *s, int (*fn)(void *ctx, struct carma_job_rec *r),
                            void *ctx, struct carma_err *err)
{
    sqlite3_stmt *q = s->st[ST_ACTIVE];
    struct carma_job_rec r = {0};
    carma_job_rec_clear(&r);
    int rc, ret = 0;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (row_to_rec(q, &r)) {
            ret = carma_err_set(err, -ENOMEM, "store: bad job row");
            break;
        }
        if ((ret = fn(ctx, &r)))
            break;
    }
    if (!ret && rc != SQLITE_DONE && rc != SQLITE_ROW)
        ret = db_err(s, rc, "listing jobs", err);
    carma_job_rec_clear(&r);
    sqlite3_reset(q);
    return ret;
}

int carma_store_attempt_begin(struct carma_store *s, uint64_t job, uint32_t n,
                              const char *gpus_json, const char *gpu_kind, double start_s,
                              struct carma_err *err)
{
    sqlite3_stmt *q = s->st[ST_ATT_BEGIN];
    sqlite3_bind_int64(q, 1, (sqlite3_int64)job);
    sqlite3_bind_int64(q, 2, n);
    sqlite3_bind_text(q, 3, gpus_json, -1, SQLITE_STATIC);
    sqlite3_bind_double(q, 4, start_s);
    bind_text_or_null(q, 5, gpu_kind);
    return run(s, ST_ATT_BEGIN, "recording an attempt", err);
}

int carma_store_attempt_pid(struct carma_store *s, uint64_t job, uint32_t n, pid_t pid,
                            struct carma_err *err)
{
    sqlite3_stmt *q = s->st[ST_ATT_PID];
    sqlite3_bind_int64(q, 1, pid);
    sqlite3_bind_int64(q, 2, (sqlite3_int64)job);
    sqlite3_bind_int64(q, 3, n);
    return run(s, ST_ATT_PID, "recording a shepherd", err);
}

int carma_store_attempt_end(struct carma_store *s, uint64_t job, uint32_t n, double end_s,
                            const char *outcome, int exit_code, int sig, uint64_t peak_mib,
                            unsigned peak_partial, const char *reason, struct carma_err *err)
{
    sqlite3_stmt *q = s->st[ST_ATT_END];
    sqlite3_bind_double(q, 1, end_s);
    sqlite3_bind_text(q, 2, outcome, -1, SQLITE_STATIC);
    if (exit_code >= 0)
        sqlite3_bind_int(q, 3, exit_code);
    else
        sqlite3_bind_null(q, 3);
    if (sig > 0)
        sqlite3_bind_int(q, 4, sig);
    else
        sqlite3_bind_null(q, 4);
    bind_peak(q, 5, peak_mib);
    sqlite3_bind_int64(q, 6, peak_partial);
    if (reason)
        sqlite3_bind_text(q, 7, reason, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(q, 7);
    sqlite3_bind_int64(q, 8, (sqlite3_int64)job);
    sqlite3_bind_int64(q, 9, n);
    return run(s, ST_ATT_END, "ending an attempt", err);
}

/* Steps statement `which`, whose parameters 1 and 2 are attempt n of job: 1 with that
 * attempt's row to read (the caller then calls row_done), else, the statement reset,
 * -ENOENT when there is no such attempt, or the error of reading `what`. */
static int attempt_row(struct carma_store *s, int which, uint64_t job, uint32_t n, const char *what,
                       struct carma_err *err)
{
    sqlite3_stmt *q = s->st[which];
    sqlite3_bind_int64(q, 1, (sqlite3_int64)job);
    sqlite3_bind_int64(q, 2, n);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        return 1;
    int ret = rc == SQLITE_DONE ? carma_err_set(err, -ENOENT, "no attempt %u of job %llu", n,
                                                (unsigned long long)job)
                                : db_err(s, rc, what, err);
    row_done(q);
    return ret;
}

int carma_store_attempt_peak_put(struct carma_store *s, uint64_t job, uint32_t n, uint64_t peak_mib,
                                 unsigned peak_partial, struct carma_err *err)
{
    sqlite3_stmt *q = s->st[ST_ATT_PEAK_PUT];
    bind_peak(q, 1, peak_mib);
    sqlite3_bind_int64(q, 2, peak_partial);
    sqlite3_bind_int64(q, 3, (sqlite3_int64)job);
    sqlite3_bind_int64(q, 4, n);
    return run(s, ST_ATT_PEAK_PUT, "recording an attempt's peak", err);
}

int carma_store_attempt_peak_get(struct carma_store *s, uint64_t job, uint32_t n,
                                 uint64_t *peak_mib, unsigned *peak_partial, struct carma_err *err)
{
    sqlite3_stmt *q = s->st[ST_ATT_PEAK_GET];
    *peak_mib = 0;
    *peak_partial = 0;
    int rc = attempt_row(s, ST_ATT_PEAK_GET, job, n, "reading an attempt's peak", err);
    if (rc != 1)
        return rc;
    sqlite3_int64 p = sqlite3_column_int64(q, 0);
    *peak_mib = p > 0 ? (uint64_t)p : 0;
    *peak_partial = (unsigned)sqlite3_column_int64(q, 1);
    row_done(q);
    return 0;
}

int carma_store_attempt_xid_put(struct carma_store *s, uint64_t job, uint32_t n,
                                const struct carma_store_xid *x, struct carma_err *err)
{
    sqlite3_stmt *q = s->st[ST_ATT_XID_PUT];
    sqlite3_bind_int64(q, 1, (sqlite3_int64)x->xid);
    sqlite3_bind_int64(q, 2, x->gpu);
    sqlite3_bind_double(q, 3, x->t);
    sqlite3_bind_int(q, 4, x->shared != 0);
    if (x->via && x->via <= INT64_MAX)
        sqlite3_bind_int64(q, 5, (sqlite3_int64)x->via);
    else
        sqlite3_bind_null(q, 5);
    sqlite3_bind_int64(q, 6, (sqlite3_int64)job);
    sqlite3_bind_int64(q, 7, n);
    return run(s, ST_ATT_XID_PUT, "recording an attempt's Xid", err);
}

int carma_store_attempt_xid_get(struct carma_store *s, uint64_t job, uint32_t n,
                                struct carma_store_xid *x, struct carma_err *err)
{
    sqlite3_stmt *q = s->st[ST_ATT_XID_GET];
    memset(x, 0, sizeof *x);
    int rc = attempt_row(s, ST_ATT_XID_GET, job, n, "reading an attempt's Xid", err);
    if (rc != 1)
        return rc;
    int ret = sqlite3_column_type(q, 0) != SQLITE_NULL;
    if (ret) {
        x->xid = (uint64_t)sqlite3_column_int64(q, 0);
        sqlite3_int64 g = sqlite3_column_int64(q, 1);
        x->gpu = g >= 0 && g <= UINT_MAX ? (unsigned)g : 0;
        x->t = sqlite3_column_double(q, 2);
        x->shared = sqlite3_column_int(q, 3) != 0;
        sqlite3_int64 v = sqlite3_column_int64(q, 4); /* NULL: 0 */
        x->via = v > 0 ? (uint64_t)v : 0;
    }
    row_done(q);
    return ret;
}

int carma_store_attempt_seen_put(struct carma_store *s, uint64_t job, uint32_t n, double seen_s,
                                 struct carma_err *err)
{
    sqlite3_stmt *q = s->st[ST_ATT_SEEN_PUT];
    sqlite3_bind_double(q, 1, seen_s);
    sqlite3_bind_int64(q, 2, (sqlite3_int64)job);
    sqlite3_bind_int64(q, 3, n);
    return run(s, ST_ATT_SEEN_PUT, "recording when an attempt was seen on its GPUs", err);
}

int carma_store_attempt_seen_get(struct carma_store *s, uint64_t job, uint32_t n, double *seen_s,
                                 struct carma_err *err)
{
    sqlite3_stmt *q = s->st[ST_ATT_SEEN_GET];
    *seen_s = -1;
    int rc = attempt_row(s, ST_ATT_SEEN_GET, job, n, "reading when an attempt was seen on its GPUs",
                         err);
    if (rc != 1)
        return rc;
    int ret = sqlite3_column_type(q, 0) != SQLITE_NULL;
    if (ret)
        *seen_s = sqlite3_column_double(q, 0);
    row_done(q);
    return ret;
}

int carma_store_job_forget_env(struct carma_store *s, uint64_t job, struct carma_err *err)
{
    sqlite3_bind_int64(s->st[ST_JOB_FORGET_ENV], 1, (sqlite3_int64)job);
    return run(s, ST_JOB_FORGET_ENV, "clearing a job's environment", err);
}

int carma_store_attempt_forget(struct carma_store *s, uint64_t job, uint32_t n,
                               struct carma_err *err)
{
    static const int st[] = {ST_USAGE_DEL, ST_ATT_DEL};
    for (size_t k = 0; k < sizeof st / sizeof st[0]; k++) {
        sqlite3_stmt *q = s->st[st[k]];
        sqlite3_bind_int64(q, 1, (sqlite3_int64)job);
        sqlite3_bind_int64(q, 2, n);
        int rc = run(s, st[k], "forgetting an attempt", err);
        if (rc)
            return rc;
    }
    return 0;
}

int carma_store_attempt_gpus(struct carma_store *s, uint64_t job, uint32_t n, char **out,
                             double *start_s, struct carma_err *err)
{
    sqlite3_stmt *q = s->st[ST_ATT_GPUS];
    if (out)
        *out = NULL;
    int rc = attempt_row(s, ST_ATT_GPUS, job, n, "reading an attempt", err);
    if (rc != 1)
        return rc;
    int ret = 0;
    if (start_s)
        *start_s = sqlite3_column_double(q, 1);
    if (out && !(*out = col_dup(q, 0)))
        ret = -ENOMEM;
    row_done(q);
    return ret;
}

/* Column c as JSON: null when SQL NULL, else an integer, a real or a string. */
static json_t *col_json_int(sqlite3_stmt *q, int c)
{
    return sqlite3_column_type(q, c) == SQLITE_NULL ? json_null()
                                                    : json_integer(sqlite3_column_int64(q, c));
}

static json_t *col_json_real(sqlite3_stmt *q, int c)
{
    return sqlite3_column_type(q, c) == SQLITE_NULL ? json_null()
                                                    : json_real(sqlite3_column_double(q, c));
}

static json_t *col_json_text(sqlite3_stmt *q, int c)
{
    return sqlite3_column_type(q, c) == SQLITE_NULL
               ? json_null()
               : json_string((const char *)sqlite3_column_text(q, c));
}

static json_t *time_json(double t)
{
    return t >= 0 ? json_real(t) : json_null();
}

json_t *carma_store_rec_json(const struct carma_job_rec *r)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "id", json_integer((json_int_t)r->id));
    json_object_set_new(o, "name", json_string(r->name ? r->name : ""));
    json_object_set_new(o, "user", json_string(r->user ? r->user : ""));
    json_object_set_new(o, "uid", json_integer(r->uid));
    json_object_set_new(o, "state", json_string(carma_job_state_name(r->state)));
    json_object_set_new(o, "attempts", json_integer(r->attempts));
    json_object_set_new(o, "max_attempts", json_integer(r->max_attempts));
    /* wall seconds each attempt may run (carma submit --time-limit); null: no limit */
    json_object_set_new(o, "time_limit_s",
                        r->time_limit_s ? json_integer(r->time_limit_s) : json_null());
    json_object_set_new(o, "gpus", json_integer(r->gpus));
    json_object_set_new(o, "mem_mib", json_integer((json_int_t)r->mem_mib));
    json_object_set_new(o, "bound_mib", json_integer((json_int_t)r->bound_mib));
    json_object_set_new(o, "peak_mib", json_integer((json_int_t)r->peak_mib));
    json_object_set_new(o, "bound_basis", r->bound_basis ? json_string(r->bound_basis)
                                                         : json_null());
    json_object_set_new(o, "submit_time", json_real(r->submit_s));
    json_object_set_new(o, "start_time", time_json(r->start_s));
    json_object_set_new(o, "end_time", time_json(r->end_s));
    json_object_set_new(o, "exit_code", r->exit_code >= 0 ? json_integer(r->exit_code)
                                                           : json_null());
    json_object_set_new(o, "signal", r->signal > 0 ? json_integer(r->signal) : json_null());
    json_object_set_new(o, "reason", r->reason ? json_string(r->reason) : json_null());
    /* the jobs it runs after, as submitted ([]: none; null: a damaged row) */
    uint64_t after[CARMA_PROTO_MAX_AFTER];
    size_t nafter;
    json_t *aj = json_array();
    if (carma_store_after_parse(r->after, after, &nafter)) {
        json_decref(aj);
        aj = json_null();
    }
    for (size_t k = 0; k < nafter; k++)
        json_array_append_new(aj, json_integer((json_int_t)after[k]));
    json_object_set_new(o, "after", aj);
    json_object_set_new(o, "run_s", json_real(r->run_s));
    json_object_set_new(o, "gpu_seconds", json_real(r->gpu_s));
    json_object_set_new(o, "energy_j", json_real(r->energy_j));
    double wait = r->end_s >= 0 ? r->end_s - r->submit_s - r->run_s : -1;
    json_object_set_new(o, "wait_s", wait >= 0 ? json_real(wait) : json_null());
    return o;
}

int carma_store_list_json(struct carma_store *s, int64_t uid, int all, uint64_t after,
                          uint32_t limit, json_t *arr, struct carma_err *err)
{
    char sql[1536];
    /* cwd, argv, env and the summary are not in a listed job's view: read as empty
     * (argv alone may be 256 KiB a job). */
    snprintf(sql, sizeof sql,
             "SELECT id,name,uid,gid,user,'','[]','{}',NULL," JOB_COLS_TAIL
             " FROM jobs WHERE %s %s AND id > ?2 ORDER BY id LIMIT %u",
             uid >= 0 ? "uid=?1" : "1", all ? "" : "AND state IN ('queued','running')", limit);
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK)
        return db_err(s, SQLITE_ERROR, "listing jobs", err);
    if (uid >= 0)
        sqlite3_bind_int64(q, 1, uid);
    sqlite3_bind_int64(q, 2, after > INT64_MAX ? INT64_MAX : (sqlite3_int64)after);
    struct carma_job_rec r = {0};
    carma_job_rec_clear(&r);
    int rc, ret = 0;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (row_to_rec(q, &r)) {
            ret = carma_err_set(err, -ENOMEM, "store: bad job row");
            break;
        }
        json_array_append_new(arr, carma_store_rec_json(&r));
    }
    if (!ret && rc != SQLITE_DONE)
        ret = db_err(s, rc, "listing jobs", err);
    carma_job_rec_clear(&r);
    sqlite3_finalize(q);
    return ret;
}

int carma_store_attempts_json(struct carma_store *s, uint64_t job, json_t **out,
                              struct carma_err *err)
{
    sqlite3_stmt *q = s->st[ST_ATT_LIST];
    sqlite3_bind_int64(q, 1, (sqlite3_int64)job);
    json_t *arr = json_array();
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        json_error_t je;
        const char *g = (const char *)sqlite3_column_text(q, 1);
        json_t *gpus = g ? json_loads(g, 0, &je) : NULL;
        json_t *o = json_pack(
            "{s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:I}", "n",
            (json_int_t)sqlite3_column_int64(q, 0), "gpus", gpus ? gpus : json_array(),
            "start_time", time_json(col_time(q, 2)), "end_time", time_json(col_time(q, 3)),
            "outcome", col_json_text(q, 4), "exit_code", col_json_int(q, 5), "signal",
            col_json_int(q, 6), "peak_mib", col_json_int(q, 7), "shepherd_pid", col_json_int(q, 8),
            "gpu_seconds", col_json_real(q, 9), "energy_j", col_json_real(q, 10), "solo_smact",
            col_json_real(q, 11), "peak_partial", (json_int_t)sqlite3_column_int64(q, 12));
        if (o)
            json_object_set_new(o, "reason", col_json_text(q, 13));
        if (o) /* "gpu_uuids", the job's name for them ("gpus" is a count on a job; kept
                * here for one release) */
            json_object_set(o, "gpu_uuids", json_object_get(o, "gpus"));
        if (o)
            json_array_append_new(arr, o);
    }
    int ret = rc == SQLITE_DONE ? 0 : db_err(s, rc, "listing attempts", err);
    row_done(q);
    if (ret) {
        json_decref(arr);
        return ret;
    }
    *out = arr;
    return 0;
}

/* ---- accounting, profiles and monitoring records ---- */

static void bind_opt(sqlite3_stmt *q, int i, double v)
{
    if (v >= 0)
        sqlite3_bind_double(q, i, v);
    else
        sqlite3_bind_null(q, i);
}

int carma_store_usage_put(struct carma_store *s, uint64_t job, uint32_t n, double gpu_s,
                          double energy_j, double solo_smact, struct carma_err *err)
{
    sqlite3_stmt *q = s->st[ST_USAGE_PUT];
    sqlite3_bind_int64(q, 1, (sqlite3_int64)job);
    sqlite3_bind_int64(q, 2, n);
    sqlite3_bind_double(q, 3, gpu_s > 0 ? gpu_s : 0);
    sqlite3_bind_double(q, 4, energy_j > 0 ? energy_j : 0);
    bind_opt(q, 5, solo_smact);
    return run(s, ST_USAGE_PUT, "recording accounting", err);
}

int carma_store_usage_get(struct carma_store *s, uint64_t job, uint32_t n, double *gpu_s,
                          double *energy_j, double *solo_smact, struct carma_err *err)
{
    sqlite3_stmt *q = s->st[ST_USAGE_GET];
    sqlite3_bind_int64(q, 1, (sqlite3_int64)job);
    sqlite3_bind_int64(q, 2, n);
    int rc = sqlite3_step(q), ret = 0;
    if (rc == SQLITE_ROW) {
        *gpu_s = sqlite3_column_double(q, 0);
        *energy_j = sqlite3_column_double(q, 1);
        *solo_smact = sqlite3_column_type(q, 2) == SQLITE_NULL ? -1 : sqlite3_column_double(q, 2);
    } else if (rc == SQLITE_DONE) {
        ret = -ENOENT;
    } else {
        ret = db_err(s, rc, "reading accounting", err);
    }
    row_done(q);
    return ret;
}

int carma_store_profile_get(struct carma_store *s, uint64_t sig, struct carma_profile *p,
                            struct carma_err *err)
{
    sqlite3_stmt *q = s->st[ST_PROF_GET];
    sqlite3_bind_int64(q, 1, (sqlite3_int64)sig);
    int rc = sqlite3_step(q), ret = 0;
    if (rc == SQLITE_ROW) {
        p->smact = sqlite3_column_double(q, 0);
        p->smocc = sqlite3_column_type(q, 1) == SQLITE_NULL ? -1 : sqlite3_column_double(q, 1);
        p->drama = sqlite3_column_type(q, 2) == SQLITE_NULL ? -1 : sqlite3_column_double(q, 2);
        p->runs = (uint32_t)sqlite3_column_int64(q, 3);
    } else if (rc == SQLITE_DONE) {
        ret = -ENOENT;
    } else {
        ret = db_err(s, rc, "reading a profile", err);
    }
    row_done(q);
    return ret;
}

int carma_store_profile_add(struct carma_store *s, uint64_t sig, double smact, double smocc,
                            double drama, double now, struct carma_err *err)
{
    if (!(smact >= 0 && smact <= 1))
        return carma_err_set(err, -EINVAL, "profile: SMACT %g out of [0, 1]", smact);
    sqlite3_stmt *q = s->st[ST_PROF_ADD];
    sqlite3_bind_int64(q, 1, (sqlite3_int64)sig);
    sqlite3_bind_double(q, 2, smact);
    bind_opt(q, 3, smocc);
    bind_opt(q, 4, drama);
    sqlite3_bind_double(q, 5, now);
    return run(s, ST_PROF_ADD, "recording a profile", err);
}

int carma_store_user_gpu_time(struct carma_store *s, double since,
                              int (*cb)(void *ctx, uint32_t uid, const char *user, uint32_t gpus,
                                        double start, double end),
                              void *ctx, struct carma_err *err)
{
    sqlite3_stmt *q = s->st[ST_USER_GPU_TIME];
    sqlite3_bind_double(q, 1, since);
    int rc, ret = 0;
    while (!ret && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        sqlite3_int64 uid = sqlite3_column_int64(q, 0), gpus = sqlite3_column_int64(q, 2);
        char *user = col_user(q, 1);
        double start = sqlite3_column_double(q, 3);
        double end = sqlite3_column_type(q, 4) == SQLITE_NULL ? -1 : sqlite3_column_double(q, 4);
        if (uid < 0 || uid > UINT32_MAX || gpus < 1 || gpus > 4096 || !isfinite(start) ||
            (end >= 0 && !(end >= start && isfinite(end)))) {
            free(user);
            continue; /* no time to charge: a row no carmad writes */
        }
        ret = cb(ctx, (uint32_t)uid, user ? user : "", (uint32_t)gpus, start, end);
        free(user);
    }
    if (!ret && rc != SQLITE_DONE)
        ret = db_err(s, rc, "reading the users' GPU time", err);
    row_done(q);
    return ret;
}

int carma_store_coloc_get(struct carma_store *s, const char *kind, struct carma_coloc_learnt *l,
                          struct carma_err *err)
{
    memset(l, 0, sizeof *l);
    sqlite3_stmt *q = s->st[ST_COLOC_GET];
    sqlite3_bind_text(q, 1, kind, -1, SQLITE_STATIC);
    int rc, ret = 0, knots = 0;
    while (!ret && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(q, 0);
        int mode = name ? carma_sharing_parse(name) : -1;
        sqlite3_int64 k = sqlite3_column_int64(q, 1);
        if (mode < 0 || sqlite3_column_type(q, 1) != SQLITE_INTEGER || k < 0 ||
            k >= CARMA_COLOC_KNOTS) {
            ret = carma_err_set(err, -EINVAL,
                                "the co-location correction of %s: a row for %s%s%s, "
                                "knot %lld, that no carmad writes",
                                kind[0] ? kind : "every GPU kind", name ? "'" : "",
                                name ? name : "no sharing mode", name ? "'" : "", (long long)k);
            break;
        }
        l->weight[mode][k] = (float)sqlite3_column_double(q, 2);
        l->logq[mode][k] = (float)sqlite3_column_double(q, 3);
        knots++;
    }
    if (!ret && rc != SQLITE_DONE)
        ret = db_err(s, rc, "reading the co-location correction", err);
    row_done(q);
    if (!ret && !carma_coloc_learnt_valid(l))
        ret = carma_err_set(err, -EINVAL,
                            "the co-location correction of %s: a weight or log "
                            "factor out of range",
                            kind[0] ? kind : "every GPU kind");
    if (ret)
        memset(l, 0, sizeof *l);
    return ret ? ret : knots;
}

int carma_store_coloc_put(struct carma_store *s, const char *kind,
                          const struct carma_coloc_learnt *l, struct carma_err *err)
{
    static const enum carma_sharing modes[] = {CARMA_SHARING_TIMESLICE, CARMA_SHARING_MPS};
    /* the kind's whole table: a row no carmad writes (one get refused) must not outlive it */
    sqlite3_bind_text(s->st[ST_COLOC_CLEAR], 1, kind, -1, SQLITE_STATIC);
    int rc = run(s, ST_COLOC_CLEAR, "recording the co-location correction", err);
    if (rc)
        return rc;
    for (size_t m = 0; m < 2; m++)
        for (int k = 0; k < CARMA_COLOC_KNOTS; k++) {
            enum carma_sharing mode = modes[m];
            if (!(l->weight[mode][k] > 0))
                continue;
            sqlite3_stmt *q = s->st[ST_COLOC_PUT];
            sqlite3_bind_text(q, 1, kind, -1, SQLITE_STATIC);
            sqlite3_bind_text(q, 2, carma_sharing_name(mode), -1, SQLITE_STATIC);
            sqlite3_bind_int(q, 3, k);
            sqlite3_bind_double(q, 4, l->weight[mode][k]);
            sqlite3_bind_double(q, 5, l->logq[mode][k]);
            rc = run(s, ST_COLOC_PUT, "recording the co-location correction", err);
            if (rc)
                return rc;
        }
    return 0;
}

int carma_store_gpu_id(struct carma_store *s, const char *uuid, const char *name,
                       uint64_t mem_total_mib, double power_max_w, int64_t *id,
                       struct carma_err *err)
{
    sqlite3_stmt *q = s->st[ST_GPU_ADD];
    sqlite3_bind_text(q, 1, uuid, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 3, (sqlite3_int64)mem_total_mib);
    bind_opt(q, 4, power_max_w);
    int rc = run(s, ST_GPU_ADD, "recording a GPU", err);
    if (rc)
        return rc;
    q = s->st[ST_GPU_GET];
    sqlite3_bind_text(q, 1, uuid, -1, SQLITE_STATIC);
    rc = sqlite3_step(q);
    int ret = 0;
    if (rc == SQLITE_ROW)
        *id = sqlite3_column_int64(q, 0);
    else
        ret = db_err(s, rc, "reading a GPU", err);
    row_done(q);
    return ret;
}

int carma_store_sample_insert(struct carma_store *s, const struct carma_store_sample *x,
                              struct carma_err *err)
{
    sqlite3_stmt *q = s->st[ST_SAMPLE_ADD];
    sqlite3_bind_int64(q, 1, x->gpu);
    sqlite3_bind_double(q, 2, x->t);
    sqlite3_bind_int64(q, 3, (sqlite3_int64)x->mem_mib);
    bind_opt(q, 4, x->util);
    bind_opt(q, 5, x->smact);
    bind_opt(q, 6, x->smocc);
    bind_opt(q, 7, x->drama);
    bind_opt(q, 8, x->tensor);
    bind_opt(q, 9, x->power_w);
    bind_opt(q, 10, x->energy_j);
    return run(s, ST_SAMPLE_ADD, "recording a sample", err);
}

int carma_store_samples_count(struct carma_store *s, uint64_t *n, struct carma_err *err)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(s->db, "SELECT count(*) FROM samples", -1, &q, NULL) != SQLITE_OK)
        return db_err(s, SQLITE_ERROR, "counting samples", err);
    int rc = sqlite3_step(q), ret = 0;
    if (rc == SQLITE_ROW)
        *n = (uint64_t)sqlite3_column_int64(q, 0);
    else
        ret = db_err(s, rc, "counting samples", err);
    sqlite3_finalize(q);
    return ret;
}

/* Deletes the oldest at most `limit` records of GPU gpu, only those older than
 * `before` when before >= 0; *n receives how many. On the primary key (gpu, t): no sort. */
static int samples_drop_oldest(struct carma_store *s, sqlite3_stmt *q, int64_t gpu, double before,
                               uint64_t limit, uint64_t *n, struct carma_err *err)
{
    sqlite3_bind_int64(q, 1, gpu);
    bind_time(q, 2, before);
    sqlite3_bind_int64(q, 3, limit > INT64_MAX ? INT64_MAX : (sqlite3_int64)limit);
    int rc = sqlite3_step(q);
    row_done(q);
    if (rc != SQLITE_DONE)
        return db_err(s, rc, "pruning samples", err);
    *n = (uint64_t)sqlite3_changes(s->db);
    return 0;
}

int carma_store_samples_prune(struct carma_store *s, double before, uint64_t drop_rows,
                              uint64_t batch, uint64_t *deleted, int *more, struct carma_err *err)
{
    uint64_t del = 0;
    int64_t gpu[1024];
    size_t ng = 0;
    *more = 0;
    if (deleted)
        *deleted = 0;
    if (!batch)
        batch = UINT64_MAX;
    sqlite3_stmt *qg = NULL, *q = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT id FROM gpus ORDER BY id", -1, &qg, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db,
                           "DELETE FROM samples WHERE gpu=?1 AND t IN (SELECT t FROM samples "
                           "WHERE gpu=?1 AND (?2 IS NULL OR t < ?2) ORDER BY t LIMIT ?3)",
                           -1, &q, NULL) != SQLITE_OK) {
        sqlite3_finalize(qg);
        return db_err(s, SQLITE_ERROR, "pruning samples", err);
    }
    int rc;
    while ((rc = sqlite3_step(qg)) == SQLITE_ROW && ng < sizeof gpu / sizeof gpu[0])
        gpu[ng++] = sqlite3_column_int64(qg, 0);
    sqlite3_finalize(qg);
    int ret = rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : db_err(s, rc, "pruning samples", err);
    /* By age first, then the oldest beyond the bound: drop_rows less what age took,
     * shared evenly among the GPUs (each records as often as the others). */
    for (size_t g = 0; !ret && g < ng && del < batch; g++) {
        uint64_t n = 0;
        ret = samples_drop_oldest(s, q, gpu[g], before >= 0 ? before : 0, batch - del, &n, err);
        del += n;
        *more |= del >= batch;
    }
    /* A GPU may hold fewer rows than its share (drained, or no longer this server's):
     * what it could not give is shared again among the others, pass after pass, until
     * drop_rows or the batch is reached or no GPU has a row left. */
    for (uint64_t got = 1; !ret && got && ng && del < drop_rows && del < batch;) {
        uint64_t per = (drop_rows - del + ng - 1) / ng;
        got = 0;
        for (size_t g = 0; !ret && g < ng && del < drop_rows && del < batch; g++) {
            uint64_t n = 0, k = per;
            if (k > batch - del)
                k = batch - del;
            if (k > drop_rows - del)
                k = drop_rows - del;
            ret = samples_drop_oldest(s, q, gpu[g], -1, k, &n, err);
            del += n;
            got += n;
        }
        *more |= del >= batch;
    }
    sqlite3_finalize(q);
    if (deleted)
        *deleted = del;
    return ret;
}

int carma_store_jobs_prune(struct carma_store *s, double before, uint32_t max_jobs, uint64_t *ids,
                           uint64_t *deleted, int *more, struct carma_err *err)
{
    *deleted = 0;
    *more = 0;
    /* The newest job stays: new ids follow the highest stored one, and a removed job's id
     * (its folder of logs among them) is never given again. */
    char sql[512];
    int ret = 0;
    sqlite3_stmt *q = NULL;
    if ((ret = exec_sql(s,
                        "CREATE TEMP TABLE IF NOT EXISTS p(id INTEGER PRIMARY KEY);"
                        "DELETE FROM p",
                        err)))
        return ret;
    snprintf(sql, sizeof sql,
             "INSERT INTO p SELECT id FROM jobs WHERE end_time IS NOT NULL AND end_time < ?1 "
             "AND state NOT IN ('queued','running') AND id < (SELECT max(id) FROM jobs) "
             "ORDER BY end_time LIMIT %u",
             max_jobs);
    if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK)
        return db_err(s, SQLITE_ERROR, "pruning jobs", err);
    sqlite3_bind_double(q, 1, before);
    int rc = sqlite3_step(q);
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE)
        return db_err(s, rc, "pruning jobs", err);
    uint64_t n = (uint64_t)sqlite3_changes(s->db);
    if (n && ids) {
        if (sqlite3_prepare_v2(s->db, "SELECT id FROM p ORDER BY id", -1, &q, NULL) != SQLITE_OK)
            return db_err(s, SQLITE_ERROR, "pruning jobs", err);
        uint64_t k = 0;
        while ((rc = sqlite3_step(q)) == SQLITE_ROW && k < max_jobs)
            ids[k++] = (uint64_t)sqlite3_column_int64(q, 0);
        sqlite3_finalize(q);
        if (rc != SQLITE_DONE && rc != SQLITE_ROW)
            return db_err(s, rc, "pruning jobs", err);
        n = k;
    }
    if (n)
        ret = exec_sql(s,
                       "DELETE FROM usage WHERE job_id IN (SELECT id FROM p);"
                       "DELETE FROM attempts WHERE job_id IN (SELECT id FROM p);"
                       "DELETE FROM jobs WHERE id IN (SELECT id FROM p)",
                       err);
    if (!ret) {
        *deleted = n;
        *more = n >= max_jobs;
    }
    return ret;
}

int carma_store_usage_json(struct carma_store *s, int64_t uid, const char *user, double since,
                           double until, double now, json_t **out, struct carma_err *err)
{
    /* Per job first (its attempts' sums), then per uid, named as its newest job is: a name
     * that passed to a new account keeps its old uid's jobs apart. */
    static const char sql[] =
        "WITH j AS (SELECT jobs.id, jobs.uid, jobs.user, jobs.submit_time, jobs.end_time,"
        " (SELECT count(*) FROM attempts a WHERE a.job_id=jobs.id) AS natt,"
        " (SELECT count(*) FROM attempts a WHERE a.job_id=jobs.id AND a.outcome='oom') AS noom,"
        " (SELECT total(coalesce(a.end_time, ?3) - a.start_time) FROM attempts a"
        "   WHERE a.job_id=jobs.id) AS run_s,"
        /* run time x GPUs held, live for a running attempt as run_s is */
        " (SELECT total((coalesce(a.end_time, ?3) - a.start_time) * json_array_length(a.gpus))"
        "   FROM attempts a WHERE a.job_id=jobs.id) AS gpu_s,"
        " (SELECT total(u.energy_j) FROM usage u WHERE u.job_id=jobs.id) AS energy_j"
        " FROM jobs WHERE (?1 IS NULL OR submit_time >= ?1) AND (?2 IS NULL OR submit_time < ?2)"
        " AND (?4 IS NULL OR user = ?4) AND (?5 IS NULL OR uid = ?5))"
        /* with max(id), SQLite takes the bare column user from the newest job */
        " SELECT user, count(*), total(natt), total(noom), total(run_s), total(gpu_s),"
        " total(energy_j), total(max(0, coalesce(end_time, ?3) - submit_time - run_s)), uid,"
        " max(id) FROM j GROUP BY uid ORDER BY user, uid";
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK)
        return db_err(s, SQLITE_ERROR, "usage", err);
    bind_opt(q, 1, since);
    bind_opt(q, 2, until);
    sqlite3_bind_double(q, 3, now);
    bind_text_or_null(q, 4, user);
    if (uid >= 0)
        sqlite3_bind_int64(q, 5, uid);
    else
        sqlite3_bind_null(q, 5);
    json_t *users = json_array();
    double tot[7] = {0};
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        double v[7];
        for (int k = 0; k < 7; k++) {
            v[k] = sqlite3_column_double(q, k + 1);
            tot[k] += v[k];
        }
        char *name = col_user(q, 0);
        json_array_append_new(
            users,
            json_pack("{s:s,s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:f}", "user", name ? name : "", "uid",
                      (json_int_t)sqlite3_column_int64(q, 8), "jobs", (json_int_t)v[0], "attempts",
                      (json_int_t)v[1], "oom", (json_int_t)v[2], "run_s", v[3], "gpu_seconds", v[4],
                      "energy_j", v[5], "wait_s", v[6]));
        free(name);
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) {
        json_decref(users);
        return db_err(s, rc, "usage", err);
    }
    json_t *o = json_object();
    json_object_set_new(o, "users", users);
    json_object_set_new(o, "total",
                        json_pack("{s:I,s:I,s:I,s:f,s:f,s:f,s:f}", "jobs", (json_int_t)tot[0],
                                  "attempts", (json_int_t)tot[1], "oom", (json_int_t)tot[2],
                                  "run_s", tot[3], "gpu_seconds", tot[4], "energy_j", tot[5],
                                  "wait_s", tot[6]));
    *out = o;
    return 0;
}

static json_int_t scaled(sqlite3_stmt *q, int c, double k)
{
    if (sqlite3_column_type(q, c) == SQLITE_NULL)
        return -1;
    double v = sqlite3_column_double(q, c) * k;
    return v < 0 ? -1 : (json_int_t)(v + 0.5);
}

int carma_store_history_json(struct carma_store *s, double since, double until,
                             uint32_t max_points, uint32_t max_attempts, json_t **out,
                             struct carma_err *err)
{
    if (!(until > since) || max_points == 0)
        return carma_err_set(err, -EINVAL, "history: empty time range");
    /* Buckets span the part of the range that has records: a day's default range over a
     * server started a minute ago would otherwise fold that minute into one bucket. */
    double anchor = since;
    sqlite3_stmt *qm = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT min(t) FROM samples WHERE t>=?1 AND t<?2", -1, &qm,
                           NULL) != SQLITE_OK)
        return db_err(s, SQLITE_ERROR, "history", err);
    sqlite3_bind_double(qm, 1, since);
    sqlite3_bind_double(qm, 2, until);
    if (sqlite3_step(qm) == SQLITE_ROW && sqlite3_column_type(qm, 0) != SQLITE_NULL)
        anchor = sqlite3_column_double(qm, 0);
    sqlite3_finalize(qm);
    double bucket = (until - anchor) / max_points;
    json_t *gpus = json_array(), *atts = json_array();
    sqlite3_stmt *qg = NULL, *qs = NULL, *qa = NULL;
    int rc = SQLITE_OK, ret = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT id,uuid,name,mem_total_mib,power_max_w FROM gpus "
                                  "ORDER BY id", -1, &qg, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db,
                           "SELECT CAST((t-?5)/?4 AS INTEGER) AS b, max(t), max(mem_mib),"
                           " avg(smact), avg(util), avg(power_w) FROM samples"
                           " WHERE gpu=?1 AND t>=?2 AND t<?3 GROUP BY b ORDER BY b",
                           -1, &qs, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db,
                           "SELECT * FROM (SELECT a.job_id,a.n,a.gpus,a.start_time,a.end_time,"
                           " a.outcome,j.user,j.uid,j.name FROM attempts a JOIN jobs j ON"
                           " j.id=a.job_id WHERE a.start_time < ?2 AND"
                           " (a.end_time IS NULL OR a.end_time >= ?1)"
                           " ORDER BY a.start_time DESC LIMIT ?3) ORDER BY start_time",
                           -1, &qa, NULL) != SQLITE_OK) {
        ret = db_err(s, SQLITE_ERROR, "history", err);
        goto done;
    }
    while ((rc = sqlite3_step(qg)) == SQLITE_ROW) {
        json_t *t = json_array(), *mem = json_array(), *sm = json_array(), *ut = json_array(),
               *pw = json_array();
        sqlite3_bind_int64(qs, 1, sqlite3_column_int64(qg, 0));
        sqlite3_bind_double(qs, 2, since);
        sqlite3_bind_double(qs, 3, until);
        sqlite3_bind_double(qs, 4, bucket > 0 ? bucket : 1);
        sqlite3_bind_double(qs, 5, anchor);
        int r2;
        while ((r2 = sqlite3_step(qs)) == SQLITE_ROW) {
            json_array_append_new(t, json_integer((json_int_t)(sqlite3_column_double(qs, 1) -
                                                               since + 0.5)));
            json_array_append_new(mem, json_integer(sqlite3_column_int64(qs, 2)));
            json_array_append_new(sm, json_integer(scaled(qs, 3, 1000)));
            json_array_append_new(ut, json_integer(scaled(qs, 4, 1000)));
            json_array_append_new(pw, json_integer(scaled(qs, 5, 10)));
        }
        sqlite3_reset(qs);
        json_t *g = json_object();
        json_object_set_new(g, "uuid", json_string((const char *)sqlite3_column_text(qg, 1)));
        json_object_set_new(g, "name", json_string((const char *)sqlite3_column_text(qg, 2)));
        json_object_set_new(g, "mem_total_mib", json_integer(sqlite3_column_int64(qg, 3)));
        json_object_set_new(g, "power_max_w", sqlite3_column_type(qg, 4) == SQLITE_NULL
                                                  ? json_null()
                                                  : json_real(sqlite3_column_double(qg, 4)));
        json_object_set_new(g, "t", t);
        json_object_set_new(g, "mem_mib", mem);
        json_object_set_new(g, "smact_pm", sm);
        json_object_set_new(g, "util_pm", ut);
        json_object_set_new(g, "power_dw", pw);
        json_array_append_new(gpus, g);
        if (r2 != SQLITE_DONE) {
            ret = db_err(s, r2, "history", err);
            goto done;
        }
    }
    if (rc != SQLITE_DONE) {
        ret = db_err(s, rc, "history", err);
        goto done;
    }
    sqlite3_bind_double(qa, 1, since);
    sqlite3_bind_double(qa, 2, until);
    sqlite3_bind_int64(qa, 3, (sqlite3_int64)max_attempts + 1);
    size_t na = 0;
    while ((rc = sqlite3_step(qa)) == SQLITE_ROW) {
        if (++na > max_attempts)
            continue;
        json_error_t je;
        const char *gs = (const char *)sqlite3_column_text(qa, 2);
        json_t *g = gs ? json_loads(gs, 0, &je) : NULL;
        char *user = col_user(qa, 6);
        json_t *a = json_pack(
            "{s:I,s:I,s:o,s:f,s:o,s:o,s:s,s:I,s:s}", "job", (json_int_t)sqlite3_column_int64(qa, 0),
            "n", (json_int_t)sqlite3_column_int64(qa, 1), "gpus", g ? g : json_array(), "start",
            sqlite3_column_double(qa, 3), "end", time_json(col_time(qa, 4)), "outcome",
            sqlite3_column_type(qa, 5) == SQLITE_NULL
                ? json_null()
                : json_string((const char *)sqlite3_column_text(qa, 5)),
            "user", user ? user : "", "uid", (json_int_t)sqlite3_column_int64(qa, 7), "name",
            (const char *)sqlite3_column_text(qa, 8));
        free(user);
        if (a)
            json_array_append_new(atts, a);
    }
    if (rc != SQLITE_DONE) {
        ret = db_err(s, rc, "history", err);
        goto done;
    }
    json_t *o = json_object();
    json_object_set_new(o, "since", json_real(since));
    json_object_set_new(o, "until", json_real(until));
    json_object_set_new(o, "gpus", gpus);
    json_object_set_new(o, "attempts", atts);
    json_object_set_new(o, "truncated", json_boolean(na > max_attempts));
    gpus = atts = NULL;
    *out = o;
done:
    json_decref(gpus);
    json_decref(atts);
    sqlite3_finalize(qg);
    sqlite3_finalize(qs);
    sqlite3_finalize(qa);
    return ret;
}
