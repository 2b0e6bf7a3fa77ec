/* Fuzz target: the cleaning of untrusted vendor-library answers (src/gpu/answer.h)
 * that the NVML and DCGM backends apply before anything else sees them: strings
 * without a NUL or with control bytes, process record arrays with absurd counts,
 * impossible pids and duplicates, memory figures that do not add up, ratios out of
 * range. Input: byte 0 picks the record stride (16 or 24 B) and byte 1 the output
 * capacity; bytes 2-5 are the count the "library" claims; the rest is the raw
 * record buffer, and also serves as the string and the numbers. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gpu/answer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_str(const uint8_t *data, size_t size, size_t cap)
{
    char dst[130];
    memset(dst, 'Z', sizeof dst);
    size_t n = carma_gpu_answer_str(dst, cap, (const char *)data, size);
    if (n >= cap || dst[n] != '\0' || dst[cap] != 'Z' || strlen(dst) != n)
        __builtin_trap();
    for (size_t i = 0; i < n; i++)
        if (dst[i] < 0x20 || dst[i] >= 0x7f)
            __builtin_trap();
    if (n && (dst[0] == ' ' || dst[0] == '\t' || dst[n - 1] == ' ' || dst[n - 1] == '\t'))
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 6)
        return 0;
    size_t stride = (data[0] & 1) ? 24 : 16;
    size_t cap = data[1] % (CARMA_GPU_MAX_PROCS + 8);
    uint32_t claimed;
    memcpy(&claimed, data + 2, 4);
    const uint8_t *raw = data + 6;
    size_t rawlen = size - 6;

    /* Strings: every capacity from 1 to 129 is safe. */
    check_str(raw, rawlen, 1 + data[1] % 129);
    check_str(raw, rawlen, 96);

    /* Process records: copied to an exact-size heap buffer so ASan sees overreads. */
    static struct carma_gpu_proc out[CARMA_GPU_MAX_PROCS + 8];
    size_t n = cap;
    int rc = carma_gpu_answer_procs(raw, stride, claimed, rawlen / stride, out, &n);
    if ((rc != 0 && rc != -EOVERFLOW) || n > cap)
        __builtin_trap();
    for (size_t i = 0; i < n; i++) {
        if (out[i].pid <= 0 || out[i].pid > CARMA_GPU_PID_MAX)
            __builtin_trap();
        for (size_t j = 0; j < i; j++)
            if (out[j].pid == out[i].pid)
                __builtin_trap();
    }

    /* Memory figures and ratios from the raw bytes. */
    if (rawlen >= 24) {
        uint64_t t, u, f, used, fr;
        memcpy(&t, raw, 8);
        memcpy(&u, raw + 8, 8);
        memcpy(&f, raw + 16, 8);
        if (carma_gpu_answer_mem(t, u, f, &used, &fr) == 0) {
            if (used > t || fr > t - used)
                __builtin_trap();
        } else if (t != 0) {
            __builtin_trap();
        }
        double d;
        memcpy(&d, raw, 8);
        double r1 = carma_gpu_answer_pct(d), r2 = carma_gpu_answer_ratio(d);
        double r3 = carma_gpu_answer_power_mw(t);
        if (!(r1 == -1 || (r1 >= 0 && r1 <= 1)) || !(r2 == -1 || (r2 >= 0 && r2 <= 1)) ||
            !(r3 == -1 || (r3 >= 0 && r3 <= 5000)))
            __builtin_trap();
    }
    return 0;
}
