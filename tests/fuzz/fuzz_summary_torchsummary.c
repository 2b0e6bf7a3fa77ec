/* Fuzz target: the torchsummary model-summary parser (estimate/parse.h), then the estimate
 * over whatever it accepted (tests/fuzz/summary_check.h). */
#include "summary_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return summary_check(est_parse_torchsummary, data, size);
}
