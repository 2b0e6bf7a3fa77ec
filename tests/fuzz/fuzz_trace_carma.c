/* Fuzz target: the workload catalog parser and the carma CSV trace loader (against a
 * fixed catalog and against the catalog the input itself parses to). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "trace_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char cat_text[] =
        "name,model,batch,gpus,mem_mib,total_min,smact,smocc,drama,ramp_s\n"
        "a,m,32,1,1000,10,0.5,0.2,0.2,30\nb,m,64,2,20000,1.5,0.9,0.36,0.36,30\n";
    const char *buf = (const char *)data;
    struct carma_err err;
    struct sim_workload *cat = NULL, *own = NULL;
    size_t ncat = 0, nown = 0;
    if (sim_catalog_parse("fuzz", cat_text, sizeof cat_text - 1, &cat, &ncat, &err))
        __builtin_trap();
    int rc = sim_catalog_parse("fuzz", buf, size, &own, &nown, &err);
    if (rc == 0) {
        for (size_t i = 0; i < nown; i++)
            if (own[i].gpus < 1 || own[i].gpus > SIM_JOB_MAX_GPUS || !(own[i].mem_mib > 0) ||
                !(own[i].duration_s > 0))
                __builtin_trap();
    } else if (strncmp(err.msg, "fuzz", 4) != 0) {
        __builtin_trap();
    }
    struct sim_trace t;
    struct sim_trace_opts o = {.catalog = cat, .ncatalog = ncat};
    rc = sim_trace_parse("fuzz", buf, size, SIM_TRACE_CARMA_CSV, &o, &t, &err);
    fuzz_trace_check(rc, &t, &err, "fuzz");
    if (nown) {
        o.catalog = own;
        o.ncatalog = nown;
        rc = sim_trace_parse("fuzz", buf, size, SIM_TRACE_CARMA_CSV, &o, &t, &err);
        fuzz_trace_check(rc, &t, &err, "fuzz");
    }
    (void)sim_trace_detect("fuzz", buf, size);
    free(cat);
    free(own);
    return 0;
}
