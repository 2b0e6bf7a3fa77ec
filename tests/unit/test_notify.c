/* The service manager's readiness protocol (daemon/notify.h): NOTIFY_SOCKET's forms, and
 * one datagram each to a listening path socket and an abstract one, and the watchdog's
 * variables. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/notify.h"

static void test_parse(void **state)
{
    (void)state;
    struct carmad_notify n;
    struct carma_err err = {{0}};
    assert_int_equal(carmad_notify_parse(&n, NULL, &err), 0);
    assert_int_equal(n.len, 0);
    assert_int_equal(carmad_notify_parse(&n, "", &err), 0);
    assert_int_equal(n.len, 0);
    assert_int_equal(carmad_notify_parse(&n, "/run/systemd/notify", &err), 0);
    assert_string_equal(n.sa.sun_path, "/run/systemd/notify");
    assert_int_equal(n.len, offsetof(struct sockaddr_un, sun_path) + 20);
    /* abstract: a leading NUL, no terminator counted */
    assert_int_equal(carmad_notify_parse(&n, "@carma/x", &err), 0);
    assert_int_equal(n.sa.sun_path[0], '\0');
    assert_memory_equal(n.sa.sun_path + 1, "carma/x", 7);
    assert_int_equal(n.len, offsetof(struct sockaddr_un, sun_path) + 8);

    const char *bad[] = {"run/notify", "vsock:2:1234", "@", "/", "x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err.msg[0] = '\0';
        assert_int_equal(carmad_notify_parse(&n, bad[i], &err), -EINVAL);
        assert_int_equal(n.len, 0);
        assert_non_null(strstr(err.msg, "NOTIFY_SOCKET="));
    }
    char longp[200];
    memset(longp, 'a', sizeof longp - 1);
    longp[0] = '/';
    longp[sizeof longp - 1] = '\0';
    assert_int_equal(carmad_notify_parse(&n, longp, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "too long"));
    /* the longest path that fits, with its terminator */
    longp[sizeof n.sa.sun_path - 1] = '\0';
    assert_int_equal(carmad_notify_parse(&n, longp, &err), 0);
    /* nothing to tell: sending does nothing */
    assert_int_equal(carmad_notify_parse(&n, NULL, &err), 0);
    assert_int_equal(carmad_notify_send(&n, "READY=1", &err), 0);
}

static void test_watchdog(void **state)
{
    (void)state;
    uint64_t us = 7;
    struct carma_err err = {{0}};
    assert_int_equal(carmad_notify_watchdog(NULL, NULL, 100, &us, &err), 0);
    assert_int_equal(us, 0);
    assert_int_equal(carmad_notify_watchdog("", "", 100, &us, &err), 0);
    assert_int_equal(us, 0);
    assert_int_equal(carmad_notify_watchdog("120000000", NULL, 100, &us, &err), 0);
    assert_int_equal(us, 120000000);
    assert_int_equal(carmad_notify_watchdog("120000000", "100", 100, &us, &err), 0);
    assert_int_equal(us, 120000000);
    /* asked of another process: not this one's to answer */
    assert_int_equal(carmad_notify_watchdog("120000000", "99", 100, &us, &err), 0);
    assert_int_equal(us, 0);
    assert_int_equal(carmad_notify_watchdog("4611686018427387904", NULL, 1, &us, &err), 0);
    assert_int_equal(us, (uint64_t)1 << 62);
    const char *bad_us[] = {
        "0", "-1", "1s", " 5", "5 ", "4611686018427387905", "99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad_us / sizeof bad_us[0]; i++) {
        us = 7;
        err.msg[0] = '\0';
        assert_int_equal(carmad_notify_watchdog(bad_us[i], NULL, 100, &us, &err), -EINVAL);
        assert_int_equal(us, 0);
        assert_non_null(strstr(err.msg, "WATCHDOG_USEC="));
    }
    const char *bad_pid[] = {"0", "x", "4194305", "-100"};
    for (size_t i = 0; i < sizeof bad_pid / sizeof bad_pid[0]; i++) {
        us = 7;
        err.msg[0] = '\0';
        assert_int_equal(carmad_notify_watchdog("1000", bad_pid[i], 100, &us, &err), -EINVAL);
        assert_int_equal(us, 0);
        assert_non_null(strstr(err.msg, "WATCHDOG_PID="));
    }
}

/* A datagram socket bound to name (a path, or "@..." abstract); its fd. */
static int listener(const char *name)
{
    struct carmad_notify n;
    struct carma_err err = {{0}};
    assert_int_equal(carmad_notify_parse(&n, name, &err), 0);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&n.sa, n.len), 0);
    return fd;
}

static void expect(int fd, const char *msg)
{
    char buf[64];
    ssize_t r = recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT);
    assert_int_equal(r, (ssize_t)strlen(msg));
    buf[r] = '\0';
    assert_string_equal(buf, msg);
}

static void test_send(void **state)
{
    (void)state;
    char dir[] = "/tmp/carma-notify-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof path, "%s/notify", dir);
    int fd = listener(path);
    struct carmad_notify n;
    struct carma_err err = {{0}};
    assert_int_equal(carmad_notify_parse(&n, path, &err), 0);
    assert_int_equal(carmad_notify_send(&n, "READY=1", &err), 0);
    assert_int_equal(carmad_notify_send(&n, "STOPPING=1", &err), 0);
    expect(fd, "READY=1");
    expect(fd, "STOPPING=1");
    close(fd);
    unlink(path);
    /* no one listening any more: an error that says what was not told */
    assert_true(carmad_notify_send(&n, "READY=1", &err) < 0);
    assert_non_null(strstr(err.msg, "READY=1"));
    rmdir(dir);

    char abs[64];
    snprintf(abs, sizeof abs, "@carma-test-notify-%ld", (long)getpid());
    fd = listener(abs);
    assert_int_equal(carmad_notify_parse(&n, abs, &err), 0);
    assert_int_equal(carmad_notify_send(&n, "READY=1", &err), 0);
    expect(fd, "READY=1");
    close(fd);
}

/* A manager that stops reading: a send fails at once (EAGAIN) once its socket is full,
 * and never blocks the event loop that pings the watchdog (alarm: a send that waits ends
 * the test). */
static void test_send_full(void **state)
{
    (void)state;
    char abs[64];
    snprintf(abs, sizeof abs, "@carma-test-notify-full-%ld", (long)getpid());
    int fd = listener(abs);
    struct carmad_notify n;
    struct carma_err err = {{0}};
    assert_int_equal(carmad_notify_parse(&n, abs, &err), 0);
    alarm(10);
    int rc = 0;
    for (int k = 0; k < 100000 && rc == 0; k++)
        rc = carmad_notify_send(&n, "WATCHDOG=1", &err);
    alarm(0);
    assert_int_equal(rc, -EAGAIN);
    assert_non_null(strstr(err.msg, "WATCHDOG=1"));
    expect(fd, "WATCHDOG=1"); /* what was queued stays */
    close(fd);
}

/* JOURNAL_STREAM: "DEV:INO" of the very stream, nothing else */
static void test_journal_stream(void **state)
{
    (void)state;
    FILE *f = tmpfile();
    assert_non_null(f);
    int fd = fileno(f);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    char v[64];
    snprintf(v, sizeof v, "%llu:%llu", (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino);
    assert_int_equal(carmad_journal_stream(v, fd), 1);
    snprintf(v, sizeof v, "%llu:%llu", (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino + 1);
    assert_int_equal(carmad_journal_stream(v, fd), 0); /* another file: redirected since */
    snprintf(v, sizeof v, "%llu:%llux", (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino);
    assert_int_equal(carmad_journal_stream(v, fd), 0);
    snprintf(v, sizeof v, " %llu:%llu", (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino);
    assert_int_equal(carmad_journal_stream(v, fd), 0);
    assert_int_equal(carmad_journal_stream(NULL, fd), 0);
    assert_int_equal(carmad_journal_stream("", fd), 0);
    assert_int_equal(carmad_journal_stream("1:2:3", fd), 0);
    fclose(f);
}

/* The journal's stream: every line of a message carries its priority, the prefix after
 * it; a newline in a message (a user's text quoted in it) cannot pass a line off as
 * another priority's, nor leave it at the journal's default. */
static void test_journal_write(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    carmad_journal_write(f, 4, "carmad: warning: ", "one line");
    carmad_journal_write(f, 3, "", "first\nsecond\n<0>forged\n");
    carmad_journal_write(f, 6 | (3 << 3), "", "daemon facility\n\nafter an empty line");
    carmad_journal_write(f, 5, "p: ", "");
    assert_int_equal(fclose(f), 0);
    assert_string_equal(buf, "<4>carmad: warning: one line\n"
                             "<3>first\n<3>second\n<3><0>forged\n"
                             "<6>daemon facility\n<6>\n<6>after an empty line\n"
                             "<5>p: \n");
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),          cmocka_unit_test(test_send),
        cmocka_unit_test(test_send_full),      cmocka_unit_test(test_watchdog),
        cmocka_unit_test(test_journal_stream), cmocka_unit_test(test_journal_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
