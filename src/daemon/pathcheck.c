#include "daemon/pathcheck.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon/asuser.h"
#include "util/clock.h"
#include "util/thread.h"

struct carmad_pathcheck_item {
    struct carmad_pathcheck *pc;
    uid_t uid;
    gid_t gid;
    int as_user;
    char *user, *cwd, *argv0, *path_env; /* path_env NULL: the default */
    void *owner;
    int rc; /* out: 0 with verdict, or a negative errno with err */
    enum carmad_path_verdict verdict;
    struct carma_err err;
    int done, abandoned;                   /* pc->lock */
    struct carmad_pathcheck_item *prev, *next; /* pc->done or pc->stuck lists */
};

struct carmad_pathcheck {
    char *hold_path;
    int fd;               /* eventfd: written once per finished check */
    pthread_mutex_t lock; /* everything below */
    unsigned threads;     /* checks whose threads have not ended */
    int stopping;         /* freed by the last thread */
    struct carmad_pathcheck_item *done, *done_tail; /* finished, not taken */
    struct carmad_pathcheck_item *stuck;            /* abandoned, running */
    unsigned nstuck;
};

static void item_free(struct carmad_pathcheck_item *it)
{
    if (!it)
        return;
    free(it->user);
    free(it->cwd);
    free(it->argv0);
    free(it->path_env);
    free(it);
}

static void pc_free(struct carmad_pathcheck *pc)
{
    close(pc->fd);
    pthread_mutex_destroy(&pc->lock);
    free(pc->hold_path);
    free(pc);
}

/* Tests: creates hold_path ".held", waits for hold_path to exist, then for the number of
 * ms it holds (1 to 60000; anything else: none). */
static void hold(const char *hold_path)
{
    char held[PATH_MAX];
    if (snprintf(held, sizeof held, "%s.held", hold_path) < (int)sizeof held) {
        int fd = open(held, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        if (fd >= 0)
            close(fd);
    }
    while (access(hold_path, F_OK) != 0) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    char buf[16] = {0};
    int fd = open(hold_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    char *end;
    long ms = n > 0 ? strtol(buf, &end, 10) : 0;
    if (n > 0 && end != buf && (*end == '\0' || *end == '\n') && ms >= 1 && ms <= 60000) {
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000 * 1000};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
    }
}

/* Whether the calling thread's file-system ids may execute path (AT_EACCESS: the kernel
 * checks the fsuid, which carma_asuser sets; plain access() would ask for the real uid,
 * root's). */
static int may_exec(const char *path)
{
    return faccessat(AT_FDCWD, path, X_OK, AT_EACCESS) == 0;
}

/* The most time a command may take to be looked up along its PATH. One lookup through a
 * user's symbolic links may take milliseconds (40 links, each 4 KiB of "./"), and a PATH of
 * 32 KiB holds 16,000 entries: a minute of a thread, for one request, whose answer the
 * client waits for. */
#define CMD_LOOKUP_BUDGET_S 0.01

/* Whether argv0 can be executed, looked up on PATH (path_env) relative to cwd: 1 yes, 0
 * no, -1 not known: the entries of PATH looked at took CMD_LOOKUP_BUDGET_S, and the rest
 * are left to the job's exec. */
static int command_exists(const char *argv0, const char *cwd, const char *path_env)
{
    char full[PATH_MAX];
    if (strchr(argv0, '/')) {
        if (argv0[0] == '/')
            snprintf(full, sizeof full, "%s", argv0);
        else
            snprintf(full, sizeof full, "%s/%s", cwd, argv0);
        struct stat st; /* a folder is "executable" too, and exec would fail with 126 */
        return stat(full, &st) == 0 && S_ISREG(st.st_mode) && may_exec(full);
    }
    const char *p = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
    double t0 = carma_mono_s();
    while (*p) {
        if (carma_mono_s() - t0 >= CMD_LOOKUP_BUDGET_S)
            return -1;
        const char *e = strchr(p, ':');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 0)
            snprintf(full, sizeof full, "%s/%s", cwd, argv0);
        else if (p[0] == '/')
            snprintf(full, sizeof full, "%.*s/%s", (int)n, p, argv0);
        else
            snprintf(full, sizeof full, "%s/%.*s/%s", cwd, (int)n, p, argv0);
        struct stat st;
        if (stat(full, &st) == 0 && S_ISREG(st.st_mode) && may_exec(full))
            return 1;
        if (!e)
            break;
        p = e + 1;
    }
    return 0;
}

/* The check itself, with the user's rights: a root carmad checking as root would tell a
 * user which files exist in folders they cannot read (a path they cannot reach is
 * answered as a missing one). */
static void check(struct carmad_pathcheck_item *it)
{
    struct carma_asuser as = {0};
    if (it->as_user && (it->rc = carma_asuser_enter(&as, it->uid, it->gid, it->user, &it->err)))
        return;
    struct stat st;
    int cwd_ok = stat(it->cwd, &st) == 0 && S_ISDIR(st.st_mode) && may_exec(it->cwd);
    /* (a lookup that ran out of time is taken as found: a missing command then fails at
     * its exec, exit 127, as it would have after any later change of the folders) */
    int cmd_ok = cwd_ok && command_exists(it->argv0, it->cwd, it->path_env) != 0;
    carma_asuser_leave(&as);
    it->verdict = !cwd_ok ? CARMAD_PATH_NO_CWD : !cmd_ok ? CARMAD_PATH_NO_COMMAND : CARMAD_PATH_OK;
}

static void unlink_from(struct carmad_pathcheck_item **head, struct carmad_pathcheck_item *it)
{
    if (it->prev)
        it->prev->next = it->next;
    else
        *head = it->next;
    if (it->next)
        it->next->prev = it->prev;
    it->prev = it->next = NULL;
}

static void *run(void *arg)
{
    struct carmad_pathcheck_item *it = arg;
    struct carmad_pathcheck *pc = it->pc;
    if (pc->hold_path)
        hold(pc->hold_path);
    check(it);
    pthread_mutex_lock(&pc->lock);
    it->done = 1;
    int wake = !pc->stopping;
    if (it->abandoned) { /* its user's place is free: the caller may start another */
        unlink_from(&pc->stuck, it);
        pc->nstuck--;
        item_free(it);
    } else if (pc->stopping) { /* no one will take it */
        item_free(it);
    } else {
        it->prev = pc->done_tail;
        it->next = NULL;
        if (pc->done_tail)
            pc->done_tail->next = it;
        else
            pc->done = it;
        pc->done_tail = it;
    }
    if (wake) {
        /* Written under the lock, while this thread still counts: once it no longer
         * does, a carmad_pathcheck_stop finding no thread left frees pc and closes the
         * fd (whose number the next descriptor opened then takes). Cannot fail short of
         * the counter's 2^64 - 2. */
        uint64_t one = 1;
        while (write(pc->fd, &one, sizeof one) < 0 && errno == EINTR)
            ;
    }
    int last = --pc->threads == 0 && pc->stopping;
    pthread_mutex_unlock(&pc->lock);
    if (last)
        pc_free(pc);
    return NULL;
}

int carmad_pathcheck_init(struct carmad_pathcheck **out, const char *hold_path,
                          struct carma_err *err)
{
    *out = NULL;
    struct carmad_pathcheck *pc = calloc(1, sizeof *pc);
    if (!pc || (hold_path && !(pc->hold_path = strdup(hold_path)))) {
        free(pc);
        return carma_err_set(err, -ENOMEM, "out of memory");
    }
    pc->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    int e = pc->fd < 0 ? errno : pthread_mutex_init(&pc->lock, NULL);
    if (e) {
        if (pc->fd >= 0)
            close(pc->fd);
        free(pc->hold_path);
        free(pc);
        return carma_err_set(err, -e, "path checks: %s", strerror(e));
    }
    *out = pc;
    return 0;
}

int carmad_pathcheck_fd(const struct carmad_pathcheck *pc)
{
    return pc->fd;
}

int carmad_pathcheck_start(struct carmad_pathcheck *pc, const struct carmad_pathcheck_req *req,
                           void *owner, struct carmad_pathcheck_item **out,
                           struct carma_err *err)
{
    *out = NULL;
    struct carmad_pathcheck_item *it = calloc(1, sizeof *it);
    if (it) {
        it->pc = pc;
        it->uid = req->uid;
        it->gid = req->gid;
        it->as_user = req->as_user;
        it->owner = owner;
        it->user = strdup(req->user);
        it->cwd = strdup(req->cwd);
        it->argv0 = strdup(req->argv0);
        it->path_env = req->path_env ? strdup(req->path_env) : NULL;
    }
    if (!it || !it->user || !it->cwd || !it->argv0 || (req->path_env && !it->path_env)) {
        item_free(it);
        return carma_err_set(err, -ENOMEM, "out of memory");
    }
    pthread_attr_t attr;
    int e = pthread_attr_init(&attr);
    if (!e) {
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 256 << 10); /* two PATH_MAX buffers and stat */
        pthread_mutex_lock(&pc->lock);
        pc->threads++;
        pthread_mutex_unlock(&pc->lock);
        /* the thread takes no signals: the loop's (signalfd) stay its own */
        pthread_t t;
        e = carma_thread_start(&t, &attr, run, it);
        pthread_attr_destroy(&attr);
        if (e) {
            pthread_mutex_lock(&pc->lock);
            pc->threads--;
            pthread_mutex_unlock(&pc->lock);
        }
    }
    if (e) {
        item_free(it);
        return carma_err_set(err, -e, "path check: no thread: %s", strerror(e));
    }
    *out = it;
    return 0;
}

struct carmad_pathcheck_item *carmad_pathcheck_take(struct carmad_pathcheck *pc)
{
    pthread_mutex_lock(&pc->lock);
    struct carmad_pathcheck_item *it = pc->done;
    if (it) {
        if (pc->done_tail == it)
            pc->done_tail = NULL;
        unlink_from(&pc->done, it);
    }
    pthread_mutex_unlock(&pc->lock);
    return it;
}

void *carmad_pathcheck_owner(const struct carmad_pathcheck_item *it)
{
    return it->owner;
}

int carmad_pathcheck_result(const struct carmad_pathcheck_item *it, enum carmad_path_verdict *v,
                            struct carma_err *err)
{
    if (it->rc) {
        *err = it->err;
        return it->rc;
    }
    *v = it->verdict;
    return 0;
}

void carmad_pathcheck_free(struct carmad_pathcheck_item *it)
{
    item_free(it);
}

void carmad_pathcheck_abandon(struct carmad_pathcheck *pc, struct carmad_pathcheck_item *it)
{
    pthread_mutex_lock(&pc->lock);
    if (it->done) { /* finished, not taken: in the done list */
        if (pc->done_tail == it)
            pc->done_tail = it->prev;
        unlink_from(&pc->done, it);
        item_free(it);
    } else {
        it->abandoned = 1;
        it->prev = NULL;
        if ((it->next = pc->stuck))
            it->next->prev = it;
        pc->stuck = it;
        pc->nstuck++;
    }
    pthread_mutex_unlock(&pc->lock);
}

unsigned carmad_pathcheck_stuck(struct carmad_pathcheck *pc, uid_t uid, unsigned *of_uid)
{
    pthread_mutex_lock(&pc->lock);
    unsigned n = pc->nstuck, mine = 0;
    for (const struct carmad_pathcheck_item *it = pc->stuck; it; it = it->next)
        mine += it->uid == uid;
    pthread_mutex_unlock(&pc->lock);
    if (of_uid)
        *of_uid = mine;
    return n;
}

void carmad_pathcheck_stop(struct carmad_pathcheck *pc)
{
    if (!pc)
        return;
    pthread_mutex_lock(&pc->lock);
    struct carmad_pathcheck_item *it;
    while ((it = pc->done)) {
        unlink_from(&pc->done, it);
        item_free(it);
    }
    pc->done_tail = NULL;
    int now = pc->threads == 0;
    pc->stopping = 1;
    pthread_mutex_unlock(&pc->lock);
    if (now)
        pc_free(pc);
}
