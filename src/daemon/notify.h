/* The service manager's readiness protocol (systemd's sd_notify, Type=notify): carmad
 * says READY=1 once its socket listens and the store is reconciled, STOPPING=1 when it
 * begins a clean stop, and WATCHDOG=1 while its loop runs when asked. NOTIFY_SOCKET names an
 * AF_UNIX datagram socket: an absolute path, or "@name" for the abstract namespace. No libsystemd:
 * the protocol is one datagram. Without NOTIFY_SOCKET every call does nothing. */
#ifndef CARMA_DAEMON_NOTIFY_H
#define CARMA_DAEMON_NOTIFY_H

#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include "util/err.h"

struct carmad_notify {
    struct sockaddr_un sa;
    socklen_t len; /* 0: no service manager to tell */
};

/* Parses the value of NOTIFY_SOCKET (NULL or "": none, *n->len 0). An absolute path or
 * "@name" (abstract) that fits sun_path; anything else ("vsock:...", a relative path, a
 * path too long) is -EINVAL with err naming the value. */
int carmad_notify_parse(struct carmad_notify *n, const char *value, struct carma_err *err);

/* The watchdog systemd asks for (WatchdogSec=): WATCHDOG_USEC's value, usec (NULL or "":
 * none), and WATCHDOG_PID's, pid (NULL or "": this process), self this process's pid.
 * *us is the interval in microseconds, 0 when no watchdog is asked of this process (none,
 * or one for another pid). A value that is not a decimal integer (WATCHDOG_USEC from 1 to
 * 2^62, WATCHDOG_PID from 1 to 2^22) is -EINVAL with err naming it, *us 0. */
int carmad_notify_watchdog(const char *usec, const char *pid, pid_t self, uint64_t *us,
                           struct carma_err *err);

/* Sends msg ("READY=1") as one datagram, without waiting: 0, or -errno (err says so;
 * -EAGAIN when the manager's socket is full: the message is not sent). Nothing when n
 * has no socket. */
int carmad_notify_send(const struct carmad_notify *n, const char *msg, struct carma_err *err);

/* Whether descriptor fd is the stream JOURNAL_STREAM names (its value, NULL: none):
 * systemd sets it to "DEVICE:INODE" of the stream it gives a service's stdout and stderr,
 * so that a program whose stderr is that stream (not redirected since) may put "<N>",
 * the syslog priority, before each line for the journal to read. 1 or 0 (no value, a
 * value that does not parse, another file). */
int carmad_journal_stream(const char *value, int fd);

/* Writes msg to f (the journal's stream) at syslog priority prio: each of its lines as
 * "<prio>" prefix and the line, so that a message of several lines (or one that quotes
 * a user's text with a newline in it) reaches the journal whole at its priority, and no
 * line of it can pass for another priority's. A final newline adds no empty line. */
void carmad_journal_write(FILE *f, int prio, const char *prefix, const char *msg);

#endif
