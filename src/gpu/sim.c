/* The simulated GPU backend: GPUs that exist only on paper, for machines without a
 * driver (`carmad --gpus sim:4xa100-40gb`), driven by real processes.
 *
 * Facts come from src/sim/gpukind.h (name, memory, idle/static/max power). The
 * daemon tells the backend which process runs on which GPU and how much memory
 * it declared (attach/detach); everything else follows from these rules, the same
 * ones the simulator's power model uses (docs/model.md):
 *
 *   n        live attached processes on the GPU (a process whose pid is gone,
 *            kill(pid, 0) failing with ESRCH, is dropped at the next sample or
 *            process listing; EPERM means alive, owned by someone else)
 *   memory   each live process holds its declared bytes, or what the processes
 *            attached before it left of the GPU (so no process, nor the sum, holds
 *            more than the GPU has); used = their sum, free = total - used
 *   smact    min(1, 0.3 n); smocc = 0.5 smact; drama = 0.3 smact;
 *            tensor = 0.25 smact (so two co-runners pass CARMA's gate, three do not)
 *   util_gpu min(1, 2 smact) (NVML's "a kernel was running" ratio is above SMACT);
 *            util_mem = drama; gract = util_gpu
 *   power    idle_w + (n > 0 ? static_w + (max_w - idle_w - static_w) * smact : 0)
 *   energy   the exact integral of that piecewise-constant power: it is brought up
 *            to date before every change (attach, detach, a process found dead) and
 *            at every sample, so a death is dated at the sample that notices it
 *
 * Time is CLOCK_MONOTONIC unless a test installs its own clock with
 * carma_gpu_sim_set_clock(); the energy counter starts at 0 when the backend opens.
 * Not thread-safe. */
#include "gpu/backend.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/gpukind.h"
#include "util/clock.h"

#define SIM_ATTACH_MAX 4096 /* attachments (pid, GPU) over all GPUs */
#define SIM_SMACT_PER_PROC 0.3

struct sim_attach {
    pid_t pid;
    unsigned gpu;
    uint64_t mem_bytes;
};

struct sim_gpu {
    const struct sim_gpu_kind *kind;
    uint16_t island; /* the spec's, "/" between islands */
    double energy_j; /* integral of power up to t_s */
    double t_s;      /* time of the last integration */
};

struct sim_backend {
    unsigned n;
    struct sim_gpu *gpu;
    struct sim_attach *att; /* att[0..natt), unordered */
    size_t natt;
    double (*now)(void *ctx);
    void *now_ctx;
};

static double sim_clock_monotonic(void *ctx)
{
    (void)ctx;
    return carma_mono_s();
}

static struct sim_backend *sim_of(struct carma_gpu_backend *b)
{
    return b->impl;
}

/* Live attached processes on GPU i (without pruning). */
static unsigned sim_gpu_nprocs(const struct sim_backend *s, unsigned i)
{
    unsigned n = 0;
    for (size_t k = 0; k < s->natt; k++)
        n += s->att[k].gpu == i;
    return n;
}

static double sim_smact(unsigned n)
{
    double a = SIM_SMACT_PER_PROC * n;
    return a > 1 ? 1 : a;
}

static double sim_power(const struct sim_gpu_kind *k, unsigned n)
{
    if (n == 0)
        return k->idle_w;
    return k->idle_w + k->static_w + (k->max_w - k->idle_w - k->static_w) * sim_smact(n);
}

/* Integrates GPU i's power from its last integration to `now`. */
static void sim_gpu_advance(struct sim_backend *s, unsigned i, double now)
{
    struct sim_gpu *g = &s->gpu[i];
    if (now > g->t_s) {
        g->energy_j += sim_power(g->kind, sim_gpu_nprocs(s, i)) * (now - g->t_s);
        g->t_s = now;
    }
}

static void sim_advance_all(struct sim_backend *s, double now)
{
    for (unsigned i = 0; i < s->n; i++)
        sim_gpu_advance(s, i, now);
}

/* Drops GPU i's attachments whose process no longer exists. Call after advancing. */
static void sim_gpu_prune(struct sim_backend *s, unsigned i)
{
    for (size_t k = 0; k < s->natt;) {
        if (s->att[k].gpu == i && kill(s->att[k].pid, 0) != 0 && errno == ESRCH)
            s->att[k] = s->att[--s->natt];
        else
            k++;
    }
}

static int sim_count(struct carma_gpu_backend *b, unsigned *n)
{
    *n = sim_of(b)->n;
    return 0;
}

static int sim_info(struct carma_gpu_backend *b, unsigned i, struct carma_gpu_info *out)
{
    struct sim_backend *s = sim_of(b);
    if (i >= s->n)
        return -EINVAL;
    const struct sim_gpu_kind *k = s->gpu[i].kind;
    memset(out, 0, sizeof *out);
    /* Shaped like a real UUID (GPU- then 8-4-4-4-12), plainly not one. */
    snprintf(out->uuid, sizeof out->uuid, "GPU-SIM-0000-0000-0000-%012u", i);
    snprintf(out->name, sizeof out->name, "%s", k->model);
    out->mem_total_bytes = (uint64_t)k->mem_mib << 20;
    out->power_limit_w = k->max_w;
    out->mig_mode = 0;
    out->island = s->gpu[i].island;
    return 0;
}

/* What an attached process that declared `declared` bytes holds on a GPU of `total`
 * bytes of which the processes attached before it hold *used: no more than is left. */
static uint64_t sim_held(uint64_t declared, uint64_t total, uint64_t *used)
{
    uint64_t h = declared > total - *used ? total - *used : declared;
    *used += h;
    return h;
}

static int sim_sample(struct carma_gpu_backend *b, unsigned i, struct carma_gpu_sample *out)
{
    struct sim_backend *s = sim_of(b);
    if (i >= s->n)
        return -EINVAL;
    sim_gpu_advance(s, i, s->now(s->now_ctx));
    sim_gpu_prune(s, i);
    const struct sim_gpu_kind *k = s->gpu[i].kind;
    uint64_t total = (uint64_t)k->mem_mib << 20, used = 0;
    unsigned n = 0;
    for (size_t a = 0; a < s->natt; a++) {
        if (s->att[a].gpu != i)
            continue;
        n++;
        (void)sim_held(s->att[a].mem_bytes, total, &used);
    }
    double smact = sim_smact(n);
    memset(out, 0, sizeof *out);
    out->mem_used_bytes = used;
    out->mem_free_bytes = total - used;
    out->smact = smact;
    out->smocc = 0.5 * smact;
    out->drama = 0.3 * smact;
    out->tensor = 0.25 * smact;
    out->util_gpu = smact * 2 > 1 ? 1 : smact * 2;
    out->gract = out->util_gpu;
    out->util_mem = out->drama;
    out->power_w = sim_power(k, n);
    out->energy_j = s->gpu[i].energy_j;
    out->lost = 0;
    return 0;
}

static int sim_processes(struct carma_gpu_backend *b, unsigned i, struct carma_gpu_proc *out,
                         size_t *n)
{
    struct sim_backend *s = sim_of(b);
    if (i >= s->n)
        return -EINVAL;
    sim_gpu_advance(s, i, s->now(s->now_ctx));
    sim_gpu_prune(s, i);
    uint64_t total = (uint64_t)s->gpu[i].kind->mem_mib << 20, used = 0;
    size_t c = 0;
    for (size_t a = 0; a < s->natt; a++) {
        if (s->att[a].gpu != i)
            continue;
        if (c == *n)
            return -EOVERFLOW;
        out[c].pid = s->att[a].pid;
        out[c].mem_bytes = sim_held(s->att[a].mem_bytes, total, &used);
        c++;
    }
    *n = c;
    return 0;
}

/* Attaching (pid, GPU) again replaces the declared memory. */
static int sim_attach(struct carma_gpu_backend *b, unsigned i, pid_t pid, uint64_t mem_bytes)
{
    struct sim_backend *s = sim_of(b);
    if (i >= s->n || pid <= 0)
        return -EINVAL;
    sim_advance_all(s, s->now(s->now_ctx));
    for (size_t a = 0; a < s->natt; a++)
        if (s->att[a].gpu == i && s->att[a].pid == pid) {
            s->att[a].mem_bytes = mem_bytes;
            return 0;
        }
    if (s->natt == SIM_ATTACH_MAX)
        return -ENOSPC;
    s->att[s->natt++] = (struct sim_attach){.pid = pid, .gpu = i, .mem_bytes = mem_bytes};
    return 0;
}

/* Detaches pid from every GPU; an unknown pid is not an error. */
static int sim_detach(struct carma_gpu_backend *b, pid_t pid)
{
    struct sim_backend *s = sim_of(b);
    sim_advance_all(s, s->now(s->now_ctx));
    for (size_t a = 0; a < s->natt;) {
        if (s->att[a].pid == pid)
            s->att[a] = s->att[--s->natt];
        else
            a++;
    }
    return 0;
}

static void sim_close(struct carma_gpu_backend *b)
{
    struct sim_backend *s = sim_of(b);
    if (s) {
        free(s->gpu);
        free(s->att);
        free(s);
    }
    b->impl = NULL;
    b->ops = NULL;
}

static void sim_describe(struct carma_gpu_backend *b, char *buf, size_t cap)
{
    if (cap)
        snprintf(buf, cap, "sim (%u simulated GPU%s; memory from attached processes)", sim_of(b)->n,
                 sim_of(b)->n == 1 ? "" : "s");
}

static const struct carma_gpu_backend_ops sim_ops = {
    .name = "sim",
    .count = sim_count,
    .info = sim_info,
    .sample = sim_sample,
    .processes = sim_processes,
    .attach = sim_attach,
    .detach = sim_detach,
    .close = sim_close,
    .describe = sim_describe,
};

int carma_gpu_open_sim(struct carma_gpu_backend *b, const char *spec, struct carma_err *err)
{
    const struct sim_gpu_kind *kinds[CARMA_GPU_MAX];
    uint16_t island[CARMA_GPU_MAX];
    size_t n = 0;
    int rc = sim_gpu_spec_parse(spec, kinds, island, CARMA_GPU_MAX, &n, err);
    if (rc)
        return rc;
    if (n == 0)
        return carma_err_set(err, -EINVAL, "--gpus: no GPUs in '%s'", spec);
    struct sim_backend *s = calloc(1, sizeof *s);
    if (s) {
        s->gpu = calloc(n, sizeof *s->gpu);
        s->att = calloc(SIM_ATTACH_MAX, sizeof *s->att);
    }
    if (!s || !s->gpu || !s->att) {
        if (s) {
            free(s->gpu);
            free(s->att);
        }
        free(s);
        return carma_err_set(err, -ENOMEM, "simulated GPUs: out of memory");
    }
    s->n = (unsigned)n;
    s->now = sim_clock_monotonic;
    double t0 = s->now(NULL);
    for (size_t i = 0; i < n; i++) {
        s->gpu[i].kind = kinds[i];
        s->gpu[i].island = island[i];
        s->gpu[i].t_s = t0;
    }
    b->ops = &sim_ops;
    b->impl = s;
    return 0;
}

int carma_gpu_sim_set_clock(struct carma_gpu_backend *b, double (*now)(void *ctx), void *ctx)
{
    if (!b || b->ops != &sim_ops || !now)
        return -EINVAL;
    struct sim_backend *s = sim_of(b);
    s->now = now;
    s->now_ctx = ctx;
    double t = now(ctx);
    for (unsigned i = 0; i < s->n; i++) {
        s->gpu[i].t_s = t;
        s->gpu[i].energy_j = 0;
    }
    return 0;
}
