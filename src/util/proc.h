/* Reading /proc/PID, for the few facts carma takes from it. */
#ifndef CARMA_UTIL_PROC_H
#define CARMA_UTIL_PROC_H

#include <stddef.h>
#include <sys/types.h>

/* /proc/PID/NAME opened to read (O_CLOEXEC), or -1. */
int carma_proc_open(pid_t pid, const char *name);

/* /proc/PID/NAME's first cap - 1 bytes into buf, NUL-terminated: 0, or -1. */
int carma_proc_read(pid_t pid, const char *name, char *buf, size_t cap);

/* A uid of a process from /proc/PID/status's Uid line: field 0 the real uid, 1 the
 * effective one. -1 when it cannot be read. */
long long carma_proc_uid(pid_t pid, int field);

#endif
