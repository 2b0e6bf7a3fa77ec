/* Gavel's .trace (Philly virtual-cluster streams re-expressed by Gavel): one job per
 * line, 7 tab-separated fields, no header: job type, command, step argument, needs a
 * data dir (0/1), total steps, arrival time (s), scale factor (GPUs). Gavel gives steps,
 * not seconds: run time = steps / the job type's isolated V100 throughput (Gavel's own
 * figure; it built the step counts as duration x that throughput). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/trace_fmt.h"
#include "util/csv.h"

#define GAVEL_LINE_MAX 8192

/* Batch size from "Model (batch size N)", 1 when the type has none. */
static int batch_of(const char *type, uint32_t *batch)
{
    const char *p = strstr(type, " (batch size ");
    *batch = 1;
    if (!p)
        return 0;
    p += strlen(" (batch size ");
    uint64_t v = 0;
    int digits = 0;
    while (*p >= '0' && *p <= '9' && digits < 9) {
        v = v * 10 + (uint64_t)(*p++ - '0');
        digits++;
    }
    if (!digits || v == 0 || strcmp(p, ")") != 0)
        return -EINVAL;
    *batch = (uint32_t)v;
    return 0;
}

int sim_parse_gavel(const char *file, const char *buf, size_t len, const struct sim_trace_opts *o,
                    struct sim_trace *out, struct carma_err *err)
{
    (void)o;
    char *line = malloc(GAVEL_LINE_MAX);
    if (!line)
        return carma_err_set(err, -ENOMEM, "%s: out of memory", file);
    struct sim_build b;
    sim_build_init(&b, file);
    int rc = 0;
    size_t off = 0, n = 0;
    double first = -1, prev = 0;
    while ((rc = sim_next_line(buf, len, &off, &n, line, GAVEL_LINE_MAX, file, err)) == 1) {
        if (!line[0])
            continue;
        char *f[7];
        size_t nf = 0;
        for (char *p = line;;) {
            if (nf == 7) {
                nf = 8;
                break;
            }
            f[nf++] = p;
            char *t = strchr(p, '\t');
            if (!t)
                break;
            *t = '\0';
            p = t + 1;
        }
        if (nf != 7) {
            rc = carma_err_at(err, file, n,
                              "%s 7 tab-separated fields (job type, command, step argument, "
                              "needs data dir, total steps, arrival s, scale factor)",
                              nf > 7 ? "more than" : "fewer than");
            goto fail;
        }
        uint32_t batch;
        const struct sim_model_profile *p = sim_model_profile_find(f[0]);
        if (!p || !(p->steps_per_s > 0) || batch_of(f[0], &batch)) {
            rc = carma_err_at(err, file, n,
                              "unknown job type '%s' (no profile in data/model-profiles.csv)",
                              carma_quote(f[0], 64).s);
            goto fail;
        }
        uint64_t steps, scale;
        double at;
        if (strcmp(f[3], "0") != 0 && strcmp(f[3], "1") != 0) {
            rc = carma_err_at(err, file, n, "needs-data-dir field '%s': not 0 or 1",
                              carma_quote(f[3], 40).s);
            goto fail;
        }
        if (carma_parse_u64(f[4], &steps) || steps == 0 || steps > 1000000000000ull) {
            rc = carma_err_at(err, file, n, "total steps '%s': not a whole number from 1 to 1e12",
                              carma_quote(f[4], 40).s);
            goto fail;
        }
        if (carma_parse_double(f[5], &at) || at < 0 || at > SIM_TIME_MAX_S) {
            rc = carma_err_at(err, file, n, "arrival '%s': not a number of seconds from 0 to %s",
                              carma_quote(f[5], 40).s, carma_num(SIM_TIME_MAX_S).s);
            goto fail;
        }
        if (carma_parse_u64(f[6], &scale) || scale < 1 || scale > SIM_JOB_MAX_GPUS) {
            rc = carma_err_at(err, file, n, "scale factor '%s': must be 1 to %d GPUs",
                              carma_quote(f[6], 40).s, SIM_JOB_MAX_GPUS);
            goto fail;
        }
        if (first < 0)
            first = at;
        if (at < prev) {
            rc = carma_err_at(err, file, n, "out of order: arrival %s s before the previous "
                              "job's %s s", carma_num(at).s, carma_num(prev).s);
            goto fail;
        }
        prev = at;
        struct sim_workload w;
        memset(&w, 0, sizeof w);
        snprintf(w.name, sizeof w.name, "%.60s", f[0]);
        snprintf(w.model, sizeof w.model, "%.60s", f[0]);
        w.batch = batch;
        w.gpus = 1;
        struct sim_job_spec j;
        memset(&j, 0, sizeof j);
        j.submit_s = at - first;
        j.duration_s = (double)steps / p->steps_per_s;
        j.gpus = (uint16_t)scale;
        j.mem_mib = (float)(p->base_mib + p->per_sample_mib * batch);
        sim_job_profile_rule(&j);
        if ((rc = sim_build_job_own(&b, &w, &j, n, err)))
            goto fail;
    }
    if (rc < 0)
        goto fail;
    free(line);
    sim_build_finish(&b, out);
    return 0;
fail:
    free(line);
    sim_build_discard(&b);
    return rc;
}
