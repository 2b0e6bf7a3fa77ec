/* Fuzz target: the torchinfo model-summary parser (estimate/parse.h), then the estimate
 * over whatever it accepted. Every error must name the file; every accepted model
 * must give a finite estimate with bound >= estimate. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "estimate/estimate.h"
#include "estimate/parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct est_layer layers[EST_MAX_LAYERS];
    struct est_model m;
    struct carma_err err;
    est_model_init(&m, layers, EST_MAX_LAYERS);
    int rc = est_parse_torchinfo((const char *)data, size, "fuzz", &m, &err);
    if (rc < 0) {
        if (strncmp(err.msg, "fuzz", 4) != 0)
            __builtin_trap();
        return 0;
    }
    if (m.n > EST_MAX_LAYERS)
        __builtin_trap();
    struct est_opts o = {.batch = 64, .seq = 512, .optimizer = EST_OPT_ADAMW};
    struct est_result r;
    if (est_compute(&m, est_coef_default(), &o, &r, &err) == 0 &&
        (!isfinite(r.estimate_mib) || !(r.bound_mib >= r.estimate_mib)))
        __builtin_trap();
    /* auto-detection must not crash either */
    est_model_init(&m, layers, EST_MAX_LAYERS);
    (void)est_parse((const char *)data, size, "fuzz", &m, &err);
    return 0;
}
