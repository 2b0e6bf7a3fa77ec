/* carma_thread_start: the new thread blocks every signal (so a process-directed signal
 * goes to the caller: carmad's signalfd, curses' handlers in carma top), and the
 * caller's own mask is what it was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "util/thread.h"

static void *read_mask(void *arg)
{
    pthread_sigmask(SIG_BLOCK, NULL, (sigset_t *)arg);
    return NULL;
}

static void test_thread_blocks_every_signal(void **state)
{
    (void)state;
    sigset_t mine, before, after, theirs;
    sigemptyset(&mine);
    sigaddset(&mine, SIGHUP); /* the caller blocks one signal of its own */
    assert_int_equal(pthread_sigmask(SIG_SETMASK, &mine, &before), 0);
    sigemptyset(&theirs);
    pthread_t t;
    assert_int_equal(carma_thread_start(&t, NULL, read_mask, &theirs), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGWINCH, SIGTSTP, SIGCHLD, SIGPIPE,
                               SIGUSR1, SIGALRM};
    for (size_t k = 0; k < sizeof sigs / sizeof sigs[0]; k++)
        assert_int_equal(sigismember(&theirs, sigs[k]), 1);
    pthread_sigmask(SIG_BLOCK, NULL, &after);
    for (int s = 1; s < 32; s++)
        assert_int_equal(sigismember(&after, s), s == SIGHUP);
    pthread_sigmask(SIG_SETMASK, &before, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_thread_blocks_every_signal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
