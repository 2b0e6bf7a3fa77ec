/* Estimator speed: microseconds per estimate once parsed, and milliseconds for est_parse
 * (format detection included) to read a 300-layer summary of each format (generated
 * here). Targets (issue 4): <= 10 us per estimate, <= 1 ms parse. The conv family
 * (ResNet-50) is a sum of per-kind terms; the dense family (an MLP from GPUMemNet's set,
 * BERT-base) replays training steps through the allocator model until it settles (about
 * 4.5 iterations over these batches), whose cost grows with the tensors it follows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimate/estimate.h"
#include "estimate/parse.h"
#include "estimate/replay.h"
#include "util/csv.h"
#include "util/clock.h"

#define SLOWEST_SUMMARY "tests/fuzz/corpus/summary_csv/repeats_long_free_lists.csv"

/* Moves a[k] down into a[0..k], which is sorted (the runs' times stay in order, so the
 * median and range are read off the ends). */
static void insert_last_sorted(double *a, int k)
{
    for (int j = k; j > 0 && a[j] < a[j - 1]; j--) {
        double t = a[j];
        a[j] = a[j - 1];
        a[j - 1] = t;
    }
}

static struct est_layer layers[EST_MAX_LAYERS];
static struct est_replay_work work;

/* the median of 5 timed runs: one run on a shared VM moves by several percent */
enum { RUNS = 5 };

/* Runs `once(ctx, i)` for i in [0, iters), RUNS times: t[0..RUNS) the seconds per call of
 * each run, sorted. -1 as soon as a call fails (it said why). */
static int time_runs(int (*once)(void *ctx, int i), void *ctx, int iters, double t[RUNS])
{
    for (int k = 0; k < RUNS; k++) {
        double t0 = carma_mono_s();
        for (int i = 0; i < iters; i++)
            if (once(ctx, i) < 0)
                return -1;
        t[k] = (carma_mono_s() - t0) / iters;
        insert_last_sorted(t, k);
    }
    return 0;
}

struct estimate_ctx {
    const char *what;
    struct est_model *m;
    struct est_opts o;
    int vary_batch; /* batch 1 + (i mod 256) */
    double sink;
};

static int estimate_once(void *ctx, int i)
{
    struct estimate_ctx *c = ctx;
    struct est_result r;
    struct carma_err err;
    if (c->vary_batch)
        c->o.batch = 1 + (uint32_t)(i & 255);
    if (est_compute(c->m, est_coef_default(), &c->o, &work, &r, &err) < 0) {
        fprintf(stderr, "%s: %s\n", c->what, err.msg);
        return -1;
    }
    c->sink += r.bound_mib;
    return 0;
}

static int bench_estimate(const char *path, unsigned seq)
{
    char *buf;
    size_t len;
    struct carma_err err;
    struct est_model m;
    if (carma_file_read(path, EST_MAX_INPUT, &buf, &len, &err) < 0) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    est_model_init(&m, layers, EST_MAX_LAYERS);
    if (est_parse(buf, len, path, &m, &err) < 0) {
        fprintf(stderr, "%s\n", err.msg);
        free(buf);
        return 1;
    }
    free(buf);
    struct estimate_ctx c = {
        .what = path, .m = &m, .o = {.seq = seq, .optimizer = EST_OPT_ADAMW}, .vary_batch = 1};
    double us[RUNS];
    if (time_runs(estimate_once, &c, 20000, us) < 0)
        return 1;
    char setup[32] = "";
    if (seq)
        snprintf(setup, sizeof setup, ", seq %u", seq);
    printf("estimate  %-48s %4zu layers  %-6s %8.3f us/estimate (median of %d; %.3f to %.3f; "
           "batch 1-256%s, adamw fp32) (target <= 10)%s\n",
           path, m.n, est_model_family(&m) == EST_FAM_CONV ? "conv" : "replay", us[RUNS / 2] * 1e6,
           RUNS, us[0] * 1e6, us[RUNS - 1] * 1e6, setup, c.sink > 0 ? "" : " ?");
    return 0;
}

/* The slowest estimate found (by a libFuzzer campaign, kept in its corpus): a layer CSV of
 * two rows repeated 4024 and 12 times, DDP on two GPUs, whose gradients' segments leave
 * thousands of remainders of one size in the middle of their free list. carmad estimates each
 * submission on its estimate queue's thread: this is how long one 88-byte summary holds
 * the submissions behind it. */
static int bench_estimate_long_lists(void)
{
    char *csv;
    size_t len;
    struct est_model m;
    struct carma_err err;
    est_model_init(&m, layers, EST_MAX_LAYERS);
    if (carma_file_read(SLOWEST_SUMMARY, EST_MAX_INPUT, &csv, &len, &err) < 0 ||
        est_parse(csv, len, SLOWEST_SUMMARY, &m, &err) < 0) {
        fprintf(stderr, "bench long free lists: %s\n", err.msg);
        return 1;
    }
    free(csv); /* the model keeps no pointer into its text */
    struct estimate_ctx c = {.what = "bench long free lists",
                             .m = &m,
                             .o = {.batch = 64, .seq = 512, .optimizer = EST_OPT_ADAMW, .gpus = 2}};
    double t[RUNS];
    if (time_runs(estimate_once, &c, 5, t) < 0)
        return 1;
    printf("estimate  88-byte layer CSV, rows repeated 4024 and 12 times, DDP on 2 GPUs %8.3f "
           "ms/estimate (median of %d; %.3f to %.3f; the slowest summary known)\n",
           t[RUNS / 2] * 1e3, RUNS, t[0] * 1e3, t[RUNS - 1] * 1e3);
    return 0;
}

/* 300 layers: Conv2d, BatchNorm2d, ReLU x 100 (256 channels, 14 x 14), in each format's
 * own print. */
enum { BENCH_LAYERS = 300, BENCH_CAP = BENCH_LAYERS * 2 * 140 + 4096 };
static const char *const bench_names[] = {"torchsummary table", "torchinfo table",
                                          "Keras summary (TF 2)", "module tree", "layer CSV"};

#define APPEND(...) (n += (size_t)snprintf(t + n, BENCH_CAP - n, __VA_ARGS__))

static size_t bench_text(int format, char *t)
{
    static const char *const torch[] = {"Conv2d", "BatchNorm2d", "ReLU"};
    static const char *const keras[] = {"Conv2D", "BatchNormalization", "ReLU"};
    static const char *const kname[] = {"conv2d", "batch_normalization", "re_lu"};
    static const char *const count[] = {"589,824", "512", "0"}; /* no conv bias */
    static const char *const kcount[] = {"590080", "1024", "0"};
    const char *rule = "================================================================";
    size_t n = 0;
    switch (format) {
    case 0:
        APPEND("%s\n        Layer (type)               Output Shape         Param #\n%s\n",
               "----------------------------------------------------------------", rule);
        for (int i = 0; i < BENCH_LAYERS; i++)
            APPEND("%20s-%-3d       [-1, 256, 14, 14]       %s\n", torch[i % 3], i + 1,
                   count[i % 3]);
        APPEND("%s\nTotal params: 59,033,600\n", rule);
        break;
    case 1:
        APPEND("%s\nLayer (type:depth-idx)                   Output Shape              Param #\n"
               "%s\nNet                                      [32, 256, 14, 14]         --\n",
               rule, rule);
        for (int i = 0; i < BENCH_LAYERS; i++)
            APPEND("\xe2\x94\x9c\xe2\x94\x80%s: 1-%-27d [32, 256, 14, 14]         %s\n",
                   torch[i % 3], i + 1, count[i % 3]);
        APPEND("%s\nTotal params: 59,033,600\nTrainable params: 59,033,600\n"
               "Non-trainable params: 0\n%s\n", rule, rule);
        break;
    case 2:
        APPEND("Model: \"sequential\"\n%s_\n %-28s%-26s%-10s\n%s=\n",
               "________________________________________________________________", "Layer (type)",
               "Output Shape", "Param #", rule);
        for (int i = 0; i < BENCH_LAYERS; i++) {
            char name[64];
            snprintf(name, sizeof name, "%s_%d (%s)", kname[i % 3], i / 3, keras[i % 3]);
            if (i)
                APPEND(" %64s\n", "");
            APPEND(" %-28s%-26s%-10s\n", name, "(None, 14, 14, 256)", kcount[i % 3]);
        }
        APPEND("%s=\nTotal params: 59,110,400\nTrainable params: 59,059,200\n"
               "Non-trainable params: 51,200\n", rule);
        break;
    case 3:
        APPEND("Net(\n");
        for (int i = 0; i < BENCH_LAYERS; i++)
            APPEND(i % 3 == 0   ? "  (%d): Conv2d(256, 256, kernel_size=(3, 3), stride=(1, 1), "
                                  "padding=(1, 1), bias=False)\n"
                   : i % 3 == 1 ? "  (%d): BatchNorm2d(256, eps=1e-05, momentum=0.1, "
                                  "affine=True, track_running_stats=True)\n"
                                : "  (%d): ReLU(inplace=True)\n",
                   i);
        APPEND(")\n");
        break;
    default:
        APPEND("type,out_elems,params\ninput,50176,0\n");
        for (int i = 0; i < BENCH_LAYERS; i++)
            APPEND("%s,50176,%s\n", torch[i % 3], i % 3 == 0 ? "589824" : i % 3 == 1 ? "512" : "0");
        break;
    }
    return n;
}

struct parse_ctx {
    const char *name, *txt;
    size_t len, layers;
    uint32_t hw; /* --image-size: the module tree's convolutions */
};

/* est_parse of the text, which must give its count of layers */
static int parse_once(void *ctx, int i)
{
    (void)i;
    const struct parse_ctx *c = ctx;
    struct est_model m;
    struct carma_err err;
    est_model_init(&m, layers, EST_MAX_LAYERS);
    m.image_h = m.image_w = c->hw;
    int prc = est_parse(c->txt, c->len, "bench", &m, &err);
    if (prc < 0 || m.n != c->layers) {
        fprintf(stderr, "bench %s: %s\n", c->name, prc < 0 ? err.msg : "not every layer read");
        return -1;
    }
    return 0;
}

static int bench_parse(const char *name, const char *txt, size_t n, uint32_t hw)
{
    struct parse_ctx c = {.name = name, .txt = txt, .len = n, .layers = BENCH_LAYERS, .hw = hw};
    double t[RUNS];
    if (time_runs(parse_once, &c, 500, t) < 0)
        return 1;
    printf("parse     300-layer %-21s (%6zu bytes)       %8.4f ms/parse (median of %d; %.4f to "
           "%.4f; detection included) (target <= 1)\n",
           name, n, t[RUNS / 2] * 1e3, RUNS, t[0] * 1e3, t[RUNS - 1] * 1e3);
    return 0;
}

/* The largest summary carmad takes (a job's, 512 KiB), in the shape that cost most: one
 * block holding a token table, an attention layer and 21,000 small tables after them
 * (read as positions its attention adds). carmad parses each submission on its estimate
 * queue's thread, so this time is how long one submission holds the submissions queued
 * behind it; reading each table's block again made it a quarter of a second. */
static int bench_parse_block(void)
{
    static char buf[512 << 10];
    const char *table = "  (t): Embedding(32, 2)\n";
    size_t tl = strlen(table);
    size_t len = (size_t)snprintf(
        buf, sizeof buf, "Enc(\n  (w): Embedding(1000, 128)\n  (a): MultiheadAttention()\n");
    size_t tables = 0;
    for (; len + tl + 3 < sizeof buf; tables++, len += tl)
        memcpy(buf + len, table, tl);
    memcpy(buf + len, ")\n", 3);
    len += 2;
    struct parse_ctx c = {
        .name = "one block of tables", .txt = buf, .len = len, .layers = tables + 2};
    double t[RUNS];
    if (time_runs(parse_once, &c, 10, t) < 0)
        return 1;
    printf("parse     one block of %zu tables (%6zu bytes)       %8.4f ms/parse (median of %d; "
           "%.4f to %.4f; the largest job summary carmad takes)\n",
           tables, len, t[RUNS / 2] * 1e3, RUNS, t[0] * 1e3, t[RUNS - 1] * 1e3);
    return 0;
}

int main(void)
{
    int rc = bench_estimate("tests/fuzz/corpus/summary_torchinfo/resnet50_b32.txt", 0);
    rc |= bench_estimate("tests/fuzz/corpus/summary_csv/mlp_gpumemnet.csv", 0);
    rc |= bench_estimate("tests/fuzz/corpus/summary_modtree/bert_base.txt", 128);
    rc |= bench_estimate_long_lists();
    /* est_parse (format detection included, as carma estimate and carmad call it) on a
     * 300-layer summary of each format, generated here. */
    char *txt = malloc(BENCH_CAP);
    if (!txt)
        return 1;
    for (int f = 0; f < 5; f++) {
        size_t n = bench_text(f, txt);
        rc |= bench_parse(bench_names[f], txt, n, f == 3 ? 14 : 0);
    }
    free(txt);
    rc |= bench_parse_block();
    return rc;
}
