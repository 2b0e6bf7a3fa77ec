/* carma_tree_remove_at: a folder tree removed without following links, within a depth
 * and a budget, a failure reported and the rest still removed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/tree.h"

static char dir[64];
static int dfd = -1;

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/carma-tree-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return dfd < 0 ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    close(dfd);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "chmod -R u+rwx %s; rm -rf %s", dir, dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void put(const char *rel, const char *text)
{
    int fd = openat(dfd, rel, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

static int exists(const char *rel)
{
    struct stat st;
    return fstatat(dfd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* jobs/7 as carmad makes it: attempt folders of logs, status and shepherd files. */
static void job_tree(void)
{
    assert_int_equal(mkdirat(dfd, "jobs", 0700), 0);
    assert_int_equal(mkdirat(dfd, "jobs/7", 0711), 0);
    for (int n = 1; n <= 2; n++) {
        char p[64];
        snprintf(p, sizeof p, "jobs/7/%d", n);
        assert_int_equal(mkdirat(dfd, p, 0711), 0);
        static const char *const f[] = {"stdout", "stderr", "status", "shepherd", ".status.tmp"};
        for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
            char q[96];
            snprintf(q, sizeof q, "%s/%s", p, f[k]);
            put(q, "x\n");
        }
    }
}

static void test_removes_job_folder_not_link_targets(void **state)
{
    (void)state;
    job_tree();
    /* outside the tree: a file and a folder that links inside point to */
    put("keep", "precious\n");
    assert_int_equal(mkdirat(dfd, "keepdir", 0700), 0);
    put("keepdir/f", "precious\n");
    char t[128];
    snprintf(t, sizeof t, "%s/keep", dir);
    assert_int_equal(symlinkat(t, dfd, "jobs/7/1/stdout.link"), 0);
    snprintf(t, sizeof t, "%s/keepdir", dir);
    assert_int_equal(symlinkat(t, dfd, "jobs/7/2/dir.link"), 0);
    assert_int_equal(symlinkat("../../..", dfd, "jobs/7/up"), 0);
    int jfd = openat(dfd, "jobs", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    uint32_t budget = 1000;
    struct carma_err err = {{0}};
    assert_int_equal(carma_tree_remove_at(jfd, "7", "jobs", 3, &budget, &err), 0);
    assert_false(exists("jobs/7"));
    assert_true(exists("jobs"));
    assert_true(exists("keep"));
    assert_true(exists("keepdir/f"));
    assert_true(budget < 1000);
    /* absent: nothing to do, not an error */
    assert_int_equal(carma_tree_remove_at(jfd, "7", "jobs", 3, &budget, &err), 0);
    /* the entry itself a link to a folder: the link goes, the folder stays */
    assert_int_equal(symlinkat(t, jfd, "8"), 0);
    assert_int_equal(carma_tree_remove_at(jfd, "8", "jobs", 3, &budget, &err), 0);
    assert_false(exists("jobs/8"));
    assert_true(exists("keepdir/f"));
    /* not one name */
    assert_int_equal(carma_tree_remove_at(jfd, "../keep", "jobs", 3, &budget, &err), -EINVAL);
    assert_int_equal(carma_tree_remove_at(jfd, "..", "jobs", 3, &budget, &err), -EINVAL);
    assert_true(exists("keep"));
    close(jfd);
}

static void test_depth_bounded(void **state)
{
    (void)state;
    job_tree();
    assert_int_equal(mkdirat(dfd, "jobs/7/1/a", 0700), 0);
    put("jobs/7/1/a/f", "x\n");
    assert_int_equal(mkdirat(dfd, "jobs/7/1/a/b", 0700), 0);
    put("jobs/7/1/a/b/deep", "x\n");
    assert_int_equal(mkdirat(dfd, "jobs/7/2/empty", 0700), 0);
    assert_int_equal(mkdirat(dfd, "jobs/7/2/empty/too", 0700), 0);
    int jfd = openat(dfd, "jobs", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    uint32_t budget = 1000;
    struct carma_err err = {{0}};
    assert_int_equal(carma_tree_remove_at(jfd, "7", "STATE/jobs", 3, &budget, &err), -ENOTEMPTY);
    assert_non_null(strstr(err.msg, "STATE/jobs/7/1/a/b: a folder deeper than expected"));
    /* the rest is gone: the other attempt, an empty folder below the depth, the files */
    assert_false(exists("jobs/7/2"));
    assert_false(exists("jobs/7/1/stdout"));
    assert_false(exists("jobs/7/1/a/f"));
    assert_true(exists("jobs/7/1/a/b/deep"));
    close(jfd);
}

static void test_budget(void **state)
{
    (void)state;
    job_tree();
    for (int k = 0; k < 50; k++) {
        char p[64];
        snprintf(p, sizeof p, "jobs/7/1/f%d", k);
        put(p, "x\n");
    }
    int jfd = openat(dfd, "jobs", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct carma_err err = {{0}};
    int calls = 0, rc;
    do {
        uint32_t budget = 10;
        rc = carma_tree_remove_at(jfd, "7", "jobs", 3, &budget, &err);
        if (rc == -EAGAIN)
            assert_int_equal(budget, 0);
        calls++;
    } while (rc == -EAGAIN && calls < 100);
    assert_int_equal(rc, 0);
    assert_true(calls >= 7); /* 63 entries at most 10 a call */
    assert_false(exists("jobs/7"));
    uint32_t none = 0;
    assert_int_equal(mkdirat(jfd, "9", 0700), 0);
    assert_int_equal(carma_tree_remove_at(jfd, "9", "jobs", 3, &none, &err), -EAGAIN);
    assert_true(exists("jobs/9"));
    close(jfd);
}

/* A folder whose entries cannot be removed (not writable: only for a non-root caller):
 * the error is the first failure, and everything else is removed. */
static void test_failure_reported_rest_removed(void **state)
{
    (void)state;
    if (geteuid() == 0)
        skip();
    job_tree();
    assert_int_equal(mkdirat(dfd, "jobs/7/1/ro", 0700), 0);
    put("jobs/7/1/ro/f", "x\n");
    assert_int_equal(fchmodat(dfd, "jobs/7/1/ro", 0500, 0), 0);
    int jfd = openat(dfd, "jobs", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    uint32_t budget = 1000;
    struct carma_err err = {{0}};
    assert_int_equal(carma_tree_remove_at(jfd, "7", "jobs", 3, &budget, &err), -EACCES);
    assert_non_null(strstr(err.msg, "jobs/7/1/ro/f: "));
    assert_true(exists("jobs/7/1/ro/f"));
    assert_false(exists("jobs/7/2"));
    assert_false(exists("jobs/7/1/stdout"));
    close(jfd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_removes_job_folder_not_link_targets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_depth_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_budget, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failure_reported_rest_removed, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
