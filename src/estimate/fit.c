/* Fitting and conformal calibration (fit.h). */
#include "estimate/fit.h"
#include "estimate/replay.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Column layout of one family's least-squares problem (families are fitted
 * separately: they share nothing). */
enum { COL_FLOOR = 0, COL_KIND0, COL_INPUT = COL_KIND0 + EST_K_COUNT, COL_TRANSIENT, COL_STEP,
       COL_CONCAT, COL_REPLAY, NCOL };

/* Which families are estimated by replay. Measured by `carma eval-estimator` on
 * GPUMemNet's runs (5-fold, refit per fold): MLPs, replay 0.998 at 1 GB against 0.992
 * for the per-kind model; CNNs, replay 0.856 at 8 GB against 0.879 (their residual
 * and concatenation graphs are not chains, and cuDNN's workspaces are not listed). */
static const int fam_replay[EST_FAM_COUNT] = {[EST_FAM_DENSE] = 1, [EST_FAM_CONV] = 0};

uint64_t est_rng_next(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

int est_same_class(double a, double b, double width)
{
    return floor(a / width) == floor(b / width);
}

int est_tuples_parse(const char *s, size_t n, const char *file, size_t line,
                     struct est_model *m, struct carma_err *err)
{
    size_t i = 0;
#define WS() while (i < n && s[i] == ' ') i++
    WS();
    if (i >= n || s[i] != '[')
        return carma_err_at(err, file, line, "layer tuples must start with '['");
    i++;
    WS();
    if (i < n && s[i] == ']')
        return carma_err_at(err, file, line, "empty layer list");
    for (;;) {
        WS();
        if (i + 2 >= n || s[i] != '(' || s[i + 1] != '\'')
            return carma_err_at(err, file, line, "expected ('type', out, params)");
        i += 2;
        size_t ts = i;
        while (i < n && s[i] != '\'' && i - ts < 64)
            i++;
        if (i >= n || s[i] != '\'' || i == ts)
            return carma_err_at(err, file, line, "bad layer type");
        size_t te = i++;
        uint64_t v[2];
        for (int k = 0; k < 2; k++) {
            WS();
            if (i >= n || s[i] != ',')
                return carma_err_at(err, file, line, "expected ','");
            i++;
            WS();
            size_t st = i;
            uint64_t x = 0;
            while (i < n && isdigit((unsigned char)s[i]) && x < EST_MAX_ELEMS)
                x = x * 10 + (uint64_t)(s[i++] - '0');
            if (i == st || x >= EST_MAX_ELEMS)
                return carma_err_at(err, file, line, "bad number in layer tuple");
            v[k] = x;
        }
        WS();
        if (i >= n || s[i] != ')')
            return carma_err_at(err, file, line, "expected ')'");
        i++;
        if (est_model_add_type(m, s + ts, te - ts, v[0], v[1], 1, 0) < 0)
            return carma_err_at(err, file, line, "too many layers");
        WS();
        if (i < n && s[i] == ',') {
            i++;
            continue;
        }
        if (i < n && s[i] == ']') {
            i++;
            break;
        }
        return carma_err_at(err, file, line, "expected ',' or ']'");
    }
    WS();
    if (i != n)
        return carma_err_at(err, file, line, "text after the layer list");
#undef WS
    return 0;
}

int est_sample_make(const struct est_model *m, uint32_t batch, uint64_t input, double y,
                    double cap_mib, struct est_replay_work *work, struct est_sample *out)
{
    struct est_model mm = *m;
    mm.input = input;
    /* GPUMemNet's MLP script prints a torchsummary summary on the GPU before training
     * (its CNN script a torchinfo one at the training batch without gradients, which
     * the conv family, not replayed, does not model). */
    struct est_opts o = {.batch = batch, .optimizer = EST_OPT_ADAM, .precision = EST_PREC_FP32,
                         .summary_pass = 1};
    double w, g, st;
    memset(out, 0, sizeof *out);
    est_features(&mm, &o, out->feat, &w, &g, &st);
    out->fixed_mib = w + g + st;
    out->family = (uint8_t)est_model_family(m);
    if (fam_replay[out->family]) { /* the other families never fit the replay */
        struct est_replay_result rr;
        int rc = est_replay(&mm, &o, work, &rr);
        if (rc < 0)
            return rc;
        out->replay_mib = rr.peak_mib;
    }
    out->y = y;
    out->batch = batch;
    out->censored = cap_mib > 0 && y >= 0.98 * cap_mib;
    return 0;
}

static void coef_to_vec(const struct est_coef *c, int fam, double *v)
{
    v[COL_FLOOR] = c->floor_mib[fam];
    for (int k = 0; k < EST_K_COUNT; k++)
        v[COL_KIND0 + k] = c->kind[fam][k];
    v[COL_INPUT] = c->input[fam];
    v[COL_TRANSIENT] = c->transient[fam];
    v[COL_STEP] = c->step[fam];
    v[COL_CONCAT] = c->concat[fam];
    v[COL_REPLAY] = c->replay[fam];
}

static void vec_to_coef(const double *v, int fam, struct est_coef *c)
{
    c->floor_mib[fam] = v[COL_FLOOR];
    for (int k = 0; k < EST_K_COUNT; k++)
        c->kind[fam][k] = v[COL_KIND0 + k];
    c->input[fam] = v[COL_INPUT];
    c->transient[fam] = v[COL_TRANSIENT];
    c->step[fam] = v[COL_STEP];
    c->concat[fam] = v[COL_CONCAT];
    c->replay[fam] = v[COL_REPLAY];
}

static void sample_row(const struct est_sample *s, double *x)
{
    x[COL_FLOOR] = 1;
    for (int k = 0; k < EST_K_COUNT; k++)
        x[COL_KIND0 + k] = s->feat[k];
    x[COL_INPUT] = s->feat[EST_F_INPUT];
    x[COL_TRANSIENT] = s->feat[EST_F_TRANSIENT];
    x[COL_STEP] = s->feat[EST_F_STEP];
    x[COL_CONCAT] = s->feat[EST_F_CONCAT];
    x[COL_REPLAY] = s->replay_mib;
}

/* The part of a sample's peak that is not fitted: the exact parameter bytes of the
 * per-kind model; nothing for the replay, whose peak already holds them. */
static double sample_fixed(const struct est_coef *c, const struct est_sample *s)
{
    return c->replay[s->family] > 0 ? 0 : s->fixed_mib;
}

double est_sample_predict(const struct est_coef *c, const struct est_sample *s)
{
    double v[NCOL], x[NCOL];
    coef_to_vec(c, s->family, v);
    sample_row(s, x);
    if (c->replay[s->family] <= 0)
        v[COL_REPLAY] = 0;
    else
        for (int j = COL_KIND0; j < COL_REPLAY; j++)
            v[j] = 0;
    double y = sample_fixed(c, s);
    for (int j = 0; j < NCOL; j++)
        y += v[j] * x[j];
    return y;
}

/* The prior the fit starts from (est_fit_prior). Every coefficient that GPUMemNet's
 * measurements carry a signal for is fitted from zero, and the bound's calibration is
 * computed, so nothing here reaches the fitted table but the values of columns without
 * any signal: layer kinds that no measured model has. Those are 0 (nothing is assumed
 * kept), except two conv-family multipliers, hand-set because GPUMemNet's CNNs have no
 * embeddings and no attention while a CNN with either (a Keras text CNN, a CNN with an
 * attention block) is estimated by this family:
 *  - kind_embed_conv = 1: an embedding's output is kept once, as the saved input of the
 *    layer that reads it (the lookup itself keeps only its integer indices);
 *  - kind_attn_conv = 2.25: eager attention keeps, per probability, the softmax's output
 *    (1, for the softmax's backward), the dropout's output (1, for the product with the
 *    values) and the dropout's one-byte mask (a quarter of a 4-byte element), as the
 *    replay counts them (docs/estimator.md). */
static const struct est_coef fit_prior = {
    .kind = {[EST_FAM_CONV] = {[EST_K_EMBED] = 1.0, [EST_K_ATTN] = 2.25}},
};

const struct est_coef *est_fit_prior(void)
{
    return &fit_prior;
}

/* The columns of family fam that the fit does not set: fixed[j] for those the model
 * fixes (kind "other"; the per-kind terms of a replayed family, the replay of the
 * others), nosignal[j] (also fixed) for those no usable row has a value in, which keep
 * the prior. Returns the usable rows (not censored, of the family, use[i]). */
static size_t family_columns(const struct est_sample *s, size_t n, const uint8_t *use, int fam,
                             int *fixed, int *nosignal)
{
    double colsum[NCOL] = {0}, x[NCOL];
    size_t rows = 0;
    for (int j = 0; j < NCOL; j++)
        fixed[j] = nosignal[j] = 0;
    fixed[COL_KIND0 + EST_K_OTHER] = 1;
    /* A replay family fits its floor and slope only; the others never the replay. */
    for (int j = COL_KIND0; j < NCOL; j++)
        if ((j == COL_REPLAY) != fam_replay[fam])
            fixed[j] = 1;
    for (size_t i = 0; i < n; i++) {
        if (!use[i] || s[i].censored || s[i].family != fam)
            continue;
        sample_row(&s[i], x);
        for (int j = 0; j < NCOL; j++)
            colsum[j] += fabs(x[j]);
        rows++;
    }
    for (int j = 0; j < NCOL; j++)
        if (!fixed[j] && colsum[j] == 0)
            fixed[j] = nosignal[j] = 1;
    return rows;
}

/* Fits one family; leaves c's other family alone. 1 when fitted, 0 when the family
 * has too few rows (prior kept), negative on a degenerate system. */
static int fit_family(const struct est_sample *s, size_t n, const uint8_t *use, int fam,
                      struct est_coef *c)
{
    double A[NCOL][NCOL] = {{0}}, b[NCOL] = {0}, v[NCOL], x[NCOL];
    int fixed[NCOL], nosignal[NCOL];
    coef_to_vec(c, fam, v);
    size_t rows = family_columns(s, n, use, fam, fixed, nosignal);
    /* Columns the model fixes are 0; columns with no signal keep the prior. */
    for (int j = 0; j < NCOL; j++)
        if (fixed[j] && !nosignal[j])
            v[j] = 0;
    if (rows < NCOL)
        return 0;
    /* sample_fixed below: the replay's peak already holds the parameters */
    c->replay[fam] = fam_replay[fam] ? 1 : 0;
    /* Normal equations of the free columns; the fixed ones move to the target. */
    for (size_t i = 0; i < n; i++) {
        if (!use[i] || s[i].censored || s[i].family != fam)
            continue;
        sample_row(&s[i], x);
        double t = s[i].y - sample_fixed(c, &s[i]);
        for (int j = 0; j < NCOL; j++)
            if (fixed[j])
                t -= v[j] * x[j];
        for (int j = 0; j < NCOL; j++) {
            if (fixed[j])
                continue;
            b[j] += x[j] * t;
            for (int k = 0; k < NCOL; k++)
                if (!fixed[k])
                    A[j][k] += x[j] * x[k];
        }
    }
    /* Projected coordinate descent (box-constrained least squares; the floor free), from 0. A convex
     * quadratic over a box: each sweep does not increase the residual. */
    for (int j = 0; j < NCOL; j++)
        if (!fixed[j])
            v[j] = 0;
    for (int sweep = 0; sweep < 20000; sweep++) {
        double change = 0;
        for (int j = 0; j < NCOL; j++) {
            if (fixed[j] || A[j][j] <= 0)
                continue;
            double g = b[j];
            for (int k = 0; k < NCOL; k++)
                if (k != j && !fixed[k])
                    g -= A[j][k] * v[k];
            double nv = g / A[j][j];
            if (j != COL_FLOOR && nv < 0)
                nv = 0;
            if (j != COL_FLOOR && nv > EST_FIT_MAX_COPIES)
                nv = EST_FIT_MAX_COPIES;
            double d = fabs(nv - v[j]) * sqrt(A[j][j]);
            if (d > change)
                change = d;
            v[j] = nv;
        }
        if (change < 1e-9)
            break;
    }
    for (int j = 0; j < NCOL; j++)
        if (!isfinite(v[j]))
            return -EDOM;
    vec_to_coef(v, fam, c);
    return 1;
}

size_t est_fit_no_signal(const struct est_sample *s, size_t n, const uint8_t *use,
                         const struct est_coef *c, char (*names)[32], double *val, size_t cap)
{
    size_t k = 0;
    for (int fam = 0; fam < EST_FAM_COUNT; fam++) {
        int fixed[NCOL], nosignal[NCOL];
        double v[NCOL];
        if (family_columns(s, n, use, fam, fixed, nosignal) < NCOL)
            continue; /* not fitted at all */
        coef_to_vec(c, fam, v);
        for (int j = 0; j < NCOL; j++) {
            if (!nosignal[j])
                continue;
            if (k < cap) {
                val[k] = v[j];
                const char *f = est_family_name((enum est_family)fam);
                if (j >= COL_KIND0 && j < COL_KIND0 + EST_K_COUNT)
                    snprintf(names[k], 32, "kind_%s_%s",
                             est_kind_name((enum est_kind)(j - COL_KIND0)), f);
                else
                    snprintf(names[k], 32, "%s_%s",
                             j == COL_FLOOR       ? "floor"
                             : j == COL_INPUT     ? "input"
                             : j == COL_TRANSIENT ? "transient"
                             : j == COL_STEP      ? "step"
                             : j == COL_CONCAT    ? "concat"
                                                  : "replay",
                             f);
            }
            k++;
        }
    }
    return k;
}

int est_fit(const struct est_sample *s, size_t n, const uint8_t *use,
            const struct est_coef *prior, struct est_coef *c)
{
    *c = *prior;
    int fitted = 0;
    for (int fam = 0; fam < EST_FAM_COUNT; fam++) {
        int rc = fit_family(s, n, use, fam, c);
        if (rc < 0)
            return rc;
        fitted += rc;
    }
    return fitted ? 0 : -EDOM;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double est_conformal_quantile(double *scores, size_t n, double alpha)
{
    if (n == 0)
        return INFINITY;
    qsort(scores, n, sizeof *scores, cmp_double);
    double r = ceil((double)(n + 1) * (1.0 - alpha) - 1e-9);
    if (r < 1)
        r = 1;
    if (r > (double)n)
        return INFINITY;
    return scores[(size_t)r - 1];
}

int est_calibrate(const struct est_sample *s, size_t n, const uint8_t *use, unsigned k,
                  uint64_t seed, double alpha, const struct est_coef *prior, struct est_coef *c,
                  double *work, uint8_t *fold)
{
    assert(k >= 2 && k <= 64);
    uint64_t st = seed ? seed : 1;
    /* Fold of each usable row: a seeded shuffle, dealt round-robin. */
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        fold[i] = 255;
    size_t *idx = malloc((n ? n : 1) * sizeof *idx);
    uint8_t *tr = malloc(n ? n : 1);
    if (!idx || !tr) {
        free(idx);
        free(tr);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        if (use[i] && !s[i].censored)
            idx[m++] = i;
    for (size_t i = m; i > 1; i--) {
        size_t j = (size_t)(est_rng_next(&st) % i);
        size_t t = idx[i - 1];
        idx[i - 1] = idx[j];
        idx[j] = t;
    }
    for (size_t i = 0; i < m; i++)
        fold[idx[i]] = (uint8_t)(i % k);
    /* Out-of-fold predictions. */
    double *pred = work, *dyn = work + n;
    for (unsigned f = 0; f < k; f++) {
        for (size_t i = 0; i < n; i++)
            tr[i] = use[i] && fold[i] != 255 && fold[i] != f;
        struct est_coef cf;
        int rc = est_fit(s, n, tr, prior, &cf);
        if (rc < 0) {
            free(idx);
            free(tr);
            return rc;
        }
        for (size_t i = 0; i < n; i++)
            if (fold[i] == f) {
                pred[i] = est_sample_predict(&cf, &s[i]);
                dyn[i] = pred[i] - cf.floor_mib[s[i].family];
                if (dyn[i] < 0)
                    dyn[i] = 0;
            }
    }
    /* Per family: pick scale0 from the grid minimising the mean bound width, with the
     * quantile taken per size band (Mondrian conformal: each band's coverage holds on
     * its own) and the family's pooled quantile for bands with few scores. */
    static const double grid[] = {0, 32, 64, 128, 256, 512, 1024, 2048, 4096};
    double *sc = malloc((m ? m : 1) * sizeof *sc);
    if (!sc) {
        free(idx);
        free(tr);
        return -ENOMEM;
    }
    for (int fam = 0; fam < EST_FAM_COUNT; fam++) {
        double best_w = INFINITY, best_q = 0, best_s0 = 256;
        double best_qb[EST_NBANDS] = {0};
        size_t best_nb[EST_NBANDS] = {0};
        size_t cnt = 0;
        for (size_t g = 0; g < sizeof grid / sizeof grid[0]; g++) {
            double s0 = grid[g] > 0 ? grid[g] : 1;
            cnt = 0;
            for (size_t i = 0; i < n; i++)
                if (fold[i] != 255 && s[i].family == fam)
                    sc[cnt++] = (s[i].y - pred[i]) / (s0 + dyn[i]);
            if (cnt == 0)
                break;
            double a = alpha > 0 ? alpha : 1.0 / (double)(cnt + 1);
            double q = est_conformal_quantile(sc, cnt, a);
            if (q < 0)
                q = 0;
            double qb[EST_NBANDS];
            size_t nb[EST_NBANDS];
            for (int b = 0; b < EST_NBANDS; b++) {
                nb[b] = 0;
                for (size_t i = 0; i < n; i++)
                    if (fold[i] != 255 && s[i].family == fam && est_band_of(dyn[i]) == b)
                        sc[nb[b]++] = (s[i].y - pred[i]) / (s0 + dyn[i]);
                double ab = alpha > 0 ? alpha : 1.0 / (double)(nb[b] + 1);
                qb[b] = nb[b] ? est_conformal_quantile(sc, nb[b], ab) : q;
                if (qb[b] < 0)
                    qb[b] = 0;
            }
            double width = 0;
            for (size_t i = 0; i < n; i++) {
                if (fold[i] == 255 || s[i].family != fam)
                    continue;
                int b = est_band_of(dyn[i]);
                width += (nb[b] >= EST_BAND_MIN ? qb[b] : q) * (s0 + dyn[i]);
            }
            width /= (double)cnt;
            if (width < best_w) {
                best_w = width;
                best_q = q;
                best_s0 = s0;
                memcpy(best_qb, qb, sizeof qb);
                memcpy(best_nb, nb, sizeof nb);
            }
        }
        if (cnt) {
            c->q[fam] = best_q;
            c->scale0_mib[fam] = best_s0;
            c->ncal[fam] = cnt;
            memcpy(c->qband[fam], best_qb, sizeof best_qb);
            memcpy(c->ncalband[fam], best_nb, sizeof best_nb);
            c->level = alpha > 0 ? 1 - alpha : 0; /* 0: "largest score" */
        } else {
            c->q[fam] = prior->q[fam];
            c->scale0_mib[fam] = prior->scale0_mib[fam];
            c->ncal[fam] = prior->ncal[fam];
            memcpy(c->qband[fam], prior->qband[fam], sizeof c->qband[fam]);
            memcpy(c->ncalband[fam], prior->ncalband[fam], sizeof c->ncalband[fam]);
        }
    }
    free(sc);
    free(idx);
    free(tr);
    return 0;
}
