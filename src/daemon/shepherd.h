/* The shepherd: one small process per job attempt, the carma-shepherd helper that
 * carmad spawns (posix_spawn: carmad's memory is never shared copy-on-write with a
 * process that lives as long as the job). It leaves
 * carmad's session (setsid), becomes a child subreaper, records itself in the
 * attempt folder, starts the job (argv exec'd directly, its own process group,
 * the given environment and working directory, stdout/stderr to files, the
 * submitting user's credentials when carmad is root), waits for it, ends whatever
 * the job left behind, and writes the exit status atomically next to the logs.
 * It outlives carmad, so a restarted carmad re-adopts it or reads its status.
 *
 * Attempt folder files: stdout, stderr, shepherd ("PID STARTTIME"), status
 * ("exited N" | "signaled N", "cancelled 0|1", "end SECONDS"). SIGTERM to the
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
    double kill_grace_s;          /* SIGTERM -> SIGKILL on cancel */
};

/* Spawns the shepherd program (carma-shepherd) open at exe_fd (any flags, O_PATH will
 * do; exe is its name, for messages and its argv[0]; run through /proc/self/fd) for spec
 * and waits for it to record itself in sp->dir. Returns its pid, with *pidfd (when not
 * NULL) its pidfd, the caller's to close (-1 on kernels before 5.3), or a negative errno
 * with err set (the helper's own reason when it gave one). */
pid_t carma_shepherd_spawn(const char *exe, int exe_fd, const struct carma_shepherd_spec *sp,
                           int *pidfd, struct carma_err *err);

/* The shepherd program's main: argv as carma_shepherd_spawn gives it (anything else is
 * refused with status 2); never returns once it has started. */
int carma_shepherd_main(int argc, char **argv);

/* Process start time (clock ticks since boot, /proc/PID/stat field 22), or 0 when
 * the process does not exist. Identifies a pid across pid reuse. */
uint64_t carma_proc_starttime(pid_t pid);

/* Parent, session and start time (clock ticks since boot) of a process, from
 * /proc/PID/stat; any pointer may be NULL. Returns 0, or -1 when it cannot be read. */
int carma_proc_stat(pid_t pid, pid_t *ppid, pid_t *sid, uint64_t *starttime);

/* Reads the shepherd file of an attempt folder. 0, -ENOENT or -EINVAL. */
int carma_shepherd_read_pid(const char *dir, pid_t *pid, uint64_t *starttime);

/* Reads the status file. 0 (x and *end_s filled), -ENOENT when the attempt has
 * not ended (or its shepherd died before writing), -EINVAL when malformed. */
int carma_shepherd_read_status(const char *dir, struct carma_exit *x, double *end_s);

/* 1 when the shepherd recorded in dir is alive (pid and start time match). */
int carma_shepherd_alive(const char *dir, pid_t *pid);

#endif
