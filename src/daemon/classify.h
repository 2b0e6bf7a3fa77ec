/* How an attempt ended, from its exit status and the tail of its stderr
 * (DESIGN.md §6). Pure functions, no I/O except carma_classify_read_tail. */
#ifndef CARMA_DAEMON_CLASSIFY_H
#define CARMA_DAEMON_CLASSIFY_H

#include <stddef.h>
#include <stdint.h>

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

/* What a critical Xid (NVML event) means for carma, after NVIDIA's Xid catalog:
 *   RESET  the GPU needs a reset (double-bit or uncontained ECC, fallen off the bus,
 *          GSP or micro-controller errors, NVLink): drained; a job that fails on it
 *          is retried elsewhere (outcome gpu_error)
 *   FAULT  the hardware killed a job and the GPU goes on (contained ECC error): the
 *          failed job is retried
 *   APP    an error of the application itself (illegal address, engine exception):
 *          its failure stays its own, the Xid named in its reason
 *   OTHER  informational or unknown (row remap pending, 999): logged and counted */
enum carma_xid_kind { CARMA_XID_OTHER, CARMA_XID_APP, CARMA_XID_FAULT, CARMA_XID_RESET };

/* The kind of Xid `xid`; *what (may be NULL) gets a short static name ("double-bit
 * ECC error"; "unknown Xid" when the table has none). */
enum carma_xid_kind carma_xid_kind(uint64_t xid, const char **what);

/* Reads at most cap bytes from the end of file `path` into buf; returns the count
 * or a negative errno. Never blocks on a lease another process holds on the file: then
 * -EWOULDBLOCK at once. */
long carma_classify_read_tail(const char *path, char *buf, size_t cap);

#endif
