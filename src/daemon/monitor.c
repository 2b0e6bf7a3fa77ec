#include "daemon/monitor.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

static const char *const sig_name[CARMA_MON_NSIG] = {
    [CARMA_MON_SMACT] = "SMACT", [CARMA_MON_SMOCC] = "SMOCC", [CARMA_MON_DRAMA] = "DRAMA",
    [CARMA_MON_TENSOR] = "tensor activity", [CARMA_MON_UTIL] = "NVML utilisation",
    [CARMA_MON_UTIL_MEM] = "NVML memory utilisation", [CARMA_MON_POWER] = "power",
    [CARMA_MON_ENERGY] = "energy counter",
};

static void mlog(struct carma_monitor *m, int prio, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void mlog(struct carma_monitor *m, int prio, const char *fmt, ...)
{
    if (!m->hooks.log)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    m->hooks.log(m->hooks.ctx, prio, msg);
}

static void bucket_reset(struct carma_mon_bucket *b, double t0)
{
    memset(b, 0, sizeof *b);
    b->t0 = t0;
}

static void drain(struct carma_monitor *m, size_t gi, const char *why);

int carma_mon_init(struct carma_monitor *m, struct carma_gpu_backend *gb, struct carma_gpu *view,
                   size_t n, struct carma_sched *sched, const struct carma_mon_hooks *hooks,
                   double record_s, struct carma_err *err)
{
    memset(m, 0, sizeof *m);
    assert(gb && view && n > 0);
    m->gb = gb;
    m->view = view;
    m->n = n;
    m->sched = sched;
    if (hooks)
        m->hooks = *hooks;
    m->record_s = record_s > 0 ? record_s : 0;
    m->g = calloc(n, sizeof *m->g);
    m->pending = calloc(CARMA_MON_PENDING_MAX, sizeof *m->pending);
    if (!m->g || !m->pending) {
        carma_mon_free(m);
        return carma_err_set(err, -ENOMEM, "monitor: out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        struct carma_mon_gpu *g = &m->g[i];
        int rc = gb->ops->info(gb, (unsigned)i, &g->info);
        if (rc) {
            carma_mon_free(m);
            return carma_err_set(err, rc, "monitor: GPU %zu: no information", i);
        }
        g->prev_t = -1;
        g->prev_counter_j = -1;
        bucket_reset(&g->bucket, -1);
        /* its memory is split among instances that CUDA_VISIBLE_DEVICES=GPU-<uuid> does not
         * address: placed against the whole GPU, a job would see one instance or none */
        if (g->info.mig_mode == 1) {
            drain(m, i, "has MIG enabled, which carma does not place jobs on yet");
            if (sched) /* it has read the GPUs already */
                carma_sched_gpu_changed(sched, (uint32_t)i);
        }
    }
    return 0;
}

void carma_mon_free(struct carma_monitor *m)
{
    free(m->g);
    free(m->pending);
    m->g = NULL;
    m->pending = NULL;
    m->n = 0;
}

static uint32_t present_mask(const struct carma_gpu_sample *s)
{
    uint32_t p = 0;
    p |= (s->smact >= 0) << CARMA_MON_SMACT;
    p |= (s->smocc >= 0) << CARMA_MON_SMOCC;
    p |= (s->drama >= 0) << CARMA_MON_DRAMA;
    p |= (s->tensor >= 0) << CARMA_MON_TENSOR;
    p |= (s->util_gpu >= 0) << CARMA_MON_UTIL;
    p |= (s->util_mem >= 0) << CARMA_MON_UTIL_MEM;
    p |= (s->power_w >= 0) << CARMA_MON_POWER;
    p |= (s->energy_j >= 0) << CARMA_MON_ENERGY;
    return p;
}

/* Logs, once per GPU and signal, what a policy reads instead of a missing signal. */
static void note_fallbacks(struct carma_monitor *m, size_t gi)
{
    struct carma_mon_gpu *g = &m->g[gi];
    uint32_t missing = ~g->present & ((1u << CARMA_MON_NSIG) - 1) & ~g->noted;
    if (!missing)
        return;
    const char *u = g->info.uuid;
    if (missing & (1u << CARMA_MON_SMACT)) {
        if (g->present & (1u << CARMA_MON_UTIL))
            mlog(m, LOG_NOTICE, "no SMACT on %s (GPU %zu): the CARMA gate and auto use NVML "
                                "utilisation instead (an upper bound of SMACT)", u, gi);
        else
            mlog(m, LOG_WARNING, "no SMACT and no NVML utilisation on %s (GPU %zu): the gate "
                                 "and auto see no activity on it", u, gi);
    }
    if (missing & (1u << CARMA_MON_DRAMA)) {
        if (g->present & (1u << CARMA_MON_UTIL_MEM))
            mlog(m, LOG_NOTICE, "no DRAMA on %s (GPU %zu): the CARMA gate uses NVML memory "
                                "utilisation instead", u, gi);
        else
            mlog(m, LOG_NOTICE, "no DRAMA on %s (GPU %zu) and no NVML memory utilisation", u,
                 gi);
    }
    if (missing & (1u << CARMA_MON_SMOCC))
        mlog(m, LOG_NOTICE, "no SMOCC on %s (GPU %zu): the CARMA gate reads %s only", u, gi,
             (g->present & ((1u << CARMA_MON_DRAMA) | (1u << CARMA_MON_UTIL_MEM)))
                 ? "DRAMA" : "SMACT");
    if (missing & (1u << CARMA_MON_ENERGY))
        mlog(m, LOG_NOTICE, "no energy counter on %s (GPU %zu): energy is integrated from "
                            "%s", u, gi,
             (g->present & (1u << CARMA_MON_POWER)) ? "power samples" : "nothing (unknown)");
    for (int s = CARMA_MON_TENSOR; s <= CARMA_MON_POWER; s++)
        if (s != CARMA_MON_SMOCC && (missing & (1u << s)))
            mlog(m, LOG_INFO, "no %s on %s (GPU %zu): reported as absent", sig_name[s], u, gi);
    g->noted |= missing;
}

static void bucket_add(struct carma_mon_bucket *b, int sig, double v)
{
    if (v >= 0) {
        b->n[sig]++;
        b->sum[sig] += v;
    }
}

static float bucket_mean(const struct carma_mon_bucket *b, int sig)
{
    return b->n[sig] ? (float)(b->sum[sig] / b->n[sig]) : -1.0f;
}

static void record_emit(struct carma_monitor *m, size_t gi, double t)
{
    struct carma_mon_gpu *g = &m->g[gi];
    struct carma_mon_bucket *b = &g->bucket;
    if (m->npending == CARMA_MON_PENDING_MAX) {
        /* Nobody took them: drop the oldest half, keep going. */
        size_t half = CARMA_MON_PENDING_MAX / 2;
        memmove(m->pending, m->pending + half, (m->npending - half) * sizeof *m->pending);
        m->npending -= half;
        m->dropped += half;
    }
    struct carma_mon_record *r = &m->pending[m->npending++];
    r->gpu = (uint32_t)gi;
    r->t = t;
    r->mem_mib = b->mem_max;
    r->util = bucket_mean(b, CARMA_MON_UTIL);
    r->smact = bucket_mean(b, CARMA_MON_SMACT);
    r->smocc = bucket_mean(b, CARMA_MON_SMOCC);
    r->drama = bucket_mean(b, CARMA_MON_DRAMA);
    r->tensor = bucket_mean(b, CARMA_MON_TENSOR);
    r->power_w = bucket_mean(b, CARMA_MON_POWER);
    r->energy_j = b->energy_known ? b->energy_j : -1.0;
}

/* Energy over (prev_t, now]: the counter's difference, else power times the time. A
 * difference no GPU could draw in that time (twice its power limit, or its power now) is
 * a glitch of the counter, not energy: power times the time stands in. Returns 1 then. */
static int energy_step(struct carma_mon_gpu *g, const struct carma_gpu_sample *s, double now)
{
    g->tick_energy_j = 0;
    g->tick_dt = g->prev_t >= 0 ? now - g->prev_t : 0;
    if (g->tick_dt < 0)
        g->tick_dt = 0;
    int known = 0, glitch = 0;
    double most_w = 2 * fmax(fmax(g->info.power_limit_w, s->power_w), 100.0);
    if (s->energy_j >= 0 && g->prev_counter_j >= 0 && s->energy_j >= g->prev_counter_j &&
        s->energy_j - g->prev_counter_j <= most_w * (g->tick_dt + 1.0)) {
        g->tick_energy_j = s->energy_j - g->prev_counter_j;
        known = 1;
    } else if (s->power_w >= 0 && g->prev_t >= 0) {
        glitch = s->energy_j >= 0 && g->prev_counter_j >= 0 && s->energy_j >= g->prev_counter_j;
        g->tick_energy_j = s->power_w * g->tick_dt; /* no counter, or it went back */
        known = 1;
    }
    if (s->energy_j >= 0 || s->power_w >= 0)
        g->energy_known = 1;
    g->prev_t = now;
    g->prev_counter_j = s->energy_j >= 0 ? s->energy_j : -1;
    g->energy_total_j += g->tick_energy_j;
    if (known) {
        g->bucket.energy_j += g->tick_energy_j;
        g->bucket.energy_known = 1;
    }
    return glitch;
}

static void drain(struct carma_monitor *m, size_t gi, const char *why)
{
    struct carma_mon_gpu *g = &m->g[gi];
    g->drained = 1;
    snprintf(g->drain_reason, sizeof g->drain_reason, "%s", why);
    m->view[gi].drained = 1;
    mlog(m, LOG_WARNING, "GPU %zu (%s) %s: drained, no new jobs go to it; jobs on it keep "
                         "running", gi, g->info.uuid, why);
}

/* A lost GPU (GPU_IS_LOST): drained for that reason, never asked again. */
#define LOST_REASON "is lost"
static int gpu_lost(const struct carma_mon_gpu *g)
{
    return g->drained && !strcmp(g->drain_reason, LOST_REASON);
}

int carma_mon_lost(const struct carma_monitor *m, size_t gi)
{
    return gi < m->n && gpu_lost(&m->g[gi]);
}

int carma_mon_probe_lost(struct carma_monitor *m, size_t gi)
{
    if (gi >= m->n)
        return 0;
    struct carma_mon_gpu *g = &m->g[gi];
    if (gpu_lost(g))
        return 1;
    struct carma_gpu_sample s;
    memset(&s, 0, sizeof s);
    if (m->gb->ops->sample(m->gb, (unsigned)gi, &s) != 0 || !s.lost)
        return 0;
    if (g->drained) {
        snprintf(g->drain_reason, sizeof g->drain_reason, LOST_REASON);
    } else {
        drain(m, gi, LOST_REASON);
        if (m->sched)
            carma_sched_gpu_changed(m->sched, (uint32_t)gi);
    }
    return 1;
}

int carma_mon_tick(struct carma_monitor *m, double now)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    const struct carma_gpu_backend_ops *ops = m->gb->ops;
    struct carma_gpu_proc procs[CARMA_GPU_MAX_PROCS];
    int ndrained = 0;
    for (size_t gi = 0; gi < m->n; gi++) {
        struct carma_mon_gpu *g = &m->g[gi];
        struct carma_gpu *v = &m->view[gi];
        /* only a good sample carries energy: a failed or lost GPU's last tick is not billed
         * again (the next good sample's difference covers the gap, once) */
        g->tick_energy_j = 0;
        g->tick_dt = 0;
        if (gpu_lost(g))
            continue; /* a lost GPU is never asked again */
        struct carma_gpu_sample s;
        memset(&s, 0, sizeof s);
        s.util_gpu = s.util_mem = s.power_w = s.energy_j = -1;
        s.smact = s.smocc = s.drama = s.tensor = s.gract = -1;
        int changed = 0;
        int rc = ops->sample(m->gb, (unsigned)gi, &s);
        if (rc == 0 && s.lost) {
            if (!g->drained) {
                drain(m, gi, LOST_REASON);
                ndrained++;
                changed = 1;
            } else {
                snprintf(g->drain_reason, sizeof g->drain_reason, LOST_REASON);
            }
        } else if (rc != 0) {
            g->failures++;
            if (g->failures == CARMA_MON_FAIL_LIMIT && !g->drained) {
                char why[64];
                snprintf(why, sizeof why, "stopped answering (%d samples failed)",
                         CARMA_MON_FAIL_LIMIT);
                drain(m, gi, why);
                ndrained++;
                changed = 1;
            }
        } else {
            if (g->failures >= CARMA_MON_FAIL_LIMIT)
                mlog(m, LOG_NOTICE,
                     "GPU %zu (%s) answers again; it stays drained until carma "
                     "undrain or carmad restarts",
                     gi, g->info.uuid);
            g->failures = 0;
            g->last = s;
            g->have = 1;
            g->present = present_mask(&s);
            uint64_t used = s.mem_used_bytes >> 20;
            /* placement reads what is not free: memory v2 counts what the driver reserves
             * in its total but neither in used nor in free, and that is no room for a job
             * (what carmad shows and records stays the driver's used) */
            uint64_t taken = used;
            if (g->info.mem_total_bytes > s.mem_free_bytes &&
                (g->info.mem_total_bytes - s.mem_free_bytes) >> 20 > taken)
                taken = (g->info.mem_total_bytes - s.mem_free_bytes) >> 20;
            if (taken != v->mem_used_mib) {
                v->mem_used_mib = taken;
                changed = 1;
            }
            double sm = s.smact >= 0 ? s.smact : s.util_gpu;
            double dr = s.drama >= 0 ? s.drama : s.util_mem;
            if (sm >= 0)
                carma_window_push(&v->smact, (float)sm);
            if (s.smocc >= 0)
                carma_window_push(&v->smocc, (float)s.smocc);
            if (dr >= 0)
                carma_window_push(&v->drama, (float)dr);
            if (energy_step(g, &s, now))
                mlog(m, LOG_WARNING, "GPU %zu: its energy counter jumped by more than it could "
                                     "draw in %.1f s; counted power x time instead",
                     gi, g->tick_dt);
            struct carma_mon_sample *r = &g->ring[g->head];
            r->t = now;
            r->energy_j = s.energy_j;
            r->mem_used_mib = (float)(s.mem_used_bytes >> 20);
            r->mem_free_mib = (float)(s.mem_free_bytes >> 20);
            r->util = (float)s.util_gpu;
            r->util_mem = (float)s.util_mem;
            r->smact = (float)s.smact;
            r->smocc = (float)s.smocc;
            r->drama = (float)s.drama;
            r->tensor = (float)s.tensor;
            r->power_w = (float)s.power_w;
            g->head = (g->head + 1) % CARMA_MON_RING;
            if (g->len < CARMA_MON_RING)
                g->len++;
            if (g->len >= CARMA_MON_NOTE_AFTER) /* the ring holds every sample: its count */
                note_fallbacks(m, gi);
            if (m->record_s > 0) {
                struct carma_mon_bucket *b = &g->bucket;
                if (b->t0 < 0)
                    b->t0 = now;
                bucket_add(b, CARMA_MON_UTIL, s.util_gpu);
                bucket_add(b, CARMA_MON_SMACT, s.smact);
                bucket_add(b, CARMA_MON_SMOCC, s.smocc);
                bucket_add(b, CARMA_MON_DRAMA, s.drama);
                bucket_add(b, CARMA_MON_TENSOR, s.tensor);
                bucket_add(b, CARMA_MON_POWER, s.power_w);
                if (used > b->mem_max)
                    b->mem_max = used;
                /* half a tick of slack: a timer firing a hair early would otherwise
                 * stretch a 1 s record over two ticks */
                if (now - b->t0 >= m->record_s - 0.5 * g->tick_dt) {
                    record_emit(m, gi, now);
                    bucket_reset(b, now);
                }
            }
        }
        if (g->drained && !v->drained) {
            v->drained = 1; /* nothing un-drains a GPU the monitor drained */
            changed = 1;
        }
        size_t np = CARMA_GPU_MAX_PROCS;
        int prc = rc == 0 && !s.lost && ops->processes
                      ? ops->processes(m->gb, (unsigned)gi, procs, &np)
                      : 1;
        if (prc < 0 && prc != -ENOTSUP && !g->procs_failed) {
            g->procs_failed = 1;
            mlog(m, LOG_WARNING,
                 "GPU %zu (%s): its process list failed (%s): its foreign "
                 "processes and jobs' memory stay as last listed",
                 gi, g->info.uuid, strerror(-prc));
        }
        if (prc == 0) {
            g->procs_tick = m->ticks + 1; /* the tick in progress */
            if (g->procs_failed)
                mlog(m, LOG_NOTICE, "GPU %zu (%s): its process list answers again", gi,
                     g->info.uuid);
            g->procs_failed = 0;
            uint32_t foreign = 0;
            uint64_t ours = 0;
            for (size_t k = 0; k < np; k++) {
                /* more than the GPU has is no figure: unknown, as NVML_VALUE_NOT_AVAILABLE
                 * (a job's peak must not learn it, nor history after it) */
                uint64_t mem = procs[k].mem_bytes;
                if (mem != UINT64_MAX && g->info.mem_total_bytes && mem > g->info.mem_total_bytes) {
                    if (!g->procs_absurd)
                        mlog(m, LOG_WARNING,
                             "GPU %zu (%s): process %ld said to use %llu MiB of a GPU of "
                             "%llu MiB: its memory is taken as unknown",
                             gi, g->info.uuid, (long)procs[k].pid, (unsigned long long)(mem >> 20),
                             (unsigned long long)(g->info.mem_total_bytes >> 20));
                    g->procs_absurd = 1;
                    mem = UINT64_MAX;
                }
                int mine = m->hooks.proc
                               ? m->hooks.proc(m->hooks.ctx, (unsigned)gi, procs[k].pid, mem)
                               : 0;
                if (!mine)
                    foreign++;
                else if (mine == 1 && mem != UINT64_MAX)
                    ours += mem >> 20;
            }
            g->nprocs = (uint32_t)np;
            if (foreign != v->nforeign || ours != v->carma_used_mib) {
                v->nforeign = foreign;
                v->carma_used_mib = ours;
                changed = 1;
            }
        }
        if (changed && m->sched)
            carma_sched_gpu_changed(m->sched, (uint32_t)gi);
    }
    m->ticks++;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    m->tick_ns_total += (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000000ll + (t1.tv_nsec - t0.tv_nsec));
    return ndrained;
}

int carma_mon_drain(struct carma_monitor *m, size_t gi, const char *why)
{
    if (gi >= m->n || m->g[gi].drained)
        return 0;
    drain(m, gi, why);
    if (m->sched)
        carma_sched_gpu_changed(m->sched, (uint32_t)gi);
    return 1;
}

int carma_mon_redrain(struct carma_monitor *m, size_t gi, const char *why)
{
    if (gi >= m->n || !m->g[gi].drained)
        return 0;
    drain(m, gi, why);
    return 1;
}

int carma_mon_undrain(struct carma_monitor *m, size_t gi)
{
    if (gi >= m->n || !m->g[gi].drained)
        return 0;
    struct carma_mon_gpu *g = &m->g[gi];
    g->drained = 0;
    g->drain_reason[0] = '\0';
    g->failures = 0; /* a GPU still silent is drained again after the limit */
    m->view[gi].drained = 0;
    if (m->sched)
        carma_sched_gpu_changed(m->sched, (uint32_t)gi);
    return 1;
}

const char *carma_mon_unready(const struct carma_monitor *m, size_t gi)
{
    if (gi >= m->n)
        return NULL;
    const struct carma_mon_gpu *g = &m->g[gi];
    if (gpu_lost(g))
        return "is lost: carmad does not ask a lost GPU again; restart carmad once it is back";
    if (g->failures >= CARMA_MON_FAIL_LIMIT)
        return "has not answered since it stopped answering: undrain it once it answers "
               "again (carmad logs it)";
    return NULL;
}

void carma_mon_xid(struct carma_monitor *m, size_t gi, uint64_t xid, uint32_t count, double now)
{
    if (gi >= m->n)
        return;
    m->g[gi].xids += count;
    m->g[gi].last_xid = xid;
    m->g[gi].last_xid_t = now;
}

const struct carma_mon_sample *carma_mon_recent(const struct carma_monitor *m, size_t gi,
                                                uint32_t i)
{
    if (gi >= m->n)
        return NULL;
    const struct carma_mon_gpu *g = &m->g[gi];
    if (i >= g->len)
        return NULL;
    return &g->ring[(g->head + CARMA_MON_RING - 1 - i) % CARMA_MON_RING];
}

size_t carma_mon_take_records(struct carma_monitor *m, const struct carma_mon_record **out)
{
    size_t n = m->npending;
    *out = m->pending;
    m->npending = 0;
    return n;
}

void carma_mon_share_energy(double energy_j, const float *weight, size_t n, double *out)
{
    if (n == 0)
        return;
    double known = 0;
    size_t nknown = 0;
    for (size_t k = 0; k < n; k++)
        if (weight[k] >= 0) {
            known += weight[k];
            nknown++;
        }
    double fill = nknown ? known / (double)nknown : 1.0;
    double total = 0;
    for (size_t k = 0; k < n; k++)
        total += weight[k] >= 0 ? weight[k] : fill;
    for (size_t k = 0; k < n; k++) {
        double w = weight[k] >= 0 ? weight[k] : fill;
        out[k] = total > 0 ? energy_j * w / total : energy_j / (double)n;
    }
}
