#include "daemon/estq.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/thread.h"

struct carmad_estq {
    const struct sim_gpu_kind *const *dev;
    size_t ndev;
    char *hold_path;
    int fd; /* eventfd: written once per finished item */
    pthread_t thread;
    pthread_mutex_t lock; /* everything below */
    pthread_cond_t wake;
    int stop;
    struct carmad_estq_item *todo, **todo_tail; /* pushed, not started */
    struct carmad_estq_item *done, **done_tail; /* finished, not taken */
};

static int stopping(struct carmad_estq *q)
{
    pthread_mutex_lock(&q->lock);
    int s = q->stop;
    pthread_mutex_unlock(&q->lock);
    return s;
}

/* Tests: creates hold_path ".held" (an item has reached the thread), then waits for
 * hold_path to exist; 0 when stopped first. */
static int hold(struct carmad_estq *q)
{
    char held[PATH_MAX];
    if (snprintf(held, sizeof held, "%s.held", q->hold_path) < (int)sizeof held) {
        int fd = open(held, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        if (fd >= 0)
            close(fd);
    }
    while (access(q->hold_path, F_OK) != 0) {
        if (stopping(q))
            return 0;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return 1;
}

static void *run(void *arg)
{
    struct carmad_estq *q = arg;
    for (;;) {
        pthread_mutex_lock(&q->lock);
        while (!q->stop && !q->todo)
            pthread_cond_wait(&q->wake, &q->lock);
        struct carmad_estq_item *it = q->stop ? NULL : q->todo;
        if (it && !(q->todo = it->next))
            q->todo_tail = &q->todo;
        pthread_mutex_unlock(&q->lock);
        if (!it)
            return NULL;
        if (q->hold_path && !hold(q))
            return NULL; /* it stays the caller's, unfinished */
        double t0 = carma_mono_s();
        it->rc = carmad_model_bound(it->rj, q->dev, q->ndev, &it->model, &it->err);
        it->seconds = carma_mono_s() - t0;
        it->next = NULL;
        pthread_mutex_lock(&q->lock);
        *q->done_tail = it;
        q->done_tail = &it->next;
        pthread_mutex_unlock(&q->lock);
        uint64_t one = 1;
        /* cannot fail short of the counter's 2^64 - 2 */
        while (write(q->fd, &one, sizeof one) < 0 && errno == EINTR)
            ;
    }
}

int carmad_estq_start(struct carmad_estq **out, const struct sim_gpu_kind *const *dev, size_t n,
                      const char *hold_path, struct carma_err *err)
{
    *out = NULL;
    struct carmad_estq *q = calloc(1, sizeof *q);
    if (!q || (hold_path && !(q->hold_path = strdup(hold_path)))) {
        free(q);
        return carma_err_set(err, -ENOMEM, "out of memory");
    }
    q->dev = dev;
    q->ndev = n;
    q->todo_tail = &q->todo;
    q->done_tail = &q->done;
    q->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    int e = q->fd < 0 ? errno : 0;
    if (e) {
        free(q->hold_path);
        free(q);
        return carma_err_set(err, -e, "estimate queue: eventfd: %s", strerror(e));
    }
    if ((e = pthread_mutex_init(&q->lock, NULL)) == 0 &&
        (e = pthread_cond_init(&q->wake, NULL)) != 0)
        pthread_mutex_destroy(&q->lock);
    if (!e) {
        /* the thread takes no signals: the loop's (signalfd) stay its own */
        e = carma_thread_start(&q->thread, NULL, run, q);
        if (e) {
            pthread_cond_destroy(&q->wake);
            pthread_mutex_destroy(&q->lock);
        }
    }
    if (e) {
        close(q->fd);
        free(q->hold_path);
        free(q);
        return carma_err_set(err, -e, "estimate queue: no thread: %s", strerror(e));
    }
    *out = q;
    return 0;
}

int carmad_estq_fd(const struct carmad_estq *q)
{
    return q->fd;
}

void carmad_estq_push(struct carmad_estq *q, struct carmad_estq_item *it)
{
    it->next = NULL;
    it->rc = 0;
    it->seconds = 0;
    memset(&it->model, 0, sizeof it->model);
    memset(&it->err, 0, sizeof it->err);
    pthread_mutex_lock(&q->lock);
    *q->todo_tail = it;
    q->todo_tail = &it->next;
    pthread_cond_signal(&q->wake);
    pthread_mutex_unlock(&q->lock);
}

struct carmad_estq_item *carmad_estq_take(struct carmad_estq *q)
{
    pthread_mutex_lock(&q->lock);
    struct carmad_estq_item *it = q->done;
    if (it && !(q->done = it->next))
        q->done_tail = &q->done;
    pthread_mutex_unlock(&q->lock);
    if (it)
        it->next = NULL;
    return it;
}

void carmad_estq_stop(struct carmad_estq *q)
{
    if (!q)
        return;
    pthread_mutex_lock(&q->lock);
    q->stop = 1;
    pthread_cond_signal(&q->wake);
    pthread_mutex_unlock(&q->lock);
    pthread_join(q->thread, NULL);
    pthread_cond_destroy(&q->wake);
    pthread_mutex_destroy(&q->lock);
    close(q->fd);
    free(q->hold_path);
    free(q);
}
