/* GPU memory estimator: the model of DESIGN.md §5 over a parsed layer list.
 *
 * A model description (parsed by estimate/parse.h) is a list of layers, each with a
 * kind, its output elements per sample (or per token when the model is a sequence
 * model) and its parameter count. The estimate for a training step is
 *
 *   floor(gpu kind, library family)                        CUDA context, cuBLAS/cuDNN
 * + weights + gradients + optimizer state                  bytes per parameter, exact
 * + sum over layers of c[kind] * round(batch * out * elem)  saved activations
 * + c_input * round(batch * input)                         the input batch
 * + c_concat * round(batch * concatenations)             cats the list omits (est_concat_infer)
 * + c_transient * round(largest layer output)              largest transient buffer
 *   + c_step * params * 4 B                                 optimizer-step temporaries
 *
 * with every tensor rounded the way PyTorch's caching allocator rounds (512 B
 * blocks up to 1 MiB, 2 MiB multiples above). The coefficients c[] are fitted
 * offline (estimate/fit.h, `carma eval-estimator --fit`) and shipped as a small
 * table (data/estimator/coefficients.csv, embedded in estimate/coef_default.c).
 * The safe bound is estimate + q * (scale0 + dynamic part), q a conformal quantile
 * of normalised residuals of the fit.
 *
 * No I/O, no allocation: callers own every buffer. */
#ifndef CARMA_ESTIMATE_ESTIMATE_H
#define CARMA_ESTIMATE_ESTIMATE_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

/* Hard bounds on untrusted input. */
#define EST_MAX_LAYERS 65536u
#define EST_MAX_COUNT 100000000ull  /* elements or params of one layer: 1e8 x repeat */
#define EST_MAX_ELEMS (1ull << 40)  /* per-sample output elements of one layer */
#define EST_MAX_PARAMS (1ull << 40) /* parameters of one layer / the model */
#define EST_MAX_BATCH 1048576u
#define EST_MAX_SEQ 1048576u
#define EST_MAX_HEADS 4096u /* attention heads per block (--heads) */
#define EST_MAX_EXPERTS 65536u /* experts per token (--experts-per-token) */

enum est_kind {
    EST_K_LINEAR = 0, /* Linear, Dense, HF Conv1D: saves its input */
    EST_K_CONV,       /* Conv1d/2d/3d, ConvTranspose */
    EST_K_NORM,       /* BatchNorm, LayerNorm, GroupNorm, ... */
    EST_K_ACT,        /* ReLU, GELU, SiLU, Tanh, ... (not in place) */
    EST_K_DROPOUT,
    EST_K_POOL,
    EST_K_SOFTMAX,
    EST_K_EMBED,      /* Embedding: output per token */
    EST_K_ATTN,       /* attention probabilities: heads x seq per token */
    EST_K_OTHER,      /* containers, identity, flatten, in-place ops: no new tensor */
    EST_K_COUNT
};

/* Name of a kind ("linear", "conv", ...) and the reverse; -1 when unknown. */
const char *est_kind_name(enum est_kind k);
int est_kind_from_name(const char *name);

/* Classifies a layer type name as printed by PyTorch/Keras ("Conv2d", "BatchNorm2d",
 * "LayerNorm", "GELU", "Dense", "MaxPool2D", "BertSelfAttention", ...), case-
 * insensitively by what it contains. Unknown names are EST_K_OTHER. */
enum est_kind est_kind_classify(const char *type, size_t len);

/* Cross-covariance attention (timm's XCA, CrossCovarianceAttn: XCiT's, EdgeNeXt's), which
 * attends over channels: no sequence x sequence scores, so no attention to the parsers. */
int est_type_over_channels(const char *type, size_t len);

/* Why a layer type cannot be estimated safely (recurrent layers: LSTM, GRU, RNN, Keras's
 * Bidirectional wrapper), or
 * NULL. Parsers refuse such a layer, naming its line, rather than leave it out. */
const char *est_type_unmodelled(const char *type, size_t len);

/* est_layer.flags */
#define EST_LF_SAVES_RESULT 0x01 /* an activation that keeps its output for backward
                                  * (ReLU, Tanh, Sigmoid), not its input */
#define EST_LF_WEIGHT_PER_ELEM 0x02 /* its weight's gradient is summed from a tensor of
                                     * the input's size (PReLU) */
#define EST_LF_FUSED 0x04 /* attention probabilities of a fused kernel (a module tree's
                           * Sdpa/Flash class): never materialised unless --attention eager */
#define EST_LF_GATED 0x08 /* a linear layer fed the same input as the linear layer before
                           * it, whose output multiplies the current tensor (the up
                           * projection of a gated MLP: down(act(gate(x)) * up(x))) */
#define EST_LF_RMS 0x10   /* an RMSNorm written in Python (Hugging Face's LlamaRMSNorm and
                           * kin, T5LayerNorm): it keeps its normalised input as well */
#define EST_LF_INPLACE 0x20 /* an activation that writes over its input (a module tree's
                             * ReLU(inplace=True) in a convolutional network): a row as
                             * tables list it, but no new tensor for the replay */
#define EST_LF_LORA_DROP 0x40 /* a LoRA adapter's input passes through dropout first: a
                               * copy of the input and its mask are kept */
#define EST_LF_TRAINED 0x80   /* (parser) trained in a PEFT model: a modules_to_save copy */
#define EST_LF_SCORES 0x100   /* attention in a model whose attention adds a learned
                               * position bias to its scores (a position table inside an
                               * attention block: T5's relative_attention_bias): the scores
                               * are computed in Python and kept under any --attention */
#define EST_LF_TIED_SRC 0x200 /* (module trees) an encoder-decoder's token table named
                              * `shared`, which its stacks' `embed_tokens` are (Hugging Face
                              * passes the one module to both) */
#define EST_LF_TIED 0x400     /* a table that is the EST_LF_TIED_SRC table printed again: no
                              * weight or optimizer state of its own; its lookup's gradient
                              * is added to the table's (est_model.tied_params) */
#define EST_LF_GROUPED 0x1000 /* (module trees) attention whose one fused projection makes a
                              * query and a narrower key and value (multi-query, grouped):
                              * est_attention_math as for separate grouped projections */
#define EST_LF_ATTN_DROP 0x2000 /* (module trees) attention whose block prints a dropout at a
                                * rate above 0: its probabilities' dropout, applied in
                                * Python or by the math kernel, is taken at a rate above 0
                                * too (GPTBigCode's attn_pdrop beside resid_pdrop) */
#define EST_LF_PRODUCT 0x800 /* (module trees) a pool row that is an elementwise product the
                              * print does not show (a layer scale, a GLU's act(x0) * x1, a
                              * global response norm's x * N(x)): one kept tensor of its
                              * input's size, a norm's in the per-kind terms, not a
                              * pooling's (whose fitted multiplier is for small outputs) */
#define EST_LF_COSINE 0x4000 /* (module trees) cosine attention (Swin V2's: a network computes
                              * its position bias): a trained logit scale multiplies q k^T,
                              * which is kept for its gradient beside the probabilities */
#define EST_LF_TALKING 0x8000 /* (module trees) talking-heads attention (timm's
                               * TalkingHeadAttn): linear layers heads -> heads on the scores
                               * before and after the softmax, each keeping its input */
/* (module trees) eager attention whose block prints dropouts at rate 0 only (GPT-J's and
 * BLOOM's attn_dropout, p=0.0): F.dropout hands the probabilities back themselves, no
 * mask, no copy */
#define EST_LF_ATTN_NODROP 0x10000

/* est_layer.unit: a module tree's layers of a ModuleList (BERT's `layer`, GPT-2's `h`,
 * Llama's `layers`), which transformers' gradient checkpointing runs one at a time. A
 * unit starts at a row with EST_UNIT_START (each of its repeats too) and runs to the next
 * start, or through a row with EST_UNIT_END (the list's last row). */
#define EST_UNIT_START 0x01
#define EST_UNIT_END 0x02

/* est_layer.moe: a module tree's mixture-of-experts block (est_model.moe_blocks), whose
 * router sends each token to k of its E experts (est_opts.experts_per_token). The router's
 * row (a linear layer from the block's input width d to E scores) comes first, then the
 * experts' rows: a repeat `(0-E-1): E x Expert(`, its rows counted E times over the
 * router's count, or E written-out entries, each with its rows. Rows with any of these
 * bits carry est_layer.experts = E. */
#define EST_MOE_ROUTER 0x01 /* the router */
#define EST_MOE_EXPERT 0x02 /* a row of an expert */
#define EST_MOE_FIRST 0x04  /* an expert's first row: reads its gathered tokens */
#define EST_MOE_LAST 0x08   /* an expert's last row that makes a tensor: its output is
                             * weighted by the routing and added into the block's output */

struct est_layer {
    uint8_t kind;      /* enum est_kind */
    uint8_t per_token; /* out is per token: multiply by the sequence length */
    uint8_t attn;      /* out is heads x seq per token (attention scores) */
    uint32_t flags;    /* EST_LF_* */
    uint8_t wbits;     /* storage bits of a frozen weight: 0 the precision's, 4 or 8 when
                          quantized (bitsandbytes Linear4bit, Linear8bitLt; AWQ), 16 when
                          quantized to bits the print does not give (HQQ): the most; 32 in
                          fp32 whatever the precision (a table's frozen rows: Keras keeps its
                          variables in fp32 under mixed precision, and nothing says a frozen
                          backbone was loaded in 16 bits) */
    uint8_t unit;      /* EST_UNIT_*: where a unit of gradient checkpointing starts, ends */
    uint8_t keeps;     /* an activation written out in Python (est_type_keeps): tensors
                          of its output's size its graph keeps besides its input */
    uint8_t shares_input; /* a linear layer that reads the input of the linear layer
                             before it: an attention's key and value projections after
                             its query's, whose outputs the attention keeps */
    uint8_t heads_src; /* enum est_heads_src: where an attention row's head count (its
                          probabilities are heads x seq x seq) came from */
    uint8_t keeps32;   /* an activation written out in Python with an operation on
                          autocast's fp32 list (est_type_keeps32): how many of its `keeps`
                          tensors are fp32 under autocast; 0: it runs in its input's
                          precision */
    uint8_t moe;       /* EST_MOE_*: a mixture-of-experts block's router or expert row */
    uint8_t norm16;    /* a norm that autocast runs in its input's precision (est_type_norm16:
                          BatchNorm), 0: in fp32 (LayerNorm, GroupNorm, RMSNorm, a norm
                          whose class is not known) */
    uint32_t keys;     /* an attention row (attn): the keys each query attends to when a
                          window bounds them below the sequence (EST_SLIDE_KEYS: Longformer's
                          sliding window), 0: every position of the sequence */
    uint32_t count;    /* repeats (HF "12 x BertLayer"), >= 1 */
    uint32_t rank;     /* a linear layer with a trainable low-rank adapter (PEFT's LoRA):
                          its rank r; params - frozen = r * (in + out) */
    uint32_t experts;  /* with est_layer.moe: E, the experts of its block; else 0 */
    uint32_t shared_from; /* an EST_LF_TIED row of a layer run again with the same
                             parameters (ALBERT's shared layer): 1 + the row whose
                             parameters it uses (its gradient is added to theirs); 0 none */
    uint64_t out;      /* output elements per sample (per token when per_token) */
    uint64_t params;   /* parameters of one repeat, frozen ones included */
    uint64_t frozen;   /* of which get no gradient (a PEFT model's base weights; a Keras
                          BatchNormalization's moving mean and variance) */
};

/* est_layer.heads_src. Eager attention keeps heads x seq x seq probabilities per sample,
 * and most prints do not show the heads. */
enum est_heads_src {
    EST_HEADS_SHOWN = 0, /* as the summary has them (a torchinfo [batch, heads, seq, seq]
                          * row, a CSV's numbers), or not an attention row */
    EST_HEADS_ASSUMED,   /* width / 64: a head size of 64 (BERT, GPT-2, ViT, most Hugging
                          * Face models), for attention blocks whose q, k, v projections
                          * the print shows; narrower heads are undercounted */
    EST_HEADS_GIVEN,     /* est_model.heads (--heads) */
    EST_HEADS_UNKNOWN,   /* a class that never shows its heads and has no head size to
                          * assume (PyTorch's nn.MultiheadAttention, Keras's
                          * MultiHeadAttention) and no --heads: est_heads_check refuses its
                          * probabilities (the row holds a placeholder count) */
};
const char *est_heads_src_name(enum est_heads_src s); /* "shown", "assumed", ... */

enum est_format {
    EST_FMT_NONE = 0,
    EST_FMT_TORCHSUMMARY,
    EST_FMT_TORCHINFO,
    EST_FMT_KERAS,
    EST_FMT_MODTREE,
    EST_FMT_CSV,
};
const char *est_format_name(enum est_format f);

/* A parsed model. `layers` is caller-owned storage of `cap` entries. */
struct est_model {
    struct est_layer *layers;
    size_t n, cap;
    uint64_t params;       /* total parameters (sum of layers x count; an EST_LF_TIED
                              table's not again) */
    uint64_t tied_params;  /* the EST_LF_TIED tables' (their rows hold them) */
    uint64_t frozen;       /* of which frozen (est_model_freeze) */
    /* A table's printed "Trainable params:" (torchsummary, Keras): the count and its line
     * (0: none printed); trainable_unplaced (EST_TRAIN_*), why the rows do not train
     * that count, which the parser then left trained (the safe side); 0: they do. */
    uint64_t trainable_printed;
    size_t trainable_line;
    int trainable_unplaced;
    /* A torchinfo table's parameters that its printed "Total params:" (line
     * params_unplaced_line) holds beyond its rows and its containers' own counts, too few
     * to refuse (est_parse_torchinfo): added as parameters, with a note, since rows
     * missing from the table would have had activations too; 0: none. */
    uint64_t params_unplaced;
    size_t params_unplaced_line;
    uint64_t input;        /* input elements per sample, per token for a sequence model
                              (0 when unknown) */
    int cudnn;             /* runs a convolution (also one read as a linear layer, a
                              patch embedding): its environment loads cuDNN */
    int needs_seq;         /* a sequence model: --seq-len is required */
    size_t needs_seq_line; /* the line that made it one (for the error) */
    uint64_t max_positions;      /* rows of its learned position table (GPT-2's wpe, BERT's
                                    position_embeddings); 0: none seen */
    size_t max_positions_line;
    size_t positions_differ[2];  /* lines of two position tables of different lengths
                                    (0: none such) */
    size_t vision_lm[2];         /* lines of a patch embedding (a vision tower) and of a
                                    vocabulary table (a language model) in one module tree,
                                    refused (0: none such) */
    enum est_format format;
    /* The batch a table was printed at (its shapes' first dimension; the parsers divide it
     * out), 0 when its shapes do not say (-1, None, a module tree): a note names it when
     * --batch differs. */
    uint64_t table_batch;
    /* Module trees of convolutional networks: the input image's height and width, set
     * by the caller before parsing (0: not given, and a tree with a spatial
     * convolution is refused); the parser then sizes every tensor and finds the
     * concatenations itself (concat, elements per sample, replaces est_concat_infer). */
    uint32_t image_h, image_w;
    int spatial;     /* the parser sized tensors from image_h x image_w */
    /* A vision transformer (a patch embedding: a convolution whose kernel is its stride)
     * read with image_h x image_w: the patch size, and the tokens per image that gives,
     * (image_h / patch_h) x (image_w / patch_w) patches and a class token. */
    uint32_t patch_h, patch_w, tokens;
    uint64_t concat; /* when spatial: materialised concatenations, elements per sample */
    /* Attention heads per block, set by the caller before parsing (--heads; 0: not given):
     * the query heads of every attention block whose heads the print does not show (each
     * block's query width must divide by it). The parser sets each attention row's
     * heads_src; heads_assumed is the count of the first block sized as width / 64
     * (EST_HEADS_ASSUMED), heads_line and heads_class the line and class of the first
     * block whose heads are EST_HEADS_UNKNOWN (0, NULL: none). */
    uint32_t heads;
    /* How many times a layer group of one layer runs (ALBERT's num_hidden_layers), set by
     * the caller before parsing (--shared-layer-runs; 0: not given, EST_SHARED_RUNS
     * assumed); refused by est_model_prepare where the print has no such group. */
    uint32_t shared_layer_runs;
    /* Module trees: an output head of the token table's shape (a linear layer from its
     * width to its rows, bias or none): the table's line, rows and width (0: none). The
     * print cannot show whether they share one weight (transformers' tie_word_embeddings);
     * tie_head, set by the caller before parsing (--tied-head), says so, and the parser
     * then counts that weight once (head_tied; refused by est_model_prepare without such
     * a head). */
    size_t head_table_line;
    uint64_t head_table_rows, head_table_width;
    uint8_t tie_head, head_tied;
    uint32_t heads_assumed;
    uint32_t bias_heads; /* module trees: the heads of the first position-bias table inside
                            attention (T5's relative_attention_bias, buckets x heads), 0 */
    size_t heads_line;
    const char *heads_class; /* a static string */
    /* Module trees, for notes: the first line of a quantized layer outside a PEFT print
     * (read frozen: no optimizer trains its packed weight) and the parameters of all of
     * them (0: none); the line of the token table whose output head the parser assumed,
     * tied to it in forward (no layer maps to its rows), 0: none, with its rows and width. */
    size_t quant_line;
    uint64_t quant_params;
    /* Module trees: the first leaf of a class no kind knows that prints arguments
     * (`Mixer(dim=64, heads=4)`) and no `, N params` count, read as holding no parameters
     * and keeping no tensor, 0: none; its class, for the note (est_notes). */
    size_t unsized_line;
    char unsized_cls[48];
    /* The first line of a PEFT DoRA layer (lora_magnitude_vector's DoraLinearLayer), 0:
     * none. Read as plain LoRA: its magnitude vector, the base output it keeps and the
     * weight it builds each forward are not modelled, and a note says the estimate is low. */
    size_t dora_line;
    size_t tied_head_line;
    uint64_t tied_head_rows, tied_head_width;
    size_t tied_head_bare; /* the line of an output head printed without its size that the
                              assumed head stands for (a class of its own, as Baichuan's
                              NormHead()); 0: none, a head tied in forward */
    /* Module trees: the line of the first position-bias table inside an attention block
     * (EST_LF_SCORES), 0 when none. */
    size_t scores_bias_line;
    /* Module trees read with --image-size: the first attention block over the positions
     * of a convolutional tensor (not Swin's windows), and how many it attends over. */
    size_t positions_line;
    uint64_t positions_hw;
    uint32_t positions_window; /* that attention within windows of this side (MaxViT's
                                  partitions), 0: global */
    uint32_t positions_sr;     /* global over its keys and values reduced by a convolution
                                  of this stride (PVT, SegFormer), 0: none */
    uint64_t positions_keys;   /* and their positions */
    uint32_t positions_unfold; /* over the tensor unfolded into patches of this side, each
                                  position over its place in every patch (MobileViT), 0:
                                  none */
    size_t subsample_line;     /* the first query subsampling read at stride 2 (LeViT's
                                  Subsample()), 0: none */
    size_t channels_line;      /* the first attention over channels (DaViT's
                                  ChannelAttention, XCiT's XCA), 0: none */
    uint8_t channels_l2qk;     /* ... and it L2-normalises its queries and keys (XCA) */
    size_t slide_line;         /* the first attention read over a sliding window
                                  (EST_SLIDE_KEYS), 0: none */
    size_t shared_line;        /* a list of one layer in a list of one layer group
                                  (ALBERT's), read as EST_SHARED_RUNS runs of that layer
                                  with its parameters: the group's line, 0: none */
    /* Module trees: the line of the model's only attention block when it is a layer of a
     * ModuleList that holds no other (a layer a model may run several times, as ALBERT
     * does: counted once; ALBERT's list of one group: shared_line), 0 otherwise; attn_line,
     * the first attention block's line (the parser's). */
    size_t single_layer_line, attn_line;
    /* Module trees: the first attention block's line when the print shows no position
     * encoding but the token table (no second table, no module whose name or class says
     * rotary, RoPE, position or ALiBi, no patch embedding, no Sdpa/Flash class): its
     * attention may build positions into scores it computes in Python (ALiBi), which no
     * SDPA kernel runs; 0 otherwise. */
    size_t no_position_line;
    /* Module trees read with image_h x image_w, for a note: the first convolution or norm
     * whose input channels no tensor has and no concatenation of the newest tensor with an
     * earlier one makes, read as a join the print does not show at the newest tensor's
     * size: its line (0: none), channels and that size; and how many such leaves. */
    size_t join_line;
    uint64_t join_channels, join_h, join_w;
    uint64_t join_count;
    /* ... and the first pooling printed without arguments (a class of its own that shows
     * no window: torchvision's LastLevelMaxPool()), read as keeping its input's size (0:
     * none). */
    size_t bare_pool_line;
    /* ... and the first windowed attention over a grid of patches (Swin), read with
     * EST_WINDOW x EST_WINDOW windows and heads of EST_WINDOW_HEAD channels, which the
     * print does not show (0: none). */
    size_t window_line;
    /* A module tree printed with a profiler's statistics before each module's arguments
     * (EST_PROF_*: ptflops, DeepSpeed's flops profiler; 0: none), read past. The
     * parameters the root's statistics give (the tool counts trained ones only), within
     * half their last printed digit, and their line (0: none printed). */
    int profiler;
    double profiler_params, profiler_tol;
    size_t profiler_line;
    /* Module trees: mixture-of-experts blocks (est_layer.moe), repeats counted (0: none),
     * the fewest and most experts one has, the first one's line, and the line of the first
     * router printed without sizes (DeepSeek's `MoEGate()`) that the parser sized as a
     * linear layer from the experts' width to their count (0: none). */
    uint64_t moe_blocks;
    uint32_t moe_experts_min, moe_experts_max;
    size_t moe_line, moe_gate_line;
};

/* est_model.profiler */
#define EST_PROF_PTFLOPS 1
#define EST_PROF_DEEPSPEED 2

/* est_model.trainable_unplaced */
#define EST_TRAIN_NO_PREFIX 1 /* below the rows' trained parameters, and no frozen prefix of
                               * them holds the difference: all but the rows the table marks
                               * frozen train */
#define EST_TRAIN_ZERO 2      /* 0 (a model that trains nothing: a backbone printed alone):
                               * as EST_TRAIN_NO_PREFIX */
#define EST_TRAIN_ABOVE 3     /* above the parameters of the rows not marked frozen (an edited
                               * table): every parameter trains */

/* A PEFT model (parsed from a module tree with LoRA adapters) trains only its adapters
 * and modules_to_save copies: marks every other layer's parameters frozen and sums
 * m->frozen. Idempotent. */
void est_model_freeze(struct est_model *m);

/* Sums m->frozen from the layers' frozen parameters, an EST_LF_TIED table's once (a tied
 * head's bias, its own, counted). */
void est_model_count_frozen(struct est_model *m);

/* Sets up an empty model over caller storage. */
void est_model_init(struct est_model *m, struct est_layer *storage, size_t cap);

/* Appends a layer; returns 0, or -E2BIG when full or a count is out of bounds. */
int est_model_add(struct est_model *m, enum est_kind kind, uint64_t out, uint64_t params,
                  uint32_t count, int per_token);

/* The EST_LF_* flags a layer of kind k and type name implies: only activations have
 * any ("ReLU" keeps its result; "ReLU6", "LeakyReLU", "Hardtanh" and the rest keep their
 * input; "PReLU" sums its weight's gradient from a full-size tensor). */
unsigned est_type_flags(enum est_kind k, const char *type, size_t len);

/* est_model_add with the kind and flags a layer type name implies. */
/* What an activation class written out in Python keeps for backward besides its input,
 * in tensors of its output's size (0 for a single operation, and for other kinds).
 * Hugging Face's activations.py: NewGELUActivation and AccurateGELUActivation
 * (0.5x (1 + tanh(c (x + 0.044715 x^3)))) keep 0.5x, the tanh and 1 + tanh, 3;
 * FastGELUActivation also its two factors inside the tanh and 0.044715x, 6;
 * QuickGELUActivation (x sigmoid(1.702x)) the sigmoid, 1. */
unsigned est_type_keeps(enum est_kind k, const char *type, size_t len);

/* Under autocast (--precision amp/bf16), how many of the tensors est_type_keeps counts are
 * fp32, for an activation class written out in Python that calls an operation on
 * autocast's fp32 list (0 for every other class and kind). That operation casts its
 * input to fp32 and keeps the copy (the input itself is then kept by nothing), and every
 * operation after it runs in fp32 by type promotion, so the output is fp32 too.
 * NewGELUActivation and AccurateGELUActivation compute 0.5x (16-bit) first, then
 * torch.pow(x, 3) (on the fp32 list): the tanh and 1 + tanh they keep are fp32, 2.
 * FastGELUActivation (x * x, no pow) and QuickGELUActivation (sigmoid) stay 16-bit. */
unsigned est_type_keeps32(enum est_kind k, const char *type, size_t len);

/* Whether a norm class runs in its input's precision under autocast: batch norm, which is
 * on none of autocast's lists (cuDNN normalises 16-bit inputs into 16-bit outputs with
 * fp32 statistics), PyTorch's BatchNorm1d/2d/3d and SyncBatchNorm, Keras's
 * BatchNormalization; 0 for every other class and kind (layer_norm and group_norm are on
 * autocast's fp32 list; a Python RMSNorm computes in fp32). */
unsigned est_type_norm16(enum est_kind k, const char *type, size_t len);

/* Sets l->flags, l->keeps, l->keeps32 and l->norm16 from its type name (est_type_flags,
 * est_type_keeps, est_type_keeps32, est_type_norm16 for l->kind), as every parser reads a
 * row's type. */
void est_layer_type(struct est_layer *l, const char *type, size_t len);

int est_model_add_type(struct est_model *m, const char *type, size_t len, uint64_t out,
                       uint64_t params, uint32_t count, int per_token);

/* The attention implementation a job runs. EST_ATTN_SHOWN: as the summary shows it (a
 * module tree's Sdpa/Flash class names mark fused attention; a torchinfo table lists
 * eager attention's probabilities); EAGER / SDPA: as the user says, whatever the print
 * shows (transformers since their 2025 attention refactor print `BertSelfAttention` and
 * run SDPA by default). */
enum est_attention { EST_ATTN_SHOWN = 0, EST_ATTN_EAGER, EST_ATTN_SDPA };
int est_attention_parse(const char *s, enum est_attention *out); /* "eager", "sdpa" */

/* Whether layer l's output is materialised in a training step under attention a: only
 * attention probabilities can be missing (fused kernels keep none). */
int est_layer_materialised(const struct est_layer *l, enum est_attention a);

/* An attention row's keys per query at sequence length seq: its window (est_layer.keys)
 * where that is shorter, else the whole sequence. */
double est_attn_keys(const struct est_layer *l, double seq);

/* Whether attention layer l runs in PyTorch's math kernel, which keeps its probabilities:
 * SDPA named by --attention (transformers since their 2025 attention refactor, which hand
 * grouped keys and values to scaled_dot_product_attention with enable_gqa on PyTorch 2.5
 * and newer), grouped-query attention (`grouped`: keys narrower than queries), and a
 * precision or GPU no fused kernel takes with it: FlashAttention takes fp16 and bf16 on
 * compute capability 8.0 and newer, the memory-efficient kernel no enable_gqa (measured on
 * an H100, docs/estimator.md). A print of older transformers' Sdpa classes repeats the
 * keys and values itself and runs a fused kernel. */
struct est_opts;
int est_attention_math(const struct est_layer *l, const struct est_opts *o, int grouped);

/* Refuses attention probabilities m cannot size under a: 0, or -EINVAL with err naming
 * file:line (file may be NULL: "line N") when an attention row whose heads are
 * EST_HEADS_UNKNOWN is materialised under a (est_layer_materialised). */
int est_heads_check(const struct est_model *m, enum est_attention a, const char *file,
                    struct carma_err *err);

/* Where the head counts of m's attention probabilities counted under a came from: the
 * first of EST_HEADS_UNKNOWN, EST_HEADS_ASSUMED, EST_HEADS_GIVEN, EST_HEADS_SHOWN that
 * some materialised attention row has; -1 when none is materialised. */
int est_heads_used(const struct est_model *m, enum est_attention a);

/* What an estimate assumed of m's attention under a: "eager" when it counts attention
 * probabilities, "sdpa" when m has attention blocks whose probabilities it does not
 * count, "none" when the summary shows no attention probabilities at all. */
const char *est_attention_assumed(const struct est_model *m, enum est_attention a);

enum est_optimizer { EST_OPT_SGD = 0, EST_OPT_MOMENTUM, EST_OPT_ADAM, EST_OPT_ADAMW,
                     EST_OPT_ADADELTA, EST_OPT_COUNT };
enum est_precision { EST_PREC_FP32 = 0, EST_PREC_AMP, EST_PREC_BF16, EST_PREC_COUNT };

int est_optimizer_parse(const char *s, enum est_optimizer *out);
int est_precision_parse(const char *s, enum est_precision *out);
const char *est_optimizer_name(enum est_optimizer o);
const char *est_precision_name(enum est_precision p);

/* Bytes per frozen parameter of layer l: a quantized base's codes and scales (4-bit: 0.5 B
 * plus an fp32 absmax per 64; 8-bit: 1 B; 16: 2 B, the most a quantized layer whose bits
 * are not printed takes), else fp32, or 16-bit under amp/bf16 (a base
 * frozen for mixed-precision fine-tuning is loaded in 16 bits: it needs no fp32 master). */
double est_frozen_bytes(const struct est_layer *l, enum est_precision p);

/* Bytes of optimizer state per parameter (fp32 state): sgd 0, momentum 4,
 * adam/adamw 8, adadelta 8. */
unsigned est_optimizer_state_bytes(enum est_optimizer o);

/* Library families, each with its own floor and residual quantile: models without
 * convolutions (cuBLAS only) and with them (cuDNN loaded, workspaces). */
enum est_family { EST_FAM_DENSE = 0, EST_FAM_CONV, EST_FAM_COUNT };

/* "dense" or "conv", as the coefficient table and the JSON name a family. */
const char *est_family_name(enum est_family f);

/* A layer's output is kept at most this many times over (saved for backward, its
 * gradient, a workspace): the fit caps its multipliers there, and a coefficient table
 * with a larger one is refused. Larger multipliers would be proxies for effects the
 * layer list does not show, and would not carry over to real models. */
#define EST_FIT_MAX_COPIES 4.0

/* Size bands of the Mondrian (per-band) conformal bound: the dynamic part of the
 * estimate (estimate - floor) below 256 MiB, 1, 4, 16 GiB, and above. */
#define EST_NBANDS 5
#define EST_BAND_MIN 100
int est_band_of(double dynamic_mib);

/* The fitted coefficient table. Units: MiB per MiB of (rounded) tensor bytes. */
struct est_coef {
    double floor_mib[EST_FAM_COUNT]; /* intercepts, measured on an A100-40GB */
    /* Per family: saved-activation multiplier per layer kind, the input batch, the
     * largest layer output (transient), optimizer-step temporaries (x params x 4 B). */
    double kind[EST_FAM_COUNT][EST_K_COUNT];
    double input[EST_FAM_COUNT];
    double transient[EST_FAM_COUNT];
    double step[EST_FAM_COUNT];
    /* Concatenations the layer list omits (est_concat_infer): the materialised input of a
     * convolution with more input channels than the previous convolution produced. */
    double concat[EST_FAM_COUNT];
    /* > 0: the family is estimated by replaying training steps (estimate/replay.h):
     * floor + replay x the replay's peak reserved memory, and the per-kind terms
     * above are not used. */
    double replay[EST_FAM_COUNT];
    double q[EST_FAM_COUNT];         /* conformal quantile of normalised residuals */
    /* Mondrian conformal: the quantile per size band of the dynamic part (estimate -
     * floor, bands split at est_band_edges_mib), used when the band had at least
     * EST_BAND_MIN calibration scores; otherwise the family's q applies. */
    double qband[EST_FAM_COUNT][EST_NBANDS];
    size_t ncalband[EST_FAM_COUNT][EST_NBANDS];
    double scale0_mib[EST_FAM_COUNT]; /* normaliser: residual / (scale0 + dynamic) */
    double level;                    /* coverage level the q were taken at */
    size_t ncal[EST_FAM_COUNT];      /* calibration scores behind each q */
};

/* The table fitted on data/estimator (estimate/coef_default.c, generated by
 * `carma eval-estimator --fit`). */
const struct est_coef *est_coef_default(void);

/* Parses a coefficient table: CSV `name,value` lines as written by est_coef_write
 * (names: floor_F, kind_<kind>_F, input_F, transient_F, step_F, q_F, scale0_F,
 * ncal_F for F in dense, conv; and level). Starts from the default, so a
 * table may give a subset. Returns 0 or -EINVAL with err naming file:line, also for a
 * value the fit never gives (a multiplier outside [0, 4], a negative quantile or
 * scale0, a level outside [0, 1]). */
int est_coef_parse(const char *buf, size_t len, const char *file, struct est_coef *out,
                   struct carma_err *err);

/* Writes the table as CSV into buf (cap bytes); returns the length, or -ENOSPC. */
int est_coef_write(const struct est_coef *c, char *buf, size_t cap);

/* The default environment floor (MiB): an idle training process's CUDA context plus
 * cuBLAS/cuDNN under CUDA's lazy module loading (the default of PyTorch >= 1.13 with
 * CUDA >= 11.7). Measured on CARMA's A100-40GB runs: the smallest peak of its catalog,
 * MobileNetV3-small on CIFAR-100 at batch 32, is 590 MiB with about 40 MiB of model,
 * and ResNet-18/34 on CIFAR (788 / 1002 MiB) leave the same floor. The fitted floors
 * are GPUMemNet's environment (eager loading: 1454 MiB dense, 2082 MiB conv). */
#define EST_ENV_FLOOR_MIB 550.0

/* Which floor the estimate stands on. */
enum est_floor_src {
    EST_FLOOR_DEFAULT = 0, /* EST_ENV_FLOOR_MIB; the bound still covers the fitted one */
    EST_FLOOR_FITTED,      /* the table's fitted floor (GPUMemNet's environment) */
    EST_FLOOR_GIVEN,       /* est_opts.floor_mib, measured by the user */
};
const char *est_floor_src_name(enum est_floor_src f);

struct est_opts {
    uint32_t batch;    /* >= 1 */
    uint32_t seq;      /* sequence length; 0 when not given */
    enum est_optimizer optimizer;
    enum est_precision precision;
    enum est_attention attention;
    double gpu_mib;    /* memory of the GPU kind; 0: skip the "fits" test */
    double floor_adjust_mib; /* per-GPU-kind adjustment of the default and fitted floors
                              * (never of a given one): the kind's measured floor less
                              * EST_ENV_FLOOR_MIB (sim_gpu_kind.floor_mib), 0 where none
                              * was measured */
    /* CUDA compute capability x 10 of the GPU kind (70 V100, 80 A100, 90 H100); 0: not
     * known (carma submit; carmad on a GPU kind it does not know, as a T4 or a P100),
     * taken as below 8.0, where FlashAttention does not run: the safe side (est_notes
     * says so where it decides anything). */
    uint8_t cc;
    /* EST_FLOOR_GIVEN: floor_mib (> 0) is the measured floor of the job's environment
     * (CUDA context + libraries of an idle process); the fitted terms above it stay. */
    enum est_floor_src floor_src;
    double floor_mib;
    /* PyTorch's cuBLAS workspace (CUBLAS_WORKSPACE_CONFIG), allocated through the caching
     * allocator by the first matrix product of each thread's handle and kept: 0 for the
     * default before Hopper (EST_CUBLAS_WS_KIB), EST_CUBLAS_WS_HOPPER_KIB on Hopper. */
    uint32_t cublas_workspace_kib;
    /* A forward pass at batch 2 ran before training, as torchsummary's summary() runs it
     * (GPUMemNet's measurement scripts): its tensors are freed, what it cached stays. */
    int summary_pass;
    /* Gradient checkpointing (transformers' gradient_checkpointing_enable()): each layer
     * of a ModuleList keeps only its input and runs again in backward. The replayed
     * family only (the per-kind model ignores it, which overestimates). */
    int grad_checkpoint;
    /* Gradient accumulation (gradient_accumulation_steps > 1 in HF Trainer and
     * accelerate; `batch` is the micro-batch), or zero_grad(set_to_none=False): forward
     * and backward passes run with the gradients of earlier ones allocated, and each new
     * gradient is added to them. The replay runs the training loops such a job can have
     * and takes the largest peak (est_replay); the per-kind model counts the gradients
     * beside the activations already, and ignores it. */
    int grad_accum;
    /* Data-parallel processes, one per GPU, under torch.nn.parallel.
     * DistributedDataParallel with its defaults (0 or 1: one process, no DDP). The
     * estimate is per GPU, each process at `batch`: DDP adds its gradient buckets
     * (est_ddp_bucket) and, at construction, the broadcast of the module's state. */
    uint32_t gpus;
    /* Training iterations the replay runs: 0 (the default) until an iteration ends in
     * the state the one before it ended in, at most EST_REPLAY_MAX_ITERS (replay.h);
     * N (1 to that) exactly N, for tests that check the stopping rule. */
    uint32_t replay_iterations;
    /* Mixture-of-experts routing (--experts-per-token): the experts each token is sent to
     * (a router's top-k), 1 to the fewest experts of m's MoE blocks (est_model.moe_*);
     * each expert then runs on k / E of the tokens on average. 0: not given, every token
     * through every expert (k = E, the safe side). The replayed family only; est_compute
     * refuses it for a model without MoE blocks. */
    uint32_t experts_per_token;
};

/* DistributedDataParallel's gradient buckets (gradient_as_bucket_view=False, its
 * default: a flat copy of every trained gradient, kept for the life of the process).
 * The first iteration holds one bucket of all trained parameters; before the second
 * forward DDP rebuilds them in the order the gradients became ready, each filled
 * until it holds at least its limit: 1 MiB for the first bucket, 25 MiB after
 * (c10d's compute_bucket_assignment_by_size). */
#define EST_DDP_FIRST_BUCKET (1024.0 * 1024.0)
#define EST_DDP_BUCKET_CAP (25.0 * 1024.0 * 1024.0)
#define EST_DDP_BROADCAST_CAP (250.0 * 1024.0 * 1024.0) /* construction's broadcast */
#define EST_MAX_GPUS 65536u

struct est_ddp_fill {
    double cur;    /* bytes in the open bucket */
    unsigned n;    /* buckets closed */
};

/* Adds a tensor of `bytes` to the open bucket; returns the bytes of the bucket that it
 * closes, else 0. The caller closes the last one (f->cur when above 0). */
static inline double est_ddp_bucket(struct est_ddp_fill *f, double bytes)
{
    f->cur += bytes;
    if (f->cur < (f->n ? EST_DDP_BUCKET_CAP : EST_DDP_FIRST_BUCKET))
        return 0;
    double b = f->cur;
    f->cur = 0;
    f->n++;
    return b;
}

/* Sets the field of o that a training set-up option names: "optimizer", "precision" or
 * "attention" to val, as `carma estimate`, `carma submit` and the protocol's job fields
 * spell them. Returns 0; -ENOENT when name is none of them; -EINVAL when val is not one
 * of name's values, which *accepted then lists ("fp32, amp, bf16"). */
int est_opts_set(struct est_opts *o, const char *name, const char *val, const char **accepted);

/* PyTorch's default cuBLAS workspace per handle (KiB): ":4096:2:16:8" before Hopper,
 * 4096 KiB x 8 on Hopper. */
#define EST_CUBLAS_WS_KIB (4096u * 2 + 16u * 8)
#define EST_CUBLAS_WS_HOPPER_KIB (4096u * 8)

struct est_result {
    double floor_mib, weights_mib, gradients_mib, optimizer_mib, activations_mib,
        transient_mib;
    double buckets_mib;  /* DDP's gradient buckets (est_opts.gpus > 1), else 0 */
    double estimate_mib; /* sum of the above */
    double bound_mib;    /* safe bound (conformal); with EST_FLOOR_DEFAULT also at least
                          * the bound in the fitted floor's environment */
    int fits;            /* bound <= gpu_mib (1 when gpu_mib is 0) */
    enum est_family family;
    /* Replayed estimates: where the peak fell (enum est_replay_phase, 0 when the
     * per-kind model answered) and in which training iteration (0 in setup, then 1 to
     * EST_REPLAY_MAX_ITERS). */
    int peak_phase, peak_iteration;
    /* 1 when attention layers were replayed through PyTorch's math kernel (grouped-query
     * attention under SDPA that no fused kernel takes: est_opts.cc, precision), else 0. */
    int math_attention;
    /* Under est_opts.grad_checkpoint: the units checkpointed (0: the option changed
     * nothing: no repeated layers, or a model the per-kind terms answer). */
    uint32_t checkpointed_units;
    /* Under est_opts.grad_accum, replayed: the loop whose peak this is (forward and
     * backward passes per optimizer step, 1: a step after each; whether zero_grad kept
     * the gradients, set_to_none=False); 0 otherwise. */
    uint32_t accum_micro_batches;
    int accum_grads_kept;
};

/* How m's summary was read where the print leaves it open, one note each, under o and
 * with r its estimate (`carma estimate`'s "note: ..." lines and JSON "notes", repeated by
 * `carma submit`): no position encoding under --attention sdpa (ALiBi may hide), a lone
 * layer in its list (ALBERT), attention with a learned position bias, grouped-query
 * attention replayed through PyTorch's math kernel, a table's printed trainable count not
 * placed on its rows, quantized layers outside a PEFT print read as frozen, an output head
 * tied in forward assumed, a join in a convolutional tree that no tensor explains, a
 * pooling printed without its window, a profiler's total that the print's layers do not
 * make, a mixture-of-experts router printed without sizes, mixture-of-experts blocks
 * counted without --experts-per-token, attention over the positions of a convolutional
 * tensor read as global, a query subsampling's stride assumed, frozen parameters counted
 * in 16 bits under
 * autocast, a table printed at another batch than o's, and DoRA layers read as plain LoRA. Returns
 * the count (at most EST_NOTES). */
#define EST_NOTE_MAX 512
#define EST_NOTES 26 /* more than est_notes can write: one each of 25 kinds */

/* Windowed attention over a grid of patches (Swin), which a print does not size: windows
 * of 7 x 7 patches (Swin's at 224 x 224 in torchvision, transformers and timm; the grid
 * padded to whole windows) and heads 32 channels wide (Swin's in every published size),
 * also those of attention over the positions of a convolutional tensor (est_model.
 * positions_line: CAFormer's, as CoAtNet's and MaxViT's). */
#define EST_WINDOW 7
#define EST_WINDOW_HEAD 32

/* Attention over a sliding window of the sequence (an attention block with global
 * projections, query_global/key_global/value_global: Longformer's, LED's), which a print
 * does not size: the widest attention_window released, LED's 1024, each query over the
 * 512 keys either side and itself (Longformer's 512 keeps half: the estimate is then
 * high). Its scores are computed in Python, kept under any --attention. */
#define EST_SLIDE_KEYS 1025

/* A model that runs one shared layer num_hidden_layers times (ALBERT: its one layer of its
 * one layer group), which a print does not show: the most of any released ALBERT, large's
 * and xlarge's 24 (base and xxlarge run 12: the estimate is then high). Each run keeps its
 * activations; the parameters are the one layer's. */
#define EST_SHARED_RUNS 24
#define EST_MAX_SHARED_RUNS 256u /* --shared-layer-runs (a replay takes 4096 rows) */
size_t est_notes(const struct est_model *m, const struct est_opts *o, const struct est_result *r,
                 char notes[EST_NOTES][EST_NOTE_MAX]);

/* The PyTorch caching allocator's rounding of one request of `bytes` (round_size):
 * 512 B multiples. 0 stays 0. (Segments of 2 MiB / 20 MiB are a pool effect, not a
 * per-tensor one: rounding every tensor to 2 MiB fitted the data worse.) */
double est_alloc_round(double bytes);

/* Family of a model: EST_FAM_CONV when its convolutions produce at least as many output
 * elements as its linear layers (CNNs, whose classifier is a few linear layers), else
 * EST_FAM_DENSE (MLPs, and transformers, a vision transformer's patch convolution
 * included). */
enum est_family est_model_family(const struct est_model *m);

/* Whether the sequence length enters m's estimate: a sequence model (est_model.needs_seq,
 * or a vision transformer's est_model.tokens), or a layer whose output is per token or
 * attention probabilities (heads x seq per token). */
int est_model_reads_seq(const struct est_model *m);

/* Whether m has attention, shown or not: an attention layer (probabilities, eager or
 * fused), a linear layer reading the input of the one before it (an attention's key or
 * value projection), three linear layers in a row of one output and parameter count (a
 * table's query, key and value under SDPA, which lists no probabilities) or a token
 * table (an embedding: a table of a transformer run with SDPA may show nothing else of
 * its attention, as GPT-2's fused c_attn). GPUMemNet's MLPs and CNNs, on which the
 * bound's size bands were calibrated, have none of these; est_compute bounds such a
 * model with its family's pooled quantile. */
int est_model_has_attention(const struct est_model *m);

/* The safe bound for an estimate of family fam whose dynamic part (estimate - floor)
 * is dynamic_mib: estimate + q * (scale0 + dynamic), q the band's quantile when
 * `banded` and the band had EST_BAND_MIN scores, else the family's pooled one (a
 * measured --floor means another environment than the one the bands were calibrated
 * in, and a model with attention another kind of model than they were calibrated on:
 * est_compute passes banded = 0 for either). */
double est_bound(const struct est_coef *c, enum est_family fam, double estimate_mib,
                 double dynamic_mib, int banded);

struct est_replay_work;

/* Computes the estimate; `work` is the caller's workspace for the families estimated
 * by replay (estimate/replay.h). Returns 0, or -EINVAL with err when batch is 0 or out
 * of bounds, or when the model needs a sequence length and opts->seq is 0, or when a
 * sequence length (opts->seq) or an image size (m->image_h) would size nothing (a table
 * fixes its input; a model no layer of which is per token; a model with neither 2-D
 * convolutions sized from the image, m->spatial, nor patches, m->tokens), or when
 * est_heads_check refuses its attention under opts->attention, or -E2BIG
 * when the model has too many tensors to replay. O(layers) for the per-kind model,
 * O(tensors x cached blocks) for the replay; no allocation. */
int est_compute(const struct est_model *m, const struct est_coef *c, const struct est_opts *o,
                struct est_replay_work *work, struct est_result *r, struct carma_err *err);

/* A vision transformer read with its image size (m->tokens): whether its sequence has a
 * class token besides the patches (none where its position table has exactly the
 * patches, as SigLIP's). 0 for any other model. */
int est_model_class_token(const struct est_model *m);

/* The sequence length of a job on m, between est_parse and est_compute, as `carma
 * estimate`, `carma submit` and carmad take it: a vision transformer whose patch
 * embedding and image size give m->tokens takes them as o->seq (a different o->seq is
 * an error naming `file`); a sequence model without a sequence length is an error
 * naming file:line ("give --seq-len", or "give --image-size" first where m has a patch
 * embedding). Returns 0 or -EINVAL with err. */
int est_seq_resolve(const struct est_model *m, struct est_opts *o, const char *file,
                    struct carma_err *err);

/* A summary made ready to size, as `carma estimate`, `carma submit` and carmad take it:
 * est_parse of buf[0..len) into m (initialised by the caller, with its image size and
 * heads), est_heads_check for o->attention, est_seq_resolve. Errors name `file`. Returns
 * 0 or a negative errno with err. */
int est_model_prepare(struct est_model *m, const char *buf, size_t len, const char *file,
                      struct est_opts *o, struct carma_err *err);

/* The largest batch whose bound fits the GPU (o->gpu_mib > 0; o->batch is ignored): from
 * batch 1, doubling until a batch does not fit, then bisecting between the last that
 * fits and the first that does not. The bound grows with the batch, though not strictly
 * (the allocator packs some batches' tensors better), so the contract is local: *batch
 * fits and *batch + 1 does not (or *batch is EST_MAX_BATCH), not that no larger batch
 * fits. *r is the estimate at *batch, *next at *batch + 1 (next->bound_mib is 0 when
 * *batch is EST_MAX_BATCH). When batch 1 does not fit, *batch is 0, *r is batch 1's and
 * *next zeroed. Returns 0, or est_compute's error. At most 2 log2(EST_MAX_BATCH)
 * estimates; no allocation. */
int est_max_batch(const struct est_model *m, const struct est_coef *c, const struct est_opts *o,
                  struct est_replay_work *work, uint32_t *batch, struct est_result *r,
                  struct est_result *next, struct carma_err *err);

/* The fit's design row for one model (used by estimate/fit.c and tests): the
 * activation features per kind (MiB, rounded), the input, the largest transient,
 * params x 4 B, the inferred concatenations (est_concat_infer), and the exact
 * parameter bytes (weights + gradients + state) that
 * are not fitted. feat must hold EST_NFEAT entries. */
#define EST_NFEAT (EST_K_COUNT + 4)
#define EST_F_INPUT (EST_K_COUNT)
#define EST_F_TRANSIENT (EST_K_COUNT + 1)
#define EST_F_STEP (EST_K_COUNT + 2)
#define EST_F_CONCAT (EST_K_COUNT + 3)
void est_features(const struct est_model *m, const struct est_opts *o, double *feat,
                  double *weights_mib, double *grads_mib, double *state_mib);

/* Elements per sample of the concatenations a layer list omits (DenseNet-style
 * torch.cat before a convolution: printed summaries list the convolutions, not the
 * cat). Walks the convolutions keeping the previous one's output channels and spatial
 * size, inferred from its output elements O and parameters P = c_out * (k*k*c_in + b)
 * (k in 1, 3, 5, 7; b 1 with a bias, 0 without; spatial size equal to the previous
 * one's, or 4 or 16 times smaller or larger). A convolution whose parameters imply
 * c_in larger than the previous output's channels (and no larger than all channels
 * produced so far) reads a concatenation of c_in x H x W elements, counted here. The
 * first convolution's channels are taken consistent with m->input when it is known.
 * When no decomposition fits, the walk restarts at the next convolution; linear
 * layers, repeated (count > 1) and per-token layers restart it too. O(layers), at most
 * a few hundred divisions per restart; no allocation. */
uint64_t est_concat_infer(const struct est_model *m);

#endif
