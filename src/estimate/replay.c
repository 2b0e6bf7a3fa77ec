/* Training-step replay through a caching-allocator model (replay.h). */
#include "estimate/replay.h"

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

/* Size class: sixteen per power of two (2^60 B at most: class < 976). */
static unsigned size_class(uint64_t size)
{
    unsigned k = 63u - (unsigned)__builtin_clzll(size | 1);
    unsigned sub = k >= 4 ? (unsigned)(size >> (k - 4)) & 15u : 0;
    return k * 16 + sub;
}

#define NIL 0xffffu /* no block, in a 16-bit link */

void est_replay_reset(struct est_replay_work *w)
{
    w->nb = 0;
    w->unused = NIL;
    memset(w->free_head, 0xff, sizeof w->free_head);
    memset(w->nonempty, 0, sizeof w->nonempty);
    w->top = 0;
    w->reserved = w->peak = w->allocated = 0;
    memset(w->cat, 0, sizeof w->cat);
    memset(w->peak_cat, 0, sizeof w->peak_cat);
    w->phase = w->peak_phase = EST_RP_NONE;
    w->iteration = w->peak_iteration = 0;
    w->overflow = 0;
}

static unsigned entry_new(struct est_replay_work *w)
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

static void entry_release(struct est_replay_work *w, unsigned i)
{
    w->b[i].fnext = w->unused;
    w->unused = (uint16_t)i;
}

/* The allocator's free set is ordered by size, then address. */
static int block_before(const struct est_replay_block *x, const struct est_replay_block *y)
{
    return x->size != y->size ? x->size < y->size : x->addr < y->addr;
}

/* Inserts block i into its class list, kept in the free set's order. */
static void free_add(struct est_replay_work *w, unsigned i)
{
    struct est_replay_block *b = &w->b[i];
    unsigned c = size_class(b->size), pool = b->pool;
    unsigned prev = NIL, cur = w->free_head[pool][c];
    while (cur != NIL && block_before(&w->b[cur], b)) {
        prev = cur;
        cur = w->b[cur].fnext;
    }
    b->cls = (uint16_t)c;
    b->fprev = (uint16_t)prev;
    b->fnext = (uint16_t)cur;
    if (cur != NIL)
        w->b[cur].fprev = (uint16_t)i;
    if (prev != NIL)
        w->b[prev].fnext = (uint16_t)i;
    else
        w->free_head[pool][c] = (uint16_t)i;
    w->nonempty[pool][c / 64] |= 1ull << (c % 64);
}

static void free_del(struct est_replay_work *w, unsigned i)
{
    struct est_replay_block *b = &w->b[i];
    unsigned c = b->cls, pool = b->pool;
    if (b->fprev != NIL)
        w->b[b->fprev].fnext = b->fnext;
    else
        w->free_head[pool][c] = b->fnext;
    if (b->fnext != NIL)
        w->b[b->fnext].fprev = b->fprev;
    if (w->free_head[pool][c] == NIL)
        w->nonempty[pool][c / 64] &= ~(1ull << (c % 64));
}

/* The allocator's choice within class c: its first block, in the free set's order, that
 * holds size. */
static unsigned best_in_class(const struct est_replay_work *w, unsigned pool, unsigned c,
                              uint64_t size)
{
    unsigned i = w->free_head[pool][c];
    while (i != NIL && w->b[i].size < size)
        i = w->b[i].fnext;
    return i;
}

/* First class above c with a free block, or EST_REPLAY_NCLASS. */
static unsigned next_class(const struct est_replay_work *w, unsigned pool, unsigned c)
{
    for (unsigned x = c + 1; x < EST_REPLAY_NCLASS;) {
        uint64_t bits = w->nonempty[pool][x / 64] >> (x % 64);
        if (bits)
            return x + (unsigned)__builtin_ctzll(bits);
        x = (x / 64 + 1) * 64;
    }
    return EST_REPLAY_NCLASS;
}

uint32_t est_replay_malloc(struct est_replay_work *w, uint64_t bytes, enum est_replay_cat cat)
{
    if (w->overflow)
        return NONE;
    if (bytes > (1ull << 60))
        bytes = 1ull << 60;
    uint64_t size = round_size(bytes);
    unsigned pool = size <= MIB_U ? 0 : 1;
    /* Best fit: the request's own class may hold smaller blocks; every block of a higher
     * class holds it, so the first non-empty one has the best. */
    unsigned c0 = size_class(size);
    unsigned best = best_in_class(w, pool, c0, size);
    if (best == NIL) {
        unsigned c1 = next_class(w, pool, c0);
        if (c1 < EST_REPLAY_NCLASS)
            best = best_in_class(w, pool, c1, size);
    }
    int grew = 0;
    if (best == NIL) {
        best = entry_new(w);
        if (best == NIL)
            return NONE;
        struct est_replay_block *s = &w->b[best];
        s->size = segment_size(size);
        s->addr = w->top;
        w->top += s->size;
        s->prev = s->next = NIL;
        s->pool = (uint8_t)pool;
        s->is_free = 1;
        w->reserved += s->size;
        grew = 1;
        free_add(w, best);
    }
    free_del(w, best);
    struct est_replay_block *b = &w->b[best];
    uint64_t rem = b->size - size;
    if ((pool == 0 && rem >= 512) || (pool == 1 && rem > MIB_U)) {
        unsigned r = entry_new(w);
        if (r == NIL)
            return NONE;
        struct est_replay_block *rb = &w->b[r];
        rb->addr = b->addr + size;
        rb->size = rem;
        rb->pool = (uint8_t)pool;
        rb->is_free = 1;
        rb->prev = (uint16_t)best;
        rb->next = b->next;
        if (b->next != NIL)
            w->b[b->next].prev = (uint16_t)r;
        b->next = (uint16_t)r;
        b->size = size;
        free_add(w, r);
    }
    b->is_free = 0;
    b->refs = 1;
    b->cat = (uint8_t)cat;
    w->allocated += b->size;
    w->cat[cat] += b->size;
    if (grew && w->reserved > w->peak) {
        w->peak = w->reserved;
        memcpy(w->peak_cat, w->cat, sizeof w->cat);
        w->peak_phase = w->phase;
        w->peak_iteration = w->iteration;
    }
    return best;
}

static void block_free(struct est_replay_work *w, unsigned i)
{
    struct est_replay_block *b = &w->b[i];
    w->allocated -= b->size;
    w->cat[b->cat] -= b->size;
    b->is_free = 1;
    unsigned n = b->next;
    if (n != NIL && w->b[n].is_free) {
        free_del(w, n);
        b->size += w->b[n].size;
        b->next = w->b[n].next;
        if (b->next != NIL)
            w->b[b->next].prev = (uint16_t)i;
        entry_release(w, n);
    }
    unsigned p = b->prev;
    if (p != NIL && w->b[p].is_free) {
        free_del(w, p);
        w->b[p].size += b->size;
        w->b[p].next = b->next;
        if (b->next != NIL)
            w->b[b->next].prev = (uint16_t)p;
        entry_release(w, i);
        i = p;
    }
    free_add(w, i);
}

void est_replay_unref(struct est_replay_work *w, uint32_t blk)
{
    if (blk == NONE || w->overflow)
        return;
    if (--w->b[blk].refs == 0)
        block_free(w, blk);
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

/* Parameter tensors of one repeat of a layer: a linear layer's weight and bias (the
 * bias has `out` elements), a norm's weight and bias, else one tensor. */
static unsigned layer_tensors(const struct est_layer *l, double t[2])
{
    if (!l->params)
        return 0;
    double p = (double)l->params;
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
static uint32_t alloc(struct est_replay_work *w, double bytes, enum est_replay_cat cat)
{
    if (!(bytes > 1))
        bytes = 1;
    if (bytes > 0x1p60)
        bytes = 0x1p60;
    return est_replay_malloc(w, (uint64_t)bytes, cat);
}

/* The first gradient of a parameter becomes .grad; later ones would be added to it. */
static void accumulate(struct est_replay_work *w, uint32_t pi, uint32_t blk)
{
    if (w->p[pi].grad == NONE)
        w->p[pi].grad = blk;
    else
        est_replay_unref(w, blk);
}

struct pass {
    const struct est_model *m;
    const struct est_opts *o;
    int expand; /* repeats one by one, else each layer's repeats as one tensor */
    int seq_model;
};

/* Execution order: a run of consecutive layers with the same repeat count (the children
 * of `12 x BertLayer(`) is one block, run count times over when repeats are expanded;
 * otherwise each layer once, its repeats as one tensor. */
static void plan(struct est_replay_work *w, const struct pass *ps)
{
    const struct est_model *m = ps->m;
    w->norder = 0;
    for (size_t g = 0, e; g < m->n; g = e) {
        uint32_t c = m->layers[g].count;
        e = g + 1;
        if (ps->expand)
            while (e < m->n && m->layers[e].count == c)
                e++;
        uint32_t reps = ps->expand ? c : 1;
        for (uint32_t r = 0; r < reps; r++)
            for (size_t i = g; i < e; i++)
                w->order[w->norder++] = (uint32_t)i;
    }
}

/* The layer at position t of the plan, the repeats it stands for, and its parameter
 * tensors (layer_tensors). */
static const struct est_layer *visit(const struct est_replay_work *w, const struct pass *ps,
                                     uint32_t t, double *mult, double tb[2], unsigned *nt)
{
    const struct est_layer *l = &ps->m->layers[w->order[t]];
    *mult = ps->expand ? 1 : (double)l->count;
    *nt = layer_tensors(l, tb);
    return l;
}

/* model.to(device): parameters, and BatchNorm's running statistics, layer by layer. */
static void setup(struct est_replay_work *w, const struct pass *ps)
{
    w->np = 0;
    for (uint32_t t = 0; t < w->norder; t++) {
        double mult, tb[2];
        unsigned nt;
        const struct est_layer *l = visit(w, ps, t, &mult, tb, &nt);
        for (unsigned k = 0; k < nt; k++) {
            struct est_replay_param *p = &w->p[w->np++];
            p->bytes = tb[k] * mult * 4;
            p->grad = p->state[0] = p->state[1] = p->tmp[0] = p->tmp[1] = p->cast = NONE;
            alloc(w, p->bytes, EST_RC_WEIGHTS);
        }
        if (l->kind == EST_K_NORM && !l->per_token && nt == 2) {
            alloc(w, tb[0] * mult * 4, EST_RC_WEIGHTS); /* running mean */
            alloc(w, tb[0] * mult * 4, EST_RC_WEIGHTS); /* running var */
            alloc(w, 8, EST_RC_WEIGHTS);                /* num_batches_tracked */
        }
    }
}

/* One forward pass from input x (x_bytes; NONE: none listed). Records the graph in
 * w->nd and returns the output, its size in *out_bytes. */
static uint32_t forward(struct est_replay_work *w, const struct pass *ps, uint32_t x,
                        double x_bytes, double *out_bytes)
{
    const struct est_opts *o = ps->o;
    double B = o->batch, seq = o->seq ? o->seq : 1;
    int amp = o->precision != EST_PREC_FP32;
    uint32_t cur = ref(w, x);
    double cur_bytes = x_bytes;
    uint32_t pi = 0;
    w->nn = 0;
    for (uint32_t t = 0; t < w->norder; t++) {
        double mult, tb[2];
        unsigned nt;
        const struct est_layer *l = visit(w, ps, t, &mult, tb, &nt);
        uint32_t first = pi;
        pi += nt;
        if (l->kind == EST_K_OTHER || !est_layer_materialised(l, o->attention))
            continue;
        double elems = B * mult * (double)l->out * (l->per_token ? seq : 1) * (l->attn ? seq : 1);
        double ob = elems * act_bytes((enum est_kind)l->kind, o->precision);
        struct est_replay_node *nd = &w->nd[w->nn++];
        nd->kind = l->kind;
        nd->flags = l->flags;
        nd->saved[0] = nd->saved[1] = nd->saved[2] = nd->saved[3] = NONE;
        nd->p0 = first;
        nd->np = nt;
        nd->in_bytes = cur == x ? 0 : cur_bytes; /* the input needs no gradient */
        nd->scores = 0;
        uint32_t out = NONE;
        switch (l->kind) {
        case EST_K_LINEAR:
        case EST_K_CONV:
            if (amp) /* autocast's 16-bit weight copies, kept for backward */
                for (unsigned k = 0; k < nt; k++)
                    w->p[first + k].cast = alloc(w, w->p[first + k].bytes / 2, EST_RC_WEIGHTS);
            out = alloc(w, ob, EST_RC_ACT);
            nd->saved[0] = cur;
            break;
        case EST_K_NORM: {
            out = alloc(w, ob, EST_RC_ACT);
            /* mean and inverse std: per token (LayerNorm) or per channel */
            double st = l->per_token ? B * seq * mult * 4 : (nt ? tb[0] * mult * 4 : 512);
            nd->saved[0] = cur;
            nd->saved[1] = alloc(w, st, EST_RC_ACT);
            nd->saved[2] = alloc(w, st, EST_RC_ACT);
            break;
        }
        case EST_K_ACT:
            out = alloc(w, ob, EST_RC_ACT);
            if (l->flags & EST_LF_SAVES_RESULT) {
                nd->saved[0] = ref(w, out);
                est_replay_unref(w, cur);
            } else {
                nd->saved[0] = cur;
            }
            break;
        case EST_K_DROPOUT:
            out = alloc(w, ob, EST_RC_ACT);
            nd->saved[0] = alloc(w, elems, EST_RC_ACT); /* bool mask */
            est_replay_unref(w, cur);
            break;
        case EST_K_SOFTMAX:
            out = alloc(w, ob, EST_RC_ACT);
            nd->saved[0] = ref(w, out);
            est_replay_unref(w, cur);
            break;
        case EST_K_POOL:
            out = alloc(w, ob, EST_RC_ACT);
            nd->saved[0] = cur;
            break;
        case EST_K_EMBED:
            out = alloc(w, ob, EST_RC_ACT);
            nd->in_bytes = 0; /* token ids: no gradient */
            est_replay_unref(w, cur);
            break;
        case EST_K_ATTN: {
            /* Eager attention: q k^T, scaled, masked (each a new tensor, the one before
             * freed), softmax kept (fp32 under autocast), its dropout's mask and output
             * kept, and the values (the listed input) kept by the probabilities x values
             * matmul; the layer's input flows on to the next layer. */
            double se = elems * (amp ? 2 : 4), pe = elems * 4;
            uint32_t s1 = alloc(w, se, EST_RC_TRANSIENT);
            uint32_t s2 = alloc(w, se, EST_RC_TRANSIENT);
            est_replay_unref(w, s1);
            nd->saved[0] = alloc(w, pe, EST_RC_ACT);
            est_replay_unref(w, s2);
            nd->saved[1] = alloc(w, elems, EST_RC_ACT);
            nd->saved[2] = alloc(w, pe, EST_RC_ACT);
            nd->saved[3] = ref(w, cur);
            nd->scores = pe;
            continue;
        }
        default:
            break;
        }
        cur = out;
        cur_bytes = ob;
    }
    *out_bytes = cur_bytes;
    return cur;
}

/* loss.backward(): every node in reverse, each gradient allocated before the node
 * releases what it kept and the gradient it received. */
static void backward(struct est_replay_work *w, const struct pass *ps, uint32_t loss)
{
    int amp = ps->o->precision != EST_PREC_FP32;
    uint32_t g = alloc(w, 4, EST_RC_TRANSIENT);
    est_replay_unref(w, loss);
    for (uint32_t k = w->nn; k-- > 0;) {
        struct est_replay_node *nd = &w->nd[k];
        uint32_t gi = NONE;
        if (nd->kind == EST_K_ATTN) {
            uint32_t t1 = alloc(w, nd->scores, EST_RC_TRANSIENT);
            uint32_t t2 = alloc(w, nd->scores, EST_RC_TRANSIENT);
            est_replay_unref(w, t1);
            est_replay_unref(w, t2);
        }
        if (nd->in_bytes > 0)
            gi = alloc(w, nd->in_bytes, EST_RC_TRANSIENT);
        if (nd->flags & EST_LF_WEIGHT_PER_ELEM)
            est_replay_unref(w, alloc(w, nd->in_bytes, EST_RC_TRANSIENT));
        int matmul = nd->kind == EST_K_LINEAR || nd->kind == EST_K_CONV;
        /* a linear layer's bias gradient comes before its weight's */
        for (uint32_t j = 0; j < nd->np; j++) {
            uint32_t pj = nd->p0 + (matmul && nd->np == 2 ? 1 - j : j);
            struct est_replay_param *p = &w->p[pj];
            uint32_t h = NONE;
            if (amp && matmul) /* the 16-bit copy's gradient, cast to fp32 */
                h = alloc(w, p->bytes / 2, EST_RC_TRANSIENT);
            accumulate(w, pj, alloc(w, p->bytes, EST_RC_GRADS));
            est_replay_unref(w, h);
            est_replay_unref(w, p->cast);
            p->cast = NONE;
        }
        for (int s = 0; s < 4; s++)
            est_replay_unref(w, nd->saved[s]);
        est_replay_unref(w, g);
        g = gi;
    }
    est_replay_unref(w, g);
}

/* optimizer.step(), foreach implementation: the state is created at the first step;
 * each temporary is one tensor per parameter, alive until the step ends. */
static void step(struct est_replay_work *w, const struct pass *ps, int first)
{
    unsigned nstate = 0, ntmp = 0;
    switch (ps->o->optimizer) {
    case EST_OPT_SGD:
        break;
    case EST_OPT_MOMENTUM:
        nstate = 1;
        break;
    case EST_OPT_ADADELTA:
        nstate = 2;
        ntmp = 2;
        break;
    default: /* adam, adamw: exp_avg and exp_avg_sq; the square root of exp_avg_sq */
        nstate = 2;
        ntmp = 1;
        break;
    }
    if (first)
        for (uint32_t i = 0; i < w->np; i++)
            for (unsigned s = 0; s < nstate; s++)
                w->p[i].state[s] = alloc(w, w->p[i].bytes, EST_RC_STATE);
    for (unsigned t = 0; t < ntmp; t++)
        for (uint32_t i = 0; i < w->np; i++)
            w->p[i].tmp[t] = alloc(w, w->p[i].bytes, EST_RC_TRANSIENT);
    for (unsigned t = 0; t < ntmp; t++)
        for (uint32_t i = 0; i < w->np; i++) {
            est_replay_unref(w, w->p[i].tmp[t]);
            w->p[i].tmp[t] = NONE;
        }
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
    /* Inputs: token ids for sequence models, else the listed input as fp32; labels
     * per token or per sample (int64). */
    double xb = ps->seq_model ? B * seq * 8 : B * (double)m->input * 4;
    double lb = ps->seq_model ? B * seq * 8 : B * 8;
    uint32_t x = NONE, lab = NONE, outputs = NONE;
    for (int it = 0; it < 2; it++) {
        w->iteration = it + 1;
        w->phase = EST_RP_FORWARD;
        for (uint32_t i = 0; i < w->np; i++) { /* zero_grad(set_to_none=True) */
            est_replay_unref(w, w->p[i].grad);
            w->p[i].grad = NONE;
        }
        /* `for inputs, labels in loader` rebinds the names to the CPU batch before
         * .to(device) copies it: the previous device tensors go first. */
        est_replay_unref(w, x);
        est_replay_unref(w, lab);
        x = xb > 0 ? alloc(w, xb, EST_RC_ACT) : NONE;
        lab = alloc(w, lb, EST_RC_ACT);
        double yb;
        uint32_t y = forward(w, ps, x, x != NONE ? xb : 0, &yb);
        est_replay_unref(w, outputs); /* the previous step's outputs, rebound */
        outputs = y;
        /* cross-entropy: log_softmax (fp32) kept, then the loss */
        struct est_replay_node *ls = &w->nd[w->nn++];
        memset(ls, 0, sizeof *ls);
        ls->kind = EST_K_COUNT;
        ls->in_bytes = y == NONE ? 0 : yb;
        uint32_t lsm =
            alloc(w, y == NONE ? 4 : yb / act_bytes(EST_K_LINEAR, o->precision) * 4, EST_RC_ACT);
        ls->saved[0] = ref(w, lsm);
        ls->saved[1] = ls->saved[2] = ls->saved[3] = NONE;
        struct est_replay_node *nll = &w->nd[w->nn++];
        memset(nll, 0, sizeof *nll);
        nll->kind = EST_K_COUNT;
        nll->in_bytes = y == NONE ? 4 : yb / act_bytes(EST_K_LINEAR, o->precision) * 4;
        uint32_t loss = alloc(w, 4, EST_RC_ACT);
        nll->saved[0] = lsm;
        nll->saved[1] = alloc(w, 4, EST_RC_ACT); /* total weight */
        nll->saved[2] = nll->saved[3] = NONE;
        w->phase = EST_RP_BACKWARD;
        backward(w, ps, loss);
        w->phase = EST_RP_STEP;
        step(w, ps, it == 0);
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

int est_replay(const struct est_model *m, const struct est_opts *o, struct est_replay_work *w,
               struct est_replay_result *r)
{
    memset(r, 0, sizeof *r);
    struct pass ps = {.m = m, .o = o, .seq_model = m->needs_seq};
    uint64_t nodes = 2, params = 0, nodes1 = 2, params1 = 0;
    for (size_t i = 0; i < m->n; i++) {
        double tb[2];
        unsigned nt = layer_tensors(&m->layers[i], tb);
        nodes += m->layers[i].count;
        params += (uint64_t)nt * m->layers[i].count;
        nodes1 += 1;
        params1 += nt;
    }
    if (nodes <= EST_REPLAY_MAX_NODES && params <= EST_REPLAY_MAX_PARAMS)
        ps.expand = 1;
    else if (nodes1 > EST_REPLAY_MAX_NODES || params1 > EST_REPLAY_MAX_PARAMS)
        return -E2BIG;
    run(w, &ps);
    if (w->overflow && ps.expand) {
        ps.expand = 0;
        run(w, &ps);
    }
    if (w->overflow)
        return -E2BIG;
    r->peak_mib = (double)w->peak / (double)MIB_U;
    r->peak_phase = w->peak_phase;
    r->peak_iteration = w->peak_iteration;
    uint64_t alloc_at_peak = 0;
    for (int c = 0; c < EST_RC_COUNT; c++) {
        r->cat_mib[c] = (double)w->peak_cat[c] / (double)MIB_U;
        alloc_at_peak += w->peak_cat[c];
    }
    r->cached_mib = (double)(w->peak - alloc_at_peak) / (double)MIB_U;
    return 0;
}
