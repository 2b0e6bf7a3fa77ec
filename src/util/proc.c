#include "util/proc.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int carma_proc_open(pid_t pid, const char *name)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
    return open(path, O_RDONLY | O_CLOEXEC);
}

int carma_proc_read(pid_t pid, const char *name, char *buf, size_t cap)
{
    int fd = carma_proc_open(pid, name);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    return 0;
}

long long carma_proc_uid(pid_t pid, int field)
{
    char buf[4096];
    if (carma_proc_read(pid, "status", buf, sizeof buf))
        return -1;
    const char *u = strstr(buf, "\nUid:");
    unsigned long long v[2];
    return u && field >= 0 && field < 2 && sscanf(u + 5, "%llu %llu", &v[0], &v[1]) == 2
               ? (long long)v[field]
               : -1;
}
