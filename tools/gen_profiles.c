/* Regenerates the solo-profile columns of data/workloads.csv and the fitted rows of
 * data/model-profiles.csv (see data/README.md). Built by hand:
 *   cc -std=c17 -D_GNU_SOURCE -Isrc -O2 -o build/gen_profiles tools/gen_profiles.c \
 *      src/sim/profile.c src/util/csv.c src/util/err.c src/util/utf8.c -lm
 *   build/gen_profiles data/workloads.csv data/collocation-facts.csv data/model-profiles.csv
 * It rewrites data/workloads.csv in place (the CARMA columns unchanged, the profile
 * columns smact,smocc,drama,ramp_s,profile_source recomputed, any other column, such as
 * est_carma_mib, kept as it is after them) and writes the model
 * profiles: least-squares fits of peak memory on batch size for the models CARMA ran
 * at several batch sizes, plus the documented assumptions for the others. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/profile.h"
#include "util/csv.h"

#define MAXROWS 256
#define NSRC 13
#define NKEEP 8 /* other columns kept as they are (est_carma_mib) */
static const char *const src_cols[NSRC] = {
    "name", "model", "dataset", "batch", "gpus", "mem_mib", "est_horus_mib",
    "est_faketensor_mib", "est_gpumemnet_mib", "epochs", "epoch_min", "total_min", "size_class"};

struct row {
    char f[NSRC][256];
    char keep[NKEEP][256];
};

/* Measured solo SMACT for workload `name` from collocation-facts.csv: a row with case
 * "<name>-alone", gpu A100-40GB and metric "SM activity (SMACT) alone". */
static int measured_smact(const char *facts, size_t flen, const char *name, double *v)
{
    static struct carma_csv c;
    struct carma_err err;
    carma_csv_init(&c, facts, flen, "collocation-facts.csv", ',');
    if (carma_csv_next(&c, &err) != 1)
        return -1;
    int cc = carma_csv_col(&c, "case"), cg = carma_csv_col(&c, "gpu"),
        cm = carma_csv_col(&c, "metric"), cv = carma_csv_col(&c, "value");
    if (cc < 0 || cg < 0 || cm < 0 || cv < 0)
        return -1;
    char want[300];
    snprintf(want, sizeof want, "%.200s-alone", name);
    while (carma_csv_next(&c, &err) == 1) {
        if ((size_t)cv >= c.nfields)
            continue;
        if (strcmp(c.field[cc], want) == 0 && strcmp(c.field[cg], "A100-40GB") == 0 &&
            strcmp(c.field[cm], "SM activity (SMACT) alone") == 0)
            return carma_parse_double(c.field[cv], v);
    }
    return -1;
}

/* Least squares mem = a + b * batch over the distinct batch sizes of one model/dataset. */
static int fit(struct row *rows, size_t n, const char *model, const char *dataset, double *a,
               double *b, char *pts, size_t cap)
{
    double xs[16], ys[16];
    size_t k = 0;
    pts[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (strcmp(rows[i].f[1], model) || strcmp(rows[i].f[2], dataset))
            continue;
        double x = atof(rows[i].f[3]), y = atof(rows[i].f[5]);
        int dup = 0;
        for (size_t j = 0; j < k; j++)
            dup |= xs[j] == x;
        if (dup || k == 16)
            continue;
        xs[k] = x;
        ys[k] = y;
        size_t l = strlen(pts);
        snprintf(pts + l, cap - l, "%sb%.0f=%.0f", k ? " " : "", x, y);
        k++;
    }
    if (k < 2)
        return -1;
    double mx = 0, my = 0, sxx = 0, sxy = 0;
    for (size_t j = 0; j < k; j++) {
        mx += xs[j] / (double)k;
        my += ys[j] / (double)k;
    }
    for (size_t j = 0; j < k; j++) {
        sxx += (xs[j] - mx) * (xs[j] - mx);
        sxy += (xs[j] - mx) * (ys[j] - my);
    }
    *b = sxy / sxx;
    *a = my - *b * mx;
    return 0;
}

/* Gavel's isolated V100 throughput (steps/s, the "null" entries of
 * scheduler/oracle_throughputs.json in stanford-futuredata/gavel, MIT): Gavel made
 * each job's step count as duration x this figure, so steps / figure gives it back. */
static const struct {
    const char *name;
    double steps_per_s;
} gavel_v100[] = {
    {"ResNet-18 (batch size 16)", 77.3174},       {"ResNet-18 (batch size 32)", 65.8054},
    {"ResNet-18 (batch size 64)", 48.8842},       {"ResNet-18 (batch size 128)", 30.2875},
    {"ResNet-18 (batch size 256)", 16.9874},      {"ResNet-50 (batch size 16)", 17.3744},
    {"ResNet-50 (batch size 32)", 9.9206},        {"ResNet-50 (batch size 64)", 5.4576},
    {"ResNet-50 (batch size 128)", 2.8460},       {"Transformer (batch size 16)", 12.8457},
    {"Transformer (batch size 32)", 12.4753},     {"Transformer (batch size 64)", 9.5680},
    {"Transformer (batch size 128)", 5.7712},     {"Transformer (batch size 256)", 1.7070},
    {"A3C", 8.2330},                              {"LM (batch size 5)", 167.1229},
    {"LM (batch size 10)", 143.3605},             {"LM (batch size 20)", 107.9509},
    {"LM (batch size 40)", 71.7230},              {"LM (batch size 80)", 43.9036},
    {"Recommendation (batch size 512)", 0.33148}, {"Recommendation (batch size 1024)", 0.47998},
    {"Recommendation (batch size 2048)", 0.56753}, {"Recommendation (batch size 4096)", 0.62441},
    {"Recommendation (batch size 8192)", 0.60235}, {"CycleGAN", 4.9185},
};

static const char *steps_of(const char *name, char *buf, size_t cap)
{
    for (size_t i = 0; i < sizeof gavel_v100 / sizeof gavel_v100[0]; i++)
        if (strcmp(gavel_v100[i].name, name) == 0) {
            snprintf(buf, cap, "%.5g", gavel_v100[i].steps_per_s);
            return buf;
        }
    return "0";
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: gen_profiles WORKLOADS.csv COLLOCATION-FACTS.csv "
                        "MODEL-PROFILES.csv\n");
        return 2;
    }
    struct carma_err err;
    char *wbuf, *fbuf;
    size_t wlen, flen;
    if (carma_file_read(argv[1], 1 << 20, &wbuf, &wlen, &err) ||
        carma_file_read(argv[2], 1 << 20, &fbuf, &flen, &err)) {
        fprintf(stderr, "gen_profiles: %s\n", err.msg);
        return 1;
    }
    static struct carma_csv c;
    static struct row rows[MAXROWS];
    size_t n = 0;
    carma_csv_init(&c, wbuf, wlen, argv[1], ',');
    if (carma_csv_next(&c, &err) != 1) {
        fprintf(stderr, "gen_profiles: %s: no header\n", argv[1]);
        return 1;
    }
    int col[NSRC];
    for (int k = 0; k < NSRC; k++)
        if ((col[k] = carma_csv_col(&c, src_cols[k])) < 0) {
            fprintf(stderr, "gen_profiles: %s: missing column %s\n", argv[1], src_cols[k]);
            return 1;
        }
    /* Columns neither CARMA's nor the profile's (est_carma_mib, written by `carma
     * eval-estimator --catalog`): kept, in their order, after the profile columns. */
    static const char *const prof_cols[] = {"smact", "smocc", "drama", "ramp_s",
                                            "profile_source"};
    int keep[NKEEP], nkeep = 0;
    char keep_name[NKEEP][256];
    size_t ncols = c.nfields;
    for (size_t f = 0; f < ncols; f++) {
        int known = 0;
        for (int k = 0; k < NSRC; k++)
            known |= col[k] == (int)f;
        for (int k = 0; k < 5; k++)
            known |= strcmp(c.field[f], prof_cols[k]) == 0;
        if (known)
            continue;
        if (nkeep == NKEEP) {
            fprintf(stderr, "gen_profiles: %s: more than %d other columns\n", argv[1], NKEEP);
            return 1;
        }
        snprintf(keep_name[nkeep], sizeof keep_name[nkeep], "%s", c.field[f]);
        keep[nkeep++] = (int)f;
    }
    int rc;
    while ((rc = carma_csv_next(&c, &err)) == 1 && n < MAXROWS) {
        if (c.nfields != ncols) {
            fprintf(stderr, "gen_profiles: %s:%zu: %zu fields, the header has %zu\n", argv[1],
                    c.line, c.nfields, ncols);
            return 1;
        }
        for (int k = 0; k < NSRC; k++)
            snprintf(rows[n].f[k], sizeof rows[n].f[k], "%s", c.field[col[k]]);
        for (int k = 0; k < nkeep; k++)
            snprintf(rows[n].keep[k], sizeof rows[n].keep[k], "%s", c.field[keep[k]]);
        n++;
    }
    if (rc < 0) {
        fprintf(stderr, "gen_profiles: %s\n", err.msg);
        return 1;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
    FILE *o = fopen(tmp, "w");
    if (!o)
        return 1;
    for (int k = 0; k < NSRC; k++)
        fprintf(o, "%s,", src_cols[k]);
    fprintf(o, "smact,smocc,drama,ramp_s,profile_source");
    for (int k = 0; k < nkeep; k++) {
        fputc(',', o);
        carma_csv_put(o, keep_name[k]);
    }
    fputc('\n', o);
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < NSRC; k++) {
            carma_csv_put(o, rows[i].f[k]);
            fputc(',', o);
        }
        double m;
        const char *src = "rule:mem";
        char msrc[300];
        double s = sim_profile_smact(atof(rows[i].f[5]), SIM_PROFILE_CARMA_FLOOR_MIB);
        if (measured_smact(fbuf, flen, rows[i].f[0], &m) == 0) {
            s = m;
            snprintf(msrc, sizeof msrc, "measured:collocation-facts %.200s-alone", rows[i].f[0]);
            src = msrc;
        }
        float sf = (float)(floor(s * 1000.0 + 0.5) / 1000.0); /* as written */
        fprintf(o, "%.3f,%.3f,%.3f,%.0f,%s", (double)sf, (double)sim_profile_smocc(sf),
                (double)sim_profile_drama(sf), (double)SIM_PROFILE_RAMP_S, src);
        for (int k = 0; k < nkeep; k++) {
            fputc(',', o);
            carma_csv_put(o, rows[i].keep[k]);
        }
        fputc('\n', o);
    }
    if (fclose(o) || rename(tmp, argv[1])) {
        fprintf(stderr, "gen_profiles: cannot write %s\n", argv[1]);
        return 1;
    }

    /* Model profiles. */
    FILE *p = fopen(argv[3], "w");
    if (!p)
        return 1;
    fprintf(p, "name,base_mib,per_sample_mib,steps_per_s,source\n");
    char sb[64];
    struct fitrow {
        const char *names[8]; /* trace names that use this fit */
        const char *model, *dataset;
    } fits[] = {
        {{"resnet18", "ResNet-18 (batch size 16)", "ResNet-18 (batch size 32)",
          "ResNet-18 (batch size 64)", "ResNet-18 (batch size 128)", "ResNet-18 (batch size 256)"},
         "resnet18", "cifar100"},
        {{"ResNet-50 (batch size 16)", "ResNet-50 (batch size 32)", "ResNet-50 (batch size 64)",
          "ResNet-50 (batch size 128)"},
         "resnet50", "/raid/datasets/imagenet"},
        {{"vgg16"}, "vgg16", "/raid/datasets/imagenet"},
        {{"shufflenet_v2_x1_0"}, "mobilenet_v2", "/raid/datasets/imagenet"},
    };
    for (size_t f = 0; f < sizeof fits / sizeof fits[0]; f++) {
        double a, b;
        char pts[256];
        if (fit(rows, n, fits[f].model, fits[f].dataset, &a, &b, pts, sizeof pts)) {
            fprintf(stderr, "gen_profiles: no fit for %s\n", fits[f].model);
            return 1;
        }
        for (int k = 0; k < 8 && fits[f].names[k]; k++)
            fprintf(p, "%s,%.1f,%.3f,%s,fit:workloads.csv %s (%s)\n", fits[f].names[k], a, b,
                    steps_of(fits[f].names[k], sb, sizeof sb), fits[f].model, pts);
    }
    /* Models CARMA did not run at several batch sizes: documented assumptions
     * (docs/traces.md). base = CARMA's smallest footprint (590 MiB: CUDA context and
     * libraries) + 16 B per parameter (fp32 weights, gradients, Adam's two moments). */
    const double floor_mib = SIM_PROFILE_CARMA_FLOOR_MIB, mib = 1048576.0;
    const double bert_base = floor_mib + 110e6 * 16 / mib;
    double bert_mem = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].f[0], "BERT_base") == 0)
            bert_mem = atof(rows[i].f[5]);
    if (bert_mem <= 0) {
        fprintf(stderr, "gen_profiles: no BERT_base row\n");
        return 1;
    }
    const double bert_ps = (bert_mem - bert_base) / 32.0;
    double vb = 0, vp = 0;
    {
        char pts[256];
        fit(rows, n, "vgg16", "/raid/datasets/imagenet", &vb, &vp, pts, sizeof pts);
    }
    struct {
        const char *name;
        double base, ps;
        const char *src;
    } as[] = {
        {"bert", bert_base, bert_ps,
         "assume:BERT_base b32=19828 measured; base 590+110M params x16 B; rest per sample"},
        {"gpt2", floor_mib + 124e6 * 16 / mib, bert_ps,
         "assume:as bert (12 layers x 768 like BERT-base); base 590+124M params x16 B"},
        {"vgg19", vb * 143.7 / 138.4, vp * 14.85 / 13.55,
         "assume:vgg16 fit; base x params 143.7M/138.4M; per sample x conv outputs 14.85M/13.55M"},
        {"dqn", floor_mib + 1.7e6 * 16 / mib, 0.6,
         "assume:Atari Nature CNN 1.7M params; 4x84x84 input + activations ~0.6 MiB/sample"},
        {"a2c", floor_mib + 1.7e6 * 16 / mib, 0.6, "assume:as dqn (same Atari CNN)"},
        {"A3C", floor_mib + 1.7e6 * 16 / mib, 0.6, "assume:as dqn (same Atari CNN); batch 1"},
        {"CycleGAN", floor_mib + 28.3e6 * 16 / mib, 2000,
         "assume:2 generators + 2 discriminators 28.3M params; 256x256 activations ~2 GiB/image; batch 1"},
    };
    for (size_t k = 0; k < sizeof as / sizeof as[0]; k++)
        fprintf(p, "%s,%.1f,%.3f,%s,%s\n", as[k].name, as[k].base, as[k].ps,
                steps_of(as[k].name, sb, sizeof sb), as[k].src);
    /* Gavel job types with batch sizes. */
    struct {
        const char *model;
        double base, ps;
        int batch[5];
        const char *src;
    } gv[] = {
        {"Transformer", floor_mib + 50e6 * 16 / mib, 16,
         {16, 32, 64, 128, 256},
         "assume:6+6 layer d512 translation model ~50M params; ~30-token sentences ~16 MiB/sample"},
        {"LM", floor_mib + 13.5e6 * 16 / mib, 13.3,
         {5, 10, 20, 40, 80},
         "assume:2-layer LSTM LM on WikiText-2 13.5M params; bptt 35 x 33278-word logits ~13.3 MiB/sample"},
        {"Recommendation", floor_mib + 24.1e6 * 16 / mib, 0.38,
         {512, 1024, 2048, 4096, 8192},
         "assume:autoencoder CF on ML-20M 20108 items x600 hidden 24.1M params; ~0.38 MiB/sample"},
    };
    for (size_t k = 0; k < sizeof gv / sizeof gv[0]; k++)
        for (int q = 0; q < 5; q++)
        {
            char nm[128];
            snprintf(nm, sizeof nm, "%s (batch size %d)", gv[k].model, gv[k].batch[q]);
            fprintf(p, "%s,%.1f,%.3f,%s,%s\n", nm, gv[k].base, gv[k].ps,
                    steps_of(nm, sb, sizeof sb), gv[k].src);
        }
    if (fclose(p))
        return 1;
    free(wbuf);
    free(fbuf);
    return 0;
}
