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

/* The first field of a record out of its range: bad states the range, badk the column. */
struct check {
    const struct carma_csv *c;
    const int *col;
    const char *bad;
    int badk;
};
enum { POSITIVE = 1, WHOLE = 2 };

/* Whether column k is a number in [lo, hi] (above 0 if POSITIVE, whole if WHOLE) and no
 * earlier field was bad; else records the first bad one. */
static int field_in(struct check *ck, int k, double lo, double hi, int flags, const char *range,
                    double *v)
{
    if (ck->bad)
        return 0;
    if (carma_parse_double(ck->c->field[ck->col[k]], v) == 0 && *v >= lo && *v <= hi &&
        !((flags & POSITIVE) && *v <= 0) && !((flags & WHOLE) && *v != (double)(uint64_t)*v))
        return 1;
    ck->bad = range;
    ck->badk = k;
    return 0;
}

int sim_catalog_parse(const char *file, const char *buf, size_t len, struct sim_workload **out,
                      size_t *n, struct carma_err *err)
{
    if (!file)
        file = "catalog";
    if (len > SIM_TRACE_MAX_BYTES)
        return carma_err_at(err, file, 0, "larger than %u bytes", SIM_TRACE_MAX_BYTES);
    const char *why = carma_text_not_text(buf, len);
    if (why)
        return carma_err_at(err, file, 0, "%s", why);
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
        if ((rc = carma_csv_fields_check(c, ncols, err)))
            goto fail;
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
        int bad_name = carma_text_has_control(w.name);
        if (bad_name || carma_text_has_control(w.model)) {
            rc = carma_err_at(err, file, line, "%s '%s' holds a control character or is not UTF-8",
                              bad_name ? "workload name" : "model name",
                              carma_quote(bad_name ? w.name : w.model, 64).s);
            goto fail;
        }
        if (sim_build_find(&b, w.name) >= 0) {
            rc = carma_err_at(err, file, line, "workload '%s' defined twice",
                              carma_quote(w.name, 64).s);
            goto fail;
        }
        struct check ck = {c, col, NULL, 0};
        double v;
        if (field_in(&ck, C_BATCH, 0, 1e9, WHOLE, "a whole number from 0 to 1e9", &v))
            w.batch = (uint32_t)v;
        if (field_in(&ck, C_GPUS, 1, SIM_JOB_MAX_GPUS, WHOLE, "a whole number from 1 to 64", &v))
            w.gpus = (uint16_t)v;
        if (field_in(&ck, C_MEM, 0, SIM_MEM_MAX_MIB, POSITIVE, "MiB above 0, at most 1e7", &v))
            w.mem_mib = (float)v;
        if (field_in(&ck, C_TOTAL, 0, 1e8, POSITIVE, "minutes above 0, at most 1e8", &v))
            w.duration_s = v * 60.0;
        float *ratio[3] = {&w.smact, &w.smocc, &w.drama};
        for (int k = 0; k < 3; k++)
            if (field_in(&ck, C_SMACT + k, 0, 1, 0, "a ratio from 0 to 1", &v))
                *ratio[k] = (float)v;
        if (field_in(&ck, C_RAMP, 0, SIM_RAMP_MAX_S, 0, "seconds from 0 to 1e6", &v))
            w.ramp_s = (float)v;
        static const int est_col[SIM_EST_COUNT] = {C_HORUS, C_FAKE, C_GMN, C_CARMA};
        for (int e = 0; e < SIM_EST_COUNT; e++) {
            int k = col[est_col[e]];
            if (k < 0 || c->field[k][0] == '\0')
                continue; /* not given */
            if (field_in(&ck, est_col[e], 0, SIM_MEM_MAX_MIB, 0, "MiB from 0 to 1e7", &v))
                w.est_mib[e] = (float)v;
        }
        if (ck.bad) {
            rc = carma_err_at(err, file, line, "workload '%s': bad %s '%s' (%s)",
                              carma_quote(w.name, 64).s, col_names[ck.badk],
                              carma_quote(c->field[col[ck.badk]], 40).s, ck.bad);
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
