/* The service manager's readiness protocol (systemd's sd_notify, Type=notify): carmad
 * says READY=1 once its socket listens and the store is reconciled, STOPPING=1 when it
 * begins a clean stop. NOTIFY_SOCKET names an AF_UNIX datagram socket: an absolute path,
 * or "@name" for the abstract namespace. No libsystemd: the protocol is one datagram.
 * Without NOTIFY_SOCKET every call does nothing. */
#ifndef CARMA_DAEMON_NOTIFY_H
#define CARMA_DAEMON_NOTIFY_H

#include <sys/socket.h>
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

/* Sends msg ("READY=1") as one datagram; 0, or -errno (err says so). Nothing when n has
 * no socket. */
int carmad_notify_send(const struct carmad_notify *n, const char *msg, struct carma_err *err);

#endif
