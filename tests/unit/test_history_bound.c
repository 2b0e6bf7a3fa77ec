/* carmad's bound from history (src/daemon/history.c): the signature covers the model, its
 * whole set-up, the job's folder and its allocator environment, only succeeded attempts count, a peak is history only for the GPU
 * kind it was observed on, and rows stored before the signature covered the set-up are
 * never matched. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "core/job.h"
#include "daemon/history.h"
#include "daemon/store.h"
#include "estimate/estimate.h"
#include "estimate/history.h"
#include "estimate/parse.h"
#include "sim/gpukind.h"
#include "util/csv.h"

#define BERT "tests/fuzz/corpus/summary_modtree/bert_base.txt"
#define KIND_A "NVIDIA A100-SXM4-40GB, 40960 MiB"
#define KIND_H "NVIDIA H100 80GB HBM3, 81559 MiB"

static char dir[64], path[128];
static char *bert;

/* Each store test's fixture: a fresh folder, the BERT summary, and an open store in
 * *state (closed by teardown). */
static int setup(void **state)
{
    snprintf(dir, sizeof dir, "/tmp/carma-histb-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(path, sizeof path, "%s/carma.db", dir);
    size_t len;
    struct carma_err err;
    struct carma_store *st;
    if (carma_file_read(BERT, EST_MAX_INPUT, &bert, &len, &err) < 0 ||
        carma_store_open(&st, path, &err) < 0)
        return -1;
    *state = st;
    return 0;
}

static int teardown(void **state)
{
    if (*state)
        carma_store_close(*state);
    *state = NULL;
    free(bert);
    bert = NULL;
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *argv_train[] = {"python", "train.py", NULL};
#define ARGV_JSON "[\"python\",\"train.py\"]"

/* BERT-base at batch 8, sequence 128, adamw, fp32, on one GPU. */
static struct carma_req_job bert_job(void)
{
    struct carma_req_job rj = {.argv = argv_train, .argc = 2, .cwd = "/", .summary = bert,
                               .gpus = 1, .batch = 8, .seq_len = 128,
                               .train = {.optimizer = EST_OPT_ADAMW,
                                         .precision = EST_PREC_FP32}};
    return rj;
}

/* Stores a finished job of uid 1000 submitted as rj, one attempt on `kind` that ended
 * as `outcome` with peak `peak`, the job in the state of that name, as carmad stores
 * its last attempt's end. */
/* A run of rj that ended with outcome, in st's open transaction. */
static void add_run_in_tx(struct carma_store *st, const struct carma_req_job *rj, const char *kind,
                          const char *outcome, uint64_t peak, unsigned partial)
{
    struct carma_err err = {{0}};
    struct carma_job_rec r = {0};
    carma_job_rec_clear(&r);
    r.name = strdup("train");
    r.user = strdup("alice");
    r.cwd = strdup(rj->cwd);
    r.argv_json = strdup(ARGV_JSON);
    r.env_json = strdup("{}");
    r.uid = r.gid = 1000;
    r.gpus = rj->gpus;
    r.batch = rj->batch;
    r.max_attempts = 1;
    r.state = CARMA_JOB_QUEUED;
    r.hist_sig = carmad_job_signature(rj);
    assert_int_equal(carma_store_job_insert(st, &r, &err), 0);
    assert_int_equal(carma_store_attempt_begin(st, r.id, 1, "[\"GPU-x\"]", kind, 1.0, &err), 0);
    assert_int_equal(carma_store_attempt_end(st, r.id, 1, 2.0, outcome,
                                             strcmp(outcome, "succeeded") ? 1 : 0, 0, peak, partial,
                                             NULL, &err),
                     0);
    int s = carma_job_state_parse(outcome);
    assert_true(s >= 0);
    r.state = (enum carma_job_state)s;
    r.attempts = 1;
    r.start_s = 1.0;
    r.end_s = 2.0;
    assert_int_equal(carma_store_job_update(st, &r, &err), 0);
    carma_job_rec_clear(&r);
}

static void add_run_partial(struct carma_store *st, const struct carma_req_job *rj,
                            const char *kind, const char *outcome, uint64_t peak, unsigned partial)
{
    struct carma_err err = {{0}};
    assert_int_equal(carma_store_begin(st, &err), 0);
    add_run_in_tx(st, rj, kind, outcome, peak, partial);
    assert_int_equal(carma_store_commit(st, &err), 0);
}

static void add_run(struct carma_store *st, const struct carma_req_job *rj, const char *kind,
                    const char *outcome, uint64_t peak)
{
    add_run_partial(st, rj, kind, outcome, peak, 0);
}

static struct carmad_bound bound_on(struct carma_store *st, const struct carma_req_job *rj,
                                    const char *const *kinds, size_t nkinds)
{
    struct carmad_bound b;
    struct carma_err err = {{0}};
    assert_int_equal(carmad_job_bound(st, rj, ARGV_JSON, 1000, kinds, NULL, nkinds, &b, &err),
                     0);
    return b;
}

static const char *const only_a[] = {KIND_A};

/* Each input the estimate depends on changes the signature; the same inputs give the
 * same one. */
static void test_signature_covers_setup(void **state)
{
    (void)state;
    const char *const av[] = {"python", "train.py"};
    const char text[] = "BertModel(\n)";
    const char *const ek[] = {"PYTORCH_CUDA_ALLOC_CONF", "TF_GPU_ALLOCATOR"};
    const char *const ev[] = {NULL, NULL};
    struct est_job_key base = {.argv = av, .argc = 2, .batch = 8, .gpus = 1,
                               .summary = text, .summary_len = sizeof text - 1, .seq = 128,
                               .optimizer = EST_OPT_ADAMW, .precision = EST_PREC_FP32,
                               .cwd = "/home/u/a", .env_key = ek, .env_val = ev, .nenv = 2};
    uint64_t s0 = est_job_signature(&base);
    assert_true(s0 != 0);
    struct est_job_key k = base;
    assert_true(est_job_signature(&k) == s0);
    const char other[] = "BertModel(\n )";
#define DIFFERS(field, value)                          \
    do {                                               \
        k = base;                                      \
        k.field = value;                               \
        assert_true(est_job_signature(&k) != s0);      \
    } while (0)
    DIFFERS(argc, 1);
    DIFFERS(batch, 16);
    DIFFERS(gpus, 2);
    DIFFERS(summary, other);
    DIFFERS(summary_len, 5);
    DIFFERS(summary, NULL);
    DIFFERS(seq, 256);
    DIFFERS(image_h, 224);
    DIFFERS(image_w, 224);
    DIFFERS(heads, 8);
    DIFFERS(experts_per_token, 2);
    DIFFERS(shared_layer_runs, 12);
    DIFFERS(tied_head, 1);
    DIFFERS(optimizer, EST_OPT_SGD);
    DIFFERS(precision, EST_PREC_BF16);
    DIFFERS(attention, EST_ATTN_SDPA);
    DIFFERS(grad_checkpoint, 1);
    DIFFERS(grad_accum, 1);
    DIFFERS(cwd, "/home/u/b");
    DIFFERS(cwd, NULL);
    DIFFERS(preallocates, 1);
    DIFFERS(nenv, 1);
    const char *const ev_set[] = {"expandable_segments:True", NULL};
    const char *const ev_empty[] = {"", NULL};
    const char *const ek_other[] = {"PYTORCH_CUDA_ALLOC_CONF", "XLA_CLIENT_MEM_FRACTION"};
    DIFFERS(env_val, ev_set);
    DIFFERS(env_val, ev_empty); /* set to "" is not unset */
    DIFFERS(env_key, ek_other);
#undef DIFFERS
    /* An empty summary is not the absence of one. */
    k = base;
    k.summary = "";
    k.summary_len = 0;
    uint64_t empty = est_job_signature(&k);
    k.summary = NULL;
    assert_true(est_job_signature(&k) != empty);
    /* The command's own signature (solo profiles) is not the memory history's. */
    assert_true(est_signature(av, 2, 8) != s0);
}

/* Only an attempt that succeeded is a peak to learn from: a failed, cancelled, lost or
 * OOM attempt may have stopped before the job's peak. */
static void test_history_succeeded_only(void **state)
{
    struct carma_store *st = *state;
    struct carma_req_job rj = bert_job();
    struct carmad_bound model = bound_on(st, &rj, only_a, 1);
    assert_int_equal(model.source, CARMAD_BOUND_ESTIMATOR);
    assert_true(model.bound_mib > 1000);
    add_run(st, &rj, KIND_A, "failed", 300);
    add_run(st, &rj, KIND_A, "cancelled", 400);
    add_run(st, &rj, KIND_A, "lost", 500);
    add_run(st, &rj, KIND_A, "oom", 600);
    /* a success whose peak is a lower limit only: carmad was down while it ran, or a
     * process's memory was unknown */
    add_run_partial(st, &rj, KIND_A, "succeeded", 700, CARMA_PEAK_DOWNTIME);
    add_run_partial(st, &rj, KIND_A, "succeeded", 800, CARMA_PEAK_UNKNOWN);
    struct carmad_bound b = bound_on(st, &rj, only_a, 1);
    assert_int_equal(b.source, CARMAD_BOUND_ESTIMATOR);
    assert_int_equal(b.bound_mib, model.bound_mib);
    assert_true(b.hist_sig == model.hist_sig && b.hist_sig != 0);
    add_run(st, &rj, KIND_A, "succeeded", 3000);
    b = bound_on(st, &rj, only_a, 1);
    assert_int_equal(b.source, CARMAD_BOUND_HISTORY);
    assert_int_equal(b.runs, 1);
    assert_int_equal(b.bound_mib, 3002); /* one run: its peak + 2 MiB */
    assert_string_equal(b.basis, "history (1 earlier run, peak 3000 MiB)");
    add_run(st, &rj, KIND_A, "succeeded", 3100);
    b = bound_on(st, &rj, only_a, 1);
    assert_int_equal(b.runs, 2);
    assert_int_equal(b.bound_mib, 3100 + 100 + 2);
}

/* A peak of the same command and batch under another model or set-up is not this job's
 * history. */
static void test_history_other_setup(void **state)
{
    struct carma_store *st = *state;
    struct carma_req_job rj = bert_job();
    add_run(st, &rj, KIND_A, "succeeded", 2000);
    assert_int_equal(bound_on(st, &rj, only_a, 1).source, CARMAD_BOUND_HISTORY);
    struct carma_req_job v[8];
    size_t n = 0;
    v[n] = rj, v[n++].seq_len = 512;
    v[n] = rj, v[n++].train.precision = EST_PREC_BF16;
    v[n] = rj, v[n++].train.optimizer = EST_OPT_SGD;
    v[n] = rj, v[n++].train.attention = EST_ATTN_SDPA;
    v[n] = rj, v[n++].train.grad_checkpoint = 1;
    v[n] = rj, v[n++].train.grad_accum = 1;
    char *edited = strdup(bert);
    assert_non_null(edited);
    char *at = strstr(edited, "768");
    assert_non_null(at);
    at[0] = '5'; /* a 568-wide layer: another model */
    v[n] = rj, v[n++].summary = edited;
    for (size_t i = 0; i < n; i++) {
        struct carmad_bound b = bound_on(st, &v[i], only_a, 1);
        assert_true(b.hist_sig != bound_on(st, &rj, only_a, 1).hist_sig);
        if (b.source != CARMAD_BOUND_ESTIMATOR)
            fail_msg("variant %zu took the first set-up's history: %s", i, b.basis);
    }
    free(edited);
}

/* The same command run from another folder (another project's train.py), or with
 * another allocator set-up in its environment, is another job: its peaks are not
 * this one's history. */
static void test_history_cwd_and_env(void **state)
{
    struct carma_store *st = *state;
    /* No summary: the signature is all there is (argv, GPU count, cwd, environment). */
    struct carma_req_job a = {.argv = argv_train, .argc = 2, .cwd = "/home/u/a", .gpus = 1};
    add_run(st, &a, KIND_A, "succeeded", 700);
    struct carmad_bound b = bound_on(st, &a, only_a, 1);
    assert_int_equal(b.source, CARMAD_BOUND_HISTORY);
    assert_int_equal(b.bound_mib, 702);
    struct carma_req_job other = a;
    other.cwd = "/home/u/b";
    b = bound_on(st, &other, only_a, 1);
    if (b.source != CARMAD_BOUND_DECLARED)
        fail_msg("another folder took the first one's peaks: %s", b.basis);
    /* With a summary: the model bounds the job from another folder. */
    struct carma_req_job bj = bert_job();
    bj.cwd = "/home/u/a";
    struct carmad_bound model = bound_on(st, &bj, only_a, 1);
    add_run(st, &bj, KIND_A, "succeeded", 100);
    assert_int_equal(bound_on(st, &bj, only_a, 1).bound_mib, 102);
    bj.cwd = "/home/u/b";
    b = bound_on(st, &bj, only_a, 1);
    assert_int_equal(b.source, CARMAD_BOUND_ESTIMATOR);
    assert_int_equal(b.bound_mib, model.bound_mib);
    /* The allocator environment: each of these is another signature than a's. */
    const char *key[2], *val[2];
    static const char *const envs[][2] = {
        {"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"},
        {"PYTORCH_CUDA_ALLOC_CONF", ""},
        {"XLA_PYTHON_CLIENT_MEM_FRACTION", ".5"},
        {"TF_GPU_ALLOCATOR", "cuda_malloc_async"},
        {"CUDA_MODULE_LOADING", "EAGER"},
        {"CUBLAS_WORKSPACE_CONFIG", ":4096:8"},
        {"NCCL_BUFFSIZE", "16777216"},
        {CARMAD_ENV_TF_GROWTH, "false"}, /* preallocates */
    };
    for (size_t i = 0; i < sizeof envs / sizeof *envs; i++) {
        struct carma_req_job e = a;
        key[0] = "HOME";
        val[0] = "/home/u";
        key[1] = envs[i][0];
        val[1] = envs[i][1];
        e.env_key = key;
        e.env_val = val;
        e.nenv = 2;
        b = bound_on(st, &e, only_a, 1);
        if (b.source != CARMAD_BOUND_DECLARED)
            fail_msg("%s=%s took the peaks of a run without it: %s", envs[i][0], envs[i][1],
                     b.basis);
    }
    /* A variable that changes no allocator, or the value carmad sets anyway, is the same
     * job. */
    struct carma_req_job same = a;
    key[0] = "HOME";
    val[0] = "/home/u";
    key[1] = CARMAD_ENV_TF_GROWTH;
    val[1] = "true";
    same.env_key = key;
    same.env_val = val;
    same.nenv = 2;
    assert_int_equal(bound_on(st, &same, only_a, 1).source, CARMAD_BOUND_HISTORY);
}

/* A peak is history on its own GPU kind only: on a server of another kind the model
 * bounds the job; on a server of both, the larger of the two. Without a model, a kind
 * without peaks leaves history out. */
static void test_history_per_kind(void **state)
{
    struct carma_store *st = *state;
    struct carma_req_job rj = bert_job();
    struct carmad_bound model = bound_on(st, &rj, only_a, 1);
    add_run(st, &rj, KIND_A, "succeeded", 100); /* far below the model's bound */
    static const char *const only_h[] = {KIND_H};
    static const char *const both[] = {KIND_A, KIND_H};
    struct carmad_bound b = bound_on(st, &rj, only_a, 1);
    assert_int_equal(b.source, CARMAD_BOUND_HISTORY);
    assert_int_equal(b.bound_mib, 102);
    b = bound_on(st, &rj, only_h, 1);
    assert_int_equal(b.source, CARMAD_BOUND_ESTIMATOR);
    assert_int_equal(b.bound_mib, model.bound_mib);
    b = bound_on(st, &rj, both, 2);
    assert_int_equal(b.source, CARMAD_BOUND_ESTIMATOR);
    assert_int_equal(b.bound_mib, model.bound_mib);
    /* A peak above the model's on one kind wins on a server of both kinds. */
    struct carma_req_job big = rj;
    big.batch = 16;
    struct carmad_bound mbig = bound_on(st, &big, both, 2);
    add_run(st, &big, KIND_A, "succeeded", mbig.bound_mib + 1000);
    b = bound_on(st, &big, both, 2);
    assert_int_equal(b.source, CARMAD_BOUND_HISTORY);
    assert_int_equal(b.bound_mib, mbig.bound_mib + 1002);
    /* Peaks on both kinds: the larger kind's history, the model aside. */
    add_run(st, &rj, KIND_H, "succeeded", 150);
    b = bound_on(st, &rj, both, 2);
    assert_int_equal(b.source, CARMAD_BOUND_HISTORY);
    assert_int_equal(b.bound_mib, 152);
    /* An attempt on GPUs of several kinds (no kind) is history for none. */
    struct carma_req_job mixed = rj;
    mixed.batch = 4;
    add_run(st, &mixed, NULL, "succeeded", 100);
    assert_int_equal(bound_on(st, &mixed, only_a, 1).source, CARMAD_BOUND_ESTIMATOR);
    /* No summary: history where every kind has peaks, else nothing known. */
    struct carma_req_job plain = {.argv = argv_train, .argc = 2, .cwd = "/", .gpus = 1};
    add_run(st, &plain, KIND_A, "succeeded", 700);
    b = bound_on(st, &plain, only_a, 1);
    assert_int_equal(b.source, CARMAD_BOUND_HISTORY);
    assert_int_equal(b.bound_mib, 702);
    b = bound_on(st, &plain, both, 2);
    assert_int_equal(b.source, CARMAD_BOUND_DECLARED);
    assert_int_equal(b.bound_mib, 0);
}

/* The estimator's bound is the largest over the server's GPU kinds, each with its own facts
 * (carma estimate --gpu KIND's): an H100 adds its measured floor and its cuBLAS workspace;
 * a GPU carma has no kind for takes the defaults, as an A100-40GB does. */
static void test_model_bound_per_kind(void **state)
{
    struct carma_store *st = *state;
    const struct sim_gpu_kind *h = sim_gpu_kind_find("h100-80gb");
    const struct sim_gpu_kind *a = sim_gpu_kind_find("a100-40gb");
    assert_ptr_equal(sim_gpu_kind_of_device("NVIDIA H100 80GB HBM3", 81559), h);
    assert_ptr_equal(sim_gpu_kind_of_device("NVIDIA H100 PCIe", 81559), h);
    assert_ptr_equal(sim_gpu_kind_of_device("NVIDIA H200", 143771), h); /* Hopper */
    assert_ptr_equal(sim_gpu_kind_of_device("NVIDIA A100-SXM4-40GB", 40960), a);
    assert_ptr_equal(sim_gpu_kind_of_device("NVIDIA A100 80GB PCIe", 81920),
                     sim_gpu_kind_find("a100-80gb"));
    assert_ptr_equal(sim_gpu_kind_of_device("Tesla V100-SXM2-16GB", 16384),
                     sim_gpu_kind_find("v100-32gb"));
    assert_null(sim_gpu_kind_of_device("NVIDIA GeForce RTX 4090", 24564));
    struct carma_req_job rj = bert_job();
    static const char *const kinds[] = {KIND_A, KIND_H};
    const struct sim_gpu_kind *dev[] = {a, h};
    struct carmad_bound b0, ba, bh, both;
    struct carma_err err = {{0}};
    assert_int_equal(carmad_job_bound(st, &rj, ARGV_JSON, 1000, kinds, NULL, 1, &b0, &err), 0);
    assert_int_equal(carmad_job_bound(st, &rj, ARGV_JSON, 1000, kinds, dev, 1, &ba, &err), 0);
    assert_int_equal(carmad_job_bound(st, &rj, ARGV_JSON, 1000, kinds + 1, dev + 1, 1, &bh,
                                      &err), 0);
    assert_int_equal(carmad_job_bound(st, &rj, ARGV_JSON, 1000, kinds, dev, 2, &both, &err),
                     0);
    assert_int_equal(ba.source, CARMAD_BOUND_ESTIMATOR);
    assert_int_equal(ba.bound_mib, b0.bound_mib);
    assert_true(bh.estimate_mib >= ba.estimate_mib + 212);
    assert_true(bh.bound_mib >= ba.bound_mib + 212);
    assert_int_equal(both.bound_mib, bh.bound_mib);
}

/* bert_job() with a grouped-query Llama print as its summary (*text: free it) */
static struct carma_req_job gqa_job(char **text)
{
    size_t len;
    struct carma_err err;
    assert_int_equal(carma_file_read("tests/fuzz/corpus/summary_modtree/"
                                     "llama_gqa_transformers5.txt",
                                     EST_MAX_INPUT, text, &len, &err),
                     0);
    struct carma_req_job rj = bert_job();
    rj.summary = *text;
    return rj;
}

/* A GPU carma has no kind for (a T4, a P100: sim_gpu_kind_of_device is NULL) has an
 * unknown compute capability, taken as below 8.0: grouped-query attention under SDPA in
 * 16 bits runs the math kernel there, as on a V100, and keeps its probabilities (on an
 * A100, FlashAttention: none). The basis says so. */
static void test_model_bound_unknown_kind(void **state)
{
    struct carma_store *st = *state;
    char *gqa;
    struct carma_err err = {{0}};
    struct carma_req_job rj = gqa_job(&gqa);
    rj.seq_len = 1024;
    rj.train.precision = EST_PREC_AMP;
    rj.train.attention = EST_ATTN_SDPA;
    assert_null(sim_gpu_kind_of_device("Tesla T4", 15360));
    static const char *const kinds[] = {"Tesla T4, 15360 MiB"};
    const struct sim_gpu_kind *unknown[] = {NULL}, *a[] = {sim_gpu_kind_find("a100-40gb")},
                              *v[] = {sim_gpu_kind_find("v100-32gb")};
    struct carmad_bound bu, ba, bv;
    assert_int_equal(carmad_job_bound(st, &rj, ARGV_JSON, 1000, kinds, unknown, 1, &bu, &err), 0);
    assert_int_equal(carmad_job_bound(st, &rj, ARGV_JSON, 1000, kinds, a, 1, &ba, &err), 0);
    assert_int_equal(carmad_job_bound(st, &rj, ARGV_JSON, 1000, kinds, v, 1, &bv, &err), 0);
    assert_int_equal(bu.source, CARMAD_BOUND_ESTIMATOR);
    assert_int_equal(bu.bound_mib, bv.bound_mib);
    assert_true(bu.bound_mib > ba.bound_mib + 1024); /* 8 x 32 heads x 1024^2 a layer */
    assert_non_null(strstr(bu.basis, "sdpa attention (math kernel: GPU kind unknown); estimate"));
    assert_null(strstr(ba.basis, "math kernel"));
    assert_null(strstr(bv.basis, "math kernel")); /* a known kind's: carma estimate's */
    free(gqa);
}

/* A bound beyond any GPU by far (a mistyped sequence length: 2e13 MiB) is refused, with
 * --mem as without: read as 0 it had let the job be collocated with nothing held. */
static void test_bound_beyond_any_gpu(void **state)
{
    struct carma_store *st = *state;
    char *gqa;
    struct carma_err err = {{0}};
    struct carma_req_job rj = gqa_job(&gqa);
    rj.batch = 65536;
    rj.seq_len = 1048576;
    rj.train.attention = EST_ATTN_EAGER;
    struct carmad_bound b;
    for (int mem = 0; mem < 2; mem++) {
        rj.mem_mib = mem ? 40000 : 0;
        memset(&err, 0, sizeof err);
        assert_int_equal(carmad_job_bound(st, &rj, ARGV_JSON, 1000, only_a, NULL, 1, &b, &err),
                         -EINVAL);
        assert_non_null(strstr(err.msg, "the estimator's bound for this job"));
        assert_non_null(strstr(err.msg, "is beyond any GPU (above 2^40 MiB)"));
    }
    rj.seq_len = 1024; /* the same job as meant: bounded */
    rj.batch = 8;
    rj.mem_mib = 0;
    assert_int_equal(carmad_job_bound(st, &rj, ARGV_JSON, 1000, only_a, NULL, 1, &b, &err), 0);
    assert_int_equal(b.source, CARMAD_BOUND_ESTIMATOR);
    assert_true(b.bound_mib > 1024 && b.bound_mib < 1000000);
    free(gqa);
}

/* The history lookup of every submission reads the user's succeeded jobs of the signature
 * through jobs_history, not every job of the user with the same command (jobs_signature):
 * a user's repeated command made each submission walk its whole history. */
static void test_history_lookup_plan(void **state)
{
    struct carma_store *st = *state;
    sqlite3 *db = carma_store_sqlite(st);
    char sql[1024];
    snprintf(sql, sizeof sql, "EXPLAIN QUERY PLAN %s", carmad_peaks_sql);
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
    int jobs_by_history = 0, rows = 0;
    while (sqlite3_step(q) == SQLITE_ROW) {
        const char *d = (const char *)sqlite3_column_text(q, 3);
        rows++;
        if (d && strstr(d, " j ") && strstr(d, "USING INDEX jobs_history (uid=? AND hist_sig=?)"))
            jobs_by_history = 1;
        /* nothing read whole but the last CARMAD_HISTORY_RUNS jobs, which the index gives
         * newest first (no sort) */
        if (strcmp(d ? d : "", "SCAN r"))
            assert_null(strstr(d ? d : "", "SCAN"));
        assert_null(strstr(d ? d : "", "TEMP B-TREE"));
    }
    sqlite3_finalize(q);
    assert_true(rows >= 2);
    assert_true(jobs_by_history);
}

/* A lookup reads the last CARMAD_HISTORY_RUNS runs of the command (it is on carmad's loop
 * before each submission's commit): a peak older than them no longer counts, on whatever
 * kind the newer ones ran. */
static void test_history_last_runs(void **state)
{
    struct carma_store *st = *state;
    struct carma_req_job rj = bert_job();
    struct carma_err err = {{0}};
    add_run(st, &rj, KIND_A, "succeeded", 9000);
    assert_int_equal(carma_store_begin(st, &err), 0);
    for (int k = 0; k < CARMAD_HISTORY_RUNS - 1; k++)
        add_run_in_tx(st, &rj, KIND_A, "succeeded", 3000, 0);
    assert_int_equal(carma_store_commit(st, &err), 0);
    double hi, lo;
    uint32_t runs;
    uint64_t sig = carmad_job_signature(&rj);
    assert_int_equal(carmad_store_peaks(st, 1000, ARGV_JSON, rj.batch, rj.gpus, sig, KIND_A, &hi,
                                        &lo, &runs, &err),
                     0);
    assert_int_equal(runs, CARMAD_HISTORY_RUNS);
    assert_true(hi == 9000 && lo == 3000);
    add_run(st, &rj, KIND_H, "succeeded", 3000); /* one more, on another kind */
    assert_int_equal(carmad_store_peaks(st, 1000, ARGV_JSON, rj.batch, rj.gpus, sig, KIND_A, &hi,
                                        &lo, &runs, &err),
                     0);
    assert_int_equal(runs, CARMAD_HISTORY_RUNS - 1);
    assert_true(hi == 3000 && lo == 3000);
    assert_int_equal(carmad_store_peaks(st, 1000, ARGV_JSON, rj.batch, rj.gpus, sig, KIND_H, &hi,
                                        &lo, &runs, &err),
                     0);
    assert_int_equal(runs, 1);
}

/* The lookup needs jobs_history for its speed only: a store without it (dropped by hand)
 * still gives a submission its history. Named with INDEXED BY, the prepare failed there
 * and every submission fell back to the model, unsaid. */
static void test_history_without_its_index(void **state)
{
    struct carma_store *st = *state;
    struct carma_req_job rj = bert_job();
    add_run(st, &rj, KIND_A, "succeeded", 3000);
    assert_int_equal(
        sqlite3_exec(carma_store_sqlite(st), "DROP INDEX jobs_history", NULL, NULL, NULL),
        SQLITE_OK);
    double hi, lo;
    uint32_t runs;
    struct carma_err err = {{0}};
    assert_int_equal(carmad_store_peaks(st, 1000, ARGV_JSON, rj.batch, rj.gpus,
                                        carmad_job_signature(&rj), KIND_A, &hi, &lo, &runs, &err),
                     0);
    assert_int_equal(runs, 1);
    assert_true(hi == 3000 && lo == 3000);
    struct carmad_bound b = bound_on(st, &rj, only_a, 1);
    assert_int_equal(b.source, CARMAD_BOUND_HISTORY);
    assert_int_equal(b.bound_mib, 3002);
}

/* The lookup's statement is prepared once and kept with the store (carma_store_cached):
 * used before a change of the schema (the index its plan read, dropped by hand), it is
 * prepared again by SQLite, not failed, and reset after each use (a statement left
 * stepping would keep the DROP from running). */
static void test_history_cached_across_schema_change(void **state)
{
    struct carma_store *st = *state;
    struct carma_req_job rj = bert_job();
    add_run(st, &rj, KIND_A, "succeeded", 3000);
    double hi, lo;
    uint32_t runs;
    struct carma_err err = {{0}};
    uint64_t sig = carmad_job_signature(&rj);
    assert_int_equal(carmad_store_peaks(st, 1000, ARGV_JSON, rj.batch, rj.gpus, sig, KIND_A, &hi,
                                        &lo, &runs, &err),
                     0);
    assert_int_equal(runs, 1);
    assert_int_equal(
        sqlite3_exec(carma_store_sqlite(st), "DROP INDEX jobs_history", NULL, NULL, NULL),
        SQLITE_OK);
    add_run(st, &rj, KIND_A, "succeeded", 4000);
    hi = lo = 0;
    runs = 0;
    assert_int_equal(carmad_store_peaks(st, 1000, ARGV_JSON, rj.batch, rj.gpus, sig, KIND_A, &hi,
                                        &lo, &runs, &err),
                     0);
    assert_int_equal(runs, 2);
    assert_true(hi == 4000 && lo == 3000);
}

/* A store of schema version 5 (history keyed on argv, batch and GPU count only): after
 * the migration its peaks are matched by no job, the same job included, while the
 * same peak recorded now is. */
static void test_history_old_rows_migrated(void **state)
{
    struct carma_store *st = *state;
    struct carma_err err = {{0}};
    carma_store_close(st); /* a store of the current version, made older below */
    *state = NULL;
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(db,
                     "ALTER TABLE attempts DROP COLUMN gpu_kind;"
                     "DROP INDEX jobs_history;" /* version 15's, on hist_sig */
                     "ALTER TABLE jobs DROP COLUMN hist_sig;"
                     "INSERT INTO jobs(name,uid,gid,user,cwd,argv,env,summary,batch,gpus,"
                     "mem_mib,bound_mib,peak_mib,max_attempts,attempts,state,submit_time) "
                     "VALUES('old',1000,1000,'alice','/','" ARGV_JSON "','{}',NULL,8,1,0,"
                     "0,2000,1,1,'succeeded',0);"
                     "INSERT INTO attempts(job_id,n,gpus,start_time,end_time,outcome,"
                     "exit_code,peak_mib) VALUES(1,1,'[\"GPU-x\"]',1,2,'succeeded',0,2000);"
                     "PRAGMA user_version=5;",
                     NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(carma_store_open(&st, path, &err), 0);
    *state = st;
    assert_int_equal(carma_store_version_found(st), 5);
    struct carma_req_job rj = bert_job();
    struct carmad_bound b = bound_on(st, &rj, only_a, 1);
    assert_int_equal(b.source, CARMAD_BOUND_ESTIMATOR);
    /* The old definition's job: argv, batch 8, one GPU, no summary. */
    struct carma_req_job plain = {.argv = argv_train, .argc = 2, .cwd = "/", .gpus = 1,
                                  .batch = 8};
    b = bound_on(st, &plain, only_a, 1);
    assert_int_equal(b.source, CARMAD_BOUND_DECLARED);
    double hi, lo;
    uint32_t runs = 9;
    assert_int_equal(carmad_store_peaks(st, 1000, ARGV_JSON, 8, 1, b.hist_sig, KIND_A, &hi,
                                        &lo, &runs, &err),
                     0);
    assert_int_equal(runs, 0);
    /* Recorded under the new definition, the same run is history. */
    add_run(st, &plain, KIND_A, "succeeded", 2000);
    b = bound_on(st, &plain, only_a, 1);
    assert_int_equal(b.source, CARMAD_BOUND_HISTORY);
    assert_int_equal(b.runs, 1);
}

/* TensorFlow grows only on exactly "true" (strcmp; anything else it cannot parse and
 * preallocates); JAX stops preallocating on "false", "False" or "0" in every version
 * (older ones do not lower-case, so "FALSE" preallocates there). Unset, neither
 * preallocates: carmad sets both. */
static void test_env_preallocates(void **state)
{
    (void)state;
    const char *key[3], *val[3];
    struct carma_req_job rj = {.env_key = key, .env_val = val};
    assert_int_equal(carmad_env_preallocates(&rj), -1);
    key[0] = "PATH";
    val[0] = "/bin";
    rj.nenv = 1;
    assert_int_equal(carmad_env_preallocates(&rj), -1);
    /* TensorFlow alone (no XLA variable). */
    key[1] = CARMAD_ENV_TF_GROWTH;
    rj.nenv = 2;
    static const struct { const char *v; long want; } tf[] = {
        {"true", -1}, {"1", 1}, {"True", 1}, {"TRUE", 1}, {"false", 1}, {"", 1},
        {"yes", 1}, {"true ", 1}};
    for (size_t i = 0; i < sizeof tf / sizeof *tf; i++) {
        val[1] = tf[i].v;
        if (carmad_env_preallocates(&rj) != tf[i].want)
            fail_msg("TF_FORCE_GPU_ALLOW_GROWTH=\"%s\": %ld, want %ld", tf[i].v,
                     carmad_env_preallocates(&rj), tf[i].want);
    }
    /* JAX beside a growing TensorFlow. */
    val[1] = "true";
    key[2] = CARMAD_ENV_XLA_PREALLOCATE;
    rj.nenv = 3;
    static const struct { const char *v; long want; } xla[] = {
        {"false", -1}, {"False", -1}, {"0", -1}, {"FALSE", 2}, {"true", 2}, {"1", 2},
        {"", 2}, {"no", 2}};
    for (size_t i = 0; i < sizeof xla / sizeof *xla; i++) {
        val[2] = xla[i].v;
        if (carmad_env_preallocates(&rj) != xla[i].want)
            fail_msg("XLA_PYTHON_CLIENT_PREALLOCATE=\"%s\": %ld, want %ld", xla[i].v,
                     carmad_env_preallocates(&rj), xla[i].want);
    }
    /* The first one that preallocates is named. */
    val[1] = "1";
    val[2] = "true";
    assert_int_equal(carmad_env_preallocates(&rj), 1);
}

/* The whole-GPU rule raises the bound of a preallocating job whatever its basis, a
 * missing one (out of memory at submission) included. */
static void test_bound_preallocating(void **state)
{
    (void)state;
    const char *key[1] = {CARMAD_ENV_TF_GROWTH}, *val[1] = {"1"};
    struct carma_req_job rj = {.env_key = key, .env_val = val, .nenv = 1};
    uint64_t bound = 1024;
    char *basis = strdup("--mem (1024 MiB)");
    assert_non_null(basis);
    assert_int_equal(carmad_bound_preallocating(&rj, 40960, &bound, &basis), 0);
    assert_int_equal(bound, 40960);
    assert_string_equal(basis, "whole GPU (40960 MiB: TF_FORCE_GPU_ALLOW_GROWTH=1 in the job's "
                               "environment maps the GPU's memory at the start; else --mem "
                               "(1024 MiB))");
    free(basis);
    /* No basis to describe: the bound is raised all the same. */
    bound = 1024;
    basis = NULL;
    assert_int_equal(carmad_bound_preallocating(&rj, 40960, &bound, &basis), 0);
    assert_int_equal(bound, 40960);
    assert_non_null(basis);
    assert_string_equal(basis, "whole GPU (40960 MiB: TF_FORCE_GPU_ALLOW_GROWTH=1 in the job's "
                               "environment maps the GPU's memory at the start)");
    free(basis);
    /* Already a whole GPU or more: nothing changes. */
    bound = 50000;
    basis = NULL;
    assert_int_equal(carmad_bound_preallocating(&rj, 40960, &bound, &basis), 0);
    assert_int_equal(bound, 50000);
    assert_null(basis);
    /* A growing job keeps its bound. */
    val[0] = "true";
    bound = 1024;
    assert_int_equal(carmad_bound_preallocating(&rj, 40960, &bound, &basis), -1);
    assert_int_equal(bound, 1024);
    assert_null(basis);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_signature_covers_setup),
        cmocka_unit_test_setup_teardown(test_history_succeeded_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_history_other_setup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_history_cwd_and_env, setup, teardown),
        cmocka_unit_test_setup_teardown(test_history_per_kind, setup, teardown),
        cmocka_unit_test_setup_teardown(test_model_bound_per_kind, setup, teardown),
        cmocka_unit_test_setup_teardown(test_model_bound_unknown_kind, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bound_beyond_any_gpu, setup, teardown),
        cmocka_unit_test_setup_teardown(test_history_lookup_plan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_history_without_its_index, setup, teardown),
        cmocka_unit_test_setup_teardown(test_history_last_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_history_cached_across_schema_change, setup, teardown),
        cmocka_unit_test_setup_teardown(test_history_old_rows_migrated, setup, teardown),
        cmocka_unit_test(test_env_preallocates),
        cmocka_unit_test(test_bound_preallocating),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
