/* Fuzz target: the time arguments of `carma usage/report --since/--until`. Every
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
