/* The estimator: parsers (good inputs and malformed ones with their exact errors),
 * the model maths on hand-computed cases, the conformal quantile, the fit, the
 * coefficient table and the history. */
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
#include <time.h>

#include "daemon/history.h"
#include "estimate/estimate.h"
#include "estimate/fit.h"
#include "estimate/history.h"
#include "estimate/parse.h"
#include "estimate/replay.h"
#include "util/csv.h"

static struct est_layer layers[EST_MAX_LAYERS];
static struct est_replay_work rwork;

/* Parses the file at path into m over storage, with the image size hw (0: none). */
static int parse_into(const char *path, uint32_t hw, struct est_layer *storage,
                      struct est_model *m, struct carma_err *err)
{
    char *buf;
    size_t len;
    est_model_init(m, storage, EST_MAX_LAYERS);
    m->image_h = m->image_w = hw;
    int rc = carma_file_read(path, EST_MAX_INPUT, &buf, &len, err);
    assert_int_equal(rc, 0);
    rc = est_parse(buf, len, path, m, err);
    free(buf);
    return rc;
}

static int parse_file(const char *path, struct est_model *m, struct carma_err *err)
{
    return parse_into(path, 0, layers, m, err);
}

/* parse_file with --tied-head (est_model.tie_head) */
static int parse_file_tied(const char *path, struct est_model *m, struct carma_err *err)
{
    char *buf;
    size_t len;
    est_model_init(m, layers, EST_MAX_LAYERS);
    m->tie_head = 1;
    assert_int_equal(carma_file_read(path, EST_MAX_INPUT, &buf, &len, err), 0);
    int rc = est_parse(buf, len, path, m, err);
    free(buf);
    return rc;
}

/* Parses s as file "t.txt", with the image size hw (0: none). */
static int parse_image_str(const char *s, uint32_t hw, struct est_model *m,
                           struct carma_err *err)
{
    est_model_init(m, layers, EST_MAX_LAYERS);
    m->image_h = m->image_w = hw;
    return est_parse(s, strlen(s), "t.txt", m, err);
}

static int parse_str(const char *s, struct est_model *m, struct carma_err *err)
{
    return parse_image_str(s, 0, m, err);
}

static void test_numbers_and_shapes(void **state)
{
    (void)state;
    uint64_t v;
    assert_int_equal(est_parse_count("1,179,776", 9, &v), 0);
    assert_int_equal(v, 1179776);
    assert_int_equal(est_parse_count("320", 3, &v), 0);
    assert_int_equal(v, 320);
    assert_int_equal(est_parse_count("--", 2, &v), 0);
    assert_int_equal(v, 0);
    assert_true(est_parse_count("3,20", 4, &v) < 0);
    assert_true(est_parse_count("1,0000", 6, &v) < 0);
    assert_true(est_parse_count("12a", 3, &v) < 0);
    assert_true(est_parse_count("", 0, &v) < 0);
    assert_true(est_parse_count("99999999999999999999999", 23, &v) < 0);
    assert_int_equal(est_parse_shape("[-1, 64, 8, 8]", 14, &v), 0);
    assert_int_equal(v, 4096);
    assert_int_equal(est_parse_shape("[32, 1000]", 10, &v), 0);
    assert_int_equal(v, 1000);
    assert_int_equal(est_parse_shape("(None, 26, 26, 32)", 18, &v), 0);
    assert_int_equal(v, 26 * 26 * 32);
    assert_int_equal(est_parse_shape("[(None, 28, 28, 1)]", 19, &v), 0);
    assert_int_equal(v, 784);
    assert_int_equal(est_parse_shape("[[-1, 10], [-1, 20]]", 20, &v), 0);
    assert_int_equal(v, 30);
    assert_true(est_parse_shape("[-1, None]", 10, &v) < 0);
    assert_true(est_parse_shape("[-1, -5]", 8, &v) < 0);
    assert_true(est_parse_shape("[-1, 64", 7, &v) < 0);
    assert_true(est_parse_shape("[]", 2, &v) < 0);
    assert_true(est_parse_shape("[-1, 2147483648, 2147483648, 2147483648]", 40, &v) < 0);
}

static void test_kind_classify(void **state)
{
    (void)state;
    static const struct { const char *t; enum est_kind k; } cases[] = {
        {"Conv2d", EST_K_CONV},       {"Conv2D", EST_K_CONV},        {"Conv1D", EST_K_LINEAR},
        {"Conv1d", EST_K_CONV},       {"conv1d", EST_K_CONV},
        {"Linear", EST_K_LINEAR},     {"Dense", EST_K_LINEAR},       {"BatchNorm2d", EST_K_NORM},
        {"BatchNormAct2d", EST_K_NORM}, {"LayerNorm", EST_K_NORM},   {"ReLU", EST_K_ACT},
        {"GELUActivation", EST_K_ACT}, {"Dropout", EST_K_DROPOUT},   {"MaxPool2d", EST_K_POOL},
        {"Softmax", EST_K_SOFTMAX},   {"Embedding", EST_K_EMBED},    {"BertSelfAttention", EST_K_ATTN},
        {"Identity", EST_K_OTHER},    {"BasicBlock", EST_K_OTHER},   {"Flatten", EST_K_OTHER},
        {"DepthwiseSeparableConv", EST_K_OTHER},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_int_equal(est_kind_classify(cases[i].t, strlen(cases[i].t)), cases[i].k);
    /* what an activation keeps: its result (ReLU, Tanh) or its input (GELU in every
     * spelling, GELUTanh included), and a Python one what its operations keep besides */
    static const struct { const char *t; unsigned flags, keeps, keeps32; } acts[] = {
        {"ReLU", EST_LF_SAVES_RESULT, 0, 0}, {"Tanh", EST_LF_SAVES_RESULT, 0, 0},
        {"GELU", 0, 0, 0},                    {"GELUTanh", 0, 0, 0},
        {"PytorchGELUTanh", 0, 0, 0},         {"GELUActivation", 0, 0, 0},
        {"NewGELUActivation", 0, 3, 2},       {"AccurateGELUActivation", 0, 3, 2},
        {"FastGELUActivation", 0, 6, 0},      {"QuickGELUActivation", 0, 1, 0},
        {"SiLU", 0, 0, 0},                    {"LeakyReLU", 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
        size_t n = strlen(acts[i].t);
        enum est_kind k = est_kind_classify(acts[i].t, n);
        assert_int_equal(k, EST_K_ACT);
        assert_int_equal(est_type_flags(k, acts[i].t, n), acts[i].flags);
        assert_int_equal(est_type_keeps(k, acts[i].t, n), acts[i].keeps);
        /* torch.pow (autocast's fp32 list) in NewGELU's and AccurateGELU's code */
        assert_int_equal(est_type_keeps32(k, acts[i].t, n), acts[i].keeps32);
    }
    assert_int_equal(est_type_keeps(EST_K_NORM, "NewGELUActivation", 17), 0);
    assert_int_equal(est_type_keeps32(EST_K_NORM, "NewGELUActivation", 17), 0);
    /* RMSNorms written in Python keep their normalised input too */
    static const char *const rms[] = {"LlamaRMSNorm", "Qwen2RMSNorm", "T5LayerNorm",
                                      "LongT5LayerNorm"};
    for (size_t i = 0; i < sizeof rms / sizeof rms[0]; i++) {
        size_t n = strlen(rms[i]);
        assert_int_equal(est_kind_classify(rms[i], n), EST_K_NORM);
        assert_int_equal(est_type_flags(EST_K_NORM, rms[i], n), EST_LF_RMS);
    }
    assert_int_equal(est_type_flags(EST_K_NORM, "LayerNorm", 9), 0);
}

static void test_torchsummary(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    assert_int_equal(parse_file("tests/fuzz/corpus/summary_torchsummary/mnist_cnn.txt", &m, &err), 0);
    assert_int_equal(m.format, EST_FMT_TORCHSUMMARY);
    assert_int_equal(m.n, 6);
    assert_int_equal(m.params, 1199882);
    assert_int_equal(m.layers[0].kind, EST_K_CONV);
    assert_int_equal(m.layers[0].out, 32 * 26 * 26);
    assert_int_equal(m.layers[3].kind, EST_K_LINEAR);
    assert_int_equal(m.layers[3].params, 1179776);
    /* A wrapper module (Inception's BasicConv2d) is printed after its children with
     * no parameters of its own: no tensor of its own, not another convolution. */
    const char *wrapped =
        "----------------------------------------------------------------\n"
        "        Layer (type)               Output Shape         Param #\n"
        "================================================================\n"
        "            Conv2d-1         [-1, 32, 149, 149]             864\n"
        "       BatchNorm2d-2         [-1, 32, 149, 149]              64\n"
        "       BasicConv2d-3         [-1, 32, 149, 149]               0\n"
        "            Linear-4                 [-1, 10]         7,104,330\n"
        "================================================================\n"
        "Total params: 7,105,258\n";
    assert_int_equal(parse_str(wrapped, &m, &err), 0);
    assert_int_equal(m.layers[0].kind, EST_K_CONV);
    assert_int_equal(m.layers[2].kind, EST_K_OTHER);
    assert_int_equal(m.layers[3].kind, EST_K_LINEAR);
    /* A notebook's text before the table is passed over, as text after it always was: the
     * same table either way; a header that lacks a column is still refused. */
    char stray[2048];
    snprintf(stray, sizeof stray, "Epoch 1/10 loading...\nsummary(model, (3, 299, 299)):\n%s"
             "\nsome notes after it\n", wrapped);
    assert_int_equal(parse_str(stray, &m, &err), 0);
    assert_int_equal(m.n, 4);
    assert_int_equal(m.params, 7105258);
    assert_true(parse_str("notes\n        Layer (type)               Output Shape\n", &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:2: expected the torchsummary header 'Layer (type)  "
                                 "Output Shape  Param #'");
    snprintf(stray, sizeof stray, "notes before\n%s", "================\n"
             "Layer (type:depth-idx)     Output Shape     Param #\n================\n"
             "Net                        [1, 10]          --\n"
             "\xe2\x94\x9c\xe2\x94\x80Linear: 1-1            [1, 10]          110\n"
             "================\nTotal params: 110\n================\n");
    assert_int_equal(parse_str(stray, &m, &err), 0);
    assert_int_equal(m.format, EST_FMT_TORCHINFO);
    assert_int_equal(m.params, 110);
    /* UTF-16 (PowerShell 5's >) is named, with what to do, not "not a model summary" */
    static const char u16[] = "\xff\xfeN\0e\0t\0(\0\n\0";
    assert_true(est_parse(u16, sizeof u16 - 1, "u.txt", &m, &err) < 0);
    assert_string_equal(err.msg, "u.txt:1: UTF-16 text: convert it to UTF-8 (iconv -f UTF-16 -t "
                                 "UTF-8, or PowerShell's Out-File -Encoding utf8)");
    static const char u16be[] = "\0N\0e\0t\0(\0\n";
    assert_true(est_parse(u16be, sizeof u16be - 1, "u.txt", &m, &err) < 0);
    assert_non_null(strstr(err.msg, "u.txt:1: UTF-16 text"));
    /* two inputs: torchsummary prints the product of their sizes as "Input size" */
    assert_true(parse_file("tests/fuzz/corpus/summary_torchsummary/two_inputs_bogus_input_size.txt",
                           &m, &err) < 0);
    assert_non_null(strstr(err.msg, "two_inputs_bogus_input_size.txt:21: an input of 22658678784 "
                                    "elements, more than 64 times the largest layer output"));
    /* one input, flattened by the model: a first linear layer says its width */
    const char *flat = "----------------------------------------------------------------\n"
                       "        Layer (type)               Output Shape         Param #\n"
                       "================================================================\n"
                       "            Linear-1                   [-1, 32]          98,336\n"
                       "              ReLU-2                   [-1, 32]               0\n"
                       "            Linear-3                   [-1, 10]             330\n"
                       "================================================================\n"
                       "Total params: 98,666\n"
                       "----------------------------------------------------------------\n"
                       "Input size (MB): 0.01\n";
    assert_int_equal(parse_str(flat, &m, &err), 0);
    assert_int_equal(parse_file("tests/fuzz/corpus/summary_torchsummary/resnet18_cifar.txt", &m, &err), 0);
    assert_int_equal(m.params, 11227812);
    assert_int_equal(est_model_family(&m), EST_FAM_CONV);
    /* Malformed: the exact error names file and line. */
    assert_true(parse_file("tests/fuzz/corpus/summary_torchsummary/bad_params.txt", &m, &err) < 0);
    assert_string_equal(err.msg, "tests/fuzz/corpus/summary_torchsummary/bad_params.txt:4: "
                                 "bad parameter count '3,20'");
    const char *unclosed = "        Layer (type)               Output Shape         Param #\n"
                           "================================================================\n"
                           "            Conv2d-1           [-1, 32, 26, 26]             320\n";
    assert_true(parse_str(unclosed, &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:3: table not closed by a '====' rule");
    /* a table cut after its header: the header is named as read, not as missing */
    const char *header_only = "----------------------------------------------------------------\n"
                              "        Layer (type)               Output Shape         Param #\n";
    assert_true(parse_str(header_only, &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:2: the table ends after its header: no '====' rule and "
                                 "no layer rows (cut short?)");
    const char *badname = "        Layer (type)               Output Shape         Param #\n"
                          "================================================================\n"
                          "            Conv2d           [-1, 32, 26, 26]             320\n";
    assert_true(parse_str(badname, &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:3: layer name 'Conv2d' is not TYPE-N");
}

static void test_torchinfo(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *ti_header_only =
        "=========================================================================================="
        "\n"
        "Layer (type:depth-idx)                   Output Shape              Param #\n";
    assert_true(parse_str(ti_header_only, &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:2: the table ends after its header: no '====' rule and "
                                 "no layer rows (cut short?)");
    int rc = parse_file("tests/fuzz/corpus/summary_torchinfo/resnet50_b32.txt", &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.format, EST_FMT_TORCHINFO);
    assert_int_equal(m.params, 25557032);
    /* Containers (Sequential, Bottleneck) are not layers: 53 convs + 53 norms + 49
     * ReLUs + 2 pools + 1 linear. */
    size_t conv = 0, norm = 0, other = 0;
    for (size_t i = 0; i < m.n; i++) {
        conv += m.layers[i].kind == EST_K_CONV;
        norm += m.layers[i].kind == EST_K_NORM;
        other += m.layers[i].kind == EST_K_OTHER;
    }
    assert_int_equal(conv, 53);
    assert_int_equal(norm, 53);
    assert_int_equal(other, 0);
    assert_int_equal(m.layers[0].out, 64 * 112 * 112);
    /* torchinfo's depth=3 shows an image block (EfficientNet's MBConv, a ResNet's
     * downsample Sequential) as one row: what its hidden layers keep is unknown, so it
     * is refused however few its parameters; a plain convolution and a row of no known
     * kind without an image output are read. */
    const char *collapsed[] = {"Sequential: 1-2  ", "MBConv: 1-2      ", "Conv2dReLU: 1-2  ",
                               "ConvNormAct: 1-2 "};
    for (size_t k = 0; k < sizeof collapsed / sizeof collapsed[0]; k++) {
        char t[1024];
        snprintf(t, sizeof t,
                 "Layer (type:depth-idx)                   Output Shape              Param #\n"
                 "==========================================================================\n"
                 "├─Conv2d: 1-1                             [1, 64, 56, 56]           1,728\n"
                 "├─%s                       [1, 256, 56, 56]          16,896\n"
                 "├─Frobnicate: 1-3                         [1, 256]                  512\n"
                 "==========================================================================\n"
                 "Total params: 19,136\n",
                 collapsed[k]);
        assert_true(parse_str(t, &m, &err) < 0);
        assert_non_null(strstr(err.msg, "t.txt:4: '"));
        assert_non_null(strstr(err.msg, "' holds 16896 parameters and outputs an image, but the "
                                        "table lists no layer inside it"));
    }
    /* col_names with "groups" (torchinfo 1.8): a column of its own, read past */
    const char *groups =
        "Layer (type:depth-idx)                   Output Shape              Param #        Groups\n"
        "==========================================================================================\n"
        "├─Conv2d: 1-1                             [1, 64, 56, 56]           1,728          1\n"
        "├─ReLU: 1-2                               [1, 64, 56, 56]           --             --\n"
        "==========================================================================================\n"
        "Total params: 1,728\n";
    assert_int_equal(parse_str(groups, &m, &err), 0);
    assert_int_equal(m.n, 2);
    assert_int_equal(m.params, 1728);
    /* a convolution by PyTorch's naming, a per-channel scale (timm's LayerScale2d) and a
     * row of no known kind without an image output are layers of their own */
    const char *read =
        "Layer (type:depth-idx)                   Output Shape              Param #\n"
        "==========================================================================\n"
        "├─StdConv2d: 1-1                          [1, 64, 56, 56]           1,728\n"
        "├─LayerScale2d: 1-2                       [1, 64, 56, 56]           64\n"
        "├─Frobnicate: 1-3                         [1, 256]                  512\n"
        "==========================================================================\n"
        "Total params: 2,304\n";
    assert_int_equal(parse_str(read, &m, &err), 0);
    assert_int_equal(m.layers[0].kind, EST_K_CONV);
    assert_int_equal(m.layers[1].kind, EST_K_OTHER);
    assert_int_equal(m.layers[2].kind, EST_K_OTHER);
    /* a Python activation's rows carry what its operations keep, and which run in fp32
     * under autocast (est_type_keeps32), as a module tree's do */
    const char *gelu =
        "Layer (type:depth-idx)                   Output Shape              Param #\n"
        "==========================================================================\n"
        "├─Linear: 1-1                             [8, 128, 3072]            2,362,368\n"
        "├─NewGELUActivation: 1-2                  [8, 128, 3072]            --\n"
        "├─Linear: 1-3                             [8, 128, 768]             2,360,064\n"
        "==========================================================================\n"
        "Total params: 4,722,432\n";
    assert_int_equal(parse_str(gelu, &m, &err), 0);
    assert_int_equal(m.layers[1].kind, EST_K_ACT);
    assert_int_equal(m.layers[1].keeps, 3);
    assert_int_equal(m.layers[1].keeps32, 2);
    assert_int_equal(m.layers[0].keeps32, 0);
    /* nn.MultiheadAttention is one row: its probabilities are not in the table */
    const char *mha =
        "Layer (type:depth-idx)                   Output Shape              Param #\n"
        "==========================================================================\n"
        "├─Embedding: 1-1                          [8, 512, 768]             768,000\n"
        "├─MultiheadAttention: 1-2                 [8, 512, 768]             2,362,368\n"
        "==========================================================================\n"
        "Total params: 3,130,368\n";
    assert_true(parse_str(mha, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:4: 'MultiheadAttention' is attention shown as one "
                                    "row: its probabilities"));
    const char *bad = "Layer (type:depth-idx)                   Output Shape              Param #\n"
                      "==========================================================================\n"
                      "├─Conv2d: 1-1                             [1, 64, 112, 112]         9,4080\n"
                      "==========================================================================\n";
    assert_true(parse_str(bad, &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:3: bad parameter count '9,4080'");
    const char *nodepth = "Layer (type:depth-idx)                   Output Shape              Param #\n"
                          "==========================================================================\n"
                          "├─Conv2d: x                               [1, 64, 112, 112]         9,408\n";
    assert_true(parse_str(nodepth, &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:3: bad depth-index after 'Conv2d:'");
    /* A transformer's table: the dropout on the attention probabilities, inside the
     * attention module and shaped [batch, heads, seq, seq], stands for them; the other
     * dropouts, and a square feature map's dropout outside attention, stay dropouts. */
    rc = parse_file("tests/fuzz/corpus/summary_torchinfo/bert_layer_b8.txt", &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.params, 31515648);
    size_t attn = 0, drop = 0;
    for (size_t i = 0; i < m.n; i++) {
        if (m.layers[i].kind == EST_K_ATTN) {
            attn++;
            assert_int_equal(m.layers[i].out, 12 * 128 * 128);
            assert_int_equal(m.layers[i].attn, 0); /* its seq x seq is in out already */
            /* the key and value (the two rows before) read the query's input */
            assert_true(i >= 3 && !m.layers[i - 3].shares_input &&
                        m.layers[i - 2].shares_input && m.layers[i - 1].shares_input);
        }
        drop += m.layers[i].kind == EST_K_DROPOUT;
    }
    assert_int_equal(attn, 1);
    assert_int_equal(drop, 3);
    const char *cnn = "Layer (type:depth-idx)                   Output Shape              Param #\n"
                      "==========================================================================\n"
                      "Net                                      [8, 10]                   --\n"
                      "├─Conv2d: 1-1                            [8, 64, 32, 32]           1,792\n"
                      "├─Dropout: 1-2                           [8, 64, 32, 32]           --\n"
                      "==========================================================================\n";
    assert_int_equal(parse_str(cnn, &m, &err), 0);
    assert_int_equal(m.layers[1].kind, EST_K_DROPOUT);
    /* A vision transformer's table: one patch convolution among linear layers that
     * produce far more, so the dense family (replayed), with cuDNN's floor */
    rc = parse_file("tests/fuzz/corpus/summary_torchinfo/vit_b16_b64.txt", &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.params, 86567656);
    assert_int_equal(m.layers[0].kind, EST_K_CONV);
    assert_true(m.cudnn);
    assert_int_equal(est_model_family(&m), EST_FAM_DENSE);
    struct est_opts o = {.batch = 64, .optimizer = EST_OPT_ADAMW, .floor_src = EST_FLOOR_FITTED};
    struct est_result r;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &r, &err), 0);
    assert_true(r.floor_mib == est_coef_default()->floor_mib[EST_FAM_CONV]);
    assert_true(r.peak_phase != 0); /* replayed */
}

static struct est_layer layouts_ref[EST_MAX_LAYERS];

/* a and b hold the same layers, read alike. */
static void assert_same_model(const struct est_model *a, const struct est_model *b)
{
    assert_int_equal(a->format, b->format);
    assert_int_equal(a->n, b->n);
    assert_int_equal(a->params, b->params);
    assert_int_equal(a->frozen, b->frozen);
    assert_int_equal(a->input, b->input);
    for (size_t i = 0; i < a->n; i++) {
        const struct est_layer *x = &a->layers[i], *y = &b->layers[i];
        assert_int_equal(x->kind, y->kind);
        assert_int_equal(x->out, y->out);
        assert_int_equal(x->params, y->params);
        assert_int_equal(x->frozen, y->frozen);
        assert_int_equal(x->flags, y->flags);
        assert_int_equal(x->keeps, y->keeps);
        assert_int_equal(x->attn, y->attn);
        assert_int_equal(x->shares_input, y->shares_input);
        assert_int_equal(x->count, y->count);
    }
}

/* torchinfo's other row settings print the same table with other layer names:
 * row_settings=["var_names"] ("Conv2d (conv1)", the depth only in the tree drawing) and
 * ["var_names", "depth"] ("Conv2d (conv1): 1-1"). Each reads as the default layout. */
static void test_torchinfo_layouts(void **state)
{
    (void)state;
    struct est_model ref, m;
    struct carma_err err;
    /* a note put after a row's depth-index (an edited README table) is named where it is,
     * in the name column, not after the columns it pushed along */
    {
        static const char *const notes[] = {" (x12 layers)", " (classifier)"};
        static const char *const msgs[] = {
            "t.txt:5: '(x12 layers)' after 'ModuleList: 2-2': text in the name column after "
            "the depth-index, where torchinfo writes 'Type: depth-idx' alone (an edited "
            "table?); remove it",
            "t.txt:5: '(classifier)' after 'ModuleList: 2-2': text in the name column after "
            "the depth-index, where torchinfo writes 'Type: depth-idx' alone (an edited "
            "table?); remove it"};
        for (size_t i = 0; i < 2; i++) {
            char t[2048];
            snprintf(t, sizeof t,
                     "==========================================================================\n"
                     "Layer (type:depth-idx)                   Output Shape              Param #\n"
                     "==========================================================================\n"
                     "Net                                      [1, 10]                   --\n"
                     "\xe2\x94\x9c\xe2\x94\x80ModuleList: 2-2%s [1, 10]                   110\n"
                     "==========================================================================\n"
                     "Total params: 110\n",
                     notes[i]);
            assert_int_equal(parse_str(t, &m, &err), -EINVAL);
            assert_string_equal(err.msg, msgs[i]);
        }
    }
    /* T5's attention applies dropout to its probabilities as a function: no row shows
     * them, so each (unfused) attention module adds heads x seq x seq at its close */
    assert_int_equal(parse_file("tests/fuzz/corpus/summary_torchinfo/t5_small_depth10.txt", &m,
                                &err), 0);
    size_t probs = 0;
    for (size_t i = 0; i < m.n; i++)
        if (m.layers[i].kind == EST_K_ATTN) {
            assert_int_equal(m.layers[i].out, 8ull * 512 * 512);
            assert_int_equal(m.layers[i].attn, 0);
            probs++;
        }
    assert_int_equal(probs, 18); /* 6 encoder, 6 decoder and 6 cross attentions */
    /* row_settings=[]: header "Layer (type)", rows "├─Conv2d", the depth from the drawing;
     * read as the default layout */
    {
        struct est_model a, b;
        static struct est_layer la[EST_MAX_LAYERS], lb[EST_MAX_LAYERS];
        assert_int_equal(parse_into("tests/fuzz/corpus/summary_torchinfo/resnet50_b32.txt", 0,
                                    la, &a, &err), 0);
        assert_int_equal(
            parse_into("tests/fuzz/corpus/summary_torchinfo/resnet50_b32_plain_rows.txt", 0, lb,
                       &b, &err), 0);
        assert_int_equal(b.format, EST_FMT_TORCHINFO);
        assert_int_equal(b.n, a.n);
        assert_int_equal(b.params, a.params);
        for (size_t i = 0; i < a.n; i++) {
            assert_int_equal(b.layers[i].kind, a.layers[i].kind);
            assert_int_equal(b.layers[i].out, a.layers[i].out);
        }
    }
    int rc = parse_into("tests/fuzz/corpus/summary_torchinfo/resnet18_b8_frozen.txt", 0,
                        layouts_ref, &ref, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(ref.params, 11689512);
    assert_int_equal(ref.frozen, 9408 + 128 + 4 * 36864 + 4 * 128); /* stem, layer1 */
    assert_int_equal(ref.n, 60);
    const char *same[] = {
        "tests/fuzz/corpus/summary_torchinfo/resnet18_b8_frozen_varnames.txt",
        "tests/fuzz/corpus/summary_torchinfo/resnet18_b8_frozen_varnames_depth.txt",
    };
    for (size_t k = 0; k < sizeof same / sizeof same[0]; k++) {
        rc = parse_file(same[k], &m, &err);
        if (rc)
            fail_msg("%s: %s", same[k], err.msg);
        assert_same_model(&ref, &m);
    }
    /* verbose=2 follows each layer row with its parameters' rows ("└─weight  [..]  ├─250",
     * dotted names under a container): not layers, their counts are in the layer's. */
    rc = parse_file("tests/fuzz/corpus/summary_torchinfo/resnet18_b8_frozen_varnames_verbose2.txt",
                    &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_same_model(&ref, &m);
    rc = parse_file("tests/fuzz/corpus/summary_torchinfo/singleinput_verbose2.txt", &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.n, 5);
    assert_int_equal(m.params, 21840);
    assert_int_equal(m.layers[0].kind, EST_K_CONV);
    assert_int_equal(m.layers[0].params, 260);
    assert_int_equal(m.layers[0].out, 10 * 24 * 24);
    assert_int_equal(m.layers[1].params, 5020);
    assert_int_equal(m.layers[3].kind, EST_K_LINEAR);
    assert_int_equal(m.layers[3].params, 16050);
    /* A parameter row sits one level below the layer row above it. */
    const char *deep = "Layer (type:depth-idx)                   Output Shape              Param #\n"
                       "==========================================================================\n"
                       "Net                                      [8, 10]                   --\n"
                       "├─Conv2d: 1-1                            [8, 64, 32, 32]           1,792\n"
                       "│    │    └─weight                                                 ├─1,728\n"
                       "==========================================================================\n";
    assert_true(parse_str(deep, &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:5: layer row is not 'Type: depth-index'");
    /* A module's name may hold dots and digits; a frozen count "(1,792)" is a column,
     * not a name. */
    const char *dotted = "Layer (type (var_name))                  Output Shape              Param #\n"
                         "==========================================================================\n"
                         "Net (Net)                                [8, 10]                   --\n"
                         "├─Sequential (features)                  [8, 64, 32, 32]           --\n"
                         "│    └─Conv2d (features.0)               [8, 64, 32, 32]           (1,792)\n"
                         "│    └─ReLU (1)                          [8, 64, 32, 32]           --\n"
                         "├─Linear (head)                          [8, 10]                   650\n"
                         "==========================================================================\n"
                         "Total params: 2,442\n";
    assert_int_equal(parse_str(dotted, &m, &err), 0);
    assert_int_equal(m.format, EST_FMT_TORCHINFO);
    assert_int_equal(m.n, 3);
    assert_int_equal(m.layers[0].kind, EST_K_CONV);
    assert_int_equal(m.layers[0].out, 64 * 32 * 32);
    assert_int_equal(m.layers[0].frozen, 1792);
    assert_int_equal(m.layers[2].kind, EST_K_LINEAR);
    assert_int_equal(m.layers[2].params, 650);
    assert_int_equal(m.params, 2442);
    assert_int_equal(m.frozen, 1792);
    /* Malformed rows, each named. */
    static const char hdr_var[] =
        "Layer (type (var_name))                  Output Shape              Param #\n"
        "==========================================================================\n"
        "Net (Net)                                [8, 10]                   --\n";
    static const char hdr_both[] =
        "Layer (type (var_name):depth-idx)        Output Shape              Param #\n"
        "==========================================================================\n"
        "Net (Net)                                [8, 10]                   --\n";
    static const struct { const char *hdr, *row, *msg; } bad[] = {
        {hdr_var, "├─Conv2d                                 [8, 64, 32, 32]           (1,792)\n",
         "t.txt:4: layer row is not 'Type (var_name)'"},
        {hdr_var, "Conv2d (c)                               [8, 64, 32, 32]           1,792\n",
         "t.txt:4: layer row without the tree drawing ('├─', '└─') that gives its depth"},
        {hdr_var, "├─Conv2d ()                              [8, 64, 32, 32]           1,792\n",
         "t.txt:4: bad variable name after 'Conv2d'"},
        {hdr_var, "├─Conv2d (c)x                            [8, 64, 32, 32]           1,792\n",
         "t.txt:4: unexpected text after the layer name"},
        {hdr_both, "├─Conv2d (c)                             [8, 64, 32, 32]           1,792\n",
         "t.txt:4: layer row is not 'Type (var_name): depth-index'"},
        {hdr_both, "├─Conv2d (c): x                          [8, 64, 32, 32]           1,792\n",
         "t.txt:4: bad depth-index after 'Conv2d:'"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char t[1024];
        snprintf(t, sizeof t,
                 "%s%s==========================================================================\n",
                 bad[k].hdr, bad[k].row);
        assert_true(parse_str(t, &m, &err) < 0);
        assert_string_equal(err.msg, bad[k].msg);
    }
}

static void test_keras(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *keras_header_only =
        "Model: \"sequential\"\n"
        "_________________________________________________________________\n"
        " Layer (type)                Output Shape              Param #   \n";
    assert_true(parse_str(keras_header_only, &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:3: the summary ends after its header: no rule and no "
                                 "layer rows (cut short?)");
    int rc = parse_file("tests/fuzz/corpus/summary_keras/mnist_convnet.txt", &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.format, EST_FMT_KERAS);
    assert_int_equal(m.n, 7);
    assert_int_equal(m.params, 34826);
    assert_int_equal(m.layers[1].kind, EST_K_POOL); /* a wrapped "MaxPooling2D" */
    assert_int_equal(m.layers[1].out, 13 * 13 * 32);
    rc = parse_file("tests/fuzz/corpus/summary_keras/keras3_box.txt", &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.n, 3);
    assert_int_equal(m.params, 407050);
    assert_int_equal(m.layers[0].kind, EST_K_LINEAR);
    /* TF 2.x wraps shapes longer than their column ("[(None, 224, 224, 3" / ")]"),
     * also on rows whose wrapped name starts the shape a column later. */
    rc = parse_file("tests/fuzz/corpus/summary_keras/keras2_functional_wrapped_shapes.txt", &m,
                    &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.n, 16);
    assert_int_equal(m.params, 89728);
    assert_int_equal(m.input, 224 * 224 * 3);
    assert_int_equal(m.layers[1].out, 112 * 112 * 64); /* conv1_conv */
    assert_int_equal(m.layers[1].kind, EST_K_CONV);
    assert_int_equal(m.layers[15].out, 14 * 14 * 1024); /* the last BatchNormalization */
    assert_int_equal(m.layers[15].kind, EST_K_NORM);
    /* a multi-output shape broken after "),", its rest keeping the space */
    rc = parse_file("tests/fuzz/corpus/summary_keras/keras2_multi_output_wrapped.txt", &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.n, 2);
    assert_int_equal(m.layers[0].out, 64);
    assert_int_equal(m.params, 330);
    /* one byte order mark is skipped, a second refused */
    assert_true(parse_str("\xEF\xBB\xBF\xEF\xBB\xBFtype,out_elems,params\nLinear,10,100\n", &m,
                          &err) < 0);
    assert_string_equal(err.msg, "t.txt:1: " CARMA_BOM2_MSG);
    assert_int_equal(parse_str("\xEF\xBB\xBFtype,out_elems,params\nLinear,10,100\n", &m, &err), 0);
    const char *bad = "Model: \"m\"\n"
                      " Layer (type)                Output Shape              Param #   \n"
                      "=================================================================\n"
                      " dense (Dense)               (None, None)              10\n";
    assert_true(parse_str(bad, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:4: an output shape with a dimension left open"));
    assert_non_null(strstr(err.msg, "as a sequence length"));
    /* an image's open height and width: the hint is an image's input */
    const char *img = "Model: \"m\"\n"
                      " Layer (type)                Output Shape              Param #   \n"
                      "=================================================================\n"
                      " conv (Conv2D)               (None, None, None, 8)     224\n";
    assert_true(parse_str(img, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "as an image's height and width): print the model built "
                                    "on a fixed input, e.g. keras.Input(shape=(224, 224, 3))"));
    /* Keras's Conv1D is a convolution, not Hugging Face's linear layer of that name */
    const char *conv1d = "Model: \"m\"\n"
                         " Layer (type)                Output Shape              Param #   \n"
                         "=================================================================\n"
                         " conv1d (Conv1D)             (None, 98, 64)            256\n"
                         "=================================================================\n"
                         "Total params: 256\n";
    assert_int_equal(parse_str(conv1d, &m, &err), 0);
    assert_int_equal(m.layers[0].kind, EST_K_CONV);
    /* cut before its totals: refused, not read as a smaller model */
    const char *cut = "Model: \"m\"\n"
                      " Layer (type)                Output Shape              Param #   \n"
                      "=================================================================\n"
                      " conv1d (Conv1D)             (None, 98, 64)            256\n";
    assert_true(parse_str(cut, &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:4: no 'Total params:' line: summary cut short?");
}

/* Layouts of Keras's model.summary() options: show_trainable=True's Trainable column
 * (TF 2.x, Keras 3) and expand_nested=True's nested layers (TF 2.x between '|¯¯¯|'
 * rules and '|' edges, Keras 3 after "   └ "). */
static void test_keras_layouts(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    /* TF 2.x cuts a name that fills its cell before its type: "expanded_conv_depthwise_relu"
     * / " (ReLU)", and over three lines "token_and_position_embeddin" / "g (TokenAndPosit
     * ionEmbeddin" / "g)" */
    assert_int_equal(parse_file("tests/fuzz/corpus/summary_keras/keras2_functional_wrapped_names.txt",
                                &m, &err), 0);
    assert_int_equal(m.n, 7);
    assert_int_equal(m.params, 1920);
    assert_int_equal(m.layers[5].kind, EST_K_ACT); /* (ReLU) */
    assert_int_equal(m.layers[5].out, 112 * 112 * 32);
    /* (read past line 7; keras.io's TransformerDecoder, 12% of the model, is refused) */
    assert_true(
        parse_file("tests/fuzz/corpus/summary_keras/keras2_wrapped_name_three_lines.txt", &m, &err) <
        0);
    assert_non_null(strstr(err.msg, "three_lines.txt:11: 'TransformerDecoder' holds 394749"));
    assert_int_equal(m.layers[0].kind, EST_K_EMBED);
    assert_int_equal(m.layers[0].out, 128 * 256);
    /* a custom layer holding a real share of the model lists nothing inside: refused */
    const char *custom =
        "Model: \"m\"\n"
        " Layer (type)                Output Shape              Param #   \n"
        "=================================================================\n"
        " input_1 (InputLayer)        [(None, 128)]             0         \n"
        "                                                                 \n"
        " encoder (TransformerEncod   (None, 128, 768)          7087872   \n"
        " er)                                                             \n"
        "                                                                 \n"
        " dense (Dense)               (None, 128, 2)            1538      \n"
        "=================================================================\n"
        "Total params: 7,089,410\n";
    assert_true(parse_str(custom, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:6: 'TransformerEncoder' holds 7087872 parameters in "
                                    "a layer whose insides the summary does not list"));
    /* a sequence left open: what to do, not only what is wrong */
    const char *open_seq =
        "Model: \"m\"\n"
        " Layer (type)                Output Shape              Param #   \n"
        "=================================================================\n"
        " input_1 (InputLayer)        [(None, None)]            0         \n"
        "=================================================================\n"
        "Total params: 0\n";
    assert_true(parse_str(open_seq, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:4: an output shape with a dimension left open"));
    /* TF 2.x's older nested layout shifts a row's cells a column left per level: a shape
     * wrapped three levels deep is read whole, as in the newer layout */
    struct est_model m3;
    static struct est_layer l3[EST_MAX_LAYERS];
    assert_int_equal(parse_file("tests/fuzz/corpus/summary_keras/keras2_nested3_new_layout.txt",
                                &m, &err), 0);
    assert_int_equal(parse_into("tests/fuzz/corpus/summary_keras/keras2_nested3_old_layout.txt", 0,
                                l3, &m3, &err), 0);
    assert_int_equal(m3.n, m.n);
    for (size_t i = 0; i < m.n; i++)
        assert_int_equal(m3.layers[i].out, m.layers[i].out);
    /* a nested model's InputLayer is the outer input again, not a second one */
    assert_int_equal(parse_file("tests/fuzz/corpus/summary_keras/keras2_nested_input.txt", &m,
                                &err), 0);
    assert_int_equal(m.input, 64 * 64 * 3);
    /* TF 2.x Sequential: "N" is frozen; a count too long for its column beside the
     * Trainable column wraps ("3172761" / "6") */
    int rc = parse_file("tests/fuzz/corpus/summary_keras/keras2_seq_trainable.txt", &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.n, 6);
    assert_int_equal(m.params, 31787402);
    assert_int_equal(m.frozen, 18496);
    assert_int_equal(m.layers[2].frozen, 18496); /* conv2d_1 */
    assert_int_equal(m.layers[0].frozen, 0);
    assert_int_equal(m.layers[4].params, 31727616); /* the wrapped count */
    assert_int_equal(m.layers[4].kind, EST_K_LINEAR);
    /* TF 2.x functional: the column after "Connected to" */
    rc = parse_file("tests/fuzz/corpus/summary_keras/keras2_functional_trainable.txt", &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.n, 5);
    assert_int_equal(m.params, 8037898);
    assert_int_equal(m.frozen, 9472 + 256);
    assert_int_equal(m.layers[0].frozen, 9472); /* conv1_conv */
    assert_int_equal(m.layers[1].frozen, 256);  /* conv1_bn */
    assert_int_equal(m.layers[4].frozen, 0);
    /* Keras 3: Y, N, and - for a layer without weights */
    rc = parse_file("tests/fuzz/corpus/summary_keras/keras3_seq_trainable.txt", &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.n, 7);
    assert_int_equal(m.params, 34826);
    assert_int_equal(m.frozen, 18496);
    assert_int_equal(m.layers[2].frozen, 18496);
    /* a Trainable column that a row lacks */
    const char *nocell = "Model: \"m\"\n"
                         " Layer (type)                Output Shape              Param #   "
                         "Trainable  \n"
                         "================================================================="
                         "===========\n"
                         " dense (Dense)               (None, 10)                110\n"
                         "================================================================="
                         "===========\n"
                         "Total params: 110\n";
    assert_true(parse_str(nocell, &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:4: no Trainable cell (Y, N or -) at the end of the row");

    /* expand_nested=True, TF 2.x: the nested layers are read, not the nested model's
     * row, which holds the sum of their parameters */
    rc = parse_file("tests/fuzz/corpus/summary_keras/keras2_nested_expand.txt", &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.n, 7); /* 5 nested layers (and its input), pooling, dense */
    assert_int_equal(m.params, 1365);
    assert_int_equal(m.input, 64 * 64 * 3);
    assert_int_equal(m.layers[0].kind, EST_K_CONV);
    assert_int_equal(m.layers[0].out, 32 * 32 * 16);
    assert_int_equal(m.layers[1].kind, EST_K_NORM); /* "(BatchNormalizat" / "ion)" */
    assert_int_equal(m.layers[4].kind, EST_K_CONV); /* "(SeparableConv" / "2D)" */
    assert_int_equal(m.layers[4].params, 688);
    assert_int_equal(m.layers[5].kind, EST_K_POOL); /* "global_average_pooling2d (" */
    /* no Trainable column, but "Trainable params: 165": the backbone, first, is frozen */
    assert_int_equal(m.frozen, 1200);
    assert_int_equal(m.layers[6].frozen, 0);
    rc = parse_file("tests/fuzz/corpus/summary_keras/keras2_nested_expand_trainable.txt", &m,
                    &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.n, 7);
    assert_int_equal(m.params, 1365);
    assert_int_equal(m.frozen, 1200); /* the frozen backbone */
    assert_int_equal(m.layers[6].frozen, 0);
    rc = parse_file("tests/fuzz/corpus/summary_keras/keras2_resnet50_transfer_expand.txt", &m,
                    &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.params, 23597957);
    assert_int_equal(m.input, 224 * 224 * 3);
    /* Keras 3: nested names after "   └ ", one wrapped over two lines */
    rc = parse_file("tests/fuzz/corpus/summary_keras/keras3_nested_expand_trainable.txt", &m,
                    &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.n, 5);
    assert_int_equal(m.params, 1365);
    assert_int_equal(m.frozen, 1200);
    assert_int_equal(m.layers[1].kind, EST_K_NORM);
    assert_int_equal(m.layers[1].frozen, 64);
    assert_int_equal(m.layers[3].kind, EST_K_POOL);
    /* without expand_nested the nested model is refused, and the message says how to
     * print its layers */
    assert_true(parse_file("tests/fuzz/corpus/summary_keras/keras2_nested.txt", &m, &err) < 0);
    assert_non_null(strstr(err.msg, "keras2_nested.txt:5: a nested model (Functional)"));
    assert_non_null(strstr(err.msg, "model.summary(expand_nested=True)"));
}

/* Keras prints a wrapped layer by its wrapper's type and never lists a custom layer's
 * insides: a Bidirectional is recurrent, a TimeDistributed is read only when its
 * parameters are a Dense layer's, and a custom layer holding more than a per-channel
 * vector is refused, whatever its share of the model. */
static void test_keras_wrappers(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    /* TF 2 cuts the type ("(Bidirectiona" / "l)"); 24,832 parameters, 4% of the model,
     * under the opaque-block rule's 100,000 */
    assert_true(
        parse_file("tests/fuzz/corpus/summary_keras/keras2_bidirectional_wrapped.txt", &m, &err) <
        0);
    assert_non_null(strstr(err.msg, "bidirectional_wrapped.txt:7: Bidirectional: a recurrent "
                                    "layer"));
    assert_non_null(strstr(err.msg, "carma submit --mem"));
    /* TimeDistributed(Dense(9)) on 64 features: 64 x 9 + 9 parameters, a linear layer per
     * step; one without parameters keeps a new tensor and its input (a pooling's) */
    int rc = parse_file("tests/fuzz/corpus/summary_keras/keras3_timedistributed.txt", &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.n, 4);
    assert_int_equal(m.params, 162697);
    assert_int_equal(m.layers[2].kind, EST_K_LINEAR);
    assert_int_equal(m.layers[2].out, 50 * 9);
    assert_int_equal(m.layers[3].kind, EST_K_POOL);
    /* TimeDistributed(Conv2D(16, 3)) over video frames: not a Dense, refused */
    const char *td_conv =
        "Model: \"m\"\n"
        " Layer (type)                Output Shape              Param #   \n"
        "=================================================================\n"
        " input_1 (InputLayer)        [(None, 8, 32, 32, 3)]    0         \n"
        "                                                                 \n"
        " time_distributed (TimeDist  (None, 8, 30, 30, 16)     448       \n"
        " ributed)                                                        \n"
        "                                                                 \n"
        "=================================================================\n"
        "Total params: 448\n";
    assert_true(parse_str(td_conv, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:6: TimeDistributed holds 448 parameters, not a Dense "
                                    "layer's from the 3 features before it to its 16"));
    /* keras.io's TransformerBlock: 10,656 parameters, 1.6% of the model, whose attention
     * and MLP keep batch x sequence tensors */
    const char *block =
        "Model: \"m\"\n"
        " Layer (type)                Output Shape              Param #   \n"
        "=================================================================\n"
        " input_1 (InputLayer)        [(None, 200)]             0         \n"
        "                                                                 \n"
        " embedding (Embedding)       (None, 200, 32)           640000    \n"
        "                                                                 \n"
        " transformer_block (Transfo  (None, 200, 32)           10656     \n"
        " rmerBlock)                                                      \n"
        "                                                                 \n"
        " dense (Dense)               (None, 200, 2)            66        \n"
        "=================================================================\n"
        "Total params: 650,722\n";
    assert_true(parse_str(block, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:8: 'TransformerBlock' holds 10656 parameters in a "
                                    "layer whose insides the summary does not list"));
    /* a per-channel holder (keras.applications' ConvNeXt LayerScale: one per channel) is
     * read, as before */
    const char *scale =
        "Model: \"m\"\n"
        " Layer (type)                Output Shape              Param #   \n"
        "=================================================================\n"
        " conv2d (Conv2D)             (None, 56, 56, 96)        4704      \n"
        "                                                                 \n"
        " layer_scale (LayerScale)    (None, 56, 56, 96)        96        \n"
        "                                                                 \n"
        "=================================================================\n"
        "Total params: 4,800\n";
    rc = parse_str(scale, &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.n, 2);
    assert_int_equal(m.layers[1].kind, EST_K_OTHER);
}

static void test_modtree(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    /* CLIP: a text tower at 77 positions and an image tower at 50 cannot share one
     * sequence length, with or without --image-size. */
    const char *clip = "tests/fuzz/corpus/summary_modtree/clip_two_towers.txt";
    for (uint32_t hw = 0; hw <= 224; hw += 224) {
        assert_true(parse_into(clip, hw, layers, &m, &err) < 0);
        assert_non_null(strstr(err.msg, "clip_two_towers.txt:31: learned position tables of "
                                        "different lengths (lines 5 and 31)"));
    }
    int rc = parse_file("tests/fuzz/corpus/summary_modtree/bert_base.txt", &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.format, EST_FMT_MODTREE);
    assert_int_equal(m.params, 109483778); /* BERT-base + a 2-class head */
    assert_true(m.needs_seq);
    assert_int_equal(m.needs_seq_line, 4);
    size_t attn = 0;
    for (size_t i = 0; i < m.n; i++)
        if (m.layers[i].kind == EST_K_ATTN) {
            attn++;
            assert_int_equal(m.layers[i].count, 12);
            assert_int_equal(m.layers[i].out, 12); /* 768 / 64 heads */
        }
    assert_int_equal(attn, 1);
    rc = parse_file("tests/fuzz/corpus/summary_modtree/gpt2.txt", &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    /* GPT-2 small is 124,439,808 with lm_head tied to wte; the print does not say,
     * so the head counts again (38,597,376 more): safe side. */
    assert_int_equal(m.params, 124439808ull + 38597376ull);
    rc = parse_file("tests/fuzz/corpus/summary_modtree/mlp_params_suffix.txt", &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.params, 401920 + 5130);
    assert_false(m.needs_seq);
    /* A suffix below the fewest parameters the printed arguments allow is refused (it set
     * the count: GPT-2 at 1/100 of its parameters); one above them is taken as printed. */
    assert_true(parse_str("Net(\n  (wte): Embedding(50257, 768), 385,973 params\n)\n", &m,
                          &err) < 0);
    assert_string_equal(err.msg, "t.txt:2: Embedding: its suffix says 385973 params, fewer than "
                                 "the 38597376 its printed arguments make at the least: an "
                                 "edited or corrupted print? correct or remove the suffix");
    static const char *const fine[] = {
        "Net(\n  (fc): Linear(in_features=784, out_features=512, bias=True), 401,408 params\n)\n",
        "Net(\n  (fc): Linear(in_features=784, out_features=512, bias=False), 401,920 params\n)\n",
        "Net(\n  (ln): LayerNorm((768,), eps=1e-05, elementwise_affine=True), 768 params\n)\n",
        "Net(\n  (c): Conv1D(nf=2304, nx=768), 1,769,472 params\n)\n",
    };
    for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++)
        if (parse_str(fine[i], &m, &err))
            fail_msg("%s: %s", fine[i], err.msg);
    /* weight_norm: weight_g (one per output) + weight_v + bias, above the arguments' count
     * (it was refused as corrupted); read as printed */
    assert_int_equal(parse_str("Net(\n  (fc): Linear(in_features=784, out_features=512, "
                               "bias=True), 402,432 params\n)\n", &m, &err), 0);
    assert_int_equal(m.params, 784 * 512 + 512 + 512);
    assert_true(parse_str("Net(\n  (ln): LayerNorm((768,), eps=1e-05, elementwise_affine=True), "
                          "15 params\n)\n", &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:2: LayerNorm: its suffix says 15 params, fewer than "
                                    "the 768 its printed arguments make at the least"));
    static const char cnn[] = "Net(\n  (0): Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), "
                              "padding=(1, 1)), 224 params\n  (1): ReLU(inplace=True)\n)\n";
    assert_int_equal(parse_image_str(cnn, 32, &m, &err), 0);
    assert_int_equal(m.params, 224);
    char bad[sizeof cnn];
    memcpy(bad, cnn, sizeof cnn);
    memcpy(strstr(bad, "224 params"), "124", 3);
    assert_true(parse_image_str(bad, 32, &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:2: Conv2d: its suffix says 124 params, fewer than the 216 "
                                 "its printed arguments make at the least: an edited or "
                                 "corrupted print? correct or remove the suffix");
    memcpy(strstr(bad, "124 params"), "232", 3); /* weight_norm's 8 more: as printed */
    assert_int_equal(parse_image_str(bad, 32, &m, &err), 0);
    assert_int_equal(m.params, 232);
    /* LocalResponseNorm has no weights (its argument is a window): 0 params is its count,
     * and without a suffix it adds none */
    static const char lrn[] = "Net(\n  (0): Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), "
                              "padding=(1, 1)), 224 params\n  (1): LocalResponseNorm(5, "
                              "alpha=0.0001, beta=0.75, k=1.0), 0 params\n)\n";
    assert_int_equal(parse_image_str(lrn, 32, &m, &err), 0);
    assert_int_equal(m.params, 224);
    static const char lrn_plain[] = "Net(\n  (0): Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), "
                                    "padding=(1, 1))\n  (1): LocalResponseNorm(5, alpha=0.0001, "
                                    "beta=0.75, k=1.0)\n)\n";
    assert_int_equal(parse_image_str(lrn_plain, 32, &m, &err), 0);
    assert_int_equal(m.params, 224);
    assert_true(parse_file("tests/fuzz/corpus/summary_modtree/bad_conv.txt", &m, &err) < 0);
    assert_string_equal(err.msg, "tests/fuzz/corpus/summary_modtree/bad_conv.txt:2: Conv2d in a "
                                 "module tree: the print has no spatial sizes; give --image-size "
                                 "(the input's height and width, e.g. 224) for a CNN; a model "
                                 "that also runs attention over a sequence (a diffusion U-Net) "
                                 "needs a torchinfo table of it run on its inputs "
                                 "(torchinfo.summary(model, input_data=...)), or a torchsummary "
                                 "one");
    assert_true(parse_file("tests/fuzz/corpus/summary_modtree/bad_unclosed.txt", &m, &err) < 0);
    assert_string_equal(err.msg, "tests/fuzz/corpus/summary_modtree/bad_unclosed.txt:2: block "
                                 "opened here is never closed: the print ends with 2 blocks "
                                 "open; a print cut short may have lost layers, its output "
                                 "head among them: give it whole");
    /* products past EST_MAX_PARAMS are refused, not wrapped */
    assert_true(parse_str("Net(\n  (fc): Linear(in_features=1099511627775, "
                          "out_features=1099511627775, bias=True)\n)\n",
                          &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:2: too many layers or too large a layer");
}

/* Output elements of kind k, summed over the model. */
static uint64_t kind_elems(const struct est_model *m, enum est_kind k)
{
    uint64_t t = 0;
    for (size_t i = 0; i < m->n; i++)
        if (m->layers[i].kind == k)
            t += m->layers[i].out * m->layers[i].count;
    return t;
}

/* torchvision's printed ImageNet CNNs with --image-size: the parser follows the shapes
 * through the print and lists what torchinfo lists for the same models (the layer
 * tables of tools/imagenet_tables.py, written independently from the architectures). */
static void test_modtree_cnn_matches_tables(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        uint32_t hw;
    } nets[] = {{"resnet50", 224}, {"vgg16", 224}, {"mobilenet_v2", 224},
                {"efficientnet_b0", 224}, {"inception_v3", 299}, {"xception", 224}};
    static struct est_layer tl[EST_MAX_LAYERS];
    for (size_t i = 0; i < sizeof nets / sizeof nets[0]; i++) {
        char tp[256], cp[256];
        snprintf(tp, sizeof tp, "data/estimator/cnn-trees/%s.txt", nets[i].name);
        snprintf(cp, sizeof cp, "data/estimator/imagenet-tables/%s.csv", nets[i].name);
        struct est_model m, t;
        struct carma_err err;
        if (parse_into(tp, nets[i].hw, layers, &m, &err))
            fail_msg("%s", err.msg);
        assert_int_equal(parse_into(cp, 0, tl, &t, &err), 0);
        assert_true(m.spatial);
        assert_false(m.needs_seq);
        assert_int_equal(m.params, t.params);
        assert_int_equal(m.input, t.input);
        assert_int_equal(kind_elems(&m, EST_K_CONV), kind_elems(&t, EST_K_CONV));
        assert_int_equal(kind_elems(&m, EST_K_NORM), kind_elems(&t, EST_K_NORM));
        assert_int_equal(kind_elems(&m, EST_K_LINEAR), kind_elems(&t, EST_K_LINEAR));
        assert_int_equal(kind_elems(&m, EST_K_ACT), kind_elems(&t, EST_K_ACT));
        assert_int_equal(est_model_family(&m), EST_FAM_CONV);
        /* torchvision's MobileNetV2 pools functionally; its table lists a pool row */
        if (strcmp(nets[i].name, "mobilenet_v2") != 0)
            assert_int_equal(kind_elems(&m, EST_K_POOL), kind_elems(&t, EST_K_POOL));
        assert_int_equal(kind_elems(&m, EST_K_DROPOUT), kind_elems(&t, EST_K_DROPOUT));
        if (strcmp(nets[i].name, "inception_v3") == 0) {
            /* every Mixed block's output, 2,473,024 elements per sample: Mixed_7c's
             * 1x3 / 3x1 pairs join inside its branches, which the print does not show;
             * the classifier's in_features (2048) widens it from the 1280 channels
             * seen (a table infers concatenations: est_concat_infer) */
            assert_int_equal(m.concat, 2473024);
            continue;
        }
        assert_int_equal(m.concat, 0); /* adds, not concatenations */
        struct est_opts o = {.batch = 64, .optimizer = EST_OPT_ADAM,
                             .precision = EST_PREC_FP32};
        struct est_result a, b;
        assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &a, &err), 0);
        assert_int_equal(est_compute(&t, est_coef_default(), &o, &rwork, &b, &err), 0);
        /* MobileNetV2's pool row; Xception's Flatten row (timm prints its global pool
         * as one leaf), no tensor */
        assert_true(fabs(a.estimate_mib - b.estimate_mib) <= 0.001 * b.estimate_mib);
    }
}

/* Hugging Face defines an MLP's activation module where it likes: GPT-2's act after
 * c_proj, Phi's activation_fn and BART's before fc1. It runs on the first linear
 * layer's output, and its row goes there; a Sequential's listed order is its call
 * order. */
static void test_modtree_mlp_order(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    static const char *const mlps[] = {
        "    (c_fc): Conv1D(nf=3072, nx=768)\n    (c_proj): Conv1D(nf=768, nx=3072)\n"
        "    (act): NewGELUActivation()\n    (dropout): Dropout(p=0.1, inplace=False)\n",
        "    (activation_fn): NewGELUActivation()\n"
        "    (fc1): Linear(in_features=768, out_features=3072, bias=True)\n"
        "    (fc2): Linear(in_features=3072, out_features=768, bias=True)\n",
        "    (fc1): Linear(in_features=768, out_features=3072, bias=True)\n"
        "    (act): GELUActivation()\n"
        "    (fc2): Linear(in_features=3072, out_features=768, bias=True)\n"};
    for (size_t i = 0; i < 3; i++) {
        char t[1024];
        snprintf(t, sizeof t,
                 "M(\n  (wte): Embedding(1000, 768)\n  (mlp): MLP(\n%s  )\n"
                 "  (ln_f): LayerNorm((768,), eps=1e-05, elementwise_affine=True)\n)\n",
                 mlps[i]);
        if (parse_str(t, &m, &err))
            fail_msg("%s", err.msg);
        assert_int_equal(m.layers[1].kind, EST_K_LINEAR);
        assert_int_equal(m.layers[1].out, 3072);
        assert_int_equal(m.layers[2].kind, EST_K_ACT);
        assert_int_equal(m.layers[2].out, 3072);
        assert_int_equal(m.layers[3].kind, EST_K_LINEAR);
        assert_int_equal(m.layers[3].out, 768);
    }
    const char *seq = "M(\n  (wte): Embedding(1000, 768)\n  (mlp): Sequential(\n"
                      "    (0): Linear(in_features=768, out_features=3072, bias=True)\n"
                      "    (1): Linear(in_features=3072, out_features=768, bias=True)\n"
                      "    (2): Tanh()\n  )\n)\n";
    assert_int_equal(parse_str(seq, &m, &err), 0);
    assert_int_equal(m.layers[3].kind, EST_K_ACT);
    assert_int_equal(m.layers[3].out, 768);
    /* an RMSNorm scales and does not shift */
    assert_int_equal(parse_str("M(\n  (e): Embedding(10, 64)\n"
                               "  (norm): LlamaRMSNorm((64,), eps=1e-06)\n)\n",
                               &m, &err),
                     0);
    assert_int_equal(m.layers[1].params, 64);
}

/* A module tree lists modules as defined, not as called: litgpt's GPT defines lm_head
 * before its transformer. A head over the vocabulary (Linear(E -> V) beside an
 * Embedding(V, E)) listed before the token embedding runs last, and the replay takes the
 * loss on its output; another linear layer there that widens E is refused. */
#define HEAD_GPT(head_first, head_last)                                                            \
    "GPT(\n" head_first "  (transformer): ModuleDict(\n"                                           \
    "    (wte): Embedding(1000, 64)\n"                                                             \
    "    (wpe): Embedding(128, 64)\n"                                                              \
    "    (h): ModuleList(\n"                                                                       \
    "      (0-1): 2 x Block(\n"                                                                    \
    "        (norm_1): LayerNorm((64,), eps=1e-05, elementwise_affine=True)\n"                     \
    "        (attn): CausalSelfAttention(\n"                                                       \
    "          (qkv): Linear(in_features=64, out_features=192, bias=False)\n"                      \
    "          (proj): Linear(in_features=64, out_features=64, bias=False)\n"                      \
    "        )\n"                                                                                  \
    "        (norm_2): LayerNorm((64,), eps=1e-05, elementwise_affine=True)\n"                     \
    "        (mlp): MLP(\n"                                                                        \
    "          (fc): Linear(in_features=64, out_features=256, bias=True)\n"                        \
    "          (act): GELU(approximate='none')\n"                                                  \
    "          (proj): Linear(in_features=256, out_features=64, bias=True)\n"                      \
    "        )\n"                                                                                  \
    "      )\n"                                                                                    \
    "    )\n"                                                                                      \
    "    (ln_f): LayerNorm((64,), eps=1e-05, elementwise_affine=True)\n"                           \
    "  )\n" head_last ")\n"
#define HEAD_LINE "  (lm_head): Linear(in_features=64, out_features=1000, bias=False)\n"

static void test_modtree_head_first(void **state)
{
    (void)state;
    static struct est_layer la[EST_MAX_LAYERS];
    struct est_model m, last;
    struct carma_err err;
    const char *first_s = HEAD_GPT(HEAD_LINE, "");
    const char *last_s = HEAD_GPT("", HEAD_LINE);
    if (parse_str(first_s, &m, &err))
        fail_msg("%s", err.msg);
    est_model_init(&last, la, EST_MAX_LAYERS);
    assert_int_equal(est_parse(last_s, strlen(last_s), "l.txt", &last, &err), 0);
    assert_int_equal(m.n, last.n);
    assert_int_equal(m.layers[0].kind, EST_K_EMBED);
    assert_int_equal(m.layers[m.n - 1].kind, EST_K_LINEAR);
    assert_int_equal(m.layers[m.n - 1].out, 1000);
    assert_memory_equal(m.layers, last.layers, m.n * sizeof m.layers[0]);
    struct est_opts o = {
        .batch = 4, .seq = 128, .optimizer = EST_OPT_ADAMW, .precision = EST_PREC_BF16};
    struct est_result a, b;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &a, &err), 0);
    assert_int_equal(est_compute(&last, est_coef_default(), &o, &rwork, &b, &err), 0);
    assert_float_equal(a.estimate_mib, b.estimate_mib, 1e-9);
    assert_float_equal(a.bound_mib, b.bound_mib, 1e-9);
    /* an encoder-decoder whose decoder defines its head first: the decoder's own end */
    const char *s2s = "Seq2Seq(\n"
                      "  (encoder): Encoder(\n"
                      "    (emb): Embedding(1000, 64)\n"
                      "    (fc): Linear(in_features=64, out_features=64, bias=True)\n"
                      "  )\n"
                      "  (decoder): Decoder(\n"
                      "    (out): Linear(in_features=64, out_features=500, bias=True)\n"
                      "    (emb): Embedding(500, 64)\n"
                      "    (fc): Linear(in_features=64, out_features=64, bias=True)\n"
                      "  )\n"
                      ")\n";
    assert_int_equal(parse_str(s2s, &m, &err), 0);
    assert_int_equal(m.n, 5);
    assert_int_equal(m.layers[2].kind, EST_K_EMBED);
    assert_int_equal(m.layers[4].out, 500);
    /* a small classifier defined first stays (its loss on the wider tensor is the safe
     * side); a wider linear layer before the embedding is refused */
    const char *cls = "Net(\n"
                      "  (classifier): Linear(in_features=64, out_features=2, bias=True)\n"
                      "  (emb): Embedding(1000, 64)\n"
                      "  (fc): Linear(in_features=64, out_features=64, bias=True)\n"
                      ")\n";
    assert_int_equal(parse_str(cls, &m, &err), 0);
    assert_int_equal(m.layers[0].out, 2);
    const char *wide = "Net(\n"
                       "  (proj): Linear(in_features=64, out_features=256, bias=True)\n"
                       "  (emb): Embedding(1000, 64)\n"
                       "  (fc): Linear(in_features=256, out_features=1000, bias=True)\n"
                       ")\n";
    assert_true(parse_str(wide, &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:2: a linear layer (64 -> 256 features) listed before "
                                 "the token embedding (line 3): a module tree lists modules "
                                 "as defined, and this one may be an output head, which runs "
                                 "last, or a projection run after the embedding; give a "
                                 "torchinfo table (it lists layers in call order)");
}

/* The head's place among a flat model's children (GPT(...) with wte, wpe, lm_head, the
 * layers and ln_f in any order): a position table listed first, a head listed between
 * the token embedding and the layers. The layers' RMSNorm() prints no size: the parser
 * sizes it from the row before. */
#define FLAT_WTE "  (wte): Embedding(1000, 64)\n"
#define FLAT_WPE "  (wpe): Embedding(128, 64)\n"
#define FLAT_BODY                                                                                  \
    "  (h): ModuleList(\n"                                                                         \
    "    (0-1): 2 x Block(\n"                                                                      \
    "      (norm_1): RMSNorm()\n"                                                                  \
    "      (attn): CausalSelfAttention(\n"                                                         \
    "        (qkv): Linear(in_features=64, out_features=192, bias=False)\n"                        \
    "        (proj): Linear(in_features=64, out_features=64, bias=False)\n"                        \
    "      )\n"                                                                                    \
    "      (norm_2): RMSNorm()\n"                                                                  \
    "      (mlp): MLP(\n"                                                                          \
    "        (fc): Linear(in_features=64, out_features=256, bias=True)\n"                          \
    "        (act): GELU(approximate='none')\n"                                                    \
    "        (proj): Linear(in_features=256, out_features=64, bias=True)\n"                        \
    "      )\n"                                                                                    \
    "    )\n"                                                                                      \
    "  )\n"                                                                                        \
    "  (ln_f): RMSNorm()\n"

/* s parses to the same rows and the same estimate as ref (the head listed last). */
static void same_as_listed_last(const char *s, const char *ref)
{
    static struct est_layer la[EST_MAX_LAYERS];
    struct est_model m, last;
    struct carma_err err;
    if (parse_str(s, &m, &err))
        fail_msg("%s", err.msg);
    est_model_init(&last, la, EST_MAX_LAYERS);
    if (est_parse(ref, strlen(ref), "l.txt", &last, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.n, last.n);
    assert_int_equal(m.layers[m.n - 1].kind, EST_K_LINEAR);
    assert_int_equal(m.layers[m.n - 1].out, 1000);
    assert_memory_equal(m.layers, last.layers, m.n * sizeof m.layers[0]);
    assert_int_equal(m.params, last.params);
    struct est_opts o = {
        .batch = 4, .seq = 128, .optimizer = EST_OPT_ADAMW, .precision = EST_PREC_BF16};
    struct est_result a, b;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &a, &err), 0);
    assert_int_equal(est_compute(&last, est_coef_default(), &o, &rwork, &b, &err), 0);
    assert_float_equal(a.estimate_mib, b.estimate_mib, 1e-9);
    assert_float_equal(a.bound_mib, b.bound_mib, 1e-9);
}

/* A position table listed first: the token table is the larger one, and the head
 * before it still runs last (it stayed first: the logits vanished). */
static void test_modtree_head_after_position_table(void **state)
{
    (void)state;
    same_as_listed_last("GPT(\n" FLAT_WPE HEAD_LINE FLAT_WTE FLAT_BODY ")\n",
                        "GPT(\n" FLAT_WPE FLAT_WTE FLAT_BODY HEAD_LINE ")\n");
}

/* Weight tying written beside the embedding: wte, lm_head, then the layers. The head
 * runs last, and the first RMSNorm() reads E, not the head's V (it was read 1000 wide,
 * and the head ran mid-model: a bound far too large). */
static void test_modtree_head_before_body(void **state)
{
    (void)state;
    same_as_listed_last("GPT(\n" FLAT_WTE HEAD_LINE FLAT_WPE FLAT_BODY ")\n",
                        "GPT(\n" FLAT_WTE FLAT_WPE FLAT_BODY HEAD_LINE ")\n");
    same_as_listed_last("GPT(\n" FLAT_WTE HEAD_LINE FLAT_BODY ")\n",
                        "GPT(\n" FLAT_WTE FLAT_BODY HEAD_LINE ")\n");
}

static void test_modtree_head_token_vocabulary(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    /* only the token table's vocabulary makes a head: a projection to a position
     * table's 128 rows listed before the tables is refused (it was moved), naming the
     * token table's own line */
    const char *proj =
        "GPT(\n"
        "  (proj): Linear(in_features=64, out_features=128, bias=True)\n" FLAT_WTE FLAT_WPE
            FLAT_BODY ")\n";
    assert_true(parse_str(proj, &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:2: a linear layer (64 -> 128 features) listed before "
                                 "the token embedding (line 3): a module tree lists modules "
                                 "as defined, and this one may be an output head, which runs "
                                 "last, or a projection run after the embedding; give a "
                                 "torchinfo table (it lists layers in call order)");
    /* and a 2-class classifier defined first stays first beside a token-type table of 2
     * rows (it was moved to the end as that table's "vocabulary") */
    const char *cls = "Net(\n"
                      "  (classifier): Linear(in_features=64, out_features=2, bias=True)\n"
                      "  (word): Embedding(1000, 64)\n"
                      "  (token_type): Embedding(2, 64)\n"
                      "  (fc): Linear(in_features=64, out_features=64, bias=True)\n"
                      ")\n";
    assert_int_equal(parse_str(cls, &m, &err), 0);
    assert_int_equal(m.layers[0].kind, EST_K_LINEAR);
    assert_int_equal(m.layers[0].out, 2);
}

/* A head listed after the vocabulary head that runs on the hidden state (TRL's
 * AutoModelForCausalLMWithValueHead: v_head's dropout and Linear(E -> 1)) took the loss
 * on its 1-wide output, and the logits' log-softmax and its gradient were lost: the
 * vocabulary head now runs last, reading the hidden state, and the later head's rows
 * (its unsized dropout read E, not V) run before it. */
static void test_modtree_head_after_vocab_head(void **state)
{
    (void)state;
    static struct est_layer la[EST_MAX_LAYERS];
    struct est_model m, lm;
    struct carma_err err;
#define VHEAD_LM(after)                                                                            \
    "WithValueHead(\n"                                                                             \
    "  (pretrained_model): GPT(\n" FLAT_WTE FLAT_BODY HEAD_LINE "  )\n" after ")\n"
#define VHEAD_ROWS(first)                                                                          \
    "  (v_head): ValueHead(\n"                                                                     \
    "    (dropout): Dropout(p=0.1, inplace=False)\n"                                               \
    "    (summary): Linear(in_features=" first ", out_features=1, bias=True)\n"                    \
    "    (flatten): Flatten(start_dim=1, end_dim=-1)\n"                                            \
    "  )\n"
    const char *with = VHEAD_LM(VHEAD_ROWS("64")), *without = VHEAD_LM("");
    est_model_init(&lm, la, EST_MAX_LAYERS);
    assert_int_equal(est_parse(without, strlen(without), "l.txt", &lm, &err), 0);
    if (parse_str(with, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.n, lm.n + 3);
    assert_int_equal(m.params, lm.params + 65);
    const struct est_layer *h = &m.layers[m.n - 1];
    assert_int_equal(h->kind, EST_K_LINEAR);
    assert_int_equal(h->out, 1000);
    assert_int_equal(h->shares_input, 1); /* the hidden state, as v_head's layer reads */
    assert_int_equal(m.layers[m.n - 4].kind, EST_K_DROPOUT);
    assert_int_equal(m.layers[m.n - 4].out, 64);
    assert_int_equal(m.layers[m.n - 3].out, 1);
    struct est_opts o = {.batch = 8, .seq = 512, .optimizer = EST_OPT_ADAMW,
                         .precision = EST_PREC_BF16, .attention = EST_ATTN_SDPA};
    struct est_result a, b;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &a, &err), 0);
    assert_int_equal(est_compute(&lm, est_coef_default(), &o, &rwork, &b, &err), 0);
    /* the LM's logits (1000 x 4096 tokens), their fp32 copy and log-softmax: all there */
    assert_true(a.estimate_mib >= b.estimate_mib);
    assert_true(a.bound_mib >= b.bound_mib);
    /* a layer on the logits (1000 features in) is no head on the hidden state: the
     * listed order stays */
    const char *on_logits = VHEAD_LM(VHEAD_ROWS("1000"));
    assert_int_equal(parse_str(on_logits, &m, &err), 0);
    assert_int_equal(m.layers[m.n - 2].out, 1);
    assert_int_equal(m.layers[m.n - 2].shares_input, 0);
#undef VHEAD_ROWS
#undef VHEAD_LM
}

/* The refusal names the token table's own line, not the block holding it (line 3). */
static void test_modtree_head_refusal_line(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *nested =
        HEAD_GPT("  (proj): Linear(in_features=64, out_features=256, bias=True)\n", "");
    assert_true(parse_str(nested, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:2: a linear layer (64 -> 256 features) listed "
                                    "before the token embedding (line 4)"));
}

/* PyTorch's nn.TransformerEncoderLayer and TransformerDecoderLayer run F.relu (or F.gelu)
 * between linear1 and dropout, which the print does not show unless a module was passed
 * as `activation` (printed last): linear1's width is kept once more per token. */
#define TORCH_LAYER(cls, act)                                                                      \
    "Model(\n"                                                                                     \
    "  (embedding): Embedding(100, 256)\n"                                                         \
    "  (layers): ModuleList(\n"                                                                    \
    "    (0-1): 2 x " cls "(\n"                                                                    \
    "      (self_attn): MultiheadAttention(\n"                                                     \
    "        (out_proj): NonDynamicallyQuantizableLinear(in_features=256, out_features=256, "      \
    "bias=True)\n"                                                                                 \
    "      )\n"                                                                                    \
    "      (linear1): Linear(in_features=256, out_features=2048, bias=True)\n"                     \
    "      (dropout): Dropout(p=0.1, inplace=False)\n"                                             \
    "      (linear2): Linear(in_features=2048, out_features=256, bias=True)\n"                     \
    "      (norm1): LayerNorm((256,), eps=1e-05, elementwise_affine=True)\n"                       \
    "      (norm2): LayerNorm((256,), eps=1e-05, elementwise_affine=True)\n"                       \
    "      (dropout1): Dropout(p=0.1, inplace=False)\n"                                            \
    "      (dropout2): Dropout(p=0.1, inplace=False)\n" act "    )\n"                              \
    "  )\n"                                                                                        \
    ")\n"

static void test_modtree_torch_transformer_layer(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    static const char *const prints[] = {
        TORCH_LAYER("TransformerEncoderLayer", ""), TORCH_LAYER("TransformerDecoderLayer", ""),
        TORCH_LAYER("TransformerEncoderLayer", "      (activation): GELU(approximate='none')\n")};
    for (size_t p = 0; p < 3; p++) {
        if (parse_str(prints[p], &m, &err))
            fail_msg("%s", err.msg);
        size_t acts = 0, l1 = SIZE_MAX;
        for (size_t i = 0; i < m.n; i++) {
            if (m.layers[i].kind == EST_K_LINEAR && m.layers[i].out == 2048)
                l1 = i;
            acts += m.layers[i].kind == EST_K_ACT;
        }
        assert_int_equal(acts, 1);
        assert_true(l1 + 1 < m.n);
        const struct est_layer *a = &m.layers[l1 + 1];
        assert_int_equal(a->kind, EST_K_ACT);
        assert_int_equal(a->out, 2048);
        assert_int_equal(a->count, 2);
        assert_int_equal(a->params, 0);
        /* F.relu keeps its output; a GELU module its input */
        assert_int_equal(a->flags, p < 2 ? EST_LF_SAVES_RESULT : 0);
        assert_int_equal(m.layers[l1 + 2].kind, EST_K_DROPOUT);
        /* their self_attn runs with need_weights=False: fused (PyTorch >= 2.1), so its
         * unknown heads matter only under --attention eager */
        size_t attn = 0;
        for (size_t i = 0; i < m.n; i++)
            if (m.layers[i].kind == EST_K_ATTN) {
                attn++;
                assert_true(m.layers[i].flags & EST_LF_FUSED);
            }
        assert_int_equal(attn, 1);
        assert_int_equal(est_heads_check(&m, EST_ATTN_SHOWN, NULL, &err), 0);
        assert_int_not_equal(est_heads_check(&m, EST_ATTN_EAGER, NULL, &err), 0);
    }
}

/* Twenty torchvision models as torchvision 0.14 prints them, against the layer tables
 * their forward passes give (tools/torchvision_zoo.py): what the parser infers from the
 * print is what runs. The exceptions are what no print shows. */
static void test_modtree_torchvision_zoo(void **state)
{
    (void)state;
    char *buf;
    size_t len;
    struct carma_err err;
    assert_int_equal(carma_file_read("data/estimator/torchvision-zoo/index.csv", 1 << 16, &buf,
                                     &len, &err),
                     0);
    static struct est_layer tl[EST_MAX_LAYERS];
    unsigned nets = 0;
    char name[64];
    unsigned hw;
    unsigned long long cat;
    for (const char *l = strchr(buf, '\n') + 1; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : l) {
        assert_int_equal(sscanf(l, "%63[^.].txt,%u,%llu", name, &hw, &cat), 3);
        char tp[128], cp[128];
        snprintf(tp, sizeof tp, "data/estimator/torchvision-zoo/%s.txt", name);
        snprintf(cp, sizeof cp, "data/estimator/torchvision-zoo/%s.csv", name);
        struct est_model m, t;
        if (parse_into(tp, hw, layers, &m, &err))
            fail_msg("%s: %s", name, err.msg);
        assert_int_equal(parse_into(cp, 0, tl, &t, &err), 0);
        nets++;
        /* ConvNeXt's CNBlock multiplies by its layer_scale, a (C, 1, 1) parameter of the
         * block, not of a leaf: a product the hooks on leaves do not see */
        int cnb = strcmp(name, "convnext_tiny") == 0;
        uint64_t cn_params = 3 * 96 + 3 * 192 + 9 * 384 + 3 * 768;
        uint64_t cn_elems = 3 * 96 * 56 * 56 + 3 * 192 * 28 * 28 + 9 * 384 * 14 * 14 +
                            3 * 768 * 7 * 7;
        assert_int_equal(m.params, t.params + (cnb ? cn_params : 0));
        assert_int_equal(m.input, t.input);
        static const enum est_kind kinds[] = {EST_K_CONV, EST_K_NORM, EST_K_LINEAR,
                                              EST_K_ACT, EST_K_DROPOUT, EST_K_POOL};
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
            uint64_t a = kind_elems(&m, kinds[k]), b = kind_elems(&t, kinds[k]);
            if (strcmp(name, "densenet121") == 0 && kinds[k] == EST_K_ACT) {
                /* features' relu0 also runs as F.relu after norm5, an unlisted call */
                assert_int_equal(a - b, 1024 * 7 * 7);
            } else if (strcmp(name, "squeezenet1_0") == 0 && kinds[k] == EST_K_POOL) {
                /* a pool after a Fire reads its join, which is an add or a concatenation
                 * only a later reader tells: taken as the add */
                assert_true(a < b);
            } else if (cnb && kinds[k] == EST_K_POOL) {
                assert_int_equal(a - b, cn_elems);
            } else if (a != b) {
                fail_msg("%s: kind %d: %llu elements, the forward pass gives %llu", name,
                         (int)kinds[k], (unsigned long long)a, (unsigned long long)b);
            }
        }
        if (strcmp(name, "inception_v3") == 0) /* Mixed_7b/c's inner pairs, 2 x 2 x 768 x 8 x 8 */
            assert_int_equal(m.concat, cat - 4 * 768 * 8 * 8);
        else if (strcmp(name, "shufflenet_v2_x1_0") == 0 || strcmp(name, "squeezenet1_0") == 0)
            assert_true(m.concat > 0 && m.concat < cat); /* x.chunk's halves, Fire's add-or-cat */
        else
            assert_int_equal(m.concat, cat);
    }
    free(buf);
    assert_int_equal(nets, 20);
}

/* The rules a convolutional print needs, on a small tree (resnet_basic_se.txt). */
static void test_modtree_cnn_rules(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *p = "tests/fuzz/corpus/summary_modtree/resnet_basic_se.txt";
    if (parse_into(p, 224, layers, &m, &err))
        fail_msg("%s", err.msg);
    /* shapes: the 7x7/2 stem and the 3/2 pool to 64 x 56 x 56, the block's stride to
     * 128 x 28 x 28 (its shortcut read from the block's input, not the newest tensor) */
    assert_int_equal(m.layers[0].out, 64 * 112 * 112);
    assert_int_equal(m.layers[3].kind, EST_K_POOL);
    assert_int_equal(m.layers[3].out, 64 * 56 * 56);
    assert_int_equal(m.layers[10].kind, EST_K_CONV);
    assert_int_equal(m.layers[10].out, 128 * 28 * 28);
    assert_int_equal(m.layers[10].params, 64 * 128);
    /* the block's one ReLU module runs after each norm: after bn1 (listed) and bn2 */
    assert_int_equal(m.layers[9].kind, EST_K_ACT);
    assert_int_equal(m.layers[9].out, 128 * 28 * 28);
    assert_true(m.layers[9].flags & EST_LF_INPLACE);
    /* squeeze-excitation works at 1 x 1, and the block after it reads 28 x 28 */
    assert_int_equal(m.layers[12].out, 128);
    assert_int_equal(m.layers[17].out, 256 * 28 * 28);
    /* GroupNorm(groups, channels) */
    assert_int_equal(m.layers[18].params, 2 * 256);
    assert_int_equal(m.layers[20].out, 256 * 56 * 56); /* Upsample(scale_factor=2.0) */
    /* the classifier pools functionally: its dropout sees 256 elements */
    assert_int_equal(m.layers[21].kind, EST_K_DROPOUT);
    assert_int_equal(m.layers[21].out, 256);
    assert_int_equal(m.layers[22].out, 10);

    /* the replay treats an in-place activation as no tensor */
    struct est_model d;
    struct est_opts o = {.batch = 8, .optimizer = EST_OPT_SGD, .precision = EST_PREC_FP32};
    struct est_replay_result r1, r2;
    assert_int_equal(est_replay(&m, &o, &rwork, &r1), 0);
    d = m;
    for (size_t i = 0; i < d.n; i++)
        if (d.layers[i].flags & EST_LF_INPLACE)
            d.layers[i].kind = EST_K_OTHER;
    assert_int_equal(est_replay(&d, &o, &rwork, &r2), 0);
    assert_true(r1.peak_mib == r2.peak_mib);
    for (size_t i = 0; i < d.n; i++)
        if (d.layers[i].flags & EST_LF_INPLACE)
            d.layers[i].kind = EST_K_ACT;

    /* two branches of different widths read the block's input: a concatenation */
    const char *cat = "Net(\n"
                      "  (stem): Conv2d(3, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
                      "  (mix): Mixed(\n"
                      "    (a): Conv2d(16, 8, kernel_size=(1, 1), stride=(1, 1))\n"
                      "    (b1): Conv2d(16, 4, kernel_size=(1, 1), stride=(1, 1))\n"
                      "    (b2): Conv2d(4, 24, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
                      "  )\n"
                      "  (pool): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, "
                      "ceil_mode=False)\n"
                      ")\n";
    if (parse_image_str(cat, 32, &m, &err))
        fail_msg("%s", err.msg);
    /* the pool reads the newest tensor: the join, not the last branch's 24 channels */
    assert_int_equal(m.concat, 32 * 32 * 32);
    assert_int_equal(m.layers[m.n - 1].kind, EST_K_POOL);
    assert_int_equal(m.layers[m.n - 1].out, 32 * 16 * 16);
    /* a linear layer after a global pool of that join wants 40 features: a branch
     * joined inside its branch, unseen; the join is widened, and the pool with it */
    char wide[1024];
    snprintf(wide, sizeof wide, "%.*s  (gap): AdaptiveAvgPool2d(output_size=(1, 1))\n"
                                "  (fc): Linear(in_features=40, out_features=10, bias=True)\n)\n",
             (int)(strstr(cat, "  (pool)") - cat), cat);
    if (parse_image_str(wide, 32, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.concat, 40 * 32 * 32);
    assert_int_equal(m.layers[m.n - 2].kind, EST_K_POOL);
    assert_int_equal(m.layers[m.n - 2].out, 40);
    /* the same branches at one width join by an add: nothing more */
    const char *add = "Net(\n"
                      "  (stem): Conv2d(3, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
                      "  (res): Block(\n"
                      "    (a): Conv2d(16, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
                      "    (b): Conv2d(16, 16, kernel_size=(1, 1), stride=(1, 1))\n"
                      "  )\n"
                      "  (out): Conv2d(16, 10, kernel_size=(1, 1), stride=(1, 1))\n"
                      ")\n";
    if (parse_image_str(add, 32, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.concat, 0);

    /* a block that lists its skip first (timm's Xception): the ReLU that opens the
     * branch run first reads the block's input, not the skip's output */
    const char *skip = "Net(\n"
                       "  (stem): Conv2d(3, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
                       "  (block): Block(\n"
                       "    (skip): Conv2d(16, 32, kernel_size=(1, 1), stride=(2, 2), bias=False)\n"
                       "    (skipbn): BatchNorm2d(32, eps=1e-05, momentum=0.1, affine=True)\n"
                       "    (rep): Sequential(\n"
                       "      (0): ReLU()\n"
                       "      (1): SeparableConv2d(\n"
                       "        (conv1): Conv2d(16, 16, kernel_size=(3, 3), stride=(1, 1), "
                       "padding=(1, 1), groups=16, bias=False)\n"
                       "        (pointwise): Conv2d(16, 32, kernel_size=(1, 1), stride=(1, 1), "
                       "bias=False)\n"
                       "      )\n"
                       "      (2): MaxPool2d(kernel_size=3, stride=2, padding=1, dilation=1, "
                       "ceil_mode=False)\n"
                       "    )\n"
                       "  )\n"
                       "  (global_pool): SelectAdaptivePool2d (pool_type=avg, "
                       "flatten=Flatten(start_dim=1, end_dim=-1))\n"
                       "  (fc): Linear(in_features=32, out_features=10, bias=True)\n"
                       ")\n";
    if (parse_image_str(skip, 32, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.n, 9);
    assert_int_equal(m.layers[1].out, 32 * 16 * 16); /* skip */
    assert_int_equal(m.layers[3].kind, EST_K_ACT);
    assert_int_equal(m.layers[3].out, 16 * 32 * 32);
    assert_int_equal(m.layers[5].out, 32 * 32 * 32); /* pointwise, at the input's size */
    assert_int_equal(m.layers[6].out, 32 * 16 * 16); /* its pool: the skip's shape */
    assert_int_equal(m.concat, 0);                   /* joined by an add */
    /* timm's pool prints "Name (args)"; no output size means a global pool */
    assert_int_equal(m.layers[7].kind, EST_K_POOL);
    assert_int_equal(m.layers[7].out, 32);
    /* older timm prints the output size; 'catavgmax' joins two pools' channels; an
     * empty pool_type passes its input through */
    static const struct {
        const char *args;
        enum est_kind kind;
        uint64_t out;
    } pools[] = {{"output_size=1, pool_type=avg", EST_K_POOL, 32},
                 {"pool_type=catavgmax, flatten=Flatten(start_dim=1, end_dim=-1)", EST_K_POOL, 64},
                 {"pool_type=, flatten=Identity()", EST_K_OTHER, 0}};
    for (size_t i = 0; i < sizeof pools / sizeof pools[0]; i++) {
        char t[512];
        snprintf(t, sizeof t,
                 "Net(\n  (c): Conv2d(3, 32, kernel_size=(3, 3), stride=(1, 1))\n"
                 "  (global_pool): SelectAdaptivePool2d (%s)\n)\n",
                 pools[i].args);
        if (parse_image_str(t, 16, &m, &err))
            fail_msg("%s", err.msg);
        assert_int_equal(m.layers[1].kind, pools[i].kind);
        assert_int_equal(m.layers[1].out, pools[i].out);
    }
    /* the space is a leaf's own __repr__: a block never opens with one */
    assert_true(parse_image_str("Net(\n  (b): Block (\n  )\n)\n", 16, &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:2: expected 'Module(' after the name");

    /* timm's Conv2dSame and MaxPool2dSame pad TensorFlow's way, printing no padding:
     * ceil(33 / 2) = 17, then ceil(17 / 2) = 9 (a review found tf_efficientnet_b4's
     * estimate 10-13% low when they were read unpadded) */
    assert_int_equal(parse_image_str("Net(\n  (c): Conv2dSame(3, 8, kernel_size=(3, 3), "
                                     "stride=(2, 2), bias=False)\n  (p): MaxPool2dSame("
                                     "kernel_size=(3, 3), stride=(2, 2), padding=(0, 0), "
                                     "dilation=(1, 1), ceil_mode=False)\n)\n",
                                     33, &m, &err),
                     0);
    assert_int_equal(m.layers[0].out, 8 * 17 * 17);
    assert_int_equal(m.layers[1].out, 8 * 9 * 9);
    /* timm's SqueezeExcite squeezes with a mean in forward (no pool printed): its 1x1
     * convolutions read 1x1, it reads the flow, not the block's input as a second branch
     * (its channels are the input's), and the convolution after it reads the block's
     * size, with no join (every timm EfficientNet print had a false one) */
    const char *timm_se =
        "Net(\n"
        "  (conv_stem): Conv2d(3, 32, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), "
        "bias=False)\n"
        "  (blocks): Sequential(\n"
        "    (0): DepthwiseSeparableConv(\n"
        "      (conv_dw): Conv2d(32, 32, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), "
        "groups=32, bias=False)\n"
        "      (bn1): BatchNorm2d(32, eps=1e-05, momentum=0.1, affine=True, "
        "track_running_stats=True)\n"
        "      (se): SqueezeExcite(\n"
        "        (conv_reduce): Conv2d(32, 8, kernel_size=(1, 1), stride=(1, 1))\n"
        "        (act1): SiLU(inplace=True)\n"
        "        (conv_expand): Conv2d(8, 32, kernel_size=(1, 1), stride=(1, 1))\n"
        "        (gate): Sigmoid()\n"
        "      )\n"
        "      (conv_pw): Conv2d(32, 16, kernel_size=(1, 1), stride=(1, 1), bias=False)\n"
        "    )\n"
        "  )\n"
        ")\n";
    assert_int_equal(parse_image_str(timm_se, 32, &m, &err), 0);
    assert_int_equal(m.join_line, 0);
    assert_int_equal(m.concat, 0); /* the block is one flow, not two branches joined */
    assert_int_equal(m.layers[3].out, 8);           /* conv_reduce, at 1x1 */
    assert_int_equal(m.layers[5].out, 32);          /* conv_expand */
    assert_int_equal(m.layers[m.n - 1].out, 16 * 16 * 16); /* conv_pw, at the block's size */
    /* errors name the line and the problem */
    assert_true(parse_image_str("Net(\n  (c): Conv1d(3, 8, kernel_size=(3,), stride=(1,))\n)\n",
                                224, &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:2: Conv1d in a module tree: only 2-D convolutions are "
                                 "sized from --image-size; a 1-D or 3-D one (an audio front "
                                 "end, as Whisper's or wav2vec2's, over mel frames or samples; "
                                 "video) needs a torchinfo table of the model run on its inputs "
                                 "(torchinfo.summary(model, input_data=...))");
    assert_true(parse_image_str("Net(\n  (c): Conv2d(3, 8, kernel_size=(5, 5), stride=(1, 1))\n"
                                ")\n",
                                4, &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:2: Conv2d: no output at this --image-size (input 4x4)");
    assert_true(parse_image_str("Net(\n  (c): Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), "
                                "groups=2)\n)\n",
                                224, &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:2: bad Conv2d channels");
    /* a vision transformer read with --image-size: its patches and a class token */
    assert_int_equal(parse_into("tests/fuzz/corpus/summary_modtree/vit_hf.txt", 224, layers,
                                &m, &err),
                     0);
    assert_int_equal(m.tokens, 14 * 14 + 1);
    assert_int_equal(m.patch_h, 16);
    assert_int_equal(m.patch_w, 16);
    assert_int_equal(m.spatial, 0);
    assert_int_equal(m.layers[0].kind, EST_K_LINEAR); /* the patch embedding, as without */
    assert_int_equal(parse_into("tests/fuzz/corpus/summary_modtree/vit_hf.txt", 8, layers, &m,
                                &err),
                     -EINVAL);
    assert_string_equal(err.msg, "tests/fuzz/corpus/summary_modtree/vit_hf.txt:5: Conv2d: no "
                                 "output at this --image-size (input 8x8)");
    /* a sequence model whose convolutions do not cut patches */
    assert_true(parse_image_str("Net(\n  (e): Embedding(100, 8)\n"
                                "  (c): Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1))\n)\n",
                                32, &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:2: a sequence model (this line) with convolutions that "
                                 "do not cut the image into patches (line 3): --image-size sizes "
                                 "the convolutions but not the sequence, and --seq-len the "
                                 "sequence but not the convolutions; give a torchinfo table of it "
                                 "run on its inputs (torchinfo.summary(model, input_data=...)), "
                                 "which lists every shape");
    /* ConvNeXt's per-pixel Linear after a permute in Python (no Permute module: timm's
     * and Hugging Face's blocks) is read as after a global pool, until the next block's
     * convolution reads the 1x1 result with the channels of the tensor that Linear read:
     * then every row since ran per pixel, and Linear layers on the newest tensor's
     * channels do from there on (before, refused at the Linear) */
    const char *cnx = "Net(\n"
                      "  (stem): Conv2d(3, 16, kernel_size=(4, 4), stride=(4, 4))\n"
                      "  (blocks): Sequential(\n"
                      "    (0): Block(\n"
                      "      (dwconv): Conv2d(16, 16, kernel_size=(7, 7), stride=(1, 1), "
                      "padding=(3, 3), groups=16)\n"
                      "      (norm): LayerNorm((16,), eps=1e-06, elementwise_affine=True)\n"
                      "      (pwconv1): Linear(in_features=16, out_features=64, bias=True)\n"
                      "      (act): GELU(approximate='none')\n"
                      "      (pwconv2): Linear(in_features=64, out_features=16, bias=True)\n"
                      "    )\n"
                      "    (1): Block(\n"
                      "      (dwconv): Conv2d(16, 16, kernel_size=(7, 7), stride=(1, 1), "
                      "padding=(3, 3), groups=16)\n"
                      "      (norm): LayerNorm((16,), eps=1e-06, elementwise_affine=True)\n"
                      "      (pwconv1): Linear(in_features=16, out_features=64, bias=True)\n"
                      "      (act): GELU(approximate='none')\n"
                      "      (pwconv2): Linear(in_features=64, out_features=16, bias=True)\n"
                      "    )\n"
                      "  )\n"
                      ")\n";
    if (parse_image_str(cnx, 32, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.n, 11);
    static const uint64_t cnx_out[] = {16 * 64, 16 * 64, 16 * 64, 64 * 64, 64 * 64, 16 * 64,
                                       16 * 64, 16 * 64, 64 * 64, 64 * 64, 16 * 64};
    for (size_t i = 0; i < m.n; i++)
        assert_int_equal(m.layers[i].out, cnx_out[i]);
    /* a linear layer before a wider convolution of its block runs per position (timm's
     * MambaOut: fc1, a depthwise 7 x 7 on part of its output, fc2 on the rest: read after a
     * global pool, every later block had run at 1x1, 0.29 of its measured peak, its bound
     * 0.62; then 0.88, bound 1.24) */
    const char *cl_conv = "Net(\n"
                          "  (stem): Conv2d(3, 16, kernel_size=(4, 4), stride=(4, 4))\n"
                          "  (fc1): Linear(in_features=16, out_features=64, bias=True)\n"
                          "  (conv): Conv2d(32, 32, kernel_size=(7, 7), stride=(1, 1), "
                          "padding=(3, 3), groups=32)\n"
                          "  (fc2): Linear(in_features=32, out_features=16, bias=True)\n"
                          ")\n";
    if (parse_image_str(cl_conv, 32, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.layers[1].kind, EST_K_LINEAR);
    assert_int_equal(m.layers[1].out, 64 * 8 * 8);
    assert_int_equal(m.layers[m.n - 1].kind, EST_K_LINEAR);
    assert_int_equal(m.layers[m.n - 1].out, 16 * 8 * 8);
    /* MambaOut's own widths: fc1 makes g, i and c (32 + 16 + 16), the convolution runs on
     * c, fc2 reads act(g) * cat(i, conv(c)), 32 wide, which no tensor is: that gated
     * product is a row of its own before fc2, keeping its factors (0.88 -> 0.93 of the
     * measured peak of MambaOut-Femto, bound 1.30) */
    const char *gated = "Net(\n"
                        "  (stem): Conv2d(3, 16, kernel_size=(4, 4), stride=(4, 4))\n"
                        "  (fc1): Linear(in_features=16, out_features=64, bias=True)\n"
                        "  (conv): Conv2d(16, 16, kernel_size=(7, 7), stride=(1, 1), "
                        "padding=(3, 3), groups=16)\n"
                        "  (fc2): Linear(in_features=32, out_features=16, bias=True)\n"
                        ")\n";
    if (parse_image_str(gated, 32, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.layers[m.n - 2].kind, EST_K_POOL);
    assert_true(m.layers[m.n - 2].flags & EST_LF_PRODUCT);
    assert_int_equal(m.layers[m.n - 2].out, 32 * 8 * 8);
    assert_int_equal(m.layers[m.n - 1].out, 16 * 8 * 8);
    if (parse_image_str(cl_conv, 32, &m, &err)) /* fc2 on conv's 32: no product */
        fail_msg("%s", err.msg);
    for (size_t i = 0; i < m.n; i++)
        assert_int_not_equal(m.layers[i].kind, EST_K_POOL);
    /* a 1x1 convolution that reads the pooled result at another width is refused, saying
     * why and what to give, not blamed on --image-size */
    const char *cnx_bad = "Net(\n"
                          "  (stem): Conv2d(3, 16, kernel_size=(4, 4), stride=(4, 4))\n"
                          "  (fc): Linear(in_features=16, out_features=64, bias=True)\n"
                          "  (conv): Conv2d(64, 16, kernel_size=(1, 1), stride=(1, 1))\n"
                          ")\n";
    assert_true(parse_image_str(cnx_bad, 32, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:3: a Linear (in_features=16) on the 16-channel 8x8 "
                                    "tensor before it, read as after a global pool done in "
                                    "Python"));
    assert_non_null(strstr(err.msg, "the Conv2d at line 4 reads its 1x1 result"));
    assert_non_null(strstr(err.msg, "give a torchinfo table"));
    /* and so is one inside an attention block (PVT's spatial reduction of its tokens) whose
     * keys stay finer than an eighth of the image */
    const char *pvt = "Net(\n"
                      "  (stem): Conv2d(3, 16, kernel_size=(2, 2), stride=(2, 2))\n"
                      "  (attn): Attention(\n"
                      "    (q): Linear(in_features=16, out_features=16, bias=True)\n"
                      "    (sr): Conv2d(16, 16, kernel_size=(2, 2), stride=(2, 2))\n"
                      "  )\n"
                      ")\n";
    assert_true(parse_image_str(pvt, 32, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:4: a Linear (in_features=16)"));
    /* (MobileViT's transformer over its unfolded pixels was refused here as a sequence
     * model with convolutions; it is read since: test_modtree_unfolded_attention) */
    /* a norm printed without its size normalises the newest tensor: a scale and a shift,
     * none for a frozen one */
    const char *unsized = "Net(\n"
                          "  (stem): Conv2d(3, 16, kernel_size=(4, 4), stride=(4, 4))\n"
                          "  (n1): LayerNorm2d()\n"
                          "  (n2): FrozenBatchNorm2d()\n"
                          ")\n";
    if (parse_image_str(unsized, 32, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.layers[1].out, 16 * 64);
    assert_int_equal(m.layers[1].params, 32);
    assert_int_equal(m.layers[2].out, 16 * 64);
    assert_int_equal(m.layers[2].params, 0);
    /* a squeeze-excitation written with Linear layers and a sigmoid gate works on the
     * pooled vector, and the convolution after it reads the input it scaled */
    const char *se = "Net(\n"
                     "  (stem): Conv2d(3, 16, kernel_size=(4, 4), stride=(4, 4))\n"
                     "  (se): SE(\n"
                     "    (fc1): Linear(in_features=16, out_features=4, bias=True)\n"
                     "    (relu): ReLU(inplace=True)\n"
                     "    (fc2): Linear(in_features=4, out_features=16, bias=True)\n"
                     "    (gate): Sigmoid()\n"
                     "  )\n"
                     "  (conv): Conv2d(16, 32, kernel_size=(3, 3), stride=(1, 1), "
                     "padding=(1, 1))\n"
                     ")\n";
    if (parse_image_str(se, 32, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.layers[1].out, 4);
    assert_int_equal(m.layers[3].out, 16);
    assert_int_equal(m.layers[4].out, 16); /* the gate */
    assert_int_equal(m.layers[5].out, 32 * 64);
    /* a pooled Linear then a transposed convolution from 1x1 (a decoder from a latent
     * vector) is read as before */
    assert_int_equal(parse_image_str("Net(\n"
                                     "  (c): Conv2d(3, 32, kernel_size=(3, 3), stride=(2, 2))\n"
                                     "  (fc): Linear(in_features=32, out_features=64, bias=True)\n"
                                     "  (up): ConvTranspose2d(64, 8, kernel_size=(4, 4), "
                                     "stride=(1, 1))\n"
                                     ")\n",
                                     32, &m, &err),
                     0);
    /* Swin's windows and merges change the sequence: without --image-size, refused, not
     * misread (read over the grid with it: test_modtree_swin_grid) */
    assert_true(parse_str("Net(\n  (a): ShiftedWindowAttention(\n"
                          "    (qkv): Linear(in_features=96, out_features=288, bias=True)\n"
                          "  )\n)\n",
                          &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:2: ShiftedWindowAttention: windowed attention"));
    assert_true(parse_str("Net(\n  (m): PatchMerging(\n"
                          "    (reduction): Linear(in_features=384, out_features=192, bias=False)\n"
                          "  )\n)\n",
                          &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:2: PatchMerging: windowed attention (Swin)"));
}

/* How many of the notes est_notes writes for m (batch 2, AdamW) hold text. */
static size_t notes_with(const struct est_model *m, const char *text)
{
    struct est_opts no = {.batch = 2, .optimizer = EST_OPT_ADAMW};
    struct est_result nr = {0};
    char notes[EST_NOTES][EST_NOTE_MAX];
    size_t nn = est_notes(m, &no, &nr, notes), found = 0;
    for (size_t i = 0; i < nn; i++)
        found += strstr(notes[i], text) != NULL;
    return found;
}

/* Layers of kind k in m, in order: the i-th one's output elements (0 past the last). */
static uint64_t kind_nth(const struct est_model *m, enum est_kind k, unsigned i)
{
    for (size_t j = 0; j < m->n; j++)
        if (m->layers[j].kind == k && i-- == 0)
            return m->layers[j].out;
    return 0;
}

/* The attention rows of m in order, n[g] rows of out[g] elements in each group g, and no
 * more. */
struct attn_rows {
    uint64_t out;
    unsigned n;
};
static void assert_attention_rows(const struct est_model *m, const struct attn_rows *g, size_t ng)
{
    unsigned at = 0;
    for (size_t k = 0; k < ng; k++)
        for (unsigned i = 0; i < g[k].n; i++)
            assert_int_equal(kind_nth(m, EST_K_ATTN, at++), g[k].out);
    assert_int_equal(kind_nth(m, EST_K_ATTN, at), 0);
}

/* A convolution leaf and a norm leaf as PyTorch prints them, at indent ind. */
#define CONV(ind, name, ci, co, k, s, p)                                                           \
    ind "(" name "): Conv2d(" #ci ", " #co ", kernel_size=(" #k ", " #k "), stride=(" #s ", " #s \
        "), padding=(" #p ", " #p "), bias=False)\n"
#define BN(ind, name, c) ind "(" name "): BatchNorm2d(" #c ", eps=1e-05, momentum=0.1)\n"

/* YOLOv8's C2f: cv1 makes 2c channels, the bottlenecks read their half (x.chunk(2, 1),
 * not printed) at the block's size, cv2 their concatenation; the stem's output, older and
 * larger, has c channels too and is not what they read. A block that did not make the
 * newest tensor may be handed an older one (a lateral convolution over an earlier
 * feature map): read at that one's size. */
static void test_modtree_chunk_half(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *c2f = "DetectionModel(\n"
                      "  (model): Sequential(\n"
                      CONV("    ", "0", 3, 16, 3, 2, 1)
                      CONV("    ", "1", 16, 32, 3, 2, 1)
                      "    (2): C2f(\n"
                      CONV("      ", "cv1", 32, 32, 1, 1, 0)
                      CONV("      ", "cv2", 48, 32, 1, 1, 0)
                      "      (m): ModuleList(\n"
                      "        (0): Bottleneck(\n"
                      CONV("          ", "cv1", 16, 16, 3, 1, 1)
                      CONV("          ", "cv2", 16, 16, 3, 1, 1)
                      "        )\n"
                      "      )\n"
                      "    )\n"
                      "  )\n"
                      ")\n";
    if (parse_image_str(c2f, 64, &m, &err))
        fail_msg("%s", err.msg);
    /* stem 16 x 32 x 32, then 32 x 16 x 16: the bottleneck's two convolutions at 16 x 16 */
    assert_int_equal(kind_nth(&m, EST_K_CONV, 0), 16 * 32 * 32);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 4), 16 * 16 * 16);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 5), 16 * 16 * 16);
    const char *lateral = "Net(\n"
                          CONV("  ", "stem", 3, 16, 3, 2, 1)
                          CONV("  ", "layer1", 16, 32, 3, 2, 1)
                          "  (lateral): Sequential(\n"
                          CONV("    ", "0", 16, 8, 1, 1, 0)
                          "  )\n"
                          ")\n";
    if (parse_image_str(lateral, 64, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 2), 8 * 32 * 32);
    /* CSPNet's stage (timm's CrossStage): conv_down and conv_exp run on from the stage's
     * input x (16 x 32 x 32) to 32 x 16 x 16, its blocks read half of that (x.split) and
     * conv_transition_b their output, at 16 x 16: not x, which has their width too */
#define CSP_STAGE                                                                                  \
    "Net(\n" CONV("  ", "stem", 3, 16, 3, 2, 1) "  (stage): CrossStage(\n"                        \
    "    (conv_down): ConvNormAct(\n" CONV("      ", "conv", 16, 32, 3, 2, 1) "    )\n"           \
    "    (conv_exp): ConvNormAct(\n" CONV("      ", "conv", 32, 32, 1, 1, 0) "    )\n"    \
    "    (blocks): Sequential(\n"                                                                \
    "      (0): DarkBlock(\n"                                                                    \
    "        (conv1): ConvNormAct(\n" CONV("          ", "conv", 16, 16, 1, 1, 0) "        )\n"  \
    "        (conv2): ConvNormAct(\n" CONV("          ", "conv", 16, 16, 3, 1, 1) "        )\n"  \
    "      )\n"                                                                                  \
    "    )\n"                                                                                    \
    "    (conv_transition_b): ConvNormAct(\n" CONV("      ", "conv", 16, 16, 1, 1, 0) "    )\n"  \
    "    (conv_transition): ConvNormAct(\n" CONV("      ", "conv", 32, 32, 1, 1, 0) "    )\n"    \
    "  )\n"                                                                                      \
    ")\n"
    if (parse_image_str(CSP_STAGE, 64, &m, &err))
        fail_msg("%s", err.msg);
    for (unsigned i = 3; i <= 5; i++)
        assert_int_equal(kind_nth(&m, EST_K_CONV, i), 16 * 16 * 16);
    assert_int_equal(m.join_line, 0);
#undef CSP_STAGE
}

/* timm's DPN-68 (the H100 run's print): a stage's first DualPathBlock projects its input
 * with a strided 1x1 convolution (c1x1_w_s2) before c1x1_a reads that input again, and
 * every block's pre-activation norm reads the residual and dense paths joined in Python,
 * at the block's size. Read before as c1x1_a on the projection's output (the stage at
 * half size) and as joins upsampled to a 56x56 tensor of the same width (the rest at
 * 56x56): 9.9 times the measured peak. */
static void test_modtree_dual_path(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    if (parse_into("data/estimator/gpu-peaks-h100/dpn68_b32.txt", 224, layers, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 24), 320 * 14 * 14);  /* conv4_1 c1x1_w_s2 */
    assert_int_equal(kind_nth(&m, EST_K_CONV, 25), 512 * 28 * 28);  /* c1x1_a on its input */
    assert_int_equal(kind_nth(&m, EST_K_CONV, 26), 512 * 14 * 14);  /* c3x3_b, stride 2 */
    assert_int_equal(kind_nth(&m, EST_K_CONV, 27), 288 * 14 * 14);  /* c1x1_c */
    assert_int_equal(kind_nth(&m, EST_K_CONV, 62), 1024 * 14 * 14); /* conv5_1 c1x1_a */
    assert_int_equal(kind_nth(&m, EST_K_CONV, 70), 576 * 7 * 7);    /* conv5_3 c1x1_c */
    unsigned pools = 0;
    for (size_t i = 0; i < m.n; i++)
        pools += m.layers[i].kind == EST_K_POOL;
    assert_int_equal(pools, 2); /* conv1_pool and the global pool: nothing upsampled */
    /* the rule is for a convolution's output: DLA's level2 project reads its tree's
     * pooled bottom (64 x 56 x 56), not the tree's input */
    if (parse_into("data/estimator/gpu-peaks-h100/dla34_b64.txt", 224, layers, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.layers[9].kind, EST_K_POOL);
    assert_int_equal(m.layers[10].kind, EST_K_CONV);
    assert_int_equal(m.layers[10].out, 64 * 56 * 56);
    /* and a DlaTree hands its input, not its pooled bottom, to its tree1, whose own
     * downsample pools it once: levels 3, 4 and 5 at 28, 14 and 7 (were pooled twice a
     * level, level 5 at 1x1) */
    assert_int_equal(m.layers[29].kind, EST_K_POOL);
    assert_int_equal(m.layers[29].out, 64 * 28 * 28);
    assert_int_equal(m.layers[66].kind, EST_K_POOL);
    assert_int_equal(m.layers[66].out, 128 * 14 * 14);
    assert_int_equal(m.layers[102].kind, EST_K_CONV);
    assert_int_equal(m.layers[102].out, 512 * 7 * 7);
}

/* timm's Inception-v4 (measured on an H200, never used to write a rule) reduces its input
 * in parallel branches listed as named children: Mixed3a a maxpool then a strided conv,
 * Mixed5a a strided conv then a maxpool, the reduction blocks a maxpool after two strided
 * branches. Read in print order each reduction shrank the tensor two or three times, and
 * at 299x299 the last maxpool had a 1x1 input: refused. Each branch now reads the block's
 * input, and the blocks' outputs join at 73, 35, 17 and 8. */
static void test_modtree_parallel_reductions(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    if (parse_into("data/estimator/gpu-peaks-h200/inception_v4_timm_b32.txt", 299, layers, &m,
                   &err))
        fail_msg("%s", err.msg);
    assert_int_equal(kind_nth(&m, EST_K_POOL, 0), 64 * 73 * 73);  /* Mixed3a maxpool */
    assert_int_equal(kind_nth(&m, EST_K_CONV, 3), 96 * 73 * 73);  /* Mixed3a conv, on x */
    assert_int_equal(kind_nth(&m, EST_K_CONV, 10), 192 * 35 * 35); /* Mixed5a conv */
    assert_int_equal(kind_nth(&m, EST_K_POOL, 1), 192 * 35 * 35); /* Mixed5a maxpool, on x */
    assert_int_equal(kind_nth(&m, EST_K_POOL, 6), 384 * 17 * 17);  /* ReductionA's, on x */
    assert_int_equal(kind_nth(&m, EST_K_POOL, 14), 1024 * 8 * 8);  /* ReductionB's, on x */
    assert_int_equal(kind_nth(&m, EST_K_POOL, 15), 1536 * 8 * 8);  /* InceptionC's branch3 */
    assert_int_equal(m.join_line, 0); /* the pooled branches are joined with the others */
    /* a stride-1 convolution after a pooled input reads the pooled tensor */
    assert_int_equal(parse_image_str("Net(\n"
                                     "  (stem): Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), "
                                     "padding=(1, 1))\n"
                                     "  (block): Block(\n"
                                     "    (pool): MaxPool2d(kernel_size=2, stride=2)\n"
                                     "    (conv): Conv2d(8, 8, kernel_size=(3, 3), stride=(1, 1), "
                                     "padding=(1, 1))\n"
                                     "  )\n"
                                     ")\n",
                                     32, &m, &err),
                     0);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 1), 8 * 16 * 16);
    /* nor does a pooling after a strided branch that changed the channels read x: a stem */
    assert_int_equal(parse_image_str("Net(\n"
                                     "  (conv0): Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), "
                                     "padding=(1, 1))\n"
                                     "  (stem): Stem(\n"
                                     "    (conv): Conv2d(8, 16, kernel_size=(3, 3), stride=(2, 2), "
                                     "padding=(1, 1))\n"
                                     "    (pool): MaxPool2d(kernel_size=2, stride=2)\n"
                                     "  )\n"
                                     "  (head): Conv2d(16, 8, kernel_size=(1, 1), stride=(1, 1))\n"
                                     ")\n",
                                     32, &m, &err),
                     0);
    assert_int_equal(kind_nth(&m, EST_K_POOL, 0), 16 * 8 * 8);
    /* but one after a strided branch that kept x's channels does (Mixed5a) */
    assert_int_equal(parse_image_str("Net(\n"
                                     "  (stem): Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), "
                                     "padding=(1, 1))\n"
                                     "  (block): Block(\n"
                                     "    (conv): Conv2d(8, 8, kernel_size=(3, 3), stride=(2, 2), "
                                     "padding=(1, 1))\n"
                                     "    (pool): MaxPool2d(kernel_size=3, stride=2, padding=1)\n"
                                     "  )\n"
                                     "  (head): Conv2d(16, 8, kernel_size=(1, 1), stride=(1, 1))\n"
                                     ")\n",
                                     32, &m, &err),
                     0);
    assert_int_equal(kind_nth(&m, EST_K_POOL, 0), 8 * 16 * 16);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 2), 8 * 16 * 16); /* reads the 16x16 join */
    /* A block whose output the next layer reads at its last branch's width runs its
     * children in sequence: a strided conv then a pool, or a pool then a strided conv,
     * each on the one before (the rules had read every later layer 4x too large). */
    static const char *const seq[] = {"tests/fuzz/corpus/summary_modtree/down_conv_then_pool.txt",
                                      "tests/fuzz/corpus/summary_modtree/down_pool_then_conv.txt"};
    for (size_t i = 0; i < 2; i++) {
        if (parse_into(seq[i], 224, layers, &m, &err))
            fail_msg("%s", err.msg);
        assert_int_equal(kind_nth(&m, EST_K_POOL, 0), 64 * (i ? 56 * 56 : 28 * 28));
        assert_int_equal(kind_nth(&m, EST_K_CONV, 1), 64 * (i ? 28 * 28 : 56 * 56));
        assert_int_equal(kind_nth(&m, EST_K_CONV, 2), 128 * 28 * 28);
        assert_int_equal(m.concat, 0);
    }
}

/* The row of windowed attention's probabilities in m after row `from` (index), or NULL. */
static const struct est_layer *attn_after(const struct est_model *m, size_t from)
{
    for (size_t i = from; i < m->n; i++)
        if (m->layers[i].kind == EST_K_ATTN)
            return &m->layers[i];
    return NULL;
}

/* Swin, as torchvision, transformers and timm print it (measured on an H100 and an H200):
 * its linear layers run per position of the grid of patches, its attention within 7 x 7
 * windows with heads of 32 channels (the probabilities a row per sample, computed with
 * the relative position bias, whose table the print hides), and each patch merging joins
 * 2 x 2 neighbours into 4C at half the size, then runs its norm before its reduction. */
static void test_modtree_swin_grid(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    static const char *const files[] = {"data/estimator/gpu-peaks-h100/swin_t_b32.txt",
                                        "data/estimator/gpu-peaks-h200/hf_swin_tiny_b32.txt",
                                        "data/estimator/gpu-peaks-h200/swin_tiny_timm_b32.txt"};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        if (parse_into(files[f], 224, layers, &m, &err))
            fail_msg("%s: %s", files[f], err.msg);
        assert_int_equal(m.params, 28288354); /* as measured, the bias tables included */
        assert_int_not_equal(m.window_line, 0);
        assert_int_equal(m.heads_assumed, 3); /* the first block's, 96 / 32 */
        const struct est_layer *a = attn_after(&m, 0);
        assert_non_null(a);
        assert_int_equal(a->out, 64 * 3 * 49 * 49); /* 8 x 8 windows of 56 x 56, 3 heads */
        assert_int_equal(a->per_token, 0);
        assert_int_equal(a->attn, 0);
        assert_true(a->flags & EST_LF_SCORES);
        assert_int_equal(a->params, 13 * 13 * 3);
        const struct est_layer *last = NULL;
        size_t cat = SIZE_MAX, nsoft = 0;
        for (size_t i = 0; i < m.n; i++) {
            if (m.layers[i].kind == EST_K_ATTN)
                last = &m.layers[i];
            if (cat == SIZE_MAX && m.layers[i].kind == EST_K_POOL &&
                m.layers[i].out == 4 * 96 * 28 * 28)
                cat = i;
            nsoft += m.layers[i].kind == EST_K_SOFTMAX;
        }
        assert_int_equal(last->out, 1 * 24 * 49 * 49); /* stage 4: one window, 24 heads */
        assert_int_equal(nsoft, 0); /* timm's Softmax module: in the attention's row */
        assert_true(cat != SIZE_MAX && cat + 2 < m.n);
        if (f != 2) { /* its own merging lists norm, reduction: downsample of stage 1 */
            assert_int_equal(m.layers[cat + 1].kind, EST_K_NORM); /* norm first */
            assert_int_equal(m.layers[cat + 1].out, 384 * 28 * 28);
            assert_int_equal(m.layers[cat + 2].kind, EST_K_LINEAR);
            assert_int_equal(m.layers[cat + 2].out, 192 * 28 * 28);
        }
        /* the stage-2 attention, on 4 x 4 windows of the 28 x 28 grid, 6 heads */
        a = attn_after(&m, cat);
        assert_non_null(a);
        assert_int_equal(a->out, 16 * 6 * 49 * 49);
        /* the MLP's activation on fc1's output, whatever the order it is printed in
         * (transformers' SwinMLP lists it first) */
        size_t fc1 = 0;
        while (fc1 < m.n && !(m.layers[fc1].kind == EST_K_LINEAR &&
                              m.layers[fc1].out == 4 * 96 * 56 * 56))
            fc1++;
        assert_true(fc1 + 1 < m.n);
        assert_int_equal(m.layers[fc1 + 1].kind, EST_K_ACT);
        assert_int_equal(m.layers[fc1 + 1].out, 4 * 96 * 56 * 56);
        /* separate q, k, v: the probabilities right after v, before the output projection */
        size_t at = (size_t)(attn_after(&m, 0) - m.layers);
        if (f == 1) {
            assert_int_equal(m.layers[at - 1].kind, EST_K_LINEAR);
            assert_int_equal(m.layers[at - 3].kind, EST_K_LINEAR);
            assert_int_equal(m.layers[at + 1].kind, EST_K_LINEAR);
        }
    }
    /* older transformers nest SwinSelfAttention in SwinAttention, both attention classes:
     * one row of probabilities and one bias table per block, as the newer print */
    if (parse_into("tests/fuzz/corpus/summary_modtree/swin_hf_nested_attention.txt", 224,
                   layers, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.params, 28288354);
    size_t nattn = 0;
    for (size_t i = 0; i < m.n; i++)
        nattn += m.layers[i].kind == EST_K_ATTN;
    assert_int_equal(nattn, 12);
    /* mmdetection's Swin: its WindowMSA is no attention class by name, but its qkv child
     * makes it one (a query, key and value among its linear layers) */
    if (parse_into("tests/fuzz/corpus/summary_modtree/swin_mmdet_windowmsa.txt", 224, layers,
                   &m, &err))
        fail_msg("%s", err.msg);
    nattn = 0;
    for (size_t i = 0; i < m.n; i++)
        nattn += m.layers[i].kind == EST_K_ATTN;
    assert_int_equal(nattn, 12);
    assert_int_not_equal(m.window_line, 0);
    /* refused rather than misread: a merging with no attention read so; a merging built
     * of convolutions (timm's EfficientViT); a decoder after the stages (UperNet,
     * Swin-UNETR); a grid expanded again (Swin-Unet) */
    const char *no_attn = "Net(\n"
                          "  (embed): Conv2d(3, 32, kernel_size=(4, 4), stride=(4, 4))\n"
                          "  (mix): Mixer(\n"
                          "    (fc): Linear(in_features=32, out_features=32, bias=True)\n"
                          "  )\n"
                          "  (merge): PatchMerging(\n"
                          "    (reduction): Linear(in_features=128, out_features=64, bias=False)\n"
                          "    (norm): LayerNorm((128,), eps=1e-05, elementwise_affine=True)\n"
                          "  )\n"
                          ")\n";
    assert_int_equal(parse_image_str(no_attn, 64, &m, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "t.txt:6: a patch merging (this line) without attention"));
#define GRID_TOY(merge, after)                                                                     \
    "Net(\n"                                                                                       \
    "  (embed): Conv2d(3, 32, kernel_size=(4, 4), stride=(4, 4))\n"                                \
    "  (attn): WindowAttention(\n"                                                                 \
    "    (qkv): Linear(in_features=32, out_features=96, bias=True)\n"                              \
    "    (proj): Linear(in_features=32, out_features=32, bias=True)\n"                             \
    "  )\n"                                                                                        \
    "  (merge): PatchMerging(\n" merge "  )\n" after ")\n"
#define GRID_LIN_MERGE                                                                             \
    "    (reduction): Linear(in_features=128, out_features=64, bias=False)\n"                      \
    "    (norm): LayerNorm((128,), eps=1e-05, elementwise_affine=True)\n"
    assert_int_equal(parse_image_str(GRID_TOY(GRID_LIN_MERGE, ""), 64, &m, &err), 0);
    assert_int_equal(m.layers[m.n - 1].kind, EST_K_LINEAR); /* norm, then reduction */
    assert_int_equal(m.layers[m.n - 1].out, 64 * 8 * 8);
    const char *conv_merge = "Net(\n"
                             "  (embed): Conv2d(3, 32, kernel_size=(4, 4), stride=(4, 4))\n"
                             "  (merge): PatchMerging(\n"
                             "    (conv): Conv2d(32, 64, kernel_size=(3, 3), stride=(2, 2), "
                             "padding=(1, 1))\n"
                             "  )\n"
                             ")\n";
    assert_int_equal(parse_image_str(conv_merge, 64, &m, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "t.txt:3: PatchMerging: a patch merging without a linear "
                                    "reduction"));
    const char *conv_lin_merge = "Net(\n"
                                 "  (embed): Conv2d(3, 32, kernel_size=(4, 4), stride=(4, 4))\n"
                                 "  (merge): PatchMerging(\n"
                                 "    (conv): Conv2d(128, 128, kernel_size=(1, 1), "
                                 "stride=(1, 1))\n"
                                 "    (reduction): Linear(in_features=128, out_features=64, "
                                 "bias=False)\n"
                                 "  )\n"
                                 ")\n";
    assert_int_equal(parse_image_str(conv_lin_merge, 64, &m, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "t.txt:3: PatchMerging: a patch merging without"));
    assert_int_equal(parse_image_str(GRID_TOY(GRID_LIN_MERGE,
                                              "  (fpn): Conv2d(64, 64, kernel_size=(1, 1), "
                                              "stride=(1, 1))\n"),
                                     64, &m, &err),
                     -EINVAL);
    assert_non_null(strstr(err.msg, "t.txt:11: Conv2d after windowed attention"));
    assert_int_equal(parse_image_str(GRID_TOY(GRID_LIN_MERGE,
                                              "  (up): PatchExpand(\n"
                                              "    (expand): Linear(in_features=64, "
                                              "out_features=128, bias=False)\n"
                                              "  )\n"),
                                     64, &m, &err),
                     -EINVAL);
    assert_non_null(strstr(err.msg, "t.txt:11: PatchExpand: a decoder"));
#undef GRID_TOY
#undef GRID_LIN_MERGE
    /* Swin-B at 128 x 128: stage 2 has 256 channels on a 16 x 16 grid, and the output
     * projection, reading 256 features, is no token mixing over the 256 positions: both
     * stage-2 blocks' probabilities in 3 x 3 windows of the 16 x 16 grid, 8 heads */
    if (parse_into("data/estimator/gpu-peaks-h200/swin_b_b32.txt", 128, layers, &m, &err))
        fail_msg("%s", err.msg);
    size_t stage2 = 0;
    for (size_t i = 0; i < m.n; i++)
        stage2 += m.layers[i].kind == EST_K_ATTN && m.layers[i].out == 9 * 8 * 49 * 49;
    assert_int_equal(stage2, 2);
    /* a grid that is no whole number of windows is padded to one: 97 -> 24 x 24 patches,
     * 4 x 4 windows */
    if (parse_into(files[0], 97, layers, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(attn_after(&m, 0)->out, 16 * 3 * 49 * 49);
    /* refused: without --image-size; with --heads (they change from stage to stage) */
    assert_int_equal(parse_into(files[0], 0, layers, &m, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "swin_t_b32.txt:11: ShiftedWindowAttention: windowed "
                                    "attention (Swin)"));
    assert_non_null(strstr(err.msg, "only with --image-size: give it"));
    est_model_init(&m, layers, EST_MAX_LAYERS);
    m.image_h = m.image_w = 224;
    m.heads = 3;
    char *buf;
    size_t len;
    assert_int_equal(carma_file_read(files[0], EST_MAX_INPUT, &buf, &len, &err), 0);
    assert_int_equal(est_parse(buf, len, files[0], &m, &err), -EINVAL);
    free(buf);
    assert_non_null(strstr(err.msg, "--heads 3: windowed attention (Swin) changes its heads"));
    /* Swin V2 (torchvision's PatchMergingV2, transformers' Swinv2PatchMerging): a network
     * computes each block's position bias from a window's coordinates (parameters, no
     * tensor of the grid), and its cosine attention has a logit scale a head instead of
     * a bias table: the parameters as measured (torchvision) or as the toy's layers make
     * them (transformers: 77,933), the merging's reduction before its norm over 2C */
    static const char *const v2[] = {"data/estimator/gpu-peaks-h200/swin_v2_t_b32.txt",
                                     "tests/fuzz/corpus/summary_modtree/swinv2_hf_toy.txt"};
    static const uint64_t v2_params[] = {28351570, 77933};
    static const uint32_t v2_image[] = {256, 64};
    /* stage 1: 64 x 64 patches in 10 x 10 windows, 3 heads; 16 x 16 in 3 x 3, 1 head */
    static const uint64_t v2_probs[] = {100 * 3 * 49 * 49, 9 * 1 * 49 * 49};
    for (size_t f = 0; f < 2; f++) {
        if (parse_into(v2[f], v2_image[f], layers, &m, &err))
            fail_msg("%s: %s", v2[f], err.msg);
        assert_int_equal(m.params, v2_params[f]);
        const struct est_layer *a = attn_after(&m, 0);
        assert_non_null(a);
        assert_int_equal(a->out, v2_probs[f]);
        assert_int_equal(a->flags & (EST_LF_SCORES | EST_LF_COSINE),
                         EST_LF_SCORES | EST_LF_COSINE);
        assert_int_equal(a->params, f ? 1 : 3); /* the logit scale */
        size_t cat = SIZE_MAX;
        nattn = 0;
        for (size_t i = 0; i < m.n; i++) {
            nattn += m.layers[i].kind == EST_K_ATTN;
            if (cat == SIZE_MAX && m.layers[i].kind == EST_K_POOL && i > 0 &&
                m.layers[i - 1].kind != EST_K_ATTN && m.layers[i].out > 1000)
                cat = i;
        }
        assert_int_equal(nattn, f ? 2 : 12);
        assert_true(cat + 2 < m.n);
        assert_int_equal(m.layers[cat + 1].kind, EST_K_LINEAR); /* reduction, then norm */
        assert_int_equal(m.layers[cat + 2].kind, EST_K_NORM);
        assert_int_equal(m.layers[cat + 2].out, m.layers[cat + 1].out);
    }
    /* the cosine attention keeps q k^T for its logit scale's gradient: one more tensor
     * of its probabilities' size a block, all alive as the backward starts (batch 8:
     * 4,177,740 probabilities a sample over the 12 blocks, 127.5 MiB) */
    if (parse_into(v2[0], 256, layers, &m, &err))
        fail_msg("%s", err.msg);
    struct est_opts o = {.batch = 8, .optimizer = EST_OPT_ADAMW};
    struct est_replay_result cos, dot;
    assert_int_equal(est_replay(&m, &o, &rwork, &cos), 0);
    for (size_t i = 0; i < m.n; i++)
        m.layers[i].flags &= ~(uint32_t)EST_LF_COSINE;
    assert_int_equal(est_replay(&m, &o, &rwork, &dot), 0);
    double kept = cos.peak_allocated_mib - dot.peak_allocated_mib;
    double scores = 4177740.0 * 4 * 8 / 1048576;
    /* each block may hold up to 1 MiB more: a cached block too little larger to split */
    assert_true(kept >= scores - 0.01 && kept <= scores + 12);
    const char *cpb = "Net(\n"
                      "  (embed): Conv2d(3, 32, kernel_size=(4, 4), stride=(4, 4))\n"
                      "  (attn): WindowAttention(\n"
                      "    (qkv): Linear(in_features=32, out_features=96, bias=True)\n"
                      "    (cpb): Linear(in_features=2, out_features=64, bias=True)\n"
                      "    (proj): Linear(in_features=32, out_features=32, bias=True)\n"
                      "  )\n"
                      "  (merge): PatchMerging(\n"
                      "    (reduction): Linear(in_features=128, out_features=64, bias=False)\n"
                      "    (norm): LayerNorm((128,), eps=1e-05, elementwise_affine=True)\n"
                      "  )\n"
                      ")\n";
    assert_int_equal(parse_image_str(cpb, 64, &m, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "t.txt:5: Linear (in_features=2) in windowed attention"));
}

/* Attention over the positions of a convolutional network's tensor at a sixteenth of the
 * image's side or coarser (timm's CAFormer and EfficientFormer, measured on the H200):
 * its linear layers and its block's MLP run per position, the output projection on its
 * queries' positions where the print does not show its input (EfficientFormer's 1024
 * values), and a row of heads x (H W)^2 probabilities a sample, heads of 32 channels.
 * Vision transformers (patch embeddings only) keep their sequence reading; local
 * attention on finer tensors (MaxViT's windows, MobileViT's unfolded patches) and
 * attention that reduces its keys with a convolution (PVT) stay refused. */
static void test_modtree_attention_over_positions(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    if (parse_into("data/estimator/gpu-peaks-h200/caformer_s18_timm_b32.txt", 224, layers, &m,
                   &err))
        fail_msg("%s", err.msg);
    size_t nattn = 0, first = SIZE_MAX;
    for (size_t i = 0; i < m.n; i++)
        if (m.layers[i].kind == EST_K_ATTN) {
            nattn++;
            if (first == SIZE_MAX)
                first = i;
            assert_int_equal(m.layers[i].attn, 0);
            assert_int_equal(m.layers[i].per_token, 0);
        }
    assert_int_equal(nattn, 12);                           /* stages 3 and 4: 9 + 3 blocks */
    assert_int_equal(m.layers[first].out, 10 * 196 * 196); /* 320 wide, 14 x 14 */
    assert_int_equal(m.layers[m.n - 2].out, 1000);         /* the head after the pool */
    size_t mlp = first;
    while (mlp < m.n && !(m.layers[mlp].kind == EST_K_LINEAR && m.layers[mlp].out == 1280 * 196))
        mlp++;
    assert_true(mlp < m.n); /* fc1 of the first attention block's MLP, per position */
    size_t last = m.n;
    while (last-- > 0 && m.layers[last].kind != EST_K_ATTN)
        ;
    assert_int_equal(m.layers[last].out, 16 * 49 * 49); /* stage 4: 512 wide, 7 x 7 */
    assert_int_equal(m.needs_seq, 0);

    if (parse_into("data/estimator/gpu-peaks-h200/efficientformer_l1_b64.txt", 224, layers, &m,
                   &err))
        fail_msg("%s", err.msg);
    size_t at = 0;
    while (at < m.n && m.layers[at].kind != EST_K_ATTN)
        at++;
    assert_true(at >= 2 && at + 4 < m.n);
    assert_int_equal(m.layers[at].out, 14 * 49 * 49);      /* 448 / 32 heads (timm's 8) */
    assert_int_equal(m.layers[at - 2].out, 1536 * 49);     /* qkv, per position */
    assert_int_equal(m.layers[at - 1].out, 448 * 49);      /* proj reads attn @ v */
    assert_int_equal(m.layers[at + 4].out, 1792 * 49);     /* the MLP's fc1 */
    assert_int_equal(m.layers[m.n - 1].out, 1000);

    /* a vision transformer: still a sequence of its patches and a class token */
    if (parse_into("data/estimator/gpu-peaks-h100/vit_b_16_b32.txt", 224, layers, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.tokens, 197);
    /* torchvision's MaxViT-T: its PartitionAttentionLayer blocks (window, then grid) attend
     * within 7 x 7 partitions of every stage's positions, heads of 32 channels: stage 1
     * (64 channels, 56 x 56) 2 x 3136 x 49 a block, stage 4 (512, 7 x 7) 16 x 49 x 49; the
     * MLP beside attn_layer per position (measured on the H200: 0.97 of its peak) */
    if (parse_into("data/estimator/gpu-peaks-h200/maxvit_t_b16.txt", 224, layers, &m, &err))
        fail_msg("%s", err.msg);
    {
        static const uint64_t per_stage[] = {2 * 3136 * 49, 4 * 784 * 49, 8 * 196 * 49,
                                             16 * 49 * 49};
        static const unsigned blocks[] = {4, 4, 10, 4};
        size_t i = 0, s = 0;
        unsigned seen = 0;
        for (; i < m.n; i++) {
            if (m.layers[i].kind != EST_K_ATTN)
                continue;
            if (seen == blocks[s]) {
                s++;
                seen = 0;
            }
            assert_true(s < 4);
            assert_int_equal(m.layers[i].out, per_stage[s]);
            seen++;
        }
        assert_int_equal(s, 3);
        assert_int_equal(seen, 4);
        assert_int_equal(m.positions_window, 7);
        assert_int_equal(kind_nth(&m, EST_K_ACT, 5), 256 * 3136); /* the first MLP's GELU */
    }
    /* refused as before: local attention on a finer grid (NesT's blocks) */
    static const char *const refused[] = {"data/estimator/gpu-peaks-h200/nest_tiny_timm_b32.txt"};
    for (size_t f = 0; f < sizeof refused / sizeof refused[0]; f++) {
        assert_int_equal(parse_into(refused[f], 224, layers, &m, &err), -EINVAL);
        assert_true(strstr(err.msg, "a sequence model (this line) with convolutions") ||
                    strstr(err.msg, "read as after a global pool"));
    }
    /* a stem at stride 16 puts the attention on 4 x 4 positions of a 64 x 64 image: read
     * (one head of 32 channels); at stride 2 it would be on 32 x 32, finer than global
     * attention runs: refused, not read as 1024 x 1024 probabilities */
#define POS_TOY(stride)                                                                            \
    "Net(\n"                                                                                       \
    "  (stem): Conv2d(3, 32, kernel_size=(3, 3), stride=(" stride ", " stride                      \
    "), padding=(1, 1))\n"                                                                         \
    "  (block): Block(\n"                                                                          \
    "    (norm): LayerNorm((32,), eps=1e-05, elementwise_affine=True)\n"                           \
    "    (attn): Attention(\n"                                                                     \
    "      (qkv): Linear(in_features=32, out_features=96, bias=True)\n"                            \
    "      (proj): Linear(in_features=32, out_features=32, bias=True)\n"                           \
    "    )\n"                                                                                      \
    "  )\n"                                                                                        \
    "  (head): Linear(in_features=32, out_features=10, bias=True)\n"                               \
    ")\n"
    assert_int_equal(parse_image_str(POS_TOY("16"), 64, &m, &err), 0);
    nattn = 0;
    for (size_t i = 0; i < m.n; i++)
        if (m.layers[i].kind == EST_K_ATTN) {
            nattn++;
            assert_int_equal(m.layers[i].out, 16 * 16);
        }
    assert_int_equal(nattn, 1);
    assert_int_not_equal(parse_image_str(POS_TOY("2"), 64, &m, &err), 0);
#undef POS_TOY
    /* separate q, k and v projections, sized per position: heads from the channels the
     * block reads (64 / 32), not from the projections' per-position widths; the
     * probabilities right after v, before the output projection. Keys a pooling reduced
     * first: heads x queries x keys. Not read so: an attention block opening on a norm or
     * holding a convolution; a head at the model's root, which pools first. A network of
     * the relative coordinates (timm's RelPosMlp) is parameters, no tensor. */
#define POS_QKV(mid)                                                                               \
    "Net(\n"                                                                                       \
    "  (stem): Conv2d(3, 64, kernel_size=(3, 3), stride=(16, 16), padding=(1, 1))\n"              \
    "  (block): Block(\n"                                                                          \
    "    (norm): LayerNorm((64,), eps=1e-05, elementwise_affine=True)\n"                           \
    "    (attn): Attention(\n" mid "      (proj): Linear(in_features=64, out_features=64, "        \
    "bias=True)\n"                                                                                 \
    "    )\n"                                                                                      \
    "  )\n"                                                                                        \
    "  (head): Linear(in_features=64, out_features=10, bias=True)\n"                               \
    ")\n"
    assert_int_equal(parse_image_str(POS_QKV("      (q): Linear(in_features=64, out_features=64, "
                                             "bias=True)\n"
                                             "      (k): Linear(in_features=64, out_features=64, "
                                             "bias=True)\n"
                                             "      (v): Linear(in_features=64, out_features=64, "
                                             "bias=True)\n"),
                                     224, &m, &err),
                     0);
    at = 0;
    while (at < m.n && m.layers[at].kind != EST_K_ATTN)
        at++;
    assert_true(at >= 3 && at + 2 < m.n);
    assert_int_equal(m.layers[at].out, 2 * 196 * 196);
    assert_int_equal(m.heads_assumed, 2);
    assert_int_equal(m.layers[at - 1].out, 64 * 196);       /* v */
    assert_int_equal(m.layers[at + 1].kind, EST_K_LINEAR);  /* proj */
    assert_int_equal(m.layers[at + 1].out, 64 * 196);
    assert_int_equal(m.layers[m.n - 1].out, 10);            /* the head, pooled first */
    assert_true(est_layer_materialised(&m.layers[at], EST_ATTN_EAGER));
    assert_false(est_layer_materialised(&m.layers[at], EST_ATTN_SDPA));
    assert_int_equal(notes_with(&m, "attention (line 5) over the 196 positions"), 1);
    assert_int_equal(parse_image_str(POS_QKV("      (q): Linear(in_features=64, out_features=64, "
                                             "bias=True)\n"
                                             "      (pool): AvgPool2d(kernel_size=2, stride=2, "
                                             "padding=0)\n"
                                             "      (kv): Linear(in_features=64, "
                                             "out_features=128, bias=True)\n"),
                                     224, &m, &err),
                     0);
    nattn = 0;
    for (size_t i = 0; i < m.n; i++)
        if (m.layers[i].kind == EST_K_ATTN) {
            nattn++;
            assert_int_equal(m.layers[i].out, 2 * 196 * 49);
        }
    assert_int_equal(nattn, 1);
    assert_int_equal(parse_image_str(POS_QKV("      (qkv): Linear(in_features=64, "
                                             "out_features=192, bias=True)\n"
                                             "      (rel_pos): RelPosMlp(\n"
                                             "        (fc1): Linear(in_features=2, "
                                             "out_features=512, bias=True)\n"
                                             "        (act): ReLU()\n"
                                             "        (fc2): Linear(in_features=512, "
                                             "out_features=2, bias=False)\n"
                                             "      )\n"),
                                     224, &m, &err),
                     0);
    assert_int_equal(m.heads_assumed, 2);
    for (size_t i = 0; i < m.n; i++) /* fc1 and fc2: parameters only */
        if (m.layers[i].params == 1536 || m.layers[i].params == 1024) {
            assert_int_equal(m.layers[i].kind, EST_K_OTHER);
            assert_int_equal(m.layers[i].out, 0);
        }
    assert_int_not_equal(parse_image_str(POS_QKV("      (norm0): LayerNorm((64,), eps=1e-05, "
                                                 "elementwise_affine=True)\n"
                                                 "      (qkv): Linear(in_features=64, "
                                                 "out_features=192, bias=True)\n"),
                                         224, &m, &err),
                         0);
    assert_int_not_equal(parse_image_str(POS_QKV("      (qkv): Linear(in_features=64, "
                                                 "out_features=192, bias=True)\n"
                                                 "      (sr): Conv2d(64, 64, kernel_size=(2, 2), "
                                                 "stride=(2, 2))\n"),
                                         224, &m, &err),
                         0);
#undef POS_QKV
    const char *root = "Net(\n"
                       "  (stem): Conv2d(3, 64, kernel_size=(3, 3), stride=(16, 16), "
                       "padding=(1, 1))\n"
                       "  (attn): Attention(\n"
                       "    (qkv): Linear(in_features=64, out_features=192, bias=True)\n"
                       "    (proj): Linear(in_features=64, out_features=64, bias=True)\n"
                       "  )\n"
                       "  (norm): LayerNorm((64,), eps=1e-05, elementwise_affine=True)\n"
                       "  (head): Linear(in_features=64, out_features=10, bias=True)\n"
                       ")\n";
    assert_int_equal(parse_image_str(root, 224, &m, &err), 0);
    assert_int_equal(m.layers[m.n - 1].out, 10); /* not per position beside the root's */
    /* --heads: such attention changes its heads from stage to stage */
    est_model_init(&m, layers, EST_MAX_LAYERS);
    m.image_h = m.image_w = 224;
    m.heads = 8;
    char *buf;
    size_t len;
    const char *caf = "data/estimator/gpu-peaks-h200/caformer_s18_timm_b32.txt";
    assert_int_equal(carma_file_read(caf, EST_MAX_INPUT, &buf, &len, &err), 0);
    assert_int_equal(est_parse(buf, len, caf, &m, &err), -EINVAL);
    free(buf);
    assert_non_null(strstr(err.msg, "caformer_s18_timm_b32.txt:202: --heads 8: attention over "
                                    "the positions"));
}

/* timm's ConvNeXt and Hugging Face's ConvNext (two stages of one block, 8 and 16
 * channels, at 32x32) run their pointwise Linear layers per pixel after a permute in
 * Python, and scale each block's branch by a parameter no print shows: both read so, to
 * the same parameters. Hugging Face's block lists its layernorm before pwconv1 and one
 * activation, which is no ResNet-style activation after every norm; an older
 * transformers prints ConvNextLayerNorm() without its size, read over the newest tensor. */
static void test_modtree_convnext_prints(void **state)
{
    (void)state;
    static const char *const files[] = {
        "tests/fuzz/corpus/summary_modtree/convnext_timm_toy.txt",
        "tests/fuzz/corpus/summary_modtree/convnext_hf_toy.txt",
        "tests/fuzz/corpus/summary_modtree/convnext_hf_unsized_norm_toy.txt"};
    static struct est_layer first[EST_MAX_LAYERS];
    struct est_model m, hf;
    struct carma_err err;
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        if (parse_into(files[f], 32, f == 1 ? first : layers, f == 1 ? &hf : &m, &err))
            fail_msg("%s: %s", files[f], err.msg);
        struct est_model *p = f == 1 ? &hf : &m;
        assert_int_equal(p->params, 5106);
        /* fc1 / pwconv1 of each stage: 32 x 8 x 8, 64 x 4 x 4 */
        assert_int_equal(kind_nth(p, EST_K_LINEAR, 0), 32 * 64);
        assert_int_equal(kind_nth(p, EST_K_LINEAR, 2), 64 * 16);
        unsigned scales = 0, acts = 0;
        for (size_t i = 0; i < p->n; i++) {
            const struct est_layer *l = &p->layers[i];
            acts += l->kind == EST_K_ACT;
            if (l->kind == EST_K_POOL && l->params) {
                assert_int_equal(l->out, scales ? 16 * 16 : 8 * 64);
                assert_int_equal(l->params, scales ? 16 : 8);
                scales++;
            }
        }
        assert_int_equal(scales, 2);
        assert_int_equal(acts, 2); /* one GELU a block */
    }
    /* Hugging Face's head pools in Python (x.mean([-2, -1])) before its classifier: the
     * per-pixel reading holds in blocks of the class that showed it, not there */
    assert_int_equal(hf.layers[hf.n - 1].kind, EST_K_LINEAR);
    assert_int_equal(hf.layers[hf.n - 1].out, 10);
    assert_int_equal(m.n, hf.n); /* sized or not, the same reading */
    for (size_t i = 0; i < m.n; i++) {
        assert_int_equal(m.layers[i].kind, hf.layers[i].kind);
        assert_int_equal(m.layers[i].out, hf.layers[i].out);
        assert_int_equal(m.layers[i].params, hf.layers[i].params);
    }
    /* a row the block's listed activation adds after its norm (the ResNet rule) moves the
     * pooled rows down: each is scaled by the pixels once */
    if (parse_into("tests/fuzz/corpus/summary_modtree/convnext_dropout_before_linear.txt", 32,
                   layers, &m, &err))
        fail_msg("%s", err.msg);
    for (size_t i = 0; i < m.n; i++)
        assert_true(m.layers[i].out == 16 * 64 || m.layers[i].out == 64 * 64);
}

/* What transformers' CNNs do in forward that their prints leave out: MobileNetV1/V2's
 * convolution layers pad TensorFlow's way (tf_padding: built without padding, the input
 * padded in forward), EfficientNet pads before its strided 'valid' convolutions with a
 * printed ZeroPad2d (printed in every depthwise layer, called before the strided ones
 * only) and pools globally with AvgPool2d(1280, ceil_mode=True), whose print leaves
 * ceil_mode out. */
static void test_modtree_hf_cnn_padding(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *mnv2 = "Net(\n"
                       "  (first_conv): MobileNetV2ConvLayer(\n"
                       "    (convolution): Conv2d(3, 32, kernel_size=(3, 3), stride=(2, 2), "
                       "bias=False)\n"
                       "  )\n"
                       "  (conv_3x3): MobileNetV2ConvLayer(\n"
                       "    (convolution): Conv2d(32, 32, kernel_size=(3, 3), stride=(1, 1), "
                       "groups=32, bias=False)\n"
                       "  )\n"
                       "  (plain): Conv2d(32, 8, kernel_size=(3, 3), stride=(1, 1))\n"
                       ")\n";
    if (parse_image_str(mnv2, 224, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.layers[0].out, 32 * 112 * 112);
    assert_int_equal(m.layers[1].out, 32 * 112 * 112);
    assert_int_equal(m.layers[2].out, 8 * 110 * 110); /* outside them: no padding */
    const char *eff = "Net(\n"
                      "  (padding): ZeroPad2d((0, 1, 0, 1))\n"
                      "  (stem): Conv2d(3, 32, kernel_size=(3, 3), stride=(2, 2), "
                      "padding=valid, bias=False)\n"
                      "  (pad): ZeroPad2d((0, 1, 0, 1))\n"
                      "  (dw): Conv2d(32, 32, kernel_size=(3, 3), stride=(1, 1), "
                      "padding=same, groups=32, bias=False)\n"
                      "  (pooler): AvgPool2d(kernel_size=1280, stride=1280, padding=0)\n"
                      ")\n";
    if (parse_image_str(eff, 224, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.n, 5);
    assert_int_equal(m.layers[1].out, 32 * 112 * 112); /* 225 x 225 in */
    assert_int_equal(m.layers[3].out, 32 * 112 * 112); /* 'same': the pad is not called */
    assert_int_equal(m.layers[4].out, 32);             /* global */
    /* transformers' PoolFormer lists its patch embeddings, then its stages, and zips them
     * in forward: read in call order (test_modtree_zipped_lists), also with blank lines
     * in the lists; a pair zipping leaves alone (more than 64 entries) is refused, where
     * the stages had been read after every downsampling, silently small; two lists of
     * which the second upsamples (a diffusers U-Net's down and up blocks) are no such
     * pair */
    const char *zipped = "Net(\n"
                         "  (patch_embeddings): ModuleList(\n"
                         "    (0): Embed(\n"
                         "      (proj): Conv2d(3, 8, kernel_size=(4, 4), stride=(4, 4))\n"
                         "    )\n"
                         "    (1): Embed(\n"
                         "      (proj): Conv2d(8, 16, kernel_size=(2, 2), stride=(2, 2))\n"
                         "    )\n"
                         "  )\n"
                         "  (block): ModuleList(\n"
                         "    (0): Stage(\n"
                         "      (fc): Conv2d(8, 8, kernel_size=(1, 1), stride=(1, 1))\n"
                         "    )\n"
                         "    (1): Stage(\n"
                         "      (fc): Conv2d(16, 16, kernel_size=(1, 1), stride=(1, 1))\n"
                         "    )\n"
                         "  )\n"
                         ")\n";
    if (parse_image_str(zipped, 64, &m, &err))
        fail_msg("%s", err.msg);
    for (int blank = 0; blank < 2; blank++) {
        if (blank) { /* the same print with a blank line after every line */
            static char spaced[2048];
            size_t o = 0;
            for (const char *q = zipped; *q && o + 2 < sizeof spaced; q++) {
                spaced[o++] = *q;
                if (*q == '\n')
                    spaced[o++] = '\n';
            }
            spaced[o] = '\0';
            assert_true(o + 2 < sizeof spaced);
            if (parse_image_str(spaced, 64, &m, &err))
                fail_msg("%s", err.msg);
        }
        assert_int_equal(m.n, 4);
        assert_int_equal(m.layers[1].out, 8 * 16 * 16); /* block[0] after patch_embeddings[0] */
        assert_int_equal(m.layers[2].out, 16 * 8 * 8);
        assert_int_equal(m.layers[3].out, 16 * 8 * 8);
    }
    /* more stages than zip_lists takes (65): refused as before */
    {
        static char big[65536];
        size_t n = 0;
        n += (size_t)snprintf(big + n, sizeof big - n,
                              "Net(\n  (stem): Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), "
                              "padding=(1, 1))\n  (patch_embeddings): ModuleList(\n");
        for (int e = 0; e < 65; e++)
            n += (size_t)snprintf(big + n, sizeof big - n,
                                  "    (%d): Embed(\n      (proj): Conv2d(8, 8, kernel_size=(1, "
                                  "1), stride=(2, 2), padding=(1, 1))\n    )\n",
                                  e);
        n += (size_t)snprintf(big + n, sizeof big - n, "  )\n  (block): ModuleList(\n");
        for (int e = 0; e < 65; e++)
            n += (size_t)snprintf(big + n, sizeof big - n,
                                  "    (%d): Stage(\n      (fc): Conv2d(8, 8, kernel_size=(1, "
                                  "1), stride=(1, 1))\n    )\n",
                                  e);
        n += (size_t)snprintf(big + n, sizeof big - n, "  )\n)\n");
        assert_true(n < sizeof big);
        assert_true(parse_image_str(big, 64, &m, &err) < 0);
        assert_non_null(strstr(err.msg, "t.txt:3: a list of 65 modules with strided "
                                        "convolutions, then (line 200) a list of as many: "
                                        "forward runs them zipped"));
    }
    const char *unet = "Net(\n"
                       "  (down_blocks): ModuleList(\n"
                       "    (0): Down(\n"
                       "      (conv): Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2), "
                       "padding=(1, 1))\n"
                       "    )\n"
                       "    (1): Down(\n"
                       "      (conv): Conv2d(8, 8, kernel_size=(3, 3), stride=(2, 2), "
                       "padding=(1, 1))\n"
                       "    )\n"
                       "  )\n"
                       "  (up_blocks): ModuleList(\n"
                       "    (0): Up(\n"
                       "      (up): Upsample(scale_factor=2.0, mode='nearest')\n"
                       "      (conv): Conv2d(8, 8, kernel_size=(3, 3), stride=(1, 1), "
                       "padding=(1, 1))\n"
                       "    )\n"
                       "    (1): Up(\n"
                       "      (up): Upsample(scale_factor=2.0, mode='nearest')\n"
                       "      (conv): Conv2d(8, 8, kernel_size=(3, 3), stride=(1, 1), "
                       "padding=(1, 1))\n"
                       "    )\n"
                       "  )\n"
                       ")\n";
    if (parse_image_str(unet, 64, &m, &err))
        fail_msg("%s", err.msg);
    /* the same two lists as a U-Net writes them, its up blocks reading joins of other
     * widths through F.interpolate (no Upsample printed), are no such pair */
    const char *unet2 = "UNet(\n"
                        "  (inc): Conv2d(3, 16, kernel_size=(3, 3), stride=(1, 1), "
                        "padding=(1, 1))\n"
                        "  (downs): ModuleList(\n"
                        "    (0): Down(\n"
                        "      (conv): Conv2d(16, 32, kernel_size=(3, 3), stride=(2, 2), "
                        "padding=(1, 1))\n"
                        "    )\n"
                        "    (1): Down(\n"
                        "      (conv): Conv2d(32, 64, kernel_size=(3, 3), stride=(2, 2), "
                        "padding=(1, 1))\n"
                        "    )\n"
                        "  )\n"
                        "  (ups): ModuleList(\n"
                        "    (0): Up(\n"
                        "      (conv): Conv2d(96, 32, kernel_size=(3, 3), stride=(1, 1), "
                        "padding=(1, 1))\n"
                        "    )\n"
                        "    (1): Up(\n"
                        "      (conv): Conv2d(48, 16, kernel_size=(3, 3), stride=(1, 1), "
                        "padding=(1, 1))\n"
                        "    )\n"
                        "  )\n"
                        ")\n";
    if (parse_image_str(unet2, 64, &m, &err))
        fail_msg("%s", err.msg);
    /* an AvgPool2d window that an input of the model could fill, given none, is an image
     * too small for it (DenseNet's transitions at 16x16), not ceil mode */
    if (parse_into("data/estimator/gpu-peaks-h100/densenet121_b64.txt", 16, layers, &m,
                   &err) == 0)
        fail_msg("DenseNet-121 read at 16x16");
    assert_non_null(strstr(err.msg, "AvgPool2d: no output at this --image-size (input 1x1)"));
    /* a pad is its next leaf's: a norm in between takes it */
    const char *pad_norm = "Net(\n"
                           "  (pad): ReflectionPad2d((3, 3, 3, 3))\n"
                           "  (bn): BatchNorm2d(3, eps=1e-05, momentum=0.1)\n"
                           "  (conv): Conv2d(3, 8, kernel_size=(7, 7), stride=(1, 1))\n"
                           ")\n";
    if (parse_image_str(pad_norm, 32, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 0), 8 * 26 * 26);
    /* in a Sequential each child reads the one before: a pooling that opens the next
     * child block pools the pooled tensor again (DLA's rule is for named children) */
    const char *seqpool = "Net(\n"
                          "  (stem): Conv2d(3, 8, kernel_size=(1, 1), stride=(1, 1))\n"
                          "  (body): Sequential(\n"
                          "    (0): MaxPool2d(kernel_size=2, stride=2, padding=0)\n"
                          "    (1): Sequential(\n"
                          "      (0): MaxPool2d(kernel_size=2, stride=2, padding=0)\n"
                          "      (1): Conv2d(8, 8, kernel_size=(1, 1), stride=(1, 1))\n"
                          "    )\n"
                          "  )\n"
                          ")\n";
    if (parse_image_str(seqpool, 64, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(kind_nth(&m, EST_K_POOL, 1), 8 * 16 * 16);
    /* a pad that leaves no input is an error at its convolution */
    const char *crop = "Net(\n"
                       "  (pad): ZeroPad2d((-200, -200, 0, 0))\n"
                       "  (stem): Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1))\n"
                       ")\n";
    assert_true(parse_image_str(crop, 224, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:3: Conv2d: no input left after its pad"));
}

/* Hugging Face's RegNetSELayer holds its squeeze-excitation's convolutions and gate in a
 * Sequential after its pool: the block still scales its input, and the convolution after
 * it reads that at its size (read before at 1x1, and every later layer with it). ConvNeXt
 * V2 (timm's ConvNeXtBlock with a GlobalResponseNorm, transformers' ConvNextV2GRN, whose
 * name says no convolution) holds no layer scale. */
static void test_modtree_se_nested_and_grn(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    if (parse_into("tests/fuzz/corpus/summary_modtree/se_nested_sequential.txt", 224, layers,
                   &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.n, 7);
    assert_int_equal(m.layers[2].out, 16); /* the squeeze, at 1x1 */
    assert_int_equal(m.layers[3].out, 16); /* its ReLU */
    assert_int_equal(m.layers[4].out, 64);
    assert_int_equal(m.layers[6].out, 64 * 112 * 112); /* conv2 reads x * gate */
    if (parse_into("tests/fuzz/corpus/summary_modtree/convnextv2_timm_block.txt", 224, layers,
                   &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.params, 158592);
    for (size_t i = 0; i < m.n; i++)
        assert_false(m.layers[i].kind == EST_K_POOL && m.layers[i].params);
    const char *grn = "Net(\n"
                      "  (stem): Conv2d(3, 8, kernel_size=(4, 4), stride=(4, 4))\n"
                      "  (grn): ConvNextV2GRN()\n"
                      ")\n";
    if (parse_image_str(grn, 32, &m, &err))
        fail_msg("%s", err.msg);
    /* x * N(x), kept for the weight's gradient, then the norm's output: ConvNeXt V2-T
     * measured on an H200 at 0.80 of its peak with the product left out, 0.95 with it */
    assert_int_equal(m.n, 3);
    assert_int_equal(m.layers[1].kind, EST_K_POOL);
    assert_int_equal(m.layers[1].out, 8 * 8 * 8);
    assert_int_equal(m.layers[1].params, 0);
    assert_true(m.layers[1].flags & EST_LF_PRODUCT);
    assert_int_equal(m.layers[2].kind, EST_K_NORM);
    assert_int_equal(m.layers[2].out, 8 * 8 * 8);
    assert_int_equal(m.layers[2].params, 16);
}

/* A dropout printed with p=0 (timm's default, transformers' where the configuration sets
 * none) returns its input: no row of its own, in a sequence tree and a convolutional one.
 * timm's and transformers' prints of ConvNeXt V2-T, measured within 0.5% of each other,
 * were estimated 7% apart for the two Dropout(p=0.0) of each timm block. */
static void test_modtree_zero_dropout(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *seq = "Mlp(\n"
                      "  (fc1): Linear(in_features=64, out_features=256, bias=True)\n"
                      "  (act): GELU(approximate='none')\n"
                      "  (drop1): Dropout(p=0.0, inplace=False)\n"
                      "  (fc2): Linear(in_features=256, out_features=64, bias=True)\n"
                      "  (drop2): Dropout(p=0.1, inplace=False)\n"
                      "  (drop3): Dropout(p=0, inplace=False)\n"
                      "  (drop4): Dropout(p=0.05, inplace=False)\n"
                      "  (drop5): Dropout(p=0.00)\n"
                      "  (drop6): Dropout(p=0.001, inplace=False)\n"
                      ")\n";
    if (parse_str(seq, &m, &err))
        fail_msg("%s", err.msg);
    static const enum est_kind want[] = {EST_K_LINEAR, EST_K_ACT,     EST_K_OTHER,
                                         EST_K_LINEAR, EST_K_DROPOUT, EST_K_OTHER,
                                         EST_K_DROPOUT, EST_K_OTHER,  EST_K_DROPOUT};
    assert_int_equal(m.n, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < m.n; i++)
        assert_int_equal(m.layers[i].kind, want[i]);
    assert_int_equal(m.layers[2].out, 0);
    const char *conv = "Net(\n" CONV("  ", "stem", 3, 8, 3, 2, 1)
                       "  (drop): Dropout2d(p=0.0, inplace=False)\n"
                       CONV("  ", "conv", 8, 8, 3, 1, 1)
                       ")\n";
    if (parse_image_str(conv, 32, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.n, 3);
    assert_int_equal(m.layers[1].kind, EST_K_OTHER);
    assert_int_equal(m.layers[1].out, 0);
    assert_int_equal(m.layers[2].out, 8 * 16 * 16);
    /* nor does it hide a gated MLP (flan-T5's T5DenseGatedActDense with dropout_rate 0,
     * printed wi_0, wi_1, wo, dropout, act), nor does an Identity: read as without it,
     * gate, act, up (gated), down */
    static const char *const drops[] = {"Dropout(p=0.0, inplace=False)", "Identity()",
                                        "Dropout(p=0.1, inplace=False)"};
    for (size_t d = 0; d < sizeof drops / sizeof drops[0]; d++) {
        char t5[640];
        snprintf(t5, sizeof t5,
                 "T5DenseGatedActDense(\n"
                 "  (wi_0): Linear(in_features=64, out_features=128, bias=False)\n"
                 "  (wi_1): Linear(in_features=64, out_features=128, bias=False)\n"
                 "  (wo): Linear(in_features=128, out_features=64, bias=False)\n"
                 "  (dropout): %s\n"
                 "  (act): NewGELUActivation()\n"
                 ")\n",
                 drops[d]);
        if (parse_str(t5, &m, &err))
            fail_msg("%s", err.msg);
        assert_int_equal(m.n, 5);
        assert_int_equal(m.layers[1].kind, EST_K_ACT);
        assert_int_equal(m.layers[1].out, 128);
        assert_int_equal(m.layers[2].kind, EST_K_LINEAR);
        assert_true(m.layers[2].flags & EST_LF_GATED);
        assert_int_equal(m.layers[3].kind, d == 2 ? EST_K_DROPOUT : EST_K_OTHER);
        assert_int_equal(m.layers[4].out, 64);
    }
}

/* An elementwise product the print does not show (a layer scale, a GLU's product, a
 * global response norm's x * N(x)) is a pool row for the replay, but in the per-kind terms
 * one kept tensor, as a norm's output, not a pooling's (whose fitted multiplier, 4, is for
 * small outputs: a ConvNeXt V2 with 1x1 convolutions had gone 48% up with its products). */
static void test_product_rows_per_kind(void **state)
{
    (void)state;
    struct est_result r[3];
    struct carma_err err;
    for (int v = 0; v < 3; v++) {
        struct est_model m;
        est_model_init(&m, layers, EST_MAX_LAYERS);
        assert_int_equal(est_model_add(&m, EST_K_CONV, 64 * 56 * 56, 64 * 64 * 9, 1, 0), 0);
        assert_int_equal(est_model_add(&m, v == 1 ? EST_K_NORM : EST_K_POOL, 64 * 28 * 28, 0,
                                       1, 0),
                         0);
        if (v == 0)
            m.layers[1].flags |= EST_LF_PRODUCT;
        assert_int_equal(est_model_add(&m, EST_K_CONV, 64 * 28 * 28, 64 * 64 * 9, 1, 0), 0);
        assert_int_equal(est_model_family(&m), EST_FAM_CONV);
        struct est_opts o = {.batch = 32, .optimizer = EST_OPT_ADAMW};
        assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &r[v], &err), 0);
        assert_int_equal(r[v].peak_phase, 0); /* per-kind terms */
    }
    assert_float_equal(r[0].activations_mib, r[1].activations_mib, 1e-9);
    assert_true(r[2].activations_mib > r[0].activations_mib + 1);
}

/* A per-channel scale printed without its size (timm's LayerScale / LayerScale2d,
 * transformers' Dinov2LayerScale) is `x * gamma`: a new tensor of the one before it and
 * one parameter per channel, in a sequence tree and in a convolutional one. */
static void test_modtree_layer_scale(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *seq = "Block(\n"
                      "  (norm1): LayerNorm((384,), eps=1e-06, elementwise_affine=True)\n"
                      "  (fc1): Linear(in_features=384, out_features=1536, bias=True)\n"
                      "  (act): GELU(approximate='none')\n"
                      "  (fc2): Linear(in_features=1536, out_features=384, bias=True)\n"
                      "  (ls1): Dinov2LayerScale()\n"
                      "  (ls2): Identity()\n"
                      ")\n";
    if (parse_str(seq, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.n, 6);
    assert_int_equal(m.layers[4].kind, EST_K_POOL);
    assert_int_equal(m.layers[4].out, 384);
    assert_int_equal(m.layers[4].params, 384);
    assert_true(m.layers[4].flags & EST_LF_PRODUCT);
    assert_int_equal(m.layers[5].kind, EST_K_OTHER);
    assert_int_equal(m.params, 2 * 384 + 384 * 1536 + 1536 + 1536 * 384 + 384 + 384);
    const char *conv_ok = "Net(\n" CONV("  ", "stem", 3, 64, 4, 4, 0)
                          "  (ls): LayerScale2d()\n"
                          ")\n";
    if (parse_image_str(conv_ok, 224, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.n, 2);
    assert_int_equal(m.layers[1].kind, EST_K_POOL);
    assert_int_equal(m.layers[1].out, 64 * 56 * 56);
    assert_int_equal(m.layers[1].params, 64);
    assert_true(m.layers[1].flags & EST_LF_PRODUCT);
    /* ConvNeXt's hidden layer scale (layer_scale_row) */
    if (parse_into("tests/fuzz/corpus/summary_modtree/convnext_timm_toy.txt", 32, layers, &m,
                   &err))
        fail_msg("%s", err.msg);
    size_t products = 0;
    for (size_t i = 0; i < m.n; i++)
        products += m.layers[i].kind == EST_K_POOL && (m.layers[i].flags & EST_LF_PRODUCT);
    assert_int_not_equal(products, 0);
}

/* Reads a print does not show, from timm's models measured on an H100: MixedConv2d
 * (MixNet) splits its input by channels among its convolutions and concatenates their
 * outputs; SplitAttn (ResNeSt) sums its radix groups and pools them to 1x1 for its
 * attention, and returns the weighted sum, of the input's width; a block after leaves
 * that kept the block input's shape reads their output; a ResNet-D downsample
 * pools the block's input, not the residual branch's output, before its convolution. */
static void test_modtree_split_reads(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *mixed = "Net(\n" CONV("  ", "stem", 3, 24, 3, 2, 1)
                        "  (conv_dw): MixedConv2d(\n"
                        CONV("    ", "0", 8, 8, 3, 2, 1)
                        CONV("    ", "1", 8, 8, 5, 2, 2)
                        CONV("    ", "2", 8, 8, 7, 2, 3)
                        "  )\n" BN("  ", "bn", 24)
                        "  (conv_pwl): MixedConv2d(\n"
                        CONV("    ", "0", 12, 16, 1, 1, 0)
                        CONV("    ", "1", 12, 16, 1, 1, 0)
                        "  )\n"
                        ")\n";
    if (parse_image_str(mixed, 64, &m, &err))
        fail_msg("%s", err.msg);
    /* stem 24 x 32 x 32; each slice 8 x 16 x 16 (not chained: 8x8, 4x4); their
     * concatenation normed; conv_pwl's halves at 16 x 16 */
    for (unsigned i = 1; i <= 3; i++)
        assert_int_equal(kind_nth(&m, EST_K_CONV, i), 8 * 16 * 16);
    assert_int_equal(kind_nth(&m, EST_K_NORM, 0), 24 * 16 * 16);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 4), 16 * 16 * 16);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 5), 16 * 16 * 16);
    assert_int_equal(m.join_line, 0);
    const char *resnest = "Net(\n" CONV("  ", "stem", 3, 32, 3, 2, 1)
                          "  (block): Bottleneck(\n"
                          CONV("    ", "conv1", 32, 32, 1, 1, 0) BN("    ", "bn1", 32)
                          "    (act1): ReLU(inplace=True)\n"
                          "    (conv2): SplitAttn(\n"
                          CONV("      ", "conv", 32, 64, 3, 1, 1)
                          "      (act0): ReLU(inplace=True)\n"
                          "      (fc1): Conv2d(32, 8, kernel_size=(1, 1), stride=(1, 1))\n"
                          "      (act1): ReLU(inplace=True)\n"
                          "      (fc2): Conv2d(8, 64, kernel_size=(1, 1), stride=(1, 1))\n"
                          "      (rsoftmax): RadixSoftmax()\n"
                          "    )\n"
                          "    (avd_last): AvgPool2d(kernel_size=3, stride=2, padding=1)\n"
                          CONV("    ", "conv3", 32, 64, 1, 1, 0) BN("    ", "bn3", 64)
                          "    (act3): ReLU(inplace=True)\n"
                          "    (downsample): Sequential(\n"
                          "      (0): AvgPool2d(kernel_size=2, stride=2, padding=0)\n"
                          CONV("      ", "1", 32, 64, 1, 1, 0) BN("      ", "2", 64)
                          "    )\n"
                          "  )\n"
                          CONV("  ", "next", 64, 64, 1, 1, 0)
                          ")\n";
    if (parse_image_str(resnest, 64, &m, &err))
        fail_msg("%s", err.msg);
    /* stem 32 x 32 x 32; conv2 reads conv1's output (of the block input's shape: the
     * flow, not a second branch); fc1 and fc2 at 1x1; avd_last pools the 32-wide sum to
     * 16 x 16 */
    assert_int_equal(kind_nth(&m, EST_K_CONV, 3), 8);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 4), 64);
    assert_int_equal(kind_nth(&m, EST_K_POOL, 0), 32 * 16 * 16);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 5), 64 * 16 * 16);
    /* the downsample pools the block's 32 x 32 x 32 input, and its convolution reads that */
    assert_int_equal(kind_nth(&m, EST_K_POOL, 1), 32 * 16 * 16);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 6), 64 * 16 * 16);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 7), 64 * 16 * 16);
    assert_int_equal(m.join_line, 0);
    /* CSPResNet's stage: conv_down keeps the width, so conv_exp's input width is also the
     * stage input's (32 x 32 x 32); conv_exp, which never shrinks, reads conv_down's
     * output: a branch from the larger input could not be joined */
    const char *cspres = "Net(\n" CONV("  ", "stem", 3, 16, 3, 2, 1)
                         "  (stage): CrossStage(\n"
                         "    (conv_down): ConvNormAct(\n" CONV("      ", "conv", 16, 16, 3, 2, 1)
                         "    )\n"
                         "    (conv_exp): ConvNormAct(\n" CONV("      ", "conv", 16, 32, 1, 1, 0)
                         BN("      ", "bn", 32) "    )\n"
                         "  )\n"
                         ")\n";
    if (parse_image_str(cspres, 64, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 2), 32 * 16 * 16);
    /* the prints of those runs (data/estimator/gpu-peaks-h100) read with no join left
     * unexplained: every tensor a leaf reads is one the rules above give */
    static const char *const runs[] = {"cspdarknet53_b32", "mixnet_m_b64", "resnest50d_b32"};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        char path[128];
        snprintf(path, sizeof path, "data/estimator/gpu-peaks-h100/%s.txt", runs[i]);
        if (parse_into(path, 224, layers, &m, &err))
            fail_msg("%s", err.msg);
        if (m.join_line)
            fail_msg("%s: line %zu reads a join no rule explains", path, m.join_line);
    }
}

/* "(0): None", an empty slot of a ModuleList (HRNet's transitions and fuse layers),
 * is read as no module: the print reads as it does without the line. Outside a block,
 * or as the start of a longer name, None is not a module; nor is a child printed as
 * words by its own __repr__, which is named as such. */
static void test_modtree_none_slots(void **state)
{
    (void)state;
    static struct est_layer ref_l[EST_MAX_LAYERS];
    struct est_model m, ref;
    struct carma_err err;
#define NONE_TOY(slot)                                                                             \
    "Net(\n"                                                                                       \
    "  (stem): Conv2d(3, 16, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))\n"                 \
    "  (transition): ModuleList(\n" slot                                                           \
    "    (1): Sequential(\n"                                                                       \
    "      (0): Conv2d(16, 32, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))\n"               \
    "      (1): BatchNorm2d(32, eps=1e-05, momentum=0.1, affine=True)\n"                           \
    "    )\n"                                                                                      \
    "  )\n"                                                                                        \
    ")\n"
    const char *with = NONE_TOY("    (0): None\n");
    const char *without = NONE_TOY("");
    est_model_init(&ref, ref_l, EST_MAX_LAYERS);
    ref.image_h = ref.image_w = 64;
    assert_int_equal(est_parse(without, strlen(without), "f.txt", &ref, &err), 0);
    if (parse_image_str(with, 64, &m, &err))
        fail_msg("%s", err.msg);
    assert_same_model(&m, &ref);
    assert_int_equal(m.params, 3 * 16 * 9 + 16 + 16 * 32 * 9 + 32 + 64);
    assert_int_equal(parse_image_str("None\n", 64, &m, &err), -EINVAL);
    assert_int_equal(parse_image_str(NONE_TOY("    (0): Nonesuch\n"), 64, &m, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "t.txt:4: expected 'Module(' after the name"));
    /* a module printed as text by its own __repr__ (detectron2's) is named as such */
    assert_int_equal(parse_image_str(NONE_TOY("    (0): Positional encoding PositionEmbeddingSine\n"),
                                     64, &m, &err),
                     -EINVAL);
    assert_non_null(strstr(err.msg, "t.txt:4: 'Positional encoding PositionEmbeddingSine' is "
                                    "text, not a module printed as Class(...)"));
#undef NONE_TOY
}

/* A U-Net decoder block upsamples its input in Python (F.interpolate) and concatenates
 * the encoder's skip before its first convolution: neither shows in the print. The
 * channels the convolution reads are the newest tensor's and an earlier one's, and the
 * join is at the earlier (larger) one's size, the newest upsampled to it first (counted
 * as an Upsample row). After such a join the next skip is older and larger than the
 * last: here both skips have 16 channels, and the decoder's own 16-channel output (and
 * the encoder's 16-channel tensor at 32x32) is no skip. */
static void test_modtree_unet_joins(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *unet =
        "UNet(\n"
        "  (stem): Conv2d(3, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
        "  (down1): Conv2d(16, 16, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))\n"
        "  (down2): Conv2d(16, 24, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))\n"
        "  (blocks): ModuleList(\n"
        "    (0): DecoderBlock(\n"
        "      (conv1): Conv2d(40, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
        "      (relu): ReLU(inplace=True)\n"
        "    )\n"
        "    (1): DecoderBlock(\n"
        "      (conv1): Conv2d(32, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
        "      (relu): ReLU(inplace=True)\n"
        "    )\n"
        "  )\n"
        "  (head): Conv2d(8, 2, kernel_size=(1, 1), stride=(1, 1))\n"
        ")\n";
    if (parse_image_str(unet, 64, &m, &err))
        fail_msg("%s", err.msg);
    /* stem 16 x 64 x 64, down1 16 x 32 x 32, down2 24 x 16 x 16; block 0 joins down2's
     * output upsampled to 32 x 32 with down1's; block 1 its own output upsampled to
     * 64 x 64 with the stem's */
    assert_int_equal(kind_nth(&m, EST_K_CONV, 3), 16 * 32 * 32);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 4), 8 * 64 * 64);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 5), 2 * 64 * 64);
    assert_int_equal(kind_nth(&m, EST_K_POOL, 0), 24 * 32 * 32);
    assert_int_equal(kind_nth(&m, EST_K_POOL, 1), 16 * 64 * 64);
    assert_int_equal(kind_nth(&m, EST_K_POOL, 2), 0);
    assert_int_equal(m.concat, 40 * 32 * 32 + 32 * 64 * 64);
    assert_int_equal(m.join_line, 0); /* every join explained: no note */
    uint64_t p = 0;
    for (size_t i = 0; i < m.n; i++)
        p += m.layers[i].params;
    assert_int_equal(p, m.params); /* the Upsample rows hold no parameters */
    assert_int_equal(m.params, (3 * 9 * 16 + 16) + (16 * 9 * 16 + 16) + (16 * 9 * 24 + 24) +
                                   (40 * 9 * 16 + 16) + (32 * 9 * 8 + 8) + (8 * 2 + 2));

    /* A block with named children lists them in definition order: YOLOv8's C2f prints
     * cv1, cv2, m and runs cv2 on cv1's output joined with m's, at one size. The stem's
     * 16 channels at 32 x 32 are no skip. */
    const char *c2f =
        "Net(\n"
        "  (stem): Conv2d(3, 16, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))\n"
        "  (down): Conv2d(16, 32, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))\n"
        "  (c2f): C2f(\n"
        "    (cv1): Conv2d(32, 32, kernel_size=(1, 1), stride=(1, 1))\n"
        "    (cv2): Conv2d(48, 32, kernel_size=(1, 1), stride=(1, 1))\n"
        "    (m): Sequential(\n"
        "      (0): Conv2d(16, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
        "    )\n"
        "  )\n"
        ")\n";
    if (parse_image_str(c2f, 64, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 3), 32 * 16 * 16);
    assert_int_equal(kind_nth(&m, EST_K_POOL, 0), 0);
    assert_int_equal(m.concat, 48 * 16 * 16);
    assert_int_equal(m.join_line, 0);

    /* channels nothing explains: the join is taken at the newest size, and said so */
    const char *odd = "Net(\n"
                      "  (a): Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))\n"
                      "  (b): Conv2d(20, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
                      "  (c): Conv2d(8, 30, kernel_size=(1, 1), stride=(1, 1))\n"
                      "  (d): Conv2d(7, 8, kernel_size=(1, 1), stride=(1, 1))\n"
                      ")\n";
    if (parse_image_str(odd, 64, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 1), 8 * 32 * 32);
    assert_int_equal(m.join_line, 3);
    assert_int_equal(m.join_channels, 20);
    assert_int_equal(m.join_h, 32);
    assert_int_equal(m.join_w, 32);
    assert_int_equal(m.join_count, 2);
}

/* Detection models' training (image resizing, proposals, sampled regions) is in no
 * print: refused at their first such block, naming it and what to do. A pooling class of
 * its own that prints no window (torchvision's FPN extra block) keeps its input's size. */
static void test_modtree_detection_and_bare_pools(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    static const char *const dets[] = {
        "FasterRCNN(\n"
        "  (transform): GeneralizedRCNNTransform(\n"
        "      Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])\n"
        "      Resize(min_size=(800,), max_size=1333, mode='bilinear')\n"
        "  )\n"
        "  (backbone): Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))\n"
        ")\n",
        "Net(\n"
        "  (backbone): Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))\n"
        "  (roi_heads): StandardROIHeads(\n"
        "    (box_head): Linear(in_features=392, out_features=16, bias=True)\n"
        "  )\n"
        ")\n",
        "GeneralizedRCNN(\n"
        "  (backbone): Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))\n"
        ")\n",
        "Net(\n"
        "  (backbone): Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))\n"
        "  (pool): MultiScaleRoIAlign(featmap_names=['0'], output_size=(7, 7), "
        "sampling_ratio=2)\n"
        ")\n"};
    static const char *const where[] = {"t.txt:2: GeneralizedRCNNTransform: a detection model",
                                        "t.txt:3: StandardROIHeads: a detection model",
                                        "t.txt:1: GeneralizedRCNN: a detection model",
                                        "t.txt:3: MultiScaleRoIAlign: a detection model"};
    for (size_t i = 0; i < sizeof dets / sizeof dets[0]; i++) {
        /* with or without --image-size, where nothing before needs it */
        for (uint32_t hw = i == 0 || i == 2 ? 0 : 800; hw <= 800; hw += 800) {
            assert_int_equal(parse_image_str(dets[i], hw, &m, &err), -EINVAL);
            if (strncmp(err.msg, where[i], strlen(where[i])) != 0)
                fail_msg("%s", err.msg);
            assert_non_null(strstr(err.msg, "'carma submit --mem SIZE'"));
        }
    }

    const char *fpn = "Net(\n"
                      "  (c1): Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))\n"
                      "  (extra_blocks): LastLevelMaxPool()\n"
                      "  (c2): Conv2d(8, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
                      ")\n";
    if (parse_image_str(fpn, 64, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.layers[1].kind, EST_K_POOL);
    assert_int_equal(m.layers[1].out, 8 * 32 * 32);
    assert_int_equal(m.layers[2].out, 8 * 32 * 32);
    assert_int_equal(m.bare_pool_line, 3);
    /* a torch.nn pooling always prints its window: one without says so */
    const char *nowin = "Net(\n"
                        "  (c1): Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))\n"
                        "  (p): MaxPool2d(stride=2, padding=0)\n"
                        ")\n";
    assert_int_equal(parse_image_str(nowin, 64, &m, &err), -EINVAL);
    assert_string_equal(err.msg, "t.txt:3: MaxPool2d: no kernel_size= (or a malformed one), the "
                                 "pooling's window; give the print as PyTorch writes it");
}

/* FrozenBatchNorm2d holds buffers, not parameters, in torchvision's layout as in
 * detectron2's: no gradient, no optimizer state. */
static void test_modtree_frozen_batchnorm(void **state)
{
    (void)state;
    struct est_model m, b;
    struct carma_err err;
    static struct est_layer bl[EST_MAX_LAYERS];
    const char *tv = "Net(\n"
                     "  (0): Conv2dNormActivation(\n"
                     "    (0): Conv2d(3, 16, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), "
                     "bias=False)\n"
                     "    (1): FrozenBatchNorm2d(16, eps=1e-05)\n"
                     "    (2): ReLU(inplace=True)\n"
                     "  )\n"
                     "  (1): Conv2d(\n"
                     "    16, 32, kernel_size=(1, 1), stride=(1, 1), bias=False\n"
                     "    (norm): FrozenBatchNorm2d(num_features=32, eps=1e-05)\n"
                     "  )\n"
                     ")\n";
    if (parse_image_str(tv, 64, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.params, 3 * 9 * 16 + 16 * 32);
    assert_int_equal(m.frozen, 0);
    for (size_t i = 0; i < m.n; i++)
        if (m.layers[i].kind == EST_K_NORM)
            assert_int_equal(m.layers[i].params, 0);
    assert_int_equal(m.layers[1].kind, EST_K_NORM);
    assert_int_equal(m.layers[1].out, 16 * 32 * 32); /* still a tensor */
    /* a BatchNorm2d in its place trains 2 x 16 more: gradients and AdamW state for them */
    char bn[1024];
    snprintf(bn, sizeof bn, "%s", tv);
    char *at = strstr(bn, "FrozenBatchNorm2d(16");
    memmove(at, at + 6, strlen(at + 6) + 1);
    est_model_init(&b, bl, EST_MAX_LAYERS);
    b.image_h = b.image_w = 64;
    assert_int_equal(est_parse(bn, strlen(bn), "t.txt", &b, &err), 0);
    assert_int_equal(b.params, m.params + 2 * 16);
    struct est_opts o = {.batch = 8, .optimizer = EST_OPT_ADAMW, .precision = EST_PREC_FP32};
    struct est_result r1, r2;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &r1, &err), 0);
    assert_int_equal(est_compute(&b, est_coef_default(), &o, &rwork, &r2, &err), 0);
    assert_true(r1.gradients_mib < r2.gradients_mib);
    assert_true(r1.optimizer_mib < r2.optimizer_mib);
    assert_true(r1.activations_mib == r2.activations_mib);
}

/* ptflops' and DeepSpeed's flops profiler's module trees put their statistics before
 * each module's arguments, and on a line of their own for a block: read past, the same
 * model as the plain print, with the tool's total checked against the layers. */
static void test_modtree_profiler_stats(void **state)
{
    (void)state;
    static struct est_layer pl[EST_MAX_LAYERS];
    struct est_model m, p;
    struct carma_err err;
    const char *plain =
        "Net(\n"
        "  (stem): Sequential(\n"
        "    (0): Conv2d(3, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
        "    (1): BatchNorm2d(16, eps=1e-05, momentum=0.1, affine=True, "
        "track_running_stats=True)\n"
        "    (2): ReLU(inplace=True)\n"
        "  )\n"
        "  (pool): AdaptiveAvgPool2d(output_size=1)\n"
        "  (drop): Identity()\n"
        "  (fc): Linear(in_features=16, out_features=532, bias=True)\n"
        ")\n";
    static const char *const annotated[] = {
        /* ptflops */
        "Net(\n"
        "  0.01 M, 100.000% Params, 0.001 GMac, 100.000% MACs, \n"
        "  (stem): Sequential(\n"
        "    0.0 M, 5.040% Params, 0.001 GMac, 98.000% MACs, \n"
        "    (0): Conv2d(0.0 M, 4.704% Params, 0.0 GMac, 90.000% MACs, 3, 16, "
        "kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
        "    (1): BatchNorm2d(0.0 M, 0.336% Params, 0.0 GMac, 5.000% MACs, 16, eps=1e-05, "
        "momentum=0.1, affine=True, track_running_stats=True)\n"
        "    (2): ReLU(0.0 M, 0.000% Params, 0.0 GMac, 3.000% MACs, inplace=True)\n"
        "  )\n"
        "  (pool): AdaptiveAvgPool2d(0.0 M, 0.000% Params, 0.0 GMac, 1.000% MACs, "
        "output_size=1)\n"
        "  (drop): Identity(0.0 M, 0.000% Params, 0.0 GMac, 0.000% MACs, )\n"
        "  (fc): Linear(0.01 M, 94.960% Params, 0.0 GMac, 1.000% MACs, in_features=16, "
        "out_features=532, bias=True)\n"
        ")\n",
        /* DeepSpeed */
        "Net(\n"
        "  9.52 K = 100% Params, 5.1 MMACs = 100% MACs, 1.2 ms = 100% latency, 8.5 GFLOPS\n"
        "  (stem): Sequential(\n"
        "    480 = 5.04% Params, 5.0 MMACs = 98% MACs, 0.3 ms = 25% latency, 9.1 GFLOPS\n"
        "    (0): Conv2d(448 = 4.7% Params, 4.4 MMACs = 86.3% MACs, 183.36 us = 15.28% "
        "latency, 17.9 GFLOPS, 3, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
        "    (1): BatchNorm2d(32 = 0.34% Params, 0 MACs = 0% MACs, 52.2 us = 4.35% latency, "
        "1.25 GFLOPS, 16, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)\n"
        "    (2): ReLU(0 = 0% Params, 0 MACs = 0% MACs, 20.5 us = 1.71% latency, 800 MFLOPS, "
        "inplace=True)\n"
        "  )\n"
        "  (pool): AdaptiveAvgPool2d(0 = 0% Params, 0 MACs = 0% MACs, 31.2 us = 2.6% "
        "latency, 525.1 MFLOPS, output_size=1)\n"
        "  (drop): Identity(0 = 0% Params, 0 MACs = 0% MACs, 0 s = 0% latency, 0 FLOPS)\n"
        "  (fc): Linear(9.05 K = 94.96% Params, 9.05 KMACs = 0.18% MACs, 40.1 us = 3.34% "
        "latency, 451.4 MFLOPS, in_features=16, out_features=532, bias=True)\n"
        ")\n",
        /* DeepSpeed before 0.6 */
        "Net(\n"
        "  9.52 K, 100.00% Params, 5.1 MMACs, 100.00% MACs, 1.2 ms, 100.00% latency, "
        "8.5 GFLOPS, \n"
        "  (stem): Sequential(\n"
        "    480, 5.04% Params, 5.0 MMACs, 98.00% MACs, 0.3 ms, 25.00% latency, 9.1 GFLOPS, \n"
        "    (0): Conv2d(448, 4.70% Params, 4.4 MMACs, 86.30% MACs, 183.36 us, 15.28% "
        "latency, 17.9 GFLOPS, 3, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
        "    (1): BatchNorm2d(32, 0.34% Params, 0 MACs, 0.00% MACs, 52.2 us, 4.35% latency, "
        "1.25 GFLOPS, 16, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)\n"
        "    (2): ReLU(0, 0.00% Params, 0 MACs, 0.00% MACs, 20.5 us, 1.71% latency, "
        "800 MFLOPS, inplace=True)\n"
        "  )\n"
        "  (pool): AdaptiveAvgPool2d(0, 0.00% Params, 0 MACs, 0.00% MACs, 31.2 us, 2.60% "
        "latency, 525.1 MFLOPS, output_size=1)\n"
        "  (drop): Identity(0, 0.00% Params, 0 MACs, 0.00% MACs, 0 s, 0.00% latency, "
        "0 FLOPS, )\n"
        "  (fc): Linear(9.05 K, 94.96% Params, 9.05 KMACs, 0.18% MACs, 40.1 us, 3.34% "
        "latency, 451.4 MFLOPS, in_features=16, out_features=532, bias=True)\n"
        ")\n"};
    static const int tools[] = {EST_PROF_PTFLOPS, EST_PROF_DEEPSPEED, EST_PROF_DEEPSPEED};
    est_model_init(&p, pl, EST_MAX_LAYERS);
    p.image_h = p.image_w = 32;
    assert_int_equal(est_parse(plain, strlen(plain), "t.txt", &p, &err), 0);
    assert_int_equal(p.params, 3 * 9 * 16 + 16 + 2 * 16 + 16 * 532 + 532);
    assert_int_equal(p.profiler, 0);
    for (size_t i = 0; i < sizeof annotated / sizeof annotated[0]; i++) {
        if (parse_image_str(annotated[i], 32, &m, &err))
            fail_msg("%zu: %s", i, err.msg);
        assert_int_equal(m.profiler, tools[i]);
        assert_int_equal(m.params, p.params);
        assert_int_equal(m.n, p.n);
        for (size_t j = 0; j < m.n; j++) {
            assert_int_equal(m.layers[j].kind, p.layers[j].kind);
            assert_int_equal(m.layers[j].out, p.layers[j].out);
            assert_int_equal(m.layers[j].params, p.layers[j].params);
        }
        /* the tool's own total (the root's statistics, line 2) agrees */
        assert_int_equal(m.profiler_line, 2);
        assert_true(fabs((double)m.params - m.profiler_params) <= m.profiler_tol);
    }
    /* the whole DeepSpeed report, not its tree alone */
    const char *report = "\n-------------------------- DeepSpeed Flops Profiler ----------\n"
                         "Profile Summary at step 1:\n";
    assert_int_equal(parse_str(report, &m, &err), -EINVAL);
    assert_string_equal(err.msg, "t.txt:2: a DeepSpeed flops profiler report: give its module "
                                 "tree alone (from the model's 'Name(' line to its closing ')', "
                                 "under 'Detailed Profile'), or print(model) without the "
                                 "profiler");
}

/* A vision tower beside a language model (LLaVA, Qwen-VL) runs at two lengths: refused,
 * saying so, whatever --seq-len or --image-size (the vision tower's position table, 17
 * here, refused every real language-model length as "the job would fail"). A tower whose
 * position table has exactly the patches (SigLIP) has no class token. */
#define TOWER(table)                                                                               \
    "  (vision_tower): VisionModel(\n"                                                             \
    "    (patch_embedding): Conv2d(3, 64, kernel_size=(16, 16), stride=(16, 16))\n"                \
    "    (position_embedding): Embedding(" table ", 64)\n"                                         \
    "    (layers): ModuleList(\n"                                                                  \
    "      (0-1): 2 x EncoderLayer(\n"                                                             \
    "        (self_attn): Attention(\n"                                                            \
    "          (k_proj): Linear(in_features=64, out_features=64, bias=True)\n"                     \
    "          (v_proj): Linear(in_features=64, out_features=64, bias=True)\n"                     \
    "          (q_proj): Linear(in_features=64, out_features=64, bias=True)\n"                     \
    "          (out_proj): Linear(in_features=64, out_features=64, bias=True)\n"                   \
    "        )\n"                                                                                  \
    "        (layer_norm): LayerNorm((64,), eps=1e-05, elementwise_affine=True)\n"                 \
    "      )\n"                                                                                    \
    "    )\n"                                                                                      \
    "  )\n"
static void test_modtree_vision_towers(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *llava = "Llava(\n" TOWER("17")
                        "  (projector): Linear(in_features=64, out_features=128, bias=True)\n"
                        "  (language_model): LM(\n"
                        "    (embed_tokens): Embedding(1000, 128)\n"
                        "    (norm): RMSNorm((128,), eps=1e-06)\n"
                        "    (lm_head): Linear(in_features=128, out_features=1000, bias=False)\n"
                        "  )\n"
                        ")\n";
    static const char want[] =
        "t.txt:3: a multimodal model: a vision tower (patch embedding, this line) and a "
        "language model (token table, line 19) run at different lengths (each image's "
        "patches; the text with the image tokens), which one --seq-len or --image-size "
        "cannot give. Estimate each from a print of the module that holds it (LLaVA's "
        "model.vision_tower and model.language_model, a VisionEncoderDecoderModel's "
        "model.encoder and model.decoder) and add them, or measure a run's peak and use "
        "'carma submit --mem SIZE'";
    static const uint32_t images[] = {0, 64, 336};
    for (size_t i = 0; i < 3; i++) {
        assert_true(parse_image_str(llava, images[i], &m, &err) < 0);
        assert_string_equal(err.msg, want);
    }
    /* the tower alone: its patches and a class token, 17, within its table */
    const char *clip = "Vision(\n" TOWER("17") ")\n";
    assert_int_equal(parse_image_str(clip, 64, &m, &err), 0);
    assert_int_equal(m.tokens, 17);
    assert_true(est_model_class_token(&m));
    /* SigLIP's table has exactly the 16 patches: no class token */
    const char *siglip = "Vision(\n" TOWER("16") ")\n";
    assert_int_equal(parse_image_str(siglip, 64, &m, &err), 0);
    assert_int_equal(m.tokens, 16);
    assert_false(est_model_class_token(&m));
    struct est_opts o = {.batch = 4, .optimizer = EST_OPT_ADAMW};
    assert_int_equal(est_seq_resolve(&m, &o, "s.txt", &err), 0);
    assert_int_equal(o.seq, 16);
    struct est_result r;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &r, &err), 0);
    o.seq = 17;
    assert_true(est_seq_resolve(&m, &o, "s.txt", &err) < 0);
    assert_string_equal(err.msg, "s.txt: --seq-len 17 and --image-size 64x64 disagree: 16x16 "
                                 "patches make 16 tokens (give one of the two)");
    /* a larger image than the table holds is still refused: the job would fail */
    assert_int_equal(parse_image_str(siglip, 80, &m, &err), 0);
    o.seq = 0;
    assert_int_equal(est_seq_resolve(&m, &o, "s.txt", &err), 0);
    assert_int_equal(o.seq, 26);
    assert_true(est_compute(&m, est_coef_default(), &o, &rwork, &r, &err) < 0);
    assert_non_null(strstr(err.msg, "longer than the model's position table (16 positions"));
}
#undef TOWER

/* Vision transformers embed images with a convolution whose kernel is its stride: a
 * linear layer per patch, the patches' pixels the input. */
static void test_modtree_patches(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    /* A vision transformer with a convolution that is not a patch embedding (a
     * convolutional position encoding) cannot be sized from --image-size, nor from
     * --seq-len, which leaves that convolution unsized: the message says neither works
     * and asks for a torchinfo table (it sent users to --seq-len, whose refusal sent them
     * back to --image-size). */
    const char *pe = "VisionTransformer(\n"
                     "  (conv_proj): Conv2d(3, 768, kernel_size=(16, 16), stride=(16, 16))\n"
                     "  (pe): Conv2d(768, 768, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), "
                     "groups=768)\n"
                     "  (pos): Embedding(197, 768)\n"
                     "  (head): Linear(in_features=768, out_features=1000, bias=True)\n"
                     ")\n";
    assert_true(parse_image_str(pe, 224, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "--image-size sizes the convolutions but not the sequence, "
                                    "and --seq-len the sequence but not the convolutions; give "
                                    "a torchinfo table of it run on its inputs"));
    assert_true(parse_str(pe, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:3: Conv2d in a module tree: the print has no spatial "
                                    "sizes"));
    assert_non_null(strstr(err.msg, "needs a torchinfo table of it run on its inputs"));
    int rc = parse_file("tests/fuzz/corpus/summary_modtree/vit_hf.txt", &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    /* ViT-B/16 is 86,567,656 with its class token (768) and position embeddings (197 x
     * 768), bare parameters the print does not show */
    assert_int_equal(m.params, 86567656ull - 768 - 197 * 768);
    assert_int_equal(m.layers[0].kind, EST_K_LINEAR);
    assert_int_equal(m.layers[0].out, 768);
    assert_int_equal(m.layers[0].params, 3 * 16 * 16 * 768 + 768);
    assert_int_equal(m.input, 3 * 16 * 16); /* pixels per patch */
    assert_true(m.needs_seq);
    assert_int_equal(m.needs_seq_line, 5);
    /* given neither, the refusal names --image-size, a ViT's natural input */
    struct est_opts none = {.batch = 8};
    assert_true(est_seq_resolve(&m, &none, "vit.txt", &err) < 0);
    assert_non_null(strstr(err.msg, "vit.txt:5: a vision transformer (a 16x16 patch embedding "
                                    "here): give --image-size H[xW]"));
    assert_true(m.cudnn);
    assert_int_equal(est_model_family(&m), EST_FAM_DENSE);

    /* the pixels, not token ids, are the input held through the step */
    struct est_opts o = {.batch = 64, .seq = 197, .optimizer = EST_OPT_ADAMW,
                         .precision = EST_PREC_FP32};
    struct est_result with, without;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &with, &err), 0);
    m.input = 0;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &without, &err), 0);
    assert_true(with.estimate_mib - without.estimate_mib >=
                64.0 * 197 * (768 * 4 - 8) / 1048576.0);
    /* a convolution loads cuDNN: the fitted floor is the conv family's */
    o.floor_src = EST_FLOOR_FITTED;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &with, &err), 0);
    assert_true(with.floor_mib == est_coef_default()->floor_mib[EST_FAM_CONV]);

    /* torchvision's: MultiheadAttention prints only out_proj; its in_proj (3E x E + 3E)
     * comes first */
    rc = parse_file("tests/fuzz/corpus/summary_modtree/vit_torchvision_2layers.txt", &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.params, 15536872);
    size_t inproj = 0;
    for (size_t i = 0; i + 1 < m.n; i++)
        if (m.layers[i].kind == EST_K_LINEAR && m.layers[i].out == 3 * 768) {
            inproj++;
            assert_int_equal(m.layers[i].params, 3 * 768 * 768 + 3 * 768);
            assert_int_equal(m.layers[i + 1].kind, EST_K_LINEAR); /* out_proj */
            assert_int_equal(m.layers[i + 1].out, 768);
        }
    assert_int_equal(inproj, 2);

    /* padding, dilation or a kernel other than the stride: no spatial sizes */
    static const char *const convs[] = {
        "Conv2d(3, 64, kernel_size=(7, 7), stride=(2, 2), padding=(3, 3), bias=False)",
        "Conv2d(3, 64, kernel_size=(2, 2), stride=(2, 2), padding=(1, 1))",
        "Conv2d(3, 64, kernel_size=(2, 2), stride=(2, 2), dilation=(2, 2))",
        "Conv2d(64, 64, kernel_size=(2, 2), stride=(2, 2), groups=64)",
        "Conv2d(3, 64, kernel_size=(2, 2), stride=(2, 2), padding=same)",
        "Conv1d(80, 768, kernel_size=(3,), stride=(1,), padding=(1,))",
    };
    char buf[256];
    for (size_t i = 0; i < sizeof convs / sizeof convs[0]; i++) {
        snprintf(buf, sizeof buf, "Net(\n  (c): %s\n)\n", convs[i]);
        assert_true(parse_str(buf, &m, &err) < 0);
        assert_non_null(strstr(err.msg, "t.txt:2: Conv"));
        assert_null(strstr(err.msg, "bad"));
        assert_non_null(strstr(err.msg, "in a module tree: the print has no spatial sizes"));
        /* --image-size sizes 2-D convolutions only: not offered for a Conv1d */
        assert_true(!strstr(convs[i], "Conv1d") == !!strstr(err.msg, "give --image-size"));
    }
    assert_int_equal(parse_str("Net(\n  (c): Conv1d(4, 8, kernel_size=(3,), stride=(3,))\n)\n",
                               &m, &err), 0);
    assert_int_equal(m.layers[0].params, 4 * 3 * 8 + 8);
    assert_true(parse_str("Net(\n  (c): Conv2d(3, 8, kernel_size=(16, x), stride=(16, 16))\n)\n",
                          &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:2: bad Conv2d arguments");
    assert_true(parse_str("Net(\n  (c_attn): Conv1D()\n)\n", &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:2: Conv1D() without nf/nx (older transformers print "
                                 "none): cannot size it; give a torchinfo table");
}

/* T5's relative position bias is an Embedding inside attention: its table is counted,
 * but its lookup is not a layer's output. Its DenseActDense lists wi, wo, dropout, act
 * and runs wi, act, dropout, wo: the dropout is read at the activation's width, between
 * it and wo. */
static void test_modtree_position_bias(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    int rc = parse_file("tests/fuzz/corpus/summary_modtree/t5_small.txt", &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    /* t5-small is 60,506,624 with the shared embedding (32128 x 512) tied three times,
     * which the print repeats: the stacks' embed_tokens are read as the shared table, the
     * head stays apart; its 32 T5LayerNorm() print no size: a scale of the width before
     * them, 512 */
    assert_int_equal(m.params, 60506624ull + 32128ull * 512);
    assert_int_equal(m.tied_params, 2 * 32128ull * 512);
    size_t bias = 0, ff = 0;
    for (size_t i = 0; i < m.n; i++) {
        const struct est_layer *l = &m.layers[i];
        if (l->params == 32 * 8) {
            bias++;
            assert_int_equal(l->kind, EST_K_OTHER);
            assert_int_equal(l->out, 0);
        }
        if (l->kind == EST_K_DROPOUT && l->out == 2048) {
            ff += l->count;
            assert_int_equal(l[-1].kind, EST_K_ACT);
            assert_int_equal(l[-1].out, 2048);
            assert_int_equal(l[1].kind, EST_K_LINEAR);
            assert_int_equal(l[1].params, 2048 * 512);
        } else if (l->kind == EST_K_NORM || l->kind == EST_K_DROPOUT) {
            assert_int_equal(l->out, 512);
        }
    }
    assert_int_equal(bias, 2);
    assert_int_equal(ff, 12);
}

static void test_csv_and_detect(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    assert_int_equal(parse_file("tests/fuzz/corpus/summary_csv/mlp.csv", &m, &err), 0);
    assert_int_equal(m.format, EST_FMT_CSV);
    assert_int_equal(m.input, 784);
    assert_int_equal(m.n, 4);
    assert_int_equal(m.layers[1].kind, EST_K_ACT);
    assert_int_equal(parse_file("tests/fuzz/corpus/summary_csv/transformer_block.csv", &m, &err), 0);
    assert_true(m.needs_seq);
    assert_true(parse_file("tests/fuzz/corpus/summary_csv/bad_number.csv", &m, &err) < 0);
    assert_string_equal(err.msg, "tests/fuzz/corpus/summary_csv/bad_number.csv:2: bad out_elems '12x'");
    assert_true(parse_str("hello world\nthis is not a summary\n", &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:1: not a model summary (expected a torchsummary or "
                                 "torchinfo table, a Keras model.summary(), a printed PyTorch "
                                 "module tree or a layer CSV)");
    assert_true(parse_str("", &m, &err) < 0);
    assert_true(parse_str("type,out_elems,params\rinput,784,0\rlinear,10,7850\r", &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:1: " CARMA_CR_ONLY_MSG);
    /* A row with per_token 0 is per sample, embed and attn rows too: an embedding with
     * no sequence (DLRM's EmbeddingBag tables) or a Keras Embedding's (None, 200, 128)
     * copied per sample; refusing them left such a model no honest route. Without the
     * column an embed or attn row is ambiguous, and read per sample a transformer's
     * would be far too small (a 38 GB bound became 4 GB "fits"): refused. */
    assert_true(parse_str("type,out_elems,params,count\ninput,13,0,1\n"
                          "EmbeddingBag,64,64000000,26\nLinear,1,1729,1\n", &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:3: an embed row in a CSV without a per_token column"));
    assert_true(parse_str("type,out_elems,params\nlinear,64,4160\nMultiheadAttention,4096,0\n",
                          &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:3: an attn row"));
    /* A class the classifier already reads keeps its kind (StdConv2d is a conv); only
     * what it reads as other is looked up among the tensor-making classes. A class named
     * like a layer but not one (ConvUpsample: a block) is refused. */
    assert_int_equal(parse_str("type,out_elems,params\ninput,3072,0\nStdConv2d,65536,448\n"
                               "Upsample,262144,0\n",
                               &m, &err),
                     0);
    assert_int_equal(m.layers[0].kind, EST_K_CONV);
    assert_int_equal(m.layers[1].kind, EST_K_POOL);
    assert_true(
        parse_str("type,out_elems,params\ninput,3072,0\nConvUpsample,65536,448\n", &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:3: 'ConvUpsample' (448 parameters) is named like a "
                                    "layer of kind conv"));
    assert_int_equal(parse_str("type,out_elems,params,count,per_token\ninput,13,0,1,0\n"
                               "EmbeddingBag,64,64000000,26,0\nLinear,1,1729,1,0\n", &m, &err), 0);
    assert_int_equal(m.layers[0].kind, EST_K_EMBED);
    assert_int_equal(m.layers[0].per_token, 0);
    assert_int_equal(m.layers[0].out, 64);
    assert_int_equal(m.params, 26ull * 64000000 + 1729);
    assert_false(m.needs_seq);
    assert_int_equal(parse_str("type,out_elems,params,per_token\nlinear,64,4160,1\n"
                               "MultiheadAttention,4096,0,0\n", &m, &err), 0);
    assert_int_equal(m.layers[1].kind, EST_K_ATTN);
    assert_int_equal(m.layers[1].per_token, 0);
    assert_int_equal(m.layers[1].attn, 0); /* not multiplied by --seq-len either */
    /* carma's own format: a type outside the kinds and their classes is a typo, refused
     * (it became other, no tensor: "cnov" took a CNN to the dense family, 2.8x lower) */
    assert_true(parse_str("type,out_elems,params\ninput,3072,0\ncnov,65536,448\n", &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:3: unknown layer type 'cnov': a layer CSV's type is "
                                 "input, linear, conv, norm, act, dropout, pool, softmax, embed, "
                                 "attn or other, or a PyTorch / Keras class (Conv2d, BatchNorm2d, "
                                 "ReLU, Dense, Add, Upsample, ZeroPadding2D, Flatten, ...: "
                                 "docs/estimator.md); write pool for another layer that makes a "
                                 "new tensor without weights (its out_elems counted), other for "
                                 "a view of its input");
    static const char *const typos[] = {"nrom", "add", "upsample", "ZeroPadding4D", "Padding2D",
                                        "ReflectionPad2"};
    for (size_t i = 0; i < sizeof typos / sizeof typos[0]; i++) {
        char csv[128];
        snprintf(csv, sizeof csv, "type,out_elems,params\nlinear,10,110\n%s,10,0\n", typos[i]);
        assert_true(parse_str(csv, &m, &err) < 0);
        assert_non_null(strstr(err.msg, "t.txt:3: unknown layer type '"));
    }
    /* Tensor-producing classes of no kind of their own are read as the Keras table and
     * module-tree readers read them (they were refused: a Keras ResNet stem's
     * ZeroPadding2D, a U-Net's Upsample) */
    static const struct {
        const char *type;
        int kind;
    } joins[] = {
        {"Add", EST_K_OTHER},           {"Concatenate", EST_K_OTHER},
        {"ZeroPadding1D", EST_K_OTHER}, {"ZeroPadding2D", EST_K_OTHER},
        {"ZeroPadding3D", EST_K_OTHER}, {"UpSampling1D", EST_K_OTHER},
        {"UpSampling2D", EST_K_OTHER},  {"UpSampling3D", EST_K_OTHER},
        {"Cropping2D", EST_K_OTHER},    {"PixelShuffle", EST_K_OTHER},
        {"ReflectionPad2d", EST_K_OTHER}, {"ReplicationPad1d", EST_K_OTHER},
        {"ZeroPad2d", EST_K_OTHER},     {"ConstantPad3d", EST_K_OTHER},
        {"Upsample", EST_K_POOL},       {"UpsamplingNearest2d", EST_K_POOL},
        {"UpsamplingBilinear2d", EST_K_POOL},
    };
    for (size_t i = 0; i < sizeof joins / sizeof joins[0]; i++) {
        char csv[128];
        snprintf(csv, sizeof csv, "type,out_elems,params\nConv2d,4096,448\n%s,8192,0\n",
                 joins[i].type);
        if (parse_str(csv, &m, &err))
            fail_msg("%s: %s", joins[i].type, err.msg);
        assert_int_equal(m.layers[1].kind, joins[i].kind);
        assert_int_equal(m.layers[1].out, 8192);
    }
    assert_int_equal(parse_str("type,out_elems,params\nConv2d,64,448\nflatten,64,0\n"
                               "OTHER,0,5\nbatch_normalization,64,128\nDense,10,650\n",
                               &m, &err), 0);
    assert_int_equal(m.n, 5);
    assert_int_equal(m.layers[1].kind, EST_K_OTHER);
    assert_int_equal(m.layers[2].kind, EST_K_OTHER);
    assert_int_equal(m.layers[3].kind, EST_K_NORM);
    assert_int_equal(m.layers[4].kind, EST_K_LINEAR);
    /* --seq-len and --image-size where nothing reads them are refused, as beside a table */
    struct est_result r;
    struct est_opts o = {.batch = 8, .seq = 128, .optimizer = EST_OPT_ADAMW};
    assert_int_equal(parse_file("tests/fuzz/corpus/summary_csv/mlp.csv", &m, &err), 0);
    assert_true(est_compute(&m, est_coef_default(), &o, &rwork, &r, &err) < 0);
    assert_string_equal(err.msg, "--seq-len sizes nothing in this layer CSV: no row has "
                                 "per_token 1; write per_token 1 on the rows whose out_elems "
                                 "are per token, or leave --seq-len out");
    o.seq = 0;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &r, &err), 0);
    assert_int_equal(parse_into("tests/fuzz/corpus/summary_csv/transformer_block.csv", 224, layers,
                                &m, &err), 0);
    o.seq = 128;
    assert_true(est_compute(&m, est_coef_default(), &o, &rwork, &r, &err) < 0);
    assert_non_null(strstr(err.msg, "--image-size does not apply to a layer CSV"));
    m.image_h = m.image_w = 0;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &r, &err), 0);
    assert_int_equal(parse_file("tests/fuzz/corpus/summary_modtree/mlp_params_suffix.txt", &m, &err), 0);
    assert_true(est_compute(&m, est_coef_default(), &o, &rwork, &r, &err) < 0);
    assert_non_null(strstr(err.msg, "--seq-len sizes nothing here: not a sequence model"));
    assert_int_equal(parse_into("tests/fuzz/corpus/summary_modtree/gpt2.txt", 224, layers, &m, &err), 0);
    assert_true(est_compute(&m, est_coef_default(), &o, &rwork, &r, &err) < 0);
    assert_non_null(strstr(err.msg, "--image-size sizes nothing here: no 2-D convolution"));
}

/* Format detection reads up to 64 KiB of any input before a parser runs (its cost is in
 * bench_estimate's parse figures, detection included). What it detects: nothing in 64 KiB
 * of prose, the first torchinfo header kind wherever it is, a tree row at the very end,
 * Keras's "(None" before torchsummary's "[-1". */
static void test_detect_prose(void **state)
{
    (void)state;
    static char buf[65536];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = i % 80 == 79 ? '\n' : "lorem ipsum dolor, sit amet "[i % 28];
    assert_int_equal(est_detect(buf, sizeof buf), EST_FMT_NONE);
    const char *two = "Layer (type)  Output Shape  Param #\n  Conv2d-1  [-1, 8]  80\n"
                      "Layer (type:depth-idx)  Output Shape  Param #\n";
    assert_int_equal(est_detect(two, strlen(two)), EST_FMT_TORCHINFO);
    const char *tree = "Layer (type)  Output Shape  Param #\nNet  [1, 8]  --\n"
                       "\xe2\x94\x9c\xe2\x94\x80Linear";
    assert_int_equal(est_detect(tree, strlen(tree)), EST_FMT_TORCHINFO);
    assert_int_equal(est_detect(tree, strlen(tree) - 6), EST_FMT_TORCHSUMMARY); /* "├─" */
    const char *kt = " Layer (type)   Output Shape   Param #\n dense (Dense)   (None, 8)   16\n"
                     " x [-1, 8]\n";
    assert_int_equal(est_detect(kt, strlen(kt)), EST_FMT_KERAS);
    assert_int_equal(est_detect(kt, 13), EST_FMT_TORCHSUMMARY);
}

/* A hand-computed case: one Linear(1000 -> 1000) + bias under adam fp32, batch 512. */
static void test_model_maths(void **state)
{
    (void)state;
    struct est_model m;
    struct est_result r;
    struct carma_err err;
    est_model_init(&m, layers, 16);
    assert_int_equal(est_model_add(&m, EST_K_LINEAR, 1000, 1001000, 1, 0), 0);
    struct est_coef c;
    memset(&c, 0, sizeof c);
    c.floor_mib[EST_FAM_DENSE] = 1000;
    c.kind[EST_FAM_DENSE][EST_K_LINEAR] = 1;
    c.transient[EST_FAM_DENSE] = 0.5;
    c.step[EST_FAM_DENSE] = 1;
    c.q[EST_FAM_DENSE] = 0.1;
    c.scale0_mib[EST_FAM_DENSE] = 100;
    struct est_opts o = {.batch = 512, .optimizer = EST_OPT_ADAM, .precision = EST_PREC_FP32,
                         .floor_src = EST_FLOOR_FITTED};
    assert_int_equal(est_compute(&m, &c, &o, &rwork, &r, &err), 0);
    /* params 1,001,000 x 4 B = 4,004,000 B -> 4,004,352 B (512 B blocks). */
    double pm = 4004352.0 / 1048576.0;
    assert_float_equal(r.weights_mib, pm, 1e-9);
    assert_float_equal(r.gradients_mib, pm, 1e-9);
    assert_float_equal(r.optimizer_mib, 2 * pm, 1e-9);
    /* 512 x 1000 x 4 B = 2,048,000 B (512 B multiple). */
    double am = 2048000.0 / 1048576.0;
    assert_float_equal(r.activations_mib, am, 1e-9);
    /* transient 0.5 x the largest output + step 1 x 1,001,000 x 4 B. */
    double step = 1001000.0 * 4 / 1048576.0;
    assert_float_equal(r.transient_mib, 0.5 * am + step, 1e-9);
    double est = 1000 + 4 * pm + am + 0.5 * am + step;
    assert_float_equal(r.estimate_mib, est, 1e-9);
    assert_float_equal(r.bound_mib, est + 0.1 * (100 + est - 1000), 1e-9);
    assert_true(r.fits);
    /* Mondrian: a band with enough calibration scores uses its own quantile. */
    c.qband[EST_FAM_DENSE][0] = 0.05;
    c.ncalband[EST_FAM_DENSE][0] = EST_BAND_MIN;
    assert_int_equal(est_compute(&m, &c, &o, &rwork, &r, &err), 0);
    assert_float_equal(r.bound_mib, est + 0.05 * (100 + est - 1000), 1e-9);
    /* ... except with a measured floor (another environment): the pooled one. */
    o.floor_src = EST_FLOOR_GIVEN;
    o.floor_mib = 500;
    assert_int_equal(est_compute(&m, &c, &o, &rwork, &r, &err), 0);
    assert_float_equal(r.floor_mib, 500, 1e-9);
    assert_float_equal(r.estimate_mib, est - 500, 1e-9);
    assert_float_equal(r.bound_mib, est - 500 + 0.1 * (100 + est - 1000), 1e-9);
    o.floor_mib = 0;
    assert_true(est_compute(&m, &c, &o, &rwork, &r, &err) < 0);
    assert_string_equal(err.msg, "a given floor must be above 0 MiB");
    /* The default floor: the estimate stands on EST_ENV_FLOOR_MIB, and the bound is
     * the larger of the bounds on that floor and on the fitted one. */
    o.floor_src = EST_FLOOR_DEFAULT;
    assert_int_equal(est_compute(&m, &c, &o, &rwork, &r, &err), 0);
    double dyn = est - 1000;
    assert_float_equal(r.floor_mib, EST_ENV_FLOOR_MIB, 1e-9);
    assert_float_equal(r.estimate_mib, EST_ENV_FLOOR_MIB + dyn, 1e-9);
    assert_float_equal(r.bound_mib, est + 0.05 * (100 + dyn), 1e-9); /* fitted is larger */
    c.floor_mib[EST_FAM_DENSE] = 100; /* a table whose fitted floor is below the default */
    assert_int_equal(est_compute(&m, &c, &o, &rwork, &r, &err), 0);
    assert_float_equal(r.bound_mib, EST_ENV_FLOOR_MIB + dyn + 0.05 * (100 + dyn), 1e-9);
    c.floor_mib[EST_FAM_DENSE] = 1000;
    o.floor_src = EST_FLOOR_FITTED;
    c.ncalband[EST_FAM_DENSE][0] = EST_BAND_MIN - 1;
    assert_int_equal(est_compute(&m, &c, &o, &rwork, &r, &err), 0);
    assert_float_equal(r.bound_mib, est + 0.1 * (100 + est - 1000), 1e-9);
    /* sgd: no state and no step temporaries; amp: 16-bit activations, weight copies. */
    o.optimizer = EST_OPT_SGD;
    o.precision = EST_PREC_AMP;
    assert_int_equal(est_compute(&m, &c, &o, &rwork, &r, &err), 0);
    assert_float_equal(r.optimizer_mib, 0, 1e-9);
    assert_float_equal(r.weights_mib, pm + 2002432.0 / 1048576.0, 1e-9); /* 512 B blocks */
    assert_float_equal(r.activations_mib, 1024000.0 / 1048576.0, 1e-9); /* 512 B blocks */
    /* fits: a bound over the GPU does not fit */
    o.gpu_mib = 1000;
    assert_int_equal(est_compute(&m, &c, &o, &rwork, &r, &err), 0);
    assert_false(r.fits);
    /* errors */
    o.batch = 0;
    assert_true(est_compute(&m, &c, &o, &rwork, &r, &err) < 0);
    assert_string_equal(err.msg, "batch size must be at least 1");
    o.batch = 1;
    m.needs_seq = 1;
    m.needs_seq_line = 7;
    assert_true(est_compute(&m, &c, &o, &rwork, &r, &err) < 0);
    assert_string_equal(err.msg, "this is a sequence model (line 7): give --seq-len");
}

/* est_max_batch: the batch it gives fits and the next does not, by est_compute's own
 * answers, for the per-kind model (monotone in the batch: every smaller batch fits) and the
 * replay (not strictly monotone); none fits; the cap; no GPU memory. */
static void test_max_batch(void **state)
{
    (void)state;
    struct est_model m;
    struct est_result r, next, t;
    struct carma_err err;
    uint32_t b;
    /* ResNet-50 (conv family: the per-kind terms) on 16 GiB */
    assert_int_equal(
        parse_file("tests/fuzz/corpus/summary_torchinfo/resnet50_b32.txt", &m, &err), 0);
    struct est_opts o = {.batch = 7, .optimizer = EST_OPT_ADAMW, .gpu_mib = 16384};
    assert_int_equal(est_max_batch(&m, est_coef_default(), &o, &rwork, &b, &r, &next, &err), 0);
    assert_true(b > 1 && b < 1000);
    for (uint32_t k = 1; k <= b + 1; k++) {
        o.batch = k;
        assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &t, &err), 0);
        assert_int_equal(t.fits, k <= b);
        if (k == b)
            assert_float_equal(t.bound_mib, r.bound_mib, 1e-9);
        if (k == b + 1)
            assert_float_equal(t.bound_mib, next.bound_mib, 1e-9);
    }
    assert_true(next.bound_mib > 16384 && r.bound_mib <= 16384);
    /* GPUMemNet's MLP (the replay) on a V100 */
    assert_int_equal(parse_file("tests/fuzz/corpus/summary_csv/mlp_gpumemnet.csv", &m, &err), 0);
    o.gpu_mib = 32768;
    assert_int_equal(est_max_batch(&m, est_coef_default(), &o, &rwork, &b, &r, &next, &err), 0);
    assert_true(b > 1 && b < EST_MAX_BATCH);
    o.batch = b;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &t, &err), 0);
    assert_true(t.fits);
    assert_float_equal(t.estimate_mib, r.estimate_mib, 1e-9);
    o.batch = b + 1;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &t, &err), 0);
    assert_false(t.fits);
    assert_float_equal(t.bound_mib, next.bound_mib, 1e-9);
    /* nothing fits: batch 0, batch 1's estimate */
    o.gpu_mib = 100;
    assert_int_equal(est_max_batch(&m, est_coef_default(), &o, &rwork, &b, &r, &next, &err), 0);
    assert_int_equal(b, 0);
    assert_false(r.fits);
    assert_true(r.bound_mib > 100);
    assert_float_equal(next.bound_mib, 0, 0);
    /* everything fits: the cap, no next */
    est_model_init(&m, layers, 16);
    assert_int_equal(est_model_add(&m, EST_K_LINEAR, 10, 110, 1, 0), 0);
    struct est_coef c;
    memset(&c, 0, sizeof c);
    c.kind[EST_FAM_DENSE][EST_K_LINEAR] = 1;
    o.gpu_mib = 1e12;
    assert_int_equal(est_max_batch(&m, &c, &o, &rwork, &b, &r, &next, &err), 0);
    assert_int_equal(b, EST_MAX_BATCH);
    assert_true(r.fits);
    assert_float_equal(next.bound_mib, 0, 0);
    o.gpu_mib = 0;
    assert_true(est_max_batch(&m, &c, &o, &rwork, &b, &r, &next, &err) < 0);
    assert_string_equal(err.msg, "the largest batch needs a GPU's memory");
}

#define MB (1024.0 * 1024.0)

/* The allocator model: PyTorch's rounding, segment sizes, split thresholds, best fit
 * and merging. */
static void test_replay_allocator(void **state)
{
    (void)state;
    struct est_replay_work *w = &rwork;
    est_replay_reset(w);
    uint32_t a = est_replay_malloc(w, 100, EST_RC_ACT);       /* small: a 2 MiB segment */
    uint32_t b = est_replay_malloc(w, 700, EST_RC_ACT);       /* shares it, 1024 B */
    assert_int_equal(w->b[a].size, 512);
    assert_int_equal(w->b[b].size, 1024);
    assert_float_equal(w->reserved, 2 * MB, 0);
    uint32_t c = est_replay_malloc(w, 1048577, EST_RC_WEIGHTS); /* > 1 MiB: a 20 MiB one */
    assert_float_equal(w->reserved, 22 * MB, 0);
    assert_int_equal(w->b[c].size, 1048576 + 512);
    uint32_t d = est_replay_malloc(w, 5 * 1048576, EST_RC_GRADS); /* split from the rest */
    assert_float_equal(w->reserved, 22 * MB, 0);
    /* 15 MiB does not fit the 14 MiB left: its own segment in 2 MiB steps, whole (a
     * remainder of up to 1 MiB is not split off in the large pool). */
    uint32_t e = est_replay_malloc(w, 15 * 1048576 + 1, EST_RC_STATE);
    assert_float_equal(w->reserved, 38 * MB, 0);
    assert_int_equal(w->b[e].size, 16 * 1048576);
    assert_float_equal(w->allocated, 512 + 1024 + 1048576 + 512 + 5 * MB + 16 * MB, 0);
    assert_float_equal(w->cat[EST_RC_ACT], 1536, 0);
    /* Freed blocks merge back into the whole 20 MiB segment, which a 19 MiB request
     * then takes whole. */
    est_replay_unref(w, c);
    est_replay_unref(w, d);
    uint32_t f = est_replay_malloc(w, 19 * 1048576, EST_RC_ACT);
    assert_float_equal(w->reserved, 38 * MB, 0);
    assert_int_equal(w->b[f].size, 20 * 1048576);
    /* Best fit: of free 16 MiB and 20 MiB blocks, a 3 MiB request takes the smaller. */
    uint64_t eaddr = w->b[e].addr;
    est_replay_unref(w, e);
    est_replay_unref(w, f);
    uint32_t g = est_replay_malloc(w, 3 * 1048576, EST_RC_ACT);
    assert_int_equal(w->b[g].addr, eaddr);
    assert_float_equal(w->peak, 38 * MB, 0);
    assert_float_equal(w->peak_cat[EST_RC_STATE], 16 * MB, 0);
    /* A reference keeps a block alive. */
    est_replay_unref(w, a);
    assert_float_equal(w->cat[EST_RC_ACT], 1024 + 3 * MB, 0);
}

/* Every free list in the allocator's order (size, then address), its head, tail and
 * finger on it. */
static void free_lists_check(const struct est_replay_work *w)
{
    for (unsigned l = 0; l < 2 * EST_REPLAY_NCLASS; l++) {
        if (!(w->nonempty[l / 64] >> (l % 64) & 1))
            continue;
        unsigned prev = 0xffffu, finger = 0;
        for (unsigned i = w->free_head[l]; i != 0xffffu; prev = i, i = w->b[i].fnext) {
            assert_int_equal(w->b[i].fprev, prev);
            assert_int_equal(w->b[i].cls, l);
            assert_true(w->b[i].is_free);
            if (prev != 0xffffu)
                assert_true(w->b[prev].size < w->b[i].size ||
                            (w->b[prev].size == w->b[i].size && w->b[prev].addr < w->b[i].addr));
            finger |= i == w->finger[l];
        }
        assert_int_equal(w->free_tail[l], prev);
        assert_true(finger);
    }
}

/* Blocks freed out of address order go in the middle of long lists of one size, from
 * either side of the block put on them before (the walk starts there, est_replay_work's
 * finger), and they leave them again, the finger moving to a neighbour. */
static void test_replay_free_lists(void **state)
{
    (void)state;
    struct est_replay_work *w = &rwork;
    est_replay_reset(w);
    enum { N = 240 };
    static uint32_t held[N], freed[N];
    for (unsigned i = 0; i < N; i++) { /* 3 MiB blocks, a held one between freed ones */
        held[i] = est_replay_malloc(w, 3 * MB, EST_RC_ACT);
        freed[i] = est_replay_malloc(w, (i % 3 + 2) * MB, EST_RC_ACT);
    }
    for (unsigned k = 0; k < N; k++) { /* 97 is prime to N: each once, out of order */
        est_replay_unref(w, freed[k * 97 % N]);
        if (k % 16 == 0)
            free_lists_check(w);
    }
    free_lists_check(w);
    /* best fit: the lowest address of the smallest free block that holds a request */
    uint64_t size = UINT64_MAX, addr = 0;
    for (unsigned l = 0; l < 2 * EST_REPLAY_NCLASS; l++)
        for (unsigned i = w->free_head[l]; (w->nonempty[l / 64] >> (l % 64) & 1) && i != 0xffffu;
             i = w->b[i].fnext)
            if (w->b[i].size >= 2 * MB &&
                (w->b[i].size < size || (w->b[i].size == size && w->b[i].addr < addr))) {
                size = w->b[i].size;
                addr = w->b[i].addr;
            }
    uint32_t a = est_replay_malloc(w, 2 * MB, EST_RC_ACT);
    assert_int_equal(w->b[a].addr, addr);
    free_lists_check(w);
    for (unsigned k = 0; k < N; k++) { /* and merged with their neighbours again */
        est_replay_unref(w, held[k * 89 % N]);
        if (k % 16 == 0)
            free_lists_check(w);
    }
    free_lists_check(w);
}

/* Two rows repeated 4024 and 12 times (a layer CSV of 88 bytes, which carmad takes in a
 * job.summary): the remainders of their gradients' segments, thousands of one size, go in
 * a third of the way into their free list, which a walk from its tail made each estimate
 * take 0.5 s with DDP (1.9 s accumulating gradients; bench_estimate times it now). The
 * walk from the finger gives the estimate the walk from the tail gave. */
static void test_replay_long_free_lists(void **state)
{
    (void)state;
    static const char csv[] = "type,out_elems,params,count,per_token\n"
                              "embed,499,2738960,4024,1\nlinear,3071,2362368,12,1\n";
    struct est_model m;
    struct carma_err err;
    est_model_init(&m, layers, 16);
    assert_int_equal(est_parse_csv(csv, sizeof csv - 1, "t.csv", &m, &err), 0);
    struct est_opts o = {.batch = 64, .seq = 512, .optimizer = EST_OPT_ADAMW, .gpus = 2};
    struct est_result r;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &r, &err), 0);
    assert_true(fabs(r.estimate_mib - 285078.5784) < 0.001);
}

/* One 1024 -> 1536 linear layer (6 MiB weight, 6 KiB bias) fed 1024 features. */
static void parse_linear_1536(struct est_model *m)
{
    static const char csv[] = "type,out_elems,params\ninput,1024,0\nlinear,1536,1574400\n";
    struct carma_err err;
    est_model_init(m, layers, 16);
    assert_int_equal(est_parse_csv(csv, sizeof csv - 1, "t.csv", m, &err), 0);
}

/* Training steps of one 1024 -> 1536 linear layer at batch 1: its 6 MiB weight,
 * gradient, optimizer state and temporaries and the two 8.125 MiB cuBLAS workspaces fill
 * 20 MiB segments; everything else fits one 2 MiB small segment. Worked by hand: W and
 * the forward's workspace share the first segment (5.875 MiB left), the backward's
 * workspace opens a second, where G goes (5.875 left): 42 MiB. SGD's weight-decay list
 * (the decayed gradient D) fits neither remainder (a third: 62, at the step), nor do
 * momentum's D and buffer (a third, 8 left), nor Adam's S1 S2 T (a third: 2 left);
 * Adadelta's S1 S2 D fill a third, its std and deltas open a fourth. */
static void test_replay_linear(void **state)
{
    (void)state;
    struct est_model m;
    parse_linear_1536(&m);
    static const struct {
        enum est_optimizer opt;
        double peak;
    } cases[] = {{EST_OPT_SGD, 62}, {EST_OPT_MOMENTUM, 62}, {EST_OPT_ADAM, 62},
                 {EST_OPT_ADAMW, 62}, {EST_OPT_ADADELTA, 82}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct est_opts o = {.batch = 1, .optimizer = cases[i].opt};
        struct est_replay_result r;
        assert_int_equal(est_replay(&m, &o, &rwork, &r), 0);
        assert_float_equal(r.peak_mib, cases[i].peak, 1e-9);
        double sum = r.cached_mib;
        for (int k = 0; k < EST_RC_COUNT; k++)
            sum += r.cat_mib[k];
        assert_float_equal(sum, r.peak_mib, 1e-9);
    }
    /* At Adam's peak (its states' segment, first step): weight, gradient, both states,
     * sqrt. SGD's is its weight-decay list's segment, at the step. */
    struct est_opts o = {.batch = 1, .optimizer = EST_OPT_ADAM};
    struct est_replay_result r;
    assert_int_equal(est_replay(&m, &o, &rwork, &r), 0);
    assert_int_equal(r.peak_phase, EST_RP_STEP);
    assert_int_equal(r.peak_iteration, 1);
    assert_string_equal(est_replay_phase_name(EST_RP_STEP), "optimizer step");
    assert_true(r.cat_mib[EST_RC_WEIGHTS] >= 6 && r.cat_mib[EST_RC_GRADS] >= 6);
    assert_true(r.cat_mib[EST_RC_STATE] >= 6);
    o.optimizer = EST_OPT_SGD;
    assert_int_equal(est_replay(&m, &o, &rwork, &r), 0);
    assert_int_equal(r.peak_phase, EST_RP_STEP);
    assert_int_equal(r.peak_iteration, 1);
    assert_true(r.cat_mib[EST_RC_TRANSIENT] >= 2 * 8.125 + 6); /* the workspaces and D */
    /* Hopper's 32 MiB workspaces are segments of their own: sgd 22 + 2 x 32 (G and D fit
     * the weight's segment); momentum's buffer opens a 20 MiB segment after D, and so
     * does Adam's S2 (where T fits too) and Adadelta's S2 (where D, std fit; deltas a
     * third). */
    o.cublas_workspace_kib = EST_CUBLAS_WS_HOPPER_KIB;
    assert_int_equal(est_replay(&m, &o, &rwork, &r), 0);
    assert_float_equal(r.peak_mib, 86, 1e-9);
    static const struct {
        enum est_optimizer opt;
        double peak;
    } hopper[] = {{EST_OPT_MOMENTUM, 106}, {EST_OPT_ADAM, 106}, {EST_OPT_ADADELTA, 126}};
    for (size_t i = 0; i < sizeof hopper / sizeof hopper[0]; i++) {
        o.optimizer = hopper[i].opt;
        assert_int_equal(est_replay(&m, &o, &rwork, &r), 0);
        assert_float_equal(r.peak_mib, hopper[i].peak, 1e-9);
    }
}

/* Reserved memory only grows, and it can still grow after iterations that reserved
 * nothing: 256 -> 128 -> 768 -> 672 (ReLUs between) at batch 128 with Adam reserves
 * 44 MiB in its first two iterations, nothing in the next three, and a 2 MiB segment
 * in the sixth, where the state its outputs, batch and gradients drift through first
 * runs short of a free block. The replay goes on until an iteration leaves the state an
 * earlier one left (the outputs' block, reserved bytes, the bytes never freed), from
 * where it only repeats itself: it stops after the eighth, and any longer replay
 * reserves the same. A single 1000 -> 721 layer at
 * batch 128: 42 MiB in two iterations, 44 in the third after a second that reserved
 * nothing. */
static void test_replay_iterations(void **state)
{
    (void)state;
    static const struct {
        const char *csv;
        uint32_t batch;
        enum est_optimizer opt;
        double peak, two; /* MiB: the replay's, and after two iterations */
        int peak_it, ran;
    } cases[] = {
        {"type,out_elems,params\ninput,256,0\nlinear,128,32896\nrelu,128,0\n"
         "linear,768,99072\nrelu,768,0\nlinear,672,516768\n",
         128, EST_OPT_ADAM, 46, 44, 6, 8},
        {"type,out_elems,params\ninput,1000,0\nlinear,721,721721\n", 128, EST_OPT_ADAM, 44, 42, 3,
         5},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct est_model m;
        struct carma_err err;
        est_model_init(&m, layers, 16);
        assert_int_equal(est_parse_csv(cases[i].csv, strlen(cases[i].csv), "t.csv", &m, &err), 0);
        struct est_opts o = {.batch = cases[i].batch, .optimizer = cases[i].opt};
        struct est_replay_result r;
        assert_int_equal(est_replay(&m, &o, &rwork, &r), 0);
        assert_float_equal(r.peak_mib, cases[i].peak, 1e-9);
        assert_int_equal(r.peak_iteration, cases[i].peak_it);
        assert_int_equal(rwork.iteration, cases[i].ran);
        o.replay_iterations = 2;
        assert_int_equal(est_replay(&m, &o, &rwork, &r), 0);
        assert_float_equal(r.peak_mib, cases[i].two, 1e-9);
        for (uint32_t n = (uint32_t)cases[i].ran; n <= EST_REPLAY_MAX_ITERS; n++) {
            o.replay_iterations = n;
            assert_int_equal(est_replay(&m, &o, &rwork, &r), 0);
            assert_float_equal(r.peak_mib, cases[i].peak, 1e-9);
        }
    }
    /* Stopping where the state repeats gives what the longest replay gives: a sweep of
     * BERT-base (the repository's print) over batches, optimizers, precisions,
     * checkpointing and DDP, each stopped by the rule and run EST_REPLAY_MAX_ITERS
     * times. Most stop after four iterations or five, a few run to the cap. */
    struct est_model m;
    struct carma_err err;
    assert_int_equal(parse_file("tests/fuzz/corpus/summary_modtree/bert_base.txt", &m, &err), 0);
    size_t grew = 0, runs = 0, early = 0;
    for (uint32_t b = 1; b <= 16; b += 3)
        for (int opt = 0; opt < EST_OPT_COUNT; opt++)
            for (int prec = 0; prec < EST_PREC_COUNT; prec++)
                for (int gc = 0; gc < 2; gc++)
                    for (uint32_t gpus = 1; gpus <= 2; gpus++) {
                        struct est_opts o = {.batch = b, .seq = 128,
                                             .optimizer = (enum est_optimizer)opt,
                                             .precision = (enum est_precision)prec,
                                             .grad_checkpoint = gc, .gpus = gpus};
                        struct est_replay_result r, full, two;
                        assert_int_equal(est_replay(&m, &o, &rwork, &r), 0);
                        early += rwork.iteration <= 5;
                        o.replay_iterations = EST_REPLAY_MAX_ITERS;
                        assert_int_equal(est_replay(&m, &o, &rwork, &full), 0);
                        assert_float_equal(r.peak_mib, full.peak_mib, 1e-9);
                        assert_int_equal(r.peak_iteration, full.peak_iteration);
                        o.replay_iterations = 2;
                        assert_int_equal(est_replay(&m, &o, &rwork, &two), 0);
                        grew += r.peak_mib > two.peak_mib;
                        runs++;
                    }
    assert_true(grew > 0 && grew < runs);
    assert_true(early > runs / 2);
}

/* The bound's size bands were calibrated on GPUMemNet's MLPs and CNNs, which have no
 * attention; a model with attention (shown, or a table's q, k, v, or a token table) is
 * bounded with its family's pooled quantile in every band. BERT-base's print at batch 4,
 * sequence 128 has a dynamic part of 2.3 GiB, in the 1-4 GiB band, whose MLP quantile
 * (0.03) left it a margin of about 70 MiB, the pooled one (0.15) 360. */
static void test_bound_attention(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const struct est_coef *c = est_coef_default();
    assert_int_equal(parse_file("tests/fuzz/corpus/summary_modtree/bert_base.txt", &m, &err), 0);
    assert_true(est_model_has_attention(&m));
    struct est_opts o = {.batch = 4, .seq = 128, .optimizer = EST_OPT_ADAMW};
    struct est_result r;
    assert_int_equal(est_compute(&m, c, &o, &rwork, &r, &err), 0);
    double dyn = r.estimate_mib - r.floor_mib, fitted = c->floor_mib[EST_FAM_DENSE];
    assert_int_equal(est_band_of(dyn), 2);
    assert_true(c->ncalband[EST_FAM_DENSE][2] >= EST_BAND_MIN);
    assert_true(c->qband[EST_FAM_DENSE][2] < c->q[EST_FAM_DENSE]);
    /* the default floor's bound is the fitted environment's, with the pooled q */
    double pooled = fitted + dyn + c->q[EST_FAM_DENSE] * (c->scale0_mib[EST_FAM_DENSE] + dyn);
    assert_float_equal(r.bound_mib, pooled, 1e-6);
    assert_true(r.bound_mib > est_bound(c, EST_FAM_DENSE, fitted + dyn, dyn, 1) + 250);
    o.floor_src = EST_FLOOR_FITTED;
    assert_int_equal(est_compute(&m, c, &o, &rwork, &r, &err), 0);
    assert_float_equal(r.bound_mib, pooled, 1e-6);

    /* What counts as attention. The ViT's torchinfo table under SDPA lists neither
     * probabilities nor an embedding: its q, k, v are three linear rows alike. */
    assert_int_equal(parse_file("tests/fuzz/corpus/summary_torchinfo/vit_b16_b64.txt", &m, &err),
                     0);
    assert_true(est_model_has_attention(&m));
    static const char *const csvs[] = {
        /* an MLP: no */
        "type,out_elems,params\ninput,1024,0\nlinear,1024,1049600\nrelu,1024,0\n"
        "linear,1024,1049600\nrelu,1024,0\nlinear,10,10250\n",
        /* two linear layers alike in a row, a third of another size: no */
        "type,out_elems,params\ninput,512,0\nlinear,512,262656\nlinear,512,262656\n"
        "linear,10,5130\n",
        /* three alike in a row: q, k, v */
        "type,out_elems,params\ninput,512,0\nlinear,512,262656\nlinear,512,262656\n"
        "linear,512,262656\nlinear,10,5130\n",
        /* a token table */
        "type,out_elems,params,count,per_token\nembedding,512,16384000,1,1\n"
        "linear,512,262656,1,1\nrelu,512,0,1,1\nlinear,10,5130,1,1\n",
    };
    static const int want[] = {0, 0, 1, 1};
    for (size_t i = 0; i < sizeof csvs / sizeof csvs[0]; i++) {
        est_model_init(&m, layers, EST_MAX_LAYERS);
        assert_int_equal(est_parse_csv(csvs[i], strlen(csvs[i]), "t.csv", &m, &err), 0);
        assert_int_equal(est_model_has_attention(&m), want[i]);
    }
    /* The MLP of the same size band keeps its band's quantile. */
    est_model_init(&m, layers, EST_MAX_LAYERS);
    assert_int_equal(est_parse_csv(csvs[0], strlen(csvs[0]), "t.csv", &m, &err), 0);
    o = (struct est_opts){.batch = 65536, .optimizer = EST_OPT_ADAMW};
    assert_int_equal(est_compute(&m, c, &o, &rwork, &r, &err), 0);
    dyn = r.estimate_mib - r.floor_mib;
    assert_int_equal(est_band_of(dyn), 2);
    assert_float_equal(r.bound_mib, est_bound(c, EST_FAM_DENSE, fitted + dyn, dyn, 1), 1e-6);

    /* None of the calibration runs counts as having attention. */
    static const char *const data[] = {"data/estimator/gpumemnet-mlp.csv",
                                       "data/estimator/gpumemnet-cnn-early.csv"};
    for (size_t d = 0; d < 2; d++) {
        char *buf;
        size_t len, rows = 0;
        assert_int_equal(carma_file_read(data[d], 1 << 24, &buf, &len, &err), 0);
        struct carma_csv *csv = malloc(sizeof *csv);
        assert_non_null(csv);
        carma_csv_init(csv, buf, len, data[d], ',');
        assert_int_equal(carma_csv_next(csv, &err), 1);
        int col = carma_csv_col(csv, "Activations-Params");
        assert_true(col >= 0);
        while (carma_csv_next(csv, &err) == 1) {
            const char *t = csv->field[col];
            if (strcmp(t, "[]") == 0)
                continue;
            est_model_init(&m, layers, EST_MAX_LAYERS);
            assert_int_equal(est_tuples_parse(t, strlen(t), data[d], csv->line, &m, &err), 0);
            assert_false(est_model_has_attention(&m));
            rows++;
        }
        assert_true(rows > 1000);
        free(csv);
        free(buf);
    }
}

/* Autocast runs cross-entropy in fp32: the 16-bit logits are cast for it, and the
 * log-softmax's gradient is fp32 before it is cast back. One 1024 -> 1536 layer at batch
 * 65536 (its output 384 MiB in fp32): at the peak, the loss's gradient and the
 * log-softmax's, both fp32 (768 MiB) besides the two 8.125 MiB workspaces, as in fp32
 * training; the kept log-softmax is fp32 and the logits 16-bit. The layer keeps
 * autocast's 16-bit copy of its fp32 input (128 MiB) for its weight's gradient. */
static void test_replay_autocast_loss(void **state)
{
    (void)state;
    struct est_model m;
    parse_linear_1536(&m);
    struct est_replay_result f32, b16;
    struct est_opts o = {.batch = 65536, .optimizer = EST_OPT_SGD};
    assert_int_equal(est_replay(&m, &o, &rwork, &f32), 0);
    o.precision = EST_PREC_BF16;
    assert_int_equal(est_replay(&m, &o, &rwork, &b16), 0);
    assert_true(fabs(f32.cat_mib[EST_RC_TRANSIENT] - (768 + 16.25)) < 0.01);
    assert_true(fabs(b16.cat_mib[EST_RC_TRANSIENT] - (768 + 16.25)) < 0.01);
    /* input 256 (fp32; and its 16-bit copy), logits 384 / 192, log-softmax 384 */
    assert_true(fabs(f32.cat_mib[EST_RC_ACT] - (256 + 384 + 384)) < 1);
    assert_true(fabs(b16.cat_mib[EST_RC_ACT] - (256 + 128 + 192 + 384)) < 1);
    assert_int_equal(b16.peak_phase, EST_RP_BACKWARD);
}

/* Replays a layer CSV at batch 65536 (a 1024-wide tensor: 256 MiB in fp32), sgd, with
 * layers shared..shared + nshared - 1 marked as reading the input of the linear layer
 * before them (key and value projections) and layer `gated` as a gated MLP's up
 * projection (0: none); returns the forward tensors live at the peak, MiB. */
static double autocast_act(const char *csv, enum est_precision p, size_t shared,
                           size_t nshared, size_t gated)
{
    struct est_model m;
    struct carma_err err;
    est_model_init(&m, layers, 16);
    assert_int_equal(est_parse_csv(csv, strlen(csv), "t.csv", &m, &err), 0);
    for (size_t i = shared; i < shared + nshared; i++)
        m.layers[i].shares_input = 1;
    if (gated)
        m.layers[gated].flags |= EST_LF_GATED;
    struct est_opts o = {.batch = 65536, .optimizer = EST_OPT_SGD, .precision = p};
    struct est_replay_result r;
    assert_int_equal(est_replay(&m, &o, &rwork, &r), 0);
    assert_int_equal(r.peak_phase, EST_RP_BACKWARD); /* at the loss: all that was kept */
    return r.cat_mib[EST_RC_ACT];
}

/* Attention whose keys and values a strided convolution reduces (PVT v2, SegFormer): the
 * queries at every position of a stage, at any stride, the keys at the reduced positions,
 * whose side the 1/16 gate checks; the convolution, listed after the projections, reads
 * the block's input, and the block gives back its input's shape. */
static void test_modtree_reduced_keys(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    /* timm's PVT v2 b1 (H100: 0.96 of its peak, was refused): q, kv, proj, sr, norm */
    if (parse_into("data/estimator/gpu-peaks-h100/pvt_v2_b1_b64.txt", 224, layers, &m, &err))
        fail_msg("%s", err.msg);
    {
        static const uint64_t per_stage[] = {2 * 3136 * 49, 4 * 784 * 49, 10 * 196 * 49,
                                             16 * 49 * 49};
        size_t s = 0;
        for (size_t i = 0; i < m.n; i++)
            if (m.layers[i].kind == EST_K_ATTN) {
                assert_true(s < 4);
                assert_int_equal(m.layers[i].out, per_stage[s++]);
            }
        assert_int_equal(s, 4);
        size_t at = 0;
        while (m.layers[at].kind != EST_K_ATTN)
            at++;
        assert_int_equal(m.layers[at - 7].out, 64 * 3136); /* q */
        assert_int_equal(m.layers[at - 6].out, 128 * 49);  /* kv, reduced */
        assert_int_equal(m.layers[at - 4].out, 64 * 3136); /* proj */
        assert_int_equal(m.layers[at - 2].out, 64 * 49);   /* sr, on the block input */
        assert_int_equal(m.layers[at - 2].kind, EST_K_CONV);
        assert_int_equal(m.layers[at - 1].out, 64 * 49);    /* its norm */
        assert_int_equal(m.layers[at + 2].out, 64 * 3136);  /* norm2: full size again */
        assert_int_equal(m.layers[at + 3].out, 512 * 3136); /* the MLP's fc1 */
        assert_int_equal(m.positions_sr, 8);
        assert_int_equal(m.positions_keys, 49);
        assert_int_equal(notes_with(&m, "reduced by a convolution of stride 8 (every position "
                                        "attends to 49; later stages' strides as printed)"),
                         1);
    }
    /* transformers' SegFormer (q_proj, k_proj, v_proj, o_proj, then sequence_reduction) */
    if (parse_into("data/estimator/gpu-peaks-h200/hf_segformer_b0_b64.txt", 224, layers, &m, &err))
        fail_msg("%s", err.msg);
    {
        size_t at = 0;
        while (m.layers[at].kind != EST_K_ATTN)
            at++;
        assert_int_equal(m.layers[at].out, 3136 * 49);     /* one head of 32 */
        assert_int_equal(m.layers[at - 3].out, 32 * 3136); /* q_proj */
        assert_int_equal(m.layers[at - 2].out, 32 * 49);   /* k_proj */
        assert_int_equal(m.layers[at - 1].out, 32 * 49);   /* v_proj */
        assert_int_equal(m.layers[at + 1].out, 32 * 3136); /* o_proj */
        assert_int_equal(m.layers[at + 2].out, 32 * 49);   /* the reduction */
        assert_int_equal(m.layers[m.n - 1].out, 1000);
    }
    /* the older layout: SegformerEfficientSelfAttention (query, key, value, sr, layer_norm)
     * inside SegformerAttention beside its output block; the value's output has the
     * channels of the reduction's input, which still reads the block input */
#define SR_TOY(k, v, sr)                                                                           \
    "Segformer(\n"                                                                                 \
    "  (patch): Conv2d(3, 32, kernel_size=(7, 7), stride=(4, 4), padding=(3, 3))\n"                \
    "  (layer): SegformerLayer(\n"                                                                 \
    "    (layer_norm_1): LayerNorm((32,), eps=1e-05, elementwise_affine=True)\n"                   \
    "    (attention): SegformerAttention(\n"                                                       \
    "      (self): SegformerEfficientSelfAttention(\n"                                             \
    "        (query): Linear(in_features=32, out_features=32, bias=True)\n"                        \
    "        (" k "): Linear(in_features=32, out_features=32, bias=True)\n"                        \
    "        (" v "): Linear(in_features=32, out_features=32, bias=True)\n"                        \
    "        (dropout): Dropout(p=0.0, inplace=False)\n"                                           \
    "        (sr): Conv2d(" sr ")\n"                                                               \
    "        (layer_norm): LayerNorm((32,), eps=1e-05, elementwise_affine=True)\n"                 \
    "      )\n"                                                                                    \
    "      (output): SegformerSelfOutput(\n"                                                       \
    "        (dense): Linear(in_features=32, out_features=32, bias=True)\n"                        \
    "        (dropout): Dropout(p=0.0, inplace=False)\n"                                           \
    "      )\n"                                                                                    \
    "    )\n"                                                                                      \
    "    (layer_norm_2): LayerNorm((32,), eps=1e-05, elementwise_affine=True)\n"                   \
    "    (mlp): SegformerMixFFN(\n"                                                                \
    "      (dense1): Linear(in_features=32, out_features=128, bias=True)\n"                        \
    "      (dwconv): SegformerDWConv(\n"                                                           \
    "        (dwconv): Conv2d(128, 128, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), "       \
    "groups=128)\n"                                                                                \
    "      )\n"                                                                                    \
    "      (intermediate_act_fn): GELUActivation()\n"                                              \
    "      (dense2): Linear(in_features=128, out_features=32, bias=True)\n"                        \
    "      (dropout): Dropout(p=0.0, inplace=False)\n"                                             \
    "    )\n"                                                                                      \
    "  )\n"                                                                                        \
    "  (classifier): Linear(in_features=32, out_features=10, bias=True)\n"                         \
    ")\n"
    /* 64 x 64: a 16 x 16 stage, keys 2 x 2 (1/32 of the side) */
    assert_int_equal(
        parse_image_str(SR_TOY("key", "value", "32, 32, kernel_size=(8, 8), stride=(8, 8)"), 64, &m,
                        &err),
        0);
    {
        static const uint64_t outs[] = {32 * 256, 32 * 256, 32 * 256, 32 * 4,   32 * 4, 256 * 4,
                                        0,        32 * 4,   32 * 4,   32 * 256, 0,      32 * 256};
        assert_true(m.n > sizeof outs / sizeof outs[0]);
        for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++)
            assert_int_equal(m.layers[i].out, outs[i]);
        assert_int_equal(m.layers[5].kind, EST_K_ATTN);
        assert_int_equal(m.layers[7].kind, EST_K_CONV);
        assert_int_equal(m.layers[12].out, 128 * 256); /* dense1, per position */
        assert_int_equal(m.layers[m.n - 1].out, 10);
    }
    /* refused as before (the query read as after a pooling the reduction then reads): keys
     * at 16 x 16 (finer than 1/8 of the image: a convolution that does not reduce them), a
     * padded (not reducing) one, one that widens; and projections named neither key nor
     * value, not read at full size */
    static const char *const not_reducing[] = {
        "32, 32, kernel_size=(1, 1), stride=(1, 1)",
        "32, 32, kernel_size=(8, 8), stride=(8, 8), padding=(1, 1)",
        "32, 64, kernel_size=(8, 8), stride=(8, 8)"};
    for (size_t i = 0; i < sizeof not_reducing / sizeof not_reducing[0]; i++) {
        char toy[4096];
        int len = snprintf(toy, sizeof toy, SR_TOY("key", "value", "%s"), not_reducing[i]);
        assert_true(len > 0 && (size_t)len < sizeof toy);
        assert_int_equal(parse_image_str(toy, 64, &m, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "t.txt:7: a Linear (in_features=32) on the 32-channel "
                                        "16x16 tensor before it, read as after a global pool"));
    }
    assert_int_equal(
        parse_image_str(SR_TOY("kk", "vv", "32, 32, kernel_size=(8, 8), stride=(8, 8)"), 64, &m,
                        &err),
        -EINVAL);
    assert_non_null(strstr(err.msg, "t.txt:6: SegformerEfficientSelfAttention: attention whose "
                                    "keys and values a strided convolution reduces"));
    /* a LoRA adapter around the key and value projection: its base layer plays kv's role */
    assert_int_equal(
        parse_image_str("Net(\n"
                        "  (stem): Conv2d(3, 32, kernel_size=(7, 7), stride=(4, 4), "
                        "padding=(3, 3))\n"
                        "  (attn): Attention(\n"
                        "    (q): Linear(in_features=32, out_features=32, bias=True)\n"
                        "    (kv): lora.Linear(\n"
                        "      (base_layer): Linear(in_features=32, out_features=64, "
                        "bias=True)\n"
                        "      (lora_dropout): ModuleDict(\n"
                        "        (default): Identity()\n"
                        "      )\n"
                        "      (lora_A): ModuleDict(\n"
                        "        (default): Linear(in_features=32, out_features=8, "
                        "bias=False)\n"
                        "      )\n"
                        "      (lora_B): ModuleDict(\n"
                        "        (default): Linear(in_features=8, out_features=64, "
                        "bias=False)\n"
                        "      )\n"
                        "    )\n"
                        "    (proj): Linear(in_features=32, out_features=32, "
                        "bias=True)\n"
                        "    (sr): Conv2d(32, 32, kernel_size=(8, 8), stride=(8, 8))\n"
                        "    (norm): LayerNorm((32,), eps=1e-05, "
                        "elementwise_affine=True)\n"
                        "  )\n"
                        "  (head): Linear(in_features=32, out_features=10, bias=True)\n"
                        ")\n",
                        64, &m, &err),
        0);
    assert_int_equal(m.layers[2].kind, EST_K_LINEAR);
    assert_int_equal(m.layers[2].out, 64 * 4); /* kv at 2 x 2 */
    assert_int_equal(m.layers[4].kind, EST_K_ATTN);
    assert_int_equal(m.layers[4].out, 256 * 4);
#undef SR_TOY
}

/* MobileViT (timm's MobileVitBlock, transformers' MobileViTLayer) unfolds its tensor into
 * 2 x 2 patches and runs its transformer, for each pixel of a patch, over the (H/2)(W/2)
 * patches: heads x H W x (H W / 4) probabilities, at 1/8, 1/16 and 1/32 of the image, the
 * transformer's linear layers per position. MobileViT V2's separable attention (1 x 1
 * convolutions) is read as convolutions, as before. */
static void test_modtree_unfolded_attention(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    static const char *const prints[] = {"data/estimator/gpu-peaks-h100/mobilevit_s_b64.txt",
                                         "data/estimator/gpu-peaks-h200/hf_mobilevit_s_b64.txt"};
    /* 144 channels at 32 x 32 (4 heads of 32), 192 at 16 x 16 (6), 240 at 8 x 8 (7) */
    static const uint64_t per_stage[] = {4 * 1024 * 256, 6 * 256 * 64, 7 * 64 * 16};
    static const uint32_t blocks[] = {2, 4, 3};
    for (size_t p = 0; p < 2; p++) {
        if (parse_into(prints[p], 256, layers, &m, &err))
            fail_msg("%s: %s", prints[p], err.msg);
        uint32_t seen[3] = {0, 0, 0};
        for (size_t i = 0; i < m.n; i++) {
            if (m.layers[i].kind != EST_K_ATTN)
                continue;
            size_t s = 0;
            while (s < 3 && m.layers[i].out != per_stage[s])
                s++;
            assert_true(s < 3);
            seen[s] += m.layers[i].count;
        }
        for (size_t s = 0; s < 3; s++)
            assert_int_equal(seen[s], blocks[s]);
        assert_int_equal(m.positions_unfold, 2);
        assert_int_equal(m.positions_keys, 256);
        assert_int_equal(m.positions_hw, 1024);
        size_t fc1 = 0; /* the first MLP's wider layer, per position */
        while (fc1 < m.n &&
               !(m.layers[fc1].kind == EST_K_LINEAR && m.layers[fc1].out == 288 * 1024))
            fc1++;
        assert_true(fc1 < m.n);
        assert_int_equal(notes_with(&m, "read as MobileViT's over 2 x 2 patches"), 1);
    }
    /* at 200 x 200 the first stage is 25 x 25, interpolated to 26 x 26: 13 x 13 patches */
    if (parse_into(prints[0], 200, layers, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(kind_nth(&m, EST_K_ATTN, 0), 4 * 676 * 169);
    /* a 32-channel transformer keeps MobileViT's 4 heads (XXS's first has 64 channels in 4);
     * another class named so (a MobileViT v3 written to attend globally) is not unfolded:
     * at 1/8 of the image, after convolutions other than a patch embedding, it is refused as
     * before */
    const char *toy = "tests/fuzz/corpus/summary_modtree/mobilevit_unfold_toy.txt";
    if (parse_into(toy, 64, layers, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(kind_nth(&m, EST_K_ATTN, 0), 4 * 64 * 16);
    {
        char *buf;
        size_t len;
        assert_int_equal(carma_file_read(toy, EST_MAX_INPUT, &buf, &len, &err), 0);
        char *at = strstr(buf, "MobileVitBlock(");
        assert_non_null(at);
        char v3[8192];
        assert_true(len + 8 < sizeof v3);
        int n = snprintf(v3, sizeof v3, "%.*sMobileViTBlockV3(%s", (int)(at - buf), buf,
                         at + strlen("MobileVitBlock("));
        free(buf);
        assert_true(n > 0 && (size_t)n < sizeof v3);
        assert_int_equal(parse_image_str(v3, 64, &m, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "a sequence model (this line) with convolutions"));
    }
    if (parse_into("data/estimator/gpu-peaks-h200/mobilevitv2_100_timm_b64.txt", 256, layers, &m,
                   &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.positions_unfold, 0);
    for (size_t i = 0; i < m.n; i++)
        assert_int_not_equal(m.layers[i].kind, EST_K_ATTN);
}

/* DaViT (timm): a convolutional stem, then pairs of blocks over its positions: windowed
 * attention within 7 x 7 windows (WindowAttention, no patch merging: the stages' sizes come
 * from the convolutions) and attention over channels (ChannelAttention: heads x (C/heads)^2
 * probabilities a sample); the MLPs per position. Measured on the H200: 1.01 of its peak
 * (both were refused). */
static void test_modtree_channel_attention(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    if (parse_into("data/estimator/gpu-peaks-h200/davit_tiny_timm_b32.txt", 224, layers, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.params, 28360168);
    /* 96, 192, 384, 768 channels at 56, 28, 14, 7 (heads of 32), 1, 1, 3, 1 pairs */
    static const struct {
        uint64_t out;
        unsigned n;
    } attn[] = {{3 * 3136 * 49, 1}, {3 * 32 * 32, 1},  {6 * 784 * 49, 1}, {6 * 32 * 32, 1},
                {12 * 196 * 49, 3}, {12 * 32 * 32, 3}, {24 * 49 * 49, 1}, {24 * 32 * 32, 1}};
    unsigned seen[8] = {0};
    for (size_t i = 0; i < m.n; i++) {
        if (m.layers[i].kind != EST_K_ATTN)
            continue;
        size_t s = 0;
        while (s < 8 && m.layers[i].out != attn[s].out)
            s++;
        assert_true(s < 8);
        seen[s] += m.layers[i].count;
    }
    for (size_t s = 0; s < 8; s++)
        assert_int_equal(seen[s], attn[s].n);
    assert_int_equal(m.positions_window, 7);
    assert_int_equal(m.positions_line, 17);
    assert_int_equal(m.channels_line, 44);
    size_t fc1 = 0; /* the first channel block's MLP, per position */
    unsigned wide = 0;
    for (; fc1 < m.n; fc1++)
        wide += m.layers[fc1].kind == EST_K_LINEAR && m.layers[fc1].out == 384 * 3136;
    assert_int_equal(wide, 2);
    assert_int_equal(notes_with(&m, "attention over channels (line 44"), 1);
    assert_int_equal(notes_with(&m, "DaViT's windows"), 1);
    /* the channels' softmax runs in Python: counted under --attention sdpa too */
    for (size_t i = 0; i < m.n; i++)
        if (m.layers[i].kind == EST_K_ATTN && m.layers[i].out % (32 * 32) == 0 &&
            m.layers[i].out / (32 * 32) <= 24)
            assert_true(m.layers[i].flags & EST_LF_SCORES);
    /* a channel gate named so (CBAM's: a pooled MLP and a Sigmoid) is no attention over
     * channels, with a first linear layer to 3C or not: refused as before */
    static const char *const gates[] = {"Linear(in_features=64, out_features=4, bias=True)",
                                        "Linear(in_features=64, out_features=192, bias=True)"};
    for (size_t g = 0; g < 2; g++) {
        char cbam[1024];
        snprintf(cbam, sizeof cbam,
                 "Net(\n"
                 "  (stem): Conv2d(3, 64, kernel_size=(7, 7), stride=(4, 4), padding=(3, 3))\n"
                 "  (ca): ChannelAttention(\n"
                 "    (fc1): %s\n"
                 "    (act): ReLU()\n"
                 "    (fc2): Linear(in_features=%d, out_features=64, bias=True)\n"
                 "    (gate): Sigmoid()\n"
                 "  )\n"
                 "  (head): Linear(in_features=64, out_features=10, bias=True)\n"
                 ")\n",
                 gates[g], g ? 192 : 4);
        assert_int_equal(parse_image_str(cbam, 224, &m, &err), -EINVAL);
        assert_int_equal(m.channels_line, 0);
    }
    /* another library's window attention (Florence-2's DaViT: windows of 12) and GCViT's
     * global-query windows keep Swin's refusal */
    char *buf;
    size_t len;
    int rc;
    const char *toy = "tests/fuzz/corpus/summary_modtree/davit_window_channel_toy.txt";
    assert_int_equal(carma_file_read(toy, EST_MAX_INPUT, &buf, &len, &err), 0);
    char *at = strstr(buf, "(attn): WindowAttention(");
    assert_non_null(at);
    static char renamed[16384];
    assert_true(len + 32 < sizeof renamed);
    snprintf(renamed, sizeof renamed, "%.*s(attn): Florence2VisionWindowAttention(%s",
             (int)(at - buf), buf, at + strlen("(attn): WindowAttention("));
    free(buf);
    assert_int_equal(parse_image_str(renamed, 224, &m, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "windowed attention (Swin)"));
    /* DaViT's class whose projections do not read the tensor: Swin's refusal too */
    assert_int_equal(carma_file_read(toy, EST_MAX_INPUT, &buf, &len, &err), 0);
    at = strstr(buf, "in_features=96, out_features=288"); /* the first WindowAttention's */
    assert_non_null(at);
    memcpy(at, "in_features=48", strlen("in_features=48"));
    rc = parse_image_str(buf, 224, &m, &err);
    free(buf);
    assert_int_equal(rc, -EINVAL);
    if (!strstr(err.msg, "17: WindowAttention: windowed attention (Swin)"))
        fail_msg("%s", err.msg);
    if (parse_into("data/estimator/gpu-peaks-h200/gcvit_xxtiny_timm_b32.txt", 224, layers, &m,
                   &err) != -EINVAL)
        fail_msg("GCViT read");
    assert_non_null(strstr(err.msg, "WindowAttentionGlobal: windowed attention (Swin)"));
}

/* XCiT (timm): a convolutional stem to 1/16 of the image, then blocks whose
 * cross-covariance attention (class XCA: q, k, v from one C -> 3C projection) is attention
 * over channels, its queries and keys L2-normalised first (two more tensors of the block's
 * size), its linear layers and the block's MLP per position; two class-attention blocks
 * last. Measured on the H200: 0.94 of its peak (bound 1.56), was refused. */
static void test_modtree_xca(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    if (parse_into("data/estimator/gpu-peaks-h200/xcit_tiny12_timm_b32.txt", 224, layers, &m, &err))
        fail_msg("%s", err.msg);
    /* every module's parameters; the layer scales, temperatures and class token are
     * parameters of no printed module (measured 6716272) */
    assert_int_equal(m.params, 6708352);
    unsigned chan = 0, l2 = 0, cls = 0;
    for (size_t i = 0; i < m.n; i++) {
        const struct est_layer *l = &m.layers[i];
        if (l->kind == EST_K_ATTN && l->out == 6 * 32 * 32) {
            /* 192 channels in heads of 32 assumed: 6 (XCiT-T12 has 4 of 48: 9216, as
             * small) */
            assert_true(l->flags & EST_LF_SCORES);
            chan += l->count;
        } else if (l->kind == EST_K_ATTN && l->out == 6 * 196 * 196) {
            cls += l->count;
        } else if (l->kind == EST_K_POOL && (l->flags & EST_LF_PRODUCT)) {
            assert_int_equal(l->out, 2 * 192 * 196);
            assert_true(l > m.layers && l[-1].kind == EST_K_ATTN && l[-1].out == 6 * 32 * 32);
            l2 += l->count;
        }
    }
    assert_int_equal(chan, 12);
    assert_int_equal(l2, 12);
    assert_int_equal(cls, 2);
    assert_int_equal(m.channels_line, 32);
    assert_int_equal(notes_with(&m, "XCiT's XCA projecting its C channels to 3C, which also "
                                    "keeps its queries and keys L2-normalised"),
                     1);
    /* the MLP of each block over the 14 x 14 positions */
    unsigned wide = 0;
    for (size_t i = 0; i < m.n; i++)
        wide += m.layers[i].kind == EST_K_LINEAR && m.layers[i].out == 768 * 196 ? m.layers[i].count
                                                                                 : 0;
    assert_int_equal(wide, 14);
    /* DaViT's ChannelAttention normalises nothing: no such row */
    if (parse_into("data/estimator/gpu-peaks-h200/davit_tiny_timm_b32.txt", 224, layers, &m, &err))
        fail_msg("%s", err.msg);
    for (size_t i = 0; i < m.n; i++)
        assert_false(m.layers[i].kind == EST_K_POOL && i && m.layers[i - 1].kind == EST_K_ATTN);
    assert_int_equal(notes_with(&m, "a ChannelAttention, as DaViT's, projecting its C channels "
                                    "to 3C): its linear"),
                     1);
    /* without the class name it is a block of linear layers, as before: refused here,
     * where the class attention reads positions the print does not size */
    char *buf;
    size_t len;
    assert_int_equal(carma_file_read("tests/fuzz/corpus/summary_modtree/xcit_xca_toy.txt",
                                     EST_MAX_INPUT, &buf, &len, &err),
                     0);
    assert_int_equal(parse_image_str(buf, 224, &m, &err), 0);
    assert_int_equal(m.channels_line, 32);
    char *at = strstr(buf, "(attn): XCA(");
    assert_non_null(at);
    memcpy(at, "(attn): XCB(", strlen("(attn): XCB("));
    int rc = parse_image_str(buf, 224, &m, &err);
    free(buf);
    assert_int_equal(rc, -EINVAL);
    assert_int_equal(m.channels_line, 0);
}

/* PiT (timm): global attention over the positions of an overlapping patch embedding at
 * an eighth of the image (27 x 27 at 224), then a Pooling block (a strided convolution
 * for the patch tokens, a linear layer of the same channels for the class token, one
 * position) before each later stage: 14 x 14, 7 x 7. Measured on the H200 (batch 64,
 * SDPA): 0.99 of its peak (bound 1.73), was refused. */
static void test_modtree_pooled_tokens(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    if (parse_into("data/estimator/gpu-peaks-h200/pit_ti_timm_b64.txt", 224, layers, &m, &err))
        fail_msg("%s", err.msg);
    /* the printed parameters: the position table and class token are no module's */
    assert_int_equal(m.params, 4847272 - 64 * 27 * 27 - 64);
    static const struct attn_rows attn[] = {
        {2 * 729 * 729, 2}, {4 * 196 * 196, 6}, {8 * 49 * 49, 4}};
    assert_attention_rows(&m, attn, 3);
    unsigned cls = 0; /* the class token's projections: one position each */
    for (size_t i = 0; i < m.n; i++)
        cls += m.layers[i].kind == EST_K_LINEAR &&
               ((m.layers[i].out == 128 && m.layers[i].params == 64 * 128 + 128) ||
                (m.layers[i].out == 256 && m.layers[i].params == 128 * 256 + 256));
    assert_int_equal(cls, 2);
    struct est_opts o = {.batch = 64, .optimizer = EST_OPT_ADAMW, .attention = EST_ATTN_SDPA};
    struct est_result r;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &r, &err), 0);
    assert_true(r.estimate_mib > 2000 && r.estimate_mib < 3000); /* 2400 measured, H200 */
    /* The gate, on a toy: an overlapping patch embedding (one convolution; one that cuts
     * whole patches makes a vision transformer's sequence instead) then attention projecting
     * C -> 3C: read at an eighth of the image (27 x 27 at 224), refused at a quarter (local
     * attention runs there: NesT, Hiera), refused at an eighth after another convolution
     * (VOLO's stem) or without the fused projection (a CBAM gate) */
    static const struct {
        const char *stem, *proj;
        int ok;
    } gate[] = {{"(embed): Conv2d(3, 32, kernel_size=(16, 16), stride=(8, 8))", "96", 1},
                {"(embed): Conv2d(3, 32, kernel_size=(8, 8), stride=(4, 4))", "96", 0},
                {"(embed): Conv2d(3, 32, kernel_size=(7, 7), stride=(2, 2), padding=(3, 3))\n"
                 "  (down): Conv2d(32, 32, kernel_size=(4, 4), stride=(4, 4))",
                 "96", 0},
                {"(embed): Conv2d(3, 32, kernel_size=(16, 16), stride=(8, 8))", "32", 0}};
    for (size_t g = 0; g < sizeof gate / sizeof gate[0]; g++) {
        char s[2048];
        snprintf(s, sizeof s,
                 "Net(\n"
                 "  %s\n"
                 "  (attn): Attention(\n"
                 "    (qkv): Linear(in_features=32, out_features=%s, bias=True)\n"
                 "    (proj): Linear(in_features=32, out_features=32, bias=True)\n"
                 "  )\n"
                 "  (head): Linear(in_features=32, out_features=10, bias=True)\n"
                 ")\n",
                 gate[g].stem, gate[g].proj);
        int rc = parse_image_str(s, 224, &m, &err);
        if (gate[g].ok) {
            assert_int_equal(rc, 0);
            assert_int_equal(kind_nth(&m, EST_K_ATTN, 0), 1 * 729 * 729);
        } else {
            assert_int_equal(rc, -EINVAL);
        }
    }
    /* the class token's projection needs the pooling to be strided: beside a stride-1
     * convolution a linear layer of its input's channels reads no tensor of the block
     * (refused), beside a strided one it runs at one position */
    for (int stride = 1; stride <= 2; stride++) {
        char s[2048];
        snprintf(s, sizeof s,
                 "Net(\n"
                 "  (embed): Conv2d(3, 32, kernel_size=(16, 16), stride=(16, 16), "
                 "padding=(1, 1))\n"
                 "  (pool): Pooling(\n"
                 "    (conv): Conv2d(32, 64, kernel_size=(3, 3), stride=(%d, %d), "
                 "padding=(1, 1), groups=32)\n"
                 "    (fc): Linear(in_features=32, out_features=64, bias=True)\n"
                 "  )\n"
                 "  (attn): Attention(\n"
                 "    (qkv): Linear(in_features=64, out_features=192, bias=True)\n"
                 "    (proj): Linear(in_features=64, out_features=64, bias=True)\n"
                 "  )\n"
                 "  (head): Linear(in_features=64, out_features=10, bias=True)\n"
                 ")\n",
                 stride, stride);
        int rc = parse_image_str(s, 224, &m, &err);
        if (stride == 1) {
            assert_int_equal(rc, -EINVAL);
            continue;
        }
        assert_int_equal(rc, 0);
        assert_int_equal(m.layers[2].kind, EST_K_LINEAR);
        assert_int_equal(m.layers[2].out, 64);
        assert_int_equal(m.layers[2].params, 32 * 64 + 64);
        assert_int_equal(kind_nth(&m, EST_K_ATTN, 0), 2 * 49 * 49);
    }
}

/* ConvBERT (transformers): beside each layer's attention, a span-based convolution along
 * the sequence (a depthwise then a pointwise Conv1d that keep the length: per token) and
 * nn.Unfold around each token of a linear layer's output (9 times it, a new tensor).
 * Measured on the H200 at batch 8, sequence 512: 1.20 of its peak (bound 1.55), was
 * refused. 1-D convolutions that do not keep the length stay refused. */
static void test_modtree_sequence_conv(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    if (parse_file("data/estimator/gpu-peaks-h200/convbert_b8_s512.txt", &m, &err))
        fail_msg("%s", err.msg);
    unsigned dw = 0, pw = 0, unf = 0;
    for (size_t i = 0; i < m.n; i++) {
        const struct est_layer *l = &m.layers[i];
        assert_true(l->per_token);
        if (l->kind == EST_K_CONV && l->out == 768 && l->params == 768 * 9)
            dw += l->count;
        else if (l->kind == EST_K_CONV && l->out == 384 && l->params == 768 * 384)
            pw += l->count;
        else if (l->kind == EST_K_POOL && l->out == 9 * 384 && (l->flags & EST_LF_PRODUCT))
            unf += l->count;
    }
    assert_int_equal(dw, 12);
    assert_int_equal(pw, 12);
    assert_int_equal(unf, 12);
    struct est_opts o = {.batch = 8, .seq = 512, .optimizer = EST_OPT_ADAMW};
    struct est_result r;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &r, &err), 0);
    assert_true(r.estimate_mib > 8218 && r.estimate_mib < 11000); /* measured 8218 */
    assert_true(r.bound_mib < 2 * 8218); /* and a bound within twice the peak */
    /* the same model without its unfold rows: less by about 12 x 8 x 512 x 3456 x 4 B */
    struct est_model u = m;
    static struct est_layer copy[EST_MAX_LAYERS];
    u.layers = copy;
    u.n = 0;
    for (size_t i = 0; i < m.n; i++)
        if (!(m.layers[i].kind == EST_K_POOL && (m.layers[i].flags & EST_LF_PRODUCT)))
            copy[u.n++] = m.layers[i];
    struct est_result ru;
    assert_int_equal(est_compute(&u, est_coef_default(), &o, &rwork, &ru, &err), 0);
    assert_true(r.estimate_mib - ru.estimate_mib > 500);
    /* after a token table, inside an attention block, a 1-D convolution that changes the
     * length (strided; wav2vec2's positional one, of an even kernel; a causal one) is not
     * read so; nor is one that is a query, key or value (SqueezeBERT's: no attention would
     * be read), nor one outside attention (a text-to-speech model's convolutions may run
     * on mel frames, longer than the tokens) */
    static const char *const convs[] = {
        "(conv): Conv1d(64, 64, kernel_size=(3,), stride=(2,), padding=(1,))",
        "(conv): Conv1d(64, 64, kernel_size=(128,), stride=(1,), padding=(64,), groups=16)",
        "(conv): Conv1d(64, 64, kernel_size=(3,), stride=(1,), padding=(2,))",
        "(conv): Conv1d(64, 64, kernel_size=(3,), stride=(1,))",
        "(query): Conv1d(64, 64, kernel_size=(1,), stride=(1,), groups=4)"};
    for (size_t i = 0; i < sizeof convs / sizeof convs[0]; i++) {
        char s[1024];
        snprintf(s, sizeof s,
                 "Net(\n"
                 "  (embed): Embedding(1000, 64)\n"
                 "  (attn): SpanAttention(\n"
                 "    (q): Linear(in_features=64, out_features=64, bias=True)\n"
                 "    (k): Linear(in_features=64, out_features=64, bias=True)\n"
                 "    (v): Linear(in_features=64, out_features=64, bias=True)\n"
                 "    %s\n"
                 "  )\n"
                 "  (head): Linear(in_features=64, out_features=1000, bias=True)\n"
                 ")\n",
                 convs[i]);
        assert_int_equal(parse_str(s, &m, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "Conv1d in a module tree"));
    }
    const char *outside = "Net(\n"
                          "  (embed): Embedding(1000, 64)\n"
                          "  (conv): Conv1d(64, 64, kernel_size=(3,), stride=(1,), padding=(1,))\n"
                          "  (head): Linear(in_features=64, out_features=1000, bias=True)\n"
                          ")\n";
    assert_int_equal(parse_str(outside, &m, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "t.txt:3: Conv1d in a module tree"));
    /* a convolution's output feeds the rows after it (its activation is its width), and
     * an unfold at stride 1 gathers 3 of the last layer's outputs a token */
    const char *same =
        "Net(\n"
        "  (embed): Embedding(1000, 64)\n"
        "  (attn): SpanAttention(\n"
        "    (q): Linear(in_features=64, out_features=64, bias=True)\n"
        "    (k): Linear(in_features=64, out_features=64, bias=True)\n"
        "    (v): Linear(in_features=64, out_features=64, bias=True)\n"
        "    (conv): Conv1d(64, 256, kernel_size=(5,), stride=(1,), padding=(2,))\n"
        "    (act): GELU(approximate='none')\n"
        "    (unfold): Unfold(kernel_size=[3, 1], dilation=1, padding=[1, 0], stride=1)\n"
        "    (proj): Linear(in_features=256, out_features=16, bias=True)\n"
        "    (strided): Unfold(kernel_size=[3, 1], dilation=1, padding=[1, 0], stride=2)\n"
        "  )\n"
        "  (head): Linear(in_features=16, out_features=1000, bias=True)\n"
        ")\n";
    assert_int_equal(parse_str(same, &m, &err), 0);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 0), 256);
    size_t ci = 0;
    while (ci < m.n && m.layers[ci].kind != EST_K_CONV)
        ci++;
    assert_true(ci + 2 < m.n);
    assert_int_equal(m.layers[ci].params, 256 * 64 * 5 + 256);
    assert_true(m.layers[ci].per_token);
    assert_int_equal(m.layers[ci + 1].kind, EST_K_ACT);
    assert_int_equal(m.layers[ci + 1].out, 256);
    assert_int_equal(kind_nth(&m, EST_K_POOL, 0), 3 * 256);
    assert_int_equal(kind_nth(&m, EST_K_POOL, 1), 0); /* the strided one: no row of its own */
}

/* Longformer (transformers): attention blocks with global projections (query_global,
 * key_global, value_global) run over a sliding window of 1025 keys (LED's attention_window
 * 1024, the widest released; Longformer's 512), not the whole sequence, its scores kept
 * under any --attention. Measured on the H100 at batch 2, sequence 4096: 1.25 of its peak
 * (bound 1.48), where every query over all 4096 keys gave 2.98. */
static void test_modtree_sliding_window(void **state)
{
    (void)state;
    struct est_model m, all;
    struct carma_err err;
    static struct est_layer copy[EST_MAX_LAYERS];
    if (parse_file("data/estimator/gpu-peaks-h100/longformer_base_b2_s4096.txt", &m, &err))
        fail_msg("%s", err.msg);
    unsigned rows = 0;
    for (size_t i = 0; i < m.n; i++)
        if (m.layers[i].kind == EST_K_ATTN) {
            assert_int_equal(m.layers[i].keys, EST_SLIDE_KEYS);
            rows += m.layers[i].count;
        }
    assert_int_equal(rows, 12);
    assert_int_equal(m.slide_line, 14);
    assert_int_equal(notes_with(&m, "each token attends to 1025 keys"), 1);
    for (size_t i = 0; i < m.n; i++)
        if (m.layers[i].kind == EST_K_ATTN)
            assert_true(m.layers[i].flags & EST_LF_SCORES);
    /* the same rows over every key */
    all = m;
    all.layers = copy;
    memcpy(copy, m.layers, m.n * sizeof m.layers[0]);
    for (size_t i = 0; i < all.n; i++)
        copy[i].keys = 0;
    struct est_opts o = {.batch = 2, .seq = 4096, .optimizer = EST_OPT_ADAMW};
    struct est_result a, b;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &a, &err), 0);
    assert_int_equal(est_compute(&all, est_coef_default(), &o, &rwork, &b, &err), 0);
    assert_true(a.estimate_mib > 18688 && a.estimate_mib < 26000); /* measured 18688 */
    assert_true(b.estimate_mib > 2 * a.estimate_mib);
    /* under --attention sdpa too (no fused kernel in Longformer) */
    o.attention = EST_ATTN_SDPA;
    struct est_result c;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &c, &err), 0);
    assert_float_equal(c.estimate_mib, a.estimate_mib, 1e-9);
    o.attention = EST_ATTN_EAGER;
    /* a sequence within the window: every key, as before */
    o.seq = 1024;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &a, &err), 0);
    assert_int_equal(est_compute(&all, est_coef_default(), &o, &rwork, &b, &err), 0);
    assert_float_equal(a.estimate_mib, b.estimate_mib, 1e-9);
    /* BERT's attention (no global projections) attends to the whole sequence */
    if (parse_file("tests/fuzz/corpus/summary_modtree/bert_base.txt", &m, &err))
        fail_msg("%s", err.msg);
    for (size_t i = 0; i < m.n; i++)
        assert_int_equal(m.layers[i].keys, 0);
    assert_int_equal(m.slide_line, 0);
}

/* LeViT (transformers' LevitForImageClassification; the measured print is LeViT-128's shape
 * under a 128S label): attention over a convolutional stem's
 * 14 x 14 positions, each block and its MLP in residual wrappers of one list (the MLP per
 * position too), and between stages an attention whose queries a subsampling (every second
 * position, LevitSubsample()) takes from its input: its output, and the next stage, at 7 x 7
 * then 4 x 4. Measured on the H200: 1.00 of its peak (was refused). */
static void test_modtree_subsampled_queries(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    if (parse_into("data/estimator/gpu-peaks-h200/hf_levit_128s_b64.txt", 224, layers, &m, &err))
        fail_msg("%s", err.msg);
    static const struct attn_rows attn[] = {{4 * 196 * 196, 4},
                                            {4 * 196 * 49, 1},
                                            {8 * 49 * 49, 4},
                                            {8 * 49 * 16, 1},
                                            {12 * 16 * 16, 4}};
    assert_attention_rows(&m, attn, sizeof attn / sizeof attn[0]);
    size_t up = 0; /* the first MLP's linear_up (after the first attention), per position */
    while (up < m.n && m.layers[up].kind != EST_K_ATTN)
        up++;
    while (up < m.n && !(m.layers[up].kind == EST_K_LINEAR && m.layers[up].params == 128 * 256))
        up++;
    assert_true(up < m.n);
    assert_int_equal(m.layers[up].out, 256 * 196);
    size_t sub = 0; /* the first subsampling: the block input's 128 channels at 7 x 7 */
    while (sub < m.n && m.layers[sub].kind != EST_K_POOL)
        sub++;
    assert_true(sub < m.n);
    assert_int_equal(m.layers[sub].out, 128 * 49);
    assert_int_equal(m.layers[sub + 1].out, 128 * 49); /* the queries */
    assert_int_equal(m.subsample_line, 137);           /* noted: its stride is assumed */
    assert_int_equal(notes_with(&m, "the query subsampling at line 137, which prints no stride"),
                     1);
}

/* Stages kept in parallel lists that forward zips (transformers' PoolFormer, SegFormer
 * before 4.4x: patch_embeddings[i], then block[i], then layer_norm[i]) are read in call
 * order, errors still naming the print's lines; a list of strided leaves beside a list of
 * norms (Res2Net's convs and bns, which forward also zips but on slices of one input) is
 * read as printed. */
static void test_modtree_zipped_lists(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    if (parse_into("data/estimator/gpu-peaks-h200/hf_poolformer_s12_b64.txt", 224, layers, &m,
                   &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.layers[0].kind, EST_K_CONV);
    assert_int_equal(m.layers[0].out, 64 * 3136); /* patch_embeddings[0] */
    assert_int_equal(m.layers[2].kind, EST_K_POOL);
    assert_int_equal(m.layers[2].out, 64 * 3136); /* block[0]'s pooling, before [1] */
    assert_int_equal(m.layers[10].kind, EST_K_CONV);
    assert_int_equal(m.layers[10].out, 128 * 784); /* patch_embeddings[1] */
    /* SegFormer-B0 in the older layout: the parameters and attention of the newer print */
    const char *old = "tests/fuzz/corpus/summary_modtree/segformer_zipped_lists.txt";
    if (parse_into(old, 224, layers, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.params, 3576392);
    static const uint64_t per_stage[] = {3136 * 49, 2 * 784 * 49, 5 * 196 * 49, 8 * 49 * 49};
    size_t s = 0;
    for (size_t i = 0; i < m.n; i++)
        if (m.layers[i].kind == EST_K_ATTN) {
            assert_true(s < 8);
            assert_int_equal(m.layers[i].out, per_stage[s / 2]);
            s += m.layers[i].count;
        }
    assert_int_equal(s, 8);
    {
        char *buf;
        size_t len;
        assert_int_equal(carma_file_read(old, EST_MAX_INPUT, &buf, &len, &err), 0);
        /* the second stage's first dense2, line 106 of the print, read elsewhere in
         * call order: a fault there is named by its own line */
        const char *line = "(dense2): Linear(in_features=256, out_features=64, bias=True)";
        char *at = strstr(buf, line);
        assert_non_null(at);
        size_t lineno = 1;
        for (const char *q = buf; q < at; q++)
            lineno += *q == '\n';
        assert_int_equal(lineno, 106);
        memcpy(at + strlen("(dense2): Linear(in_features=256, "), "ou_features", 11);
        est_model_init(&m, layers, EST_MAX_LAYERS);
        m.image_h = m.image_w = 224;
        assert_int_equal(est_parse(buf, len, "t.txt", &m, &err), -EINVAL);
        free(buf);
        assert_non_null(strstr(err.msg, "t.txt:106: Linear without in_features/out_features"));
    }
    /* Twins-SVT-S (timm): patch_embeds, pos_drops and blocks zipped (pos_block, listed
     * after the head, stays there); its patch embeddings cut patches in a chain, so its
     * attention is over a convolutional network's positions, not a vision transformer's
     * tokens: LocallyGroupedAttn within 7 x 7 windows, GlobalSubSampleAttn over keys its
     * strided convolution reduced to 7 x 7; every parameter as measured (H200: 0.94) */
    if (parse_into("data/estimator/gpu-peaks-h200/twins_svt_small_timm_b32.txt", 224, layers, &m,
                   &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.params, 24060776);
    assert_int_equal(m.positions_window, 7);
    assert_int_equal(kind_nth(&m, EST_K_ATTN, 0), 2 * 3136 * 49); /* local, 64 channels */
    assert_int_equal(kind_nth(&m, EST_K_ATTN, 1), 2 * 3136 * 49); /* global, sr 8 */
    assert_int_equal(kind_nth(&m, EST_K_ATTN, 2), 4 * 784 * 49);
    /* PVT v1 in transformers' layout (written for the test, not a measured run): zipped
     * lists, patch embeddings cut in a chain and keys reduced by strides 8, 4, 2 */
    if (parse_into("tests/fuzz/corpus/summary_modtree/pvt_v1_hf_layout.txt", 224, layers, &m, &err))
        fail_msg("%s", err.msg);
    {
        static const uint64_t pvt[] = {2 * 3136 * 49, 4 * 784 * 49, 10 * 196 * 49, 16 * 49 * 49};
        for (unsigned i = 0; i < 4; i++)
            assert_int_equal(kind_nth(&m, EST_K_ATTN, i), pvt[i]);
        assert_int_equal(m.positions_sr, 8);
    }
    /* CrossViT's two branches both cut the image: still a vision transformer's tokens */
    if (parse_into("data/estimator/gpu-peaks-h200/crossvit_9_timm_b64.txt", 240, layers, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.tokens, 401);
    /* two patch embeddings in a chain make a hierarchical network's positions; two that
     * both read the image (a two-branch vision transformer) stay a sequence of patches */
#define TWO_PATCHES(pe2)                                                                           \
    "Net(\n"                                                                                       \
    "  (pe1): Conv2d(3, 32, kernel_size=(8, 8), stride=(8, 8))\n"                                  \
    "  (pe2): Conv2d(" pe2 ")\n"                                                                   \
    "  (block): Block(\n"                                                                          \
    "    (attn): Attention(\n"                                                                     \
    "      (qkv): Linear(in_features=64, out_features=192, bias=True)\n"                           \
    "      (proj): Linear(in_features=64, out_features=64, bias=True)\n"                           \
    "    )\n"                                                                                      \
    "  )\n"                                                                                        \
    "  (head): Linear(in_features=64, out_features=10, bias=True)\n"                               \
    ")\n"
    assert_int_equal(
        parse_image_str(TWO_PATCHES("32, 64, kernel_size=(2, 2), stride=(2, 2)"), 64, &m, &err), 0);
    assert_int_equal(m.positions_hw, 16);
    assert_int_equal(
        parse_image_str(TWO_PATCHES("3, 64, kernel_size=(16, 16), stride=(16, 16)"), 64, &m, &err),
        0);
    assert_int_equal(m.positions_line, 0);
    assert_int_equal(m.tokens, 65);
    /* a profiler's statistics before the arguments (ptflops) hide no chain */
    assert_int_equal(parse_image_str(TWO_PATCHES("0.0 M, 0.000% Params, 0.0 GMac, 0.000% MACs, "
                                                 "32, 64, kernel_size=(2, 2), stride=(2, 2)"),
                                     64, &m, &err),
                     0);
    assert_int_equal(m.positions_hw, 16);
    /* a chain that does not start at the stem (SAM's mask convolutions, after a vision
     * transformer's patch embedding) is none */
    parse_image_str("Net(\n"
                    "  (pe1): Conv2d(3, 64, kernel_size=(16, 16), stride=(16, 16))\n"
                    "  (block): Block(\n"
                    "    (attn): Attention(\n"
                    "      (qkv): Linear(in_features=64, out_features=192, bias=True)\n"
                    "      (proj): Linear(in_features=64, out_features=64, bias=True)\n"
                    "    )\n"
                    "  )\n"
                    "  (m1): Conv2d(1, 4, kernel_size=(2, 2), stride=(2, 2))\n"
                    "  (m2): Conv2d(4, 64, kernel_size=(2, 2), stride=(2, 2))\n"
                    ")\n",
                    64, &m, &err);
    assert_int_equal(m.positions_line, 0);
#undef TWO_PATCHES
    /* Res2Net-50: its strided convs (3 x Conv2d(52, 52, stride 2)) stay one row of 3 */
    if (parse_into("data/estimator/gpu-peaks-h100/res2net50_b32.txt", 224, layers, &m, &err))
        fail_msg("%s", err.msg);
    size_t strided = 0;
    for (size_t i = 0; i < m.n; i++)
        if (m.layers[i].kind == EST_K_CONV && m.layers[i].params == 52 * 52 * 9) {
            assert_int_equal(m.layers[i].count, 3);
            strided++;
        }
    assert_true(strided >= 1);
}

/* Batch norm is on none of autocast's lists: cuDNN normalises a 16-bit input into a 16-bit
 * output (fp32 statistics), where layer and group norm run in fp32 and torchvision's
 * FrozenBatchNorm2d (x * scale + shift in Python, fp32 buffers) promotes to fp32. The
 * per-kind terms count its output in 16 bits under amp; the replay keeps its 16-bit input
 * (no fp32 copy) and hands a 16-bit output on, which the next linear layer keeps itself. */
static void test_autocast_batch_norm(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    static const char *const norms[] = {"BatchNorm2d(8, eps=1e-05, momentum=0.1, affine=True, "
                                        "track_running_stats=True)",
                                        "GroupNorm(2, 8, eps=1e-05, affine=True)",
                                        "FrozenBatchNorm2d(8, eps=1e-05)"};
    static const double bytes[] = {2, 4, 4};
    for (size_t i = 0; i < 3; i++) {
        char tree[512];
        snprintf(tree, sizeof tree,
                 "Net(\n  (conv): Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), "
                 "padding=(1, 1))\n  (bn): %s\n  (act): ReLU(inplace=True)\n)\n",
                 norms[i]);
        assert_int_equal(parse_image_str(tree, 16, &m, &err), 0);
        assert_int_equal(m.layers[1].kind, EST_K_NORM);
        assert_int_equal(m.layers[1].norm16, i == 0);
        struct est_opts o = {.batch = 4096, .optimizer = EST_OPT_ADAMW,
                             .precision = EST_PREC_AMP};
        double f[EST_NFEAT], w, g, st;
        est_features(&m, &o, f, &w, &g, &st);
        assert_float_equal(f[EST_K_NORM], est_alloc_round(4096.0 * 8 * 16 * 16 * bytes[i]) /
                                              1048576.0,
                           1e-9);
        o.precision = EST_PREC_FP32; /* fp32 training: 4 bytes whatever the class */
        est_features(&m, &o, f, &w, &g, &st);
        assert_float_equal(f[EST_K_NORM], 4096.0 * 8 * 16 * 16 * 4 / 1048576.0, 1e-9);
    }
    /* the replay, as test_replay_autocast_fp32_inputs' chains: a batch norm after a linear
     * layer keeps that layer's 16-bit output (128), not an fp32 copy (256), and the head
     * keeps the norm's 16-bit output itself, not a copy of an fp32 one: 128 + 128 + 128
     * besides the tail (the fp32 input, the logits, the log-softmax, the labels) */
    const double tail = 256 + 192 + 384 + 0.5;
    const char *bn = "type,out_elems,params\ninput,1024,0\nLinear,1024,1049600\n"
                     "BatchNorm1d,1024,2048\nLinear,1536,1574400\n";
    assert_float_equal(autocast_act(bn, EST_PREC_BF16, 0, 0, 0), tail + 128 + 128 + 128, 0.1);
    /* a GELU after it keeps the norm's output as it is: 16-bit (128), not fp32 (256) */
    const char *bn_gelu = "type,out_elems,params\ninput,1024,0\nLinear,1024,1049600\n"
                          "BatchNorm1d,1024,2048\nGELU,1024,0\nLinear,1536,1574400\n";
    assert_float_equal(autocast_act(bn_gelu, EST_PREC_BF16, 0, 0, 0),
                       tail + 128 + 128 + 128 + 128, 0.1);
}

/* Autocast with fp32 parameters keeps the residual stream in fp32 and caches casts of
 * the weights only. Each chain ends in a 1024 -> 1536 head: its logits (192 MiB in 16
 * bits) and fp32 log-softmax (384) are live at the peak besides the fp32 input (256) and
 * what the layers keep, each 1024-wide tensor 128 MiB in 16 bits, 256 in fp32. fp32
 * training is unchanged. */
static void test_replay_autocast_fp32_inputs(void **state)
{
    (void)state;
    const double tail = 256 + 192 + 384 + 0.5, tail32 = 256 + 384 + 384 + 0.5; /* + labels */
    /* A norm after a linear layer keeps an fp32 input (the residual add's result), and
     * each linear layer reading an fp32 tensor (the input, the norm's output) keeps its
     * own 16-bit copy of it: 128 + 256 + 128. Before, the first kept the input itself,
     * the norm the 16-bit output before it, the head the fp32 norm output: 128 + 256. */
    const char *norm = "type,out_elems,params\ninput,1024,0\nLinear,1024,1049600\n"
                       "LayerNorm,1024,2048\nLinear,1536,1574400\n";
    assert_float_equal(autocast_act(norm, EST_PREC_BF16, 0, 0, 0), tail + 128 + 256 + 128, 0.1);
    assert_float_equal(autocast_act(norm, EST_PREC_FP32, 0, 0, 0), tail32 + 256 + 256, 0.1);
    /* Query, key and value read the norm's fp32 output (the norm keeps the fp32 input
     * itself): three 16-bit copies, where they shared that output (256); the value's
     * output is the head's input. */
    const char *qkv = "type,out_elems,params\ninput,1024,0\nLayerNorm,1024,2048\n"
                      "Linear,1024,1049600\nLinear,1024,1049600\nLinear,1024,1049600\n"
                      "Linear,1536,1574400\n";
    assert_float_equal(autocast_act(qkv, EST_PREC_AMP, 2, 2, 0), tail + 3 * 128 + 128, 0.1);
    assert_float_equal(autocast_act(qkv, EST_PREC_FP32, 2, 2, 0), tail32 + 256 + 256, 0.1);
    /* A gated MLP whose listed input is 16-bit (Llama's print lists the norms after the
     * MLP): the gate keeps that tensor and the up projection its own copy of it (of the
     * norm's fp32 output it really reads), besides act(gate), up and their product (5 x
     * 128, where the two shared one); the first layer its copy of the fp32 input. */
    const char *mlp = "type,out_elems,params\ninput,1024,0\nLinear,1024,1049600\n"
                      "Linear,1024,1049600\nSiLU,1024,0\nLinear,1024,1049600\n"
                      "Linear,1536,1574400\n";
    assert_float_equal(autocast_act(mlp, EST_PREC_BF16, 0, 0, 3), tail + 128 + 128 + 5 * 128,
                       0.1);
    assert_float_equal(autocast_act(mlp, EST_PREC_FP32, 0, 0, 3), tail32 + 5 * 256, 0.1);
    /* gelu_new under autocast: torch.pow is on the fp32 list, so from it on the activation
     * runs in fp32: it keeps 0.5x (16-bit), pow's fp32 copy of its input (not the input),
     * the tanh and 1 + tanh (fp32), and hands on an fp32 output, of which the head keeps
     * its own 16-bit copy: 128 + 256 x 3 + 128 beside the first layer's copy, where the
     * 16-bit rule kept 128 x 5 (10 B per element instead of 16). QuickGELU (x *
     * sigmoid(1.702x)) has no fp32-list operation and stays 16-bit. */
    const char *gelu = "type,out_elems,params\ninput,1024,0\nLinear,1024,1049600\n"
                       "NewGELUActivation,1024,0\nLinear,1536,1574400\n";
    assert_float_equal(autocast_act(gelu, EST_PREC_AMP, 0, 0, 0), tail + 128 + 128 + 3 * 256 + 128,
                       0.1);
    assert_float_equal(autocast_act(gelu, EST_PREC_FP32, 0, 0, 0), tail32 + 5 * 256, 0.1);
    const char *quick = "type,out_elems,params\ninput,1024,0\nLinear,1024,1049600\n"
                        "QuickGELUActivation,1024,0\nLinear,1536,1574400\n";
    assert_float_equal(autocast_act(quick, EST_PREC_AMP, 0, 0, 0), tail + 128 + 3 * 128, 0.1);
    /* Gradient checkpointing keeps each block's input, the residual stream: fp32 (4 B x
     * 768 per token), also where the chain's tensor before the block is 16-bit (GPT-2's
     * MLP dropout, before the residual add) */
    struct est_model m;
    struct carma_err err;
    assert_int_equal(parse_file("tests/fuzz/corpus/summary_modtree/gpt2.txt", &m, &err), 0);
    struct est_opts o = {.batch = 2, .seq = 128, .optimizer = EST_OPT_SGD,
                         .precision = EST_PREC_AMP, .grad_checkpoint = 1};
    struct est_replay_result r;
    assert_int_equal(est_replay(&m, &o, &rwork, &r), 0);
    assert_int_equal(r.checkpointed_units, 12);
    for (uint32_t u = 0; u < rwork.nck; u++)
        assert_float_equal(rwork.ck[u].in_bytes, 2 * 128 * 768 * 4, 0);
}

/* torchsummary's forward at batch 2 before training makes the main thread's workspace
 * while the weight's segment still has room: right after the 6 MiB weight. Without it,
 * at batch 1024 the 4 MiB input and 6 MiB output take that room first (4 MiB left) and
 * the workspace opens a segment after the weight's (20 MiB) and the small one (2). */
static void test_replay_summary_pass(void **state)
{
    (void)state;
    struct est_model m;
    parse_linear_1536(&m);
    struct est_opts o = {.batch = 1024, .optimizer = EST_OPT_SGD};
    struct est_replay_result r;
    assert_int_equal(est_replay(&m, &o, &rwork, &r), 0);
    assert_int_equal(rwork.b[rwork.cublas_ws[0]].addr, 22 * 1048576);
    o.summary_pass = 1;
    assert_int_equal(est_replay(&m, &o, &rwork, &r), 0);
    assert_int_equal(rwork.b[rwork.cublas_ws[0]].addr, 6 * 1048576);
    assert_int_equal(rwork.b[rwork.cublas_ws[0]].size, EST_CUBLAS_WS_KIB * 1024);
}

/* What the replay keeps for backward depends on the activation: ReLU keeps its output
 * (the norm's output before it is freed), GELU its input (both stay). Three blocks of
 * linear 1024 -> 1024, BatchNorm, activation at batch 16384 (64 MiB per output): the
 * peaks were worked out by an independent implementation of the same rules (664 and 792
 * MiB), plus the cuBLAS workspaces' one 20 MiB segment (the weights' segment has 8 MiB
 * left, the forward's 8.125 MiB workspace opens one, the backward's fits beside it). */
static void test_replay_activation_semantics(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    static const struct {
        const char *act;
        unsigned flags;
        double peak;
    } cases[] = {{"ReLU", EST_LF_SAVES_RESULT, 684}, {"GELU", 0, 812}};
    for (size_t i = 0; i < 2; i++) {
        char csv[512];
        int n = snprintf(csv, sizeof csv, "type,out_elems,params\ninput,1024,0\n");
        for (int b = 0; b < 3; b++)
            n += snprintf(csv + n, sizeof csv - (size_t)n,
                          "linear,1024,1049600\nBatchNorm1d,1024,2048\n%s,1024,0\n",
                          cases[i].act);
        snprintf(csv + n, sizeof csv - (size_t)n, "linear,10,10250\n");
        est_model_init(&m, layers, 16);
        assert_int_equal(est_parse_csv(csv, strlen(csv), "t.csv", &m, &err), 0);
        assert_int_equal(m.layers[2].flags, cases[i].flags);
        struct est_opts o = {.batch = 16384, .optimizer = EST_OPT_ADAM};
        struct est_replay_result r;
        assert_int_equal(est_replay(&m, &o, &rwork, &r), 0);
        assert_float_equal(r.peak_mib, cases[i].peak, 1e-9);
    }
    assert_int_equal(est_type_flags(EST_K_ACT, "ReLU6", 5), 0);
    assert_int_equal(est_type_flags(EST_K_ACT, "LeakyReLU", 9), 0);
    assert_int_equal(est_type_flags(EST_K_ACT, "Tanh", 4), EST_LF_SAVES_RESULT);
    assert_int_equal(est_type_flags(EST_K_ACT, "PReLU", 5), EST_LF_WEIGHT_PER_ELEM);
    assert_int_equal(est_type_flags(EST_K_LINEAR, "ReLULinear", 10), 0); /* not an act */
}

/* A gated MLP printed in definition order (gate, up, down, act_fn) runs as
 * down(act(gate(x)) * up(x)): gate's output, the activation's, up's and the product are
 * all kept (4 x 128 MiB here), where the listed order as a chain keeps two. A Python
 * RMSNorm keeps its normalised input too. */
static void test_replay_gated_mlp(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *tree = "Toy(\n"
                       "  (embed): Embedding(1000, 1024)\n"
                       "  (mlp): LlamaMLP(\n"
                       "    (gate_proj): Linear(in_features=1024, out_features=4096, bias=False)\n"
                       "    (up_proj): Linear(in_features=1024, out_features=4096, bias=False)\n"
                       "    (down_proj): Linear(in_features=4096, out_features=1024, bias=False)\n"
                       "    (act_fn): SiLU()\n"
                       "  )\n"
                       "  (norm): LlamaRMSNorm((1024,), eps=1e-06)\n"
                       ")\n";
    assert_int_equal(parse_str(tree, &m, &err), 0);
    assert_int_equal(m.n, 7); /* and the head tied to embed in forward (no head printed) */
    static const uint8_t kinds[] = {EST_K_EMBED, EST_K_LINEAR, EST_K_ACT,   EST_K_LINEAR,
                                    EST_K_LINEAR, EST_K_NORM,  EST_K_LINEAR};
    assert_int_equal(m.layers[6].out, 1000);
    for (size_t i = 0; i < 7; i++)
        assert_int_equal(m.layers[i].kind, kinds[i]);
    assert_int_equal(m.layers[2].out, 4096); /* act_fn runs on gate's output */
    assert_int_equal(m.layers[3].flags, EST_LF_GATED);
    assert_int_equal(m.layers[3].out, 4096);
    assert_int_equal(m.layers[4].out, 1024);
    assert_int_equal(m.layers[5].flags, EST_LF_RMS);
    struct est_opts o = {.batch = 8, .seq = 1024, .optimizer = EST_OPT_SGD};
    struct est_replay_result gated, rms, chain;
    assert_int_equal(est_replay(&m, &o, &rwork, &gated), 0);
    m.layers[3].flags = 0;
    assert_int_equal(est_replay(&m, &o, &rwork, &rms), 0);
    m.layers[5].flags = 0;
    assert_int_equal(est_replay(&m, &o, &rwork, &chain), 0);
    /* The peak falls in the backward, once the norm and the down projection have
     * released what they kept: the gated graph still holds two more 4096-wide tensors
     * (2 x 128 MiB) than the chain there; the normalised input (32 MiB) stays reserved. */
    assert_int_equal(gated.peak_phase, EST_RP_BACKWARD);
    assert_float_equal(gated.peak_mib - rms.peak_mib, 256, 1e-9);
    assert_float_equal(rms.peak_mib - chain.peak_mib, 32, 1e-9);
    /* not a gated MLP: the widths do not chain, or a fourth linear layer */
    const char *plain = "Toy(\n"
                        "  (embed): Embedding(1000, 1024)\n"
                        "  (mlp): Mlp(\n"
                        "    (fc1): Linear(in_features=1024, out_features=4096, bias=False)\n"
                        "    (fc2): Linear(in_features=4096, out_features=4096, bias=False)\n"
                        "    (fc3): Linear(in_features=4096, out_features=1024, bias=False)\n"
                        "    (act): GELU(approximate='none')\n"
                        "  )\n"
                        ")\n";
    assert_int_equal(parse_str(plain, &m, &err), 0);
    for (size_t i = 0; i < m.n; i++)
        assert_int_equal(m.layers[i].flags & EST_LF_GATED, 0);
    assert_int_equal(m.layers[4].kind, EST_K_ACT); /* listed order kept */
    /* a table lists the calls: gate, activation, up, down */
    const char *table = "Layer (type:depth-idx)                   Output Shape              Param #\n"
                        "==========================================================================\n"
                        "LlamaMLP                                 [8, 1024, 1024]           --\n"
                        "├─Linear: 1-1                            [8, 1024, 4096]           4,194,304\n"
                        "├─SiLU: 1-2                              [8, 1024, 4096]           --\n"
                        "├─Linear: 1-3                            [8, 1024, 4096]           4,194,304\n"
                        "├─Linear: 1-4                            [8, 1024, 1024]           4,194,304\n"
                        "==========================================================================\n";
    assert_int_equal(parse_str(table, &m, &err), 0);
    assert_int_equal(m.n, 4);
    assert_int_equal(m.layers[2].flags, EST_LF_GATED);
    assert_int_equal(m.layers[0].flags | m.layers[3].flags, 0);
}

/* Gated MLPs printed otherwise than gate, up, down, act_fn: torchtitan's FeedForward and
 * Mixtral's experts define w1 (gate), w2 (down), w3 (up); torchtitan's and litgpt's
 * LLaMAMLP call F.silu, no module. All run down(act(gate(x)) * up(x)), as Llama's. */
static void test_modtree_gated_orders(void **state)
{
    (void)state;
    static struct est_layer ref_l[EST_MAX_LAYERS];
    struct est_model m, ref;
    struct carma_err err;
#define GATED_TOY(mlp)                                                                             \
    "Toy(\n"                                                                                       \
    "  (embed): Embedding(1000, 1024)\n"                                                           \
    "  (mlp): Mlp(\n" mlp "  )\n"                                                                  \
    "  (norm): LayerNorm((1024,), eps=1e-05, elementwise_affine=True)\n"                           \
    ")\n"
#define GATED_ROW(name, in, out)                                                                   \
    "    (" name "): Linear(in_features=" in ", out_features=" out ", bias=False)\n"
    const char *hf = GATED_TOY(GATED_ROW("gate_proj", "1024", "4096") GATED_ROW(
        "up_proj", "1024", "4096") GATED_ROW("down_proj", "4096", "1024") "    (act_fn): SiLU()\n");
    static const char *const prints[] = {
        GATED_TOY(GATED_ROW("w1", "1024", "4096") GATED_ROW("w2", "4096", "1024")
                      GATED_ROW("w3", "1024", "4096")),
        GATED_TOY(GATED_ROW("fc_1", "1024", "4096") GATED_ROW("fc_2", "1024", "4096")
                      GATED_ROW("proj", "4096", "1024")),
        GATED_TOY(GATED_ROW("w1", "1024", "4096") GATED_ROW("w2", "4096", "1024")
                      GATED_ROW("w3", "1024", "4096") "    (act_fn): SiLU()\n")};
    est_model_init(&ref, ref_l, EST_MAX_LAYERS);
    assert_int_equal(est_parse(hf, strlen(hf), "hf.txt", &ref, &err), 0);
    assert_int_equal(ref.n, 7); /* the last: a head tied to embed in forward */
    struct est_opts o = {.batch = 8, .seq = 512, .optimizer = EST_OPT_ADAMW};
    struct est_result a, b;
    assert_int_equal(est_compute(&ref, est_coef_default(), &o, &rwork, &b, &err), 0);
    for (size_t p = 0; p < 3; p++) {
        if (parse_str(prints[p], &m, &err))
            fail_msg("%s", err.msg);
        assert_int_equal(m.n, 7);
        assert_int_equal(m.layers[1].out, 4096);
        assert_int_equal(m.layers[2].kind, EST_K_ACT);
        assert_int_equal(m.layers[2].out, 4096);
        assert_int_equal(m.layers[2].flags, 0); /* SiLU keeps its input */
        assert_int_equal(m.layers[3].flags, EST_LF_GATED);
        assert_int_equal(m.layers[3].out, 4096);
        assert_int_equal(m.layers[4].out, 1024);
        assert_int_equal(m.params, ref.params);
        assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &a, &err), 0);
        assert_float_equal(a.estimate_mib, b.estimate_mib, 1e-9);
    }
    /* a Sequential runs as listed: E -> I, I -> E, E -> I is a chain */
    const char *seq =
        GATED_TOY("    (0): Linear(in_features=1024, out_features=4096, bias=False)\n"
                  "    (1): Linear(in_features=4096, out_features=1024, bias=False)\n"
                  "    (2): Linear(in_features=1024, out_features=4096, bias=False)\n");
    assert_int_equal(parse_str(seq, &m, &err), 0);
    assert_int_equal(m.n, 6);
    assert_int_equal(m.layers[2].out, 1024);
    for (size_t i = 0; i < m.n; i++)
        assert_int_equal(m.layers[i].flags & EST_LF_GATED, 0);
#undef GATED_ROW
#undef GATED_TOY
}

/* A PEFT model's print (peft >= 0.7): lora.* blocks are their base layer plus a trained
 * adapter, everything else is frozen but modules_to_save copies. */
#define LORA_BLOCK(name, base, in, out, drop)                                              \
    "              (" name "): lora." base "(\n"                                          \
    "                (base_layer): " base "(in_features=" in ", out_features=" out           \
    ", bias=False)\n"                                                                        \
    "                (lora_dropout): ModuleDict(\n"                                          \
    "                  (default): " drop "\n"                                                \
    "                )\n"                                                                    \
    "                (lora_A): ModuleDict(\n"                                                \
    "                  (default): Linear(in_features=" in ", out_features=8, bias=False)\n"  \
    "                )\n"                                                                    \
    "                (lora_B): ModuleDict(\n"                                                \
    "                  (default): Linear(in_features=8, out_features=" out ", bias=False)\n" \
    "                )\n"                                                                    \
    "                (lora_embedding_A): ParameterDict()\n"                                  \
    "                (lora_embedding_B): ParameterDict()\n"                                  \
    "                (lora_magnitude_vector): ModuleDict()\n"                                \
    "              )\n"
#define PEFT_LLAMA(base) PEFT_LLAMA_AS(LORA_BLOCK, base)
#define PEFT_LLAMA_AS(BLOCK, base)                                                         \
    "PeftModelForCausalLM(\n"                                                                \
    "  (base_model): LoraModel(\n"                                                           \
    "    (model): LlamaForCausalLM(\n"                                                       \
    "      (model): LlamaModel(\n"                                                           \
    "        (embed_tokens): Embedding(1000, 256)\n"                                         \
    "        (layers): ModuleList(\n"                                                        \
    "          (0-1): 2 x LlamaDecoderLayer(\n"                                              \
    "            (self_attn): LlamaSdpaAttention(\n"                                         \
    BLOCK("q_proj", base, "256", "256", "Dropout(p=0.05, inplace=False)")              \
    "              (k_proj): Linear(in_features=256, out_features=256, bias=False)\n"       \
    BLOCK("v_proj", base, "256", "256", "Identity()")                                  \
    "              (o_proj): Linear(in_features=256, out_features=256, bias=False)\n"       \
    "              (rotary_emb): LlamaRotaryEmbedding()\n"                                   \
    "            )\n"                                                                        \
    "            (mlp): LlamaMLP(\n"                                                         \
    BLOCK("gate_proj", base, "256", "688", "Identity()")                               \
    "              (up_proj): Linear(in_features=256, out_features=688, bias=False)\n"      \
    "              (down_proj): Linear(in_features=688, out_features=256, bias=False)\n"    \
    "              (act_fn): SiLU()\n"                                                       \
    "            )\n"                                                                        \
    "            (input_layernorm): LlamaRMSNorm((256,), eps=1e-06)\n"                       \
    "            (post_attention_layernorm): LlamaRMSNorm((256,), eps=1e-06)\n"              \
    "          )\n"                                                                          \
    "        )\n"                                                                            \
    "        (norm): LlamaRMSNorm((256,), eps=1e-06)\n"                                      \
    "      )\n"                                                                              \
    "      (lm_head): ModulesToSaveWrapper(\n"                                               \
    "        (original_module): Linear(in_features=256, out_features=1000, bias=False)\n"   \
    "        (modules_to_save): ModuleDict(\n"                                               \
    "          (default): Linear(in_features=256, out_features=1000, bias=False)\n"         \
    "        )\n"                                                                            \
    "      )\n"                                                                              \
    "    )\n"                                                                                \
    "  )\n"                                                                                  \
    ")\n"

static void test_modtree_peft_lora(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    /* prompt learning (prefix tuning: a prompt_encoder after the model) is refused, not
     * read as full training with its word_embeddings a table of its own */
    assert_int_equal(parse_str("PeftModelForSeq2SeqLM(\n"
                               "  (base_model): Net(\n"
                               "    (embed): Embedding(100, 16)\n"
                               "    (lm_head): Linear(in_features=16, out_features=100, "
                               "bias=False)\n"
                               "  )\n"
                               "  (prompt_encoder): ModuleDict(\n"
                               "    (default): PrefixEncoder(\n"
                               "      (embedding): Embedding(16, 64)\n"
                               "    )\n"
                               "  )\n"
                               "  (word_embeddings): Embedding(100, 16)\n"
                               ")\n",
                               &m, &err),
                     -EINVAL);
    assert_non_null(strstr(err.msg, "t.txt:6: a PEFT prompt-learning model"));
    /* peft before its ModuleDict held the encoder itself; P-tuning's PromptEncoder begins
     * with its embedding, SAM's (no PEFT) with pe_layer */
    static const char *const old_peft[] = {"PrefixEncoder(\n      (embedding)",
                                           "PromptEmbedding(\n      (embedding)",
                                           "PromptEncoder(\n      (embedding)"};
    for (size_t i = 0; i < sizeof old_peft / sizeof old_peft[0]; i++) {
        char buf[512];
        snprintf(buf, sizeof buf,
                 "PeftModel(\n  (base_model): Net(\n"
                 "    (lm_head): Linear(in_features=16, out_features=100, bias=False)\n"
                 "  )\n"
                 "  (prompt_encoder): %s: Embedding(16, 64)\n  )\n)\n",
                 old_peft[i]);
        assert_int_equal(parse_str(buf, &m, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "t.txt:5: a PEFT prompt-learning model"));
    }
    assert_int_equal(parse_str("Sam(\n"
                               "  (mask_decoder): Net(\n"
                               "    (fc): Linear(in_features=16, out_features=16, bias=True)\n"
                               "  )\n"
                               "  (prompt_encoder): PromptEncoder(\n"
                               "    (pe_layer): PositionEmbeddingRandom()\n"
                               "    (not_a_point_embed): Embedding(1, 16)\n"
                               "  )\n"
                               ")\n",
                               &m, &err),
                     0);
    assert_int_equal(parse_str(PEFT_LLAMA("Linear"), &m, &err), 0);
    /* embedding 256000; per layer q, k, v, o 65536 each, gate, up, down 176128 each, two
     * norms 256 each, adapters q 4096, v 4096, gate 8 x (256 + 688); final norm; the
     * head's frozen original and trained copy */
    assert_int_equal(m.params, 256000 + 2 * (791040 + 4096 + 4096 + 7552) + 256 + 512000);
    assert_int_equal(m.params - m.frozen, 2 * (4096 + 4096 + 7552) + 256000);
    const struct est_layer *q = NULL, *v = NULL, *gate = NULL, *up = NULL;
    size_t lin = 0, orig = 0, saved = 0;
    for (size_t i = 0; i < m.n; i++) {
        const struct est_layer *l = &m.layers[i];
        assert_true(l->frozen <= l->params);
        if (l->kind == EST_K_OTHER && l->params) {
            assert_int_equal(l->frozen, 256000); /* original_module: weights, no tensor */
            orig++;
        }
        if (l->kind != EST_K_LINEAR)
            continue;
        if (l->flags & EST_LF_TRAINED) {
            assert_int_equal(l->frozen, 0);
            assert_int_equal(l->out, 1000);
            saved++;
        } else if (!l->rank) {
            assert_int_equal(l->frozen, l->params); /* k, o, up, down */
        }
        switch (lin++) {
        case 0: q = l; break;
        case 2: v = l; break;
        case 4: gate = l; break;
        case 5: up = l; break;
        default: break;
        }
    }
    assert_int_equal(orig, 1);
    assert_int_equal(saved, 1);
    assert_int_equal(lin, 7 + 1); /* the adapters are no rows of their own */
    assert_non_null(q);
    assert_int_equal(q->rank, 8);
    assert_int_equal(q->frozen, 65536);
    assert_int_equal(q->params, 65536 + 4096);
    assert_int_equal(q->flags & EST_LF_LORA_DROP, EST_LF_LORA_DROP);
    assert_int_equal(v->rank, 8);
    assert_int_equal(v->flags & EST_LF_LORA_DROP, 0); /* Identity(): no dropout */
    assert_int_equal(gate->rank, 8);
    assert_int_equal(gate->out, 688);
    /* a LoRA-wrapped gate still makes a gated MLP */
    assert_int_equal(up->flags & EST_LF_GATED, EST_LF_GATED);

    /* Optimizer state for the trained parameters only (AdamW: 8 B each), and no
     * gradient for a frozen one. */
    struct est_opts o = {.batch = 4, .seq = 128, .optimizer = EST_OPT_ADAMW};
    struct est_result r;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &r, &err), 0);
    double trained_mib = (double)(m.params - m.frozen) * 8 / (1024.0 * 1024.0);
    assert_true(r.optimizer_mib >= trained_mib && r.optimizer_mib < trained_mib + 0.5);
    struct est_replay_result lora, full;
    assert_int_equal(est_replay(&m, &o, &rwork, &lora), 0);
    for (size_t i = 0; i < m.n; i++) /* the same layers, all trained */
        if (!m.layers[i].rank)
            m.layers[i].frozen = 0;
    m.frozen = 0;
    for (size_t i = 0; i < m.n; i++)
        m.frozen += m.layers[i].frozen * m.layers[i].count;
    assert_int_equal(est_replay(&m, &o, &rwork, &full), 0);
    assert_true(lora.peak_allocated_mib < full.peak_allocated_mib);

    /* A 4-bit base (QLoRA) stores 0.5 B per weight plus an fp32 absmax per 64. */
    struct est_result r4;
    assert_int_equal(parse_str(PEFT_LLAMA("Linear4bit"), &m, &err), 0);
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &r4, &err), 0);
    double base = 2 * (65536 + 65536 + 176128);
    assert_float_equal(r.weights_mib - r4.weights_mib, base * (4 - 0.5625) / (1024.0 * 1024.0),
                       0.05);
    /* --precision bf16: a frozen base loaded in 16 bits */
    struct est_result rb;
    o.precision = EST_PREC_BF16;
    assert_int_equal(parse_str(PEFT_LLAMA("Linear"), &m, &err), 0);
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &rb, &err), 0);
    double frozen_mib = (double)m.frozen * 2 / (1024.0 * 1024.0); /* 2 B saved on each */
    assert_true(r.weights_mib - rb.weights_mib > frozen_mib - 0.6); /* the head's copies */
    assert_true(r.weights_mib - rb.weights_mib <= frozen_mib + 0.01);

    /* Adapters that are not linear layers, and peft < 0.7's layout, are refused. */
    const char *conv = "Net(\n"
                       "  (fc): lora.Linear(\n"
                       "    (base_layer): Linear(in_features=16, out_features=16, bias=True)\n"
                       "    (lora_A): ModuleDict(\n"
                       "      (default): Conv2d(16, 8, kernel_size=(1, 1), stride=(1, 1))\n"
                       "    )\n"
                       "  )\n"
                       ")\n";
    assert_int_equal(parse_str(conv, &m, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "t.txt:5: a LoRA adapter Conv2d"));
    const char *old = "Net(\n"
                      "  (fc): lora.Linear(\n"
                      "    (lora_A): ModuleDict(\n"
                      "      (default): Linear(in_features=16, out_features=8, bias=False)\n"
                      "    )\n"
                      "  )\n"
                      ")\n";
    assert_int_equal(parse_str(old, &m, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "t.txt:2: a LoRA block without a base_layer"));

    /* torchinfo prints a frozen layer's parameters in parentheses */
    const char *table = "Layer (type:depth-idx)                   Output Shape              Param #\n"
                        "==========================================================================\n"
                        "Net                                      [8, 10]                   --\n"
                        "├─Linear: 1-1                            [8, 1024]                 (1,049,600)\n"
                        "├─ReLU: 1-2                              [8, 1024]                 --\n"
                        "├─Linear: 1-3                            [8, 10]                   10,250\n"
                        "==========================================================================\n";
    assert_int_equal(parse_str(table, &m, &err), 0);
    assert_int_equal(m.params, 1049600 + 10250);
    assert_int_equal(m.frozen, 1049600);
    assert_int_equal(m.layers[0].frozen, 1049600);
    assert_int_equal(m.layers[2].frozen, 0);
}

/* Tensors a replay left allocated. (Their bytes can differ between two replays that end
 * with the same tensors: a cached block is taken whole when the rest is too small to
 * split.) */
static size_t live_tensors(const struct est_replay_work *w)
{
    size_t n = 0;
    for (uint32_t i = 0; i < w->nb; i++)
        n += !w->b[i].is_free && w->b[i].refs > 0;
    return n;
}

/* DistributedDataParallel's buckets: each closes once it holds its limit (1 MiB for the
 * first, 25 MiB after), so a bucket may pass it by its last tensor. */
#define BARE_QLORA                                                                               \
    "PeftModelForCausalLM(\n"                                                                    \
    "  (base_model): LoraModel(\n"                                                               \
    "    (model): M(\n"                                                                          \
    "      (embed): Embedding(1000, 256)\n"                                                      \
    "      (self_attn): LlamaSdpaAttention(\n"                                                   \
    LORA_BLOCK("q_proj", "Linear4bit", "256", "256", "Identity()")                               \
    "              (k_proj): Linear4bit(in_features=256, out_features=256, bias=False)\n"        \
    "              (v_proj): Linear8bitLt(in_features=256, out_features=256, bias=False)\n"      \
    "              (o_proj): Linear4bit(in_features=256, out_features=256, bias=False)\n"        \
    "      )\n"                                                                                  \
    "      (lm_head): Linear(in_features=256, out_features=1000, bias=False)\n"                  \
    "    )\n"                                                                                    \
    "  )\n"                                                                                      \
    ")\n"

/* QLoRA with some target_modules: the layers without adapters print as bitsandbytes'
 * bare Linear4bit / Linear8bitLt, stored in 4 or 8 bits as a lora block's base_layer. */
static void test_modtree_peft_bare_quantized(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *t = BARE_QLORA;
    if (parse_str(t, &m, &err))
        fail_msg("%s", err.msg);
    static const uint8_t bits[] = {0, 4, 4, 8, 4, 0}; /* embed, q, k, v, o, lm_head */
    size_t r = 0;
    for (size_t i = 0; i < m.n; i++) {
        const struct est_layer *l = &m.layers[i];
        if (l->kind != EST_K_LINEAR && l->kind != EST_K_EMBED)
            continue;
        assert_true(r < sizeof bits);
        assert_int_equal(l->wbits, bits[r]);
        assert_int_equal(l->frozen, l->rank ? 65536 : l->params);
        if (bits[r] == 4)
            assert_float_equal(est_frozen_bytes(l, EST_PREC_BF16), 0.5625, 1e-12);
        r++;
    }
    assert_int_equal(r, sizeof bits);
}

/* peft before 0.7 prints an adapted layer as its base class, its arguments on their own
 * line (PyTorch's layout for a module with an extra_repr and children), then the LoRA
 * parts: read as peft >= 0.7's lora.* block with its base_layer. */
#define OLD_LORA_BLOCK(name, base, in, out, drop)                                          \
    "              (" name "): " base "(\n"                                               \
    "                in_features=" in ", out_features=" out ", bias=False\n"              \
    "                (lora_dropout): ModuleDict(\n"                                          \
    "                  (default): " drop "\n"                                                \
    "                )\n"                                                                    \
    "                (lora_A): ModuleDict(\n"                                                \
    "                  (default): Linear(in_features=" in ", out_features=8, bias=False)\n"  \
    "                )\n"                                                                    \
    "                (lora_B): ModuleDict(\n"                                                \
    "                  (default): Linear(in_features=8, out_features=" out ", bias=False)\n" \
    "                )\n"                                                                    \
    "                (lora_embedding_A): ParameterDict()\n"                                  \
    "                (lora_embedding_B): ParameterDict()\n"                                  \
    "              )\n"

static void test_modtree_peft_old_layout(void **state)
{
    (void)state;
    static struct est_layer old_l[EST_MAX_LAYERS];
    static const char *const bases[] = {"Linear", "Linear4bit", "Linear8bitLt"};
    struct est_model m, old;
    struct carma_err err;
    for (size_t b = 0; b < 3; b++) {
        const char *t = b == 0   ? PEFT_LLAMA_AS(OLD_LORA_BLOCK, "Linear")
                        : b == 1 ? PEFT_LLAMA_AS(OLD_LORA_BLOCK, "Linear4bit")
                                 : PEFT_LLAMA_AS(OLD_LORA_BLOCK, "Linear8bitLt");
        const char *n = b == 0   ? PEFT_LLAMA("Linear")
                        : b == 1 ? PEFT_LLAMA("Linear4bit")
                                 : PEFT_LLAMA("Linear8bitLt");
        est_model_init(&old, old_l, EST_MAX_LAYERS);
        if (est_parse(t, strlen(t), "old.txt", &old, &err))
            fail_msg("%s: %s", bases[b], err.msg);
        assert_int_equal(parse_str(n, &m, &err), 0);
        assert_int_equal(old.n, m.n);
        assert_int_equal(old.params, m.params);
        assert_int_equal(old.frozen, m.frozen);
        /* the adapters train: r (in + out) each, q, v and gate in 2 layers, and lm_head's copy */
        assert_int_equal(old.params - old.frozen, 2 * (8 * 512 + 8 * 512 + 8 * 944) + 256000);
        for (size_t i = 0; i < m.n; i++) {
            const struct est_layer *a = &old.layers[i], *c = &m.layers[i];
            assert_int_equal(a->kind, c->kind);
            assert_int_equal(a->out, c->out);
            assert_int_equal(a->params, c->params);
            assert_int_equal(a->frozen, c->frozen);
            assert_int_equal(a->rank, c->rank);
            assert_int_equal(a->flags, c->flags);
            assert_int_equal(a->wbits, c->wbits);
            assert_int_equal(a->count, c->count);
            assert_int_equal(a->unit, c->unit);
            assert_int_equal(a->shares_input, c->shares_input);
        }
        struct est_opts o = {.batch = 4, .seq = 128, .optimizer = EST_OPT_ADAMW,
                             .precision = EST_PREC_BF16};
        struct est_result ro, rn;
        assert_int_equal(est_compute(&old, est_coef_default(), &o, &rwork, &ro, &err), 0);
        assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &rn, &err), 0);
        assert_float_equal(ro.estimate_mib, rn.estimate_mib, 1e-9);
        assert_float_equal(ro.bound_mib, rn.bound_mib, 1e-9);
    }
    /* Another block with its own arguments and children: read as a leaf of its class
     * (its first child) where its class is sized from them. */
    const char *own = "Net(\n"
                      "  (fc): QuantLinear(\n"
                      "    in_features=16, out_features=32, bias=True\n"
                      "    (weight_quant): WeightQuantProxyFromInjector()\n"
                      "  )\n"
                      "  (act): ReLU()\n"
                      ")\n";
    if (parse_str(own, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.params, 16 * 32 + 32);
    assert_int_equal(m.frozen, 0); /* quantization-aware training: its weight trains */
    assert_int_equal(m.layers[0].kind, EST_K_LINEAR);
    assert_int_equal(m.layers[0].out, 32);
    /* A pooling with children (transformers' BitMaxPool2d, a MaxPool2d holding its
     * padding module): the window of its own line. */
    const char *pool = "Net(\n"
                       "  (conv): Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), "
                       "padding=(1, 1))\n"
                       "  (pooler): BitMaxPool2d(\n"
                       "    kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), dilation=(1, 1), "
                       "ceil_mode=False\n"
                       "    (pad): Identity()\n"
                       "  )\n"
                       "  (head): Conv2d(8, 4, kernel_size=(1, 1), stride=(1, 1))\n"
                       ")\n";
    if (parse_image_str(pool, 32, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(kind_nth(&m, EST_K_POOL, 0), 8 * 16 * 16);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 1), 4 * 16 * 16);
    /* Refused, naming the line and what to do: a class not sized from its arguments, a
     * second line of them, a line after the children, a LoRA layer not linear. */
    const char *unknown = "Net(\n"
                          "  (blk): Mixer(\n"
                          "    dim=64, heads=4\n"
                          "    (fc): Linear(in_features=64, out_features=64, bias=True)\n"
                          "  )\n"
                          ")\n";
    assert_int_equal(parse_str(unknown, &m, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "t.txt:3: 'dim=64, heads=4': the arguments (extra_repr) of "
                                    "the Mixer block opened at line 2"));
    assert_non_null(strstr(err.msg, "give a torchinfo table"));
    const char *two = "Net(\n"
                      "  (fc): Linear(\n"
                      "    in_features=64, out_features=64, bias=True\n"
                      "    scale=2\n"
                      "    (lora_A): ModuleDict()\n"
                      "  )\n"
                      ")\n";
    assert_int_equal(parse_str(two, &m, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "t.txt:4: 'scale=2': a second line of arguments of the "
                                    "Linear block opened at line 2"));
    const char *after = "Net(\n"
                        "  (blk): Block(\n"
                        "    (fc): Linear(in_features=64, out_features=64, bias=True)\n"
                        "    in_features=64, out_features=64, bias=True\n"
                        "  )\n"
                        ")\n";
    assert_int_equal(parse_str(after, &m, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "t.txt:4: 'in_features=64, out_features=64, bias=True' is "
                                    "no '(name): Module(...)' line, and it follows children"));
    const char *emb = "Net(\n"
                      "  (wte): Embedding(\n"
                      "    1000, 64\n"
                      "    (lora_dropout): ModuleDict()\n"
                      "  )\n"
                      ")\n";
    assert_int_equal(parse_str(emb, &m, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "t.txt:3: '1000, 64': the arguments of the Embedding "
                                    "block opened at line 2, whose children are LoRA parts"));
    const char *bad = "Net(\n"
                      "  (fc):Linear(in_features=64, out_features=64, bias=True)\n"
                      ")\n";
    assert_int_equal(parse_str(bad, &m, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "t.txt:2: '(fc):Linear(in_features=64, out_features=64, "
                                    "bias=True)': expected '(name): Module(...)'"));
    assert_int_equal(parse_str("Net(\n  (layers): ModuleList(\n    ...\n  )\n)\n", &m, &err),
                     -EINVAL);
    assert_string_equal(err.msg, "t.txt:3: '...': part of the print left out; carma needs every "
                                 "layer: give the whole print");
    /* one ')' too many after the tree */
    assert_int_equal(parse_str("Net(\n  (fc): Linear(in_features=4, out_features=4)\n)\n)\n",
                               &m, &err),
                     -EINVAL);
    assert_string_equal(err.msg, "t.txt:4: ')' after the module tree closed (line 3): one ')' "
                                 "too many, or a block's opening line lost; give the print as "
                                 "PyTorch writes it");
}

/* A quantized linear layer's packed weight cannot train (bitsandbytes' Params4bit and
 * Int8Params, HQQ's, AWQ's buffers): frozen and stored at its bits in any print, not
 * only in a PEFT one. A print with nothing else is refused: nothing to train. */
static void test_modtree_quantized_frozen(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *t =
        "M(\n"
        "  (embed): Embedding(1000, 256)\n"
        "  (q): Linear4bit(in_features=256, out_features=256, bias=False)\n"
        "  (k): Linear8bitLt(in_features=256, out_features=256, bias=False)\n"
        "  (v): HQQLinear(in_features=256, out_features=256, bias=True)\n"
        "  (o): WQLinear_GEMM(in_features=256, out_features=256, bias=False, w_bit=4, "
        "group_size=128)\n"
        "  (up): WQLinear_GEMM(in_features=256, out_features=256, bias=False, w_bit=8, "
        "group_size=128)\n"
        "  (norm): LayerNorm((256,), eps=1e-05, elementwise_affine=True)\n"
        "  (lm_head): Linear(in_features=256, out_features=1000, bias=False)\n"
        ")\n";
    if (parse_str(t, &m, &err))
        fail_msg("%s", err.msg);
    static const uint8_t bits[] = {0, 4, 8, 16, 4, 16, 0, 0};
    assert_int_equal(m.n, 8);
    uint64_t q = 0;
    for (size_t i = 0; i < m.n; i++) {
        const struct est_layer *l = &m.layers[i];
        assert_int_equal(l->wbits, bits[i]);
        assert_int_equal(l->frozen, bits[i] ? l->params : 0);
        q += bits[i] ? l->params : 0;
    }
    assert_int_equal(q, 5 * 65536 + 256);
    assert_int_equal(m.frozen, q);
    assert_int_equal(m.quant_params, q);
    assert_int_equal(m.quant_line, 3);
    assert_float_equal(est_frozen_bytes(&m.layers[3], EST_PREC_FP32), 2, 1e-12); /* HQQ */
    /* no gradient or optimizer state for them: AdamW keeps 8 B for each trained one */
    struct est_opts o = {.batch = 2, .seq = 64, .optimizer = EST_OPT_ADAMW};
    struct est_result r;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &r, &err), 0);
    double trained_mib = (double)(m.params - m.frozen) * 8 / (1024.0 * 1024.0);
    assert_true(r.optimizer_mib >= trained_mib && r.optimizer_mib < trained_mib + 0.5);
    /* nothing else: nothing to train */
    const char *all = "M(\n"
                      "  (fc1): Linear4bit(in_features=256, out_features=512, bias=False)\n"
                      "  (act): ReLU()\n"
                      "  (fc2): Linear4bit(in_features=512, out_features=10, bias=False)\n"
                      ")\n";
    assert_int_equal(parse_str(all, &m, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "t.txt:2: nothing to train: every parameter is in a "
                                    "quantized layer"));
    assert_non_null(strstr(err.msg, "get_peft_model"));
    /* A PEFT print: expected there, no note */
    assert_int_equal(parse_str(BARE_QLORA, &m, &err), 0);
    assert_int_equal(m.quant_params, 0);
}

/* Baichuan lists its MLP gate, down, up: the unsized RMSNorm() after it reads the
 * residual width (down's output in call order), not up's inner width; its
 * NormHead(), which holds its own V x E weight, is no norm: the head assumed over the
 * token table stands for it, and the note says so. */
static void test_modtree_unsized_after_moved_rows(void **state)
{
    (void)state;
    static struct est_layer ref_l[EST_MAX_LAYERS];
    struct est_model m, ref;
    struct carma_err err;
#define BAICHUAN(norm, head)                                                                       \
    "LM(\n"                                                                                        \
    "  (embed_tokens): Embedding(1000, 128, padding_idx=0)\n"                                      \
    "  (layers): ModuleList(\n"                                                                    \
    "    (0-1): 2 x DecoderLayer(\n"                                                               \
    "      (self_attn): Attention(\n"                                                              \
    "        (W_pack): Linear(in_features=128, out_features=384, bias=False)\n"                    \
    "        (o_proj): Linear(in_features=128, out_features=128, bias=False)\n"                    \
    "      )\n"                                                                                    \
    "      (mlp): MLP(\n"                                                                          \
    "        (gate_proj): Linear(in_features=128, out_features=344, bias=False)\n"                 \
    "        (down_proj): Linear(in_features=344, out_features=128, bias=False)\n"                 \
    "        (up_proj): Linear(in_features=128, out_features=344, bias=False)\n"                   \
    "        (act_fn): SiLU()\n"                                                                   \
    "      )\n"                                                                                    \
    "      (input_layernorm): " norm "\n"                                                          \
    "      (post_attention_layernorm): " norm "\n"                                                 \
    "    )\n"                                                                                      \
    "  )\n"                                                                                        \
    "  (norm): " norm "\n"                                                                         \
    "  (lm_head): " head "\n"                                                                      \
    ")\n"
    const char *bare = BAICHUAN("RMSNorm()", "NormHead()");
    const char *sized = BAICHUAN("RMSNorm((128,), eps=1e-06)",
                                 "Linear(in_features=128, out_features=1000, bias=False)");
    est_model_init(&ref, ref_l, EST_MAX_LAYERS);
    assert_int_equal(est_parse(sized, strlen(sized), "s.txt", &ref, &err), 0);
    if (parse_str(bare, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.params, ref.params);
    size_t norms = 0;
    for (size_t i = 0; i < m.n; i++)
        if (m.layers[i].kind == EST_K_NORM) {
            assert_int_equal(m.layers[i].out, 128);
            norms++;
        }
    assert_int_equal(norms, 3); /* NormHead() is none */
    assert_int_equal(m.tied_head_line, 2);
    assert_int_equal(m.tied_head_bare, 20);
    assert_int_equal(m.layers[m.n - 1].out, 1000);
    /* a head tied in forward, no head printed: the note of that kind */
    const char *none = BAICHUAN("RMSNorm()", "Dropout(p=0.0, inplace=False)");
    assert_int_equal(parse_str(none, &m, &err), 0);
    assert_int_equal(m.tied_head_line, 2);
    assert_int_equal(m.tied_head_bare, 0);
#undef BAICHUAN
}

/* Prints that hide what a summary needs are refused saying what to give: a
 * sentence-transformers model card (its Transformer module wraps the encoder), a
 * state-space mixer (its selective scan runs as a function, in no summary). */
static void test_modtree_hidden_insides(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *st =
        "SentenceTransformer(\n"
        "  (0): Transformer({'max_seq_length': 256, 'do_lower_case': False}) with "
        "Transformer model: BertModel \n"
        "  (1): Pooling({'word_embedding_dimension': 384, 'pooling_mode_mean_tokens': True})\n"
        "  (2): Normalize()\n"
        ")\n";
    assert_true(parse_str(st, &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:2: Transformer(...) with Transformer model: BertModel: "
                                 "a sentence-transformers print, whose module hides the encoder "
                                 "it wraps; print(model[0].auto_model) prints the encoder's "
                                 "module tree (the pooling and normalisation after it keep "
                                 "little), or give a torchinfo table");
    const char *mamba =
        "Mamba(\n"
        "  (embeddings): Embedding(1000, 64)\n"
        "  (mixer): MambaMixer(\n"
        "    (conv1d): Conv1d(128, 128, kernel_size=(4,), stride=(1,), padding=(3,), "
        "groups=128)\n"
        "    (act): SiLU()\n"
        "    (in_proj): Linear(in_features=64, out_features=256, bias=False)\n"
        "    (x_proj): Linear(in_features=128, out_features=36, bias=False)\n"
        "    (dt_proj): Linear(in_features=4, out_features=128, bias=True)\n"
        "    (out_proj): Linear(in_features=128, out_features=64, bias=False)\n"
        "  )\n"
        ")\n";
    assert_true(parse_str(mamba, &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:4: Conv1d: a causal depthwise convolution, part of a "
                                 "state-space or recurrent mixer (Mamba's MambaMixer with "
                                 "x_proj and dt_proj, Griffin's recurrent block), whose "
                                 "selective scan runs as a function: what it keeps is in no "
                                 "summary, a torchinfo table's neither. Measure a training "
                                 "run's peak (torch.cuda.max_memory_reserved()) and submit with "
                                 "'carma submit --mem SIZE'");
    /* a Conv1d that is not causal (a Conformer's, padded on both sides) outside attention
     * keeps the message asking for a torchinfo table (inside attention beside its
     * projections, ConvBERT's, it is read per token: test_modtree_sequence_conv) */
    const char *conformer = "Conv(\n"
                            "  (emb): Embedding(1000, 64)\n"
                            "  (dw): Conv1d(64, 64, kernel_size=(31,), stride=(1,), "
                            "padding=(15,), groups=64)\n"
                            ")\n";
    assert_true(parse_str(conformer, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:3: Conv1d in a module tree: the print has no "
                                    "spatial sizes"));
}

/* A sequence model whose output head is no module (OLMo: F.linear(x, wte.weight)): its
 * print has a token table, ends with a norm and maps nothing to the vocabulary. The
 * head tied in forward is added, as if printed last; models with a printed head, a
 * classifier or a pooler are left as they are. */
static void test_modtree_tied_head(void **state)
{
    (void)state;
    static struct est_layer ref_l[EST_MAX_LAYERS];
    struct est_model m, ref;
    struct carma_err err;
#define TIED_LM(tail)                                                                      \
    "LM(\n"                                                                                \
    "  (transformer): ModuleDict(\n"                                                       \
    "    (wte): Embedding(5000, 256)\n"                                                    \
    "    (blocks): ModuleList(\n"                                                          \
    "      (0-1): 2 x Block(\n"                                                            \
    "        (norm): LayerNorm((256,), eps=1e-05, elementwise_affine=True)\n"              \
    "        (att_proj): Linear(in_features=256, out_features=768, bias=True)\n"           \
    "        (attn_out): Linear(in_features=256, out_features=256, bias=True)\n"           \
    "        (ff_proj): Linear(in_features=256, out_features=1024, bias=True)\n"           \
    "        (act): GELU(approximate='none')\n"                                            \
    "        (ff_out): Linear(in_features=1024, out_features=256, bias=True)\n"            \
    "      )\n"                                                                            \
    "    )\n"                                                                              \
    "    (ln_f): LayerNorm((256,), eps=1e-05, elementwise_affine=True)\n"                  \
    "    (wpe): Embedding(1024, 256)\n"                                                    \
    "  )\n" tail ")\n"
    const char *fn = TIED_LM("");
    const char *head =
        TIED_LM("  (lm_head): Linear(in_features=256, out_features=5000, bias=False)\n");
    if (parse_str(fn, &m, &err))
        fail_msg("%s", err.msg);
    const struct est_layer *h = &m.layers[m.n - 1];
    assert_int_equal(h->kind, EST_K_LINEAR);
    assert_int_equal(h->out, 5000);
    assert_int_equal(h->params, 256 * 5000);
    assert_int_equal(h->per_token, 1);
    assert_int_equal(m.tied_head_line, 3);
    assert_int_equal(m.tied_head_rows, 5000);
    assert_int_equal(m.tied_head_width, 256);
    est_model_init(&ref, ref_l, EST_MAX_LAYERS);
    assert_int_equal(est_parse(head, strlen(head), "h.txt", &ref, &err), 0);
    assert_int_equal(ref.tied_head_line, 0);
    assert_int_equal(ref.n, m.n);
    assert_int_equal(ref.params, m.params);
    struct est_opts o = {.batch = 8, .seq = 512, .optimizer = EST_OPT_ADAMW};
    struct est_result a, b;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &a, &err), 0);
    assert_int_equal(est_compute(&ref, est_coef_default(), &o, &rwork, &b, &err), 0);
    assert_float_equal(a.estimate_mib, b.estimate_mib, 1e-9);
    assert_float_equal(a.bound_mib, b.bound_mib, 1e-9);
    /* an encoder with a classifier, or ending in a pooler: no head added */
    static const char *const kept[] = {
        TIED_LM("  (classifier): Linear(in_features=256, out_features=3, bias=True)\n"),
        TIED_LM("  (pooler): Pooler(\n"
                "    (dense): Linear(in_features=256, out_features=256, bias=True)\n"
                "    (activation): Tanh()\n"
                "  )\n")};
    for (size_t i = 0; i < 2; i++) {
        est_model_init(&ref, ref_l, EST_MAX_LAYERS);
        assert_int_equal(est_parse(kept[i], strlen(kept[i]), "k.txt", &ref, &err), 0);
        assert_int_equal(ref.tied_head_line, 0);
        assert_int_not_equal(ref.layers[ref.n - 1].out, 5000);
    }
    /* a PEFT print freezes it with the table it is tied to */
    const char *peft = "PeftModelForCausalLM(\n"
                       "  (base_model): LoraModel(\n"
                       "    (model): M(\n"
                       "      (embed): Embedding(1000, 256)\n"
                       LORA_BLOCK("q_proj", "Linear", "256", "256", "Identity()")
                       "      (norm): LayerNorm((256,), eps=1e-05, elementwise_affine=True)\n"
                       "    )\n"
                       "  )\n"
                       ")\n";
    if (parse_str(peft, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.layers[m.n - 1].out, 1000);
    assert_int_equal(m.layers[m.n - 1].frozen, 256000);
    assert_int_equal(m.params - m.frozen, 8 * 512);
#undef TIED_LM
}

static void test_ddp_buckets(void **state)
{
    (void)state;
    const double M = 1024.0 * 1024.0;
    struct est_ddp_fill f = {0};
    assert_true(est_ddp_bucket(&f, 0.5 * M) == 0);
    assert_float_equal(est_ddp_bucket(&f, 0.6 * M), 1.1 * M, 1e-6);
    assert_true(est_ddp_bucket(&f, 10 * M) == 0);
    assert_true(est_ddp_bucket(&f, 10 * M) == 0);
    assert_float_equal(est_ddp_bucket(&f, 10 * M), 30 * M, 1e-6);
    assert_float_equal(est_ddp_bucket(&f, 90 * M), 90 * M, 1e-6); /* one large tensor */
    assert_true(est_ddp_bucket(&f, 3 * M) == 0);
    assert_float_equal(f.cur, 3 * M, 1e-6); /* the caller closes the last */
    assert_int_equal(f.n, 3);
}

/* Under DDP the replay holds one more copy of every trained gradient from construction
 * on, in one bucket until the second forward rebuilds them: one 1024 -> 1536 linear
 * layer (6 MiB of weight and bias) holds 6 MiB more at its peak, counted as buckets, and
 * a PEFT model only its adapters' (and saved copy's) gradients. The per-kind model adds
 * the same bytes; more GPUs than EST_MAX_GPUS are refused. */
static void test_replay_ddp(void **state)
{
    (void)state;
    struct est_model m;
    parse_linear_1536(&m);
    const double grad_mib = 1574400.0 * 4 / (1024.0 * 1024.0);
    for (int opt = EST_OPT_SGD; opt <= EST_OPT_ADAMW; opt++) {
        struct est_opts o = {.batch = 64, .optimizer = (enum est_optimizer)opt};
        struct est_replay_result one, two;
        assert_int_equal(est_replay(&m, &o, &rwork, &one), 0);
        o.gpus = 2;
        assert_int_equal(est_replay(&m, &o, &rwork, &two), 0);
        assert_float_equal(two.peak_allocated_mib - one.peak_allocated_mib, grad_mib, 0.01);
        assert_float_equal(two.cat_mib[EST_RC_BUCKETS], grad_mib, 0.01);
        assert_true(one.cat_mib[EST_RC_BUCKETS] == 0);
        assert_true(two.peak_mib >= one.peak_mib); /* cached room may take the bucket */
    }
    struct carma_err err;
    assert_int_equal(parse_str(PEFT_LLAMA("Linear"), &m, &err), 0);
    struct est_opts o = {.batch = 4, .seq = 128, .optimizer = EST_OPT_ADAMW, .gpus = 8};
    struct est_replay_result r;
    assert_int_equal(est_replay(&m, &o, &rwork, &r), 0);
    double trained_mib = (double)(m.params - m.frozen) * 4 / (1024.0 * 1024.0);
    /* a bucket's block keeps a remainder of up to 1 MiB unsplit */
    assert_true(r.cat_mib[EST_RC_BUCKETS] >= trained_mib &&
                r.cat_mib[EST_RC_BUCKETS] < trained_mib + 1);

    struct est_result a, b;
    assert_int_equal(parse_into("data/estimator/imagenet-tables/resnet50.csv", 0, layers, &m,
                                &err),
                     0);
    o = (struct est_opts){.batch = 32, .optimizer = EST_OPT_ADAM};
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &a, &err), 0);
    o.gpus = 4;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &b, &err), 0);
    assert_true(a.buckets_mib == 0);
    assert_float_equal(b.buckets_mib, a.gradients_mib, 0.05);
    assert_true(fabs(b.estimate_mib - a.estimate_mib - b.buckets_mib) < 1e-6);
    assert_true(b.bound_mib > a.bound_mib);
    o.gpus = EST_MAX_GPUS + 1;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &b, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "GPUs"));
}

/* Gradient checkpointing: each layer of a ModuleList is a unit that keeps only its
 * input, and its recomputation in backward leaves nothing behind. */
static void test_replay_checkpointing(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    assert_int_equal(parse_str(PEFT_LLAMA("Linear"), &m, &err), 0);
    size_t starts = 0, ends = 0, first = SIZE_MAX, last = 0;
    for (size_t i = 0; i < m.n; i++) {
        if (m.layers[i].unit & EST_UNIT_START) {
            starts++;
            first = i;
        }
        if (m.layers[i].unit & EST_UNIT_END) {
            ends++;
            last = i;
        }
    }
    /* "(0-1): 2 x LlamaDecoderLayer(": one row starts the unit (each repeat runs it),
     * the list's last row ends it */
    assert_int_equal(starts, 1);
    assert_int_equal(ends, 1);
    assert_int_equal(m.layers[first].count, 2);
    assert_int_equal(m.layers[last].count, 2);
    assert_int_equal(m.layers[last + 1].count, 1);
    for (int p = 0; p < 2; p++) {
        struct est_opts o = {.batch = 8, .seq = 256, .optimizer = EST_OPT_ADAMW,
                             .precision = p ? EST_PREC_AMP : EST_PREC_FP32};
        struct est_replay_result plain, ck;
        assert_int_equal(est_replay(&m, &o, &rwork, &plain), 0);
        size_t live = live_tensors(&rwork);
        o.grad_checkpoint = 1;
        assert_int_equal(est_replay(&m, &o, &rwork, &ck), 0);
        assert_true(ck.peak_allocated_mib < plain.peak_allocated_mib);
        assert_int_equal(live_tensors(&rwork), live); /* the same tensors outlive the steps */
    }
    /* layers printed one by one under a numbered list: one unit each */
    const char *tree = "Net(\n"
                       "  (embed): Embedding(100, 64)\n"
                       "  (layers): ModuleList(\n"
                       "    (0): Block(\n"
                       "      (fc1): Linear(in_features=64, out_features=256, bias=True)\n"
                       "      (act): GELU(approximate='none')\n"
                       "      (fc2): Linear(in_features=256, out_features=64, bias=True)\n"
                       "    )\n"
                       "    (1): Block(\n"
                       "      (fc1): Linear(in_features=64, out_features=256, bias=True)\n"
                       "      (act): GELU(approximate='none')\n"
                       "      (fc2): Linear(in_features=256, out_features=64, bias=True)\n"
                       "    )\n"
                       "  )\n"
                       "  (head): Linear(in_features=64, out_features=100, bias=True)\n"
                       ")\n";
    assert_int_equal(parse_str(tree, &m, &err), 0);
    assert_int_equal(m.n, 8);
    static const uint8_t units[] = {0, EST_UNIT_START, 0, 0, EST_UNIT_START, 0, EST_UNIT_END, 0};
    for (size_t i = 0; i < m.n; i++)
        assert_int_equal(m.layers[i].unit, units[i]);
}

/* Gradient accumulation (est_opts.grad_accum): micro-batches after a step's first run
 * their forward and backward with every .grad allocated, and each new gradient is
 * allocated, added to .grad and freed (AccumulateGrad); zero_grad(set_to_none=False)
 * keeps them the same way. An MLP whose peak is at the start of the backward (batch
 * 4096: the gradients are all freed there without it) reserves its gradients' bytes
 * more, 32.1 MiB; at batch 16384 they fit blocks the activations leave cached, and only
 * the breakdown moves. GPT-2 small (the repository's print, batch 8, sequence 1024,
 * SDPA) gains more than its 622 MiB of gradients (17770 -> 19348 MiB). The replay runs
 * the loops such a job can have (1 to 8 micro-batches per step, zero_grad freeing or
 * keeping them) and stops each where its state repeats, as without accumulation. */
static void test_replay_grad_accum(void **state)
{
    (void)state;
    static const char csv[] = "type,out_elems,params\ninput,2048,0\nlinear,2048,4196352\n"
                              "relu,2048,0\nlinear,2048,4196352\nrelu,2048,0\nlinear,10,20490\n";
    struct est_model m;
    struct carma_err err;
    est_model_init(&m, layers, 16);
    assert_int_equal(est_parse_csv(csv, strlen(csv), "t.csv", &m, &err), 0);
    const double grads = (double)m.params * 4 / (1024.0 * 1024.0); /* 32.1 MiB */
    struct est_opts o = {.batch = 4096, .optimizer = EST_OPT_ADAMW};
    struct est_replay_result plain, acc;
    assert_int_equal(est_replay(&m, &o, &rwork, &plain), 0);
    assert_int_equal(plain.peak_phase, EST_RP_BACKWARD);
    assert_true(plain.cat_mib[EST_RC_GRADS] < 1);
    assert_int_equal(plain.micro_batches, 1);
    assert_int_equal(plain.grads_kept, 0);
    o.grad_accum = 1;
    assert_int_equal(est_replay(&m, &o, &rwork, &acc), 0);
    assert_int_equal(acc.peak_phase, EST_RP_BACKWARD);
    assert_true(acc.cat_mib[EST_RC_GRADS] >= grads);
    assert_float_equal(acc.peak_mib - plain.peak_mib, grads, 1.0);
    assert_true(acc.micro_batches >= 1 && acc.micro_batches <= 8);
    o.batch = 16384;
    o.grad_accum = 0;
    assert_int_equal(est_replay(&m, &o, &rwork, &plain), 0);
    o.grad_accum = 1;
    assert_int_equal(est_replay(&m, &o, &rwork, &acc), 0);
    assert_float_equal(acc.peak_mib, plain.peak_mib, 1e-9);
    assert_true(acc.cat_mib[EST_RC_GRADS] >= grads && plain.cat_mib[EST_RC_GRADS] < 1);
    /* through est_compute: the breakdown's gradients, and the loop that gave the peak */
    struct est_result a, b;
    assert_int_equal(parse_file("tests/fuzz/corpus/summary_modtree/gpt2.txt", &m, &err), 0);
    struct est_opts g = {.batch = 8, .seq = 1024, .optimizer = EST_OPT_ADAMW,
                         .attention = EST_ATTN_SDPA};
    assert_int_equal(est_compute(&m, est_coef_default(), &g, &rwork, &a, &err), 0);
    g.grad_accum = 1;
    assert_int_equal(est_compute(&m, est_coef_default(), &g, &rwork, &b, &err), 0);
    double gpt2_grads = (double)m.params * 4 / (1024.0 * 1024.0);
    assert_true(a.gradients_mib == 0 && a.accum_micro_batches == 0);
    assert_true(b.gradients_mib >= gpt2_grads && b.accum_micro_batches >= 1);
    assert_true(b.estimate_mib > a.estimate_mib + gpt2_grads);
    assert_true(b.bound_mib > a.bound_mib);
    /* each loop stopped where its state repeats reserves what it reserves run to the
     * cap, and no accumulating estimate is below the same job's without accumulation */
    assert_int_equal(parse_file("tests/fuzz/corpus/summary_modtree/bert_base.txt", &m, &err), 0);
    static const enum est_optimizer opts[] = {EST_OPT_SGD, EST_OPT_ADAMW};
    size_t runs = 0, grew = 0;
    for (uint32_t bt = 1; bt <= 13; bt += 6)
        for (size_t opt = 0; opt < 2; opt++)
            for (int prec = 0; prec < 2; prec++)
                for (int gc = 0; gc < 2; gc++)
                    for (uint32_t gpus = 1; gpus <= 2; gpus++) {
                        struct est_opts q = {.batch = bt, .seq = 128,
                                             .optimizer = opts[opt],
                                             .precision = prec ? EST_PREC_BF16 : EST_PREC_FP32,
                                             .grad_checkpoint = gc, .gpus = gpus};
                        struct est_replay_result r0, r, full;
                        assert_int_equal(est_replay(&m, &q, &rwork, &r0), 0);
                        q.grad_accum = 1;
                        assert_int_equal(est_replay(&m, &q, &rwork, &r), 0);
                        assert_true(r.peak_mib >= r0.peak_mib);
                        assert_true(r.cat_mib[EST_RC_GRADS] > 0);
                        q.replay_iterations = EST_REPLAY_MAX_ITERS;
                        assert_int_equal(est_replay(&m, &q, &rwork, &full), 0);
                        assert_float_equal(r.peak_mib, full.peak_mib, 1e-9);
                        assert_int_equal(r.micro_batches, full.micro_batches);
                        grew += r.peak_mib > r0.peak_mib;
                        runs++;
                    }
    assert_true(grew > runs / 2);
}

/* The replay against peaks of live tensor bytes measured on the CPU for the same prints
 * (tools/cpu_peaks.py; autograd keeps the same tensors on any device): full training
 * and LoRA, with and without gradient checkpointing and DistributedDataParallel, never
 * more than 2% under and at most 20% over; the models that tie their head to their
 * token table (GPT-2, BERT, T5) so with --tied-head too (T5's DenseActDense runs its
 * dropout before wo, which keeps its 2048-wide output: listed after wo, it had been
 * read there, 0.93 of T5's peak). */
static void test_replay_cpu_peaks(void **state)
{
    (void)state;
    char *buf;
    size_t len;
    struct carma_err err;
    assert_int_equal(
        carma_file_read("data/estimator/cpu-peaks/index.csv", 1 << 16, &buf, &len, &err), 0);
    /* each run's measured and replayed peak, to compare a DDP run with its single twin */
    struct {
        char name[64];
        unsigned batch, seq, gc, gpus;
        double measured, replayed;
    } seen[32];
    unsigned runs = 0, lora = 0, checkpointed = 0, ddp = 0;
    double gelu_new[2] = {0}, gelu_tanh[2] = {0}; /* measured, replayed */
    for (const char *l = strchr(buf, '\n') + 1; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : l) {
        char run[64], name[64];
        unsigned batch, seq, image, gc, gpus;
        double peak;
        unsigned long long params, trained;
        assert_int_equal(sscanf(l, "%63[^,],%63[^,],%u,%u,%u,%u,%u,%lf,%llu,%llu", run, name,
                                &batch, &seq, &image, &gc, &gpus, &peak, &params, &trained),
                         10);
        char path[128];
        snprintf(path, sizeof path, "data/estimator/cpu-peaks/%s", name);
        struct est_model m;
        if (parse_into(path, image, layers, &m, &err))
            fail_msg("%s: %s", name, err.msg);
        /* torchvision's ViT: its class token and position table are bare parameters its
         * print does not show; GPT-2's head and BERT's decoder are their token table,
         * printed twice; T5's one table is printed four times (shared, both stacks'
         * embed_tokens, read as shared's, lm_head) */
        uint64_t unseen = image ? 768 + 197 * 768 : 0;
        uint64_t tied = !strncmp(name, "gpt2", 4) || !strncmp(name, "bert", 4) ||
                                !strncmp(name, "t5", 2)
                            ? 8000 * 512
                            : 0;
        assert_int_equal(m.params + unseen - tied, params);
        assert_int_equal(m.params - m.frozen + unseen - tied, trained);
        struct est_opts o = {.batch = batch, .seq = image ? m.tokens : seq,
                             .optimizer = EST_OPT_ADAMW, .grad_checkpoint = (int)gc,
                             .gpus = gpus};
        struct est_replay_result r;
        assert_int_equal(est_replay(&m, &o, &rwork, &r), 0);
        double ratio = r.peak_allocated_mib / peak;
        if (ratio < 0.98 || ratio > 1.20)
            fail_msg("%s: replay %.1f MiB, measured %.1f (%.3f)", run, r.peak_allocated_mib,
                     peak, ratio);
        if (tied) {
            struct est_model mt;
            struct est_replay_result rt;
            assert_int_equal(parse_file_tied(path, &mt, &err), 0);
            assert_int_equal(mt.params + unseen, params);
            assert_int_equal(est_replay(&mt, &o, &rwork, &rt), 0);
            ratio = rt.peak_allocated_mib / peak;
            if (ratio < 0.98 || ratio > 1.20)
                fail_msg("%s --tied-head: replay %.1f MiB, measured %.1f (%.3f)", run,
                         rt.peak_allocated_mib, peak, ratio);
            assert_int_equal(parse_into(path, image, layers, &m, &err), 0);
        }
        /* DDP adds what it measurably adds: within 2% of the measured step up and half a
         * MiB */
        for (unsigned i = 0; i < runs && gpus > 1; i++) {
            if (strcmp(seen[i].name, name) || seen[i].batch != batch || seen[i].seq != seq ||
                seen[i].gc != gc || seen[i].gpus != 1)
                continue;
            double dm = peak - seen[i].measured, dr = r.peak_allocated_mib - seen[i].replayed;
            if (dm > 0 && dm < 8) /* a LoRA model's 2.4 MiB: below the replay's block
                                     granularity (a block may hold up to 1 MiB more) */
                continue;
            if (!(dm > 0) || fabs(dr - dm) > 0.02 * dm + 0.5)
                fail_msg("%s: DDP adds %.1f MiB measured, %.1f replayed", run, dm, dr);
            ddp++;
        }
        double *gelu = strcmp(name, "gpt2.txt") == 0         ? gelu_new
                       : strcmp(name, "gpt2_gelu_tanh.txt") == 0 ? gelu_tanh
                                                                 : NULL;
        if (gelu && gpus == 1) {
            gelu[0] = peak;
            gelu[1] = r.peak_allocated_mib;
        }
        assert_true(runs < sizeof seen / sizeof seen[0]);
        snprintf(seen[runs].name, sizeof seen[runs].name, "%s", name);
        seen[runs].batch = batch;
        seen[runs].seq = seq;
        seen[runs].gc = gc;
        seen[runs].gpus = gpus;
        seen[runs].measured = peak;
        seen[runs].replayed = r.peak_allocated_mib;
        runs++;
        lora += m.frozen > 0;
        checkpointed += gc;
    }
    assert_true(runs >= 10 && lora >= 8 && checkpointed >= 4 && ddp >= 3);
    /* GPT-2's gelu_new written out in Python keeps three more tensors of the MLP's width
     * per layer than the same function as one operation: the replay follows, to 3% (its
     * peak falls a node apart) */
    double dm = gelu_new[0] - gelu_tanh[0], dr = gelu_new[1] - gelu_tanh[1];
    if (!(dm > 0) || fabs(dr - dm) > 0.03 * dm + 0.5)
        fail_msg("NewGELUActivation adds %.1f MiB measured, %.1f replayed", dm, dr);
    free(buf);
}

/* A fused attention kernel keeps its output for backward, and the query and key (which
 * a chain of projections keeps as the key's and value's inputs), and the output
 * projection keeps the output's contiguous copy: two more activations of the layer's
 * width than the chain alone. Under a frozen base (LoRA) nothing else keeps the query
 * and key: the attention's keeping them is two more per layer. */
static void test_replay_fused_attention(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    assert_int_equal(parse_file("tests/fuzz/corpus/summary_modtree/bert_base.txt", &m, &err), 0);
    unsigned shared = 0;
    for (size_t i = 0; i < m.n; i++)
        shared += m.layers[i].shares_input;
    assert_int_equal(shared, 2); /* key and value, of the repeated layer */
    struct est_opts o = {.batch = 8, .seq = 512, .optimizer = EST_OPT_SGD,
                         .attention = EST_ATTN_SDPA};
    struct est_replay_result sdpa, none;
    assert_int_equal(est_replay(&m, &o, &rwork, &sdpa), 0);
    for (size_t i = 0; i < m.n; i++) {
        if (m.layers[i].kind == EST_K_ATTN)
            m.layers[i].kind = EST_K_OTHER;
        m.layers[i].shares_input = 0;
    }
    assert_int_equal(est_replay(&m, &o, &rwork, &none), 0);
    /* 12 layers x 8 x 512 x 768 x 4 B = 144 MiB each, all alive when the backward
     * starts */
    assert_float_equal(sdpa.peak_mib - none.peak_mib, 2 * 144, 1e-9);

    /* A fused qkv projection (GPT-2's c_attn) lists the attention after the output
     * projection, which keeps c_attn's output (the query, key and values the kernel
     * keeps); the kernel keeps its output and the merged heads' copy (the listed input
     * stands for it), and the block's residual sum flows on to ln_2, which keeps it: two
     * more tensors of the layer's width per layer than without the attention, where the
     * kernel's output had also been ln_2's input */
    assert_int_equal(parse_file("tests/fuzz/corpus/summary_modtree/gpt2.txt", &m, &err), 0);
    o.seq = 512;
    assert_int_equal(est_replay(&m, &o, &rwork, &sdpa), 0);
    for (size_t i = 0; i < m.n; i++)
        if (m.layers[i].kind == EST_K_ATTN)
            m.layers[i].kind = EST_K_OTHER;
    assert_int_equal(est_replay(&m, &o, &rwork, &none), 0);
    assert_float_equal(sdpa.cat_mib[EST_RC_ACT] - none.cat_mib[EST_RC_ACT], 2 * 144, 1e-9);

    assert_int_equal(parse_str(PEFT_LLAMA("Linear"), &m, &err), 0);
    o = (struct est_opts){.batch = 32, .seq = 128, .optimizer = EST_OPT_ADAMW,
                          .attention = EST_ATTN_SDPA};
    struct est_replay_result keep, lose;
    assert_int_equal(est_replay(&m, &o, &rwork, &keep), 0);
    for (size_t i = 0; i < m.n; i++)
        m.layers[i].shares_input = 0;
    assert_int_equal(est_replay(&m, &o, &rwork, &lose), 0);
    /* 2 layers x (query + key) x 32 x 128 x 256 x 4 B */
    assert_true(fabs(keep.peak_allocated_mib - lose.peak_allocated_mib - 16) < 1);

    /* Grouped-query attention (2 key/value heads for 8): the attention keeps repeat_kv's
     * copies at the query's width, so the activations at the peak are the same as with
     * 8 key/value heads (the CPU runs' prints; measured 536.2 and 554.2 MiB) */
    struct est_replay_result mha, gqa;
    o = (struct est_opts){.batch = 4, .seq = 256, .optimizer = EST_OPT_ADAMW};
    assert_int_equal(parse_into("data/estimator/cpu-peaks/llama_sdpa_full.txt", 0, layers, &m,
                                &err),
                     0);
    assert_int_equal(est_replay(&m, &o, &rwork, &mha), 0);
    assert_int_equal(parse_into("data/estimator/cpu-peaks/llama_sdpa_gqa.txt", 0, layers, &m,
                                &err),
                     0);
    assert_int_equal(est_replay(&m, &o, &rwork, &gqa), 0);
    assert_true(fabs(mha.cat_mib[EST_RC_ACT] - gqa.cat_mib[EST_RC_ACT]) < 0.01);
    assert_true(gqa.peak_allocated_mib >= 536.2 && mha.peak_allocated_mib >= 554.2);
}

static void test_alloc_round(void **state)
{
    (void)state;
    assert_float_equal(est_alloc_round(0), 0, 0);
    assert_float_equal(est_alloc_round(1), 512, 0);
    assert_float_equal(est_alloc_round(513), 1024, 0);
    assert_float_equal(est_alloc_round(1048576), 1048576, 0);
    assert_float_equal(est_alloc_round(1048577), 1049088, 0);
    assert_float_equal(est_alloc_round(4194305), 4194816, 0);
}

static void test_sequence_scaling(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    assert_int_equal(parse_file("tests/fuzz/corpus/summary_modtree/bert_base.txt", &m, &err), 0);
    const struct est_coef *c = est_coef_default();
    struct est_opts o = {.batch = 8, .seq = 128, .optimizer = EST_OPT_ADAMW};
    struct est_result r1, r2;
    assert_int_equal(est_compute(&m, c, &o, &rwork, &r1, &err), 0);
    o.seq = 512;
    assert_int_equal(est_compute(&m, c, &o, &rwork, &r2, &err), 0);
    /* activations grow more than 4x (attention is quadratic in the sequence). */
    assert_true(r2.activations_mib > 4 * r1.activations_mib);
    assert_float_equal(r1.weights_mib, r2.weights_mib, 1e-9);
}

/* Fused attention (a print's Sdpa class) keeps no probabilities; --attention overrides
 * what the print shows, both ways, and only attention probabilities change. */
static void test_attention_choice(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    assert_int_equal(parse_file("data/estimator/hf-trees/bert_base_mlm.txt", &m, &err), 0);
    size_t fused = 0;
    for (size_t i = 0; i < m.n; i++)
        if (m.layers[i].kind == EST_K_ATTN) {
            assert_true(m.layers[i].flags & EST_LF_FUSED);
            assert_int_equal(m.layers[i].count, 12);
            fused++;
        }
    assert_int_equal(fused, 1);
    assert_string_equal(est_attention_assumed(&m, EST_ATTN_SHOWN), "sdpa");
    assert_string_equal(est_attention_assumed(&m, EST_ATTN_EAGER), "eager");
    const struct est_coef *c = est_coef_default();
    struct est_opts o = {.batch = 8, .seq = 512, .optimizer = EST_OPT_ADAMW};
    struct est_result shown, sdpa, eager;
    assert_int_equal(est_compute(&m, c, &o, &rwork, &shown, &err), 0);
    o.attention = EST_ATTN_SDPA;
    assert_int_equal(est_compute(&m, c, &o, &rwork, &sdpa, &err), 0);
    o.attention = EST_ATTN_EAGER;
    assert_int_equal(est_compute(&m, c, &o, &rwork, &eager, &err), 0);
    assert_float_equal(shown.estimate_mib, sdpa.estimate_mib, 0);
    /* Eager keeps, per layer, 12 heads x 512 x 512 probabilities x 8 sequences in fp32
     * (96 MiB), their dropout's mask and output: at least 12 x 2 x 96 MiB more. */
    assert_true(eager.estimate_mib > sdpa.estimate_mib + 12 * 2 * 96);
    assert_float_equal(eager.weights_mib, sdpa.weights_mib, 1e-9);
    /* An eager print (BertSelfAttention) run with SDPA: the same layers, no scores. */
    assert_int_equal(parse_file("tests/fuzz/corpus/summary_modtree/bert_base.txt", &m, &err), 0);
    assert_string_equal(est_attention_assumed(&m, EST_ATTN_SHOWN), "eager");
    assert_string_equal(est_attention_assumed(&m, EST_ATTN_SDPA), "sdpa");
    o.attention = EST_ATTN_SHOWN;
    assert_int_equal(est_compute(&m, c, &o, &rwork, &eager, &err), 0);
    o.attention = EST_ATTN_SDPA;
    assert_int_equal(est_compute(&m, c, &o, &rwork, &sdpa, &err), 0);
    assert_true(eager.estimate_mib > sdpa.estimate_mib + 12 * 2 * 96);
    enum est_attention a;
    assert_int_equal(est_attention_parse("sdpa", &a), 0);
    assert_int_equal(a, EST_ATTN_SDPA);
    assert_int_equal(est_attention_parse("eager", &a), 0);
    assert_int_equal(a, EST_ATTN_EAGER);
    assert_true(est_attention_parse("flash", &a) < 0);
}

/* Parses s as file "t.txt" (path NULL) or the file at path, with --heads h (0: none). */
static int parse_heads(const char *path, const char *s, uint32_t h, struct est_model *m,
                       struct carma_err *err)
{
    char *buf = NULL;
    size_t len = s ? strlen(s) : 0;
    if (path)
        assert_int_equal(carma_file_read(path, EST_MAX_INPUT, &buf, &len, err), 0);
    est_model_init(m, layers, EST_MAX_LAYERS);
    m->heads = h;
    int rc = est_parse(path ? buf : s, len, path ? path : "t.txt", m, err);
    free(buf);
    return rc;
}

/* The attention row of m (the only one, or the first). */
static const struct est_layer *attn_row(const struct est_model *m, size_t *at)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->layers[i].kind == EST_K_ATTN) {
            if (at)
                *at = i;
            return &m->layers[i];
        }
    fail_msg("no attention row");
    return NULL;
}

/* Eager attention keeps heads x seq x seq probabilities, and prints do not show the
 * heads: --heads (est_model.heads) gives the query heads; HF-style blocks (q, k, v
 * projections) assume 64-wide heads; nn.MultiheadAttention and Keras's
 * MultiHeadAttention, which follow no convention, are refused under eager attention
 * without it. */
static void test_attention_heads(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const struct est_coef *c = est_coef_default();
    struct est_result r, r2;
    struct est_opts o = {.batch = 64, .seq = 256, .optimizer = EST_OPT_ADAMW};
    const char *mha = "tests/fuzz/corpus/summary_modtree/mha_classifier.txt";

    /* nn.MultiheadAttention(128, 8): its repr shows out_proj only */
    assert_int_equal(parse_heads(mha, NULL, 0, &m, &err), 0);
    const struct est_layer *a = attn_row(&m, NULL);
    assert_int_equal(a->heads_src, EST_HEADS_UNKNOWN);
    assert_int_equal(a->count, 2);
    assert_int_equal(m.heads_line, 6);
    assert_string_equal(m.heads_class, "nn.MultiheadAttention");
    assert_int_equal(est_compute(&m, c, &o, &rwork, &r, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "line 6: nn.MultiheadAttention: its number of heads is "
                                    "not in the print"));
    assert_non_null(strstr(err.msg, "give --heads N"));
    assert_int_equal(est_heads_check(&m, EST_ATTN_SHOWN, "f.txt", &err), -EINVAL);
    assert_non_null(strstr(err.msg, "f.txt:6: nn.MultiheadAttention: "));
    o.attention = EST_ATTN_EAGER;
    assert_int_equal(est_compute(&m, c, &o, &rwork, &r, &err), -EINVAL);
    o.attention = EST_ATTN_SDPA; /* fused: no probabilities to size */
    assert_int_equal(est_compute(&m, c, &o, &rwork, &r, &err), 0);
    assert_int_equal(est_heads_used(&m, EST_ATTN_SDPA), -1);
    /* a row marked fused (as called with need_weights=False) is not refused as shown */
    m.layers[a - m.layers].flags |= EST_LF_FUSED;
    assert_int_equal(est_heads_check(&m, EST_ATTN_SHOWN, NULL, &err), 0);
    assert_int_equal(est_heads_check(&m, EST_ATTN_EAGER, NULL, &err), -EINVAL);
    /* --heads 8: 8 heads of 16, against the 2 a head size of 64 gave */
    assert_int_equal(parse_heads(mha, NULL, 8, &m, &err), 0);
    a = attn_row(&m, NULL);
    assert_int_equal(a->heads_src, EST_HEADS_GIVEN);
    assert_int_equal(a->out, 8);
    assert_int_equal(m.heads_line, 0);
    assert_int_equal(est_heads_used(&m, EST_ATTN_SHOWN), EST_HEADS_GIVEN);
    o.attention = EST_ATTN_SHOWN;
    assert_int_equal(est_compute(&m, c, &o, &rwork, &r, &err), 0);
    m.layers[a - m.layers].out = 2;
    assert_int_equal(est_compute(&m, c, &o, &rwork, &r2, &err), 0);
    /* 6 more heads x 256 x 256 x 64 sequences: softmax's output and dropout's (fp32) and
     * its mask, 2 layers: 453 MiB kept through the backward */
    assert_true(r.estimate_mib > r2.estimate_mib + 2 * 6 * 256.0 * 256 * 64 * 9 / 1048576 * 0.9);
    /* heads that do not divide the width */
    assert_true(parse_heads(mha, NULL, 3, &m, &err) < 0);
    assert_string_equal(err.msg, "tests/fuzz/corpus/summary_modtree/mha_classifier.txt:6: an "
                                 "attention block whose query is 128 wide: --heads 3 does not "
                                 "divide it (give the query heads, num_attention_heads)");
    assert_true(parse_heads(mha, NULL, 256, &m, &err) < 0);

    /* Grouped query (4 heads of 32, one key/value head) in a model 160 wide: the query
     * heads, whose width is the query projection's, not the model's */
    const char *gqa = "M(\n"
                      "  (embed_tokens): Embedding(100, 160)\n"
                      "  (self_attn): LlamaAttention(\n"
                      "    (q_proj): Linear(in_features=160, out_features=128, bias=False)\n"
                      "    (k_proj): Linear(in_features=160, out_features=32, bias=False)\n"
                      "    (v_proj): Linear(in_features=160, out_features=32, bias=False)\n"
                      "    (o_proj): Linear(in_features=128, out_features=160, bias=False)\n"
                      "  )\n"
                      ")\n";
    assert_int_equal(parse_heads(NULL, gqa, 0, &m, &err), 0);
    a = attn_row(&m, NULL);
    assert_int_equal(a->heads_src, EST_HEADS_ASSUMED); /* width / 64, as before */
    assert_int_equal(a->out, 2);
    assert_int_equal(m.heads_assumed, 2);
    assert_int_equal(est_heads_used(&m, EST_ATTN_SHOWN), EST_HEADS_ASSUMED);
    o.seq = 64;
    assert_int_equal(est_compute(&m, c, &o, &rwork, &r, &err), 0);
    assert_int_equal(parse_heads(NULL, gqa, 4, &m, &err), 0);
    assert_int_equal(attn_row(&m, NULL)->out, 4);
    assert_int_equal(parse_heads(NULL, gqa, 5, &m, &err), -EINVAL); /* 160 divides, 128 not */
    assert_string_equal(err.msg, "t.txt:3: an attention block whose query is 128 wide: "
                                 "--heads 5 does not divide it (give the query heads, "
                                 "num_attention_heads)");

    /* torchinfo: T5's attention lists no probabilities; --heads sizes them */
    const char *t5 = "tests/fuzz/corpus/summary_torchinfo/t5_small_depth10.txt";
    assert_int_equal(parse_heads(t5, NULL, 0, &m, &err), 0);
    assert_int_equal(attn_row(&m, NULL)->heads_src, EST_HEADS_ASSUMED);
    assert_int_equal(m.heads_assumed, 8);
    assert_int_equal(parse_heads(t5, NULL, 16, &m, &err), 0);
    size_t probs = 0;
    for (size_t i = 0; i < m.n; i++)
        if (m.layers[i].kind == EST_K_ATTN) {
            assert_int_equal(m.layers[i].out, 16ull * 512 * 512);
            assert_int_equal(m.layers[i].heads_src, EST_HEADS_GIVEN);
            probs++;
        }
    assert_int_equal(probs, 18);
    assert_true(parse_heads(t5, NULL, 6, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t5_small_depth10.txt:13: an attention module 512 wide, its "
                                    "query projection 512: --heads 6 divides neither"));
    /* a table that lists them ([batch, heads, seq, seq]): as listed, --heads or not */
    const char *bert = "tests/fuzz/corpus/summary_torchinfo/bert_layer_b8.txt";
    assert_int_equal(parse_heads(bert, NULL, 4, &m, &err), 0);
    assert_int_equal(attn_row(&m, NULL)->heads_src, EST_HEADS_SHOWN);
    assert_int_equal(attn_row(&m, NULL)->out, 12ull * 128 * 128);
    assert_int_equal(est_heads_used(&m, EST_ATTN_SHOWN), EST_HEADS_SHOWN);

    /* Keras's MultiHeadAttention(num_heads=2, key_dim=32) on 32-wide tokens, 200 of them:
     * projections 64 wide (4 x 32 x 64 + 3 x 64 + 32 = 8416 parameters) */
    const char *keras = "tests/fuzz/corpus/summary_keras/keras2_mha.txt";
    assert_int_equal(parse_heads(keras, NULL, 0, &m, &err), 0);
    assert_int_equal(m.params, 652738);
    size_t at;
    a = attn_row(&m, &at);
    assert_true(at >= 4);
    assert_int_equal(a->heads_src, EST_HEADS_UNKNOWN);
    assert_int_equal(a->attn, 0);
    assert_int_equal(m.heads_line, 9);
    for (size_t k = 1; k <= 3; k++) { /* q, k, v */
        assert_int_equal(m.layers[at - k].kind, EST_K_LINEAR);
        assert_int_equal(m.layers[at - k].out, 200 * 64);
        assert_int_equal(m.layers[at - k].params, 32 * 64 + 64);
        assert_int_equal(m.layers[at - k].shares_input, k < 3);
    }
    assert_int_equal(m.layers[at + 1].kind, EST_K_LINEAR); /* the output projection */
    assert_int_equal(m.layers[at + 1].out, 200 * 32);
    assert_int_equal(m.layers[at + 1].params, 64 * 32 + 32);
    struct est_opts ok = {.batch = 64, .optimizer = EST_OPT_ADAMW};
    assert_int_equal(est_compute(&m, c, &ok, &rwork, &r, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "line 9: Keras MultiHeadAttention: its number of heads"));
    ok.attention = EST_ATTN_SDPA;
    assert_int_equal(est_compute(&m, c, &ok, &rwork, &r, &err), 0);
    assert_int_equal(parse_heads(keras, NULL, 2, &m, &err), 0);
    a = attn_row(&m, NULL);
    assert_int_equal(a->out, 2 * 200 * 200);
    assert_int_equal(a->heads_src, EST_HEADS_GIVEN);
    ok.attention = EST_ATTN_SHOWN;
    assert_int_equal(est_compute(&m, c, &ok, &rwork, &r2, &err), 0);
    /* 64 x 2 x 200 x 200 probabilities kept (softmax, dropout and its mask) */
    assert_true(r2.estimate_mib > r.estimate_mib + 64 * 2 * 200.0 * 200 * 9 / 1048576);
    assert_true(parse_heads(keras, NULL, 3, &m, &err) < 0);
    assert_string_equal(err.msg, "tests/fuzz/corpus/summary_keras/keras2_mha.txt:9: "
                                 "MultiHeadAttention whose projections are 64 wide (heads x "
                                 "key_dim, from its 8416 parameters at width 32): --heads 3 does "
                                 "not divide that (give its num_heads)");
    assert_string_equal(est_heads_src_name(EST_HEADS_ASSUMED), "assumed");
    assert_string_equal(est_heads_src_name(EST_HEADS_GIVEN), "given");
    /* an empty sequence: refused (it divided by zero, which one submission to carmad
     * could send) */
    const char *empty = "tests/fuzz/corpus/summary_keras/keras2_mha_empty_seq.txt";
    assert_true(parse_heads(empty, NULL, 2, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "keras2_mha_empty_seq.txt:7: MultiHeadAttention whose "
                                    "output is not one nonempty"));
}

/* The first row of kind k in m at or after row i (m->n: none). */
static size_t kind_row(const struct est_model *m, size_t i, enum est_kind k)
{
    while (i < m->n && m->layers[i].kind != k)
        i++;
    return i;
}

/* An attention class with no projection of its own nested in an attention block
 * (ChatGLM's and Megatron's CoreAttention inside SelfAttention) is the block's
 * attention: the rows of the print with the wrapper flattened, its probabilities kept
 * under eager attention. */
static void test_modtree_nested_core_attention(void **state)
{
    (void)state;
    static struct est_layer flat_l[EST_MAX_LAYERS];
    struct est_model m, flat;
    struct carma_err err;
#define CORE_TOY(attn)                                                                             \
    "Glm(\n"                                                                                       \
    "  (embedding): Embedding(1000, 512)\n"                                                        \
    "  (layers): ModuleList(\n"                                                                    \
    "    (0-1): 2 x Block(\n"                                                                      \
    "      (input_layernorm): RMSNorm()\n"                                                         \
    "      (self_attention): SelfAttention(\n"                                                     \
    "        (query_key_value): Linear(in_features=512, out_features=1536, bias=True)\n"           \
    attn                                                                                           \
    "        (dense): Linear(in_features=512, out_features=512, bias=False)\n"                     \
    "      )\n"                                                                                    \
    "      (post_attention_layernorm): RMSNorm()\n"                                                \
    "    )\n"                                                                                      \
    "  )\n"                                                                                        \
    "  (final_layernorm): RMSNorm()\n"                                                             \
    "  (output_layer): Linear(in_features=512, out_features=1000, bias=False)\n"                   \
    ")\n"
    const char *nested = CORE_TOY("        (core_attention): CoreAttention(\n"
                                  "          (attention_dropout): Dropout(p=0.0, inplace=False)\n"
                                  "        )\n");
    const char *flattened =
        CORE_TOY("        (attention_dropout): Dropout(p=0.0, inplace=False)\n");
    est_model_init(&flat, flat_l, EST_MAX_LAYERS);
    assert_int_equal(est_parse(flattened, strlen(flattened), "f.txt", &flat, &err), 0);
    assert_int_equal(parse_str(nested, &m, &err), 0);
    assert_same_model(&m, &flat);
    size_t at;
    const struct est_layer *a = attn_row(&m, &at);
    assert_int_equal(a->count, 2);
    assert_int_equal(a->flags & EST_LF_FUSED, 0);
    const struct est_coef *c = est_coef_default();
    struct est_opts o = {.batch = 8, .seq = 512, .optimizer = EST_OPT_ADAMW,
                         .attention = EST_ATTN_SDPA};
    struct est_result sdpa, eager;
    assert_int_equal(est_compute(&m, c, &o, &rwork, &sdpa, &err), 0);
    o.attention = EST_ATTN_EAGER;
    assert_int_equal(est_compute(&m, c, &o, &rwork, &eager, &err), 0);
    /* 8 heads x 512 x 512 probabilities x 8 sequences in fp32 (64 MiB) per layer, kept;
     * their dropout, at rate 0, is no tensor (EST_LF_ATTN_NODROP) */
    assert_true(a->flags & EST_LF_ATTN_NODROP);
    assert_true(eager.estimate_mib > sdpa.estimate_mib + 2 * 64);
    /* at a rate above 0, its mask (16 MiB) and output (64 MiB) are kept too (the
     * second layer's perhaps freed by the peak, in its backward) */
    const char *rate = CORE_TOY("        (core_attention): CoreAttention(\n"
                                "          (attention_dropout): Dropout(p=0.1, inplace=False)\n"
                                "        )\n");
    struct est_result eager_rate;
    assert_int_equal(parse_str(rate, &m, &err), 0);
    a = attn_row(&m, NULL);
    assert_true((a->flags & EST_LF_ATTN_DROP) && !(a->flags & EST_LF_ATTN_NODROP));
    assert_int_equal(est_compute(&m, c, &o, &rwork, &eager_rate, &err), 0);
    assert_true(eager_rate.estimate_mib > eager.estimate_mib + 80);
    {
        struct est_result ea, sa;
        assert_int_equal(parse_str(flattened, &m, &err), 0);
        o.precision = EST_PREC_AMP;
        o.attention = EST_ATTN_EAGER;
        assert_int_equal(est_compute(&m, c, &o, &rwork, &ea, &err), 0);
        o.attention = EST_ATTN_SDPA;
        assert_int_equal(est_compute(&m, c, &o, &rwork, &sa, &err), 0);
        /* under autocast the product keeps the fp32 softmax's 16-bit copy too (32 MiB a
         * layer): 96 MiB a layer in all, with the scores' transient above it */
        assert_true(ea.estimate_mib > sa.estimate_mib + 2 * 96 + 32);
        o.precision = EST_PREC_FP32;
    }
    /* a fused class inside makes the block's probabilities fused */
    const char *fused = CORE_TOY("        (core_attention): FlashSelfAttention(\n"
                                 "          (drop): Dropout(p=0.0, inplace=False)\n"
                                 "        )\n");
    assert_int_equal(parse_str(fused, &m, &err), 0);
    assert_true(attn_row(&m, NULL)->flags & EST_LF_FUSED);
#undef CORE_TOY
}

/* Attention whose one fused projection makes a query and a narrower key and value (E + 2k
 * features: GPTBigCode's multi-query c_attn, 768 -> 896) runs through SDPA's math kernel in
 * fp32, as grouped separate projections do: its probabilities kept under sdpa too, with
 * the key and values expanded to every head, and the kernel's dropout where the block
 * prints one at a rate above 0 (GPTBigCode measured on an H200 at 12748 MiB, estimated at
 * 8320 as fused, bound 0.81 of it; now 1.07). Three projections of the width (GPT-2's
 * c_attn, E -> 3E) are no such thing. */
static void test_modtree_fused_grouped_attention(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
#define MQA_TOY(qkv, drop)                                                                         \
    "Gpt(\n"                                                                                       \
    "  (wte): Embedding(1000, 768)\n"                                                              \
    "  (h): ModuleList(\n"                                                                         \
    "    (0-1): 2 x Block(\n"                                                                      \
    "      (ln_1): LayerNorm((768,), eps=1e-05, elementwise_affine=True)\n"                        \
    "      (attn): GPTBigCodeAttention(\n"                                                         \
    "        (c_attn): Linear(in_features=768, out_features=" qkv ", bias=True)\n"                 \
    "        (c_proj): Linear(in_features=768, out_features=768, bias=True)\n"                     \
    "        (resid_dropout): Dropout(p=" drop ", inplace=False)\n"                                \
    "      )\n"                                                                                    \
    "    )\n"                                                                                      \
    "  )\n"                                                                                        \
    "  (lm_head): Linear(in_features=768, out_features=1000, bias=False)\n"                        \
    ")\n"
    struct est_result r[4];
    static const char *const prints[] = {MQA_TOY("896", "0.1"), MQA_TOY("896", "0.0"),
                                         MQA_TOY("2304", "0.1")};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(parse_str(prints[i], &m, &err), 0);
        const struct est_layer *a = attn_row(&m, NULL);
        assert_int_equal((a->flags & EST_LF_GROUPED) != 0, i < 2);
        assert_int_equal((a->flags & EST_LF_ATTN_DROP) != 0, i != 1);
        struct est_opts o = {.batch = 4, .seq = 1024, .optimizer = EST_OPT_ADAMW,
                             .attention = EST_ATTN_SDPA};
        assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &r[i], &err), 0);
        if (i == 0) { /* and in bf16 on an A100 the fused kernels take it */
            o.precision = EST_PREC_BF16;
            o.cc = 80;
            assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &r[3], &err), 0);
            assert_false(r[3].math_attention);
        }
    }
    assert_true(r[0].math_attention && r[1].math_attention && !r[2].math_attention);
    /* 12 heads x 1024^2 x 4 sequences in fp32: 192 MiB of probabilities a layer, kept;
     * with the dropout's mask and output, 240 MiB more */
    assert_true(r[1].activations_mib + r[1].transient_mib >
                r[2].activations_mib + r[2].transient_mib + 2 * 192);
    assert_true(r[0].estimate_mib > r[1].estimate_mib + 2 * 200);
#undef MQA_TOY
}

/* An output head of the token table's shape may share its weight (transformers'
 * tie_word_embeddings), which no print shows: counted apart unless --tied-head
 * (est_model.tie_head) says so; then once, the head's weight an alias of the table's in
 * the replay (its gradient added to the table's), a bias its own. GPT-2 at batch 8,
 * sequence 1024 on the H100: 1.09 of its peak untied, 1.08 tied; BLOOM-style on the
 * H200 1.56 -> 1.13, XLM-R 1.44 -> 1.21 (their heads over 250k rows). */
static void test_modtree_tied_output_head(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
#define TIED_TOY(head)                                                                             \
    "Lm(\n"                                                                                        \
    "  (wte): Embedding(50000, 512)\n"                                                             \
    "  (h): ModuleList(\n"                                                                         \
    "    (0-1): 2 x Block(\n"                                                                      \
    "      (ln): LayerNorm((512,), eps=1e-05, elementwise_affine=True)\n"                          \
    "      (fc): Linear(in_features=512, out_features=512, bias=True)\n"                           \
    "    )\n"                                                                                      \
    "  )\n"                                                                                        \
    "  (ln_f): LayerNorm((512,), eps=1e-05, elementwise_affine=True)\n" head ")\n"
    static const char *const prints[] = {
        TIED_TOY("  (lm_head): Linear(in_features=512, out_features=50000, bias=False)\n"),
        TIED_TOY("  (decoder): Linear(in_features=512, out_features=50000, bias=True)\n")};
    const uint64_t table = 50000ull * 512;
    for (int b = 0; b < 2; b++) {
        struct est_result r[2];
        uint64_t params[2];
        for (int tie = 0; tie < 2; tie++) {
            est_model_init(&m, layers, EST_MAX_LAYERS);
            m.tie_head = (uint8_t)tie;
            struct est_opts o = {
                .batch = 4, .seq = 128, .optimizer = EST_OPT_ADAMW, .attention = EST_ATTN_SDPA};
            assert_int_equal(est_model_prepare(&m, prints[b], strlen(prints[b]), "t.txt", &o, &err),
                             0);
            assert_int_equal(m.head_table_line, 2);
            assert_int_equal(m.head_table_rows, 50000);
            assert_int_equal(m.head_table_width, 512);
            assert_int_equal(m.head_tied, tie);
            params[tie] = m.params;
            assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &r[tie], &err), 0);
        }
        /* the table's weight once: its 97.7 MiB, twice as much AdamW state (a bias, its
         * own, stays counted) */
        double w = (double)table * 4 / 1048576;
        assert_int_equal(params[0] - params[1], table);
        assert_true(fabs(r[0].weights_mib - r[1].weights_mib - w) < 2);
        assert_true(fabs(r[0].optimizer_mib - r[1].optimizer_mib - 2 * w) < 4);
        assert_true(r[1].estimate_mib < r[0].estimate_mib - w);
        /* the per-kind terms (a coefficient table without the replay) drop the table's
         * weight only: a biased head keeps its bias's weight, gradient and state, and its
         * DDP bucket (review: the whole row had been left out, 0.19 MiB of bias each) */
        struct est_coef nr = *est_coef_default();
        nr.replay[EST_FAM_DENSE] = 0;
        for (int tie = 0; tie < 2; tie++) {
            est_model_init(&m, layers, EST_MAX_LAYERS);
            m.tie_head = (uint8_t)tie;
            struct est_opts o = {.batch = 4,
                                 .seq = 128,
                                 .optimizer = EST_OPT_ADAMW,
                                 .attention = EST_ATTN_SDPA,
                                 .gpus = 2};
            assert_int_equal(est_model_prepare(&m, prints[b], strlen(prints[b]), "t.txt", &o, &err),
                             0);
            assert_int_equal(est_compute(&m, &nr, &o, &rwork, &r[tie], &err), 0);
        }
        assert_true(fabs(r[0].weights_mib - r[1].weights_mib - w) < 0.01);
        assert_true(fabs(r[0].gradients_mib - r[1].gradients_mib - w) < 0.01);
        assert_true(fabs(r[0].optimizer_mib - r[1].optimizer_mib - 2 * w) < 0.02);
    }
    /* an encoder-decoder's head ties to its shared table, printed again in each stack */
    const char *t5 = "T5(\n"
                     "  (shared): Embedding(32128, 512)\n"
                     "  (encoder): Stack(\n"
                     "    (embed_tokens): Embedding(32128, 512)\n"
                     "    (fc): Linear(in_features=512, out_features=512, bias=False)\n"
                     "  )\n"
                     "  (decoder): Stack(\n"
                     "    (embed_tokens): Embedding(32128, 512)\n"
                     "    (fc): Linear(in_features=512, out_features=512, bias=False)\n"
                     "    (final_layer_norm): T5LayerNorm()\n"
                     "  )\n"
                     "  (lm_head): Linear(in_features=512, out_features=32128, bias=False)\n"
                     ")\n";
    est_model_init(&m, layers, EST_MAX_LAYERS);
    m.tie_head = 1;
    assert_int_equal(est_parse(t5, strlen(t5), "t.txt", &m, &err), 0);
    assert_true(m.head_tied);
    assert_int_equal(m.params, 32128ull * 512 + 2 * 512 * 512 + 512);
    /* refused where no head has the table's shape (a classifier) */
    const char *cls = "Bert(\n"
                      "  (word_embeddings): Embedding(30522, 768)\n"
                      "  (dense): Linear(in_features=768, out_features=768, bias=True)\n"
                      "  (classifier): Linear(in_features=768, out_features=2, bias=True)\n"
                      ")\n";
    est_model_init(&m, layers, EST_MAX_LAYERS);
    m.tie_head = 1;
    struct est_opts o = {.batch = 4, .seq = 128, .optimizer = EST_OPT_ADAMW};
    assert_int_equal(est_model_prepare(&m, cls, strlen(cls), "c.txt", &o, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "--tied-head: the print has no output head"));
    /* nor a PEFT modules_to_save copy of the head, a parameter that trains apart (review:
     * it had been tied to the frozen table, its gradient and AdamW state dropped: 0.88 of
     * the tensor peak measured on the CPU) */
    assert_int_equal(
        parse_file_tied("tests/fuzz/corpus/summary_modtree/peft_saved_head_tied.txt", &m, &err), 0);
    assert_true(m.tie_head);
    assert_false(m.head_tied);
    assert_int_equal(m.params - m.frozen, 32833536); /* the adapters and the head's copy */
    /* a frozen biased head tied under LoRA (BERT's decoder): its bias stays frozen, only the
     * adapters train (review: the whole row had been skipped, its bias counted trained) */
    assert_int_equal(
        parse_file("tests/fuzz/corpus/summary_modtree/bert_mlm_lora_tied.txt", &m, &err), 0);
    assert_int_equal(m.params - m.frozen, 32768);
    uint64_t untied = m.params;
    assert_int_equal(
        parse_file_tied("tests/fuzz/corpus/summary_modtree/bert_mlm_lora_tied.txt", &m, &err), 0);
    assert_true(m.head_tied);
    assert_int_equal(untied - m.params, 8000 * 512);
    assert_int_equal(m.params - m.frozen, 32768);
    /* A tied Llama-shaped model (64000 x 512 table, 4 layers) at batch 1, sequence 256,
     * checkpointed, measured on the CPU (torch 1.13, review): 1005.6 MiB of tensors at its
     * peak, 1130.6 with gradient accumulation, in the table's backward, where the head's
     * gradient, the table's and their sum (out of place: a linear layer's weight gradient is
     * a view) are alive, and a kept .grad beside them. The replay had 954.2 and 972.5. */
    for (int ga = 0; ga < 2; ga++) {
        assert_int_equal(
            parse_file_tied("tests/fuzz/corpus/summary_modtree/llama_tied_64k.txt", &m, &err), 0);
        assert_true(m.head_tied);
        struct est_opts g = {.batch = 1,
                             .seq = 256,
                             .optimizer = EST_OPT_ADAMW,
                             .grad_checkpoint = 1,
                             .grad_accum = ga};
        struct est_replay_result rr;
        assert_int_equal(est_replay(&m, &g, &rwork, &rr), 0);
        assert_true(rr.peak_allocated_mib >= (ga ? 1130.6 : 1005.6));
    }
#undef TIED_TOY
}

/* Heads are taken 64 wide across the block's widest input, or across the query where its
 * projection narrows its own input: T5 v1.1-small's 512 -> 384 and ConvBERT's 768 -> 384
 * hold 6 heads (read as 8 and 12 before: 1.22 and 1.27 of their H200 peaks, now 1.13 and
 * 1.11). MobileBERT's query as wide as its input (128 -> 128, its value from the 512-wide
 * block) keeps the block's width: 8, where it has 4 of 32 (the query's width would give
 * 2). */
static void test_modtree_narrowing_query_heads(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
#define QKV_TOY(q_in, q_out, v_in)                                                                 \
    "Block(\n"                                                                                     \
    "  (attn): SelfAttention(\n"                                                                   \
    "    (q): Linear(in_features=" q_in ", out_features=" q_out ", bias=False)\n"                  \
    "    (k): Linear(in_features=" q_in ", out_features=" q_out ", bias=False)\n"                  \
    "    (v): Linear(in_features=" v_in ", out_features=" q_out ", bias=False)\n"                  \
    "    (o): Linear(in_features=" q_out ", out_features=" v_in ", bias=True)\n"                   \
    "  )\n"                                                                                        \
    ")\n"
    static const struct {
        const char *print;
        uint64_t heads;
    } cases[] = {
        {QKV_TOY("512", "384", "512"), 6},     /* T5 v1.1-small */
        {QKV_TOY("768", "384", "768"), 6},     /* ConvBERT-base */
        {QKV_TOY("512", "512", "512"), 8},     /* T5-small */
        {QKV_TOY("128", "128", "512"), 8},     /* MobileBERT: the block's width */
        {QKV_TOY("1024", "2048", "1024"), 32}, /* a query wider than its input */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(parse_str(cases[i].print, &m, &err), 0);
        const struct est_layer *a = attn_row(&m, NULL);
        assert_non_null(a);
        assert_int_equal(a->heads_src, EST_HEADS_ASSUMED);
        assert_int_equal(a->out, cases[i].heads);
    }
    /* a LoRA adapter's parameters do not make a square query narrow (review: MobileBERT
     * with LoRA on its query read as 2 heads) */
    const char *lora = "Block(\n"
                       "  (attn): SelfAttention(\n"
                       "    (q): lora.Linear(\n"
                       "      (base_layer): Linear(in_features=128, out_features=128, bias=True)\n"
                       "      (lora_dropout): ModuleDict(\n"
                       "        (default): Identity()\n"
                       "      )\n"
                       "      (lora_A): ModuleDict(\n"
                       "        (default): Linear(in_features=128, out_features=8, bias=False)\n"
                       "      )\n"
                       "      (lora_B): ModuleDict(\n"
                       "        (default): Linear(in_features=8, out_features=128, bias=False)\n"
                       "      )\n"
                       "    )\n"
                       "    (k): Linear(in_features=128, out_features=128, bias=True)\n"
                       "    (v): Linear(in_features=512, out_features=128, bias=True)\n"
                       "    (o): Linear(in_features=128, out_features=512, bias=True)\n"
                       "  )\n"
                       ")\n";
    assert_int_equal(parse_str(lora, &m, &err), 0);
    assert_int_equal(attn_row(&m, NULL)->out, 8);
    /* T5's relative_attention_bias shows the heads, narrower than 64 too (review:
     * t5-efficient-small-kv32, 8 heads of 32 over a 512 -> 256 query, read as 4) */
    const char *kv32 = "Block(\n"
                       "  (SelfAttention): T5Attention(\n"
                       "    (q): Linear(in_features=512, out_features=256, bias=False)\n"
                       "    (k): Linear(in_features=512, out_features=256, bias=False)\n"
                       "    (v): Linear(in_features=512, out_features=256, bias=False)\n"
                       "    (o): Linear(in_features=256, out_features=512, bias=False)\n"
                       "    (relative_attention_bias): Embedding(32, 8)\n"
                       "  )\n"
                       ")\n";
    assert_int_equal(parse_str(kv32, &m, &err), 0);
    assert_int_equal(attn_row(&m, NULL)->out, 8);
    assert_int_equal(attn_row(&m, NULL)->heads_src, EST_HEADS_SHOWN);
#undef QKV_TOY
}

/* timm's TalkingHeadAttn (CaiT) mixes its heads with linear layers on the scores (proj_l,
 * proj_w: heads -> heads), so the print shows its heads, and it computes the scores
 * itself: kept whatever --attention says (CaiT-XXS24 measured at 5256 MiB, estimated at
 * 1099 with no attention read, its bound 0.51 of the peak; then 0.81, bound 1.20). Each of
 * the two keeps its input, a copy of the permuted scores (EST_LF_TALKING): 0.99, bound
 * 1.41; and the product with the values keeps the second's output, where plain attention
 * keeps the softmax's (its attn_drop is at rate 0: no mask, no copy): 0.96, bound 1.38.
 * Its class name ends in Attn, as ClassAttn's. */
static void test_modtree_talking_heads(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *cait = "Block(\n"
                       "  (norm1): LayerNorm((192,), eps=1e-06, elementwise_affine=True)\n"
                       "  (attn): TalkingHeadAttn(\n"
                       "    (qkv): Linear(in_features=192, out_features=576, bias=True)\n"
                       "    (proj): Linear(in_features=192, out_features=192, bias=True)\n"
                       "    (proj_l): Linear(in_features=4, out_features=4, bias=True)\n"
                       "    (proj_w): Linear(in_features=4, out_features=4, bias=True)\n"
                       "    (proj_drop): Dropout(p=0.0, inplace=False)\n"
                       "  )\n"
                       ")\n";
    assert_int_equal(parse_str(cait, &m, &err), 0);
    size_t at;
    const struct est_layer *a = attn_row(&m, &at);
    assert_non_null(a);
    assert_int_equal(a->out, 4); /* heads, as proj_l shows them */
    assert_int_equal(a->heads_src, EST_HEADS_SHOWN);
    assert_true(a->flags & EST_LF_SCORES);
    assert_true(a->flags & EST_LF_TALKING);
    for (size_t i = 0; i < m.n; i++) /* no projection read as a key or value */
        assert_int_equal(m.layers[i].shares_input, 0);
    /* CaiT-XXS24's 24 talking-heads blocks at batch 8: three more tensors of their 4 x
     * 197 x 197 scores each (4.7 MiB in fp32; the two copies and the second mixing's
     * output), alive as the backward starts but for the last block's, which its backward
     * may have freed by the peak (up to 1 MiB more a tensor where a cached block is too
     * little larger to split) */
    if (parse_into("data/estimator/gpu-peaks-h200/cait_xxs24_timm_b32.txt", 224, layers, &m,
                   &err))
        fail_msg("%s", err.msg);
    struct est_opts o = {.batch = 8, .seq = m.tokens, .optimizer = EST_OPT_ADAMW};
    struct est_replay_result talk, plain;
    assert_int_equal(est_replay(&m, &o, &rwork, &talk), 0);
    for (size_t i = 0; i < m.n; i++)
        m.layers[i].flags &= ~(uint32_t)EST_LF_TALKING;
    assert_int_equal(est_replay(&m, &o, &rwork, &plain), 0);
    double copies = 3.0 * 24 * 4 * 197 * 197 * 4 * 8 / 1048576;
    assert_true(talk.peak_allocated_mib - plain.peak_allocated_mib >= copies * 46 / 48 &&
                talk.peak_allocated_mib - plain.peak_allocated_mib <= copies + 72);
    assert_int_equal(est_kind_classify("ClassAttn", 9), EST_K_ATTN);
    /* MobileBERT's narrow query, key and value (128 wide in its 512-wide block; 64 in this
     * one) are no talking heads */
    const char *narrow = "Layer(\n"
                         "  (self): MobileBertSelfAttention(\n"
                         "    (query): Linear(in_features=64, out_features=64, bias=True)\n"
                         "    (key): Linear(in_features=64, out_features=64, bias=True)\n"
                         "    (value): Linear(in_features=512, out_features=64, bias=True)\n"
                         "  )\n"
                         ")\n";
    assert_int_equal(parse_str(narrow, &m, &err), 0);
    assert_false(attn_row(&m, NULL)->flags & EST_LF_SCORES);
    assert_int_equal(attn_row(&m, NULL)->heads_src, EST_HEADS_ASSUMED);
    /* ConViT's GPSA and MHSA: attention by their children's names */
    const char *gpsa = "Block(\n"
                       "  (attn): GPSA(\n"
                       "    (qk): Linear(in_features=192, out_features=384, bias=False)\n"
                       "    (v): Linear(in_features=192, out_features=192, bias=False)\n"
                       "    (proj): Linear(in_features=192, out_features=192, bias=True)\n"
                       "    (pos_proj): Linear(in_features=3, out_features=4, bias=True)\n"
                       "  )\n"
                       ")\n";
    assert_int_equal(parse_str(gpsa, &m, &err), 0);
    assert_non_null(attn_row(&m, NULL));
    const char *xca = "Block(\n"
                      "  (attn): XCA(\n"
                      "    (qkv): Linear(in_features=192, out_features=576, bias=True)\n"
                      "    (proj): Linear(in_features=192, out_features=192, bias=True)\n"
                      "  )\n"
                      ")\n";
    assert_int_equal(parse_str(xca, &m, &err), 0);
    for (size_t i = 0; i < m.n; i++)
        assert_int_not_equal(m.layers[i].kind, EST_K_ATTN);
    assert_int_not_equal(est_kind_classify("CrossCovarianceAttn", 19), EST_K_ATTN);
}

/* timm's HGNet stage: a depthwise strided downsample that keeps the channels, then its
 * blocks, a Sequential of blocks deeper: the first block reads the downsample's output. Read
 * as a second branch from the stage's input (ShuffleNet's branch2), every stage ran at the
 * size before its downsample: HGNet-T at 4.34 times its measured peak, now 1.27. */
static void test_modtree_stage_after_downsample(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *t = "Net(\n"
                    "  (stem): Conv2d(3, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
                    "  (stage): Stage(\n"
                    "    (downsample): ConvBNAct(\n"
                    "      (conv): Conv2d(16, 16, kernel_size=(3, 3), stride=(2, 2), "
                    "padding=(1, 1), groups=16, bias=False)\n"
                    "    )\n"
                    "    (blocks): Sequential(\n"
                    "      (0): Block(\n"
                    "        (conv): Conv2d(16, 16, kernel_size=(3, 3), stride=(1, 1), "
                    "padding=(1, 1), bias=False)\n"
                    "      )\n"
                    "    )\n"
                    "  )\n"
                    ")\n";
    if (parse_image_str(t, 32, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 1), 16 * 16 * 16); /* the downsample */
    assert_int_equal(kind_nth(&m, EST_K_CONV, 2), 16 * 16 * 16); /* on its output */
}

/* timm's EcaModule (ECA-NFNet, ECA-ResNet): a 1-D convolution of one channel over the
 * channels of the pooled block input, then a sigmoid gate: a squeeze-excitation, the next
 * layer reading the block input's shape (refused before as a 1-D convolution; ECA-NFNet-L0
 * measured on an H200 at 4710 MiB, estimated at 4770, bound 1.79 of it). */
static void test_modtree_eca(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *t = "Net(\n"
                    "  (stem): Conv2d(3, 16, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))\n"
                    "  (attn): EcaModule(\n"
                    "    (conv): Conv1d(1, 1, kernel_size=(5,), stride=(1,), padding=(2,), "
                    "bias=False)\n"
                    "    (gate): Sigmoid()\n"
                    "  )\n"
                    "  (head): Conv2d(16, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
                    ")\n";
    if (parse_image_str(t, 32, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.params, 3 * 16 * 9 + 16 + 5 + 16 * 8 * 9 + 8);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 1), 8 * 16 * 16); /* on the input's shape */
    assert_int_equal(m.join_line, 0);
}

/* A stem block whose branches both read the image (timm's RepVggBlock and FastViT's
 * MobileOneBlock: conv_kxk and conv_1x1/conv_scale, summed): the second reads the image too,
 * not a join the print does not show at the first's input size (RepVGG-A2 had been read
 * at 0.84 of its measured peak with every stage at half size; FastViT-T8 at 0.66, then
 * 0.76). So do the branches of the block after it, whose input is that sum: its first
 * branch reads the join as an add, its second the same sum, not the first's output
 * (FastViT-T8 0.76 -> 1.49 and RepVGG-B0 0.99 -> 1.68 of their peaks, every stage after the
 * stem had been read at a quarter of its size). */
static void test_modtree_image_branches(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *t = "Net(\n"
                    "  (stem): RepVggBlock(\n"
                    "    (conv_kxk): Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2), "
                    "padding=(1, 1), bias=False)\n"
                    "    (conv_1x1): Conv2d(3, 8, kernel_size=(1, 1), stride=(2, 2), bias=False)\n"
                    "  )\n"
                    "  (stage): RepVggBlock(\n"
                    "    (conv_kxk): ConvNormAct(\n"
                    "      (conv): Conv2d(8, 8, kernel_size=(3, 3), stride=(2, 2), "
                    "padding=(1, 1), bias=False)\n"
                    "      (bn): BatchNorm2d(8, eps=1e-05, momentum=0.1, affine=True, "
                    "track_running_stats=True)\n"
                    "    )\n"
                    "    (conv_1x1): ConvNormAct(\n"
                    "      (conv): Conv2d(8, 8, kernel_size=(1, 1), stride=(2, 2), bias=False)\n"
                    "      (bn): BatchNorm2d(8, eps=1e-05, momentum=0.1, affine=True, "
                    "track_running_stats=True)\n"
                    "    )\n"
                    "  )\n"
                    "  (head): Conv2d(8, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
                    ")\n";
    if (parse_image_str(t, 32, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 0), 8 * 16 * 16);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 1), 8 * 16 * 16);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 2), 8 * 8 * 8);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 3), 8 * 8 * 8);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 4), 8 * 8 * 8);
    assert_int_equal(m.join_line, 0);
    assert_int_equal(m.input, 3 * 32 * 32);
    /* timm's RepVGG-B0 at 224: 112, 56, 28, 14 and 7 pixels a side, two convolutions a
     * block */
    if (parse_into("data/estimator/gpu-peaks-h200/repvgg_b0_timm_b64.txt", 224, layers, &m,
                   &err))
        fail_msg("%s", err.msg);
    static const uint64_t sizes[] = {64 * 112 * 112, 64 * 56 * 56, 128 * 28 * 28,
                                     256 * 14 * 14, 1280 * 7 * 7};
    static const unsigned nconv[] = {2, 8, 12, 32, 2};
    size_t k = 0;
    for (size_t s = 0; s < 5; s++)
        for (unsigned j = 0; j < nconv[s]; j++)
            assert_int_equal(kind_nth(&m, EST_K_CONV, k++), sizes[s]);
}

/* milesial's U-Net decoder: Up upsamples its input with a transposed convolution and its
 * DoubleConv reads torch.cat([skip, up(x)]), as many channels as Up's input has: the join
 * at the skip's size, not Up's input (read so, the whole decoder had run at the
 * bottleneck's size; found in review). */
static void test_modtree_unet_transposed_join(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *t = "UNet(\n"
                    "  (inc): Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
                    "  (down): Down(\n"
                    "    (pool): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, "
                    "ceil_mode=False)\n"
                    "    (conv): Conv2d(8, 16, kernel_size=(3, 3), stride=(1, 1), "
                    "padding=(1, 1))\n"
                    "  )\n"
                    "  (up): Up(\n"
                    "    (up): ConvTranspose2d(16, 8, kernel_size=(2, 2), stride=(2, 2))\n"
                    "    (conv): DoubleConv(\n"
                    "      (double_conv): Sequential(\n"
                    "        (0): Conv2d(16, 8, kernel_size=(3, 3), stride=(1, 1), "
                    "padding=(1, 1))\n"
                    "        (1): ReLU(inplace=True)\n"
                    "      )\n"
                    "    )\n"
                    "  )\n"
                    ")\n";
    if (parse_image_str(t, 32, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 2), 8 * 32 * 32); /* the transposed one */
    assert_int_equal(kind_nth(&m, EST_K_CONV, 3), 8 * 32 * 32); /* on the 16-channel join */
    assert_int_equal(m.concat, 16 * 32 * 32);
    /* only right after the upsampling child: HRNet's fuse layers upsample inside a
     * module whose later readers take its input's width too (read as joins, its branches
     * had grown to 224 x 224) */
    if (parse_into("data/estimator/gpu-peaks-h100/hrnet_w32_b32.txt", 224, layers, &m, &err))
        fail_msg("%s", err.msg);
    for (size_t i = 0; i < m.n; i++)
        assert_true(m.layers[i].kind != EST_K_CONV || m.layers[i].out <= 64 * 112 * 112);
}

/* TResNet's stem: timm's SpaceToDepth() moves each 4 x 4 neighbourhood of the image into
 * channels (48 of the 3 x 224 x 224 image, as the convolution after it reads), and its
 * BlurPool2d() `aa` downsamples by 2 (its default, unprinted). Read before as an unexplained
 * join at the image's size and as a pooling that keeps its input's size, TResNet-M was
 * estimated at 175 times its measured peak; now 1.29. */
static void test_modtree_space_to_depth_blurpool(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *t = "Net(\n"
                    "  (s2d): SpaceToDepth()\n"
                    "  (conv): Conv2d(48, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
                    "  (aa): BlurPool2d()\n"
                    "  (head): Conv2d(8, 8, kernel_size=(1, 1), stride=(1, 1))\n"
                    ")\n";
    if (parse_image_str(t, 64, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.input, 3 * 64 * 64);
    assert_int_equal(m.layers[0].kind, EST_K_POOL);
    assert_int_equal(m.layers[0].out, 48 * 16 * 16);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 0), 8 * 16 * 16);
    assert_int_equal(kind_nth(&m, EST_K_POOL, 1), 8 * 8 * 8);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 1), 8 * 8 * 8);
    assert_int_equal(m.bare_pool_line, 0);
    assert_int_equal(m.join_line, 0);
    /* a blur pool in a block with a dilated convolution keeps the size (timm's ResNets at
     * output stride 8 or 16 add one where the dilation changes) */
    const char *dilated = "Net(\n"
                          "  (stem): Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), "
                          "padding=(1, 1))\n"
                          "  (block): Bottleneck(\n"
                          "    (conv2): Conv2d(8, 8, kernel_size=(3, 3), stride=(1, 1), "
                          "padding=(2, 2), dilation=(2, 2))\n"
                          "    (aa): BlurPool2d()\n"
                          "  )\n"
                          ")\n";
    if (parse_image_str(dilated, 32, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(kind_nth(&m, EST_K_POOL, 0), 8 * 32 * 32);
    /* torch's PixelUnshuffle prints its factor */
    const char *pu = "Net(\n"
                     "  (c0): Conv2d(3, 4, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
                     "  (pu): PixelUnshuffle(downscale_factor=2)\n"
                     "  (c1): Conv2d(16, 8, kernel_size=(1, 1), stride=(1, 1))\n"
                     ")\n";
    if (parse_image_str(pu, 32, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(kind_nth(&m, EST_K_POOL, 0), 16 * 16 * 16);
    assert_int_equal(kind_nth(&m, EST_K_CONV, 1), 8 * 16 * 16);
}

/* MLP-Mixer and ResMLP mix their tokens with linear layers over the positions (in_features
 * the patch grid's 196), per channel; their channel MLPs then run per position. Read as
 * after a global pool (a CNN's head), MLP-Mixer-B/16 was estimated at 0.41 of its measured
 * peak, its bound 0.95; now 1.02. ResMLP's Affine() is a per-channel scale and shift. */
static void test_modtree_token_mixing(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *mixer = "MlpMixer(\n"
                        "  (stem): PatchEmbed(\n"
                        "    (proj): Conv2d(3, 64, kernel_size=(16, 16), stride=(16, 16))\n"
                        "  )\n"
                        "  (block): MixerBlock(\n"
                        "    (norm1): Affine()\n"
                        "    (mlp_tokens): Mlp(\n"
                        "      (fc1): Linear(in_features=16, out_features=32, bias=True)\n"
                        "      (act): GELU(approximate='none')\n"
                        "      (fc2): Linear(in_features=32, out_features=16, bias=True)\n"
                        "    )\n"
                        "    (norm2): LayerNorm((64,), eps=1e-06, elementwise_affine=True)\n"
                        "    (mlp_channels): Mlp(\n"
                        "      (fc1): Linear(in_features=64, out_features=256, bias=True)\n"
                        "      (act): GELU(approximate='none')\n"
                        "      (fc2): Linear(in_features=256, out_features=64, bias=True)\n"
                        "    )\n"
                        "  )\n"
                        ")\n";
    /* gMLP runs its channel layer first: read as after a global pool, its token layer over
     * the 16 positions is refused, naming both lines */
    const char *gmlp = "Net(\n"
                       "  (stem): Conv2d(3, 64, kernel_size=(16, 16), stride=(16, 16))\n"
                       "  (mlp): GatedMlp(\n"
                       "    (fc1): Linear(in_features=64, out_features=256, bias=True)\n"
                       "    (act): GELU(approximate='none')\n"
                       "    (gate): SpatialGatingUnit(\n"
                       "      (norm): LayerNorm((128,), eps=1e-06, elementwise_affine=True)\n"
                       "      (proj): Linear(in_features=16, out_features=16, bias=True)\n"
                       "    )\n"
                       "    (fc2): Linear(in_features=128, out_features=64, bias=True)\n"
                       "  )\n"
                       ")\n";
    assert_int_equal(parse_image_str(gmlp, 64, &m, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "t.txt:8: Linear (in_features=16) over the 4x4 positions of "
                                    "the tensor that the linear layer at line 4 read"));
    if (parse_image_str(mixer, 64, &m, &err)) /* 4 x 4 patches */
        fail_msg("%s", err.msg);
    assert_int_equal(m.layers[1].kind, EST_K_NORM); /* Affine: 2 x 64 parameters */
    assert_int_equal(m.layers[1].params, 128);
    assert_int_equal(kind_nth(&m, EST_K_LINEAR, 0), 64 * 32); /* per channel */
    assert_int_equal(kind_nth(&m, EST_K_LINEAR, 1), 64 * 16);
    assert_int_equal(kind_nth(&m, EST_K_LINEAR, 2), 256 * 16); /* per position */
    assert_int_equal(kind_nth(&m, EST_K_LINEAR, 3), 64 * 16);
}

/* An attention class with parameters but no printed projection (XLNet's
 * XLNetRelativeAttention keeps q, k, v, o and r as bare parameters and prints a norm and
 * a dropout) is refused, naming its line: read as printed, its weights and probabilities
 * were left out. A parameter-free wrapper (segmentation_models_pytorch's Attention around
 * an Identity) is read. */
static void test_modtree_bare_attention_refused(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
#define BARE_TOY(attn)                                                                             \
    "Model(\n"                                                                                     \
    "  (word_embedding): Embedding(32000, 768)\n"                                                  \
    "  (layer): ModuleList(\n"                                                                     \
    "    (0-11): 12 x XLNetLayer(\n" attn                                                          \
    "      (ff): XLNetFeedForward(\n"                                                              \
    "        (layer_norm): LayerNorm((768,), eps=1e-12, elementwise_affine=True)\n"               \
    "        (layer_1): Linear(in_features=768, out_features=3072, bias=True)\n"                  \
    "        (layer_2): Linear(in_features=3072, out_features=768, bias=True)\n"                  \
    "      )\n"                                                                                    \
    "    )\n"                                                                                      \
    "  )\n"                                                                                        \
    "  (fc): Linear(in_features=768, out_features=10, bias=True)\n"                               \
    ")\n"
    const char *bare = BARE_TOY("      (rel_attn): XLNetRelativeAttention(\n"
                                "        (layer_norm): LayerNorm((768,), eps=1e-12, "
                                "elementwise_affine=True)\n"
                                "        (dropout): Dropout(p=0.1, inplace=False)\n"
                                "      )\n");
    assert_int_equal(parse_str(bare, &m, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "t.txt:5: XLNetRelativeAttention: an attention block whose "
                                    "projections the print does not show"));
    const char *wrapper = BARE_TOY("      (attention1): Attention(\n"
                                   "        (attention): Identity()\n"
                                   "      )\n"
                                   "      (drop): SelfAttention(\n"
                                   "        (dropout): Dropout(p=0.1, inplace=False)\n"
                                   "      )\n");
    assert_int_equal(parse_str(wrapper, &m, &err), 0);
    /* a convolutional network's attention of norms only (NAMAttention, YOLO forks'): not
     * a sequence model's, read as before */
    if (parse_into("tests/fuzz/corpus/summary_modtree/nam_attention_cnn.txt", 64, layers, &m,
                   &err))
        fail_msg("%s", err.msg);
#undef BARE_TOY
}

/* An encoder-decoder's token table, `shared`, printed again as each stack's
 * `embed_tokens` (the one module Hugging Face passes to both) is one parameter: its copies
 * add no weight or optimizer state, and each lookup's gradient goes to the table. A table
 * of another size, or of another name, is a table of its own. */
static void test_modtree_shared_table(void **state)
{
    (void)state;
    static struct est_layer own_l[EST_MAX_LAYERS];
    struct est_model m, own;
    struct carma_err err;
#define SHARED_TOY(name, rows)                                                                     \
    "T5ForConditionalGeneration(\n"                                                                \
    "  (shared): Embedding(4000, 256)\n"                                                           \
    "  (encoder): T5Stack(\n"                                                                      \
    "    (" name "): Embedding(" rows ", 256)\n"                                                   \
    "    (ff): Linear(in_features=256, out_features=1024, bias=False)\n"                          \
    "    (out): Linear(in_features=1024, out_features=256, bias=False)\n"                         \
    "  )\n"                                                                                        \
    "  (decoder): T5Stack(\n"                                                                      \
    "    (" name "): Embedding(" rows ", 256)\n"                                                   \
    "    (ff): Linear(in_features=256, out_features=1024, bias=False)\n"                          \
    "    (out): Linear(in_features=1024, out_features=256, bias=False)\n"                         \
    "  )\n"                                                                                        \
    "  (lm_head): Linear(in_features=256, out_features=4000, bias=False)\n"                       \
    ")\n"
    const char *tied = SHARED_TOY("embed_tokens", "4000");
    const char *apart = SHARED_TOY("embed_table", "4000");
    if (parse_str(tied, &m, &err))
        fail_msg("%s", err.msg);
    est_model_init(&own, own_l, EST_MAX_LAYERS);
    assert_int_equal(est_parse(apart, strlen(apart), "a.txt", &own, &err), 0);
    const uint64_t table = 4000 * 256, body = 2 * 2 * 256 * 1024;
    assert_int_equal(m.params, table + body + table); /* the head stays apart */
    assert_int_equal(m.tied_params, 2 * table);
    assert_int_equal(own.params, 3 * table + body + table);
    size_t ntied = 0;
    for (size_t i = 0; i < m.n; i++)
        ntied += (m.layers[i].flags & EST_LF_TIED) != 0;
    assert_int_equal(ntied, 2);
    struct est_opts o = {.batch = 8, .seq = 128, .optimizer = EST_OPT_ADAMW};
    struct est_result rt, ra;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &rt, &err), 0);
    assert_int_equal(est_compute(&own, est_coef_default(), &o, &rwork, &ra, &err), 0);
    /* two tables of weights fewer, and of AdamW's state (its 2 x 4 B a parameter), to
     * within what the allocator's blocks round (5%) */
    double tables = 2 * table * 4 / 1048576.0;
    assert_true(fabs((ra.weights_mib - rt.weights_mib) / tables - 1) < 0.05);
    assert_true(fabs((ra.optimizer_mib - rt.optimizer_mib) / (2 * tables) - 1) < 0.05);
    assert_true(rt.estimate_mib < ra.estimate_mib);
    /* another size: its own table */
    const char *other = SHARED_TOY("embed_tokens", "4001");
    if (parse_str(other, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.tied_params, 0);
    /* under PEFT the frozen table is counted frozen once: t5-small with LoRA on q and v
     * trains its adapters' 294,912 (a review found it refused as training nothing) */
    if (parse_file("tests/fuzz/corpus/summary_modtree/t5_small_lora_qv.txt", &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.params - m.frozen, 294912);
    assert_int_equal(m.tied_params, 2 * 32128ull * 512);
#undef SHARED_TOY
}

/* A fused GLU (gate and up in one projection, E -> 2I, then I -> E: ChatGLM2/3's MLP,
 * DINOv2's SwiGLUFFN, Phi-3's gate_up_proj) keeps its 2I-wide output, the activation's
 * output and the product, as a gated MLP keeps its four I-wide tensors. */
static void test_modtree_fused_glu(void **state)
{
    (void)state;
    static struct est_layer ref_l[EST_MAX_LAYERS];
    struct est_model m, ref;
    struct carma_err err;
#define GLU_TOY(mlp)                                                                               \
    "Toy(\n"                                                                                       \
    "  (embed): Embedding(1000, 1024)\n"                                                           \
    "  (mlp): Mlp(\n" mlp "  )\n"                                                                  \
    "  (norm): LayerNorm((1024,), eps=1e-05, elementwise_affine=True)\n"                           \
    "  (head): Linear(in_features=1024, out_features=1000, bias=False)\n"                          \
    ")\n"
#define GLU_IN "    (dense_h_to_4h): Linear(in_features=1024, out_features=8192, bias=False)\n"
#define GLU_OUT "    (dense_4h_to_h): Linear(in_features=4096, out_features=1024, bias=False)\n"
    const char *functional = GLU_TOY(GLU_IN GLU_OUT);
    est_model_init(&ref, ref_l, EST_MAX_LAYERS);
    assert_int_equal(est_parse(functional, strlen(functional), "f.txt", &ref, &err), 0);
    assert_int_equal(ref.n, 7);
    assert_int_equal(ref.layers[1].kind, EST_K_LINEAR);
    assert_int_equal(ref.layers[1].out, 8192);
    assert_int_equal(ref.layers[2].kind, EST_K_ACT);
    assert_int_equal(ref.layers[2].out, 4096);
    assert_int_equal(ref.layers[2].flags, 0); /* SiLU keeps its (2I-wide) input */
    assert_int_equal(ref.layers[3].kind, EST_K_POOL); /* the product */
    assert_int_equal(ref.layers[3].out, 4096);
    assert_int_equal(ref.layers[3].params, 0);
    assert_true(ref.layers[3].flags & EST_LF_PRODUCT);
    assert_int_equal(ref.layers[4].kind, EST_K_LINEAR);
    assert_int_equal(ref.layers[4].out, 1024);
    assert_int_equal(ref.params, 1000 * 1024 + 1024 * 8192 + 4096 * 1024 + 2 * 1024 +
                                     1024 * 1000);
    /* the same with its activation module printed last (Phi-3), or the projections
     * listed the other way round: the same rows */
    static const char *const prints[] = {GLU_TOY(GLU_IN GLU_OUT "    (act): SiLU()\n"),
                                         GLU_TOY(GLU_OUT GLU_IN)};
    for (size_t p = 0; p < 2; p++) {
        assert_int_equal(parse_str(prints[p], &m, &err), 0);
        assert_same_model(&m, &ref);
    }
    /* a ReLU, which keeps its output alone, keeps its input here: the product keeps x1,
     * a view of that input */
    const char *relu = GLU_TOY("    (act): ReLU()\n" GLU_IN GLU_OUT);
    assert_int_equal(parse_str(relu, &m, &err), 0);
    assert_int_equal(m.layers[2].kind, EST_K_ACT);
    assert_int_equal(m.layers[2].flags & EST_LF_SAVES_RESULT, 0);
    /* what it keeps: at least a gated MLP's four I-wide tensors, less the up
     * projection's own 16-bit copy of the input */
    const char *gated =
        GLU_TOY("    (gate_proj): Linear(in_features=1024, out_features=4096, bias=False)\n"
                "    (up_proj): Linear(in_features=1024, out_features=4096, bias=False)\n"
                "    (down_proj): Linear(in_features=4096, out_features=1024, bias=False)\n"
                "    (act_fn): SiLU()\n");
    assert_int_equal(parse_str(gated, &m, &err), 0);
    struct est_opts o = {.batch = 8, .seq = 2048, .optimizer = EST_OPT_ADAMW,
                         .precision = EST_PREC_BF16};
    struct est_result a, b;
    assert_int_equal(est_compute(&ref, est_coef_default(), &o, &rwork, &a, &err), 0);
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &b, &err), 0);
    assert_true(a.activations_mib + a.transient_mib >=
                b.activations_mib + b.transient_mib - 8.0 * 2048 * 1024 * 2 / 1048576);
    /* a Sequential runs as listed, and a plain MLP (E -> I, I -> E) is not one */
    const char *plain =
        GLU_TOY("    (fc1): Linear(in_features=1024, out_features=4096, bias=False)\n"
                "    (fc2): Linear(in_features=4096, out_features=1024, bias=False)\n");
    assert_int_equal(parse_str(plain, &m, &err), 0);
    assert_int_equal(m.n, 5);
#undef GLU_OUT
#undef GLU_IN
#undef GLU_TOY
}

/* Keras's attention layers: a MultiHeadAttention's key length is its key's (the tensor
 * "Connected to" names, a model input too), else the longest sequence so far, inputs
 * included; GroupedQueryAttention is read as a MultiHeadAttention of parameters / E;
 * Attention and AdditiveAttention keep their single-head scores; any other attention
 * layer hides its insides and is refused. */
static void test_keras_attention_layers(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const struct est_coef *c = est_coef_default();
    struct est_result r, r2;
    struct est_opts o = {.batch = 16, .optimizer = EST_OPT_ADAMW};
    size_t at;

    /* MultiHeadAttention(2, 8) from 8 queries over an input of 512 (the memory), beside a
     * longer input it does not read: S = 512, neither 8 nor 1000 */
    const char *cross = "tests/fuzz/corpus/summary_keras/keras2_mha_cross_input.txt";
    int rc = parse_heads(cross, NULL, 2, &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.params, 1122);
    const struct est_layer *a = attn_row(&m, &at);
    assert_int_equal(a->out, 2 * 8 * 512);
    assert_int_equal(m.layers[at - 3].out, 8 * 16);   /* the query's projection */
    assert_int_equal(m.layers[at - 2].out, 512 * 16); /* the key's */
    assert_int_equal(m.layers[at - 1].out, 512 * 16); /* the value's */
    assert_int_equal(est_compute(&m, c, &o, &rwork, &r, &err), 0);
    /* the key named but not in the table: the longest sequence before it */
    const char *unknown =
        "Model: \"m\"\n"
        " Layer (type)                   Output Shape         Param #     Connected to       \n"
        "=====================================================================================\n"
        " query (InputLayer)             [(None, 8, 16)]      0           []                 \n"
        "                                                                                    \n"
        " long (InputLayer)              [(None, 1000, 16)]   0           []                 \n"
        "                                                                                    \n"
        " mha (MultiHeadAttention)       (None, 8, 16)        1088        ['query[0][0]',    \n"
        "                                                                  'encoder_out[0][0]']\n"
        "=====================================================================================\n"
        "Total params: 1,088\n";
    assert_int_equal(parse_heads(NULL, unknown, 2, &m, &err), 0);
    assert_int_equal(attn_row(&m, NULL)->out, 2 * 8 * 1000);
    /* so is a cell that names nothing (a layer's never is: a cut print) */
    const char *empty =
        "Model: \"m\"\n"
        " Layer (type)                   Output Shape         Param #     Connected to       \n"
        "=====================================================================================\n"
        " query (InputLayer)             [(None, 8, 16)]      0           []                 \n"
        "                                                                                    \n"
        " long (InputLayer)              [(None, 1000, 16)]   0           []                 \n"
        "                                                                                    \n"
        " mha (MultiHeadAttention)       (None, 8, 16)        1088        []                 \n"
        "=====================================================================================\n"
        "Total params: 1,088\n";
    assert_int_equal(parse_heads(NULL, empty, 2, &m, &err), 0);
    assert_int_equal(attn_row(&m, NULL)->out, 2 * 8 * 1000);
    /* no "Connected to" column: the longest sequence so far, an input's too */
    const char *plain =
        "Model: \"m\"\n"
        " Layer (type)                Output Shape              Param #   \n"
        "=================================================================\n"
        " input_1 (InputLayer)        [(None, 700, 16)]         0         \n"
        "                                                                 \n"
        " mha (MultiHeadAttention)    (None, 8, 16)             1088      \n"
        "=================================================================\n"
        "Total params: 1,088\n";
    assert_int_equal(parse_heads(NULL, plain, 2, &m, &err), 0);
    assert_int_equal(attn_row(&m, NULL)->out, 2 * 8 * 700);

    /* Keras 3's GroupedQueryAttention(head_dim=8, num_query_heads=4,
     * num_key_value_heads=2) on 32-wide tokens, 100 queries over 300 keys: 3,168
     * parameters, read as projections 3168 / 32 = 99 wide; its heads are --heads */
    const char *gqa = "tests/fuzz/corpus/summary_keras/keras3_gqa_cross.txt";
    rc = parse_heads(gqa, NULL, 0, &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    a = attn_row(&m, &at);
    assert_int_equal(a->heads_src, EST_HEADS_UNKNOWN);
    assert_int_equal(m.heads_line, 9);
    assert_string_equal(m.heads_class, "Keras GroupedQueryAttention");
    assert_int_equal(est_compute(&m, c, &o, &rwork, &r, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "line 9: Keras GroupedQueryAttention: its number of heads"));
    assert_int_equal(parse_heads(gqa, NULL, 4, &m, &err), 0);
    a = attn_row(&m, &at);
    assert_int_equal(a->heads_src, EST_HEADS_GIVEN);
    assert_int_equal(a->out, 4 * 100 * 300);
    assert_int_equal(m.layers[at - 3].out, 100 * 99);
    assert_int_equal(m.layers[at - 2].out, 300 * 99);
    assert_int_equal(m.layers[at + 1].params, 3168); /* all of it, on one row */
    assert_int_equal(m.params, 3201);
    assert_int_equal(est_compute(&m, c, &o, &rwork, &r, &err), 0);

    /* Attention (dot scores, no weight) and AdditiveAttention (a scale per channel) from
     * 10 queries over 300 values, 16 wide: no heads, scores 10 x 300; the additive one's
     * tanh of 10 x 300 x 16 */
    const char *att = "tests/fuzz/corpus/summary_keras/keras2_attention.txt";
    rc = parse_heads(att, NULL, 0, &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.params, 49);
    assert_int_equal(est_heads_used(&m, EST_ATTN_SHOWN), -1);
    size_t k = kind_row(&m, 0, EST_K_SOFTMAX);
    assert_true(k >= 1 && k + 2 < m.n);
    assert_int_equal(m.layers[k - 1].kind, EST_K_POOL); /* q k^T */
    assert_int_equal(m.layers[k - 1].out, 10 * 300);
    assert_int_equal(m.layers[k].out, 10 * 300);
    assert_int_equal(m.layers[k + 1].kind, EST_K_DROPOUT);
    assert_int_equal(m.layers[k + 2].kind, EST_K_POOL); /* probabilities x values */
    assert_int_equal(m.layers[k + 2].out, 10 * 16);
    size_t t = kind_row(&m, k, EST_K_ACT);
    assert_true(t < m.n);
    assert_int_equal(m.layers[t].out, 10 * 300 * 16);
    assert_int_equal(m.layers[t].flags, EST_LF_SAVES_RESULT);
    assert_int_equal(m.layers[t - 1].params, 16);
    assert_int_equal(m.layers[kind_row(&m, t, EST_K_SOFTMAX)].out, 10 * 300);
    /* no fused kernel runs them: the same under --attention sdpa */
    assert_int_equal(est_compute(&m, c, &o, &rwork, &r, &err), 0);
    o.attention = EST_ATTN_SDPA;
    assert_int_equal(est_compute(&m, c, &o, &rwork, &r2, &err), 0);
    assert_float_equal(r.estimate_mib, r2.estimate_mib, 1e-9);
    o.attention = EST_ATTN_SHOWN;

    /* a custom attention layer (the TensorFlow tutorial's GlobalSelfAttention, holding a
     * MultiHeadAttention), with parameters or none, and an Attention with more weights
     * than Keras's: refused */
    char text[1024];
    const char *fmt =
        "Model: \"m\"\n"
        " Layer (type)                Output Shape              Param #   \n"
        "=================================================================\n"
        " input_1 (InputLayer)        [(None, 200)]             0         \n"
        "                                                                 \n"
        " embedding (Embedding)       (None, 200, 32)           640000    \n"
        "                                                                 \n"
        " attn (%-20s  (None, 200, 32)           %-10s\n"
        "=================================================================\n"
        "Total params: %s\n";
    snprintf(text, sizeof text, fmt, "GlobalSelfAttention)", "8480", "648,480");
    assert_true(parse_heads(NULL, text, 2, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:8: 'GlobalSelfAttention' (8480 parameters) is an "
                                    "attention layer whose insides the summary does not list"));
    snprintf(text, sizeof text, fmt, "CausalAttention)", "0", "640,000");
    assert_true(parse_heads(NULL, text, 2, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:8: 'CausalAttention' (0 parameters) is an attention"));
    snprintf(text, sizeof text, fmt, "Attention)", "3", "640,003");
    assert_true(parse_heads(NULL, text, 0, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:8: 'Attention' (3 parameters) is an attention"));
    snprintf(text, sizeof text, fmt, "Attention)", "1", "640,001");
    assert_int_equal(parse_heads(NULL, text, 0, &m, &err), 0);
    assert_int_equal(m.layers[kind_row(&m, 0, EST_K_ACT)].out, 200 * 200 * 32); /* concat */
}

/* carmad's basis for an estimator bound (carma show) names the job's heads only where
 * they sized the estimate: under fused attention they size nothing. */
/* SDPA that no fused kernel takes (grouped-query attention in fp32, or on a GPU without
 * FlashAttention) runs PyTorch's math kernel, which keeps the probabilities: measured on
 * an H100 (data/estimator/gpu-peaks-h100, llama_small_b4_s512: 0.89 of the peak without). */
static void test_attention_math_kernel(void **state)
{
    (void)state;
    const char *fmt = "M(\n"
                      "  (embed_tokens): Embedding(100, 160)\n"
                      "  (self_attn): Llama%sAttention(\n"
                      "    (q_proj): Linear(in_features=160, out_features=128, bias=False)\n"
                      "    (k_proj): Linear(in_features=160, out_features=%d, bias=False)\n"
                      "    (v_proj): Linear(in_features=160, out_features=%d, bias=False)\n"
                      "    (o_proj): Linear(in_features=128, out_features=160, bias=False)\n"
                      "  )\n"
                      ")\n";
    char gqa[1024], mha[1024], old[1024];
    snprintf(gqa, sizeof gqa, fmt, "", 32, 32);
    snprintf(mha, sizeof mha, fmt, "", 128, 128);
    snprintf(old, sizeof old, fmt, "Sdpa", 32, 32); /* transformers < 4.48: repeat_kv */
    const struct est_coef *c = est_coef_default();
    struct est_model m;
    struct carma_err err;
    struct est_result math, r;
    struct est_opts o = {.batch = 8, .seq = 1024, .optimizer = EST_OPT_ADAMW,
                         .attention = EST_ATTN_SDPA, .cc = 90};
    assert_int_equal(parse_heads(NULL, gqa, 0, &m, &err), 0);
    assert_int_equal(est_compute(&m, c, &o, &rwork, &math, &err), 0);
    assert_int_equal(math.math_attention, 1);
    o.precision = EST_PREC_BF16; /* FlashAttention takes it */
    assert_int_equal(est_compute(&m, c, &o, &rwork, &r, &err), 0);
    assert_int_equal(r.math_attention, 0);
    o.cc = 70; /* a V100 has no FlashAttention */
    assert_int_equal(est_compute(&m, c, &o, &rwork, &r, &err), 0);
    assert_int_equal(r.math_attention, 1);
    /* not known (carma submit; carmad on a T4 or a P100, kinds it does not know): taken as
     * below 8.0, the safe side, with the note saying so; the V100's note does not */
    char notes[EST_NOTES][EST_NOTE_MAX];
    size_t nn = est_notes(&m, &o, &r, notes);
    for (size_t i = 0; i < nn; i++)
        assert_null(strstr(notes[i], "compute capability is not known"));
    o.cc = 0;
    assert_int_equal(est_compute(&m, c, &o, &rwork, &r, &err), 0);
    assert_int_equal(r.math_attention, 1);
    nn = est_notes(&m, &o, &r, notes);
    size_t said = 0;
    for (size_t i = 0; i < nn; i++)
        said += strstr(notes[i], "compute capability is not known") != NULL &&
                strlen(notes[i]) < EST_NOTE_MAX - 1; /* not cut short */
    assert_int_equal(said, 1);
    o.precision = EST_PREC_FP32;
    o.cc = 90;
    /* the memory-efficient kernel takes fp32 without grouped keys */
    assert_int_equal(parse_heads(NULL, mha, 0, &m, &err), 0);
    assert_int_equal(est_compute(&m, c, &o, &rwork, &r, &err), 0);
    assert_int_equal(r.math_attention, 0);
    /* an older print's Sdpa class repeats the keys itself: fused, nothing kept; the math
     * kernel keeps 8 x 2 heads x 1024 x 1024 fp32 probabilities (64 MiB) through backward */
    o.attention = EST_ATTN_SHOWN;
    assert_int_equal(parse_heads(NULL, old, 0, &m, &err), 0);
    assert_int_equal(est_compute(&m, c, &o, &rwork, &r, &err), 0);
    assert_int_equal(r.math_attention, 0);
    assert_true(math.estimate_mib >= r.estimate_mib + 8 * 2 * 1024.0 * 1024 * 4 / 1048576 * 0.9);
}

/* Attention that adds a learned position bias to its scores (T5's relative_attention_bias,
 * a table in the first block only) computes them in Python: every attention block after
 * the table keeps its probabilities under --attention sdpa too. Measured on an H100
 * (data/estimator/gpu-peaks-h100, t5_small_b16_s512: 13474 MiB; read as fused, a bound of
 * 12834). A rotary embedding (no table) is no such bias. */
static void test_attention_position_bias(void **state)
{
    (void)state;
    const char *fmt = "T5Stack(\n"
                      "  (embed_tokens): Embedding(100, 128)\n"
                      "  (block): ModuleList(\n"
                      "    (0): T5Block(\n"
                      "      (SelfAttention): T5Attention(\n"
                      "        (q): Linear(in_features=128, out_features=128, bias=False)\n"
                      "        (k): Linear(in_features=128, out_features=128, bias=False)\n"
                      "        (v): Linear(in_features=128, out_features=128, bias=False)\n"
                      "        (o): Linear(in_features=128, out_features=128, bias=False)\n"
                      "        %s\n"
                      "      )\n"
                      "    )\n"
                      "    (1): T5Block(\n"
                      "      (SelfAttention): T5Attention(\n"
                      "        (q): Linear(in_features=128, out_features=128, bias=False)\n"
                      "        (k): Linear(in_features=128, out_features=128, bias=False)\n"
                      "        (v): Linear(in_features=128, out_features=128, bias=False)\n"
                      "        (o): Linear(in_features=128, out_features=128, bias=False)\n"
                      "      )\n"
                      "    )\n"
                      "  )\n"
                      ")\n";
    char t5[2048], rope[2048];
    snprintf(t5, sizeof t5, fmt, "(relative_attention_bias): Embedding(32, 2)");
    snprintf(rope, sizeof rope, fmt, "(rotary_emb): LlamaRotaryEmbedding()");
    struct est_model m;
    struct carma_err err;
    assert_int_equal(parse_heads(NULL, t5, 0, &m, &err), 0);
    assert_int_equal(m.scores_bias_line, 10);
    size_t n = 0;
    for (size_t i = 0; i < m.n; i++)
        if (m.layers[i].kind == EST_K_ATTN) {
            assert_true(m.layers[i].flags & EST_LF_SCORES);
            assert_true(est_layer_materialised(&m.layers[i], EST_ATTN_SDPA));
            n++;
        }
    assert_int_equal(n, 2);
    assert_string_equal(est_attention_assumed(&m, EST_ATTN_SDPA), "eager");
    assert_int_equal(parse_heads(NULL, rope, 0, &m, &err), 0);
    assert_int_equal(m.scores_bias_line, 0);
    for (size_t i = 0; i < m.n; i++)
        if (m.layers[i].kind == EST_K_ATTN)
            assert_false(est_layer_materialised(&m.layers[i], EST_ATTN_SDPA));
}

/* A position table printed after the attention layers of their block, in a model whose
 * larger token table came first (DeBERTa's encoder-level rel_embeddings, MPNet's
 * relative_attention_bias), is the same case as T5's; a model's only table printed last
 * (PyTorch's tutorial TransformerModel) is its token table. One attention layer alone in
 * its list (ALBERT's shared layer) gets a note. */
static void test_attention_encoder_position_table(void **state)
{
    (void)state;
    const char *fmt = "Enc(\n"
                      "%s"
                      "  (encoder): Stack(\n"
                      "    (layer): ModuleList(\n"
                      "      (%s): %sBlock(\n"
                      "        (attn): SelfAttention(\n"
                      "          (q): Linear(in_features=128, out_features=128, bias=True)\n"
                      "          (k): Linear(in_features=128, out_features=128, bias=True)\n"
                      "          (v): Linear(in_features=128, out_features=128, bias=True)\n"
                      "          (o): Linear(in_features=128, out_features=128, bias=True)\n"
                      "        )\n"
                      "        (ff): Linear(in_features=128, out_features=512, bias=True)\n"
                      "        (out): Linear(in_features=512, out_features=128, bias=True)\n"
                      "      )\n"
                      "    )\n"
                      "    (relative_attention_bias): Embedding(32, 2)\n"
                      "  )\n"
                      "%s"
                      ")\n";
    char mpnet[2048], tutorial[2048], albert[2048];
    snprintf(mpnet, sizeof mpnet, fmt, "  (word_embeddings): Embedding(1000, 128)\n", "0-1",
             "2 x ", "");
    snprintf(tutorial, sizeof tutorial, fmt, "", "0-1", "2 x ",
             "  (embedding): Embedding(1000, 128)\n");
    snprintf(albert, sizeof albert, fmt, "  (word_embeddings): Embedding(1000, 128)\n", "0", "",
             "");
    struct est_model m;
    struct carma_err err;
    assert_int_equal(parse_heads(NULL, mpnet, 0, &m, &err), 0);
    assert_int_equal(m.scores_bias_line, 16);
    assert_int_equal(m.single_layer_line, 0);
    size_t n = 0;
    for (size_t i = 0; i < m.n; i++) {
        assert_true(m.layers[i].kind != EST_K_EMBED || m.layers[i].out == 128); /* the table */
        if (m.layers[i].kind == EST_K_ATTN) {
            assert_true(est_layer_materialised(&m.layers[i], EST_ATTN_SDPA));
            n++;
        }
    }
    assert_int_equal(n, 1); /* one row, two repeats */
    /* the tutorial's token table, registered last: nothing changes */
    assert_int_equal(parse_heads(NULL, tutorial, 0, &m, &err), 0);
    assert_int_equal(m.scores_bias_line, 0);
    for (size_t i = 0; i < m.n; i++)
        if (m.layers[i].kind == EST_K_ATTN)
            assert_false(est_layer_materialised(&m.layers[i], EST_ATTN_SDPA));
    /* one layer alone in its list */
    assert_int_equal(parse_heads(NULL, albert, 0, &m, &err), 0);
    assert_int_equal(m.single_layer_line, 6); /* the attention block */
    /* ALBERT's own layout, that one layer the only one of the only layer group: it runs
     * num_hidden_layers times (counted once, ALBERT-base's bound was below its measured
     * peak), EST_SHARED_RUNS assumed, each later run's rows tied to the first's; a group
     * of two layers is read as two */
    const char *groups = "Albert(\n"
                         "  (word_embeddings): Embedding(1000, 128)\n"
                         "  (albert_layer_groups): ModuleList(\n"
                         "    (0): AlbertLayerGroup(\n"
                         "      (albert_layers): ModuleList(\n"
                         "        (%s): %sAlbertLayer(\n"
                         "          (attention): AlbertAttention(\n"
                         "            (query): Linear(in_features=128, out_features=128, bias=True)\n"
                         "            (key): Linear(in_features=128, out_features=128, bias=True)\n"
                         "            (value): Linear(in_features=128, out_features=128, bias=True)\n"
                         "            (dense): Linear(in_features=128, out_features=128, bias=True)\n"
                         "          )\n"
                         "          (ffn): Linear(in_features=128, out_features=512, bias=True)\n"
                         "        )\n"
                         "      )\n"
                         "    )\n"
                         "  )\n"
                         ")\n";
    char one[2048], two[2048];
    snprintf(one, sizeof one, groups, "0", "");
    snprintf(two, sizeof two, groups, "0-1", "2 x ");
    assert_int_equal(parse_heads(NULL, one, 0, &m, &err), 0);
    assert_int_equal(m.shared_line, 5);
    assert_int_equal(m.single_layer_line, 0);
    assert_int_equal(notes_with(&m, "24 assumed, the most of any released ALBERT"), 1);
    uint64_t params = 1000 * 128 + 4 * (128 * 128 + 128) + 128 * 512 + 512;
    assert_int_equal(m.params, params);
    size_t attn = 0, tied = 0;
    for (size_t i = 0; i < m.n; i++) {
        const struct est_layer *l = &m.layers[i];
        attn += l->kind == EST_K_ATTN;
        if (l->flags & EST_LF_TIED) {
            tied++;
            assert_true(l->shared_from >= 1 && l->shared_from - 1 < i);
            const struct est_layer *f = &m.layers[l->shared_from - 1];
            assert_true(f->kind == l->kind && f->out == l->out && f->params == l->params);
            assert_false(f->flags & EST_LF_TIED);
        } else {
            assert_int_equal(l->shared_from, 0);
        }
    }
    assert_int_equal(attn, EST_SHARED_RUNS);
    assert_int_equal(tied % (EST_SHARED_RUNS - 1), 0);
    /* the parameters, their gradients and AdamW's state once: the later runs' rows
     * alias the first run's (the replay), or hold none (the per-kind terms) */
    struct est_opts o = {.batch = 4, .seq = 64, .optimizer = EST_OPT_ADAMW};
    struct est_result r;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &r, &err), 0);
    double mib = (double)params * 4 / (1024.0 * 1024.0);
    assert_true(r.optimizer_mib >= 2 * mib && r.optimizer_mib < 2 * mib + 1);
    /* under autocast one 16-bit copy of the layer's matrices serves every run (the first
     * run's, held until its backward): weights at the peak are the fp32 masters and that
     * copy (the table has none), not a copy a run (512-byte blocks of rounding aside) */
    struct est_opts oa = o;
    oa.precision = EST_PREC_AMP;
    struct est_replay_result ra;
    assert_int_equal(est_replay(&m, &oa, &rwork, &ra), 0);
    double layer = (double)(params - 1000 * 128) * 2 / (1024.0 * 1024.0);
    assert_true(ra.cat_mib[EST_RC_WEIGHTS] <= mib + layer + 0.02);
    /* --shared-layer-runs gives the runs (ALBERT-base's 12), and is refused for a print
     * without such a group */
    est_model_init(&m, layers, EST_MAX_LAYERS);
    m.shared_layer_runs = 12;
    assert_int_equal(est_model_prepare(&m, one, strlen(one), "t.txt", &o, &err), 0);
    attn = 0;
    for (size_t i = 0; i < m.n; i++)
        attn += m.layers[i].kind == EST_K_ATTN;
    assert_int_equal(attn, 12);
    assert_int_equal(m.params, params);
    assert_int_equal(notes_with(&m, "runs 12 times (--shared-layer-runs)"), 1);
    struct est_result r12;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &r12, &err), 0);
    assert_true(r12.estimate_mib < r.estimate_mib);
    est_model_init(&m, layers, EST_MAX_LAYERS);
    m.shared_layer_runs = 12;
    assert_int_equal(est_model_prepare(&m, two, strlen(two), "t.txt", &o, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "--shared-layer-runs 12: the print has no layer that runs "
                                    "several times"));
    assert_int_equal(parse_heads(NULL, two, 0, &m, &err), 0);
    assert_int_equal(m.single_layer_line, 0);
    assert_int_equal(m.shared_line, 0);
    /* rows parsed into the same storage after ALBERT's runs start unshared (T5's tied
     * embed_tokens must alias its table, not a row the last parse left there) */
    assert_int_equal(parse_heads(NULL, one, 0, &m, &err), 0);
    assert_int_equal(parse_file("tests/fuzz/corpus/summary_modtree/t5_small.txt", &m, &err), 0);
    for (size_t i = 0; i < m.n; i++)
        assert_int_equal(m.layers[i].shared_from, 0);
}

/* Many tables after the token table in one block (a summary carmad takes, 512 KiB): what
 * they are read as, with and without an attention layer before them. Its parse time is
 * bench_estimate's ("one block of 21,000 tables"): each row is now read once, where a
 * quadratic reading took a quarter of a second. */
static void test_attention_position_tables_linear(void **state)
{
    (void)state;
    static char buf[512 << 10];
    const char *table = "  (t): Embedding(32, 2)\n";
    for (int attn = 0; attn < 2; attn++) {
        size_t len = (size_t)snprintf(buf, sizeof buf, "Enc(\n  (w): Embedding(1000, 128)\n%s",
                                      attn ? "  (a): MultiheadAttention()\n" : "");
        size_t tables = 0;
        while (len + strlen(table) + 3 < sizeof buf) {
            memcpy(buf + len, table, strlen(table));
            len += strlen(table);
            tables++;
        }
        memcpy(buf + len, ")\n", 3);
        struct est_model m;
        struct carma_err err;
        assert_int_equal(parse_heads(NULL, buf, 0, &m, &err), 0);
        assert_int_equal(m.n, tables + 1 + (size_t)attn);
        /* read as position tables after the attention layer, which computes its scores */
        assert_int_equal(m.scores_bias_line, attn ? 4 : 0);
        for (size_t i = 1; i < m.n; i++)
            assert_int_equal(m.layers[i].kind, i == 1 && attn ? EST_K_ATTN
                                               : attn         ? EST_K_OTHER
                                                              : EST_K_EMBED);
        if (attn)
            assert_true(m.layers[1].flags & EST_LF_SCORES);
    }
}

/* Prints as people paste them: after a label (print(f"Model: {model}"),
 * print('rerank', model)) or commented out with '# '; RWKV's token shift inside attention
 * is refused; a print with no position encoding but its token table is marked for the
 * ALiBi note (BLOOM, MPT), one with a rotary module or a position table is not. */
static void test_modtree_labels_and_positions(void **state)
{
    (void)state;
    const char *body = "  (embed): Embedding(1000, 64)\n"
                       "  (attn): SelfAttention(\n"
                       "    (q): Linear(in_features=64, out_features=64, bias=False)\n"
                       "    (k): Linear(in_features=64, out_features=64, bias=False)\n"
                       "    (v): Linear(in_features=64, out_features=64, bias=False)\n"
                       "    (o): Linear(in_features=64, out_features=64, bias=False)\n"
                       "  )\n"
                       "  (head): Linear(in_features=64, out_features=1000, bias=False)\n"
                       ")\n";
    char plain[2048], labelled[2048], spaced[2048], hashed[2048], rotary[2048];
    snprintf(plain, sizeof plain, "Net(\n%s", body);
    snprintf(labelled, sizeof labelled, "Model: Net(\n%s", body);
    snprintf(spaced, sizeof spaced, "rerank Net(\n%s", body);
    snprintf(rotary, sizeof rotary, "Net(\n  (rotary_emb): RotaryEmbedding()\n%s", body);
    /* every line commented out */
    size_t o = (size_t)snprintf(hashed, sizeof hashed, "# Net(\n");
    for (const char *q = body; *q;) {
        const char *nl = strchr(q, '\n');
        o += (size_t)snprintf(hashed + o, sizeof hashed - o, "# %.*s\n", (int)(nl - q), q);
        q = nl + 1;
    }
    struct est_model m;
    struct carma_err err;
    assert_int_equal(parse_heads(NULL, plain, 0, &m, &err), 0);
    uint64_t params = m.params;
    assert_int_equal(m.no_position_line, 3); /* its attention block */
    const char *variants[] = {labelled, spaced, hashed};
    for (size_t i = 0; i < 3; i++) {
        if (parse_heads(NULL, variants[i], 0, &m, &err) < 0)
            fail_msg("%s", err.msg);
        assert_int_equal(m.params, params);
    }
    assert_int_equal(parse_heads(NULL, rotary, 0, &m, &err), 0);
    assert_int_equal(m.no_position_line, 0);
    /* a label with no tree after it is still no summary */
    assert_true(parse_heads(NULL, "Model: Net(\nhello\n)\n", 0, &m, &err) < 0);
    /* RWKV's time mixing */
    const char *rwkv = "Rwkv(\n"
                       "  (embeddings): Embedding(1000, 64)\n"
                       "  (attention): RwkvSelfAttention(\n"
                       "    (time_shift): ZeroPad2d((0, 0, 1, -1))\n"
                       "    (key): Linear(in_features=64, out_features=64, bias=False)\n"
                       "  )\n"
                       ")\n";
    assert_true(parse_heads(NULL, rwkv, 0, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:4: ZeroPad2d((0, 0, 1, -1)) inside an attention block: "
                                    "a token shift, RWKV's time mixing"));
}

static void test_bound_basis_heads(void **state)
{
    (void)state;
    struct carma_err err;
    char dir[] = "/tmp/carma-basis-XXXXXX", db[64], cmd[96];
    assert_non_null(mkdtemp(dir));
    snprintf(db, sizeof db, "%s/carma.db", dir);
    struct carma_store *st;
    assert_int_equal(carma_store_open(&st, db, &err), 0);
    char *text = NULL;
    size_t len;
    assert_int_equal(carma_file_read("tests/fuzz/corpus/summary_modtree/mha_classifier.txt",
                                     EST_MAX_INPUT, &text, &len, &err),
                     0);
    const char *argv[] = {"true", NULL};
    struct carma_req_job rj = {.argv = argv, .argc = 1, .cwd = "/", .summary = text,
                               .gpus = 1, .batch = 16, .seq_len = 128, .heads = 8,
                               .train = {.optimizer = EST_OPT_ADAMW}};
    struct carmad_bound b;
    assert_int_equal(carmad_job_bound(st, &rj, "[\"true\"]", 1000, NULL, NULL, 0, &b, &err), 0);
    assert_int_equal(b.source, CARMAD_BOUND_ESTIMATOR);
    assert_non_null(strstr(b.basis, "estimator (batch 16, seq 128, 8 heads, adamw"));
    rj.train.attention = EST_ATTN_SDPA;
    assert_int_equal(carmad_job_bound(st, &rj, "[\"true\"]", 1000, NULL, NULL, 0, &b, &err), 0);
    assert_null(strstr(b.basis, "heads"));
    assert_non_null(strstr(b.basis, "estimator (batch 16, seq 128, adamw, fp32, sdpa attention"));
    free(text);
    carma_store_close(st);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_conformal_quantile(void **state)
{
    (void)state;
    double s[10];
    for (int i = 0; i < 10; i++)
        s[i] = 10 - i; /* 10..1, sorted by the call */
    /* n = 10, alpha = 0.2: rank ceil(11 x 0.8) = 9 -> 9. */
    assert_float_equal(est_conformal_quantile(s, 10, 0.2), 9, 0);
    /* alpha = 1/(n+1): rank n -> the largest. */
    assert_float_equal(est_conformal_quantile(s, 10, 1.0 / 11), 10, 0);
    /* alpha too small for n: infinite. */
    assert_true(isinf(est_conformal_quantile(s, 10, 0.01)));
    assert_true(isinf(est_conformal_quantile(s, 0, 0.1)));
}

/* A fit recovers known coefficients from noiseless synthetic samples. */
/* The fit recovers known coefficients: the dense family's floor and replay slope, the
 * conv family's per-kind multipliers. */
static void test_fit_recovers(void **state)
{
    (void)state;
    enum { N = 200 };
    static struct est_sample s[2 * N];
    uint8_t use[2 * N];
    uint64_t rng = 7;
    struct est_coef truth = *est_coef_default();
    truth.floor_mib[EST_FAM_DENSE] = 1400;
    truth.replay[EST_FAM_DENSE] = 0.97;
    truth.floor_mib[EST_FAM_CONV] = 2000;
    for (int k = 0; k < EST_K_COUNT; k++)
        truth.kind[EST_FAM_CONV][k] = 0;
    truth.kind[EST_FAM_CONV][EST_K_CONV] = 1.5;
    truth.kind[EST_FAM_CONV][EST_K_ACT] = 0.5;
    truth.input[EST_FAM_CONV] = 0;
    truth.transient[EST_FAM_CONV] = 2;
    truth.step[EST_FAM_CONV] = 1.25;
    truth.concat[EST_FAM_CONV] = 0;
    for (int i = 0; i < 2 * N; i++) {
        struct est_model m;
        est_model_init(&m, layers, 16);
        uint64_t w1 = 100 + est_rng_next(&rng) % 4000, w2 = 10 + est_rng_next(&rng) % 500;
        if (i < N) {
            est_model_add(&m, EST_K_LINEAR, w1, w1 * 500, 1, 0);
            est_model_add(&m, EST_K_ACT, w1, 0, 1, 0);
            est_model_add(&m, EST_K_LINEAR, w2, w1 * w2, 1, 0);
        } else {
            uint64_t w3 = 100 + est_rng_next(&rng) % 4000; /* not collinear with w1 */
            est_model_add(&m, EST_K_CONV, w1 * 64, 9 * w1, 1, 0);
            est_model_add(&m, EST_K_ACT, w3 * 64, 0, 1, 0);
            est_model_add(&m, EST_K_LINEAR, w2, w1 * w2, 1, 0);
        }
        uint32_t batch = 1 + (uint32_t)(est_rng_next(&rng) % 1024);
        assert_int_equal(est_sample_make(&m, batch, 0, 0, 0, &rwork, &s[i]), 0);
        s[i].y = est_sample_predict(&truth, &s[i]);
        use[i] = 1;
    }
    struct est_coef c;
    assert_int_equal(est_fit(s, 2 * N, use, est_coef_default(), &c), 0);
    for (int i = 0; i < 2 * N; i++)
        assert_float_equal(est_sample_predict(&c, &s[i]), s[i].y, 0.5);
    assert_float_equal(c.floor_mib[EST_FAM_DENSE], 1400, 1);
    assert_float_equal(c.replay[EST_FAM_DENSE], 0.97, 1e-4);
    assert_float_equal(c.replay[EST_FAM_CONV], 0, 0);
    assert_float_equal(c.kind[EST_FAM_CONV][EST_K_CONV], 1.5, 1e-3);
    assert_float_equal(c.step[EST_FAM_CONV], 1.25, 1e-3);
    /* Calibrated on exact data: q is (close to) zero. */
    double work[4 * N];
    uint8_t fold[2 * N];
    assert_int_equal(est_calibrate(s, 2 * N, use, 5, 1, 0, est_coef_default(), &c, work, fold),
                     0);
    assert_true(c.q[EST_FAM_DENSE] < 0.01 && c.q[EST_FAM_CONV] < 0.01);
    assert_int_equal(c.ncal[EST_FAM_DENSE], N);
    /* From the fixed prior (`carma eval-estimator --fit`'s) the same data give the same
     * fit: what the data set does not depend on the prior, and the columns without signal
     * (no pooling, softmax, embedding, attention or input in these models) take the
     * prior's values, which are 0 but the two hand-set ones, not the shipped table's. */
    const struct est_coef *pr = est_fit_prior();
    struct est_coef cp;
    assert_int_equal(est_fit(s, 2 * N, use, pr, &cp), 0);
    for (int i = 0; i < 2 * N; i++)
        assert_float_equal(est_sample_predict(&cp, &s[i]), s[i].y, 0.5);
    assert_float_equal(cp.kind[EST_FAM_CONV][EST_K_CONV], 1.5, 1e-3);
    assert_float_equal(cp.kind[EST_FAM_CONV][EST_K_EMBED], 1.0, 0);
    assert_float_equal(cp.kind[EST_FAM_CONV][EST_K_ATTN], 2.25, 0);
    assert_float_equal(cp.kind[EST_FAM_CONV][EST_K_POOL], 0, 0);
    assert_float_equal(cp.kind[EST_FAM_CONV][EST_K_SOFTMAX], 0, 0);
    assert_float_equal(cp.input[EST_FAM_CONV], 0, 0);
    char ns[16][32];
    double nv[16];
    size_t nns = est_fit_no_signal(s, 2 * N, use, &cp, ns, nv, 16);
    int embed = 0, attn = 0;
    assert_true(nns <= 16);
    for (size_t i = 0; i < nns; i++) {
        embed += strcmp(ns[i], "kind_embed_conv") == 0;
        attn += strcmp(ns[i], "kind_attn_conv") == 0;
        if (strstr(ns[i], "_dense") || !strcmp(ns[i], "kind_conv_conv") ||
            !strcmp(ns[i], "kind_act_conv") || !strcmp(ns[i], "kind_linear_conv"))
            fail_msg("%s listed without signal", ns[i]);
        assert_float_equal(nv[i], strcmp(ns[i], "kind_embed_conv") == 0  ? 1.0
                                  : strcmp(ns[i], "kind_attn_conv") == 0 ? 2.25
                                                                         : 0,
                           0);
    }
    assert_int_equal(embed + attn, 2);
    /* The prior: all zero but the two hand-set conv-family multipliers. */
    struct est_coef z = {0};
    z.kind[EST_FAM_CONV][EST_K_EMBED] = 1.0;
    z.kind[EST_FAM_CONV][EST_K_ATTN] = 2.25;
    assert_memory_equal(pr, &z, sizeof z);
}

static void test_tuples(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    est_model_init(&m, layers, 16);
    const char *t = "[('linear', 1173, 2753031), ('batch_normalization', 1173, 2346), ('ReLU', 1173, 0)]";
    assert_int_equal(est_tuples_parse(t, strlen(t), "d.csv", 3, &m, &err), 0);
    assert_int_equal(m.n, 3);
    assert_int_equal(m.params, 2753031 + 2346);
    assert_int_equal(m.layers[1].kind, EST_K_NORM);
    est_model_init(&m, layers, 16);
    const char *bad = "[('linear', 1173 2753031)]";
    assert_true(est_tuples_parse(bad, strlen(bad), "d.csv", 3, &m, &err) < 0);
    assert_string_equal(err.msg, "d.csv:3: expected ','");
}

/* Concatenations inferred from (out, params) alone: a DenseNet block (growth 32, from a
 * 3-channel 170 x 170 input) reads 35 then 67 channels; a ResNet stage with its 1x1
 * shortcut (told apart by the norms' channel counts) reads nothing concatenated. */
static void test_concat_infer(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    est_model_init(&m, layers, 16);
    const char *dense = "[('conv2d', 924800, 896), ('LeakyReLU', 924800, 0), "
                        "('conv2d', 924800, 10112), ('LeakyReLU', 924800, 0), "
                        "('conv2d', 924800, 19328), ('LeakyReLU', 924800, 0)]";
    assert_int_equal(est_tuples_parse(dense, strlen(dense), "d.csv", 2, &m, &err), 0);
    m.input = 3 * 170 * 170;
    assert_int_equal(est_concat_infer(&m), (35 + 67) * 28900ull);
    m.input = 0; /* the first convolution's 3 input channels follow from its params alone */
    assert_int_equal(est_concat_infer(&m), (35 + 67) * 28900ull);
    struct est_opts o = {.batch = 2, .optimizer = EST_OPT_ADAM};
    double f[EST_NFEAT], w, g, st;
    est_features(&m, &o, f, &w, &g, &st);
    assert_float_equal(f[EST_F_CONCAT], est_alloc_round(2.0 * 102 * 28900 * 4) / 1048576.0,
                       1e-9);
    est_model_init(&m, layers, 16);
    const char *res = "[('conv2d', 4096, 1728), ('batchnorm2d', 4096, 128), "
                      "('conv2d', 4096, 36864), ('batchnorm2d', 4096, 128), "
                      "('conv2d', 2048, 73728), ('batchnorm2d', 2048, 256), "
                      "('conv2d', 2048, 147456), ('batchnorm2d', 2048, 256), "
                      "('conv2d', 2048, 8192), ('batchnorm2d', 2048, 256), "
                      "('conv2d', 2048, 147456), ('ReLU', 2048, 0)]";
    assert_int_equal(est_tuples_parse(res, strlen(res), "d.csv", 2, &m, &err), 0);
    m.input = 3 * 64 * 4;
    assert_int_equal(est_concat_infer(&m), 0);
    est_features(&m, &o, f, &w, &g, &st);
    assert_float_equal(f[EST_F_CONCAT], 0, 0);
}

/* A frozen prefix (a feature extractor whose parameters do not train) keeps no
 * activations: autograd records nothing until the first trained layer. */
static void test_frozen_prefix_keeps_no_activations(void **state)
{
    (void)state;
    struct est_model m;
    est_model_init(&m, layers, 16);
    assert_int_equal(est_model_add(&m, EST_K_CONV, 100000, 1728, 1, 0), 0);
    assert_int_equal(est_model_add(&m, EST_K_ACT, 100000, 0, 1, 0), 0);
    assert_int_equal(est_model_add(&m, EST_K_CONV, 50000, 36864, 1, 0), 0);
    assert_int_equal(est_model_add(&m, EST_K_LINEAR, 10, 5010, 1, 0), 0);
    struct est_opts o = {.batch = 4, .optimizer = EST_OPT_ADAM};
    double f[EST_NFEAT], w, g, st;
    est_features(&m, &o, f, &w, &g, &st);
    double conv_all = f[EST_K_CONV], act_all = f[EST_K_ACT], transient = f[EST_F_TRANSIENT];
    assert_true(conv_all > 0 && act_all > 0);
    /* the two convolutions frozen: only the linear layer keeps its output */
    m.layers[0].frozen = m.layers[0].params;
    m.layers[2].frozen = m.layers[2].params;
    m.frozen = m.layers[0].params + m.layers[2].params;
    est_features(&m, &o, f, &w, &g, &st);
    assert_float_equal(f[EST_K_CONV], 0, 0);
    assert_float_equal(f[EST_K_ACT], 0, 0);
    assert_true(f[EST_K_LINEAR] > 0);
    assert_float_equal(f[EST_F_TRANSIENT], transient, 0); /* it still passes through */
    /* only the first frozen: what follows the trained second convolution is kept */
    m.layers[2].frozen = 0;
    m.frozen = m.layers[0].params;
    est_features(&m, &o, f, &w, &g, &st);
    assert_true(f[EST_K_CONV] > 0 && f[EST_K_CONV] < conv_all);
    assert_float_equal(f[EST_K_ACT], 0, 0);
}

static void test_coef_table_matches_shipped(void **state)
{
    (void)state;
    char *buf;
    size_t len;
    struct carma_err err;
    struct est_coef c;
    assert_int_equal(carma_file_read("data/estimator/coefficients.csv", 1 << 20, &buf, &len, &err), 0);
    assert_int_equal(est_coef_parse(buf, len, "coefficients.csv", &c, &err), 0);
    free(buf);
    const struct est_coef *d = est_coef_default();
    for (int f = 0; f < EST_FAM_COUNT; f++) {
        assert_float_equal(c.floor_mib[f], d->floor_mib[f], 1e-5);
        for (int k = 0; k < EST_K_COUNT; k++)
            assert_float_equal(c.kind[f][k], d->kind[f][k], 1e-5);
        assert_float_equal(c.q[f], d->q[f], 1e-5);
        assert_float_equal(c.scale0_mib[f], d->scale0_mib[f], 1e-5);
        assert_float_equal(c.transient[f], d->transient[f], 1e-5);
        assert_float_equal(c.step[f], d->step[f], 1e-5);
        assert_float_equal(c.concat[f], d->concat[f], 1e-5);
        assert_float_equal(c.input[f], d->input[f], 1e-5);
        for (int b = 0; b < EST_NBANDS; b++) {
            assert_float_equal(c.qband[f][b], d->qband[f][b], 1e-5);
            assert_int_equal(c.ncalband[f][b], d->ncalband[f][b]);
        }
    }
    /* write -> parse round trip, and a bad table */
    char out[4096];
    assert_true(est_coef_write(d, out, sizeof out) > 0);
    assert_int_equal(est_coef_parse(out, strlen(out), "x", &c, &err), 0);
    assert_true(est_coef_write(d, out, 16) < 0);
    const char *bad = "name,value\nfloor_gpu,3\n";
    assert_true(est_coef_parse(bad, strlen(bad), "x.csv", &c, &err) < 0);
    assert_string_equal(err.msg, "x.csv:2: unknown coefficient 'floor_gpu'");
    /* a table that sets nothing, or one coefficient twice, is a mistake, not the defaults */
    assert_true(est_coef_parse("", 0, "e.csv", &c, &err) < 0);
    assert_string_equal(err.msg, "e.csv: no coefficients (expected name,value rows)");
    const char *hdr = "name,value\n";
    assert_true(est_coef_parse(hdr, strlen(hdr), "h.csv", &c, &err) < 0);
    const char *twice = "name,value\nq_dense,0.3\nfloor_dense,500\nq_dense,0.4\n";
    assert_true(est_coef_parse(twice, strlen(twice), "t.csv", &c, &err) < 0);
    assert_string_equal(err.msg, "t.csv:4: q_dense given twice");
    const char *one = "q_dense,0.3\n";
    assert_int_equal(est_coef_parse(one, strlen(one), "o.csv", &c, &err), 0);
    assert_float_equal(c.q[EST_FAM_DENSE], 0.3, 0);
    /* values the fit never gives: a negative multiplier made a negative estimate "fit" */
    const char *neg = "name,value\nkind_conv_conv,-3\n";
    assert_true(est_coef_parse(neg, strlen(neg), "n.csv", &c, &err) < 0);
    assert_string_equal(err.msg, "n.csv:2: kind_conv_conv -3 is out of range: a multiplier is "
                                 "from 0 to 4, as the fit bounds it (a layer's output kept at "
                                 "most four times over)");
    const char *big = "transient_dense,4.5\n";
    assert_true(est_coef_parse(big, strlen(big), "b.csv", &c, &err) < 0);
    assert_non_null(strstr(err.msg, "b.csv:1: transient_dense 4.5 is out of range"));
    const char *qneg = "q_conv,0.2\nqband3_conv,-0.1\n";
    assert_true(est_coef_parse(qneg, strlen(qneg), "q.csv", &c, &err) < 0);
    assert_string_equal(err.msg, "q.csv:2: qband3_conv -0.1 is out of range: a quantile or "
                                 "normaliser is 0 or more (a negative one lowers the bound)");
    const char *lvl = "level,1.5\n";
    assert_true(est_coef_parse(lvl, strlen(lvl), "l.csv", &c, &err) < 0);
    const char *edge = "kind_conv_conv,4\nkind_act_conv,0\nq_conv,0\nfloor_conv,-10\n";
    assert_int_equal(est_coef_parse(edge, strlen(edge), "e.csv", &c, &err), 0);
}

static void test_history(void **state)
{
    (void)state;
    struct est_history_entry slots[8];
    struct est_history h;
    assert_true(est_history_init(&h, slots, 6) < 0);
    assert_int_equal(est_history_init(&h, slots, 8), 0);
    const char *a[] = {"python", "train.py", "--lr", "0.1"};
    const char *b[] = {"python", "train.py", "--lr0", ".1"};
    uint64_t sa = est_signature(a, 4, 32), sb = est_signature(b, 4, 32);
    assert_true(sa != sb);
    assert_true(est_signature(a, 4, 64) != sa);
    assert_int_equal(est_signature(a, 4, 32), sa);
    double e, bd;
    assert_int_equal(est_history_next(&h, sa, 5000, 6000, &e, &bd), 0);
    assert_float_equal(e, 5000, 0);
    assert_float_equal(bd, 6000, 0);
    assert_int_equal(est_history_record(&h, sa, 3000), 0);
    assert_int_equal(est_history_record(&h, sa, 3100), 0);
    assert_int_equal(est_history_next(&h, sa, 5000, 6000, &e, &bd), 1);
    assert_float_equal(e, 3100, 0);
    assert_float_equal(bd, 3100 + 100 + 2, 1e-9);
    assert_int_equal(est_history_find(&h, sa)->runs, 2);
    assert_true(est_history_record(&h, sa, -1) < 0);
    assert_true(est_history_record(&h, sa, NAN) < 0);
    /* full at 3/4 */
    for (uint64_t s = 100; s < 105; s++)
        assert_int_equal(est_history_record(&h, s, 10), 0);
    assert_int_equal(est_history_record(&h, 200, 10), -ENOSPC);
    assert_int_equal(est_history_record(&h, 100, 20), 0); /* known ones still update */
    assert_null(est_history_find(&h, 200));
}

/* A module tree's root class is any Python identifier (DINOv2's torch.hub
 * _LinearClassifierWrapper), and print(model.modules) without the call wraps the print
 * in the bound method's repr: both read as the plain print. */
static void test_modtree_root_names(void **state)
{
    (void)state;
    static struct est_layer la[EST_MAX_LAYERS];
    struct est_model m, ref;
    struct carma_err err;
#define ROOT_BODY                                                                                  \
    "  (fc1): Linear(in_features=10, out_features=20, bias=True)\n"                                \
    "  (act): ReLU()\n"                                                                            \
    "  (fc2): Linear(in_features=20, out_features=2, bias=True)\n"
    const char *plain = "Net(\n" ROOT_BODY ")\n";
    est_model_init(&ref, la, EST_MAX_LAYERS);
    assert_int_equal(est_parse(plain, strlen(plain), "p.txt", &ref, &err), 0);
    static const char *const same[] = {
        "_LinearClassifierWrapper(\n" ROOT_BODY ")\n",
        "\n  __Net(\n" ROOT_BODY ")\n",
        "<bound method Module.modules of Net(\n" ROOT_BODY ")>\n",
        "<bound method Module.named_children of _Net(\n" ROOT_BODY ")>",
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        assert_int_equal(est_detect(same[i], strlen(same[i])),
                         i < 2 ? EST_FMT_MODTREE : EST_FMT_NONE);
        if (parse_str(same[i], &m, &err))
            fail_msg("%zu: %s", i, err.msg);
        assert_same_model(&m, &ref);
    }
    /* the repr cut short, without its ")>": refused, asking for print(model) */
    const char *cut = "<bound method Module.modules of Net(\n" ROOT_BODY;
    assert_true(parse_str(cut, &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:1: a bound method's repr ('<bound method ... of "
                                 "Model(', printed by print(model.modules) without the "
                                 "call) that does not end with ')>': give print(model) "
                                 "itself");
    /* a line number inside the wrapper is the file's */
    const char *bad = "<bound method Module.modules of Net(\n" ROOT_BODY "  (x): ReLU() x\n)>\n";
    assert_true(parse_str(bad, &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:5: unexpected text after the module");
#undef ROOT_BODY
}

/* EmbeddingBag(n, d) is an n x d table whose bags reduce to one d-vector each (DLRM's
 * sparse features): its weights count, and it needs no sequence length. It used to be
 * read as a positional helper without a table: a 160M-parameter DLRM came out at 0.3M. */
static void test_modtree_embedding_bag(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *tree = "DLRM_Net(\n"
                       "  (emb_l): ModuleList(\n"
                       "    (0): EmbeddingBag(100000, 64, mode='sum')\n"
                       "    (1): EmbeddingBag(50000, 64, mode='sum')\n"
                       "  )\n"
                       "  (top_l): Sequential(\n"
                       "    (0): Linear(in_features=128, out_features=1, bias=True)\n"
                       "  )\n"
                       ")\n";
    assert_int_equal(parse_str(tree, &m, &err), 0);
    assert_int_equal(m.params, 100000ull * 64 + 50000ull * 64 + 129);
    assert_false(m.needs_seq);
    /* sized by keyword, as PyTorch's quantized modules print them */
    assert_int_equal(parse_str("M(\n  (e): QuantizedEmbeddingBag(num_embeddings=1000, "
                               "embedding_dim=8, dtype=torch.quint8)\n  (l): Linear("
                               "in_features=8, out_features=1, bias=True)\n)\n", &m, &err), 0);
    assert_int_equal(m.params, 8000 + 9);
}

/* A `, N params` suffix from a recipe that sums p.shape counts a bitsandbytes Linear4bit's
 * packed weight (two per byte): half of what its arguments give, which is a genuine print,
 * read as the arguments say; half of a plain Linear's is refused. */
static void test_modtree_suffix_of_packed_4bit(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *q = "M(\n"
                    "  (emb): Embedding(1000, 64), 64,000 params\n"
                    "  (q): Linear4bit(in_features=64, out_features=64, bias=False), 2,048 params\n"
                    "  (head): Linear(in_features=64, out_features=1000, bias=False), 64,000 params\n"
                    "), 130,048 params\n";
    assert_int_equal(parse_str(q, &m, &err), 0);
    assert_int_equal(m.params, 64000 + 4096 + 64000);
    const char *bad = "M(\n"
                      "  (emb): Embedding(1000, 64), 64,000 params\n"
                      "  (q): Linear(in_features=64, out_features=64, bias=False), 2,048 params\n"
                      "  (head): Linear(in_features=64, out_features=1000, bias=False), 64,000 params\n"
                      "), 130,048 params\n";
    assert_true(parse_str(bad, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "fewer than"));
}

/* A leaf of a class no kind knows that prints arguments is read as holding nothing, with
 * a note naming it (it may hold parameters the print does not count); its count, when
 * printed, is taken, and the classes that hold none whatever their arguments (padding,
 * resampling, dropping, einops) say nothing. */
static void test_unsized_leaf_note(void **state)
{
    (void)state;
    static const char fmt[] = "Net(\n"
                              "  (fc1): Linear(in_features=784, out_features=512, bias=True)\n"
                              "  (mix): %s\n"
                              "  (fc2): Linear(in_features=512, out_features=10, bias=True)\n"
                              ")\n";
    const struct {
        const char *leaf;
        int noted;
        uint64_t params;
    } cases[] = {
        {"Mixer(dim=512, heads=4)", 1, 407050},
        {"Mixer(dim=512, heads=4), 1,050,624 params", 0, 407050 + 1050624},
        {"DropPath(drop_prob=0.1)", 0, 407050},
        {"ZeroPad2d(padding=(1, 1, 1, 1), value=0.0)", 0, 407050},
        {"Rearrange('b c h w -> b (h w) c')", 0, 407050},
        {"Upsample(scale_factor=2.0, mode='nearest')", 0, 407050},
    };
    struct est_model m;
    struct carma_err err;
    struct est_result r = {0};
    struct est_opts o = {.batch = 8, .optimizer = EST_OPT_ADAMW};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char text[512];
        snprintf(text, sizeof text, fmt, cases[k].leaf);
        if (parse_str(text, &m, &err))
            fail_msg("%s: %s", cases[k].leaf, err.msg);
        assert_int_equal(m.params, cases[k].params);
        char notes[EST_NOTES][EST_NOTE_MAX];
        size_t nn = est_notes(&m, &o, &r, notes), said = 0;
        for (size_t i = 0; i < nn; i++)
            if (strstr(notes[i], "is a layer carma does not size")) {
                said++;
                assert_non_null(strstr(notes[i], "Mixer at line 3 is"));
            }
        if ((int)said != cases[k].noted)
            fail_msg("%s: noted %zu times", cases[k].leaf, said);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_modtree_embedding_bag),
        cmocka_unit_test(test_modtree_root_names),
        cmocka_unit_test(test_modtree_suffix_of_packed_4bit),
        cmocka_unit_test(test_numbers_and_shapes),
        cmocka_unit_test(test_kind_classify),
        cmocka_unit_test(test_torchsummary),
        cmocka_unit_test(test_torchinfo),
        cmocka_unit_test(test_torchinfo_layouts),
        cmocka_unit_test(test_keras),
        cmocka_unit_test(test_keras_layouts),
        cmocka_unit_test(test_keras_wrappers),
        cmocka_unit_test(test_modtree),
        cmocka_unit_test(test_modtree_patches),
        cmocka_unit_test(test_modtree_vision_towers),
        cmocka_unit_test(test_modtree_cnn_matches_tables),
        cmocka_unit_test(test_modtree_cnn_rules),
        cmocka_unit_test(test_modtree_torchvision_zoo),
        cmocka_unit_test(test_modtree_none_slots),
        cmocka_unit_test(test_modtree_chunk_half),
        cmocka_unit_test(test_modtree_split_reads),
        cmocka_unit_test(test_modtree_layer_scale),
        cmocka_unit_test(test_modtree_dual_path),
        cmocka_unit_test(test_modtree_parallel_reductions),
        cmocka_unit_test(test_modtree_swin_grid),
        cmocka_unit_test(test_modtree_attention_over_positions),
        cmocka_unit_test(test_modtree_reduced_keys),
        cmocka_unit_test(test_modtree_unfolded_attention),
        cmocka_unit_test(test_modtree_zipped_lists),
        cmocka_unit_test(test_modtree_subsampled_queries),
        cmocka_unit_test(test_modtree_channel_attention),
        cmocka_unit_test(test_modtree_xca),
        cmocka_unit_test(test_modtree_sequence_conv),
        cmocka_unit_test(test_modtree_pooled_tokens),
        cmocka_unit_test(test_modtree_sliding_window),
        cmocka_unit_test(test_autocast_batch_norm),
        cmocka_unit_test(test_modtree_convnext_prints),
        cmocka_unit_test(test_modtree_se_nested_and_grn),
        cmocka_unit_test(test_modtree_zero_dropout),
        cmocka_unit_test(test_product_rows_per_kind),
        cmocka_unit_test(test_modtree_hf_cnn_padding),
        cmocka_unit_test(test_modtree_unet_joins),
        cmocka_unit_test(test_modtree_detection_and_bare_pools),
        cmocka_unit_test(test_modtree_frozen_batchnorm),
        cmocka_unit_test(test_modtree_profiler_stats),
        cmocka_unit_test(test_modtree_mlp_order),
        cmocka_unit_test(test_modtree_head_first),
        cmocka_unit_test(test_modtree_head_after_position_table),
        cmocka_unit_test(test_modtree_head_before_body),
        cmocka_unit_test(test_modtree_head_token_vocabulary),
        cmocka_unit_test(test_modtree_head_refusal_line),
        cmocka_unit_test(test_modtree_head_after_vocab_head),
        cmocka_unit_test(test_modtree_torch_transformer_layer),
        cmocka_unit_test(test_modtree_position_bias),
        cmocka_unit_test(test_attention_choice),
        cmocka_unit_test(test_csv_and_detect),
        cmocka_unit_test(test_model_maths),
        cmocka_unit_test(test_max_batch),
        cmocka_unit_test(test_alloc_round),
        cmocka_unit_test(test_sequence_scaling),
        cmocka_unit_test(test_conformal_quantile),
        cmocka_unit_test(test_fit_recovers),
        cmocka_unit_test(test_tuples),
        cmocka_unit_test(test_concat_infer),
        cmocka_unit_test(test_frozen_prefix_keeps_no_activations),
        cmocka_unit_test(test_coef_table_matches_shipped),
        cmocka_unit_test(test_history),
        cmocka_unit_test(test_replay_allocator),
        cmocka_unit_test(test_replay_free_lists),
        cmocka_unit_test(test_replay_long_free_lists),
        cmocka_unit_test(test_replay_linear),
        cmocka_unit_test(test_replay_iterations),
        cmocka_unit_test(test_bound_attention),
        cmocka_unit_test(test_ddp_buckets),
        cmocka_unit_test(test_replay_ddp),
        cmocka_unit_test(test_replay_autocast_loss),
        cmocka_unit_test(test_replay_autocast_fp32_inputs),
        cmocka_unit_test(test_replay_summary_pass),
        cmocka_unit_test(test_replay_activation_semantics),
        cmocka_unit_test(test_replay_gated_mlp),
        cmocka_unit_test(test_modtree_gated_orders),
        cmocka_unit_test(test_modtree_nested_core_attention),
        cmocka_unit_test(test_modtree_bare_attention_refused),
        cmocka_unit_test(test_modtree_shared_table),
        cmocka_unit_test(test_modtree_fused_glu),
        cmocka_unit_test(test_modtree_fused_grouped_attention),
        cmocka_unit_test(test_modtree_narrowing_query_heads),
        cmocka_unit_test(test_modtree_tied_output_head),
        cmocka_unit_test(test_modtree_talking_heads),
        cmocka_unit_test(test_modtree_token_mixing),
        cmocka_unit_test(test_modtree_space_to_depth_blurpool),
        cmocka_unit_test(test_modtree_eca),
        cmocka_unit_test(test_modtree_image_branches),
        cmocka_unit_test(test_modtree_unet_transposed_join),
        cmocka_unit_test(test_modtree_stage_after_downsample),
        cmocka_unit_test(test_replay_fused_attention),
        cmocka_unit_test(test_modtree_peft_lora),
        cmocka_unit_test(test_modtree_peft_bare_quantized),
        cmocka_unit_test(test_modtree_peft_old_layout),
        cmocka_unit_test(test_modtree_quantized_frozen),
        cmocka_unit_test(test_modtree_tied_head),
        cmocka_unit_test(test_modtree_unsized_after_moved_rows),
        cmocka_unit_test(test_modtree_hidden_insides),
        cmocka_unit_test(test_replay_checkpointing),
        cmocka_unit_test(test_replay_grad_accum),
        cmocka_unit_test(test_replay_cpu_peaks),
        cmocka_unit_test(test_attention_heads),
        cmocka_unit_test(test_keras_attention_layers),
        cmocka_unit_test(test_attention_math_kernel),
        cmocka_unit_test(test_attention_position_bias),
        cmocka_unit_test(test_attention_encoder_position_table),
        cmocka_unit_test(test_attention_position_tables_linear),
        cmocka_unit_test(test_modtree_labels_and_positions),
        cmocka_unit_test(test_bound_basis_heads),
        cmocka_unit_test(test_detect_prose),
        cmocka_unit_test(test_unsized_leaf_note),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
