/* Fuzz target: the gavel trace loader (and format detection on the same bytes). */
#include "trace_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_trace_format(SIM_TRACE_GAVEL, data, size);
}
