/* Strict, bounded parsers of model descriptions into an est_model (estimate.h).
 *
 * Formats: torchsummary text, torchinfo tables, Keras model.summary() (TF2 and
 * Keras 3 box style), the printed module tree of a PyTorch / Hugging Face model, and
 * a plain layer-table CSV (columns type,out_elems,params[,count][,per_token]; a row
 * of type "input" gives the input elements per sample; a type is a kind name, a layer
 * class of a kind or a view-like class, anything else is refused; embed and attn rows
 * must be per token).
 *
 * All parsers work on a caller-owned buffer (no I/O), never read past `len`, reject
 * NUL bytes, lines longer than EST_MAX_LINE and more than EST_MAX_LAYERS layers, and
 * report errors as "FILE:LINE: problem" with a negative errno. */
#ifndef CARMA_ESTIMATE_PARSE_H
#define CARMA_ESTIMATE_PARSE_H

#include <stddef.h>

#include "estimate/estimate.h"
#include "util/err.h"

#define EST_MAX_LINE 4096
#define EST_MAX_INPUT (16u << 20)
#define EST_MAX_DEPTH 64

/* Guesses the format from the text; EST_FMT_NONE when it is none of them. */
enum est_format est_detect(const char *buf, size_t len);

/* Detects the format and parses. m must be initialised (est_model_init). A module tree
 * given m->image_h x m->image_w that is a vision transformer is read as a sequence
 * model, m->tokens its patches and a class token. */
int est_parse(const char *buf, size_t len, const char *file, struct est_model *m,
              struct carma_err *err);

int est_parse_torchsummary(const char *buf, size_t len, const char *file, struct est_model *m,
                           struct carma_err *err);
int est_parse_torchinfo(const char *buf, size_t len, const char *file, struct est_model *m,
                        struct carma_err *err);
int est_parse_keras(const char *buf, size_t len, const char *file, struct est_model *m,
                    struct carma_err *err);
/* -EAGAIN (err set) when m has an image size and the tree is a sequence model:
 * est_parse then reads it again as a vision transformer. */
int est_parse_modtree(const char *buf, size_t len, const char *file, struct est_model *m,
                      struct carma_err *err);
int est_parse_csv(const char *buf, size_t len, const char *file, struct est_model *m,
                  struct carma_err *err);

/* Parses "1,179,776" / "1179776" / "--" (0) strictly over [s, s+n). Returns 0 or
 * -EINVAL. Exposed for tests. */
int est_parse_count(const char *s, size_t n, uint64_t *out);

/* Parses a shape "[-1, 64, 8, 8]", "(None, 26, 26, 32)", "[(None, 28, 28, 1)]" or
 * "[[-1, 10], [-1, 20]]" over [s, s+n): elements per sample (the first dimension of
 * each tensor is the batch and is dropped; several tensors add up). Returns 0 or
 * -EINVAL. */
int est_parse_shape(const char *s, size_t n, uint64_t *elems);

#endif
