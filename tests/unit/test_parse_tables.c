/* The table readers (torchsummary, torchinfo, Keras) on layouts pasted in the wild:
 * Keras before TF 2.6 cutting type names at the column's width, the printed Trainable
 * params line, summaries pasted with a line prefix ("# ", "> ", knitr's "    ## "), and
 * the messages of what is refused. Every summary here is written for the test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimate/estimate.h"
#include "estimate/parse.h"
#include "estimate/replay.h"
#include "util/csv.h"

static struct est_layer layers[EST_MAX_LAYERS];
static struct est_replay_work rwork;

/* Parses s as file "t.txt" into m. */
static int parse_str(const char *s, struct est_model *m, struct carma_err *err)
{
    est_model_init(m, layers, EST_MAX_LAYERS);
    return est_parse(s, strlen(s), "t.txt", m, err);
}

/* Parses the file at path into m. */
static int parse_file(const char *path, struct est_model *m, struct carma_err *err)
{
    char *buf;
    size_t len;
    est_model_init(m, layers, EST_MAX_LAYERS);
    int rc = carma_file_read(path, EST_MAX_INPUT, &buf, &len, err);
    assert_int_equal(rc, 0);
    rc = est_parse(buf, len, path, m, err);
    free(buf);
    return rc;
}

#define K2_HEAD                                                                            \
    "Model: \"sequential\"\n"                                                              \
    "_________________________________________________________________\n"                  \
    "Layer (type)                 Output Shape              Param #   \n"                  \
    "=================================================================\n"
#define K2_SEP "_________________________________________________________________\n"
#define K2_TAIL(total, trainable, frozen)                                                  \
    "=================================================================\n"                  \
    "Total params: " total "\n"                                                            \
    "Trainable params: " trainable "\n"                                                    \
    "Non-trainable params: " frozen "\n" K2_SEP

/* Keras 2.2-2.4 and tf.keras to TF 2.5 cut "name (Type)" at the column's width, with no
 * ')' and one space before the shape. */
static void test_keras_cut_types(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *ok = K2_HEAD
        "conv1d (Conv1D)              (None, 98, 16)            64        \n" K2_SEP
        "max_pooling1d_1 (MaxPooling1 (None, 49, 16)            0         \n" K2_SEP
        "global_max_pooling1d (Global (None, 16)                0         \n" K2_SEP
        "dense (Dense)                (None, 4)                 68        \n"
        K2_TAIL("132", "132", "0");
    int rc = parse_str(ok, &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.format, EST_FMT_KERAS);
    assert_int_equal(m.n, 4);
    assert_int_equal(m.params, 132);
    assert_int_equal(m.layers[0].kind, EST_K_CONV);
    assert_int_equal(m.layers[1].kind, EST_K_POOL);
    assert_int_equal(m.layers[1].out, 49 * 16);
    assert_int_equal(m.layers[2].kind, EST_K_POOL); /* GlobalMaxPooling1D or the like */
    assert_int_equal(m.layers[2].out, 16);
    assert_int_equal(m.layers[3].kind, EST_K_LINEAR);
    /* Bidirectional fills its cell: refused as the recurrent wrapper it is */
    const char *bi = K2_HEAD
        "embedding (Embedding)        (None, 84, 128)           1280      \n" K2_SEP
        "bidirectional (Bidirectional (None, 64)                41216     \n"
        K2_TAIL("42,496", "42,496", "0");
    assert_true(parse_str(bi, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:7: Bidirectional: a recurrent layer"));
    /* a cut type that begins classes read differently: refused, saying it was cut */
    const char *amb = K2_HEAD
        "long_layer_name_abcdef (Conv (None, 98, 16)            64        \n"
        K2_TAIL("64", "64", "0");
    assert_true(parse_str(amb, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:5: type 'Conv' is cut off"));
    assert_non_null(strstr(err.msg, "could be Conv1D or ConvLSTM2D"));
    assert_non_null(strstr(err.msg, "line_length"));
    /* one that begins no Keras class (a custom layer): what it keeps is unknown */
    const char *custom = K2_HEAD
        "my_custom_block_layer_1 (MyC (None, 98, 16)            0         \n"
        K2_TAIL("0", "0", "0");
    assert_true(parse_str(custom, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:5: type 'MyC' is cut off"));
    assert_non_null(strstr(err.msg, "begins no Keras layer class"));
    /* a name that fills the cell leaves no type at all */
    const char *noname = K2_HEAD
        "a_very_long_layer_name_abcde (None, 98, 16)            64        \n"
        K2_TAIL("64", "64", "0");
    assert_true(parse_str(noname, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:5: the layer's name fills its cell"));
    /* a nested model's cut type: refused as the nested model it is */
    const char *nested = K2_HEAD
        "random_contrast (RandomContr (None, 32, 32, 3)         0         \n" K2_SEP
        "efficientnet_backbone (Funct (None, 100)               1000      \n"
        K2_TAIL("1,000", "1,000", "0");
    assert_true(parse_str(nested, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:7: a nested model (Functional)"));
    /* a nested model of no parameters before any layer that has some (keras.io's data
     * augmentation Sequential) is read as preprocessing; after one, refused: its layers
     * may keep what gradients flowing back through them need */
    const char *aug = K2_HEAD
        "sequential (Sequential)      (None, 32, 32, 3)         0         \n" K2_SEP
        "conv2d (Conv2D)              (None, 30, 30, 8)         224       \n"
        K2_TAIL("224", "224", "0");
    if (parse_str(aug, &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.params, 224);
    const char *late = K2_HEAD
        "conv2d (Conv2D)              (None, 30, 30, 8)         224       \n" K2_SEP
        "sequential (Sequential)      (None, 30, 30, 8)         0         \n"
        K2_TAIL("224", "224", "0");
    assert_true(parse_str(late, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:7: a nested model (Sequential)"));
}

/* What is refused says why, on its own line. */
static void test_keras_messages(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    /* a subclassed model's layers print 'multiple' */
    const char *multiple = K2_HEAD
        "pre_classifier (Dense)       multiple                  590592    \n" K2_SEP
        "classifier (Dense)           multiple                  1538      \n"
        K2_TAIL("592,130", "592,130", "0");
    assert_true(parse_str(multiple, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:5: output shape 'multiple'"));
    assert_non_null(strstr(err.msg, "subclassed model"));
    assert_non_null(strstr(err.msg, "keras.Input"));
    /* also after a cut type */
    const char *cut_multiple = K2_HEAD
        "distilbert (TFDistilBertMain multiple                  66362880  \n"
        K2_TAIL("66,362,880", "66,362,880", "0");
    assert_true(parse_str(cut_multiple, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:5: output shape 'multiple'"));
    /* a header edited to 'Param': its line, and the column it lacks */
    const char *param = "Model: \"sequential\"\n"
                        "Layer (type)                 Output Shape              Param     \n"
                        "=================================================================\n"
                        "dense (Dense)                (None, 4)                 68        \n"
                        "=================================================================\n"
                        "Total params: 68\n";
    assert_true(parse_str(param, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:2: Keras header without the 'Param #' column"));
    /* TF 2.0-2.5 cut an output shape at its column's width with no rest: an input's
     * list loses only its ']', read; a tuple cut inside is refused, saying so */
#define TF24(shape)                                                                                \
    "Model: \"model\"\n"                                                                           \
    "Layer (type)                    Output Shape         Param #     Connected to      \n"        \
    "===================================================================================\n"        \
    "img_in (InputLayer)             [(None, 224, 224, 3) 0                             \n"        \
    "conv2d_1 (Conv2D)               " shape " 1824        img_in[0][0]      \n"                   \
    "===================================================================================\n"        \
    "Total params: 1,824\n"
    if (parse_str(TF24("(None, 110, 110, 24)"), &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.params, 1824);
    assert_int_equal(m.input, 224 * 224 * 3);
    assert_true(parse_str(TF24("(None, 110, 110, 240"), &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:5: output shape '(None, 110, 110, 240' does not "
                                    "close: cut at its column's width"));
#undef TF24
    /* Keras 3 after fit(): 'Total params' holds the optimizer's variables, which its
     * 'Optimizer params' line counts; the model's are the rest */
    if (parse_file("tests/fuzz/corpus/summary_keras/keras3_after_fit.txt", &m, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(m.params, 2177);
    assert_int_equal(m.n, 2);
    const char *more = K2_HEAD
        "dense (Dense)                (None, 4)                 68        \n"
        K2_TAIL("68", "68", "0") "Optimizer params: 136\n";
    assert_true(parse_str(more, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:11: 'Optimizer params: 136' is more than 'Total params: 68'"));
}

/* A table pasted with a line prefix on its header is read without it: '# ' (a .py
 * file's comment), '> ' (a Markdown quote), knitr's '    ## ', and an indent of spaces
 * (a notebook exported to Markdown), which its rule line shows. */
static void test_table_prefix(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    /* torchinfo's rows pasted without the header line: said, not "not a model summary" */
    assert_true(parse_str("==========\n"
                          "Net                       [8, 10]     650\n"
                          "\xe2\x94\x9c\xe2\x94\x80Linear: 1-1    [8, 10]     650\n"
                          "==========\n",
                          &m, &err) < 0);
    assert_non_null(strstr(err.msg, ":3: a torchinfo table's rows without its header line"));
    static const struct {
        const char *path;
        enum est_format format;
        size_t n;
        uint64_t params;
    } ok[] = {
        {"tests/fuzz/corpus/summary_torchsummary/commented_prefix.txt", EST_FMT_TORCHSUMMARY,
         4, 164298},
        {"tests/fuzz/corpus/summary_torchinfo/blockquoted_prefix.txt", EST_FMT_TORCHINFO, 4,
         164298},
        {"tests/fuzz/corpus/summary_torchinfo/indented.txt", EST_FMT_TORCHINFO, 4, 164298},
        {"tests/fuzz/corpus/summary_keras/keras3_knitr_prefixed.txt", EST_FMT_KERAS, 2, 1024},
    };
    for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
        int rc = parse_file(ok[k].path, &m, &err);
        if (rc)
            fail_msg("%s", err.msg);
        assert_int_equal(m.format, ok[k].format);
        assert_int_equal(m.n, ok[k].n);
        assert_int_equal(m.params, ok[k].params);
    }
    /* the last: a Keras 3 row wrapped over two lines, joined after the prefix went */
    assert_int_equal(m.layers[0].kind, EST_K_CONV);
    assert_int_equal(m.layers[0].out, 80 * 80 * 32);
    assert_int_equal(m.layers[1].kind, EST_K_NORM);
    /* lines without the prefix keep theirs; an error still names the file's line */
    const char *bad = "# -----------------------------------------------------\n"
                      "#         Layer (type)        Output Shape    Param #\n"
                      "# =====================================================\n"
                      "#             Conv2d-1    [-1, 16, 32, 32]        4x8\n";
    assert_true(parse_str(bad, &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:4: bad parameter count '4x8'");
    /* a column added after torchsummary's own: named at the header, not at a row */
    const char *col = "-----------------------------------------------------\n"
                      "        Layer (type)        Output Shape    Param #     Layer index\n"
                      "=====================================================\n"
                      "            Conv2d-1    [-1, 16, 32, 32]        448     \n"
                      "              ReLU-2    [-1, 16, 32, 32]          0               1\n";
    assert_true(parse_str(col, &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:2: torchsummary header with a column after 'Param #' "
                                 "('Layer index'), which torchsummary does not print (another "
                                 "tool's table, or an edited one): give torchsummary's table "
                                 "as printed, or a torchinfo table");
}

#define TS_HEAD                                                                            \
    "----------------------------------------------------------------\n"                   \
    "        Layer (type)               Output Shape         Param #\n"                    \
    "================================================================\n"                   \
    "            Conv2d-1           [-1, 16, 32, 32]             448\n"                    \
    "              ReLU-2           [-1, 16, 32, 32]               0\n"                    \
    "            Conv2d-3           [-1, 32, 32, 32]           4,640\n"                    \
    "              ReLU-4           [-1, 32, 32, 32]               0\n"                    \
    "           Flatten-5                [-1, 32768]               0\n"                    \
    "            Linear-6                   [-1, 10]         327,690\n"                    \
    "================================================================\n"                   \
    "Total params: 332,778\n"

/* The printed "Trainable params:" of a torchsummary table, which marks no row frozen: a
 * frozen prefix that holds the difference is frozen (in fp32), else every row trains. */
static void test_torchsummary_trainable(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    /* the convolutions frozen, the new head trained (transfer learning) */
    int rc = parse_str(TS_HEAD "Trainable params: 327,690\nNon-trainable params: 5,088\n", &m,
                       &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.params, 332778);
    assert_int_equal(m.params - m.frozen, 327690);
    assert_int_equal(m.trainable_printed, 327690);
    assert_int_equal(m.trainable_line, 12);
    assert_int_equal(m.trainable_unplaced, 0);
    assert_int_equal(m.layers[0].frozen, 448);
    assert_int_equal(m.layers[2].frozen, 4640);
    assert_int_equal(m.layers[5].frozen, 0);
    /* stored in fp32 under autocast: nothing says the backbone was loaded in 16 bits */
    assert_true(est_frozen_bytes(&m.layers[0], EST_PREC_AMP) == 4);
    /* everything trained: nothing to place */
    assert_int_equal(parse_str(TS_HEAD "Trainable params: 332,778\n", &m, &err), 0);
    assert_int_equal(m.frozen, 0);
    assert_int_equal(m.trainable_unplaced, 0);
    /* the middle convolution frozen: no prefix holds it, so everything trains */
    assert_int_equal(parse_str(TS_HEAD "Trainable params: 328,138\n", &m, &err), 0);
    assert_int_equal(m.frozen, 0);
    assert_int_equal(m.trainable_printed, 328138);
    assert_int_equal(m.trainable_unplaced, EST_TRAIN_NO_PREFIX);
    /* nothing trains: a backbone printed alone; counted as trained */
    assert_int_equal(parse_str(TS_HEAD "Trainable params: 0\n", &m, &err), 0);
    assert_int_equal(m.frozen, 0);
    assert_int_equal(m.trainable_unplaced, EST_TRAIN_ZERO);
    /* more than the model holds (edited) */
    assert_int_equal(parse_str(TS_HEAD "Trainable params: 332,779\n", &m, &err), 0);
    assert_int_equal(m.frozen, 0);
    assert_int_equal(m.trainable_unplaced, EST_TRAIN_ABOVE);
    assert_true(parse_str(TS_HEAD "Trainable params: 3x\n", &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:12: bad 'Trainable params' line");
    /* the frozen prefix keeps no activations: below the same table trained */
    struct est_opts o = {.batch = 64, .optimizer = EST_OPT_ADAMW};
    struct est_result all, head;
    assert_int_equal(parse_str(TS_HEAD "Trainable params: 332,778\n", &m, &err), 0);
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &all, &err), 0);
    assert_int_equal(parse_str(TS_HEAD "Trainable params: 327,690\n", &m, &err), 0);
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &head, &err), 0);
    assert_true(head.activations_mib < all.activations_mib);
    assert_true(head.gradients_mib <= all.gradients_mib);
}

/* Keras: a BatchNormalization's moving mean and variance never train; a frozen prefix
 * (an embedding, a backbone) is placed as for torchsummary; rows marked 'N' stay. */
static void test_keras_trainable(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    int rc = parse_file("tests/fuzz/corpus/summary_keras/keras2_old_layout_cut_types.txt", &m,
                        &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.params, 346);
    assert_int_equal(m.params - m.frozen, 330);
    assert_int_equal(m.trainable_unplaced, 0);
    assert_int_equal(m.layers[1].kind, EST_K_NORM); /* "(BatchNorma", cut */
    assert_int_equal(m.layers[1].params, 32);
    assert_int_equal(m.layers[1].frozen, 16);
    /* Keras 3, the same */
    rc = parse_file("tests/fuzz/corpus/summary_keras/keras3_knitr_prefixed.txt", &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.params - m.frozen, 960);
    assert_int_equal(m.layers[1].frozen, 64);
    /* a frozen embedding first */
    rc = parse_file("tests/fuzz/corpus/summary_keras/keras2_old_layout_frozen_embedding.txt", &m,
                    &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.params - m.frozen, 2625);
    assert_int_equal(m.layers[0].kind, EST_K_EMBED);
    assert_int_equal(m.layers[0].frozen, 1600);
    assert_int_equal(m.layers[1].frozen, 0);
    /* channels first: a BatchNormalization of 6 channels over (None, 6, 5, 8) holds 24
     * parameters, 3 x 8, but its statistics are 12, not 16: the guess is dropped, and as
     * no prefix holds 12, every parameter trains */
    const char *cf = K2_HEAD
        "conv2d (Conv2D)              (None, 6, 5, 8)           168       \n" K2_SEP
        "batch_normalization (BatchNo (None, 6, 5, 8)           24        \n"
        K2_TAIL("192", "180", "12");
    assert_int_equal(parse_str(cf, &m, &err), 0);
    assert_int_equal(m.frozen, 0);
    assert_int_equal(m.layers[1].frozen, 0);
    assert_int_equal(m.trainable_unplaced, EST_TRAIN_NO_PREFIX);
    /* rows marked 'N' that leave fewer trained than printed (an edited table): all train */
    rc = parse_file("tests/fuzz/corpus/summary_keras/keras2_nested_input.txt", &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.frozen, 0);
    assert_int_equal(m.trainable_unplaced, EST_TRAIN_ABOVE);
}

/* A layer whose moving statistics are frozen and its scale and offset trained (a Keras
 * BatchNormalization) gets gradients and optimizer state for the trained half in the
 * replay, not none as a frozen layer. */
static void test_replay_partly_frozen_norm(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    struct est_opts o = {.batch = 8, .optimizer = EST_OPT_ADAMW};
    struct est_result r[3];
    const uint64_t c = 1u << 20;
    for (int k = 0; k < 3; k++) { /* trained, statistics frozen, all frozen */
        est_model_init(&m, layers, EST_MAX_LAYERS);
        assert_int_equal(est_model_add(&m, EST_K_LINEAR, c, 17 * c, 1, 0), 0);
        assert_int_equal(est_model_add(&m, EST_K_NORM, c, 4 * c, 1, 0), 0);
        m.layers[1].frozen = k == 0 ? 0 : k == 1 ? 2 * c : 4 * c;
        m.frozen = m.layers[1].frozen;
        assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &r[k], &err), 0);
        assert_non_null(r[k].peak_phase ? "replay" : NULL);
    }
    /* each 2C (8 MiB) of them has a gradient and AdamW's two states: the statistics'
     * 2C have none, the scale and offset's have theirs */
    assert_true(fabs(r[0].gradients_mib - r[1].gradients_mib - 8) < 0.5);
    assert_true(fabs(r[1].gradients_mib - r[2].gradients_mib - 8) < 0.5);
    assert_true(fabs(r[0].optimizer_mib - r[1].optimizer_mib - 16) < 0.5);
    assert_true(fabs(r[1].optimizer_mib - r[2].optimizer_mib - 16) < 0.5);
}

/* A frozen fp32 weight (wbits 32: a table's frozen row) is stored in 4 bytes whatever the
 * precision; under autocast its product makes a 16-bit copy of it, as a trained one's
 * does, and under fp32 none (it is no quantized weight to unpack). */
static void test_replay_frozen_fp32(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    struct est_result r[2];
    const uint64_t f = 1u << 26; /* 64 Mi parameters: 256 MiB in fp32, 128 in 16 bits */
    for (int amp = 0; amp < 2; amp++) {
        struct est_opts o = {.batch = 8, .optimizer = EST_OPT_ADAMW,
                             .precision = amp ? EST_PREC_AMP : EST_PREC_FP32};
        for (int k = 0; k < 2; k++) { /* frozen in the precision's storage, in fp32 */
            est_model_init(&m, layers, EST_MAX_LAYERS);
            assert_int_equal(est_model_add(&m, EST_K_LINEAR, 8192, f, 1, 0), 0);
            assert_int_equal(est_model_add(&m, EST_K_LINEAR, 10, 81930, 1, 0), 0);
            m.layers[0].frozen = f;
            m.layers[0].wbits = k ? 32 : 0;
            m.frozen = f;
            assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &r[k], &err), 0);
            assert_non_null(r[k].peak_phase ? "replay" : NULL);
        }
        if (!amp) { /* fp32 either way */
            assert_true(r[1].estimate_mib == r[0].estimate_mib);
            continue;
        }
        assert_true(r[0].weights_mib < 130); /* 16 bits, as a PEFT base loaded so */
        assert_true(r[1].weights_mib >= 256);
        assert_true(r[1].estimate_mib - r[1].floor_mib >= 256 + 128);
    }
}

/* torchinfo prints a frozen layer's count in parentheses: those weights stay in fp32 under
 * autocast (a frozen backbone keeps its fp32 weights; a table cannot say otherwise). */
static void test_torchinfo_frozen_fp32(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *s =
        "==========================================================================\n"
        "Layer (type:depth-idx)                   Output Shape              Param #\n"
        "==========================================================================\n"
        "Net                                      [8, 10]                   --\n"
        "\xe2\x94\x9c\xe2\x94\x80Linear: 1-1                            [8, 4096]                 (16,781,312)\n"
        "\xe2\x94\x9c\xe2\x94\x80ReLU: 1-2                              [8, 4096]                 --\n"
        "\xe2\x94\x9c\xe2\x94\x80Linear: 1-3                            [8, 10]                   40,970\n"
        "==========================================================================\n"
        "Total params: 16,822,282\n"
        "Trainable params: 40,970\n"
        "Non-trainable params: 16,781,312\n"
        "==========================================================================\n";
    int rc = parse_str(s, &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.format, EST_FMT_TORCHINFO);
    assert_int_equal(m.frozen, 16781312);
    assert_int_equal(m.layers[0].frozen, 16781312);
    assert_int_equal(m.layers[0].wbits, 32);
    struct est_opts o = {.batch = 8, .optimizer = EST_OPT_ADAMW, .precision = EST_PREC_AMP};
    struct est_result r;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &r, &err), 0);
    assert_true(r.weights_mib >= 16781312.0 * 4 / 1048576);
}

#define TI_HEAD                                                                                    \
    "==========================================================================\n"                 \
    "Layer (type:depth-idx)                   Output Shape              Param #\n"                 \
    "==========================================================================\n"
#define TI_ROW(name, shape, params) "\xe2\x94\x9c\xe2\x94\x80" name "   " shape "   " params "\n"
#define TI_TAIL(total)                                                                             \
    "==========================================================================\n"                 \
    "Total params: " total "\n"

/* A block whose class name holds a layer's word (timm's GluMlp and SwiGLU, a PreNorm,
 * torchaudio's _ConvolutionModule, anything ...Linear...), shown collapsed at torchinfo's
 * default depth, is no such layer: refused as a collapsed block of no known kind is; a
 * layer of a class carma does not know whose parameters fit its kind is read as one. */
static void test_named_like_a_layer(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    static const char *const blocks[] = {"GluMlp: 1-2", "SwiGLU: 1-2", "PreNorm: 1-2",
                                         "_ConvolutionModule: 1-2", "GatedLinearUnit: 1-2"};
    for (size_t k = 0; k < sizeof blocks / sizeof blocks[0]; k++) {
        char t[2048];
        snprintf(t, sizeof t,
                 TI_HEAD TI_ROW("Linear: 1-1", "[32, 196, 384]", "295,296")
                     TI_ROW("%s", "[32, 196, 384]", "886,656")
                         TI_ROW("LayerNorm: 1-3", "[32, 196, 384]", "768") TI_TAIL("1,182,720"),
                 blocks[k]);
        assert_true(parse_str(t, &m, &err) < 0);
        char want[128];
        snprintf(want, sizeof want,
                 "t.txt:5: '%.*s' holds 886656 parameters but the table lists "
                 "no layer inside it",
                 (int)(strchr(blocks[k], ':') - blocks[k]), blocks[k]);
        assert_non_null(strstr(err.msg, want));
    }
    /* layers of classes carma does not know by name, their parameters their kind's: an
     * RMSNorm (a weight a channel), a PReLU-like activation, a linear layer subclass from
     * a width seen before (Falcon's FalconLinear), a convolution by PyTorch's naming */
    const char *known = TI_HEAD TI_ROW("Embedding: 1-1", "[8, 128, 512]", "16,384,000")
        TI_ROW("LlamaRMSNorm: 1-2", "[8, 128, 512]", "512")
            TI_ROW("FalconLinear: 1-3", "[8, 128, 2048]", "1,050,624")
                TI_ROW("SnakeActivation: 1-4", "[8, 128, 2048]", "2,048")
                    TI_ROW("FalconLinear: 1-5", "[8, 128, 512]", "1,049,088") TI_TAIL("18,486,272");
    int rc = parse_str(known, &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.layers[1].kind, EST_K_NORM);
    assert_int_equal(m.layers[2].kind, EST_K_LINEAR);
    assert_int_equal(m.layers[3].kind, EST_K_ACT);
    assert_int_equal(m.layers[4].kind, EST_K_LINEAR);
    const char *conv = TI_HEAD TI_ROW("StdConv2d: 1-1", "[8, 64, 56, 56]", "9,408")
        TI_ROW("BatchNormAct2d: 1-2", "[8, 64, 56, 56]", "128") TI_TAIL("9,536");
    rc = parse_str(conv, &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.layers[0].kind, EST_K_CONV);
    assert_int_equal(m.layers[1].kind, EST_K_NORM);
    /* Keras: a custom layer named like a norm is refused as custom layers are */
    const char *k =
        K2_HEAD "input_1 (InputLayer)         [(None, 128, 256)]        0         \n" K2_SEP
                "pre_norm (PreNormBlock)      (None, 128, 256)          789,760   \n" K2_SEP
                "dense (Dense)                (None, 128, 10)           2,570     \n" K2_TAIL(
                    "792,330", "792,330", "0");
    assert_true(parse_str(k, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:7: 'PreNormBlock' holds 789760 parameters in a "
                                    "layer whose insides the summary does not list"));
    /* a layer CSV names classes: one named like a layer but holding a block's parameters
     * is refused by line */
    assert_true(parse_str("type,out_elems,params\ninput,784,0\nlinear,512,401920\n"
                          "GluMlp,512,2000000\nlinear,10,5130\n",
                          &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:4: 'GluMlp' (2000000 parameters) is named like a "
                                    "layer of kind act but is no PyTorch or Keras class"));
    assert_true(
        parse_str("type,out_elems,params\ninput,784,0\nMyLinearBlock,512,401920\n", &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:3: 'MyLinearBlock' (401920 parameters) is named like"));
    assert_int_equal(parse_str("type,out_elems,params\ninput,784,0\nbatch_normalization,784,"
                               "1568\nLayerNorm2d,784,128\nLinear,10,7850\n",
                               &m, &err),
                     0);
    assert_int_equal(m.layers[0].kind, EST_K_NORM);
    assert_int_equal(m.layers[1].kind, EST_K_NORM);
}

/* torchinfo rows of tokens flattened into the batch, [batch x tokens, width] (Hugging
 * Face's mixture-of-experts blocks, x.view(-1, d)): the tokens' factor counts, as in the
 * same table without the flattening; a first dimension neither the batch nor a multiple
 * of it (tokens routed to an expert) is refused; a position table's [1, seq, width] and
 * a position-bias table's [seq, seq, heads] (T5's) are read as before. */
static void test_tokens_in_batch(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *flat = TI_HEAD TI_ROW("Linear: 1-1", "[8, 256, 512]", "33,280")
        TI_ROW("Linear: 1-2", "[2048, 2048]", "1,050,624") TI_ROW("GELU: 1-3", "[2048, 2048]", "--")
            TI_ROW("Linear: 1-4", "[2048, 512]", "1,049,088")
                TI_ROW("Embedding: 1-5", "[1, 256, 512]", "131,072")
                    TI_ROW("Embedding: 1-6", "[256, 256, 8]", "256") TI_TAIL("2,264,320");
    int rc = parse_str(flat, &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.n, 6);
    assert_int_equal(m.layers[0].out, 256 * 512);
    assert_int_equal(m.layers[1].out, 256 * 2048);
    assert_int_equal(m.layers[2].out, 256 * 2048);
    assert_int_equal(m.layers[3].out, 256 * 512);
    assert_int_equal(m.layers[4].out, 256 * 512);
    assert_int_equal(m.layers[5].out, 256 * 8);
    const char *routed = TI_HEAD TI_ROW("Linear: 1-1", "[8, 256, 512]", "33,280")
        TI_ROW("Linear: 1-2", "[1001, 2048]", "1,050,624") TI_TAIL("1,083,904");
    assert_true(parse_str(routed, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:5: 'Linear': its output's first dimension 1001 is "
                                    "neither the table's batch 8 (line 4) nor a multiple of it"));
}

#define TS_HEAD3                                                                                   \
    "----------------------------------------------------------------\n"                           \
    "        Layer (type)               Output Shape         Param #\n"                            \
    "================================================================\n"

/* A printed total above the rows' sum: torchsummary's and Keras's totals are the sum of
 * their rows, so rows are missing (a cut paste), refused naming both; torchinfo's are the
 * rows' and the containers' own (a ViT's class token and position table, on the root or
 * an embeddings row), and what neither holds is refused when a share of the model, else
 * counted as parameters with a note. */
static void test_total_above_rows(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *ts = TS_HEAD3 "            Conv2d-1           [-1, 32, 26, 26]             320\n"
                              "              ReLU-2           [-1, 32, 26, 26]               0\n"
                              "            Linear-3                   [-1, 10]         216,330\n"
                              "================================================================\n"
                              "Total params: 234,971\n"
                              "Trainable params: 234,971\n";
    assert_true(parse_str(ts, &m, &err) < 0);
    assert_string_equal(err.msg, "t.txt:8: the rows hold 216650 parameters, but 'Total params' "
                                 "says 234971: the total is the sum of the rows, so rows holding "
                                 "18321 are missing (a table cut or edited when pasted), and "
                                 "their activations with them; give the whole table as printed");
    const char *k =
        K2_HEAD "conv2d (Conv2D)              (None, 26, 26, 32)        320       \n" K2_SEP
                "flatten (Flatten)            (None, 21632)             0         \n" K2_SEP
                "dense (Dense)                (None, 10)                216330    \n" K2_TAIL(
                    "234,971", "234,971", "0");
    assert_true(parse_str(k, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:11: the rows hold 216650 parameters, but 'Total "
                                    "params' says 234971"));
    /* torchinfo: the root's and a container's own parameters explain the total */
    const char *vit = "==========================================================================\n"
                      "Layer (type:depth-idx)                   Output Shape              Param #\n"
                      "==========================================================================\n"
                      "ViT                                      [8, 10]                   768\n"
                      "\xe2\x94\x9c\xe2\x94\x80"
                      "Embeddings: 1-1                        [8, 197, "
                      "768]             151,296\n"
                      "\xe2\x94\x82    \xe2\x94\x94\xe2\x94\x80"
                      "Conv2d: 2-1                   [8, "
                      "768, 14, 14]          590,592\n"
                      "\xe2\x94\x9c\xe2\x94\x80LayerNorm: 1-2                         [8, 197, "
                      "768]             1,536\n"
                      "\xe2\x94\x9c\xe2\x94\x80Linear: 1-3                            [8, 10]      "
                      "             7,690\n"
                      "==========================================================================\n"
                      "Total params: 751,882\n";
    int rc = parse_str(vit, &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.params, 751882);
    assert_int_equal(m.params_unplaced, 0);
    /* a total 5,000 above (below 1% and 100,000): counted, with a note */
    char t[4096];
    snprintf(t, sizeof t, "%.*s756,882\n", (int)(strlen(vit) - strlen("751,882\n")), vit);
    rc = parse_str(t, &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.params, 756882);
    assert_int_equal(m.params_unplaced, 5000);
    assert_int_equal(m.params_unplaced_line, 10);
    struct est_opts o = {.batch = 8, .optimizer = EST_OPT_ADAMW};
    struct est_result r = {0};
    char notes[EST_NOTES][EST_NOTE_MAX];
    size_t nn = est_notes(&m, &o, &r, notes), found = 0;
    for (size_t i = 0; i < nn; i++)
        found +=
            strstr(notes[i], "'Total params' (line 10) holds 5000 parameters that no row") != NULL;
    assert_int_equal(found, 1);
    /* 600,000 above: layers missing, refused */
    snprintf(t, sizeof t, "%.*s1,351,882\n", (int)(strlen(vit) - strlen("751,882\n")), vit);
    assert_true(parse_str(t, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:10: the rows hold 599818 parameters and the "
                                    "containers' own 152064, but 'Total params' says 1351882: "
                                    "600000 are in no row"));
}

/* torchsummary prints "[]" for a module returning a tuple: a block without parameters or
 * kind is a wrapper (its layers have rows), anything else is refused, saying why. */
static void test_torchsummary_tuple(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *ok = TS_HEAD3 "            Linear-1                   [-1, 16]             272\n"
                              "               Blk-2                         []               0\n"
                              "            Linear-3                    [-1, 2]              34\n"
                              "================================================================\n"
                              "Total params: 306\n";
    int rc = parse_str(ok, &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.n, 3);
    assert_int_equal(m.layers[1].kind, EST_K_OTHER);
    assert_int_equal(m.layers[1].out, 0);
    const char *mha = TS_HEAD3 "            Linear-1                   [-1, 16]             272\n"
                               "MultiheadAttention-2                    []           1,088\n"
                               "================================================================\n"
                               "Total params: 1,360\n";
    assert_true(parse_str(mha, &m, &err) < 0);
    assert_non_null(strstr(err.msg, "t.txt:5: 'MultiheadAttention' (1088 parameters, read as "
                                    "attn) has the output shape [], torchsummary's for a module "
                                    "that returns a tuple"));
}

/* torchsummary prints a block after its layers, with no parameters of its own: timm's
 * ConvNormAct (Conv2d, BatchNormAct2d, aa) too, which est_kind_classify reads as a norm by
 * its name. It holds no tensor: the table estimates as it does without those rows (they
 * had been counted as norms, 27% more activations on this stem). */
static void test_torchsummary_convnormact(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *path = "tests/fuzz/corpus/summary_torchsummary/timm_convnormact.txt";
    int rc = parse_file(path, &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.params, 226696);
    for (size_t i = 0; i < m.n; i++)
        assert_false(m.layers[i].kind == EST_K_NORM && m.layers[i].params == 0);
    struct est_opts o = {.batch = 32, .optimizer = EST_OPT_ADAMW};
    struct est_result with, without;
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &with, &err), 0);
    /* the same table without its ConvNormAct rows */
    char *buf;
    size_t len;
    assert_int_equal(carma_file_read(path, EST_MAX_INPUT, &buf, &len, &err), 0);
    char *out = malloc(len + 1), *w = out;
    assert_non_null(out);
    for (const char *l = buf, *e; l < buf + len; l = e + 1) {
        e = memchr(l, '\n', (size_t)(buf + len - l));
        if (!e)
            e = buf + len;
        if (!memmem(l, (size_t)(e - l), "ConvNormAct-", 12)) {
            memcpy(w, l, (size_t)(e - l));
            w += e - l;
            *w++ = '\n';
        }
    }
    *w = 0;
    free(buf);
    rc = parse_str(out, &m, &err);
    free(out);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(est_compute(&m, est_coef_default(), &o, &rwork, &without, &err), 0);
    assert_true(fabs(with.activations_mib - without.activations_mib) < 0.01);
    assert_true(fabs(with.estimate_mib - without.estimate_mib) < 0.01);
}

/* KerasHub's Task.summary() prints its preprocessor's table ("Layer (type)", "Config")
 * before the model's: passed over, the model's table read as Keras's (it had been refused
 * at the preprocessor's header as a Keras header without 'Output Shape' and 'Param #'). */
static void test_keras_hub_preprocessor(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    int rc =
        parse_file("tests/fuzz/corpus/summary_keras/keras3_hub_preprocessor_expand.txt", &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.format, EST_FMT_KERAS);
    assert_int_equal(m.params, 5317);
    assert_int_equal(m.frozen, 32); /* conv1_bn's moving mean and variance */
    assert_int_equal(m.trainable_printed, 5285);
}

/* A module tree's nn.Bilinear: an out x in1 x in2 weight and an out bias, output out wide
 * (it had been refused as a linear layer without in_features). */
static void test_modtree_bilinear(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
    const char *tree = "Sequential(\n"
                       "  (0): Linear(in_features=10, out_features=10, bias=True)\n"
                       "  (1): Bilinear(in1_features=10, in2_features=12, out_features=5, "
                       "bias=True)\n"
                       "  (2): Bilinear(in1_features=5, in2_features=5, out_features=3, "
                       "bias=False)\n"
                       ")\n";
    int rc = parse_str(tree, &m, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(m.n, 3);
    assert_int_equal(m.params, 110 + 10 * 12 * 5 + 5 + 5 * 5 * 3);
    assert_int_equal(m.layers[1].kind, EST_K_LINEAR);
    assert_int_equal(m.layers[1].out, 5);
    assert_int_equal(m.layers[2].out, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keras_cut_types),
        cmocka_unit_test(test_keras_messages),
        cmocka_unit_test(test_table_prefix),
        cmocka_unit_test(test_torchsummary_trainable),
        cmocka_unit_test(test_keras_trainable),
        cmocka_unit_test(test_replay_partly_frozen_norm),
        cmocka_unit_test(test_replay_frozen_fp32),
        cmocka_unit_test(test_torchinfo_frozen_fp32),
        cmocka_unit_test(test_named_like_a_layer),
        cmocka_unit_test(test_tokens_in_batch),
        cmocka_unit_test(test_total_above_rows),
        cmocka_unit_test(test_torchsummary_tuple),
        cmocka_unit_test(test_modtree_bilinear),
        cmocka_unit_test(test_torchsummary_convnormact),
        cmocka_unit_test(test_keras_hub_preprocessor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
