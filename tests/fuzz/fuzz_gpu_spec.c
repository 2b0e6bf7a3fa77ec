/* Fuzz target: a GPU list (`carma sim --gpus`, carmad's `gpus = sim:...`). Every refusal
 * says why; an accepted list names between 1 and cap known kinds. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sim/gpukind.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    enum { CAP = 1024 };
    char s[512];
    if (size >= sizeof s)
        size = sizeof s - 1;
    memcpy(s, data, size);
    s[size] = 0;
    static const struct sim_gpu_kind *kinds[CAP];
    static uint16_t island[CAP];
    size_t n = 0;
    struct carma_err err = {{0}};
    if (sim_gpu_spec_parse(s, kinds, island, CAP, &n, &err) < 0) {
        if (!err.msg[0])
            __builtin_trap();
        return 0;
    }
    if (n < 1 || n > CAP)
        __builtin_trap();
    for (size_t i = 0; i < n; i++)
        if (!kinds[i] || !kinds[i]->name)
            __builtin_trap();
    /* islands start at 0 and go up by one at a time, in GPU order */
    if (island[0] != 0)
        __builtin_trap();
    for (size_t i = 1; i < n; i++)
        if (island[i] != island[i - 1] && island[i] != island[i - 1] + 1)
            __builtin_trap();
    return 0;
}
