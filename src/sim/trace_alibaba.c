/* Alibaba GPU-sharing cluster trace v2023 (openb_pod_list_*.csv). This one format is
 * defined as unordered: some pod lists are not sorted by creation_time, so the loader
 * sorts pods by creation_time (ties: file order) and documents it. Pods asking for no
 * GPU, and pods never scheduled (no scheduled_time: no run time), are skipped and
 * counted in the trace. A pod holds gpu_milli/1000 of each of its num_gpu GPUs:
 * memory = that fraction of the GPU's memory, SMACT = that fraction (clamped to the
 * rule's range 0.05-0.90). Run time = deletion_time - scheduled_time (s). A pod's
 * gpu_spec (the GPU models it may run on) is not honoured: its jobs are counted for
 * the caller to say so. A list without any time column (the multigpu* lists) is
 * refused as one that cannot be replayed in time. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/profile.h"
#include "sim/trace_fmt.h"
#include "util/csv.h"

struct pod {
    int64_t create, run;
    size_t line;
    uint32_t milli;
    uint32_t name; /* sim_job_spec.name */
    uint16_t gpus;
};

static int pod_cmp(const void *a, const void *b)
{
    const struct pod *x = a, *y = b;
    if (x->create != y->create)
        return x->create < y->create ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

#define TIME_RANGE "not a whole number of seconds from 0 to 1e10"

/* A time field: whole seconds from 0 to SIM_TIME_MAX_S (TIME_RANGE). */
static int time_field(const char *s, int64_t *v)
{
    return carma_parse_i64(s, v) == 0 && *v >= 0 && *v <= (int64_t)SIM_TIME_MAX_S ? 0 : -EINVAL;
}

int sim_parse_alibaba(const char *file, const char *buf, size_t len,
                      const struct sim_trace_opts *o, struct sim_trace *out,
                      struct carma_err *err)
{
    static const char *const need[] = {"name",          "num_gpu",       "gpu_milli",
                                       "creation_time", "deletion_time", "scheduled_time",
                                       "gpu_spec"};
    enum { NAME, GPU, MILLI, CREATE, DELETE, SCHED, SPEC, NNEED };
    double gpu_mem = o->gpu_mem_mib > 0 ? o->gpu_mem_mib : SIM_TRACE_DEFAULT_GPU_MIB;
    if (!(gpu_mem <= SIM_MEM_MAX_MIB))
        return carma_err_at(err, file, 0, "GPU memory %s MiB: above %s MiB",
                            carma_num(gpu_mem).s, carma_num(SIM_MEM_MAX_MIB).s);
    struct carma_csv *c = malloc(sizeof *c);
    if (!c)
        return carma_err_set(err, -ENOMEM, "%s: out of memory", file);
    struct pod *pods = NULL;
    size_t npods = 0, cap = 0, nogpu = 0, unsched = 0, spec = 0;
    struct sim_build b;
    sim_build_init(&b, file);
    carma_csv_init(c, buf, len, file, ',');
    int col[NNEED];
    /* The times are required too, but a list without any (the multigpu* lists) is
     * named as such rather than by its first missing column. */
    int rc = carma_csv_header(c, need, NNEED, CREATE, col, NULL, err);
    if (rc)
        goto fail;
    if (col[CREATE] < 0 && col[DELETE] < 0 && col[SCHED] < 0) {
        rc = carma_err_at(err, file, c->line,
                          "this Alibaba pod list has no creation_time, scheduled_time or "
                          "deletion_time column (as the multigpu* lists of "
                          "cluster-trace-gpu-v2023), so it cannot be replayed in time");
        goto fail;
    }
    for (int k = CREATE; k <= SCHED; k++)
        if (col[k] < 0) {
            rc = carma_err_at(err, file, c->line, "missing column '%s'", need[k]);
            goto fail;
        }
    size_t ncols = c->nfields;
    while ((rc = carma_csv_next(c, err)) == 1) {
        size_t line = c->line;
        if ((rc = carma_csv_fields_check(c, ncols, err)))
            goto fail;
        uint64_t gpus, milli;
        if (carma_parse_u64(c->field[col[GPU]], &gpus) || gpus > SIM_JOB_MAX_GPUS) {
            rc = carma_err_at(err, file, line, "num_gpu '%s': must be 0 to %d",
                              carma_quote(c->field[col[GPU]], 40).s, SIM_JOB_MAX_GPUS);
            goto fail;
        }
        if (carma_parse_u64(c->field[col[MILLI]], &milli) || milli > 1000) {
            rc = carma_err_at(err, file, line, "gpu_milli '%s': must be 0 to 1000",
                              carma_quote(c->field[col[MILLI]], 40).s);
            goto fail;
        }
        int64_t create, del, sched;
        if (time_field(c->field[col[CREATE]], &create)) {
            rc = carma_err_at(err, file, line, "creation_time '%s': %s",
                              carma_quote(c->field[col[CREATE]], 40).s, TIME_RANGE);
            goto fail;
        }
        if (gpus == 0) {
            nogpu++;
            continue;
        }
        if (milli == 0) {
            rc = carma_err_at(err, file, line, "asks for %llu GPU%s with gpu_milli 0",
                              (unsigned long long)gpus, gpus == 1 ? "" : "s");
            goto fail;
        }
        if (c->field[col[SCHED]][0] == '\0') {
            unsched++;
            continue;
        }
        int bad_sched = time_field(c->field[col[SCHED]], &sched) != 0;
        if (bad_sched || time_field(c->field[col[DELETE]], &del)) {
            int k = col[bad_sched ? SCHED : DELETE];
            rc = carma_err_at(err, file, line, "%s '%s': %s", need[bad_sched ? SCHED : DELETE],
                              carma_quote(c->field[k], 40).s, TIME_RANGE);
            goto fail;
        }
        if (sched < create) { /* a corrupt row: its run time cannot be trusted either */
            rc = carma_err_at(err, file, line,
                              "scheduled_time %lld before creation_time %lld",
                              (long long)sched, (long long)create);
            goto fail;
        }
        if (del <= sched) {
            rc = carma_err_at(err, file, line,
                              "deletion_time %lld not after scheduled_time %lld: no run time",
                              (long long)del, (long long)sched);
            goto fail;
        }
        if (npods >= SIM_TRACE_MAX_JOBS) {
            rc = carma_err_at(err, file, line, "more than %u jobs", SIM_TRACE_MAX_JOBS);
            goto fail;
        }
        if (npods == cap) {
            size_t ncap = cap ? cap * 2 : 1024;
            struct pod *np = realloc(pods, ncap * sizeof *np);
            if (!np) {
                rc = carma_err_set(err, -ENOMEM, "%s: out of memory", file);
                goto fail;
            }
            pods = np;
            cap = ncap;
        }
        uint32_t name;
        if ((rc = sim_build_name(&b, c->field[col[NAME]], &name, err)))
            goto fail;
        pods[npods++] =
            (struct pod){create, del - sched, line, (uint32_t)milli, name, (uint16_t)gpus};
        spec += col[SPEC] >= 0 && c->field[col[SPEC]][0] != '\0';
    }
    if (rc < 0)
        goto fail;
    if (npods)
        qsort(pods, npods, sizeof *pods, pod_cmp);
    for (size_t i = 0; i < npods; i++) {
        const struct pod *p = &pods[i];
        double frac = p->milli / 1000.0;
        struct sim_workload w;
        memset(&w, 0, sizeof w);
        snprintf(w.name, sizeof w.name, "pod-%um-x%u", (unsigned)p->milli, (unsigned)p->gpus);
        snprintf(w.model, sizeof w.model, "alibaba-pod");
        w.gpus = p->gpus;
        struct sim_job_spec j;
        memset(&j, 0, sizeof j);
        j.submit_s = (double)(p->create - pods[0].create);
        j.duration_s = (double)p->run;
        j.gpus = p->gpus;
        j.mem_mib = (float)(frac * gpu_mem);
        j.smact = (float)(frac < 0.05 ? 0.05 : frac > 0.90 ? 0.90 : frac);
        j.smocc = sim_profile_smocc(j.smact);
        j.drama = sim_profile_drama(j.smact);
        j.ramp_s = SIM_PROFILE_RAMP_S;
        j.name = p->name;
        if ((rc = sim_build_job_own(&b, &w, &j, p->line, err)))
            goto fail;
    }
    free(c);
    free(pods);
    sim_build_finish(&b, out);
    out->skipped_nogpu = nogpu;
    out->skipped_unscheduled = unsched;
    out->gpu_spec_jobs = spec;
    return 0;
fail:
    free(c);
    free(pods);
    sim_build_discard(&b);
    return rc;
}
