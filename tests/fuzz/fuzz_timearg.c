/* Fuzz target: the time arguments of `carma usage/report --since/--until` and the lengths
 * of `carma submit --time-limit` (each accepted one formats back to itself). Every
 * refusal says why; every accepted time is finite, after 1970 and before 10000. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "util/timearg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char s[CARMA_TIMEARG_MAX + 8];
    if (size >= sizeof s)
        size = sizeof s - 1;
    memcpy(s, data, size);
    s[size] = 0;
    uint64_t secs = 0;
    struct carma_err derr = {{0}};
    if (carma_duration_parse(s, 1, 365u * 86400u, &secs, &derr)) {
        if (!derr.msg[0])
            __builtin_trap();
    } else {
        char back[32];
        uint64_t again = 0;
        if (secs < 1 || secs > 365u * 86400u)
            __builtin_trap();
        carma_duration_format(back, sizeof back, secs); /* read back as the same length */
        if (carma_duration_parse(back, 1, 365u * 86400u, &again, &derr) || again != secs)
            __builtin_trap();
    }
    double t = -1;
    struct carma_err err = {{0}};
    if (carma_time_parse(s, 1.7e9, &t, &err)) {
        if (!err.msg[0])
            __builtin_trap();
        return 0;
    }
    if (!isfinite(t) || t < 0 || t > 253402300799.0 + 86400)
        __builtin_trap();
    return 0;
}
