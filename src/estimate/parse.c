/* Model-description parsers (parse.h). Shared pieces: a bounded line reader, strict
 * numbers with thousands separators, shapes. One function per format below. */
#include "estimate/parse.h"
#include "estimate/replay.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/csv.h"

/* ---- lines ---------------------------------------------------------------- */

struct lines {
    const char *buf;
    size_t len, pos, line; /* line: 1-based number of the line last returned */
    const char *file;
    const uint32_t *map; /* a copy's lines in the print: line is map[seq - 1] (NULL: seq) */
    size_t seq;          /* lines returned */
};

/* Classes of no modelled kind that hold no parameters whatever their arguments: they
 * pass their input on, reshape, pad, resample or drop it (torch.nn's, torchvision's,
 * timm's and einops' spellings). */
static int leaf_paramless(const char *c, size_t n)
{
    static const char *const names[] = {"Identity",
                                        "Flatten",
                                        "Unflatten",
                                        "Permute",
                                        "Reshape",
                                        "StochasticDepth",
                                        "DropPath",
                                        "DropBlock2d",
                                        "Rearrange",
                                        "Reduce",
                                        "PixelShuffle",
                                        "PixelUnshuffle",
                                        "ChannelShuffle",
                                        "Fold",
                                        "Unfold",
                                        "Upsample",
                                        "UpsamplingNearest2d",
                                        "UpsamplingBilinear2d"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == n && strncasecmp(c, names[i], n) == 0)
            return 1;
    /* ZeroPad2d, ConstantPad1d, ReflectionPad2d, ReplicationPad3d, CircularPad2d */
    return n >= 5 && memmem(c, n, "Pad", 3) && c[n - 1] == 'd' && c[n - 2] >= '1' &&
           c[n - 2] <= '3';
}

static void lines_init(struct lines *l, const char *buf, size_t len, const char *file)
{
    l->buf = buf;
    l->len = len;
    l->pos = 0;
    l->line = 0;
    l->file = file;
    l->map = NULL;
    l->seq = 0;
}

/* Next line into [*s, *s + *n) without its \n or \r\n. Returns 1, 0 at the end, or
 * a negative code (NUL byte, line too long). */
static int lines_next(struct lines *l, const char **s, size_t *n, struct carma_err *err)
{
    if (l->pos >= l->len)
        return 0;
    const char *start = l->buf + l->pos;
    size_t rest = l->len - l->pos;
    const char *nl = memchr(start, '\n', rest);
    size_t k = nl ? (size_t)(nl - start) : rest;
    l->seq++;
    l->line = l->map ? l->map[l->seq - 1] : l->seq;
    l->pos += nl ? k + 1 : k;
    if (memchr(start, '\0', k))
        return carma_err_at(err, l->file, l->line, "NUL byte: not a text summary");
    if (k > EST_MAX_LINE)
        return carma_err_at(err, l->file, l->line, "line longer than %d bytes", EST_MAX_LINE);
    if (k && start[k - 1] == '\r')
        k--;
    *s = start;
    *n = k;
    return 1;
}

static void trim(const char **s, size_t *n)
{
    while (*n && isspace((unsigned char)**s)) {
        (*s)++;
        (*n)--;
    }
    while (*n && isspace((unsigned char)(*s)[*n - 1]))
        (*n)--;
}

static int blank(const char *s, size_t n)
{
    trim(&s, &n);
    return n == 0;
}

/* The first needle in [s, s+n), or NULL (an empty needle too). memmem: format detection
 * and the parsers search whole 64 KiB texts for a few headers. */
static const char *find(const char *s, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    if (k == 0 || k > n)
        return NULL;
    return memmem(s, n, needle, k);
}

/* A line made only of one repeated rule character ('=', '-', '_') or box drawing. */
static int rule_line(const char *s, size_t n, char c)
{
    trim(&s, &n);
    if (n < 3)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] != c)
            return 0;
    return 1;
}

/* ---- numbers and shapes ------------------------------------------------------ */

int est_parse_count(const char *s, size_t n, uint64_t *out)
{
    trim(&s, &n);
    if (n == 2 && s[0] == '-' && s[1] == '-') {
        *out = 0;
        return 0;
    }
    if (n == 0 || n > 26 || !isdigit((unsigned char)s[0]))
        return -EINVAL;
    uint64_t v = 0;
    size_t group = 0;
    int commas = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ',') {
            if (group == 0 || (commas && group != 3) || (!commas && group > 3))
                return -EINVAL;
            commas = 1;
            group = 0;
            continue;
        }
        if (!isdigit((unsigned char)s[i]))
            return -EINVAL;
        if (v > (UINT64_MAX - 9) / 10)
            return -EINVAL;
        v = v * 10 + (uint64_t)(s[i] - '0');
        group++;
    }
    if (commas && group != 3)
        return -EINVAL;
    *out = v;
    return 0;
}

/* One tensor "(-1, 64, 8)" / "[None, 3]" at s[0] (an opening bracket); stores its
 * per-sample elements and the index after the closing bracket, and when tail is not
 * NULL its number of dimensions and its last two (tail[1] the last). */
static int parse_tensor(const char *s, size_t n, size_t *used, uint64_t *elems, int *ndims,
                        uint64_t *tail)
{
    char close = s[0] == '[' ? ']' : ')';
    size_t i = 1;
    uint64_t prod = 1;
    int dims = 0;
    for (;;) {
        while (i < n && s[i] == ' ')
            i++;
        if (i >= n)
            return -EINVAL;
        if (s[i] == close && dims == 0)
            return -EINVAL; /* empty shape */
        int neg = 0;
        uint64_t d = 0;
        if (n - i >= 4 && memcmp(s + i, "None", 4) == 0) {
            if (dims > 0)
                return -EINVAL; /* only the batch may be unknown */
            i += 4;
            neg = 1;
        } else {
            if (s[i] == '-') {
                neg = 1;
                i++;
            }
            size_t st = i;
            while (i < n && isdigit((unsigned char)s[i])) {
                if (d > (1u << 31))
                    return -EINVAL;
                d = d * 10 + (uint64_t)(s[i] - '0');
                i++;
            }
            if (i == st || (neg && d != 1) || d > (1u << 31))
                return -EINVAL;
        }
        if (dims > 0) {
            if (neg)
                return -EINVAL;
            if (d && prod > EST_MAX_ELEMS / d)
                return -EINVAL;
            prod *= d;
        }
        if (tail) {
            tail[0] = tail[1];
            tail[1] = d;
        }
        dims++;
        while (i < n && s[i] == ' ')
            i++;
        if (i < n && s[i] == ',') {
            i++;
            continue;
        }
        if (i < n && s[i] == close)
            break;
        return -EINVAL;
    }
    *used = i + 1;
    *elems = prod;
    if (ndims)
        *ndims = dims;
    return 0;
}

int est_parse_shape(const char *s, size_t n, uint64_t *elems)
{
    trim(&s, &n);
    if (n < 2)
        return -EINVAL;
    /* A list of tensors: "[[-1, 10], [-1, 20]]" or "[(None, 28, 28, 1)]". */
    if (s[0] == '[' && (s[1] == '[' || s[1] == '(')) {
        size_t i = 1;
        uint64_t total = 0;
        for (;;) {
            while (i < n && s[i] == ' ')
                i++;
            if (i >= n || (s[i] != '[' && s[i] != '('))
                return -EINVAL;
            size_t used;
            uint64_t e;
            if (parse_tensor(s + i, n - i, &used, &e, NULL, NULL) < 0)
                return -EINVAL;
            total += e;
            if (total > EST_MAX_ELEMS)
                return -EINVAL;
            i += used;
            while (i < n && s[i] == ' ')
                i++;
            if (i < n && s[i] == ',') {
                i++;
                continue;
            }
            if (i + 1 == n && s[i] == ']')
                break;
            return -EINVAL;
        }
        *elems = total;
        return 0;
    }
    if (s[0] != '[' && s[0] != '(')
        return -EINVAL;
    size_t used;
    if (parse_tensor(s, n, &used, elems, NULL, NULL) < 0 || used != n)
        return -EINVAL;
    return 0;
}

/* Extent of a bracketed shape starting at s[0]: matching close bracket, nesting of
 * at most two levels. Returns its length or 0. */
static size_t shape_extent(const char *s, size_t n)
{
    int depth = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '[' || s[i] == '(') {
            if (++depth > 2)
                return 0;
        } else if (s[i] == ']' || s[i] == ')') {
            if (--depth == 0)
                return i + 1;
            if (depth < 0)
                return 0;
        }
    }
    return 0;
}

/* 1 when s is one tensor shape of at least four dimensions whose last two are equal and
 * above 1: [batch, heads, seq, seq], the shape of attention probabilities. */
static int scores_shape(const char *s, size_t n)
{
    trim(&s, &n);
    if (n < 2 || s[0] != '[' || s[1] == '[' || s[1] == '(')
        return 0;
    size_t used;
    uint64_t elems, tail[2] = {0, 0};
    int dims;
    if (parse_tensor(s, n, &used, &elems, &dims, tail) < 0 || used != n)
        return 0;
    return dims >= 4 && tail[0] == tail[1] && tail[1] > 1;
}

/* "KEY 11,227,812" (Keras adds " (42.83 MB)"), key "Total params:" or "Trainable
 * params:". 1 when found, -1 when its count is bad. */
static int params_line(const char *s, size_t n, const char *key, uint64_t *v)
{
    trim(&s, &n);
    size_t kn = strlen(key);
    if (n < kn || memcmp(s, key, kn) != 0)
        return 0;
    s += kn;
    n -= kn;
    trim(&s, &n);
    size_t k = 0;
    while (k < n && s[k] != ' ')
        k++;
    return est_parse_count(s, k, v) == 0 ? 1 : -1;
}

/* "Total params: 11,227,812". 1 when found. */
static int total_params_line(const char *s, size_t n, uint64_t *total)
{
    return params_line(s, n, "Total params:", total);
}

/* A table's "Trainable params:" line (the first after its rows) into m; 0, or -1 when its
 * count is bad. */
static int trainable_params_line(struct est_model *m, const char *s, size_t n, size_t line)
{
    uint64_t v;
    int tp = m->trainable_line ? 0 : params_line(s, n, "Trainable params:", &v);
    if (tp > 0) {
        m->trainable_printed = v;
        m->trainable_line = line;
    }
    return tp < 0 ? -1 : 0;
}

/* Places the frozen parameters a table's printed "Trainable params:" count implies beyond
 * those its rows mark: a frozen prefix (transfer learning's frozen backbone, whose rows
 * come first), when the trained parameters of the rows before some row are exactly the
 * difference. Those rows are then frozen, in fp32 (wbits 32). Returns 1 when the rows
 * train the printed count, 0 (m unchanged) when no prefix gives it; a printed 0 (a model
 * that trains nothing: a backbone printed alone) is not placed. */
static int trainable_place(struct est_model *m)
{
    uint64_t have = m->params - m->frozen, printed = m->trainable_printed;
    if (have == printed)
        return 1;
    if (printed == 0 || printed > have)
        return 0;
    uint64_t want = have - printed, sum = 0;
    size_t k = 0;
    while (k < m->n && sum < want) {
        const struct est_layer *l = &m->layers[k++];
        sum += (l->params - l->frozen) * l->count;
    }
    if (sum != want)
        return 0;
    for (size_t i = 0; i < k; i++) {
        struct est_layer *l = &m->layers[i];
        if (l->params > l->frozen) {
            l->frozen = l->params;
            l->wbits = 32;
        }
    }
    m->frozen += want;
    return 1;
}

/* After trainable_place found nothing: why (m->trainable_unplaced), and every parameter
 * trains but those of the rows the table marks frozen, all of them when those marks
 * leave fewer than the printed count. */
static void trainable_unplaced(struct est_model *m)
{
    uint64_t have = m->params - m->frozen;
    m->trainable_unplaced = m->trainable_printed > have ? EST_TRAIN_ABOVE
                            : m->trainable_printed == 0 ? EST_TRAIN_ZERO
                                                        : EST_TRAIN_NO_PREFIX;
    if (m->trainable_printed <= have)
        return;
    for (size_t i = 0; i < m->n; i++) {
        m->layers[i].frozen = 0;
        m->layers[i].wbits = 0; /* a table's rows are never quantized */
    }
    m->frozen = 0;
}

/* After parsing a table whose rows list every layer with its parameters (torchsummary's
 * total is the sum of its rows, Keras's of its layers'): a printed total above the rows'
 * means rows are missing (a cut or edited paste), whose activations would be lost too, so
 * it is refused, naming both counts (`fix`: what to give instead). Below it (a weight two
 * rows share, counted once) is the safe side. 0, or a negative code with err set. */
static int rows_total(const struct est_model *m, uint64_t total, const char *file, size_t line,
                      const char *fix, struct carma_err *err)
{
    if (total <= m->params)
        return 0;
    return carma_err_at(err, file, line,
                        "the rows hold %llu parameters, but 'Total params' says %llu: the "
                        "total is the sum of the rows, so rows holding %llu are missing (a "
                        "table cut or edited when pasted), and their activations with them; %s",
                        (unsigned long long)m->params, (unsigned long long)total,
                        (unsigned long long)(total - m->params), fix);
}

/* Refuses, naming the line, a layer type no summary lets carma bound (est_type_unmodelled):
 * 0, or a negative code with err set. */
static int refuse_unmodelled(const char *file, size_t line, const char *type, size_t n,
                             struct carma_err *err)
{
    const char *why = est_type_unmodelled(type, n);
    return why ? carma_err_at(err, file, line, "%.*s: %s", (int)n, type, why) : 0;
}

/* The first dimension of a shape "[32, 3, 224, 224]" (the batch a table was printed
 * at), 0 when it is not a positive integer ("-1", "None"). */
static uint64_t shape_first_dim(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && (s[i] == '[' || s[i] == '(' || s[i] == ' '))
        i++;
    uint64_t b = 0;
    while (i < n && isdigit((unsigned char)s[i]) && b < (1u << 30))
        b = b * 10 + (uint64_t)(s[i++] - '0');
    return i < n && (s[i] == ',' || s[i] == ']' || s[i] == ')') ? b : 0;
}

/* The dimensions of s when it is one shape "[32, 256, 56, 56]" of at most max of them
 * (each below 2^40): their count, into d; 0 for anything else. */
static size_t shape_dims(const char *s, size_t n, uint64_t *d, size_t max)
{
    if (n < 2 || s[0] != '[' || s[n - 1] != ']' || memchr(s + 1, '[', n - 2))
        return 0;
    size_t k = 0;
    d[0] = 0;
    for (size_t i = 1; i + 1 < n; i++) {
        if (s[i] == ',') {
            if (++k >= max)
                return 0;
            d[k] = 0;
        } else if (isdigit((unsigned char)s[i]) && d[k] < (1ull << 40)) {
            d[k] = d[k] * 10 + (uint64_t)(s[i] - '0');
        }
    }
    return k + 1;
}

/* "Input size (MB): 19.27" at s: the MB, or -1 when the line is not one. */
static double input_size_mb(const char *s, size_t n)
{
    const char *is = find(s, n, "Input size (MB):");
    if (!is)
        return -1;
    char tmp[64];
    const char *v = is + 16;
    size_t vn = n - (size_t)(v - s);
    trim(&v, &vn);
    double mb;
    if (!vn || vn >= sizeof tmp)
        return -1;
    memcpy(tmp, v, vn);
    tmp[vn] = 0;
    return carma_parse_double(tmp, &mb) == 0 && mb >= 0 && mb < 1e6 ? mb : -1;
}

/* ---- torchsummary ------------------------------------------------------------- */

/* A layer's own parameters, without a LoRA adapter's. */
static uint64_t base_params(const struct est_layer *l)
{
    return l->rank ? l->frozen : l->params;
}

/* p is the parameter count of a linear layer from `in` to `out` features, with or
 * without a bias. */
static int linear_params(uint64_t p, uint64_t in, uint64_t out)
{
    return in && out && out <= EST_MAX_PARAMS / in && (p == in * out || p == in * out + out);
}

static int keras_class(const char *type, size_t n);

/* torch.nn's layer classes (and Hugging Face's Conv1D, bitsandbytes' quantized linear
 * layers) of the kinds est_kind_classify finds in names, each followed by a space: each is
 * one layer, whatever parameters it holds (a LayerNorm over several dimensions, a
 * Bilinear). */
static const char torch_classes[] =
    "Linear LazyLinear Bilinear NonDynamicallyQuantizableLinear Conv1D Linear4bit "
    "Linear8bitLt Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d "
    "LazyConv1d LazyConv2d LazyConv3d LazyConvTranspose1d LazyConvTranspose2d "
    "LazyConvTranspose3d BatchNorm1d BatchNorm2d BatchNorm3d LazyBatchNorm1d "
    "LazyBatchNorm2d LazyBatchNorm3d SyncBatchNorm GroupNorm LayerNorm RMSNorm "
    "InstanceNorm1d InstanceNorm2d InstanceNorm3d LazyInstanceNorm1d LazyInstanceNorm2d "
    "LazyInstanceNorm3d LocalResponseNorm CrossMapLRN2d ReLU ReLU6 LeakyReLU PReLU RReLU "
    "ELU SELU CELU GELU SiLU Mish Sigmoid Tanh Hardswish Hardsigmoid Hardtanh Hardshrink "
    "Softshrink Softplus Softsign Tanhshrink Threshold GLU LogSigmoid Softmax Softmax2d "
    "LogSoftmax Softmin Dropout Dropout1d Dropout2d Dropout3d AlphaDropout "
    "FeatureAlphaDropout MaxPool1d MaxPool2d MaxPool3d AvgPool1d AvgPool2d AvgPool3d "
    "AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d AdaptiveMaxPool1d "
    "AdaptiveMaxPool2d AdaptiveMaxPool3d LPPool1d LPPool2d LPPool3d FractionalMaxPool2d "
    "FractionalMaxPool3d Embedding EmbeddingBag ";

/* a[0, an) and b[0, bn) name the same class: case aside, and '_' left out of both (a
 * layer CSV's Keras layer names, "batch_normalization" for BatchNormalization) */
static int class_is(const char *a, size_t an, const char *b, size_t bn)
{
    size_t i = 0, k = 0;
    for (;;) {
        while (i < an && a[i] == '_')
            i++;
        while (k < bn && b[k] == '_')
            k++;
        if (i == an || k == bn)
            return i == an && k == bn;
        if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[k]))
            return 0;
        i++;
        k++;
    }
}

/* Whether type[0, n) is a layer class of torch.nn or Keras (torch_classes,
 * keras_classes): one layer, not a block of them that its name makes look like one. */
static int one_layer_class(const char *type, size_t n)
{
    for (const char *c = torch_classes, *e; (e = strchr(c, ' ')); c = e + 1)
        if (class_is(c, (size_t)(e - c), type, n))
            return 1;
    return keras_class(type, n);
}

/* Whether type[0, n) ends, case aside, in a convolution's class name (Conv1d to Conv3d,
 * ConvTranspose1d to 3d, timm's Conv2dSame; Keras's Conv2D): StdConv2d, DeformConv2d,
 * DepthwiseConv2D are one convolution by PyTorch's and Keras's naming, where
 * _ConvolutionModule or a ConvModule is a block. */
static int conv_class_name(const char *type, size_t n)
{
    static const char *const conv[] = {"Conv1d",          "Conv2d",          "Conv3d",
                                       "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
                                       "Conv2dSame"};
    for (size_t k = 0; k < sizeof conv / sizeof conv[0]; k++) {
        size_t cn = strlen(conv[k]);
        if (n >= cn && strncasecmp(type + n - cn, conv[k], cn) == 0)
            return 1;
    }
    return 0;
}

/* The widths (last dimensions) of the tensors a table showed so far, the first
 * EST_WIDTHS distinct ones: a linear layer of a class carma does not know reads one of
 * them. */
#define EST_WIDTHS 256
struct widths {
    size_t n;
    uint64_t w[EST_WIDTHS];
};

static void widths_add(struct widths *ws, uint64_t w)
{
    if (!w)
        return;
    for (size_t i = 0; i < ws->n; i++)
        if (ws->w[i] == w)
            return;
    if (ws->n < EST_WIDTHS)
        ws->w[ws->n++] = w;
}

/* Whether `params` parameters fit one layer of kind k of a class carma does not know by
 * name (one_layer_class), its output `chans` channels or features (0: unknown), its input
 * one of the widths in ws (NULL: unknown): a norm or an activation (PReLU), and a
 * dropout, pooling or softmax, holds at most two per channel; a convolution is named as
 * one (conv_class_name); a linear layer maps one of the widths seen to its output, with
 * or without a bias; an embedding or attention is read by its own rules. Otherwise the
 * row is a block of layers named after one of them (timm's GluMlp and SwiGLU, a PreNorm,
 * torchaudio's _ConvolutionModule), which a table shows collapsed. */
static int kind_holds(enum est_kind k, const char *type, size_t n, uint64_t params, uint64_t chans,
                      const struct widths *ws)
{
    if (params == 0 || k == EST_K_OTHER || k == EST_K_EMBED || k == EST_K_ATTN)
        return 1;
    if (k == EST_K_CONV)
        return conv_class_name(type, n);
    if (k == EST_K_LINEAR) {
        if (!ws || !chans)
            return 0;
        for (size_t i = 0; i < ws->n; i++)
            if (linear_params(params, ws->w[i], chans))
                return 1;
        return 0;
    }
    return chans && params <= 2 * chans;
}

/* Linear layers g and u both E -> I and d I -> E (E != I, each with or without a
 * bias): a gated MLP's gate, up and down projections. Their outputs are per token (a
 * module tree) or per sample, S tokens times the width (a table): S follows from
 * out(g) x out(d) = S^2 E I. */
static int gated_shapes(const struct est_layer *g, const struct est_layer *u,
                        const struct est_layer *d)
{
    uint64_t gp = base_params(g), dp = base_params(d);
    if (!g->out || !d->out || !gp || u->out != g->out || base_params(u) != gp)
        return 0;
    double s2 = (double)g->out * (double)d->out / (double)gp;
    uint64_t sq = (uint64_t)(sqrt(s2) + 0.5);
    if (sq == 0 || g->out % sq || d->out % sq)
        return 0;
    uint64_t i = g->out / sq, e = d->out / sq;
    if (e == i)
        return 0;
    return linear_params(gp, e, i) && linear_params(dp, i, e);
}

/* Tables list layers in call order: a gated MLP shows as gate, activation, up, down.
 * Flags each such up projection EST_LF_GATED. */
static void mark_gated(struct est_model *m)
{
    for (size_t j = 0; j + 3 < m->n; j++) {
        struct est_layer *l = &m->layers[j];
        if (l[0].kind == EST_K_LINEAR && l[1].kind == EST_K_ACT && l[2].kind == EST_K_LINEAR &&
            l[3].kind == EST_K_LINEAR && l[1].out == l[0].out && l[0].count == l[2].count &&
            gated_shapes(&l[0], &l[2], &l[3]))
            l[2].flags |= EST_LF_GATED;
    }
}

/* Tables list an attention's query, key and value projections and then the dropout
 * that stands for its probabilities (an EST_K_ATTN row): the key and value read the
 * query's input (est_layer.shares_input), as in module trees. */
static void mark_qkv(struct est_model *m)
{
    for (size_t j = 3; j < m->n; j++) {
        struct est_layer *l = &m->layers[j - 3];
        if (l[3].kind == EST_K_ATTN && l[0].kind == EST_K_LINEAR &&
            l[1].kind == EST_K_LINEAR && l[2].kind == EST_K_LINEAR &&
            l[1].count == l[0].count && l[2].count == l[0].count)
            l[1].shares_input = l[2].shares_input = 1;
    }
}

/* Whether the class name type[0, n) names, case aside, a convolution or a linear layer
 * anywhere in it (ConvNormAct, Conv2dNormActivation, LinearNorm): a layer that always has
 * a weight, so such a row without parameters is a block around one. */
static int names_weighted_layer(const char *type, size_t n)
{
    static const char *const w[] = {"conv", "linear"};
    for (size_t k = 0; k < sizeof w / sizeof w[0]; k++) {
        size_t wn = strlen(w[k]);
        for (size_t i = 0; i + wn <= n; i++)
            if (strncasecmp(type + i, w[k], wn) == 0)
                return 1;
    }
    return 0;
}

int est_parse_torchsummary(const char *buf, size_t len, const char *file, struct est_model *m,
                           struct carma_err *err)
{
    struct lines L;
    lines_init(&L, buf, len, file);
    const char *s;
    size_t n;
    int rc, state = 0; /* 0 before header, 1 header seen, 2 rows, 3 after rows */
    uint64_t total = 0;
    int have_total = 0;
    size_t rows = 0, input_line = 0, total_line = 0;
    uint64_t shape_batch = 1; /* summary(..., batch_size=N) prints N, not -1 */
    m->format = EST_FMT_TORCHSUMMARY;
    while ((rc = lines_next(&L, &s, &n, err)) == 1) {
        if (state == 0) {
            /* Text before the table (a notebook's or a log's) is passed over, as text after
             * it is; a header line that lacks a column is refused. */
            int lt = find(s, n, "Layer (type)") != NULL;
            const char *pc = lt ? find(s, n, "Param #") : NULL;
            if (lt && find(s, n, "Output Shape") && pc) {
                const char *x = pc + 7;
                size_t xn = n - (size_t)(x - s);
                trim(&x, &xn);
                if (xn) /* an edited table: its rows would not read as printed */
                    return carma_err_at(err, file, L.line,
                                        "torchsummary header with a column after 'Param #' "
                                        "('%.*s'), which torchsummary does not print (another "
                                        "tool's table, or an edited one): give torchsummary's "
                                        "table as printed, or a torchinfo table",
                                        (int)(xn < 40 ? xn : 40), x);
                state = 1;
            } else if (lt)
                return carma_err_at(err, file, L.line,
                                    "expected the torchsummary header 'Layer (type)  Output "
                                    "Shape  Param #'");
            continue;
        }
        if (state == 1) {
            if (!rule_line(s, n, '='))
                return carma_err_at(err, file, L.line, "expected a '====' rule after the header");
            state = 2;
            continue;
        }
        if (state == 2) {
            if (rule_line(s, n, '=')) {
                state = 3;
                continue;
            }
            const char *t = s;
            size_t tn = n;
            trim(&t, &tn);
            const char *br = memchr(t, '[', tn);
            if (!br)
                return carma_err_at(err, file, L.line, "layer row without an output shape");
            size_t name_n = (size_t)(br - t);
            while (name_n && isspace((unsigned char)t[name_n - 1])) /* spaces, or tabs */
                name_n--;
            /* "Conv2d-1": the type, a dash, the layer number. */
            size_t dash = name_n;
            while (dash && isdigit((unsigned char)t[dash - 1]))
                dash--;
            if (dash == name_n || dash < 2 || t[dash - 1] != '-')
                return carma_err_at(err, file, L.line, "layer name '%.*s' is not TYPE-N",
                                    (int)(name_n > 80 ? 80 : name_n), t);
            size_t ext = shape_extent(br, tn - (size_t)(br - t));
            uint64_t out = 0, params;
            /* "[]": torchsummary's output shape of a module that returns a tuple (every
             * Hugging Face layer, a block returning (x, aux)), which it does not size */
            int tuple = ext == 2 && br[1] == ']';
            if (!ext || (!tuple && est_parse_shape(br, ext, &out) < 0))
                return carma_err_at(err, file, L.line, "bad output shape");
            const char *p = br + ext;
            size_t pn = tn - (size_t)(p - t);
            trim(&p, &pn);
            if (est_parse_count(p, pn, &params) < 0)
                return carma_err_at(err, file, L.line, "bad parameter count '%.*s'",
                                    (int)(pn > 40 ? 40 : pn), p);
            if ((rc = refuse_unmodelled(file, L.line, t, dash - 1, err)))
                return rc;
            /* torchsummary prints a wrapper module too (Inception's BasicConv2d, after its
             * conv, norm and activation), with its own parameters: none. A convolution or
             * linear layer always has a weight, so such a row holds no tensor of its own;
             * nor does one named after a convolution and a norm (timm's ConvNormAct,
             * after its Conv2d and BatchNormAct2d, est_kind_classify's norm by its name):
             * a norm without parameters is not named after a convolution too. */
            enum est_kind k = est_kind_classify(t, dash - 1);
            /* A block returning a tuple, no parameters of its own and no kind, is such a
             * wrapper too: its layers have rows of their own. Anything else that returns
             * one (nn.MultiheadAttention's (output, weights), a pooling's return_indices)
             * keeps what the table does not show. */
            if (tuple && (params || k != EST_K_OTHER))
                return carma_err_at(err, file, L.line,
                                    "'%.*s' (%llu parameters, read as %s) has the output shape "
                                    "[], torchsummary's for a module that returns a tuple: what "
                                    "it outputs and keeps for backward is not shown; give a "
                                    "torchinfo table (torchinfo's summary(model, input_size=...) "
                                    "sizes each tuple's tensors)",
                                    (int)(dash - 1), t, (unsigned long long)params,
                                    est_kind_name(k));
            int wrapper = (params == 0 && (k == EST_K_CONV || k == EST_K_LINEAR ||
                                           names_weighted_layer(t, dash - 1))) ||
                          tuple;
            if ((wrapper ? est_model_add(m, EST_K_OTHER, out, 0, 1, 0)
                         : est_model_add_type(m, t, dash - 1, out, params, 1, 0)) < 0)
                return carma_err_at(err, file, L.line, "too many layers or too large a layer");
            uint64_t first_dim = rows++ == 0 ? shape_first_dim(br, (size_t)(t + tn - br)) : 0;
            if (first_dim > 0) {
                shape_batch = first_dim;
                m->table_batch = first_dim;
            }
            continue;
        }
        /* state 3: totals and sizes. */
        if (find(s, n, "Layer (type)"))
            return carma_err_at(err, file, L.line,
                                "a second table starts here: give one model per summary");
        int tp = total_params_line(s, n, &total);
        if (tp < 0)
            return carma_err_at(err, file, L.line, "bad 'Total params' line");
        if (tp) {
            have_total = 1;
            total_line = L.line;
        }
        if (trainable_params_line(m, s, n, L.line) < 0)
            return carma_err_at(err, file, L.line, "bad 'Trainable params' line");
        /* Input size in MiB (torchsummary's MB), float32, of the shapes' batch: the
         * input elements per sample. */
        double mb = input_size_mb(s, n);
        if (mb >= 0 && !m->input) {
            m->input = (uint64_t)(mb * 1048576.0 / 4.0 / (double)shape_batch);
            input_line = L.line;
        }
    }
    if (rc < 0)
        return rc;
    if (state == 1) /* the header was read: the file ends before its rule */
        return carma_err_at(err, file, L.line,
                            "the table ends after its header: no '====' rule and no layer "
                            "rows (cut short?)");
    if (state < 2)
        return carma_err_at(err, file, L.line ? L.line : 1,
                            "not a torchsummary table (no header)");
    if (state == 2)
        return carma_err_at(err, file, L.line, "table not closed by a '====' rule");
    if (rows == 0)
        return carma_err_at(err, file, L.line, "no layers");
    /* torchsummary's "Input size" of several inputs is the product of all their sizes
     * (a known bug): an input far above every layer's output is that, not an input. */
    uint64_t largest = 0;
    for (size_t i = 0; i < m->n; i++)
        if (m->layers[i].out > largest)
            largest = m->layers[i].out;
    /* a first linear layer on a flattened input says its width: params / out, or less */
    if (m->n && m->layers[0].kind == EST_K_LINEAR && m->layers[0].out &&
        m->layers[0].params / m->layers[0].out > largest)
        largest = m->layers[0].params / m->layers[0].out;
    if (input_line && m->input / 64 > largest)
        return carma_err_at(err, file, input_line,
                            "an input of %llu elements, more than 64 times the largest layer "
                            "output (%llu): torchsummary multiplies the sizes of several "
                            "inputs together, so the input is unknown; give a torchinfo table",
                            (unsigned long long)m->input, (unsigned long long)largest);
    if (have_total &&
        (rc = rows_total(m, total, file, total_line, "give the whole table as printed", err)) < 0)
        return rc;
    /* torchsummary marks no row frozen: its printed trainable count tells them */
    if (m->trainable_line && !trainable_place(m))
        trainable_unplaced(m);
    mark_gated(m);
    return 0;
}

/* ---- torchinfo ------------------------------------------------------------------ */

/* How many times a row's per-sample elements (est_parse_shape: all dimensions but the
 * first) its output s holds beyond what the batch b makes of them: its first dimension
 * (of each tensor of a list: the largest factor) over b. 1 where it is b, or divides b
 * (a position table's [1, seq, width], broadcast over the batch: read per sample, the
 * safe side) or is not a number; k where it is k x b (tokens flattened into the batch,
 * x.view(-1, width), as Hugging Face's mixture-of-experts blocks run their router and
 * experts); 0 where it is neither (tokens routed to an expert, a sequence-first [seq,
 * batch, width] output), its value into *first. */
static uint64_t batch_factor(const char *s, size_t n, uint64_t b, uint64_t *first)
{
    uint64_t most = 1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '[' && s[i] != '(')
            continue;
        size_t k = i + 1;
        while (k < n && s[k] == ' ')
            k++;
        if (k == n || !isdigit((unsigned char)s[k]))
            continue; /* a list's bracket, or -1 / None */
        uint64_t d = 0;
        while (k < n && isdigit((unsigned char)s[k]) && d < (1ull << 40))
            d = d * 10 + (uint64_t)(s[k++] - '0');
        if (d == 0 || b == 0 || d == b || b % d == 0)
            continue;
        if (d % b) {
            *first = d;
            return 0;
        }
        if (d / b > most)
            most = d / b;
    }
    return most;
}

enum ti_col { TI_INPUT, TI_OUTPUT, TI_PARAMS, TI_KERNEL, TI_GROUPS, TI_MULTADDS, TI_TRAIN, TI_PCT };
#define TI_MAXCOL 8

/* Skips torchinfo's tree drawing: "│    └─", "├─", spaces. */
static size_t skip_tree(const char *s, size_t n)
{
    size_t i = 0;
    for (;;) {
        if (i < n && s[i] == ' ') {
            i++;
        } else if (n - i >= 3 && (unsigned char)s[i] == 0xe2 && (unsigned char)s[i + 1] == 0x94 &&
                   ((unsigned char)s[i + 2] == 0x82 || (unsigned char)s[i + 2] == 0x80 ||
                    (unsigned char)s[i + 2] == 0x9c || (unsigned char)s[i + 2] == 0x94)) {
            i += 3; /* │ ─ ├ └ */
        } else if (i < n && (s[i] == '|' || s[i] == '-' || s[i] == '+' || s[i] == '`')) {
            i++; /* ASCII fallback drawing */
        } else {
            return i;
        }
    }
}

/* The tree depth of a row from its drawing s[0, i) (skip_tree's extent): torchinfo
 * prints depth d >= 1 as d - 1 "│    " (ASCII "|    ") and a branch "├─" or "└─" (older
 * versions "├─" at any depth; ASCII "+ "). 0 and *depth set, or -1 without a branch. */
static int tree_depth(const char *s, size_t i, unsigned *depth)
{
    unsigned bars = 0;
    int branch = 0;
    for (size_t k = 0; k < i; k++) {
        unsigned char c = (unsigned char)s[k];
        if (c == 0xe2 && i - k >= 3) {
            unsigned char d = (unsigned char)s[k + 2];
            bars += d == 0x82;                 /* │ */
            branch |= d == 0x9c || d == 0x94;  /* ├ └ */
            k += 2;
        } else {
            bars += c == '|';
            branch |= c == '+' || c == '`';
        }
    }
    if (!branch)
        return -1;
    *depth = bars + 1;
    return 0;
}

/* 1 when t (a row after its tree drawing) is one of verbose=2's parameter rows that
 * follow a layer: "weight   [1, 10, 5, 5]   ├─250" or "0.bias   └─10": a parameter name
 * (dotted inside a container), at most one shape (the Kernel Shape column) and one
 * count after "├─" / "└─" (the Param # column); the other columns are blank. They are
 * not layers: their counts are in the layer's own row. */
static int ti_param_row(const char *t, size_t tn)
{
    size_t k = 0;
    while (k < tn && (isalnum((unsigned char)t[k]) || t[k] == '_' || t[k] == '.'))
        k++;
    if (k == 0 || k == tn || t[k] != ' ')
        return 0;
    int counts = 0, shapes = 0;
    for (;;) {
        while (k < tn && t[k] == ' ')
            k++;
        if (k == tn)
            break;
        if (t[k] == '[') {
            size_t e = shape_extent(t + k, tn - k);
            if (!e)
                return 0;
            k += e;
            shapes++;
        } else if (tn - k > 6 && (unsigned char)t[k] == 0xe2 && (unsigned char)t[k + 1] == 0x94 &&
                   ((unsigned char)t[k + 2] == 0x9c || (unsigned char)t[k + 2] == 0x94) &&
                   (unsigned char)t[k + 3] == 0xe2 && (unsigned char)t[k + 4] == 0x94 &&
                   (unsigned char)t[k + 5] == 0x80) {
            k += 6;
            size_t st = k;
            uint64_t v;
            while (k < tn && t[k] != ' ')
                k++;
            if (est_parse_count(t + st, k - st, &v) < 0)
                return 0;
            counts++;
        } else {
            return 0;
        }
    }
    return counts == 1 && shapes <= 1;
}

/* The layer-name column's header: "Layer (type" then " (var_name)" with
 * row_settings=["var_names"] and ":depth-idx" with "depth" (the default), as
 * torchinfo's header_row. Returns where it starts and sets *var, *dep; NULL: none. */
static const char *ti_header(const char *s, size_t n, int *var, int *dep, int plain)
{
    static const struct { const char *text; int var, dep; } hs[] = {
        {"Layer (type:depth-idx)", 0, 1},
        {"Layer (type (var_name):depth-idx)", 1, 1},
        {"Layer (type (var_name))", 1, 0},
        {"Layer (type)", 0, 0}, /* row_settings=[]: plain, told apart by the caller */
    };
    /* One pass over the places "Layer (type" occurs (one in a table): each holds at most
     * one of the headers, and an earlier one in hs wins wherever it is, as its first. */
    size_t nh = sizeof hs / sizeof hs[0] - (plain ? 0 : 1), best = nh;
    const char *at = NULL, *p = s;
    while (best > 0 && (p = find(p, n - (size_t)(p - s), "Layer (type"))) {
        size_t rest = n - (size_t)(p - s);
        for (size_t k = 0; k < best; k++) {
            size_t tl = strlen(hs[k].text);
            if (tl <= rest && memcmp(p, hs[k].text, tl) == 0) {
                best = k;
                at = p;
                break;
            }
        }
        p++;
    }
    if (!at)
        return NULL;
    *var = hs[best].var;
    *dep = hs[best].dep;
    return at;
}

/* Whether text holds a torchinfo tree row, "├─Conv2d" or "└─Conv2d" (a branch then a
 * class name; Keras 3's box closes with "└───", torchsummary draws none). */
static int ti_tree_rows(const char *s, size_t n)
{
    for (const char *p = s; n > 6 && (p = memchr(p, 0xe2, n - 6 - (size_t)(p - s)));
         p++) {
        size_t i = (size_t)(p - s);
        if ((unsigned char)s[i + 1] == 0x94 &&
            ((unsigned char)s[i + 2] == 0x9c || (unsigned char)s[i + 2] == 0x94) &&
            (unsigned char)s[i + 3] == 0xe2 && (unsigned char)s[i + 4] == 0x94 &&
            (unsigned char)s[i + 5] == 0x80 && isalpha((unsigned char)s[i + 6]))
            return 1;
    }
    return 0;
}

struct ti_row {
    int valid;
    unsigned depth;
    size_t line;
    enum est_kind kind;
    unsigned flags, keeps, keeps32, norm16;
    int scores; /* attention probabilities as listed: out already holds heads x seq x seq */
    int frozen; /* its parameters printed "(1,024)": none trainable */
    uint64_t image; /* its output's channels when it is [batch, channels, height, width] */
    uint64_t out, params;
    char type[48];
};

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* Whether a row of an image model is one layer by PyTorch's class naming, not a block of
 * layers shown collapsed: a convolution ends its name in Conv1d/2d/3d or
 * ConvTranspose1d/2d/3d (StdConv2d, DeformConv2d; timm's Conv2dSame), a norm in Norm,
 * Norm1d/2d/3d or NormAct2d (LayerNorm2d, FrozenBatchNorm2d, BatchNormAct2d). Blocks:
 * MBConv, Conv2dNormActivation, ConvNormAct, Conv2dReLU. */
static int torch_leaf_name(enum est_kind kind, const char *type)
{
    static const char *const conv[] = {"Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
                                       "ConvTranspose2d", "ConvTranspose3d", "Conv2dSame"};
    static const char *const norm[] = {"Norm", "Norm1d", "Norm2d", "Norm3d", "NormAct2d"};
    if (kind == EST_K_CONV) {
        for (size_t k = 0; k < sizeof conv / sizeof conv[0]; k++)
            if (ends_with(type, conv[k]))
                return 1;
        return 0;
    }
    if (kind == EST_K_NORM) {
        for (size_t k = 0; k < sizeof norm / sizeof norm[0]; k++)
            if (ends_with(type, norm[k]))
                return 1;
        return 0;
    }
    return kind != EST_K_OTHER;
}

/* Whether a row of no known kind that lists nothing inside holds a real share of a
 * model of `all` parameters (1%, and 100,000: small holders such as a LayerScale pass):
 * what it keeps for backward cannot be told, so the summary is refused. */
static int opaque_block(uint64_t params, uint64_t all)
{
    return params >= 100000 && params * 100 >= all;
}

/* Adds the pending row r when it is a leaf, and adds a container's own parameters to
 * *held. *op keeps the largest leaf of no known kind
 * that holds parameters but lists nothing inside: at torchinfo's default depth=3 a
 * transformer's blocks (GPT2Block, a ModuleList of BertLayer) print that way, and
 * whatever they keep for backward is not in the table. */
static int ti_flush(struct est_model *m, struct ti_row *r, unsigned next_depth, int has_next,
                    struct ti_row *op, struct ti_row *img, struct ti_row *attn, uint64_t *held)
{
    if (!r->valid)
        return 0;
    r->valid = 0;
    if (has_next && next_depth > r->depth) {
        /* a container: its children carry the tensors and parameters; what it shows is
         * its own (torchinfo 1.7 on: ViTEmbeddings' class token and position table) */
        *held += r->params;
        return 0;
    }
    if (r->kind == EST_K_OTHER && r->params > op->params)
        *op = *r;
    /* An image block shown collapsed (torchinfo's depth=3 prints EfficientNet's MBConv
     * and a ResNet's downsample as one row) keeps for backward what its hidden layers
     * keep, many times its output, whatever its parameters: *img, refused after the
     * table. A per-channel scale or shift (timm's LayerScale2d) is a layer of its own. */
    if (r->params && r->image && !img->valid && !torch_leaf_name(r->kind, r->type) &&
        !(r->kind == EST_K_OTHER && r->params <= 2 * r->image)) {
        *img = *r;
        img->valid = 1;
    }
    /* Attention shown as one row (nn.MultiheadAttention, whose out_proj is not called as a
     * module): its probabilities, heads x sequence x sequence, are not in the table. */
    if (r->kind == EST_K_ATTN && !r->scores && !attn->valid) {
        *attn = *r;
        attn->valid = 1;
    }
    int rc = est_model_add(m, r->kind, r->out, r->params, 1, 0);
    if (rc == 0) {
        m->layers[m->n - 1].flags = (uint8_t)r->flags;
        m->layers[m->n - 1].keeps = (uint8_t)r->keeps;
        m->layers[m->n - 1].keeps32 = (uint8_t)r->keeps32;
        m->layers[m->n - 1].norm16 = (uint8_t)r->norm16;
        if (r->scores)
            m->layers[m->n - 1].attn = 0;
        if (r->frozen) {
            /* in fp32 whatever the precision: a backbone frozen under autocast keeps its
             * fp32 weights, and nothing in a table says it was loaded in 16 bits */
            m->layers[m->n - 1].frozen = r->params;
            m->layers[m->n - 1].wbits = 32;
            m->frozen += r->params;
        }
    }
    return rc;
}

/* The innermost attention module of a torchinfo table, open since its row: when it
 * closes without its probabilities listed (HF's T5Attention applies dropout to them as a
 * function, so no [batch, heads, seq, seq] row shows them) and its class is not a fused
 * one (Sdpa, Flash), they are added as a module tree has them: heads x seq x seq from its
 * [batch, seq, width] output, heads m->heads (--heads; the query's width, its first linear
 * row's, must divide by it) or width / 64; --attention sdpa drops them as it does the
 * others. */
struct ti_attn {
    int open, listed, fused;
    unsigned depth, flags;
    size_t line;
    uint64_t seq, width, qwidth;
};

/* The heads an attention block is sized with, and where they come from (*src, for the
 * layer's heads_src): --heads when given; else `fallback` heads, assumed (the first
 * recorded as m->heads_assumed) when the print allows assuming them (can_assume), else
 * unknown (the first such block's line and class recorded for est_heads_check). The
 * callers check first that a given --heads divides what they read. */
static uint64_t heads_take(struct est_model *m, uint64_t fallback, int can_assume, size_t line,
                           const char *cls, uint8_t *src)
{
    if (m->heads) {
        *src = EST_HEADS_GIVEN;
        return m->heads;
    }
    if (can_assume) {
        if (!m->heads_assumed)
            m->heads_assumed = (uint32_t)fallback;
        *src = EST_HEADS_ASSUMED;
    } else {
        if (!m->heads_line) {
            m->heads_line = line;
            m->heads_class = cls;
        }
        *src = EST_HEADS_UNKNOWN;
    }
    return fallback;
}

static int ti_attn_close(struct est_model *m, struct ti_attn *a, const char *file,
                         struct carma_err *err)
{
    if (!a->open)
        return 0;
    a->open = 0;
    if (a->listed || a->fused || !a->seq || !a->width)
        return 0;
    uint64_t heads = a->width / 64 ? a->width / 64 : 1;
    /* the first linear row may be a fused q, k, v projection (Falcon's: (heads + 2 kv
     * heads) x head size): either width may be the heads' multiple */
    uint64_t qwidth = a->qwidth ? a->qwidth : a->width;
    if (m->heads && qwidth % m->heads && a->width % m->heads)
        return carma_err_at(err, file, a->line,
                            "an attention module %llu wide, its query projection %llu: "
                            "--heads %u divides neither (give the query heads, "
                            "num_attention_heads)",
                            (unsigned long long)a->width, (unsigned long long)qwidth, m->heads);
    uint8_t src;
    heads = heads_take(m, heads, 1, a->line, NULL, &src);
    if (a->seq > EST_MAX_ELEMS / a->seq / heads ||
        est_model_add(m, EST_K_ATTN, heads * a->seq * a->seq, 0, 1, 0) < 0)
        return carma_err_at(err, file, a->line, "too many layers");
    m->layers[m->n - 1].attn = 0; /* out holds heads x seq x seq already */
    m->layers[m->n - 1].flags = (uint8_t)a->flags;
    m->layers[m->n - 1].heads_src = src;
    return 0;
}

int est_parse_torchinfo(const char *buf, size_t len, const char *file, struct est_model *m,
                        struct carma_err *err)
{
    struct lines L;
    lines_init(&L, buf, len, file);
    const char *s;
    size_t n;
    int rc, state = 0;
    enum ti_col cols[TI_MAXCOL];
    int ncols = 0, outcol = -1, paramcol = -1;
    uint64_t total = 0;
    int have_total = 0;
    struct ti_row pend = {0};
    size_t rows = 0;
    uint64_t shape_batch = 0; /* torchinfo prints the batch it ran with */
    size_t batch_line = 0;    /* the row that showed it */
    double input_mb = -1;
    struct ti_row opaque = {0}, opaque_image = {0}, attn_leaf = {0};
    unsigned max_depth = 0;  /* of the table's rows: a row above it is a true leaf */
    int attn_valid = 0;      /* inside a row whose type is an attention module */
    unsigned attn_depth = 0;
    struct ti_attn ia = {0}; /* the innermost attention module open */
    int show_var = 0, show_depth = 1; /* row_settings: "var_names", "depth" */
    struct widths widths = {0};       /* kind_holds: the tensors' widths so far */
    uint64_t held = 0;                /* the containers' own parameters (ti_flush) */
    size_t param_off = 0, total_line = 0; /* the header's Param # column; its line */
    m->format = EST_FMT_TORCHINFO;
    while ((rc = lines_next(&L, &s, &n, err)) == 1) {
        if (state == 0) {
            const char *h = ti_header(s, n, &show_var, &show_depth, 1);
            if (!h) {
                /* text before the table is passed over, as text after it is */
                if (find(s, n, "Layer (type"))
                    return carma_err_at(err, file, L.line,
                                        "expected the torchinfo header 'Layer (type:depth-idx)'");
                continue;
            }
            /* Column order as printed. */
            static const struct { const char *name; enum ti_col c; } known[] = {
                {"Input Shape", TI_INPUT},   {"Output Shape", TI_OUTPUT},
                {"Param #", TI_PARAMS},      {"Kernel Shape", TI_KERNEL},
                {"Mult-Adds", TI_MULTADDS},  {"Trainable", TI_TRAIN},
                {"Param %", TI_PCT},         {"Groups", TI_GROUPS},
            };
            const char *pos[TI_MAXCOL];
            for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) {
                const char *f = find(s, n, known[k].name);
                if (!f)
                    continue;
                int at = ncols;
                while (at > 0 && pos[at - 1] > f) {
                    pos[at] = pos[at - 1];
                    cols[at] = cols[at - 1];
                    at--;
                }
                pos[at] = f;
                cols[at] = known[k].c;
                ncols++;
            }
            for (int k = 0; k < ncols; k++) {
                if (cols[k] == TI_OUTPUT)
                    outcol = k;
                if (cols[k] == TI_PARAMS) {
                    paramcol = k;
                    param_off = (size_t)(pos[k] - s);
                }
            }
            if (outcol < 0 || paramcol < 0)
                return carma_err_at(err, file, L.line,
                                    "torchinfo table needs the Output Shape and Param # columns");
            state = 1;
            continue;
        }
        if (state == 1) {
            if (!rule_line(s, n, '='))
                return carma_err_at(err, file, L.line, "expected a '====' rule after the header");
            state = 2;
            continue;
        }
        if (state == 2) {
            if (rule_line(s, n, '=')) {
                if (ti_flush(m, &pend, 0, 0, &opaque, &opaque_image, &attn_leaf, &held) < 0)
                    return carma_err_at(err, file, pend.line, "too many layers");
                if ((rc = ti_attn_close(m, &ia, file, err)) < 0)
                    return rc;
                state = 3;
                continue;
            }
            size_t i = skip_tree(s, n);
            const char *t = s + i;
            size_t tn = n - i;
            /* "Conv2d: 1-1", "Conv2d (conv1): 1-1" or "Conv2d (conv1)" then the
             * columns. */
            const char *colon = memchr(t, ':', tn);
            unsigned drawn = 0;
            int has_drawn = tree_depth(s, i, &drawn) == 0;
            if (pend.valid && has_drawn && drawn == pend.depth + 1 && ti_param_row(t, tn))
                continue; /* verbose=2: a parameter of the row above */
            if (rows == 0 && !pend.valid && i == 0 && (!colon || !show_depth)) {
                /* The root row "ResNet   [32, 1000]   --": a container at depth 0. */
                pend.valid = 1;
                pend.depth = 0;
                pend.line = L.line;
                pend.kind = EST_K_OTHER;
                pend.flags = pend.keeps = pend.keeps32 = pend.norm16 = 0;
                pend.scores = 0;
                pend.out = 0;
                pend.params = 0;
                pend.frozen = 0;
                /* its own parameters (timm's ViT: the class token and position table),
                 * in the Param # column, under the header's (no tree drawing before it) */
                if (param_off > 0 && param_off < n && s[param_off - 1] == ' ') {
                    size_t e = param_off;
                    while (e < n && s[e] != ' ')
                        e++;
                    if (est_parse_count(s + param_off, e - param_off, &pend.params) < 0)
                        pend.params = 0;
                }
                continue;
            }
            size_t type_n, j;
            if (show_var) {
                /* "Type (var)": one space, then the module's name ("conv1", "0",
                 * "features.0"); a frozen count "(1,024)" is a column, after several. */
                const char *op = find(t, tn, " (");
                type_n = op ? (size_t)(op - t) : 0;
                if (!type_n || memchr(t, ' ', type_n))
                    return carma_err_at(err, file, L.line,
                                        "layer row is not 'Type (var_name)%s'",
                                        show_depth ? ": depth-index" : "");
                j = type_n + 2;
                size_t vs = j;
                while (j < tn && t[j] != ')' && t[j] != '(' && !isspace((unsigned char)t[j]))
                    j++;
                if (j == vs || j >= tn || t[j] != ')')
                    return carma_err_at(err, file, L.line, "bad variable name after '%.*s'",
                                        (int)(type_n > 60 ? 60 : type_n), t);
                j++;
                if (show_depth && (j >= tn || t[j] != ':'))
                    return carma_err_at(err, file, L.line,
                                        "layer row is not 'Type (var_name): depth-index'");
            } else if (!show_depth) {
                /* row_settings=[]: the type alone, its depth the drawing's */
                type_n = 0;
                while (type_n < tn && t[type_n] != ' ')
                    type_n++;
                j = type_n;
            } else {
                if (!colon || colon == t)
                    return carma_err_at(err, file, L.line,
                                        "layer row is not 'Type: depth-index'");
                type_n = (size_t)(colon - t);
                j = type_n;
            }
            unsigned depth = 0;
            size_t name_end = j; /* "Type: 1-2": where its depth-index ends */
            if (show_depth) {
                j++; /* the ':' */
                while (j < tn && t[j] == ' ')
                    j++;
                size_t st = j;
                while (j < tn && isdigit((unsigned char)t[j]) && depth < 1000)
                    depth = depth * 10 + (unsigned)(t[j++] - '0');
                if (j == st || j >= tn || t[j] != '-' || depth > EST_MAX_DEPTH)
                    return carma_err_at(err, file, L.line, "bad depth-index after '%.*s:'",
                                        (int)(type_n > 60 ? 60 : type_n), t);
                j++;
                st = j;
                while (j < tn && isdigit((unsigned char)t[j]))
                    j++;
                if (j == st)
                    return carma_err_at(err, file, L.line, "bad depth-index");
                name_end = j;
            } else {
                /* No depth-index: the depth is the tree drawing's. */
                if (!has_drawn)
                    return carma_err_at(err, file, L.line,
                                        "layer row without the tree drawing ('├─', '└─') "
                                        "that gives its depth");
                if (drawn > EST_MAX_DEPTH)
                    return carma_err_at(err, file, L.line, "nested deeper than %d",
                                        EST_MAX_DEPTH);
                depth = drawn;
                if (j < tn && t[j] != ' ')
                    return carma_err_at(err, file, L.line,
                                        "unexpected text after the layer name");
            }
            /* Columns: shapes in brackets, "--", numbers, words, "(recursive)". */
            uint64_t out = 0, params = 0;
            int recursive = 0, scores = 0, frozen = 0;
            uint64_t image = 0, row_seq = 0, row_width = 0, row_chans = 0, row_last = 0;
            uint64_t row_k = 1, row_first = 0; /* batch_factor of its output */
            for (int c = 0; c < ncols; c++) {
                while (j < tn && t[j] == ' ')
                    j++;
                if (j >= tn)
                    return carma_err_at(err, file, L.line, "missing columns");
                if (c == 0 && show_depth &&
                    ((t[j] == '(' && cols[0] != TI_PARAMS) ||
                     (isalpha((unsigned char)t[j]) && cols[0] != TI_TRAIN))) {
                    /* "ModuleList: 3-6 (x12 layers)": no column begins so; an edited
                     * table's note in the name column (it may push the columns along) */
                    size_t xe = j;
                    const char *cl = t[j] == '(' ? memchr(t + j, ')', tn - j) : NULL;
                    if (cl)
                        xe = (size_t)(cl - t) + 1;
                    while (!cl && xe < tn && t[xe] != ' ')
                        xe++;
                    return carma_err_at(err, file, L.line,
                                        "'%.*s' after '%.*s': text in the name column after the "
                                        "depth-index, where torchinfo writes 'Type: depth-idx' "
                                        "alone (an edited table?); remove it",
                                        (int)(xe - j > 40 ? 40 : xe - j), t + j,
                                        (int)(name_end > 60 ? 60 : name_end), t);
                }
                size_t fs = j, fe;
                if (t[j] == '[') {
                    fe = fs + shape_extent(t + j, tn - j);
                    if (fe == fs)
                        return carma_err_at(err, file, L.line, "unbalanced shape");
                } else if (t[j] == '(') {
                    const char *cl = memchr(t + j, ')', tn - j);
                    if (!cl)
                        return carma_err_at(err, file, L.line, "unbalanced '('");
                    fe = (size_t)(cl - t) + 1;
                } else {
                    fe = fs;
                    while (fe < tn && t[fe] != ' ')
                        fe++;
                    /* "1,179,776" has no spaces; "--" neither. */
                }
                j = fe;
                if (c == outcol) {
                    if (fe - fs == 2 && t[fs] == '-' && t[fs + 1] == '-')
                        out = 0;
                    else if (est_parse_shape(t + fs, fe - fs, &out) < 0)
                        return carma_err_at(err, file, L.line, "bad output shape '%.*s'",
                                            (int)((fe - fs) > 60 ? 60 : fe - fs), t + fs);
                    else
                        scores = scores_shape(t + fs, fe - fs);
                    /* [batch, channels, height, width] (or channels last): an image's;
                     * [batch, seq, width]: a sequence's */
                    uint64_t d[8];
                    size_t nd = shape_dims(t + fs, fe - fs, d, 8);
                    if (nd == 4)
                        image = d[1] > d[3] ? d[1] : d[3];
                    if (nd == 3) {
                        row_seq = d[1];
                        row_width = d[2];
                    }
                    /* its features (the last dimension) and channels (the larger of
                     * the second and the last: [batch, C, H, W] or [batch, seq, C]) */
                    if (nd >= 2) {
                        row_last = d[nd - 1];
                        row_chans = d[1] > row_last ? d[1] : row_last;
                    }
                    if (!shape_batch) {
                        shape_batch = shape_first_dim(t + fs, fe - fs);
                        m->table_batch = shape_batch;
                        batch_line = L.line;
                    } else if (out) {
                        row_k = batch_factor(t + fs, fe - fs, shape_batch, &row_first);
                    }
                } else if (cols[c] == TI_INPUT) {
                    uint64_t d[8];
                    size_t nd = shape_dims(t + fs, fe - fs, d, 8);
                    if (nd >= 2)
                        widths_add(&widths, d[nd - 1]);
                } else if (c == paramcol) {
                    if (fe - fs == 11 && memcmp(t + fs, "(recursive)", 11) == 0)
                        recursive = 1;
                    else if (t[fs] == '(' && fe - fs > 2 && /* frozen: "(1,024)" */
                             est_parse_count(t + fs + 1, fe - fs - 2, &params) == 0)
                        frozen = 1;
                    else if (est_parse_count(t + fs, fe - fs, &params) < 0)
                        return carma_err_at(err, file, L.line, "bad parameter count '%.*s'",
                                            (int)((fe - fs) > 40 ? 40 : fe - fs), t + fs);
                }
            }
            while (j < tn && t[j] == ' ')
                j++;
            if (j != tn)
                return carma_err_at(err, file, L.line, "unexpected text after the columns");
            if (ti_flush(m, &pend, depth, 1, &opaque, &opaque_image, &attn_leaf, &held) < 0)
                return carma_err_at(err, file, pend.line, "too many layers");
            if (ia.open && depth <= ia.depth && (rc = ti_attn_close(m, &ia, file, err)) < 0)
                return rc;
            pend.valid = 1;
            pend.depth = depth;
            if (depth > max_depth)
                max_depth = depth;
            pend.line = L.line;
            size_t tcp = type_n < sizeof pend.type - 1 ? type_n : sizeof pend.type - 1;
            memcpy(pend.type, t, tcp);
            pend.type[tcp] = '\0';
            if ((rc = refuse_unmodelled(file, L.line, t, type_n, err)))
                return rc;
            pend.kind = est_kind_classify(t, type_n);
            /* a block whose class name holds a layer's word (timm's GluMlp, a PreNorm)
             * shown collapsed is no such layer: read as one of no known kind, refused
             * as those are when it holds a real share of the model */
            if (!one_layer_class(t, type_n) &&
                !kind_holds(pend.kind, t, type_n, recursive ? 0 : params,
                            pend.kind == EST_K_LINEAR ? row_last : row_chans, &widths))
                pend.kind = EST_K_OTHER;
            widths_add(&widths, row_last);
            /* [batch x tokens, width]: the tokens' factor, which the per-sample elements
             * lack. Not an embedding's: a position-bias table's [seq, seq, heads] and a
             * rotary table's [seq, dim] hold no batch; nor a row that keeps nothing. */
            if (row_k != 1 && pend.kind != EST_K_EMBED && pend.kind != EST_K_OTHER) {
                if (row_k == 0)
                    return carma_err_at(
                        err, file, L.line,
                        "'%.*s': its output's first dimension %llu is neither the table's "
                        "batch %llu "
                        "(line %zu) nor a multiple of it: tokens routed to experts (a mixture "
                        "of experts), whose count changes from batch to batch, or a "
                        "sequence-first [seq, batch, ...] layout, so its size per sample is "
                        "unknown; give the printed module tree (print(model)) with --seq-len "
                        "(and --experts-per-token)",
                        (int)(type_n > 60 ? 60 : type_n), t, (unsigned long long)row_first,
                        (unsigned long long)shape_batch, batch_line);
                if (out > EST_MAX_ELEMS / row_k)
                    return carma_err_at(err, file, L.line, "output too large");
                out *= row_k;
            }
            pend.flags = est_type_flags(pend.kind, t, type_n);
            pend.keeps = est_type_keeps(pend.kind, t, type_n);
            pend.keeps32 = est_type_keeps32(pend.kind, t, type_n);
            pend.norm16 = est_type_norm16(pend.kind, t, type_n);
            /* Attention computes its probabilities functionally: the only trace in the
             * table is the dropout applied to them, inside the attention module, with
             * their [batch, heads, seq, seq] shape. It stands for them. */
            if (attn_valid && depth <= attn_depth)
                attn_valid = 0;
            pend.scores = 0;
            if (pend.kind == EST_K_ATTN) {
                attn_valid = 1;
                attn_depth = depth;
                /* an attention inside another: the inner one is the one to size */
                ia.open = 1;
                ia.listed = 0;
                ia.depth = depth;
                ia.flags = pend.flags;
                /* a fused kernel's class keeps none (as est_parse_modtree reads it) */
                ia.fused = find(t, type_n, "Sdpa") || find(t, type_n, "Flash");
                ia.seq = row_seq;
                ia.width = row_width;
                ia.qwidth = 0;
                ia.line = L.line;
            } else if (pend.kind == EST_K_LINEAR && ia.open && depth > ia.depth && !ia.qwidth) {
                ia.qwidth = row_width; /* the query's projection, listed first */
            } else if (pend.kind == EST_K_DROPOUT && attn_valid && scores) {
                pend.kind = EST_K_ATTN;
                pend.scores = 1;
                ia.listed = 1;
            }
            pend.out = out;
            pend.params = recursive ? 0 : params; /* shared: counted where first seen */
            pend.frozen = frozen;
            pend.image = image;
            rows++;
            continue;
        }
        int tp = total_params_line(s, n, &total);
        if (tp < 0)
            return carma_err_at(err, file, L.line, "bad 'Total params' line");
        if (tp) {
            have_total = 1;
            total_line = L.line;
        }
        double mb = input_size_mb(s, n);
        if (mb >= 0)
            input_mb = mb;
    }
    if (rc < 0)
        return rc;
    if (state == 1) /* the header was read: the file ends before its rule */
        return carma_err_at(err, file, L.line,
                            "the table ends after its header: no '====' rule and no layer "
                            "rows (cut short?)");
    if (state < 2)
        return carma_err_at(err, file, L.line ? L.line : 1, "not a torchinfo table (no header)");
    if (state == 2)
        return carma_err_at(err, file, L.line, "table not closed by a '====' rule");
    if (rows == 0)
        return carma_err_at(err, file, L.line, "no layers");
    /* A block that holds a real share of the model (opaque_block) but
     * lists no layer: its activations cannot be counted. */
    uint64_t all = have_total && total > m->params ? total : m->params;
    if (opaque_block(opaque.params, all))
        return carma_err_at(
            err, file, opaque.line,
            opaque.depth < max_depth
                /* rows go deeper elsewhere: this one has no layer inside (a noisy or
                 * Bayesian linear layer, a custom one): a deeper print shows it the same */
                ? "'%s' holds %llu parameters in a layer carma does not know, with no layer "
                  "inside it, so what it keeps for backward is unknown: give the model as a "
                  "layer CSV with this layer's kind written out (docs/estimator.md)"
                : "'%s' holds %llu parameters but the table lists no layer inside it, so "
                  "what it keeps for backward is unknown: print the table deeper (torchinfo's "
                  "summary(..., depth=10)), or, if it is one layer, give the model as a layer "
                  "CSV with its kind written out (docs/estimator.md)",
            opaque.type, (unsigned long long)opaque.params);
    if (attn_leaf.valid)
        return carma_err_at(err, file, attn_leaf.line,
                            "'%s' is attention shown as one row: its probabilities (heads x "
                            "sequence x sequence) are not in the table; give the printed "
                            "module tree (print(model)) with --seq-len (and --heads for "
                            "nn.MultiheadAttention)",
                            attn_leaf.type);
    if (opaque_image.valid)
        return carma_err_at(err, file, opaque_image.line,
                            "'%s' holds %llu parameters and outputs an image, but the table "
                            "lists no layer inside it (torchinfo's default depth=3 shows a "
                            "whole block so), so what it keeps for backward is unknown: print "
                            "the table deeper (torchinfo's summary(..., depth=10))",
                            opaque_image.type, (unsigned long long)opaque_image.params);
    /* The total is the rows' and the containers' own parameters (torchinfo 1.7 on shows
     * those on the container's row; before, only in the total). The containers' are added
     * as one parameter-only row. What neither holds is in no row: a share of the model
     * (opaque_block) is rows cut from the paste, or modules the forward did not run when
     * it was printed, whose activations are lost too: refused; a little (an older
     * torchinfo's container parameters) is added so, with a note. */
    if (have_total && total > m->params) {
        uint64_t rest = total - m->params, own = held < rest ? held : rest;
        uint64_t unplaced = rest - own;
        if (opaque_block(unplaced, total))
            return carma_err_at(
                err, file, total_line,
                "the rows hold %llu parameters and the containers' own %llu, but 'Total "
                "params' says %llu: %llu are in no row, so layers are missing from the table "
                "(cut or edited when pasted, or not run by the forward it was printed from), "
                "and their activations with them; give the whole table as printed",
                (unsigned long long)m->params, (unsigned long long)own, (unsigned long long)total,
                (unsigned long long)unplaced);
        if (est_model_add(m, EST_K_OTHER, 0, rest, 1, 0) < 0)
            return carma_err_at(err, file, L.line, "too many layers");
        if (unplaced) {
            m->params_unplaced = unplaced;
            m->params_unplaced_line = total_line;
        }
    }
    /* torchinfo's MB are 10^6 bytes, of the whole batch. A sequence model's input is its
     * token ids, which the replay sizes from --seq-len. */
    int seq_model = 0;
    for (size_t i = 0; i < m->n; i++)
        seq_model |= m->layers[i].kind == EST_K_EMBED || m->layers[i].kind == EST_K_ATTN;
    if (input_mb > 0 && shape_batch > 0 && !seq_model && !m->input)
        m->input = (uint64_t)(input_mb * 1e6 / 4.0 / (double)shape_batch);
    mark_gated(m);
    mark_qkv(m);
    return 0;
}

/* ---- Keras model.summary() ------------------------------------------------------ */

/* Replaces Keras 3's box drawing (│ ┃ and friends, 3-byte UTF-8 E2 94/95 xx) with
 * spaces into out (same length or shorter). */
static size_t keras_unbox(const char *s, size_t n, char *out)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == 0xe2 && i + 2 < n && ((unsigned char)s[i + 1] == 0x94 ||
                                       (unsigned char)s[i + 1] == 0x95)) {
            out[k++] = ' ';
            i += 2;
        } else {
            out[k++] = (char)c;
        }
    }
    return k;
}

/* A Keras rule: '=' / '_' rows (TF2), or a box rule (all spaces after unboxing). */
static int keras_rule(const char *s, size_t n, const char *raw, size_t rawn)
{
    trim(&s, &n); /* once: every line of a table comes here, padded to its width */
    if (n && (s[0] == '=' || s[0] == '_') && rule_line(s, n, s[0]))
        return 1;
    return n == 0 && rawn > 0 && !blank(raw, rawn);
}

#define BOX_BAR "\xe2\x94\x82" /* │ */

/* keras_unbox, then TF 2.x's expand_nested edges: a nested model's rows are printed
 * between '|' runs, one '|' a level on each side ("| conv1 (Conv2D)  ...  |"). These
 * become spaces, so that the columns stay; *level gets the count on the left. */
static size_t keras_clean(const char *s, size_t n, char *out, int *level)
{
    size_t k = keras_unbox(s, n, out);
    size_t i = 0;
    while (i < k && out[i] == '|')
        out[i++] = ' ';
    *level = (int)i;
    if (i) {
        size_t e = k;
        while (e > i && out[e - 1] == ' ')
            e--;
        while (e > i && out[e - 1] == '|')
            out[--e] = ' ';
    }
    return k;
}

/* A line after the current one, read ahead without consuming it: raw as in the file,
 * text as keras_clean leaves it (n bytes), level its '|' count. */
struct keras_line {
    const char *raw;
    size_t rawn, n;
    int level;
    char text[EST_MAX_LINE + 1];
};

/* Reads the next line of *peek into *k. 0 at the end of the text. */
static int keras_peek(struct lines *peek, struct keras_line *k)
{
    if (lines_next(peek, &k->raw, &k->rawn, NULL) != 1)
        return 0;
    k->n = keras_clean(k->raw, k->rawn, k->text, &k->level);
    return 1;
}

/* A TF 2.x expand_nested rule, a run of '¯' (C2 AF): above a nested model's layers
 * ("|¯¯¯|", one level deeper) or below them. Edges already cleaned. */
static int keras_nested_rule(const char *s, size_t n)
{
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ')
            continue;
        if (i + 1 < n && (unsigned char)s[i] == 0xc2 && (unsigned char)s[i + 1] == 0xaf) {
            any = 1;
            i++;
            continue;
        }
        return 0;
    }
    return any;
}

/* The nesting level of a Keras 3 row: expand_nested prints a nested layer's name after
 * three spaces a level and "└ " ("│    └ conv1 (Conv2D) │"). 0 for a top-level row. */
static int keras3_level(const char *raw, size_t n)
{
    if (n < 3 || memcmp(raw, BOX_BAR, 3) != 0)
        return 0;
    size_t i = 3, sp = 0;
    while (i < n && raw[i] == ' ')
        i++, sp++;
    if (n - i < 3 || memcmp(raw + i, "\xe2\x94\x94", 3) != 0)
        return 0;
    /* one space is the cell's padding; a level at least when the rest was lost */
    int lv = sp > 1 ? (int)((sp - 1) / 3) : 0;
    return lv > 0 ? lv : 1;
}

/* Cell c (0-based, between bars) of a Keras 3 row line, trimmed; 0 when absent. */
static int box_cell(const char *s, size_t n, unsigned c, const char **cs, size_t *cn)
{
    const char *p = s, *end = s + n;
    const char *bar = memmem(p, (size_t)(end - p), BOX_BAR, 3);
    for (unsigned k = 0; bar && k < c; k++)
        bar = memmem(bar + 3, (size_t)(end - bar - 3), BOX_BAR, 3);
    if (!bar)
        return 0;
    const char *next = memmem(bar + 3, (size_t)(end - bar - 3), BOX_BAR, 3);
    if (!next)
        return 0;
    *cs = bar + 3;
    *cn = (size_t)(next - *cs);
    trim(cs, cn);
    return 1;
}

static size_t box_bars(const char *s, size_t n)
{
    size_t k = 0;
    for (const char *p = s; (p = memmem(p, n - (size_t)(p - s), BOX_BAR, 3)); p += 3)
        k++;
    return k;
}

/* Keras 3 wraps a row's cells over several lines ("batch_normalization" over
 * "(BatchNormalizatio…", "(None, 32, 32," over "32)"). Joins each row's lines column by
 * column onto its first line, drops the ellipses, and leaves the other lines empty, so
 * that line numbers stay. A malloc'd copy (*outlen bytes), or NULL: out of memory. */
static char *keras3_join(const char *buf, size_t len, size_t *outlen)
{
    /* A joined row is at most twice the lines it replaces (each cell at most doubles:
     * its text and a space per line it came from). */
    size_t cap = 2 * len + 16;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    size_t o = 0, pos = 0;
    while (pos < len) {
        const char *ln = buf + pos;
        const char *nl = memchr(ln, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - ln) : len - pos;
        /* the run of row lines from here, with as many bars as the first */
        size_t bars = n >= 3 && memcmp(ln, BOX_BAR, 3) == 0 ? box_bars(ln, n) : 0;
        size_t k = 1, end = pos + n + (nl ? 1 : 0);
        while (bars >= 2 && end < len) {
            const char *q = buf + end;
            const char *qnl = memchr(q, '\n', len - end);
            size_t qn = qnl ? (size_t)(qnl - q) : len - end;
            if (qn < 3 || memcmp(q, BOX_BAR, 3) != 0 || box_bars(q, qn) != bars)
                break;
            k++;
            end += qn + (qnl ? 1 : 0);
        }
        if (bars < 2 || k == 1) {
            memcpy(out + o, ln, n + (nl ? 1 : 0));
            o += n + (nl ? 1 : 0);
            pos += n + (nl ? 1 : 0);
            continue;
        }
        for (unsigned c = 0; c + 1 < bars; c++) {
            memcpy(out + o, BOX_BAR " ", 4);
            o += 4;
            size_t col0 = o;
            for (size_t r = 0, at = pos; r < k; r++) {
                const char *q = buf + at;
                const char *qnl = memchr(q, '\n', len - at);
                size_t qn = qnl ? (size_t)(qnl - q) : len - at;
                at += qn + (qnl ? 1 : 0);
                const char *cs;
                size_t cn;
                if (!box_cell(q, qn, c, &cs, &cn) || cn == 0)
                    continue;
                if (o > col0)
                    out[o++] = ' ';
                /* a nested layer's indent ("   └ "), which tells its level */
                if (c == 0 && r == 0 && cn >= 3 && memcmp(cs, "\xe2\x94\x94", 3) == 0)
                    for (const char *sp = q + 4; sp < cs; sp++)
                        out[o++] = ' ';
                for (size_t i = 0; i < cn; i++) {
                    if (i + 3 <= cn && memcmp(cs + i, "\xe2\x80\xa6", 3) == 0) {
                        i += 2;
                        continue;
                    }
                    out[o++] = cs[i];
                }
            }
            out[o++] = ' ';
        }
        memcpy(out + o, BOX_BAR "\n", 4);
        o += 4;
        assert(o + k <= cap);
        for (size_t r = 1; r < k; r++)
            out[o++] = '\n';
        pos = end;
    }
    *outlen = o;
    return out;
}

static int keras_parse_lines(const char *buf, size_t len, const char *file,
                             struct est_model *m, struct carma_err *err);

typedef int parse_fn(const char *buf, size_t len, const char *file, struct est_model *m,
                     struct carma_err *err);

/* Parses `copy` (n bytes: a cleaned copy of the input, NULL when making it ran out of
 * memory) with parse, then frees it. */
static int parse_copy(parse_fn *parse, char *copy, size_t n, const char *file,
                      struct est_model *m, struct carma_err *err)
{
    if (!copy)
        return carma_err_set(err, -ENOMEM, "%s: out of memory", file);
    int rc = parse(copy, n, file, m, err);
    free(copy);
    return rc;
}

int est_parse_keras(const char *buf, size_t len, const char *file, struct est_model *m,
                    struct carma_err *err)
{
    /* "┃ Layer (type)": Keras 3's rich table, whose rows may wrap */
    if (!memmem(buf, len, "\xe2\x94\x83 Layer (type)", 16))
        return keras_parse_lines(buf, len, file, m, err);
    size_t jl = 0;
    char *joined = keras3_join(buf, len, &jl);
    return parse_copy(keras_parse_lines, joined, jl, file, m, err);
}

/* Length of a TF 2.x cell's text at s: up to two spaces (the column gap) or the end. */
static size_t keras_cell_len(const char *s, size_t n)
{
    size_t k = 0;
    while (k < n && !(s[k] == ' ' && (k + 1 == n || s[k + 1] == ' ')))
        k++;
    return k;
}

/* A TF 2.x line that only continues cells of the row above: each word ends a wrapped
 * type name or shape (")", "2D)", ")]"), or, when digits is set, is the rest of a
 * wrapped parameter count ("2358771" / "2"). */
static int keras_wrap_only(const char *t, size_t tn, int digits)
{
    if (!tn)
        return 0;
    for (size_t k = 0; k < tn; k++) {
        if (t[k] == ' ' || (k + 1 < tn && t[k + 1] != ' '))
            continue;
        if (t[k] == ')' || t[k] == ']')
            continue;
        size_t b = k + 1;
        while (b > 0 && isdigit((unsigned char)t[b - 1]))
            b--;
        if (!digits || !(b == 0 || t[b - 1] == ' '))
            return 0;
    }
    return 1;
}

/* Whether the row just read (at nesting level `level`) is a nested model that
 * expand_nested=True lists: the next row is deeper (Keras 3, box set), or the row is
 * followed by a '¯' rule of more levels (TF 2.x). Its layers follow, holding its
 * parameters. L is not consumed. */
static int keras_holds_nested(const struct lines *L, int box, int level)
{
    struct lines peek = *L;
    struct keras_line nx;
    for (int k = 0; k < 16 && keras_peek(&peek, &nx); k++) {
        if (box) {
            if (blank(nx.text, nx.n))
                continue; /* the rows keras3_join emptied, and box rules */
            return keras3_level(nx.raw, nx.rawn) > level;
        }
        if (keras_nested_rule(nx.text, nx.n))
            return nx.level > level;
        if (blank(nx.text, nx.n) || rule_line(nx.text, nx.n, '='))
            return 0; /* the row ended */
    }
    return 0;
}

/* Joins the piece (n bytes) of a wrapped TF 2.x shape with its continuations at column
 * col (or up to slack columns before it) of the following lines of L (not consumed),
 * into out (EST_MAX_LINE + 1 bytes), until it is one whole shape. Returns the shape's
 * length, 0 when it is not completed within four lines. */
static size_t keras_unwrap(const struct lines *L, size_t col, size_t slack, const char *piece,
                           size_t n, char *out)
{
    if (n > EST_MAX_LINE)
        return 0;
    memcpy(out, piece, n);
    struct lines peek = *L;
    struct keras_line nx;
    for (int k = 0; k < 4; k++) {
        if (!keras_peek(&peek, &nx))
            return 0;
        const char *next = nx.text;
        size_t nn = nx.n;
        /* a cell broken after "),", the rest keeps its space: " (None, 32)]" */
        size_t at = col + (nn > col + 1 && next[col] == ' ' && next[col + 1] != ' ');
        /* a nested row's cells may start up to a column a level earlier */
        for (size_t p = col > slack ? col - slack : 0; p < col && p < nn; p++)
            if (next[p] != ' ' && (p == 0 || next[p - 1] == ' ')) {
                at = p;
                break;
            }
        if (nn <= at || next[at] == ' ' || (at > 0 && next[at - 1] != ' '))
            return 0; /* nothing there, or the middle of a word: not this cell's start */
        size_t c = keras_cell_len(next + at, nn - at);
        if (n + c > EST_MAX_LINE)
            return 0;
        memcpy(out + n, next + at, c);
        n += c;
        size_t ext = shape_extent(out, n);
        if (ext)
            return ext == n ? n : 0;
    }
    return 0;
}

/* A TF 2.x row whose name filled its cell: the name's first piece (t, n bytes) and the
 * pieces in the first cell, before column col, of the following lines of L (not
 * consumed), joined into out until "name (Type)" closes: a piece that starts the type
 * gets a space before it, a piece cut mid-word none. Returns its length (0: not
 * closed within four lines, or too long); *last is the last line read. */
static size_t keras_wrapped_name(const struct lines *L, const char *t, size_t n, size_t col,
                                 char *out, size_t cap, size_t *last)
{
    if (n >= cap)
        return 0;
    memcpy(out, t, n);
    struct lines peek = *L;
    struct keras_line nx;
    for (int k = 0; k < 4; k++) {
        if (!keras_peek(&peek, &nx))
            return 0;
        const char *c = nx.text;
        size_t cn = nx.n < col ? nx.n : col;
        trim(&c, &cn);
        cn = keras_cell_len(c, cn);
        if (!cn || n + 1 + cn >= cap)
            return 0;
        if (c[0] == '(')
            out[n++] = ' ';
        memcpy(out + n, c, cn);
        n += cn;
        *last = peek.line;
        if (memchr(out, '(', n) && out[n - 1] == ')')
            return n;
    }
    return 0;
}

/* One tensor shape "(None, 512, 256)" over [s, s+n), or a list of one ("[(None, 512,
 * 256)]", TF 2.x's InputLayer): its dimensions after the batch (*nd, at least 1), the
 * last in *last and the product of the others in *mid; 0, or -EINVAL for anything else
 * (a list of tensors). */
static int keras_one_tensor(const char *s, size_t n, int *nd, uint64_t *mid, uint64_t *last)
{
    trim(&s, &n);
    if (n >= 4 && s[0] == '[' && s[1] == '(' && s[n - 1] == ']') {
        s++;
        n -= 2;
    }
    size_t used;
    uint64_t elems, tail[2] = {0, 0};
    int dims;
    if (n < 2 || (s[0] != '(' && s[0] != '[') ||
        parse_tensor(s, n, &used, &elems, &dims, tail) < 0 || used != n || dims < 2 ||
        !tail[1] || elems % tail[1] || elems == 0)
        return -EINVAL; /* an empty tensor sizes nothing (and would divide by 0) */
    *nd = dims - 1;
    *last = tail[1];
    *mid = elems / tail[1];
    return 0;
}

/* The refusal of a Keras attention row (class cls) whose output shape cannot size its
 * `what`. */
static int keras_attn_shape_refusal(const char *file, size_t line, const char *cls,
                                    const char *what, struct carma_err *err)
{
    return carma_err_at(err, file, line,
                        "%s whose output is not one nonempty (batch, seq, width) tensor "
                        "(return_attention_scores=True?): its %s cannot be sized; give a layer "
                        "CSV (docs/estimator.md)",
                        cls, what);
}

/* Keras's MultiHeadAttention row (keras_nlp's CachedMultiHeadAttention too), whose output
 * is (batch, T, E): it runs query, key and value projections (EinsumDense, E -> heads x
 * key_dim, HK wide), the probabilities (heads x T x S per sample) and an output projection
 * (HK -> E), none of which the summary lists: added here as a module tree has an attention
 * block. HK follows from its parameters, 4 E HK + 3 HK + E (4 E HK without biases), when
 * query, key and value are all E wide; else HK is taken as parameters / E, more than the
 * query's kernel alone allows (the safe side). So it is for Keras 3's
 * GroupedQueryAttention (grouped set), whose key and value have fewer heads than the
 * query, which the parameters do not tell: parameters / E is more than the query's
 * width plus the key's (or value's), which is what the key (value) and its copy repeated
 * to the query's heads hold. The key's length S is kseq (the longest sequence among its
 * inputs, or before it), or T. The heads are m->heads (--heads: the query's), which
 * must divide an exact HK; Keras has no head size to assume (key_dim is free), so
 * without it the row's heads are EST_HEADS_UNKNOWN (est_heads_check). `frozen`: none of
 * its parameters trains. */
static int keras_mha(struct est_model *m, const char *shape, size_t ext, uint64_t params,
                     uint64_t kseq, int grouped, int frozen, const char *file, size_t line,
                     struct carma_err *err)
{
    const char *cls = grouped ? "GroupedQueryAttention" : "MultiHeadAttention";
    int nd;
    uint64_t t, e;
    if (keras_one_tensor(shape, ext, &nd, &t, &e) < 0 || nd < 2)
        return keras_attn_shape_refusal(file, line, cls, "projections and probabilities",
                                        err);
    uint64_t s = kseq > t ? kseq : t, hk, bias = 1;
    int exact = 1;
    if (grouped) {
        exact = 0;
        hk = params / e ? params / e : e;
    } else if (params > e && (params - e) % (4 * e + 3) == 0) {
        hk = (params - e) / (4 * e + 3);
    } else if (params && params % (4 * e) == 0) {
        hk = params / (4 * e);
        bias = 0;
    } else {
        exact = 0;
        hk = params / e ? params / e : e;
    }
    if (m->heads && exact && hk % m->heads)
        return carma_err_at(err, file, line,
                            "MultiHeadAttention whose projections are %llu wide (heads x "
                            "key_dim, from its %llu parameters at width %llu): --heads %u "
                            "does not divide that (give its num_heads)",
                            (unsigned long long)hk, (unsigned long long)params,
                            (unsigned long long)e, m->heads);
    uint8_t src;
    uint64_t heads = heads_take(
        m, 1, 0, line, grouped ? "Keras GroupedQueryAttention" : "Keras MultiHeadAttention",
        &src);
    if (hk > EST_MAX_ELEMS / s || t > EST_MAX_ELEMS / s / heads)
        return carma_err_at(err, file, line, "%s too large", cls);
    uint64_t pq = exact ? e * hk + bias * hk : 0, po = exact ? hk * e + bias * e : params;
    const uint64_t out[5] = {t * hk, s * hk, s * hk, heads * t * s, t * e};
    const uint64_t par[5] = {pq, pq, pq, 0, po};
    for (int k = 0; k < 5; k++) {
        if (est_model_add(m, k == 3 ? EST_K_ATTN : EST_K_LINEAR, out[k], par[k], 1, 0) < 0)
            return carma_err_at(err, file, line, "too many layers or too large a layer");
        struct est_layer *l = &m->layers[m->n - 1];
        l->shares_input = k == 1 || k == 2; /* key and value read the query's input */
        if (k == 3) {
            l->attn = 0; /* out holds heads x T x S already */
            l->heads_src = src;
        }
        if (frozen) {
            l->frozen = par[k];
            l->wbits = 32; /* Keras keeps variables in fp32 */
            m->frozen += par[k];
        }
    }
    return 0;
}

/* Keras's Attention and AdditiveAttention rows (output (batch, T, D)): one head and no
 * projections, so there are no heads to give. The scores, T x S per sample (S: the
 * key's length, s, or T), are a new tensor, then the softmax's output, which it keeps,
 * and the dropout's mask and output (counted whatever its rate); the output is
 * probabilities x values. Additive scores (AdditiveAttention, and Attention with a
 * weight: score_mode="concat" holds one, as use_scale=True does, which the summary does
 * not tell apart, so read so, the safe side) add the query and key over every pair
 * first: a (T, S, dq) sum through a tanh that keeps its output, summed over dq (dq: the
 * query's width, the widest of the row's and its inputs', dq). They are added as the
 * layers they are: no attention row, as a fused kernel never runs them. `params`: its
 * scales, on the first row; `frozen`: none trains. */
static int keras_attention(struct est_model *m, const char *shape, size_t ext,
                           uint64_t params, uint64_t s, uint64_t dq, int additive, int frozen,
                           const char *file, size_t line, struct carma_err *err)
{
    int nd;
    uint64_t t, d;
    if (keras_one_tensor(shape, ext, &nd, &t, &d) < 0 || nd < 2)
        return keras_attn_shape_refusal(file, line,
                                        additive ? "AdditiveAttention" : "Attention",
                                        "scores", err);
    if (s < t)
        s = t;
    if (dq < d)
        dq = d;
    if (t > EST_MAX_ELEMS / s || (additive && t * s > EST_MAX_ELEMS / dq))
        return carma_err_at(err, file, line, "%s too large",
                            additive ? "AdditiveAttention" : "Attention");
    /* (kind, elements): the sum, tanh and their sum over dq; the scores' softmax and
     * dropout; the output. A pooling is a new tensor that keeps its input. */
    const struct {
        enum est_kind kind;
        uint64_t out;
    } rows[] = {{EST_K_POOL, t * s * dq}, {EST_K_ACT, t * s * dq}, {EST_K_POOL, t * s},
                {EST_K_SOFTMAX, t * s},   {EST_K_DROPOUT, t * s},  {EST_K_POOL, t * d}};
    for (size_t k = additive ? 0 : 2; k < sizeof rows / sizeof rows[0]; k++) {
        uint64_t p = k == (additive ? 0u : 2u) ? params : 0;
        if (est_model_add(m, rows[k].kind, rows[k].out, p, 1, 0) < 0)
            return carma_err_at(err, file, line, "too many layers or too large a layer");
        struct est_layer *l = &m->layers[m->n - 1];
        if (rows[k].kind == EST_K_ACT)
            l->flags = EST_LF_SAVES_RESULT; /* tanh */
        if (frozen && p) {
            l->frozen = p;
            l->wbits = 32; /* Keras keeps variables in fp32 */
            m->frozen += p;
        }
    }
    return 0;
}

/* The rows of a Keras summary read so far, for the names in a later row's "Connected
 * to" cell: the last KERAS_NAMES rows, each with its output's sequence (the dimensions
 * between the batch and the last, multiplied) and last dimension (0, 0: not one
 * tensor), and the largest of every (batch, seq..., width) output. A name longer than
 * its slot is kept cut, and matched as a prefix. */
#define KERAS_NAMES 512
struct keras_name {
    char name[48];
    uint8_t cut;
    uint64_t seq, last;
};
struct keras_names {
    size_t n;           /* rows recorded: row i is in slot i % KERAS_NAMES */
    uint64_t seq, last; /* the largest of every row recorded with a sequence */
    struct keras_name row[KERAS_NAMES];
};

/* Records a row's name and output shape; returns the shape's dimensions past the batch
 * (0 when it is not one tensor), whose middle one the row's seq then holds. */
static int keras_names_add(struct keras_names *nm, const char *name, size_t n,
                           const char *shape, size_t ext)
{
    struct keras_name *r = &nm->row[nm->n++ % KERAS_NAMES];
    size_t k = n < sizeof r->name - 1 ? n : sizeof r->name - 1;
    memcpy(r->name, name, k);
    r->name[k] = '\0';
    r->cut = k < n;
    int nd;
    uint64_t seq, last;
    r->seq = r->last = 0;
    if (keras_one_tensor(shape, ext, &nd, &seq, &last) < 0)
        return 0;
    r->seq = seq;
    r->last = last;
    if (nd < 2)
        return nd; /* (batch, width): no sequence to attend over */
    if (seq > nm->seq)
        nm->seq = seq;
    if (last > nm->last)
        nm->last = last;
    return nd;
}

/* The longest sequence (*seq) and widest last dimension (*last) of the tensors a
 * row's "Connected to" cell names (c, n bytes): "name[i][j]" each, quoted in a list
 * (TF 2.x: "['input_1[0][0]', 'input_2[0][0]']") or not (Keras 3, older TF), a name
 * without its [i][j] being cut (Keras 3's ellipsis, dropped by keras3_join): matched as a
 * prefix. A name not among nm's rows, or whose output is not one tensor, counts as the
 * largest of every row before (nm->seq, nm->last); so do the names after the 16th, and
 * a cell that names none (a layer's is never empty: cut or edited). */
static void keras_connected(const char *c, size_t n, const struct keras_names *nm,
                            uint64_t *seq, uint64_t *last)
{
    static const char sep[] = " ,'\"[]";
    size_t have = nm->n < KERAS_NAMES ? nm->n : KERAS_NAMES, i = 0;
    unsigned names = 0;
    *seq = *last = 0;
    while (i < n) {
        if (memchr(sep, c[i], sizeof sep - 1)) {
            i++;
            continue;
        }
        const char *e = c + i;
        while (i < n && !memchr(sep, c[i], sizeof sep - 1))
            i++;
        size_t en = (size_t)(c + i - e);
        int indexed = 0; /* "[0][0]" follows: the whole name */
        while (i < n && c[i] == '[') {
            size_t k = i + 1;
            while (k < n && isdigit((unsigned char)c[k]))
                k++;
            if (k == i + 1 || k >= n || c[k] != ']')
                break;
            i = k + 1;
            indexed = 1;
        }
        uint64_t s = 0, l = 0;
        int found = 0, open = ++names > 16;
        for (size_t k = 0; k < have && !open; k++) {
            const struct keras_name *r = &nm->row[k];
            size_t rn = strlen(r->name);
            if (!(rn == en && memcmp(r->name, e, en) == 0) &&
                !(!indexed && en < rn && memcmp(r->name, e, en) == 0) &&
                !(r->cut && rn < en && memcmp(r->name, e, rn) == 0))
                continue;
            found = 1;
            open |= r->seq == 0;
            s = r->seq > s ? r->seq : s;
            l = r->last > l ? r->last : l;
        }
        if (!found || open) {
            s = nm->seq > s ? nm->seq : s;
            l = nm->last > l ? nm->last : l;
        }
        *seq = s > *seq ? s : *seq;
        *last = l > *last ? l : *last;
    }
    if (!names) {
        *seq = nm->seq;
        *last = nm->last;
    }
}

/* The "Connected to" cell of the row on L's current line: its piece there (first, n
 * bytes), then the pieces of the row's next lines (not consumed) at column col (or up
 * to slack columns before it), up to the blank line or rule that ends the row, joined
 * into out (EST_MAX_LINE + 1 bytes) without spaces: TF 2.x breaks the cell after "',"
 * or anywhere in a long name. Returns its length. */
static size_t keras_connected_cell(const struct lines *L, const char *first, size_t n,
                                   size_t col, size_t slack, char *out)
{
    trim(&first, &n);
    if (n > EST_MAX_LINE)
        n = EST_MAX_LINE;
    memcpy(out, first, n);
    struct lines peek = *L;
    struct keras_line nx;
    for (int k = 0; k < 64 && keras_peek(&peek, &nx); k++) {
        if (blank(nx.text, nx.n) || keras_rule(nx.text, nx.n, nx.raw, nx.rawn) ||
            keras_nested_rule(nx.text, nx.n))
            break;
        size_t at = col > slack ? col - slack : 0;
        if (nx.n <= at)
            continue;
        const char *p = nx.text + at;
        size_t pn = nx.n - at;
        trim(&p, &pn);
        if (pn > EST_MAX_LINE - n)
            break;
        memcpy(out + n, p, pn);
        n += pn;
    }
    return n;
}

/* The last dimension of a Keras output shape, "(None, 200, 128)" (of the last shape when
 * it lists several), 0 when it is not a number. */
static uint64_t keras_last_dim(const char *s, size_t n)
{
    while (n && (s[n - 1] == ')' || s[n - 1] == ']' || s[n - 1] == ' '))
        n--;
    size_t k = n;
    while (k && isdigit((unsigned char)s[k - 1]) && n - k < 12)
        k--;
    if (k == n || k == 0 || (s[k - 1] != ' ' && s[k - 1] != '(' && s[k - 1] != ','))
        return 0;
    uint64_t d = 0;
    for (; k < n; k++)
        d = d * 10 + (uint64_t)(s[k] - '0');
    return d;
}

/* The refusal of a Keras layer whose insides the summary does not list (a custom layer,
 * or a built-in one such as LocallyConnected2D); `attention`: its type names attention
 * (a custom one: it runs a MultiHeadAttention or its own). */
static int keras_refuse_custom(const char *file, size_t line, const char *type, size_t type_n,
                               uint64_t params, int attention, struct carma_err *err)
{
    if (attention)
        return carma_err_at(err, file, line,
                            "'%.*s' (%llu parameters) is an attention layer whose insides "
                            "the summary does not list (not Keras's MultiHeadAttention, "
                            "GroupedQueryAttention, Attention or AdditiveAttention), so its "
                            "projections and probabilities (heads x seq x seq per sample) "
                            "cannot be sized; give the model's layers (a layer CSV, "
                            "docs/estimator.md)",
                            (int)type_n, type, (unsigned long long)params);
    return carma_err_at(err, file, line,
                        "'%.*s' holds %llu parameters in a layer whose insides the summary "
                        "does not list, so what it keeps for backward, which grows with the "
                        "batch and sequence rather than with its parameters, is unknown; "
                        "give the model's layers (a layer CSV, docs/estimator.md)",
                        (int)type_n, type, (unsigned long long)params);
}

/* "multiple" at s: the output shape Keras prints for a layer without one. */
static int keras_multiple(const char *s, size_t n)
{
    return n >= 8 && memcmp(s, "multiple", 8) == 0 && (n == 8 || s[8] == ' ');
}

/* Keras's own layer classes (Keras 1 and 2, tf.keras to 2.5), for the type names that
 * Keras before TF 2.6 cut at the width of the first column, "max_pooling1d_1
 * (MaxPooling1": the classes a cut name can be the beginning of. */
static const char *const keras_classes[] = {
    "InputLayer",
    "Dense",
    "Activation",
    "Embedding",
    "Masking",
    "Lambda",
    "Flatten",
    "Reshape",
    "Permute",
    "RepeatVector",
    "ActivityRegularization",
    "Dropout",
    "SpatialDropout1D",
    "SpatialDropout2D",
    "SpatialDropout3D",
    "GaussianNoise",
    "GaussianDropout",
    "AlphaDropout",
    "Conv1D",
    "Conv2D",
    "Conv3D",
    "Conv1DTranspose",
    "Conv2DTranspose",
    "Conv3DTranspose",
    "SeparableConv1D",
    "SeparableConv2D",
    "DepthwiseConv2D",
    "Convolution1D",
    "Convolution2D",
    "Convolution3D",
    "Deconvolution2D",
    "AtrousConvolution1D",
    "AtrousConvolution2D",
    "SeparableConvolution2D",
    "Cropping1D",
    "Cropping2D",
    "Cropping3D",
    "UpSampling1D",
    "UpSampling2D",
    "UpSampling3D",
    "ZeroPadding1D",
    "ZeroPadding2D",
    "ZeroPadding3D",
    "LocallyConnected1D",
    "LocallyConnected2D",
    "MaxPooling1D",
    "MaxPooling2D",
    "MaxPooling3D",
    "AveragePooling1D",
    "AveragePooling2D",
    "AveragePooling3D",
    "GlobalMaxPooling1D",
    "GlobalMaxPooling2D",
    "GlobalMaxPooling3D",
    "GlobalAveragePooling1D",
    "GlobalAveragePooling2D",
    "GlobalAveragePooling3D",
    "MaxPool1D",
    "MaxPool2D",
    "MaxPool3D",
    "AvgPool1D",
    "AvgPool2D",
    "AvgPool3D",
    "GlobalMaxPool1D",
    "GlobalMaxPool2D",
    "GlobalMaxPool3D",
    "GlobalAvgPool1D",
    "GlobalAvgPool2D",
    "GlobalAvgPool3D",
    "BatchNormalization",
    "BatchNormalizationV1",
    "BatchNormalizationV2",
    "SyncBatchNormalization",
    "LayerNormalization",
    "ReLU",
    "LeakyReLU",
    "PReLU",
    "ELU",
    "ThresholdedReLU",
    "Softmax",
    "Add",
    "Subtract",
    "Multiply",
    "Average",
    "Maximum",
    "Minimum",
    "Concatenate",
    "Dot",
    "Merge",
    "Highway",
    "MaxoutDense",
    "SimpleRNN",
    "GRU",
    "LSTM",
    "RNN",
    "ConvLSTM2D",
    "CuDNNGRU",
    "CuDNNLSTM",
    "Bidirectional",
    "TimeDistributed",
    "TimeDistributedDense",
    "Attention",
    "AdditiveAttention",
    "MultiHeadAttention",
    "Rescaling",
    "Resizing",
    "CenterCrop",
    "RandomCrop",
    "RandomFlip",
    "RandomTranslation",
    "RandomRotation",
    "RandomZoom",
    "RandomHeight",
    "RandomWidth",
    "RandomContrast",
    "Normalization",
    "TextVectorization",
    "StringLookup",
    "IntegerLookup",
    "CategoryEncoding",
    "CategoryCrossing",
    "Discretization",
    "Hashing",
    "TensorFlowOpLayer",
    "TFOpLambda",
    "SlicingOpLambda",
    "Functional",
    "Sequential",
    "Model",
    "KerasLayer",
    "DenseFeatures",
    /* tf.keras 2.6 to 2.15 and Keras 3 */
    "EinsumDense",
    "GroupNormalization",
    "UnitNormalization",
    "RMSNormalization",
    "DepthwiseConv1D",
    "ConvLSTM1D",
    "ConvLSTM3D",
    "Identity",
    "GroupQueryAttention",
    "RandomBrightness",
    "AutoContrast",
    "Solarization",
};

/* Whether type[0, n) names one of keras_classes (as class_is compares). */
static int keras_class(const char *type, size_t n)
{
    for (size_t i = 0; i < sizeof keras_classes / sizeof keras_classes[0]; i++)
        if (class_is(keras_classes[i], strlen(keras_classes[i]), type, n))
            return 1;
    return 0;
}

/* How keras_parse_lines reads a layer class: refused (a recurrent layer), by its own
 * name (a model, an input, attention, a wrapper), or by its kind and what the kind's
 * flags take from the name. Classes with equal readings are read alike. */
static unsigned keras_reading(const char *t, size_t n)
{
    static const char *const named[] = {
        "InputLayer", "Functional", "Sequential", "Model", "TimeDistributed",
        "MultiHeadAttention", "Attention", "AdditiveAttention",
    };
    if (est_type_unmodelled(t, n))
        return 1u << 30;
    for (unsigned i = 0; i < sizeof named / sizeof named[0]; i++)
        if (strlen(named[i]) == n && memcmp(named[i], t, n) == 0)
            return (1u << 29) + i;
    /* Keras's Conv1D is a convolution (keras_parse_lines) */
    enum est_kind k = n == 6 && memcmp(t, "Conv1D", 6) == 0 ? EST_K_CONV : est_kind_classify(t, n);
    return (unsigned)k | est_type_flags(k, t, n) << 8 | est_type_keeps(k, t, n) << 16;
}

/* A type cut at its column's width (cut, n bytes): the class it is read as, when every
 * Keras class it can begin is read alike (the first such class), else NULL with *a and
 * *b two classes read differently (*a NULL: it begins none). */
static const char *keras_cut_class(const char *cut, size_t n, const char **a, const char **b)
{
    const char *first = NULL;
    unsigned r0 = 0;
    *a = *b = NULL;
    for (size_t i = 0; n && i < sizeof keras_classes / sizeof keras_classes[0]; i++) {
        const char *c = keras_classes[i];
        if (strlen(c) < n || memcmp(c, cut, n) != 0)
            continue;
        unsigned r = keras_reading(c, strlen(c));
        if (!first) {
            first = c;
            r0 = r;
        } else if (r != r0) {
            *a = first;
            *b = c;
            return NULL;
        }
    }
    return first;
}

static int keras_parse_lines(const char *buf, size_t len, const char *file,
                             struct est_model *m, struct carma_err *err)
{
    struct lines L;
    lines_init(&L, buf, len, file);
    const char *raw;
    size_t rawn;
    char line[EST_MAX_LINE + 1];
    int rc, state = 0, connected = 0, trainable = 0, level = 0;
    /* Keras 3's box (joined by keras3_join): its rows are one line each */
    int box = len >= 3 && memmem(buf, len, BOX_BAR, 3) != NULL;
    uint64_t total = 0, opt_params = 0; /* Keras 3 after fit(): its optimizer's variables */
    int have_total = 0;
    size_t total_line = 0;
    size_t rows = 0, shape_col = 0, param_col = 0, digits_line = 0, skip_until = 0;
    uint64_t prev_last = 0; /* the last dimension of the row before */
    struct widths kwidths = {0}; /* kind_holds: the last dimensions of the rows before */
    uint64_t opaque_params = 0;
    size_t opaque_line = 0;
    char opaque_type[64] = "";
    uint64_t kseq = 0; /* the longest sequence of a (batch, seq, width) output so far */
    struct keras_names names; /* the rows so far, for "Connected to" */
    names.n = 0;
    names.seq = names.last = 0;
    size_t conn_col = 0; /* the "Connected to" column */
    m->format = EST_FMT_KERAS;
    while ((rc = lines_next(&L, &raw, &rawn, err)) == 1) {
        size_t n = keras_clean(raw, rawn, line, &level);
        const char *s = line;
        if (box)
            level = keras3_level(raw, rawn);
        if (state == 0) {
            if (find(s, n, "Layer (type)") && find(s, n, "Output Shape") && find(s, n, "Param #")) {
                connected = find(s, n, "Connected to") != NULL;
                conn_col = connected ? (size_t)(find(s, n, "Connected to") - s) : 0;
                /* show_trainable=True: a last column of Y, N (frozen) or, Keras 3, -
                 * (no weights) */
                trainable = find(s, n, "Trainable") != NULL;
                shape_col = (size_t)(find(s, n, "Output Shape") - s);
                param_col = (size_t)(find(s, n, "Param #") - s);
                state = 1;
            } else if (find(s, n, "Layer (type)") && find(s, n, "Config") &&
                       !find(s, n, "Output Shape") && !find(s, n, "Param")) {
                /* KerasHub's Task.summary() prints its preprocessor first, a table of
                 * "Layer (type)" and "Config" (its tokenizer's vocabulary, its image
                 * converter's size), then the model's own summary: passed over */
            } else if (find(s, n, "Layer (type)")) {
                /* a header that lacks a column (edited: "Param" for "Param #") */
                int no_shape = !find(s, n, "Output Shape");
                return carma_err_at(err, file, L.line,
                                    "Keras header without the %s column%s: give it as "
                                    "model.summary() prints it, 'Layer (type)  Output Shape  "
                                    "Param #'",
                                    no_shape && !find(s, n, "Param #") ? "'Output Shape' and "
                                                                         "'Param #'"
                                    : no_shape                        ? "'Output Shape'"
                                                                      : "'Param #'",
                                    no_shape ? "" : " ('Param' edited?)");
            }
            continue; /* 'Model: "name"' and rules before the header */
        }
        if (state == 1) {
            if (keras_rule(s, n, raw, rawn)) {
                state = 2;
                continue;
            }
            return carma_err_at(err, file, L.line, "expected a rule after the header");
        }
        if (state == 2) {
            if (L.line <= skip_until)
                continue; /* the rest of a wrapped name, read with its row */
            if (rule_line(s, n, '=')) {
                state = 3;
                continue;
            }
            if (keras_rule(s, n, raw, rawn) || blank(s, n) || keras_nested_rule(s, n))
                continue; /* row separators, expand_nested's rules */
            if (find(s, n, "Total params:")) {
                state = 3; /* Keras 3 closes the box and prints totals */
                goto totals;
            }
            const char *t = s;
            size_t tn = n;
            trim(&t, &tn);
            /* "conv2d (Conv2D)   (None, 26, 26, 32)   320   [...]" */
            const char *type, *name = t;
            size_t type_n, j, name_n;
            char whole[128];
            int cut = 0; /* the type is cut at its column's width */
            size_t k0 = keras_cell_len(t, tn);
            size_t sh = k0;
            while (sh < tn && t[sh] == ' ')
                sh++;
            if (!box && shape_col && (size_t)(t - s) < shape_col && !memchr(t, '(', k0) &&
                sh < tn && (t[sh] == '(' || t[sh] == '[')) {
                /* TF 2.x cut a name that fills its cell before its type: the name and
                 * type go on over the next lines ("expanded_conv_depthwise_relu" /
                 * " (ReLU)", "token_and_position_embeddin" / "g (TokenAndPositionEmbe"
                 * ...), which are read here and then skipped */
                size_t wn = keras_wrapped_name(&L, t, k0, shape_col, whole, sizeof whole,
                                               &skip_until);
                const char *wo = wn ? memchr(whole, '(', wn) : NULL;
                if (!wo || wo == whole || whole[wn - 1] != ')' || wo + 2 > whole + wn - 1)
                    return carma_err_at(err, file, L.line, "layer row is not 'name (Type)'");
                type = wo + 1;
                type_n = (size_t)(whole + wn - 1 - type);
                name = whole;
                name_n = (size_t)(wo - whole);
                j = k0;
            } else {
                /* "conv2d (Conv2D)   (None, 26, 26, 32)   320   [...]" */
                const char *op = memchr(t, '(', tn);
                if (!op || op == t || op[-1] != ' ') {
                    /* TF 2.x wraps long type names (" 2D)") and shapes (" )]") onto the
                     * next line; functional models continue the "Connected to" column. */
                    if (connected || keras_wrap_only(t, tn, L.line == digits_line))
                        continue;
                    return carma_err_at(err, file, L.line, "layer row is not 'name (Type)'");
                }
                /* Keras before TF 2.6 cuts the cell at its width, one space before the
                 * shape, with no ')' ("max_pooling1d_1 (MaxPooling1 (None, 73, 32)"):
                 * the type ends at the header's Output Shape column. A name that fills
                 * the cell leaves no type ("(" or nothing before the shape). */
                size_t sc = shape_col > (size_t)(t - s) ? shape_col - (size_t)(t - s) : 0;
                size_t opc = (size_t)(op - t);
                if (!box && sc >= 2 && sc < tn && t[sc - 1] == ' ' && t[sc - 2] != ' ' &&
                    opc <= sc && !memchr(op, ')', sc - opc) &&
                    (t[sc] == '(' || t[sc] == '[' || keras_multiple(t + sc, tn - sc))) {
                    cut = 1;
                    if (opc + 3 > sc)
                        return carma_err_at(err, file, L.line,
                                            "the layer's name fills its cell and its type is "
                                            "cut off (Keras before TF 2.6 cuts the 'Layer "
                                            "(type)' column at its width): print the summary "
                                            "wider, model.summary(line_length=150), or give a "
                                            "layer CSV (docs/estimator.md)");
                }
                /* The type ends at ')' or, when wrapped, at two spaces. */
                size_t e = (size_t)(op - t) + 1;
                if (cut)
                    e = sc - 1;
                while (!cut && e < tn && t[e] != ')' &&
                       !(t[e] == ' ' && e + 1 < tn && t[e + 1] == ' '))
                    e++;
                /* "()" is no type; "(" alone is a wrapped one (a 24-letter name such as
                 * "global_average_pooling2d (" fills the cell), completed below */
                if (e >= tn || (e == (size_t)(op - t) + 1 && t[e] == ')'))
                    return carma_err_at(err, file, L.line, "layer row is not 'name (Type)'");
                type = op + 1;
                type_n = e - (size_t)(op - t) - 1;
                name_n = (size_t)(op - t);
                j = t[e] == ')' ? e + 1 : e;
                /* TF 2.x cuts a long type mid-word ("(Separab" / "leConv2D)"): the next
                 * line completes it, so that it is classified by its whole name. */
                if (t[e] != ')' && !cut) {
                    struct lines peek = L;
                    struct keras_line nx;
                    if (keras_peek(&peek, &nx)) {
                        const char *c = nx.text;
                        size_t nn = nx.n;
                        trim(&c, &nn);
                        size_t k = 0;
                        while (k < nn && c[k] != ' ' && c[k] != '(')
                            k++;
                        if (k > 1 && c[k - 1] == ')' && (k == nn || c[k] == ' ') &&
                            type_n + k - 1 < sizeof whole) {
                            memcpy(whole, type, type_n);
                            memcpy(whole + type_n, c, k - 1);
                            type_n += k - 1;
                            type = whole;
                        }
                    }
                    if (!type_n)
                        return carma_err_at(err, file, L.line, "layer row is not 'name (Type)'");
                }
            }
            while (j < tn && t[j] == ' ')
                j++;
            if (keras_multiple(t + j, tn - j))
                return carma_err_at(err, file, L.line,
                                    "output shape 'multiple': the layer of a subclassed model "
                                    "(a keras.Model subclass, as Hugging Face's TF models), or "
                                    "one called more than once, has no one output shape, so "
                                    "its activations cannot be counted; summarise a "
                                    "functional model called on a fixed input (x = "
                                    "keras.Input(shape=(128,)); keras.Model(x, "
                                    "model(x)).summary()), or give the model's layers (a "
                                    "layer CSV, docs/estimator.md)");
            if (j >= tn || (t[j] != '(' && t[j] != '['))
                return carma_err_at(err, file, L.line, "missing output shape");
            char wrapped[EST_MAX_LINE + 1];
            const char *shape = t + j;
            size_t ext = shape_extent(shape, tn - j), used = ext;
            if (!ext) {
                /* TF 2.x wraps a shape longer than its column: "[(None, 224, 224, 3"
                 * here, then ")]" on the next lines, at the header's column (a row
                 * whose name fills its cell starts the shape a column later). */
                used = keras_cell_len(t + j, tn - j);
                ext = keras_unwrap(&L, shape_col, (size_t)level, t + j, used,
                                   wrapped);
                shape = wrapped;
            }
            if (!ext && tn - j > 2 && t[j] == '[' && t[j + 1] == '(') {
                /* TF 2.0-2.5 cut a shape at its column's width and print no rest: an
                 * input's "[(None, 224, 224, 3)" loses only its "]" */
                size_t in = shape_extent(t + j + 1, tn - j - 1);
                if (in && j + 1 + in < tn && t[j + 1 + in] == ' ') {
                    shape = t + j + 1;
                    ext = in;
                    used = 1 + in;
                }
            }
            if (!ext) {
                size_t q = keras_cell_len(t + j, tn - j); /* the header's cell at most */
                if (param_col > shape_col && q > param_col - shape_col - 1)
                    q = param_col - shape_col - 1;
                return carma_err_at(err, file, L.line,
                                    "output shape '%.*s' does not close: cut at its column's "
                                    "width (TF 2.0-2.5 print no rest of it)? print the summary "
                                    "wider, model.summary(line_length=150)",
                                    (int)(q < 40 ? q : 40), t + j);
            }
            uint64_t out, params;
            if (est_parse_shape(shape, ext, &out) < 0) {
                const char *none = find(shape, ext, "None");
                size_t commas = 0; /* an image's (None, H, W, C): three */
                for (size_t k = 0; k < ext; k++)
                    commas += shape[k] == ',';
                if (none && find(none + 4, ext - (size_t)(none + 4 - shape), "None"))
                    return carma_err_at(err, file, L.line,
                                        "an output shape with a dimension left open (None "
                                        "beyond the batch, as %s): print the model built on a "
                                        "fixed input, e.g. %s",
                                        commas >= 3 ? "an image's height and width"
                                                    : "a sequence length",
                                        commas >= 3 ? "keras.Input(shape=(224, 224, 3)) for "
                                                      "224x224 RGB images"
                                                    : "keras.Input(shape=(128,)) for "
                                                      "sequence 128");
                return carma_err_at(err, file, L.line,
                                    "bad output shape (only the batch may be None)");
            }
            uint64_t last = keras_last_dim(shape, ext), in_last = prev_last;
            widths_add(&kwidths, prev_last); /* the rows before this one */
            prev_last = last;
            j += used;
            while (j < tn && t[j] == ' ')
                j++;
            size_t ps = j;
            while (j < tn && t[j] != ' ')
                j++;
            /* TF 2.x wraps a count longer than its column (7 digits beside a Trainable
             * column): the rest is on the next line, at the same column */
            char count[48];
            size_t cn = j - ps;
            const char *cs = t + ps;
            {
                struct lines peek = L;
                struct keras_line nx;
                size_t pc = (size_t)(t + ps - s);
                if (cn && cn < 24 && keras_peek(&peek, &nx)) {
                    const char *next = nx.text;
                    size_t nn = nx.n, k = pc;
                    while (k < nn && isdigit((unsigned char)next[k]))
                        k++;
                    if (k > pc && k - pc < 24 && (k == nn || next[k] == ' ') &&
                        pc > 0 && next[pc - 1] == ' ') {
                        memcpy(count, cs, cn);
                        memcpy(count + cn, next + pc, k - pc);
                        cn += k - pc;
                        cs = count;
                        digits_line = L.line + 1;
                    }
                }
            }
            if (est_parse_count(cs, cn, &params) < 0)
                return carma_err_at(err, file, L.line, "bad parameter count");
            while (j < tn && t[j] == ' ')
                j++;
            int frozen = 0;
            if (trainable) {
                size_t tb = tn;
                while (tb > j && t[tb - 1] != ' ')
                    tb--;
                if (tn - tb != 1 || (t[tb] != 'Y' && t[tb] != 'N' && t[tb] != '-'))
                    return carma_err_at(err, file, L.line,
                                        "no Trainable cell (Y, N or -) at the end of the row");
                frozen = t[tb] == 'N';
                tn = tb;
                while (tn > j && t[tn - 1] == ' ')
                    tn--;
            }
            if (j < tn && !connected)
                return carma_err_at(err, file, L.line, "unexpected text after the parameters");
            while (name_n && name[name_n - 1] == ' ')
                name_n--;
            int knd = keras_names_add(&names, name, name_n, shape, ext);
            uint64_t kmid = names.row[(names.n - 1) % KERAS_NAMES].seq;
            /* a nested model whose layers expand_nested=True lists after it: they hold
             * its parameters, so they are counted, not it */
            if (keras_holds_nested(&L, box, level))
                continue;
            if (cut) {
                /* read as the Keras class it begins, when all it can begin read alike */
                const char *ca, *cb;
                const char *cls = keras_cut_class(type, type_n, &ca, &cb);
                if (!cls && !ca && (rc = refuse_unmodelled(file, L.line, type, type_n, err)))
                    return rc;
                if (!cls && ca)
                    return carma_err_at(err, file, L.line,
                                        "type '%.*s' is cut off (Keras before TF 2.6 cuts the "
                                        "'Layer (type)' column at its width) and could be "
                                        "%s or %s, which are read differently: print the "
                                        "summary wider, model.summary(line_length=150), or "
                                        "give a layer CSV (docs/estimator.md)",
                                        (int)type_n, type, ca, cb);
                if (!cls)
                    return carma_err_at(err, file, L.line,
                                        "type '%.*s' is cut off (Keras before TF 2.6 cuts the "
                                        "'Layer (type)' column at its width) and begins no "
                                        "Keras layer class carma knows (a custom layer?), so "
                                        "what it keeps is unknown: print the summary wider, "
                                        "model.summary(line_length=150), or give a layer CSV "
                                        "(docs/estimator.md)",
                                        (int)type_n, type);
                type = cls;
                type_n = strlen(cls);
            }
            if ((rc = refuse_unmodelled(file, L.line, type, type_n, err)))
                return rc;
            /* A nested model holding no parameters before any layer that does (keras.io's
             * data_augmentation = keras.Sequential([RandomFlip(), RandomRotation()])) keeps
             * nothing for backward, no gradient flowing back to the input: read as a
             * preprocessing layer, its output the next layer's input. */
            int preprocessing = params == 0 && m->params == 0;
            if (((type_n == 10 && memcmp(type, "Functional", 10) == 0) ||
                 (type_n == 10 && memcmp(type, "Sequential", 10) == 0) ||
                 (type_n == 5 && memcmp(type, "Model", 5) == 0)) &&
                !preprocessing)
                return carma_err_at(err, file, L.line,
                                    "a nested model (%.*s) whose layers the summary does not "
                                    "list, so its activations and gradients cannot be "
                                    "counted; print it with model.summary(expand_nested=True), "
                                    "or give its layers (a layer CSV, docs/estimator.md)",
                                    (int)type_n, type);
            if (knd == 2 && kmid > kseq)
                kseq = kmid;
            if (type_n == 10 && memcmp(type, "InputLayer", 10) == 0) {
                /* a nested model's input is the outer model's (a Sequential one shows
                 * none of its own: then it is the input) */
                if (level == 0 || !m->input)
                    m->input += out;
                continue;
            }
            int mha = type_n >= 18 && memcmp(type + type_n - 18, "MultiHeadAttention", 18) == 0;
            int gqa = type_n >= 21 && memcmp(type + type_n - 21, "GroupedQueryAttention", 21) == 0;
            int dot = type_n == 9 && memcmp(type, "Attention", 9) == 0;
            int add = type_n == 17 && memcmp(type, "AdditiveAttention", 17) == 0;
            if (mha || gqa || dot || add) {
                /* The key's length and the query's width: from the inputs "Connected to"
                 * names (query, value, key, masks: the longest of them), else the
                 * longest sequence so far (the rows of a summary without that column
                 * are in call order) */
                uint64_t ks = kseq, kw = names.last;
                if (connected) {
                    char cell[EST_MAX_LINE + 1];
                    size_t cl = keras_connected_cell(&L, t + j, tn - j, conn_col,
                                                     (size_t)level + 1, cell);
                    keras_connected(cell, cl, &names, &ks, &kw);
                }
                if (mha || gqa)
                    rc = keras_mha(m, shape, ext, params, ks, gqa, frozen, file, L.line, err);
                else if (params > (dot ? 2 : 2 * (last > kw ? last : kw)))
                    return keras_refuse_custom(file, L.line, type, type_n, params, 1, err);
                else
                    rc = keras_attention(m, shape, ext, params, ks, kw, add || params > 0,
                                         frozen, file, L.line, err);
                if (rc)
                    return rc;
                rows++;
                continue;
            }
            if (est_kind_classify(type, type_n) == EST_K_ATTN)
                return keras_refuse_custom(file, L.line, type, type_n, params, 1, err);
            /* Keras's Conv1D is a convolution; the name means a linear layer in prints
             * of Hugging Face's PyTorch models (est_kind_classify) */
            int kconv1d = type_n == 6 && memcmp(type, "Conv1D", 6) == 0;
            int td = type_n == 15 && memcmp(type, "TimeDistributed", 15) == 0;
            enum est_kind kind = kconv1d ? EST_K_CONV : est_kind_classify(type, type_n);
            /* a custom layer whose class name holds a layer's word (a PreNormBlock) is
             * no such layer: read as one of no known kind, refused below as those are;
             * Keras 3 cuts a long class at its column ("BatchNormalizat…") */
            const char *ka, *kb;
            int custom = !td && !one_layer_class(type, type_n) &&
                         !(type_n >= 8 && keras_cut_class(type, type_n, &ka, &kb)) &&
                         !kind_holds(kind, type, type_n, params, last, &kwidths);
            if (custom)
                kind = EST_K_OTHER;
            if (td && params == 0) {
                /* a layer without weights per step (a pooling, a dropout, a Flatten): a
                 * new tensor that keeps its input, the safe side of each */
                kind = EST_K_POOL;
            } else if (td) {
                /* the row shows the wrapped layer's parameters, not the layer: a Dense
                 * from the row before's features is one (a per-step classifier) */
                uint64_t in = in_last, o = last;
                int dense = linear_params(params, in, o);
                if (!dense)
                    return carma_err_at(err, file, L.line,
                                        "TimeDistributed holds %llu parameters, not a Dense "
                                        "layer's from the %llu features before it to its "
                                        "%llu: the summary does not show the layer it wraps, "
                                        "so what that keeps per step is unknown; give the "
                                        "model's layers (a layer CSV, docs/estimator.md: the "
                                        "wrapped layer's rows with their outputs over all "
                                        "steps), or, for a recurrent layer inside, state the "
                                        "job's memory (carma submit --mem)",
                                        (unsigned long long)params, (unsigned long long)in,
                                        (unsigned long long)o);
                kind = EST_K_LINEAR;
            } else if (kind == EST_K_OTHER && params > 2 * last) {
                /* a custom layer: Keras never lists its insides, and what they keep
                 * grows with the batch and sequence whatever its parameters (keras.io's
                 * TransformerBlock: 10,656). Only a per-channel holder (ConvNeXt's
                 * LayerScale: as many as the output's channels) is read. */
                return keras_refuse_custom(file, L.line, type, type_n, params, 0, err);
            }
            if ((td || kconv1d || custom
                     ? est_model_add(m, kind, out, params, 1, 0)
                     : est_model_add_type(m, type, type_n, out, params, 1, 0)) < 0)
                return carma_err_at(err, file, L.line, "too many layers or too large a layer");
            /* the largest row of no known kind: a custom block (keras_nlp's
             * TransformerEncoder) lists nothing inside, even with expand_nested */
            if (m->layers[m->n - 1].kind == EST_K_OTHER && params > opaque_params) {
                opaque_params = params;
                opaque_line = L.line;
                size_t tc = type_n < sizeof opaque_type - 1 ? type_n : sizeof opaque_type - 1;
                memcpy(opaque_type, type, tc);
                opaque_type[tc] = '\0';
            }
            struct est_layer *kl = &m->layers[m->n - 1];
            if (frozen) { /* "N": none of its parameters trains */
                kl->frozen = params;
                kl->wbits = 32;
                m->frozen += params;
            } else if (kl->kind == EST_K_NORM && last &&
                       ((type_n >= 9 && memcmp(type, "BatchNorm", 9) == 0) ||
                        (type_n >= 13 && memcmp(type, "SyncBatchNorm", 13) == 0)) &&
                       (params == 3 * last || params == 4 * last)) {
                /* a BatchNormalization's moving mean and variance, 2C of its 4C (3C
                 * without scale or center; C channels, the last dimension): variables
                 * without a gradient (checked against the printed trainable count at the
                 * end, and else dropped) */
                kl->frozen = 2 * last;
                kl->wbits = 32;
                m->frozen += 2 * last;
            }
            rows++;
            continue;
        }
    totals:;
        if (find(s, n, "Layer (type)"))
            return carma_err_at(err, file, L.line,
                                "a second table starts here: give one model per summary");
        int tp = total_params_line(s, n, &total);
        if (tp < 0)
            return carma_err_at(err, file, L.line, "bad 'Total params' line");
        if (tp) {
            have_total = 1;
            total_line = L.line;
        }
        if (trainable_params_line(m, s, n, L.line) < 0)
            return carma_err_at(err, file, L.line, "bad 'Trainable params' line");
        /* Keras 3 after fit(): 'Total params' holds the optimizer's variables too */
        if (params_line(s, n, "Optimizer params:", &opt_params) < 0)
            return carma_err_at(err, file, L.line, "bad 'Optimizer params' line");
    }
    if (rc < 0)
        return rc;
    if (state == 1) /* the header was read: the file ends before its rule */
        return carma_err_at(err, file, L.line,
                            "the summary ends after its header: no rule and no layer rows "
                            "(cut short?)");
    if (state < 2)
        return carma_err_at(err, file, L.line ? L.line : 1,
                            "not a Keras summary (no 'Layer (type)' header)");
    if (have_total && opt_params) {
        if (opt_params > total)
            return carma_err_at(err, file, L.line,
                                "'Optimizer params: %llu' is more than 'Total params: %llu', "
                                "which holds them: an edited summary?",
                                (unsigned long long)opt_params, (unsigned long long)total);
        total -= opt_params;
    }
    if (rows == 0)
        return carma_err_at(err, file, L.line, "no layers");
    if (!have_total) /* Keras always prints it: the summary was cut short */
        return carma_err_at(err, file, L.line, "no 'Total params:' line: summary cut short?");
    /* As for torchinfo: a block that holds a real share of the model (opaque_block) but
     * lists no layer keeps what it keeps for backward unseen. */
    uint64_t all = total > m->params ? total : m->params;
    if (opaque_block(opaque_params, all))
        return keras_refuse_custom(file, opaque_line, opaque_type, strlen(opaque_type),
                                   opaque_params, 0, err);
    /* Keras's total is its layers' counts' sum; weights a subclassed model creates itself
     * (add_weight on the model) are in no row, and not told from a missing one */
    if ((rc = rows_total(m, total, file, total_line,
                         "give the whole summary as printed (model.summary(expand_nested=True) "
                         "for nested models), or, for weights the model holds outside its "
                         "layers, a layer CSV (docs/estimator.md)",
                         err)) < 0)
        return rc;
    /* The printed trainable count: the BatchNormalizations' moving statistics, then a
     * frozen prefix; failing that, without the statistics (their channels were not the
     * last dimension); failing that, every row not marked 'N' trains. */
    if (m->trainable_line && !trainable_place(m)) {
        for (size_t i = 0; i < m->n; i++) {
            struct est_layer *l = &m->layers[i];
            if (l->kind == EST_K_NORM && l->frozen && l->frozen < l->params) {
                m->frozen -= l->frozen * l->count;
                l->frozen = 0;
                l->wbits = 0;
            }
        }
        if (!trainable_place(m))
            trainable_unplaced(m);
    }
    return 0;
}

/* ---- printed module tree ---------------------------------------------------------- */

/* Offset of the value of `key=` inside args (a whole word), or n when absent. */
static size_t arg_at(const char *a, size_t n, const char *key)
{
    size_t k = strlen(key);
    if (n == 0)
        return n;
    /* a key that ends before the last character, preceded by no word character */
    for (const char *p = a; (p = memmem(p, n - 1 - (size_t)(p - a), key, k)); p++) {
        size_t i = (size_t)(p - a);
        if (!(i && (isalnum((unsigned char)a[i - 1]) || a[i - 1] == '_')))
            return i + k;
    }
    return n;
}

/* A dropout printed with probability zero (`p=0.0`: timm's default, and transformers'
 * where a configuration sets no dropout): F.dropout returns its input itself then, with
 * no mask and no copy, as an Identity does. */
static int dropout_zero(const char *a, size_t n)
{
    size_t j = arg_at(a, n, "p=");
    if (j == n || a[j] != '0')
        return 0;
    while (j < n && a[j] == '0')
        j++;
    if (j < n && a[j] == '.')
        for (j++; j < n && a[j] == '0'; j++)
            ;
    return j == n || a[j] == ',' || a[j] == ' ';
}

/* Value of `key=` (an integer) inside args, or -1 when absent / not an integer. */
static int64_t arg_int(const char *a, size_t n, const char *key)
{
    size_t j = arg_at(a, n, key), st = j;
    int64_t v = 0;
    while (j < n && isdigit((unsigned char)a[j]) && v < (1ll << 40))
        v = v * 10 + (a[j++] - '0');
    if (j == st || v >= (1ll << 40))
        return -1;
    return v;
}

/* A dimension at a[*j]: its digits, below 2^32. 1 and *j past it, 0 when no digit
 * is there, -1 when it is too large. */
static int read_dim(const char *a, size_t n, size_t *j, int64_t *x)
{
    size_t i = *j, st = i;
    int64_t v = 0;
    while (i < n && isdigit((unsigned char)a[i]) && v < (1ll << 32))
        v = v * 10 + (a[i++] - '0');
    *j = i;
    *x = v;
    if (i == st)
        return 0;
    return v >= (1ll << 32) ? -1 : 1;
}

/* Leading positional integers of args: "30522, 768, padding_idx=0" -> 2 values;
 * "(768,), eps=..." -> 1 value (a tuple counts as its product). */
static int arg_positional(const char *a, size_t n, int64_t *v, int max)
{
    int got = 0;
    size_t i = 0;
    while (got < max && i < n) {
        while (i < n && a[i] == ' ')
            i++;
        int tuple = i < n && a[i] == '(';
        if (tuple)
            i++;
        int64_t prod = 1;
        int dims = 0;
        for (;;) {
            while (i < n && a[i] == ' ')
                i++;
            int64_t x;
            int r = read_dim(a, n, &i, &x);
            if (r == 0)
                break;
            if (r < 0)
                return -1;
            prod *= x;
            if (prod >= (1ll << 40))
                return -1;
            dims++;
            while (i < n && a[i] == ' ')
                i++;
            if (tuple && i < n && a[i] == ',') {
                i++;
                continue;
            }
            break;
        }
        if (tuple) {
            while (i < n && a[i] == ' ')
                i++;
            if (i >= n || a[i] != ')')
                return got;
            i++;
        }
        if (dims == 0)
            return got;
        v[got++] = prod;
        while (i < n && a[i] == ' ')
            i++;
        if (i < n && a[i] == ',')
            i++;
        else
            break;
    }
    return got;
}

/* The integers of `key=(a, b)` or `key=a` inside args into v (at most max): their
 * number, 0 when the key is absent, -1 when malformed. */
static int arg_dims(const char *a, size_t n, const char *key, int64_t *v, int max)
{
    size_t j = arg_at(a, n, key);
    if (j == n)
        return 0;
    char close = a[j] == '(' ? ')' : ']'; /* nn.Unfold prints lists */
    int tuple = a[j] == '(' || a[j] == '[';
    j += (size_t)tuple;
    int got = 0;
    for (;;) {
        while (j < n && a[j] == ' ')
            j++;
        int64_t x;
        if (read_dim(a, n, &j, &x) <= 0 || got == max)
            return -1;
        v[got++] = x;
        if (!tuple)
            return got;
        if (j < n && a[j] == ',') {
            j++;
            while (j < n && a[j] == ' ')
                j++;
            if (j < n && a[j] == close) /* "(3,)" */
                return got;
            continue;
        }
        return j < n && a[j] == close ? got : -1;
    }
}

/* a * b + c when it stays within EST_MAX_PARAMS, else UINT64_MAX (a size no layer has,
 * refused by est_model_add). */
static uint64_t param_count(uint64_t a, uint64_t b, uint64_t c)
{
    if (a && b > (EST_MAX_PARAMS - c) / a)
        return UINT64_MAX;
    return a * b + c;
}

/* A convolution that cuts its input into patches (kernel = stride, no padding, dilation
 * or groups), as vision transformers embed images: a linear layer per patch. Sets *in to
 * the elements of one patch; 0 when the print says otherwise, -1 when malformed. */
static int patch_conv(const char *a, size_t n, uint64_t in_ch, uint64_t *in, int64_t ks[3],
                      int *nks)
{
    int64_t st[3], pad[3], dil[3];
    int nk = arg_dims(a, n, "kernel_size=", ks, 3);
    *nks = nk;
    int ns = arg_dims(a, n, "stride=", st, 3);
    int np = find(a, n, "padding=valid") ? 0 : arg_dims(a, n, "padding=", pad, 3);
    if (np < 0 && find(a, n, "padding=same"))
        return 0;
    int nd = arg_dims(a, n, "dilation=", dil, 3);
    if (nk < 0 || ns < 0 || np < 0 || nd < 0)
        return -1;
    if (nk == 0 || ns != nk || arg_int(a, n, "groups=") > 1)
        return 0;
    uint64_t e = in_ch;
    for (int i = 0; i < nk; i++) {
        if (ks[i] != st[i] || (i < np && pad[i] != 0) || (i < nd && dil[i] != 1))
            return 0;
        e *= (uint64_t)ks[i];
        if (e > EST_MAX_ELEMS)
            return -1;
    }
    *in = e;
    return 1;
}


/* ---- spatial sizes in a convolutional module tree (--image-size) ----
 *
 * A print lists modules, not the tensors between them, so the parser keeps the shapes
 * (channels x height x width) of the most recent tensors and lets each module pick its
 * input: a convolution or a norm the newest tensor with its input channels, anything
 * else the newest tensor. A block two or more of whose children read the block's input
 * is a set of branches: joined by an add when their outputs agree, else concatenated.
 * A convolution or norm whose channels no tensor has reads a concatenation the print
 * does not show (functional pooling branches, DenseNet's growing input): of the newest
 * tensor and an earlier one at its size; of the newest upsampled to an earlier, larger
 * one's size (a U-Net's decoder, F.interpolate then torch.cat); else, unexplained, at the
 * newest spatial size (est_model.join_line, for a note). */
#define MT_SHAPES 1024u
#define MT_MAX_WINDOW (1 << 20) /* kernel, stride, padding, scale: keeps sizes in int64 */

struct mt_shape {
    uint64_t c, h, w;
    uint32_t id;     /* serial: which tensor, for "reads the block's input" */
    uint8_t concat;  /* made by joining branches: a later reader may widen it */
    uint8_t pending; /* branches of one shape joined: a concatenation if a reader asks
                        for its channels (then materialised), else an add (nothing) */
    uint8_t pooled;  /* 1 x 1 since a linear layer read as after a global pool done in
                        Python (mt_space.pool_line), with no pooling module */
};

struct mt_space {
    struct mt_shape s[MT_SHAPES]; /* ring, newest at head - 1 */
    unsigned n, head;
    uint32_t next_id;
    size_t pool_line;       /* the last linear layer read so, and the image it read */
    struct mt_shape pooled_from;
    size_t pool_row;        /* the first row made from that pooled vector */
    uint32_t pool_id;       /* the linear layer's output: later tensors come from it */
    int pool_gate;          /* a sigmoid gated the pooled vector (squeeze-excitation), */
    size_t pool_gate_row;   /* in this row */
    const char *pool_cls;   /* the class of the block holding that linear layer */
    size_t pool_cls_n;
    const char *cl_cls;     /* a pooled read was a per-pixel one: linear layers on the
                               newest tensor's channels in blocks of this class run per
                               pixel from then on (NULL: none) */
    size_t cl_cls_n;
    /* joins the print does not show (sp_input): the earlier tensor of the last one read
     * as the newest tensor upsampled to it and concatenated (a U-Net decoder's skip;
     * id 0: none yet), and the upsampled copy the leaf being read made (elements per
     * sample, 0: none; the caller lists it as a pool row before the leaf) */
    struct mt_shape skip;
    uint64_t upsampled;
    int64_t pad[4];  /* a printed 2-D pad (left, right, top, bottom) that the next */
    int pad_pending; /* convolution reads through, unless it pads 'same' itself */
    int token_mix; /* a linear layer ran over the positions (MLP-Mixer): sp.grid set so */
    int conv_not_patch; /* a convolution that does not cut the image into patches (kernel
                           = stride, no padding) ran: no vision transformer */
    int grid; /* windowed attention over a grid of patches, merged between stages (Swin:
                 a class named ...PatchMerging): linear layers run per position, and
                 attention within EST_WINDOW x EST_WINDOW windows (grid_attention) */
    struct lines ahead; /* the print after the leaf being read (later_sibling_makes) */
    unsigned leaf_qkv;  /* the attention roles its name gives that leaf (qkv_role) */
};

/* The i-th newest tensor, 1 <= i <= sp->n. */
static struct mt_shape *sp_nth(struct mt_space *sp, unsigned i)
{
    return &sp->s[(sp->head + MT_SHAPES - i) % MT_SHAPES];
}

/* Whether a tensor of c channels is on the stack (any size): what a reader of c channels
 * may read, before it is taken for one the print does not show. */
static int sp_has_width(struct mt_space *sp, uint64_t c)
{
    for (unsigned i = 1; i <= sp->n; i++)
        if (sp_nth(sp, i)->c == c)
            return 1;
    return 0;
}

/* The newest tensor (with pending = 1 also a pending join), or NULL. */
static struct mt_shape *sp_top(struct mt_space *sp, int pending)
{
    for (unsigned i = 1; i <= sp->n; i++)
        if (pending || !sp_nth(sp, i)->pending)
            return sp_nth(sp, i);
    return NULL;
}

static struct mt_shape *sp_newest(struct mt_space *sp)
{
    return sp_top(sp, 0);
}

static struct mt_shape *sp_push(struct mt_space *sp, uint64_t c, uint64_t h, uint64_t w,
                                int concat)
{
    struct mt_shape *t = &sp->s[sp->head];
    sp->head = (sp->head + 1) % MT_SHAPES;
    if (sp->n < MT_SHAPES)
        sp->n++;
    t->c = c;
    t->h = h;
    t->w = w;
    t->id = ++sp->next_id;
    t->concat = (uint8_t)concat;
    t->pending = 0;
    t->pooled = 0;
    return t;
}

/* c x h x w within EST_MAX_ELEMS, else 0. */
static uint64_t sp_elems(uint64_t c, uint64_t h, uint64_t w)
{
    if (!c || !h || !w || h > EST_MAX_ELEMS / w || c > EST_MAX_ELEMS / (h * w))
        return 0;
    return c * h * w;
}

/* Output length of a convolution or pooling window over n: -1 when it does not fit. */
static int64_t window_out(int64_t n, int64_t k, int64_t s, int64_t p, int64_t d, int ceil_mode)
{
    int64_t span = n + 2 * p - d * (k - 1) - 1;
    if (k < 1 || s < 1 || d < 1 || (ceil_mode ? span + s - 1 : span) < 0)
        return -1;
    int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1; /* both >= 0: floors */
    if (ceil_mode && (o - 1) * s >= n + p) /* the last window must start inside */
        o--;
    return o;
}

/* `key=` dimensions for a 2-D window: one value stands for both, two are (h, w);
 * absent: def. 0, or -1 when malformed or not 2-D. */
static int dims2(const char *a, size_t n, const char *key, int64_t def, int64_t v[2])
{
    int64_t t[3];
    int k = arg_dims(a, n, key, t, 3);
    if (k < 0 || k > 2)
        return -1;
    v[0] = k ? t[0] : def;
    v[1] = k == 2 ? t[1] : v[0];
    return v[0] > MT_MAX_WINDOW || v[1] > MT_MAX_WINDOW ? -1 : 0;
}

#define MT_KIDS 8u

/* Why a 1-D or 3-D convolution of a module tree is refused (two places say it). */
#define MT_CONV_NOT_2D                                                                     \
    "only 2-D convolutions are sized from --image-size; a 1-D or 3-D one (an audio front " \
    "end, as Whisper's or wav2vec2's, over mel frames or samples; video) needs a "        \
    "torchinfo table of the model run on its inputs (torchinfo.summary(model, "           \
    "input_data=...))"

/* Whether s[0..n) names a position encoding: rotary, RoPE, position(al), pos_/_pos,
 * ALiBi (any case). */
static int position_word(const char *s, size_t n)
{
    static const char *const w[] = {"rotary", "rope", "position", "pos_", "_pos", "alibi"};
    char low[96];
    size_t k = n < sizeof low ? n : sizeof low;
    for (size_t i = 0; i < k; i++)
        low[i] = (char)tolower((unsigned char)s[i]);
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        if (find(low, k, w[i]))
            return 1;
    return 0;
}

/* Whether m has attention rows from row `from` on. */
static int attn_rows_since(const struct est_model *m, size_t from)
{
    for (size_t i = from; i < m->n; i++)
        if (m->layers[i].kind == EST_K_ATTN)
            return 1;
    return 0;
}

struct mt_frame {
    uint32_t mult;       /* repeats of this block (product with parents) */
    int attention;       /* class name says attention */
    int scores_inside;   /* an inner block already added attention scores */
    int sdpa;            /* fused attention: no materialised probabilities */
    int in_attention;    /* this block or one around it is attention */
    int mha;             /* torch.nn.MultiheadAttention: its input projection is a bare
                            parameter the print does not show */
    int mha_heads;       /* torch.nn.MultiheadAttention: nor are its heads */
    int ffn_act;         /* torch.nn.TransformerEncoderLayer / TransformerDecoderLayer: its
                            activation is a function unless a module was passed */
    uint64_t width;      /* largest linear in_features seen inside */
    size_t line;
    size_t first;        /* the model's layer count when the block opened */
    /* Its rows [first, attn_to) were read for attention rows (frame_attn_rows), and
     * those of [first, scores_to) carry EST_LF_SCORES where they are attention: its
     * leaves only add rows at the end, and a child's close changes only the child's own
     * rows, which come after both, so no row is read twice (0: none read yet) */
    size_t attn_to, scores_to;
    int attn_seen; /* [first, attn_to) holds an attention row */
    /* convolutional trees (mt_space) */
    struct mt_shape x;   /* the tensor the block reads: the newest when it opened, a
                            pending join included (its readers ask for its channels) */
    struct mt_shape xv;  /* the newest tensor but pending joins: what a block that keeps
                            its input's shape (squeeze-excitation) gives back */
    int has_x;
    unsigned child;        /* direct children so far */
    unsigned branch_child; /* the child holding the newest branch */
    unsigned nbranch;      /* children that read x */
    struct mt_shape bfirst;  /* the first finished branch's output */
    uint64_t bsum;           /* channels of the finished branches' outputs */
    int bsame, bhw_same;     /* they all agree with bfirst: in shape, in h x w */
    int has_conv;            /* a direct child is a convolution */
    unsigned nact;           /* direct children that are activations */
    uint8_t act_kind, act_flags; /* the last of them */
    size_t pending;          /* a direct-child norm no activation followed yet */
    size_t bare[8];          /* direct-child norms no activation followed */
    unsigned nbare;
    uint64_t split_c;        /* channels of x its direct children read as slices
                                (torch.split: timm's MixedConv2d), numbered blocks */
    uint32_t starts[4];      /* the newest tensor as each of the last direct children
                                began (distinct ids, a ring): where a branch may fork */
    unsigned nstarts;
    int numbered;            /* children named by index: a Sequential calls each once */
    size_t dlin[2], dact;    /* rows of its first two linear and last activation leaves */
    unsigned ndlin, ndact;   /* (sequence trees, a grid's) */
    size_t after_child;      /* the layer count when a child block last closed */
    int first_leaf_done, se_pool, gate, permute;
    int grn; /* a global response norm inside: ConvNeXt V2, whose blocks hold no layer scale */
    int x_add; /* its input is a join of branches its first branch read as their sum (xv) */
    int dilated; /* a convolution inside has a dilation above 1 */
    uint64_t pool_cin, pool_cout; /* a strided convolution child of it: its channels in and
                                     out (PiT's Pooling, whose linear child of the same
                                     channels projects the class token) */
    unsigned ups_child; /* the direct child that held or was the last upsampling */
    int cl_rows; /* a linear layer of it ran per position before a wider convolution of it
                    (rest_convolves): its later linear layers do too */
    unsigned qkv; /* the query (1), key (2) and value (4) projections among its linear
                     children, by their names (qkv_role) */
    struct mt_shape cat; /* a patch merging's joined neighbours, pushed as it opened */
    int merging; /* a grid's patch merging (sp.grid): its input's 2 x 2 neighbours joined,
                    a tensor of 4C at half the height and width, pushed as it opened */
    int posbias; /* a network inside windowed attention that computes its position bias
                    from coordinates (Swin V2's cpb_mlp): parameters, no tensor */
    int zero_drop; /* (attention) a dropout at rate 0 is printed inside */
    int cosine;  /* attention holding such a network: Swin V2's cosine attention, with a
                    logit scale (a parameter a head) instead of a bias table */
    int positions; /* attention over the positions of a convolutional tensor (not Swin's
                      grid) opened in it or is it: its linear layers run per position */
    uint64_t pos_min_hw; /* such an attention block: the fewest positions a linear layer of
                            it read (keys pooled or reduced; 0: none yet) */
    int64_t sr;          /* such an attention block whose keys and values read its input
                            reduced by a convolution of this stride (first_leaf_reads) */
    int sr_keys;         /* and a linear layer of it named as their projection read so */
    struct mt_shape sub; /* such an attention block whose queries a subsampling inside took
                            every second position of (LeViT's): their positions (c 0: none) */
    int partitioned;     /* such an attention block inside a block whose class says Partition
                            (MaxViT's window and grid attention), or that says LocallyGrouped
                            or WindowAttention itself: within EST_WINDOW^2 positions */
    int unfolded;    /* such an attention block inside a MobileViT block (mobilevit_block):
                        over the tensor's MT_UNFOLD x MT_UNFOLD patches */
    int channels;    /* such an attention block over channels, not positions (DaViT's
                        ChannelAttention, XCiT's XCA): heads x (C/heads)^2 probabilities a
                        sample */
    int l2qk;        /* ... whose queries and keys are L2-normalised first (XCA) */
    int global_proj; /* a linear child named query_global, key_global or value_global: an
                        attention block over a sliding window (EST_SLIDE_KEYS) */
    int strided;      /* a strided convolution inside */
    uint32_t pooled_x; /* the id of a direct child pooling's output of x (0: none) */
    int ups;          /* an upsampling inside (Upsample, a transposed convolution) */
    uint64_t entries; /* direct children, repeats counted */
    unsigned leaf_kids; /* direct children that are leaves */
    /* its last direct child, if a ModuleList of blocks that closed, until the next child
     * closes or a leaf begins (read as the next list closes: a list of downsamplings,
     * then as many stages?): its entries (0: none), a strided convolution inside, its
     * line, the channels its first entry made */
    uint64_t list_n;
    int list_strided;
    size_t list_line;
    uint64_t list_c0;
    uint64_t c0;              /* as a list: the channels its first entry made */
    uint64_t first_cin;       /* the input channels of its first convolution */
    int se_class; /* a squeeze-excitation class (SqueezeExcite, SEModule): its squeeze may
                     be a mean in forward, not a printed pool */
    uint64_t squeeze; /* squeeze-excitation: its first convolution's output */
    int split_attn;   /* a split-attention class (timm's SplitAttn, ResNeSt's SplAtConv2d):
                         its 1x1 convolution on 1/radix of the newest tensor's channels
                         reads the radix groups' sum pooled to 1x1 (forward's x.sum(1),
                         mean((2, 3))), and its result is that sum's size */
    struct mt_shape radix_sum;
    size_t gate_row;  /* and its gate's row */
    /* PEFT (enum mt_peft): what this block's leaves are to a LoRA wrapper or a
     * modules_to_save wrapper; a lora.* block's base row and adapter so far */
    uint8_t peft, lora_drop;
    uint8_t unit, in_unit, had_units; /* a layer of a ModuleList (gradient checkpointing's
                                         unit), inside one, a list that had some */
    size_t unit_row;
    size_t lora_row;
    uint64_t lora_params, lora_rank;
    size_t kid[MT_KIDS];      /* the row and line where each of its first direct children */
    size_t kid_line[MT_KIDS]; /* began (sequence trees: head_last) */
    uint64_t tab_rows;        /* its Embedding table with the most rows (the first of */
    size_t tab_line;          /* equals) and its line (head_last) */
    const char *cls, *name;   /* its class and name as printed (name NULL: the root) */
    size_t cls_n, name_n;
    size_t own_line;          /* the line of its own arguments (own_args), 0: none */
    /* Mixture-of-experts blocks (moe_close). As a ModuleList or ModuleDict: its direct
     * children, the entries (moe_child_closed). As a block around one: its lists of
     * identical entries, its router candidates and a gate printed without sizes. */
    uint32_t rep;             /* its own repeat count (`N x Block(`), 1 when none */
    unsigned nblk, nleaf;     /* direct child blocks and leaves so far */
    uint64_t ent_e;           /* entries, repeats counted */
    size_t ent_row, ent_rows; /* the first entry's first row and its rows */
    int ent_same;             /* every entry has the first's class and rows */
    const char *ent_cls;
    size_t ent_cls_n;
    unsigned nxl;             /* direct children that are lists of identical entries */
    size_t xl_row0, xl_row1;  /* the first such list's rows, */
    uint64_t xl_e;            /* its entries (repeats counted) */
    unsigned xl_nent;         /* and entries as printed (1: one `E x Expert(` repeat) */
    size_t rt_row[4];         /* router candidates: a direct linear leaf, or a direct */
    unsigned nrt;             /* child block whose only tensor is one linear row */
    size_t ug_row, ug_line;   /* a direct leaf named gate or router that prints no size
                                 (SIZE_MAX: none) */
};

/* Whether block f's rows, [f->first, m->n), hold an attention row: attn_rows_since, but
 * reading each row once however many of f's leaves ask (a print of 20000 tables in one
 * block asked of every earlier row for each). */
static int frame_attn_rows(const struct est_model *m, struct mt_frame *f)
{
    if (f->attn_to < f->first || f->attn_to > m->n) { /* none read yet */
        f->attn_to = f->first;
        f->attn_seen = 0;
    }
    for (; !f->attn_seen && f->attn_to < m->n; f->attn_to++)
        f->attn_seen = m->layers[f->attn_to].kind == EST_K_ATTN;
    return f->attn_seen;
}

/* Parts of a PEFT model's print (peft >= 0.7): `lora.Linear(` (also lora.Linear4bit,
 * lora.Linear8bitLt) wraps the frozen `base_layer` and the adapter's `lora_dropout`,
 * `lora_A` and `lora_B` ModuleDicts; `ModulesToSaveWrapper(` holds a frozen
 * `original_module` and the trained copies in `modules_to_save`. */
enum mt_peft {
    MT_P_NONE = 0,
    MT_P_LORA,   /* the lora.* block itself: its direct leaves */
    MT_P_BASE,   /* its base_layer */
    MT_P_A,      /* lora_A: r x in */
    MT_P_B,      /* lora_B: out x r */
    MT_P_DROP,   /* lora_dropout */
    MT_P_SKIP,   /* lora_embedding_A/B, lora_magnitude_vector (DoRA): no tensors shown */
    MT_P_MTS,    /* the ModulesToSaveWrapper block itself */
    MT_P_ORIG,   /* original_module: frozen, never run */
    MT_P_SAVE,   /* modules_to_save: trained */
};

static int name_is(const char *s, size_t n, const char *z)
{
    return strlen(z) == n && memcmp(s, z, n) == 0;
}

/* A 1-D convolution that keeps a sequence's length: PyTorch's Conv1d at stride 1, padded
 * by its dilation times (k - 1) / 2 (k odd) or 'same'. Its kernel size k, else 0. */
static int64_t seq_conv1d(const char *c, size_t cls_n, const char *a, size_t n)
{
    int64_t ks[3], st[3], pad[3], dil[3];
    if (!name_is(c, cls_n, "Conv1d") || arg_dims(a, n, "kernel_size=", ks, 3) != 1)
        return 0;
    int ns = arg_dims(a, n, "stride=", st, 3), nd = arg_dims(a, n, "dilation=", dil, 3);
    int same = find(a, n, "padding=same") != NULL;
    int np = same ? 0 : arg_dims(a, n, "padding=", pad, 3);
    int64_t d = nd == 1 ? dil[0] : 1;
    if (ns < 0 || ns > 1 || (ns && st[0] != 1) || nd < 0 || nd > 1 || np < 0 || np > 1 ||
        ks[0] < 1 || ks[0] > (1 << 16) || d < 1 || d > (1 << 16) ||
        (!same && (ks[0] % 2 == 0 || (np ? pad[0] : 0) != d * (ks[0] - 1) / 2)))
        return 0;
    return ks[0];
}

/* nn.Unfold at stride 1 padded to keep the size, kernel_size=[k, 1] (or [1, k], or k by
 * k): the k (k^2) positions around each, k (k^2) times its input's values. That count,
 * else 0. */
static int64_t unfold_same(const char *a, size_t n)
{
    int64_t ks[3], st[3], pad[3], dil[3];
    int nk = arg_dims(a, n, "kernel_size=", ks, 3), ns = arg_dims(a, n, "stride=", st, 3);
    int np = arg_dims(a, n, "padding=", pad, 3), nd = arg_dims(a, n, "dilation=", dil, 3);
    if (nk < 1 || nk > 2 || ns < 0 || ns > 2 || np < 0 || np > 2 || nd < 0 || nd > 2)
        return 0;
    int64_t prod = 1;
    for (int i = 0; i < 2; i++) {
        int64_t k = ks[nk == 1 ? 0 : i], s = ns ? st[ns == 1 ? 0 : i] : 1;
        int64_t p = np ? pad[np == 1 ? 0 : i] : 0, d = nd ? dil[nd == 1 ? 0 : i] : 1;
        if (k < 1 || k > (1 << 10) || k % 2 == 0 || s != 1 || d < 1 || d > (1 << 10) ||
            p != d * (k - 1) / 2)
            return 0;
        prod *= k;
    }
    return prod;
}

/* The attention roles a linear layer named nm plays (1 query, 2 key, 4 value): `qkv`,
 * `qk`, `q`, `k`, `v`, `query`, `key`, `value`, `q_proj`, `k_proj`, `v_proj`, `kv` (PVT's
 * and Twins' keys and values). A block holding all three is attention whatever its
 * class's name (ConViT's GPSA and MHSA). */
static unsigned qkv_role(const char *nm, size_t nn)
{
    static const struct {
        const char *name;
        unsigned role;
    } roles[] = {{"qkv", 7},    {"qk", 3},     {"q", 1},      {"k", 2},
                 {"v", 4},      {"query", 1},  {"key", 2},    {"value", 4},
                 {"q_proj", 1}, {"k_proj", 2}, {"v_proj", 4}, {"kv", 6}};
    for (size_t i = 0; nm && i < sizeof roles / sizeof roles[0]; i++)
        if (name_is(nm, nn, roles[i].name))
            return roles[i].role;
    return 0;
}

/* s[0..n) ends with z. */
static int name_ends(const char *s, size_t n, const char *z)
{
    size_t k = strlen(z);
    return n >= k && memcmp(s + n - k, z, k) == 0;
}

/* A module of class [c, c + n) that upsamples (Upsample, diffusers' Upsample2D, a
 * transposed convolution) marks st[0..depth], the blocks it is in. */
static void mark_upsampling(struct mt_frame *st, int depth, const char *c, size_t n)
{
    if (find(c, n, "Upsampl") || find(c, n, "Transpose"))
        for (int d = 0; d <= depth; d++) {
            st[d].ups = 1;
            st[d].ups_child = st[d].child; /* the direct child it is in, or is */
        }
}

/* A block named prompt_encoder of class [c, c + n) is PEFT's prompt learning: a
 * ModuleDict of one encoder per adapter (peft >= 0.3), or before that the encoder itself,
 * PrefixEncoder, PromptEmbedding, or a PromptEncoder whose first child is its `embedding`
 * (P-tuning's; SAM's PromptEncoder begins with pe_layer). *L: the print after its line. */
static int peft_prompt_encoder(const char *c, size_t n, const struct lines *L)
{
    if (name_is(c, n, "ModuleDict") || name_is(c, n, "PrefixEncoder") ||
        name_is(c, n, "PromptEmbedding"))
        return 1;
    if (!name_is(c, n, "PromptEncoder"))
        return 0;
    struct lines la = *L;
    const char *s;
    size_t sn;
    do {
        if (lines_next(&la, &s, &sn, NULL) != 1)
            return 0;
        trim(&s, &sn);
    } while (sn == 0);
    return sn >= 12 && memcmp(s, "(embedding):", 12) == 0;
}

/* The PEFT role of a child named (nm) of a block in role `up`. */
static uint8_t peft_child(uint8_t up, const char *nm, size_t nn)
{
    switch (up) {
    case MT_P_LORA:
        if (name_is(nm, nn, "base_layer"))
            return MT_P_BASE;
        if (name_is(nm, nn, "lora_A"))
            return MT_P_A;
        if (name_is(nm, nn, "lora_B"))
            return MT_P_B;
        if (name_is(nm, nn, "lora_dropout"))
            return MT_P_DROP;
        return MT_P_SKIP;
    case MT_P_MTS:
        if (name_is(nm, nn, "original_module"))
            return MT_P_ORIG;
        if (name_is(nm, nn, "modules_to_save"))
            return MT_P_SAVE;
        return MT_P_NONE;
    case MT_P_NONE:
    case MT_P_BASE:
        return MT_P_NONE;
    default:
        return up; /* inside an adapter part or a wrapper's copy */
    }
}

/* A finished branch of block f produced t. */
static void branch_end(struct mt_frame *f, const struct mt_shape *t)
{
    if (!t)
        return;
    if (f->bsum == 0) {
        f->bfirst = *t;
        f->bsame = f->bhw_same = 1;
        f->bsum = t->c;
        return;
    }
    f->bsum += t->c;
    f->bsame &= t->c == f->bfirst.c && t->h == f->bfirst.h && t->w == f->bfirst.w;
    f->bhw_same &= t->h == f->bfirst.h && t->w == f->bfirst.w;
}

/* A direct child of f follows its pending norm: unless it is an activation (or a linear
 * layer: a pre-norm, Hugging Face's ConvNextLayer's layernorm before pwconv1), the norm
 * is bare (spatial_close may give it the block's activation). */
static void norm_settle(struct mt_frame *f, int settled)
{
    if (f->pending != SIZE_MAX && !settled && f->nbare < 8)
        f->bare[f->nbare++] = f->pending;
    f->pending = SIZE_MAX;
}

/* A direct child of f begins: remember the newest tensor, where a branch may fork. */
static void child_start(struct mt_frame *f, struct mt_space *sp)
{
    const struct mt_shape *nw = sp_newest(sp);
    if (!nw || (f->nstarts && f->starts[(f->nstarts - 1) % 4] == nw->id))
        return;
    f->starts[f->nstarts++ % 4] = nw->id;
}

/* The j-th newest (from 1) tensor id f remembered as its direct children began; 0
 * (no tensor's id) past the last of them. */
static uint32_t frame_start(const struct mt_frame *f, unsigned j)
{
    return j <= f->nstarts && j <= 4 ? f->starts[(f->nstarts - j) % 4] : 0;
}

/* A direct child of f begins at row `row`, line `line` (recorded for the first MT_KIDS;
 * call after f->child counted it). */
static void kid_start(struct mt_frame *f, size_t row, size_t line)
{
    if (f->child <= MT_KIDS) {
        f->kid[f->child - 1] = row;
        f->kid_line[f->child - 1] = line;
    }
}

/* Block f's input as a value: a pending join read as the add it is (f->xv), else f->x. */
static const struct mt_shape *frame_input(const struct mt_frame *f)
{
    return f->x.pending ? &f->xv : &f->x;
}

static uint32_t input_value_id(const struct mt_frame *f)
{
    return frame_input(f)->id;
}

/* The tensor with serial id in the ring, or NULL once it has left it. */
static struct mt_shape *sp_by_id(struct mt_space *sp, uint32_t id)
{
    for (unsigned i = 1; i <= sp->n; i++)
        if (sp_nth(sp, i)->id == id)
            return sp_nth(sp, i);
    return NULL;
}

/* t is larger than u: at least as tall and as wide, and not of the same size. */
static int sp_larger(const struct mt_shape *t, const struct mt_shape *u)
{
    return t->h >= u->h && t->w >= u->w && (t->h > u->h || t->w > u->w);
}

/* An earlier tensor that, concatenated with the newest tensor nw, gives the c channels a
 * leaf reads (c - nw->c of them), or NULL. One of nw's size (a concatenation at one size:
 * DenseNet's growing input), else one larger than nw, to whose size nw was upsampled in
 * Python before the concatenation (F.interpolate: a U-Net decoder's skip). After such a
 * join, one older and larger than its skip comes first: a U-Net's decoder takes its
 * encoder's outputs back in reverse order, each larger than the one before (a ResNet
 * encoder's 64-channel stem output and first stage are both skips, of two sizes, and the
 * decoder makes 64-channel tensors of its own). Of equals, the newest. Pending joins and
 * pooled vectors are no candidates. */
static struct mt_shape *sp_join_part(struct mt_space *sp, const struct mt_shape *nw, uint64_t c)
{
    if (c <= nw->c)
        return NULL;
    uint64_t need = c - nw->c;
    struct mt_shape *same = NULL, *larger = NULL, *after_skip = NULL;
    for (unsigned i = 1; i <= sp->n; i++) {
        struct mt_shape *s = sp_nth(sp, i);
        if (s->c != need || s->id == nw->id || s->pending || s->pooled)
            continue;
        if (!same && s->h == nw->h && s->w == nw->w)
            same = s;
        if (!larger && sp_larger(s, nw))
            larger = s;
        if (!after_skip && sp->skip.id && s->id < sp->skip.id && sp_larger(s, &sp->skip) &&
            sp_larger(s, nw))
            after_skip = s;
    }
    return after_skip ? after_skip : same ? same : larger;
}

/* nw is a pooling of the tensor before it (as many channels, smaller), which has part's
 * size: the leaf reading nw's and part's channels reads their join pooled, a pool that
 * read one of the join's branches (SqueezeNet's MaxPool2d after a Fire block, whose two
 * expand branches are joined in Python), not nw upsampled to part's size. */
static int sp_join_pooled(struct mt_space *sp, const struct mt_shape *nw,
                          const struct mt_shape *part)
{
    for (unsigned i = 1; i <= sp->n; i++) {
        const struct mt_shape *s = sp_nth(sp, i);
        if (s->id < nw->id && !s->pending)
            return s->c == nw->c && sp_larger(s, nw) && s->h == part->h && s->w == part->w;
    }
    return 0;
}

/* A line of the print after the leaf being read (sp->ahead), split: a block's closing
 * ')', or a module with its "(name): " cut off, its class up to '(' and its arguments
 * after it (open: nothing after the '(', a block). Blank lines are passed over. */
struct mt_peek {
    const char *s, *args; /* the line, trimmed (after its name); after its '(' */
    size_t n, cls_n, args_n;
    int close, named, open, has_paren;
};

/* The next line of *L into *p; 0 at the end of the print. */
/* Reads a trimmed line [s, s + n), n > 0, into *p. */
static void mt_peek_line(const char *s, size_t n, struct mt_peek *p)
{
    memset(p, 0, sizeof *p);
    p->close = s[0] == ')';
    const char *rp = s[0] == '(' ? memchr(s, ')', n) : NULL;
    if (rp && (size_t)(rp - s) + 2 < n && rp[1] == ':') {
        size_t cut = (size_t)(rp - s) + 2;
        s += cut;
        n -= cut;
        trim(&s, &n);
        p->named = 1;
    }
    p->s = s;
    p->n = n;
    const char *op = memchr(s, '(', n);
    if (op) {
        p->has_paren = 1;
        p->cls_n = (size_t)(op - s);
        p->args = op + 1;
        p->args_n = n - p->cls_n - 1;
        p->open = p->args_n == 0;
    }
}

static int mt_peek_next(struct lines *L, struct mt_peek *p)
{
    const char *s;
    size_t n;
    do {
        if (lines_next(L, &s, &n, NULL) != 1)
            return 0;
        trim(&s, &n);
    } while (n == 0);
    mt_peek_line(s, n, p);
    return 1;
}

/* Whether a later child of block st[dc] (children named, not numbered: printed in
 * definition order, not call order), after the block st[dc + 1] being read, holds a
 * convolution with `need` output channels: the part of a join the leaf at st[depth]
 * reads that no tensor has yet (YOLOv8's C2f lists cv1, cv2, m and runs cv1, m, then cv2
 * on their concatenation). Reads at most 4096 lines ahead (sp->ahead: the print after
 * the leaf). */
static int later_sibling_makes(const struct mt_space *sp, int dc, int depth, uint64_t need)
{
    struct lines L = sp->ahead;
    struct mt_peek p;
    int nest = depth - dc; /* blocks open below st[dc] */
    int past = nest == 0;  /* past the block being read: in a later child */
    int conv_block = 0;    /* the line before opened a convolution (its arguments next) */
    for (unsigned k = 0; k < 4096 && mt_peek_next(&L, &p); k++) {
        int was_conv = conv_block;
        conv_block = 0;
        if (p.close) {
            if (--nest < 0)
                return 0; /* st[dc] closed */
            past |= nest == 0;
            continue;
        }
        int64_t pos[2];
        if (!p.named && was_conv && isdigit((unsigned char)p.s[0])) {
            /* the arguments of the convolution block opened on the line before */
            if (past && arg_positional(p.s, p.n, pos, 2) == 2 && (uint64_t)pos[1] == need)
                return 1;
            continue;
        }
        if (!p.has_paren)
            continue;
        int conv = find(p.s, p.cls_n, "Conv") != NULL;
        if (p.open) { /* a block */
            nest++;
            conv_block = conv;
            continue;
        }
        if (past && conv && arg_positional(p.args, p.args_n, pos, 2) == 2 &&
            (uint64_t)pos[1] == need)
            return 1;
    }
    return 0;
}

/* The side of the patches a MobileViT block unfolds its tensor into and its attention's
 * heads: 2 and 4 in every published MobileViT (timm's and transformers' defaults), which
 * the print does not show. */
#define MT_UNFOLD 2u
#define MT_UNFOLD_HEADS 4u

/* Whether class [c, c + n) is a MobileViT block, by its exact name (timm's MobileVitBlock,
 * transformers' MobileViTLayer; other blocks so named may attend globally): it unfolds its
 * tensor into patches and runs a transformer over them, for each pixel of a patch one
 * sequence of the (H/2)(W/2) patches. */
static int mobilevit_block(const char *c, size_t n)
{
    return name_is(c, n, "MobileVitBlock") || name_is(c, n, "MobileViTLayer");
}

/* Attention block f's projection read hw positions: keeps the fewest (mt_frame.pos_min_hw,
 * its keys'). */
static void fewest_positions(struct mt_frame *f, uint64_t hw)
{
    if (!f->pos_min_hw || hw < f->pos_min_hw)
        f->pos_min_hw = hw;
}

/* The innermost block at or around st[depth] whose class is attention; -1: none. */
static int attention_frame(const struct mt_frame *st, int depth)
{
    while (depth >= 0 && !st[depth].attention)
        depth--;
    return depth;
}

/* The stride of a convolution leaf p that reduces a c-channel tensor's positions for
 * keys and values (PVT's and SegFormer's spatial reduction: Conv2d(c, c), kernel =
 * stride > 1, no padding); 0 for any other. */
static int64_t reduction_stride(const struct mt_peek *p, uint64_t c)
{
    int64_t pos[2], ks[3];
    uint64_t patch;
    int nks;
    if (!name_is(p->s, p->cls_n, "Conv2d") || arg_positional(p->args, p->args_n, pos, 2) != 2 ||
        (uint64_t)pos[0] != c || (uint64_t)pos[1] != c ||
        patch_conv(p->args, p->args_n, c, &patch, ks, &nks) != 1 || nks != 2 || ks[0] != ks[1] ||
        ks[0] < 2)
        return 0;
    return ks[0];
}

/* The next line of the block that has just opened, read from *L, that has parentheses
 * (a leaf, or a block opening: the caller counts *nest up for one it enters) into *p: 1;
 * 0 once the block closes; -1 at the print's end or after 256 lines (*k, *nest from 0). */
static int block_next(struct lines *L, struct mt_peek *p, unsigned *k, unsigned *nest)
{
    while (*k < 256 && mt_peek_next(L, p)) {
        ++*k;
        if (p->close) {
            if ((*nest)-- == 0)
                return 0;
            continue;
        }
        if (p->has_paren)
            return 1;
    }
    return -1;
}

/* Whether the block that has just opened, read from L on (its children's leaves
 * included), first has a linear layer reading c features and holds no convolution:
 * attention projecting the newest tensor's channels per position, not a
 * squeeze-excitation's convolutions or pooling, but for one spatial reduction of its
 * keys and values after the first linear layer (reduction_stride: *sr its stride, else
 * 1). Reads at most 256 lines ahead. */
static int first_leaf_reads(struct lines L, uint64_t c, int64_t *sr)
{
    struct mt_peek p;
    int first = -1; /* the first leaf reads c: 1, 0; not seen yet: -1 */
    *sr = 1;
    unsigned k = 0, nest = 0;
    int r;
    while ((r = block_next(&L, &p, &k, &nest)) > 0) {
        if (find(p.s, p.cls_n, "Conv")) {
            if (p.open || *sr > 1 || first != 1 || (*sr = reduction_stride(&p, c)) < 2)
                return 0;
            continue;
        }
        if (p.open) {
            nest++;
            continue;
        }
        if (first < 0)
            first = arg_int(p.args, p.args_n, "in_features=") == (int64_t)c;
    }
    return r == 0 && first == 1;
}

/* Whether the block being read opens with one fused projection of its query, key and
 * value: its first leaf a linear layer from the c channels it reads to 3c, and no gate or
 * pooling in it (CBAM's and squeeze-excitation's "channel attention" pools the tensor and
 * gates its channels with a Sigmoid; VOLO's outlook attention pools). DaViT's
 * ChannelAttention, XCiT's XCA, PiT's attention on its patch grid. Reads at most 256
 * lines ahead. */
static int fused_qkv_first(struct lines L, uint64_t c)
{
    struct mt_peek p;
    int first = -1; /* the first leaf is such a linear layer: 1, 0; not seen yet: -1 */
    unsigned k = 0, nest = 0;
    int r;
    while ((r = block_next(&L, &p, &k, &nest)) > 0) {
        if (p.open) {
            nest++;
            continue;
        }
        if (find(p.s, p.cls_n, "Sigmoid") || find(p.s, p.cls_n, "Pool"))
            return 0;
        if (first < 0)
            first = find(p.s, p.cls_n, "Linear") &&
                    arg_int(p.args, p.args_n, "in_features=") == (int64_t)c &&
                    arg_int(p.args, p.args_n, "out_features=") == 3 * (int64_t)c;
    }
    return r == 0 && first == 1;
}

/* Whether the rest of the numbered block being read, after its first child (a
 * convolution reading c of its input's xc channels), is convolutions alone whose inputs
 * make up the other xc - c: the block splits its input by channels among them
 * (torch.split in forward: timm's MixedConv2d), it does not chain them. Reads at most
 * 256 lines ahead (sp->ahead). */
static int split_siblings(const struct mt_space *sp, uint64_t c, uint64_t xc)
{
    struct lines L = sp->ahead;
    struct mt_peek p;
    uint64_t sum = c;
    for (unsigned k = 0; k < 256 && mt_peek_next(&L, &p); k++) {
        if (p.close)
            return sum == xc && sum > c; /* the block closed */
        int64_t pos[2];
        if (!p.named || !p.has_paren || p.open || !find(p.s, p.cls_n, "Conv") ||
            arg_positional(p.args, p.args_n, pos, 2) != 2 || pos[0] <= 0)
            return 0; /* a block, or a leaf that is no convolution */
        sum += (uint64_t)pos[0];
        if (sum > xc)
            return 0;
    }
    return 0;
}

/* Whether a line of the rest of the leaf being read's block `levels` up (1: the block
 * just opened around it) matches: 1 at the first that does, 0 when the block closes
 * first, `unseen` when it does not close within `max` lines (sp->ahead). */
static int rest_has(const struct mt_space *sp, int levels, unsigned max,
                    int (*match)(const struct mt_peek *), int unseen)
{
    struct lines L = sp->ahead;
    struct mt_peek p;
    for (unsigned k = 0; k < max && mt_peek_next(&L, &p); k++) {
        if (p.close) {
            if (--levels == 0)
                return 0;
            continue;
        }
        levels += p.open;
        if (match(&p))
            return 1;
    }
    return unseen;
}

/* A strided convolution or a pooling. */
static int downsamples(const struct mt_peek *p)
{
    return find(p->s, p->n, "stride=(2") || find(p->s, p->n, "stride=2") ||
           (find(p->s, p->n, "Pool") && !find(p->s, p->n, "Adaptive"));
}

/* Whether the rest of the leaf being read's block `levels` up holds a strided
 * convolution or a pooling: a branch that reads a tensor larger than the flow's must
 * shrink it to be joined. Not seen to the end in 4096 lines: as if it did. */
static int rest_downsamples(const struct mt_space *sp, int levels)
{
    return rest_has(sp, levels, 4096, downsamples, 1);
}

/* A convolution leaf (not transposed) with a window wider than 1 x 1. */
static int wide_conv(const struct mt_peek *p)
{
    int64_t ks[2];
    return !p->open && p->has_paren && find(p->s, p->cls_n, "Conv") &&
           !find(p->s, p->cls_n, "Transpose") &&
           dims2(p->args, p->args_n, "kernel_size=", 1, ks) == 0 && (ks[0] > 1 || ks[1] > 1);
}

/* Whether the rest of the block around the leaf being read holds a convolution with a
 * window wider than 1 x 1 (a squeeze-excitation's are 1 x 1): a linear layer before it in
 * the block runs per position, on a tensor made channels-last in Python (timm's MambaOut:
 * fc1, then a depthwise 7 x 7 convolution on part of its output, then fc2), not after a
 * global pool; not in an attention block (PVT's spatial reduction, refused). Reads at
 * most 256 lines ahead. */
static int rest_convolves(const struct mt_space *sp)
{
    return rest_has(sp, 1, 256, wide_conv, 0);
}

/* The input width of the first convolution or linear layer printed after `levels` blocks
 * close around the leaf being read (1: the block just opened around it): what reads the
 * block's output. 0 when none is found in 4096 lines (sp->ahead). */
static uint64_t next_reader_width(const struct mt_space *sp, int levels)
{
    struct lines L = sp->ahead;
    struct mt_peek p;
    int conv_block = 0; /* the line before opened a convolution (its arguments next) */
    for (unsigned k = 0; k < 4096 && mt_peek_next(&L, &p); k++) {
        int was_conv = conv_block;
        conv_block = 0;
        if (p.close) {
            levels -= levels > 0;
            continue;
        }
        int64_t pos[1];
        if (!p.named && was_conv) /* the arguments of the convolution block before */
            return levels == 0 && arg_positional(p.s, p.n, pos, 1) == 1 && pos[0] > 0
                       ? (uint64_t)pos[0]
                       : 0;
        if (!p.has_paren)
            continue;
        if (p.open) {
            levels += levels > 0;
            conv_block = find(p.s, p.cls_n, "Conv") != NULL;
            continue;
        }
        if (levels > 0)
            continue;
        int64_t in_f = arg_int(p.args, p.args_n, "in_features=");
        if (in_f > 0)
            return (uint64_t)in_f;
        if (find(p.s, p.cls_n, "Conv") && arg_positional(p.args, p.args_n, pos, 1) == 1 &&
            pos[0] > 0)
            return (uint64_t)pos[0];
    }
    return 0;
}

/* What reads the output of the block `levels` up from the leaf being read takes more than
 * the c channels of the branch just finished: the block joins branches (a concatenation
 * in forward), as a block that runs its children in sequence does not. Unknown (no
 * reader found) counts as joined. */
static int joined_after(const struct mt_space *sp, int levels, uint64_t c)
{
    uint64_t w = next_reader_width(sp, levels);
    return w == 0 || w > c;
}

/* Block f's children ran on from its input x to the newest tensor, smaller than x or of
 * x's shape, before the child whose first leaf, a size-keeping one (same_size) reading c
 * channels, is read: no child since the last that read x did (a branch that reads x
 * again follows it: ShuffleNet's branch2, RegNet's f after proj), nor left a norm for a
 * shortcut's add (Xception's skip and skipbn before rep); a shortcut that reads x at its
 * size is strided (ResNet's downsample, GhostNet's shortcut). The leaf reads the newest
 * tensor (ResNeSt's conv2 block after conv1, bn1, act1), or half of it (x.split in forward:
 * CSPNet's blocks after conv_down and conv_exp), rather than x again. */
static int flow_moved_on(const struct mt_frame *f, const struct mt_shape *nw, uint64_t c)
{
    return nw && nw->id > f->x.id &&
           (sp_larger(&f->x, nw) || (nw->c == c && nw->h == f->x.h && nw->w == f->x.w)) &&
           f->child > f->branch_child + 1 && !f->nbare && f->pending == SIZE_MAX;
}

/* The newest tensor came from a convolution: the last row that makes a tensor of its own,
 * past norms, activations, dropouts and rows of no tensor, is one (not a pooling: DLA's
 * project reads its tree's pooled bottom). */
static int conv_made_newest(const struct est_model *m)
{
    for (size_t i = m->n; i-- > 0;) {
        uint8_t k = m->layers[i].kind;
        if (k != EST_K_NORM && k != EST_K_ACT && k != EST_K_DROPOUT && k != EST_K_OTHER)
            return k == EST_K_CONV;
    }
    return 0;
}

/* The blocks the leaf being read opens (st[..depth] with no rows yet) read t: their input. */
static void opened_read(const struct est_model *m, struct mt_frame *st, int depth,
                        const struct mt_shape *t)
{
    for (int d = depth; d >= 0 && st[d].first == m->n; d--)
        st[d].x = st[d].xv = *t;
}

/* The input of a convolution or norm with c channels (frames st[0..depth] open): a
 * slice of a numbered block's input when its direct children split it (split_siblings);
 * else the first with c channels of: the input of a block whose later child block this
 * leaf opens, when a branch read that input already and the flow has not moved on from
 * it (flow_moved_on, rest_downsamples; half the newest tensor when it has 2c); the
 * newest tensor (or a pending join above it: the flow); the input of an open block, innermost first (a branch or a shortcut); what was newest
 * as one of an open block's last direct children began (a fork inside the block:
 * SqueezeNet's expand3x3 reads the squeeze's output). Else a concatenation the print does not
 * show: of the newest tensor and an earlier one larger than it (sp_join_part), at the
 * earlier one's size, the newest upsampled to it first (its copy in sp->upsampled);
 * else at the newest spatial size (widening the newest tensor when it is itself a join
 * of branches; *unexplained set when no earlier tensor makes up the channels either).
 * That join is then the input of the blocks this leaf opens. No other
 * tensor is read: its channel count recurs by chance (DenseNet's
 * inputs grow past earlier layers' widths, ResNeXt's width equals its block's input).
 * same_size: the leaf keeps its input's height and width (a norm, a stride-1 convolution);
 * conv: it is a convolution, which alone reads a join through an upsampling.
 * NULL when no tensor exists yet. Counts what a new
 * concatenation materialises in m->concat. */
static struct mt_shape *sp_input(struct mt_space *sp, struct est_model *m,
                                 struct mt_frame *st, int depth, uint64_t c, int same_size,
                                 int conv, int *unexplained)
{
    *unexplained = 0;
    struct mt_shape *t = NULL, *nw = sp_newest(sp);
    int after_join = sp->n && sp_nth(sp, 1)->pending, chunk = 0;
    int half = nw && nw->c == 2 * c; /* the newest tensor is twice the read: x.chunk(2, 1) */
    /* A numbered block whose first direct child read a slice of its input reads the
     * rest the same way, in order: timm's MixedConv2d splits x by channels among its
     * convolutions (each a branch of x) and concatenates their outputs. */
    struct mt_frame *in_list = depth >= 0 && st[depth].numbered && st[depth].has_x ? &st[depth]
                                                                                 : NULL;
    if (in_list && in_list->split_c && in_list->split_c + c <= in_list->x.c &&
        (t = sp_by_id(sp, in_list->x.id)) != NULL) {
        in_list->split_c += c;
        return t;
    }
    if (in_list && in_list->child == 1 && nw && nw->id == in_list->x.id && c < nw->c &&
        split_siblings(sp, c, nw->c)) {
        in_list->split_c = c; /* the first slice */
        return nw;
    }
    /* A convolution in a block with named children that upsampled its input (the newest
     * tensor larger than the block's input, of fewer channels than the leaf reads), where
     * an earlier tensor of the newest one's size makes up the channels: a U-Net decoder's
     * join with its skip (torch.cat([skip, up(x)])), not the block's input, whose width
     * recurs (milesial's U-Net: Up's input is the 1024-channel bottleneck at 16x16, its
     * DoubleConv reads 512 upsampled and 512 of the skip at 32x32; read on the input, the
     * whole decoder had run at the bottleneck's size). The upsampling is the direct child
     * before the one this leaf opens; not in a numbered list (HRNet's fuse layers, which
     * no one calls as a block). */
    int to_join = 0;
    for (int d = depth; d >= 0 && conv && nw && nw->c < c && !to_join; d--) {
        const struct mt_shape *p;
        to_join = st[d].ups && st[d].ups_child + 1 == st[d].child && !st[d].numbered &&
                  st[d].has_x && st[d].x.c == c &&
                  sp_larger(nw, &st[d].x) && (p = sp_join_part(sp, nw, c)) != NULL &&
                  p->h == nw->h && p->w == nw->w;
    }
    for (int d = depth; d > 0 && !t && !after_join && !to_join && st[d].first == m->n; d--) {
        /* the first leaf of a later child block of a block with named children whose
         * input a branch already read: another branch (ShuffleNet's branch2 after
         * branch1, whose output has the input's channels; RegNet's f after proj).
         * Not right after a join: a finished residual block is the flow (RegNet's
         * trunk, whose stages read its input once). A squeeze-excitation block reads the
         * flow it scales, whatever its channels (timm's depthwise-separable block). */
        const struct mt_frame *f = &st[d - 1];
        /* its input, or the sum its input is when that was a join of branches read as an
         * add (FastViT's MobileOneBlock after another: conv_kxk(x) + conv_scale(x)) */
        const struct mt_shape *bx = f->x.c == c                ? &f->x
                                    : f->x_add && f->xv.c == c ? &f->xv
                                                               : NULL;
        if (!f->numbered && f->has_x && f->nbranch && f->branch_child != f->child && bx &&
            !st[d].se_class) {
            if (same_size && flow_moved_on(f, nw, c)) {
                chunk = half;
                break;
            }
            /* a branch from x larger than the flow that never shrinks could not be
             * joined: the flow that kept x's width (CSPResNet's conv_exp, a ConvNormAct
             * after a conv_down of as many channels; HGNet's stage blocks after its
             * depthwise strided downsample, a block deeper) */
            if (same_size && nw && nw->c == c && sp_larger(bx, nw) &&
                !rest_downsamples(sp, depth - d + 1))
                break;
            t = sp_by_id(sp, bx->id);
        }
        /* No branch read x yet, but a child made the newest tensor from x, smaller and of
         * x's channels (a strided 1x1 projection), and the rest of the block shrinks
         * again: reading the newest would leave its branches at two sizes, which no join
         * takes, so the leaf reads x, a second branch (DPN's c1x1_a after c1x1_w_s2) */
        if (!t && !f->numbered && f->has_x && !f->nbranch && f->x.c == c && nw &&
            nw->c == c && nw->id > f->x.id && sp_larger(&f->x, nw) && conv_made_newest(m) &&
            rest_downsamples(sp, depth - d + 2))
            t = sp_by_id(sp, f->x.id);
        /* A strided convolution after an earlier direct child pooled x, the pooled x
         * newest: a second reduction of x beside the pooling (timm's Inception-v4 Mixed3a
         * joins maxpool(x) and conv(x)), not of its result. A stride-1 one reads the
         * pooled tensor (DLA's project). */
        if (!t && conv && !same_size && !f->numbered && f->has_x && f->pooled_x && nw &&
            f->pooled_x == nw->id && nw->c == c && joined_after(sp, depth - d + 2, nw->c))
            t = sp_by_id(sp, input_value_id(f));
    }
    for (unsigned i = 1; i <= sp->n && !t && !chunk; i++) {
        struct mt_shape *s = sp_nth(sp, i);
        if (s->c == c)
            t = s;
        else if (!s->pending)
            break;
    }
    for (int d = depth; d >= 0 && !t && !chunk && !to_join; d--) {
        if (!st[d].has_x)
            continue;
        if (st[d].x.c == c)
            t = sp_by_id(sp, st[d].x.id);
        else if (st[d].x.pending && st[d].xv.c == c)
            t = sp_by_id(sp, st[d].xv.id); /* the join read as an add */
    }
    /* A block that made the newest tensor itself, of twice the channels, reads their
     * half (x.chunk(2, 1), which the print does not show: YOLOv8's C2f) at its size, not
     * an older, larger tensor from before the block began whose width recurs (YOLOv8's
     * stem); a tensor the block did not make may be handed to it (an FPN's features). */
    for (int d = depth; d >= 0 && !t && !chunk && !to_join; d--) {
        uint32_t id;
        for (unsigned j = 1; !t && (id = frame_start(&st[d], j)) != 0; j++) {
            struct mt_shape *s = sp_by_id(sp, id);
            if (!s || s->c != c)
                continue;
            if (half && sp_larger(s, nw) && d < depth && st[d + 1].has_x &&
                nw->id > st[d + 1].x.id)
                chunk = 1;
            else
                t = s;
        }
    }
    if (!t && chunk) {
        t = sp_push(sp, c, nw->h, nw->w, 0);
        opened_read(m, st, depth, t);
        return t;
    }
    if (t && t->pending) {
        t->pending = 0;
        m->concat += sp_elems(t->c, t->h, t->w);
    }
    if (t || !nw)
        return t;
    const struct mt_shape *part = sp_join_part(sp, nw, c);
    int widen = nw->concat && nw->c < c; /* a join of branches, one not shown (Inception's
                                            pooling branch): at its size */
    /* A decoder convolves the join of its upsampled input and its skip; a norm that reads
     * a join is a pre-activation block's (DenseNet's, DPN's dense path), at one size: DPN
     * had been read as upsampling its 14x14 flow to a 56x56 tensor of the same width
     * three stages before, every later block at 56x56 */
    if (part && sp_larger(part, nw) &&
        (widen || !conv || nw->pooled || sp_join_pooled(sp, nw, part)))
        part = nw; /* explained: at the newest size, as below */
    if (part && sp_larger(part, nw)) {
        /* the blocks this leaf opens, st[db..depth], in st[db - 1] */
        int db = depth + 1;
        while (db > 0 && st[db - 1].first == m->n)
            db--;
        if (db > 0 && !st[db - 1].numbered &&
            later_sibling_makes(sp, db - 1, depth, c - nw->c))
            part = nw; /* joined with a later child's output, at one size */
    }
    if (part && sp_larger(part, nw)) {
        /* x = F.interpolate(x, size=skip.shape[2:]); torch.cat([x, skip], 1) */
        uint64_t e = sp_elems(c, part->h, part->w), up = sp_elems(nw->c, part->h, part->w);
        if (!e || !up)
            return NULL;
        sp->skip = *part;
        sp->upsampled = up;
        m->concat += e;
        t = sp_push(sp, c, sp->skip.h, sp->skip.w, 1);
        opened_read(m, st, depth, t);
        return t;
    }
    uint64_t e = sp_elems(c, nw->h, nw->w);
    if (!e)
        return NULL;
    *unexplained = !part && !widen;
    if (widen) {
        m->concat += sp_elems(c - nw->c, nw->h, nw->w);
        nw->c = c;
        t = nw;
    } else {
        m->concat += e;
        t = sp_push(sp, c, nw->h, nw->w, 1);
    }
    /* what the blocks this leaf opens (no rows yet) read: their input */
    opened_read(m, st, depth, t);
    for (int d = depth; d >= 0; d--)
        if (st[d].x.id == t->id)
            st[d].x.c = t->c;
    return t;
}

/* A convolution reads *in, a pooled vector of as many channels as the tensor that the
 * linear layer at sp->pool_line read as after a global pool done in Python. Either a
 * sigmoid gated that vector, a squeeze-excitation written with linear layers (x *
 * gate(fc2(act(fc1(x.mean((2, 3))))))), and the convolution reads x scaled, of x's shape;
 * or the linear layers ran per pixel on a tensor made channels-last in Python
 * (x.permute(0, 2, 3, 1) in timm's and Hugging Face's ConvNeXt blocks), and every row
 * made since from the vector is as many times larger as x has pixels, linear layers on x's
 * channels running per pixel from then on in blocks of the class that held the layer
 * (sp->cl_cls: timm's Mlp, Hugging Face's ConvNextLayer; not a head that pools in Python
 * first, as Hugging Face's ConvNext does before its classifier). Only when every tensor
 * since came from that vector, and not in an attention block (PVT's spatial reduction
 * convolves its tokens: attention over pixels, which a module tree does not size); else
 * *in is left pooled (refused). -1 on overflow. */
static int pooled_read_again(struct est_model *m, struct mt_space *sp, struct mt_frame *st,
                             int depth, struct mt_shape **in)
{
    const struct mt_shape x = sp->pooled_from;
    if (depth >= 0 && st[depth].in_attention)
        return 0; /* attention over the pixels (PVT's): not sized here */
    for (unsigned i = 1; i <= sp->n; i++) {
        const struct mt_shape *s = sp_nth(sp, i);
        if (s->id < sp->pool_id)
            break;
        if (!s->pooled || s->pending || s->concat)
            return 0;
    }
    /* the gate is the last row, over the vector's width (a sigmoid inside a per-pixel
     * GLU is no squeeze-excitation's) */
    if (sp->pool_gate && sp->pool_gate_row + 1 == m->n && sp_newest(sp)->c == x.c) {
        *in = sp_push(sp, x.c, x.h, x.w, 0);
        sp->pool_gate = 0;
        return 0;
    }
    uint64_t hw = x.h * x.w;
    for (size_t i = sp->pool_row; i < m->n; i++)
        if (m->layers[i].out > EST_MAX_ELEMS / hw)
            return -1;
    for (size_t i = sp->pool_row; i < m->n; i++)
        m->layers[i].out *= hw;
    for (unsigned i = 1; i <= sp->n; i++) {
        struct mt_shape *s = sp_nth(sp, i);
        if (s->id < sp->pool_id)
            break;
        s->h = x.h;
        s->w = x.w;
        s->pooled = 0;
    }
    for (int d = 0; d <= depth; d++) {
        if (st[d].x.pooled && st[d].x.id >= sp->pool_id) {
            st[d].x.h = st[d].xv.h = x.h;
            st[d].x.w = st[d].xv.w = x.w;
            st[d].x.pooled = st[d].xv.pooled = 0;
        }
    }
    sp->cl_cls = sp->pool_cls;
    sp->cl_cls_n = sp->pool_cls_n;
    return 0;
}

/* A convolution (spatial tree) reads tensor t, the flow having reached `flow` (NULL: the
 * newest tensor): each open block whose input t is (or,
 * when that input is a pending join, the join read as an add) gets a new branch when the
 * read is in another direct child than its newest branch; so does a block without
 * branches where t was newest as one of its direct children began, and is no longer
 * (a fork: the flow since t was the first branch). */
static void credit_branch(struct mt_space *sp, struct mt_frame *st, int depth,
                          const struct mt_shape *t, const struct mt_shape *flow)
{
    for (int d = 0; d <= depth; d++) {
        struct mt_frame *f = &st[d];
        int reads_x = f->x.id == t->id || (f->x.pending && f->xv.id == t->id);
        if (!reads_x && f->has_x && f->nbranch == 0 && t != sp_newest(sp)) {
            int fork = 0;
            uint32_t id;
            for (unsigned j = 1; !fork && (id = frame_start(f, j)) != 0; j++)
                fork = id == t->id;
            if (fork) { /* the flow since t was the first branch */
                f->nbranch = 1;
                f->branch_child = f->child - 1;
                reads_x = 1;
            }
        }
        if (!f->has_x || !reads_x || f->branch_child == f->child)
            continue;
        if (!f->nbranch && f->x.pending && f->xv.id == t->id)
            f->x_add = 1; /* its first branch read its input, a join, as a sum */
        if (f->nbranch)
            branch_end(f, flow);
        f->nbranch++;
        f->branch_child = f->child;
    }
}

/* A convolution read tensor `in` although `newest` is newer: the elementwise rows that
 * open the innermost block with rows (and read `newest`) ran on `in` instead. timm's
 * Xception lists a block's skip convolution before the branch that runs first, whose
 * leading ReLU the print order would put on the skip's output; SqueezeNet's classifier
 * dropout runs on the join of the last Fire's branches. So do pools that keep the newest
 * tensor's size when `in` has it too (same_hw), where `in` is an older tensor: GoogLeNet's
 * branch4 pools the block's input, not branch3's output (but an Upsample module that
 * made the newest tensor before a join of it, as a U-Net's, stays as it is). */
static void lead_rows_fix(struct est_model *m, const struct mt_frame *st, int depth,
                          uint64_t newest, uint64_t in, int same_hw)
{
    for (int d = depth; d >= 0; d--) {
        if (st[d].first >= m->n)
            continue; /* no rows yet: the parent's decide */
        for (size_t i = st[d].first; i < m->n; i++) {
            const struct est_layer *l = &m->layers[i];
            int keeps = l->kind == EST_K_ACT || l->kind == EST_K_DROPOUT ||
                        (l->kind == EST_K_POOL && same_hw);
            if (!keeps || l->out != newest)
                return;
        }
        for (size_t i = st[d].first; i < m->n; i++)
            m->layers[i].out = in;
        return;
    }
}

/* Block f's only row so far pooled the newest tensor (src to pooled), and its
 * convolution reads an older tensor t instead: the pool ran on t (ResNet-D's downsample,
 * an AvgPool2d before a 1x1 convolution on the block's input). The pooled tensor takes
 * t's channels, and t's size scaled as the pool scaled src's; returned for the
 * convolution to read, with src in *flow. Else t. */
static struct mt_shape *pool_moved(struct est_model *m, struct mt_space *sp,
                                   const struct mt_frame *f, struct mt_shape *t,
                                   const struct mt_shape **flow)
{
    if (sp->n < 2 || m->n == 0 || f->first + 1 != m->n ||
        m->layers[m->n - 1].kind != EST_K_POOL)
        return t;
    struct mt_shape *pooled = sp_nth(sp, 1), *src = sp_nth(sp, 2);
    if (pooled->pending || src->pending || pooled->id == t->id || !pooled->h || !pooled->w ||
        m->layers[m->n - 1].out != sp_elems(pooled->c, pooled->h, pooled->w) ||
        src->h % pooled->h || src->w % pooled->w ||
        (src->h == pooled->h && src->w == pooled->w))
        return t;
    uint64_t rh = src->h / pooled->h, rw = src->w / pooled->w;
    uint64_t h = (t->h + rh - 1) / rh, w = (t->w + rw - 1) / rw, e = sp_elems(t->c, h, w);
    if (!e)
        return t;
    *flow = src; /* where the flow the pool seemed to read had got */
    pooled->c = t->c;
    pooled->h = h;
    pooled->w = w;
    m->layers[m->n - 1].out = e;
    return pooled;
}

/* A linear layer wants `want` features where the newest tensor, a global pool of a
 * concatenation, has fewer channels: a branch joined inside its branch, which the print
 * does not show (Inception v3's Mixed_7c concatenates its 1x3 and 3x1 outputs), so the
 * concatenation was wider. Widens it, and the pool and the rows after it. */
static void widen_pooled_concat(struct est_model *m, struct mt_space *sp, uint64_t want)
{
    unsigned i = 1;
    while (i < sp->n && sp_nth(sp, i)->pending)
        i++;
    if (i >= sp->n)
        return;
    struct mt_shape *pool = sp_nth(sp, i), *src = sp_nth(sp, i + 1);
    size_t r = m->n;
    while (r > 0 && m->layers[r - 1].kind != EST_K_POOL)
        r--;
    if (!src->concat || src->c != pool->c || r == 0 || m->layers[r - 1].out != pool->c)
        return;
    uint64_t e = sp_elems(want, src->h, src->w);
    if (!e)
        return;
    m->concat += e - sp_elems(src->c, src->h, src->w);
    for (size_t j = r - 1; j < m->n; j++)
        if (m->layers[j].out == pool->c)
            m->layers[j].out = want;
    src->c = pool->c = want;
}

/* The leaf at line read `in`, a join the print does not show that no earlier tensor
 * explains (sp_input): for the note (est_model.join_line). */
static void join_unexplained(struct est_model *m, const struct mt_shape *in, size_t line)
{
    if (!in)
        return;
    if (!m->join_line) {
        m->join_line = line;
        m->join_channels = in->c;
        m->join_h = in->h;
        m->join_w = in->w;
    }
    m->join_count++;
}

/* The squeeze-excitation block the leaf being read is in (its first leaf a global
 * pool): st[depth], or a block around it, which may hold its convolutions and gate in a
 * child (Hugging Face's RegNetSELayer: pooler, then attention = Sequential(conv, act,
 * conv, sigmoid)); NULL when none. Only blocks that began with that pool qualify, so a
 * network's head (a global pool, then linear layers) holds no gate. */
static struct mt_frame *se_frame(struct mt_frame *st, int depth)
{
    for (int d = depth; d >= 0; d--)
        if (st[d].se_pool)
            return &st[d];
    return NULL;
}

/* A printed 2-D pad, ZeroPad2d((l, r, t, b)) and the Constant, Reflection and Replication
 * kinds (PyTorch prints all four sides): the next convolution reads the input that much
 * larger, unless it pads 'same' itself (transformers' EfficientNet prints a pad in every
 * depthwise layer and calls it before the strided, 'valid' ones only). 1 when c is one. */
static int pad_leaf(struct mt_space *sp, const char *c, size_t cls_n, const char *a, size_t an)
{
    static const char *const pads[] = {"ZeroPad2d", "ConstantPad2d", "ReflectionPad2d",
                                       "ReplicationPad2d"};
    size_t i = 0;
    while (i < sizeof pads / sizeof pads[0] && !name_is(c, cls_n, pads[i]))
        i++;
    if (i == sizeof pads / sizeof pads[0])
        return 0;
    const char *p = a, *end = a + an;
    while (p < end && (*p == ' ' || *p == '(' || (*p == 'p' && end - p > 8 &&
                                                    memcmp(p, "padding=", 8) == 0)))
        p += *p == 'p' ? 8 : 1;
    int64_t v[4];
    for (int k = 0; k < 4; k++) {
        int neg = p < end && *p == '-';
        p += neg;
        if (p >= end || !isdigit((unsigned char)*p))
            return 1; /* not four sides: as before, no size change */
        int64_t x = 0;
        while (p < end && isdigit((unsigned char)*p) && x < MT_MAX_WINDOW)
            x = x * 10 + (*p++ - '0');
        if (x >= MT_MAX_WINDOW)
            return 1;
        v[k] = neg ? -x : x;
        while (p < end && (*p == ',' || *p == ' '))
            p++;
    }
    memcpy(sp->pad, v, sizeof v);
    sp->pad_pending = 1;
    return 1;
}

/* The tensor a pooling leaf reads: the newest, nw, but where the pooling opens a child
 * block of a block that pooled its own input x in an earlier direct child, and nw is that
 * pooled x: then x itself (timm's DlaTree pools x as `bottom` for its projection and
 * hands x, not bottom, to its tree1, whose own downsample pools it; read on bottom,
 * DLA's deeper levels were pooled twice at every level). The blocks the pooling opens
 * read x too. */
static struct mt_shape *pool_source(struct est_model *m, struct mt_space *sp,
                                    struct mt_frame *st, int depth, struct mt_shape *nw,
                                    int strided)
{
    int d = depth;
    for (; d > 0 && st[d].first == m->n; d--) {
        const struct mt_frame *f = &st[d - 1];
        struct mt_shape *x;
        if (f->pooled_x && f->pooled_x == nw->id &&
            (x = sp_by_id(sp, input_value_id(f))) != NULL) {
            opened_read(m, st, depth, x);
            return x;
        }
    }
    /* A strided pooling in a later child of a block with named children whose input x
     * a branch already shrank: the newest tensor is smaller than x and has x's channels,
     * or two branches read x. Pooling it would shrink x twice, which no join of the
     * branches takes: it pools x, another branch (timm's Inception-v4: Mixed5a's maxpool
     * beside its strided conv, the reduction blocks' branch2). */
    const struct mt_frame *f = d >= 0 && st[d].first != m->n ? &st[d] : NULL;
    struct mt_shape *x;
    if (strided && f && !f->numbered && f->has_x && f->nbranch &&
        f->branch_child != f->child && sp_larger(&f->x, nw) &&
        (nw->c == f->x.c || f->nbranch >= 2) && joined_after(sp, depth - d + 1, nw->c) &&
        (x = sp_by_id(sp, f->x.id)) != NULL) {
        credit_branch(sp, st, depth, x, nw);
        opened_read(m, st, depth, x);
        return x;
    }
    return nw;
}

/* Whether a pooling's arguments give it a stride above 1 (the window when no stride=
 * is printed). */
static int pool_strided(const char *a, size_t an)
{
    int64_t ks[2], sd[2];
    if (dims2(a, an, "kernel_size=", 0, ks) < 0 || ks[0] < 1 ||
        dims2(a, an, "stride=", ks[0], sd) < 0)
        return 0;
    if (arg_at(a, an, "stride=") == an)
        sd[1] = ks[1];
    return sd[0] > 1 || sd[1] > 1;
}

/* A linear layer of a convolutional tree makes a c x h x w tensor: *out its elements, and
 * the newest tensor. 0, or -1 with err when it is too large. */
static int linear_makes(struct mt_space *sp, uint64_t *out, uint64_t c, uint64_t h, uint64_t w,
                        const char *file, size_t line, struct carma_err *err)
{
    *out = sp_elems(c, h, w);
    if (!*out)
        return carma_err_at(err, file, line, "too large a layer");
    sp_push(sp, c, h, w, 0);
    return 0;
}

/* Sizes a leaf of a convolutional tree. On entry *k, *out and *params are what the
 * non-spatial rules found; on return they are the leaf's. 0, or -1 with err. */
static int spatial_leaf(struct est_model *m, struct mt_space *sp, struct mt_frame *st, int depth,
                        const char *c, size_t cls_n, const char *a, size_t an, int bias,
                        const int64_t *pos, int npos, uint64_t in_f, int inplace, enum est_kind *k,
                        uint64_t *out, uint64_t *params, unsigned *flags, const char *file,
                        size_t line, struct carma_err *err)
{
    struct mt_frame *f = depth >= 0 ? &st[depth] : NULL;
    struct mt_shape *nw = sp_newest(sp);
    if (pad_leaf(sp, c, cls_n, a, an))
        return 0;
    int sub_ad = nw ? attention_frame(st, depth) : -1;
    if (name_ends(c, cls_n, "Subsample") && (an == 0 || (an == 1 && a[0] == ')')) && sub_ad >= 0 &&
        st[sub_ad].positions && st[sub_ad].has_x && !st[sub_ad].sub.c) {
        /* LeViT's query subsampling (transformers' LevitSubsample, a class ending in Subsample:
         * every second position of each side, stride 2 in every published LeViT, which the print
         * does not show), a copy: the queries and the output projection run on it */
        const struct mt_shape *x = frame_input(&st[sub_ad]);
        uint64_t h = (x->h + 1) / 2, w = (x->w + 1) / 2;
        *k = EST_K_POOL;
        *out = sp_elems(x->c, h, w);
        *params = 0;
        if (!*out)
            return carma_err_at(err, file, line, "too large a layer");
        struct mt_shape *t = sp_push(sp, x->c, h, w, 0);
        st[sub_ad].sub = *t;
        if (!m->subsample_line)
            m->subsample_line = line;
        return 0;
    }
    if (name_is(c, cls_n, "SpaceToDepth") || name_is(c, cls_n, "PixelUnshuffle")) {
        /* each r x r neighbourhood into channels: C r^2 x H/r x W/r, a copy. timm's
         * SpaceToDepth prints no block size: the convolution after it reads C r^2 (on the
         * image, TResNet's stem, C is its 3 channels) */
        struct mt_shape img = {.c = 3, .h = m->image_h, .w = m->image_w};
        const struct mt_shape *x = nw ? nw : &img;
        int64_t r = arg_int(a, an, "downscale_factor=");
        uint64_t w = r > 0 ? 0 : next_reader_width(sp, 0);
        if (r <= 0 && w > x->c && w % x->c == 0)
            for (r = 2; r <= 16 && (uint64_t)(r * r) * x->c < w; r++)
                ;
        if (r < 2 || r > 16 || (w && (uint64_t)(r * r) * x->c != w) || !x->h || !x->w ||
            x->h % (uint64_t)r || x->w % (uint64_t)r)
            return carma_err_at(err, file, line,
                                "%.*s: no block size its print or the layer after it gives "
                                "for the %llux%llu input of %llu channels; give a torchinfo "
                                "table",
                                (int)cls_n, c, (unsigned long long)x->h,
                                (unsigned long long)x->w, (unsigned long long)x->c);
        if (!nw)
            m->input = sp_elems(x->c, x->h, x->w); /* the image, read by the layer */
        uint64_t oc = x->c * (uint64_t)(r * r), oh = x->h / (uint64_t)r, ow = x->w / (uint64_t)r;
        *k = EST_K_POOL; /* a new tensor without parameters */
        *out = sp_elems(oc, oh, ow);
        sp_push(sp, oc, oh, ow, 0);
        return 0;
    }
    if (*k != EST_K_CONV)
        sp->pad_pending = 0; /* a pad is its next leaf's, a convolution's */
    if (*k == EST_K_CONV && sp->grid && m->window_line)
        return carma_err_at(err, file, line,
                            "%.*s after windowed attention over the grid of patches (line %zu): "
                            "a decoder or feature pyramid over Swin's stages (UperNet, "
                            "Swin-UNETR) reads them at sizes the print does not show; not "
                            "modelled: give a torchinfo table",
                            (int)cls_n, c, m->window_line);
    if (*k == EST_K_CONV) {
        int transposed = find(c, cls_n, "Transpose") != NULL;
        int64_t ks[3], st2[2], pad[2] = {0, 0}, dil[2], op[2];
        int nk = arg_dims(a, an, "kernel_size=", ks, 3);
        if (nk == 1 && npos == 2 && pos[0] == 1 && pos[1] == 1 && f && f->has_x && nw &&
            !transposed && ks[0] >= 1 && ks[0] <= MT_MAX_WINDOW) {
            /* a 1-D convolution of one channel over the channels of the pooled block input
             * (timm's EcaModule: x * sigmoid(conv(x.mean((2, 3)))), efficient channel
             * attention): a squeeze-excitation whose squeeze is a few weights; the block's
             * gate and product keep its input's shape (spatial_close) */
            f->se_pool = 1;
            *k = EST_K_OTHER;
            *out = 0;
            *params = (uint64_t)ks[0] + (find(a, an, "bias=False") ? 0 : 1);
            return 0;
        }
        if (nk == 1 || nk == 3 || (nk == 0 && find(c, cls_n, "2d") == NULL))
            return carma_err_at(err, file, line,
                                "%.*s in a module tree: " MT_CONV_NOT_2D, (int)cls_n, c);
        /* padding='same' (stride 1), or timm's Conv2dSame (Conv2dSameExport), which pads
         * TensorFlow's way at any stride and prints no padding: ceil(in / stride); so does
         * transformers' MobileNetV1/V2ConvLayer (tf_padding, its default: the convolution
         * is built without padding and forward pads its input) */
        int tf_layer = f && f->cls && (name_is(f->cls, f->cls_n, "MobileNetV2ConvLayer") ||
                                       name_is(f->cls, f->cls_n, "MobileNetV1ConvLayer"));
        int same = find(a, an, "padding=same") != NULL || find(c, cls_n, "Conv2dSame") ||
                   (tf_layer && !find(a, an, "padding="));
        int valid = find(a, an, "padding=valid") != NULL; /* pad stays 0 */
        if (nk != 2 || npos != 2 || ks[0] > MT_MAX_WINDOW || ks[1] > MT_MAX_WINDOW ||
            dims2(a, an, "stride=", 1, st2) < 0 ||
            (!same && !valid && dims2(a, an, "padding=", 0, pad) < 0) ||
            dims2(a, an, "dilation=", 1, dil) < 0 || dims2(a, an, "output_padding=", 0, op) < 0)
            return carma_err_at(err, file, line, "bad %.*s arguments", (int)cls_n, c);
        int64_t g = arg_int(a, an, "groups=");
        if (g < 1)
            g = 1;
        for (int d = 0; d <= depth && (dil[0] > 1 || dil[1] > 1); d++)
            st[d].dilated = 1; /* a dilated backbone's blur pools keep the size */
        uint64_t cin = (uint64_t)pos[0], cout = (uint64_t)pos[1];
        if (cin == 0 || cout == 0 || cin % (uint64_t)g || cout % (uint64_t)g)
            return carma_err_at(err, file, line, "bad %.*s channels", (int)cls_n, c);
        if (f && !transposed && (st2[0] > 1 || st2[1] > 1) && cin != cout) {
            f->pool_cin = cin;
            f->pool_cout = cout;
        }
        /* timm's SqueezeExcite squeezes with x.mean((2, 3), keepdim=True) in forward: its
         * first 1x1 convolution reads the block input pooled to 1x1, and the block's result
         * (x * gate) is the input's size again (block_close) */
        int squeeze = f && f->se_class && !f->se_pool && !f->first_leaf_done && !transposed &&
                      nk == 2 && ks[0] == 1 && ks[1] == 1 && f->has_x && f->xv.c == cin;
        int radix = f && f->split_attn && !f->se_pool && !transposed && nk == 2 &&
                    ks[0] == 1 && ks[1] == 1 && nw && nw->c > cin &&
                    nw->c % cin == 0;
        /* the spatial reduction of attention's keys and values (first_leaf_reads), listed
         * after projections that may have its channels: on the attention block's input */
        int ad = attention_frame(st, depth);
        int reduce = ad >= 0 && st[ad].positions && st[ad].sr > 1 && st[ad].has_x && !transposed &&
                     cin == frame_input(&st[ad])->c && cout == cin && st2[0] == st[ad].sr &&
                     st2[1] == st[ad].sr;
        const struct mt_shape was = nw ? *nw : (struct mt_shape){0}; /* sp_input may push */
        int unexplained = 0;
        struct mt_shape *in =
            radix || reduce ? (radix ? nw : NULL)
                            : sp_input(sp, m, st, depth, cin,
                                       !transposed && st2[0] == 1 && st2[1] == 1, 1, &unexplained);
        if (radix)
            f->radix_sum = (struct mt_shape){.c = cin, .h = nw->h, .w = nw->w};
        if (unexplained)
            join_unexplained(m, in, line);
        uint64_t h = m->image_h, w = m->image_w;
        if (in && in->pooled && !transposed && cin == sp->pooled_from.c &&
            pooled_read_again(m, sp, st, depth, &in) < 0)
            return carma_err_at(err, file, line, "too large a layer");
        if (in && in->pooled && !transposed)
            return carma_err_at(
                err, file, sp->pool_line,
                "a Linear (in_features=%llu) on the %llu-channel %llux%llu tensor before "
                "it, read as after a global pool done in Python (torch.flatten(F.adaptive_"
                "avg_pool2d(x, 1), 1)), but the %.*s at line %zu reads its 1x1 result: more "
                "likely it runs per pixel on a tensor made channels-last in Python "
                "(x.permute(0, 2, 3, 1) in ConvNeXt, x.flatten(2).transpose(1, 2) in SegFormer "
                "and a diffusion U-Net's transformer), which the print does not show; give a "
                "torchinfo table (torchinfo.summary(model, input_data=..., depth=10)), which "
                "lists every shape",
                (unsigned long long)sp->pooled_from.c, (unsigned long long)sp->pooled_from.c,
                (unsigned long long)sp->pooled_from.h, (unsigned long long)sp->pooled_from.w,
                (int)cls_n, c, line);
        if (reduce) {
            h = st[ad].x.h;
            w = st[ad].x.w;
        } else if (in) {
            struct mt_shape *read = in; /* what the branch reads, before a pool */
            const struct mt_shape *flow = sp_newest(sp); /* where the flow got */
            if (in->id != was.id && f)
                in = pool_moved(m, sp, f, in, &flow);
            h = in->h;
            w = in->w;
            if (in->id != was.id)
                lead_rows_fix(m, st, depth, sp_elems(was.c, was.h, was.w),
                              sp_elems(in->c, h, w),
                              was.h == h && was.w == w && in->id < was.id);
            credit_branch(sp, st, depth, read, flow);
        } else {
            m->input = sp_elems(cin, h, w);
            /* the image itself, a tensor a parallel branch may read too (FastViT's
             * MobileOneBlock stem: conv_kxk and conv_scale both on the image), and the
             * input of the blocks open around its first reader */
            struct mt_shape *img = sp_push(sp, cin, h, w, 0);
            for (int d = 0; d <= depth; d++)
                if (!st[d].has_x) {
                    st[d].x = st[d].xv = *img;
                    st[d].has_x = 1;
                }
            credit_branch(sp, st, depth, img, img);
        }
        if (sp->pad_pending && !same) { /* a printed pad before it (pad_leaf) */
            int64_t ph = (int64_t)h + sp->pad[2] + sp->pad[3];
            int64_t pw = (int64_t)w + sp->pad[0] + sp->pad[1];
            if (ph < 1 || pw < 1)
                return carma_err_at(err, file, line, "%.*s: no input left after its pad",
                                    (int)cls_n, c);
            h = (uint64_t)ph;
            w = (uint64_t)pw;
        }
        sp->pad_pending = 0;
        if (squeeze || radix) {
            h = w = 1;
            f->se_pool = 1;
        }
        if (ks[0] != st2[0] || ks[1] != st2[1] || pad[0] || pad[1] || transposed)
            sp->conv_not_patch = 1; /* not a vision transformer's patch embedding */
        int64_t oh, ow;
        if (transposed) {
            oh = ((int64_t)h - 1) * st2[0] - 2 * pad[0] + dil[0] * (ks[0] - 1) + op[0] + 1;
            ow = ((int64_t)w - 1) * st2[1] - 2 * pad[1] + dil[1] * (ks[1] - 1) + op[1] + 1;
        } else if (same) {
            if (st2[0] < 1 || st2[1] < 1)
                return carma_err_at(err, file, line, "bad %.*s arguments", (int)cls_n, c);
            oh = ((int64_t)h + st2[0] - 1) / st2[0];
            ow = ((int64_t)w + st2[1] - 1) / st2[1];
        } else {
            oh = window_out((int64_t)h, ks[0], st2[0], pad[0], dil[0], 0);
            ow = window_out((int64_t)w, ks[1], st2[1], pad[1], dil[1], 0);
        }
        uint64_t per = param_count((transposed ? cout : cin) / (uint64_t)g, (uint64_t)ks[0], 0);
        per = per == UINT64_MAX ? per : param_count(per, (uint64_t)ks[1], 0);
        *params = per == UINT64_MAX ? per
                                    : param_count(per, transposed ? cin : cout, bias ? cout : 0);
        *out = oh > 0 && ow > 0 ? sp_elems(cout, (uint64_t)oh, (uint64_t)ow) : 0;
        if (!*out)
            return carma_err_at(err, file, line,
                                "%.*s: no output at this --image-size (input %llux%llu)",
                                (int)cls_n, c, (unsigned long long)h, (unsigned long long)w);
        sp_push(sp, cout, (uint64_t)oh, (uint64_t)ow, 0);
        for (int d = 0; d <= depth && !transposed && !reduce && (st2[0] > 1 || st2[1] > 1); d++)
            st[d].strided = 1;
        for (int d = 0; d <= depth; d++)
            if (!st[d].first_cin)
                st[d].first_cin = cin;
        if (f) {
            f->has_conv = 1;
            struct mt_frame *se = se_frame(st, depth);
            if (se && !se->squeeze)
                se->squeeze = *out;
        }
        return 0;
    }
    if (!nw)
        return 0; /* before the first convolution: as any module tree */
    if (*k == EST_K_NORM && (npos >= 1 || an == 0)) {
        /* sized by its first argument, or printed without its size (older transformers'
         * ConvNextLayerNorm()): over the newest tensor's channels, with a scale and a
         * shift (an RMSNorm a scale, a Frozen one neither) */
        uint64_t ch = npos >= 1 ? *out : nw->c;
        if (npos < 1)
            *params = cls_n > 6 && memcmp(c, "Frozen", 6) == 0 ? 0
                      : (est_type_flags(*k, c, cls_n) & EST_LF_RMS ? 1 : 2) * ch;
        int unexplained;
        struct mt_shape *in = sp_input(sp, m, st, depth, ch, 1, 0, &unexplained);
        if (unexplained)
            join_unexplained(m, in, line);
        if (!in)
            return carma_err_at(err, file, line, "bad %.*s channels", (int)cls_n, c);
        uint64_t h = in->h, w = in->w;
        uint8_t pooled = in->pooled;
        *out = sp_elems(ch, h, w);
        sp_push(sp, ch, h, w, 0)->pooled = pooled;
        return 0;
    }
    if (*k == EST_K_LINEAR) {
        uint64_t of = *out, hw = nw->h * nw->w;
        if (f && f->pool_cout && in_f == f->pool_cin && of == f->pool_cout && hw > 1 &&
            nw->c == f->pool_cout && !f->in_attention) {
            /* beside the strided convolution that pools a token grid, a linear layer of its
             * channels projects the class token (PiT's Pooling: conv for the patches, fc for
             * the class token): one position; the grid stays the newest tensor */
            *out = of;
            return 0;
        }
        int cl = sp->cl_cls && f && f->cls && f->cls_n == sp->cl_cls_n &&
                 memcmp(f->cls, sp->cl_cls, f->cls_n) == 0;
        int pd = depth; /* the block of attention over positions it is in or beside */
        while (pd >= 0 && !st[pd].positions)
            pd--;
        if (pd >= 0 && !sp->grid) {
            /* per position: on the newest tensor's channels; in the attention block, on
             * another width at its queries' positions (the output projection reads attn @
             * v, which the print does not show: CAFormer's of the block input's width,
             * EfficientFormer's 1024 values of 8 heads); beside it, on the tensor of its
             * in_features */
            int ad = attention_frame(st, depth); /* the attention block it is in, if any */
            int in_attn = ad >= 0 && st[ad].positions && st[ad].has_x;
            if (in_attn && st[ad].sr > 1) {
                /* keys and values reduced (PVT, SegFormer): their projections read the
                 * block's input after its strided convolution, printed after them; the
                 * query and output projections run at the input's positions */
                uint64_t h = st[ad].x.h, w = st[ad].x.w;
                if ((sp->leaf_qkv & 6) && !(sp->leaf_qkv & 1)) {
                    h /= (uint64_t)st[ad].sr;
                    w /= (uint64_t)st[ad].sr;
                    for (int d = ad; d >= 0; d--) /* an attention block around it too */
                        st[d].sr_keys |= st[d].sr > 1;
                    fewest_positions(&st[ad], h * w);
                }
                return linear_makes(sp, out, of, h, w, file, line, err);
            }
            struct mt_shape *in = nw;
            int unexplained = 0;
            if (in_f != nw->c)
                in = !in_attn       ? sp_input(sp, m, st, depth, in_f, 1, 0, &unexplained)
                     : st[ad].sub.c ? &st[ad].sub /* at the subsampled queries */
                                    : &st[ad].x;
            if (in && !unexplained && !in->pooled && in->h * in->w > 1) {
                if (in_attn && in == nw)
                    fewest_positions(&st[ad], in->h * in->w);
                return linear_makes(sp, out, of, in->h, in->w, file, line, err);
            }
        }
        if (f && f->cl_rows && hw > 1 && !nw->pooled) {
            /* the block's later linear layers run per position too, also on a part of the
             * first's output the print does not show (MambaOut's fc2 on
             * act(g) * cat(i, conv(c))): where no tensor has its width, on a gated product
             * of that width, a new tensor keeping its factors (a row of its own) */
            if (in_f && in_f != nw->c && !sp_has_width(sp, in_f)) {
                uint64_t e = sp_elems(in_f, nw->h, nw->w);
                if (!e || est_model_add(m, EST_K_POOL, e, 0, f->mult, 0) < 0)
                    return carma_err_at(err, file, line, "too many layers or too large a layer");
                est_layer_type(&m->layers[m->n - 1], "Mul", 3);
                m->layers[m->n - 1].flags |= EST_LF_PRODUCT;
            }
            return linear_makes(sp, out, of, nw->h, nw->w, file, line, err);
        }
        int conv_after = hw > 1 && in_f == nw->c && !cl && !sp->grid && !(f && f->permute) &&
                         !(f && f->in_attention) && rest_convolves(sp);
        if (conv_after && f)
            f->cl_rows = 1;
        if ((cl || sp->grid || (f && f->permute) || conv_after) && hw > 1 && in_f == nw->c) {
            /* channels-last: per position (ConvNeXt's pointwise layers) */
            return linear_makes(sp, out, of, nw->h, nw->w, file, line, err);
        }
        if (hw > 1 && in_f != nw->c && in_f == hw && !nw->pooled &&
            !(f && f->in_attention) && (!sp->grid || sp->token_mix)) {
            /* a linear layer over the positions, per channel (MLP-Mixer's and ResMLP's
             * token mixing on x.transpose(1, 2)): its output has of positions; from here
             * on the model runs per position (sp->grid), as its channel MLPs do */
            sp->grid = sp->token_mix = 1;
            return linear_makes(sp, out, nw->c, of, 1, file, line, err);
        }
        if (sp->grid && hw > 1 && in_f != nw->c) {
            /* a grid's linear layer on a tensor the print does not show, of the channels
             * of an earlier one (the attention's output projection reads attn @ v, of its
             * input's channels): per position, at that tensor's size */
            int unexplained;
            struct mt_shape *in = sp_input(sp, m, st, depth, in_f, 1, 0, &unexplained);
            if (!in || unexplained || in->pooled || in->h * in->w <= 1)
                return carma_err_at(err, file, line,
                                    "%.*s (in_features=%llu) in windowed attention over a "
                                    "grid of patches (Swin) reads no tensor of the grid "
                                    "(a position bias computed by a network, as Swin V2's, "
                                    "is not modelled): give a torchinfo table",
                                    (int)cls_n, c, (unsigned long long)in_f);
            return linear_makes(sp, out, of, in->h, in->w, file, line, err);
        }
        uint8_t pooled = hw == 1 && nw->pooled;
        uint64_t npos_from = sp->pooled_from.h * sp->pooled_from.w;
        if (hw == 1 && sp->pool_line && in_f != nw->c && npos_from > 1 && in_f == npos_from)
            /* a linear layer over the positions of the tensor read as pooled: the model
             * mixes its tokens (timm's gMLP: its channel layer, then a spatial gating unit
             * over the 196 positions), and ran per position, not after a global pool */
            return carma_err_at(
                err, file, line,
                "%.*s (in_features=%llu) over the %llux%llu positions of the tensor that the "
                "linear layer at line %zu read, read as after a global pool: the model mixes "
                "its tokens per channel (gMLP's spatial gating), which a module tree read this "
                "way does not size; give a torchinfo table",
                (int)cls_n, c, (unsigned long long)in_f,
                (unsigned long long)sp->pooled_from.h, (unsigned long long)sp->pooled_from.w,
                sp->pool_line);
        if (hw > 1 && in_f == nw->c) {
            /* the block pooled its input functionally (torch.flatten(F.adaptive_avg_pool2d(x,
             * 1), 1)): the block's rows before this one saw the pooled tensor. A convolution
             * that reads the result is refused (ConvNeXt's per-position Linear after a
             * permute in Python reads so). */
            pooled = 1;
            sp->pool_line = line;
            sp->pooled_from = *nw;
            sp->pool_row = m->n; /* this layer's row, added next */
            sp->pool_id = sp->next_id + 1;
            sp->pool_gate = 0;
            sp->pool_cls = f ? f->cls : NULL;
            sp->pool_cls_n = f ? f->cls_n : 0;
            size_t lo = f ? (f->after_child > f->first ? f->after_child : f->first) : 0;
            for (size_t i = m->n; i-- > lo;) { /* its own rows, not a child block's */
                struct est_layer *l = &m->layers[i];
                if ((l->kind != EST_K_ACT && l->kind != EST_K_DROPOUT) || l->out != nw->c * hw)
                    break;
                l->out = nw->c;
                sp->pool_row = i;
            }
        }
        if (hw == 1 && in_f > nw->c)
            widen_pooled_concat(m, sp, in_f);
        sp_push(sp, of, 1, 1, 0)->pooled = pooled;
        return 0;
    }
    int upsample = find(c, cls_n, "Upsampl") != NULL; /* Upsample, UpsamplingNearest2d */
    if (*k == EST_K_POOL || upsample) {
        int64_t o[2];
        *k = EST_K_POOL; /* a new tensor without parameters */
        const uint32_t read_id = nw->id;
        if (!upsample)
            nw = pool_source(m, sp, st, depth, nw,
                             !find(c, cls_n, "Adaptive") && pool_strided(a, an));
        uint64_t ch = nw->c;
        size_t blank = 0;
        while (blank < an && a[blank] == ' ')
            blank++;
        if (blank == an && !upsample && find(c, cls_n, "BlurPool") && !(f && f->dilated)) {
            /* an anti-aliased downsampling (timm's BlurPool2d(), TResNet's and ResNet-D
             * variants' `aa`), which prints no stride: 2, its default and its purpose;
             * padded to keep ceil(H / 2) (read at the input's size, TResNet-M's later
             * stages had run 2 to 8 times too wide: 11 times its measured peak). In a block
             * with a dilated convolution (timm's ResNets at output stride 8 or 16 add one
             * where the dilation changes) it keeps the size, as a bare pooling does. */
            o[0] = ((int64_t)nw->h + 1) / 2;
            o[1] = ((int64_t)nw->w + 1) / 2;
        } else if (blank == an && !upsample) {
            /* a class of its own that prints no window (torchvision's FPN extra block
             * LastLevelMaxPool(), a hand-written GlobalAvgPool2d()): as large as its
             * input, the most a pooling makes */
            if (!m->bare_pool_line)
                m->bare_pool_line = line;
            o[0] = (int64_t)nw->h;
            o[1] = (int64_t)nw->w;
        } else if (find(c, cls_n, "Adaptive")) {
            /* timm's SelectAdaptivePool2d prints its pool_type, not always an output
             * size (its default, 1); 'catavgmax' joins two pools' channels, '' passes
             * its input through. */
            const char *pt = find(a, an, "pool_type=");
            int select = pt && arg_at(a, an, "output_size=") == an && npos < 1;
            if (pt && (pt + 10 == a + an || pt[10] == ',')) {
                *k = EST_K_OTHER;
                *out = 0;
                return 0;
            }
            if (pt && find(pt, (size_t)(a + an - pt), "catavgmax"))
                ch *= 2;
            if (select) {
                o[0] = o[1] = 1;
            } else if (dims2(a, an, "output_size=", -1, o) < 0 || o[0] < 1 || o[1] < 1) {
                if (npos < 1)
                    return carma_err_at(err, file, line,
                                        "%.*s: no output_size= (or a malformed one), which an "
                                        "adaptive pooling needs; give the print as PyTorch "
                                        "writes it",
                                        (int)cls_n, c);
                o[0] = o[1] = pos[0];
            }
            if (f && !f->first_leaf_done && o[0] == 1 && o[1] == 1)
                f->se_pool = 1;
        } else if (upsample) {
            int64_t sf[2], sz[2];
            if (dims2(a, an, "size=", 0, sz) == 0 && sz[0] > 0) {
                o[0] = sz[0];
                o[1] = sz[1];
            } else if (dims2(a, an, "scale_factor=", 0, sf) == 0 && sf[0] > 0) {
                o[0] = (int64_t)nw->h * sf[0];
                o[1] = (int64_t)nw->w * sf[1];
            } else {
                return carma_err_at(err, file, line,
                                    "%.*s: no integer size= or scale_factor=", (int)cls_n, c);
            }
        } else {
            int64_t ks[2], sd[2], pd[2], dl[2];
            if (dims2(a, an, "kernel_size=", 0, ks) < 0 || ks[0] < 1)
                return carma_err_at(err, file, line,
                                    "%.*s: no kernel_size= (or a malformed one), the pooling's "
                                    "window; give the print as PyTorch writes it",
                                    (int)cls_n, c);
            if (dims2(a, an, "stride=", ks[0], sd) < 0 || dims2(a, an, "padding=", 0, pd) < 0 ||
                dims2(a, an, "dilation=", 1, dl) < 0)
                return carma_err_at(err, file, line,
                                    "%.*s: a malformed stride=, padding= or dilation=",
                                    (int)cls_n, c);
            if (arg_at(a, an, "stride=") == an)
                sd[1] = ks[1];
            int ceil_mode = find(a, an, "ceil_mode=True") != NULL;
            if (find(c, cls_n, "Pool2dSame") && sd[0] > 0 && sd[1] > 0) {
                /* timm's MaxPool2dSame and AvgPool2dSame pad TensorFlow's way whatever
                 * padding= they print: ceil(in / stride) */
                o[0] = ((int64_t)nw->h + sd[0] - 1) / sd[0];
                o[1] = ((int64_t)nw->w + sd[1] - 1) / sd[1];
            } else {
                o[0] = window_out((int64_t)nw->h, ks[0], sd[0], pd[0], dl[0], ceil_mode);
                o[1] = window_out((int64_t)nw->w, ks[1], sd[1], pd[1], dl[1], ceil_mode);
                /* AvgPool2d's print leaves ceil_mode out: a window larger than the image
                 * itself, which no input of the model fills, ran in ceil mode, the only one
                 * in which PyTorch gives it an output (transformers' EfficientNet pools
                 * globally with AvgPool2d(hidden_dim, ceil_mode=True)); a smaller one
                 * without output is an image too small for the model, refused below */
                if ((o[0] < 1 || o[1] < 1) && !ceil_mode && find(c, cls_n, "AvgPool") &&
                    ks[0] > (int64_t)m->image_h && ks[1] > (int64_t)m->image_w) {
                    o[0] = window_out((int64_t)nw->h, ks[0], sd[0], pd[0], dl[0], 1);
                    o[1] = window_out((int64_t)nw->w, ks[1], sd[1], pd[1], dl[1], 1);
                }
            }
        }
        uint64_t e = o[0] > 0 && o[1] > 0 ? sp_elems(ch, (uint64_t)o[0], (uint64_t)o[1]) : 0;
        if (!e)
            return carma_err_at(err, file, line,
                                "%.*s: no output at this --image-size (input %llux%llu)",
                                (int)cls_n, c, (unsigned long long)nw->h,
                                (unsigned long long)nw->w);
        *out = e;
        uint32_t made = sp_push(sp, ch, (uint64_t)o[0], (uint64_t)o[1], 0)->id;
        uint32_t xid = f ? input_value_id(f) : 0;
        if (f && !f->numbered && f->has_x && read_id == xid && nw->id == xid)
            f->pooled_x = made; /* a direct child pooled the block's input (ids are never
                                   reused: pool_source matches it only while newest) */
        return 0;
    }
    if (inplace || *k == EST_K_ACT || *k == EST_K_DROPOUT || *k == EST_K_SOFTMAX) {
        if (inplace) {
            *k = EST_K_ACT;
            *flags |= EST_LF_INPLACE;
        }
        *out = sp_elems(nw->c, nw->h, nw->w);
        if (f && find(c, cls_n, "igmoid")) { /* Sigmoid, Hardsigmoid: a gate */
            f->gate = 1;
            f->gate_row = m->n; /* the row the caller adds next */
            struct mt_frame *se = se_frame(st, depth);
            if (se && se != f) {
                se->gate = 1;
                se->gate_row = m->n;
            }
        }
        if (nw->pooled && find(c, cls_n, "igmoid")) {
            sp->pool_gate = 1;
            sp->pool_gate_row = m->n; /* the row the caller adds next */
        }
        return 0;
    }
    if (name_is(c, cls_n, "Permute") && f)
        f->permute = 1;
    return 0;
}

/* The SiLU a block calls as a function (F.silu), as a row made from its linear row l:
 * no parameters of its own. */
static struct est_layer functional_silu(const struct est_layer *l)
{
    struct est_layer r = *l;
    r.kind = EST_K_ACT;
    r.params = r.frozen = 0;
    r.rank = 0;
    r.wbits = r.unit = r.shares_input = 0;
    est_layer_type(&r, "SiLU", 4);
    return r;
}

/* A row an MLP's rewrite carries along: a dropout, or a leaf that makes no tensor (an
 * Identity, a dropout printed with rate 0). */
static int passes_on(const struct est_layer *l)
{
    return l->kind == EST_K_DROPOUT || (l->kind == EST_K_OTHER && !l->out && !l->params);
}

/* Ends the rewrite of a block's rows in call order: keep[0..k), then the block's
 * dropouts (passes_on), then last, written over the rows from first. keep has room for
 * them all. Returns 1. */
static int block_rewrite(struct est_model *m, size_t first, struct est_layer *keep, size_t k,
                         const struct est_layer *last)
{
    for (size_t j = first; j < m->n; j++)
        if (passes_on(&m->layers[j]))
            keep[k++] = m->layers[j];
    keep[k++] = *last;
    memcpy(&m->layers[first], keep, k * sizeof keep[0]);
    m->n = first + k;
    return 1;
}

/* A gated MLP's layers, block f's [first, n): three linear layers gate (E -> I), up
 * (E -> I) and down (I -> E), with at most one activation and any dropouts, printed in
 * definition order: gate, up, down, act_fn (Hugging Face), or another (torchtitan's and
 * Mixtral's w1, w2, w3: gate, down, up); the first E -> I layer listed is the gate.
 * Rewrites them in call order, gate, act, up (flagged EST_LF_GATED: it multiplies the
 * activation), dropouts, down; 1 when it did. Without an activation module the
 * activation is a function (torchtitan's F.silu, litgpt's LLaMAMLP): a SiLU row is added
 * (it keeps its input, as GELU does). A numbered Sequential runs as listed: only gate,
 * up, down with an activation module. */
static int gated_mlp(struct est_model *m, const struct mt_frame *f)
{
    size_t first = f->first;
    size_t lin[3], act = SIZE_MAX, nl = 0, n = m->n - first;
    if (n < 3 || n > 8)
        return 0;
    for (size_t i = first; i < m->n; i++) {
        const struct est_layer *l = &m->layers[i];
        if (l->kind == EST_K_LINEAR && nl < 3)
            lin[nl++] = i;
        else if (l->kind == EST_K_ACT && act == SIZE_MAX)
            act = i;
        else if (!passes_on(l))
            return 0;
    }
    if (nl != 3)
        return 0;
    /* which of the three is down (I -> E): E != I, so one choice at most fits */
    unsigned d = 3;
    while (d-- > 0) {
        size_t gu[2], k = 0;
        for (unsigned i = 0; i < 3; i++)
            if (i != d)
                gu[k++] = lin[i];
        if (gated_shapes(&m->layers[gu[0]], &m->layers[gu[1]], &m->layers[lin[d]]))
            break;
    }
    if (d > 2 || (f->numbered && (d != 2 || act == SIZE_MAX)))
        return 0;
    if (act == SIZE_MAX && m->n >= m->cap)
        return 0;
    const struct est_layer *g = &m->layers[lin[d == 0]], *u = &m->layers[lin[d == 2 ? 1 : 2]],
                           *dn = &m->layers[lin[d]];
    struct est_layer keep[9];
    size_t k = 0;
    keep[k++] = *g;
    keep[k] = act != SIZE_MAX ? m->layers[act] : functional_silu(g);
    keep[k++].out = g->out; /* printed last, it took down's width */
    keep[k] = *u;
    keep[k++].flags |= EST_LF_GATED;
    return block_rewrite(m, first, keep, k, dn);
}

/* A block with named children, two linear layers of its own, L1 (-> I) and L2 (I ->),
 * and one activation module listed elsewhere than between them (Hugging Face defines
 * GPT-2's act after c_proj, Phi's activation_fn and BART's and Swin's before fc1): the
 * activation runs on L1's output. Moves its row after L1 with L1's width; 1 when it did.
 * Dropouts listed between L2 and an activation listed after it (T5's DenseActDense: wi,
 * wo, dropout, act) run on the activation's output, before L2, which then keeps their
 * I-wide output: they move with it. Listed after the activation (GPT-2's c_fc, c_proj,
 * act, dropout), a dropout is L2's output's and stays. Rows hold hw positions each (a
 * grid's, sp.grid; else 1). */
static int plain_mlp(struct est_model *m, const struct mt_frame *f, uint64_t hw)
{
    if (f->numbered || f->ndlin != 2 || f->ndact != 1 || !hw)
        return 0;
    size_t a = f->dlin[0], b = f->dlin[1], act = f->dact;
    const struct est_layer *l1 = &m->layers[a], *l2 = &m->layers[b];
    uint64_t i = l1->out / hw, e = l2->out / hw;
    if ((act > a && act < b) || l1->out % hw || l2->out % hw ||
        !linear_params(base_params(l2), i, e))
        return 0;
    struct est_layer row = m->layers[act];
    row.out = l1->out;
    if (act < a) {
        memmove(&m->layers[act], &m->layers[act + 1], (a - act) * sizeof row);
        m->layers[a] = row; /* L1 moved down to a - 1 */
        return 1;
    }
    size_t d = b + 1; /* [b + 1, act): dropouts only, or none moves */
    while (d < act && m->layers[d].kind == EST_K_DROPOUT)
        d++;
    size_t nd = d == act ? act - b - 1 : 0;
    struct est_layer drops[8];
    if (nd > sizeof drops / sizeof drops[0])
        nd = 0;
    for (size_t k = 0; k < nd; k++) {
        drops[k] = m->layers[b + 1 + k];
        drops[k].out = l1->out;
    }
    /* a+1 .. b (L2 and what sits between) move down past the activation and the
     * dropouts; the rows between b and the activation are those dropouts */
    memmove(&m->layers[a + 2 + nd], &m->layers[a + 1], (act - a - 1 - nd) * sizeof row);
    m->layers[a + 1] = row;
    memcpy(&m->layers[a + 2], drops, nd * sizeof row);
    return 1;
}

/* A gated MLP whose gate and up projections are one layer (a fused GLU: ChatGLM2/3's
 * dense_h_to_4h and dense_4h_to_h, DINOv2's SwiGLUFFN, Phi-3's gate_up_proj and
 * down_proj): a block with named children, two linear layers of its own, L1 E -> 2I
 * and L2 I -> E (listed in either order), at most one activation module and any
 * dropouts. It runs down(act(x0) * x1) on the halves of L1's output (chunk: views), so
 * autograd keeps L1's 2I-wide output (the activation's input and the product's second
 * factor), the activation's output and the product, I each: what a gated MLP keeps.
 * Listed as a chain, L2 kept L1's output only. Rewrites the rows as L1, the activation
 * (the printed one, else the SiLU the code calls as a function) at width I keeping its
 * 2I-wide input, the product (a new tensor keeping the activation's output), dropouts,
 * L2; 1 when it did, -1 when the model is full. */
static int fused_glu(struct est_model *m, const struct mt_frame *f)
{
    size_t first = f->first, n = m->n - first;
    if (f->numbered || f->ndlin != 2 || f->ndact > 1 || n < 2 || n > 8)
        return 0;
    size_t a = f->dlin[0], b = f->dlin[1], act = f->ndact ? f->dact : SIZE_MAX;
    for (size_t i = first; i < m->n; i++)
        if (i != a && i != b && i != act && !passes_on(&m->layers[i]))
            return 0;
    for (int swap = 0; swap < 2; swap++) {
        const struct est_layer *l1 = &m->layers[swap ? b : a], *l2 = &m->layers[swap ? a : b];
        uint64_t i = l1->out / 2, e = l2->out;
        if (l1->out % 2 || !linear_params(base_params(l1), e, 2 * i) ||
            !linear_params(base_params(l2), i, e))
            continue;
        if (m->n + 2 > m->cap)
            return -1;
        struct est_layer keep[10];
        size_t k = 0;
        keep[k++] = *l1;
        struct est_layer row = act != SIZE_MAX ? m->layers[act] : functional_silu(l1);
        row.out = i;
        row.flags &= ~(uint32_t)EST_LF_SAVES_RESULT; /* the product keeps x1, a view of
                                                       its 2I-wide input, alive */
        keep[k++] = row;
        row.kind = EST_K_POOL; /* act(x0) * x1: a new tensor keeping act(x0) */
        row.params = row.frozen = 0;
        est_layer_type(&row, "Mul", 3);
        row.flags = EST_LF_PRODUCT;
        keep[k++] = row;
        return block_rewrite(m, first, keep, k, l2);
    }
    return 0;
}

/* Linear layer l maps e features to l->out (its own parameters are e x out, with or
 * without a bias). */
static int linear_reads(const struct est_layer *l, uint64_t e)
{
    return l->kind == EST_K_LINEAR && linear_params(base_params(l), e, l->out);
}

/* The heads of attention block f (rows [f->first, m->n)) when it mixes them with a linear
 * layer of its own, heads -> heads, on the scores (timm's TalkingHeadAttn: proj_l before
 * the softmax, proj_w after): the print shows the heads there, and the scores are
 * computed in Python, never by a fused kernel. 0: none. */
static uint64_t talking_heads(const struct est_model *m, const struct mt_frame *f)
{
    for (size_t i = f->first; i < m->n; i++) {
        const struct est_layer *l = &m->layers[i];
        /* heads, not a narrow projection (MobileBERT's 128-wide query in a 512-wide
         * block): at most 64 of them, each at least 16 channels wide */
        if (l->kind == EST_K_LINEAR && l->out >= 2 && l->out <= 64 &&
            f->width % l->out == 0 && f->width / l->out >= 16 && linear_reads(l, l->out))
            return l->out;
    }
    return 0;
}

/* Attention block f projects its input with one fused linear layer to E + 2k features,
 * k < E (E its width): a query and a narrower key and value, multi-query or grouped
 * attention (GPTBigCode's c_attn: 768 -> 768 + 2 x 64; Falcon's query_key_value), which
 * no fused SDPA kernel takes in fp32 (est_attention_math). */
static int fused_grouped(const struct est_model *m, const struct mt_frame *f)
{
    size_t nl = 0, first = SIZE_MAX;
    for (size_t i = f->first; i < m->n; i++)
        if (m->layers[i].kind == EST_K_LINEAR && nl++ == 0)
            first = i;
    if (nl != 2 || !f->width)
        return 0;
    const struct est_layer *l = &m->layers[first];
    uint64_t e = f->width;
    return l->out > e && l->out < 3 * e && (l->out - e) % 2 == 0 && linear_reads(l, e);
}

/* Reverses rows [a, b). */
static void rows_reverse(struct est_layer *r, size_t a, size_t b)
{
    while (a + 1 < b) {
        struct est_layer t = r[a];
        r[a++] = r[--b];
        r[b] = t;
    }
}

/* A norm or dropout printed without a size, which the parser sized from the tensor before
 * it (`from` features), reads `to` features: its output and a norm's per-feature scale
 * (and shift) follow. */
static void resize_unsized(struct est_model *m, struct est_layer *t, uint64_t from,
                           uint64_t to)
{
    if (t->kind == EST_K_NORM && t->params % from == 0) {
        uint64_t p = t->params / from * to;
        m->params = m->params - t->params * t->count + p * t->count;
        t->params = p;
    }
    t->out = to;
}

/* Block f of a sequence model closes (named children: a Sequential runs in its listed
 * order). A module tree lists modules in definition order, and an output head over the
 * vocabulary runs last wherever it is listed: litgpt's GPT defines lm_head before its
 * transformer, and weight tying is often written wte, lm_head, then the layers. The
 * token table is f's table with the most rows, V x E: a position or token-type table
 * has fewer (what a linear layer maps to is no evidence: a projection may match a
 * position table's rows). The body is the first child, at or after the one holding
 * that table, that holds a checkpointing unit (a ModuleList's layers). A direct child
 * holding no unit, listed before the token table's child, or after it and before the
 * body, whose last linear layer maps E features to V (Linear(E -> V), tied or not), is
 * the head: its rows move to the end of f, and the norms and dropouts after it that
 * took its width (they print no size) get E back. Without a body, the children after
 * the table keep their place (an embedding, a head, a softmax: that may be the call
 * order). A child listed before the table whose last linear layer maps E to more than E
 * features but not to V may be a head or a projection run right after the embedding,
 * which the print does not say: refused, naming its line and the table's. A narrower
 * one (a classifier defined first) stays, the safe side, and so do children holding
 * units before the table (a body defined before its embedding). */
static int head_last(struct est_model *m, const struct mt_frame *f, const char *file,
                     struct carma_err *err)
{
    unsigned nk = f->child < MT_KIDS ? f->child : MT_KIDS;
    if (nk < 2)
        return 0;
    size_t j = SIZE_MAX; /* the token table's row: the first of the most rows */
    uint64_t v = 0;
    for (size_t r = f->first; r < m->n; r++) {
        const struct est_layer *t = &m->layers[r];
        if (t->kind == EST_K_EMBED && t->out && t->params % t->out == 0 && t->params / t->out > v) {
            v = t->params / t->out;
            j = r;
        }
    }
    if (j == SIZE_MAX || j < f->kid[0])
        return 0;
    /* children whose rows are known: each ends where the next begins, the last at m->n */
    unsigned known = f->child > nk ? nk - 1 : nk;
    unsigned cj = 0; /* the child holding row j (past `known`: one not recorded) */
    while (cj + 1 < nk && f->kid[cj + 1] <= j)
        cj++;
    if (cj + 1 == nk && f->child > nk)
        cj = nk;
    uint64_t e = m->layers[j].out;
    size_t line =
        f->tab_rows == v && f->tab_line ? f->tab_line : f->kid_line[cj < nk ? cj : nk - 1];
    size_t h[MT_KIDS]; /* each child's last linear layer */
    unsigned units[MT_KIDS], body = known;
    for (unsigned i = 0; i < known; i++) {
        h[i] = SIZE_MAX;
        units[i] = 0;
        for (size_t r = f->kid[i], b = i + 1 < nk ? f->kid[i + 1] : m->n; r < b; r++) {
            if (m->layers[r].kind == EST_K_LINEAR)
                h[i] = r;
            units[i] |= m->layers[r].unit;
        }
        if (units[i] && i >= cj && body == known)
            body = i; /* from here on the rows are in call order */
    }
    size_t lo[MT_KIDS], len[MT_KIDS];
    unsigned nh = 0;
    for (unsigned i = 0; i < body; i++) {
        /* after the table, only with a body after it: without one (an embedding, a head,
         * a softmax) the listed order may well be the call order */
        if (i == cj || h[i] == SIZE_MAX || units[i] || (i > cj && body == known))
            continue;
        const struct est_layer *l = &m->layers[h[i]];
        if (l->out == v && linear_reads(l, e)) {
            lo[nh] = f->kid[i];
            len[nh++] = (i + 1 < nk ? f->kid[i + 1] : m->n) - f->kid[i];
        } else if (i < cj && linear_reads(l, e) && l->out > e && !m->patch_h) {
            return carma_err_at(err, file, f->kid_line[i],
                                "a linear layer (%llu -> %llu features) listed before the "
                                "token embedding (line %zu): a module tree lists modules as "
                                "defined, and this one may be an output head, which runs "
                                "last, or a projection run after the embedding; give a "
                                "torchinfo table (it lists layers in call order)",
                                (unsigned long long)e, (unsigned long long)l->out, line);
        }
    }
    /* The norms and dropouts listed after a head that print no size took its width (the
     * parser sizes them from the tensor before): they read E. A sized row ends that, and
     * so does an activation or softmax, which may be the head's own (left V wide: the
     * safe side). */
    for (unsigned k = 0; k < nh; k++) {
        uint64_t hv = 0;
        for (size_t r = lo[k]; r < lo[k] + len[k]; r++) {
            uint8_t kd = m->layers[r].kind;
            if (kd == EST_K_LINEAR || kd == EST_K_EMBED || kd == EST_K_NORM)
                hv = m->layers[r].out;
        }
        for (size_t r = lo[k] + len[k]; hv && hv != e && r < m->n; r++) {
            struct est_layer *t = &m->layers[r];
            if (t->kind == EST_K_OTHER && t->out != hv)
                continue;
            if ((t->kind != EST_K_NORM && t->kind != EST_K_DROPOUT) || t->out != hv)
                break;
            resize_unsized(m, t, hv, e);
        }
    }
    /* each head to the end, in listed order: the later ones have moved up by then */
    size_t shift = 0;
    for (unsigned k = 0; k < nh; k++) {
        size_t a = lo[k] - shift, b = a + len[k];
        rows_reverse(m->layers, a, b);
        rows_reverse(m->layers, b, m->n);
        rows_reverse(m->layers, a, m->n);
        shift += len[k];
    }
    return 0;
}

/* Block f closes (named children). A head listed after the vocabulary head that runs on
 * the hidden state, not on the logits (TRL's AutoModelForCausalLMWithValueHead: the
 * causal LM with lm_head E -> V, then v_head's dropout and Linear(E -> 1);
 * GPT2DoubleHeadsModel's multiple-choice head; BertForPreTraining's seq_relationship),
 * took the loss on its narrow output, and the vocabulary-wide logits, their
 * log-softmax and its gradient were never counted: a job that computes both (PPO's
 * log-probabilities over the vocabulary) was estimated below the LM alone. Where f's
 * rows hold the token table (the embedding with the most rows, V x E) and a linear
 * layer E -> V (the last such) followed, before any activation or softmax, by
 * dropouts and norms that print no size (sized from the logits: they read E) and a
 * linear layer that reads E features, the vocabulary head moves to f's end, reading
 * the hidden state that later head reads (est_layer.shares_input: its own 16-bit copy
 * under autocast); the loss is then taken on the logits. */
static void vocab_head_last(struct est_model *m, const struct mt_frame *f)
{
    size_t j = SIZE_MAX, h = SIZE_MAX, r;
    uint64_t v = 0;
    for (r = f->first; r < m->n; r++) {
        const struct est_layer *t = &m->layers[r];
        if (t->kind == EST_K_EMBED && t->out && t->params % t->out == 0 && t->params / t->out > v) {
            v = t->params / t->out;
            j = r;
        }
    }
    if (j == SIZE_MAX)
        return;
    uint64_t e = m->layers[j].out;
    if (e == v)
        return;
    for (r = j + 1; r < m->n; r++)
        if (m->layers[r].out == v && linear_reads(&m->layers[r], e))
            h = r;
    if (h == SIZE_MAX)
        return;
    for (r = h + 1; r < m->n && m->layers[r].kind != EST_K_LINEAR; r++) {
        const struct est_layer *t = &m->layers[r];
        if (t->kind != EST_K_OTHER &&
            ((t->kind != EST_K_DROPOUT && t->kind != EST_K_NORM) || t->out != v))
            return;
    }
    if (r == m->n || m->layers[r].out == v || !linear_reads(&m->layers[r], e))
        return;
    for (size_t q = h + 1; q < r; q++) {
        struct est_layer *t = &m->layers[q];
        if (t->kind != EST_K_OTHER)
            resize_unsized(m, t, v, e);
    }
    struct est_layer hd = m->layers[h];
    memmove(&m->layers[h], &m->layers[h + 1], (m->n - h - 1) * sizeof hd);
    hd.shares_input = 1;
    m->layers[m->n - 1] = hd;
}

/* PyTorch's nn.TransformerEncoderLayer and nn.TransformerDecoderLayer apply their
 * activation between linear1 and dropout: F.relu by default, F.gelu for "gelu", a function
 * the print does not show (a module passed as `activation` prints, after dropout2, and
 * plain_mlp moves it). Block f of that class with its two linear layers and no activation
 * module gets a ReLU row after linear1, at its width: ReLU keeps its output (GELU would
 * keep its input, as large). 1 when it added it, -1 when the model is full. */
static int ffn_activation(struct est_model *m, const struct mt_frame *f)
{
    if (f->ndlin != 2 || f->ndact != 0)
        return 0;
    size_t a = f->dlin[0];
    const struct est_layer *l1 = &m->layers[a];
    if (est_model_add(m, EST_K_ACT, l1->out, 0, l1->count, l1->per_token) < 0)
        return -1;
    struct est_layer row = m->layers[m->n - 1];
    est_layer_type(&row, "ReLU", 4);
    memmove(&m->layers[a + 2], &m->layers[a + 1], (m->n - a - 2) * sizeof row);
    m->layers[a + 1] = row;
    return 1;
}

/* "12 x BertLayer" prefix: returns the count (1 when absent) and advances *c. */
static int64_t mt_repeat(const char **c, size_t *cn)
{
    const char *s = *c;
    size_t n = *cn, i = 0;
    int64_t v = 0;
    while (i < n && isdigit((unsigned char)s[i]) && v < 1000000)
        v = v * 10 + (s[i++] - '0');
    if (i == 0 || n - i < 3 || memcmp(s + i, " x ", 3) != 0)
        return 1;
    if (v < 1 || v >= 1000000)
        return -1;
    *c = s + i + 3;
    *cn = n - i - 3;
    return v;
}

static int ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '.';
}

/* ---- profiler statistics in a module tree ----
 *
 * ptflops' get_model_complexity_info(print_per_layer_stat=True) and DeepSpeed's flops
 * profiler print the module tree with their statistics put before each module's own
 * arguments (its extra_repr), joined by ", ":
 *   ptflops:          0.002 M, 0.008% Params, 0.002 GMac, 0.288% MACs, 3, 64, kernel_size=...
 *   DeepSpeed:        9.47 K = 0.01% Params, 118.01 MMACs = 0.57% MACs, 183.36 us = 0.12%
 *                     latency, 1.29 TFLOPS, 3, 64, kernel_size=...
 *   DeepSpeed < 0.6:  9.47 K, 0.01% Params, 118.01 MMACs, 0.57% MACs, 183.36 us, 0.12%
 *                     latency, 1.29 TFLOPS, 3, 64, ...
 * A block with no arguments of its own gets a line of its statistics alone. */

struct stat_item {
    double v;       /* the leading number */
    int decimals;   /* digits after its point */
    int pct;        /* "N% Word" */
    int eq;         /* "N Unit = P% Word" */
    char unit[12];  /* the letters after the number ("M", "GMac", "MMACs", "us", "TFLOPS") */
    char word[12];  /* after the percentage: "Params", "MACs", "latency" */
};

/* Letters at *p (at most cap - 1 kept), advancing *p. */
static void stat_letters(const char **p, const char *e, char *out, size_t cap)
{
    size_t k = 0;
    while (*p < e && isalpha((unsigned char)**p)) {
        if (k + 1 < cap)
            out[k++] = **p;
        (*p)++;
    }
    out[k] = '\0';
}

/* A number at *p: digits, an optional fraction and exponent. 0 when none. */
static int stat_number(const char **p, const char *e, double *v, int *decimals)
{
    const char *q = *p;
    char t[40];
    size_t k = 0;
    int dec = 0, digits = 0;
    while (q < e && isdigit((unsigned char)*q) && k < 30) {
        t[k++] = *q++;
        digits++;
    }
    if (q < e && *q == '.' && k < 30) {
        t[k++] = *q++;
        while (q < e && isdigit((unsigned char)*q) && k < 30) {
            t[k++] = *q++;
            dec++;
        }
    }
    if (!digits)
        return 0;
    if (q + 1 < e && (*q == 'e' || *q == 'E') && (q[1] == '-' || q[1] == '+' ||
                                                  isdigit((unsigned char)q[1]))) {
        t[k++] = *q++;
        while (q < e && (isdigit((unsigned char)*q) || *q == '-' || *q == '+') && k < 38)
            t[k++] = *q++;
    }
    t[k] = '\0';
    *v = strtod(t, NULL);
    *decimals = dec;
    *p = q;
    return 1;
}

/* One statistic item at *p, up to the next ", " or the end: "N[ Unit]", "N% Word" or
 * "N[ Unit] = P% Word". 0 when it is none. */
static int stat_item(const char **p, const char *e, struct stat_item *it)
{
    const char *q = *p;
    memset(it, 0, sizeof *it);
    if (!stat_number(&q, e, &it->v, &it->decimals))
        return 0;
    if (q < e && *q == '%') {
        q++;
        if (q >= e || *q != ' ')
            return 0;
        q++;
        it->pct = 1;
        stat_letters(&q, e, it->word, sizeof it->word);
    } else {
        if (q < e && *q == ' ' && q + 1 < e && isalpha((unsigned char)q[1]))
            q++;
        stat_letters(&q, e, it->unit, sizeof it->unit);
        if (e - q >= 3 && memcmp(q, " = ", 3) == 0) {
            q += 3;
            double pv;
            int pd;
            if (!stat_number(&q, e, &pv, &pd) || e - q < 2 || memcmp(q, "% ", 2) != 0)
                return 0;
            q += 2;
            it->eq = 1;
            stat_letters(&q, e, it->word, sizeof it->word);
        }
    }
    if (q < e && *q != ',' && *q != ')')
        return 0;
    *p = q;
    return 1;
}

static int ends_in(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* The parameters a statistic item's "N Unit" stands for, and half its last digit. */
static void stat_params(const struct stat_item *it, double *v, double *tol)
{
    double u = 1;
    switch (it->unit[0]) {
    case 'k':
    case 'K': u = 1e3; break;
    case 'M': u = 1e6; break;
    case 'B':
    case 'G': u = 1e9; break;
    case 'T': u = 1e12; break;
    default: break;
    }
    *v = it->v * u;
    *tol = 0.5 * u * pow(10, -it->decimals);
}

/* Profiler statistics at the start of a module's arguments a[0, n): the tool
 * (EST_PROF_PTFLOPS, EST_PROF_DEEPSPEED) and in *skip the bytes they take with the ", "
 * after them; the parameters they give (*params, within *tol). 0: none. */
static int profiler_stats(const char *a, size_t n, size_t *skip, double *params, double *tol)
{
    struct stat_item it[7];
    const char *p = a, *e = a + n;
    unsigned k = 0;
    while (k < 7 && stat_item(&p, e, &it[k])) {
        k++;
        if (e - p >= 2 && p[0] == ',' && p[1] == ' ')
            p += 2;
        else
            break;
    }
    int tool = 0;
    unsigned used = 0;
    if (k >= 4 && it[0].eq && !strcmp(it[0].word, "Params") && it[1].eq &&
        !strcmp(it[1].word, "MACs") && it[2].eq && !strcmp(it[2].word, "latency") &&
        !it[3].pct && !it[3].eq && ends_in(it[3].unit, "FLOPS")) {
        tool = EST_PROF_DEEPSPEED;
        used = 4;
    } else if (k >= 7 && !it[0].pct && !it[0].eq && it[1].pct &&
               !strcmp(it[1].word, "Params") && ends_in(it[2].unit, "MACs") && it[3].pct &&
               !strcmp(it[3].word, "MACs") && it[5].pct && !strcmp(it[5].word, "latency") &&
               ends_in(it[6].unit, "FLOPS")) {
        tool = EST_PROF_DEEPSPEED;
        used = 7;
    } else if (k >= 4 && !it[0].pct && !it[0].eq && it[1].pct &&
               !strcmp(it[1].word, "Params") && ends_in(it[2].unit, "Mac") && it[3].pct &&
               !strcmp(it[3].word, "MACs")) {
        tool = EST_PROF_PTFLOPS;
        used = 4;
    }
    if (!tool)
        return 0;
    /* past the items used and the ", " after them (none after the last at the end) */
    p = a;
    for (unsigned i = 0; i < used; i++) {
        struct stat_item t;
        stat_item(&p, e, &t);
        if (p < e && *p == ',')
            p++;
        while (p < e && *p == ' ')
            p++;
    }
    *skip = (size_t)(p - a);
    stat_params(&it[0], params, tol);
    return tool;
}

/* A part of a detection model's training that no print sizes: torchvision's
 * GeneralizedRCNNTransform (every torchvision detector: Faster/Mask/Keypoint R-CNN,
 * RetinaNet, FCOS, SSD), RegionProposalNetwork and RoIHeads, detectron2's GeneralizedRCNN
 * and ProposalNetwork meta-architectures, its RPN and *ROIHeads, and the RoI poolers. */
static int detection_part(const char *c, size_t n)
{
    static const char *const names[] = {"GeneralizedRCNNTransform", "GeneralizedRCNN",
                                        "RegionProposalNetwork", "RPN", "ProposalNetwork",
                                        "MultiScaleRoIAlign", "ROIPooler"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (name_is(c, n, names[i]))
            return 1;
    return n >= 8 && (memcmp(c + n - 8, "ROIHeads", 8) == 0 || memcmp(c + n - 8, "RoIHeads", 8) == 0);
}


/* A per-channel scale printed without its size (timm's LayerScale and LayerScale2d,
 * transformers' Dinov2LayerScale): `x * gamma`, a new tensor of the one before it that
 * keeps it for gamma's gradient, and gamma's parameters, one per channel. Not a class
 * named Scale alone: timm's MetaFormer scales per channel with one (PoolFormer), FCOS's
 * heads by one scalar. */
static int layer_scale_leaf(enum est_kind k, const char *c, size_t n, size_t argn)
{
    return k == EST_K_OTHER && !argn &&
           (name_ends(c, n, "LayerScale") || name_ends(c, n, "LayerScale2d"));
}

/* ConvNeXt's block scales its branch by a parameter of one value per channel that is no
 * module, so no print shows it: torchvision's CNBlock (`self.layer_scale * ...`), timm's
 * ConvNeXtBlock (`x.mul(self.gamma...)`) and transformers' ConvNextLayer
 * (`self.layer_scale_parameter * x`), each there by default; not in ConvNeXt V2's blocks
 * (a global response norm inside, mt_frame.grn), which timm builds from the same class. */
static int hidden_layer_scale(const char *c, size_t n)
{
    return name_is(c, n, "CNBlock") || name_is(c, n, "ConvNeXtBlock") ||
           name_is(c, n, "ConvNextLayer");
}

/* A per-channel scale of the newest tensor: its elements (*e) and parameters (*c, one a
 * channel); 0 when there is no tensor to scale. */
static int layer_scale_size(struct mt_space *sp, uint64_t *e, uint64_t *c)
{
    const struct mt_shape *nw = sp_newest(sp);
    *e = nw ? sp_elems(nw->c, nw->h, nw->w) : 0;
    *c = *e ? nw->c : 0;
    return *e != 0;
}

/* The product of a hidden layer scale (hidden_layer_scale) when its block closes: a row
 * for a new tensor of the branch's shape that keeps the branch's output for the
 * parameter's gradient, with the C trained parameters. -1 when the layers do not fit. */
static int layer_scale_row(struct est_model *m, struct mt_space *sp, uint32_t mult)
{
    uint64_t e, c;
    if (!layer_scale_size(sp, &e, &c))
        return 0;
    if (est_model_add(m, EST_K_POOL, e, c, mult, 0) < 0)
        return -1;
    est_layer_type(&m->layers[m->n - 1], "Mul", 3);
    m->layers[m->n - 1].flags |= EST_LF_PRODUCT;
    return 0;
}

/* Moves the model's last row to row `at` (when before it), the rows from there on one
 * later: an attention block's probabilities, added as it closes, into call order. */
static void last_row_to(struct est_model *m, size_t at)
{
    if (at + 1 >= m->n)
        return;
    struct est_layer a = m->layers[m->n - 1];
    memmove(&m->layers[at + 1], &m->layers[at], (m->n - 1 - at) * sizeof a);
    m->layers[at] = a;
}

/* A patch merging block opens (sp.grid): its forward joins each 2 x 2 neighbourhood of
 * the newest C-channel grid (torch.cat of four strided views, the grid padded to even
 * sides) into a new 4C tensor at half the height and width, which its norm and
 * reduction then read: a row of its own ("cat"). -1 when the layers do not fit. */
static int grid_merge(struct est_model *m, struct mt_space *sp, struct mt_frame *f)
{
    const struct mt_shape *nw = sp_newest(sp);
    uint64_t h = (nw->h + 1) / 2, w = (nw->w + 1) / 2;
    uint64_t e = sp_elems(4 * nw->c, h, w);
    if (!e || est_model_add(m, EST_K_POOL, e, 0, f->mult, 0) < 0)
        return -1;
    est_layer_type(&m->layers[m->n - 1], "cat", 3);
    f->cat = *sp_push(sp, 4 * nw->c, h, w, 1);
    return 0;
}

/* The patch merging block f closes. torchvision, transformers and timm's older Swin list
 * its reduction (4C -> 2C) before its norm (over 4C) but run the norm first: the rows go
 * in call order, and the reduction's output is the newest tensor. -1 when the block holds
 * no linear reduction or a convolution (a merging that is not Swin's). */
static int grid_merged(struct est_model *m, struct mt_space *sp, const struct mt_frame *f)
{
    size_t lin = SIZE_MAX, norm = SIZE_MAX;
    for (size_t i = f->first; i < m->n; i++) {
        if (m->layers[i].kind == EST_K_LINEAR && lin == SIZE_MAX)
            lin = i;
        else if (m->layers[i].kind == EST_K_NORM && norm == SIZE_MAX)
            norm = i;
        else if (m->layers[i].kind == EST_K_CONV)
            return -1;
    }
    if (lin == SIZE_MAX)
        return -1;
    /* the norm goes first when it is over the joined 4C (Swin V1's), not the reduction's */
    if (norm != SIZE_MAX && lin < norm && m->layers[norm].out == m->layers[f->first].out) {
        struct est_layer t = m->layers[lin];
        m->layers[lin] = m->layers[norm];
        m->layers[norm] = t;
        lin = norm;
    }
    uint64_t hw = f->cat.h * f->cat.w;
    if (hw && m->layers[lin].out % hw == 0)
        sp_push(sp, m->layers[lin].out / hw, f->cat.h, f->cat.w, 0);
    return 0;
}

/* Attention block f of a convolutional tree or grid closes with `probs` probabilities a
 * sample (not per token), `params` of its own (a bias table, a logit scale), `heads`
 * heads assumed (the first such block's are the model's heads_assumed) and `flags`: its
 * row, moved to attn_at, before its output projection. -1 when it does not fit. */
static int sample_probs_row(struct est_model *m, const struct mt_frame *f, uint64_t probs,
                            uint64_t params, uint64_t heads, unsigned flags, size_t attn_at)
{
    if (!probs || est_model_add(m, EST_K_ATTN, probs, params, f->mult, 0) < 0)
        return -1;
    struct est_layer *al = &m->layers[m->n - 1];
    al->attn = 0;
    al->heads_src = EST_HEADS_ASSUMED;
    al->flags |= (uint32_t)flags;
    if (!m->heads_assumed)
        m->heads_assumed = heads > UINT32_MAX ? UINT32_MAX : (uint32_t)heads;
    if (!m->attn_line)
        m->attn_line = f->line;
    last_row_to(m, attn_at);
    return 0;
}

/* The heads of attention over a grid or a convolutional tensor of `width` channels:
 * EST_WINDOW_HEAD channels each, at least one. */
static uint64_t window_heads(uint64_t width)
{
    return width / EST_WINDOW_HEAD ? width / EST_WINDOW_HEAD : 1;
}

/* The probabilities of windowed attention over the newest grid (sp.grid) with `heads`
 * heads: softmax over EST_WINDOW^2 patches for each patch and head, in windows covering
 * the grid padded to whole windows; *table the heads' relative position bias table,
 * (2 EST_WINDOW - 1)^2 entries a head. 0 without a grid. */
static uint64_t grid_attention(struct mt_space *sp, uint64_t heads, uint64_t *table)
{
    const struct mt_shape *nw = sp_newest(sp);
    *table = (2 * EST_WINDOW - 1) * (2 * EST_WINDOW - 1) * heads;
    if (!nw || nw->h > (1u << 20) || nw->w > (1u << 20))
        return 0;
    uint64_t wins = ((nw->h + EST_WINDOW - 1) / EST_WINDOW) *
                    ((nw->w + EST_WINDOW - 1) / EST_WINDOW);
    return wins * heads * EST_WINDOW * EST_WINDOW * EST_WINDOW * EST_WINDOW;
}

/* Block f of a convolutional tree closes. Its branches join (a concatenation is a new
 * tensor); a squeeze-excitation block (a global pool first, a sigmoid gate) scales its
 * input, so its output has the input's shape; and an activation module listed once in
 * a block with convolutions (torchvision's ResNet blocks: `relu` applied after every
 * norm) runs after each direct-child norm no activation follows, unless the children
 * are numbered (a Sequential calls each once: ShuffleNet's branch1, ConvNeXt's block).
 * -1 when the layers do not fit. */
static int spatial_close(struct est_model *m, struct mt_space *sp, struct mt_frame *f)
{
    norm_settle(f, 0);
    if (f->nbranch >= 2) {
        branch_end(f, sp_newest(sp));
        uint64_t e = f->bhw_same ? sp_elems(f->bsum, f->bfirst.h, f->bfirst.w) : 0;
        if (e && !f->bsame) {
            m->concat += e;
            sp_push(sp, f->bsum, f->bfirst.h, f->bfirst.w, 1);
        } else if (e) {
            sp_push(sp, f->bsum, f->bfirst.h, f->bfirst.w, 1)->pending = 1;
        }
    }
    if (f->se_pool && f->gate && f->has_x) {
        /* printed fc1, fc2, activation, gate; called fc1, activation, fc2, gate */
        for (size_t i = f->first; i < m->n && f->squeeze; i++)
            if (m->layers[i].kind == EST_K_ACT && i != f->gate_row)
                m->layers[i].out = f->squeeze;
        sp_push(sp, f->xv.c, f->xv.h, f->xv.w, 0);
    }
    if (f->se_pool && f->radix_sum.c) /* (x * attention).sum(1) over the radix groups */
        sp_push(sp, f->radix_sum.c, f->radix_sum.h, f->radix_sum.w, 0);
    if (hidden_layer_scale(f->cls, f->cls_n) && !f->grn && layer_scale_row(m, sp, f->mult) < 0)
        return -1;
    if (!f->has_conv || f->nact != 1 || f->nbare == 0 || f->numbered)
        return 0;
    if (m->n + f->nbare > m->cap)
        return -1;
    for (unsigned b = f->nbare; b-- > 0;) {
        size_t i = f->bare[b];
        struct est_layer act = m->layers[i];
        act.kind = f->act_kind;
        act.flags = f->act_flags;
        act.params = 0;
        memmove(&m->layers[i + 2], &m->layers[i + 1], (m->n - i - 1) * sizeof act);
        m->layers[i + 1] = act;
        m->n++;
        if (i < sp->pool_row && sp->pool_row < m->n) /* the pooled rows moved down */
            sp->pool_row++;
        if (i < sp->pool_gate_row && sp->pool_gate_row < m->n)
            sp->pool_gate_row++;
    }
    return 0;
}

/* The nearest block around depth in role MT_P_LORA, or NULL. */
static struct mt_frame *lora_frame(struct mt_frame *st, int depth)
{
    for (int d = depth; d >= 0; d--)
        if (st[d].peft == MT_P_LORA)
            return &st[d];
    return NULL;
}

/* A lora.* block closes: its base row gains the adapter (rank r, r (in + out) trained
 * parameters), and keeps its own parameters frozen. */
static int lora_close(struct est_model *m, struct mt_frame *f, const char *file, size_t line,
                      struct carma_err *err)
{
    if (f->lora_row == SIZE_MAX)
        return carma_err_at(err, file, f->line,
                            "a LoRA block without a base_layer (peft before 0.7 printed "
                            "its layers this way): give a torchinfo table");
    if (!f->lora_rank)
        return 0; /* no adapter shown (a disabled one): a frozen layer */
    struct est_layer *l = &m->layers[f->lora_row];
    if (l->params + f->lora_params > EST_MAX_PARAMS || f->lora_rank > UINT32_MAX ||
        f->lora_params > (EST_MAX_PARAMS * 16 - m->params) / l->count)
        return carma_err_at(err, file, line, "LoRA adapter too large");
    l->frozen = l->params;
    l->params += f->lora_params;
    l->rank = (uint32_t)f->lora_rank;
    m->params += f->lora_params * l->count;
    if (f->lora_drop)
        l->flags |= EST_LF_LORA_DROP;
    return 0;
}

/* A sequence model whose print has a token table of v rows and e columns, no linear
 * layer mapping to v, and a norm as its last layer that makes a tensor (dropouts, tables
 * listed after it and modules of no known kind aside): its logits come from the table
 * itself, a head tied in forward (OLMo's F.linear(x, wte.weight)), which the print does
 * not show, and without it the replay would take the loss on the norm's output, not on
 * v-wide logits. Appends that head, a linear layer e -> v without bias: its weight counted
 * apart from the table, as a printed tied head's is (the safe side). Encoders ending in
 * a pooler or a classifier, and models with a printed head, are left as they are. 1 when
 * it added the head, 0 when not, -1 when the model is full. */
static int tied_head(struct est_model *m, uint64_t v, uint64_t e)
{
    if (!v || !e || m->patch_h)
        return 0;
    for (size_t i = 0; i < m->n; i++)
        if (m->layers[i].kind == EST_K_LINEAR && m->layers[i].out == v)
            return 0;
    size_t r = m->n;
    while (r-- > 0) {
        uint8_t k = m->layers[r].kind;
        if (k != EST_K_DROPOUT && k != EST_K_OTHER && k != EST_K_EMBED)
            break;
    }
    if (r >= m->n || m->layers[r].kind != EST_K_NORM)
        return 0;
    uint64_t p = param_count(e, v, 0);
    if (p == UINT64_MAX || est_model_add(m, EST_K_LINEAR, v, p, 1, 1) < 0)
        return -1;
    est_layer_type(&m->layers[m->n - 1], "Linear", 6);
    return 1;
}

/* The output head of the token table (v rows of width e, the first such table at row
 * *table): the last linear layer from e features to v, one repeat, trained or frozen as
 * the table is (called after a PEFT print's freeze), without an adapter and not a
 * modules_to_save copy; its row, or m->n when there is none. */
static size_t head_of_table(const struct est_model *m, uint64_t v, uint64_t e, size_t *table)
{
    *table = m->n;
    if (!v || !e || v > UINT64_MAX / e)
        return m->n;
    for (size_t i = 0; i < m->n && *table == m->n; i++) {
        const struct est_layer *l = &m->layers[i];
        if (l->kind == EST_K_EMBED && l->params == v * e && l->count == 1 &&
            !(l->flags & EST_LF_TIED))
            *table = i;
    }
    if (*table == m->n)
        return m->n;
    int frozen = m->layers[*table].frozen != 0;
    for (size_t i = m->n; i-- > 0;) {
        const struct est_layer *l = &m->layers[i];
        if (l->kind == EST_K_LINEAR && l->out == v && l->count == 1 && !l->rank &&
            !(l->flags & (EST_LF_TIED | EST_LF_TRAINED)) &&
            (l->params == v * e || l->params == v * e + v) && (l->frozen != 0) == frozen &&
            (!frozen || l->frozen == l->params))
            return i;
    }
    return m->n;
}

/* The storage (est_layer.wbits) of a linear layer of class [c, c + cls_n) with arguments
 * [a, a + an) and in_f inputs whose weight is kept quantized, which no optimizer can
 * train; 0 for any other class. bitsandbytes' Linear4bit (LinearNF4, LinearFP4) and
 * Linear8bitLt hold a Params4bit / Int8Params without gradient: 4 and 8. AutoAWQ's
 * WQLinear_* (`w_bit=`, `group_size=`) pack w_bit bits a weight into int32 buffers, with
 * an fp16 scale and a packed zero per group: the smallest storage class at or above
 * that. HQQ's HQQLinear packs 1 to 8 bits with a scale and zero per group, but its print
 * gives neither: 16, the most it can take. Other quantized classes (Brevitas' QuantLinear,
 * torchao, quanto) may train their weights (quantization-aware training) and are read
 * as printed. */
static int quant_bits(const char *c, size_t cls_n, const char *a, size_t an, int64_t in_f)
{
    if (find(c, cls_n, "4bit") || name_is(c, cls_n, "LinearNF4") ||
        name_is(c, cls_n, "LinearFP4"))
        return 4;
    if (find(c, cls_n, "8bit"))
        return 8;
    if (cls_n >= 9 && memcmp(c, "HQQLinear", 9) == 0)
        return 16;
    int64_t wb = arg_int(a, an, "w_bit="), g = arg_int(a, an, "group_size=");
    if (!find(c, cls_n, "WQLinear") || wb < 1 || wb > 8)
        return 0;
    if (g <= 0)
        g = in_f > 0 ? in_f : 1;
    double b = (double)wb / 8 + ((double)wb / 8 + 2) / (double)g; /* bytes a weight */
    return b <= 0.5 + 4.0 / 64 ? 4 : b <= 1 ? 8 : b <= 2 ? 16 : 0;
}

/* Up to 60 bytes of [s, s + n), quoted for a message. */
static struct carma_quoted quote_line(const char *s, size_t n)
{
    char t[64];
    size_t k = n < sizeof t - 1 ? n : sizeof t - 1;
    memcpy(t, s, k);
    t[k] = '\0';
    return carma_quote(t, 60);
}

/* Line `line`, [s, s + n), of block f is no `(name): Module(...)` child. PyTorch prints
 * a module that has both an extra_repr and children as `Class(`, the extra_repr on its
 * own line, the children, `)`. peft before 0.7 prints a LoRA layer so: `Linear4bit(`
 * (`Linear8bitLt(`, `Linear(`), then `in_features=.., out_features=.., bias=..`, then
 * `(lora_dropout)`, `(lora_A)`, `(lora_B)`: the layer is its own frozen base, as peft
 * >= 0.7's `lora.Linear4bit(` with its `(base_layer)`. Read here as that child, so the
 * rest of the parser sees the later layout: *lora set, syn the leaf `Class(args)` and
 * *nm "base_layer". Elsewhere the line is the block's own arguments, read as a leaf of
 * its class named as the block (its first child), where the parser sizes that class from
 * its arguments (linear, embedding, norm, convolution, pooling: transformers' BitMaxPool2d
 * holds its padding module); refused otherwise, and when it is not the block's first
 * line (a second line, or after a child: an edited print), and when it is "..." (a print
 * with layers left out). L is the reader past the line (the
 * next line is peeked, not read). */
static int own_args(struct mt_frame *f, const char *s, size_t n, const struct lines *L,
                    char *syn, size_t cap, size_t *synn, const char **nm, size_t *nn,
                    int *lora, const char *file, struct carma_err *err)
{
    size_t line = L->line;
    size_t dots = 0;
    while (dots < n && (s[dots] == '.' ||
                        (n - dots >= 3 && memcmp(s + dots, "\xe2\x80\xa6", 3) == 0)))
        dots += s[dots] == '.' ? 1 : 3; /* "..." or U+2026 */
    if (dots == n)
        return carma_err_at(err, file, line,
                            "'%s': part of the print left out; carma needs every layer: "
                            "give the whole print",
                            quote_line(s, n).s);
    if (f->own_line)
        return carma_err_at(err, file, line,
                            "'%s': a second line of arguments of the %.*s block opened at "
                            "line %zu (an extra_repr over several lines), which carma does not "
                            "read; give a torchinfo table",
                            quote_line(s, n).s, (int)f->cls_n, f->cls, f->line);
    if (f->child)
        return carma_err_at(err, file, line,
                            "'%s' is no '(name): Module(...)' line, and it follows children of "
                            "the %.*s block opened at line %zu, where PyTorch prints none (a "
                            "block's own arguments come before its children): an edited or "
                            "rewrapped print? give the print as PyTorch writes it, or a "
                            "torchinfo table",
                            quote_line(s, n).s, (int)f->cls_n, f->cls, f->line);
    struct lines pk = *L;
    struct carma_err perr;
    const char *ps = NULL;
    size_t pn = 0;
    while (lines_next(&pk, &ps, &pn, &perr) == 1) {
        trim(&ps, &pn);
        if (pn)
            break;
    }
    enum est_kind k = est_kind_classify(f->cls, f->cls_n);
    *lora = pn > 6 && memcmp(ps, "(lora_", 6) == 0;
    if (*lora && (k != EST_K_LINEAR || f->peft != MT_P_NONE))
        return carma_err_at(err, file, line,
                            "'%s': the arguments of the %.*s block opened at line %zu, whose "
                            "children are LoRA parts (peft before 0.7 prints an adapted layer "
                            "so): only adapters on linear layers are modelled; give a "
                            "torchinfo table",
                            quote_line(s, n).s, (int)f->cls_n, f->cls, f->line);
    if (!*lora && ((k != EST_K_LINEAR && k != EST_K_EMBED && k != EST_K_NORM &&
                    k != EST_K_CONV && k != EST_K_POOL) ||
                   f->peft == MT_P_LORA || f->peft == MT_P_MTS))
        return carma_err_at(err, file, line,
                            "'%s': the arguments (extra_repr) of the %.*s block opened at line "
                            "%zu, printed before its children; carma cannot tell what "
                            "parameters of its own they stand for; give a torchinfo table (it "
                            "counts every parameter)%s",
                            quote_line(s, n).s, (int)f->cls_n, f->cls, f->line,
                            k == EST_K_LINEAR || f->peft == MT_P_LORA
                                ? ", or print a PEFT model with peft 0.7 or later"
                                : "");
    if (f->cls_n + n + 3 > cap)
        return carma_err_at(err, file, line, "line too long");
    memcpy(syn, f->cls, f->cls_n);
    syn[f->cls_n] = '(';
    memcpy(syn + f->cls_n + 1, s, n);
    syn[f->cls_n + 1 + n] = ')';
    *synn = f->cls_n + n + 2;
    *nm = *lora ? "base_layer" : f->name;
    *nn = *lora ? 10 : f->name_n;
    f->own_line = line;
    return 0;
}

/* ---- mixture-of-experts blocks (module trees) ------------------------------------- */

/* Rows [a, a + n) and [b, b + n) are the same layers: an expert printed again. */
static int moe_rows_same(const struct est_model *m, size_t a, size_t b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct est_layer *x = &m->layers[a + i], *y = &m->layers[b + i];
        if (x->kind != y->kind || x->out != y->out || x->params != y->params ||
            x->frozen != y->frozen || x->flags != y->flags || x->rank != y->rank ||
            x->wbits != y->wbits || x->keeps != y->keeps || x->count != y->count ||
            x->shares_input != y->shares_input || x->keys != y->keys)
            return 0;
    }
    return 1;
}

/* Class [c, c + n) says mixture of experts: "MoE", "Moe" or "moe" in its name
 * (DeepseekV2MoE, Qwen2MoeSparseMoeBlock). */
static int moe_class(const char *c, size_t n)
{
    for (size_t i = 0; i + 3 <= n; i++)
        if (tolower((unsigned char)c[i]) == 'm' && tolower((unsigned char)c[i + 1]) == 'o' &&
            tolower((unsigned char)c[i + 2]) == 'e')
            return 1;
    return 0;
}

/* Block f received a direct leaf, row m->n - 1, named (nm) on line `line`: a router
 * candidate when it is a linear layer, the gate printed without sizes (DeepSeek's
 * `(gate): MoEGate()`, whose weight is a bare parameter) when it is of no known kind,
 * makes no tensor and its name says gate or router. */
static void moe_leaf(struct mt_frame *f, const struct est_model *m, const char *nm, size_t nn,
                     size_t line)
{
    size_t r = m->n - 1;
    const struct est_layer *l = &m->layers[r];
    f->nleaf++;
    if (l->kind == EST_K_LINEAR && f->nrt < 4)
        f->rt_row[f->nrt++] = r;
    if (l->kind == EST_K_OTHER && !l->out && f->ug_row == SIZE_MAX && nm &&
        (find(nm, nn, "gate") || find(nm, nn, "router"))) {
        f->ug_row = r;
        f->ug_line = line;
    }
}

/* Child block f of block up closed, its rows [f->first, m->n) final. For up as a list:
 * one more entry, the same as the first or not. For up as a mixture-of-experts block: f
 * is a list of identical entries (a ModuleList or ModuleDict of E >= 2 blocks, printed
 * as one `(0-E-1): E x Expert(` repeat or as E blocks with the same class and rows, and
 * no leaf of its own), or a router candidate (its only row that makes a tensor is one
 * linear layer: Switch's router.classifier). */
static void moe_child_closed(const struct est_model *m, struct mt_frame *up,
                             const struct mt_frame *f)
{
    size_t a = f->first, n = m->n - f->first;
    if (up->nblk++ == 0) {
        up->ent_row = a;
        up->ent_rows = n;
        up->ent_e = f->rep;
        up->ent_cls = f->cls;
        up->ent_cls_n = f->cls_n;
        up->ent_same = n > 0;
    } else {
        up->ent_e += f->rep;
        up->ent_same = up->ent_same && f->rep == 1 && up->ent_e == up->nblk &&
                       n == up->ent_rows && f->cls_n == up->ent_cls_n &&
                       memcmp(f->cls, up->ent_cls, f->cls_n) == 0 &&
                       moe_rows_same(m, up->ent_row, a, n);
    }
    if ((name_is(f->cls, f->cls_n, "ModuleList") || name_is(f->cls, f->cls_n, "ModuleDict")) &&
        !f->nleaf && f->ent_same && f->ent_e >= 2 && f->ent_e <= EST_MAX_EXPERTS &&
        up->nxl++ == 0) {
        up->xl_row0 = a;
        up->xl_row1 = m->n;
        up->xl_e = f->ent_e;
        up->xl_nent = f->nblk;
    }
    size_t lin = SIZE_MAX;
    int other = 0;
    for (size_t i = a; i < m->n && !other; i++) {
        const struct est_layer *l = &m->layers[i];
        if (l->kind == EST_K_LINEAR && lin == SIZE_MAX)
            lin = i;
        else if (l->kind != EST_K_OTHER || l->out)
            other = 1;
    }
    if (lin != SIZE_MAX && !other && up->nrt < 4)
        up->rt_row[up->nrt++] = lin;
}

/* Rows [b, b + k) of an expert: three linear layers d -> d of one size, one activation
 * and any dropouts, none read as a gated MLP (gated_mlp tells the down projection by its
 * shape, and here every one has the same): an expert with three projections is a gated
 * MLP, whose down projection any of them may be (the sizes are the same). Rewrites them
 * as gated_mlp does, gate, act, up (EST_LF_GATED), dropouts, down, taking them in listed
 * order; 1 when it did. */
static int moe_gated_equal(struct est_model *m, size_t b, size_t k)
{
    size_t lin[3], act = SIZE_MAX, nl = 0;
    struct est_layer keep[9];
    if (k > 8)
        return 0;
    for (size_t i = b; i < b + k; i++) {
        const struct est_layer *l = &m->layers[i];
        if (l->kind == EST_K_LINEAR && nl < 3)
            lin[nl++] = i;
        else if (l->kind == EST_K_ACT && act == SIZE_MAX)
            act = i;
        else if (!passes_on(l))
            return 0;
        if (l->flags & EST_LF_GATED)
            return 0;
    }
    if (nl != 3 || act == SIZE_MAX)
        return 0;
    const struct est_layer *g = &m->layers[lin[0]];
    for (unsigned j = 1; j < 3; j++) {
        const struct est_layer *l = &m->layers[lin[j]];
        if (l->out != g->out || base_params(l) != base_params(g) || l->frozen != g->frozen ||
            l->rank != g->rank)
            return 0;
    }
    if (!linear_reads(g, g->out))
        return 0;
    size_t n = 0;
    keep[n++] = *g;
    keep[n] = m->layers[act];
    keep[n++].out = g->out;
    keep[n] = m->layers[lin[1]];
    keep[n++].flags |= EST_LF_GATED;
    for (size_t i = b; i < b + k; i++)
        if (passes_on(&m->layers[i]))
            keep[n++] = m->layers[i];
    keep[n++] = m->layers[lin[2]];
    memcpy(&m->layers[b], keep, n * sizeof keep[0]);
    return 1;
}

/* Block f closes (a sequence tree's, named children): is it a mixture-of-experts block?
 * It is when it holds exactly one list of E >= 2 identical entries (moe_child_closed)
 * whose entries are MLPs (linear layers, two at least, the first that makes a tensor
 * reading d features and the last mapping to d; activations and dropouts; no norm,
 * attention, embedding or convolution: a ModuleList of transformer layers is none) and a
 * router beside it: a linear layer d -> E of its own or in a child block of its own,
 * without bias unless f's class says MoE (moe_class; a classifier head has one), or, when
 * it does, a direct leaf named gate or router that prints no size, read as a linear
 * layer d -> E without bias (its weight, E x d, as DeepSeek's MoEGate holds it). f holds
 * nothing else that makes a tensor but linear layers, activations and dropouts (shared
 * experts and their gate; a model's own block has its embedding or norms), and those
 * stay as they are. Puts the router's
 * row right before the experts' (call order: the scores first), marks the rows
 * (est_layer.moe, experts), clears checkpointing units inside the experts (the list's
 * entries, when no unit was around them) and counts the block in m. 1 when it is one, 0
 * when not, -1 when a gate sized so would pass the model's parameter bound. */
static int moe_close(struct est_model *m, const struct mt_frame *f)
{
    if (f->nxl != 1 || f->in_attention || f->numbered || !f->xl_nent)
        return 0;
    uint64_t e = f->xl_e;
    size_t r0 = f->xl_row0, r1 = f->xl_row1, nent = f->xl_nent, k = (r1 - r0) / nent;
    if (!k || k * nent != r1 - r0)
        return 0;
    size_t fi = SIZE_MAX, la = SIZE_MAX;
    unsigned nlin = 0;
    uint64_t d = 0;
    for (size_t i = r0; i < r0 + k; i++) {
        const struct est_layer *l = &m->layers[i];
        if (l->kind == EST_K_OTHER)
            continue;
        if (l->kind != EST_K_LINEAR && l->kind != EST_K_ACT && l->kind != EST_K_DROPOUT)
            return 0;
        if (fi == SIZE_MAX)
            fi = i;
        la = i;
        if (l->kind == EST_K_LINEAR) {
            nlin++;
            d = l->out;
        }
    }
    if (nlin < 2 || m->layers[fi].kind != EST_K_LINEAR || !linear_reads(&m->layers[fi], d))
        return 0;

    for (size_t i = f->first; i < m->n; i++) { /* nothing but MLPs and routers */
        uint8_t kd = m->layers[i].kind;
        if (kd != EST_K_LINEAR && kd != EST_K_ACT && kd != EST_K_DROPOUT && kd != EST_K_OTHER)
            return 0;
    }
    int moe_named = moe_class(f->cls, f->cls_n);
    size_t rr = SIZE_MAX;
    for (unsigned j = 0; j < f->nrt && rr == SIZE_MAX; j++) {
        const struct est_layer *l = &m->layers[f->rt_row[j]];
        if (l->out == e && linear_reads(l, d) && (moe_named || base_params(l) == d * e))
            rr = f->rt_row[j];
    }
    if (rr == SIZE_MAX) {
        if (f->ug_row == SIZE_MAX || !moe_named ||
            (f->ug_row >= r0 && f->ug_row < r1))
            return 0;
        rr = f->ug_row;
        struct est_layer *g = &m->layers[rr];
        uint64_t p = param_count(d, e, 0);
        if (p == UINT64_MAX)
            return 0;
        if (g->params > p)
            p = g->params; /* a `, N params` suffix above E x d: as printed */
        if (g->count && p > (EST_MAX_PARAMS * 16 - (m->params - g->params * g->count)) / g->count)
            return -1;
        m->params += (p - g->params) * g->count;
        g->kind = EST_K_LINEAR;
        g->out = e;
        g->params = p;
        est_layer_type(g, "Linear", 6);
        if (!m->moe_gate_line)
            m->moe_gate_line = f->ug_line;
    }
    size_t off_f = fi - r0, off_l = la - r0;
    struct est_layer rt = m->layers[rr];
    if (rr >= r1) { /* listed after the experts (DeepSeek's gate) */
        memmove(&m->layers[r0 + 1], &m->layers[r0], (rr - r0) * sizeof rt);
        m->layers[r0] = rt;
        r0++;
        r1++;
    } else if (rr + 1 < r0) { /* another child between: the router runs right before */
        memmove(&m->layers[rr], &m->layers[rr + 1], (r0 - 1 - rr) * sizeof rt);
        m->layers[r0 - 1] = rt;
    }
    m->layers[r0 - 1].moe = EST_MOE_ROUTER;
    m->layers[r0 - 1].experts = (uint32_t)e;
    for (size_t j = 0; j < nent; j++) {
        size_t b = r0 + j * k;
        if (off_f == 0 && off_l == k - 1) /* first and last rows linear and made tensors */
            moe_gated_equal(m, b, k);
        for (size_t i = b; i < b + k; i++) {
            m->layers[i].moe = EST_MOE_EXPERT;
            m->layers[i].experts = (uint32_t)e;
            m->layers[i].unit = 0;
        }
        m->layers[b + off_f].moe |= EST_MOE_FIRST;
        m->layers[b + off_l].moe |= EST_MOE_LAST;
    }
    m->moe_blocks += f->mult;
    if (!m->moe_line)
        m->moe_line = f->line;
    if (!m->moe_experts_min || e < m->moe_experts_min)
        m->moe_experts_min = (uint32_t)e;
    if (e > m->moe_experts_max)
        m->moe_experts_max = (uint32_t)e;
    return 1;
}

/* Class [c, c + n) is a module of fused experts, its name ending in "Experts" (Granite's
 * and JetMoE's ParallelExperts, gpt-oss's GptOssExperts, DBRX's DbrxExperts, transformers
 * 5's MixtralExperts): one 3-D parameter per projection holds every expert's, which the
 * print does not size. */
static int moe_fused(const char *c, size_t n)
{
    return n >= 7 && memcmp(c + n - 7, "Experts", 7) == 0;
}

/* Refuses fused experts (moe_fused) printed without sizes (a leaf without arguments, a
 * `, N params` suffix or not; a block with no sized layer), naming the line: read as
 * printed they would add no activations, nor, without a suffix, any parameters. */
static int moe_fused_refuse(const char *file, size_t line, const char *c, size_t n,
                            struct carma_err *err)
{
    return carma_err_at(err, file, line,
                        "%.*s: fused experts that the print does not size (one parameter "
                        "holds every expert's projection): what they hold and keep per token "
                        "would be left out; give a layer CSV with the experts' rows "
                        "(docs/estimator.md)",
                        (int)n, c);
}

/* An encoder-decoder's token table as `shared` printed it (tie_shared). */
struct mt_shared {
    uint64_t params, out;
    int have;
};

/* Hugging Face's encoder-decoders (T5, BART, mBART, Marian, Pegasus) pass one token
 * table, `shared`, to both stacks, whose `embed_tokens` the print then shows again: the
 * first table named `shared` is marked EST_LF_TIED_SRC, a later `embed_tokens` of its size
 * EST_LF_TIED, and its parameters are not counted again. (An output head tied to it
 * cannot be told from an untied one, T5 v1.1's: it stays counted apart.) */
/* Row l holds `shared` of its parameters in a table's (est_layer EST_LF_TIED): counted
 * there, not again. */
static void tie_to_table(struct est_model *m, struct est_layer *l, uint64_t shared)
{
    l->flags |= EST_LF_TIED;
    m->params -= shared;
    m->tied_params += shared;
}

static void tie_shared(struct est_model *m, struct est_layer *l, const char *nm, size_t nn,
                       struct mt_shared *s)
{
    if (nn == 6 && memcmp(nm, "shared", 6) == 0 && !s->have) {
        l->flags |= EST_LF_TIED_SRC;
        s->have = 1;
        s->params = l->params;
        s->out = l->out;
    } else if (nn == 12 && memcmp(nm, "embed_tokens", 12) == 0 && s->have &&
               l->params == s->params && l->out == s->out && l->params <= m->params)
        tie_to_table(m, l, l->params);
}

/* Whether rows [first, m->n) hold parameters but no projection (a linear or convolution
 * row): an attention block's norm without its q, k and v. A block of no parameters (an
 * Identity, a dropout) is a wrapper whose projections lie elsewhere. */
static int bare_projections(const struct est_model *m, size_t first)
{
    int held = 0;
    for (size_t i = first; i < m->n; i++) {
        if (m->layers[i].kind == EST_K_LINEAR || m->layers[i].kind == EST_K_CONV)
            return 0;
        held |= m->layers[i].params > 0;
    }
    return held;
}

/* Refuses an attention class with parameters but no printed projection in it or around
 * it (XLNet's
 * XLNetRelativeAttention holds q, k, v, o and r as bare parameters and prints only a
 * norm and a dropout): read as printed, neither its parameters nor its probabilities
 * would be counted. */
static int bare_attention_refuse(const char *file, size_t line, const char *c, size_t n,
                                 struct carma_err *err)
{
    return carma_err_at(err, file, line,
                        "%.*s: an attention block whose projections the print does not "
                        "show (bare parameters): its weights and its probabilities would be "
                        "left out; give a torchinfo table or a layer CSV (docs/estimator.md)",
                        (int)n, c);
}

/* ---- lists that forward zips (transformers' PoolFormer, Twins) ----
 *
 * Some models keep their stages in parallel ModuleLists, printed one after the other,
 * that forward runs zipped: for i, patch_embeddings[i], then block[i] (and layer_norm[i]).
 * zip_lists finds, in a block, a list of 2 to ZL_MAX_ENTRIES entries that are blocks each
 * holding a strided convolution, and the lists right after it of as many entries that
 * neither upsample nor downsample to other channels, one of whose first entries reads the
 * channels the first downsampling made, and writes a copy of the print with their entries
 * interleaved in call order in place of the lists (the lists' own lines and blank lines
 * dropped, a repeated leaf `(0-3): 4 x Dropout(...)` written once per entry), and the
 * print's line number of each line of the copy. */

/* A line that is not blank, trimmed. pre: how many lines before it hold a convolution with
 * a stride above 1, one of those that changes the channels, and an upsampling (an entry's
 * count is a difference: no entry is read twice). */
struct zl_line {
    uint32_t off, n; /* the line in the print (EST_MAX_INPUT fits) */
    uint32_t end;    /* an opening line: the line that closes it; else itself */
    uint32_t body;   /* offset into the line after the name ("(i): ", "(a-b): k x ") */
    uint32_t lineno; /* its number in the print */
    uint32_t c_out;  /* a strided convolution's output channels, else 0 */
    uint32_t pre[3];
    int32_t idx[2]; /* its name's index range "(i)" / "(a-b): k x", else -1 */
};

/* Lines (not blank) a print may have for zip_lists to look at it: 2^18 (a daemon takes
 * summaries of 512 KiB), 11 MiB of line records at most. */
#define ZL_MAX_LINES (1u << 18)
enum { ZL_STRIDED, ZL_WIDENS, ZL_UPS };

/* The index range of a trimmed line's name, "(7): " or "(0-3): 4 x ", and where the rest
 * begins: 1, 0 when it has no numeric name. */
static int zl_index(const char *s, size_t n, int32_t idx[2], uint32_t *body)
{
    size_t j = 0;
    int64_t a = 0, b;
    if (n < 4 || s[0] != '(' || !isdigit((unsigned char)s[1]))
        return 0;
    for (j = 1; j < n && isdigit((unsigned char)s[j]) && a < (1 << 24); j++)
        a = a * 10 + (s[j] - '0');
    b = a;
    if (j < n && s[j] == '-') {
        b = 0;
        size_t st = ++j;
        for (; j < n && isdigit((unsigned char)s[j]) && b < (1 << 24); j++)
            b = b * 10 + (s[j] - '0');
        if (j == st || b < a)
            return 0;
    }
    if (j + 2 >= n || s[j] != ')' || s[j + 1] != ':' || s[j + 2] != ' ' || a >= (1 << 24) ||
        b >= (1 << 24))
        return 0;
    j += 3;
    if (b > a) { /* "k x " */
        int64_t k = 0;
        size_t st = j;
        for (; j < n && isdigit((unsigned char)s[j]) && k < (1 << 24); j++)
            k = k * 10 + (s[j] - '0');
        if (j == st || k != b - a + 1 || j + 3 > n || memcmp(s + j, " x ", 3) != 0)
            return 0;
        j += 3;
    }
    idx[0] = (int32_t)a;
    idx[1] = (int32_t)b;
    *body = (uint32_t)j;
    return 1;
}

/* A trimmed line (n > 0) read as mt_peek_next reads it: 0 when no class and parenthesis
 * follow its name (none, or a name mt_peek_line does not take). */
static int zl_leaf(const char *s, size_t n, struct mt_peek *p)
{
    mt_peek_line(s, n, p);
    return p->has_paren && (p->named || p->s[0] != '(');
}

/* Whether the trimmed line is a convolution leaf with a stride above 1 (*c_in, *c_out its
 * channels); an upsampling sets *ups. */
static int zl_conv(const char *s, size_t n, uint64_t *c_in, uint64_t *c_out, int *ups)
{
    struct mt_peek p;
    if (!zl_leaf(s, n, &p))
        return 0;
    if (find(p.s, p.cls_n, "Upsampl") || find(p.s, p.cls_n, "Transpose"))
        *ups = 1;
    int64_t pos[2], st2[2];
    if (!find(p.s, p.cls_n, "Conv") || arg_positional(p.args, p.args_n, pos, 2) != 2 ||
        dims2(p.args, p.args_n, "stride=", 1, st2) < 0)
        return 0;
    *c_in = (uint64_t)pos[0];
    *c_out = (uint64_t)pos[1];
    return st2[0] > 1 || st2[1] > 1;
}

/* The channels the first leaf of lines [i, e) that has any reads (a convolution's
 * input, a linear layer's in_features, a norm's), 0 when none has. */
static uint64_t zl_reads(const char *buf, const struct zl_line *ln, size_t i, size_t e)
{
    for (; i < e; i++) {
        struct mt_peek p;
        if (!zl_leaf(buf + ln[i].off, ln[i].n, &p) || p.open)
            continue;
        int64_t v = arg_int(p.args, p.args_n, "in_features=");
        if (v > 0)
            return (uint64_t)v;
        int64_t pos[2];
        int np = arg_positional(p.args, p.args_n, pos, 2);
        if (np >= 1 && (find(p.s, p.cls_n, "Conv") || find(p.s, p.cls_n, "Norm")))
            return (uint64_t)(find(p.s, p.cls_n, "GroupNorm") && np == 2 ? pos[1] : pos[0]);
    }
    return 0;
}

/* Entries of a list zipped at most: stages (a few), not the layers of a deep list, which
 * zipping would copy once per entry. */
#define ZL_MAX_ENTRIES 64u

/* A ModuleList child of the block being zipped: its open line, its entries' first lines
 * (a repeated leaf counted once per entry) and what they hold. */
struct zl_list {
    size_t open;
    uint64_t n;
    int strided, plain; /* every entry downsamples; none upsamples nor downsamples to
                           other channels (a spatial reduction of attention's keys may) */
    int blocks;         /* every entry is a block (a patch embedding), not a leaf */
    uint64_t c0;        /* the first entry's last strided convolution's output channels */
    uint64_t reads0;    /* what the first entry's first sized leaf reads (0: none) */
};

/* Reads list lines (open, ln[open].end) into *l: 0 when its children are not the
 * numbered entries 0, 1, ... (a repeated block, an unnamed line), fewer than 2 or more
 * than ZL_MAX_ENTRIES. Looks into the first entry only, and no further than it needs. */
static int zl_list_read(const char *buf, const struct zl_line *ln, size_t open, struct zl_list *l)
{
    memset(l, 0, sizeof *l);
    l->open = open;
    l->strided = l->plain = l->blocks = 1;
    for (size_t c = open + 1; c < ln[open].end; c = ln[c].end + 1) {
        if (ln[c].idx[0] != (int64_t)l->n || (ln[c].idx[1] > ln[c].idx[0] && ln[c].end != c) ||
            ln[c].idx[1] >= (int32_t)ZL_MAX_ENTRIES)
            return 0;
        const uint32_t *a = ln[c].pre, *b = ln[ln[c].end + 1].pre;
        l->strided &= b[ZL_STRIDED] > a[ZL_STRIDED];
        l->plain &= b[ZL_WIDENS] == a[ZL_WIDENS] && b[ZL_UPS] == a[ZL_UPS];
        l->blocks &= ln[c].end != c;
        l->n = (uint64_t)ln[c].idx[1] + 1;
    }
    if (l->n < 2)
        return 0;
    size_t c = open + 1; /* the first entry: its last downsampling, what it first reads */
    for (size_t i = ln[c].end + 1; l->strided && i-- > c && !l->c0;)
        l->c0 = ln[i].c_out;
    l->reads0 = zl_reads(buf, ln, c, ln[c].end + 1);
    return 1;
}

/* Appends line i of the print to the copy (o, *w of cap bytes) and its number to mp[*wl]:
 * as printed, or, for index >= 0, a repeated leaf's "(a-b): k x " name as "(index): ". */
static void zl_put(char *o, size_t *w, size_t cap, uint32_t *mp, size_t *wl, const char *buf,
                   const struct zl_line *ln, size_t i, int64_t index)
{
    size_t b = 0;
    if (index >= 0) {
        *w += (size_t)snprintf(o + *w, cap - *w, "(%lld): ", (long long)index);
        b = ln[i].body;
    }
    memcpy(o + *w, buf + ln[i].off + b, ln[i].n - b);
    *w += ln[i].n - b;
    o[(*w)++] = '\n';
    mp[(*wl)++] = ln[i].lineno;
}

#define ZL_MAX_LISTS 8

/* 1 with *out (*outlen bytes) and *map (a line number per line of it) malloc'd when the
 * print has lists to zip, 0 when not, -1 when out of memory. */
static int zip_lists(const char *buf, size_t len, char **out, size_t *outlen, uint32_t **map)
{
    *out = NULL;
    *map = NULL;
    if (len > EST_MAX_INPUT || !memmem(buf, len, "ModuleList(", 11))
        return 0; /* (offsets in 32 bits) */
    size_t nl = 1;
    for (size_t i = 0; i < len; i++)
        nl += buf[i] == '\n';
    if (nl > ZL_MAX_LINES)
        nl = ZL_MAX_LINES; /* blank lines are not kept: more than this many others, none */
    struct zl_line *ln = malloc((nl + 1) * sizeof *ln);
    uint32_t stack[EST_MAX_DEPTH];
    if (!ln)
        return -1;
    size_t k = 0, depth = 0;
    uint32_t pre[3] = {0, 0, 0};
    struct lines Ls;
    lines_init(&Ls, buf, len, NULL);
    const char *s;
    size_t n;
    int r;
    while ((r = lines_next(&Ls, &s, &n, NULL)) == 1) {
        trim(&s, &n);
        if (n == 0)
            continue;
        if (k == nl) { /* past the lines looked at */
            free(ln);
            return 0;
        }
        struct zl_line *L = &ln[k];
        *L = (struct zl_line){.off = (uint32_t)(s - buf),
                              .n = (uint32_t)n,
                              .end = (uint32_t)k,
                              .lineno = (uint32_t)Ls.line,
                              .idx = {-1, -1}};
        memcpy(L->pre, pre, sizeof pre);
        zl_index(s, n, L->idx, &L->body);
        uint64_t ci = 0, co = 0;
        int ups = 0;
        if (zl_conv(s, n, &ci, &co, &ups)) {
            L->c_out = co <= UINT32_MAX ? (uint32_t)co : 0;
            pre[ZL_STRIDED]++;
            pre[ZL_WIDENS] += ci != co;
        }
        pre[ZL_UPS] += (uint32_t)ups;
        if (s[n - 1] == '(') {
            if (depth == EST_MAX_DEPTH) { /* refused by the parser: nothing to zip */
                free(ln);
                return 0;
            }
            stack[depth++] = (uint32_t)k;
        } else if (n == 1 && s[0] == ')' && depth) {
            ln[stack[--depth]].end = (uint32_t)k;
        }
        k++;
    }
    if (r < 0) { /* a NUL byte, an over-long line: the parser refuses the print */
        free(ln);
        return 0;
    }
    nl = k;
    ln[nl] = (struct zl_line){.end = (uint32_t)nl, .idx = {-1, -1}};
    memcpy(ln[nl].pre, pre, sizeof pre);
    int rc = 0;
    /* the first block holding lists to zip */
    for (size_t p = 0; p < nl && !rc; p++) {
        if (ln[p].end == p)
            continue;
        /* a run of consecutive list children: the first whose entries are blocks that
         * downsample, then as many of the next as qualify */
        struct zl_list lists[ZL_MAX_LISTS];
        unsigned nz = 0;
        for (size_t c = p + 1; c < ln[p].end; c = ln[c].end + 1) {
            struct zl_list *l = &lists[nz < ZL_MAX_LISTS ? nz : ZL_MAX_LISTS - 1];
            int is_list = nz < ZL_MAX_LISTS && ln[c].end != c &&
                          find(buf + ln[c].off, ln[c].n, ": ModuleList(") &&
                          zl_list_read(buf, ln, c, l);
            if (is_list && nz > 0 && l->n == lists[0].n && l->plain &&
                (!l->reads0 || l->reads0 == lists[0].c0)) {
                nz++;
                continue;
            }
            if (nz >= 2)
                break;
            nz = 0;
            if (is_list && l->strided && l->blocks && l->c0) { /* a new run begins */
                lists[0] = *l;
                nz = 1;
            }
        }
        int reads = 0; /* one of them reads what the first downsampling made */
        for (unsigned z = 1; z < nz; z++)
            reads |= lists[z].reads0 == lists[0].c0;
        if (nz < 2 || !reads)
            continue;
        /* the copy: every line but the zipped lists', those lists' entries interleaved
         * where the first list was; a repeated leaf once per entry, named by it */
        size_t cap = len + 64, lines = nl;
        for (unsigned j = 0; j < nz; j++) {
            const struct zl_list *l = &lists[j];
            for (size_t c = l->open + 1; c < ln[l->open].end; c = ln[c].end + 1)
                if (ln[c].idx[1] > ln[c].idx[0]) {
                    uint64_t reps = (uint64_t)(ln[c].idx[1] - ln[c].idx[0]);
                    cap += reps * (ln[c].n + 16);
                    lines += reps;
                }
        }
        if (cap > 4 * (size_t)EST_MAX_INPUT || lines > UINT32_MAX)
            break;
        char *o = malloc(cap);
        uint32_t *mp = malloc(lines * sizeof *mp);
        if (!o || !mp) {
            free(o);
            free(mp);
            rc = -1;
            break;
        }
        size_t w = 0, wl = 0;
        for (size_t i = 0; i < nl;) {
            unsigned j = 0;
            while (j < nz && lists[j].open != i)
                j++;
            if (j == nz) {
                zl_put(o, &w, cap, mp, &wl, buf, ln, i, -1);
                i++;
                continue;
            }
            if (j == 0) /* the first list: every entry, zipped */
                for (uint64_t e = 0; e < lists[0].n; e++)
                    for (unsigned z = 0; z < nz; z++) {
                        const struct zl_list *l = &lists[z];
                        for (size_t c = l->open + 1; c < ln[l->open].end; c = ln[c].end + 1) {
                            if ((uint64_t)ln[c].idx[0] > e || (uint64_t)ln[c].idx[1] < e)
                                continue;
                            if (ln[c].idx[1] > ln[c].idx[0])
                                zl_put(o, &w, cap, mp, &wl, buf, ln, c, (int64_t)e);
                            else
                                for (size_t x = c; x <= ln[c].end; x++)
                                    zl_put(o, &w, cap, mp, &wl, buf, ln, x, -1);
                        }
                    }
            i = ln[i].end + 1; /* past the list */
        }
        assert(w <= cap && wl <= lines);
        *out = o;
        *outlen = w;
        *map = mp;
        rc = 1;
    }
    free(ln);
    return rc;
}

/* Whether the print cuts patches twice in a chain from its stem: its first convolution one
 * whose kernel is its stride (> 1, no padding), a later such one reading the channels it
 * made. A hierarchical transformer's patch embeddings (PVT v1's, Twins'), where
 * a vision transformer cuts the image once (CrossViT's two branches both cut the image; a
 * chain elsewhere, SAM's mask convolutions, does not count). */
static int patches_chained(const char *buf, size_t len)
{
    uint64_t made = 0;
    int convs = 0;
    struct lines L;
    lines_init(&L, buf, len, NULL);
    const char *s;
    size_t n;
    while (lines_next(&L, &s, &n, NULL) == 1) {
        trim(&s, &n);
        struct mt_peek p;
        if (n == 0 || !zl_leaf(s, n, &p) || !name_is(p.s, p.cls_n, "Conv2d"))
            continue;
        const char *a = p.args;
        size_t an = p.args_n, skip;
        int64_t pos2[2], ks[3];
        uint64_t patch;
        int nks;
        double pp, pt;
        if (profiler_stats(a, an, &skip, &pp, &pt)) { /* a leaf's statistics first */
            a += skip;
            an -= skip;
        }
        int cut = arg_positional(a, an, pos2, 2) == 2 &&
                  patch_conv(a, an, (uint64_t)pos2[0], &patch, ks, &nks) == 1 && ks[0] >= 2;
        if (convs++ == 0 && !cut)
            return 0; /* a convolutional stem */
        if (!cut)
            continue;
        if (!made) /* the stem's */
            made = (uint64_t)pos2[1];
        else if ((uint64_t)pos2[0] == made)
            return 1; /* (other cuts, CrossViT's second branch, SAM's mask, are no chain) */
    }
    return 0;
}

/* est_parse_modtree on buf, whose lines are the print's lines map[0], map[1], ... (NULL:
 * 1, 2, ...). */
static int modtree_parse(const char *buf, size_t len, const uint32_t *map, const char *file,
                         struct est_model *m, struct carma_err *err)
{
    struct lines L;
    lines_init(&L, buf, len, file);
    L.map = map;
    const char *s;
    size_t n;
    int rc, depth = -1;
    size_t done = 0; /* the line that closed the tree */
    struct mt_frame st[EST_MAX_DEPTH];
    uint64_t prev_out = 0;
    struct mt_space sp;
    sp.n = sp.head = sp.next_id = 0;
    sp.pool_line = sp.pool_row = 0;
    sp.pooled_from = (struct mt_shape){0};
    sp.pool_id = 0;
    sp.pool_gate = 0;
    sp.pool_gate_row = 0;
    sp.pool_cls = sp.cl_cls = NULL;
    sp.pool_cls_n = sp.cl_cls_n = 0;
    sp.skip = (struct mt_shape){0};
    sp.upsampled = 0;
    sp.pad_pending = 0;
    memset(sp.pad, 0, sizeof sp.pad);
    int spatial_on = m->image_h > 0 && m->image_w > 0;
    sp.grid = spatial_on && (memmem(buf, len, "PatchMerging(", 13) != NULL ||
                             memmem(buf, len, "PatchMergingV2(", 15) != NULL);
    sp.token_mix = 0;
    sp.conv_not_patch = spatial_on && patches_chained(buf, len);
    size_t merge_line = 0; /* the first patch merging block (sp.grid) */
    size_t spatial_line = 0; /* the first convolution sized from --image-size */
    int peft = 0;            /* a PEFT model: only adapters and saved copies train */
    char syn[2 * EST_MAX_LINE + 4]; /* a block's own arguments as a leaf (own_args) */
    uint64_t tok_rows = 0, tok_width = 0; /* the token table: the first with the most rows */
    size_t tok_line = 0;
    size_t patch_line = 0, vocab_line = 0; /* a patch embedding; a table not of positions
                                              with more rows than its width (a vocabulary) */
    size_t bare_head_line = 0, bare_head_row = 0; /* the last head printed without a size */
    struct mt_shared shared = {0};
    size_t pos_line = 0; /* a module whose name or class says position (position_word) */
    size_t group_line = 0; /* a list of one layer inside a list's entry (ALBERT's group) */
    unsigned ntables = 0, fused = 0; /* sized embedding tables; Sdpa/Flash attention blocks */
    m->format = EST_FMT_MODTREE;
    m->spatial = 0;
    m->concat = 0;
    m->join_line = 0;
    m->join_count = 0;
    m->bare_pool_line = 0;
    m->window_line = 0;
    m->positions_line = 0;
    m->positions_hw = 0;
    m->positions_window = 0;
    m->positions_sr = 0;
    m->positions_unfold = 0;
    m->subsample_line = 0;
    m->channels_line = 0;
    m->channels_l2qk = 0;
    m->shared_line = 0;
    m->slide_line = 0;
    m->positions_keys = 0;
    m->profiler = 0;
    m->profiler_line = 0;
    while ((rc = lines_next(&L, &s, &n, err)) == 1) {
        trim(&s, &n);
        if (n == 0)
            continue;
        if (done && s[0] == ')' && n == 1)
            return carma_err_at(err, file, L.line,
                                "')' after the module tree closed (line %zu): one ')' too many, "
                                "or a block's opening line lost; give the print as PyTorch "
                                "writes it",
                                done);
        if (done)
            return carma_err_at(err, file, L.line, "text after the module tree's closing ')'");
        /* Closing line: ")" optionally with ", N params". */
        if (s[0] == ')') {
            if (depth < 0)
                return carma_err_at(err, file, L.line, "unbalanced ')'");
            size_t j = 1;
            while (j < n && s[j] == ' ')
                j++;
            if (j < n) {
                uint64_t p;
                const char *ps = s + j;
                size_t pn = n - j;
                if (ps[0] != ',' || pn < 8 || memcmp(ps + pn - 7, " params", 7) != 0 ||
                    est_parse_count(ps + 1, pn - 8, &p) < 0)
                    return carma_err_at(err, file, L.line, "unexpected text after ')'");
            }
            struct mt_frame *f = &st[depth];
            if (f->peft == MT_P_LORA && lora_close(m, f, file, L.line, err) < 0)
                return -EINVAL;
            if (sp.n && spatial_close(m, &sp, f) < 0)
                return carma_err_at(err, file, L.line, "too many layers");
            if (f->merging && sp.n && grid_merged(m, &sp, f) < 0)
                return carma_err_at(err, file, f->line,
                                    "%.*s: a patch merging without a linear reduction of the "
                                    "joined neighbours (convolutions: timm's EfficientViT and "
                                    "TinyViT): not Swin's, whose grid reading this is; give a "
                                    "torchinfo table",
                                    (int)f->cls_n, f->cls);
            if (moe_fused(f->cls, f->cls_n)) {
                size_t i = f->first;
                while (i < m->n && !m->layers[i].params)
                    i++;
                if (i == m->n)
                    return moe_fused_refuse(file, f->line, f->cls, f->cls_n, err);
            }
            int moe = !sp.n ? moe_close(m, f) : 0;
            if (moe < 0)
                return carma_err_at(err, file, f->ug_line, "parameters above %llu",
                                    EST_MAX_PARAMS * 16);
            int moved = !moe && f->ffn_act && !sp.n ? ffn_activation(m, f) : 0;
            if (moved < 0)
                return carma_err_at(err, file, L.line, "too many layers");
            const struct mt_shape *gn = sp.grid ? sp_newest(&sp) : NULL;
            moved |= moe || (!f->in_attention &&
                             (gated_mlp(m, f) || (!sp.n && plain_mlp(m, f, 1)) ||
                              (gn && plain_mlp(m, f, gn->h * gn->w))));
            int glu = !moved && !f->in_attention && !sp.n ? fused_glu(m, f) : 0;
            if (glu < 0)
                return carma_err_at(err, file, L.line, "too many layers");
            moved |= glu;
            /* In call order now, the block's last tensor is what the next unsized row
             * (an RMSNorm()) reads: Baichuan's MLP lists gate, down, up, whose listed
             * last tensor is up's, the inner width. */
            for (size_t i = m->n; moved && i-- > f->first;) {
                uint8_t kd = m->layers[i].kind;
                if (kd == EST_K_LINEAR || kd == EST_K_EMBED || kd == EST_K_NORM) {
                    prev_out = m->layers[i].out;
                    break;
                }
            }
            if (!f->attention && f->qkv == 7 && !f->in_attention && !f->numbered && depth > 0 &&
                !est_type_over_channels(f->cls, f->cls_n))
                f->attention = 1; /* its children name a query, key and value */
            size_t attn_at = m->n; /* where the probabilities' row goes */
            uint64_t qwidth = f->width; /* the query's width: heads x head size */
            int qnarrow = 0;            /* the query's projection narrows its own input */
            uint64_t talking = f->attention ? talking_heads(m, f) : 0;
            if (f->attention) {
                /* q, k, v: the key and value projections read the query's input (the
                 * second and third of three or more consecutive linear rows); the
                 * attention runs right after them, before the output projection */
                size_t lin[3];
                unsigned nl = 0;
                for (size_t i = f->first; i < m->n && nl < 3; i++)
                    if (m->layers[i].kind == EST_K_LINEAR)
                        lin[nl++] = i;
                if (nl == 3 && lin[1] == lin[0] + 1 && lin[2] == lin[1] + 1 && !talking) {
                    m->layers[lin[1]].shares_input = m->layers[lin[2]].shares_input = 1;
                    attn_at = lin[2] + 1;
                    qwidth = m->layers[lin[0]].out; /* grouped k, v may be narrower */
                    /* its input: params / out is in, or in + 1 with a bias */
                    qnarrow = qwidth && base_params(&m->layers[lin[0]]) / qwidth > qwidth + 1;
                }
            }
            int scored = f->attention && !f->scores_inside && f->width;
            if (scored && sp.grid) {
                /* windowed attention (Swin): computed in Python with its relative position
                 * bias, whatever --attention says; its heads change from stage to stage */
                if (m->heads)
                    return carma_err_at(err, file, f->line,
                                        "--heads %u: windowed attention (Swin) changes its "
                                        "heads from stage to stage; carma takes heads of %d "
                                        "channels, Swin's: leave --heads out",
                                        m->heads, EST_WINDOW_HEAD);
                uint64_t heads = window_heads(f->width), table;
                uint64_t probs = grid_attention(&sp, heads, &table);
                if (f->cosine) /* its logit scale; the bias network's rows hold the rest */
                    table /= (2 * EST_WINDOW - 1) * (2 * EST_WINDOW - 1);
                if (sample_probs_row(m, f, probs, table, heads,
                                     EST_LF_SCORES | (f->cosine ? EST_LF_COSINE : 0),
                                     attn_at) < 0)
                    return carma_err_at(err, file, L.line, "too many layers or too large a layer");
                if (!m->window_line)
                    m->window_line = f->line;
                scored = 0;
                f->scores_inside = 1; /* an attention block around it adds no other */
            }
            if (f->positions && f->sr > 1 && !f->sr_keys)
                return carma_err_at(err, file, f->line,
                                    "%.*s: attention whose keys and values a strided "
                                    "convolution reduces (PVT's, SegFormer's), but no linear "
                                    "layer beside that convolution is named as their "
                                    "projection (k, v, kv, key, value, k_proj, v_proj): give a "
                                    "torchinfo table",
                                    (int)f->cls_n, f->cls);
            if (scored && f->positions && f->has_x) {
                /* attention over the positions of a convolutional tree's tensor
                 * (CAFormer's later stages, EfficientFormer's last): each of its H x W
                 * positions a token, heads of EST_WINDOW_HEAD channels (Swin's, CoAtNet's,
                 * CAFormer's; ViT-style 64 would count half); a row per sample of heads x
                 * (H W) x (H W') probabilities, H W' the fewest positions a projection of
                 * it read (keys pooled first), counted unless --attention sdpa */
                if (m->heads)
                    return carma_err_at(err, file, f->line,
                                        "--heads %u: attention over the positions of a "
                                        "convolutional network changes its heads from "
                                        "stage to stage; carma takes heads of %d "
                                        "channels: leave --heads out",
                                        m->heads, EST_WINDOW_HEAD);
                /* heads from the channels of the tensor it reads (its projections are
                 * sized per position: their widths are positions x channels) */
                uint64_t hw = f->x.h * f->x.w, kv = f->pos_min_hw ? f->pos_min_hw : hw;
                uint64_t heads = window_heads(frame_input(f)->c);
                if (f->partitioned && kv > EST_WINDOW * EST_WINDOW)
                    kv = EST_WINDOW * EST_WINDOW; /* within its window or grid cell */
                if (f->channels)                  /* each head's channels attend to each other */
                    hw = kv = frame_input(f)->c / heads ? frame_input(f)->c / heads : 1;
                if (f->unfolded) { /* over the patches, the tensor interpolated to whole ones */
                    kv = ((f->x.h + MT_UNFOLD - 1) / MT_UNFOLD) *
                         ((f->x.w + MT_UNFOLD - 1) / MT_UNFOLD);
                    hw = kv * MT_UNFOLD * MT_UNFOLD;
                    if (heads < MT_UNFOLD_HEADS) /* narrower heads in a narrow stage */
                        heads = MT_UNFOLD_HEADS;
                }
                if (hw > (1u << 20) || kv > (1u << 20) || heads > EST_MAX_ELEMS / (hw * kv) ||
                    sample_probs_row(m, f, heads * hw * kv, 0, heads,
                                     f->channels ? EST_LF_SCORES /* its softmax in Python */
                                     : f->sdpa   ? EST_LF_FUSED
                                                 : 0,
                                     attn_at) < 0)
                    return carma_err_at(err, file, L.line, "too many layers or too large a layer");
                if (f->channels && !m->channels_line) {
                    m->channels_line = f->line;
                    m->channels_l2qk = (uint8_t)f->l2qk;
                }
                if (f->l2qk) {
                    /* F.normalize(q), F.normalize(k): new tensors, 2C a position, which
                     * q k^T keeps (one row, as a product's; after the probabilities'
                     * row, which a fused qkv projection's block lists last, rather than
                     * in forward's order: the totals are what matter) */
                    uint64_t qk = 2 * frame_input(f)->c * f->x.h * f->x.w;
                    if (f->x.h * f->x.w > (1u << 20) || qk > EST_MAX_ELEMS ||
                        est_model_add(m, EST_K_POOL, qk, 0, f->mult, 0) < 0)
                        return carma_err_at(err, file, L.line,
                                            "too many layers or too large a layer");
                    est_layer_type(&m->layers[m->n - 1], "normalize", 9);
                    m->layers[m->n - 1].flags |= EST_LF_PRODUCT;
                }
                if (!f->channels && !m->positions_line) {
                    m->positions_line = f->line;
                    m->positions_hw = hw;
                    m->positions_window = f->partitioned ? EST_WINDOW : 0;
                    m->positions_unfold = f->unfolded ? MT_UNFOLD : 0;
                    m->positions_sr = f->sr > 1 ? (uint32_t)f->sr : 0;
                    m->positions_keys = kv;
                }
                scored = 0;
                f->scores_inside = 1;
            }
            if (f->positions && f->sr > 1 && f->has_x)
                /* the block gives back its input's shape (the output projection's), not
                 * the reduced tensor its convolution and norm, listed last, made */
                sp_push(&sp, frame_input(f)->c, f->x.h, f->x.w, 0);
            if (f->attention && !scored && !f->scores_inside &&
                !(depth > 0 && st[depth - 1].in_attention) && tok_rows &&
                bare_projections(m, f->first))
                return bare_attention_refuse(file, f->line, f->cls, f->cls_n, err);
            if (scored) {
                /* Attention probabilities: heads x seq per token, saved by softmax and
                 * dropout; a fused kernel's are marked, and counted only under
                 * --attention eager. The print shows no heads: --heads gives them, else
                 * a head size of 64 (the convention of attention written with q, k, v
                 * projections), except for nn.MultiheadAttention, which has none: its
                 * count is a placeholder, refused where materialised (est_heads_check). */
                if (m->heads && qwidth % m->heads)
                    return carma_err_at(err, file, f->line,
                                        "an attention block whose query is %llu wide: "
                                        "--heads %u does not divide it (give the query "
                                        "heads, num_attention_heads)",
                                        (unsigned long long)qwidth, m->heads);
                uint8_t src;
                uint64_t grouped = fused_grouped(m, f);
                /* 64-wide heads across the block's widest input, or across the query
                 * where its projection narrows its own input (T5 v1.1-small's 512 -> 384,
                 * ConvBERT's 768 -> 384: 6 heads, not 8 and 12); a query as wide as its
                 * input (MobileBERT's 128 -> 128 in a 512-wide block, 4 heads of 32)
                 * keeps the block's width, which does not undercount it */
                uint64_t hw = qnarrow && qwidth < f->width ? qwidth : f->width;
                uint64_t fallback = talking ? talking : hw / 64 ? hw / 64 : 1;
                /* T5's relative_attention_bias (buckets x heads) shows its heads: those of
                 * every block after it (T5 v1.1-small's 6, t5-efficient-*-kv32's 8 of 32,
                 * which 64-wide heads would halve) */
                int shown = !talking && !m->heads && m->bias_heads && qwidth % m->bias_heads == 0;
                uint64_t heads = shown ? m->bias_heads
                                       : heads_take(m, fallback, !f->mha_heads, f->line,
                                                    "nn.MultiheadAttention", &src);
                if (shown)
                    src = EST_HEADS_SHOWN;
                if (est_model_add(m, EST_K_ATTN, heads, 0, f->mult, 1) < 0)
                    return carma_err_at(err, file, L.line, "too many layers");
                m->layers[m->n - 1].heads_src = talking && src == EST_HEADS_ASSUMED
                                                    ? EST_HEADS_SHOWN
                                                    : src;
                if (!m->attn_line)
                    m->attn_line = f->line;
                if (f->sdpa)
                    m->layers[m->n - 1].flags |= EST_LF_FUSED;
                if (m->scores_bias_line || talking)
                    m->layers[m->n - 1].flags |= EST_LF_SCORES;
                if (talking)
                    m->layers[m->n - 1].flags |= EST_LF_TALKING;
                if (grouped)
                    m->layers[m->n - 1].flags |= EST_LF_GROUPED;
                if (f->global_proj) { /* local attention beside global projections */
                    m->layers[m->n - 1].keys = EST_SLIDE_KEYS;
                    m->layers[m->n - 1].flags |= EST_LF_SCORES;
                    if (!m->slide_line)
                        m->slide_line = f->line;
                }
                for (size_t i = f->first; i + 1 < m->n; i++)
                    if (m->layers[i].kind == EST_K_DROPOUT)
                        m->layers[m->n - 1].flags |= EST_LF_ATTN_DROP;
                if (f->zero_drop && !(m->layers[m->n - 1].flags & EST_LF_ATTN_DROP))
                    m->layers[m->n - 1].flags |= EST_LF_ATTN_NODROP;
                last_row_to(m, attn_at); /* before the output projection */
                m->needs_seq = 1;
                if (!m->needs_seq_line)
                    m->needs_seq_line = f->line;
            }
            if (!moved && !f->in_attention && !f->numbered && !sp.n &&
                head_last(m, f, file, err) < 0)
                return -EINVAL;
            if (!moved && !f->in_attention && !f->numbered && !sp.n)
                vocab_head_last(m, f);
            /* after every rule above has put this block's rows in call order */
            if (f->unit && m->n > f->unit_row) {
                m->layers[f->unit_row].unit |= EST_UNIT_START;
                st[depth - 1].had_units = 1;
            }
            if (f->had_units && m->n)
                m->layers[m->n - 1].unit |= EST_UNIT_END;
            if (f->numbered && f->child == 1 && f->in_unit && !group_line &&
                attn_rows_since(m, f->first))
                group_line = f->line;
            /* a list of blocks that downsample, then one of as many blocks that neither
             * downsample nor upsample, the first of which reads what the first
             * downsampling made: the stages each downsampling precedes (a U-Net's up
             * blocks read a join of other widths) */
            int list = name_is(f->cls, f->cls_n, "ModuleList") && !f->leaf_kids;
            const struct mt_frame *prev = depth > 0 ? &st[depth - 1] : NULL; /* its list_* */
            if (list && sp.n && prev && prev->list_n >= 2 && prev->list_n == f->entries &&
                prev->list_strided && !f->strided && !f->ups && prev->list_c0 &&
                f->first_cin == prev->list_c0)
                return carma_err_at(
                    err, file, prev->list_line,
                    "a list of %llu modules with strided convolutions, then (line %zu) a "
                    "list of as many: forward runs them zipped, each downsampling before its "
                    "stage (transformers' PoolFormer), which the print's order does not show; "
                    "give a torchinfo table of the model run on its input "
                    "(torchinfo.summary(model, input_data=..., depth=10)), which lists every "
                    "shape",
                    (unsigned long long)prev->list_n, f->line);
            if (depth > 0) {
                struct mt_frame *up = &st[depth - 1];
                up->list_n = list ? f->entries : 0;
                up->list_strided = f->strided;
                up->list_line = f->line;
                up->list_c0 = f->c0;
                const struct mt_shape *made = sp.n ? sp_newest(&sp) : NULL;
                if (name_is(up->cls, up->cls_n, "ModuleList") && up->entries == 1 && made)
                    up->c0 = made->c;
                if (!sp.n)
                    moe_child_closed(m, up, f);
                /* An attention class with no projection of its own (ChatGLM's and
                 * Megatron's CoreAttention inside SelfAttention) added no row: the
                 * block around it adds the probabilities, fused if it was. */
                if (scored || f->scores_inside)
                    up->scores_inside = 1;
                else if (f->attention && f->sdpa)
                    up->sdpa = 1;
                if (f->width > up->width)
                    up->width = f->width;
                if (f->tab_rows > up->tab_rows) {
                    up->tab_rows = f->tab_rows;
                    up->tab_line = f->tab_line;
                }
            }
            depth--;
            if (depth < 0)
                done = L.line;
            else
                st[depth].after_child = m->n;
            continue;
        }
        /* "(name): " prefix, except on the first line. */
        const char *c = s, *nm = NULL;
        size_t cn = n, nn = 0;
        const char *rp = depth >= 0 && c[0] == '(' ? memchr(c, ')', cn) : NULL;
        if (depth >= 0 && (!rp || (size_t)(rp - c) + 1 >= cn || rp[1] != ':')) {
            /* no "(name):": the block's own arguments (a peft < 0.7 LoRA layer's), or a
             * profiler's statistics of a block (before its arguments, if it has any) */
            size_t skip;
            double pp, pt;
            int tool = profiler_stats(s, n, &skip, &pp, &pt);
            if (tool) {
                m->profiler = tool;
                if (depth == 0 && !m->profiler_line && !st[0].child) {
                    m->profiler_line = L.line; /* the root's: the model's total */
                    m->profiler_params = pp;
                    m->profiler_tol = pt;
                }
                s += skip;
                n -= skip;
                trim(&s, &n);
                if (n == 0)
                    continue;
            }
            int lora = 0;
            rc = own_args(&st[depth], s, n, &L, syn, sizeof syn, &cn, &nm, &nn, &lora, file,
                          err);
            if (rc < 0)
                return rc;
            c = syn;
            if (lora) {
                st[depth].peft = MT_P_LORA;
                peft = 1;
            }
        } else if (depth >= 0) {
            const char *e = rp;
            if ((size_t)(e - c) + 2 >= cn || e[2] != ' ')
                return carma_err_at(err, file, L.line,
                                    "'%s': expected '(name): Module(...)' (a damaged print? "
                                    "give the print as PyTorch writes it, or a torchinfo "
                                    "table)",
                                    quote_line(s, n).s);
            if (isdigit((unsigned char)c[1]))
                st[depth].numbered = 1; /* (0), (0-11): a Sequential or a ModuleList */
            nm = c + 1;
            nn = (size_t)(e - c) - 1;
            cn -= (size_t)(e - c) + 3;
            c = e + 3;
        }
        int64_t rep = mt_repeat(&c, &cn);
        if (rep < 0)
            return carma_err_at(err, file, L.line, "bad repeat count");
        /* "(0-11): 12 x Block(": PyTorch prints the range and the count together */
        if (nm && rep > 1) {
            const char *dash = memchr(nm, '-', nn);
            uint64_t lo = 0, hi = 0;
            int ok = dash != NULL;
            for (const char *q = nm; ok && q < dash; q++)
                ok = isdigit((unsigned char)*q) && (lo = lo * 10 + (uint64_t)(*q - '0')) < 1000000;
            for (const char *q = dash ? dash + 1 : nm; ok && q < nm + nn; q++)
                ok = isdigit((unsigned char)*q) && (hi = hi * 10 + (uint64_t)(*q - '0')) < 1000000;
            if (ok && dash > nm && dash + 1 < nm + nn && (hi < lo || hi - lo + 1 != (uint64_t)rep))
                return carma_err_at(err, file, L.line,
                                    "(%.*s) names %llu modules but the count says %lld: an "
                                    "edited print?",
                                    (int)nn, nm, (unsigned long long)(hi >= lo ? hi - lo + 1 : 0),
                                    (long long)rep);
        }
        size_t cls_n = 0;
        while (cls_n < cn && ident_char(c[cls_n]))
            cls_n++;
        /* A class's own __repr__ may put a space before its arguments (timm's
         * "SelectAdaptivePool2d (pool_type=avg, ...)"): a leaf, never a block. */
        size_t gap = depth >= 0 && cls_n + 2 < cn && c[cls_n] == ' ' && c[cls_n + 1] == '(';
        /* "(0): None": an empty slot of a ModuleList (HRNet's transitions and fuse
         * layers, where the branch passes through): no module, no tensor. */
        if (depth >= 0 && nm && cn == 4 && memcmp(c, "None", 4) == 0)
            continue;
        if (depth >= 0 && nm && cls_n > 0 && cls_n + 1 < cn && c[cls_n] == ' ' &&
            isalpha((unsigned char)c[cls_n + 1]))
            /* detectron2's "(pe_layer): Positional encoding PositionEmbeddingSine" */
            return carma_err_at(err, file, L.line,
                                "'%.*s' is text, not a module printed as Class(...) (a "
                                "module's own __repr__, a ParameterList's entry): carma "
                                "cannot read it from a print; give a torchinfo table "
                                "(torchinfo.summary(model, input_data=..., depth=10))",
                                (int)(cn < 60 ? cn : 60), c);
        if (cls_n == 0 || cls_n + gap >= cn || c[cls_n + gap] != '(')
            return carma_err_at(err, file, L.line,
                                depth < 0 ? "not a model summary: expected a torchsummary, "
                                            "torchinfo or Keras table, a module tree or a "
                                            "layer CSV"
                                          : "expected 'Module(' after the name");
        if (detection_part(c, cls_n))
            return carma_err_at(
                err, file, L.line,
                "%.*s: a detection model (torchvision's or detectron2's R-CNN, RetinaNet, FCOS, "
                "SSD), whose training resizes images to 800-1333 pixels and runs heads on "
                "hundreds of sampled regions per image, which no print shows. Measure a "
                "training run's peak (torch.cuda.max_memory_reserved()) and submit with "
                "'carma submit --mem SIZE'; carmad records each run's peak",
                (int)cls_n, c);
        uint64_t parent_mult = depth >= 0 ? st[depth].mult : 1;
        uint64_t mult = parent_mult * (uint64_t)rep;
        if (mult > EST_MAX_COUNT)
            return carma_err_at(err, file, L.line, "repeat counts multiply past %llu",
                                EST_MAX_COUNT);
        const char *args = c + cls_n + gap + 1;
        size_t an = cn - cls_n - gap - 1;
        if (an) {
            size_t skip;
            double pp, pt;
            int tool = profiler_stats(args, an, &skip, &pp, &pt);
            if (tool) { /* a leaf's statistics, then its own arguments */
                m->profiler = tool;
                args += skip;
                an -= skip;
            }
        }
        if (an == 0 && gap)
            return carma_err_at(err, file, L.line, "expected 'Module(' after the name");
        if (!pos_line && (position_word(nm, nn) || position_word(c, cls_n)))
            pos_line = L.line;
        if (an == 0) {
            /* Opening a block. */
            if (depth + 1 >= EST_MAX_DEPTH)
                return carma_err_at(err, file, L.line, "nesting deeper than %d", EST_MAX_DEPTH);
            if (depth >= 0) {
                struct mt_frame *up = &st[depth];
                up->child++;
                up->entries += (uint64_t)rep;
                kid_start(up, m->n, L.line);
                child_start(up, &sp);
                up->first_leaf_done = 1;
                norm_settle(up, 0);
            }
            struct mt_frame *f = &st[++depth];
            memset(f, 0, sizeof *f);
            mark_upsampling(st, depth, c, cls_n);
            f->pending = SIZE_MAX;
            if (sp.n) {
                f->x = *sp_top(&sp, 1);
                const struct mt_shape *v = sp_newest(&sp);
                f->xv = v ? *v : f->x;
                f->has_x = 1;
            }
            f->mult = (uint32_t)mult;
            f->rep = (uint32_t)rep;
            f->ug_row = SIZE_MAX;
            f->line = L.line;
            /* XCiT's cross-covariance attention (timm's class XCA) over a convolutional
             * tensor, its first layer C -> 3C: attention over channels (over a sequence's
             * tokens it would be no attention over them: read as its linear layers) */
            const struct mt_shape *xv = sp.n ? sp_newest(&sp) : NULL;
            int xca = name_is(c, cls_n, "XCA") && xv && !sp.grid && sp.conv_not_patch &&
                      fused_qkv_first(L, xv->c);
            f->attention = est_kind_classify(c, cls_n) == EST_K_ATTN || xca;
            f->sdpa = find(c, cls_n, "Sdpa") || find(c, cls_n, "Flash");
            fused += f->attention && f->sdpa;
            f->se_class = find(c, cls_n, "SqueezeExcit") || find(c, cls_n, "SEModule");
            f->split_attn = find(c, cls_n, "SplitAttn") || find(c, cls_n, "SplAtConv");
            f->in_attention = f->attention || (depth > 0 && st[depth - 1].in_attention);
            if (f->attention && sp.n && !sp.grid && sp.conv_not_patch) {
                const struct mt_shape *v = sp_newest(&sp);
                /* global attention costs the square of its positions: networks run it
                 * at a sixteenth of the image's side or coarser (CAFormer, CoAtNet,
                 * EfficientFormer, LeViT), at an eighth on a patch embedding's grid (PiT,
                 * below); on finer tensors it is local (windows, blocks, unfolded patches:
                 * NesT, MobileViT, Hiera), whose size the print
                 * does not show, and left to the rules that refuse it, but for a block
                 * that says it partitions the tensor (torchvision's and timm's MaxViT:
                 * PartitionAttentionLayer, PartitionAttentionCl), whose windows and
                 * grids are 7 x 7 in every published size, and for attention inside a
                 * MobileViT block (mobilevit_block: each position attends to the
                 * positions at its place in the other 2 x 2 patches) */
                int pd = -1; /* the partitioning block */
                for (int d = depth - 1; d >= 0 && d >= depth - 2 && pd < 0; d--)
                    if (st[d].cls && find(st[d].cls, st[d].cls_n, "Partition"))
                        pd = d;
                /* (Twins' LocallyGroupedAttn says so itself, as does timm's
                 * WindowAttention over a tensor that no patch merging made, DaViT's: 7 x 7
                 * windows in timm's every size; the padding to whole windows is not
                 * counted. Other classes so named keep other windows, Florence-2's 12:
                 * refused) DaViT's attention over channels (fused_qkv_first) runs
                 * its linear layers per position too. */
                f->partitioned = pd >= 0 || find(c, cls_n, "LocallyGrouped") ||
                                 name_is(c, cls_n, "WindowAttention");
                for (int d = depth - 1; d >= 0 && pd < 0 && !f->unfolded; d--)
                    f->unfolded = st[d].cls && mobilevit_block(st[d].cls, st[d].cls_n);
                f->channels =
                    xca || (v && find(c, cls_n, "ChannelAttention") && fused_qkv_first(L, v->c));
                f->l2qk = xca;
                /* with keys and values reduced by a strided convolution (PVT, SegFormer),
                 * the gate is on their positions, the queries' at any stride. An eighth of
                 * the image only on the grid of a patch embedding, the model's one
                 * convolution so far, where a fused C -> 3C projection (q, k and v; no
                 * pooling in the block) opens the block: PiT's first stage. (VOLO's local
                 * outlook attention at 1/8 follows a convolutional stem; a CBAM gate
                 * follows a ResNet's: both refused as before, review.) */
                int64_t sr = 1;
                uint64_t convs = 0;
                for (size_t i = 0; i < m->n && convs < 2; i++)
                    convs += m->layers[i].kind == EST_K_CONV;
                uint64_t lim = v && convs == 1 && fused_qkv_first(L, v->c) ? 8 : 16;
                if (v && v->h * v->w > 1 && !v->pooled && first_leaf_reads(L, v->c, &sr) &&
                    (f->partitioned || f->unfolded || f->channels
                         ? sr == 1
                         : v->h >= (uint64_t)sr && v->w >= (uint64_t)sr &&
                               v->h / (uint64_t)sr <= (m->image_h + lim - 1) / lim &&
                               v->w / (uint64_t)sr <= (m->image_w + lim - 1) / lim)) {
                    f->sr = sr;
                    /* its linear layers, and its siblings' (its block's MLP), per position;
                     * not the root's (a head that pools in Python first) */
                    f->positions = 1;
                    if (depth > 1)
                        st[depth - 1].positions = 1;
                    if (pd > 0) /* and the partitioning block's (its MLP beside attn_layer) */
                        st[pd].positions = 1;
                    if (depth > 2 && st[depth - 1].cls &&
                        find(st[depth - 1].cls, st[depth - 1].cls_n, "Residual"))
                        /* a residual wrapper of its own in a list of such (LeViT's
                         * LevitResidualLayer, any ...Residual... class): the MLP is a sibling
                         * wrapper's, the list's */
                        st[depth - 2].positions = 1;
                }
            }
            f->mha = f->mha_heads = name_is(c, cls_n, "MultiheadAttention");
            f->ffn_act = name_is(c, cls_n, "TransformerEncoderLayer") ||
                         name_is(c, cls_n, "TransformerDecoderLayer");
            /* These layers call their MultiheadAttention with need_weights=False, which
             * PyTorch >= 2.1 runs as scaled_dot_product_attention's fused kernels (no
             * probabilities kept): fused unless --attention eager says otherwise. */
            if (f->mha && depth > 0 && st[depth - 1].ffn_act)
                f->sdpa = 1;
            f->first = m->n;
            f->cls = c;
            f->cls_n = cls_n;
            f->name = nm;
            f->name_n = nn;
            /* PEFT's prompt learning (prefix tuning, prompt tuning, P-tuning) keeps its
             * virtual tokens in a `prompt_encoder` ModuleDict (one per adapter), printed
             * after the model it feeds (SAM's prompt_encoder is a PromptEncoder block) */
            if (nm && nn == 14 && memcmp(nm, "prompt_encoder", 14) == 0 &&
                peft_prompt_encoder(c, cls_n, &L))
                return carma_err_at(err, file, L.line,
                                    "a PEFT prompt-learning model (prefix tuning, prompt "
                                    "tuning or P-tuning: its prompt_encoder): the virtual "
                                    "tokens and past key values it feeds every layer, and "
                                    "which parameters train, are not modelled; measure a "
                                    "run's peak and use 'carma submit --mem SIZE'");
            f->merging = find(c, cls_n, "PatchMerging") != NULL;
            if ((f->merging || (f->attention && !f->positions && find(c, cls_n, "Window"))) &&
                (!sp.grid || !sp.n))
                return carma_err_at(err, file, L.line,
                                    "%.*s: windowed attention (Swin) runs over a grid of "
                                    "patches that its patch merging halves between stages, "
                                    "which a module tree shows only %s; else give a torchinfo "
                                    "table",
                                    (int)cls_n, c,
                                    !spatial_on ? "with --image-size: give it"
                                    : !sp.grid  ? "with a block named ...PatchMerging or "
                                                  "PatchMergingV2"
                                                : "after a convolution cuts the patches (none "
                                                  "before this line)");
            if (f->merging && grid_merge(m, &sp, f) < 0)
                return carma_err_at(err, file, L.line, "too many layers or too large a layer");
            if (f->merging && !merge_line)
                merge_line = L.line;
            if (sp.grid && find(c, cls_n, "PatchExpand"))
                return carma_err_at(err, file, L.line,
                                    "%.*s: a decoder that expands the grid of patches again "
                                    "(Swin-Unet) is not modelled; give a torchinfo table",
                                    (int)cls_n, c);
            f->peft = depth > 0 ? peft_child(st[depth - 1].peft, nm, nn) : MT_P_NONE;
            f->in_unit = depth > 0 && (st[depth - 1].unit || st[depth - 1].in_unit);
            f->unit = depth > 0 && st[depth - 1].numbered && !f->in_unit;
            f->unit_row = m->n;
            f->lora_row = SIZE_MAX;
            if (cls_n > 5 && memcmp(c, "lora.", 5) == 0 && f->peft == MT_P_NONE)
                f->peft = MT_P_LORA;
            else if (name_is(c, cls_n, "ModulesToSaveWrapper") && f->peft == MT_P_NONE)
                f->peft = MT_P_MTS;
            if (f->peft == MT_P_LORA || f->peft == MT_P_MTS)
                peft = 1;
            continue;
        }
        /* A leaf: "Class(args)" with an optional ", N params" suffix. */
        if (depth < 0)
            done = L.line; /* a one-line tree */
        const char *close = NULL;
        int pd = 1;
        for (size_t j = 0; j < an; j++) {
            if (args[j] == '(')
                pd++;
            else if (args[j] == ')' && --pd == 0) {
                close = args + j;
                break;
            }
        }
        if (!close)
            return carma_err_at(err, file, L.line, "unbalanced parentheses");
        size_t argn = (size_t)(close - args);
        const char *tail = close + 1;
        size_t tn = an - argn - 1;
        uint64_t suffix_params = 0;
        int have_suffix = 0;
        if (tn) {
            const char *wm = find(tail, tn, " with ");
            if (wm && tail[0] == ' ' && find(wm, tn - (size_t)(wm - tail), " model: "))
                /* sentence-transformers' model card: "(0): Transformer({...}) with
                 * Transformer model: BertModel" */
                return carma_err_at(err, file, L.line,
                                    "%.*s(...)%.*s: a sentence-transformers print, whose "
                                    "module hides the encoder it wraps; print(model[0]."
                                    "auto_model) prints the encoder's module tree (the "
                                    "pooling and normalisation after it keep little), or "
                                    "give a torchinfo table",
                                    (int)cls_n, c, (int)(tn > 80 ? 80 : tn), tail);
            if (tail[0] != ',' || tn < 8 || memcmp(tail + tn - 7, " params", 7) != 0 ||
                est_parse_count(tail + 1, tn - 8, &suffix_params) < 0)
                return carma_err_at(err, file, L.line, "unexpected text after the module");
            have_suffix = 1;
        }
        uint8_t role = depth >= 0 ? peft_child(st[depth].peft, nm, nn) : MT_P_NONE;
        if (role == MT_P_SKIP) {
            /* peft's DoRA (use_dora=True): a DoraLinearLayer in lora_magnitude_vector (peft
             * 0.11 and later), or a non-empty ParameterDict of that name (peft 0.9, 0.10);
             * read as plain LoRA, with a note (est_notes) that what it adds is not counted */
            if (!m->dora_line &&
                (find(c, cls_n, "Dora") ||
                 (nm && name_is(nm, nn, "lora_magnitude_vector") && find(args, argn, "Parameter"))))
                m->dora_line = L.line;
            continue;
        }
        if (role == MT_P_DROP || role == MT_P_A || role == MT_P_B) {
            struct mt_frame *lf = lora_frame(st, depth);
            if (!lf)
                return carma_err_at(err, file, L.line, "a LoRA part outside a lora block");
            if (role == MT_P_DROP) {
                /* nn.Dropout when lora_dropout > 0, else nn.Identity */
                if (est_kind_classify(c, cls_n) == EST_K_DROPOUT &&
                    !find(args, argn, "p=0.0,") && !find(args, argn, "p=0,"))
                    lf->lora_drop = 1;
                continue;
            }
            int64_t ai = arg_int(args, argn, "in_features=");
            int64_t ao = arg_int(args, argn, "out_features=");
            if (ai <= 0 || ao <= 0)
                return carma_err_at(err, file, L.line,
                                    "a LoRA adapter %.*s: only linear adapters "
                                    "(in_features/out_features) are sized",
                                    (int)cls_n, c);
            uint64_t ap = param_count((uint64_t)ai, (uint64_t)ao,
                                      find(args, argn, "bias=False") ? 0 : (uint64_t)ao);
            if (ap > EST_MAX_PARAMS || lf->lora_params > EST_MAX_PARAMS)
                return carma_err_at(err, file, L.line, "LoRA adapter too large");
            lf->lora_params += ap;
            if (role == MT_P_A)
                lf->lora_rank = (uint64_t)ao;
            continue;
        }
        if (depth >= 0) {
            st[depth].child++; /* before sizing: a convolution's branch is this child */
            st[depth].entries += (uint64_t)rep;
            st[depth].leaf_kids++;
            st[depth].list_n = 0;
            kid_start(&st[depth], m->n, L.line);
            child_start(&st[depth], &sp);
        }
        if ((rc = refuse_unmodelled(file, L.line, c, cls_n, err)))
            return rc;
        mark_upsampling(st, depth, c, cls_n);
        enum est_kind k = est_kind_classify(c, cls_n);
        if (k == EST_K_DROPOUT && dropout_zero(args, argn)) {
            k = EST_K_OTHER;
            for (int d = depth; d >= 0 && st[d].in_attention; d--)
                st[d].zero_drop = 1; /* the attention block's, whichever holds it */
        }
        if (k == EST_K_SOFTMAX && sp.grid && depth >= 0 && st[depth].in_attention)
            k = EST_K_OTHER; /* timm's: the windowed attention's row holds its output */
        if (k == EST_K_OTHER && argn == 0 && moe_fused(c, cls_n))
            return moe_fused_refuse(file, L.line, c, cls_n, err);
        /* a head printed without its size (Baichuan's NormHead(), which holds its own
         * V x E weight) is no norm: a leaf of no known kind (tied_head sizes it) */
        int bare_head = k == EST_K_NORM && argn == 0 && cls_n > 4 &&
                        memcmp(c + cls_n - 4, "Head", 4) == 0;
        if (bare_head)
            k = EST_K_OTHER;
        int inplace = k == EST_K_ACT && find(args, argn, "inplace=True") != NULL;
        int lscale = layer_scale_leaf(k, c, cls_n, argn);
        int grn = k == EST_K_NORM &&
                  (find(c, cls_n, "GlobalResponseNorm") || name_ends(c, cls_n, "GRN"));
        for (int d = 0; grn && d <= depth; d++)
            st[d].grn = 1;
        unsigned extra_flags = 0;
        uint64_t out = prev_out, params = 0;
        int64_t kw = 0; /* a sequence convolution's kernel, an unfold's positions */
        int seqconv = 0; /* a 1-D convolution read along the sequence */
        /* the fewest parameters the printed arguments allow (no bias, no norm's shift);
         * UINT64_MAX: they do not say, and a suffix gives the count */
        uint64_t args_lo = UINT64_MAX;
        int64_t in_f = arg_int(args, argn, "in_features=");
        int64_t out_f = arg_int(args, argn, "out_features=");
        int64_t nf = arg_int(args, argn, "nf=");
        int64_t nx = arg_int(args, argn, "nx=");
        int bias = !find(args, argn, "bias=False");
        int64_t pos[2];
        int npos = arg_positional(args, argn, pos, 2);
        if (npos < 0)
            return carma_err_at(err, file, L.line, "dimension too large");
        /* an embedding table sized by keyword, as PyTorch's quantized modules print
         * theirs (QuantizedEmbeddingBag(num_embeddings=..., embedding_dim=...)) */
        if (k == EST_K_EMBED && npos < 2 && arg_int(args, argn, "num_embeddings=") > 0 &&
            arg_int(args, argn, "embedding_dim=") > 0) {
            pos[0] = arg_int(args, argn, "num_embeddings=");
            pos[1] = arg_int(args, argn, "embedding_dim=");
            npos = 2;
        }
        /* A token shift (ZeroPad2d((0, 0, 1, -1)): each token takes its predecessor's
         * features) inside an attention block: RWKV's time mixing, a linear recurrence
         * (the WKV kernel), not softmax attention; refused as Mamba's scan is. */
        if (depth >= 0 && st[depth].in_attention && name_is(c, cls_n, "ZeroPad2d") &&
            find(args, argn, "(0, 0, 1, -1)"))
            return carma_err_at(err, file, L.line,
                                "%.*s((0, 0, 1, -1)) inside an attention block: a token shift, "
                                "RWKV's time mixing, a linear recurrence (the WKV kernel) that "
                                "runs as a function, not softmax attention: what it keeps is in "
                                "no summary. Measure a training run's peak "
                                "(torch.cuda.max_memory_reserved()) and submit with 'carma "
                                "submit --mem SIZE'",
                                (int)cls_n, c);
        if (in_f >= 0 && out_f >= 0) {
            k = EST_K_LINEAR;
            out = (uint64_t)out_f;
            params = param_count((uint64_t)in_f, (uint64_t)out_f, bias ? (uint64_t)out_f : 0);
            args_lo = param_count((uint64_t)in_f, (uint64_t)out_f, 0);
        } else if (name_is(c, cls_n, "Bilinear") && out_f >= 0 &&
                   arg_int(args, argn, "in1_features=") >= 0 &&
                   arg_int(args, argn, "in2_features=") >= 0) {
            /* nn.Bilinear(in1_features, in2_features, out_features): an out x in1 x in2
             * weight and an out bias, its output out wide; read as a linear layer from its
             * first input (the flow's) */
            k = EST_K_LINEAR;
            in_f = arg_int(args, argn, "in1_features=");
            uint64_t in2 = (uint64_t)arg_int(args, argn, "in2_features=");
            out = (uint64_t)out_f;
            args_lo = (uint64_t)in_f > 0 && in2 > EST_MAX_PARAMS / (uint64_t)in_f
                          ? UINT64_MAX
                          : param_count((uint64_t)in_f * in2, out, 0);
            params = args_lo == UINT64_MAX ? UINT64_MAX : args_lo + (bias ? out : 0);
        } else if (nf >= 0 && nx >= 0) {
            k = EST_K_LINEAR;
            out = (uint64_t)nf;
            params = param_count((uint64_t)nf, (uint64_t)nx, (uint64_t)nf);
            args_lo = param_count((uint64_t)nf, (uint64_t)nx, 0);
            in_f = nx;
        } else if (k == EST_K_LINEAR && name_is(c, cls_n, "Conv1D") && !have_suffix) {
            return carma_err_at(err, file, L.line,
                                "Conv1D() without nf/nx (older transformers print none): "
                                "cannot size it; give a torchinfo table");
        } else if (k == EST_K_CONV && !spatial_on && tok_rows && npos == 2 && depth >= 0 &&
                   st[depth].in_attention && !qkv_role(nm, nn) &&
                   (kw = seq_conv1d(c, cls_n, args, argn)) > 0) {
            /* A 1-D convolution after a token table, inside an attention block beside its
             * projections, that keeps the length runs along the sequence (ConvBERT's
             * span-based convolution): per token, its output channels. Not a query, key or
             * value itself (SqueezeBERT's: then no attention would be read), nor one outside
             * attention (a text-to-speech model's, which may run on mel frames, longer than
             * the tokens): refused as before. */
            seqconv = 1;
            int64_t g = arg_int(args, argn, "groups=");
            if (g < 1)
                g = 1;
            if (pos[0] < 1 || pos[1] < 1 || pos[0] % g || pos[1] % g)
                return carma_err_at(err, file, L.line, "bad %.*s channels", (int)cls_n, c);
            out = (uint64_t)pos[1];
            args_lo = param_count(out, (uint64_t)(pos[0] / g) * (uint64_t)kw, 0);
            params = args_lo == UINT64_MAX ? UINT64_MAX : args_lo + (bias ? out : 0);
            m->needs_seq = 1;
            if (!m->needs_seq_line)
                m->needs_seq_line = L.line;
        } else if (!spatial_on && tok_rows && prev_out && name_is(c, cls_n, "Unfold") &&
                   (kw = unfold_same(args, argn)) > 0) {
            /* nn.Unfold over the sequence (ConvBERT's, around each token): a new tensor,
             * k times the last layer's output, which the product after it keeps (its
             * input it does not: unfold's gradient is a fold) */
            k = EST_K_POOL;
            out = (uint64_t)kw > EST_MAX_ELEMS / prev_out ? UINT64_MAX : (uint64_t)kw * prev_out;
            extra_flags |= EST_LF_PRODUCT | EST_LF_SAVES_RESULT;
        } else if (k == EST_K_CONV && spatial_on) {
            if (!spatial_line)
                spatial_line = L.line; /* sized below, by spatial_leaf */
            m->spatial = 1;
        } else if (k == EST_K_CONV) {
            uint64_t patch = 0;
            int64_t ks[3];
            int nks = 0;
            int pc = npos == 2 ? patch_conv(args, argn, (uint64_t)pos[0], &patch, ks, &nks) : 0;
            if (pc < 0)
                return carma_err_at(err, file, L.line, "bad %.*s arguments", (int)cls_n, c);
            int64_t kd[3];
            int nk = pc == 0 ? arg_dims(args, argn, "kernel_size=", kd, 3) : 2;
            int64_t cpad[3];
            if (pc == 0 && nk == 1 && npos == 2 && pos[0] == pos[1] &&
                arg_int(args, argn, "groups=") == pos[0] &&
                arg_dims(args, argn, "padding=", cpad, 3) == 1 && cpad[0] == kd[0] - 1)
                /* depthwise and causal (padded by its kernel less one): the short
                 * convolution of a state-space or recurrent mixer */
                return carma_err_at(err, file, L.line,
                                    "%.*s: a causal depthwise convolution, part of a "
                                    "state-space or recurrent mixer (Mamba's MambaMixer with "
                                    "x_proj and dt_proj, Griffin's recurrent block), whose "
                                    "selective scan runs as a function: what it keeps is in "
                                    "no summary, a torchinfo table's neither. Measure a "
                                    "training run's peak (torch.cuda.max_memory_reserved()) "
                                    "and submit with 'carma submit --mem SIZE'",
                                    (int)cls_n, c);
            if (pc == 0 && (nk == 1 || nk == 3 || (nk == 0 && !find(c, cls_n, "2d"))))
                return carma_err_at(err, file, L.line,
                                    "%.*s in a module tree: the print has no spatial sizes, "
                                    "and " MT_CONV_NOT_2D,
                                    (int)cls_n, c);
            if (pc == 0)
                return carma_err_at(err, file, L.line,
                                    "%.*s in a module tree: the print has no spatial sizes; "
                                    "give --image-size (the input's height and width, e.g. "
                                    "224) for a CNN; a model that also runs attention over a "
                                    "sequence (a diffusion U-Net) needs a torchinfo table of "
                                    "it run on its inputs (torchinfo.summary(model, "
                                    "input_data=...)), or a torchsummary one",
                                    (int)cls_n, c);
            /* A patch embedding: per patch (token), a linear layer from its pixels. */
            if (!m->patch_h && nks == 2 && ks[0] <= UINT32_MAX && ks[1] <= UINT32_MAX) {
                m->patch_h = (uint32_t)ks[0];
                m->patch_w = (uint32_t)ks[1];
            }
            if (!patch_line)
                patch_line = L.line;
            k = EST_K_LINEAR;
            in_f = (int64_t)patch;
            out = (uint64_t)pos[1];
            params = param_count(patch, out, bias ? out : 0);
            args_lo = param_count(patch, out, 0);
            if (m->n == 0)
                m->input = patch;
            m->cudnn = 1;
            m->needs_seq = 1;
            if (!m->needs_seq_line)
                m->needs_seq_line = L.line;
        } else if (k == EST_K_LINEAR && !have_suffix) {
            return carma_err_at(err, file, L.line,
                                "%.*s without in_features/out_features (or nf/nx): cannot size it",
                                (int)cls_n, c);
        } else if (k == EST_K_EMBED && depth >= 0 && st[depth].in_attention) {
            /* A position-bias table inside attention (T5's relative_attention_bias): its
             * lookup is added to the scores, not passed along the layers; the scores are
             * then computed explicitly in every attention block after it (T5's blocks
             * reuse the first one's bias), whatever the configuration says. A rotary
             * embedding (LlamaRotaryEmbedding(), no table) is neither. */
            k = EST_K_OTHER;
            if (!m->scores_bias_line && npos == 2)
                m->scores_bias_line = L.line;
            if (!m->bias_heads && npos == 2 && pos[1] > 0 && pos[1] <= EST_MAX_HEADS)
                m->bias_heads = (uint32_t)pos[1]; /* a bias per head */
            out = 0;
            if (npos == 2)
                args_lo = params = param_count((uint64_t)pos[0], (uint64_t)pos[1], 0);
        } else if (k == EST_K_EMBED && depth >= 0 && npos == 2 && pos[0] >= 0 &&
                   tok_rows > (uint64_t)pos[0] && frame_attn_rows(m, &st[depth])) {
            /* A table after the attention layers of its own block, in a model whose token
             * table, larger, came before (DeBERTa's encoder-level rel_embeddings, MPNet's
             * relative_attention_bias): positions the layers' attention adds to its
             * scores, which it then computes in Python. Those layers keep their
             * probabilities whatever --attention says (EST_LF_SCORES, as a table inside
             * attention), and the table makes no tensor in the flow. A model's only table
             * printed after its layers (PyTorch's tutorial TransformerModel registers its
             * token table last) is its token table. */
            k = EST_K_OTHER;
            out = 0;
            args_lo = params = param_count((uint64_t)pos[0], (uint64_t)pos[1], 0);
            struct mt_frame *sf = &st[depth];
            if (sf->scores_to < sf->first || sf->scores_to > m->n)
                sf->scores_to = sf->first;
            for (; sf->scores_to < m->n; sf->scores_to++)
                if (m->layers[sf->scores_to].kind == EST_K_ATTN)
                    m->layers[sf->scores_to].flags |= EST_LF_SCORES;
            if (!m->scores_bias_line)
                m->scores_bias_line = L.line;
        } else if (k == EST_K_EMBED && cls_n >= 12 &&
                   memcmp(c + cls_n - 12, "EmbeddingBag", 12) == 0 && npos >= 2) {
            /* EmbeddingBag(n, d): a table of n x d whose bags reduce to one d-vector a
             * bag (DLRM's sparse features: one bag per sample and table), so no sequence */
            out = (uint64_t)pos[1];
            params = param_count((uint64_t)pos[0], (uint64_t)pos[1], 0);
            args_lo = params;
        } else if (k == EST_K_EMBED && find(c, cls_n, "Embedding") && cls_n >= 9 &&
                   memcmp(c + cls_n - 9, "Embedding", 9) == 0 && npos == 2) {
            ntables++;
            out = (uint64_t)pos[1];
            params = param_count((uint64_t)pos[0], (uint64_t)pos[1], 0);
            args_lo = params;
            m->needs_seq = 1;
            if (depth >= 0 && (uint64_t)pos[0] > st[depth].tab_rows) {
                st[depth].tab_rows = (uint64_t)pos[0]; /* head_last cites it */
                st[depth].tab_line = L.line;
            }
            if ((uint64_t)pos[0] > tok_rows) { /* the model's token table (tied_head) */
                tok_rows = (uint64_t)pos[0];
                tok_width = (uint64_t)pos[1];
                tok_line = L.line;
            }
            if (!m->needs_seq_line)
                m->needs_seq_line = L.line;
            /* a learned position table bounds the sequence the model can take */
            int table = nm && ((nn == 3 && memcmp(nm, "wpe", 3) == 0) || find(nm, nn, "position"));
            if (table && m->max_positions && (uint64_t)pos[0] != m->max_positions &&
                !m->positions_differ[0]) {
                m->positions_differ[0] = m->max_positions_line;
                m->positions_differ[1] = L.line;
            }
            if (table && (!m->max_positions || (uint64_t)pos[0] < m->max_positions)) {
                m->max_positions = (uint64_t)pos[0];
                m->max_positions_line = L.line;
            }
            if (!table && pos[0] > pos[1] && !vocab_line)
                vocab_line = L.line;
        } else if (k == EST_K_EMBED) {
            k = EST_K_OTHER; /* rotary / positional helpers without a table */
            out = 0;
        } else if (k == EST_K_NORM) {
            if (npos >= 1) {
                /* GroupNorm(num_groups, num_channels); the others name the channels or
                 * the normalised shape first */
                out = (uint64_t)(npos == 2 && find(c, cls_n, "GroupNorm") ? pos[1] : pos[0]);
                /* LocalResponseNorm(size, ...) has no weights: its argument is a window;
                 * FrozenBatchNorm2d(64, eps=1e-05) (torchvision, detectron2, timm) holds its
                 * scale and shift as buffers, which no optimizer trains (detectron2 prints
                 * num_features=, no positional argument: none either) */
                int affine = !find(args, argn, "elementwise_affine=False") &&
                             !find(args, argn, "affine=False") &&
                             !find(c, cls_n, "LocalResponseNorm") &&
                             !(cls_n > 6 && memcmp(c, "Frozen", 6) == 0);
                params = affine ? 2 * out : 0;
                if ((find(args, argn, "bias=False") || find(c, cls_n, "RMSNorm")) && affine)
                    params = out; /* a scale, no shift */
                args_lo = affine ? out : 0;
            } else if (est_type_flags(k, c, cls_n) & EST_LF_RMS) {
                /* an RMSNorm written in Python that prints no shape (T5LayerNorm(), older
                 * transformers' LlamaRMSNorm()): a scale over the tensor before it */
                params = out;
            }
        } else if (lscale && !sp.n) {
            k = EST_K_POOL; /* sized in a convolutional tree after spatial_leaf */
            params = out;
        } else if (inplace && !sp.n) {
            k = EST_K_OTHER; /* writes over its input: no new tensor */
            out = 0;
        } else if (k == EST_K_DROPOUT || k == EST_K_ACT || k == EST_K_SOFTMAX) {
            /* same shape as the layer before; nn.PReLU's slopes are parameters (its
             * print names how many: PReLU(num_parameters=256)) */
            if (class_is(c, cls_n, "PReLU", 5)) {
                int64_t np = arg_int(args, argn, "num_parameters=");
                params = np > 0 ? (uint64_t)np : 1;
            }
        } else {
            out = 0; /* an unknown leaf: no tensor we can size */
            /* ... nor parameters, unless counted: a class of no kind that prints arguments
             * may hold some (not one of those that pass their input on or reshape it) */
            if (argn && !have_suffix && !m->unsized_line &&
                est_kind_classify(c, cls_n) == EST_K_OTHER && !leaf_paramless(c, cls_n)) {
                m->unsized_line = L.line;
                snprintf(m->unsized_cls, sizeof m->unsized_cls, "%.*s",
                         (int)(cls_n < sizeof m->unsized_cls ? cls_n : sizeof m->unsized_cls - 1),
                         c);
            }
        }
        /* A network inside windowed attention that computes the position bias from the
         * relative coordinates of a window (Swin V2's cpb_mlp: Linear(2, 512), ReLU,
         * Linear(512, heads), in a block of its own; timm's RelPosMlp in attention over
         * positions): its rows are (2 w - 1)^2, per window and not per sample, and no
         * layer reads them: parameters, no tensor. */
        int ad = attention_frame(st, depth); /* the attention block it is in, if any */
        int posbias = (sp.grid || (ad >= 0 && st[ad].positions)) && depth > 0 &&
                      !st[depth].attention &&
                      st[depth].in_attention &&
                      (st[depth].posbias ||
                       (k == EST_K_LINEAR && in_f == 2 && st[depth].first == m->n));
        if (posbias) {
            st[depth].posbias = 1;
            if (ad >= 0) /* the attention it biases: cosine (Swin V2's) */
                st[ad].cosine = 1;
            k = EST_K_OTHER;
            out = 0;
        }
        /* A LoRA base layer stands where its lora.* block does, in the block around it. */
        struct mt_frame *pf = depth >= 0 ? &st[depth] : NULL;
        if (role == MT_P_BASE)
            pf = depth > 0 ? &st[depth - 1] : NULL;
        int conv_sized = k == EST_K_CONV && spatial_on; /* spatial_leaf counts its weights */
        sp.ahead = L;
        /* a LoRA base layer plays the role of the lora.* block it is in (named q_proj) */
        sp.leaf_qkv = k != EST_K_LINEAR   ? 0
                      : role == MT_P_BASE ? qkv_role(st[depth].name, st[depth].name_n)
                                          : qkv_role(nm, nn);
        if (!posbias && (sp.n || spatial_on) &&
            spatial_leaf(m, &sp, st, depth, c, cls_n, args, argn, bias, pos, npos,
                         in_f > 0 ? (uint64_t)in_f : 0, inplace, &k, &out, &params,
                         &extra_flags, file, L.line, err) < 0)
            return -EINVAL;
        if (lscale && sp.n) {
            k = EST_K_POOL;
            layer_scale_size(&sp, &out, &params);
        }
        if (lscale)
            extra_flags |= EST_LF_PRODUCT;
        if (sp.upsampled) {
            /* the newest tensor upsampled in Python before the join this leaf reads
             * (sp_input): a new tensor, as an Upsample module's */
            if (est_model_add(m, EST_K_POOL, sp.upsampled, 0,
                              (uint32_t)((uint64_t)rep * parent_mult), 0) < 0)
                return carma_err_at(err, file, L.line, "too many layers or too large a layer");
            est_layer_type(&m->layers[m->n - 1], "Upsample", 8);
            sp.upsampled = 0;
        }
        if (conv_sized && params != UINT64_MAX && npos == 2) /* the bias: one per output */
            args_lo = bias ? params - (uint64_t)pos[1] : params;
        if (pf)
            norm_settle(pf, k == EST_K_ACT || k == EST_K_LINEAR);
        /* A suffix below the fewest parameters the printed arguments allow (no bias) is an
         * edited or corrupted print, and it would lower the estimate. One above them is
         * taken as printed: the recipe sums module._parameters, which may hold more
         * (weight_norm's weight_g, one per output) and errs on the safe side. */
        /* bitsandbytes' Linear4bit keeps its weight packed two to a byte: a recipe that
         * sums p.shape counts half its parameters; the printed arguments give them all. */
        int packed4 = have_suffix && args_lo != UINT64_MAX && suffix_params < args_lo &&
                      find(c, cls_n, "4bit") && suffix_params >= args_lo / 2;
        if (packed4)
            have_suffix = 0;
        if (have_suffix && args_lo != UINT64_MAX && suffix_params < args_lo)
            return carma_err_at(err, file, L.line,
                                "%.*s: its suffix says %llu params, fewer than the %llu its "
                                "printed arguments make at the least: an edited or corrupted "
                                "print? correct or remove the suffix",
                                (int)cls_n, c, (unsigned long long)suffix_params,
                                (unsigned long long)args_lo);
        if (have_suffix)
            params = suffix_params;
        if (k == EST_K_LINEAR && depth >= 0 && in_f > 0 && (uint64_t)in_f > st[depth].width)
            st[depth].width = (uint64_t)in_f;
        if (k == EST_K_LINEAR && depth >= 0 && st[depth].mha && in_f > 0) {
            /* MultiheadAttention's only printed child is out_proj (E -> E); its query,
             * key and value projection (in_proj_weight, 3E x E, and its bias) comes first. */
            uint64_t e = (uint64_t)in_f;
            st[depth].mha = 0;
            if (est_model_add(m, EST_K_LINEAR, 3 * e, param_count(3 * e, e, bias ? 3 * e : 0),
                              (uint32_t)((uint64_t)rep * parent_mult), 0) < 0)
                return carma_err_at(err, file, L.line, "too many layers or too large a layer");
        }
        /* A global response norm (ConvNeXt V2: x + addcmul(b, g, x * N(x))) keeps the
         * product x * N(x) for its weight's gradient besides its output: a second tensor
         * of its input's size, made first. */
        if (grn && out) {
            if (est_model_add(m, EST_K_POOL, out, 0, (uint32_t)((uint64_t)rep * parent_mult),
                              0) < 0)
                return carma_err_at(err, file, L.line, "too many layers or too large a layer");
            est_layer_type(&m->layers[m->n - 1], "Mul", 3);
            m->layers[m->n - 1].flags |= EST_LF_PRODUCT;
        }
        if (est_model_add(m, k, out, params, (uint32_t)((uint64_t)rep * parent_mult), 0) < 0)
            return carma_err_at(err, file, L.line, "too many layers or too large a layer");
        struct est_layer *nl = &m->layers[m->n - 1];
        est_layer_type(nl, c, cls_n);
        nl->flags |= (uint32_t)extra_flags;
        if (k == EST_K_EMBED && nm && nl->count == 1)
            tie_shared(m, nl, nm, nn, &shared);
        if (depth >= 0 && role == MT_P_NONE)
            moe_leaf(&st[depth], m, nm, nn, L.line);
        if (role == MT_P_ORIG) { /* weights only: the forward runs the trained copy */
            nl->kind = EST_K_OTHER;
            nl->out = 0;
            nl->per_token = nl->attn = 0;
            continue;
        }
        if (role == MT_P_SAVE)
            nl->flags |= EST_LF_TRAINED;
        if (bare_head) {
            bare_head_line = L.line;
            bare_head_row = m->n - 1;
        }
        if (role == MT_P_BASE)
            st[depth].lora_row = m->n - 1;
        /* a quantized weight (bitsandbytes' Linear4bit, Linear8bitLt, HQQ, AWQ): a LoRA's
         * base_layer, a layer the adapters left out (QLoRA with some target_modules) or
         * one of a model printed before its adapters came, stored as such and frozen
         * everywhere (its bias too, as PEFT freezes it) */
        if (k == EST_K_LINEAR)
            nl->wbits = (uint8_t)quant_bits(c, cls_n, args, argn, in_f);
        if (nl->wbits) {
            nl->frozen = nl->params;
            if (!m->quant_line)
                m->quant_line = L.line;
            m->quant_params += nl->params * nl->count;
        }
        if (k == EST_K_LINEAR || k == EST_K_EMBED || k == EST_K_NORM || seqconv)
            prev_out = out;
        if (pf && k == EST_K_LINEAR)
            pf->qkv |= qkv_role(nm, nn);
        if (pf && k == EST_K_LINEAR &&
            (name_is(nm, nn, "query_global") || name_is(nm, nn, "key_global") ||
             name_is(nm, nn, "value_global")))
            pf->global_proj = 1;
        if (pf && (!sp.n || sp.grid)) {
            if (k == EST_K_LINEAR && pf->ndlin++ < 2)
                pf->dlin[pf->ndlin - 1] = m->n - 1;
            if (k == EST_K_ACT) {
                pf->dact = m->n - 1;
                pf->ndact++;
            }
        }
        if (pf && sp.n) {
            pf->first_leaf_done = 1;
            if (k == EST_K_ACT) {
                pf->nact++;
                pf->act_kind = (uint8_t)k;
                pf->act_flags = m->layers[m->n - 1].flags;
            } else if (k == EST_K_NORM) {
                pf->pending = m->n - 1;
            }
        }
    }
    if (rc < 0)
        return rc;
    if (depth >= 0)
        return carma_err_at(err, file, st[depth].line,
                            "block opened here is never closed: the print ends with %d "
                            "block%s open; a print cut short may have lost layers, its "
                            "output head among them: give it whole",
                            depth + 1, depth ? "s" : "");
    if (m->n == 0)
        return carma_err_at(err, file, L.line ? L.line : 1, "no layers in the module tree");
    if (sp.grid && merge_line && !m->window_line)
        return carma_err_at(err, file, merge_line,
                            "a patch merging (this line) without attention read as Swin's over "
                            "the grid of patches (a class named ...Attention holding linear "
                            "projections: mmdetection's WindowMSA, or attention built of "
                            "convolutions, is not): not modelled; give a torchinfo table");
    if (m->spatial && m->needs_seq) {
        /* est_parse reads it again as a vision transformer, when it is one */
        carma_err_at(err, file, m->needs_seq_line,
                     "a sequence model (this line) with convolutions that do not cut the image "
                     "into patches (line %zu): --image-size sizes the convolutions but not the "
                     "sequence, and --seq-len the sequence but not the convolutions; give a "
                     "torchinfo table of it run on its inputs (torchinfo.summary(model, "
                     "input_data=...)), which lists every shape",
                     spatial_line);
        return -EAGAIN;
    }
    /* CLIP's towers: text at its table's length, image patches at theirs; one sequence
     * length for every layer would misstate one of them. */
    if (m->patch_h && m->positions_differ[0])
        return carma_err_at(err, file, m->positions_differ[1],
                            "learned position tables of different lengths (lines %zu and %zu) "
                            "beside a patch embedding: a two-tower model (text and image, as "
                            "CLIP) whose towers take different sequence lengths, which one "
                            "--seq-len or --image-size cannot give; give a torchinfo table of "
                            "it run on its inputs",
                            m->positions_differ[0], m->positions_differ[1]);
    /* One attention call in all, in a layer of a ModuleList (a unit): a list of one layer,
     * which a model may run several times (ALBERT): said in a note. */
    uint64_t ncalls = 0;
    int units = 0;
    for (size_t i = 0; i < m->n; i++) {
        if (m->layers[i].kind == EST_K_ATTN)
            ncalls += m->layers[i].count;
        units += (m->layers[i].unit & EST_UNIT_START) != 0;
    }
    if (ncalls == 1 && units == 1 && group_line) {
        /* ALBERT: its shared layer runs num_hidden_layers times (EST_SHARED_RUNS assumed),
         * each run keeping its activations: the unit's rows again after it, each a tied
         * row of the first run's (its parameters, its gradient added to theirs) */
        size_t u0 = 0, e;
        while (u0 < m->n && !(m->layers[u0].unit & EST_UNIT_START))
            u0++;
        for (e = u0; e < m->n && !(m->layers[e].unit & EST_UNIT_END); e++)
            ;
        e = e < m->n ? e + 1 : m->n;
        uint32_t runs = m->shared_layer_runs ? m->shared_layer_runs : EST_SHARED_RUNS;
        size_t ulen = e - u0, extra = ulen * (runs - 1);
        if (!ulen || runs > EST_MAX_SHARED_RUNS || m->n + extra > m->cap || e > UINT32_MAX ||
            m->n + extra > EST_REPLAY_MAX_NODES)
            return carma_err_at(err, file, group_line,
                                "too many layers: a layer group of %zu rows run %u times "
                                "makes more than the %u rows a replay takes",
                                ulen, runs, EST_REPLAY_MAX_NODES);
        memmove(&m->layers[e + extra], &m->layers[e], (m->n - e) * sizeof m->layers[0]);
        for (size_t r = 1; r < runs; r++)
            for (size_t k = 0; k < ulen; k++) {
                struct est_layer *c = &m->layers[e + (r - 1) * ulen + k];
                *c = m->layers[u0 + k];
                c->flags |= EST_LF_TIED;
                c->shared_from = (uint32_t)(u0 + k + 1);
            }
        m->n += extra;
        m->shared_line = group_line;
        if (bare_head_line && bare_head_row >= e) /* moved with the rows after the unit */
            bare_head_row += extra;
    } else if (ncalls == 1 && units == 1)
        m->single_layer_line = m->attn_line;
    if (m->attn_line && !pos_line && ntables <= 1 && !m->scores_bias_line && !patch_line &&
        !fused && !m->window_line && !m->positions_line && !m->channels_line)
        m->no_position_line = m->attn_line;
    /* A vision tower beside a language model (LLaVA, Qwen-VL): the tower runs on each
     * image's patches (and its position table bounds them), the language model on the
     * text with the image tokens, longer; every layer here runs at one length. */
    if (patch_line && vocab_line) {
        m->vision_lm[0] = patch_line;
        m->vision_lm[1] = vocab_line;
        return carma_err_at(err, file, patch_line,
                            "a multimodal model: a vision tower (patch embedding, this line) and "
                            "a language model (token table, line %zu) run at different "
                            "lengths (each image's patches; the text with the image tokens), "
                            "which one --seq-len or --image-size cannot give. Estimate each "
                            "from a print of the module that holds it (LLaVA's "
                            "model.vision_tower and model.language_model, a "
                            "VisionEncoderDecoderModel's model.encoder and model.decoder) and "
                            "add them, or measure a run's peak and use 'carma submit --mem "
                            "SIZE'",
                            vocab_line);
    }
    int th = tied_head(m, tok_rows, tok_width);
    if (th < 0)
        return carma_err_at(err, file, tok_line, "too many layers or too large a layer");
    if (th) {
        m->tied_head_line = tok_line;
        m->tied_head_rows = tok_rows;
        m->tied_head_width = tok_width;
        /* the head stands for a bare head among the rows after the model's last norm */
        int bare = bare_head_line != 0;
        for (size_t i = bare_head_row; bare && i + 1 < m->n; i++) {
            uint8_t kd = m->layers[i].kind;
            bare = kd == EST_K_DROPOUT || kd == EST_K_OTHER || kd == EST_K_EMBED;
        }
        if (bare)
            m->tied_head_bare = bare_head_line;
    }
    if (m->needs_seq)
        for (size_t i = 0; i < m->n; i++)
            m->layers[i].per_token = 1;
    if (peft)
        est_model_freeze(m);
    else /* quantized layers only */
        est_model_count_frozen(m);
    /* An output head of the table's shape, printed or assumed tied in forward (above; not
     * a bare head, which holds a weight of its own, nor a PEFT modules_to_save copy, a
     * parameter of its own that trains): one weight with the table's when the caller says
     * so (--tied-head). After the freeze, so that a head and a table both frozen or both
     * trained are what it ties. The replay aliases its weight to the table's (its bias, if
     * any, its own); an encoder-decoder's shared table is the source. */
    size_t table, head = head_of_table(m, tok_rows, tok_width, &table);
    if (head < m->n && table < head && !m->tied_head_bare) {
        m->head_table_line = tok_line;
        m->head_table_rows = tok_rows;
        m->head_table_width = tok_width;
        if (m->tie_head) {
            size_t src = table;
            for (size_t i = 0; i < m->n; i++)
                if (m->layers[i].flags & EST_LF_TIED_SRC) {
                    src = i; /* an encoder-decoder's shared table */
                    break;
                }
            m->layers[src].flags |= EST_LF_TIED_SRC;
            tie_to_table(m, &m->layers[head], tok_rows * tok_width); /* its bias its own */
            m->head_tied = 1;
            est_model_count_frozen(m); /* the head's row no longer counts */
        }
    }
    if (m->params && m->frozen >= m->params)
        return carma_err_at(err, file, m->quant_line ? m->quant_line : 1,
                            "nothing to train: %s; a training step needs trained "
                            "parameters. A QLoRA or LoRA job trains its adapters: give the "
                            "print of the model they were added to (after peft's "
                            "get_peft_model), or a torchinfo table of it",
                            m->quant_line && !peft
                                ? "every parameter is in a quantized layer (from this line), "
                                  "whose packed weight no optimizer can train"
                                : "the PEFT model has no adapter and no modules_to_save copy");
    if (peft)
        m->quant_params = 0; /* expected there: no note */
    return 0;
}

int est_parse_modtree(const char *buf, size_t len, const char *file, struct est_model *m,
                      struct carma_err *err)
{
    char *zipped;
    size_t zn;
    uint32_t *map;
    int z = zip_lists(buf, len, &zipped, &zn, &map);
    if (z < 0)
        return carma_err_set(err, -ENOMEM, "%s: out of memory", file);
    if (z == 0)
        return modtree_parse(buf, len, NULL, file, m, err);
    int rc = modtree_parse(zipped, zn, map, file, m, err);
    free(zipped);
    free(map);
    return rc;
}

/* ---- layer-table CSV ---------------------------------------------------------------- */

/* Layer classes of no modelled kind that pass their input on as a view (or, stochastic
 * depth, a scaled copy the corpus tables list as no tensor): a CSV may name them, and
 * they are kind other. Any other type outside the kinds is a typo or a layer carma
 * does not know, refused rather than left out. */
static int csv_viewlike(const char *t)
{
    static const char *const names[] = {"Identity", "Flatten", "Unflatten", "Permute",
                                        "Reshape", "StochasticDepth"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp(t, names[i]) == 0)
            return 1;
    return 0;
}

/* Tensor-producing classes of no kind of their own, read as the Keras table and the
 * module-tree readers read them: PyTorch's Upsample family a pool (a new tensor without
 * weights, spatial_leaf); a join, a pad, a crop, Keras's UpSampling, PixelShuffle other
 * (est_kind_classify, as in a Keras summary). -1: none of them. */
static int csv_tensor_class(const char *t)
{
    if (!strcmp(t, "Upsample") || !strcmp(t, "UpsamplingNearest2d") ||
        !strcmp(t, "UpsamplingBilinear2d"))
        return EST_K_POOL;
    static const char *const names[] = {"Add", "Concatenate", "PixelShuffle",
                                        "PixelUnshuffle"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(t, names[i]) == 0)
            return EST_K_OTHER;
    /* NAME1D/2D/3D (Keras) or NAME1d/2d/3d (PyTorch) */
    static const char *const fams[] = {"ZeroPadding", "UpSampling",     "Cropping",
                                       "ZeroPad",     "ReflectionPad",  "ReplicationPad",
                                       "ConstantPad", "CircularPad"};
    size_t n = strlen(t);
    for (size_t i = 0; i < sizeof fams / sizeof fams[0]; i++) {
        size_t fn = strlen(fams[i]);
        if (n == fn + 2 && strncmp(t, fams[i], fn) == 0 && t[fn] >= '1' && t[fn] <= '3' &&
            (t[fn + 1] == 'd' || t[fn + 1] == 'D'))
            return EST_K_OTHER;
    }
    return -1;
}

int est_parse_csv(const char *buf, size_t len, const char *file, struct est_model *m,
                  struct carma_err *err)
{
    struct carma_csv *c = calloc(1, sizeof *c);
    if (!c)
        return carma_err_set(err, -ENOMEM, "out of memory");
    carma_csv_init(c, buf, len, file, ',');
    m->format = EST_FMT_CSV;
    int rc = carma_csv_next(c, err);
    int ct = -1, co = -1, cp = -1, cc = -1, cs = -1;
    if (rc == 1 && carma_csv_header_unique(c, err) < 0) {
        rc = -EINVAL;
        goto out;
    }
    if (rc == 1) {
        ct = carma_csv_col(c, "type");
        if (ct < 0)
            ct = carma_csv_col(c, "kind");
        co = carma_csv_col(c, "out_elems");
        cp = carma_csv_col(c, "params");
        cc = carma_csv_col(c, "count");
        cs = carma_csv_col(c, "per_token");
        if (ct < 0 || co < 0 || cp < 0) {
            rc = carma_err_at(err, file, c->line,
                              "layer CSV needs the columns type,out_elems,params");
            goto out;
        }
    } else if (rc == 0) {
        rc = carma_err_at(err, file, 1, "empty layer CSV");
        goto out;
    }
    size_t header_fields = rc == 1 ? c->nfields : 0;
    while (rc >= 0 && (rc = carma_csv_next(c, err)) == 1) {
        if (c->nfields != header_fields) {
            rc = carma_err_at(err, file, c->line, "%zu fields, the header has %zu", c->nfields,
                              header_fields);
            break;
        }
        uint64_t out, params, count = 1, per = 0;
        if (carma_parse_u64(c->field[co], &out) < 0 || out > EST_MAX_ELEMS) {
            rc = carma_err_at(err, file, c->line, "bad out_elems '%s'", c->field[co]);
            break;
        }
        if (carma_parse_u64(c->field[cp], &params) < 0 || params > EST_MAX_PARAMS) {
            rc = carma_err_at(err, file, c->line, "bad params '%s'", c->field[cp]);
            break;
        }
        if (cc >= 0 && (carma_parse_u64(c->field[cc], &count) < 0 || count < 1 ||
                        count > EST_MAX_COUNT)) {
            rc = carma_err_at(err, file, c->line, "bad count '%s'", c->field[cc]);
            break;
        }
        if (cs >= 0 && (carma_parse_u64(c->field[cs], &per) < 0 || per > 1)) {
            rc = carma_err_at(err, file, c->line, "per_token must be 0 or 1");
            break;
        }
        const char *type = c->field[ct];
        if (type[0] == 0) {
            rc = carma_err_at(err, file, c->line, "empty type");
            break;
        }
        if (strcmp(type, "input") == 0) {
            m->input = out;
            continue;
        }
        int k = est_kind_from_name(type);
        if (k < 0 && (rc = refuse_unmodelled(file, c->line, type, strlen(type), err)))
            break;
        if (k < 0) /* exact names: a ConvUpsample stays the classifier's conv */
            k = csv_tensor_class(type);
        if (k < 0) {
            k = (int)est_kind_classify(type, strlen(type));
            if (k == EST_K_OTHER && !csv_viewlike(type)) {
                rc = carma_err_at(err, file, c->line,
                                  "unknown layer type '%s': a layer CSV's type is input, "
                                  "linear, conv, norm, act, dropout, pool, softmax, embed, "
                                  "attn or other, or a PyTorch / Keras class (Conv2d, "
                                  "BatchNorm2d, ReLU, Dense, Add, Upsample, ZeroPadding2D, "
                                  "Flatten, ...: docs/estimator.md); write pool for another "
                                  "layer that makes a new tensor without weights (its "
                                  "out_elems counted), other for a view of its input",
                                  type);
                break;
            }
            /* a class named after a layer but no PyTorch or Keras class of one (timm's
             * GluMlp, a PreNorm, a ConvModule): a block, whose insides the row hides */
            if (!one_layer_class(type, strlen(type)) &&
                !kind_holds((enum est_kind)k, type, strlen(type), params, out, NULL)) {
                rc = carma_err_at(err, file, c->line,
                                  "'%s' (%llu parameters) is named like a layer of kind %s but "
                                  "is no PyTorch or Keras class of one%s: a block of layers "
                                  "(timm's GluMlp, a PreNorm, a ConvModule), whose insides, "
                                  "which keep tensors for backward, the row does not give; "
                                  "give its layers as rows, or write %s if it is one layer",
                                  type, (unsigned long long)params, est_kind_name((enum est_kind)k),
                                  k == EST_K_LINEAR || k == EST_K_CONV
                                      ? ""
                                      : ", and holds more than two parameters an output element",
                                  est_kind_name((enum est_kind)k));
                break;
            }
        }
        /* A row with per_token 0 is per sample, whatever its kind: an embedding with no
         * sequence (DLRM's EmbeddingBag tables) or one the user copied per sample
         * (Keras's (None, 200, 128)), an attn row's heads x seq x seq already multiplied
         * out. Without the column an embed or attn row is ambiguous, and read per sample
         * a transformer's would be a sequence too small: the user says which. --seq-len
         * beside a CSV with no per-token row is refused by est_compute: it would size
         * nothing. */
        if (cs < 0 && (k == EST_K_EMBED || k == EST_K_ATTN)) {
            rc = carma_err_at(err, file, c->line,
                              "an %s row in a CSV without a per_token column: add the "
                              "column and say whether its out_elems are per token (1, and "
                              "give --seq-len) or per sample (0: a bag that reduces to one "
                              "vector a sample, as DLRM's EmbeddingBag, or sizes already "
                              "multiplied out)",
                              k == EST_K_EMBED ? "embed" : "attn");
            break;
        }
        if (est_model_add(m, (enum est_kind)k, out, params, (uint32_t)count, (int)per) < 0) {
            rc = carma_err_at(err, file, c->line, "too many layers or too large a layer");
            break;
        }
        est_layer_type(&m->layers[m->n - 1], type, strlen(type));
        if (!per)
            m->layers[m->n - 1].attn = 0; /* out holds the sample's probabilities already */
        if (per && !m->needs_seq) {
            m->needs_seq = 1;
            m->needs_seq_line = c->line;
        }
    }
    if (rc == 0 && m->n == 0)
        rc = carma_err_at(err, file, c->line, "no layers");
out:
    free(c);
    return rc < 0 ? rc : 0;
}

/* ---- detection ---------------------------------------------------------------------- */

enum est_format est_detect(const char *buf, size_t len)
{
    size_t scan = len < 65536 ? len : 65536;
    int var, dep;
    /* every table header starts "Layer (type": none, and it is no table */
    const char *lt = find(buf, scan, "Layer (type");
    size_t ln = lt ? scan - (size_t)(lt - buf) : 0;
    const char *h = lt ? find(lt, ln, "Layer (type)") : NULL;
    if (lt && (ti_header(lt, ln, &var, &dep, 0) || (h && ti_tree_rows(buf, scan))))
        return EST_FMT_TORCHINFO;
    if (h) {
        /* torchsummary shapes are [..], Keras ones (None, ..). */
        const char *rest = h;
        size_t rn = scan - (size_t)(h - buf);
        const char *a = find(rest, rn, "[-1");
        const char *b = find(rest, rn, "(None");
        if (find(buf, scan, "Model: \"") || (b && (!a || b < a)))
            return EST_FMT_KERAS;
        return EST_FMT_TORCHSUMMARY;
    }
    /* First non-blank line. */
    size_t i = 0;
    while (i < len && isspace((unsigned char)buf[i]))
        i++;
    size_t e = i;
    while (e < len && buf[e] != '\n')
        e++;
    const char *s = buf + i;
    size_t n = e - i;
    trim(&s, &n);
    if (n == 0)
        return EST_FMT_NONE;
    size_t k = 0;
    while (k < n && ident_char(s[k]))
        k++;
    /* a Python identifier: a class may start with '_' (DINOv2's _LinearClassifierWrapper) */
    if (k > 0 && k < n && s[k] == '(' && (isalpha((unsigned char)s[0]) || s[0] == '_'))
        return EST_FMT_MODTREE;
    if (memchr(s, ',', n) && (find(s, n, "type") || find(s, n, "kind")) && find(s, n, "params"))
        return EST_FMT_CSV;
    return EST_FMT_NONE;
}

static int parse_text(const char *buf, size_t len, const char *file, struct est_model *m,
                      struct carma_err *err);

/* A copy of buf without terminal colour codes (ESC [ parameters final-byte), which a
 * summary copied from a coloured terminal or a log carries; newlines are kept, so line
 * numbers stay. NULL: out of memory. */
static char *strip_ansi(const char *buf, size_t len, size_t *outlen)
{
    char *out = malloc(len + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (buf[i] == '\x1b' && i + 1 < len && buf[i + 1] == '[') {
            size_t j = i + 2;
            while (j < len && (unsigned char)buf[j] >= 0x20 && (unsigned char)buf[j] <= 0x3f)
                j++;
            if (j < len && (unsigned char)buf[j] >= 0x40 && (unsigned char)buf[j] <= 0x7e) {
                i = j;
                continue;
            }
        }
        out[o++] = buf[i];
    }
    *outlen = o;
    return out;
}

int est_parse(const char *buf, size_t len, const char *file, struct est_model *m,
              struct carma_err *err)
{
    if (len > EST_MAX_INPUT)
        return carma_err_at(err, file, 0, "larger than %u bytes", EST_MAX_INPUT);
    if (!memchr(buf, '\x1b', len))
        return parse_text(buf, len, file, m, err);
    size_t n = 0;
    char *clean = strip_ansi(buf, len, &n);
    return parse_copy(parse_text, clean, n, file, m, err);
}

/* UTF-16 text: its byte order mark (FF FE, FE FF), or without one, two ASCII characters
 * first with the NUL high byte of each beside it. */
static int utf16_text(const char *buf, size_t len)
{
    const unsigned char *u = (const unsigned char *)buf;
    if (len >= 2 && ((u[0] == 0xff && u[1] == 0xfe) || (u[0] == 0xfe && u[1] == 0xff)))
        return 1;
    if (len < 4)
        return 0;
    int le = !u[1] && !u[3]; /* low byte first */
    unsigned char a = le ? u[0] : u[1], b = le ? u[2] : u[3];
    return (le || (!u[0] && !u[2])) && (isprint(a) || isspace(a)) && (isprint(b) || isspace(b));
}

/* Where a line's quoting ends: leading blanks, then a run of '#' or '>' (a comment, a
 * Markdown quote); 0 when the line has none. */
static size_t quote_run(const char *ls, size_t n)
{
    size_t i = 0;
    while (i < n && (ls[i] == ' ' || ls[i] == '\t'))
        i++;
    char c = i < n ? ls[i] : 0;
    if (c != '#' && c != '>')
        return 0;
    while (i < n && ls[i] == c)
        i++;
    return i;
}

/* Spaces and tabs that indent the rule line right above the header line at hl (every
 * format draws one from its first column: torchsummary's '-', torchinfo's '=', Keras's
 * '_', Keras 3's '┏'): how far a notebook exported to Markdown, or a docstring, indented
 * the whole table. Their length, with *at their first byte; 0 when none. */
static size_t table_indent(const char *buf, const char *hl, const char **at)
{
    if (hl == buf)
        return 0;
    const char *ls = hl - 1;
    while (ls > buf && ls[-1] != '\n')
        ls--;
    size_t n = (size_t)(hl - 1 - ls), i = 0;
    while (i < n && (ls[i] == ' ' || ls[i] == '\t'))
        i++;
    if (!i || i == n)
        return 0;
    int rule = ls[i] == '=' || ls[i] == '-' || ls[i] == '_' ||
               (n - i >= 3 && memcmp(ls + i, "\xe2\x94\x8f", 3) == 0);
    if (!rule)
        return 0;
    *at = ls;
    return i;
}

/* The line prefix a table was pasted with (a '# ' comment in a model's .py file, a '> '
 * Markdown quote, knitr's '    ## '), found on the line of its header ("Layer (type"):
 * leading spaces, a run of '#' or '>', then only spaces (or Keras 3's box edge '┃')
 * before the header; else the indent of its rule line (table_indent, *spaces set). Its
 * length, with *at its first byte; 0 when there is none. */
static size_t table_prefix(const char *buf, size_t len, const char **at, int *spaces)
{
    *spaces = 0;
    size_t scan = len < 65536 ? len : 65536;
    const char *h = find(buf, scan, "Layer (type");
    if (!h)
        return 0;
    const char *ls = h;
    while (ls > buf && ls[-1] != '\n')
        ls--;
    size_t n = (size_t)(h - ls), i = quote_run(ls, n);
    if (!i) {
        i = table_indent(buf, ls, at);
        *spaces = i > 0;
        return i;
    }
    for (size_t k = i; k < n;) {
        if (ls[k] == ' ' || ls[k] == '\t')
            k++;
        else if (n - k >= 3 && memcmp(ls + k, "\xe2\x94\x83", 3) == 0)
            k += 3;
        else
            return 0;
    }
    *at = ls;
    return i;
}

/* The line prefix a module tree was pasted with ('# ' commenting it out in a script, a
 * '> ' quote), found on its first non-blank line: leading spaces, a run of '#' or '>',
 * spaces, then a class name and '(' that end the line. Its length, with *at its first
 * byte; 0 when there is none. */
static size_t tree_prefix(const char *buf, size_t len, const char **at)
{
    size_t i = 0;
    while (i < len && isspace((unsigned char)buf[i]))
        i++;
    const char *ls = buf + i;
    while (ls > buf && ls[-1] != '\n')
        ls--;
    const char *nl = memchr(ls, '\n', len - (size_t)(ls - buf));
    size_t n = nl ? (size_t)(nl - ls) : len - (size_t)(ls - buf);
    while (n > 0 && isspace((unsigned char)ls[n - 1]))
        n--;
    size_t k = quote_run(ls, n);
    if (!k)
        return 0;
    size_t p = k;
    while (k < n && ls[k] == ' ')
        k++;
    size_t id = k;
    while (k < n && ident_char(ls[k]))
        k++;
    if (k == id || k + 1 != n || ls[k] != '(' || p == id)
        return 0;
    *at = ls;
    return p;
}

/* A copy of buf without the prefix p (pn bytes) and, unless the prefix is an indent
 * (spaces), one space after it, on each line that starts with it; the other lines as
 * they are, so that line numbers stay. NULL: out of memory. */
static char *strip_prefix(const char *buf, size_t len, const char *p, size_t pn, int spaces,
                          size_t *outlen)
{
    char *out = malloc(len + 1);
    if (!out)
        return NULL;
    size_t o = 0, pos = 0;
    while (pos < len) {
        const char *ln = buf + pos;
        const char *nl = memchr(ln, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - ln) + 1 : len - pos, k = 0;
        if (n >= pn && memcmp(ln, p, pn) == 0) {
            k = pn;
            if (!spaces && k < n && ln[k] == ' ')
                k++;
        }
        memcpy(out + o, ln + k, n - k);
        o += n - k;
        pos += n;
    }
    *outlen = o;
    return out;
}

static int parse_detected(const char *buf, size_t len, const char *file, struct est_model *m,
                          struct carma_err *err);

static int parse_text(const char *buf, size_t len, const char *file, struct est_model *m,
                      struct carma_err *err)
{
    /* PowerShell 5's > and Notepad's "Unicode" write UTF-16: say so, not "no summary". */
    if (utf16_text(buf, len))
        return carma_err_at(err, file, 1,
                            "UTF-16 text: convert it to UTF-8 (iconv -f UTF-16 -t UTF-8, or "
                            "PowerShell's Out-File -Encoding utf8)");
    /* A UTF-8 byte order mark (Notepad, Excel) is not part of the first line. */
    if (len >= 3 && memcmp(buf, CARMA_BOM, 3) == 0) {
        buf += 3;
        len -= 3;
        if (len >= 3 && memcmp(buf, CARMA_BOM, 3) == 0)
            return carma_err_at(err, file, 1, "%s", CARMA_BOM2_MSG);
    }
    size_t k = 0;
    while (k < len && isspace((unsigned char)buf[k]))
        k++;
    if (k == len)
        return carma_err_at(err, file, 0, "empty file: not a model summary");
    if (carma_text_cr_only(buf, len))
        return carma_err_at(err, file, 1, "%s", CARMA_CR_ONLY_MSG);
    /* a table or a module tree pasted with a line prefix is read without it */
    const char *pre;
    int spaces;
    size_t pn = table_prefix(buf, len, &pre, &spaces);
    if (!pn)
        pn = tree_prefix(buf, len, &pre);
    if (pn) {
        size_t cn = 0;
        char *copy = strip_prefix(buf, len, pre, pn, spaces, &cn);
        return parse_copy(parse_detected, copy, cn, file, m, err);
    }
    return parse_detected(buf, len, file, m, err);
}

/* The line (from 1) of buf that byte *at is on. */
static size_t line_of(const char *buf, const char *at)
{
    size_t line = 1;
    for (const char *q = buf; q < at; q++)
        line += *q == '\n';
    return line;
}

/* A module tree printed after a label on its first line (print(f"Model: {model}"),
 * print('rerank', model)): the first non-blank line is text, a space, then a class name
 * and '(' that end the line, and the next non-blank line opens a child, "(name): ".
 * The offset of the class name; 0 when buf is no such print. */
static size_t labelled_root(const char *buf, size_t len)
{
    size_t i = 0;
    while (i < len && isspace((unsigned char)buf[i]))
        i++;
    const char *nl = memchr(buf + i, '\n', len - i);
    if (!nl)
        return 0;
    size_t e = (size_t)(nl - buf);
    while (e > i && isspace((unsigned char)buf[e - 1]))
        e--;
    if (e <= i + 2 || buf[e - 1] != '(')
        return 0;
    size_t k = e - 1;
    while (k > i && ident_char(buf[k - 1]))
        k--;
    if (k == e - 1 || k == i || buf[k - 1] != ' ' ||
        !(isalpha((unsigned char)buf[k]) || buf[k] == '_'))
        return 0;
    size_t j = (size_t)(nl - buf) + 1;
    while (j < len && isspace((unsigned char)buf[j]))
        j++;
    const char *close = j < len && buf[j] == '(' ? memchr(buf + j, ')', len - j) : NULL;
    if (!close || (size_t)(close - buf) + 2 >= len || close[1] != ':' || close[2] != ' ')
        return 0;
    return k;
}

/* print(model.modules), the method not called, prints the bound method's repr around
 * the model's print: "<bound method Module.modules of Net(" ... ")>". 1 when buf is
 * one, with *tree the offset of the model's first line's class and *gt that of the
 * closing '>' (SIZE_MAX: none, the repr cut short). */
static int bound_method(const char *buf, size_t len, size_t *tree, size_t *gt)
{
    static const char pre[] = "<bound method ";
    size_t i = 0;
    while (i < len && isspace((unsigned char)buf[i]))
        i++;
    if (len - i < sizeof pre - 1 || memcmp(buf + i, pre, sizeof pre - 1) != 0)
        return 0;
    const char *nl = memchr(buf + i, '\n', len - i);
    size_t e = nl ? (size_t)(nl - buf) : len;
    const char *of = find(buf + i, e - i, " of ");
    if (!of)
        return 0;
    size_t t = (size_t)(of - buf) + 4, k = t;
    while (k < e && ident_char(buf[k]))
        k++;
    if (k == t || k == e || buf[k] != '(')
        return 0;
    *tree = t;
    size_t z = len;
    while (z > t && isspace((unsigned char)buf[z - 1]))
        z--;
    *gt = z > t + 1 && buf[z - 1] == '>' && buf[z - 2] == ')' ? z - 1 : SIZE_MAX;
    return 1;
}

/* Parses text by the format est_detect finds in it. */
static int parse_detected(const char *buf, size_t len, const char *file, struct est_model *m,
                          struct carma_err *err)
{
    switch (est_detect(buf, len)) {
    case EST_FMT_TORCHSUMMARY: return est_parse_torchsummary(buf, len, file, m, err);
    case EST_FMT_TORCHINFO: return est_parse_torchinfo(buf, len, file, m, err);
    case EST_FMT_KERAS: return est_parse_keras(buf, len, file, m, err);
    case EST_FMT_MODTREE: {
        uint32_t ih = m->image_h, iw = m->image_w, heads = m->heads;
        uint32_t runs = m->shared_layer_runs;
        uint8_t tie = m->tie_head;
        int rc = est_parse_modtree(buf, len, file, m, err);
        if (rc != -EAGAIN)
            return rc;
        /* A sequence model whose convolutions --image-size sized: a vision transformer
         * when its first convolution cuts the image into patches. Read again as one, its
         * sequence the patches and a class token (none where its position table has
         * exactly the patches). */
        struct carma_err first = *err;
        est_model_init(m, m->layers, m->cap);
        m->heads = heads;
        m->shared_layer_runs = runs;
        m->tie_head = tie;
        rc = est_parse_modtree(buf, len, file, m, err);
        if (rc < 0 || !m->patch_h || !m->patch_w || ih < m->patch_h || iw < m->patch_w) {
            /* (an image smaller than a patch failed the first reading); a two-tower
             * model, refused as such, says so */
            if (!(rc < 0 && (m->positions_differ[0] || m->vision_lm[0])))
                *err = first;
            return -EINVAL;
        }
        m->image_h = ih;
        m->image_w = iw;
        /* a position table of exactly the patches shows there is no class token
         * (SigLIP) */
        uint64_t np = (uint64_t)(ih / m->patch_h) * (iw / m->patch_w);
        uint64_t t = np + (m->max_positions == np ? 0 : 1);
        if (t > EST_MAX_SEQ)
            return carma_err_at(err, file, m->needs_seq_line,
                                "%u x %u in %u x %u patches: more than %u tokens", ih, iw,
                                m->patch_h, m->patch_w, EST_MAX_SEQ);
        m->tokens = (uint32_t)t;
        return 0;
    }
    case EST_FMT_CSV: return est_parse_csv(buf, len, file, m, err);
    default: break;
    }
    size_t tree, gt;
    if (bound_method(buf, len, &tree, &gt)) {
        /* read the model's print inside, the wrapper blanked (line numbers stay) */
        if (gt == SIZE_MAX)
            return carma_err_at(err, file, 1,
                                "a bound method's repr ('<bound method ... of Model(', "
                                "printed by print(model.modules) without the call) that "
                                "does not end with ')>': give print(model) itself");
        char *copy = malloc(len + 1);
        if (copy) {
            memcpy(copy, buf, len);
            memset(copy, ' ', tree);
            for (size_t q = 0; q < tree; q++)
                if (buf[q] == '\n')
                    copy[q] = '\n';
            copy[gt] = ' ';
        }
        return parse_copy(parse_detected, copy, len, file, m, err);
    }
    size_t label = labelled_root(buf, len);
    if (label) {
        /* the label blanked (line numbers and columns stay) */
        char *copy = malloc(len + 1);
        if (copy) {
            memcpy(copy, buf, len);
            size_t i = 0;
            while (isspace((unsigned char)copy[i]))
                i++;
            memset(copy + i, ' ', label - i);
        }
        return parse_copy(parse_detected, copy, len, file, m, err);
    }
    /* torchinfo's tree rows ("├─Embedding: 1-1") without the header line above them */
    size_t scan = len < 65536 ? len : 65536;
    const char *tr = find(buf, scan, "\xe2\x94\x9c\xe2\x94\x80");
    if (!tr)
        tr = find(buf, scan, "\xe2\x94\x94\xe2\x94\x80");
    if (tr)
        return carma_err_at(err, file, line_of(buf, tr),
                            "a torchinfo table's rows without its header line ('Layer "
                            "(type:depth-idx)  Output Shape  Param #'), which says what each "
                            "column is: paste the table whole, from its first '====' rule to "
                            "its last");
    const char *ds = find(buf, scan, "DeepSpeed Flops Profiler");
    if (ds)
        return carma_err_at(err, file, line_of(buf, ds),
                            "a DeepSpeed flops profiler report: give its module tree alone "
                            "(from the model's 'Name(' line to its closing ')', under "
                            "'Detailed Profile'), or print(model) without the profiler");
    return carma_err_at(err, file, 1,
                        "not a model summary (expected a torchsummary or torchinfo table, a "
                        "Keras model.summary(), a printed PyTorch module tree or a layer CSV)");
}
