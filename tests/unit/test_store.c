/* The job store: schema, migrations, job and attempt rows, listings, a full disk. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "core/job.h"
#include "daemon/store.h"

static char dir[64];
static char path[128];

/* Runs sql on the store file at path with SQLite alone (what an older carmad, or a
 * hand, wrote), the store closed. */
static void store_sql(const char *sql)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/carma-store-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(path, sizeof path, "%s/carma.db", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void fill(struct carma_job_rec *r, uint32_t uid, const char *name)
{
    carma_job_rec_clear(r);
    r->name = strdup(name);
    r->user = strdup(uid ? "alice" : "root");
    r->cwd = strdup("/home/alice");
    r->argv_json = strdup("[\"python\",\"train.py\"]");
    r->env_json = strdup("{\"PATH\":\"/bin\"}");
    r->uid = uid;
    r->gid = uid;
    r->gpus = 1;
    r->mem_mib = 4096;
    r->bound_mib = 4096;
    r->max_attempts = 3;
    r->state = CARMA_JOB_QUEUED;
    r->submit_s = 1700000000.0;
}

static int count_active(void *ctx, struct carma_job_rec *r)
{
    (void)r;
    (*(int *)ctx)++;
    return 0;
}

static void test_jobs_and_attempts(void **state)
{
    (void)state;
    struct carma_store *st;
    struct carma_err err = {{0}};
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    assert_int_equal(carma_store_version_found(st), 0);
    struct carma_job_rec r = {0};
    fill(&r, 1000, "a");
    r.bound_basis = strdup("--mem (4096 MiB)");
    r.hist_sig = 0xfedcba9876543210ull; /* read back: carmad keys the job's profile on it */
    r.umask = 077;                      /* read back: the job runs with it */
    r.rlimits = strdup("-:-,5:7");      /* read back: the job runs with them */
    assert_int_equal(carma_store_begin(st, &err), 0);
    assert_int_equal(carma_store_job_insert(st, &r, &err), 0);
    assert_int_equal(r.id, 1);
    uint64_t id1 = r.id;
    fill(&r, 0, "b");
    r.hist_sig = 0;
    assert_int_equal(carma_store_job_insert(st, &r, &err), 0);
    assert_int_equal(carma_store_commit(st, &err), 0);
    /* Run job 1: attempt 1 ends in OOM, then attempt 2 succeeds. */
    struct carma_job_rec g = {0};
    assert_int_equal(carma_store_job_get(st, id1, &g, &err), 0);
    assert_string_equal(g.name, "a");
    assert_string_equal(g.bound_basis, "--mem (4096 MiB)");
    assert_true(g.hist_sig == 0xfedcba9876543210ull);
    assert_int_equal(g.umask, 077);
    assert_string_equal(g.rlimits, "-:-,5:7");
    assert_int_equal(g.state, CARMA_JOB_QUEUED);
    assert_true(g.start_s < 0);
    assert_int_equal(carma_store_begin(st, &err), 0);
    g.state = CARMA_JOB_RUNNING;
    g.attempts = 1;
    g.start_s = 1700000001.0;
    assert_int_equal(carma_store_job_update(st, &g, &err), 0);
    assert_int_equal(carma_store_attempt_begin(st, id1, 1, "[\"GPU-a\"]", NULL, 1700000001.0, &err), 0);
    assert_int_equal(carma_store_attempt_pid(st, id1, 1, 1234, &err), 0);
    assert_int_equal(carma_store_attempt_end(st, id1, 1, 1700000002.0, "oom", 1, 0, 3000, 0,
                                             "attempt 1: GPU out of memory (x), retried", &err),
                     0);
    assert_int_equal(carma_store_attempt_begin(st, id1, 2, "[\"GPU-b\"]", NULL, 1700000003.0, &err),
                     0);
    assert_int_equal(
        carma_store_attempt_end(st, id1, 2, 1700000004.0, "succeeded", 0, 0, 0, 0, NULL, &err), 0);
    g.state = CARMA_JOB_SUCCEEDED;
    g.attempts = 2;
    g.end_s = 1700000004.0;
    g.exit_code = 0;
    g.reason = strdup("attempt 2: succeeded");
    assert_int_equal(carma_store_job_update(st, &g, &err), 0);
    assert_int_equal(carma_store_commit(st, &err), 0);
    char *gpus = NULL;
    assert_int_equal(carma_store_attempt_gpus(st, id1, 2, &gpus, NULL, &err), 0);
    assert_string_equal(gpus, "[\"GPU-b\"]");
    free(gpus);
    assert_int_equal(carma_store_attempt_gpus(st, id1, 3, &gpus, NULL, &err), -ENOENT);
    double start = 0; /* an attempt's start, alone (a never-started retry's job takes it) */
    assert_int_equal(carma_store_attempt_gpus(st, id1, 1, NULL, &start, &err), 0);
    assert_float_equal(start, 1700000001.0, 1e-6);
    json_t *att = NULL;
    assert_int_equal(carma_store_attempts_json(st, id1, &att, &err), 0);
    assert_int_equal(json_array_size(att), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(att, 0), "outcome")), "oom");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(att, 0), "peak_mib")), 3000);
    /* each attempt keeps how it ended in words */
    assert_string_equal(json_string_value(json_object_get(json_array_get(att, 0), "reason")),
                        "attempt 1: GPU out of memory (x), retried");
    assert_true(json_is_null(json_object_get(json_array_get(att, 1), "reason")));
    json_decref(att);
    /* Only job 2 is still active. */
    int n = 0;
    assert_int_equal(carma_store_jobs_active(st, count_active, &n, &err), 0);
    assert_int_equal(n, 1);
    /* Listings: per user, active only or all. */
    json_t *a = json_array();
    assert_int_equal(carma_store_list_json(st, 1000, 1, 0, 100, a, &err), 0);
    assert_int_equal(json_array_size(a), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(a, 0), "state")),
                        "succeeded");
    json_array_clear(a);
    assert_int_equal(carma_store_list_json(st, 1000, 0, 0, 100, a, &err), 0);
    assert_int_equal(json_array_size(a), 0);
    assert_int_equal(carma_store_list_json(st, -1, 1, 0, 100, a, &err), 0);
    assert_int_equal(json_array_size(a), 2);
    /* Pages: ids above `after`, ascending, at most `limit`. */
    uint64_t first = (uint64_t)json_integer_value(json_object_get(json_array_get(a, 0), "id"));
    uint64_t second = (uint64_t)json_integer_value(json_object_get(json_array_get(a, 1), "id"));
    assert_true(first < second);
    json_array_clear(a);
    assert_int_equal(carma_store_list_json(st, -1, 1, 0, 1, a, &err), 0);
    assert_int_equal(json_array_size(a), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(a, 0), "id")), first);
    json_array_clear(a);
    assert_int_equal(carma_store_list_json(st, -1, 1, first, 100, a, &err), 0);
    assert_int_equal(json_array_size(a), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(a, 0), "id")), second);
    json_array_clear(a);
    assert_int_equal(carma_store_list_json(st, -1, 1, second, 100, a, &err), 0);
    assert_int_equal(json_array_size(a), 0);
    json_decref(a);
    assert_int_equal(carma_store_job_get(st, 99, &g, &err), -ENOENT);
    uid_t owner = 7; /* the owner alone, as a cancel asks */
    assert_int_equal(carma_store_job_uid(st, id1, &owner, &err), 0);
    assert_int_equal(owner, 1000);
    assert_int_equal(carma_store_job_uid(st, 99, &owner, &err), -ENOENT);
    assert_int_equal(owner, 1000);
    g.id = 99;
    assert_int_equal(carma_store_begin(st, &err), 0);
    assert_int_equal(carma_store_job_update(st, &g, &err), -ENOENT);
    carma_store_rollback(st);
    carma_job_rec_clear(&g);
    carma_job_rec_clear(&r);
    carma_store_close(st);
    /* Reopened: nothing to migrate, the data is there. */
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    assert_int_equal(carma_store_version_found(st), CARMA_STORE_SCHEMA_VERSION);
    assert_int_equal(carma_store_job_get(st, id1, &g, &err), 0);
    assert_int_equal(g.state, CARMA_JOB_SUCCEEDED);
    assert_string_equal(g.reason, "attempt 2: succeeded");
    carma_job_rec_clear(&g);
    carma_store_close(st);
}

static void test_strict_wal_and_migration(void **state)
{
    (void)state;
    /* A version-1 file (jobs and attempts, no indexes) is migrated with its rows kept. */
    struct carma_store *st;
    struct carma_err err = {{0}};
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    carma_store_close(st);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "DROP INDEX jobs_state; DROP INDEX jobs_uid;"
                                      "PRAGMA user_version=1;", NULL, NULL, NULL), SQLITE_OK);
    /* STRICT: a text where an integer belongs is refused. */
    assert_int_not_equal(sqlite3_exec(db, "INSERT INTO jobs(name,uid,gid,user,cwd,argv,env,gpus,"
                                          "mem_mib,bound_mib,peak_mib,max_attempts,attempts,state,"
                                          "submit_time) VALUES('x','abc',0,'u','/','[]','{}',1,0,0,"
                                          "0,3,0,'queued',0)", NULL, NULL, NULL), SQLITE_OK);
    /* And a state outside the names is refused. */
    assert_int_not_equal(sqlite3_exec(db, "INSERT INTO jobs(name,uid,gid,user,cwd,argv,env,gpus,"
                                          "mem_mib,bound_mib,peak_mib,max_attempts,attempts,state,"
                                          "submit_time) VALUES('x',1,0,'u','/','[]','{}',1,0,0,"
                                          "0,3,0,'weird',0)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_stmt *q;
    sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &q, NULL);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(q, 0), "wal");
    sqlite3_finalize(q);
    sqlite3_close(db);
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    assert_int_equal(carma_store_version_found(st), 1);
    carma_store_close(st);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE type='index' AND "
                           "name LIKE 'jobs_%'", -1, &q, NULL);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    /* jobs_state, jobs_uid, jobs_signature, jobs_end_time, jobs_history */
    assert_int_equal(sqlite3_column_int(q, 0), 5);
    sqlite3_finalize(q);
    /* A version-4 file, from before bound_basis (and umask): the columns are added, its
     * jobs read with none (a job without umask runs with CARMA_JOB_UMASK_DEFAULT). */
    assert_int_equal(sqlite3_exec(db,
                                  "ALTER TABLE jobs DROP COLUMN bound_basis;"
                                  "ALTER TABLE jobs DROP COLUMN umask;"
                                  "ALTER TABLE jobs DROP COLUMN rlimits;"
                                  "INSERT INTO jobs(name,uid,gid,user,cwd,argv,env,gpus,"
                                  "mem_mib,bound_mib,peak_mib,max_attempts,attempts,state,"
                                  "submit_time) VALUES('old',1,1,'u','/','[\"x\"]','{}',1,0,"
                                  "0,0,3,0,'queued',0);"
                                  "PRAGMA user_version=4;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    assert_int_equal(carma_store_version_found(st), 4);
    struct carma_job_rec g = {0};
    assert_int_equal(carma_store_job_get(st, 1, &g, &err), 0);
    assert_string_equal(g.name, "old");
    assert_null(g.bound_basis);
    assert_int_equal(g.umask, -1);
    assert_null(g.rlimits); /* runs with carmad's, as before */
    carma_job_rec_clear(&g);
    carma_store_close(st);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    /* A newer schema than this carmad knows is refused, not downgraded. */
    assert_int_equal(sqlite3_exec(db, "PRAGMA user_version=99", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(carma_store_open(&st, path, &err), -EPROTO);
    assert_non_null(strstr(err.msg, "newer"));
    assert_non_null(strstr(err.msg, path)); /* which file, among an administrator's copies */
    /* A migration that fails names the file and the step: a file that says version 0 but
     * holds the jobs table already. */
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "PRAGMA user_version=0", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    assert_int_not_equal(carma_store_open(&st, path, &err), 0);
    assert_null(st);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "migrating schema version 0 to 1"));
    assert_non_null(strstr(err.msg, "already exists"));
}

/* Inserts a job of `state` that ended at `end` (< 0: not ended), with one attempt and its
 * accounting; returns its id. */
static uint64_t add_job(struct carma_store *st, int state, double end)
{
    struct carma_err err = {{0}};
    struct carma_job_rec r = {0};
    fill(&r, 1000, "j");
    assert_int_equal(carma_store_begin(st, &err), 0);
    assert_int_equal(carma_store_job_insert(st, &r, &err), 0);
    r.state = state;
    r.attempts = 1;
    r.end_s = end;
    assert_int_equal(carma_store_job_update(st, &r, &err), 0);
    assert_int_equal(carma_store_attempt_begin(st, r.id, 1, "[]", NULL, 1, &err), 0);
    assert_int_equal(carma_store_usage_put(st, r.id, 1, 1, 1, -1, &err), 0);
    assert_int_equal(carma_store_commit(st, &err), 0);
    uint64_t id = r.id;
    carma_job_rec_clear(&r);
    return id;
}

static int64_t count_rows(const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    int64_t n = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return n;
}

/* Schema 9: a running attempt's peak and why it is a lower limit (peak_partial) are
 * stored and read back, an old store (version 8) gains the column with its attempts
 * complete; a final job's environment is cleared; final jobs past the retention go in
 * batches, with their attempts and accounting, never the newest job nor an active one. */
static void test_peaks_env_retention(void **state)
{
    (void)state;
    struct carma_store *st;
    struct carma_err err = {{0}};
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    uint64_t a = add_job(st, CARMA_JOB_SUCCEEDED, 100);
    carma_store_close(st);
    store_sql("UPDATE attempts SET peak_mib=700,end_time=50,"
              "outcome='succeeded';"
              "DROP INDEX jobs_end_time;"
              "ALTER TABLE attempts DROP COLUMN peak_partial;"
              "PRAGMA user_version=8;");
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    assert_int_equal(carma_store_version_found(st), 8);
    uint64_t peak = 1;
    unsigned partial = 9;
    assert_int_equal(carma_store_attempt_peak_get(st, a, 1, &peak, &partial, &err), 0);
    assert_int_equal(peak, 700);
    assert_int_equal(partial, 0);
    assert_int_equal(carma_store_attempt_peak_get(st, a, 2, &peak, &partial, &err), -ENOENT);
    /* a running attempt: its peak follows the flushes; an ended one's stays */
    uint64_t b = add_job(st, CARMA_JOB_RUNNING, -1);
    assert_int_equal(carma_store_begin(st, &err), 0);
    assert_int_equal(carma_store_attempt_peak_put(st, b, 1, 8192, CARMA_PEAK_UNKNOWN, &err), 0);
    assert_int_equal(carma_store_attempt_peak_put(st, a, 1, 1, CARMA_PEAK_UNKNOWN, &err), 0);
    assert_int_equal(carma_store_commit(st, &err), 0);
    assert_int_equal(carma_store_attempt_peak_get(st, b, 1, &peak, &partial, &err), 0);
    assert_int_equal(peak, 8192);
    assert_int_equal(partial, CARMA_PEAK_UNKNOWN);
    assert_int_equal(carma_store_attempt_peak_get(st, a, 1, &peak, &partial, &err), 0);
    assert_int_equal(peak, 700);
    assert_int_equal(partial, 0);
    assert_int_equal(carma_store_begin(st, &err), 0);
    assert_int_equal(carma_store_attempt_end(st, b, 1, 200, "succeeded", 0, 0, 9000,
                                             CARMA_PEAK_DOWNTIME | CARMA_PEAK_UNKNOWN, NULL, &err),
                     0);
    assert_int_equal(carma_store_commit(st, &err), 0);
    assert_int_equal(carma_store_attempt_peak_get(st, b, 1, &peak, &partial, &err), 0);
    assert_int_equal(peak, 9000);
    assert_int_equal(partial, CARMA_PEAK_DOWNTIME | CARMA_PEAK_UNKNOWN);
    json_t *atts;
    assert_int_equal(carma_store_attempts_json(st, b, &atts, &err), 0);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(atts, 0), "peak_partial")),
                     3);
    json_decref(atts);
    /* the environment of a final job is cleared */
    assert_int_equal(carma_store_begin(st, &err), 0);
    assert_int_equal(carma_store_job_forget_env(st, a, &err), 0);
    assert_int_equal(carma_store_commit(st, &err), 0);
    struct carma_job_rec g = {0};
    assert_int_equal(carma_store_job_get(st, a, &g, &err), 0);
    assert_string_equal(g.env_json, "{}");
    carma_job_rec_clear(&g);
    /* retention: a (ended 100), c (failed, 150), d (queued), e (cancelled, 120), f
     * (succeeded at 50, the newest id): before 300, two a call */
    uint64_t c = add_job(st, CARMA_JOB_FAILED, 150);
    uint64_t dq = add_job(st, CARMA_JOB_QUEUED, -1);
    uint64_t e = add_job(st, CARMA_JOB_CANCELLED, 120);
    uint64_t f = add_job(st, CARMA_JOB_SUCCEEDED, 50);
    uint64_t del = 0;
    int more = 0;
    assert_int_equal(carma_store_begin(st, &err), 0);
    uint64_t ids[2] = {0, 0};
    assert_int_equal(carma_store_jobs_prune(st, 300, 2, ids, &del, &more, &err), 0);
    assert_int_equal(carma_store_commit(st, &err), 0);
    assert_int_equal(del, 2);
    assert_int_equal(more, 1);
    assert_int_equal(ids[0], a); /* the ids deleted, for their folders to go */
    assert_int_equal(ids[1], e);
    /* the oldest ends first: a (100), e (120) */
    assert_int_equal(carma_store_job_get(st, a, &g, &err), -ENOENT);
    assert_int_equal(carma_store_job_get(st, e, &g, &err), -ENOENT);
    assert_int_equal(carma_store_begin(st, &err), 0);
    assert_int_equal(carma_store_jobs_prune(st, 300, 2, ids, &del, &more, &err), 0);
    assert_int_equal(carma_store_commit(st, &err), 0);
    assert_int_equal(del, 1); /* c; not b (running), nor f (the newest) */
    assert_int_equal(ids[0], c);
    assert_int_equal(more, 0);
    assert_int_equal(carma_store_begin(st, &err), 0);
    assert_int_equal(carma_store_jobs_prune(st, 300, 2, NULL, &del, &more, &err), 0);
    assert_int_equal(carma_store_commit(st, &err), 0);
    assert_int_equal(del, 0);
    assert_int_equal(more, 0);
    assert_int_equal(carma_store_job_get(st, c, &g, &err), -ENOENT);
    assert_int_equal(carma_store_job_get(st, dq, &g, &err), 0);
    carma_job_rec_clear(&g);
    assert_int_equal(carma_store_job_get(st, f, &g, &err), 0);
    carma_job_rec_clear(&g);
    uint64_t max = 0;
    assert_int_equal(carma_store_max_job_id(st, &max, &err), 0);
    assert_int_equal(max, f);
    /* the ids left below the newest: what the sweep of job folders keeps */
    uint64_t *left = NULL;
    size_t nleft = 0;
    assert_int_equal(carma_store_job_ids(st, f, &left, &nleft, &err), 0);
    assert_int_equal(nleft, 2);
    assert_int_equal(left[0], b);
    assert_int_equal(left[1], dq);
    free(left);
    assert_int_equal(carma_store_job_ids(st, 1, &left, &nleft, &err), 0);
    assert_int_equal(nleft, 0);
    assert_null(left);
    carma_store_close(st);
    assert_int_equal(count_rows("SELECT count(*) FROM attempts"), 3); /* b, dq, f */
    assert_int_equal(count_rows("SELECT count(*) FROM usage"), 3);
}

/* A store of at most 10 pages, which a few big jobs fill. */
static struct carma_store *open_small_store(void)
{
    setenv("CARMA_TEST_STORE_MAX_PAGES", "10", 1);
    struct carma_store *st;
    struct carma_err err = {{0}};
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    unsetenv("CARMA_TEST_STORE_MAX_PAGES");
    return st;
}

/* A job whose working directory takes 5999 bytes. */
static void fill_big(struct carma_job_rec *r)
{
    fill(r, 1000, "n");
    free(r->cwd);
    r->cwd = malloc(6000);
    assert_non_null(r->cwd);
    memset(r->cwd, 'x', 5999);
    r->cwd[5999] = 0;
}

static void test_full_disk(void **state)
{
    (void)state;
    struct carma_store *st = open_small_store();
    struct carma_err err = {{0}};
    struct carma_job_rec r = {0};
    int rc = 0, i;
    for (i = 0; i < 100 && rc == 0; i++) {
        fill_big(&r);
        rc = carma_store_begin(st, &err);
        if (!rc)
            rc = carma_store_job_insert(st, &r, &err);
        if (!rc)
            rc = carma_store_commit(st, &err);
        else
            carma_store_rollback(st);
    }
    assert_int_equal(rc, -ENOSPC);
    assert_true(i > 1);
    assert_non_null(strstr(err.msg, "full"));
    assert_false(carma_store_in_tx(st));
    /* Jobs already stored are intact and readable. */
    struct carma_job_rec g = {0};
    assert_int_equal(carma_store_job_get(st, 1, &g, &err), 0);
    carma_job_rec_clear(&g);
    carma_job_rec_clear(&r);
    carma_store_close(st);
}

/* Inserts big jobs (r) into st's open transaction until one fails, 100 at most: that
 * insert's error, or 0. */
static int insert_until_full(struct carma_store *st, struct carma_job_rec *r, struct carma_err *err)
{
    int rc = 0;
    for (int i = 0; i < 100 && rc == 0; i++) {
        fill_big(r);
        rc = carma_store_job_insert(st, r, err);
    }
    return rc;
}

/* A full disk inside a transaction that already saved a job: where SQLite rolled the
 * whole transaction back, later statements of it answer the same "full" error instead
 * of running without it (an update would find no row), and the commit fails; else
 * they go on in the transaction. Either way the earlier job is then saved or not with
 * the transaction, never half. */
static void test_full_disk_in_transaction(void **state)
{
    (void)state;
    struct carma_store *st = open_small_store();
    struct carma_err err = {{0}};
    struct carma_job_rec first = {0}, r = {0};
    fill(&first, 1000, "first");
    assert_int_equal(carma_store_begin(st, &err), 0);
    assert_int_equal(carma_store_job_insert(st, &first, &err), 0);
    int rc = insert_until_full(st, &r, &err);
    assert_int_equal(rc, -ENOSPC);
    int lost = sqlite3_get_autocommit(carma_store_sqlite(st));
    first.state = CARMA_JOB_RUNNING;
    rc = carma_store_job_update(st, &first, &err);
    if (lost) {
        assert_int_equal(rc, -ENOSPC);
        assert_non_null(strstr(err.msg, "full"));
        assert_int_equal(carma_store_commit(st, &err), -ENOSPC);
    } else {
        assert_int_equal(rc, 0);
        carma_store_rollback(st);
    }
    assert_false(carma_store_in_tx(st));
    struct carma_job_rec g = {0};
    assert_int_equal(carma_store_job_get(st, first.id, &g, &err), -ENOENT);
    carma_job_rec_clear(&g);
    carma_job_rec_clear(&first);
    carma_job_rec_clear(&r);
    carma_store_close(st);
}

/* A group of writes in a savepoint is all or nothing inside its transaction: an end
 * whose job's row fails with a statement SQLite rolls back alone (here a trigger's ABORT;
 * a full disk can do the same) is undone whole by carma_store_rollback_to, so that the
 * commit never keeps its attempt ended under a running job, while the transaction's
 * other writes and a released group are committed. */
static void test_savepoint(void **state)
{
    (void)state;
    struct carma_store *st;
    struct carma_err err = {{0}};
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    struct carma_job_rec a = {0}, b = {0};
    fill(&a, 1000, "a");
    fill(&b, 1000, "b");
    assert_int_equal(carma_store_begin(st, &err), 0);
    assert_int_equal(carma_store_job_insert(st, &a, &err), 0);
    assert_int_equal(carma_store_job_insert(st, &b, &err), 0);
    a.state = b.state = CARMA_JOB_RUNNING;
    a.attempts = b.attempts = 1;
    a.start_s = b.start_s = 1700000001.0;
    assert_int_equal(carma_store_job_update(st, &a, &err), 0);
    assert_int_equal(carma_store_job_update(st, &b, &err), 0);
    assert_int_equal(
        carma_store_attempt_begin(st, a.id, 1, "[\"GPU-a\"]", NULL, 1700000001.0, &err), 0);
    assert_int_equal(
        carma_store_attempt_begin(st, b.id, 1, "[\"GPU-b\"]", NULL, 1700000001.0, &err), 0);
    assert_int_equal(carma_store_commit(st, &err), 0);
    sqlite3 *db = carma_store_sqlite(st);
    char sql[256];
    snprintf(sql, sizeof sql,
             "CREATE TEMP TRIGGER no_end BEFORE UPDATE OF state ON jobs WHEN NEW.id = %llu AND "
             "NEW.state = 'succeeded' BEGIN SELECT RAISE(ABORT, 'test: no end'); END",
             (unsigned long long)b.id);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);

    assert_int_equal(carma_store_begin(st, &err), 0);
    assert_int_equal(carma_store_attempt_pid(st, a.id, 1, 4242, &err), 0); /* before: kept */
    /* a's end: released, committed with the transaction */
    assert_int_equal(carma_store_savepoint(st, &err), 0);
    assert_int_equal(
        carma_store_attempt_end(st, a.id, 1, 1700000002.0, "succeeded", 0, 0, 0, 0, NULL, &err), 0);
    a.state = CARMA_JOB_SUCCEEDED;
    a.end_s = 1700000002.0;
    assert_int_equal(carma_store_job_update(st, &a, &err), 0);
    assert_int_equal(carma_store_release(st, &err), 0);
    /* b's end: its attempt's row is written, its job's row fails */
    assert_int_equal(carma_store_savepoint(st, &err), 0);
    assert_int_equal(
        carma_store_attempt_end(st, b.id, 1, 1700000002.0, "succeeded", 0, 0, 0, 0, NULL, &err), 0);
    b.state = CARMA_JOB_SUCCEEDED;
    b.end_s = 1700000002.0;
    assert_int_equal(carma_store_job_update(st, &b, &err), -EIO);
    assert_non_null(strstr(err.msg, "test: no end"));
    assert_false(sqlite3_get_autocommit(db)); /* only the statement was rolled back */
    carma_store_rollback_to(st);
    assert_true(carma_store_in_tx(st));
    assert_int_equal(carma_store_commit(st, &err), 0);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM jobs j JOIN attempts a ON a.job_id = j.id AND a.n = 1 WHERE "
             "j.id = %llu AND j.state = 'succeeded' AND a.outcome = 'succeeded' AND "
             "a.shepherd_pid = 4242",
             (unsigned long long)a.id);
    assert_int_equal(count_rows(sql), 1);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM jobs j JOIN attempts a ON a.job_id = j.id AND a.n = 1 WHERE "
             "j.id = %llu AND j.state = 'running' AND a.end_time IS NULL AND a.outcome IS NULL",
             (unsigned long long)b.id);
    assert_int_equal(count_rows(sql), 1);
    /* written again once the failure is gone, it goes through */
    assert_int_equal(sqlite3_exec(db, "DROP TRIGGER temp.no_end", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(carma_store_begin(st, &err), 0);
    assert_int_equal(carma_store_savepoint(st, &err), 0);
    assert_int_equal(
        carma_store_attempt_end(st, b.id, 1, 1700000002.0, "succeeded", 0, 0, 0, 0, NULL, &err), 0);
    assert_int_equal(carma_store_job_update(st, &b, &err), 0);
    assert_int_equal(carma_store_release(st, &err), 0);
    assert_int_equal(carma_store_commit(st, &err), 0);
    assert_int_equal(count_rows("SELECT count(*) FROM jobs WHERE state = 'succeeded'"), 2);
    carma_job_rec_clear(&a);
    carma_job_rec_clear(&b);
    carma_store_close(st);
}

/* A full disk inside a savepoint: where SQLite rolled the whole transaction back,
 * carma_store_rollback_to has nothing to undo and the commit fails; else it undoes the
 * savepoint's writes alone and the commit keeps the earlier ones. Never a write of the
 * savepoint's committed. */
static void test_full_disk_in_savepoint(void **state)
{
    (void)state;
    struct carma_store *st = open_small_store();
    struct carma_err err = {{0}};
    struct carma_job_rec first = {0}, r = {0};
    fill(&first, 1000, "first");
    assert_int_equal(carma_store_begin(st, &err), 0);
    assert_int_equal(carma_store_job_insert(st, &first, &err), 0);
    assert_int_equal(carma_store_savepoint(st, &err), 0);
    int rc = insert_until_full(st, &r, &err);
    assert_int_equal(rc, -ENOSPC);
    int lost = sqlite3_get_autocommit(carma_store_sqlite(st));
    carma_store_rollback_to(st);
    assert_int_equal(carma_store_commit(st, &err), lost ? -ENOSPC : 0);
    assert_false(carma_store_in_tx(st));
    assert_int_equal(count_rows("SELECT count(*) FROM jobs WHERE name = 'n'"), 0);
    assert_int_equal(count_rows("SELECT count(*) FROM jobs WHERE name = 'first'"), lost ? 0 : 1);
    carma_job_rec_clear(&first);
    carma_job_rec_clear(&r);
    carma_store_close(st);
}

static mode_t mode_of(const char *p)
{
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    return st.st_mode & 07777;
}

/* The store holds every job's environment: it and its WAL and SHM are carmad's alone,
 * whatever the umask, and an existing file open to others is closed to them. */
static void test_private_files(void **state)
{
    (void)state;
    mode_t old = umask(022);
    struct carma_store *st;
    struct carma_err err = {{0}};
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    assert_int_equal(carma_store_modes_fixed(st), 0);
    struct carma_job_rec r = {0};
    fill(&r, 1000, "a");
    assert_int_equal(carma_store_begin(st, &err), 0);
    assert_int_equal(carma_store_job_insert(st, &r, &err), 0);
    assert_int_equal(carma_store_commit(st, &err), 0);
    char wal[160], shm[160];
    snprintf(wal, sizeof wal, "%s-wal", path);
    snprintf(shm, sizeof shm, "%s-shm", path);
    assert_int_equal(mode_of(path), 0600);
    assert_int_equal(mode_of(wal), 0600);
    assert_int_equal(mode_of(shm), 0600);
    uint64_t max = 0;
    assert_int_equal(carma_store_max_job_id(st, &max, &err), 0);
    assert_int_equal(max, r.id);
    carma_store_close(st);
    /* Left 0644 by an earlier carmad, the WAL and SHM kept by a crash: all made 0600. */
    int fd = open(wal, O_WRONLY | O_CREAT, 0644);
    assert_true(fd >= 0);
    close(fd);
    fd = open(shm, O_WRONLY | O_CREAT, 0644);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(chmod(path, 0644), 0);
    assert_int_equal(chmod(wal, 0644), 0);
    assert_int_equal(chmod(shm, 0644), 0);
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    assert_int_equal(carma_store_modes_fixed(st),
                     CARMA_STORE_FIXED_DB | CARMA_STORE_FIXED_WAL | CARMA_STORE_FIXED_SHM);
    assert_int_equal(mode_of(path), 0600);
    assert_int_equal(mode_of(wal), 0600);
    assert_int_equal(mode_of(shm), 0600);
    carma_job_rec_clear(&r);
    carma_store_close(st);
    /* Not a regular file: refused, nothing made. */
    char sub[160];
    snprintf(sub, sizeof sub, "%s/adir.db", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    assert_int_not_equal(carma_store_open(&st, sub, &err), 0);
    assert_null(st);
    umask(old);
}

/* A damaged page is found at open (PRAGMA quick_check) instead of failing every
 * request later; the store is refused and left as it was. */
static void test_damaged_refused(void **state)
{
    (void)state;
    struct carma_store *st;
    struct carma_err err = {{0}};
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    assert_int_equal(carma_store_begin(st, &err), 0);
    for (int k = 0; k < 200; k++) {
        struct carma_job_rec r = {0};
        fill(&r, 1000, "filler");
        assert_int_equal(carma_store_job_insert(st, &r, &err), 0);
        carma_job_rec_clear(&r);
    }
    assert_int_equal(carma_store_commit(st, &err), 0);
    carma_store_close(st); /* the last close checkpoints: every page is in the file */
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_true(sb.st_size >= 4 * 4096);
    /* Zero the second page, as the review's repro did. */
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    static const char zero[4096];
    assert_int_equal(pwrite(fd, zero, sizeof zero, 4096), (ssize_t)sizeof zero);
    close(fd);
    assert_int_equal(carma_store_open(&st, path, &err), -EIO);
    assert_null(st);
    assert_non_null(strstr(err.msg, "damaged"));
    assert_non_null(strstr(err.msg, path));
    assert_int_equal(stat(path, &sb), 0);
    char wal[160];
    snprintf(wal, sizeof wal, "%s-wal", path);
    assert_true(stat(wal, &sb) < 0 || sb.st_size == 0); /* nothing written */
}

/* A store that cannot be read for a reason of its file system, not of its content (here
 * its -wal cannot be opened: a folder is in the way; a full disk or a read-only folder
 * stops it too) is refused without calling it damaged: "restore it from a backup" would
 * have the administrator put back an older copy of a sound file. */
static void test_unreadable_not_damaged(void **state)
{
    (void)state;
    struct carma_store *st;
    struct carma_err err = {{0}};
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    carma_store_close(st);
    char wal[160];
    snprintf(wal, sizeof wal, "%s-wal", path);
    assert_int_equal(mkdir(wal, 0700), 0);
    assert_int_equal(carma_store_open(&st, path, &err), -EIO);
    assert_null(st);
    assert_null(strstr(err.msg, "damaged"));
    assert_null(strstr(err.msg, "backup"));
    assert_non_null(strstr(err.msg, "cannot be read"));
    assert_non_null(strstr(err.msg, path));
    assert_int_equal(rmdir(wal), 0);
    assert_int_equal(carma_store_open(&st, path, &err), 0); /* and it was sound */
    carma_store_close(st);
}

/* Schema 13: a running attempt's Xid mark (attempts.xid, xid_gpu, xid_time; schema 17
 * xid_shared, 19 xid_via) is stored and read back, an ended attempt's is left as it is; an
 * old store (version 12) gains the columns with its attempts unmarked. */
static void test_attempt_xid(void **state)
{
    (void)state;
    struct carma_store *st;
    struct carma_err err = {{0}};
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    uint64_t a = add_job(st, CARMA_JOB_SUCCEEDED, 100);
    uint64_t b = add_job(st, CARMA_JOB_RUNNING, -1);
    carma_store_close(st);
    store_sql("UPDATE attempts SET end_time=50,outcome='succeeded' "
              "WHERE job_id=1;"
              "ALTER TABLE attempts DROP COLUMN xid;"
              "ALTER TABLE attempts DROP COLUMN xid_gpu;"
              "ALTER TABLE attempts DROP COLUMN xid_time;"
              "ALTER TABLE attempts DROP COLUMN xid_shared;"
              "ALTER TABLE attempts DROP COLUMN xid_via;"
              "PRAGMA user_version=12;");
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    assert_int_equal(carma_store_version_found(st), 12);
    struct carma_store_xid x = {.xid = 7, .gpu = 7, .t = 7, .shared = 1, .via = 7};
    assert_int_equal(carma_store_attempt_xid_get(st, b, 1, &x, &err), 0);
    assert_int_equal(x.xid, 0);
    assert_int_equal(x.shared, 0);
    assert_int_equal(x.via, 0);
    assert_int_equal(carma_store_attempt_xid_get(st, b, 2, &x, &err), -ENOENT);
    struct carma_store_xid m = {.xid = 94, .gpu = 3, .t = 1700000123.5, .shared = 1};
    assert_int_equal(carma_store_begin(st, &err), 0);
    assert_int_equal(carma_store_attempt_xid_put(st, b, 1, &m, &err), 0);
    assert_int_equal(carma_store_attempt_xid_put(st, a, 1, &m, &err), 0); /* ended: kept */
    assert_int_equal(carma_store_commit(st, &err), 0);
    assert_int_equal(carma_store_attempt_xid_get(st, b, 1, &x, &err), 1);
    assert_int_equal(x.xid, 94);
    assert_int_equal(x.gpu, 3);
    assert_true(x.t == 1700000123.5);
    assert_int_equal(x.shared, 1);
    assert_int_equal(x.via, 0); /* it came on one of the attempt's GPUs */
    assert_int_equal(carma_store_attempt_xid_get(st, a, 1, &x, &err), 0);
    /* one that reached its GPUs through another job's (xid_via), and one on its own GPU
     * again: the job is cleared */
    struct carma_store_xid t = {.xid = 31, .gpu = 0, .t = 1700000200, .shared = 1, .via = a};
    assert_int_equal(carma_store_begin(st, &err), 0);
    assert_int_equal(carma_store_attempt_xid_put(st, b, 1, &t, &err), 0);
    assert_int_equal(carma_store_commit(st, &err), 0);
    assert_int_equal(carma_store_attempt_xid_get(st, b, 1, &x, &err), 1);
    assert_int_equal(x.xid, 31);
    assert_int_equal(x.via, a);
    t.via = 0;
    assert_int_equal(carma_store_begin(st, &err), 0);
    assert_int_equal(carma_store_attempt_xid_put(st, b, 1, &t, &err), 0);
    assert_int_equal(carma_store_commit(st, &err), 0);
    assert_int_equal(carma_store_attempt_xid_get(st, b, 1, &x, &err), 1);
    assert_int_equal(x.via, 0);
    assert_int_equal(carma_store_begin(st, &err), 0);
    assert_int_equal(carma_store_attempt_xid_put(st, b, 1, &m, &err), 0);
    assert_int_equal(carma_store_commit(st, &err), 0);
    carma_store_close(st);
    /* a file whose version number was lowered has the columns: migrated again unharmed */
    store_sql("PRAGMA user_version=12");
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    assert_int_equal(carma_store_version_found(st), 12);
    assert_int_equal(carma_store_attempt_xid_get(st, b, 1, &x, &err), 1);
    assert_int_equal(x.xid, 94);
    carma_store_close(st);
}

/* Schema 14: when a running attempt was first seen on its GPUs (attempts.seen_time) is
 * stored and read back; an old store (version 13) gains the column, its running attempts
 * counted as seen at their start (as the carmad before held them), its ended ones not. */
static void test_attempt_seen(void **state)
{
    (void)state;
    struct carma_store *st;
    struct carma_err err = {{0}};
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    uint64_t a = add_job(st, CARMA_JOB_SUCCEEDED, 100);
    uint64_t b = add_job(st, CARMA_JOB_RUNNING, -1);
    uint64_t c = add_job(st, CARMA_JOB_RUNNING, -1);
    double seen = 0;
    assert_int_equal(carma_store_attempt_seen_get(st, c, 1, &seen, &err), 0); /* not yet */
    assert_true(seen < 0);
    carma_store_close(st);
    sqlite3 *db;
    store_sql("UPDATE attempts SET end_time=50,outcome='succeeded' "
              "WHERE job_id=1;"
              "ALTER TABLE attempts DROP COLUMN seen_time;"
              "PRAGMA user_version=13;");
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    assert_int_equal(carma_store_version_found(st), 13);
    assert_int_equal(carma_store_attempt_seen_get(st, a, 1, &seen, &err), 0);
    assert_int_equal(carma_store_attempt_seen_get(st, b, 1, &seen, &err), 1);
    assert_true(seen == 1); /* add_job's start */
    assert_int_equal(carma_store_attempt_seen_get(st, b, 2, &seen, &err), -ENOENT);
    assert_int_equal(carma_store_begin(st, &err), 0);
    assert_int_equal(carma_store_attempt_seen_put(st, c, 1, 1700000042.25, &err), 0);
    assert_int_equal(carma_store_attempt_seen_put(st, a, 1, 7, &err), 0); /* ended: kept */
    assert_int_equal(carma_store_commit(st, &err), 0);
    assert_int_equal(carma_store_attempt_seen_get(st, c, 1, &seen, &err), 1);
    assert_true(seen == 1700000042.25);
    assert_int_equal(carma_store_attempt_seen_get(st, a, 1, &seen, &err), 0);
    carma_store_close(st);
    /* a file whose version number was lowered to run an older carmad, which started an
     * attempt without the column's value: it is backfilled on the upgrade, the rest kept */
    uint64_t e;
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    e = add_job(st, CARMA_JOB_RUNNING, -1);
    carma_store_close(st);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char sql[128];
    snprintf(sql, sizeof sql,
             "UPDATE attempts SET start_time=9 WHERE job_id=%llu;"
             "PRAGMA user_version=13",
             (unsigned long long)e);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    assert_int_equal(carma_store_version_found(st), 13);
    assert_int_equal(carma_store_attempt_seen_get(st, e, 1, &seen, &err), 1);
    assert_true(seen == 9);
    assert_int_equal(carma_store_attempt_seen_get(st, c, 1, &seen, &err), 1);
    assert_true(seen == 1700000042.25);
    assert_int_equal(carma_store_attempt_seen_get(st, a, 1, &seen, &err), 0);
    carma_store_close(st);
}

/* The co-location correction (schema v16, by GPU kind since v18): what put writes for a
 * kind, get reads back bit for bit, and another kind's put leaves it; an empty table
 * reads as nothing learnt (0 knots); a row no carmad writes (an unknown sharing mode, a
 * knot out of range, a value past the clamps) is refused by name, kind included, and
 * reads as nothing learnt. */
#define H200 "NVIDIA H200, 143771 MiB"
#define A100 "NVIDIA A100-SXM4-40GB, 40960 MiB"
static void test_coloc_roundtrip(void **state)
{
    (void)state;
    struct carma_store *st;
    struct carma_err err = {{0}};
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    struct carma_coloc_learnt l, a100, back;
    memset(&back, 0x55, sizeof back);
    assert_int_equal(carma_store_coloc_get(st, H200, &back, &err), 0);
    memset(&l, 0, sizeof l);
    assert_memory_equal(&back, &l, sizeof l);
    for (int k = 0; k < 30; k++)
        assert_int_equal(carma_coloc_observe(&l, CARMA_SHARING_TIMESLICE, 2, 0.6f, 1.4f, 0.6f), 0);
    assert_int_equal(carma_coloc_observe(&l, CARMA_SHARING_MPS, 3, 1.9f, 0, 0.8f), 0);
    memset(&a100, 0, sizeof a100);
    assert_int_equal(carma_coloc_observe(&a100, CARMA_SHARING_MPS, 2, 0.3f, 0, 0.2f), 0);
    assert_int_equal(carma_store_begin(st, &err), 0);
    assert_int_equal(carma_store_coloc_put(st, H200, &l, &err), 0);
    assert_int_equal(carma_store_coloc_put(st, A100, &a100, &err), 0);
    assert_int_equal(carma_store_commit(st, &err), 0);
    assert_int_equal(carma_store_coloc_get(st, H200, &back, &err), 4); /* 2 + 2 knots */
    assert_memory_equal(back.weight, l.weight, sizeof l.weight);
    assert_memory_equal(back.logq, l.logq, sizeof l.logq);
    assert_int_equal(back.observed[0] + back.observed[1], 0); /* a count since start */
    assert_int_equal(carma_store_coloc_get(st, A100, &back, &err), 2);
    assert_memory_equal(back.weight, a100.weight, sizeof a100.weight);
    assert_memory_equal(back.logq, a100.logq, sizeof a100.logq);
    assert_int_equal(carma_store_coloc_get(st, "", &back, &err), 0);
    sqlite3 *db = carma_store_sqlite(st);
    static const char *const bad[] = {
        "INSERT INTO coloc(kind,sharing,knot,weight,logq) VALUES('" H200 "','mig',0,1,0)",
        "INSERT INTO coloc(kind,sharing,knot,weight,logq) VALUES('" H200 "','mps',9,1,0)",
        "INSERT INTO coloc(kind,sharing,knot,weight,logq) VALUES('" H200 "','mps',-1,1,0)",
        "INSERT INTO coloc(kind,sharing,knot,weight,logq) VALUES('" H200 "','mps','x',1,0)",
        "UPDATE coloc SET weight=1e9 WHERE sharing='mps'",
        "UPDATE coloc SET logq=100 WHERE sharing='timeslice'",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(sqlite3_exec(db, "SAVEPOINT t", NULL, NULL, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, bad[i], NULL, NULL, NULL), SQLITE_OK);
        assert_int_equal(carma_store_coloc_get(st, H200, &back, &err), -EINVAL);
        print_message("%s: %s\n", bad[i], err.msg);
        assert_non_null(strstr(err.msg, "co-location correction of " H200 ":"));
        memset(&l, 0, sizeof l);
        assert_memory_equal(&back, &l, sizeof l);
        assert_int_equal(sqlite3_exec(db, "ROLLBACK TO t; RELEASE t", NULL, NULL, NULL), SQLITE_OK);
    }
    assert_int_equal(carma_store_coloc_get(st, H200, &back, &err), 4);
    /* what carmad learns anew after a refused table replaces the kind's whole: the row
     * it refused does not refuse the next get (every restart would forget what was
     * learnt), and the other kind's table stays */
    assert_int_equal(sqlite3_exec(db,
                                  "INSERT INTO coloc(kind,sharing,knot,weight,logq) "
                                  "VALUES('" H200 "','mig',0,1,0)",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    assert_int_equal(carma_store_coloc_get(st, H200, &back, &err), -EINVAL);
    assert_int_equal(carma_coloc_observe(&back, CARMA_SHARING_MPS, 2, 0.4f, 0, 0.3f), 0);
    assert_int_equal(carma_store_begin(st, &err), 0);
    assert_int_equal(carma_store_coloc_put(st, H200, &back, &err), 0);
    assert_int_equal(carma_store_commit(st, &err), 0);
    assert_int_equal(carma_store_coloc_get(st, H200, &l, &err), 2);
    assert_memory_equal(l.weight, back.weight, sizeof l.weight);
    assert_memory_equal(l.logq, back.logq, sizeof l.logq);
    assert_int_equal(carma_store_coloc_get(st, A100, &back, &err), 2);
    assert_memory_equal(back.weight, a100.weight, sizeof a100.weight);
    /* an empty table leaves the kind none */
    memset(&l, 0, sizeof l);
    assert_int_equal(carma_store_begin(st, &err), 0);
    assert_int_equal(carma_store_coloc_put(st, H200, &l, &err), 0);
    assert_int_equal(carma_store_commit(st, &err), 0);
    assert_int_equal(carma_store_coloc_get(st, H200, &back, &err), 0);
    assert_int_equal(carma_store_coloc_get(st, A100, &back, &err), 2);
    carma_store_close(st);
}

/* Schema 18: a version-17 table (one correction, by sharing mode and knot) is kept as
 * kind "", which carmad gives each kind without its own; a file whose version number was
 * lowered has the kind column and is migrated again unharmed; an older carmad's insert,
 * which names no kind, writes kind "". */
static void test_coloc_by_kind_migration(void **state)
{
    (void)state;
    struct carma_store *st;
    struct carma_err err = {{0}};
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    carma_store_close(st);
    store_sql("DROP TABLE coloc;"
              "CREATE TABLE coloc(sharing TEXT NOT NULL, knot INTEGER NOT "
              "NULL, weight REAL NOT NULL, logq REAL NOT NULL, "
              "PRIMARY KEY(sharing, knot));"
              "INSERT INTO coloc VALUES('timeslice',1,3,0.75);"
              "INSERT INTO coloc VALUES('mps',2,1.5,-0.25);"
              "PRAGMA user_version=17;");
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    assert_int_equal(carma_store_version_found(st), 17);
    struct carma_coloc_learnt l;
    assert_int_equal(carma_store_coloc_get(st, "", &l, &err), 2);
    assert_true(l.weight[CARMA_SHARING_TIMESLICE][1] == 3.0f);
    assert_true(l.logq[CARMA_SHARING_TIMESLICE][1] == 0.75f);
    assert_true(l.weight[CARMA_SHARING_MPS][2] == 1.5f);
    assert_true(l.logq[CARMA_SHARING_MPS][2] == -0.25f);
    assert_int_equal(carma_store_coloc_get(st, H200, &l, &err), 0);
    carma_store_close(st);
    store_sql("PRAGMA user_version=17;"
              "INSERT OR REPLACE INTO coloc(sharing,knot,weight,logq) "
              "VALUES('mps',3,1,0.5)");
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    assert_int_equal(carma_store_version_found(st), 17);
    assert_int_equal(carma_store_coloc_get(st, "", &l, &err), 3);
    assert_true(l.logq[CARMA_SHARING_MPS][3] == 0.5f);
    carma_store_close(st);
}

/* A SQL integer of the database file at p (opened with SQLite alone). */
static long long file_int(const char *p, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_open_v2(p, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    long long v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return v;
}

/* Before it migrates a store, carma_store_open keeps a copy at the old version,
 * PATH.vN, 0600 and owned as the store; a copy of that name is never overwritten; one
 * that cannot be written (a directory there, a write that fails) refuses the migration,
 * the store left at its version. A new store gets no copy. */
static void test_copy_before_migration(void **state)
{
    (void)state;
    struct carma_store *st;
    struct carma_err err = {{0}};
    char copy[160], tmp[170];
    snprintf(copy, sizeof copy, "%s.v18", path);
    snprintf(tmp, sizeof tmp, "%s.tmp", copy);
    int made = -1;
    struct stat sb;
    /* a new store: migrated from 0 with no copy */
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    assert_null(carma_store_pre_migration_copy(st, &made));
    assert_int_equal(made, 0);
    struct carma_job_rec r = {0};
    fill(&r, 1000, "before-upgrade");
    assert_int_equal(carma_store_job_insert(st, &r, &err), 0);
    carma_job_rec_clear(&r);
    carma_store_close(st);
    char p0[160];
    snprintf(p0, sizeof p0, "%s.v0", path);
    assert_int_equal(stat(p0, &sb), -1);
    /* current: nothing to migrate, no copy */
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    assert_null(carma_store_pre_migration_copy(st, &made));
    carma_store_close(st);

    /* a version-18 store (its version number lowered: 18 -> 19 adds a column it has) */
    store_sql("PRAGMA user_version=18");
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    assert_int_equal(carma_store_version_found(st), 18);
    assert_string_equal(carma_store_pre_migration_copy(st, &made), copy);
    assert_int_equal(made, CARMA_STORE_COPY_MADE);
    carma_store_close(st);
    assert_int_equal(lstat(copy, &sb), 0);
    assert_true(S_ISREG(sb.st_mode));
    assert_int_equal(sb.st_mode & 07777, 0600);
    struct stat db;
    assert_int_equal(stat(path, &db), 0);
    assert_int_equal(sb.st_uid, db.st_uid);
    assert_int_equal(sb.st_gid, db.st_gid);
    assert_int_equal(lstat(tmp, &sb), -1);
    /* the copy is the old store: its version, its rows; the store is migrated */
    assert_int_equal(file_int(copy, "PRAGMA user_version"), 18);
    assert_int_equal(file_int(copy, "SELECT count(*) FROM jobs WHERE name='before-upgrade'"), 1);
    assert_int_equal(file_int(path, "PRAGMA user_version"), CARMA_STORE_SCHEMA_VERSION);

    /* a copy of that name exists: kept as it is (the oldest), the store migrated */
    store_sql("PRAGMA user_version=18;"
              "UPDATE jobs SET name='after-upgrade'");
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    assert_string_equal(carma_store_pre_migration_copy(st, &made), copy);
    assert_int_equal(made, CARMA_STORE_COPY_KEPT);
    carma_store_close(st);
    assert_int_equal(file_int(copy, "SELECT count(*) FROM jobs WHERE name='before-upgrade'"), 1);
    assert_int_equal(file_int(path, "PRAGMA user_version"), CARMA_STORE_SCHEMA_VERSION);

    /* a directory at its name: the migration refused, naming the copy and what to do */
    assert_int_equal(unlink(copy), 0);
    assert_int_equal(mkdir(copy, 0700), 0);
    store_sql("PRAGMA user_version=18");
    st = (struct carma_store *)1;
    assert_int_equal(carma_store_open(&st, path, &err), -EEXIST);
    assert_null(st);
    assert_non_null(strstr(err.msg, copy));
    assert_non_null(strstr(err.msg, "not a regular file"));
    assert_non_null(strstr(err.msg, "move it aside"));
    assert_int_equal(file_int(path, "PRAGMA user_version"), 18);
    assert_int_equal(rmdir(copy), 0);

    /* a copy whose write fails (a file size limit stands for a full disk): refused, no
     * copy or part of one left, the store at its version */
    store_sql("UPDATE jobs SET env=printf('{\"X\":\"%.*c\"}', 1000000, 'x')");
    assert_int_equal(stat(path, &db), 0);
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = (rlim_t)db.st_size / 2;
    void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int rc = carma_store_open(&st, path, &err);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, was);
    assert_true(rc < 0);
    assert_null(st);
    assert_non_null(strstr(err.msg, copy));
    assert_non_null(strstr(err.msg, "cannot be written"));
    assert_non_null(strstr(err.msg, "free space"));
    assert_int_equal(lstat(copy, &sb), -1);
    assert_int_equal(lstat(tmp, &sb), -1);
    assert_int_equal(file_int(path, "PRAGMA user_version"), 18);
    /* once it can be written, it is, and the store migrated */
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    assert_int_equal(carma_store_pre_migration_copy(st, &made) != NULL, 1);
    assert_int_equal(made, CARMA_STORE_COPY_MADE);
    carma_store_close(st);
    assert_int_equal(file_int(copy, "PRAGMA user_version"), 18);
}

/* "after" (schema 20): the jobs a job runs after, stored on insert and read back by every
 * job read, listed in the JSON as an array ([] for none); a job's owner and state read
 * alone. A store at version 19 keeps a copy (PATH.v19), gets the column, and its jobs
 * have none; one whose version number was lowered to 19 keeps its lists. */
static void test_after_column_and_migration(void **state)
{
    (void)state;
    struct carma_store *st;
    struct carma_err err = {{0}};
    struct carma_job_rec r = {0};
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    fill(&r, 1000, "first");
    assert_int_equal(carma_store_job_insert(st, &r, &err), 0);
    fill(&r, 1000, "second");
    r.after = strdup("[1,7]");
    assert_int_equal(carma_store_job_insert(st, &r, &err), 0);
    assert_int_equal(r.id, 2);
    assert_int_equal(carma_store_job_get(st, 2, &r, &err), 0);
    assert_string_equal(r.after, "[1,7]");
    assert_int_equal(carma_store_job_get(st, 1, &r, &err), 0);
    assert_null(r.after);
    uid_t uid = 0;
    int sstate = -1;
    assert_int_equal(carma_store_job_state(st, 2, &uid, &sstate, &err), 0);
    assert_int_equal(uid, 1000);
    assert_int_equal(sstate, CARMA_JOB_QUEUED);
    assert_int_equal(carma_store_job_state(st, 3, &uid, &sstate, &err), -ENOENT);
    json_t *arr = json_array();
    assert_int_equal(carma_store_list_json(st, -1, 1, 0, 10, arr, &err), 0);
    assert_int_equal(json_array_size(arr), 2);
    assert_int_equal(json_array_size(json_object_get(json_array_get(arr, 0), "after")), 0);
    json_t *a = json_object_get(json_array_get(arr, 1), "after");
    assert_int_equal(json_array_size(a), 2);
    assert_int_equal(json_integer_value(json_array_get(a, 1)), 7);
    json_decref(arr);
    carma_store_close(st);
    uint64_t ids[CARMA_PROTO_MAX_AFTER];
    size_t n = 9;
    assert_int_equal(carma_store_after_parse(NULL, ids, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(carma_store_after_parse("[3,4]", ids, &n), 0);
    assert_true(n == 2 && ids[0] == 3 && ids[1] == 4);
    const char *bad[] = {"", "[]", "[0]", "[\"1\"]", "{}", "[1", "7"};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        assert_int_equal(carma_store_after_parse(bad[k], ids, &n), -EINVAL);
        assert_int_equal(n, 0);
    }

    /* its version number lowered to 19 (an older carmad ran on it): migrated again, the
     * column kept with its lists */
    store_sql("PRAGMA user_version=19");
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    assert_int_equal(carma_store_version_found(st), 19);
    assert_int_equal(carma_store_job_get(st, 2, &r, &err), 0);
    assert_string_equal(r.after, "[1,7]");
    carma_store_close(st);
    char copy[160];
    snprintf(copy, sizeof copy, "%s.v19", path);
    assert_int_equal(unlink(copy), 0);

    /* a real version-19 store (no column): copied, migrated, its jobs run after none */
    store_sql("ALTER TABLE jobs DROP COLUMN after; PRAGMA user_version=19");
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    assert_int_equal(carma_store_version_found(st), 19);
    int made = 0;
    assert_string_equal(carma_store_pre_migration_copy(st, &made), copy);
    assert_int_equal(made, CARMA_STORE_COPY_MADE);
    assert_int_equal(carma_store_job_get(st, 2, &r, &err), 0);
    assert_null(r.after);
    fill(&r, 1000, "third");
    r.after = strdup("[2]");
    assert_int_equal(carma_store_job_insert(st, &r, &err), 0);
    assert_int_equal(carma_store_job_get(st, 3, &r, &err), 0);
    assert_string_equal(r.after, "[2]");
    carma_job_rec_clear(&r);
    carma_store_close(st);
    assert_int_equal(file_int(copy, "PRAGMA user_version"), 19);
    assert_int_equal(file_int(path, "PRAGMA user_version"), CARMA_STORE_SCHEMA_VERSION);
}

/* "time_limit_s" (schema 21): each attempt's wall limit, stored on insert, read back by
 * every job read and in the JSON (null: none); the CHECK refuses what no carmad writes. A
 * store at version 20 keeps a copy (PATH.v20), gets the column, and its jobs have no
 * limit; one whose version number was lowered to 20 keeps its limits. */
static void test_time_limit_column_and_migration(void **state)
{
    (void)state;
    struct carma_store *st;
    struct carma_err err = {{0}};
    struct carma_job_rec r = {0};
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    fill(&r, 1000, "unlimited");
    assert_int_equal(carma_store_job_insert(st, &r, &err), 0);
    fill(&r, 1000, "limited");
    r.time_limit_s = 7200;
    assert_int_equal(carma_store_job_insert(st, &r, &err), 0);
    assert_int_equal(r.id, 2);
    fill(&r, 1000, "too long");
    r.time_limit_s = 31536001;
    assert_true(carma_store_job_insert(st, &r, &err) < 0);
    assert_non_null(strstr(err.msg, "CHECK"));
    assert_int_equal(carma_store_job_get(st, 2, &r, &err), 0);
    assert_int_equal(r.time_limit_s, 7200);
    assert_int_equal(carma_store_job_get(st, 1, &r, &err), 0);
    assert_int_equal(r.time_limit_s, 0);
    json_t *arr = json_array();
    assert_int_equal(carma_store_list_json(st, -1, 1, 0, 10, arr, &err), 0);
    assert_int_equal(json_array_size(arr), 2);
    assert_true(json_is_null(json_object_get(json_array_get(arr, 0), "time_limit_s")));
    assert_int_equal(json_integer_value(json_object_get(json_array_get(arr, 1), "time_limit_s")),
                     7200);
    json_decref(arr);
    carma_store_close(st);

    /* its version number lowered to 20 (an older carmad ran on it): migrated again, the
     * column kept with its limits */
    store_sql("PRAGMA user_version=20");
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    assert_int_equal(carma_store_version_found(st), 20);
    assert_int_equal(carma_store_job_get(st, 2, &r, &err), 0);
    assert_int_equal(r.time_limit_s, 7200);
    carma_store_close(st);
    char copy[160];
    snprintf(copy, sizeof copy, "%s.v20", path);
    assert_int_equal(unlink(copy), 0);

    /* a real version-20 store (no column): copied, migrated, its jobs without a limit */
    store_sql("ALTER TABLE jobs DROP COLUMN time_limit_s; PRAGMA user_version=20");
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    assert_int_equal(carma_store_version_found(st), 20);
    int made = 0;
    assert_string_equal(carma_store_pre_migration_copy(st, &made), copy);
    assert_int_equal(made, CARMA_STORE_COPY_MADE);
    assert_int_equal(carma_store_job_get(st, 2, &r, &err), 0);
    assert_int_equal(r.time_limit_s, 0);
    fill(&r, 1000, "third");
    r.time_limit_s = 90;
    assert_int_equal(carma_store_job_insert(st, &r, &err), 0);
    assert_int_equal(carma_store_job_get(st, 3, &r, &err), 0);
    assert_int_equal(r.time_limit_s, 90);
    carma_job_rec_clear(&r);
    carma_store_close(st);
    assert_int_equal(file_int(copy, "PRAGMA user_version"), 20);
    assert_int_equal(file_int(path, "PRAGMA user_version"), CARMA_STORE_SCHEMA_VERSION);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_jobs_and_attempts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_after_column_and_migration, setup, teardown),
        cmocka_unit_test_setup_teardown(test_time_limit_column_and_migration, setup, teardown),
        cmocka_unit_test_setup_teardown(test_strict_wal_and_migration, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_disk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_disk_in_transaction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_savepoint, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_disk_in_savepoint, setup, teardown),
        cmocka_unit_test_setup_teardown(test_private_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_peaks_env_retention, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attempt_xid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attempt_seen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_coloc_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_coloc_by_kind_migration, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unreadable_not_damaged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy_before_migration, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
