/* Muri's Philly-derived CSV: job_id,num_gpu,submit_time,iterations,model_name,
 * batch_size,duration,... with submit_time and duration in microseconds. Memory from
 * the built-in model profiles (peak = base + per_sample x batch, batch read as per GPU),
 * activity from the documented rule on that memory. Models the table lacks are listed
 * together in one error once the file is read. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/trace_fmt.h"
#include "util/csv.h"

#define US_MAX ((int64_t)(SIM_TIME_MAX_S * 1e6)) /* times in microseconds */

int sim_parse_muri(const char *file, const char *buf, size_t len, const struct sim_trace_opts *o,
                   struct sim_trace *out, struct carma_err *err)
{
    (void)o;
    static const char *const need[] = {"job_id",     "num_gpu",    "submit_time",
                                       "model_name", "batch_size", "duration"};
    enum { ID, GPU, SUBMIT, MODEL, BATCH, DUR, NNEED };
    struct carma_csv *c = malloc(sizeof *c);
    if (!c)
        return carma_err_set(err, -ENOMEM, "%s: out of memory", file);
    struct sim_build b;
    sim_build_init(&b, file);
    struct sim_unknowns unknown = {0};
    carma_csv_init(c, buf, len, file, ',');
    int col[NNEED];
    int rc = carma_csv_header(c, need, NNEED, NNEED, col, NULL, err);
    if (rc)
        goto fail;
    size_t ncols = c->nfields;
    int64_t first = -1, prev = 0;
    while ((rc = carma_csv_next(c, err)) == 1) {
        size_t line = c->line;
        if ((rc = carma_csv_fields_check(c, ncols, err)))
            goto fail;
        int64_t submit, dur;
        uint64_t gpus, batch;
        if (carma_parse_i64(c->field[col[SUBMIT]], &submit) || submit < 0 || submit > US_MAX) {
            rc = carma_err_at(err, file, line,
                              "submit_time '%s': not a whole number of us from 0 to %s",
                              carma_quote(c->field[col[SUBMIT]], 40).s,
                              carma_num((double)US_MAX).s);
            goto fail;
        }
        if (carma_parse_i64(c->field[col[DUR]], &dur) || dur <= 0 || dur > US_MAX) {
            rc = carma_err_at(err, file, line,
                              "duration '%s': not a whole number of us from 1 to %s",
                              carma_quote(c->field[col[DUR]], 40).s, carma_num((double)US_MAX).s);
            goto fail;
        }
        if (carma_parse_u64(c->field[col[GPU]], &gpus) || gpus < 1 || gpus > SIM_JOB_MAX_GPUS) {
            rc = carma_err_at(err, file, line, "num_gpu '%s': must be 1 to %d",
                              carma_quote(c->field[col[GPU]], 40).s, SIM_JOB_MAX_GPUS);
            goto fail;
        }
        if (carma_parse_u64(c->field[col[BATCH]], &batch) || batch < 1 || batch > 1000000) {
            rc = carma_err_at(err, file, line, "batch_size '%s': must be 1 to 1000000",
                              carma_quote(c->field[col[BATCH]], 40).s);
            goto fail;
        }
        const char *model = c->field[col[MODEL]];
        const struct sim_model_profile *p = sim_model_profile_find(model);
        if (first < 0)
            first = submit;
        if (submit < prev) {
            rc = carma_err_at(err, file, line,
                              "out of order: submit_time %lld us before the previous job's %lld us",
                              (long long)submit, (long long)prev);
            goto fail;
        }
        prev = submit;
        if (!p) { /* named with the others once the whole file is read */
            if ((rc = sim_unknown_add(&unknown, model, line, file, err)))
                goto fail;
            continue;
        }
        struct sim_workload w;
        memset(&w, 0, sizeof w);
        snprintf(w.name, sizeof w.name, "%.40s-b%llu", model, (unsigned long long)batch);
        snprintf(w.model, sizeof w.model, "%.60s", model);
        w.batch = (uint32_t)batch;
        w.gpus = 1;
        struct sim_job_spec j;
        memset(&j, 0, sizeof j);
        j.submit_s = (double)(submit - first) / 1e6;
        j.duration_s = (double)dur / 1e6;
        j.gpus = (uint16_t)gpus;
        j.mem_mib = (float)(p->base_mib + p->per_sample_mib * (double)batch);
        sim_job_profile_rule(&j);
        if ((rc = sim_build_job_own(&b, &w, &j, line, err)))
            goto fail;
    }
    if (rc < 0)
        goto fail;
    if (unknown.n) {
        rc = sim_unknown_error(&unknown, file, "model", err);
        goto fail;
    }
    free(c);
    sim_build_finish(&b, out);
    return 0;
fail:
    free(c);
    sim_unknown_free(&unknown);
    sim_build_discard(&b);
    return rc;
}
