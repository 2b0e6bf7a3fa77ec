/* The store's monitoring tables (schema v3): records, retention by age and by size,
 * the history buckets a report draws, accounting totals per user, solo profiles. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/job.h"
#include "daemon/store.h"

static char path[128];

static int setup(void **state)
{
    (void)state;
    snprintf(path, sizeof path, "/tmp/carma-test-records-%d.db", (int)getpid());
    unlink(path);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char p[160];
    unlink(path);
    snprintf(p, sizeof p, "%s-wal", path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", path);
    unlink(p);
    return 0;
}

static void test_records_retention_history(void **state)
{
    (void)state;
    struct carma_store *st;
    struct carma_err err = {{0}};
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    int64_t g0, g1, again;
    assert_int_equal(carma_store_begin(st, &err), 0);
    assert_int_equal(carma_store_gpu_id(st, "GPU-a", "A100", 40960, 400, &g0, &err), 0);
    assert_int_equal(carma_store_gpu_id(st, "GPU-b", "A100", 40960, -1, &g1, &err), 0);
    assert_int_equal(carma_store_gpu_id(st, "GPU-a", "A100", 40960, 400, &again, &err), 0);
    assert_int_equal(again, g0); /* by UUID, stable */
    /* 100 records per GPU, t = 1000, 1010, ... 1990. */
    for (int i = 0; i < 100; i++)
        for (int g = 0; g < 2; g++) {
            struct carma_store_sample x = {.gpu = g ? g1 : g0, .t = 1000 + 10.0 * i,
                                           .mem_mib = (uint64_t)(100 * i), .util = 0.5,
                                           .smact = g ? -1 : 0.01 * i, .smocc = -1, .drama = -1,
                                           .tensor = -1, .power_w = 100 + i, .energy_j = 1000};
            assert_int_equal(carma_store_sample_insert(st, &x, &err), 0);
        }
    assert_int_equal(carma_store_commit(st, &err), 0);
    /* History over [1000, 1100) in 5 buckets of 20 s: two records each. */
    json_t *h;
    assert_int_equal(carma_store_history_json(st, 1000, 1100, 5, 10, &h, &err), 0);
    json_t *ga = json_array_get(json_object_get(h, "gpus"), 0);
    assert_string_equal(json_string_value(json_object_get(ga, "uuid")), "GPU-a");
    json_t *t = json_object_get(ga, "t"), *m = json_object_get(ga, "mem_mib"),
           *sm = json_object_get(ga, "smact_pm"), *pw = json_object_get(ga, "power_dw");
    assert_int_equal(json_array_size(t), 5);
    assert_int_equal(json_integer_value(json_array_get(t, 0)), 10);  /* last t of bucket 0 */
    assert_int_equal(json_integer_value(json_array_get(m, 1)), 300); /* max of 200, 300 */
    assert_int_equal(json_integer_value(json_array_get(sm, 1)), 25); /* mean .02 .03, per mille */
    assert_int_equal(json_integer_value(json_array_get(pw, 4)), 1085); /* 108.5 W */
    json_t *gb = json_array_get(json_object_get(h, "gpus"), 1);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(gb, "smact_pm"), 0)), -1);
    assert_true(json_is_null(json_object_get(gb, "power_max_w")));
    json_decref(h);
    /* Retention by age: everything before 1500 goes (50 records per GPU). */
    uint64_t n = 0, del = 0;
    assert_int_equal(carma_store_begin(st, &err), 0);
    int more = 1;
    assert_int_equal(carma_store_samples_prune(st, 1500, 0, 0, &del, &more, &err), 0);
    assert_int_equal(more, 0);
    assert_int_equal(carma_store_commit(st, &err), 0);
    assert_int_equal(del, 100);
    assert_int_equal(carma_store_samples_count(st, &n, &err), 0);
    assert_int_equal(n, 100);
    /* By size: 55 rows to drop, each GPU's oldest (28 each, rounded up), in batches of at
     * most 10 rows a call: the first call says more is left. */
    assert_int_equal(carma_store_begin(st, &err), 0);
    assert_int_equal(carma_store_samples_prune(st, -1, 55, 10, &del, &more, &err), 0);
    assert_int_equal(carma_store_commit(st, &err), 0);
    assert_int_equal(del, 10);
    assert_int_equal(more, 1);
    assert_int_equal(carma_store_samples_count(st, &n, &err), 0);
    assert_int_equal(n, 90);
    assert_int_equal(carma_store_begin(st, &err), 0);
    assert_int_equal(carma_store_samples_prune(st, -1, 45, 0, &del, &more, &err), 0);
    assert_int_equal(carma_store_commit(st, &err), 0);
    assert_int_equal(del, 45);
    assert_int_equal(more, 0);
    assert_int_equal(carma_store_samples_count(st, &n, &err), 0);
    assert_int_equal(n, 45);
    assert_int_equal(carma_store_history_json(st, 1000, 2000, 1000, 10, &h, &err), 0);
    ga = json_array_get(json_object_get(h, "gpus"), 0);
    assert_true(json_integer_value(json_array_get(json_object_get(ga, "t"), 0)) >= 700);
    json_decref(h);
    carma_store_close(st);
}

/* By size when the GPUs hold unequal numbers of records (one drained, others no longer
 * this server's): what a GPU cannot give is taken from the others, down to the count
 * asked for, in one call. */
static void test_prune_unequal_gpus(void **state)
{
    (void)state;
    struct carma_store *st;
    struct carma_err err = {{0}};
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    int64_t g[4];
    const char *u[4] = {"GPU-a", "GPU-b", "GPU-c", "GPU-d"};
    for (int k = 0; k < 4; k++)
        assert_int_equal(carma_store_gpu_id(st, u[k], "A100", 40960, 400, &g[k], &err), 0);
    assert_int_equal(carma_store_begin(st, &err), 0);
    for (int i = 0; i < 1000; i++)
        for (int k = 0; k < 4; k++) {
            if (k && i >= 10)
                continue;
            struct carma_store_sample x = {.gpu = g[k],
                                           .t = 1000 + i,
                                           .mem_mib = 1,
                                           .util = 0.5,
                                           .smact = -1,
                                           .smocc = -1,
                                           .drama = -1,
                                           .tensor = -1,
                                           .power_w = 100,
                                           .energy_j = 1};
            assert_int_equal(carma_store_sample_insert(st, &x, &err), 0);
        }
    assert_int_equal(carma_store_commit(st, &err), 0);
    uint64_t n = 0, del = 0;
    int more = 1;
    assert_int_equal(carma_store_begin(st, &err), 0);
    assert_int_equal(carma_store_samples_prune(st, -1, 580, 20000, &del, &more, &err), 0);
    assert_int_equal(carma_store_commit(st, &err), 0);
    assert_int_equal(del, 580);
    assert_int_equal(more, 0);
    assert_int_equal(carma_store_samples_count(st, &n, &err), 0);
    assert_int_equal(n, 450);
    carma_store_close(st);
}

static void insert_job_as(struct carma_store *st, uint32_t uid, const char *user, double submit,
                          uint64_t *id)
{
    struct carma_err err = {{0}};
    struct carma_job_rec r = {0};
    carma_job_rec_clear(&r);
    r.name = strdup("j");
    r.uid = uid;
    r.user = strdup(user);
    r.cwd = strdup("/");
    r.argv_json = strdup("[\"true\"]");
    r.env_json = strdup("{}");
    r.gpus = 1;
    r.max_attempts = 3;
    r.state = CARMA_JOB_RUNNING;
    r.submit_s = submit;
    assert_int_equal(carma_store_job_insert(st, &r, &err), 0);
    *id = r.id;
    carma_job_rec_clear(&r);
}

/* Accounts as in the users' names: alice 1000, bob 1001. */
static void insert_job(struct carma_store *st, const char *user, double submit, uint64_t *id)
{
    insert_job_as(st, strcmp(user, "alice") ? 1001 : 1000, user, submit, id);
}

static void test_usage_and_profiles(void **state)
{
    (void)state;
    struct carma_store *st;
    struct carma_err err = {{0}};
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    uint64_t a, b, c;
    assert_int_equal(carma_store_begin(st, &err), 0);
    insert_job(st, "alice", 100, &a);
    insert_job(st, "alice", 200, &b);
    insert_job(st, "bob", 300, &c);
    /* alice's job a: an OOM attempt 110-130, then 140-200 (2 GPUs). */
    assert_int_equal(carma_store_attempt_begin(st, a, 1, "[\"GPU-a\"]", NULL, 110, &err), 0);
    assert_int_equal(carma_store_attempt_end(st, a, 1, 130, "oom", 1, 0, 900, 0, NULL, &err), 0);
    assert_int_equal(carma_store_usage_put(st, a, 1, 20, 2000, -1, &err), 0);
    assert_int_equal(carma_store_attempt_begin(st, a, 2, "[\"GPU-a\",\"GPU-b\"]", NULL, 140, &err), 0);
    assert_int_equal(carma_store_attempt_end(st, a, 2, 200, "succeeded", 0, 0, 1000, 0, NULL, &err),
                     0);
    assert_int_equal(carma_store_usage_put(st, a, 2, 120, 9000, 0.4, &err), 0);
    /* b still running since 250 (flushed 30 s, 500 J); c never started. */
    assert_int_equal(carma_store_attempt_begin(st, b, 1, "[\"GPU-b\"]", NULL, 250, &err), 0);
    assert_int_equal(carma_store_usage_put(st, b, 1, 30, 500, -1, &err), 0);
    struct carma_job_rec ra = {0};
    carma_job_rec_clear(&ra);
    assert_int_equal(carma_store_job_get(st, a, &ra, &err), 0);
    ra.state = CARMA_JOB_SUCCEEDED;
    ra.end_s = 200;
    assert_int_equal(carma_store_job_update(st, &ra, &err), 0);
    carma_job_rec_clear(&ra);
    assert_int_equal(carma_store_profile_add(st, 42, 0.4, 0.2, -1, 200, &err), 0);
    assert_int_equal(carma_store_profile_add(st, 42, 0.6, -1, 0.3, 300, &err), 0);
    assert_int_equal(carma_store_commit(st, &err), 0);
    json_t *u;
    assert_int_equal(carma_store_usage_json(st, -1, NULL, -1, -1, 400, &u, &err), 0);
    json_t *al = json_array_get(json_object_get(u, "users"), 0);
    assert_string_equal(json_string_value(json_object_get(al, "user")), "alice");
    assert_int_equal(json_integer_value(json_object_get(al, "jobs")), 2);
    assert_int_equal(json_integer_value(json_object_get(al, "attempts")), 3);
    assert_int_equal(json_integer_value(json_object_get(al, "oom")), 1);
    /* run: 20 + 60 + (400 - 250) = 230; GPU-s from the same times, live for the running
     * attempt as its run is: 20 + 60 x 2 + 150 = 290 (not the 30 s last flushed);
     * energy as flushed: 2000 + 9000 + 500 */
    assert_float_equal(json_number_value(json_object_get(al, "run_s")), 230, 1e-9);
    assert_float_equal(json_number_value(json_object_get(al, "gpu_seconds")), 290, 1e-9);
    assert_float_equal(json_number_value(json_object_get(al, "energy_j")), 11500, 1e-9);
    /* waits: a (200-100) - 80 = 20; b (400-200) - 150 = 50 */
    assert_float_equal(json_number_value(json_object_get(al, "wait_s")), 70, 1e-9);
    json_t *t = json_object_get(u, "total");
    assert_int_equal(json_integer_value(json_object_get(t, "jobs")), 3);
    assert_float_equal(json_number_value(json_object_get(t, "wait_s")), 170, 1e-9);
    json_decref(u);
    /* --since 150: b and c only; --user bob: c only. */
    assert_int_equal(carma_store_usage_json(st, -1, NULL, 150, -1, 400, &u, &err), 0);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(u, "total"), "jobs")), 2);
    json_decref(u);
    assert_int_equal(carma_store_usage_json(st, -1, "bob", -1, -1, 400, &u, &err), 0);
    assert_int_equal(json_array_size(json_object_get(u, "users")), 1);
    json_decref(u);
    /* The name alice passes to a new account (uid 1002): its usage is its own, and the
     * old account's stays apart, under the name its jobs were submitted as. */
    uint64_t d;
    assert_int_equal(carma_store_begin(st, &err), 0);
    insert_job_as(st, 1002, "alice", 350, &d);
    assert_int_equal(carma_store_commit(st, &err), 0);
    assert_int_equal(carma_store_usage_json(st, 1002, NULL, -1, -1, 400, &u, &err), 0);
    assert_int_equal(json_array_size(json_object_get(u, "users")), 1);
    json_t *nu = json_array_get(json_object_get(u, "users"), 0);
    assert_int_equal(json_integer_value(json_object_get(nu, "uid")), 1002);
    assert_int_equal(json_integer_value(json_object_get(nu, "jobs")), 1);
    assert_int_equal(json_integer_value(json_object_get(nu, "attempts")), 0);
    json_decref(u);
    assert_int_equal(carma_store_usage_json(st, -1, NULL, -1, -1, 400, &u, &err), 0);
    json_t *us = json_object_get(u, "users");
    assert_int_equal(json_array_size(us), 3);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(us, 0), "uid")), 1000);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(us, 0), "jobs")), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(us, 1), "uid")), 1002);
    assert_string_equal(json_string_value(json_object_get(json_array_get(us, 1), "user")), "alice");
    assert_string_equal(json_string_value(json_object_get(json_array_get(us, 2), "user")), "bob");
    json_decref(u);
    /* A name that is not UTF-8 (Latin-1 from LDAP) is shown with U+FFFD for its byte: as
     * it is, jansson would refuse it and the user would drop out of every answer. */
    uint64_t e;
    assert_int_equal(carma_store_begin(st, &err), 0);
    insert_job_as(st, 1003, "jos\xe9", 360, &e);
    assert_int_equal(carma_store_commit(st, &err), 0);
    assert_int_equal(carma_store_usage_json(st, 1003, NULL, -1, -1, 400, &u, &err), 0);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(u, "users"), 0), "user")),
        "jos\xef\xbf\xbd");
    json_decref(u);
    struct carma_job_rec re = {0};
    carma_job_rec_clear(&re);
    assert_int_equal(carma_store_job_get(st, e, &re, &err), 0);
    assert_string_equal(re.user, "jos\xef\xbf\xbd");
    carma_job_rec_clear(&re);
    /* A job row carries its ended attempts' sums. */
    struct carma_job_rec r = {0};
    carma_job_rec_clear(&r);
    assert_int_equal(carma_store_job_get(st, a, &r, &err), 0);
    assert_float_equal(r.run_s, 80, 1e-9);
    assert_float_equal(r.gpu_s, 140, 1e-9);
    assert_float_equal(r.energy_j, 11000, 1e-9);
    carma_job_rec_clear(&r);
    /* Profiles: running means; an absent value keeps the other's. */
    struct carma_profile p;
    assert_int_equal(carma_store_profile_get(st, 42, &p, &err), 0);
    assert_float_equal(p.smact, 0.5, 1e-9);
    assert_float_equal(p.smocc, 0.2, 1e-9);
    assert_float_equal(p.drama, 0.3, 1e-9);
    assert_int_equal(p.runs, 2);
    assert_int_equal(carma_store_profile_get(st, 43, &p, &err), -ENOENT);
    assert_int_equal(carma_store_profile_add(st, 43, 1.5, -1, -1, 0, &err), -EINVAL);
    carma_store_close(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_records_retention_history, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prune_unequal_gpus, setup, teardown),
        cmocka_unit_test_setup_teardown(test_usage_and_profiles, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
