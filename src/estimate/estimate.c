/* The memory model of DESIGN.md §5 (see estimate.h for the formula). */
#include "estimate/estimate.h"
#include "estimate/parse.h"
#include "estimate/replay.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <string.h>
#include <strings.h>

#define MIB (1024.0 * 1024.0)

static const char *const kind_names[EST_K_COUNT] = {
    "linear", "conv", "norm", "act", "dropout", "pool", "softmax", "embed", "attn", "other",
};

const char *est_kind_name(enum est_kind k)
{
    return (unsigned)k < EST_K_COUNT ? kind_names[k] : "?";
}

int est_kind_from_name(const char *name)
{
    for (int k = 0; k < EST_K_COUNT; k++)
        if (strcasecmp(name, kind_names[k]) == 0)
            return k;
    return -1;
}

/* Case-insensitive "does type[0..len) contain needle". */
static int has(const char *type, size_t len, const char *needle)
{
    size_t n = strlen(needle);
    if (n > len)
        return 0;
    for (size_t i = 0; i + n <= len; i++)
        if (strncasecmp(type + i, needle, n) == 0)
            return 1;
    return 0;
}

static int is(const char *type, size_t len, const char *name)
{
    return strlen(name) == len && strncasecmp(type, name, len) == 0;
}

int est_type_over_channels(const char *type, size_t len)
{
    return has(type, len, "covariance") || is(type, len, "XCA");
}

enum est_kind est_kind_classify(const char *type, size_t len)
{
    /* Order matters: "BatchNormAct2d" is a norm, "ConvBnAct" a conv container
     * (timm prints its children), "SelfAttention" attention, and so are timm's
     * TalkingHeadAttn and ClassAttn; not its CrossCovarianceAttn. */
    if (has(type, len, "attention") ||
        (len >= 4 && memcmp(type + len - 4, "Attn", 4) == 0 &&
         !est_type_over_channels(type, len)))
        return EST_K_ATTN;
    if (has(type, len, "embedding"))
        return EST_K_EMBED;
    if (has(type, len, "norm") || is(type, len, "Affine")) /* ResMLP's x * alpha + beta */
        return EST_K_NORM;
    if (len >= 3 && memcmp(type + len - 3, "GRN", 3) == 0) /* a global response norm
                                                              (ConvNextV2GRN), no conv */
        return EST_K_NORM;
    if (has(type, len, "dropout") || has(type, len, "droppath") || has(type, len, "dropblock"))
        return EST_K_DROPOUT;
    if (has(type, len, "softmax"))
        return EST_K_SOFTMAX;
    if (has(type, len, "pool"))
        return EST_K_POOL;
    if (len == 6 && memcmp(type, "Conv1D", 6) == 0) /* Hugging Face's transposed Linear
                                                       (GPT-2); torch's is Conv1d */
        return EST_K_LINEAR;
    /* Keras's SeparableConv1D/2D are one layer; timm's DepthwiseSeparableConv is a
     * container that prints its convolutions */
    if (is(type, len, "SeparableConv1D") || is(type, len, "SeparableConv2D"))
        return EST_K_CONV;
    if (has(type, len, "conv") && !has(type, len, "block") && !has(type, len, "separable"))
        return EST_K_CONV;
    if (has(type, len, "linear") || is(type, len, "Dense") || is(type, len, "Bilinear") ||
        is(type, len, "EinsumDense"))
        return EST_K_LINEAR;
    static const char *const acts[] = {
        "relu", "gelu", "silu", "swish", "mish", "elu", "tanh", "sigmoid", "softplus",
        "softsign", "hardswish", "hardtanh", "activation", "glu", "logsigmoid", "threshold",
    };
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++)
        if (has(type, len, acts[i]))
            return EST_K_ACT;
    return EST_K_OTHER;
}

static const char *const fmt_names[] = {"none", "torchsummary", "torchinfo", "keras",
                                        "module-tree", "csv"};

const char *est_format_name(enum est_format f)
{
    return (unsigned)f < sizeof fmt_names / sizeof fmt_names[0] ? fmt_names[f] : "?";
}

void est_model_init(struct est_model *m, struct est_layer *storage, size_t cap)
{
    memset(m, 0, sizeof *m);
    m->layers = storage;
    m->cap = cap > EST_MAX_LAYERS ? EST_MAX_LAYERS : cap;
}

int est_model_add(struct est_model *m, enum est_kind kind, uint64_t out, uint64_t params,
                  uint32_t count, int per_token)
{
    assert((unsigned)kind < EST_K_COUNT);
    if (m->n >= m->cap || count == 0 || count > EST_MAX_COUNT || out > EST_MAX_ELEMS ||
        params > EST_MAX_PARAMS)
        return -E2BIG;
    uint64_t total = params * count; /* no overflow: 2^40 * 1e8 < 2^67? check */
    if (params && count > EST_MAX_PARAMS / params)
        return -E2BIG;
    if (m->params + total > EST_MAX_PARAMS * 16)
        return -E2BIG;
    if (kind == EST_K_CONV)
        m->cudnn = 1;
    struct est_layer *l = &m->layers[m->n++];
    l->kind = (uint8_t)kind;
    l->per_token = per_token ? 1 : 0;
    l->attn = kind == EST_K_ATTN;
    l->flags = 0;
    l->wbits = 0;
    l->unit = 0;
    l->keeps = 0;
    l->shares_input = 0;
    l->heads_src = EST_HEADS_SHOWN;
    l->keeps32 = 0;
    l->norm16 = 0;
    l->keys = 0;
    l->count = count;
    l->rank = 0;
    l->shared_from = 0;
    l->moe = 0;
    l->experts = 0;
    l->out = out;
    l->params = params;
    l->frozen = 0;
    m->params += total;
    return 0;
}

void est_model_freeze(struct est_model *m)
{
    for (size_t i = 0; i < m->n; i++) {
        struct est_layer *l = &m->layers[i];
        if (!l->rank && !(l->flags & EST_LF_TRAINED))
            l->frozen = l->params;
    }
    est_model_count_frozen(m);
}

/* The parameters row l holds of its own and, of them, the frozen ones: a table printed
 * again (EST_LF_TIED) none, its source's; a tied head (est_model.head_tied) its bias. */
static void own_params(const struct est_model *m, const struct est_layer *l, uint64_t *own,
                       uint64_t *frozen)
{
    uint64_t shared = 0;
    if (l->flags & EST_LF_TIED)
        shared = l->kind == EST_K_LINEAR && m->head_tied ? m->head_table_rows * m->head_table_width
                                                         : l->params;
    *own = l->params > shared ? l->params - shared : 0;
    *frozen = l->frozen > shared ? l->frozen - shared : 0;
}

void est_model_count_frozen(struct est_model *m)
{
    m->frozen = 0;
    for (size_t i = 0; i < m->n; i++) {
        uint64_t own, frozen;
        own_params(m, &m->layers[i], &own, &frozen);
        m->frozen += frozen * m->layers[i].count;
    }
}

unsigned est_type_flags(enum est_kind k, const char *type, size_t len)
{
    /* derivatives.yaml: relu, tanh and sigmoid backward from their result; relu6
     * (hardtanh), leaky_relu, rrelu, prelu and the rest from their input. */
    static const char *const input_keepers[] = {"leaky", "prelu", "relu6", "rrelu",
                                                "hardtanh", "hardsigmoid", "logsigmoid",
                                                "tanhshrink"};
    /* T5LayerNorm (T5, mT5, LongT5, UMT5) is an RMSNorm written in Python too */
    if (k == EST_K_NORM && (has(type, len, "rmsnorm") || has(type, len, "t5layernorm")))
        return EST_LF_RMS;
    if (k != EST_K_ACT)
        return 0;
    if (has(type, len, "prelu"))
        return EST_LF_WEIGHT_PER_ELEM;
    for (size_t i = 0; i < sizeof input_keepers / sizeof input_keepers[0]; i++)
        if (has(type, len, input_keepers[i]))
            return 0;
    if (has(type, len, "gelu")) /* GELUTanh is gelu(approximate="tanh"): from its input */
        return 0;
    if (has(type, len, "relu") || has(type, len, "tanh") || has(type, len, "sigmoid"))
        return EST_LF_SAVES_RESULT;
    return 0;
}

unsigned est_type_keeps(enum est_kind k, const char *type, size_t len)
{
    if (k != EST_K_ACT)
        return 0;
    if (is(type, len, "NewGELUActivation") || is(type, len, "AccurateGELUActivation"))
        return 3;
    if (is(type, len, "FastGELUActivation"))
        return 6;
    if (is(type, len, "QuickGELUActivation"))
        return 1;
    return 0;
}

unsigned est_type_norm16(enum est_kind k, const char *type, size_t len)
{
    return k == EST_K_NORM && has(type, len, "batchnorm") && !has(type, len, "frozen");
}

unsigned est_type_keeps32(enum est_kind k, const char *type, size_t len)
{
    if (k != EST_K_ACT)
        return 0;
    if (is(type, len, "NewGELUActivation") || is(type, len, "AccurateGELUActivation"))
        return 2; /* torch.pow(input, 3.0): the tanh and 1 + tanh in fp32, 0.5x not */
    return 0;
}

void est_layer_type(struct est_layer *l, const char *type, size_t len)
{
    l->flags = (uint8_t)est_type_flags((enum est_kind)l->kind, type, len);
    l->keeps = (uint8_t)est_type_keeps((enum est_kind)l->kind, type, len);
    l->keeps32 = (uint8_t)est_type_keeps32((enum est_kind)l->kind, type, len);
    l->norm16 = (uint8_t)est_type_norm16((enum est_kind)l->kind, type, len);
}

const char *est_type_unmodelled(const char *type, size_t len)
{
    /* Keras prints a wrapped recurrent layer by its wrapper: Bidirectional takes only
     * recurrent layers (LSTM, GRU, RNN of a cell) */
    if (has(type, len, "lstm") || has(type, len, "gru") || has(type, len, "rnn") ||
        has(type, len, "recurrent") || is(type, len, "Bidirectional"))
        return "a recurrent layer: what it keeps per time step is not in a summary, so no "
               "safe bound can be given (state the job's memory instead: carma submit --mem)";
    return NULL;
}

int est_model_add_type(struct est_model *m, const char *type, size_t len, uint64_t out,
                       uint64_t params, uint32_t count, int per_token)
{
    int rc = est_model_add(m, est_kind_classify(type, len), out, params, count, per_token);
    if (rc == 0)
        est_layer_type(&m->layers[m->n - 1], type, len);
    return rc;
}

static const char *const opt_names[EST_OPT_COUNT] = {"sgd", "momentum", "adam", "adamw",
                                                     "adadelta"};
static const char *const prec_names[EST_PREC_COUNT] = {"fp32", "amp", "bf16"};

int est_attention_parse(const char *s, enum est_attention *out)
{
    if (strcmp(s, "eager") == 0)
        *out = EST_ATTN_EAGER;
    else if (strcmp(s, "sdpa") == 0)
        *out = EST_ATTN_SDPA;
    else
        return -EINVAL;
    return 0;
}

double est_attn_keys(const struct est_layer *l, double seq)
{
    return l->keys && l->keys < seq ? l->keys : seq;
}

int est_layer_materialised(const struct est_layer *l, enum est_attention a)
{
    if (l->kind != EST_K_ATTN || (l->flags & EST_LF_SCORES))
        return 1;
    if (a == EST_ATTN_SHOWN)
        return !(l->flags & EST_LF_FUSED);
    return a == EST_ATTN_EAGER;
}

int est_attention_math(const struct est_layer *l, const struct est_opts *o, int grouped)
{
    return l->kind == EST_K_ATTN && grouped && o->attention == EST_ATTN_SDPA &&
           l->heads_src != EST_HEADS_UNKNOWN &&
           (o->precision == EST_PREC_FP32 || o->cc < 80); /* cc 0, unknown: below 8.0 */
}

const char *est_heads_src_name(enum est_heads_src s)
{
    switch (s) {
    case EST_HEADS_SHOWN: return "shown";
    case EST_HEADS_ASSUMED: return "assumed";
    case EST_HEADS_GIVEN: return "given";
    case EST_HEADS_UNKNOWN: return "unknown";
    }
    return "?";
}

/* est_heads_check's advice, after "FILE:LINE: CLASS: " */
#define HEADS_UNKNOWN_MSG                                                                      \
    "its number of heads is not in the print, and eager attention keeps heads x seq x seq "    \
    "probabilities per sample: give --heads N (the model's num_heads), or --attention sdpa "   \
    "if it runs fused attention (called with need_weights=False, as "                          \
    "nn.TransformerEncoderLayer and torchvision's ViT call nn.MultiheadAttention; Keras 3's "  \
    "flash attention)"

int est_heads_check(const struct est_model *m, enum est_attention a, const char *file,
                    struct carma_err *err)
{
    if (!m->heads_line) /* the parser sets it with the first row of unknown heads */
        return 0;
    for (size_t i = 0; i < m->n; i++) {
        const struct est_layer *l = &m->layers[i];
        if (l->kind != EST_K_ATTN || l->heads_src != EST_HEADS_UNKNOWN ||
            !est_layer_materialised(l, a))
            continue;
        const char *cls = m->heads_class ? m->heads_class : "attention";
        if (file)
            return carma_err_at(err, file, m->heads_line, "%s: " HEADS_UNKNOWN_MSG, cls);
        return carma_err_at(err, NULL, 0, "line %zu: %s: " HEADS_UNKNOWN_MSG, m->heads_line,
                            cls);
    }
    return 0;
}

int est_heads_used(const struct est_model *m, enum est_attention a)
{
    static const enum est_heads_src order[] = {EST_HEADS_UNKNOWN, EST_HEADS_ASSUMED,
                                               EST_HEADS_GIVEN, EST_HEADS_SHOWN};
    unsigned seen = 0;
    for (size_t i = 0; i < m->n; i++)
        if (m->layers[i].kind == EST_K_ATTN && est_layer_materialised(&m->layers[i], a))
            seen |= 1u << m->layers[i].heads_src;
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
        if (seen & (1u << order[k]))
            return (int)order[k];
    return -1;
}

const char *est_attention_assumed(const struct est_model *m, enum est_attention a)
{
    int any = 0;
    for (size_t i = 0; i < m->n; i++)
        if (m->layers[i].kind == EST_K_ATTN) {
            if (est_layer_materialised(&m->layers[i], a))
                return "eager";
            any = 1;
        }
    return any ? "sdpa" : "none";
}

int est_optimizer_parse(const char *s, enum est_optimizer *out)
{
    for (int i = 0; i < EST_OPT_COUNT; i++)
        if (strcasecmp(s, opt_names[i]) == 0) {
            *out = (enum est_optimizer)i;
            return 0;
        }
    return -EINVAL;
}

int est_precision_parse(const char *s, enum est_precision *out)
{
    for (int i = 0; i < EST_PREC_COUNT; i++)
        if (strcasecmp(s, prec_names[i]) == 0) {
            *out = (enum est_precision)i;
            return 0;
        }
    if (strcasecmp(s, "fp16") == 0) {
        *out = EST_PREC_AMP;
        return 0;
    }
    return -EINVAL;
}

const char *est_optimizer_name(enum est_optimizer o)
{
    return (unsigned)o < EST_OPT_COUNT ? opt_names[o] : "?";
}

const char *est_precision_name(enum est_precision p)
{
    return (unsigned)p < EST_PREC_COUNT ? prec_names[p] : "?";
}

int est_opts_set(struct est_opts *o, const char *name, const char *val, const char **accepted)
{
    int rc;
    if (strcmp(name, "optimizer") == 0) {
        *accepted = "sgd, momentum, adam, adamw, adadelta";
        rc = est_optimizer_parse(val, &o->optimizer);
    } else if (strcmp(name, "precision") == 0) {
        *accepted = "fp32, amp, bf16";
        rc = est_precision_parse(val, &o->precision);
    } else if (strcmp(name, "attention") == 0) {
        *accepted = "eager, sdpa";
        rc = est_attention_parse(val, &o->attention);
    } else {
        *accepted = "";
        return -ENOENT;
    }
    return rc < 0 ? -EINVAL : 0;
}

unsigned est_optimizer_state_bytes(enum est_optimizer o)
{
    switch (o) {
    case EST_OPT_SGD: return 0;
    case EST_OPT_MOMENTUM: return 4;
    case EST_OPT_ADAM:
    case EST_OPT_ADAMW:
    case EST_OPT_ADADELTA: return 8;
    default: return 8;
    }
}

double est_alloc_round(double bytes)
{
    if (bytes <= 0)
        return 0;
    return ceil(bytes / 512.0) * 512.0;
}

int est_band_of(double dynamic_mib)
{
    static const double edges[EST_NBANDS - 1] = {256, 1024, 4096, 16384};
    int b = 0;
    while (b < EST_NBANDS - 1 && dynamic_mib >= edges[b])
        b++;
    return b;
}

double est_bound(const struct est_coef *c, enum est_family fam, double estimate_mib,
                 double dynamic_mib, int banded)
{
    assert((unsigned)fam < EST_FAM_COUNT);
    if (dynamic_mib < 0)
        dynamic_mib = 0;
    int b = est_band_of(dynamic_mib);
    double q = banded && c->ncalband[fam][b] >= EST_BAND_MIN ? c->qband[fam][b] : c->q[fam];
    if (!(q > 0))
        q = 0;
    return estimate_mib + q * (c->scale0_mib[fam] + dynamic_mib);
}

int est_model_has_attention(const struct est_model *m)
{
    for (size_t i = 0; i < m->n; i++) {
        const struct est_layer *l = &m->layers[i];
        if (l->kind == EST_K_ATTN || l->kind == EST_K_EMBED || l->shares_input)
            return 1;
        if (i >= 2 && l->kind == EST_K_LINEAR)
            for (size_t j = i - 2; j < i; j++) {
                const struct est_layer *p = &m->layers[j];
                if (p->kind != EST_K_LINEAR || p->out != l->out || p->params != l->params)
                    break;
                if (j == i - 1)
                    return 1;
            }
    }
    return 0;
}

enum est_family est_model_family(const struct est_model *m)
{
    double conv = 0, linear = 0;
    for (size_t i = 0; i < m->n; i++) {
        const struct est_layer *l = &m->layers[i];
        if (l->kind == EST_K_CONV)
            conv += (double)l->out * l->count;
        else if (l->kind == EST_K_LINEAR)
            linear += (double)l->out * l->count;
    }
    return conv > 0 && conv >= linear ? EST_FAM_CONV : EST_FAM_DENSE;
}

int est_model_reads_seq(const struct est_model *m)
{
    if (m->needs_seq || m->tokens)
        return 1;
    for (size_t i = 0; i < m->n; i++)
        if (m->layers[i].per_token || m->layers[i].attn)
            return 1;
    return 0;
}

/* Spatial sizes a and b (H x W elements) of consecutive convolutions are consistent:
 * equal, or one 4 or 16 times the other (stride 2 or 4, pooling, upsampling). */
static int hw_consistent(uint64_t a, uint64_t b)
{
    return a == b || a == 4 * b || a == 16 * b || b == 4 * a || b == 16 * a;
}

static const uint64_t concat_ks[] = {3, 1, 5, 7};

/* c_out of a convolution with output elements o, parameters p and c_in input channels,
 * whose spatial size is consistent with hw_prev (any when 0) and, when in > 0, with an
 * input of `in` elements per sample (in / c_in consistent with it, not smaller): 0 when
 * none fits. */
static uint64_t conv_cout(uint64_t o, uint64_t p, uint64_t cin, uint64_t hw_prev, uint64_t in,
                          uint64_t *hw)
{
    for (size_t k = 0; k < sizeof concat_ks / sizeof concat_ks[0]; k++)
        for (uint64_t b = 2; b-- > 0;) {
            uint64_t d = concat_ks[k] * concat_ks[k] * cin + b;
            if (p % d)
                continue;
            uint64_t co = p / d;
            if (co == 0 || o % co)
                continue;
            uint64_t h = o / co;
            if (hw_prev && !hw_consistent(h, hw_prev))
                continue;
            if (in && !(in % cin == 0 && in / cin >= h && hw_consistent(in / cin, h)))
                continue;
            *hw = h;
            return co;
        }
    return 0;
}

/* The input channels of a convolution with output elements o and parameters p whose
 * spatial size is hw: `want` when some kernel size and bias give it, else the first
 * that fits; 0 when none does. */
static uint64_t conv_cin(uint64_t o, uint64_t p, uint64_t hw, uint64_t want)
{
    if (hw == 0 || o % hw)
        return 0;
    uint64_t co = o / hw, first = 0;
    if (co == 0 || p % co)
        return 0;
    for (size_t k = 0; k < sizeof concat_ks / sizeof concat_ks[0]; k++)
        for (uint64_t b = 2; b-- > 0;) {
            uint64_t kk = concat_ks[k] * concat_ks[k];
            if (p / co > b && (p / co - b) % kk == 0) {
                uint64_t cin = (p / co - b) / kk;
                if (cin == want)
                    return cin;
                if (!first)
                    first = cin;
            }
        }
    return first;
}

/* total + cin x hw, saturating at EST_MAX_ELEMS (each operand is at most that). */
static uint64_t concat_add(uint64_t total, uint64_t cin, uint64_t hw)
{
    if (hw && cin > EST_MAX_ELEMS / hw)
        return EST_MAX_ELEMS;
    total += cin * hw;
    return total > EST_MAX_ELEMS ? EST_MAX_ELEMS : total;
}

#define CONCAT_MAX_CIN0 16 /* input channels tried for the first convolution */

/* c_out of the convolution at index i told by the norm that follows it (BatchNorm,
 * GroupNorm, LayerNorm over channels: 2 x c affine parameters, the same output), past
 * activations, dropout and identities of the same size; 0 when none does. */
static uint64_t norm_cout(const struct est_model *m, size_t i)
{
    uint64_t o = m->layers[i].out;
    for (size_t j = i + 1; j < m->n && j <= i + 3; j++) {
        const struct est_layer *l = &m->layers[j];
        if ((l->kind == EST_K_ACT || l->kind == EST_K_DROPOUT || l->kind == EST_K_OTHER) &&
            l->out == o)
            continue;
        if (l->kind != EST_K_NORM || l->out != o || l->params == 0 || l->params % 2)
            return 0;
        uint64_t c = l->params / 2;
        return o % c == 0 ? c : 0;
    }
    return 0;
}

uint64_t est_concat_infer(const struct est_model *m)
{
    uint64_t cprev = 0, hwprev = 0, csum = 0, total = 0;
    int started = 0;
    for (size_t i = 0; i < m->n; i++) {
        const struct est_layer *l = &m->layers[i];
        if (l->kind == EST_K_LINEAR || l->kind == EST_K_EMBED || l->kind == EST_K_ATTN ||
            (l->kind == EST_K_CONV && (l->count != 1 || l->per_token))) {
            cprev = hwprev = csum = 0;
            continue;
        }
        if (l->kind != EST_K_CONV || l->out == 0 || l->params == 0)
            continue;
        uint64_t o = l->out, p = l->params, co = 0, hw = 0, cin = 0;
        uint64_t nco = norm_cout(m, i);
        if (nco) {
            /* A norm says the output channels: the input channels follow from p. */
            co = nco;
            hw = o / co;
            cin = conv_cin(o, p, hw, cprev);
            if (cprev && cin > cprev && cin <= csum && hw_consistent(hw, hwprev))
                total = concat_add(total, cin, hw);
            if (!cin || !cprev)
                csum = cin; /* a (re)start */
        } else if (cprev) {
            /* Reads the previous output as it is. */
            co = conv_cout(o, p, cprev, hwprev, 0, &hw);
            cin = cprev;
            if (!co) {
                /* Reads something else: a concatenation at the previous spatial size or
                 * a quarter of it, or another branch (c_in <= cprev). */
                uint64_t hws[2] = {hwprev, hwprev % 4 == 0 ? hwprev / 4 : 0};
                for (int h = 0; h < 2 && !co; h++) {
                    cin = conv_cin(o, p, hws[h], cprev);
                    if (cin) {
                        hw = hws[h];
                        co = o / hw;
                    }
                }
                if (co && cin > cprev && cin <= csum)
                    total = concat_add(total, cin, hw);
            }
        }
        if (!co) {
            /* (Re)start: the first convolution's input channels agree with the model's
             * input when it is known (a torchsummary's input is only approximate: then
             * any); after a restart, the spatial size agrees with the last one. */
            int first = !started;
            uint64_t h0 = first ? 0 : hwprev;
            for (int pass = first && m->input ? 0 : 1; pass < 2 && !co; pass++)
                for (uint64_t ci = 1; ci <= CONCAT_MAX_CIN0 && !co; ci++) {
                    co = conv_cout(o, p, ci, h0, pass == 0 ? m->input : 0, &hw);
                    cin = ci;
                }
            csum = co ? cin : 0;
        }
        started = 1;
        cprev = co;
        if (co)
            hwprev = hw;
        csum += co;
        if (csum > EST_MAX_ELEMS)
            csum = EST_MAX_ELEMS;
    }
    return total;
}

/* Bytes per activation element of layer l: under autocast, matmuls, convolutions and
 * pointwise ops produce 16-bit tensors, as batch norm does (est_layer.norm16); other
 * norms and softmax run in fp32. */
static double elem_bytes(const struct est_layer *l, enum est_precision p)
{
    if (p == EST_PREC_FP32)
        return 4;
    return ((l->kind == EST_K_NORM && !l->norm16) || l->kind == EST_K_SOFTMAX) ? 4 : 2;
}

double est_frozen_bytes(const struct est_layer *l, enum est_precision p)
{
    if (l->wbits == 4) /* 4-bit codes and an fp32 absmax per block of 64 */
        return 0.5 + 4.0 / 64;
    if (l->wbits == 8) /* int8 codes; per-row scales are negligible */
        return 1;
    if (l->wbits == 32)
        return 4;
    if (l->wbits == 16) /* quantized to bits not printed: at most 16 with its scales */
        return 2;
    return p == EST_PREC_FP32 ? 4 : 2;
}

void est_features(const struct est_model *m, const struct est_opts *o, double *feat,
                  double *weights_mib, double *grads_mib, double *state_mib)
{
    for (int i = 0; i < EST_NFEAT; i++)
        feat[i] = 0;
    double batch = o->batch ? o->batch : 1;
    double seq = o->seq ? o->seq : 1;
    double w = 0, g = 0, s = 0, largest = 0;
    double state_b = est_optimizer_state_bytes(o->optimizer);
    double half = o->precision == EST_PREC_FP32 ? 0 : 2; /* autocast weight copies */
    /* Autograd records nothing before the first layer with trained parameters (a frozen
     * backbone runs as without gradients): those layers keep no activations, though the
     * largest of them still passes through as a transient. */
    size_t first_trained = m->n;
    for (size_t i = 0; i < m->n && first_trained == m->n; i++)
        if (m->layers[i].params > m->layers[i].frozen)
            first_trained = i;
    for (size_t i = 0; i < m->n; i++) {
        const struct est_layer *l = &m->layers[i];
        double cnt = l->count;
        uint64_t own, own_frozen; /* a tied table's are its source's, a tied head's weight too */
        own_params(m, l, &own, &own_frozen);
        if (own) {
            /* Trained parameters: fp32 master, gradient, state, autocast copy. Frozen
             * ones: their storage only (est_frozen_bytes). */
            double p = (double)(own - own_frozen), fz = (double)own_frozen;
            if (fz)
                w += cnt * est_alloc_round(fz * est_frozen_bytes(l, o->precision));
            if (p) {
                w += cnt * (est_alloc_round(p * 4) + (half ? est_alloc_round(p * half) : 0));
                g += cnt * est_alloc_round(p * 4);
                if (state_b)
                    s += cnt * est_alloc_round(p * 4) * (state_b / 4);
            }
        }
        if (!l->out || !est_layer_materialised(l, o->attention))
            continue;
        double per = (double)l->out * (l->per_token ? seq : 1);
        if (l->attn) /* heads x keys scores per token, times seq tokens */
            per *= est_attn_keys(l, seq);
        double bytes = est_alloc_round(batch * per * elem_bytes(l, o->precision));
        if (i >= first_trained)
            feat[(l->flags & EST_LF_PRODUCT) ? EST_K_NORM : l->kind] += cnt * bytes / MIB;
        if (bytes > largest)
            largest = bytes;
    }
    if (m->input) {
        double ib = o->precision == EST_PREC_FP32 ? 4 : 4; /* inputs stay fp32 */
        feat[EST_F_INPUT] = est_alloc_round(batch * (double)m->input * ib) / MIB;
    }
    feat[EST_F_TRANSIENT] = largest / MIB;
    feat[EST_F_STEP] = (double)(m->params - m->frozen) * 4 / MIB;
    uint64_t cat = m->spatial ? m->concat : est_concat_infer(m);
    if (cat)
        feat[EST_F_CONCAT] =
            est_alloc_round(batch * (double)cat * (o->precision == EST_PREC_FP32 ? 4 : 2)) /
            MIB;
    *weights_mib = w / MIB;
    *grads_mib = g / MIB;
    *state_mib = s / MIB;
}

/* The per-kind model's activation and transient terms. */
static void est_terms(const struct est_coef *c, int fam, const struct est_opts *o,
                      const double *f, struct est_result *r)
{
    double act = 0;
    for (int k = 0; k < EST_K_COUNT; k++)
        act += c->kind[fam][k] * f[k];
    act += c->input[fam] * f[EST_F_INPUT];
    act += c->concat[fam] * f[EST_F_CONCAT];
    r->activations_mib = act;
    /* Optimizer-step temporaries scale with the state the step walks over. */
    double step_scale = est_optimizer_state_bytes(o->optimizer) / 8.0;
    r->transient_mib =
        c->transient[fam] * f[EST_F_TRANSIENT] + c->step[fam] * step_scale * f[EST_F_STEP];
}

const char *est_floor_src_name(enum est_floor_src f)
{
    switch (f) {
    case EST_FLOOR_FITTED: return "fitted";
    case EST_FLOOR_GIVEN: return "given";
    default: return "default";
    }
}

/* DDP's rebuilt gradient buckets for the per-kind model: each layer's trained
 * parameters (its repeats as one tensor), last layer first. */
static double ddp_buckets_mib(const struct est_model *m)
{
    struct est_ddp_fill f = {0};
    double sum = 0;
    for (size_t i = m->n; i-- > 0;) {
        uint64_t own, frozen; /* a tied table's are its source's, a tied head's weight too */
        own_params(m, &m->layers[i], &own, &frozen);
        if (!own)
            continue;
        sum += est_alloc_round(
            est_ddp_bucket(&f, (double)(own - frozen) * 4 * (double)m->layers[i].count));
    }
    return (sum + est_alloc_round(f.cur)) / MIB;
}

int est_model_class_token(const struct est_model *m)
{
    return m->tokens && m->patch_h && m->patch_w &&
           m->tokens > (uint64_t)(m->image_h / m->patch_h) * (m->image_w / m->patch_w);
}

int est_seq_resolve(const struct est_model *m, struct est_opts *o, const char *file,
                    struct carma_err *err)
{
    if (m->tokens && o->seq && o->seq != m->tokens)
        return carma_err_at(err, file, 0,
                            "--seq-len %u and --image-size %ux%u disagree: %ux%u patches%s "
                            "make %u tokens (give one of the two)",
                            o->seq, m->image_h, m->image_w, m->patch_h, m->patch_w,
                            est_model_class_token(m) ? " and a class token" : "", m->tokens);
    if (m->tokens)
        o->seq = m->tokens;
    if (m->needs_seq && o->seq == 0 && m->patch_h)
        return carma_err_at(err, file, m->needs_seq_line,
                            "a vision transformer (a %ux%u patch embedding here): give "
                            "--image-size H[xW], the input image, whose patches and a class "
                            "token are its sequence (or --seq-len, the tokens)",
                            m->patch_h, m->patch_w);
    if (m->needs_seq && o->seq == 0)
        return carma_err_at(err, file, m->needs_seq_line,
                            "a sequence model (an embedding, attention or patch embedding "
                            "here): give --seq-len");
    return 0;
}

int est_model_prepare(struct est_model *m, const char *buf, size_t len, const char *file,
                      struct est_opts *o, struct carma_err *err)
{
    int rc = est_parse(buf, len, file, m, err);
    if (rc == 0 && m->shared_layer_runs && !m->shared_line)
        rc = carma_err_set(err, -EINVAL,
                           "--shared-layer-runs %u: the print has no layer that runs several "
                           "times with the same parameters (a list of one layer in a list of "
                           "one layer group, ALBERT's); leave it out",
                           m->shared_layer_runs);
    if (rc == 0 && m->tie_head && !m->head_tied)
        rc = carma_err_set(err, -EINVAL,
                           "--tied-head: the print has no output head of its token table's "
                           "shape that could share its weight (a linear layer from the "
                           "table's width to its rows; a PEFT modules_to_save copy trains "
                           "apart); leave it out");
    if (rc == 0)
        rc = est_heads_check(m, o->attention, file, err);
    if (rc == 0) /* a vision transformer's tokens come from its image size */
        rc = est_seq_resolve(m, o, file, err);
    return rc;
}

/* --experts-per-token k: refused where m has no mixture-of-experts block (it would route
 * nothing) and above the fewest experts a block of m has (a token goes to k distinct
 * experts of its block). 0 or -EINVAL with err. */
static int moe_check(const struct est_model *m, const struct est_opts *o, struct carma_err *err)
{
    uint32_t k = o->experts_per_token;
    if (!k)
        return 0;
    if (!m->moe_blocks)
        return carma_err_set(err, -EINVAL,
                             "--experts-per-token %u routes nothing here: the print has no "
                             "mixture-of-experts block (a ModuleList or ModuleDict of identical "
                             "experts beside a router with one output per expert); leave it "
                             "out",
                             k);
    if (k > m->moe_experts_min)
        return carma_err_set(err, -EINVAL,
                             "--experts-per-token %u is more than the %u experts of %s "
                             "mixture-of-experts block%s (from line %zu): a token is routed "
                             "to k of its block's experts, 1 to %u",
                             k, m->moe_experts_min,
                             m->moe_experts_min == m->moe_experts_max ? "each" : "the smallest",
                             m->moe_experts_min == m->moe_experts_max ? "" : " of the print",
                             m->moe_line, m->moe_experts_min);
    return 0;
}

int est_compute(const struct est_model *m, const struct est_coef *c, const struct est_opts *o,
                struct est_replay_work *work, struct est_result *r, struct carma_err *err)
{
    memset(r, 0, sizeof *r);
    if (o->batch == 0)
        return carma_err_set(err, -EINVAL, "batch size must be at least 1");
    if (o->batch > EST_MAX_BATCH)
        return carma_err_set(err, -EINVAL, "batch size %u is above %u", o->batch,
                             EST_MAX_BATCH);
    if (o->gpus > EST_MAX_GPUS)
        return carma_err_set(err, -EINVAL, "%u GPUs is above %u", o->gpus, EST_MAX_GPUS);
    if (o->seq > EST_MAX_SEQ)
        return carma_err_set(err, -EINVAL, "sequence length %u is above %u", o->seq,
                             EST_MAX_SEQ);
    /* A table's shapes are those of the input it was printed with: a sequence length or
     * image size given beside it would be ignored, and the job sized for another input. */
    int table = m->format == EST_FMT_TORCHSUMMARY || m->format == EST_FMT_TORCHINFO ||
                m->format == EST_FMT_KERAS;
    if (table && (o->seq || m->image_h))
        return carma_err_set(err, -EINVAL,
                             "%s does not apply to a %s table: its shapes are those of the "
                             "input it was printed with; print it with the job's input and "
                             "leave %s out",
                             o->seq ? "--seq-len" : "--image-size", est_format_name(m->format),
                             o->seq ? "--seq-len" : "--image-size");
    /* Nor where nothing reads them: the job would look sized for its input. */
    int csv = m->format == EST_FMT_CSV;
    if (o->seq && !est_model_reads_seq(m))
        return carma_err_set(err, -EINVAL,
                             csv ? "--seq-len sizes nothing in this layer CSV: no row has "
                                   "per_token 1; write per_token 1 on the rows whose "
                                   "out_elems are per token, or leave --seq-len out"
                             : m->window_line
                                 ? "--seq-len sizes nothing here: windowed attention over a grid "
                                   "of patches (Swin), sized by --image-size; leave --seq-len "
                                   "out"
                                 : "--seq-len sizes nothing here: not a sequence model (no "
                                   "embedding, attention or patch embedding); leave "
                                   "--seq-len out");
    if (m->image_h && !m->spatial && !m->tokens)
        return carma_err_set(err, -EINVAL,
                             csv ? "--image-size does not apply to a layer CSV: its out_elems "
                                   "are the elements per sample (per token); leave "
                                   "--image-size out"
                                 : "--image-size sizes nothing here: no 2-D convolution or "
                                   "patch embedding to size from it; leave --image-size out");
    if (m->needs_seq && o->seq == 0)
        return carma_err_set(err, -EINVAL,
                             "this is a sequence model (line %zu): give --seq-len%s",
                             m->needs_seq_line,
                             m->patch_h ? " or, for its patch embedding, --image-size" : "");
    int hc = est_heads_check(m, o->attention, NULL, err);
    if (hc < 0)
        return hc;
    hc = moe_check(m, o, err);
    if (hc < 0)
        return hc;
    if (m->max_positions && o->seq > m->max_positions)
        return carma_err_set(err, -EINVAL,
                             "sequence length %u is longer than the model's position table "
                             "(%llu positions, line %zu): the job would fail",
                             o->seq, (unsigned long long)m->max_positions,
                             m->max_positions_line);
    if (m->n == 0)
        return carma_err_set(err, -EINVAL, "the model has no layers");
    r->family = est_model_family(m);
    int fam = r->family;
    if (o->floor_src == EST_FLOOR_GIVEN && !(o->floor_mib > 0))
        return carma_err_set(err, -EINVAL, "a given floor must be above 0 MiB");
    /* The floor is the environment's: a dense model with a convolution loads cuDNN. */
    double fitted_floor = c->floor_mib[m->cudnn ? EST_FAM_CONV : fam] + o->floor_adjust_mib;
    if (fitted_floor < 0)
        fitted_floor = 0;
    switch (o->floor_src) {
    case EST_FLOOR_FITTED: r->floor_mib = fitted_floor; break;
    /* a given floor was measured in the job's own environment, on its own GPU: taken as
     * given, without the kind's adjustment (which moves carma's defaults to that kind) */
    case EST_FLOOR_GIVEN:
        r->floor_mib = o->floor_mib;
        break;
    default: r->floor_mib = EST_ENV_FLOOR_MIB + o->floor_adjust_mib; break;
    }
    if (r->floor_mib < 0)
        r->floor_mib = 0;
    if (c->replay[fam] > 0) {
        /* What the replay found in memory at its peak, scaled by the fitted slope. */
        struct est_replay_result rr;
        if (!work)
            return carma_err_set(err, -EINVAL, "no replay workspace");
        if (est_replay(m, o, work, &rr) < 0)
            return carma_err_set(err, -E2BIG, "the model has too many tensors to replay "
                                              "(%zu layers)", m->n);
        double k = c->replay[fam];
        r->weights_mib = k * rr.cat_mib[EST_RC_WEIGHTS];
        r->gradients_mib = k * rr.cat_mib[EST_RC_GRADS];
        r->optimizer_mib = k * rr.cat_mib[EST_RC_STATE];
        r->activations_mib = k * rr.cat_mib[EST_RC_ACT];
        r->transient_mib = k * (rr.cat_mib[EST_RC_TRANSIENT] + rr.cached_mib);
        r->buckets_mib = k * rr.cat_mib[EST_RC_BUCKETS];
        r->peak_phase = rr.peak_phase;
        r->checkpointed_units = rr.checkpointed_units;
        r->math_attention = rr.math_attention;
        r->peak_iteration = rr.peak_iteration;
        if (o->grad_accum) {
            r->accum_micro_batches = rr.micro_batches;
            r->accum_grads_kept = rr.grads_kept;
        }
    } else {
        double f[EST_NFEAT];
        est_features(m, o, f, &r->weights_mib, &r->gradients_mib, &r->optimizer_mib);
        est_terms(c, fam, o, f, r);
        if (o->gpus > 1)
            r->buckets_mib = ddp_buckets_mib(m);
    }
    r->estimate_mib = r->floor_mib + r->weights_mib + r->gradients_mib + r->optimizer_mib +
                      r->activations_mib + r->transient_mib + r->buckets_mib;
    double dynamic = r->estimate_mib - r->floor_mib;
    /* The size bands were calibrated in the fitted floor's environment on GPUMemNet's
     * MLPs and CNNs: a floor the user measured is another environment, and a model with
     * attention another kind of model (whose replay errs otherwise than an MLP's), both
     * bounded with the pooled quantile. The default floor is an assumption about the
     * job's environment, not a measurement of it, so its bound is also the fitted
     * environment's bound. */
    int banded = !est_model_has_attention(m);
    r->bound_mib = est_bound(c, r->family, r->estimate_mib, dynamic,
                             banded && o->floor_src != EST_FLOOR_GIVEN);
    if (o->floor_src == EST_FLOOR_DEFAULT) {
        double fitted = est_bound(c, r->family, fitted_floor + dynamic, dynamic, banded);
        if (fitted > r->bound_mib)
            r->bound_mib = fitted;
    }
    r->fits = o->gpu_mib <= 0 || r->bound_mib <= o->gpu_mib;
    assert(r->bound_mib >= r->estimate_mib);
    return 0;
}

/* est_max_batch's probe of batch b: moves lo up to b (its estimate into *r) when b fits,
 * else hi down to b (into *next). */
static int max_batch_probe(const struct est_model *m, const struct est_coef *c,
                           struct est_opts *q, uint32_t b, struct est_replay_work *work,
                           uint32_t *lo, uint32_t *hi, struct est_result *r,
                           struct est_result *next, struct carma_err *err)
{
    struct est_result t;
    q->batch = b;
    int rc = est_compute(m, c, q, work, &t, err);
    if (rc < 0)
        return rc;
    if (t.fits) {
        *lo = b;
        *r = t;
    } else {
        *hi = b;
        *next = t;
    }
    return 0;
}

int est_max_batch(const struct est_model *m, const struct est_coef *c, const struct est_opts *o,
                  struct est_replay_work *work, uint32_t *batch, struct est_result *r,
                  struct est_result *next, struct carma_err *err)
{
    *batch = 0;
    memset(next, 0, sizeof *next);
    if (!(o->gpu_mib > 0))
        return carma_err_set(err, -EINVAL, "the largest batch needs a GPU's memory");
    struct est_opts q = *o;
    q.batch = 1;
    int rc = est_compute(m, c, &q, work, r, err);
    if (rc < 0 || !r->fits)
        return rc;
    /* fits(lo) and, once hi is set, !fits(hi) */
    uint32_t lo = 1, hi = 0;
    while (rc == 0 && hi == 0 && lo < EST_MAX_BATCH)
        rc = max_batch_probe(m, c, &q, lo * 2 > EST_MAX_BATCH ? EST_MAX_BATCH : lo * 2, work,
                             &lo, &hi, r, next, err);
    while (rc == 0 && hi > lo + 1)
        rc = max_batch_probe(m, c, &q, lo + (hi - lo) / 2, work, &lo, &hi, r, next, err);
    if (rc < 0)
        return rc;
    *batch = lo;
    return 0;
}
