/* carma submit: queue a job. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include "cli/client.h"
#include "cli/commands.h"
#include "estimate/estimate.h"
#include "estimate/parse.h"
#include "estimate/replay.h"
#include "proto/proto.h"
#include "util/csv.h"
#include "util/timearg.h"

extern char **environ;

static void usage(FILE *f)
{
    fprintf(f, "usage: carma submit [--gpus N] [--mem SIZE]\n"
               "                    [--summary FILE --batch N [--seq-len N | --image-size H[xW]]\n"
               "                     [--optimizer sgd|momentum|adam|adamw|adadelta]\n"
               "                     [--precision fp32|amp|bf16] [--attention eager|sdpa]\n"
               "                     [--heads N] [--experts-per-token K] [--shared-layer-runs N]\n"
               "                     [--tied-head] [--gradient-checkpointing]\n"
               "                     [--gradient-accumulation]]\n"
               "                    [--name NAME] [--max-attempts N] [--after ID[,ID...]]\n"
               "                    [--time-limit DURATION]\n"
               "                    [--socket PATH] [--json]\n"
               "                    -- CMD [ARGS...]\n"
               "Queues CMD (run directly, not through a shell) and prints the job id;\n"
               "with --summary, what carma estimate would note of the summary goes to\n"
               "stderr ('carma submit: note: ...').\n"
               "SIZE is MiB, or with a unit: 16G, 4096M. With --summary (a model summary, as\n"
               "for carma estimate, FILE - reading standard input; sent as text, at most\n"
               "512 KiB) the job's memory bound is\n"
               "max(estimator bound, --mem); once the same command, --gpus, summary and\n"
               "estimator options have run and succeeded on that kind of GPU, from the same\n"
               "folder and with the same allocator variables (PYTORCH_CUDA_ALLOC_CONF and the\n"
               "like, TensorFlow's and JAX's preallocation), the bound comes from those\n"
               "runs' observed peaks instead. --optimizer, --precision,\n"
               "--attention, --gradient-checkpointing and --gradient-accumulation (--batch is\n"
               "then the micro-batch) say how the model trains, --heads its attention\n"
               "heads per block and --experts-per-token its mixture-of-experts routing's top-k,\n"
               "as for carma estimate (default adamw, fp32; --heads is needed for\n"
               "nn.MultiheadAttention or Keras's MultiHeadAttention and GroupedQueryAttention\n"
               "under eager attention; --experts-per-token is refused for a summary without\n"
               "MoE blocks, and without it every token counts through every expert;\n"
               "--shared-layer-runs, ALBERT's num_hidden_layers, for one without a shared\n"
               "layer group; --tied-head, for one without an output head of its token\n"
               "table's shape).\n"
               "--mem and the bound are per GPU; with --gpus N > 1 and --summary the job is\n"
               "taken to train with DistributedDataParallel, one process per GPU at --batch.\n"
               "--max-attempts N: 1 to 100 runs in all, OOM reruns included (default:\n"
               "carmad's, 3 unless configured).\n"
               "--time-limit DURATION (as Slurm's sbatch --time): the wall time each attempt\n"
               "may run, from its start; one that passes it is ended as carma cancel ends a\n"
               "job (SIGTERM, SIGKILL after carmad's kill_grace) and the job ends cancelled,\n"
               "not retried, its reason 'time limit DURATION reached'. An OOM retry starts a\n"
               "fresh clock. DURATION: digits each followed by a unit d, h, m, s, in that\n"
               "order, each once (90s, 45m, 2h, 1d12h, 1h30m); 1 s to 365 d. A bare number\n"
               "is refused: sbatch --time reads 90 as minutes.\n"
               "--after ID[,ID...] (may be repeated): the job starts only once every listed\n"
               "job has ended succeeded (as tsp -D, or Slurm's --dependency=afterok); until\n"
               "then it is queued, REASON 'after ID' in carma ls. Up to 64 jobs, your own\n"
               "(root: anyone's), each listed once (a repeated id is refused). When one of\n"
               "them ends otherwise (failed, oom, cancelled, lost, its attempts used up), this\n"
               "job is cancelled, its reason naming that job and how it ended, and so are the\n"
               "jobs waiting for this one. Refused (exit 2, nothing queued): an unknown id,\n"
               "another user's job, a job that ended other than succeeded, a malformed list;\n"
               "a listed job that succeeded already is met at once. Once they all succeed the\n"
               "job takes its place in the queue by submission order (fair share: among its\n"
               "user's jobs).\n");
}

/* The environment the job gets: this one, less what carmad would refuse. Exported shell
 * functions (BASH_FUNC_f%%, exported by Lmod's `module` on most clusters) go quietly, as
 * carmad drops them anyway; every other entry left out is named on stderr. */
static json_t *job_env(const char *cmd)
{
    json_t *env = json_object();
    size_t n = 0, over = 0;
    for (char **e = environ; env && *e; e++) {
        const char *eq = strchr(*e, '=');
        size_t kl = eq ? (size_t)(eq - *e) : 0;
        char key[257];
        if (kl > 0 && kl < sizeof key) {
            memcpy(key, *e, kl);
            key[kl] = 0;
        }
        const char *why = NULL;
        json_t *v = NULL;
        if (!strncmp(*e, "BASH_FUNC_", 10))
            continue;
        if (kl == 0 || kl >= sizeof key || !carma_proto_env_name_ok(key))
            why = "not a variable name";
        else if (strlen(eq + 1) > CARMA_PROTO_MAX_ENV_BYTES)
            why = "value longer than 32 KiB";
        else if (!(v = json_string(eq + 1)))
            why = "value not UTF-8";
        else if (n == CARMA_PROTO_MAX_ENV)
            over++;
        if (why)
            fprintf(stderr, "carma %s: the job's environment leaves out %.*s (%s)\n", cmd,
                    (int)(kl > 0 && kl <= 64 ? kl : 64), *e, why);
        if (!v)
            continue;
        if (over) {
            json_decref(v);
            continue;
        }
        json_object_set_new(env, key, v);
        n++;
    }
    if (over)
        fprintf(stderr,
                "carma %s: the job's environment leaves out the last %zu variables (at most %d)\n",
                cmd, over, CARMA_PROTO_MAX_ENV);
    return env;
}

/* Whether the submission req is longer than a protocol line, which carmad would never
 * read: then says so on stderr, with what makes it up (each part is within its own limit,
 * but the environment's is only per entry) and the largest variable, for `env -u`. */
static int request_too_large(const char *cmd, const json_t *req)
{
    size_t len = json_dumpb(req, NULL, 0, JSON_COMPACT);
    if (len < CARMA_PROTO_MAX_LINE)
        return 0;
    const json_t *job = json_object_get(req, "job");
    const json_t *env = json_object_get(job, "env"), *summary = json_object_get(job, "summary");
    const char *k, *big = NULL;
    const json_t *v;
    size_t big_len = 0;
    json_object_foreach((json_t *)env, k, v) {
        size_t l = strlen(k) + 1 + json_string_length(v);
        if (l > big_len) {
            big_len = l;
            big = k;
        }
    }
    char sum[48] = "";
    if (summary)
        snprintf(sum, sizeof sum, ", the summary %zu",
                 json_dumpb(summary, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY));
    fprintf(stderr,
            "carma %s: the submission is %zu bytes, more than carmad reads (%u): the "
            "environment takes %zu (%zu variables; the largest, %s, %zu bytes), the command "
            "%zu%s; submit with a smaller environment (env -u NAME carma %s ...)\n",
            cmd, len, CARMA_PROTO_MAX_LINE, json_dumpb(env, NULL, 0, JSON_COMPACT),
            json_object_size(env), big ? big : "none", big_len,
            json_dumpb(json_object_get(job, "argv"), NULL, 0, JSON_COMPACT), sum, cmd);
    return 1;
}

int cli_after_opt(const char *cmd, const char *v, struct cli_after *a)
{
    struct carma_err err = {{0}};
    if (carma_proto_ids_parse(v, a->ids, CARMA_PROTO_MAX_AFTER, &a->n, &err) < 0) {
        fprintf(stderr, "carma %s: --after %s\n", cmd, err.msg);
        return 2;
    }
    return 0;
}

int cli_after_put(const struct cli_after *a, json_t *job)
{
    if (!a->n)
        return 0;
    json_t *aj = json_array();
    for (size_t k = 0; aj && k < a->n; k++)
        if (json_array_append_new(aj, json_integer((json_int_t)a->ids[k]))) {
            json_decref(aj);
            aj = NULL;
        }
    return aj && !json_object_set_new(job, "after", aj) ? 0 : -ENOMEM;
}

int cli_submit_job(const struct cli_conn *c, const char *cmd, json_t *job)
{
    if (!json_object_get(job, "cwd")) {
        char cwd[PATH_MAX];
        /* removed under the shell (ENOENT), unreadable above (EACCES), or longer than a
         * path (ERANGE): no job can run there, the request's fault as a cwd carmad finds
         * missing is (2) */
        if (!getcwd(cwd, sizeof cwd)) {
            fprintf(stderr, "carma %s: cannot read the working directory: %s\n", cmd,
                    strerror(errno));
            json_decref(job);
            return 2;
        }
        json_t *js = json_string(cwd);
        if (!js) {
            fprintf(stderr,
                    "carma %s: the working directory's path is not valid UTF-8, which "
                    "carmad's protocol carries: run it from another folder\n",
                    cmd);
            json_decref(job);
            return 2;
        }
        json_object_set_new(job, "cwd", js);
    }
    if (!json_object_get(job, "env"))
        json_object_set_new(job, "env", job_env(cmd));
    /* the job creates its files as this shell would (a umask of 077 keeps them private);
     * read by setting it, so set back at once */
    mode_t um = umask(022);
    umask(um);
    json_object_set_new(job, "umask", json_integer((json_int_t)(um & 0777)));
    json_t *req = cli_req("submit");
    json_object_set_new(req, "job", job);
    if (request_too_large(cmd, req)) {
        json_decref(req);
        return 2;
    }
    json_t *resp;
    int st = cli_call(c, cmd, req, &resp);
    if (st)
        return st;
    if (cli_check(cmd, resp, "answer", "id:i")) {
        json_decref(resp);
        return 1;
    }
    if (c->json)
        cli_print_json(resp);
    else
        printf("%lld\n", (long long)json_integer_value(json_object_get(resp, "id")));
    json_decref(resp);
    return 0;
}

/* A text file of at most max bytes, NUL-terminated; -EILSEQ when it holds a NUL (the
 * protocol's string would end there, the rest silently lost). */
static int read_file(const char *path, size_t max, char **out)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -errno;
    char *b = malloc(max + 1);
    errno = 0;
    size_t n = b ? fread(b, 1, max + 1, f) : 0;
    int bad = ferror(f) ? (errno ? errno : EIO) : 0; /* EISDIR: a folder */
    fclose(f);
    if (!b)
        return -ENOMEM;
    if (bad || n > max || memchr(b, 0, n)) {
        free(b);
        return bad ? -bad : n > max ? -E2BIG : -EILSEQ;
    }
    b[n] = 0;
    *out = b;
    return 0;
}

/* Sizes the summary's model as carmad will, with the job's set-up (job's "batch",
 * "seq_len", "image_size", "heads", "experts_per_token", "gpus", "optimizer", "precision",
 * "attention", "gradient_checkpointing", "gradient_accumulation"), so that what carmad would refuse
 * is named FILE:LINE (or FILE: for what no line causes) here rather than "summary:LINE"
 * or "job.summary: ..." in carmad's answer, as carma estimate names it; and prints, as
 * "carma submit: note: ...", the notes carma estimate would print (est_notes). 0 when it
 * passes. */
static int check_summary(const char *path, const char *text, const json_t *job)
{
    struct est_layer *layers = calloc(EST_MAX_LAYERS, sizeof *layers);
    struct est_replay_work *work = malloc(sizeof *work);
    if (!layers || !work) {
        free(layers);
        free(work);
        fprintf(stderr, "carma submit: out of memory\n");
        return -1;
    }
    const json_t *image_size = json_object_get(job, "image_size");
    struct est_model m;
    est_model_init(&m, layers, EST_MAX_LAYERS);
    m.image_h = (uint32_t)json_integer_value(json_array_get(image_size, 0));
    m.image_w = (uint32_t)json_integer_value(json_array_get(image_size, 1));
    m.heads = (uint32_t)json_integer_value(json_object_get(job, "heads"));
    m.shared_layer_runs = (uint32_t)json_integer_value(json_object_get(job, "shared_layer_runs"));
    m.tie_head = (uint8_t)json_is_true(json_object_get(job, "tied_head"));
    struct est_opts o = {.optimizer = EST_OPT_ADAMW, .precision = EST_PREC_FP32};
    static const char *const train_keys[] = {"optimizer", "precision", "attention"};
    for (size_t k = 0; k < sizeof train_keys / sizeof *train_keys; k++) {
        const char *v = json_string_value(json_object_get(job, train_keys[k]));
        const char *accepted;
        if (v) /* checked where the option was read */
            est_opts_set(&o, train_keys[k], v, &accepted);
    }
    o.grad_checkpoint = json_is_true(json_object_get(job, "gradient_checkpointing"));
    o.grad_accum = json_is_true(json_object_get(job, "gradient_accumulation"));
    o.batch = (uint32_t)json_integer_value(json_object_get(job, "batch"));
    o.seq = (uint32_t)json_integer_value(json_object_get(job, "seq_len"));
    o.experts_per_token = (uint32_t)json_integer_value(json_object_get(job, "experts_per_token"));
    o.gpus = json_object_get(job, "gpus")
                 ? (uint32_t)json_integer_value(json_object_get(job, "gpus"))
                 : 1;
    struct carma_err err = {{0}};
    int rc = est_model_prepare(&m, text, strlen(text), path, &o, &err);
    struct est_result r;
    if (rc == 0 && est_compute(&m, est_coef_default(), &o, work, &r, &err) < 0) {
        char msg[sizeof err.msg];
        snprintf(msg, sizeof msg, "%s", err.msg);
        rc = carma_err_at(&err, path, 0, "%s", msg);
    }
    if (rc == 0) { /* what carma estimate would note (carmad bounds the job alike) */
        char notes[EST_NOTES][EST_NOTE_MAX];
        size_t nn = est_notes(&m, &o, &r, notes);
        for (size_t i = 0; i < nn; i++)
            fprintf(stderr, "carma submit: note: %s\n", notes[i]);
    }
    free(work);
    free(layers);
    if (rc)
        fprintf(stderr, "carma submit: %s\n", err.msg);
    return rc;
}

int cmd_submit(int argc, char **argv)
{
    struct cli_conn c;
    cli_conn_init(&c);
    json_t *job = json_object();
    const char *train_opt = NULL; /* the last training set-up option given */
    const char *est_opt = NULL;   /* the last of --batch, --seq-len, --image-size, --heads,
                                     --shared-layer-runs, --tied-head,
                                     --experts-per-token */
    const char *summary_path = NULL;
    struct cli_after after = {.n = 0}; /* --after's jobs */
    int i, bad = 0; /* the argument refused */
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = cli_common_opt(&c, argc, argv, &i);
        if (r < 0) {
            bad = i;
            goto usage_err;
        }
        if (r)
            continue;
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (cli_is_help(a)) {
            usage(stdout);
            json_decref(job);
            return 0;
        }
        if (a[0] != '-')
            break; /* the command starts here */
        if (!strcmp(a, "--tied-head")) {
            json_object_set_new(job, "tied_head", json_true());
            est_opt = a;
            continue;
        }
        int ck = !strcmp(a, "--gradient-checkpointing");
        if (ck || !strcmp(a, "--gradient-accumulation")) {
            json_object_set_new(job, ck ? "gradient_checkpointing" : "gradient_accumulation",
                                json_true());
            train_opt = a;
            continue;
        }
        if (i + 1 >= argc) {
            bad = i;
            goto usage_err;
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--gpus") || !strcmp(a, "--batch") || !strcmp(a, "--max-attempts") ||
            !strcmp(a, "--seq-len") || !strcmp(a, "--heads") || !strcmp(a, "--experts-per-token") ||
            !strcmp(a, "--shared-layer-runs")) {
            long hi = !strcmp(a, "--gpus")                ? CARMA_PROTO_MAX_GPUS
                      : !strcmp(a, "--max-attempts")      ? CARMA_PROTO_MAX_ATTEMPTS
                      : !strcmp(a, "--batch")             ? (long)EST_MAX_BATCH
                      : !strcmp(a, "--heads")             ? (long)EST_MAX_HEADS
                      : !strcmp(a, "--experts-per-token") ? (long)EST_MAX_EXPERTS
                      : !strcmp(a, "--shared-layer-runs") ? (long)EST_MAX_SHARED_RUNS
                                                          : (long)EST_MAX_SEQ;
            uint64_t x; /* digits only, as carma estimate reads them */
            if (cli_parse_count("submit", a, v, (uint64_t)hi, &x) < 0) {
                json_decref(job);
                return 2;
            }
            if (strcmp(a, "--gpus") && strcmp(a, "--max-attempts"))
                est_opt = a;
            json_object_set_new(job,
                                !strcmp(a, "--gpus")                ? "gpus"
                                : !strcmp(a, "--batch")             ? "batch"
                                : !strcmp(a, "--seq-len")           ? "seq_len"
                                : !strcmp(a, "--heads")             ? "heads"
                                : !strcmp(a, "--experts-per-token") ? "experts_per_token"
                                : !strcmp(a, "--shared-layer-runs") ? "shared_layer_runs"
                                                                    : "max_attempts",
                                json_integer((json_int_t)x));
        } else if (!strcmp(a, "--image-size")) {
            uint32_t h, w;
            if (cli_parse_image_size(v, &h, &w) < 0) {
                fprintf(stderr, "carma submit: --image-size %s: H or HxW expected, each from 1 "
                                "to 65536\n", v);
                json_decref(job);
                return 2;
            }
            json_object_set_new(job, "image_size", json_pack("[I,I]", (json_int_t)h,
                                                             (json_int_t)w));
            est_opt = a;
        } else if (!strcmp(a, "--optimizer") || !strcmp(a, "--precision") ||
                   !strcmp(a, "--attention")) {
            struct est_opts o = {0};
            if (cli_train_opt("submit", a + 2, v, &o) < 0) {
                json_decref(job);
                return 2;
            }
            json_object_set_new(job, a + 2, json_string(v));
            train_opt = a;
        } else if (!strcmp(a, "--mem")) {
            int64_t m = cli_parse_mib(v);
            if (m < 0) {
                fprintf(stderr,
                        "carma submit: --mem '%s': a size of 1 MiB to 1 PiB expected, "
                        "such as 4096 (MiB), 4096M, 1.5G or 16GiB\n",
                        carma_quote(v, 40).s);
                json_decref(job);
                return 2;
            }
            json_object_set_new(job, "mem_mib", json_integer(m));
        } else if (!strcmp(a, "--time-limit")) {
            uint64_t secs;
            struct carma_err terr = {{0}};
            if (carma_duration_parse(v, CARMA_PROTO_MIN_TIME_LIMIT_S, CARMA_PROTO_MAX_TIME_LIMIT_S,
                                     &secs, &terr)) {
                fprintf(stderr, "carma submit: --time-limit %s\n", terr.msg);
                json_decref(job);
                return 2;
            }
            json_object_set_new(job, "time_limit_s", json_integer((json_int_t)secs));
        } else if (!strcmp(a, "--after")) {
            if (cli_after_opt("submit", v, &after)) {
                json_decref(job);
                return 2;
            }
        } else if (!strcmp(a, "--name")) {
            json_t *js = json_string(v);
            if (!js) {
                fprintf(stderr, "carma submit: --name: not valid UTF-8\n");
                json_decref(job);
                return 2;
            }
            json_object_set_new(job, "name", js);
        } else if (!strcmp(a, "--summary")) {
            /* "-": standard input, named "<stdin>", as carma estimate reads and names it */
            int in = !strcmp(v, "-");
            summary_path = v = in ? "<stdin>" : v;
            char *text = NULL;
            int rc = read_file(in ? "/dev/stdin" : v, CARMA_PROTO_MAX_SUMMARY, &text);
            if (rc) {
                fprintf(stderr, "carma submit: %s: %s\n", v,
                        rc == -E2BIG    ? "larger than 512 KiB"
                        : rc == -EILSEQ ? "holds a NUL byte: not a model summary"
                                        : strerror(-rc));
                json_decref(job);
                return 2;
            }
            json_t *s = json_string(text);
            free(text);
            if (!s) {
                fprintf(stderr, "carma submit: %s: not UTF-8 text\n", v);
                json_decref(job);
                return 2;
            }
            json_object_set_new(job, "summary", s);
        } else {
            bad = i - 1;
            goto usage_err;
        }
    }
    if (json_object_get(job, "summary") && !json_object_get(job, "batch")) {
        fprintf(stderr, "carma submit: --summary needs --batch (the estimator needs the batch "
                        "size)\n");
        json_decref(job);
        return 2;
    }
    const char *orphan = est_opt ? est_opt : train_opt;
    if (orphan && !json_object_get(job, "summary")) {
        fprintf(stderr, "carma submit: %s needs --summary (it %s)\n", orphan,
                est_opt ? "sizes the summary's model" : "says how the summary's model trains");
        json_decref(job);
        return 2;
    }
    /* The summary is read here first, so that its errors name the file. */
    if (summary_path && check_summary(summary_path,
                                      json_string_value(json_object_get(job, "summary")),
                                      job)) {
        json_decref(job);
        return 2;
    }
    if (i >= argc) {
        fprintf(stderr, "carma submit: no command given (carma submit [OPTIONS] -- CMD ARGS...)\n");
        json_decref(job);
        return 2;
    }
    json_t *av = json_array();
    for (; i < argc; i++) {
        json_t *s = json_string(argv[i]);
        if (!s) {
            fprintf(stderr, "carma submit: argument '%s' is not valid UTF-8\n", argv[i]);
            json_decref(av);
            json_decref(job);
            return 2;
        }
        json_array_append_new(av, s);
    }
    json_object_set_new(job, "argv", av);
    if (cli_after_put(&after, job) < 0) {
        fprintf(stderr, "carma submit: out of memory\n");
        json_decref(job);
        return 1;
    }
    return cli_submit_job(&c, "submit", job);
usage_err:
    if (bad) {
        static const char *const valued[] = {"--gpus",
                                             "--mem",
                                             "--name",
                                             "--summary",
                                             "--batch",
                                             "--seq-len",
                                             "--image-size",
                                             "--heads",
                                             "--experts-per-token",
                                             "--shared-layer-runs",
                                             "--optimizer",
                                             "--precision",
                                             "--attention",
                                             "--max-attempts",
                                             "--after",
                                             "--time-limit",
                                             NULL};
        cli_bad_arg("submit", argc, argv, bad, valued);
    }
    usage(stderr);
    json_decref(job);
    return 2;
}
