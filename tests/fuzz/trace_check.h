/* Shared by the trace fuzz targets: invariants every loaded trace must hold, and the
 * rule that every error names the input. Header-only (static functions). */
#ifndef CARMA_FUZZ_TRACE_CHECK_H
#define CARMA_FUZZ_TRACE_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sim/trace.h"

static void fuzz_trace_check(int rc, struct sim_trace *t, const struct carma_err *err,
                             const char *file)
{
    if (rc) {
        if (strncmp(err->msg, file, strlen(file)) != 0 && !strstr(err->msg, "out of memory"))
            __builtin_trap(); /* every error names the file */
        return;
    }
    if (t->njobs > SIM_TRACE_MAX_JOBS || (t->njobs && !t->jobs))
        __builtin_trap();
    for (size_t i = 0; i < t->njobs; i++) {
        const struct sim_job_spec *j = &t->jobs[i];
        if (!(j->submit_s >= 0) || !(j->duration_s > 0) || j->gpus < 1 ||
            j->gpus > SIM_JOB_MAX_GPUS || !(j->mem_mib > 0) || j->workload >= t->nworkloads ||
            !(j->smact >= 0 && j->smact <= 1) || !(j->ramp_s >= 0))
            __builtin_trap();
        if (i && j->submit_s < t->jobs[i - 1].submit_s)
            __builtin_trap(); /* arrival order */
    }
    for (size_t i = 0; i < t->nworkloads; i++)
        if (!memchr(t->workloads[i].name, '\0', SIM_NAME_MAX))
            __builtin_trap();
    sim_trace_free(t);
}

/* The body of a target for one self-contained format: load with that format, then
 * with detection, and check both. */
static inline int fuzz_trace_format(enum sim_trace_format fmt, const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    struct carma_err err;
    struct sim_trace t;
    struct sim_trace_opts o = {.gpu_mem_mib = 40960};
    int rc = sim_trace_parse("fuzz", buf, size, fmt, &o, &t, &err);
    fuzz_trace_check(rc, &t, &err, "fuzz");
    rc = sim_trace_parse("fuzz", buf, size, SIM_TRACE_AUTO, NULL, &t, &err);
    fuzz_trace_check(rc, &t, &err, "fuzz");
    return 0;
}

#endif
