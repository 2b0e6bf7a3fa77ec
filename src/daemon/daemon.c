#include "daemon/daemon.h"
#include "daemon/history.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <math.h>

#include <jansson.h>

#include "core/gpu.h"
#include "core/coloc.h"
#include "core/job.h"
#include "core/policy.h"
#include "core/sched.h"
#include "daemon/asuser.h"
#include "daemon/classify.h"
#include "daemon/drained.h"
#include "daemon/estq.h"
#include "daemon/http.h"
#include "daemon/kmsg.h"
#include "daemon/metrics.h"
#include "daemon/monitor.h"
#include "daemon/pathcheck.h"
#include "daemon/notify.h"
#include "estimate/history.h"
#include "daemon/shepherd.h"
#include "daemon/store.h"
#include "gpu/backend.h"
#include "proto/proto.h"
#include "sim/gpukind.h"
#include "util/clock.h"
#include "util/group.h"
#include "util/proc.h"
#include "util/rlimits.h"
#include "util/timearg.h"
#include "util/tree.h"
#include "util/utf8.h"

#define TAG_LISTEN 1ull
#define TAG_SIGNAL 2ull
#define TAG_TIMER 3ull
#define TAG_CONN 4ull
#define TAG_PIDFD 5ull
#define TAG_START 6ull
#define TAG_XID 7ull
#define TAG_KMSG 8ull
#define TAG_ESTQ 9ull
#define TAG_PATHS 10ull
#define TAG(t, i) (((t) << 32) | (uint64_t)(i))

#define MAX_CONNS 4096
#define MAX_ACTIVE_JOBS 1000000u
/* Connections (docs/daemon.md "Limits"). A connection's requests wait while more
 * than CONN_OUT_HIGH bytes of its answers are unsent, so one that never reads holds
 * at most that plus one answer line; at most CONN_BATCH of its requests are handled
 * per loop iteration, so a pipelining client cannot hold the loop; its input buffer
 * grows past CONN_IN_SOFT only to complete one long request. */
#define CONN_OUT_HIGH (256u << 10)
#define CONN_BATCH 16u
/* CONN_BATCH bounds one connection, not a user's 64: once the requests of one uid took
 * UID_SLICE_S of carmad's time in a loop iteration, its other requests wait for the next
 * one (root and carmad's own uid exempt, as from the other per-user bounds). */
#define UID_SLICE_S 0.05
#define CONN_IN_SOFT (64u << 10)
#define CONN_IN_MAX (CARMA_PROTO_MAX_LINE + 8192u)
#define LS_PAGE_BYTES (512u << 10) /* an ls page ends early past this much JSON */
#define HTTP_JOBS_QUEUED 1000u     /* /v1/jobs lists the queued jobs of the lowest ids */
/* /v1/jobs works out why its queued jobs wait anew this often (seconds): on every monitor
 * tick it would cost 1000 jobs' worth of carma_sched_why, up to a second a tick on
 * hundreds of GPUs (bench_why) */
#define HTTP_WHY_EVERY_S 5.0
#define MEM_UNKNOWN UINT64_MAX     /* djob.mem_now_mib: NVML answered NOT_AVAILABLE for all */
/* Submissions whose summary waits for its model bound (daemon/estq.h): at most ESTQ_MAX
 * in the estimate queue itself, ESTQ_PER_UID of one user; a user's others wait their turn
 * outside it (estq_push_queued), at most ESTQ_WAIT_MAX of all users. The two bounds are
 * apart so that one user's many summaries, waiting outside, never take a place in the
 * queue from another user (16 users with 4 each fill it, as before any waited outside).
 * Past either the answer is "busy", which the client asks again. */
#define ESTQ_MAX 64u
#define ESTQ_PER_UID 4u
#define ESTQ_WAIT_MAX 64u
/* Submissions whose paths are being checked (daemon/pathcheck.h), each on a thread: one
 * whose check would start is answered "busy" while PATHS_MAX are being made (those
 * started from the wait below may add to them, PATHS_WAIT_MAX at most), and checks
 * abandoned on file systems that do not answer, whose threads still wait: past
 * PATHS_STUCK_MAX a submission is refused at once. One user's checks, those being made
 * and those abandoned together, are at most PATHS_PER_UID: any check being made may hang,
 * and a user allowed more at once could leave more hanging, and two such users could fill
 * PATHS_STUCK_MAX, everyone's. A submission past them waits for one of its user's to end
 * (a script's parallel submissions), at most path_check_timeout, then has its own for
 * its check, PATHS_WAIT_MAX of all users at once ("busy" past it); past PATHS_PER_UID
 * abandoned ones, refused at once. Those waiting do not count against PATHS_MAX: a user's
 * submissions that wait (a client may go and leave its submission waiting, then submit
 * again) never take the place of another user's check (64 users with 4 each fill
 * PATHS_MAX, as before any waited). */
#define PATHS_MAX 256u
#define PATHS_PER_UID 4u
#define PATHS_STUCK_MAX 64u
#define PATHS_WAIT_MAX 64u

struct djob {
    int used;
    struct carma_job_rec rec;
    uint32_t fair_u1; /* order = fair: 1 + its user's index in carmad.fair, 0 unknown */
    pid_t shepherd; /* 0 until its shepherd recorded itself */
    int pidfd;
    struct carma_shepherd_start *start; /* its shepherd being started, else NULL */
    /* its launches in a row whose shepherd could not start (not kept over a restart):
     * LAUNCH_FAILS_MAX fails it; launch_why, set around attempt_end, says why as the
     * reason of the attempt that ends for it */
    unsigned launch_fails;
    const char *launch_why;
    uint64_t peak_mib;    /* this attempt, from per-process memory */
    unsigned peak_partial; /* CARMA_PEAK_*: why peak_mib is only a lower limit */
    uint64_t peak_ref;     /* the peak when peak_held began counting */
    uint32_t peak_held;    /* ticks since, with its memory near its peak (peak_hold) */
    int is_new;           /* submitted in this iteration (undo on a failed commit) */
    int launching;        /* placed in this iteration, shepherd not started yet */
    int cancel_queued;    /* cancelled while queued in this iteration */
    int cancel_running;   /* cancel requested in this iteration: signal after commit */
    int timed_out;        /* this attempt passed its time limit and was cancelled for it
                             (timelimit_tick): its end's reason says so */
    int cancel_asked;     /* cancelled by a request (carma cancel) in this carmad, not by its
                             time limit: its end's reason says cancelled, even once the
                             attempt has run past its limit (SIGKILL after kill_grace) */
    int pid_dirty;        /* shepherd pid not yet in the store */
    int pid_in_tx;        /* ...written in the open transaction */
    /* An ended attempt whose store writes wait for a commit (end_in_tx: written in the
     * open transaction; a failed commit loses them and they are written again in the next
     * iteration). A final end keeps the slot (end_final) until they are committed, so that
     * the store never keeps a job running that carmad has forgotten. */
    int end_dirty, end_in_tx, end_final;
    struct {
        uint32_t n;
        enum carma_outcome o;
        double end_s, gpu_s, energy_j;
        int exit_code, signal, profile;
        uint64_t peak_mib;
        unsigned peak_partial;
        float smact, smocc, drama;
        char *reason; /* owned; NULL: none */
    } end;
    /* monitoring and accounting of the running attempt */
    uint64_t sim_mib;     /* what a simulated GPU shows it holding: the estimate at its
                             submission (estimator or history), 0: its hold (not kept over
                             a restart) */
    uint64_t sig;         /* its solo profile's key: its user's with the memory signature
                             (hist_sig), or est_signature(argv, batch) for a job stored
                             without one (profile_key) */
    double att_energy_j;  /* energy attributed to this attempt so far */
    uint16_t gpus_gone;   /* GPUs this attempt holds that are not this server's any more
                             (re-adopted after --gpus changed): held all the same */
    double gpu_s_shown;   /* the highest carma_job_gpu_seconds_total published: a counter,
                             never lower (an attempt's run ends at its job's exit, which the
                             ticks until its shepherd ended counted past) */
    uint64_t mem_now_mib; /* memory at the last tick: its processes' sum on a GPU, the
                             highest of its GPUs; MEM_UNKNOWN when none answered with one */
    uint64_t mem_tick;    /* the tick mem_now_mib is from */
    uint64_t mem_gpu_mib; /* the sum so far on GPU mem_gi in that tick */
    uint64_t mem_own_mib; /* the highest such sum on a GPU carma gave it, in that tick: what
                             it holds where its hold is counted (gpus_over) */
    unsigned mem_gi;
    uint32_t alone_ticks; /* ticks in a row alone on all its GPUs after its ramp */
    double gpu_seen_s;    /* when a process of this attempt was first listed on one of its
                             GPUs, < 0 not yet: its ramp (grace) runs from then */
    float solo_smact, solo_smocc, solo_drama; /* measured alone this attempt: the mean of
                                                 its windows alone, < 0 none */
    uint32_t solo_nsm, solo_noc, solo_ndr;    /* the windows in each mean */
    int solo_unseen; /* that profile was measured before any of its processes was listed
                        on its GPUs: its start-up, if it reached them later */
    /* the gravest critical Xid its GPUs reported during this attempt (take_xids) */
    int xid_seen;
    enum carma_xid_kind xid_kind;
    uint64_t xid;
    unsigned xid_gpu;
    double xid_t; /* when it came */
    int xid_shared;           /* it came on a GPU shared by MPS with another client (xid_one) */
    uint64_t xid_via;         /* it came on another GPU, and reached this job's under MPS
                                 through the GPUs of this job (xid_one); 0: on one of its */
    int xid_dirty, xid_in_tx; /* the mark is to be stored (attempts.xid: a restarted carmad
                                 judges the end by it), is in this iteration's transaction */
    int seen_dirty, seen_in_tx; /* the same for gpu_seen_s (attempts.seen_time) */
    int ended_down; /* its attempt ended while carmad was down, its end waits in recon_ends:
                       no Xid taken since the restart is its (xid_one) */
    /* carma submit --after (after_settle): the jobs it runs after (owned; rec.after's list),
     * after_met's bit k set once after[k] ended succeeded. after_wait: it waits for them,
     * queued but in none of the scheduler's queues; after_ended: ended in this iteration
     * because one of them ended otherwise (undone on a failed commit, as a cancel) */
    uint64_t *after;
    uint32_t nafter;
    uint64_t after_met;
    int after_wait, after_ended;
};

struct conn {
    int fd;
    uid_t uid;
    gid_t gid;
    pid_t pid;            /* the process that connected (SO_PEERCRED), 0: not visible */
    uint64_t gen;         /* tells a reused slot from the connection a pend was for */
    char *in;
    size_t inlen, incap;
    char *out;
    size_t outlen, outoff, outcap; /* unsent: out[outoff, outlen) */
    unsigned pending;     /* write requests waiting for the commit */
    int eof;
    int more;             /* complete requests may be left in `in` (batch, commit, output) */
    uint32_t events;      /* the epoll mask armed */
    double last_in;       /* CLOCK_MONOTONIC s of the last byte received, or the accept */
    double out_since;     /* CLOCK_MONOTONIC s of the last progress of unsent output */
};

/* Who submits a job, as req_submit's checks found them. */
struct submitter {
    uid_t uid;
    gid_t gid;
    char uname[256];
    char lim[CARMA_RLIMITS_MAX]; /* carma_rlimits_format; "": carmad's own limits */
};

/* A submission waiting for its paths' check (paths), then, with a summary, for its model
 * bound (d->estq). */
struct psub {
    struct carmad_pathcheck_item *paths; /* its check, until taken (NULL after) */
    int paths_queued;                    /* its check waits for one of its user's to end */
    int estq_queued;                     /* its estimate waits for one of its user's to end */
    double paths_deadline;               /* carma_mono_s(): refused past it */
    int paths_stopped;                   /* carmad stopped before its check ended */
    struct carmad_estq_item it;
    struct carma_req q; /* the request, moved out of handle_line */
    uint32_t ci;
    uint64_t gen; /* its connection: answered if still the same one */
    struct submitter who;
    struct psub *prev, *next; /* d->psubs */
};

struct pend {
    uint32_t conn;
    uint64_t gen;         /* of the connection: answered only if still the same one */
    json_t *resp;         /* sent when the commit succeeds */
};

/* Log lines of one kind on one GPU: at most XID_LOG_PER_MIN a minute in each of two
 * classes (the grave ones, which a storm of others cannot crowd out, and the rest: a
 * faulting application can make thousands of Xids a second); those past it are counted
 * and said at the first line after the minute (line_budget_take). */
struct line_budget {
    double t0;
    unsigned used[2];
    uint64_t unlogged;
};

struct gpu_state {
    struct carma_gpu_info info;
    int64_t db_id;        /* the store's id of the GPU (records), < 0 none */
    char kind[CARMAD_GPU_KIND_MAX]; /* carmad_gpu_kind: history keeps peaks per kind */
    struct line_budget xid_lines;   /* NVML's Xids (class 1: RESET and FAULT ones) */
    /* the kernel's Xid lines (daemon/kmsg.h): the GPU's PCI location (pci_ok: known),
     * the processes the monitor listed on it lately, the Xids put on one of them */
    int pci_ok;
    uint32_t pci_domain, pci_bus, pci_device;
    struct carmad_kmsg_pids pids;
    struct carmad_kmsg_blames blames;
    struct line_budget kmsg_lines;
    /* the co-run on it (coloc_watch): its jobs, and the ticks it has lasted */
    uint64_t corun_set;
    uint32_t corun_ticks;
    uint64_t corun_now; /* this tick's jobs, being summed */
    uint32_t corun_n;   /* how many of them count */
    int corun_bad;      /* one of them does not */
};

#define XID_LOG_PER_MIN 10
#define KMSG_PATH "/dev/kmsg"
#define KMSG_READS 256     /* records read per call; the loop goes on, the fd stays readable */
#define ATTEMPTS_CEILING 200 /* a job's max attempts, raised by attempts not counted */
#define LAUNCH_FAILS_MAX 5   /* launches in a row of one job whose shepherd cannot start */
#define LAUNCH_PAUSE_MAX_S 60.0 /* the longest pause of launches after such a failure */
#define KMSG_PID_AGE_S 300 /* a pid the monitor listed this long ago still names its job */
#define XID_TAKE_ROUNDS 8 /* batches of Xids taken per loop iteration */
#define XID_FAULT_WINDOW_S                                                                         \
    60 /* a contained fault fails the jobs it hits within this                                     \
          (CARMA_TEST_XID_FAULT_WINDOW: another, for tests) */

/* order = fair: one user's GPU-seconds (run time x GPUs held), each decayed by half every
 * fair_halflife since it was spent. */
struct fair_user {
    uint32_t uid;
    char name[64];
    double gpu_s;
};
#define FAIR_USERS_MAX 65536u

struct carmad {
    struct carmad_opts o;
    struct carmad_config cfg;
    struct carmad_hooks hooks;
    int stop;
    int epfd, lfd, sfd, tfd;
    int lockfd; /* STATE/carmad.lock, flock()ed while this carmad runs */
    int statefd, jobsfd; /* STATE and STATE/jobs, checked at start (open_state) */
    struct carmad_drained *drained; /* STATE/drained: GPUs an Xid or carma drain drained,
                                       kept over restarts */
    size_t ndrained;
    int drained_unsaved; /* the last write of STATE/drained failed: it may lack a line */
    char state_dir[PATH_MAX - 64];
    char sock_path[108];
    char shepherd_exe[PATH_MAX]; /* the carma-shepherd program, as found at start */
    int shepherd_fd;             /* ... and held open (O_PATH): the one every job runs */
    uid_t self_uid;
    gid_t sock_gid; /* the socket's group (socket_group), -1: none (resolve_socket_group) */
    int sock_group_err; /* why none: -ENOENT no such group, another -errno a failed lookup */
    struct carma_store *store;
    struct carma_gpu_backend gb;
    int have_gb;
    struct carma_gpu *gpus;
    struct gpu_state *gs;
    size_t ngpus;
    const char **kinds;   /* each gs[].kind once, nkinds of them: a new job's bound */
    const struct sim_gpu_kind **dev_kinds; /* kinds[k]'s estimator facts, NULL: unknown */
    size_t nkinds;
    const struct carma_policy *policy;
    struct carma_sched sched;
    int sched_ready;
    struct carma_job *sj;
    struct djob *dj;
    uint32_t cap;
    uint32_t *freel;
    uint32_t nfree;
    struct conn *conns[MAX_CONNS];
    /* the time each uid's requests took in this loop iteration (UID_SLICE_S) */
    struct uid_slice {
        uid_t uid;
        double spent;
    } slices[MAX_CONNS];
    uint32_t nslices;
    uint32_t conn_hi;     /* every slot in use is below this */
    uint32_t nconns;
    uint32_t max_conns;   /* from RLIMIT_NOFILE, at most MAX_CONNS */
    uint32_t root_reserve;/* of max_conns, only for root and carmad's own uid */
    uint64_t conn_gen;
    int more_work;        /* a connection has requests left: poll without sleeping */
    int listen_paused;    /* out of fds: the listener is off until a connection closes */
    int reserve_fd;       /* /dev/null, given up on EMFILE to accept and refuse one */
    long test_watch_delay_ms; /* CARMA_TEST_WATCH_DELAY_MS: a launch waits that long before
                               * it watches its shepherd (tests of a job that ends first) */
    double start_wait_s;      /* a shepherd's time to record itself (CARMA_TEST_START_WAIT_MS) */
    int test_watch_fail;      /* CARMA_TEST_WATCH_FAIL: watching a shepherd fails (ENOSPC) */
    uint64_t test_watch_fail_job; /* CARMA_TEST_WATCH_FAIL_JOB=ID: the same for job ID's
                                     shepherds only (one that ends as carmad reconciles) */
    int test_recon_nomem;         /* CARMA_TEST_RECON_NOMEM: reconciliation's list of the ends
                                     it found cannot grow (out of memory) */
    int test_socket_taken;        /* CARMA_TEST_SOCKET_TAKEN: another socket is bound at the path
                                     between open_socket's check and its bind */
    int test_die_at_cancel;   /* CARMA_TEST_DIE_AT_CANCEL: carmad exits (as if killed) after
                                 committing a running job's cancel, before signalling it */
    double xid_fault_window_s;  /* XID_FAULT_WINDOW_S, or CARMA_TEST_XID_FAULT_WINDOW */
    int kmsg_fd;                /* /dev/kmsg (CARMA_TEST_KMSG: a FIFO), -1: not read */
    char *kmsg_buf;             /* what was read of a line not yet whole */
    size_t kmsg_len;
    int kmsg_skip;              /* a line longer than the buffer: dropped to its end */
    long test_end_commit_fails; /* CARMA_TEST_END_COMMIT_FAILS: that many commits holding a
                                   job's end fail (a full disk at the wrong moment) */
    long test_end_update_fails; /* CARMA_TEST_END_UPDATE_FAILS: that many writes of a job's
                                   end fail at its job's row, after its attempt's (a full
                                   disk failing that one statement) */
    uint32_t nstarting;       /* jobs whose shepherd is being started */
    /* A shepherd that could not start for carmad's or the host's reason (launch_failed)
     * pauses the placements until launch_pause_until (carma_mono_s; 0: none), for
     * launch_pause_s, doubled at each pause in a row (back to none once one starts). */
    double launch_pause_until, launch_pause_s;
    /* The earliest time limit of a running attempt (now_s() time) not yet acted on;
     * 0: none known. timelimit_tick looks at the jobs only once it has passed. */
    double tl_next;
    char launch_pause_why[CARMA_ERR_MAX];
    /* CARMA_TEST_START_FAILS: that many shepherd starts fail as if STATE/jobs were full */
    long test_start_fails;
    double emfile_logged, busy_logged; /* CLOCK_MONOTONIC s of the last such log */
    double last_sweep;
    /* CLOCK_MONOTONIC s before which a history request is answered "busy", and what the
     * last one cost (req_history: HISTORY_SHARE) */
    double history_free_at, history_cost_s;
    /* this iteration */
    struct pend *pend;
    size_t npend, pendcap;
    int deferred;             /* the request being handled was answered through pend_add, or
                                 waits in the estimate queue */
    struct carmad_estq *estq; /* summaries' model bounds, off the loop */
    struct carmad_pathcheck *paths; /* submissions' paths, checked off the loop */
    struct psub *psubs;             /* the submissions waiting for it */
    uint64_t estimates;   /* finished by it since carmad started */
    double estimate_s;    /* its thread's time on them */
    uint32_t *touched;    /* slots changed this iteration that may need undo */
    size_t ntouched, touchcap;
    int dirty;            /* the scheduler should step */
    int after_dirty;      /* a job ended (or carmad started): the jobs waiting to run after
                             others are looked at again (after_settle) */
    int tx_failed_logged;
    /* monitoring (docs/monitoring.md) */
    struct carma_monitor mon;
    int have_mon;
    double tick_s; /* the time of the monitor tick in progress */
    struct carma_http *http;
    int publish;          /* the HTTP snapshot is out of date */
    struct carma_hist decision;
    /* order = fair (fair_order): each user's GPU time, decayed to fair_t; a key per slot */
    struct fair_user *fair;
    uint32_t nfair, fair_cap;
    double fair_t;
    double *fair_key;
    /* learnt from co-runs (coloc_watch), stored: one per kind, coloc[k] for kinds[k] */
    struct carma_coloc_learnt *coloc;
    int coloc_dirty;                             /* changed since last stored */
    int coloc_shared_rows;                       /* rows stored for kind "" to remove */
    float (*coloc_logged)[2][CARMA_COLOC_KNOTS]; /* [kind]: factors as last logged */
    uint64_t finished[CARMA_JOB_STATE_COUNT], oom_total, attempts_total, gpu_error_total;
    double last_prune;    /* the last hourly retention pass */
    int prune_more;       /* its batches are not done: go on at the next flush */
    uint64_t prune_drop;  /* records still to drop for record_max_mib */
    uint64_t rec_rows;    /* records stored (UINT64_MAX: not counted yet) */
    double last_acct;     /* the last accounting flush (record_flush) */
    json_t *http_why;     /* why /v1/jobs' queued jobs wait, by id (waiting_json), worked
                             out since http_why_t */
    double http_why_t;
    uint32_t http_queued; /* /v1/jobs lists this many queued jobs (HTTP_JOBS_QUEUED;
                             CARMA_TEST_HTTP_JOBS_QUEUED) */
    int record_failed_logged;
    unsigned long commits_failed; /* iterations in a row whose commit failed (logged once) */
    /* Folders STATE/jobs/ID of jobs the store no longer holds, to remove a batch an
     * iteration (jobdirs_remove): ids rm_ids[rm_head..rm_n), from the retention's
     * commits and the sweep at start. rm_done / rm_failed count the folders removed and
     * left since the queue was last empty (one log line for them then). */
    uint64_t *rm_ids;
    size_t rm_head, rm_n, rm_cap;
    uint64_t rm_done, rm_failed;
};

/* ---- logging ---- */

static void dlog(struct carmad *d, int prio, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void dlog(struct carmad *d, int prio, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (d->o.foreground && d->o.journal) {
        carmad_journal_write(stderr, prio, "", msg);
    } else if (d->o.foreground) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        struct tm tm;
        localtime_r(&ts.tv_sec, &tm);
        static const char *const lv[] = {"emerg", "alert", "crit", "error",
                                         "warning", "notice", "info", "debug"};
        fprintf(stderr, "%02d:%02d:%02d.%03ld carmad %s: %s\n", tm.tm_hour, tm.tm_min, tm.tm_sec,
                ts.tv_nsec / 1000000, lv[prio & 7], msg);
    } else {
        syslog(prio, "%s", msg);
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- slots: active jobs (queued or running) ---- */

static int slots_grow(struct carmad *d)
{
    uint32_t ncap = d->cap ? d->cap * 2 : 256;
    if (ncap > MAX_ACTIVE_JOBS)
        return -ENOSPC;
    struct carma_job *sj = realloc(d->sj, ncap * sizeof *sj);
    if (!sj)
        return -ENOMEM;
    d->sj = sj;
    if (d->sched_ready)
        d->sched.jobs = sj;
    struct djob *dj = realloc(d->dj, ncap * sizeof *dj);
    if (!dj)
        return -ENOMEM;
    d->dj = dj;
    uint32_t *fl = realloc(d->freel, ncap * sizeof *fl);
    if (!fl)
        return -ENOMEM;
    d->freel = fl;
    double *fk = realloc(d->fair_key, ncap * sizeof *fk);
    if (!fk)
        return -ENOMEM;
    d->fair_key = fk;
    memset(&d->dj[d->cap], 0, (ncap - d->cap) * sizeof *d->dj);
    for (uint32_t i = ncap; i > d->cap; i--)
        d->freel[d->nfree++] = i - 1;
    d->cap = ncap;
    return 0;
}

/* Job i's shepherd start is over (it started, failed or was given up): forgotten. */
static void start_forget(struct carmad *d, uint32_t i)
{
    free(d->dj[i].start);
    d->dj[i].start = NULL;
    d->nstarting--;
}

/* Gives up the start of job i's shepherd (carma_shepherd_abort, deadline as there). */
static void start_drop(struct carmad *d, uint32_t i, double deadline)
{
    carma_shepherd_abort(d->dj[i].start, deadline); /* its descriptors leave the epoll set */
    start_forget(d, i);
}

static int slot_alloc(struct carmad *d, uint32_t *out)
{
    if (d->nfree == 0) {
        int rc = slots_grow(d);
        if (rc)
            return rc;
    }
    uint32_t i = d->freel[--d->nfree];
    memset(&d->dj[i], 0, sizeof d->dj[i]);
    carma_job_rec_clear(&d->dj[i].rec);
    d->dj[i].used = 1;
    d->dj[i].pidfd = -1;
    d->dj[i].solo_smact = d->dj[i].solo_smocc = d->dj[i].solo_drama = -1;
    d->dj[i].gpu_seen_s = -1;
    *out = i;
    return 0;
}

static void slot_free(struct carmad *d, uint32_t i)
{
    struct djob *j = &d->dj[i];
    assert(j->used);
    if (j->start)
        start_drop(d, i, 0);
    if (j->pidfd >= 0) {
        epoll_ctl(d->epfd, EPOLL_CTL_DEL, j->pidfd, NULL);
        close(j->pidfd);
    }
    carma_job_rec_clear(&j->rec);
    free(j->end.reason);
    j->end.reason = NULL;
    free(j->after);
    j->after = NULL;
    j->used = 0;
    d->freel[d->nfree++] = i;
}

static int find_slot(struct carmad *d, uint64_t id, uint32_t *out)
{
    for (uint32_t i = 0; i < d->cap; i++)
        if (d->dj[i].used && d->dj[i].rec.id == id) {
            *out = i;
            return 1;
        }
    return 0;
}

static void touch(struct carmad *d, uint32_t i)
{
    if (d->ntouched == d->touchcap) {
        size_t n = d->touchcap ? d->touchcap * 2 : 64;
        uint32_t *t = realloc(d->touched, n * sizeof *t);
        if (!t)
            abort(); /* cannot keep the undo log: a broken invariant beats a wrong store */
        d->touched = t;
        d->touchcap = n;
    }
    d->touched[d->ntouched++] = i;
}

/* Whether the policy is one of CARMA's that gate on a job's requirement (est-*, oracle-*),
 * which carmad gives them as the job's bound (sj_from_rec). */
static int ref_requirement(const struct carmad *d)
{
    return d->policy->kind == CARMA_POLICY_REFERENCE && d->policy->req != CARMA_REQ_NONE;
}

/* Fills the scheduler's view of a job from its record. */
static void sj_from_rec(struct carmad *d, uint32_t i)
{
    const struct carma_job_rec *r = &d->dj[i].rec;
    struct carma_job *j = &d->sj[i];
    carma_job_init(j, r->id, (uint16_t)r->gpus, r->submit_s);
    j->mem_mib = r->mem_mib;
    /* CARMA's est-* and oracle-* read a requirement (DESIGN.md 9), which the simulator
     * takes from an estimator's column or the measured peak: carmad's is the job's bound
     * (its earlier runs' peaks where it has run, else the estimator's, never below --mem),
     * 0 when it has none (a job with neither --mem nor --summary: `none` below). */
    if (ref_requirement(d) && r->bound_mib > j->mem_mib)
        j->mem_mib = r->bound_mib;
    j->bound_mib = r->bound_mib;
    j->peak_mib = r->peak_mib;
    j->max_attempts = (uint16_t)r->max_attempts;
    j->attempts = (uint16_t)r->attempts;
    /* a number no carmad wrote runs alone, the safe reading */
    j->exclusive = r->exclusive >= CARMA_ALONE_NO && r->exclusive < CARMA_ALONE_COUNT
                       ? (uint8_t)r->exclusive
                       : CARMA_ALONE_OOM;
}

/* splitmix64's finaliser: z's bits mixed into every bit of the result. */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The profile key of signature sig run by user uid: one user's, as history's peaks are.
 * Shared, another user's runs of the same command in the same folder (a shared project's)
 * made a user's profile: idle ones (or a stall) made it near 0, and the user's jobs were
 * collocated as if free, and throttled to 10% of the SMs under MPS (its thread share is
 * the profile's). A hash (splitmix64's finaliser): never 0, no schema change. */
static uint64_t profile_key(uint64_t sig, uint32_t uid)
{
    uint64_t h = mix64(sig ^ (((uint64_t)uid + 1) * 0x9e3779b97f4a7c15ull));
    return h ? h : 1;
}

/* The job's profile key (its user and memory signature, or argv + batch for a job stored
 * without one) and, when this workload of its user ran alone before, its solo profile for
 * the scheduler. */
static void job_profile(struct carmad *d, uint32_t i)
{
    struct djob *dj = &d->dj[i];
    /* the memory signature, where the job has one: a profile is as much the model's and
     * its set-up's as a peak is (another model run by the same command is another job);
     * argv + batch for a job stored without one */
    dj->sig = dj->rec.hist_sig;
    if (!dj->sig) {
        json_error_t je;
        json_t *av = json_loads(dj->rec.argv_json, 0, &je);
        size_t n = json_is_array(av) ? json_array_size(av) : 0;
        const char **argv = n ? calloc(n, sizeof *argv) : NULL;
        if (argv) {
            for (size_t k = 0; k < n; k++) {
                argv[k] = json_string_value(json_array_get(av, k));
                if (!argv[k])
                    argv[k] = "";
            }
            dj->sig = est_signature(argv, n, dj->rec.batch);
        }
        free(argv);
        json_decref(av);
    }
    if (dj->sig)
        dj->sig = profile_key(dj->sig, dj->rec.uid);
    struct carma_profile p;
    struct carma_err err;
    if (dj->sig && carma_store_profile_get(d->store, dj->sig, &p, &err) == 0) {
        d->sj[i].smact = (float)p.smact;
        d->sj[i].smocc = (float)p.smocc;
        d->sj[i].drama = (float)p.drama;
    }
}

/* Puts job i on GPUs gpu[0..n) as running since `start`: a job re-adopted after a
 * restart, its process first listed on them at `seen` (< 0: not yet). */
static void sched_adopt(struct carmad *d, uint32_t i, const uint16_t *gpu, uint16_t n, double start,
                        double seen)
{
    carma_sched_adopt(&d->sched, i, gpu, n, start, seen);
}

/* Whether the solo profile of job i's running attempt is of its start-up alone: taken
 * before its process reached its GPUs and not measured again since it did. Such a profile
 * is not the job's, and is not stored. */
static int solo_of_startup(const struct djob *dj)
{
    return dj->solo_unseen && dj->gpu_seen_s >= 0;
}

/* The solo SMACT of job i's running attempt as its end would store it now (< 0: none). */
static double solo_smact_now(const struct djob *dj)
{
    return solo_of_startup(dj) ? -1.0 : (double)dj->solo_smact;
}

/* The GPUs job i's running attempt holds, as its GPU-seconds count them: those it is
 * placed on here and those that are not this server's any more (the store's attempts.gpus,
 * which `carma usage` counts). */
static uint32_t held_gpus(const struct carmad *d, uint32_t i)
{
    return (uint32_t)d->sj[i].nplaced + d->dj[i].gpus_gone;
}

/* Stores the accounting of job i's running attempt as of now: its GPU-seconds, energy
 * and solo SMACT so far (what a restarted carmad goes on from). */
static int usage_put_now(struct carmad *d, uint32_t i, double now, struct carma_err *err)
{
    const struct djob *dj = &d->dj[i];
    const struct carma_job *j = &d->sj[i];
    return carma_store_usage_put(d->store, dj->rec.id, j->attempts,
                                 (now - j->start_s) * held_gpus(d, i), dj->att_energy_j,
                                 solo_smact_now(dj), err);
}

/* ---- attempt folders ---- */

static void attempt_dir(const struct carmad *d, uint64_t id, uint32_t n, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/jobs/%llu/%u", d->state_dir, (unsigned long long)id, n);
}

static int mkdir_p(const char *path, mode_t mode)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, mode) < 0 && errno != EEXIST)
                return -errno;
            *p = '/';
        }
    if (mkdir(tmp, mode) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

/* Folders under the state folder (docs/daemon.md, Security). A root carmad serves
 * many users, who open their own job's logs by path (carma logs) but may list
 * nothing: folders 0711, files 0600 (logs owned by the job's user). A per-user
 * carmad keeps everything 0700. */
static mode_t dir_mode(const struct carmad *d)
{
    return d->self_uid == 0 ? 0711 : 0700;
}

/* Refuses a folder carmad cannot trust: another user's, or one that group or others
 * may write (they could plant symlinks or swap job folders that carmad trusts). */
static int check_dir(const struct carmad *d, int fd, const char *path, struct carma_err *err)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return carma_err_set(err, -errno, "%s: %s", path, strerror(errno));
    if (st.st_uid != d->self_uid)
        return carma_err_set(err, -EPERM,
                             "%s: owned by uid %u, not by carmad's uid %u; carmad will not use "
                             "a state folder another user controls",
                             path, (unsigned)st.st_uid, (unsigned)d->self_uid);
    if (st.st_mode & 022)
        return carma_err_set(err, -EPERM,
                             "%s: writable by %s (mode %04o), who could plant symbolic links "
                             "or replace job folders; carmad refuses it (chmod %04o %s)",
                             path,
                             (st.st_mode & 022) == 022 ? "group and others"
                             : (st.st_mode & 002)      ? "others"
                                                       : "group",
                             (unsigned)(st.st_mode & 07777), (unsigned)dir_mode(d), path);
    return 0;
}

/* Takes from folder fd what dir_mode does not grant (0755 becomes 0711). The mode it
 * had when it changed it, else 0. */
static mode_t tighten_dir(const struct carmad *d, int fd)
{
    struct stat st;
    if (fstat(fd, &st) < 0 || !((st.st_mode & 07777) & ~dir_mode(d)))
        return 0;
    return fchmod(fd, dir_mode(d)) == 0 ? (st.st_mode & 07777) : 0;
}

/* Opens folder name under dirfd (path names it in messages), creating it when create
 * and absent; a symlink there is refused, never followed, and the folder must pass
 * check_dir. The descriptor, or a negative errno with err set. */
static int open_dir_at(const struct carmad *d, int dirfd, const char *name, const char *path,
                       int create, struct carma_err *err)
{
    if (create && mkdirat(dirfd, name, dir_mode(d)) < 0 && errno != EEXIST)
        return carma_err_set(err, -errno, "%s: %s", path, strerror(errno));
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (e == ELOOP || e == ENOTDIR) {
            struct stat st;
            int link = fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
            return carma_err_set(err, -e, "%s: %s; carmad uses only a real folder there", path,
                                 link ? "a symbolic link" : "not a folder");
        }
        return carma_err_set(err, -e, "%s: %s", path, strerror(e));
    }
    int rc = check_dir(d, fd, path, err);
    if (rc) {
        close(fd);
        return rc;
    }
    return fd;
}

/* Opens the attempt folder STATE/jobs/ID/N (creating both levels when create)
 * relative to the checked STATE/jobs, through no symlink and only through folders
 * that are carmad's and closed to writes by others, so that a job's files cannot be
 * redirected. buf receives its path. The descriptor, or a negative errno. */
static int attempt_open(const struct carmad *d, uint64_t id, uint32_t n, int create, char *buf,
                        size_t cap, struct carma_err *err)
{
    char name[32];
    snprintf(buf, cap, "%s/jobs/%llu", d->state_dir, (unsigned long long)id);
    snprintf(name, sizeof name, "%llu", (unsigned long long)id);
    int jfd = open_dir_at(d, d->jobsfd, name, buf, create, err);
    if (jfd < 0)
        return jfd;
    attempt_dir(d, id, n, buf, cap);
    snprintf(name, sizeof name, "%u", n);
    int afd = open_dir_at(d, jfd, name, buf, create, err);
    close(jfd);
    return afd;
}

/* ---- GPUs ---- */

static int gpu_index_of(struct carmad *d, const char *uuid)
{
    for (size_t g = 0; g < d->ngpus; g++)
        if (!strcmp(d->gs[g].info.uuid, uuid))
            return (int)g;
    return -1;
}

static json_t *job_gpus_json(struct carmad *d, uint32_t i)
{
    json_t *a = json_array();
    for (uint16_t k = 0; k < d->sj[i].nplaced; k++)
        json_array_append_new(a, json_string(d->gs[d->sj[i].gpu[k]].info.uuid));
    return a;
}

/* Running job whose shepherd is `sid` (the session of every process of a job). */
static int slot_of_session(struct carmad *d, pid_t sid)
{
    for (uint32_t i = 0; i < d->cap; i++)
        if (d->dj[i].used && d->dj[i].shepherd == sid && d->sj[i].state == CARMA_JOB_RUNNING)
            return (int)i;
    return -1;
}

static pid_t proc_session(pid_t pid)
{
    pid_t sid;
    return carma_proc_stat(pid, NULL, &sid, NULL) == 0 ? sid : -1;
}

/* The running job pid is a process of (its session's leader is the job's shepherd), or -1. */
static int slot_of_pid(struct carmad *d, pid_t pid)
{
    int si = slot_of_session(d, pid);
    if (si < 0) {
        pid_t sid = proc_session(pid);
        si = sid > 0 ? slot_of_session(d, sid) : -1;
    }
    return si;
}

/* Whether pid runs `name` (its comm, cut to 15 characters, and its executable's file
 * name) from a file root owns that nobody else may write, so that a user's process cannot
 * pass for it by its name. */
static int proc_runs_system_binary(pid_t pid, const char *name)
{
    char path[64], comm[32], exe[4096];
    if (carma_proc_read(pid, "comm", comm, sizeof comm) || strncmp(comm, name, 15))
        return 0;
    snprintf(path, sizeof path, "/proc/%ld/exe", (long)pid);
    ssize_t l = readlink(path, exe, sizeof exe - 1);
    if (l <= 0)
        return 0; /* another user's, to a carmad that is not root: not known */
    exe[l] = '\0';
    const char *base = strrchr(exe, '/');
    struct stat st;
    return base && !strcmp(base + 1, name) && stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
           st.st_uid == 0 && !(st.st_mode & 022);
}

/* Whether no user but root may trace pid or read its memory: /proc/PID belongs to root
 * while the process is root's or not dumpable, to its effective uid otherwise. A server
 * its control daemon started by setting the client's uid before exec is dumpable again
 * (execve resets it) and its user could trace it and run their work inside it. */
static int proc_untraceable(pid_t pid)
{
    char path[32];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%ld", (long)pid);
    return stat(path, &st) == 0 && st.st_uid == 0;
}

/* Whether pid, on GPU gi, is an MPS server carma takes for neither a job's process nor a
 * foreign one, on a GPU carma shares by MPS. Under MPS the server holds the GPU (NVML's
 * compute list) while its clients, which NVML lists too, do the work; it stays after
 * them, idle, until another user's client needs the GPU. It is the MPS server binary
 * (above) and either
 * - a child of root's MPS control daemon (nvidia-cuda-mps-control, likewise): started by
 *   root, not by its user, and, when it is not dumpable (proc_untraceable), out of its
 *   user's reach, so its work is its clients'; or
 * - run by the user of a carma job on that GPU (MPS runs one server per user).
 * Anything else is foreign, so that a user's own work in the server's clothes (the real
 * binary with LD_PRELOAD) keeps its GPU from looking idle unless that user has a job
 * there. */
static int mps_server_here(struct carmad *d, unsigned gi, pid_t pid)
{
    if (gi >= d->ngpus || d->gpus[gi].sharing != CARMA_SHARING_MPS ||
        !proc_runs_system_binary(pid, "nvidia-cuda-mps-server"))
        return 0;
    pid_t pp;
    if (carma_proc_stat(pid, &pp, NULL, NULL) == 0 && pp > 1 &&
        proc_runs_system_binary(pp, "nvidia-cuda-mps-control") && carma_proc_uid(pp, 0) == 0 &&
        carma_proc_uid(pp, 1) == 0 && proc_untraceable(pid))
        return 1;
    long long uid = carma_proc_uid(pid, 0);
    if (uid < 0 || !d->gpus[gi].njobs)
        return 0;
    for (uint32_t i = 0; i < d->cap; i++) {
        if (!d->dj[i].used || d->sj[i].state != CARMA_JOB_RUNNING || d->dj[i].rec.uid != uid)
            continue;
        for (uint16_t k = 0; k < d->sj[i].nplaced; k++)
            if (d->sj[i].gpu[k] == gi)
                return 1;
    }
    return 0;
}

/* ---- the monitor (src/daemon/monitor.c) and what the daemon does with it ---- */

/* A job's memory now as JSON: null when unknown. */
static json_t *mem_now_json(const struct djob *dj)
{
    return dj->mem_now_mib == MEM_UNKNOWN ? json_null() : json_integer((json_int_t)dj->mem_now_mib);
}

/* Monitor callback: a process on GPU gi. Maps it to a running job by session (every
 * process of a job is in the session its shepherd leads) and records the job's
 * memory: what its processes hold on a GPU together (several ranks, MPS clients), the
 * highest of its GPUs, now and as the attempt's peak. The monitor lists a tick's
 * processes GPU by GPU, so a sum starts when gi changes. Returns 1 when the process is
 * a job's on one of the job's GPUs; a job's process on a GPU carma did not give it (a
 * script that sets CUDA_VISIBLE_DEVICES itself) is the job's memory but foreign to that
 * GPU: nothing carma placed there holds it, so the GPU is neither idle nor free. */
static int mon_proc(void *ctx, unsigned gi, pid_t pid, uint64_t mem_bytes)
{
    struct carmad *d = ctx;
    int si = slot_of_pid(d, pid);
    int server = si < 0 && mps_server_here(d, gi, pid);
    if (gi < d->ngpus) /* for the kernel's Xid lines, read maybe after the process ended */
        carmad_kmsg_pids_note(&d->gs[gi].pids, pid,
                              si >= 0 ? d->dj[si].rec.id : server ? CARMAD_KMSG_SERVER : 0,
                              d->tick_s);
    if (si < 0)
        return server ? 2 : 0;
    carma_sched_job_seen(&d->sched, (uint32_t)si, gi, d->tick_s);
    struct djob *dj = &d->dj[si];
    uint64_t tick = d->mon.ticks + 1; /* the tick in progress */
    if (dj->mem_tick != tick) {
        dj->mem_tick = tick;
        dj->mem_now_mib = MEM_UNKNOWN; /* until a process answers with its memory */
        dj->mem_gi = gi;
        dj->mem_gpu_mib = 0;
        dj->mem_own_mib = 0;
    } else if (dj->mem_gi != gi) {
        dj->mem_gi = gi;
        dj->mem_gpu_mib = 0;
    }
    /* its processes together above what the GPU has is no figure either (as one process
     * above it, monitor.c): a peak past the GPU would be history's bound for every later run */
    if (mem_bytes != UINT64_MAX && gi < d->ngpus &&
        dj->mem_gpu_mib + (mem_bytes >> 20) > d->gpus[gi].mem_total_mib)
        mem_bytes = UINT64_MAX;
    if (mem_bytes != UINT64_MAX) {
        dj->mem_gpu_mib += mem_bytes >> 20;
        if (dj->mem_now_mib == MEM_UNKNOWN || dj->mem_gpu_mib > dj->mem_now_mib)
            dj->mem_now_mib = dj->mem_gpu_mib;
        if (dj->mem_gpu_mib > dj->peak_mib)
            dj->peak_mib = dj->mem_gpu_mib;
    } else {
        dj->peak_partial |= CARMA_PEAK_UNKNOWN; /* the sum misses this process's memory */
    }
    for (uint16_t k = 0; k < d->sj[si].nplaced; k++)
        if (d->sj[si].gpu[k] == gi) {
            if (dj->mem_gpu_mib > dj->mem_own_mib)
                dj->mem_own_mib = dj->mem_gpu_mib;
            if (dj->gpu_seen_s < 0) {
                dj->gpu_seen_s = d->tick_s;
                dj->alone_ticks = 0; /* a window before this is of its start-up */
                dj->seen_dirty = 1;
            }
            return 1;
        }
    return 0; /* foreign there: its memory on that GPU is foreign memory, not over a hold */
}

static void mon_log(void *ctx, int prio, const char *msg)
{
    dlog(ctx, prio, "%s", msg);
}

/* What carma's jobs use beyond their holds, on each GPU (struct carma_gpu's over_mib),
 * from their memory at the last tick: a job past its bound takes memory no hold counts,
 * which auto must not hand out again. A job's memory is its highest GPU's, counted on
 * each of its GPUs (more than a job of several GPUs may use on the others: the safe
 * side). */
static void gpus_over(struct carmad *d)
{
    uint64_t *over = calloc(d->ngpus, sizeof *over);
    if (!over)
        return; /* the figures of the tick before stand */
    for (uint32_t i = 0; i < d->cap; i++) {
        const struct carma_job *j = &d->sj[i];
        /* on its own GPUs only: what it uses on another is that GPU's foreign memory */
        uint64_t m = d->dj[i].mem_tick == d->mon.ticks ? d->dj[i].mem_own_mib : 0;
        if (!d->dj[i].used || j->state != CARMA_JOB_RUNNING || m <= j->held_mib)
            continue;
        for (uint16_t k = 0; k < j->nplaced; k++)
            over[j->gpu[k]] += m - j->held_mib;
    }
    for (size_t gi = 0; gi < d->ngpus; gi++)
        if (d->gpus[gi].over_mib != over[gi]) {
            d->gpus[gi].over_mib = over[gi];
            carma_sched_gpu_changed(&d->sched, (uint32_t)gi);
        }
    free(over);
}

/* The mean *m of *n windows with window x folded in (x < 0: none measured, *m as it is). */
static float solo_fold(float m, uint32_t *n, float x)
{
    if (!(x >= 0))
        return m;
    if (!(m >= 0))
        *n = 0;
    if (*n < UINT32_MAX)
        ++*n;
    return *n == 1 ? x : m + (x - m) / (float)*n;
}

/* After a tick that listed the job's memory: counts the ticks at which it was near its
 * peak (within 1%, at least 2 MiB), from when the peak last rose past that; an attempt
 * that ends with fewer than CARMA_PEAK_HELD_TICKS has a brief peak (CARMA_PEAK_BRIEF),
 * unless it lived through a downtime (partial already, and counted only since). */
static void peak_hold(struct djob *dj)
{
    if (dj->mem_now_mib == MEM_UNKNOWN || dj->peak_mib == 0)
        return;
    uint64_t tol = dj->peak_mib / 100 > 2 ? dj->peak_mib / 100 : 2;
    if (dj->peak_mib > dj->peak_ref + tol) {
        dj->peak_ref = dj->peak_mib;
        dj->peak_held = 0;
    }
    if (dj->mem_now_mib + tol >= dj->peak_mib && dj->peak_held < UINT32_MAX)
        dj->peak_held++;
}

/* After a tick: energy shared among each GPU's co-runners by activity (their solo
 * SMACT, the GPU's mean for one not yet measured; foreign processes take a share
 * nobody is billed for), and the solo SMACT of jobs alone on their GPUs after their
 * ramp, which `auto` needs to collocate them. */
static void after_tick(struct carmad *d, double now)
{
    if (!d->have_mon)
        return;
    uint32_t cap = d->cfg.window;
    /* a running job none of whose processes was listed this tick, on GPUs whose lists all
     * came this tick, holds no memory now (a GPU not listed: a failed sample or list, a lost
     * GPU, a backend without lists: its last figure stands) */
    for (uint32_t i = 0; i < d->cap; i++) {
        if (!d->dj[i].used || d->sj[i].state != CARMA_JOB_RUNNING)
            continue;
        if (d->dj[i].mem_tick == d->mon.ticks) {
            peak_hold(&d->dj[i]);
            continue;
        }
        int listed = 1;
        for (uint16_t k = 0; k < d->sj[i].nplaced; k++)
            listed &= d->mon.g[d->sj[i].gpu[k]].procs_tick == d->mon.ticks;
        if (listed)
            d->dj[i].mem_now_mib = 0;
    }
    gpus_over(d);
    float w[CARMA_GPU_MAX_PROCS + 64];
    double share[CARMA_GPU_MAX_PROCS + 64];
    uint32_t who[CARMA_GPU_MAX_PROCS + 64];
    for (size_t gi = 0; gi < d->ngpus; gi++) {
        const struct carma_mon_gpu *mg = &d->mon.g[gi];
        const struct carma_gpu *g = &d->gpus[gi];
        if (mg->tick_energy_j <= 0 || g->njobs == 0)
            continue;
        size_t n = 0;
        for (uint32_t i = 0; i < d->cap && n < CARMA_GPU_MAX_PROCS; i++) {
            if (!d->dj[i].used || d->sj[i].state != CARMA_JOB_RUNNING)
                continue;
            for (uint16_t k = 0; k < d->sj[i].nplaced; k++)
                if (d->sj[i].gpu[k] == gi) {
                    who[n] = i;
                    w[n++] = d->sj[i].smact;
                    break;
                }
        }
        size_t nj = n;
        for (uint32_t f = 0; f < g->nforeign && n < sizeof w / sizeof w[0]; f++)
            w[n++] = -1.0f;
        carma_mon_share_energy(mg->tick_energy_j, w, n, share);
        for (size_t k = 0; k < nj; k++)
            d->dj[who[k]].att_energy_j += share[k];
    }
    for (uint32_t i = 0; i < d->cap; i++) {
        struct djob *dj = &d->dj[i];
        struct carma_job *j = &d->sj[i];
        if (!dj->used || j->state != CARMA_JOB_RUNNING || j->nplaced == 0)
            continue;
        /* Its profile is of its work, not of its start-up (imports, data, the model's
         * construction, 10 s for a ResNet-50 on an H200): the grace runs from when its
         * process is on the GPU, or from its start for one never seen there. */
        int alone = now - (dj->gpu_seen_s >= 0 ? dj->gpu_seen_s : j->start_s) >=
                    d->cfg.sched.grace_s;
        for (uint16_t k = 0; alone && k < j->nplaced; k++) {
            const struct carma_gpu *g = &d->gpus[j->gpu[k]];
            alone = g->njobs == 1 && g->nforeign == 0 && !g->drained;
        }
        if (!alone) {
            dj->alone_ticks = 0;
            continue;
        }
        /* A tick counts when each of its GPUs' windows took a sample in it (a good sample
         * with SMACT or utilisation, carma_mon_tick): the window of a GPU whose samples
         * stopped carrying them (a failed sample, DCGM's fields stale, GPM and utilisation
         * failing) still holds the samples before, of another time or another job, which
         * made its profile. Not counted, such a tick breaks no run alone either. */
        int sampled = 1;
        for (uint16_t k = 0; k < j->nplaced; k++) {
            const struct carma_mon_gpu *mg = &d->mon.g[j->gpu[k]];
            sampled &= mg->failures == 0 &&
                       (mg->present & ((1u << CARMA_MON_SMACT) | (1u << CARMA_MON_UTIL))) != 0;
        }
        if (!sampled)
            continue;
        if (++dj->alone_ticks < cap || dj->alone_ticks % cap != 0)
            continue;
        /* A full window of samples taken alone: its means are the job's profile. */
        float sm = 0, oc = 0, dr = 0;
        int noc = 0, ndr = 0, nsm = 0;
        for (uint16_t k = 0; k < j->nplaced; k++) {
            const struct carma_gpu *g = &d->gpus[j->gpu[k]];
            struct carma_window_stats st;
            carma_window_stats(&g->smact, &st);
            if (st.n) {
                sm += st.mean;
                nsm++;
            }
            carma_window_stats(&g->smocc, &st);
            if (st.n) {
                oc += st.mean;
                noc++;
            }
            carma_window_stats(&g->drama, &st);
            if (st.n) {
                dr += st.mean;
                ndr++;
            }
        }
        if (!nsm)
            continue;
        sm /= (float)nsm;
        oc = noc ? oc / (float)noc : -1.0f;
        dr = ndr ? dr / (float)ndr : -1.0f;
        int first = dj->solo_smact < 0;
        /* The attempt's profile is the mean of its windows alone, each of them one odd
         * stretch at most (an I/O stall, a checkpoint written, its teardown): its last
         * window alone, stored as its profile, made the signature of a job that idled at
         * its end look free to collocate beside. Windows of its start-up (taken before
         * its process reached its GPUs) are not in it once it has. */
        if (solo_of_startup(dj))
            dj->solo_nsm = dj->solo_noc = dj->solo_ndr = 0;
        dj->solo_smact = solo_fold(dj->solo_smact, &dj->solo_nsm, sm);
        dj->solo_smocc = solo_fold(dj->solo_smocc, &dj->solo_noc, oc);
        dj->solo_drama = solo_fold(dj->solo_drama, &dj->solo_ndr, dr);
        dj->solo_unseen = dj->gpu_seen_s < 0;
        if (first || fabsf(j->smact - sm) > 0.02f) {
            carma_sched_set_profile(&d->sched, i, sm, oc, dr);
            if (first)
                dlog(d, LOG_INFO, "job %llu: solo SMACT %.2f measured over %u samples alone",
                     (unsigned long long)dj->rec.id, sm, dj->alone_ticks);
        }
    }
}

/* ---- order = fair ---- */

/* User uid's entry (added at 0 GPU-seconds), or NULL past FAIR_USERS_MAX or out of memory
 * (that user's jobs then sort as having used nothing). */
static struct fair_user *fair_find(struct carmad *d, uint32_t uid, const char *name)
{
    for (uint32_t k = 0; k < d->nfair; k++)
        if (d->fair[k].uid == uid)
            return &d->fair[k];
    if (d->nfair == d->fair_cap) {
        uint32_t cap = d->fair_cap ? d->fair_cap * 2 : 16;
        struct fair_user *v = cap <= FAIR_USERS_MAX ? realloc(d->fair, cap * sizeof *v) : NULL;
        if (!v)
            return NULL;
        d->fair = v;
        d->fair_cap = cap;
    }
    struct fair_user *u = &d->fair[d->nfair++];
    u->uid = uid;
    snprintf(u->name, sizeof u->name, "%s", name ? name : "");
    u->gpu_s = 0;
    return u;
}

/* Job slot i's user entry (looked up once per job), or NULL. */
static struct fair_user *fair_of(struct carmad *d, uint32_t i)
{
    struct djob *dj = &d->dj[i];
    if (!dj->fair_u1) {
        struct fair_user *u = fair_find(d, dj->rec.uid, dj->rec.user);
        if (!u)
            return NULL;
        dj->fair_u1 = (uint32_t)(u - d->fair) + 1;
    }
    return &d->fair[dj->fair_u1 - 1];
}

/* Decays every user's GPU time to now and charges the running jobs' GPUs for the time
 * since the last call (at now: the calls are a tick apart at most while jobs run). */
static void fair_accrue(struct carmad *d, double now)
{
    double dt = now - d->fair_t;
    if (!(dt > 0)) {
        if (dt < 0) /* the wall clock stepped back: charge from here */
            d->fair_t = now;
        return;
    }
    double f = exp2(-dt / d->cfg.fair_halflife_s);
    for (uint32_t k = 0; k < d->nfair; k++)
        d->fair[k].gpu_s *= f;
    d->fair_t = now;
    for (uint32_t i = 0; i < d->cap; i++) {
        if (!d->dj[i].used || d->sj[i].state != CARMA_JOB_RUNNING || !held_gpus(d, i))
            continue;
        struct fair_user *u = fair_of(d, i);
        if (u)
            u->gpu_s += dt * held_gpus(d, i);
    }
}

/* order = fair: job i's attempt ends at end_s, its GPUs charged from the last accrual up
 * to then (fair_accrue charges the jobs running at its call only: a job's time after the
 * last tick, a whole job between two ticks, would not count). */
static void fair_end(struct carmad *d, uint32_t i, double end_s)
{
    double now = now_s(), t = end_s < now ? end_s : now;
    if (!d->cfg.order_fair || d->sj[i].state != CARMA_JOB_RUNNING || !held_gpus(d, i) ||
        !(t > d->fair_t))
        return;
    struct fair_user *u = fair_of(d, i);
    if (u)
        u->gpu_s += (t - d->fair_t) * held_gpus(d, i);
}

/* The store's attempts, charged to their users as they would have decayed by now: each
 * second of a run as of its own time, as fair_accrue charged it (counted whole at its
 * end, a run of a half-life weighed 1.4 times what carmad had counted before the
 * restart, one of many half-lives far more). */
static int fair_load_row(void *ctx, uint32_t uid, const char *user, uint32_t gpus, double start,
                         double end)
{
    struct carmad *d = ctx;
    double now = d->fair_t, h = d->cfg.fair_halflife_s;
    double at = end >= 0 && end < now ? end : now, run = at - start;
    struct fair_user *u = fair_find(d, uid, user);
    /* gpus x the integral over [start, at] of 2^-((now - t) / h) dt; at most gpus x h / ln 2
     * whatever the start */
    if (u && run > 0)
        u->gpu_s += gpus * (h / M_LN2) * exp2(-(now - at) / h) * -expm1(-run / h * M_LN2);
    return 0;
}

/* order = fair: the main queue by its jobs' users' GPU time, least first, a user's jobs in
 * the order submitted (carma_sched_order); before every step. */
static void fair_order(struct carmad *d, double now)
{
    if (!d->cfg.order_fair)
        return;
    fair_accrue(d, now);
    if (carma_sched_queued(&d->sched) < 2)
        return;
    for (uint32_t i = 0; i < d->cap; i++) {
        if (!d->dj[i].used || d->sj[i].state != CARMA_JOB_QUEUED)
            continue;
        struct fair_user *u = fair_of(d, i);
        d->fair_key[i] = u ? u->gpu_s : 0;
    }
    carma_sched_order(&d->sched, d->fair_key);
}

/* A job's key in a GPU's set of co-runners: its id and attempt, mixed (splitmix64). */
static uint64_t corun_key(uint64_t id, uint32_t attempt)
{
    return mix64(id * 0x9e3779b97f4a7c15ull + attempt);
}

/* The GPU kinds whose correction carmad learns, shows and stores: those auto applies
 * one to (carma_sched_set_coloc). A table read for a later kind would be shown and
 * stored as if it moved auto's predictions, which it does not. */
static size_t coloc_nkinds(const struct carmad *d)
{
    return d->nkinds < CARMA_SCHED_COLOC_KINDS ? d->nkinds : CARMA_SCHED_COLOC_KINDS;
}

/* What co-runs teach (core/coloc.h, docs/monitoring.md): a GPU whose jobs, two or more,
 * each on this GPU alone, each with a solo profile and past its ramp, each with a process
 * in the GPU's list (where it lists them), have shared it with no other process for a
 * full window of SMACT samples (DCGM or GPM: NVML's utilisation is no sum of activities)
 * is one observation of the model's error, and one more every window it lasts. A job
 * whose process is not on the GPU (still loading its data, between two of its programs)
 * adds its solo SMACT to the sum and nothing to the GPU's: it would teach a slowdown
 * there is not. */
static void coloc_watch(struct carmad *d, double now)
{
    if (!d->cfg.learn_coloc)
        return;
    for (size_t gi = 0; gi < d->ngpus; gi++) {
        d->gs[gi].corun_now = 0;
        d->gs[gi].corun_n = 0;
        d->gs[gi].corun_bad = 0;
    }
    for (uint32_t i = 0; i < d->cap; i++) {
        const struct djob *dj = &d->dj[i];
        const struct carma_job *j = &d->sj[i];
        if (!dj->used || j->state != CARMA_JOB_RUNNING)
            continue;
        int bad =
            j->nplaced != 1 || !(j->smact >= 0) ||
            now - (dj->gpu_seen_s >= 0 ? dj->gpu_seen_s : j->start_s) < d->cfg.sched.grace_s ||
            (d->mon.g[j->gpu[0]].procs_tick == d->mon.ticks && dj->mem_tick != d->mon.ticks);
        for (uint16_t k = 0; k < j->nplaced; k++) {
            struct gpu_state *gs = &d->gs[j->gpu[k]];
            gs->corun_now += corun_key(dj->rec.id, j->attempts);
            gs->corun_n++;
            gs->corun_bad |= bad;
        }
    }
    int changed = 0;
    uint32_t cap = d->cfg.window;
    for (size_t gi = 0; gi < d->ngpus; gi++) {
        struct gpu_state *gs = &d->gs[gi];
        const struct carma_gpu *g = &d->gpus[gi];
        const struct carma_mon_gpu *mg = &d->mon.g[gi];
        if (gs->corun_bad || gs->corun_n < 2 || gs->corun_n != g->njobs || g->nforeign ||
            g->kind >= CARMA_SCHED_COLOC_KINDS || /* auto would not apply it */
            g->drained || g->nunprofiled || mg->failures || mg->procs_failed ||
            !(mg->present & (1u << CARMA_MON_SMACT))) {
            gs->corun_ticks = 0;
            continue;
        }
        if (gs->corun_now != gs->corun_set) {
            gs->corun_set = gs->corun_now;
            gs->corun_ticks = 0;
        }
        if (++gs->corun_ticks % cap != 0)
            continue;
        struct carma_window_stats st;
        carma_window_stats(&g->smact, &st);
        float S = g->prof_smact, B = g->prof_busy;
        struct carma_coloc_learnt *l = &d->coloc[g->kind];
        if (st.n < cap || carma_coloc_observe(l, g->sharing, g->njobs, S, B, st.mean) != 0)
            continue;
        changed = 1;
        float f = carma_coloc_factor(l, g->sharing, S);
        unsigned k = (unsigned)(S / CARMA_COLOC_KNOT_STEP + 0.5f); /* the nearest knot */
        k = k < CARMA_COLOC_KNOTS ? k : CARMA_COLOC_KNOTS - 1;
        if (fabsf(f - d->coloc_logged[g->kind][g->sharing][k]) >= 0.02f) {
            d->coloc_logged[g->kind][g->sharing][k] = f;
            dlog(d, LOG_INFO,
                 "GPU %zu: %u jobs whose solo SMACT sum to %.2f ran at SMACT %.2f over %u "
                 "samples, where the model says %.2f: its rates there are now taken x%.2f "
                 "(%s, %s)",
                 gi, g->njobs, (double)S, (double)st.mean, st.n,
                 (double)(carma_coloc_rate(g->sharing, g->njobs, S, B) * S), (double)f,
                 carma_sharing_name(g->sharing), d->kinds[g->kind]);
        }
    }
    if (changed) {
        d->coloc_dirty = 1;
        carma_sched_set_coloc(&d->sched, d->coloc, d->nkinds);
    }
}

/* The corrections stored for this server's GPU kinds. A kind with none takes the table
 * stored before carmad kept one per kind (kind "", store v18), learnt on this server's
 * GPUs; those rows go at the next flush, once each kind has stored its own. A table
 * refused (a row no carmad writes) is said and learnt anew; it goes at the first flush.
 * A kind past the scheduler's CARMA_SCHED_COLOC_KINDS is neither read nor stored
 * (coloc_nkinds): auto predicts it by the model alone, and its rows stay. */
static void coloc_load(struct carmad *d)
{
    struct carma_coloc_learnt shared;
    struct carma_err err = {{0}};
    int nshared = carma_store_coloc_get(d->store, "", &shared, &err);
    if (nshared < 0)
        dlog(d, LOG_WARNING, "%s; it is learnt anew", err.msg);
    d->coloc_dirty = d->coloc_shared_rows = nshared != 0;
    for (size_t k = 0; k < coloc_nkinds(d); k++) {
        int n = carma_store_coloc_get(d->store, d->kinds[k], &d->coloc[k], &err);
        if (n < 0) {
            dlog(d, LOG_WARNING, "%s; it is learnt anew", err.msg);
            d->coloc_dirty = 1;
        } else if (n == 0 && nshared > 0) {
            d->coloc[k] = shared;
        }
        for (unsigned m = 0; m < 2; m++)
            for (unsigned kn = 0; kn < CARMA_COLOC_KNOTS; kn++)
                d->coloc_logged[k][m][kn] = carma_coloc_factor(&d->coloc[k], (enum carma_sharing)m,
                                                               (float)kn * CARMA_COLOC_KNOT_STEP);
    }
    carma_sched_set_coloc(&d->sched, d->coloc, d->nkinds);
}

static int cancel_one(struct carmad *d, uint32_t i, struct carma_err *err);

/* Ends, as carma cancel does (SIGTERM, SIGKILL after kill_grace), each running attempt
 * past its time limit (carma submit --time-limit), counted in wall time from the
 * attempt's start as carmad recorded it (kept in the store: a restarted carmad keeps the
 * deadline, and ends an attempt whose limit passed while it was down at its first look).
 * Run on carmad's timer and once after reconciliation; it walks the jobs only once the
 * earliest known deadline (tl_next) has passed, then sets the next one. A job whose cancel
 * is recorded is left alone (its shepherd was told, or is told again when carmad
 * re-adopts it); one cancelled here is looked at again on the next tick, where a commit
 * that failed since (which takes the cancel back) gets it cancelled anew. */
static void timelimit_tick(struct carmad *d)
{
    double now = now_s();
    if (!(d->tl_next > 0) || now < d->tl_next)
        return;
    double next = 0;
    for (uint32_t i = 0; i < d->cap; i++) {
        struct djob *dj = &d->dj[i];
        if (!dj->used || !dj->rec.time_limit_s || d->sj[i].state != CARMA_JOB_RUNNING ||
            !(dj->rec.start_s > 0) || dj->rec.cancel_requested || dj->end_final)
            continue;
        double dl = dj->rec.start_s + dj->rec.time_limit_s;
        if (now < dl) {
            if (!(next > 0) || dl < next)
                next = dl;
            continue;
        }
        dj->timed_out = 1;
        next = now; /* the next tick looks again (above) */
        char lim[32];
        carma_duration_format(lim, sizeof lim, dj->rec.time_limit_s);
        struct carma_err err = {{0}};
        int rc = cancel_one(d, i, &err);
        if (rc < 0) {
            dj->timed_out = 0;
            dlog(d, LOG_ERR, "job %llu: time limit %s reached, not ended: %s",
                 (unsigned long long)dj->rec.id, lim, err.msg);
            continue;
        }
        dlog(d, LOG_INFO, "job %llu: attempt %u: time limit %s reached, ending it",
             (unsigned long long)dj->rec.id, dj->rec.attempts, lim);
    }
    d->tl_next = next;
}

static void monitor_tick(struct carmad *d)
{
    if (!d->have_mon)
        return;
    double now = now_s();
    d->tick_s = now;
    carma_mon_tick(&d->mon, now);
    after_tick(d, now);
    coloc_watch(d, now);
    if (d->cfg.order_fair)
        fair_accrue(d, now);
    d->publish = 1;
}

static int open_backend(struct carmad *d, struct carma_err *err)
{
    const char *spec = d->o.gpus ? d->o.gpus : (d->cfg.gpus[0] ? d->cfg.gpus : NULL);
    const char *lib = d->o.nvml_lib ? d->o.nvml_lib : getenv("CARMA_NVML_LIB");
    int rc;
    /* carmad, alone among the backends' users, waits for Xid events */
    struct carma_gpu_nvml_opts nvo = {.lib = lib, .xid_events = 1};
    if (!spec) {
        struct carma_err e2;
        rc = carma_gpu_open_nvml_opts(&d->gb, &nvo, &e2);
        if (rc == 0) {
            spec = "nvml";
        } else if (rc != -ENOENT) {
            /* the library loads, so this is a GPU server whose driver does not answer (not
             * loaded yet, a driver/library version mismatch after an upgrade): jobs placed on
             * simulated GPUs would run with no GPU at all. Failing lets a service manager
             * start carmad again once the driver answers. */
            return carma_err_set(err, rc,
                                 "%s (NVIDIA's library loads but NVML does not start: carmad does "
                                 "not put jobs on simulated GPUs here; --gpus sim:SPEC for them)",
                                 e2.msg);
        } else {
            dlog(d, LOG_WARNING, "no NVIDIA driver (%s): using simulated GPUs sim:4xa100-40gb",
                 e2.msg);
            rc = carma_gpu_open_sim(&d->gb, "4xa100-40gb", err);
            spec = "sim:4xa100-40gb";
        }
    } else if (!strcmp(spec, "nvml")) {
        rc = carma_gpu_open_nvml_opts(&d->gb, &nvo, err);
    } else if (!strncmp(spec, "sim:", 4)) {
        rc = carma_gpu_open_sim(&d->gb, spec + 4, err);
    } else {
        return carma_err_set(err, -EINVAL, "--gpus %s: 'nvml' or 'sim:SPEC' expected", spec);
    }
    if (rc)
        return rc;
    d->have_gb = 1;
    unsigned n = 0;
    if ((rc = d->gb.ops->count(&d->gb, &n)))
        return carma_err_set(err, rc, "%s: cannot count GPUs", spec);
    if (n == 0 || n > CARMA_GPU_MAX)
        return carma_err_set(err, -ENODEV, "%s: %u GPUs", spec, n);
    d->ngpus = n;
    d->gpus = calloc(n, sizeof *d->gpus);
    d->gs = calloc(n, sizeof *d->gs);
    d->kinds = calloc(n, sizeof *d->kinds);
    d->dev_kinds = calloc(n, sizeof *d->dev_kinds);
    d->coloc = calloc(n, sizeof *d->coloc);
    d->coloc_logged = calloc(n, sizeof *d->coloc_logged);
    if (!d->gpus || !d->gs || !d->kinds || !d->dev_kinds || !d->coloc || !d->coloc_logged)
        return carma_err_set(err, -ENOMEM, "out of memory");
    for (unsigned i = 0; i < n; i++) {
        if ((rc = d->gb.ops->info(&d->gb, i, &d->gs[i].info)))
            return carma_err_set(err, rc, "%s: GPU %u: no information", spec, i);
        d->gs[i].db_id = -1;
        d->gs[i].pci_ok = carmad_kmsg_pci_parse(d->gs[i].info.pci_bus_id, &d->gs[i].pci_domain,
                                                &d->gs[i].pci_bus, &d->gs[i].pci_device) == 0;
        carmad_gpu_kind(d->gs[i].info.name, d->gs[i].info.mem_total_bytes >> 20,
                        !strncmp(spec, "sim:", 4), d->gs[i].kind, sizeof d->gs[i].kind);
        size_t k = 0;
        while (k < d->nkinds && strcmp(d->kinds[k], d->gs[i].kind))
            k++;
        if (k == d->nkinds) {
            d->dev_kinds[k] = sim_gpu_kind_of_device(d->gs[i].info.name,
                                                     d->gs[i].info.mem_total_bytes >> 20);
            d->kinds[d->nkinds++] = d->gs[i].kind;
        }
        uint8_t sharing = carmad_config_sharing(&d->cfg, i, d->gs[i].info.uuid);
        carma_gpu_init(&d->gpus[i], d->gs[i].info.mem_total_bytes >> 20, d->cfg.window,
                       (enum carma_sharing)sharing);
        d->gpus[i].kind = (uint16_t)k;
        /* an island past the scheduler's range is a backend's error: as if unknown */
        int isl = d->gs[i].info.island;
        d->gpus[i].island = isl >= 0 && isl < (int)n ? (uint16_t)isl : 0;
    }
    /* A [sharing] entry that names no GPU is a typo that would leave a GPU on the
     * default: refused. */
    unsigned line = 0;
    const char *unnamed = carmad_config_sharing_unnamed(&d->cfg, &line);
    if (unnamed)
        return carma_err_at(err, d->o.config_path ? d->o.config_path : "configuration", line,
                            "[sharing] '%s' names no GPU of this server (an index 0 to %u, or "
                            "a UUID that nvidia-smi -L shows)",
                            unnamed, n - 1);
    /* Each kind once, with its count: "1 x A100 (40960 MiB), 1 x V100 (32768 MiB)". */
    char kinds[512] = "";
    size_t kl = 0;
    for (unsigned i = 0; i < n && kl < sizeof kinds - 1; i++) {
        int seen = 0;
        unsigned count = 0;
        for (unsigned j = 0; j < n; j++) {
            int same = !strcmp(d->gs[j].info.name, d->gs[i].info.name) &&
                       d->gs[j].info.mem_total_bytes == d->gs[i].info.mem_total_bytes;
            seen |= same && j < i;
            count += same;
        }
        if (!seen)
            kl += (size_t)snprintf(kinds + kl, sizeof kinds - kl, "%s%u x %s (%llu MiB)",
                                   kl ? ", " : "", count, d->gs[i].info.name,
                                   (unsigned long long)(d->gs[i].info.mem_total_bytes >> 20));
    }
    dlog(d, LOG_INFO, "%u GPU%s from %s: %s", n, n == 1 ? "" : "s", d->gb.ops->name, kinds);
    return 0;
}

/* ---- the store side of job changes ---- */

static int store_tx(struct carmad *d, struct carma_err *err)
{
    if (carma_store_in_tx(d->store))
        return 0;
    return carma_store_begin(d->store, err);
}

/* Writes job i's record after the scheduler changed it. */
static int save_job(struct carmad *d, uint32_t i, struct carma_err *err)
{
    struct carma_job_rec *r = &d->dj[i].rec;
    const struct carma_job *j = &d->sj[i];
    r->state = j->state;
    r->attempts = j->attempts;
    r->bound_mib = j->bound_mib;
    r->peak_mib = j->peak_mib;
    if (!ref_requirement(d)) /* else the scheduler's is the bound (sj_from_rec): --mem stays */
        r->mem_mib = j->mem_mib;
    r->exclusive = j->exclusive;
    int rc = store_tx(d, err);
    if (!rc)
        rc = carma_store_job_update(d->store, r, err);
    /* final: its environment (tokens) served only to launch its attempts */
    if (!rc && r->state != CARMA_JOB_QUEUED && r->state != CARMA_JOB_RUNNING)
        rc = carma_store_job_forget_env(d->store, r->id, err);
    return rc;
}

/* ---- attempt end ---- */

/* Writes job i's pending end (dj->end) and its record into the open transaction (begun
 * if none is), all or nothing: on failure the transaction holds none of it (a commit
 * never stores an attempt ended with its job still running), and the caller keeps the
 * end to write again. */
static int end_write(struct carmad *d, uint32_t i, struct carma_err *err)
{
    struct djob *dj = &d->dj[i];
    struct carma_err e;
    if (!err)
        err = &e;
    uint64_t id = dj->rec.id;
    uint32_t n = dj->end.n;
    int rc = store_tx(d, err);
    if (rc)
        return rc;
    if ((rc = carma_store_savepoint(d->store, err)))
        return rc;
    rc = carma_store_attempt_end(d->store, id, n, dj->end.end_s, carma_outcome_name(dj->end.o),
                                 dj->end.exit_code, dj->end.signal, dj->end.peak_mib,
                                 dj->end.peak_partial, dj->end.reason, err);
    if (!rc)
        rc = carma_store_usage_put(d->store, id, n, dj->end.gpu_s, dj->end.energy_j, dj->end.smact,
                                   err);
    if (!rc && d->test_end_update_fails > 0) {
        d->test_end_update_fails--;
        rc = carma_err_set(err, -ENOSPC, "test: the write of a job's end fails at its job's row");
    }
    if (!rc)
        rc = save_job(d, i, err);
    /* last: the one write not to repeat (a running mean) runs once its transaction holds
     * the rest; a sample the store refuses outright is dropped, not retried forever */
    if (!rc && dj->end.profile) {
        rc = carma_store_profile_add(d->store, dj->sig, dj->end.smact, dj->end.smocc, dj->end.drama,
                                     dj->end.end_s, err);
        if (rc == -EINVAL) {
            dlog(d, LOG_WARNING, "job %llu: its solo profile is not kept: %s",
                 (unsigned long long)id, err->msg);
            dj->end.profile = 0;
            rc = 0;
        }
    }
    if (!rc)
        rc = carma_store_release(d->store, err);
    if (rc)
        carma_store_rollback_to(d->store);
    return rc;
}

/* After a commit (ok) or its failure: what the transaction held is stored, or is to be
 * written again. A final end's slot goes once stored. */
static void store_settle(struct carmad *d, int ok)
{
    for (uint32_t i = 0; i < d->cap; i++) {
        struct djob *dj = &d->dj[i];
        if (!dj->used)
            continue;
        if (dj->pid_in_tx) {
            dj->pid_in_tx = 0;
            dj->pid_dirty = !ok;
        }
        if (dj->xid_in_tx) {
            dj->xid_in_tx = 0;
            dj->xid_dirty |= !ok;
        }
        if (dj->seen_in_tx) {
            dj->seen_in_tx = 0;
            dj->seen_dirty |= !ok;
        }
        if (dj->end_in_tx) {
            dj->end_in_tx = 0;
            if (ok) {
                dj->end_dirty = 0;
                if (dj->end_final) {
                    slot_free(d, i);
                    d->publish = 1;
                }
            }
        }
    }
}

/* At now: a new minute (or a clock that stepped back) starts the budget again, and
 * *missed gets the lines the minute before did not log (else 0). Then 1 when a line of
 * class cls (0 or 1) may be logged, 2 when it is the last its minute allows, or 0 when
 * not: n more lines counted as not logged. */
static int line_budget_take(struct line_budget *b, double now, int cls, uint64_t n,
                            uint64_t *missed)
{
    *missed = 0;
    if (now < b->t0 || now - b->t0 >= 60) {
        *missed = b->unlogged;
        b->t0 = now;
        b->used[0] = b->used[1] = 0;
        b->unlogged = 0;
    }
    if (b->used[cls] >= XID_LOG_PER_MIN) {
        b->unlogged += n;
        return 0;
    }
    return ++b->used[cls] == XID_LOG_PER_MIN ? 2 : 1;
}

/* ---- STATE/drained (daemon/drained.h) ---- */

static void drained_bad(void *ctx, size_t line, const char *why)
{
    dlog(ctx, LOG_WARNING, "%s/drained:%zu: %s: ignored", ((struct carmad *)ctx)->state_dir, line,
         why);
}

/* At start: the GPUs an Xid or carma drain drained before stay drained (until carma
 * undrain removes their lines). */
static void drained_load(struct carmad *d)
{
    d->drained = calloc(CARMAD_DRAINED_MAX, sizeof *d->drained);
    if (!d->drained)
        return;
    int fd = openat(d->statefd, "drained", O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno != ENOENT)
            dlog(d, LOG_WARNING, "%s/drained: %s: no GPU kept drained from before", d->state_dir,
                 strerror(errno));
        return;
    }
    static char text[CARMAD_DRAINED_FILE_MAX];
    struct stat st;
    ssize_t len = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, text, sizeof text) : -1;
    close(fd);
    if (len < 0) {
        dlog(d, LOG_WARNING, "%s/drained: not a readable file: no GPU kept drained from before",
             d->state_dir);
        return;
    }
    carmad_drained_parse(text, (size_t)len, d->drained, CARMAD_DRAINED_MAX, &d->ndrained,
                         drained_bad, d);
    for (size_t k = 0; k < d->ndrained; k++) {
        size_t g = 0;
        while (g < d->ngpus && strcmp(d->gs[g].info.uuid, d->drained[k].uuid))
            g++;
        if (g == d->ngpus) {
            /* kept: a GPU sent for repair comes back drained, to be undrained once checked */
            dlog(d, LOG_NOTICE,
                 "%s/drained: GPU %s is not this server's: its line is kept, and it is "
                 "drained if it comes back (%s)",
                 d->state_dir, d->drained[k].uuid, d->drained[k].reason);
            continue;
        }
        char why[sizeof d->mon.g[g].drain_reason];
        snprintf(why, sizeof why, "%.200s before carmad restarted", d->drained[k].reason);
        carma_mon_drain(&d->mon, g, why);
    }
}

/* Writes STATE/drained from d->drained (a new file renamed over the old, synced).
 * Returns 0, or a negative errno with err naming the file and the call that failed. */
static int drained_save(struct carmad *d, struct carma_err *err)
{
    static char text[CARMAD_DRAINED_FILE_MAX];
    if (d->ndrained && !carmad_drained_format(d->drained, d->ndrained, text, sizeof text))
        /* cannot be: the buffer holds the most lines of the longest */
        return carma_err_set(err, -E2BIG, "%s/drained: %zu lines: too long to write", d->state_dir,
                             d->ndrained);
    int rc = carma_file_write_atomic(d->state_dir, "drained", d->ndrained ? text : "", 1, err);
    d->drained_unsaved = rc < 0;
    return rc;
}

/* Keeps GPU gi drained over restarts: its line added to STATE/drained unless one is
 * there, and the file written when the line is new or the last write failed (the line
 * may be missing from it). Failures are logged (and named in err, which may be NULL):
 * the drain holds until then (the line, kept, is written with the next). Returns 0 or a
 * negative errno. */
static int drained_add(struct carmad *d, size_t gi, const char *reason, struct carma_err *err)
{
    struct carma_err own = {{0}};
    if (!err)
        err = &own;
    int rc = d->drained ? carmad_drained_add(d->drained, &d->ndrained, CARMAD_DRAINED_MAX,
                                             d->gs[gi].info.uuid, reason)
                        : -ENOMEM;
    if (rc < 0)
        carma_err_set(err, rc, "%s/drained: %s", d->state_dir, strerror(-rc));
    if (rc > 0 || (rc == 0 && d->drained_unsaved))
        rc = drained_save(d, err);
    if (rc < 0)
        dlog(d, LOG_ERR, "%s: GPU %zu stays drained until carmad restarts only", err->msg, gi);
    return rc < 0 ? rc : 0;
}

/* GPU gi, drained already for a reason that asks no reset (by hand, stopped answering),
 * reported an Xid that needs one (why): the Xid's reason leads its drain in carma gpus and
 * STATE/drained, so that an undrain once the first reason is dealt with does not put a
 * GPU that needs a reset back in service unawares. A GPU drained by an Xid keeps its
 * first; a lost one is not asked again. */
static void drained_graver(struct carmad *d, size_t gi, const char *why)
{
    const char *was = d->mon.g[gi].drain_reason;
    if (!strncmp(was, "reported Xid ", 13) || carma_mon_lost(&d->mon, gi))
        return;
    char r[CARMAD_DRAINED_REASON];
    snprintf(r, sizeof r, "%.96s; drained before: %.120s", why, was);
    carma_mon_redrain(&d->mon, gi, r);
    if (d->drained)
        carmad_drained_remove(d->drained, &d->ndrained, d->gs[gi].info.uuid);
    drained_add(d, gi, r, NULL);
    d->dirty = 1;
}

/* Whether job slot i runs as far as an Xid goes. An attempt that ended while carmad was
 * down holds its GPUs until its end is handled (recon_ends) but is not running: NVML tells
 * carmad only of the Xids after its restart, none of which can have struck it. */
static int xid_running(const struct carmad *d, uint32_t i)
{
    return d->dj[i].used && d->sj[i].state == CARMA_JOB_RUNNING && !d->dj[i].ended_down;
}

/* The GPUs an application's Xid on GPU g reaches. Under MPS (Volta and later) a client's
 * fatal fault is raised in every client of each GPU the faulting client used, and the
 * server waits for all of them to end; neither NVML's event nor the kernel's line says
 * reliably which client faulted (attempt_end). So any carma job that is a client of a
 * GPU reached may be the culprit, and each of its MPS GPUs is reached too, until none is
 * new (multi-GPU jobs chain; a foreign process's other GPUs are not known). A time-sliced
 * GPU is never reached (a fault there ends its own context only), nor is any GPU but g
 * when g is not shared by MPS or the Xid is no application's (spread 0). order[h]: 1 for
 * g, 2, 3, ... in the order reached, 0 not reached; via[h]: the slot of the job through
 * whose GPUs h was reached, a job on a GPU reached before h. */
static void xid_reach(const struct carmad *d, unsigned g, int spread, uint32_t *order,
                      uint32_t *via)
{
    memset(order, 0, d->ngpus * sizeof *order);
    order[g] = 1;
    unsigned n = 1;
    if (!spread || d->gpus[g].sharing != CARMA_SHARING_MPS)
        return;
    for (int grew = 1; grew;) {
        grew = 0;
        for (uint32_t i = 0; i < d->cap; i++) {
            if (!xid_running(d, i))
                continue;
            const struct carma_job *j = &d->sj[i];
            uint16_t k = 0;
            while (k < j->nplaced && !(j->gpu[k] < d->ngpus && order[j->gpu[k]]))
                k++;
            if (k == j->nplaced)
                continue;
            for (k = 0; k < j->nplaced; k++) {
                unsigned h = j->gpu[k];
                if (h < d->ngpus && !order[h] && d->gpus[h].sharing == CARMA_SHARING_MPS) {
                    order[h] = ++n;
                    via[h] = i;
                    grew = 1;
                }
            }
        }
    }
}

/* Appends `item` to the comma-separated list text[0..*len) of size `size`, whole or, once
 * one does not fit, ", ..." (*cut set): a cut id would name another job. */
static void xid_list_add(char *text, size_t size, size_t *len, int *cut, const char *item)
{
    size_t il = strlen(item) + (*len ? 2 : 0);
    if (*cut)
        return;
    if (*len + il + 6 < size) {
        snprintf(text + *len, size - *len, "%s%s", *len ? ", " : "", item);
        *len += il;
    } else {
        snprintf(text + *len, size - *len, ", ...");
        *cut = 1;
    }
}

/* One Xid: counted on its GPU, logged, marked on the running attempts there (their end
 * reads it), and a GPU that needs a reset drained. An application's Xid on a GPU shared
 * by MPS is marked also on the running attempts of the GPUs it reaches (xid_reach), named
 * with the job through whose GPUs it reached them. */
static void xid_one(struct carmad *d, const struct carma_gpu_xid *x, double now)
{
    if (x->gpu >= d->ngpus)
        return;
    const char *what;
    enum carma_xid_kind kind = carma_xid_kind(x->xid, &what);
    uint32_t count = x->count ? x->count : 1;
    carma_mon_xid(&d->mon, x->gpu, x->xid, count, now);
    uint32_t order[CARMA_GPU_MAX], via[CARMA_GPU_MAX];
    xid_reach(d, x->gpu, kind == CARMA_XID_APP, order, via);
    /* Under MPS one client's fault ends every client of the GPUs it reaches, and neither
     * this event nor the kernel's line says reliably whose it was (attempt_end): shared
     * when they hold more than one client. Two carma jobs there are on one GPU together
     * (the GPUs reached beyond x->gpu are those of the jobs on it, and theirs), so the
     * GPUs' counts tell. */
    int shared = 0;
    if (d->gpus[x->gpu].sharing == CARMA_SHARING_MPS)
        for (size_t h = 0; h < d->ngpus; h++)
            if (order[h] && (d->gpus[h].njobs > 1 || d->gpus[h].nforeign > 0))
                shared = 1;
    char jobs[128] = "", reached[256] = "";
    size_t jl = 0, rl = 0;
    int jcut = 0, rcut = 0;
    for (uint32_t i = 0; i < d->cap; i++) {
        struct djob *dj = &d->dj[i];
        if (!xid_running(d, i))
            continue;
        /* where it was reached first: on x->gpu itself, or through another job's GPUs */
        uint32_t first = 0;
        unsigned fg = 0;
        for (uint16_t k = 0; k < d->sj[i].nplaced; k++) {
            unsigned h = d->sj[i].gpu[k];
            if (h < d->ngpus && order[h] && (!first || order[h] < first)) {
                first = order[h];
                fg = h;
            }
        }
        if (!first)
            continue;
        uint64_t through = first == 1 ? 0 : d->dj[via[fg]].rec.id;
        /* An application's Xid that came while the GPU was shared by MPS stands against a
         * later one of no shared GPU within the window: the clients it ended are torn down
         * after it (Xid 45 on their GPUs, one of a multi-GPU job's where it runs alone, or
         * on the same GPU once its co-runner's end left it alone), and taking that one
         * would fail as the job's own the end the shared one caused. */
        int keep = dj->xid_seen && kind == CARMA_XID_APP && dj->xid_kind == CARMA_XID_APP &&
                   dj->xid_shared && !shared && now - dj->xid_t <= d->xid_fault_window_s;
        if (!keep && (!dj->xid_seen || kind >= dj->xid_kind)) { /* the gravest, its latest */
            dj->xid_seen = 1;
            dj->xid_kind = kind;
            dj->xid = x->xid;
            dj->xid_gpu = x->gpu;
            dj->xid_t = now;
            dj->xid_shared = shared;
            dj->xid_via = through;
            dj->xid_dirty = 1;
        }
        char item[80];
        if (!through) {
            snprintf(item, sizeof item, "%llu", (unsigned long long)dj->rec.id);
            xid_list_add(jobs, sizeof jobs, &jl, &jcut, item);
        } else {
            snprintf(item, sizeof item, "%llu through job %llu's GPUs",
                     (unsigned long long)dj->rec.id, (unsigned long long)through);
            xid_list_add(reached, sizeof reached, &rl, &rcut, item);
        }
    }
    char inst[48] = "", times[32] = "";
    if (x->gpu_instance != UINT32_MAX)
        snprintf(inst, sizeof inst, " in GPU instance %u", x->gpu_instance);
    if (count > 1)
        snprintf(times, sizeof times, " %u times", count);
    struct gpu_state *gs = &d->gs[x->gpu];
    uint64_t missed;
    int ok = line_budget_take(&gs->xid_lines, now, kind >= CARMA_XID_FAULT, count, &missed);
    if (missed)
        dlog(d, LOG_WARNING, "GPU %u (%s): %llu more Xids in the minute before, not logged", x->gpu,
             gs->info.uuid, (unsigned long long)missed);
    if (ok)
        dlog(d, kind == CARMA_XID_OTHER ? LOG_NOTICE : LOG_WARNING,
             "GPU %u (%s): Xid %llu (%s)%s%s; jobs on it: %s%s%s%s", x->gpu, gs->info.uuid,
             (unsigned long long)x->xid, what, inst, times, jl ? jobs : "none",
             rl ? "; under MPS also " : "", reached,
             ok == 2 ? " (the next this minute are counted only)" : "");
    if (kind == CARMA_XID_RESET) {
        char why[96];
        snprintf(why, sizeof why, "reported Xid %llu (%s)", (unsigned long long)x->xid, what);
        if (carma_mon_drain(&d->mon, x->gpu, why)) {
            d->dirty = 1;
            drained_add(d, x->gpu, why, NULL);
        } else {
            drained_graver(d, x->gpu, why);
        }
    }
    d->publish = 1;
}

/* Takes the Xids the backend's event thread queued (each kind once, with its count).
 * Called when its descriptor polls readable, and before a job's end is classified, so
 * that the Xid the driver reported before the job's failure reached carmad is read first.
 * At most XID_TAKE_ROUNDS batches a call: the loop goes on, the descriptor stays readable. */
static void take_xids(struct carmad *d)
{
    if (!d->have_gb || !d->have_mon || !d->gb.ops->xids)
        return;
    struct carma_gpu_xid x[32];
    size_t n;
    double now = now_s();
    unsigned rounds = 0;
    do {
        uint64_t lost = 0;
        n = d->gb.ops->xids(&d->gb, x, sizeof x / sizeof x[0], &lost);
        if (lost)
            dlog(d, LOG_WARNING, "%llu Xid events lost: more kinds came than carmad took in time",
                 (unsigned long long)lost);
        for (size_t k = 0; k < n; k++)
            xid_one(d, &x[k], now);
    } while (n == sizeof x / sizeof x[0] && ++rounds < XID_TAKE_ROUNDS);
}

/* ---- the kernel's Xid lines (daemon/kmsg.h) ---- */

/* One NVRM Xid record of the kernel's: the process it names, mapped to its job (the live
 * session lookup, else what the monitor listed on that GPU lately), kept on its GPU for
 * the ends of the attempts there (attempt_end). Records without a pid, or of a GPU carmad
 * does not know by its PCI location, tell nothing more than NVML's event. */
static void kmsg_xid(struct carmad *d, const struct carmad_kmsg_xid *x, double now)
{
    size_t g = 0;
    while (g < d->ngpus && !(d->gs[g].pci_ok && d->gs[g].pci_domain == x->domain &&
                             d->gs[g].pci_bus == x->bus && d->gs[g].pci_device == x->device))
        g++;
    if (g == d->ngpus || x->pid <= 0)
        return;
    struct gpu_state *gs = &d->gs[g];
    struct carmad_kmsg_blame b = {.t = now, .xid = x->xid, .pid = x->pid};
    int si = slot_of_pid(d, x->pid);
    if (si >= 0)
        b.job = d->dj[si].rec.id;
    else if (mps_server_here(d, (unsigned)g, x->pid))
        b.job = CARMAD_KMSG_SERVER;
    else if (!carmad_kmsg_pids_find(&gs->pids, x->pid, now, KMSG_PID_AGE_S, &b.job))
        b.job = 0;
    /* A line on the MPS server names no client (before Volta its clients share its
     * context): it tells nothing NVML's event did not, and blamed on no carma job it would
     * make every job failing there, the culprit too, a GPU error to retry. */
    if (b.job != CARMAD_KMSG_SERVER)
        carmad_kmsg_blame_add(&gs->blames, &b);
    uint64_t missed;
    int ok = line_budget_take(&gs->kmsg_lines, now, 0, 1, &missed);
    if (missed)
        dlog(d, LOG_WARNING,
             "GPU %zu (%s): %llu more Xid lines of the kernel's in the minute before, not logged",
             g, gs->info.uuid, (unsigned long long)missed);
    if (!ok)
        return;
    const char *what;
    carma_xid_kind(x->xid, &what);
    char whose[48];
    if (b.job == CARMAD_KMSG_SERVER)
        snprintf(whose, sizeof whose, "the MPS server: no client named");
    else if (b.job)
        snprintf(whose, sizeof whose, "job %llu", (unsigned long long)b.job);
    else
        snprintf(whose, sizeof whose, "no carma job's");
    dlog(d, LOG_NOTICE, "GPU %zu (%s): the kernel puts Xid %llu (%s) on pid %ld (%s)", g,
         gs->info.uuid, (unsigned long long)x->xid, what, (long)x->pid, whose);
}

/* Reads the kernel's log: each whole line that starts a record is parsed (continuation
 * lines, which start with a space, say nothing of an Xid's process). /dev/kmsg gives one
 * record a read; a FIFO (CARMA_TEST_KMSG) a stream, kept until its lines are whole. At
 * most KMSG_READS reads a call. EPIPE: records were overwritten before they were read,
 * the next comes; any other error ends the reading, said once. */
static void take_kmsg(struct carmad *d)
{
    if (d->kmsg_fd < 0)
        return;
    double now = now_s();
    for (unsigned r = 0; r < KMSG_READS; r++) {
        ssize_t n =
            read(d->kmsg_fd, d->kmsg_buf + d->kmsg_len, CARMAD_KMSG_RECORD_MAX - d->kmsg_len);
        if (n < 0 && (errno == EINTR || errno == EPIPE))
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0) {
            dlog(d, LOG_WARNING, "the kernel's log: %s: no longer read",
                 n < 0 ? strerror(errno) : "end of file");
            epoll_ctl(d->epfd, EPOLL_CTL_DEL, d->kmsg_fd, NULL);
            close(d->kmsg_fd);
            d->kmsg_fd = -1;
            return;
        }
        d->kmsg_len += (size_t)n;
        size_t at = 0;
        char *nl;
        while ((nl = memchr(d->kmsg_buf + at, '\n', d->kmsg_len - at))) {
            size_t end = (size_t)(nl - d->kmsg_buf) + 1;
            struct carmad_kmsg_xid x;
            if (!d->kmsg_skip && d->kmsg_buf[at] != ' ' &&
                carmad_kmsg_parse(d->kmsg_buf + at, end - at, &x))
                kmsg_xid(d, &x, now);
            d->kmsg_skip = 0;
            at = end;
        }
        memmove(d->kmsg_buf, d->kmsg_buf + at, d->kmsg_len - at);
        d->kmsg_len -= at;
        if (d->kmsg_len == CARMAD_KMSG_RECORD_MAX) { /* a line longer than any record */
            d->kmsg_len = 0;
            d->kmsg_skip = 1;
        }
    }
}

static int add_fd(struct carmad *d, int fd, uint64_t tag);

/* Opens the kernel's log at its end (older records are not this carmad's business): root
 * can; otherwise (or dmesg_restrict) carmad goes without it, as before. Not at all when
 * no GPU has a PCI location (simulated GPUs, DCGM): no line could be put on one. */
static void kmsg_open(struct carmad *d)
{
    size_t g = 0;
    while (g < d->ngpus && !d->gs[g].pci_ok)
        g++;
    if (g == d->ngpus)
        return;
    const char *test = getenv("CARMA_TEST_KMSG");
    const char *path = test && *test ? test : KMSG_PATH;
    /* a test's FIFO is opened read-write, so that it never reads an end of file between
     * the writers the test runs */
    int fd = open(path, (test && *test ? O_RDWR : O_RDONLY) | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        dlog(d, LOG_INFO,
             "%s: %s: the kernel's Xid lines not read (MPS clients' faults are "
             "not told apart from their co-runners')",
             path, strerror(errno));
        return;
    }
    if (!test || !*test)
        lseek(fd, 0, SEEK_END);
    d->kmsg_buf = malloc(CARMAD_KMSG_RECORD_MAX);
    if (!d->kmsg_buf || add_fd(d, fd, TAG(TAG_KMSG, 0)) < 0) {
        dlog(d, LOG_WARNING, "%s: %s: the kernel's Xid lines not read", path,
             d->kmsg_buf ? strerror(errno) : "out of memory");
        free(d->kmsg_buf);
        d->kmsg_buf = NULL;
        close(fd);
        return;
    }
    d->kmsg_fd = fd;
    dlog(d, LOG_INFO, "%s: the kernel's Xid lines read", path);
}

/* Whether the kernel's Xid lines put an application Xid on another's process, not on the
 * job's own, on one of job i's GPUs during its attempt ending at end_s (carmad_kmsg_judge):
 * *other that. GPUs shared by MPS are not read: there the pid the kernel names is not
 * always the client that faulted (docs/gpu.md, the H200). */
static int kmsg_other(struct carmad *d, uint32_t i, double end_s, struct carmad_kmsg_blame *other)
{
    int r = 0;
    for (uint16_t k = 0; k < d->sj[i].nplaced; k++) {
        unsigned g = d->sj[i].gpu[k];
        if (g >= d->ngpus || d->gpus[g].sharing == CARMA_SHARING_MPS)
            continue;
        struct carmad_kmsg_blame b;
        enum carmad_kmsg_verdict v = carmad_kmsg_judge(
            &d->gs[g].blames, d->dj[i].rec.id, d->sj[i].start_s, end_s, d->xid_fault_window_s, &b);
        if (v == CARMAD_KMSG_SELF)
            return 0;
        if (v == CARMAD_KMSG_OTHER) {
            r = 1;
            *other = b;
        }
    }
    return r;
}

/* What carmad kept of a job's attempt in memory, cleared once the attempt ended or was
 * undone: its peak, energy, solo profile, the ticks it ran alone, its Xid mark. */
static void attempt_forget(struct djob *dj)
{
    dj->peak_mib = 0;
    dj->peak_partial = 0;
    dj->peak_ref = 0;
    dj->peak_held = 0;
    dj->att_energy_j = 0;
    dj->gpus_gone = 0;
    dj->alone_ticks = 0;
    dj->mem_now_mib = 0;
    dj->solo_smact = dj->solo_smocc = dj->solo_drama = -1;
    dj->solo_nsm = dj->solo_noc = dj->solo_ndr = 0;
    dj->solo_unseen = 0;
    dj->gpu_seen_s = -1;
    dj->xid_seen = 0;
    dj->xid_dirty = 0;
    dj->seen_dirty = 0;
}

/* Ends the running attempt of job i: classification, the scheduler, the store. xin: its
 * exit status; NULL when none was recorded, for the reason none_why (NULL: its shepherd
 * ended without one). */
static void attempt_end(struct carmad *d, uint32_t i, const struct carma_exit *xin,
                        const char *none_why, double end_s)
{
    struct djob *dj = &d->dj[i];
    struct carma_exit x = {0};
    int have = xin != NULL;
    if (have)
        x = *xin;
    else /* no status: a cancel recorded is what ended it (with one, its shepherd says
            whether it stopped the job on a cancel or the job finished first) */
        x.cancelled = dj->rec.cancel_requested;
    char dir[PATH_MAX], path[PATH_MAX + 16], unread[96] = "";
    uint32_t n = dj->rec.attempts;
    attempt_dir(d, dj->rec.id, n, dir, sizeof dir);
    enum carma_outcome o;
    const char *why;
    take_xids(d);
    take_kmsg(d);
    if (!have) {
        o = x.cancelled ? CARMA_OUTCOME_CANCELLED : CARMA_OUTCOME_LOST;
        why = none_why ? none_why : "the shepherd ended without recording an exit status";
    } else {
        static char tail[CARMA_CLASSIFY_TAIL];
        snprintf(path, sizeof path, "%s/stderr", dir);
        long len = carma_classify_read_tail(path, tail, sizeof tail);
        o = carma_classify(&x, tail, len > 0 ? (size_t)len : 0, &why);
        if (dj->launch_why) /* (its shepherd never ran it: its stderr is empty) */
            why = dj->launch_why;
        if (o == CARMA_OUTCOME_FAILED && len < 0 && len != -ENOENT) {
            /* its OOM message, if any, was not seen (a lease its user holds on the log:
             * carmad does not wait for it) */
            snprintf(unread, sizeof unread, "; stderr not read for an OOM message: %s",
                     len == -EWOULDBLOCK ? "another process holds a lease on it"
                                         : strerror((int)-len));
        }
    }
    /* A failure on a GPU whose driver reported a fault of the GPU is not the job's: retried
     * (its bound stands). An application Xid is named in its reason. */
    char xid_why[224], xid_note[224] = "", through[64] = "";
    if (dj->xid_seen && dj->xid_via)
        snprintf(through, sizeof through, " through job %llu's GPUs under MPS",
                 (unsigned long long)dj->xid_via);
    struct carmad_kmsg_blame other = {0};
    int other_named =
        (o == CARMA_OUTCOME_FAILED || o == CARMA_OUTCOME_LOST) && kmsg_other(d, i, end_s, &other);
    if (dj->xid_seen) {
        const char *what;
        carma_xid_kind(dj->xid, &what);
        /* a GPU that needs a reset fails whatever runs on it later; a contained fault
         * ends the process it hits at once, not one that fails minutes later */
        if (o == CARMA_OUTCOME_FAILED &&
            (dj->xid_kind == CARMA_XID_RESET ||
             (dj->xid_kind == CARMA_XID_FAULT && end_s - dj->xid_t <= d->xid_fault_window_s))) {
            o = CARMA_OUTCOME_GPU_ERROR;
            snprintf(xid_why, sizeof xid_why, "GPU error: GPU %u reported Xid %llu (%s)",
                     dj->xid_gpu, (unsigned long long)dj->xid, what);
            why = xid_why;
        } else if ((o == CARMA_OUTCOME_FAILED || o == CARMA_OUTCOME_LOST) &&
                   !(other_named && dj->xid_kind == CARMA_XID_APP && dj->xid == other.xid)) {
            /* (an application's Xid the kernel put on another's process is not named) */
            snprintf(xid_note, sizeof xid_note, "; GPU %u reported Xid %llu (%s) during it%s",
                     dj->xid_gpu, (unsigned long long)dj->xid, what, through);
        }
    }
    /* A GPU found lost (GPU_IS_LOST) is one that fell off the bus, as Xid 79 says (RESET),
     * but NVML's event waits fail on a lost GPU and may never report it, and the kernel's
     * line names no process: a failure on it is not the job's either. */
    for (uint16_t k = 0; o == CARMA_OUTCOME_FAILED && k < d->sj[i].nplaced; k++) {
        unsigned g = d->sj[i].gpu[k];
        if (d->have_mon && g < d->ngpus && carma_mon_probe_lost(&d->mon, g)) {
            o = CARMA_OUTCOME_GPU_ERROR;
            snprintf(xid_why, sizeof xid_why, "GPU error: GPU %u is lost", g);
            why = xid_why;
        }
    }
    /* Under MPS one client's fault ends every client of its GPUs, each with the culprit's
     * error, and neither NVML's event nor the kernel's line says reliably whose it was
     * (on an H200 the kernel named the co-runner in 4 of 5 faults, docs/gpu.md). A
     * failure after an application Xid on an MPS GPU it shared, or that reached its GPUs
     * through another client's (xid_reach), is retried alone, where a fault is its own:
     * the culprit fails there (final), the others run. The first such attempt is not
     * counted against the job's (a faulty neighbour's doing, most likely); one that ran
     * alone already (a foreign client beside it) counts. */
    int forgiven = 0, alone = 0;
    /* A cancel recorded (and answered) that its shepherd did not hear before the job
     * ended (the job ended meanwhile, its status on its way): an attempt that would be
     * retried keeps its outcome, and the job is not run again but ends cancelled. */
    int stop = dj->rec.cancel_requested;
    if (o == CARMA_OUTCOME_FAILED && dj->xid_seen && dj->xid_kind == CARMA_XID_APP &&
        dj->xid_shared && end_s - dj->xid_t <= d->xid_fault_window_s) {
        const char *what;
        carma_xid_kind(dj->xid, &what);
        o = CARMA_OUTCOME_GPU_ERROR;
        if (dj->xid_via)
            snprintf(xid_why, sizeof xid_why,
                     "GPU %u's Xid %llu (%s) under MPS ended every client of job %llu's GPUs, "
                     "whose fault unknown",
                     dj->xid_gpu, (unsigned long long)dj->xid, what,
                     (unsigned long long)dj->xid_via);
        else
            snprintf(xid_why, sizeof xid_why,
                     "GPU %u's Xid %llu (%s) under MPS ended every client there, whose fault "
                     "unknown",
                     dj->xid_gpu, (unsigned long long)dj->xid, what);
        why = xid_why;
        xid_note[0] = '\0';
        alone = 1;
        if (!stop && !d->sj[i].exclusive && dj->rec.max_attempts &&
            dj->rec.max_attempts < ATTEMPTS_CEILING) {
            dj->rec.max_attempts++;
            d->sj[i].max_attempts++;
            forgiven = 1;
        }
    }
    if (d->have_gb && d->gb.ops->detach && dj->shepherd > 0)
        d->gb.ops->detach(&d->gb, dj->shepherd);
    uint64_t peak = dj->peak_mib;
    double start = d->sj[i].start_s;
    uint32_t nplaced = held_gpus(d, i);
    double run = end_s > start && start > 0 ? end_s - start : 0;
    fair_end(d, i, end_s);
    int cut = stop && (o == CARMA_OUTCOME_OOM || o == CARMA_OUTCOME_GPU_ERROR);
    int requeued = carma_sched_finish(&d->sched, i, cut ? CARMA_OUTCOME_CANCELLED : o, peak, end_s);
    if (requeued && alone)
        carma_sched_run_alone(&d->sched, i, CARMA_ALONE_MPS_FAULT);
    struct carma_job_rec *r = &dj->rec;
    r->exit_code = have && x.exited ? x.code : -1;
    r->signal = have && !x.exited ? x.signal : 0;
    free(r->reason);
    char reason[512];
    const char *retry = o != CARMA_OUTCOME_GPU_ERROR ? ""
                        : cut                        ? ", not retried: cancelled"
                        : !requeued                  ? ", no attempts left"
                        : forgiven ? ", retried alone (not counted against its attempts)"
                        : alone    ? ", retried alone"
                                   : ", retried";
    /* ended by its time limit (timelimit_tick; or, across a restart, cancelled once past
     * its deadline, unless this carmad was asked to cancel it, which may end past the
     * limit by kill_grace): said in place of "cancelled" */
    char tl_why[64];
    if (o == CARMA_OUTCOME_CANCELLED && dj->rec.time_limit_s &&
        (dj->timed_out ||
         (!dj->cancel_asked && start > 0 && end_s >= start + dj->rec.time_limit_s))) {
        char lim[32];
        carma_duration_format(lim, sizeof lim, dj->rec.time_limit_s);
        snprintf(tl_why, sizeof tl_why, "time limit %s reached", lim);
        why = tl_why;
    }
    if (o == CARMA_OUTCOME_OOM)
        snprintf(reason, sizeof reason, "attempt %u: GPU out of memory (%s)%s", n, why,
                 requeued ? ", retried"
                 : cut    ? ", not retried: cancelled"
                          : ", no attempts left");
    else if (have && x.exited && x.code == 0)
        snprintf(reason, sizeof reason, "attempt %u: %s", n, why);
    else if (have && x.exited)
        snprintf(reason, sizeof reason, "attempt %u: %s (exit %d%s)%s%s", n, why, x.code, unread,
                 xid_note, retry);
    else if (have)
        snprintf(reason, sizeof reason, "attempt %u: %s (signal %d%s)%s%s", n, why, x.signal,
                 unread, xid_note, retry);
    else
        snprintf(reason, sizeof reason, "attempt %u: %s%s", n, why, xid_note);
    r->reason = strdup(reason);
    if (!requeued)
        r->end_s = end_s;
    if (dj->end_dirty && !dj->end_in_tx && end_write(d, i, NULL) == 0)
        dj->end_in_tx = 1; /* an earlier end still waiting: written first */
    else if (dj->end_dirty && !dj->end_in_tx)
        dlog(d, LOG_ERR, "job %llu: attempt %u's end is lost from the store",
             (unsigned long long)r->id, dj->end.n);
    dj->end.n = n;
    dj->end.o = o;
    dj->end.end_s = end_s;
    dj->end.gpu_s = run * nplaced;
    dj->end.energy_j = dj->att_energy_j;
    dj->end.exit_code = r->exit_code;
    dj->end.signal = r->signal;
    dj->end.peak_mib = peak;
    dj->end.peak_partial = dj->peak_partial | (peak && !(dj->peak_partial & CARMA_PEAK_DOWNTIME) &&
                                                       dj->peak_held < CARMA_PEAK_HELD_TICKS
                                                   ? CARMA_PEAK_BRIEF
                                                   : 0);
    free(dj->end.reason);
    dj->end.reason = strdup(reason);
    /* A profile of its start-up alone (taken before it reached its GPUs, and not measured
     * again once it had: co-runners came, or it ended first) is not its work's: not kept. */
    int startup = solo_of_startup(dj);
    dj->end.smact = startup ? -1 : dj->solo_smact;
    dj->end.smocc = startup ? -1 : dj->solo_smocc;
    dj->end.drama = startup ? -1 : dj->solo_drama;
    dj->end.profile = !startup && dj->solo_smact >= 0 && dj->sig &&
                      (o == CARMA_OUTCOME_SUCCEEDED || o == CARMA_OUTCOME_CANCELLED ||
                       o == CARMA_OUTCOME_FAILED || o == CARMA_OUTCOME_OOM);
    dj->end_dirty = 1;
    dj->end_final = !requeued;
    /* one end a slot per uncommitted transaction: a relaunch waits for the commit that
     * holds the end before it */
    struct carma_err err;
    int rc = end_write(d, i, &err);
    dj->end_in_tx = rc == 0;
    r->run_s += run;
    r->gpu_s += run * nplaced;
    r->energy_j += dj->att_energy_j;
    d->attempts_total++;
    if (o == CARMA_OUTCOME_OOM)
        d->oom_total++;
    if (o == CARMA_OUTCOME_GPU_ERROR)
        d->gpu_error_total++;
    if (!requeued && d->sj[i].state < CARMA_JOB_STATE_COUNT)
        d->finished[d->sj[i].state]++;
    d->publish = 1;
    if (rc)
        dlog(d, LOG_ERR, "job %llu: cannot record its end (%s); tried again at the next commit",
             (unsigned long long)r->id, err.msg);
    dlog(d, LOG_INFO, "job %llu attempt %u: %s%s (%s)", (unsigned long long)r->id, n,
         carma_outcome_name(o), requeued ? ", re-queued" : "", reason);
    if (d->hooks.on_attempt_end)
        d->hooks.on_attempt_end(d->hooks.ctx, (unsigned long long)r->id, n, carma_outcome_name(o),
                                start, end_s);
    if (dj->pidfd >= 0) {
        epoll_ctl(d->epfd, EPOLL_CTL_DEL, dj->pidfd, NULL);
        close(dj->pidfd);
        dj->pidfd = -1;
    }
    dj->shepherd = 0;
    attempt_forget(dj); /* (its end holds what the Xid mark decided) */
    dj->ended_down = 0;
    d->dirty = 1;
    d->after_dirty = 1; /* jobs may wait for it (after_settle) */
}

static int watch_shepherd(struct carmad *d, uint32_t i, pid_t pid, int fd)
{
    if (fd < 0 && (fd = (int)syscall(SYS_pidfd_open, pid, 0)) < 0)
        return -errno;
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = TAG(TAG_PIDFD, i)};
    int test =
        d->test_watch_fail || (d->test_watch_fail_job && d->dj[i].rec.id == d->test_watch_fail_job);
    if (test || epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        int e = test ? ENOSPC : errno;
        /* carmad cannot follow it: its shepherd ends the job, as for a cancel, rather than
         * run it on GPUs the scheduler gives back with the attempt */
        syscall(SYS_pidfd_send_signal, fd, SIGTERM, NULL, 0);
        close(fd);
        return -e;
    }
    d->dj[i].pidfd = fd;
    d->dj[i].shepherd = pid;
    return 0;
}

/* A shepherd (recorded in dir) ended without its status (killed, crashed): what is left
 * of its job, which would hold GPUs the scheduler is about to give back, is killed. */
static void kill_leftovers(struct carmad *d, uint32_t i, const char *dir)
{
    pid_t pid;
    uint64_t start;
    if (carma_shepherd_read_pid(dir, &pid, &start))
        return;
    int n = carma_proc_kill_session(pid, (uid_t)d->dj[i].rec.uid, start, d->dj[i].rec.id,
                                    d->sj[i].attempts);
    if (n > 0)
        dlog(d, LOG_WARNING,
             "job %llu: its shepherd %d ended without a status; killed %d "
             "process%s of the job it left",
             (unsigned long long)d->dj[i].rec.id, (int)pid, n, n == 1 ? "" : "es");
}

/* How job i's attempt ended, its shepherd gone: as its status file (in dir) tells (1:
 * *x and *end filled), or, when it wrote none, lost now (0: *end now_s(), and what the
 * shepherd left of the job is killed). */
static int shepherd_end(struct carmad *d, uint32_t i, const char *dir, struct carma_exit *x,
                        double *end)
{
    if (carma_shepherd_read_status(dir, x, end) == 0)
        return 1;
    kill_leftovers(d, i, dir);
    *end = now_s();
    return 0;
}

/* Ends job i's attempt as its shepherd's status file (in dir) tells, or as lost when
 * it wrote none (killing what the shepherd left of the job). Whether it had one. */
static int end_from_status(struct carmad *d, uint32_t i, const char *dir)
{
    struct carma_exit x;
    double end;
    int have = shepherd_end(d, i, dir, &x, &end);
    attempt_end(d, i, have ? &x : NULL, NULL, end);
    return have;
}

/* Asks job i's shepherd to end its job (it sends SIGTERM, then SIGKILL after kill_grace;
 * a second request changes nothing): through its pidfd, which a reused pid cannot fool. */
static void cancel_signal(struct carmad *d, uint32_t i)
{
    struct djob *dj = &d->dj[i];
    if (dj->pidfd >= 0)
        syscall(SYS_pidfd_send_signal, dj->pidfd, SIGTERM, NULL, 0);
    else if (dj->shepherd > 0)
        kill(dj->shepherd, SIGTERM);
}

static void on_pidfd(struct carmad *d, uint32_t i)
{
    struct djob *dj = &d->dj[i];
    if (!dj->used || dj->pidfd < 0)
        return;
    waitpid(dj->shepherd, NULL, WNOHANG); /* ours unless re-adopted */
    char dir[PATH_MAX];
    attempt_dir(d, dj->rec.id, dj->rec.attempts, dir, sizeof dir);
    end_from_status(d, i, dir);
}

/* ---- launching ---- */

static int env_denied(const char *k)
{
    static const char *const exact[] = {"LD_PRELOAD", "LD_AUDIT", "CUDA_VISIBLE_DEVICES",
                                        "NVIDIA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
                                        "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL",
                                        "CARMA_SOCKET", NULL};
    static const char *const prefix[] = {"CUDA_MPS_", "LD_DEBUG", "BASH_FUNC_", "CARMA_JOB",
                                         NULL};
    for (const char *const *e = exact; *e; e++)
        if (!strcmp(*e, k))
            return 1;
    for (const char *const *p = prefix; *p; p++)
        if (!strncmp(*p, k, strlen(*p)))
            return 1;
    return 0;
}

static char *kv(const char *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *kv(const char *k, const char *fmt, ...)
{
    char *v, *s;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&v, fmt, ap); /* whole: a value is as long as the protocol let it be */
    va_end(ap);
    if (n < 0)
        return NULL;
    if (asprintf(&s, "%s=%s", k, v) < 0)
        s = NULL;
    free(v);
    return s;
}

static void free_strv(char **v)
{
    if (!v)
        return;
    for (char **p = v; *p; p++)
        free(*p);
    free(v);
}

/* argv and environment of job i's next attempt. */
static int build_exec(struct carmad *d, uint32_t i, char ***argv_out, char ***env_out)
{
    const struct carma_job_rec *r = &d->dj[i].rec;
    const struct carma_job *j = &d->sj[i];
    json_error_t je;
    json_t *av = json_loads(r->argv_json, 0, &je), *ev = json_loads(r->env_json, 0, &je);
    if (!av || !ev || !json_is_array(av) || !json_is_object(ev)) {
        json_decref(av);
        json_decref(ev);
        return -EINVAL;
    }
    size_t na = json_array_size(av), ne = json_object_size(ev) + 18;
    char **argv = calloc(na + 1, sizeof *argv), **env = calloc(ne + 1, sizeof *env);
    size_t k = 0;
    int rc = 0;
    if (!argv || !env)
        rc = -ENOMEM;
    for (size_t a = 0; !rc && a < na; a++)
        if (!(argv[a] = strdup(json_string_value(json_array_get(av, a)))))
            rc = -ENOMEM;
    const char *key;
    json_t *val;
    int have_path = 0, have_tf = 0, have_xla = 0;
    json_object_foreach(ev, key, val) {
        if (rc || env_denied(key))
            continue;
        if (d->self_uid == 0 && (!strcmp(key, "HOME") || !strcmp(key, "USER") ||
                                 !strcmp(key, "LOGNAME")))
            continue; /* set from the password database below */
        have_path |= !strcmp(key, "PATH");
        have_tf |= !strcmp(key, CARMAD_ENV_TF_GROWTH);
        have_xla |= !strcmp(key, CARMAD_ENV_XLA_PREALLOCATE);
        if (k < ne - 14 && !(env[k++] = kv(key, "%s", json_string_value(val))))
            rc = -ENOMEM;
    }
    if (!rc && !have_path)
        env[k++] = kv("PATH", "/usr/local/bin:/usr/bin:/bin");
    /* TensorFlow and JAX map most of the GPU at their start unless told to grow: then no
     * bound means anything, and a co-runner runs out of memory. A job whose environment
     * sets them otherwise was bounded by the whole GPU at submission (req_submit). */
    if (!rc && !have_tf)
        env[k++] = kv(CARMAD_ENV_TF_GROWTH, "true");
    if (!rc && !have_xla)
        env[k++] = kv(CARMAD_ENV_XLA_PREALLOCATE, "false");
    if (!rc && d->self_uid == 0) {
        struct passwd pw, *p = NULL;
        char buf[4096];
        if (getpwuid_r(r->uid, &pw, buf, sizeof buf, &p) == 0 && p) {
            env[k++] = kv("HOME", "%s", p->pw_dir);
            env[k++] = kv("USER", "%s", p->pw_name);
            env[k++] = kv("LOGNAME", "%s", p->pw_name);
        }
    }
    char uuids[CARMA_JOB_MAX_GPUS * CARMA_GPU_UUID_MAX] = "";
    char mpslim[CARMA_JOB_MAX_GPUS * 32] = "";
    int mps = 0;
    for (uint16_t g = 0; g < j->nplaced; g++) {
        size_t l = strlen(uuids);
        snprintf(uuids + l, sizeof uuids - l, "%s%s", g ? "," : "", d->gs[j->gpu[g]].info.uuid);
        mps |= d->gpus[j->gpu[g]].sharing == CARMA_SHARING_MPS;
        l = strlen(mpslim);
        uint64_t lim = carma_sched_mps_cap_mib(&d->sched, j);
        if (lim)
            snprintf(mpslim + l, sizeof mpslim - l, "%s%u=%lluM", g ? "," : "", g,
                     (unsigned long long)lim);
    }
    if (!rc) {
        env[k++] = kv("CUDA_VISIBLE_DEVICES", "%s", uuids);
        env[k++] = kv("CARMA_JOB_ID", "%llu", (unsigned long long)r->id);
        env[k++] = kv("CARMA_JOB_ATTEMPT", "%u", j->attempts);
        if (mps && carma_sched_mps_limits(&d->sched)) {
            /* Threads: the job's solo SM activity with headroom, else an equal share
             * of the co-runners the GPU may hold; all of them for an exclusive job, which
             * no job joins (it runs uncapped: carma_sched_mps_cap_mib). */
            unsigned pct = j->exclusive ? 100u
                           : j->smact >= 0
                               ? (unsigned)(j->smact * 150.0f + 0.5f)
                               : 100u / (d->gpus[j->gpu[0]].njobs ? d->gpus[j->gpu[0]].njobs : 1);
            if (pct < 10)
                pct = 10;
            if (pct > 100)
                pct = 100;
            env[k++] = kv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "%u", pct);
            if (mpslim[0])
                env[k++] = kv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "%s", mpslim);
        }
    }
    json_decref(av);
    json_decref(ev);
    for (size_t x = 0; x < k; x++)
        if (!env[x])
            rc = -ENOMEM;
    if (rc) {
        free_strv(argv);
        free_strv(env);
        return rc;
    }
    *argv_out = argv;
    *env_out = env;
    return 0;
}

/* Records a placement of job i in the store (before its shepherd exists). */
static int launch_record(struct carmad *d, uint32_t i, double now, struct carma_err *err)
{
    struct djob *dj = &d->dj[i];
    dj->rec.start_s = now;
    /* each attempt has its own clock, from its start as recorded here */
    dj->timed_out = dj->cancel_asked = 0;
    if (dj->rec.time_limit_s) {
        double dl = now + dj->rec.time_limit_s;
        if (!(d->tl_next > 0) || dl < d->tl_next)
            d->tl_next = dl;
    }
    json_t *g = job_gpus_json(d, i);
    char *gs = json_dumps(g, JSON_COMPACT);
    json_decref(g);
    if (!gs)
        return carma_err_set(err, -ENOMEM, "out of memory");
    /* The kind its peak is history for; none when its GPUs are of several kinds. */
    const char *kind = d->sj[i].nplaced ? d->gs[d->sj[i].gpu[0]].kind : NULL;
    for (uint16_t k = 1; kind && k < d->sj[i].nplaced; k++)
        if (strcmp(d->gs[d->sj[i].gpu[k]].kind, kind))
            kind = NULL;
    int rc = save_job(d, i, err);
    if (!rc)
        rc = carma_store_attempt_begin(d->store, dj->rec.id, d->sj[i].attempts, gs, kind, now,
                                       err);
    free(gs);
    return rc;
}

/* Job i's last attempt (rec.attempts) never began: its shepherd never started the job, so
 * it never ran. The attempt's row goes (shown, it would run forever), the job's count of
 * attempts goes back (the scheduler's with it), and it is queued again keeping its
 * priority: a retry goes first, and a job placed on GPUs (a launch that failed) gives
 * them back and goes first again (the recovery queue, as CARMA_OUTCOME_FAULT queues it),
 * where it was chosen from; nothing is billed. Its writes join the open transaction
 * (begun if none is); one that fails is logged. */
static void attempt_unbegun(struct carmad *d, uint32_t i, double now)
{
    struct djob *dj = &d->dj[i];
    struct carma_job *j = &d->sj[i];
    uint32_t n = dj->rec.attempts;
    struct carma_err err = {{0}};
    int placed = j->state == CARMA_JOB_RUNNING;
    if (placed) {
        /* order = fair: what fair_accrue charged its GPUs since its placement goes back */
        struct fair_user *u = d->cfg.order_fair ? fair_of(d, i) : NULL;
        if (u && j->start_s > 0 && d->fair_t > j->start_s) {
            u->gpu_s -= (d->fair_t - j->start_s) * held_gpus(d, i);
            if (u->gpu_s < 0)
                u->gpu_s = 0;
        }
        /* its GPUs back, and it first in line again, where it was chosen from */
        carma_sched_finish(&d->sched, i, CARMA_OUTCOME_FAULT, 0, now);
    }
    dj->rec.attempts = n ? n - 1 : 0;
    dj->rec.state = CARMA_JOB_QUEUED;
    j->attempts = (uint16_t)dj->rec.attempts;
    attempt_forget(dj);
    /* its start: the attempt before's, or none */
    double s0 = -1;
    if (dj->rec.attempts &&
        carma_store_attempt_gpus(d->store, dj->rec.id, dj->rec.attempts, NULL, &s0, &err))
        s0 = -1;
    dj->rec.start_s = s0;
    j->start_s = s0;
    if (placed)
        ; /* queued above */
    else if (dj->rec.attempts)
        carma_sched_submit_recovery(&d->sched, i, now);
    else
        carma_sched_submit(&d->sched, i, now);
    int rc = store_tx(d, &err);
    if (!rc)
        rc = carma_store_attempt_forget(d->store, dj->rec.id, n, &err);
    if (!rc)
        rc = carma_store_job_update(d->store, &dj->rec, &err);
    if (rc)
        dlog(d, LOG_ERR, "job %llu: cannot record that attempt %u never started: %s",
             (unsigned long long)dj->rec.id, n, err.msg);
    d->publish = 1;
    d->dirty = 1;
}

/* Whether placements wait (launch_pause): a pause that passed ends here. */
static int launches_paused(struct carmad *d)
{
    if (d->launch_pause_until > 0 && carma_mono_s() >= d->launch_pause_until)
        d->launch_pause_until = 0;
    return d->launch_pause_until > 0;
}

/* A shepherd could not start for a reason that may be carmad's or the host's (why): no
 * job is placed for a while, 1 s, doubled at each pause in a row up to
 * LAUNCH_PAUSE_MAX_S, logged once a pause. A failure during a pause (another of the
 * launches placed with the first) does not lengthen it. */
static void launch_pause(struct carmad *d, const char *why)
{
    if (launches_paused(d))
        return;
    d->launch_pause_s = d->launch_pause_s > 0 ? d->launch_pause_s * 2 : 1;
    if (d->launch_pause_s > LAUNCH_PAUSE_MAX_S)
        d->launch_pause_s = LAUNCH_PAUSE_MAX_S;
    d->launch_pause_until = carma_mono_s() + d->launch_pause_s;
    snprintf(d->launch_pause_why, sizeof d->launch_pause_why, "%s", why);
    dlog(d, LOG_ERR, "cannot start shepherds (%s): launches paused for %g s", why,
         d->launch_pause_s);
    d->publish = 1;
}

/* A shepherd started (it recorded itself): the next failure pauses launches 1 s again. */
static void launch_ok(struct carmad *d, uint32_t i)
{
    d->dj[i].launch_fails = 0;
    d->launch_pause_s = 0;
}

/* Job i's shepherd could not be started (begun: it was told to start the job, which then
 * cannot be undone). A job's own reason (its stored command unreadable, its command and
 * environment too large: EINVAL, E2BIG), or an attempt begun, fail the attempt as a job
 * that cannot exec (exit 125, the reason naming the error); any other may be carmad's or
 * the host's: the attempt never began, the job waits in the queue (attempt_unbegun), and
 * launches pause. The host's for sure (a full STATE/jobs, no memory, no process or
 * descriptor left) is never held against the job; LAUNCH_FAILS_MAX in a row of the others
 * (a helper that says why it cannot start, or misses its deadline: a user whose account
 * went is one) fail it, so that one job's cannot loop for ever. */
static void launch_failed(struct carmad *d, uint32_t i, int rc, const struct carma_err *err,
                          int begun)
{
    struct djob *dj = &d->dj[i];
    const char *msg = err->msg[0] ? err->msg : strerror(-rc);
    int own = rc == -EINVAL || rc == -E2BIG;
    /* the host's for sure: a full or over-quota STATE/jobs, no memory, process or
     * descriptor left; never counted against the job (it waits as long as they last) */
    int host = rc == -ENOSPC || rc == -EDQUOT || rc == -ENOMEM || rc == -EMFILE || rc == -ENFILE ||
               rc == -EAGAIN;
    if (!own)
        launch_pause(d, msg);
    if (!own && !begun && (host || ++dj->launch_fails < LAUNCH_FAILS_MAX)) {
        char row[32] = ""; /* (the host's failures are not counted) */
        if (!host)
            snprintf(row, sizeof row, " (%u in a row)", dj->launch_fails);
        dlog(d, LOG_WARNING, "job %llu: cannot start its shepherd: %s; queued again%s",
             (unsigned long long)dj->rec.id, msg, row);
        attempt_unbegun(d, i, now_s());
        return;
    }
    char why[CARMA_ERR_MAX + 64];
    if (begun)
        snprintf(why, sizeof why, "carmad cannot watch its shepherd: %s", msg);
    else if (!own)
        snprintf(why, sizeof why, "its shepherd could not start (%u times in a row): %s",
                 dj->launch_fails, msg);
    else
        snprintf(why, sizeof why, "its shepherd could not start: %s", msg);
    dlog(d, LOG_ERR, "job %llu: cannot start its shepherd: %s%s", (unsigned long long)dj->rec.id,
         msg, !own && !begun ? " (the job's launches failed too often in a row)" : "");
    dj->launch_fails = 0;
    struct carma_exit x = {.exited = 1, .code = 125};
    dj->launch_why = why;
    attempt_end(d, i, &x, NULL, now_s());
    dj->launch_why = NULL;
}

/* Job i's shepherd recorded itself and was told to start the job: carmad watches it. */
static void launch_started(struct carmad *d, uint32_t i, pid_t pid, int pidfd)
{
    struct djob *dj = &d->dj[i];
    if (d->test_watch_delay_ms > 0) {
        struct timespec ts = {d->test_watch_delay_ms / 1000,
                              d->test_watch_delay_ms % 1000 * 1000000};
        nanosleep(&ts, NULL);
    }
    int rc = watch_shepherd(d, i, pid, pidfd); /* closes pidfd on failure */
    if (rc && rc != -ESRCH) {
        struct carma_err err = {{0}};
        launch_failed(d, i, rc, &err, 1);
        return;
    }
    launch_ok(d, i);
    if (rc == -ESRCH) {
        /* It ended before it could be watched (SIGCHLD is ignored: the kernel reaped it at
         * once): its status file tells how, as on_pidfd reads it. */
        char dir[PATH_MAX];
        attempt_dir(d, dj->rec.id, d->sj[i].attempts, dir, sizeof dir);
        dlog(d, LOG_INFO, "job %llu attempt %u started (shepherd %d), and ended at once",
             (unsigned long long)dj->rec.id, d->sj[i].attempts, (int)pid);
        end_from_status(d, i, dir);
        return;
    }
    dj->pid_dirty = 1;
    if (d->have_gb && d->gb.ops->attach) {
        /* simulated: it takes its estimate, else its hold, as far as its GPUs have it
         * (gpu/sim.c) */
        uint64_t takes = dj->sim_mib ? dj->sim_mib : d->sj[i].held_mib;
        uint64_t want = takes;
        for (uint16_t k = 0; k < d->sj[i].nplaced; k++) {
            uint16_t g = d->sj[i].gpu[k];
            d->gb.ops->attach(&d->gb, g, pid, want << 20);
            if (d->gpus[g].mem_total_mib < takes)
                takes = d->gpus[g].mem_total_mib;
        }
        if (takes > dj->peak_mib)
            dj->peak_mib = takes;
        dj->peak_ref = dj->peak_mib; /* set, not sampled: no climb to miss */
        dj->peak_held = CARMA_PEAK_HELD_TICKS;
    }
    dlog(d, LOG_INFO, "job %llu attempt %u started (shepherd %d)", (unsigned long long)dj->rec.id,
         d->sj[i].attempts, (int)pid);
}

/* Moves the start of job i's shepherd on (its descriptors were ready, or its deadline
 * passed): started, failed, or still going. */
static void on_start(struct carmad *d, uint32_t i)
{
    struct djob *dj = &d->dj[i];
    if (!dj->used || !dj->start)
        return; /* an event of a start that ended earlier in the same batch */
    struct carma_err err = {{0}};
    int rc = carma_shepherd_step(dj->start, &err);
    if (rc == 0)
        return;
    pid_t pid = dj->start->pid;
    int pidfd = dj->start->pidfd;
    start_forget(d, i);
    if (rc > 0)
        launch_started(d, i, pid, pidfd);
    else
        launch_failed(d, i, rc, &err, 0);
}

/* The earliest deadline of the shepherds being started (carma_mono_s), 0 when none. */
static double starts_deadline(const struct carmad *d)
{
    double first = 0;
    for (uint32_t i = 0; d->nstarting && i < d->cap; i++)
        if (d->dj[i].used && d->dj[i].start && (first == 0 || d->dj[i].start->deadline < first))
            first = d->dj[i].start->deadline;
    return first;
}

/* Starts the shepherd of job i (already recorded as running). carmad does not wait for
 * it: on_start follows it from the event loop, so that a helper slow to start (a disk
 * that stalls its record, a loaded host) holds neither carmad nor the other launches. */
static void launch_start(struct carmad *d, uint32_t i)
{
    struct djob *dj = &d->dj[i];
    char dir[PATH_MAX];
    attempt_dir(d, dj->rec.id, d->sj[i].attempts, dir, sizeof dir);
    char **argv = NULL, **env = NULL;
    struct carma_err err = {{0}};
    int rc = d->test_start_fails > 0
                 ? carma_err_set(&err, -ENOSPC, "test: %s: %s", dir, strerror(ENOSPC))
                 : attempt_open(d, dj->rec.id, d->sj[i].attempts, 1, dir, sizeof dir, &err);
    d->test_start_fails -= d->test_start_fails > 0;
    if (rc >= 0) {
        unlinkat(rc, "status", 0); /* a restart of an attempt never begun */
        close(rc);
        rc = build_exec(d, i, &argv, &env);
    }
    struct carma_shepherd_start *st = rc ? NULL : malloc(sizeof *st);
    if (!rc && !st)
        rc = -ENOMEM;
    if (!rc) {
        struct passwd pw, *p = NULL;
        char buf[4096];
        getpwuid_r(dj->rec.uid, &pw, buf, sizeof buf, &p);
        struct carma_shepherd_spec sp = {.dir = dir,
                                         .argv = argv,
                                         .envp = env,
                                         .cwd = dj->rec.cwd,
                                         .uid = dj->rec.uid,
                                         .gid = dj->rec.gid,
                                         .user = p ? p->pw_name : dj->rec.user,
                                         .switch_user = d->self_uid == 0 && dj->rec.uid != 0,
                                         .umask = dj->rec.umask >= 0 && dj->rec.umask <= 0777
                                                      ? (mode_t)dj->rec.umask
                                                      : CARMA_JOB_UMASK_DEFAULT,
                                         .rlimits = dj->rec.rlimits,
                                         .kill_grace_s = d->cfg.kill_grace_s};
        rc = carma_shepherd_begin(d->shepherd_exe, d->shepherd_fd, &sp, d->start_wait_s, st, &err);
    }
    free_strv(argv);
    free_strv(env);
    if (!rc) {
        struct epoll_event in = {.events = EPOLLIN, .data.u64 = TAG(TAG_START, i)};
        struct epoll_event out = {.events = EPOLLOUT, .data.u64 = TAG(TAG_START, i)};
        dj->start = st;
        d->nstarting++;
        st = NULL;
        if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, dj->start->ready_fd, &in) < 0 ||
            epoll_ctl(d->epfd, EPOLL_CTL_ADD, dj->start->spec_fd, &out) < 0) {
            rc = carma_err_set(&err, -errno, "epoll_ctl: %s", strerror(errno));
            start_drop(d, i, 0);
        }
    }
    free(st);
    if (rc)
        launch_failed(d, i, rc, &err, 0);
    else
        on_start(d, i); /* most of a job fits the pipe: handed over at once */
}

/* ---- connections and requests ---- */

static void listen_resume(struct carmad *d)
{
    if (!d->listen_paused)
        return;
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = TAG(TAG_LISTEN, 0)};
    if (epoll_ctl(d->epfd, EPOLL_CTL_MOD, d->lfd, &ev) == 0)
        d->listen_paused = 0;
}

static void conn_close(struct carmad *d, uint32_t ci)
{
    struct conn *c = d->conns[ci];
    if (!c)
        return;
    epoll_ctl(d->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c->in);
    free(c->out);
    free(c);
    d->conns[ci] = NULL;
    d->nconns--;
    while (d->conn_hi > 0 && !d->conns[d->conn_hi - 1])
        d->conn_hi--;
    listen_resume(d); /* an fd is free again */
}

static size_t conn_unsent(const struct conn *c)
{
    return c->outlen - c->outoff;
}

/* Whether conn_read would read nothing into c->in: it grows to CONN_IN_SOFT, and beyond
 * (to CONN_IN_MAX) only while it holds no complete request. */
static int conn_in_full(const struct conn *c)
{
    if (c->incap - c->inlen >= 4096)
        return 0;
    size_t n = c->incap ? c->incap * 2 : 8192;
    if (n > CONN_IN_MAX)
        n = CONN_IN_MAX;
    return n <= c->incap || (c->incap >= CONN_IN_SOFT && memchr(c->in, '\n', c->inlen));
}

/* Arms epoll for what the connection can do now: read while its answers are not
 * backed up and its input has room (conn_in_full: its requests wait for an answer, an
 * estimate in the estimate queue perhaps), write while answers are unsent. A level-
 * triggered fd with nothing to do is never left armed. */
static void conn_arm(struct carmad *d, uint32_t ci)
{
    struct conn *c = d->conns[ci];
    uint32_t ev = 0;
    if (!c->eof && conn_unsent(c) <= CONN_OUT_HIGH && !conn_in_full(c))
        ev |= EPOLLIN;
    if (conn_unsent(c))
        ev |= EPOLLOUT;
    if (ev == c->events)
        return;
    struct epoll_event e = {.events = ev, .data.u64 = TAG(TAG_CONN, ci)};
    if (epoll_ctl(d->epfd, EPOLL_CTL_MOD, c->fd, &e) == 0)
        c->events = ev;
}

/* Whether the connection is done: its peer closed and nothing is left to answer, a
 * complete request still in c->in included (a peer may write several and half-close:
 * read with its end, they are answered first). */
static int conn_done(const struct conn *c)
{
    return c->eof && conn_unsent(c) == 0 && c->pending == 0 && !c->more &&
           !memchr(c->in, '\n', c->inlen);
}

static void conn_flush(struct carmad *d, uint32_t ci)
{
    struct conn *c = d->conns[ci];
    int was_full = conn_unsent(c) > CONN_OUT_HIGH;
    while (c->outoff < c->outlen) {
        ssize_t w = send(c->fd, c->out + c->outoff, c->outlen - c->outoff, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (w < 0) {
            conn_close(d, ci);
            return;
        }
        c->outoff += (size_t)w;
        c->out_since = carma_mono_s();
    }
    if (c->outoff == c->outlen) {
        c->outoff = c->outlen = 0;
        if (c->outcap > CONN_OUT_HIGH) { /* a large answer went out: give its memory back */
            free(c->out);
            c->out = NULL;
            c->outcap = 0;
        }
    }
    if (was_full && conn_unsent(c) <= CONN_OUT_HIGH && c->more)
        d->more_work = 1; /* its waiting requests may go on */
    if (conn_done(c)) {
        conn_close(d, ci);
        return;
    }
    conn_arm(d, ci);
}

/* Queues an answer (consumed) and sends what the socket takes. An answer longer than
 * a protocol line becomes the error "toolarge", and a NULL one (it could not be built)
 * the fixed error "nomem": a request is always answered. */
static void conn_send(struct carmad *d, uint32_t ci, json_t *resp)
{
    struct conn *c = d->conns[ci];
    char *line = NULL;
    size_t len = 0;
    int rc = c ? carma_proto_dump(resp, &line, &len) : -ENOTCONN;
    json_decref(resp);
    if (!c)
        return;
    if (rc == -E2BIG) {
        json_t *e = carma_resp_error(
            "toolarge", "the answer is longer than the protocol's line limit of %u bytes; "
                        "ask for less (carma ls pages through long lists)",
            CARMA_PROTO_MAX_LINE);
        rc = carma_proto_dump(e, &line, &len);
        json_decref(e);
    }
    if (rc) { /* no answer could be written (out of memory): a fixed one */
        static const char nomem[] = "{\"ok\":false,\"error\":\"nomem\",\"message\":\"carmad "
                                    "could not build its answer (out of memory)\"}\n";
        free(line);
        if (!(line = strdup(nomem))) { /* closing tells the client more than silence */
            conn_close(d, ci);
            return;
        }
        len = sizeof nomem - 1;
    }
    if (c->outoff) { /* keep the unsent bytes at the front: the buffer stays bounded */
        memmove(c->out, c->out + c->outoff, conn_unsent(c));
        c->outlen -= c->outoff;
        c->outoff = 0;
    }
    if (c->outlen == 0)
        c->out_since = carma_mono_s();
    if (c->outlen + len > c->outcap) {
        size_t n = c->outcap ? c->outcap : 4096;
        while (n < c->outlen + len)
            n *= 2;
        char *o = realloc(c->out, n);
        if (!o) {
            free(line);
            conn_close(d, ci);
            return;
        }
        c->out = o;
        c->outcap = n;
    }
    memcpy(c->out + c->outlen, line, len);
    c->outlen += len;
    free(line);
    conn_flush(d, ci);
}

/* Holds resp until the commit for connection ci of generation gen; when that connection
 * has gone (a submission finished after its estimate), the answer is dropped then. */
static void pend_add_gen(struct carmad *d, uint32_t ci, uint64_t gen, json_t *resp)
{
    struct conn *c = d->conns[ci];
    int live = c && c->gen == gen;
    d->deferred = 1;
    if (d->npend == d->pendcap) {
        size_t n = d->pendcap ? d->pendcap * 2 : 64;
        struct pend *p = realloc(d->pend, n * sizeof *p);
        if (!p) {
            json_decref(resp);
            if (live)
                conn_send(d, ci, carma_resp_error("nomem", "carmad is out of memory"));
            return;
        }
        d->pend = p;
        d->pendcap = n;
    }
    d->pend[d->npend++] = (struct pend){ci, gen, resp};
    if (live)
        c->pending++;
}

static void pend_add(struct carmad *d, uint32_t ci, json_t *resp)
{
    pend_add_gen(d, ci, d->conns[ci]->gen, resp);
}

/* One of connection ci's pending requests (a commit's answer, an estimate) is done: the
 * connection, if still the one of generation gen, with its pending count lowered (its
 * next requests go on once none is left); NULL when it has gone. */
static struct conn *conn_release(struct carmad *d, uint32_t ci, uint64_t gen)
{
    struct conn *c = d->conns[ci];
    if (!c || c->gen != gen)
        return NULL;
    c->pending--;
    if (c->pending == 0 && c->inlen)
        c->more = 1; /* its next requests waited for this one */
    return c;
}

/* Where a waiting submission (struct psub) is: a bit each, for psubs_of's mask. */
enum {
    PSUB_CHECKED = 1,        /* its paths are being checked */
    PSUB_CHECK_WAITS = 2,    /* it waits for a check of its user's to end (paths_queued) */
    PSUB_ESTIMATED = 4,      /* in the estimate queue */
    PSUB_ESTIMATE_WAITS = 8, /* it waits outside the estimate queue (estq_queued) */
    PSUB_PATHS = PSUB_CHECKED | PSUB_CHECK_WAITS,
    PSUB_ESTIMATE = PSUB_ESTIMATED | PSUB_ESTIMATE_WAITS,
};

static int psub_where(const struct psub *p)
{
    return p->paths          ? PSUB_CHECKED
           : p->paths_queued ? PSUB_CHECK_WAITS
           : p->estq_queued  ? PSUB_ESTIMATE_WAITS
                             : PSUB_ESTIMATED;
}

/* The waiting submissions (struct psub) of uid in the places of mask (PSUB_*); *all: the
 * same of every user. */
static unsigned psubs_of(const struct carmad *d, uid_t uid, int mask, unsigned *all)
{
    unsigned n = 0, a = 0;
    for (const struct psub *p = d->psubs; p; p = p->next)
        if (psub_where(p) & mask) {
            a++;
            n += p->who.uid == uid;
        }
    if (all)
        *all = a;
    return n;
}

static void user_name(uid_t uid, char *buf, size_t cap, gid_t *gid)
{
    struct passwd pw, *p = NULL;
    char b[4096];
    if (getpwuid_r(uid, &pw, b, sizeof b, &p) == 0 && p) {
        snprintf(buf, cap, "%s", p->pw_name);
        if (gid)
            *gid = p->pw_gid;
    } else {
        snprintf(buf, cap, "uid%u", (unsigned)uid);
    }
}

static json_t *submit_finish(struct carmad *d, uint32_t ci, uint64_t gen, const struct carma_req *q,
                             const struct submitter *who, const struct carmad_model *model);
static json_t *submit_paths(struct carmad *d, uint32_t ci, struct carma_req *q,
                            const struct submitter *who);

/* Checks who sends a submission, then has its paths checked off the loop (submit_paths,
 * moving q out); paths_take goes on with it. */
static json_t *req_submit(struct carmad *d, uint32_t ci, struct carma_req *q)
{
    struct conn *c = d->conns[ci];
    const struct carma_req_job *rj = &q->job;
    if (d->self_uid == 0 && c->uid == 0 && !d->cfg.allow_root_jobs)
        return carma_resp_error("forbidden", "carmad does not run jobs as root unless "
                                             "allow_root_jobs = true in its configuration");
    if (d->self_uid != 0 && c->uid != d->self_uid)
        return carma_resp_error("forbidden", "this carmad runs as uid %u and cannot run jobs "
                                             "of uid %u", (unsigned)d->self_uid, (unsigned)c->uid);
    if (rj->gpus > d->ngpus)
        return carma_resp_error("invalid", "the job asks for %u GPUs; this server has %zu",
                                rj->gpus, d->ngpus);
    /* Each active job holds its record (environment and argv: up to a request's 1 MiB) in
     * carmad's memory and a slot of the table all users share: one user's backlog must not
     * take carmad's memory, nor every slot, from the others. */
    if (c->uid != 0 && c->uid != d->self_uid) {
        uint32_t mine = 0;
        for (uint32_t k = 0; k < d->cap; k++)
            mine += d->dj[k].used && !d->dj[k].end_final && d->dj[k].rec.uid == c->uid;
        unsigned all;
        mine += psubs_of(d, c->uid, PSUB_PATHS | PSUB_ESTIMATE, &all);
        if (mine >= d->cfg.max_jobs_per_user)
            return carma_resp_error("forbidden",
                                    "uid %u has %u active jobs (queued or running), the most "
                                    "max_jobs_per_user allows; submit again once some end",
                                    (unsigned)c->uid, mine);
    }
    struct submitter who = {.uid = c->uid, .gid = c->gid};
    user_name(c->uid, who.uname, sizeof who.uname, &who.gid);
    /* A root carmad runs the job with the resource limits of the process that submitted
     * it, as a login would (pam_limits): not with carmad's own, which would lift every
     * limit set for the user. */
    char *lim = who.lim;
    /* A peer in a pid namespace carmad cannot see (carmad in a container of its own, the
     * socket bound into the host) has no pid here (0): its limits cannot be read, and
     * the job runs with carmad's, as before there were any (docs/daemon.md, Security). */
    if (d->self_uid == 0 && c->uid != 0 && c->pid > 0) {
        struct rlimit rl[CARMA_RLIMITS_N];
        struct carma_err lerr = {{0}};
        if (carma_rlimits_of_pid(c->pid, c->uid, rl, &lerr))
            return carma_resp_error("forbidden",
                                    "cannot take on the submitter's resource "
                                    "limits: %s",
                                    lerr.msg);
        carma_rlimits_format(rl, lim, sizeof who.lim);
    }
    return submit_paths(d, ci, q, &who);
}

/* Starts p's check, with the rights the job will run with. NULL, or the submission's
 * refusal when it cannot start. */
static json_t *paths_start(struct carmad *d, struct psub *p)
{
    const struct carma_req_job *rj = &p->q.job;
    const char *path_env = NULL;
    for (size_t k = 0; k < rj->nenv; k++)
        if (!strcmp(rj->env_key[k], "PATH"))
            path_env = rj->env_val[k];
    /* A root carmad checking as root would tell a user which files exist in folders they
     * cannot read: a path they cannot reach is answered as a missing one. */
    const struct carmad_pathcheck_req pr = {.uid = p->who.uid,
                                            .gid = p->who.gid,
                                            .user = p->who.uname,
                                            .as_user = d->self_uid == 0 && p->who.uid != 0,
                                            .cwd = rj->cwd,
                                            .argv0 = rj->argv[0],
                                            .path_env = path_env};
    struct carma_err e = {{0}};
    int rc = carmad_pathcheck_start(d->paths, &pr, p, &p->paths, &e);
    if (rc)
        return carma_resp_error(rc == -ENOMEM ? "nomem" : "busy",
                                "cannot check the job's paths: %s", e.msg);
    p->paths_queued = 0;
    /* the check's own time, from its start: one that waited its turn behind its user's
     * checks on a slow file system is not refused for their time */
    p->paths_deadline = carma_mono_s() + d->cfg.path_check_s;
    return NULL;
}

/* Whether uid may have one more check made now: its checks being made and those left
 * hanging are under PATHS_PER_UID (root and carmad's own uid, exempt as from the other
 * per-user bounds, may have more being made at once: bench_daemon's 16 clients; their
 * hanging ones stay bounded). */
static int paths_may_start(struct carmad *d, uid_t uid)
{
    if (uid == 0 || uid == d->self_uid)
        return 1;
    unsigned mine_stuck, made = 0;
    carmad_pathcheck_stuck(d->paths, uid, &mine_stuck);
    for (const struct psub *p = d->psubs; p; p = p->next)
        made += p->paths != NULL && p->who.uid == uid;
    return made + mine_stuck < PATHS_PER_UID;
}

static void psub_end(struct carmad *d, struct psub *p, json_t *resp,
                     const struct carmad_model *model);

/* Starts the waiting checks of every user that may have one more made, each user's
 * oldest first: after a check ended, or a thread left hanging on a file system did. */
static void paths_start_queued(struct carmad *d)
{
    struct psub *p = d->psubs;
    while (p && p->next)
        p = p->next; /* the oldest: d->psubs is newest first */
    for (struct psub *pv; p; p = pv) {
        pv = p->prev;
        if (!p->paths_queued || !paths_may_start(d, p->who.uid))
            continue;
        json_t *refused = paths_start(d, p);
        if (refused)
            psub_end(d, p, refused, NULL);
    }
}

/* Has a submission's cwd and command checked on a thread of their own, with the rights the
 * job will run with (daemon/pathcheck.h): a file system that does not answer (a hung NFS
 * server, a stuck FUSE mount) holds that thread, not carmad's loop. q is moved into a
 * waiting submission (the caller's is left empty); paths_take goes on with it, or
 * paths_expire refuses it past path_check_timeout. One past its user's PATHS_PER_UID
 * checks waits for one of them to end (paths_start_queued), at most path_check_timeout,
 * and then has path_check_timeout for its own check. */
static json_t *submit_paths(struct carmad *d, uint32_t ci, struct carma_req *q,
                            const struct submitter *who)
{
    unsigned mine_stuck, stuck = carmad_pathcheck_stuck(d->paths, who->uid, &mine_stuck);
    if (stuck >= PATHS_STUCK_MAX || mine_stuck >= PATHS_PER_UID)
        return carma_resp_error("busy",
                                "%u path checks (%u of uid %u) wait on file systems that did "
                                "not answer within %g s: submit again once they answer",
                                stuck, mine_stuck, (unsigned)who->uid, d->cfg.path_check_s);
    /* (behind the user's waiting ones, if any: their turn comes first) */
    int now = paths_may_start(d, who->uid) && !psubs_of(d, who->uid, PSUB_CHECK_WAITS, NULL);
    unsigned all, mine = psubs_of(d, who->uid, now ? PSUB_CHECKED : PSUB_CHECK_WAITS, &all);
    if (now && all >= PATHS_MAX)
        return carma_resp_error("busy",
                                "%u submissions are having their paths checked (%u of uid %u), "
                                "the most carmad holds",
                                all, mine, (unsigned)who->uid);
    if (!now && all >= PATHS_WAIT_MAX)
        return carma_resp_error("busy",
                                "%u submissions wait for a path check of their user's to end "
                                "(%u of uid %u, which has %u being made or hanging), the most "
                                "carmad holds",
                                all, mine, (unsigned)who->uid, PATHS_PER_UID);
    struct psub *p = calloc(1, sizeof *p);
    if (!p)
        return carma_resp_error("nomem", "carmad is out of memory");
    p->q = *q;
    p->who = *who;
    p->paths_queued = 1;
    p->paths_deadline = carma_mono_s() + d->cfg.path_check_s; /* waiting: its turn by then */
    json_t *refused = now ? paths_start(d, p) : NULL;
    if (refused) {
        free(p); /* q is still the caller's */
        return refused;
    }
    memset(q, 0, sizeof *q); /* moved: the caller's carma_req_free has nothing to free */
    p->it.rj = &p->q.job;
    p->ci = ci;
    p->gen = d->conns[ci]->gen;
    if ((p->next = d->psubs))
        p->next->prev = p;
    d->psubs = p;
    d->conns[ci]->pending++; /* its next requests wait: answers keep their order */
    d->deferred = 1;
    d->publish = 1;
    return NULL;
}

static void psub_unlink(struct carmad *d, struct psub *p)
{
    if (p->prev)
        p->prev->next = p->next;
    else
        d->psubs = p->next;
    if (p->next)
        p->next->prev = p->prev;
}

/* Ends the waiting submission p: refused with resp, or (resp NULL) carried out with the
 * model bound model, whether its client still waits or not, as one carmad has read always
 * is; answered if it does. */
static void psub_end(struct carmad *d, struct psub *p, json_t *resp,
                     const struct carmad_model *model)
{
    psub_unlink(d, p);
    d->publish = 1;
    int live = conn_release(d, p->ci, p->gen) != NULL;
    d->deferred = 0;
    if (!resp)
        resp = submit_finish(d, p->ci, p->gen, &p->q, &p->who, model);
    if (live && (resp || !d->deferred))
        conn_send(d, p->ci, resp);
    else
        json_decref(resp);
    carma_req_free(&p->q);
    free(p);
}

/* Pushes uid's submissions waiting for the estimate queue into it, oldest first, while it
 * holds fewer than ESTQ_PER_UID of the uid's. */
static void estq_push_queued(struct carmad *d, uid_t uid)
{
    unsigned in = 0;
    struct psub *p = d->psubs, *last = NULL;
    for (; p; p = p->next) {
        in += p->who.uid == uid && psub_where(p) == PSUB_ESTIMATED;
        last = p;
    }
    for (p = last; p && in < ESTQ_PER_UID; p = p->prev)
        if (p->estq_queued && p->who.uid == uid) {
            p->estq_queued = 0;
            carmad_estq_push(d->estq, &p->it);
            in++;
        }
}

/* The finished path checks: a submission that passed goes on, with a summary to the
 * estimate queue (estq_take), without one into the queue. */
static void paths_take(struct carmad *d)
{
    static const struct carmad_model none = {0};
    uint64_t n;
    while (read(carmad_pathcheck_fd(d->paths), &n, sizeof n) > 0)
        ;
    struct carmad_pathcheck_item *it;
    while ((it = carmad_pathcheck_take(d->paths))) {
        struct psub *p = carmad_pathcheck_owner(it);
        uid_t uid = p->who.uid;
        /* (before p counts there) */
        unsigned in_all, in = psubs_of(d, uid, PSUB_ESTIMATED, &in_all);
        unsigned out_all, out = psubs_of(d, uid, PSUB_ESTIMATE_WAITS, &out_all);
        p->paths = NULL;
        enum carmad_path_verdict v = CARMAD_PATH_OK;
        struct carma_err e = {{0}};
        int rc = carmad_pathcheck_result(it, &v, &e);
        carmad_pathcheck_free(it);
        const struct carma_req_job *rj = &p->q.job;
        json_t *resp = NULL;
        if (rc) /* not "busy": the client would ask again for a minute, and this does not pass */
            resp = carma_resp_error(rc == -ENOMEM ? "nomem" : "forbidden",
                                    "cannot check the job's paths: %s", e.msg);
        else if (v == CARMAD_PATH_NO_CWD)
            resp = carma_resp_error("invalid", "job.cwd: %s is not a directory", rj->cwd);
        else if (v == CARMAD_PATH_NO_COMMAND)
            resp =
                carma_resp_error("invalid", "command not found or not executable: %s", rj->argv[0]);
        else if (!(rj->summary && rj->batch))
            ;
        else if (in < ESTQ_PER_UID && in_all >= ESTQ_MAX)
            resp = carma_resp_error("busy",
                                    "%u submissions are waiting for their summaries' "
                                    "estimates, the most carmad holds",
                                    in_all);
        else if (in >= ESTQ_PER_UID && out_all >= ESTQ_WAIT_MAX)
            resp = carma_resp_error("busy",
                                    "%u submissions wait outside the estimate queue (%u of uid "
                                    "%u, which has %u in it), the most carmad holds",
                                    out_all, out, (unsigned)uid, in);
        else {
            p->estq_queued = 1;
            estq_push_queued(d, uid);
            d->publish = 1; /* carma_estimates_waiting counts it now */
            continue;
        }
        psub_end(d, p, resp, &none);
    }
    paths_start_queued(d);
}

/* The earliest path_check_timeout deadline of the submissions whose paths are being
 * checked or wait for a check (carma_mono_s()), 0 none. */
static double paths_deadline(const struct carmad *d)
{
    double next = 0;
    for (const struct psub *p = d->psubs; p; p = p->next)
        if ((p->paths || p->paths_queued) && (next == 0 || p->paths_deadline < next))
            next = p->paths_deadline;
    return next;
}

/* The submissions whose path checks passed path_check_timeout: refused, their checks
 * abandoned (their threads wait on until the file system answers). Within an iteration,
 * as every other answer: iteration_end goes on with the requests their connections
 * pipelined behind them (conn_release) and publishes the counts. */
static void paths_expire(struct carmad *d)
{
    double now = carma_mono_s();
    for (struct psub *p = d->psubs, *nx; p; p = nx) {
        nx = p->next;
        if (!(p->paths || p->paths_queued) || now < p->paths_deadline)
            continue;
        int queued = p->paths_queued; /* its user's checks before it still hang */
        if (!queued) {
            carmad_pathcheck_abandon(d->paths, p->paths);
            p->paths = NULL;
        }
        const char *cwd = p->q.job.cwd;
        unsigned uid = (unsigned)p->who.uid;
        double s = d->cfg.path_check_s;
        unsigned mine, stuck = carmad_pathcheck_stuck(d->paths, p->who.uid, &mine);
        dlog(d, LOG_WARNING,
             "a submission of uid %u refused: its paths (cwd %s) %s within %g s%s; %u path "
             "checks wait on file systems (%u of that uid)",
             uid, cwd, queued ? "were not checked" : "did not answer", s,
             queued ? ", behind that uid's checks" : "", stuck, mine);
        psub_end(d, p,
                 queued ? carma_resp_error("invalid",
                                           "job.cwd: %s: its paths were not checked within %g s "
                                           "(path_check_timeout): uid %u's checks before it did "
                                           "not answer, a network or FUSE file system that "
                                           "hangs? The job was not submitted",
                                           cwd, s, uid)
                        : carma_resp_error("invalid",
                                           "job.cwd: %s or its command's folders did not answer "
                                           "within %g s (path_check_timeout): a network or FUSE "
                                           "file system that hangs? The job was not submitted",
                                           cwd, s),
                 NULL);
    }
}

/* The estimate queue's finished submissions (psub_end). */
static void estq_take(struct carmad *d)
{
    uint64_t n;
    while (read(carmad_estq_fd(d->estq), &n, sizeof n) > 0)
        ;
    struct carmad_estq_item *it;
    while ((it = carmad_estq_take(d->estq))) {
        struct psub *p = (struct psub *)(void *)((char *)it - offsetof(struct psub, it));
        uid_t uid = p->who.uid;
        d->estimates++;
        d->estimate_s += it->seconds;
        psub_end(d, p,
                 it->rc < 0 ? carma_resp_error("invalid", "job.summary: %s", it->err.msg) : NULL,
                 &it->model);
        estq_push_queued(d, uid);
    }
}

/* carmad stops: the submissions still waiting are refused, not carried out. */
static void estq_abort(struct carmad *d)
{
    carmad_estq_stop(d->estq);
    d->estq = NULL;
    for (struct psub *p = d->psubs; p; p = p->next) {
        p->paths_stopped = p->paths != NULL || p->paths_queued;
        p->paths = NULL;
        p->paths_queued = 0;
    }
    carmad_pathcheck_stop(d->paths); /* frees the items it holds */
    d->paths = NULL;
    while (d->psubs) {
        struct psub *p = d->psubs;
        psub_unlink(d, p);
        if (conn_release(d, p->ci, p->gen))
            conn_send(d, p->ci,
                      carma_resp_error("busy", p->paths_stopped
                                                   ? "carmad is stopping before this job's "
                                                     "paths were checked: the job was not "
                                                     "submitted"
                                                   : "carmad is stopping before this job's "
                                                     "summary was estimated: the job was "
                                                     "not submitted"));
        carma_req_free(&p->q);
        free(p);
    }
}

/* ---- jobs that run after others (carma submit --after; docs/daemon.md, "Jobs that run
 * after others") ---- */

/* after_met when all n listed jobs succeeded. */
static uint64_t after_all(uint32_t n)
{
    return n >= 64 ? UINT64_MAX : (UINT64_C(1) << n) - 1;
}

struct id_slot {
    uint64_t id;
    uint32_t slot; /* CARMA_NONE: in no slot */
};

static int id_slot_cmp(const void *a, const void *b)
{
    uint64_t x = ((const struct id_slot *)a)->id, y = ((const struct id_slot *)b)->id;
    return x < y ? -1 : x > y;
}

/* The owner and state of job id, which another runs after: 1 while it is queued or
 * running, 0 once it ended (*state final), -ENOENT when neither carmad nor the store holds
 * it, or another negative errno from the store (err says why). slot: the job's slot,
 * CARMA_NONE when it holds none. */
static int after_lookup(struct carmad *d, uint32_t slot, uint64_t id, uid_t *owner, int *state,
                        struct carma_err *err)
{
    if (slot != CARMA_NONE) {
        *owner = d->dj[slot].rec.uid;
        *state = d->sj[slot].state;
    } else {
        int rc = carma_store_job_state(d->store, id, owner, state, err);
        if (rc)
            return rc;
    }
    return *state == CARMA_JOB_QUEUED || *state == CARMA_JOB_RUNNING;
}

/* Ends waiting job i, which can never run now: job aid, which it runs after, ended in
 * `state`, not succeeded. It ends cancelled (it never ran, so it neither failed nor was
 * lost; as `carma cancel` of a queued job), its reason naming that job and how it ended;
 * the record joins the open transaction (*err: why it could not, when none is set yet),
 * undone as a cancel when the commit fails (iteration_end). */
static void after_end(struct carmad *d, uint32_t i, uint64_t aid, int state, double now,
                      struct carma_err *err)
{
    struct djob *dj = &d->dj[i];
    char why[160];
    snprintf(why, sizeof why, "not run: job %llu, which it was to run after, ended %s",
             (unsigned long long)aid, carma_job_state_name((enum carma_job_state)state));
    d->sj[i].state = CARMA_JOB_CANCELLED;
    dj->rec.end_s = now;
    free(dj->rec.reason);
    dj->rec.reason = strdup(why); /* NULL (out of memory): none, the log says why */
    dj->after_ended = 1;
    d->finished[CARMA_JOB_CANCELLED]++;
    d->publish = 1;
    touch(d, i);
    struct carma_err e = {{0}};
    if (save_job(d, i, &e) && !err->msg[0])
        *err = e;
}

/* Looks at the jobs waiting to run after others once a job ended (d->after_dirty): a
 * job whose listed jobs all succeeded joins the scheduler's main queue at its place in
 * submission order; one with a listed job that ended otherwise ends (after_end), and so,
 * in the same pass, do those waiting for it. A listed job the store no longer holds was
 * removed by the retention after it ended, and counts as succeeded: one that ended
 * otherwise ended its waiting jobs when it ended. A store that cannot be read leaves the
 * job waiting, looked at again at the next iteration. */
static void after_settle(struct carmad *d, double now, struct carma_err *err)
{
    if (!d->after_dirty)
        return;
    d->after_dirty = 0;
    size_t nwait = 0, nref = 0;
    for (uint32_t i = 0; i < d->cap; i++) {
        const struct djob *dj = &d->dj[i];
        if (!dj->used || !dj->after_wait || dj->after_ended || d->sj[i].state != CARMA_JOB_QUEUED)
            continue;
        nwait++;
        nref += dj->nafter;
    }
    if (!nwait)
        return;
    /* The waiting jobs in id order, and the jobs they wait for, by id, with their slots
     * (one walk of the slots, not a search of them per id). A job runs after jobs
     * submitted before it, of lower ids, so one walk in id order settles a chain: a job
     * ended here is seen ended by those after it. */
    struct id_slot *w = malloc(nwait * sizeof *w), *ref = malloc((nref ? nref : 1) * sizeof *ref);
    if (!w || !ref) {
        free(w);
        free(ref);
        dlog(d, LOG_WARNING,
             "out of memory looking at the jobs that run after others: "
             "looked at again at the next iteration");
        d->after_dirty = 1;
        return;
    }
    size_t nw = 0, nr = 0;
    for (uint32_t i = 0; i < d->cap; i++) {
        const struct djob *dj = &d->dj[i];
        if (!dj->used || !dj->after_wait || dj->after_ended || d->sj[i].state != CARMA_JOB_QUEUED)
            continue;
        w[nw++] = (struct id_slot){.id = dj->rec.id, .slot = i};
        for (uint32_t k = 0; k < dj->nafter; k++)
            if (!(dj->after_met >> k & 1))
                ref[nr++] = (struct id_slot){.id = dj->after[k], .slot = CARMA_NONE};
    }
    qsort(w, nw, sizeof *w, id_slot_cmp);
    qsort(ref, nr, sizeof *ref, id_slot_cmp);
    size_t nu = 0; /* each id once */
    for (size_t r = 0; r < nr; r++)
        if (!nu || ref[nu - 1].id != ref[r].id)
            ref[nu++] = ref[r];
    nr = nu;
    for (uint32_t i = 0; i < d->cap && nr; i++) {
        if (!d->dj[i].used)
            continue;
        struct id_slot key = {.id = d->dj[i].rec.id};
        struct id_slot *hit = bsearch(&key, ref, nr, sizeof *ref, id_slot_cmp);
        if (hit)
            hit->slot = i;
    }
    int released = 0;
    for (size_t x = 0; x < nw; x++) {
        uint32_t i = w[x].slot;
        struct djob *dj = &d->dj[i];
        int ended = 0;
        for (uint32_t k = 0; k < dj->nafter && !ended; k++) {
            if (dj->after_met >> k & 1)
                continue;
            struct id_slot key = {.id = dj->after[k]};
            const struct id_slot *r = bsearch(&key, ref, nr, sizeof *ref, id_slot_cmp);
            uid_t owner;
            int st = -1;
            struct carma_err e = {{0}};
            int rc = after_lookup(d, r ? r->slot : CARMA_NONE, dj->after[k], &owner, &st, &e);
            if (rc == 1)
                continue;
            if (rc < 0 && rc != -ENOENT) {
                dlog(d, LOG_WARNING, "job %llu: cannot read job %llu, which it runs after: %s",
                     (unsigned long long)dj->rec.id, (unsigned long long)dj->after[k], e.msg);
                d->after_dirty = 1;
                continue;
            }
            if (rc == -ENOENT || st == CARMA_JOB_SUCCEEDED) {
                dj->after_met |= UINT64_C(1) << k;
                continue;
            }
            after_end(d, i, dj->after[k], st, now, err);
            ended = 1;
        }
        if (!ended && dj->after_met == after_all(dj->nafter)) {
            dj->after_wait = 0;
            carma_sched_submit(&d->sched, i, now);
            dlog(d, LOG_INFO, "job %llu: the jobs it runs after succeeded: queued",
                 (unsigned long long)dj->rec.id);
            released = 1;
        }
    }
    free(w);
    free(ref);
    if (released) {
        /* its place in submission order: under FIFO as if it had waited in the queue from
         * its submission (as a restart queues the jobs, in id order), under fair share
         * among its user's jobs (fair_order sorts stably from this order) */
        for (uint32_t i = 0; i < d->cap; i++)
            d->fair_key[i] = d->dj[i].used ? (double)d->dj[i].rec.id : NAN;
        carma_sched_order(&d->sched, d->fair_key);
        d->dirty = 1;
        d->publish = 1;
    }
}

/* The rest of a submission, once its summary's model bound (model; zero without a summary)
 * is known: its slot, its bound and its row. Answers through pend_add_gen (NULL) or
 * returns an error (the jobs it runs after are checked here, as it is
 * recorded). */
static json_t *submit_finish(struct carmad *d, uint32_t ci, uint64_t gen, const struct carma_req *q,
                             const struct submitter *who, const struct carmad_model *model)
{
    const struct carma_req_job *rj = &q->job;
    const char *uname = who->uname;
    const char *lim = who->lim;
    /* the jobs it runs after: the submitter's own (root: anyone's), not ended otherwise
     * than succeeded; those that succeeded already are met at once */
    uint64_t met = 0;
    for (size_t k = 0; k < rj->nafter; k++) {
        uid_t owner = 0;
        int st = -1;
        struct carma_err e = {{0}};
        unsigned long long aid = (unsigned long long)rj->after[k];
        uint32_t slot;
        int rc = after_lookup(d, find_slot(d, rj->after[k], &slot) ? slot : CARMA_NONE,
                              rj->after[k], &owner, &st, &e);
        if (rc == -ENOENT)
            return carma_resp_error("notfound", "job.after: no job %llu", aid);
        if (rc < 0)
            return carma_resp_error("store", "job.after: job %llu: %s", aid, e.msg);
        if (who->uid != 0 && owner != who->uid)
            return carma_resp_error("invalid",
                                    "job.after: job %llu belongs to another user (a job runs "
                                    "after its own user's jobs only)",
                                    aid);
        if (rc == 0 && st == CARMA_JOB_SUCCEEDED)
            met |= UINT64_C(1) << k;
        else if (rc == 0)
            return carma_resp_error("invalid",
                                    "job.after: job %llu ended %s, not succeeded: this job "
                                    "would never run",
                                    aid, carma_job_state_name((enum carma_job_state)st));
    }
    uint32_t i;
    if (slot_alloc(d, &i))
        return carma_resp_error("busy", "too many active jobs");
    struct djob *dj = &d->dj[i];
    struct carma_job_rec *r = &dj->rec;
    r->rlimits = lim[0] ? strdup(lim) : NULL;
    json_t *argv = json_object_get(json_object_get(q->root, "job"), "argv");
    json_t *env = json_object();
    for (size_t k = 0; k < rj->nenv; k++)
        if (!env_denied(rj->env_key[k]))
            json_object_set_new(env, rj->env_key[k], json_string(rj->env_val[k]));
    const char *base = strrchr(rj->argv[0], '/');
    char derived[CARMA_PROTO_MAX_NAME + 1]; /* held to a given name's rules */
    carma_proto_name_from(base ? base + 1 : rj->argv[0], derived, sizeof derived);
    r->name = strdup(rj->name ? rj->name : derived);
    r->user = carma_utf8_lossy(uname); /* as shown: col_user's rule */
    r->cwd = strdup(rj->cwd);
    r->argv_json = json_dumps(argv, JSON_COMPACT);
    r->env_json = json_dumps(env, JSON_COMPACT);
    json_decref(env);
    r->summary = rj->summary ? strdup(rj->summary) : NULL;
    r->uid = who->uid;
    r->gid = who->gid;
    r->gpus = rj->gpus;
    r->batch = rj->batch;
    r->mem_mib = rj->mem_mib;
    struct carmad_bound jb;
    struct carma_err berr = {{0}};
    if (r->argv_json && carmad_job_bound_with(d->store, rj, r->argv_json, who->uid, d->kinds,
                                              d->nkinds, model, &jb, &berr) < 0) {
        slot_free(d, i);
        return carma_resp_error("invalid", "job.summary: %s", berr.msg);
    }
    r->bound_mib = r->argv_json ? jb.bound_mib : rj->mem_mib;
    r->bound_basis = r->argv_json ? strdup(jb.basis) : NULL;
    r->hist_sig = r->argv_json ? jb.hist_sig : 0;
    /* A framework told to map the GPU's memory at its start (TensorFlow without memory
     * growth, JAX with preallocation) holds a whole GPU whatever its model: its bound is
     * the largest GPU's memory, so it runs alone. */
    uint64_t whole = 0;
    for (size_t g = 0; g < d->ngpus; g++)
        if (d->gpus[g].mem_total_mib > whole)
            whole = d->gpus[g].mem_total_mib;
    long pre = carmad_bound_preallocating(rj, whole, &r->bound_mib, &r->bound_basis);
    /* a simulated job uses what was expected of it (the estimate, or the --mem its user
     * declared above it), not its bound: shown holding its bound, its peak taught history
     * a bound ever higher (the spread doubling each run) */
    if (r->argv_json && pre < 0 && jb.estimate_mib > 0) {
        uint64_t e = (uint64_t)ceil(jb.estimate_mib);
        dj->sim_mib = e > rj->mem_mib ? e : rj->mem_mib;
    }
    r->max_attempts = rj->max_attempts ? rj->max_attempts : d->cfg.max_attempts;
    r->time_limit_s = rj->time_limit_s; /* 0: none */
    r->umask = rj->umask; /* -1: not sent, the job gets CARMA_JOB_UMASK_DEFAULT */
    r->state = CARMA_JOB_QUEUED;
    r->submit_s = now_s();
    if (rj->nafter) {
        json_t *aj = json_array();
        for (size_t k = 0; aj && k < rj->nafter; k++)
            json_array_append_new(aj, json_integer((json_int_t)rj->after[k]));
        r->after = aj ? json_dumps(aj, JSON_COMPACT) : NULL;
        json_decref(aj);
        dj->after = malloc(rj->nafter * sizeof *dj->after);
        if (dj->after)
            memcpy(dj->after, rj->after, rj->nafter * sizeof *dj->after);
        dj->nafter = (uint32_t)rj->nafter;
        dj->after_met = met;
        dj->after_wait = met != after_all(dj->nafter);
    }
    struct carma_err err = {{0}};
    int rc = -ENOMEM;
    if (r->name && r->user && r->cwd && r->argv_json && r->env_json && r->bound_basis &&
        (!rj->summary || r->summary) && (!lim[0] || r->rlimits) &&
        (!rj->nafter || (r->after && dj->after))) {
        rc = store_tx(d, &err);
        if (!rc)
            rc = carma_store_job_insert(d->store, r, &err);
    }
    if (rc) {
        slot_free(d, i);
        if (rc == -ENOSPC)
            return carma_resp_error("store", "submission refused: the job store is full (%s)",
                                    err.msg);
        return carma_resp_error("store", "submission refused: %s",
                                err.msg[0] ? err.msg : strerror(-rc));
    }
    sj_from_rec(d, i);
    job_profile(d, i);
    if (!dj->after_wait) /* else it waits out of the queues (after_settle) */
        carma_sched_submit(&d->sched, i, r->submit_s);
    if (pre >= 0)
        dlog(d, LOG_NOTICE,
             "job %llu: %s=%s in its environment: TensorFlow or JAX would map the GPU's "
             "memory at its start; bound %llu MiB, placed alone",
             (unsigned long long)r->id, rj->env_key[pre], carma_quote(rj->env_val[pre], 16).s,
             (unsigned long long)r->bound_mib);
    dj->is_new = 1;
    touch(d, i);
    d->dirty = 1;
    json_t *ok = carma_resp_ok();
    json_object_set_new(ok, "id", json_integer((json_int_t)r->id));
    pend_add_gen(d, ci, gen, ok);
    return NULL;
}

static int may_see(const struct conn *c, uid_t owner)
{
    return c->uid == 0 || c->uid == owner;
}

/* Cancels job slot i, which its canceller may cancel: a queued job leaves the queue,
 * ended; a running one's cancel is recorded (its shepherd is signalled after the commit).
 * Returns 1 when cancelled (or its recorded cancel asked again), 0 when there is nothing
 * to do (it ended, or was cancelled in this iteration), or a negative errno from the store
 * (err set). */
static int cancel_one(struct carmad *d, uint32_t i, struct carma_err *err)
{
    struct djob *dj = &d->dj[i];
    /* ended (its slot kept until its end is stored): nothing to do, as for any ended job */
    if (dj->cancel_queued || dj->cancel_running || dj->end_final)
        return 0;
    if (dj->rec.cancel_requested) {
        /* recorded already: asked again, the shepherd is signalled again (a signal
         * lost to a carmad that died before sending it) */
        cancel_signal(d, i);
        return 1;
    }
    int rc = store_tx(d, err);
    if (d->sj[i].state == CARMA_JOB_QUEUED) {
        carma_sched_dequeue(&d->sched, i);
        d->sj[i].state = CARMA_JOB_CANCELLED;
        dj->rec.end_s = now_s();
        dj->cancel_queued = 1;
        d->finished[CARMA_JOB_CANCELLED]++; /* final without an attempt */
        d->after_dirty = 1;                 /* the jobs waiting for it end too */
        d->publish = 1;
        if (!rc)
            rc = save_job(d, i, err);
    } else {
        dj->rec.cancel_requested = 1;
        dj->cancel_running = 1;
        if (!dj->timed_out) /* (timelimit_tick sets it before calling here) */
            dj->cancel_asked = 1;
        if (!rc)
            rc = save_job(d, i, err);
    }
    touch(d, i);
    return rc < 0 ? rc : 1;
}

static json_t *req_cancel_all(struct carmad *d, uint32_t ci, const struct carma_req *q);

static json_t *req_cancel(struct carmad *d, uint32_t ci, const struct carma_req *q)
{
    if (q->all)
        return req_cancel_all(d, ci, q);
    struct conn *c = d->conns[ci];
    json_t *done = json_array();
    struct carma_err err = {{0}};
    for (size_t k = 0; k < q->nids; k++) {
        uint64_t id = q->ids[k];
        uint32_t i;
        if (!find_slot(d, id, &i)) {
            uid_t owner = 0; /* (its owner alone: its row may hold a 256 KiB argv) */
            int rc = carma_store_job_uid(d->store, id, &owner, &err);
            json_t *e;
            if (rc == -ENOENT)
                e = carma_resp_error("notfound", "no job %llu", (unsigned long long)id);
            else if (rc)
                e = carma_resp_error("store", "%s", err.msg);
            else if (!may_see(c, owner))
                e = carma_resp_error("forbidden", "job %llu belongs to another user",
                                     (unsigned long long)id);
            else
                e = NULL; /* already ended: nothing to do */
            if (e) {
                json_decref(done);
                return e;
            }
            continue;
        }
        struct djob *dj = &d->dj[i];
        if (!may_see(c, dj->rec.uid)) {
            json_decref(done);
            return carma_resp_error("forbidden", "job %llu belongs to another user",
                                    (unsigned long long)id);
        }
    }
    /* All ids are acceptable: apply. */
    for (size_t k = 0; k < q->nids; k++) {
        uint32_t i;
        if (!find_slot(d, q->ids[k], &i))
            continue;
        int rc = cancel_one(d, i, &err);
        if (rc < 0)
            break;
        if (rc)
            json_array_append_new(done, json_integer((json_int_t)q->ids[k]));
    }
    json_t *ok = carma_resp_ok();
    json_object_set_new(ok, "cancelled", done);
    pend_add(d, ci, ok);
    return NULL;
}

struct cancel_match {
    uint64_t id;
    uint32_t i; /* its slot */
};

static int cancel_match_cmp(const void *a, const void *b)
{
    uint64_t x = ((const struct cancel_match *)a)->id, y = ((const struct cancel_match *)b)->id;
    return x < y ? -1 : x > y;
}

/* carma cancel --all: every active job that matches q's filters ("state", "name") among
 * the caller's, or, for root only, one user's ("user") or every user's ("all_users"), is
 * cancelled in this one request: matched and cancelled in one turn of the loop and one
 * store transaction, so that no job is half-handled and none started or submitted
 * meanwhile slips between a list and its cancel. Root must say whose: a bare "all" from
 * root (who sees every user's jobs) would end every user's work by a slip of the
 * fingers. Answers the ids cancelled, ascending (the first CARMA_PROTO_MAX_CANCELLED),
 * and their "count"; no match is no error (an empty list, as scancel exits 0). */
static json_t *req_cancel_all(struct carmad *d, uint32_t ci, const struct carma_req *q)
{
    struct conn *c = d->conns[ci];
    int64_t uid = c->uid;     /* whose jobs: -1 any user's */
    const char *uname = NULL; /* a removed account's: the name its jobs were submitted under */
    char self[256];
    user_name(c->uid, self, sizeof self, NULL);
    if (c->uid != 0 && (q->all_users || (q->user && strcmp(q->user, self))))
        return carma_resp_error("forbidden", "permission denied: only root cancels the jobs "
                                             "of other users");
    if (c->uid == 0 && !q->user && !q->all_users)
        return carma_resp_error("invalid",
                                "root cancels all the jobs of one user (\"user\": carma "
                                "cancel --all --user NAME; root's own: --user root) or of "
                                "every user (\"all_users\": --all-users), said explicitly");
    if (c->uid == 0 && q->all_users) {
        uid = -1;
    } else if (c->uid == 0) {
        /* the account's uid while it exists (as carma usage --user), else the name */
        struct passwd pw, *res = NULL;
        char buf[1024];
        if (getpwnam_r(q->user, &pw, buf, sizeof buf, &res) == 0 && res) {
            uid = res->pw_uid;
        } else {
            uid = -1;
            uname = q->user;
        }
    }
    size_t n = 0;
    struct cancel_match *m = malloc((d->cap ? d->cap : 1) * sizeof *m);
    if (!m)
        return carma_resp_error("nomem", "out of memory");
    for (uint32_t i = 0; i < d->cap; i++) {
        const struct djob *dj = &d->dj[i];
        uint8_t st = d->sj[i].state;
        if (!dj->used || dj->end_final || dj->cancel_queued || dj->cancel_running ||
            (st != CARMA_JOB_QUEUED && st != CARMA_JOB_RUNNING) ||
            (q->cancel_state == CARMA_CANCEL_QUEUED && st != CARMA_JOB_QUEUED) ||
            (q->cancel_state == CARMA_CANCEL_RUNNING && st != CARMA_JOB_RUNNING) ||
            (uid >= 0 && dj->rec.uid != (uid_t)uid) ||
            (uname && (!dj->rec.user || strcmp(dj->rec.user, uname))) ||
            (q->name && (!dj->rec.name || strcmp(dj->rec.name, q->name))))
            continue;
        m[n++] = (struct cancel_match){dj->rec.id, i};
    }
    qsort(m, n, sizeof *m, cancel_match_cmp);
    json_t *done = json_array();
    struct carma_err err = {{0}};
    size_t count = 0;
    for (size_t k = 0; k < n; k++) {
        int rc = cancel_one(d, m[k].i, &err);
        if (rc < 0)
            break;
        if (rc && count++ < CARMA_PROTO_MAX_CANCELLED)
            json_array_append_new(done, json_integer((json_int_t)m[k].id));
    }
    free(m);
    if (count)
        dlog(d, LOG_NOTICE, "carma cancel --all by %s: %zu job%s of %s%s%s%s%s cancelled", self,
             count, count == 1 ? "" : "s",
             q->all_users ? "every user"
             : q->user    ? carma_quote(q->user, 64).s
                          : self,
             q->cancel_state == CARMA_CANCEL_QUEUED    ? ", queued"
             : q->cancel_state == CARMA_CANCEL_RUNNING ? ", running"
                                                       : "",
             q->name ? ", named '" : "", q->name ? carma_quote(q->name, 64).s : "",
             q->name ? "'" : "");
    json_t *ok = carma_resp_ok();
    json_object_set_new(ok, "cancelled", done);
    json_object_set_new(ok, "count", json_integer((json_int_t)count));
    pend_add(d, ci, ok);
    return NULL;
}

/* ---- carma drain / undrain (docs/daemon.md, "Draining a GPU by hand") ---- */

/* The GPU a drain or undrain request q of connection ci names (by index or UUID): its
 * index, or -1 with *resp the refusal (only root or carmad's own uid may do either) or
 * the error. */
static long drain_target(struct carmad *d, uint32_t ci, const struct carma_req *q, const char *op,
                         json_t **resp)
{
    *resp = NULL;
    uid_t u = d->conns[ci]->uid;
    if (u != 0 && u != d->self_uid) {
        *resp = carma_resp_error("forbidden",
                                 "permission denied: only root or carmad's own user (uid %u) "
                                 "may %s a GPU",
                                 (unsigned)d->self_uid, op);
        return -1;
    }
    if (q->all) /* (drain_many: the permission only) */
        return 0;
    long g = q->gpu_uuid ? gpu_index_of(d, q->gpu_uuid) : (long)q->gpu;
    if (q->gpu_uuid && g < 0)
        *resp = carma_resp_error("notfound", "no GPU %s on this server (carma gpus lists them)",
                                 q->gpu_uuid);
    else if (g >= (long)d->ngpus)
        *resp = carma_resp_error("notfound",
                                 "no GPU %ld: this server's GPUs are 0 to %ld "
                                 "(carma gpus lists them)",
                                 g, (long)d->ngpus - 1);
    return *resp ? -1 : g;
}

static json_t *drain_answer(struct carmad *d, long g, const char *key, const char *reason,
                            int already)
{
    json_t *ok = carma_resp_ok();
    json_object_set_new(ok, "gpu", json_integer(g));
    json_object_set_new(ok, "uuid", json_string(d->gs[g].info.uuid));
    json_object_set_new(ok, key, json_string(reason));
    json_object_set_new(ok, "already", json_boolean(already));
    return ok;
}

/* Whether STATE/drained (as carmad keeps it) has a line for the GPU of this UUID. */
static int drained_has(const struct carmad *d, const char *uuid)
{
    for (size_t k = 0; d->drained && k < d->ndrained; k++)
        if (!strcmp(d->drained[k].uuid, uuid))
            return 1;
    return 0;
}

/* The answer to carma drain of GPU g, drained already (its reason kept), logged: kept_as
 * (NULL: none) is the line this drain wrote to STATE/drained for it, when its drain was
 * not kept over restarts before (lost, silent, MIG: the admin's drain is what holds once
 * the GPU is back). */
static json_t *drain_already(struct carmad *d, long g, const char *user, const char *kept_as)
{
    const struct carma_mon_gpu *mg = &d->mon.g[g];
    const char *uuid = d->gs[g].info.uuid;
    json_t *o = drain_answer(d, g, "reason", mg->drain_reason, 1);
    if (kept_as) {
        dlog(d, LOG_NOTICE,
             "GPU %ld (%s): carma drain by %s: drained already (%s); kept drained over "
             "restarts as: %s",
             g, uuid, user, mg->drain_reason, kept_as);
        json_object_set_new(o, "kept_as", json_string(kept_as));
    } else {
        dlog(d, LOG_NOTICE,
             "GPU %ld (%s): carma drain by %s: drained already (%s); its reason kept", g, uuid,
             user, mg->drain_reason);
    }
    return o;
}

/* Why drained GPU g may not be undrained now (MIG enabled, lost, silent), or NULL. */
static const char *undrain_unready(const struct carmad *d, long g)
{
    if (d->gs[g].info.mig_mode == 1)
        return "has MIG enabled, which carma does not place jobs on yet";
    return carma_mon_unready(&d->mon, (size_t)g);
}

/* carma drain / undrain of several GPUs ("gpus") or of every GPU ("all"): all or nothing.
 * Every GPU named is checked first (one that is no GPU of this server, one named twice,
 * for an undrain a listed one that may not be put back): one refused refuses the whole
 * request, nothing changed. Their lines of STATE/drained are then written in one write
 * (undone in memory when it fails, nothing changed either), and only then do the drains
 * or undrains hold. The answer has each GPU's outcome as a single request's answer, in
 * "gpus"; an undrain of "all" leaves a GPU that may not be put back drained, its
 * "stays_drained" saying why, rather than keep every other GPU out of service. */
static json_t *req_drain_many(struct carmad *d, uint32_t ci, const struct carma_req *q, int drain)
{
    const char *op = drain ? "drain" : "undrain", *done = drain ? "drained" : "undrained";
    json_t *resp;
    if (drain_target(d, ci, &(struct carma_req){.all = 1}, op, &resp) < 0)
        return resp;
    size_t n = q->all ? d->ngpus : q->ngpu_list;
    long *gs = calloc(n ? n : 1, sizeof *gs);
    const char **stay = calloc(n ? n : 1, sizeof *stay);
    unsigned char *fresh = calloc(n ? n : 1, 1); /* drained already, its line new */
    struct carmad_drained *snap = malloc(CARMAD_DRAINED_MAX * sizeof *snap);
    json_t *list = json_array();
    if (!gs || !stay || !fresh || !snap || !list || !d->drained) {
        resp = carma_resp_error("nomem", "out of memory: no GPU %s", done);
        goto out;
    }
    for (size_t k = 0; k < n; k++) {
        gs[k] = (long)k;
        if (!q->all) {
            const struct carma_req_gpu *e = &q->gpu_list[k];
            struct carma_req one = {.op = q->op, .gpu = e->index, .gpu_uuid = e->uuid};
            if ((gs[k] = drain_target(d, ci, &one, op, &resp)) < 0) {
                json_t *r =
                    carma_resp_error(json_string_value(json_object_get(resp, "error")),
                                     "%s; none of the %zu GPUs listed was %s",
                                     json_string_value(json_object_get(resp, "message")), n, done);
                json_decref(resp);
                resp = r;
                goto out;
            }
        }
        for (size_t j = 0; j < k; j++)
            if (gs[j] == gs[k]) {
                resp = carma_resp_error("invalid",
                                        "GPU %ld (%s) is named twice; none of the %zu GPUs "
                                        "listed was %s",
                                        gs[k], d->gs[gs[k]].info.uuid, n, done);
                goto out;
            }
        if (!drain && d->mon.g[gs[k]].drained && (stay[k] = undrain_unready(d, gs[k])) && !q->all) {
            resp = carma_resp_error("invalid",
                                    "GPU %ld (%s) %s: it stays drained; none of the %zu GPUs "
                                    "listed was undrained",
                                    gs[k], d->gs[gs[k]].info.uuid, stay[k], n);
            goto out;
        }
    }
    char user[256], why[CARMAD_DRAINED_REASON];
    user_name(d->conns[ci]->uid, user, sizeof user, NULL);
    carmad_drained_manual_reason(why, sizeof why, user, now_s(), q->reason);
    /* STATE/drained first, in one write: undone in memory when it fails */
    size_t nsnap = d->ndrained;
    memcpy(snap, d->drained, nsnap * sizeof *snap);
    struct carma_err err = {{0}};
    int rc = 0, changed = 0;
    for (size_t k = 0; k < n && rc >= 0; k++) {
        const struct carma_mon_gpu *mg = &d->mon.g[gs[k]];
        const char *uuid = d->gs[gs[k]].info.uuid;
        /* a GPU drained already without a line (lost, silent, MIG: not kept over restarts)
         * gets this drain's, as one in service does */
        if (drain) {
            rc = carmad_drained_add(d->drained, &d->ndrained, CARMAD_DRAINED_MAX, uuid, why);
            fresh[k] = mg->drained && rc > 0;
        } else if (mg->drained && !stay[k])
            rc = carmad_drained_remove(d->drained, &d->ndrained, uuid);
        changed |= rc > 0;
    }
    if (rc < 0)
        carma_err_set(&err, rc, "%s/drained: %s", d->state_dir, strerror(-rc));
    else if (changed || d->drained_unsaved)
        rc = drained_save(d, &err);
    if (rc < 0) {
        memcpy(d->drained, snap, nsnap * sizeof *snap);
        d->ndrained = nsnap;
        resp = carma_resp_error("store", "%s: none of the %zu GPUs was %s", err.msg, n, done);
        goto out;
    }
    for (size_t k = 0; k < n; k++) {
        long g = gs[k];
        struct carma_mon_gpu *mg = &d->mon.g[g];
        const char *uuid = d->gs[g].info.uuid;
        json_t *o;
        if (drain && mg->drained) {
            o = drain_already(d, g, user, fresh[k] ? why : NULL);
        } else if (drain) {
            carma_mon_drain(&d->mon, (size_t)g, why);
            o = drain_answer(d, g, "reason", why, 0);
        } else if (!mg->drained) {
            dlog(d, LOG_NOTICE, "GPU %ld (%s): carma undrain by %s: in service already", g, uuid,
                 user);
            o = drain_answer(d, g, "was", "", 1);
        } else if (stay[k]) {
            dlog(d, LOG_NOTICE, "GPU %ld (%s): carma undrain all by %s: %s: it stays drained", g,
                 uuid, user, stay[k]);
            o = drain_answer(d, g, "was", mg->drain_reason, 0);
            json_object_set_new(o, "stays_drained", json_string(stay[k]));
        } else {
            char was[sizeof mg->drain_reason];
            snprintf(was, sizeof was, "%s", mg->drain_reason);
            carma_mon_undrain(&d->mon, (size_t)g);
            dlog(d, LOG_NOTICE,
                 "GPU %ld (%s) undrained by %s: back in service (it was drained: %s)", g, uuid,
                 user, was);
            o = drain_answer(d, g, "was", was, 0);
        }
        json_object_del(o, "ok");
        json_array_append_new(list, o);
    }
    d->dirty = 1;
    d->publish = 1;
    resp = carma_resp_ok();
    json_object_set_new(resp, "gpus", list);
    list = NULL;
out:
    json_decref(list);
    free(gs);
    free(stay);
    free(fresh);
    free(snap);
    return resp;
}

/* Drains a GPU: no new attempt goes to it, those on it run to their end. Its line in
 * STATE/drained is written before the drain holds; a GPU drained already keeps its
 * reason (an Xid's says it needs a reset) and is kept drained over restarts from now on. */
static json_t *req_drain(struct carmad *d, uint32_t ci, const struct carma_req *q)
{
    if (q->all || q->gpu_list)
        return req_drain_many(d, ci, q, 1);
    json_t *resp;
    long g = drain_target(d, ci, q, "drain", &resp);
    if (g < 0)
        return resp;
    const char *uuid = d->gs[g].info.uuid;
    char user[256];
    user_name(d->conns[ci]->uid, user, sizeof user, NULL);
    struct carma_mon_gpu *mg = &d->mon.g[g];
    char why[CARMAD_DRAINED_REASON];
    carmad_drained_manual_reason(why, sizeof why, user, now_s(), q->reason);
    if (mg->drained) {
        /* without a line, its drain is one carmad does not keep over restarts (lost,
         * silent, MIG: seen again at start): the line kept is this drain's */
        int fresh = !drained_has(d, uuid);
        struct carma_err err = {{0}};
        int rc = drained_add(d, (size_t)g, why, &err);
        if (rc < 0 && fresh && d->drained) /* refused: no later save writes it */
            carmad_drained_remove(d->drained, &d->ndrained, uuid);
        if (rc < 0)
            return carma_resp_error("store",
                                    "%s: GPU %ld is drained (%s), but not kept so over carmad's "
                                    "restarts",
                                    err.msg, g, mg->drain_reason);
        return drain_already(d, g, user, fresh ? why : NULL);
    }
    struct carma_err err = {{0}};
    int rc = d->drained
                 ? carmad_drained_add(d->drained, &d->ndrained, CARMAD_DRAINED_MAX, uuid, why)
                 : -ENOMEM;
    if (rc < 0)
        carma_err_set(&err, rc, "%s/drained: %s", d->state_dir, strerror(-rc));
    else if (rc > 0 && (rc = drained_save(d, &err)) < 0)
        carmad_drained_remove(d->drained, &d->ndrained, uuid);
    if (rc < 0)
        return carma_resp_error("store", "%s: GPU %ld not drained", err.msg, g);
    carma_mon_drain(&d->mon, (size_t)g, why);
    d->dirty = 1;
    d->publish = 1;
    return drain_answer(d, g, "reason", why, 0);
}

/* Puts a drained GPU back in service, its line out of STATE/drained first; one in service
 * already is answered ok with `already` true. */
static json_t *req_undrain(struct carmad *d, uint32_t ci, const struct carma_req *q)
{
    if (q->all || q->gpu_list)
        return req_drain_many(d, ci, q, 0);
    json_t *resp;
    long g = drain_target(d, ci, q, "undrain", &resp);
    if (g < 0)
        return resp;
    const char *uuid = d->gs[g].info.uuid;
    struct carma_mon_gpu *mg = &d->mon.g[g];
    if (!mg->drained) {
        /* as a second drain: what was asked holds (the GPU is in service), said, not
         * refused; `was` is empty for the clients that expect it */
        char user[256];
        user_name(d->conns[ci]->uid, user, sizeof user, NULL);
        dlog(d, LOG_NOTICE, "GPU %ld (%s): carma undrain by %s: in service already", g, uuid, user);
        return drain_answer(d, g, "was", "", 1);
    }
    /* one still lost or silent would take new attempts until the next samples drained it
     * again: they would fail on it */
    const char *unready = undrain_unready(d, g);
    if (unready)
        return carma_resp_error("invalid", "GPU %ld (%s) %s: it stays drained", g, uuid, unready);
    size_t k = 0;
    while (d->drained && k < d->ndrained && strcmp(d->drained[k].uuid, uuid))
        k++;
    if (d->drained && k < d->ndrained) {
        struct carmad_drained line = d->drained[k];
        carmad_drained_remove(d->drained, &d->ndrained, uuid);
        struct carma_err err = {{0}};
        int rc = drained_save(d, &err);
        if (rc < 0) {
            carmad_drained_add(d->drained, &d->ndrained, CARMAD_DRAINED_MAX, line.uuid,
                               line.reason);
            return carma_resp_error("store", "%s: GPU %ld stays drained", err.msg, g);
        }
    }
    char was[sizeof mg->drain_reason], user[256];
    snprintf(was, sizeof was, "%s", mg->drain_reason);
    user_name(d->conns[ci]->uid, user, sizeof user, NULL);
    carma_mon_undrain(&d->mon, (size_t)g);
    dlog(d, LOG_NOTICE, "GPU %ld (%s) undrained by %s: back in service (it was drained: %s)", g,
         uuid, user, was);
    d->dirty = 1;
    d->publish = 1;
    return drain_answer(d, g, "was", was, 0);
}

/* Why job i is not running (carma_sched_why) as o's waiting_code and waiting_reason, null
 * once it runs. cache (NULL: none) is a JSON object by job id of the answers worked out
 * since its last refresh: one found there is reused, one not is worked out and added. */
static void waiting_json(struct carmad *d, uint32_t i, json_t *o, double now, json_t *cache)
{
    json_t *code = NULL, *text = NULL;
    const struct djob *adj = &d->dj[i];
    if (adj->after_wait && d->sj[i].state == CARMA_JOB_QUEUED) {
        /* out of the scheduler's queues until the jobs it runs after succeed */
        char buf[64 + CARMA_PROTO_MAX_AFTER * 42];
        size_t len = 0, pend = 0;
        for (uint32_t k = 0; k < adj->nafter; k++)
            pend += !(adj->after_met >> k & 1);
        len += (size_t)snprintf(buf, sizeof buf, "waits until job%s ", pend > 1 ? "s" : "");
        for (uint32_t k = 0, m = 0; k < adj->nafter && len < sizeof buf; k++)
            if (!(adj->after_met >> k & 1))
                len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%llu", m++ ? ", " : "",
                                        (unsigned long long)adj->after[k]);
        if (len < sizeof buf)
            len += (size_t)snprintf(buf + len, sizeof buf - len, " %s succeeded (--after ",
                                    pend > 1 ? "have" : "has");
        for (uint32_t k = 0; k < adj->nafter && len < sizeof buf; k++)
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%llu", k ? "," : "",
                                    (unsigned long long)adj->after[k]);
        if (len < sizeof buf)
            snprintf(buf + len, sizeof buf - len, ")");
        json_object_set_new(o, "waiting_code", json_string("after"));
        json_object_set_new(o, "waiting_reason", json_string(buf));
        return;
    }
    if (d->sj[i].state == CARMA_JOB_QUEUED) {
        char key[24];
        snprintf(key, sizeof key, "%llu", (unsigned long long)d->dj[i].rec.id);
        json_t *hit = cache ? json_object_get(cache, key) : NULL;
        if (hit) {
            code = json_incref(json_array_get(hit, 0));
            text = json_incref(json_array_get(hit, 1));
        } else {
            struct carma_sched_why why;
            if (carma_sched_why(&d->sched, i, now, &why) == 0) {
                if (why.code == CARMA_WHY_BEYOND_SERVICE) /* until GPUs are undrained */
                    snprintf(why.text + strlen(why.text), sizeof why.text - strlen(why.text),
                             " (carma gpus says why)");
                code = json_string(carma_why_name(why.code));
                text = json_string(why.text);
                if (cache && code && text)
                    json_object_set_new(cache, key, json_pack("[OO]", code, text));
            }
        }
    }
    /* launches paused (launch_pause): said first, for the time left (not kept in cache) */
    if (text && launches_paused(d)) {
        char buf[CARMA_ERR_MAX + 512];
        double left = ceil(d->launch_pause_until - carma_mono_s());
        const char *then = code ? json_string_value(code) : NULL;
        snprintf(buf, sizeof buf,
                 "launches paused for %.0f s more: cannot start shepherds (%s); then, %s: %s",
                 left > 1 ? left : 1, d->launch_pause_why, then ? then : "waiting",
                 json_string_value(text));
        json_t *t = json_string(buf), *c = json_string("paused");
        if (t && c) {
            json_decref(text);
            text = t;
            if (code)
                json_decref(code);
            code = c;
        } else {
            json_decref(t);
            json_decref(c);
        }
    }
    json_object_set_new(o, "waiting_code", code ? code : json_null());
    json_object_set_new(o, "waiting_reason", text ? text : json_null());
}

/* Adds the running attempt's accounting (and the queued time so far) to a job's JSON
 * view of its ended attempts, and why it waits if it does (waiting_json, why_cache). */
static void live_usage(struct carmad *d, uint32_t i, json_t *o, double now, json_t *why_cache)
{
    const struct djob *dj = &d->dj[i];
    const struct carma_job *j = &d->sj[i];
    double run = dj->rec.run_s, gs = dj->rec.gpu_s, en = dj->rec.energy_j;
    if (j->state == CARMA_JOB_RUNNING && j->start_s > 0 && now > j->start_s) {
        run += now - j->start_s;
        gs += (now - j->start_s) * held_gpus(d, i);
        en += dj->att_energy_j;
        json_object_set_new(o, "mem_now_mib", mem_now_json(dj));
        json_object_set_new(o, "attempt_peak_mib", json_integer((json_int_t)dj->peak_mib));
    }
    double wait = now - dj->rec.submit_s - run;
    json_object_set_new(o, "run_s", json_real(run));
    json_object_set_new(o, "gpu_seconds", json_real(gs));
    json_object_set_new(o, "energy_j", json_real(en));
    json_object_set_new(o, "wait_s", json_real(wait > 0 ? wait : 0));
    json_object_set_new(o, "solo_smact", j->smact >= 0 ? json_real(j->smact) : json_null());
    /* of "after", the jobs it still waits for ([] once they all succeeded) */
    json_t *pend = json_array();
    for (uint32_t k = 0; pend && dj->after_wait && k < dj->nafter; k++)
        if (!(dj->after_met >> k & 1))
            json_array_append_new(pend, json_integer((json_int_t)dj->after[k]));
    json_object_set_new(o, "after_pending", pend ? pend : json_null());
    waiting_json(d, i, o, now, why_cache);
}

static json_t *req_show(struct carmad *d, uint32_t ci, const struct carma_req *q, int logs)
{
    struct conn *c = d->conns[ci];
    struct carma_job_rec r = {0};
    carma_job_rec_clear(&r);
    struct carma_err err = {{0}};
    uint32_t i;
    int live = find_slot(d, q->id, &i);
    int rc = carma_store_job_get(d->store, q->id, &r, &err);
    if (rc == -ENOENT) {
        carma_job_rec_clear(&r);
        return carma_resp_error("notfound", "no job %llu", (unsigned long long)q->id);
    }
    if (rc) {
        carma_job_rec_clear(&r);
        return carma_resp_error("store", "%s", err.msg);
    }
    if (!may_see(c, r.uid)) {
        carma_job_rec_clear(&r);
        return carma_resp_error("forbidden", "job %llu belongs to another user",
                                (unsigned long long)q->id);
    }
    json_t *ok = carma_resp_ok();
    if (logs) {
        char dir[PATH_MAX], p[PATH_MAX + 16];
        uint32_t n = r.attempts ? r.attempts : 1;
        attempt_dir(d, r.id, n, dir, sizeof dir);
        json_object_set_new(ok, "id", json_integer((json_int_t)r.id));
        json_object_set_new(ok, "attempt", json_integer(r.attempts));
        json_object_set_new(ok, "state", json_string(carma_job_state_name(r.state)));
        snprintf(p, sizeof p, "%s/stdout", dir);
        json_object_set_new(ok, "stdout", json_string(p));
        snprintf(p, sizeof p, "%s/stderr", dir);
        json_object_set_new(ok, "stderr", json_string(p));
    } else {
        json_t *job = carma_store_rec_json(&r);
        json_error_t je;
        json_object_set_new(job, "argv", json_loads(r.argv_json, 0, &je));
        json_object_set_new(job, "cwd", json_string(r.cwd));
        json_object_set_new(job, "cancel_requested", json_boolean(r.cancel_requested));
        json_t *att = NULL;
        if (carma_store_attempts_json(d->store, r.id, &att, &err) == 0)
            json_object_set_new(job, "attempt_list", att);
        double now = now_s();
        if (live && d->sj[i].state == CARMA_JOB_RUNNING) {
            json_object_set_new(job, "gpu_uuids", job_gpus_json(d, i));
            /* the running attempt's time to its limit, 0 once past (being ended) */
            if (r.time_limit_s && r.start_s > 0) {
                double left = r.start_s + r.time_limit_s - now;
                json_object_set_new(job, "time_left_s",
                                    json_integer(left > 0 ? (json_int_t)ceil(left) : 0));
            }
            json_object_set_new(job, "shepherd_pid", json_integer(d->dj[i].shepherd));
            /* the running attempt's usage as of now, as the job's own below: the store
             * holds it as of the last accounting flush only (up to a minute old) */
            const struct carma_job *j = &d->sj[i];
            size_t k;
            json_t *a;
            json_array_foreach(att, k, a) {
                if (json_integer_value(json_object_get(a, "n")) != (json_int_t)j->attempts ||
                    j->start_s <= 0 || now <= j->start_s)
                    continue;
                json_object_set_new(a, "gpu_seconds",
                                    json_real((now - j->start_s) * held_gpus(d, i)));
                json_object_set_new(a, "energy_j", json_real(d->dj[i].att_energy_j));
            }
        }
        if (live)
            live_usage(d, i, job, now, NULL);
        uint32_t pos = live ? carma_sched_position(&d->sched, i) : 0;
        if (pos) { /* its place as the last step left the queues (order = fair: sorted) */
            json_object_set_new(job, "queue_position", json_integer(pos));
            json_object_set_new(job, "queue_length",
                                json_integer((json_int_t)carma_sched_queued(&d->sched)));
            json_object_set_new(job, "queue_order",
                                json_string(d->cfg.order_fair ? "fair" : "fifo"));
        }
        json_object_set_new(ok, "job", job);
    }
    carma_job_rec_clear(&r);
    return ok;
}

/* One page of `ls`: jobs with ids above q->after, ascending, at most q->limit
 * (default CARMA_PROTO_LS_PAGE) and about LS_PAGE_BYTES of JSON, so that any page
 * fits one protocol line; "next" (the last id) says that more follow. */
static json_t *req_ls(struct carmad *d, uint32_t ci, const struct carma_req *q)
{
    struct conn *c = d->conns[ci];
    uint32_t limit = q->limit ? q->limit : CARMA_PROTO_LS_PAGE;
    json_t *arr = json_array();
    struct carma_err err = {{0}};
    if (carma_store_list_json(d->store, c->uid == 0 ? -1 : (int64_t)c->uid, q->all, q->after,
                              limit + 1, arr, &err)) {
        json_decref(arr);
        return carma_resp_error("store", "%s", err.msg);
    }
    size_t k, keep = json_array_size(arr) > limit ? limit : json_array_size(arr), bytes = 0;
    double now = now_s();
    json_t *o;
    json_array_foreach(arr, k, o) {
        if (k == keep)
            break;
        uint32_t i;
        uint64_t id = (uint64_t)json_integer_value(json_object_get(o, "id"));
        if (find_slot(d, id, &i)) { /* running jobs: their GPUs and usage so far */
            if (d->sj[i].state == CARMA_JOB_RUNNING)
                json_object_set_new(o, "gpu_uuids", job_gpus_json(d, i));
            live_usage(d, i, o, now, NULL);
        }
        bytes += json_dumpb(o, NULL, 0, JSON_COMPACT) + 1;
        if (bytes > LS_PAGE_BYTES && k > 0) {
            keep = k;
            break;
        }
    }
    int more = json_array_size(arr) > keep;
    while (json_array_size(arr) > keep)
        json_array_remove(arr, keep);
    json_t *ok = carma_resp_ok();
    if (more && keep)
        json_object_set(ok, "next", json_object_get(json_array_get(arr, keep - 1), "id"));
    json_object_set_new(ok, "jobs", arr);
    return ok;
}

/* GPU g's last sample while it is current: a GPU that stopped answering (lost) keeps
 * its last sample, which must not pass for the present. */
static const struct carma_gpu_sample *fresh_sample(const struct carmad *d, size_t g, double now)
{
    const struct carma_mon_gpu *m = d->have_mon ? &d->mon.g[g] : NULL;
    if (!m || !m->have || now - m->prev_t > 3 * d->cfg.monitor_interval_s + 1)
        return NULL;
    return &m->last;
}

static json_t *opt_real(double v)
{
    return v >= 0 ? json_real(v) : json_null();
}

/* The GPUs as JSON: facts, the last sample, window statistics, and the jobs on each.
 * viewer: the uid asking (job names shown to their owner and root), or -1 for all
 * (the HTTP endpoint). */
static json_t *gpus_json(struct carmad *d, int64_t viewer)
{
    json_t *arr = json_array();
    double now = now_s();
    for (size_t g = 0; g < d->ngpus; g++) {
        const struct gpu_state *s = &d->gs[g];
        const struct carma_gpu *v = &d->gpus[g];
        const struct carma_mon_gpu *mg = d->have_mon ? &d->mon.g[g] : NULL;
        const struct carma_gpu_sample *ls = fresh_sample(d, g, now);
        json_t *jobs = json_array(), *jl = json_array();
        for (uint32_t i = 0; i < d->cap; i++) {
            if (!d->dj[i].used || d->sj[i].state != CARMA_JOB_RUNNING)
                continue;
            for (uint16_t k = 0; k < d->sj[i].nplaced; k++)
                if (d->sj[i].gpu[k] == g) {
                    const struct djob *dj = &d->dj[i];
                    json_array_append_new(jobs, json_integer((json_int_t)dj->rec.id));
                    int named = viewer < 0 || viewer == 0 || (uint32_t)viewer == dj->rec.uid;
                    json_t *o =
                        json_pack("{s:I,s:s,s:o,s:I,s:f}", "id", (json_int_t)dj->rec.id, "user",
                                  dj->rec.user, "mem_mib", mem_now_json(dj), "held_mib",
                                  (json_int_t)d->sj[i].held_mib, "run_s", now - d->sj[i].start_s);
                    json_object_set_new(o, "name", named ? json_string(dj->rec.name)
                                                         : json_null());
                    /* what it holds now: the job's own field's name ("mem_mib" here is
                     * the old name, kept for one release; on a job it is --mem) */
                    json_object_set(o, "mem_now_mib", json_object_get(o, "mem_mib"));
                    json_object_set_new(o, "solo_smact", d->sj[i].smact >= 0
                                                             ? json_real(d->sj[i].smact)
                                                             : json_null());
                    /* the attempt's energy over all the job's GPUs */
                    json_object_set_new(o, "energy_j", json_real(dj->att_energy_j));
                    json_array_append_new(jl, o);
                }
        }
        json_t *o = json_pack(
            "{s:I,s:s,s:s,s:I,s:o,s:I,s:s,s:b}", "index", (json_int_t)g, "uuid", s->info.uuid,
            "name", s->info.name, "mem_total_mib", (json_int_t)v->mem_total_mib, "mem_used_mib",
            ls ? json_integer((json_int_t)(ls->mem_used_bytes >> 20))
               : json_null(), /* no fresh sample: absent, not its last */
            "committed_mib", (json_int_t)v->committed_mib, "sharing",
            carma_sharing_name((enum carma_sharing)v->sharing), "drained", v->drained);
        json_object_set_new(o, "drain_reason", mg && mg->drained ? json_string(mg->drain_reason)
                                                                 : json_null());
        json_object_set_new(o, "xid_errors", json_integer(mg ? (json_int_t)mg->xids : 0));
        json_object_set_new(o, "last_xid",
                            mg && mg->xids ? json_integer((json_int_t)mg->last_xid) : json_null());
        json_object_set_new(o, "mem_free_mib", ls ? json_integer((json_int_t)(ls->mem_free_bytes >> 20))
                                                  : json_null());
        json_object_set_new(o, "util", ls ? opt_real(ls->util_gpu) : json_null());
        json_object_set_new(o, "util_mem", ls ? opt_real(ls->util_mem) : json_null());
        json_object_set_new(o, "power_w", ls ? opt_real(ls->power_w) : json_null());
        json_object_set_new(o, "power_limit_w", opt_real(s->info.power_limit_w));
        json_object_set_new(o, "pci_bus_id",
                            s->info.pci_bus_id[0] ? json_string(s->info.pci_bus_id) : json_null());
        json_object_set_new(o, "island",
                            s->info.island >= 0 && s->info.island < (int)d->ngpus
                                ? json_integer(s->info.island)
                                : json_null());
        json_object_set_new(o, "smact", ls ? opt_real(ls->smact) : json_null());
        json_object_set_new(o, "smocc", ls ? opt_real(ls->smocc) : json_null());
        json_object_set_new(o, "drama", ls ? opt_real(ls->drama) : json_null());
        json_object_set_new(o, "tensor", ls ? opt_real(ls->tensor) : json_null());
        json_object_set_new(o, "energy_j",
                            mg && mg->energy_known ? json_real(mg->energy_total_j) : json_null());
        /* What the policies read: the window over SMACT (or its fallback). */
        struct carma_window_stats st;
        carma_window_stats(&v->smact, &st);
        json_t *win = json_object();
        json_object_set_new(win, "source", json_string(ls && ls->smact >= 0 ? "smact"
                                                       : ls && ls->util_gpu >= 0 ? "util"
                                                                                 : "none"));
        json_object_set_new(win, "n", json_integer(st.n));
        json_object_set_new(win, "mean", st.n ? json_real(st.mean) : json_null());
        json_object_set_new(win, "median", st.n ? json_real(st.median) : json_null());
        json_object_set_new(win, "p95", st.n ? json_real(st.p95) : json_null());
        json_object_set_new(win, "ema", st.n ? json_real(st.ema) : json_null());
        json_object_set_new(win, "risk", opt_real(carma_window_risk(&v->smact)));
        json_object_set_new(win, "smocc_risk", opt_real(carma_window_risk(&v->smocc)));
        json_object_set_new(win, "drama_risk", opt_real(carma_window_risk(&v->drama)));
        json_object_set_new(o, "window", win);
        json_object_set_new(o, "foreign_processes", json_integer(v->nforeign));
        json_object_set_new(o, "jobs", jobs);
        json_object_set_new(o, "job_list", jl);
        json_array_append_new(arr, o);
    }
    return arr;
}

/* What `carma gpus --json` and /v1/gpus both begin with. */
static void gpus_head(struct carmad *d, json_t *o, double now)
{
    json_object_set_new(o, "backend", json_string(d->gb.ops->name));
    if (d->o.version)
        json_object_set_new(o, "carmad_version", json_string(d->o.version));
    if (d->gb.ops->describe) {
        char desc[1024]; /* the NVML backend's line with DCGM's reason runs past 256 */
        d->gb.ops->describe(&d->gb, desc, sizeof desc);
        json_object_set_new(o, "source", json_string(desc));
    }
    json_object_set_new(o, "policy", json_string(d->policy->name));
    json_object_set_new(o, "interval_s", json_real(d->cfg.monitor_interval_s));
    json_object_set_new(o, "time", json_real(now));
    json_object_set_new(o, "queued", json_integer(carma_sched_queued(&d->sched)));
    if (d->cfg.learn_coloc) { /* by GPU kind and sharing mode, the knots that hold one */
        json_t *c = json_array();
        for (size_t g = 0; g < coloc_nkinds(d); g++) {
            const struct carma_coloc_learnt *l = &d->coloc[g];
            json_t *kind = json_object();
            json_object_set_new(kind, "kind", json_string(d->kinds[g]));
            for (unsigned m = 0; m < 2; m++) {
                json_t *a = json_array();
                for (unsigned k = 0; k < CARMA_COLOC_KNOTS; k++) {
                    if (!(l->weight[m][k] > 0))
                        continue;
                    float at = (float)k * CARMA_COLOC_KNOT_STEP;
                    json_t *x = json_object();
                    json_object_set_new(x, "smact_sum", json_real(at));
                    json_object_set_new(
                        x, "factor", json_real(carma_coloc_factor(l, (enum carma_sharing)m, at)));
                    json_object_set_new(x, "weight", json_real(l->weight[m][k]));
                    json_array_append_new(a, x);
                }
                json_object_set_new(kind, carma_sharing_name((enum carma_sharing)m), a);
            }
            json_array_append_new(c, kind);
        }
        json_object_set_new(o, "coloc", c);
    }
}

static json_t *req_gpus(struct carmad *d, uint32_t ci)
{
    json_t *ok = carma_resp_ok();
    gpus_head(d, ok, now_s());
    json_object_set_new(ok, "gpus", gpus_json(d, (int64_t)d->conns[ci]->uid));
    return ok;
}

/* carma usage: totals per uid; a user sees their own, root anyone's. A name is the
 * account's uid while the account exists (a reused name does not show the old owner's
 * jobs), else the name the jobs were submitted under (a removed account's). */
static json_t *req_usage(struct carmad *d, uint32_t ci, const struct carma_req *q)
{
    struct conn *c = d->conns[ci];
    char self[256];
    user_name(c->uid, self, sizeof self, NULL);
    const char *user = q->user;
    int64_t uid = -1;
    if (c->uid != 0) {
        if (user && strcmp(user, self) != 0)
            return carma_resp_error("forbidden", "only root sees the usage of other users");
        user = NULL;
        uid = c->uid;
    } else if (user) {
        struct passwd pw, *res = NULL;
        char buf[1024];
        if (getpwnam_r(user, &pw, buf, sizeof buf, &res) == 0 && res) {
            uid = res->pw_uid;
            user = NULL;
        }
    }
    json_t *u = NULL;
    struct carma_err err = {{0}};
    if (carma_store_usage_json(d->store, uid, user, q->since, q->until, now_s(), &u, &err))
        return carma_resp_error("store", "%s", err.msg);
    json_t *ok = carma_resp_ok();
    json_object_set_new(ok, "since", opt_real(q->since));
    json_object_set_new(ok, "until", opt_real(q->until));
    json_object_update(ok, u);
    json_decref(u);
    return ok;
}

/* History requests read the samples table on the loop (a week of 8 GPUs' records: about
 * 0.7 s): after one, the next waits HISTORY_SHARE times its cost, so that they take at
 * most a quarter of the loop, however many are pipelined or on however many connections;
 * one asked sooner is answered "busy", which the client asks again. */
#define HISTORY_SHARE 3.0

/* carma report: recorded samples and attempts. Anyone may draw the server's page;
 * job names of other users are hidden unless root. */
static json_t *req_history(struct carmad *d, uint32_t ci, const struct carma_req *q)
{
    struct conn *c = d->conns[ci];
    double t0 = carma_mono_s();
    if (t0 < d->history_free_at)
        return carma_resp_error("busy",
                                "carmad's last history request took %.2f s of its loop, and "
                                "history requests take at most a quarter of it: ask again "
                                "in %.1f s",
                                d->history_cost_s, d->history_free_at - t0);
    double now = now_s();
    double until = q->until >= 0 ? q->until : now;
    double since = q->since >= 0 ? q->since : until - 86400;
    if (until <= since)
        return carma_resp_error("invalid", "until is not after since");
    /* Keep the answer under the protocol's line bound: points per GPU shrink with
     * the number of GPUs. */
    uint32_t pts = q->points ? q->points : 1000;
    uint32_t budget = (uint32_t)(120000 / (d->ngpus ? d->ngpus : 1));
    if (pts > budget)
        pts = budget < 50 ? 50 : budget;
    json_t *h = NULL;
    struct carma_err err = {{0}};
    int rc = carma_store_history_json(d->store, since, until, pts, 4000, &h, &err);
    d->history_cost_s = carma_mono_s() - t0; /* failed or not, it took the loop that long */
    d->history_free_at = t0 + d->history_cost_s * (1 + HISTORY_SHARE);
    if (rc)
        return carma_resp_error("store", "%s", err.msg);
    size_t k;
    json_t *a;
    json_array_foreach(json_object_get(h, "attempts"), k, a) {
        uint32_t uid = (uint32_t)json_integer_value(json_object_get(a, "uid"));
        if (c->uid != 0 && c->uid != uid)
            json_object_set_new(a, "name", json_null());
        json_object_del(a, "uid");
    }
    json_t *ok = carma_resp_ok();
    json_object_set_new(ok, "policy", json_string(d->policy->name));
    json_object_set_new(ok, "backend", json_string(d->gb.ops->name));
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    json_object_set_new(ok, "host", json_string(host));
    json_object_set_new(ok, "record_interval_s", json_real(d->cfg.record_interval_s));
    json_object_update(ok, h);
    json_decref(h);
    return ok;
}

/* Handles one request line of connection ci. */
static void handle_line(struct carmad *d, uint32_t ci, const char *line, size_t len)
{
    struct carma_req q;
    struct carma_err err = {{0}};
    json_t *resp;
    d->deferred = 0;
    if (carma_req_parse(&q, line, len, &err)) {
        conn_send(d, ci, carma_resp_error("badrequest", "%s", err.msg));
        return;
    }
    switch (q.op) {
    case CARMA_OP_PING:
        resp = carma_resp_ok();
        json_object_set_new(resp, "version", json_integer(CARMA_PROTO_VERSION));
        json_object_set_new(resp, "pid", json_integer(getpid()));
        if (d->o.version)
            json_object_set_new(resp, "carmad_version", json_string(d->o.version));
        break;
    case CARMA_OP_SUBMIT: resp = req_submit(d, ci, &q); break;
    case CARMA_OP_CANCEL: resp = req_cancel(d, ci, &q); break;
    case CARMA_OP_SHOW: resp = req_show(d, ci, &q, 0); break;
    case CARMA_OP_LOGS: resp = req_show(d, ci, &q, 1); break;
    case CARMA_OP_LS: resp = req_ls(d, ci, &q); break;
    case CARMA_OP_GPUS: resp = req_gpus(d, ci); break;
    case CARMA_OP_USAGE: resp = req_usage(d, ci, &q); break;
    case CARMA_OP_HISTORY: resp = req_history(d, ci, &q); break;
    case CARMA_OP_DRAIN:
        resp = req_drain(d, ci, &q);
        break;
    case CARMA_OP_UNDRAIN:
        resp = req_undrain(d, ci, &q);
        break;
    default: resp = carma_resp_error("badrequest", "unsupported operation"); break;
    }
    carma_req_free(&q);
    /* NULL: answered when the store commits (pend_add), or no answer could be built,
     * which conn_send turns into "nomem" */
    if (resp || !d->deferred)
        conn_send(d, ci, resp);
}

/* Where the time uid's requests took in this loop iteration is kept: NULL for root and
 * carmad's own uid, which UID_SLICE_S does not bound. */
static double *uid_slice(struct carmad *d, uid_t uid)
{
    if (uid == 0 || uid == d->self_uid)
        return NULL;
    for (uint32_t k = 0; k < d->nslices; k++)
        if (d->slices[k].uid == uid)
            return &d->slices[k].spent;
    if (d->nslices == MAX_CONNS) /* (more uids than live connections: closed ones'
                                    uids of this iteration as well) unbounded, not lost */
        return NULL;
    d->slices[d->nslices] = (struct uid_slice){.uid = uid, .spent = 0};
    return &d->slices[d->nslices++].spent;
}

/* Handles up to CONN_BATCH complete lines buffered on ci, stopping at a pending write
 * (answers keep the order of the requests), while its answers are backed up and once its
 * uid's requests had their UID_SLICE_S of this loop iteration. Sets c->more when lines
 * may be left. */
static void conn_process(struct carmad *d, uint32_t ci)
{
    struct conn *c = d->conns[ci];
    size_t off = 0;
    unsigned n = 0;
    double *spent = uid_slice(d, c->uid); /* (d->slices stays where it is) */
    c->more = 0;
    while (c && c->pending == 0 && off < c->inlen) {
        if (n == CONN_BATCH || conn_unsent(c) > CONN_OUT_HIGH || (spent && *spent >= UID_SLICE_S)) {
            c->more = 1;
            break;
        }
        char *nl = memchr(c->in + off, '\n', c->inlen - off);
        if (!nl)
            break;
        size_t len = (size_t)(nl - (c->in + off));
        double t0 = spent ? carma_mono_s() : 0;
        handle_line(d, ci, c->in + off, len);
        if (spent)
            *spent += carma_mono_s() - t0;
        off += len + 1;
        n++;
        c = d->conns[ci];
    }
    if (!c)
        return;
    if (c->pending && off < c->inlen)
        c->more = 1;
    memmove(c->in, c->in + off, c->inlen - off);
    c->inlen -= off;
    if (c->more && c->pending == 0 && conn_unsent(c) <= CONN_OUT_HIGH)
        d->more_work = 1;
    if (!c->more && c->inlen >= CARMA_PROTO_MAX_LINE) {
        conn_send(d, ci, carma_resp_error("badrequest", "request longer than %u bytes",
                                          CARMA_PROTO_MAX_LINE));
        if (d->conns[ci])
            conn_close(d, ci);
        return;
    }
    if (c->eof && !c->more && c->pending == 0 && c->inlen > 0) {
        /* the peer's last bytes, no newline after them: answered, not dropped */
        c->inlen = 0;
        conn_send(d, ci, carma_resp_error("badrequest", "request without a newline at the "
                                                        "end of the connection"));
        return; /* conn_send closed it once its answers went out, or armed it */
    }
    if (conn_done(c))
        conn_close(d, ci);
    else
        conn_arm(d, ci);
}

/* Reads what the socket holds into c->in: the buffer grows to CONN_IN_SOFT, and
 * beyond (to CONN_IN_MAX) only while it holds no complete request. */
static void conn_read(struct carmad *d, uint32_t ci)
{
    struct conn *c = d->conns[ci];
    for (;;) {
        if (c->incap - c->inlen < 4096) {
            if (conn_in_full(c))
                return; /* handled requests make room */
            size_t n = c->incap ? c->incap * 2 : 8192;
            if (n > CONN_IN_MAX)
                n = CONN_IN_MAX;
            char *b = realloc(c->in, n);
            if (!b) {
                conn_close(d, ci);
                return;
            }
            c->in = b;
            c->incap = n;
        }
        ssize_t r = recv(c->fd, c->in + c->inlen, c->incap - c->inlen, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (r <= 0) {
            c->eof = 1;
            return;
        }
        c->inlen += (size_t)r;
        c->last_in = carma_mono_s();
    }
}

static void on_conn(struct carmad *d, uint32_t ci, uint32_t events)
{
    struct conn *c = d->conns[ci];
    if (!c)
        return;
    if (events & EPOLLOUT) {
        conn_flush(d, ci);
        if (!(c = d->conns[ci]))
            return;
    }
    if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
        return;
    /* Its peer has gone (a hangup: it reads nothing more) while its submission waits in
     * the estimate queue: epoll reports the hangup however the fd is armed, which would
     * wake the loop without end until the estimate is done. Nothing can be answered (the
     * first answer's send would fail and close it, its later requests unread): closed.
     * The submission goes on (estq_take). */
    if (c->pending && (events & (EPOLLHUP | EPOLLERR))) {
        conn_close(d, ci);
        return;
    }
    if (!c->eof && conn_unsent(c) <= CONN_OUT_HIGH) {
        conn_read(d, ci);
        if (!(c = d->conns[ci]))
            return;
    } else if (conn_unsent(c)) {
        conn_flush(d, ci); /* a peer gone while its answers wait: the send fails */
        return;
    }
    conn_process(d, ci);
}

/* Answers a connection just accepted with "busy" (the socket is new, so the line fits
 * its buffer) and closes it. */
static void send_busy_close(int fd, const char *msg)
{
    json_t *e = carma_resp_error("busy", "%s", msg);
    char *line;
    size_t len;
    if (carma_proto_dump(e, &line, &len) == 0) {
        ssize_t w = send(fd, line, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)w;
        free(line);
    }
    json_decref(e);
    close(fd);
}

/* A connection refused at accept: told why, closed, logged at most once a minute. */
static void conn_refuse(struct carmad *d, int fd, uid_t uid, const char *msg)
{
    send_busy_close(fd, msg);
    double now = carma_mono_s();
    if (now - d->busy_logged >= 60) { /* a flood of refusals is one line a minute */
        d->busy_logged = now;
        dlog(d, LOG_WARNING, "refused a connection of uid %u: %s", (unsigned)uid, msg);
    }
}

/* accept4 failed for want of fds. The reserve fd lets the waiting clients be told
 * "busy" (up to 64 a wakeup) instead of left hanging; the listener then stays off (it
 * would wake epoll forever) until a connection closes or the next sweep. */
static void accept_emfile(struct carmad *d, int e)
{
    for (int k = 0; k < 64 && d->reserve_fd >= 0; k++) {
        close(d->reserve_fd);
        int fd = accept4(d->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0)
            send_busy_close(fd, "carmad is out of file descriptors; try again later");
        d->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            break; /* the backlog is empty */
    }
    struct epoll_event ev = {.events = 0, .data.u64 = TAG(TAG_LISTEN, 0)};
    if (epoll_ctl(d->epfd, EPOLL_CTL_MOD, d->lfd, &ev) == 0)
        d->listen_paused = 1;
    double now = carma_mono_s();
    if (now - d->emfile_logged >= 60) {
        d->emfile_logged = now;
        struct rlimit rl = {0};
        getrlimit(RLIMIT_NOFILE, &rl);
        dlog(d, LOG_WARNING, "accept: %s (%u connections open, RLIMIT_NOFILE %llu): new "
                             "connections wait until one closes",
             strerror(e), d->nconns, (unsigned long long)rl.rlim_cur);
    }
}

static void on_accept(struct carmad *d)
{
    /* A bounded number per wakeup: the rest wait in the backlog for the next one. */
    for (int k = 0; k < 64; k++) {
        int fd = accept4(d->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                accept_emfile(d, errno);
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return;
        }
        struct ucred cr;
        socklen_t cl = sizeof cr;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0) {
            close(fd);
            continue;
        }
        uint32_t ci = MAX_CONNS, same = 0;
        for (uint32_t i = 0; i < d->conn_hi; i++) {
            if (!d->conns[i]) {
                if (ci == MAX_CONNS)
                    ci = i;
            } else if (d->conns[i]->uid == cr.uid) {
                same++;
            }
        }
        if (ci == MAX_CONNS && d->conn_hi < MAX_CONNS)
            ci = d->conn_hi;
        /* Root and carmad's own user may use the reserve, so that they always get in
         * to look and to cancel; everyone else is capped per uid and in total. */
        int privileged = cr.uid == 0 || cr.uid == d->self_uid;
        char msg[256];
        msg[0] = 0;
        if (ci == MAX_CONNS || d->nconns >= d->max_conns)
            snprintf(msg, sizeof msg, "carmad has too many connections (%u); try again later",
                     d->nconns);
        else if (!privileged && d->nconns >= d->max_conns - d->root_reserve)
            snprintf(msg, sizeof msg, "carmad has too many connections (%u; the last %u are "
                                      "kept for root); try again later",
                     d->nconns, d->root_reserve);
        else if (!privileged && same >= d->cfg.max_conns_per_user)
            snprintf(msg, sizeof msg, "too many connections of uid %u (%u; max_conns_per_user "
                                      "is %u); close some and try again",
                     (unsigned)cr.uid, same, d->cfg.max_conns_per_user);
        struct conn *c = msg[0] ? NULL : calloc(1, sizeof *c);
        if (!c) {
            conn_refuse(d, fd, cr.uid, msg[0] ? msg : "carmad is out of memory");
            continue;
        }
        c->fd = fd;
        c->uid = cr.uid;
        c->gid = cr.gid;
        c->pid = cr.pid;
        c->gen = ++d->conn_gen;
        c->last_in = carma_mono_s();
        c->events = EPOLLIN;
        d->conns[ci] = c;
        d->nconns++;
        if (ci >= d->conn_hi)
            d->conn_hi = ci + 1;
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = TAG(TAG_CONN, ci)};
        if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
            conn_close(d, ci);
    }
}

/* Once a second: closes connections idle too long (nothing pending, nothing unsent,
 * silent for conn_idle_timeout: `carma wait` and `logs -f` poll with new
 * connections) and those whose answers went unread for conn_stall_timeout; retries a
 * listener paused for want of fds. */
static void conns_sweep(struct carmad *d)
{
    double now = carma_mono_s();
    if (now - d->last_sweep < 1)
        return;
    d->last_sweep = now;
    for (uint32_t ci = 0; ci < d->conn_hi; ci++) {
        struct conn *c = d->conns[ci];
        if (!c)
            continue;
        if (conn_unsent(c) && now - c->out_since >= d->cfg.conn_stall_s) {
            dlog(d, LOG_NOTICE, "closed a connection of uid %u: %zu bytes of answers unread "
                                "for %.0f s", (unsigned)c->uid, conn_unsent(c),
                 now - c->out_since);
            conn_close(d, ci);
        } else if (!conn_unsent(c) && !c->pending && !c->more &&
                   now - c->last_in >= d->cfg.conn_idle_s) {
            conn_close(d, ci);
        }
    }
    listen_resume(d);
}

/* Sizes the connection table to the fd limit (carmad's other fds, pidfds of running
 * jobs among them, keep the rest), keeps its last eighth (at most 64) for root, and
 * opens the reserve fd of accept_emfile. */
static void conns_limits(struct carmad *d)
{
    struct rlimit rl;
    uint64_t n = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? (uint64_t)rl.rlim_cur : 1024;
    uint64_t m = n > 256 ? n - 128 : n / 2;
    if (m > MAX_CONNS)
        m = MAX_CONNS;
    if (m < 2)
        m = 2;
    d->max_conns = (uint32_t)m;
    d->root_reserve = d->max_conns / 8 > 64 ? 64 : d->max_conns / 8 ? d->max_conns / 8 : 1;
    d->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/* ---- recording and the HTTP snapshot ---- */

/* Running attempts' accounting is written every record_interval, at most every
 * ACCT_MAX_S seconds (record_interval 0 too), and when carmad stops cleanly. */
#define ACCT_MAX_S 60.0
/* The retention deletes at most this many records, or final jobs, per flush: the loop
 * is never held long, the rest goes at the next flushes. */
#define PRUNE_BATCH_ROWS 20000u
#define PRUNE_BATCH_JOBS 200u

/* ---- log folders of removed jobs ---- */

/* A removed job's folder is STATE/jobs/ID/N/files: three levels of folders are entered
 * (ID, N, and one more for what may have been put in an attempt folder), no deeper. */
#define JOBDIR_DEPTH 3
/* Entries looked at (removed or not) per loop iteration, and the time spent: a job
 * folder of one attempt is ~7 entries; unlinking a long log can take milliseconds. */
#define JOBDIR_BUDGET 2048u
#define JOBDIR_MAX_S 0.02

/* Adds n job ids to the folders to remove. 0, or -ENOMEM (nothing added: the folders
 * stay until the sweep of the next start). */
static int jobdirs_queue(struct carmad *d, const uint64_t *ids, size_t n)
{
    if (n == 0)
        return 0;
    if (d->rm_head) { /* what was removed makes room first */
        memmove(d->rm_ids, d->rm_ids + d->rm_head, (d->rm_n - d->rm_head) * sizeof *d->rm_ids);
        d->rm_n -= d->rm_head;
        d->rm_head = 0;
    }
    if (d->rm_n + n > d->rm_cap) {
        size_t cap = d->rm_cap ? d->rm_cap : 256;
        while (cap < d->rm_n + n)
            cap *= 2;
        uint64_t *v = realloc(d->rm_ids, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        d->rm_ids = v;
        d->rm_cap = cap;
    }
    memcpy(d->rm_ids + d->rm_n, ids, n * sizeof *ids);
    d->rm_n += n;
    return 0;
}

/* Removes the next folders of removed jobs, within JOBDIR_BUDGET entries and
 * JOBDIR_MAX_S (the rest at the next iterations), through STATE/jobs's descriptor and
 * never following a link (carma_tree_remove_at): logs are the users' files, and a
 * link among them names what carmad, as root, must not touch. A folder that cannot be
 * removed (whole) is left, the first such logged with why, and the queue goes on; the
 * sweep of the next start tries it again. */
static void jobdirs_remove(struct carmad *d)
{
    if (d->rm_head >= d->rm_n)
        return;
    char what[PATH_MAX];
    snprintf(what, sizeof what, "%s/jobs", d->state_dir);
    uint32_t budget = JOBDIR_BUDGET;
    double t0 = carma_mono_s();
    while (d->rm_head < d->rm_n && budget > 0 && carma_mono_s() - t0 < JOBDIR_MAX_S) {
        char name[24];
        snprintf(name, sizeof name, "%llu", (unsigned long long)d->rm_ids[d->rm_head]);
        struct carma_err err = {{0}};
        int rc = carma_tree_remove_at(d->jobsfd, name, what, JOBDIR_DEPTH, &budget, &err);
        if (rc == -EAGAIN)
            break; /* resumed at the next iteration: what is gone stays gone */
        d->rm_head++;
        if (rc == 0) {
            d->rm_done++;
        } else if (d->rm_failed++ == 0) {
            dlog(d, LOG_WARNING,
                 "retention: the log folder of removed job %s is left: %s (further folders "
                 "left are counted; all are tried again at carmad's next start)",
                 name, err.msg);
        }
    }
    if (d->rm_head < d->rm_n)
        return;
    dlog(d, d->rm_failed ? LOG_WARNING : LOG_INFO,
         "retention: %llu log folders of removed jobs removed, %llu left",
         (unsigned long long)d->rm_done, (unsigned long long)d->rm_failed);
    d->rm_head = d->rm_n = 0;
    d->rm_done = d->rm_failed = 0;
}

/* Writes the monitor's pending records; the running attempts' accounting so far (time,
 * energy, peak: a crash loses at most one accounting interval of it, a clean stop
 * (final) nothing); hourly, the retention of records and of final jobs, in batches, the
 * jobs' log folders queued for jobdirs_remove once their deletion commits. In a
 * transaction of its own after the iteration's: a failure here (a full disk) loses
 * records, never a job change. */
static void record_flush(struct carmad *d, double now, int final)
{
    if (carma_store_in_tx(d->store))
        return;
    const struct carma_mon_record *r = NULL;
    size_t n = d->have_mon ? d->mon.npending : 0;
    double acct_iv = d->cfg.record_interval_s > 0 && d->cfg.record_interval_s < ACCT_MAX_S
                         ? d->cfg.record_interval_s
                         : ACCT_MAX_S;
    int hourly = now - d->last_prune >= 3600;
    int prune = hourly || d->prune_more;
    int acct = final || now - d->last_acct >= acct_iv || now < d->last_acct;
    if (n == 0 && !prune && !acct)
        return;
    if (n)
        n = carma_mon_take_records(&d->mon, &r);
    struct carma_err err = {{0}};
    int rc = carma_store_begin(d->store, &err);
    uint64_t added = 0;
    for (size_t k = 0; !rc && k < n; k++) {
        if (d->gs[r[k].gpu].db_id < 0)
            continue;
        struct carma_store_sample x = {
            .gpu = d->gs[r[k].gpu].db_id, .t = r[k].t, .mem_mib = r[k].mem_mib,
            .util = r[k].util, .smact = r[k].smact, .smocc = r[k].smocc, .drama = r[k].drama,
            .tensor = r[k].tensor, .power_w = r[k].power_w, .energy_j = r[k].energy_j};
        rc = carma_store_sample_insert(d->store, &x, &err);
        added++;
    }
    for (uint32_t i = 0; !rc && acct && i < d->cap; i++) {
        const struct djob *dj = &d->dj[i];
        const struct carma_job *j = &d->sj[i];
        if (!dj->used || j->state != CARMA_JOB_RUNNING || dj->launching || j->start_s <= 0)
            continue;
        rc = usage_put_now(d, i, now, &err);
        if (!rc)
            rc = carma_store_attempt_peak_put(d->store, dj->rec.id, j->attempts, dj->peak_mib,
                                              dj->peak_partial, &err);
    }
    int coloc_put = !rc && acct && d->coloc_dirty;
    for (size_t k = 0; coloc_put && !rc && k < coloc_nkinds(d); k++)
        rc = carma_store_coloc_put(d->store, d->kinds[k], &d->coloc[k], &err);
    if (coloc_put && !rc && d->coloc_shared_rows) /* each kind has taken them */
        rc = carma_store_coloc_put(d->store, "", &(struct carma_coloc_learnt){0}, &err);
    uint64_t deleted = 0, jobs_deleted = 0, pruned[PRUNE_BATCH_JOBS];
    uint64_t rows = d->rec_rows == UINT64_MAX ? UINT64_MAX : d->rec_rows + added;
    int more = 0;
    if (!rc && prune && !final) {
        /* A record is ~80 bytes on disk with its share of the B-tree (bench_monitor). */
        uint64_t max_rows = d->cfg.record_max_mib * (1024 * 1024 / 80);
        if (rows == UINT64_MAX) /* once: then followed by what is added and removed */
            rc = carma_store_samples_count(d->store, &rows, &err);
        if (!rc && hourly)
            /* down to 90% of the bound, oldest first, so that pruning is rare */
            d->prune_drop = rows > max_rows ? rows - (max_rows - max_rows / 10) : 0;
        if (!rc)
            rc = carma_store_samples_prune(d->store, now - d->cfg.retention_days * 86400,
                                           d->prune_drop, PRUNE_BATCH_ROWS, &deleted, &more, &err);
        int more_jobs = 0;
        if (!rc && d->cfg.job_retention_days > 0)
            rc = carma_store_jobs_prune(d->store, now - d->cfg.job_retention_days * 86400,
                                        PRUNE_BATCH_JOBS, pruned, &jobs_deleted, &more_jobs, &err);
        more |= more_jobs;
    }
    if (!rc)
        rc = carma_store_commit(d->store, &err);
    else
        carma_store_rollback(d->store);
    if (acct)
        d->last_acct = now;
    if (!rc && coloc_put)
        d->coloc_dirty = d->coloc_shared_rows = 0;
    if (hourly && !final)
        d->last_prune = now;
    if (rc) {
        d->prune_more = 0;
        d->rec_rows = UINT64_MAX; /* counted again */
    } else if (prune && !final) {
        d->prune_more = more;
        d->prune_drop = d->prune_drop > deleted ? d->prune_drop - deleted : 0;
    }
    if (!rc && rows != UINT64_MAX)
        d->rec_rows = rows > deleted ? rows - deleted : 0;
    if (rc && !d->record_failed_logged) {
        dlog(d, LOG_WARNING, "monitor records not saved (%s); jobs are unaffected", err.msg);
        d->record_failed_logged = 1;
    } else if (!rc) {
        d->record_failed_logged = 0;
        /* only now: a rolled back deletion keeps its jobs, and their folders */
        if (jobs_deleted && jobdirs_queue(d, pruned, (size_t)jobs_deleted))
            dlog(d, LOG_WARNING,
                 "retention: out of memory; the log folders of %llu removed "
                 "jobs are left until carmad's next start",
                 (unsigned long long)jobs_deleted);
        if (deleted || jobs_deleted)
            dlog(d, LOG_INFO, "retention: %llu monitor records and %llu final jobs removed",
                 (unsigned long long)deleted, (unsigned long long)jobs_deleted);
    }
}

static int slot_by_id(const void *a, const void *b, void *ctx)
{
    const struct carmad *d = ctx;
    uint64_t x = d->dj[*(const uint32_t *)a].rec.id, y = d->dj[*(const uint32_t *)b].rec.id;
    return (x > y) - (x < y);
}

/* Renders /metrics, /v1/gpus and /v1/jobs and hands them to the HTTP thread. */
static void http_publish(struct carmad *d)
{
    d->publish = 0;
    double now = now_s();
    if (!d->http_why || now - d->http_why_t >= HTTP_WHY_EVERY_S || now < d->http_why_t) {
        json_decref(d->http_why);
        d->http_why = json_object();
        d->http_why_t = now;
    }
    struct carma_metrics_gpu *mg = calloc(d->ngpus, sizeof *mg);
    size_t nact = 0; /* the active jobs: not one ended whose end waits to be stored */
    for (uint32_t i = 0; i < d->cap; i++)
        nact += d->dj[i].used && !d->dj[i].end_final;
    struct carma_metrics_job *mj = calloc(nact + 1, sizeof *mj);
    json_t *jobs = json_array();
    if (!mg || !mj || !jobs) {
        free(mg);
        free(mj);
        json_decref(jobs);
        return;
    }
    for (size_t g = 0; g < d->ngpus; g++) {
        const struct carma_mon_gpu *m = d->have_mon ? &d->mon.g[g] : NULL;
        const struct carma_gpu_sample *ls = fresh_sample(d, g, now);
        const struct carma_gpu *v = &d->gpus[g];
        /* (none where the GPU measures no energy: no counter, no power) */
        double energy = m && m->energy_known ? m->energy_total_j : -1;
        mg[g] = (struct carma_metrics_gpu){.index = (unsigned)g,
                                           .uuid = d->gs[g].info.uuid,
                                           .name = d->gs[g].info.name,
                                           .mem_total_bytes = d->gs[g].info.mem_total_bytes,
                                           .mem_used_bytes = ls ? ls->mem_used_bytes : (uint64_t)-1,
                                           .mem_free_bytes = ls ? ls->mem_free_bytes : (uint64_t)-1,
                                           .util = ls ? ls->util_gpu : -1,
                                           .smact = ls ? ls->smact : -1,
                                           .smocc = ls ? ls->smocc : -1,
                                           .drama = ls ? ls->drama : -1,
                                           .tensor = ls ? ls->tensor : -1,
                                           .power_w = ls ? ls->power_w : -1,
                                           .energy_j = energy,
                                           .smact_risk = carma_window_risk(&v->smact),
                                           .drained = v->drained,
                                           .jobs = v->njobs,
                                           .foreign = v->nforeign,
                                           .xids = m ? m->xids : 0};
    }
    size_t nj = 0;
    uint64_t queued = 0, running = 0;
    /* Jobs in id order, as carma ls lists them (slots are reused in any order): every
     * running one, the HTTP_JOBS_QUEUED lowest ids of the queued ones. */
    uint32_t *order = malloc((nact + 1) * sizeof *order);
    size_t no = 0, nq = 0;
    if (order) {
        /* the queued ones from the end of order, the others from its start */
        for (uint32_t i = 0; i < d->cap; i++) {
            if (!d->dj[i].used || d->dj[i].end_final)
                continue;
            if (d->sj[i].state == CARMA_JOB_QUEUED)
                order[nact - ++nq] = i;
            else
                order[no++] = i;
        }
        queued = nq;
        if (nq > d->http_queued) {
            qsort_r(order + nact - nq, nq, sizeof *order, slot_by_id, d);
            nq = d->http_queued;
        }
        memmove(order + no, order + nact - queued, nq * sizeof *order);
        no += nq;
        qsort_r(order, no, sizeof *order, slot_by_id, d);
    }
    for (size_t oi = 0; order && oi < no; oi++) {
        uint32_t i = order[oi];
        struct djob *dj = &d->dj[i];
        const struct carma_job *j = &d->sj[i];
        int run = j->state == CARMA_JOB_RUNNING;
        running += run;
        double el = run && j->start_s > 0 ? now - j->start_s : 0;
        const char *state = carma_job_state_name((enum carma_job_state)j->state);
        /* per-job series from the job's start on: a queued job has nothing to count
         * (a retry's queued wait included: its counters stand until it runs again) */
        if (run) {
            double gs = dj->rec.gpu_s + el * held_gpus(d, i);
            if (gs > dj->gpu_s_shown)
                dj->gpu_s_shown = gs;
            mj[nj++] = (struct carma_metrics_job){
                .id = dj->rec.id,
                .user = dj->rec.user,
                .name = dj->rec.name,
                .state = state,
                .mem_bytes = dj->mem_now_mib == MEM_UNKNOWN ? UINT64_MAX : dj->mem_now_mib << 20,
                .energy_j = dj->rec.energy_j + dj->att_energy_j,
                .gpu_s = dj->gpu_s_shown};
        }
        json_t *o = carma_store_rec_json(&dj->rec);
        json_object_set_new(o, "state", json_string(state));
        if (run)
            json_object_set_new(o, "gpu_uuids", job_gpus_json(d, i));
        live_usage(d, i, o, now, d->http_why);
        json_array_append_new(jobs, o);
    }
    free(order);
    unsigned estimates_waiting; /* (not those whose paths are being checked) */
    psubs_of(d, 0, PSUB_ESTIMATE, &estimates_waiting);
    struct carma_metrics m = {.gpus = mg,
                              .ngpus = d->ngpus,
                              .jobs = mj,
                              .njobs = nj,
                              .queued = queued,
                              .running = running,
                              .oom_total = d->oom_total,
                              .gpu_error_total = d->gpu_error_total,
                              .placements_total = d->sched.placements,
                              .attempts_total = d->attempts_total,
                              .decision = &d->decision,
                              .monitor_ticks = d->mon.ticks,
                              .monitor_seconds = (double)d->mon.tick_ns_total * 1e-9,
                              .estimates_waiting = estimates_waiting,
                              .estimates_total = d->estimates,
                              .estimate_seconds = d->estimate_s,
                              .coloc = d->cfg.learn_coloc ? d->coloc : NULL,
                              .kinds = d->kinds,
                              .nkinds = coloc_nkinds(d),
                              .version = d->o.version};
    struct carma_metrics_user *mu = NULL;
    if (d->cfg.order_fair && (mu = calloc(d->nfair + 1, sizeof *mu))) {
        for (uint32_t k = 0; k < d->nfair; k++)
            mu[k] = (struct carma_metrics_user){
                .user = d->fair[k].name, .uid = d->fair[k].uid, .gpu_s = d->fair[k].gpu_s};
        m.users = mu;
        m.nusers = d->nfair;
    }
    for (int k = 0; k < CARMA_JOB_STATE_COUNT && k < 8; k++)
        m.finished[k] = d->finished[k];
    char *text = NULL;
    size_t len;
    if (carma_metrics_render(&m, &text, &len))
        text = NULL;
    json_t *gj = json_object();
    gpus_head(d, gj, now);
    json_object_set_new(gj, "gpus", gpus_json(d, -1));
    json_t *jj = json_object();
    json_object_set_new(jj, "time", json_real(now));
    json_object_set_new(jj, "jobs", jobs);
    /* queued jobs beyond HTTP_JOBS_QUEUED: counted, not listed (carma ls pages them) */
    json_object_set_new(
        jj, "queued_omitted",
        json_integer((json_int_t)(queued > d->http_queued ? queued - d->http_queued : 0)));
    char *gs = json_dumps(gj, JSON_COMPACT), *js = json_dumps(jj, JSON_COMPACT);
    json_decref(gj);
    json_decref(jj);
    carma_http_publish(d->http, text, gs, js);
    free(mg);
    free(mj);
    free(mu);
}

/* ---- the end of an iteration: commit, then answer and start ---- */

static void iteration_end(struct carmad *d)
{
    double now = now_s();
    struct carma_err err = {{0}};
    /* Placements join the same transaction. */
    after_settle(d, now, &err);
    size_t first_launch = d->ntouched;
    if (d->dirty && !launches_paused(d) && !err.msg[0]) { /* (paused: it steps once the pause
                                                              ends) */
        d->dirty = 0;
        struct carma_placement pl[64];
        size_t n;
        int guard = 0;
        fair_order(d, now);
        for (;;) {
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            n = carma_sched_step(&d->sched, now, pl, 64);
            clock_gettime(CLOCK_MONOTONIC, &t1);
            carma_hist_add(&d->decision, (double)(t1.tv_sec - t0.tv_sec) +
                                             (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
            if (n == 0 || guard++ >= 1024)
                break;
            d->publish = 1;
            for (size_t k = 0; k < n; k++) {
                uint32_t i = pl[k].job;
                d->dj[i].launching = 1;
                touch(d, i);
                if (launch_record(d, i, now, &err))
                    break;
            }
            if (err.msg[0])
                break;
        }
    }
    for (uint32_t i = 0; i < d->cap; i++) {
        struct djob *dj = &d->dj[i];
        if (dj->used && dj->pid_dirty && !dj->pid_in_tx && !dj->launching &&
            store_tx(d, &err) == 0 &&
            carma_store_attempt_pid(d->store, dj->rec.id, d->sj[i].attempts, dj->shepherd, &err) ==
                0)
            dj->pid_in_tx = 1;
        /* the running attempt's Xid mark, for a restarted carmad to judge its end by */
        if (dj->used && dj->xid_dirty && dj->xid_seen && !dj->launching && store_tx(d, &err) == 0) {
            struct carma_store_xid sx = {.xid = dj->xid,
                                         .gpu = dj->xid_gpu,
                                         .t = dj->xid_t,
                                         .shared = dj->xid_shared,
                                         .via = dj->xid_via};
            if (carma_store_attempt_xid_put(d->store, dj->rec.id, d->sj[i].attempts, &sx, &err) ==
                0) {
                dj->xid_dirty = 0;
                dj->xid_in_tx = 1;
            }
        }
        /* when its process was first listed on its GPUs (its ramp and grace run from then),
         * with its accounting when that made its solo profile one of its start-up */
        if (dj->used && dj->seen_dirty && dj->gpu_seen_s >= 0 && !dj->launching &&
            d->sj[i].start_s > 0 && store_tx(d, &err) == 0) {
            const struct carma_job *j = &d->sj[i];
            int rc = carma_store_attempt_seen_put(d->store, dj->rec.id, j->attempts, dj->gpu_seen_s,
                                                  &err);
            if (!rc && dj->solo_unseen)
                rc = usage_put_now(d, i, now, &err);
            if (!rc) {
                dj->seen_dirty = 0;
                dj->seen_in_tx = 1;
            }
        }
        /* an end a failed commit lost: written again (not an error of this iteration's
         * if it fails again: attempt_end's log said so) */
        struct carma_err e;
        if (dj->used && dj->end_dirty && !dj->end_in_tx && end_write(d, i, &e) == 0)
            dj->end_in_tx = 1;
    }
    int ok = 1;
    if (d->test_end_commit_fails > 0 && carma_store_in_tx(d->store) && !err.msg[0])
        for (uint32_t i = 0; i < d->cap; i++)
            if (d->dj[i].used && d->dj[i].end_in_tx) {
                d->test_end_commit_fails--;
                carma_err_set(&err, -ENOSPC, "test: a commit holding a job's end fails");
                break;
            }
    if (carma_store_in_tx(d->store) && !err.msg[0]) {
        if (carma_store_commit(d->store, &err))
            ok = 0;
    } else if (carma_store_in_tx(d->store)) {
        carma_store_rollback(d->store);
        ok = 0;
    } else if (err.msg[0]) {
        ok = 0;
    }
    /* before anything below writes again (into the next iteration's transaction) */
    store_settle(d, ok);
    if (ok && d->commits_failed) {
        dlog(d, LOG_NOTICE, "store: commits succeed again, after %lu that failed",
             d->commits_failed);
        d->commits_failed = 0;
    }
    if (!ok) {
        /* once while it lasts: a pending job end is retried every iteration */
        if (d->commits_failed++ == 0)
            dlog(d, LOG_ERR,
                 "store: %s: this iteration's submissions are refused, its "
                 "launches undone (logged once until a commit succeeds)",
                 err.msg);
        /* Undo launches (newest first), then cancels and submissions. */
        for (size_t t = d->ntouched; t-- > first_launch;) {
            uint32_t i = d->touched[t];
            if (!d->dj[i].launching)
                continue;
            d->dj[i].launching = 0;
            carma_sched_finish(&d->sched, i, CARMA_OUTCOME_FAULT, 0, now);
            d->sj[i].attempts--;
            d->dj[i].rec.attempts = d->sj[i].attempts;
            d->dj[i].rec.state = CARMA_JOB_QUEUED;
        }
        d->after_dirty = 1; /* what after_settle did is undone below, or was not stored */
        for (size_t t = 0; t < d->ntouched; t++) {
            uint32_t i = d->touched[t];
            struct djob *dj = &d->dj[i];
            if (!dj->used)
                continue;
            if (dj->after_ended) { /* waits again, looked at again next iteration */
                dj->after_ended = 0;
                d->sj[i].state = CARMA_JOB_QUEUED;
                dj->rec.state = CARMA_JOB_QUEUED;
                dj->rec.end_s = -1;
                free(dj->rec.reason);
                dj->rec.reason = NULL;
                d->finished[CARMA_JOB_CANCELLED]--;
            }
            if (dj->is_new) {
                if (d->sj[i].queue != CARMA_QUEUE_NONE)
                    carma_sched_dequeue(&d->sched, i);
                dj->is_new = 0;
                slot_free(d, i);
                continue;
            }
            if (dj->cancel_queued) {
                dj->cancel_queued = 0;
                d->sj[i].state = CARMA_JOB_QUEUED;
                dj->rec.state = CARMA_JOB_QUEUED;
                dj->rec.end_s = -1;
                d->finished[CARMA_JOB_CANCELLED]--;
                /* (one waiting to run after others waits out of the queues again) */
                if (!dj->after_wait && dj->rec.attempts > 0) /* a retry keeps its priority */
                    carma_sched_submit_recovery(&d->sched, i, now);
                else if (!dj->after_wait)
                    carma_sched_submit(&d->sched, i, now);
            }
            if (dj->cancel_running) {
                dj->cancel_running = 0;
                dj->cancel_asked = 0;
                dj->rec.cancel_requested = 0;
            }
        }
        for (size_t p = 0; p < d->npend; p++) {
            json_decref(d->pend[p].resp);
            d->pend[p].resp = carma_resp_error(
                "store", "refused: the job store could not save it (%s); nothing was changed",
                err.msg);
        }
    }
    /* Answer. */
    for (size_t p = 0; p < d->npend; p++) {
        uint32_t ci = d->pend[p].conn;
        if (conn_release(d, ci, d->pend[p].gen)) {
            conn_send(d, ci, d->pend[p].resp);
        } else {
            json_decref(d->pend[p].resp);
        }
    }
    d->npend = 0;
    if (ok) {
        for (size_t t = 0; t < d->ntouched; t++) {
            uint32_t i = d->touched[t];
            struct djob *dj = &d->dj[i];
            if (!dj->used)
                continue;
            dj->is_new = 0;
            if (dj->after_ended) {
                dj->after_ended = 0;
                dlog(d, LOG_INFO, "job %llu cancelled: %s", (unsigned long long)dj->rec.id,
                     dj->rec.reason ? dj->rec.reason : "a job it was to run after did not succeed");
                slot_free(d, i);
                continue;
            }
            if (dj->cancel_queued) {
                dj->cancel_queued = 0;
                dlog(d, LOG_INFO, "job %llu cancelled while queued",
                     (unsigned long long)dj->rec.id);
                if (dj->end_dirty)
                    dj->end_final = 1; /* its attempt's end waits to be stored: store_settle */
                else
                    slot_free(d, i);
                continue;
            }
            if (dj->cancel_running) {
                dj->cancel_running = 0;
                if (d->test_die_at_cancel)
                    _exit(EXIT_FAILURE);
                if (dj->shepherd > 0) {
                    cancel_signal(d, i);
                } else if (dj->start) {
                    /* its shepherd has not started it: it never will (it ran no time) */
                    start_drop(d, i, 0);
                    attempt_end(d, i, NULL, "cancelled before its shepherd started the job",
                                d->sj[i].start_s > 0 ? d->sj[i].start_s : now);
                    continue;
                }
            }
            if (dj->launching) {
                dj->launching = 0;
                launch_start(d, i);
            }
        }
    }
    d->ntouched = 0;
    record_flush(d, now, 0);
    jobdirs_remove(d);
    if (d->http && d->publish)
        http_publish(d);
    /* Requests that waited for this commit, for their answers to drain, or for
     * their turn (CONN_BATCH): one more batch each. */
    d->more_work = 0;
    for (uint32_t ci = 0; ci < d->conn_hi; ci++) {
        struct conn *c = d->conns[ci];
        if (c && c->more && c->pending == 0 && conn_unsent(c) <= CONN_OUT_HIGH)
            conn_process(d, ci);
    }
    if (d->npend) /* handled just now: their commit is the next iteration's */
        d->more_work = 1;
    conns_sweep(d);
}

/* ---- reconciliation on start ---- */

/* A running job found ended (or to end) at reconciliation: its end waits until every
 * running job holds its GPUs again (recon_ends). No attempt ends before then: an end takes
 * the queued Xids (and the kernel's Xid lines), which the running jobs not yet re-adopted,
 * absent from the slots, would never get. */
struct recon_end {
    uint32_t slot;
    int have; /* ex holds its recorded exit */
    struct carma_exit ex;
    const char *why; /* without an exit: why (NULL: its shepherd recorded none) */
    double end_s;
};

struct recon {
    struct carmad *d;
    struct carma_err *err;
    int requeued, adopted, ended, queued, failed;
    struct recon_end *ends;
    size_t nends, capends;
};

/* Room for one more end, made before a row is taken in (recon_one), so that recon_end_add
 * never fails. 0 or -ENOMEM (the test hook CARMA_TEST_RECON_NOMEM fails it). */
static int recon_end_room(struct recon *x)
{
    if (x->nends < x->capends)
        return 0;
    size_t n = x->capends ? x->capends * 2 : 16;
    struct recon_end *e = x->d->test_recon_nomem ? NULL : realloc(x->ends, n * sizeof *e);
    if (!e)
        return -ENOMEM;
    x->ends = e;
    x->capends = n;
    return 0;
}

/* Queues the end of job i, re-adopted on its GPUs, for recon_ends (room for it was made:
 * recon_end_room). down: it ended before carmad started again, so until its end it takes
 * no Xid (ended_down); the mark stored before the restart (recon_one) is still its. One
 * whose shepherd ended since (not down) ran after the restart: the Xids taken then are
 * put on it too. */
static void recon_end_add(struct recon *x, uint32_t i, const struct carma_exit *ex, const char *why,
                          double end_s, int down)
{
    assert(x->nends < x->capends);
    x->d->dj[i].ended_down = down;
    struct recon_end *e = &x->ends[x->nends++];
    *e = (struct recon_end){.slot = i, .have = ex != NULL, .why = why, .end_s = end_s};
    if (ex)
        e->ex = *ex;
}

static int recon_end_cmp(const void *a, const void *b)
{
    const struct recon_end *x = a, *y = b;
    if (x->end_s != y->end_s)
        return x->end_s < y->end_s ? -1 : 1;
    return (x->slot > y->slot) - (x->slot < y->slot);
}

/* Ends the attempts that ended while carmad was down, once every running job holds its
 * GPUs again, in the order they ended: each end is judged against the co-runners its
 * GPUs had then, as a carmad that had watched would have (an OOM beside a co-runner is
 * not one alone on the GPU, which would raise the job's bound past the GPU's memory). */
static void recon_ends(struct recon *x)
{
    if (x->nends > 1)
        qsort(x->ends, x->nends, sizeof *x->ends, recon_end_cmp);
    for (size_t k = 0; k < x->nends; k++) {
        const struct recon_end *e = &x->ends[k];
        attempt_end(x->d, e->slot, e->have ? &e->ex : NULL, e->why, e->end_s);
    }
    free(x->ends);
    x->ends = NULL;
    x->nends = x->capends = 0;
}

/* Queued job i asks for more GPUs than this carmad has (restarted on fewer): it could
 * never start and, at the head of the queue, would hold every later job, its reason
 * blaming drained GPUs there are none of. Failed, as its submission now would be, and its
 * slot freed. */
/* Ends queued job i at reconciliation, before it ever runs: `state` (final), `why` its
 * reason, logged as an error. */
static void recon_end(struct carmad *d, uint32_t i, double now, enum carma_job_state state,
                      const char *why)
{
    struct djob *dj = &d->dj[i];
    dlog(d, LOG_ERR, "job %llu %s: %s", (unsigned long long)dj->rec.id, why,
         carma_job_state_name(state));
    if (d->sj[i].queue != CARMA_QUEUE_NONE)
        carma_sched_dequeue(&d->sched, i);
    d->sj[i].state = state;
    dj->rec.end_s = now;
    char *r = strdup(why);
    if (r) { /* else none: the log says why */
        free(dj->rec.reason);
        dj->rec.reason = r;
    }
    d->finished[state]++;
    struct carma_err serr;
    if (save_job(d, i, &serr))
        dlog(d, LOG_ERR, "job %llu: %s", (unsigned long long)dj->rec.id, serr.msg);
    slot_free(d, i);
}

static void recon_fail_too_wide(struct carmad *d, uint32_t i, double now)
{
    char why[128];
    snprintf(why, sizeof why, "asks for %u GPUs; this server has %zu", d->dj[i].rec.gpus, d->ngpus);
    recon_end(d, i, now, CARMA_JOB_FAILED, why);
}

static int recon_one(void *ctx, struct carma_job_rec *r)
{
    struct recon *x = ctx;
    struct carmad *d = x->d;
    uint32_t i;
    /* out of memory before anything is done for the row: carmad does not start (a later
     * start finds every job as this one did) */
    if (recon_end_room(x) || slot_alloc(d, &i))
        return carma_err_set(x->err, -ENOMEM, "reconciling job %llu: out of memory",
                             (unsigned long long)r->id);
    struct djob *dj = &d->dj[i];
    dj->rec = *r;
    memset(r, 0, sizeof *r); /* ownership of the strings moved */
    carma_job_rec_clear(r);
    sj_from_rec(d, i);
    job_profile(d, i);
    double now = now_s();
    if (dj->rec.state == CARMA_JOB_QUEUED && dj->rec.gpus > d->ngpus) {
        recon_fail_too_wide(d, i, now);
        x->failed++;
        return 0;
    }
    if (dj->rec.state == CARMA_JOB_QUEUED && dj->rec.after && dj->rec.attempts == 0) {
        /* it waits for the jobs it runs after as before the restart; which of them are
         * still pending, after_settle reads from their states (one that ran had them all
         * succeed) */
        uint64_t ids[CARMA_PROTO_MAX_AFTER];
        size_t n = 0;
        if (carma_store_after_parse(dj->rec.after, ids, &n) != 0) {
            /* a damaged row: run now, it could start before the jobs it needs have
             * succeeded; kept waiting, for ever. It ends, and says why */
            char why[160];
            snprintf(why, sizeof why,
                     "not run: its list of the jobs to run after, %.64s, cannot be read "
                     "(a damaged store row)",
                     dj->rec.after);
            recon_end(d, i, now, CARMA_JOB_CANCELLED, why);
            return 0;
        }
        if (!(dj->after = malloc((n ? n : 1) * sizeof *dj->after)))
            return carma_err_set(x->err, -ENOMEM, "reconciling job %llu: out of memory",
                                 (unsigned long long)dj->rec.id);
        memcpy(dj->after, ids, n * sizeof *ids);
        dj->nafter = (uint32_t)n;
        dj->after_wait = 1;
        x->queued++;
        return 0;
    }
    if (dj->rec.state == CARMA_JOB_QUEUED) {
        /* A job queued after an attempt is a retry: it keeps its priority. */
        if (dj->rec.attempts > 0)
            carma_sched_submit_recovery(&d->sched, i, now);
        else
            carma_sched_submit(&d->sched, i, now);
        x->queued++;
        return 0;
    }
    uint32_t n = dj->rec.attempts;
    char dir[PATH_MAX];
    struct carma_err err;
    int afd = attempt_open(d, dj->rec.id, n, 0, dir, sizeof dir, &err);
    if (afd >= 0)
        close(afd);
    attempt_dir(d, dj->rec.id, n, dir, sizeof dir);
    uint16_t gpu[CARMA_JOB_MAX_GPUS];
    uint16_t ng = 0;
    char *gs = NULL;
    if (carma_store_attempt_gpus(d->store, dj->rec.id, n, &gs, NULL, &err) == 0) {
        json_error_t je;
        json_t *a = json_loads(gs, 0, &je);
        size_t k;
        json_t *u;
        json_array_foreach(a, k, u) {
            int g = json_is_string(u) ? gpu_index_of(d, json_string_value(u)) : -1;
            if (g >= 0 && ng < CARMA_JOB_MAX_GPUS)
                gpu[ng++] = (uint16_t)g;
        }
        /* carmad restarted on another set of GPUs (--gpus changed, a GPU removed): the
         * job is still followed to its end, on the GPUs it has left here, if any. */
        size_t gone = json_array_size(a) - ng;
        dj->gpus_gone = gone < UINT16_MAX ? (uint16_t)gone : UINT16_MAX;
        if (ng < json_array_size(a))
            dlog(d, LOG_WARNING,
                 "job %llu attempt %u: %zu of its %zu GPUs are not this server's any more "
                 "(%s); followed to its end without them",
                 (unsigned long long)dj->rec.id, n, json_array_size(a) - ng, json_array_size(a),
                 gs);
        json_decref(a);
        free(gs);
    }
    /* Its peak as of the last accounting flush: carmad was down while it ran, so the
     * memory it used meanwhile is unknown, and the peak only a lower limit (no history). */
    uint64_t peak;
    unsigned partial;
    if (carma_store_attempt_peak_get(d->store, dj->rec.id, n, &peak, &partial, &err) == 0) {
        dj->peak_mib = peak;
        dj->peak_partial = partial | CARMA_PEAK_DOWNTIME;
    }
    /* ...and its accounting: whichever way it ended, its end writes them over the row the
     * last flush (the one at carmad's stop included) wrote */
    double ugs, ej, sm;
    if (carma_store_usage_get(d->store, dj->rec.id, n, &ugs, &ej, &sm, &err) == 0) {
        dj->att_energy_j = ej;
        dj->solo_smact = (float)sm;
        dj->solo_nsm = sm >= 0; /* its windows before the stop count as one */
        /* the solo SMACT this attempt showed alone is the scheduler's again, as before the
         * stop (after_tick gave it): without it the job would count as unprofiled, which
         * auto adds no job beside, until measured alone again (never, among co-runners) */
        if (sm >= 0)
            d->sj[i].smact = (float)sm;
    }
    /* ...and the gravest critical Xid its GPUs reported before carmad stopped: its end,
     * now or later, is judged by it as it would have been (gpu_error, the Xid named) */
    struct carma_store_xid sx;
    if (carma_store_attempt_xid_get(d->store, dj->rec.id, n, &sx, &err) == 1) {
        const char *what;
        dj->xid_seen = 1;
        dj->xid = sx.xid;
        dj->xid_kind = carma_xid_kind(sx.xid, &what);
        dj->xid_gpu = sx.gpu;
        dj->xid_t = sx.t;
        dj->xid_shared = sx.shared;
        /* a mark on one of its GPUs came there (one an older carmad wrote over a newer's
         * mark through another job's GPUs, whose xid_via it left) */
        dj->xid_via = sx.via;
        for (uint16_t k = 0; k < ng; k++)
            if (gpu[k] == sx.gpu)
                dj->xid_via = 0;
    }
    /* ...and when its process was first listed on its GPUs: its ramp (solo profile) and a
     * reference policy's grace go on from then; not yet, from its first listing. A solo
     * profile taken before then was of its start-up (one taken before and found so once it
     * was listed is stored as none: solo_smact_now) */
    double seen = -1;
    if (carma_store_attempt_seen_get(d->store, dj->rec.id, n, &seen, &err) != 1)
        seen = -1;
    dj->gpu_seen_s = seen;
    dj->solo_unseen = dj->solo_smact >= 0 && seen < 0;
    struct carma_exit ex;
    double end;
    pid_t pid;
    uint64_t st;
    if (afd < 0 && afd != -ENOENT) {
        /* A planted symlink or a folder not carmad's: nothing in it is trusted. */
        dlog(d, LOG_ERR, "job %llu: %s: counted lost", (unsigned long long)dj->rec.id, err.msg);
        sched_adopt(d, i, gpu, ng, dj->rec.start_s, dj->gpu_seen_s);
        recon_end_add(x, i, NULL, NULL, now, 1);
        x->ended++;
    } else if (carma_shepherd_read_status(dir, &ex, &end) == 0) {
        sched_adopt(d, i, gpu, ng, dj->rec.start_s, dj->gpu_seen_s);
        recon_end_add(x, i, &ex, NULL, end, 1);
        x->ended++;
    } else if (carma_shepherd_alive(dir, &pid)) {
        sched_adopt(d, i, gpu, ng, dj->rec.start_s, dj->gpu_seen_s);
        /* its pidfd checked anew once open: the shepherd may have ended since the look
         * above, and its pid gone to anyone's process, which a cancel would signal */
        int pfd = carma_shepherd_pidfd(dir, &pid);
        if (pfd >= 0 && watch_shepherd(d, i, pid, pfd) == 0) {
            x->adopted++;
            dlog(d, LOG_INFO, "job %llu: re-adopted its running shepherd %d",
                 (unsigned long long)dj->rec.id, (int)pid);
            if (dj->rec.cancel_requested) {
                /* cancelled, and carmad stopped before it could say so to the shepherd */
                cancel_signal(d, i);
                dlog(d, LOG_INFO, "job %llu: its cancel sent to its shepherd",
                     (unsigned long long)dj->rec.id);
            }
            if (d->have_gb && d->gb.ops->attach)
                for (uint16_t k = 0; k < ng; k++)
                    d->gb.ops->attach(&d->gb, gpu[k], pid, d->sj[i].held_mib << 20);
        } else {
            /* it ended between the look and the watch: its status, if it wrote one; its
             * end waits with the others' */
            int have = shepherd_end(d, i, dir, &ex, &end);
            recon_end_add(x, i, have ? &ex : NULL, NULL, end, 0);
            x->ended += have;
        }
    } else if (carma_shepherd_read_pid(dir, &pid, &st) == -ENOENT) {
        if (dj->rec.cancel_requested) {
            /* never began, and cancelled before carmad stopped: it never runs (nor ran: no
             * run time billed for carmad's downtime) */
            sched_adopt(d, i, gpu, ng, dj->rec.start_s, dj->gpu_seen_s);
            recon_end_add(x, i, NULL, "cancelled before its shepherd started the job",
                          dj->rec.start_s > 0 ? dj->rec.start_s : now, 1);
            x->ended++;
        } else {
            /* Recorded as launched, but its shepherd never began: it never ran. */
            attempt_unbegun(d, i, now);
            x->requeued++;
        }
    } else {
        /* its shepherd died without a status while carmad was down */
        kill_leftovers(d, i, dir);
        sched_adopt(d, i, gpu, ng, dj->rec.start_s, dj->gpu_seen_s);
        recon_end_add(x, i, NULL, NULL, now, 1);
        x->ended++;
    }
    return 0;
}

static int reconcile(struct carmad *d, struct carma_err *err)
{
    struct recon x = {.d = d, .err = err};
    int rc = carma_store_jobs_active(d->store, recon_one, &x, err);
    if (rc) {
        free(x.ends);
        return rc;
    }
    recon_ends(&x);
    /* a job queued again above (its shepherd never started, or its end is retried) may
     * ask for more GPUs than there are, as a job found queued may */
    double now = now_s();
    for (uint32_t i = 0; i < d->cap; i++)
        if (d->dj[i].used && d->sj[i].state == CARMA_JOB_QUEUED && d->dj[i].rec.gpus > d->ngpus) {
            recon_fail_too_wide(d, i, now);
            x.failed++;
        }
    if (carma_store_in_tx(d->store) && (rc = carma_store_commit(d->store, err)))
        return rc;
    store_settle(d, 1);
    d->after_dirty = 1; /* the jobs it runs after may have ended while carmad was down */
    dlog(d, LOG_INFO, "reconciled: %d queued, %d running re-adopted, %d ended while down, "
                      "%d never started (re-queued)%s", x.queued, x.adopted, x.ended, x.requeued,
         x.failed ? ", and jobs that ask for more GPUs than there are failed" : "");
    d->dirty = 1;
    return 0;
}

/* ---- setup ---- */

/* 0 when path is free or holds a socket (a stale one is replaced); anything else
 * there is refused with -EINVAL (a bad option: exit 2) and left alone. */
static int check_socket_path(const char *path, struct carma_err *err)
{
    struct stat st;
    if (lstat(path, &st) < 0) {
        if (errno == ENOENT)
            return 0;
        return carma_err_set(err, -EINVAL, "--socket %s: %s", path, strerror(errno));
    }
    if (!S_ISSOCK(st.st_mode))
        return carma_err_set(err, -EINVAL,
                             "--socket %s: a %s is there, not a socket; carmad replaces only a "
                             "stale socket", path,
                             S_ISREG(st.st_mode)   ? "regular file"
                             : S_ISDIR(st.st_mode) ? "folder"
                             : S_ISLNK(st.st_mode) ? "symbolic link"
                                                   : "special file");
    return 0;
}

/* Whether the socket path can be taken: its folder made and trusted, nothing but a
 * stale socket there. Run before anything is reconciled, so that a carmad started on
 * another's socket exits having touched no job; open_socket runs it again. */
static int socket_free(struct carmad *d, struct carma_err *err)
{
    char dir[sizeof d->sock_path];
    snprintf(dir, sizeof dir, "%s", d->sock_path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        int rc = mkdir_p(dir, d->self_uid == 0 ? 0755 : 0700);
        if (rc)
            return carma_err_set(err, rc, "%s: %s", dir, strerror(-rc));
    }
    /* Another user's folder (a /tmp/carma-UID made first): its owner could replace the
     * socket, and this user's clients would refuse it anyway. */
    int trc = carma_socket_trusted(d->sock_path, err);
    if (trc)
        return trc;
    /* A live daemon on the path is an error; a stale socket file is removed, and only
     * a socket: a typo in --socket must not delete a file. */
    int rc = check_socket_path(d->sock_path, err);
    if (rc)
        return rc;
    struct carma_err e2;
    int fd = carma_client_connect(d->sock_path, &e2);
    if (fd >= 0) {
        close(fd);
        return carma_err_set(err, -EADDRINUSE, "%s: another carmad is listening",
                             d->sock_path);
    }
    return 0;
}

static int open_socket(struct carmad *d, struct carma_err *err)
{
    int rc = socket_free(d, err);
    if (rc)
        return rc;
    struct stat st;
    if (lstat(d->sock_path, &st) == 0 && S_ISSOCK(st.st_mode))
        unlink(d->sock_path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return carma_err_set(err, -errno, "%s: socket: %s", d->sock_path, strerror(errno));
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", d->sock_path);
    if (d->test_socket_taken) { /* another carmad binds the path since the check */
        int o = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (o >= 0 && bind(o, (struct sockaddr *)&sa, sizeof sa) == 0)
            listen(o, 1);
        if (o >= 0)
            close(o);
    }
    mode_t old = umask(0177);
    rc = bind(fd, (struct sockaddr *)&sa, sizeof sa);
    umask(old);
    if (rc < 0) {
        /* what is at the path is not this carmad's (another bound it since the check):
         * lfd stays -1, so that carmad_close does not unlink it */
        int e = errno;
        close(fd);
        return carma_err_set(err, -e, "%s: %s", d->sock_path, strerror(e));
    }
    d->lfd = fd; /* its path is this carmad's now: carmad_close removes it */
    if (listen(d->lfd, 512) < 0)
        return carma_err_set(err, -errno, "%s: %s", d->sock_path, strerror(errno));
    mode_t mode = d->cfg.socket_mode;
    if (d->sock_gid != (gid_t)-1)
        chown(d->sock_path, 0, d->sock_gid) == 0 ? (void)0 : (void)0;
    else if (d->self_uid == 0 && d->cfg.socket_group[0] && d->sock_group_err == -ENOENT)
        dlog(d, LOG_WARNING, "group %s does not exist: %s is root's%s", d->cfg.socket_group,
             d->sock_path, mode & 0007 ? ", and others' by its mode" : ": only root may use it");
    else if (d->self_uid == 0 && d->cfg.socket_group[0])
        dlog(d, LOG_WARNING, "group %s: cannot look it up (%s): %s is root's%s",
             d->cfg.socket_group, strerror(-d->sock_group_err), d->sock_path,
             mode & 0007 ? ", and others' by its mode" : ": only root may use it");
    chmod(d->sock_path, mode);
    return 0;
}

/* A root carmad's socket group (socket_group): d->sock_gid, or -1 for none. The default
 * group, carma, may be missing or its lookup fail (the socket is then root's, with a
 * warning that says which when it is made); a group the configuration names must be
 * found: a typo would leave every user locked out of a carmad that runs as if all were
 * well. Looked up at start, before any job is reconciled (carma_group_gid: a big
 * group's lookup grows its buffer). */
static int resolve_socket_group(struct carmad *d, struct carma_err *err)
{
    d->sock_gid = (gid_t)-1;
    d->sock_group_err = 0;
    if (d->self_uid != 0 || !d->cfg.socket_group[0])
        return 0;
    gid_t gid;
    int e = carma_group_gid(d->cfg.socket_group, &gid);
    if (e == 0)
        d->sock_gid = gid;
    d->sock_group_err = e;
    if (e == 0 || !d->cfg.socket_group_line)
        return 0;
    if (e != -ENOENT)
        return carma_err_set(err, e, "%s:%u: socket_group %s: cannot look the group up: %s",
                             d->o.config_path ? d->o.config_path : "configuration",
                             d->cfg.socket_group_line, d->cfg.socket_group, strerror(-e));
    return carma_err_at(err, d->o.config_path ? d->o.config_path : "configuration",
                        d->cfg.socket_group_line,
                        "socket_group: no group '%s' (getent group %s finds none): create it "
                        "(groupadd), or name an existing one; the socket would be root's alone",
                        d->cfg.socket_group, d->cfg.socket_group);
}

static int add_fd(struct carmad *d, int fd, uint64_t tag)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = tag};
    return epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* One carmad per state folder: two would both launch its queued jobs. The lock is
 * an flock on STATE/carmad.lock, released by the kernel when this process ends, so a
 * carmad killed with -9 leaves no stale lock; the file holds the owner's pid for the
 * message. */
static int lock_state(struct carmad *d, struct carma_err *err)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/carmad.lock", d->state_dir);
    d->lockfd = openat(d->statefd, "carmad.lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (d->lockfd < 0)
        return carma_err_set(err, -errno, "%s: %s", p, strerror(errno));
    struct stat st;
    if (fstat(d->lockfd, &st) == 0 && (st.st_mode & 077))
        fchmod(d->lockfd, 0600); /* from an earlier carmad: its pid is nobody else's business */
    if (flock(d->lockfd, LOCK_EX | LOCK_NB) < 0) {
        int e = errno;
        char buf[32] = "";
        ssize_t n = pread(d->lockfd, buf, sizeof buf - 1, 0);
        buf[n > 0 ? n : 0] = '\0';
        buf[strcspn(buf, "\n")] = '\0';
        if (e == EWOULDBLOCK)
            return carma_err_set(err, -EBUSY, "%s: in use by another carmad (pid %s)",
                                 d->state_dir, buf[0] ? buf : "?");
        return carma_err_set(err, -e, "%s: %s", p, strerror(e));
    }
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(d->lockfd, 0) < 0 || pwrite(d->lockfd, pid, (size_t)n, 0) != n)
        return carma_err_set(err, -errno, "%s: %s", p, strerror(errno));
    return 0;
}

/* Takes group and other access from the files of one attempt folder (logs were 0640
 * with the user's group, status and shepherd 0644) and makes the folder 0711. */
static void tighten_attempt(const struct carmad *d, int afd)
{
    tighten_dir(d, afd);
    static const char *const files[] = {"stdout", "stderr", "status", "shepherd"};
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++)
        carma_file_private_at(afd, files[k]);
}

/* Visits the numbered entries of folder fd: fn(ctx, fd, name, number). */
static void each_numbered(int fd, void (*fn)(void *, int, const char *, unsigned long long),
                          void *ctx)
{
    int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    DIR *dir = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (!dir) {
        if (dup_fd >= 0)
            close(dup_fd);
        return;
    }
    rewinddir(dir);
    struct dirent *e;
    while ((e = readdir(dir))) {
        const char *c = e->d_name;
        if (*c < '0' || *c > '9' || strlen(c) > 19 || c[strspn(c, "0123456789")])
            continue;
        fn(ctx, fd, c, strtoull(c, NULL, 10));
    }
    closedir(dir);
}

struct tighten_walk {
    const struct carmad *d;
    unsigned folders;
};

static void tighten_attempt_at(void *ctx, int jfd, const char *name, unsigned long long n)
{
    struct tighten_walk *w = ctx;
    (void)n;
    int afd = openat(jfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (afd >= 0) {
        tighten_attempt(w->d, afd);
        close(afd);
    }
}

static void tighten_job_at(void *ctx, int jobsfd, const char *name, unsigned long long id)
{
    struct tighten_walk *w = ctx;
    (void)id;
    int jfd = openat(jobsfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (jfd < 0)
        return;
    struct stat st;
    if (fstat(jfd, &st) == 0 && st.st_uid == w->d->self_uid) {
        tighten_dir(w->d, jfd);
        each_numbered(jfd, tighten_attempt_at, w);
        w->folders++;
    }
    close(jfd);
}

static void highest_at(void *ctx, int fd, const char *name, unsigned long long id)
{
    (void)fd;
    (void)name;
    if (id > *(unsigned long long *)ctx)
        *(unsigned long long *)ctx = id;
}

/* Opens and checks STATE and STATE/jobs (creating them), takes the lock, and closes
 * to others what an earlier carmad left open: STATE and jobs/ become 0711 (0700 for
 * a per-user carmad), and on the first start after that change every job folder,
 * attempt folder and log (jobs/ still open to reading says so). */
static int open_state(struct carmad *d, struct carma_err *err)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s", d->state_dir);
    char *slash = strrchr(p, '/');
    int rc;
    if (slash && slash != p) {
        *slash = 0;
        if ((rc = mkdir_p(p, 0755)))
            return carma_err_set(err, rc, "%s: %s", p, strerror(-rc));
    }
    if (mkdir(d->state_dir, dir_mode(d)) < 0 && errno != EEXIST)
        return carma_err_set(err, -errno, "%s: %s", d->state_dir, strerror(errno));
    /* STATE itself may be a symlink an administrator made (/var/lib/carma -> /data/...);
     * what it names is checked like any folder. */
    d->statefd = open(d->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d->statefd < 0)
        return carma_err_set(err, -errno, "%s: %s", d->state_dir, strerror(errno));
    if ((rc = check_dir(d, d->statefd, d->state_dir, err)) || (rc = lock_state(d, err)))
        return rc;
    mode_t was = tighten_dir(d, d->statefd);
    if (was)
        dlog(d, LOG_WARNING, "%s: was mode %04o, open to other users; now %04o", d->state_dir,
             (unsigned)was, (unsigned)dir_mode(d));
    snprintf(p, sizeof p, "%s/jobs", d->state_dir);
    if ((d->jobsfd = open_dir_at(d, d->statefd, "jobs", p, 1, err)) < 0)
        return d->jobsfd;
    struct stat st;
    if (fstat(d->jobsfd, &st) == 0 && ((st.st_mode & 07777) & ~dir_mode(d))) {
        struct tighten_walk w = {.d = d};
        each_numbered(d->jobsfd, tighten_job_at, &w);
        tighten_dir(d, d->jobsfd); /* last: a walk cut short is done again next start */
        dlog(d, LOG_WARNING, "%s: was mode %04o; it and %u job folders (their logs, status "
                             "and shepherd files) are now closed to other users",
             p, (unsigned)(st.st_mode & 07777), w.folders);
    }
    return 0;
}

/* A store behind its job folders (emptied, or an older copy put back) would hand out
 * the ids of those folders again, and new jobs would write into old jobs' folders:
 * refused, with what to do. */
static int check_store_current(struct carmad *d, struct carma_err *err)
{
    uint64_t max = 0;
    int rc = carma_store_max_job_id(d->store, &max, err);
    if (rc)
        return rc;
    unsigned long long high = 0;
    each_numbered(d->jobsfd, highest_at, &high);
    if (high <= max)
        return 0;
    /* a backup put back is behind by the jobs submitted since it was made: keeping it
     * means taking their folders away, which the message says how to do */
    char keep[512] = "";
    if (max)
        snprintf(keep, sizeof keep,
                 "; or, to keep this copy, move the folders of the jobs it does not know, "
                 "jobs/%llu to jobs/%llu, out of jobs/ (those jobs are lost with the copy; a "
                 "shepherd of theirs still running is not followed: its pid is in its "
                 "attempt folder's shepherd file)",
                 (unsigned long long)max + 1, high);
    return carma_err_set(err, -ESTALE,
                         "%s/carma.db knows jobs up to %llu%s but %s/jobs holds job folders up "
                         "to %llu: the store was lost or replaced by an older copy. carmad will "
                         "not reuse those job ids and folders: restore a newer carma.db from a "
                         "backup%s; or move %s/jobs aside to start afresh",
                         d->state_dir, (unsigned long long)max, max ? "" : " (none: it is empty)",
                         d->state_dir, high, keep, d->state_dir);
}

struct folder_ids {
    unsigned long long below;
    uint64_t *v;
    size_t n, cap;
    int nomem;
};

/* Collects the ids of the job folders below w->below, named as carmad names them. */
static void folder_id_at(void *ctx, int fd, const char *name, unsigned long long id)
{
    struct folder_ids *w = ctx;
    (void)fd;
    char canon[24];
    snprintf(canon, sizeof canon, "%llu", id);
    if (w->nomem || id >= w->below || strcmp(canon, name) != 0)
        return;
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 1024;
        uint64_t *v = realloc(w->v, cap * sizeof *v);
        if (!v) {
            w->nomem = 1;
            return;
        }
        w->v = v;
        w->cap = cap;
    }
    w->v[w->n++] = id;
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

struct live_walk {
    const struct carmad *d;
    unsigned long long id;
    pid_t pid; /* of a live shepherd found, 0 none */
};

static void live_attempt_at(void *ctx, int jfd, const char *name, unsigned long long n)
{
    struct live_walk *w = ctx;
    (void)jfd;
    (void)name;
    char dir[PATH_MAX];
    pid_t pid;
    if (!w->pid && n <= UINT32_MAX) {
        attempt_dir(w->d, w->id, (uint32_t)n, dir, sizeof dir);
        if (carma_shepherd_alive(dir, &pid))
            w->pid = pid;
    }
}

/* The pid of a live shepherd in job folder id (one of its attempts still runs), else 0. */
static pid_t jobdir_live_shepherd(const struct carmad *d, uint64_t id)
{
    char name[24];
    snprintf(name, sizeof name, "%llu", (unsigned long long)id);
    int jfd = openat(d->jobsfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (jfd < 0)
        return 0;
    struct live_walk w = {.d = d, .id = id};
    each_numbered(jfd, live_attempt_at, &w);
    close(jfd);
    return w.pid;
}

/* The retention deletes jobs from the store, then their folders (jobdirs_remove, later
 * iterations): a stop or crash between leaves folders of jobs the store no longer
 * holds, as do folders that could not be removed, and those an older carmad left. At
 * start, with job_retention_days on, every folder STATE/jobs/ID whose ID is below the
 * store's highest and not in the store is queued for removal. That is safe: ids are
 * given in order and a job's folder is made only after its row commits, so such a
 * folder belongs to no job, now or later (the highest id is never removed, and
 * check_store_current refused a store behind its folders), except where the store lost
 * rows (.recover): a folder where a shepherd still runs is left. And cheap: one listing of
 * STATE/jobs and one scan of the jobs' primary key, at start only (100,000 folders:
 * about 0.1 s); the removal itself goes in batches. */
static void jobdirs_sweep(struct carmad *d)
{
    if (d->cfg.job_retention_days <= 0)
        return;
    struct carma_err err = {{0}};
    uint64_t max = 0, *ids = NULL;
    size_t n = 0;
    if (carma_store_max_job_id(d->store, &max, &err)) {
        dlog(d, LOG_WARNING, "retention: job folders not swept: %s", err.msg);
        return;
    }
    struct folder_ids w = {.below = max};
    each_numbered(d->jobsfd, folder_id_at, &w);
    if (w.nomem) {
        dlog(d, LOG_WARNING, "retention: job folders not swept: out of memory");
        free(w.v);
        return;
    }
    if (w.n == 0)
        return;
    if (carma_store_job_ids(d->store, max, &ids, &n, &err)) {
        dlog(d, LOG_WARNING, "retention: job folders not swept: %s", err.msg);
        free(w.v);
        return;
    }
    qsort(w.v, w.n, sizeof *w.v, u64_cmp);
    size_t k = 0, gone = 0;
    for (size_t i = 0; i < w.n; i++) {
        while (k < n && ids[k] < w.v[i])
            k++;
        if (k < n && ids[k] == w.v[i])
            continue;
        /* A store that lost rows (rebuilt by sqlite3's .recover, as a damaged store's
         * refusal suggests) leaves folders of jobs that still run: their shepherds write
         * there, and the folder is all that is left of the job. */
        pid_t live = jobdir_live_shepherd(d, w.v[i]);
        if (live) {
            dlog(d, LOG_WARNING,
                 "%s/jobs/%llu: the store does not know this job, but its shepherd %d still "
                 "runs (the store lost its row?): the folder is left in place",
                 d->state_dir, (unsigned long long)w.v[i], (int)live);
            continue;
        }
        w.v[gone++] = w.v[i];
    }
    free(ids);
    if (gone && jobdirs_queue(d, w.v, gone))
        dlog(d, LOG_WARNING, "retention: job folders not swept: out of memory");
    else if (gone)
        dlog(d, LOG_INFO,
             "retention: %zu log folders of jobs no longer in the store (removed before "
             "carmad's last stop, or left then) are removed",
             gone);
    free(w.v);
}

/* The carma-shepherd program: carmad's --shepherd (carmad_opts.shepherd), else the one
 * installed beside the running executable; it must be an executable file. It is held
 * open for carmad's life and every job runs that file: a carma-shepherd replaced or
 * removed later (an upgrade while jobs run) changes nothing until carmad restarts, so
 * carmad and its helper always speak the same protocol. */
static int find_shepherd(struct carmad *d, struct carma_err *err)
{
    if (d->o.shepherd) {
        if (strlen(d->o.shepherd) >= sizeof d->shepherd_exe)
            return carma_err_set(err, -ENAMETOOLONG, "the shepherd's path is too long");
        snprintf(d->shepherd_exe, sizeof d->shepherd_exe, "%s", d->o.shepherd);
    } else {
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0)
            return carma_err_set(err, -errno, "/proc/self/exe: %s", strerror(errno));
        self[n] = 0;
        char *slash = strrchr(self, '/');
        if (slash)
            *slash = 0;
        if ((size_t)snprintf(d->shepherd_exe, sizeof d->shepherd_exe, "%s/carma-shepherd", self) >=
            sizeof d->shepherd_exe)
            return carma_err_set(err, -ENAMETOOLONG, "the shepherd's path is too long");
    }
    struct stat st;
    d->shepherd_fd = open(d->shepherd_exe, O_PATH | O_CLOEXEC);
    if (d->shepherd_fd < 0 || fstat(d->shepherd_fd, &st) < 0)
        return carma_err_set(err, -errno,
                             "%s: %s: no executable carma-shepherd there (carmad starts every job "
                             "through it; it is built and installed beside carmad)",
                             d->shepherd_exe, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return carma_err_set(err, -EACCES,
                             "%s: not a file: no executable carma-shepherd there (carmad "
                             "starts every job through it; it is built and installed beside "
                             "carmad)",
                             d->shepherd_exe);
    /* every job runs that file through /proc/self/fd: /proc must be there, and carmad
     * allowed to run the file it holds (not only its path) */
    char via[64];
    snprintf(via, sizeof via, "/proc/self/fd/%d", d->shepherd_fd);
    if (access("/proc/self/fd", X_OK) < 0)
        return carma_err_set(err, -errno,
                             "/proc/self/fd: %s: carmad runs carma-shepherd through it "
                             "(mount /proc)",
                             strerror(errno));
    if (access(via, X_OK) < 0)
        return carma_err_set(err, -errno,
                             "%s: %s: carmad cannot run it: no executable carma-shepherd there "
                             "(carmad starts every job through it; it is built and installed "
                             "beside carmad)",
                             d->shepherd_exe, strerror(errno));
    return 0;
}

int carmad_open(struct carmad **out, const struct carmad_opts *o, struct carma_err *err)
{
    *out = NULL;
    struct carmad *d = calloc(1, sizeof *d);
    if (!d)
        return carma_err_set(err, -ENOMEM, "out of memory");
    d->o = *o;
    d->epfd = d->lfd = d->sfd = d->tfd = d->lockfd = d->statefd = d->jobsfd = d->reserve_fd = -1;
    d->kmsg_fd = -1;
    d->shepherd_fd = -1;
    d->self_uid = geteuid();
    d->rec_rows = UINT64_MAX;
    d->http_queued = HTTP_JOBS_QUEUED;
    const char *thq = getenv("CARMA_TEST_HTTP_JOBS_QUEUED");
    if (thq && *thq)
        d->http_queued = (uint32_t)strtoul(thq, NULL, 10);
    const char *twd = getenv("CARMA_TEST_WATCH_DELAY_MS");
    if (twd && *twd)
        d->test_watch_delay_ms = strtol(twd, NULL, 10) % 10000;
    const char *twf = getenv("CARMA_TEST_WATCH_FAIL");
    d->test_watch_fail = twf && *twf;
    const char *twj = getenv("CARMA_TEST_WATCH_FAIL_JOB");
    if (twj && *twj)
        d->test_watch_fail_job = strtoull(twj, NULL, 10);
    const char *trn = getenv("CARMA_TEST_RECON_NOMEM");
    d->test_recon_nomem = trn && *trn;
    const char *tst = getenv("CARMA_TEST_SOCKET_TAKEN");
    d->test_socket_taken = tst && *tst;
    const char *tdc = getenv("CARMA_TEST_DIE_AT_CANCEL");
    d->test_die_at_cancel = tdc && *tdc;
    const char *tef = getenv("CARMA_TEST_END_COMMIT_FAILS");
    if (tef && *tef)
        d->test_end_commit_fails = strtol(tef, NULL, 10) % 1000;
    const char *teu = getenv("CARMA_TEST_END_UPDATE_FAILS");
    if (teu && *teu)
        d->test_end_update_fails = strtol(teu, NULL, 10) % 100000;
    const char *txw = getenv("CARMA_TEST_XID_FAULT_WINDOW");
    d->xid_fault_window_s = txw && *txw ? strtod(txw, NULL) : XID_FAULT_WINDOW_S;
    const char *tsf = getenv("CARMA_TEST_START_FAILS");
    d->test_start_fails = tsf ? strtol(tsf, NULL, 10) : 0;
    const char *tsw = getenv("CARMA_TEST_START_WAIT_MS");
    d->start_wait_s = tsw && *tsw ? (double)(strtol(tsw, NULL, 10) % 100000) / 1e3 : 10.0;
    carmad_config_default(&d->cfg);
    int rc = 0;
    if (o->config_path && (rc = carmad_config_load(&d->cfg, o->config_path, err)))
        goto fail;
    /* a root carmad's configuration decides who reaches the socket, whether root's jobs
     * run, where the HTTP port listens: a file another user may change is refused, as a
     * state folder others may write is (sudo refuses such a sudoers file) */
    if (o->config_path && d->self_uid == 0 &&
        (d->cfg.file_uid != 0 || (d->cfg.file_mode & S_IWOTH))) {
        rc = carma_err_at(
            err, o->config_path, 0,
            d->cfg.file_uid != 0 ? "owned by uid %u, not root: another user could change a root "
                                   "carmad's settings (chown root)"
                                 : "writable by others (mode %04o): any user could change a root "
                                   "carmad's settings (chmod o-w)",
            d->cfg.file_uid != 0 ? (unsigned)d->cfg.file_uid : (unsigned)d->cfg.file_mode);
        goto fail;
    }
    if (o->max_attempts)
        d->cfg.max_attempts = o->max_attempts;
    if ((rc = resolve_socket_group(d, err)))
        goto fail;
    if ((rc = find_shepherd(d, err)))
        goto fail;
    const char *pname = o->policy ? o->policy : d->cfg.policy;
    if (!(d->policy = carma_policy_find(pname))) {
        char known[256];
        carma_policy_names(known, sizeof known);
        rc = carma_err_set(err, -EINVAL, "--policy %s: unknown policy (known: %s)", pname, known);
        goto fail;
    }
    if (o->state_dir) {
        snprintf(d->state_dir, sizeof d->state_dir, "%s", o->state_dir);
    } else if (d->self_uid == 0) {
        snprintf(d->state_dir, sizeof d->state_dir, "/var/lib/carma");
    } else {
        const char *x = getenv("XDG_STATE_HOME"), *h = getenv("HOME");
        if (x && *x == '/')
            snprintf(d->state_dir, sizeof d->state_dir, "%s/carma", x);
        else
            snprintf(d->state_dir, sizeof d->state_dir, "%s/.local/state/carma", h ? h : "/tmp");
    }
    if (o->socket_path) {
        if (strlen(o->socket_path) >= sizeof d->sock_path) {
            rc = carma_err_set(err, -EINVAL, /* a bad option: exit 2 */
                               "--socket %.200s%s: path of %zu bytes; a Unix socket's is at "
                               "most %zu",
                               o->socket_path, strlen(o->socket_path) > 200 ? "..." : "",
                               strlen(o->socket_path), sizeof d->sock_path - 1);
            goto fail;
        }
        snprintf(d->sock_path, sizeof d->sock_path, "%s", o->socket_path);
    } else if ((rc = carma_proto_default_socket(d->sock_path, sizeof d->sock_path))) {
        rc = carma_err_set(err, -EINVAL,
                           "the socket path ($CARMA_SOCKET, else under $XDG_RUNTIME_DIR) is "
                           "longer than a Unix socket's %zu bytes: give --socket",
                           sizeof d->sock_path - 1);
        goto fail;
    }
    /* Checked before anything is done, and again when the socket is made. */
    if ((rc = check_socket_path(d->sock_path, err)))
        goto fail;
    if ((rc = open_state(d, err)))
        goto fail;
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/carma.db", d->state_dir);
    if ((rc = carma_store_open(&d->store, p, err)) || (rc = check_store_current(d, err)))
        goto fail;
    int copy_made, found = carma_store_version_found(d->store);
    const char *copy = carma_store_pre_migration_copy(d->store, &copy_made);
    if (copy && copy_made == CARMA_STORE_COPY_MADE)
        dlog(d, LOG_NOTICE,
             "%s: copied to %s (schema v%d) before its migration to v%d: the carmad before "
             "runs on that copy (docs/daemon.md, \"Upgrading, and going back\")",
             p, copy, found, CARMA_STORE_SCHEMA_VERSION);
    else if (copy)
        dlog(d, LOG_NOTICE,
             "%s: migrated from schema v%d to v%d with no new copy: %s, an older copy, is "
             "kept as it is (not overwritten)",
             p, found, CARMA_STORE_SCHEMA_VERSION, copy);
    if (carma_store_modes_fixed(d->store))
        dlog(d, LOG_WARNING, "%s (or its -wal/-shm) was readable by other users; now 0600. "
                             "Job environments stored there (tokens) may have been read",
             p);
    if (carma_store_check_incomplete(d->store))
        dlog(d, LOG_WARNING, "%s: the integrity check did not finish in %.0f s; not checked",
             p, CARMA_STORE_CHECK_S);
    /* The signals the loop reads from its signalfd are blocked before the GPU backend
     * opens: a thread NVML or DCGM starts there (a client library's connection thread)
     * keeps the mask it was started with, and one that does not block them takes them
     * from the signalfd, where their default action ends carmad (SIGHUP, which the loop
     * only logs, too). The threads carmad starts block every signal themselves. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, NULL);
    if ((rc = open_backend(d, err)))
        goto fail;
    if ((rc = carma_sched_init(&d->sched, NULL, d->gpus, d->ngpus, d->policy, &d->cfg.sched))) {
        carma_err_set(err, rc, "scheduler: cannot start");
        goto fail;
    }
    d->sched_ready = 1;
    if (d->cfg.learn_coloc)
        coloc_load(d);
    if ((rc = slots_grow(d))) {
        carma_err_set(err, rc, "out of memory");
        goto fail;
    }
    d->epfd = epoll_create1(EPOLL_CLOEXEC);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGCHLD, SIG_IGN); /* shepherds are reaped by the kernel; pidfds tell their end */
    d->sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    d->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (d->epfd < 0 || d->sfd < 0 || d->tfd < 0) {
        rc = carma_err_set(err, -errno, "epoll/signalfd/timerfd: %s", strerror(errno));
        goto fail;
    }
    struct carma_mon_hooks mh = {.ctx = d, .proc = mon_proc, .log = mon_log};
    if ((rc = carma_mon_init(&d->mon, &d->gb, d->gpus, d->ngpus, &d->sched, &mh,
                             d->cfg.record_interval_s, err)))
        goto fail;
    d->have_mon = 1;
    drained_load(d);
    if (d->cfg.record_interval_s > 0) {
        int tx = carma_store_begin(d->store, err);
        for (size_t g = 0; !tx && g < d->ngpus; g++)
            tx = carma_store_gpu_id(d->store, d->gs[g].info.uuid, d->gs[g].info.name,
                                    d->gs[g].info.mem_total_bytes >> 20,
                                    d->gs[g].info.power_limit_w, &d->gs[g].db_id, err);
        if (!tx)
            tx = carma_store_commit(d->store, err);
        else
            carma_store_rollback(d->store);
        if (tx) {
            dlog(d, LOG_WARNING, "monitor records off: %s", err->msg);
            for (size_t g = 0; g < d->ngpus; g++)
                d->gs[g].db_id = -1;
        }
    }
    double iv = d->cfg.monitor_interval_s;
    struct itimerspec its = {.it_interval = {(time_t)iv, (long)((iv - (double)(time_t)iv) * 1e9)}};
    its.it_value = its.it_interval;
    timerfd_settime(d->tfd, 0, &its, NULL);
    add_fd(d, d->sfd, TAG(TAG_SIGNAL, 0));
    add_fd(d, d->tfd, TAG(TAG_TIMER, 0));
    int xfd = d->gb.ops->xid_fd ? d->gb.ops->xid_fd(&d->gb) : -1;
    if (xfd >= 0 && add_fd(d, xfd, TAG(TAG_XID, 0)) < 0)
        dlog(d, LOG_WARNING, "Xid events not followed: epoll_ctl: %s", strerror(errno));
    kmsg_open(d);
    if ((rc = carmad_estq_start(&d->estq, d->dev_kinds, d->nkinds,
                                getenv("CARMA_TEST_ESTIMATE_HOLD"), err)))
        goto fail;
    if (add_fd(d, carmad_estq_fd(d->estq), TAG(TAG_ESTQ, 0)) < 0) {
        rc = carma_err_set(err, -errno, "epoll_ctl: %s", strerror(errno));
        goto fail;
    }
    if ((rc = carmad_pathcheck_init(&d->paths, getenv("CARMA_TEST_PATHCHECK_HOLD"), err)))
        goto fail;
    if (add_fd(d, carmad_pathcheck_fd(d->paths), TAG(TAG_PATHS, 0)) < 0) {
        rc = carma_err_set(err, -errno, "epoll_ctl: %s", strerror(errno));
        goto fail;
    }
    /* The socket is checked and HTTP binds before anything is reconciled or launched:
     * a socket or port in use fails the start with nothing done. */
    if ((rc = socket_free(d, err)))
        goto fail;
    const char *hs = o->http ? o->http : d->cfg.http;
    if (hs[0] && strcmp(hs, "off") != 0) {
        if ((rc = carma_http_start(&d->http, hs, err)))
            goto fail;
        d->publish = 1;
        dlog(d, LOG_INFO, "http: /metrics, /v1/gpus, /v1/jobs on %s", hs);
    }
    monitor_tick(d);
    if ((rc = reconcile(d, err)))
        goto fail;
    if (d->cfg.order_fair) {
        /* Read once reconciled: the attempts that ended while carmad was down have their
         * ends then (else charged up to now), those that never ran are gone. What has not
         * decayed below 2^-30 of itself. */
        d->fair_t = now_s();
        if ((rc = carma_store_user_gpu_time(d->store, d->fair_t - 30 * d->cfg.fair_halflife_s,
                                            fair_load_row, d, err)))
            goto fail;
    }
    jobdirs_sweep(d);
    if ((rc = open_socket(d, err)))
        goto fail;
    add_fd(d, d->lfd, TAG(TAG_LISTEN, 0));
    conns_limits(d);
    dlog(d, LOG_INFO,
         "carmad %s listening on %s; state in %s; policy %s; store schema v%d (found v%d)",
         d->o.version ? d->o.version : "(version unknown)", d->sock_path, d->state_dir,
         d->policy->name, CARMA_STORE_SCHEMA_VERSION, carma_store_version_found(d->store));
    *out = d;
    return 0;
fail:
    carmad_close(d);
    return rc;
}

void carmad_set_hooks(struct carmad *d, const struct carmad_hooks *h)
{
    d->hooks = *h;
}

double carmad_monitor_interval(const struct carmad *d)
{
    return d->cfg.monitor_interval_s;
}

/* Lowers the loop's epoll timeout (ms, -1 none) to wake it by deadline (carma_mono_s();
 * 0: none). */
static void wake_by(double deadline, int *timeout)
{
    if (!(deadline > 0))
        return;
    double left = deadline - carma_mono_s();
    int ms = left <= 0 ? 0 : left > 1000 ? 1000000 : (int)(left * 1e3) + 1;
    if (*timeout < 0 || ms < *timeout)
        *timeout = ms;
}

int carmad_run(struct carmad *d, struct carma_err *err)
{
    (void)err;
    struct epoll_event ev[64];
    /* the attempts reconciled whose limits passed while carmad was down end at once */
    d->tl_next = now_s();
    timelimit_tick(d);
    iteration_end(d);
    while (!d->stop) {
        /* Without connections nothing needs a clock: idle carmad sleeps. */
        int timeout = d->more_work ? 0 : d->nconns || d->listen_paused ? 1000 : -1;
        /* a helper that stalls gives no event: the first start's deadline wakes carmad */
        double first = starts_deadline(d);
        wake_by(first, &timeout);
        /* a path check that does not end: its deadline wakes carmad */
        double paths_by = paths_deadline(d);
        wake_by(paths_by, &timeout);
        /* launches paused: their end wakes carmad to place the jobs that wait */
        wake_by(d->launch_pause_until, &timeout);
        int n = epoll_wait(d->epfd, ev, 64, timeout);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return carma_err_set(err, -errno, "epoll_wait: %s", strerror(errno));
        d->nslices = 0; /* a new iteration: every uid has its UID_SLICE_S again */
        for (int k = 0; k < n; k++) {
            uint64_t tag = ev[k].data.u64 >> 32;
            uint32_t idx = (uint32_t)ev[k].data.u64;
            switch (tag) {
            case TAG_LISTEN: on_accept(d); break;
            case TAG_CONN: on_conn(d, idx, ev[k].events); break;
            case TAG_PIDFD: on_pidfd(d, idx); break;
            case TAG_START:
                on_start(d, idx);
                break;
            case TAG_XID:
                take_xids(d);
                break;
            case TAG_KMSG:
                take_kmsg(d);
                break;
            case TAG_ESTQ:
                estq_take(d);
                break;
            case TAG_PATHS:
                paths_take(d);
                break;
            case TAG_TIMER: {
                uint64_t exp;
                while (read(d->tfd, &exp, sizeof exp) > 0)
                    ;
                monitor_tick(d);
                timelimit_tick(d);
                if (d->hooks.on_tick)
                    d->hooks.on_tick(d->hooks.ctx, now_s());
                if (carma_sched_queued(&d->sched))
                    d->dirty = 1;
                break;
            }
            case TAG_SIGNAL: {
                struct signalfd_siginfo si;
                while (read(d->sfd, &si, sizeof si) == sizeof si) {
                    if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
                        uint32_t running = 0;
                        for (uint32_t i = 0; i < d->cap; i++)
                            running += d->dj[i].used && d->sj[i].state == CARMA_JOB_RUNNING;
                        uint32_t queued = carma_sched_queued(&d->sched);
                        dlog(d, LOG_NOTICE,
                             "signal %u: stopping; %u running job%s keep%s running (carmad "
                             "re-adopts them at its next start), %u queued job%s wait%s for it",
                             si.ssi_signo, running, running == 1 ? "" : "s",
                             running == 1 ? "s" : "", queued, queued == 1 ? "" : "s",
                             queued == 1 ? "s" : "");
                        d->stop = 1;
                    } else if (si.ssi_signo == SIGHUP) {
                        dlog(d, LOG_NOTICE, "SIGHUP: the configuration is read at start only; "
                                            "restart carmad to apply it (jobs keep running)");
                    }
                }
                break;
            }
            }
        }
        if (first > 0 && carma_mono_s() >= first)
            for (uint32_t i = 0; d->nstarting && i < d->cap; i++)
                if (d->dj[i].used && d->dj[i].start && carma_mono_s() >= d->dj[i].start->deadline)
                    on_start(d, i); /* past its deadline: failed */
        if (paths_by > 0 && carma_mono_s() >= paths_by)
            paths_expire(d);
        iteration_end(d);
    }
    /* a clean stop: the running attempts' accounting and the pending records, so that
     * a restart resumes them where they are now */
    record_flush(d, now_s(), 1);
    return 0;
}

void carmad_close(struct carmad *d)
{
    if (!d)
        return;
    carma_http_stop(d->http);
    d->http = NULL;
    json_decref(d->http_why);
    d->http_why = NULL;
    /* no new connection from here: a client told "busy" by estq_abort that tries again at
     * once finds no carmad, which it waits for, rather than one that resets it */
    if (d->lfd >= 0) {
        close(d->lfd);
        d->lfd = -1;
        unlink(d->sock_path);
    }
    estq_abort(d);
    for (uint32_t ci = 0; ci < d->conn_hi;)
        if (d->conns[ci])
            conn_close(d, ci); /* lowers conn_hi when it was the last */
        else
            ci++;
    if (d->reserve_fd >= 0)
        close(d->reserve_fd);
    /* Shepherds still starting are told nothing more, all at once: each removes its record
     * and ends, so that a restarted carmad re-queues the job; one still there after a
     * second between them is killed and its record removed. */
    for (uint32_t i = 0; i < d->cap; i++)
        if (d->dj[i].used && d->dj[i].start)
            carma_shepherd_release(d->dj[i].start);
    double until = carma_mono_s() + 1.0;
    for (uint32_t i = 0; i < d->cap; i++)
        if (d->dj[i].used && d->dj[i].start)
            start_drop(d, i, until);
    for (uint32_t i = 0; i < d->cap; i++)
        if (d->dj[i].used)
            slot_free(d, i);
    if (d->sfd >= 0)
        close(d->sfd);
    if (d->tfd >= 0)
        close(d->tfd);
    if (d->kmsg_fd >= 0)
        close(d->kmsg_fd);
    free(d->kmsg_buf);
    if (d->epfd >= 0)
        close(d->epfd);
    if (d->sched_ready)
        carma_sched_free(&d->sched);
    if (d->have_mon)
        carma_mon_free(&d->mon);
    free(d->drained);
    if (d->have_gb)
        d->gb.ops->close(&d->gb);
    carma_store_close(d->store);
    if (d->jobsfd >= 0)
        close(d->jobsfd);
    if (d->shepherd_fd >= 0)
        close(d->shepherd_fd);
    if (d->statefd >= 0)
        close(d->statefd);
    if (d->lockfd >= 0)
        close(d->lockfd); /* releases the state folder */
    free(d->gpus);
    free(d->gs);
    free(d->kinds);
    free(d->dev_kinds);
    free(d->coloc);
    free(d->coloc_logged);
    free(d->sj);
    free(d->dj);
    free(d->rm_ids);
    free(d->freel);
    free(d->fair_key);
    free(d->fair);
    for (size_t p = 0; p < d->npend; p++) /* answers of a commit that never came */
        json_decref(d->pend[p].resp);
    free(d->pend);
    free(d->touched);
    free(d);
}
