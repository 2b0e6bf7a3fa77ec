/* The shepherd: one small process per job attempt, the carma-shepherd helper that
 * carmad spawns (posix_spawn: carmad's memory is never shared copy-on-write with a
 * process that lives as long as the job). It leaves
 * carmad's session (setsid), becomes a child subreaper, records itself in the
 * attempt folder, starts the job (argv exec'd directly, its own process group,
 * the given environment and working directory, stdout/stderr to files, the
 * submitting user's credentials and resource limits when carmad is root, the
 * submitter's umask, an oom_score_adj of 0 whatever carmad's), waits for it, ends
 * whatever the job left behind, and writes the exit status atomically next to the logs.
 * It outlives carmad, so a restarted carmad re-adopts it or reads its status.
 *
 * Attempt folder files: stdout, stderr, shepherd ("PID STARTTIME"), status
 * ("exited N" | "signaled N", "cancelled 0|1", "end SECONDS"; written into .status.tmp,
 * whose space the shepherd allocates before the job starts, then renamed). SIGTERM to the
 * shepherd cancels: SIGTERM to every process of the job, SIGKILL after the grace. */
#ifndef CARMA_DAEMON_SHEPHERD_H
#define CARMA_DAEMON_SHEPHERD_H

#include <stdint.h>
#include <sys/types.h>

#include "daemon/classify.h"
#include "util/err.h"

struct carma_shepherd_spec {
    const char *dir;              /* attempt folder, exists */
    char *const *argv;            /* NULL-terminated */
    char *const *envp;            /* NULL-terminated "K=V" */
    const char *cwd;
    uid_t uid;
    gid_t gid;
    const char *user;             /* for initgroups */
    int switch_user;              /* 1: setgid/initgroups/setuid to uid (carmad is root) */
    mode_t umask;                 /* the job's file mode creation mask (0..0777) */
    const char *rlimits;          /* the job's resource limits (util/rlimits.h text), set
                                     before it leaves root; NULL: the shepherd's own */
    double kill_grace_s;          /* SIGTERM -> SIGKILL on cancel */
};

enum { CARMA_SHEPHERD_WHY_MAX = 255 }; /* the reason a helper that cannot start gives */

/* A shepherd being started. carmad never waits for it: carma_shepherd_begin spawns it,
 * then carma_shepherd_step, called whenever ready_fd is readable or spec_fd writable and
 * once its deadline passes, hands it the job and reads its record, and
 * carma_shepherd_abort gives up on it. The fields are read-only to the caller. */
struct carma_shepherd_start {
    pid_t pid;
    int pidfd;       /* -1 on kernels before 5.3; the caller's once step returns 1 */
    int ready_fd;    /* read: 'r' once it recorded itself, or 'e' and why it cannot */
    int go_fd;       /* written: 'g', the job may start */
    int spec_fd;     /* written, non-blocking: the environment and command; -1 once sent */
    int spec_failed; /* it stopped reading them */
    char *spec;      /* the cwd, the user, NENV and NARGV strings, each ending in a NUL */
    size_t spec_len, spec_off;
    char msg[CARMA_SHEPHERD_WHY_MAX + 2];
    size_t got;
    double deadline; /* carma_mono_s by which it must have recorded itself */
    double wait_s;   /* the time it had for that */
    char *dir;       /* its attempt folder, where carma_shepherd_abort removes its record */
};

/* Spawns the shepherd program (carma-shepherd) open at exe_fd (any flags, O_PATH will
 * do; exe is its name, for messages and its argv[0]; run through /proc/self/fd) for
 * spec, which it must have recorded itself for within wait_s. 0 with st filled (its
 * descriptors close-on-exec), or a negative errno with err set and nothing left open. */
int carma_shepherd_begin(const char *exe, int exe_fd, const struct carma_shepherd_spec *sp,
                         double wait_s, struct carma_shepherd_start *st, struct carma_err *err);

/* Moves a start on without blocking: 0 while it goes on, 1 once the helper recorded
 * itself and was told to start the job (st->pid runs it; st->pidfd is the caller's to
 * close; nothing else is left open), or a negative errno with err set (the helper's own
 * reason when it gave one; a helper still there is killed; nothing is left open). */
int carma_shepherd_step(struct carma_shepherd_start *st, struct carma_err *err);

/* Tells the helper of a start it will not be told to go (closes carmad's ends of its
 * pipes): it removes its record and ends without starting the job. carma_shepherd_abort
 * then waits for it; releasing every start first lets them all end at once. */
void carma_shepherd_release(struct carma_shepherd_start *st);

/* Gives up on a start (releasing it if not yet): waits for the helper until the deadline
 * (carma_mono_s; 0: not at all), then kills it through its pidfd, and removes the record
 * it may have left (it was never told to go: the job never ran, and a restarted carmad
 * must queue it again, not count it lost). Nothing is left open. */
void carma_shepherd_abort(struct carma_shepherd_start *st, double deadline);

/* The shepherd program's main: argv as carma_shepherd_begin gives it (anything else is
 * refused with status 2); never returns once it has started. */
int carma_shepherd_main(int argc, char **argv);

/* Process start time (clock ticks since boot, /proc/PID/stat field 22), or 0 when
 * the process does not exist. Identifies a pid across pid reuse. */
uint64_t carma_proc_starttime(pid_t pid);

/* Writes `text` to dir/name atomically: dir/.name.tmp (0600, not following a link), then a
 * rename; when durable, fsync of the file before the rename and of the folder after.
 * 0, or a negative errno with err (may be NULL) naming the file and the call that failed;
 * the temporary file, once made, is removed on failure. */
int carma_file_write_atomic(const char *dir, const char *name, const char *text, int durable,
                            struct carma_err *err);

/* Parent, session and start time (clock ticks since boot) of a process, from
 * /proc/PID/stat; any pointer may be NULL. Returns 0, or -1 when it cannot be read. */
int carma_proc_stat(pid_t pid, pid_t *ppid, pid_t *sid, uint64_t *starttime);

/* What a shepherd that ended without its status left of its job: SIGKILL to every process
 * of session sid (the shepherd's pid; every process of the job is in it unless it made a
 * session of its own) whose real uid is uid and whose environment holds the job's marks
 * (CARMA_JOB_ID=job and CARMA_JOB_ATTEMPT=attempt, which the shepherd gives the job),
 * unless a process other than the shepherd (start time leader_start, clock ticks; 0:
 * unknown) holds that pid now. The marks keep a stranger's session out: once the job's
 * last process is gone the pid may be handed out again, and a double-forked daemon of the
 * same user can lead a session of that id. Each process is pinned by a pidfd before it is
 * looked at and signalled through that (a pid freed during the checks may be another
 * user's process by the signal). Scans /proc again while it finds any (processes forked
 * meanwhile). How many were signalled. */
int carma_proc_kill_session(pid_t sid, uid_t uid, uint64_t leader_start, uint64_t job,
                            uint32_t attempt);

/* Sends sig to every process of the job of shepherd self: those of its session and every
 * descendant (a child that made a session of its own is still the shepherd's: it is the
 * job's subreaper). Found in /proc, then each signalled through a pidfd once its start
 * time shows it is still the process found (the scan takes a while: a pid freed
 * meanwhile may be another user's process by then). scanned, when not NULL, is called
 * with ctx between the scan and the signals (tests). How many were signalled. */
int carma_proc_kill_tree(pid_t self, int sig, void (*scanned)(void *), void *ctx);

/* Reads the shepherd file of an attempt folder. 0, -ENOENT or -EINVAL. */
int carma_shepherd_read_pid(const char *dir, pid_t *pid, uint64_t *starttime);

/* Reads the status file. 0 (x and *end_s filled), -ENOENT when the attempt has
 * not ended (or its shepherd died before writing), -EINVAL when malformed. */
int carma_shepherd_read_status(const char *dir, struct carma_exit *x, double *end_s);

/* 1 when the shepherd recorded in dir is alive (pid and start time match). Only a
 * look: its pid may go to another process at once. */
int carma_shepherd_alive(const char *dir, pid_t *pid);

/* A pidfd of the shepherd recorded in dir (*pid its pid), opened before its start time
 * is checked, so that it is that shepherd's and no process's that took its pid; -1 when
 * it is not alive (or pidfds are not to be had). */
int carma_shepherd_pidfd(const char *dir, pid_t *pid);

#endif
