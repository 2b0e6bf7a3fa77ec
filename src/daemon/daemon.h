/* carmad: one process, one epoll loop (DESIGN.md §6). The loop waits on the
 * listening socket, a signalfd, a timerfd for monitor ticks and a pidfd per
 * shepherd; nothing polls.
 *
 * One loop iteration is one store transaction: requests, job exits and the
 * scheduler's placements of the iteration are written, committed, and only then
 * are clients answered and shepherds started. When the commit fails (a full disk)
 * the iteration's submissions are refused and its launches undone; running jobs
 * are not touched. */
#ifndef CARMA_DAEMON_DAEMON_H
#define CARMA_DAEMON_DAEMON_H

#include "daemon/config.h"
#include "util/err.h"

struct carmad_opts {
    const char *state_dir;   /* NULL: /var/lib/carma as root, else $XDG_STATE_HOME/carma */
    const char *socket_path; /* NULL: carma_proto_default_socket() */
    const char *gpus;        /* NULL: config, else nvml when its library loads, else sim */
    const char *policy;      /* NULL: config ("auto") */
    const char *config_path; /* NULL: none */
    const char *nvml_lib;    /* NULL: libnvidia-ml.so.1 ($CARMA_NVML_LIB overrides) */
    const char *http;        /* NULL: config [daemon] http; "" or "off": none */
    int foreground;
    int journal;             /* foreground, stderr the journal's stream (JOURNAL_STREAM):
                                each line "<N>" and its message, no time (the journal's) */
    unsigned max_attempts;   /* 0: config */
    const char *shepherd;    /* the carma-shepherd program (--shepherd); NULL: the one
                                beside the running executable */
    const char *version;     /* carmad's version (util/version.h), in its start log,
                                /metrics and the ping and gpus answers; NULL: none. Must
                                outlive carmad. */
};

struct carmad;

/* Opens the store, the GPU backend and the socket, and reconciles the store with
 * the processes alive (re-adopting running shepherds, recording exits that
 * happened while carmad was down). Returns 0 or a negative errno with err set. */
int carmad_open(struct carmad **out, const struct carmad_opts *o, struct carma_err *err);

/* Serves until SIGTERM/SIGINT; running jobs keep running. Returns 0 or a
 * negative errno (err set) on a fatal error. */
int carmad_run(struct carmad *d, struct carma_err *err);

/* Releases everything (the socket file is removed; jobs are left running). */
void carmad_close(struct carmad *d);

/* Monitoring hooks for later work (issue 5): called after every monitor tick and
 * at every attempt's end; NULL when unset. */
struct carmad_hooks {
    void *ctx;
    void (*on_tick)(void *ctx, double now);
    void (*on_attempt_end)(void *ctx, unsigned long long job, unsigned attempt,
                           const char *outcome, double start_s, double end_s);
};
void carmad_set_hooks(struct carmad *d, const struct carmad_hooks *h);

/* Seconds between monitor ticks (on_tick's pace), from the configuration. */
double carmad_monitor_interval(const struct carmad *d);

#endif
