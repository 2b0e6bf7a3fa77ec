/* Fuzz target for the scheduler core as carmad drives it: any sequence of submissions,
 * steps, attempt ends (every outcome), cancels, monitor changes (memory in use, foreign
 * processes, drained GPUs, window samples), jobs adopted or recovered at a restart, a
 * running job's profile re-measured, a co-run correction learnt, the queue ordered by
 * key (fair share), on up to 4 GPUs of mixed sizes,
 * under every policy. After each operation the scheduler's books must match the jobs and GPUs:
 * per-GPU job counts, committed memory and weights, queue lengths and states, auto's backfill sums
 * on reserved GPUs. A step places only queued jobs, on distinct GPUs in service; the reference
 * policies place only the head, recovery first, and reruns only on idle GPUs; auto collocates only
 * within memory; and with every GPU in service idle the head of the queue runs (no job
 * waits forever on an empty server). Differential: a twin scheduler that offers every
 * GPU to every new job (scan_all) places the same jobs on the same GPUs. Inputs are
 * decoded, not parsed: byte 0 picks the policy (low 6 bits) and the GPUs' islands (high
 * 2: none, {0,1}{2,3}, {0}{1,2,3}, one each), byte 1 the GPUs, then 4 bytes per
 * operation. */
#include <stdint.h>
#include <string.h>

#include "core/sched.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_GPUS 4
#define FZ_JOBS 24

static const uint64_t fz_sizes[4] = {32768, 40960, 81920, 16384};

struct fz {
    struct carma_job jobs[FZ_JOBS];
    struct carma_gpu gpus[FZ_GPUS];
    struct carma_sched s;
    struct carma_placement out[FZ_JOBS];
    size_t ngpus, njobs, placed; /* placed: by the last step */
    struct carma_coloc_learnt coloc[2]; /* what carmad learnt from co-runs, by GPU kind */
    int is_auto;
};

/* The books: what the GPUs and queues say equals what the jobs say. */
static void check_books(const struct fz *f)
{
    uint32_t queued = 0;
    for (size_t g = 0; g < f->ngpus; g++) {
        uint32_t n = 0, weight = 0;
        uint64_t committed = 0;
        for (size_t i = 0; i < f->njobs; i++) {
            const struct carma_job *j = &f->jobs[i];
            if (j->state != CARMA_JOB_RUNNING)
                continue;
            for (uint16_t k = 0; k < j->nplaced; k++)
                if (j->gpu[k] == g) {
                    n++;
                    weight += j->nplaced;
                    committed += j->held_mib;
                }
        }
        const struct carma_gpu *gv = &f->gpus[g];
        if (gv->njobs != n || gv->gpu_weight != weight || gv->committed_mib != committed)
            __builtin_trap();
    }
    for (size_t i = 0; i < f->njobs; i++) {
        const struct carma_job *j = &f->jobs[i];
        int in_queue = j->queue != CARMA_QUEUE_NONE;
        if ((j->state == CARMA_JOB_QUEUED) != in_queue)
            __builtin_trap();
        if ((j->state == CARMA_JOB_RUNNING) != (j->nplaced == j->gpus))
            __builtin_trap();
        queued += in_queue;
    }
    if (carma_sched_queued(&f->s) != queued)
        __builtin_trap();
    /* each queue's links: every job of it once, back links and tail whole */
    const struct carma_queue *qs[2] = {&f->s.main, &f->s.recovery};
    for (int qi = 0; qi < 2; qi++) {
        uint32_t n = 0, prev = CARMA_NONE;
        for (uint32_t ji = qs[qi]->head; ji != CARMA_NONE; ji = f->jobs[ji].next) {
            if (ji >= f->njobs || f->jobs[ji].prev != prev || ++n > f->njobs ||
                f->jobs[ji].queue != (qi ? CARMA_QUEUE_RECOVERY : CARMA_QUEUE_MAIN))
                __builtin_trap();
            prev = ji;
        }
        if (n != qs[qi]->len || qs[qi]->tail != prev)
            __builtin_trap();
    }
    /* auto's reserved GPUs: what they count as backfilled is what the jobs backfilled
     * under the current reservation took, at the profile they had then. */
    for (size_t g = 0; g < f->ngpus; g++) {
        if (!(f->s.slot[g].flags & CARMA_SLOT_RESERVED))
            continue;
        struct carma_sched_backfill want = {0};
        for (size_t i = 0; i < f->njobs; i++) {
            const struct carma_job *j = &f->jobs[i];
            if (j->state != CARMA_JOB_RUNNING || !j->backfill_gen ||
                j->backfill_gen != f->s.reserve_gen)
                continue;
            for (uint16_t k = 0; k < j->nplaced; k++)
                if (j->gpu[k] == g) {
                    want.mib += j->held_mib;
                    want.smact += j->backfill_smact;
                    want.busy += j->backfill_busy;
                    want.njobs++;
                    want.weight += j->nplaced;
                }
        }
        const struct carma_sched_backfill *b = &f->s.backfill[g];
        if (b->mib != want.mib || b->smact != want.smact || b->busy != want.busy ||
            b->njobs != want.njobs || b->weight != want.weight)
            __builtin_trap();
    }
}

static void check_step(struct fz *f, const int *was_queued, const uint64_t *committed_before,
                       const uint32_t *njobs_before, size_t np)
{
    for (size_t k = 0; k < np; k++) {
        const struct carma_job *j = &f->jobs[f->out[k].job];
        if (!was_queued[f->out[k].job] || j->state != CARMA_JOB_RUNNING)
            __builtin_trap();
        for (uint16_t a = 0; a < j->nplaced; a++) {
            const struct carma_gpu *g = &f->gpus[j->gpu[a]];
            if (g->drained)
                __builtin_trap();
            for (uint16_t b = 0; b < a; b++)
                if (j->gpu[a] == j->gpu[b])
                    __builtin_trap();
            /* auto: beside other processes, within the GPU's memory less the margin */
            int64_t foreign = (int64_t)g->mem_used_mib - (int64_t)g->carma_used_mib;
            if (foreign < 0)
                foreign = 0;
            if (f->is_auto && (njobs_before[j->gpu[a]] || g->nforeign) &&
                (int64_t)(committed_before[j->gpu[a]] + j->held_mib) + foreign +
                        (int64_t)f->s.p.margin_mib >
                    (int64_t)g->mem_total_mib)
                __builtin_trap();
        }
    }
}

static void step(struct fz *f, double now)
{
    int was_queued[FZ_JOBS];
    uint64_t committed[FZ_GPUS];
    uint32_t njobs[FZ_GPUS];
    for (size_t i = 0; i < f->njobs; i++)
        was_queued[i] = f->jobs[i].state == CARMA_JOB_QUEUED;
    int all_idle = 1;
    size_t live = 0;
    for (size_t g = 0; g < f->ngpus; g++) {
        committed[g] = f->gpus[g].committed_mib;
        njobs[g] = f->gpus[g].njobs;
        live += !f->gpus[g].drained;
        all_idle &= f->gpus[g].drained || carma_gpu_idle(&f->gpus[g]);
    }
    /* the head: recovery first, past jobs asking for more GPUs than are in service */
    size_t in_service = 0;
    for (size_t g = 0; g < f->ngpus; g++)
        in_service += !f->gpus[g].drained && f->gpus[g].mem_total_mib > 0;
    uint32_t head = f->s.recovery.head;
    while (head != CARMA_NONE && f->jobs[head].gpus > in_service)
        head = f->jobs[head].next;
    int from_recovery = head != CARMA_NONE;
    if (!from_recovery)
        for (head = f->s.main.head; head != CARMA_NONE && f->jobs[head].gpus > in_service;)
            head = f->jobs[head].next;
    uint32_t foreign[FZ_GPUS];
    for (size_t g = 0; g < f->ngpus; g++)
        foreign[g] = f->gpus[g].nforeign;
    size_t np = carma_sched_step(&f->s, now, f->out, FZ_JOBS);
    f->placed = np;
    check_step(f, was_queued, committed, njobs, np);
    /* CARMA's loop: the head only, recovery first; a rerun or an exclusive job only on
     * idle GPUs. */
    if (!f->is_auto && np) {
        const struct carma_job *j = &f->jobs[f->out[0].job];
        if (np > 1 || f->out[0].job != head)
            __builtin_trap();
        for (uint16_t a = 0; a < j->nplaced; a++)
            if ((from_recovery || j->exclusive) && (njobs[j->gpu[a]] || foreign[j->gpu[a]]))
                __builtin_trap();
    }
    /* An empty server runs the head of the queue on the GPUs in service. */
    if (all_idle && head != CARMA_NONE && f->jobs[head].gpus <= live &&
        f->jobs[head].state == CARMA_JOB_QUEUED)
        __builtin_trap();
}

/* The next job, decoded from an operation's bytes (1-3 GPUs, a bound, a requirement,
 * a solo profile or none, an attempt limit); the caller submits or adopts it. */
static struct carma_job *new_job(struct fz *f, const uint8_t *p, double now)
{
    struct carma_job *j = &f->jobs[f->njobs];
    carma_job_init(j, f->njobs + 1, (uint16_t)(1 + (p[1] & 1) + (p[1] >> 7)), now);
    uint64_t mib = (uint64_t)p[2] * 384;
    if (p[1] & 2)
        j->bound_mib = mib;
    if (p[1] & 4)
        j->mem_mib = (p[1] & 8) ? mib : mib / 2;
    j->smact = (p[1] & 16) ? -1.0f : (float)(p[1] >> 5) / 7.0f;
    j->smocc = j->smact * 0.5f;
    j->drama = j->smact * 0.4f;
    j->max_attempts = (uint16_t)(p[3] & 3);
    return j;
}

/* Applies one operation (4 bytes at p) to f. */
static void apply(struct fz *f, const uint8_t *p, double now, int *stepped)
{
    switch (p[0] % 8) {
    case 0: /* submit */
        if (f->njobs < FZ_JOBS) {
            (void)new_job(f, p, now);
            carma_sched_submit(&f->s, (uint32_t)f->njobs++, now);
        }
        break;
    case 1:
    case 2: /* a step */
        step(f, now);
        *stepped = 1;
        break;
    case 3: { /* an attempt ends */
        if (f->njobs == 0)
            break;
        uint32_t i = p[1] % f->njobs;
        enum carma_outcome o = (enum carma_outcome)(p[2] % (CARMA_OUTCOME_GPU_ERROR + 1));
        /* a GPU error under MPS: carmad has it rerun alone (carma_sched_run_alone) */
        if (f->jobs[i].state == CARMA_JOB_RUNNING &&
            carma_sched_finish(&f->s, i, o, (uint64_t)p[3] * 384, now) &&
            o == CARMA_OUTCOME_GPU_ERROR && (p[3] & 1) &&
            carma_sched_run_alone(&f->s, i, CARMA_ALONE_MPS_FAULT) != 0)
            __builtin_trap();
        break;
    }
    case 4: /* cancel a queued job */
        if (f->njobs) {
            uint32_t i = p[1] % f->njobs;
            if (carma_sched_dequeue(&f->s, i) == 0)
                f->jobs[i].state = CARMA_JOB_CANCELLED;
        }
        break;
    case 5: { /* the monitor: memory in use and foreign processes */
        size_t g = p[1] % f->ngpus;
        struct carma_gpu *gv = &f->gpus[g];
        gv->nforeign = p[1] >> 6 == 0;
        gv->carma_used_mib = gv->committed_mib / 2;
        gv->mem_used_mib = gv->carma_used_mib + (uint64_t)p[2] * 64 * gv->nforeign;
        carma_sched_gpu_changed(&f->s, (uint32_t)g);
        break;
    }
    case 6: { /* window samples */
        size_t g = p[1] % f->ngpus;
        float x = (float)p[2] / 255.0f;
        carma_window_push(&f->gpus[g].smact, x);
        carma_window_push(&f->gpus[g].smocc, x * 0.6f);
        carma_window_push(&f->gpus[g].drama, x * (float)(p[1] >> 4) / 15.0f);
        carma_sched_gpu_changed(&f->s, (uint32_t)g);
        break;
    }
    case 7:
        if ((p[1] & 7) == 0) { /* a GPU lost (nothing brings it back) */
            size_t g = p[2] % f->ngpus;
            f->gpus[g].drained = 1;
            carma_sched_gpu_changed(&f->s, (uint32_t)g);
        } else if ((p[1] & 7) == 1 && !*stepped && f->njobs < FZ_JOBS) {
            /* carmad restarted: a job found running is adopted before any step */
            struct carma_job *j = new_job(f, p, now);
            if (j->gpus <= f->ngpus) {
                uint16_t gpu[3];
                for (uint16_t k = 0; k < j->gpus; k++)
                    gpu[k] = (uint16_t)((p[2] + k) % f->ngpus);
                carma_sched_adopt(&f->s, (uint32_t)f->njobs++, gpu, j->gpus, now,
                                  (p[2] & 0x80) ? -1.0 : now);
            }
        } else if ((p[1] & 7) == 3 && f->njobs) {
            /* carmad re-measures the solo SMACT of a job alone on its GPUs */
            struct carma_job *j = &f->jobs[p[2] % f->njobs];
            int alone = j->state == CARMA_JOB_RUNNING;
            for (uint16_t k = 0; alone && k < j->nplaced; k++)
                alone = f->gpus[j->gpu[k]].njobs == 1;
            if (alone) {
                float sm = (p[1] >> 3) == 31 ? -1.0f : (float)(p[1] >> 3) / 30.0f;
                carma_sched_set_profile(&f->s, (uint32_t)(j - f->jobs), sm, sm * 0.5f,
                                        sm * 0.4f);
            }
        } else if ((p[1] & 7) == 4) {
            /* carmad learns from a co-run on a GPU of either kind (any q the clamps allow,
             * at any sum of SMACT), and corrects none, the first or both kinds */
            carma_coloc_observe(&f->coloc[p[1] >> 5 & 1], (enum carma_sharing)(p[1] >> 7),
                                2 + (p[1] >> 3 & 3), (float)p[2] / 64.0f, (float)p[2] / 48.0f,
                                (float)p[3] / 128.0f);
            carma_sched_set_coloc(&f->s, f->coloc, (p[1] >> 6 & 1) + (p[1] >> 5 & 1));
        } else if ((p[1] & 7) == 5) {
            /* carmad orders the queue by its users' usage (order = fair): few keys, ties */
            double key[FZ_JOBS];
            for (size_t j = 0; j < FZ_JOBS; j++)
                key[j] = (double)(((j + 1) * (p[2] | 1u) + p[3]) % 4u);
            carma_sched_order(&f->s, key);
        } else if ((p[1] & 7) == 2 && f->njobs < FZ_JOBS) {
            /* carmad restarted: a job that crashed while it was down */
            (void)new_job(f, p, now);
            carma_sched_submit_recovery(&f->s, (uint32_t)f->njobs++, now);
        }
        break;
    }
    check_books(f);
}

/* auto's shortcut through the GPUs that can give a job its whole weight must choose as
 * offering every GPU does (scan_all): the two run in lockstep and place alike. */
static void check_same(const struct fz *a, const struct fz *b)
{
    if (a->placed != b->placed)
        __builtin_trap();
    for (size_t k = 0; k < a->placed; k++) {
        const struct carma_job *x = &a->jobs[a->out[k].job], *y = &b->jobs[b->out[k].job];
        if (a->out[k].job != b->out[k].job || x->nplaced != y->nplaced ||
            memcmp(x->gpu, y->gpu, x->nplaced * sizeof *x->gpu) != 0)
            __builtin_trap();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    static struct fz f[2];
    size_t np;
    const struct carma_policy *all = carma_policy_all(&np);
    const struct carma_policy *pol = &all[(data[0] & 0x3f) % np];
    static const uint16_t fz_islands[4][FZ_GPUS] = {
        {0, 0, 0, 0}, {0, 0, 1, 1}, {0, 1, 1, 1}, {0, 1, 2, 3}};
    const uint16_t *isl = fz_islands[data[0] >> 6];
    struct carma_sched_params params;
    carma_sched_params_default(&params);
    for (int k = 0; k < 2; k++) {
        memset(&f[k], 0, sizeof f[k]);
        f[k].is_auto = strcmp(pol->name, "auto") == 0;
        f[k].ngpus = 1 + (data[1] & 3);
        for (size_t g = 0; g < f[k].ngpus; g++)
            carma_gpu_init(&f[k].gpus[g], fz_sizes[(data[1] >> (2 + g)) & 3],
                           1 + (data[1] >> 6) * 3,
                           (data[1] >> g) & 1 ? CARMA_SHARING_MPS : CARMA_SHARING_TIMESLICE);
        for (size_t g = 0; g < f[k].ngpus; g++) {
            f[k].gpus[g].island = isl[g];
            f[k].gpus[g].kind = (uint16_t)(g & 1);
        }
        params.scan_all = k;
        if (carma_sched_init(&f[k].s, f[k].jobs, f[k].gpus, f[k].ngpus, pol, &params)) {
            if (k)
                carma_sched_free(&f[0].s);
            return 0;
        }
    }
    double now = 0;
    int stepped[2] = {0, 0};
    for (size_t off = 2; off + 4 <= size; off += 4) {
        const uint8_t *p = data + off;
        now += p[3] / 8.0;
        for (int k = 0; k < 2; k++)
            apply(&f[k], p, now, &stepped[k]);
        if (p[0] % 8 == 1 || p[0] % 8 == 2)
            check_same(&f[0], &f[1]);
    }
    for (int k = 0; k < 2; k++)
        carma_sched_free(&f[k].s);
    return 0;
}
