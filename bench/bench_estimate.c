/* Estimator speed: microseconds per estimate once parsed, and milliseconds to parse a
 * 300-layer torchsummary table (generated here). Targets (issue 4): <= 10 us per
 * estimate, <= 1 ms parse. The conv family (ResNet-50) is a sum of per-kind terms; the
 * dense family (an MLP from GPUMemNet's set, BERT-base) replays training steps through
 * the allocator model until it settles (about 4.5 iterations over these batches), whose
 * cost grows with the tensors it follows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "estimate/estimate.h"
#include "estimate/parse.h"
#include "estimate/replay.h"
#include "util/csv.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static struct est_layer layers[EST_MAX_LAYERS];
static struct est_replay_work work;

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
    struct est_opts o = {.batch = 32, .seq = seq, .optimizer = EST_OPT_ADAMW};
    struct est_result r;
    double sink = 0;
    /* the median of 5 timed runs: one run on a shared VM moves by several percent */
    enum { RUNS = 5, ITERS = 20000 };
    double us[RUNS];
    for (int k = 0; k < RUNS; k++) {
        double t0 = now_s();
        for (int i = 0; i < ITERS; i++) {
            o.batch = 1 + (uint32_t)(i & 255);
            if (est_compute(&m, est_coef_default(), &o, &work, &r, &err) < 0) {
                fprintf(stderr, "%s: %s\n", path, err.msg);
                return 1;
            }
            sink += r.bound_mib;
        }
        us[k] = (now_s() - t0) / ITERS * 1e6;
        for (int j = k; j > 0 && us[j] < us[j - 1]; j--) {
            double t = us[j];
            us[j] = us[j - 1];
            us[j - 1] = t;
        }
    }
    printf("estimate  %-48s %4zu layers  %-6s %8.3f us/estimate (median of %d; %.3f to %.3f) "
           "(target <= 10)%s\n",
           path, m.n, est_model_family(&m) == EST_FAM_CONV ? "conv" : "replay", us[RUNS / 2],
           RUNS, us[0], us[RUNS - 1], sink > 0 ? "" : " ?");
    return 0;
}

int main(void)
{
    int rc = bench_estimate("tests/fuzz/corpus/summary_torchinfo/resnet50_b32.txt", 0);
    rc |= bench_estimate("tests/fuzz/corpus/summary_csv/mlp_gpumemnet.csv", 0);
    rc |= bench_estimate("tests/fuzz/corpus/summary_modtree/bert_base.txt", 128);
    /* A 300-layer torchsummary table. */
    size_t cap = 300 * 96 + 4096, n = 0;
    char *txt = malloc(cap);
    if (!txt)
        return 1;
    n += (size_t)snprintf(txt + n, cap - n,
                          "----------------------------------------------------------------\n"
                          "        Layer (type)               Output Shape         Param #\n"
                          "================================================================\n");
    static const char *const types[] = {"Conv2d", "BatchNorm2d", "ReLU"};
    for (int i = 1; i <= 300; i++)
        n += (size_t)snprintf(txt + n, cap - n, "%20s-%-3d       [-1, 256, 14, 14]       %s\n",
                              types[i % 3], i, i % 3 == 0 ? "0" : i % 3 == 1 ? "589,824" : "512");
    n += (size_t)snprintf(txt + n, cap - n,
                          "================================================================\n"
                          "Total params: 58,982,400\n");
    struct est_model m;
    struct carma_err err;
    const int iters = 2000;
    double t0 = now_s();
    for (int i = 0; i < iters; i++) {
        est_model_init(&m, layers, EST_MAX_LAYERS);
        if (est_parse_torchsummary(txt, n, "bench", &m, &err) < 0) {
            fprintf(stderr, "%s\n", err.msg);
            free(txt);
            return 1;
        }
    }
    double dt = now_s() - t0;
    printf("parse     300-layer torchsummary table (%zu bytes) %19.4f ms/parse (target <= 1)\n", n,
           dt / iters * 1e3);
    free(txt);
    return rc;
}
