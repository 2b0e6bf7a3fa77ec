/* carma_asuser: path checks with a user's rights, in the calling thread only. Needs
 * root (it changes file-system ids); skipped otherwise. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/asuser.h"

/* The fsuid of thread tid, from the 4th field of "Uid:" in its status. */
static long fsuid_of(pid_t tid)
{
    char p[64], line[256];
    snprintf(p, sizeof p, "/proc/self/task/%d/status", (int)tid);
    FILE *f = fopen(p, "r");
    long a = -1, b, c, fs = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Uid: %ld %ld %ld %ld", &a, &b, &c, &fs) == 4)
            break;
    if (f)
        fclose(f);
    return fs;
}

struct other {
    pthread_mutex_t m;
    pthread_cond_t cv;
    pid_t tid;
    int done;
};

static void *other_thread(void *arg)
{
    struct other *o = arg;
    pthread_mutex_lock(&o->m);
    o->tid = (pid_t)syscall(SYS_gettid);
    pthread_cond_broadcast(&o->cv);
    while (!o->done)
        pthread_cond_wait(&o->cv, &o->m);
    pthread_mutex_unlock(&o->m);
    return NULL;
}

static void test_as_nobody(void **state)
{
    (void)state;
    struct passwd *pw = getpwnam("nobody");
    if (geteuid() != 0 || !pw) {
        skip();
        return;
    }
    char dir[] = "/tmp/carma-asuser-XXXXXX";
    assert_non_null(mkdtemp(dir));
    assert_int_equal(chmod(dir, 0700), 0);
    char tool[64];
    snprintf(tool, sizeof tool, "%s/tool.sh", dir);
    int fd = open(tool, O_WRONLY | O_CREAT, 0755);
    assert_true(fd >= 0);
    close(fd);

    struct other o = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, other_thread, &o), 0);
    pthread_mutex_lock(&o.m);
    while (!o.tid)
        pthread_cond_wait(&o.cv, &o.m);
    pthread_mutex_unlock(&o.m);

    struct stat st;
    struct carma_asuser a;
    struct carma_err err = {{0}};
    assert_int_equal(carma_asuser_enter(&a, pw->pw_uid, pw->pw_gid, "nobody", &err), 0);
    /* nobody cannot reach into root's 0700 folder: the tool reads as missing */
    assert_int_not_equal(stat(tool, &st), 0);
    assert_int_equal(errno, EACCES);
    assert_int_not_equal(faccessat(AT_FDCWD, tool, X_OK, AT_EACCESS), 0);
    assert_int_equal(faccessat(AT_FDCWD, "/bin/sh", X_OK, AT_EACCESS), 0);
    /* only this thread took nobody's rights */
    assert_int_equal(fsuid_of((pid_t)syscall(SYS_gettid)), (long)pw->pw_uid);
    assert_int_equal(fsuid_of(o.tid), 0);
    carma_asuser_leave(&a);
    assert_int_equal(fsuid_of((pid_t)syscall(SYS_gettid)), 0);
    assert_int_equal(stat(tool, &st), 0);
    assert_int_equal(faccessat(AT_FDCWD, tool, X_OK, AT_EACCESS), 0);
    carma_asuser_leave(&a); /* a second leave is a no-op */

    pthread_mutex_lock(&o.m);
    o.done = 1;
    pthread_cond_broadcast(&o.cv);
    pthread_mutex_unlock(&o.m);
    pthread_join(t, NULL);
    unlink(tool);
    rmdir(dir);
}

/* root's CAP_SYS_PTRACE follows /proc/PID/cwd of a process the user may not look at,
 * past a folder the user cannot enter: a user's path check must not (it told users
 * which files exist in another user's private folders, through their processes) */
static void test_no_proc_links_of_others(void **state)
{
    (void)state;
    struct passwd *pw = getpwnam("nobody");
    if (geteuid() != 0 || !pw) {
        skip();
        return;
    }
    char dir[] = "/tmp/carma-asuser-XXXXXX", sub[64], tool[96], via[96];
    assert_non_null(mkdtemp(dir));
    assert_int_equal(chmod(dir, 0700), 0);
    snprintf(sub, sizeof sub, "%s/open", dir); /* open to all, inside root's 0700 */
    assert_int_equal(mkdir(sub, 0755), 0);
    assert_int_equal(chmod(sub, 0755), 0);
    snprintf(tool, sizeof tool, "%s/tool.sh", sub);
    int fd = open(tool, O_WRONLY | O_CREAT, 0755);
    assert_true(fd >= 0);
    close(fd);
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork(); /* root's process whose folder is sub */
    assert_true(pid >= 0);
    if (pid == 0) {
        close(ready[0]);
        if (chdir(sub) == 0 && write(ready[1], "r", 1) == 1)
            pause();
        _exit(1);
    }
    close(ready[1]);
    char b;
    assert_int_equal(read(ready[0], &b, 1), 1);
    close(ready[0]);
    snprintf(via, sizeof via, "/proc/%d/cwd/tool.sh", (int)pid);
    struct stat st;
    assert_int_equal(stat(via, &st), 0); /* root reaches it */

    struct carma_asuser a;
    struct carma_err err = {{0}};
    assert_int_equal(carma_asuser_enter(&a, pw->pw_uid, pw->pw_gid, "nobody", &err), 0);
    int direct = stat(tool, &st), proc = stat(via, &st),
        proc_x = faccessat(AT_FDCWD, via, X_OK, AT_EACCESS);
    carma_asuser_leave(&a);
    /* root's again: its capabilities back */
    int after = stat(via, &st);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    unlink(tool);
    rmdir(sub);
    rmdir(dir);
    assert_int_not_equal(direct, 0);
    assert_int_not_equal(proc, 0);
    assert_int_not_equal(proc_x, 0);
    assert_int_equal(after, 0);
}

static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Root in a user namespace that maps only root and denies setgroups (a rootless
 * container): entering a user's rights fails, and must fail with an error, leaving the
 * thread as it was. It aborted there, so that any user's submission ended carmad. */
static void test_refused_in_a_namespace_without_setgroups(void **state)
{
    (void)state;
    if (geteuid() != 0) {
        skip();
        return;
    }
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (unshare(CLONE_NEWUSER) < 0 || write_file("/proc/self/setgroups", "deny") < 0 ||
            write_file("/proc/self/uid_map", "0 0 1") < 0 ||
            write_file("/proc/self/gid_map", "0 0 1") < 0)
            _exit(77); /* no user namespaces here */
        struct carma_asuser a;
        struct carma_err err = {{0}};
        int rc = carma_asuser_enter(&a, 65534, 65534, "nobody", &err);
        carma_asuser_leave(&a);
        struct stat st;
        _exit(rc == -EPERM && strstr(err.msg, "cannot take on the rights of nobody") &&
                      geteuid() == 0 && stat("/proc/self", &st) == 0
                  ? 0
                  : 1);
    }
    int ws;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    if (WIFEXITED(ws) && WEXITSTATUS(ws) == 77) {
        skip();
        return;
    }
    assert_true(WIFEXITED(ws)); /* not killed by abort() */
    assert_int_equal(WEXITSTATUS(ws), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_as_nobody),
        cmocka_unit_test(test_no_proc_links_of_others),
        cmocka_unit_test(test_refused_in_a_namespace_without_setgroups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
