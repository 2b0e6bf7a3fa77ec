/* A submission's paths (its cwd, its command looked up on PATH) checked with the
 * submitter's file-system rights on a thread of their own, so that a file system that does
 * not answer (a hung NFS server, a stuck FUSE mount: stat waits until it does) holds that
 * thread, not carmad's loop. Each check gets a thread; the loop learns of finished checks
 * through an eventfd, and gives up on one past its deadline (carmad_pathcheck_abandon):
 * the thread then stays blocked until the file system answers, and frees the check. Such
 * abandoned checks are counted (carmad_pathcheck_stuck) so that the caller can refuse new
 * ones once too many threads wait on file systems. */
#ifndef CARMA_DAEMON_PATHCHECK_H
#define CARMA_DAEMON_PATHCHECK_H

#include <sys/types.h>

#include "util/err.h"

enum carmad_path_verdict {
    CARMAD_PATH_OK,
    CARMAD_PATH_NO_CWD,     /* cwd is not a folder the user may enter */
    CARMAD_PATH_NO_COMMAND, /* argv0 is not found, or not executable by the user */
};

struct carmad_pathcheck_req {
    uid_t uid;
    gid_t gid;
    const char *user;     /* the user's name (its groups: getgrouplist) */
    int as_user;          /* take on the user's rights (a root carmad, another user) */
    const char *cwd;      /* absolute */
    const char *argv0;    /* a name looked up on PATH, or a path (relative to cwd) */
    const char *path_env; /* the job's PATH; NULL: /usr/local/bin:/usr/bin:/bin */
};

struct carmad_pathcheck_item;
struct carmad_pathcheck;

/* hold_path (tests: CARMA_TEST_PATHCHECK_HOLD): when not NULL, each check creates
 * hold_path ".held" and then waits until hold_path exists, as a check on a file system
 * that does not answer would; when the file then holds a number N (1 to 60000), the
 * check takes N ms more, as one on a slow file system would. Returns 0, or a negative
 * errno with err. */
int carmad_pathcheck_init(struct carmad_pathcheck **out, const char *hold_path,
                          struct carma_err *err);
/* Readable while finished checks wait to be taken, and once an abandoned check's thread
 * has ended (its user's place is free again); read it to clear it. */
int carmad_pathcheck_fd(const struct carmad_pathcheck *pc);
/* Starts checking req (copied) on a thread; owner is given back by carmad_pathcheck_owner.
 * Returns 0 with *out, or -ENOMEM / -EAGAIN (no thread) with err. */
int carmad_pathcheck_start(struct carmad_pathcheck *pc, const struct carmad_pathcheck_req *req,
                           void *owner, struct carmad_pathcheck_item **out,
                           struct carma_err *err);
/* A finished check, oldest first, or NULL. The caller reads it, then frees it
 * (carmad_pathcheck_free). */
struct carmad_pathcheck_item *carmad_pathcheck_take(struct carmad_pathcheck *pc);
void *carmad_pathcheck_owner(const struct carmad_pathcheck_item *it);
/* Its verdict: 0 with *v, or a negative errno with err (the user's rights could not be
 * taken on). */
int carmad_pathcheck_result(const struct carmad_pathcheck_item *it, enum carmad_path_verdict *v,
                            struct carma_err *err);
void carmad_pathcheck_free(struct carmad_pathcheck_item *it);
/* Gives up on a check not taken yet: freed now if finished, else by its thread when it
 * ends (counted as stuck until then). */
void carmad_pathcheck_abandon(struct carmad_pathcheck *pc, struct carmad_pathcheck_item *it);
/* Abandoned checks whose threads still wait: all of them, and those of uid. */
unsigned carmad_pathcheck_stuck(struct carmad_pathcheck *pc, uid_t uid, unsigned *of_uid);
/* Abandons every check not taken (the caller keeps no item of pc past this) and frees pc
 * once the last thread has ended (at once when none runs). */
void carmad_pathcheck_stop(struct carmad_pathcheck *pc);

#endif
