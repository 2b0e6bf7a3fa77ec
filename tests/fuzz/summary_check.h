/* Shared body of the model-summary fuzz targets: run one parser, then the estimate
 * over whatever it accepted. Every error must name the file; every accepted model must
 * give a finite estimate with bound >= estimate; auto-detection must not crash. */
#ifndef CARMA_FUZZ_SUMMARY_CHECK_H
#define CARMA_FUZZ_SUMMARY_CHECK_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "estimate/estimate.h"
#include "estimate/parse.h"
#include "estimate/replay.h"

static inline int summary_check(int (*parse)(const char *, size_t, const char *,
                                            struct est_model *, struct carma_err *),
                                const uint8_t *data, size_t size)
{
    static struct est_layer layers[EST_MAX_LAYERS];
    static struct est_replay_work work;
    struct est_model m;
    struct carma_err err;
    /* the input's length also picks the image size of convolutional module trees:
     * none, ImageNet's, or one too small for most windows */
    uint32_t image = size & 4 ? (size & 8 ? 7 : 224) : 0;
    /* and --heads: none, 8, or 7 (which divides few widths) */
    uint32_t heads = size & 256 ? (size & 512 ? 7 : 8) : 0;
    est_model_init(&m, layers, EST_MAX_LAYERS);
    m.image_h = m.image_w = image;
    m.heads = heads;
    int rc = parse((const char *)data, size, "fuzz", &m, &err);
    if (rc < 0) {
        if (strncmp(err.msg, "fuzz", 4) != 0)
            __builtin_trap();
        return 0;
    }
    if (m.n > EST_MAX_LAYERS || m.frozen > m.params)
        __builtin_trap();
    for (size_t i = 0; i < m.n; i++) /* frozen parameters are some of a layer's own */
        if (m.layers[i].frozen > m.layers[i].params)
            __builtin_trap();
    /* a printed trainable count that was placed is what the rows train */
    if (m.trainable_line && !m.trainable_unplaced && m.params - m.frozen != m.trainable_printed)
        __builtin_trap();
    /* the input's length picks the replay's variants: torchsummary's pass, Hopper's
     * cuBLAS workspace, gradient checkpointing, mixed precision, DDP, eager attention,
     * gradient accumulation */
    struct est_opts o = {.batch = 64, .seq = m.tokens ? m.tokens : 512,
                         .optimizer = EST_OPT_ADAMW, .summary_pass = (int)(size & 1),
                         .cublas_workspace_kib = size & 2 ? EST_CUBLAS_WS_HOPPER_KIB : 0,
                         .grad_checkpoint = (int)((size >> 4) & 1),
                         .precision = size & 32 ? EST_PREC_AMP : EST_PREC_FP32,
                         .gpus = size & 64 ? 2 : 1,
                         .attention = size & 128 ? EST_ATTN_EAGER : EST_ATTN_SHOWN,
                         .grad_accum = (int)((size >> 10) & 1)};
    struct est_result r;
    if (est_compute(&m, est_coef_default(), &o, &work, &r, &err) == 0 &&
        (!isfinite(r.estimate_mib) || !(r.bound_mib >= r.estimate_mib)))
        __builtin_trap();
    /* mixture-of-experts blocks: each router right before its experts, every expert row
     * of a block of 2 or more; the replay routed to some k of them (--experts-per-token) */
    for (size_t i = 0; i < m.n; i++) {
        const struct est_layer *l = &m.layers[i];
        if ((l->moe && l->experts < 2) || (!l->moe && l->experts) ||
            ((l->moe & EST_MOE_FIRST) && !(l->moe & EST_MOE_EXPERT)) ||
            ((l->moe & EST_MOE_ROUTER) &&
             (i + 1 >= m.n || !(m.layers[i + 1].moe & EST_MOE_EXPERT))))
            __builtin_trap();
    }
    if (m.moe_blocks) {
        if (m.moe_experts_min < 2 || m.moe_experts_max < m.moe_experts_min || !m.moe_line)
            __builtin_trap();
        o.experts_per_token = 1 + (uint32_t)((size >> 11) % m.moe_experts_min);
        if (est_compute(&m, est_coef_default(), &o, &work, &r, &err) == 0 &&
            (!isfinite(r.estimate_mib) || !(r.bound_mib >= r.estimate_mib)))
            __builtin_trap();
    }
    est_model_init(&m, layers, EST_MAX_LAYERS);
    m.image_h = m.image_w = image;
    m.heads = heads;
    (void)est_parse((const char *)data, size, "fuzz", &m, &err);
    return 0;
}

#endif
