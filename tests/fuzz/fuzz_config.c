/* Fuzz target: carmad's INI file (--config). Every refusal names the file and says why;
 * an accepted file leaves every setting in its documented range. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz_config", 0);
    if (fd < 0)
        return 0;
    if (write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    static struct carmad_config c;
    carmad_config_default(&c);
    struct carma_err err = {{0}};
    int rc = carmad_config_load(&c, path, &err);
    close(fd);
    if (rc < 0) {
        if (strncmp(err.msg, path, strlen(path)) != 0 || !err.msg[strlen(path)])
            __builtin_trap();
        return 0;
    }
    if (!(c.monitor_interval_s > 0) || c.window < 1 || c.window > 120 ||
        c.nsharing > CARMAD_SHARING_MAX || c.record_max_mib < 1 ||
        !memchr(c.policy, 0, sizeof c.policy) || !memchr(c.gpus, 0, sizeof c.gpus) ||
        !memchr(c.http, 0, sizeof c.http) || !memchr(c.socket_group, 0, sizeof c.socket_group))
        __builtin_trap();
    for (unsigned i = 0; i < c.nsharing; i++)
        if (!memchr(c.sharing[i].gpu, 0, sizeof c.sharing[i].gpu))
            __builtin_trap();
    return 0;
}
