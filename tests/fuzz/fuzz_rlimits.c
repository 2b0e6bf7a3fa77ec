/* Fuzz target: the resource limits text a root carmad stores with a job and hands to its
 * shepherd (util/rlimits.h). Every refusal says why; whatever is accepted holds soft <=
 * hard and is written back as the same text. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "util/rlimits.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char s[CARMA_RLIMITS_MAX + 8];
    if (size >= sizeof s)
        size = sizeof s - 1;
    memcpy(s, data, size);
    s[size] = 0;
    struct rlimit rl[CARMA_RLIMITS_N];
    struct carma_err err = {{0}};
    if (carma_rlimits_parse(s, rl, &err)) {
        if (!err.msg[0])
            __builtin_trap();
        return 0;
    }
    char back[CARMA_RLIMITS_MAX];
    carma_rlimits_format(rl, back, sizeof back);
    for (int r = 0; r < CARMA_RLIMITS_N; r++)
        if (rl[r].rlim_cur > rl[r].rlim_max)
            __builtin_trap();
    if (strcmp(back, s) != 0) /* one text for one set of limits */
        __builtin_trap();
    return 0;
}
