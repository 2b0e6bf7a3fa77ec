/* carmad: the carma daemon. Parses options, then hands over to daemon.c. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "daemon/http.h"
#include "daemon/notify.h"
#include "util/fd.h"
#include "util/version.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: carmad [OPTIONS]\n\n"
               "  --state DIR        job store and logs (default /var/lib/carma as root,\n"
               "                     else $XDG_STATE_HOME/carma)\n"
               "  --socket PATH      UNIX socket (default /run/carma/carmad.sock as root,\n"
               "                     else $XDG_RUNTIME_DIR/carma/carmad.sock, or\n"
               "                     /tmp/carma-UID/carmad.sock without XDG_RUNTIME_DIR)\n"
               "  --gpus nvml|sim:SPEC  GPU backend (default: NVML when libnvidia-ml.so.1\n"
               "                     loads, else sim:4xa100-40gb with a warning)\n"
               "  --policy P         placement policy (default auto)\n"
               "  --config FILE      INI configuration\n"
               "  --max-attempts N   attempts per job when it gives none (1 to 100, default 3)\n"
               "  --http ADDR:PORT   serve /metrics, /v1/gpus, /v1/jobs (PORT alone: 127.0.0.1;\n"
               "                     default: config [daemon] http, else off)\n"
               "  --nvml-lib PATH    the libnvidia-ml.so.1 to load (default: the system's)\n"
               "  --shepherd PATH    the carma-shepherd program each job runs under (default:\n"
               "                     the one beside carmad)\n"
               "  --foreground       stay in the foreground, log to stderr\n"
               "  --version          print carmad's version and exit\n");
}

/* Where carmad's own messages go: syslog when detached, else stderr, which under systemd
 * may be the journal's stream (carmad_journal_stream): its lines then carry their
 * priority as a "<N>" prefix, which the journal reads. */
enum { TO_SYSLOG, TO_STDERR, TO_JOURNAL };

/* A message at priority prio where carmad's messages go. */
static void log_start(int where, int prio, const char *msg)
{
    if (where == TO_JOURNAL)
        carmad_journal_write(stderr, prio,
                             prio == LOG_WARNING ? "carmad: warning: " : "carmad: ", msg);
    else if (where == TO_STDERR)
        fprintf(stderr, "carmad: %s%s\n", prio == LOG_WARNING ? "warning: " : "", msg);
    else
        syslog(prio, "%s", msg);
}

static void log_start_warning(int where, const char *msg)
{
    log_start(where, LOG_WARNING, msg);
}

/* The service manager's watchdog: WATCHDOG=1 from the monitor's tick, which runs in the
 * event loop, at most every quarter of the interval asked for, so a loop that stops
 * turning (a call that never returns) stops the pings and the manager restarts carmad;
 * jobs keep running and the next carmad re-adopts them. */
struct watchdog {
    const struct carmad_notify *n;
    uint64_t us; /* 0: none asked */
    struct timespec last;
    int where, failed;
};

static void watchdog_tick(void *ctx, double now)
{
    (void)now; /* the wall clock; the pace is kept on the monotonic one */
    struct watchdog *w = ctx;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    double since = (double)(t.tv_sec - w->last.tv_sec) + (t.tv_nsec - w->last.tv_nsec) / 1e9;
    if (since * 4e6 < (double)w->us)
        return;
    struct carma_err err = {{0}};
    if (carmad_notify_send(w->n, "WATCHDOG=1", &err)) {
        if (!w->failed)
            log_start_warning(w->where, err.msg);
        w->failed = 1;
        return;
    }
    w->failed = 0;
    w->last = t;
}

/* A detached carmad tells the command that started it how its start went: one byte of
 * exit status, the message, a NUL. The starter exits with that status, printing the
 * message, so a bad port or a busy state folder is seen on the terminal. */
static void report_start(int fd, int status, const char *msg)
{
    if (fd < 0)
        return;
    char buf[CARMA_ERR_MAX + 2];
    int n = snprintf(buf, sizeof buf, "%c%s", '0' + status, msg);
    if (n < 0)
        return;
    size_t len = (size_t)n < sizeof buf - 1 ? (size_t)n : sizeof buf - 2;
    buf[len++] = '\0';
    for (size_t off = 0; off < len;) {
        ssize_t w = write(fd, buf + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        off += (size_t)w;
    }
}

static int await_start(int fd)
{
    char buf[CARMA_ERR_MAX + 2];
    size_t n = 0;
    while (n < sizeof buf && (n == 0 || !memchr(buf, '\0', n))) {
        ssize_t r = read(fd, buf + n, sizeof buf - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (n == 0 || !memchr(buf, '\0', n)) {
        fprintf(stderr, "carmad: the daemon ended while starting (see the system log)\n");
        return 1;
    }
    if (buf[0] == '0')
        return 0;
    fprintf(stderr, "carmad: %s\n", buf + 1);
    return buf[0] >= '1' && buf[0] <= '9' ? buf[0] - '0' : 1;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"state", required_argument, NULL, 's'},
        {"socket", required_argument, NULL, 'S'},
        {"gpus", required_argument, NULL, 'g'},
        {"policy", required_argument, NULL, 'p'},
        {"config", required_argument, NULL, 'c'},
        {"foreground", no_argument, NULL, 'f'},
        {"max-attempts", required_argument, NULL, 'm'},
        {"nvml-lib", required_argument, NULL, 'N'},
        {"http", required_argument, NULL, 'H'},
        {"shepherd", required_argument, NULL, 'E'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    /* Standard descriptors closed by whoever started carmad: what it opens next (the lock
     * file, the start pipe) must not land on them, to be written by its log or replaced by
     * the detached start's dup2s. */
    if (carma_fd_fill_std() < 0)
        return 1;
    struct carmad_opts o = {.version = carma_version};
    int c;
    while ((c = getopt_long(argc, argv, "fh", opts, NULL)) != -1) {
        switch (c) {
        case 's': o.state_dir = optarg; break;
        case 'S': o.socket_path = optarg; break;
        case 'g': o.gpus = optarg; break;
        case 'p': o.policy = optarg; break;
        case 'c': o.config_path = optarg; break;
        case 'f': o.foreground = 1; break;
        case 'N': o.nvml_lib = optarg; break;
        case 'H': o.http = optarg; break;
        case 'E':
            o.shepherd = optarg;
            break;
        case 'm': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*end || v < 1 || v > 100) {
                fprintf(stderr, "carmad: --max-attempts %s: an integer in [1, 100] expected\n",
                        optarg);
                return 2;
            }
            o.max_attempts = (unsigned)v;
            break;
        }
        case 'h': usage(stdout); return 0;
        case 'V':
            printf("carmad %s\n", carma_version);
            return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "carmad: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (o.http && strcmp(o.http, "off") != 0) {
        struct sockaddr_storage sa;
        socklen_t salen;
        struct carma_err e = {{0}};
        if (carma_http_parse_addr(o.http, &sa, &salen, &e)) {
            fprintf(stderr, "carmad: --%s\n", e.msg);
            return 2;
        }
    }
    /* read once and taken out of the environment: carmad's helpers and jobs are not the
     * service */
    struct carmad_notify notify;
    struct carma_err nerr = {{0}};
    o.journal = carmad_journal_stream(getenv("JOURNAL_STREAM"), 2);
    unsetenv("JOURNAL_STREAM");
    int where = !o.foreground ? TO_SYSLOG : o.journal ? TO_JOURNAL : TO_STDERR;
    int early = o.journal ? TO_JOURNAL : TO_STDERR;
    struct watchdog wd = {.n = &notify, .where = where};
    /* (said on stderr: still the terminal, detached or not) */
    if (carmad_notify_parse(&notify, getenv("NOTIFY_SOCKET"), &nerr))
        log_start_warning(early, nerr.msg);
    else if (notify.len && !o.foreground)
        /* the manager waits for READY=1 from the process it started, which exits here */
        log_start_warning(early, "NOTIFY_SOCKET is set but carmad detaches: a service manager "
                                 "that waits for its READY=1 sees the process it started exit; "
                                 "under systemd's Type=notify run carmad --foreground");
    if (carmad_notify_watchdog(getenv("WATCHDOG_USEC"), getenv("WATCHDOG_PID"), getpid(), &wd.us,
                               &nerr))
        log_start_warning(early, nerr.msg);
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
    int ready = -1; /* the detached daemon's end of the pipe its starter waits on */
    if (!o.foreground) {
        int pfd[2];
        if (pipe2(pfd, O_CLOEXEC) < 0) {
            perror("carmad: pipe");
            return 1;
        }
        openlog("carmad", LOG_PID, LOG_DAEMON);
        pid_t p = fork();
        if (p < 0) {
            perror("carmad: fork");
            return 1;
        }
        if (p > 0) {
            close(pfd[1]);
            return await_start(pfd[0]);
        }
        close(pfd[0]);
        ready = pfd[1];
        setsid();
        if (fork() > 0)
            _exit(0);
        int nul = open("/dev/null", O_RDWR);
        if (nul >= 0) {
            dup2(nul, 0);
            dup2(nul, 1);
            dup2(nul, 2);
            if (nul > 2)
                close(nul);
        }
    }
    struct carmad *d;
    struct carma_err err = {{0}};
    int rc = carmad_open(&d, &o, &err);
    if (rc) {
        if (o.foreground) {
            log_start(where, LOG_ERR, err.msg);
        } else {
            syslog(LOG_ERR, "%s", err.msg);
            report_start(ready, rc == -EINVAL ? 2 : 1, err.msg);
        }
        return rc == -EINVAL ? 2 : 1;
    }
    if (ready >= 0) {
        report_start(ready, 0, "");
        close(ready);
    }
    if (carmad_notify_send(&notify, "READY=1", &nerr))
        log_start_warning(where, nerr.msg);
    if (wd.us && notify.len) {
        double iv = carmad_monitor_interval(d);
        if (iv * 2e6 >= (double)wd.us) {
            char msg[160];
            snprintf(msg, sizeof msg,
                     "WATCHDOG_USEC=%llu: carmad pings once a monitor interval (%g s), "
                     "which is not within half of it: raise WatchdogSec=",
                     (unsigned long long)wd.us, iv);
            log_start_warning(where, msg);
        }
        clock_gettime(CLOCK_MONOTONIC, &wd.last);
        carmad_set_hooks(d, &(struct carmad_hooks){.ctx = &wd, .on_tick = watchdog_tick});
    }
    rc = carmad_run(d, &err);
    if (carmad_notify_send(&notify, "STOPPING=1", &nerr))
        log_start_warning(where, nerr.msg);
    if (rc) {
        log_start(where, LOG_ERR, err.msg);
    }
    carmad_close(d);
    return rc ? 1 : 0;
}
