/* A submission's path checks on threads of their own (src/daemon/pathcheck.c): the
 * verdicts (a folder and a command found on PATH, a missing folder, a missing or
 * non-executable command), the fd that wakes the caller, a check given up while it hangs
 * (counted as stuck, per uid, until its thread ends and frees it), one given up after it
 * ended, a stop with checks still hanging, and a stop just as a check ended. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon/pathcheck.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/carma-pathcheck.XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* The next finished check, taken as carmad's loop takes it (once the fd has woken it);
 * NULL when the fd stays quiet for 60 s. */
static struct carmad_pathcheck_item *next_done(struct carmad_pathcheck *pc)
{
    for (;;) {
        struct carmad_pathcheck_item *it = carmad_pathcheck_take(pc);
        if (it)
            return it;
        struct pollfd p = {.fd = carmad_pathcheck_fd(pc), .events = POLLIN};
        if (poll(&p, 1, 60000) != 1)
            return NULL;
        uint64_t n;
        assert_int_equal(read(p.fd, &n, sizeof n), (ssize_t)sizeof n);
    }
}

/* The verdict of one check of (cwd, argv0, PATH) as the calling user. */
static enum carmad_path_verdict verdict(struct carmad_pathcheck *pc, const char *cwd,
                                        const char *argv0, const char *path_env)
{
    struct carmad_pathcheck_req r = {.uid = getuid(), .gid = getgid(), .user = "u",
                                     .cwd = cwd, .argv0 = argv0, .path_env = path_env};
    struct carmad_pathcheck_item *it;
    struct carma_err err;
    int owner;
    assert_int_equal(carmad_pathcheck_start(pc, &r, &owner, &it, &err), 0);
    struct carmad_pathcheck_item *got = next_done(pc);
    assert_ptr_equal(got, it);
    assert_ptr_equal(carmad_pathcheck_owner(got), &owner);
    enum carmad_path_verdict v;
    assert_int_equal(carmad_pathcheck_result(got, &v, &err), 0);
    carmad_pathcheck_free(got);
    return v;
}

static void test_verdicts(void **state)
{
    (void)state;
    struct carmad_pathcheck *pc;
    struct carma_err err;
    assert_int_equal(carmad_pathcheck_init(&pc, NULL, &err), 0);
    char f[128], exe[128];
    snprintf(f, sizeof f, "%s/plain", dir);
    snprintf(exe, sizeof exe, "%s/run", dir);
    FILE *fp = fopen(f, "w");
    assert_non_null(fp);
    fclose(fp);
    fp = fopen(exe, "w");
    assert_non_null(fp);
    fclose(fp);
    assert_int_equal(chmod(exe, 0755), 0);
    assert_int_equal(verdict(pc, dir, "run", dir), CARMAD_PATH_OK);
    assert_int_equal(verdict(pc, dir, "./run", NULL), CARMAD_PATH_OK);
    assert_int_equal(verdict(pc, "/", "sh", NULL), CARMAD_PATH_OK); /* the default PATH */
    assert_int_equal(verdict(pc, "/nonexistent-carma", "sh", NULL), CARMAD_PATH_NO_CWD);
    assert_int_equal(verdict(pc, f, "sh", NULL), CARMAD_PATH_NO_CWD); /* not a folder */
    assert_int_equal(verdict(pc, dir, "no-such-command", dir), CARMAD_PATH_NO_COMMAND);
    assert_int_equal(verdict(pc, dir, "/tmp", NULL), CARMAD_PATH_NO_COMMAND); /* a folder */
    if (getuid() != 0) /* root may execute anything with an x bit; none here */
        assert_int_equal(verdict(pc, dir, "./plain", NULL), CARMAD_PATH_NO_COMMAND);
    carmad_pathcheck_stop(pc);
}

static void wait_for(const char *path)
{
    for (int k = 0; k < 6000 && access(path, F_OK) != 0; k++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(access(path, F_OK), 0);
}

/* A module whose checks hang until dir/answer exists (hold: that path, held: the path
 * each check creates as it starts), with one check of uid 1234 started, *a. */
static struct carmad_pathcheck *held_module(char *hold, size_t hcap, char *held, size_t dcap,
                                            struct carmad_pathcheck_item **a)
{
    snprintf(hold, hcap, "%s/answer", dir);
    snprintf(held, dcap, "%s.held", hold);
    struct carmad_pathcheck *pc;
    struct carma_err err;
    assert_int_equal(carmad_pathcheck_init(&pc, hold, &err), 0);
    const struct carmad_pathcheck_req r = {
        .uid = 1234, .gid = 1, .user = "u", .cwd = "/", .argv0 = "sh"};
    assert_int_equal(carmad_pathcheck_start(pc, &r, NULL, a, &err), 0);
    return pc;
}

static void test_abandoned_checks(void **state)
{
    (void)state;
    char hold[128], held[140];
    struct carmad_pathcheck_item *a, *b;
    struct carmad_pathcheck *pc = held_module(hold, sizeof hold, held, sizeof held, &a);
    struct carma_err err;
    struct carmad_pathcheck_req r = {.uid = 1234, .gid = 1, .user = "u", .cwd = "/", .argv0 = "sh"};
    r.uid = 99;
    assert_int_equal(carmad_pathcheck_start(pc, &r, NULL, &b, &err), 0);
    wait_for(held);
    assert_null(carmad_pathcheck_take(pc)); /* they hang */
    unsigned mine;
    assert_int_equal(carmad_pathcheck_stuck(pc, 1234, &mine), 0);
    carmad_pathcheck_abandon(pc, a);
    assert_int_equal(carmad_pathcheck_stuck(pc, 1234, &mine), 1);
    assert_int_equal(mine, 1);
    assert_int_equal(carmad_pathcheck_stuck(pc, 99, &mine), 1);
    assert_int_equal(mine, 0);
    /* the file system answers: the abandoned one is freed by its thread, the other is
     * handed back */
    FILE *fp = fopen(hold, "w");
    assert_non_null(fp);
    fclose(fp);
    struct carmad_pathcheck_item *got = next_done(pc);
    assert_ptr_equal(got, b);
    carmad_pathcheck_free(got);
    for (int k = 0; k < 6000 && carmad_pathcheck_stuck(pc, 1234, NULL); k++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(carmad_pathcheck_stuck(pc, 1234, &mine), 0);
    /* given up after it ended, before it was taken: freed at once. next_done may have
     * taken b before reading its wake; a wake left over would end the poll below
     * before c has ended. */
    uint64_t n;
    while (read(carmad_pathcheck_fd(pc), &n, sizeof n) == (ssize_t)sizeof n)
        ;
    struct carmad_pathcheck_item *c;
    assert_int_equal(carmad_pathcheck_start(pc, &r, NULL, &c, &err), 0);
    struct pollfd p = {.fd = carmad_pathcheck_fd(pc), .events = POLLIN};
    assert_int_equal(poll(&p, 1, 60000), 1);
    carmad_pathcheck_abandon(pc, c);
    assert_null(carmad_pathcheck_take(pc));
    assert_int_equal(carmad_pathcheck_stuck(pc, 99, NULL), 0);
    /* stopped while one hangs: its thread frees it and the module once it ends */
    assert_int_equal(unlink(hold), 0);
    assert_int_equal(unlink(held), 0);
    struct carmad_pathcheck_item *d;
    assert_int_equal(carmad_pathcheck_start(pc, &r, NULL, &d, &err), 0);
    wait_for(held);
    carmad_pathcheck_stop(pc);
    fp = fopen(hold, "w");
    assert_non_null(fp);
    fclose(fp);
    /* its thread ends now (ASan's leak check at exit sees what it did not free); the
     * pause lets it read the hold file before teardown removes the folder */
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

/* An abandoned check's thread that ends wakes the caller, though it has nothing to take:
 * its user's place is free, and submissions waiting for one may go on. */
static void test_abandoned_end_wakes(void **state)
{
    (void)state;
    char hold[128], held[140];
    struct carmad_pathcheck_item *a;
    struct carmad_pathcheck *pc = held_module(hold, sizeof hold, held, sizeof held, &a);
    wait_for(held);
    carmad_pathcheck_abandon(pc, a);
    struct pollfd p = {.fd = carmad_pathcheck_fd(pc), .events = POLLIN};
    assert_int_equal(poll(&p, 1, 0), 0);
    FILE *fp = fopen(hold, "w");
    assert_non_null(fp);
    fclose(fp);
    assert_int_equal(poll(&p, 1, 60000), 1);
    assert_int_equal(carmad_pathcheck_stuck(pc, 1234, NULL), 0);
    assert_null(carmad_pathcheck_take(pc));
    carmad_pathcheck_stop(pc);
}

/* A check taken just as it ended, then carmad stopping at once: the thread, done with
 * the module's lock, must not touch the module (its eventfd) that the stop freed. The
 * race is narrow: tried many times, under ASan a use of the freed module fails, and in
 * any build a wake written to the eventfd's number after it was closed lands in the
 * eventfd opened next. */
static void test_stop_right_after_take(void **state)
{
    (void)state;
    struct carmad_pathcheck_req r = {
        .uid = getuid(), .gid = getgid(), .user = "u", .cwd = "/", .argv0 = "sh"};
    int stray = 0;
    for (int k = 0; k < 6000; k++) {
        struct carmad_pathcheck *pc;
        struct carma_err err;
        assert_int_equal(carmad_pathcheck_init(&pc, NULL, &err), 0);
        struct carmad_pathcheck_item *it, *got;
        assert_int_equal(carmad_pathcheck_start(pc, &r, NULL, &it, &err), 0);
        while (!(got = carmad_pathcheck_take(pc)))
            ;
        carmad_pathcheck_free(got);
        int fd = carmad_pathcheck_fd(pc);
        carmad_pathcheck_stop(pc); /* no thread left running: freed at once */
        int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        assert_true(efd >= 0);
        if (efd == fd) {
            struct timespec ts = {0, 20 * 1000};
            nanosleep(&ts, NULL);
            uint64_t n;
            stray += read(efd, &n, sizeof n) == (ssize_t)sizeof n;
        }
        close(efd);
    }
    assert_int_equal(stray, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_verdicts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abandoned_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abandoned_end_wakes, setup, teardown),
        cmocka_unit_test(test_stop_right_after_take),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
