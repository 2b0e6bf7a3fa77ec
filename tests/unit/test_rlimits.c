/* Resource limits as text (util/rlimits.h): the round trip, strict parsing, and the
 * limits of another process read from /proc only while it is still the user's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/rlimits.h"

static void test_round_trip(void **state)
{
    (void)state;
    struct rlimit rl[CARMA_RLIMITS_N], back[CARMA_RLIMITS_N];
    for (int r = 0; r < CARMA_RLIMITS_N; r++) {
        rl[r].rlim_cur = r % 3 == 0 ? RLIM_INFINITY : (rlim_t)r * 1000;
        rl[r].rlim_max = r % 3 == 2 ? (rlim_t)r * 1000 : RLIM_INFINITY;
    }
    rl[1].rlim_cur = rl[1].rlim_max = (rlim_t)UINT64_MAX - 1; /* the largest finite one */
    char buf[CARMA_RLIMITS_MAX];
    carma_rlimits_format(rl, buf, sizeof buf);
    assert_true(strlen(buf) < sizeof buf - 1);
    assert_true(strncmp(buf, "-:-,18446744073709551614:18446744073709551614,2000:2000,", 56) == 0);
    struct carma_err err = {{0}};
    assert_int_equal(carma_rlimits_parse(buf, back, &err), 0);
    assert_memory_equal(rl, back, sizeof rl);
}

static void test_parse_strict(void **state)
{
    (void)state;
    struct rlimit rl[CARMA_RLIMITS_N];
    char ok[CARMA_RLIMITS_MAX] = "", s[CARMA_RLIMITS_MAX + 64];
    for (int r = 0; r < CARMA_RLIMITS_N; r++)
        strcat(ok, r ? ",1:2" : "1:2");
    struct carma_err err = {{0}};
    assert_int_equal(carma_rlimits_parse(ok, rl, &err), 0);
    assert_int_equal(rl[CARMA_RLIMITS_N - 1].rlim_cur, 1);
    assert_int_equal(rl[CARMA_RLIMITS_N - 1].rlim_max, 2);
    const char *bad[] = {"", "-", "1:2", "1:2,", ":", "-:-,-:-"};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        err.msg[0] = 0;
        assert_int_equal(carma_rlimits_parse(bad[k], rl, &err), -EINVAL);
        assert_true(err.msg[0]);
    }
    snprintf(s, sizeof s, "%s,1:2", ok); /* one too many */
    assert_int_equal(carma_rlimits_parse(s, rl, &err), -EINVAL);
    snprintf(s, sizeof s, "3:2%s", ok + 3); /* soft above hard */
    assert_int_equal(carma_rlimits_parse(s, rl, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "soft above hard"));
    const char *entry[] = {"+1:2", " 1:2", "1:2 ",  "1:-2", "18446744073709551615:-",
                           "1::2", "x:2",  "1:2:3", "--:-", "01:2"};
    for (size_t k = 0; k < sizeof entry / sizeof *entry; k++) {
        snprintf(s, sizeof s, "%s%s", entry[k], ok + 3); /* the first entry replaced */
        assert_int_equal(carma_rlimits_parse(s, rl, &err), -EINVAL);
    }
    snprintf(s, sizeof s, "-:-%s", ok + 3);
    assert_int_equal(carma_rlimits_parse(s, rl, &err), 0);
    assert_true(rl[0].rlim_cur == RLIM_INFINITY && rl[0].rlim_max == RLIM_INFINITY);
}

static void test_of_pid(void **state)
{
    (void)state;
    /* a child with limits of its own: read from /proc as getrlimit gives them */
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t kid = fork();
    assert_true(kid >= 0);
    if (kid == 0) {
        struct rlimit nofile = {77, 99}, core = {0, 0};
        setrlimit(RLIMIT_NOFILE, &nofile);
        setrlimit(RLIMIT_CORE, &core);
        close(p[0]);
        (void)!write(p[1], "r", 1);
        pause();
        _exit(0);
    }
    char c;
    close(p[1]);
    assert_int_equal(read(p[0], &c, 1), 1);
    close(p[0]);
    struct rlimit rl[CARMA_RLIMITS_N], mine;
    struct carma_err err = {{0}};
    assert_int_equal(carma_rlimits_of_pid(kid, geteuid(), rl, &err), 0);
    assert_int_equal(rl[RLIMIT_NOFILE].rlim_cur, 77);
    assert_int_equal(rl[RLIMIT_NOFILE].rlim_max, 99);
    assert_int_equal(rl[RLIMIT_CORE].rlim_max, 0);
    assert_int_equal(getrlimit(RLIMIT_STACK, &mine), 0);
    assert_true(rl[RLIMIT_STACK].rlim_cur == mine.rlim_cur);
    assert_true(rl[RLIMIT_STACK].rlim_max == mine.rlim_max);
    /* another user's process (or one that took the pid since) is not the submitter */
    assert_int_equal(carma_rlimits_of_pid(kid, geteuid() + 1, rl, &err), -ESRCH);
    kill(kid, SIGKILL);
    waitpid(kid, NULL, 0);
    /* gone */
    assert_true(carma_rlimits_of_pid(kid, geteuid(), rl, &err) < 0);
    assert_true(err.msg[0]);
    assert_int_equal(carma_rlimits_of_pid(0, geteuid(), rl, &err), -ESRCH);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_parse_strict),
        cmocka_unit_test(test_of_pid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
