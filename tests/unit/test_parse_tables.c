/* The table readers (torchsummary, torchinfo, Keras) on layouts pasted in the wild:
 * Keras before TF 2.6 cutting type names at the column's width, the printed Trainable
 * params line, summaries pasted with a line prefix ("# ", "> ", knitr's "    ## "), and
 * the messages of what is refused. Every summary here is written for the test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimate/estimate.h"
#include "estimate/parse.h"
#include "util/csv.h"

static struct est_layer layers[EST_MAX_LAYERS];

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
}

/* A table pasted with a line prefix on its header is read without it: '# ' (a .py
 * file's comment), '> ' (a Markdown quote), knitr's '    ## '. */
static void test_table_prefix(void **state)
{
    (void)state;
    struct est_model m;
    struct carma_err err;
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
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keras_cut_types),
        cmocka_unit_test(test_keras_messages),
        cmocka_unit_test(test_table_prefix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
