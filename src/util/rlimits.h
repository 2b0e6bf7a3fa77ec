/* Resource limits (setrlimit) as one line of text, and those of another process: a root
 * carmad runs a job with the limits of the process that submitted it (docs/daemon.md,
 * Security), which it stores with the job and hands to the job's shepherd.
 *
 * The text: CARMA_RLIMITS_N entries "SOFT:HARD" joined by ',', in the order of the
 * resource numbers (RLIMIT_CPU = 0 ...), each value a decimal or '-' for RLIM_INFINITY. */
#ifndef CARMA_UTIL_RLIMITS_H
#define CARMA_UTIL_RLIMITS_H

#include <sys/resource.h>
#include <sys/types.h>

#include "util/err.h"

enum { CARMA_RLIMITS_N = RLIM_NLIMITS };
enum { CARMA_RLIMITS_MAX = 1024 }; /* the text, its NUL included, is shorter */

/* Writes rl[0 .. CARMA_RLIMITS_N - 1] as text into buf (at least CARMA_RLIMITS_MAX). */
void carma_rlimits_format(const struct rlimit *rl, char *buf, size_t cap);

/* Parses text written by carma_rlimits_format, strictly: exactly CARMA_RLIMITS_N entries,
 * each soft at most its hard. 0 with rl filled, or -EINVAL with err set. */
int carma_rlimits_parse(const char *s, struct rlimit *rl, struct carma_err *err);

/* The limits of process pid (/proc/PID/limits), accepted only while pid is still a
 * process whose effective uid is uid once they were read (a pid handed to another user's
 * process in between fails). 0, or a negative errno with err set. */
int carma_rlimits_of_pid(pid_t pid, uid_t uid, struct rlimit *rl, struct carma_err *err);

#endif
