/* carma_proc_kill_session: what is left of a job whose shepherd died is killed, and only
 * that: a process of the session without the job's marks in its environment (a
 * stranger's session that got the shepherd's pid again) is left alone.
 * carma_proc_kill_tree: a process of the job that ended between the scan and the signal
 * does not get its pid's new holder killed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon/shepherd.h"

/* A session leader (returned) whose one member runs sleep with env; the member's pid in
 * *member. The leader waits for it. */
static pid_t session_with(char *const env[], pid_t *member)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t lead = fork();
    assert_true(lead >= 0);
    if (lead == 0) {
        setsid();
        pid_t m = fork();
        if (m == 0) {
            char *argv[] = {"sleep", "30", NULL};
            execve("/bin/sleep", argv, env);
            _exit(127);
        }
        if (write(p[1], &m, sizeof m) != (ssize_t)sizeof m)
            _exit(1);
        int st;
        waitpid(m, &st, 0);
        _exit(WIFSIGNALED(st) ? 9 : 0);
    }
    close(p[1]);
    assert_int_equal(read(p[0], member, sizeof *member), (ssize_t)sizeof *member);
    close(p[0]);
    /* until it runs sleep with its environment (60 s at most: a fork and an exec on a
     * loaded host, under ASan) */
    int is_sleep = 0;
    for (int k = 0; k < 6000 && !is_sleep; k++) {
        char path[64], buf[64];
        snprintf(path, sizeof path, "/proc/%d/comm", (int)*member);
        FILE *f = fopen(path, "r");
        is_sleep = f && fgets(buf, sizeof buf, f) && buf[0] == 's' && buf[1] == 'l';
        if (f)
            fclose(f);
        if (!is_sleep) {
            struct timespec ts = {0, 10000000};
            nanosleep(&ts, NULL);
        }
    }
    assert_true(is_sleep);
    return lead;
}

static int leader_status(pid_t lead)
{
    int st;
    assert_int_equal(waitpid(lead, &st, 0), lead);
    return WEXITSTATUS(st);
}

static void test_kill_session_marks(void **state)
{
    (void)state;
    pid_t m;
    char *job_env[] = {"PATH=/bin", "CARMA_JOB_ID=7", "CARMA_JOB_ATTEMPT=2", NULL};
    pid_t lead = session_with(job_env, &m);
    /* another job's marks, or another attempt's: not this one's */
    assert_int_equal(carma_proc_kill_session(lead, getuid(), 0, 8, 2), 0);
    assert_int_equal(carma_proc_kill_session(lead, getuid(), 0, 7, 1), 0);
    assert_int_equal(kill(m, 0), 0);
    assert_int_equal(carma_proc_kill_session(lead, getuid(), 0, 7, 2), 1);
    assert_int_equal(leader_status(lead), 9);

    char *stranger_env[] = {"PATH=/bin", "HOME=/", NULL};
    lead = session_with(stranger_env, &m);
    assert_int_equal(carma_proc_kill_session(lead, getuid(), 0, 7, 2), 0);
    assert_int_equal(kill(m, 0), 0);
    kill(m, SIGKILL);
    assert_int_equal(leader_status(lead), 9);
}

/* A child that waits to be killed. */
static pid_t idle_child(void)
{
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0) {
        for (;;)
            pause();
    }
    return p;
}

struct reuse {
    pid_t gone;   /* the job's process that ends after the scan */
    pid_t holder; /* the stranger that took its pid, 0: none could */
};

/* Between kill_tree's scan and its signals: the job's process ends, and its pid is handed
 * to a new process (ns_last_pid, as root: CRIU's way to choose the next pid; other
 * processes of the host may take it first, so a few tries). */
static void reuse_pid(void *ctx)
{
    struct reuse *r = ctx;
    kill(r->gone, SIGKILL);
    waitpid(r->gone, NULL, 0);
    for (int k = 0; k < 500 && !r->holder; k++) {
        int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
        if (fd < 0)
            return;
        char b[32];
        int n = snprintf(b, sizeof b, "%d", (int)r->gone - 1);
        int ok = write(fd, b, (size_t)n) == n;
        close(fd);
        if (!ok)
            return;
        pid_t p = fork();
        if (p == 0) {
            if (getpid() != r->gone)
                _exit(0);
            for (;;)
                pause();
        }
        if (p == r->gone)
            r->holder = p;
        else if (p > 0)
            waitpid(p, NULL, 0);
    }
}

static void test_kill_tree_pid_reused(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip(); /* choosing the next pid needs root */
    pid_t stays = idle_child();
    struct reuse r = {.gone = idle_child()};
    /* start times count clock ticks (10 ms): the stranger must start in a later one than
     * the process whose pid it takes, as it would after a pid wrap */
    struct timespec tick = {0, 30 * 1000000L};
    nanosleep(&tick, NULL);
    int n = carma_proc_kill_tree(getpid(), SIGTERM, reuse_pid, &r);
    int st;
    /* the job's process still there is signalled */
    assert_int_equal(waitpid(stays, &st, 0), stays);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
    if (!r.holder)
        skip(); /* ns_last_pid not writable here, or the pid never came back */
    /* the stranger holding the ended process's pid is not */
    assert_int_equal(n, 1);
    assert_int_equal(waitpid(r.holder, &st, WNOHANG), 0);
    kill(r.holder, SIGKILL);
    waitpid(r.holder, NULL, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill_session_marks),
        cmocka_unit_test(test_kill_tree_pid_reused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
