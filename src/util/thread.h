/* Threads that take no signals. */
#ifndef CARMA_UTIL_THREAD_H
#define CARMA_UTIL_THREAD_H

#include <pthread.h>

/* pthread_create with every signal blocked in the new thread (it inherits the mask set
 * around the call; the caller's own is restored): a process-directed signal goes to a
 * thread that does not block it, so the caller's signals (carmad's signalfd, curses'
 * handlers in carma top) stay the caller's. Returns pthread_create's 0 or error. */
int carma_thread_start(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);

#endif
