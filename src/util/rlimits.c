#include "util/rlimits.h"
#include "util/csv.h"
#include "util/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

_Static_assert(CARMA_RLIMITS_N *(2 * 20 + 2) < CARMA_RLIMITS_MAX, "the text fits");

static size_t put_value(char *buf, size_t cap, size_t off, rlim_t v)
{
    if (off >= cap)
        return off;
    int n = v == RLIM_INFINITY ? snprintf(buf + off, cap - off, "-")
                               : snprintf(buf + off, cap - off, "%llu", (unsigned long long)v);
    return n > 0 ? off + (size_t)n : off;
}

void carma_rlimits_format(const struct rlimit *rl, char *buf, size_t cap)
{
    size_t off = 0;
    if (cap)
        buf[0] = 0;
    for (int r = 0; r < CARMA_RLIMITS_N; r++) {
        if (r && off < cap)
            off += (size_t)snprintf(buf + off, cap - off, ",");
        off = put_value(buf, cap, off, rl[r].rlim_cur);
        if (off < cap)
            off += (size_t)snprintf(buf + off, cap - off, ":");
        off = put_value(buf, cap, off, rl[r].rlim_max);
    }
}

/* One value of [s, e): '-' or a decimal below RLIM_INFINITY, without leading zeros. */
static int parse_value(const char *s, const char *e, rlim_t *out)
{
    char tmp[24];
    size_t n = (size_t)(e - s);
    if (n == 1 && s[0] == '-') {
        *out = RLIM_INFINITY;
        return 0;
    }
    uint64_t v;
    if (n == 0 || n >= sizeof tmp || (n > 1 && s[0] == '0')) /* one text for one value */
        return -1;
    memcpy(tmp, s, n);
    tmp[n] = 0;
    if (carma_parse_u64(tmp, &v) || v >= (uint64_t)RLIM_INFINITY)
        return -1;
    *out = (rlim_t)v;
    return 0;
}

int carma_rlimits_parse(const char *s, struct rlimit *rl, struct carma_err *err)
{
    const char *p = s;
    for (int r = 0; r < CARMA_RLIMITS_N; r++) {
        const char *colon = strchr(p, ':');
        const char *end = colon ? colon + 1 + strcspn(colon + 1, ",") : NULL;
        if (!colon || memchr(p, ',', (size_t)(colon - p)) ||
            parse_value(p, colon, &rl[r].rlim_cur) || parse_value(colon + 1, end, &rl[r].rlim_max))
            return carma_err_set(err, -EINVAL, "resource limits: entry %d is not SOFT:HARD", r);
        if (rl[r].rlim_cur > rl[r].rlim_max)
            return carma_err_set(err, -EINVAL, "resource limits: entry %d: soft above hard", r);
        if (r < CARMA_RLIMITS_N - 1 && *end != ',')
            return carma_err_set(err, -EINVAL, "resource limits: %d entries, %d expected", r + 1,
                                 CARMA_RLIMITS_N);
        if (r == CARMA_RLIMITS_N - 1 && *end)
            return carma_err_set(err, -EINVAL, "resource limits: more than %d entries",
                                 CARMA_RLIMITS_N);
        p = end + 1;
    }
    return 0;
}

/* One value of /proc/PID/limits: "unlimited" or a decimal. */
static int limits_value(const char *t, rlim_t *out)
{
    uint64_t v;
    if (strcmp(t, "unlimited") == 0) {
        *out = RLIM_INFINITY;
        return 0;
    }
    if (carma_parse_u64(t, &v) || v >= (uint64_t)RLIM_INFINITY)
        return -1;
    *out = (rlim_t)v;
    return 0;
}

int carma_rlimits_of_pid(pid_t pid, uid_t uid, struct rlimit *rl, struct carma_err *err)
{
    if (pid <= 0)
        return carma_err_set(err, -ESRCH, "the submitting process is not visible to carmad");
    /* /proc/PID/limits, which anyone may read (prlimit on another user's process needs
     * CAP_SYS_RESOURCE, which a root in a container may lack): a header line, then one
     * line per resource in the order of their numbers, each "NAME SOFT HARD [UNITS]" with
     * NAME padded to 25 columns */
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/limits", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return carma_err_set(err, -errno, "%s: %s", path, strerror(errno));
    size_t len = 0;
    ssize_t n;
    while (len < sizeof buf - 1 && (n = read(fd, buf + len, sizeof buf - 1 - len)) > 0)
        len += (size_t)n;
    close(fd);
    buf[len] = 0;
    char *line = strchr(buf, '\n');
    for (int r = 0; r < CARMA_RLIMITS_N; r++) {
        char soft[32], hard[32];
        char *next = line ? strchr(line + 1, '\n') : NULL;
        if (!next || next - line < 27 || sscanf(line + 27, "%31s %31s", soft, hard) != 2 ||
            limits_value(soft, &rl[r].rlim_cur) || limits_value(hard, &rl[r].rlim_max))
            return carma_err_set(err, -EINVAL, "%s: line %d is not as expected", path, r + 2);
        line = next;
    }
    /* read while pid was the peer's, or a process of the same user since */
    if (carma_proc_uid(pid, 1) != (long long)uid)
        return carma_err_set(err, -ESRCH, "the submitting process (pid %d) ended", (int)pid);
    return 0;
}
