/* Fuzz target: the muri trace loader (and format detection on the same bytes). */
#include <stddef.h>
#include <stdint.h>

#include "trace_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    struct carma_err err;
    struct sim_trace t;
    struct sim_trace_opts o = {.gpu_mem_mib = 40960};
    int rc = sim_trace_parse("fuzz", buf, size, SIM_TRACE_MURI, &o, &t, &err);
    fuzz_trace_check(rc, &t, &err, "fuzz");
    rc = sim_trace_parse("fuzz", buf, size, SIM_TRACE_AUTO, NULL, &t, &err);
    fuzz_trace_check(rc, &t, &err, "fuzz");
    return 0;
}
