#include "daemon/notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/csv.h"

int carmad_notify_parse(struct carmad_notify *n, const char *value, struct carma_err *err)
{
    memset(n, 0, sizeof *n);
    if (!value || !*value)
        return 0;
    size_t l = strlen(value);
    if (value[0] != '/' && value[0] != '@')
        return carma_err_set(err, -EINVAL,
                             "NOTIFY_SOCKET=%.64s: not an absolute path or an abstract "
                             "socket (@name): the service manager is not told of carmad's "
                             "start and stop",
                             value);
    if (l >= sizeof n->sa.sun_path || l < 2)
        return carma_err_set(err, -EINVAL,
                             "NOTIFY_SOCKET=%.64s: %s: the service manager is not told of "
                             "carmad's start and stop",
                             value, l < 2 ? "no name" : "too long for a socket address");
    n->sa.sun_family = AF_UNIX;
    memcpy(n->sa.sun_path, value, l);
    /* abstract: a leading NUL, and the name's length without a terminator */
    if (value[0] == '@')
        n->sa.sun_path[0] = '\0';
    n->len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + l + (value[0] == '/'));
    return 0;
}

/* A decimal integer from 1 to max, the whole of s: its value, else 0. */
static uint64_t positive(const char *s, uint64_t max)
{
    uint64_t v;
    return carma_parse_u64(s, &v) == 0 && v >= 1 && v <= max ? v : 0;
}

int carmad_notify_watchdog(const char *usec, const char *pid, pid_t self, uint64_t *us,
                           struct carma_err *err)
{
    *us = 0;
    if (!usec || !*usec)
        return 0;
    uint64_t v = positive(usec, (uint64_t)1 << 62);
    if (!v)
        return carma_err_set(err, -EINVAL,
                             "WATCHDOG_USEC=%.32s: not a number of microseconds: no watchdog "
                             "pings",
                             usec);
    if (pid && *pid) {
        uint64_t p = positive(pid, (uint64_t)1 << 22);
        if (!p)
            return carma_err_set(err, -EINVAL,
                                 "WATCHDOG_PID=%.32s: not a process id: no watchdog pings", pid);
        if (p != (uint64_t)self)
            return 0; /* asked of another process (carmad's starter) */
    }
    *us = v;
    return 0;
}

int carmad_notify_send(const struct carmad_notify *n, const char *msg, struct carma_err *err)
{
    if (!n->len)
        return 0;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return carma_err_set(err, -errno, "NOTIFY_SOCKET: socket: %s", strerror(errno));
    ssize_t w;
    /* never waits: called from the event loop (the watchdog's pings), where a manager that
     * stopped reading its socket would otherwise stop carmad with it */
    do
        w = sendto(fd, msg, strlen(msg), MSG_NOSIGNAL | MSG_DONTWAIT,
                   (const struct sockaddr *)&n->sa, n->len);
    while (w < 0 && errno == EINTR);
    int e = errno;
    close(fd);
    if (w < 0)
        return carma_err_set(err, -e, "NOTIFY_SOCKET: cannot tell the service manager %s: %s",
                             msg, strerror(e));
    return 0;
}

int carmad_journal_stream(const char *value, int fd)
{
    if (!value || !*value)
        return 0;
    unsigned long long dev, ino;
    int end = 0;
    if (value[0] < '0' || value[0] > '9' || sscanf(value, "%llu:%llu%n", &dev, &ino, &end) != 2 ||
        value[end] != '\0')
        return 0;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return 0;
    return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void carmad_journal_write(FILE *f, int prio, const char *prefix, const char *msg)
{
    do {
        const char *nl = strchr(msg, '\n');
        int len = nl ? (int)(nl - msg) : (int)strlen(msg);
        fprintf(f, "<%d>%s%.*s\n", prio & 7, prefix, len, msg);
        msg = nl ? nl + 1 : msg + len;
    } while (*msg);
}
