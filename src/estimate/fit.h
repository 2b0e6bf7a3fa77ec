/* Fitting the estimator's coefficients and its conformal bound (DESIGN.md §5).
 *
 * Training data are GPUMemNet's measurement CSVs (data/estimator/gpumemnet-*.csv):
 * one row per training run with the per-layer tuples `[('linear', out, params), ...]`,
 * the batch size and the measured peak. est_sample_parse turns one row into a design
 * row; est_fit fits the floors (free) and the per-kind coefficients (non-negative
 * least squares, by hand: projected coordinate descent on the normal equations);
 * est_calibrate takes the conformal quantile of out-of-fold normalised residuals.
 * Pure maths over caller-owned arrays; no I/O. */
#ifndef CARMA_ESTIMATE_FIT_H
#define CARMA_ESTIMATE_FIT_H

#include <stddef.h>
#include <stdint.h>

#include "estimate/estimate.h"
#include "util/err.h"

struct est_sample {
    double feat[EST_NFEAT]; /* est_features at the run's batch (fp32, adam) */
    double fixed_mib;       /* weights + gradients + optimizer state: not fitted */
    double replay_mib;      /* est_replay's peak at the run's batch (adam, fp32) */
    double y;               /* measured peak, MiB */
    uint32_t batch;
    uint8_t family;         /* enum est_family */
    uint8_t censored;       /* the peak sat at the GPU's capacity: a lower bound */
    uint8_t dataset;        /* caller's tag (0 mlp, 1 cnn) */
};

/* Parses a GPUMemNet tuple list "[('conv2d', 2967048, 2744), ('GELU', ...), ...]"
 * into m (initialised by the caller). Returns 0 or -EINVAL with err (file:line). */
int est_tuples_parse(const char *s, size_t n, const char *file, size_t line,
                     struct est_model *m, struct carma_err *err);

/* Builds a sample from a parsed model, the batch, the input elements per sample and
 * the measured peak (optimizer adam, fp32: GPUMemNet's runs), replaying the training
 * steps in `work` when its family is estimated by replay (replay_mib stays 0 otherwise).
 * cap_mib > 0 marks rows whose peak is within 2% of the GPU's
 * capacity as censored. Returns 0, or -E2BIG when the model is too large to replay. */
struct est_replay_work;
int est_sample_make(const struct est_model *m, uint32_t batch, uint64_t input, double y,
                    double cap_mib, struct est_replay_work *work, struct est_sample *out);

/* Prediction of the fitted model for a sample (the same sum as est_compute). */
double est_sample_predict(const struct est_coef *c, const struct est_sample *s);

/* The prior est_fit starts from for `carma eval-estimator --fit`: fixed in fit.c (all
 * zero but two hand-set conv-family multipliers, documented there), so that the fitted
 * table follows from the data and this prior alone, never from the shipped table. */
const struct est_coef *est_fit_prior(void);

/* The coefficients est_fit keeps from its prior on the rows with use[i] (columns no
 * usable row of a fitted family has a value in; those the model fixes are not listed):
 * their names as est_coef_write writes them ("kind_embed_conv") and their values in c,
 * up to cap of them, into names[] and val[]. Returns how many there are. */
size_t est_fit_no_signal(const struct est_sample *s, size_t n, const uint8_t *use,
                         const struct est_coef *c, char (*names)[32], double *val, size_t cap);

/* Fits c's floors and the model of each family on the samples with use[i] != 0 and
 * not censored: the dense family as floor + slope x the replay's peak (c->replay),
 * the conv family as the per-kind model (kind/input/transient/step/concat
 * coefficients, box-constrained). Columns with no signal keep prior's value; kind
 * "other" stays 0. Returns 0, or -EDOM when the system is degenerate. */
int est_fit(const struct est_sample *s, size_t n, const uint8_t *use,
            const struct est_coef *prior, struct est_coef *c);

/* Split-conformal quantile of scores[0..n) (sorted in place) at miscoverage alpha:
 * the ceil((n+1)(1-alpha))-th smallest; +inf when that rank exceeds n. */
double est_conformal_quantile(double *scores, size_t n, double alpha);

/* Cross-conformal calibration of c (already fitted on the `use` rows): k-fold
 * refits inside the `use` rows give out-of-fold normalised residuals
 * (y - yhat) / (scale0 + yhat - floor) per family; scale0 is picked per family from
 * a fixed grid to minimise the mean bound width, q is the quantile at alpha
 * (alpha <= 0: 1/(n+1), i.e. the largest score). `work` holds 2*n doubles and
 * `fold` n bytes of scratch. seed fixes the fold assignment. */
int est_calibrate(const struct est_sample *s, size_t n, const uint8_t *use, unsigned k,
                  uint64_t seed, double alpha, const struct est_coef *prior, struct est_coef *c,
                  double *work, uint8_t *fold);

/* Deterministic xorshift64* generator for splits (seed != 0). */
uint64_t est_rng_next(uint64_t *state);

/* Class accuracy helper: floor(a / width) == floor(b / width). */
int est_same_class(double a, double b, double width);

#endif
