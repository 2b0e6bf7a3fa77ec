/* How an attempt ended, from its exit status and the tail of its stderr
 * (DESIGN.md §6). Pure functions, no I/O except carma_classify_read_tail. */
#ifndef CARMA_DAEMON_CLASSIFY_H
#define CARMA_DAEMON_CLASSIFY_H

#include <stddef.h>

#include "core/job.h"

#define CARMA_CLASSIFY_TAIL 16384 /* bytes of stderr looked at */

/* The end of one attempt as the shepherd recorded it. */
struct carma_exit {
    int exited;    /* 1: exit(code); 0: killed by signal */
    int code;      /* exit code when exited */
    int signal;    /* signal number when killed */
    int cancelled; /* the job was cancelled (by request) */
};

/* Returns the OOM message found in text[0..len) (a static description such as
 * "PyTorch CUDA out of memory"), or NULL. text need not be NUL-terminated. */
const char *carma_classify_oom_text(const char *text, size_t len);

/* succeeded | failed | oom | cancelled. A non-zero exit or a signal whose stderr
 * tail shows an OOM message is OOM; a requested cancel wins over everything but
 * success. *why (may be NULL) is set to a short static reason. */
enum carma_outcome carma_classify(const struct carma_exit *x, const char *tail, size_t len,
                                  const char **why);

/* Reads at most cap bytes from the end of file `path` into buf; returns the count
 * or a negative errno. Never blocks on a lease another process holds on the file: then
 * -EWOULDBLOCK at once. */
long carma_classify_read_tail(const char *path, char *buf, size_t cap);

#endif
