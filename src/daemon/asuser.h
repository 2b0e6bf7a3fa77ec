/* Path checks with a user's file-system rights, for a root carmad answering a
 * submission: a path the user cannot reach must be answered as a missing one, or
 * carmad's answers tell users which files exist in folders they cannot read.
 *
 * Linux keeps the file-system uid and gid and the supplementary groups per thread.
 * The raw system calls used here change the calling thread only (glibc's setgroups()
 * would change every thread), so carmad's other threads (the HTTP server) keep their
 * rights; between enter and leave the caller may only examine paths (stat,
 * faccessat with AT_EACCESS): nothing it creates or opens then is done as root. */
#ifndef CARMA_DAEMON_ASUSER_H
#define CARMA_DAEMON_ASUSER_H

#include <stdint.h>
#include <sys/types.h>

#include "util/err.h"

struct carma_asuser {
    int active;
    uid_t fsuid; /* the thread's, to restore */
    gid_t fsgid;
    gid_t *groups; /* the thread's supplementary groups, to restore */
    int ngroups;
    int groups_set; /* the supplementary groups were changed */
    uint32_t cap_eff[2]; /* the thread's effective capabilities, to restore */
    int caps_dropped;    /* they were cleared */
};

/* Takes on uid, gid and the groups of user (getgrouplist: the groups the job will
 * run with, initgroups) for file access in this thread, which holds no effective
 * capability meanwhile (root's CAP_SYS_PTRACE would follow /proc/PID/cwd of processes
 * the user may not look at). 0, or a negative errno with
 * err set and the thread's rights unchanged. */
int carma_asuser_enter(struct carma_asuser *a, uid_t uid, gid_t gid, const char *user,
                       struct carma_err *err);

/* Gives back the thread's own rights. Aborts when it cannot: a thread left with a
 * user's rights, or root's where a user's were meant, must not go on. No-op when
 * enter failed or was not called (a zeroed struct). */
void carma_asuser_leave(struct carma_asuser *a);

#endif
