/* carma eval-estimator: fits the estimator's coefficients on GPUMemNet's data
 * (--fit) and redoes GPUMemNet's evaluation honestly: an 80/20 split with a fixed
 * seed and k-fold cross-validation that refits per fold, on the MLP set and the
 * early CNN set, then checks the shipped table on real models measured by CARMA
 * (DIR/cifar-summaries, DIR/imagenet-tables, DIR/cnn-trees, DIR/hf-trees) with the
 * default and the fitted floor, and the replay on tensor peaks measured on the CPU
 * (DIR/cpu-peaks). */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "estimate/estimate.h"
#include "estimate/fit.h"
#include "estimate/parse.h"
#include "estimate/replay.h"
#include "sim/gpukind.h"
#include "util/csv.h"

#define EVAL_SEED 20240817ULL
#define EVAL_KFOLD 5
#define EVAL_CAL_FOLDS 5
#define EVAL_MAX_ROWS 100000
#define EVAL_MAX_FILE (64u << 20)
#define A100_40GB_MIB 40960.0

enum { DS_MLP = 0, DS_CNN = 1, DS_COUNT };
static const char *const ds_name[DS_COUNT] = {"MLP", "CNN (early, successful runs)"};

struct dataset {
    struct est_sample *s;
    size_t n, cap;
    size_t skipped_status, skipped_invalid;
};

/* "key:value" token of a GPUMemNet file name ("input:2346_output:197_..."). */
static int name_token(const char *name, const char *key, uint64_t *out)
{
    size_t k = strlen(key);
    for (const char *p = name; (p = strstr(p, key)) != NULL; p++) {
        if (p != name && p[-1] != '_')
            continue;
        if (p[k] != ':')
            continue;
        char *end;
        unsigned long long v = strtoull(p + k + 1, &end, 10);
        if (!isdigit((unsigned char)p[k + 1]) || (*end != '_' && *end != '.' && *end != 0))
            return -EINVAL;
        *out = v;
        return 0;
    }
    return -ENOENT;
}

static int load_dataset(const char *path, int ds, struct dataset *d, struct carma_err *err)
{
    char *buf;
    size_t len;
    int rc = carma_file_read(path, EVAL_MAX_FILE, &buf, &len, err);
    if (rc < 0)
        return rc;
    struct carma_csv *c = calloc(1, sizeof *c);
    struct est_layer *layers = calloc(4096, sizeof *layers);
    struct est_replay_work *work = malloc(sizeof *work);
    if (!c || !layers || !work) {
        free(c);
        free(layers);
        free(work);
        free(buf);
        return carma_err_set(err, -ENOMEM, "out of memory");
    }
    carma_csv_init(c, buf, len, path, ',');
    rc = carma_csv_next(c, err);
    int cf = -1, ct = -1, cb = -1, cy = -1, cs = -1;
    if (rc == 1 && carma_csv_header_unique(c, err) < 0)
        rc = -EINVAL;
    if (rc == 1) {
        cf = carma_csv_col(c, "Filename");
        ct = carma_csv_col(c, "Activations-Params");
        cb = carma_csv_col(c, "Batch Size");
        cy = carma_csv_col(c, "Max GPU Memory (MiB)");
        cs = carma_csv_col(c, "Status");
        if (cf < 0 || ct < 0 || cb < 0 || cy < 0)
            rc = carma_err_at(err, path, 1, "not a GPUMemNet measurement CSV");
    } else if (rc == 0) {
        rc = carma_err_at(err, path, 1, "empty");
    }
    while (rc >= 0 && (rc = carma_csv_next(c, err)) == 1) {
        if (d->n >= EVAL_MAX_ROWS) {
            rc = carma_err_at(err, path, c->line, "more than %d rows", EVAL_MAX_ROWS);
            break;
        }
        if (cs >= 0 && strcmp(c->field[cs], "SUCCESSFUL") != 0) {
            d->skipped_status++;
            continue;
        }
        uint64_t batch;
        double y;
        if (carma_parse_u64(c->field[cb], &batch) < 0 || batch == 0 || batch > EST_MAX_BATCH ||
            carma_parse_double(c->field[cy], &y) < 0) {
            rc = carma_err_at(err, path, c->line, "bad batch size or memory");
            break;
        }
        struct est_model m;
        est_model_init(&m, layers, 4096);
        const char *t = c->field[ct];
        if (strcmp(t, "[]") == 0 || y <= 0) {
            d->skipped_invalid++; /* a run without layers or memory: no valid label */
            continue;
        }
        rc = est_tuples_parse(t, strlen(t), path, c->line, &m, err);
        if (rc < 0)
            break;
        if (m.params == 0) {
            d->skipped_invalid++;
            continue;
        }
        uint64_t input = 0, ch, sz;
        if (ds == DS_MLP) {
            if (name_token(c->field[cf], "input", &input) < 0)
                input = 0;
        } else if (name_token(c->field[cf], "input_channels", &ch) == 0 &&
                   name_token(c->field[cf], "input_size", &sz) == 0 && sz < 65536) {
            input = ch * sz * sz;
        }
        if (d->n == d->cap) {
            size_t nc = d->cap ? d->cap * 2 : 1024;
            struct est_sample *ns = realloc(d->s, nc * sizeof *ns);
            if (!ns) {
                rc = carma_err_set(err, -ENOMEM, "out of memory");
                break;
            }
            d->s = ns;
            d->cap = nc;
        }
        if (est_sample_make(&m, (uint32_t)batch, input, y, A100_40GB_MIB, work,
                            &d->s[d->n]) < 0) {
            rc = carma_err_at(err, path, c->line, "too many tensors to replay");
            break;
        }
        d->s[d->n].dataset = (uint8_t)ds;
        d->n++;
    }
    free(layers);
    free(work);
    free(c);
    free(buf);
    return rc < 0 ? rc : 0;
}

struct figures {
    size_t n, c1, c2, c8, above, censored;
    double abs_err, rel_err, max_under;
    double bound_ratio; /* sum of bound / measured */
};

static void score(const struct est_coef *c, const struct est_sample *s, struct figures *f)
{
    double yhat = est_sample_predict(c, s);
    double dyn = yhat - c->floor_mib[s->family];
    if (dyn < 0)
        dyn = 0;
    double bound = est_bound(c, (enum est_family)s->family, yhat, dyn, 1);
    f->n++;
    f->c1 += est_same_class(yhat, s->y, 1024);
    f->c2 += est_same_class(yhat, s->y, 2048);
    f->c8 += est_same_class(yhat, s->y, 8192);
    f->abs_err += fabs(yhat - s->y);
    f->rel_err += fabs(yhat - s->y) / s->y;
    f->bound_ratio += bound / s->y;
    if (s->y > bound && !s->censored)
        f->above++;
    if (s->censored)
        f->censored++;
    if (s->y - yhat > f->max_under)
        f->max_under = s->y - yhat;
}

static void print_figures(const char *what, const struct figures *f, int ds)
{
    double n = f->n ? (double)f->n : 1;
    printf("  %-34s rows %5zu  MAE %8.1f MiB  MAPE %5.1f%%  ", what, f->n, f->abs_err / n,
           100 * f->rel_err / n);
    if (ds == DS_MLP)
        printf("acc@1GB %.4f  acc@2GB %.4f", f->c1 / n, f->c2 / n);
    else
        printf("acc@8GB %.4f  acc@1GB %.4f", f->c8 / n, f->c1 / n);
    printf("  above bound %zu  bound/peak %.2f\n", f->above, f->bound_ratio / n);
}

/* Fits and calibrates on the rows with use[i], from the fixed prior (est_fit_prior), never
 * from the shipped table: the fit reproduces that table from the data and the prior. */
static int fit_all(const struct est_sample *s, size_t n, const uint8_t *use, struct est_coef *c)
{
    int rc = est_fit(s, n, use, est_fit_prior(), c);
    if (rc < 0)
        return rc;
    double *work = malloc(2 * (n ? n : 1) * sizeof *work);
    uint8_t *fold = malloc(n ? n : 1);
    if (!work || !fold) {
        free(work);
        free(fold);
        return -ENOMEM;
    }
    rc = est_calibrate(s, n, use, EVAL_CAL_FOLDS, EVAL_SEED, 0, est_fit_prior(), c, work,
                       fold);
    free(work);
    free(fold);
    return rc;
}

/* A folder of real models: its index CSV, read, and the buffers its rows are parsed and
 * replayed in. */
struct real_set {
    char path[4096];
    char *buf;
    struct carma_csv *csv;
    struct est_layer *layers;
    struct est_replay_work *work;
};

static void set_close(struct real_set *s)
{
    free(s->layers);
    free(s->work);
    free(s->csv);
    free(s->buf);
}

/* Opens DIR/SUB/INDEX and reads its header: 0, else (everything released) 1 out of
 * memory, 2 unreadable. */
static int set_open(struct real_set *s, const char *dir, const char *sub, const char *index)
{
    memset(s, 0, sizeof *s);
    snprintf(s->path, sizeof s->path, "%s/%s/%s", dir, sub, index);
    struct carma_err err;
    size_t len;
    int rc = 2;
    if (carma_file_read(s->path, 1 << 20, &s->buf, &len, &err) < 0) {
        fprintf(stderr, "carma eval-estimator: %s\n", err.msg);
        goto fail;
    }
    s->csv = calloc(1, sizeof *s->csv);
    s->layers = calloc(EST_MAX_LAYERS, sizeof *s->layers);
    s->work = malloc(sizeof *s->work);
    if (!s->csv || !s->layers || !s->work) {
        rc = 1;
        goto fail;
    }
    carma_csv_init(s->csv, s->buf, len, s->path, ',');
    if (carma_csv_next(s->csv, &err) != 1) {
        fprintf(stderr, "carma eval-estimator: %s: bad header\n", s->path);
        goto fail;
    }
    if (carma_csv_header_unique(s->csv, &err) < 0) {
        fprintf(stderr, "carma eval-estimator: %s\n", err.msg);
        goto fail;
    }
    return 0;
fail:
    set_close(s);
    return rc;
}

/* Parses the summary DIR/SUB/NAME into m, at an image size. */
static int set_parse(struct real_set *s, const char *dir, const char *sub, const char *name,
                     uint32_t image, int tie_head, struct est_model *m, struct carma_err *err)
{
    char sp[4096];
    snprintf(sp, sizeof sp, "%s/%s/%s", dir, sub, name);
    char *sb;
    size_t sl;
    est_model_init(m, s->layers, EST_MAX_LAYERS);
    m->image_h = m->image_w = image;
    m->tie_head = tie_head;
    if (carma_file_read(sp, EST_MAX_INPUT, &sb, &sl, err) < 0)
        return -1;
    int rc = est_parse(sb, sl, sp, m, err);
    free(sb);
    return rc;
}

/* Whether a run of m (parsed without --tied-head) tied its output head to its token
 * table: its unique parameters, run_params, are the print's less the table. */
static int run_tied(const struct est_model *m, uint64_t run_params)
{
    return m->head_table_line && m->params - m->head_table_rows * m->head_table_width == run_params;
}

/* The columns of a DIR/SUB/labels.csv: summary, batch, optimizer, precision, peak_mib,
 * and optionally gpumemnet_mib, seq_len, image_size (-1 when absent). */
struct label_cols {
    int s, b, o, p, y, g, q, i;
};

/* Finds them in the header just read: 0, or -1 when a required one is missing. */
static int label_cols_find(const struct carma_csv *csv, struct label_cols *k)
{
    k->s = carma_csv_col(csv, "summary");
    k->b = carma_csv_col(csv, "batch");
    k->o = carma_csv_col(csv, "optimizer");
    k->p = carma_csv_col(csv, "precision");
    k->y = carma_csv_col(csv, "peak_mib");
    k->g = carma_csv_col(csv, "gpumemnet_mib");
    k->q = carma_csv_col(csv, "seq_len");
    k->i = carma_csv_col(csv, "image_size");
    return k->s < 0 || k->b < 0 || k->o < 0 || k->p < 0 || k->y < 0 ? -1 : 0;
}

/* Reads the current row of a labels.csv: the run's options into *o (batch, sequence
 * length, optimizer, precision; the rest left as they are), its measured peak, GPUMemNet's
 * answer (0 without the column) and the image size (0 without it). -1 on a bad row. */
static int label_row(const struct carma_csv *csv, const struct label_cols *k, struct est_opts *o,
                     double *peak, double *gmn, uint64_t *image)
{
    uint64_t batch, seq = 0;
    *gmn = 0;
    *image = 0;
    if (carma_parse_u64(csv->field[k->b], &batch) < 0 || batch > EST_MAX_BATCH ||
        carma_parse_double(csv->field[k->y], peak) < 0 || !(*peak > 0) ||
        est_optimizer_parse(csv->field[k->o], &o->optimizer) < 0 ||
        est_precision_parse(csv->field[k->p], &o->precision) < 0 ||
        (k->g >= 0 && (carma_parse_double(csv->field[k->g], gmn) < 0 || !(*gmn > 0))) ||
        (k->q >= 0 && (carma_parse_u64(csv->field[k->q], &seq) < 0 || seq > EST_MAX_SEQ)) ||
        (k->i >= 0 && (carma_parse_u64(csv->field[k->i], image) < 0 || *image > 65536)) ||
        strchr(csv->field[k->s], '/'))
        return -1;
    o->batch = (uint32_t)batch;
    o->seq = (uint32_t)seq;
    return 0;
}

/* Real models measured by CARMA (A100-40GB): DIR/SUB/labels.csv lists summary, batch,
 * optimizer, precision, peak_mib and optionally gpumemnet_mib (GPUMemNet's answer for
 * the same run, from CARMA's catalog). Prints each estimate and bound against the peak,
 * clears *all_ok when a bound is below its peak. */
static int real_check(const char *dir, const char *sub, const char *title,
                      const struct est_coef *c, enum est_floor_src floor_src, int *all_ok)
{
    struct real_set set;
    struct carma_err err;
    int ret = set_open(&set, dir, sub, "labels.csv");
    if (ret)
        return ret;
    struct carma_csv *csv = set.csv;
    int rc;
    struct label_cols k;
    if (label_cols_find(csv, &k) < 0) {
        fprintf(stderr, "carma eval-estimator: %s: bad header\n", set.path);
        ret = 2;
        goto out;
    }
    int cq = k.q, cg = k.g;
    printf("\n%s, floor %s:\n", title,
           floor_src == EST_FLOOR_FITTED ? "fitted (GPUMemNet's environment)"
                                         : "default (CARMA's environment)");
    printf("  %-30s %5s%s %-9s %9s %9s %9s %6s %6s%s\n", "summary", "batch",
           cq >= 0 ? "   seq" : "", "optimizer", "estimate", "bound", "peak", "est/pk", "bnd/pk",
           cg >= 0 ? "  GPUMemNet/pk" : "");
    double sum_ratio = 0, sum_bound = 0, sum_gmn = 0;
    size_t cnt = 0;
    while ((rc = carma_csv_next(csv, &err)) == 1) {
        uint64_t image;
        double peak, gmn;
        struct est_opts o = {.floor_src = floor_src};
        if (label_row(csv, &k, &o, &peak, &gmn, &image) < 0) {
            fprintf(stderr, "carma eval-estimator: %s:%zu: bad row\n", set.path, csv->line);
            ret = 2;
            goto out;
        }
        struct est_model m;
        struct est_result r;
        if (set_parse(&set, dir, sub, csv->field[k.s], (uint32_t)image, 0, &m, &err) < 0 ||
            est_compute(&m, c, &o, set.work, &r, &err) < 0) {
            fprintf(stderr, "carma eval-estimator: %s\n", err.msg);
            ret = 2;
            goto out;
        }
        int ok = r.bound_mib >= peak;
        if (!ok)
            *all_ok = 0;
        sum_ratio += r.estimate_mib / peak;
        sum_bound += r.bound_mib / peak;
        sum_gmn += gmn / peak;
        cnt++;
        printf("  %-30s %5u", csv->field[k.s], o.batch);
        if (cq >= 0)
            printf(" %5u", o.seq);
        printf(" %-9s %9.0f %9.0f %9.0f %6.2f %6.2f", est_optimizer_name(o.optimizer),
               r.estimate_mib, r.bound_mib, peak, r.estimate_mib / peak, r.bound_mib / peak);
        if (cg >= 0)
            printf("  %12.2f", gmn / peak);
        printf("%s\n", ok ? "" : "  BOUND BELOW THE PEAK");
    }
    if (rc < 0) {
        fprintf(stderr, "carma eval-estimator: %s\n", err.msg);
        ret = 2;
    }
    if (cnt) {
        printf("  mean estimate/peak %.2f, bound/peak %.2f", sum_ratio / (double)cnt,
               sum_bound / (double)cnt);
        if (cg >= 0)
            printf("; GPUMemNet's answer/peak %.2f", sum_gmn / (double)cnt);
        printf("\n");
    }
out:
    set_close(&set);
    return ret;
}

/* DIR/cpu-peaks: the replay's peak of live tensor bytes against the one measured on the
 * CPU (tools/cpu_peaks.py: AdamW, fp32, eager attention), full training and LoRA. A run
 * whose model tied its output head to its token table (its unique parameters, the
 * `params` column, are the print's less the table) is replayed with --tied-head too. */
static int cpu_peaks_check(const char *dir)
{
    struct real_set set;
    struct carma_err err;
    int ret = set_open(&set, dir, "cpu-peaks", "index.csv");
    if (ret)
        return ret;
    struct carma_csv *csv = set.csv;
    int rc;
    int cs = carma_csv_col(csv, "summary"), cb = carma_csv_col(csv, "batch"),
        cq = carma_csv_col(csv, "seq_len"), cy = carma_csv_col(csv, "peak_mib"),
        ck = carma_csv_col(csv, "checkpointing"), ci = carma_csv_col(csv, "image_size"),
        cn = carma_csv_col(csv, "gpus"), cp = carma_csv_col(csv, "params");
    if (cs < 0 || cb < 0 || cq < 0 || cy < 0 || ck < 0 || ci < 0 || cn < 0 || cp < 0) {
        fprintf(stderr, "carma eval-estimator: %s: bad header\n", set.path);
        ret = 2;
        goto out;
    }
    printf("\nTensor peaks measured on the CPU (two AdamW steps, fp32, eager attention; "
           "cpu-peaks/; gc: gradient checkpointing; ddp: DistributedDataParallel processes,\n"
           "rank 0's tensors), against the replay's:\n");
    printf("  %-30s %5s %5s %3s %3s %12s %9s %9s %7s\n", "summary", "batch", "seq", "gc", "ddp",
           "trained", "measured", "replay", "rep/ms");
    double lo = 1e9, hi = 0, tlo = 1e9, thi = 0;
    while ((rc = carma_csv_next(csv, &err)) == 1) {
        uint64_t batch, seq, gc, image, gpus, run_params;
        double peak;
        if (carma_parse_u64(csv->field[cb], &batch) < 0 || batch == 0 || batch > EST_MAX_BATCH ||
            carma_parse_u64(csv->field[ck], &gc) < 0 || gc > 1 ||
            carma_parse_u64(csv->field[cn], &gpus) < 0 || gpus == 0 || gpus > EST_MAX_GPUS ||
            carma_parse_u64(csv->field[ci], &image) < 0 || image > 65536 ||
            carma_parse_u64(csv->field[cq], &seq) < 0 || seq > EST_MAX_SEQ ||
            carma_parse_double(csv->field[cy], &peak) < 0 || !(peak > 0) ||
            carma_parse_u64(csv->field[cp], &run_params) < 0 || strchr(csv->field[cs], '/')) {
            fprintf(stderr, "carma eval-estimator: %s:%zu: bad row\n", set.path, csv->line);
            ret = 2;
            goto out;
        }
        for (int tie = 0; tie < 2; tie++) {
            struct est_model m;
            if (set_parse(&set, dir, "cpu-peaks", csv->field[cs], (uint32_t)image, tie, &m, &err) <
                0) {
                fprintf(stderr, "carma eval-estimator: %s\n", err.msg);
                ret = 2;
                goto out;
            }
            struct est_opts o = {.batch = (uint32_t)batch,
                                 .seq = m.tokens ? m.tokens : (uint32_t)seq,
                                 .optimizer = EST_OPT_ADAMW,
                                 .grad_checkpoint = (int)gc,
                                 .gpus = (uint32_t)gpus};
            struct est_replay_result r;
            if (est_replay(&m, &o, set.work, &r) < 0) {
                fprintf(stderr, "carma eval-estimator: %s: too many tensors to replay\n",
                        csv->field[cs]);
                ret = 2;
                goto out;
            }
            double ratio = r.peak_allocated_mib / peak;
            double *l = tie ? &tlo : &lo, *h = tie ? &thi : &hi;
            *l = ratio < *l ? ratio : *l;
            *h = ratio > *h ? ratio : *h;
            if (tie)
                printf("  %-30s %5s %5s %3s %3s %12llu %9s %9.1f %7.3f\n", "  --tied-head", "", "",
                       "", "", (unsigned long long)(m.params - m.frozen), "", r.peak_allocated_mib,
                       ratio);
            else
                printf("  %-30s %5u %5u %3s %3u %12llu %9.1f %9.1f %7.3f\n", csv->field[cs],
                       o.batch, o.seq, gc ? "yes" : "no", o.gpus,
                       (unsigned long long)(m.params - m.frozen), peak, r.peak_allocated_mib,
                       ratio);
            if (tie || !run_tied(&m, run_params))
                break;
        }
    }
    if (rc < 0) {
        fprintf(stderr, "carma eval-estimator: %s\n", err.msg);
        ret = 2;
    } else if (hi > 0) {
        printf("  replay / measured: %.3f to %.3f\n", lo, hi);
        if (thi > 0)
            printf("  with --tied-head where the run tied its output head: %.3f to %.3f\n", tlo,
                   thi);
    }
out:
    set_close(&set);
    return ret;
}

/* DIR/SUB/index.csv (tools/gpu_peaks.py): training peaks measured on a GPU of `kind`
 * (NVML's per-process memory), against `carma estimate --gpu KIND` with the run's options.
 * Rows whose status is not "ok" (the harness failed) and the floor row (no summary) are
 * skipped; a summary the estimator refuses is listed with the reason, not an error.
 * Clears *all_ok when a bound is below its peak. */
static int gpu_peaks_check(const char *dir, const char *sub, const char *device,
                           const char *kind_name, int *all_ok)
{
    const struct sim_gpu_kind *kind = sim_gpu_kind_find(kind_name);
    struct real_set set;
    struct carma_err err;
    int ret = set_open(&set, dir, sub, "index.csv");
    if (ret || !kind)
        return ret ? ret : 2;
    struct carma_csv *csv = set.csv;
    int rc;
    int cs = carma_csv_col(csv, "summary"), cb = carma_csv_col(csv, "batch"),
        cq = carma_csv_col(csv, "seq_len"), ci = carma_csv_col(csv, "image_size"),
        cp = carma_csv_col(csv, "precision"), co = carma_csv_col(csv, "optimizer"),
        ck = carma_csv_col(csv, "checkpointing"), ca = carma_csv_col(csv, "attention"),
        cy = carma_csv_col(csv, "peak_mib"), ct = carma_csv_col(csv, "status"),
        cpar = carma_csv_col(csv, "params");
    if (cs < 0 || cb < 0 || cq < 0 || ci < 0 || cp < 0 || co < 0 || ck < 0 || ca < 0 || cy < 0 ||
        ct < 0 || cpar < 0) {
        fprintf(stderr, "carma eval-estimator: %s: bad header\n", set.path);
        ret = 2;
        goto out;
    }
    printf("\nTraining peaks measured on an %s (%s/: nvidia-smi's memory of the process, "
           "four AdamW steps;\nattention sdpa where the run used it), against "
           "`carma estimate --gpu %s`:\n", device, sub, kind->name);
    printf("  %-34s %5s %5s %5s %-5s %9s %9s %9s %6s %6s\n", "summary", "batch", "seq", "image",
           "prec", "estimate", "bound", "peak", "est/pk", "bnd/pk");
    double sum_e = 0, sum_b = 0, lo = 1e9;
    double tie_e0 = 0, tie_e1 = 0, tie_b0 = 0, tie_b1 = 0; /* the runs whose head was tied */
    size_t cnt = 0, refused = 0, ntied = 0;
    char sp[4096];
    while ((rc = carma_csv_next(csv, &err)) == 1) {
        if (strcmp(csv->field[ct], "ok") != 0 || !csv->field[cs][0])
            continue;
        uint64_t batch, seq, image, gc, run_params;
        double peak;
        struct est_opts o = {0};
        sim_gpu_kind_est_opts(kind, &o);
        if (carma_parse_u64(csv->field[cb], &batch) < 0 || batch == 0 || batch > EST_MAX_BATCH ||
            carma_parse_u64(csv->field[cq], &seq) < 0 || seq > EST_MAX_SEQ ||
            carma_parse_u64(csv->field[ci], &image) < 0 || image > 65536 ||
            carma_parse_u64(csv->field[ck], &gc) < 0 || gc > 1 ||
            est_precision_parse(csv->field[cp], &o.precision) < 0 ||
            est_optimizer_parse(csv->field[co], &o.optimizer) < 0 ||
            (csv->field[ca][0] && est_attention_parse(csv->field[ca], &o.attention) < 0) ||
            carma_parse_double(csv->field[cy], &peak) < 0 || !(peak > 0) ||
            carma_parse_u64(csv->field[cpar], &run_params) < 0 || strchr(csv->field[cs], '/')) {
            fprintf(stderr, "carma eval-estimator: %s:%zu: bad row\n", set.path, csv->line);
            ret = 2;
            goto out;
        }
        o.batch = (uint32_t)batch;
        o.seq = (uint32_t)seq;
        o.grad_checkpoint = (int)gc;
        snprintf(sp, sizeof sp, "%s/%s/%s", dir, sub, csv->field[cs]);
        char *sb;
        size_t sl;
        struct est_model m;
        struct est_result r;
        est_model_init(&m, set.layers, EST_MAX_LAYERS);
        m.image_h = m.image_w = (uint32_t)image;
        if (carma_file_read(sp, EST_MAX_INPUT, &sb, &sl, &err) < 0) {
            fprintf(stderr, "carma eval-estimator: %s\n", err.msg);
            ret = 2;
            goto out;
        }
        int prc = est_model_prepare(&m, sb, sl, csv->field[cs], &o, &err);
        if (prc == 0)
            prc = est_compute(&m, est_coef_default(), &o, set.work, &r, &err);
        if (prc < 0) {
            free(sb);
            refused++;
            printf("  %-34s refused: %.90s\n", csv->field[cs], err.msg);
            continue;
        }
        /* A run whose model tied its output head to its token table (its unique
         * parameters are the print's less the table): as its user would give it, also
         * with --tied-head */
        struct est_result rt = {0};
        int tied = run_tied(&m, run_params);
        if (tied) {
            est_model_init(&m, set.layers, EST_MAX_LAYERS);
            m.image_h = m.image_w = (uint32_t)image;
            m.tie_head = 1;
            if (est_model_prepare(&m, sb, sl, csv->field[cs], &o, &err) < 0 ||
                est_compute(&m, est_coef_default(), &o, set.work, &rt, &err) < 0) {
                free(sb);
                fprintf(stderr, "carma eval-estimator: %s: --tied-head: %s\n", sp, err.msg);
                ret = 2;
                goto out;
            }
        }
        free(sb);
        int ok = r.bound_mib >= peak;
        if (!ok)
            *all_ok = 0;
        sum_e += r.estimate_mib / peak;
        sum_b += r.bound_mib / peak;
        lo = r.estimate_mib / peak < lo ? r.estimate_mib / peak : lo;
        cnt++;
        printf("  %-34s %5u %5u %5u %-5s %9.0f %9.0f %9.0f %6.2f %6.2f%s\n", csv->field[cs],
               o.batch, o.seq, (unsigned)image, est_precision_name(o.precision), r.estimate_mib,
               r.bound_mib, peak, r.estimate_mib / peak, r.bound_mib / peak,
               ok ? "" : "  BOUND BELOW THE PEAK");
        if (tied) {
            int tok = rt.bound_mib >= peak;
            if (!tok)
                *all_ok = 0;
            ntied++;
            tie_e0 += r.estimate_mib / peak;
            tie_b0 += r.bound_mib / peak;
            tie_e1 += rt.estimate_mib / peak;
            tie_b1 += rt.bound_mib / peak;
            printf("  %-34s %29s %9.0f %9.0f %9s %6.2f %6.2f%s\n", "  --tied-head", "",
                   rt.estimate_mib, rt.bound_mib, "", rt.estimate_mib / peak, rt.bound_mib / peak,
                   tok ? "" : "  BOUND BELOW THE PEAK");
        }
    }
    if (rc < 0) {
        fprintf(stderr, "carma eval-estimator: %s\n", err.msg);
        ret = 2;
    } else if (cnt) {
        printf("  %zu estimated, %zu refused; mean estimate/peak %.2f (lowest %.2f), "
               "bound/peak %.2f\n", cnt, refused, sum_e / (double)cnt, lo, sum_b / (double)cnt);
        if (ntied)
            printf("  %zu runs tied their output head to the token table (their unique "
                   "parameters say so): with --tied-head\n  mean estimate/peak %.2f -> %.2f, "
                   "bound/peak %.2f -> %.2f\n",
                   ntied, tie_e0 / (double)ntied, tie_e1 / (double)ntied, tie_b0 / (double)ntied,
                   tie_b1 / (double)ntied);
    }
out:
    set_close(&set);
    return ret;
}

/* ---- --catalog: carma's bound for the workloads of a catalog (est_carma_mib) ---- */

#define EVAL_MAP_FILE "carma-workloads.csv"
#define EVAL_MAX_MAP 256

/* A row of DIR/carma-workloads.csv: the catalog workloads of this model, dataset and
 * batch ran as the run of DIR/SET/labels.csv with this summary and batch. */
struct map_row {
    char model[128], dataset[256], set[64], summary[256];
    uint64_t batch;
    size_t line;
    double bound, peak; /* carma's bound for that run, and the peak CARMA measured */
};

/* carma's bound for the run that map row r names: the row of DIR/SET/labels.csv with its
 * summary and batch gives the optimizer, precision, sequence length and image size
 * (as in real_check); the shipped table and the default floor, as `carma estimate`
 * answers by default. 0, or 2 with the message printed. */
static int map_bound(const char *dir, const char *mapfile, struct map_row *r)
{
    struct real_set set;
    struct carma_err err;
    int ret = set_open(&set, dir, r->set, "labels.csv");
    if (ret)
        return ret == 1 ? 2 : ret;
    struct carma_csv *csv = set.csv;
    struct label_cols k;
    int rc, found = 0;
    if (label_cols_find(csv, &k) < 0) {
        fprintf(stderr, "carma eval-estimator: %s: bad header\n", set.path);
        ret = 2;
        goto out;
    }
    while (!found && (rc = carma_csv_next(csv, &err)) == 1) {
        uint64_t image;
        double gmn;
        struct est_opts o = {.floor_src = EST_FLOOR_DEFAULT};
        if (label_row(csv, &k, &o, &r->peak, &gmn, &image) < 0) {
            fprintf(stderr, "carma eval-estimator: %s:%zu: bad row\n", set.path, csv->line);
            ret = 2;
            goto out;
        }
        if (strcmp(csv->field[k.s], r->summary) != 0 || o.batch != r->batch)
            continue;
        found = 1;
        struct est_model m;
        struct est_result res;
        if (set_parse(&set, dir, r->set, r->summary, (uint32_t)image, 0, &m, &err) < 0 ||
            est_compute(&m, est_coef_default(), &o, set.work, &res, &err) < 0) {
            fprintf(stderr, "carma eval-estimator: %s\n", err.msg);
            ret = 2;
            goto out;
        }
        r->bound = res.bound_mib;
    }
    if (rc < 0) {
        fprintf(stderr, "carma eval-estimator: %s\n", err.msg);
        ret = 2;
    } else if (!found) {
        fprintf(stderr,
                "carma eval-estimator: %s:%zu: %s has no row for summary '%s' at batch %llu\n",
                mapfile, r->line, set.path, r->summary, (unsigned long long)r->batch);
        ret = 2;
    }
out:
    set_close(&set);
    return ret;
}

/* Reads DIR/carma-workloads.csv into map[] and works out each row's bound. 0, or 2 with
 * the message printed. */
static int map_load(const char *dir, struct map_row *map, size_t *n, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", dir, EVAL_MAP_FILE);
    static const char *const names[] = {"model", "dataset", "batch", "set", "summary"};
    struct carma_err err;
    char *buf;
    size_t len;
    if (carma_file_read(path, 1 << 20, &buf, &len, &err) < 0) {
        fprintf(stderr, "carma eval-estimator: %s\n", err.msg);
        return 2;
    }
    struct carma_csv *c = malloc(sizeof *c);
    int ret = 0, rc, col[5];
    if (!c) {
        free(buf);
        return 1;
    }
    carma_csv_init(c, buf, len, path, ',');
    rc = carma_csv_header(c, names, 5, 5, col, "(model,dataset,batch,set,summary)", &err);
    *n = 0;
    while (rc >= 0 && (rc = carma_csv_next(c, &err)) == 1) {
        struct map_row *r = &map[*n];
        const char *what = NULL;
        if (*n == EVAL_MAX_MAP) {
            fprintf(stderr, "carma eval-estimator: %s:%zu: more than %d rows\n", path, c->line,
                    EVAL_MAX_MAP);
            ret = 2;
            break;
        }
        if (c->nfields != 5)
            what = "not 5 fields";
        else if (carma_parse_u64(c->field[col[2]], &r->batch) < 0 || r->batch == 0 ||
                 r->batch > EST_MAX_BATCH)
            what = "batch is not a whole number from 1 to the estimator's largest";
        else if (!c->field[col[0]][0] || strlen(c->field[col[0]]) >= sizeof r->model ||
                 strlen(c->field[col[1]]) >= sizeof r->dataset)
            what = "model empty, or model or dataset too long";
        else if (!c->field[col[3]][0] || strchr(c->field[col[3]], '/') ||
                 c->field[col[3]][0] == '.' || strlen(c->field[col[3]]) >= sizeof r->set ||
                 !c->field[col[4]][0] || strchr(c->field[col[4]], '/') ||
                 strlen(c->field[col[4]]) >= sizeof r->summary)
            what = "set and summary must be file names inside DIR (no '/')";
        for (size_t i = 0; !what && i < *n; i++)
            if (!strcmp(map[i].model, c->field[col[0]]) &&
                !strcmp(map[i].dataset, c->field[col[1]]) && map[i].batch == r->batch)
                what = "this model, dataset and batch are mapped twice";
        if (what) {
            fprintf(stderr, "carma eval-estimator: %s:%zu: %s\n", path, c->line, what);
            ret = 2;
            break;
        }
        snprintf(r->model, sizeof r->model, "%s", c->field[col[0]]);
        snprintf(r->dataset, sizeof r->dataset, "%s", c->field[col[1]]);
        snprintf(r->set, sizeof r->set, "%s", c->field[col[3]]);
        snprintf(r->summary, sizeof r->summary, "%s", c->field[col[4]]);
        r->line = c->line;
        (*n)++;
    }
    if (ret == 0 && rc < 0) {
        fprintf(stderr, "carma eval-estimator: %s\n", err.msg);
        ret = 2;
    }
    free(c);
    free(buf);
    for (size_t i = 0; ret == 0 && i < *n; i++)
        ret = map_bound(dir, path, &map[i]);
    return ret;
}

/* --catalog FILE: writes est_carma_mib into the workload catalog FILE (in place, through
 * FILE.tmp): for each workload whose model, dataset and batch DIR/carma-workloads.csv maps
 * to a summary, carma's bound for that run rounded up to whole MiB; empty for the others.
 * Every other field is kept (rewritten by carma_csv_put, as tools/gen_profiles.c writes them);
 * the column is added at the end when FILE has none. A mapped run's measured peak must be
 * the workload's mem_mib (else the map names another run: exit 2). Exit 1, after writing,
 * when a bound is below the workload's mem_mib. */
static int catalog_write(const char *dir, const char *file)
{
    struct map_row *map = calloc(EVAL_MAX_MAP, sizeof *map);
    char mpath[4096];
    size_t nmap = 0;
    if (!map)
        return 1;
    /* The output goes to FILE.tmp, renamed over FILE: a name that does not fit would
     * write elsewhere (or not at all). */
    char tmp[PATH_MAX];
    int tl = snprintf(tmp, sizeof tmp, "%s.tmp", file);
    if (tl < 0 || (size_t)tl >= sizeof tmp) {
        fprintf(stderr,
                "carma eval-estimator: %s: path too long for its temporary file %s.tmp (at "
                "most %zu bytes); give a shorter path to the catalog\n",
                file, file, sizeof tmp - 1);
        free(map);
        return 2;
    }
    int ret = map_load(dir, map, &nmap, mpath, sizeof mpath);
    if (ret) {
        free(map);
        return ret;
    }
    struct carma_err err;
    char *buf;
    size_t len;
    if (carma_file_read(file, 1 << 20, &buf, &len, &err) < 0) {
        fprintf(stderr, "carma eval-estimator: %s\n", err.msg);
        free(map);
        return 2;
    }
    static const char *const names[] = {"name", "model", "dataset", "batch", "mem_mib",
                                        "est_carma_mib"};
    struct carma_csv *c = malloc(sizeof *c);
    FILE *o = NULL;
    int col[6], rc;
    size_t with = 0, without = 0, below = 0, ncols = 0;
    if (!c) {
        ret = 1;
        goto out;
    }
    carma_csv_init(c, buf, len, file, ',');
    rc = carma_csv_header(c, names, 6, 5, col, "(a workload catalog, data/workloads.csv)", &err);
    if (rc < 0) {
        fprintf(stderr, "carma eval-estimator: %s\n", err.msg);
        ret = 2;
        goto out;
    }
    ncols = c->nfields;
    if (col[5] < 0 && ncols == CARMA_CSV_MAX_FIELDS) {
        fprintf(stderr, "carma eval-estimator: %s:%zu: no room for another column\n", file,
                c->line);
        ret = 2;
        goto out;
    }
    o = fopen(tmp, "w");
    if (!o) {
        fprintf(stderr, "carma eval-estimator: cannot write %s: %s\n", tmp, strerror(errno));
        ret = 1;
        goto out;
    }
    for (size_t f = 0; f < ncols; f++) {
        if (f)
            fputc(',', o);
        carma_csv_put(o, c->field[f]);
    }
    fputs(col[5] < 0 ? ",est_carma_mib\n" : "\n", o);
    printf("carma's bound for the workloads of %s (shipped table, default floor, the run's\n"
           "optimizer, precision and input; the runs: %s):\n", file, mpath);
    printf("  %-28s %-30s %5s %9s %9s %6s\n", "workload", "summary", "batch", "bound", "peak",
           "bnd/pk");
    while ((rc = carma_csv_next(c, &err)) == 1) {
        if (c->nfields != ncols) {
            fprintf(stderr, "carma eval-estimator: %s:%zu: %zu fields, the header has %zu\n",
                    file, c->line, c->nfields, ncols);
            ret = 2;
            goto out;
        }
        uint64_t batch;
        double mem;
        if (carma_parse_u64(c->field[col[3]], &batch) < 0 ||
            carma_parse_double(c->field[col[4]], &mem) < 0 || !(mem > 0)) {
            fprintf(stderr, "carma eval-estimator: %s:%zu: bad batch or mem_mib\n", file,
                    c->line);
            ret = 2;
            goto out;
        }
        const struct map_row *r = NULL;
        for (size_t i = 0; !r && i < nmap; i++)
            if (!strcmp(map[i].model, c->field[col[1]]) &&
                !strcmp(map[i].dataset, c->field[col[2]]) && map[i].batch == batch)
                r = &map[i];
        if (r && r->peak != mem) {
            fprintf(stderr,
                    "carma eval-estimator: %s:%zu: the run this row names (%s/%s at batch "
                    "%llu) peaked at %.0f MiB, workload '%s' (%s:%zu) at %s MiB: not the same "
                    "run; correct the row\n",
                    mpath, r->line, r->set, r->summary, (unsigned long long)batch, r->peak,
                    c->field[col[0]], file, c->line, c->field[col[4]]);
            ret = 2;
            goto out;
        }
        char val[32] = "";
        if (r) {
            snprintf(val, sizeof val, "%.0f", ceil(r->bound));
            int ok = ceil(r->bound) >= mem;
            below += !ok;
            with++;
            printf("  %-28s %-30s %5llu %9s %9.0f %6.2f%s\n", c->field[col[0]], r->summary,
                   (unsigned long long)batch, val, mem, ceil(r->bound) / mem,
                   ok ? "" : "  BOUND BELOW THE PEAK");
        } else {
            without++;
        }
        for (size_t f = 0; f < ncols; f++) {
            if (f)
                fputc(',', o);
            carma_csv_put(o, (int)f == col[5] ? val : c->field[f]);
        }
        if (col[5] < 0)
            fprintf(o, ",%s", val);
        fputc('\n', o);
    }
    if (rc < 0) {
        fprintf(stderr, "carma eval-estimator: %s\n", err.msg);
        ret = 2;
        goto out;
    }
    /* A write that failed on the way (ferror) or at the last flush (fclose): FILE stays
     * as it was, and FILE.tmp goes. */
    int werr = ferror(o); /* 1: writing FILE.tmp failed, 2: renaming it */
    errno = 0;
    if (fclose(o) != 0)
        werr = 1;
    int e = errno;
    o = NULL;
    if (!werr && rename(tmp, file) != 0) {
        werr = 2;
        e = errno;
    }
    if (werr) {
        fprintf(stderr, "carma eval-estimator: cannot write %s: %s\n", werr == 2 ? file : tmp,
                e ? strerror(e) : "write error");
        remove(tmp);
        ret = 1;
        goto out;
    }
    printf("  %zu workloads with a summary, every bound >= peak: %s; %zu without one "
           "(est_carma_mib left empty)\nwrote %s\n",
           with, below ? "NO" : "yes", without, file);
    ret = below ? 1 : 0;
out:
    if (o) {
        fclose(o);
        remove(tmp);
    }
    free(c);
    free(buf);
    free(map);
    return ret;
}

static void eval_usage(FILE *f)
{
    fprintf(f, "usage: carma eval-estimator --data DIR [--fit --out FILE [--emit-c]]\n"
               "       carma eval-estimator --data DIR --catalog FILE\n"
               "\n"
               "Without --fit: GPUMemNet's evaluation redone (80/20 split, seed %llu, and\n"
               "%d-fold cross-validation refitting per fold) on DIR/gpumemnet-mlp.csv and\n"
               "DIR/gpumemnet-cnn-early.csv, then the shipped table on the real models of\n"
               "DIR/cifar-summaries, DIR/imagenet-tables, DIR/cnn-trees and DIR/hf-trees\n"
               "(CARMA's measured peaks), and the replay on DIR/cpu-peaks (peaks of live\n"
               "tensors measured on the CPU, full training and LoRA).\n"
               "With --fit: fits on all rows, from the fixed prior of src/estimate/fit.c\n"
               "(never the shipped table), writes the coefficient table to FILE and names\n"
               "the coefficients the data leave to the prior;\n"
               "--emit-c also prints the C initialiser for src/estimate/coef_default.c.\n"
               "With --catalog: writes carma's bound (shipped table, default floor, rounded\n"
               "up to whole MiB) into the est_carma_mib column of the workload catalog FILE\n"
               "(data/workloads.csv), in place, for each workload that DIR/%s\n"
               "maps to a measured run of DIR; empty for the others. Exit 1 if a bound is\n"
               "below a workload's mem_mib.\n",
            (unsigned long long)EVAL_SEED, EVAL_KFOLD, EVAL_MAP_FILE);
}

int cmd_eval_estimator(int argc, char **argv)
{
    static const struct option opts[] = {
        {"data", required_argument, NULL, 'd'}, {"fit", no_argument, NULL, 'f'},
        {"out", required_argument, NULL, 'o'},  {"emit-c", no_argument, NULL, 'c'},
        {"catalog", required_argument, NULL, 'k'},
        {"help", no_argument, NULL, 'h'},       {NULL, 0, NULL, 0},
    };
    const char *dir = NULL, *out = NULL, *catalog = NULL;
    int fit = 0, emit = 0, ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 'd': dir = optarg; break;
        case 'f': fit = 1; break;
        case 'o': out = optarg; break;
        case 'c': emit = 1; break;
        case 'k': catalog = optarg; break;
        case 'h': eval_usage(stdout); return 0;
        default: eval_usage(stderr); return 2;
        }
    }
    if (!dir || optind != argc || (fit && !out) || (catalog && (fit || out || emit))) {
        eval_usage(stderr);
        return 2;
    }
    if (catalog)
        return catalog_write(dir, catalog);
    struct dataset d[DS_COUNT] = {{0}};
    static const char *const files[DS_COUNT] = {"gpumemnet-mlp.csv", "gpumemnet-cnn-early.csv"};
    struct carma_err err;
    for (int k = 0; k < DS_COUNT; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, files[k]);
        if (load_dataset(path, k, &d[k], &err) < 0) {
            fprintf(stderr, "carma eval-estimator: %s\n", err.msg);
            for (int j = 0; j < DS_COUNT; j++)
                free(d[j].s);
            return 2;
        }
    }
    /* One array: MLP rows then CNN rows. */
    size_t n = d[0].n + d[1].n;
    struct est_sample *s = malloc(n * sizeof *s);
    uint8_t *use = malloc(n), *part = malloc(n);
    int ret = 0;
    if (!s || !use || !part) {
        ret = 1;
        goto done;
    }
    memcpy(s, d[0].s, d[0].n * sizeof *s);
    memcpy(s + d[0].n, d[1].s, d[1].n * sizeof *s);
    /* A fixed shuffle per dataset decides both the 80/20 split and the folds. */
    uint64_t st = EVAL_SEED;
    for (int k = 0, base = 0; k < DS_COUNT; base += (int)d[k].n, k++) {
        size_t m = d[k].n;
        size_t *idx = malloc((m ? m : 1) * sizeof *idx);
        if (!idx) {
            ret = 1;
            goto done;
        }
        for (size_t i = 0; i < m; i++)
            idx[i] = i;
        for (size_t i = m; i > 1; i--) {
            size_t j = (size_t)(est_rng_next(&st) % i);
            size_t t = idx[i - 1];
            idx[i - 1] = idx[j];
            idx[j] = t;
        }
        for (size_t i = 0; i < m; i++)
            part[(size_t)base + idx[i]] = (uint8_t)(i * EVAL_KFOLD / m); /* 0..K-1 */
        free(idx);
    }
    if (fit) {
        struct est_coef c;
        memset(use, 1, n);
        if (fit_all(s, n, use, &c) < 0) {
            fprintf(stderr, "carma eval-estimator: the fit is degenerate\n");
            ret = 1;
            goto done;
        }
        char tab[4096];
        int len = est_coef_write(&c, tab, sizeof tab);
        FILE *f = len > 0 ? fopen(out, "w") : NULL;
        if (!f || fprintf(f, "%s", tab) < 0 || fclose(f) != 0) {
            fprintf(stderr, "carma eval-estimator: cannot write %s\n", out);
            ret = 1;
            goto done;
        }
        printf("fitted on %zu MLP + %zu CNN rows; wrote %s\n%s", d[0].n, d[1].n, out, tab);
        /* What the data does not set: the fixed prior's values (src/estimate/fit.c). */
        char ns[2 * 32][32];
        double nv[2 * 32];
        size_t nns = est_fit_no_signal(s, n, use, &c, ns, nv, sizeof nv / sizeof nv[0]);
        printf("no signal in the data, so the fixed prior's value (src/estimate/fit.c):");
        for (size_t i = 0; i < nns && i < sizeof nv / sizeof nv[0]; i++)
            printf(" %s %g", ns[i], nv[i]);
        printf("%s\n", nns ? "" : " none");
        if (emit) {
            printf("\n    .floor_mib = {%.6f, %.6f},\n    .kind = {", c.floor_mib[0],
                   c.floor_mib[1]);
            for (int fm = 0; fm < EST_FAM_COUNT; fm++) {
                printf("%s{", fm ? ",\n             " : "");
                for (int k = 0; k < EST_K_COUNT; k++)
                    printf("%s%.6f", k ? ", " : "", c.kind[fm][k]);
                printf("}");
            }
            printf("},\n    .input = {%.6f, %.6f},\n    .transient = {%.6f, %.6f},\n"
                   "    .step = {%.6f, %.6f},\n    .concat = {%.6f, %.6f},\n"
                   "    .replay = {%.6f, %.6f},\n",
                   c.input[0], c.input[1], c.transient[0], c.transient[1], c.step[0], c.step[1],
                   c.concat[0], c.concat[1], c.replay[0], c.replay[1]);
            printf("    .q = {%.6f, %.6f},\n    .scale0_mib = {%.6f, %.6f},\n", c.q[0], c.q[1],
                   c.scale0_mib[0], c.scale0_mib[1]);
            printf("    .level = %.6f,\n    .ncal = {%zu, %zu},\n", c.level, c.ncal[0], c.ncal[1]);
            printf("    .qband = {");
            for (int fm = 0; fm < EST_FAM_COUNT; fm++) {
                printf("%s{", fm ? ", " : "");
                for (int b = 0; b < EST_NBANDS; b++)
                    printf("%s%.6f", b ? ", " : "", c.qband[fm][b]);
                printf("}");
            }
            printf("},\n    .ncalband = {");
            for (int fm = 0; fm < EST_FAM_COUNT; fm++) {
                printf("%s{", fm ? ", " : "");
                for (int b = 0; b < EST_NBANDS; b++)
                    printf("%s%zu", b ? ", " : "", c.ncalband[fm][b]);
                printf("}");
            }
            printf("},\n");
        }
        goto done;
    }
    printf("GPUMemNet data: %zu MLP rows; %zu CNN rows used (%zu OOM crashes and %zu runs "
           "without layers or memory left out)\n",
           d[0].n, d[1].n, d[1].skipped_status, d[1].skipped_invalid + d[0].skipped_invalid);
    printf("Model fitted per library family: MLP rows dense (floor + slope x the replayed peak), "
           "CNN rows conv\n(per-kind multipliers, NNLS); bound = cross-conformal (%d inner "
           "folds), the largest out-of-fold\nnormalised residual. Peaks at the A100's capacity "
           "are censored: not fitted, not counted above bound.\n",
           EVAL_CAL_FOLDS);
    /* 80/20: parts 0..3 train, part 4 test (part = shuffled rank * 5 / n). */
    struct figures f8020[DS_COUNT] = {{0}}, fk[DS_COUNT] = {{0}};
    for (size_t i = 0; i < n; i++)
        use[i] = part[i] != EVAL_KFOLD - 1;
    struct est_coef c;
    if (fit_all(s, n, use, &c) < 0) {
        fprintf(stderr, "carma eval-estimator: the fit is degenerate\n");
        ret = 1;
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        if (!use[i])
            score(&c, &s[i], &f8020[s[i].dataset]);
    printf("\n80/20 split (seed %llu), test rows:\n", (unsigned long long)EVAL_SEED);
    for (int k = 0; k < DS_COUNT; k++)
        print_figures(ds_name[k], &f8020[k], k);
    for (int fold = 0; fold < EVAL_KFOLD; fold++) {
        for (size_t i = 0; i < n; i++)
            use[i] = part[i] != fold;
        struct est_coef cf;
        if (fit_all(s, n, use, &cf) < 0) {
            fprintf(stderr, "carma eval-estimator: the fit is degenerate\n");
            ret = 1;
            goto done;
        }
        for (size_t i = 0; i < n; i++)
            if (!use[i])
                score(&cf, &s[i], &fk[s[i].dataset]);
    }
    printf("\n%d-fold cross-validation (refit and recalibrated per fold), all rows once:\n",
           EVAL_KFOLD);
    for (int k = 0; k < DS_COUNT; k++)
        print_figures(ds_name[k], &fk[k], k);
    printf("\nTargets: MLP acc@1GB >= 0.99 (%s), MAE <= 30 MiB (%s), none above bound (%s);\n"
           "         CNN acc@8GB >= 0.95 (%s)  [80/20 and k-fold both must hold]\n",
           f8020[0].c1 >= 0.99 * f8020[0].n && fk[0].c1 >= 0.99 * fk[0].n ? "met" : "MISSED",
           f8020[0].abs_err <= 30 * f8020[0].n && fk[0].abs_err <= 30 * fk[0].n ? "met"
                                                                               : "MISSED",
           f8020[0].above == 0 && fk[0].above == 0 ? "met" : "MISSED",
           f8020[1].c8 >= 0.95 * f8020[1].n && fk[1].c8 >= 0.95 * fk[1].n ? "met" : "MISSED");
    /* The shipped table on real models it was never fitted on, in both environments. */
    static const struct {
        const char *sub, *title;
    } real[] = {
        {"cifar-summaries", "Real CIFAR/MNIST models (torchsummary; shipped table)"},
        {"imagenet-tables", "Real ImageNet models (layer tables; shipped table)"},
        {"cnn-trees", "The same ImageNet models as printed module trees (--image-size)"},
        {"hf-trees", "Real Hugging Face transformers (module trees; shipped table)"},
    };
    for (size_t i = 0; ret == 0 && i < sizeof real / sizeof real[0]; i++) {
        for (int fitted = 0; ret == 0 && fitted < 2; fitted++) {
            int all_ok = 1;
            ret = real_check(dir, real[i].sub, real[i].title, est_coef_default(),
                             fitted ? EST_FLOOR_FITTED : EST_FLOOR_DEFAULT, &all_ok);
            if (ret == 0)
                printf("  every bound >= peak: %s\n", all_ok ? "yes" : "NO");
        }
    }
    if (ret == 0)
        ret = cpu_peaks_check(dir);
    /* The H200 runs are of models never used to shape the reading rules; carma takes
     * an H200 for an H100 (sim_gpu_kind_of_device), and so does this check. */
    static const struct {
        const char *sub, *device;
    } peaks[] = {
        {"gpu-peaks-h100", "NVIDIA H100 80GB HBM3"},
        {"gpu-peaks-h200", "NVIDIA H200"},
    };
    for (size_t i = 0; ret == 0 && i < sizeof peaks / sizeof peaks[0]; i++) {
        int all_ok = 1;
        ret = gpu_peaks_check(dir, peaks[i].sub, peaks[i].device, "h100-80gb", &all_ok);
        if (ret == 0)
            printf("  every bound >= peak: %s\n", all_ok ? "yes" : "NO");
    }
done:
    free(s);
    free(use);
    free(part);
    for (int k = 0; k < DS_COUNT; k++)
        free(d[k].s);
    return ret;
}
