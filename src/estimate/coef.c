/* The coefficient table: CSV `name,value` read and written (estimate.h). */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "estimate/estimate.h"
#include "util/csv.h"

static const char *const fam_names[EST_FAM_COUNT] = {"dense", "conv"};

const char *est_family_name(enum est_family f)
{
    return fam_names[f];
}

/* Finds the slot for `name` ("kind_linear_conv", "q_dense", ...): a double, or a
 * count (ncal_*); both NULL when unknown. */
static double *slot(struct est_coef *c, const char *name, size_t **count)
{
    *count = NULL;
    if (strcmp(name, "level") == 0)
        return &c->level;
    const char *us = strrchr(name, '_');
    if (!us)
        return NULL;
    int fam = -1;
    for (int f = 0; f < EST_FAM_COUNT; f++)
        if (strcmp(us + 1, fam_names[f]) == 0)
            fam = f;
    if (fam < 0)
        return NULL;
    char base[64];
    size_t bn = (size_t)(us - name);
    if (bn >= sizeof base)
        return NULL;
    memcpy(base, name, bn);
    base[bn] = 0;
    if (strcmp(base, "floor") == 0) return &c->floor_mib[fam];
    if (strcmp(base, "input") == 0) return &c->input[fam];
    if (strcmp(base, "transient") == 0) return &c->transient[fam];
    if (strcmp(base, "step") == 0) return &c->step[fam];
    if (strcmp(base, "concat") == 0) return &c->concat[fam];
    if (strcmp(base, "replay") == 0) return &c->replay[fam];
    if (strcmp(base, "q") == 0) return &c->q[fam];
    if (strcmp(base, "scale0") == 0) return &c->scale0_mib[fam];
    if (strncmp(base, "qband", 5) == 0 && base[5] >= '0' && base[5] < '0' + EST_NBANDS &&
        base[6] == 0)
        return &c->qband[fam][base[5] - '0'];
    if (strncmp(base, "ncalband", 8) == 0 && base[8] >= '0' && base[8] < '0' + EST_NBANDS &&
        base[9] == 0) {
        *count = &c->ncalband[fam][base[8] - '0'];
        return NULL;
    }
    if (strcmp(base, "ncal") == 0) {
        *count = &c->ncal[fam];
        return NULL;
    }
    if (strncmp(base, "kind_", 5) == 0) {
        int k = est_kind_from_name(base + 5);
        if (k >= 0)
            return &c->kind[fam][k];
    }
    return NULL;
}


/* Why value v is outside what name can take, as the fit writes it, or NULL: the
 * multipliers (kind_*, input, transient, step, concat, replay) are fitted within [0, 4],
 * the quantiles and the normaliser are 0 or more (a negative one lowers the bound), the
 * level is a coverage in [0, 1]; a floor is fitted freely (est_compute takes a negative
 * one as 0). */
static const char *coef_out_of_range(const char *name, double v)
{
    static const char *const mult[] = {"kind_", "input_", "transient_", "step_", "concat_",
                                       "replay_"};
    for (size_t i = 0; i < sizeof mult / sizeof mult[0]; i++)
        if (strncmp(name, mult[i], strlen(mult[i])) == 0)
            return v < 0 || v > EST_FIT_MAX_COPIES
                       ? "a multiplier is from 0 to 4, as the fit bounds it (a layer's output "
                         "kept at most four times over)"
                       : NULL;
    if (strncmp(name, "q", 1) == 0 || strncmp(name, "scale0_", 7) == 0)
        return v < 0 ? "a quantile or normaliser is 0 or more (a negative one lowers the bound)"
                     : NULL;
    if (strcmp(name, "level") == 0)
        return v < 0 || v > 1 ? "a coverage level is from 0 to 1" : NULL;
    return NULL;
}

int est_coef_parse(const char *buf, size_t len, const char *file, struct est_coef *out,
                   struct carma_err *err)
{
    static const size_t max_lines = 256;
    struct carma_csv *csv = calloc(1, sizeof *csv);
    if (!csv)
        return carma_err_set(err, -ENOMEM, "out of memory");
    *out = *est_coef_default();
    carma_csv_init(csv, buf, len, file, ',');
    int rc, header = 1;
    size_t lines = 0, nset = 0;
    const void *set[256]; /* coefficients given, one slot each: a second value is an error */
    while ((rc = carma_csv_next(csv, err)) == 1) {
        if (++lines > max_lines) {
            rc = carma_err_at(err, file, csv->line, "more than %zu lines", max_lines);
            break;
        }
        if (csv->nfields != 2) {
            rc = carma_err_at(err, file, csv->line, "expected name,value");
            break;
        }
        if (header && strcmp(csv->field[0], "name") == 0 && strcmp(csv->field[1], "value") == 0) {
            header = 0;
            continue;
        }
        header = 0;
        size_t *count;
        double *d = slot(out, csv->field[0], &count);
        double v;
        if (!d && !count) {
            rc = carma_err_at(err, file, csv->line, "unknown coefficient '%s'", csv->field[0]);
            break;
        }
        const void *key = d ? (const void *)d : (const void *)count;
        size_t k = 0;
        while (k < nset && set[k] != key)
            k++;
        if (k < nset) {
            rc = carma_err_at(err, file, csv->line, "%s given twice", csv->field[0]);
            break;
        }
        set[nset++] = key;
        if (carma_parse_double(csv->field[1], &v) < 0 || v < -1e7 || v > 1e7) {
            rc = carma_err_at(err, file, csv->line, "bad value '%s' for %s", csv->field[1],
                              csv->field[0]);
            break;
        }
        const char *why = d ? coef_out_of_range(csv->field[0], v) : NULL;
        if (why) {
            rc = carma_err_at(err, file, csv->line, "%s %s is out of range: %s", csv->field[0],
                              csv->field[1], why);
            break;
        }
        if (count) {
            if (v < 0) {
                rc = carma_err_at(err, file, csv->line, "negative count");
                break;
            }
            *count = (size_t)v;
        } else {
            *d = v;
        }
    }
    free(csv);
    if (rc >= 0 && nset == 0) /* an empty table, or a header alone: a fit that wrote nothing */
        rc = carma_err_at(err, file, 0, "no coefficients (expected name,value rows)");
    return rc < 0 ? rc : 0;
}

int est_coef_write(const struct est_coef *c, char *buf, size_t cap)
{
    size_t n = 0;
#define PUT(...)                                                                          \
    do {                                                                                  \
        int w_ = snprintf(buf + n, n < cap ? cap - n : 0, __VA_ARGS__);                   \
        if (w_ < 0 || n + (size_t)w_ >= cap)                                              \
            return -ENOSPC;                                                               \
        n += (size_t)w_;                                                                  \
    } while (0)
    PUT("name,value\n");
    for (int f = 0; f < EST_FAM_COUNT; f++) {
        const char *fn = fam_names[f];
        PUT("floor_%s,%.6f\n", fn, c->floor_mib[f]);
        for (int k = 0; k < EST_K_COUNT; k++)
            PUT("kind_%s_%s,%.6f\n", est_kind_name((enum est_kind)k), fn, c->kind[f][k]);
        PUT("input_%s,%.6f\n", fn, c->input[f]);
        PUT("transient_%s,%.6f\n", fn, c->transient[f]);
        PUT("step_%s,%.6f\n", fn, c->step[f]);
        PUT("concat_%s,%.6f\n", fn, c->concat[f]);
        PUT("replay_%s,%.6f\n", fn, c->replay[f]);
        PUT("q_%s,%.6f\n", fn, c->q[f]);
        PUT("scale0_%s,%.6f\n", fn, c->scale0_mib[f]);
        PUT("ncal_%s,%zu\n", fn, c->ncal[f]);
        for (int b = 0; b < EST_NBANDS; b++)
            PUT("qband%d_%s,%.6f\nncalband%d_%s,%zu\n", b, fn, c->qband[f][b], b, fn,
                c->ncalband[f][b]);
    }
    PUT("level,%.6f\n", c->level);
#undef PUT
    return (int)n;
}
