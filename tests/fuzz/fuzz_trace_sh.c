/* Fuzz target: CARMA's .sh trace parser (its .rad folder does not exist, so submit
 * lines end in a clean error) and the .rad task description parser. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "trace_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char cat_text[] =
        "name,model,batch,gpus,mem_mib,total_min,smact,smocc,drama,ramp_s\n"
        "a,m,32,1,1000,10,0.5,0.2,0.2,30\n";
    const char *buf = (const char *)data;
    struct carma_err err;
    struct sim_workload *cat = NULL;
    size_t ncat = 0;
    if (sim_catalog_parse("fuzz", cat_text, sizeof cat_text - 1, &cat, &ncat, &err))
        __builtin_trap();
    struct sim_trace t;
    struct sim_trace_opts o = {.catalog = cat, .ncatalog = ncat,
                               .aux_dir = "/nonexistent/carma-fuzz"};
    int rc = sim_trace_parse("fuzz", buf, size, SIM_TRACE_CARMA_SH, &o, &t, &err);
    fuzz_trace_check(rc, &t, &err, "fuzz");
    struct sim_workload w;
    rc = sim_rad_parse("fuzz", "a", buf, size, &w, &err);
    if (rc == 0 && (w.gpus < 1 || w.gpus > SIM_JOB_MAX_GPUS || !(w.mem_mib > 0)))
        __builtin_trap();
    if (rc && strncmp(err.msg, "fuzz", 4) != 0)
        __builtin_trap();
    free(cat);
    return 0;
}
