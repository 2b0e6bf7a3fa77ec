/* carma estimate: GPU memory of a training job from its model summary (torchsummary,
 * torchinfo, Keras, a printed PyTorch/Hugging Face module tree or a layer CSV). */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/client.h"
#include "cli/commands.h"
#include "estimate/estimate.h"
#include "estimate/parse.h"
#include "estimate/replay.h"
#include "sim/gpukind.h"
#include "util/csv.h"

static void estimate_usage(FILE *f)
{
    fprintf(f, "usage: carma estimate --summary FILE (--batch N | --max-batch)\n"
               "                      [--seq-len N | --image-size H[xW]]\n"
               "                      [--optimizer sgd|momentum|adam|adamw|adadelta]\n"
               "                      [--precision fp32|amp|bf16] [--attention eager|sdpa]\n"
               "                      [--heads N] [--experts-per-token K] [--shared-layer-runs N]\n"
               "                      [--tied-head]\n"
               "                      [--gradient-checkpointing] [--gradient-accumulation]\n"
               "                      [--gpu KIND] [--gpus N] [--floor MIB|fitted]\n"
               "                      [--coefficients FILE] [--json]\n"
               "\n"
               "Estimates the peak GPU memory of training the model described in FILE\n"
               "(torchsummary or torchinfo text, Keras model.summary(), a printed PyTorch /\n"
               "Hugging Face module tree, also with ptflops' or DeepSpeed's per-layer\n"
               "statistics, or a CSV type,out_elems,params[,count][,per_token];\n"
               "FILE - reads standard input) and a safe bound. Defaults: adamw, fp32,\n"
               "a100-40gb. --seq-len is required for sequence models (module trees with\n"
               "embeddings or attention): the tokens per sample; for a vision transformer,\n"
               "--image-size gives them: its patches and a class token (197 at 224x224 in\n"
               "16x16 patches; no class token where its position table has exactly the\n"
               "patches, as SigLIP's). An encoder-decoder (BART, T5, Marian) takes one\n"
               "--seq-len for both stacks: give the longer of the source and target lengths\n"
               "(the stack on the shorter one is then overestimated; the shorter length\n"
               "would underestimate the other). A vision tower beside a language model\n"
               "(LLaVA, Qwen-VL) is refused: they run at different lengths; estimate each\n"
               "from its own print and add them, or submit with --mem.\n"
               "--optimizer: PyTorch's (foreach) optimizers; sgd, momentum and adadelta are\n"
               "taken with weight decay, as their usual recipes set it (one more list of the\n"
               "parameters' size in the step).\n"
               "A PEFT model's print (lora.Linear adapters, modules_to_save; peft before 0.7's\n"
               "Linear4bit( with its arguments on the next line too) trains only its\n"
               "adapters: the rest is frozen, stored in 16 bits under amp/bf16 (4 or 8 bits\n"
               "for a bitsandbytes base). Quantized layers (bitsandbytes Linear4bit and\n"
               "Linear8bitLt, HQQLinear, AWQ's WQLinear) are frozen in any print; a print\n"
               "with nothing left to train is refused. A sequence model whose print ends with\n"
               "a norm and has no layer mapping to its token table's rows gets an output head\n"
               "tied to that table (a note says so).\n"
               "A table's printed 'Trainable params:' below its total freezes a Keras\n"
               "BatchNormalization's moving statistics and the rows before the first trained\n"
               "one (a frozen backbone) when they hold the difference (stored in fp32); when\n"
               "nothing does, every row is counted as trained, with a note.\n"
               "--gradient-checkpointing: the job calls gradient_checkpointing_enable() (or\n"
               "wraps each layer of a ModuleList in torch.utils.checkpoint): those layers keep\n"
               "only their input and run again in backward.\n"
               "--gradient-accumulation: the job accumulates gradients over micro-batches\n"
               "(gradient_accumulation_steps > 1 in HF Trainer or accelerate; --batch is the\n"
               "micro-batch) or calls zero_grad(set_to_none=False): every gradient stays\n"
               "allocated through the next forward and backward. The replay runs such loops\n"
               "(1 to 8 micro-batches per optimizer step, zero_grad freeing or keeping the\n"
               "gradients) and takes the largest peak.\n"
               "--image-size: the input's height and width (224 or 299x299), required for a\n"
               "module tree with 2-D convolutions (a printed torchvision CNN): the parser\n"
               "follows the tensor shapes through the print (docs/estimator.md); a U-Net\n"
               "decoder's F.interpolate before a concatenation is read at the joined size,\n"
               "and a convolution whose input channels nothing explains gets a note.\n"
               "--seq-len and --image-size size module trees and CSVs: a torchsummary,\n"
               "torchinfo or Keras table holds the shapes it was printed with (print it with\n"
               "the job's input), and they are refused beside one, as they are where they\n"
               "would size nothing: --seq-len for a model without per-token layers (no\n"
               "embedding or attention; a CSV without per_token 1 rows), --image-size for a\n"
               "CSV or a module tree without 2-D convolutions.\n"
               "--gpu: the GPU kind, for \"fits\", for PyTorch's default cuBLAS workspace\n"
               "(8.125 MiB per handle, 32 MiB on Hopper: h100-80gb), for the floor where one\n"
               "was measured on the kind (h100-80gb: 762 MiB, against 550 by default) and for\n"
               "the attention kernel SDPA can run (no FlashAttention on v100-32gb: grouped-query\n"
               "attention there, and in fp32 on any kind, runs PyTorch's math kernel, which\n"
               "keeps the probabilities).\n"
               "--max-batch: instead of --batch, the largest batch whose safe bound fits the\n"
               "GPU, found by doubling then bisection: that batch fits and the next does not\n"
               "(the bound is not strictly monotone in the batch, so a larger one may fit).\n"
               "--gpus N: the job trains on N GPUs with DistributedDataParallel, one process\n"
               "per GPU, each at --batch (torchrun's usual script): the estimate is per GPU and\n"
               "adds DDP's gradient buckets, a copy of the trained gradients. NCCL's own\n"
               "buffers are outside PyTorch's allocator and not counted (docs/estimator.md).\n"
               "--floor MIB: the measured memory of an idle process of the job's environment\n"
               "(CUDA context + cuBLAS/cuDNN); --floor fitted: the floor fitted on GPUMemNet's\n"
               "runs (eager module loading: about 1430 MiB dense, 2080 MiB with convolutions).\n"
               "Default: 550 MiB, measured on CARMA's A100 runs (lazy loading), with a bound\n"
               "that also covers the fitted floor.\n"
               "--attention: the attention the job runs, whatever the summary shows: eager\n"
               "(probabilities materialised) or sdpa (a fused kernel: none). Default: as shown\n"
               "(eager unless a module tree's class names say Sdpa or Flash; transformers since\n"
               "their 2025 attention refactor print BertSelfAttention and run SDPA by default).\n"
               "--heads N: the query heads of each attention block (num_heads,\n"
               "num_attention_heads), which prints do not show: eager attention keeps heads x\n"
               "seq x seq probabilities per sample. Required for nn.MultiheadAttention and\n"
               "Keras's MultiHeadAttention and GroupedQueryAttention under eager attention;\n"
               "other attention blocks are taken to have 64-wide heads (width / 64), so\n"
               "narrower ones (MiniLM's 32) are undercounted without it. No effect under\n"
               "--attention sdpa.\n"
               "--experts-per-token K: the experts a mixture-of-experts router sends each\n"
               "token to (its top-k, num_experts_per_tok in the model's config), which prints\n"
               "do not show. A module tree's MoE block (a ModuleList or ModuleDict of E\n"
               "identical experts beside a router with E outputs) is otherwise counted with\n"
               "every token through every expert, the safe side (a note says so); with it,\n"
               "each expert keeps what it keeps for K/E of the tokens, its gradients sized for\n"
               "all of them (the most one expert can get). 1 to E; refused for a print\n"
               "without MoE blocks.\n"
               "--shared-layer-runs N: how many times a model that shares one layer runs it\n"
               "(ALBERT's num_hidden_layers: a list of one layer in a list of one layer group),\n"
               "which prints do not show; each run keeps its activations. Default 24, the most\n"
               "of any released ALBERT (base runs 12). 1 to 256; refused for a print without\n"
               "such a group.\n"
               "--tied-head: the output head (a linear layer from the token table's width to\n"
               "its rows) shares the table's weight, which prints do not show\n"
               "(transformers' tie_word_embeddings, on by default; off in Llama-, Mistral-,\n"
               "GPT-J- and Pythia-style configurations): one weight, gradient and optimizer\n"
               "state instead of two. Refused for a print without such a head.\n"
               "Exit status: 0 it fits, 1 the bound does not fit the GPU, 2 bad input.\n");
}

/* An option's count: an integer from 1 to max (at most UINT32_MAX). */
static int parse_count(const char *s, const char *what, uint32_t max, uint32_t *out)
{
    uint64_t v;
    if (cli_parse_count("estimate", what, s, max, &v) < 0)
        return -EINVAL;
    *out = (uint32_t)v;
    return 0;
}

/* Layers with their repeats ("12 x BertLayer") counted, not rows. */
static uint64_t layer_count(const struct est_model *m)
{
    uint64_t n = 0;
    for (size_t i = 0; i < m->n; i++)
        n += m->layers[i].count;
    return n;
}

/* JSON "heads": where the head counts of the attention probabilities counted under a
 * came from (est_heads_used), or a --heads that counted none; NULL when neither. */
static json_t *heads_json(const struct est_model *m, enum est_attention a)
{
    int hs = est_heads_used(m, a);
    if (hs == EST_HEADS_ASSUMED)
        return json_pack("{s:s,s:i,s:i,s:b}", "source", est_heads_src_name(EST_HEADS_ASSUMED),
                         "count", (int)m->heads_assumed, "head_size",
                         m->window_line || m->positions_line ? EST_WINDOW_HEAD : 64, "counted",
                         1);
    if (m->heads)
        return json_pack("{s:s,s:i,s:b}", "source", est_heads_src_name(EST_HEADS_GIVEN),
                         "count", (int)m->heads, "counted", hs == EST_HEADS_GIVEN);
    if (hs == EST_HEADS_SHOWN)
        return json_pack("{s:s,s:b}", "source", est_heads_src_name(EST_HEADS_SHOWN), "counted",
                         1);
    return NULL;
}

/* Why a --heads counted nothing, for the text; attn: est_attention_assumed's answer.
 * "The summary shows the heads" only where every probabilities row counted is one the
 * table lists, [batch, heads, seq, seq] (a row of its own, not a module's output:
 * est_layer.attn 0). */
static const char *heads_unused_why(const struct est_model *m, enum est_attention a,
                                    const char *attn)
{
    if (strcmp(attn, "none") == 0)
        return "no attention blocks with heads";
    if (strcmp(attn, "sdpa") == 0)
        return "fused attention keeps no probabilities";
    for (size_t i = 0; i < m->n; i++) {
        const struct est_layer *l = &m->layers[i];
        if (l->kind == EST_K_ATTN && est_layer_materialised(l, a) && l->attn)
            return "its attention rows are sized as listed, not by heads";
    }
    return "the summary shows the heads: [batch, heads, seq, seq] rows";
}

int cmd_estimate(int argc, char **argv)
{
    static const struct option opts[] = {
        {"summary", required_argument, NULL, 's'},
        {"batch", required_argument, NULL, 'b'},
        {"seq-len", required_argument, NULL, 'l'},
        {"optimizer", required_argument, NULL, 'o'},
        {"precision", required_argument, NULL, 'p'},
        {"gpu", required_argument, NULL, 'g'},
        {"coefficients", required_argument, NULL, 'c'},
        {"floor", required_argument, NULL, 'f'},
        {"attention", required_argument, NULL, 'a'},
        {"image-size", required_argument, NULL, 'i'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {"gradient-checkpointing", no_argument, NULL, 'k'},
        {"gradient-accumulation", no_argument, NULL, 'r'},
        {"gpus", required_argument, NULL, 'n'},
        {"max-batch", no_argument, NULL, 'm'},
        {"heads", required_argument, NULL, 'e'},
        {"experts-per-token", required_argument, NULL, 'x'},
        {"shared-layer-runs", required_argument, NULL, 'u'},
        {"tied-head", no_argument, NULL, 't'},
        {NULL, 0, NULL, 0},
    };
    const char *summary = NULL, *gpu = "a100-40gb", *coef_file = NULL;
    struct est_opts o = {.optimizer = EST_OPT_ADAMW, .precision = EST_PREC_FP32};
    int json = 0, have_batch = 0, want_max = 0, tie = 0, ch;
    uint32_t image_h = 0, image_w = 0, heads = 0, runs = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 's': summary = optarg; break;
        case 'b':
            if (parse_count(optarg, "--batch", EST_MAX_BATCH, &o.batch) < 0)
                return 2;
            have_batch = 1;
            break;
        case 'l':
            if (parse_count(optarg, "--seq-len", EST_MAX_SEQ, &o.seq) < 0)
                return 2;
            break;
        case 'o':
        case 'p':
        case 'a':
            if (cli_train_opt("estimate", ch == 'o'   ? "optimizer"
                                          : ch == 'p' ? "precision"
                                                      : "attention",
                              optarg, &o) < 0)
                return 2;
            break;
        case 'i':
            if (cli_parse_image_size(optarg, &image_h, &image_w) < 0) {
                fprintf(stderr,
                        "carma estimate: --image-size must be H or HxW, each from 1 to 65536, "
                        "not '%s'\n", optarg);
                return 2;
            }
            break;
        case 'g': gpu = optarg; break;
        case 'n':
            if (parse_count(optarg, "--gpus", EST_MAX_GPUS, &o.gpus) < 0)
                return 2;
            break;
        case 'e':
            if (parse_count(optarg, "--heads", EST_MAX_HEADS, &heads) < 0)
                return 2;
            break;
        case 'x':
            if (parse_count(optarg, "--experts-per-token", EST_MAX_EXPERTS,
                            &o.experts_per_token) < 0)
                return 2;
            break;
        case 'u':
            if (parse_count(optarg, "--shared-layer-runs", EST_MAX_SHARED_RUNS, &runs) < 0)
                return 2;
            break;
        case 't':
            tie = 1;
            break;
        case 'c': coef_file = optarg; break;
        case 'f':
            if (strcmp(optarg, "fitted") == 0) {
                o.floor_src = EST_FLOOR_FITTED;
                break;
            }
            if (carma_parse_double(optarg, &o.floor_mib) < 0 || !(o.floor_mib > 0) ||
                o.floor_mib > 65536) {
                fprintf(stderr,
                        "carma estimate: --floor must be MiB in (0, 65536] or 'fitted', not "
                        "'%s'\n", optarg);
                return 2;
            }
            o.floor_src = EST_FLOOR_GIVEN;
            break;
        case 'j': json = 1; break;
        case 'k': o.grad_checkpoint = 1; break;
        case 'r': o.grad_accum = 1; break;
        case 'm': want_max = 1; break;
        case 'h': estimate_usage(stdout); return 0;
        default: estimate_usage(stderr); return 2;
        }
    }
    if (have_batch && want_max) {
        fprintf(stderr, "carma estimate: give --batch or --max-batch, not both\n");
        return 2;
    }
    if (!summary || !(have_batch || want_max) || optind != argc) {
        if (optind != argc)
            fprintf(stderr, "carma estimate: unexpected argument '%s'\n", argv[optind]);
        else
            fprintf(stderr, "carma estimate: %s is required\n",
                    !summary ? "--summary FILE" : "--batch N (or --max-batch)");
        estimate_usage(stderr);
        return 2;
    }
    const struct sim_gpu_kind *kind = sim_gpu_kind_find(gpu);
    if (!kind) {
        size_t nk;
        const struct sim_gpu_kind *all = sim_gpu_kind_all(&nk);
        fprintf(stderr, "carma estimate: unknown GPU kind '%s' (", gpu);
        for (size_t i = 0; i < nk; i++)
            fprintf(stderr, "%s%s", i ? ", " : "", all[i].name);
        fprintf(stderr, ")\n");
        return 2;
    }
    sim_gpu_kind_est_opts(kind, &o);
    if (o.precision == EST_PREC_BF16 && kind->cc < 80) /* the memory is the same either way */
        fprintf(stderr,
                "carma estimate: note: %s (compute capability %u.%u) has no native bfloat16: "
                "older PyTorch refuses bf16 autocast there, newer versions emulate it "
                "slowly, without bf16 convolutions in cuDNN; --precision amp (fp16) is native\n",
                kind->name, kind->cc / 10u, kind->cc % 10u);
    struct carma_err err;
    struct est_coef coef = *est_coef_default();
    if (coef_file) {
        char *cb;
        size_t cl;
        if (carma_file_read(coef_file, 1 << 20, &cb, &cl, &err) < 0) {
            fprintf(stderr, "carma estimate: %s\n", err.msg);
            return 2;
        }
        int crc = est_coef_parse(cb, cl, coef_file, &coef, &err);
        free(cb);
        if (crc < 0) {
            fprintf(stderr, "carma estimate: %s\n", err.msg);
            return 2;
        }
    }
    char *buf;
    size_t len;
    const char *path = summary; /* "-": standard input, named "<stdin>" in what is printed,
                                 * as carma sim names it */
    if (strcmp(summary, "-") == 0) {
        path = "/dev/stdin";
        summary = "<stdin>";
    }
    if (carma_file_read(path, EST_MAX_INPUT, &buf, &len, &err) < 0) {
        fprintf(stderr, "carma estimate: %s\n", err.msg);
        return 2;
    }
    struct est_layer *layers = calloc(EST_MAX_LAYERS, sizeof *layers);
    if (!layers) {
        free(buf);
        fprintf(stderr, "carma estimate: out of memory\n");
        return 1;
    }
    struct est_model m;
    est_model_init(&m, layers, EST_MAX_LAYERS);
    m.image_h = image_h;
    m.image_w = image_w;
    m.heads = heads;
    m.shared_layer_runs = runs;
    m.tie_head = (uint8_t)tie;
    int rc = est_model_prepare(&m, buf, len, summary, &o, &err);
    free(buf);
    if (rc < 0) {
        fprintf(stderr, "carma estimate: %s\n", err.msg);
        free(layers);
        return 2;
    }
    struct est_result r;
    struct est_replay_work *work = malloc(sizeof *work);
    if (!work) {
        free(layers);
        fprintf(stderr, "carma estimate: out of memory\n");
        return 1;
    }
    uint32_t max_batch = 0;
    struct est_result next; /* --max-batch: the estimate at max_batch + 1 */
    if (want_max) {
        rc = est_max_batch(&m, &coef, &o, work, &max_batch, &r, &next, &err);
        o.batch = max_batch ? max_batch : 1; /* what r describes */
    } else {
        rc = est_compute(&m, &coef, &o, work, &r, &err);
    }
    free(work);
    if (rc < 0) {
        fprintf(stderr, "carma estimate: %s: %s\n", summary, err.msg);
        free(layers);
        return 2;
    }
    uint64_t nlayers = layer_count(&m);
    char notes[EST_NOTES][EST_NOTE_MAX];
    size_t nnotes = est_notes(&m, &o, &r, notes);
    if (json) {
        json_t *b = json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "floor_mib", r.floor_mib,
                              "weights_mib", r.weights_mib, "gradients_mib", r.gradients_mib,
                              "optimizer_state_mib", r.optimizer_mib, "activations_mib",
                              r.activations_mib, "transient_mib", r.transient_mib,
                              "gradient_buckets_mib", r.buckets_mib);
        json_t *root = json_pack(
            "{s:f,s:f,s:b,s:s,s:f,s:o,s:s,s:s,s:I,s:I,s:s,s:I,s:I,s:s,s:s,s:s}", "estimate_mib",
            r.estimate_mib, "bound_mib", r.bound_mib, "fits", r.fits, "gpu", kind->name,
            "gpu_mib", kind->mem_mib, "breakdown", b, "floor_source",
            est_floor_src_name(o.floor_src), "format", est_format_name(m.format),
            "layers", (json_int_t)nlayers, "params", (json_int_t)m.params, "family",
            est_family_name(r.family), "batch", (json_int_t)o.batch,
            "seq_len", (json_int_t)o.seq, "optimizer", est_optimizer_name(o.optimizer),
            "precision", est_precision_name(o.precision), "attention",
            est_attention_assumed(&m, o.attention));
        /* How the estimate was made: a replay (and where its peak fell) or the terms. */
        if (root)
            json_object_set_new(root, "gradient_checkpointing",
                                json_boolean(o.grad_checkpoint));
        if (root)
            json_object_set_new(root, "gradient_accumulation", json_boolean(o.grad_accum));
        if (root && o.grad_checkpoint)
            json_object_set_new(root, "checkpointed_units",
                                json_integer((json_int_t)r.checkpointed_units));
        if (root)
            json_object_set_new(root, "rows", json_integer((json_int_t)m.n));
        json_t *hj = root ? heads_json(&m, o.attention) : NULL;
        if (hj)
            json_object_set_new(root, "heads", hj);
        if (root)
            json_object_set_new(root, "gpus", json_integer(o.gpus > 1 ? o.gpus : 1));
        if (root)
            json_object_set_new(root, "trainable_params",
                                json_integer((json_int_t)(m.params - m.frozen)));
        if (root && m.trainable_line)
            json_object_set_new(root, "printed_trainable_params",
                                json_integer((json_int_t)m.trainable_printed));
        if (root && m.moe_blocks) {
            json_t *moe = json_pack("{s:I,s:i,s:i,s:i,s:b}", "blocks", (json_int_t)m.moe_blocks,
                                    "experts_min", (int)m.moe_experts_min, "experts_max",
                                    (int)m.moe_experts_max, "line", (int)m.moe_line,
                                    "experts_per_token_given", o.experts_per_token != 0);
            if (moe)
                json_object_set_new(moe, "experts_per_token",
                                    json_integer(o.experts_per_token ? o.experts_per_token
                                                                     : m.moe_experts_max));
            json_object_set_new(root, "moe", moe);
        }
        if (root && m.shared_line)
            json_object_set_new(root, "shared_layer",
                                json_pack("{s:i,s:i,s:b}", "line", (int)m.shared_line,
                                          "shared_layer_runs", (int)(runs ? runs : EST_SHARED_RUNS),
                                          "shared_layer_runs_given", runs != 0));
        if (root && m.head_table_line)
            json_object_set_new(root, "output_head",
                                json_pack("{s:i,s:I,s:I,s:b}", "table_line", (int)m.head_table_line,
                                          "rows", (json_int_t)m.head_table_rows, "width",
                                          (json_int_t)m.head_table_width, "tied", m.head_tied));
        if (root && (m.spatial || m.tokens))
            json_object_set_new(root, "image_size", json_pack("[I,I]", (json_int_t)image_h,
                                                              (json_int_t)image_w));
        json_t *nj = root && nnotes ? json_array() : NULL;
        for (size_t i = 0; nj && i < nnotes; i++)
            json_array_append_new(nj, json_string(notes[i]));
        if (nj)
            json_object_set_new(root, "notes", nj);
        if (root && want_max)
            json_object_set_new(root, "max_batch", json_integer(max_batch));
        if (root && want_max && next.bound_mib > 0)
            json_object_set_new(root, "next_bound_mib", json_real(next.bound_mib));
        json_t *mj = NULL;
        if (root && r.peak_phase)
            mj = json_pack("{s:s,s:s,s:i}", "kind", "replay", "peak_phase",
                           est_replay_phase_name(r.peak_phase), "peak_iteration",
                           r.peak_iteration);
        if (mj && r.accum_micro_batches) { /* the accumulating loop whose peak it is */
            json_object_set_new(mj, "micro_batches", json_integer(r.accum_micro_batches));
            json_object_set_new(mj, "set_to_none", json_boolean(!r.accum_grads_kept));
        }
        if (mj)
            json_object_set_new(root, "model", mj);
        else if (root)
            json_object_set_new(root, "model", json_pack("{s:s}", "kind", "per-kind"));
        if (!root) {
            free(layers);
            fprintf(stderr, "carma estimate: out of memory\n");
            return 1;
        }
        char *txt = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        json_decref(root);
        if (!txt) {
            free(layers);
            return 1;
        }
        printf("%s\n", txt);
        free(txt);
    } else {
        printf("%s: %s, %llu layers", summary, est_format_name(m.format),
               (unsigned long long)nlayers);
        if (nlayers != m.n) /* "12 x BertLayer": its rows count once */
            printf(" (%zu as printed)", m.n);
        printf(", %llu parameters", (unsigned long long)m.params);
        if (m.frozen) /* a PEFT model's adapters, a table's trained rows */
            printf(" (%llu trained, the rest frozen)",
                   (unsigned long long)(m.params - m.frozen));
        printf("\n");
        for (size_t i = 0; i < nnotes; i++)
            printf("note: %s\n", notes[i]);
        printf("batch %u%s%.0u", o.batch, o.seq ? ", seq-len " : "", o.seq);
        if (m.tokens)
            printf(" (%ux%u in %ux%u patches%s)", image_h, image_w, m.patch_h, m.patch_w,
                   est_model_class_token(&m) ? ", and a class token" : "");
        printf(", %s, %s%s%s, %s (%.0f MiB)", est_optimizer_name(o.optimizer),
               est_precision_name(o.precision),
               !o.grad_checkpoint      ? ""
               : r.checkpointed_units ? ", gradient checkpointing"
                                       : ", gradient checkpointing (no effect: no repeated "
                                         "layers to checkpoint)",
               !o.grad_accum ? ""
               : r.peak_phase ? ", gradient accumulation"
                              : ", gradient accumulation (no effect: the per-kind terms "
                                "count the gradients beside the activations)",
               kind->name, kind->mem_mib);
        if (o.gpus > 1)
            printf(", per GPU of %u under DistributedDataParallel", o.gpus);
        if (m.moe_blocks && o.experts_per_token)
            printf(", %u expert%s per token", o.experts_per_token,
                   o.experts_per_token == 1 ? "" : "s");
        printf("\n");
        const char *attn = est_attention_assumed(&m, o.attention);
        int hs = est_heads_used(&m, o.attention);
        if (strcmp(attn, "none") != 0) {
            printf("attention: %s (%s", attn,
                   strcmp(attn, "eager") == 0 ? "probabilities counted"
                                              : "fused: no probabilities");
            if (hs == EST_HEADS_GIVEN)
                printf(", %u heads per block: --heads", m.heads);
            else if (hs == EST_HEADS_ASSUMED && m.window_line)
                printf(", heads assumed %d wide in %dx%d windows", EST_WINDOW_HEAD,
                       EST_WINDOW, EST_WINDOW);
            else if (hs == EST_HEADS_ASSUMED && m.positions_line)
                printf(", heads assumed %d wide over the positions of a convolutional "
                       "tensor: %u in the first block", EST_WINDOW_HEAD, m.heads_assumed);
            else if (hs == EST_HEADS_ASSUMED)
                printf(", heads assumed 64 wide: %u in the first block; --heads N if "
                       "narrower", m.heads_assumed);
            printf(")\n");
        }
        if (m.heads && hs != EST_HEADS_GIVEN)
            printf("--heads %u: no effect (%s)\n", m.heads,
                   heads_unused_why(&m, o.attention, attn));
        printf("  floor            %10.1f MiB  (%s)\n", r.floor_mib,
               est_floor_src_name(o.floor_src));
        printf("  weights          %10.1f MiB\n", r.weights_mib);
        /* the replay's breakdown is what is allocated at the peak: BERT's, at the start
         * of a backward (the logits' gradient), holds no parameter gradient yet */
        printf("  gradients        %10.1f MiB%s\n", r.gradients_mib,
               r.peak_phase && r.gradients_mib == 0 ? "  (none held yet at the peak)" : "");
        printf("  optimizer state  %10.1f MiB\n", r.optimizer_mib);
        printf("  activations      %10.1f MiB\n", r.activations_mib);
        printf("  transient        %10.1f MiB\n", r.transient_mib);
        if (o.gpus > 1)
            printf("  gradient buckets %10.1f MiB  (DDP)\n", r.buckets_mib);
        printf("  estimate         %10.1f MiB", r.estimate_mib);
        if (r.peak_phase && r.accum_micro_batches)
            printf("  (replay: peak in iteration %d, %s, of %u micro-batch%s per step, "
                   "zero_grad(set_to_none=%s))\n", r.peak_iteration,
                   est_replay_phase_name(r.peak_phase), r.accum_micro_batches,
                   r.accum_micro_batches == 1 ? "" : "es",
                   r.accum_grads_kept ? "False" : "True");
        else if (r.peak_phase)
            printf("  (replay: peak in iteration %d, %s)\n", r.peak_iteration,
                   est_replay_phase_name(r.peak_phase));
        else
            printf("  (per-kind terms)\n");
        printf("  safe bound       %10.1f MiB  (%s)\n", r.bound_mib,
               r.fits ? "fits" : "does not fit");
        if (want_max && max_batch == 0)
            printf("largest batch that fits: none (batch 1's safe bound is above %s's "
                   "%.0f MiB)\n", kind->name, kind->mem_mib);
        else if (want_max && next.bound_mib > 0)
            printf("largest batch that fits: %u (batch %u: safe bound %.1f MiB, above %s's "
                   "%.0f MiB)\n", max_batch, max_batch + 1, next.bound_mib, kind->name,
                   kind->mem_mib);
        else if (want_max)
            printf("largest batch that fits: %u (the most carma estimates)\n", max_batch);
    }
    free(layers);
    return r.fits ? 0 : 1;
}
