/* Replay of training steps through a model of PyTorch's CUDA caching allocator.
 *
 * A summary lists layers in execution order. est_replay walks that list as a chain
 * through training steps (forward, cross-entropy loss, backward, optimizer step; the
 * first step creates the optimizer state), until an iteration leaves the allocator as
 * an earlier one left it (at most EST_REPLAY_MAX_ITERS), and follows every tensor the
 * way PyTorch's autograd and allocator treat it:
 *
 *   - what each node keeps for backward: linear and convolution their input, norms
 *     their input and per-channel statistics (a Python RMSNorm its normalised input
 *     too, when its weight trains), ReLU/Tanh/Sigmoid their output and other
 *     activations their input (one written out in Python, Hugging Face's
 *     NewGELUActivation, also what its operations keep: est_type_keeps), dropout a
 *     1-byte mask, softmax its output, eager attention its probabilities, their dropout
 *     mask and output, fused attention its output, both the query and key, a gated
 *     MLP's up projection the gate's input and, for the product, both factors;
 *     everything else is freed as soon as the next layer has consumed it;
 *   - backward allocates each gradient before it releases what the node kept; the first
 *     gradient of a parameter becomes .grad, and zero_grad() frees them (under gradient
 *     accumulation, est_opts.grad_accum, the later micro-batches' gradients are added
 *     to .grad and freed, and zero_grad comes once per optimizer step, or keeps them);
 *   - gradient checkpointing (est_opts.grad_checkpoint): each unit (est_layer.unit, a
 *     layer of a ModuleList) keeps only its input in the forward; backward runs its
 *     forward again, keeping what its nodes keep, just before going through it;
 *   - frozen parameters (est_layer.frozen: a PEFT model's base) are stored as
 *     est_frozen_bytes says and get no gradient or optimizer state; a node keeps nothing
 *     until a layer with trained parameters has run on the way to it, and a frozen matrix
 *     product never keeps its input; a LoRA layer's adapter keeps its input (a dropout
 *     copy and its mask when it has dropout) and its r-wide middle, and a quantized base
 *     unpacks a 16-bit copy of its weight for each product;
 *   - under autocast (amp/bf16 over fp32 parameters): autocast's 16-bit weight copies;
 *     fp32 embeddings, norms, softmax and residual stream (every norm keeps an fp32
 *     input, a checkpointed unit its fp32 input), and each matrix product's own 16-bit
 *     copy of an fp32 input (key, value and up projections always their own); a Python
 *     activation with an operation on autocast's fp32 list (est_type_keeps32) runs in
 *     fp32 from that operation on;
 *   - cuBLAS's workspace: the first matrix product of the forward (the main thread's
 *     handle) and of the backward (the autograd thread's) each allocate one, kept for
 *     the life of the process;
 *   - the optimizer's state (Adam/AdamW/Adadelta two tensors per parameter, momentum
 *     one) and its per-parameter temporaries (Adam's sqrt, Adadelta's two, and for SGD,
 *     momentum and Adadelta the decayed gradients of weight decay, taken to be on);
 *   - DistributedDataParallel (est_opts.gpus > 1): the construction's broadcast of the
 *     parameters and buffers (flattened into buckets of 250 MiB, two at a time), one
 *     gradient bucket of every trained parameter for the first iteration, and the
 *     rebuilt buckets (est_ddp_bucket) from the second forward on;
 *   - the allocator: requests rounded to 512 B; up to 1 MiB from 2 MiB segments, up to
 *     10 MiB from 20 MiB segments, larger ones in segments rounded to 2 MiB; best fit
 *     among cached free blocks, splitting and merging as the caching allocator does;
 *     freed blocks stay reserved.
 *
 * The result is the peak of reserved memory, which is what nvidia-smi shows above the
 * CUDA context. Graphs that are not chains (residual adds, concatenations) are
 * approximated by their listed order, but for an attention's key and value projections
 * (est_layer.shares_input), which read the query's input; the attention, placed after
 * them, keeps the query, key and values (a grouped key and value as repeat_kv's copies
 * at the query's width) and hands a contiguous copy of its output on; convolutions
 * also allocate
 * cuDNN workspaces the list does not show, which is why the conv family is not
 * estimated this way (docs/estimator.md).
 *
 * No I/O, no allocation: the caller owns the workspace. */
#ifndef CARMA_ESTIMATE_REPLAY_H
#define CARMA_ESTIMATE_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "estimate/estimate.h"

/* Blocks the allocator model can track at once (live tensors plus cached free blocks;
 * 16-bit links keep a block in 32 bytes). Layer repeats are expanded when the nodes and
 * parameters fit, else each layer's repeats are one tensor of count times the size. */
#define EST_REPLAY_MAX_BLOCKS 65535u
#define EST_REPLAY_NCLASS 1024u /* size classes per pool, a multiple of 64 */
#define EST_RB_NONE UINT32_MAX

/* What each allocated byte is, for the breakdown at the peak. */
enum est_replay_cat {
    EST_RC_WEIGHTS = 0, /* parameters, buffers, autocast weight copies */
    EST_RC_GRADS,       /* parameter gradients */
    EST_RC_STATE,       /* optimizer state */
    EST_RC_ACT,         /* forward tensors: inputs, outputs, saved for backward, loss */
    EST_RC_TRANSIENT,   /* activation gradients, attention scores, optimizer temporaries */
    EST_RC_BUCKETS,     /* DistributedDataParallel's gradient buckets */
    EST_RC_COUNT
};

/* Where the replay is, for where its peak fell. */
enum est_replay_phase {
    EST_RP_NONE = 0,
    EST_RP_SETUP,    /* model.to(device) */
    EST_RP_FORWARD,  /* forward and loss */
    EST_RP_BACKWARD, /* loss.backward() */
    EST_RP_STEP,     /* optimizer.step() */
};
const char *est_replay_phase_name(enum est_replay_phase p);

struct est_replay_block {
    uint64_t size;
    uint64_t addr;         /* in a virtual address space: segments laid end to end */
    uint16_t prev, next;   /* neighbours in the segment (0xffff at an end) */
    uint16_t fprev, fnext; /* free list of its size class, or the unused-entry stack */
    uint16_t cls;          /* the free list of its size (see free_head) */
    uint8_t refs;          /* tensor references while allocated */
    uint8_t pool, is_free, cat;
};

/* Parameter tensors and graph nodes of one replay (layer repeats expanded or not). */
#define EST_REPLAY_MAX_PARAMS 8192u
#define EST_REPLAY_MAX_NODES 4096u
#define EST_REPLAY_NSAVED 8
#define EST_REPLAY_NTMP 3 /* optimizer temporaries per parameter: Adadelta's */
/* Training iterations replayed at most; the replay stops earlier once an iteration
 * leaves the state an earlier one left (est_replay). */
#define EST_REPLAY_MAX_ITERS 16

struct est_replay_param {
    double bytes;  /* fp32, or as stored when frozen */
    uint64_t size; /* bytes as the allocator rounds them */
    uint16_t cls;  /* its free list (the allocator's size class) */
    uint32_t grad, state[2], tmp[EST_REPLAY_NTMP], cast;
    uint8_t frozen; /* no gradient, no optimizer state */
    uint8_t dtype;  /* twice its bytes per element: tensors DDP may flatten together */
    uint8_t orphan; /* held by a layer the chain makes no node for (EST_K_OTHER: a class
                       token, a layer kind carma does not model; in place) */
    uint32_t alias; /* an EST_LF_TIED table's: the parameter it is (nothing allocated,
                       marked frozen so that no state or bucket counts it; its gradient
                       goes to that one's), else EST_RB_NONE */
    uint32_t pend;  /* a parameter other entries alias (shared): the gradients of its uses
                       so far in this backward, summed in autograd's input buffer until its
                       last use (its own entry's) hands them to .grad; else EST_RB_NONE */
    uint8_t shared; /* other entries alias it */
};

struct est_replay_node {
    uint8_t kind;      /* enum est_kind, or EST_K_COUNT for the loss */
    uint8_t flags;     /* the layer's EST_LF_* */
    uint8_t trains;    /* it has trained parameters */
    uint8_t nsaved;    /* saved[] entries in use: 4, a LoRA layer's 6, a Python
                          activation's 1 + keeps, the loss's fewer */
    uint8_t keeps;     /* an activation written out in Python: est_layer.keeps */
    uint8_t moe;       /* est_layer.moe */
    uint32_t saved[EST_REPLAY_NSAVED]; /* kept for backward (EST_RB_NONE: none); LoRA's
                                          adapter uses 3-5 */
    uint32_t p0, np;   /* its parameter tensors */
    double in_bytes;   /* bytes of its input's gradient; 0: none */
    double scores;     /* attention: bytes of one probabilities tensor */
    double up_bytes;   /* gated: bytes of the up projection's output and input, whose */
    double up_in;      /* gradients backward makes and drops */
    double lora_out;   /* LoRA: bytes of the adapter's output and input, whose gradients */
    double lora_in;    /* backward makes and adds to the base layer's */
    double deq;        /* a quantized base: bytes of the 16-bit weight it unpacks per use */
    double qk_grads;   /* attention after q, k, v: bytes of the query's gradient (and the
                          key's), made beside the values' */
    double grow;       /* a mixture-of-experts expert's: its activation gradients and
                          temporaries are this many times its routed (k / E) size, one
                          expert given every token (0 or 1: as sized) */
    double moe_grad;   /* a router's softmax, an expert's routing-weight product: bytes
                          of the two gradients its backward makes first (before grow) */
    double moe_full;   /* an expert's first node: bytes of the block input's gradient
                          its gather's backward makes, every token's (index_put into
                          zeros), added into one such buffer per block */
};

/* A gradient-checkpointed unit: plan positions [t0, t1), its nodes [n0, n1), its first
 * parameter tensor, and the input it keeps (in, in_bytes). */
struct est_replay_unit {
    uint32_t t0, t1, n0, n1, pi, in;
    double in_bytes;
};

/* A layer's parameter tensors: elements, whether frozen; and in a replay's set-up, the
 * first of them in est_replay_work.p (UINT32_MAX until its layer is set up). */
struct est_replay_lt {
    double t[4];
    uint32_t p0;
    uint8_t fz[4], nt;
};

struct est_replay_work {
    struct est_replay_block b[EST_REPLAY_MAX_BLOCKS];
    struct est_replay_param p[EST_REPLAY_MAX_PARAMS];
    struct est_replay_node nd[EST_REPLAY_MAX_NODES];
    uint32_t order[EST_REPLAY_MAX_NODES]; /* layers in execution order, repeats expanded */
    struct est_replay_lt lt[EST_REPLAY_MAX_NODES]; /* by layer (a replay has fewer) */
    uint32_t np, nn, norder;
    struct est_replay_unit ck[EST_REPLAY_MAX_NODES]; /* checkpointed units, in order */
    uint32_t nck;
    uint32_t nb;     /* entries used so far */
    uint16_t unused; /* stack of merged-away entries */
    /* Cached free blocks in lists by pool (0 small, 1 large) and size class (sixteen per
     * power of two; pool 1's lists after pool 0's), each list in the allocator's order
     * (size, then address), with its head and tail, and a bit set for each list that
     * holds any. A list's head and tail are meaningful only while its bit is set, and
     * so is its finger: the block last put on it (or a neighbour, once that left), where
     * an insertion's walk starts, as the next one mostly sorts beside it. */
    uint16_t free_head[2 * EST_REPLAY_NCLASS], free_tail[2 * EST_REPLAY_NCLASS];
    uint16_t finger[2 * EST_REPLAY_NCLASS];
    uint64_t nonempty[2 * EST_REPLAY_NCLASS / 64];
    uint64_t top;                       /* end of the virtual address space */
    uint64_t reserved, peak, allocated; /* bytes */
    uint64_t peak_allocated;            /* the most bytes in tensors at once */
    uint64_t cat[EST_RC_COUNT], peak_cat[EST_RC_COUNT];
    int phase, iteration, peak_phase, peak_iteration; /* where the replay is, its peak */
    int overflow;
    int math_attention;      /* some attention was replayed through the math kernel */
    uint32_t cublas_ws[2]; /* the main thread's and autograd's cuBLAS workspaces, once made */
    uint32_t ddp_bucket;   /* DDP's first-iteration bucket, until the rebuild */
    uint64_t seen[EST_REPLAY_MAX_ITERS][4]; /* what each iteration left (end_state_repeats) */
};

struct est_replay_result {
    double peak_mib;                /* peak reserved memory */
    double peak_allocated_mib;      /* the most in tensors at once, cached blocks aside
                                       (what a profiler of tensor allocations reports) */
    int peak_phase, peak_iteration; /* enum est_replay_phase; training iteration 1 to
                                       EST_REPLAY_MAX_ITERS (0: setup) */
    double cat_mib[EST_RC_COUNT];   /* allocated at that moment, by kind */
    double cached_mib;              /* reserved but free at that moment */
    uint32_t checkpointed_units;    /* units run under gradient checkpointing (0: none) */
    int math_attention;             /* some attention ran through the math kernel */
    uint32_t micro_batches;         /* the loop replayed: forward and backward passes per */
    int grads_kept;                 /* optimizer step, zero_grad(set_to_none=False) */
};

/* Replays training steps of m at o->batch, o->seq, o->optimizer and o->precision, until
 * an iteration leaves the allocator as an earlier one left it, from where the replay
 * would only repeat itself (at most EST_REPLAY_MAX_ITERS; exactly o->replay_iterations
 * when that is set). w->iteration holds the iterations run. Under o->grad_accum an
 * iteration is an optimizer step and the micro-batches before it: the replay runs
 * each loop such a job can have (micro-batches per step, zero_grad keeping the
 * gradients or not), r is the one with the largest peak, w->iteration the last one's.
 * Returns 0, or -E2BIG when the workspace cannot hold the model's tensors. */
int est_replay(const struct est_model *m, const struct est_opts *o, struct est_replay_work *w,
               struct est_replay_result *r);

/* The allocator model on its own (for tests): reset, allocate `bytes` as category cat
 * (returns a block index, or EST_RB_NONE when full), release a reference. */
void est_replay_reset(struct est_replay_work *w);
uint32_t est_replay_malloc(struct est_replay_work *w, uint64_t bytes, enum est_replay_cat cat);
void est_replay_unref(struct est_replay_work *w, uint32_t blk);

#endif
