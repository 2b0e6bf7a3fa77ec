/* The workload catalog: data/workloads.csv (CARMA's task descriptions restated, plus
 * the solo profile columns; see data/README.md and docs/traces.md). */
#include <errno.h>
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "sim/trace_fmt.h"
#include "util/csv.h"

enum {
    C_NAME, C_MODEL, C_BATCH, C_GPUS, C_MEM, C_TOTAL, C_SMACT, C_SMOCC, C_DRAMA, C_RAMP,
    C_HORUS, C_FAKE, C_GMN, C_CARMA, C_N
};
static const char *const col_names[C_N] = {
    "name",  "model", "batch", "gpus",  "mem_mib", "total_min", "smact",
    "smocc", "drama", "ramp_s", "est_horus_mib", "est_faketensor_mib", "est_gpumemnet_mib",
    "est_carma_mib",
};
#define C_REQUIRED C_HORUS /* columns before this one must be present */

static int has_control(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return 1;
    return 0;
}

static int num(const char *s, double lo, double hi, double *v)
{
    return carma_parse_double(s, v) == 0 && *v >= lo && *v <= hi ? 0 : -EINVAL;
}

int sim_catalog_parse(const char *file, const char *buf, size_t len, struct sim_workload **out,
                      size_t *n, struct carma_err *err)
{
    if (!file)
        file = "catalog";
    if (len > SIM_TRACE_MAX_BYTES)
        return carma_err_at(err, file, 0, "larger than %u bytes", SIM_TRACE_MAX_BYTES);
    struct carma_csv *c = malloc(sizeof *c);
    if (!c)
        return carma_err_set(err, -ENOMEM, "%s: out of memory", file);
    struct sim_build b;
    sim_build_init(&b, file);
    carma_csv_init(c, buf, len, file, ',');
    int col[C_N];
    int rc = carma_csv_header(c, col_names, C_N, C_REQUIRED, col,
                              "(expected columns of a workload catalog: name,model,batch,"
                              "gpus,mem_mib,total_min,smact,smocc,drama,ramp_s)",
                              err);
    if (rc)
        goto fail;
    size_t ncols = c->nfields;
    while ((rc = carma_csv_next(c, err)) == 1) {
        size_t line = c->line;
        if (c->nfields != ncols) {
            rc = carma_err_at(err, file, line, "%zu fields, the header has %zu", c->nfields, ncols);
            goto fail;
        }
        struct sim_workload w;
        memset(&w, 0, sizeof w);
        const char *name = c->field[col[C_NAME]];
        if (sim_name_copy(w.name, sizeof w.name, name)) {
            rc = carma_err_at(err, file, line, "workload name empty or longer than %d bytes",
                              SIM_NAME_MAX - 1);
            goto fail;
        }
        if (sim_name_copy(w.model, sizeof w.model, c->field[col[C_MODEL]]) &&
            c->field[col[C_MODEL]][0]) {
            rc = carma_err_at(err, file, line, "model name longer than %d bytes", SIM_NAME_MAX - 1);
            goto fail;
        }
        /* Names reach messages and reports: no line breaks or terminal controls. */
        if (has_control(w.name) || has_control(w.model)) {
            rc = carma_err_at(err, file, line, "%s '%s' holds a control character",
                              has_control(w.name) ? "workload name" : "model name",
                              carma_quote(has_control(w.name) ? w.name : w.model, 64).s);
            goto fail;
        }
        if (sim_build_find(&b, w.name) >= 0) {
            rc = carma_err_at(err, file, line, "workload '%s' defined twice",
                              carma_quote(w.name, 64).s);
            goto fail;
        }
        double v;
        const char *bad = NULL;
        if (num(c->field[col[C_BATCH]], 0, 1e9, &v) || v != (double)(uint32_t)v)
            bad = "batch (a whole number)";
        if (!bad) {
            w.batch = (uint32_t)v;
            if (num(c->field[col[C_GPUS]], 1, SIM_JOB_MAX_GPUS, &v) || v != (double)(uint16_t)v)
                bad = "gpus (1 to 64)";
        }
        if (!bad) {
            w.gpus = (uint16_t)v;
            if (num(c->field[col[C_MEM]], 0, 1e7, &v) || v <= 0)
                bad = "mem_mib (MiB above 0, at most 1e7)";
        }
        if (!bad) {
            w.mem_mib = (float)v;
            if (num(c->field[col[C_TOTAL]], 0, 1e8, &v) || v <= 0)
                bad = "total_min (minutes above 0, at most 1e8)";
        }
        if (!bad)
            w.duration_s = v * 60.0;
        float *ratio[3] = {&w.smact, &w.smocc, &w.drama};
        for (int k = 0; k < 3 && !bad; k++) {
            if (num(c->field[col[C_SMACT + k]], 0, 1, &v))
                bad = "smact/smocc/drama (ratios 0 to 1)";
            else
                *ratio[k] = (float)v;
        }
        if (!bad) {
            if (num(c->field[col[C_RAMP]], 0, 1e6, &v))
                bad = "ramp_s (seconds, not negative)";
            else
                w.ramp_s = (float)v;
        }
        static const int est_col[SIM_EST_COUNT] = {C_HORUS, C_FAKE, C_GMN, C_CARMA};
        for (int e = 0; e < SIM_EST_COUNT && !bad; e++) {
            int k = col[est_col[e]];
            if (k < 0 || c->field[k][0] == '\0')
                continue; /* not given */
            if (num(c->field[k], 0, 1e7, &v))
                bad = "estimate (MiB, not negative)";
            else
                w.est_mib[e] = (float)v;
        }
        if (bad) {
            rc = carma_err_at(err, file, line, "workload '%s': bad %s",
                              carma_quote(w.name, 64).s, bad);
            goto fail;
        }
        uint16_t idx;
        rc = sim_build_workload(&b, &w, &idx, line, err);
        if (rc)
            goto fail;
    }
    if (rc < 0)
        goto fail;
    if (b.t.nworkloads == 0) {
        rc = carma_err_at(err, file, 0, "no workloads after the header");
        goto fail;
    }
    free(c);
    *n = b.t.nworkloads;
    *out = b.t.workloads;
    b.t.workloads = NULL;
    sim_build_discard(&b);
    return 0;
fail:
    free(c);
    sim_build_discard(&b);
    return rc;
}
