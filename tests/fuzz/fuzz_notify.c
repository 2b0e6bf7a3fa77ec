/* Fuzz target: NOTIFY_SOCKET's value as carmad reads it (daemon/notify.h). A value taken
 * is an absolute path or an abstract name that fits the socket address with room for
 * its terminator, its length says so, and a value refused leaves no address. The same
 * bytes as the watchdog's interval and pid: taken only when all digits, in range. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "daemon/notify.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char v[512];
    size_t n = size < sizeof v - 1 ? size : sizeof v - 1;
    memcpy(v, data, n);
    v[n] = '\0';
    struct carmad_notify a;
    struct carma_err err = {{0}};
    int r = carmad_notify_parse(&a, v, &err);
    size_t l = strlen(v);
    size_t base = offsetof(struct sockaddr_un, sun_path);
    if (r == 0) {
        if (l == 0 ? a.len != 0
                   : (a.sa.sun_family != AF_UNIX || l >= sizeof a.sa.sun_path ||
                      (v[0] != '/' && v[0] != '@') ||
                      a.len != base + l + (v[0] == '/') ||
                      memcmp(a.sa.sun_path + 1, v + 1, l - 1)))
            __builtin_trap();
    } else if (a.len != 0 || !err.msg[0]) {
        __builtin_trap();
    }
    /* the same bytes as WATCHDOG_USEC, and as WATCHDOG_PID beside a valid interval */
    uint64_t us = 1;
    r = carmad_notify_watchdog(v, NULL, 1, &us, &err);
    if ((r == 0) !=
            (l == 0 || (us >= 1 && us <= (uint64_t)1 << 62 && strspn(v, "0123456789") == l)) ||
        (r != 0 && us != 0))
        __builtin_trap();
    r = carmad_notify_watchdog("1000", v, 4242, &us, &err);
    if (r == 0 && us != 0 && us != 1000)
        __builtin_trap();
    return 0;
}
