/* Mixture-of-experts blocks in module trees (docs/estimator.md): which prints hold one
 * (a ModuleList or ModuleDict of identical experts beside a router with one score per
 * expert) and which do not, the rows the parser makes of one, the replay's routing
 * (--experts-per-token k: every expert on k / E of the tokens; without it, or with k = E,
 * every token through every expert) and what it refuses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimate/estimate.h"
#include "estimate/parse.h"
#include "estimate/replay.h"

static struct est_layer layers[EST_MAX_LAYERS];
static struct est_replay_work rwork;

static int parse_str(const char *s, struct est_model *m, struct carma_err *err)
{
    est_model_init(m, layers, EST_MAX_LAYERS);
    return est_parse(s, strlen(s), "t.txt", m, err);
}

/* A Mixtral-shaped print: L layers of E experts, width D, expert width I, its experts
 * printed as one repeat. The router's and experts' rows are checked below. */
static void mixtral(char *buf, size_t cap, unsigned l, unsigned e, unsigned d, unsigned i)
{
    snprintf(buf, cap,
             "MixtralForCausalLM(\n"
             "  (model): MixtralModel(\n"
             "    (embed_tokens): Embedding(1000, %u)\n"
             "    (layers): ModuleList(\n"
             "      (0-%u): %u x MixtralDecoderLayer(\n"
             "        (self_attn): MixtralSdpaAttention(\n"
             "          (q_proj): Linear(in_features=%u, out_features=%u, bias=False)\n"
             "          (k_proj): Linear(in_features=%u, out_features=%u, bias=False)\n"
             "          (v_proj): Linear(in_features=%u, out_features=%u, bias=False)\n"
             "          (o_proj): Linear(in_features=%u, out_features=%u, bias=False)\n"
             "        )\n"
             "        (block_sparse_moe): MixtralSparseMoeBlock(\n"
             "          (gate): Linear(in_features=%u, out_features=%u, bias=False)\n"
             "          (experts): ModuleList(\n"
             "            (0-%u): %u x MixtralBlockSparseTop2MLP(\n"
             "              (w1): Linear(in_features=%u, out_features=%u, bias=False)\n"
             "              (w2): Linear(in_features=%u, out_features=%u, bias=False)\n"
             "              (w3): Linear(in_features=%u, out_features=%u, bias=False)\n"
             "              (act_fn): SiLU()\n"
             "            )\n"
             "          )\n"
             "        )\n"
             "        (input_layernorm): MixtralRMSNorm((%u,), eps=1e-05)\n"
             "        (post_attention_layernorm): MixtralRMSNorm((%u,), eps=1e-05)\n"
             "      )\n"
             "    )\n"
             "    (norm): MixtralRMSNorm((%u,), eps=1e-05)\n"
             "  )\n"
             "  (lm_head): Linear(in_features=%u, out_features=1000, bias=False)\n"
             ")\n",
             d, l - 1, l, d, d, d, d, d, d, d, d, d, e, e - 1, e, d, i, i, d, d, i, d, d, d, d);
}

/* The row of the model's first router, or SIZE_MAX. */
static size_t router_row(const struct est_model *m)
{
    for (size_t r = 0; r < m->n; r++)
        if (m->layers[r].moe & EST_MOE_ROUTER)
            return r;
    return SIZE_MAX;
}

static void test_moe_repeat_rows(void **state)
{
    (void)state;
    static char buf[8192];
    struct est_model m;
    struct carma_err err;
    mixtral(buf, sizeof buf, 2, 8, 64, 224);
    assert_int_equal(parse_str(buf, &m, &err), 0);
    assert_int_equal(m.moe_blocks, 2);
    assert_int_equal(m.moe_experts_min, 8);
    assert_int_equal(m.moe_experts_max, 8);
    assert_int_equal(m.moe_line, 12); /* the MixtralSparseMoeBlock( line */
    assert_int_equal(m.moe_gate_line, 0);
    size_t r = router_row(&m);
    assert_true(r != SIZE_MAX);
    const struct est_layer *g = &m.layers[r];
    assert_int_equal(g->kind, EST_K_LINEAR);
    assert_int_equal(g->out, 8);
    assert_int_equal(g->experts, 8);
    assert_int_equal(g->count, 2);
    /* the expert: a gated MLP in call order (gate, act, up, down), its repeats the
     * router's times E, its first row reading the gathered tokens, its last weighted */
    const struct est_layer *x = &m.layers[r + 1];
    assert_int_equal(x[0].kind, EST_K_LINEAR);
    assert_int_equal(x[1].kind, EST_K_ACT);
    assert_int_equal(x[2].kind, EST_K_LINEAR);
    assert_true(x[2].flags & EST_LF_GATED);
    assert_int_equal(x[3].kind, EST_K_LINEAR);
    assert_int_equal(x[3].out, 64);
    for (int k = 0; k < 4; k++) {
        assert_true(x[k].moe & EST_MOE_EXPERT);
        assert_int_equal(x[k].experts, 8);
        assert_int_equal(x[k].count, 16);
        assert_int_equal(x[k].unit, 0);
    }
    assert_int_equal(x[0].moe, EST_MOE_EXPERT | EST_MOE_FIRST);
    assert_int_equal(x[3].moe, EST_MOE_EXPERT | EST_MOE_LAST);
    /* the norms after the block are no experts */
    assert_int_equal(m.layers[r + 5].kind, EST_K_NORM);
    assert_int_equal(m.layers[r + 5].moe, 0);
    /* parameters as printed: the router's 64 x 8 and 8 experts' 3 x 64 x 224 a layer */
    uint64_t per_layer = 4 * 64 * 64 + 64 * 8 + 8 * 3 * 64 * 224 + 2 * 64;
    assert_int_equal(m.params, 1000 * 64 + 2 * per_layer + 64 + 64 * 1000);

    /* experts of three equal projections (d = I: w1, w2, w3 the same shape) are gated
     * MLPs too: the one print whose down projection its shape does not tell */
    mixtral(buf, sizeof buf, 1, 4, 64, 64);
    assert_int_equal(parse_str(buf, &m, &err), 0);
    r = router_row(&m);
    assert_true(r != SIZE_MAX);
    assert_int_equal(m.layers[r + 2].kind, EST_K_ACT);
    assert_true(m.layers[r + 3].flags & EST_LF_GATED);
    assert_true(m.layers[r + 4].moe & EST_MOE_LAST);
}

/* DeepSeek's layout: experts first, then a gate printed without sizes (its weight a bare
 * parameter), then shared experts; a first layer with a dense MLP. */
static const char deepseek[] =
    "DeepseekV2ForCausalLM(\n"
    "  (model): DeepseekV2Model(\n"
    "    (embed_tokens): Embedding(1000, 64)\n"
    "    (layers): ModuleList(\n"
    "      (0): DeepseekV2DecoderLayer(\n"
    "        (self_attn): DeepseekV2Attention(\n"
    "          (q_proj): Linear(in_features=64, out_features=64, bias=False)\n"
    "          (k_proj): Linear(in_features=64, out_features=64, bias=False)\n"
    "          (v_proj): Linear(in_features=64, out_features=64, bias=False)\n"
    "          (o_proj): Linear(in_features=64, out_features=64, bias=False)\n"
    "        )\n"
    "        (mlp): DeepseekV2MLP(\n"
    "          (gate_proj): Linear(in_features=64, out_features=160, bias=False)\n"
    "          (up_proj): Linear(in_features=64, out_features=160, bias=False)\n"
    "          (down_proj): Linear(in_features=160, out_features=64, bias=False)\n"
    "          (act_fn): SiLU()\n"
    "        )\n"
    "        (input_layernorm): DeepseekV2RMSNorm()\n"
    "        (post_attention_layernorm): DeepseekV2RMSNorm()\n"
    "      )\n"
    "      (1-2): 2 x DeepseekV2DecoderLayer(\n"
    "        (self_attn): DeepseekV2Attention(\n"
    "          (q_proj): Linear(in_features=64, out_features=64, bias=False)\n"
    "          (k_proj): Linear(in_features=64, out_features=64, bias=False)\n"
    "          (v_proj): Linear(in_features=64, out_features=64, bias=False)\n"
    "          (o_proj): Linear(in_features=64, out_features=64, bias=False)\n"
    "        )\n"
    "        (mlp): DeepseekV2MoE(\n"
    "          (experts): ModuleList(\n"
    "            (0-5): 6 x DeepseekV2MLP(\n"
    "              (gate_proj): Linear(in_features=64, out_features=32, bias=False)\n"
    "              (up_proj): Linear(in_features=64, out_features=32, bias=False)\n"
    "              (down_proj): Linear(in_features=32, out_features=64, bias=False)\n"
    "              (act_fn): SiLU()\n"
    "            )\n"
    "          )\n"
    "          (gate): MoEGate()\n"
    "          (shared_experts): DeepseekV2MLP(\n"
    "            (gate_proj): Linear(in_features=64, out_features=64, bias=False)\n"
    "            (up_proj): Linear(in_features=64, out_features=64, bias=False)\n"
    "            (down_proj): Linear(in_features=64, out_features=64, bias=False)\n"
    "            (act_fn): SiLU()\n"
    "          )\n"
    "        )\n"
    "        (input_layernorm): DeepseekV2RMSNorm()\n"
    "        (post_attention_layernorm): DeepseekV2RMSNorm()\n"
    "      )\n"
    "    )\n"
    "    (norm): DeepseekV2RMSNorm()\n"
    "  )\n"
    "  (lm_head): Linear(in_features=64, out_features=1000, bias=False)\n"
    ")\n";

static void test_moe_gate_after_experts(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    assert_int_equal(parse_str(deepseek, &m, &err), 0);
    assert_int_equal(m.moe_blocks, 2);
    assert_int_equal(m.moe_experts_min, 6);
    assert_int_equal(m.moe_line, 28);
    assert_int_equal(m.moe_gate_line, 37);
    size_t r = router_row(&m);
    assert_true(r != SIZE_MAX);
    /* the gate, sized 64 -> 6 without bias, moved before the experts: the scores run
     * first */
    assert_int_equal(m.layers[r].kind, EST_K_LINEAR);
    assert_int_equal(m.layers[r].out, 6);
    assert_int_equal(m.layers[r].params, 6 * 64);
    assert_int_equal(m.layers[r].count, 2);
    assert_true(m.layers[r + 1].moe & EST_MOE_FIRST);
    assert_int_equal(m.layers[r + 1].count, 12);
    assert_true(m.layers[r + 4].moe & EST_MOE_LAST);
    /* the shared experts stay as they are, after the routed ones */
    for (size_t k = r + 5; k < r + 9; k++) {
        assert_int_equal(m.layers[k].moe, 0);
        assert_int_equal(m.layers[k].count, 2);
    }
    /* the dense first layer has no router */
    for (size_t k = 0; k < r; k++)
        assert_int_equal(m.layers[k].moe, 0);
    uint64_t dense = 4 * 64 * 64 + 3 * 64 * 160 + 2 * 64;
    uint64_t moe = 4 * 64 * 64 + 6 * 64 + 6 * 3 * 64 * 32 + 3 * 64 * 64 + 2 * 64;
    assert_int_equal(m.params, 1000 * 64 + dense + 2 * moe + 64 + 64 * 1000);
}

/* Switch's layout: a router block holding its classifier, experts written out one by one
 * in a ModuleDict (no repeat). */
static void test_moe_written_out(void **state)
{
    (void)state;
    static char buf[16384];
    struct est_model m;
    struct carma_err err;
    size_t o = (size_t)snprintf(buf, sizeof buf,
                                "SwitchEncoder(\n"
                                "  (embed_tokens): Embedding(1000, 64)\n"
                                "  (layer): ModuleList(\n"
                                "    (0-1): 2 x SwitchLayer(\n"
                                "      (attention): SwitchAttention(\n"
                                "        (q): Linear(in_features=64, out_features=64, bias=False)\n"
                                "        (k): Linear(in_features=64, out_features=64, bias=False)\n"
                                "        (v): Linear(in_features=64, out_features=64, bias=False)\n"
                                "        (o): Linear(in_features=64, out_features=64, bias=False)\n"
                                "      )\n"
                                "      (mlp): SwitchTransformersSparseMLP(\n"
                                "        (router): SwitchTransformersTop1Router(\n"
                                "          (classifier): Linear(in_features=64, out_features=4, "
                                "bias=False)\n"
                                "        )\n"
                                "        (experts): ModuleDict(\n");
    for (int e = 0; e < 4; e++)
        o += (size_t)snprintf(buf + o, sizeof buf - o,
                              "          (expert_%d): SwitchTransformersDenseActDense(\n"
                              "            (wi): Linear(in_features=64, out_features=256, "
                              "bias=False)\n"
                              "            (wo): Linear(in_features=256, out_features=64, "
                              "bias=False)\n"
                              "            (dropout): Dropout(p=0.1, inplace=False)\n"
                              "            (act): ReLU()\n"
                              "          )\n",
                              e);
    snprintf(buf + o, sizeof buf - o,
             "        )\n"
             "      )\n"
             "      (layer_norm): LayerNorm((64,), eps=1e-06)\n"
             "    )\n"
             "  )\n"
             "  (lm_head): Linear(in_features=64, out_features=1000, bias=False)\n"
             ")\n");
    assert_int_equal(parse_str(buf, &m, &err), 0);
    assert_int_equal(m.moe_blocks, 2);
    assert_int_equal(m.moe_experts_min, 4);
    size_t r = router_row(&m);
    assert_true(r != SIZE_MAX);
    assert_int_equal(m.layers[r].out, 4);
    /* four entries of four rows (wi, act, wo, dropout), each with its first and last */
    for (size_t e = 0; e < 4; e++) {
        const struct est_layer *x = &m.layers[r + 1 + 4 * e];
        assert_int_equal(x[0].moe, EST_MOE_EXPERT | EST_MOE_FIRST);
        assert_int_equal(x[1].moe, EST_MOE_EXPERT);
        assert_int_equal(x[2].moe, EST_MOE_EXPERT);
        assert_int_equal(x[3].moe, EST_MOE_EXPERT | EST_MOE_LAST);
        for (int k = 0; k < 4; k++)
            assert_int_equal(x[k].count, 2);
    }
    assert_int_equal(m.layers[r + 17].kind, EST_K_NORM);
    assert_int_equal(m.layers[r + 17].moe, 0);
}

/* Prints that hold no mixture of experts, though something looks like one. */
static void test_moe_not_experts(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    static const char *const prints[] = {
        /* a ModuleList of transformer layers beside a head with as many outputs */
        "Model(\n"
        "  (layers): ModuleList(\n"
        "    (0-3): 4 x Block(\n"
        "      (attn): SelfAttention(\n"
        "        (q): Linear(in_features=64, out_features=64, bias=False)\n"
        "        (k): Linear(in_features=64, out_features=64, bias=False)\n"
        "        (v): Linear(in_features=64, out_features=64, bias=False)\n"
        "        (o): Linear(in_features=64, out_features=64, bias=False)\n"
        "      )\n"
        "      (fc1): Linear(in_features=64, out_features=256, bias=False)\n"
        "      (act): GELU(approximate='none')\n"
        "      (fc2): Linear(in_features=256, out_features=64, bias=False)\n"
        "    )\n"
        "  )\n"
        "  (head): Linear(in_features=64, out_features=4, bias=False)\n"
        ")\n",
        /* MLP blocks with norms, the model's own embedding */
        "Model(\n"
        "  (embed): Embedding(100, 64)\n"
        "  (blocks): ModuleList(\n"
        "    (0-5): 6 x MLPBlock(\n"
        "      (fc1): Linear(in_features=64, out_features=256, bias=False)\n"
        "      (act): GELU(approximate='none')\n"
        "      (fc2): Linear(in_features=256, out_features=64, bias=False)\n"
        "    )\n"
        "  )\n"
        "  (head): Linear(in_features=64, out_features=6, bias=False)\n"
        ")\n",
        /* a classifier with a bias, the block's class not saying MoE */
        "Model(\n"
        "  (blocks): ModuleList(\n"
        "    (0-5): 6 x MLPBlock(\n"
        "      (fc1): Linear(in_features=64, out_features=256, bias=True)\n"
        "      (act): ReLU()\n"
        "      (fc2): Linear(in_features=256, out_features=64, bias=True)\n"
        "    )\n"
        "  )\n"
        "  (head): Linear(in_features=64, out_features=6, bias=True)\n"
        ")\n",
        /* entries that differ */
        "SparseMoeBlock(\n"
        "  (gate): Linear(in_features=64, out_features=2, bias=False)\n"
        "  (experts): ModuleList(\n"
        "    (0): MLP(\n"
        "      (fc1): Linear(in_features=64, out_features=256, bias=False)\n"
        "      (act): ReLU()\n"
        "      (fc2): Linear(in_features=256, out_features=64, bias=False)\n"
        "    )\n"
        "    (1): MLP(\n"
        "      (fc1): Linear(in_features=64, out_features=128, bias=False)\n"
        "      (act): ReLU()\n"
        "      (fc2): Linear(in_features=128, out_features=64, bias=False)\n"
        "    )\n"
        "  )\n"
        ")\n",
        /* no router with one score per expert */
        "SparseMoeBlock(\n"
        "  (gate): Linear(in_features=64, out_features=3, bias=False)\n"
        "  (experts): ModuleList(\n"
        "    (0-3): 4 x MLP(\n"
        "      (fc1): Linear(in_features=64, out_features=256, bias=False)\n"
        "      (act): ReLU()\n"
        "      (fc2): Linear(in_features=256, out_features=64, bias=False)\n"
        "    )\n"
        "  )\n"
        ")\n",
        /* a gate printed without sizes under a block whose class does not say MoE */
        "SparseBlock(\n"
        "  (experts): ModuleList(\n"
        "    (0-3): 4 x MLP(\n"
        "      (fc1): Linear(in_features=64, out_features=256, bias=False)\n"
        "      (act): ReLU()\n"
        "      (fc2): Linear(in_features=256, out_features=64, bias=False)\n"
        "    )\n"
        "  )\n"
        "  (gate): TopkRouter()\n"
        ")\n",
        /* experts with a norm inside: not MLPs */
        "SparseMoeBlock(\n"
        "  (gate): Linear(in_features=64, out_features=4, bias=False)\n"
        "  (experts): ModuleList(\n"
        "    (0-3): 4 x MLP(\n"
        "      (fc1): Linear(in_features=64, out_features=256, bias=False)\n"
        "      (norm): LayerNorm((256,), eps=1e-05)\n"
        "      (fc2): Linear(in_features=256, out_features=64, bias=False)\n"
        "    )\n"
        "  )\n"
        ")\n",
    };
    for (size_t i = 0; i < sizeof prints / sizeof prints[0]; i++) {
        assert_int_equal(parse_str(prints[i], &m, &err), 0);
        assert_int_equal(m.moe_blocks, 0);
        for (size_t r = 0; r < m.n; r++)
            assert_int_equal(m.layers[r].moe, 0);
    }
}

/* An MoE block outside any ModuleList layer: its experts are no checkpointing units. */
static void test_moe_units(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    assert_int_equal(parse_str("Net(\n"
                               "  (embed): Embedding(100, 64)\n"
                               "  (moe): SparseMoeBlock(\n"
                               "    (gate): Linear(in_features=64, out_features=4, bias=False)\n"
                               "    (experts): ModuleList(\n"
                               "      (0-3): 4 x MLP(\n"
                               "        (fc1): Linear(in_features=64, out_features=256, "
                               "bias=False)\n"
                               "        (act): ReLU()\n"
                               "        (fc2): Linear(in_features=256, out_features=64, "
                               "bias=False)\n"
                               "      )\n"
                               "    )\n"
                               "  )\n"
                               "  (head): Linear(in_features=64, out_features=100, bias=False)\n"
                               ")\n",
                               &m, &err),
                     0);
    assert_int_equal(m.moe_blocks, 1);
    for (size_t r = 0; r < m.n; r++)
        assert_int_equal(m.layers[r].unit, 0);
    struct est_opts o = {.batch = 4, .seq = 64, .optimizer = EST_OPT_ADAMW,
                         .grad_checkpoint = 1};
    struct est_result res;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &res, &err), 0);
    assert_int_equal(res.checkpointed_units, 0);
}

/* Fused experts print no weights: refused by line rather than read as nothing. */
static void test_moe_fused_refused(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    assert_int_equal(parse_str("GraniteMoeMoE(\n"
                               "  (activation): SiLU()\n"
                               "  (input_linear): GraniteMoeParallelExperts()\n"
                               "  (output_linear): GraniteMoeParallelExperts()\n"
                               "  (router): GraniteMoeTopKGating(\n"
                               "    (layer): Linear(in_features=64, out_features=8, "
                               "bias=False)\n"
                               "  )\n"
                               ")\n",
                               &m, &err),
                     -EINVAL);
    assert_non_null(strstr(err.msg, "t.txt:3: GraniteMoeParallelExperts: fused experts that "
                                    "the print does not size"));
    assert_int_equal(parse_str("MixtralSparseMoeBlock(\n"
                               "  (gate): Linear(in_features=64, out_features=8, bias=False)\n"
                               "  (experts): MixtralExperts(\n"
                               "    (act_fn): SiLU()\n"
                               "  )\n"
                               ")\n",
                               &m, &err),
                     -EINVAL);
    assert_non_null(strstr(err.msg, "t.txt:3: MixtralExperts: fused experts"));
    /* a block named so that prints its experts' weights is read */
    assert_int_equal(parse_str("MoE(\n"
                               "  (gate): Linear(in_features=64, out_features=2, bias=False)\n"
                               "  (experts): MoEExperts(\n"
                               "    (fc1): Linear(in_features=64, out_features=256, "
                               "bias=False)\n"
                               "  )\n"
                               ")\n",
                               &m, &err),
                     0);
}

static void compute(const struct est_model *m, struct est_opts *o, uint32_t k,
                    struct est_result *r)
{
    struct carma_err err;
    o->experts_per_token = k;
    int rc = est_compute(m, est_coef_default(), o, &rwork, r, &err);
    if (rc)
        fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, 0);
}

static void same_result(const struct est_result *a, const struct est_result *b)
{
    assert_true(a->estimate_mib == b->estimate_mib);
    assert_true(a->bound_mib == b->bound_mib);
    assert_true(a->activations_mib == b->activations_mib);
    assert_true(a->transient_mib == b->transient_mib);
    assert_true(a->weights_mib == b->weights_mib);
    assert_int_equal(a->peak_phase, b->peak_phase);
    assert_int_equal(a->peak_iteration, b->peak_iteration);
}

/* Without --experts-per-token every token goes through every expert; k = E is the same
 * replay, repeats expanded or each layer's repeats as one tensor. */
static void test_moe_k_equals_e(void **state)
{
    (void)state;
    static char buf[8192];
    struct est_model m;
    struct carma_err err;
    struct est_result a, b;
    struct est_opts o = {.batch = 4, .seq = 128, .optimizer = EST_OPT_ADAMW};
    /* 2 layers x 8 experts: expanded; 64 x 16: more than EST_REPLAY_MAX_NODES */
    static const unsigned shapes[2][2] = {{2, 8}, {64, 16}};
    for (int s = 0; s < 2; s++) {
        mixtral(buf, sizeof buf, shapes[s][0], shapes[s][1], 64, 224);
        assert_int_equal(parse_str(buf, &m, &err), 0);
        for (int prec = 0; prec < 2; prec++) {
            o.precision = prec ? EST_PREC_BF16 : EST_PREC_FP32;
            compute(&m, &o, 0, &a);
            compute(&m, &o, shapes[s][1], &b);
            same_result(&a, &b);
        }
    }
}

/* A print whose activations are its experts' (width 64, experts 256 wide, 8 of them,
 * 2 layers): with k of 8 experts per token the activations drop by what 8 - k experts
 * keep for every token: per token and expert, fp32, the gathered input (64), the gate's,
 * activation's, up projection's outputs and their product (4 x 256), the expert's output
 * the routing product keeps (64) and its routing weight (1), and top-k's values and
 * indices (12 bytes a token and expert). */
static void test_moe_k_scales_activations(void **state)
{
    (void)state;
    static char buf[8192];
    struct est_model m;
    struct carma_err err;
    snprintf(buf, sizeof buf,
             "MoEModel(\n"
             "  (embed): Embedding(100, 64)\n"
             "  (layers): ModuleList(\n"
             "    (0-1): 2 x Layer(\n"
             "      (moe): SparseMoeBlock(\n"
             "        (gate): Linear(in_features=64, out_features=8, bias=False)\n"
             "        (experts): ModuleList(\n"
             "          (0-7): 8 x MLP(\n"
             "            (gate_proj): Linear(in_features=64, out_features=256, bias=False)\n"
             "            (up_proj): Linear(in_features=64, out_features=256, bias=False)\n"
             "            (down_proj): Linear(in_features=256, out_features=64, bias=False)\n"
             "            (act_fn): SiLU()\n"
             "          )\n"
             "        )\n"
             "      )\n"
             "      (norm): RMSNorm((64,), eps=1e-06)\n"
             "    )\n"
             "  )\n"
             "  (lm_head): Linear(in_features=64, out_features=100, bias=False)\n"
             ")\n");
    assert_int_equal(parse_str(buf, &m, &err), 0);
    assert_int_equal(m.moe_blocks, 2);
    struct est_opts o = {.batch = 8, .seq = 256, .optimizer = EST_OPT_ADAMW};
    struct est_result all, r;
    compute(&m, &o, 0, &all);
    assert_int_equal(all.peak_phase, EST_RP_BACKWARD);
    const double tokens = 8 * 256, mib = 1024.0 * 1024.0;
    for (uint32_t k = 1; k <= 8; k *= 2) {
        compute(&m, &o, k, &r);
        assert_int_equal(r.peak_phase, EST_RP_BACKWARD);
        double per = (2 * 64 + 4 * 256 + 1) * 4.0 + 12;
        double want = 2 * tokens * (8 - k) * per / mib;
        double got = all.activations_mib - r.activations_mib;
        /* allocator rounding aside: within 0.5% of the activations */
        assert_true(fabs(got - want) <= 0.005 * all.activations_mib);
        assert_true(r.estimate_mib <= all.estimate_mib);
    }
}

/* The experts of a block repeated with its layer run inside it: each layer is one
 * checkpointing unit, its experts recomputed with it (before, every layer's experts ran
 * after every layer's attention, all in the last unit). */
static void test_moe_checkpoint_units(void **state)
{
    (void)state;
    static char buf[8192];
    struct est_model m;
    struct carma_err err;
    mixtral(buf, sizeof buf, 4, 8, 64, 224);
    assert_int_equal(parse_str(buf, &m, &err), 0);
    struct est_opts o = {.batch = 8, .seq = 256, .optimizer = EST_OPT_ADAMW};
    struct est_result full, ck;
    compute(&m, &o, 0, &full);
    o.grad_checkpoint = 1;
    compute(&m, &o, 0, &ck);
    assert_int_equal(ck.checkpointed_units, 4);
    /* one layer's experts at a time, not four */
    assert_true(ck.activations_mib + ck.transient_mib <
                0.5 * (full.activations_mib + full.transient_mib));
}

/* The routing composes with the rest of the replay: QLoRA adapters on the experts (4-bit
 * bases), 8-bit experts with trained attention, under bf16, DistributedDataParallel and
 * checkpointing: k = E is the default's replay, and fewer experts per token lower it. */
static void test_moe_k_with_lora_quant_ddp(void **state)
{
    (void)state;
    static const char *const files[] = {
        "tests/fuzz/corpus/summary_modtree/moe_qlora_experts.txt",
        "tests/fuzz/corpus/summary_modtree/moe_olmoe_8bit.txt",
    };
    static char buf[1 << 16];
    struct est_model m;
    struct carma_err err;
    for (size_t f = 0; f < 2; f++) {
        FILE *fp = fopen(files[f], "r");
        assert_non_null(fp);
        size_t n = fread(buf, 1, sizeof buf - 1, fp);
        fclose(fp);
        buf[n] = 0;
        assert_int_equal(parse_str(buf, &m, &err), 0);
        assert_true(m.moe_blocks == 2 && m.frozen > 0);
        for (int ck = 0; ck < 2; ck++) {
            struct est_opts o = {.batch = 8, .seq = 256, .optimizer = EST_OPT_ADAMW,
                                 .precision = EST_PREC_BF16, .gpus = 2, .grad_checkpoint = ck};
            struct est_result all, e, one;
            compute(&m, &o, 0, &all);
            compute(&m, &o, m.moe_experts_min, &e);
            same_result(&all, &e);
            compute(&m, &o, 1, &one);
            assert_true(one.estimate_mib < all.estimate_mib);
            assert_int_equal(one.checkpointed_units, ck ? 2 : 0);
        }
    }
}

/* --experts-per-token is refused where it routes nothing, and above a block's experts. */
static void test_moe_k_refused(void **state)
{
    (void)state;
    static char buf[8192];
    struct est_model m;
    struct carma_err err;
    struct est_result r;
    struct est_opts o = {.batch = 4, .seq = 128, .optimizer = EST_OPT_ADAMW,
                         .experts_per_token = 9};
    mixtral(buf, sizeof buf, 2, 8, 64, 224);
    assert_int_equal(parse_str(buf, &m, &err), 0);
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &r, &err), -EINVAL);
    assert_string_equal(err.msg, "--experts-per-token 9 is more than the 8 experts of each "
                                 "mixture-of-experts block (from line 12): a token is routed "
                                 "to k of its block's experts, 1 to 8");
    o.experts_per_token = 1;
    assert_int_equal(parse_str("Net(\n"
                               "  (fc1): Linear(in_features=64, out_features=256, bias=True)\n"
                               "  (act): ReLU()\n"
                               "  (fc2): Linear(in_features=256, out_features=10, bias=True)\n"
                               ")\n",
                               &m, &err),
                     0);
    o.seq = 0;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &r, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "--experts-per-token 1 routes nothing here: the print has "
                                    "no mixture-of-experts block"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_moe_repeat_rows),
        cmocka_unit_test(test_moe_gate_after_experts),
        cmocka_unit_test(test_moe_written_out),
        cmocka_unit_test(test_moe_not_experts),
        cmocka_unit_test(test_moe_units),
        cmocka_unit_test(test_moe_fused_refused),
        cmocka_unit_test(test_moe_k_equals_e),
        cmocka_unit_test(test_moe_k_scales_activations),
        cmocka_unit_test(test_moe_checkpoint_units),
        cmocka_unit_test(test_moe_k_with_lora_quant_ddp),
        cmocka_unit_test(test_moe_k_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
