/* Fuzz target: a coefficient table (`carma estimate --coefficients FILE`). Every refusal
 * says why; an accepted table writes back out and reads back in to the same table. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "estimate/estimate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct est_coef c, back;
    struct carma_err err = {{0}};
    if (est_coef_parse((const char *)data, size, "fuzz.csv", &c, &err) < 0) {
        if (!err.msg[0])
            __builtin_trap();
        return 0;
    }
    static char out[16384];
    int n = est_coef_write(&c, out, sizeof out);
    if (n <= 0 || est_coef_parse(out, (size_t)n, "back.csv", &back, &err) < 0)
        __builtin_trap();
    if (est_coef_write(&back, out + 8192, 8192) != n || memcmp(out, out + 8192, (size_t)n) != 0)
        __builtin_trap();
    return 0;
}
