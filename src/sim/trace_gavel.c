/* Gavel's .trace (Philly virtual-cluster streams re-expressed by Gavel): one job per
 * line, tab-separated fields, no header, in one of three layouts told apart by the
 * number of fields (one layout per file):
 *   7  (scheduler/traces/msr/): job type, command, step argument, needs a data dir
 *      (0/1), total steps, arrival time (s), scale factor (GPUs);
 *   9  (parse_trace of scheduler/utils.py @52d9895): job type, command, step argument,
 *      needs a data dir, total steps, scale factor, priority weight, SLO, arrival;
 *   10 (scheduler/traces/physical_cluster/, parse_trace of later versions): the 9 with
 *      a working directory after the command.
 * The priority weight (> 0; Gavel's fairness policies divide by it) and the SLO (a
 * multiple of the job's duration; negative: none, as Gavel's Job reads it) are
 * checked and counted in the trace, but no carma policy uses them. Gavel's older
 * 6-field lines (job type, command, step argument, total steps, arrival, scale factor)
 * name job types without a batch size ('ResNet-18') and are refused, saying so.
 * Gavel gives steps, not seconds: run time = steps / the job type's isolated V100
 * throughput (Gavel's own figure; it built the step counts as duration x that
 * throughput). */
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

/* Field indices of a layout carma reads; -1: the layout has no such field. */
struct gavel_layout {
    size_t nf;
    int type, data, steps, arrival, scale, weight, slo;
};

static const struct gavel_layout layouts[] = {
    {7, 0, 3, 4, 5, 6, -1, -1},
    {9, 0, 3, 4, 8, 5, 6, 7},
    {10, 0, 4, 5, 9, 6, 7, 8},
};

#define GAVEL_MAX_FIELDS 10

#define GAVEL_LAYOUTS                                                                          \
    "carma reads Gavel's layouts of 7 fields (job type, command, step argument, needs data "  \
    "dir, total steps, arrival s, scale factor), 9 (job type, command, step argument, needs " \
    "data dir, total steps, scale factor, priority weight, SLO, arrival s) and 10 (the 9 "    \
    "with a working directory after the command)"

/* The error for a line of nf fields (more than GAVEL_MAX_FIELDS: nf is one more) that
 * fits no layout; f[0] is its job type. */
static int layout_error(const char *file, size_t n, size_t nf, const char *type,
                        struct carma_err *err)
{
    if (nf == 6)
        return carma_err_at(err, file, n,
                            "6 tab-separated fields: Gavel's older layout (job type, command, "
                            "step argument, total steps, arrival, scale factor), whose job types "
                            "(here '%s') name no batch size, and Gavel's code of that time gives "
                            "none, so carma cannot size the jobs' memory or run time; write the "
                            "types with the batch the runs used, as in Gavel's later traces "
                            "('ResNet-18 (batch size 64)'), in the 7-field layout",
                            carma_quote(type, 32).s);
    if (nf > GAVEL_MAX_FIELDS)
        return carma_err_at(err, file, n, "more than %d tab-separated fields: %s",
                            GAVEL_MAX_FIELDS, GAVEL_LAYOUTS);
    return carma_err_at(err, file, n, "%zu tab-separated field%s: %s", nf, nf == 1 ? "" : "s",
                        GAVEL_LAYOUTS);
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
    struct sim_unknowns unknown = {0};
    const struct gavel_layout *L = NULL;
    size_t L_line = 0, weighted = 0, slos = 0;
    int rc = 0;
    size_t off = 0, n = 0;
    double first = -1, prev = 0;
    while ((rc = sim_next_line(buf, len, &off, &n, line, GAVEL_LINE_MAX, file, err)) == 1) {
        if (!line[0])
            continue;
        char *f[GAVEL_MAX_FIELDS];
        size_t nf = 0;
        for (char *p = line;;) {
            if (nf == GAVEL_MAX_FIELDS) {
                nf++;
                break;
            }
            f[nf++] = p;
            char *t = strchr(p, '\t');
            if (!t)
                break;
            *t = '\0';
            p = t + 1;
        }
        if (!L) {
            for (size_t k = 0; k < sizeof layouts / sizeof layouts[0]; k++)
                if (layouts[k].nf == nf)
                    L = &layouts[k];
            if (!L) {
                rc = layout_error(file, n, nf, f[0], err);
                goto fail;
            }
            L_line = n;
        } else if (nf != L->nf) {
            rc = nf > GAVEL_MAX_FIELDS
                     ? carma_err_at(err, file, n,
                                    "more than %d tab-separated fields, but line %zu has %zu: "
                                    "one Gavel layout per file",
                                    GAVEL_MAX_FIELDS, L_line, L->nf)
                     : carma_err_at(err, file, n,
                                    "%zu tab-separated fields, but line %zu has %zu: one Gavel "
                                    "layout per file",
                                    nf, L_line, L->nf);
            goto fail;
        }
        const char *type = f[L->type];
        uint32_t batch = 1;
        const struct sim_model_profile *p = sim_model_profile_find(type);
        int known = p && p->steps_per_s > 0 && batch_of(type, &batch) == 0;
        uint64_t steps, scale;
        double at, weight = 1, slo = -1;
        const char *v;
        if (strcmp(v = f[L->data], "0") != 0 && strcmp(v, "1") != 0) {
            rc = carma_err_at(err, file, n, "needs-data-dir field '%s': not 0 or 1",
                              carma_quote(v, 40).s);
            goto fail;
        }
        if (carma_parse_u64(v = f[L->steps], &steps) || steps == 0 ||
            steps > 1000000000000ull) {
            rc = carma_err_at(err, file, n, "total steps '%s': not a whole number from 1 to 1e12",
                              carma_quote(v, 40).s);
            goto fail;
        }
        if (carma_parse_double(v = f[L->arrival], &at) || at < 0 || at > SIM_TIME_MAX_S) {
            rc = carma_err_at(err, file, n, "arrival '%s': not a number of seconds from 0 to %s",
                              carma_quote(v, 40).s, carma_num(SIM_TIME_MAX_S).s);
            goto fail;
        }
        if (carma_parse_u64(v = f[L->scale], &scale) || scale < 1 ||
            scale > SIM_JOB_MAX_GPUS) {
            rc = carma_err_at(err, file, n, "scale factor '%s': must be 1 to %d GPUs",
                              carma_quote(v, 40).s, SIM_JOB_MAX_GPUS);
            goto fail;
        }
        if (L->weight >= 0 &&
            (carma_parse_double(v = f[L->weight], &weight) || !(weight > 0) || weight > 1e6)) {
            rc = carma_err_at(err, file, n,
                              "priority weight '%s': not a number above 0 and up to 1e6",
                              carma_quote(v, 40).s);
            goto fail;
        }
        if (L->slo >= 0 &&
            (carma_parse_double(v = f[L->slo], &slo) || slo < -1e6 || slo > 1e6)) {
            rc = carma_err_at(err, file, n,
                              "SLO '%s': not a number from -1e6 to 1e6 (negative: none)",
                              carma_quote(v, 40).s);
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
        if (!known) { /* named with the others once the whole file is read */
            if ((rc = sim_unknown_add(&unknown, type, n, file, err)))
                goto fail;
            continue;
        }
        weighted += weight != 1;
        slos += slo >= 0;
        struct sim_workload w;
        memset(&w, 0, sizeof w);
        snprintf(w.name, sizeof w.name, "%.60s", type);
        snprintf(w.model, sizeof w.model, "%.60s", type);
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
    if (unknown.n) {
        rc = sim_unknown_error(&unknown, file, "job type", err);
        goto fail;
    }
    free(line);
    sim_build_finish(&b, out);
    out->weighted_jobs = weighted;
    out->slo_jobs = slos;
    return 0;
fail:
    free(line);
    sim_unknown_free(&unknown);
    sim_build_discard(&b);
    return rc;
}
