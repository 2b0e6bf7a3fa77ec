/* Training-step replay through a caching-allocator model (replay.h). */
#include "estimate/replay.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

#define MIB_U (1024ull * 1024ull)
#define NONE EST_RB_NONE

/* ---- The allocator model (c10/cuda/CUDACachingAllocator's rules) ---- */

static uint64_t round_size(uint64_t n)
{
    return n < 512 ? 512 : (n + 511) / 512 * 512;
}

static uint64_t segment_size(uint64_t n)
{
    if (n <= MIB_U)
        return 2 * MIB_U;
    if (n < 10 * MIB_U)
        return 20 * MIB_U;
    return (n + 2 * MIB_U - 1) / (2 * MIB_U) * (2 * MIB_U);
}

/* Whether the `rem` bytes a request leaves of a block are split off as a free block
 * (small pool: at least 512 B; large pool: more than 1 MiB); else the request takes the
 * whole block. */
static inline int splits(unsigned pool, uint64_t rem)
{
    return pool == 0 ? rem >= 512 : rem > MIB_U;
}

/* Free list of a block of `size` (512 B to 2^60 B) in `pool`: its size class, sixteen
 * per power of two (2^k + j 2^(k-4) in class 16 k + j, < 976), pool 1's lists after
 * pool 0's. Monotone in size within a pool, so every block of a list above a request's
 * own holds the request. */
static inline unsigned list_of(unsigned pool, uint64_t size)
{
    unsigned s = 59u - (unsigned)__builtin_clzll(size); /* k - 4 (k >= 9): size >> s = 16 + j */
    return pool * EST_REPLAY_NCLASS + s * 16 + 48 + (unsigned)(size >> s);
}

#define NIL 0xffffu /* no block, in a 16-bit link */

_Static_assert(EST_REPLAY_NCLASS % 64 == 0, "a word of the bit set holds one pool's lists");
_Static_assert(EST_REPLAY_NCLASS > 960, "list_of: classes up to 960 (2^60 B)");

void est_replay_reset(struct est_replay_work *w)
{
    w->nb = 0;
    w->unused = NIL;
    /* free_head and free_tail are read only for lists whose nonempty bit is set */
    memset(w->nonempty, 0, sizeof w->nonempty);
    w->top = 0;
    w->reserved = w->peak = w->allocated = w->peak_allocated = 0;
    memset(w->cat, 0, sizeof w->cat);
    memset(w->peak_cat, 0, sizeof w->peak_cat);
    w->phase = w->peak_phase = EST_RP_NONE;
    w->iteration = w->peak_iteration = 0;
    w->overflow = 0;
    w->math_attention = 0;
    w->cublas_ws[0] = w->cublas_ws[1] = NONE;
    w->ddp_bucket = NONE;
}

static inline unsigned entry_new(struct est_replay_work *w)
{
    if (w->unused != NIL) {
        unsigned i = w->unused;
        w->unused = w->b[i].fnext;
        return i;
    }
    if (w->nb >= EST_REPLAY_MAX_BLOCKS) {
        w->overflow = 1;
        return NIL;
    }
    return w->nb++;
}

static inline void entry_release(struct est_replay_work *w, unsigned i)
{
    w->b[i].fnext = w->unused;
    w->unused = (uint16_t)i;
}

/* The allocator's free set is ordered by size, then address. */
static inline int block_before(const struct est_replay_block *x, const struct est_replay_block *y)
{
    return x->size != y->size ? x->size < y->size : x->addr < y->addr;
}

/* Free block b (entry i), which sorts after the head of its list l and before its tail,
 * goes in between (free_add). The walk starts at the list's finger f (the block put on
 * it before), towards the end b sorts on that side of it, and from that end towards it
 * at once, a step from each in turn, so that it stops at the nearer: a run of blocks of
 * one size mostly goes in beside the one before, and far from either end (two rows
 * repeated 4024 and 12 times made the remainders of their segments sort a third into a
 * list of 6000 blocks of one size, where a walk from an end made an estimate take up to
 * 1.9 s). Kept out of free_add's hot path. */
static __attribute__((noinline)) void free_walk_in(struct est_replay_work *w, unsigned i,
                                                   unsigned l, unsigned f)
{
    struct est_replay_block *b = &w->b[i];
    /* b goes between prev, which sorts before it, and cur, after it: each walk moves one
     * of them towards the other until they are neighbours */
    unsigned prev = w->free_head[l], cur = w->free_tail[l];
    if (block_before(&w->b[f], b))
        prev = f;
    else
        cur = f;
    for (;;) {
        unsigned nx = w->b[prev].fnext;
        if (nx == cur || block_before(b, &w->b[nx])) {
            cur = nx;
            break;
        }
        prev = nx;
        unsigned pv = w->b[cur].fprev;
        if (pv == prev || block_before(&w->b[pv], b)) {
            prev = pv;
            break;
        }
        cur = pv;
    }
    b->fprev = (uint16_t)prev;
    b->fnext = (uint16_t)cur;
    w->b[cur].fprev = (uint16_t)i;
    w->b[prev].fnext = (uint16_t)i;
}

/* Inserts free block i into list l (its size's), kept in the free set's order. A freed
 * or split-off block most often sorts last: the tail is tried first, then the head,
 * then free_walk_in walks. The block becomes the list's finger. */
static inline void free_add(struct est_replay_work *w, unsigned i, unsigned l)
{
    struct est_replay_block *b = &w->b[i];
    uint64_t bit = 1ull << (l % 64);
    b->cls = (uint16_t)l;
    unsigned f = w->finger[l]; /* meaningful only while the list holds any */
    w->finger[l] = (uint16_t)i;
    if (!(w->nonempty[l / 64] & bit)) {
        w->nonempty[l / 64] |= bit;
        b->fprev = b->fnext = NIL;
        w->free_head[l] = w->free_tail[l] = (uint16_t)i;
        return;
    }
    unsigned tail = w->free_tail[l], head = w->free_head[l];
    if (block_before(&w->b[tail], b)) {
        b->fprev = (uint16_t)tail;
        b->fnext = NIL;
        w->b[tail].fnext = (uint16_t)i;
        w->free_tail[l] = (uint16_t)i;
    } else if (block_before(b, &w->b[head])) {
        b->fprev = NIL;
        b->fnext = (uint16_t)head;
        w->b[head].fprev = (uint16_t)i;
        w->free_head[l] = (uint16_t)i;
    } else {
        free_walk_in(w, i, l, f);
    }
}

static inline void free_del(struct est_replay_work *w, unsigned i)
{
    struct est_replay_block *b = &w->b[i];
    unsigned l = b->cls, fp = b->fprev, fn = b->fnext;
    if (fp != NIL)
        w->b[fp].fnext = (uint16_t)fn;
    else
        w->free_head[l] = (uint16_t)fn;
    if (fn != NIL)
        w->b[fn].fprev = (uint16_t)fp;
    else
        w->free_tail[l] = (uint16_t)fp;
    if (fp == NIL && fn == NIL) /* the list is empty now */
        w->nonempty[l / 64] &= ~(1ull << (l % 64));
    else if (w->finger[l] == i)
        w->finger[l] = (uint16_t)(fn != NIL ? fn : fp);
}

/* Free block i, on its list, changed size (and maybe address) and belongs on list l now:
 * it keeps its place while the order still holds, else moves. Its key (size, address)
 * grew when it absorbed a freed neighbour, so only its successor can be out of order;
 * it shrank when a request was split off its start, so only its predecessor can. Inlined
 * (GNU attribute): the test is in every split and merge. */
__attribute__((always_inline)) static inline void free_rekey(struct est_replay_work *w, unsigned i,
                                                             unsigned l, int grown)
{
    struct est_replay_block *b = &w->b[i];
    if (l == b->cls) {
        if (grown && (b->fnext == NIL || block_before(b, &w->b[b->fnext])))
            return;
        if (!grown && (b->fprev == NIL || block_before(&w->b[b->fprev], b)))
            return;
    }
    free_del(w, i);
    free_add(w, i, l);
}

/* The allocator's best fit for a request of `size` from list l (its own): the first
 * block of the free set's order that holds it, or NIL. In l blocks below size are
 * skipped (none fits when the last, the largest, does not); the first block of any
 * higher list of the pool holds it. */
static inline unsigned best_fit(const struct est_replay_work *w, unsigned l, uint64_t size)
{
    if ((w->nonempty[l / 64] >> (l % 64) & 1) && w->b[w->free_tail[l]].size >= size) {
        unsigned i = w->free_head[l];
        while (w->b[i].size < size)
            i = w->b[i].fnext;
        return i;
    }
    /* the rest of l's word of the bit set, then the pool's words above it */
    uint64_t bits = w->nonempty[l / 64] >> (l % 64) >> 1;
    if (bits)
        return w->free_head[l + 1 + (unsigned)__builtin_ctzll(bits)];
    unsigned end = (l / EST_REPLAY_NCLASS + 1) * (EST_REPLAY_NCLASS / 64);
    for (unsigned x = l / 64 + 1; x < end; x++)
        if (w->nonempty[x])
            return w->free_head[x * 64 + (unsigned)__builtin_ctzll(w->nonempty[x])];
    return NIL;
}

/* Block i, no longer free, now holds a request of category cat. */
static inline uint32_t take(struct est_replay_work *w, unsigned i, enum est_replay_cat cat)
{
    struct est_replay_block *b = &w->b[i];
    b->is_free = 0;
    b->refs = 1;
    b->cat = (uint8_t)cat;
    w->allocated += b->size;
    w->cat[cat] += b->size;
    return i;
}

/* A request of `size` (list l) that no cached block holds: a new segment, what the
 * request leaves of it split off as a free block, and maybe a new peak. Rare: kept out
 * of replay_malloc's hot path. */
static __attribute__((noinline)) uint32_t new_segment(struct est_replay_work *w, uint64_t size,
                                                      unsigned pool, unsigned l,
                                                      enum est_replay_cat cat)
{
    unsigned s = entry_new(w);
    if (s == NIL)
        return NONE;
    struct est_replay_block *b = &w->b[s];
    uint64_t seg = segment_size(size), rem = seg - size;
    b->size = seg;
    b->addr = w->top;
    w->top += seg;
    b->prev = b->next = NIL;
    b->pool = (uint8_t)pool;
    b->cls = (uint16_t)list_of(pool, seg);
    w->reserved += seg;
    if (splits(pool, rem)) {
        unsigned r = entry_new(w);
        if (r == NIL)
            return NONE;
        b = &w->b[s];
        struct est_replay_block *rb = &w->b[r];
        rb->addr = b->addr + size;
        rb->size = rem;
        rb->pool = (uint8_t)pool;
        rb->is_free = 1;
        rb->prev = (uint16_t)s;
        rb->next = NIL;
        b->next = (uint16_t)r;
        b->size = size;
        b->cls = (uint16_t)l;
        free_add(w, r, list_of(pool, rem));
    }
    take(w, s, cat);
    if (w->reserved > w->peak) {
        w->peak = w->reserved;
        memcpy(w->peak_cat, w->cat, sizeof w->cat);
        w->peak_phase = w->phase;
        w->peak_iteration = w->iteration;
    }
    return s;
}

/* Allocates `size` (a multiple of 512 B, at most 2^60; l its list_of) as category cat:
 * the best fit among the cached blocks, split as the allocator splits, else a new
 * segment. Inlined (GNU attribute) into the loops over parameters, which make most
 * requests (their lists worked out once, in est_replay_param.cls); elsewhere called
 * through replay_malloc. */
__attribute__((always_inline)) static inline uint32_t
malloc_inl(struct est_replay_work *w, uint64_t size, unsigned l, enum est_replay_cat cat)
{
    if (w->overflow)
        return NONE;
    unsigned pool = size <= MIB_U ? 0 : 1;
    unsigned best = best_fit(w, l, size);
    if (best == NIL)
        return new_segment(w, size, pool, l, cat);
    uint64_t rem = w->b[best].size - size;
    if (!splits(pool, rem)) {
        free_del(w, best);
        return take(w, best, cat);
    }
    /* The request becomes a new entry before the block; the block, now the remainder,
     * keeps its entry (and its list place when the order allows). */
    unsigned a = entry_new(w);
    if (a == NIL)
        return NONE;
    struct est_replay_block *b = &w->b[best];
    uint64_t addr = b->addr;
    unsigned prev = b->prev;
    /* written whole (take's fields too): a few wide stores */
    w->b[a] = (struct est_replay_block){.size = size,
                                        .addr = addr,
                                        .prev = (uint16_t)prev,
                                        .next = (uint16_t)best,
                                        .fprev = NIL,
                                        .fnext = NIL,
                                        .cls = (uint16_t)l,
                                        .refs = 1,
                                        .pool = (uint8_t)pool,
                                        .is_free = 0,
                                        .cat = (uint8_t)cat};
    w->allocated += size;
    w->cat[cat] += size;
    if (prev != NIL)
        w->b[prev].next = (uint16_t)a;
    b->prev = (uint16_t)a;
    b->addr = addr + size;
    b->size = rem;
    free_rekey(w, best, list_of(pool, rem), 0);
    return a;
}

static __attribute__((noinline)) uint32_t replay_malloc(struct est_replay_work *w, uint64_t size,
                                                        enum est_replay_cat cat)
{
    return malloc_inl(w, size, list_of(size <= MIB_U ? 0 : 1, size), cat);
}

uint32_t est_replay_malloc(struct est_replay_work *w, uint64_t bytes, enum est_replay_cat cat)
{
    if (bytes > (1ull << 60))
        bytes = 1ull << 60;
    return replay_malloc(w, round_size(bytes), cat);
}

/* Frees block i, merging it with free neighbours in its segment. A neighbour that
 * absorbs it keeps its entry, and its list place when the order allows. Inlined (GNU
 * attribute) where backward and zero_grad free most blocks (unref_inl); elsewhere
 * called through block_free. */
__attribute__((always_inline)) static inline void free_inl(struct est_replay_work *w, unsigned i)
{
    struct est_replay_block *b = &w->b[i];
    uint64_t size = b->size;
    unsigned n = b->next, p = b->prev, pool = b->pool;
    /* allocated only grows between frees: its peaks are here, and at the end */
    if (w->allocated > w->peak_allocated)
        w->peak_allocated = w->allocated;
    w->allocated -= size;
    w->cat[b->cat] -= size;
    b->is_free = 1;
    int nfree = n != NIL && w->b[n].is_free, pfree = p != NIL && w->b[p].is_free;
    if (pfree) { /* the previous block absorbs i, and the next one too when free */
        struct est_replay_block *pb = &w->b[p];
        unsigned after = n;
        if (nfree) {
            free_del(w, n);
            size += w->b[n].size;
            after = w->b[n].next;
            entry_release(w, n);
        }
        size += pb->size;
        pb->size = size;
        pb->next = (uint16_t)after;
        if (after != NIL)
            w->b[after].prev = (uint16_t)p;
        entry_release(w, i);
        free_rekey(w, p, list_of(pool, size), 1);
    } else if (nfree) { /* the next block takes i's start */
        struct est_replay_block *nb = &w->b[n];
        size += nb->size;
        nb->addr = b->addr;
        nb->size = size;
        nb->prev = (uint16_t)p;
        if (p != NIL)
            w->b[p].next = (uint16_t)n;
        entry_release(w, i);
        free_rekey(w, n, list_of(pool, size), 1);
    } else {
        free_add(w, i, b->cls); /* its size's list, kept since it was allocated */
    }
}

static __attribute__((noinline)) void block_free(struct est_replay_work *w, unsigned i)
{
    free_inl(w, i);
}

static inline void unref(struct est_replay_work *w, uint32_t blk)
{
    if (blk == NONE || w->overflow)
        return;
    if (--w->b[blk].refs == 0)
        block_free(w, blk);
}

__attribute__((always_inline)) static inline void unref_inl(struct est_replay_work *w, uint32_t blk)
{
    if (blk == NONE || w->overflow)
        return;
    if (--w->b[blk].refs == 0)
        free_inl(w, blk);
}

void est_replay_unref(struct est_replay_work *w, uint32_t blk)
{
    unref(w, blk);
}

static uint32_t ref(struct est_replay_work *w, uint32_t blk)
{
    if (blk != NONE && !w->overflow) {
        if (w->b[blk].refs == UINT8_MAX) /* never more than a handful: a model error */
            w->overflow = 1;
        else
            w->b[blk].refs++;
    }
    return blk;
}

/* ---- The training steps ---- */

static double act_bytes(enum est_kind k, enum est_precision p)
{
    if (p == EST_PREC_FP32)
        return 4;
    return (k == EST_K_NORM || k == EST_K_SOFTMAX || k == EST_K_EMBED) ? 4 : 2;
}

/* Under autocast (amp/bf16: fp32 parameters), whether layer l's output is fp32, given
 * whether its input is (in32). Embeddings are on no autocast list and read fp32 weights;
 * norms and softmax are on its fp32 list (a Python RMSNorm computes in fp32 and
 * multiplies by its fp32 weight), but for batch norm (est_layer.norm16), on no list,
 * which keeps its input's precision; dropout, pooling and activations keep their input's
 * precision, but for a Python activation with an fp32-list operation (est_type_keeps32),
 * which ends in fp32; matrix products and attention are on its 16-bit list. */
static int amp_out32(const struct est_layer *l, int in32)
{
    switch (l->kind) {
    case EST_K_NORM:
        return !l->norm16 || in32;
    case EST_K_EMBED:
    case EST_K_SOFTMAX:
        return 1;
    case EST_K_DROPOUT:
    case EST_K_POOL:
        return in32;
    case EST_K_ACT:
        return in32 || l->keeps32 > 0;
    default:
        return 0;
    }
}

/* Parameter tensors of one repeat of a layer: a linear layer's weight and bias (the
 * bias has `out` elements), a norm's weight and bias, else one tensor; frozen ones
 * flagged in fz. A LoRA layer (rank r > 0) is its frozen base, then the adapter's A
 * (r x in) and B (out x r), from params - frozen = r (in + out). */
static unsigned layer_tensors(const struct est_layer *l, double t[4], uint8_t fz[4])
{
    if (!l->params)
        return 0;
    double p = (double)l->params;
    if (l->rank && l->frozen < l->params) {
        uint64_t tr = l->params - l->frozen, r = l->rank;
        uint64_t in = tr / r > l->out ? tr / r - l->out : 1;
        unsigned n = 0;
        if (l->frozen) {
            uint64_t wt = in * l->out <= l->frozen ? in * l->out : l->frozen;
            t[n] = (double)wt;
            fz[n++] = 1;
            if (l->frozen > wt) { /* the base's bias */
                t[n] = (double)(l->frozen - wt);
                fz[n++] = 1;
            }
        }
        uint64_t a = r * in <= tr ? r * in : tr / 2; /* r * in <= tr: a parser's row */
        t[n] = (double)a;
        fz[n++] = 0;
        t[n] = (double)(tr - a);
        fz[n++] = 0;
        return n;
    }
    if (l->kind == EST_K_NORM && l->frozen >= 2 && l->frozen < l->params) {
        /* a Keras BatchNormalization: its scale and offset train, its moving mean and
         * variance (frozen, 2C of them) do not */
        uint64_t c = l->frozen / 2, tr = l->params - l->frozen;
        unsigned n = 0;
        if (tr == 2 * c) {
            t[n] = (double)c;
            fz[n++] = 0;
        }
        t[n] = (double)(tr == 2 * c ? c : tr);
        fz[n++] = 0;
        t[n] = (double)c;
        fz[n++] = 1;
        t[n] = (double)(l->frozen - c);
        fz[n++] = 1;
        return n;
    }
    uint8_t f = l->frozen != 0; /* whole layers only, but for LoRA's and the above */
    fz[0] = fz[1] = f;
    if (l->kind == EST_K_LINEAR && l->out && l->params > l->out) {
        t[0] = p - (double)l->out;
        t[1] = (double)l->out;
        return 2;
    }
    if (l->kind == EST_K_NORM && l->params >= 2) {
        t[0] = (double)(l->params / 2);
        t[1] = p - t[0];
        return 2;
    }
    t[0] = p;
    return 1;
}

/* Sizes are products of untrusted counts: anything past 2^60 B (an exbibyte) is held
 * there, which no GPU fits anyway. */
static uint64_t alloc_size(double bytes)
{
    if (!(bytes > 1))
        bytes = 1;
    if (bytes > 0x1p60)
        bytes = 0x1p60;
    return round_size((uint64_t)(int64_t)bytes); /* exact: < 2^63 */
}

static uint32_t alloc(struct est_replay_work *w, double bytes, enum est_replay_cat cat)
{
    return replay_malloc(w, alloc_size(bytes), cat);
}

/* The first gradient of a parameter becomes .grad; a later one (a later micro-batch's,
 * under gradient accumulation, or every one while zero_grad keeps .grad) is added to it
 * in place and freed: AccumulateGrad's `variable_grad += new_grad` when the backward
 * builds no graph (torch/csrc/autograd/functions/accumulate_grad.h). */
static void accumulate(struct est_replay_work *w, uint32_t pi, uint32_t blk)
{
    if (w->p[pi].grad == NONE)
        w->p[pi].grad = blk;
    else
        unref(w, blk);
}

struct pass {
    const struct est_model *m;
    const struct est_opts *o;
    int expand; /* repeats one by one, else each layer's repeats as one tensor */
    int seq_model;
    int checkpoint; /* gradient checkpointing of the units (expanded repeats only) */
    uint32_t micro; /* forward and backward passes per optimizer step (accum_loops) */
    int keep_grads; /* zero_grad(set_to_none=False): the gradients stay allocated */
};

/* Row l is an expert of a mixture-of-experts block printed as one `E x Expert(` repeat
 * inside a block repeated c times (`32 x DecoderLayer(`): its count is c x E. */
static int expert_of(const struct est_layer *l, uint32_t c)
{
    return (l->moe & EST_MOE_EXPERT) && l->experts > 1 &&
           (uint64_t)c * l->experts == (uint64_t)l->count;
}

/* Execution order: a run of consecutive layers with the same repeat count (the children
 * of `12 x BertLayer(`) is one block, run count times over when repeats are expanded;
 * otherwise each layer once, its repeats as one tensor. A mixture-of-experts block's
 * experts printed as one repeat (expert_of) run inside their block: each of the block's
 * repeats runs the experts' rows E times over, one expert after another. */
static void plan(struct est_replay_work *w, const struct pass *ps)
{
    const struct est_model *m = ps->m;
    w->norder = 0;
    for (size_t g = 0, e; g < m->n; g = e) {
        uint32_t c = m->layers[g].count;
        e = g + 1;
        if (ps->expand)
            while (e < m->n && (m->layers[e].count == c || expert_of(&m->layers[e], c)))
                e++;
        uint32_t reps = ps->expand ? c : 1;
        for (uint32_t r = 0; r < reps; r++)
            for (size_t i = g, j; i < e; i = j) {
                j = i + 1;
                if (!ps->expand || m->layers[i].count == c) {
                    w->order[w->norder++] = (uint32_t)i;
                    continue;
                }
                while (j < e && m->layers[j].count == m->layers[i].count)
                    j++;
                for (uint32_t x = 0; x < m->layers[i].experts; x++)
                    for (size_t k = i; k < j; k++)
                        w->order[w->norder++] = (uint32_t)k;
            }
    }
    /* Checkpointed units: from each row that starts one (every repeat of it), to the
     * next start or through a row that ends the run. */
    w->nck = 0;
    if (!ps->checkpoint)
        return;
    int open = 0;
    for (uint32_t t = 0; t < w->norder; t++) {
        uint8_t u = m->layers[w->order[t]].unit;
        if (u & EST_UNIT_START) {
            if (open)
                w->ck[w->nck - 1].t1 = t;
            w->ck[w->nck].t0 = t;
            w->nck++;
            open = 1;
        }
        if ((u & EST_UNIT_END) && open) {
            w->ck[w->nck - 1].t1 = t + 1;
            open = 0;
        }
    }
    if (open)
        w->ck[w->nck - 1].t1 = w->norder;
}

/* The layer at position t of the plan, the repeats it stands for, and its parameter
 * tensors (layer_tensors, worked out once per replay in w->lt). */
static const struct est_layer *visit(const struct est_replay_work *w, const struct pass *ps,
                                     uint32_t t, double *mult, const double **tb,
                                     const uint8_t **fz, unsigned *nt)
{
    uint32_t i = w->order[t];
    const struct est_layer *l = &ps->m->layers[i];
    *mult = ps->expand ? 1 : (double)l->count;
    *tb = w->lt[i].t;
    *fz = w->lt[i].fz;
    *nt = w->lt[i].nt;
    return l;
}

/* The parameter entry holding entry i's storage: i, or the one it aliases. */
static inline uint32_t param_home(const struct est_replay_work *w, uint32_t i)
{
    return w->p[i].alias != NONE ? w->p[i].alias : i;
}

/* nt parameter entries of the layer being set up that are an earlier layer's, from entry
 * `from` on (a tied table's, a shared layer's first run's): no storage of their own, their
 * gradients added to those entries'. */
static void setup_alias(struct est_replay_work *w, uint32_t from, unsigned nt)
{
    for (unsigned k = 0; k < nt; k++) {
        uint32_t a = param_home(w, from + k);
        struct est_replay_param *p = &w->p[w->np++];
        w->p[a].shared = 1;
        *p = w->p[a];
        p->alias = a;
        p->frozen = 1;
        p->bytes = 0;
    }
}

/* model.to(device): parameters, and BatchNorm's running statistics, layer by layer.
 * Trained parameters are fp32 (masters under autocast); frozen ones as stored
 * (est_frozen_bytes). */
static void setup(struct est_replay_work *w, const struct pass *ps)
{
    w->np = 0;
    uint32_t src = NONE, src_nt = 0; /* the EST_LF_TIED_SRC table's first parameter */
    double src_elems = 0;               /* and its elements */
    for (size_t i = 0; i < ps->m->n && i < EST_REPLAY_MAX_NODES; i++)
        w->lt[i].p0 = NONE;
    for (uint32_t t = 0; t < w->norder; t++) {
        double mult;
        const double *tb;
        const uint8_t *fz;
        unsigned nt;
        const struct est_layer *l = visit(w, ps, t, &mult, &tb, &fz, &nt);
        if (w->lt[w->order[t]].p0 == NONE)
            w->lt[w->order[t]].p0 = w->np;
        /* a shared layer's later run (est_layer.shared_from): the first run's parameters */
        uint32_t sr = l->shared_from ? l->shared_from - 1 : NONE;
        /* (a row repeated within the layer, count > 1, keeps parameters of its own: each
         * repeat's visit would need the first run's matching repeat; the safe side) */
        if ((l->flags & EST_LF_TIED) && sr < w->order[t] && w->lt[sr].p0 != NONE &&
            w->lt[sr].nt == nt && l->count == 1 && ps->m->layers[sr].count == 1 &&
            ps->m->shared_line) {
            setup_alias(w, w->lt[sr].p0, nt);
            continue;
        }
        if ((l->flags & EST_LF_TIED_SRC) && src == NONE && nt) {
            src = w->np;
            src_nt = nt;
            src_elems = tb[0] * mult;
        }
        if ((l->flags & EST_LF_TIED) && src != NONE && nt == src_nt && tb[0] * mult == src_elems) {
            setup_alias(w, src, nt);
            continue;
        }
        /* an output head tied to the table (--tied-head): its weight the table's; its
         * bias entry (layer_tensors gives every linear layer one) its own */
        unsigned k0 = 0;
        if ((l->flags & EST_LF_TIED) && src != NONE && src_nt == 1 && nt == 2 &&
            l->kind == EST_K_LINEAR && (tb[0] + tb[1]) * mult >= src_elems &&
            (tb[0] + tb[1]) * mult <= src_elems + tb[1] * mult) {
            setup_alias(w, src, 1);
            k0 = 1;
        }
        for (unsigned k = k0; k < nt; k++) {
            struct est_replay_param *p = &w->p[w->np++];
            p->alias = p->pend = NONE;
            p->shared = 0;
            double elem = fz[k] ? est_frozen_bytes(l, ps->o->precision) : 4;
            p->frozen = fz[k];
            p->dtype = (uint8_t)(2 * elem);
            p->bytes = tb[k] * mult * elem;
            p->size = alloc_size(p->bytes);
            p->cls = (uint16_t)list_of(p->size <= MIB_U ? 0 : 1, p->size);
            p->orphan = l->kind == EST_K_OTHER || (l->flags & EST_LF_INPLACE);
            p->grad = p->state[0] = p->state[1] = p->tmp[0] = p->tmp[1] = p->tmp[2] = p->cast = NONE;
            malloc_inl(w, p->size, p->cls, EST_RC_WEIGHTS);
        }
        if (l->kind == EST_K_NORM && !l->per_token && nt == 2) {
            alloc(w, tb[0] * mult * 4, EST_RC_WEIGHTS); /* running mean */
            alloc(w, tb[0] * mult * 4, EST_RC_WEIGHTS); /* running var */
            alloc(w, 8, EST_RC_WEIGHTS);                /* num_batches_tracked */
        }
    }
}

/* One flattened bucket of DDP's construction-time broadcast, at most two in flight
 * (c10d's broadcast_coalesced): the oldest is copied out and freed before a third. */
static void broadcast_flat(struct est_replay_work *w, uint32_t flight[2], double bytes)
{
    if (flight[1] != NONE) {
        unref(w, flight[0]);
        flight[0] = flight[1];
        flight[1] = NONE;
    }
    flight[flight[0] == NONE ? 0 : 1] = alloc(w, bytes, EST_RC_TRANSIENT);
}

/* DistributedDataParallel(model): rank 0 broadcasts the parameters, each dtype's
 * flattened into buckets of at least EST_DDP_BROADCAST_CAP (buffers, a few KiB of
 * BatchNorm statistics, aside); then the Reducer makes its first-iteration bucket, all
 * trained parameters' gradients in one flat tensor. */
static void ddp_construct(struct est_replay_work *w)
{
    double open[4] = {0};
    uint8_t key[4];
    unsigned nk = 0;
    uint32_t flight[2] = {NONE, NONE};
    double trained = 0;
    for (uint32_t i = 0; i < w->np; i++) {
        const struct est_replay_param *p = &w->p[i];
        unsigned k = 0;
        while (k < nk && key[k] != p->dtype)
            k++;
        if (k == nk && nk < 4)
            key[nk++] = p->dtype;
        if (k == 4) /* a fifth dtype: shares the last bucket */
            k = 3;
        open[k] += p->bytes;
        if (open[k] >= EST_DDP_BROADCAST_CAP) {
            broadcast_flat(w, flight, open[k]);
            open[k] = 0;
        }
        if (!p->frozen)
            trained += p->bytes;
    }
    for (unsigned k = 0; k < nk; k++)
        if (open[k] > 0)
            broadcast_flat(w, flight, open[k]);
    unref(w, flight[0]);
    unref(w, flight[1]);
    if (trained > 0)
        w->ddp_bucket = alloc(w, trained, EST_RC_BUCKETS);
}

/* The second forward's bucket rebuild: the first bucket goes, then the trained
 * gradients in the order they became ready (the reverse of the forward's) fill the
 * new ones, kept from then on. */
static void ddp_rebuild(struct est_replay_work *w)
{
    unref(w, w->ddp_bucket);
    w->ddp_bucket = NONE;
    struct est_ddp_fill f = {0};
    for (uint32_t i = w->np; i-- > 0;) {
        double b = w->p[i].frozen ? 0 : est_ddp_bucket(&f, w->p[i].bytes);
        if (b > 0)
            alloc(w, b, EST_RC_BUCKETS);
    }
    if (f.cur > 0)
        alloc(w, f.cur, EST_RC_BUCKETS);
}

/* The first matrix product on a thread's cuBLAS handle (0: the main thread's, 1: the
 * autograd engine's) allocates its workspace, after the product's output. */
static void cublas_workspace(struct est_replay_work *w, const struct est_opts *o, int thread)
{
    if (w->cublas_ws[thread] != NONE)
        return;
    uint32_t kib = o->cublas_workspace_kib ? o->cublas_workspace_kib : EST_CUBLAS_WS_KIB;
    w->cublas_ws[thread] = alloc(w, (double)kib * 1024, EST_RC_TRANSIENT);
}

/* Node nd also keeps blk for its backward (a slot past its own; none left: not kept). */
static void keep_also(struct est_replay_work *w, struct est_replay_node *nd, uint32_t blk)
{
    if (nd->nsaved < EST_REPLAY_NSAVED)
        nd->saved[nd->nsaved++] = blk;
    else
        unref(w, blk);
}

/* Eager attention's probabilities, `elems` of them: q k^T, scaled, masked (each a new
 * tensor, the one before freed), softmax kept (fp32 under autocast), its dropout's mask
 * and output kept (saved[0..2]; at a printed rate of 0, EST_LF_ATTN_NODROP, no mask, and
 * the product with the values keeps the softmax's output itself in fp32, its 16-bit copy
 * under autocast, or with talking heads the second mixing's output, which saved[2] then
 * stands for). Cosine attention (EST_LF_COSINE) keeps q k^T too, for its trained logit
 * scale's gradient; talking heads (EST_LF_TALKING) mix the heads with a linear layer before
 * the softmax and one after, each keeping its input, a contiguous copy of the permuted
 * scores (slots past the node's own). */
static void eager_scores(struct est_replay_work *w, struct est_replay_node *nd, double elems,
                         int amp, const struct est_layer *l)
{
    int cosine = (l->flags & EST_LF_COSINE) != 0, talking = (l->flags & EST_LF_TALKING) != 0;
    /* the parser gives talking heads no q, k, v rows (nsaved 4: slots 4-6 free); a cosine
     * attention's (transformers' Swin V2) take 4-6, its copy 7 */
    assert(nd->nsaved + cosine + 2 * talking <= EST_REPLAY_NSAVED);
    double se = elems * (amp ? 2 : 4), pe = elems * 4;
    uint32_t s1 = alloc(w, se, cosine ? EST_RC_ACT : EST_RC_TRANSIENT);
    uint32_t s2 = alloc(w, se, EST_RC_TRANSIENT);
    if (!cosine)
        unref(w, s1);
    uint32_t mix_l = talking ? alloc(w, se, EST_RC_ACT) : NONE;
    nd->saved[0] = alloc(w, pe, EST_RC_ACT);
    unref(w, s2);
    uint32_t mix_w = talking ? alloc(w, se, EST_RC_ACT) : NONE; /* autocast's 16-bit cast */
    int drop = !(l->flags & EST_LF_ATTN_NODROP);
    if (drop)
        nd->saved[1] = alloc(w, elems, EST_RC_ACT);
    if (drop || talking)
        nd->saved[2] = alloc(w, pe, EST_RC_ACT);
    else if (amp) /* the fp32 softmax's 16-bit copy (autocast's, or the model's own
                     .to(value.dtype)), which the product keeps and F.dropout hands back */
        nd->saved[2] = alloc(w, se, EST_RC_ACT);
    nd->scores = pe;
    if (cosine)
        keep_also(w, nd, s1);
    if (talking) {
        keep_also(w, nd, mix_l);
        keep_also(w, nd, mix_w);
    }
}

/* PyTorch's math kernel for scaled_dot_product_attention (aten
 * _scaled_dot_product_attention_math), `elems` probabilities: the scores, the softmax and
 * its fully-masked-rows fix (_safe_softmax: a boolean mask, then the result) are new
 * tensors; the result is kept (saved[0]), in fp32 as the inputs are. Dropout is left out:
 * the kernel runs it only for a dropout probability above 0, which Llama-style configs
 * leave at 0 and a print does not show. */
static void math_scores(struct est_replay_work *w, struct est_replay_node *nd, double elems)
{
    double pe = elems * 4;
    uint32_t s1 = alloc(w, pe, EST_RC_TRANSIENT);
    uint32_t s2 = alloc(w, pe, EST_RC_TRANSIENT);
    uint32_t mask = alloc(w, elems, EST_RC_TRANSIENT);
    unref(w, s1);
    nd->saved[0] = alloc(w, pe, EST_RC_ACT);
    unref(w, mask);
    unref(w, s2);
    nd->scores = pe;
    w->math_attention = 1;
}

/* Releases what node nd keeps for backward. */
static inline void free_saved(struct est_replay_work *w, struct est_replay_node *nd)
{
    for (int s = 0; s < nd->nsaved; s++) {
        unref(w, nd->saved[s]);
        nd->saved[s] = NONE;
    }
}

/* A node autograd does not record (nothing before it, nor it, needs a gradient):
 * what it would have kept is freed at once. */
static void drop_saved(struct est_replay_work *w, struct est_replay_node *nd)
{
    free_saved(w, nd);
    nd->in_bytes = nd->scores = nd->up_bytes = nd->up_in = 0;
    nd->lora_out = nd->lora_in = nd->deq = nd->qk_grads = 0;
    nd->moe_grad = nd->moe_full = 0;
}

/* bytes of an activation gradient or temporary of node nd: an expert's, sized for its
 * routed tokens, grown to one expert given every token (est_replay_node.grow). */
static inline double grown(const struct est_replay_node *nd, double bytes)
{
    return nd->grow > 1 ? bytes * nd->grow : bytes;
}

/* Where a forward pass is: the current tensor, the last linear layer's input (kept by
 * its node, or held in lin_hold when that layer is frozen or kept a 16-bit copy of it:
 * the next layer may read it, a gated MLP's up projection), whether the current tensor
 * needs a gradient (rg: a layer with trained parameters has run on the way to it), the
 * next parameter tensor, whether the current tensor and lin_in are fp32 (always under
 * fp32; under autocast, amp_out32). */
struct fwd {
    uint32_t cur, lin_in, lin_hold, pi;
    double cur_bytes, lin_in_bytes;
    int rg;
    int cur32, lin32;
    uint32_t qk[2]; /* the query's and key's projections, waiting for their attention */
    double qk_bytes[2];
    /* An open mixture-of-experts block (from its router's row to its experts' end): its
     * input, held while the experts gather their tokens from it; its output, zeros the
     * experts' weighted outputs are added into (fp32, moe_out_bytes), which flows on;
     * the router's logits, returned by the block; the input's width and the router's
     * repeats in the plan (1, or the block's count when repeats are not expanded). */
    uint32_t moe_in, moe_out, moe_aux;
    double moe_out_bytes, moe_d, moe_rmult;
};

/* The open mixture-of-experts block of f ends: what it held goes (its output lives on
 * as the current tensor). */
static void moe_end(struct est_replay_work *w, struct fwd *f)
{
    unref(w, f->moe_in);
    unref(w, f->moe_out);
    unref(w, f->moe_aux);
    f->moe_in = f->moe_out = f->moe_aux = NONE;
}

/* Runs plan positions [t0, t1) from f, appending their nodes to w->nd. Until rg, nodes
 * keep nothing; a frozen matrix product never keeps its input for a weight gradient.
 * Under autocast (amp/bf16 with fp32 parameters) it follows which tensors are fp32
 * (amp_out32):
 *   - every norm keeps an fp32 input: the residual stream stays fp32 (a residual add of
 *     a 16-bit branch into it promotes to fp32) and layer_norm is on autocast's fp32 list
 *     (it casts a 16-bit input), so a 16-bit tensor before a norm is replaced by a new
 *     fp32 one of the norm's size;
 *   - autocast caches its casts of leaf tensors (the weights) only: a matrix product with
 *     an fp32 input makes its own 16-bit copy, kept for its weight's gradient (the fp32
 *     original is not; it is held for the layers that read it again, as a frozen layer's
 *     input is). The key and value projections and a gated MLP's up projection each make
 *     their own copy of the input they share with the query's (the gate's): that input
 *     is a norm's output or the residual stream in every transformer block, fp32, even
 *     where the listed order puts something 16-bit before it (Llama's print lists its
 *     norms after the MLP); were it 16-bit, the copy only overstates;
 *   - a Python activation with an fp32-list operation (est_type_keeps32) keeps that
 *     operation's fp32 copy of its 16-bit input instead of the input, keeps32 of its
 *     tensors in fp32, and hands an fp32 output on.
 * Under fp32 none of this changes anything: cur32 and lin32 stay 1.
 * Inlined (GNU attribute): the per-node loop of every replay. */
__attribute__((always_inline)) static inline void forward_range(struct est_replay_work *w,
                                                                const struct pass *ps,
                                                                struct fwd *f, uint32_t t0,
                                                                uint32_t t1)
{
    const struct est_opts *o = ps->o;
    double B = o->batch, seq = o->seq ? o->seq : 1;
    int amp = o->precision != EST_PREC_FP32;
    uint32_t cur = f->cur, lin_in = f->lin_in, lin_hold = f->lin_hold, pi = f->pi;
    uint32_t *qk = f->qk;
    double *qkb = f->qk_bytes;
    double cur_bytes = f->cur_bytes, lin_in_bytes = f->lin_in_bytes;
    int rg = f->rg;
    int cur32 = f->cur32, lin32 = f->lin32;
    for (uint32_t t = t0; t < t1; t++) {
        double mult;
        const double *tb;
        const uint8_t *fz;
        unsigned nt;
        const struct est_layer *l = visit(w, ps, t, &mult, &tb, &fz, &nt);
        uint32_t first = pi;
        pi += nt;
        if (l->kind == EST_K_OTHER || (l->flags & EST_LF_INPLACE))
            continue;
        /* Mixture of experts: a row outside the open block's experts ends it. An expert
         * runs on k / E of the tokens on average (route); its activation gradients and
         * temporaries are sized for one expert given every token (grow), the most one
         * can get. Its first row reads its tokens gathered from the block's input, a
         * new tensor (hidden_states[top_x], fp32 as the norm before the block gives it). */
        if (f->moe_in != NONE && !(l->moe & EST_MOE_EXPERT))
            moe_end(w, f);
        double route = 1, grow = 1;
        if (l->moe & EST_MOE_EXPERT) {
            if (o->experts_per_token && o->experts_per_token < l->experts)
                route = (double)o->experts_per_token / l->experts;
            double per = f->moe_in != NONE ? mult / f->moe_rmult : mult; /* experts */
            if (route * (per > 1 ? per : 1) < 1)
                grow = 1 / (route * (per > 1 ? per : 1));
        }
        double tokens = B * mult * (l->per_token ? seq : 1);
        if ((l->moe & EST_MOE_FIRST) && f->moe_in != NONE) {
            double gb = tokens * f->moe_d * route * 4;
            uint32_t gx = alloc(w, gb, EST_RC_ACT);
            unref(w, cur);
            cur = gx;
            cur_bytes = gb;
            cur32 = 1;
        }
        int trains = l->params > l->frozen;
        double elems = tokens * (double)l->out * (l->attn ? est_attn_keys(l, seq) : 1) * route;
        int out32 = !amp || amp_out32(l, cur32);
        double ob = elems * (out32 ? 4 : 2);
        struct est_replay_node *nd = &w->nd[w->nn++];
        nd->kind = l->kind;
        nd->flags = l->flags;
        nd->trains = (uint8_t)trains;
        nd->keeps = 0;
        nd->nsaved = 4;
        for (int k = 0; k < 4; k++)
            nd->saved[k] = NONE;
        nd->p0 = first;
        nd->np = nt;
        nd->in_bytes = rg ? cur_bytes : 0; /* the input needs no gradient */
        nd->scores = nd->up_bytes = nd->up_in = 0;
        nd->lora_out = nd->lora_in = nd->deq = nd->qk_grads = 0;
        nd->moe = l->moe;
        nd->grow = grow;
        nd->moe_grad = 0;
        nd->moe_full = (l->moe & EST_MOE_FIRST) && f->moe_in != NONE
                           ? tokens / mult * f->moe_rmult * f->moe_d * 4
                           : 0;
        uint32_t out = NONE;
        switch (l->kind) {
        case EST_K_LINEAR:
        case EST_K_CONV: {
            int gated = (l->flags & EST_LF_GATED) && lin_in != NONE;
            int shares = l->shares_input && !gated && lin_in != NONE;
            uint32_t in = gated || shares ? lin_in : cur; /* what the layer multiplies */
            double in_b = gated || shares ? lin_in_bytes : cur_bytes;
            int keeps_in = l->frozen < l->params && !l->rank; /* for its weight gradient */
            /* Autocast's 16-bit copy of the input (forward_range's contract): a key,
             * value or up projection's own, else one of an fp32 input; kept for the
             * weight's gradient, else freed once the product has run. */
            uint32_t in16 = NONE;
            if (amp && (gated || shares))
                in16 = alloc(w, lin32 ? lin_in_bytes / 2 : lin_in_bytes, EST_RC_ACT);
            else if (amp && cur32 && cur != NONE)
                in16 = alloc(w, cur_bytes / 2, EST_RC_ACT);
            if (amp) /* autocast's 16-bit copies of trained weights, kept for backward (a
                        checkpointed unit's recomputation finds them cached; a shared
                        layer's later runs find the first run's) */
                for (unsigned k = 0; k < nt; k++) {
                    uint32_t q = param_home(w, first + k);
                    if (!fz[k] && w->p[q].cast == NONE)
                        w->p[q].cast = alloc(w, w->p[q].bytes / 2, EST_RC_WEIGHTS);
                }
            uint32_t deq = NONE;
            if (l->wbits && l->wbits != 32 && l->frozen) { /* a quantized weight, unpacked
                                                              in 16 bits for the product */
                nd->deq = (double)l->frozen * mult * 2;
                deq = alloc(w, nd->deq, EST_RC_TRANSIENT);
            } else if (amp && l->wbits == 32 && l->frozen) {
                /* autocast's 16-bit copy of a frozen fp32 weight (a table's frozen row):
                 * made for the product, and kept for the input's gradient when one is
                 * needed (a trained layer ran before) */
                assert(!l->rank); /* saved[3] is a LoRA dropout's; tables have no LoRA */
                uint32_t c16 = alloc(w, (double)l->frozen * mult * 2,
                                     rg ? EST_RC_WEIGHTS : EST_RC_TRANSIENT);
                if (rg)
                    nd->saved[3] = c16;
                else
                    deq = c16;
            }
            out = alloc(w, ob, EST_RC_ACT);
            unref(w, deq);
            if (!keeps_in) {
                unref(w, in16);
                in16 = NONE;
            }
            if (l->kind == EST_K_LINEAR) /* convolutions run on cuDNN */
                cublas_workspace(w, o, 0);
            if (l->rank) {
                /* LoRA: out + B(A(dropout(in))) * scaling. A keeps its input (a dropout
                 * copy and its mask, or in itself), B keeps A's r-wide output; B's output
                 * and its scaled copy are added into a new result. */
                double tok = elems / (double)(l->out ? l->out : 1);
                uint32_t a_in;
                if (l->flags & EST_LF_LORA_DROP) {
                    a_in = alloc(w, in_b, EST_RC_ACT);
                    nd->saved[3] = alloc(w, in_b / act_bytes(EST_K_LINEAR, o->precision),
                                         EST_RC_ACT); /* bool mask */
                } else {
                    a_in = ref(w, in);
                }
                nd->nsaved = 6;
                nd->saved[4] = a_in;
                nd->saved[5] = alloc(w, tok * l->rank * act_bytes(EST_K_LINEAR, o->precision),
                                     EST_RC_ACT);
                uint32_t bo = alloc(w, grown(nd, ob), EST_RC_TRANSIENT);
                uint32_t sc = alloc(w, grown(nd, ob), EST_RC_TRANSIENT);
                unref(w, bo);
                uint32_t sum = alloc(w, ob, EST_RC_ACT);
                unref(w, sc);
                unref(w, out);
                out = sum;
                nd->lora_out = ob;
                nd->lora_in = rg ? in_b : 0;
            }
            if (gated) {
                /* up(x) from the gate's input; then act(gate(x)) * up(x), which
                 * keeps both factors */
                uint32_t prod = alloc(w, ob, EST_RC_ACT);
                nd->saved[0] = in16 != NONE ? in16 : keeps_in ? ref(w, lin_in) : NONE;
                nd->saved[1] = out;
                nd->saved[2] = cur;
                nd->up_bytes = ob;
                nd->up_in = lin_in_bytes;
                out = prod;
                break;
            }
            if (shares) {
                /* key or value: the query's input again; the projection before it
                 * waits for the attention, which keeps it (rotary embedding or not) */
                nd->in_bytes = rg ? in_b : 0;
                nd->saved[0] = in16 != NONE ? in16 : keeps_in ? ref(w, lin_in) : NONE;
                unref(w, qk[0]);
                qk[0] = qk[1];
                qkb[0] = qkb[1];
                qk[1] = cur;
                qkb[1] = cur_bytes;
                break;
            }
            unref(w, lin_hold);
            lin_hold = NONE;
            if (in16 != NONE) {
                nd->saved[0] = in16;
                lin_hold = cur; /* the fp32 original */
            } else if (keeps_in) {
                nd->saved[0] = cur;
            } else {
                lin_hold = cur; /* the reference the node would have kept */
            }
            lin_in = cur;
            lin_in_bytes = cur_bytes;
            lin32 = cur32;
            break;
        }
        case EST_K_NORM: {
            if (!cur32 && cur != NONE && !l->norm16) {
                /* autocast: the fp32 residual add's result (or layer_norm's cast) */
                uint32_t in32 = alloc(w, ob, EST_RC_ACT);
                unref(w, cur);
                cur = in32;
                cur_bytes = ob;
                nd->in_bytes = rg ? cur_bytes : 0;
            }
            out = alloc(w, ob, EST_RC_ACT);
            /* mean and inverse std: per token (LayerNorm) or per channel */
            double st = l->per_token ? B * seq * mult * 4 : (nt ? tb[0] * mult * 4 : 512);
            nd->saved[0] = cur;
            nd->saved[1] = alloc(w, st, EST_RC_ACT);
            nd->saved[2] = alloc(w, st, EST_RC_ACT);
            /* x * rsqrt(mean(x^2)) in fp32, kept by the weight's product for the weight's
             * gradient: not when the weight is frozen (a PEFT base; a norm the parser
             * could not size, with no parameters, trains unless the model is one) */
            int weight_trains = l->params ? l->params > l->frozen : !ps->m->frozen;
            if ((l->flags & EST_LF_RMS) && weight_trains)
                nd->saved[3] = alloc(w, elems * 4, EST_RC_ACT);
            break;
        }
        case EST_K_ACT: {
            uint32_t in32 = NONE;
            if (l->keeps) {
                /* written out in Python: the tensors its operations keep, each made
                 * before the output, one temporary at a time between them */
                unsigned kp = l->keeps < EST_REPLAY_NSAVED - 1 ? l->keeps
                                                                : EST_REPLAY_NSAVED - 1;
                nd->keeps = (uint8_t)kp;
                nd->nsaved = (uint8_t)(kp + 1 > 4 ? kp + 1 : 4); /* saved[kp + 1..3]: NONE */
                /* autocast, a 16-bit input and an fp32-list operation: the tensors made
                 * before it 16-bit, then its fp32 copy of the input, then fp32 ones */
                unsigned k16 = kp;
                if (!cur32 && l->keeps32)
                    k16 = l->keeps32 < kp ? kp - l->keeps32 : 0;
                for (unsigned k = 1; k <= k16; k++)
                    nd->saved[k] = alloc(w, cur32 ? ob : elems * 2, EST_RC_ACT);
                if (k16 < kp)
                    in32 = alloc(w, elems * 4, EST_RC_ACT);
                unref(w, alloc(w, grown(nd, ob), EST_RC_TRANSIENT));
                for (unsigned k = k16 + 1; k <= kp; k++)
                    nd->saved[k] = alloc(w, ob, EST_RC_ACT);
            }
            out = alloc(w, ob, EST_RC_ACT);
            if (in32 != NONE) {
                nd->saved[0] = in32; /* the input itself: kept by nothing */
                unref(w, cur);
            } else if (l->flags & EST_LF_SAVES_RESULT) {
                nd->saved[0] = ref(w, out);
                unref(w, cur);
            } else {
                nd->saved[0] = cur;
            }
            break;
        }
        case EST_K_DROPOUT:
            out = alloc(w, ob, EST_RC_ACT);
            nd->saved[0] = alloc(w, elems, EST_RC_ACT); /* bool mask */
            unref(w, cur);
            break;
        case EST_K_SOFTMAX:
            out = alloc(w, ob, EST_RC_ACT);
            nd->saved[0] = ref(w, out);
            unref(w, cur);
            break;
        case EST_K_POOL:
            out = alloc(w, ob, EST_RC_ACT);
            if (l->flags & EST_LF_SAVES_RESULT) { /* kept by the product it feeds (unfold) */
                nd->saved[0] = ref(w, out);
                unref(w, cur);
            } else {
                nd->saved[0] = cur;
            }
            break;
        case EST_K_EMBED:
            out = alloc(w, ob, EST_RC_ACT);
            nd->in_bytes = 0; /* token ids: no gradient */
            unref(w, cur);
            break;
        case EST_K_ATTN: {
            /* Blocks without q, k, v rows read as such (a fused qkv projection) keep the
             * listed order: the attention after the output projection. */
            if (qk[0] != NONE && qk[1] != NONE) {
                /* In call order right after q, k, v (est_layer.shares_input). A grouped
                 * key and value are repeated to the query's width (repeat_kv's copies);
                 * the query, key and values are kept by q k^T and probabilities x values
                 * (eager) or by the kernel (fused), as is a fused kernel's output. The
                 * output is transposed into a contiguous copy, the output projection's
                 * input; its backward makes the query's and key's gradients besides the
                 * values'. */
                double qb = qkb[0];
                uint32_t kk = qk[1], vv = cur;
                if (qkb[1] < qb) {
                    kk = alloc(w, qb, EST_RC_ACT);
                    unref(w, qk[1]);
                }
                if (cur_bytes < qb) {
                    vv = alloc(w, qb, EST_RC_ACT);
                    unref(w, cur);
                }
                nd->nsaved = 7;
                nd->saved[4] = qk[0];
                nd->saved[5] = kk;
                nd->saved[6] = vv;
                qk[0] = qk[1] = NONE;
                nd->in_bytes = rg ? qb : 0;
                nd->qk_grads = rg ? qb : 0;
                uint32_t ao;
                if (est_attention_math(l, o, qkb[1] < qb)) {
                    math_scores(w, nd, elems);
                    ao = alloc(w, qb, EST_RC_ACT);
                } else if (!est_layer_materialised(l, o->attention)) {
                    ao = alloc(w, qb, EST_RC_ACT);
                    nd->saved[0] = ref(w, ao);
                } else {
                    eager_scores(w, nd, elems, amp, l);
                    ao = alloc(w, qb, EST_RC_ACT);
                }
                cur = alloc(w, qb, EST_RC_ACT); /* transpose(1, 2).contiguous() */
                cur_bytes = qb;
                cur32 = !amp;
                unref(w, ao);
                if (!rg)
                    drop_saved(w, nd);
                continue;
            }
            if (est_attention_math(l, o, (l->flags & EST_LF_GROUPED) != 0)) {
                /* a fused projection's grouped key and values (EST_LF_GROUPED): the math
                 * kernel, as for separate grouped projections; the values kept */
                math_scores(w, nd, elems);
                nd->saved[3] = ref(w, cur);
                nd->nsaved = 7;
                /* the key and values expanded to every head, copied for the products */
                nd->saved[4] = alloc(w, cur_bytes, EST_RC_ACT);
                nd->saved[5] = alloc(w, cur_bytes, EST_RC_ACT);
                if (l->flags & EST_LF_ATTN_DROP) /* the kernel's dropout: mask, output */
                    nd->saved[6] = alloc(w, elems * 5, EST_RC_ACT);
                if (!rg)
                    drop_saved(w, nd);
                continue;
            }
            if (!est_layer_materialised(l, o->attention)) {
                /* A fused kernel keeps its inputs and its output. In a table in call
                 * order (CSV, torchinfo) the listed input is the fused qkv projection's
                 * output, and the output flows on to the output projection, which keeps
                 * it. A module tree lists the attention after its block's projections
                 * (est_parse_modtree closes the attention module there: GPT-2's c_attn
                 * and c_proj, nn.MultiheadAttention's in_proj and out_proj), so there
                 * the output projection's node keeps the fused projection's output (the
                 * query, key and values the kernel keeps), the listed input (the output
                 * projection's or its dropout's output) stands for the merged heads'
                 * contiguous copy the output projection really keeps (transpose(1,
                 * 2).contiguous()), and what flows on is a new tensor, the block's
                 * residual sum that the next layer keeps (GPT-2's ln_2), not the
                 * kernel's output. */
                out = alloc(w, cur_bytes, EST_RC_ACT);
                nd->saved[0] = cur;
                nd->saved[1] = ref(w, out);
                if (ps->m->format == EST_FMT_MODTREE) {
                    unref(w, out);
                    out = alloc(w, cur_bytes, EST_RC_ACT);
                }
                cur = out;
                if (!rg)
                    drop_saved(w, nd);
                continue;
            }
            /* Eager attention (eager_scores), and the values (the listed input) kept by
             * the probabilities x values matmul; the layer's input flows on to the next
             * layer. */
            eager_scores(w, nd, elems, amp, l);
            nd->saved[3] = ref(w, cur);
            if (!rg)
                drop_saved(w, nd);
            continue;
        }
        default:
            break;
        }
        if (!rg && !trains)
            drop_saved(w, nd);
        rg = rg || trains;
        cur = out;
        cur_bytes = ob;
        cur32 = out32;
        if ((l->moe & EST_MOE_ROUTER) && l->out) {
            /* A router: softmax over its E scores (fp32) and top-k's values and indices,
             * kept; its logits, held while the block runs (the block returns them); then
             * the block's output, fp32 zeros the experts add into. */
            if (f->moe_in != NONE)
                moe_end(w, f);
            double tok = elems / (double)l->out;
            uint32_t k = o->experts_per_token && o->experts_per_token < l->experts
                             ? o->experts_per_token
                             : l->experts;
            uint32_t pr = alloc(w, elems * 4, EST_RC_ACT);
            uint32_t tk = alloc(w, tok * k * 12, EST_RC_ACT);
            if (rg) {
                keep_also(w, nd, pr);
                keep_also(w, nd, tk);
                nd->moe_grad = elems * 4;
            } else {
                unref(w, pr);
                unref(w, tk);
            }
            f->moe_in = ref(w, lin_in);
            f->moe_d = (double)((l->rank ? l->frozen : l->params) / l->out);
            f->moe_rmult = mult;
            f->moe_aux = cur;
            f->moe_out_bytes = tok * f->moe_d * 4;
            f->moe_out = alloc(w, f->moe_out_bytes, EST_RC_ACT);
            cur = ref(w, f->moe_out);
            cur_bytes = f->moe_out_bytes;
            cur32 = 1;
        } else if ((l->moe & EST_MOE_LAST) && f->moe_in != NONE) {
            /* routing_weights[top_x] * expert(x): the product keeps the expert's output
             * and the gathered weights; its result, fp32 by promotion, is added into the
             * block's output (index_add_) and freed. */
            double tok = l->out ? elems / (double)l->out : 0;
            if (rg) {
                keep_also(w, nd, ref(w, cur));
                keep_also(w, nd, alloc(w, tok * 4, EST_RC_ACT));
                nd->moe_grad = elems * 4;
            }
            unref(w, alloc(w, grown(nd, elems * 4), EST_RC_TRANSIENT));
            unref(w, cur);
            cur = ref(w, f->moe_out);
            cur_bytes = f->moe_out_bytes;
            cur32 = 1;
        }
    }
    f->cur = cur;
    f->cur_bytes = cur_bytes;
    f->cur32 = cur32;
    f->lin32 = lin32;
    f->lin_in = lin_in;
    f->lin_in_bytes = lin_in_bytes;
    f->lin_hold = lin_hold;
    f->rg = rg;
    f->pi = pi;
}

/* Frees what nodes [n0, n1) keep for backward. */
static void release_saved(struct est_replay_work *w, uint32_t n0, uint32_t n1)
{
    for (uint32_t k = n0; k < n1; k++)
        free_saved(w, &w->nd[k]);
}

/* Ends a unit's (or the pass's) stretch: what was held for a linear layer's successor. */
static void fwd_cut(struct est_replay_work *w, struct fwd *f)
{
    unref(w, f->lin_hold);
    f->lin_hold = f->lin_in = NONE;
    f->lin_in_bytes = 0;
    unref(w, f->qk[0]);
    unref(w, f->qk[1]);
    f->qk[0] = f->qk[1] = NONE;
    moe_end(w, f);
}

/* One forward pass from input x (x_bytes, fp32 or token ids; NONE: none listed).
 * Records the graph in w->nd and returns the output, its size in *out_bytes. Under
 * gradient checkpointing (transformers' gradient_checkpointing_enable():
 * torch.utils.checkpoint around each layer of a ModuleList, whose input is made to need a
 * gradient) a unit keeps only its input; what its nodes would keep is freed when it ends
 * and made again in backward. A unit is a transformer block, whose input is the residual
 * stream: under autocast fp32, so a 16-bit tensor before it (GPT-2's block ends in its
 * MLP's dropout, before the residual add) is replaced by the add's fp32 result (an
 * overstatement for a ModuleList without residual adds). */
static uint32_t forward(struct est_replay_work *w, const struct pass *ps, uint32_t x,
                        double x_bytes, double *out_bytes)
{
    struct fwd f = {.cur = ref(w, x), .cur_bytes = x_bytes, .lin_in = NONE, .lin_hold = NONE,
                    .qk = {NONE, NONE}, .cur32 = 1, .lin32 = 1, .moe_in = NONE,
                    .moe_out = NONE, .moe_aux = NONE};
    w->nn = 0;
    uint32_t t = 0;
    for (uint32_t u = 0; u < w->nck; u++) {
        struct est_replay_unit *c = &w->ck[u];
        forward_range(w, ps, &f, t, c->t0);
        fwd_cut(w, &f);
        if (!f.cur32 && f.cur != NONE) { /* autocast only */
            uint32_t in32 = alloc(w, 2 * f.cur_bytes, EST_RC_ACT);
            unref(w, f.cur);
            f.cur = in32;
            f.cur_bytes *= 2;
            f.cur32 = 1;
        }
        f.rg = 1;
        c->in = ref(w, f.cur);
        c->in_bytes = f.cur_bytes;
        c->pi = f.pi;
        c->n0 = w->nn;
        forward_range(w, ps, &f, c->t0, c->t1);
        fwd_cut(w, &f);
        c->n1 = w->nn;
        release_saved(w, c->n0, c->n1);
        t = c->t1;
    }
    forward_range(w, ps, &f, t, w->norder);
    fwd_cut(w, &f);
    *out_bytes = f.cur_bytes;
    return f.cur;
}

/* Backward reaches checkpointed unit c: its forward runs again from the input it kept
 * (fp32: forward), into its own nodes, keeping what they keep; returns its output, held
 * until the unit's backward is done. */
static uint32_t recompute(struct est_replay_work *w, const struct pass *ps,
                          const struct est_replay_unit *c)
{
    struct fwd f = {.cur = ref(w, c->in), .cur_bytes = c->in_bytes, .lin_in = NONE,
                    .lin_hold = NONE, .rg = 1, .pi = c->pi, .qk = {NONE, NONE}, .cur32 = 1,
                    .lin32 = 1, .moe_in = NONE, .moe_out = NONE, .moe_aux = NONE};
    uint32_t nn = w->nn;
    w->nn = c->n0;
    forward_range(w, ps, &f, c->t0, c->t1);
    fwd_cut(w, &f);
    w->nn = nn;
    return f.cur;
}

/* A checkpointed unit's backward is done: its recomputed output and its input go. */
static void unit_done(struct est_replay_work *w, struct est_replay_unit *c, uint32_t *out)
{
    unref(w, *out);
    *out = NONE;
    unref(w, c->in);
    c->in = NONE;
}

/* loss.backward(): every node in reverse, each gradient allocated before the node
 * releases what it kept and the gradient it received. */
static void backward(struct est_replay_work *w, const struct pass *ps, uint32_t loss)
{
    int amp = ps->o->precision != EST_PREC_FP32;
    uint32_t g = alloc(w, 4, EST_RC_TRANSIENT);
    unref(w, loss);
    /* Trained parameters of layers without a node still get a gradient (added to .grad
     * when there is one), and with it optimizer state; made first, which errs on the
     * safe side of where autograd would make it. */
    for (uint32_t i = 0; i < w->np; i++)
        if (w->p[i].orphan && !w->p[i].frozen)
            accumulate(w, i, replay_malloc(w, w->p[i].size, EST_RC_GRADS));
    uint32_t u = w->nck, unit_out = NONE; /* units below u are still to come */
    /* a mixture-of-experts block's input gradient: the first expert gather's full-size
     * gradient, into which the later ones are added, until the router's backward */
    uint32_t moe_acc = NONE;
    for (uint32_t k = w->nn; k-- > 0;) {
        while (u > 0 && w->ck[u - 1].n0 > k) /* done (or empty): its input goes */
            unit_done(w, &w->ck[--u], &unit_out);
        if (u > 0 && k + 1 == w->ck[u - 1].n1)
            unit_out = recompute(w, ps, &w->ck[u - 1]);
        struct est_replay_node *nd = &w->nd[k];
        uint32_t gi = NONE;
        if (nd->kind == EST_K_ATTN && nd->scores > 0) {
            uint32_t t1 = alloc(w, nd->scores, EST_RC_TRANSIENT);
            uint32_t t2 = alloc(w, nd->scores, EST_RC_TRANSIENT);
            unref(w, t1);
            unref(w, t2);
        }
        /* attention after q, k, v: the query's and key's gradients beside the values'
         * (gi), handed on to their projections */
        uint32_t gq = nd->qk_grads > 0 ? alloc(w, nd->qk_grads, EST_RC_TRANSIENT) : NONE;
        uint32_t gk = nd->qk_grads > 0 ? alloc(w, nd->qk_grads, EST_RC_TRANSIENT) : NONE;
        /* LoRA: the adapter's output gradient (scaled) first, B's and A's weight
         * gradients, then its input's, added to the base layer's */
        uint32_t gl = nd->lora_out > 0 ? alloc(w, grown(nd, nd->lora_out), EST_RC_TRANSIENT)
                                       : NONE;
        /* a router's softmax, an expert's routing-weight product: the gradient of its
         * result, then of its input */
        uint32_t gm = nd->moe_grad > 0 ? alloc(w, grown(nd, nd->moe_grad), EST_RC_TRANSIENT)
                                       : NONE;
        uint32_t gm2 = nd->moe_grad > 0 ? alloc(w, grown(nd, nd->moe_grad), EST_RC_TRANSIENT)
                                        : NONE;
        unref(w, gm);
        uint32_t deq = nd->deq > 0 && nd->in_bytes > 0 ? alloc(w, nd->deq, EST_RC_TRANSIENT)
                                                       : NONE;
        if (nd->in_bytes > 0)
            gi = alloc(w, grown(nd, nd->in_bytes), EST_RC_TRANSIENT);
        unref(w, deq);
        if (nd->moe_full > 0 && nd->in_bytes > 0) { /* an expert's gather */
            uint32_t full = alloc(w, nd->moe_full, EST_RC_TRANSIENT);
            if (moe_acc == NONE)
                moe_acc = full;
            else
                unref(w, full);
        }
        /* a Python activation's last product gives two gradients at once (0.5x and
         * 1 + tanh for NewGELUActivation), while all it kept is still held */
        if (nd->keeps && nd->in_bytes > 0)
            unref(w, alloc(w, grown(nd, nd->in_bytes), EST_RC_TRANSIENT));
        if (nd->kind == EST_K_LINEAR && (nd->trains || nd->in_bytes > 0))
            cublas_workspace(w, ps->o, 1);
        if (nd->flags & EST_LF_WEIGHT_PER_ELEM)
            unref(w, alloc(w, grown(nd, nd->in_bytes), EST_RC_TRANSIENT));
        /* gated: the up projection's output gradient, then its input's (added to the
         * gate's, which the chain does not follow) */
        uint32_t gu = nd->up_bytes > 0 ? alloc(w, grown(nd, nd->up_bytes), EST_RC_TRANSIENT)
                                       : NONE;
        uint32_t gx = nd->up_in > 0 ? alloc(w, grown(nd, nd->up_in), EST_RC_TRANSIENT) : NONE;
        int matmul = nd->kind == EST_K_LINEAR || nd->kind == EST_K_CONV;
        /* a linear layer's bias gradient comes before its weight's, LoRA's B before A */
        for (uint32_t j = 0, np = nd->trains ? nd->np : 0; j < np; j++) {
            uint32_t pj0 = nd->p0 + (matmul && np == 2 ? 1 - j : j);
            /* a tied table's lookup, a shared layer's later run: its gradient, added */
            uint32_t pj = param_home(w, pj0);
            int own = pj == pj0;
            struct est_replay_param *p = &w->p[pj];
            if (p->frozen)
                continue;
            uint32_t h = NONE;
            if (amp && matmul) /* the 16-bit copy's gradient, cast to fp32 */
                h = alloc(w, p->bytes / 2, EST_RC_TRANSIENT);
            uint32_t gp = malloc_inl(w, p->size, p->cls, EST_RC_GRADS);
            if (p->shared) {
                /* A parameter used more than once (a tied table, a shared layer): its
                 * uses' gradients meet in the input buffer of its one AccumulateGrad,
                 * added out of place (a linear layer's weight gradient is a view), the
                 * sum handed to .grad at its last use in backward, its own entry's (the
                 * first in forward). */
                if (p->pend != NONE) {
                    uint32_t sum = malloc_inl(w, p->size, p->cls, EST_RC_GRADS);
                    unref(w, p->pend);
                    unref(w, gp);
                    gp = sum;
                }
                p->pend = own ? NONE : gp;
                if (own)
                    accumulate(w, pj, gp);
            } else {
                accumulate(w, pj, gp);
            }
            unref(w, h);
            if (own) { /* the 16-bit copy is held by every run until the first's backward */
                unref(w, p->cast);
                p->cast = NONE;
            }
        }
        if (gl != NONE) {
            uint32_t gli = nd->lora_in > 0 ? alloc(w, grown(nd, nd->lora_in), EST_RC_TRANSIENT)
                                           : NONE;
            unref(w, gl);
            unref(w, gli);
        }
        unref(w, gu);
        unref(w, gx);
        unref(w, gq);
        unref(w, gk);
        unref(w, gm2);
        if (nd->moe & EST_MOE_ROUTER) { /* the block's input gradient is whole */
            unref(w, moe_acc);
            moe_acc = NONE;
        }
        for (int s = 0; s < nd->nsaved; s++) { /* free_saved, inlined */
            unref_inl(w, nd->saved[s]);
            nd->saved[s] = NONE;
        }
        unref_inl(w, g);
        g = gi;
    }
    while (u > 0)
        unit_done(w, &w->ck[--u], &unit_out);
    unref(w, moe_acc);
    unref(w, g);
    for (uint32_t i = 0; i < w->np; i++)
        if (w->p[i].shared && w->p[i].pend != NONE) { /* its own entry made no gradient */
            accumulate(w, i, w->p[i].pend);
            w->p[i].pend = NONE;
        }
}

/* optimizer.step(), foreach implementation: the state is created at the first step;
 * each temporary is one tensor per parameter (a foreach list), alive until the step
 * ends. Weight decay is taken to be on for SGD, momentum and Adadelta (their usual
 * recipes set it, and a print cannot say; without it the step holds one list less):
 * `grads = _foreach_add(grads, params, alpha=weight_decay)` is one more list, made
 * first, so for momentum before the first step's buffers (clones of the decayed
 * gradients). Adam's is freed before its square root is taken, and AdamW decays the
 * parameters in place. Returns the temporaries per parameter, left allocated: run frees
 * them (step_done) unless the replay ends with this step. */
static unsigned step(struct est_replay_work *w, const struct pass *ps, int first)
{
    unsigned nstate = 0, ntmp = 0;
    int state_after = 0; /* the state is made after the temporaries */
    switch (ps->o->optimizer) {
    case EST_OPT_SGD: /* the decayed gradients */
        ntmp = 1;
        break;
    case EST_OPT_MOMENTUM: /* the decayed gradients, then the buffers */
        nstate = 1;
        ntmp = 1;
        state_after = 1;
        break;
    case EST_OPT_ADADELTA: /* the decayed gradients, std and deltas */
        nstate = 2;
        ntmp = 3;
        break;
    default: /* adam, adamw: exp_avg and exp_avg_sq; the square root of exp_avg_sq */
        nstate = 2;
        ntmp = 1;
        break;
    }
    _Static_assert(EST_REPLAY_NTMP >= 3, "step: Adadelta's three temporaries");
    for (int part = 0; part < 2; part++) {
        if (part == state_after && first)
            for (uint32_t i = 0; i < w->np; i++)
                for (unsigned s = 0; s < nstate && !w->p[i].frozen; s++)
                    w->p[i].state[s] = malloc_inl(w, w->p[i].size, w->p[i].cls, EST_RC_STATE);
        if (part != state_after)
            for (unsigned t = 0; t < ntmp; t++)
                for (uint32_t i = 0; i < w->np; i++)
                    w->p[i].tmp[t] = w->p[i].frozen ? NONE
                                                    : malloc_inl(w, w->p[i].size, w->p[i].cls,
                                                                 EST_RC_TRANSIENT);
    }
    return ntmp;
}

/* The end of optimizer.step(): its ntmp temporaries per parameter go. */
static void step_done(struct est_replay_work *w, unsigned ntmp)
{
    for (unsigned t = 0; t < ntmp; t++)
        for (uint32_t i = 0; i < w->np; i++) {
            unref_inl(w, w->p[i].tmp[t]);
            w->p[i].tmp[t] = NONE;
        }
}

/* Records the state iteration n leaves for the next one and returns the earliest
 * iteration m >= m0 that left the same, or 0.
 *
 * The replay is deterministic and from iteration m0 + 1 on runs the same code each
 * iteration (the first makes the optimizer state, DDP's second rebuilds its buckets),
 * so when iteration n leaves the state m left, iteration n + 1 does what m + 1 did, and
 * from there the replay goes through the iterations m + 1 to n over and over: nothing
 * more is reserved. What an iteration leaves: called after its step has made its
 * temporaries, before they are freed, and the next iteration frees them, the gradients
 * (unless zero_grad keeps them: grads_freed 0, and they are blocks never freed), the
 * batch and the labels before it allocates anything (the outputs stay until its
 * forward has made new ones). Then the blocks allocated are the outputs' and the blocks
 * no tensor of the replay holds any more (weights, buffers, optimizer state, cuBLAS
 * workspaces, rebuilt DDP buckets, which are never freed), and the free blocks, merged
 * as far as they go, are the rest of the segments. So that state is given by the
 * reserved bytes (segments are never released: the same bytes are the same segments),
 * the bytes of the blocks never freed (which only grow: the same bytes are the same
 * blocks) and the outputs' block (address and size). The outputs are made while the
 * previous ones are alive, so they lie elsewhere each time: the state repeats every
 * second iteration at the soonest. */
static uint32_t end_state_repeats(struct est_replay_work *w, uint32_t n, uint32_t m0,
                                  unsigned ntmp, uint32_t x, uint32_t lab, uint32_t outputs,
                                  int grads_freed)
{
    uint64_t held = 0;
    const uint32_t io[3] = {x, lab, outputs};
    for (int j = 0; j < 3; j++)
        held += io[j] != NONE ? w->b[io[j]].size : 0;
    for (uint32_t i = 0; i < w->np; i++) {
        const struct est_replay_param *p = &w->p[i];
        held += grads_freed && p->grad != NONE ? w->b[p->grad].size : 0;
        for (unsigned t = 0; t < ntmp; t++)
            held += p->tmp[t] != NONE ? w->b[p->tmp[t]].size : 0;
    }
    uint64_t *cur = w->seen[n - 1];
    cur[0] = w->reserved;
    cur[1] = w->allocated - held;
    cur[2] = outputs != NONE ? w->b[outputs].addr : UINT64_MAX;
    cur[3] = outputs != NONE ? w->b[outputs].size : 0;
    for (uint32_t m = m0; m < n; m++)
        if (memcmp(w->seen[m - 1], cur, sizeof w->seen[0]) == 0)
            return m;
    return 0;
}

/* torchsummary's summary(): one forward pass at batch 2 in fp32 (x_bytes per sample),
 * every tensor freed when it returns. */
static void summary_pass(struct est_replay_work *w, const struct pass *ps, double x_bytes)
{
    struct est_opts o = *ps->o;
    o.batch = 2;
    o.precision = EST_PREC_FP32;
    struct pass p = *ps;
    p.o = &o;
    uint32_t x = x_bytes > 0 ? alloc(w, 2 * x_bytes, EST_RC_ACT) : NONE;
    double yb;
    uint32_t y = forward(w, &p, x, x != NONE ? 2 * x_bytes : 0, &yb);
    release_saved(w, 0, w->nn);
    w->nn = 0;
    unref(w, y);
    unref(w, x);
}

/* A node of the loss (kind EST_K_COUNT), keeping nothing yet, whose backward makes its
 * input's gradient of in_bytes (0: none). */
static struct est_replay_node *loss_node(struct est_replay_work *w, double in_bytes)
{
    struct est_replay_node *nd = &w->nd[w->nn++];
    memset(nd, 0, sizeof *nd);
    nd->kind = EST_K_COUNT;
    nd->in_bytes = in_bytes;
    return nd;
}

static void run(struct est_replay_work *w, const struct pass *ps)
{
    const struct est_model *m = ps->m;
    const struct est_opts *o = ps->o;
    double B = o->batch, seq = o->seq ? o->seq : 1;
    est_replay_reset(w);
    plan(w, ps);
    w->phase = EST_RP_SETUP;
    setup(w, ps);
    if (o->gpus > 1)
        ddp_construct(w);
    /* Inputs: token ids for sequence models (a patch embedding's pixels as fp32), else
     * the listed input as fp32; labels per token or per sample (int64). */
    double x_sample = (double)m->input * 4 * (ps->seq_model ? seq : 1);
    if (ps->seq_model && !m->input)
        x_sample = seq * 8;
    if (o->summary_pass)
        summary_pass(w, ps, x_sample);
    double xb = B * x_sample;
    double lb = ps->seq_model ? B * seq * 8 : B * 8;
    uint32_t x = NONE, lab = NONE, outputs = NONE;
    /* Reserved memory only grows, so the job's peak is the limit over its iterations:
     * replayed until an iteration ends in the state an earlier one ended in, from the
     * first to run the code all later ones run on (end_state_repeats). An iteration is
     * one optimizer step and the ps->micro forward and backward passes before it
     * (gradient accumulation: the gradients of the first make .grad, the later ones'
     * are added to it). */
    uint32_t iters = o->replay_iterations, m0 = o->gpus > 1 ? 2 : 1;
    if (iters > EST_REPLAY_MAX_ITERS)
        iters = EST_REPLAY_MAX_ITERS;
    /* it counts optimizer steps, mb the micro-batches of each */
    for (uint32_t it = 0, mb = 0;; mb = (mb + 1) % ps->micro, it += mb == 0) {
        w->iteration = (int)it + 1;
        w->phase = EST_RP_FORWARD;
        if (mb == 0 && !ps->keep_grads)
            for (uint32_t i = 0; i < w->np; i++) { /* zero_grad(set_to_none=True) */
                unref_inl(w, w->p[i].grad);
                w->p[i].grad = NONE;
            }
        /* `for inputs, labels in loader` rebinds the names to the CPU batch before
         * .to(device) copies it: the previous device tensors go first. */
        unref(w, x);
        unref(w, lab);
        x = xb > 0 ? alloc(w, xb, EST_RC_ACT) : NONE;
        lab = alloc(w, lb, EST_RC_ACT);
        /* DDP rebuilds its buckets at the first forward after a backward that
         * synchronised the gradients: accumulating under no_sync(), only each step's
         * last micro-batch does, so that is the second step's first forward. The
         * buckets (a copy, gradient_as_bucket_view=False) stay allocated through the
         * micro-batches that skip the all-reduce. */
        if (it == 1 && mb == 0 && o->gpus > 1)
            ddp_rebuild(w);
        double yb;
        uint32_t y = forward(w, ps, x, x != NONE ? xb : 0, &yb);
        unref(w, outputs); /* the previous step's outputs, rebound */
        outputs = y;
        /* cross-entropy: log_softmax (fp32) kept, then the loss. Under autocast
         * log_softmax runs in fp32: the 16-bit logits are cast for it (a node whose
         * backward casts the fp32 gradient back), the copy freed once it has run. */
        double y32 = y == NONE ? 4 : yb / act_bytes(EST_K_LINEAR, o->precision) * 4;
        int cast = y != NONE && o->precision != EST_PREC_FP32;
        if (cast)
            loss_node(w, yb);
        struct est_replay_node *ls = loss_node(w, y == NONE ? 0 : y32);
        uint32_t y32_copy = cast ? alloc(w, y32, EST_RC_TRANSIENT) : NONE;
        uint32_t lsm = alloc(w, y32, EST_RC_ACT);
        unref(w, y32_copy);
        ls->nsaved = 1;
        ls->saved[0] = ref(w, lsm);
        struct est_replay_node *nll = loss_node(w, y32);
        uint32_t loss = alloc(w, 4, EST_RC_ACT);
        nll->nsaved = 2;
        nll->saved[0] = lsm;
        nll->saved[1] = alloc(w, 4, EST_RC_ACT); /* total weight */
        w->phase = EST_RP_BACKWARD;
        backward(w, ps, loss);
        if (mb + 1 < ps->micro) /* the step comes after its last micro-batch */
            continue;
        w->phase = EST_RP_STEP;
        unsigned ntmp = step(w, ps, it == 0);
        if (w->overflow) /* est_replay replays it again with each layer's repeats as one */
            break;
        uint32_t n = it + 1,
                 rep = end_state_repeats(w, n, m0, ntmp, x, lab, outputs, !ps->keep_grads);
        if (iters ? n == iters : rep > 0 || n == EST_REPLAY_MAX_ITERS)
            break; /* the last step's temporaries stay: freeing them changes nothing
                      est_replay reports (it takes the peak of allocated bytes at the end) */
        step_done(w, ntmp);
    }
}

const char *est_replay_phase_name(enum est_replay_phase p)
{
    switch (p) {
    case EST_RP_SETUP:
        return "setup";
    case EST_RP_FORWARD:
        return "forward";
    case EST_RP_BACKWARD:
        return "backward";
    case EST_RP_STEP:
        return "optimizer step";
    default:
        return "none";
    }
}

/* The training loops of a job that accumulates gradients (est_opts.grad_accum): forward
 * and backward passes per optimizer step, and whether zero_grad keeps the gradients
 * (set_to_none=False) or frees them before each step's first micro-batch. Each is
 * replayed and the largest peak taken: which loop reserves the most depends on how its
 * tensors pack into segments, not only on what it holds, so no one loop is the worst
 * for every model (docs/estimator.md). Longer cycles run more of the same micro-batches
 * with the gradients present; in the sweeps none reserved more than these but by
 * 2 MiB. The loop without accumulation comes last: the estimate is never below the
 * job's without the option, and a tie is reported as an accumulating loop. */
static const struct {
    uint8_t micro, keep;
} accum_loops[] = {
    {1, 1}, {2, 0}, {2, 1}, {3, 0}, {3, 1}, {4, 0}, {4, 1}, {8, 0}, {8, 1}, {1, 0},
};

/* One replay of ps's loop into r: repeats expanded when ps says so, again with each
 * layer's repeats as one tensor when the workspace cannot hold the expanded ones. */
static int replay_loop(struct est_replay_work *w, struct pass ps, struct est_replay_result *r)
{
    memset(r, 0, sizeof *r);
    run(w, &ps);
    if (w->overflow && ps.expand) {
        ps.expand = ps.checkpoint = 0;
        run(w, &ps);
    }
    if (w->overflow)
        return -E2BIG;
    r->peak_mib = (double)w->peak / (double)MIB_U;
    if (w->allocated > w->peak_allocated)
        w->peak_allocated = w->allocated;
    r->peak_allocated_mib = (double)w->peak_allocated / (double)MIB_U;
    r->peak_phase = w->peak_phase;
    r->peak_iteration = w->peak_iteration;
    r->checkpointed_units = w->nck;
    r->math_attention = w->math_attention;
    uint64_t alloc_at_peak = 0;
    for (int c = 0; c < EST_RC_COUNT; c++) {
        r->cat_mib[c] = (double)w->peak_cat[c] / (double)MIB_U;
        alloc_at_peak += w->peak_cat[c];
    }
    r->cached_mib = (double)(w->peak - alloc_at_peak) / (double)MIB_U;
    r->micro_batches = ps.micro;
    r->grads_kept = ps.keep_grads;
    return 0;
}

int est_replay(const struct est_model *m, const struct est_opts *o, struct est_replay_work *w,
               struct est_replay_result *r)
{
    memset(r, 0, sizeof *r);
    struct pass ps = {.m = m, .o = o, .seq_model = m->needs_seq, .micro = 1};
    uint64_t nodes = 3, params = 0, nodes1 = 3, params1 = 0; /* the loss's (cast,) two */
    for (size_t i = 0; i < m->n; i++) {
        struct est_replay_lt tmp, *lt = i < EST_REPLAY_MAX_NODES ? &w->lt[i] : &tmp;
        unsigned nt = layer_tensors(&m->layers[i], lt->t, lt->fz);
        lt->nt = (uint8_t)nt;
        nodes += m->layers[i].count;
        params += (uint64_t)nt * m->layers[i].count;
        nodes1 += 1;
        params1 += nt;
    }
    if (nodes <= EST_REPLAY_MAX_NODES && params <= EST_REPLAY_MAX_PARAMS)
        ps.expand = 1;
    else if (nodes1 > EST_REPLAY_MAX_NODES || params1 > EST_REPLAY_MAX_PARAMS)
        return -E2BIG;
    ps.checkpoint = ps.expand && o->grad_checkpoint;
    if (!o->grad_accum)
        return replay_loop(w, ps, r);
    for (size_t l = 0; l < sizeof accum_loops / sizeof *accum_loops; l++) {
        struct est_replay_result one;
        ps.micro = accum_loops[l].micro;
        ps.keep_grads = accum_loops[l].keep;
        int rc = replay_loop(w, ps, &one);
        if (rc < 0)
            return rc;
        if (l == 0 || one.peak_mib > r->peak_mib)
            *r = one;
    }
    return 0;
}
